use super::*;
use crate::engine::evidence::Process;
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    o: Options,
}

fn process(step: &str, exit: i32, signal: Option<i32>) -> Process {
    Process::chaos(step, Vec::new(), exit, signal)
}

/// A run of 40 messages with one broker kill (seed 3) that took consumer-c1.1 down.
fn run() -> (
    &'static LabStack,
    &'static dyn LoadProfile,
    Options,
    Value,
    String,
    Processes,
) {
    // A lab on a database server and a broker, with a load profile (the engine names
    // no lab: the first the registry has).
    let lab = crate::engine::registry::stacks()
        .find(|l| l.load.is_some() && l.stack.is_some_and(|d| !d.queues.is_empty()))
        .expect("a lab on servers has a load profile");
    let (def, profile) = (lab.stack.unwrap(), lab.load.unwrap());
    let o = Args::try_parse_from([
        "chaos",
        "--stack",
        def.name,
        "--messages",
        "40",
        "--seed",
        "3",
        "--server-kills",
        "1",
        "--server",
        "rabbitmq",
    ])
    .unwrap()
    .o;
    let at = server_kills::schedule(3, profile.units(40), 1)[0];
    let chaos = serde_json::json!({
        "server_kills": [{
            "kill": 1, "server": "rabbitmq", "at_units": at, "progress_units": at + 1,
            "since_start_ms": 5.0, "restart_wall_ms": 4000.0,
            "running": ["consumer-c1.1", "sender.1"]
        }],
        "server_exits": 1
    });
    let servers = serde_json::json!({
        "stack": def.name,
        "servers": [
            {"server": "postgres", "private": true, "restart_wall_ms": []},
            {"server": "rabbitmq", "private": true, "restart_wall_ms": [1100, 3900]}
        ],
        "kills": [{"server": "rabbitmq", "point": format!("chaos@{at}"), "restart_wall_ms": 3900.0}],
        "queues_settled": true
    })
    .to_string();
    let processes = Processes {
        lab: lab.full_name(),
        crashlab_version: String::new(),
        git: None,
        sqlite_version: String::new(),
        pragmas: Default::default(),
        command: Vec::new(),
        crash_mode: "sigkill".into(),
        step_timeout_ms: 1,
        moved_crashes: Vec::new(),
        total_wall_ms: 1.0,
        processes: vec![
            process("consumer-c1.1", 69, None),
            process("sender.1", 0, None),
            process("consumer-c1.2", 69, None),
        ],
    };
    (lab, profile, o, chaos, servers, processes)
}

#[test]
fn a_69_of_a_process_running_at_the_kill_is_expected_and_one_after_it_is_not() {
    let (lab, profile, o, chaos, servers, processes) = run();
    let audit = check(lab, profile, &o, &chaos, Some(&servers), &processes, &[]);
    assert!(audit.problems.is_empty(), "{:?}", audit.problems);
    assert_eq!(audit.files, [SERVERS]);
    assert_eq!(
        audit.expected("consumer-c1.1", false),
        (69, Some("server-kill".to_string()))
    );
    // Started after the broker came back: its 69 is its own failure.
    assert_eq!(audit.expected("consumer-c1.2", false), (0, None));
    assert_eq!(audit.expected("sender.1", false), (0, None));
    assert_eq!(audit.expected("sender.1", true).0, 137);
}

#[test]
fn a_kill_off_the_seed_a_wrong_count_or_a_missing_record_is_a_problem() {
    let (lab, profile, o, chaos, servers, processes) = run();
    let mut moved = chaos.clone();
    moved["server_kills"][0]["at_units"] = serde_json::json!(0);
    moved["server_exits"] = serde_json::json!(2);
    let audit = check(lab, profile, &o, &moved, Some(&servers), &processes, &[]);
    let said: Vec<&str> = audit.problems.iter().map(|(_, p)| p.as_str()).collect();
    assert!(
        said.iter().any(|p| p.contains("server_exits is 2")),
        "{said:?}"
    );
    assert!(
        said.iter().any(|p| p.contains("the seed schedules")),
        "{said:?}"
    );
    assert!(said.iter().any(|p| p.starts_with("kills [")), "{said:?}");
    let audit = check(lab, profile, &o, &chaos, None, &processes, &[]);
    assert_eq!(
        audit.problems,
        [(
            SERVERS.to_string(),
            "missing: a run on servers records them".to_string()
        )]
    );
}
