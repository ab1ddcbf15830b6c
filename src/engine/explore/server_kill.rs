//! Explore under server kills: which predictions hold a run's designs to the server it
//! kills, and when its cases run one at a time.

use crate::engine::explore::plan::{ExplorePlan, Prediction};
use crate::engine::fleet::kill::kills_servers;
use crate::engine::nemesis::Nemesis;
use crate::engine::stack::{QueueType, Server};

/// The plan's server-kill predictions for `server` (variant `<design>/<server>`, or
/// `<design>/<server>/<queue type>` for a prediction that holds on that type of queue alone),
/// each as a prediction of its design.
pub fn predictions(
    plan: &dyn ExplorePlan,
    server: Server,
    queue_type: QueueType,
) -> &'static [Prediction] {
    let mine: Vec<Prediction> = plan
        .server_predictions()
        .iter()
        .filter_map(|p| {
            let design = design_of(p.variant, server, queue_type)?;
            let design = plan.designs().iter().copied().find(|d| *d == design)?;
            Some(Prediction {
                variant: design,
                ..*p
            })
        })
        .collect();
    // One list per run: leaked once, as the plan's own are static.
    Vec::leak(mine)
}

/// The design a server-kill prediction's variant names, if it applies to `server` and
/// `queue_type`.
fn design_of(variant: &str, server: Server, queue_type: QueueType) -> Option<&str> {
    let mut parts = variant.split('/');
    let design = parts.next()?;
    if parts.next()? != server.name() {
        return None;
    }
    match parts.next() {
        None => Some(design),
        Some(t) if t == queue_type.name() && parts.next().is_none() => Some(design),
        Some(_) => None,
    }
}

/// Whether the cases run one at a time: a server kill stops every case on that server.
pub fn serial(plan: &dyn ExplorePlan, nemesis: &dyn Nemesis) -> bool {
    kills_servers(nemesis) || plan.serial()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prediction_names_its_server_and_maybe_its_queue_type() {
        let classic = QueueType::Classic;
        let quorum = QueueType::Quorum;
        let rabbitmq = Server::Rabbitmq;
        assert_eq!(design_of("a/rabbitmq", rabbitmq, classic), Some("a"));
        assert_eq!(design_of("a/rabbitmq", rabbitmq, quorum), Some("a"));
        assert_eq!(
            design_of("a/rabbitmq/classic", rabbitmq, classic),
            Some("a")
        );
        assert_eq!(design_of("a/rabbitmq/classic", rabbitmq, quorum), None);
        assert_eq!(design_of("a/rabbitmq/quorum", rabbitmq, quorum), Some("a"));
        assert_eq!(design_of("a/postgres", rabbitmq, classic), None);
        assert_eq!(design_of("a/rabbitmq/quorum/x", rabbitmq, quorum), None);
        assert_eq!(design_of("a", rabbitmq, classic), None);
    }
}
