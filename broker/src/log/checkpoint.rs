//! Checkpoint files (high watermark and recovery point per partition, leader-epoch
//! cache), written
//! atomically and durably by [`write_atomic_with`]: temp file, fsync, rename, fsync the
//! directory. A crash leaves either the old file or the new one, plus perhaps a stray
//! `.tmp` that readers ignore.
//!
//! The format is Kafka's plain text — a version line (`0`), then the contents —
//! followed by a checksum line ([`crate::checksum`]), so that a bit the disk flips
//! later (one digit turned into another) is caught rather than read as another value:
//!
//! ```text
//! leader-epoch checkpoint      high-watermark checkpoint
//! 0                            0
//! 2         (entries)          1234
//! 0 0       (epoch offset)     crc32c 5d0a1c2e
//! 3 17
//! crc32c 0b7f9e41
//! ```
//!
//! Reading checks the checksum, then parses strictly; either failure is
//! `InvalidData`, naming the file and where. Every checkpoint can be recomputed or
//! understated safely (the HW from the leader, the epochs from the log, the recovery
//! point as 0), so its reader drops a bad one. A recovery-point checkpoint reads as
//! a high-watermark one does.

use std::fs;
use std::io;
use std::path::Path;

use crate::checksum;
use crate::disk::DiskFaults;
use crate::fsutil::write_atomic_with;

/// The only format version written and read.
const VERSION: &str = "0";

/// Write a leader-epoch checkpoint: `(leader_epoch, start_offset)` pairs, ascending.
pub fn write_epochs(path: &Path, epochs: &[(i32, u64)], faults: &DiskFaults) -> io::Result<()> {
    if let Err(why) = check_epochs(epochs) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot write leader-epoch checkpoint {}: {why}",
                path.display()
            ),
        ));
    }
    let mut text = format!("{VERSION}\n{}\n", epochs.len());
    for (epoch, offset) in epochs {
        text.push_str(&format!("{epoch} {offset}\n"));
    }
    write_atomic_with(path, &checksum::seal(text.as_bytes()), faults)
        .map_err(|e| context(e, "cannot write leader-epoch checkpoint", path))
}

/// Read a leader-epoch checkpoint (missing file: empty).
pub fn read_epochs(path: &Path) -> io::Result<Vec<(i32, u64)>> {
    let Some(text) = read_text(path, "leader-epoch")? else {
        return Ok(Vec::new());
    };
    let bad = |line: usize, why: String| malformed(path, "leader-epoch", line, why);
    let mut lines = body_lines(&text, path, "leader-epoch")?;
    let (n, count_line) = lines
        .next()
        .ok_or_else(|| bad(2, "missing the number of entries".into()))?;
    let count: usize = count_line.parse().map_err(|_| {
        bad(
            n,
            format!("expected the number of entries, found {count_line:?}"),
        )
    })?;
    let mut epochs = Vec::new();
    for (n, line) in lines {
        let mut fields = line.split(' ');
        let (Some(epoch), Some(offset), None) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(bad(n, format!("expected \"EPOCH OFFSET\", found {line:?}")));
        };
        let epoch: i32 = epoch
            .parse()
            .map_err(|_| bad(n, format!("expected a leader epoch, found {epoch:?}")))?;
        let offset: u64 = offset
            .parse()
            .map_err(|_| bad(n, format!("expected a start offset, found {offset:?}")))?;
        epochs.push((epoch, offset));
    }
    if epochs.len() != count {
        return Err(bad(
            2,
            format!("announces {count} entries but has {}", epochs.len()),
        ));
    }
    check_epochs(&epochs).map_err(|why| bad(0, why))?;
    Ok(epochs)
}

/// Write a high-watermark checkpoint for one partition.
pub fn write_high_watermark(path: &Path, hw: u64, faults: &DiskFaults) -> io::Result<()> {
    write_offset(path, "high-watermark", hw, faults)
}

/// Read a high-watermark checkpoint (missing file: 0).
pub fn read_high_watermark(path: &Path) -> io::Result<u64> {
    read_offset(path, "high-watermark", "high watermark")
}

/// Write a recovery-point checkpoint for one partition: the offset below which its
/// log was fsynced (Kafka's `recovery-point-offset-checkpoint`).
pub fn write_recovery_point(path: &Path, offset: u64, faults: &DiskFaults) -> io::Result<()> {
    write_offset(path, "recovery-point", offset, faults)
}

/// Read a recovery-point checkpoint (missing file: 0).
pub fn read_recovery_point(path: &Path) -> io::Result<u64> {
    read_offset(path, "recovery-point", "recovery point")
}

/// Write a checkpoint of one offset (`what`: the file's kind, for errors).
fn write_offset(path: &Path, what: &str, offset: u64, faults: &DiskFaults) -> io::Result<()> {
    let text = format!("{VERSION}\n{offset}\n");
    write_atomic_with(path, &checksum::seal(text.as_bytes()), faults)
        .map_err(|e| context(e, &format!("cannot write {what} checkpoint"), path))
}

/// Read a checkpoint of one offset (missing file: 0); `value` names it in errors.
fn read_offset(path: &Path, what: &str, value: &str) -> io::Result<u64> {
    let Some(text) = read_text(path, what)? else {
        return Ok(0);
    };
    let bad = |line: usize, why: String| malformed(path, what, line, why);
    let mut lines = body_lines(&text, path, what)?;
    let (n, line) = lines
        .next()
        .ok_or_else(|| bad(2, format!("missing the {value}")))?;
    let offset = line
        .parse()
        .map_err(|_| bad(n, format!("expected a {value}, found {line:?}")))?;
    if let Some((n, extra)) = lines.next() {
        return Err(bad(n, format!("unexpected line {extra:?}")));
    }
    Ok(offset)
}

/// Epochs strictly ascending, start offsets never decreasing.
fn check_epochs(epochs: &[(i32, u64)]) -> Result<(), String> {
    for pair in epochs.windows(2) {
        let ((e1, o1), (e2, o2)) = (pair[0], pair[1]);
        if e2 <= e1 || o2 < o1 {
            return Err(format!(
                "entries out of order: epoch {e1} at offset {o1} before epoch {e2} at offset {o2}"
            ));
        }
    }
    Ok(())
}

/// The file's text without its checksum line, or None if it does not exist.
fn read_text(path: &Path, kind: &str) -> io::Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => {
            let body = checksum::unseal(&bytes)
                .map_err(|corrupt| malformed(path, kind, 0, corrupt.to_string()))?;
            String::from_utf8(body.to_vec())
                .map(Some)
                .map_err(|_| malformed(path, kind, 0, "not UTF-8 text".into()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(context(e, &format!("cannot read {kind} checkpoint"), path)),
    }
}

/// Check the version line; yield the following lines with their (1-based) numbers.
fn body_lines<'a>(
    text: &'a str,
    path: &Path,
    kind: &str,
) -> io::Result<impl Iterator<Item = (usize, &'a str)>> {
    let Some(body) = text.strip_suffix('\n') else {
        return Err(malformed(
            path,
            kind,
            0,
            "does not end with a newline (cut short?)".into(),
        ));
    };
    let mut lines = body.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, VERSION)) => Ok(lines),
        Some((_, other)) => Err(malformed(
            path,
            kind,
            1,
            format!("unknown version {other:?} (expected {VERSION:?})"),
        )),
        None => Err(malformed(path, kind, 1, "empty".into())),
    }
}

fn malformed(path: &Path, kind: &str, line: usize, why: String) -> io::Error {
    let place = if line == 0 {
        String::new()
    } else {
        format!(", line {line}")
    };
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "malformed {kind} checkpoint {}{place}: {why}",
            path.display()
        ),
    )
}

fn context(e: io::Error, action: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{action} {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn epochs_round_trip() {
        let d = dir();
        let path = d.path().join("leader-epoch-checkpoint");
        for epochs in [
            vec![],
            vec![(0, 0)],
            vec![(0, 0), (3, 17), (4, 17), (9, 1 << 40)],
        ] {
            write_epochs(&path, &epochs, &DiskFaults::default()).unwrap();
            assert_eq!(read_epochs(&path).unwrap(), epochs);
        }
        let text = fs::read_to_string(&path).unwrap();
        let (body, line) = text.split_at(text.len() - 16);
        assert_eq!(body, "0\n4\n0 0\n3 17\n4 17\n9 1099511627776\n");
        assert!(line.starts_with("crc32c "), "{text}");
    }

    #[test]
    fn high_watermark_round_trip() {
        let d = dir();
        let path = d.path().join("hw");
        for hw in [0, 1, 42, u64::MAX] {
            write_high_watermark(&path, hw, &DiskFaults::default()).unwrap();
            assert_eq!(read_high_watermark(&path).unwrap(), hw);
        }
    }

    #[test]
    fn missing_files_read_as_empty() {
        let d = dir();
        assert_eq!(read_epochs(&d.path().join("none")).unwrap(), vec![]);
        assert_eq!(read_high_watermark(&d.path().join("none")).unwrap(), 0);
    }

    #[test]
    fn leftover_tmp_from_a_crash_is_ignored_and_replaced() {
        let d = dir();
        let hw = d.path().join("hw");
        let epochs = d.path().join("epochs");
        // A crash between creating the temp file and renaming it leaves garbage there.
        fs::write(d.path().join("hw.tmp"), "0\n99").unwrap();
        fs::write(d.path().join("epochs.tmp"), "garbage").unwrap();
        assert_eq!(read_high_watermark(&hw).unwrap(), 0);
        assert_eq!(read_epochs(&epochs).unwrap(), vec![]);
        write_high_watermark(&hw, 7, &DiskFaults::default()).unwrap();
        write_epochs(&epochs, &[(1, 5)], &DiskFaults::default()).unwrap();
        fs::write(d.path().join("hw.tmp"), "junk").unwrap();
        assert_eq!(read_high_watermark(&hw).unwrap(), 7);
        assert_eq!(read_epochs(&epochs).unwrap(), vec![(1, 5)]);
        write_high_watermark(&hw, 8, &DiskFaults::default()).unwrap();
        assert_eq!(read_high_watermark(&hw).unwrap(), 8);
        assert!(!d.path().join("hw.tmp").exists());
    }

    #[test]
    fn out_of_order_epochs_are_refused_on_write() {
        let d = dir();
        let path = d.path().join("epochs");
        let err = write_epochs(&path, &[(3, 10), (2, 20)], &DiskFaults::default()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("epochs"), "{err}");
        assert!(!path.exists());
    }

    /// The error reading `text` as a leader-epoch checkpoint, sealed with its
    /// checksum unless it is `raw`.
    fn epochs_error(text: &str, raw: bool) -> String {
        let d = dir();
        let path = d.path().join("leader-epoch-checkpoint");
        let bytes = match raw {
            true => text.as_bytes().to_vec(),
            false => checksum::seal(text.as_bytes()),
        };
        fs::write(&path, bytes).unwrap();
        let err = read_epochs(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        msg
    }

    fn hw_error(text: &[u8], raw: bool) -> String {
        let d = dir();
        let path = d.path().join("high-watermark");
        let bytes = match raw {
            true => text.to_vec(),
            false => checksum::seal(text),
        };
        fs::write(&path, bytes).unwrap();
        let err = read_high_watermark(&path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        msg
    }

    #[test]
    fn malformed_epoch_files_say_what_is_wrong() {
        for (text, expected) in [
            ("", "unknown version \"\""),
            ("\n", "unknown version \"\""),
            ("1\n0\n", "unknown version \"1\""),
            ("0\n", "line 2: missing the number of entries"),
            ("0\nx\n", "line 2: expected the number of entries"),
            ("0\n2\n0 0\n", "line 2: announces 2 entries but has 1"),
            ("0\n1\n0\n", "line 3: expected \"EPOCH OFFSET\""),
            ("0\n1\n0 0 0\n", "line 3: expected \"EPOCH OFFSET\""),
            ("0\n1\nx 0\n", "line 3: expected a leader epoch"),
            ("0\n1\n0 -1\n", "line 3: expected a start offset"),
            ("0\n2\n5 0\n4 9\n", "out of order"),
        ] {
            let msg = epochs_error(text, false);
            assert!(msg.contains(expected), "{text:?}: {msg}");
            assert!(msg.contains("leader-epoch checkpoint"), "{msg}");
        }
        // Without its checksum line (Kafka's own format, or a file cut short).
        for (text, expected) in [
            ("", "0 bytes, not ending with a checksum line (cut short?)"),
            ("0\n1\n0 0\n", "cut short?"),
            (
                "0\n3\n0 0\n3 17\n4 17\n",
                "corrupt at byte 2: no checksum line",
            ),
        ] {
            let msg = epochs_error(text, true);
            assert!(msg.contains(expected), "{text:?}: {msg}");
        }
    }

    #[test]
    fn malformed_high_watermark_files_say_what_is_wrong() {
        for (text, expected) in [
            (&b""[..], "unknown version"),
            (b"0\n", "line 2: missing the high watermark"),
            (
                b"0\n-3\n",
                "line 2: expected a high watermark, found \"-3\"",
            ),
            (b"0\n3\n4\n", "line 3: unexpected line"),
            (b"\xff\xfe\n", "not UTF-8"),
            (b"2\n3\n", "unknown version"),
        ] {
            let msg = hw_error(text, false);
            assert!(msg.contains(expected), "{text:?}: {msg}");
            assert!(msg.contains("high-watermark checkpoint"), "{msg}");
        }
        let msg = hw_error(b"0\n20\n", true);
        assert!(msg.contains("corrupt at byte 5: 5 bytes"), "{msg}");
    }
}
