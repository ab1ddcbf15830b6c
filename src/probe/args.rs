//! `crashlab probe`'s command line, and the configuration it makes: every bound checked
//! here, before anything is sent or written (bad input: one line, exit 2).

use std::path::PathBuf;

use anyhow::Result;

use super::checks::Settings;
use super::effects::Source;
use super::target::Url;
use super::template::{self, KeyFormat, Template};
use crate::fail;

/// The longest wait past a key's lifetime (10 minutes).
pub const KEY_TTL_MS_MAX: u64 = 600_000;
/// After `--key-ttl-ms`, the retry waits this much longer (clocks and purges are coarse).
pub const KEY_TTL_MARGIN_MS: u64 = 500;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The endpoint: http://HOST[:PORT]/PATH (plain HTTP)
    pub url: String,
    /// The request's method
    #[arg(long, default_value = "POST")]
    pub method: String,
    /// A header to send, `Name: value`, its placeholders filled in as the body's; repeatable
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    // clap's help turns the three characters n-in-braces into a line break: the help names
    // that placeholder in words, and the default beneath it shows it as written.
    /// The body: {key} is the check's key; n in braces (as in the default) a number of its
    /// own per logical request
    #[arg(long, value_name = "TEMPLATE", default_value = template::BODY_DEFAULT)]
    pub body: String,
    /// The request from a file: `METHOD /path`, header lines, a blank line, the body
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "headers", "body"])]
    pub request: Option<PathBuf>,
    /// The key's header
    #[arg(long, value_name = "NAME", default_value = "Idempotency-Key")]
    pub key_header: String,
    /// How the key is written: the draft's quoted String, or bare
    #[arg(long, value_enum, default_value_t = KeyFormat::SfString)]
    pub key_format: KeyFormat,
    /// The endpoint takes requests without a key (skip the missing-key check)
    #[arg(long)]
    pub key_optional: bool,
    /// The longest key the endpoint takes: the key-too-long check sends one character more
    #[arg(long, value_name = "N", default_value_t = 255, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub key_len_max: u32,
    /// The status a reused key with another body must get (the draft's 422; many send 409)
    #[arg(long, value_name = "STATUS", default_value_t = 422, value_parser = clap::value_parser!(u16).range(400..=599))]
    pub conflict_status: u16,
    /// The key's published lifetime: retry after it and report what the endpoint does
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=KEY_TTL_MS_MAX))]
    pub key_ttl_ms: Option<u64>,
    /// Count effects with a GET answering a count or a list ({key}: per key)
    #[arg(long, value_name = "URL", conflicts_with = "effects_cmd")]
    pub effects_url: Option<String>,
    /// Where the count or list is in --effects-url's JSON answer (RFC 6901, e.g. /effects)
    #[arg(long, value_name = "POINTER", requires = "effects_url")]
    pub effects_pointer: Option<String>,
    /// Count effects with a shell command printing a count ({key}: per key)
    #[arg(long, value_name = "CMD")]
    pub effects_cmd: Option<String>,
    /// Requests with one key sent at once by the concurrent check
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub concurrency: u32,
    /// Each request (and each effects reading) must end within this
    #[arg(long, value_name = "MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=120_000))]
    pub timeout_ms: u64,
    /// The whole probe must end within this; checks not begun by then fail
    #[arg(long, value_name = "MS", default_value_t = 120_000, value_parser = clap::value_parser!(u64).range(1_000..=3_600_000))]
    pub probe_timeout_ms: u64,
    /// Read at most this many body bytes of a reply (more: recorded as too large)
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1_024..=16 << 20))]
    pub response_bytes_max: u64,
    /// Evidence directory (must not exist); default target/probe/probe-<UTC time>
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print one JSON document (verdict, evidence directory, checks) instead of the table
    #[arg(long)]
    pub json: bool,
    /// Also write the checks as a JUnit XML report to FILE (for CI)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// Everything a probe run needs, checked.
pub struct Config {
    pub url: Url,
    pub template: Template,
    pub key_header: String,
    pub key_format: KeyFormat,
    pub settings: Settings,
    pub effects: Option<Source>,
    pub cap: u64,
}

impl Args {
    pub fn config(&self) -> Result<Config> {
        let url = Url::parse(&self.url, "URL")?;
        template::check_key_header(&self.key_header)?;
        let template = match &self.request {
            Some(file) => Template::from_file(file, &url.target, &self.key_header)?,
            None => self.template(&url)?,
        };
        if let Some(ttl) = self.key_ttl_ms {
            if ttl + KEY_TTL_MARGIN_MS + self.timeout_ms > self.probe_timeout_ms {
                return Err(fail::usage(format!(
                    "--key-ttl-ms {ttl} and a request of --timeout-ms {} do not fit in --probe-timeout-ms {}",
                    self.timeout_ms, self.probe_timeout_ms
                )));
            }
        }
        let effects = self.effects()?;
        Ok(Config {
            settings: self.settings(template.varies()),
            url,
            template,
            key_header: self.key_header.clone(),
            key_format: self.key_format,
            effects,
            cap: self.response_bytes_max,
        })
    }

    /// The template the options give (without `--request`).
    pub fn template(&self, url: &Url) -> Result<Template> {
        Template::from_options(
            &self.method,
            &url.target,
            &self.headers,
            &self.body,
            &self.key_header,
        )
    }

    /// The settings the verdicts depend on. `body_varies` comes from the template (which a
    /// `--request` file holds, not the command line).
    pub fn settings(&self, body_varies: bool) -> Settings {
        let source = self.effects_url.as_ref().or(self.effects_cmd.as_ref());
        Settings {
            conflict_status: self.conflict_status,
            key_optional: self.key_optional,
            key_len_max: self.key_len_max,
            key_ttl_ms: self.key_ttl_ms,
            concurrency: self.concurrency,
            effects: match (&self.effects_url, &self.effects_cmd) {
                (Some(_), _) => Some("url".to_string()),
                (None, Some(_)) => Some("cmd".to_string()),
                (None, None) => None,
            },
            effects_per_key: source.is_some_and(|s| s.contains("{key}")),
            body_varies,
            timeout_ms: self.timeout_ms,
            probe_timeout_ms: self.probe_timeout_ms,
        }
    }

    fn effects(&self) -> Result<Option<Source>> {
        if let Some(url) = &self.effects_url {
            // A key stands in for {key}: the URL must be one whatever the key.
            Url::parse(&url.replace("{key}", "k"), "--effects-url")?;
            if let Some(p) = &self.effects_pointer {
                if !p.starts_with('/') {
                    return Err(fail::usage(format!(
                        "--effects-pointer '{p}' is not a JSON pointer (it starts with /)"
                    )));
                }
            }
            return Ok(Some(Source::Url {
                template: url.clone(),
                pointer: self.effects_pointer.clone(),
            }));
        }
        match &self.effects_cmd {
            Some(cmd) if cmd.trim().is_empty() || cmd.len() > 4096 => Err(fail::usage(
                "--effects-cmd must be a command of 1 to 4096 bytes",
            )),
            Some(cmd) => Ok(Some(Source::Cmd {
                template: cmd.clone(),
            })),
            None => Ok(None),
        }
    }
}

/// The probe's command line as evidence records it: credentials out. A header that
/// carries them keeps its name only, and a URL's password (in `--effects-url` or inside
/// `--effects-cmd`) is masked, as the server URLs of the labs are.
pub fn recorded(args: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut previous = String::new();
    for arg in args {
        let shown = match previous.as_str() {
            "--header" => redact_header(&arg),
            "--effects-cmd" | "--effects-url" => crate::servers::postgres::redact(&arg),
            _ => match arg.split_once('=') {
                Some(("--header", h)) => format!("--header={}", redact_header(h)),
                Some((flag @ ("--effects-cmd" | "--effects-url"), v)) => {
                    format!("{flag}={}", crate::servers::postgres::redact(v))
                }
                _ => arg.clone(),
            },
        };
        previous = arg;
        out.push(shown);
    }
    out
}

fn redact_header(header: &str) -> String {
    match header.split_once(':') {
        Some((name, _)) if template::secret(name) => {
            format!("{name}: (redacted)")
        }
        _ => header.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_the_recorded_command() {
        let args: Vec<String> = [
            "probe",
            "http://h/",
            "--header",
            "Authorization: Bearer s3cret",
            "--header=Cookie: a=b",
            "--header",
            "X-Tenant: 7",
            "--effects-cmd",
            "psql postgres://app:hunter2@db/shop -Atc 'select 1'",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let shown = recorded(args).join(" ");
        for secret in ["s3cret", "a=b", "hunter2"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("X-Tenant: 7"), "{shown}");
        assert!(shown.contains("Authorization: (redacted)"), "{shown}");
    }
}
