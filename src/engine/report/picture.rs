//! A timeline as data, between the evidence (layout.rs) and the drawing (timeline.rs): lanes,
//! columns, bars, text cells, marks and routes. Pure.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Bad,
    /// `CRASH`, drawn red with a cross before it.
    Crash,
    /// The crash point's name under `CRASH`.
    Point,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub text: String,
    pub tone: Tone,
}

pub fn line(text: impl Into<String>, tone: Tone) -> Line {
    Line {
        text: text.into(),
        tone,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneKind {
    Role,
    Database,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub name: String,
    pub kind: LaneKind,
    /// Rows of a role lane: bars that overlap in columns take separate rows.
    pub rows: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Index into the evidence's processes.
    pub process: usize,
    pub step: String,
    pub scenario: String,
    /// `exit 73 · 13.5 ms`.
    pub info: String,
    pub ok: bool,
}

/// A process: a box on its role's lane from its column to the last column it ran beside.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub lane: usize,
    pub row: usize,
    pub first: usize,
    pub last: usize,
    pub ok: bool,
    pub crashed: bool,
    pub tip: String,
}

/// Lines of text in one cell of a role lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub lane: usize,
    pub row: usize,
    pub column: usize,
    pub lines: Vec<Line>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Commit,
    /// A value a readback showed, and whether it is the expected one.
    State {
        holds: bool,
    },
}

/// A mark on a database lane; `slot` is its place in its cell, top down.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub lane: usize,
    pub column: usize,
    pub slot: usize,
    pub kind: MarkKind,
    pub text: String,
    pub tip: String,
    pub ids: Vec<String>,
}

/// The way of one business identity: its first commit on each database, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub id: String,
    /// Indexes into `marks`.
    pub marks: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub title: String,
    pub verdict: String,
    pub ok: bool,
    pub columns: Vec<Column>,
    pub lanes: Vec<Lane>,
    pub bars: Vec<Bar>,
    pub cells: Vec<Cell>,
    pub marks: Vec<Mark>,
    pub routes: Vec<Route>,
    /// Per lane, per column: the database file exists after that step (role lanes: false).
    pub present: Vec<Vec<bool>>,
}

/// Routes drawn at most: each gets its own colour.
pub const ROUTES_MAX: usize = 4;

/// Marks shown at most in one cell; the rest are counted in one last mark.
pub const MARKS_PER_CELL_MAX: usize = 12;

/// Marks in the order they happened, each with (column, order within the column, sequence),
/// given their slots top down in each cell; a cell's marks past the bound become one
/// `N more` mark.
pub fn slots(mut marks: Vec<(usize, usize, usize, Mark)>) -> Vec<Mark> {
    marks.sort_by_key(|(column, order, seq, _)| (*column, *order, *seq));
    let mut count: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (_, _, _, mark) in &marks {
        *count.entry((mark.lane, mark.column)).or_insert(0) += 1;
    }
    let mut used: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(marks.len());
    for (_, _, _, mut mark) in marks {
        let key = (mark.lane, mark.column);
        let total = count[&key];
        let slot = used.entry(key).or_insert(0);
        if total > MARKS_PER_CELL_MAX && *slot + 1 >= MARKS_PER_CELL_MAX {
            if *slot + 1 == MARKS_PER_CELL_MAX {
                let rest = total - *slot;
                mark.text = format!("… {rest} more");
                mark.tip = format!("{rest} more marks here: see the stdout files");
                mark.ids.clear();
                mark.slot = *slot;
                out.push(mark);
            }
            *slot += 1;
            continue;
        }
        mark.slot = *slot;
        *slot += 1;
        out.push(mark);
    }
    out
}

/// Each identity's first commit on each database, in the order they happened.
pub fn routes(marks: &[Mark]) -> Vec<Route> {
    let mut routes: Vec<Route> = Vec::new();
    for (m, mark) in marks.iter().enumerate() {
        for id in &mark.ids {
            let at = match routes.iter().position(|r| &r.id == id) {
                Some(at) => at,
                None if routes.len() < ROUTES_MAX => {
                    routes.push(Route {
                        id: id.clone(),
                        marks: Vec::new(),
                    });
                    routes.len() - 1
                }
                None => continue,
            };
            let route = &mut routes[at];
            if !route.marks.iter().any(|&o| marks[o].lane == mark.lane) {
                route.marks.push(m);
            }
        }
    }
    routes
}
