//! What a probe prints: a row per check (the draft's section, the verdict, what was
//! expected against what came back) and a last line; or one JSON document (`--json`); and
//! the JUnit report (`--junit FILE`).

use std::path::Path;

use serde_json::json;

use super::records::{Exchange, ProbeFile, Verdict, Verdicted};
use crate::junit;

/// The last line: PASS, or FAIL naming every failed check and its anomalies.
pub fn verdict_line(file: &ProbeFile, requests: usize, out: &Path) -> String {
    let count = |v: Verdict| file.checks.iter().filter(|c| c.verdict == v).count();
    let failed: Vec<&Verdicted> = file
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .collect();
    let tail = format!("evidence {}; wall_ms {:.1}", out.display(), file.wall_ms);
    if failed.is_empty() {
        return format!(
            "PASS: {} of {} checks passed, {} skipped, {} for information; {}; {tail}",
            count(Verdict::Pass),
            file.checks.len(),
            count(Verdict::Skip),
            count(Verdict::Info),
            crate::out::plural(requests, "request", "requests")
        );
    }
    let names: Vec<&str> = failed.iter().map(|c| c.check.as_str()).collect();
    // Each anomaly once, with the checks that showed it: "duplicate in retry, concurrent".
    let mut by_anomaly = std::collections::BTreeMap::<&str, Vec<&str>>::new();
    for c in &failed {
        for a in &c.anomalies {
            by_anomaly.entry(a).or_default().push(&c.check);
        }
    }
    let anomalies: String = by_anomaly
        .iter()
        .map(|(a, checks)| format!("; {a} in {}", checks.join(", ")))
        .collect();
    format!(
        "FAIL: {} of {} checks failed: {}{anomalies}; {tail}",
        failed.len(),
        file.checks.len(),
        names.join(", ")
    )
}

/// The table and its last line.
pub fn table(file: &ProbeFile, requests: usize, out: &Path) -> String {
    let rows: Vec<[&str; 5]> = file
        .checks
        .iter()
        .map(|c| {
            [
                &c.check,
                &c.section,
                c.verdict.word(),
                &c.expected,
                &c.observed,
            ]
        })
        .collect();
    let head = ["check", "draft", "verdict", "expected", "observed"];
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].len())
            .chain([head[i].len()])
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2), width(3)];
    let line = |r: [&str; 5]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        )
        .trim_end()
        .to_string()
    };
    let mut text = format!(
        "probe {} ({})\n",
        file.url,
        crate::out::plural(file.checks.len(), "check", "checks")
    );
    text.push_str(&line(head));
    text.push('\n');
    for r in rows {
        text.push_str(&line(r));
        text.push('\n');
    }
    text.push_str(&verdict_line(file, requests, out));
    text.push('\n');
    text
}

/// `--json`: the verdict, where the evidence is, and every check.
pub fn document(file: &ProbeFile, requests: usize, out: &Path) -> serde_json::Value {
    json!({
        "ok": file.ok,
        "url": file.url,
        "evidence": out.display().to_string(),
        "requests": requests,
        "wall_ms": file.wall_ms,
        "checks": file.checks,
    })
}

/// `--junit FILE`: a case per check; a failure says what was expected and what came, and
/// lists its exchanges.
pub fn junit(file: &ProbeFile, exchanges: &[Exchange]) -> junit::Suite {
    let cases = file
        .checks
        .iter()
        .map(|c| {
            let own: Vec<&Exchange> = exchanges.iter().filter(|e| e.check == c.check).collect();
            let time_s = match (own.first(), own.last()) {
                (Some(a), Some(b)) => (b.ended_ms - a.started_ms) / 1000.0,
                _ => 0.0,
            };
            let said = format!("expected {}; observed {}", c.expected, c.observed);
            let outcome = match c.verdict {
                Verdict::Pass | Verdict::Info => junit::Outcome::Passed,
                Verdict::Skip => junit::Outcome::Skipped {
                    message: c.observed.clone(),
                },
                Verdict::Fail => junit::Outcome::Failed {
                    message: said.clone(),
                    text: own
                        .iter()
                        .map(|e| exchange_line(e))
                        .collect::<Vec<_>>()
                        .join("\n"),
                },
            };
            junit::Case {
                name: c.check.clone(),
                classname: format!(
                    "crashlab.probe.draft-section-{}",
                    c.section.replace('.', "-")
                ),
                time_s,
                outcome,
                system_out: match c.verdict {
                    Verdict::Info => said,
                    _ => String::new(),
                },
            }
        })
        .collect();
    junit::Suite {
        name: format!("crashlab probe {}", file.url),
        time_s: file.wall_ms / 1000.0,
        cases,
    }
}

/// One exchange in a line: the step, the key sent, what came back.
fn exchange_line(e: &Exchange) -> String {
    let key = e.request.key.as_deref().unwrap_or("(none)");
    let got = match &e.response {
        Some(r) => format!(
            "{} {}, body {} bytes '{}'",
            e.outcome.word(),
            r.status,
            r.body_bytes,
            r.body_excerpt
        ),
        None => e.outcome.word().to_string(),
    };
    let detail = match e.detail.is_empty() {
        true => String::new(),
        false => format!(" ({})", e.detail),
    };
    let proxy = e.proxy.as_ref().map_or(String::new(), |p| {
        format!(
            ", proxy cut {} after the upstream's {}",
            p.cut.word(),
            p.upstream.word()
        )
    });
    format!("{} key={key}: {got}{detail}{proxy}", e.step)
}
