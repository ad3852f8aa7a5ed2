//! Compatibility with real RocksDB, both ways: Debian's `rocksdb-tools` (RocksDB 7.8: `ldb`,
//! `sst_dump`, `db_bench`) and PyPI's `rocksdict` (RocksDB 9.x).
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! (set by `.ci/run`) a missing tool fails the test instead.
#![allow(clippy::field_reassign_with_default)]

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::{ChecksumType, DBCompressionType, Options, DB};

struct Tools {
    ldb: PathBuf,
    sst_dump: PathBuf,
    db_bench: PathBuf,
    python: PathBuf,
}

fn tools() -> Option<Tools> {
    let [ldb, sst_dump, db_bench, python] = find(["ldb", "sst_dump", "db_bench", ROCKSDICT])?;
    Some(Tools {
        ldb,
        sst_dump,
        db_bench,
        python,
    })
}

fn rocksdict_dump(t: &Tools, db: &Path, extra: &[&str]) -> Kv {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_dump.py");
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    let out = run(Command::new(&t.python).arg(script).arg(copy.path()).args(extra));
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (unhex(k), if v == "MISSING" { b"MISSING".to_vec() } else { unhex(v) }))
        .collect()
}

/// Write a database with Shale: puts, overwrites, deletes, flushes and compactions.
fn write_shale_db(dir: &Path, checksum: ChecksumType, compression: DBCompressionType, format_version: u32) -> Kv {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(64 << 10);
    {
        let mut bbo = o.get_block_based_options();
        bbo.set_checksum_type(checksum);
        o.set_block_based_table_factory(&bbo);
    }
    o.set_compression_type(compression);
    {
        let mut bbo = o.get_block_based_options();
        bbo.set_format_version(format_version as i32);
        o.set_block_based_table_factory(&bbo);
    }
    o.set_level_zero_file_num_compaction_trigger(3);
    o.set_target_file_size_base(128 << 10);
    let db = DB::open(&o, dir).unwrap();
    let mut m = Kv::new();
    for i in 0..6000u32 {
        let k = format!("key{:06}", (i * 7919) % 5000).into_bytes();
        let v = format!("value-{i}-{}", "abcdefgh".repeat((i % 9) as usize)).into_bytes();
        db.put(&k, &v).unwrap();
        m.insert(k, v);
        if i % 13 == 0 {
            let d = format!("key{:06}", (i * 31) % 5000).into_bytes();
            db.delete(&d).unwrap();
            m.remove(&d);
        }
        if i == 3000 {
            db.flush().unwrap();
        }
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in 0..300u32 {
        let k = format!("late{i:04}").into_bytes();
        db.put(&k, b"in-wal-and-l0").unwrap();
        m.insert(k, b"in-wal-and-l0".to_vec());
    }
    db.flush().unwrap();
    for i in 0..100u32 {
        let k = format!("wal{i:04}").into_bytes();
        db.put(&k, b"only-in-wal").unwrap();
        m.insert(k, b"only-in-wal".to_vec());
    }
    assert_eq!(shale_dump(&db), m);
    drop(db);
    m
}

#[test]
fn rocksdb_reads_shale_databases() {
    let Some(t) = tools() else { return };
    let cases = [
        (ChecksumType::XXH3, DBCompressionType::None, 5),
        (ChecksumType::CRC32c, DBCompressionType::Snappy, 5),
        (ChecksumType::XxHash64, DBCompressionType::Lz4, 4),
        (ChecksumType::XxHash, DBCompressionType::Zstd, 3),
        (ChecksumType::CRC32c, DBCompressionType::Zlib, 5),
        (ChecksumType::XXH3, DBCompressionType::Bz2, 5),
        (ChecksumType::CRC32c, DBCompressionType::Lz4hc, 4),
    ];
    for (ck, comp, fv) in cases {
        let dir = tempfile::tempdir().unwrap();
        let expect = write_shale_db(dir.path(), ck, comp, fv);
        let ssts = sst_files(dir.path());
        assert!(!ssts.is_empty());
        for f in &ssts {
            let out = run(Command::new(&t.sst_dump)
                .arg(format!("--file={}", f.display()))
                .arg("--command=verify"));
            assert!(out.contains("is ok"), "sst_dump verify {}: {out}", f.display());
        }
        assert_eq!(
            ldb_scan(&t.ldb, dir.path()),
            expect,
            "ldb scan ({ck:?}, {comp:?}, fv{fv})"
        );
        // rocksdict's RocksDB is built without zlib (its Zlib option writes uncompressed
        // blocks and it cannot read Zlib blocks); ldb above read them.
        if comp != DBCompressionType::Zlib {
            assert_eq!(
                rocksdict_dump(&t, dir.path(), &[]),
                expect,
                "rocksdict ({ck:?}, {comp:?}, fv{fv})"
            );
        }
    }
}

/// RocksDB's Bloom filter (9.x, through rocksdict with a filter policy) finds every key in
/// Shale-written tables; absent keys stay absent.
#[test]
fn rocksdb_bloom_finds_keys_in_shale_tables() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let expect = write_shale_db(dir.path(), ChecksumType::XXH3, DBCompressionType::None, 5);
    let keys = tempfile::NamedTempFile::new().unwrap();
    let mut text = String::new();
    for k in expect.keys() {
        text.push_str(&hex(k));
        text.push('\n');
    }
    text.push_str(&hex(b"key-absent-1\n"));
    text.push('\n');
    std::fs::write(keys.path(), text).unwrap();
    let got = rocksdict_dump(&t, dir.path(), &["--bloom", "--keys", keys.path().to_str().unwrap()]);
    for (k, v) in &expect {
        assert_eq!(got.get(k), Some(v), "key {:?}", String::from_utf8_lossy(k));
    }
    assert_eq!(
        got.get(&b"key-absent-1\n"[..]).map(|v| v.as_slice()),
        Some(&b"MISSING"[..])
    );
}

fn open_ro(dir: &Path) -> DB {
    let o = Options::default();
    DB::open_for_read_only(&o, dir, false).unwrap()
}

/// Databases written by RocksDB 7.8's db_bench with every checksum type and format_version
/// 2..5, with and without compression, some keys only in the WAL, open in Shale with the same
/// content ldb sees. Shale's Bloom filter path is exercised (bloom_bits=10 on both sides).
#[test]
fn shale_reads_db_bench_databases() {
    let Some(t) = tools() else { return };
    for fv in 2..=5u32 {
        for ck in 0..=4u32 {
            if fv < 2 && ck != 1 {
                continue;
            }
            let comp = if (fv + ck) % 2 == 0 { "none" } else { "snappy" };
            let dir = tempfile::tempdir().unwrap();
            run(Command::new(&t.db_bench).args([
                "--benchmarks=fillrandom",
                "--num=20000",
                "--value_size=50",
                "--write_buffer_size=262144",
                "--bloom_bits=10",
                &format!("--format_version={fv}"),
                &format!("--checksum_type={ck}"),
                &format!("--compression_type={comp}"),
                &format!("--db={}", dir.path().display()),
            ]));
            let expect = ldb_scan(&t.ldb, dir.path());
            assert!(!expect.is_empty());
            assert!(!sst_files(dir.path()).is_empty(), "db_bench wrote no SST");
            // read-only first (no writes to RocksDB's files), then read-write
            let db = open_ro(dir.path());
            assert_eq!(shale_dump(&db), expect, "fv{fv} ck{ck} {comp} (read-only)");
            for k in expect.keys().take(500) {
                assert_eq!(
                    db.get(k).unwrap().as_ref(),
                    expect.get(k),
                    "get via Shale's Bloom filter"
                );
            }
            drop(db);
            let mut o = Options::default();
            o.create_if_missing(false);
            rewrite_and_check_with_ldb(&t, dir.path(), &o, &expect, &format!("fv{fv} ck{ck} {comp}"));
        }
    }
}

/// Open the RocksDB database at `dir` read-write in Shale with `o`, check its content is
/// `expect`, add a key and compact everything, then check that ldb sees `expect` plus that key.
fn rewrite_and_check_with_ldb(t: &Tools, dir: &Path, o: &Options, expect: &Kv, label: &str) {
    let db = DB::open(o, dir).unwrap();
    assert_eq!(shale_dump(&db), *expect, "{label} (read-write)");
    db.put(b"added-by-shale", b"1").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    let mut after = expect.clone();
    after.insert(b"added-by-shale".to_vec(), b"1".to_vec());
    assert_eq!(ldb_scan(&t.ldb, dir), after, "ldb after Shale rewrote {label}");
}

/// Databases written by RocksDB 7.8's db_bench with Zlib, BZip2 and LZ4HC blocks, at
/// format_version 5 (a varint size before each stream) and 1 (no size before Zlib and BZip2
/// streams, 8 bytes before LZ4HC), read by Shale with the content ldb sees; then rewritten by a
/// Shale compaction with the same compression and read back by ldb.
#[test]
fn shale_reads_db_bench_zlib_bzip2_lz4hc_databases() {
    let Some(t) = tools() else { return };
    for (comp, ty) in [
        ("zlib", DBCompressionType::Zlib),
        ("bzip2", DBCompressionType::Bz2),
        ("lz4hc", DBCompressionType::Lz4hc),
    ] {
        for fv in [1u32, 5] {
            let dir = tempfile::tempdir().unwrap();
            run(Command::new(&t.db_bench).args([
                "--benchmarks=fillrandom",
                "--num=20000",
                "--value_size=100",
                "--write_buffer_size=262144",
                &format!("--format_version={fv}"),
                &format!("--compression_type={comp}"),
                &format!("--db={}", dir.path().display()),
            ]));
            let expect = ldb_scan(&t.ldb, dir.path());
            let ssts = sst_files(dir.path());
            assert!(!ssts.is_empty(), "db_bench wrote no SST");
            let props = run(Command::new(&t.sst_dump)
                .arg(format!("--file={}", ssts[0].display()))
                .arg("--show_properties"));
            assert!(
                props.contains(&format!("SST file compression algo: {}", ty.rocksdb_name())),
                "db_bench did not write {comp} blocks: {props}"
            );
            let db = open_ro(dir.path());
            assert_eq!(shale_dump(&db), expect, "{comp} fv{fv} (read-only)");
            for k in expect.keys().step_by(11) {
                assert_eq!(db.get(k).unwrap().as_ref(), expect.get(k), "{comp} fv{fv} get");
            }
            drop(db);
            let mut o = Options::default();
            o.set_compression_type(ty);
            rewrite_and_check_with_ldb(&t, dir.path(), &o, &expect, &format!("{comp} fv{fv}"));
        }
    }
}

/// Zlib blocks of 256 KiB whose repeats lie further apart than 16 KiB, compressed: Shale
/// deflates with RocksDB's own window (window bits -14, as RocksDB's writer), and RocksDB's
/// `sst_dump --command=verify` and `ldb scan` read them. (RocksDB 7.8 inflates a block whose
/// size it knows in one call, so it would also read a 32 KiB-window stream; this checks large
/// Zlib blocks, not the window.)
#[test]
fn rocksdb_reads_shale_zlib_blocks_with_distant_repeats() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compression_type(DBCompressionType::Zlib);
    let mut bbo = o.get_block_based_options();
    bbo.set_block_size(256 << 10);
    o.set_block_based_table_factory(&bbo);
    // Each value: 8 KiB that compress well on their own, then the same 12 KiB of noise; the
    // noise repeats 20 KiB back, out of a 16 KiB window's reach, in reach of a 32 KiB one.
    let mut x = 0x9e3779b97f4a7c15u64;
    let noise: Vec<u8> = (0..12 << 10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut chunk = b"0123456789abcdef".repeat(512);
    chunk.extend_from_slice(&noise);
    let db = DB::open(&o, dir.path()).unwrap();
    let mut expect = Kv::new();
    for i in 0..40u32 {
        let k = format!("big{i:04}").into_bytes();
        db.put(&k, &chunk).unwrap();
        expect.insert(k, chunk.clone());
    }
    db.flush().unwrap();
    drop(db);
    let ssts = sst_files(dir.path());
    let props = run(Command::new(&t.sst_dump)
        .arg(format!("--file={}", ssts[0].display()))
        .arg("--show_properties"));
    let size: u64 = props
        .lines()
        .find_map(|l| l.trim().strip_prefix("data block size: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no data block size in {props}"));
    assert!(
        size < 700 << 10,
        "the blocks were not compressed: {size} bytes of data blocks"
    );
    for f in &ssts {
        let out = run(Command::new(&t.sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--command=verify"));
        assert!(out.contains("is ok"), "sst_dump verify {}: {out}", f.display());
    }
    assert_eq!(ldb_scan(&t.ldb, dir.path()), expect);
}

/// Databases written by rocksdict (RocksDB 9.x, format_version 6 by default) with and without
/// compression, some keys only in the WAL, open in Shale with identical content.
#[test]
fn shale_reads_rocksdict_databases() {
    let Some(t) = tools() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_write.py");
    for comp in ["default", "none", "snappy", "zlib", "bz2", "lz4", "lz4hc", "zstd"] {
        let dir = tempfile::tempdir().unwrap();
        run(Command::new(&t.python)
            .arg(&script)
            .arg(dir.path())
            .arg("3000")
            .arg(comp));
        let expect = rocksdict_dump(&t, dir.path(), &[]);
        assert!(expect.len() > 2000);
        let db = open_ro(dir.path());
        assert_eq!(shale_dump(&db), expect, "rocksdict {comp} (read-only)");
        for k in expect.keys().step_by(7) {
            assert_eq!(db.get(k).unwrap().as_ref(), expect.get(k));
        }
        drop(db);
        let db = DB::open(&Options::default(), dir.path()).unwrap();
        assert_eq!(shale_dump(&db), expect, "rocksdict {comp} (read-write)");
    }
}

/// Range tombstones (overlapping, flushed, compacted, some only in the WAL) and single deletes
/// written by Shale read the same in RocksDB 7.8's `ldb` and in rocksdict.
#[test]
fn rocksdb_reads_shale_range_deletions_and_single_deletes() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let o = {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(64 << 10);
        o.set_target_file_size_base(32 << 10);
        o
    };
    let db = DB::open(&o, dir.path()).unwrap();
    let k = |i: u32| format!("k{i:05}").into_bytes();
    for i in 0..3000 {
        db.put(k(i), format!("v{i}")).unwrap();
    }
    db.delete_range(k(100), k(400)).unwrap();
    db.delete_range(k(300), k(700)).unwrap();
    for i in (0..3000).step_by(7) {
        db.single_delete(k(i)).unwrap();
    }
    db.flush().unwrap();
    for i in 350..450 {
        db.put(k(i), b"again").unwrap();
    }
    db.delete_range(k(1000), k(1500)).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.delete_range(k(2000), k(2100)).unwrap();
    db.flush().unwrap();
    db.delete_range(k(2500), k(2600)).unwrap(); // only in the WAL
    let expect = shale_dump(&db);
    assert!(!expect.contains_key(&k(200)) && !expect.contains_key(&k(7)));
    assert_eq!(expect.get(&k(400)).map(|v| v.as_slice()), Some(&b"again"[..]));
    drop(db);
    assert!(
        dir.path().join("LOG").exists(),
        "Shale's LOG is there for ldb and rocksdict to ignore"
    );
    assert_eq!(ldb_scan(&t.ldb, dir.path()), expect, "ldb scan");
    assert_eq!(rocksdict_dump(&t, dir.path(), &[]), expect, "rocksdict");
    for f in sst_files(dir.path()) {
        run(Command::new(&t.sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--command=verify"));
    }
}

/// Range deletions written by rocksdict (RocksDB 9.x) are honoured by Shale.
#[test]
fn shale_reads_rocksdict_range_deletions() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import sys
from rocksdict import Options, Rdict
db = Rdict(sys.argv[1], options=Options(raw_mode=True))
for i in range(2000):
    db[b"k%05d" % i] = b"v%d" % i
db.delete_range(b"k00100", b"k00400")
db.flush()
db.delete_range(b"k00300", b"k00900")
for i in range(500, 600):
    db[b"k%05d" % i] = b"again"
db.flush()
db.delete_range(b"k01500", b"k01600")
db.close()
"#;
    run(Command::new(&t.python).args(["-c", script]).arg(dir.path()));
    let expect = rocksdict_dump(&t, dir.path(), &[]);
    assert_eq!(expect.len(), 2000 - 800 + 100 - 100);
    let db = open_ro(dir.path());
    assert_eq!(shale_dump(&db), expect, "read-only");
    assert_eq!(db.get(b"k00150").unwrap(), None);
    drop(db);
    let db = DB::open(&Options::default(), dir.path()).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(shale_dump(&db), expect, "after Shale's compaction");
    drop(db);
    // (ldb 7.8 refuses rocksdict's OPTIONS file, so rocksdict checks Shale's output)
    assert_eq!(
        rocksdict_dump(&t, dir.path(), &[]),
        expect,
        "rocksdict after Shale's compaction"
    );
}

/// Merge operands written by RocksDB's db_bench (`mergerandom`, `uint64add`) read the same in
/// Shale with its `uint64add` as in ldb (which loads the operator from db_bench's OPTIONS file),
/// and Shale's compaction of them stays readable by ldb.
#[test]
fn shale_reads_db_bench_merge_operands() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(&t.db_bench).args([
        "--benchmarks=mergerandom",
        "--num=3000",
        "--value_size=8",
        "--merge_operator=uint64add",
        "--write_buffer_size=65536",
        &format!("--db={}", dir.path().display()),
    ]));
    let expect = ldb_scan(&t.ldb, dir.path());
    assert!(!expect.is_empty());
    let o = {
        let mut o = Options::default();
        o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name("uint64add").unwrap());
        o
    };
    let db = DB::open_for_read_only(&o, dir.path(), false).unwrap();
    assert_eq!(shale_dump(&db), expect, "read-only");
    for k in expect.keys().take(200) {
        assert_eq!(db.get(k).unwrap().as_ref(), expect.get(k));
    }
    drop(db);
    let db = DB::open(&o, dir.path()).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(shale_dump(&db), expect, "after Shale's compaction");
    drop(db);
    for f in sst_files(dir.path()) {
        let out = run(Command::new(&t.sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--show_properties"));
        assert!(
            out.contains("UInt64AddOperator"),
            "merge operator name in the properties"
        );
    }
    assert_eq!(ldb_scan(&t.ldb, dir.path()), expect, "ldb after Shale's compaction");
}

/// Every `PUT` of a WAL file as `ldb dump_wal` prints it (`seq,count,size,offset,PUT(0) : K : V`),
/// in log order.
fn wal_puts(t: &Tools, wal: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    let out = run(Command::new(&t.ldb)
        .arg("dump_wal")
        .arg(format!("--walfile={}", wal.display()))
        .arg("--print_value"));
    let mut v = Vec::new();
    for line in out.lines() {
        let mut parts = line.split(" : ");
        let (Some(head), Some(k), Some(val)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        assert!(head.ends_with("PUT(0)"), "only single puts expected: {line}");
        v.push((unhex(k), unhex(val.trim())));
    }
    v
}

/// A DB written by RocksDB 7.8's `db_bench --use_uint64_comparator` (keys: 8 bytes, the
/// big-endian numbers db_bench generates, ordered as little-endian numbers), with the skiplist
/// and with the vector memtable, opens in Shale with the same comparator and holds exactly what
/// db_bench wrote. ldb cannot open such a DB (RocksDB's tools only know the bytewise
/// comparators), so the expected content is replayed from every WAL db_bench wrote (kept in
/// `archive/` by `--wal_ttl_seconds`) with `ldb dump_wal`.
#[test]
fn shale_reads_db_bench_uint64_comparator_databases() {
    let Some(t) = tools() else { return };
    for rep in ["skip_list", "vector"] {
        let dir = tempfile::tempdir().unwrap();
        run(Command::new(&t.db_bench).args([
            "--benchmarks=fillrandom",
            "--num=6000",
            "--key_size=8",
            "--value_size=24",
            "--use_uint64_comparator",
            &format!("--memtablerep={rep}"),
            "--allow_concurrent_memtable_write=false",
            "--write_buffer_size=65536",
            "--wal_ttl_seconds=100000",
            "--seed=7",
            &format!("--db={}", dir.path().display()),
        ]));
        assert!(!sst_files(dir.path()).is_empty(), "{rep}: db_bench wrote no SST");
        let mut wals: Vec<PathBuf> = [dir.path().to_path_buf(), dir.path().join("archive")]
            .iter()
            .filter(|d| d.is_dir())
            .flat_map(|d| std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()))
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        wals.sort_by_key(|p| p.file_name().unwrap().to_owned());
        let mut expect = Kv::new();
        for w in &wals {
            for (k, v) in wal_puts(&t, w) {
                assert_eq!(k.len(), 8);
                expect.insert(k, v);
            }
        }
        assert!(expect.len() > 3000, "{rep}: {} keys", expect.len());

        let mut o = Options::default();
        o.set_custom_comparator(std::sync::Arc::new(shale::comparator::Uint64Comparator));
        let db = DB::open_for_read_only(&o, dir.path(), false).unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = db
            .iterator(shale::IteratorMode::Start)
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let num = |k: &[u8]| u64::from_le_bytes(k.try_into().unwrap());
        assert!(
            got.windows(2).all(|w| num(&w[0].0) < num(&w[1].0)),
            "{rep}: Shale iterates in little-endian numeric order"
        );
        assert_eq!(got.into_iter().collect::<Kv>(), expect, "{rep}: content");
        for (k, v) in expect.iter().take(500) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{rep}: get");
        }
        drop(db);
        // The bytewise comparator is refused: the MANIFEST names the uint64 one.
        let e = DB::open_for_read_only(&Options::default(), dir.path(), false).expect_err("comparator mismatch");
        assert!(
            e.is_invalid_argument() && e.to_string().contains("rocksdb.Uint64Comparator"),
            "{e}"
        );
    }
}

/// A Shale DB with the uint64 comparator (and the vector memtable) read by RocksDB 7.8's
/// db_bench with `--use_uint64_comparator`: `readseq` sees every key and `readrandom` finds
/// every one of db_bench's own keys, which needs RocksDB to search Shale's index blocks and
/// Bloom filters in the comparator's order. (ldb and rocksdict cannot open it: neither can be
/// given this comparator.)
#[test]
fn rocksdb_reads_shale_uint64_comparator_database() {
    let Some(t) = tools() else { return };
    const N: u64 = 4000;
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_custom_comparator(std::sync::Arc::new(shale::comparator::Uint64Comparator));
    o.set_memtable_factory(shale::MemtableFactory::Vector);
    o.set_write_buffer_size(64 << 10);
    {
        let mut bbo = o.get_block_based_options();
        bbo.set_block_size(512);
        o.set_block_based_table_factory(&bbo);
    }
    let db = DB::open(&o, dir.path()).unwrap();
    // db_bench's keys for 0..N: 8 big-endian bytes
    for i in 0..N {
        db.put(i.to_be_bytes(), format!("value-{i}")).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in (0..N).step_by(7) {
        db.put(i.to_be_bytes(), format!("again-{i}")).unwrap(); // some only in the WAL
    }
    drop(db);
    assert!(!sst_files(dir.path()).is_empty());
    let out = run(Command::new(&t.db_bench).args([
        "--benchmarks=readseq,readrandom",
        "--use_existing_db",
        "--use_uint64_comparator",
        "--key_size=8",
        &format!("--num={N}"),
        "--bloom_bits=10",
        &format!("--db={}", dir.path().display()),
    ]));
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line:\n{out}"))
            .to_string()
    };
    assert!(line("readseq").contains(&format!(" {N} operations;")), "{out}");
    assert!(line("readrandom").contains(&format!("({N} of {N} found)")), "{out}");
}

/// The entries of user key `key` in the DB's table files, as RocksDB's `sst_dump` prints them
/// (`'6B' seq:5, type:1 => ...`), sorted; and the number of table files holding `key`.
fn entries_of(sst_dump: &Path, db: &Path, key: &[u8]) -> (Vec<String>, usize) {
    let prefix = format!("'{}' seq:", hex(key).to_uppercase());
    let mut all = Vec::new();
    let mut files = 0;
    for f in sst_files(db) {
        let out = run(Command::new(sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--command=scan")
            .arg("--output_hex"));
        let mine: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(|l| l.to_string())
            .collect();
        files += usize::from(!mine.is_empty());
        all.extend(mine);
    }
    all.sort();
    (all, files)
}

/// Put, SingleDelete, Put of one key, the first Put in a deeper level: the L0 -> L1 compaction
/// meets the second Put above the SingleDelete. RocksDB (rocksdict, 9.x) keeps that
/// SingleDelete (the Put it deletes is deeper), and so does Shale: each engine compacts a copy
/// of the same DB and the key's entries come out the same (dropping the SingleDelete brought
/// the first Put back after a second SingleDelete, `stress_regressions.rs::
/// single_delete_under_a_second_put_still_deletes_the_first_put`).
#[test]
fn l0_compaction_keeps_a_single_delete_under_a_newer_put_as_rocksdb() {
    let Some(t) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_level_compaction_dynamic_level_bytes(false);
    o.set_level_zero_file_num_compaction_trigger(2);
    o.set_max_bytes_for_level_base(1);
    {
        let db = DB::open(&o, dir.path()).unwrap();
        db.put(b"k", b"first").unwrap();
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    // Two L0 files whose key ranges overlap (so RocksDB merges them rather than moving them).
    o.set_max_bytes_for_level_base(1 << 30);
    o.set_disable_auto_compactions(true);
    {
        let db = DB::open(&o, dir.path()).unwrap();
        db.put(b"a", b"x").unwrap();
        db.single_delete(b"k").unwrap();
        db.flush().unwrap();
        db.put(b"b", b"y").unwrap();
        db.put(b"k", b"second").unwrap();
        db.flush().unwrap();
    }
    let (before, files) = entries_of(&t.sst_dump, dir.path(), b"k");
    assert_eq!((before.len(), files), (3, 3), "{before:?}");
    // RocksDB compacts one copy ...
    let rd = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), rd.path());
    for f in std::fs::read_dir(rd.path()).unwrap() {
        let p = f.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_compact_l0.py");
    let left = run(Command::new(&t.python).arg(script).arg(rd.path()));
    assert_eq!(left.trim(), "0", "RocksDB left L0 files");
    // ... and Shale another.
    let sh = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), sh.path());
    o.set_disable_auto_compactions(false);
    {
        let db = DB::open(&o, sh.path()).unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"second"[..]));
    }
    let (by_rocksdb, rd_files) = entries_of(&t.sst_dump, rd.path(), b"k");
    let (by_shale, sh_files) = entries_of(&t.sst_dump, sh.path(), b"k");
    // The two L0 files were merged into one L1 file; the first Put stays in its own.
    assert_eq!((rd_files, sh_files), (2, 2), "{by_rocksdb:?} {by_shale:?}");
    assert_eq!(by_rocksdb, before, "RocksDB keeps the SingleDelete");
    assert_eq!(by_shale, by_rocksdb);
}
