//! The receiver's side, shared by the consumer and the replay: one credit per message, in one
//! transaction, refused by the receiver's CHECK constraint when its amount breaks the rule.

use rusqlite::{params, ErrorCode};

use crate::crash::{self, Point};
use crate::events::{emit, Event};
use crate::out;
use crate::store::Db;

/// What the receiver did with one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The credit was committed now.
    Credited,
    /// The message was credited before (a crash came between the credit and the ack or the
    /// replay's commit): the receiver's key absorbed it.
    Already,
    /// The receiver refused it, and why (its constraint): nothing was written.
    Refused(String),
}

/// The reason of a refusal: a CHECK constraint failed on the insert.
fn refusal(error: &rusqlite::Error) -> Option<String> {
    match error {
        rusqlite::Error::SqliteFailure(e, text) if e.code == ErrorCode::ConstraintViolation => {
            Some(
                text.clone()
                    .unwrap_or_else(|| "constraint failed".to_string()),
            )
        }
        _ => None,
    }
}

/// Credit `message` with `amount` at the receiver; `after_commit` is the caller's point right
/// after the credit's commit. Only a constraint's refusal is an answer; any other error of
/// the store is the caller's to report.
pub fn credit(
    receiver: &Db,
    message: &str,
    amount: i64,
    after_commit: Point,
) -> rusqlite::Result<Applied> {
    receiver.conn.execute_batch("BEGIN IMMEDIATE")?;
    let inserted = receiver
        .conn
        .prepare_cached(
            "INSERT INTO credits(message_id, amount, applied_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT(message_id) DO NOTHING",
        )?
        .execute(params![message, amount, crate::common::now_ms()]);
    let changed = match inserted {
        Ok(n) => n,
        Err(e) => {
            receiver.conn.execute_batch("ROLLBACK")?;
            let Some(reason) = refusal(&e) else {
                return Err(e);
            };
            out::line(&format!("REJECTED message {message}: {reason}"));
            out::flush();
            emit(&Event::Rejected {
                item: message.to_string(),
                reason: reason.clone(),
            });
            return Ok(Applied::Refused(reason));
        }
    };
    if changed == 0 {
        // Nothing written: end the transaction without a commit to report.
        receiver.conn.execute_batch("ROLLBACK")?;
        out::line(&format!("DUPLICATE message {message} already credited"));
        out::flush();
        emit(&Event::Duplicate {
            item: message.to_string(),
        });
        return Ok(Applied::Already);
    }
    assert_eq!(changed, 1, "one credit per message");
    receiver.conn.execute_batch("COMMIT")?;
    out::committed(
        "receiver",
        &format!("credit of message {message} amount {amount}"),
    );
    emit(&Event::Applied {
        item: message.to_string(),
    });
    crash::point(after_commit);
    Ok(Applied::Credited)
}
