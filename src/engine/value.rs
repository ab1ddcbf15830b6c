//! A lab as a plain value: what the engine reads of it, with no code in it. `crashlab lab show
//! LAB --json` prints it; docs/lab-value.md writes its schema down. Every field is owned, so
//! the same value reads back from JSON (or from a lab file) as it was written.

use serde::{Deserialize, Serialize};

use crate::engine::explore::invariant::Invariant;
use crate::engine::explore::plan::Prediction;
use crate::engine::jepsen::Anomaly;
use crate::engine::scenario::{Expect, Step, Stop};
use crate::engine::{Lab, LabStack};

/// A lab: its names, its roles, and the lab on each of its stacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabValue {
    pub id: String,
    pub slug: String,
    pub title: String,
    /// Its roles' subcommands, whatever the stack.
    pub roles: Vec<String>,
    pub stacks: Vec<StackValue>,
}

/// A lab on one stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackValue {
    /// `--stack` name: `sqlite`, `postgres-rabbitmq`.
    pub name: String,
    pub title: String,
    /// The servers its roles need; none on SQLite files alone.
    pub servers: Option<ServersValue>,
    /// Its stores: SQLite files in the work directory, or logical names on the servers.
    pub stores: Vec<String>,
    /// The role subcommands of this stack, in protocol order.
    pub roles: Vec<String>,
    pub points: Vec<PointValue>,
    pub scenarios: Vec<ScenarioValue>,
    pub stages: Vec<StageValue>,
    /// What `explore` runs and predicts; none: the lab is not explored on this stack.
    pub explore: Option<ExploreValue>,
    /// Whether `chaos` and `bench` can put it under load.
    pub load: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServersValue {
    /// PostgreSQL databases by logical name; each scenario or case gets fresh ones.
    pub databases: Vec<String>,
    /// RabbitMQ queues by logical name.
    pub queues: Vec<String>,
    /// Settings of a private PostgreSQL cluster: (name, value).
    pub pg_settings: Vec<(String, String)>,
}

/// A crash point: `role.when`, and the window a crash there leaves open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointValue {
    pub name: String,
    pub window: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioValue {
    pub name: String,
    /// Its evidence subdirectory; none: the run's top directory.
    pub dir: Option<String>,
    pub steps: Vec<StepValue>,
}

/// One process a scenario runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepValue {
    pub name: String,
    pub role: String,
    /// Its flags after the role, crash flags apart.
    pub args: Vec<String>,
    /// `POINT[@N]` where it crashes.
    pub crash: Option<String>,
    pub expected_exit: i32,
    pub expect: ExpectValue,
    pub background: Option<BackgroundValue>,
}

/// What a step must show beyond its exit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ExpectValue {
    Exit,
    /// The `CRASH <point>` line.
    Crash,
    /// This text in its stdout or stderr.
    Output(String),
    /// A readback that shows this stage.
    Readback(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundValue {
    /// The event it is ready by: `ready`, `lock-held`, `paused`.
    pub ready: String,
    /// The step after which it is stopped; none: at the scenario's end.
    pub stop_after: Option<String>,
    /// `term`, `wait` or `continue`.
    pub stop: String,
}

/// The state a readback must show: dotted paths into its JSON and their values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageValue {
    pub name: String,
    pub fields: Vec<(String, i64)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExploreValue {
    /// Every design, the correct one first.
    pub designs: Vec<String>,
    /// Where each broken design breaks under process crashes.
    pub predictions: Vec<PredictionValue>,
    /// Under power loss: design `<profile>/<cut>`.
    pub power_predictions: Vec<PredictionValue>,
    /// Under server kills: design `<design>/<server>[/<queue type>]`.
    pub server_predictions: Vec<PredictionValue>,
    /// Designs that break without any crash (a stall).
    pub breaks_without_crash: Vec<String>,
    /// Whether its cases run one at a time.
    pub serial: bool,
}

/// Where a design breaks, exactly: these invariants, with these anomalies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictionValue {
    pub design: String,
    pub at: Vec<AtValue>,
    pub invariants: Vec<Invariant>,
    pub anomalies: Vec<Anomaly>,
    pub says: String,
    pub hidden: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtValue {
    pub point: String,
    /// The hits where it breaks; empty: every hit.
    pub hits: Vec<u32>,
}

impl LabValue {
    /// The value of a lab, on all its stacks or on the one named.
    pub fn of(lab: &'static Lab, stack: Option<&str>) -> anyhow::Result<LabValue> {
        let stacks = match stack {
            Some(_) => vec![crate::engine::registry::on(lab, stack)?],
            None => lab.stacks.to_vec(),
        };
        Ok(LabValue {
            id: lab.id.to_string(),
            slug: lab.slug.to_string(),
            title: lab.title.to_string(),
            roles: lab.role_names().iter().map(|r| r.to_string()).collect(),
            stacks: stacks.into_iter().map(StackValue::of).collect(),
        })
    }
}

/// The value in a few lines a person reads: per stack, its servers, roles, points,
/// scenarios with their steps, and designs.
pub fn summary(value: &LabValue) -> String {
    let mut text = format!("lab {} ({}): {}\n", value.id, value.slug, value.title);
    for stack in &value.stacks {
        text.push_str(&format!("stack {}: {}\n", stack.name, stack.title));
        if let Some(servers) = &stack.servers {
            let mut parts = vec![format!(
                "PostgreSQL databases {}",
                servers.databases.join(", ")
            )];
            if !servers.queues.is_empty() {
                parts.push(format!("RabbitMQ queues {}", servers.queues.join(", ")));
            }
            text.push_str(&format!("  servers: {}\n", parts.join("; ")));
        }
        text.push_str(&format!("  stores: {}\n", stack.stores.join(", ")));
        text.push_str(&format!("  roles: {}\n", stack.roles.join(", ")));
        text.push_str(&format!("  points: {}\n", stack.points.len()));
        for scenario in &stack.scenarios {
            let steps: Vec<String> = scenario
                .steps
                .iter()
                .map(|s| match &s.crash {
                    Some(point) => format!("{} ({})", s.name, point),
                    None => s.name.clone(),
                })
                .collect();
            text.push_str(&format!(
                "  scenario {}: {}\n",
                scenario.name,
                steps.join(", ")
            ));
        }
        if let Some(explore) = &stack.explore {
            text.push_str(&format!("  designs: {}\n", explore.designs.join(", ")));
        }
    }
    text.push_str("`--json` prints the whole value (docs/lab-value.md).");
    text
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

impl StackValue {
    fn of(on: &LabStack) -> StackValue {
        StackValue {
            name: on.stack_name().to_string(),
            title: on.title.to_string(),
            servers: on.stack.map(|def| ServersValue {
                databases: strings(def.databases),
                queues: strings(def.queues),
                pg_settings: def
                    .pg_settings
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }),
            stores: strings(on.databases),
            roles: strings(on.roles),
            points: on
                .points
                .iter()
                .map(|p| PointValue {
                    name: p.name.to_string(),
                    window: p.window.to_string(),
                })
                .collect(),
            scenarios: (on.scenarios)()
                .iter()
                .map(|s| ScenarioValue {
                    name: s.name.clone(),
                    dir: s.dir.clone(),
                    steps: s.steps.iter().map(StepValue::of).collect(),
                })
                .collect(),
            stages: on
                .stages
                .iter()
                .map(|s| StageValue {
                    name: s.name.to_string(),
                    fields: s.fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                })
                .collect(),
            explore: on.explore.map(|plan| ExploreValue {
                designs: strings(plan.designs()),
                predictions: predictions(plan.predictions()),
                power_predictions: predictions(plan.power_predictions()),
                server_predictions: predictions(plan.server_predictions()),
                breaks_without_crash: plan
                    .designs()
                    .iter()
                    .filter(|d| plan.breaks_without_crash(d))
                    .map(|d| d.to_string())
                    .collect(),
                serial: plan.serial(),
            }),
            load: on.load.is_some(),
        }
    }
}

impl StepValue {
    fn of(step: &Step) -> StepValue {
        StepValue {
            name: step.name.clone(),
            role: step.phase.to_string(),
            args: step.args.clone(),
            crash: step.crash.clone(),
            expected_exit: step.expected_exit,
            expect: match &step.expect {
                Expect::Exit => ExpectValue::Exit,
                Expect::Crash => ExpectValue::Crash,
                Expect::Output(text) => ExpectValue::Output(text.to_string()),
                Expect::Readback(stage) => ExpectValue::Readback(stage.name.to_string()),
            },
            background: step.background.map(|b| BackgroundValue {
                ready: b.ready.kind().to_string(),
                stop_after: b.stop_after.map(str::to_string),
                stop: match b.stop {
                    Stop::Term => "term",
                    Stop::Wait => "wait",
                    Stop::Continue => "continue",
                }
                .to_string(),
            }),
        }
    }
}

fn predictions(all: &[Prediction]) -> Vec<PredictionValue> {
    all.iter()
        .map(|p| PredictionValue {
            design: p.variant.to_string(),
            at: p
                .at
                .iter()
                .map(|a| AtValue {
                    point: a.point.to_string(),
                    hits: a.hits.to_vec(),
                })
                .collect(),
            invariants: p.invariants.to_vec(),
            anomalies: p.anomalies.to_vec(),
            says: p.says.to_string(),
            hidden: p.hidden.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every built-in lab's value, whole and per stack, reads back from its JSON as it was.
    #[test]
    fn every_lab_value_round_trips_through_json() {
        for lab in crate::engine::registry::labs() {
            let mut values = vec![LabValue::of(lab, None).unwrap()];
            for name in lab.stack_names() {
                values.push(LabValue::of(lab, Some(name)).unwrap());
            }
            for value in values {
                let text = serde_json::to_string_pretty(&value).unwrap();
                let back: LabValue = serde_json::from_str(&text).unwrap();
                assert_eq!(back, value, "lab {}", lab.id);
                assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
            }
        }
    }

    /// The value says what the lab is: its stacks, every point and scenario step of each; a
    /// step runs a role of a lab (its own, or another's: f3 calls lab 13's receiver).
    #[test]
    fn a_value_holds_every_stack_point_and_step() {
        let every_role: Vec<&str> = crate::engine::registry::labs()
            .iter()
            .flat_map(|l| l.role_names())
            .collect();
        for lab in crate::engine::registry::labs() {
            let value = LabValue::of(lab, None).unwrap();
            assert_eq!(value.stacks.len(), lab.stacks.len());
            for (on, v) in lab.stacks.iter().zip(&value.stacks) {
                assert_eq!(v.points.len(), on.points.len());
                let steps: usize = (on.scenarios)().iter().map(|s| s.steps.len()).sum();
                let listed: usize = v.scenarios.iter().map(|s| s.steps.len()).sum();
                assert_eq!(listed, steps, "lab {} on {}", lab.id, v.name);
                for step in v.scenarios.iter().flat_map(|s| &s.steps) {
                    assert!(
                        every_role.contains(&step.role.as_str()),
                        "{}: {}",
                        v.name,
                        step.role
                    );
                }
            }
        }
        let err = LabValue::of(crate::engine::registry::labs()[0], Some("no-such")).unwrap_err();
        assert!(err.to_string().contains("no stack 'no-such'"), "{err}");
    }
}
