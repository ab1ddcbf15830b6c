//! The checks a probe runs, each with the section of the draft it comes from
//! (draft-ietf-httpapi-idempotency-key-header-07), and the settings that judge them.

use serde::{Deserialize, Serialize};

/// One check: its name, the draft's section, and what the draft asks there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    pub id: &'static str,
    pub section: &'static str,
    pub rule: &'static str,
    /// The check's own request carries a valid key (so a per-key effects count sees it).
    pub keyed: bool,
}

const fn check(id: &'static str, section: &'static str, rule: &'static str, keyed: bool) -> Check {
    Check {
        id,
        section,
        rule,
        keyed,
    }
}

/// Every check, in the order it runs (the slow one, a wait past the key's lifetime, last).
pub const CHECKS: [Check; 12] = [
    check("first-request", "2.6", "a first request with a new key is processed normally", true),
    check("retry", "2.6", "a retry after completion gets the result of the completed request", true),
    check("conflict", "2.7", "a key reused with another payload is refused (422)", true),
    check("missing-key", "2.7", "a request without a key where one is required is refused (400)", false),
    check("key-too-long", "5", "a key outside the published format is refused before any processing", false),
    check("key-malformed", "2.1", "the key is a String (RFC 8941 3.3.3): printable ASCII; another is refused", false),
    check("concurrent", "2.6", "a duplicate while the first is in flight gets a conflict (409, 2.7), never a second effect", true),
    check("reply-lost-reset", "2.6", "a retry after the reply was lost (reset) gets the stored result", true),
    check("reply-lost-close", "2.6", "a retry after the reply was lost (close) gets the stored result", true),
    check("reply-lost-head", "2.6", "a retry after the reply was cut after its head gets the stored result", true),
    check("reply-lost-body", "2.6", "a retry after the reply was cut inside its body gets the stored result", true),
    check("key-expiry", "2.3", "a resource may expire keys under a published policy: what a retry gets after it", true),
];

pub fn find(id: &str) -> Option<&'static Check> {
    CHECKS.iter().find(|c| c.id == id)
}

/// What the verdicts depend on besides the exchanges: recorded in probe.json, and derived
/// again from the recorded command by the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub conflict_status: u16,
    pub key_optional: bool,
    pub key_len_max: u32,
    pub key_ttl_ms: Option<u64>,
    pub concurrency: u32,
    /// `url` or `cmd` when effects are counted.
    pub effects: Option<String>,
    /// The effects source counts per key (`{key}` in it).
    pub effects_per_key: bool,
    /// The body template has `{n}`, so a second body can differ.
    pub body_varies: bool,
    pub timeout_ms: u64,
    pub probe_timeout_ms: u64,
}

impl Settings {
    /// Does this check have a key a per-key effects count can see, when effects are counted?
    pub fn countable(&self, check: &Check) -> bool {
        self.effects.is_some() && (check.keyed || !self.effects_per_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_distinct_name_and_a_section_of_the_draft() {
        let mut ids: Vec<&str> = CHECKS.iter().map(|c| c.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), CHECKS.len());
        for c in CHECKS {
            assert!(
                ["2.1", "2.3", "2.6", "2.7", "5"].contains(&c.section),
                "{}",
                c.id
            );
            assert!(find(c.id) == Some(&c));
        }
    }
}
