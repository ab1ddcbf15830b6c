//! The undo log as evidence: its records after the last cut, each act without the old bytes
//! (which never leave the work directory). That is enough to derive a cut again: which acts
//! were unsynced, and what each style, seed or state puts back (the audit does).

use serde::{Deserialize, Serialize};

use super::plan::first_live;
use crate::power::undo::{Log, Op, Record as Raw, Span, STASH_DIR};

/// One record of the undo log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `write`, `truncate`, `sync`, `create`, `unlink` or `dirsync`.
    pub op: String,
    /// Relative to the work directory; a directory for `dirsync` ("" for the work directory).
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_size: Option<u64>,
    /// For an unlink: whether the file existed (its content was kept to be put back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existed: Option<bool>,
}

/// The records a cut read, in order.
pub type Record = Vec<Entry>;

/// The records of `log` after its last cut marker.
pub fn of(log: &Log) -> Record {
    log.records[first_live(log)..]
        .iter()
        .map(|r| {
            let mut e = Entry {
                op: String::new(),
                path: log.path(r).to_string(),
                offset: None,
                len: None,
                old_size: None,
                new_size: None,
                existed: None,
            };
            e.op = match r.op {
                Op::Write {
                    offset,
                    len,
                    old_size,
                } => {
                    (e.offset, e.len, e.old_size) = (Some(offset), Some(len), Some(old_size));
                    "write"
                }
                Op::Truncate { new_size, old_size } => {
                    (e.new_size, e.old_size) = (Some(new_size), Some(old_size));
                    "truncate"
                }
                Op::Sync => "sync",
                Op::Create => "create",
                Op::Unlink { existed } => {
                    e.existed = Some(existed);
                    "unlink"
                }
                Op::DirSync => "dirsync",
                Op::Cut => unreachable!("no record after the last marker is one"),
            }
            .to_string();
            e
        })
        .collect()
}

/// A log without old bytes that gives the same plans as the one `record` was taken from
/// (payload spans of the right lengths at offset 0; an unlinked file's stash named by its
/// record). An entry that is no record: why, with its index.
pub fn to_log(record: &[Entry]) -> Result<Log, String> {
    let mut log = Log::default();
    let intern = |paths: &mut Vec<String>, p: &str| -> u32 {
        match paths.iter().position(|x| x == p) {
            Some(i) => i as u32,
            None => {
                paths.push(p.to_string());
                (paths.len() - 1) as u32
            }
        }
    };
    for (i, e) in record.iter().enumerate() {
        let bad = |what: &str| format!("log entry {i} ({} {}): {what}", e.op, e.path);
        if !crate::power::undo::path_ok(&e.path) || (e.path.is_empty() && e.op != "dirsync") {
            return Err(bad("a path outside the work directory"));
        }
        let need = |v: Option<u64>, name: &str| v.ok_or_else(|| bad(&format!("no {name}")));
        let op = match e.op.as_str() {
            "write" => Op::Write {
                offset: need(e.offset, "offset")?,
                len: need(e.len, "len")?,
                old_size: need(e.old_size, "old_size")?,
            },
            "truncate" => Op::Truncate {
                new_size: need(e.new_size, "new_size")?,
                old_size: need(e.old_size, "old_size")?,
            },
            "sync" => Op::Sync,
            "create" => Op::Create,
            "unlink" => Op::Unlink {
                existed: e.existed.ok_or_else(|| bad("no existed"))?,
            },
            "dirsync" => Op::DirSync,
            other => return Err(bad(&format!("'{other}' is no act of the undo log"))),
        };
        let bound = crate::power::undo::FILE_BYTES_MAX;
        let payload = match op {
            Op::Write {
                offset,
                len,
                old_size,
            } => {
                if len == 0 || offset.max(len).max(old_size) > bound || offset + len > bound {
                    return Err(bad("offset or size out of bounds"));
                }
                len.min(old_size.saturating_sub(offset))
            }
            Op::Truncate { new_size, old_size } => {
                if new_size.max(old_size) > bound {
                    return Err(bad("sizes out of bounds"));
                }
                old_size.saturating_sub(new_size)
            }
            _ => 0,
        };
        let stash = matches!(op, Op::Unlink { existed: true })
            .then(|| intern(&mut log.paths, &format!("{STASH_DIR}/{i}")));
        let path = intern(&mut log.paths, &e.path);
        log.records.push(Raw {
            op,
            path,
            payload: Span {
                at: 0,
                len: payload,
            },
            stash,
        });
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::undo::{encode, parse};

    #[test]
    fn a_record_gives_back_the_acts_it_was_taken_from() {
        let mut bytes = Vec::new();
        for (op, path, payload) in [
            (Op::Create, "db", &b""[..]),
            (
                Op::Write {
                    offset: 0,
                    len: 4,
                    old_size: 0,
                },
                "db",
                b"",
            ),
            (Op::Sync, "db", b""),
            (Op::Cut, "", b""),
            (
                Op::Write {
                    offset: 2,
                    len: 4,
                    old_size: 4,
                },
                "db",
                b"ab",
            ),
            (
                Op::Truncate {
                    new_size: 1,
                    old_size: 6,
                },
                "db",
                b"xabcd",
            ),
            (
                Op::Unlink { existed: true },
                "db-journal",
                b"power-undo.stash/j",
            ),
            (Op::DirSync, "", b""),
        ] {
            bytes.extend(encode(op, path, payload));
        }
        let log = parse(&bytes[..], bytes.len() as u64).unwrap();
        let record = of(&log);
        assert_eq!(record.len(), 4, "only what follows the last cut");
        let json = serde_json::to_string(&record[0]).unwrap();
        assert_eq!(
            json,
            r#"{"op":"write","path":"db","offset":2,"len":4,"old_size":4}"#
        );
        let back = to_log(&record).unwrap();
        let ops: Vec<Op> = back.records.iter().map(|r| r.op).collect();
        let want: Vec<Op> = log.records[4..].iter().map(|r| r.op).collect();
        assert_eq!(ops, want);
        let lens: Vec<u64> = back.records.iter().map(|r| r.payload.len).collect();
        assert_eq!(lens, [2, 5, 0, 0]);
        assert!(back.records[2].stash.is_some());
        let mut bad = record.clone();
        bad[1].path = "../x".into();
        assert!(to_log(&bad)
            .unwrap_err()
            .contains("outside the work directory"));
        bad[1] = Entry {
            op: "rename".into(),
            ..record[1].clone()
        };
        assert!(to_log(&bad).unwrap_err().contains("no act"));
    }
}
