//! The shim's file object and its io methods: each call goes to the unix VFS's file object
//! that lives right after ours; xWrite, xTruncate and xSync also write the undo log.

use std::ffi::{c_int, c_void};

use rusqlite::ffi;

use super::undo::{self, Op};
use super::vfs::{log, parent};

/// Our file object. SQLite allocates `REAL_OFFSET + unix.szOsFile` bytes; the unix VFS's
/// file object starts at `REAL_OFFSET`.
#[repr(C)]
pub(super) struct Shim {
    /// Must come first: SQLite reads `pMethods` through a `sqlite3_file *`.
    pub base: ffi::sqlite3_file,
    pub real: *mut ffi::sqlite3_file,
    /// The recorded path of a named file (None for temp files).
    pub path: Option<Box<str>>,
    /// Whether writes are recorded: a main database, rollback journal or WAL (not a temp
    /// file or a super-journal: a power cut may take them, nothing reads them after one).
    pub tracked: bool,
    /// The unix VFS syncs the directory on the first xSync of a journal or WAL opened with
    /// SQLITE_OPEN_CREATE; this mirrors its `UNIXFILE_DIRSYNC` flag.
    pub dir_sync_pending: bool,
}

/// Where the unix file object starts: past ours, 16-byte aligned.
pub(super) const REAL_OFFSET: usize = (std::mem::size_of::<Shim>() + 15) & !15;

pub(super) static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

/// Our object and the unix one with its methods.
///
/// # Safety
/// `file` is a file SQLite opened through the shim (its pMethods is `METHODS`).
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (
    &'a mut Shim,
    *mut ffi::sqlite3_file,
    &'a ffi::sqlite3_io_methods,
) {
    // SAFETY: by the contract above, `file` is a live Shim whose real object is open.
    unsafe {
        let shim = &mut *(file as *mut Shim);
        let real = shim.real;
        let methods = &*(*real).pMethods;
        (shim, real, methods)
    }
}

/// The unix file's size, or SQLite's error code.
unsafe fn size_of(real: *mut ffi::sqlite3_file, m: &ffi::sqlite3_io_methods) -> Result<u64, c_int> {
    let mut size: ffi::sqlite3_int64 = 0;
    // SAFETY: delegation on an open unix file.
    let rc = unsafe { (m.xFileSize.expect("xFileSize"))(real, &mut size) };
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    Ok(u64::try_from(size).unwrap_or(0))
}

/// `len` bytes at `offset` of the unix file (all within its size).
unsafe fn read_at(
    real: *mut ffi::sqlite3_file,
    m: &ffi::sqlite3_io_methods,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, c_int> {
    let mut bytes = vec![0u8; len as usize];
    if len > 0 {
        // SAFETY: `bytes` holds `len` bytes; delegation on an open unix file.
        let rc = unsafe {
            (m.xRead.expect("xRead"))(
                real,
                bytes.as_mut_ptr() as *mut c_void,
                len as c_int,
                offset as ffi::sqlite3_int64,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
    }
    Ok(bytes)
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file it opened through us, once.
    let (shim, real, m) = unsafe { parts(file) };
    shim.path = None;
    // SAFETY: delegation.
    unsafe { (m.xClose.expect("xClose"))(real) }
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file of ours.
    let (shim, real, m) = unsafe { parts(file) };
    if let (Some(path), true) = (&shim.path, shim.tracked) {
        let (offset, len) = (offset as u64, amt as u64);
        // SAFETY: reads of the open unix file.
        let old = unsafe {
            size_of(real, m).and_then(|old_size| {
                let kept = len.min(old_size.saturating_sub(offset));
                read_at(real, m, offset, kept).map(|bytes| (old_size, bytes))
            })
        };
        let (old_size, bytes) = match old {
            Ok(v) => v,
            Err(_) => return ffi::SQLITE_IOERR_WRITE,
        };
        let op = Op::Write {
            offset,
            len,
            old_size,
        };
        if len > 0 && !log(op, path, &bytes) {
            return ffi::SQLITE_IOERR_WRITE;
        }
    }
    // SAFETY: delegation with SQLite's arguments.
    unsafe { (m.xWrite.expect("xWrite"))(real, buf, amt, offset) }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    // SAFETY: an open file of ours.
    let (shim, real, m) = unsafe { parts(file) };
    if let (Some(path), true) = (&shim.path, shim.tracked) {
        let new_size = u64::try_from(size).unwrap_or(0);
        // SAFETY: reads of the open unix file.
        let old_size = match unsafe { size_of(real, m) } {
            Ok(s) => s,
            Err(_) => return ffi::SQLITE_IOERR_TRUNCATE,
        };
        let tail = old_size.saturating_sub(new_size);
        if tail + path.len() as u64 + 18 > undo::RECORD_BYTES_MAX {
            // A tail this large cannot be recorded whole: fail the call, never half record it.
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
        // SAFETY: reads of the open unix file.
        let bytes = match unsafe { read_at(real, m, new_size, tail) } {
            Ok(b) => b,
            Err(_) => return ffi::SQLITE_IOERR_TRUNCATE,
        };
        if new_size != old_size && !log(Op::Truncate { new_size, old_size }, path, &bytes) {
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
    }
    // SAFETY: delegation with SQLite's arguments.
    unsafe { (m.xTruncate.expect("xTruncate"))(real, size) }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: an open file of ours.
    let (shim, real, m) = unsafe { parts(file) };
    // SAFETY: delegation with SQLite's arguments.
    let rc = unsafe { (m.xSync.expect("xSync"))(real, flags) };
    if rc != ffi::SQLITE_OK {
        // os_unix.c returns before its directory sync too, keeping the flag for next time.
        return rc;
    }
    let dir_synced = std::mem::take(&mut shim.dir_sync_pending);
    if let Some(path) = &shim.path {
        if (shim.tracked && !log(Op::Sync, path, &[]))
            || (dir_synced && !log(Op::DirSync, parent(path), &[]))
        {
            return ffi::SQLITE_IOERR_FSYNC;
        }
    }
    rc
}

// Pure pass-through below: reads, sizes, locks, file controls, shared memory, mmap.

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xRead.expect("xRead"))(real, buf, amt, offset)
    }
}

unsafe extern "C" fn x_file_size(
    file: *mut ffi::sqlite3_file,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xFileSize.expect("xFileSize"))(real, out)
    }
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xLock.expect("xLock"))(real, level)
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xUnlock.expect("xUnlock"))(real, level)
    }
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xCheckReservedLock.expect("xCheckReservedLock"))(real, out)
    }
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xFileControl.expect("xFileControl"))(real, op, arg)
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xSectorSize.expect("xSectorSize"))(real)
    }
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        (m.xDeviceCharacteristics.expect("xDeviceCharacteristics"))(real)
    }
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: an open file of ours; delegation (the journal and WAL objects of the unix VFS
    // have no shm methods; SQLite never asks them).
    unsafe {
        let (_, real, m) = parts(file);
        match m.xShmMap {
            Some(f) if m.iVersion >= 2 => f(real, page, page_size, extend, out),
            _ => ffi::SQLITE_IOERR_SHMMAP,
        }
    }
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        match m.xShmLock {
            Some(f) if m.iVersion >= 2 => f(real, offset, n, flags),
            _ => ffi::SQLITE_IOERR_SHMLOCK,
        }
    }
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        if let (Some(f), true) = (m.xShmBarrier, m.iVersion >= 2) {
            f(real)
        }
    }
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        match m.xShmUnmap {
            Some(f) if m.iVersion >= 2 => f(real, delete),
            _ => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn x_fetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    amt: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: an open file of ours; delegation. Without an xFetch below, "no mapping".
    unsafe {
        let (_, real, m) = parts(file);
        match m.xFetch {
            Some(f) if m.iVersion >= 3 => f(real, offset, amt, out),
            _ => {
                *out = std::ptr::null_mut();
                ffi::SQLITE_OK
            }
        }
    }
}

unsafe extern "C" fn x_unfetch(
    file: *mut ffi::sqlite3_file,
    offset: ffi::sqlite3_int64,
    page: *mut c_void,
) -> c_int {
    // SAFETY: an open file of ours; delegation.
    unsafe {
        let (_, real, m) = parts(file);
        match m.xUnfetch {
            Some(f) if m.iVersion >= 3 => f(real, offset, page),
            _ => ffi::SQLITE_OK,
        }
    }
}
