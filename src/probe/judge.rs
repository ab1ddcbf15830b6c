//! Each check's verdict, derived from its recorded exchanges and effects readings only: the
//! probe judges its run with this, and `crashlab audit` judges the evidence again with it.
//!
//! A count of effects above one for one request is a `duplicate`, in Jepsen's words. A
//! check asked to count effects that could not read them fails: an unread count is no pass.

use super::checks::{Check, Settings};
use super::records::{Exchange, Outcome, Reading, Response, Verdict, Verdicted};

/// What the effects readings say for a check.
enum Effects {
    NotCounted,
    Counted(i64),
    Unreadable(String),
}

fn effects(check: &Check, settings: &Settings, readings: &[&Reading], at: &str) -> Effects {
    if !settings.countable(check) {
        return Effects::NotCounted;
    }
    let find = |at: &str| readings.iter().find(|r| r.at == at);
    match (find("before"), find(at)) {
        (Some(b), Some(a)) => match (b.count, a.count) {
            (Some(b), Some(a)) => Effects::Counted(a - b),
            (None, _) => Effects::Unreadable(b.detail.clone()),
            (_, None) => Effects::Unreadable(a.detail.clone()),
        },
        _ => Effects::Unreadable(format!("no '{at}' reading recorded")),
    }
}

/// "no effect", "effect once", "effects 2".
pub fn effects_phrase(n: i64) -> String {
    match n {
        0 => "no effect".to_string(),
        1 => "effect once".to_string(),
        n => format!("effects {n}"),
    }
}

/// A check's judgement as it is built.
struct Judged {
    ok: bool,
    expected: String,
    observed: Vec<String>,
    effects: Option<i64>,
    anomalies: Vec<String>,
}

impl Judged {
    fn new(ok: bool, expected: impl Into<String>, observed: impl Into<String>) -> Judged {
        Judged {
            ok,
            expected: expected.into(),
            observed: vec![observed.into()],
            effects: None,
            anomalies: Vec::new(),
        }
    }

    /// Count the effects against `want` (the one request's count, 0 or 1): more than one
    /// for one request is a duplicate when `duplicate` says the request was the same.
    fn count(&mut self, effects: Effects, want: i64, duplicate: bool) {
        match effects {
            Effects::NotCounted => {}
            Effects::Counted(n) => {
                self.expected
                    .push_str(&format!(", {}", effects_phrase(want)));
                self.observed.push(effects_phrase(n));
                self.effects = Some(n);
                if n != want {
                    self.ok = false;
                }
                if duplicate && n > 1 {
                    self.anomalies.push("duplicate".to_string());
                }
            }
            Effects::Unreadable(why) => {
                self.expected
                    .push_str(&format!(", {}", effects_phrase(want)));
                self.observed.push(format!("effects unread ({why})"));
                self.ok = false;
            }
        }
    }

    fn done(mut self, check: &Check) -> Verdicted {
        if let (false, Some(last)) = (self.anomalies.is_empty(), self.observed.last_mut()) {
            last.push_str(&format!(" ({})", self.anomalies.join(", ")));
        }
        Verdicted {
            check: check.id.to_string(),
            section: check.section.to_string(),
            verdict: if self.ok {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            expected: self.expected,
            observed: self.observed.join(", "),
            effects: self.effects,
            anomalies: self.anomalies,
        }
    }
}

fn skip(check: &Check, why: &str) -> Verdicted {
    Verdicted {
        check: check.id.to_string(),
        section: check.section.to_string(),
        verdict: Verdict::Skip,
        expected: "-".to_string(),
        observed: why.to_string(),
        effects: None,
        anomalies: Vec::new(),
    }
}

/// What one exchange got, in a few words: `201`, `reset`, `timeout`, …
pub fn got(e: Option<&Exchange>) -> String {
    match e {
        None => "not sent".to_string(),
        Some(e) => match e.whole() {
            Some(r) => r.status.to_string(),
            None => e.outcome.word().to_string(),
        },
    }
}

fn success(r: Option<&Response>) -> bool {
    r.is_some_and(|r| (200..300).contains(&r.status))
}

fn same(a: &Response, b: &Response) -> bool {
    a.status == b.status && a.body_sha256.is_some() && a.body_sha256 == b.body_sha256
}

/// How the answer `b` compares with `a`, after its status: `again with the same body`, or
/// what differs (the body, or only the status).
fn compared(a: &Response, b: &Response) -> String {
    let same_body = a.body_sha256.is_some() && a.body_sha256 == b.body_sha256;
    match (a.status == b.status, same_body) {
        (true, true) => format!("{} again with the same body", b.status),
        (false, true) => format!("{} with the same body, another status", b.status),
        (_, false) => format!("{} with another body", b.status),
    }
}

/// The judgement of `check` from its exchanges and readings. `unrun`: the probe's time ran
/// out before the check began.
pub fn judge(
    check: &Check,
    settings: &Settings,
    unrun: bool,
    exchanges: &[&Exchange],
    readings: &[&Reading],
) -> Verdicted {
    if unrun {
        let why = format!(
            "not run: --probe-timeout-ms {} ran out",
            settings.probe_timeout_ms
        );
        return Judged::new(false, "a run", why).done(check);
    }
    let step = |name: &str| exchanges.iter().copied().find(|e| e.step == name);
    let counted = |at: &str| effects(check, settings, readings, at);
    match check.id {
        "first-request" => {
            let first = step("first");
            let mut j = Judged::new(success(first.and_then(Exchange::whole)), "2xx", got(first));
            j.count(counted("after"), 1, true);
            j.done(check)
        }
        "retry" | "key-expiry" => {
            if check.id == "key-expiry" && settings.key_ttl_ms.is_none() {
                return skip(check, "give --key-ttl-ms (the key's published lifetime) to see what a retry after it gets");
            }
            let (first, again) = (step("first"), step("retry"));
            let (a, b) = (
                first.and_then(Exchange::whole),
                again.and_then(Exchange::whole),
            );
            let answer = match (a, b) {
                (Some(a), Some(b)) => compared(a, b),
                _ => got(again),
            };
            let observed = format!("first {}, retry {answer}", got(first));
            if check.id == "key-expiry" {
                let ttl = settings.key_ttl_ms.unwrap_or(0);
                let mut j = Judged::new(
                    true,
                    format!("after {ttl} ms: the endpoint's policy"),
                    observed,
                );
                j.count(counted("after"), 1, true);
                let mut v = j.done(check);
                v.verdict = Verdict::Info;
                v.expected =
                    format!("after {ttl} ms: the endpoint's published policy (information)");
                return v;
            }
            let ok = success(a) && a.zip(b).is_some_and(|(a, b)| same(a, b));
            let mut j = Judged::new(ok, "the first answer again (status and body)", observed);
            j.count(counted("after"), 1, true);
            j.done(check)
        }
        "conflict" => {
            if exchanges.is_empty() && !settings.body_varies {
                return skip(check, "the body has no {n}: no second body to send");
            }
            let (first, other) = (step("first"), step("other-body"));
            let want = settings.conflict_status;
            let ok = success(first.and_then(Exchange::whole))
                && other
                    .and_then(Exchange::whole)
                    .is_some_and(|r| r.status == want);
            let observed = format!("first {}, other body {}", got(first), got(other));
            let mut j = Judged::new(ok, format!("{want} for the other body"), observed);
            j.count(counted("after"), 1, false);
            j.done(check)
        }
        "missing-key" | "key-too-long" | "key-malformed" => {
            if check.id == "missing-key" && settings.key_optional {
                return skip(
                    check,
                    "--key-optional: the endpoint takes requests without a key",
                );
            }
            let e = step("refused");
            let status = e.and_then(Exchange::whole).map(|r| r.status);
            let (ok, expected) = match check.id {
                "missing-key" => (status == Some(400), "400".to_string()),
                "key-too-long" => (
                    status.is_some_and(|s| (400..500).contains(&s)),
                    format!("4xx for a key of {} characters", settings.key_len_max + 1),
                ),
                _ => (
                    status.is_some_and(|s| (400..500).contains(&s)),
                    "4xx for a key with a byte outside ASCII".to_string(),
                ),
            };
            let mut j = Judged::new(ok, expected, got(e));
            j.count(counted("after"), 0, false);
            j.done(check)
        }
        "concurrent" => concurrent(check, settings, exchanges, counted("after")),
        _ => lost(
            check,
            step("lost"),
            step("retry"),
            counted("after-lost"),
            counted("after"),
        ),
    }
}

/// N requests with one key at once: every answer the stored one or a 409, one effect.
fn concurrent(
    check: &Check,
    settings: &Settings,
    racers: &[&Exchange],
    effects: Effects,
) -> Verdicted {
    let n = settings.concurrency;
    let mut statuses = std::collections::BTreeMap::<String, usize>::new();
    for e in racers {
        *statuses.entry(got(Some(e))).or_default() += 1;
    }
    let shown: Vec<String> = statuses.iter().map(|(s, k)| format!("{s} x{k}")).collect();
    let answers: Vec<&Response> = racers.iter().filter_map(|e| e.whole()).collect();
    let successes: Vec<&&Response> = answers.iter().filter(|r| success(Some(r))).collect();
    let mut bodies: Vec<(u16, Option<&String>)> = successes
        .iter()
        .map(|r| (r.status, r.body_sha256.as_ref()))
        .collect();
    bodies.sort();
    bodies.dedup();
    let ok = racers.len() == n as usize
        && answers.len() == racers.len()
        && answers.iter().all(|r| success(Some(r)) || r.status == 409)
        && bodies.len() <= 1;
    let mut observed = shown.join(", ");
    if bodies.len() > 1 {
        observed.push_str(&format!(", {} different 2xx answers", bodies.len()));
    }
    let mut j = Judged::new(
        ok,
        format!("{n} answers, each the stored one or 409"),
        observed,
    );
    // One of them is the first, processed once whatever the others got.
    j.count(effects, 1, true);
    j.done(check)
}

/// A reply lost after the upstream answered it whole; the retry must get that answer.
fn lost(
    check: &Check,
    lost: Option<&Exchange>,
    retry: Option<&Exchange>,
    committed: Effects,
    effects: Effects,
) -> Verdicted {
    let proxied = lost.and_then(|e| e.proxy.as_ref());
    let upstream = proxied.and_then(|p| match p.upstream {
        Outcome::Response => p.upstream_response.as_ref(),
        _ => None,
    });
    let expected = "the retry gets the lost answer (status and body)";
    let Some(upstream) = upstream else {
        let why = proxied.map_or("no proxied request recorded".to_string(), |p| {
            format!(
                "the upstream gave no whole reply to cut ({}: {})",
                p.upstream.word(),
                p.upstream_detail
            )
        });
        return Judged::new(false, expected, why).done(check);
    };
    // The window this check is about: the cut came after the upstream's whole reply.
    let order = proxied.and_then(|p| p.upstream_done_ms.map(|done| (done, p.cut_ms)));
    if let Some((done, cut)) = order.filter(|(done, cut)| done > cut) {
        let why = format!(
            "the cut ({cut:.1} ms) came before the upstream's reply was whole ({done:.1} ms)"
        );
        return Judged::new(false, expected, why).done(check);
    }
    let client = lost.map_or(Outcome::Response, |e| e.outcome);
    if client == Outcome::Response {
        // The cut came after the whole reply: only a reply without a body can end there.
        if upstream.body_bytes == 0 && matches!(check.id, "reply-lost-head" | "reply-lost-body") {
            return skip(
                check,
                "the reply has no body: nothing to cut after its head",
            );
        }
        return Judged::new(
            false,
            expected,
            "the client got the whole reply: nothing was lost",
        )
        .done(check);
    }
    let answer = match retry.and_then(Exchange::whole) {
        Some(r) if same(r, upstream) => format!("retry {} with the same body", r.status),
        Some(r) => format!("retry {}", compared(upstream, r)),
        None => format!("retry {}", got(retry)),
    };
    let committed = match committed {
        Effects::Counted(n) => format!(" ({} committed)", effects_phrase(n)),
        _ => String::new(),
    };
    let saw = match client {
        Outcome::Reset => "a reset".to_string(),
        Outcome::Closed => "a close".to_string(),
        Outcome::Truncated => "a cut reply".to_string(),
        other => other.word().to_string(),
    };
    let observed = format!(
        "upstream {}{committed}, client saw {saw}, {answer}",
        upstream.status
    );
    let ok = success(Some(upstream))
        && retry
            .and_then(Exchange::whole)
            .is_some_and(|r| same(r, upstream));
    let mut j = Judged::new(ok, expected, observed);
    j.count(effects, 1, true);
    j.done(check)
}
