//! Lab 13's crash points. Each commit has a `before-…` and an `after-…` point.

use crate::crash::PointDef;

pub static POINTS: &[PointDef] = &[
    PointDef {
        name: "intent.before-commit",
        window: "intent written, not committed: it vanishes",
    },
    PointDef {
        name: "intent.after-commit",
        window: "intent committed, nothing sent",
    },
    PointDef {
        name: "dispatcher.before-attempt-commit",
        window: "attempt written, not committed, nothing sent",
    },
    PointDef {
        name: "dispatcher.after-attempt-commit",
        window: "attempt committed, request not sent: a recovery sees an attempt of unknown result",
    },
    PointDef {
        name: "dispatcher.after-response",
        window: "reply in hand, receipt not written: the receiver ran it, the dispatcher will send again",
    },
    PointDef {
        name: "dispatcher.before-receipt-commit",
        window: "receipt written, not committed",
    },
    PointDef {
        name: "dispatcher.after-receipt-commit",
        window: "receipt committed, history not appended: the recovery appends it",
    },
    PointDef {
        name: "dispatcher.before-history-commit",
        window: "history row written, not committed",
    },
    PointDef {
        name: "dispatcher.after-history-commit",
        window: "receipt and history committed",
    },
    PointDef {
        name: "dispatcher.before-unknown-commit",
        window: "intent marked unknown, not committed",
    },
    PointDef {
        name: "dispatcher.after-unknown-commit",
        window: "intent committed as unknown: left for reconciliation, never resent",
    },
    PointDef {
        name: "receiver.before-effect-commit",
        window: "effect (and key) written, not committed: nothing ran",
    },
    PointDef {
        name: "receiver.after-effect-commit",
        window: "effect (and key) committed, reply not sent: the dispatcher sees a broken connection",
    },
];
