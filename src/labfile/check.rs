//! Validating a lab file: every name another key refers to exists, every placeholder names
//! something, every query prepares on the stores' schemas, no name is given twice. The first
//! mistake is `LINE:COL: what`.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::evidence;
use super::lab::{
    CheckDef, DesignDef, InvariantDef, PredictDef, RoleDef, ScenarioDef, StepDef, StoreDef,
    StoreKind, UserLab,
};
use super::schema::{Args, FileLab};
use crate::engine::jepsen::Anomaly;

/// A mistake: where it starts in the text, and what it is.
struct Mistake(usize, String);

type Checked<T> = Result<T, Mistake>;

fn at<T>(spanned: &Spanned<T>, what: String) -> Mistake {
    Mistake(spanned.span().start, what)
}

/// `LINE:COL` of a byte offset, both from 1.
pub(super) fn line_col(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("{line}:{col}")
}

pub(super) fn validate(text: &str, path: &Path, dir: &Path) -> Result<UserLab, String> {
    let file: FileLab = toml::from_str(text).map_err(|e| {
        let start = e.span().map_or(0, |s: Range<usize>| s.start);
        format!("{}: {}", line_col(text, start), e.message().trim())
    })?;
    let mut lab = resolve(file, path, dir)
        .map_err(|Mistake(offset, what)| format!("{}: {what}", line_col(text, offset)))?;
    lab.text = text.to_string();
    Ok(lab)
}

fn unique<'a>(seen: &mut BTreeSet<&'a str>, name: &'a Spanned<String>, kind: &str) -> Checked<()> {
    match seen.insert(name.get_ref().as_str()) {
        true => Ok(()),
        false => Err(at(
            name,
            format!("{kind} '{}' is named twice", name.get_ref()),
        )),
    }
}

/// A name that becomes part of a path in the run's directory (a scenario, a step, a check, a
/// design): letters, digits, `-`, `_` and `.`, not first, so it stays where it is put.
fn plain_name(name: &Spanned<String>, kind: &str) -> Checked<()> {
    let text = name.get_ref();
    let plain = !text.is_empty()
        && !text.starts_with('.')
        && text.len() <= 100
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    // The evidence's own files and directories, beside a scenario's (driver) or a design's
    // (explore) directory.
    let reserved = text == evidence::COPY_DIR || text.ends_with(".json") || text.ends_with(".html");
    if plain && reserved {
        return Err(at(
            name,
            format!(
                "{kind} name '{text}' is the evidence's own ('{}', *.json, *.html)",
                evidence::COPY_DIR
            ),
        ));
    }
    match plain {
        true => Ok(()),
        false => Err(at(
            name,
            format!("{kind} name '{text}': use letters, digits, '-', '_' and '.' (not first), at most 100"),
        )),
    }
}

fn anomaly(name: &Spanned<String>) -> Checked<Anomaly> {
    serde_json::from_value(serde_json::Value::String(name.get_ref().clone())).map_err(|_| {
        at(
            name,
            format!(
                "unknown anomaly '{}' (lost-write, duplicate, unseen)",
                name.get_ref()
            ),
        )
    })
}

fn resolve(file: FileLab, path: &Path, dir: &Path) -> Checked<UserLab> {
    let mut stores = Vec::new();
    for (name, store) in &file.stores {
        // A store's name is a SQL schema name in every query (`app.orders`), a placeholder's
        // key and, on a server, its copy's file name: a plain identifier.
        let identifier = name.len() <= 64
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            return Err(at(
                store,
                format!("a store's name '{name}': use letters, digits and '_', a letter or '_' first, at most 64"),
            ));
        }
        let schema = match &store.get_ref().schema {
            None => None,
            Some(schema) => Some(std::fs::read_to_string(dir.join(schema.get_ref())).map_err(
                |e| {
                    at(
                        schema,
                        format!("store '{name}': cannot read its schema: {e}"),
                    )
                },
            )?),
        };
        if let Some(schema) = &store.get_ref().schema {
            if Path::new(schema.get_ref()).file_name() == Path::new(evidence::COPY).file_name()
                && !schema.get_ref().contains('/')
            {
                return Err(at(
                    schema,
                    format!("store '{name}': a schema file beside the lab file may not be named crashlab.toml: the evidence keeps the lab file's copy under that name"),
                ));
            }
        }
        let declared = (
            &store.get_ref().sqlite,
            store.get_ref().postgres.as_ref().map(|p| *p.get_ref()),
            store.get_ref().rabbitmq.as_ref().map(|r| *r.get_ref()),
        );
        let (file, kind) = match declared {
            (Some(sqlite), None, None) => {
                if sqlite.get_ref().is_empty() || sqlite.get_ref().contains('/') {
                    return Err(at(
                        sqlite,
                        "a store's file is a plain name in the run's directory".into(),
                    ));
                }
                (sqlite.get_ref().clone(), StoreKind::Sqlite)
            }
            (None, Some(true), None) => (format!("{name}.postgres.db"), StoreKind::Postgres),
            (None, None, Some(true)) => (format!("{name}.rabbitmq.db"), StoreKind::Rabbitmq),
            _ => {
                return Err(at(
                    store,
                    format!("store '{name}': say one of sqlite = \"FILE\", postgres = true or rabbitmq = true"),
                ))
            }
        };
        if let (StoreKind::Rabbitmq, Some(schema)) = (kind, &store.get_ref().schema) {
            return Err(at(
                schema,
                format!("store '{name}': a queue has no schema (its copy is one table, messages)"),
            ));
        }
        if let Some(other) = stores.iter().find(|s: &&StoreDef| s.file == file) {
            return Err(at(
                store,
                format!(
                    "store '{name}': its file {file} is store '{}''s too",
                    other.name
                ),
            ));
        }
        stores.push(StoreDef {
            name: name.clone(),
            file,
            kind,
            schema,
            schema_file: store.get_ref().schema.as_ref().map(|s| s.get_ref().clone()),
        });
    }
    let mut roles = Vec::new();
    let mut all_points = BTreeSet::new();
    for (name, spanned) in &file.roles {
        let role = spanned.get_ref();
        plain_name(&Spanned::new(spanned.span(), name.clone()), "a role's")?;
        if role.command.is_empty() {
            return Err(at(spanned, format!("role '{name}' has an empty command")));
        }
        for item in &role.command {
            placeholders(item, &stores)?;
        }
        for point in role.points.keys() {
            // A point's name becomes part of an explore case's directory.
            plain_name(&Spanned::new(spanned.span(), point.clone()), "a point's")?;
            if !all_points.insert(point.clone()) {
                return Err(at(
                    spanned,
                    format!("point '{point}' is declared by two roles"),
                ));
            }
        }
        roles.push(RoleDef {
            name: name.clone(),
            command: role.command.iter().map(|c| c.get_ref().clone()).collect(),
            points: role
                .points
                .iter()
                .map(|(p, w)| (p.clone(), w.clone()))
                .collect(),
        });
    }
    let mut checks = Vec::new();
    let mut seen = BTreeSet::new();
    for check in &file.checks {
        let check = check.get_ref();
        unique(&mut seen, &check.name, "check")?;
        plain_name(&check.name, "a check's")?;
        let expect = match &check.expect {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::String(s) => s.clone(),
            other => {
                return Err(at(
                    &check.name,
                    format!(
                        "check '{}': expect is an integer or a string, not {}",
                        check.name.get_ref(),
                        other.type_str()
                    ),
                ))
            }
        };
        checks.push(CheckDef {
            name: check.name.get_ref().clone(),
            sql: check.sql.get_ref().clone(),
            sql_at: check.sql.span().start,
            expect,
        });
    }
    let mut invariants = Vec::new();
    let mut seen = BTreeSet::new();
    for inv in &file.invariants {
        let inv = inv.get_ref();
        unique(&mut seen, &inv.name, "invariant")?;
        invariants.push(InvariantDef {
            name: inv.name.get_ref().clone(),
            anomaly: anomaly(&inv.anomaly)?,
            sql: inv.sql.get_ref().clone(),
            sql_at: inv.sql.span().start,
        });
    }
    queries(&stores, &checks, &invariants)?;
    let lab = |name: &str| roles.iter().find(|r: &&RoleDef| r.name == name);
    let mut scenarios = Vec::new();
    let mut seen = BTreeSet::new();
    for scenario in &file.scenarios {
        let scenario = scenario.get_ref();
        unique(&mut seen, &scenario.name, "scenario")?;
        plain_name(&scenario.name, "a scenario's")?;
        if scenario.steps.get_ref().is_empty() {
            return Err(at(
                &scenario.steps,
                format!("scenario '{}' has no steps", scenario.name.get_ref()),
            ));
        }
        let mut steps = Vec::new();
        let mut names = BTreeSet::new();
        for (i, step) in scenario.steps.get_ref().iter().enumerate() {
            let s = step.get_ref();
            let def = match (&s.role, &s.check, &s.stop) {
                (Some(role), None, None) => {
                    let Some(def) = lab(role.get_ref()) else {
                        return Err(at(
                            role,
                            format!(
                                "no role '{}' (roles: {})",
                                role.get_ref(),
                                roles
                                    .iter()
                                    .map(|r| r.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    };
                    let crash = match &s.crash {
                        None => None,
                        Some(spec) => {
                            let (point, hit) = point_hit(spec)?;
                            if !def.points.iter().any(|(p, _)| *p == point) {
                                return Err(at(
                                    spec,
                                    format!("role '{}' declares no point '{point}'", def.name),
                                ));
                            }
                            Some((point, hit.unwrap_or(1)))
                        }
                    };
                    let ready = match &s.ready {
                        None => None,
                        Some(point) if def.points.iter().any(|(p, _)| p == point.get_ref()) => {
                            Some(point.get_ref().clone())
                        }
                        Some(point) => {
                            return Err(at(
                                point,
                                format!(
                                    "ready: role '{}' declares no point '{}'",
                                    def.name,
                                    point.get_ref()
                                ),
                            ))
                        }
                    };
                    StepDef::Run {
                        name: s
                            .name
                            .as_ref()
                            .map_or_else(|| def.name.clone(), |n| n.get_ref().clone()),
                        role: def.name.clone(),
                        crash,
                        exit: s.exit.unwrap_or(0),
                        ready,
                    }
                }
                (None, None, Some(stopped)) => {
                    let found = steps
                        .iter()
                        .position(|d: &StepDef| d.name() == stopped.get_ref());
                    let Some(index) = found else {
                        return Err(at(
                            stopped,
                            format!("stop: no step '{}' before it", stopped.get_ref()),
                        ));
                    };
                    if !matches!(&steps[index], StepDef::Run { ready: Some(_), .. }) {
                        return Err(at(
                            stopped,
                            format!(
                                "stop: step '{}' does not run in the background (give it `ready`)",
                                stopped.get_ref()
                            ),
                        ));
                    }
                    if steps
                        .iter()
                        .any(|d| matches!(d, StepDef::Stop { step, .. } if *step == index))
                    {
                        return Err(at(
                            stopped,
                            format!("stop: step '{}' is stopped twice", stopped.get_ref()),
                        ));
                    }
                    StepDef::Stop {
                        name: s.name.as_ref().map_or_else(
                            || format!("stop-{}", stopped.get_ref()),
                            |n| n.get_ref().clone(),
                        ),
                        step: index,
                    }
                }
                (None, Some(check), None) => {
                    if !checks.iter().any(|c: &CheckDef| &c.name == check.get_ref()) {
                        return Err(at(check, format!("no check '{}'", check.get_ref())));
                    }
                    StepDef::Check {
                        name: s.name.as_ref().map_or_else(
                            || format!("check-{}", check.get_ref()),
                            |n| n.get_ref().clone(),
                        ),
                        check: check.get_ref().clone(),
                    }
                }
                _ => {
                    return Err(at(
                        step,
                        format!(
                            "step {} of scenario '{}' needs one of `role`, `check` and `stop`",
                            i + 1,
                            scenario.name.get_ref()
                        ),
                    ))
                }
            };
            if let Some(name) = &s.name {
                plain_name(name, "a step's")?;
            }
            // `crash`, `exit` and `ready` say how a role runs: on another step they are a
            // mistake, never ignored.
            if !matches!(def, StepDef::Run { .. })
                && (s.crash.is_some() || s.exit.is_some() || s.ready.is_some())
            {
                return Err(at(
                    step,
                    format!(
                        "step '{}': `crash`, `exit` and `ready` belong to a step that runs a role",
                        def.name()
                    ),
                ));
            }
            if !names.insert(def.name().to_string()) {
                return Err(at(
                    step,
                    format!(
                        "step '{}' is named twice in scenario '{}' (give it a `name`)",
                        def.name(),
                        scenario.name.get_ref()
                    ),
                ));
            }
            steps.push(def);
        }
        // A background step runs until a later step stops it: none outlives its scenario.
        for (index, def) in steps.iter().enumerate() {
            let stopped = steps
                .iter()
                .any(|d| matches!(d, StepDef::Stop { step, .. } if *step == index));
            if matches!(def, StepDef::Run { ready: Some(_), .. }) && !stopped {
                return Err(at(
                    &scenario.steps,
                    format!(
                        "scenario '{}': background step '{}' is never stopped (add {{ stop = \"{}\" }})",
                        scenario.name.get_ref(),
                        def.name(),
                        def.name()
                    ),
                ));
            }
        }
        scenarios.push(ScenarioDef {
            name: scenario.name.get_ref().clone(),
            steps,
        });
    }
    let mut designs = Vec::new();
    let mut seen = BTreeSet::new();
    for design in &file.designs {
        let d = design.get_ref();
        unique(&mut seen, &d.name, "design")?;
        plain_name(&d.name, "a design's")?;
        if let Some(key) = d.env.keys().find(|k| k.starts_with("CRASHLAB_")) {
            return Err(at(
                design,
                format!(
                    "design '{}': env {key}: the CRASHLAB_ variables are the harness's (docs/own-system.md, the point protocol)",
                    d.name.get_ref()
                ),
            ));
        }
        let Some(predict) = &d.predict else {
            return Err(at(design, format!("design '{}' has no predictions: give `predict` (`predict = []`: it holds everywhere)", d.name.get_ref())));
        };
        let mut predictions = Vec::new();
        for p in predict {
            let p = p.get_ref();
            let (point, hit) = point_hit(&p.at)?;
            if !all_points.contains(&point) {
                return Err(at(&p.at, format!("no role declares the point '{point}'")));
            }
            let mode = match &p.mode {
                None => None,
                Some(m) => Some(crate::point::mode_named(m.get_ref()).ok_or_else(|| {
                    at(
                        m,
                        format!(
                            "unknown crash mode '{}' (exit, abort, kill, hang)",
                            m.get_ref()
                        ),
                    )
                })?),
            };
            predictions.push(PredictDef {
                point,
                hit,
                anomalies: p.anomalies.iter().map(anomaly).collect::<Checked<_>>()?,
                mode,
            });
        }
        let (args, role_args) = match d.args.as_ref().map(Spanned::get_ref) {
            None => (Vec::new(), Vec::new()),
            Some(Args::Every(args)) => (args.clone(), Vec::new()),
            Some(Args::ByRole(by_role)) => {
                if let Some(role) = by_role.keys().find(|r| !file.roles.contains_key(*r)) {
                    return Err(at(
                        d.args.as_ref().expect("given"),
                        format!(
                            "design '{}': args for role '{role}', which no role is",
                            d.name.get_ref()
                        ),
                    ));
                }
                let by_role: Vec<(String, Vec<String>)> = by_role
                    .iter()
                    .map(|(r, a)| (r.clone(), a.clone()))
                    .collect();
                (Vec::new(), by_role)
            }
        };
        designs.push(DesignDef {
            name: d.name.get_ref().clone(),
            args,
            role_args,
            env: d.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            predict: predictions,
        });
    }
    if designs.is_empty() {
        return Err(Mistake(
            0,
            "a lab file needs at least one design (`[[designs]]`)".into(),
        ));
    }
    Ok(UserLab {
        text: String::new(),
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        id: file.id.get_ref().clone(),
        title: file.title,
        stores,
        roles,
        scenarios,
        checks,
        invariants,
        designs,
    })
}

/// `POINT[@HIT]` with HIT from 1 to `crash::HIT_MAX`.
fn point_hit(spec: &Spanned<String>) -> Checked<(String, Option<u32>)> {
    let text = spec.get_ref();
    match text.split_once('@') {
        None => Ok((text.clone(), None)),
        Some((point, n)) => match n.parse::<u32>() {
            Ok(hit) if (1..=crate::crash::HIT_MAX).contains(&hit) => {
                Ok((point.to_string(), Some(hit)))
            }
            _ => Err(at(
                spec,
                format!(
                    "'{text}': the hit after @ is a number from 1 to {}",
                    crate::crash::HIT_MAX
                ),
            )),
        },
    }
}

/// The placeholders a command item may hold: `{lab}`, `{run}`, `{crashlab}`, `{design}`,
/// `{design.args}` (a whole item), `{store.NAME}` of a declared store, and
/// `{store.NAME.queue}` of a RabbitMQ store.
fn placeholders(item: &Spanned<String>, stores: &[StoreDef]) -> Checked<()> {
    let text = item.get_ref();
    let mut rest = text.as_str();
    let mut offset = 0;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            return Err(Mistake(
                item.span().start + 1 + offset + open,
                format!("'{text}': a placeholder is not closed with }}"),
            ));
        };
        let name = &rest[open + 1..open + len];
        let known = match name.strip_prefix("store.") {
            Some(store) => stores.iter().any(|s| {
                s.name == store
                    || (s.kind == StoreKind::Rabbitmq
                        && store.strip_suffix(".queue") == Some(s.name.as_str()))
            }),
            None => {
                ["lab", "run", "design", "crashlab"].contains(&name)
                    || (name == "design.args" && text == "{design.args}")
            }
        };
        if !known {
            let what = match name.strip_prefix("store.") {
                Some(store) => match store
                    .strip_suffix(".queue")
                    .filter(|s| stores.iter().any(|d| d.name == *s))
                {
                    Some(s) => format!("placeholder {{{name}}}: store '{s}' is not a queue"),
                    None => format!("placeholder {{{name}}}: no store '{store}'"),
                },
                None if name == "design.args" => "{design.args} stands alone as a whole item".to_string(),
                None => format!("placeholder {{{name}}} names nothing ({{lab}}, {{run}}, {{crashlab}}, {{design}}, {{design.args}}, {{store.NAME}}, {{store.NAME.queue}})"),
            };
            return Err(Mistake(item.span().start + 1 + offset + open, what));
        }
        offset += open + len + 1;
        rest = &rest[open + len + 1..];
    }
    Ok(())
}

/// Every check and invariant query prepares (not runs) on the stores made from their
/// schemas, all attached by name; when a store has no schema its tables are unknown until a
/// role makes them, and the queries are prepared at run time instead.
fn queries(stores: &[StoreDef], checks: &[CheckDef], invariants: &[InvariantDef]) -> Checked<()> {
    // A PostgreSQL store's tables are known once the server made them: at run time too. A
    // queue's copy is always one table, made here as the run makes it.
    let unknown = |s: &StoreDef| match s.kind {
        StoreKind::Sqlite => s.schema.is_none(),
        StoreKind::Postgres => true,
        StoreKind::Rabbitmq => false,
    };
    if stores.iter().any(unknown) {
        return Ok(());
    }
    let made = crate::owner::tempdir("check").map_err(|e| {
        Mistake(
            0,
            format!("cannot make a directory to check the queries in: {e}"),
        )
    })?;
    let conn = super::stores::attach(made.path(), stores, true)
        .map_err(|e| Mistake(0, format!("{e:#}")))?;
    match refused_query(&conn, checks, invariants) {
        Some((at, e)) => Err(Mistake(at, format!("SQLite refuses the query: {e}"))),
        None => Ok(()),
    }
}

/// The first check or invariant query SQLite refuses to prepare on `conn` (every store
/// attached): where its SQL starts in the lab file, and why.
pub(super) fn refused_query(
    conn: &rusqlite::Connection,
    checks: &[CheckDef],
    invariants: &[InvariantDef],
) -> Option<(usize, rusqlite::Error)> {
    checks
        .iter()
        .map(|c| (&c.sql, c.sql_at))
        .chain(invariants.iter().map(|i| (&i.sql, i.sql_at)))
        .find_map(|(sql, at)| conn.prepare(sql).err().map(|e| (at, e)))
}
