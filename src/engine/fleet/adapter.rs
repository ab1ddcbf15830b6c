//! The engine's servers are `crate::servers::Servers`.

use std::path::Path;

use anyhow::Result;

use super::Fleet;
use crate::engine::stack::{Server, StackArgs, StackDef};
use crate::servers::{Kind, Servers, Want};
use crate::stackfile::StackFile;

fn kind(server: Server) -> Kind {
    match server {
        Server::Postgres => Kind::Postgres,
        Server::Rabbitmq => Kind::Rabbitmq,
    }
}

impl Fleet for Servers {
    fn prepare(&self, def: &StackDef, tag: &str, work: &Path) -> Result<StackFile> {
        Servers::prepare(self, def, tag, work)
    }

    fn release(&self, file: &StackFile) -> Result<()> {
        Servers::release(self, file)
    }

    fn private(&self) -> bool {
        Servers::private(self)
    }

    fn kill(&mut self, server: Server) -> Result<()> {
        Servers::kill(self, kind(server))
    }

    fn restart(&mut self, server: Server) -> Result<()> {
        Servers::restart(self, kind(server)).map(|_| ())
    }

    fn settle(&mut self, def: &StackDef, tag: &str) -> Result<()> {
        Servers::settle(self, def, tag)
    }

    fn startups(&self) -> serde_json::Value {
        serde_json::to_value(Servers::startups(self)).unwrap_or_default()
    }

    fn stop(self: Box<Self>) -> Result<()> {
        Servers::stop(*self)
    }
}

/// Start (or reach) the servers of `def` under `dir`.
pub fn start(def: &StackDef, args: &StackArgs, dir: &Path) -> Result<Box<dyn Fleet>> {
    let want = Want {
        queue_type: args.queue_type.unwrap_or_default(),
        ..Want::of(def, args.pg_url.as_deref(), args.amqp_url.as_deref())
    };
    Ok(Box::new(Servers::start(&want, dir)?))
}
