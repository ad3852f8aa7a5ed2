//! Randomized model test of column families: one `BTreeMap` per family, families with different
//! options (level and universal compaction, a reverse comparator, a merge operator), writes to
//! single families and batches across them, `flush_cf`, `compact_range_cf`, `create_cf` and
//! `drop_cf` (a recreated family starts empty), reopens with `open_cf_descriptors`, snapshots
//! read across families, and simulated power losses (synced writes survive; the recovered
//! state, every family at once, is the state after a prefix of the history).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use shale::comparator::ReverseBytewiseComparator;
use shale::fs::testing::MemFs;
use shale::merge_operator::merge_operator_by_name;
use shale::{ColumnFamily, ColumnFamilyDescriptor, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions, DB};

use crate::model_common;
use model_common::*;

/// The families every run has (beside `default`), and the ones created and dropped on the way.
const FIXED: &[&str] = &["uni", "rev", "cnt"];
const DYNAMIC: &[&str] = &["tmp0", "tmp1"];
const NKEYS: u64 = 300;

/// Every live family's model, by name.
type Models = BTreeMap<String, Model>;

/// What a family's name says of its options: a reverse comparator, a merge operator.
fn is_rev(name: &str) -> bool {
    name == "rev"
}
fn has_merge(name: &str) -> bool {
    name == "cnt" || name.starts_with("tmp")
}

/// A family's options: small memtables and files, and what its name says.
fn fam_opts(fs: &MemFs, name: &str) -> Options {
    let mut o = small_opts(fs);
    o.create_missing_column_families(true);
    match name {
        "uni" => set_style(&mut o, "universal"),
        "rev" => o.set_custom_comparator(Arc::new(ReverseBytewiseComparator)),
        _ => {}
    }
    if has_merge(name) {
        o.set_custom_merge_operator(merge_operator_by_name("stringappend").unwrap());
    }
    if name == "tmp1" {
        o.set_write_buffer_size(4 << 10);
    }
    o
}

fn open(fs: &MemFs, names: &[String]) -> DB {
    let descs: Vec<ColumnFamilyDescriptor> = names
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(n.as_str(), fam_opts(fs, n)))
        .collect();
    DB::open_cf_descriptors(&fam_opts(fs, "default"), "/db", descs).unwrap()
}

fn cmp(rev: bool, a: &[u8], b: &[u8]) -> Ordering {
    if rev {
        b.cmp(a)
    } else {
        a.cmp(b)
    }
}

/// A model's entries in the family's order within `[lo, hi)` (family order).
fn in_order(m: &Model, rev: bool, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Entries {
    let mut v: Entries = m
        .iter()
        .filter(|(k, _)| {
            lo.is_none_or(|l| cmp(rev, k, l) != Ordering::Less) && hi.is_none_or(|h| cmp(rev, k, h) == Ordering::Less)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if rev {
        v.reverse();
    }
    v
}

fn apply_merge(m: &mut Model, k: &[u8], v: &[u8]) {
    let nv = match m.get(k) {
        None => v.to_vec(),
        Some(e) => [e.as_slice(), b",", v].concat(),
    };
    m.insert(k.to_vec(), nv);
}

fn apply_range_del(m: &mut Model, rev: bool, a: &[u8], b: &[u8]) {
    m.retain(|k, _| !(cmp(rev, k, a) != Ordering::Less && cmp(rev, k, b) == Ordering::Less));
}

/// A random range `[a, b)` in the family's order.
fn rand_range(rng: &mut Rng, rev: bool) -> (Vec<u8>, Vec<u8>) {
    let a = rng.below(NKEYS);
    let w = if rng.below(5) == 0 { 80 } else { 10 };
    let b = (a + 1 + rng.below(w)).min(NKEYS);
    if rev {
        (key(b), key(a))
    } else {
        (key(a), key(b))
    }
}

fn handle(db: &DB, name: &str) -> Arc<ColumnFamily> {
    db.cf_handle(name).unwrap_or_else(|| panic!("no family {name}"))
}

/// One random write: to one family, or a batch across several. Updates the models; returns the
/// families written.
fn random_write(db: &DB, ms: &mut Models, rng: &mut Rng, wo: &WriteOptions) -> Vec<String> {
    let names: Vec<String> = ms.keys().cloned().collect();
    let pick = |rng: &mut Rng| names[rng.below(names.len() as u64) as usize].clone();
    let value = |rng: &mut Rng| format!("v{}{}", rng.below(10000), "x".repeat(rng.below(40) as usize)).into_bytes();
    let mut touched = Vec::new();
    match rng.below(12) {
        0..=3 => {
            let n = pick(rng);
            let (k, v) = (key(rng.below(NKEYS)), value(rng));
            db.put_cf_opt(&handle(db, &n), &k, &v, wo).unwrap();
            ms.get_mut(&n).unwrap().insert(k, v);
            touched.push(n);
        }
        4 | 5 => {
            let n = pick(rng);
            let k = key(rng.below(NKEYS));
            db.delete_cf_opt(&handle(db, &n), &k, wo).unwrap();
            ms.get_mut(&n).unwrap().remove(&k);
            touched.push(n);
        }
        6 => {
            let n = pick(rng);
            let (k, v) = (key(rng.below(NKEYS)), format!("m{}", rng.below(100)).into_bytes());
            if has_merge(&n) {
                db.merge_cf_opt(&handle(db, &n), &k, &v, wo).unwrap();
                apply_merge(ms.get_mut(&n).unwrap(), &k, &v);
            } else {
                // A family without a merge operator refuses merges.
                assert!(db.merge_cf_opt(&handle(db, &n), &k, &v, wo).is_err());
                db.put_cf_opt(&handle(db, &n), &k, &v, wo).unwrap();
                ms.get_mut(&n).unwrap().insert(k, v);
            }
            touched.push(n);
        }
        7 => {
            let n = pick(rng);
            let (a, b) = rand_range(rng, is_rev(&n));
            db.delete_range_cf_opt(&handle(db, &n), &a, &b, wo).unwrap();
            apply_range_del(ms.get_mut(&n).unwrap(), is_rev(&n), &a, &b);
            touched.push(n);
        }
        _ => {
            // A batch across families, applied to the models in its order.
            let mut b = WriteBatch::new();
            for _ in 0..2 + rng.below(8) {
                let n = pick(rng);
                touched.push(n.clone());
                let h = handle(db, &n);
                let m = ms.get_mut(&n).unwrap();
                let k = key(rng.below(NKEYS));
                match rng.below(6) {
                    0 => {
                        b.delete_cf(&h, &k);
                        m.remove(&k);
                    }
                    1 if has_merge(&n) => {
                        let v = format!("b{}", rng.below(100)).into_bytes();
                        b.merge_cf(&h, &k, &v);
                        apply_merge(m, &k, &v);
                    }
                    2 => {
                        let (x, y) = rand_range(rng, is_rev(&n));
                        b.delete_range_cf(&h, &x, &y);
                        apply_range_del(m, is_rev(&n), &x, &y);
                    }
                    _ => {
                        let v = value(rng);
                        b.put_cf(&h, &k, &v);
                        m.insert(k, v);
                    }
                }
            }
            db.write_opt(b, wo).unwrap();
        }
    }
    touched
}

/// Every family against its model through `ro`: gets, one `multi_get_cf` across families,
/// bounded iterators in both directions, seeks with steps either way.
fn check(db: &DB, ms: &Models, rng: &mut Rng, ro: &ReadOptions, what: &str) {
    let hs: BTreeMap<&String, Arc<ColumnFamily>> = ms.keys().map(|n| (n, handle(db, n))).collect();
    for (n, m) in ms {
        for _ in 0..20 {
            let k = key(rng.below(NKEYS));
            assert_eq!(
                db.get_cf_opt(&hs[n], &k, ro).unwrap(),
                m.get(&k).cloned(),
                "{what}: get_cf {n} {}",
                String::from_utf8_lossy(&k)
            );
        }
    }
    // multi_get_cf: keys of all families in one call, in random order
    let names: Vec<&String> = ms.keys().collect();
    let req: Vec<(&String, Vec<u8>)> = (0..24)
        .map(|_| (names[rng.below(names.len() as u64) as usize], key(rng.below(NKEYS))))
        .collect();
    let got = db.multi_get_cf_opt(req.iter().map(|(n, k)| (&hs[*n], k.as_slice())), ro);
    for ((n, k), g) in req.iter().zip(got) {
        assert_eq!(
            g.unwrap(),
            ms[*n].get(k).cloned(),
            "{what}: multi_get_cf {n} {}",
            String::from_utf8_lossy(k)
        );
    }
    for (n, m) in ms {
        let rev = is_rev(n);
        let bound = |rng: &mut Rng| (rng.below(3) == 0).then(|| key(rng.below(NKEYS)));
        let (lo, hi) = (bound(rng), bound(rng));
        let mut ro2 = ro.clone();
        if let Some(b) = &lo {
            ro2.set_iterate_lower_bound(b.clone());
        }
        if let Some(b) = &hi {
            ro2.set_iterate_upper_bound(b.clone());
        }
        let expect = in_order(m, rev, lo.as_deref(), hi.as_deref());
        let mut it = db.raw_iterator_cf_opt(&hs[n], ro2);
        let (fwd, bwd) = scan_both_ways(&mut it);
        assert_eq!(fwd, expect, "{what}: forward scan of {n} lo={lo:?} hi={hi:?}");
        assert_eq!(bwd, expect, "{what}: backward scan of {n} lo={lo:?} hi={hi:?}");
        for _ in 0..3 {
            let t = key(rng.below(NKEYS));
            it.seek(&t);
            let at = expect.iter().position(|(k, _)| cmp(rev, k, &t) != Ordering::Less);
            match at {
                Some(i) => {
                    assert_eq!(it.key().unwrap(), expect[i].0.as_slice(), "{what}: seek in {n}");
                    random_steps(&mut it, &expect, i, 5, rng);
                }
                None => assert!(!it.valid(), "{what}: seek past the end in {n}"),
            }
            it.seek_for_prev(&t);
            match expect.iter().rposition(|(k, _)| cmp(rev, k, &t) != Ordering::Greater) {
                Some(i) => assert_eq!(
                    it.key().unwrap(),
                    expect[i].0.as_slice(),
                    "{what}: seek_for_prev in {n}"
                ),
                None => assert!(!it.valid(), "{what}: seek_for_prev before the start in {n}"),
            }
        }
    }
}

/// Every family's whole contents (the state recovered after a crash).
fn dump(db: &DB) -> Models {
    db.cf_names()
        .into_iter()
        .map(|n| {
            let h = handle(db, &n);
            let m: Model = db
                .iterator_cf(&h, shale::IteratorMode::Start)
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.to_vec(), v.to_vec())
                })
                .collect();
            (n, m)
        })
        .collect()
}

/// Drop family `name` (checking that a handle taken before the drop still reads its data as it
/// was) and forget its model and its snapshot models.
fn drop_family(db: &DB, ms: &mut Models, snaps: &mut [(Snapshot, Models)], name: &str, rng: &mut Rng) {
    let h = handle(db, name);
    db.drop_cf(name).unwrap();
    assert!(db.cf_handle(name).is_none());
    let m = ms.remove(name).unwrap();
    for _ in 0..10 {
        let k = key(rng.below(NKEYS));
        assert_eq!(
            db.get_cf(&h, &k).unwrap(),
            m.get(&k).cloned(),
            "dropped {name}: get through a handle"
        );
    }
    let mut it = db.raw_iterator_cf(&h);
    assert_eq!(scan_both_ways(&mut it).0, in_order(&m, is_rev(name), None, None));
    assert!(
        db.put_cf(&h, b"k", b"v").is_err(),
        "a write to the dropped {name} was accepted"
    );
    for (_, sm) in snaps.iter_mut() {
        sm.remove(name);
    }
}

/// Create a dynamic family, or drop it if it exists.
fn toggle_family(db: &DB, fs: &MemFs, ms: &mut Models, snaps: &mut [(Snapshot, Models)], rng: &mut Rng) {
    let d = DYNAMIC[rng.below(DYNAMIC.len() as u64) as usize];
    if ms.contains_key(d) {
        drop_family(db, ms, snaps, d, rng);
    } else {
        db.create_cf(d, &fam_opts(fs, d)).unwrap();
        ms.insert(d.to_string(), Model::new());
    }
}

fn all_names(ms: &Models) -> Vec<String> {
    ms.keys().cloned().collect()
}

fn initial_models() -> Models {
    std::iter::once("default")
        .chain(FIXED.iter().copied())
        .map(|n| (n.to_string(), Model::new()))
        .collect()
}

fn run_model(seed: u64, steps: usize) {
    let fs = MemFs::new();
    let mut ms = initial_models();
    let mut db = open(&fs, &all_names(&ms));
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xCF);
    let wo = WriteOptions::default();
    let mut snaps: Vec<(Snapshot, Models)> = Vec::new();
    for step in 0..steps {
        random_write(&db, &mut ms, &mut rng, &wo);
        let names = all_names(&ms);
        let some = |rng: &mut Rng| names[rng.below(names.len() as u64) as usize].clone();
        match rng.below(200) {
            0..=2 => db.flush_cf(&handle(&db, &some(&mut rng))).unwrap(),
            3 => {
                let n = some(&mut rng);
                let (a, b) = rand_range(&mut rng, is_rev(&n));
                let (a, b) = if rng.below(2) == 0 {
                    (Some(a), Some(b))
                } else {
                    (None, None)
                };
                db.compact_range_cf(&handle(&db, &n), a.as_deref(), b.as_deref())
                    .unwrap();
            }
            4 | 5 if snaps.len() < 3 => snaps.push((db.snapshot(), ms.clone())),
            6 if !snaps.is_empty() => {
                snaps.remove(0);
            }
            7 => {
                snaps.clear();
                drop(db);
                db = open(&fs, &all_names(&ms));
            }
            8 | 9 => {
                toggle_family(&db, &fs, &mut ms, &mut snaps, &mut rng);
            }
            _ => {}
        }
        if step % 200 == 0 {
            check(
                &db,
                &ms,
                &mut rng,
                &ReadOptions::default(),
                &format!("seed {seed} step {step}"),
            );
            for (i, (s, sm)) in snaps.iter().enumerate() {
                let mut ro = ReadOptions::default();
                ro.set_snapshot(s);
                check(&db, sm, &mut rng, &ro, &format!("seed {seed} step {step} snapshot {i}"));
            }
        }
    }
    db.wait_for_compact(&Default::default()).unwrap();
    check(&db, &ms, &mut rng, &ReadOptions::default(), &format!("seed {seed} end"));
    // The run flushed and compacted: tables exist beyond L0 in the level and universal families.
    for n in ["default", "uni"] {
        let deeper: u64 = (1..7)
            .map(|l| {
                db.property_int_value_cf(&handle(&db, n), &format!("rocksdb.num-files-at-level{l}"))
                    .unwrap()
                    .unwrap_or(0)
            })
            .sum();
        assert!(deeper > 0, "seed {seed}: no table below L0 in {n}");
    }
    drop(snaps);
    drop(db);
    let mut listed = DB::list_cf(&fam_opts(&fs, "default"), "/db").unwrap();
    assert_eq!(listed[0], "default");
    listed.sort();
    assert_eq!(listed, all_names(&ms), "seed {seed}: list_cf");
    let db = open(&fs, &all_names(&ms));
    check(
        &db,
        &ms,
        &mut rng,
        &ReadOptions::default(),
        &format!("seed {seed} reopened"),
    );
}

#[test]
fn model_cf_flush_compact_drop_create_reopen_snapshots() {
    for seed in 1..=4 {
        run_model(seed, 2500);
    }
}

/// Power loss with several families: a synced write, the last write to a family flushed by
/// `flush_cf` (the WAL is synced when the memtables switch) and a `create_cf`/`drop_cf` after a synced WAL survive; the recovered state
/// of all families together is the state after one prefix of the history, so a batch across
/// families is all or nothing.
#[test]
fn model_cf_power_loss_keeps_synced_writes_and_a_prefix_across_families() {
    for seed in 1..=12u64 {
        let fs = MemFs::new();
        let mut rng = Rng(seed * 7919 + 11);
        let mut durable = initial_models();
        for round in 0..6 {
            let names = DB::list_cf(&fam_opts(&fs, "default"), "/db")
                .map(|mut v| {
                    v.sort();
                    v
                })
                .unwrap_or_else(|_| all_names(&durable));
            assert_eq!(names, all_names(&durable), "seed {seed} round {round}: families");
            let db = open(&fs, &names);
            let mut ms = durable.clone();
            let mut history = vec![ms.clone()];
            let mut last_synced = 0;
            // The last write to each family: a flush of the family makes it durable (and all
            // before it: a memtable switch syncs the WAL).
            let mut last_write: BTreeMap<String, usize> = BTreeMap::new();
            for _ in 0..120 {
                let sync = rng.below(10) == 0;
                let mut wo = WriteOptions::default();
                wo.set_sync(sync);
                let touched = random_write(&db, &mut ms, &mut rng, &wo);
                history.push(ms.clone());
                for n in touched {
                    last_write.insert(n, history.len() - 1);
                }
                if sync {
                    last_synced = history.len() - 1;
                }
                match rng.below(40) {
                    0 => {
                        let n = all_names(&ms)[rng.below(ms.len() as u64) as usize].clone();
                        db.flush_cf(&handle(&db, &n)).unwrap();
                        last_synced = last_synced.max(last_write.get(&n).copied().unwrap_or(0));
                    }
                    1 => {
                        // Family changes are durable (MANIFEST); the WAL is synced first so that
                        // the state with the change is a prefix of the history.
                        db.flush_wal(true).unwrap();
                        toggle_family(&db, &fs, &mut ms, &mut [], &mut rng);
                        history.push(ms.clone());
                        last_synced = history.len() - 1;
                    }
                    _ => {}
                }
            }
            // The process goes away (background work may finish first), then the power fails.
            drop(db);
            fs.power_loss();
            let names = DB::list_cf(&fam_opts(&fs, "default"), "/db").unwrap();
            let db = open(&fs, &names);
            let got = dump(&db);
            match history.iter().rposition(|s| *s == got) {
                Some(i) => assert!(
                    i >= last_synced,
                    "seed {seed} round {round}: recovered the state after write {i} < last synced {last_synced}"
                ),
                None => panic!("seed {seed} round {round}: the recovered state is no prefix of the history"),
            }
            check(&db, &got, &mut rng, &ReadOptions::default(), "after power loss");
            durable = got;
        }
    }
}
