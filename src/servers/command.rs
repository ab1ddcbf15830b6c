//! `crashlab servers`: a lab's servers for a user (or a test) to poke at.
//!
//! Starts (or reaches) the servers the lab's stack needs, prepares its databases and queues
//! into `--work DIR` (`stack.json`), prints one line `ready <path of stack.json>`, then reads
//! commands on stdin (`kill postgres`, `restart rabbitmq`, `startups`) until stdin ends or
//! SIGINT / SIGTERM / SIGHUP arrives; then releases and stops everything and exits 0.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;

use super::{Kind, Servers, Want};
use crate::engine::stack::StackDef;
use crate::{fail, out};

#[derive(ClapArgs, Debug, Clone)]
pub struct Args {
    /// The lab whose stack to start (its number or name); or none, with --databases/--queues
    pub lab: Option<String>,
    /// The lab's stack, when it has more than one (postgres-rabbitmq, postgres)
    #[arg(long, value_name = "NAME", requires = "lab")]
    pub stack: Option<String>,
    /// Use this PostgreSQL server instead of starting one (crashlab only creates and drops
    /// databases named crashlab_*)
    #[arg(long, value_name = "URL")]
    pub pg_url: Option<String>,
    /// Use this RabbitMQ broker instead of starting one (crashlab only deletes queues named
    /// crashlab_*)
    #[arg(long, value_name = "URL")]
    pub amqp_url: Option<String>,
    /// An existing directory: stack.json is written there (and removed at the end)
    #[arg(long, value_name = "DIR")]
    pub work: PathBuf,
    /// Without a lab: the logical databases to create (comma-separated)
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        conflicts_with = "lab"
    )]
    pub databases: Vec<String>,
    /// Without a lab: the logical queues to name (comma-separated)
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        conflicts_with = "lab"
    )]
    pub queues: Vec<String>,
    /// The type of the queues the roles declare: classic (the default) or quorum; written into
    /// stack.json
    #[arg(long, value_enum, value_name = "TYPE")]
    pub queue_type: Option<crate::engine::stack::QueueType>,
    /// The tag in the names crashlab_<TAG>_<name>; default: s<pid>
    #[arg(long, value_name = "TAG")]
    pub tag: Option<String>,
}

/// The stack `args` asks for: the lab's, or one made of --databases and --queues.
fn stack_of(args: &Args) -> Result<&'static StackDef> {
    let Some(name) = &args.lab else {
        if args.databases.is_empty() && args.queues.is_empty() {
            return Err(fail::usage(
                "servers: name a lab on a stack, or give --databases and/or --queues",
            ));
        }
        // The process ends with this command: a stack made of the command line may live as
        // long as the process.
        let leak = |names: &[String]| -> &'static [&'static str] {
            let names: Vec<&'static str> = names
                .iter()
                .map(|n| &*Box::leak(n.clone().into_boxed_str()))
                .collect();
            Box::leak(names.into_boxed_slice())
        };
        // One logical name, one store: a repeated name would be one database made twice.
        let mut seen = std::collections::BTreeSet::new();
        for name in args.databases.iter().chain(&args.queues) {
            if !seen.insert(name.as_str()) {
                return Err(fail::usage(format!(
                    "servers: '{name}' is named twice in --databases/--queues"
                )));
            }
        }
        let name: &'static str = match (args.databases.is_empty(), args.queues.is_empty()) {
            (false, false) => "postgres-rabbitmq",
            (false, true) => "postgres",
            _ => "rabbitmq",
        };
        return Ok(Box::leak(Box::new(StackDef {
            name,
            databases: leak(&args.databases),
            queues: leak(&args.queues),
            pg_settings: &[],
        })));
    };
    let named = crate::engine::registry::find(name)?.stacks;
    let stacks: Vec<&'static StackDef> = named.iter().filter_map(|l| l.stack).collect();
    let chosen = match &args.stack {
        Some(wanted) => stacks.iter().find(|s| s.name == wanted),
        None => stacks.first(),
    };
    chosen.copied().ok_or_else(|| {
        let known: Vec<&str> = stacks.iter().map(|s| s.name).collect();
        fail::usage(format!(
            "lab {name} has no stack {}; its stacks on servers: {}",
            args.stack.as_deref().unwrap_or("on servers"),
            if known.is_empty() {
                "none (it runs on SQLite files)".to_string()
            } else {
                known.join(", ")
            }
        ))
    })
}

pub fn run(args: &Args) -> Result<i32> {
    let def = stack_of(args)?;
    if !args.work.is_dir() {
        return Err(fail::usage(format!(
            "--work {}: not an existing directory",
            args.work.display()
        )));
    }
    // One `--work`, one owner: a second `servers` would overwrite the first's stack.json and
    // remove it when it ends. The lock lasts as long as this process, however it ends.
    let owned = crate::owner::lock_for_life(&args.work).map_err(|e| {
        fail::io(format!(
            "--work {}: cannot be locked: {e}",
            args.work.display()
        ))
    })?;
    if !owned {
        return Err(fail::locked(format!(
            "--work {} is in use by another crashlab servers (its stack.json is that one's); give another directory",
            args.work.display()
        )));
    }
    let tag = args
        .tag
        .clone()
        .unwrap_or_else(|| format!("s{}", std::process::id()));
    // Every name is checked before a server starts (seconds): a bad tag is refused at once.
    for logical in def.databases.iter().chain(def.queues) {
        super::names::of(&tag, logical)?;
    }
    crate::interrupt::catch()?;
    if args.queue_type.is_some() && def.queues.is_empty() {
        return Err(fail::usage(format!(
            "--queue-type: stack {} has no queue",
            def.name
        )));
    }
    let want = Want {
        queue_type: args.queue_type.unwrap_or_default(),
        ..Want::of(def, args.pg_url.as_deref(), args.amqp_url.as_deref())
    };
    // The servers' own files live in a private temporary directory, never in --work.
    let private = crate::owner::tempdir("servers").context("creating the servers' directory")?;
    let mut servers = Servers::start(&want, private.path())?;
    let file = servers.prepare(def, &tag, &args.work)?;
    let ended = serve(&mut servers, &args.work.join(crate::stackfile::NAME));
    let released = servers.release(&file);
    let stopped = servers.stop();
    let _ = std::fs::remove_file(args.work.join(crate::stackfile::NAME));
    ended.and(released).and(stopped)?;
    Ok(fail::EXIT_OK)
}

/// Print the startups and `ready`, then answer commands until stdin ends or a signal.
fn serve(servers: &mut Servers, stack_json: &std::path::Path) -> Result<()> {
    for s in servers.startups() {
        out::say(&startup_line(&s));
    }
    out::say(&format!("ready {}", stack_json.display()));
    let (send, lines) = mpsc::channel::<Line>();
    // A reader thread: stdin has no timeout, a signal must still be noticed. It ends with
    // stdin (or with the process).
    std::thread::Builder::new()
        .name("servers-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            while let Ok(Some(line)) = read_line(&mut stdin, LINE_BYTES_MAX) {
                if send.send(line).is_err() {
                    break;
                }
            }
        })?;
    loop {
        if crate::interrupt::caught().is_some() {
            return Ok(());
        }
        match lines.recv_timeout(Duration::from_millis(100)) {
            Ok(Line::Text(line)) => answer(servers, line.trim()),
            Ok(Line::TooLong { head, bytes }) => out::warn(&format!(
                "crashlab: a command of {bytes} bytes is refused (at most {LINE_BYTES_MAX}): '{}'",
                shown(&head)
            )),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}

/// One command from stdin; a bad one is one line on stderr and the servers keep running.
fn answer(servers: &mut Servers, line: &str) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let done = match words.as_slice() {
        [] => Ok(()),
        ["startups"] => serde_json::to_string(&servers.startups())
            .map(|json| out::say(&json))
            .map_err(anyhow::Error::from),
        [verb @ ("kill" | "restart"), server] => match Kind::parse(server) {
            None => Err(fail::usage(format!(
                "unknown server '{server}' (postgres, rabbitmq)"
            ))),
            // A second kill finds nothing to kill: say so rather than `killed` again. A
            // server the stack lacks is refused by `kill` as by `restart`, in the same words.
            Some(kind) if *verb == "kill" && servers.has(kind) && !servers.running(kind) => {
                Err(fail::usage(format!(
                    "{} is not running (killed; `restart {}` starts it again)",
                    kind.name(),
                    kind.name()
                )))
            }
            Some(kind) if *verb == "kill" => servers
                .kill(kind)
                .map(|()| out::say(&format!("killed {}", kind.name()))),
            Some(kind) => servers
                .restart(kind)
                .map(|wall_ms| out::say(&format!("restarted {} wall_ms={wall_ms}", kind.name()))),
        },
        _ => Err(fail::usage(format!(
            "unknown command '{}' (kill|restart postgres|rabbitmq, startups)",
            shown(line)
        ))),
    };
    if let Err(e) = done {
        out::warn(&format!("crashlab: {}", fail::one_line(&e)));
    }
}

/// The longest command line read from stdin: a command is a few words.
const LINE_BYTES_MAX: usize = 4096;
/// The most of a bad command echoed on stderr.
const ECHO_CHARS_MAX: usize = 64;

/// One line of stdin, or what is kept of one past the bound.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    /// The first `LINE_BYTES_MAX` bytes of a line of `bytes` bytes; the rest was read and
    /// dropped, never held.
    TooLong {
        head: String,
        bytes: usize,
    },
}

/// Read one line (its newline dropped) holding at most `max` bytes of it, however long it
/// is; None at the end of input.
fn read_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Option<Line>> {
    let mut head = Vec::new();
    let mut bytes = 0usize;
    let mut read_any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            if !read_any {
                return Ok(None);
            }
            break;
        }
        read_any = true;
        let (len, newline) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(head.len());
        head.extend_from_slice(&chunk[..len.min(room)]);
        bytes += len;
        input.consume(len + usize::from(newline));
        if newline {
            break;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    Ok(Some(match bytes > max {
        true => Line::TooLong { head, bytes },
        false => Line::Text(head),
    }))
}

/// A command as echoed on stderr: its first `ECHO_CHARS_MAX` characters, `…` past them.
fn shown(command: &str) -> String {
    match command.char_indices().nth(ECHO_CHARS_MAX) {
        Some((at, _)) => format!("{}…", &command[..at]),
        None => command.to_string(),
    }
}

fn startup_line(s: &super::Startup) -> String {
    format!(
        "{} {} {} port={} start_wall_ms={}",
        s.server,
        s.version,
        if s.private { "private" } else { "given" },
        s.port.map_or_else(|| "-".to_string(), |p| p.to_string()),
        s.start_wall_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_bound_is_read_through_and_only_its_head_kept() {
        let long = "A".repeat(10_000);
        let text = format!("kill postgres\n{long}\nstartups");
        let mut input = std::io::BufReader::with_capacity(7, text.as_bytes());
        assert_eq!(
            read_line(&mut input, 16).unwrap(),
            Some(Line::Text("kill postgres".into()))
        );
        assert_eq!(
            read_line(&mut input, 16).unwrap(),
            Some(Line::TooLong {
                head: "A".repeat(16),
                bytes: 10_000
            })
        );
        assert_eq!(
            read_line(&mut input, 16).unwrap(),
            Some(Line::Text("startups".into()))
        );
        assert_eq!(read_line(&mut input, 16).unwrap(), None);
        assert_eq!(shown(&"é".repeat(100)).chars().count(), ECHO_CHARS_MAX + 1);
        assert_eq!(shown("kill"), "kill");
    }
}
