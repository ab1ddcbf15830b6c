//! The table on stdout: one block per variant, points as rows, invariants as columns.

use std::fmt::Write;
use std::path::Path;

use crate::lab::explore::check::Invariant;
use crate::lab::explore::export::{count_values, matrix, summary, Colour, COUNT_TITLES};
use crate::lab::explore::Report;
use crate::lab::Lab;

pub fn render(lab: &Lab, report: &Report, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "lab {} ({}): {}", lab.id, lab.slug, lab.title);
    let _ = writeln!(
        s,
        "explore: crash mode {}, files on {}, {} cases ({} processes) in {:.0} ms, {:.1} cases/s, {} jobs; evidence in {}",
        report.crash_mode,
        report.work_fs,
        report.cases.len(),
        report.processes,
        report.wall_ms,
        report.cases_per_s,
        report.jobs,
        out.display()
    );
    for block in matrix(report) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "{} ({} cases): {}",
            block.variant,
            block.cases,
            summary(&block)
        );
        let _ = write!(s, "{:<32} {:>4}", "point", "hits");
        for inv in Invariant::ALL {
            let _ = write!(s, " {:>11}", inv.short());
        }
        for title in COUNT_TITLES {
            let _ = write!(s, " {title:>10}");
        }
        let _ = writeln!(s);
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
            for v in count_values(&row.counts) {
                let _ = write!(s, " {v:>10}");
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "cells: ok N = held in N cases (one per hit @N); BREAKS b/n = broke in b of n; * = the design predicts a break here\n\
         no-lost: every committed contract credited; no-dup: credited once, nothing else; no-stuck: nothing pending after recovery;\n\
         ack=>dur: every COMMITTED line printed is in the files; counts are summed over the hits"
    );
    for finding in &report.findings {
        let _ = writeln!(s, "  {finding}");
    }
    if report.ok {
        let _ = writeln!(
            s,
            "PASS: the correct design holds everywhere and every variant shows its predicted violation"
        );
    } else {
        for d in &report.differences {
            let _ = writeln!(s, "  differs: {d}");
        }
        let _ = writeln!(
            s,
            "FAIL: {} differences from what the designs predict",
            report.differences.len()
        );
    }
    s
}
