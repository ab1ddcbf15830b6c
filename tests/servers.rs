//! `crashlab servers`: private PostgreSQL and RabbitMQ servers a user can reach with psql,
//! killed and restarted on request, and gone when the command ends, however it ends.
//!
//! RabbitMQ takes seconds to boot, so the tests that need it start it twice in all: one run
//! that is asked everything (psql, kill and restart of both servers, a clean end), one that is
//! SIGKILLed.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{code, stderr, BIN};

/// Waiting for a server's line: RabbitMQ boots in about 5 s, far more on a loaded machine.
const LINE_WAIT: Duration = Duration::from_secs(180);
/// Waiting for processes to be gone after their parent's death.
const GONE_WAIT: Duration = Duration::from_secs(30);

/// A test's directories: `tmp` is TMPDIR of crashlab (its servers' private directories land
/// there), `work` is --work. Both are traversable by the postgres user, which PostgreSQL runs
/// as when the tests run as root.
struct Place {
    _base: tempfile::TempDir,
    tmp: PathBuf,
    work: PathBuf,
}

fn place() -> Place {
    let base = tempfile::tempdir().unwrap();
    let (tmp, work) = (base.path().join("tmp"), base.path().join("work"));
    for dir in [base.path(), &tmp, &work] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    Place {
        _base: base,
        tmp,
        work,
    }
}

/// A running `crashlab servers`: its stdin to send commands, its stdout lines as they come.
struct Servers {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    errors: mpsc::Receiver<String>,
}

fn servers(place: &Place, args: &[&str]) -> Servers {
    let mut child = Command::new(BIN)
        .arg("servers")
        .args(args)
        .arg("--work")
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .current_dir(&place.work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = |read: Box<dyn std::io::Read + Send>| {
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(read).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        receive
    };
    let lines = pipe(Box::new(child.stdout.take().unwrap()));
    let errors = pipe(Box::new(child.stderr.take().unwrap()));
    let stdin = child.stdin.take();
    Servers {
        child,
        stdin,
        lines,
        errors,
    }
}

impl Servers {
    /// The next stdout line, which must start with `prefix`.
    fn expect(&mut self, prefix: &str) -> String {
        match self.lines.recv_timeout(LINE_WAIT) {
            Ok(line) if line.starts_with(prefix) => line,
            Ok(line) => panic!(
                "expected '{prefix}…', got '{line}'; stderr: {}",
                self.stderr()
            ),
            Err(e) => panic!("no '{prefix}' line ({e}); stderr: {}", self.stderr()),
        }
    }

    /// Read lines up to `ready`; the stack file it names.
    fn ready(&mut self) -> serde_json::Value {
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            assert!(Instant::now() < deadline, "no ready line");
            let line = self.expect("");
            if let Some(path) = line.strip_prefix("ready ") {
                return common::json(Path::new(path));
            }
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn stderr(&self) -> String {
        self.errors.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// Close stdin and wait (bounded) for the exit code.
    fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + LINE_WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(50));
                return (status.code().unwrap_or(-1), self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "servers did not end after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // A failed assertion must not leave the servers running: they die with this child.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Live processes (pid, name) whose command line or current directory is under `root`:
/// every process of a private server is, whoever its parent is now.
fn processes_under(root: &Path) -> Vec<(u32, String)> {
    let root = root.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if status.is_empty() || status.contains("State:\tZ") {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cwd = std::fs::read_link(entry.path().join("cwd")).unwrap_or_default();
        if cmdline.contains(&root) || cwd.to_string_lossy().starts_with(&root) {
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            found.push((pid, name.trim().to_string()));
        }
    }
    found
}

fn names_under(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = processes_under(root).into_iter().map(|(_, n)| n).collect();
    names.sort();
    names.dedup();
    names
}

/// Wait (bounded) until no process runs under `root`; the ones left otherwise.
fn gone_under(root: &Path) -> Vec<(u32, String)> {
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        let left = processes_under(root);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// psql (the user's client) on `url`: (exit code, stdout).
fn psql(url: &str, sql: &str) -> (i32, String) {
    let output = Command::new("psql")
        .args([url, "-X", "-At", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .output()
        .expect("psql runs");
    (code(&output), common::stdout(&output))
}

const OURS: &str = "SELECT datname FROM pg_database WHERE datname LIKE 'crashlab%' ORDER BY 1";

fn amqp_port(stack: &serde_json::Value) -> u16 {
    let url = stack["amqp_url"].as_str().unwrap();
    let after = url.rsplit_once(':').unwrap().1;
    after.split('/').next().unwrap().parse().unwrap()
}

#[test]
fn both_servers_answer_psql_survive_kill_and_restart_and_end_with_stdin() {
    let place = place();
    let mut run = servers(
        &place,
        &[
            "--databases",
            "sender,receiver",
            "--queues",
            "messages",
            "--tag",
            "t1",
        ],
    );
    let stack = run.ready();
    assert_eq!(stack["stack"], "postgres-rabbitmq");
    assert_eq!(stack["queues"]["messages"], "crashlab_t1_messages");
    let sender = stack["postgres"]["sender"].as_str().unwrap().to_string();
    let (psql_code, listed) = psql(&sender, OURS);
    assert_eq!(psql_code, 0, "psql reaches the private cluster");
    assert_eq!(listed, "crashlab_t1_receiver\ncrashlab_t1_sender\n");
    assert!(accepts(amqp_port(&stack)), "the broker listens");
    let names = names_under(&place.tmp);
    for wanted in ["postgres", "beam.smp", "epmd"] {
        assert!(
            names.iter().any(|n| n == wanted),
            "{wanted} runs: {names:?}"
        );
    }
    // Data written before a kill is there after the restart.
    assert_eq!(
        psql(&sender, "CREATE TABLE t (x int); INSERT INTO t VALUES (7)").0,
        0
    );

    run.send("kill postgres");
    run.expect("killed postgres");
    let names = names_under(&place.tmp);
    assert!(
        !names.iter().any(|n| n == "postgres"),
        "no postgres left: {names:?}"
    );
    assert_ne!(
        psql(&sender, "SELECT 1").0,
        0,
        "a killed server answers nothing"
    );
    run.send("restart postgres");
    run.expect("restarted postgres wall_ms=");
    assert_eq!(psql(&sender, "SELECT x FROM t"), (0, "7\n".to_string()));

    run.send("kill rabbitmq");
    run.expect("killed rabbitmq");
    let names = names_under(&place.tmp);
    assert!(
        !names.iter().any(|n| n == "beam.smp"),
        "no node left: {names:?}"
    );
    assert!(!accepts(amqp_port(&stack)), "nothing listens");
    run.send("restart rabbitmq");
    run.expect("restarted rabbitmq wall_ms=");
    assert!(accepts(amqp_port(&stack)), "the broker listens again");

    run.send("startups");
    let startups: serde_json::Value = serde_json::from_str(&run.expect("[")).unwrap();
    for startup in startups.as_array().unwrap() {
        assert_eq!(startup["private"], true, "{startup}");
        assert_eq!(startup["restart_wall_ms"].as_array().unwrap().len(), 1);
    }

    let (exit, errors) = run.finish();
    assert_eq!(exit, 0, "{errors}");
    assert_eq!(
        gone_under(&place.tmp),
        vec![],
        "no server outlives the command"
    );
    assert!(
        !place.work.join("stack.json").exists(),
        "stack.json removed"
    );
    assert_eq!(
        std::fs::read_dir(&place.tmp).unwrap().count(),
        0,
        "the servers' private directory removed"
    );
}

#[test]
fn a_sigkilled_crashlab_leaves_no_server_behind() {
    let place = place();
    let mut run = servers(&place, &["--databases", "a", "--queues", "q"]);
    run.ready();
    let names = names_under(&place.tmp);
    assert!(names.iter().any(|n| n == "beam.smp"), "{names:?}");
    assert!(names.iter().any(|n| n == "postgres"), "{names:?}");
    run.child.kill().unwrap(); // SIGKILL: no handler, no Drop runs in crashlab.
    run.child.wait().unwrap();
    assert_eq!(
        gone_under(&place.tmp),
        vec![],
        "every server died with crashlab"
    );
}

/// Does something accept a TCP connection on 127.0.0.1:`port`?
fn accepts(port: u16) -> bool {
    let addr = ([127, 0, 0, 1], port).into();
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
}

/// A port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `crashlab servers …` to its end with stdin closed: (exit code, stderr).
fn servers_once(place: &Place, args: &[&str], env: &[(&str, &Path)]) -> (i32, String) {
    let mut command = Command::new(BIN);
    command
        .arg("servers")
        .args(args)
        .arg("--work")
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .stdin(Stdio::null());
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    (code(&output), stderr(&output))
}

fn nothing_left(place: &Place) {
    assert_eq!(processes_under(&place.tmp), vec![]);
    assert_eq!(
        std::fs::read_dir(&place.tmp).unwrap().count(),
        0,
        "no private dir left"
    );
    assert_eq!(
        std::fs::read_dir(&place.work).unwrap().count(),
        0,
        "no stack.json"
    );
}

#[test]
fn missing_programs_exit_69_with_the_install_command() {
    let place = place();
    let empty = tempfile::tempdir().unwrap();
    let rabbit = empty.path().join("rabbitmq-server");
    let epmd = empty.path().join("epmd");
    let cases: [(&[&str], (&str, &Path)); 3] = [
        (
            &["--databases", "a", "--queues", "q"],
            ("CRASHLAB_PG_BIN", empty.path()),
        ),
        (
            &["--databases", "a", "--queues", "q"],
            ("CRASHLAB_RABBITMQ_SERVER", &rabbit),
        ),
        (&["--queues", "q"], ("CRASHLAB_EPMD", &epmd)),
    ];
    for (args, env) in cases {
        let (exit, errors) = servers_once(&place, args, &[env]);
        assert_eq!(exit, 69, "{}: {errors}", env.0);
        assert_eq!(errors.lines().count(), 1, "{errors}");
        assert!(errors.starts_with("crashlab: "), "{errors}");
        assert!(errors.contains(env.0), "names what to set: {errors}");
        assert!(
            errors.contains("apt-get install -y postgresql rabbitmq-server"),
            "{errors}"
        );
        nothing_left(&place);
    }
}

#[test]
fn unreachable_urls_exit_69_and_start_nothing() {
    let place = place();
    let pg = format!(
        "postgres://crashlab:secret@127.0.0.1:{}/postgres",
        closed_port()
    );
    let (exit, errors) = servers_once(&place, &["--pg-url", &pg, "--databases", "a"], &[]);
    assert_eq!(exit, 69, "{errors}");
    assert!(errors.contains("--pg-url"), "{errors}");
    assert!(!errors.contains("secret"), "no password printed: {errors}");
    let amqp = format!("amqp://guest:guest@127.0.0.1:{}/%2f", closed_port());
    let (exit, errors) = servers_once(&place, &["--amqp-url", &amqp, "--queues", "q"], &[]);
    assert_eq!(exit, 69, "{errors}");
    assert!(errors.contains("--amqp-url"), "{errors}");
    // A port that accepts and never answers: the handshake's wait is bounded too.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let pg = format!("postgres://crashlab@127.0.0.1:{port}/postgres");
    let (exit, errors) = servers_once(&place, &["--pg-url", &pg, "--databases", "a"], &[]);
    assert_eq!(exit, 69, "{errors}");
    let amqp = format!("amqp://guest:guest@127.0.0.1:{port}/%2f");
    let (exit, errors) = servers_once(&place, &["--amqp-url", &amqp, "--queues", "q"], &[]);
    assert_eq!(exit, 69, "{errors}");
    nothing_left(&place);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let place = place();
    // Lab 14's default stack is SQLite files: no servers.
    let (exit, errors) = servers_once(&place, &["14"], &[]);
    assert_eq!(exit, 2, "{errors}");
    assert!(errors.contains("14"), "{errors}");
    let (exit, errors) = servers_once(&place, &[], &[]);
    assert_eq!(exit, 2, "{errors}");
    let missing = place.work.join("missing");
    let output = Command::new(BIN)
        .args(["servers", "--databases", "a", "--work"])
        .arg(&missing)
        .env("TMPDIR", &place.tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stderr(&output).contains("missing"), "{}", stderr(&output));
    nothing_left(&place);
}

#[test]
fn on_a_given_server_only_crashlab_names_are_created_and_dropped() {
    // The "user's" server: a private cluster of another run.
    let theirs = place();
    let mut owner = servers(&theirs, &["--databases", "keep", "--tag", "one"]);
    let stack = owner.ready();
    let keep = stack["postgres"]["keep"].as_str().unwrap().to_string();
    assert_eq!(psql(&keep, "CREATE DATABASE userdb").0, 0);
    let server = keep.replace("crashlab_one_keep", "postgres");

    let ours = place();
    let mut given = servers(
        &ours,
        &["--pg-url", &server, "--databases", "mine", "--tag", "two"],
    );
    let stack = given.ready();
    let mine = stack["postgres"]["mine"].as_str().unwrap().to_string();
    assert_eq!(mine, keep.replace("crashlab_one_keep", "crashlab_two_mine"));
    let all = "SELECT datname FROM pg_database ORDER BY 1";
    let (_, listed) = psql(&server, all);
    assert!(listed.contains("crashlab_two_mine\n"), "{listed}");
    // A given server is never killed: refused on stderr, and the command goes on.
    given.send("kill postgres");
    let refusal = given.errors.recv_timeout(LINE_WAIT).unwrap();
    assert!(refusal.starts_with("crashlab: postgres:"), "{refusal}");
    assert!(refusal.contains("--pg-url"), "{refusal}");
    given.send("startups");
    let startups: serde_json::Value = serde_json::from_str(&given.expect("[")).unwrap();
    assert_eq!(startups[0]["private"], false);
    assert_eq!(startups[0]["port"], serde_json::Value::Null);
    let (exit, errors) = given.finish();
    assert_eq!(exit, 0, "{errors}");
    // Its own database dropped; everything else on the server untouched, and it still runs.
    let (psql_code, listed) = psql(&server, all);
    assert_eq!(psql_code, 0);
    assert!(!listed.contains("crashlab_two_mine"), "{listed}");
    assert!(listed.contains("crashlab_one_keep\n"), "{listed}");
    assert!(listed.contains("userdb\n"), "{listed}");
    nothing_left(&ours);

    let (exit, errors) = owner.finish();
    assert_eq!(exit, 0, "{errors}");
    assert_eq!(gone_under(&theirs.tmp), vec![]);
}

#[test]
fn a_taken_port_is_told_apart_so_that_another_is_tried() {
    use crashlab::servers::{postgres, process};
    let place = place();
    let launcher = process::Launcher::new().unwrap();
    let mut cluster = postgres::Private::init(&place.tmp, &[], &launcher).unwrap();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    match cluster.start(port, &launcher) {
        Err(postgres::StartError::PortTaken) => {}
        Err(postgres::StartError::Other(e)) => panic!("not seen as a taken port: {e:#}"),
        Ok(()) => panic!("started on a port another process holds"),
    }
    assert!(!cluster.running());
    drop(held);
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    match cluster.start(port, &launcher) {
        Ok(()) => {}
        Err(postgres::StartError::PortTaken) => panic!("port {port} taken meanwhile"),
        Err(postgres::StartError::Other(e)) => panic!("{e:#}"),
    }
    assert!(cluster.running());
    cluster.kill().unwrap();
    assert_eq!(processes_under(&place.tmp), vec![]);
}

#[test]
fn sigterm_ends_the_command_cleanly() {
    let place = place();
    let mut run = servers(&place, &["--databases", "a"]);
    run.ready();
    assert!(names_under(&place.tmp).iter().any(|n| n == "postgres"));
    // SAFETY: kill has no memory effects; the child is not reaped yet, so the pid is its.
    unsafe { libc::kill(run.child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + LINE_WAIT;
    let status = loop {
        if let Some(status) = run.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "no end after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", run.stderr());
    assert_eq!(gone_under(&place.tmp), vec![]);
    nothing_left(&place);
}
