//! The undo log: an append-only record of what a power cut may take back.
//!
//! Every role process of a run appends to one log (O_APPEND, one `write(2)` per record, so
//! records of several processes interleave whole and in the order the kernel took them).
//! A record is written BEFORE the act it describes (a write, a truncate, a create, an unlink)
//! and AFTER the act it certifies (a sync, a directory sync): a process killed in between
//! leaves a record of an act that did not happen (undoing it restores what is already there)
//! or loses the certificate of a sync whose caller never saw it return (the cut then drops
//! what nobody was told was durable). Either way the model stays on the safe side.
//!
//! Layout, little-endian: `magic u32 | body_len u32 | kind u8 | body | fnv1a32(kind, body)`.
//! A body starts with a path (`u16 len | UTF-8`), relative to the run's work directory.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use anyhow::Result;

use crate::fail;

/// The first four bytes of every record: "UNDO" read as little-endian.
pub const MAGIC: u32 = u32::from_le_bytes(*b"UNDO");
/// The largest body of one record: a truncated tail or a deleted file larger than this is
/// refused by the VFS (the step fails with an I/O error) instead of being half recorded.
pub const RECORD_BYTES_MAX: u64 = 256 << 20;
/// The most records one log holds: far beyond a run, small enough to keep the index in memory.
pub const RECORDS_MAX: usize = 10_000_000;
/// The longest path in a record.
pub const PATH_BYTES_MAX: usize = 4_096;
/// The largest offset or size a record may name (1 TiB): a larger one is corruption.
pub const FILE_BYTES_MAX: u64 = 1 << 40;
/// The directory, in the work directory, of the hard links that keep unlinked files for the
/// cut (a link costs one system call where a copy into the log costs the whole file).
pub const STASH_DIR: &str = "power-undo.stash";
/// Bytes around a body: magic, length, kind before it; checksum after it.
const FRAME_BYTES: u64 = 4 + 4 + 1 + 4;

/// What a record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `len` bytes are about to be written at `offset` of a file of `old_size` bytes; the
    /// payload is what was there (`min(len, old_size - offset)` bytes).
    Write {
        offset: u64,
        len: u64,
        old_size: u64,
    },
    /// The file is about to be set from `old_size` to `new_size` bytes; the payload is the
    /// tail it loses (empty when it grows).
    Truncate { new_size: u64, old_size: u64 },
    /// The file was synced: every earlier write and truncate of it is durable.
    Sync,
    /// The file is about to be created (it did not exist).
    Create,
    /// The file is about to be unlinked. When it existed, the payload names (relative to the
    /// work directory, under `STASH_DIR`) a hard link to it made first: its content then.
    Unlink { existed: bool },
    /// The directory (the path) was synced: every earlier create and unlink in it is durable.
    DirSync,
    /// A power cut was applied here: everything before it is what the rebooted machine found.
    Cut,
}

impl Op {
    fn kind(self) -> u8 {
        match self {
            Op::Write { .. } => 1,
            Op::Truncate { .. } => 2,
            Op::Sync => 3,
            Op::Create => 4,
            Op::Unlink { .. } => 5,
            Op::DirSync => 6,
            Op::Cut => 7,
        }
    }
}

/// Where a record's payload (old bytes) lies in the log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub at: u64,
    pub len: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub op: Op,
    /// Index into `Log::paths`.
    pub path: u32,
    pub payload: Span,
    /// For an unlink of a file that existed: its stash path, an index into `Log::paths`.
    pub stash: Option<u32>,
}

/// A parsed log: the records in order, their paths interned.
#[derive(Debug, Default)]
pub struct Log {
    pub records: Vec<Record>,
    pub paths: Vec<String>,
    /// Bytes of the log that hold whole records; past them, `torn_bytes` of a record whose
    /// writer was killed inside its `write(2)` (the act it announced never happened).
    pub whole_bytes: u64,
    pub torn_bytes: u64,
}

impl Log {
    pub fn path(&self, record: &Record) -> &str {
        &self.paths[record.path as usize]
    }
}

/// One record as bytes, ready for a single `write(2)`.
pub fn encode(op: Op, path: &str, payload: &[u8]) -> Vec<u8> {
    assert!(
        path.len() <= PATH_BYTES_MAX,
        "path too long for the undo log"
    );
    let mut body = Vec::with_capacity(2 + path.len() + 24 + payload.len());
    body.extend_from_slice(&(path.len() as u16).to_le_bytes());
    body.extend_from_slice(path.as_bytes());
    match op {
        Op::Write {
            offset,
            len,
            old_size,
        } => {
            for v in [offset, len, old_size] {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        Op::Truncate { new_size, old_size } => {
            for v in [new_size, old_size] {
                body.extend_from_slice(&v.to_le_bytes());
            }
        }
        Op::Unlink { existed } => body.push(u8::from(existed)),
        Op::Sync | Op::Create | Op::DirSync | Op::Cut => {}
    }
    body.extend_from_slice(payload);
    assert!(body.len() as u64 <= RECORD_BYTES_MAX);
    let mut out = Vec::with_capacity(body.len() + FRAME_BYTES as usize);
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.push(op.kind());
    out.extend_from_slice(&body);
    let sum = fnv1a(fnv1a(FNV_OFFSET, &[op.kind()]), &body);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Append one encoded record with one `write(2)`; a short write is an error (the record's
/// tail would be missing and the act must not happen unrecorded).
pub fn append(log: &File, record: &[u8]) -> std::io::Result<()> {
    let written = (&*log).write(record)?;
    if written != record.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            format!(
                "short write to the undo log ({written} of {} bytes)",
                record.len()
            ),
        ));
    }
    Ok(())
}

const FNV_OFFSET: u32 = 0x811c_9dc5;

fn fnv1a(mut hash: u32, bytes: &[u8]) -> u32 {
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Whether a recorded path may be acted on: relative, plain components only, no `..`.
pub fn path_ok(path: &str) -> bool {
    path.is_empty()
        || (!path.starts_with('/')
            && !path.contains('\0')
            && path
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".."))
}

/// Read and check a whole log. A missing file, a bad record, a path outside the work
/// directory: one-line usage error (exit 2) naming the log and the record's offset.
pub fn read(path: &Path) -> Result<Log> {
    let shown = path.display();
    let file = File::open(path)
        .map_err(|e| fail::usage(format!("undo log {shown} cannot be read: {e}")))?;
    let total = file
        .metadata()
        .map_err(|e| fail::usage(format!("undo log {shown} cannot be read: {e}")))?
        .len();
    parse(BufReader::new(file), total).map_err(|(at, what)| {
        fail::usage(format!("undo log {shown} is corrupt at byte {at}: {what}"))
    })
}

/// Parse `total` bytes of records from `input`; an error is (offset, what).
pub fn parse(mut input: impl Read, total: u64) -> Result<Log, (u64, String)> {
    let mut log = Log::default();
    let mut at = 0u64;
    let io = |at: u64, e: std::io::Error| (at, format!("read failed: {e}"));
    while at < total {
        if total - at < FRAME_BYTES {
            log.torn_bytes = total - at;
            break;
        }
        let mut head = [0u8; 9];
        input.read_exact(&mut head).map_err(|e| io(at, e))?;
        let magic = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        if magic != MAGIC {
            return Err((at, "no record starts here (bad magic)".into()));
        }
        let body_len = u64::from(u32::from_le_bytes(head[4..8].try_into().expect("4")));
        if body_len > RECORD_BYTES_MAX {
            return Err((at, format!("record of {body_len} bytes exceeds the bound")));
        }
        if total - at < FRAME_BYTES + body_len {
            // The writer was killed inside its write(2): the act it announced never ran.
            log.torn_bytes = total - at;
            break;
        }
        if log.records.len() >= RECORDS_MAX {
            return Err((at, format!("more than {RECORDS_MAX} records")));
        }
        let kind = head[8];
        let mut sum = fnv1a(FNV_OFFSET, &[kind]);
        // The fixed part: path and numbers (bounded); the payload is streamed and indexed.
        let mut path_len = [0u8; 2];
        read_summed(&mut input, &mut path_len, &mut sum).map_err(|e| io(at, e))?;
        let path_len = u64::from(u16::from_le_bytes(path_len));
        let fixed = match kind {
            1 => 24,
            2 => 16,
            3 | 4 | 6 | 7 => 0,
            5 => 1,
            _ => return Err((at, format!("unknown record kind {kind}"))),
        };
        if path_len > PATH_BYTES_MAX as u64 || 2 + path_len + fixed > body_len {
            return Err((at, "record shorter than its own fields".into()));
        }
        let mut text = vec![0u8; path_len as usize];
        read_summed(&mut input, &mut text, &mut sum).map_err(|e| io(at, e))?;
        let path = String::from_utf8(text).map_err(|_| (at, "path is not UTF-8".into()))?;
        if !path_ok(&path) {
            return Err((
                at,
                format!("path '{path}' is outside the work directory (absolute or with ..)"),
            ));
        }
        let mut numbers = [0u8; 24];
        read_summed(&mut input, &mut numbers[..fixed as usize], &mut sum).map_err(|e| io(at, e))?;
        let n = |i: usize| u64::from_le_bytes(numbers[i * 8..i * 8 + 8].try_into().expect("8"));
        let payload_len = body_len - 2 - path_len - fixed;
        let op = match kind {
            1 => Op::Write {
                offset: n(0),
                len: n(1),
                old_size: n(2),
            },
            2 => Op::Truncate {
                new_size: n(0),
                old_size: n(1),
            },
            3 => Op::Sync,
            4 => Op::Create,
            5 => match numbers[0] {
                0 | 1 => Op::Unlink {
                    existed: numbers[0] == 1,
                },
                b => return Err((at, format!("unlink flag {b} is not 0 or 1"))),
            },
            6 => Op::DirSync,
            _ => Op::Cut,
        };
        check_payload(op, payload_len).map_err(|what| (at, what))?;
        let payload = Span {
            at: at + 9 + 2 + path_len + fixed,
            len: payload_len,
        };
        let mut left = payload_len;
        let mut stash = None;
        if op == (Op::Unlink { existed: true }) {
            let mut name = vec![0u8; payload_len as usize];
            read_summed(&mut input, &mut name, &mut sum).map_err(|e| io(at, e))?;
            left = 0;
            let name =
                String::from_utf8(name).map_err(|_| (at, "stash path is not UTF-8".into()))?;
            if !stash_ok(&name) {
                return Err((at, format!("stash path '{name}' is not under {STASH_DIR}/")));
            }
            stash = Some(intern(&mut log.paths, name));
        }
        let mut chunk = vec![0u8; 64 << 10];
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            read_summed(&mut input, &mut chunk[..n], &mut sum).map_err(|e| io(at, e))?;
            left -= n as u64;
        }
        let mut stored = [0u8; 4];
        input.read_exact(&mut stored).map_err(|e| io(at, e))?;
        if u32::from_le_bytes(stored) != sum {
            return Err((at, "checksum mismatch".into()));
        }
        let index = intern(&mut log.paths, path);
        log.records.push(Record {
            op,
            path: index,
            payload,
            stash,
        });
        at += FRAME_BYTES + body_len;
    }
    log.whole_bytes = at;
    Ok(log)
}

fn intern(paths: &mut Vec<String>, path: String) -> u32 {
    let index = match paths.iter().position(|p| *p == path) {
        Some(i) => i,
        None => {
            paths.push(path);
            paths.len() - 1
        }
    };
    index as u32
}

/// Whether a stash path is a plain file name under `STASH_DIR`.
pub fn stash_ok(name: &str) -> bool {
    name.strip_prefix(STASH_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|file| !file.contains('/') && path_ok(name))
}

fn read_summed(input: &mut impl Read, buf: &mut [u8], sum: &mut u32) -> std::io::Result<()> {
    input.read_exact(buf)?;
    *sum = fnv1a(*sum, buf);
    Ok(())
}

/// The payload a record of `op` must carry, and sizes within bounds.
fn check_payload(op: Op, payload_len: u64) -> Result<(), String> {
    let expected = match op {
        Op::Write {
            offset,
            len,
            old_size,
        } => {
            if offset.max(len).max(old_size) > FILE_BYTES_MAX
                || offset + len > FILE_BYTES_MAX
                || len == 0
            {
                return Err("write offset or size out of bounds".into());
            }
            len.min(old_size.saturating_sub(offset))
        }
        Op::Truncate { new_size, old_size } => {
            if old_size.max(new_size) > FILE_BYTES_MAX {
                return Err("truncate sizes out of bounds".into());
            }
            old_size.saturating_sub(new_size)
        }
        Op::Unlink { existed: true } => payload_len.clamp(1, PATH_BYTES_MAX as u64),
        Op::Unlink { existed: false } => 0,
        Op::Sync | Op::Create | Op::DirSync | Op::Cut => 0,
    };
    if payload_len != expected {
        return Err(format!(
            "payload of {payload_len} bytes where {expected} were due"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "undo_tests.rs"]
mod tests;
