//! The exporters of a run: the stdout table, `explore.json`, `explore.md`, `explore.svg`. They
//! share one model, the matrix: per variant, per point, per invariant, how many cases held.

pub mod json;
pub mod junit;
pub mod markdown;
pub mod svg;
pub mod table;

use std::collections::BTreeMap;

use crate::engine::explore::case::CaseResult;
use crate::engine::explore::invariant::{Invariant, Status};
use crate::engine::explore::report::Report;

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
    /// Summed over the judged cases, in the order of the lab's count columns.
    pub counts: Vec<i64>,
    /// The bad anomalies of its judged cases, by kind (Jepsen's words).
    pub bad_anomalies: BTreeMap<&'static str, usize>,
}

/// `lost-write x2, duplicate x1`, or `-` for none.
pub fn anomaly_text(anomalies: &BTreeMap<&'static str, usize>) -> String {
    if anomalies.is_empty() {
        return "-".to_string();
    }
    anomalies
        .iter()
        .map(|(a, n)| format!("{a} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Under `--cut exhaustive`: the states of one case's cut.
#[derive(Debug, Clone)]
pub struct StatesRow {
    /// `point@hit`.
    pub case: String,
    pub unsynced: usize,
    /// `523`, or `4096 of ~2^20 (bounded)`.
    pub states: String,
    pub unique: usize,
    pub run: usize,
    pub broke: usize,
    pub errors: usize,
}

/// One variant's rows.
#[derive(Debug, Clone)]
pub struct Block {
    pub variant: &'static str,
    pub rows: Vec<Row>,
    /// Under `--cut exhaustive`, one per case; empty otherwise.
    pub states: Vec<StatesRow>,
    pub cases: u32,
    pub broken_cases: u32,
    /// Judged cases without a bad anomaly, of the judged ones.
    pub valid: u32,
    pub judged: u32,
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
                    let mut counts = vec![0; report.words.columns.len()];
                    let mut bad_anomalies = BTreeMap::new();
                    for (cell, inv) in cells.iter_mut().zip(Invariant::ALL) {
                        cell.predicted = report.predictions.iter().any(|p| {
                            p.variant == *variant && p.names(point) && p.invariants.contains(&inv)
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
                            for (sum, (key, _)) in counts.iter_mut().zip(report.words.columns) {
                                *sum += c.counts.get(key);
                            }
                            for f in &c.bad_anomalies {
                                *bad_anomalies.entry(f.anomaly.name()).or_default() += 1;
                            }
                        }
                    }
                    Row {
                        point,
                        probe_hits: probe.result.hits.get(*point).copied().unwrap_or(0),
                        cells,
                        counts,
                        bad_anomalies,
                    }
                })
                .collect();
            let judged: Vec<&&CaseResult> = mine
                .iter()
                .filter(|c| matches!(c.status, Status::Holds | Status::Breaks))
                .collect();
            let states = mine
                .iter()
                .filter_map(|c| {
                    let s = c.states.as_ref()?;
                    Some(StatesRow {
                        case: format!("{}@{}", c.point.unwrap_or("?"), c.hit),
                        unsynced: s.unsynced,
                        states: s.states.clone(),
                        unique: s.unique,
                        run: s.run,
                        broke: s.broke,
                        errors: s.errors,
                    })
                })
                .collect();
            Block {
                variant,
                states,
                judged: judged.len() as u32,
                valid: judged.iter().filter(|c| c.bad_anomalies.is_empty()).count() as u32,
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

/// `holds at every reached point`, or how many cases broke; and how many judged cases were
/// valid in Jepsen's sense (no bad anomaly).
pub fn summary(block: &Block) -> String {
    let valid = format!(
        "{} of {} valid",
        block.valid,
        crate::out::plural(block.judged, "judged case", "judged cases")
    );
    let mut text = if block.broken_cases == 0 {
        format!("holds at every reached point; {valid}")
    } else {
        format!(
            "{} of {} break; {valid}",
            block.broken_cases,
            crate::out::plural(block.cases, "case", "cases")
        )
    };
    if !block.states.is_empty() {
        let run: usize = block.states.iter().map(|s| s.run).sum();
        let broke: usize = block.states.iter().map(|s| s.broke).sum();
        let bounded = block
            .states
            .iter()
            .filter(|s| s.states.ends_with("(bounded)"))
            .count();
        text.push_str(&format!(
            "; {broke} of {} broke",
            crate::out::plural(run, "state", "states")
        ));
        if bounded > 0 {
            text.push_str(&format!(
                " ({} bounded)",
                crate::out::plural(bounded, "crash point", "crash points")
            ));
        }
    }
    text
}

/// The states table's header cells: what each column of a `StatesRow` is.
pub const STATES_COLUMNS: [&str; 6] = ["unsynced", "states", "unique", "run", "broke", "errors"];

impl StatesRow {
    /// The cells after the case, in `STATES_COLUMNS`' order.
    pub fn cells(&self) -> [String; 6] {
        [
            self.unsynced.to_string(),
            self.states.clone(),
            self.unique.to_string(),
            self.run.to_string(),
            self.broke.to_string(),
            self.errors.to_string(),
        ]
    }
}

/// `162 cases (863 processes)`: the size of a run, for every exporter's headline.
pub fn size(report: &Report) -> String {
    format!(
        "{} ({})",
        crate::out::plural(report.cases.len(), "case", "cases"),
        crate::out::plural(report.processes, "process", "processes")
    )
}
