//! The three ways write groups pass from the WAL to the memtables: one group after
//! the other (the default), `enable_pipelined_write` (the next group's WAL write overlaps this
//! group's inserts, publication stays in order) and `unordered_write` (a group is visible right
//! after its WAL write). A comparator that holds one insert inside the memtable shows which
//! stage a second writer can reach meanwhile.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::common;

use common::wal_bytes_on_disk;
use shale::comparator::Comparator;
use shale::{Options, ReadOptions, WriteBatch, DB};

/// Bytewise order, but a comparison involving the key `blocked` waits (once armed) until the
/// gate opens: the writer of `blocked` stops inside its memtable insert.
#[derive(Default)]
struct Gate {
    armed: AtomicBool,
    entered: AtomicBool,
    open: Mutex<bool>,
    cv: Condvar,
}

struct GateCmp(Arc<Gate>);

impl Comparator for GateCmp {
    fn name(&self) -> &str {
        "shale.test.GateComparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> CmpOrdering {
        let g = &self.0;
        if (a == b"blocked" || b == b"blocked") && g.armed.load(Ordering::SeqCst) {
            g.entered.store(true, Ordering::SeqCst);
            let mut open = g.open.lock().unwrap();
            while !*open {
                open = g.cv.wait(open).unwrap();
            }
        }
        a.cmp(b)
    }
}

impl Gate {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

/// Poll `f` for up to 20 s (a deadline against a hang, not a speed check).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(20), "never happened: {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Default,
    Pipelined,
    Unordered,
}

/// Writer A's insert of `blocked` is held in the memtable; writer B then puts `other`.
fn hold_one_insert(mode: Mode) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("db");
    let gate = Arc::new(Gate::default());
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_custom_comparator(Arc::new(GateCmp(gate.clone())));
    o.set_enable_pipelined_write(mode == Mode::Pipelined);
    o.set_unordered_write(mode == Mode::Unordered);
    let db = Arc::new(DB::open(&o, &path).unwrap());
    db.put(b"a", b"0").unwrap();
    db.put(b"zzz", b"0").unwrap();
    let seq0 = db.latest_sequence_number();
    gate.armed.store(true, Ordering::SeqCst);

    let a = {
        let db = db.clone();
        thread::spawn(move || db.put(b"blocked", b"1"))
    };
    eventually("writer A reaches its memtable insert", || {
        gate.entered.load(Ordering::SeqCst)
    });
    let wal_after_a = wal_bytes_on_disk(&path);
    let (tx, rx) = mpsc::channel();
    let b = {
        let db = db.clone();
        thread::spawn(move || {
            let r = db.put(b"other", b"2");
            tx.send(()).unwrap();
            r
        })
    };
    let peek = |k: &[u8]| db.get_opt(k, &ReadOptions::default()).unwrap();
    match mode {
        Mode::Default => {
            // B's group waits for A's to end before its WAL write.
            thread::sleep(Duration::from_millis(300));
            assert_eq!(
                wal_bytes_on_disk(&path),
                wal_after_a,
                "B reached the WAL while A's group was inserting"
            );
            assert!(rx.try_recv().is_err(), "B returned before A's group ended");
            assert_eq!(db.latest_sequence_number(), seq0);
        }
        Mode::Pipelined => {
            // B's WAL write overlaps A's insert, but B is published (and returns) only after A.
            eventually("B's record reaches the WAL during A's insert", || {
                wal_bytes_on_disk(&path) > wal_after_a
            });
            thread::sleep(Duration::from_millis(100));
            assert!(
                rx.try_recv().is_err(),
                "B returned before the group before it was published"
            );
            assert_eq!(peek(b"other"), None, "B visible before A's group");
            assert_eq!(db.latest_sequence_number(), seq0, "a group published out of order");
        }
        Mode::Unordered => {
            // B is visible and returns at once; A's sequence number is already published too,
            // though its key is not in the memtable yet (RocksDB's documented trade-off).
            eventually("B returns while A is still inserting", || rx.try_recv().is_ok());
            assert_eq!(peek(b"other").as_deref(), Some(&b"2"[..]));
            assert_eq!(db.latest_sequence_number(), seq0 + 2);
        }
    }
    gate.release();
    a.join().unwrap().unwrap();
    b.join().unwrap().unwrap();
    assert_eq!(peek(b"blocked").as_deref(), Some(&b"1"[..]));
    assert_eq!(peek(b"other").as_deref(), Some(&b"2"[..]));
    assert_eq!(db.latest_sequence_number(), seq0 + 2);
    drop(db);
    // Both writes are in the WAL, in sequence order.
    let db = DB::open(&o, &path).unwrap();
    assert_eq!(db.get(b"blocked").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"other").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.latest_sequence_number(), seq0 + 2);
}

#[test]
fn default_mode_runs_groups_one_after_the_other() {
    hold_one_insert(Mode::Default);
}

#[test]
fn pipelined_write_overlaps_the_wal_write_with_earlier_inserts_and_publishes_in_order() {
    hold_one_insert(Mode::Pipelined);
}

#[test]
fn unordered_write_publishes_at_the_wal_write() {
    hold_one_insert(Mode::Unordered);
}

/// Many writers committing 8-key batches in every mode: readers at a snapshot never see part of
/// a batch (except unordered_write, which does not promise it), every write lands once, and the
/// sequence numbers have no gap.
#[test]
fn many_writers_in_every_mode_lose_nothing() {
    for mode in [Mode::Default, Mode::Pipelined, Mode::Unordered] {
        let fs = shale::fs::testing::MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs));
        o.set_write_buffer_size(64 << 10);
        o.set_enable_pipelined_write(mode == Mode::Pipelined);
        o.set_unordered_write(mode == Mode::Unordered);
        let db = Arc::new(DB::open(&o, "/db").unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        const W: u64 = 4;
        const ROUNDS: u64 = 800;
        let writers: Vec<_> = (0..W)
            .map(|t| {
                let db = db.clone();
                thread::spawn(move || {
                    for round in 1..=ROUNDS {
                        let mut b = WriteBatch::new();
                        for j in 0..8u64 {
                            b.put(format!("w{t}-k{j}"), round.to_be_bytes());
                        }
                        db.write(b).unwrap();
                        // Once a write returns, all of it is readable, in every mode.
                        let v = db.get(format!("w{t}-k7")).unwrap().unwrap();
                        assert!(u64::from_be_bytes(v[..8].try_into().unwrap()) >= round);
                    }
                })
            })
            .collect();
        let reader = {
            let (db, stop) = (db.clone(), stop.clone());
            thread::spawn(move || {
                let mut torn = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let snap = db.snapshot();
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(&snap);
                    let vals: Vec<_> = (0..8u64)
                        .map(|j| db.get_opt(format!("w1-k{j}"), &ro).unwrap())
                        .collect();
                    if vals.iter().any(|v| *v != vals[0]) {
                        torn += 1;
                    }
                }
                torn
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        let torn = reader.join().unwrap();
        if mode != Mode::Unordered {
            assert_eq!(torn, 0, "{mode:?}: a snapshot saw part of a batch");
        }
        assert_eq!(db.latest_sequence_number(), W * ROUNDS * 8, "{mode:?}");
        for t in 0..W {
            for j in 0..8u64 {
                assert_eq!(
                    db.get(format!("w{t}-k{j}")).unwrap().as_deref(),
                    Some(&ROUNDS.to_be_bytes()[..]),
                    "{mode:?}"
                );
            }
        }
    }
}

fn open_err(o: &Options, path: std::path::PathBuf, what: &str) -> shale::Error {
    match DB::open(o, path) {
        Ok(_) => panic!("{what}"),
        Err(e) => e,
    }
}

#[test]
fn contradicting_write_modes_are_invalid_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_unordered_write(true);
    o.set_enable_pipelined_write(true);
    let e = open_err(&o, tmp.path().join("a"), "unordered + pipelined opened");
    assert!(e.to_string().contains("enable_pipelined_write"), "{e}");
    o.set_enable_pipelined_write(false);
    o.set_allow_concurrent_memtable_write(false);
    let e = open_err(&o, tmp.path().join("b"), "unordered without concurrent inserts opened");
    assert!(e.to_string().contains("allow_concurrent_memtable_write"), "{e}");
    // As RocksDB: atomic_flush refuses pipelined writes.
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_atomic_flush(true);
    o.set_enable_pipelined_write(true);
    let e = open_err(&o, tmp.path().join("c"), "atomic_flush + pipelined opened");
    assert!(e.to_string().contains("atomic_flush"), "{e}");
    o.set_enable_pipelined_write(false);
    DB::open(&o, tmp.path().join("c")).unwrap();
}
