//! What each file has been through since it was last fsynced, as undo records: the
//! bytes a write overwrote and the length before it, the tail a cut removed. A power
//! cut replays them backwards, which leaves every file as its last fsync left it;
//! an fsync forgets a file's records, which makes what they undo durable. The
//! journal makes the changes itself, so that it knows each file's length without
//! asking the file at every write.
//!
//! Kept as undo rather than as a cache in front of the files (LazyFS's way) so that
//! reads, sizes and every operation the journal does not know go straight to the
//! real files: the filesystem stays a plain passthrough until the power goes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// One change to a file not yet fsynced, and how to take it back.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Undo {
    /// `len` bytes written at `offset`; `old` held the bytes of `offset..` the file
    /// had then (up to `len` of them), `prev_len` its length.
    Write {
        offset: u64,
        len: u64,
        old: Vec<u8>,
        prev_len: u64,
    },
    /// The length set from `prev_len`; `old` holds the tail a shortening removed.
    SetLen { prev_len: u64, old: Vec<u8> },
}

/// The last write of all, whose first bytes a torn power cut keeps.
#[derive(Debug, Clone)]
struct LastWrite {
    file: u64,
    seq: u64,
    offset: u64,
    data: Vec<u8>,
}

/// What a power cut did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// The file's key (the filesystem's inode number).
    pub file: u64,
    /// Its length before the cut and after.
    pub len_before: u64,
    pub len_after: u64,
    /// How many bytes written since its last fsync were lost (overwrites count).
    pub lost_bytes: u64,
    /// For the torn write: where it began and how many of its bytes were kept.
    pub torn: Option<(u64, u64)>,
}

/// One file's changes since its last fsync, oldest first, each with its sequence
/// number (an fsync makes durable only those noted before it began).
#[derive(Debug, Default)]
struct FileLog {
    undos: Vec<(u64, Undo)>,
    /// The file's length after the last of them, while known: every change to a
    /// file's contents or length goes through the journal, so only the first change
    /// since an fsync needs an fstat (a failed change forgets it).
    len: Option<u64>,
}

/// The un-fsynced changes of every file, keyed by the filesystem's inode numbers.
#[derive(Debug, Default)]
pub struct Journal {
    files: BTreeMap<u64, FileLog>,
    last_write: Option<LastWrite>,
    /// The next change's sequence number.
    next_seq: u64,
}

/// Where the journal stood when an fsync began ([`Journal::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(pub(crate) u64);

fn read_exact_at(file: &File, offset: u64, len: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

impl Journal {
    /// `key`'s length now: as its log last left it, or else from `file`.
    pub fn len(&self, key: u64, file: &File) -> io::Result<u64> {
        match self.files.get(&key).and_then(|log| log.len) {
            Some(len) => Ok(len),
            None => Ok(file.metadata()?.len()),
        }
    }

    /// Write `data` at `offset` into `file` (key `key`), noting first how to take it
    /// back.
    pub fn write(&mut self, key: u64, file: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        let prev_len = self.len(key, file)?;
        let len = data.len() as u64;
        let old = if offset < prev_len {
            read_exact_at(file, offset, len.min(prev_len - offset))?
        } else {
            Vec::new()
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let log = self.files.entry(key).or_default();
        log.undos.push((
            seq,
            Undo::Write {
                offset,
                len,
                old,
                prev_len,
            },
        ));
        let done = file.write_all_at(data, offset);
        log.len = done.is_ok().then_some(prev_len.max(offset + len));
        let last = self.last_write.get_or_insert_with(|| LastWrite {
            file: key,
            seq,
            offset,
            data: Vec::new(),
        });
        last.file = key;
        last.seq = seq;
        last.offset = offset;
        last.data.clear();
        last.data.extend_from_slice(data);
        done
    }

    /// Cut (or grow) `file` to `new_len`, noting first how to take it back.
    pub fn set_len(&mut self, key: u64, file: &File, new_len: u64) -> io::Result<()> {
        let prev_len = self.len(key, file)?;
        let old = if new_len < prev_len {
            read_exact_at(file, new_len, prev_len - new_len)?
        } else {
            Vec::new()
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let log = self.files.entry(key).or_default();
        log.undos.push((seq, Undo::SetLen { prev_len, old }));
        let done = file.set_len(new_len);
        log.len = done.is_ok().then_some(new_len);
        done
    }

    /// Where the journal stands: an fsync that begins now makes durable what was
    /// noted before it, not what comes while it runs ([`Journal::synced`]).
    pub fn mark(&self) -> Mark {
        Mark(self.next_seq)
    }

    /// The file was fsynced, the fsync having begun at `mark`: what it held then
    /// survives a power cut.
    pub fn synced(&mut self, key: u64, mark: Mark) {
        if let Some(log) = self.files.get_mut(&key) {
            log.undos.retain(|(seq, _)| *seq >= mark.0);
            if log.undos.is_empty() {
                self.files.remove(&key);
            }
        }
        if self
            .last_write
            .as_ref()
            .is_some_and(|w| w.file == key && w.seq < mark.0)
        {
            self.last_write = None;
        }
    }

    /// The kernel wrote back every change noted before `mark`, in every file: they
    /// survive a power cut as an fsync's would ([`crate::writeback`]).
    pub fn written_back(&mut self, mark: Mark) {
        self.files.retain(|_, log| {
            // Oldest first: what is due is a prefix.
            let due = log.undos.partition_point(|(seq, _)| *seq < mark.0);
            log.undos.drain(..due);
            !log.undos.is_empty()
        });
        if self.last_write.as_ref().is_some_and(|w| w.seq < mark.0) {
            self.last_write = None;
        }
    }

    /// The file is gone (deleted), or its inode number is another file's now:
    /// nothing of it to restore.
    pub fn forget(&mut self, key: u64) {
        self.files.remove(&key);
        if self.last_write.as_ref().is_some_and(|w| w.file == key) {
            self.last_write = None;
        }
    }

    /// Bytes written (or cut) and not yet fsynced, over every file.
    pub fn unsynced_bytes(&self) -> u64 {
        self.files
            .values()
            .flat_map(|log| &log.undos)
            .map(|(_, u)| match u {
                Undo::Write { len, .. } => *len,
                Undo::SetLen { old, .. } => old.len() as u64,
            })
            .sum()
    }

    /// A power cut: every file goes back to what its last fsync left, except that
    /// with `torn = Some(keep)` the last write of all keeps its first
    /// `keep % (its length + 1)` bytes. `open` gives each dirty file for writing
    /// (None: it no longer exists, and is skipped). The journal is empty after.
    pub fn power_cut(
        &mut self,
        torn: Option<u64>,
        mut open: impl FnMut(u64) -> Option<File>,
    ) -> io::Result<Vec<Restored>> {
        let last = self.last_write.take();
        let mut out = Vec::new();
        for (key, log) in std::mem::take(&mut self.files) {
            let Some(file) = open(key) else { continue };
            let len_before = file.metadata()?.len();
            let mut lost_bytes = 0;
            for (_, undo) in log.undos.iter().rev() {
                match undo {
                    Undo::Write {
                        offset,
                        len,
                        old,
                        prev_len,
                    } => {
                        file.write_all_at(old, *offset)?;
                        file.set_len(*prev_len)?;
                        lost_bytes += len;
                    }
                    Undo::SetLen { prev_len, old } => {
                        file.set_len(*prev_len)?;
                        if !old.is_empty() {
                            file.write_all_at(old, prev_len - old.len() as u64)?;
                        }
                        lost_bytes += old.len() as u64;
                    }
                }
            }
            let mut kept = None;
            if let (Some(keep), Some(w)) = (torn, &last)
                && w.file == key
            {
                let k = keep % (w.data.len() as u64 + 1);
                file.write_all_at(&w.data[..k as usize], w.offset)?;
                lost_bytes -= k.min(lost_bytes);
                kept = Some((w.offset, k));
            }
            out.push(Restored {
                file: key,
                len_before,
                len_after: file.metadata()?.len(),
                lost_bytes,
                torn: kept,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn file(dir: &tempfile::TempDir, name: &str, contents: &[u8]) -> File {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap()
    }

    fn contents(f: &File) -> Vec<u8> {
        read_exact_at(f, 0, f.metadata().unwrap().len()).unwrap()
    }

    fn write(j: &mut Journal, key: u64, f: &File, offset: u64, data: &[u8]) {
        j.write(key, f, offset, data).unwrap();
    }

    fn synced(j: &mut Journal, key: u64) {
        let mark = j.mark();
        j.synced(key, mark);
    }

    #[test]
    fn a_power_cut_undoes_every_write_since_the_last_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(&dir, "a", b"durable");
        let mut j = Journal::default();
        write(&mut j, 7, &f, 7, b"-appended");
        synced(&mut j, 7);
        write(&mut j, 7, &f, 0, b"DUR");
        write(&mut j, 7, &f, 16, b"+more");
        j.set_len(7, &f, 3).unwrap();
        write(&mut j, 7, &f, 3, b"xx");
        // The lengths the journal keeps (no fstat) follow a cut, a growth and a
        // write past the end: each undo puts back the right length.
        j.set_len(7, &f, 7).unwrap();
        write(&mut j, 7, &f, 8, b"y");
        assert_eq!(contents(&f), b"DURxx\0\0\0y");
        let restored = j.power_cut(None, |_| Some(f.try_clone().unwrap())).unwrap();
        assert_eq!(contents(&f), b"durable-appended");
        assert_eq!(restored[0].len_before, 9);
        assert_eq!(restored[0].len_after, 16);
        assert_eq!(j.unsynced_bytes(), 0);
    }

    #[test]
    fn a_power_cut_after_a_writeback_loses_only_what_came_after_it_in_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = file(&dir, "a", b"");
        let b = file(&dir, "b", b"");
        let mut j = Journal::default();
        write(&mut j, 1, &a, 0, b"old-a");
        write(&mut j, 2, &b, 0, b"old-b");
        let mark = j.mark();
        write(&mut j, 1, &a, 5, b"+new");
        j.written_back(mark);
        assert_eq!(
            j.unsynced_bytes(),
            4,
            "only the write after the mark is dirty"
        );
        let files = [a.try_clone().unwrap(), b.try_clone().unwrap()];
        let restored = j
            .power_cut(Some(1), |k| {
                Some(files[k as usize - 1].try_clone().unwrap())
            })
            .unwrap();
        assert_eq!(contents(&a), b"old-a+");
        assert_eq!(
            contents(&b),
            b"old-b",
            "b was written back whole: untouched"
        );
        assert_eq!(restored.len(), 1);
    }

    #[test]
    fn a_torn_cut_keeps_a_prefix_of_the_last_write_only() {
        let dir = tempfile::tempdir().unwrap();
        let a = file(&dir, "a", b"");
        let b = file(&dir, "b", b"b0");
        let mut j = Journal::default();
        write(&mut j, 1, &a, 0, b"first");
        write(&mut j, 2, &b, 2, b"second");
        let files = [a.try_clone().unwrap(), b.try_clone().unwrap()];
        let restored = j
            .power_cut(Some(3), |k| {
                Some(files[k as usize - 1].try_clone().unwrap())
            })
            .unwrap();
        assert_eq!(contents(&a), b"");
        assert_eq!(contents(&b), b"b0sec");
        assert_eq!(restored[1].torn, Some((2, 3)));
        assert_eq!(restored[1].lost_bytes, 3);
    }

    #[test]
    fn fsynced_and_deleted_files_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let a = file(&dir, "a", b"");
        let mut j = Journal::default();
        write(&mut j, 1, &a, 0, b"kept");
        synced(&mut j, 1);
        write(&mut j, 2, &a, 4, b"gone file");
        j.forget(2);
        assert_eq!(j.unsynced_bytes(), 0);
        assert!(j.power_cut(Some(1), |_| unreachable!()).unwrap().is_empty());
        assert_eq!(contents(&a), b"keptgone file");
    }

    /// A write may come while an fsync runs (the filesystem's state is not locked
    /// during one): that fsync does not make it durable, and it stays the write a
    /// torn cut keeps a prefix of.
    #[test]
    fn an_fsync_makes_durable_only_what_came_before_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let a = file(&dir, "a", b"");
        let mut j = Journal::default();
        write(&mut j, 1, &a, 0, b"before");
        let mark = j.mark();
        write(&mut j, 1, &a, 6, b"-during");
        j.synced(1, mark);
        assert_eq!(j.unsynced_bytes(), 7);
        let restored = j
            .power_cut(Some(2), |_| Some(a.try_clone().unwrap()))
            .unwrap();
        assert_eq!(contents(&a), b"before-d");
        assert_eq!(restored[0].torn, Some((6, 2)));
    }
}
