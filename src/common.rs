//! Small helpers every lab and the engine share: the wall clock in milliseconds,
//! hexadecimal SHA-256 digests, the one escaping of bytes a line shows, and reading a plain
//! file without ever blocking on what is not one. They belong to no lab.

use sha2::{Digest, Sha256};

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `bytes` as lowercase hex digits, two per byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        text.push(DIGITS[(b >> 4) as usize] as char);
        text.push(DIGITS[(b & 15) as usize] as char);
    }
    text
}

/// Whether `text` is a SHA-256 as `hex` writes it: 64 lowercase hex digits.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Bytes as a line or a record shows them: printable ASCII as it is (the space too when
/// `space`), a backslash doubled, every other byte `\xNN`. Nothing shown can end a line or
/// carry a control byte, and the escaping can be undone.
pub fn escaped(bytes: &[u8], space: bool) -> String {
    let mut shown = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => shown.push_str("\\\\"),
            b' ' if space => shown.push(' '),
            0x21..=0x7e => shown.push(char::from(b)),
            _ => shown.push_str(&format!("\\x{b:02x}")),
        }
    }
    shown
}

/// Milliseconds since the Unix epoch (0 for a clock before it; saturates far in the future).
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Open `path` for reading only when it is a plain file: never through a symlink in its last
/// component (`O_NOFOLLOW`), never waiting on a FIFO or a device (`O_NONBLOCK`, then fstat
/// on what was opened). Evidence is read so: a file swapped after a check cannot block.
pub fn open_plain(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a plain file"));
    }
    Ok(file)
}

/// The bytes of a plain file (`open_plain`), at most `max_bytes` of them: more is an error.
pub fn read_plain(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_plain(path)?;
    let len = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(len.min(max_bytes) as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(std::io::Error::other(format!(
            "more than the bound of {max_bytes} bytes"
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_file_is_read_and_never_a_fifo_or_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "four").unwrap();
        assert_eq!(read_plain(&file, 4).unwrap(), b"four");
        assert!(read_plain(&file, 3).is_err());
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        assert!(read_plain(&dir.path().join("link"), 9).is_err());
        let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        // No writer: a blocking open would wait forever.
        assert!(read_plain(&dir.path().join("fifo"), 9).is_err());
        assert!(open_plain(dir.path()).is_err());
    }

    #[test]
    fn hex_and_sha256_are_the_usual_spellings() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(now_ms() > 1_600_000_000_000);
    }
}
