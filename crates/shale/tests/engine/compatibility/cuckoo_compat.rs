//! CuckooTable compatibility with real RocksDB, both ways.
//!
//! * RocksDB 11.8.1 files (committed fixtures, `fixtures/cuckoo_rdb11`) read in Shale with the
//!   content RocksDB's `ldb` shows.
//! * Files written by Debian's `db_bench --use_cuckoo_table` (RocksDB 7.8), last-level and
//!   full-key ones, read in Shale with `ldb scan`'s content; rebuilt from their entries by
//!   Shale's builder they come out byte for byte the same.
//! * Files written by Shale (new values under RocksDB's keys) replace RocksDB's in a database,
//!   and RocksDB's `ldb scan` / `ldb get` read Shale's values. (`sst_dump` 7.8 refuses every
//!   cuckoo file, RocksDB's own too: "Unsupported table magic number"; `ldb` with the database's
//!   OPTIONS file is how RocksDB's tools read them.)
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! a missing tool fails the test instead.

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::tools::cuckoo::{write_cuckoo_file, CuckooFile, CuckooWriteOptions};
use shale::CuckooTableOptions;

struct Tools {
    ldb: PathBuf,
    db_bench: PathBuf,
}

fn tools() -> Option<Tools> {
    let [ldb, db_bench] = find(["ldb", "db_bench"])?;
    Some(Tools { ldb, db_bench })
}

/// (internal key, value) pairs in key order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// A cuckoo file's content as user key → value (Puts only; asserts it holds no deletions),
/// after checking that every bucket verifies and that get and multi_get agree with the scan.
fn read_cuckoo(path: &Path) -> (CuckooFile, Entries, Kv) {
    let f = CuckooFile::open(path, None).unwrap();
    f.verify().unwrap();
    let entries = f.scan().unwrap();
    let mut kv = Kv::new();
    let uks: Vec<Vec<u8>> = entries.iter().map(|(k, _)| k[..k.len() - 8].to_vec()).collect();
    for ((k, v), uk) in entries.iter().zip(&uks) {
        assert_eq!(k[k.len() - 8], 1, "only Puts expected in {}", path.display());
        assert_eq!(f.get(uk).unwrap(), Some((k.clone(), v.clone())));
        kv.insert(uk.clone(), v.clone());
    }
    let refs: Vec<&[u8]> = uks.iter().map(|k| k.as_slice()).collect();
    let got = f.multi_get(&refs).unwrap();
    assert!(got.iter().zip(&entries).all(|(g, (_, v))| g.as_ref() == Some(v)));
    let mut absent = uks.first().cloned().unwrap_or_default();
    if let Some(b) = absent.last_mut() {
        *b = b.wrapping_add(1);
    }
    if !kv.contains_key(&absent) {
        assert_eq!(f.get(&absent).unwrap(), None);
    }
    (f, entries, kv)
}

#[test]
fn rocksdb_11_cuckoo_fixtures_read_with_identical_content() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuckoo_rdb11");
    for (name, last_level, n) in [("last_level", true, 189), ("full_keys", false, 300)] {
        let expect = parse_scan(&std::fs::read_to_string(dir.join(format!("{name}.scan"))).unwrap());
        assert_eq!(expect.len(), n, "{name}");
        let (f, _, got) = read_cuckoo(&dir.join(format!("{name}.sst")));
        assert_eq!(f.is_last_level(), last_level, "{name}");
        assert_eq!(f.num_hash_func(), 2, "{name}");
        assert_eq!(f.hash_table_size(), (n as f64 / 0.9) as u64, "{name}");
        assert_eq!(got, expect, "{name}");
    }
}

/// The options a file was written with, from its properties (db_bench's hash_table_ratio and
/// max_search_depth are RocksDB's defaults).
fn same_options(f: &CuckooFile) -> CuckooWriteOptions {
    let p = f.properties();
    let s = |n: &str| String::from_utf8(p.get(n).cloned().unwrap_or_default()).unwrap();
    let file_number = p
        .get("rocksdb.original.file.number")
        .map(|v| {
            v.iter()
                .enumerate()
                .fold(0u64, |acc, (i, b)| acc | (((b & 0x7f) as u64) << (7 * i)))
        })
        .unwrap_or(0);
    CuckooWriteOptions {
        table: CuckooTableOptions {
            cuckoo_block_size: u32::from_le_bytes(p["rocksdb.cuckoo.hash.cuckooblocksize"][..4].try_into().unwrap()),
            identity_as_first_hash: p["rocksdb.cuckoo.hash.identityfirst"] == [1],
            use_module_hash: p["rocksdb.cuckoo.hash.usemodule"] == [1],
            ..Default::default()
        },
        column_family_name: s("rocksdb.column.family.name"),
        db_id: s("rocksdb.creating.db.identity"),
        db_session_id: s("rocksdb.creating.session.identity"),
        file_number,
        ..Default::default()
    }
}

/// Run db_bench with a cuckoo table: (database dir, ldb's view of it).
fn db_bench_cuckoo(t: &Tools, benchmarks: &str, extra: &[&str]) -> (tempfile::TempDir, Kv) {
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(&t.db_bench)
        .args([
            &format!("--benchmarks={benchmarks}"),
            "--use_cuckoo_table=1",
            "--mmap_read=1",
            "--num=3000",
            "--key_size=16",
            "--value_size=20",
            "--compression_type=none",
            "--disable_wal=1",
            &format!("--db={}", dir.path().display()),
        ])
        .args(extra));
    let expect = ldb_scan(&t.ldb, dir.path());
    assert!(!expect.is_empty());
    (dir, expect)
}

struct Scenario {
    benchmarks: &'static str,
    extra: &'static [&'static str],
    last_level: bool,
    /// db_bench's --cuckoo_hash_ratio
    ratio: f64,
    /// Least number of hash functions some file must use.
    min_hash_func: u32,
}

const SCENARIOS: &[Scenario] = &[
    // bottommost compaction output: sequence numbers zeroed, bare user keys
    Scenario {
        benchmarks: "fillrandom,compact",
        extra: &[],
        last_level: true,
        ratio: 0.9,
        min_hash_func: 2,
    },
    // flushes only: full internal keys, several files
    Scenario {
        benchmarks: "fillseq",
        extra: &["--write_buffer_size=32768", "--disable_auto_compactions=1"],
        last_level: false,
        ratio: 0.9,
        min_hash_func: 2,
    },
    // a full table (as many buckets as keys, plus the 4 spare ones): most late keys need a
    // displacement search, and the file is still identical to RocksDB's
    Scenario {
        benchmarks: "fillrandom,compact",
        extra: &["--cuckoo_hash_ratio=1.0"],
        last_level: true,
        ratio: 1.0,
        min_hash_func: 2,
    },
    // 8-byte keys hashed first by identity
    Scenario {
        benchmarks: "fillrandom,compact",
        extra: &["--key_size=8", "--identity_as_first_hash=1"],
        last_level: true,
        ratio: 0.9,
        min_hash_func: 2,
    },
];

#[test]
fn shale_reads_db_bench_cuckoo_files_and_rebuilds_them_byte_for_byte() {
    let Some(t) = tools() else { return };
    for sc in SCENARIOS {
        let benchmarks = sc.benchmarks;
        let (dir, expect) = db_bench_cuckoo(&t, benchmarks, sc.extra);
        let files = sst_files(dir.path());
        assert!(!files.is_empty(), "{benchmarks}: db_bench wrote no SST");
        if !sc.last_level {
            assert!(files.len() > 1, "{benchmarks}: expected several flushed files");
        }
        let mut all = Kv::new();
        let mut max_hash_func = 0;
        for path in &files {
            let (f, entries, kv) = read_cuckoo(path);
            assert_eq!(f.is_last_level(), sc.last_level, "{}", path.display());
            max_hash_func = max_hash_func.max(f.num_hash_func());
            all.extend(kv);
            let rebuilt = dir.path().join("rebuilt.cuckoo");
            let mut opts = same_options(&f);
            opts.table.hash_table_ratio = sc.ratio;
            write_cuckoo_file(&rebuilt, &entries, &opts).unwrap();
            let ours = std::fs::read(&rebuilt).unwrap();
            let theirs = std::fs::read(path).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{benchmarks}: {}", path.display());
            assert!(
                ours == theirs,
                "{benchmarks}: {} differs from Shale's rebuild",
                path.display()
            );
            std::fs::remove_file(&rebuilt).unwrap();
        }
        assert_eq!(all, expect, "{benchmarks}: Shale's read of the files vs ldb scan");
        assert!(
            max_hash_func >= sc.min_hash_func,
            "{benchmarks} {:?}: {max_hash_func} hash functions",
            sc.extra
        );
    }
}

#[test]
fn rocksdb_reads_cuckoo_files_written_by_shale() {
    let Some(t) = tools() else { return };
    for sc in SCENARIOS {
        let benchmarks = sc.benchmarks;
        let (dir, expect) = db_bench_cuckoo(&t, benchmarks, sc.extra);
        let db = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), db.path());
        // Shale writes every table again with new values (same keys, so the database's
        // MANIFEST, which records key ranges and file sizes, still describes the files).
        let flip = |v: &[u8]| v.iter().map(|b| b ^ 0x21).collect::<Vec<u8>>();
        for path in sst_files(db.path()) {
            let f = CuckooFile::open(&path, None).unwrap();
            let entries: Vec<_> = f.scan().unwrap().into_iter().map(|(k, v)| (k, flip(&v))).collect();
            let mut opts = same_options(&f);
            opts.table.hash_table_ratio = sc.ratio;
            drop(f);
            let size = std::fs::metadata(&path).unwrap().len();
            assert_eq!(write_cuckoo_file(&path, &entries, &opts).unwrap(), size);
        }
        let want: Kv = expect.iter().map(|(k, v)| (k.clone(), flip(v))).collect();
        assert_ne!(want, expect);
        assert_eq!(
            ldb_scan(&t.ldb, db.path()),
            want,
            "{benchmarks}: ldb scan of Shale's files"
        );
        for (k, v) in want.iter().step_by(97) {
            assert_eq!(&ldb_get(&t.ldb, db.path(), k), v, "{benchmarks}: ldb get {}", hex(k));
        }
    }
}
