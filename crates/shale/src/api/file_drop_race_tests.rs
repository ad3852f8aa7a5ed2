//! `delete_file_in_range` against compactions that start while its MANIFEST write runs (the
//! write is made without the DB mutex). Found by the ingest model test (about 1 run in 75 under
//! load: entries of a dropped file came back after a later compaction, because a compaction
//! picked in that window took the file as an input and installed an output holding its
//! entries). These tests stop inside that window with a file-system hook, so they fail
//! deterministically without the fix.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use super::db::DB;
use crate::engine::compaction::pick_for;
use crate::engine::state::DbInner;
use crate::error::Result;
use crate::fs::testing::MemFs;
use crate::fs::{FileSystem, ForwardingFs, WritableFile};
use crate::options::Options;

type Hook = Box<dyn FnOnce() + Send>;

/// Runs a hook once, the first time a file whose name passes `which` is created (the MANIFEST)
/// or synced (a table being written by a compaction).
struct HookFs {
    inner: Arc<MemFs>,
    which: fn(&str) -> bool,
    hook: Arc<Mutex<Option<Hook>>>,
}

struct HookFile {
    inner: Box<dyn WritableFile>,
    hook: Arc<Mutex<Option<Hook>>>,
}

fn fire(hook: &Mutex<Option<Hook>>) {
    let h = hook.lock().unwrap().take();
    if let Some(h) = h {
        h();
    }
}

impl WritableFile for HookFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        fire(&self.hook);
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl ForwardingFs for HookFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let f = self.inner.new_writable(path)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if (self.which)(name) {
            return Ok(Box::new(HookFile {
                inner: f,
                hook: self.hook.clone(),
            }));
        }
        Ok(f)
    }
}

fn hook_fs(which: fn(&str) -> bool) -> (Arc<HookFs>, Arc<Mutex<Option<Hook>>>) {
    let hook = Arc::new(Mutex::new(None));
    let fs = Arc::new(HookFs {
        inner: Arc::new(MemFs::new()),
        which,
        hook: hook.clone(),
    });
    (fs, hook)
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

fn live(db: &DB) -> Vec<(i32, String)> {
    let mut v: Vec<(i32, String)> = db
        .live_files()
        .unwrap()
        .into_iter()
        .map(|f| (f.level, f.name))
        .collect();
    v.sort();
    v
}

/// Manual compactions in chunks of one file each (levels not dynamic), no automatic ones.
fn chunk_per_file(fs: Arc<HookFs>) -> Options {
    Options {
        create_if_missing: true,
        env: fs,
        disable_auto_compactions: true,
        level_compaction_dynamic_level_bytes: false,
        max_compaction_bytes: 1,
        ..Options::default()
    }
}

/// Two ranges, k010..k019 and k050..k059, each with an older file at L6 and a newer one at L5
/// (ingests place a file at the lowest level it does not overlap).
fn two_ranges_at_l5_and_l6(o: &Options, fs: &dyn FileSystem, db: &DB) {
    fs.create_dir_all(Path::new("/ext")).unwrap();
    for (n, (lo, tag)) in [(10u32, "a6"), (10, "a5"), (50, "b6"), (50, "b5")]
        .into_iter()
        .enumerate()
    {
        let path = format!("/ext/{n}.sst");
        let mut w = crate::engine::sst_file_writer::SstFileWriter::create(o);
        w.open(&path).unwrap();
        for i in lo..lo + 10 {
            w.put(key(i), tag).unwrap();
        }
        w.finish().unwrap();
        db.ingest_external_file(vec![path]).unwrap();
    }
    let levels: Vec<i32> = live(db).iter().map(|(l, _)| *l).collect();
    assert_eq!(levels, vec![5, 5, 6, 6]);
}

/// While the edit dropping a file is being written, the compaction picker must not take that
/// file (here: L0 -> base, whose overlapping base-level file is the one being dropped).
#[test]
fn a_compaction_picked_while_a_file_drop_is_written_does_not_take_the_file() {
    let (fs, hook) = hook_fs(|name| name.starts_with("MANIFEST"));
    let o = Options {
        create_if_missing: true,
        env: fs.clone(),
        disable_auto_compactions: true,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    let db = DB::open(&o, "/drop-pick").unwrap();
    for i in 10..20 {
        db.put(key(i), b"old").unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let below: Vec<(i32, String)> = live(&db);
    assert_eq!(below.len(), 1, "{below:?}");
    assert!(below[0].0 > 0, "{below:?}");
    let dropped: u64 = below[0]
        .1
        .trim_start_matches('/')
        .trim_end_matches(".sst")
        .parse()
        .unwrap();
    // Two L0 files overlapping it: the picker wants L0 -> base with that file as an input.
    for round in 0..2 {
        db.put(key(12 + round), b"new").unwrap();
        db.flush().unwrap();
    }
    {
        let st = db.inner.state.lock();
        let pick = pick_for(&st, &db.inner.default_cf).expect("L0 -> base is due");
        assert!(
            pick.all_inputs().any(|f| f.number() == dropped),
            "setup: the pick takes the file"
        );
    }
    // Inside the MANIFEST write of the drop, ask the picker again.
    let inner: Arc<OnceLock<Arc<DbInner>>> = Arc::new(OnceLock::new());
    inner.set(db.inner.clone()).ok().unwrap();
    let seen: Arc<Mutex<Option<Vec<u64>>>> = Arc::new(Mutex::new(None));
    let (i2, s2) = (inner.clone(), seen.clone());
    *hook.lock().unwrap() = Some(Box::new(move || {
        let db = i2.get().unwrap();
        let st = db.state.lock();
        let pick = pick_for(&st, &db.default_cf);
        *s2.lock().unwrap() = Some(
            pick.map(|p| p.all_inputs().map(|f| f.number()).collect())
                .unwrap_or_default(),
        );
    }));
    // Only L1+ files go, and only that file lies wholly inside this range.
    db.delete_file_in_range(key(0), key(99)).unwrap();
    let picked = seen
        .lock()
        .unwrap()
        .take()
        .expect("the hook ran inside the MANIFEST write");
    assert!(
        !picked.contains(&dropped),
        "a compaction picked during the drop's MANIFEST write takes the dropped file {dropped}: {picked:?}"
    );
    // After it, the dropped keys stay gone through compactions.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in 10..20 {
        let want: Option<&[u8]> = if i == 12 || i == 13 { Some(b"new") } else { None };
        assert_eq!(db.get(key(i)).unwrap().as_deref(), want, "key {i}");
    }
}

/// A manual compaction cut into chunks picks each chunk's inputs before it runs the earlier
/// ones; a file dropped while an earlier chunk runs must not be compacted by a later chunk (its
/// entries would come back, or the chunk would fail on the removed file).
#[test]
fn a_file_dropped_while_a_manual_compaction_runs_stays_dropped() {
    let (fs, hook) = hook_fs(|name| name.ends_with(".sst"));
    let o = chunk_per_file(fs.clone());
    let db = DB::open(&o, "/drop-manual").unwrap();
    two_ranges_at_l5_and_l6(&o, &*fs, &db);
    // While the first chunk (L5 -> L6 of k010..k019) writes its output, drop the second
    // range's files.
    let inner: Arc<OnceLock<Arc<DbInner>>> = Arc::new(OnceLock::new());
    inner.set(db.inner.clone()).ok().unwrap();
    let i2 = inner.clone();
    let dropped = Arc::new(Mutex::new(None));
    let d2 = dropped.clone();
    *hook.lock().unwrap() = Some(Box::new(move || {
        let db = i2.get().unwrap();
        let r = super::ingest::delete_files_in_range(db, &db.default_cf, Some(&key(50)[..]), Some(&key(59)[..]));
        *d2.lock().unwrap() = Some(r);
    }));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    dropped
        .lock()
        .unwrap()
        .take()
        .expect("the hook ran during the compaction")
        .unwrap();
    for i in 10..20 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"a5"[..]), "key {i}");
    }
    for i in 50..60 {
        assert_eq!(db.get(key(i)).unwrap(), None, "key {i} of a dropped file is back");
    }
    drop(db);
    let db = DB::open(&o, "/drop-manual").unwrap();
    for i in 50..60 {
        assert_eq!(
            db.get(key(i)).unwrap(),
            None,
            "key {i} of a dropped file is back after a reopen"
        );
    }
}

/// Two threads' manual compactions over the same range: between two chunks a manual compaction
/// waits (without the DB mutex) for an ingest in flight, and the other thread's compaction
/// starts then. Both took the same L5 file with the same L6 file below it and wrote overlapping
/// outputs into L6; the second install failed with "files … overlap in level 6" (or on a
/// removed input) and stopped writes. Found by CI's crash test (2026-11-28, seed 1795886581:
/// "files 2183 and 2185 overlap in level 3").
#[test]
fn concurrent_manual_compactions_do_not_compact_the_same_files() {
    let (fs, hook) = hook_fs(|name| name.ends_with(".sst"));
    let o = chunk_per_file(fs.clone());
    let db = Arc::new(DB::open(&o, "/manual-twice").unwrap());
    two_ranges_at_l5_and_l6(&o, &*fs, &db);
    // While the first chunk (L5 -> L6 of k010..k019) writes its output: an ingest is in flight
    // (its count held for 300 ms), and a second manual compaction starts in another thread.
    let second: Arc<Mutex<Option<std::thread::JoinHandle<Result<()>>>>> = Arc::new(Mutex::new(None));
    let (db2, s2) = (db.clone(), second.clone());
    *hook.lock().unwrap() = Some(Box::new(move || {
        db2.inner.state.lock().ingests_running += 1;
        let db3 = db2.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            db3.inner.state.lock().ingests_running -= 1;
            db3.inner.bg_cv.notify_all();
        });
        let db4 = db2.clone();
        *s2.lock().unwrap() = Some(std::thread::spawn(move || {
            db4.compact_range(None::<&[u8]>, None::<&[u8]>)
        }));
    }));
    let first = db.compact_range(None::<&[u8]>, None::<&[u8]>);
    let other = second
        .lock()
        .unwrap()
        .take()
        .expect("the hook ran during the first compaction")
        .join()
        .unwrap();
    first.expect("the first manual compaction");
    other.expect("the second manual compaction");
    for i in 10..20 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"a5"[..]), "key {i}");
    }
    for i in 50..60 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"b5"[..]), "key {i}");
    }
    db.put(key(1), b"writes go on").unwrap();
    let levels: Vec<i32> = live(&db).iter().map(|(l, _)| *l).collect();
    assert!(levels.iter().all(|&l| l == 6), "{levels:?}");
}
