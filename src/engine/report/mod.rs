//! The pictures of a driver run: `timeline.svg` for each evidence directory (lab 13: one per
//! scenario directory) and `report.html` for the whole run. They are made only from the files
//! the run recorded (processes.json, results.json, database-files.json, the steps' stdout and
//! stderr), by pure functions from the parsed evidence to text, so an archived run renders the
//! same pictures offline.

pub mod html;
pub mod layout;
pub mod legend;
pub mod model;
pub mod picture;
pub mod place;
pub mod text;
pub mod timeline;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_output;

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use model::Evidence;

pub const REPORT: &str = "report.html";

/// The run's output directories in the order their steps ran: `""` for a lab with one
/// scenario, each scenario's directory for lab 13.
pub fn groups(ev: &Evidence) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for p in &ev.processes.processes {
        let group = model::group_of(p);
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

/// Every file of the pictures, as (path relative to the run, text). Pure.
pub fn render(ev: &Evidence) -> Vec<(String, String)> {
    let svgs: Vec<(String, String)> = groups(ev)
        .into_iter()
        .map(|group| {
            let svg = timeline::render(&layout::build(ev, &group));
            (group, svg)
        })
        .collect();
    let mut files: Vec<(String, String)> = svgs
        .iter()
        .map(|(group, svg)| (html::timeline_path(group), svg.clone()))
        .collect();
    files.push((REPORT.to_string(), html::render(ev, &svgs)));
    files
}

/// Read the run recorded in `dir` and write its pictures beside its records.
pub fn write(dir: &Path) -> Result<()> {
    let ev = model::load(dir)?;
    for (rel, text) in render(&ev) {
        // Precondition: paths come from `group_of`, relative and inside the run.
        assert!(
            text::linkable(&rel),
            "picture path {rel} stays inside the run"
        );
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
