//! The table on stdout: one block per variant, points as rows, invariants as columns.

use std::fmt::Write;
use std::path::Path;

use crate::engine::explore::export::{anomaly_text, matrix, summary, Colour};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::report::Report;
use crate::engine::Lab;

pub fn render(lab: &Lab, report: &Report, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "lab {} ({}): {}", lab.id, lab.slug, lab.title);
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
