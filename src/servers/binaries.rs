//! Where the server programs are, and the user a private PostgreSQL runs as.
//!
//! Defaults are the Debian/Ubuntu packages' places; each can be moved by the environment
//! (`CRASHLAB_PG_BIN`: the directory of `initdb` and `postgres`; `CRASHLAB_RABBITMQ_SERVER`:
//! the `rabbitmq-server` script; `CRASHLAB_EPMD`: the `epmd` program). A missing program
//! exits 69 with the command that installs it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::fail;

/// The one command that installs both servers on a fresh Debian or Ubuntu machine.
pub const INSTALL: &str = "apt-get install -y postgresql rabbitmq-server";

fn missing(what: &str, place: &Path, env: &str) -> anyhow::Error {
    fail::unavailable(format!(
        "{what} not found at {} (set {env} to move it); install the servers with: {INSTALL}",
        place.display()
    ))
}

fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The directory holding `initdb` and `postgres`: `CRASHLAB_PG_BIN`, else the newest
/// `/usr/lib/postgresql/<major>/bin`.
pub fn postgres_bin() -> Result<PathBuf> {
    let dir = match std::env::var_os("CRASHLAB_PG_BIN") {
        Some(dir) => PathBuf::from(dir),
        None => newest_postgresql().unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql")),
    };
    for program in ["initdb", "postgres"] {
        if !executable(&dir.join(program)) {
            return Err(missing(
                &format!("PostgreSQL's {program}"),
                &dir,
                "CRASHLAB_PG_BIN",
            ));
        }
    }
    Ok(dir)
}

/// `/usr/lib/postgresql/<N>/bin` with the highest N that has `postgres`.
fn newest_postgresql() -> Option<PathBuf> {
    let entries = std::fs::read_dir("/usr/lib/postgresql").ok()?;
    entries
        .flatten()
        .filter_map(|e| {
            let major: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            executable(&bin.join("postgres")).then_some((major, bin))
        })
        .max()
        .map(|(_, bin)| bin)
}

/// The `rabbitmq-server` script: `CRASHLAB_RABBITMQ_SERVER`, else the package's.
pub fn rabbitmq_server() -> Result<PathBuf> {
    let path = match std::env::var_os("CRASHLAB_RABBITMQ_SERVER") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from("/usr/lib/rabbitmq/bin/rabbitmq-server"),
    };
    if !executable(&path) {
        return Err(missing(
            "RabbitMQ's rabbitmq-server",
            &path,
            "CRASHLAB_RABBITMQ_SERVER",
        ));
    }
    Ok(path)
}

/// Erlang's port mapper: `CRASHLAB_EPMD`, else `epmd` of the Erlang runtime.
pub fn epmd() -> Result<PathBuf> {
    let path = match std::env::var_os("CRASHLAB_EPMD") {
        Some(path) => PathBuf::from(path),
        None => ["/usr/bin/epmd", "/usr/lib/erlang/bin/epmd"]
            .iter()
            .map(PathBuf::from)
            .find(|p| executable(p))
            .unwrap_or_else(|| PathBuf::from("/usr/bin/epmd")),
    };
    if !executable(&path) {
        return Err(missing("Erlang's epmd", &path, "CRASHLAB_EPMD"));
    }
    Ok(path)
}

/// The RabbitMQ release's version, from the directory its script lives in
/// (`rabbitmq_server-3.10.8/sbin`); `unknown` when the layout is another.
pub fn rabbitmq_version(script: &Path) -> String {
    let real = std::fs::canonicalize(script).unwrap_or_else(|_| script.to_path_buf());
    real.ancestors()
        .filter_map(|a| a.file_name()?.to_str()?.strip_prefix("rabbitmq_server-"))
        .next()
        .map_or_else(|| "unknown".to_string(), str::to_string)
}

/// (uid, gid) of `postgres` when crashlab runs as root (initdb and postgres refuse root);
/// None otherwise: the servers run as crashlab's own user.
pub fn server_user() -> Result<Option<(u32, u32)>> {
    if !rustix::process::geteuid().is_root() {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() >= 4 && fields[0] == "postgres" {
            let uid = fields[2].parse().context("the postgres user's uid")?;
            let gid = fields[3].parse().context("the postgres user's gid")?;
            return Ok(Some((uid, gid)));
        }
    }
    Err(fail::unavailable(format!(
        "running as root, PostgreSQL needs its own user 'postgres', which does not exist; the package creates it: {INSTALL}"
    )))
}

/// Let the server's user pass through `dir` (o+x, no listing) and check that it can reach
/// `dir` at all: every ancestor must be traversable by others.
pub fn let_traverse(dir: &Path) -> Result<()> {
    let mut permissions = std::fs::metadata(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .permissions();
    permissions.set_mode(permissions.mode() | 0o001);
    std::fs::set_permissions(dir, permissions)
        .with_context(|| format!("letting the postgres user into {}", dir.display()))?;
    let absolute = std::fs::canonicalize(dir)?;
    for ancestor in absolute.ancestors().skip(1) {
        let mode = std::fs::metadata(ancestor)?.permissions().mode();
        if mode & 0o001 == 0 {
            return Err(fail::usage(format!(
                "{} is not traversable by the postgres user (PostgreSQL refuses to run as root); \
                 keep the servers' directory under one others may pass through, such as /tmp",
                ancestor.display()
            )));
        }
    }
    Ok(())
}
