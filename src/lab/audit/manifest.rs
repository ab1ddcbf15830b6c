//! Check 1: the manifest's digests, and nothing unlisted.

use std::path::Path;

use super::read::inside;
use super::Report;
use crate::lab::evidence::{self, Manifest};
use crate::lab::files::sha256_file;

/// Check 1: every listed file has its digest, and every file is listed.
pub(super) fn check_files(report: &mut Report, dir: &Path, manifest: &Manifest) {
    for (rel, expected) in &manifest.files {
        let Some(path) = inside(dir, rel) else {
            report.problem(rel, "manifest path leaves the evidence directory");
            continue;
        };
        if !path.is_file() {
            report.problem(rel, "listed in manifest.json but missing");
            continue;
        }
        match sha256_file(&path) {
            Ok((_, sha)) if &sha == expected => {}
            Ok((_, sha)) => report.problem(
                rel,
                format!("sha256 {sha} differs from manifest.json ({expected})"),
            ),
            Err(e) => report.problem(rel, format!("unreadable: {e}")),
        }
    }
    match evidence::list_files(dir) {
        Ok(present) => {
            for rel in present {
                if rel != evidence::MANIFEST && !manifest.files.contains_key(&rel) {
                    report.problem(
                        &rel,
                        "not listed in manifest.json (nothing may be slipped in)",
                    );
                }
            }
        }
        Err(e) => report.problem(".", format!("cannot list the directory: {e}")),
    }
}
