//! Lab 14's crash points, typed: a call site names the constant (`crash::point(SENDER_AFTER_COMMIT)`),
//! so a misspelt point does not compile. Each commit has a `before-…` and an `after-…` point,
//! each step of the broker an `after-…` point. One list, with the stacks each point exists
//! on: the SQL queue's commits are SQLite's, the broker's confirm and delivery RabbitMQ's.

use super::stack::Stack;
use crate::crash::Point;

pub const SENDER_BEFORE_COMMIT: Point = Point::new(
    "sender.before-commit",
    "contract and Outbox row written, not committed: both vanish",
);
pub const SENDER_AFTER_COMMIT: Point = Point::new(
    "sender.after-commit",
    "contract and Outbox row committed, nothing published",
);
pub const PUBLISHER_BEFORE_QUEUE_COMMIT: Point = Point::new(
    "publisher.before-queue-commit",
    "delivery written to the queue, not committed",
);
pub const PUBLISHER_AFTER_QUEUE_COMMIT: Point = Point::new(
    "publisher.after-queue-commit",
    "delivery committed in the queue, Outbox row still pending: it will be sent again",
);
pub const PUBLISHER_AFTER_PUBLISH: Point = Point::new(
    "publisher.after-publish",
    "message published, its confirm not yet seen, Outbox row pending: it will be published again",
);
pub const PUBLISHER_AFTER_CONFIRM: Point = Point::new(
    "publisher.after-confirm",
    "the broker confirmed the message, Outbox row still pending: it will be published again",
);
pub const PUBLISHER_BEFORE_MARK_SENT: Point = Point::new(
    "publisher.before-mark-sent",
    "Outbox row marked sent, not committed",
);
pub const PUBLISHER_AFTER_MARK_SENT: Point = Point::new(
    "publisher.after-mark-sent",
    "Outbox row committed as sent (mark-before-send: before the queue has it; no-confirm: maybe before the broker stored it)",
);
pub const CONSUMER_AFTER_DELIVER: Point = Point::new(
    "consumer.after-deliver",
    "delivery received, nothing applied, not acked: it will be delivered again",
);
pub const CONSUMER_BEFORE_CLAIM_COMMIT: Point = Point::new(
    "consumer.before-claim-commit",
    "delivery claimed, claim not committed",
);
pub const CONSUMER_AFTER_CLAIM_COMMIT: Point = Point::new(
    "consumer.after-claim-commit",
    "delivery claimed by this consumer, nothing applied",
);
pub const CONSUMER_BEFORE_INBOX_COMMIT: Point = Point::new(
    "consumer.before-inbox-commit",
    "split-inbox-tx only: Inbox row written, not committed",
);
pub const CONSUMER_AFTER_INBOX_COMMIT: Point = Point::new(
    "consumer.after-inbox-commit",
    "split-inbox-tx only: Inbox row committed, ledger not yet credited",
);
pub const CONSUMER_BEFORE_RECEIVER_COMMIT: Point = Point::new(
    "consumer.before-receiver-commit",
    "Inbox row and ledger credit (on the broker's stack also the delivery's receipt) written, not committed",
);
pub const CONSUMER_AFTER_RECEIVER_COMMIT: Point = Point::new(
    "consumer.after-receiver-commit",
    "Inbox row and ledger credit committed, delivery not acked: it will be delivered again (by the broker: flagged redelivered)",
);
pub const CONSUMER_BEFORE_ACK: Point = Point::new(
    "consumer.before-ack",
    "delivery marked acked, not committed",
);
pub const CONSUMER_AFTER_ACK: Point = Point::new(
    "consumer.after-ack",
    "delivery acked (ack-before-apply, auto-ack: before anything was applied)",
);
pub const ENQUEUE_BEFORE_COMMIT: Point = Point::new(
    "enqueue.before-commit",
    "raw delivery written, not committed",
);
pub const ENQUEUE_AFTER_COMMIT: Point =
    Point::new("enqueue.after-commit", "raw delivery committed");

const BOTH: &[Stack] = &[Stack::Sqlite, Stack::Servers];
const SQLITE: &[Stack] = &[Stack::Sqlite];
const SERVERS: &[Stack] = &[Stack::Servers];

/// Every point of the lab once, in protocol order, with the stacks it exists on.
pub const POINTS: &[(Point, &[Stack])] = &[
    (SENDER_BEFORE_COMMIT, BOTH),
    (SENDER_AFTER_COMMIT, BOTH),
    (PUBLISHER_BEFORE_QUEUE_COMMIT, SQLITE),
    (PUBLISHER_AFTER_QUEUE_COMMIT, SQLITE),
    (PUBLISHER_AFTER_PUBLISH, SERVERS),
    (PUBLISHER_AFTER_CONFIRM, SERVERS),
    (PUBLISHER_BEFORE_MARK_SENT, BOTH),
    (PUBLISHER_AFTER_MARK_SENT, BOTH),
    (CONSUMER_AFTER_DELIVER, SERVERS),
    (CONSUMER_BEFORE_CLAIM_COMMIT, SQLITE),
    (CONSUMER_AFTER_CLAIM_COMMIT, SQLITE),
    (CONSUMER_BEFORE_INBOX_COMMIT, SQLITE),
    (CONSUMER_AFTER_INBOX_COMMIT, SQLITE),
    (CONSUMER_BEFORE_RECEIVER_COMMIT, BOTH),
    (CONSUMER_AFTER_RECEIVER_COMMIT, BOTH),
    (CONSUMER_BEFORE_ACK, SQLITE),
    (CONSUMER_AFTER_ACK, BOTH),
    (ENQUEUE_BEFORE_COMMIT, SQLITE),
    (ENQUEUE_AFTER_COMMIT, SQLITE),
];

/// Whether `point` (an entry of `POINTS`) exists on `stack`.
const fn exists(stacks: &[Stack], stack: Stack) -> bool {
    let mut i = 0;
    while i < stacks.len() {
        if stacks[i] as u8 == stack as u8 {
            return true;
        }
        i += 1;
    }
    false
}

/// How many points exist on `stack`.
const fn count(stack: Stack) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < POINTS.len() {
        if exists(POINTS[i].1, stack) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The points of `stack`, in the list's order.
const fn only<const N: usize>(stack: Stack) -> [Point; N] {
    let mut out = [POINTS[0].0; N];
    let (mut i, mut n) = (0, 0);
    while i < POINTS.len() {
        if exists(POINTS[i].1, stack) {
            out[n] = POINTS[i].0;
            n += 1;
        }
        i += 1;
    }
    assert!(n == N, "every point of the stack, once");
    out
}

static ON_SQLITE: [Point; count(Stack::Sqlite)] = only(Stack::Sqlite);
static ON_SERVERS: [Point; count(Stack::Servers)] = only(Stack::Servers);

/// The points of the lab on `stack`, for `--crash-at NAME` and the tables.
pub const fn of(stack: Stack) -> &'static [Point] {
    match stack {
        Stack::Sqlite => &ON_SQLITE,
        Stack::Servers => &ON_SERVERS,
    }
}

/// The publisher's point once the transport holds the message and before its Outbox row
/// is marked sent: a crash there sends it again (the scenario's `publish-crash`).
pub fn held(stack: Stack) -> Point {
    match stack {
        Stack::Sqlite => PUBLISHER_AFTER_QUEUE_COMMIT,
        Stack::Servers => PUBLISHER_AFTER_CONFIRM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stack_has_its_points_in_the_lists_order() {
        let names = |s| of(s).iter().map(|p| p.name).collect::<Vec<_>>();
        assert_eq!(names(Stack::Sqlite).len(), 16);
        assert_eq!(
            names(Stack::Servers),
            [
                "sender.before-commit",
                "sender.after-commit",
                "publisher.after-publish",
                "publisher.after-confirm",
                "publisher.before-mark-sent",
                "publisher.after-mark-sent",
                "consumer.after-deliver",
                "consumer.before-receiver-commit",
                "consumer.after-receiver-commit",
                "consumer.after-ack",
            ]
        );
        assert!(names(Stack::Sqlite).contains(&"publisher.after-queue-commit"));
        assert!(!names(Stack::Sqlite).contains(&"publisher.after-confirm"));
    }
}
