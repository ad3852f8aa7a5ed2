//! Secondary instances (`DB::open_as_secondary`, `try_catch_up_with_primary`): a read-only view
//! of a DB another handle keeps writing, checked against a model of the primary at each
//! catch-up; and against RocksDB both ways through rocksdict (a RocksDB primary in another
//! process read by a Shale secondary, a Shale primary read by a RocksDB secondary).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::rocksdb_tools::{self, hex, run};
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{IteratorMode, Options, DB};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn dump(db: &DB) -> Model {
    db.iterator(IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(8 << 10);
    o.set_target_file_size_base(16 << 10);
    o.set_level_zero_file_num_compaction_trigger(2);
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn a_secondary_sees_the_primary_as_of_each_catch_up() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let primary = DB::open(&o, "/p").unwrap();
    let mut model = Model::new();
    for i in 0..50 {
        primary.put(key(i), b"a").unwrap();
        model.insert(key(i), b"a".to_vec());
    }
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    assert_eq!(dump(&sec), model, "at the open (WAL only)");
    // Its LOG is in its own directory; the primary's LOG is left alone.
    assert!(fs.exists(Path::new("/s/LOG")));
    let was = model.clone();
    for i in 25..75 {
        primary.put(key(i), b"b").unwrap();
        model.insert(key(i), b"b".to_vec());
    }
    primary.delete(key(3)).unwrap();
    model.remove(&key(3));
    assert_eq!(dump(&sec), was, "no catch-up yet");
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(dump(&sec), model, "after a catch-up (WAL only)");
    // Flushes and compactions move everything into tables and delete the old WALs and tables.
    for round in 0..6 {
        for i in 0..200 {
            let v = format!("r{round}-{i}").into_bytes();
            primary.put(key(i * 7 % 300), &v).unwrap();
            model.insert(key(i * 7 % 300), v);
        }
        primary.flush().unwrap();
    }
    primary.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(dump(&sec), model, "after flushes and a compaction");
    for i in 0..300 {
        assert_eq!(sec.get(key(i)).unwrap(), model.get(&key(i)).cloned(), "get {i}");
    }
    // A reopened primary writes a new MANIFEST (and removes the old one).
    drop(primary);
    let primary = DB::open(&o, "/p").unwrap();
    primary.put(b"after-reopen", b"z").unwrap();
    model.insert(b"after-reopen".to_vec(), b"z".to_vec());
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(dump(&sec), model, "after the primary switched MANIFESTs");
}

#[test]
fn reads_started_before_a_catch_up_keep_their_view() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let primary = DB::open(&o, "/p").unwrap();
    for i in 0..300 {
        primary.put(key(i), format!("old{i}")).unwrap();
    }
    primary.flush().unwrap();
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    let before = dump(&sec);
    let mut it = sec.raw_iterator();
    it.seek_to_first();
    // The primary rewrites everything and deletes the tables the secondary's readers hold.
    for i in 0..300 {
        primary.put(key(i), format!("new{i}")).unwrap();
    }
    primary.flush().unwrap();
    primary.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    let mut seen = Model::new();
    while it.valid() {
        seen.insert(it.key().unwrap().to_vec(), it.value().unwrap().to_vec());
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, before, "an iterator from before the catch-up");
    assert_eq!(sec.get(key(7)).unwrap(), Some(b"new7".to_vec()), "a read after");
}

#[test]
fn a_secondary_refuses_writes_and_a_primary_refuses_catch_up() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let primary = DB::open(&o, "/p").unwrap();
    primary.put(b"k", b"v").unwrap();
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    for r in [
        sec.put(b"k", b"w"),
        sec.delete(b"k"),
        sec.flush(),
        sec.compact_range(None::<&[u8]>, None::<&[u8]>),
    ] {
        assert!(matches!(r, Err(shale::Error::NotSupported(_))), "{r:?}");
    }
    assert!(matches!(
        primary.try_catch_up_with_primary(),
        Err(shale::Error::NotSupported(_))
    ));
    // A directory without a DB is an error, not an empty secondary.
    assert!(DB::open_as_secondary(&o, "/nothing", "/s2").is_err());
}

#[test]
fn a_secondary_of_some_families_follows_them() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.create_missing_column_families(true);
    let primary = DB::open_cf(&o, "/p", ["one", "two"]).unwrap();
    let one = primary.cf_handle("one").unwrap();
    primary.put_cf(&one, b"a", b"1").unwrap();
    let sec = DB::open_cf_as_secondary(&o, "/p", "/s", ["one"]).unwrap();
    assert!(sec.cf_handle("two").is_none());
    let sone = sec.cf_handle("one").unwrap();
    assert_eq!(sec.get_cf(&sone, b"a").unwrap(), Some(b"1".to_vec()));
    primary.put_cf(&one, b"b", b"2").unwrap();
    primary.flush_cf(&one).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get_cf(&sone, b"b").unwrap(), Some(b"2".to_vec()));
}

/// Random writes, flushes, compactions and primary reopens; at random points the secondary
/// catches up and must equal the model of the primary at that point, and in between it must
/// stay at the state of its last catch-up.
#[test]
fn secondary_model_with_flushes_compactions_and_reopens() {
    for seed in [11u64, 2027, 90_001] {
        let fs = MemFs::new();
        let o = opts(&fs);
        let mut primary = DB::open(&o, "/p").unwrap();
        let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
        let mut next = crate::secondary_tail::xorshift(seed);
        let mut model = Model::new();
        let mut caught = Model::new();
        for step in 0..1500u64 {
            match next(100) {
                0..=59 => {
                    let k = key(next(400));
                    let v = format!("s{step}").repeat(1 + next(8) as usize).into_bytes();
                    primary.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                60..=74 => {
                    let k = key(next(400));
                    primary.delete(&k).unwrap();
                    model.remove(&k);
                }
                75..=79 => primary.flush().unwrap(),
                80..=81 => primary.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
                82 => {
                    drop(primary);
                    primary = DB::open(&o, "/p").unwrap();
                }
                83..=92 => {
                    sec.try_catch_up_with_primary().unwrap();
                    caught = model.clone();
                    assert_eq!(dump(&sec), caught, "seed {seed} step {step}: after a catch-up");
                }
                _ => assert_eq!(dump(&sec), caught, "seed {seed} step {step}: between catch-ups"),
            }
        }
    }
}

/// A RocksDB primary (rocksdict, another process, still running) read by a Shale secondary,
/// which catches up with the primary's flush, overwrites, deletes and WAL-only writes.
#[test]
fn a_shale_secondary_follows_a_live_rocksdb_primary() {
    let Some(python) = rocksdb_tools::python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let n = 400;
    let mut child = Command::new(&python)
        .arg(script())
        .arg("write")
        .arg(&p)
        .arg(n.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let mut wait_ready = || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready", "the rocksdict primary did not get ready");
    };
    wait_ready();
    let o = Options::default();
    let sec = DB::open_as_secondary(&o, &p, &s).unwrap();
    let mut model = Model::new();
    for i in 0..n {
        model.insert(key(i), format!("v{i}").into_bytes());
    }
    assert_eq!(dump(&sec), model, "RocksDB's table and WAL at the open");
    stdin.write_all(b"go\n").unwrap();
    wait_ready();
    for i in (0..n).step_by(3) {
        model.insert(key(i), format!("w{i}").into_bytes());
    }
    for i in (0..n).step_by(5) {
        model.remove(&key(i));
    }
    for i in n..2 * n {
        model.insert(key(i), format!("x{i}").into_bytes());
    }
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(dump(&sec), model, "after a catch-up with the live RocksDB primary");
    stdin.write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
}

/// A Shale primary, open and holding writes only in its WAL, read by a RocksDB secondary.
#[test]
fn a_rocksdb_secondary_reads_a_live_shale_primary() {
    let Some(python) = rocksdb_tools::python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (p, s) = (dir.path().join("p"), dir.path().join("s"));
    let mut o = Options::default();
    o.create_if_missing(true);
    let primary = DB::open(&o, &p).unwrap();
    let mut model = Model::new();
    for i in 0..300 {
        primary.put(key(i), format!("t{i}")).unwrap();
        model.insert(key(i), format!("t{i}").into_bytes());
    }
    primary.flush().unwrap();
    for i in (0..300).step_by(4) {
        primary.put(key(i), format!("u{i}")).unwrap();
        model.insert(key(i), format!("u{i}").into_bytes());
    }
    primary.delete(key(1)).unwrap();
    model.remove(&key(1));
    let out = run(Command::new(&python).arg(script()).arg("read").arg(&p).arg(&s));
    let got: BTreeMap<String, String> = out
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap_or_else(|| panic!("bad line {l:?}"));
            (k.to_string(), v.to_string())
        })
        .collect();
    let want: BTreeMap<String, String> = model.iter().map(|(k, v)| (hex(k), hex(v))).collect();
    assert_eq!(got, want, "RocksDB's secondary view of Shale's table and WAL");
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_secondary.py")
}

/// The primary's live WAL can end in a record still being written, or (with mapped appends)
/// hold a half-copied record before a complete one: a catch-up replays the records before the
/// first bad one and succeeds, whatever the primary's recovery mode, and a later catch-up sees
/// the rest once it is whole.
#[test]
fn a_catch_up_stops_quietly_at_a_record_still_being_written() {
    for mode in [
        shale::DBRecoveryMode::TolerateCorruptedTailRecords,
        shale::DBRecoveryMode::AbsoluteConsistency,
        shale::DBRecoveryMode::PointInTime,
    ] {
        let fs = MemFs::new();
        let mut o = opts(&fs);
        o.set_write_buffer_size(1 << 20);
        o.set_wal_recovery_mode(mode);
        let primary = DB::open(&o, "/p").unwrap();
        let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
        for i in 0..100 {
            primary.put(key(i), [b'v'; 100]).unwrap();
        }
        primary.flush_wal(true).unwrap();
        let path = crate::secondary_tail::newest_wal(&fs, "/p");
        let whole = fs.read_all(&path).unwrap();
        // Garble a record in the middle, as a copy in progress would leave it.
        let at = whole.len() / 2;
        assert!(fs.corrupt(&path, at, &[0xAB; 8]));
        sec.try_catch_up_with_primary().unwrap();
        let seen = dump(&sec);
        assert!(
            !seen.is_empty() && seen.len() < 100,
            "{mode:?}: a prefix of the WAL, got {} keys",
            seen.len()
        );
        let n = seen.len() as u64;
        assert_eq!(
            seen.keys().cloned().collect::<Vec<_>>(),
            (0..n).map(key).collect::<Vec<_>>()
        );
        // The record completes: the next catch-up sees everything.
        assert!(fs.corrupt(&path, at, &whole[at..at + 8]));
        sec.try_catch_up_with_primary().unwrap();
        assert_eq!(dump(&sec).len(), 100, "{mode:?}");
    }
}

/// When a [`HookFs`] runs its hook.
#[derive(Clone, Copy, PartialEq)]
enum HookAt {
    /// The first directory listing after it is armed (a catch-up lists the primary's WALs
    /// after reading its MANIFEST).
    List,
    /// The first read of a WAL (`*.log`) after it is armed.
    WalRead,
}

/// Runs a hook once, where `at` says.
struct HookFs {
    inner: MemFs,
    at: HookAt,
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl HookFs {
    fn fire(&self) {
        let h = self.hook.lock().unwrap().take();
        if let Some(h) = h {
            h();
        }
    }
}

impl shale::fs::ForwardingFs for HookFs {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn list(&self, dir: &Path) -> shale::error::Result<Vec<String>> {
        if self.at == HookAt::List {
            self.fire();
        }
        self.inner.list(dir)
    }
    fn read_all(&self, path: &Path) -> shale::error::Result<Vec<u8>> {
        if self.at == HookAt::WalRead && path.extension().is_some_and(|e| e == "log") {
            self.fire();
        }
        self.inner.read_all(path)
    }
    // A catch-up reads what a WAL gained through a file opened for reads at an offset.
    fn open_random(&self, path: &Path) -> shale::error::Result<Arc<dyn shale::fs::RandomAccessFile>> {
        if self.at == HookAt::WalRead && path.extension().is_some_and(|e| e == "log") {
            self.fire();
        }
        self.inner.open_random(path)
    }
}

/// A primary on a [`HookFs`] with 20 keys in its first WAL, and a hook that flushes it (the
/// first WAL's keys go into a table and the WAL is deleted) and writes one key into the new WAL.
fn primary_flushing_in_a_hook(at: HookAt) -> (Arc<HookFs>, Options, Arc<DB>) {
    let fs = Arc::new(HookFs {
        inner: MemFs::new(),
        at,
        hook: std::sync::Mutex::new(None),
    });
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(fs.clone());
    let primary = Arc::new(DB::open(&o, "/p").unwrap());
    for i in 0..20 {
        primary.put(key(i), b"in-the-first-wal").unwrap();
    }
    let p2 = primary.clone();
    *fs.hook.lock().unwrap() = Some(Box::new(move || {
        p2.flush().unwrap();
        p2.put(key(99), b"in-the-second-wal").unwrap();
    }));
    (fs, o, primary)
}

/// The hook ran, and `sec` sees the keys of both WALs.
fn sees_both_wals(fs: &HookFs, sec: &DB) {
    assert!(fs.hook.lock().unwrap().is_none(), "the hook ran");
    let seen = dump(sec);
    for i in 0..20 {
        assert_eq!(
            seen.get(&key(i)).map(|v| v.as_slice()),
            Some(&b"in-the-first-wal"[..]),
            "key {i}"
        );
    }
    assert_eq!(
        seen.get(&key(99)).map(|v| v.as_slice()),
        Some(&b"in-the-second-wal"[..])
    );
}

/// Found by `shale stress --secondary_catch_up_one_in`: the primary flushed between the
/// secondary's read of its MANIFEST and its listing of the WALs, and deleted the WAL the older
/// version still needed. The catch-up must not publish that mix (the flushed keys missing, later
/// ones present) nor fail: it starts over and sees everything.
#[test]
fn a_flush_between_the_manifest_read_and_the_wal_listing_is_not_a_gap() {
    let (fs, o, _primary) = primary_flushing_in_a_hook(HookAt::List);
    // Opened before the hook is armed; the catch-up meets it.
    let hook = fs.hook.lock().unwrap().take();
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    *fs.hook.lock().unwrap() = hook;
    sec.try_catch_up_with_primary().unwrap();
    sees_both_wals(&fs, &sec);
}

/// The CI failure of 2026-11-28 (crash test seed 1795885526): a primary that writes MANIFEST
/// records every few milliseconds (a family with a tiny write buffer flushing all the time)
/// while another family holds megabytes in its WAL. A catch-up that needed the MANIFEST to
/// stay still while it replayed the whole WAL gave up with Busy every time; one that copies
/// the WALs first and replays them afterwards needs the MANIFEST still only for the copy.
#[test]
fn a_catch_up_succeeds_while_the_primary_keeps_writing_its_manifest() {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(64 << 20);
    let primary = DB::open_cf(&o, "/p", ["busy"]).unwrap();
    let big = vec![b'v'; 100];
    let n = 60_000u64;
    for i in 0..n {
        primary.put(format!("big{i:06}"), &big).unwrap();
    }
    let sec = DB::open_cf_as_secondary(&o, "/p", "/s", ["busy"]).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let written = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let busy = primary.cf_handle("busy").unwrap();
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                primary.put_cf(&busy, format!("b{i:06}"), b"x").unwrap();
                primary.flush_cf(&busy).unwrap();
                written.store(i + 1, std::sync::atomic::Ordering::Release);
                i += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let sbusy = sec.cf_handle("busy").unwrap();
        let r = (|| -> Result<(), String> {
            // Catch-ups that tail the MANIFEST take milliseconds: go on until the primary
            // flushed a dozen times under them.
            let mut round = 0;
            while round < 8 || written.load(std::sync::atomic::Ordering::Acquire) < 12 {
                round += 1;
                if round > 20_000 {
                    return Err("the primary did not flush".into());
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
                let before = written.load(std::sync::atomic::Ordering::Acquire);
                sec.try_catch_up_with_primary()
                    .map_err(|e| format!("catch-up {round}: {e}"))?;
                for i in (0..n).step_by(997) {
                    let got = sec.get(format!("big{i:06}")).map_err(|e| e.to_string())?;
                    if got.as_deref() != Some(&big[..]) {
                        return Err(format!("catch-up {round}: big{i:06} is {got:?}"));
                    }
                }
                if before > 0 {
                    let k = format!("b{:06}", before - 1);
                    let got = sec.get_cf(&sbusy, &k).map_err(|e| e.to_string())?;
                    if got.as_deref() != Some(&b"x"[..]) {
                        return Err(format!("catch-up {round}: {k} (flushed before it) is {got:?}"));
                    }
                }
            }
            Ok(())
        })();
        stop.store(true, std::sync::atomic::Ordering::Release);
        r.unwrap();
    });
    assert!(
        written.load(std::sync::atomic::Ordering::Acquire) > 8,
        "the primary kept flushing"
    );
}

/// Found by the crash-test loop (seed 587123899): the primary flushed while a secondary was
/// being opened, between the open's listing of the WALs and its read of one, and deleted it;
/// the open failed with `IO error: …log: No such file or directory`. The open now retries on a
/// WAL gone under a MANIFEST that moved on, and ends with a catch-up, whose WAL copies are
/// checked against the MANIFEST (an open alone cannot tell a WAL deleted before its listing).
#[test]
fn a_flush_while_a_secondary_opens_neither_fails_the_open_nor_loses_keys() {
    let (fs, o, _primary) = primary_flushing_in_a_hook(HookAt::WalRead);
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    sees_both_wals(&fs, &sec);
}
