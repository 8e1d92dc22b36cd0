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

fn indexes(store: &LogStore) -> Vec<u64> {
    store.lock().entries.keys().copied().collect()
}

#[tokio::test]
async fn entries_and_the_vote_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = LogStore::open(dir.path()).unwrap();
    assert!(store.is_pristine());
    store
        .lock()
        .append((0..3).map(|i| entry(1, i)).collect())
        .unwrap();
    store.save_vote(&Vote::new(2, 3)).await.unwrap();
    drop(store);

    let mut store = LogStore::open(dir.path()).unwrap();
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
    let store = LogStore::open(dir.path()).unwrap();
    store
        .lock()
        .append((0..5).map(|i| entry(1, i)).collect())
        .unwrap();
    store.lock().truncate(3).unwrap();
    store.lock().append(vec![entry(2, 3)]).unwrap();
    store.lock().purge(entry(1, 1).log_id).unwrap();
    drop(store);

    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(indexes(&store), vec![2, 3]);
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(entry(1, 1).log_id));
    assert_eq!(state.last_log_id, Some(entry(2, 3).log_id));
}

#[test]
fn a_torn_last_write_is_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let store = LogStore::open(dir.path()).unwrap();
    store
        .lock()
        .append((0..2).map(|i| entry(1, i)).collect())
        .unwrap();
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let whole = std::fs::read(&path).unwrap();
    // Half of a third frame, as a crash in the middle of its write leaves it.
    let third = frame(&entry(1, 2)).unwrap();
    let mut torn = whole.clone();
    torn.extend_from_slice(&third[..third.len() / 2]);
    std::fs::write(&path, &torn).unwrap();

    let store = LogStore::open(dir.path()).unwrap();
    assert_eq!(indexes(&store), vec![0, 1]);
    assert_eq!(std::fs::read(&path).unwrap(), whole, "the torn end is cut");
    // A last frame whose bytes were never written (zeros) is torn too.
    let mut zeroed = whole.clone();
    zeroed.extend(vec![0u8; third.len()]);
    zeroed[whole.len()..whole.len() + 4].copy_from_slice(&third[..4]);
    std::fs::write(&path, &zeroed).unwrap();
    drop(store);
    assert_eq!(indexes(&LogStore::open(dir.path()).unwrap()), vec![0, 1]);
}

#[test]
fn corruption_before_the_end_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = LogStore::open(dir.path()).unwrap();
    store
        .lock()
        .append((0..3).map(|i| entry(1, i)).collect())
        .unwrap();
    drop(store);
    let path = dir.path().join(LOG_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[HEADER + 5] ^= 0x20; // inside the first entry
    std::fs::write(&path, &bytes).unwrap();
    let err = LogStore::open(dir.path()).err().expect("a corrupt log");
    assert!(err.contains("corrupt at byte 0"), "{err}");
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "left as it was");
}

#[test]
fn an_unreadable_vote_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(VOTE_FILE), b"{\"leader_id\":").unwrap();
    let err = LogStore::open(dir.path()).err().expect("a corrupt vote");
    assert!(err.contains(VOTE_FILE), "{err}");
}
