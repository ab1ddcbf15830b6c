//! Running the checks: real exchanges with the endpoint (directly, at once from several
//! threads, or through the loopback proxy), the effects read before and after each check,
//! and everything recorded as it happened. Judging is `judge`'s, from these records alone.

use std::net::SocketAddr;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::args::{Config, KEY_TTL_MARGIN_MS};
use super::checks::{Check, CHECKS};
use super::client::{self, Got};
use super::proxy::Proxy;
use super::records::{Cut, Exchange, Proxied, Reading, Request};
use super::template::Rendered;

/// Most requests one probe sends: one per step of every check, the racers at most 64.
pub const REQUESTS_MAX: usize = 96;
/// Bytes of an effects answer's or command's output a reading records.
const DETAIL_BYTES_MAX: usize = 200;
/// The client of a reply-lost check waits this long past the proxy's deadline, so that it
/// sees the proxy's cut rather than its own timeout.
const CUT_GRACE_MS: u64 = 1_000;

/// One probe run as it goes.
pub struct Probe<'a> {
    config: &'a Config,
    addr: SocketAddr,
    t0: Instant,
    deadline: Instant,
    /// A prefix unique to this run, in every key it sends.
    pub run_id: String,
    pub exchanges: Vec<Exchange>,
    pub readings: Vec<Reading>,
    /// Checks the probe's time ran out before.
    pub unrun: Vec<String>,
    /// The last logical request's number (`{n}`).
    n: u64,
}

impl<'a> Probe<'a> {
    pub fn new(config: &'a Config, addr: SocketAddr, t0: Instant) -> Probe<'a> {
        let pid = u64::from(std::process::id());
        let run_id = format!(
            "{:010x}{:04x}",
            crate::common::now_ms() as u64 & 0xff_ffff_ffff,
            pid & 0xffff
        );
        Probe {
            config,
            addr,
            t0,
            deadline: t0 + Duration::from_millis(config.settings.probe_timeout_ms),
            run_id,
            exchanges: Vec::new(),
            readings: Vec::new(),
            unrun: Vec::new(),
            n: 0,
        }
    }

    fn ms(&self) -> f64 {
        self.t0.elapsed().as_secs_f64() * 1000.0
    }

    /// The key of a check in this run: `p<run>-<check>`, printable ASCII without `"` or `\`.
    pub fn key(&self, check: &str) -> String {
        format!("p{}-{check}", self.run_id)
    }

    /// Every check in order; Err only when interrupted or the machine fails the probe (no
    /// socket for the proxy). An unreadable effects count before anything runs is bad input.
    pub fn run_all(&mut self) -> Result<()> {
        if let Some(source) = &self.config.effects {
            let key = self.key("start");
            let timeout = Duration::from_millis(self.config.settings.timeout_ms);
            if let Err(why) = source.read(Some(&key), timeout) {
                return Err(crate::fail::usage(format!(
                    "the effects cannot be read before the probe begins: {why}"
                )));
            }
        }
        for check in &CHECKS {
            crate::interrupt::check()?;
            // The key-expiry check waits past the key's lifetime first: it begins only when
            // that wait ends before the probe's time does.
            let wait_ms = match check.id {
                "key-expiry" => self
                    .config
                    .settings
                    .key_ttl_ms
                    .map_or(0, |t| t + KEY_TTL_MARGIN_MS),
                _ => 0,
            };
            if self.skipped(check) {
                continue;
            }
            if Instant::now() + Duration::from_millis(wait_ms) >= self.deadline {
                self.unrun.push(check.id.to_string());
                continue;
            }
            self.check(check)?;
        }
        assert!(
            self.exchanges.len() <= REQUESTS_MAX,
            "the probe's requests are bounded"
        );
        Ok(())
    }

    fn check(&mut self, check: &Check) -> Result<()> {
        let key = self.key(check.id);
        let format = self.config.key_format;
        let valid = format.value(key.as_bytes());
        let countable = check.keyed.then_some(key.as_str());
        self.read(check, "before", countable);
        match check.id {
            "first-request" => {
                let n = self.next();
                self.send(check, "first", Some(&valid), &key, n);
            }
            "retry" | "key-expiry" => {
                let n = self.next();
                self.send(check, "first", Some(&valid), &key, n);
                if let Some(ttl) = self
                    .config
                    .settings
                    .key_ttl_ms
                    .filter(|_| check.id == "key-expiry")
                {
                    // Past the key's lifetime; a signal ends the wait at once.
                    let past = Instant::now() + Duration::from_millis(ttl + KEY_TTL_MARGIN_MS);
                    let _ = super::wire::ready(None, past);
                    crate::interrupt::check()?;
                }
                self.send(check, "retry", Some(&valid), &key, n);
            }
            "conflict" => {
                let n = self.next();
                self.send(check, "first", Some(&valid), &key, n);
                let other = self.next();
                self.send(check, "other-body", Some(&valid), &key, other);
            }
            "missing-key" => {
                let n = self.next();
                self.send(check, "refused", None, &key, n);
            }
            "key-too-long" => {
                let long = self.config.settings.key_len_max as usize + 1;
                let mut too_long = key.clone().into_bytes();
                too_long.resize(long.max(too_long.len()), b'x');
                too_long.truncate(long);
                let n = self.next();
                self.send(check, "refused", Some(&format.value(&too_long)), &key, n);
            }
            "key-malformed" => {
                // A byte outside ASCII: no String of RFC 8941 holds it, nor a token.
                let malformed = format!("{key}-\u{e9}");
                let n = self.next();
                self.send(
                    check,
                    "refused",
                    Some(&format.value(malformed.as_bytes())),
                    &key,
                    n,
                );
            }
            "concurrent" => {
                let n = self.next();
                self.race(check, &valid, &key, n);
            }
            _ => {
                let cut = match check.id {
                    "reply-lost-reset" => Cut::Reset,
                    "reply-lost-close" => Cut::Close,
                    "reply-lost-head" => Cut::AfterHead,
                    _ => Cut::MidBody,
                };
                let n = self.next();
                self.lose(check, cut, &valid, &key, n)?;
                self.read(check, "after-lost", countable);
                self.send(check, "retry", Some(&valid), &key, n);
            }
        }
        self.read(check, "after", countable);
        Ok(())
    }

    /// Checks this endpoint's settings leave out (the judge says why: SKIP).
    fn skipped(&self, check: &Check) -> bool {
        let settings = &self.config.settings;
        match check.id {
            "conflict" => !settings.body_varies,
            "missing-key" => settings.key_optional,
            "key-expiry" => settings.key_ttl_ms.is_none(),
            _ => false,
        }
    }

    fn next(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    fn render(&self, key_value: Option<&[u8]>, key: &str, n: u64) -> Rendered {
        let c = self.config;
        c.template
            .render(&c.url.authority, &c.key_header, key_value, key, n)
    }

    /// When an exchange begun now must end.
    fn until(&self) -> Instant {
        (Instant::now() + Duration::from_millis(self.config.settings.timeout_ms)).min(self.deadline)
    }

    fn no_body(&self) -> bool {
        self.config.template.method == "HEAD"
    }

    fn record(
        &mut self,
        check: &Check,
        step: &str,
        request: Request,
        got: Got,
        times: (f64, f64),
        proxy: Option<Proxied>,
    ) {
        self.exchanges.push(Exchange {
            check: check.id.to_string(),
            step: step.to_string(),
            request,
            outcome: got.outcome,
            response: got.response,
            detail: got.detail,
            proxy,
            started_ms: times.0,
            ended_ms: times.1,
        });
    }

    fn send(&mut self, check: &Check, step: &str, key_value: Option<&[u8]>, key: &str, n: u64) {
        let rendered = self.render(key_value, key, n);
        let started = self.ms();
        let got = client::exchange(
            self.addr,
            &rendered.bytes,
            self.no_body(),
            self.until(),
            self.config.cap,
            0,
        );
        let ended = self.ms();
        self.record(check, step, rendered.record, got, (started, ended), None);
    }

    /// `--concurrency` requests with one key and one body: every connection made first,
    /// then all written at once (a barrier), each read on its own thread.
    fn race(&mut self, check: &Check, key_value: &[u8], key: &str, n: u64) {
        let racers = self.config.settings.concurrency as usize;
        let rendered = self.render(Some(key_value), key, n);
        let (addr, until, cap, no_body, t0) = (
            self.addr,
            self.until(),
            self.config.cap,
            self.no_body(),
            self.t0,
        );
        let barrier = Barrier::new(racers);
        let results: Vec<(Got, f64, f64)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..racers)
                .map(|_| {
                    let (bytes, barrier) = (&rendered.bytes, &barrier);
                    scope.spawn(move || {
                        let stream = client::connect(addr, until);
                        barrier.wait();
                        let started = t0.elapsed().as_secs_f64() * 1000.0;
                        let got = match stream {
                            Ok(s) => client::send(&s, bytes, no_body, until, cap, 0),
                            Err(stop) => Got {
                                outcome: stop.outcome,
                                response: None,
                                detail: stop.detail,
                                kept: Vec::new(),
                            },
                        };
                        (got, started, t0.elapsed().as_secs_f64() * 1000.0)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a racer thread never panics"))
                .collect()
        });
        for (i, (got, started, ended)) in results.into_iter().enumerate() {
            let request = rendered.record.clone();
            self.record(
                check,
                &format!("racer-{}", i + 1),
                request,
                got,
                (started, ended),
                None,
            );
        }
    }

    /// One request through the loopback proxy, its reply cut as `cut` says.
    fn lose(&mut self, check: &Check, cut: Cut, key_value: &[u8], key: &str, n: u64) -> Result<()> {
        let rendered = self.render(Some(key_value), key, n);
        let proxy = Proxy::bind().context("opening the loopback proxy")?;
        let proxy_addr = proxy.addr().context("the loopback proxy's address")?;
        let (upstream, until, cap, t0) = (self.addr, self.until(), self.config.cap, self.t0);
        let serving = std::thread::Builder::new()
            .name("crashlab-proxy".into())
            .spawn(move || proxy.serve_one(upstream, cut, until, cap, t0))
            .context("starting the loopback proxy")?;
        let started = self.ms();
        let client_until = until + Duration::from_millis(CUT_GRACE_MS);
        let got = client::exchange(
            proxy_addr,
            &rendered.bytes,
            self.no_body(),
            client_until,
            cap,
            0,
        );
        let ended = self.ms();
        let proxied = serving.join().expect("the proxy thread never panics");
        self.record(
            check,
            "lost",
            rendered.record,
            got,
            (started, ended),
            Some(proxied),
        );
        Ok(())
    }

    /// Read the effects (when counted) and record the reading. `key`: the check's key when
    /// its request carries a valid one.
    fn read(&mut self, check: &Check, at: &str, key: Option<&str>) {
        let Some(source) = &self.config.effects else {
            return;
        };
        if key.is_none() && source.per_key() {
            return;
        }
        let timeout = Duration::from_millis(self.config.settings.timeout_ms);
        let (count, detail) = match source.read(key, timeout) {
            Ok(n) => (Some(n), n.to_string()),
            Err(why) => (None, why.chars().take(DETAIL_BYTES_MAX).collect()),
        };
        let ms = self.ms();
        self.readings.push(Reading {
            check: check.id.to_string(),
            at: at.to_string(),
            count,
            detail,
            ms,
        });
    }
}
