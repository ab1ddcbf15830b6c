//! The business transaction: contract + Outbox row, atomically, in `sender.db`.

use std::path::Path;

use anyhow::Result;
use rusqlite::{params, ErrorCode};

use crate::crash;
use crate::fail;
use crate::labs::outbox_inbox::model::{busy_wait, check_amount, check_id};
use crate::labs::outbox_inbox::points;
use crate::labs::outbox_inbox::schema::SENDER;
use crate::out;
use crate::store::{self, Access};

/// One business fact to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contract {
    pub contract: String,
    pub message: String,
    pub amount: i64,
}

/// Largest number of contracts one sender run writes.
pub const CONTRACTS_MAX: usize = 1_000_000;

/// Write `contracts` in transactions of `batch`, each holding the contracts and their Outbox rows.
/// Contracts already present with the same message (a restarted generator) are skipped.
pub fn run(db_path: &Path, contracts: &[Contract], batch: usize) -> Result<usize> {
    assert!(batch >= 1, "batch size is at least 1");
    if contracts.len() > CONTRACTS_MAX {
        return Err(fail::usage(format!(
            "{} contracts exceed the bound of {CONTRACTS_MAX} per sender run",
            contracts.len()
        )));
    }
    for c in contracts {
        check_id("contract", &c.contract)?;
        check_id("message", &c.message)?;
        check_amount(c.amount)?;
    }
    let mut db = store::open(db_path, &SENDER, Access::WriteCreate)?;
    let shown = db_path.display().to_string();
    let explain = |e: rusqlite::Error| store::explain(e, "sender", &shown);
    db.conn.busy_handler(Some(busy_wait)).map_err(explain)?;
    let mut written = 0;
    for chunk in contracts.chunks(batch) {
        db.conn.execute_batch("BEGIN IMMEDIATE").map_err(explain)?;
        for c in chunk {
            let result = db
                .conn
                .prepare_cached("INSERT INTO contracts(contract_id, amount) VALUES (?1, ?2)")
                .and_then(|mut s| s.execute(params![c.contract, c.amount]))
                .and_then(|_| {
                    db.conn
                        .prepare_cached(
                            "INSERT INTO outbox(message_id, contract_id, amount, status) VALUES (?1, ?2, ?3, 'pending')",
                        )?
                        .execute(params![c.message, c.contract, c.amount])
                });
            if let Err(e) = result {
                let _ = db.conn.execute_batch("ROLLBACK");
                if e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation) {
                    return Err(fail::usage(format!(
                        "contract {} or message {} already exists in sender database {shown}; nothing written",
                        c.contract, c.message
                    )));
                }
                return Err(explain(e));
            }
        }
        crash::point(points::SENDER_BEFORE_COMMIT);
        db.conn.execute_batch("COMMIT").map_err(explain)?;
        written += chunk.len();
        let what = match chunk {
            [one] => format!(
                "contract {} message {} amount {}",
                one.contract, one.message, one.amount
            ),
            _ => format!(
                "{} contracts through message {}",
                chunk.len(),
                chunk[chunk.len() - 1].message
            ),
        };
        out::committed("sender", &what);
        crash::point(points::SENDER_AFTER_COMMIT);
    }
    Ok(written)
}

/// N generated contracts `C000001…` with messages `M000001…` and amounts from the seed; on a
/// restart, those already in the file are skipped (they were written in order).
pub fn generated(db_path: &Path, count: usize, seed: u64) -> Result<Vec<Contract>> {
    let already = if db_path.exists() {
        let db = store::open(db_path, &SENDER, Access::Write)?;
        let n: i64 = db
            .conn
            .query_row("SELECT count(*) FROM contracts", [], |r| r.get(0))
            .map_err(|e| store::explain(e, "sender", &db_path.display().to_string()))?;
        usize::try_from(n).unwrap_or(0)
    } else {
        0
    };
    let amounts = crate::rng::amounts(seed, count);
    Ok((already..count)
        .map(|i| Contract {
            contract: format!("C{:06}", i + 1),
            message: format!("M{:06}", i + 1),
            amount: amounts[i],
        })
        .collect())
}
