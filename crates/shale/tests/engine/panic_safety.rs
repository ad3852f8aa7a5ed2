//! A panic in a user callback (comparator, merge operator, prefix extractor) caught by the
//! engine or by the caller leaves no state lost or inconsistent: iterators are invalid until
//! repositioned, locks are released, background work reports an error instead of stopping.

use crate::common;

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::*;
use shale::fs::testing::MemFs;
use shale::{Error, Options, DB};

thread_local! {
    /// Comparisons left on this thread before the comparator panics (0: never).
    static COUNTDOWN: Cell<u64> = const { Cell::new(0) };
}

/// Panic at the `n`-th comparison made by this thread from now on (0: disarm).
fn arm(n: u64) {
    COUNTDOWN.with(|c| c.set(n));
}

/// Bytewise order, but panics on the comparison (or key check) that counts this thread's countdown down to
/// zero (a buggy user comparator). Other threads (flushes, compactions) are not affected.
struct CountdownComparator;
impl shale::comparator::Comparator for CountdownComparator {
    fn name(&self) -> &str {
        "test.CountdownBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        count_down();
        a.cmp(b)
    }
    /// Counts as a comparison (writes check their keys with it).
    fn validate_key(&self, _key: &[u8]) -> shale::error::Result<()> {
        count_down();
        Ok(())
    }
}

fn count_down() {
    COUNTDOWN.with(|c| match c.get() {
        0 => {}
        1 => {
            c.set(0);
            panic!("comparator bug");
        }
        n => c.set(n - 1),
    });
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn val(i: u64) -> Vec<u8> {
    format!("value{i:06}-{}", "v".repeat(40)).into_bytes()
}

/// Keys 0..400 spread over the last level (several files), two L0 files and the memtable.
fn layered_db(fs: &MemFs) -> DB {
    let mut o: Options = mem_opts(fs);
    o.set_disable_auto_compactions(true);
    o.set_target_file_size_base(2 << 10);
    o.set_write_buffer_size(1 << 20);
    o.set_custom_comparator(Arc::new(CountdownComparator));
    let db = DB::open(&o, dir()).unwrap();
    for round in 0..4u64 {
        for i in (0..400u64).filter(|i| i % 4 == round) {
            db.put(key(i), val(i)).unwrap();
        }
        match round {
            0 => {
                db.flush().unwrap();
                db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
            }
            1 | 2 => db.flush().unwrap(),
            _ => {}
        }
    }
    let levels = level_files(&db);
    assert!(levels[0] == 2 && levels[6] > 1, "{levels:?}");
    db
}

#[test]
fn an_iterator_is_invalid_after_a_comparator_panic_in_a_move_and_seeks_again() {
    let fs = MemFs::new();
    let db = layered_db(&fs);
    let mut it = db.raw_iterator();
    type Move = fn(&mut shale::DBRawIterator);
    let moves: [(&str, Move); 4] = [
        ("seek", |it| it.seek(key(250))),
        ("seek_for_prev", |it| it.seek_for_prev(key(250))),
        ("next", |it| it.next()),
        ("prev", |it| it.prev()),
    ];
    for (name, mv) in moves {
        let mut panics = 0;
        for n in 1..80 {
            it.seek(key(100));
            assert_eq!(it.key(), Some(&key(100)[..]));
            arm(n);
            let r = catch_unwind(AssertUnwindSafe(|| mv(&mut it)));
            arm(0);
            if r.is_ok() {
                continue;
            }
            panics += 1;
            assert!(!it.valid(), "{name}, panic at comparison {n}: still valid");
            assert_eq!(it.key(), None, "{name}, panic at comparison {n}");
            assert_eq!(it.value(), None, "{name}, panic at comparison {n}");
            // moves of an unpositioned iterator do nothing; a seek positions it again
            it.next();
            it.prev();
            assert!(!it.valid());
            it.seek(key(150));
            assert_eq!(it.key(), Some(&key(150)[..]), "{name}, panic at comparison {n}");
            assert_eq!(it.value(), Some(&val(150)[..]));
            it.next();
            assert_eq!(it.key(), Some(&key(151)[..]));
            it.seek_for_prev(key(399));
            assert_eq!(it.key(), Some(&key(399)[..]));
            it.status().unwrap();
        }
        assert!(panics > 0, "{name}: no panic");
    }
    assert_eq!(dump(&db).len(), 400);
}

/// Bytewise order, but panics in the DB's background threads while armed.
struct BackgroundPanicky(Arc<AtomicBool>);
impl shale::comparator::Comparator for BackgroundPanicky {
    fn name(&self) -> &str {
        "test.BackgroundPanickyBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        let bg = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("shale-bg-"));
        if bg && self.0.load(SeqCst) {
            panic!("comparator bug in the background");
        }
        a.cmp(b)
    }
}

/// The background thread's first comparison after auto compactions are turned on is the
/// compaction picker's: its panic becomes the DB's background error (the wait for compactions
/// and later writes fail with it) instead of ending the thread and leaving them waiting.
#[test]
fn a_comparator_panic_while_picking_a_compaction_is_a_background_error() {
    let fs = MemFs::new();
    let armed = Arc::new(AtomicBool::new(false));
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    o.set_write_buffer_size(1 << 20);
    o.set_custom_comparator(Arc::new(BackgroundPanicky(armed.clone())));
    let db = Arc::new(DB::open(&o, dir()).unwrap());
    for round in 0..5u64 {
        for i in (0..500u64).filter(|i| i % 5 == round) {
            db.put(key(i), val(i)).unwrap();
        }
        db.flush().unwrap();
        if round == 0 {
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
    }
    assert_eq!(level_files(&db)[0], 4);
    armed.store(true, SeqCst);
    db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
    let (tx, rx) = mpsc::channel();
    let d = db.clone();
    let waiter = std::thread::spawn(move || tx.send(d.wait_for_compact(&Default::default())).unwrap());
    let e = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("wait_for_compact hung after a panic in the background")
        .expect_err("the picker's panic is the background error");
    match &e {
        Error::Background(b) => match &**b {
            Error::Panic { context, .. } => assert_eq!(context, "compaction picking", "{e}"),
            other => panic!("expected a panic, got {other}"),
        },
        other => panic!("expected a background error, got {other}"),
    }
    assert!(db.put(b"later", b"x").unwrap_err().is_panic());
    // Every write is there after a reopen with the comparator fixed.
    armed.store(false, SeqCst);
    waiter.join().unwrap();
    drop(Arc::into_inner(db).expect("the only handle left"));
    let db = DB::open(&o, dir()).unwrap();
    let got = dump(&db);
    assert_eq!(got.len(), 500);
    assert_eq!(got.get(&key(123)), Some(&val(123)));
}

/// A manual compaction whose comparator panics at any point (picking, the job's bookkeeping,
/// the merge) leaves no file marked as being compacted: once resumed and fixed, automatic
/// compactions take the same L0 files.
#[test]
fn a_comparator_panic_in_a_manual_compaction_leaves_its_files_compactable() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    o.set_write_buffer_size(1 << 20);
    o.set_custom_comparator(Arc::new(CountdownComparator));
    let db = DB::open(&o, dir()).unwrap();
    let mut panics = 0;
    for n in 1..40u64 {
        for round in 0..2u64 {
            for i in (0..100u64).filter(|i| i % 2 == round) {
                db.put(key(i), val(n * 1000 + i)).unwrap();
            }
            db.flush().unwrap();
        }
        assert_eq!(level_files(&db)[0], 2);
        arm(n);
        let r = db.compact_range(None::<&[u8]>, None::<&[u8]>);
        arm(0);
        match r {
            Ok(()) => continue,
            Err(e) => assert!(e.is_panic(), "{e}"),
        }
        panics += 1;
        db.resume().unwrap();
        // The L0 files are at the trigger: an automatic compaction must take them.
        db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        assert_eq!(level_files(&db)[0], 0, "panic at comparison {n}: L0 left uncompacted");
        db.set_options(&[("disable_auto_compactions", "true")]).unwrap();
        assert_eq!(db.get(key(7)).unwrap(), Some(val(n * 1000 + 7)));
    }
    assert!(panics > 3, "{panics} panics");
}

/// A comparator panic while a transaction validates a freshly locked key against its snapshot
/// releases the lock: after the panicking transaction is dropped, another one takes it at once.
#[test]
fn a_comparator_panic_in_get_for_update_releases_the_lock() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_custom_comparator(Arc::new(CountdownComparator));
    let db: shale::TransactionDB =
        shale::TransactionDB::open(&o, &shale::TransactionDBOptions::default(), dir()).unwrap();
    db.put(key(1), val(1)).unwrap();
    let mut to = shale::TransactionOptions::new();
    to.set_lock_timeout(100);
    let t1 = db.transaction_opt(&shale::WriteOptions::default(), &to);
    t1.set_snapshot().unwrap();
    // The key is locked, then checked against the snapshot: the check's first comparison panics.
    arm(1);
    let r = catch_unwind(AssertUnwindSafe(|| t1.get_for_update(key(1), true)));
    arm(0);
    assert!(r.is_err(), "the comparator panicked");
    t1.rollback().unwrap();
    drop(t1);
    let t2 = db.transaction_opt(&shale::WriteOptions::default(), &to);
    assert_eq!(t2.get_for_update(key(1), true).unwrap(), Some(val(1)));
    t2.put(key(1), b"t2").unwrap();
    t2.commit().unwrap();
    assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&b"t2"[..]));
}

/// A comparator panic while a prepare checks the batch's keys leaves the transaction as it was
/// (not committing): past its expiration its locks are taken over as any expired
/// transaction's, and it can only roll back.
#[test]
fn a_comparator_panic_in_prepare_leaves_the_locks_of_an_expired_transaction_stealable() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_custom_comparator(Arc::new(CountdownComparator));
    let db: shale::TransactionDB =
        shale::TransactionDB::open(&o, &shale::TransactionDBOptions::default(), dir()).unwrap();
    let mut to = shale::TransactionOptions::new();
    to.set_expiration(1000);
    let t1 = db.transaction_opt(&shale::WriteOptions::default(), &to);
    t1.set_name(b"t1").unwrap();
    t1.put(key(1), b"t1").unwrap();
    arm(1);
    let r = catch_unwind(AssertUnwindSafe(|| t1.prepare()));
    arm(0);
    assert!(r.is_err(), "the key check panicked");
    // t1 expires while holding the lock; t2 waits for that and takes the lock over.
    let mut to2 = shale::TransactionOptions::new();
    to2.set_lock_timeout(30_000);
    let t2 = db.transaction_opt(&shale::WriteOptions::default(), &to2);
    t2.put(key(1), b"t2").unwrap();
    t2.commit().unwrap();
    assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&b"t2"[..]));
    assert_eq!(t1.prepare().unwrap_err().kind(), shale::ErrorKind::Expired);
    drop(t1);
    assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&b"t2"[..]));
}

/// In prefix mode only the user's seeks may skip sources by their prefix filters. A comparator
/// panic inside such a seek must not leave the filtering on for the iterator's internal seeks:
/// `seek_to_last` under an upper bound seeks to the bound internally, and a filtered seek there
/// skips the table (no key has the bound's prefix) and lands past the bound.
#[test]
fn a_comparator_panic_in_a_prefix_seek_leaves_internal_seeks_unfiltered() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_custom_comparator(Arc::new(CountdownComparator));
    o.set_prefix_extractor(shale::slice_transform::new_fixed_prefix_transform(1));
    let mut bbo = o.get_block_based_options();
    bbo.set_bloom_filter(10.0, false);
    o.set_block_based_table_factory(&bbo);
    let db = DB::open(&o, dir()).unwrap();
    for k in [&b"a1"[..], b"a2", b"c1", b"c2"] {
        db.put(k, k).unwrap();
    }
    db.flush().unwrap();
    let mut ro = shale::ReadOptions::default();
    ro.set_iterate_upper_bound(b"b".to_vec());
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_last();
    assert_eq!(it.key(), Some(&b"a2"[..]));
    let mut panics = 0;
    for n in 1..20 {
        arm(n);
        let r = catch_unwind(AssertUnwindSafe(|| it.seek(b"a")));
        arm(0);
        if r.is_ok() {
            continue;
        }
        panics += 1;
        it.seek_to_last();
        assert_eq!(it.key(), Some(&b"a2"[..]), "panic at comparison {n}");
        it.status().unwrap();
    }
    assert!(panics > 0);
}

/// A comparator panic anywhere in a range deletion's write (checking the range, inserting,
/// fragmenting the memtable's tombstones when the group finishes) fails that write and never
/// hangs the write path: the next write returns, and after a reopen with the comparator fixed
/// every acknowledged write is there.
#[test]
fn a_comparator_panic_in_a_range_deletion_never_hangs_the_write_path() {
    let mut panics = 0;
    for n in 1..40u64 {
        let fs = MemFs::new();
        let mut o = mem_opts(&fs);
        o.set_custom_comparator(Arc::new(CountdownComparator));
        let (tx, rx) = mpsc::channel();
        let o2 = o.clone();
        let writer = std::thread::spawn(move || {
            let db = DB::open(&o2, dir()).unwrap();
            for i in 0..20 {
                db.put(key(i), val(i)).unwrap();
            }
            db.delete_range(key(0), key(2)).unwrap();
            arm(n);
            let r = catch_unwind(AssertUnwindSafe(|| db.delete_range(key(5), key(10))));
            arm(0);
            let deleted = matches!(r, Ok(Ok(())));
            let panicked = match r {
                Ok(Ok(())) => false,
                Ok(Err(e)) => e.is_panic(),
                Err(_) => true,
            };
            // Returns (an error once the write path is stopped), never waits for a lost group.
            let later = db.put(b"later", b"x");
            tx.send((deleted, panicked, later.is_ok())).unwrap();
        });
        let (deleted, panicked, later_ok) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("panic at comparison {n}: a write hung"));
        writer.join().unwrap();
        assert!(deleted || panicked, "panic at comparison {n}: neither done nor a panic");
        panics += panicked as u32;
        let db = DB::open(&o, dir()).unwrap();
        let got = dump(&db);
        // The failed deletion may be in the WAL (then replayed whole) or not at all.
        let gone = !got.contains_key(&key(5));
        assert!(gone || !deleted, "panic at comparison {n}");
        for i in 2..20 {
            let want_gone = gone && (5..10).contains(&i);
            assert_eq!(
                !got.contains_key(&key(i)),
                want_gone,
                "panic at comparison {n}: key {i}"
            );
        }
        if later_ok {
            assert!(got.contains_key(&b"later"[..]), "panic at comparison {n}");
        }
    }
    assert!(panics > 3, "{panics} panics");
}
