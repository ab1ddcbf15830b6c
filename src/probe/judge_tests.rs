//! The judge on hand-made records: what each check passes, fails and skips on.

use super::checks::{find, Settings};
use super::judge::judge;
use super::records::{
    Cut, Exchange, Outcome, Proxied, Reading, Request, Response, Verdict, Verdicted,
};

fn settings() -> Settings {
    Settings {
        conflict_status: 422,
        key_optional: false,
        key_len_max: 255,
        key_ttl_ms: None,
        concurrency: 3,
        effects: Some("cmd".into()),
        effects_per_key: false,
        body_varies: true,
        timeout_ms: 5000,
        probe_timeout_ms: 120_000,
    }
}

fn response(status: u16, body: &str) -> Response {
    Response {
        status,
        head: vec![format!("HTTP/1.1 {status} X")],
        body_bytes: body.len() as u64,
        body_sha256: Some(crate::common::sha256_hex(body.as_bytes())),
        body_excerpt: body.into(),
    }
}

fn exchange(check: &str, step: &str, outcome: Outcome, got: Option<Response>) -> Exchange {
    Exchange {
        check: check.into(),
        step: step.into(),
        request: Request {
            method: "POST".into(),
            target: "/".into(),
            key: Some("\"k\"".into()),
            headers: vec![],
            body_sha256: "0".repeat(64),
            body_bytes: 0,
        },
        outcome,
        response: got,
        detail: String::new(),
        proxy: None,
        started_ms: 1.0,
        ended_ms: 2.0,
    }
}

fn reading(check: &str, at: &str, count: Option<i64>) -> Reading {
    Reading {
        check: check.into(),
        at: at.into(),
        count,
        detail: count.map_or("sqlite3: no such table".into(), |c| c.to_string()),
        ms: 0.0,
    }
}

fn run(id: &str, s: &Settings, exchanges: &[Exchange], readings: &[Reading]) -> Verdicted {
    let e: Vec<&Exchange> = exchanges.iter().collect();
    let r: Vec<&Reading> = readings.iter().collect();
    judge(find(id).unwrap(), s, false, &e, &r)
}

#[test]
fn a_retry_passes_on_the_same_answer_and_one_effect_and_fails_as_a_duplicate() {
    let first = exchange(
        "retry",
        "first",
        Outcome::Response,
        Some(response(201, "{\"p\":1}")),
    );
    let same = exchange(
        "retry",
        "retry",
        Outcome::Response,
        Some(response(201, "{\"p\":1}")),
    );
    let other = exchange(
        "retry",
        "retry",
        Outcome::Response,
        Some(response(201, "{\"p\":2}")),
    );
    let once = [
        reading("retry", "before", Some(4)),
        reading("retry", "after", Some(5)),
    ];
    let twice = [
        reading("retry", "before", Some(4)),
        reading("retry", "after", Some(6)),
    ];
    let v = run("retry", &settings(), &[first.clone(), same.clone()], &once);
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    assert_eq!(v.effects, Some(1));
    let v = run("retry", &settings(), &[first.clone(), other], &twice);
    assert_eq!(v.verdict, Verdict::Fail);
    assert_eq!(v.anomalies, vec!["duplicate".to_string()]);
    assert!(
        v.observed.contains("another body") && v.observed.contains("effects 2"),
        "{}",
        v.observed
    );
    // Only the status changed: the text says so, not "another body".
    let status_only = exchange(
        "retry",
        "retry",
        Outcome::Response,
        Some(response(500, "{\"p\":1}")),
    );
    let v = run("retry", &settings(), &[first.clone(), status_only], &once);
    assert_eq!(v.verdict, Verdict::Fail);
    assert!(
        v.observed
            .contains("retry 500 with the same body, another status"),
        "{}",
        v.observed
    );
    // The same answer but two effects is still a duplicate: the count speaks.
    let v = run("retry", &settings(), &[first.clone(), same.clone()], &twice);
    assert_eq!((v.verdict, v.anomalies.len()), (Verdict::Fail, 1));
    // An unread count is no pass.
    let unread = [
        reading("retry", "before", Some(4)),
        reading("retry", "after", None),
    ];
    let v = run(
        "retry",
        &settings(),
        &[first.clone(), same.clone()],
        &unread,
    );
    assert_eq!(v.verdict, Verdict::Fail);
    assert!(v.observed.contains("no such table"), "{}", v.observed);
    // Without an effects source the answers alone decide.
    let mut alone = settings();
    alone.effects = None;
    assert_eq!(
        run("retry", &alone, &[first, same], &[]).verdict,
        Verdict::Pass
    );
}

#[test]
fn concurrent_answers_may_be_409_but_never_two_different_successes() {
    let s = settings();
    let ok = |b: &str| {
        exchange(
            "concurrent",
            "racer",
            Outcome::Response,
            Some(response(200, b)),
        )
    };
    let conflict = exchange(
        "concurrent",
        "racer",
        Outcome::Response,
        Some(response(409, "busy")),
    );
    let one = [
        reading("concurrent", "before", Some(0)),
        reading("concurrent", "after", Some(1)),
    ];
    let v = run(
        "concurrent",
        &s,
        &[ok("a"), conflict.clone(), ok("a")],
        &one,
    );
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    assert!(v.observed.starts_with("200 x2, 409 x1"), "{}", v.observed);
    let three = [
        reading("concurrent", "before", Some(0)),
        reading("concurrent", "after", Some(3)),
    ];
    let v = run("concurrent", &s, &[ok("a"), ok("b"), ok("c")], &three);
    assert_eq!((v.verdict, v.effects), (Verdict::Fail, Some(3)));
    assert!(
        v.observed.contains("3 different 2xx answers"),
        "{}",
        v.observed
    );
    assert!(
        v.observed.ends_with("effects 3 (duplicate)"),
        "{}",
        v.observed
    );
    let timeout = exchange("concurrent", "racer", Outcome::Timeout, None);
    let v = run("concurrent", &s, &[ok("a"), ok("a"), timeout], &one);
    assert_eq!(v.verdict, Verdict::Fail, "a racer without an answer");
}

fn lost(cut: Cut, client: Outcome, done_ms: f64, cut_ms: f64, body: &str) -> Exchange {
    let mut e = exchange("reply-lost-head", "lost", client, None);
    e.proxy = Some(Proxied {
        cut,
        upstream: Outcome::Response,
        upstream_response: Some(response(200, body)),
        upstream_detail: String::new(),
        upstream_done_ms: Some(done_ms),
        sent_bytes: 0,
        cut_ms,
    });
    if client == Outcome::Response {
        e.response = Some(response(200, body));
    }
    e
}

#[test]
fn a_lost_reply_counts_only_when_cut_after_the_upstream_answered_whole() {
    let s = settings();
    let retry = exchange(
        "reply-lost-head",
        "retry",
        Outcome::Response,
        Some(response(200, "x")),
    );
    let once = [
        reading("reply-lost-head", "before", Some(0)),
        reading("reply-lost-head", "after-lost", Some(1)),
        reading("reply-lost-head", "after", Some(1)),
    ];
    let good = lost(Cut::AfterHead, Outcome::Truncated, 5.0, 6.0, "x");
    let v = run("reply-lost-head", &s, &[good, retry.clone()], &once);
    assert_eq!(v.verdict, Verdict::Pass, "{v:?}");
    assert!(
        v.observed.contains("(effect once committed)"),
        "{}",
        v.observed
    );
    let early = lost(Cut::AfterHead, Outcome::Truncated, 7.0, 6.0, "x");
    let v = run("reply-lost-head", &s, &[early, retry.clone()], &once);
    assert_eq!(v.verdict, Verdict::Fail);
    assert!(v.observed.contains("came before"), "{}", v.observed);
    let empty = lost(Cut::AfterHead, Outcome::Response, 5.0, 6.0, "");
    let v = run("reply-lost-head", &s, &[empty, retry], &once);
    assert_eq!(v.verdict, Verdict::Skip, "{v:?}");
}

#[test]
fn refusals_skips_and_an_unrun_check_read_as_they_should() {
    let mut s = settings();
    let refused = |status| {
        exchange(
            "missing-key",
            "refused",
            Outcome::Response,
            Some(response(status, "")),
        )
    };
    let none = [
        reading("missing-key", "before", Some(3)),
        reading("missing-key", "after", Some(3)),
    ];
    assert_eq!(
        run("missing-key", &s, &[refused(400)], &none).verdict,
        Verdict::Pass
    );
    assert_eq!(
        run("missing-key", &s, &[refused(422)], &none).verdict,
        Verdict::Fail
    );
    s.key_optional = true;
    assert_eq!(run("missing-key", &s, &[], &[]).verdict, Verdict::Skip);
    s.body_varies = false;
    assert_eq!(run("conflict", &s, &[], &[]).verdict, Verdict::Skip);
    assert_eq!(run("key-expiry", &s, &[], &[]).verdict, Verdict::Skip);
    let v = judge(find("retry").unwrap(), &s, true, &[], &[]);
    assert_eq!(v.verdict, Verdict::Fail);
    assert!(v.observed.contains("--probe-timeout-ms"), "{}", v.observed);
}
