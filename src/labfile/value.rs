//! A lab file as the value `crashlab lab show --json` prints for a built-in lab: one stack,
//! `sqlite`; its checks are its stages; its designs and predictions are explore's.

use super::lab::{StepDef, StoreKind, UserLab};
use crate::engine::explore::invariant::Invariant;
use crate::engine::jepsen::Anomaly;
use crate::engine::value::{
    AtValue, BackgroundValue, ExpectValue, ExploreValue, LabValue, PointValue, PredictionValue,
    ScenarioValue, ServersValue, StackValue, StageValue, StepValue,
};

/// The invariant of the engine's vocabulary an anomaly breaks.
fn invariant_of(anomaly: Anomaly) -> Invariant {
    match anomaly {
        Anomaly::Duplicate | Anomaly::DuplicateDelivery => Invariant::NoDuplicateEffect,
        Anomaly::Unseen => Invariant::NothingStuck,
        _ => Invariant::NoLostEffect,
    }
}

pub fn to_value(lab: &UserLab) -> LabValue {
    let roles: Vec<String> = lab.roles.iter().map(|r| r.name.clone()).collect();
    let design = &lab.designs[0];
    let scenarios = lab
        .scenarios
        .iter()
        .map(|s| ScenarioValue {
            name: s.name.clone(),
            dir: None,
            steps: s
                .steps
                .iter()
                .enumerate()
                .filter_map(|(index, step)| match step {
                    // As a built-in lab's value says it: the background step's `stop_after`.
                    StepDef::Stop { .. } => None,
                    StepDef::Run {
                        name,
                        role,
                        crash,
                        exit,
                        ready,
                    } => Some(StepValue {
                        name: name.clone(),
                        role: role.clone(),
                        args: super::run::argv(
                            lab,
                            design,
                            role,
                            &super::run::Places::recorded(lab),
                        )
                        .into_iter()
                        .skip(1)
                        .collect(),
                        crash: crash.as_ref().map(|(p, h)| format!("{p}@{h}")),
                        expected_exit: match crash {
                            Some(_) => crate::fail::EXIT_CRASH,
                            None => *exit,
                        },
                        expect: match crash {
                            Some(_) => ExpectValue::Crash,
                            None => ExpectValue::Exit,
                        },
                        background: ready.as_ref().map(|ready| BackgroundValue {
                            ready: ready.clone(),
                            stop_after: s
                                .steps
                                .iter()
                                .position(
                                    |d| matches!(d, StepDef::Stop { step, .. } if *step == index),
                                )
                                .and_then(|stop| stop.checked_sub(1))
                                .map(|before| s.steps[before].name().to_string()),
                            stop: "term".into(),
                        }),
                    }),
                    StepDef::Check { name, check } => Some(StepValue {
                        name: name.clone(),
                        role: "check".into(),
                        args: Vec::new(),
                        crash: None,
                        expected_exit: 0,
                        expect: ExpectValue::Readback(check.clone()),
                        background: None,
                    }),
                })
                .collect(),
        })
        .collect();
    let predictions = lab
        .designs
        .iter()
        .flat_map(|d| {
            d.predict.iter().map(|p| {
                let mut invariants: Vec<Invariant> = Vec::new();
                for a in &p.anomalies {
                    if !invariants.contains(&invariant_of(*a)) {
                        invariants.push(invariant_of(*a));
                    }
                }
                PredictionValue {
                    design: d.name.clone(),
                    at: vec![AtValue {
                        point: p.point.clone(),
                        hits: p.hit.into_iter().collect(),
                    }],
                    invariants,
                    anomalies: p.anomalies.clone(),
                    says: format!("breaks at {}", p.at()),
                    hidden: String::new(),
                }
            })
        })
        .collect();
    let of = |kind| -> Vec<String> {
        lab.stores
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| s.name.clone())
            .collect()
    };
    let databases = of(StoreKind::Postgres);
    let servers = ServersValue {
        // A private PostgreSQL server's settings, where one is started.
        pg_settings: match databases.is_empty() {
            true => Vec::new(),
            false => super::postgres::SETTINGS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        databases,
        queues: of(StoreKind::Rabbitmq),
    };
    LabValue {
        id: lab.id.clone(),
        slug: lab.id.clone(),
        title: lab.title.clone(),
        roles: roles.clone(),
        stacks: vec![StackValue {
            // The servers its stores live on (`postgres-rabbitmq`), else `sqlite`.
            name: match (servers.databases.is_empty(), servers.queues.is_empty()) {
                (true, true) => "sqlite".into(),
                (false, true) => "postgres".into(),
                (true, false) => "rabbitmq".into(),
                (false, false) => "postgres-rabbitmq".into(),
            },
            title: lab.title.clone(),
            stores: lab
                .stores
                .iter()
                .map(|s| match s.kind.on_server() {
                    true => s.name.clone(),
                    false => s.file.clone(),
                })
                .collect(),
            servers: (!servers.databases.is_empty() || !servers.queues.is_empty())
                .then_some(servers),
            roles,
            points: lab
                .roles
                .iter()
                .flat_map(|r| &r.points)
                .map(|(name, window)| PointValue {
                    name: name.clone(),
                    window: window.clone(),
                })
                .collect(),
            scenarios,
            stages: Vec::<StageValue>::new(),
            explore: Some(ExploreValue {
                designs: lab.designs.iter().map(|d| d.name.clone()).collect(),
                predictions,
                power_predictions: Vec::new(),
                server_predictions: Vec::new(),
                breaks_without_crash: Vec::new(),
                serial: true,
            }),
            load: false,
        }],
    }
}

/// `crashlab points FILE`: every point, its role and window.
pub fn points_text(lab: &UserLab) -> String {
    let mut text = format!("lab {} ({}):\n", lab.id, lab.path.display());
    for role in &lab.roles {
        for (name, window) in &role.points {
            text.push_str(&format!("  {name:<34} {window} [{}]\n", role.name));
        }
    }
    text.trim_end().to_string()
}
