//! A panic in a user callback (comparator, merge operator, prefix extractor) caught by the
//! engine or by the caller leaves no state lost or inconsistent: iterators are invalid until
//! repositioned, locks are released, background work reports an error instead of stopping.

mod common;

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use common::*;
use shale::{MemFs, Options, DB};

thread_local! {
    /// Comparisons left on this thread before the comparator panics (0: never).
    static COUNTDOWN: Cell<u64> = const { Cell::new(0) };
}

/// Panic at the `n`-th comparison made by this thread from now on (0: disarm).
fn arm(n: u64) {
    COUNTDOWN.with(|c| c.set(n));
}

/// Bytewise order, but panics on the comparison that counts this thread's countdown down to
/// zero (a buggy user comparator). Other threads (flushes, compactions) are not affected.
struct CountdownComparator;
impl shale::Comparator for CountdownComparator {
    fn name(&self) -> &str {
        "test.CountdownBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        COUNTDOWN.with(|c| match c.get() {
            0 => {}
            1 => {
                c.set(0);
                panic!("comparator bug");
            }
            n => c.set(n - 1),
        });
        a.cmp(b)
    }
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
