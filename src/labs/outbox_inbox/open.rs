//! The adapters' one place: each role's stores, opened on its stack (a SQLite file, or a
//! PostgreSQL database and the RabbitMQ queue that `stack.json` names), and the reader of
//! the state on each stack. A store is opened the way its role needs it: a writer creates
//! what is missing, a reader never does.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags};

use super::broker::Rabbit;
use super::inbox::Inbox;
use super::model::busy_wait;
use super::outbox::{self, Outbox};
use super::ports::Transport;
use super::queue::{Claims, Queue};
use super::schema::{PG_RECEIVER, PG_SENDER, QUEUE, RECEIVER, SENDER};
use super::stack::Stack;
use super::state::{read_queue, read_receiver, read_sender, State};
use super::variant::Variant;
use crate::fail;
use crate::store::amqp::Broker;
use crate::store::pg::{self, Session};
use crate::store::sql::{count, Sql};
use crate::store::sql_sqlite::OnSqlite;
use crate::store::{self, Access, Db, Schema};

/// A store flag's value as a logical name on the servers.
fn name(store: &Path) -> Result<&str> {
    store.to_str().ok_or_else(|| {
        fail::usage(format!(
            "store '{}' is not a name stack.json can hold",
            store.display()
        ))
    })
}

/// A SQLite file for a role that writes: its busy waits short first (`busy_wait`).
fn file(path: &Path, schema: &'static Schema, access: Access) -> Result<Db> {
    let mut db = store::open(path, schema, access)?;
    db.conn
        .busy_handler(Some(busy_wait))
        .map_err(|e| store::explain(e, schema.db, &db.shown))?;
    Ok(db)
}

/// The sender's business store, created when missing.
pub fn business(stack: Stack, at: &Path) -> Result<Box<dyn Sql>> {
    Ok(match stack {
        Stack::Sqlite => Box::new(file(at, &SENDER, Access::WriteCreate)?),
        Stack::Servers => Box::new(pg::open(name(at)?, &PG_SENDER, Session::Durable, true)?),
    })
}

/// The publisher's Outbox (which must exist: None when the servers' database holds no table
/// yet, nothing to publish) and its transport.
pub fn publisher(
    stack: Stack,
    sender: &Path,
    queue: &Path,
    variant: Variant,
) -> Result<Option<(Outbox, Box<dyn Transport>)>> {
    Ok(match stack {
        Stack::Sqlite => {
            let store = Box::new(file(sender, &SENDER, Access::Write)?);
            let queue = Queue::open(queue, Access::WriteCreate, None, true)?;
            let outbox = Outbox {
                store,
                sql: &outbox::ON_SQLITE,
            };
            Some((outbox, Box::new(queue)))
        }
        Stack::Servers => {
            let pg = pg::open(name(sender)?, &PG_SENDER, Session::Durable, false)?;
            if pg.empty {
                return Ok(None);
            }
            let outbox = Outbox {
                store: Box::new(pg),
                sql: &outbox::ON_SERVERS,
            };
            Some((outbox, Box::new(Rabbit::open(name(queue)?, variant, true)?)))
        }
    })
}

/// The consumer's transport (the queue must exist on SQLite) and its Inbox, created when
/// missing; async-commit's receiver session commits without waiting for its WAL.
pub fn consumer(
    stack: Stack,
    queue: &Path,
    receiver: &Path,
    variant: Variant,
    claims: Claims,
) -> Result<(Box<dyn Transport>, Inbox)> {
    Ok(match stack {
        Stack::Sqlite => {
            let queue = Queue::open(queue, Access::Write, Some(claims), true)?;
            let store = Box::new(file(receiver, &RECEIVER, Access::WriteCreate)?);
            (Box::new(queue), Inbox::new(store, stack, variant))
        }
        Stack::Servers => {
            let session = match variant {
                Variant::AsyncCommit => Session::AsyncCommit,
                _ => Session::Durable,
            };
            let store = Box::new(pg::open(name(receiver)?, &PG_RECEIVER, session, true)?);
            let rabbit = Rabbit::open(name(queue)?, variant, false)?;
            (Box::new(rabbit), Inbox::new(store, stack, variant))
        }
    })
}

/// A faulty upstream's way into the queue.
pub fn upstream(stack: Stack, queue: &Path) -> Result<Box<dyn Transport>> {
    Ok(match stack {
        Stack::Sqlite => Box::new(Queue::open(queue, Access::WriteCreate, None, false)?),
        Stack::Servers => Box::new(Rabbit::open(name(queue)?, Variant::Correct, true)?),
    })
}

/// The state of three SQLite files. `verify` needs the sender (every run starts there); a
/// store that does not exist otherwise reads as empty and is never created.
pub fn read_files(paths: [&Path; 3], trace: bool, sender_needed: bool) -> Result<State> {
    let mut state = State::default();
    let [sender, queue, receiver] = paths;
    let sender = match sender_needed {
        true => Some(store::open_traced(sender, &SENDER, Access::Read, trace)?),
        false => store::open_existing(sender, &SENDER, trace)?,
    };
    match sender {
        Some(mut s) => read_sender(&mut state, &mut s, "seq")?,
        None => state.absent.push("sender"),
    }
    match store::open_existing(queue, &QUEUE, trace)? {
        Some(mut q) => read_queue(&mut state, &mut q)?,
        None => state.absent.push("queue"),
    }
    match store::open_existing(receiver, &RECEIVER, trace)? {
        Some(mut r) => read_receiver(&mut state, &mut r, Stack::Sqlite)?,
        None => state.absent.push("receiver"),
    }
    Ok(state)
}

/// How long a queue an Outbox row was sent to may take to reappear after a broker restart,
/// and how often it is looked for meanwhile.
const QUEUE_BACK_WAIT_MS: u64 = 10_000;
const QUEUE_LOOK_EVERY_MS: u64 = 100;

/// The state on the servers `stack.json` in `dir` names: both databases in read-only
/// sessions (traced when `dir` is the role's own), the queue's ready messages by a passive
/// declare, which changes nothing. A restarted broker opens its port before every durable
/// queue is recovered, answering "no such queue" meanwhile: with `wait`, a queue an Outbox
/// row was sent to is looked for again until it is back (bounded), never read as empty.
pub fn read_servers(dir: &Path, names: [&Path; 3], wait: bool) -> Result<State> {
    let mut state = State::default();
    let [sender, queue, receiver] = names;
    let mut s = pg::open_in(dir, name(sender)?, &PG_SENDER, Session::ReadOnly, false)?;
    match s.empty {
        true => state.absent.push("sender"),
        false => read_sender(&mut state, &mut s, "message_id")?,
    }
    let mut r = pg::open_in(dir, name(receiver)?, &PG_RECEIVER, Session::ReadOnly, false)?;
    match r.empty {
        true => state.absent.push("receiver"),
        false => read_receiver(&mut state, &mut r, Stack::Servers)?,
    }
    let declared = wait && state.outbox.iter().any(|r| r.status == "sent");
    let looks = if declared {
        QUEUE_BACK_WAIT_MS / QUEUE_LOOK_EVERY_MS
    } else {
        1
    };
    for look in 0..looks {
        let mut broker = Broker::open_in(dir, name(queue)?, false, false)?;
        let count = broker.ready()?;
        broker.close()?;
        match count {
            Some(n) => {
                state.ready = i64::from(n);
                return Ok(state);
            }
            None if look + 1 < looks => {
                std::thread::sleep(Duration::from_millis(QUEUE_LOOK_EVERY_MS))
            }
            None => {}
        }
    }
    if declared {
        anyhow::bail!(
            "queue {}: not back {QUEUE_BACK_WAIT_MS} ms after the publisher declared it (a durable queue is lost?)",
            queue.display()
        );
    }
    state.absent.push("queue");
    Ok(state)
}

/// The state of a load run on the servers, from the SQLite copies `settle` made of its final
/// rows and of the messages left in its queue (`names`: sender, queue, receiver).
pub fn read_settled(work: &Path, names: [&str; 3]) -> Result<State> {
    let open = |name: &str| -> Result<Connection> {
        let path = work.join(name);
        anyhow::ensure!(path.is_file(), "{} is missing", path.display());
        Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .with_context(|| format!("opening {}", path.display()))
    };
    let [sender, queue, receiver] = names.map(open);
    let (sender, queue, receiver) = (sender?, queue?, receiver?);
    let view = |conn, db| OnSqlite {
        conn,
        db,
        shown: db,
    };
    let mut state = State::default();
    read_sender(&mut state, &mut view(&sender, "sender"), "message_id")?;
    read_receiver(&mut state, &mut view(&receiver, "receiver"), Stack::Servers)?;
    state.ready = count(
        &mut view(&queue, "queue"),
        "SELECT count(*) FROM messages",
        &[],
    )?;
    Ok(state)
}

/// The state on the audit's replayed SQLite files (by the argv flag that names each).
pub fn read_replayed(dbs: &crate::engine::Databases<'_>) -> Result<State, String> {
    let view = |db| {
        dbs.get(db).map(|conn| OnSqlite {
            conn,
            db,
            shown: "replay",
        })
    };
    let mut state = State::default();
    let mut sender = view("sender").ok_or("the replay has no sender database for it to read")?;
    let mut read = |state: &mut State| -> Result<()> {
        read_sender(state, &mut sender, "seq")?;
        match view("queue") {
            Some(mut q) => read_queue(state, &mut q)?,
            None => state.absent.push("queue"),
        }
        match view("receiver") {
            Some(mut r) => read_receiver(state, &mut r, Stack::Sqlite)?,
            None => state.absent.push("receiver"),
        }
        Ok(())
    };
    read(&mut state).map_err(|e| format!("reading the replayed files: {e}"))?;
    Ok(state)
}
