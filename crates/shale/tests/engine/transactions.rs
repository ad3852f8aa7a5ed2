//! Transactions: WriteBatchWithIndex, OptimisticTransactionDB, TransactionDB.
//! No timing assertions: lock waits use long timeouts or none, and every wait ends because the
//! other side acts.

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier, Mutex};

use shale::txn::WriteBatchWithIndex;
use shale::{
    Direction, ErrorKind, IteratorMode, OptimisticTransactionDB, OptimisticTransactionOptions, Options, ReadOptions,
    TransactionDB, TransactionDBOptions, TransactionOptions, WriteOptions, DB,
};

use crate::common;
use common::Rng;

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("stringappend").unwrap());
    o
}

fn collect(it: impl Iterator<Item = shale::error::Result<(Box<[u8]>, Box<[u8]>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| {
        let (k, v) = r.unwrap();
        (k.to_vec(), v.to_vec())
    })
    .collect()
}

// ---------------------------------------------------------------- WriteBatchWithIndex

#[test]
fn wbwi_reads_its_own_writes_and_merges_against_the_db() {
    let d = tempfile::tempdir().unwrap();
    let db = DB::open(&opts(), d.path()).unwrap();
    db.put(b"a", b"db-a").unwrap();
    db.put(b"m", b"db-m").unwrap();
    db.put(b"gone", b"x").unwrap();

    let mut b = WriteBatchWithIndex::new(0, true);
    b.put(b"b", b"1");
    b.put(b"b", b"2");
    b.merge(b"m", b"x");
    b.delete(b"gone");
    b.put(b"p", b"base");
    b.merge(b"p", b"y");
    let o = opts();
    assert_eq!(b.get_from_batch(b"b", &o).unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(b.get_from_batch(b"gone", &o).unwrap(), None);
    assert_eq!(b.get_from_batch(b"p", &o).unwrap().as_deref(), Some(&b"base,y"[..]));
    assert_eq!(b.get_from_batch(b"a", &o).unwrap(), None);
    // operands without a base in the batch cannot be resolved from the batch alone
    assert_eq!(
        b.get_from_batch(b"m", &o).unwrap_err().kind(),
        ErrorKind::MergeInProgress
    );

    let ro = ReadOptions::default();
    assert_eq!(
        b.get_from_batch_and_db(&db, b"m", &ro).unwrap().as_deref(),
        Some(&b"db-m,x"[..])
    );
    assert_eq!(
        b.get_from_batch_and_db(&db, b"a", &ro).unwrap().as_deref(),
        Some(&b"db-a"[..])
    );
    assert_eq!(b.get_from_batch_and_db(&db, b"gone", &ro).unwrap(), None);
    assert_eq!(b.get_from_batch_and_db(&db, b"zz", &ro).unwrap(), None);

    db.write_wbwi(&b).unwrap();
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"db-m,x"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"gone").unwrap(), None);
    assert_eq!(db.get(b"p").unwrap().as_deref(), Some(&b"base,y"[..]));
}

/// The iterator over batch + DB against a model, in both directions, with bounds and with
/// direction changes at random.
#[test]
fn wbwi_iterator_matches_model() {
    let d = tempfile::tempdir().unwrap();
    let db = DB::open(&opts(), d.path()).unwrap();
    let mut rng = Rng::new(7);
    for round in 0..30 {
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (k, v) in collect(db.iterator(IteratorMode::Start)) {
            model.insert(k, v);
        }
        let mut b = WriteBatchWithIndex::new(0, true);
        for _ in 0..rng.below(40) {
            let k = format!("k{:02}", rng.below(30)).into_bytes();
            match rng.below(4) {
                0 | 1 => {
                    let v = format!("v{}", rng.below(100)).into_bytes();
                    b.put(&k, &v);
                    model.insert(k, v);
                }
                2 => {
                    b.delete(&k);
                    model.remove(&k);
                }
                _ => {
                    let v = format!("m{}", rng.below(10)).into_bytes();
                    b.merge(&k, &v);
                    let nv = match model.get(&k) {
                        Some(old) => [old.as_slice(), b",", &v].concat(),
                        None => v,
                    };
                    model.insert(k, nv);
                }
            }
        }
        let lo = format!("k{:02}", rng.below(10)).into_bytes();
        let hi = format!("k{:02}", 15 + rng.below(20)).into_bytes();
        let bounded = round % 2 == 1;
        let mut ro = ReadOptions::default();
        if bounded {
            ro.set_iterate_lower_bound(lo.clone());
            ro.set_iterate_upper_bound(hi.clone());
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| !bounded || (k.as_slice() >= lo.as_slice() && k.as_slice() < hi.as_slice()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut it = b.iterator_with_base(db.raw_iterator_opt(ro.clone()).into());
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
            it.next();
        }
        it.status().unwrap();
        assert_eq!(got, want, "forward, round {round}");
        it.seek_to_last();
        let mut back = Vec::new();
        while it.valid() {
            back.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
            it.prev();
        }
        back.reverse();
        assert_eq!(back, want, "reverse, round {round}");
        // random walks with direction changes
        for _ in 0..20 {
            let target = format!("k{:02}", rng.below(32)).into_bytes();
            let mut pos: Option<usize> = if rng.below(2) == 0 {
                it.seek(&target);
                want.iter().position(|(k, _)| k >= &target)
            } else {
                it.seek_for_prev(&target);
                want.iter().rposition(|(k, _)| k <= &target)
            };
            for _ in 0..8 {
                match pos {
                    Some(p) => assert_eq!(it.key(), Some(want[p].0.as_slice()), "walk, round {round}"),
                    None => {
                        assert!(!it.valid());
                        break;
                    }
                }
                if rng.below(2) == 0 {
                    it.next();
                    pos = pos.and_then(|p| (p + 1 < want.len()).then_some(p + 1));
                } else {
                    it.prev();
                    pos = pos.and_then(|p| p.checked_sub(1));
                }
            }
        }
        db.write_wbwi(&b).unwrap();
        if round % 7 == 3 {
            db.flush().unwrap();
        }
    }
}

// ---------------------------------------------------------------- optimistic

#[test]
fn optimistic_conflict_is_busy_and_own_writes_are_visible() {
    let d = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
    db.put(b"x", b"0").unwrap();
    let t1 = db.transaction();
    let t2 = db.transaction();
    assert_eq!(t1.get_for_update(b"x", true).unwrap().as_deref(), Some(&b"0"[..]));
    assert_eq!(t2.get_for_update(b"x", true).unwrap().as_deref(), Some(&b"0"[..]));
    t1.put(b"x", b"1").unwrap();
    t2.put(b"x", b"2").unwrap();
    assert_eq!(t1.get(b"x").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"0"[..]));
    t1.commit().unwrap();
    let e = t2.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"1"[..]));

    // a plain write to a tracked key conflicts too
    let t3 = db.transaction();
    t3.get_for_update(b"x", true).unwrap();
    t3.put(b"y", b"1").unwrap();
    db.put(b"x", b"outside").unwrap();
    assert_eq!(t3.commit().unwrap_err().kind(), ErrorKind::Busy);
    assert_eq!(db.get(b"y").unwrap(), None);

    // a write to an untracked key does not
    let t4 = db.transaction();
    t4.get(b"x").unwrap();
    db.put(b"x", b"again").unwrap();
    t4.put(b"z", b"1").unwrap();
    t4.commit().unwrap();
    assert_eq!(db.get(b"z").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn optimistic_snapshot_conflicts_with_writes_after_it() {
    let d = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
    let mut oo = OptimisticTransactionOptions::new();
    oo.set_snapshot(true);
    let t = db.transaction_opt(&WriteOptions::default(), &oo);
    db.put(b"k", b"after snapshot").unwrap();
    // tracked now, but checked against the snapshot taken at the start
    t.put(b"k", b"mine").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    // without a snapshot the same sequence commits
    let t = db.transaction();
    db.put(b"k", b"before tracking").unwrap();
    t.put(b"k", b"mine").unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"mine"[..]));
}

#[test]
fn optimistic_history_too_short_is_try_again_and_history_keeps_it_checkable() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_max_write_buffer_size_to_maintain(1); // too small to keep any flushed memtable
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&o, d.path()).unwrap();
    db.put(b"k", b"0").unwrap();
    let t = db.transaction();
    t.get_for_update(b"k", true).unwrap();
    db.put(b"other", b"1").unwrap();
    db.flush().unwrap();
    t.put(b"k", b"1").unwrap();
    let e = t.commit().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TryAgain, "{e}");
    drop(t);
    drop(db);

    // the default (history kept): the same sequence commits, and a flushed conflicting
    // write is still found
    let d = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
    db.put(b"k", b"0").unwrap();
    let t = db.transaction();
    t.get_for_update(b"k", true).unwrap();
    db.put(b"other", b"1").unwrap();
    db.flush().unwrap();
    t.put(b"k", b"1").unwrap();
    t.commit().unwrap();
    let t = db.transaction();
    t.get_for_update(b"k", true).unwrap();
    db.put(b"k", b"2").unwrap();
    db.flush().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
}

#[test]
fn savepoints_and_iterators() {
    let d = tempfile::tempdir().unwrap();
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"c", b"3").unwrap();
    let t = db.transaction();
    t.put(b"b", b"2").unwrap();
    t.set_savepoint();
    t.put(b"d", b"4").unwrap();
    t.delete(b"a").unwrap();
    t.merge(b"c", b"x").unwrap();
    let all = collect(t.iterator(IteratorMode::Start));
    assert_eq!(
        all,
        vec![
            (b"b".to_vec(), b"2".to_vec()),
            (b"c".to_vec(), b"3,x".to_vec()),
            (b"d".to_vec(), b"4".to_vec())
        ]
    );
    let rev = collect(t.iterator(IteratorMode::From(b"c", Direction::Reverse)));
    assert_eq!(
        rev,
        vec![(b"c".to_vec(), b"3,x".to_vec()), (b"b".to_vec(), b"2".to_vec())]
    );
    t.rollback_to_savepoint().unwrap();
    let all = collect(t.iterator(IteratorMode::Start));
    assert_eq!(
        all,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec()),
            (b"c".to_vec(), b"3".to_vec())
        ]
    );
    assert_eq!(t.rollback_to_savepoint().unwrap_err().kind(), ErrorKind::NotFound);
    t.commit().unwrap();
    assert_eq!(db.get(b"d").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn column_families_in_transactions() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB =
        TransactionDB::open_cf(&opts(), &TransactionDBOptions::default(), d.path(), ["default", "cf1"]).unwrap();
    let cf = db.cf_handle("cf1").unwrap();
    let t = db.transaction();
    t.put_cf(&cf, b"k", b"in cf1").unwrap();
    t.put(b"k", b"in default").unwrap();
    assert_eq!(t.get_cf(&cf, b"k").unwrap().as_deref(), Some(&b"in cf1"[..]));
    // the same key in another family is another lock
    let mut to = TransactionOptions::new();
    to.set_lock_timeout(0);
    let t2 = db.transaction_opt(&WriteOptions::default(), &to);
    assert_eq!(
        t2.get_for_update_cf(&cf, b"k", true).unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    assert_eq!(t2.get_for_update_cf(&cf, b"other", true).unwrap(), None);
    t.commit().unwrap();
    assert_eq!(db.get_cf(&cf, b"k").unwrap().as_deref(), Some(&b"in cf1"[..]));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"in default"[..]));
    let it = collect(t2.iterator_cf(&cf, IteratorMode::Start));
    assert_eq!(it, vec![(b"k".to_vec(), b"in cf1".to_vec())]);
    let r = t2.multi_get_for_update_cf([(&*cf, b"k".to_vec()), (&*cf, b"z".to_vec())], true);
    assert_eq!(r[0].as_ref().unwrap().as_deref(), Some(&b"in cf1"[..]));
    assert_eq!(r[1].as_ref().unwrap(), &None);
}

// ---------------------------------------------------------------- pessimistic

#[test]
fn pessimistic_locks_timeout_and_release() {
    let d = tempfile::tempdir().unwrap();
    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(0);
    tdo.set_default_lock_timeout(0);
    let db: TransactionDB = TransactionDB::open(&opts(), &tdo, d.path()).unwrap();
    let t1 = db.transaction();
    t1.put(b"k", b"1").unwrap();
    let t2 = db.transaction();
    assert_eq!(t2.put(b"k", b"2").unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(t2.get_for_update(b"k", false).unwrap_err().kind(), ErrorKind::TimedOut);
    // writes outside a transaction lock too
    assert_eq!(db.put(b"k", b"3").unwrap_err().kind(), ErrorKind::TimedOut);
    // plain reads do not
    assert_eq!(db.get(b"k").unwrap(), None);
    // a batch written through the DB locks each of its keys
    let mut wb = shale::WriteBatch::new();
    wb.put(b"free", b"1");
    wb.put(b"k", b"batch");
    assert_eq!(db.write(wb).unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(db.get(b"free").unwrap(), None);
    let mut wb = shale::WriteBatch::new();
    wb.delete_range(b"a", b"b");
    assert_eq!(db.write(wb).unwrap_err().kind(), ErrorKind::NotSupported);
    t1.commit().unwrap();
    t2.put(b"k", b"2").unwrap();
    t2.commit().unwrap();
    db.put(b"k", b"3").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"3"[..]));
    let mut wb = shale::WriteBatch::new();
    wb.put(b"free", b"1");
    db.write(wb).unwrap();
    assert_eq!(db.get(b"free").unwrap().as_deref(), Some(&b"1"[..]));

    // shared locks: two readers, no writer
    let r1 = db.transaction();
    let r2 = db.transaction();
    r1.get_for_update(b"k", false).unwrap();
    r2.get_for_update(b"k", false).unwrap();
    assert_eq!(db.delete(b"k").unwrap_err().kind(), ErrorKind::TimedOut);
    drop(r1);
    // r2 alone may upgrade
    r2.put(b"k", b"4").unwrap();
    r2.commit().unwrap();
    let got = db
        .transaction()
        .multi_get_for_update([b"k".to_vec(), b"nope".to_vec()], true);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"4"[..]));
    assert!(got[1].as_ref().unwrap().is_none());
}

#[test]
fn pessimistic_savepoint_releases_newer_locks_and_snapshot_validates() {
    let d = tempfile::tempdir().unwrap();
    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(0);
    let db: TransactionDB = TransactionDB::open(&opts(), &tdo, d.path()).unwrap();
    let t = db.transaction();
    t.put(b"a", b"1").unwrap();
    t.set_savepoint();
    t.put(b"b", b"1").unwrap();
    t.rollback_to_savepoint().unwrap();
    let u = db.transaction();
    u.put(b"b", b"u").unwrap(); // released by the savepoint rollback
    assert_eq!(u.put(b"a", b"u").unwrap_err().kind(), ErrorKind::TimedOut);
    t.commit().unwrap();
    u.commit().unwrap();

    let mut to = TransactionOptions::new();
    to.set_snapshot(true);
    let s = db.transaction_opt(&WriteOptions::default(), &to);
    db.put(b"a", b"changed after the snapshot").unwrap();
    let e = s.get_for_update(b"a", true).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    // the refused key is not left locked
    db.put(b"a", b"free").unwrap();
    // the same check finds writes already flushed to a table file
    db.flush().unwrap();
    let s2 = db.transaction_opt(&WriteOptions::default(), &to);
    db.put(b"c", b"1").unwrap();
    db.flush().unwrap();
    assert_eq!(s2.put(b"c", b"x").unwrap_err().kind(), ErrorKind::Busy);
    s2.put(b"a", b"fine").unwrap();
    s2.commit().unwrap();
    drop((s, s2, t, u));
    drop(db);

    // without memtable history the check reads the table files: still Busy, never TryAgain
    let d = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_max_write_buffer_size_to_maintain(1);
    let db: TransactionDB = TransactionDB::open(&o, &tdo, d.path()).unwrap();
    db.put(b"old", b"1").unwrap();
    db.flush().unwrap();
    let s3 = db.transaction_opt(&WriteOptions::default(), &to);
    db.put(b"c", b"1").unwrap();
    db.flush().unwrap();
    let e = s3.put(b"c", b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    s3.put(b"old", b"2").unwrap();
    s3.put(b"never", b"2").unwrap();
    s3.commit().unwrap();
    assert_eq!(db.get(b"old").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn pessimistic_expiration() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    let mut to = TransactionOptions::new();
    to.set_expiration(1);
    let t = db.transaction_opt(&WriteOptions::default(), &to);
    t.put(b"k", b"old").unwrap();
    // wait until it expired (no timing assertion: just long enough for 1 ms to pass)
    std::thread::sleep(std::time::Duration::from_millis(20));
    // its lock can be taken
    db.put(b"k", b"new").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Expired);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"new"[..]));
}

fn deadlock_cycle(n: usize) {
    let d = tempfile::tempdir().unwrap();
    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(-1); // wait forever: only deadlock detection can end the wait
    let db: Arc<TransactionDB> = Arc::new(TransactionDB::open(&opts(), &tdo, d.path()).unwrap());
    let barrier = Arc::new(Barrier::new(n));
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (db, barrier, outcomes) = (db.clone(), barrier.clone(), outcomes.clone());
            std::thread::spawn(move || {
                let mut to = TransactionOptions::new();
                to.set_deadlock_detect(true);
                let t = db.transaction_opt(&WriteOptions::default(), &to);
                t.put(format!("key{i}"), b"mine").unwrap();
                barrier.wait();
                // each wants the next one's key: a cycle of n
                match t.put(format!("key{}", (i + 1) % n), b"theirs") {
                    Ok(()) => {
                        t.commit().unwrap();
                        outcomes.lock().unwrap().push(Ok(i));
                    }
                    Err(e) => {
                        outcomes.lock().unwrap().push(Err((e.kind(), e.to_string())));
                        t.rollback().unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let out = outcomes.lock().unwrap();
    let deadlocks: Vec<_> = out.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(!deadlocks.is_empty(), "{out:?}");
    for (kind, msg) in &deadlocks {
        assert_eq!(*kind, ErrorKind::Busy);
        assert!(msg.contains("Deadlock"), "{msg}");
        assert!(msg.matches("txn").count() > n, "the cycle is named: {msg}");
    }
    // whoever was not chosen as a victim committed
    assert_eq!(out.len(), n);
    assert!(out.iter().any(|o| o.is_ok()), "{out:?}");
}

#[test]
fn deadlock_two_cycle() {
    deadlock_cycle(2);
}

#[test]
fn deadlock_longer_cycles() {
    deadlock_cycle(3);
    deadlock_cycle(5);
}

// ---------------------------------------------------------------- counters

const THREADS: usize = 4;
const INCREMENTS: usize = 150;
const COUNTERS: usize = 3;

fn as_u64(v: Option<Vec<u8>>) -> u64 {
    v.map(|v| String::from_utf8(v).unwrap().parse().unwrap()).unwrap_or(0)
}

#[test]
fn counters_optimistic_exact() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_write_buffer_size(16 << 10); // flushes during the run
    let db: Arc<OptimisticTransactionDB> = Arc::new(OptimisticTransactionDB::open(&o, d.path()).unwrap());
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(t as u64 + 1);
                let mut retries = 0u64;
                for _ in 0..INCREMENTS {
                    let a = format!("counter{}", rng.below(COUNTERS as u64));
                    loop {
                        let txn = db.transaction();
                        let v = as_u64(txn.get_for_update(&a, true).unwrap());
                        std::thread::yield_now();
                        txn.put(&a, (v + 1).to_string()).unwrap();
                        txn.put(format!("pad{t}-{}", rng.below(1000)), [0u8; 100]).unwrap();
                        match txn.commit() {
                            Ok(()) => break,
                            Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => retries += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                retries
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let sum: u64 = (0..COUNTERS)
        .map(|c| as_u64(db.get(format!("counter{c}")).unwrap()))
        .sum();
    assert_eq!(sum, (THREADS * INCREMENTS) as u64);
}

#[test]
fn counters_pessimistic_exact() {
    let d = tempfile::tempdir().unwrap();
    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(-1);
    let db: Arc<TransactionDB> = Arc::new(TransactionDB::open(&opts(), &tdo, d.path()).unwrap());
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(t as u64 + 11);
                for _ in 0..INCREMENTS {
                    // two counters per transaction, locked in random order: deadlocks happen and
                    // are detected; the victim retries
                    let a = format!("counter{}", rng.below(COUNTERS as u64));
                    let b = format!("counter{}", rng.below(COUNTERS as u64));
                    loop {
                        let mut to = TransactionOptions::new();
                        to.set_deadlock_detect(true);
                        let txn = db.transaction_opt(&WriteOptions::default(), &to);
                        let r = (|| {
                            let va = as_u64(txn.get_for_update(&a, true)?);
                            // widen the read-modify-write window so that unlocked increments
                            // would be lost
                            std::thread::yield_now();
                            txn.put(&a, (va + 1).to_string())?;
                            let vb = as_u64(txn.get_for_update(&b, true)?);
                            txn.put(&b, (vb + 1).to_string())?;
                            txn.commit()
                        })();
                        match r {
                            Ok(()) => break,
                            Err(e) if e.kind() == ErrorKind::Busy => continue,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let sum: u64 = (0..COUNTERS)
        .map(|c| as_u64(db.get(format!("counter{c}")).unwrap()))
        .sum();
    assert_eq!(sum, (2 * THREADS * INCREMENTS) as u64);
}

// ---------------------------------------------------------------- model (serial history)

/// What one committed transaction saw and did.
struct Committed {
    marker: Vec<u8>,
    reads: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// Random transactions from several threads over a few keys; each committed one is placed in
/// the serial order of the WAL (its marker key finds its batch), and replayed on a BTreeMap:
/// every value it read for update must be the model's value at that point, and the final DB
/// must equal the model.
fn model_run(pessimistic: bool, seed: u64) {
    let d = tempfile::tempdir().unwrap();
    let o = opts();
    enum Db {
        O(OptimisticTransactionDB),
        P(TransactionDB),
    }
    let db = Arc::new(if pessimistic {
        let mut tdo = TransactionDBOptions::new();
        tdo.set_txn_lock_timeout(50);
        Db::P(TransactionDB::open(&o, &tdo, d.path()).unwrap())
    } else {
        Db::O(OptimisticTransactionDB::open(&o, d.path()).unwrap())
    });
    let committed = Arc::new(Mutex::new(Vec::<Committed>::new()));
    let hs: Vec<_> = (0..4u64)
        .map(|th| {
            let (db, committed) = (db.clone(), committed.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed * 100 + th);
                for n in 0..120 {
                    macro_rules! body {
                        ($txn:expr) => {{
                            let txn = $txn;
                            let marker = format!("<marker-{th}-{n}>").into_bytes();
                            let mut reads = Vec::new();
                            let mut writes = Vec::new();
                            let mut failed = None;
                            for _ in 0..1 + rng.below(4) {
                                let k = format!("key{}", rng.below(6)).into_bytes();
                                if rng.below(3) == 0 {
                                    let v = if rng.below(4) == 0 {
                                        None
                                    } else {
                                        Some(format!("w{th}-{n}-{}", rng.below(100)).into_bytes())
                                    };
                                    let r = match &v {
                                        Some(v) => txn.put(&k, v),
                                        None => txn.delete(&k),
                                    };
                                    if let Err(e) = r {
                                        failed = Some(e);
                                        break;
                                    }
                                    writes.push((k, v));
                                } else {
                                    match txn.get_for_update(&k, true) {
                                        Ok(v) => {
                                            // only reads of keys not yet written by this txn
                                            // say something about the DB
                                            if !writes.iter().any(|(w, _)| w == &k) {
                                                reads.push((k.clone(), v.clone()));
                                            }
                                            // derive a write from what was read
                                            let nv = [v.unwrap_or_default(), b"+".to_vec()].concat();
                                            if let Err(e) = txn.put(&k, &nv) {
                                                failed = Some(e);
                                                break;
                                            }
                                            writes.push((k, Some(nv)));
                                        }
                                        Err(e) => {
                                            failed = Some(e);
                                            break;
                                        }
                                    }
                                }
                            }
                            let r = match failed {
                                Some(e) => Err(e),
                                None => txn.put(&marker, b"").and_then(|_| txn.commit()),
                            };
                            match r {
                                Ok(()) => committed.lock().unwrap().push(Committed {
                                    marker,
                                    reads,
                                    writes,
                                }),
                                Err(e) => {
                                    assert!(
                                        matches!(
                                            e.kind(),
                                            ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain
                                        ),
                                        "{e}"
                                    );
                                }
                            }
                        }};
                    }
                    match &*db {
                        Db::O(db) => body!(db.transaction()),
                        Db::P(db) => body!(db.transaction()),
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let base: &DB = match &*db {
        Db::O(db) => db.base_db(),
        Db::P(db) => db.base_db(),
    };
    let committed = std::mem::take(&mut *committed.lock().unwrap());
    assert!(committed.len() > 50, "too few commits: {}", committed.len());
    let mut by_marker: std::collections::HashMap<Vec<u8>, Committed> =
        committed.into_iter().map(|c| (c.marker.clone(), c)).collect();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut replayed = 0;
    for u in base.get_updates_since(0).unwrap() {
        let (_, batch) = u.unwrap();
        let data = batch.data();
        // A write group's WAL record holds the batches of several transactions, in order.
        let mut hits: Vec<(usize, Vec<u8>)> = by_marker
            .keys()
            .filter_map(|m| {
                data.windows(m.len())
                    .position(|w| w == m.as_slice())
                    .map(|p| (p, m.clone()))
            })
            .collect();
        assert!(!hits.is_empty(), "every batch in the WAL holds committed transactions");
        hits.sort();
        for (_, hit) in hits {
            let c = by_marker.remove(&hit).unwrap();
            for (k, v) in &c.reads {
                assert_eq!(
                    model.get(k),
                    v.as_ref(),
                    "read of {} out of serial order",
                    String::from_utf8_lossy(k)
                );
            }
            for (k, v) in &c.writes {
                match v {
                    Some(v) => model.insert(k.clone(), v.clone()),
                    None => model.remove(k),
                };
            }
            model.insert(c.marker.clone(), Vec::new());
            replayed += 1;
        }
    }
    assert!(by_marker.is_empty(), "{} commits missing from the WAL", by_marker.len());
    assert!(replayed > 0);
    let got: BTreeMap<Vec<u8>, Vec<u8>> = collect(base.iterator(IteratorMode::Start)).into_iter().collect();
    assert_eq!(got, model);
}

#[test]
fn model_optimistic_serial_history() {
    model_run(false, 1);
    model_run(false, 2);
}

#[test]
fn model_pessimistic_serial_history() {
    model_run(true, 3);
    model_run(true, 4);
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    let t = db.transaction();
    t.put(b"k", b"v").unwrap();
    t.commit().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.put(b"k", b"v").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.get(b"k").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        t.get_for_update(b"k", true).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(t.rollback().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        t.rollback_to_savepoint().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    t.set_savepoint(); // ignored

    let t = db.transaction();
    assert_eq!(t.rollback_to_savepoint().unwrap_err().kind(), ErrorKind::NotFound);
    t.rollback().unwrap();
    t.commit().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);

    let mut to = TransactionOptions::new();
    to.set_lock_timeout(-5);
    let t = db.transaction_opt(&WriteOptions::default(), &to);
    let e = t.put(b"k", b"v").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("lock_timeout"), "{e}");

    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(-2);
    let d2 = tempfile::tempdir().unwrap();
    let e = <TransactionDB>::open(&opts(), &tdo, d2.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);

    // a merge without a merge operator
    let d3 = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open(&o, d3.path()).unwrap();
    let t = odb.transaction();
    assert!(t.merge(b"k", b"v").is_err());
    t.commit().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    let t = odb.transaction();
    t.rollback().unwrap();
    t.commit().unwrap();
    assert_eq!(t.get(b"x").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_transaction_rolled_back_before_prepare_stays_usable() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    let t = db.transaction();
    t.put(b"gone", b"1").unwrap();
    t.get_for_update(b"locked", true).unwrap();
    t.set_savepoint();
    t.rollback().unwrap();
    assert!(t.get(b"gone").unwrap().is_none(), "its writes are dropped");
    assert_eq!(t.rollback_to_savepoint().unwrap_err().kind(), ErrorKind::NotFound);
    // its lock is released: another transaction takes it at once
    let mut no_wait = TransactionOptions::new();
    no_wait.set_lock_timeout(0);
    let u = db.transaction_opt(&WriteOptions::default(), &no_wait);
    u.put(b"locked", b"u").unwrap();
    u.commit().unwrap();
    // and it goes on: what it writes next is committed
    t.put(b"kept", b"2").unwrap();
    t.commit().unwrap();
    assert!(db.get(b"gone").unwrap().is_none());
    assert_eq!(db.get(b"kept").unwrap().as_deref(), Some(&b"2"[..]));

    let od = tempfile::tempdir().unwrap();
    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), od.path()).unwrap();
    let t = odb.transaction();
    t.put(b"gone", b"1").unwrap();
    t.rollback().unwrap();
    t.put(b"kept", b"2").unwrap();
    t.commit().unwrap();
    assert!(odb.get(b"gone").unwrap().is_none());
    assert_eq!(odb.get(b"kept").unwrap().as_deref(), Some(&b"2"[..]));
}
