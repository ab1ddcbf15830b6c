//! Explore under server kills: which predictions hold a run's designs to the server it
//! kills, and when its cases run one at a time.

use crate::engine::explore::plan::{ExplorePlan, Prediction};
use crate::engine::fleet::kill::kills_servers;
use crate::engine::nemesis::Nemesis;
use crate::engine::stack::Server;

/// The plan's server-kill predictions for `server` (variant `<design>/<server>`), each as a
/// prediction of its design.
pub fn predictions(plan: &dyn ExplorePlan, server: Server) -> &'static [Prediction] {
    let suffix = format!("/{}", server.name());
    let mine: Vec<Prediction> = plan
        .server_predictions()
        .iter()
        .filter_map(|p| {
            let design = p.variant.strip_suffix(suffix.as_str())?;
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

/// Whether the cases run one at a time: a server kill stops every case on that server.
pub fn serial(plan: &dyn ExplorePlan, nemesis: &dyn Nemesis) -> bool {
    kills_servers(nemesis) || plan.serial()
}
