//! An explore run's shard (`shard.json`) or a merge of shards (`merged.json`): the audit
//! names the bucket and its plan, or the shards a merged run came from.

use super::tree::Tree;
use super::Report;
use crate::engine::explore::shard::{ShardFile, SHARD};

/// The file `crashlab merge` writes: the shards it joined.
pub(crate) const MERGED: &str = "merged.json";

/// Name the shard, or the shards of a merge, in the PASS line.
pub(super) fn note(report: &mut Report, tree: &Tree) {
    if tree.has_file(SHARD) {
        if let Some(file) = tree.json::<ShardFile>(report, SHARD) {
            let fp = file.plan.fingerprint.get(..12).unwrap_or("?");
            report.summary.push_str(&format!(
                ", shard {} of plan {fp} ({} of {} cases)",
                file.shard,
                file.cases.len(),
                file.plan.cases.len()
            ));
        }
    }
    if tree.has_file(MERGED) {
        if let Some(merged) = tree.json::<serde_json::Value>(report, MERGED) {
            let names: Vec<String> = merged["shards"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| {
                            format!(
                                "{} ({})",
                                s["dir"].as_str().unwrap_or("?"),
                                s["shard"].as_str().unwrap_or("?")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            report.summary.push_str(&format!(
                ", merged from {} shards: {}",
                names.len(),
                names.join(", ")
            ));
        }
    }
}
