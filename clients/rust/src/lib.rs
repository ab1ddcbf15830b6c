//! crashlab's point protocol for Rust (std only; docs/own-system.md). Call
//! `crashlab_point::point("relay.after-publish")` where a crash matters: under crashlab it
//! appends one JSON line to `$CRASHLAB_EVENTS` in one write(2), and crashes there when
//! `$CRASHLAB_CRASH_AT` names this point and hit, as `$CRASHLAB_CRASH_MODE` says.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

static HITS: Mutex<Option<HashMap<String, u32>>> = Mutex::new(None);

fn event(path: &str, json: String) {
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(format!("{json}\n").as_bytes());
    }
}

/// Announce the point `name` (no quotes, no backslashes in it); crash here when armed.
pub fn point(name: &str) {
    let mut hits = HITS.lock().unwrap_or_else(|p| p.into_inner());
    let count = hits.get_or_insert_with(HashMap::new);
    let hit = *count
        .entry(name.to_string())
        .and_modify(|h| *h += 1)
        .or_insert(1);
    let path = std::env::var("CRASHLAB_EVENTS").ok();
    if let Some(path) = &path {
        let line = format!(r#"{{"event":"point","point":"{name}","hit":{hit}}}"#);
        event(path, line);
    }
    let armed = std::env::var("CRASHLAB_CRASH_AT").unwrap_or_default();
    let (at, n) = armed.split_once('@').unwrap_or((&armed, "1"));
    if at != name || n.parse() != Ok(hit) {
        return;
    }
    let mode = std::env::var("CRASHLAB_CRASH_MODE").unwrap_or_else(|_| "exit".into());
    if let Some(path) = &path {
        let crash = format!(r#"{{"event":"crash","point":"{name}","hit":{hit},"mode":"{mode}"}}"#);
        event(path, crash);
    }
    let _ = std::io::stdout().flush();
    match mode.as_str() {
        "abort" => std::process::abort(),
        "kill" => {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &std::process::id().to_string()])
                .status();
        }
        "hang" => std::thread::sleep(std::time::Duration::from_secs(3600)),
        _ => {}
    }
    std::process::exit(73)
}
