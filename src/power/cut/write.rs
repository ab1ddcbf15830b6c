//! Writing a cut: the old bytes a plan puts back, onto a file on disk or an image in memory,
//! the `-shm` files a cut takes, the marker that ends the log's part a cut read, and what a
//! cut did to one file, for the evidence.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::plan::{first_live, Restore, Source};
use super::ranges::Ranges;
use crate::power::undo::{self, Log, Op};

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileCut {
    pub path: String,
    /// `rolled-back` (unsynced writes undone), `restored` (an unlink undone), `removed`
    /// (a create undone), `missing` (nothing on disk to roll back).
    pub action: &'static str,
    /// Creates and unlinks undone, oldest first.
    pub undone: Vec<&'static str>,
    /// Writes and truncates with at least one byte undone.
    pub dropped_writes: usize,
    /// Byte ranges put back to their synced content, merged, `[start, end)`.
    pub dropped_ranges: Vec<(u64, u64)>,
    pub size_before: Option<u64>,
    pub size_after: Option<u64>,
}

impl FileCut {
    /// What a cut does to the file `p` plans for, before it is done: rolled back, nothing
    /// dropped yet, of `size_before` bytes.
    pub fn begun(p: &super::plan::FilePlan, size_before: Option<u64>) -> FileCut {
        FileCut {
            path: p.path.clone(),
            action: "rolled-back",
            undone: p.undone.clone(),
            dropped_writes: 0,
            dropped_ranges: Vec::new(),
            size_before,
            size_after: None,
        }
    }
}

/// The `-shm` files beside every file the log names after its last cut: a power cut takes
/// shared memory. Each once, in path order.
pub fn shm_names(log: &Log) -> Vec<String> {
    let mut named: Vec<u32> = log.records[first_live(log)..]
        .iter()
        .filter(|r| r.op != Op::DirSync)
        .map(|r| r.path)
        .collect();
    named.sort_unstable();
    named.dedup();
    let mut shm: Vec<String> = Vec::new();
    for name in named.iter().map(|&i| &log.paths[i as usize]) {
        let stem = name.strip_suffix("-wal").unwrap_or(name);
        let candidate = format!("{stem}-shm");
        if candidate != *name && !shm.contains(&candidate) {
            shm.push(candidate);
        }
    }
    shm
}

/// The buffer the cut copies through.
const COPY_BYTES: u64 = 64 << 10;

/// What a cut writes to: a file on disk, or its image in memory (`image`).
pub trait Target {
    fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()>;
    fn set_len(&mut self, len: u64) -> std::io::Result<()>;
}

impl Target for File {
    fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
        self.write_all_at(bytes, offset)
    }

    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        File::set_len(self, len)
    }
}

impl Target for Vec<u8> {
    fn write_at(&mut self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
        let (at, end) = (offset as usize, offset as usize + bytes.len());
        if end > self.len() {
            self.resize(end, 0);
        }
        self[at..end].copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> std::io::Result<()> {
        self.resize(len as usize, 0);
        Ok(())
    }
}

/// Where the old bytes come from: the undo log on disk, or in memory.
pub trait Old {
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()>;
}

impl Old for File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()> {
        self.read_exact_at(buf, at)
    }
}

impl Old for [u8] {
    fn read_at(&self, buf: &mut [u8], at: u64) -> std::io::Result<()> {
        let from = self
            .get(at as usize..at as usize + buf.len())
            .ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the undo log's end")
            })?;
        buf.copy_from_slice(from);
        Ok(())
    }
}

/// Put back a plan's old bytes on `to`, newest first, then set its size: the byte ranges
/// put back, merged.
pub fn restore(
    restores: &[Restore],
    size: Option<u64>,
    old: &(impl Old + ?Sized),
    to: &mut impl Target,
) -> std::io::Result<Vec<(u64, u64)>> {
    let mut ranges = Ranges::default();
    let mut buf = vec![0u8; COPY_BYTES as usize];
    for r in restores {
        let (len, from_log) = match r.source {
            Source::Log(span) => (span.len, Some(span.at)),
            Source::Zeros(len) => (len, None),
        };
        let mut done = 0;
        while done < len {
            let n = (len - done).min(COPY_BYTES) as usize;
            match from_log {
                Some(at) => old.read_at(&mut buf[..n], at + done)?,
                None => buf[..n].fill(0),
            }
            to.write_at(&buf[..n], r.offset + done)?;
            done += n as u64;
        }
        ranges.add(r.offset, r.offset + len);
    }
    if let Some(size) = size {
        to.set_len(size)?;
    }
    Ok(ranges.spans().to_vec())
}

/// Drop a torn last record and append the cut marker: what the log said before it is now
/// what the disk holds, and the next cut starts after it.
pub fn mark(log_path: &Path, log: &Log) -> Result<()> {
    let file = OpenOptions::new()
        .append(true)
        .open(log_path)
        .with_context(|| format!("opening undo log {} to mark the cut", log_path.display()))?;
    if log.torn_bytes > 0 {
        file.set_len(log.whole_bytes)?;
    }
    undo::append(&file, &undo::encode(Op::Cut, "", &[]))
        .with_context(|| format!("marking the cut in undo log {}", log_path.display()))
}
