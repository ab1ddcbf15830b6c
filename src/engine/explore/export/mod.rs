//! The exporters of a run: the stdout table, `explore.json`, `explore.md`, `explore.svg`. They
//! share one model, the matrix: per variant, per point, per invariant, how many cases held.

pub mod json;
pub mod markdown;
pub mod svg;
pub mod table;

use crate::engine::explore::case::{CaseResult, Status};
use crate::engine::explore::check::Invariant;
use crate::engine::explore::Report;

/// One invariant over the cases of one point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cell {
    /// Cases where the invariant was judged.
    pub judged: u32,
    pub broken: u32,
    /// Cases that ended in an error (nothing judged).
    pub errors: u32,
    /// The variant's design predicts this cell breaks.
    pub predicted: bool,
}

/// How a cell is coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Holds,
    Breaks,
    NotReached,
    Error,
}

impl Cell {
    pub fn colour(&self) -> Colour {
        if self.errors > 0 {
            Colour::Error
        } else if self.judged == 0 {
            Colour::NotReached
        } else if self.broken > 0 {
            Colour::Breaks
        } else {
            Colour::Holds
        }
    }

    /// `ok 2`, `BREAKS 1/2`, `-` (not reached), `ERROR 1`.
    pub fn text(&self) -> String {
        match self.colour() {
            Colour::Holds => format!("ok {}", self.judged),
            Colour::Breaks => format!("BREAKS {}/{}", self.broken, self.judged),
            Colour::NotReached => "-".to_string(),
            Colour::Error => format!("ERROR {}", self.errors),
        }
    }
}

/// One point of one variant.
#[derive(Debug, Clone)]
pub struct Row {
    pub point: &'static str,
    /// How many times the probe reached the point.
    pub probe_hits: u32,
    pub cells: [Cell; 5],
    /// Summed over the judged cases, in the order of the lab's count titles.
    pub counts: Vec<i64>,
}

/// One variant's rows.
#[derive(Debug, Clone)]
pub struct Block {
    pub variant: &'static str,
    pub rows: Vec<Row>,
    pub cases: u32,
    pub broken_cases: u32,
}

pub fn matrix(report: &Report) -> Vec<Block> {
    report
        .variants
        .iter()
        .zip(&report.probes)
        .map(|(variant, probe)| {
            let mine: Vec<&CaseResult> = report
                .cases
                .iter()
                .filter(|c| c.variant == *variant)
                .collect();
            let rows: Vec<Row> = report
                .points
                .iter()
                .map(|point| {
                    let cases: Vec<&&CaseResult> =
                        mine.iter().filter(|c| c.point == Some(*point)).collect();
                    let mut cells = [Cell::default(); 5];
                    let mut counts = vec![0; report.words.count_titles.len()];
                    for (cell, inv) in cells.iter_mut().zip(Invariant::ALL) {
                        cell.predicted = report.predictions.iter().any(|p| {
                            p.variant == *variant && p.point == *point && p.invariant == inv
                        });
                        for c in &cases {
                            if c.status == Status::Error {
                                cell.errors += 1;
                            }
                            if let Some(holds) = c.invariants.get(inv) {
                                cell.judged += 1;
                                cell.broken += u32::from(!holds);
                            }
                        }
                    }
                    for c in &cases {
                        if matches!(c.status, Status::Holds | Status::Breaks) {
                            for (sum, v) in counts.iter_mut().zip(c.counts.values()) {
                                *sum += v;
                            }
                        }
                    }
                    Row {
                        point,
                        probe_hits: probe.result.hits.get(*point).copied().unwrap_or(0),
                        cells,
                        counts,
                    }
                })
                .collect();
            Block {
                variant,
                cases: mine.len() as u32,
                broken_cases: mine
                    .iter()
                    .filter(|c| matches!(c.status, Status::Breaks | Status::Error))
                    .count() as u32,
                rows,
            }
        })
        .collect()
}

/// `holds everywhere`, or how many cases broke.
pub fn summary(block: &Block) -> String {
    if block.broken_cases == 0 {
        "holds at every reached point".to_string()
    } else {
        format!(
            "{} of {} break",
            block.broken_cases,
            crate::out::plural(block.cases, "case", "cases")
        )
    }
}
