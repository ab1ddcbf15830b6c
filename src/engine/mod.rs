//! The harness: labs as data, the driver that runs them as processes, the evidence it
//! writes, and the audit that re-checks evidence offline.

pub mod audit;
pub mod check;
pub mod crash_mode;
pub mod driver;
pub mod evidence;
pub mod explore;
pub mod files;
pub mod fleet;
pub mod freeze;
pub mod jepsen;
pub mod load;
pub mod nemesis;
pub mod observed;
pub mod process;
pub mod registry;
pub mod replay;
pub mod report;
pub mod rerun;
pub mod scenario;
pub mod stack;
pub mod state;
pub mod value;

use crate::crash::PointDef;
use crate::role::Stage;
use scenario::Scenario;

/// A lab: one story, run over the stacks it declares. The registry holds one per id; the
/// engine runs a lab on one of its stacks (`LabStack`), chosen by `--stack`.
pub struct Lab {
    /// Chapter number of the material it comes from: `14`.
    pub id: &'static str,
    pub slug: &'static str,
    pub title: &'static str,
    /// Its roles, each spelled once (`crate::role::Role`), whatever stack it runs on.
    pub roles: &'static [crate::role::RoleEntry],
    /// The lab on each stack it runs on, the default (`sqlite` where it has one) first.
    pub stacks: &'static [&'static LabStack],
}

impl Lab {
    /// `14-outbox-inbox`: the name in evidence and under `evidence/`.
    pub fn full_name(&self) -> String {
        format!("{}-{}", self.id, self.slug)
    }

    /// Every role name, once, in order: its own, then its stacks'.
    pub fn role_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.roles.iter().map(|r| r.name).collect();
        for on in self.stacks {
            for name in on.roles {
                if !names.contains(name) {
                    names.push(name);
                }
            }
        }
        names
    }

    /// The names of its stacks, in order: `sqlite, postgres-rabbitmq`.
    pub fn stack_names(&self) -> Vec<&'static str> {
        self.stacks.iter().map(|s| s.stack_name()).collect()
    }
}

/// Every point of a lab once, in the order its stacks list them, with the stacks it exists on.
pub fn points_of(lab: &Lab) -> Vec<(&'static PointDef, Vec<&'static str>)> {
    let mut points: Vec<(&'static PointDef, Vec<&'static str>)> = Vec::new();
    for on in lab.stacks {
        for point in on.points {
            match points.iter_mut().find(|(p, _)| p.name == point.name) {
                Some((_, stacks)) => stacks.push(on.stack_name()),
                None => points.push((point, vec![on.stack_name()])),
            }
        }
    }
    points
}

/// A lab on one stack: everything the driver and the audit need to know of it.
pub struct LabStack {
    /// The lab this is a stack of.
    pub lab: &'static Lab,
    /// What this stack's runs show, for tables and reports.
    pub title: &'static str,
    pub points: &'static [PointDef],
    /// Database files in the work directory, relative.
    pub databases: &'static [&'static str],
    pub scenarios: fn() -> Vec<Scenario>,
    /// The states its readback steps must show, by name (`verify --expect NAME`).
    pub stages: &'static [Stage],
    /// The kind of store its databases are (`state::SQLITE`): snapshots, logical digests,
    /// kept copies and the audit's checks of them go through it.
    pub store: &'static dyn state::StateStore,
    /// The subcommands that run its roles, in protocol order (`crashlab --help` groups them
    /// under the lab).
    pub roles: &'static [&'static str],
    /// What `chaos` and `bench` run, for a lab that can be put under load.
    pub load: Option<&'static dyn load::profile::LoadProfile>,
    /// What `crashlab explore` runs and predicts for it (None: the lab is not explored).
    pub explore: Option<&'static dyn explore::plan::ExplorePlan>,
    /// A scenario in Jepsen's words: its history of operations from what its steps observed
    /// (events, readbacks), with the anomalies the design allows and the scenario expects.
    pub history: fn(&str, &[observed::Seen<'_>]) -> Option<observed::History>,
    /// The schemas of its databases, by the short names its traces use (the audit prepares
    /// and the replay runs every traced statement on them).
    pub schemas: &'static [&'static crate::store::Schema],
    /// The readback its readback phase prints, taken on these databases (by argv flag):
    /// None for any other phase. The replay runs it on the replayed files.
    pub readback: fn(&str, &Databases<'_>) -> Option<Result<serde_json::Value, String>>,
    /// What the audit's replay needs to know of its roles: which serve on several threads,
    /// which print raw replies, and the checks of their printed claims.
    pub replay: replay::LabReplay,
    /// The servers its roles need (`stack::StackDef`); None for a lab on SQLite files alone.
    pub stack: Option<&'static stack::StackDef>,
    /// The crash modes driver, explore and chaos may inject in it on its stack
    /// (`crash_mode::ON_FILES`, …): `crash_mode::supported` refuses any other before anything
    /// starts. A lab takes `power-loss` only with power-loss predictions its explore passes.
    pub crash_modes: &'static [crash_mode::CrashMode],
}

/// Open databases by the argv flag that names their file (`sender`, `queue`, `db`).
pub type Databases<'a> = std::collections::BTreeMap<&'a str, &'a rusqlite::Connection>;

impl LabStack {
    pub fn id(&self) -> &'static str {
        self.lab.id
    }

    pub fn slug(&self) -> &'static str {
        self.lab.slug
    }

    /// `14-outbox-inbox`: the name in evidence and under `evidence/`.
    pub fn full_name(&self) -> String {
        self.lab.full_name()
    }

    /// `--stack` name of this stack: its servers', or `sqlite`.
    pub fn stack_name(&self) -> &'static str {
        stack::name_of(self.stack)
    }
}
