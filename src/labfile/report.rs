//! `report.html` of a lab file's run: the verdict, then per scenario run its timeline (the
//! steps in order, each as long as its wall), its steps, its invariants' rows and links to
//! each step's stdout, stderr and events. One self-contained page, well-formed as XML, drawn
//! by a pure function of `labfile.json` alone, so the audit draws it again byte for byte.

use std::fmt::Write;

use super::evidence::{Record, RunRecord, RECORD};
use super::run::{stem, StepRun};
use crate::engine::report::html::{link, STYLE};
use crate::engine::report::text::{self, escape};

/// The page's name in the run's directory.
pub const REPORT: &str = "report.html";

/// The most scenario runs drawn in full; the rest are counted, and all are in labfile.json.
const RUNS_SHOWN_MAX: usize = 500;
/// The timeline's width, and one step's row, in pixels.
const WIDTH_PX: f64 = 900.0;
const ROW_PX: f64 = 22.0;
/// Room left of the bars for the step's name.
const NAMES_PX: f64 = 180.0;

/// The page. Pure.
pub fn render(record: &Record) -> String {
    let failed = record.runs.iter().filter(|r| r.verdict != "ok").count();
    let word = if failed == 0 { "PASS" } else { "FAIL" };
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    let _ = writeln!(
        s,
        "<title>crashlab {}, lab file {}: {word}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        escape(&record.kind),
        escape(&record.lab_file)
    );
    let _ = writeln!(
        s,
        "<h1>crashlab {}: {}</h1>",
        escape(&record.kind),
        escape(&record.lab_file)
    );
    let (class, head) = match failed {
        0 => (
            "pass",
            format!(
                "<b>PASS</b>: every one of {} found what its design predicts.",
                crate::out::plural(record.runs.len(), "scenario run", "scenario runs")
            ),
        ),
        n => (
            "fail",
            format!(
                "<b>FAIL</b>: {n} of {} not as predicted.",
                crate::out::plural(record.runs.len(), "scenario run", "scenario runs")
            ),
        ),
    };
    let _ = writeln!(s, "<p class=\"verdict {class}\">{head}</p>");
    let mut meta = format!(
        "<code>{}</code> · crashlab {} · crash mode {} · lab file sha256 <code>{}</code>",
        escape(&record.command.join(" ")),
        escape(&record.version),
        record.mode.name(),
        escape(&record.lab_sha256)
    );
    if let Some(seed) = record.stopped_before_seed {
        let _ = write!(meta, " · <b>stopped by --timeout-ms before seed {seed}</b>");
    }
    let _ = writeln!(
        s,
        "<p class=\"meta\">{meta} · every record in <a href=\"{RECORD}\">{RECORD}</a></p>"
    );
    for run in record.runs.iter().take(RUNS_SHOWN_MAX) {
        run_section(&mut s, run);
    }
    if record.runs.len() > RUNS_SHOWN_MAX {
        let _ = writeln!(
            s,
            "<p>… and {} more scenario runs, each in {RECORD}.</p>",
            record.runs.len() - RUNS_SHOWN_MAX
        );
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn run_section(s: &mut String, run: &RunRecord) {
    let _ = writeln!(
        s,
        "<h2>{}: design {}, scenario {}</h2>",
        escape(&run.dir),
        escape(&run.design),
        escape(&run.scenario)
    );
    let mut what: Vec<String> = run
        .arms
        .iter()
        .map(|(i, point, hit)| format!("crash armed at step {} {point}@{hit}", i.saturating_add(1)))
        .collect();
    what.extend(run.kills.iter().map(|k| {
        format!(
            "SIGKILL due at step {} after {} ms",
            k.step.saturating_add(1),
            k.after_ms
        )
    }));
    if what.is_empty() {
        what.push("no crash".into());
    }
    let class = if run.verdict == "ok" { "pass" } else { "fail" };
    let _ = writeln!(
        s,
        "<p class=\"verdict {class}\">{}: <b>{}</b></p>",
        escape(&what.join("; ")),
        escape(&run.verdict)
    );
    let _ = writeln!(s, "<div class=\"pic\">{}</div>", timeline(&run.run.steps));
    s.push_str(
        "<table>\n<tr><th>step</th><th>role</th><th>exit</th><th>wall_ms</th>\
         <th>what happened</th><th>output</th></tr>\n",
    );
    for (i, step) in run.run.steps.iter().enumerate() {
        let bad = !step.faults.is_empty()
            || step.timed_out
            || step.check.as_ref().is_some_and(|(got, want)| got != want);
        let class = if bad { r#" class="bad""# } else { "" };
        let at = format!("{}/{}", run.dir, stem(i, &step.name));
        let output = match step.check {
            Some(_) => String::new(),
            None => ["stdout.txt", "stderr.txt", "events.jsonl"]
                .iter()
                .map(|file| {
                    link(
                        &format!("{at}.{file}"),
                        file.split('.').next().unwrap_or(file),
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
        };
        let _ = writeln!(
            s,
            "<tr{class}><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{output}</td></tr>",
            escape(&step.name),
            escape(&step.role),
            step.exit,
            text::ms(step.wall_ms),
            escape(&happened(step)),
        );
    }
    s.push_str("</table>\n");
    if let Some(why) = &run.run.unreadable {
        let _ = writeln!(
            s,
            "<p class=\"verdict fail\">stores unreadable: {}</p>",
            escape(why)
        );
    }
    s.push_str(
        "<table>\n<tr><th>invariant</th><th>anomaly</th><th>rows</th><th>examples</th></tr>\n",
    );
    for found in &run.run.found {
        let class = if found.rows > 0 {
            r#" class="bad""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<tr{class}><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&found.invariant),
            found.anomaly.name(),
            found.rows,
            escape(&found.examples.join(", "))
        );
    }
    s.push_str("</table>\n");
}

/// What a step did, in a line: its check's value, its crash or kill, its faults.
fn happened(step: &StepRun) -> String {
    let mut parts: Vec<String> = Vec::new();
    match (&step.check, &step.crashed, step.killed_after_ms) {
        (Some((got, want)), _, _) => parts.push(format!("read {got}, expected {want}")),
        (None, Some((point, hit)), _) => parts.push(format!("CRASH {point}@{hit}")),
        (None, None, Some(ms)) => parts.push(format!("SIGKILLed after {ms} ms")),
        (None, None, None) => {}
    }
    if step.check.is_none() {
        parts.push(crate::out::plural(step.points.len(), "point", "points"));
    }
    if step.timed_out {
        parts.push("killed past its step timeout".into());
    }
    parts.extend(step.faults.iter().cloned());
    parts.join("; ")
}

/// The steps in order, each a bar as long as its wall (the moments between steps are not
/// drawn): a crash orange, a kill or a fault red, a check blue, the rest green.
fn timeline(steps: &[StepRun]) -> String {
    let total_ms: f64 = steps
        .iter()
        .map(|s| s.wall_ms.max(0.0))
        .sum::<f64>()
        .max(1.0);
    let scale = (WIDTH_PX - NAMES_PX - 10.0) / total_ms;
    let height = ROW_PX * steps.len() as f64 + 24.0;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH_PX}" height="{height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">"#
    );
    let mut start_ms = 0.0;
    for (i, step) in steps.iter().enumerate() {
        let y = 6.0 + ROW_PX * i as f64;
        let x = NAMES_PX + start_ms * scale;
        let width = (step.wall_ms.max(0.0) * scale).max(2.0);
        let fill = match step {
            s if !s.faults.is_empty() || s.killed_after_ms.is_some() => "#c62828",
            s if s.crashed.is_some() => "#ef6c00",
            s if s.check.is_some() => "#1565c0",
            _ => "#2e7d32",
        };
        let _ = write!(
            svg,
            r#"<text x="4" y="{:.1}">{}</text><rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{:.1}" fill="{fill}"><title>{}</title></rect>"#,
            y + 13.0,
            escape(&text::truncate(&step.name, 24)),
            ROW_PX - 6.0,
            escape(&format!(
                "{}: {} ms; {}",
                step.name,
                text::ms(step.wall_ms),
                happened(step)
            ))
        );
        start_ms += step.wall_ms.max(0.0);
    }
    let _ = write!(
        svg,
        r##"<text x="{NAMES_PX}" y="{:.1}" fill="#546e7a">0 to {} ms, steps end to end</text></svg>"##,
        height - 4.0,
        text::ms(total_ms)
    );
    svg
}
