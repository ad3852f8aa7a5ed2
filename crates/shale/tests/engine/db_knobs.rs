//! RocksDB's DB-wide settings under their names: `use_fsync` (every file syncs with fsync),
//! `write_dbid_to_manifest`, `db_log_dir`, `track_and_verify_wals_in_manifest` refused, and the
//! tuning hints recorded in the OPTIONS file and the LOG.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use shale::error::Result;
use shale::fs::testing::MemFs;
use shale::fs::{FileSystem, ForwardingFs, WritableFile};
use shale::{Options, DB};

/// For each file created: whether it was told to sync with fsync.
type Told = Arc<Mutex<BTreeMap<String, bool>>>;

struct Recording {
    inner: Arc<dyn FileSystem>,
    told: Told,
}

struct RecordingFile {
    inner: Box<dyn WritableFile>,
    name: String,
    told: Told,
}

impl WritableFile for RecordingFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn use_fsync(&mut self) {
        self.told.lock().unwrap().insert(self.name.clone(), true);
        self.inner.use_fsync()
    }
}

impl ForwardingFs for Recording {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        self.told.lock().unwrap().insert(name.clone(), false);
        Ok(Box::new(RecordingFile {
            inner: self.inner.new_writable(path)?,
            name,
            told: self.told.clone(),
        }))
    }
}

fn write_some(o: &Options, path: &str) {
    let db = DB::open(o, path).unwrap();
    for i in 0..500u32 {
        db.put(format!("k{i:04}"), [b'v'; 200]).unwrap();
    }
    db.flush().unwrap();
    db.put("in-wal", "x").unwrap();
    db.flush_wal(true).unwrap();
}

#[test]
fn use_fsync_makes_every_file_of_the_db_sync_with_fsync() {
    for on in [false, true] {
        let told: Told = Arc::default();
        let fs: Arc<dyn FileSystem> = Arc::new(Recording {
            inner: Arc::new(MemFs::new()),
            told: told.clone(),
        });
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(fs);
        o.set_use_fsync(on);
        assert_eq!(o.get_use_fsync(), on);
        write_some(&o, "/db");
        let told = told.lock().unwrap();
        for kind in [".log", ".sst", "MANIFEST-", "OPTIONS-", ".dbtmp"] {
            let files: Vec<_> = told.iter().filter(|(n, _)| n.contains(kind)).collect();
            assert!(!files.is_empty(), "no {kind} file written");
            for (n, t) in files {
                assert_eq!(*t, on, "{n}: told to fsync = {t} with use_fsync = {on}");
            }
        }
    }
}

fn manifest_bytes(dir: &Path) -> Vec<u8> {
    let current = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
    std::fs::read(dir.join(current.trim())).unwrap()
}

#[test]
fn write_dbid_to_manifest_decides_whether_the_manifest_names_the_db() {
    for on in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Options::default();
        o.create_if_missing(true);
        assert!(o.get_write_dbid_to_manifest(), "RocksDB's default is true");
        o.set_write_dbid_to_manifest(on);
        let db = DB::open(&o, dir.path()).unwrap();
        let id = db.get_db_identity().unwrap();
        drop(db);
        let m = manifest_bytes(dir.path());
        let named = m.windows(id.len()).any(|w| w == id.as_slice());
        assert_eq!(named, on, "DB id in the MANIFEST with write_dbid_to_manifest = {on}");
        // Either way the id survives a reopen (IDENTITY).
        let db = DB::open(&o, dir.path()).unwrap();
        assert_eq!(db.get_db_identity().unwrap(), id);
    }
}

#[test]
fn db_log_dir_holds_the_log_named_after_the_db_path() {
    let root = tempfile::tempdir().unwrap();
    let db_dir = root.path().join("my db");
    let log_dir = root.path().join("logs");
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_db_log_dir(&log_dir);
    write_some(&o, db_dir.to_str().unwrap());
    let flat: String = db_dir
        .to_str()
        .unwrap()
        .chars()
        .enumerate()
        .filter_map(|(i, c)| match c {
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') => Some(c),
            _ if i > 0 => Some('_'),
            _ => None,
        })
        .collect();
    let name = format!("{flat}_LOG");
    let log = std::fs::read_to_string(log_dir.join(&name)).unwrap();
    assert!(log.contains("DB path:"), "{log}");
    assert!(!db_dir.join("LOG").exists(), "the LOG went to the DB's directory");
    // A reopen moves it aside under the same name, as RocksDB.
    let db = DB::open(&o, &db_dir).unwrap();
    drop(db);
    let old: Vec<String> = std::fs::read_dir(&log_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with(&format!("{name}.old.")))
        .collect();
    assert_eq!(old.len(), 1, "{old:?}");
    let opts_file: String = std::fs::read_dir(&db_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = std::fs::read_to_string(db_dir.join(opts_file)).unwrap();
    assert!(text.contains(&format!("db_log_dir={}", log_dir.display())), "{text}");
}

#[test]
fn tracking_wals_in_the_manifest_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    assert!(!o.get_track_and_verify_wals_in_manifest());
    o.set_track_and_verify_wals_in_manifest(true);
    assert!(o.get_track_and_verify_wals_in_manifest());
    let e = DB::open(&o, dir.path()).unwrap_err();
    assert!(
        e.is_not_supported() && e.to_string().contains("track_and_verify_wals_in_manifest"),
        "{e}"
    );
}

#[test]
fn tuning_hints_are_recorded_in_the_options_file_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_experimental_mempurge_threshold(1.0);
    o.set_avoid_unnecessary_blocking_io(true);
    o.set_wal_bytes_per_sync(1 << 20);
    o.set_writable_file_max_buffer_size(4 << 20);
    o.set_use_adaptive_mutex(true);
    o.set_enable_write_thread_adaptive_yield(false);
    o.set_dump_malloc_stats(true);
    o.set_stats_persist_period_sec(5);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put("k", "v").unwrap();
    drop(db);
    let opts_file: String = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = std::fs::read_to_string(dir.path().join(opts_file)).unwrap();
    let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
    // experimental_mempurge_threshold: in the LOG only (a DB option in RocksDB 7, a family
    // option from 8 on).
    assert!(log.contains("Options.experimental_mempurge_threshold: 1.000000\n"));
    assert!(!text.contains("experimental_mempurge_threshold"));
    for (k, v) in [
        ("avoid_unnecessary_blocking_io", "true"),
        ("wal_bytes_per_sync", "1048576"),
        ("writable_file_max_buffer_size", "4194304"),
        ("use_adaptive_mutex", "true"),
        ("enable_write_thread_adaptive_yield", "false"),
        ("dump_malloc_stats", "true"),
        ("stats_persist_period_sec", "5"),
    ] {
        assert!(text.contains(&format!("  {k}={v}\n")), "OPTIONS lacks {k}={v}");
        assert!(log.contains(&format!("Options.{k}: {v}\n")), "LOG lacks {k}: {v}");
    }
}
