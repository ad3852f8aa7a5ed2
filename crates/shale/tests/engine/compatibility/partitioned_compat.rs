//! Partitioned index (`kTwoLevelIndexSearch`) and partitioned filters shared with real RocksDB,
//! both ways: databases written by Debian's RocksDB 7.8 `db_bench --partition_index_and_filters`
//! / `--partition_index` and by rocksdict (RocksDB 9.x) open in Shale with exactly the content
//! `ldb scan` / rocksdict shows, with index and filter blocks in the table or in the block
//! cache; databases Shale writes with partitioned index and filters pass RocksDB's
//! `sst_dump --command=check --verify_checksum`, show the same partition properties there, and
//! read the same in `ldb` and in rocksdict (which learns the index type from Shale's OPTIONS
//! file).
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! (set by `.ci/run`) a missing tool fails the test instead.

use crate::rocksdb_tools;

use std::path::Path;
use std::process::Command;

use rocksdb_tools::*;
use shale::{BlockBasedIndexType, BlockBasedOptions, Options, DB};

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_partitioned.py")
}

/// Options reading (and writing) partitioned tables, index and filter blocks in the cache or
/// not.
fn opts(in_cache: bool, partitioned: bool) -> Options {
    let mut o = Options::default();
    let mut b = BlockBasedOptions::default();
    b.set_cache_index_and_filter_blocks(in_cache);
    b.set_lru_cache_capacity(256 << 10);
    if partitioned {
        b.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        b.set_partition_filters(true);
        b.set_metadata_block_size(256);
    }
    o.set_block_based_table_factory(&b);
    o
}

/// Shale reads `dir` (read-only) exactly as `expect`, with gets of a sample, both with index
/// and filter blocks held by the tables and in the block cache.
fn check_shale_reads(dir: &Path, expect: &Kv, what: &str) {
    for in_cache in [false, true] {
        let db = DB::open_for_read_only(&opts(in_cache, false), dir, false).unwrap();
        assert_same(&shale_dump(&db), expect, &format!("{what}: scan (cache {in_cache})"));
        for (k, v) in expect.iter().step_by(11) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get");
            let mut absent = k.clone();
            absent.push(0);
            assert_eq!(db.get(&absent).unwrap(), None, "{what}: get of an absent key");
        }
    }
}

/// Every table of `dir` is partitioned (index type 2 with index partitions) per Shale's
/// sst_dump, which also checks them.
fn assert_partitioned(dir: &Path, with_filter: bool, what: &str) {
    let o = shale::tools::SstDumpOptions {
        command: "check".into(),
        show_properties: true,
        ..Default::default()
    };
    let text = shale::tools::sst_dump(dir, &o).unwrap();
    let tables = sst_files(dir).len();
    assert!(tables > 0, "{what}: no table");
    assert_eq!(text.matches("The file is ok").count(), tables, "{what}: {text}");
    assert_eq!(text.matches("# index partitions: ").count(), tables, "{what}: {text}");
    let metas: Vec<String> = sst_files(dir)
        .iter()
        .map(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned())
        .collect();
    for m in metas {
        assert_eq!(
            m.contains("partitionedfilter.rocksdb.BuiltinBloomFilter"),
            with_filter,
            "{what}"
        );
    }
}

/// `db_bench` 7.8 databases with partitioned index and filters, and with a partitioned index
/// alone, read in Shale as `ldb scan` shows them.
#[test]
fn shale_reads_rocksdb_partitioned_databases() {
    let Some([db_bench, ldb]) = find(["db_bench", "ldb"]) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    for (flag, with_filter) in [
        ("--partition_index_and_filters=1", true),
        ("--partition_index=1", false),
    ] {
        let dir = root.path().join(&flag[2..18]);
        run(Command::new(&db_bench).arg(format!("--db={}", dir.display())).args([
            "--benchmarks=fillrandom,overwrite,deleterandom",
            "--num=6000",
            "--bloom_bits=10",
            "--metadata_block_size=256",
            "--compression_type=none",
            "--write_buffer_size=131072",
            "--disable_auto_compactions=1",
            "--seed=5",
            flag,
        ]));
        assert_partitioned(&dir, with_filter, flag);
        let expect = ldb_scan(&ldb, &dir);
        assert!(expect.len() > 1000, "{flag}: {} keys", expect.len());
        check_shale_reads(&dir, &expect, flag);
    }
}

/// A rocksdict (RocksDB 9.x) database with partitioned index and filters reads the same in
/// Shale.
#[test]
fn shale_reads_rocksdict_partitioned_database() {
    let Some(py) = python_with_rocksdict() else { return };
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rd");
    let out = run(Command::new(&py).arg(script()).arg("write").arg(&dir));
    let expect: Kv = out
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (unhex(k), unhex(v))
        })
        .collect();
    assert!(expect.len() > 3000);
    assert_partitioned(&dir, true, "rocksdict");
    check_shale_reads(&dir, &expect, "rocksdict");
}

/// A Shale database with partitioned index and filters: RocksDB's sst_dump verifies every
/// table and reports the partitions Shale records; ldb and rocksdict read what Shale wrote.
#[test]
fn rocksdb_reads_shale_partitioned_database() {
    let Some([ldb, sst_dump]) = find(["ldb", "sst_dump"]) else {
        return;
    };
    let python = python_with_rocksdict();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("shale");
    let mut o = opts(true, true);
    o.create_if_missing(true);
    o.set_write_buffer_size(64 << 10);
    let mut expect = Kv::new();
    {
        let db = DB::open(&o, &dir).unwrap();
        for round in 0..3u32 {
            for i in 0..3000u32 {
                let k = format!("key{:08}", i * 7 % 3000);
                let v = format!("r{round}-{i}-{}", "v".repeat((i % 40) as usize));
                db.put(k.as_bytes(), v.as_bytes()).unwrap();
                expect.insert(k.into_bytes(), v.into_bytes());
            }
            for i in (round..3000).step_by(11) {
                let k = format!("key{:08}", i);
                db.delete(k.as_bytes()).unwrap();
                expect.remove(k.as_bytes());
            }
            db.flush().unwrap();
            if round == 1 {
                db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
            }
        }
    }
    assert_partitioned(&dir, true, "shale");
    let options = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = std::fs::read_to_string(options).unwrap();
    assert!(text.contains("index_type=kTwoLevelIndexSearch"), "{text}");
    assert!(text.contains("partition_filters=true"), "{text}");
    assert!(text.contains("metadata_block_size=256"), "{text}");
    for f in sst_files(&dir) {
        let out = run(Command::new(&sst_dump)
            .arg(format!("--file={}", f.display()))
            .args(["--command=check", "--verify_checksum"]));
        assert!(!out.contains("Corruption"), "{out}");
        let props = run(Command::new(&sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--show_properties"));
        let ours = shale::tools::sst_dump(
            &f,
            &shale::tools::SstDumpOptions {
                command: "none".into(),
                show_properties: true,
                ..Default::default()
            },
        )
        .unwrap();
        for name in ["# index partitions: ", "top-level index size: ", "filter block size: "] {
            let line = |t: &str| t.lines().find(|l| l.contains(name)).map(|l| l.trim().to_string());
            assert!(line(&props).is_some(), "RocksDB shows no {name:?}: {props}");
            assert_eq!(line(&props), line(&ours), "{}", f.display());
        }
        assert!(props.contains("index.type: 0x02000000"), "{props}");
    }
    assert_same(&ldb_scan(&ldb, &dir), &expect, "ldb scan");
    for (k, v) in expect.iter().step_by(expect.len() / 5) {
        assert_eq!(&ldb_get(&ldb, &dir, k), v, "ldb get {}", hex(k));
    }
    if let Some(py) = python {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(&dir, copy.path());
        let keys: Vec<String> = expect.keys().step_by(7).map(|k| hex(k)).collect();
        let out = run(Command::new(&py).arg(script()).arg("read").arg(copy.path()).args(&keys));
        let mut scan = Kv::new();
        for l in out.lines() {
            let p: Vec<&str> = l.split(' ').collect();
            match p.as_slice() {
                ["S", k, v] => {
                    scan.insert(unhex(k), unhex(v));
                }
                ["G", k, v] => {
                    assert_ne!(*v, "MISSING", "rocksdict get of {k}");
                    assert_eq!(expect.get(&unhex(k)), Some(&unhex(v)), "rocksdict get of {k}");
                }
                _ => {}
            }
        }
        assert_same(&scan, &expect, "rocksdict scan");
    }
}
