//! `explore.md`: the same table as stdout, as Markdown.

use std::fmt::Write;

use crate::engine::explore::export::{anomaly_text, matrix, summary, Colour, STATES_COLUMNS};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::report::Report;
use crate::engine::LabStack;

pub fn render(lab: &LabStack, report: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# crashlab explore {}: {}", lab.full_name(), lab.title);
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Crash mode `{}`, files on {}, {}, {:.0} ms, {:.1} cases/s on {} jobs.",
        report.crash_mode,
        report.work_fs,
        super::size(report),
        report.wall_ms,
        report.cases_per_s,
        report.jobs
    );
    let _ = writeln!(
        s,
        "Cells: `ok N` held in N cases (one per hit `@N`), `BREAKS b/n` broke in b of n, `-` not reached; `*` marks the break the design predicts."
    );
    for block in matrix(report) {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "## {} ({}): {}",
            block.variant,
            crate::out::plural(block.cases, "case", "cases"),
            summary(&block)
        );
        let _ = writeln!(s);
        let _ = write!(s, "| point | hits |");
        for inv in Invariant::ALL {
            let _ = write!(s, " {} |", inv.title());
        }
        for (_, title) in report.words.columns {
            let _ = write!(s, " {title} |");
        }
        let _ = writeln!(s, " bad anomalies |");
        let _ = writeln!(
            s,
            "|---|---:|{}---|",
            "---|".repeat(5) + &"---:|".repeat(report.words.columns.len())
        );
        for row in &block.rows {
            let _ = write!(s, "| `{}` | {} |", row.point, row.probe_hits);
            if row.cells[0].colour() == Colour::NotReached {
                let _ = writeln!(
                    s,
                    " not reached |{}",
                    " |".repeat(5 + report.words.columns.len())
                );
                continue;
            }
            for cell in &row.cells {
                let text = cell.text();
                if cell.predicted {
                    let _ = write!(s, " **{text}** * |");
                } else if cell.colour() == Colour::Breaks {
                    let _ = write!(s, " **{text}** |");
                } else {
                    let _ = write!(s, " {text} |");
                }
            }
            for v in &row.counts {
                let _ = write!(s, " {v} |");
            }
            let _ = writeln!(s, " {} |", anomaly_text(&row.bad_anomalies));
        }
        if !block.states.is_empty() {
            let _ = writeln!(s);
            let _ = writeln!(s, "| states of each cut | {} |", STATES_COLUMNS.join(" | "));
            let _ = writeln!(s, "|---|{}", "---:|".repeat(STATES_COLUMNS.len()));
            for row in &block.states {
                let _ = writeln!(s, "| `{}` | {} |", row.case, row.cells().join(" | "));
            }
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "## Verdict");
    let _ = writeln!(s);
    for finding in &report.findings {
        let _ = writeln!(s, "- {finding}");
    }
    for d in &report.differences {
        let _ = writeln!(s, "- differs: {d}");
    }
    let _ = writeln!(
        s,
        "\n**{}**",
        if report.ok {
            report.pass_line(false)
        } else {
            "FAIL: the run differs from what the designs predict".to_string()
        }
    );
    s
}
