//! Regression tests for bugs found by `shale stress`. Each test is named after the
//! bug it pins down; `docs/reliability.md` lists them.
#![allow(clippy::field_reassign_with_default)]

use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::fs::ForwardingFs;
use shale::fs::WritableFile;
use shale::{Options, WriteBatch, WriteOptions, DB};

use crate::common;
use common::crash_after::CrashAfter;

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

/// Found by `shale stress --seed=7 --disable_wal=-1` (a reopen lost keys): closing a DB dropped
/// the memtable holding writes made with `disable_wal`, where RocksDB flushes it at close.
#[test]
fn clean_close_keeps_writes_made_without_wal() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let wo = {
        let mut o = WriteOptions::default();
        o.set_sync(false);
        o.disable_wal(true);
        o
    };
    {
        let db = DB::open(&opts, "/db").unwrap();
        db.put_opt(b"a", b"1", &wo).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"b", b"2");
        b.delete(b"a");
        b.put(b"c", b"3");
        db.write_opt(b, &wo).unwrap();
        db.put(b"d", b"4").unwrap();
    }
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"4"[..]));
    // And the data is durable, not only in the OS: it was flushed to a synced table.
    drop(db);
    fs.power_loss();
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"3"[..]));
}

/// Found by `shale stress --crash_test` (kill point `other.syncdir`: counters held garbage after
/// a restart): recovery logged the tables it flushed from the WALs to the MANIFEST before it
/// advanced the log number, so a crash in between (e.g. at the directory sync after the new WAL
/// is created) replayed the same WALs again on top of those tables — every merge operand in them
/// applied twice. Now the recovered tables and the new log number go into one MANIFEST edit.
#[test]
fn recovery_interrupted_at_any_point_applies_each_wal_merge_once() {
    let mut crashes = 0;
    for budget in 1..200i64 {
        let fs = MemFs::new();
        let mut opts = mem_opts(&fs);
        opts.set_write_buffer_size(8192); // recovery flushes several times
        opts.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("uint64add").unwrap());
        {
            let db = DB::open(&opts, "/db").unwrap();
            for i in 0..300u64 {
                db.merge(format!("c{}", i % 20), 1u64.to_le_bytes()).unwrap();
                db.put(format!("p{i:04}"), [7u8; 40]).unwrap();
            }
            // Dropped without a flush: everything is in the WAL.
        }
        fs.process_crash();
        let b = Arc::new(std::sync::atomic::AtomicI64::new(budget));
        let mut o2 = opts.clone();
        o2.set_env(Arc::new(CrashAfter {
            inner: Arc::new(fs.clone()),
            budget: b.clone(),
        }));
        match DB::open(&o2, "/db") {
            Ok(db) => drop(db),
            Err(_) => crashes += 1,
        }
        fs.process_crash();
        let db = DB::open(&opts, "/db").unwrap();
        for c in 0..20 {
            let v = db
                .get(format!("c{c}"))
                .unwrap()
                .unwrap_or_else(|| panic!("budget {budget}: c{c} missing"));
            assert_eq!(
                u64::from_le_bytes(v[..8].try_into().unwrap()),
                15,
                "budget {budget}: counter c{c}"
            );
        }
        assert_eq!(
            db.get("p0299").unwrap().as_deref(),
            Some(&[7u8; 40][..]),
            "budget {budget}"
        );
    }
    assert!(crashes > 20, "the crash points were not reached ({crashes})");
}

fn files_per_level(db: &DB) -> Vec<usize> {
    (0..7)
        .map(|l| {
            db.property_value(&format!("rocksdb.num-files-at-level{l}"))
                .unwrap()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

/// Options with fixed level sizes, L0 compacting at 2 files and level targets starting at one
/// byte, and a DB at `/db` on `fs` whose only key `key` sank below L1 with them.
fn db_with_a_deep_key(fs: &MemFs, key: &[u8], value: &[u8]) -> Options {
    let mut o = mem_opts(fs);
    o.set_level_compaction_dynamic_level_bytes(false);
    o.set_level_zero_file_num_compaction_trigger(2);
    o.set_max_bytes_for_level_base(1);
    let db = DB::open(&o, "/db").unwrap();
    db.put(key, value).unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    o
}

/// Files in L0, in L1, and in all levels.
fn l0_l1_total(db: &DB) -> (usize, usize, usize) {
    let levels = files_per_level(db);
    (levels[0], levels[1], levels.iter().sum())
}

/// Found by `shale stress --crash_test --dynamic_levels=-2` (keys vanished during a run): a
/// compaction into a level with no deeper file under key `m` gave `m` sequence number 0, while
/// a range tombstone older than `m` but covering it stayed in the same output (it overlaps a
/// deeper file elsewhere, here `a`): the tombstone then hid `m`.
#[test]
fn zeroed_key_under_kept_range_tombstone() {
    let fs = MemFs::new();
    let o = db_with_a_deep_key(&fs, b"a", b"old");
    // A tombstone over [a, z), then a newer `m`, in two L0 files...
    let mut quiet = o.clone();
    quiet.set_disable_auto_compactions(true);
    let db = DB::open(&quiet, "/db").unwrap();
    db.delete_range(b"a", b"z").unwrap();
    db.flush().unwrap();
    db.put(b"m", b"new").unwrap();
    db.flush().unwrap();
    assert_eq!(l0_l1_total(&db), (2, 0, 3));
    drop(db);
    // ... compacted into L1, where `a` is deeper and nothing deeper is under `m`.
    let db = DB::open(&o, "/db").unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"new"[..]));
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"new"[..]));
}

/// Tears the next append to a WAL (`*.log`) when armed: half the bytes reach the file, then EIO.
struct TearWal {
    inner: MemFs,
    armed: Arc<std::sync::atomic::AtomicBool>,
}

struct TearWalFile {
    inner: Box<dyn WritableFile>,
    armed: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl WritableFile for TearWalFile {
    fn append(&mut self, d: &[u8]) -> shale::error::Result<()> {
        if let Some(a) = &self.armed {
            if a.swap(false, std::sync::atomic::Ordering::SeqCst) {
                self.inner.append(&d[..d.len() / 2])?;
                return Err(shale::Error::io("wal", std::io::Error::other("torn append")));
            }
        }
        self.inner.append(d)
    }
    fn flush(&mut self) -> shale::error::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> shale::error::Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl ForwardingFs for TearWal {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
        let is_wal = p.extension().is_some_and(|e| e == "log");
        Ok(Box::new(TearWalFile {
            inner: self.inner.new_writable(p)?,
            armed: is_wal.then(|| self.armed.clone()),
        }))
    }
}

/// Found by `shale stress --write_fault_one_in` (acknowledged keys missing after a later
/// reopen): a WAL append that failed half-way, right after a flush (empty memtable), was
/// followed by `resume()`, which switched the WAL only when the memtable held something — so the
/// next acknowledged writes went into the same WAL after the torn record, where recovery cannot
/// reach them. `resume()` now always starts a new WAL.
#[test]
fn resume_after_a_torn_wal_append_writes_to_a_new_wal() {
    for mode in [
        shale::DBRecoveryMode::PointInTime,
        shale::DBRecoveryMode::SkipAnyCorruptedRecord,
        shale::DBRecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let fs = MemFs::new();
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut o = mem_opts(&fs);
        o.set_env(Arc::new(TearWal {
            inner: fs.clone(),
            armed: armed.clone(),
        }));
        o.set_wal_recovery_mode(mode);
        let db = DB::open(&o, "/db").unwrap();
        db.put(b"a", b"1").unwrap();
        db.flush().unwrap();
        armed.store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(
            db.put(b"b", vec![b'x'; 1000]).is_err(),
            "the torn write reported success"
        );
        assert!(db.put(b"c", b"3").is_err(), "writes must stop after a WAL failure");
        db.resume().unwrap();
        db.put(b"d", b"4").unwrap();
        db.put(b"e", b"5").unwrap();
        drop(db);
        let db = DB::open(&o, "/db").unwrap_or_else(|e| panic!("{mode:?}: reopen: {e}"));
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]), "{mode:?}");
        assert_eq!(
            db.get(b"d").unwrap().as_deref(),
            Some(&b"4"[..]),
            "{mode:?}: acknowledged write lost"
        );
        assert_eq!(
            db.get(b"e").unwrap().as_deref(),
            Some(&b"5"[..]),
            "{mode:?}: acknowledged write lost"
        );
        assert_eq!(db.get(b"c").unwrap(), None, "{mode:?}");
    }
}

/// Found by `shale stress` run twice on one DB with the same seed (`--column_families=2`, FIFO
/// and leveled families, a single-deleted key back in the second run): the second run draws the
/// same value ids, so it puts again keys that the first one put and single-deleted. Put,
/// SingleDelete, Put, SingleDelete of one key is within RocksDB's contract (one Put since the
/// previous SingleDelete), but a compaction that met the second Put above the first
/// SingleDelete dropped that SingleDelete as hidden, though the Put it deletes was in a deeper
/// level (or an older L0 file): once the second SingleDelete cancelled the second Put, the first
/// Put was back. A SingleDelete under a newer entry now stays until it meets its Put or nothing
/// older can exist, as in RocksDB's compaction iterator.
#[test]
fn single_delete_under_a_second_put_still_deletes_the_first_put() {
    let fs = MemFs::new();
    let mut o = db_with_a_deep_key(&fs, b"k", b"first");
    // From here on L1's target is large: L0 compacts into L1 and nothing goes deeper.
    o.set_max_bytes_for_level_base(1 << 30);
    let db = DB::open(&o, "/db").unwrap();
    assert_eq!(l0_l1_total(&db), (0, 0, 1));
    db.single_delete(b"k").unwrap();
    db.flush().unwrap();
    db.put(b"k", b"second").unwrap();
    db.flush().unwrap();
    // L0 -> L1 meets the second Put above the first SingleDelete.
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0_l1_total(&db), (0, 1, 2));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"second"[..]));
    // The second SingleDelete cancels the second Put in the next L0 -> L1 compaction.
    db.single_delete(b"k").unwrap();
    db.flush().unwrap();
    db.put(b"other", b"x").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0_l1_total(&db), (0, 1, 2));
    assert_eq!(db.get(b"k").unwrap(), None);
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
    let mut it = db.iterator(shale::IteratorMode::Start);
    assert!(it.all(|kv| kv.unwrap().0.as_ref() != b"k"));
}
