//! External SST files: `SstFileWriter`, `ingest_external_file` (placement, global sequence
//! numbers, snapshots, bad input, crashes) and `delete_file_in_range`.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use shale::fs::testing::FaultFs;
use shale::fs::testing::FaultKind;
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{Error, IngestExternalFileOptions, Options, ReadOptions, SstFileWriter, DB};

use crate::common;
use common::crash_after::CrashAfter;

fn mem_opts(fs: &MemFs) -> Options {
    fs.create_dir_all(Path::new("/")).unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

fn write_sst(opts: &Options, path: &str, kvs: &[(&str, &str)]) {
    let mut w = SstFileWriter::create(opts);
    w.open(path).unwrap();
    for (k, v) in kvs {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
    assert!(w.file_size() > 0);
}

fn files_at(db: &DB, level: usize) -> usize {
    db.property_value(&format!("rocksdb.num-files-at-level{level}"))
        .unwrap()
        .unwrap()
        .parse()
        .unwrap()
}

fn get(db: &DB, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

#[test]
fn ingest_into_an_empty_db_goes_to_the_last_level_without_a_sequence_number() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    write_sst(&opts, "/ext1.sst", &[("a", "1"), ("b", "2"), ("c", "3")]);
    let db = DB::open(&opts, "/db").unwrap();
    db.ingest_external_file(vec!["/ext1.sst"]).unwrap();
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
    assert_eq!(files_at(&db, 6), 1);
    assert_eq!(db.latest_sequence_number(), 0);
    // The source is kept (copy), and the data survives a reopen.
    assert!(fs.exists(Path::new("/ext1.sst")));
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "c").as_deref(), Some("3"));
}

#[test]
fn a_file_overlapping_the_memtable_is_flushed_first_and_gets_a_global_seqno() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    db.put("k", "old").unwrap();
    db.put("z", "other").unwrap();
    let before = db.latest_sequence_number();
    write_sst(&opts, "/ext.sst", &[("k", "new")]);
    db.ingest_external_file(vec!["/ext.sst"]).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("new"));
    assert_eq!(db.latest_sequence_number(), before + 1, "one sequence number consumed");
    assert_eq!(
        files_at(&db, 0),
        2,
        "the memtable's flush and the ingested file are in L0"
    );
    // The global seqno lives in the MANIFEST only: a reopen still reads the new value.
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("new"));
    db.put("k", "newer").unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("newer"));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("newer"));
    assert_eq!(get(&db, "z").as_deref(), Some("other"));
}

#[test]
fn without_blocking_flush_an_overlapping_memtable_is_an_error() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    db.put("k", "old").unwrap();
    write_sst(&opts, "/ext.sst", &[("k", "new")]);
    let mut io = IngestExternalFileOptions::default();
    io.set_allow_blocking_flush(false);
    let e = db.ingest_external_file_opts(&io, vec!["/ext.sst"]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(get(&db, "k").as_deref(), Some("old"));
    // Nothing was left in the DB directory.
    let tables = fs
        .list(Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count();
    assert_eq!(tables, 0);
}

#[test]
fn a_snapshot_does_not_see_ingested_data() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    write_sst(&opts, "/ext.sst", &[("m", "x")]);
    db.ingest_external_file(vec!["/ext.sst"]).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt("m", &ro).unwrap(), None);
    assert_eq!(get(&db, "m").as_deref(), Some("x"));
    // Without snapshot consistency the file needs no sequence number and the snapshot sees it.
    write_sst(&opts, "/ext2.sst", &[("n", "y")]);
    let mut io = IngestExternalFileOptions::default();
    io.set_snapshot_consistency(false);
    db.ingest_external_file_opts(&io, vec!["/ext2.sst"]).unwrap();
    assert_eq!(db.get_opt("n", &ro).unwrap().as_deref(), Some(&b"y"[..]));
}

#[test]
fn files_go_to_the_lowest_level_above_the_first_overlap() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    write_sst(&opts, "/base.sst", &[("c", "1"), ("d", "1")]);
    db.ingest_external_file(vec!["/base.sst"]).unwrap();
    assert_eq!(files_at(&db, 6), 1);
    // Overlaps the L6 file: goes to L5 with a sequence number.
    write_sst(&opts, "/over.sst", &[("d", "2")]);
    db.ingest_external_file(vec!["/over.sst"]).unwrap();
    assert_eq!(files_at(&db, 5), 1);
    assert_eq!(get(&db, "d").as_deref(), Some("2"));
    // Disjoint from everything: L6 beside the first file.
    write_sst(&opts, "/apart.sst", &[("x", "3")]);
    db.ingest_external_file(vec!["/apart.sst"]).unwrap();
    assert_eq!(files_at(&db, 6), 2);
    // A seqno is needed but not allowed.
    write_sst(&opts, "/over2.sst", &[("c", "9")]);
    let mut io = IngestExternalFileOptions::default();
    io.set_allow_global_seqno(false);
    let e = db.ingest_external_file_opts(&io, vec!["/over2.sst"]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(get(&db, "c").as_deref(), Some("1"));
}

#[test]
fn move_files_links_and_removes_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let src = dir.path().join("ext.sst");
    let mut w = SstFileWriter::create(&opts);
    w.open(&src).unwrap();
    w.put("a", "1").unwrap();
    w.delete("b").unwrap();
    w.merge("c", "m").unwrap();
    w.finish().unwrap();
    let db = DB::open(&opts, dir.path().join("db")).unwrap();
    let mut io = IngestExternalFileOptions::default();
    io.set_move_files(true);
    db.ingest_external_file_opts(&io, vec![&src]).unwrap();
    assert!(!src.exists());
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
    assert_eq!(get(&db, "b"), None);
}

#[test]
fn ingest_into_a_column_family() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    db.create_cf("cf1", &Options::default()).unwrap();
    let cf = db.cf_handle("cf1").unwrap();
    write_sst(&opts, "/ext.sst", &[("k", "v")]);
    db.ingest_external_file_cf(&cf, vec!["/ext.sst"]).unwrap();
    assert_eq!(db.get_cf(&cf, "k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(get(&db, "k"), None);
}

#[test]
fn bad_input_is_refused_with_the_file_named() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    // unsorted and duplicate keys, at write time
    let mut w = SstFileWriter::create(&opts);
    w.open("/bad.sst").unwrap();
    w.put("b", "1").unwrap();
    let e = w.put("a", "1").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("ascending")),
        "{e}"
    );
    let e = w.put("b", "2").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let mut empty = SstFileWriter::create(&opts);
    empty.open("/empty.sst").unwrap();
    assert!(matches!(empty.finish(), Err(Error::InvalidArgument(_))));

    let db = DB::open(&opts, "/db").unwrap();
    // overlapping files
    write_sst(&opts, "/f1.sst", &[("a", "1"), ("m", "1")]);
    write_sst(&opts, "/f2.sst", &[("k", "2"), ("z", "2")]);
    let e = db.ingest_external_file(vec!["/f1.sst", "/f2.sst"]).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("f1.sst") && m.contains("f2.sst")),
        "{e}"
    );
    // missing file
    let e = db.ingest_external_file(vec!["/nope.sst"]).unwrap_err();
    assert!(e.to_string().contains("nope.sst"), "{e}");
    // another comparator
    let mut other = mem_opts(&fs);
    other.set_custom_comparator(Arc::new(shale::comparator::ReverseBytewiseComparator));
    let mut w = SstFileWriter::create(&other);
    w.open("/rev.sst").unwrap();
    w.put("b", "1").unwrap();
    w.put("a", "1").unwrap();
    w.finish().unwrap();
    let e = db.ingest_external_file(vec!["/rev.sst"]).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("rev.sst") && m.contains("comparator")),
        "{e}"
    );
    // a DB's own table file is not an external file
    db.put("q", "1").unwrap();
    db.flush().unwrap();
    let own = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .unwrap();
    let e = db.ingest_external_file(vec![format!("/db/{own}")]).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    // ingest_behind needs allow_ingest_behind
    let mut io = IngestExternalFileOptions::default();
    io.set_ingest_behind(true);
    assert!(matches!(
        db.ingest_external_file_opts(&io, vec!["/f1.sst"]),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(get(&db, "a"), None);
}

/// A crash (every file-system operation failing, then the unsynced state dropped) at any point
/// of an ingest of two files leaves both files in the DB or neither, and no stray copy.
#[test]
fn a_crash_during_ingest_leaves_all_files_or_none() {
    let mut outcomes = (0, 0);
    for budget in 0..60i64 {
        let fs = MemFs::new();
        let opts = mem_opts(&fs);
        write_sst(&opts, "/e1.sst", &[("a", "1"), ("b", "1")]);
        write_sst(&opts, "/e2.sst", &[("m", "2"), ("n", "2")]);
        {
            let db = DB::open(&opts, "/db").unwrap();
            db.put("a", "0").unwrap();
            db.flush().unwrap();
            drop(db);
        }
        let b = Arc::new(AtomicI64::new(i64::MAX));
        let mut copts = opts.clone();
        copts.set_env(Arc::new(CrashAfter {
            inner: Arc::new(fs.clone()),
            budget: b.clone(),
        }));
        let db = DB::open(&copts, "/db").unwrap();
        b.store(budget, Ordering::SeqCst);
        let r = db.ingest_external_file(vec!["/e1.sst", "/e2.sst"]);
        drop(db);
        fs.power_loss();
        let db = DB::open(&opts, "/db").unwrap();
        let (a, m) = (get(&db, "a"), get(&db, "m"));
        match (a.as_deref(), m.as_deref()) {
            (Some("1"), Some("2")) => outcomes.1 += 1,
            (Some("0"), None) => {
                assert!(
                    r.is_err(),
                    "budget {budget}: the ingest reported success but nothing is in"
                );
                outcomes.0 += 1
            }
            other => panic!("budget {budget}: half an ingest: {other:?}"),
        }
        drop(db);
        let live: Vec<String> = fs.list(Path::new("/db")).unwrap();
        assert!(!live.iter().any(|n| n.ends_with(".dbtmp")), "budget {budget}: {live:?}");
    }
    assert!(outcomes.0 > 0 && outcomes.1 > 0, "{outcomes:?}");
}

/// A failed MANIFEST write of an ingest (here its sync: the edit is in the file, so a reopen
/// would read it) is a background error, as in RocksDB: writes stop, the ingest is not visible,
/// and `resume()` writes a new MANIFEST from the state in memory, so the ingest stays undone
/// after a reopen too. Before this was fixed the DB went on taking writes and `resume()` did
/// nothing, and the reopen brought the "failed" ingest back (found by `shale stress` with
/// write faults: keys verified after `resume()` changed at the next reopen).
#[test]
fn a_failed_manifest_write_of_an_ingest_is_fail_stop_and_resume_settles_it() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let faults = FaultFs::new(Arc::new(fs.clone()));
    let mut fopts = opts.clone();
    fopts.set_env(Arc::new(faults.clone()));
    write_sst(&opts, "/e.sst", &[("a", "new"), ("b", "new")]);
    let db = DB::open(&fopts, "/db").unwrap();
    db.put("a", "old").unwrap();
    db.flush().unwrap();
    faults.inject(FaultKind::SyncEio, Some("MANIFEST"));
    db.ingest_external_file(vec!["/e.sst"])
        .expect_err("the MANIFEST sync failed");
    faults.clear();
    assert!(
        matches!(db.put("c", "1"), Err(Error::Background(_))),
        "writes must stop after a failed MANIFEST write"
    );
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
    db.resume().unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("old"));
    assert_eq!(get(&db, "b"), None);
    db.put("c", "1").unwrap();
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("old"), "the failed ingest came back");
    assert_eq!(get(&db, "b"), None);
    assert_eq!(get(&db, "c").as_deref(), Some("1"));
}

#[test]
fn delete_file_in_range_drops_whole_files_below_l0_only() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let db = DB::open(&opts, "/db").unwrap();
    // three L6 files by ingestion: [a,b] [c,d] [e,f]
    for (i, ks) in [["a", "b"], ["c", "d"], ["e", "f"]].iter().enumerate() {
        let p = format!("/x{i}.sst");
        write_sst(&opts, &p, &[(ks[0], "v"), (ks[1], "v")]);
        db.ingest_external_file(vec![p]).unwrap();
    }
    assert_eq!(files_at(&db, 6), 3);
    // an L0 file inside the range stays
    db.put("cc", "l0").unwrap();
    db.flush().unwrap();
    // [b, e] holds only [c,d] wholly (include_end: a file ending at `to` counts)
    db.delete_file_in_range("b", "f").unwrap();
    assert_eq!(files_at(&db, 6), 1);
    assert_eq!(get(&db, "a").as_deref(), Some("v"));
    assert_eq!(get(&db, "c"), None);
    assert_eq!(get(&db, "e"), None);
    assert_eq!(get(&db, "cc").as_deref(), Some("l0"));
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "d"), None);
    assert_eq!(get(&db, "a").as_deref(), Some("v"));
}

/// As RocksDB: by default an ingest checks the first and the last key of each file and trusts
/// the blocks between (their checksums are verified when they are read, so a damaged block is a
/// Corruption on read, never wrong data); `verify_checksums_before_ingest` reads every block
/// first and refuses the file.
#[test]
fn verify_checksums_before_ingest_reads_every_block_first() {
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compression_type(shale::DBCompressionType::None);
    let path = d.path().join("ext.sst");
    let mut w = SstFileWriter::create(&o);
    w.open(&path).unwrap();
    for i in 0..3000u32 {
        w.put(format!("k{i:06}"), format!("value-{i:06}-{}", "x".repeat(40)))
            .unwrap();
    }
    w.finish().unwrap();
    // damage one byte of a data block in the middle of the file (a value of key ~1500)
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(13)
        .position(|win| win == b"value-001500-")
        .expect("the value is stored uncompressed");
    bytes[at + 7] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();

    let db = DB::open(&o, d.path().join("db1")).unwrap();
    let mut io = IngestExternalFileOptions::default();
    io.set_verify_checksums_before_ingest(true);
    let e = db.ingest_external_file_opts(&io, vec![&path]).unwrap_err();
    assert!(matches!(&e, Error::Corruption { .. }), "{e}");
    assert!(e.to_string().contains("ext.sst"), "{e}");
    assert_eq!(db.get("k000000").unwrap(), None, "nothing was ingested");
    drop(db);

    let db = DB::open(&o, d.path().join("db2")).unwrap();
    db.ingest_external_file(vec![&path]).unwrap();
    assert!(db.get("k000000").unwrap().is_some());
    assert!(db.get("k002999").unwrap().is_some());
    let e = db.get("k001500").unwrap_err();
    assert!(matches!(&e, Error::Corruption { .. }), "{e}");
}

/// `SstFileWriter` hands the written pages back to the OS every MiB and once the file is synced
/// (RocksDB's `invalidate_page_cache`, on by default), and not at all when it is turned off. The
/// hint changes no data: the file ingests and reads back whole, on the real file system too.
#[test]
fn sst_file_writer_invalidates_the_page_cache_every_mib() {
    use shale::fs::ForwardingFs;
    use shale::fs::WritableFile;
    struct Counting {
        inner: Box<dyn WritableFile>,
        hints: Arc<AtomicI64>,
    }
    impl WritableFile for Counting {
        fn append(&mut self, data: &[u8]) -> shale::error::Result<()> {
            self.inner.append(data)
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
        fn invalidate_cache(&mut self) -> shale::error::Result<()> {
            self.hints.fetch_add(1, Ordering::SeqCst);
            self.inner.invalidate_cache()
        }
    }
    struct CountingFs(Arc<dyn FileSystem>, Arc<AtomicI64>);
    impl ForwardingFs for CountingFs {
        fn inner(&self) -> &dyn FileSystem {
            &*self.0
        }
        fn new_writable(&self, path: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
            Ok(Box::new(Counting {
                inner: self.0.new_writable(path)?,
                hints: self.1.clone(),
            }))
        }
    }
    let d = tempfile::tempdir().unwrap();
    let hints = Arc::new(AtomicI64::new(0));
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compression_type(shale::DBCompressionType::None);
    o.set_env(Arc::new(CountingFs(Arc::new(shale::fs::PosixFs), hints.clone())));
    let write = |path: &Path, invalidate: bool| {
        let mut w = SstFileWriter::create(&o);
        w.set_invalidate_page_cache(invalidate);
        w.open(path).unwrap();
        // ~5.5 MiB of table
        for i in 0..50_000u32 {
            w.put(format!("k{i:08}"), [b'v'; 100]).unwrap();
        }
        w.finish().unwrap();
        w.file_size()
    };
    let a = d.path().join("a.sst");
    let size = write(&a, true);
    let n = hints.swap(0, Ordering::SeqCst);
    let expect = (size >> 20) as i64; // one per whole MiB written, plus one after the sync
    assert!(n >= expect && n <= expect + 1, "{n} hints for a file of {size} bytes");
    let b = d.path().join("b.sst");
    write(&b, false);
    assert_eq!(hints.load(Ordering::SeqCst), 0, "no hint when turned off");
    assert_eq!(std::fs::read(&a).unwrap().len(), std::fs::read(&b).unwrap().len());
    let db = DB::open(&o, d.path().join("db")).unwrap();
    db.ingest_external_file(vec![&a]).unwrap();
    assert_eq!(db.iterator(shale::IteratorMode::Start).count(), 50_000);
    assert_eq!(db.get("k00049999").unwrap().as_deref(), Some(&[b'v'; 100][..]));
}
