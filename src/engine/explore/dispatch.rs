//! Lab 13's case plan for `crashlab explore 13`: two intents, a receiver in the background
//! (keyed or unkeyed), a dispatcher, the crash armed in one of them; then recovery (the
//! business retries a crashed intent, a fresh receiver and a fresh dispatcher until every
//! intent has its receipt and its history), and the invariants on the four files.
//!
//! The receiver runs through the driver's background functions (spawn with
//! PR_SET_PDEATHSIG, a bounded wait for `READY`, SIGTERM then SIGKILL after a bound) and a
//! reaper kills whatever an error path leaves, so no receiver outlives its case.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::crash;
use crate::engine::evidence::{self, Process};
use crate::engine::explore::case::{self, CaseResult, Env, Status};
use crate::engine::explore::check::{CaseCounts, Invariant};
use crate::engine::explore::{unproven, Case, Plan, Prediction, Words};
use crate::engine::process::{self, Ended, Started};
use crate::engine::state::SQLITE;
use crate::fail;
use crate::labs::http_dispatch::readback;
use crate::labs::http_dispatch::schema::{HISTORY, INTENTS, RECEIPTS, RECEIVER};
use crate::store;

/// The receiver modes explored, in order.
pub const MODES: &[&str] = &["keyed", "unkeyed"];
/// The intents the business records: two, so the dispatcher's and the receiver's points are
/// reached twice (`@2` is the second intent's window).
pub const INTENTS_OWED: &[(&str, &str)] = &[
    ("K1", r#"{"amount":25,"to":"R1"}"#),
    ("K2", r#"{"amount":40,"to":"R2"}"#),
];
/// Recovery rounds (receiver and dispatcher again) before a case counts as stuck.
pub const ROUNDS_MAX: u32 = 3;
/// A receiver stops by itself after this long, whatever happens to explore.
const RECEIVER_LIFETIME_MS: u64 = 120_000;

fn databases() -> &'static [&'static str] {
    crate::labs::http_dispatch::lab::LAB.databases
}

pub static PLAN: Plan = Plan {
    design_word: "mode",
    designs: || MODES.to_vec(),
    predictions: PREDICTIONS,
    run,
    verdict,
    words: &WORDS,
};

/// Where the unkeyed receiver must run an intent twice: between the receiver's effect commit
/// and the dispatcher's receipt commit. Everywhere else, and everywhere in keyed mode, one.
pub const PREDICTIONS: &[Prediction] = &[
    Prediction {
        variant: "unkeyed",
        point: "dispatcher.after-response",
        invariant: Invariant::NoDuplicateEffect,
        says: "duplicate effect (reply in hand, no receipt: the resend runs it again)",
    },
    Prediction {
        variant: "unkeyed",
        point: "dispatcher.before-receipt-commit",
        invariant: Invariant::NoDuplicateEffect,
        says: "duplicate effect (receipt not committed: the resend runs it again)",
    },
    Prediction {
        variant: "unkeyed",
        point: "receiver.after-effect-commit",
        invariant: Invariant::NoDuplicateEffect,
        says: "duplicate effect (effect committed, reply lost: the resend runs it again)",
    },
];

static WORDS: Words = Words {
    count_titles: &[
        "intents",
        "attempts",
        "effects",
        "receipts",
        "history",
        "replays",
        "resends",
        "lost",
        "duplicated",
    ],
    legend: "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the mode predicts a break here\n\
         no-lost: every committed intent has an effect at the receiver; no-dup: at most one effect per intent, none without one;\n\
         no-stuck: every intent has its receipt and its history after recovery (unless held unknown);\n\
         ack=>dur: every COMMITTED line printed is in the files; counts are summed over the hits",
    pass: "PASS: keyed holds everywhere (one effect per intent); unkeyed shows its predicted duplicates at the predicted points and nowhere else",
    svg_pass: "PASS: keyed holds everywhere; unkeyed duplicates exactly where predicted",
};

/// What a case counted, end to end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Intents committed.
    pub intents: i64,
    /// Attempts the dispatcher recorded before sending.
    pub attempts: i64,
    /// Effects the receiver committed.
    pub effects: i64,
    pub receipts: i64,
    pub history: i64,
    /// Receipts of a reply the receiver replayed from its idempotency ledger.
    pub replays: i64,
    /// `RESEND` lines: an attempt without a receipt sent again.
    pub resends: i64,
    /// Committed intents (not held unknown) with no effect.
    pub lost_effects: i64,
    /// Effects beyond the first of an intent, plus effects of no intent.
    pub duplicated_effects: i64,
    /// `COMMITTED` lines checked against the files.
    pub acknowledged_commits: i64,
}

impl Counts {
    /// In the order of `WORDS.count_titles`.
    pub fn values(&self) -> [i64; 9] {
        [
            self.intents,
            self.attempts,
            self.effects,
            self.receipts,
            self.history,
            self.replays,
            self.resends,
            self.lost_effects,
            self.duplicated_effects,
        ]
    }
}

/// Every row the invariants look at. A file that does not exist reads as empty.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// (seq, key, status).
    pub intents: Vec<(i64, String, String)>,
    /// (attempt id, key).
    pub attempts: Vec<(i64, String)>,
    /// (key, replayed).
    pub receipts: Vec<(String, bool)>,
    pub history: Vec<String>,
    /// (effect id, key).
    pub effects: Vec<(i64, Option<String>)>,
}

impl Observed {
    fn has_receipt(&self, key: &str) -> bool {
        self.receipts.iter().any(|(k, _)| k == key)
    }

    /// Pending intents with no receipt: what a dispatcher still owes.
    pub fn owed(&self) -> Vec<&str> {
        self.intents
            .iter()
            .filter(|(_, k, status)| status == "pending" && !self.has_receipt(k))
            .map(|(_, k, _)| k.as_str())
            .collect()
    }

    /// Receipts whose history row is missing.
    pub fn history_owed(&self) -> Vec<&str> {
        self.receipts
            .iter()
            .filter(|(k, _)| !self.history.contains(k))
            .map(|(k, _)| k.as_str())
            .collect()
    }

    pub fn quiescent(&self) -> bool {
        self.owed().is_empty() && self.history_owed().is_empty()
    }

    pub fn effects_of(&self, key: &str) -> i64 {
        self.effects
            .iter()
            .filter(|(_, k)| k.as_deref() == Some(key))
            .count() as i64
    }
}

/// Read the four files of a case's work directory, read-only, without a trace.
pub fn read(work: &Path) -> Result<Observed> {
    let mut o = Observed::default();
    let intents = work.join("intents.db");
    if let Some(db) = store::open_existing(&intents, &INTENTS, false)? {
        o.intents = store::rows(
            &db,
            "SELECT seq, key, status FROM intents ORDER BY seq",
            &intents,
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        o.attempts = store::rows(
            &db,
            "SELECT attempt_id, key FROM attempts ORDER BY attempt_id",
            &intents,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    let receipts = work.join("receipts.db");
    if let Some(db) = store::open_existing(&receipts, &RECEIPTS, false)? {
        o.receipts = store::rows(
            &db,
            "SELECT key, replayed FROM receipts ORDER BY key",
            &receipts,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    let history = work.join("history.db");
    if let Some(db) = store::open_existing(&history, &HISTORY, false)? {
        o.history = store::rows(&db, "SELECT key FROM history ORDER BY seq", &history, |r| {
            r.get(0)
        })?;
    }
    let receiver = work.join("receiver.db");
    if let Some(db) = store::open_existing(&receiver, &RECEIVER, false)? {
        o.effects = store::rows(
            &db,
            "SELECT effect_id, key FROM effects ORDER BY effect_id",
            &receiver,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    }
    Ok(o)
}

/// Lab 13's own readback must count what `read` saw; a difference stops the run.
fn cross_check(work: &Path, o: &Observed) -> Result<()> {
    let state = readback::read_traced(
        &readback::Paths {
            intents: &work.join("intents.db"),
            receipts: &work.join("receipts.db"),
            history: &work.join("history.db"),
            receiver: &work.join("receiver.db"),
        },
        false,
    )?;
    anyhow::ensure!(
        state.intents.intents == o.intents.len() as i64
            && state.intents.attempts == o.attempts.len() as i64
            && state.receipts.receipts == o.receipts.len() as i64
            && state.history.history == o.history.len() as i64
            && state.receiver.effects == o.effects.len() as i64,
        "explore's reader and lab 13's readback disagree on the files"
    );
    Ok(())
}

/// The four file invariants of one case, its lab 13 counts, and why each broken one broke.
pub type Judgement = crate::engine::explore::check::Judgement<Counts>;

pub fn judge(o: &Observed, stdouts: &[(String, String)]) -> Judgement {
    let mut j = Judgement::default();
    let keys: BTreeSet<&str> = o.intents.iter().map(|(_, k, _)| k.as_str()).collect();
    for (_, key, status) in &o.intents {
        let n = o.effects_of(key);
        if n == 0 && status != "unknown" {
            j.counts.lost_effects += 1;
            j.problems.push(format!(
                "lost effect: intent {key} committed, no effect at the receiver"
            ));
        }
        if n > 1 {
            j.counts.duplicated_effects += n - 1;
            j.problems.push(format!(
                "duplicate effect: intent {key} ran {n} times at the receiver"
            ));
        }
    }
    for (id, key) in &o.effects {
        if !key.as_deref().is_some_and(|k| keys.contains(k)) {
            j.counts.duplicated_effects += 1;
            j.problems.push(format!(
                "effect without cause: effect {id} (key {}) matches no intent",
                key.as_deref().unwrap_or("-")
            ));
        }
    }
    j.no_lost_effect = j.counts.lost_effects == 0;
    j.no_duplicate_effect = j.counts.duplicated_effects == 0;
    let (owed, history_owed) = (o.owed(), o.history_owed());
    j.nothing_stuck = owed.is_empty() && history_owed.is_empty();
    if !j.nothing_stuck {
        j.problems.push(format!(
            "stuck after recovery: intents without a receipt {owed:?}, receipts without history {history_owed:?}"
        ));
    }
    j.counts.intents = o.intents.len() as i64;
    j.counts.attempts = o.attempts.len() as i64;
    j.counts.effects = o.effects.len() as i64;
    j.counts.receipts = o.receipts.len() as i64;
    j.counts.history = o.history.len() as i64;
    j.counts.replays = o.receipts.iter().filter(|(_, r)| *r).count() as i64;
    j.acknowledged_durable = true;
    for (step, stdout) in stdouts {
        for line in stdout.lines() {
            if line.starts_with("RESEND ") {
                j.counts.resends += 1;
            }
            let Some(rest) = line.strip_prefix("COMMITTED ") else {
                continue;
            };
            j.counts.acknowledged_commits += 1;
            if let Err(why) = visible(o, rest) {
                j.acknowledged_durable = false;
                j.problems.push(format!(
                    "acknowledged, not durable: {step} printed '{line}': {why}"
                ));
            }
        }
    }
    j
}

/// Whether what a `COMMITTED <db> <what>` line of lab 13 claims is in the files. Every shape
/// the phases print is known here; an unknown shape is an error, never a pass.
pub fn visible(o: &Observed, rest: &str) -> Result<(), String> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    let at = |i: usize| -> Result<&str, String> {
        w.get(i).copied().ok_or_else(|| {
            "a line explore cannot parse (an unchecked claim is no pass)".to_string()
        })
    };
    let number = |t: &str| -> Result<i64, String> {
        t.parse()
            .map_err(|_| format!("'{t}' is not a number where explore expects one"))
    };
    let ok = |holds: bool, missing: String| if holds { Ok(()) } else { Err(missing) };
    match (at(0)?, at(1)?) {
        // intents intent SEQ key K
        ("intents", "intent") => {
            let (seq, key) = (number(at(2)?)?, at(4)?);
            ok(
                o.intents.iter().any(|(s, k, _)| *s == seq && k == key),
                format!("intent {seq} key {key} not in the intents file"),
            )
        }
        // intents attempt ID key K
        ("intents", "attempt") => {
            let (id, key) = (number(at(2)?)?, at(4)?);
            ok(
                o.attempts.iter().any(|(a, k)| *a == id && k == key),
                format!("attempt {id} key {key} not in the intents file"),
            )
        }
        // intents key K marked unknown: …
        ("intents", "key") => {
            let key = at(2)?;
            ok(
                o.intents.iter().any(|(_, k, s)| k == key && s == "unknown"),
                format!("intent {key} is not marked unknown"),
            )
        }
        // receipts receipt key K
        ("receipts", "receipt") => {
            let key = at(3)?;
            ok(
                o.has_receipt(key),
                format!("no receipt for {key} in the receipts file"),
            )
        }
        // history history key K
        ("history", "history") => {
            let key = at(3)?;
            ok(
                o.history.iter().any(|k| k == key),
                format!("no history row for {key}"),
            )
        }
        // receiver effect ID key K (K is `-` without a key)
        ("receiver", "effect") => {
            let (id, key) = (number(at(2)?)?, at(4)?);
            let key = (key != "-").then_some(key);
            ok(
                o.effects
                    .iter()
                    .any(|(e, k)| *e == id && k.as_deref() == key),
                format!("effect {id} not in the receiver file"),
            )
        }
        _ => Err("a line explore cannot parse (an unchecked claim is no pass)".to_string()),
    }
}

/// One process run in a case, as the invariants and the evidence see it.
struct Ran {
    name: String,
    ended: Ended,
    stdout: String,
    armed: bool,
    crashed_line: bool,
}

/// A receiver running in the background: what its record needs once it has ended.
struct Background {
    name: String,
    argv: Vec<String>,
    crash: Option<String>,
    started: Started,
}

/// The processes of one case, and where their outputs go.
struct Recorder<'a> {
    env: &'a Env<'a>,
    rel: String,
    case_dir: std::path::PathBuf,
    work: &'a Path,
    processes: Vec<Process>,
    ran: Vec<Ran>,
    reaper: process::Reaper,
    /// Processes started so far: a background one is recorded when it ends, numbered when
    /// it starts.
    started: usize,
}

const DISPATCHER: &[&str] = &[
    "--intents",
    "intents.db",
    "--receipts",
    "receipts.db",
    "--history",
    "history.db",
    "--port-file",
    "receiver.port",
];

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| s.to_string()).collect()
}

impl Recorder<'_> {
    fn argv(&self, phase: &str, args: Vec<String>, crash: Option<&String>) -> Vec<String> {
        let mut argv = vec![phase.to_string()];
        argv.extend(args);
        if let Some(at) = crash {
            argv.extend([
                "--crash-at".to_string(),
                at.clone(),
                "--crash-mode".to_string(),
                self.env.mode.name().to_string(),
            ]);
        }
        argv
    }

    /// Record an ended process: its `processes.json` entry and what the checks need.
    fn record(&mut self, name: String, argv: Vec<String>, crash: Option<String>, ended: Ended) {
        let stdout_rel = format!("{name}.stdout.txt");
        let stdout = fs::read_to_string(self.case_dir.join(&stdout_rel)).unwrap_or_default();
        let crashed_line = crash.as_ref().is_some_and(|at| {
            let line = crash::crash_line(at.split('@').next().unwrap_or(at), self.env.mode);
            stdout.lines().any(|s| s == line)
        });
        let mut full = vec!["crashlab".to_string()];
        full.extend(argv);
        self.processes.push(Process {
            scenario: self.rel.clone(),
            step: name.clone(),
            argv: full,
            // Settled once the case knows what crashed (`settle_expected`).
            expected_exit: fail::EXIT_OK,
            exit: ended.exit,
            signal: ended.signal,
            crash_point: crash.clone(),
            crash_mode: crash.as_ref().map(|_| self.env.mode.name().to_string()),
            stdout: stdout_rel,
            stderr: format!("{name}.stderr.txt"),
            wall_ms: (ended.wall_ms * 1000.0).round() / 1000.0,
            max_rss_kb: ended.max_rss_kb,
            timed_out: ended.timed_out,
        });
        self.ran.push(Ran {
            name,
            ended,
            stdout,
            armed: crash.is_some(),
            crashed_line,
        });
    }

    fn name(&mut self, what: &str) -> String {
        self.started += 1;
        format!("{:02}-{what}", self.started)
    }

    /// A process in the foreground, bounded by the step timeout.
    fn run(
        &mut self,
        what: &str,
        phase: &str,
        args: Vec<String>,
        crash: Option<String>,
    ) -> Result<()> {
        let name = self.name(what);
        let argv = self.argv(phase, args, crash.as_ref());
        let ended = process::run(
            self.env.exe,
            &argv,
            self.work,
            &self.case_dir.join(format!("{name}.stdout.txt")),
            &self.case_dir.join(format!("{name}.stderr.txt")),
            self.env.timeout,
        )?;
        self.record(name, argv, crash, ended);
        Ok(())
    }

    /// A receiver in the background, ready (its `READY` line) within the step timeout. When
    /// it ends or times out before that, it is recorded (and reaped) and None comes back.
    fn start_receiver(
        &mut self,
        what: &str,
        mode: &str,
        crash: Option<String>,
    ) -> Result<Option<Background>> {
        let name = self.name(what);
        let args = words(&[
            "--db",
            "receiver.db",
            "--mode",
            mode,
            "--port-file",
            "receiver.port",
            "--lifetime-ms",
            &RECEIVER_LIFETIME_MS.to_string(),
        ]);
        let argv = self.argv("receiver", args, crash.as_ref());
        let stdout = self.case_dir.join(format!("{name}.stdout.txt"));
        let started = process::spawn(
            self.env.exe,
            &argv,
            self.work,
            &stdout,
            &self.case_dir.join(format!("{name}.stderr.txt")),
        )?;
        self.reaper.0.push(started.pid);
        match process::await_ready(&started, &stdout, "READY ", self.env.timeout)? {
            Ok(()) => Ok(Some(Background {
                name,
                argv,
                crash,
                started,
            })),
            Err(ended) => {
                let ended = match ended {
                    Some(ended) => ended,
                    None => {
                        let mut ended = process::stop(&started, false, Duration::from_millis(1))?;
                        ended.timed_out = true;
                        ended
                    }
                };
                self.reaper.0.retain(|p| *p != started.pid);
                self.record(name, argv, crash, ended);
                Ok(None)
            }
        }
    }

    /// Stop a background receiver: one that printed its CRASH line is ending by itself (or
    /// hangs, `--crash-mode hang`) and is only waited for; any other gets SIGTERM. Both with
    /// the step timeout as bound, then SIGKILL.
    fn stop_receiver(&mut self, receiver: Option<Background>) -> Result<()> {
        let Some(Background {
            name,
            argv,
            crash,
            started,
        }) = receiver
        else {
            return Ok(());
        };
        let text = fs::read_to_string(self.case_dir.join(format!("{name}.stdout.txt")))
            .unwrap_or_default();
        let crashing = text.lines().any(|l| l.starts_with("CRASH "));
        let ended = process::stop(&started, !crashing, self.env.timeout)?;
        self.reaper.0.retain(|p| *p != started.pid);
        self.record(name, argv, crash, ended);
        Ok(())
    }

    /// One round of delivery: a fresh receiver (the crash armed in it, maybe), a dispatcher,
    /// the receiver stopped.
    fn deliver(
        &mut self,
        prefix: &str,
        mode: &str,
        receiver_crash: Option<String>,
        dispatcher_crash: Option<String>,
    ) -> Result<()> {
        let receiver = self.start_receiver(&format!("{prefix}receiver"), mode, receiver_crash)?;
        if receiver.is_some() {
            // The dispatcher's own connect/read bound stays inside the step timeout, so a hung
            // receiver (`--crash-mode hang`) gives a lost reply, not a killed dispatcher.
            let bound = (self.env.timeout.as_millis() / 2)
                .clamp(1, 5_000)
                .to_string();
            let mut args = words(DISPATCHER);
            args.extend(words(&["--timeout-ms", &bound]));
            self.run(
                &format!("{prefix}dispatcher"),
                "dispatcher",
                args,
                dispatcher_crash,
            )?;
        }
        self.stop_receiver(receiver)
    }
}

fn intent_args(key: &str, body: &str) -> Vec<String> {
    words(&["--intents", "intents.db", "--key", key, "--body", body])
}

/// Run one case of lab 13 into `env.dir/<case.evidence_dir()>`.
pub fn run(def: &Case, env: &Env<'_>) -> Result<CaseResult> {
    let started = Instant::now();
    let rel = def.evidence_dir();
    let case_dir = env.dir.join(&rel);
    fs::create_dir_all(&case_dir).with_context(|| format!("creating {rel}"))?;
    let work = tempfile::Builder::new()
        .prefix("crashlab-explore-")
        .tempdir_in(env.work_root)
        .context("creating a work directory")?;
    let mode = def.design;
    let crash_phase = def
        .crash
        .map(|(point, _)| point.split('.').next().unwrap_or(point));
    let armed = |phase: &str| match def.crash {
        Some((point, hit)) if crash_phase == Some(phase) => Some(format!("{point}@{hit}")),
        _ => None,
    };
    let mut rec = Recorder {
        env,
        rel: rel.clone(),
        case_dir: case_dir.clone(),
        work: work.path(),
        processes: Vec::new(),
        ran: Vec::new(),
        reaper: process::Reaper(Vec::new()),
        started: 0,
    };

    // The scenario: the business records two intents (a crash armed in the first), a
    // receiver and a dispatcher deliver them.
    for (i, (key, body)) in INTENTS_OWED.iter().enumerate() {
        let crash = if i == 0 { armed("intent") } else { None };
        rec.run(
            &format!("intent-{key}"),
            "intent",
            intent_args(key, body),
            crash,
        )?;
    }
    rec.deliver("", mode, armed("receiver"), armed("dispatcher"))?;
    let scenario_steps = rec.ran.len();

    let mut problems: Vec<String> = Vec::new();
    let armed_step = rec.ran.iter().position(|r| r.armed);
    let mut crash_exit = None;
    let mut crashed = false;
    if let Some(i) = armed_step {
        let r = &rec.ran[i];
        crash_exit = Some(r.ended.exit);
        crashed = r.crashed_line || r.ended.exit == env.mode.expected_exit();
        if crashed && !(r.crashed_line && r.ended.exit == env.mode.expected_exit()) {
            problems.push(format!(
                "{}: exit {} and {} CRASH line, expected exit {} with the line",
                r.name,
                r.ended.exit,
                if r.crashed_line { "a" } else { "no" },
                env.mode.expected_exit()
            ));
        }
    }
    let receiver_crashed = crashed && crash_phase == Some("receiver");

    // Recovery: the business retries a crashed intent (same key, same body: a committed one
    // answers ALREADY), then a fresh receiver and dispatcher while anything is owed.
    let intent_owed = crashed && crash_phase == Some("intent");
    let mut rounds = 0;
    let mut observed = read(work.path())?;
    while rounds < ROUNDS_MAX && ((intent_owed && rounds == 0) || !observed.quiescent()) {
        rounds += 1;
        if intent_owed && rounds == 1 {
            let (key, body) = INTENTS_OWED[0];
            rec.run(
                &format!("recover{rounds}-intent-{key}"),
                "intent",
                intent_args(key, body),
                None,
            )?;
            observed = read(work.path())?;
        }
        if !observed.quiescent() {
            rec.deliver(&format!("recover{rounds}-"), mode, None, None)?;
            observed = read(work.path())?;
        }
    }

    // The exit each process had to end with, now that the case knows what crashed.
    for (i, r) in rec.ran.iter().enumerate() {
        let expected = if r.armed && def.expect_reached {
            env.mode.expected_exit()
        } else if r.armed {
            // Armed where the probe never saw the point: the phase says NOT-REACHED.
            fail::EXIT_NOT_REACHED
        } else if i < scenario_steps && receiver_crashed && r.name.ends_with("-dispatcher") {
            fail::EXIT_UNAVAILABLE
        } else {
            fail::EXIT_OK
        };
        rec.processes[i].expected_exit = expected;
    }

    let endings = rec.ran.iter().enumerate().map(|(i, r)| case::Ending {
        name: &r.name,
        ended: &r.ended,
        stdout: &r.stdout,
        armed: r.armed,
        crashed_line: r.crashed_line,
        expected_exit: rec.processes[i].expected_exit,
    });
    let error = case::endings_wrong(endings, crashed, env, &mut problems);
    if def.crash.is_some() && def.expect_reached && !crashed {
        problems.push(format!(
            "the probe reached {} at least {}, this case never crashed there",
            def.crash.map_or("", |c| c.0),
            crate::out::plural(def.crash.map_or(0, |c| c.1), "time", "times")
        ));
    }

    let stdouts: Vec<(String, String)> = rec
        .ran
        .iter()
        .map(|r| (r.name.clone(), r.stdout.clone()))
        .collect();
    let judgement = judge(&observed, &stdouts);
    let (status, invariants) = case::settle(
        error,
        def.crash.is_some(),
        crashed,
        &judgement,
        &mut problems,
    );

    assert!(rec.reaper.0.is_empty(), "every receiver was stopped");
    cross_check(work.path(), &observed)?;
    let hits = case::point_hits(rec.ran[..scenario_steps].iter().map(|r| r.stdout.as_str()));
    evidence::write_json(&case_dir, "processes.json", &rec.processes)?;
    let rows = SQLITE.snapshot(work.path(), databases(), &rel, "final")?;
    evidence::write_json(&case_dir, evidence::DATABASE_FILES, &rows)?;
    if matches!(status, Status::Breaks | Status::Error) {
        case::keep_databases(work.path(), &case_dir.join("db"), databases())?;
    }
    let result = CaseResult {
        variant: def.design,
        point: def.crash.map(|c| c.0),
        hit: def.crash.map_or(0, |c| c.1),
        expect_reached: def.expect_reached,
        status,
        invariants,
        counts: CaseCounts::Dispatch(judgement.counts),
        crash_exit,
        hits,
        recovery_rounds: rounds,
        processes: rec.processes.len(),
        problems,
        wall_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1000.0,
        evidence: rel,
    };
    evidence::write_json(&case_dir, "result.json", &result)?;
    Ok(result)
}

/// Keyed must hold every invariant at every reached point; unkeyed must break
/// `no_duplicate_effect` at every reached hit of a predicted point, with exactly one extra
/// effect, and hold everything everywhere else.
pub fn verdict(
    designs: &[&'static str],
    points: &[&'static str],
    cases: &[CaseResult],
) -> (Vec<String>, Vec<String>) {
    let mut differences = unproven(cases);
    let mut findings = Vec::new();
    for design in designs {
        let predicted: Vec<&Prediction> = PREDICTIONS
            .iter()
            .filter(|p| p.variant == *design)
            .collect();
        let is_predicted = |point: Option<&str>, inv: Invariant| {
            predicted
                .iter()
                .any(|p| Some(p.point) == point && p.invariant == inv)
        };
        let judged: Vec<&CaseResult> = cases
            .iter()
            .filter(|c| c.variant == *design && matches!(c.status, Status::Holds | Status::Breaks))
            .collect();
        let mut unexpected = Vec::new();
        for c in &judged {
            let at = format!("{}@{}", c.point.unwrap_or("?"), c.hit);
            for inv in Invariant::ALL.iter().skip(1).copied() {
                let broke = c.invariants.get(inv) == Some(false);
                let expected = is_predicted(c.point, inv);
                if broke && !expected {
                    unexpected.push(format!("{} at {at}", inv.key()));
                }
                if expected && !broke {
                    differences.push(format!(
                        "{design}: the predicted duplicate was not shown at {at} ({} holds)",
                        inv.key()
                    ));
                }
                if expected && broke {
                    if let CaseCounts::Dispatch(n) = c.counts {
                        if n.effects != n.intents + 1 {
                            differences.push(format!(
                                "{design} at {at}: {} for {}, predicted one more",
                                crate::out::plural(n.effects, "effect", "effects"),
                                crate::out::plural(n.intents, "intent", "intents")
                            ));
                        }
                    }
                }
            }
        }
        if !unexpected.is_empty() {
            differences.push(format!(
                "{design} breaks where nothing is predicted: {}",
                unexpected.join("; ")
            ));
        }
        let mut shown = Vec::new();
        for p in &predicted {
            let at: Vec<String> = judged
                .iter()
                .filter(|c| {
                    c.point == Some(p.point) && c.invariants.get(p.invariant) == Some(false)
                })
                .map(|c| format!("@{}", c.hit))
                .collect();
            if at.is_empty() {
                let why = if points.contains(&p.point) {
                    "not observed"
                } else {
                    "not explored (--points leaves the point out)"
                };
                differences.push(format!(
                    "{design}: the predicted {} ({} broken at {}) was {why}",
                    p.says,
                    p.invariant.key(),
                    p.point
                ));
            } else {
                shown.push(format!("{} {}", p.point, at.join(" ")));
            }
        }
        if predicted.is_empty() {
            if unexpected.is_empty() {
                findings.push(format!(
                    "{design}: every invariant holds at every reached point: one effect per intent"
                ));
            }
        } else if !shown.is_empty() {
            findings.push(format!(
                "{design}: predicted duplicate effect shown: no_duplicate_effect breaks at {}{}",
                shown.join(", "),
                if unexpected.is_empty() {
                    "; one effect per intent everywhere else"
                } else {
                    ""
                }
            ));
        }
    }
    (differences, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed() -> Observed {
        Observed {
            intents: vec![(1, "K1".into(), "pending".into())],
            attempts: vec![(1, "K1".into())],
            receipts: vec![("K1".into(), false)],
            history: vec!["K1".into()],
            effects: vec![(1, Some("K1".into()))],
        }
    }

    #[test]
    fn every_committed_shape_of_lab_13_is_checked() {
        let o = observed();
        for line in [
            "intents intent 1 key K1",
            "intents attempt 1 key K1",
            "receipts receipt key K1",
            "history history key K1",
            "receiver effect 1 key K1",
        ] {
            assert_eq!(visible(&o, line), Ok(()), "{line}");
        }
        for line in [
            "intents intent 2 key K2",
            "intents attempt 2 key K1",
            "intents key K1 marked unknown: left for reconciliation, not resent",
            "receipts receipt key K2",
            "history history key K2",
            "receiver effect 2 key K1",
            "receiver something new",
        ] {
            assert!(visible(&o, line).is_err(), "{line}");
        }
    }

    #[test]
    fn a_second_effect_is_a_duplicate_and_a_missing_receipt_is_stuck() {
        let mut o = observed();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.no_duplicate_effect && j.nothing_stuck);
        o.effects.push((2, Some("K1".into())));
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && !j.no_duplicate_effect);
        assert_eq!(j.counts.duplicated_effects, 1);
        o.receipts.clear();
        o.effects.clear();
        let j = judge(&o, &[]);
        assert!(!j.no_lost_effect && !j.nothing_stuck);
        // Held unknown: neither lost nor stuck, left for reconciliation.
        o.intents[0].2 = "unknown".into();
        let j = judge(&o, &[]);
        assert!(j.no_lost_effect && j.nothing_stuck);
    }
}
