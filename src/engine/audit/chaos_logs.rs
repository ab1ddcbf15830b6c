//! A chaos run's processes, logs and kills: every process is a run of one of the roles the
//! recorded command starts, with exactly the argv chaos gives that role, its own log under
//! `logs/`, and an ending kills.json explains; every amount in every log is the one the seed
//! gives that contract.

use std::collections::{BTreeMap, BTreeSet};

use super::output::{self, Ran, Which};
use super::tree::Tree;
use super::{Report, KILLS};
use crate::engine::evidence::{self, Processes};
use crate::engine::load::chaos::Options;
use crate::engine::load::kills::{self, Kill};
use crate::engine::load::pipeline::{self, Schedule, LOGS};
use crate::engine::load::profile::LoadProfile;
use crate::engine::load::roles::events_rel;
use crate::engine::LabStack;

const P: &str = evidence::PROCESSES;
/// Problems reported per log for its seeded values: one is enough to fail, a few say which.
const AMOUNT_PROBLEMS_MAX: usize = 3;

/// The roles a run of `options` starts, by name, with their argv after `crashlab`.
fn roles(profile: &dyn LoadProfile, options: &Options) -> BTreeMap<String, Vec<String>> {
    let schedule = Schedule {
        shape: options.shape(),
        kill_at: Vec::new(),
        process_timeout: std::time::Duration::from_millis(options.process_timeout_ms),
        deadline: std::time::Duration::from_millis(options.timeout_ms),
        // chaos always traces and writes events: the logs are the evidence.
        trace: true,
        events: true,
        cut: None,
        env: Vec::new(),
    };
    pipeline::roles(profile, &schedule)
        .into_iter()
        .map(|role| (role.name, role.argv))
        .collect()
}

/// Check every process and its logs; returns the log files they account for.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_processes(
    report: &mut Report,
    tree: &Tree,
    lab: &LabStack,
    profile: &dyn LoadProfile,
    options: &Options,
    processes: &Processes,
    kills: &[Kill],
    servers: &crate::engine::load::chaos::audit::Audit,
) -> BTreeSet<String> {
    let roles = roles(profile, options);
    let landed: BTreeSet<&str> = kills
        .iter()
        .filter(|k| k.landed)
        .map(|k| k.step.as_str())
        .collect();
    let mut preparer = super::statements::Preparer::new(&super::statements::schemas(lab))
        .expect("the lab's own schemas load into an in-memory database");
    let mut runs: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut logs = BTreeSet::new();
    for record in &processes.processes {
        let at = record.step.clone();
        let Some((role, run)) = record.step.rsplit_once('.') else {
            report.problem(
                P,
                format!("{at}: not a step name chaos gives (<role>.<run>)"),
            );
            continue;
        };
        let Some(argv) = roles.get(role) else {
            report.problem(
                P,
                format!("{at}: role {role} is not one the command starts"),
            );
            continue;
        };
        match run.parse::<u32>() {
            Ok(n) if n >= 1 => runs.entry(role).or_default().push(n),
            _ => report.problem(P, format!("{at}: run '{run}' is not a number from 1")),
        }
        let mut full = vec!["crashlab".to_string()];
        full.extend(argv.iter().cloned());
        if record.argv != full {
            report.problem(
                P,
                format!(
                    "{at}: argv {:?}, chaos runs {role} as {:?}",
                    record.argv, full
                ),
            );
        }
        if record.scenario != "chaos" {
            report.problem(
                P,
                format!(
                    "{at}: scenario '{}', a chaos run has 'chaos'",
                    record.scenario
                ),
            );
        }
        let killed = landed.contains(record.step.as_str());
        let (expected_exit, crash_mode) = servers.expected(&record.step, killed);
        if record.expected_exit != expected_exit || record.crash_mode != crash_mode {
            report.problem(
                P,
                format!(
                    "{at}: expected_exit {} crash_mode {:?}, kills.json gives {expected_exit} {crash_mode:?}",
                    record.expected_exit, record.crash_mode
                ),
            );
        }
        if record.crash_point.is_some() {
            report.problem(
                P,
                format!("{at}: crash_point set; chaos arms no crash point"),
            );
        }
        if record.signal == Some(libc::SIGKILL) && !killed && !record.timed_out {
            report.problem(
                P,
                format!("{at}: ended by SIGKILL, yet neither a kill in {KILLS} nor timed out"),
            );
        }
        if killed && record.signal != Some(libc::SIGKILL) {
            report.problem(
                P,
                format!("{at}: a landed kill in {KILLS}, yet not ended by SIGKILL"),
            );
        }
        let (out_rel, err_rel) = (
            format!("{LOGS}/{}.stdout.txt", record.step),
            format!("{LOGS}/{}.stderr.txt", record.step),
        );
        for (field, recorded, canonical) in [
            ("stdout", &record.stdout, &out_rel),
            ("stderr", &record.stderr, &err_rel),
        ] {
            if recorded != canonical {
                report.problem(
                    P,
                    format!("{at}: {field} '{recorded}', chaos writes it to '{canonical}'"),
                );
            }
        }
        logs.insert(out_rel.clone());
        logs.insert(err_rel.clone());
        // Its events are judged with the lab's check (chaos.rs, `claims`); here only kept.
        let events = events_rel(&record.step);
        if !tree.has_file(&events) {
            report.problem(
                &events,
                format!("{at}: missing: chaos gives every process its events file"),
            );
        }
        logs.insert(events);
        let stdout = tree.text(report, &out_rel);
        let stderr = tree.text(report, &err_rel);
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            continue;
        };
        // A process killed from outside may have been cut mid-write (a kill can end a long
        // write at a page boundary): its last line without a newline is no line at all.
        let whole = super::record::whole_stdout(&stdout, record.signal);
        let ran = Ran {
            argv: &record.argv,
            exit: record.exit,
            signal: record.signal,
            timed_out: record.timed_out,
            stdout: whole,
            stderr: &stderr,
            server_stores: crate::engine::fleet::server_stores(lab),
        };
        let mut problems = output::check(&ran, lab.points, &processes.pragmas);
        for text in preparer.check(whole) {
            problems.push((Which::Stdout, text));
        }
        // Every line is one a role prints (the replay's list of kinds): a line whose first
        // word was altered would drop out of every check above unseen.
        let unknown = whole.lines().enumerate().find(|(_, l)| {
            let word = l.split(' ').next().unwrap_or("");
            !(word == "SQL"
                || word == "COMMITTED"
                || crate::engine::replay::lines::known(lab, word))
        });
        if let Some((index, line)) = unknown {
            problems.push((
                Which::Stdout,
                format!("line {}: '{line}' is not a line a role prints", index + 1),
            ));
        }
        for text in profile
            .check_log(whole, &options.shape())
            .into_iter()
            .take(AMOUNT_PROBLEMS_MAX)
        {
            problems.push((Which::Stdout, text));
        }
        for (which, text) in problems {
            // A chaos run's checks read its roles' stdout: none names the events file.
            let file = which.file(&out_rel, &err_rel, &out_rel);
            report.problem(file, format!("{at}: {text}"));
        }
    }
    for (role, mut numbers) in runs {
        numbers.sort_unstable();
        let want: Vec<u32> = (1..=numbers.len() as u32).collect();
        if numbers != want {
            report.problem(
                P,
                format!("{role}: runs {numbers:?}, chaos numbers them 1, 2, 3… once each"),
            );
        }
    }
    logs
}

/// kills.json against the processes and the seed: numbered in order; each kill names a
/// process of its role, landed exactly when that process ended by SIGKILL; the scheduled
/// moments are the seed's, a retry follows only a kill that missed.
pub(super) fn check_kills(
    report: &mut Report,
    profile: &dyn LoadProfile,
    options: &Options,
    processes: &Processes,
    kills: &[Kill],
) {
    let (schedule, _) =
        kills::schedule(options.seed, profile.units(options.messages), options.kills);
    let mut next = 0usize;
    let mut retries_owed = 0usize;
    let mut named = BTreeSet::new();
    let mut since_ms = 0.0f64;
    for (index, k) in kills.iter().enumerate() {
        let at = format!("kill {}", index + 1);
        // When it happened is attested, not proven; but kills are made one after another.
        if !(k.since_start_ms.is_finite() && k.since_start_ms >= since_ms) {
            report.problem(
                KILLS,
                format!(
                    "{at}: since_start_ms {} goes back in time",
                    k.since_start_ms
                ),
            );
        }
        since_ms = since_ms.max(k.since_start_ms);
        if k.kill != index + 1 {
            report.problem(KILLS, format!("{at}: numbered {}", k.kill));
        }
        if !named.insert(k.step.as_str()) {
            report.problem(KILLS, format!("{at}: {} is killed twice", k.step));
        }
        match processes.processes.iter().find(|p| p.step == k.step) {
            None => report.problem(KILLS, format!("{at}: no process {}", k.step)),
            Some(p) => {
                if k.step.rsplit_once('.').map(|(r, _)| r) != Some(k.role.as_str()) {
                    report.problem(
                        KILLS,
                        format!("{at}: role {} is not the role of {}", k.role, k.step),
                    );
                }
                if k.landed != (p.signal == Some(libc::SIGKILL)) {
                    report.problem(
                        KILLS,
                        format!(
                            "{at}: landed {}, yet {} ended with signal {:?}",
                            k.landed, k.step, p.signal
                        ),
                    );
                }
            }
        }
        // A role killed for a power cut dies at the moment of the row before it.
        if k.cut {
            let moment = index
                .checked_sub(1)
                .map(|i| (kills[i].at_units, kills[i].progress_units));
            if options.cut().is_none() || moment != Some((k.at_units, k.progress_units)) {
                report.problem(
                    KILLS,
                    format!("{at}: a kill for a power cut, but not at the moment of the kill before it under --crash-mode power-loss"),
                );
            }
            continue;
        }
        // A due moment takes precedence over a retry (pipeline.rs, step 3 of its loop).
        if next < schedule.len() && schedule[next] <= k.progress_units {
            if k.at_units != schedule[next] {
                report.problem(
                    KILLS,
                    format!(
                        "{at}: at_units {}, the seed schedules {}",
                        k.at_units, schedule[next]
                    ),
                );
            }
            next += 1;
        } else if retries_owed > 0 && k.at_units == k.progress_units {
            retries_owed -= 1;
        } else {
            report.problem(
                KILLS,
                format!("{at}: neither a moment of the seed's schedule nor a retry of a kill that missed"),
            );
        }
        if !k.landed {
            retries_owed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::audit::record::whole_stdout;
    use crate::engine::audit::statements::Preparer;

    fn whole_text(stdout: &str, killed: bool) -> &str {
        whole_stdout(stdout, killed.then_some(libc::SIGKILL))
    }

    fn whole_lines(stdout: &str, killed: bool) -> impl Iterator<Item = &str> {
        whole_text(stdout, killed).lines()
    }

    #[test]
    fn a_statement_cut_by_a_kill_is_not_held_against_the_log() {
        // What a publisher killed mid-write left: the last statement cut after `'sen`.
        let stdout = "SQL sender UPDATE outbox SET status = 'sent' WHERE message_id = 'M1'\n\
                      SQL sender UPDATE outbox SET status = 'sen";
        static OUTBOX: crate::store::Schema = crate::store::Schema {
            db: "sender",
            user_version: 1,
            tables: &[("outbox", &["message_id", "status"])],
            ddl: "CREATE TABLE outbox(message_id TEXT PRIMARY KEY, status TEXT NOT NULL);",
        };
        let schemas = [&OUTBOX];
        let mut preparer = Preparer::new(&schemas).unwrap();
        assert!(preparer.check(whole_text(stdout, true)).is_empty());
        // The same cut in a process that was not killed is a finding.
        let problems = preparer.check(whole_text(stdout, false));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("line 2: "), "{problems:?}");
    }

    #[test]
    fn a_killed_process_cut_mid_line_keeps_only_its_whole_lines() {
        let cut = "POINT a\nCOMMITTED x y\nS";
        assert_eq!(
            whole_lines(cut, true).collect::<Vec<_>>(),
            ["POINT a", "COMMITTED x y"]
        );
        assert_eq!(whole_lines("S", true).count(), 0);
        // A process that was not killed keeps every line: a torn line there is a finding.
        assert_eq!(whole_lines(cut, false).last(), Some("S"));
        assert_eq!(whole_lines("a\nb\n", true).collect::<Vec<_>>(), ["a", "b"]);
    }
}
