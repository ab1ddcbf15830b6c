//! The dispatcher's SQLite side, on real files.

use super::*;

/// The history repair reads receipts.db and writes history.db: a corrupt receipts file
/// must be named as itself, not as the history file.
#[test]
fn a_corrupt_receipts_file_is_named_as_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let (r_path, h_path) = (
        dir.path().join("receipts.db"),
        dir.path().join("history.db"),
    );
    {
        let receipts = store::open_traced(&r_path, &RECEIPTS, Access::WriteCreate, false);
        let reply = Reply {
            status: 200,
            replayed: false,
            body: "{}".to_string(),
        };
        write_receipt(&receipts.unwrap(), "K1", &reply).unwrap();
    }
    // The last close checkpointed the row into the file; break the table's root page.
    let mut bytes = std::fs::read(&r_path).unwrap();
    assert!(bytes.len() > 4112);
    bytes[4096..4112].iter_mut().for_each(|b| *b ^= 0xff);
    std::fs::write(&r_path, bytes).unwrap();
    let receipts = store::open_traced(&r_path, &RECEIPTS, Access::Write, false).unwrap();
    let history = store::open_traced(&h_path, &HISTORY, Access::WriteCreate, false).unwrap();
    let error = repair_history(&receipts, "receipts.db", &history, "history.db").unwrap_err();
    let text = fail::one_line(&error);
    assert!(
        text.contains("receipts database receipts.db is corrupt"),
        "{text}"
    );
    assert!(!text.contains("history"), "{text}");
}
