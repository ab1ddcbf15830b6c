//! `explore … --shard hash:K/N | count:K/N`: run only bucket K of N of the matrix, as the
//! shards of a CI job matrix do, and say in `shard.json` which plan the bucket belongs to.
//!
//! A case's bucket under `hash` is FNV-1a 64 of its identity line (lab, stack, design, crash
//! mode, point@hit, cut, seed) modulo N: it depends on the case alone, so adding a design or
//! a point moves no other case. `count` deals each design's cases round-robin (from an
//! offset its name gives), so the buckets' sizes differ by at most one per design.
//!
//! The plan's fingerprint is SHA-256 over the whole matrix's identity lines, in matrix
//! order: every shard runs every design's probe, so each knows the whole matrix and `merge`
//! can prove the shards it joins are the buckets of one plan.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::engine::explore::case::Case;
use crate::fail;

/// The most shards a matrix is split in.
pub const SHARDS_MAX: u32 = 1024;

/// The file a shard writes beside `explore.json`.
pub const SHARD: &str = "shard.json";

/// How cases are dealt to buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Partition {
    /// By a stable hash of the case's identity.
    Hash,
    /// Round-robin over each design's cases.
    Count,
}

/// `--shard hash:K/N`: bucket `k` (from 1) of `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub partition: Partition,
    pub k: u32,
    pub n: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = match self.partition {
            Partition::Hash => "hash",
            Partition::Count => "count",
        };
        write!(f, "{p}:{}/{}", self.k, self.n)
    }
}

/// Parse `hash:K/N` or `count:K/N` (clap's value parser: the error is the reason).
pub fn parse(spec: &str) -> Result<Shard, String> {
    let bad = || format!("'{spec}' is not hash:K/N or count:K/N (1 <= K <= N <= {SHARDS_MAX})");
    let (partition, rest) = match spec.split_once(':') {
        Some(("hash", rest)) => (Partition::Hash, rest),
        Some(("count", rest)) => (Partition::Count, rest),
        _ => return Err(bad()),
    };
    let (k, n) = rest.split_once('/').ok_or_else(bad)?;
    let number = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    let (Some(k), Some(n)) = (number(k), number(n)) else {
        return Err(bad());
    };
    if k == 0 || k > n || n > SHARDS_MAX {
        return Err(bad());
    }
    Ok(Shard { partition, k, n })
}

/// FNV-1a, 64 bits: a stable hash that no toolchain or crate version can change.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// What every case of a run shares in its identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub lab: String,
    pub stack: &'static str,
    pub crash_mode: &'static str,
    /// `--cut`, or `-`.
    pub cut: String,
    /// `--seed`, or `-`.
    pub seed: String,
}

impl Plan {
    /// The identity line of a case: `14-outbox-inbox sqlite correct exit
    /// publisher.after-mark-sent@2 cut=- seed=-`.
    pub fn identity(&self, design: &str, point: &str, hit: u32) -> String {
        format!(
            "{} {} {design} {} {point}@{hit} cut={} seed={}",
            self.lab, self.stack, self.crash_mode, self.cut, self.seed
        )
    }

    pub fn identity_of(&self, case: &Case) -> String {
        let (point, hit) = case.crash.map_or(("probe", 0), |c| (c.point, c.hit));
        self.identity(case.design, point, hit)
    }
}

impl Shard {
    /// Whether the case, the `index`-th of its design's cases in matrix order, is in this
    /// bucket.
    pub fn owns(&self, identity: &str, design: &str, index: usize) -> bool {
        let n = u64::from(self.n);
        let bucket = match self.partition {
            Partition::Hash => fnv1a64(identity.as_bytes()) % n,
            Partition::Count => (fnv1a64(design.as_bytes()) % n + index as u64) % n,
        };
        bucket == u64::from(self.k - 1)
    }

    /// The cases of one design (in matrix order) that are in this bucket.
    pub fn keep(&self, plan: &Plan, cases: Vec<Case>) -> Vec<Case> {
        cases
            .into_iter()
            .enumerate()
            .filter(|(i, c)| self.owns(&plan.identity_of(c), c.design, *i))
            .map(|(_, c)| c)
            .collect()
    }
}

/// The plan every shard of one matrix shares: `merge` joins only shards whose plans are
/// equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    /// SHA-256 over `cases`, one line each, `\n` after each.
    pub fingerprint: String,
    /// Every case of the whole matrix, in matrix order.
    pub cases: Vec<String>,
    pub crashlab_version: String,
    /// The lab's value (`crashlab lab show LAB --stack S --json`).
    pub lab: serde_json::Value,
}

/// `shard.json`: which bucket ran, of which plan, and its cases.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardFile {
    pub shard: Shard,
    pub plan: PlanFile,
    /// The identity lines of the cases this shard ran.
    pub cases: Vec<String>,
}

/// SHA-256 over identity lines, each ended by `\n`.
pub fn fingerprint(cases: &[String]) -> String {
    let mut text = String::new();
    for c in cases {
        text.push_str(c);
        text.push('\n');
    }
    crate::common::sha256_hex(text.as_bytes())
}

/// Write `shard.json` into a shard's evidence directory.
pub fn write(
    dir: &Path,
    shard: Shard,
    lab: &crate::engine::LabStack,
    all: Vec<String>,
    mine: Vec<String>,
) -> Result<()> {
    let value = crate::engine::value::LabValue::of(lab.lab, Some(lab.stack_name()))?;
    let file = ShardFile {
        shard,
        plan: PlanFile {
            fingerprint: fingerprint(&all),
            cases: all,
            crashlab_version: env!("CARGO_PKG_VERSION").to_string(),
            lab: serde_json::to_value(value)?,
        },
        cases: mine,
    };
    crate::engine::evidence::write_json(dir, SHARD, &file)
}

/// A usage error for `--shard` where it cannot apply.
pub fn refuse(why: &str) -> anyhow::Error {
    fail::usage(format!("--shard {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            lab: "14-outbox-inbox".into(),
            stack: "sqlite",
            crash_mode: "exit",
            cut: "-".into(),
            seed: "-".into(),
        }
    }

    /// A matrix of `designs` × 16 points × 3 hits, as identity lines.
    fn matrix(designs: &[&str]) -> Vec<(String, String)> {
        let p = plan();
        let mut cases = Vec::new();
        for d in designs {
            for point in 0..16 {
                for hit in 1..=3 {
                    let id = p.identity(d, &format!("role.point-{point}"), hit);
                    cases.push((d.to_string(), id));
                }
            }
        }
        cases
    }

    #[test]
    fn fnv1a64_is_the_published_function() {
        // The FNV test vectors (Fowler, Noll, Vo).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_case_is_in_exactly_one_bucket_and_the_buckets_are_used() {
        for spec in ["hash", "count"] {
            let n = 4;
            let shards: Vec<Shard> = (1..=n)
                .map(|k| parse(&format!("{spec}:{k}/{n}")).unwrap())
                .collect();
            let cases = matrix(&["correct", "memory-inbox", "split-inbox-tx"]);
            let mut sizes = vec![0usize; n as usize];
            for (i, (design, id)) in cases.iter().enumerate() {
                let owners: Vec<usize> = (0..n as usize)
                    .filter(|s| shards[*s].owns(id, design, i % 48))
                    .collect();
                assert_eq!(owners.len(), 1, "{spec}: {id} is in {owners:?}");
                sizes[owners[0]] += 1;
            }
            assert!(sizes.iter().all(|s| *s > 0), "{spec}: {sizes:?}");
            if spec == "count" {
                // Round-robin per design: 48 cases each, 12 per bucket.
                assert!(sizes.iter().all(|s| *s == 36), "{sizes:?}");
            }
        }
    }

    /// Lab 14's matrix as `Case`s: `designs` × 16 points × 3 hits, in matrix order.
    fn cases(designs: &[&'static str]) -> Vec<Vec<Case>> {
        const POINTS: [&str; 4] = [
            "sender.after-commit",
            "publisher.after-queue-commit",
            "consumer.before-ack",
            "consumer.after-ack",
        ];
        designs
            .iter()
            .map(|design| {
                POINTS
                    .iter()
                    .flat_map(|point| {
                        (1..=3).map(move |hit| Case {
                            design,
                            crash: Some(crate::engine::explore::steps::Crash {
                                point,
                                hit,
                                expect_reached: true,
                            }),
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// The identity lines of the cases bucket `k` of `n` keeps.
    fn kept(spec: &str, designs: &[&'static str]) -> std::collections::BTreeSet<String> {
        let shard = parse(spec).unwrap();
        cases(designs)
            .into_iter()
            .flat_map(|d| shard.keep(&plan(), d))
            .map(|c| plan().identity_of(&c))
            .collect()
    }

    #[test]
    fn adding_a_design_moves_no_existing_case() {
        let before = ["correct", "mark-before-send", "memory-inbox"];
        // A design added in the middle of the order, as a lab adds a variant.
        let after = ["correct", "mark-before-send", "new-design", "memory-inbox"];
        for n in [2u32, 3, 4, 7] {
            let mut added = 0;
            for k in 1..=n {
                let spec = format!("hash:{k}/{n}");
                let (old, new) = (kept(&spec, &before), kept(&spec, &after));
                // Every old case stays in its bucket; the bucket gains new-design's only.
                assert!(old.is_subset(&new), "{spec}: {:?}", old.difference(&new));
                assert!(new.difference(&old).all(|id| id.contains(" new-design ")));
                added += new.len() - old.len();
            }
            assert_eq!(
                added, 12,
                "{n} shards: every new case in exactly one bucket"
            );
        }
    }

    #[test]
    fn bad_shards_are_refused() {
        for bad in [
            "",
            "hash",
            "hash:0/4",
            "hash:5/4",
            "hash:1/0",
            "hash:+1/4",
            "mod:1/4",
            "hash:1/4/2",
            "count:1/1025",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let ok = parse("count:2/3").unwrap();
        assert_eq!(ok.to_string(), "count:2/3");
    }

    #[test]
    fn the_fingerprint_is_over_the_lines_in_order() {
        let a = vec!["x".to_string(), "y".to_string()];
        let b = vec!["y".to_string(), "x".to_string()];
        assert_ne!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a), crate::common::sha256_hex(b"x\ny\n"));
    }
}
