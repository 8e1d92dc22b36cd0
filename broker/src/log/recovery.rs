//! Crash recovery: scan a log directory's segments in offset order and keep the
//! longest valid prefix. The first torn, corrupt or out-of-sequence record cuts the
//! log there: its file is cut short and every later segment is deleted, since
//! nothing after a hole can be trusted to follow it.
//!
//! One thing no crash leaves behind is refused instead: a valid record whose offset
//! does not increase (a repeated offset, or a segment that starts inside the one
//! before). Two records claim one offset and nothing says which is right — the
//! first may be a write that failed, the second the acknowledged one — so the log
//! does not open, with an error saying where, rather than guess.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::Record;
use super::frame;
use super::segment::{self, Segment, context};
use crate::disk::DiskFaults;
use crate::fsutil;

/// What was found in a log directory.
pub struct Recovered {
    /// Valid segments in offset order (possibly none).
    pub segments: Vec<Segment>,
    /// Their records in offset order.
    pub records: Vec<Record>,
    /// What was cut, if anything: one line for the operator.
    pub cut: Option<String>,
}

/// Scan `dir` (which must exist), cutting what follows the first invalid record;
/// an offset that does not increase is an `InvalidData` error, unless `guess` (the
/// planted bug `append-undo-lost`) cuts there too.
pub fn recover(dir: &Path, faults: &DiskFaults, guess: bool) -> io::Result<Recovered> {
    let files = segment_files(dir)?;
    let mut segments = Vec::new();
    let mut records = Vec::new();
    let mut cut = None;
    // No retention yet: a log starts at offset 0, so a missing first segment is a
    // hole like any other.
    let mut expected = 0;
    for (i, (base, path)) in files.iter().enumerate() {
        if let Some(why) = misplaced(dir, &files, i, expected, guess)? {
            cut = Some(why);
            break;
        }
        let bytes = fs::read(path).map_err(|e| context(e, "cannot read segment", path))?;
        let scan = scan(dir, path, *base, &bytes, &mut records, guess)?;
        let (pos, next) = (scan.end, scan.next);
        segments.push(Segment::open_recovered(
            path.clone(),
            *base,
            scan.positions,
            pos as u64,
            faults,
        )?);
        expected = next;
        if let Some(problem) = scan.problem {
            let later = delete_all(&files[i + 1..])?;
            cut = Some(format!(
                "{problem} at byte {pos} of {}: cut {} byte(s) there and deleted {later} \
                 later segment(s); the log now ends at offset {next}",
                path.display(),
                bytes.len() - pos
            ));
            break;
        }
    }
    if cut.is_some() {
        sync_dir(dir)?;
    }
    Ok(Recovered {
        segments,
        records,
        cut,
    })
}

/// Segment `files[i]` checked against the end of the log so far (`expected`): one
/// that starts inside the log is an error (unless `guess`); one that starts past
/// its end is deleted with every later segment, and the cut said in words.
fn misplaced(
    dir: &Path,
    files: &[(u64, PathBuf)],
    i: usize,
    expected: u64,
    guess: bool,
) -> io::Result<Option<String>> {
    let (base, path) = &files[i];
    if *base < expected && !guess {
        return Err(repeated(
            dir,
            format!(
                "segment {} starts at offset {base}, inside the segment before it \
                 (which ends at {expected})",
                path.display()
            ),
        ));
    }
    if *base == expected {
        return Ok(None);
    }
    let next = expected;
    let later = delete_all(&files[i..])?;
    Ok(Some(format!(
        "segment {} starts at offset {base} but the log ends at {next}; \
         deleted it and {} later segment(s)",
        path.display(),
        later - 1
    )))
}

/// What the scan of one segment found.
struct Scan {
    /// Each valid record's byte position in the file.
    positions: Vec<u64>,
    /// Where the valid records end: the file is cut there if it goes on.
    end: usize,
    /// The offset after the last valid record.
    next: u64,
    /// Why the scan stopped before the end of the file, if it did.
    problem: Option<String>,
}

/// Read the records of segment `path` (based at offset `base`, its contents
/// `bytes`) into `records`, up to the first torn, corrupt or out-of-sequence one;
/// an offset that does not increase is an error, unless `guess`.
fn scan(
    dir: &Path,
    path: &Path,
    base: u64,
    bytes: &[u8],
    records: &mut Vec<Record>,
    guess: bool,
) -> io::Result<Scan> {
    let mut positions = Vec::new();
    let mut pos = 0;
    let mut next = base;
    let mut problem = None;
    while pos < bytes.len() {
        match frame::decode(&bytes[pos..]) {
            Ok((record, n)) if record.offset == next && next < u64::MAX => {
                positions.push(pos as u64);
                records.push(record);
                pos += n;
                next += 1;
            }
            Ok((record, _)) if record.offset < next && !guess => {
                return Err(repeated(
                    dir,
                    format!(
                        "segment {} holds offset {} at byte {pos}, after offset {}",
                        path.display(),
                        record.offset,
                        next - 1
                    ),
                ));
            }
            Ok((record, _)) => {
                // PLANTED BUG (append-undo-lost) when the offset repeats: cut there,
                // keeping whichever record came first.
                problem = Some(format!(
                    "record with offset {} where {next} was expected",
                    record.offset
                ));
                break;
            }
            Err(invalid) => {
                problem = Some(invalid.to_string());
                break;
            }
        }
    }
    Ok(Scan {
        positions,
        end: pos,
        next,
        problem,
    })
}

/// The refusal of a log whose offsets do not increase (`what`: where).
fn repeated(dir: &Path, what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "log {}: {what}: offsets must increase and no crash leaves this behind; \
             refusing to open the log rather than guess which record is right (move \
             the partition's directory aside to have this replica rebuilt from the leader)",
            dir.display()
        ),
    )
}

/// The segment files in `dir`, by base offset; other files are left alone.
fn segment_files(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| context(e, "cannot list log directory", dir))? {
        let entry = entry.map_err(|e| context(e, "cannot list log directory", dir))?;
        if let Some(base) = entry
            .file_name()
            .to_str()
            .and_then(segment::parse_file_name)
        {
            files.push((base, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// Delete the segment files `files`; how many there were.
fn delete_all(files: &[(u64, PathBuf)]) -> io::Result<usize> {
    for (_, path) in files {
        fs::remove_file(path).map_err(|e| context(e, "cannot delete segment", path))?;
    }
    Ok(files.len())
}

/// fsync a directory so that file creations and deletions in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    fsutil::sync_dir(dir).map_err(|e| context(e, "cannot fsync log directory", dir))
}
