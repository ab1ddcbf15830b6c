//! A measurement, run by hand (it asserts nothing about the rate):
//!
//!     CRASHLAB_TAMPERS=300 cargo test --release --locked --test tamper_random -- --ignored --nocapture
//!
//! For a fresh lab 14 run, lab 13 run and small chaos run, it makes N random single-token
//! changes (a token is a run of letters, digits and `_`, or any other single character), each
//! on a fresh copy with manifest.json re-hashed, audits each, and prints how many the audit
//! caught, with the misses sorted into kinds: whitespace in JSON, a field the audit lists as
//! attested, and the rest (printed, to be read).

mod common;
#[path = "tamper/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::*;
use support::*;

/// splitmix64: the same changes for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Byte ranges of the tokens of a text.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let mut end = start + c.len_utf8();
        if word(c) {
            while let Some(&(i, d)) = chars.peek() {
                if !word(d) {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
        }
        out.push((start, end));
    }
    out
}

/// Another token of the same kind: a number changed by one digit, a word by one letter, a
/// sign or a space replaced by another or removed.
fn mutate(token: &str, rng: &mut Rng) -> String {
    const SIGNS: &[&str] = &[
        "", " ", ",", ":", ".", "-", "'", "\"", "{", "}", "[", "]", "(", ")", "=", "#", "\n",
    ];
    let bytes = token.as_bytes();
    if bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_' {
        for _ in 0..16 {
            let at = rng.below(bytes.len());
            let mut changed = bytes.to_vec();
            changed[at] = match bytes[at] {
                b'0'..=b'9' => b'0' + rng.below(10) as u8,
                b'a'..=b'z' => b'a' + rng.below(26) as u8,
                b'A'..=b'Z' => b'A' + rng.below(26) as u8,
                _ => b'x',
            };
            if changed != bytes {
                return String::from_utf8(changed).unwrap();
            }
        }
        return format!("{token}x");
    }
    loop {
        let sign = SIGNS[rng.below(SIGNS.len())];
        if sign != token {
            return sign.to_string();
        }
    }
}

/// The JSON key a line of a pretty-printed file starts with.
fn key_of(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('"')?;
    let (key, after) = rest.split_once('"')?;
    after.starts_with(':').then_some(key)
}

const ATTESTED: &[&str] = &[
    "wall_ms",
    "max_rss_kb",
    "total_wall_ms",
    "git",
    "commit",
    "dirty",
    "crashlab_version",
    "sqlite_version",
    "since_start_ms",
    "progress_units",
];

/// The kind of a change the audit did not catch.
fn classify(rel: &str, line: &str, at: usize, old: &str, new: &str) -> &'static str {
    let spaces = old.trim().is_empty() && new.trim().is_empty();
    if rel.ends_with(".json") && spaces {
        return "whitespace in JSON";
    }
    if key_of(line).is_some_and(|k| ATTESTED.contains(&k)) {
        return "an attested field";
    }
    // The raw digest and size of a database file no longer there: attested, kept consistent.
    if rel == "database-files.json" && key_of(line).is_some_and(|k| k == "sha256" || k == "bytes") {
        return "an attested field";
    }
    let first_word = line.split(' ').next().unwrap_or("");
    if at <= first_word.len() {
        return "the line's tag (SQL, POINT…): the line is no longer one the audit reads";
    }
    if let Some(rest) = line.strip_prefix("SQL ") {
        let statement = rest.split_once(' ').map_or("", |(_, s)| s).trim_start();
        let read = statement.starts_with("SELECT ")
            || statement.starts_with("--")
            || (statement.starts_with("PRAGMA ") && !statement.contains('='));
        if read || statement.starts_with("PRAGMA query_only") {
            return "a read-only statement (schema check, count): no state changes";
        }
        if rel.starts_with("logs/") {
            return "a value or literal a chaos process wrote (chaos logs are not replayed)";
        }
        return "other";
    }
    if old
        .chars()
        .all(|c| c.is_ascii_alphabetic() || c.is_whitespace())
        && !line.starts_with('{')
    {
        return "a word or space of a message's prose";
    }
    "other"
}

fn measure(run: &Path, scratch: &Path, n: usize, seed: u64) {
    let (code0, text0) = audit(run);
    assert_eq!(code0, 0, "{text0}");
    let mut candidates: Vec<(String, usize, usize)> = Vec::new();
    for rel in files(run) {
        let rel = rel.to_string_lossy().into_owned();
        if rel == "manifest.json" || rel.contains(".db") {
            continue;
        }
        let text = fs::read_to_string(run.join(&rel)).unwrap();
        candidates.extend(tokens(&text).into_iter().map(|(s, e)| (rel.clone(), s, e)));
    }
    let mut rng = Rng(seed);
    let mut caught = 0;
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    let mut others = Vec::new();
    for i in 0..n {
        let (rel, start, end) = candidates[rng.below(candidates.len())].clone();
        let dir = scratch.join(format!("r{i}"));
        copy_dir(run, &dir);
        let text = fs::read_to_string(dir.join(&rel)).unwrap();
        let old = &text[start..end];
        let new = mutate(old, &mut rng);
        let edited = format!("{}{new}{}", &text[..start], &text[end..]);
        fs::write(dir.join(&rel), &edited).unwrap();
        rehash(&dir);
        let (code, _) = audit(&dir);
        fs::remove_dir_all(&dir).unwrap();
        if code == 1 {
            caught += 1;
            continue;
        }
        let line_start = text[..start].rfind('\n').map_or(0, |p| p + 1);
        let line_end = text[end..].find('\n').map_or(text.len(), |p| end + p);
        let line = &text[line_start..line_end];
        let kind = classify(&rel, line, start - line_start, old, &new);
        if kind.starts_with("other") || kind.starts_with("a value") {
            // What surrounds the change, to read.
            let mut from = start.saturating_sub(50).max(line_start);
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            let mut to = (end + 50).min(line_end);
            while !text.is_char_boundary(to) {
                to += 1;
            }
            let around = format!("{}[{old}->{new}]{}", &text[from..start], &text[end..to]);
            others.push(format!("  {kind}: {rel}: {around:?}"));
        }
        *kinds.entry(kind).or_insert(0) += 1;
    }
    println!(
        "{}: {caught} of {n} caught ({:.1}%); missed: {kinds:?}",
        run.file_name().unwrap().to_string_lossy(),
        100.0 * caught as f64 / n as f64
    );
    for o in &others {
        println!("{o}");
    }
}

#[test]
#[ignore = "a measurement, run by hand"]
fn random_single_token_changes() {
    let n: usize = std::env::var("CRASHLAB_TAMPERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let seed: u64 = std::env::var("CRASHLAB_TAMPER_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    assert_eq!(code(&crashlab(d, &["driver", "14", "--out", "lab14"])), 0);
    assert_eq!(code(&crashlab(d, &["driver", "13", "--out", "lab13"])), 0);
    let chaos = [
        "chaos",
        "14",
        "--messages",
        "60",
        "--kills",
        "5",
        "--seed",
        "3",
        "--out",
        "chaos",
    ];
    assert_eq!(code(&crashlab(d, &chaos)), 0);
    let scratch = d.join("scratch");
    fs::create_dir(&scratch).unwrap();
    for run in ["lab14", "lab13", "chaos"] {
        measure(&d.join(run), &scratch, n, seed);
    }
}
