//! `explore.svg`: the matrix as a picture. Rows are points, columns are the invariants of each
//! variant; green holds, red breaks, grey not reached, orange an error. A black frame marks the
//! break a design predicts; a red cell shows how many of its cases broke.

use std::fmt::Write;

use crate::engine::explore::export::{matrix, Colour};
use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::report::Report;
use crate::engine::report::text::{columns, escape, truncate, width_px, CHAR_EM};

const TOP: i32 = 112;
const MARGIN: i32 = 12;
const FONT: f64 = 12.0;
const TITLE_FONT: f64 = 15.0;
const CELL_W: i32 = 30;
const CELL_H: i32 = 20;
const GAP: i32 = 2;
const GROUP_GAP: i32 = 18;

fn fill(colour: Colour) -> &'static str {
    match colour {
        Colour::Holds => "#2e7d32",
        Colour::Breaks => "#c62828",
        Colour::NotReached => "#bdbdbd",
        Colour::Error => "#ef6c00",
    }
}

/// Lines of at most `width` columns (report/text.rs), broken at spaces; a continuation is
/// indented, and a word too long for a line is cut (explore.md and explore.json hold it whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    assert!(width > 8);
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("at least one line");
        if last.is_empty() {
            last.push_str(&truncate(word, width));
        } else if columns(last) + 1 + columns(word) > width {
            lines.push(format!("    {}", truncate(word, width - 4)));
        } else {
            last.push(' ');
            last.push_str(word);
        }
    }
    lines
}

/// Pixels a text takes at `size`, conservatively (see report/text.rs), as whole pixels.
fn px(text: &str, size: f64) -> i32 {
    width_px(text, size) as i32
}

/// The legend's entries: colour (None: the predicted frame) and label.
const LEGEND: [(Option<Colour>, &str); 5] = [
    (Some(Colour::Holds), "holds"),
    (Some(Colour::Breaks), "breaks"),
    (Some(Colour::NotReached), "not reached"),
    (Some(Colour::Error), "error"),
    (None, "predicted break"),
];
const LEGEND_STEP: i32 = 18 + 16;
/// The side of a legend's square.
const SWATCH: i32 = 14;

pub fn render(report: &Report) -> String {
    let blocks = matrix(report);
    let group_w = 5 * (CELL_W + GAP) - GAP;
    let rows = report.points.len() as i32;
    // Every width comes from the text it must hold: the point names at the left, the title,
    // the legend and the key at the top; nothing is clipped at any lab.
    let left = MARGIN + report.points.iter().map(|p| px(p, FONT)).max().unwrap_or(0) + 10;
    let title_at = |ms: &str| {
        format!(
            "crashlab explore {}: crash mode {}, {} cases, {} processes, {ms} ms",
            report.lab,
            report.crash_mode,
            report.cases.len(),
            report.processes,
        )
    };
    let title = title_at(&format!("{:.0}", report.wall_ms));
    // The width as if the time had 8 digits: a rerun's different time keeps the picture's size.
    let widest_title = title_at("99999999");
    let key: Vec<String> = Invariant::ALL
        .iter()
        .map(|i| format!("{} {}", i.letter(), i.title()))
        .collect();
    let key = key.join(" · ");
    let legend_w: i32 = LEGEND
        .iter()
        .map(|(_, label)| px(label, FONT) + LEGEND_STEP)
        .sum();
    let group_widths = blocks
        .iter()
        .map(|b| (group_w.max(px(b.variant, FONT)) + GROUP_GAP) as usize)
        .collect::<Vec<_>>();
    let verdict = if report.ok {
        report.pass_line(true)
    } else {
        "FAIL: the run differs from what the designs predict".to_string()
    };
    let width = [
        left + group_widths.iter().sum::<usize>() as i32 + MARGIN,
        // The wall time's digits vary from run to run; the canvas must not (a rerun
        // compares it), so it is measured as if the time had eight digits.
        2 * MARGIN + px(&title, TITLE_FONT).max(px(&widest_title, TITLE_FONT)),
        2 * MARGIN + px(&key, FONT),
        2 * MARGIN + legend_w,
        2 * MARGIN + px(&verdict, FONT),
        600,
    ]
    .into_iter()
    .max()
    .expect("widths");
    let foot = TOP + rows * (CELL_H + GAP) + 24;
    let columns = ((width - 2 * MARGIN) as f64 / (FONT * CHAR_EM)) as usize;
    let verdict_lines: Vec<String> = report
        .findings
        .iter()
        .chain(report.differences.iter())
        .flat_map(|line| wrap(line, columns))
        .collect();
    let height = foot + 18 * (verdict_lines.len() as i32 + 1) + 12;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT}">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="22" font-size="{TITLE_FONT}" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    // Legend.
    let mut x = MARGIN;
    for (colour, label) in LEGEND {
        let style = match colour {
            Some(colour) => format!(r#"fill="{}""#, fill(colour)),
            None => r#"fill="white" stroke="black" stroke-width="3""#.to_string(),
        };
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="34" width="{SWATCH}" height="{SWATCH}" {style}/><text x="{}" y="45">{label}</text>"#,
            x + 20
        );
        x += px(label, FONT) + LEGEND_STEP;
    }
    let _ = writeln!(s, r#"<text x="{MARGIN}" y="66">{}</text>"#, escape(&key));
    let group_x = |g: usize| left + group_widths[..g].iter().sum::<usize>() as i32;
    // Column headers.
    for (g, block) in blocks.iter().enumerate() {
        let gx = group_x(g);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="88" text-anchor="middle" font-weight="bold">{}</text>"#,
            gx + group_w / 2,
            escape(block.variant)
        );
        for (i, inv) in Invariant::ALL.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="106" text-anchor="middle">{}</text>"#,
                gx + i as i32 * (CELL_W + GAP) + CELL_W / 2,
                inv.letter()
            );
        }
    }
    // Rows.
    for (r, point) in report.points.iter().enumerate() {
        let y = TOP + r as i32 * (CELL_H + GAP);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 10,
            y + 14,
            escape(point)
        );
        for (g, block) in blocks.iter().enumerate() {
            let gx = group_x(g);
            let row = &block.rows[r];
            for (i, cell) in row.cells.iter().enumerate() {
                let cx = gx + i as i32 * (CELL_W + GAP);
                let colour = cell.colour();
                let stroke = if cell.predicted {
                    r#" stroke="black" stroke-width="3""#
                } else {
                    ""
                };
                let tip = format!(
                    "{} {} {}: {}",
                    block.variant,
                    point,
                    Invariant::ALL[i].title(),
                    cell.text()
                );
                let _ = writeln!(
                    s,
                    r#"<rect x="{cx}" y="{y}" width="{CELL_W}" height="{CELL_H}" fill="{}"{stroke}><title>{}</title></rect>"#,
                    fill(colour),
                    escape(&tip)
                );
                if colour == Colour::Breaks {
                    let _ = writeln!(
                        s,
                        r#"<text x="{}" y="{}" text-anchor="middle" font-size="10" fill="white">{}/{}</text>"#,
                        cx + CELL_W / 2,
                        y + 14,
                        cell.broken,
                        cell.judged
                    );
                }
            }
        }
    }
    // Verdict.
    let mut y = foot;
    let _ = writeln!(
        s,
        r#"<text x="{MARGIN}" y="{y}" font-weight="bold">{}</text>"#,
        escape(&verdict)
    );
    for line in &verdict_lines {
        y += 18;
        let _ = writeln!(
            s,
            r#"<text x="{MARGIN}" y="{y}" xml:space="preserve">{}</text>"#,
            escape(line)
        );
    }
    s.push_str("</svg>\n");
    s
}
