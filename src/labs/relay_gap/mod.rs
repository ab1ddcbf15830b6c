//! Lab f1 (relay-gap): a relay that remembers "the last id I saw" skips an Outbox row that
//! commits late (kamu-data/kamu-cli#1398, eugene-khyst/postgresql-event-sourcing#2; fixed in
//! Dekaf PR #2374). On PostgreSQL, ids come from a sequence and are taken inside the writer's
//! transaction, before its commit: writer A takes 7, writer B takes 8 and commits first, the
//! relay publishes 8 and remembers 8, and 7, committed a moment later, is below the mark
//! for ever.
//!
//! The system under test: two writers (`write.rs`), a relay that polls once per run in one
//! of three designs (`relay.rs`), a readback (`readback.rs`), all on PostgreSQL through the
//! work directory's `stack.json` (the shared `store::pg`, and `pg.rs` for what it lacks). It
//! knows nothing of the harness beyond `crash::point` (where the pause nemesis also stops a
//! writer inside its transaction).

pub mod explore;
pub mod history;
pub mod lab;
pub mod pg;
pub mod points;
pub mod readback;
pub mod relay;
pub mod replay;
pub mod roles;
pub mod schema;
pub mod stages;
pub mod write;
