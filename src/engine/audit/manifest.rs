//! Check 1: the manifest's digests, and nothing unlisted.

use sha2::{Digest, Sha256};

use super::tree::{plain, Tree};
use super::Report;
use crate::common::{hex, is_sha256};
use crate::engine::evidence::{self, Manifest};

/// Every listed file has its digest, and every file is listed; every digest, of a file or of
/// a source, is a SHA-256 in lowercase hex.
pub(super) fn check_files(report: &mut Report, tree: &Tree, manifest: &Manifest) {
    for (rel, digest) in &manifest.sources {
        if !plain(rel) || !is_sha256(digest) {
            report.problem(
                evidence::MANIFEST,
                format!("source {rel}: '{digest}' is not a path and a SHA-256 in hex"),
            );
        }
    }
    for (rel, expected) in &manifest.files {
        if !plain(rel) {
            report.problem(rel, "manifest path leaves the evidence directory");
            continue;
        }
        if rel == evidence::MANIFEST {
            report.problem(rel, "manifest.json lists itself");
            continue;
        }
        if !tree.has_file(rel) {
            report.problem(rel, "listed in manifest.json but missing");
            continue;
        }
        let Some(bytes) = tree.get(rel) else {
            // Too large or unreadable: said by the walk.
            continue;
        };
        let sha = hex(&Sha256::digest(bytes));
        if &sha != expected {
            report.problem(
                rel,
                format!("sha256 {sha} differs from manifest.json ({expected})"),
            );
        }
    }
    for rel in tree.files() {
        if rel != evidence::MANIFEST && !manifest.files.contains_key(rel) {
            report.problem(
                rel,
                "not listed in manifest.json (nothing may be slipped in)",
            );
        }
    }
}
