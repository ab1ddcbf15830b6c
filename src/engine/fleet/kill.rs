//! The server-kill nemesis: the armed role SIGKILLs itself at the point (nothing after the
//! point runs), then the engine SIGKILLs the whole server (PostgreSQL's postmaster and
//! backends, or the RabbitMQ node) and starts it again on the same data before the next step.
//! What the server acknowledged and had not made durable is lost, as after a machine crash
//! of the server alone.

use anyhow::Result;

use crate::crash::{self, Mode};
use crate::engine::nemesis::{Aftermath, Nemesis};
use crate::engine::stack::Server;

/// The name recorded in the evidence (`crash_mode`).
pub const NAME: &str = "server-kill";

pub struct ServerKill(pub Server);

impl Nemesis for ServerKill {
    fn name(&self) -> &'static str {
        NAME
    }

    fn arm(&self, point: &str) -> Vec<String> {
        vec![
            "--crash-at".into(),
            point.into(),
            "--crash-mode".into(),
            Mode::Kill.name().into(),
        ]
    }

    fn expected_exit(&self) -> i32 {
        Mode::Kill.expected_exit()
    }

    fn crash_line(&self, point: &str) -> String {
        crash::crash_line(point, Mode::Kill)
    }

    fn after_crash(&self, aftermath: &Aftermath<'_>) -> Result<()> {
        super::kill_and_restart(self.0, aftermath.point)
    }

    fn role_mode(&self) -> &'static str {
        Mode::Kill.name()
    }
}

static POSTGRES: ServerKill = ServerKill(Server::Postgres);
static RABBITMQ: ServerKill = ServerKill(Server::Rabbitmq);

/// The nemesis that kills `server`.
pub fn of(server: Server) -> &'static dyn Nemesis {
    match server {
        Server::Postgres => &POSTGRES,
        Server::Rabbitmq => &RABBITMQ,
    }
}

/// Whether a nemesis kills servers (it needs private ones).
pub fn kills_servers(nemesis: &dyn Nemesis) -> bool {
    nemesis.name() == NAME
}
