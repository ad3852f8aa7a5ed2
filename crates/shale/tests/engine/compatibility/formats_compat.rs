//! Whole databases of PlainTable and CuckooTable files shared with real RocksDB, both ways:
//! databases written by Debian's RocksDB 7.8 `db_bench --use_cuckoo_table` / `--use_plain_table`
//! open in Shale (read-only and read-write) with exactly the content `ldb scan` shows, and
//! databases Shale writes with those factories open in RocksDB 7.8's `ldb` and in `rocksdict`
//! (RocksDB 9.x, `Options.load_latest`), which both learn the table factory from the OPTIONS file
//! Shale writes. Block-based databases with that OPTIONS file still open in both.
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! (set by `.ci/run`) a missing tool fails the test instead.
#![allow(clippy::field_reassign_with_default)]

use crate::rocksdb_tools;

use std::path::Path;
use std::process::Command;

use rocksdb_tools::*;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{CuckooTableOptions, Options, PlainTableFactoryOptions, DB};

/// The database as rocksdict sees it when it opens it with `Options.load_latest` (the OPTIONS
/// file), read-only; also gets each key of `keys` and checks the value matches the scan.
fn rocksdict_dump(python: &Path, db: &Path, keys: &[Vec<u8>]) -> Kv {
    let script = r#"
import sys
from rocksdict import AccessType, Options, Rdict
opts, _ = Options.load_latest(sys.argv[1])
opts.set_raw_mode(True) if hasattr(opts, "set_raw_mode") else None
db = Rdict(sys.argv[1], options=opts, access_type=AccessType.read_only())
seen = {}
for k, v in db.items():
    seen[k] = v
    print("S", k.hex(), v.hex())
for k in sys.argv[2:]:
    v = db.get(bytes.fromhex(k))
    print("G", k, "MISSING" if v is None else v.hex())
db.close()
"#;
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    let out = run(Command::new(python)
        .args(["-c", script])
        .arg(copy.path())
        .args(keys.iter().map(|k| hex(k))));
    let mut scan = Kv::new();
    let mut got = Kv::new();
    for l in out.lines() {
        let mut it = l.split(' ');
        match (it.next(), it.next(), it.next()) {
            (Some("S"), Some(k), Some(v)) => {
                scan.insert(unhex(k), unhex(v));
            }
            (Some("G"), Some(k), Some(v)) => {
                assert_ne!(v, "MISSING", "rocksdict get of {k} found nothing");
                got.insert(unhex(k), unhex(v));
            }
            _ => {}
        }
    }
    for (k, v) in &got {
        assert_eq!(scan.get(k), Some(v), "rocksdict get vs scan for {}", hex(k));
    }
    scan
}

fn file_names(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| pred(n))
        .collect();
    v.sort();
    v
}

fn plain_opts() -> Options {
    let mut o = Options::default();
    o.set_prefix_extractor(new_fixed_prefix_transform(8));
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    });
    o.set_allow_mmap_reads(true);
    o
}

fn cuckoo_opts() -> Options {
    let mut o = Options::default();
    o.set_cuckoo_table_factory(&CuckooTableOptions::default());
    o.set_allow_mmap_reads(true);
    o
}

/// Check a db_bench database in Shale: read-only and read-write opens show what `ldb scan`
/// shows, gets find every key, and after Shale writes and compacts, ldb still reads it.
fn check_db_bench_db(ldb: &Path, dir: &Path, o: &Options, what: &str) {
    assert!(
        !file_names(dir, |n| n.ends_with(".sst")).is_empty(),
        "{what}: db_bench wrote no table"
    );
    let expect = ldb_scan(ldb, dir);
    assert!(expect.len() > 500, "{what}: ldb shows {} keys", expect.len());
    {
        let db = DB::open_for_read_only(o, dir, false).unwrap();
        assert_same(&shale_dump(&db), &expect, &format!("{what}: read-only scan"));
        let keys: Vec<&Vec<u8>> = expect.keys().step_by(3).collect();
        for (k, r) in keys.iter().zip(db.multi_get(keys.iter())) {
            assert_eq!(r.unwrap().as_ref(), expect.get(*k), "{what}: multi_get");
        }
        for (k, v) in expect.iter().step_by(5) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get");
        }
    }
    // the options db_bench's OPTIONS file gives are enough to read the DB (what `shale ldb` does)
    let mut loaded = Options::default();
    assert!(
        shale::tools::load_options_file(dir, &mut loaded).unwrap(),
        "{what}: OPTIONS file"
    );
    assert_eq!(
        loaded.get_prefix_extractor().as_ref().map(|p| p.name().to_string()),
        o.get_prefix_extractor().as_ref().map(|p| p.name().to_string()),
        "{what}: prefix extractor from the OPTIONS file"
    );
    {
        let db = DB::open_for_read_only(&loaded, dir, false).unwrap();
        assert_same(
            &shale_dump(&db),
            &expect,
            &format!("{what}: opened with the OPTIONS file's options"),
        );
    }
    // Shale's sst_dump checks and scans RocksDB's tables
    let tables = file_names(dir, |n| n.ends_with(".sst")).len();
    let dump = |command: &str| {
        let o = shale::tools::SstDumpOptions {
            command: command.to_string(),
            show_properties: true,
            ..Default::default()
        };
        shale::tools::sst_dump(dir, &o).unwrap()
    };
    let text = dump("check");
    assert_eq!(text.matches("The file is ok").count(), tables, "{what}: {text}");
    let entries: usize = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("# entries: "))
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    let text = dump("scan");
    assert_eq!(
        text.lines().filter(|l| l.contains(" seq:")).count(),
        entries,
        "{what}: sst_dump scan"
    );
    // read-write: Shale rewrites everything into its own tables of the same format
    let mut o = o.clone();
    o.create_if_missing(false);
    let db = DB::open(&o, dir).unwrap();
    assert_same(&shale_dump(&db), &expect, &format!("{what}: read-write scan"));
    let mut expect = expect;
    let first = expect.keys().next().unwrap().clone();
    let v = vec![b'z'; expect[&first].len()];
    db.put(&first, &v).unwrap();
    expect.insert(first, v);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_same(&shale_dump(&db), &expect, &format!("{what}: after compaction"));
    drop(db);
    assert_same(
        &ldb_scan(ldb, dir),
        &expect,
        &format!("{what}: ldb after Shale compacted"),
    );
}

/// `db_bench --use_cuckoo_table` and `--use_plain_table --prefix_size=8` databases (several
/// flushed tables, overwrites and deletions; the last writes only in the WAL) open in Shale
/// with the content `ldb scan` shows.
#[test]
fn shale_reads_db_bench_plain_and_cuckoo_databases() {
    let Some([db_bench, ldb]) = find(["db_bench", "ldb"]) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let common = [
        "--key_size=16",
        "--value_size=20",
        "--mmap_read=1",
        "--compression_type=none",
        "--write_buffer_size=32768",
        "--disable_auto_compactions=1",
        "--seed=11",
    ];
    let cuckoo = root.path().join("cuckoo");
    // cuckoo tables hold one version per key: fillrandom alone (db_bench's cuckoo flushes
    // would fail on deletions in the same memtable as their puts)
    run(Command::new(&db_bench)
        .arg(format!("--db={}", cuckoo.display()))
        .args(["--benchmarks=fillrandom", "--num=3000", "--use_cuckoo_table=1"])
        .args(common));
    check_db_bench_db(&ldb, &cuckoo, &cuckoo_opts(), "cuckoo");

    let plain = root.path().join("plain");
    run(Command::new(&db_bench)
        .arg(format!("--db={}", plain.display()))
        .args([
            "--benchmarks=fillrandom,overwrite,deleterandom",
            "--num=3000",
            "--use_plain_table=1",
            "--prefix_size=8",
            "--allow_concurrent_memtable_write=false",
        ])
        .args(common));
    check_db_bench_db(&ldb, &plain, &plain_opts(), "plain");
}

/// Write a Shale DB with `o`: fixed 16-byte keys and 20-byte values, overwrites, deletions,
/// several flushes, a compaction and a WAL tail. Returns the live content.
fn write_shale_db(dir: &Path, o: &Options, deletes: bool) -> Kv {
    let mut o = o.clone();
    o.create_if_missing(true);
    o.set_write_buffer_size(16 << 10);
    let db = DB::open(&o, dir).unwrap();
    let mut expect = Kv::new();
    for round in 0..3u32 {
        for i in 0..1500u32 {
            let k = format!("{:08}{:08}", i % 97, i);
            let v = format!("r{round}-v{i:016}");
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            expect.insert(k.into_bytes(), v.into_bytes());
        }
        if deletes {
            for i in (round..1500).step_by(13) {
                let k = format!("{:08}{:08}", i % 97, i);
                db.delete(k.as_bytes()).unwrap();
                expect.remove(k.as_bytes());
            }
        }
        db.flush().unwrap();
        if round == 1 {
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
    }
    drop(db);
    // reopen (a second OPTIONS file) and leave a WAL tail
    let db = DB::open(&o, dir).unwrap();
    for i in 0..40u32 {
        let k = format!("{:08}{:08}", 500 + i, i);
        let v = format!("tail-{i:015}");
        db.put(k.as_bytes(), v.as_bytes()).unwrap();
        expect.insert(k.into_bytes(), v.into_bytes());
    }
    drop(db);
    expect
}

fn check_rocksdb_reads(dir: &Path, expect: &Kv, ldb: &Path, python: Option<&Path>, what: &str) {
    let options = file_names(dir, |n| n.starts_with("OPTIONS-"));
    assert_eq!(
        options.len(),
        2,
        "{what}: the newest two OPTIONS files are kept: {options:?}"
    );
    assert!(!file_names(dir, |n| n.ends_with(".sst")).is_empty(), "{what}: no table");
    assert_same(&ldb_scan(ldb, dir), expect, &format!("{what}: ldb scan"));
    for (k, v) in expect.iter().step_by(expect.len() / 5) {
        assert_eq!(&ldb_get(ldb, dir, k), v, "{what}: ldb get {}", hex(k));
    }
    if let Some(py) = python {
        let keys: Vec<Vec<u8>> = expect.keys().step_by(7).cloned().collect();
        assert_same(&rocksdict_dump(py, dir, &keys), expect, &format!("{what}: rocksdict"));
    }
}

/// Shale databases of plain tables (prefix and total order), of cuckoo tables and of
/// block-based tables open in RocksDB 7.8's `ldb` and in rocksdict through Shale's OPTIONS file.
#[test]
fn rocksdb_reads_shale_plain_cuckoo_and_block_based_databases() {
    let Some(ldb) = tool("ldb") else { return };
    let python = python_with_rocksdict();
    let root = tempfile::tempdir().unwrap();

    let dir = root.path().join("plain");
    let expect = write_shale_db(&dir, &plain_opts(), true);
    check_rocksdb_reads(&dir, &expect, &ldb, python.as_deref(), "plain, prefix");

    let dir = root.path().join("plain-total");
    let mut o = Options::default();
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        hash_table_ratio: 0.0,
        ..Default::default()
    });
    let expect = write_shale_db(&dir, &o, true);
    check_rocksdb_reads(&dir, &expect, &ldb, python.as_deref(), "plain, total order");

    let dir = root.path().join("cuckoo");
    let expect = write_shale_db(&dir, &cuckoo_opts(), false);
    check_rocksdb_reads(&dir, &expect, &ldb, python.as_deref(), "cuckoo");

    let dir = root.path().join("block");
    let expect = write_shale_db(&dir, &Options::default(), true);
    check_rocksdb_reads(&dir, &expect, &ldb, python.as_deref(), "block-based");
}
