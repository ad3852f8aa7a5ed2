//! The picker's rules seen through a real database. Intra-L0: the levels below L0 are held
//! "in compaction" through the in-progress set, so L0 -> base cannot run, and the newest L0
//! files are merged into one L0 file; every read (latest, at snapshots, scans) must stay the
//! same before and after it, after L0 -> base finally runs, and after a reopen. Manual
//! compactions: cut into chunks by `max_compaction_bytes`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::db::DB;
use crate::engine::iter::IteratorMode;
use crate::fs::MemFs;
use crate::options::{Options, ReadOptions};
use crate::snapshot::Snapshot;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

fn val(tag: &str, i: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{tag}{i}-").into_bytes();
    v.resize(len, b'.');
    v
}

fn opts(fs: &Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        env: fs.clone(),
        // flushes only when the test asks
        write_buffer_size: 4 << 20,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    }
}

fn put(db: &DB, m: &mut Model, i: u32, v: Vec<u8>) {
    db.put(key(i), &v).unwrap();
    m.insert(key(i), v);
}

fn del(db: &DB, m: &mut Model, i: u32) {
    db.delete(key(i)).unwrap();
    m.remove(&key(i));
}

fn del_range(db: &DB, m: &mut Model, lo: u32, hi: u32) {
    db.delete_range(key(lo), key(hi)).unwrap();
    for i in lo..hi {
        m.remove(&key(i));
    }
}

/// Point reads of every key and a full scan, at `snap` (None: latest), must equal `m`.
fn check(db: &DB, snap: Option<&Snapshot>, m: &Model, what: &str) {
    let ro = || {
        let mut ro = ReadOptions::default();
        if let Some(s) = snap {
            ro.set_snapshot(s);
        }
        ro
    };
    for i in 0..1200 {
        let got = db.get_opt(key(i), &ro()).unwrap();
        assert_eq!(got.as_ref(), m.get(&key(i)), "{what}: key {i}");
    }
    let scan: Model = db
        .iterator_opt(IteratorMode::Start, ro())
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    assert!(scan == *m, "{what}: scan differs ({} vs {} keys)", scan.len(), m.len());
}

/// (number, epoch, size) of the L0 files, newest first.
fn l0_files(db: &DB) -> Vec<(u64, u64, u64)> {
    let st = db.inner.state.lock();
    st.versions.current().files[0]
        .iter()
        .map(|f| (f.number(), f.meta.epoch_number, f.meta.file_size))
        .collect()
}

fn intra_l0_count(db: &DB) -> u64 {
    db.inner.state.lock().default_cf().stats.intra_l0_compactions
}

#[test]
fn intra_l0_compaction_keeps_every_version_and_tombstone() {
    let fs = Arc::new(MemFs::new());
    let path = Path::new("/intra");
    let db = DB::open(&opts(&fs), path).unwrap();
    let mut m = Model::new();
    // The base: everything in the last level (dynamic level bytes: it is the base level).
    for i in 0..300 {
        put(&db, &mut m, i, val("base", i, 20));
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let base_files: Vec<u64> = {
        let st = db.inner.state.lock();
        let v = &st.versions.current();
        assert!(v.files[0].is_empty());
        v.files[6].iter().map(|f| f.number()).collect()
    };
    assert!(!base_files.is_empty());
    // Hold the base level "in compaction": L0 -> base cannot run from here on.
    db.inner.state.lock().being_compacted.extend(base_files.iter().copied());

    // A: the oldest L0 file, big (the intra-L0 run will stop before it).
    for i in 0..200 {
        put(&db, &mut m, i, val("a", i, 300));
    }
    db.flush().unwrap();
    // B..E: small files with overwrites, deletes of keys whose older values are in A and in
    // the base level, and range deletions.
    for i in 0..20 {
        put(&db, &mut m, i, val("b", i, 30));
    }
    for i in 20..25 {
        del(&db, &mut m, i);
    }
    db.flush().unwrap();
    del_range(&db, &mut m, 30, 40);
    put(&db, &mut m, 5, val("c", 5, 30));
    put(&db, &mut m, 250, val("c", 250, 30));
    db.flush().unwrap();
    // The deletions of B and C are older than every snapshot: only their being kept in the
    // intra-L0 output (not bottommost) hides the older values in A and in the base level.
    let s1 = db.snapshot();
    let m1 = m.clone();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(
        intra_l0_count(&db),
        0,
        "three L0 files: too few for an intra-L0 compaction"
    );
    for i in 100..120 {
        put(&db, &mut m, i, val("d", i, 30));
    }
    del(&db, &mut m, 5);
    del(&db, &mut m, 260);
    db.flush().unwrap();
    let s2 = db.snapshot();
    let m2 = m.clone();
    db.wait_for_compact(&Default::default()).unwrap();
    // four files, but A is big: merging it would raise the bytes per removed file
    assert_eq!(intra_l0_count(&db), 0);
    assert_eq!(l0_files(&db).len(), 4);
    for i in 150..170 {
        put(&db, &mut m, i, val("e", i, 30));
    }
    del_range(&db, &mut m, 160, 165);
    put(&db, &mut m, 31, val("e", 31, 30));
    let before = l0_files(&db);
    db.flush().unwrap();
    check(&db, None, &m, "five L0 files");
    db.wait_for_compact(&Default::default()).unwrap();

    // E, D, C, B were merged into one L0 file; A stays, older.
    assert_eq!(intra_l0_count(&db), 1);
    let after = l0_files(&db);
    assert_eq!(after.len(), 2, "{after:?}");
    let a = *before.last().unwrap();
    assert_eq!(after[1], a, "the oldest file is untouched and still sorts last");
    assert_eq!(
        after[0].1,
        before[before.len() - 2].1,
        "the output takes the oldest input's epoch"
    );
    assert!(after[0].1 > a.1);
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("Intra-L0 (L0->L0) compactions: 1"), "{stats}");
    check(&db, None, &m, "after intra-L0");
    check(&db, Some(&s1), &m1, "snapshot 1 after intra-L0");
    check(&db, Some(&s2), &m2, "snapshot 2 after intra-L0");

    // A newer flush sorts above the intra-L0 output.
    put(&db, &mut m, 0, val("f", 0, 30));
    del(&db, &mut m, 101);
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0_files(&db).len(), 3);
    check(&db, None, &m, "after a newer flush");

    // Reopen with the base level still held: L0 order recovered from the MANIFEST.
    drop((s1, s2));
    drop(db);
    let mut o = opts(&fs);
    o.disable_auto_compactions = true;
    let db = DB::open(&o, path).unwrap();
    assert_eq!(l0_files(&db).len(), 3);
    check(&db, None, &m, "after reopen");
    drop(db);

    // Reopen with compactions: L0 -> base runs and the data is unchanged.
    let db = DB::open(&opts(&fs), path).unwrap();
    let s3 = db.snapshot();
    let m3 = m.clone();
    put(&db, &mut m, 2, val("g", 2, 30));
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(l0_files(&db).len() < 2, "{:?}", l0_files(&db));
    check(&db, None, &m, "after L0 -> base");
    check(&db, Some(&s3), &m3, "snapshot 3 after L0 -> base");
}

/// Mark every file below L0 busy (those no running compaction holds); returns the ones marked.
fn hold_levels_below_l0(db: &DB) -> Vec<u64> {
    let mut st = db.inner.state.lock();
    let v = st.versions.current().clone();
    let mut held = Vec::new();
    for (level, f) in v.all_files() {
        if level > 0 && st.being_compacted.insert(f.number()) {
            held.push(f.number());
        }
    }
    held
}

fn release(db: &DB, held: &mut Vec<u64>) {
    let mut st = db.inner.state.lock();
    for n in held.drain(..) {
        st.being_compacted.remove(&n);
    }
    drop(st);
    db.inner.work_cv.notify_all();
}

/// Random puts, deletes, merges, range deletions and snapshots while the levels below L0 are
/// held busy for stretches of rounds (intra-L0 compactions then merge the newest L0 files) and
/// released in between (L0 -> base and deeper compactions run): every read at the latest state
/// and at every live snapshot matches the model throughout and after a reopen.
#[test]
fn randomized_model_with_the_levels_below_l0_held_at_times() {
    let fs = Arc::new(MemFs::new());
    let path = Path::new("/intra-random");
    let o = Options {
        write_buffer_size: 16 << 10,
        target_file_size_base: 8 << 10,
        max_bytes_for_level_base: 32 << 10,
        max_background_jobs: 3,
        merge_operator: crate::merge_operator::merge_operator_by_name("stringappend"),
        ..opts(&fs)
    };
    let db = DB::open(&o, path).unwrap();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut m = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    let mut held: Vec<u64> = Vec::new();
    for round in 0..36u32 {
        // held during rounds 6..14, 20..28: long enough for L0 to reach trigger + 2 files
        let hold = matches!(round % 14, 6..=13);
        if hold && held.is_empty() {
            held = hold_levels_below_l0(&db);
        } else if !hold && !held.is_empty() {
            release(&db, &mut held);
        }
        for n in 0..300u32 {
            let i = next(300) as u32;
            match next(100) {
                0..=59 => put(&db, &mut m, i, val("r", round * 1000 + n, 10 + next(60) as usize)),
                60..=72 => del(&db, &mut m, i),
                73..=84 => {
                    let op = format!("m{round}.{n}").into_bytes();
                    db.merge(key(i), &op).unwrap();
                    let e = m.entry(key(i)).or_default();
                    if !e.is_empty() {
                        e.push(b',');
                    }
                    e.extend_from_slice(&op);
                }
                85..=87 => del_range(&db, &mut m, i, (i + 1 + next(15) as u32).min(300)),
                88 => {
                    if snaps.len() >= 3 {
                        snaps.remove(next(3) as usize);
                    }
                    snaps.push((db.snapshot(), m.clone()));
                }
                _ => {}
            }
        }
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        check(&db, None, &m, &format!("round {round}"));
        for (j, (s, sm)) in snaps.iter().enumerate() {
            check(&db, Some(s), sm, &format!("round {round}, snapshot {j}"));
        }
    }
    release(&db, &mut held);
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(
        intra_l0_count(&db) >= 2,
        "intra-L0 compactions: {}",
        intra_l0_count(&db)
    );
    for (j, (s, sm)) in snaps.iter().enumerate() {
        check(&db, Some(s), sm, &format!("end, snapshot {j}"));
    }
    snaps.clear();
    drop(db);
    let db = DB::open(&o, path).unwrap();
    check(&db, None, &m, "after reopen");
    // What `tools::check_consistency` (a layer above `db`) does.
    let ro = DB::open_for_read_only(&o, path, false).unwrap();
    super::db::verify_all_tables(&ro).unwrap();
}

/// A manual compaction out of L1 runs as several compactions when `max_compaction_bytes` is
/// small (one per chunk `split_manual_inputs` gives), and the data stays the same.
#[test]
fn manual_compaction_runs_in_chunks_of_max_compaction_bytes() {
    let fs = Arc::new(MemFs::new());
    let path = Path::new("/manual-chunks");
    let load = Options {
        write_buffer_size: 32 << 10,
        target_file_size_base: 4 << 10,
        max_bytes_for_level_base: 32 << 10,
        level_compaction_dynamic_level_bytes: false,
        // every flush is compacted: L0 ends empty
        level0_file_num_compaction_trigger: 1,
        ..opts(&fs)
    };
    let db = DB::open(&load, path).unwrap();
    let mut m = Model::new();
    for round in 0..2u32 {
        for i in 0..1200 {
            put(&db, &mut m, i, val(&format!("r{round}-"), i, 100));
        }
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    // Where the compactions left the data depends on their timing: add small rounds (each
    // under L1's target, so it stays in L1) until L1 holds several files above a non-empty L2.
    let layout_ok = |db: &DB| {
        let st = db.inner.state.lock();
        let v = &st.versions.current();
        v.files[0].is_empty() && v.files[1].len() >= 2 && !v.files[2].is_empty()
    };
    for round in 2..8u32 {
        if layout_ok(&db) {
            break;
        }
        for i in (0..1200).step_by(6) {
            put(&db, &mut m, i, val(&format!("r{round}-"), i, 100));
        }
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    drop(db);
    let o = Options {
        disable_auto_compactions: true,
        max_compaction_bytes: 1,
        ..load
    };
    let db = DB::open(&o, path).unwrap();
    let (expected_chunks, l2_before) = {
        let st = db.inner.state.lock();
        let v = &st.versions.current();
        let counts: Vec<usize> = v.files.iter().map(|l| l.len()).collect();
        assert!(
            v.files[0].is_empty() && v.files[1].len() >= 2 && !v.files[2].is_empty(),
            "{counts:?}"
        );
        assert!(v.files[3..].iter().all(|l| l.is_empty()));
        let chunks = crate::compaction::picker::split_manual_inputs(v, 2, &v.files[1], 1).len();
        let before = st.default_cf().stats.levels.get(2).map(|l| l.compactions).unwrap_or(0);
        (chunks, before)
    };
    assert!(expected_chunks >= 2);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    {
        let st = db.inner.state.lock();
        assert_eq!(
            st.default_cf().stats.levels[2].compactions - l2_before,
            expected_chunks as u64
        );
        assert!(st.versions.current().files[1].is_empty());
    }
    check(&db, None, &m, "after chunked manual compaction");
    drop(db);
    let db = DB::open(&o, path).unwrap();
    check(&db, None, &m, "after reopen");
}
