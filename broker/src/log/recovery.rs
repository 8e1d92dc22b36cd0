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
//!
//! Recovery first reads and plans ([`plan`]), touching no file, then carries the
//! plan out ([`apply`]): the log may be asked to refuse a cut instead
//! (`Recovery::KeepCommitted`), and then its files must be left as they were. The
//! plan says whether the cut would lose whole records — a valid frame found past
//! the cut, which no crash leaves: a crash tears a tail, it does not damage the
//! middle of a log and leave what follows.

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

/// What recovery would cut, before anything is.
pub struct Cut {
    /// What is wrong, and where (file and byte).
    what: String,
    /// Bytes cut off the end of the damaged segment (None: the damage is a segment
    /// that does not follow on, deleted whole).
    bytes: Option<usize>,
    /// Later segments deleted.
    later: usize,
    /// The offset the log ends at after the cut.
    end: u64,
    /// Whole records lie past the cut (later in its file, or in a later segment):
    /// what damage leaves, not a crash.
    pub loses_whole_records: bool,
}

impl Cut {
    /// One line for the operator, once the cut is done.
    pub fn done(&self) -> String {
        let (what, end, later) = (&self.what, self.end, self.later);
        match self.bytes {
            Some(n) => format!(
                "{what}: cut {n} byte(s) there and deleted {later} later segment(s); the log \
                 now ends at offset {end}"
            ),
            None => format!(
                "{what}: deleted it and {later} later segment(s); the log now ends at \
                 offset {end}"
            ),
        }
    }

    /// One line for the operator, the cut not done.
    pub fn planned(&self) -> String {
        let (what, end, later) = (&self.what, self.end, self.later);
        match self.bytes {
            Some(n) => format!(
                "{what}; the cut would drop {n} byte(s) there and {later} later segment(s), \
                 ending the log at offset {end}"
            ),
            None => format!(
                "{what}; the cut would delete it and {later} later segment(s), ending the \
                 log at offset {end}"
            ),
        }
    }
}

/// One segment to keep: its base offset, file, frame positions and valid length.
struct Kept {
    base: u64,
    path: PathBuf,
    positions: Vec<u64>,
    valid_bytes: u64,
}

/// What recovery will do, found without touching a file.
pub struct Plan {
    kept: Vec<Kept>,
    records: Vec<Record>,
    /// Segments to delete, in offset order.
    delete: Vec<PathBuf>,
    /// The cut, if any.
    pub cut: Option<Cut>,
}

impl Plan {
    /// The offset the log ends at once the plan is carried out.
    pub fn end_offset(&self) -> u64 {
        self.kept.first().map_or(0, |k| k.base) + self.records.len() as u64
    }

    /// Where the log ends: its last kept file and the byte its records end at.
    pub fn end_place(&self) -> Option<(&Path, u64)> {
        self.kept.last().map(|k| (k.path.as_path(), k.valid_bytes))
    }
}

/// Scan `dir` (which must exist) and plan the cut at the first invalid record; an
/// offset that does not increase is an `InvalidData` error, unless `guess` (the
/// planted bug `append-undo-lost`) cuts there too. Reads only.
pub fn plan(dir: &Path, guess: bool) -> io::Result<Plan> {
    let files = segment_files(dir)?;
    let mut kept = Vec::new();
    let mut records = Vec::new();
    let mut cut = None;
    let mut delete = Vec::new();
    // No retention yet: a log starts at offset 0, so a missing first segment is a
    // hole like any other.
    let mut expected = 0;
    for (i, (base, path)) in files.iter().enumerate() {
        let end = kept
            .last()
            .map(|k: &Kept| (k.path.as_path(), k.valid_bytes));
        if let Some(what) = misplaced(dir, &files, i, expected, end, guess)? {
            delete = files[i..].iter().map(|(_, p)| p.clone()).collect();
            cut = Some(Cut {
                what,
                bytes: None,
                later: files.len() - i - 1,
                end: expected,
                loses_whole_records: any_whole_record(&files[i..])?,
            });
            break;
        }
        let bytes = fs::read(path).map_err(|e| context(e, "cannot read segment", path))?;
        let scan = scan(dir, path, *base, &bytes, &mut records, guess)?;
        let (pos, next) = (scan.end, scan.next);
        kept.push(Kept {
            base: *base,
            path: path.clone(),
            positions: scan.positions,
            valid_bytes: pos as u64,
        });
        expected = next;
        if let Some(problem) = scan.problem {
            let later = &files[i + 1..];
            delete = later.iter().map(|(_, p)| p.clone()).collect();
            let whole = whole_frame_after(&bytes, pos) || any_whole_record(later)?;
            cut = Some(Cut {
                what: format!("{problem} at byte {pos} of {}", path.display()),
                bytes: Some(bytes.len() - pos),
                later: later.len(),
                end: next,
                loses_whole_records: whole,
            });
            break;
        }
    }
    Ok(Plan {
        kept,
        records,
        delete,
        cut,
    })
}

/// Refuse `plan` (`InvalidData`) if it loses what `Recovery::KeepCommitted` keeps:
/// whole records, or records below `committed` (committed and fsynced).
pub fn keeps_committed(dir: &Path, plan: &Plan, committed: u64) -> io::Result<()> {
    let refuse = |what: String| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "log {}: {what}; this broker is in the partition's ISR, so the controller \
                 may elect it, and no other replica would restore what it lacks: refusing \
                 to open the log (its files are left as they are; it opens, cut, once this \
                 broker is out of the ISR)",
                dir.display()
            ),
        )
    };
    if let Some(cut) = plan.cut.as_ref().filter(|c| c.loses_whole_records) {
        return Err(refuse(format!(
            "recovery would cut whole records, which no crash leaves behind: {}",
            cut.planned()
        )));
    }
    let end = plan.end_offset();
    if end < committed {
        let place = match plan.end_place() {
            Some((file, byte)) => format!(" ({}, byte {byte})", file.display()),
            None => " (no segment)".into(),
        };
        let cut = plan.cut.as_ref().map_or(String::new(), |c| {
            format!(" (recovery found {})", c.planned())
        });
        return Err(refuse(format!(
            "the log ends at offset {end}{place}, below {committed}, its checkpointed high \
             watermark and recovery point: committed records it had fsynced are \
             missing{cut}"
        )));
    }
    Ok(())
}

/// Carry out `plan`: cut the damaged segment, delete the later ones, fsync.
pub fn apply(dir: &Path, plan: Plan, faults: &DiskFaults) -> io::Result<Recovered> {
    for path in &plan.delete {
        fs::remove_file(path).map_err(|e| context(e, "cannot delete segment", path))?;
    }
    let mut segments = Vec::with_capacity(plan.kept.len());
    for k in plan.kept {
        segments.push(Segment::open_recovered(
            k.path,
            k.base,
            k.positions,
            k.valid_bytes,
            faults,
        )?);
    }
    if plan.cut.is_some() {
        sync_dir(dir)?;
    }
    Ok(Recovered {
        segments,
        records: plan.records,
        cut: plan.cut.map(|c| c.done()),
    })
}

/// Segment `files[i]` checked against the end of the log so far (`expected`, at
/// `end`: a file and byte): one that starts inside the log is an error (unless
/// `guess`); one that starts past its end is to be deleted with every later
/// segment: what is wrong, in words.
fn misplaced(
    dir: &Path,
    files: &[(u64, PathBuf)],
    i: usize,
    expected: u64,
    end: Option<(&Path, u64)>,
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
    let place = match end {
        Some((file, byte)) => format!("at byte {byte} of {}", file.display()),
        None => "at byte 0, with no segment before it".into(),
    };
    Ok(Some(format!(
        "segment {} starts at offset {base} but the log ends at {expected} ({place})",
        path.display(),
    )))
}

/// Whether any of segment `files` holds a valid frame (a whole record).
fn any_whole_record(files: &[(u64, PathBuf)]) -> io::Result<bool> {
    for (_, path) in files {
        let bytes = fs::read(path).map_err(|e| context(e, "cannot read segment", path))?;
        if whole_frame_after(&bytes, 0) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether a valid frame starts anywhere in `bytes` at or after `from` (byte by
/// byte: past damage, where the next frame starts is not known).
fn whole_frame_after(bytes: &[u8], from: usize) -> bool {
    (from..bytes.len()).any(|at| frame::decode(&bytes[at..]).is_ok())
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

/// fsync a directory so that file creations and deletions in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    fsutil::sync_dir(dir).map_err(|e| context(e, "cannot fsync log directory", dir))
}
