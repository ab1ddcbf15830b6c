//! `crashlab probe URL`: test a live endpoint's `Idempotency-Key` handling against the IETF
//! draft (draft-ietf-httpapi-idempotency-key-header-07), including the reply that never
//! arrives: a loopback proxy lets the endpoint answer whole, then cuts the client off
//! (reset, close, after the head, inside the body), and the client retries.
//!
//! The parts: `args` (the command line, checked), `target` (the URL), `template` (the
//! request), `wire` + `message` + `client` (bounded HTTP/1.1 on plain sockets), `proxy` (the cut),
//! `effects` (counting effects on the endpoint's side), `checks` + `run` (the exchanges),
//! `judge` (verdicts from records, shared with `crashlab audit`), `report`, and the
//! evidence written here: exchanges.jsonl, effects.jsonl, probe.json, manifest.json.

pub mod args;
pub mod checks;
mod client;
pub mod effects;
pub mod judge;
#[cfg(test)]
mod judge_tests;
mod message;
mod proxy;
pub mod records;
mod report;
mod run;
pub mod target;
pub mod template;
mod wire;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

pub use args::Args;
use checks::CHECKS;
use records::{Exchange, ProbeFile, Reading, Verdict, Verdicted, EFFECTS, EXCHANGES, PROBE};
pub use run::REQUESTS_MAX;

use crate::engine::{driver, evidence};
use crate::fail;

/// `crashlab probe`: the exit is 0 when every check passed (or was skipped, or is there
/// for information), 1 when one failed, 69 when the endpoint cannot be reached, 2 for bad
/// input.
pub fn command(args: &Args, recorded: Vec<String>) -> Result<i32> {
    let config = args.config()?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let addr = config.url.resolve(timeout)?;
    target::reachable(&config.url, addr, timeout)?;
    if let Some(junit) = &args.junit {
        crate::junit::check_path(junit)?;
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("target")
            .join("probe")
            .join(format!("probe-{}", driver::utc_stamp()))
    });
    crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
    let partial = driver::claim_out(&out)?;
    let t0 = Instant::now();
    let mut probe = run::Probe::new(&config, addr, t0);
    let ran = probe.run_all();
    if let Some(signal) = crate::interrupt::caught() {
        return Err(crate::engine::process::interrupted(signal, Some(&partial)));
    }
    if let Err(e) = ran {
        // Nothing judged: the run is no evidence.
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let checks = verdicts(
        &config.settings,
        &probe.unrun,
        &probe.exchanges,
        &probe.readings,
    );
    let mut command = vec!["crashlab".to_string()];
    command.extend(args::recorded(recorded));
    let file = ProbeFile {
        url: config.url.text.clone(),
        command,
        crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git: evidence::build_checkout().and_then(|c| evidence::git_state(&c)),
        template: config.template.clone(),
        key_header: config.key_header.clone(),
        key_format: config.key_format,
        settings: config.settings.clone(),
        run_id: probe.run_id.clone(),
        unrun: probe.unrun.clone(),
        ok: checks.iter().all(|c| c.verdict != Verdict::Fail),
        checks,
        wall_ms: t0.elapsed().as_secs_f64() * 1000.0,
        max_rss_kb: peak_rss_kb(),
    };
    write(&partial, &file, &probe.exchanges, &probe.readings).with_context(|| {
        format!(
            "writing the evidence; what was written is in {}",
            partial.display()
        )
    })?;
    evidence::publish(&partial, &out)?;
    if let Some(path) = &args.junit {
        report::junit(&file, &probe.exchanges).write(path)?;
    }
    let requests = probe.exchanges.len();
    if args.json {
        crate::say!(
            "{}",
            serde_json::to_string_pretty(&report::document(&file, requests, &out))?
        );
    } else {
        crate::out::print(&report::table(&file, requests, &out));
    }
    Ok(if file.ok {
        fail::EXIT_OK
    } else {
        fail::EXIT_FAILED
    })
}

/// Every check's verdict from the records: the probe's, and the audit's again.
pub fn verdicts(
    settings: &checks::Settings,
    unrun: &[String],
    exchanges: &[Exchange],
    readings: &[Reading],
) -> Vec<Verdicted> {
    CHECKS
        .iter()
        .map(|check| {
            let own: Vec<&Exchange> = exchanges.iter().filter(|e| e.check == check.id).collect();
            let read: Vec<&Reading> = readings.iter().filter(|r| r.check == check.id).collect();
            let unrun = unrun.iter().any(|u| u == check.id);
            judge::judge(check, settings, unrun, &own, &read)
        })
        .collect()
}

fn write(dir: &Path, file: &ProbeFile, exchanges: &[Exchange], readings: &[Reading]) -> Result<()> {
    std::fs::write(dir.join(EXCHANGES), lines(exchanges)?)
        .with_context(|| format!("writing {EXCHANGES}"))?;
    std::fs::write(dir.join(EFFECTS), lines(readings)?)
        .with_context(|| format!("writing {EFFECTS}"))?;
    evidence::write_json(dir, PROBE, file)?;
    evidence::write_manifest(dir)?;
    Ok(())
}

/// JSON lines: one record per line.
fn lines<T: serde::Serialize>(records: &[T]) -> Result<String> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).context("serializing a record")?);
        text.push('\n');
    }
    Ok(text)
}

/// Parse JSON lines; the error names the line.
pub fn parse_lines<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>, String> {
    text.lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// This process's peak resident memory, in KiB.
fn peak_rss_kb() -> i64 {
    // SAFETY: a zeroed rusage is a valid out-parameter for getrusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes only into `usage`, which we own.
    match unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } {
        0 => usage.ru_maxrss,
        _ => 0,
    }
}
