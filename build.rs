//! Embeds the SHA-256 of every source file of this build, so each run's manifest says which
//! source produced it (CRLF turned into LF, so a Windows checkout digests the same).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

fn main() {
    let root =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["Cargo.toml", "Cargo.lock", "run-lab.sh", "build.rs"]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.is_file())
        .collect();
    walk(&root.join("src"), &mut files);
    println!("cargo:rerun-if-changed=src");
    let mut rows: Vec<(String, String)> = Vec::new();
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let bytes = fs::read(path).expect("a source file is readable");
        let mut lf = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                i += 1;
                continue;
            }
            lf.push(bytes[i]);
            i += 1;
        }
        let digest = Sha256::digest(&lf);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let rel = path
            .strip_prefix(&root)
            .expect("under the manifest dir")
            .to_string_lossy()
            .replace('\\', "/");
        rows.push((rel, hex));
    }
    rows.sort();
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("sources.rs");
    let mut f = fs::File::create(out).expect("OUT_DIR is writable");
    writeln!(f, "pub static SOURCES: &[(&str, &str)] = &[").unwrap();
    for (path, hex) in &rows {
        writeln!(f, "    ({path:?}, {hex:?}),").unwrap();
    }
    writeln!(f, "];").unwrap();
}
