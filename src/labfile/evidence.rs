//! The evidence of a lab file's `driver` or `explore`: the lab file copied in, `labfile.json`
//! (its SHA-256, crashlab's version, the command, and every scenario run: each step's argv,
//! exit, points and crash, each check's value, each invariant's rows, the verdict), and the
//! engine's `manifest.json` over every file. `crashlab audit` re-checks it offline.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::lab::UserLab;
use super::run::{Arm, Kill, ScenarioRun};
use crate::crash::Mode;
use crate::engine::evidence;

/// The record of a lab file's run; its presence marks the evidence directory as one.
pub const RECORD: &str = "labfile.json";
/// The lab file as it was read, copied in, with the schema files it names beside it.
pub const COPY: &str = "lab/crashlab.toml";
/// The directory of the lab file's copy.
pub const COPY_DIR: &str = "lab";

#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    pub version: String,
    pub command: Vec<String>,
    /// `driver`, `explore` or `chaos`.
    pub kind: String,
    /// The lab file as given (an absolute path by its name only), and the SHA-256 of its
    /// copy.
    pub lab_file: String,
    pub lab_sha256: String,
    pub mode: Mode,
    pub runs: Vec<RunRecord>,
    /// Under chaos: the seed `--timeout-ms` stopped the run before (that seed and those after
    /// it were not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_before_seed: Option<u64>,
}

/// One scenario run: in which directory, design and arms, what it did, and its verdict.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub dir: String,
    pub design: String,
    pub scenario: String,
    pub arms: Vec<Arm>,
    /// Under chaos: the steps SIGKILLed and when, drawn from the seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kills: Vec<Kill>,
    pub run: ScenarioRun,
    pub verdict: String,
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    crate::common::hex(&Sha256::digest(bytes))
}

/// The SHA-256 of a lab file's text, as the record holds it.
pub fn lab_sha256(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

/// Write the lab file's copy, `labfile.json` and, last, `manifest.json` into `out`.
pub fn write(
    lab: &UserLab,
    out: &Path,
    kind: &str,
    mode: Mode,
    command: &[String],
    runs: Vec<RunRecord>,
    stopped_before_seed: Option<u64>,
) -> Result<()> {
    let text = &lab.text;
    std::fs::create_dir_all(out.join(COPY_DIR)).with_context(|| format!("creating {COPY_DIR}"))?;
    std::fs::write(out.join(COPY), text).with_context(|| format!("writing {COPY}"))?;
    for (store, file) in lab
        .stores
        .iter()
        .filter_map(|s| Some((s, s.schema_file.as_deref()?)))
    {
        // A schema outside the lab file's directory is not copied: the audit says so.
        if file
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        {
            continue;
        }
        let to = out.join(COPY_DIR).join(file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&to, store.schema.as_deref().unwrap_or_default())
            .with_context(|| format!("copying the schema of store '{}'", store.name))?;
    }
    let record = Record {
        version: env!("CARGO_PKG_VERSION").to_string(),
        command: command.to_vec(),
        kind: kind.to_string(),
        lab_file: evidence::recorded_path(&lab.path),
        lab_sha256: lab_sha256(text),
        mode,
        runs,
        stopped_before_seed,
    };
    evidence::write_json(out, RECORD, &record)?;
    std::fs::write(
        out.join(super::report::REPORT),
        super::report::render(&record),
    )
    .with_context(|| format!("writing {}", super::report::REPORT))?;
    evidence::write_manifest(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The audit draws report.html again from `labfile.json`: every wall time must parse back
    /// as the very f64 written, not one ULP off, or a bar's width rounds the other way.
    #[test]
    fn a_wall_time_parses_back_as_the_f64_written() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            // xorshift: wall times of 0 to 100 s, as a clock's nanoseconds make them.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let wall = std::time::Duration::from_nanos(x % 100_000_000_000);
            let wall_ms = wall.as_secs_f64() * 1000.0;
            let text = serde_json::to_string(&wall_ms).unwrap();
            let back: f64 = serde_json::from_str(&text).unwrap();
            assert_eq!(back.to_bits(), wall_ms.to_bits(), "{text}");
        }
    }
}
