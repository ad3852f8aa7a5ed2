//! I/O faults (EIO, ENOSPC on WAL, flush and compaction) and power loss: failed writes are
//! reported, writes stop after a failure (fail-stop), reads keep working, `resume()` or a reopen
//! recovers, and nothing acknowledged is ever lost.

use crate::common;

use std::sync::Arc;

use common::*;
use shale::fs::testing::FaultFs;
use shale::fs::testing::FaultKind;
use shale::fs::testing::IoActivity;
use shale::fs::testing::MemFs;
use shale::{Error, IteratorMode, Options, WriteBatch, WriteOptions, DB};

fn fault_opts(mem: &MemFs) -> (FaultFs, Options) {
    let f = FaultFs::new(Arc::new(mem.clone()));
    let o = small_opts(Arc::new(f.clone()));
    (f, o)
}

fn fill(db: &DB, m: &mut Model, from: u64, to: u64, wo: &WriteOptions) {
    for i in from..to {
        let (k, v) = kv(i);
        db.put_opt(&k, &v, wo).unwrap();
        m.insert(k, v);
    }
}

/// Everything in `m` is in `got`; keys outside `m` only from `maybe`.
#[track_caller]
fn assert_has_all(got: &Model, m: &Model, maybe: &Model) {
    for (k, v) in m {
        if let Some(mv) = maybe.get(k) {
            let g = got.get(k);
            assert!(
                g == Some(v) || g == Some(mv),
                "{:?}: {:?}",
                String::from_utf8_lossy(k),
                g
            );
        } else {
            assert_eq!(
                got.get(k),
                Some(v),
                "acknowledged {:?} lost",
                String::from_utf8_lossy(k)
            );
        }
    }
    for (k, v) in got {
        assert!(
            m.contains_key(k) || maybe.get(k) == Some(v),
            "unexpected {:?}",
            String::from_utf8_lossy(k)
        );
    }
}

fn wal_failure_is_fail_stop(kind: FaultKind, sync: bool, after: u64) {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let db = DB::open(&opts, dir()).unwrap();
    let wo = {
        let mut o = WriteOptions::default();
        o.set_sync(sync);
        o.disable_wal(false);
        o
    };
    let mut m = Model::new();
    fill(&db, &mut m, 0, 50, &wo);
    f.inject_after(kind, Some(".log"), after);
    let (k, v) = kv(1000);
    let e = db.put_opt(&k, &v, &wo).expect_err("write with a failing WAL must fail");
    assert!(f.injected() > 0);
    assert!(e.is_io(), "{e:?}");
    let maybe: Model = [(k.clone(), v.clone())].into();
    // fail-stop: every later write fails, even after the fault is gone
    for i in 0..5 {
        let (k, v) = kv(2000 + i);
        assert!(matches!(db.put_opt(&k, &v, &wo), Err(Error::Background(_))));
        let mut b = WriteBatch::new();
        b.put(&k, &v);
        assert!(matches!(db.write(b), Err(Error::Background(_))));
        assert!(db.delete(kv(3).0).is_err());
        if i == 2 {
            f.clear();
        }
    }
    assert!(db.flush().is_err());
    // reads still work, and see exactly the acknowledged writes
    for (k, v) in &m {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    assert_eq!(db.get(kv(2001).0).unwrap(), None);
    // reopen on the healthy file system: every acknowledged write is there
    drop(db);
    // the failure reached the LOG as a hard background error
    let log = String::from_utf8(shale::fs::FileSystem::read_all(&mem, &dir().join("LOG")).unwrap()).unwrap();
    assert!(
        log.contains("Background error (hard)"),
        "no background error in the LOG:\n{log}"
    );
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert_has_all(&dump(&db), &m, &maybe);
    db.put(b"after", b"reopen").unwrap();
}

#[test]
fn wal_append_eio_is_fail_stop() {
    wal_failure_is_fail_stop(FaultKind::WriteEio, false, 0);
}

#[test]
fn wal_flush_eio_after_append_is_fail_stop() {
    // the append reaches the file, the flush fails: the record may be recovered
    wal_failure_is_fail_stop(FaultKind::WriteEio, false, 1);
}

#[test]
fn wal_enospc_is_fail_stop() {
    wal_failure_is_fail_stop(FaultKind::WriteNoSpace, false, 0);
}

#[test]
fn wal_sync_eio_is_not_acknowledged_and_fail_stop() {
    wal_failure_is_fail_stop(FaultKind::SyncEio, true, 0);
}

/// After a WAL failure, `resume()` starts a new WAL; the writes after it and before a crash
/// (a failed write whose record reached the WAL kept its sequence number, and the next write
/// reused it: on recovery the failed value won)
/// are recovered, and the failed write never overrides a later one.
#[test]
fn regression_failed_wal_write_sequence_reused_after_resume() {
    for after in [0u64, 1] {
        let mem = MemFs::new();
        let (f, opts) = fault_opts(&mem);
        let opts = {
            let mut o = opts;
            o.set_write_buffer_size(1 << 20);
            o
        };
        let db = DB::open(&opts, dir()).unwrap();
        let mut m = Model::new();
        fill(&db, &mut m, 0, 30, &WriteOptions::default());
        f.inject_after(FaultKind::WriteEio, Some(".log"), after);
        let (k, _) = kv(5);
        assert!(db.put(&k, b"failed").is_err());
        f.clear();
        db.resume().unwrap();
        // later writes to the same key win over the failed one
        db.put(&k, b"later").unwrap();
        m.insert(k.clone(), b"later".to_vec());
        fill(&db, &mut m, 100, 120, &WriteOptions::default());
        drop(db);
        mem.process_crash();
        let db = DB::open(&mem_opts(&mem), dir()).unwrap_or_else(|e| panic!("after={after}: {e}"));
        let got = dump(&db);
        for (k, v) in &m {
            assert_eq!(got.get(k), Some(v), "after={after}: {:?}", String::from_utf8_lossy(k));
        }
        assert!(got == m, "after={after}: recovered state differs");
    }
}

#[test]
fn flush_eio_stops_writes_until_resume() {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    fill(&db, &mut m, 0, 40, &WriteOptions::default());
    f.inject(FaultKind::WriteEio, Some(".sst"));
    let e = db.flush().expect_err("flush with failing table writes");
    assert!(matches!(e, Error::Background(_)), "{e:?}");
    assert!(matches!(db.put(b"x", b"y"), Err(Error::Background(_))));
    assert!(matches!(
        db.wait_for_compact(&Default::default()),
        Err(Error::Background(_))
    ));
    for (k, v) in &m {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    f.clear();
    db.resume().unwrap();
    // resume flushed the memtable that was pending when the error struck
    assert_eq!(
        db.property_int_value("rocksdb.num-immutable-mem-table").unwrap(),
        Some(0)
    );
    assert!(db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap() >= 1);
    fill(&db, &mut m, 40, 400, &WriteOptions::default());
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(dump(&db) == m);
    drop(db);
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert!(dump(&db) == m);
}

#[test]
fn flush_failures_of_every_kind_lose_nothing() {
    for kind in [
        FaultKind::WriteEio,
        FaultKind::WriteNoSpace,
        FaultKind::SyncEio,
        FaultKind::CreateEio,
    ] {
        for pattern in [".sst", "MANIFEST"] {
            if kind == FaultKind::CreateEio && pattern == "MANIFEST" {
                continue; // a flush appends to the MANIFEST, it does not create one
            }
            let mem = MemFs::new();
            let (f, opts) = fault_opts(&mem);
            let db = DB::open(&opts, dir()).unwrap();
            let mut m = Model::new();
            fill(&db, &mut m, 0, 100, &WriteOptions::default());
            f.inject(kind, Some(pattern));
            let r = db.flush();
            assert!(r.is_err(), "{kind:?} on {pattern}: flush succeeded");
            f.clear();
            // either resume or reopen recovers everything
            db.resume().unwrap();
            fill(&db, &mut m, 100, 150, &WriteOptions::default());
            db.flush().unwrap();
            assert!(dump(&db) == m, "{kind:?} on {pattern}");
            drop(db);
            let db = DB::open(&mem_opts(&mem), dir()).unwrap();
            assert!(dump(&db) == m, "{kind:?} on {pattern}: after reopen");
        }
    }
}

#[test]
fn enospc_during_compaction_is_surfaced_and_data_intact() {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let opts = {
        let mut o = opts;
        o.set_disable_auto_compactions(true);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    for r in 0..4 {
        fill(&db, &mut m, r * 100, r * 100 + 150, &WriteOptions::default());
        db.flush().unwrap();
    }
    f.inject_after(FaultKind::WriteNoSpace, Some(".sst"), 3);
    let e = db
        .compact_range(None::<&[u8]>, None::<&[u8]>)
        .expect_err("compaction with ENOSPC");
    assert!(e.is_no_space(), "{e:?}");
    assert!(dump(&db) == m, "reads after a failed compaction");
    // ENOSPC in a compaction is a soft error (as RocksDB's): it is reported, writes go on
    assert_eq!(db.property_int_value("rocksdb.background-errors").unwrap(), Some(1));
    let (k, v) = kv(5000);
    db.put(&k, &v).unwrap();
    m.insert(k, v);
    f.clear();
    // the next successful compaction clears it, without resume()
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.property_int_value("rocksdb.background-errors").unwrap(), Some(0));
    assert!(dump(&db) == m);
    drop(db);
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert!(dump(&db) == m);
    // and without resume: clear + reopen
    f.inject(FaultKind::WriteNoSpace, Some(".sst"));
    drop(db);
    let db = DB::open(&opts, dir());
    // the open itself may fail (it flushes nothing here, so it should not)
    let db = db.unwrap();
    fill(&db, &mut m, 1000, 1100, &WriteOptions::default());
    assert!(db.compact_range(None::<&[u8]>, None::<&[u8]>).is_err());
    f.clear();
    drop(db);
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert!(dump(&db) == m);
}

#[test]
fn read_eio_is_an_error_not_wrong_data() {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let opts = {
        let mut o = opts;
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(0);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    fill(&db, &mut m, 0, 300, &WriteOptions::default());
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    f.inject(FaultKind::ReadEio, Some(".sst"));
    let r: Result<Vec<_>, _> = db.iterator(IteratorMode::Start).collect();
    assert!(r.is_err());
    assert!(db.get(kv(7).0).is_err());
    f.clear();
    assert!(dump(&db) == m);
}

/// Power loss at random points of a workload mixing synced and unsynced writes, flushes and
/// compactions, with a tiny write buffer: every synced write survives and the recovered state
/// is a prefix of the history.
#[test]
fn power_loss_random_points_keep_synced_writes_and_a_prefix() {
    let start = std::time::Instant::now();
    for seed in 1..=40u64 {
        let fs = MemFs::new();
        let mut opts = mem_opts(&fs);
        opts.set_write_buffer_size(4096);
        opts.set_max_write_buffer_number((2 + (seed % 3) as usize) as i32);
        let mut rng = Rng::new(seed);
        let mut durable = Model::new();
        for round in 0..5 {
            let db = DB::open(&opts, dir()).unwrap();
            let mut m = durable.clone();
            let mut states = vec![m.clone()];
            let mut last_synced = 0;
            let steps = 20 + rng.below(200);
            for _ in 0..steps {
                let sync = rng.below(6) == 0;
                let wo = {
                    let mut o = WriteOptions::default();
                    o.set_sync(sync);
                    o.disable_wal(false);
                    o
                };
                match rng.below(10) {
                    0..=5 => {
                        let (k, _) = kv(rng.below(300));
                        let v = format!("s{seed}r{round}-{}", rng.next() % 1000).into_bytes();
                        db.put_opt(&k, &v, &wo).unwrap();
                        m.insert(k, v);
                    }
                    6 | 7 => {
                        let (k, _) = kv(rng.below(300));
                        db.delete_opt(&k, &wo).unwrap();
                        m.remove(&k);
                    }
                    _ => {
                        let mut b = WriteBatch::new();
                        for _ in 0..1 + rng.below(10) {
                            let (k, _) = kv(rng.below(300));
                            if rng.below(4) == 0 {
                                b.delete(&k);
                                m.remove(&k);
                            } else {
                                let v = vec![b'a' + (rng.below(26) as u8); rng.below(200) as usize];
                                b.put(&k, &v);
                                m.insert(k, v);
                            }
                        }
                        db.write_opt(b, &wo).unwrap();
                    }
                }
                states.push(m.clone());
                if sync {
                    last_synced = states.len() - 1;
                }
                match rng.below(80) {
                    0 => {
                        db.flush().unwrap();
                        last_synced = states.len() - 1;
                    }
                    1 => {
                        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
                        last_synced = states.len() - 1;
                    }
                    _ => {}
                }
            }
            drop(db);
            fs.power_loss();
            let db = DB::open(&opts, dir()).unwrap_or_else(|e| panic!("seed {seed} round {round}: {e}"));
            let got = dump(&db);
            match states.iter().rposition(|s| *s == got) {
                Some(i) => assert!(
                    i >= last_synced,
                    "seed {seed} round {round}: prefix {i} < last synced {last_synced}"
                ),
                None => panic!("seed {seed} round {round}: recovered state is not a prefix of the history"),
            }
            durable = got;
        }
    }
    assert!(start.elapsed().as_secs() < 60, "too slow: {:?}", start.elapsed());
}

/// ENOSPC on every table a compaction writes: a soft error. Writes (and flushes) go on,
/// compactions are retried after a delay, and once space returns the first successful
/// compaction clears the error by itself, without `resume()`. Nothing is lost.
#[test]
fn enospc_in_automatic_compaction_is_soft_and_clears_itself() {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let opts = {
        let mut o = opts;
        o.set_level_zero_slowdown_writes_trigger(1000);
        o.set_level_zero_stop_writes_trigger(1000);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    f.inject_for(FaultKind::WriteNoSpace, Some(".sst"), IoActivity::Compaction);
    let mut m = Model::new();
    let mut i = 0;
    while db.property_int_value("rocksdb.background-errors").unwrap() == Some(0) {
        fill(&db, &mut m, i, i + 50, &WriteOptions::default());
        i += 50;
        assert!(i < 50_000, "no compaction failed");
    }
    assert!(f.injected() > 0);
    let e = db
        .wait_for_compact(&Default::default())
        .expect_err("wait_for_compact reports the soft error");
    assert!(e.is_no_space(), "{e:?}");
    // writes and flushes go on
    fill(&db, &mut m, i, i + 400, &WriteOptions::default());
    db.flush().unwrap();
    let l0 = db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap();
    assert!(l0 >= 2, "compactions cannot run: L0 grows ({l0})");
    assert!(dump(&db) == m);
    // space returns: a retried compaction succeeds and clears the error
    f.clear();
    let start = std::time::Instant::now();
    while db.property_int_value("rocksdb.background-errors").unwrap() != Some(0) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "soft error never cleared"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap() < l0);
    assert!(dump(&db) == m);
    drop(db);
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert!(dump(&db) == m);
}

/// EIO in a compaction is a hard error: writes stop (with a Background error) until `resume()`,
/// reads go on, and nothing acknowledged is lost.
#[test]
fn eio_in_automatic_compaction_stops_writes_until_resume() {
    let mem = MemFs::new();
    let (f, opts) = fault_opts(&mem);
    let db = DB::open(&opts, dir()).unwrap();
    f.inject_for(FaultKind::WriteEio, Some(".sst"), IoActivity::Compaction);
    let mut m = Model::new();
    let mut i = 0u64;
    let err = loop {
        let (k, v) = kv(i);
        match db.put(&k, &v) {
            Ok(()) => {
                m.insert(k, v);
            }
            Err(e) => break e,
        }
        i += 1;
        assert!(i < 100_000, "compaction EIO never stopped writes");
    };
    assert!(matches!(err, Error::Background(_)), "{err:?}");
    assert!(f.injected() > 0);
    assert!(matches!(db.put(b"x", b"y"), Err(Error::Background(_))));
    assert!(matches!(
        db.wait_for_compact(&Default::default()),
        Err(Error::Background(_))
    ));
    assert!(dump(&db) == m, "reads go on");
    // clearing the fault is not enough: the error stays until resume()
    f.clear();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(matches!(db.put(b"x", b"y"), Err(Error::Background(_))));
    db.resume().unwrap();
    fill(&db, &mut m, 200_000, 200_400, &WriteOptions::default());
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(dump(&db) == m);
    drop(db);
    let db = DB::open(&mem_opts(&mem), dir()).unwrap();
    assert!(dump(&db) == m);
}
