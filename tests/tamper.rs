//! The tamper suite: a fresh run audits PASS, then each meaning-changing edit, made on a
//! fresh copy with manifest.json's digests recomputed (so the manifest alone cannot catch
//! it), must make the audit FAIL and name the file changed. Tampers marked `replay` are
//! caught by the replay of the SQL history; the rest by the audit's other checks. Lab 13 and
//! chaos tampers are in tamper_more.rs; the random-token measurement in tamper_random.rs.

mod common;
#[path = "tamper/events.rs"]
mod events;
#[path = "tamper/support.rs"]
mod support;

use serde_json::{json, Value};

use common::*;
use support::*;

const P: &str = "processes.json";
const R: &str = "results.json";
const F: &str = "database-files.json";

fn lab14_tampers() -> Vec<Tamper> {
    let swap_rows = |v: &mut Value, a: usize, b: usize| v.as_array_mut().unwrap().swap(a, b);
    vec![
        // The SQL history and the claims on it.
        tamper(
            "inbox amount 25 -> 26 in the trace",
            &["consume-crash.stdout.txt"],
            true,
            |d| {
                replace(
                    d,
                    "consume-crash.stdout.txt",
                    "'R1', 25, 1, ",
                    "'R1', 26, 1, ",
                )
            },
        ),
        tamper(
            "ledger amount 25 -> 2500 in the trace",
            &["consume-crash.stdout.txt"],
            true,
            |d| {
                replace(
                    d,
                    "consume-crash.stdout.txt",
                    "VALUES ('R1', 25, 1)",
                    "VALUES ('R1', 2500, 1)",
                )
            },
        ),
        tamper(
            "COMMITTED line deleted",
            &["consume-crash.stdout.txt"],
            true,
            |d| {
                replace(
                    d,
                    "consume-crash.stdout.txt",
                    "COMMITTED receiver inbox and ledger for message M1 (+25 to R1)\n",
                    "",
                )
            },
        ),
        tamper(
            "COMMITTED line's amount changed",
            &["consume-crash.stdout.txt"],
            true,
            |d| replace(d, "consume-crash.stdout.txt", "(+25 to R1)", "(+26 to R1)"),
        ),
        tamper(
            "DUPLICATE claim changed to APPLIED",
            &["consume-recover.stdout.txt"],
            true,
            |d| {
                replace(
                    d,
                    "consume-recover.stdout.txt",
                    "DUPLICATE delivery 1",
                    "APPLIED delivery 1",
                )
            },
        ),
        tamper(
            "readback field outside the stage",
            &["after-business.stdout.txt"],
            true,
            |d| {
                replace(
                    d,
                    "after-business.stdout.txt",
                    "\"outbox_sent\":0",
                    "\"outbox_sent\":1",
                )
            },
        ),
        tamper(
            "traced PRAGMA synchronous FULL -> OFF",
            &["publish-recover.stdout.txt"],
            false,
            |d| {
                replace(
                    d,
                    "publish-recover.stdout.txt",
                    "PRAGMA synchronous=FULL",
                    "PRAGMA synchronous=OFF",
                )
            },
        ),
        tamper(
            "POINT of another phase",
            &["publish-recover.stdout.txt"],
            false,
            |d| {
                replace(
                    d,
                    "publish-recover.stdout.txt",
                    "POINT publisher.before-mark-sent #1",
                    "POINT consumer.before-ack #1",
                )
            },
        ),
        tamper(
            "CRASH line of another mode",
            &["business-crash.stdout.txt"],
            false,
            |d| {
                replace(
                    d,
                    "business-crash.stdout.txt",
                    "CRASH sender.after-commit exit=73",
                    "CRASH sender.after-commit signal=SIGKILL",
                )
            },
        ),
        // Swapped outputs.
        tamper(
            "stdout swapped: publish-recover <-> consume-recover",
            &["publish-recover.stdout.txt", "consume-recover.stdout.txt"],
            false,
            |d| {
                swap_files(
                    d,
                    "publish-recover.stdout.txt",
                    "consume-recover.stdout.txt",
                )
            },
        ),
        tamper(
            "stdout swapped: after-business <-> after-publish",
            &["after-business.stdout.txt", "after-publish.stdout.txt"],
            false,
            |d| swap_files(d, "after-business.stdout.txt", "after-publish.stdout.txt"),
        ),
        tamper(
            "stderr swapped: conflict-consume <-> after-conflict",
            &["conflict-consume.stderr.txt", "after-conflict.stderr.txt"],
            false,
            |d| {
                swap_files(
                    d,
                    "conflict-consume.stderr.txt",
                    "after-conflict.stderr.txt",
                )
            },
        ),
        // results.json, every kind of field.
        tamper("results: observed exit", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "business-crash")["observed"]["exit"] = json!(0)
            })
        }),
        tamper("results: observed readback value", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "final-verify")["observed"]["readback"]["receiver"]["ledger"] = json!(50)
            })
        }),
        tamper("results: observed crash_line", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "publish-crash")["observed"]["crash_line"] = json!(false)
            })
        }),
        tamper("results: observed timed_out", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "after-publish")["observed"]["timed_out"] = json!(true)
            })
        }),
        tamper("results: expected exit", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "conflict-consume")["expected"]["exit"] = json!(0)
            })
        }),
        tamper("results: expected stage field", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "after-consume")["expected"]["stage"]["fields"]["receiver.ledger"] =
                    json!(26)
            })
        }),
        tamper("results: problems added", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "publish-recover")["problems"] = json!(["exit 1, expected 0"])
            })
        }),
        tamper("results: a step's ok", &[R], false, |d| {
            edit_json(d, R, |v| result(v, "publish-recover")["ok"] = json!(false))
        }),
        tamper("results: top-level ok", &[R], false, |d| {
            edit_json(d, R, |v| v["ok"] = json!(false))
        }),
        tamper("results: lab", &[R], false, |d| {
            edit_json(d, R, |v| v["lab"] = json!("13-http-dispatch"))
        }),
        tamper("results: a step dropped", &[R], false, |d| {
            edit_json(d, R, |v| {
                v["steps"].as_array_mut().unwrap().remove(4);
            })
        }),
        tamper("results: a step duplicated", &[R], false, |d| {
            edit_json(d, R, |v| {
                let steps = v["steps"].as_array_mut().unwrap();
                let again = steps[3].clone();
                steps.insert(4, again);
            })
        }),
        tamper("results: steps reordered", &[R], false, |d| {
            edit_json(d, R, |v| v["steps"].as_array_mut().unwrap().swap(4, 5))
        }),
        // A field no run writes: a reader would take it for part of the record.
        tamper("results: a top-level field added", &[R], false, |d| {
            edit_json(d, R, |v| v["verdict"] = json!("FAIL"))
        }),
        tamper("results: a field added to a step", &[R], false, |d| {
            edit_json(d, R, |v| {
                result(v, "consume-crash")["note"] = json!("the ledger lost a credit")
            })
        }),
        tamper("processes: a top-level field added", &[P], false, |d| {
            edit_json(d, P, |v| v["note"] = json!("synchronous was off"))
        }),
        tamper("processes: a field added to a process", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "business-crash")["note"] = json!("the sender lost data")
            })
        }),
        tamper("processes: a field added to git", &[P], false, |d| {
            edit_json(d, P, |v| v["git"]["branch"] = json!("main"))
        }),
        tamper("manifest: a field added", &["manifest.json"], false, |d| {
            edit_json(d, "manifest.json", |v| v["verdict"] = json!("FAIL"))
        }),
        // processes.json.
        tamper(
            "processes: pragmas synchronous full -> off",
            &[P],
            false,
            |d| edit_json(d, P, |v| v["pragmas"]["synchronous"] = json!("off")),
        ),
        tamper("processes: top-level crash_mode", &[P], false, |d| {
            edit_json(d, P, |v| v["crash_mode"] = json!("abort"))
        }),
        tamper("processes: a process's crash_mode", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "consume-crash")["crash_mode"] = json!("kill")
            })
        }),
        tamper("processes: signal on a crash", &[P], false, |d| {
            edit_json(d, P, |v| process(v, "publish-crash")["signal"] = json!(9))
        }),
        tamper("processes: command", &[P], false, |d| {
            edit_json(d, P, |v| {
                let cmd = v["command"].as_array_mut().unwrap();
                cmd.push(json!("--crash-mode"));
                cmd.push(json!("abort"));
            })
        }),
        tamper("processes: argv", &[P], false, |d| {
            edit_json(d, P, |v| {
                let argv = process(v, "business-crash")["argv"].as_array_mut().unwrap();
                let at = argv.iter().position(|a| a == "25").unwrap();
                argv[at] = json!("26");
            })
        }),
        tamper("processes: exit", &[P], false, |d| {
            edit_json(d, P, |v| process(v, "publish-recover")["exit"] = json!(1))
        }),
        tamper("processes: expected_exit", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "business-crash")["expected_exit"] = json!(0)
            })
        }),
        tamper("processes: crash_point", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "business-crash")["crash_point"] = json!("sender.before-commit")
            })
        }),
        tamper("processes: moved_crashes", &[P], false, |d| {
            edit_json(d, P, |v| {
                v["moved_crashes"] = json!(["consume-crash=consumer.before-receiver-commit"])
            })
        }),
        tamper(
            "processes: stdout names another step's file",
            &[P],
            false,
            |d| {
                edit_json(d, P, |v| {
                    process(v, "after-publish")["stdout"] = json!("after-business.stdout.txt")
                })
            },
        ),
        tamper("processes: timed_out", &[P], false, |d| {
            edit_json(d, P, |v| {
                process(v, "after-consume")["timed_out"] = json!(true)
            })
        }),
        tamper("processes: a process dropped", &[P], false, |d| {
            edit_json(d, P, |v| {
                v["processes"].as_array_mut().unwrap().remove(2);
            })
        }),
        // database-files.json.
        tamper("database rows: a row altered (exists)", &[F], false, |d| {
            edit_json(d, F, |v| {
                let row = v
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|r| r["exists"] == true)
                    .unwrap();
                row["exists"] = json!(false);
            })
        }),
        tamper(
            "database rows: a writer's logical digest",
            &[F],
            false,
            |d| {
                edit_json(d, F, |v| {
                    let row = v
                        .as_array_mut()
                        .unwrap()
                        .iter_mut()
                        .find(|r| r["after_step"] == "consume-crash" && r["file"] == "receiver.db")
                        .unwrap();
                    row["logical_sha256"] = json!("ab".repeat(32));
                })
            },
        ),
        tamper("database rows: a row dropped", &[F], false, |d| {
            edit_json(d, F, |v| {
                v.as_array_mut().unwrap().remove(7);
            })
        }),
        tamper("database rows: a row duplicated", &[F], false, |d| {
            edit_json(d, F, |v| {
                let rows = v.as_array_mut().unwrap();
                let again = rows[3].clone();
                rows.insert(3, again);
            })
        }),
        tamper("database rows: two rows reordered", &[F], false, move |d| {
            edit_json(d, F, |v| swap_rows(v, 0, 1))
        }),
        tamper(
            "database rows: frozen named where nothing ran",
            &[F],
            false,
            |d| edit_json(d, F, |v| v[0]["frozen"] = json!(["publish-crash"])),
        ),
        // Symlinks.
        tamper(
            "a stdout replaced by a symlink to a copy outside",
            &["after-consume.stdout.txt"],
            false,
            |d| {
                let outside = d.with_extension("outside");
                std::fs::copy(d.join("after-consume.stdout.txt"), &outside).unwrap();
                std::fs::remove_file(d.join("after-consume.stdout.txt")).unwrap();
                std::os::unix::fs::symlink(&outside, d.join("after-consume.stdout.txt")).unwrap();
            },
        ),
        tamper(
            "the timeline drawn otherwise",
            &["timeline.svg"],
            false,
            |d| replace(d, "timeline.svg", "business-crash", "business-ok"),
        ),
        tamper(
            "a symlink to a file outside added",
            &["notes.txt"],
            false,
            |d| {
                std::os::unix::fs::symlink("/etc/hostname", d.join("notes.txt")).unwrap();
            },
        ),
    ]
}

#[test]
fn every_lab14_tamper_fails_the_audit_and_names_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, run) = driver(tmp.path(), "run", &[]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let mut tampers = lab14_tampers();
    tampers.extend(events::lab14());
    assert!(tampers.len() >= 40, "{} tampers", tampers.len());
    let misses = run_all(&run, &scratch, &tampers);
    // The symlink tampers left copies beside the scratch copies; remove them with tmp.
    assert!(
        misses.is_empty(),
        "{} missed:\n{}",
        misses.len(),
        misses.join("\n")
    );
}
