//! The servers of a lab file's stores: one PostgreSQL server and one RabbitMQ broker per
//! command, each private to it or given by URL (`--pg-url`, `--amqp-url`), started only when
//! a store lives there. Every scenario run gets a database of its own per PostgreSQL store,
//! made from its schema, and a queue of its own per RabbitMQ store; both go when the run
//! ends. Before each check step and at the end, each is read back into a SQLite copy in the
//! run's directory, so that the checks, the invariants and the audit need no server.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

use super::lab::{StoreDef, StoreKind, UserLab};
use crate::fail;
use crate::servers::{self, names, Servers, Want};

/// The servers of one command's runs.
pub struct Server {
    // Held for its drop, which stops the private servers. Fields drop in this order: the
    // servers before the directory that holds their files.
    _servers: Servers,
    pg_url: Option<String>,
    amqp_url: Option<String>,
    _dir: tempfile::TempDir,
    /// Scenario runs made so far: each run's databases and queues are named for its number.
    runs: AtomicU64,
    /// Random, drawn once: two crashlabs on one server (in other PID namespaces, the same
    /// pid) never name a database or a queue alike.
    tag: String,
}

impl Server {
    /// The servers `lab`'s stores live on: each private, or the one its URL gives. None when
    /// every store is a SQLite file. A URL for a server no store lives on is refused (exit 2),
    /// not ignored.
    pub fn start(
        lab: &UserLab,
        pg_url: Option<&str>,
        amqp_url: Option<&str>,
    ) -> Result<Option<Server>> {
        let has = |kind| lab.stores.iter().any(|s| s.kind == kind);
        let (postgres, rabbitmq) = (has(StoreKind::Postgres), has(StoreKind::Rabbitmq));
        for (given, needed, option, store) in [
            (pg_url, postgres, "--pg-url", "PostgreSQL store"),
            (amqp_url, rabbitmq, "--amqp-url", "RabbitMQ store"),
        ] {
            if given.is_some() && !needed {
                return Err(fail::usage(format!(
                    "{option}: the lab file has no {store}"
                )));
            }
        }
        if !postgres && !rabbitmq {
            return Ok(None);
        }
        // SIGINT while a server starts ends the start cleanly (exit 130), nothing left.
        crate::interrupt::catch().context("catching SIGINT and SIGTERM")?;
        // A lab file's steps crash roles, never a server: what it acknowledged stays visible
        // to every later session whether or not it reached the disk, so a private PostgreSQL
        // server skips the flushes.
        let want = Want {
            postgres,
            rabbitmq,
            pg_url,
            amqp_url,
            pg_settings: super::postgres::SETTINGS,
            ..Want::default()
        };
        // In memory where the machine has /dev/shm: a database made per run costs 10 ms
        // there against 200–350 ms on a disk, flushes off either way.
        let shm = Path::new("/dev/shm");
        let root = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => std::env::temp_dir(),
        };
        let dir = crate::owner::tempdir_in("servers", &root)
            .context("creating the servers' directory")?;
        let servers = Servers::start(&want, dir.path())?;
        // The servers are this process's children, as the roles' orphans are: not a sweep's.
        for pid in servers.pids() {
            crate::engine::process::spare(pid);
        }
        let server = Server {
            pg_url: servers.pg_url(),
            amqp_url: servers.amqp_url(),
            _servers: servers,
            _dir: dir,
            runs: AtomicU64::new(0),
            tag: {
                use std::hash::{BuildHasher, Hasher};
                let random = std::collections::hash_map::RandomState::new()
                    .build_hasher()
                    .finish();
                format!("l{random:016x}")
            },
        };
        server.prepare_queries(lab)?;
        Ok(Some(server))
    }

    /// Prepare (not run) every check and invariant query on copies of freshly made stores,
    /// before any role runs: what `lab check` does on the other stores alone, which it cannot
    /// do for a PostgreSQL store without the server. A refused query is one line
    /// `FILE:LINE:COL`, exit 2. Where a store has no schema, its role makes the tables, and
    /// the queries meet them at run time.
    fn prepare_queries(&self, lab: &UserLab) -> Result<()> {
        let unknown = |s: &StoreDef| s.kind != StoreKind::Rabbitmq && s.schema.is_none();
        if !lab.stores.iter().any(|s| s.kind == StoreKind::Postgres)
            || lab.stores.iter().any(unknown)
        {
            return Ok(());
        }
        let dir = crate::owner::tempdir("check").context("making a directory to check in")?;
        drop(super::stores::attach(dir.path(), &lab.stores, true)?);
        self.make(&lab.stores)?
            .read_back(dir.path(), &lab.stores, true)?;
        let conn = super::stores::attach(dir.path(), &lab.stores, false)?;
        match super::check::refused_query(&conn, &lab.checks, &lab.invariants) {
            Some((at, e)) => Err(fail::usage(format!(
                "{}:{}: SQLite refuses the query on the stores' copies: {e}",
                lab.path.display(),
                super::check::line_col(&lab.text, at)
            ))),
            None => Ok(()),
        }
    }

    /// A fresh database (made from its schema) or queue for each store of one scenario run
    /// that lives on a server.
    pub fn make(&self, stores: &[StoreDef]) -> Result<Made> {
        // Runs made at once on several threads (explore --jobs) each take their own number.
        let run = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        let mut made = Made {
            pg_url: self.pg_url.clone(),
            amqp_url: self.amqp_url.clone(),
            places: Vec::new(),
        };
        let mut admin = None;
        for (i, store) in stores
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind.on_server())
        {
            let name = names::of(&format!("{}_{run}", self.tag), &format!("s{i}"))?;
            let pg_url = || self.pg_url.as_deref().expect("started for this store");
            // The URL before the database: a URL that cannot name one makes nothing.
            let url = match store.kind {
                StoreKind::Postgres => servers::postgres::database_url(pg_url(), &name)?,
                _ => self.amqp_url.clone().expect("started for this store"),
            };
            // Kept before it is made: a database or queue made, whatever fails next, goes.
            made.places.push(Place {
                store: store.name.clone(),
                kind: store.kind,
                name: name.clone(),
                url: url.clone(),
            });
            if store.kind == StoreKind::Rabbitmq {
                // Durable and classic, as a role's plain durable declare finds it.
                servers::queues::declare(&url, &[&name], Default::default())
                    .with_context(|| format!("store '{}': its queue", store.name))?;
                continue;
            }
            let admin = match &mut admin {
                Some(admin) => admin,
                None => admin.insert(servers::postgres::admin(pg_url())?),
            };
            servers::postgres::create_database(admin, &name)?;
            if let Some(schema) = &store.schema {
                let mut client = servers::postgres::admin(&url)?;
                client
                    .batch_execute(schema)
                    .with_context(|| format!("store '{}': its schema on PostgreSQL", store.name))?;
            }
        }
        Ok(made)
    }
}

/// Where one store of a scenario run lives on a server.
struct Place {
    store: String,
    kind: StoreKind,
    /// The database's or the queue's name.
    name: String,
    /// The database's URL, or the broker's.
    url: String,
}

/// One scenario run's databases and queues; dropped with it.
pub struct Made {
    pg_url: Option<String>,
    amqp_url: Option<String>,
    places: Vec<Place>,
}

impl Made {
    fn place(&self, store: &str) -> Option<&Place> {
        self.places.iter().find(|p| p.store == store)
    }

    /// What a role's command line names of `store`: `{store.NAME}` is a database's URL or the
    /// broker's, and `{store.NAME.queue}` a queue's name.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        let mut all = Vec::new();
        for p in &self.places {
            all.push((p.store.clone(), p.url.clone()));
            if p.kind == StoreKind::Rabbitmq {
                all.push((format!("{}.queue", p.store), p.name.clone()));
            }
        }
        all
    }

    /// Read each store on a server back into its SQLite file in `dir`, replacing the last
    /// copy. `quiet`: no role runs, so a queue first settles (see `queue::copy`). A store
    /// that cannot be read back is left with no copy, never the last one: the error names
    /// every such store (`store 'NAME': reading it back from KIND: why`, joined by `; `), the
    /// run records it, and the audit finds no copy that says otherwise.
    pub fn read_back(&self, dir: &Path, stores: &[StoreDef], quiet: bool) -> Result<()> {
        let mut failed: Vec<String> = Vec::new();
        for store in stores.iter().filter(|s| s.kind.on_server()) {
            let place = self
                .place(&store.name)
                .expect("made with every store on a server");
            let file = dir.join(&store.file);
            let copied = match store.kind {
                StoreKind::Postgres => super::postgres::copy(&place.url, &file),
                _ => super::queue::copy(&place.url, &place.name, &file, quiet),
            };
            let Err(e) = copied else { continue };
            let e = match super::stores::remove_copy(&file) {
                Ok(()) => e,
                Err(removing) => removing.context(format!("{e:#}")),
            };
            failed.push(format!(
                "store '{}': {} {}: {}",
                store.name,
                super::stores::UNREAD,
                store.kind.name(),
                crate::fail::one_line(&e)
            ));
        }
        match failed.is_empty() {
            true => Ok(()),
            false => Err(anyhow::anyhow!("{}", failed.join("; "))),
        }
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        // A failure leaves a crashlab_ database or queue on the server; a private server goes
        // with its directory anyway.
        let of = |kind| -> Vec<&str> {
            self.places
                .iter()
                .filter(|p| p.kind == kind)
                .map(|p| p.name.as_str())
                .collect()
        };
        let (databases, queues) = (of(StoreKind::Postgres), of(StoreKind::Rabbitmq));
        if let (Some(url), false) = (&self.pg_url, databases.is_empty()) {
            if let Ok(mut admin) = servers::postgres::admin(url) {
                for name in databases {
                    let _ = servers::postgres::drop_database(&mut admin, name);
                }
            }
        }
        if let (Some(url), false) = (&self.amqp_url, queues.is_empty()) {
            let _ = servers::queues::delete(url, &queues);
        }
    }
}
