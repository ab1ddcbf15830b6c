//! The names crashlab gives databases and queues: `crashlab_<tag>_<logical>`. On a server the
//! user gave, these are the only names crashlab creates or drops.

use anyhow::Result;

use crate::fail;

pub const PREFIX: &str = "crashlab_";
/// PostgreSQL truncates identifiers past 63 bytes: a longer name would silently be another.
pub const NAME_BYTES_MAX: usize = 63;

/// Is `name` one of crashlab's own?
pub fn ours(name: &str) -> bool {
    name.starts_with(PREFIX) && name.len() <= NAME_BYTES_MAX && simple(&name[PREFIX.len()..])
}

/// `[a-z0-9_]+`: safe inside a quoted identifier and a queue name alike.
fn simple(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The name of logical store `logical` (`sender`) for `tag` (`s3`): `crashlab_s3_sender`.
pub fn of(tag: &str, logical: &str) -> Result<String> {
    if !simple(tag) || !simple(logical) {
        return Err(fail::usage(format!(
            "tag '{tag}' and name '{logical}' must be [a-z0-9_]"
        )));
    }
    let name = format!("{PREFIX}{tag}_{logical}");
    if name.len() > NAME_BYTES_MAX {
        return Err(fail::usage(format!(
            "{name}: longer than {NAME_BYTES_MAX} bytes (PostgreSQL would cut it)"
        )));
    }
    assert!(ours(&name));
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_prefixed_simple_names_are_ours() {
        assert_eq!(of("s1", "sender").unwrap(), "crashlab_s1_sender");
        assert!(ours("crashlab_s1_sender"));
        assert!(!ours("postgres"));
        assert!(!ours("crashlab_"));
        assert!(!ours("crashlab_a\"; drop"));
        assert!(of("S1", "sender").is_err());
        assert!(of("s1", &"x".repeat(60)).is_err());
    }
}
