//! Text from evidence made safe for SVG and HTML, and measured for layout.
//!
//! Evidence text is anything a process printed: `<`, `&`, quotes, control bytes. XML 1.0 (SVG)
//! cannot hold most control characters even escaped, so they become U+FFFD before escaping.
//! Widths are estimated for a monospace font, conservatively, so no label leaves its canvas.

/// Width of one ASCII character of the monospace fonts the pictures name, in em: DejaVu Sans
/// Mono, Menlo and Liberation Mono are 0.602, Consolas 0.55. Rounded up for safety.
pub const CHAR_EM: f64 = 0.62;

/// Labels longer than this many columns are cut, with the whole text in the tooltip.
pub const LABEL_CHARS_MAX: usize = 44;

/// True for characters XML 1.0 cannot hold or that a reader should not get raw: C0 and C1
/// controls (tab, newline and carriage return included: a label is one line), and the
/// non-characters U+FFFE and U+FFFF.
fn unsafe_char(c: char) -> bool {
    c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}'
}

/// The text with every unsafe character replaced by U+FFFD.
pub fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
        .collect()
}

/// Clean, then escape for XML and HTML text and attribute values alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in clean(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Columns a character takes: one for ASCII, two for anything else, since a character the
/// named font lacks comes from a fallback font that may be twice as wide (CJK, symbols).
fn columns_of(c: char) -> usize {
    if c.is_ascii() {
        1
    } else {
        2
    }
}

/// Columns the text takes (see `columns_of`).
pub fn columns(text: &str) -> usize {
    text.chars().map(columns_of).sum()
}

/// Pixels the text takes at `size_px` in a monospace font, rounded up.
pub fn width_px(text: &str, size_px: f64) -> f64 {
    (columns(text) as f64 * size_px * CHAR_EM).ceil()
}

/// The text cut to at most `max_columns` columns, ending in `…` when cut.
pub fn truncate(text: &str, max_columns: usize) -> String {
    assert!(max_columns >= 2, "room for at least the ellipsis");
    let text = clean(text);
    if columns(&text) <= max_columns {
        return text;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        // The ellipsis is not ASCII: two columns.
        if used + columns_of(c) + 2 > max_columns {
            break;
        }
        used += columns_of(c);
        out.push(c);
    }
    out.push('…');
    debug_assert!(columns(&out) <= max_columns);
    out
}

/// A label: cleaned and cut to `LABEL_CHARS_MAX`.
pub fn label(text: &str) -> String {
    truncate(text, LABEL_CHARS_MAX)
}

/// Lines of at most `max_columns` columns, broken at spaces (a longer word is cut).
pub fn wrap(text: &str, max_columns: usize) -> Vec<String> {
    assert!(max_columns >= 8);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in clean(text).split(' ').filter(|w| !w.is_empty()) {
        let word = truncate(word, max_columns);
        if !line.is_empty() && columns(&line) + 1 + columns(&word) > max_columns {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `12.5`: milliseconds for a label, two decimals at most and no trailing zeros.
pub fn ms(value: f64) -> String {
    let text = format!("{value:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// A path from evidence that may be linked from the page: relative, `/`-separated, inside
/// the run directory, made of ordinary characters. Anything else is not linked.
pub fn linkable(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 512
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+@/".contains(c))
}

/// A path as an `href`: percent-encoded where a URL needs it.
pub fn href(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-_./".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
