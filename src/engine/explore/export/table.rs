//! The table on stdout: one block per variant, points as rows, invariants as columns.

use std::fmt::Write;
use std::path::Path;

use crate::engine::explore::export::{anomaly_text, matrix, summary, Colour, STATES_COLUMNS};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::report::Report;
use crate::engine::LabStack;

pub fn render(lab: &LabStack, report: &Report, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "lab {} ({}): {}", lab.id(), lab.slug(), lab.title);
    let _ = writeln!(
        s,
        "explore: crash mode {}, files on {}, {} in {:.0} ms, {:.1} cases/s, {} jobs; evidence in {}",
        report.crash_mode,
        report.work_fs,
        super::size(report),
        report.wall_ms,
        report.cases_per_s,
        report.jobs,
        out.display()
    );
    if let Some(states) = &report.states {
        let _ = writeln!(
            s,
            "states: {} run, {} broke, {:.1} states/s; {} bounded",
            states.run,
            states.broke,
            states.states_per_s,
            crate::out::plural(states.bounded, "crash point", "crash points")
        );
    }
    for block in matrix(report) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{} ({}): {}",
            block.variant,
            crate::out::plural(block.cases, "case", "cases"),
            summary(&block)
        );
        let _ = write!(s, "{:<32} {:>4}", "point", "hits");
        for inv in Invariant::ALL {
            let _ = write!(s, " {:>11}", inv.short());
        }
        for (_, title) in report.words.columns {
            let _ = write!(s, " {title:>10}");
        }
        let _ = writeln!(s, "  bad anomalies");
        for row in &block.rows {
            let _ = write!(s, "{:<32} {:>4}", row.point, row.probe_hits);
            if row.cells[0].colour() == Colour::NotReached {
                let _ = writeln!(s, " {:>11}", "not reached");
                continue;
            }
            for cell in &row.cells {
                let mark = if cell.predicted { "*" } else { "" };
                let _ = write!(s, " {:>11}", format!("{mark}{}", cell.text()));
            }
            for v in &row.counts {
                let _ = write!(s, " {v:>10}");
            }
            let _ = writeln!(s, "  {}", anomaly_text(&row.bad_anomalies));
        }
        if !block.states.is_empty() {
            let _ = write!(s, "{:<36}", "states of each cut (point@hit)");
            for (i, title) in STATES_COLUMNS.iter().enumerate() {
                let width = if i == 1 { 28 } else { 9 };
                let _ = write!(s, " {title:>width$}");
            }
            let _ = writeln!(s);
            for row in &block.states {
                let _ = write!(s, "{:<36}", row.case);
                for (i, cell) in row.cells().iter().enumerate() {
                    let width = if i == 1 { 28 } else { 9 };
                    let _ = write!(s, " {cell:>width$}");
                }
                let _ = writeln!(s);
            }
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{}", report.words.legend);
    for finding in &report.findings {
        let _ = writeln!(s, "  {finding}");
    }
    if report.ok {
        let _ = writeln!(s, "{}", report.pass_line(false));
    } else {
        for d in &report.differences {
            let _ = writeln!(s, "  differs: {d}");
        }
        let _ = writeln!(
            s,
            "FAIL: {} from what the designs predict",
            crate::out::plural(report.differences.len(), "difference", "differences")
        );
    }
    s
}
