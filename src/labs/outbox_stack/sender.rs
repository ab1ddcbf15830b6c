//! The business transaction on the stack: contract + Outbox row in one PostgreSQL commit.

use anyhow::Result;

use super::pg::{self, Session, Val};
use super::points;
use super::schema::SENDER;
use crate::crash;
use crate::fail;
use crate::labs::outbox_inbox::model::{check_amount, check_id};
use crate::labs::outbox_inbox::sender::Contract;
use crate::out;

/// PostgreSQL's SQLSTATE of a unique or primary-key violation.
const UNIQUE_VIOLATION: &str = "23505";

/// Write each contract and its Outbox row in a transaction of its own. Contracts already
/// present (a restarted generator) are skipped by the caller (`generated`).
pub fn run(db: &str, contracts: &[Contract]) -> Result<usize> {
    if contracts.len() > crate::labs::outbox_inbox::sender::CONTRACTS_MAX {
        return Err(fail::usage("too many contracts for one sender run"));
    }
    for c in contracts {
        check_id("contract", &c.contract)?;
        check_id("message", &c.message)?;
        check_amount(c.amount)?;
    }
    let mut pg = pg::open(db, &SENDER, Session::Durable, true)?;
    for c in contracts {
        let result = (|| {
            pg.run("BEGIN", &[])?;
            pg.run(
                "INSERT INTO contracts(contract_id, amount) VALUES ($1, $2)",
                &[Val::Text(&c.contract), Val::Int(c.amount)],
            )?;
            pg.run(
                "INSERT INTO outbox(message_id, contract_id, amount, status) VALUES ($1, $2, $3, 'pending')",
                &[Val::Text(&c.message), Val::Text(&c.contract), Val::Int(c.amount)],
            )?;
            crash::point(points::SENDER_BEFORE_COMMIT);
            pg.run("COMMIT", &[])
        })();
        if let Err(e) = result {
            let unique = e.code().is_some_and(|s| s.code() == UNIQUE_VIOLATION);
            pg.rollback();
            if unique {
                return Err(fail::usage(format!(
                    "contract {} or message {} already exists in sender database {}; nothing written",
                    c.contract, c.message, pg.shown
                )));
            }
            return Err(pg.explain(e));
        }
        out::committed(
            "sender",
            &format!(
                "contract {} message {} amount {}",
                c.contract, c.message, c.amount
            ),
        );
        crash::point(points::SENDER_AFTER_COMMIT);
    }
    Ok(contracts.len())
}

/// N generated contracts `C000001…` (messages `M000001…`, amounts from the seed); those the
/// database already holds are skipped (they were written in order).
pub fn generated(db: &str, count: usize, seed: u64) -> Result<Vec<Contract>> {
    let mut pg = pg::open(db, &SENDER, Session::Durable, true)?;
    let already = pg
        .run("SELECT count(*) FROM contracts", &[])
        .map_err(|e| pg.explain(e))?
        .int();
    let already = usize::try_from(already).unwrap_or(0).min(count);
    let amounts = crate::rng::amounts(seed, count);
    Ok((already..count)
        .map(|i| Contract {
            contract: format!("C{:06}", i + 1),
            message: format!("M{:06}", i + 1),
            amount: amounts[i],
        })
        .collect())
}
