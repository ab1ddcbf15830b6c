//! A queue's ready count, as the broker reported it after a step (its logical digest in
//! database-files.json), against what the AMQP trace implies: the messages published and
//! stored, minus those settled (acked, nacked without requeue, or taken with auto-ack). A
//! delivery not settled by a process that has ended is ready again (the broker requeues the
//! unacknowledged deliveries of a closed channel).
//!
//! Where the trace cannot decide, the count is bounded, not guessed: a publish is surely
//! stored when the broker confirmed it, answered a later call of that channel (a confirm or a
//! delivery: the broker handles one channel's commands in order) or some process was
//! delivered it (from the step after the publisher's, if that one was killed); otherwise (a
//! process killed before the confirm, a channel not in confirm mode) it may be. An ack or
//! nack is surely handled when the process ended well or the broker answered a later call of
//! its channel; one a killed process sent last may have died in its socket. A killed
//! process's unsettled deliveries are requeued when the broker sees its connection close,
//! which may come after the driver's snapshot of that very step. A background step still
//! alive may have done any of its operations. When the broker was killed (servers.json
//! `kills`), messages may be lost: only the upper bound holds.

use super::amqp::Op;
use super::scene::Proc;

/// The ready count a snapshot after step `k` may show: `lo..=hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub lo: u64,
    pub hi: u64,
}

/// Per publish id: publishes surely or maybe stored, settlements surely or maybe handled,
/// deliveries maybe still held.
#[derive(Default)]
struct Copy {
    in_sure: u64,
    in_maybe: u64,
    out_sure: u64,
    out_maybe: u64,
    held: u64,
}

/// Bounds of queue `queue` after step `k` of the scenario of `procs`. Each publish id is
/// counted on its own: a copy leaves the queue once, however many channels settle it (a
/// consumer whose channel the broker closed may still trace its ack).
pub fn bounds(procs: &[Proc], queue: &str, k: usize, broker_killed: bool) -> Bounds {
    let mut copies: std::collections::BTreeMap<&str, Copy> = Default::default();
    let delivered_anywhere = |id: &str| {
        procs.iter().any(|p| {
            p.ops
                .iter()
                .any(|(_, op)| matches!(op, Op::Deliver { publish, .. } if publish == id))
        })
    };
    for p in procs.iter().filter(|p| p.index <= k) {
        let alive = p.alive_at(k);
        // The broker answered this channel at this line, so it had handled all before it.
        let answered = p
            .ops
            .iter()
            .rev()
            .find(|(_, op)| matches!(op, Op::Deliver { .. } | Op::Confirm { .. }))
            .map_or(0, |(at, _)| *at);
        let certain = |at: usize| !alive && (p.ended_well || at < answered);
        // Publish tags the broker confirmed with an ack (a confirm channel numbers them
        // 1, 2, 3… as the role's publishes; amqp.rs holds the trace to that).
        let ours: std::collections::BTreeSet<u64> = p
            .ops
            .iter()
            .filter_map(|(_, op)| match op {
                Op::Confirm { tag, ack: true, .. } => Some(*tag),
                _ => None,
            })
            .collect();
        let mut count = 0u64;
        // delivery tag -> (publish id, settled)
        let mut deliveries: std::collections::BTreeMap<u64, (&str, bool)> = Default::default();
        for (at, op) in &p.ops {
            match op {
                Op::Publish {
                    queue: q, publish, ..
                } => {
                    count += 1;
                    if q != queue {
                        continue;
                    }
                    // A later delivery proves the broker took it, though not yet, maybe,
                    // at the snapshot right after the step of a killed publisher.
                    let settled_in_time = p.index < k || p.ended_well;
                    let sure = !alive
                        && (ours.contains(&count)
                            || *at < answered
                            || (settled_in_time && delivered_anywhere(publish)));
                    let copy = copies.entry(publish.as_str()).or_default();
                    if sure {
                        copy.in_sure += 1;
                    } else {
                        copy.in_maybe += 1;
                    }
                }
                Op::Deliver {
                    queue: q,
                    publish,
                    tag,
                    auto_ack,
                    ..
                } if q == queue => {
                    if *auto_ack {
                        let copy = copies.entry(publish.as_str()).or_default();
                        if alive {
                            copy.out_maybe += 1;
                        } else {
                            copy.out_sure += 1;
                        }
                    } else {
                        deliveries.insert(*tag, (publish.as_str(), false));
                    }
                }
                Op::Settle { tag, requeue, .. } => {
                    let Some((publish, settled)) = deliveries.get_mut(tag) else {
                        continue;
                    };
                    *settled = true;
                    if *requeue {
                        continue;
                    }
                    let copy = copies.entry(*publish).or_default();
                    if certain(*at) {
                        copy.out_sure += 1;
                    } else {
                        copy.out_maybe += 1;
                    }
                }
                _ => {}
            }
        }
        if alive || (p.index == k && !p.ended_well) {
            for (publish, settled) in deliveries.values() {
                if !settled {
                    copies.entry(*publish).or_default().held += 1;
                }
            }
        }
    }
    let (mut lo, mut hi) = (0u64, 0u64);
    for c in copies.values() {
        lo += c.in_sure.saturating_sub(c.out_sure + c.out_maybe + c.held);
        hi += (c.in_sure + c.in_maybe).saturating_sub(c.out_sure);
    }
    Bounds {
        lo: if broker_killed { 0 } else { lo },
        hi,
    }
}
