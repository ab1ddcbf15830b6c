//! The dispatcher's SQLite side, on real files.

use super::*;

/// The history repair reads receipts.db and writes history.db: a corrupt receipts file
/// must be named as itself, not as the history file (the open refuses it first).
#[test]
fn a_corrupt_receipts_file_is_named_as_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let r_path = dir.path().join("receipts.db");
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
    // The open's quick_check refuses it before any repair reads it, naming the file.
    let error = store::open_traced(&r_path, &RECEIPTS, Access::Write, false).err();
    let text = fail::one_line(&error.expect("a corrupt receipts file is refused"));
    assert!(text.contains("receipts database"), "{text}");
    assert!(text.contains("receipts.db is corrupt"), "{text}");
    assert!(!text.contains("history"), "{text}");
}
