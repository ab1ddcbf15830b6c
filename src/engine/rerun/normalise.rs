//! What legitimately varies between two runs of the same command, replaced by a placeholder
//! before two runs are compared (README, "`audit --rerun`").
//!
//! Text (every line of every output file, and every JSON string):
//! - a standalone 13-digit integer is a millisecond wall-clock timestamp (`lease_until_ms =
//!   1796244792039`, stored `applied_ms`): every time from 2001 to 2286 has 13 digits, and no
//!   amount, count or id of the labs has that many. `<ms>`
//! - a number followed by the unit `ms` is a measured duration (`1612 ms`). `<ms>`
//! - a number followed by a word ending in `/s` is a measured rate (`19.9 cases/s`). `<rate>`
//! - a number followed by `jobs` is the default parallelism, the machine's core count. `<jobs>`
//! - a number after `127.0.0.1:`, `localhost:` or `[::1]:`, or right after a line's leading
//!   `READY `, is a port the kernel chose. `<port>`
//! - a number after `pid ` or `pid=` is a process id. `<pid>`
//! - a path under `/tmp/`, `/var/tmp/`, `/dev/shm/` or the temporary directory is a temporary
//!   path with a random name. `<tmp>`
//! - the words `tmpfs`, `ext4`, `xfs`, `btrfs`, `overlayfs` name the file system a work
//!   directory is on, a property of the machine. `<fs>`
//! - a word `p<pid>t<13-digit ms>n<count>` is an id made of the process that took it and the
//!   time it took it (a broker publish id: unique per physical message, so a publisher that
//!   publishes again after a crash gives the new copy a new one). `<publish>`
//!
//! JSON, by key (the value whole, whatever its type): `wall_ms` and any key ending in
//! `wall_ms` (measured times), `max_rss_kb` (measured memory), keys ending in `_per_s`
//! (rates), `jobs`, `work_fs`, `port` and keys ending in `_port`, `pid` and keys ending in
//! `_pid`, `git`, `sources` and keys ending in `_version` (which build ran). And by value: a
//! string of 64 hex digits is a SHA-256 digest of a file or of rows, which hold timestamps
//! (`<sha256>`; what they digest is compared itself), and a 13-digit integer is a timestamp.

use serde_json::Value;

/// Keys whose whole value is a measurement or a fact of the machine or the build.
pub fn key_placeholder(key: &str) -> Option<&'static str> {
    let placeholder = match key {
        _ if key.ends_with("wall_ms") => "<ms>",
        "max_rss_kb" => "<kb>",
        _ if key.ends_with("_per_s") => "<rate>",
        "jobs" => "<jobs>",
        "work_fs" => "<fs>",
        "port" => "<port>",
        _ if key.ends_with("_port") => "<port>",
        "pid" => "<pid>",
        _ if key.ends_with("_pid") => "<pid>",
        "git" | "sources" => "<build>",
        _ if key.ends_with("_version") => "<version>",
        _ => return None,
    };
    Some(placeholder)
}

/// The file system kinds explore names (`explore::fs_kind`).
const FS_WORDS: &[&str] = &["tmpfs", "ext4", "xfs", "btrfs", "overlayfs"];

/// Where temporary paths start.
const TEMP_PREFIXES: &[&str] = &["/tmp/", "/var/tmp/", "/dev/shm/"];

/// Characters that end a path inside a line.
fn ends_path(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | ')' | ']' | '}' | '<' | '>'
        )
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Replace temporary paths by `<tmp>`.
fn temp_paths(text: &str) -> String {
    let system = std::env::temp_dir().to_string_lossy().into_owned();
    let system = format!("{}/", system.trim_end_matches('/'));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        let before = out.chars().next_back();
        let starts_path = before.is_none_or(|c| !word_char(c) && c != '/' && c != '.');
        if starts_path {
            let system_prefix = (system.len() > 1).then_some(system.as_str());
            for prefix in TEMP_PREFIXES.iter().copied().chain(system_prefix) {
                if rest.starts_with(prefix) {
                    // A path ends at a delimiter, or at a colon that ends a clause (`x.db: gone`).
                    let end = rest
                        .char_indices()
                        .find(|&(i, c)| {
                            ends_path(c)
                                || (c == ':'
                                    && rest[i + 1..].chars().next().is_none_or(char::is_whitespace))
                        })
                        .map_or(rest.len(), |(i, _)| i);
                    out.push_str("<tmp>");
                    rest = &rest[end..];
                    continue 'scan;
                }
            }
        }
        let c = rest.chars().next().expect("rest is not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// What the number at `start..end` of `line` stands for, when it varies between runs.
fn number_placeholder(line: &str, start: usize, end: usize) -> Option<&'static str> {
    let before = &line[..start];
    let after = &line[end..];
    let token = &line[start..end];
    let integer = token.bytes().all(|b| b.is_ascii_digit());
    if ["127.0.0.1:", "localhost:", "[::1]:"]
        .iter()
        .any(|p| before.ends_with(p))
        || (before == "READY " && integer)
        || before.ends_with("\"port\":")
    {
        return Some("<port>");
    }
    // `"pid":` and `"port":` in an events line (`<step>.events.jsonl`).
    if before.ends_with("pid ") || before.ends_with("pid=") || before.ends_with("\"pid\":") {
        return Some("<pid>");
    }
    if integer && token.len() == 13 {
        return Some("<ms>");
    }
    let unit = after.strip_prefix(' ').unwrap_or(after);
    let unit_word: String = unit
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '.' | ')' | '<' | ';'))
        .collect();
    if unit_word == "ms" {
        return Some("<ms>");
    }
    if after.starts_with(' ') && unit_word.len() > 2 && unit_word.ends_with("/s") {
        return Some("<rate>");
    }
    if after.starts_with(' ') && (unit_word == "jobs" || unit_word == "job") {
        return Some("<jobs>");
    }
    None
}

/// Normalise one line of text (see the module comment).
pub fn line(text: &str) -> String {
    let text = temp_paths(text);
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let boundary = i == 0 || {
            let p = bytes[i - 1];
            !(p.is_ascii_alphanumeric() || p == b'_' || p == b'.' || p == b'-')
        };
        if c.is_ascii_digit() && boundary {
            let mut end = i;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            // A decimal fraction belongs to the number (`19.9 cases/s`).
            if end + 1 < bytes.len() && bytes[end] == b'.' && bytes[end + 1].is_ascii_digit() {
                end += 1;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
            }
            let standalone =
                end == bytes.len() || !(bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_');
            match number_placeholder(&text, i, end).filter(|_| standalone) {
                Some(placeholder) => out.push_str(placeholder),
                None => out.push_str(&text[i..end]),
            }
            i = end;
            continue;
        }
        if c.is_ascii_alphabetic() && boundary {
            let mut end = i;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            let word = &text[i..end];
            out.push_str(if FS_WORDS.contains(&word) {
                "<fs>"
            } else if is_pid_time_id(word) {
                "<publish>"
            } else {
                word
            });
            i = end;
            continue;
        }
        // Copy one whole character (the line may hold UTF-8 beyond ASCII).
        let width = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + width]);
        i += width;
    }
    out
}

/// `p<digits>t<13 digits>n<digits>`: an id made of a pid, a wall-clock time and a count.
fn is_pid_time_id(word: &str) -> bool {
    fn digits(text: &str) -> bool {
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
    }
    let Some(rest) = word.strip_prefix('p') else {
        return false;
    };
    let Some((pid, rest)) = rest.split_once('t') else {
        return false;
    };
    let Some((ms, count)) = rest.split_once('n') else {
        return false;
    };
    digits(pid) && ms.len() == 13 && digits(ms) && digits(count)
}

fn is_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Normalise a JSON value: by key, then every string as a line, digests and timestamps.
pub fn json(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match key_placeholder(k) {
                        Some(placeholder) => Value::String(placeholder.to_string()),
                        None => json(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(json).collect()),
        Value::String(s) if is_digest(s) => Value::String("<sha256>".to_string()),
        Value::String(s) => Value::String(line(s)),
        Value::Number(n) if n.as_u64().is_some_and(|v| v.to_string().len() == 13) => {
            Value::String("<ms>".to_string())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as j;

    #[test]
    fn timestamps_in_sql_become_ms_and_amounts_stay() {
        let sql = "SQL queue UPDATE deliveries SET claimed_by = 'c1', lease_until_ms = 1796244792039 WHERE x < 1796244762039 AND amount = 25";
        assert_eq!(
            line(sql),
            "SQL queue UPDATE deliveries SET claimed_by = 'c1', lease_until_ms = <ms> WHERE x < <ms> AND amount = 25"
        );
        // 12 and 14 digits are not wall-clock milliseconds: kept.
        assert_eq!(line("v 179624479203 w"), "v 179624479203 w");
        assert_eq!(line("v 17962447920391"), "v 17962447920391");
        assert_eq!(line("(1796244762040)"), "(<ms>)");
    }

    #[test]
    fn digits_inside_words_and_digests_stay() {
        let digest = "7e1d59aa3981212f7af8493e5f77fa2e2a6cc66bcba9911536db8c598a813a36";
        assert_eq!(line(&format!("'{digest}'")), format!("'{digest}'"));
        assert_eq!(line("C000001 M1 K2 c1"), "C000001 M1 K2 c1");
        // All 13 digits inside a hex word: not a standalone number.
        assert_eq!(line("ab1234567890123cd"), "ab1234567890123cd");
        assert_eq!(line("x1796244762039"), "x1796244762039");
    }

    #[test]
    fn ports_in_ready_lines_and_urls() {
        assert_eq!(
            line("READY 38217 mode=keyed workers=4 key_ttl_ms=forever"),
            "READY <port> mode=keyed workers=4 key_ttl_ms=forever"
        );
        assert_eq!(
            line("crashlab: no reply from 127.0.0.1:45633 for key K1"),
            "crashlab: no reply from 127.0.0.1:<port> for key K1"
        );
        assert_eq!(
            line("http://localhost:8080/effect"),
            "http://localhost:<port>/effect"
        );
        assert_eq!(line("[::1]:9"), "[::1]:<port>");
        // Not at the line's start, or not a port: kept.
        assert_eq!(line("NOT READY 5"), "NOT READY 5");
        assert_eq!(line("workers=4 key_ttl_ms=1"), "workers=4 key_ttl_ms=1");
    }

    #[test]
    fn durations_rates_jobs_pids_and_file_systems() {
        assert_eq!(
            line("Crash mode `exit`, files on tmpfs, 32 cases (171 processes), 1612 ms, 19.9 cases/s on 2 jobs."),
            "Crash mode `exit`, files on <fs>, 32 cases (171 processes), <ms> ms, <rate> cases/s on <jobs> jobs."
        );
        assert_eq!(
            line("260 processes, 4210 ms</text>"),
            "260 processes, <ms> ms</text>"
        );
        assert_eq!(
            line("killed pid 4242 and pid=17"),
            "killed pid <pid> and pid=<pid>"
        );
        // A count before another word, and `ms` inside a word, are kept.
        assert_eq!(line("12 msgs, 3 mss"), "12 msgs, 3 mss");
        assert_eq!(line("ext4x tmpfs2"), "ext4x tmpfs2");
    }

    #[test]
    fn temporary_paths() {
        assert_eq!(
            line("cannot open /tmp/crashlab-work-AbC123/sender.db: gone"),
            "cannot open <tmp>: gone"
        );
        assert_eq!(line("'/dev/shm/crashlab-x' ok"), "'<tmp>' ok");
        // A relative path that merely contains tmp is kept.
        assert_eq!(line("evidence/tmp/x a/tmp/b"), "evidence/tmp/x a/tmp/b");
        let system = std::env::temp_dir().join("crashlab-rerun-q1");
        assert_eq!(line(&format!("in {}", system.display())), "in <tmp>");
    }

    #[test]
    fn pid_time_ids() {
        assert_eq!(
            line("AMQP publish queue=messages message=M1 publish=p26451t1796326361534n1 tag=1"),
            "AMQP publish queue=messages message=M1 publish=<publish> tag=1"
        );
        assert_eq!(line("('p7t1796326361534n12', 'M1')"), "('<publish>', 'M1')");
        // Not 13 digits of time, or not that shape: kept.
        assert_eq!(
            line("p7t179632636153n1 p7t1796326361534 M1-1"),
            "p7t179632636153n1 p7t1796326361534 M1-1"
        );
    }

    #[test]
    fn non_ascii_text_is_copied_whole() {
        assert_eq!(line("clé 1796244762039 é"), "clé <ms> é");
    }

    #[test]
    fn json_by_key_and_by_value() {
        let value = j!({
            "wall_ms": 6.711, "total_wall_ms": 58.4, "max_rss_kb": 6332,
            "git": {"commit": "03018ec8", "dirty": false}, "crashlab_version": "0.1.0",
            "sqlite_version": "3.54.1", "sources": {"src/a.rs": "x"}, "jobs": 2,
            "work_fs": "tmpfs", "cases_per_s": 19.9, "port": 4000, "receiver_port": 4001,
            "pid": 7, "step_timeout_ms": 10000, "lease_ms": 5000, "exit": 73,
            "sha256": "89a2318c76452be80e1d743f163f3dd96623b2b05604aa06985c6b5501238362",
            "stored_ms": 1796244762039_u64, "bytes": 4096,
            "lines": ["READY 38217 mode=keyed", "amount 25"],
        });
        assert_eq!(
            json(&value),
            j!({
                "wall_ms": "<ms>", "total_wall_ms": "<ms>", "max_rss_kb": "<kb>",
                "git": "<build>", "crashlab_version": "<version>", "sqlite_version": "<version>",
                "sources": "<build>", "jobs": "<jobs>", "work_fs": "<fs>",
                "cases_per_s": "<rate>", "port": "<port>", "receiver_port": "<port>",
                "pid": "<pid>", "step_timeout_ms": 10000, "lease_ms": 5000, "exit": 73,
                "sha256": "<sha256>", "stored_ms": "<ms>", "bytes": 4096,
                "lines": ["READY <port> mode=keyed", "amount 25"],
            })
        );
    }

    #[test]
    fn normalising_twice_changes_nothing_more() {
        let text = "READY 38217 at 1796244762039 in /tmp/x, 12 ms";
        assert_eq!(line(&line(text)), line(text));
    }
}
