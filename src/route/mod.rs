//! One function per subcommand: turn parsed arguments into calls of the modules that work.
//! The engine's commands are here; each lab's role subcommands are in its own file.

use anyhow::Result;

use crate::cli::Command;
use crate::engine;
use crate::fail;

pub fn run(command: Command) -> Result<i32> {
    match command {
        Command::Point { name } => Ok(crate::point::shell(&[name])),
        Command::Points {
            lab: Some(file),
            json,
        } if crate::labfile::is_file(&file) => {
            let lab = crate::labfile::load(std::path::Path::new(&file))?;
            match json {
                true => crate::say!(
                    "{}",
                    serde_json::to_string_pretty(&crate::labfile::to_value(&lab).stacks[0].points)?
                ),
                false => crate::say!("{}", crate::labfile::points_text(&lab)),
            }
            Ok(fail::EXIT_OK)
        }
        Command::Lab {
            action: crate::cli::LabAction::Check { file },
        } => {
            let lab = crate::labfile::load(&file)?;
            crate::say!(
                "{}: lab {}: {} roles, {} points, {} scenarios, {} designs: no mistake found",
                file.display(),
                lab.id,
                lab.roles.len(),
                lab.roles.iter().map(|r| r.points.len()).sum::<usize>(),
                lab.scenarios.len(),
                lab.designs.len()
            );
            Ok(fail::EXIT_OK)
        }
        Command::Lab {
            action: crate::cli::LabAction::Show { lab, stack, json },
        } if crate::labfile::is_file(&lab) => {
            if stack.is_some() {
                return Err(fail::usage(
                    "--stack: a lab file runs on its own stores, on the sqlite stack",
                ));
            }
            let lab = crate::labfile::load(std::path::Path::new(&lab))?;
            let value = crate::labfile::to_value(&lab);
            match json {
                true => crate::say!("{}", serde_json::to_string_pretty(&value)?),
                false => crate::say!("{}", engine::value::summary(&value)),
            }
            Ok(fail::EXIT_OK)
        }
        Command::Driver {
            lab,
            out,
            crash_mode,
            step_timeout_ms,
            stack,
            keep_db,
            moves,
            seed,
            json,
            junit,
            power,
            ..
        } if crate::labfile::is_file(&lab) => {
            let set = [
                ("--cut", power.cut.is_some()),
                ("--store-profile", power.store_profile.is_some()),
                ("--keep-db", keep_db),
                ("--move-crash", !moves.is_empty()),
                ("--seed", seed.is_some()),
                ("--json", json),
                ("--junit", junit.is_some()),
                ("--stack", stack.stack.is_some()),
                ("--server", stack.server.is_some()),
                ("--queue-type", stack.queue_type.is_some()),
            ];
            refuse_set(
                &set,
                "driver",
                "--crash-mode (exit, abort, kill, hang), --step-timeout-ms, --pg-url, --amqp-url and --out",
            )?;
            let file = crate::labfile::load(std::path::Path::new(&lab))?;
            crate::labfile::driver::driver(
                &file,
                &labfile_options(
                    crash_mode,
                    "all",
                    out,
                    step_timeout_ms,
                    false,
                    (stack.pg_url, stack.amqp_url),
                )?,
            )
        }
        Command::Chaos { lab, options } if crate::labfile::is_file(&lab) => {
            labfile_chaos(&lab, &options)
        }
        Command::Explore(args) if crate::labfile::is_file(&args.lab) => {
            // What a built-in lab's explore takes and a lab file's does not: refused, never
            // silently ignored.
            let set = [
                ("--points", args.points.is_some()),
                ("--cut", args.cut.is_some()),
                ("--seed", args.seed.is_some()),
                ("--max-states", args.max_states.is_some()),
                ("--work-dir", args.work_dir.is_some()),
                ("--shard", args.shard.is_some()),
                ("--junit", args.junit.is_some()),
                ("--stack", args.stack.stack.is_some()),
                ("--server", args.stack.server.is_some()),
                ("--queue-type", args.stack.queue_type.is_some()),
            ];
            refuse_set(&set, "explore", "--variants, --jobs, --crash-mode (exit, abort, kill, hang), --step-timeout-ms, --pg-url, --amqp-url, --json and --out")?;
            let file = crate::labfile::load(std::path::Path::new(&args.lab))?;
            let mut options = labfile_options(
                args.crash_mode,
                &args.variants,
                args.out.clone(),
                args.step_timeout_ms,
                args.json,
                (args.stack.pg_url.clone(), args.stack.amqp_url.clone()),
            )?;
            // One case at a time unless asked: a user's roles may share what crashlab does not
            // give each run (a fixed port, a file outside {run}).
            options.jobs = engine::explore::check_jobs(args.jobs.unwrap_or(1))?;
            crate::labfile::explore::explore(&file, &options)
        }
        Command::Points { lab: name, json } => {
            let labs: Vec<&engine::Lab> = match name {
                Some(name) => vec![crate::engine::registry::find(&name)?],
                None => crate::engine::registry::labs().to_vec(),
            };
            if json {
                let value: Vec<serde_json::Value> = labs
                    .iter()
                    .map(|l| {
                        let points: Vec<serde_json::Value> = engine::points_of(l)
                            .iter()
                            .map(|(p, stacks)| {
                                serde_json::json!({"name": p.name, "window": p.window, "stacks": stacks})
                            })
                            .collect();
                        serde_json::json!({"lab": l.full_name(), "stacks": l.stack_names(), "points": points})
                    })
                    .collect();
                crate::say!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                for l in labs {
                    let all = l.stack_names();
                    crate::say!("lab {} ({}; {}):", l.id, l.slug, all.join(", "));
                    for (p, stacks) in engine::points_of(l) {
                        // A point on every stack of the lab says nothing more; one on some
                        // names them.
                        let on = match stacks.len() == all.len() {
                            true => String::new(),
                            false => format!(" [{}]", stacks.join(", ")),
                        };
                        crate::say!("  {:<34} {}{on}", p.name, p.window);
                    }
                }
            }
            Ok(fail::EXIT_OK)
        }
        Command::Lab {
            action: crate::cli::LabAction::Show { lab, stack, json },
        } => {
            let lab = crate::engine::registry::find(&lab)?;
            let value = engine::value::LabValue::of(lab, stack.as_deref())?;
            match json {
                true => crate::say!("{}", serde_json::to_string_pretty(&value)?),
                false => crate::say!("{}", engine::value::summary(&value)),
            }
            Ok(fail::EXIT_OK)
        }
        Command::Driver {
            lab: name,
            out: out_dir,
            keep_db,
            moves,
            crash_mode,
            power,
            seed,
            step_timeout_ms,
            json,
            junit,
            stack,
        } => {
            let lab = crate::engine::registry::find_on(&name, stack.stack.as_deref())?;
            engine::crash_mode::supported(lab, crash_mode)?;
            let nemesis = engine::crash_mode::choose_on(crash_mode, power.cut, seed, stack.server)?;
            let profile = power.profile()?;
            let out_dir = out_dir.unwrap_or_else(|| engine::driver::default_out(lab));
            let command = recorded_args();
            engine::driver::run(
                lab,
                &engine::driver::Options {
                    out: out_dir,
                    keep_db,
                    moves,
                    nemesis,
                    profile,
                    step_timeout_ms,
                    command,
                    json,
                    junit,
                    stack: *stack,
                },
            )
        }
        command @ Command::Chaos { .. } => {
            let (name, options) = command.into_chaos().expect("a chaos command");
            let (lab, profile) =
                crate::engine::load::profile_on(&name, options.stack.stack.as_deref())?;
            crate::engine::load::chaos::run(lab, profile, &options, recorded_args())
        }
        Command::Bench {
            lab: name,
            messages,
            batch,
            consumers,
            runs,
            json,
            stack,
        } => {
            let (lab, profile) = crate::engine::load::profile_on(&name, stack.as_deref())?;
            crate::engine::load::bench::run(
                lab,
                profile,
                &crate::engine::load::bench::Options {
                    messages,
                    batch,
                    consumers,
                    runs,
                    json,
                },
            )
        }
        Command::Servers(args) => crate::servers::command::run(&args),
        Command::Explore(args) => engine::explore::command(&args, recorded_args()),
        Command::Merge(args) if engine::load::chaos::merge::is_chaos(&args) => {
            engine::load::chaos::merge::command(&args, recorded_args())
        }
        Command::Merge(args) => engine::explore::merge::command(&args, recorded_args()),
        Command::Probe(args) => crate::probe::command(&args, recorded_args()),
        Command::Digest { files, json } => {
            let mut documents = Vec::with_capacity(files.len());
            for file in files {
                if !file.is_file() {
                    return Err(fail::usage(format!(
                        "{} does not exist or is not a file",
                        file.display()
                    )));
                }
                let (bytes, sha) = engine::files::sha256_file(&file)?;
                let logical = engine::files::logical_sha256_of_copy(&file).map_err(|e| {
                    fail::usage(format!(
                        "{} is not a readable SQLite database: {}",
                        file.display(),
                        fail::one_line(&e)
                    ))
                })?;
                // Every file is checked before anything is printed: a bad one names itself
                // and leaves stdout empty, in either form.
                documents.push(serde_json::json!({
                    "file": file.display().to_string(),
                    "bytes": bytes,
                    "sha256": sha,
                    "logical_sha256": logical,
                }));
            }
            if json {
                crate::say!("{}", serde_json::to_string_pretty(&documents)?);
            } else {
                for d in &documents {
                    crate::say!(
                        "{} bytes={} sha256={} logical_sha256={}",
                        d["file"].as_str().unwrap_or_default(),
                        d["bytes"],
                        d["sha256"].as_str().unwrap_or_default(),
                        d["logical_sha256"].as_str().unwrap_or_default()
                    );
                }
            }
            Ok(fail::EXIT_OK)
        }
        Command::Audit {
            dir,
            json,
            strict_sources,
            rerun: true,
        } => engine::rerun::run(&dir, json, strict_sources),
        Command::Audit {
            dir,
            json,
            strict_sources,
            rerun: false,
        } => engine::audit::run(&dir, json, strict_sources),
    }
}

/// This process's arguments for the evidence: an absolute path (an `--out` outside the
/// checkout, say) is recorded by its last component only, so no machine path is written.
pub fn recorded_args() -> Vec<String> {
    let mut secret_next = false;
    std::env::args()
        .skip(1)
        .map(|arg| {
            // A server URL the user gave may hold a password: the evidence is shared, so
            // it records the URL with the password masked (`audit --rerun` of such a run
            // then needs the URL given again, which it cannot have).
            let secret = std::mem::replace(&mut secret_next, URL_FLAGS.contains(&arg.as_str()));
            if secret || URL_FLAGS.iter().any(|f| arg.starts_with(&format!("{f}="))) {
                return crate::servers::postgres::redact(&arg);
            }
            engine::evidence::recorded_path(std::path::Path::new(&arg))
        })
        .collect()
}

/// Flags whose value is a server URL (`--pg-url URL` or `--pg-url=URL`).
const URL_FLAGS: &[&str] = &["--pg-url", "--amqp-url"];

/// The first option of a built-in lab `set` holds, refused for a lab file's `command` (one
/// line, exit 2) with what that command takes: never silently ignored.
fn refuse_set(set: &[(&str, bool)], command: &str, takes: &str) -> Result<()> {
    match set.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(fail::usage(format!(
            "{flag}: a lab file's {command} takes {takes}"
        ))),
        None => Ok(()),
    }
}

/// `crashlab chaos FILE`: the options of a built-in lab's load (messages, consumers, batch,
/// lease, servers, power cuts, shards, JUnit) are not a lab file's, and are refused when set.
fn labfile_chaos(lab: &str, o: &engine::load::chaos::Options) -> Result<i32> {
    let set = [
        ("--messages", o.messages != 1_000),
        ("--consumers", o.consumers != 2),
        ("--batch", o.batch != 20),
        ("--lease-ms", o.lease_ms != 5_000),
        ("--server-kills", o.server_kills != 0),
        ("--shard", o.shard.is_some()),
        ("--junit", o.junit.is_some()),
        ("--crash-mode", o.crash_mode.is_some()),
        ("--cut", o.power.cut.is_some()),
        ("--store-profile", o.power.store_profile.is_some()),
        ("--stack", o.stack.stack.is_some()),
        ("--server", o.stack.server.is_some()),
        ("--queue-type", o.stack.queue_type.is_some()),
    ];
    refuse_set(&set, "chaos", "--variant, --kills, --seed, --runs, --process-timeout-ms, --timeout-ms, --pg-url, --amqp-url, --json and --out")?;
    // The same bounds as a built-in lab's chaos, and at least one kill.
    engine::load::chaos::bounds(o, 1)?;
    if o.seed.checked_add(o.runs - 1).is_none() {
        return Err(fail::usage(format!(
            "--seed {} --runs {}: the last seed would pass {}",
            o.seed,
            o.runs,
            u64::MAX
        )));
    }
    let file = crate::labfile::load(std::path::Path::new(lab))?;
    let default = file.designs.first().map_or("", |d| d.name.as_str());
    let options = labfile_options(
        engine::crash_mode::CrashMode::Kill,
        o.variant.as_deref().unwrap_or(default),
        o.out.clone(),
        o.process_timeout_ms,
        o.json,
        (o.stack.pg_url.clone(), o.stack.amqp_url.clone()),
    )?;
    let plan = crate::labfile::chaos::Plan {
        seed: o.seed,
        runs: o.runs,
        kills: o.kills,
        whole: std::time::Duration::from_millis(o.timeout_ms),
    };
    crate::labfile::chaos::chaos(&file, &options, &plan)
}

/// What explore and driver of a lab file take: a process crash only (a lab file's roles are
/// not crashlab's, so a power cut or a server kill is not theirs to judge yet).
fn labfile_options(
    mode: engine::crash_mode::CrashMode,
    designs: &str,
    out: Option<std::path::PathBuf>,
    step_timeout_ms: u64,
    json: bool,
    (pg_url, amqp_url): (Option<String>, Option<String>),
) -> Result<crate::labfile::explore::Options> {
    let Some(mode) = mode.process() else {
        return Err(fail::usage(format!(
            "--crash-mode {}: a lab file takes exit, abort, kill or hang",
            mode.name()
        )));
    };
    Ok(crate::labfile::explore::Options {
        designs: designs.to_string(),
        mode,
        out,
        timeout: std::time::Duration::from_millis(step_timeout_ms),
        json,
        pg_url,
        amqp_url,
        jobs: 1,
        command: std::iter::once("crashlab".to_string())
            .chain(recorded_args())
            .collect(),
    })
}
