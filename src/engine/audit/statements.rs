//! Every traced statement must be one SQLite accepts on its database's schema: each is
//! prepared (never run) on an in-memory database holding that schema, and a `CREATE` must be
//! one of the schema's own. For a driver run the replay goes further (it runs them); chaos
//! runs its processes at once, so their histories cannot be replayed in one order, but what
//! one log shows can still be checked line by line.

use std::collections::BTreeMap;

use rusqlite::Connection;

use crate::engine::LabStack;
use crate::store::Schema;

/// The schemas of a lab's databases, by the short names its traces use.
pub fn schemas(lab: &LabStack) -> Vec<&'static Schema> {
    lab.schemas.to_vec()
}

/// Problems reported per log: one is enough to fail it, a few say where.
const PROBLEMS_MAX: usize = 3;

pub struct Preparer {
    /// By the short name traces use, a connection holding that schema.
    with_schema: BTreeMap<&'static str, Connection>,
    /// By the same name, the schema's DDL on one line, as the trace prints it: a `CREATE`
    /// must be one of its statements (a database holding the schema would refuse it).
    ddl: BTreeMap<&'static str, String>,
    /// Statements already accepted, by database: roles repeat their set-up statements in
    /// every process, and each needs preparing once.
    accepted: std::collections::HashSet<(String, String)>,
}

impl Preparer {
    pub fn new(schemas: &[&'static Schema]) -> rusqlite::Result<Preparer> {
        let mut with_schema = BTreeMap::new();
        let mut ddl = BTreeMap::new();
        for schema in schemas {
            let conn = Connection::open_in_memory()?;
            conn.execute_batch(schema.ddl)?;
            with_schema.insert(schema.db, conn);
            let one_line: Vec<&str> = schema
                .ddl
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            ddl.insert(schema.db, one_line.join(" "));
        }
        Ok(Preparer {
            with_schema,
            ddl,
            accepted: std::collections::HashSet::new(),
        })
    }

    /// Lines of `stdout` whose statement does not prepare, as problems.
    pub fn check(&mut self, stdout: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for (index, line) in stdout.lines().enumerate() {
            let Some(rest) = line.strip_prefix("SQL ") else {
                continue;
            };
            let (db, statement) = rest.split_once(' ').unwrap_or((rest, ""));
            let Some(conn) = self.with_schema.get(db) else {
                // A database the role may not touch is said by output.rs.
                continue;
            };
            let trimmed = statement.trim_start();
            if trimmed.starts_with("--") {
                // The trace's note for a pragma table-valued call, not a statement.
                continue;
            }
            let key = (db.to_string(), statement.to_string());
            if self.accepted.contains(&key) {
                continue;
            }
            let refused = if trimmed.starts_with("CREATE ") {
                let known = self.ddl.get(db).is_some_and(|d| d.contains(trimmed));
                (!known).then(|| format!("not a statement of the {db} schema"))
            } else {
                conn.prepare(statement)
                    .err()
                    .map(|e| format!("a statement SQLite does not accept on {db}: {e}"))
            };
            if refused.is_none() {
                self.accepted.insert(key);
            }
            if let Some(why) = refused {
                problems.push(format!("line {}: {why}", index + 1));
                if problems.len() >= PROBLEMS_MAX {
                    break;
                }
            }
        }
        problems
    }
}
