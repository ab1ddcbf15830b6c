//! One timeline from the evidence: columns are the steps of one evidence directory in the
//! order the driver started them (order, not wall time, so the same run gives the same
//! picture); lanes are the roles that ran (one per subcommand) and the databases. Pure.
//!
//! A background step (lab 13's receiver, a dispatcher holding its lock) runs beside later
//! steps: its bar spans every column whose snapshot froze it (`frozen` in
//! database-files.json), and its commits sit where the database they name changed while it
//! ran (place.rs), since the evidence records state per step, not per instant.

use std::collections::BTreeMap;

use crate::engine::evidence::{Process, StepResult};
use crate::engine::files::{FileRow, END};
use crate::engine::report::model::{self, Evidence, Output};
use crate::engine::report::picture::{
    line, routes, slots, Bar, Cell, Column, Lane, LaneKind, Line, Mark, MarkKind, Timeline, Tone,
};
use crate::engine::report::place;
use crate::engine::report::text;

/// Database files among the rows: the `-wal` and `-journal` beside them are not lanes.
fn is_database(file: &str) -> bool {
    !file.ends_with("-wal") && !file.ends_with("-journal") && !file.ends_with("-shm")
}

/// The lane of a database a line names by its role (`queue` is `queue.db`).
fn db_lane(lanes: &[Lane], role: &str) -> Option<usize> {
    let with_db = format!("{role}.db");
    lanes
        .iter()
        .position(|l| l.kind == LaneKind::Database && (l.name == with_db || l.name == role))
}

fn lane(name: &str, kind: LaneKind) -> Lane {
    Lane {
        name: name.to_string(),
        kind,
        rows: 1,
    }
}

/// Roles in order of appearance, those that only read back last (next to the databases whose
/// state they show); then the databases of the rows, then any other a commit names.
fn lanes(ev: &Evidence, members: &[usize]) -> Vec<Lane> {
    let procs = &ev.processes.processes;
    let reads = |i: &&usize| !model::readback_fields(&ev.results.steps[**i]).is_empty();
    let writers = members.iter().filter(|i| !reads(i));
    let mut lanes: Vec<Lane> = Vec::new();
    for &i in writers.chain(members.iter().filter(reads)) {
        let role = model::role_of(&procs[i]);
        if !lanes.iter().any(|l| l.name == role) {
            lanes.push(lane(&role, LaneKind::Role));
        }
    }
    let scenarios: Vec<&str> = members
        .iter()
        .map(|&i| procs[i].scenario.as_str())
        .collect();
    for row in ev
        .files
        .iter()
        .filter(|r| scenarios.contains(&r.scenario.as_str()))
    {
        if is_database(&row.file) && db_lane(&lanes, &row.file).is_none() {
            lanes.push(lane(&row.file, LaneKind::Database));
        }
    }
    for &i in members {
        for commit in &ev.outputs[i].commits {
            if db_lane(&lanes, &commit.db).is_none() {
                lanes.push(lane(&commit.db, LaneKind::Database));
            }
        }
    }
    lanes
}

/// A role lane's text for its process: what it said last, its error, its readback's verdict
/// and any field no database lane shows, its problems.
fn own_lines(p: &Process, out: &Output, result: &StepResult, lanes: &[Lane]) -> Vec<Line> {
    let mut lines = Vec::new();
    let fields = model::readback_fields(result);
    if !fields.is_empty() {
        let holds = fields.iter().all(model::Field::holds);
        lines.push(if holds {
            line("readback as expected", Tone::Good)
        } else {
            line("readback NOT as expected", Tone::Bad)
        });
        for field in fields.iter().filter(|f| db_lane(lanes, f.role()).is_none()) {
            let tone = if field.holds() {
                Tone::Plain
            } else {
                Tone::Bad
            };
            lines.push(line(format!("{}: {}", field.path, field.describe()), tone));
        }
    } else {
        if let Some(summary) = &out.summary {
            lines.push(line(summary.clone(), Tone::Plain));
        }
        if p.exit != 0 && out.crash.is_none() {
            if let Some(error) = &out.error {
                lines.push(line(error.clone(), Tone::Bad));
            }
        }
    }
    if !result.ok {
        for problem in result.problems.iter().take(3) {
            lines.push(line(format!("FAILED: {problem}"), Tone::Bad));
        }
    }
    if out.incomplete {
        lines.push(line("(output cut or unreadable)", Tone::Bad));
    }
    if out.crash.is_none() {
        if let Some(point) = &p.crash_point {
            lines.push(line(format!("armed {point}: no CRASH line"), Tone::Bad));
        }
    }
    lines
}

/// The timeline of the processes whose output lies in `group` (see `model::group_of`).
pub fn build(ev: &Evidence, group: &str) -> Timeline {
    let procs = &ev.processes.processes;
    let members: Vec<usize> = (0..procs.len())
        .filter(|&i| model::group_of(&procs[i]) == group)
        .collect();
    let mut rows: BTreeMap<&str, BTreeMap<&str, Vec<&FileRow>>> = BTreeMap::new();
    for row in &ev.files {
        rows.entry(row.scenario.as_str())
            .or_default()
            .entry(row.after_step.as_str())
            .or_default()
            .push(row);
    }
    let snapshot = |scenario: &str, step: &str| -> Vec<&FileRow> {
        rows.get(scenario)
            .and_then(|r| r.get(step))
            .cloned()
            .unwrap_or_default()
    };
    let columns: Vec<Column> = members
        .iter()
        .map(|&i| Column {
            process: i,
            step: procs[i].step.clone(),
            scenario: procs[i].scenario.clone(),
            info: format!("exit {} · {} ms", procs[i].exit, text::ms(procs[i].wall_ms)),
            ok: ev.results.steps[i].ok,
        })
        .collect();
    let n = columns.len();
    let mut lanes = lanes(ev, &members);
    // Each database after each column, and after its scenario's end.
    let state = |rows: &[&FileRow], lane: &Lane| -> place::State {
        rows.iter()
            .find(|r| r.file == lane.name && lane.kind == LaneKind::Database)
            .map_or((false, None), |r| (r.exists, r.logical_sha256.clone()))
    };
    let scenario_of: Vec<&str> = columns.iter().map(|c| c.scenario.as_str()).collect();
    let mut present = Vec::with_capacity(lanes.len());
    let mut changed = Vec::with_capacity(lanes.len());
    for lane in &lanes {
        let after: Vec<place::State> = columns
            .iter()
            .map(|c| state(&snapshot(&c.scenario, &c.step), lane))
            .collect();
        let ends: Vec<place::State> = columns
            .iter()
            .map(|c| state(&snapshot(&c.scenario, END), lane))
            .collect();
        present.push(after.iter().map(|s| s.0).collect::<Vec<bool>>());
        changed.push(place::changed(&after, &ends, &scenario_of));
    }
    // Columns whose own process reported a commit on the lane: a change there is explained.
    let mut own = vec![vec![false; n]; lanes.len()];
    for (c, column) in columns.iter().enumerate() {
        for commit in &ev.outputs[column.process].commits {
            own[db_lane(&lanes, &commit.db).expect("a lane per database")][c] = true;
        }
    }
    let mut bars: Vec<Bar> = Vec::new();
    let mut cells: Vec<Cell> = Vec::new();
    let mut marks: Vec<(usize, usize, usize, Mark)> = Vec::new();
    for (c, column) in columns.iter().enumerate() {
        let i = column.process;
        let (p, out, result) = (&procs[i], &ev.outputs[i], &ev.results.steps[i]);
        let role = lanes
            .iter()
            .position(|l| l.kind == LaneKind::Role && l.name == model::role_of(p))
            .expect("every role has a lane");
        // A background step spans every later column of its scenario that froze it.
        let last = (c..n)
            .take_while(|&d| scenario_of[d] == column.scenario)
            .filter(|&d| {
                snapshot(&columns[d].scenario, &columns[d].step)
                    .iter()
                    .any(|r| r.frozen.contains(&column.step))
            })
            .max()
            .unwrap_or(c);
        let background = last > c;
        let row = (0..)
            .find(|&r| {
                !bars
                    .iter()
                    .any(|b| b.lane == role && b.row == r && b.first <= last && c <= b.last)
            })
            .expect("a free row");
        lanes[role].rows = lanes[role].rows.max(row + 1);
        // Each commit's column: its own, or for a background step where its database
        // changed while it ran (the next column included: a change seen only after it).
        let mut at_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for commit in &out.commits {
            let l = db_lane(&lanes, &commit.db).expect("a lane per database");
            at_of.entry(l).or_default();
        }
        for (&l, at) in at_of.iter_mut() {
            let k = out
                .commits
                .iter()
                .filter(|m| db_lane(&lanes, &m.db) == Some(l))
                .count();
            *at = if background {
                let span: Vec<usize> = (c..=(last + 1).min(n - 1))
                    .filter(|&d| scenario_of[d] == column.scenario && changed[l][d])
                    .collect();
                let windows = place::unexplained(&span, c, &own[l]);
                place::background_columns(k, &windows, last)
            } else {
                vec![c; k]
            };
        }
        let mut crash_column = c;
        let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
        for commit in &out.commits {
            let l = db_lane(&lanes, &commit.db).expect("a lane per database");
            let k = taken.entry(l).or_insert(0);
            let at = at_of[&l][*k];
            *k += 1;
            crash_column = crash_column.max(at);
            let mut tip = format!("{}: COMMITTED {} {}", p.step, commit.db, commit.what);
            if background {
                tip.push_str(&format!(
                    " (a background step: shown where {} changed while it ran)",
                    lanes[l].name
                ));
            }
            let mark = Mark {
                lane: l,
                column: at,
                slot: 0,
                kind: MarkKind::Commit,
                text: commit.what.clone(),
                tip,
                ids: commit.ids.clone(),
            };
            // In a column, a background step's commits come before the column's own (by
            // the background step's start): a server's commit answers a request of the
            // step, which then records the reply (lab 13: effect, then receipt).
            marks.push((at, if background { c } else { n }, marks.len(), mark));
        }
        // A readback's fields on the lanes of the databases they count.
        let stage = model::stage_name(result).unwrap_or("readback");
        for field in model::readback_fields(result) {
            if let Some(l) = db_lane(&lanes, field.role()) {
                let mark = Mark {
                    lane: l,
                    column: c,
                    slot: 0,
                    kind: MarkKind::State {
                        holds: field.holds(),
                    },
                    text: field.describe(),
                    tip: format!("{} ({stage}): {} {}", p.step, field.path, field.describe()),
                    ids: Vec::new(),
                };
                marks.push((c, usize::MAX, marks.len(), mark));
            }
        }
        let mut lines = own_lines(p, out, result, &lanes);
        // The crash sits after the last commit its process made, so a background step's
        // crash is where its last commit is.
        if let Some(crash) = &out.crash {
            let point = crash.split(' ').next().unwrap_or(crash);
            let crash_lines = vec![line("CRASH", Tone::Crash), line(point, Tone::Point)];
            if crash_column == c {
                lines.extend(crash_lines);
            } else {
                cells.push(Cell {
                    lane: role,
                    row,
                    column: crash_column,
                    lines: crash_lines,
                });
            }
        }
        cells.push(Cell {
            lane: role,
            row,
            column: c,
            lines,
        });
        bars.push(Bar {
            lane: role,
            row,
            first: c,
            last,
            ok: result.ok,
            crashed: out.crash.is_some(),
            tip: format!(
                "{} ({}): {}; exit {}, expected {}; wall_ms {}; max_rss_kb {}{}",
                p.step,
                p.scenario,
                p.argv.join(" "),
                p.exit,
                p.expected_exit,
                p.wall_ms,
                p.max_rss_kb,
                if p.timed_out { "; timed out" } else { "" }
            ),
        });
    }
    let marks = slots(marks);
    let routes = routes(&marks);
    let failed = columns.iter().filter(|c| !c.ok).count();
    let verdict = if failed == 0 {
        format!(
            "PASS: {}, every expectation held",
            crate::out::plural(n, "process", "processes")
        )
    } else {
        format!(
            "FAIL: {failed} of {} did not hold their expectations",
            crate::out::plural(n, "step", "steps")
        )
    };
    let mut title = format!("crashlab driver: lab {}", ev.processes.lab);
    if !group.is_empty() {
        title.push_str(&format!(", scenario {group}"));
    }
    Timeline {
        title,
        verdict,
        ok: failed == 0,
        columns,
        lanes,
        bars,
        cells,
        marks,
        routes,
        present,
    }
}
