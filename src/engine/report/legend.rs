//! The timeline's legend and its visual vocabulary: the colours and the crash cross. Pure.

use std::fmt::Write;

use crate::engine::report::picture::Timeline;
use crate::engine::report::text::{escape, width_px};
use crate::engine::report::timeline::{FONT, MARK_W};

pub const GREEN: &str = "#2e7d32";
pub const RED: &str = "#c62828";
pub const BLUE: &str = "#1565c0";
pub const ROUTE_COLOURS: [&str; 4] = ["#6a1b9a", "#ef6c00", "#00838f", "#ad1457"];

/// A red cross whose box's top left is at (x, y), 9 px wide.
pub fn cross(s: &mut String, x: f64, y: f64) {
    let _ = writeln!(
        s,
        r#"<path d="M{x:.1} {y:.1} l9 9 M{:.1} {y:.1} l-9 9" stroke="{RED}" stroke-width="2.2"/>"#,
        x + 9.0
    );
}

/// What the legend says, in order: (kind, text).
fn legend_items(t: &Timeline) -> Vec<(&'static str, String)> {
    let mut items = vec![
        ("commit", "commit (COMMITTED line)".to_string()),
        ("state", "state a readback showed".to_string()),
        ("crash", "crash point".to_string()),
    ];
    for route in &t.routes {
        items.push((
            "route",
            format!("{}: its first commit on each database", route.id),
        ));
    }
    items.push(("present", "database file exists".to_string()));
    items
}

const LEGEND_GAP: f64 = 26.0;

pub fn width(t: &Timeline) -> f64 {
    legend_items(t)
        .iter()
        .map(|(_, label)| MARK_W + 6.0 + width_px(label, FONT) + LEGEND_GAP)
        .sum()
}

/// The legend's one line, from `left`, its baseline at y 64.
pub fn draw(s: &mut String, t: &Timeline, left: f64) {
    let mut x = left;
    let mut routes_drawn = 0;
    for (kind, label) in &legend_items(t) {
        match *kind {
            "commit" => {
                let _ = writeln!(
                    s,
                    r#"<rect x="{x}" y="56" width="8" height="8" fill="{BLUE}"/>"#
                );
            }
            "state" => {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{}" cy="60" r="4" fill="white" stroke="{GREEN}" stroke-width="1.5"/>"#,
                    x + 4.0
                );
            }
            "crash" => cross(s, x, 55.5),
            "route" => {
                let colour = ROUTE_COLOURS[routes_drawn % ROUTE_COLOURS.len()];
                routes_drawn += 1;
                let _ = writeln!(
                    s,
                    r#"<path d="M{x} 60 h12" stroke="{colour}" stroke-width="3" opacity="0.6"/>"#
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    r##"<rect x="{x}" y="54" width="12" height="12" fill="#eef3fa" stroke="#90a4ae" stroke-width="0.5"/>"##
                );
            }
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="64">{}</text>"#,
            x + MARK_W + 2.0,
            escape(label)
        );
        x += MARK_W + 6.0 + width_px(label, FONT) + LEGEND_GAP;
    }
}
