//! Secondary instances that tail the primary's MANIFEST and WALs: a long-running secondary
//! equals a freshly opened one (and a read-only open, and the primary) key by key after many
//! writes, flushes of single families, compactions and MANIFEST switches; a catch-up reads only
//! what the MANIFEST gained and opens only new tables; a MANIFEST torn while tailed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::{FileSystem, RandomAccessFile};
use shale::{IteratorMode, Options, DB};

type Dump = BTreeMap<Vec<u8>, Vec<u8>>;

fn dump_cf(db: &DB, cf: &str) -> Dump {
    let h = db.cf_handle(cf).unwrap();
    db.iterator_cf(&h, IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

fn opts(fs: Arc<dyn FileSystem>) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(fs);
    o.set_write_buffer_size(16 << 10);
    o.set_target_file_size_base(16 << 10);
    o.set_level_zero_file_num_compaction_trigger(3);
    o.set_merge_operator_associative("concat", |_k, existing, operands| {
        let mut v = existing.map(|e| e.to_vec()).unwrap_or_default();
        for op in operands {
            v.extend_from_slice(op);
        }
        Some(v)
    });
    o
}

/// A small deterministic generator: `next(n)` is below `n`.
pub(crate) fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut rng = seed;
    move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    }
}

const CFS: [&str; 2] = ["default", "two"];

/// Every family of `a` and `b` holds the same keys and values, by iteration and by `get` of
/// every key ever written (deleted ones included).
fn same(a: &DB, b: &DB, what: &str) {
    for cf in CFS {
        let (da, db_) = (dump_cf(a, cf), dump_cf(b, cf));
        assert_eq!(da.len(), db_.len(), "{what}: {cf}: number of keys");
        assert!(da == db_, "{what}: {cf}: contents differ");
        let (ha, hb) = (a.cf_handle(cf).unwrap(), b.cf_handle(cf).unwrap());
        for i in 0..300 {
            assert_eq!(
                a.get_cf(&ha, key(i)).unwrap(),
                b.get_cf(&hb, key(i)).unwrap(),
                "{what}: {cf} get {i}"
            );
        }
    }
}

/// The long-running secondary after each catch-up equals the primary, a secondary opened
/// fresh at that point and a read-only open (whose WAL replay is the open's, not the tail's),
/// through puts, merges, deletes, range deletions, flushes of one family at a time (so the
/// families' log numbers differ and the secondary holds memtables of several WALs),
/// compactions and reopens of the primary (a new MANIFEST each).
#[test]
fn a_long_running_secondary_equals_a_fresh_one_key_by_key() {
    for seed in [7u64, 4242] {
        let fs = MemFs::new();
        let o = opts(Arc::new(fs.clone()));
        let mut primary = DB::open_cf(&o, "/p", ["two"]).unwrap();
        let sec = DB::open_cf_as_secondary(&o, "/p", "/s", ["two"]).unwrap();
        let mut next = xorshift(seed);
        let mut checks = 0;
        for step in 0..3000u64 {
            let cf = primary.cf_handle(CFS[next(2) as usize]).unwrap();
            match next(1000) {
                0..=549 => {
                    let v = format!("s{step}").repeat(1 + next(6) as usize);
                    primary.put_cf(&cf, key(next(300)), v).unwrap();
                }
                550..=699 => primary.merge_cf(&cf, key(next(300)), format!("+{step}")).unwrap(),
                700..=849 => primary.delete_cf(&cf, key(next(300))).unwrap(),
                850..=859 => {
                    let a = next(300);
                    primary.delete_range_cf(&cf, key(a), key(a + 1 + next(10))).unwrap();
                }
                860..=919 => primary.flush_cf(&cf).unwrap(),
                920..=934 => primary.compact_range_cf(&cf, None::<&[u8]>, None::<&[u8]>).unwrap(),
                935..=937 => {
                    drop(cf);
                    drop(primary);
                    primary = DB::open_cf(&o, "/p", ["two"]).unwrap();
                }
                _ => {
                    sec.try_catch_up_with_primary().unwrap();
                    checks += 1;
                    same(&sec, &primary, &format!("seed {seed} step {step}: the primary"));
                    let fresh = DB::open_cf_as_secondary(&o, "/p", format!("/s{step}"), ["two"]).unwrap();
                    same(&sec, &fresh, &format!("seed {seed} step {step}: a fresh secondary"));
                    let ro = DB::open_cf_for_read_only(&o, "/p", ["two"], false).unwrap();
                    same(&sec, &ro, &format!("seed {seed} step {step}: a read-only open"));
                }
            }
        }
        assert!(checks > 100, "{checks} checks");
    }
}

/// Counts what is read through it, and can show the MANIFEST shorter than it is (a primary in
/// the middle of appending a record to it).
struct CountingFs {
    inner: MemFs,
    manifest_bytes: Arc<AtomicU64>,
    wal_bytes: Arc<AtomicU64>,
    table_opens: AtomicU64,
    /// Bytes the MANIFEST is shown shorter by.
    cut: AtomicU64,
    /// Run once, right after a WAL is next opened for reads.
    after_wal_open: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

struct CountedFile {
    inner: Arc<dyn RandomAccessFile>,
    counter: Option<Arc<AtomicU64>>,
    size: u64,
}

impl RandomAccessFile for CountedFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> shale::error::Result<()> {
        if let Some(c) = &self.counter {
            c.fetch_add(buf.len() as u64, Ordering::Relaxed);
        }
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl shale::fs::ForwardingFs for CountingFs {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn open_random(&self, path: &Path) -> shale::error::Result<Arc<dyn RandomAccessFile>> {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let inner = self.inner.open_random(path)?;
        if name.ends_with(".log") {
            let hook = self.after_wal_open.lock().unwrap().take();
            if let Some(h) = hook {
                h();
            }
        }
        let manifest = name.starts_with("MANIFEST-");
        if name.ends_with(".sst") {
            self.table_opens.fetch_add(1, Ordering::Relaxed);
        }
        let size = if manifest {
            inner.size().saturating_sub(self.cut.load(Ordering::Relaxed))
        } else {
            inner.size()
        };
        Ok(Arc::new(CountedFile {
            inner,
            counter: if manifest {
                Some(self.manifest_bytes.clone())
            } else if name.ends_with(".log") {
                Some(self.wal_bytes.clone())
            } else {
                None
            },
            size,
        }))
    }
    fn read_all(&self, path: &Path) -> shale::error::Result<Vec<u8>> {
        let data = self.inner.read_all(path)?;
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("MANIFEST-") {
            self.manifest_bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        } else if name.ends_with(".log") {
            self.wal_bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        Ok(data)
    }
}

fn counting_fs() -> Arc<CountingFs> {
    Arc::new(CountingFs {
        inner: MemFs::new(),
        manifest_bytes: Arc::new(AtomicU64::new(0)),
        wal_bytes: Arc::new(AtomicU64::new(0)),
        table_opens: AtomicU64::new(0),
        cut: AtomicU64::new(0),
        after_wal_open: std::sync::Mutex::new(None),
    })
}

fn manifest_size(fs: &CountingFs) -> u64 {
    let cur = fs.inner.read_all(Path::new("/p/CURRENT")).unwrap();
    let name = String::from_utf8(cur).unwrap();
    fs.inner.file_size(&Path::new("/p").join(name.trim())).unwrap()
}

/// A catch-up reads what the MANIFEST gained (from the start of the 32 KiB block its last
/// read stopped in), not the whole MANIFEST, and opens only the tables new to the version;
/// after a MANIFEST switch it reads the new MANIFEST whole but opens no table it holds open;
/// of a WAL of megabytes it reads what the WAL gained.
#[test]
fn a_catch_up_reads_only_the_new_manifest_records_and_opens_only_new_tables() {
    let fs = counting_fs();
    let mut o = opts(fs.clone());
    o.set_disable_auto_compactions(true);
    o.set_write_buffer_size(64 << 20);
    let primary = DB::open(&o, "/p").unwrap();
    for i in 0..1500 {
        primary.put(key(i), b"v").unwrap();
        primary.flush().unwrap();
    }
    let size = manifest_size(&fs);
    assert!(size > 96 << 10, "a MANIFEST of {size} bytes");
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    let files = |db: &DB| db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap();
    assert_eq!(files(&sec), 1500);
    for round in 0..3 {
        primary.put(format!("new{round}"), b"v").unwrap();
        primary.flush().unwrap();
        // (The primary opens the table it wrote too.)
        fs.manifest_bytes.store(0, Ordering::Relaxed);
        fs.table_opens.store(0, Ordering::Relaxed);
        sec.try_catch_up_with_primary().unwrap();
        let read = fs.manifest_bytes.load(Ordering::Relaxed);
        assert!(
            read <= (32 << 10) + 1024,
            "round {round}: {read} bytes of a {} byte MANIFEST read",
            manifest_size(&fs)
        );
        assert_eq!(
            fs.table_opens.load(Ordering::Relaxed),
            1,
            "round {round}: tables opened"
        );
        assert_eq!(files(&sec), 1501 + round);
        assert_eq!(sec.get(format!("new{round}")).unwrap(), Some(b"v".to_vec()));
    }
    // A reopened primary writes a new MANIFEST: read from its start, the tables kept open.
    drop(primary);
    let primary = DB::open(&o, "/p").unwrap();
    fs.table_opens.store(0, Ordering::Relaxed);
    fs.manifest_bytes.store(0, Ordering::Relaxed);
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(
        fs.table_opens.load(Ordering::Relaxed),
        0,
        "tables opened after the switch"
    );
    assert_eq!(
        fs.manifest_bytes.load(Ordering::Relaxed),
        manifest_size(&fs),
        "the new MANIFEST read whole"
    );
    assert_eq!(files(&sec), 1503);
    // A WAL of megabytes: a catch-up reads what it gained (from the start of the block its
    // last read stopped in), and a secondary opened on it reads it once.
    for i in 0..20_000u64 {
        primary.put(format!("w{i:06}"), [b'v'; 100]).unwrap();
    }
    sec.try_catch_up_with_primary().unwrap();
    let wal: u64 = fs
        .inner
        .list(Path::new("/p"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".log"))
        .map(|n| fs.inner.file_size(&Path::new("/p").join(n)).unwrap())
        .sum();
    assert!(wal > 2 << 20, "a WAL of {wal} bytes");
    fs.wal_bytes.store(0, Ordering::Relaxed);
    let other = DB::open_as_secondary(&o, "/p", "/s2").unwrap();
    assert_eq!(fs.wal_bytes.load(Ordering::Relaxed), wal, "WAL bytes read by an open");
    assert_eq!(other.get("w019999").unwrap(), Some(vec![b'v'; 100]));
    for round in 0..3 {
        primary.put(format!("w-more{round}"), b"v").unwrap();
        fs.wal_bytes.store(0, Ordering::Relaxed);
        sec.try_catch_up_with_primary().unwrap();
        let read = fs.wal_bytes.load(Ordering::Relaxed);
        assert!(read <= (32 << 10) + 1024, "round {round}: {read} bytes of the WAL read");
        assert_eq!(sec.get(format!("w-more{round}")).unwrap(), Some(b"v".to_vec()));
    }
    assert_eq!(sec.get("w019999").unwrap(), Some(vec![b'v'; 100]));
    drop(primary);
}

/// The primary in the middle of appending a MANIFEST record (the MANIFEST shown cut inside its
/// last record): a catch-up succeeds with the state of the records before it (the new table is
/// not in its version, its keys still come from the WAL), and the next catch-up, once the
/// record is whole, reads it. Cut at every length inside the record.
#[test]
fn a_manifest_record_still_being_appended_is_read_by_the_next_catch_up() {
    let fs = counting_fs();
    let mut o = opts(fs.clone());
    // No compaction deletes tables the state before the cut names (a primary deletes them
    // only once the record is whole).
    o.set_disable_auto_compactions(true);
    let primary = DB::open_cf(&o, "/p", ["two"]).unwrap();
    let two = primary.cf_handle("two").unwrap();
    let sec = DB::open_cf_as_secondary(&o, "/p", "/s", ["two"]).unwrap();
    let stwo = sec.cf_handle("two").unwrap();
    let files = |db: &DB, cf: &shale::ColumnFamily| {
        db.property_int_value_cf(cf, "rocksdb.num-files-at-level0")
            .unwrap()
            .unwrap()
    };
    for round in 0..4u64 {
        // The default family keeps the WAL alive: the flush of `two` is one MANIFEST record
        // and deletes nothing the older state needs.
        primary.put(format!("d{round}"), b"in-the-wal").unwrap();
        primary.put_cf(&two, format!("t{round}"), b"flushed").unwrap();
        let before = manifest_size(&fs);
        primary.flush_cf(&two).unwrap();
        let record = manifest_size(&fs) - before;
        assert!(record > 20, "a flush edit of {record} bytes");
        for cut in [1, record / 2, record - 1] {
            fs.cut.store(cut, Ordering::Relaxed);
            sec.try_catch_up_with_primary().unwrap();
            assert_eq!(files(&sec, &stwo), round, "round {round} cut {cut}: the table not yet");
            assert_eq!(
                sec.get_cf(&stwo, format!("t{round}")).unwrap(),
                Some(b"flushed".to_vec())
            );
        }
        fs.cut.store(0, Ordering::Relaxed);
        sec.try_catch_up_with_primary().unwrap();
        assert_eq!(files(&sec, &stwo), round + 1, "round {round}: the whole record read");
        let fresh = DB::open_cf_as_secondary(&o, "/p", format!("/f{round}"), ["two"]).unwrap();
        same(&sec, &fresh, &format!("round {round}"));
    }
}

/// Every call that would write gives NotSupported on a secondary, and leaves the primary's
/// directory as it was (names and sizes).
#[test]
fn a_secondary_refuses_every_write_and_changes_nothing() {
    let fs = MemFs::new();
    let o = opts(Arc::new(fs.clone()));
    let primary = DB::open_cf(&o, "/p", ["two"]).unwrap();
    primary.put(b"k", b"v").unwrap();
    primary.flush().unwrap();
    primary.put(b"w", b"in-the-wal").unwrap();
    let sec = DB::open_cf_as_secondary(&o, "/p", "/s", ["two"]).unwrap();
    let two = sec.cf_handle("two").unwrap();
    // A table to ingest, written beside the DB.
    let mut w = shale::SstFileWriter::create(&o);
    w.open("/ext.sst").unwrap();
    w.put(b"x", b"1").unwrap();
    w.finish().unwrap();
    let listing = |fs: &MemFs| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = fs
            .list(Path::new("/p"))
            .unwrap()
            .into_iter()
            .map(|n| {
                let size = fs.file_size(&Path::new("/p").join(&n)).unwrap_or(0);
                (n, size)
            })
            .collect();
        v.sort();
        v
    };
    let before = listing(&fs);
    let mut batch = shale::WriteBatch::default();
    batch.put(b"b", b"1");
    let refused: Vec<(&str, shale::error::Result<()>)> = vec![
        ("put", sec.put(b"k", b"w")),
        ("put_cf", sec.put_cf(&two, b"k", b"w")),
        ("delete", sec.delete(b"k")),
        ("single_delete", sec.single_delete(b"k")),
        ("merge", sec.merge(b"k", b"+")),
        ("delete_range", sec.delete_range(b"a", b"z")),
        ("put_entity", sec.put_entity(b"e", &[(b"c", b"v")])),
        ("write", sec.write(batch)),
        ("flush", sec.flush()),
        ("flush_cf", sec.flush_cf(&two)),
        ("compact_range", sec.compact_range(None::<&[u8]>, None::<&[u8]>)),
        (
            "compact_range_cf",
            sec.compact_range_cf(&two, None::<&[u8]>, None::<&[u8]>),
        ),
        ("ingest_external_file", sec.ingest_external_file(vec!["/ext.sst"])),
        ("delete_file_in_range", sec.delete_file_in_range(b"a", b"z")),
        ("create_cf", sec.create_cf("three", &o)),
        ("drop_cf", sec.drop_cf("two")),
    ];
    for (what, r) in refused {
        assert!(matches!(r, Err(shale::Error::NotSupported(_))), "{what}: {r:?}");
    }
    assert_eq!(listing(&fs), before, "the primary's files");
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(sec.get(b"w").unwrap(), Some(b"in-the-wal".to_vec()));
    assert_eq!(sec.get(b"x").unwrap(), None);
}

/// Records a catch-up adds to a memtable readers already hold carry sequence numbers above
/// what those readers see: an iterator and a snapshot from before the catch-up keep their
/// view of WAL-only data, and reads after it see the new records.
#[test]
fn readers_of_a_memtable_a_catch_up_adds_to_keep_their_view() {
    let fs = MemFs::new();
    let mut o = opts(Arc::new(fs.clone()));
    o.set_write_buffer_size(4 << 20);
    let primary = DB::open(&o, "/p").unwrap();
    for i in 0..100 {
        primary.put(key(i), b"old").unwrap();
    }
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    let snap = sec.snapshot();
    let mut it = sec.raw_iterator();
    it.seek_to_first();
    for i in 0..200 {
        primary.put(key(i), b"new").unwrap();
    }
    sec.try_catch_up_with_primary().unwrap();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value().unwrap(), b"old", "{:?}", it.key());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 100, "the iterator from before");
    assert_eq!(snap.get(key(5)).unwrap(), Some(b"old".to_vec()));
    assert_eq!(snap.get(key(150)).unwrap(), None);
    assert_eq!(sec.get(key(5)).unwrap(), Some(b"new".to_vec()));
    assert_eq!(sec.get(key(150)).unwrap(), Some(b"new".to_vec()));
}

/// Reads hex lines `key value` up to `end` from a rocksdict helper.
fn read_dump(out: &mut impl std::io::BufRead) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the rocksdict helper ended early"
        );
        let line = line.trim();
        if line == "end" {
            return m;
        }
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        m.insert(k.to_string(), v.to_string());
    }
}

fn hex_dump(db: &DB) -> BTreeMap<String, String> {
    dump_cf(db, "default")
        .into_iter()
        .map(|(k, v)| (crate::rocksdb_tools::hex(&k), crate::rocksdb_tools::hex(&v)))
        .collect()
}

fn rd_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_secondary.py")
}

/// The rocksdict helper in mode `args[0]`, driven through its stdin and read from its stdout.
fn rd_helper(
    python: &Path,
    args: &[&std::ffi::OsStr],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let mut child = std::process::Command::new(python)
        .arg(rd_script())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let stdin = child.stdin.take().unwrap();
    (child, stdin, out)
}

/// A live RocksDB primary (rocksdict, another process) that writes, deletes, deletes ranges,
/// flushes and compacts, round after round, followed by one long-running Shale secondary:
/// after each round's catch-up it holds what the primary holds, and so does a Shale secondary
/// opened fresh.
#[test]
fn a_long_running_shale_secondary_follows_a_rocksdb_primary_through_flushes_and_compactions() {
    let Some(python) = crate::rocksdb_tools::python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p");
    let (mut child, mut stdin, mut out) = rd_helper(&python, &["serve".as_ref(), p.as_os_str()]);
    use std::io::Write;
    writeln!(stdin, "round 0").unwrap();
    let want = read_dump(&mut out);
    let o = Options::default();
    let sec = DB::open_as_secondary(&o, &p, dir.path().join("s")).unwrap();
    assert!(hex_dump(&sec) == want, "at the open");
    for round in 1..7 {
        writeln!(stdin, "round {round}").unwrap();
        let want = read_dump(&mut out);
        sec.try_catch_up_with_primary().unwrap();
        assert!(hex_dump(&sec) == want, "round {round}: the long-running secondary");
        let fresh = DB::open_as_secondary(&o, &p, dir.path().join(format!("f{round}"))).unwrap();
        assert!(hex_dump(&fresh) == want, "round {round}: a fresh secondary");
    }
    writeln!(stdin, "quit").unwrap();
    assert!(child.wait().unwrap().success());
}

/// A live Shale primary that writes, deletes, flushes, compacts and reopens (a new MANIFEST),
/// read round after round by RocksDB secondaries (rocksdict, other processes): one opened
/// fresh each round holds what the primary holds; a long-running one catches up each round
/// without error. (Its contents are not compared: RocksDB 9's secondary keeps replayed WAL
/// entries in its active memtable after the primary flushed them, and serves them over newer
/// values in tables — facebook/rocksdb#14444 and #15051; it does so with a RocksDB primary
/// too.)
#[test]
fn rocksdb_secondaries_read_a_live_shale_primary_through_flushes_compactions_and_a_reopen() {
    let Some(python) = crate::rocksdb_tools::python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p");
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(64 << 10);
    let mut primary = DB::open(&o, &p).unwrap();
    primary.put(b"start", b"1").unwrap();
    let s = dir.path().join("s");
    let (mut child, mut stdin, mut out) = rd_helper(&python, &["follow".as_ref(), p.as_os_str(), s.as_os_str()]);
    use std::io::Write;
    for round in 0..8u64 {
        for i in round * 50..round * 50 + 400 {
            primary
                .put(key(i), format!("r{round}-{i}").repeat(1 + i as usize % 5))
                .unwrap();
        }
        for i in (0..round * 50 + 400).step_by(7) {
            primary.delete(key(i)).unwrap();
        }
        if round % 2 == 1 {
            primary.flush().unwrap();
        }
        if round % 3 == 2 {
            primary.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        if round == 5 {
            drop(primary);
            primary = DB::open(&o, &p).unwrap();
        }
        writeln!(stdin, "catch").unwrap();
        let long_running = read_dump(&mut out);
        assert!(!long_running.is_empty(), "round {round}");
        let fresh = crate::rocksdb_tools::run(
            std::process::Command::new(&python)
                .arg(rd_script())
                .arg("read")
                .arg(&p)
                .arg(dir.path().join(format!("f{round}"))),
        );
        let got: BTreeMap<String, String> = fresh
            .lines()
            .map(|l| {
                let (k, v) = l.split_once(' ').unwrap_or((l, ""));
                (k.to_string(), v.to_string())
            })
            .collect();
        let want = hex_dump(&primary);
        assert!(
            got == want,
            "round {round}: a fresh RocksDB secondary: {} keys, the primary {}",
            got.len(),
            want.len()
        );
    }
    writeln!(stdin, "quit").unwrap();
    assert!(child.wait().unwrap().success());
}

/// Found by `shale stress --secondary_catch_up_one_in` (seed 4712, run seed 1004715) in the
/// first WAL tail: a primary that writes zeros ahead of its WAL's end cuts them off when it
/// closes the WAL, and a catch-up that had opened the WAL before (seeing its size with the
/// zeros) failed with `Corruption: truncated read`. The WAL shrinking between the open and the
/// read is read again at its new size.
#[test]
fn a_wal_cut_shorter_while_a_catch_up_reads_it_is_read_again() {
    let fs = counting_fs();
    let o = opts(fs.clone());
    let primary = DB::open(&o, "/p").unwrap();
    for i in 0..100 {
        primary.put(key(i), b"v").unwrap();
    }
    let path = newest_wal(&fs.inner, "/p");
    let data = fs.inner.read_all(&path).unwrap();
    // The WAL as a primary writing zeros ahead leaves it while it is open.
    let mut f = fs.inner.new_writable(&path).unwrap();
    f.append(&data).unwrap();
    f.append(&[0u8; 40_000]).unwrap();
    drop(f);
    // Its zeros cut off (the primary closed it) right after the secondary opened it.
    let (inner, len) = (fs.inner.clone(), data.len());
    let p2 = path.clone();
    *fs.after_wal_open.lock().unwrap() = Some(Box::new(move || {
        assert!(inner.truncate(&p2, len));
    }));
    let sec = DB::open_as_secondary(&o, "/p", "/s").unwrap();
    assert!(fs.after_wal_open.lock().unwrap().is_none(), "the hook ran");
    for i in 0..100 {
        assert_eq!(sec.get(key(i)).unwrap(), Some(b"v".to_vec()), "key {i}");
    }
}

/// The path of the newest WAL in `dir`.
pub(crate) fn newest_wal(fs: &MemFs, dir: &str) -> std::path::PathBuf {
    let name = fs
        .list(Path::new(dir))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .max()
        .unwrap();
    Path::new(dir).join(name)
}
