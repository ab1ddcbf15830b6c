//! A probe run's evidence (`crashlab probe`). The recorded command is parsed as the binary
//! parses it and must give the settings, the request template and the endpoint probe.json
//! records; every exchange must carry its own check's key; and every check's verdict is
//! derived again, by the probe's own judge, from exchanges.jsonl and effects.jsonl alone:
//! a status or an effects count changed in them changes the verdict, and the audit fails.

use super::tree::Tree;
use super::Report;
use crate::cli::{Cli, Command};
use crate::probe::checks::find;
use crate::probe::records::{Exchange, ProbeFile, Reading, EFFECTS, EXCHANGES, PROBE};
use crate::probe::target::Url;

/// What no file of a probe run can prove: shown by the audit, never checked.
const ATTESTED: &str = "probe.json wall_ms, max_rss_kb, git, crashlab_version; what the endpoint \
did beyond what its answers and the effects readings show; a --request file's template";

pub(super) fn check_probe(report: &mut Report, tree: &Tree) {
    report.kind = "probe".to_string();
    report.attested = vec![ATTESTED.to_string()];
    let file: Option<ProbeFile> = tree.json(report, PROBE);
    let exchanges: Option<Vec<Exchange>> = lines(report, tree, EXCHANGES);
    let readings: Option<Vec<Reading>> = lines(report, tree, EFFECTS);
    let (Some(file), Some(exchanges), Some(readings)) = (file, exchanges, readings) else {
        return;
    };
    command(report, &file);
    records(report, &file, &exchanges, &readings);
    let derived = crate::probe::verdicts(&file.settings, &file.unrun, &exchanges, &readings);
    if derived.len() != file.checks.len() {
        report.problem(
            PROBE,
            format!(
                "{} checks recorded; the probe runs {}",
                file.checks.len(),
                derived.len()
            ),
        );
    }
    for (recorded, derived) in file.checks.iter().zip(&derived) {
        if recorded != derived {
            report.problem(
                PROBE,
                format!(
                    "check {}: recorded {} ({}), the exchanges and effects give {} ({})",
                    recorded.check,
                    recorded.verdict.word(),
                    recorded.observed,
                    derived.verdict.word(),
                    derived.observed
                ),
            );
        }
    }
    let ok = derived
        .iter()
        .all(|c| c.verdict != crate::probe::records::Verdict::Fail);
    if file.ok != ok {
        report.problem(PROBE, format!("ok is {}, the checks give {ok}", file.ok));
    }
    report.summary = format!(
        "probe of {}, {} re-derived from {} and {}, hashes",
        file.url,
        crate::out::plural(derived.len(), "check", "checks"),
        crate::out::plural(exchanges.len(), "exchange", "exchanges"),
        crate::out::plural(readings.len(), "effects reading", "effects readings")
    );
}

fn lines<T: serde::de::DeserializeOwned>(
    report: &mut Report,
    tree: &Tree,
    rel: &str,
) -> Option<Vec<T>> {
    let text = tree.text(report, rel)?;
    match crate::probe::parse_lines(&text) {
        Ok(records) => Some(records),
        Err(e) => {
            report.problem(rel, format!("malformed record: {e}"));
            None
        }
    }
}

/// The recorded command must be a probe whose options give what probe.json says it ran.
fn command(report: &mut Report, file: &ProbeFile) {
    let args = match Cli::parse_recorded(&file.command) {
        Ok(Cli {
            command: Command::Probe(args),
            ..
        }) => args,
        Ok(_) => return report.problem(PROBE, "command is not a probe"),
        Err(why) => {
            let why = why.unwrap_or_else(|| "it does not start with crashlab".to_string());
            return report.problem(
                PROBE,
                format!("command {:?}: {why}", file.command.join(" ")),
            );
        }
    };
    let settings = args.settings(file.template.varies());
    if settings != file.settings {
        report.problem(
            PROBE,
            format!(
                "settings {:?}, but the command gives {settings:?}",
                file.settings
            ),
        );
    }
    if args.url != file.url
        || args.key_header != file.key_header
        || args.key_format != file.key_format
    {
        report.problem(
            PROBE,
            "url, key_header or key_format differ from the command's",
        );
    }
    if args.request.is_none() {
        match Url::parse(&args.url, "URL").and_then(|url| args.template(&url)) {
            Ok(template) if template == file.template => {}
            Ok(_) => report.problem(PROBE, "template differs from the one the command gives"),
            Err(e) => report.problem(PROBE, format!("command: {}", crate::fail::one_line(&e))),
        }
    }
}

/// Every record belongs to a check of the probe, carries that check's key of this run, and
/// a check the probe never began has none.
fn records(report: &mut Report, file: &ProbeFile, exchanges: &[Exchange], readings: &[Reading]) {
    if exchanges.len() > crate::probe::REQUESTS_MAX {
        report.problem(
            EXCHANGES,
            format!(
                "{} exchanges; a probe sends at most {}",
                exchanges.len(),
                crate::probe::REQUESTS_MAX
            ),
        );
    }
    for (i, e) in exchanges.iter().enumerate() {
        let line = i + 1;
        let Some(check) = find(&e.check) else {
            report.problem(EXCHANGES, format!("line {line}: no check '{}'", e.check));
            continue;
        };
        if file.unrun.contains(&e.check) {
            report.problem(
                EXCHANGES,
                format!("line {line}: check {} never began", e.check),
            );
        }
        let key = format!("p{}-{}", file.run_id, check.id);
        let own = crate::probe::records::shown(&file.key_format.value(key.as_bytes()));
        let sent = e.request.key.as_deref();
        let fits = match (check.keyed, sent) {
            (true, Some(k)) => k == own,
            (false, Some(k)) => k.contains(&key),
            (false, None) => check.id == "missing-key",
            (true, None) => false,
        };
        if !fits {
            report.problem(
                EXCHANGES,
                format!(
                    "line {line}: check {} sent key {sent:?}, not this run's key for it",
                    e.check
                ),
            );
        }
    }
    for (i, r) in readings.iter().enumerate() {
        if find(&r.check).is_none() || !["before", "after-lost", "after"].contains(&r.at.as_str()) {
            report.problem(
                EFFECTS,
                format!(
                    "line {}: no reading '{}' of a check '{}'",
                    i + 1,
                    r.at,
                    r.check
                ),
            );
        }
    }
}
