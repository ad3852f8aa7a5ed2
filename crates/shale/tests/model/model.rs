//! Randomized model tests: Shale against a `BTreeMap`, across flushes, compactions, reopens and
//! simulated power loss, with snapshots and iterators in both directions with bounds.

use std::path::Path;

use shale::fs::testing::MemFs;
use shale::{MemtableFactory, ReadOptions, WriteBatch, WriteOptions, DB};

use crate::model_common;
use model_common::*;

fn random_write(db: &DB, m: &mut Model, rng: &mut Rng, wo: &WriteOptions) {
    match rng.below(10) {
        0..=4 => {
            let k = key(rng.below(400));
            let v = format!("v{}-{}", rng.next() % 100000, "x".repeat(rng.below(60) as usize)).into_bytes();
            db.put_opt(&k, &v, wo).unwrap();
            m.insert(k, v);
        }
        5 | 6 => {
            let k = key(rng.below(400));
            db.delete_opt(&k, wo).unwrap();
            m.remove(&k);
        }
        _ => {
            let mut b = WriteBatch::new();
            for _ in 0..rng.below(8) + 1 {
                let k = key(rng.below(400));
                if rng.below(3) == 0 {
                    b.delete(&k);
                    m.remove(&k);
                } else {
                    let v = format!("b{}", rng.next() % 1000).into_bytes();
                    b.put(&k, &v);
                    m.insert(k, v);
                }
            }
            db.write_opt(b, wo).unwrap();
        }
    }
}

#[test]
fn model_with_flush_compaction_reopen_and_snapshots() {
    run_model(1..=3, MemtableFactory::SkipList, "level");
}

/// The same model run under universal (multi-level and single-level) and FIFO compaction.
#[test]
fn model_under_universal_and_fifo_compaction() {
    run_model(31..=31, MemtableFactory::SkipList, "universal");
    run_model(32..=32, MemtableFactory::SkipList, "universal1");
    run_model(33..=33, MemtableFactory::SkipList, "fifo");
}

/// The same model run with a partitioned index and partitioned filters of tiny partitions (one
/// index entry per partition, and a few), in a block cache small enough to evict them: every
/// get, seek and scan agrees with the model.
#[test]
fn model_with_partitioned_index_and_filters() {
    run_model(41..=41, MemtableFactory::SkipList, "partitioned:0");
    run_model(42..=42, MemtableFactory::SkipList, "partitioned:100");
}

/// The same model run with the vector memtable: gets and iterators over mutable and immutable
/// vector memtables, their flushes, and WAL replay into them.
#[test]
fn model_with_vector_memtable() {
    run_model(11..=12, MemtableFactory::Vector, "level");
}

fn run_model(seeds: std::ops::RangeInclusive<u64>, rep: MemtableFactory, style: &str) {
    for seed in seeds {
        let fs = MemFs::new();
        let path = Path::new("/db");
        let mut opts = small_opts(&fs);
        opts.set_memtable_factory(rep);
        set_style(&mut opts, style);
        let mut db = DB::open(&opts, path).unwrap();
        let mut m = Model::new();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let wo = WriteOptions::default();
        let mut snaps: Vec<(shale::Snapshot, Model)> = Vec::new();
        for step in 0..3000 {
            random_write(&db, &mut m, &mut rng, &wo);
            match rng.below(100) {
                0 => db.flush().unwrap(),
                1 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
                2 if snaps.len() < 4 => snaps.push((db.snapshot(), m.clone())),
                3 if !snaps.is_empty() => {
                    snaps.remove(0);
                }
                4 => {
                    snaps.clear();
                    drop(db);
                    db = DB::open(&opts, path).unwrap();
                }
                _ => {}
            }
            if step % 250 == 0 {
                check_full(&db, &m, &mut rng, &ReadOptions::default());
                for (s, sm) in &snaps {
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(s);
                    check_full(&db, sm, &mut rng, &ro);
                }
            }
        }
        db.wait_for_compact(&Default::default()).unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
        drop(snaps);
        drop(db);
        let db = DB::open(&opts, path).unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
    }
}

/// After power loss every synced write survives and the recovered state is a prefix of the
/// history (no holes).
#[test]
fn power_loss_keeps_synced_writes_and_a_prefix() {
    for seed in 1..=4u64 {
        let fs = MemFs::new();
        let path = Path::new("/db");
        let opts = small_opts(&fs);
        let mut rng = Rng(seed * 7919 + 1);
        let mut durable = Model::new();
        for _round in 0..6 {
            let db = DB::open(&opts, path).unwrap();
            // the recovered state is the durable state
            let mut m = durable.clone();
            let mut states = vec![m.clone()];
            let mut last_synced = 0;
            for _ in 0..150 {
                let sync = rng.below(8) == 0;
                let wo = {
                    let mut o = WriteOptions::default();
                    o.set_sync(sync);
                    o.disable_wal(false);
                    o
                };
                random_write(&db, &mut m, &mut rng, &wo);
                states.push(m.clone());
                if sync {
                    last_synced = states.len() - 1;
                }
                if rng.below(60) == 0 {
                    db.flush().unwrap();
                    last_synced = states.len() - 1;
                }
            }
            // The DB goes away (background work may finish first, as before a real crash), then
            // the power fails: unsynced bytes and directory entries are lost.
            drop(db);
            fs.power_loss();
            let db = DB::open(&opts, path).unwrap();
            let got: Model = db
                .iterator(shale::IteratorMode::Start)
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            let idx = states.iter().rposition(|s| *s == got);
            match idx {
                Some(i) => assert!(
                    i >= last_synced,
                    "seed {seed}: recovered prefix {i} < last synced {last_synced}"
                ),
                None => panic!("seed {seed}: recovered state is not a prefix of the history"),
            }
            durable = got;
            drop(db);
        }
    }
}
