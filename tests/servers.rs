//! `crashlab servers`: private PostgreSQL and RabbitMQ servers a user can reach with psql,
//! killed and restarted on request, and gone when the command ends, however it ends (initdb's
//! own children too, and the servers' directory is swept by the next run). One owner per
//! `--work`; a bounded stdin line.
//!
//! RabbitMQ takes seconds to boot, so the tests that need it start it twice in all: one run
//! that is asked everything (psql, kill and restart of both servers, a clean end), one that is
//! SIGKILLed.

mod common;
#[path = "servers/harness.rs"]
mod harness;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{code, stderr, BIN};
use harness::*;

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

    let (files, segments) = pg_shared_memory(&place.tmp);
    assert!(
        !files.is_empty() && segments.len() == 1,
        "{files:?} {segments:?}"
    );
    run.send("kill postgres");
    run.expect("killed postgres");
    // A SIGKILLed postmaster cannot free its shared memory: crashlab does.
    assert_eq!(shared_memory_left(&files, &segments), Vec::<String>::new());
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
    // A second kill finds nothing running, and says so (on stderr) instead of `killed`.
    run.send("kill postgres");
    run.send("restart postgres");
    run.expect("restarted postgres wall_ms=");
    assert_eq!(psql(&sender, "SELECT x FROM t"), (0, "7\n".to_string()));

    // A durable queue with a persistent, confirmed message: what a broker restart keeps.
    assert_eq!(amqp(&stack, true), 1);
    // RabbitMQ 3.10 writes a queue's declaration (its Mnesia record) to disk a moment after
    // declare-ok: a node SIGKILLed at once came back without the queue here (and so without
    // its confirmed message); one second later it kept both. This test is about the restart,
    // not that window: it waits past it.
    std::thread::sleep(Duration::from_secs(2));

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
    assert_eq!(
        amqp(&stack, false),
        1,
        "the restarted node kept its queue and message"
    );

    run.send("startups");
    let startups: serde_json::Value = serde_json::from_str(&run.expect("[")).unwrap();
    for startup in startups.as_array().unwrap() {
        assert_eq!(startup["private"], true, "{startup}");
        assert_eq!(startup["restart_wall_ms"].as_array().unwrap().len(), 1);
    }

    let (files, segments) = pg_shared_memory(&place.tmp);
    let (exit, errors) = run.finish();
    assert_eq!(exit, 0, "{errors}");
    assert!(errors.contains("postgres is not running"), "{errors}");
    assert_eq!(shared_memory_left(&files, &segments), Vec::<String>::new());
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
    let (files, segments) = pg_shared_memory(&place.tmp);
    assert!(
        !files.is_empty() && segments.len() == 1,
        "{files:?} {segments:?}"
    );
    run.child.kill().unwrap(); // SIGKILL: no handler, no Drop runs in crashlab.
    run.child.wait().unwrap();
    assert_eq!(
        gone_under(&place.tmp),
        vec![],
        "every server died with crashlab"
    );
    // The postmaster got SIGQUIT: its immediate shutdown freed its shared memory.
    assert_eq!(shared_memory_left(&files, &segments), Vec::<String>::new());
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
    // Lab 13 runs on SQLite files only, and lab 14's sqlite stack needs no servers.
    let (exit, errors) = servers_once(&place, &["13"], &[]);
    assert_eq!(exit, 2, "{errors}");
    assert!(errors.contains("13"), "{errors}");
    let (exit, errors) = servers_once(&place, &["14", "--stack", "sqlite"], &[]);
    assert_eq!(exit, 2, "{errors}");
    assert!(errors.contains("sqlite"), "{errors}");
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
    // Names are checked before anything starts: with PostgreSQL's programs missing, a bad tag
    // or a name given twice is the answer (2), not the missing programs (69).
    let nowhere = place.tmp.join("nowhere");
    let env: &[(&str, &Path)] = &[("CRASHLAB_PG_BIN", &nowhere)];
    let (exit, errors) = servers_once(&place, &["--databases", "a", "--tag", "Bad"], env);
    assert_eq!(exit, 2, "{errors}");
    assert!(errors.contains("'Bad'"), "{errors}");
    let (exit, errors) = servers_once(&place, &["--databases", "a,b", "--queues", "a"], env);
    assert_eq!(exit, 2, "{errors}");
    assert!(errors.contains("'a' is named twice"), "{errors}");
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

/// On the stack's broker: declare its queue durable and, when `publish`, publish one
/// persistent message and wait for its confirm; the queue's message count.
fn amqp(stack: &serde_json::Value, publish: bool) -> u32 {
    use lapin::options::{BasicPublishOptions, ConfirmSelectOptions, QueueDeclareOptions};
    let url = stack["amqp_url"].as_str().unwrap().to_string();
    let queue = stack["queues"]["messages"].as_str().unwrap().to_string();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let connecting = lapin::Connection::connect(&url, Default::default());
        let connection = tokio::time::timeout(Duration::from_secs(30), connecting)
            .await
            .expect("an AMQP handshake within 30 s")
            .unwrap();
        let channel = connection.create_channel().await.unwrap();
        let declare = |passive| QueueDeclareOptions {
            durable: true,
            passive,
            ..Default::default()
        };
        if publish {
            channel
                .queue_declare(queue.as_str().into(), declare(false), Default::default())
                .await
                .unwrap();
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await
                .unwrap();
            let properties = lapin::BasicProperties::default().with_delivery_mode(2);
            let confirm = channel
                .basic_publish(
                    "".into(),
                    queue.as_str().into(),
                    BasicPublishOptions::default(),
                    b"m1",
                    properties,
                )
                .await
                .unwrap();
            assert!(confirm.await.unwrap().is_ack(), "the broker confirmed");
        }
        let declared = channel
            .queue_declare(queue.as_str().into(), declare(true), Default::default())
            .await
            .unwrap();
        let _ = connection.close(200, "done".into()).await;
        declared.message_count()
    })
}

#[test]
fn sigterm_while_a_node_boots_ends_at_once_with_130_and_no_ready_line() {
    // A node that never becomes ready (a rabbitmq-server that only sleeps): before, the
    // command waited out its whole readiness bound and then printed `ready`.
    let place = place();
    let fake = tempfile::tempdir().unwrap();
    let pid_file = fake.path().join("pid");
    let script = fake.path().join("rabbitmq-server");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 300\n",
            pid_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = Command::new(BIN)
        .args(["servers", "--queues", "q", "--work"])
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .env("CRASHLAB_RABBITMQ_SERVER", &script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LINE_WAIT;
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        assert!(Instant::now() < deadline, "the node never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let node: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill has no memory effects; the child is not reaped yet, so the pid is its.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + LINE_WAIT;
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "no end after SIGTERM while booting"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(!printed.contains("ready"), "{printed}");
    let deadline = Instant::now() + LINE_WAIT;
    while Path::new(&format!("/proc/{node}")).exists()
        && !std::fs::read_to_string(format!("/proc/{node}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
    {
        assert!(
            Instant::now() < deadline,
            "the booting node outlived the command"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    nothing_left(&place);
}

/// The entries of a directory, by name.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn driver_in(place: &Place, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("driver")
        .args(args)
        .current_dir(&place.work)
        .env("TMPDIR", &place.tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
}

/// initdb forks the postgres that builds the cluster, which PR_SET_PDEATHSIG on initdb
/// alone leaves running when crashlab dies. Here `initdb` is a script of that shape whose
/// child works for ten minutes (the real one's ends within seconds, so only a child that
/// does not end by itself tells whether it was killed): after a SIGKILL of crashlab it is
/// gone, with its whole process group. The servers' directory is swept by the next run.
#[test]
fn initdbs_children_die_with_crashlab_and_its_directory_is_swept() {
    use std::os::unix::fs::PermissionsExt;
    let place = place();
    let bin = place.work.parent().unwrap().join("bin");
    let shared = place.work.parent().unwrap().join("shared");
    for dir in [&bin, &shared] {
        fs::create_dir(dir).unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(0o777)).unwrap();
    }
    let initdb = bin.join("initdb");
    fs::write(
        &initdb,
        "#!/bin/sh\nsleep 600 &\necho $! > \"$CRASHLAB_TEST_CHILD.tmp\"\nmv \"$CRASHLAB_TEST_CHILD.tmp\" \"$CRASHLAB_TEST_CHILD\"\nwait\n",
    )
    .unwrap();
    fs::set_permissions(&initdb, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("/bin/true", bin.join("postgres")).unwrap();
    let child_file = shared.join("child");
    let mut run = Command::new(BIN)
        .args(["servers", "--databases", "a", "--work"])
        .arg(&place.work)
        .env("TMPDIR", &place.tmp)
        .env("CRASHLAB_PG_BIN", &bin)
        .env("CRASHLAB_TEST_CHILD", &child_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LINE_WAIT;
    let pid: i32 = loop {
        if let Ok(text) = fs::read_to_string(&child_file) {
            break text.trim().parse().unwrap();
        }
        assert!(Instant::now() < deadline, "initdb never started its child");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(alive(pid));
    run.kill().unwrap();
    run.wait().unwrap();
    let deadline = Instant::now() + GONE_WAIT;
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(pid);
    if survived {
        // SAFETY: kill has no memory effects; the test leaves nothing running.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!survived, "initdb's child {pid} outlived crashlab");

    let left = names(&place.tmp);
    assert!(
        left.len() == 1 && left[0].starts_with("crashlab-servers-"),
        "{left:?}"
    );
    let out = driver_in(&place, &["14", "--out", "next"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sweep: removed ") && stderr(&out).contains(&left[0]),
        "{}",
        stderr(&out)
    );
    assert!(names(&place.tmp).is_empty(), "{:?}", names(&place.tmp));
}

/// One `--work`, one owner: a second `servers` there is refused in one line (75) before it
/// starts anything, and the first keeps its stack.json. A megabyte on one stdin line is
/// refused with an echo of its head only, and the servers go on answering; `kill` and
/// `restart` of a server the stack lacks are refused in the same words.
#[test]
fn servers_own_their_work_directory_and_bound_their_stdin() {
    let place = place();
    let mut run = servers(&place, &["--databases", "a"]);
    run.ready();
    let stack = fs::read(place.work.join("stack.json")).unwrap();
    let (exit, errors) = servers_once(&place, &["--databases", "b"], &[]);
    assert_eq!(exit, 75, "{errors}");
    assert_eq!(errors.lines().count(), 1, "{errors}");
    assert!(
        errors.starts_with("crashlab: --work ")
            && errors.contains("is in use by another crashlab servers"),
        "{errors}"
    );
    assert_eq!(fs::read(place.work.join("stack.json")).unwrap(), stack);

    run.send(&"A".repeat(1 << 20));
    let refusal = run.errors.recv_timeout(LINE_WAIT).unwrap();
    assert!(
        refusal
            .starts_with("crashlab: a command of 1048576 bytes is refused (at most 4096): 'AAAA")
            && refusal.ends_with("…'")
            && refusal.len() < 200,
        "{} bytes: {}",
        refusal.len(),
        &refusal[..refusal.len().min(200)]
    );
    for verb in ["kill", "restart"] {
        run.send(&format!("{verb} rabbitmq"));
        let said = run.errors.recv_timeout(LINE_WAIT).unwrap();
        assert_eq!(said, "crashlab: rabbitmq: this stack has no such server");
    }
    run.send("startups");
    run.expect("[");
    let (exit, errors) = run.finish();
    assert_eq!(exit, 0, "{errors}");
    nothing_left(&place);
}
