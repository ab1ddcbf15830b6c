//! The undo log's reader: what it accepts, and that it refuses everything else with the
//! offset of the first bad record.

use super::*;

fn log_of(records: &[(Op, &str, &[u8])]) -> Vec<u8> {
    records
        .iter()
        .flat_map(|(op, path, payload)| encode(*op, path, payload))
        .collect()
}

fn parsed(bytes: &[u8]) -> Result<Log, (u64, String)> {
    parse(bytes, bytes.len() as u64)
}

fn sample() -> Vec<u8> {
    let write = Op::Write {
        offset: 4,
        len: 8,
        old_size: 6,
    };
    log_of(&[
        (Op::Create, "db", b""),
        (write, "db", b"ab"),
        (
            Op::Truncate {
                new_size: 1,
                old_size: 12,
            },
            "db",
            &[7u8; 11],
        ),
        (Op::Sync, "db", b""),
        (Op::DirSync, "", b""),
        (
            Op::Unlink { existed: true },
            "sub/j",
            b"power-undo.stash/1-2",
        ),
        (Op::Cut, "", b""),
    ])
}

#[test]
fn records_read_back_as_written_with_payloads_located_in_the_file() {
    let bytes = sample();
    let log = parsed(&bytes).unwrap();
    let ops: Vec<Op> = log.records.iter().map(|r| r.op).collect();
    assert_eq!(ops.len(), 7);
    assert_eq!(
        ops[1],
        Op::Write {
            offset: 4,
            len: 8,
            old_size: 6
        }
    );
    assert_eq!(ops[5], Op::Unlink { existed: true });
    assert_eq!(log.path(&log.records[5]), "sub/j");
    assert_eq!(log.paths, ["db", "", "power-undo.stash/1-2", "sub/j"]);
    let span = log.records[1].payload;
    assert_eq!(
        &bytes[span.at as usize..(span.at + span.len) as usize],
        b"ab"
    );
    assert_eq!(
        log.paths[log.records[5].stash.unwrap() as usize],
        "power-undo.stash/1-2"
    );
    assert_eq!((log.whole_bytes, log.torn_bytes), (bytes.len() as u64, 0));
}

#[test]
fn a_torn_last_record_is_set_aside_and_anything_else_broken_is_refused() {
    let bytes = sample();
    // Every proper prefix that cuts the last record: the six before it stand, the rest is torn.
    let six = parsed(&bytes).unwrap().records[6].payload.at - 2 - 9;
    for cut in six + 1..bytes.len() as u64 {
        let log = parsed(&bytes[..cut as usize]).unwrap();
        assert_eq!(log.records.len(), 6, "cut at {cut}");
        assert_eq!(log.torn_bytes, cut - six);
    }
    // One flipped bit anywhere in a record is caught: magic, length, kind, body or checksum.
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        match parsed(&bad) {
            Err((offset, _)) => assert!(offset <= at as u64),
            // A flipped length bit may make the last record look torn: never whole.
            Ok(log) => assert!(log.records.len() < 7 && log.torn_bytes > 0, "flip at {at}"),
        }
    }
}

#[test]
fn paths_outside_the_work_directory_and_inconsistent_sizes_are_refused() {
    for path in ["/abs", "../up", "a/../b", "a//b", "./a", "a/"] {
        let bytes = log_of(&[(Op::Sync, path, b"")]);
        let (at, what) = parsed(&bytes).unwrap_err();
        assert_eq!(at, 0);
        assert!(
            what.contains("outside the work directory"),
            "{path}: {what}"
        );
    }
    let write = Op::Write {
        offset: 0,
        len: 4,
        old_size: 10,
    };
    let (_, what) = parsed(&log_of(&[(write, "db", b"abc")])).unwrap_err();
    assert!(
        what.contains("payload of 3 bytes where 4 were due"),
        "{what}"
    );
    let huge = Op::Write {
        offset: FILE_BYTES_MAX,
        len: 1,
        old_size: 0,
    };
    assert!(parsed(&log_of(&[(huge, "db", b"")])).is_err());
    let gone = Op::Unlink { existed: false };
    assert!(parsed(&log_of(&[(gone, "db", b"x")])).is_err());
    let unlinked = Op::Unlink { existed: true };
    for stash in [
        &b""[..],
        b"elsewhere/1",
        b"power-undo.stash/../x",
        b"power-undo.stash/a/b",
    ] {
        assert!(parsed(&log_of(&[(unlinked, "db", stash)])).is_err());
    }
    let mut unknown = encode(Op::Sync, "db", b"");
    unknown[8] = 99;
    let (_, what) = parsed(&unknown).unwrap_err();
    assert!(what.contains("unknown record kind 99"), "{what}");
    assert!(path_ok("") && path_ok("a/b.db-wal") && !path_ok("a\0b"));
}
