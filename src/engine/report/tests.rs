//! The pictures from evidence made here: a small lab-13-like run with a background server,
//! a crash, a readback, and text that must be escaped.

use serde_json::json;

use super::tests_output::events_of;
use crate::engine::evidence::{Process, Processes, Results, StepResult};
use crate::engine::files::FileRow;
use crate::engine::report::model::{parse_output, Evidence};
use crate::engine::report::picture::{LaneKind, MarkKind};
use crate::engine::report::{html, layout, place, render, text, timeline};

fn process(step: &str, role: &str, exit: i32, crash: Option<&str>) -> Process {
    Process {
        scenario: "s".to_string(),
        step: step.to_string(),
        argv: vec!["crashlab".to_string(), role.to_string()],
        expected_exit: exit,
        exit,
        signal: None,
        crash_point: crash.map(str::to_string),
        crash_mode: crash.map(|_| "exit".to_string()),
        stdout: format!("s/{step}.stdout.txt"),
        stderr: format!("s/{step}.stderr.txt"),
        wall_ms: 12.5,
        max_rss_kb: 1000,
        timed_out: false,
    }
}

fn row(step: &str, file: &str, digest: Option<&str>, frozen: &[&str]) -> FileRow {
    FileRow {
        scenario: "s".to_string(),
        after_step: step.to_string(),
        file: file.to_string(),
        exists: digest.is_some(),
        bytes: 0,
        sha256: digest.map(str::to_string),
        logical_sha256: digest.map(str::to_string),
        frozen: frozen.iter().map(|f| f.to_string()).collect(),
    }
}

fn result(
    step: &str,
    ok: bool,
    expected: serde_json::Value,
    observed: serde_json::Value,
) -> StepResult {
    StepResult {
        scenario: "s".to_string(),
        step: step.to_string(),
        ok,
        expected,
        observed,
        problems: if ok {
            vec![]
        } else {
            vec!["receiver.effects: expected 1, observed 2".to_string()]
        },
    }
}

/// The lab whose scenarios run a server in the background, like the run made here.
fn background_lab() -> &'static crate::engine::LabStack {
    use crate::engine::registry::{first_with, has_background};
    first_with(has_background).expect("a lab runs a server in the background")
}

/// intent; a receiver in the background; a dispatcher that commits and crashes while the
/// receiver applies the effect; a readback. The receiver makes its schema when it starts and
/// its one effect during the dispatcher's step.
fn evidence(final_ok: bool) -> Evidence {
    let lab = background_lab();
    let stdouts = [
        "POINT intent.before-commit #1\nCOMMITTED intents intent 1 key K1\n",
        "READY 1 mode=keyed\nSQL receiver COMMIT\nCOMMITTED receiver effect 1 key K1\nSTOPPED receiver <&\"'\u{1}>\n",
        "COMMITTED intents attempt 1 key K1\nRESPONSE key K1 status 200\nCOMMITTED receipts receipt key K1\nCRASH dispatcher.after-receipt-commit exit=73\n",
        "{\"receiver\":{\"effects\":1}}\n",
    ];
    let processes = vec![
        process("intent", "intent", 0, None),
        process("receiver", "receiver", 0, None),
        process(
            "dispatch-crash",
            "dispatcher",
            73,
            Some("dispatcher.after-receipt-commit"),
        ),
        process("final", "dispatch-verify", 0, None),
    ];
    let effects = if final_ok { 1 } else { 2 };
    let results = vec![
        result("intent", true, json!({"exit": 0}), json!({"exit": 0})),
        result("receiver", true, json!({"exit": 0}), json!({"exit": 0})),
        result(
            "dispatch-crash",
            true,
            json!({"exit": 73, "crash_line": "CRASH dispatcher.after-receipt-commit exit=73"}),
            json!({"exit": 73, "crash_line": true}),
        ),
        result(
            "final",
            final_ok,
            json!({"exit": 0, "stage": {"name": "s.final", "fields": {"receiver.effects": 1}}}),
            json!({"exit": 0, "readback": {"receiver": {"effects": effects}}}),
        ),
    ];
    let files = vec![
        row("intent", "intents.db", Some("i1"), &[]),
        row("intent", "receiver.db", None, &[]),
        row("intent", "receipts.db", None, &[]),
        row("receiver", "intents.db", Some("i1"), &["receiver"]),
        row("receiver", "receiver.db", Some("r0"), &["receiver"]),
        row("receiver", "receiver.db-wal", Some("w"), &["receiver"]),
        row("receiver", "receipts.db", None, &["receiver"]),
        row("dispatch-crash", "intents.db", Some("i2"), &["receiver"]),
        row("dispatch-crash", "receiver.db", Some("r1"), &["receiver"]),
        row("dispatch-crash", "receipts.db", Some("p1"), &["receiver"]),
        row("final", "intents.db", Some("i2"), &[]),
        row("final", "receiver.db", Some("r1"), &[]),
        row("final", "receipts.db", Some("p1"), &[]),
    ];
    let outputs = stdouts
        .iter()
        .zip(["", "", "", ""])
        .map(|(out, err)| parse_output(out, err, &events_of(out)))
        .collect();
    Evidence {
        processes: Processes {
            lab: lab.full_name(),
            crashlab_version: "0.1.0".to_string(),
            git: None,
            sqlite_version: "3".to_string(),
            pragmas: Default::default(),
            command: vec![
                "crashlab".to_string(),
                "driver".to_string(),
                lab.id().to_string(),
            ],
            crash_mode: "exit".to_string(),
            step_timeout_ms: 1000,
            moved_crashes: vec![],
            total_wall_ms: 50.0,
            processes,
        },
        results: Results {
            lab: lab.full_name(),
            ok: final_ok,
            steps: results,
            scenarios: Vec::new(),
        },
        files,
        outputs,
    }
}

#[test]
fn escape_leaves_no_markup_and_no_control_character() {
    let evil = "<script>&\"'\u{0}\u{1b}[31m\u{7f}\u{85}\u{fffe}\ttab";
    let escaped = text::escape(evil);
    assert!(!escaped.contains('<') && !escaped.contains('>') && !escaped.contains('"'));
    assert!(!escaped.contains('\''));
    assert!(escaped.contains("&lt;script&gt;&amp;&quot;&#39;"));
    assert!(
        escaped.chars().all(|c| !c.is_control() && c != '\u{fffe}'),
        "{escaped:?}"
    );
    // Every entity is one the XML parser knows: the text parses back to the cleaned text.
    let doc = format!("<t>{escaped}</t>");
    let parsed = roxmltree::Document::parse(&doc).expect("escaped text is XML");
    assert_eq!(
        parsed.root_element().text(),
        Some(text::clean(evil).as_str())
    );
}

#[test]
fn widths_are_conservative_and_truncation_keeps_the_bound() {
    assert_eq!(text::columns("abc"), 3);
    assert_eq!(text::columns("é漢"), 4, "anything not ASCII counts twice");
    assert!(text::width_px("abcdefghij", 10.0) >= 10.0 * 10.0 * 0.602);
    let cut = text::truncate("consumer.after-receiver-commit", 12);
    assert!(text::columns(&cut) <= 12 && cut.ends_with('…'), "{cut}");
    assert_eq!(text::truncate("short", 12), "short");
    for line in text::wrap("a few words and one verylongwordthatcannotfit at all", 10) {
        assert!(text::columns(&line) <= 10, "{line}");
    }
    assert_eq!(text::ms(12.5), "12.5");
    assert_eq!(text::ms(20.0), "20");
}

#[test]
fn only_paths_inside_the_run_are_linked() {
    for good in [
        "processes.json",
        "s/intent.stdout.txt",
        "key-conflict/timeline.svg",
    ] {
        assert!(text::linkable(good), "{good}");
    }
    for bad in [
        "",
        "/etc/passwd",
        "../x",
        "a/../b",
        "a//b",
        "./a",
        "a b",
        "x\"y",
        "http://h/x",
    ] {
        assert!(!text::linkable(bad), "{bad}");
    }
}

#[test]
fn background_commits_meet_the_last_changes() {
    assert_eq!(place::background_columns(1, &[1, 3, 4], 9), vec![4]);
    assert_eq!(place::background_columns(2, &[1, 3, 4], 9), vec![3, 4]);
    assert_eq!(
        place::background_columns(4, &[1, 3, 4], 9),
        vec![1, 1, 3, 4]
    );
    assert_eq!(place::background_columns(2, &[], 9), vec![9, 9]);
    let s = |d: &str| (true, Some(d.to_string()));
    let absent = (false, None);
    let changed = place::changed(
        &[absent.clone(), s("a"), s("a"), s("b"), s("b")],
        &[
            absent.clone(),
            absent.clone(),
            s("c"),
            absent.clone(),
            s("b"),
        ],
        &["x", "x", "x", "y", "y"],
    );
    // x: created in column 1, changed after its end; y: a new scenario starts from nothing.
    assert_eq!(changed, vec![false, true, true, true, false]);
    assert_eq!(
        place::unexplained(&[1, 2, 3], 1, &[false, true, true, false]),
        vec![1, 3]
    );
    assert_eq!(place::unexplained(&[2], 1, &[false, false, true]), vec![2]);
}

#[test]
fn the_timeline_puts_each_thing_in_its_lane_and_column() {
    let ev = evidence(true);
    let t = layout::build(&ev, "s");
    let names: Vec<&str> = t.lanes.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "intent",
            "receiver",
            "dispatcher",
            "dispatch-verify",
            "intents.db",
            "receiver.db",
            "receipts.db"
        ]
    );
    assert!(t.lanes[4..].iter().all(|l| l.kind == LaneKind::Database));
    // The receiver ran beside the dispatcher: its bar spans both columns.
    let receiver = t.bars.iter().find(|b| b.lane == 1).unwrap();
    assert_eq!((receiver.first, receiver.last), (1, 2));
    // Its effect sits where receiver.db changed with a commit, not where it made its schema.
    let effect = t
        .marks
        .iter()
        .find(|m| m.text == "effect 1 key K1")
        .unwrap();
    assert_eq!((effect.lane, effect.column), (5, 2));
    // The readback's field is on the receiver.db lane, in the readback's column.
    let state = t
        .marks
        .iter()
        .find(|m| matches!(m.kind, MarkKind::State { .. }))
        .unwrap();
    assert_eq!(
        (state.lane, state.column, state.text.as_str()),
        (5, 3, "effects 1")
    );
    // K1's way: intent, effect, receipt (the attempt is not its first commit on intents).
    assert_eq!(t.routes.len(), 1);
    let way: Vec<&str> = t.routes[0]
        .marks
        .iter()
        .map(|&m| t.marks[m].text.as_str())
        .collect();
    assert_eq!(
        way,
        ["intent 1 key K1", "effect 1 key K1", "receipt key K1"]
    );
    // The crash is in red on the dispatcher's lane, named.
    let crash = t.cells.iter().find(|c| c.lane == 2).unwrap();
    assert!(crash
        .lines
        .iter()
        .any(|l| l.text == "dispatcher.after-receipt-commit"));
    assert!(t.ok && t.verdict.starts_with("PASS: 4 processes"));
    assert!(t.present[4][0], "intents.db exists from the first step");
    assert!(
        !t.present[5][0] && t.present[5][1],
        "receiver.db exists from the receiver's step"
    );
}

#[test]
fn the_svg_parses_and_holds_the_escaped_text() {
    let svg = timeline::render(&layout::build(&evidence(true), "s"));
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is XML");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    assert!(
        texts.iter().any(|t| t == "STOPPED receiver <&\"'\u{fffd}>"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "CRASH"));
    assert!(svg.contains("<polyline"), "the route of K1");
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    assert!(width > 400.0);
}

#[test]
fn a_failed_step_is_red_in_the_picture_and_the_page() {
    let ev = evidence(false);
    let t = layout::build(&ev, "s");
    assert!(!t.ok && t.verdict.starts_with("FAIL: 1 of 4"));
    let state = t
        .marks
        .iter()
        .find(|m| matches!(m.kind, MarkKind::State { .. }))
        .unwrap();
    assert_eq!(state.kind, MarkKind::State { holds: false });
    assert_eq!(state.text, "effects 2 (expected 1)");
    let files = render(&ev);
    let page = &files.iter().find(|(p, _)| p == "report.html").unwrap().1;
    assert!(page.contains("<b>FAIL</b>") && page.contains(":valid? false"));
    assert!(page.contains("receiver.effects: expected 1, observed 2"));
}

#[test]
fn the_page_is_xml_with_relative_links_only() {
    let ev = evidence(true);
    let files = render(&ev);
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["s/timeline.svg", "report.html"]);
    let page = &files[1].1;
    let doc = roxmltree::Document::parse_with_options(
        page,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("report.html is well-formed");
    let hrefs: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("href"))
        .collect();
    assert!(hrefs.contains(&"s/dispatch-crash.stdout.txt"));
    assert!(hrefs.contains(&"s/timeline.svg") && hrefs.contains(&"processes.json"));
    for href in hrefs {
        assert!(href.starts_with('#') || text::linkable(href), "{href}");
    }
    assert!(!doc.descendants().any(|n| n.attribute("src").is_some()));
    assert!(!doc.descendants().any(|n| n.has_tag_name("script")));
    assert!(
        page.contains(":valid? true")
            && page.contains("<code>dispatcher.after-receipt-commit</code>")
    );
    assert_eq!(html::timeline_path(""), "timeline.svg");
}
