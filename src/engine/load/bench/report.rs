//! A bench run's figures: the JSON document (`--json`) and the tables on stdout.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct PhaseCost {
    pub phase: String,
    pub runs: usize,
    pub median_wall_ms: f64,
    pub max_wall_ms: f64,
    pub median_max_rss_kb: i64,
    pub max_rss_kb: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub stage: String,
    pub rows: usize,
    pub wall_ms: f64,
    pub rows_per_s: f64,
    pub ceiling_wall_ms: f64,
    pub ceiling_rows_per_s: f64,
    /// rows_per_s / ceiling_rows_per_s.
    pub ratio_to_ceiling: f64,
    /// Bytes of stdout (the SQL trace) the stage wrote.
    pub trace_bytes: u64,
    pub processes: usize,
    pub max_rss_kb: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub lab: String,
    pub messages: usize,
    pub batch: u32,
    pub consumers: usize,
    pub runs: usize,
    pub cpus: usize,
    pub sqlite_version: String,
    pub phase_costs: Vec<PhaseCost>,
    pub stages: Vec<Stage>,
    pub ok: bool,
    pub problems: Vec<String>,
    pub command: String,
}

pub fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty());
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

pub fn per_s(rows: usize, wall_ms: f64) -> f64 {
    if wall_ms <= 0.0 {
        return 0.0;
    }
    (rows as f64 * 1000.0 / wall_ms).round()
}

/// One row of the stage table, its rate and its ratio to the ceiling.
pub fn stage(
    name: String,
    rows: usize,
    wall_ms: f64,
    ceiling_wall_ms: f64,
    trace_bytes: u64,
    processes: usize,
    max_rss_kb: i64,
) -> Stage {
    let rows_per_s = per_s(rows, wall_ms);
    let ceiling_rows_per_s = per_s(rows, ceiling_wall_ms);
    Stage {
        stage: name,
        rows,
        wall_ms: (wall_ms * 1000.0).round() / 1000.0,
        rows_per_s,
        ceiling_wall_ms,
        ceiling_rows_per_s,
        ratio_to_ceiling: if ceiling_rows_per_s > 0.0 {
            (rows_per_s / ceiling_rows_per_s * 1000.0).round() / 1000.0
        } else {
            0.0
        },
        trace_bytes,
        processes,
        max_rss_kb,
    }
}

pub fn print(r: &Report) {
    crate::say!(
        "bench {}: {}, batch {}, {}, {}, SQLite {}",
        r.lab,
        crate::out::plural(r.messages, "message", "messages"),
        r.batch,
        crate::out::plural(r.consumers, "consumer", "consumers"),
        crate::out::plural(r.cpus, "cpu", "cpus"),
        r.sqlite_version
    );
    crate::say!();
    crate::say!(
        "{:<28} {:>10} {:>10} {:>12}",
        "phase (1 message)",
        "median_ms",
        "max_ms",
        "max_rss_kb"
    );
    for c in &r.phase_costs {
        crate::say!(
            "{:<28} {:>10.2} {:>10.2} {:>12}",
            c.phase,
            c.median_wall_ms,
            c.max_wall_ms,
            c.max_rss_kb
        );
    }
    crate::say!();
    crate::say!(
        "{:<28} {:>10} {:>10} {:>12} {:>7} {:>12}",
        "stage",
        "wall_ms",
        "rows/s",
        "ceiling/s",
        "ratio",
        "trace_bytes"
    );
    for s in &r.stages {
        crate::say!(
            "{:<28} {:>10.1} {:>10.0} {:>12.0} {:>7.3} {:>12}",
            s.stage,
            s.wall_ms,
            s.rows_per_s,
            s.ceiling_rows_per_s,
            s.ratio_to_ceiling,
            s.trace_bytes
        );
    }
    crate::say!();
    crate::say!("command: {}", r.command);
    if r.ok {
        crate::say!("OK: every run ended with the N effects exactly once");
    } else {
        for p in &r.problems {
            crate::say!("  {p}");
        }
        crate::say!("FAIL");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_is_rated_against_its_ceiling() {
        let s = stage("publish".into(), 1000, 500.0, 250.0, 7, 1, 9);
        assert_eq!(s.rows_per_s, 2000.0);
        assert_eq!(s.ceiling_rows_per_s, 4000.0);
        assert_eq!(s.ratio_to_ceiling, 0.5);
        assert_eq!(
            stage("x".into(), 10, 0.0, 0.0, 0, 1, 0).ratio_to_ceiling,
            0.0
        );
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
    }
}
