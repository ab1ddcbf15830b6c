//! Lab files (`crashlab.toml`): each mistake is one line `FILE:LINE:COL: what` and exit 2
//! before anything runs; explore of a user's roles crashes at every point announced, judges
//! the invariants against the predictions, says NOT-REACHED, and leaves no process behind.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{code, crashlab, stderr, stdout, BIN};

/// A small valid lab: one shell role on one store, announcing `job.after-insert` twice.
const LAB: &str = r#"id = "tiny"
title = "A shell job on SQLite"

[stores.db]
sqlite = "db.sqlite"
schema = "db.sql"

[roles.job]
command = ["sh", "{lab}/job.sh", "{store.db}", "{crashlab}", "{design}"]
points = { "job.after-insert" = "a row is durable" }

[[scenarios]]
name = "two-rows"
steps = [{ role = "job" }, { check = "rows" }]

[[checks]]
name = "rows"
sql = "SELECT count(*) FROM db.t"
expect = 2

[[invariants]]
name = "two rows"
anomaly = "lost-write"
sql = "SELECT count(*) FROM db.t HAVING count(*) < 2"

[[designs]]
name = "correct"
predict = []
"#;

const JOB: &str = r#"db=$1; crashlab=$2
for i in 1 2; do
  sqlite3 "$db" "INSERT INTO t VALUES ($i)"
  "$crashlab" point job.after-insert || exit $?
done
"#;

fn lab(dir: &Path, text: &str, job: &str) -> String {
    std::fs::write(dir.join("db.sql"), "CREATE TABLE t (n INTEGER);\n").unwrap();
    std::fs::write(dir.join("job.sh"), job).unwrap();
    let file = dir.join("crashlab.toml");
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

/// Each mistake: the lab with one change, and the line that must name it.
#[test]
fn each_mistake_is_one_line_with_its_place_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mistakes: &[(&str, &str, &str)] = &[
        ("title = ", "titel = ", ":2:1: unknown field `titel`"),
        (r#"{ role = "job" }"#, r#"{ role = "jobb" }"#, ":15:11: no role 'jobb' (roles: job)"),
        ("{store.db}", "{store.dbx}", ":9:31: placeholder {store.dbx}: no store 'dbx'"),
        ("{design}\"", "{desing}\"", ":9:61: placeholder {desing} names nothing"),
        (r#"{ role = "job" }"#, r#"{ role = "job", crash = "job.after-insrt" }"#, ":15:33: role 'job' declares no point 'job.after-insrt'"),
        ("count(*) FROM db.t\"\nexpect", "count(*) FROM db.tt\"\nexpect", ":19:7: SQLite refuses the query: no such table: db.tt"),
        ("predict = []\n", "", ":30:1: design 'correct' has no predictions"),
        (r#"steps = [{ role = "job" }, { check = "rows" }]"#, "steps = []", ":15:9: scenario 'two-rows' has no steps"),
        ("[[designs]]\nname = \"correct\"\npredict = []\n", "[[designs]]\nname = \"correct\"\npredict = []\n[[designs]]\nname = \"correct\"\npredict = []\n", ":33:8: design 'correct' is named twice"),
        ("predict = []", "predict = [{ at = \"job.nowhere\", anomalies = [\"lost-write\"] }]", ":32:19: no role declares the point 'job.nowhere'"),
        ("name = \"two-rows\"", "name = \"../two-rows\"", ":14:8: a scenario's name '../two-rows': use letters, digits"),
        (r#"{ role = "job" }"#, r#"{ role = "job", name = "a/b" }"#, ":15:35: a step's name 'a/b': use letters, digits"),
        ("predict = []", "predict = []\nenv = { CRASHLAB_CRASH_AT = \"job.after-insert\" }", ":30:1: design 'correct': env CRASHLAB_CRASH_AT: the CRASHLAB_ variables are the harness's"),
        (r#"{ role = "job" }"#, r#"{ role = "job", ready = "job.after-insert" }"#, ":15:9: scenario 'two-rows': background step 'job' is never stopped"),
        (r#"{ role = "job" }"#, r#"{ role = "job", ready = "job.nope" }"#, ":15:35: ready: role 'job' declares no point 'job.nope'"),
        (r#"{ check = "rows" }"#, r#"{ stop = "nope" }"#, ":15:38: stop: no step 'nope' before it"),
        (r#"{ check = "rows" }"#, r#"{ stop = "job" }"#, ":15:38: stop: step 'job' does not run in the background"),
        ("name = \"two-rows\"", "name = \"lab\"", ":14:8: a scenario's name 'lab' is the evidence's own"),
        ("\"job.after-insert\" =", "\"job/../x\" =", ":8:1: a point's name 'job/../x': use letters, digits"),
        (r#"{ check = "rows" }"#, r#"{ check = "rows", exit = 3 }"#, ":15:28: step 'check-rows': `crash`, `exit` and `ready` belong to a step that runs a role"),
        ("sqlite = \"db.sqlite\"", "sqlite = \"db.sqlite\"\npostgres = true", ":5:1: store 'db': say one of sqlite = \"FILE\", postgres = true or rabbitmq = true"),
        ("sqlite = \"db.sqlite\"", "rabbitmq = true", ":7:10: store 'db': a queue has no schema"),
        ("{store.db}", "{store.db.queue}", ":9:31: placeholder {store.db.queue}: store 'db' is not a queue"),
        ("[stores.db]", "[stores.\"../db\"]", ":5:1: a store's name '../db': use letters, digits and '_'"),
        ("name = \"correct\"\npredict", "name = \"correct\"\nargs = { jobb = [\"-v\"] }\npredict", ":31:8: design 'correct': args for role 'jobb', which no role is"),
        ("sqlite = \"db.sqlite\"", "postgres = false", ":5:1: store 'db': say one of sqlite = \"FILE\", postgres = true or rabbitmq = true"),
    ];
    for (from, to, line) in mistakes {
        assert!(LAB.contains(from), "{from}");
        let file = lab(dir.path(), &LAB.replacen(from, to, 1), JOB);
        let out = crashlab(dir.path(), &["lab", "check", &file]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{to}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        // `FILE:LINE:COL: what`
        let (place, what) = line.split_once(": ").unwrap();
        let rest = err.strip_prefix(&format!("crashlab: {file}:")).expect(&err);
        let (at, said) = rest.split_once(": ").unwrap();
        let numbers: Vec<&str> = at.split(':').collect();
        assert_eq!(numbers.len(), 2, "{err}");
        assert!(numbers.iter().all(|n| n.parse::<u32>().is_ok()), "{err}");
        assert!(said.starts_with(what.trim()), "{to}: {err} (near {place})");
        // Before anything runs: explore refuses it the same way and writes nothing.
        let out_dir = dir.path().join("out");
        let out = crashlab(
            dir.path(),
            &["explore", &file, "--out", out_dir.to_str().unwrap()],
        );
        assert_eq!(code(&out), 2);
        assert!(!out_dir.exists());
    }
    let file = lab(dir.path(), LAB, JOB);
    let out = crashlab(dir.path(), &["lab", "check", &file]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("no mistake found"));
}

#[test]
fn explore_crashes_a_shell_role_at_every_point_it_announced() {
    let dir = tempfile::tempdir().unwrap();
    // Crashed after its first row, the job leaves one: the invariant finds it there.
    let predicted = LAB.replace(
        "predict = []",
        "predict = [{ at = \"job.after-insert@1\", anomalies = [\"lost-write\"] }]",
    );
    let file = lab(dir.path(), &predicted, JOB);
    let out_dir = dir.path().join("out");
    let out = crashlab(
        dir.path(),
        &[
            "explore",
            &file,
            "--json",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let at: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "no crash",
            "job:job.after-insert@1",
            "job:job.after-insert@2"
        ]
    );
    // A design predicting nothing there fails, naming the anomaly.
    let file = lab(dir.path(), LAB, JOB);
    let out = crashlab(
        dir.path(),
        &[
            "explore",
            &file,
            "--out",
            dir.path().join("o2").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("broke (lost-write) where no prediction says so"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_armed_point_the_role_never_announces_is_not_reached_exit_78() {
    let dir = tempfile::tempdir().unwrap();
    // Armed, the job announces nothing: its crash never happens.
    let job = JOB.replace(
        "\"$crashlab\" point",
        "[ -n \"$CRASHLAB_CRASH_AT\" ] || \"$crashlab\" point",
    );
    let file = lab(dir.path(), LAB, &job);
    let out = crashlab(
        dir.path(),
        &[
            "explore",
            &file,
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 78, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("NOT-REACHED job.after-insert@1"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_closed_stdout_still_leaves_the_published_evidence() {
    // The table is printed after DIR.partial is renamed to DIR: a reader that stops at the
    // first line (`| head -1`) cuts the printing, never the evidence.
    let dir = tempfile::tempdir().unwrap();
    let file = lab(dir.path(), LAB, JOB);
    for command in ["driver", "explore"] {
        let out = Command::new("sh")
            .args([
                "-c",
                &format!("'{BIN}' {command} '{file}' --out o-{command} | head -1"),
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(stdout(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(
            dir.path()
                .join(format!("o-{command}/manifest.json"))
                .is_file(),
            "{command}"
        );
        assert!(
            !dir.path().join(format!("o-{command}.partial")).exists(),
            "{command}"
        );
    }
}

#[test]
fn a_declared_point_no_run_announces_is_not_reached_exit_78() {
    let dir = tempfile::tempdir().unwrap();
    // The job inserts its rows and never announces its point: nothing can crash there.
    let job = JOB.replace("  \"$crashlab\" point job.after-insert || exit $?\n", "");
    assert!(!job.contains("point"), "{job}");
    let file = lab(dir.path(), LAB, &job);
    let out = crashlab(dir.path(), &["explore", &file, "--out", "o"]);
    assert_eq!(code(&out), 78, "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "role job declares job.after-insert, which the run without a crash never announced, so no case crashed there: NOT-REACHED job.after-insert@1"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_role_that_forks_and_is_crashed_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("labfile-fork-{}", std::process::id());
    // The job forks a grandchild that would sleep for minutes, then crashes (exit) or
    // hangs past its bound (hang): either way its whole process group is killed.
    let job = format!("sleep 300 &\n{JOB}wait\n");
    let file = lab(dir.path(), LAB, &job);
    for mode in ["exit", "kill", "hang"] {
        let out = Command::new(BIN)
            .args([
                "explore",
                &file,
                "--crash-mode",
                mode,
                "--step-timeout-ms",
                "3000",
                "--out",
            ])
            .arg(dir.path().join(format!("o-{mode}")))
            .env("CRASHLAB_TEST_MARK", &mark)
            .output()
            .unwrap();
        // Without a crash the job waits for its grandchild: past its bound, killed.
        let text = stdout(&out);
        assert!(
            text.contains("killed past its step timeout"),
            "{mode}: {text}"
        );
        assert!(text.contains("job:job.after-insert@2"), "{text}");
        assert_eq!(
            common::marked_processes(&mark),
            Vec::<String>::new(),
            "{mode}"
        );
    }
}

/// What a running role left in its own group after its parent exited (a double fork) is that
/// role's, not an orphan of the steps that end meanwhile: their sweeps pass it by, and it
/// finishes its write.
#[test]
fn a_running_roles_double_forked_child_outlives_the_other_steps_sweeps() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"id = "daemon"
title = "A background role whose worker is double-forked"

[stores.db]
sqlite = "db.sqlite"
schema = "db.sql"

[roles.daemon]
command = ["sh", "{lab}/job.sh", "{store.db}", "{crashlab}"]
points = { "daemon.ready" = "its worker runs" }

[roles.quick]
command = ["sleep", "0.5"]

[[scenarios]]
name = "meanwhile"
steps = [
  { role = "daemon", ready = "daemon.ready" },
  { role = "quick" }, { role = "quick", name = "q2" }, { role = "quick", name = "q3" },
  { role = "quick", name = "q4" }, { role = "quick", name = "q5" },
  { stop = "daemon" },
  { check = "rows" },
]

[[checks]]
name = "rows"
sql = "SELECT count(*) FROM db.t"
expect = 1

[[designs]]
name = "correct"
predict = []
"#;
    // The worker's parent (a subshell) exits at once: it is this crashlab's to reap from then
    // on, and its write lands a second later, while the quick steps end one after another.
    let daemon = "db=$1; crashlab=$2\n( (sleep 1; sqlite3 \"$db\" \"INSERT INTO t VALUES (1)\") & )\n\"$crashlab\" point daemon.ready || exit $?\nsleep 30\n";
    let file = lab(dir.path(), text, daemon);
    let out = crashlab(dir.path(), &["driver", &file, "--out", "o"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("1 (expected 1)"), "{}", stdout(&out));
}

#[test]
fn what_a_role_starts_outside_its_group_is_killed_when_its_step_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mark = format!("labfile-setsid-{}", std::process::id());
    // A session of its own, one behind a subshell that already exited, and a job of a shell
    // with job control (a group of its own): none is in the role's process group.
    let job = format!(
        "setsid sleep 300 </dev/null >/dev/null 2>&1 &\n( setsid sleep 301 </dev/null >/dev/null 2>&1 & )\nbash -m -c 'sleep 302 </dev/null >/dev/null 2>&1 &'\n{JOB}"
    );
    let file = lab(dir.path(), LAB, &job);
    let out = Command::new(BIN)
        .args(["driver", &file, "--out"])
        .arg(dir.path().join("o"))
        .env("CRASHLAB_TEST_MARK", &mark)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(common::marked_processes(&mark), Vec::<String>::new());
}

#[test]
fn sigint_while_a_role_runs_kills_its_group_removes_the_partial_output_and_exits_130() {
    for command in ["driver", "explore"] {
        let dir = tempfile::tempdir().unwrap();
        let mark = format!("labfile-sigint-{command}-{}", std::process::id());
        // The role forks a grandchild and then sleeps itself: both must die with the run.
        let job = format!("sleep 300 &\nsleep 301\n{JOB}");
        let file = lab(dir.path(), LAB, &job);
        let run = Command::new(BIN)
            .args([command, &file, "--out", "o"])
            .current_dir(dir.path())
            .env("CRASHLAB_TEST_MARK", &mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Bounded: crashlab, the role's shell and both sleeps running, then SIGINT.
        let deadline = Instant::now() + Duration::from_secs(30);
        while common::marked_processes(&mark).len() < 4 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            dir.path().join("o.partial").is_dir(),
            "{command}: written as o.partial"
        );
        // SAFETY: signalling our own child, not reaped yet.
        unsafe { libc::kill(run.id() as libc::pid_t, libc::SIGINT) };
        let out = run.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{command}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{command}: {err}");
        assert!(
            err.contains("interrupted by SIGINT; removed o.partial"),
            "{err}"
        );
        assert_eq!(
            common::marked_processes(&mark),
            Vec::<String>::new(),
            "{command}: no process of the role left"
        );
        assert!(!dir.path().join("o").exists() && !dir.path().join("o.partial").exists());
    }
}

#[test]
fn a_role_that_tears_its_events_line_is_recorded_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let job = "printf '{\"event\":\"point\",\"po' >> \"$CRASHLAB_EVENTS\"; sqlite3 \"$1\" 'INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)'\n";
    let file = lab(dir.path(), LAB, job);
    let out = crashlab(
        dir.path(),
        &[
            "explore",
            &file,
            "--out",
            dir.path().join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("step job (role job): its last events line is torn"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_role_that_floods_its_stdout_is_killed_at_the_bound_not_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // 100 MB of output, then a wait far past the step's bound: only a bound checked while the
    // role runs kills it before its timeout. The output is finite, so a broken bound costs
    // 100 MB and a timeout, never a full disk.
    let job = "head -c 100000000 /dev/zero\nsleep 60\n";
    let file = lab(dir.path(), LAB, job);
    let o = dir.path().join("o");
    let args = ["driver", &file, "--step-timeout-ms", "20000", "--out"];
    let out = crashlab(dir.path(), &[&args[..], &[o.to_str().unwrap()]].concat());
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(o.join("labfile.json")).unwrap()).unwrap();
    let step = &record["runs"][0]["run"]["steps"][0];
    assert_eq!(step["timed_out"], false, "{step}");
    assert_eq!(step["exit"], 137, "{step}");
    let fault = step["faults"][0].as_str().unwrap();
    assert!(
        fault.starts_with("its stdout ran past 67108864 bytes (")
            && fault.ends_with("); killed there"),
        "{fault}"
    );
    let size = std::fs::metadata(o.join("two-rows/01-job.stdout.txt"))
        .unwrap()
        .len();
    assert!(size > 67_108_864 && size < 100_000_000, "{size}");
    assert!(
        stdout(&out).contains("step job (role job)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_python_outbox_example_breaks_exactly_where_predicted() {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let text = explore_all("examples/python-outbox/crashlab.toml", "2", &o);
    audit_passes(&o);
    // A crashed step's exit changed in the record: its events still show the crash.
    let record = o.join("labfile.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let run = value["runs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["dir"] == "mark-before-publish/two-orders/02-relay-relay.after-mark@1")
        .unwrap();
    run["run"]["steps"][1]["exit"] = 0.into();
    std::fs::write(&record, serde_json::to_vec(&value).unwrap()).unwrap();
    audit_fails(&o, "mark-before-publish/two-orders/02-relay-relay.after-mark@1: step relay: exit 0 recorded, but its events show the crash at relay.after-mark@1, which exits 73");
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(
        broke(&text),
        [
            "mark-before-publish relay:relay.after-mark@1 lost-write",
            "mark-before-publish relay:relay.after-mark@2 lost-write",
            "ack-before-apply consumer:consumer.after-ack@1 lost-write",
            "ack-before-apply consumer:consumer.after-ack@2 lost-write",
        ]
    );
    // Every point the roles declare was announced and crashed in every design.
    for design in ["correct", "mark-before-publish", "ack-before-apply"] {
        for point in [
            "writer.after-commit",
            "relay.after-publish",
            "relay.after-mark",
            "consumer.after-apply",
            "consumer.after-ack",
        ] {
            assert!(
                cases
                    .iter()
                    .any(|c| c["design"] == design && c["at"].as_str().unwrap().contains(point)),
                "{design} {point}"
            );
        }
    }
}

fn audit_passes(dir: &Path) {
    audit_passes_as(dir, "python-outbox");
}

fn audit_passes_as(dir: &Path, id: &str) {
    let out = crashlab(Path::new("."), &["audit", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains(&format!("PASS: lab file {id}")),
        "{}",
        stdout(&out)
    );
}

/// `explore EXAMPLE --variants all --jobs JOBS --json --out o` from the repository's root,
/// which must pass: its JSON report. Its cases are judged alike one at a time and `jobs` at
/// once, and listed in the same order.
fn explore_all(example: &str, jobs: &str, o: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let args = [
        "explore",
        example,
        "--variants",
        "all",
        "--jobs",
        jobs,
        "--json",
        "--out",
    ];
    let out = crashlab(root, &[&args[..], &[o.to_str().unwrap()]].concat());
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    stdout(&out)
}

/// The cases of an explore's JSON report that found an anomaly: `design at anomaly`.
fn broke(report: &str) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["anomalies"].as_array().unwrap().is_empty())
        .map(|c| {
            format!(
                "{} {} {}",
                c["design"].as_str().unwrap(),
                c["at"].as_str().unwrap(),
                c["anomalies"][0].as_str().unwrap()
            )
        })
        .collect()
}

/// Lab 14 written as a lab file over crashlab's own roles, armed through the point protocol's
/// environment: it breaks at exactly the points and hits built-in lab 14's explore predicts.
#[test]
fn lab_14_as_a_lab_file_breaks_where_the_built_in_lab_predicts() {
    use std::collections::BTreeSet;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let report = explore_all("examples/outbox-inbox/crashlab.toml", "2", &o);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    // (design, point, hit) of every case, and of those that broke.
    let mut crashed = BTreeSet::new();
    let mut broke = BTreeSet::new();
    for case in report["cases"].as_array().unwrap() {
        let Some((_, at)) = case["at"].as_str().unwrap().split_once(':') else {
            continue;
        };
        let (point, hit) = at.split_once('@').unwrap();
        let key = (
            case["design"].as_str().unwrap().to_string(),
            point.to_string(),
            hit.parse::<u64>().unwrap(),
        );
        if !case["anomalies"].as_array().unwrap().is_empty() {
            broke.insert(key.clone());
        }
        crashed.insert(key);
    }
    let out = crashlab(root, &["lab", "show", "14", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let sqlite = &value["stacks"][0];
    assert_eq!(sqlite["name"], "sqlite");
    let mut predicted = BTreeSet::new();
    for p in sqlite["explore"]["predictions"].as_array().unwrap() {
        let design = p["design"].as_str().unwrap();
        for at in p["at"].as_array().unwrap() {
            let point = at["point"].as_str().unwrap();
            let hits: Vec<u64> = at["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_u64().unwrap())
                .collect();
            // No hits: every hit the scenario reaches.
            let every = crashed
                .iter()
                .filter(|(d, p, _)| d == design && p == point)
                .map(|(_, _, h)| *h);
            let hits: Vec<u64> = if hits.is_empty() {
                every.collect()
            } else {
                hits
            };
            assert!(!hits.is_empty(), "{design} {point}: never reached");
            for hit in hits {
                predicted.insert((design.to_string(), point.to_string(), hit));
            }
        }
    }
    assert_eq!(broke, predicted);
    audit_passes_as(&o, "outbox-inbox-file");
}

/// `explore examples/EXAMPLE --variants all` of one of the Python Outboxes on a server: it
/// breaks where its designs predict, records `placeholder` in its command lines and never a
/// URL starting `scheme`, and audits PASS. The directory it ran in, and its evidence.
fn outbox_explored(example: &str, placeholder: &str, scheme: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let report = explore_all(&format!("examples/{example}/crashlab.toml"), "3", &o);
    assert_eq!(
        broke(&report),
        [
            "mark-before-publish relay:relay.after-mark@1 lost-write",
            "mark-before-publish relay:relay.after-mark@2 lost-write",
            "ack-before-apply consumer:consumer.after-ack@1 lost-write",
            "ack-before-apply consumer:consumer.after-ack@2 lost-write",
        ]
    );
    let record = std::fs::read_to_string(o.join("labfile.json")).unwrap();
    assert!(record.contains(&format!("\"{placeholder}\"")), "{record}");
    assert!(!record.contains(scheme), "{record}");
    audit_passes_as(&o, example);
    (dir, o)
}

/// The same Outbox on PostgreSQL (psycopg2): each store a database of its own on the run's
/// private server, read back into SQLite copies that the audit re-reads with no server.
#[test]
fn the_python_outbox_on_postgres_breaks_where_predicted_and_its_copies_audit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (dir, o) = outbox_explored("python-postgres", "{store.app}", "postgres://");
    // The copy the check step kept: a booleans is 1 or 0, an integer an integer.
    let kept = o.join("correct/two-orders/no-crash/06-check-effects.stores");
    let broker = rusqlite::Connection::open(kept.join("broker.postgres.db")).unwrap();
    let acked: Vec<(i64, i64)> = broker
        .prepare("SELECT seq, acked FROM queue ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(acked, [(1, 1), (2, 1)]);
    drop(broker);
    let consumer = kept.join("consumer.postgres.db");
    let db = rusqlite::Connection::open(&consumer).unwrap();
    db.execute("UPDATE ledger SET amount = amount + 1 WHERE rowid = 1", [])
        .unwrap();
    drop(db);
    common::forge_manifest_entry(
        &o,
        "correct/two-orders/no-crash/06-check-effects.stores/consumer.postgres.db",
    );
    audit_fails(&o, "check effects (query `SELECT sum(amount) FROM consumer.ledger`) on the kept stores app.postgres.db, broker.postgres.db, consumer.postgres.db gives 66, recorded 65");
    // A query SQLite refuses on the stores' copies: one line, exit 2, before any role runs.
    let wrong = dir.path().join("wrong");
    std::fs::create_dir(&wrong).unwrap();
    for sql in ["app.sql", "broker.sql", "consumer.sql"] {
        std::fs::copy(
            root.join("examples/python-postgres").join(sql),
            wrong.join(sql),
        )
        .unwrap();
    }
    let text = std::fs::read_to_string(root.join("examples/python-postgres/crashlab.toml"))
        .unwrap()
        .replace("FROM consumer.ledger GROUP", "FROM consumer.ledgr GROUP");
    let file = wrong.join("crashlab.toml");
    std::fs::write(&file, text).unwrap();
    let out = crashlab(
        root,
        &[
            "explore",
            file.to_str().unwrap(),
            "--out",
            wrong.join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        format!("crashlab: {}:56:7: SQLite refuses the query on the stores' copies: no such table: consumer.ledgr", file.display())
    );
    assert!(!wrong.join("o").exists() && !wrong.join("o.partial").exists());
    // A built-in lab's options are refused for a lab file, never ignored.
    for (args, line) in [
        (
            &["explore", "--shard", "count:1/2"][..],
            "--shard: a lab file's explore takes",
        ),
        (
            &["explore", "--junit", "j.xml"][..],
            "--junit: a lab file's explore takes",
        ),
        (
            &["driver", "--keep-db"][..],
            "--keep-db: a lab file's driver takes",
        ),
        (
            &["explore", "--jobs", "0"][..],
            "--jobs 0 is out of range (1 to 64)",
        ),
    ] {
        let out = crashlab(
            root,
            &[
                &args[..1],
                &["examples/python-outbox/crashlab.toml"],
                &args[1..],
            ]
            .concat(),
        );
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with(&format!("crashlab: {line}")),
            "{}",
            stderr(&out)
        );
    }
    // --pg-url is refused where no store is on PostgreSQL, before anything runs.
    let none = dir.path().join("none");
    let out = crashlab(
        root,
        &[
            "driver",
            "examples/python-outbox/crashlab.toml",
            "--pg-url",
            "postgres://crashlab@127.0.0.1:1/postgres",
            "--out",
            none.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stderr(&out).trim(),
        "crashlab: --pg-url: the lab file has no PostgreSQL store"
    );
    assert!(!none.exists());
}

/// The Outbox with a real broker (pika): the queue between relay and consumer is a queue of
/// its own on the run's private RabbitMQ node, read back into a SQLite copy of its ready
/// messages that the checks, the invariants and the audit read with no broker.
#[test]
fn the_python_outbox_over_rabbitmq_breaks_where_predicted_and_its_queue_copies_audit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (dir, o) = outbox_explored("python-rabbitmq", "{store.events.queue}", "amqp://");
    // What the check step after the relay kept: both messages, in order, ready.
    let run = o.join("correct/two-orders/no-crash");
    let messages = |file: &Path| -> Vec<(i64, String, i64, String)> {
        let db = rusqlite::Connection::open(file).unwrap();
        let rows = db
            .prepare("SELECT position, message_id, redelivered, body FROM messages")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows
    };
    let kept = run.join("03-check-queued.stores/events.rabbitmq.db");
    assert_eq!(
        messages(&kept),
        [
            (1, "M1".into(), 0, "O1".into()),
            (2, "M2".into(), 0, "O2".into())
        ]
    );
    // At the end, the consumer took and acked them all.
    assert_eq!(messages(&run.join("events.rabbitmq.db")), []);
    // The relay crashed after its first confirm ran again and published M1 twice: the
    // consumer took both copies, the Inbox applied one.
    let twice = o.join("correct/two-orders/02-relay-relay.after-publish@1");
    let db = rusqlite::Connection::open(twice.join("consumer.db")).unwrap();
    let ledger: i64 = db
        .query_row("SELECT count(*) FROM ledger", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ledger, 2);
    drop(db);
    // A changed message in a kept copy: the audit re-runs the check on it and FAILs.
    let db = rusqlite::Connection::open(&kept).unwrap();
    db.execute("UPDATE messages SET body = 'O3' WHERE position = 2", [])
        .unwrap();
    drop(db);
    common::forge_manifest_entry(
        &o,
        "correct/two-orders/no-crash/03-check-queued.stores/events.rabbitmq.db",
    );
    audit_fails(&o, "check queued");
    // A run whose command masks a password cannot be run again: said, exit 2, nothing run.
    let record = o.join("labfile.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let command = value["command"].as_array_mut().unwrap();
    command.push("--amqp-url".into());
    command.push("amqp://guest:***@127.0.0.1:1/%2f".into());
    std::fs::write(&record, serde_json::to_vec(&value).unwrap()).unwrap();
    let out = crashlab(root, &["audit", "--rerun", o.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).contains("whose password the evidence masks"),
        "{}",
        stderr(&out)
    );
    // Queues a role deleted cannot be read back: the check says why for each, no copy is
    // kept for either, and the audit takes the one for the other.
    let gone = dir.path().join("gone");
    std::fs::create_dir(&gone).unwrap();
    let text = r#"id = "gone"
title = "A role deletes its queue"

[stores.q]
rabbitmq = true

[stores.r]
rabbitmq = true

[roles.deleter]
command = ["python3", "-c", "import pika, sys; c = pika.BlockingConnection(pika.URLParameters(sys.argv[1])).channel(); [c.queue_delete(q) for q in sys.argv[2:]]", "{store.q}", "{store.q.queue}", "{store.r.queue}"]

[[scenarios]]
name = "deleted"
steps = [{ role = "deleter" }, { check = "left" }]

[[checks]]
name = "left"
sql = "SELECT count(*) FROM q.messages"
expect = 0

[[designs]]
name = "correct"
predict = []
"#;
    std::fs::write(gone.join("crashlab.toml"), text).unwrap();
    let out = crashlab(&gone, &["driver", "crashlab.toml", "--out", "o"]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("error: store 'q': reading it back from rabbitmq: the queue is gone; store 'r': reading it back from rabbitmq"),
        "{}",
        stdout(&out)
    );
    assert!(!gone.join("o/deleted/r.rabbitmq.db").exists());
    assert!(!gone
        .join("o/deleted/02-check-left.stores/q.rabbitmq.db")
        .exists());
    assert!(!gone.join("o/deleted/q.rabbitmq.db").exists());
    let out = crashlab(&gone, &["audit", "o"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    // --amqp-url is refused where no store is a queue, and where it is no AMQP URL, before
    // anything runs; so is an --out that exists, before a broker is reached; a broker that
    // does not answer is one line, exit 69, and nothing is left.
    let none = dir.path().join("none");
    for (lab, url, out_dir, code_, line) in [
        (
            "examples/python-outbox/crashlab.toml",
            "amqp://guest:guest@127.0.0.1:1/%2f",
            &none,
            2,
            "crashlab: --amqp-url: the lab file has no RabbitMQ store",
        ),
        (
            "examples/python-rabbitmq/crashlab.toml",
            "http://127.0.0.1:1/",
            &none,
            2,
            "crashlab: --amqp-url http://127.0.0.1:1/: not an AMQP URL",
        ),
        (
            "examples/python-rabbitmq/crashlab.toml",
            "amqp://guest:guest@127.0.0.1:1/%2f",
            &o,
            2,
            "crashlab: output directory",
        ),
        (
            "examples/python-rabbitmq/crashlab.toml",
            "amqp://guest:guest@127.0.0.1:1/%2f",
            &none,
            69,
            "crashlab: cannot reach RabbitMQ at amqp://guest:***@127.0.0.1:1/%2f",
        ),
    ] {
        let out = crashlab(
            root,
            &[
                "driver",
                lab,
                "--amqp-url",
                url,
                "--out",
                out_dir.to_str().unwrap(),
            ],
        );
        assert_eq!(code(&out), code_, "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(stderr(&out).starts_with(line), "{}", stderr(&out));
        assert!(!none.exists());
    }
}

fn audit_fails(dir: &Path, line: &str) {
    let out = crashlab(Path::new("."), &["audit", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains(line),
        "no '{line}' in:\n{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("FAIL: "), "{}", stdout(&out));
}

#[test]
fn a_lab_file_run_audits_and_a_changed_store_or_exit_fails() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str| {
        let o = dir.path().join(name);
        let args = ["driver", "examples/python-outbox/crashlab.toml", "--out"];
        let out = crashlab(root, &[&args[..], &[o.to_str().unwrap()]].concat());
        assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
        audit_passes(&o);
        o
    };
    // One SQL value changed in the stores the check step kept.
    let o = run("sql");
    let store = o.join("two-orders/06-check-effects.stores/consumer.db");
    let db = rusqlite::Connection::open(&store).unwrap();
    db.execute("UPDATE ledger SET amount = amount + 1 WHERE rowid = 1", [])
        .unwrap();
    drop(db);
    audit_fails(&o, "two-orders/06-check-effects.stores/consumer.db: sha256");
    audit_fails(&o, "check effects (query `SELECT sum(amount) FROM consumer.ledger`) on the kept stores app.db, broker.db, consumer.db gives 66, recorded 65");
    // The Inbox's unique index lies about one key, its rows untouched (no SQL value moves):
    // SQLite's integrity_check names it, and so must the audit.
    let o = run("index");
    let store = o.join("two-orders/consumer.db");
    let root_page: u32 = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'sqlite_autoindex_inbox_1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut bytes = std::fs::read(&store).unwrap();
    let size = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
    let page = (root_page as usize - 1) * size..root_page as usize * size;
    let at = bytes[page.clone()]
        .windows(2)
        .rposition(|w| w == b"M2")
        .expect("the index holds M2")
        + page.start;
    bytes[at + 1] = b'9';
    std::fs::write(&store, bytes).unwrap();
    common::forge_manifest_entry(&o, "two-orders/consumer.db");
    audit_fails(&o, "two-orders/consumer.db: not a sound database");
    // One recorded exit changed.
    let o = run("exit");
    let record = o.join("labfile.json");
    let text = std::fs::read_to_string(&record).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["runs"][0]["run"]["steps"][2]["exit"] = 1.into();
    std::fs::write(&record, serde_json::to_vec(&value).unwrap()).unwrap();
    audit_fails(&o, "two-orders: verdict 'ok' recorded, the evidence gives 'step consumer (role consumer): exit 1, expected 0'");
}

#[test]
fn audit_rerun_runs_a_lab_file_again_and_finds_code_that_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    lab(dir.path(), LAB, JOB);
    let out = crashlab(dir.path(), &["driver", "crashlab.toml", "--out", "drove"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    // No path of the machine in the record: the command, the lab file and each step's
    // command line are as given, with their placeholders.
    let record = std::fs::read_to_string(dir.path().join("drove/labfile.json")).unwrap();
    let tmp = dir.path().display().to_string();
    assert!(!record.contains(&tmp), "{record}");
    assert!(record.contains("\"{lab}/job.sh\""), "{record}");
    let rerun = |cwd: &Path, at: &str| crashlab(cwd, &["audit", "--rerun", at]);
    let out = rerun(dir.path(), "drove");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("rerun PASS"), "{}", stdout(&out));
    // Run from elsewhere, the lab file is not found: said in one line, exit 2.
    let drove = dir.path().join("drove");
    let out = rerun(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        drove.to_str().unwrap(),
    );
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the lab file crashlab.toml is not readable from here"),
        "{}",
        stderr(&out)
    );
    // The role's code changed since the run (a third row), the lab file did not: the offline
    // audit still passes, the rerun finds the check's value and the verdict moved.
    std::fs::write(dir.path().join("job.sh"), JOB.replace("1 2", "1 2 3")).unwrap();
    let out = crashlab(dir.path(), &["audit", "drove"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = rerun(dir.path(), "drove");
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("rerun: exit 1 after"), "{text}");
    assert!(
        text.contains(".check[0]: recorded \"2\", rerun \"3\""),
        "{text}"
    );
    assert!(text.contains("rerun FAIL"), "{text}");
    // The lab file changed since the run: refused before anything runs.
    let file = dir.path().join("crashlab.toml");
    std::fs::write(&file, format!("{LAB}# changed\n")).unwrap();
    let out = rerun(dir.path(), "drove");
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("changed since the run"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_shell_inbox_example_duplicates_exactly_where_predicted_and_reruns_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let report = explore_all("examples/shell-inbox/crashlab.toml", "2", &o);
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let cases = report["cases"].as_array().unwrap();
    // Two designs, each a run without a crash and three messages of two points each.
    assert_eq!(cases.len(), 14, "{cases:?}");
    let broke: Vec<String> = cases
        .iter()
        .filter(|c| !c["anomalies"].as_array().unwrap().is_empty())
        .map(|c| format!("{} {} {}", c["design"], c["at"], c["anomalies"]))
        .collect();
    assert_eq!(
        broke,
        (1..=3)
            .map(|hit| format!(r#""no-inbox" "consumer:consumer.after-apply@{hit}" ["duplicate"]"#))
            .collect::<Vec<_>>()
    );
    // The evidence audits PASS and the run, done again, gives the same lines and rows.
    let out = crashlab(root, &["audit", "--rerun", o.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("PASS: lab file shell-inbox (explore), 14 scenario runs"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("rerun PASS"), "{}", stdout(&out));
}

/// A job that writes two rows and marks itself done; run again, it starts over unless done.
/// Design one-tx writes all three in one transaction; the two-tx designs write the first row
/// in a transaction of its own, a moment before the rest.
const SPLIT_LAB: &str = r#"id = "split"
title = "Two rows, one or two transactions"

[stores.db]
sqlite = "db.sqlite"
schema = "db.sql"

[roles.job]
command = ["sh", "{lab}/job.sh", "{store.db}", "{crashlab}", "{design}"]
points = { "job.after-first" = "the first row is durable, the second not yet" }

[[scenarios]]
name = "restart"
steps = [{ role = "job" }, { role = "job", name = "job-again" }, { check = "rows" }]

[[checks]]
name = "rows"
sql = "SELECT count(*) FROM db.t"
expect = 2

[[invariants]]
name = "no row twice"
anomaly = "duplicate"
sql = "SELECT n FROM db.t GROUP BY n HAVING count(*) > 1"

[[invariants]]
name = "both rows"
anomaly = "lost-write"
sql = "SELECT count(DISTINCT n) FROM db.t HAVING count(DISTINCT n) < 2"

[[designs]]
name = "one-tx"
predict = []

[[designs]]
name = "two-tx"
predict = []

[[designs]]
name = "two-tx-known"
predict = [{ at = "job.after-first", anomalies = ["duplicate"] }]
"#;

const SPLIT_JOB: &str = r#"db=$1; crashlab=$2; design=$3
[ "$(sqlite3 "$db" "SELECT count(*) FROM done")" = 1 ] && exit 0
if [ "$design" = one-tx ]; then
  sqlite3 "$db" <<'SQL'
BEGIN IMMEDIATE;
INSERT INTO t VALUES (1);
.shell sleep 0.2
INSERT INTO t VALUES (2);
INSERT INTO done VALUES (1);
COMMIT;
SQL
  exit $?
fi
sqlite3 "$db" "INSERT INTO t VALUES (1)"
"$crashlab" point job.after-first || exit $?
sleep 0.2
sqlite3 "$db" "INSERT INTO t VALUES (2); INSERT INTO done VALUES (1)"
"#;

#[test]
fn chaos_kills_a_lab_files_steps_and_finds_the_duplicate_a_split_transaction_makes() {
    let dir = tempfile::tempdir().unwrap();
    lab(dir.path(), SPLIT_LAB, SPLIT_JOB);
    std::fs::write(
        dir.path().join("db.sql"),
        "CREATE TABLE t (n INTEGER);\nCREATE TABLE done (n INTEGER);\n",
    )
    .unwrap();
    let chaos = |variant: &str, out: &str| {
        let args = ["chaos", "crashlab.toml", "--variant", variant];
        let more = ["--seed", "2", "--runs", "3", "--kills", "1", "--out", out];
        crashlab(dir.path(), &[&args[..], &more[..]].concat())
    };
    let record = |out: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join(out).join("labfile.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    // One transaction: a kill anywhere leaves both rows or none, and the restart writes them.
    let out = chaos("one-tx", "one");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("PASS: lab split in design one-tx: 4 scenario runs"),
        "{}",
        stdout(&out)
    );
    let one = record("one");
    let runs = one["runs"].as_array().unwrap();
    assert_eq!(one["kind"], "chaos");
    assert!(
        runs[0]["kills"].is_null(),
        "the run without a kill: {}",
        runs[0]
    );
    // Only the first step has a later step of its role to restart it.
    for run in &runs[1..] {
        assert_eq!(run["kills"][0]["step"], 0, "{run}");
    }
    let killed = |v: &serde_json::Value| {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| !r["run"]["steps"][0]["killed_after_ms"].is_null())
            .count()
    };
    assert!(killed(&one) >= 2, "{one}");
    audit_says(
        &dir.path().join("one"),
        "PASS: lab file split (chaos), 4 scenario runs",
    );
    // Two transactions and no prediction: the kill between them makes a duplicate, a FAIL.
    let out = chaos("two-tx", "two");
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("broke (duplicate) where no prediction says so"),
        "{}",
        stdout(&out)
    );
    audit_says(
        &dir.path().join("two"),
        "PASS: lab file split (chaos), 4 scenario runs",
    );
    // Its page says so, is well-formed, and is drawn again by the audit byte for byte.
    let page = std::fs::read_to_string(dir.path().join("two/report.html")).unwrap();
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(&page, options).expect("report.html is well-formed");
    assert!(page.contains("<b>FAIL</b>"), "{page}");
    assert!(
        page.contains("broke (duplicate) where no prediction says so"),
        "{page}"
    );
    assert!(page.contains("SIGKILLed after"), "{page}");
    std::fs::write(
        dir.path().join("two/report.html"),
        page.replace("<b>FAIL</b>", "<b>PASS</b>"),
    )
    .unwrap();
    common::forge_manifest_entry(&dir.path().join("two"), "report.html");
    let out = crashlab(dir.path(), &["audit", "two"]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("report.html: is not the page labfile.json draws"),
        "{}",
        stdout(&out)
    );
    // The same kills, predicted by the design: found where it says, a PASS.
    let out = chaos("two-tx-known", "known");
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let known = record("known");
    audit_says(
        &dir.path().join("known"),
        "PASS: lab file split (chaos), 4 scenario runs",
    );
    assert!(stdout(&out).contains("duplicate"), "{}", stdout(&out));
    // The same seed kills at the same share of the step's wall without a kill, whatever
    // that wall was in each run.
    let shares = |v: &serde_json::Value| -> Vec<f64> {
        let runs = v["runs"].as_array().unwrap();
        let wall = runs[0]["run"]["steps"][0]["wall_ms"].as_f64().unwrap();
        runs[1..]
            .iter()
            .map(|r| r["kills"][0]["after_ms"].as_f64().unwrap() / wall)
            .collect()
    };
    for (a, b) in shares(&record("two")).iter().zip(shares(&known)) {
        assert!(
            (a - b).abs() < 0.02,
            "{:?} {:?}",
            shares(&record("two")),
            shares(&known)
        );
    }
    // Each forgery below re-hashes what it changed in the manifest: the audit must find it
    // from what the evidence says, not from a hash.
    let forged = |name: &str, edit: &dyn Fn(&mut serde_json::Value), also: Option<&str>| {
        let to = dir.path().join(name);
        let copied = Command::new("cp")
            .args(["-r", "known"])
            .arg(&to)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(copied.success());
        let mut value = known.clone();
        edit(&mut value);
        common::forge_json(&to, "labfile.json", &value);
        if let Some(rel) = also {
            let mut events = std::fs::read_to_string(to.join(rel)).unwrap();
            events.push_str("not an event\n");
            std::fs::write(to.join(rel), events).unwrap();
            common::forge_manifest_entry(&to, rel);
        }
        let out = crashlab(dir.path(), &["audit", name]);
        assert_eq!(code(&out), 1, "{name}: {}{}", stdout(&out), stderr(&out));
        stdout(&out)
    };
    // A kill moment no kill planned, and a killed step's exit changed.
    let text = forged(
        "moment",
        &|v| {
            let step = &mut v["runs"][1]["run"]["steps"][0];
            assert!(!step["killed_after_ms"].is_null(), "{step}");
            step["killed_after_ms"] = 99_999.into();
            step["exit"] = 0.into();
        },
        None,
    );
    assert!(
        text.contains("recorded as killed after 99999 ms, which no kill of the run plans"),
        "{text}"
    );
    assert!(text.contains("recorded as killed exits 0"), "{text}");
    // A kill moved, with its step's record: not what the seed draws.
    let text = forged(
        "redrawn",
        &|v| {
            v["runs"][1]["kills"][0]["after_ms"] = 3.into();
            v["runs"][1]["run"]["steps"][0]["killed_after_ms"] = 3.into();
        },
        None,
    );
    assert!(
        text.contains(
            "seed-2/restart: kills [Kill { step: 0, after_ms: 3 }] recorded, its seed draws"
        ),
        "{text}"
    );
    // A seed's run dropped: not the runs the command gives.
    let text = forged(
        "dropped",
        &|v| {
            v["runs"].as_array_mut().unwrap().pop();
        },
        None,
    );
    assert!(
        text.contains("the command's --seed 2 --runs 3 gives"),
        "{text}"
    );
    // A kill added to the run without one (to skip its checks).
    let text = forged(
        "nokill",
        &|v| v["runs"][0]["kills"] = serde_json::json!([{"step": 0, "after_ms": 0}]),
        None,
    );
    assert!(
        text.contains(
            "no-kill/restart: kills [Kill { step: 0, after_ms: 0 }] recorded, its seed draws []"
        ),
        "{text}"
    );
    // A fault its events show, left out of the record.
    let text = forged(
        "fault",
        &|_| {},
        Some("no-kill/restart/02-job-again.events.jsonl"),
    );
    assert!(
        text.contains("its events show the fault 'events line"),
        "{text}"
    );
    // A chaos run is not rerun (where a kill lands is timing): one line, exit 2.
    let out = crashlab(dir.path(), &["audit", "--rerun", "one"]);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    // A built-in lab's load option, and a scenario with nothing to restart a kill: refused
    // before anything runs, one line, exit 2.
    let out = crashlab(
        dir.path(),
        &["chaos", "crashlab.toml", "--messages", "5", "--out", "x"],
    );
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stderr(&out).starts_with("crashlab: --messages: a lab file's chaos takes"),
        "{}",
        stderr(&out)
    );
    let single = SPLIT_LAB.replace(r#"{ role = "job", name = "job-again" }, "#, "");
    std::fs::write(dir.path().join("crashlab.toml"), single).unwrap();
    let out = crashlab(dir.path(), &["chaos", "crashlab.toml", "--out", "x"]);
    assert_eq!(code(&out), 2, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("scenario restart: no run step is followed by a later step of its role"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("x").exists() && !dir.path().join("x.partial").exists());
}

fn audit_says(dir: &Path, line: &str) {
    let out = crashlab(Path::new("."), &["audit", dir.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains(line), "{}", stdout(&out));
}

#[test]
fn a_background_server_crashed_after_it_paid_pays_twice_only_where_the_key_is_stored_apart() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let o = dir.path().join("o");
    let mark = format!("labfile-background-{}", std::process::id());
    let out = Command::new(BIN)
        .args([
            "explore",
            "examples/python-idempotency/crashlab.toml",
            "--variants",
            "all",
            "--json",
            "--out",
        ])
        .arg(&o)
        .current_dir(root)
        .env("CRASHLAB_TEST_MARK", &mark)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let cases = report["cases"].as_array().unwrap();
    // Per design: the run without a crash, and the points the two servers announced.
    assert_eq!(cases.len(), 8, "{cases:?}");
    let broke: Vec<String> = cases
        .iter()
        .filter(|c| !c["anomalies"].as_array().unwrap().is_empty())
        .map(|c| format!("{} {} {}", c["design"], c["at"], c["anomalies"]))
        .collect();
    assert_eq!(
        broke,
        vec![r#""key-after-effect" "server:server.after-payment@1" ["duplicate"]"#.to_string()]
    );
    // The server ran in the background until its stop, and none is left.
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(o.join("labfile.json")).unwrap()).unwrap();
    let first = &record["runs"][0]["run"]["steps"][0];
    assert_eq!(
        (first["name"].as_str(), first["stopped"].as_bool()),
        (Some("server"), Some(true)),
        "{first}"
    );
    assert_eq!(common::marked_processes(&mark), Vec::<String>::new());
    let out = crashlab(root, &["audit", o.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    // Chaos kills the server in the background too (seeds 2 to 5 draw it), while the client
    // runs; the restarted server serves the retry, and nothing is left.
    let c = dir.path().join("c");
    let out = Command::new(BIN)
        .args(["chaos", "examples/python-idempotency/crashlab.toml"])
        .args([
            "--variant",
            "key-after-effect",
            "--kills",
            "1",
            "--runs",
            "6",
            "--out",
        ])
        .arg(&c)
        .current_dir(root)
        .env("CRASHLAB_TEST_MARK", &mark)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(c.join("labfile.json")).unwrap()).unwrap();
    let killed: Vec<&serde_json::Value> = record["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["run"]["steps"][0])
        .filter(|s| s["killed_after_ms"].is_u64())
        .collect();
    assert!(
        !killed.is_empty(),
        "no server kill landed: {}",
        stdout(&out)
    );
    for server in killed {
        assert_eq!(
            (server["exit"].as_i64(), server["stopped"].as_bool()),
            (Some(137), None),
            "{server}"
        );
    }
    assert_eq!(common::marked_processes(&mark), Vec::<String>::new());
    let out = crashlab(root, &["audit", c.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    // A background role that never gets ready is killed at the step's bound, and says so.
    let lab_text = LAB.replace(
        r#"steps = [{ role = "job" }, { check = "rows" }]"#,
        r#"steps = [{ role = "job", ready = "job.after-insert" }, { stop = "job" }]"#,
    );
    let file = lab(dir.path(), &lab_text, "exec sleep 300\n");
    let out = Command::new(BIN)
        .args(["driver", &file, "--step-timeout-ms", "500", "--out"])
        .arg(dir.path().join("never"))
        .env("CRASHLAB_TEST_MARK", &mark)
        .output()
        .unwrap();
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out)
            .contains("never announced its ready point job.after-insert within 500 ms; killed"),
        "{}",
        stdout(&out)
    );
    assert_eq!(common::marked_processes(&mark), Vec::<String>::new());
}

#[test]
fn a_run_spares_what_is_not_its_roles_and_keeps_values_and_arms_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    // A check whose value is a megabyte: recorded cut, and the audit reads it back the same.
    let big = LAB.replace(
        "sql = \"SELECT count(*) FROM db.t\"\nexpect = 2",
        "sql = \"SELECT count(*) || substr(hex(zeroblob(600000)), 1, 1000000) FROM db.t\"\nexpect = 2",
    );
    assert_ne!(big, LAB);
    let file = lab(dir.path(), &big, JOB);
    // A process crashlab's caller started before it `exec`ed crashlab is crashlab's child,
    // not a role's: no sweep kills it. An arm in crashlab's own environment reaches no role.
    let script = format!("sleep 300 </dev/null >/dev/null 2>&1 & echo $! > sibling; exec {BIN} driver {file} --out o");
    let out = Command::new("sh")
        .args(["-c", &script])
        .current_dir(dir.path())
        .env("CRASHLAB_CRASH_AT", "job.after-insert")
        .env("CRASHLAB_CRASH_MODE", "exit")
        .output()
        .unwrap();
    let sibling = std::fs::read_to_string(dir.path().join("sibling")).unwrap();
    let alive = Path::new("/proc").join(sibling.trim()).exists();
    let _ = Command::new("kill").arg(sibling.trim()).status();
    assert!(alive, "the sibling was swept");
    // The check fails (its value is not 2) but no role crashed.
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("o/labfile.json")).unwrap())
            .unwrap();
    let steps = &record["runs"][0]["run"]["steps"];
    assert_eq!(steps[0]["exit"], 0, "{steps}");
    let value = steps[1]["check"][0].as_str().unwrap();
    assert!(
        value.ends_with("… (1000001 bytes)"),
        "{}",
        &value[value.len() - 40..]
    );
    assert!(value.chars().count() < 1100);
    let out = crashlab(dir.path(), &["audit", "o"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}
