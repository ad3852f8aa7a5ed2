//! Write stalls as RocksDB defines them: delayed writes at `delayed_write_rate` once L0 reaches
//! the slowdown trigger, stops at the stop trigger and at the hard pending-compaction-bytes
//! limit that clear when compactions catch up, with time and cause in `rocksdb.stats`.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use shale::fs::testing::MemFs;
use shale::{Options, DB};

fn stats(db: &DB) -> String {
    db.property_value("rocksdb.stats").unwrap().unwrap()
}

#[test]
fn l0_slowdown_delays_writes_to_the_delayed_write_rate() {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_level_zero_slowdown_writes_trigger(2);
        o.set_level_zero_stop_writes_trigger(1000);
        o.set_level_zero_file_num_compaction_trigger(1000);
        o.set_max_bytes_for_level_base(1 << 40);
        o.set_delayed_write_rate(256 << 10);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    assert_eq!(
        db.property_int_value("rocksdb.actual-delayed-write-rate").unwrap(),
        Some(0)
    );
    for r in 0..2u64 {
        db.put(format!("k{r}"), "v").unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.property_int_value("rocksdb.num-files-at-level0").unwrap(), Some(2));
    let rate = db
        .property_int_value("rocksdb.actual-delayed-write-rate")
        .unwrap()
        .unwrap();
    assert_eq!(rate, 256 << 10);
    assert_eq!(db.property_int_value("rocksdb.is-write-stopped").unwrap(), Some(0));
    // 96 KiB at 256 KiB/s: about 0.375 s (no flush can lower L0 here)
    let start = Instant::now();
    let v = vec![b'x'; 1000];
    for i in 0..96u64 {
        db.put(format!("key{i:04}"), &v).unwrap();
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(250), "writes were not delayed: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let s = stats(&db);
    eprintln!("{s}");
    assert!(s.contains("Cumulative stall: 00:00:"), "{s}");
    assert!(!s.contains("L0 file count limit: delayed 0 "), "{s}");
    assert!(s.contains("level0_slowdown"), "{s}");
    // the writes are all there
    for i in 0..96u64 {
        assert_eq!(db.get(format!("key{i:04}")).unwrap(), Some(v.clone()));
    }
}

/// Stops at the L0 stop trigger and at the hard pending-compaction-bytes limit clear themselves
/// once compactions run; several writers go through without errors and without losing data.
#[test]
fn stops_clear_when_compactions_catch_up() {
    type MakeOpts = fn() -> Options;
    let configs: [(&str, MakeOpts); 2] = [
        ("L0 file count limit: delayed", || {
            let mut o = mem_opts(&MemFs::new());
            o.set_level_zero_file_num_compaction_trigger(2);
            o.set_level_zero_slowdown_writes_trigger(2);
            o.set_level_zero_stop_writes_trigger(2);
            o
        }),
        ("pending compaction bytes: delayed", || {
            let mut o = mem_opts(&MemFs::new());
            o.set_soft_pending_compaction_bytes_limit(1);
            o.set_hard_pending_compaction_bytes_limit(1);
            o
        }),
    ];
    for (name, make_opts) in configs {
        // Whether the writers outrun the compactions depends on the scheduler: on a loaded
        // machine the background thread may keep up with one run. Every run must end unstopped
        // with all data; at least one of a few fresh runs must have been stopped.
        let mut stops = 0;
        for _attempt in 0..6 {
            stops += one_stop_run(name, make_opts());
            if stops > 0 {
                break;
            }
        }
        assert!(stops > 0, "{name}: no stop counted in 6 runs");
    }
}

/// One run of [`stops_clear_when_compactions_catch_up`]; returns the stops counted.
fn one_stop_run(name: &str, opts: Options) -> u64 {
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let mut hs = Vec::new();
    for t in 0..3u64 {
        let db = db.clone();
        hs.push(std::thread::spawn(move || {
            let mut m = Model::new();
            for i in 0..800u64 {
                let (k, v) = (
                    format!("t{t}-{:05}", i % 500).into_bytes(),
                    format!("v{i}-{}", "p".repeat(40)).into_bytes(),
                );
                db.put(&k, &v).unwrap();
                m.insert(k, v);
            }
            m
        }));
    }
    let mut all = Model::new();
    for h in hs {
        all.extend(h.join().unwrap());
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(dump(&db) == all, "{name}");
    let s = stats(&db);
    let stopped = s.split(name).nth(1).and_then(|r| r.split("stopped ").nth(1)).unwrap();
    let n: u64 = stopped.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(
        db.property_int_value("rocksdb.is-write-stopped").unwrap(),
        Some(0),
        "{name}"
    );
    assert_eq!(
        db.property_int_value("rocksdb.estimate-pending-compaction-bytes")
            .unwrap(),
        Some(0),
        "{name}"
    );
    n
}

fn prop_u64(db: &DB, name: &str) -> u64 {
    db.property_value(name).unwrap().unwrap().parse().unwrap()
}

/// Write 1 KiB values until `imm` immutable memtables wait (or are flushed), returning the keys.
fn fill_memtables(db: &DB, target_imm: u64) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    for i in 0..100_000u32 {
        let k = format!("key{i:08}").into_bytes();
        db.put(&k, vec![b'v'; 1024]).unwrap();
        keys.push(k);
        if prop_u64(db, "rocksdb.num-immutable-mem-table") >= target_imm
            || prop_u64(db, "rocksdb.num-files-at-level0") > 0
        {
            break;
        }
    }
    keys
}

/// `min_write_buffer_number_to_merge`: immutable memtables wait until that many are there and
/// are then flushed together into one L0 file; `flush()` does not wait for them.
#[test]
#[allow(clippy::field_reassign_with_default)]
fn min_write_buffer_number_to_merge_merges_memtables_into_one_flush() {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(64 << 10);
    o.set_max_write_buffer_number(5);
    o.set_min_write_buffer_number_to_merge(3);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, "/db").unwrap();
    // Two immutable memtables are not enough to flush.
    let mut keys = fill_memtables(&db, 2);
    assert_eq!(prop_u64(&db, "rocksdb.num-immutable-mem-table"), 2);
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(
        prop_u64(&db, "rocksdb.num-files-at-level0"),
        0,
        "flushed before 3 memtables waited"
    );
    assert_eq!(prop_u64(&db, "rocksdb.num-immutable-mem-table"), 2);
    // The third one triggers one flush of all three, into one file.
    keys.extend(fill_memtables(&db, 3));
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(prop_u64(&db, "rocksdb.num-files-at-level0"), 1);
    assert_eq!(prop_u64(&db, "rocksdb.num-immutable-mem-table"), 0);
    for k in &keys {
        assert_eq!(db.get(k).unwrap().map(|v| v.len()), Some(1024), "{k:?}");
    }
    // A manual flush takes whatever waits.
    db.put(b"last", b"x").unwrap();
    db.flush().unwrap();
    assert_eq!(prop_u64(&db, "rocksdb.num-files-at-level0"), 2);
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    assert_eq!(db.get(b"last").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(db.get(&keys[0]).unwrap().map(|v| v.len()), Some(1024));
    // With the default (1), the same writes give one file per memtable.
    let fs = MemFs::new();
    o.set_env(Arc::new(fs.clone()));
    o.set_min_write_buffer_number_to_merge(1);
    let db = DB::open(&o, "/db").unwrap();
    // Each memtable that becomes immutable is flushed on its own (waited for at once, so that
    // a slow flush thread cannot let two of them queue up and be merged).
    let mut switches = 0;
    for i in 0..2 * keys.len() as u32 {
        db.put(format!("key{i:08}"), vec![b'v'; 1024]).unwrap();
        if prop_u64(&db, "rocksdb.num-immutable-mem-table") > 0 {
            switches += 1;
            db.wait_for_compact(&Default::default()).unwrap();
            assert_eq!(prop_u64(&db, "rocksdb.num-immutable-mem-table"), 0);
        }
    }
    // (A flush may finish before the check above sees its memtable: `switches` can undercount.)
    let l0 = prop_u64(&db, "rocksdb.num-files-at-level0");
    assert!(l0 >= 3 && l0 >= switches, "{l0} files, {switches} switches seen");
    o.set_min_write_buffer_number_to_merge(0);
    let Err(e) = DB::open(&o, "/db2") else {
        panic!("0 accepted")
    };
    assert!(
        e.is_invalid_argument() && e.to_string().contains("min_write_buffer_number_to_merge"),
        "{e}"
    );
}
