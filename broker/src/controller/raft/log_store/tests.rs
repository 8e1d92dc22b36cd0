//! The log on disk: what was written reads back after a restart, a torn last write
//! is cut off, corruption before the end refuses the start.

use openraft::{CommittedLeaderId, EntryPayload};

use super::*;
use crate::controller::state::Command;
use crate::protocol::Heartbeat;

fn entry(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        payload: EntryPayload::Normal(Command::Heartbeat(Heartbeat {
            broker_id: 1,
            broker_epoch: index,
            address: None,
        })),
    }
}

/// The store in `dir`, on a disk that works.
fn open_in(dir: &Path) -> Result<LogStore, String> {
    LogStore::open(dir, &DiskFaults::default())
}

/// A store opened in `dir` with entries `range` of `term` appended.
fn holding(dir: &Path, term: u64, range: std::ops::Range<u64>) -> LogStore {
    let store = open_in(dir).unwrap();
    store
        .lock()
        .append(range.map(|i| entry(term, i)).collect())
        .unwrap();
    store
}

fn indexes(store: &LogStore) -> Vec<u64> {
    store.lock().entries.keys().copied().collect()
}

#[tokio::test]
async fn entries_and_the_vote_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = open_in(dir.path()).unwrap();
    assert!(store.is_pristine());
    store
        .lock()
        .append((0..3).map(|i| entry(1, i)).collect())
        .unwrap();
    store.save_vote(&Vote::new(2, 3)).await.unwrap();
    drop(store);

    let mut store = open_in(dir.path()).unwrap();
    assert!(!store.is_pristine());
    assert_eq!(indexes(&store), vec![0, 1, 2]);
    assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(2, 3)));
    let got = store.try_get_log_entries(1..).await.unwrap();
    assert_eq!(got, vec![entry(1, 1), entry(1, 2)]);
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id, Some(entry(1, 2).log_id));
}

#[tokio::test]
async fn truncate_and_purge_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..5);
    store.lock().truncate(3).unwrap();
    store.lock().append(vec![entry(2, 3)]).unwrap();
    store.lock().purge(entry(1, 1).log_id).unwrap();
    drop(store);

    let mut store = open_in(dir.path()).unwrap();
    assert_eq!(indexes(&store), vec![2, 3]);
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(entry(1, 1).log_id));
    assert_eq!(state.last_log_id, Some(entry(2, 3).log_id));
}

#[test]
fn a_torn_last_write_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..2);
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let whole = std::fs::read(&path).unwrap();
    // Half of a third frame, as a crash in the middle of its write leaves it.
    let third = frame(&entry(1, 2)).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(&third[..third.len() / 2]);
    std::fs::write(&path, &torn).unwrap();

    let store = open_in(dir.path()).unwrap();
    assert_eq!(indexes(&store), vec![0, 1]);
    assert_eq!(std::fs::read(&path).unwrap(), whole, "the torn end is cut");
    // A last frame whose bytes were never written (zeros) is torn too.
    let mut zeroed = whole.clone();
    zeroed.extend(vec![0u8; third.len()]);
    zeroed[whole.len()..whole.len() + 4].copy_from_slice(&third[..4]);
    std::fs::write(&path, &zeroed).unwrap();
    drop(store);
    assert_eq!(indexes(&open_in(dir.path()).unwrap()), vec![0, 1]);
}

#[test]
fn corruption_before_the_end_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..3);
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[HEADER + 5] ^= 0x20; // inside the first entry
    std::fs::write(&path, &bytes).unwrap();
    let err = open_in(dir.path()).err().expect("a corrupt log");
    assert!(err.contains("corrupt at byte 0"), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "left as it was");
}

#[test]
fn an_unreadable_vote_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(VOTE_FILE), b"{\"leader_id\":").unwrap();
    let err = open_in(dir.path()).err().expect("a corrupt vote");
    assert!(err.contains(VOTE_FILE), "{err}");
}

/// A store of entries 0..5, appended (and so acknowledged) in two writes, closed:
/// the raft dir's files, by name.
fn acknowledged(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut store = open_in(dir).unwrap();
    store
        .lock()
        .append((0..3).map(|i| entry(1, i)).collect())
        .unwrap();
    store
        .lock()
        .append((3..5).map(|i| entry(2, i)).collect())
        .unwrap();
    block_on(store.save_vote(&Vote::new(2, 3))).unwrap();
    store.lock().purge(entry(1, 0).log_id).unwrap();
    drop(store);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// Every damage to any file of a voter's Raft state — its log, vote, purge point —
/// refuses the start, naming the file: the voter acknowledged every entry and vote
/// in it, and one that forgot an entry or a vote may break Raft's safety (elect a
/// leader without a committed entry, vote twice in a term). A cut or damaged last
/// frame used to be taken for a torn write and cut off, and a flipped digit in the
/// vote read as another vote.
#[test]
fn every_damage_to_acknowledged_raft_state_refuses_to_start() {
    let original = tempfile::tempdir().unwrap();
    let files = acknowledged(original.path());
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&LOG_FILE) && names.contains(&VOTE_FILE),
        "{names:?}"
    );
    assert!(
        names.contains(&PURGED_FILE) && names.contains(&END_FILE),
        "{names:?}"
    );
    let mut cases = 0;
    for (victim, bytes) in &files {
        for damage in crate::damage::sweep(bytes.len()) {
            if damage.first_change(bytes).is_none() {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            for (name, b) in &files {
                let b = match name == victim {
                    true => damage.apply(b),
                    false => b.clone(),
                };
                std::fs::write(dir.path().join(name), b).unwrap();
            }
            let case = format!("{victim} {damage:?}");
            match open_in(dir.path()) {
                Ok(store) => panic!("{case}: opened with entries {:?}", indexes(&store)),
                Err(e) => {
                    let path = dir.path().join(victim).display().to_string();
                    assert!(e.contains(&path), "{case}: {e}");
                    assert!(e.contains("at byte "), "{case}: {e}");
                }
            }
            cases += 1;
        }
    }
    assert!(cases > 1500, "{cases}");
}

/// What lies past `log-end.json` was never acknowledged: a crash after the log's
/// fsync and before the log end was written leaves an entry there, which opens; a
/// damaged or cut one is cut off, as a torn write is.
#[test]
fn past_the_log_end_a_damaged_frame_is_a_torn_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..2);
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let whole = std::fs::read(&path).unwrap();
    // Entry 2 reached the log, its log end did not.
    let mut longer = whole.clone();
    longer.extend(frame(&entry(1, 2)).unwrap());
    std::fs::write(&path, &longer).unwrap();
    assert_eq!(indexes(&open_in(dir.path()).unwrap()), vec![0, 1, 2]);
    for damage in crate::damage::sweep(longer.len()) {
        if damage
            .first_change(&longer)
            .is_none_or(|at| at < whole.len())
        {
            continue;
        }
        let damaged = damage.apply(&longer);
        std::fs::write(&path, &damaged).unwrap();
        let store = open_in(dir.path()).unwrap_or_else(|e| panic!("{damage:?}: {e}"));
        assert_eq!(indexes(&store), vec![0, 1], "{damage:?}");
        assert_eq!(std::fs::read(&path).unwrap(), whole, "{damage:?}: cut");
    }
}

/// A conflicting suffix cut by Raft (a new leader's log wins over entries never
/// committed) lowers the log end first: the shorter log opens.
#[test]
fn a_truncated_suffix_is_not_taken_for_lost_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..4);
    store.lock().truncate(2).unwrap();
    drop(store);
    assert_eq!(indexes(&open_in(dir.path()).unwrap()), vec![0, 1]);
    // Everything cut, and everything purged: nothing is missing either.
    let store = open_in(dir.path()).unwrap();
    store.lock().truncate(0).unwrap();
    drop(store);
    assert!(indexes(&open_in(dir.path()).unwrap()).is_empty());
    let store = holding(dir.path(), 2, 0..3);
    store.lock().purge(entry(2, 2).log_id).unwrap();
    drop(store);
    assert!(indexes(&open_in(dir.path()).unwrap()).is_empty());
}

/// The log cut short before the entry its log end names: refused, naming the log,
/// the byte it ends at and the entry it lost, and left as it was.
#[test]
fn a_log_cut_short_says_what_it_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = holding(dir.path(), 1, 0..3);
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let bytes = std::fs::read(&path).unwrap();
    let first_two = 2 * frame(&entry(1, 0)).unwrap().len();
    std::fs::write(&path, &bytes[..first_two + 5]).unwrap();
    let err = open_in(dir.path()).err().expect("refused");
    for part in [
        &format!("{} is corrupt at byte {first_two}", path.display()),
        "a frame header cut short (5 bytes) after entry T1-N1-1",
        "entries up to T1-N1-2 were written and acknowledged",
        END_FILE,
    ] {
        assert!(err.contains(part), "{part:?} not in: {err}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap().len(),
        first_two + 5,
        "untouched"
    );
}
