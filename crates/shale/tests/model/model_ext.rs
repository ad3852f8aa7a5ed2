//! Randomized model tests for range deletions, merge operators (uint64add, stringappend),
//! single deletes and wide-column entities (written with a default column, which is what plain
//! reads and merges see): Shale against a `BTreeMap` across flushes, compactions, snapshots and
//! reopens.

use std::collections::BTreeMap;
use std::path::Path;

use shale::fs::testing::MemFs;
use shale::merge_operator::merge_operator_by_name;
use shale::{MemtableFactory, ReadOptions, WriteBatch, DB};

use crate::model_common;
use model_common::*;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Append,
    Add,
}

fn merge_model(op: Op, existing: Option<&Vec<u8>>, v: &[u8]) -> Vec<u8> {
    match op {
        Op::Append => match existing {
            None => v.to_vec(),
            Some(e) => [e.as_slice(), b",", v].concat(),
        },
        Op::Add => {
            let d = |x: &[u8]| <[u8; 8]>::try_from(x).map(u64::from_le_bytes).unwrap_or(0);
            (existing.map(|e| d(e)).unwrap_or(0).wrapping_add(d(v)))
                .to_le_bytes()
                .to_vec()
        }
    }
}

/// Keys safe for SingleDelete: no write since their last deletion, or exactly one Put.
#[derive(Default)]
struct SdState(BTreeMap<Vec<u8>, u8>);
impl SdState {
    fn ok(&self, k: &[u8]) -> bool {
        self.0.get(k).copied().unwrap_or(0) <= 1
    }
    fn put(&mut self, k: &[u8]) {
        *self.0.entry(k.to_vec()).or_insert(0) += 1;
    }
    fn other(&mut self, k: &[u8]) {
        self.0.insert(k.to_vec(), 2);
    }
    fn clear(&mut self, k: &[u8]) {
        self.0.insert(k.to_vec(), 0);
    }
}

fn value(op: Op, rng: &mut Rng) -> Vec<u8> {
    match op {
        Op::Add => (rng.below(1000)).to_le_bytes().to_vec(),
        Op::Append => format!("v{}", rng.below(1000)).into_bytes(),
    }
}

fn random_write(db: &DB, m: &mut Model, sd: &mut SdState, rng: &mut Rng, op: Op) {
    match rng.below(20) {
        0..=6 => {
            let k = key(rng.below(400));
            let v = value(op, rng);
            if rng.below(4) == 0 {
                // A wide-column entity: plain reads and merges see its default column.
                db.put_entity(&k, &[(&b"side"[..], &b"col"[..]), (&b""[..], &v[..])])
                    .unwrap();
            } else {
                db.put(&k, &v).unwrap();
            }
            m.insert(k.clone(), v);
            sd.put(&k);
        }
        7..=10 => {
            let k = key(rng.below(400));
            let v = value(op, rng);
            db.merge(&k, &v).unwrap();
            let nv = merge_model(op, m.get(&k), &v);
            m.insert(k.clone(), nv);
            sd.other(&k);
        }
        11 | 12 => {
            let k = key(rng.below(400));
            db.delete(&k).unwrap();
            m.remove(&k);
            sd.clear(&k);
        }
        13 | 14 => {
            let k = key(rng.below(400));
            if sd.ok(&k) {
                db.single_delete(&k).unwrap();
                m.remove(&k);
                sd.clear(&k);
            }
        }
        15 | 16 => {
            let a = rng.below(400);
            let w = if rng.below(4) == 0 { 120 } else { 12 };
            let b = a + rng.below(w);
            let (ka, kb) = (key(a), key(b));
            db.delete_range(&ka, &kb).unwrap();
            let gone: Vec<Vec<u8>> = m.range(ka.clone()..kb.clone()).map(|(k, _)| k.clone()).collect();
            for k in gone {
                m.remove(&k);
            }
            for i in a..b {
                sd.clear(&key(i));
            }
        }
        _ => {
            let mut wb = WriteBatch::new();
            for _ in 0..rng.below(6) + 1 {
                let k = key(rng.below(400));
                match rng.below(4) {
                    0 => {
                        wb.delete(&k);
                        m.remove(&k);
                        sd.clear(&k);
                    }
                    1 => {
                        let v = value(op, rng);
                        wb.merge(&k, &v);
                        let nv = merge_model(op, m.get(&k), &v);
                        m.insert(k.clone(), nv);
                        sd.other(&k);
                    }
                    2 => {
                        let e = key(rng.below(400));
                        if k <= e {
                            wb.delete_range(&k, &e);
                            let gone: Vec<Vec<u8>> = m.range(k.clone()..e.clone()).map(|(k, _)| k.clone()).collect();
                            for g in gone {
                                m.remove(&g);
                                sd.clear(&g);
                            }
                        }
                    }
                    _ => {
                        let v = value(op, rng);
                        if rng.below(4) == 0 {
                            wb.put_entity(&k, &[(&b""[..], &v[..]), (&b"z"[..], &b"col"[..])])
                                .unwrap();
                        } else {
                            wb.put(&k, &v);
                        }
                        m.insert(k.clone(), v);
                        sd.put(&k);
                    }
                }
            }
            db.write(wb).unwrap();
        }
    }
}

fn run_model(op: Op, seeds: std::ops::RangeInclusive<u64>, steps: usize) {
    run_model_rep(op, seeds, steps, MemtableFactory::SkipList, "level")
}

fn run_model_rep(op: Op, seeds: std::ops::RangeInclusive<u64>, steps: usize, rep: MemtableFactory, style: &str) {
    for seed in seeds {
        let fs = MemFs::new();
        let path = Path::new("/db");
        let mut opts = small_opts(&fs);
        opts.set_memtable_factory(rep);
        set_style(&mut opts, style);
        opts.set_custom_merge_operator(
            merge_operator_by_name(if op == Op::Add { "uint64add" } else { "stringappend" }).unwrap(),
        );
        let mut db = DB::open(&opts, path).unwrap();
        let mut m = Model::new();
        let mut sd = SdState::default();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5151);
        let mut snaps: Vec<(shale::Snapshot, Model)> = Vec::new();
        for step in 0..steps {
            random_write(&db, &mut m, &mut sd, &mut rng, op);
            match rng.below(100) {
                0 | 5 => db.flush().unwrap(),
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
            if step % 200 == 0 {
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
        for (s, sm) in &snaps {
            let mut ro = ReadOptions::default();
            ro.set_snapshot(s);
            check_full(&db, sm, &mut rng, &ro);
        }
        drop(snaps);
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
        drop(db);
        let db = DB::open(&opts, path).unwrap();
        check_full(&db, &m, &mut rng, &ReadOptions::default());
    }
}

#[test]
fn model_range_deletes_merges_single_deletes_stringappend() {
    run_model(Op::Append, 1..=3, 3000);
}

#[test]
fn model_range_deletes_merges_single_deletes_uint64add() {
    run_model(Op::Add, 4..=6, 3000);
}

/// Merges (operand chains in gets), range deletions and single deletes over vector memtables.
#[test]
fn model_range_deletes_merges_single_deletes_vector_memtable() {
    run_model_rep(Op::Append, 21..=21, 3000, MemtableFactory::Vector, "level");
    run_model_rep(Op::Add, 22..=22, 3000, MemtableFactory::Vector, "level");
}

/// Range deletions, merges and single deletes under universal (multi- and single-level: L0
/// outputs that are or are not bottommost) and FIFO compaction.
#[test]
fn model_range_deletes_merges_single_deletes_universal_and_fifo() {
    run_model_rep(Op::Append, 41..=41, 3000, MemtableFactory::SkipList, "universal");
    run_model_rep(Op::Add, 42..=42, 3000, MemtableFactory::SkipList, "universal1");
    run_model_rep(Op::Append, 43..=43, 3000, MemtableFactory::SkipList, "fifo");
}

#[test]
fn bad_input() {
    let fs = MemFs::new();
    let opts = small_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    assert!(db.delete_range(b"b", b"a").unwrap_err().is_invalid_argument());
    let seq = db.latest_sequence_number();
    db.delete_range(b"a", b"a").unwrap();
    assert_eq!(db.latest_sequence_number(), seq, "empty range is a no-op");
    assert!(db.merge(b"a", b"1").unwrap_err().is_invalid_argument());
    let mut b = WriteBatch::new();
    b.merge(b"a", b"1");
    assert!(db.write(b).unwrap_err().is_invalid_argument());
    let mut b = WriteBatch::new();
    b.delete_range(b"z", b"a");
    assert!(db.write(b).unwrap_err().is_invalid_argument());
    drop(db);
    // operands written with an operator, read without one: a clear error on the read
    let mut o2 = opts.clone();
    o2.set_custom_merge_operator(merge_operator_by_name("stringappend").unwrap());
    let db = DB::open(&o2, "/db").unwrap();
    db.merge(b"k", b"x").unwrap();
    db.put(b"p", b"y").unwrap();
    db.flush().unwrap();
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(db.get(b"p").unwrap().as_deref(), Some(&b"y"[..]));
    let e = db.get(b"k").unwrap_err();
    assert!(e.to_string().contains("merge operator"), "{e}");
    let mut it = db.raw_iterator();
    it.seek_to_first();
    assert!(it.status().is_err());
}
