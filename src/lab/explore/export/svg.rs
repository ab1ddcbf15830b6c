//! `explore.svg`: the matrix as a picture. Rows are points, columns are the invariants of each
//! variant; green holds, red breaks, grey not reached, orange an error. A black frame marks the
//! break a design predicts; a red cell shows how many of its cases broke.

use std::fmt::Write;

use crate::lab::explore::check::Invariant;
use crate::lab::explore::export::{matrix, Colour};
use crate::lab::explore::Report;

const LEFT: i32 = 260;
const TOP: i32 = 112;
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

/// Lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let last = lines.last_mut().expect("at least one line");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(format!("    {word}"));
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn render(report: &Report) -> String {
    let blocks = matrix(report);
    let group_w = 5 * (CELL_W + GAP) - GAP;
    let rows = report.points.len() as i32;
    let width = LEFT + blocks.len() as i32 * (group_w + GROUP_GAP) + 20;
    let width = width.max(760);
    let foot = TOP + rows * (CELL_H + GAP) + 24;
    // DejaVu Sans Mono at 12 px is about 7.3 px a character.
    let columns = (width as usize - 24) / 8;
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
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{width}" height="{height}" fill="white"/>"#
    );
    let title = format!(
        "crashlab explore {}: crash mode {}, {} cases, {} processes, {:.0} ms",
        report.lab,
        report.crash_mode,
        report.cases.len(),
        report.processes,
        report.wall_ms
    );
    let _ = writeln!(
        s,
        r#"<text x="12" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    // Legend.
    let mut x = 12;
    for (colour, label) in [
        (Colour::Holds, "holds"),
        (Colour::Breaks, "breaks"),
        (Colour::NotReached, "not reached"),
        (Colour::Error, "error"),
    ] {
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="34" width="14" height="14" fill="{}"/><text x="{}" y="45">{label}</text>"#,
            fill(colour),
            x + 18
        );
        x += 30 + 8 * label.len() as i32;
    }
    let _ = writeln!(
        s,
        r#"<rect x="{x}" y="34" width="14" height="14" fill="white" stroke="black" stroke-width="3"/><text x="{}" y="45">predicted break</text>"#,
        x + 18
    );
    let key: Vec<String> = Invariant::ALL
        .iter()
        .map(|i| format!("{} {}", i.letter(), i.title()))
        .collect();
    let _ = writeln!(
        s,
        r#"<text x="12" y="66">{}</text>"#,
        escape(&key.join(" · "))
    );
    // Column headers.
    for (g, block) in blocks.iter().enumerate() {
        let gx = LEFT + g as i32 * (group_w + GROUP_GAP);
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
            LEFT - 10,
            y + 14,
            escape(point)
        );
        for (g, block) in blocks.iter().enumerate() {
            let gx = LEFT + g as i32 * (group_w + GROUP_GAP);
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
    let verdict = if report.ok {
        report.words.svg_pass
    } else {
        "FAIL: the run differs from what the designs predict"
    };
    let _ = writeln!(
        s,
        r#"<text x="12" y="{y}" font-weight="bold">{}</text>"#,
        escape(verdict)
    );
    for line in &verdict_lines {
        y += 18;
        let _ = writeln!(
            s,
            r#"<text x="12" y="{y}" xml:space="preserve">{}</text>"#,
            escape(line)
        );
    }
    s.push_str("</svg>\n");
    s
}
