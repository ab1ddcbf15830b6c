//! Where the code is, held to what docs/layout.md says: one folder per lab, named by its slug,
//! each in the registry once; and the value `lab show --json` prints reads back as it was.

mod common;

use std::path::PathBuf;

use common::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folders under src/labs/, as slugs (a module name spells `-` as `_`).
fn lab_folders() -> Vec<String> {
    let mut folders: Vec<String> = std::fs::read_dir(root().join("src/labs"))
        .expect("src/labs exists")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().replace('_', "-"))
        .collect();
    folders.sort();
    folders
}

#[test]
fn the_registry_holds_every_lab_folder_once_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let points = crashlab(dir.path(), &["points", "--json"]);
    assert_eq!(code(&points), 0, "{}", stderr(&points));
    let labs: serde_json::Value = serde_json::from_slice(&points.stdout).unwrap();
    let mut ids: Vec<String> = Vec::new();
    let mut slugs: Vec<String> = Vec::new();
    for lab in labs.as_array().unwrap() {
        let full = lab["lab"].as_str().unwrap();
        let (id, slug) = full.split_once('-').unwrap();
        ids.push(id.to_string());
        slugs.push(slug.to_string());
    }
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "two registry entries share an id");
    slugs.sort();
    let listed = slugs.len();
    slugs.dedup();
    assert_eq!(slugs.len(), listed, "two registry entries share a slug");
    assert_eq!(
        slugs,
        lab_folders(),
        "one folder under src/labs per lab, named by its slug"
    );
}

#[test]
fn every_lab_value_printed_reads_back_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    for slug in lab_folders() {
        let shown = crashlab(dir.path(), &["lab", "show", &slug, "--json"]);
        assert_eq!(code(&shown), 0, "{slug}: {}", stderr(&shown));
        let value: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert_eq!(value["slug"], slug.as_str());
        // Each stack alone is the same stack as in the whole.
        for stack in value["stacks"].as_array().unwrap() {
            let name = stack["name"].as_str().unwrap();
            let one = crashlab(
                dir.path(),
                &["lab", "show", &slug, "--stack", name, "--json"],
            );
            assert_eq!(code(&one), 0, "{slug} {name}: {}", stderr(&one));
            let one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
            assert_eq!(
                one["stacks"].as_array().unwrap(),
                std::slice::from_ref(stack)
            );
        }
    }
}
