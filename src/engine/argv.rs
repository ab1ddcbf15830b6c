//! A role's argv under construction: the subcommand first, then its flags. Each lab's typed
//! builders (`labs/*/roles.rs`) are the only places a role's flags are spelled; they build
//! with this.

/// An argv: the subcommand, then flags in the order they were added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argv {
    role: &'static str,
    flags: Vec<String>,
}

impl Argv {
    pub fn new(role: &'static str) -> Argv {
        assert!(
            !role.is_empty() && !role.starts_with('-'),
            "a role is a subcommand"
        );
        Argv {
            role,
            flags: Vec::new(),
        }
    }

    /// `--name value`.
    pub fn flag(mut self, name: &str, value: impl ToString) -> Argv {
        debug_assert!(name.starts_with("--"));
        self.flags.push(name.to_string());
        self.flags.push(value.to_string());
        self
    }

    /// `--name value` when there is a value.
    pub fn maybe(self, name: &str, value: Option<impl ToString>) -> Argv {
        match value {
            Some(v) => self.flag(name, v),
            None => self,
        }
    }

    /// `--name` when `on`.
    pub fn switch(mut self, name: &str, on: bool) -> Argv {
        debug_assert!(name.starts_with("--"));
        if on {
            self.flags.push(name.to_string());
        }
        self
    }

    /// The subcommand.
    pub fn role(&self) -> &'static str {
        self.role
    }

    /// The flags after the subcommand.
    pub fn args(&self) -> &[String] {
        &self.flags
    }

    /// The whole argv after `crashlab`: the subcommand, then its flags.
    pub fn into_vec(self) -> Vec<String> {
        std::iter::once(self.role.to_string())
            .chain(self.flags)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_follow_the_role_in_order() {
        let argv = Argv::new("sender")
            .flag("--db", "a.db")
            .maybe("--seed", Some(3))
            .maybe("--batch", None::<u32>)
            .switch("--json", true)
            .switch("--quiet", false);
        assert_eq!(argv.role(), "sender");
        assert_eq!(argv.args(), ["--db", "a.db", "--seed", "3", "--json"]);
        assert_eq!(
            argv.into_vec().join(" "),
            "sender --db a.db --seed 3 --json"
        );
    }
}
