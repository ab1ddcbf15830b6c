//! Check 5: the sources that produced the run against the checkout.

use std::fs;
use std::path::{Path, PathBuf};

use super::Report;
use crate::engine::evidence::{self, Manifest};

/// A path named in the manifest, inside the checkout (never `..`, never absolute).
fn inside(checkout: &Path, rel: &str) -> Option<PathBuf> {
    super::tree::plain(rel).then(|| checkout.join(rel))
}

/// The checkout to compare sources with: the one holding DIR, else the one this binary was
/// built from. DIR itself is evidence, never a checkout: its files are read once, by the
/// walk, and a `Cargo.toml` above it is read as carefully (no FIFO, no device, bounded).
fn find_checkout(dir: &Path) -> Option<PathBuf> {
    let start = fs::canonicalize(dir).ok()?;
    for candidate in start.ancestors().skip(1).take(64) {
        let cargo = candidate.join("Cargo.toml");
        if let Ok(bytes) = super::tree::read_nofollow(&cargo) {
            if String::from_utf8_lossy(&bytes).contains("name = \"crashlab\"") {
                return Some(candidate.to_path_buf());
            }
        }
    }
    evidence::build_checkout()
}

/// Check 5: the sources that produced the run against the checkout.
pub(super) fn check_sources(report: &mut Report, dir: &Path, manifest: &Manifest, strict: bool) {
    let Some(checkout) = find_checkout(dir) else {
        report.sources = "no checkout".to_string();
        if strict {
            report.problem(
                evidence::MANIFEST,
                "--strict-sources: no checkout to compare sources with",
            );
        }
        return;
    };
    let mut changed = Vec::new();
    for (rel, expected) in &manifest.sources {
        let path = match inside(&checkout, rel) {
            Some(p) => p,
            None => {
                changed.push(format!("{rel} (path leaves the checkout)"));
                continue;
            }
        };
        match evidence::source_sha256(&path) {
            Ok(sha) if &sha == expected => {}
            Ok(_) => changed.push(rel.clone()),
            Err(_) => changed.push(format!("{rel} (missing)")),
        }
    }
    let current = evidence::source_files(&checkout);
    for rel in current {
        if !manifest.sources.contains_key(&rel) {
            changed.push(format!("{rel} (new)"));
        }
    }
    if changed.is_empty() {
        report.sources = "match".to_string();
    } else {
        report.sources = "differ".to_string();
        if strict {
            for rel in &changed {
                report.problem(
                    evidence::MANIFEST,
                    format!("--strict-sources: source {rel} differs from the checkout"),
                );
            }
        }
        report.sources_changed = changed;
    }
}
