//! The Shale store's own rules: what survives a reopen, snapshots moved between nodes, a
//! corrupt snapshot refused with nothing changed, the clean-up of an interrupted install.

use std::collections::BTreeSet;
use std::io::SeekFrom;

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::Snapshot;
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder, Vote};
use shale_raft::{decode_snapshot, open_store, Request, SnapshotData, StateMachineStore, TypeConfig};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// The bytes of a snapshot's file, read through its `SnapshotData`.
async fn bytes_of(snap: &mut Snapshot<TypeConfig>) -> Vec<u8> {
    let mut out = Vec::new();
    snap.snapshot.seek(SeekFrom::Start(0)).await.unwrap();
    snap.snapshot.read_to_end(&mut out).await.unwrap();
    out
}

/// `bytes` received by `sm` as a leader's snapshot is: written into the file it hands out.
async fn receive(sm: &mut StateMachineStore, bytes: &[u8]) -> Box<SnapshotData> {
    let mut data = sm.begin_receiving_snapshot().await.unwrap();
    data.write_all(bytes).await.unwrap();
    data
}

/// The files in a store's snapshot directory.
fn snapshot_dir(dir: &TempDir) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.path().join("raft-snapshot"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn log_id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn set(term: u64, index: u64, k: &str, v: &str) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Normal(Request::Set {
            key: k.into(),
            value: v.into(),
        }),
    }
}

fn membership(term: u64, index: u64) -> Entry<TypeConfig> {
    let nodes: BTreeSet<u64> = [1, 2, 3].into();
    Entry {
        log_id: log_id(term, index),
        payload: EntryPayload::Membership(Membership::new(vec![nodes], None)),
    }
}

async fn append(log: &mut shale_raft::LogStore, ents: Vec<Entry<TypeConfig>>) {
    log.blocking_append(ents).await.unwrap();
}

#[tokio::test]
async fn log_vote_and_purge_survive_reopen() {
    let dir = TempDir::new().unwrap();
    {
        let (mut log, _sm) = open_store(dir.path()).unwrap();
        append(&mut log, (1..=10).map(|i| set(1, i, &format!("k{i}"), "v")).collect()).await;
        log.save_vote(&Vote::new(3, 2)).await.unwrap();
        log.save_committed(Some(log_id(1, 7))).await.unwrap();
        log.purge(log_id(1, 3)).await.unwrap();
        log.truncate(log_id(1, 9)).await.unwrap();
    }
    let (mut log, _sm) = open_store(dir.path()).unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(Vote::new(3, 2)));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(1, 7)));
    let st = log.get_log_state().await.unwrap();
    assert_eq!(st.last_purged_log_id, Some(log_id(1, 3)));
    assert_eq!(st.last_log_id, Some(log_id(1, 8)));
    let got: Vec<u64> = log
        .try_get_log_entries(0..100)
        .await
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect();
    assert_eq!(got, (4..=8).collect::<Vec<_>>());
}

#[tokio::test]
async fn snapshot_moves_data_between_nodes_and_survives_reopen() {
    let (d1, d2) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (_l1, mut sm1) = open_store(d1.path()).unwrap();
    let mut ents = vec![membership(1, 1)];
    ents.extend((2..=500).map(|i| set(1, i, &format!("key{i:04}"), &format!("value{i}"))));
    sm1.apply(ents).await.unwrap();
    let mut snap = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    assert_eq!(snap.meta.last_log_id, Some(log_id(1, 500)));
    // The snapshot is a file on disk: the data handed to openraft reads it.
    assert_eq!(snapshot_dir(&d1).len(), 1, "{:?}", snapshot_dir(&d1));
    let bytes = bytes_of(&mut snap).await;
    assert_eq!(snap.snapshot.len(), bytes.len() as u64);
    let (header, files) = decode_snapshot(&bytes).unwrap();
    assert_eq!(header.files.len(), 1);
    assert!(files[0].len() > 1000, "the snapshot carries an SST of the data");
    // A second build replaces the first: one snapshot file, no SST left from the build.
    let mut snap = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let files_left = snapshot_dir(&d1);
    assert_eq!(files_left.len(), 1, "{files_left:?}");
    assert!(files_left[0].ends_with(".snap"), "{files_left:?}");
    let bytes = bytes_of(&mut snap).await;
    {
        let (_l2, mut sm2) = open_store(d2.path()).unwrap();
        sm2.apply(vec![set(1, 1, "stale", "x")]).await.unwrap();
        let data = receive(&mut sm2, &bytes).await;
        sm2.install_snapshot(&snap.meta, data).await.unwrap();
        let left = snapshot_dir(&d2);
        assert_eq!(
            left.len(),
            1,
            "the received file is kept as the current snapshot: {left:?}"
        );
        assert_eq!(sm2.get("key0042").unwrap().as_deref(), Some("value42"));
        assert_eq!(sm2.get("stale").unwrap(), None, "install replaces the state machine");
    }
    let (_l2, mut sm2) = open_store(d2.path()).unwrap();
    assert_eq!(sm2.get("key0500").unwrap().as_deref(), Some("value500"));
    let (last, mem) = sm2.applied_state().await.unwrap();
    assert_eq!(last, Some(log_id(1, 500)));
    assert_eq!(mem.log_id(), &Some(log_id(1, 1)));
    let cur = sm2.get_current_snapshot().await.unwrap().unwrap();
    assert_eq!(cur.meta, snap.meta);
}

#[tokio::test]
async fn corrupt_snapshot_is_refused_and_changes_nothing() {
    let (d1, d2) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (_l1, mut sm1) = open_store(d1.path()).unwrap();
    sm1.apply(vec![membership(1, 1), set(1, 2, "a", "new")]).await.unwrap();
    let mut snap = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let (_l2, mut sm2) = open_store(d2.path()).unwrap();
    sm2.apply(vec![set(1, 1, "a", "old")]).await.unwrap();
    let good = bytes_of(&mut snap).await;
    for at in [0, 20, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x5a;
        let data = receive(&mut sm2, &bad).await;
        let e = sm2.install_snapshot(&snap.meta, data).await.unwrap_err();
        assert!(e.to_string().contains("orruption"), "byte {at}: {e}");
        assert_eq!(sm2.get("a").unwrap().as_deref(), Some("old"));
        assert!(sm2.get_current_snapshot().await.unwrap().is_none());
    }
    // A well-formed snapshot whose meta is not the one sent with it.
    let mut other = snap.meta.clone();
    other.last_log_id = Some(log_id(1, 9));
    let data = receive(&mut sm2, &good).await;
    assert!(sm2.install_snapshot(&other, data).await.is_err());
    assert_eq!(sm2.get("a").unwrap().as_deref(), Some("old"));
}

#[tokio::test]
async fn snapshot_of_another_cluster_is_refused() {
    let (d1, d2) = (TempDir::new().unwrap(), TempDir::new().unwrap());
    let (_l1, mut sm1) = open_store(d1.path()).unwrap();
    sm1.set_cluster_id("A").unwrap();
    sm1.apply(vec![membership(1, 1)]).await.unwrap();
    let snap = sm1.get_snapshot_builder().await.build_snapshot().await.unwrap();
    let (_l2, mut sm2) = open_store(d2.path()).unwrap();
    sm2.set_cluster_id("B").unwrap();
    let e = sm2.install_snapshot(&snap.meta, snap.snapshot).await.unwrap_err();
    assert!(e.to_string().contains("cluster A"), "{e}");
    assert!(sm2.set_cluster_id("A").is_err());
}

#[tokio::test]
async fn reopen_drops_what_an_interrupted_install_left() {
    let dir = TempDir::new().unwrap();
    {
        let (_l, mut sm) = open_store(dir.path()).unwrap();
        sm.apply(vec![set(1, 1, "k", "live")]).await.unwrap();
    }
    // What a crash between the ingest and the meta record leaves: a family and files that
    // nothing names.
    {
        let mut o = shale::Options::default();
        o.create_missing_column_families(true);
        let names = shale::DB::list_cf(&o, dir.path()).unwrap();
        let db = shale::DB::open_cf(&o, dir.path(), &names).unwrap();
        db.create_cf("sm-1", &o).unwrap();
        let cf = db.cf_handle("sm-1").unwrap();
        db.put_cf(&cf, b"\x01k", b"half-installed").unwrap();
        std::fs::write(dir.path().join("raft-snapshot/incoming-1-0.sst"), b"partial").unwrap();
    }
    let (_l, sm) = open_store(dir.path()).unwrap();
    assert_eq!(sm.get("k").unwrap().as_deref(), Some("live"));
    let mut o = shale::Options::default();
    o.create_missing_column_families(true);
    let names = shale::DB::list_cf(&o, dir.path()).unwrap();
    assert!(!names.iter().any(|n| n == "sm-1"), "{names:?}");
    assert!(!dir.path().join("raft-snapshot/incoming-1-0.sst").exists());
}
