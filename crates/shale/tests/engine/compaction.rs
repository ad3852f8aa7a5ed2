//! Leveled compaction at work: dynamic level bytes, parallel compactions into the same level,
//! subcompactions, and a long randomized model test with several writer threads.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use common::*;
use shale::fs::testing::MemFs;
use shale::{ReadOptions, WriteBatch, DB};

fn key(i: u64) -> Vec<u8> {
    format!("k{i:07}").into_bytes()
}

fn val(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("v{i}-{round}-").into_bytes();
    v.resize(v.len() + ((i * 7 + round) % 90) as usize, b'a' + (round % 26) as u8);
    v
}

/// Writer threads on interleaved keys with puts, deletes and batches; returns the model.
fn hammer(db: &Arc<DB>, threads: u64, ops: u64, keyspace: u64, seed: u64) -> Model {
    let models: Vec<Arc<Mutex<Model>>> = (0..threads).map(|_| Arc::new(Mutex::new(Model::new()))).collect();
    let mut hs = Vec::new();
    for t in 0..threads {
        let (db, m) = (db.clone(), models[t as usize].clone());
        hs.push(thread::spawn(move || {
            let mut rng = Rng::new(seed * 1000 + t);
            for n in 0..ops {
                // thread t owns keys = t (mod threads)
                let i = rng.below(keyspace / threads) * threads + t;
                let k = key(i);
                match rng.below(10) {
                    0 => {
                        db.delete(&k).unwrap();
                        m.lock().unwrap().remove(&k);
                    }
                    1 => {
                        let mut b = WriteBatch::new();
                        let mut mm = m.lock().unwrap();
                        for j in 0..5 {
                            let i2 = (i + j * threads) % keyspace;
                            let (k2, v2) = (key(i2), val(i2, n));
                            b.put(&k2, &v2);
                            mm.insert(k2, v2);
                        }
                        db.write(b).unwrap();
                    }
                    _ => {
                        let v = val(i, n);
                        db.put(&k, &v).unwrap();
                        m.lock().unwrap().insert(k, v);
                    }
                }
            }
        }));
    }
    for h in hs {
        h.join().unwrap();
    }
    let mut all = Model::new();
    for m in models {
        all.extend(m.lock().unwrap().clone());
    }
    all
}

#[test]
fn dynamic_levels_fill_from_the_last_level_up() {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_max_bytes_for_level_base(32 << 10);
        o
    };
    assert!(
        opts.get_level_compaction_dynamic_level_bytes(),
        "on by default, as in RocksDB"
    );
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let m = hammer(&db, 2, 3000, 4000, 1);
    db.wait_for_compact(&Default::default()).unwrap();
    let files = level_files(&db);
    assert!(
        files[6] > 0,
        "L0 compacts straight into the last level first: {files:?}"
    );
    // the non-empty levels below L0 are the bottom ones: nothing above the base level
    let first = (1..7).find(|&l| files[l] > 0).unwrap();
    assert!(first >= 4, "{files:?}");
    assert!(dump(&db) == m);
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("L6"), "{stats}");
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert!(dump(&db) == m);
    // static levels fill from L1 down
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_level_compaction_dynamic_level_bytes(false);
        o
    };
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let m = hammer(&db, 2, 1500, 4000, 2);
    db.wait_for_compact(&Default::default()).unwrap();
    let files = level_files(&db);
    assert!(files[1] > 0 && files[6] == 0, "{files:?}");
    assert!(dump(&db) == m);
}

/// Several compactions run at once (4 background jobs, static levels so that L1->L2 and L2->L3
/// compactions can overlap in time); every MANIFEST edit is checked for overlapping files in
/// L1+ (paranoid checks: an overlap would be a background Corruption), and the data is intact.
#[test]
fn parallel_compactions_never_produce_overlapping_files() {
    for dynamic in [false, true] {
        let fs = MemFs::new();
        let opts = {
            let mut o = mem_opts(&fs);
            o.set_max_background_jobs(4);
            o.set_level_compaction_dynamic_level_bytes(dynamic);
            o.set_max_bytes_for_level_base(24 << 10);
            o.set_max_bytes_for_level_multiplier(4.0);
            o.set_target_file_size_base(6 << 10);
            o.set_paranoid_checks(true);
            o
        };
        let db = Arc::new(DB::open(&opts, dir()).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let max_running = Arc::new(AtomicU64::new(0));
        let sampler = {
            let (db, stop, max_running) = (db.clone(), stop.clone(), max_running.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    let n = db
                        .property_int_value("rocksdb.num-running-compactions")
                        .unwrap()
                        .unwrap();
                    max_running.fetch_max(n, Ordering::Relaxed);
                    thread::sleep(std::time::Duration::from_micros(200));
                }
            })
        };
        let m = hammer(&db, 4, 2500, 20000, 3);
        db.wait_for_compact(&Default::default()).unwrap();
        stop.store(true, Ordering::Release);
        sampler.join().unwrap();
        assert!(dump(&db) == m, "dynamic={dynamic}");
        assert_eq!(db.property_int_value("rocksdb.background-errors").unwrap(), Some(0));
        eprintln!(
            "dynamic={dynamic}: most compactions at once: {}",
            max_running.load(Ordering::Relaxed)
        );
        drop(db);
        let db = DB::open(&opts, dir()).unwrap();
        assert!(dump(&db) == m, "dynamic={dynamic}: after reopen");
        // The reopen flushes the recovered WAL and compacts again: close before the read-only
        // check, or it races with those compactions deleting the files its MANIFEST read names.
        drop(db);
        shale::tools::check_consistency(dir(), &opts).unwrap();
    }
}

/// One compaction split into key ranges on several threads writes the same data as one thread,
/// with deletions, range deletions and a snapshot in the inputs.
#[test]
fn subcompactions_keep_every_key_and_snapshot() {
    let mut results = Vec::new();
    for subs in [1usize, 4] {
        let fs = MemFs::new();
        // big target files: only the split into pieces makes more than one output file
        let opts = {
            let mut o = mem_opts(&fs);
            o.set_max_subcompactions(subs as u32);
            o.set_disable_auto_compactions(true);
            o.set_target_file_size_base(1 << 30);
            o
        };
        let db = DB::open(&opts, dir()).unwrap();
        let mut m = Model::new();
        let mut rng = Rng::new(7);
        let mut snap_view = None;
        let mut snap = None;
        for round in 0..8u64 {
            for _ in 0..300 {
                let i = rng.below(3000);
                let (k, v) = (key(i), val(i, round));
                if rng.below(8) == 0 {
                    db.delete(&k).unwrap();
                    m.remove(&k);
                } else {
                    db.put(&k, &v).unwrap();
                    m.insert(k, v);
                }
            }
            if round == 3 {
                let (b, e) = (key(1000), key(1400));
                db.delete_range(&b, &e).unwrap();
                m.retain(|k, _| !(k >= &b && k < &e));
                snap = Some(db.snapshot());
                snap_view = Some(m.clone());
            }
            db.flush().unwrap();
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        let files = level_files(&db);
        assert_eq!(files[..6].iter().sum::<u64>(), 0, "{files:?}");
        if subs > 1 {
            assert!(files[6] >= 2, "split into pieces: {files:?}");
        } else {
            assert_eq!(files[6], 1, "{files:?}");
        }
        assert!(dump(&db) == m, "subs={subs}");
        let mut ro = ReadOptions::default();
        ro.set_snapshot(snap.as_ref().unwrap());
        assert!(
            scan(&db, ro).unwrap() == *snap_view.as_ref().unwrap(),
            "subs={subs}: snapshot view"
        );
        drop(snap);
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert!(dump(&db) == m);
        drop(db);
        let db = DB::open(&opts, dir()).unwrap();
        assert!(dump(&db) == m);
        results.push(m);
    }
    assert!(results[0] == results[1]);
}

/// Automatic compactions with subcompactions and compression per level, several writers.
#[test]
fn subcompactions_and_compression_per_level_under_load() {
    use shale::DBCompressionType::*;
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_max_subcompactions(3);
        o.set_max_background_jobs(3);
        o.set_compression_per_level(&[None, Snappy, Lz4]);
        o.set_bottommost_compression_type(Zstd);
        o
    };
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let m = hammer(&db, 3, 2000, 6000, 4);
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(dump(&db) == m);
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert!(dump(&db) == m);
    shale::tools::check_consistency(dir(), &opts).unwrap();
}

/// A long randomized model test: several writer threads on their own key ranges with puts,
/// deletes, range deletes, merges and batches; snapshots checked later; manual compactions of
/// a thread's range while automatic compactions (parallel, with subcompactions, dynamic levels,
/// compression per level) and many flushes run. Every acknowledged write is readable with the
/// right value at every point, the snapshots never change, and a reopen sees the same.
#[test]
fn randomized_model_many_flushes_and_compactions_across_threads() {
    use shale::DBCompressionType::*;
    const THREADS: u64 = 4;
    const OPS: u64 = 10_000;
    const KEYS: u64 = 600;
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_max_background_jobs(3);
        o.set_max_subcompactions(2);
        o.set_compression_per_level(&[None, None, Lz4, Snappy]);
        o.set_bottommost_compression_type(Zstd);
        o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("stringappend").unwrap());
        o.set_max_bytes_for_level_base(32 << 10);
        o.set_target_file_size_base(8 << 10);
        o
    };
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let tk = |t: u64, i: u64| format!("t{t}-{i:05}").into_bytes();
    let mut hs = Vec::new();
    for t in 0..THREADS {
        let db = db.clone();
        hs.push(thread::spawn(move || {
            let mut rng = Rng::new(77 + t);
            let mut m = Model::new();
            let mut snaps: Vec<(shale::Snapshot, Model)> = Vec::new();
            for n in 0..OPS {
                let i = rng.below(KEYS);
                let k = tk(t, i);
                match rng.below(100) {
                    0..=54 => {
                        let v = val(i, n);
                        db.put(&k, &v).unwrap();
                        m.insert(k.clone(), v);
                    }
                    55..=69 => {
                        db.delete(&k).unwrap();
                        m.remove(&k);
                    }
                    70..=79 => {
                        let op = format!("m{n}").into_bytes();
                        db.merge(&k, &op).unwrap();
                        let e = m.entry(k.clone()).or_default();
                        if !e.is_empty() {
                            e.push(b',');
                        }
                        e.extend_from_slice(&op);
                    }
                    80..=81 => {
                        let e = tk(t, (i + 1 + rng.below(20)).min(KEYS));
                        db.delete_range(&k, &e).unwrap();
                        m.retain(|x, _| !(x >= &k && x < &e));
                    }
                    82..=93 => {
                        let mut b = WriteBatch::new();
                        for j in 0..4 {
                            let i2 = (i + j) % KEYS;
                            let (k2, v2) = (tk(t, i2), val(i2, n + j));
                            b.put(&k2, &v2);
                            m.insert(k2, v2);
                        }
                        db.write(b).unwrap();
                    }
                    94..=96 => {
                        if snaps.len() < 4 {
                            snaps.push((db.snapshot(), m.clone()));
                        } else {
                            // check and release the oldest snapshot
                            let (s, sm) = snaps.remove(0);
                            let mut ro = ReadOptions::default();
                            ro.set_snapshot(&s);
                            ro.set_iterate_lower_bound(format!("t{t}-"));
                            ro.set_iterate_upper_bound(format!("t{t}."));
                            assert!(scan(&db, ro).unwrap() == sm, "thread {t}: snapshot view changed");
                        }
                    }
                    97 => {
                        let (b, e) = (tk(t, 0), tk(t, KEYS));
                        db.compact_range(Some(&b), Some(&e)).unwrap();
                    }
                    _ => {
                        let mut ro = ReadOptions::default();
                        ro.set_iterate_lower_bound(format!("t{t}-"));
                        ro.set_iterate_upper_bound(format!("t{t}."));
                        assert!(scan(&db, ro).unwrap() == m, "thread {t} op {n}: own range differs");
                    }
                }
                if n % 97 == 0 {
                    assert_eq!(db.get(&k).unwrap().as_ref(), m.get(&k), "thread {t} op {n}");
                }
            }
            for (s, sm) in snaps {
                let mut ro = ReadOptions::default();
                ro.set_snapshot(&s);
                ro.set_iterate_lower_bound(format!("t{t}-"));
                ro.set_iterate_upper_bound(format!("t{t}."));
                assert!(scan(&db, ro).unwrap() == sm, "thread {t}: snapshot view changed");
            }
            m
        }));
    }
    let mut all = Model::new();
    for h in hs {
        all.extend(h.join().unwrap());
    }
    assert!(dump(&db) == all);
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(dump(&db) == all);
    for (k, v) in &all {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    let files = level_files(&db);
    assert!(files[1..].iter().sum::<u64>() > 0, "{files:?}");
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(
        stats.contains("Cumulative compaction:") && stats.contains("Interval compaction:"),
        "{stats}"
    );
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert!(dump(&db) == all, "after reopen");
}
