//! `timeline.svg`: a `Timeline` drawn. Every size comes from the text it holds, measured with
//! a conservative monospace width (text.rs), so no label leaves the canvas. Pure.

use std::fmt::Write;

use crate::engine::report::legend::{self, cross, BLUE, GREEN, RED, ROUTE_COLOURS};
use crate::engine::report::picture::{LaneKind, MarkKind, Timeline, Tone};
use crate::engine::report::text::{self, escape, width_px};

pub const FONT: f64 = 11.0;
const TITLE_FONT: f64 = 14.0;
const VERDICT_FONT: f64 = 12.0;
const LINE_H: f64 = 15.0;
const PAD: f64 = 8.0;
const MARGIN: f64 = 12.0;
/// Room for the square or circle before a mark's text, and the cross before `CRASH`.
pub const MARK_W: f64 = 16.0;
const COLUMN_MIN_W: f64 = 72.0;
const HEADER_Y: f64 = 92.0;

fn fill_of(tone: Tone) -> &'static str {
    match tone {
        Tone::Plain => "#212121",
        Tone::Good => GREEN,
        Tone::Bad | Tone::Crash | Tone::Point => RED,
    }
}

/// Baseline of line `k` of a block whose top is `top`.
fn baseline(top: f64, k: usize) -> f64 {
    top + PAD + (k + 1) as f64 * LINE_H - 4.0
}

const NOTE: &str = "Columns are the steps in the order the driver started them, not to scale; \
    each header gives the step's exit code and wall_ms. A bar across several columns is a \
    background step: its commits sit in the columns where its database changed. Hover a bar \
    or a mark for the whole line.";

pub fn render(t: &Timeline) -> String {
    let n = t.columns.len();
    // Widths: each column as wide as the widest text it holds.
    let mut col_w = vec![COLUMN_MIN_W; n];
    for (c, column) in t.columns.iter().enumerate() {
        col_w[c] = col_w[c]
            .max(width_px(&text::label(&column.step), FONT))
            .max(width_px(&column.info, FONT));
    }
    for cell in &t.cells {
        for l in &cell.lines {
            let extra = if l.tone == Tone::Crash { MARK_W } else { 0.0 };
            col_w[cell.column] =
                col_w[cell.column].max(extra + width_px(&text::label(&l.text), FONT));
        }
    }
    for mark in &t.marks {
        col_w[mark.column] =
            col_w[mark.column].max(MARK_W + width_px(&text::label(&mark.text), FONT));
    }
    for w in col_w.iter_mut() {
        *w += 2.0 * PAD;
    }
    let left = MARGIN
        + t.lanes
            .iter()
            .map(|l| width_px(&text::label(&l.name), FONT))
            .fold(0.0, f64::max)
        + 2.0 * PAD;
    let mut col_x = Vec::with_capacity(n);
    let mut x = left;
    for w in &col_w {
        col_x.push(x);
        x += w;
    }
    let width = (x + MARGIN)
        .max(2.0 * MARGIN + width_px(&t.title, TITLE_FONT))
        .max(2.0 * MARGIN + width_px(&t.verdict, VERDICT_FONT))
        .max(2.0 * MARGIN + legend::width(t))
        .ceil();
    // Heights: each row of a role lane as tall as its tallest cell; a database lane as tall
    // as its fullest cell.
    let mut lane_top = Vec::with_capacity(t.lanes.len());
    let mut row_h: Vec<Vec<f64>> = Vec::new();
    let mut y = HEADER_Y + LINE_H + 14.0;
    for (l, lane) in t.lanes.iter().enumerate() {
        lane_top.push(y);
        let rows: Vec<f64> = match lane.kind {
            LaneKind::Role => (0..lane.rows)
                .map(|r| {
                    let lines = t
                        .cells
                        .iter()
                        .filter(|c| c.lane == l && c.row == r)
                        .map(|c| c.lines.len())
                        .max()
                        .unwrap_or(0)
                        .max(1);
                    lines as f64 * LINE_H + 2.0 * PAD
                })
                .collect(),
            LaneKind::Database => {
                let slots = t
                    .marks
                    .iter()
                    .filter(|m| m.lane == l)
                    .map(|m| m.slot + 1)
                    .max()
                    .unwrap_or(0)
                    .max(1);
                vec![slots as f64 * LINE_H + 2.0 * PAD]
            }
        };
        y += rows.iter().sum::<f64>();
        row_h.push(rows);
    }
    let lanes_bottom = y;
    let note_columns = (((width - 2.0 * MARGIN) / (FONT * text::CHAR_EM)) as usize).max(20);
    let note = text::wrap(NOTE, note_columns);
    let height = (lanes_bottom + 16.0 + note.len() as f64 * LINE_H + MARGIN).ceil();
    let row_top = |l: usize, r: usize| lane_top[l] + row_h[l][..r].iter().sum::<f64>();
    // Centre of a mark's square, for routes.
    let mark_at = |m: usize| {
        let mark = &t.marks[m];
        let top = lane_top[mark.lane];
        (
            col_x[mark.column] + PAD + 4.0,
            baseline(top, mark.slot) - 4.0,
        )
    };

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT}" role="img">"#
    );
    let _ = writeln!(s, "<title>{}</title>", escape(&t.title));
    let _ = writeln!(
        s,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="24" font-size="{TITLE_FONT}" font-weight="bold">{}</text>"#,
        escape(&t.title)
    );
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="44" font-size="{VERDICT_FONT}" font-weight="bold" fill="{}">{}</text>"#,
        if t.ok { GREEN } else { RED },
        escape(&t.verdict)
    );
    legend::draw(&mut s, t, MARGIN);
    // Column headers and guides.
    for (c, column) in t.columns.iter().enumerate() {
        let cx = col_x[c];
        let shade = if c % 2 == 0 { "#fafafa" } else { "white" };
        let _ = writeln!(
            s,
            r#"<rect x="{cx}" y="{}" width="{}" height="{}" fill="{shade}"/>"#,
            HEADER_Y - 14.0,
            col_w[c],
            lanes_bottom - HEADER_Y + 14.0
        );
        let fill = if column.ok { "#212121" } else { RED };
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{HEADER_Y}" font-weight="bold" fill="{fill}">{}<title>{}</title></text>"#,
            cx + PAD,
            escape(&text::label(&column.step)),
            escape(&format!("{} / {}", column.scenario, column.step))
        );
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" fill="#616161">{}</text>"##,
            cx + PAD,
            HEADER_Y + LINE_H,
            escape(&column.info)
        );
    }
    // Lanes: separators, labels, database presence.
    for (l, lane) in t.lanes.iter().enumerate() {
        let top = lane_top[l];
        let _ = writeln!(
            s,
            r##"<path d="M{MARGIN} {top} H{}" stroke="#b0bec5" stroke-width="1"/>"##,
            width - MARGIN
        );
        let weight = if lane.kind == LaneKind::Role {
            "bold"
        } else {
            "normal"
        };
        let _ = writeln!(
            s,
            r#"<text x="{MARGIN}" y="{}" font-weight="{weight}">{}</text>"#,
            baseline(top, 0),
            escape(&text::label(&lane.name))
        );
        if lane.kind == LaneKind::Database {
            for c in (0..n).filter(|&c| t.present[l][c]) {
                let _ = writeln!(
                    s,
                    r##"<rect x="{}" y="{}" width="{}" height="{}" fill="#eef3fa"/>"##,
                    col_x[c] + 1.0,
                    top + 1.0,
                    col_w[c] - 2.0,
                    row_h[l][0] - 2.0
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r##"<path d="M{MARGIN} {lanes_bottom} H{}" stroke="#b0bec5" stroke-width="1"/>"##,
        width - MARGIN
    );
    // Bars.
    for bar in &t.bars {
        let top = row_top(bar.lane, bar.row) + 3.0;
        let h = row_h[bar.lane][bar.row] - 6.0;
        let x0 = col_x[bar.first] + 3.0;
        let x1 = col_x[bar.last] + col_w[bar.last] - 3.0;
        let (fill, stroke, sw) = match (bar.ok, bar.crashed) {
            (false, _) => ("#ffebee", RED, 2.0),
            (true, true) => ("#fff8f8", RED, 1.5),
            (true, false) => ("#f1f8e9", "#8bc34a", 1.0),
        };
        let _ = writeln!(
            s,
            r#"<rect x="{x0}" y="{top}" width="{}" height="{h}" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"><title>{}</title></rect>"#,
            x1 - x0,
            escape(&bar.tip)
        );
    }
    // Routes, under the marks and their text.
    for (r, route) in t.routes.iter().enumerate() {
        if route.marks.len() < 2 {
            continue;
        }
        let points: Vec<String> = route
            .marks
            .iter()
            .map(|&m| {
                let (x, y) = mark_at(m);
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="3" stroke-linejoin="round" opacity="0.55"><title>{}</title></polyline>"#,
            points.join(" "),
            ROUTE_COLOURS[r % ROUTE_COLOURS.len()],
            escape(&format!("{}: its first commit on each database", route.id))
        );
    }
    // Text in role lanes.
    for cell in &t.cells {
        let top = row_top(cell.lane, cell.row);
        let x = col_x[cell.column] + PAD;
        for (k, l) in cell.lines.iter().enumerate() {
            let y = baseline(top, k);
            let mut tx = x;
            let mut weight = "normal";
            if l.tone == Tone::Crash {
                cross(&mut s, x, y - 9.0);
                tx += MARK_W;
                weight = "bold";
            }
            let _ = writeln!(
                s,
                r#"<text x="{tx}" y="{y}" fill="{}" font-weight="{weight}">{}<title>{}</title></text>"#,
                fill_of(l.tone),
                escape(&text::label(&l.text)),
                escape(&l.text)
            );
        }
    }
    // Marks on database lanes.
    for (m, mark) in t.marks.iter().enumerate() {
        let (cx, cy) = mark_at(m);
        let x = col_x[mark.column] + PAD;
        let y = baseline(lane_top[mark.lane], mark.slot);
        let on_route = t.routes.iter().position(|r| r.marks.contains(&m));
        let (shape, fill) = match mark.kind {
            MarkKind::Commit => (
                format!(
                    r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{BLUE}"/>"#,
                    cx - 4.0,
                    cy - 4.0
                ),
                "#212121",
            ),
            MarkKind::State { holds } => {
                let colour = if holds { GREEN } else { RED };
                (
                    format!(
                        r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="4" fill="white" stroke="{colour}" stroke-width="1.5"/>"#
                    ),
                    colour,
                )
            }
        };
        s.push_str(&shape);
        s.push('\n');
        if let Some(r) = on_route {
            let _ = writeln!(
                s,
                r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="6.5" fill="none" stroke="{}" stroke-width="2"/>"#,
                ROUTE_COLOURS[r % ROUTE_COLOURS.len()]
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{y}" fill="{fill}">{}<title>{}</title></text>"#,
            x + MARK_W,
            escape(&text::label(&mark.text)),
            escape(&mark.tip)
        );
    }
    // The note.
    for (k, l) in note.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<text x="{MARGIN}" y="{}" fill="#616161">{}</text>"##,
            lanes_bottom + 20.0 + k as f64 * LINE_H,
            escape(l)
        );
    }
    s.push_str("</svg>\n");
    s
}
