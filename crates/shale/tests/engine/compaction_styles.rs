//! Universal and FIFO compaction through a real DB (on `MemFs`): what each style keeps, where
//! its files go, that writes never stall on L0 under FIFO, and switching an existing DB between
//! styles. The pickers' rules are tested without I/O in `db/picker_universal_tests.rs` and
//! `db/picker_fifo_tests.rs`.

use crate::common;

use common::*;
use shale::fs::testing::MemFs;
use shale::{DBCompactionStyle, FifoCompactOptions, Options, UniversalCompactOptions, DB};

fn sst_bytes(db: &DB) -> u64 {
    db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap()
}

fn fifo_opts(fs: &MemFs, limit: u64) -> Options {
    let mut o = mem_opts(fs);
    o.set_compaction_style(DBCompactionStyle::Fifo);
    let mut f = FifoCompactOptions::default();
    f.set_max_table_files_size(limit);
    o.set_fifo_compaction_options(&f);
    o
}

/// Write keys `from..to`, flushing every `per_file` keys.
fn fill(db: &DB, from: u64, to: u64, per_file: u64) {
    for i in from..to {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        if (i + 1) % per_file == 0 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
}

#[test]
fn fifo_keeps_the_newest_files_within_the_size_limit_and_never_stalls() {
    let fs = MemFs::new();
    let mut o = fifo_opts(&fs, 20 << 10);
    // Triggers that would stop writes after 3 L0 files under leveled compaction.
    o.set_level_zero_slowdown_writes_trigger(2);
    o.set_level_zero_stop_writes_trigger(3);
    let db = DB::open(&o, dir()).unwrap();
    fill(&db, 0, 3000, 20);
    db.wait_for_compact(&Default::default()).unwrap();
    let levels = level_files(&db);
    assert!(levels[0] > 3, "L0 files: {levels:?}");
    assert_eq!(levels[1..].iter().sum::<u64>(), 0, "FIFO writes L0 only: {levels:?}");
    assert!(sst_bytes(&db) <= 20 << 10, "{} bytes kept", sst_bytes(&db));
    // The newest keys are all there; the oldest were deleted with their files.
    for i in 2900..3000 {
        let (k, v) = kv(i);
        assert_eq!(db.get(&k).unwrap(), Some(v), "key {i}");
    }
    assert_eq!(db.get(kv(0).0).unwrap(), None);
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("FIFO deletions:"), "{stats}");
    assert!(!stats.contains("FIFO deletions: 0 files"), "{stats}");
    drop(db);
    // The style survives a reopen (from the options given) and the data too.
    let db = DB::open(&o, dir()).unwrap();
    assert_eq!(db.get(kv(2999).0).unwrap(), Some(kv(2999).1));
}

#[test]
fn fifo_allow_compaction_merges_small_l0_files() {
    let fs = MemFs::new();
    let mut o = fifo_opts(&fs, 1 << 30);
    let mut f = FifoCompactOptions::default();
    f.set_max_table_files_size(1 << 30);
    f.set_allow_compaction(true);
    o.set_fifo_compaction_options(&f);
    o.set_level_zero_file_num_compaction_trigger(4);
    o.set_write_buffer_size(64 << 10);
    let db = DB::open(&o, dir()).unwrap();
    // Many tiny files (well below the write buffer): merged while they keep coming.
    fill(&db, 0, 400, 10);
    db.wait_for_compact(&Default::default()).unwrap();
    let l0 = level_files(&db)[0];
    assert!(l0 < 40, "41 flushes left {l0} L0 files");
    assert_eq!(dump(&db).len(), 400);
}

#[test]
fn fifo_ttl_drops_expired_files() {
    let fs = MemFs::new();
    let mut o = fifo_opts(&fs, 1 << 30);
    o.set_ttl(1);
    let db = DB::open(&o, dir()).unwrap();
    fill(&db, 0, 100, 1000);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    fill(&db, 100, 200, 1000);
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(db.get(kv(5).0).unwrap(), None, "the expired file was not dropped");
    assert_eq!(db.get(kv(150).0).unwrap(), Some(kv(150).1));
}

#[test]
fn a_leveled_db_switched_to_fifo_drains_its_deeper_levels() {
    let fs = MemFs::new();
    let db = DB::open(&mem_opts(&fs), dir()).unwrap();
    fill(&db, 0, 2000, 100);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let before = level_files(&db);
    assert!(before[1..].iter().sum::<u64>() > 0, "{before:?}");
    let total = sst_bytes(&db);
    drop(db);
    // As RocksDB: FIFO opens it and deletes from the last non-empty level, smallest keys
    // first, until the size limit holds.
    let db = DB::open(&fifo_opts(&fs, total / 2), dir()).unwrap();
    db.put(b"new", b"x").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(sst_bytes(&db) <= total / 2, "{} > {}", sst_bytes(&db), total / 2);
    assert_eq!(db.get(kv(0).0).unwrap(), None, "the smallest keys go first");
    assert_eq!(db.get(kv(1999).0).unwrap(), Some(kv(1999).1));
    assert_eq!(db.get(b"new").unwrap().as_deref(), Some(&b"x"[..]));
}

fn universal_opts(fs: &MemFs, f: impl FnOnce(&mut UniversalCompactOptions)) -> Options {
    let mut o = mem_opts(fs);
    o.set_compaction_style(DBCompactionStyle::Universal);
    o.set_level_zero_file_num_compaction_trigger(4);
    let mut u = UniversalCompactOptions::default();
    f(&mut u);
    o.set_universal_compaction_options(&u);
    o
}

#[test]
fn universal_keeps_every_key_and_bounds_the_sorted_runs() {
    let fs = MemFs::new();
    let db = DB::open(&universal_opts(&fs, |_| {}), dir()).unwrap();
    let mut model = Model::new();
    let mut rng = Rng::new(7);
    for round in 0..40u64 {
        for _ in 0..60 {
            let i = rng.below(500);
            let (k, mut v) = kv(i);
            if rng.below(8) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
                continue;
            }
            v.extend_from_slice(format!("-{round}").as_bytes());
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(dump(&db), model);
    let levels = level_files(&db);
    let runs = levels[0] + levels[1..].iter().filter(|&&n| n > 0).count() as u64;
    // 40 flushes end in at most the trigger's (4) runs once compactions are done: as RocksDB,
    // exactly `level0_file_num_compaction_trigger` runs within the size-amplification and
    // size-ratio limits need no compaction (how many remain depends on the flush timing).
    assert!(runs <= 4, "sorted runs: {levels:?}");
    // The oldest run was written to the last level (a size-amp or full merge).
    assert!(levels[6] > 0, "{levels:?}");
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("Space amplification estimate:"), "{stats}");
    // A manual compaction merges everything into the last level.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let levels = level_files(&db);
    assert_eq!(levels[..6].iter().sum::<u64>(), 0, "{levels:?}");
    assert_eq!(dump(&db), model);
}

#[test]
fn universal_single_level_compacts_within_l0() {
    let fs = MemFs::new();
    let mut o = universal_opts(&fs, |u| u.set_max_size_amplification_percent(50));
    o.set_num_levels(1);
    let db = DB::open(&o, dir()).unwrap();
    for i in 0..30 {
        db.put(kv(i % 7).0, kv(i).1).unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    let l0 = db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap();
    assert!(l0 < 4, "{l0} L0 files");
    assert!(db
        .property_value("rocksdb.stats")
        .unwrap()
        .unwrap()
        .contains("Space amplification"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.num-files-at-level0").unwrap(), Some(1));
    for i in 23..30 {
        assert_eq!(db.get(kv(i % 7).0).unwrap(), Some(kv(i).1));
    }
}

#[test]
fn switching_between_leveled_and_universal_keeps_the_data() {
    let fs = MemFs::new();
    let db = DB::open(&mem_opts(&fs), dir()).unwrap();
    fill(&db, 0, 1500, 100);
    db.wait_for_compact(&Default::default()).unwrap();
    drop(db);
    // Leveled -> universal: each level is a sorted run; writes and compactions go on.
    let db = DB::open(&universal_opts(&fs, |_| {}), dir()).unwrap();
    fill(&db, 1500, 3000, 100);
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(dump(&db).len(), 3000);
    drop(db);
    // Universal -> leveled: the files are where leveled compaction can take them.
    let db = DB::open(&mem_opts(&fs), dir()).unwrap();
    fill(&db, 3000, 3500, 100);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let m = dump(&db);
    assert_eq!(m.len(), 3500);
    for i in (0..3500).step_by(97) {
        let (k, v) = kv(i);
        assert_eq!(m.get(&k), Some(&v));
    }
}
