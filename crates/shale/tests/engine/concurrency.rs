//! Concurrency: writers on disjoint key ranges, readers with gets, scans and snapshots, while
//! flushes and compactions run; iterators that outlive the DB handle or the files they read;
//! the LOCK file within and across processes.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use common::*;
use shale::fs::testing::MemFs;
use shale::fs::PosixFs;
use shale::{Error, IteratorMode, Options, ReadOptions, WriteBatch, DB};

const WRITERS: u64 = 8;
const READERS: u64 = 4;

fn tkey(t: u64, i: u64) -> Vec<u8> {
    format!("t{t}-{i:05}").into_bytes()
}

/// Values name their key, so a reader can tell a value from another key's.
fn tval(k: &[u8], version: u64) -> Vec<u8> {
    let mut v = k.to_vec();
    v.extend_from_slice(format!(":{version}:").as_bytes());
    v.resize(v.len() + (version % 50) as usize, b'x');
    v
}

#[track_caller]
fn check_value(k: &[u8], v: &[u8]) {
    assert!(
        v.starts_with(k) && v.get(k.len()) == Some(&b':'),
        "value {:?} for key {:?}",
        String::from_utf8_lossy(v),
        String::from_utf8_lossy(k)
    );
}

/// Scan with `ro`: sorted, no duplicates, values belong to their keys.
fn checked_scan(db: &DB, ro: ReadOptions) -> Model {
    let mut m = Model::new();
    let mut prev: Option<Vec<u8>> = None;
    for r in db.iterator_opt(IteratorMode::Start, ro) {
        let (k, v) = r.unwrap();
        if let Some(p) = &prev {
            assert!(
                p.as_slice() < &*k,
                "scan not strictly sorted: {:?} then {:?}",
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(&k)
            );
        }
        check_value(&k, &v);
        prev = Some(k.to_vec());
        m.insert(k.to_vec(), v.to_vec());
    }
    m
}

#[test]
fn writers_readers_flushes_compactions_and_snapshots() {
    let fs = MemFs::new();
    let mut opts = mem_opts(&fs);
    opts.set_write_buffer_size(8 << 10);
    opts.set_max_background_jobs(3);
    let db = Arc::new(DB::open(&opts, dir()).unwrap());
    let models: Arc<Vec<Mutex<Model>>> = Arc::new((0..WRITERS).map(|_| Mutex::new(Model::new())).collect());
    // thread 0 writes keys 0, 1, 2, ... in order and never deletes: any consistent view holds a
    // prefix of them
    let seq_done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for t in 0..WRITERS {
        let (db, models, seq_done) = (db.clone(), models.clone(), seq_done.clone());
        handles.push(thread::spawn(move || {
            let mut rng = Rng::new(t + 1);
            for n in 0..1500u64 {
                if t == 0 {
                    let k = tkey(0, n);
                    let v = tval(&k, n);
                    db.put(&k, &v).unwrap();
                    models[0].lock().unwrap().insert(k.clone(), v.clone());
                    seq_done.store(n + 1, Ordering::Release);
                    assert_eq!(db.get(&k).unwrap(), Some(v));
                    continue;
                }
                let mut m = models[t as usize].lock().unwrap();
                match rng.below(10) {
                    0..=5 => {
                        let k = tkey(t, rng.below(400));
                        let v = tval(&k, n);
                        db.put(&k, &v).unwrap();
                        m.insert(k.clone(), v.clone());
                        assert_eq!(db.get(&k).unwrap(), Some(v), "read-your-write");
                    }
                    6 | 7 => {
                        let k = tkey(t, rng.below(400));
                        db.delete(&k).unwrap();
                        m.remove(&k);
                        assert_eq!(db.get(&k).unwrap(), None, "read-your-delete");
                    }
                    _ => {
                        let mut b = WriteBatch::new();
                        let mut keys = Vec::new();
                        for _ in 0..1 + rng.below(8) {
                            let k = tkey(t, rng.below(400));
                            if rng.below(3) == 0 {
                                b.delete(&k);
                                m.remove(&k);
                            } else {
                                let v = tval(&k, n);
                                b.put(&k, &v);
                                m.insert(k.clone(), v);
                            }
                            keys.push(k);
                        }
                        db.write(b).unwrap();
                        for k in keys {
                            assert_eq!(db.get(&k).unwrap().as_ref(), m.get(&k), "read-your-batch");
                        }
                    }
                }
                if n % 100 == 0 {
                    // this thread's whole range, as acknowledged so far
                    let mut ro = ReadOptions::default();
                    ro.set_iterate_lower_bound(format!("t{t}-"));
                    ro.set_iterate_upper_bound(format!("t{t}."));
                    let got = checked_scan(&db, ro);
                    assert!(got == *m, "thread {t}: own range differs from its acknowledged writes");
                }
            }
        }));
    }
    let mut readers = Vec::new();
    for r in 0..READERS {
        let (db, stop, seq_done) = (db.clone(), stop.clone(), seq_done.clone());
        readers.push(thread::spawn(move || {
            let mut rng = Rng::new(100 + r);
            let mut scans = 0;
            while !stop.load(Ordering::Acquire) || scans < 3 {
                // gets: values belong to their keys; thread 0's finished keys are all there
                for _ in 0..50 {
                    let t = rng.below(WRITERS);
                    let k = tkey(t, rng.below(400));
                    if let Some(v) = db.get(&k).unwrap() {
                        check_value(&k, &v);
                    }
                }
                let done = seq_done.load(Ordering::Acquire);
                if done > 0 {
                    let i = rng.below(done);
                    assert!(
                        db.get(tkey(0, i)).unwrap().is_some(),
                        "acknowledged t0 key {i} not visible"
                    );
                }
                // a snapshot holds a prefix of thread 0's sequence, and is stable
                // (acknowledged before the snapshot is taken: loading the counter after it races
                // with a write acknowledged in between)
                let before = seq_done.load(Ordering::Acquire);
                let snap = db.snapshot();
                let mut ro = ReadOptions::default();
                ro.set_snapshot(&snap);
                let all = checked_scan(&db, ro.clone());
                let t0: Vec<&Vec<u8>> = all.keys().filter(|k| k.starts_with(b"t0-")).collect();
                for (i, k) in t0.iter().enumerate() {
                    assert_eq!(**k, tkey(0, i as u64), "snapshot sees a hole in thread 0's writes");
                }
                assert!(t0.len() as u64 >= before, "snapshot misses acknowledged writes");
                thread::yield_now();
                let again = checked_scan(&db, ro);
                assert!(again == all, "a snapshot's view changed");
                scans += 1;
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Release);
    for h in readers {
        h.join().unwrap();
    }
    let mut all = Model::new();
    for m in models.iter() {
        all.extend(m.lock().unwrap().clone());
    }
    assert!(checked_scan(&db, ReadOptions::default()) == all);
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(checked_scan(&db, ReadOptions::default()) == all);
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert!(checked_scan(&db, ReadOptions::default()) == all, "after reopen");
    for (k, v) in &all {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn iterator_outlives_db_handle() {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(0);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    for i in 0..2000 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
        if i == 700 {
            db.flush().unwrap();
        }
    }
    // detached from the DB's lifetime: it holds what it reads by itself
    let mut raw = shale::DBRawIterator::from(db.raw_iterator());
    let it = db.iterator(IteratorMode::Start);
    drop(db);
    let got: Model = it.map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap()).collect();
    assert!(got == m);
    raw.seek_to_last();
    let mut n = 0;
    while raw.valid() {
        n += 1;
        raw.prev();
    }
    raw.status().unwrap();
    assert_eq!(n, m.len());
    // the DB can be reopened while the old iterator is still alive
    let db = DB::open(&opts, dir()).unwrap();
    assert!(dump(&db) == m);
    raw.seek(kv(5).0);
    assert_eq!(raw.key(), Some(&kv(5).0[..]));
}

#[test]
fn files_pinned_by_an_iterator_survive_compaction() {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(0);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    for i in 0..1500 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let before: Vec<String> = all_with(&fs, dir(), ".sst")
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    // rewrite everything and compact: the old tables are no longer live
    for i in 0..1500 {
        db.put(kv(i).0, b"new").unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let live: Vec<String> = all_with(&fs, dir(), ".sst")
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        before.iter().any(|b| live.contains(b)),
        "files read by the iterator were deleted"
    );
    let mut got = Model::new();
    while it.valid() {
        got.insert(it.key().unwrap().to_vec(), it.value().unwrap().to_vec());
        it.next();
    }
    it.status().unwrap();
    assert!(got == m, "the iterator's view changed under compaction");
    drop(it);
    // once the iterator is gone the obsolete files go too
    db.put(b"zz", b"1").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let after: Vec<String> = all_with(&fs, dir(), ".sst")
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        !before.iter().any(|b| after.contains(b)),
        "obsolete files kept after the iterator was dropped: {before:?} {after:?}"
    );
}

#[test]
fn second_open_in_process_is_refused() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, dir()).unwrap();
    // As RocksDB: an I/O error naming the LOCK file.
    let held = |r: Result<(), Error>| match r {
        Err(e) => e.is_io() && e.to_string().contains("/LOCK:"),
        Ok(()) => false,
    };
    assert!(held(DB::open(&opts, dir()).map(drop)));
    assert!(held(DB::destroy(&opts, dir())));
    drop(db);
    DB::open(&opts, dir()).unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("db");
    let popts = {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(PosixFs));
        o
    };
    let db = DB::open(&popts, &p).unwrap();
    db.put(b"k", b"v").unwrap();
    assert!(held(DB::open(&popts, &p).map(drop)));
    assert!(held(DB::destroy(&popts, &p)));
    drop(db);
    let db = DB::open(&popts, &p).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

const CHILD_ENV: &str = "SHALE_TEST_LOCK_CHILD_DB";

/// Child side of `second_open_from_another_process_is_refused`: a no-op unless the parent set
/// the variable; then it opens the DB and exits 0 (opened), 3 (refused: an I/O error naming the
/// LOCK file) or 4 (other error).
#[test]
fn lock_child_process() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let opts = {
        let mut o = Options::default();
        o.set_env(Arc::new(PosixFs));
        o
    };
    let code = match DB::open(&opts, &dir) {
        Ok(db) => {
            let ok = db.get(b"k").ok().flatten().as_deref() == Some(&b"v"[..]);
            drop(db);
            if ok {
                0
            } else {
                5
            }
        }
        Err(e) if e.is_io() && e.to_string().contains("/LOCK:") => 3,
        Err(_) => 4,
    };
    std::process::exit(code);
}

fn child_open(dir: &std::path::Path) -> i32 {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "concurrency::lock_child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

#[test]
fn second_open_from_another_process_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("db");
    let popts = {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(PosixFs));
        o
    };
    let db = DB::open(&popts, &p).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(child_open(&p), 3, "another process opened a locked DB");
    // read-only opens take no lock (as RocksDB)
    let ro = DB::open_for_read_only(&popts, &p, false).unwrap();
    assert_eq!(ro.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(ro);
    drop(db);
    assert_eq!(child_open(&p), 0, "the lock was not released by drop");
    // and the child released it on exit
    let db = DB::open(&popts, &p).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// A file system whose MANIFEST syncs or directory syncs can be held (like a slow fsync):
/// the test checks that the DB mutex is not held meanwhile.
mod slow_sync {
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use parking_lot::{Condvar, Mutex};
    use shale::fs::testing::MemFs;
    use shale::fs::FileSystem;
    use shale::fs::ForwardingFs;
    use shale::fs::WritableFile;

    #[derive(Default)]
    pub struct Gate {
        pub hold_manifest_sync: AtomicBool,
        pub hold_dir_sync: AtomicBool,
        held: Mutex<bool>,
        cv: Condvar,
    }
    impl Gate {
        fn wait(&self) {
            let mut held = self.held.lock();
            *held = true;
            self.cv.notify_all();
            // Bounded, so a broken engine fails the test instead of hanging it.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while *held && std::time::Instant::now() < deadline {
                self.cv.wait_until(&mut held, deadline);
            }
        }
        /// Wait until an I/O is being held.
        pub fn wait_held(&self) {
            let mut held = self.held.lock();
            while !*held {
                self.cv.wait_for(&mut held, Duration::from_secs(20));
            }
        }
        pub fn release(&self) {
            self.hold_manifest_sync.store(false, Ordering::SeqCst);
            self.hold_dir_sync.store(false, Ordering::SeqCst);
            *self.held.lock() = false;
            self.cv.notify_all();
        }
    }

    pub struct SlowFs {
        pub inner: MemFs,
        pub gate: Arc<Gate>,
    }
    struct SlowFile {
        inner: Box<dyn WritableFile>,
        manifest: bool,
        gate: Arc<Gate>,
    }
    impl WritableFile for SlowFile {
        fn append(&mut self, d: &[u8]) -> shale::error::Result<()> {
            self.inner.append(d)
        }
        fn flush(&mut self) -> shale::error::Result<()> {
            self.inner.flush()
        }
        fn sync(&mut self) -> shale::error::Result<()> {
            if self.manifest && self.gate.hold_manifest_sync.swap(false, Ordering::SeqCst) {
                self.gate.wait();
            }
            self.inner.sync()
        }
        fn size(&self) -> u64 {
            self.inner.size()
        }
    }
    impl ForwardingFs for SlowFs {
        fn inner(&self) -> &dyn FileSystem {
            &self.inner
        }
        fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
            let manifest = p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST"));
            Ok(Box::new(SlowFile {
                inner: self.inner.new_writable(p)?,
                manifest,
                gate: self.gate.clone(),
            }))
        }
        fn sync_dir(&self, d: &Path) -> shale::error::Result<()> {
            if self.gate.hold_dir_sync.swap(false, Ordering::SeqCst) {
                self.gate.wait();
            }
            self.inner.sync_dir(d)
        }
    }
}

/// Runs `f` on another thread; true if it finished within the time limit.
fn finishes_soon(f: impl FnOnce() + Send + 'static) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok()
}

/// A DB on a [`slow_sync::SlowFs`] (no automatic compactions, 1 MiB memtables) and its gate.
fn slow_sync_db() -> (Arc<slow_sync::Gate>, Arc<DB>) {
    let gate = Arc::new(slow_sync::Gate::default());
    let fs = Arc::new(slow_sync::SlowFs {
        inner: MemFs::new(),
        gate: gate.clone(),
    });
    let mut o = small_opts(fs);
    o.set_disable_auto_compactions(true);
    o.set_write_buffer_size(1 << 20);
    (gate, Arc::new(DB::open(&o, dir()).unwrap()))
}

/// Runs `db.flush()` while the sync that `hold` arms is held, and `meanwhile` during it; true if
/// `meanwhile` finished while the sync was still held.
fn during_held_flush(
    gate: &slow_sync::Gate,
    db: &Arc<DB>,
    hold: &std::sync::atomic::AtomicBool,
    meanwhile: impl FnOnce() + Send + 'static,
) -> bool {
    hold.store(true, Ordering::SeqCst);
    let flusher = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    gate.wait_held();
    let ok = finishes_soon(meanwhile);
    gate.release();
    flusher.join().unwrap().unwrap();
    ok
}

#[test]
fn manifest_fsync_does_not_hold_the_db_mutex() {
    let (gate, db) = slow_sync_db();
    for i in 0..100u64 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
    }
    // A flush whose MANIFEST fsync takes "forever". Meanwhile: a property that takes the DB
    // mutex, and writes (which check the DB state under the mutex) complete.
    let d = db.clone();
    let ok = during_held_flush(&gate, &db, &gate.hold_manifest_sync, move || {
        d.property_value("rocksdb.num-running-flushes").unwrap();
        d.put(b"during-manifest-sync", b"v").unwrap();
    });
    assert!(
        ok,
        "a write or a property read waited for the MANIFEST fsync (DB mutex held)"
    );
    assert_eq!(db.get(b"during-manifest-sync").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.property_int_value("rocksdb.num-files-at-level0").unwrap(), Some(1));
}

#[test]
fn wal_switch_does_not_hold_the_db_mutex() {
    let (gate, db) = slow_sync_db();
    db.put(b"a", b"1").unwrap();
    // flush() switches the memtable and the WAL; the new WAL's directory sync is held.
    let d = db.clone();
    let ok = during_held_flush(&gate, &db, &gate.hold_dir_sync, move || {
        d.property_value("rocksdb.num-running-compactions").unwrap();
        d.property_value("rocksdb.stats").unwrap();
    });
    assert!(ok, "a reader waited for the WAL switch's fsync (DB mutex held)");
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}

/// Writers commit batches of 8 keys that all carry the batch's round; readers check through
/// snapshots and iterators that they never see part of a batch, while groups insert their
/// followers' batches in parallel (allow_concurrent_memtable_write, the default) and memtables
/// switch and flush underneath.
#[test]
fn groups_inserted_in_parallel_are_atomic_to_readers() {
    use std::sync::atomic::AtomicBool;
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 10);
    let db = Arc::new(DB::open(&o, dir()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    const W: u64 = 4;
    let writers: Vec<_> = (0..W)
        .map(|t| {
            let db = db.clone();
            thread::spawn(move || {
                for round in 1..=1500u64 {
                    let mut b = WriteBatch::new();
                    for j in 0..8u64 {
                        b.put(format!("w{t}-k{j}"), round.to_be_bytes());
                    }
                    db.write(b).unwrap();
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (db, stop) = (db.clone(), stop.clone());
            thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let snap = db.snapshot();
                    let t = (checks + r) % W;
                    let mut ro = ReadOptions::default();
                    ro.set_snapshot(&snap);
                    let vals: Vec<_> = (0..8u64)
                        .map(|j| db.get_opt(format!("w{t}-k{j}"), &ro).unwrap())
                        .collect();
                    assert!(
                        vals.iter().all(|v| *v == vals[0]),
                        "a snapshot saw part of a batch of writer {t}: {vals:?}"
                    );
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    for t in 0..W {
        for j in 0..8u64 {
            assert_eq!(
                db.get(format!("w{t}-k{j}")).unwrap().as_deref(),
                Some(&1500u64.to_be_bytes()[..])
            );
        }
    }
    assert_eq!(db.latest_sequence_number(), W * 1500 * 8);
}
