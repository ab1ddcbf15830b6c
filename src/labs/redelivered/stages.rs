//! The counts each readback step of lab f3's scenarios must show, by `<scenario>.<step>`,
//! on each stack: the stage names are the story's, the fields each stack's readback.
//!
//! On SQLite, `during-pause`: consumer B has taken the expired lease and acked, A is still
//! stopped; `final`: A was continued and finished its call, its ack refused. On the servers,
//! `during-pause`: the broker closed A's connection and redelivered the message to B, which
//! called and acked; A is still stopped. `final`: A was continued, made or had made its call,
//! and its ack did nothing (`lost 1`).

use super::stack::Stack;
use crate::role::Stage;

const MESSAGES: &str = "queue.messages";
const ACKED: &str = "queue.acked";
const DELIVERIES: &str = "queue.deliveries";
const REPLIES: &str = "queue.replies";
const REPLAYED: &str = "queue.replayed";
const REFUSED: &str = "queue.refused";
const EFFECTS: &str = "receiver.effects";
const LEDGER: &str = "receiver.ledger";

/// The story's stages on one stack, from its fields while A is stopped and once it finished:
/// a keyed call is replayed, not made again (one effect, one ledger row); an unkeyed one made
/// twice is two effects.
macro_rules! story {
    ($during:ident, $final:ident) => {
        &[
            Stage {
                name: "keyed-pause-before-call.during-pause",
                fields: &$during(0, 1),
            },
            Stage {
                name: "keyed-pause-before-call.final",
                fields: &$final(1, 1, 1),
            },
            Stage {
                name: "keyed-pause-after-call.during-pause",
                fields: &$during(1, 1),
            },
            Stage {
                name: "keyed-pause-after-call.final",
                fields: &$final(1, 1, 1),
            },
            Stage {
                name: "unkeyed-pause-before-call.during-pause",
                fields: &$during(0, 1),
            },
            Stage {
                name: "unkeyed-pause-before-call.final",
                fields: &$final(0, 2, 0),
            },
            Stage {
                name: "unkeyed-pause-after-call.during-pause",
                fields: &$during(0, 2),
            },
            Stage {
                name: "unkeyed-pause-after-call.final",
                fields: &$final(0, 2, 0),
            },
        ]
    };
}

/// On SQLite, while A is stopped: B replied once, acked, and replayed the call or not; the
/// receiver holds `effects`.
const fn sqlite_during(replayed: i64, effects: i64) -> [(&'static str, i64); 6] {
    [
        (MESSAGES, 1),
        (ACKED, 1),
        (DELIVERIES, 2),
        (REPLIES, 1),
        (REPLAYED, replayed),
        (EFFECTS, effects),
    ]
}

/// On SQLite, once A finished: both replied, A's ack refused; the receiver holds `effects`,
/// its ledger `ledger` rows.
const fn sqlite_final(replayed: i64, effects: i64, ledger: i64) -> [(&'static str, i64); 7] {
    [
        (ACKED, 1),
        (DELIVERIES, 2),
        (REPLIES, 2),
        (REPLAYED, replayed),
        (REFUSED, 1),
        (EFFECTS, effects),
        (LEDGER, ledger),
    ]
}

static ON_SQLITE: &[Stage] = story!(sqlite_during, sqlite_final);

const C_DELIVERIES: &str = "consumer.deliveries";
const REDELIVERED: &str = "consumer.redelivered";
const C_REPLIES: &str = "consumer.replies";
const C_REPLAYED: &str = "consumer.replayed";
const C_ACKED: &str = "consumer.acked";
const LOST: &str = "consumer.lost";

/// On the servers, while A is stopped: the message redelivered to B, which replied once,
/// acked, and replayed the call or not; the receiver holds `effects`.
const fn servers_during(replayed: i64, effects: i64) -> [(&'static str, i64); 8] {
    [
        (C_DELIVERIES, 2),
        (REDELIVERED, 1),
        (C_REPLIES, 1),
        (C_REPLAYED, replayed),
        (C_ACKED, 1),
        (LOST, 0),
        (MESSAGES, 0),
        (EFFECTS, effects),
    ]
}

/// On the servers, once A finished: both replied, A's ack did nothing; the receiver holds
/// `effects`, its ledger `ledger` rows.
const fn servers_final(replayed: i64, effects: i64, ledger: i64) -> [(&'static str, i64); 9] {
    [
        (C_DELIVERIES, 2),
        (REDELIVERED, 1),
        (C_REPLIES, 2),
        (C_REPLAYED, replayed),
        (C_ACKED, 1),
        (LOST, 1),
        (MESSAGES, 0),
        (EFFECTS, effects),
        (LEDGER, ledger),
    ]
}

static ON_SERVERS: &[Stage] = story!(servers_during, servers_final);

/// The stages of `stack`.
pub const fn of(stack: Stack) -> &'static [Stage] {
    match stack {
        Stack::Sqlite => ON_SQLITE,
        Stack::Servers => ON_SERVERS,
    }
}
