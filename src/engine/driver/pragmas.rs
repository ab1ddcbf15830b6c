//! The pragmas a run's connections pin, as `processes.json` records them.

use std::collections::BTreeMap;

use crate::power::profile::{self, Profile};

/// Under the default store profile.
pub fn pragmas() -> BTreeMap<String, String> {
    pragmas_of(&profile::DEFAULT)
}

/// The pragmas every connection pins under `profile`, as `processes.json` records them.
pub fn pragmas_of(profile: &Profile) -> BTreeMap<String, String> {
    profile
        .pragmas()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}
