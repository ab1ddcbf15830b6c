//! Store profiles: the journal mode and `synchronous` setting every connection of a role
//! pins, chosen per run by `CRASHLAB_STORE_PROFILE`. The default is the lab's correct
//! design (WAL, FULL); the others are variants that only a power cut tells apart from it.

use anyhow::Result;

use crate::fail;

/// The environment variable that selects a profile for every role process of a run.
pub const ENV: &str = "CRASHLAB_STORE_PROFILE";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The name given in `CRASHLAB_STORE_PROFILE` and recorded in the evidence.
    pub name: &'static str,
    /// `PRAGMA journal_mode`, as SQLite answers it.
    pub journal_mode: &'static str,
    /// `PRAGMA synchronous`.
    pub synchronous: &'static str,
    /// What a power cut is predicted to do to it, for the reader of a table.
    pub predicted: &'static str,
    /// Whether the store declares writes atomic (SQLite's `SQLITE_IOCAP_ATOMIC`), so no
    /// write tears: none does, since the unix VFS declares no such flag on Linux. `--cut
    /// exhaustive` tears every write at sector boundaries unless this is set.
    pub atomic_writes: bool,
}

/// The pinned default: what every run used before profiles existed.
pub const DEFAULT: Profile = Profile {
    name: "default",
    journal_mode: "wal",
    synchronous: "full",
    predicted: "holds: every commit syncs the WAL before it returns",
    atomic_writes: false,
};

/// Every profile, the default first.
pub const PROFILES: &[Profile] = &[
    DEFAULT,
    Profile {
        name: "sync-normal",
        journal_mode: "wal",
        synchronous: "normal",
        predicted: "a commit acknowledged since the last checkpoint may roll back",
        atomic_writes: false,
    },
    Profile {
        name: "journal-delete",
        journal_mode: "delete",
        synchronous: "full",
        predicted: "the last commit may roll back: its journal's unlink is not made durable",
        atomic_writes: false,
    },
    Profile {
        name: "journal-delete-extra",
        journal_mode: "delete",
        synchronous: "extra",
        predicted: "holds: the journal's unlink is followed by a directory sync",
        atomic_writes: false,
    },
    Profile {
        name: "sync-off",
        journal_mode: "wal",
        synchronous: "off",
        predicted: "anything may be lost, up to the file itself (nothing is ever synced)",
        atomic_writes: false,
    },
];

impl Profile {
    /// The pragmas every connection pins under this profile, in `store::PRAGMAS`'s order and
    /// words, for the evidence: the default's are exactly `store::PRAGMAS`.
    pub fn pragmas(&self) -> Vec<(&'static str, String)> {
        crate::store::PRAGMAS
            .iter()
            .map(|&(name, value)| match name {
                "journal_mode" => (name, self.journal_mode.to_string()),
                "synchronous" => (name, self.synchronous.to_string()),
                _ => (name, value.to_string()),
            })
            .collect()
    }

    /// The environment a role process needs to pin this profile; none for the default, so
    /// a run without a variant spawns its roles exactly as before.
    pub fn env(&self) -> Vec<(String, String)> {
        if *self == DEFAULT {
            return Vec::new();
        }
        vec![(ENV.to_string(), self.name.to_string())]
    }
}

/// A profile by name; an unknown name is one line, exit 2.
pub fn find(name: &str) -> Result<Profile> {
    PROFILES
        .iter()
        .find(|p| p.name == name)
        .copied()
        .ok_or_else(|| {
            let known: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
            fail::usage(format!(
                "unknown store profile '{name}'; known: {}",
                known.join(", ")
            ))
        })
}

/// The profile this process pins: `CRASHLAB_STORE_PROFILE`, or the default when unset.
pub fn current() -> Result<Profile> {
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT),
        Ok(name) if name.is_empty() => Ok(DEFAULT),
        Ok(name) => find(&name).map_err(|e| e.context(ENV)),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(fail::usage(format!("{ENV} is not valid UTF-8")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_pinned_design_and_names_are_unique() {
        assert_eq!(find("default").unwrap(), DEFAULT);
        assert_eq!((DEFAULT.journal_mode, DEFAULT.synchronous), ("wal", "full"));
        for (i, p) in PROFILES.iter().enumerate() {
            assert!(PROFILES[i + 1..].iter().all(|q| q.name != p.name));
        }
        let pinned: Vec<(&str, String)> = crate::store::PRAGMAS
            .iter()
            .map(|&(n, v)| (n, v.to_string()))
            .collect();
        assert_eq!(DEFAULT.pragmas(), pinned);
        assert!(DEFAULT.env().is_empty());
        let extra = find("journal-delete-extra").unwrap();
        assert_eq!(
            extra.pragmas()[..2],
            [
                ("journal_mode", "delete".into()),
                ("synchronous", "extra".into())
            ]
        );
        assert_eq!(
            extra.env(),
            [(ENV.to_string(), "journal-delete-extra".to_string())]
        );
        let e = find("fast").unwrap_err();
        assert_eq!(fail::exit_code(&e), fail::EXIT_USAGE);
        assert!(e.to_string().contains("known: default, sync-normal"));
    }
}
