//! The shim VFS `crashlab-power`: SQLite's own `unix` VFS with every call passed through,
//! and the undo log written around the calls that change what a power cut could take back.
//!
//! Everything that makes several processes share one database (POSIX locks, the `-shm`
//! wal-index, its locks and barriers, mmap) is the unix VFS's own code acting on the unix
//! VFS's own file object, which lives inside ours: so a run under the shim sees exactly
//! what it sees without it. xFetch is passed through too: SQLite never writes through a
//! mapping (this build has no SQLITE_MMAP_READWRITE), so every change still comes by xWrite.
//!
//! Recorded (see `undo`): xWrite and xTruncate of a main database, rollback journal or WAL
//! (old bytes and old size, before the call); a successful xSync of one (after); xOpen that
//! creates one of them (before); xDelete (a hard link to the file in the stash, before; a
//! directory sync after, when SQLite asked for one); and the directory sync the unix VFS does on the first xSync
//! of a journal or WAL opened with SQLITE_OPEN_CREATE (its `UNIXFILE_DIRSYNC`, modelled here
//! the way os_unix.c decides it).

use std::ffi::{c_char, c_int, CStr, CString};
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rusqlite::ffi;

use super::file::{Shim, METHODS, REAL_OFFSET};
use super::undo::{self, Op};

/// The name connections open the shim with; it is never the default VFS.
pub const NAME: &str = "crashlab-power";

pub(super) struct State {
    pub unix: *mut ffi::sqlite3_vfs,
    log: File,
    /// The work directory, canonical, with a trailing slash: recorded paths are relative to it.
    root: String,
    /// This process's stashed unlinks not yet made durable: (directory, stash path).
    stashed: Mutex<Vec<(String, String)>>,
}

// SAFETY: `unix` points at SQLite's static unix VFS, valid and immutable for the process's
// life; `File` is Sync and appends are single write(2) calls.
unsafe impl Send for State {}
unsafe impl Sync for State {}

static STATE: OnceLock<State> = OnceLock::new();

pub(super) fn state() -> &'static State {
    STATE
        .get()
        .expect("the power VFS is registered before SQLite calls it")
}

/// Register the shim under `NAME`, recording into `log_path`; the work directory is the
/// log's directory. Once per process; an error is one line naming the log.
pub fn register(log_path: &Path) -> Result<(), String> {
    let shown = log_path.display();
    let dir = match log_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let root = dir
        .canonicalize()
        .map_err(|e| format!("undo log {shown}: its directory cannot be resolved: {e}"))?;
    let log = OpenOptions::new()
        .append(true)
        .create(true)
        .open(log_path)
        .map_err(|e| format!("undo log {shown} cannot be opened for appending: {e}"))?;
    // SAFETY: sqlite3_vfs_find initializes SQLite if needed and returns a static or null.
    let unix = unsafe { ffi::sqlite3_vfs_find(c"unix".as_ptr()) };
    if unix.is_null() {
        return Err("SQLite has no unix VFS to wrap".to_string());
    }
    let mut root = root.to_string_lossy().into_owned();
    if !root.ends_with('/') {
        root.push('/');
    }
    let stashed = Mutex::new(Vec::new());
    if STATE
        .set(State {
            unix,
            log,
            root,
            stashed,
        })
        .is_err()
    {
        return Err("the power VFS is registered twice in one process".to_string());
    }
    // SAFETY: `unix` is valid; every field we leave zero is optional at iVersion 2.
    let mut vfs: ffi::sqlite3_vfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let base = unsafe { &*unix };
    vfs.iVersion = 2;
    vfs.szOsFile = (REAL_OFFSET + base.szOsFile as usize) as c_int;
    vfs.mxPathname = base.mxPathname;
    vfs.zName = CString::new(NAME).expect("no NUL").into_raw();
    vfs.xOpen = Some(x_open);
    vfs.xDelete = Some(x_delete);
    vfs.xAccess = Some(x_access);
    vfs.xFullPathname = Some(x_full_pathname);
    vfs.xRandomness = Some(x_randomness);
    vfs.xSleep = Some(x_sleep);
    vfs.xCurrentTime = Some(x_current_time);
    vfs.xGetLastError = Some(x_get_last_error);
    vfs.xCurrentTimeInt64 = Some(x_current_time_int64);
    // Extension loading stays off for connections of this VFS: the labs load none.
    let vfs = Box::leak(Box::new(vfs));
    // SAFETY: `vfs` lives for the process; 0 = not the default.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    if rc != ffi::SQLITE_OK {
        return Err(format!(
            "registering the power VFS failed (SQLite code {rc})"
        ));
    }
    Ok(())
}

/// Append one record; false when the log could not take it (the caller fails the call).
pub(super) fn log(op: Op, path: &str, payload: &[u8]) -> bool {
    let st = state();
    if undo::append(&st.log, &undo::encode(op, path, payload)).is_err() {
        return false;
    }
    if op == Op::DirSync {
        // Once the directory sync is in the log, this process's earlier unlinks in it are
        // durable: the cut never brings them back, so their stashed files can go now (the
        // stash stays about one file per process instead of growing with every commit).
        let mut stashed = st.stashed.lock().unwrap_or_else(|p| p.into_inner());
        stashed.retain(|(dir, stash)| {
            dir != path || std::fs::remove_file(Path::new(&st.root).join(stash)).is_err()
        });
    }
    true
}

/// The path SQLite gave (absolute, symlinks resolved by xFullPathname) relative to the work
/// directory; a path outside it stays absolute, and the cut refuses a log that names it.
pub(super) fn relative(full: &CStr) -> Box<str> {
    let text = full.to_string_lossy();
    let root = &state().root;
    text.strip_prefix(root.as_str()).unwrap_or(&text).into()
}

/// The directory part of a recorded path ("" for the work directory itself).
pub(super) fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => dir,
        Some(_) => "/",
        None => "",
    }
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    z_name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let st = state();
    let shim = file as *mut Shim;
    // SAFETY: SQLite allocated szOsFile bytes at `file`; the unix file object follows ours.
    let real = unsafe { (file as *mut u8).add(REAL_OFFSET) } as *mut ffi::sqlite3_file;
    let durable = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_WAL;
    let journals =
        ffi::SQLITE_OPEN_MAIN_JOURNAL | ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_SUPER_JOURNAL;
    let create = flags & ffi::SQLITE_OPEN_CREATE != 0;
    let tracked = flags & durable != 0;
    // SAFETY: a non-null name is a NUL-terminated string SQLite owns for the file's life.
    let path = (!z_name.is_null()).then(|| relative(unsafe { CStr::from_ptr(z_name) }));
    if let (Some(p), true) = (&path, tracked) {
        // SAFETY: as above; access(2) only reads the string.
        let exists = unsafe { libc::access(z_name, libc::F_OK) } == 0;
        if create && !exists && !log(Op::Create, p, &[]) {
            // SAFETY: `file` is ours to initialize; a null pMethods means no xClose.
            unsafe { (*file).pMethods = std::ptr::null() };
            return ffi::SQLITE_CANTOPEN;
        }
    }
    // SAFETY: `shim` is uninitialized memory of the right size and alignment (SQLite
    // allocates with 8-byte alignment; Shim needs 8).
    unsafe {
        std::ptr::write(
            shim,
            Shim {
                base: ffi::sqlite3_file {
                    pMethods: std::ptr::null(),
                },
                real,
                path,
                tracked,
                dir_sync_pending: create && flags & journals != 0,
            },
        );
        let rc = ((*st.unix).xOpen.expect("unix xOpen"))(st.unix, z_name, real, flags, out_flags);
        if (*real).pMethods.is_null() {
            // SQLite calls xClose only when pMethods is set: release what we hold now.
            (*shim).path = None;
        } else {
            (*shim).base.pMethods = &METHODS;
        }
        rc
    }
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    let st = state();
    // SAFETY: SQLite passes a NUL-terminated path.
    let name = unsafe { CStr::from_ptr(z_name) };
    let path = relative(name);
    let on_disk = Path::new(std::ffi::OsStr::from_bytes(name.to_bytes()));
    // A hard link keeps the file for the cut, so an unlink the directory never made durable
    // can be undone (renaming instead would change what other processes see; copying into
    // the log would cost the whole file, a full WAL on every last close).
    let stash = match std::fs::symlink_metadata(on_disk) {
        Ok(_) => match stash(on_disk) {
            Ok(name) => Some(name),
            Err(_) => return ffi::SQLITE_IOERR_DELETE,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => return ffi::SQLITE_IOERR_DELETE,
    };
    let existed = stash.is_some();
    let named = stash.as_deref().unwrap_or("");
    if !log(Op::Unlink { existed }, &path, named.as_bytes()) {
        return ffi::SQLITE_IOERR_DELETE;
    }
    if let Some(stash) = stash {
        let mut stashed = st.stashed.lock().unwrap_or_else(|p| p.into_inner());
        stashed.push((parent(&path).to_string(), stash));
    }
    // SAFETY: delegating with SQLite's own arguments.
    let rc = unsafe { ((*st.unix).xDelete.expect("unix xDelete"))(st.unix, z_name, sync_dir) };
    if rc == ffi::SQLITE_OK && sync_dir & 1 != 0 && !log(Op::DirSync, parent(&path), &[]) {
        return ffi::SQLITE_IOERR_DIR_FSYNC;
    }
    rc
}

/// Hard-link `file` into the stash; a copy when a link cannot be made (another file system).
fn stash(file: &Path) -> std::io::Result<String> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let root = Path::new(&state().root);
    std::fs::create_dir_all(root.join(undo::STASH_DIR))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "{}/{}-{nanos}-{}",
        undo::STASH_DIR,
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    );
    let target = root.join(&name);
    if std::fs::hard_link(file, &target).is_err() {
        std::fs::copy(file, &target)?;
    }
    Ok(name)
}

// The rest is the unix VFS's, called with the unix VFS as its first argument.

unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xAccess.expect("xAccess"))(u, z_name, flags, out) }
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    z_name: *const c_char,
    n_out: c_int,
    z_out: *mut c_char,
) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xFullPathname.expect("xFullPathname"))(u, z_name, n_out, z_out) }
}

unsafe extern "C" fn x_randomness(
    _vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xRandomness.expect("xRandomness"))(u, n, out) }
}

unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xSleep.expect("xSleep"))(u, micros) }
}

unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xCurrentTime.expect("xCurrentTime"))(u, out) }
}

unsafe extern "C" fn x_get_last_error(
    _vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xGetLastError.expect("xGetLastError"))(u, n, out) }
}

unsafe extern "C" fn x_current_time_int64(
    _vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    let u = state().unix;
    // SAFETY: delegation with SQLite's arguments.
    unsafe { ((*u).xCurrentTimeInt64.expect("xCurrentTimeInt64"))(u, out) }
}
