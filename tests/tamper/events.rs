//! Tampers of the events files: each process's `<step>.events.jsonl` is evidence like its
//! stdout, bound to it line by line, so an edit there alone fails the audit and names it.

use super::support::*;

pub fn lab14() -> Vec<Tamper> {
    vec![
        tamper(
            "events: a commit's amount changed",
            &["consume-crash.events.jsonl"],
            false,
            |d| {
                replace(
                    d,
                    "consume-crash.events.jsonl",
                    "(+25 to R1)",
                    "(+26 to R1)",
                )
            },
        ),
        tamper(
            "events: the crash event removed",
            &["publish-crash.events.jsonl"],
            false,
            |d| {
                let path = d.join("publish-crash.events.jsonl");
                let text = std::fs::read_to_string(&path).unwrap();
                let kept: String = text
                    .lines()
                    .filter(|l| !l.contains("\"event\":\"crash\""))
                    .map(|l| format!("{l}\n"))
                    .collect();
                assert_ne!(kept, text, "the crash event is there to remove");
                std::fs::write(&path, kept).unwrap();
            },
        ),
        tamper(
            "events: an end event's exit changed",
            &["after-business.events.jsonl"],
            false,
            |d| {
                replace(
                    d,
                    "after-business.events.jsonl",
                    "{\"event\":\"end\",\"code\":0}",
                    "{\"event\":\"end\",\"code\":1}",
                )
            },
        ),
        tamper(
            "events: a prose line slipped in",
            &["publish-recover.events.jsonl"],
            false,
            |d| {
                let path = d.join("publish-recover.events.jsonl");
                let mut text = std::fs::read_to_string(&path).unwrap();
                text.push_str("COMMITTED queue delivery of message M2\n");
                std::fs::write(&path, text).unwrap();
            },
        ),
        tamper(
            "results: the duplicate delivery dropped from the anomalies",
            &["results.json"],
            false,
            |d| {
                edit_json(d, "results.json", |v| {
                    let anomalies = v["scenarios"][0]["anomalies"].as_array_mut().unwrap();
                    assert!(!anomalies.is_empty(), "the run has a duplicate delivery");
                    anomalies.clear();
                })
            },
        ),
        tamper(
            "results: a scenario's bad anomalies said expected",
            &["results.json"],
            false,
            |d| {
                edit_json(d, "results.json", |v| {
                    v["scenarios"][0]["expected_anomalies"] = serde_json::json!(["duplicate"]);
                })
            },
        ),
        tamper(
            "events: a file removed",
            &["final-verify.events.jsonl"],
            false,
            |d| std::fs::remove_file(d.join("final-verify.events.jsonl")).unwrap(),
        ),
    ]
}
