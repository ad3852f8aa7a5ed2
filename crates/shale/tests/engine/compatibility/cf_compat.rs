//! Column families against real RocksDB, both ways: Debian's `rocksdb-tools` (RocksDB 7.8's
//! `ldb` with `list_column_families`, `create_column_family`, `--column_family`) and PyPI's
//! `rocksdict` (RocksDB 9.x: `Rdict.list_cf`, `Rdict(path, column_families=...)`,
//! `create_column_family`, `drop_column_family`).
//!
//! (a) Shale writes families with different table formats, checksums and compressions, a
//! dropped family and data only in the WAL; RocksDB lists and reads every family.
//! (b) RocksDB writes families (rocksdict and ldb), with a dropped family and data only in the
//! WAL; Shale opens them with `DB::list_cf` + `open_cf`, reads everything, writes more, and
//! RocksDB reads Shale's additions.
//!
//! A missing tool is a loud skip, a failure under `SHALE_REQUIRE_ROCKSDB=1` (see
//! `rocksdb_tools`).
#![allow(clippy::field_reassign_with_default)]

use crate::rocksdb_tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{
    ChecksumType, ColumnFamilyDescriptor, DBCompressionType, KeyEncodingType, Options, PlainTableFactoryOptions,
    WriteBatch, DB,
};

const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
const PLAIN_TABLE_MAGIC: u64 = 0x8242_2296_63bf_9564;
/// Plain tables are written with the legacy footer, as RocksDB writes them.
const LEGACY_PLAIN_TABLE_MAGIC: u64 = 0x4f34_18eb_7a8f_13b8;

/// Family name → its live content.
type Families = BTreeMap<String, Kv>;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat").join(name)
}

/// `rd_cf_dump.py` on a copy of `db`: the family names rocksdict lists, and the content of
/// every family it opened.
fn rocksdict_dump(python: &Path, db: &Path, mode: &str, skip: &[&str]) -> (Vec<String>, Families) {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    let out = run(Command::new(python)
        .arg(script("rd_cf_dump.py"))
        .arg(copy.path())
        .arg(mode)
        .args(skip));
    let mut lines = out.lines();
    let names = lines
        .next()
        .and_then(|l| l.strip_prefix("families "))
        .unwrap_or_else(|| panic!("no family list in {out}"))
        .split(',')
        .map(str::to_string)
        .collect();
    let mut fams = Families::new();
    for l in lines {
        let mut f = l.split(' ');
        let (Some(cf), Some(k), Some(v)) = (f.next(), f.next(), f.next()) else {
            panic!("bad line {l:?}")
        };
        fams.entry(cf.to_string()).or_default().insert(unhex(k), unhex(v));
    }
    (names, fams)
}

/// ldb 7.8's `list_column_families` output for `db`.
fn ldb_list(ldb: &Path, db: &Path) -> String {
    run(Command::new(ldb)
        .arg(format!("--db={}", db.display()))
        .arg("list_column_families"))
}

fn ldb_list_text(db: &Path, names: &[&str]) -> String {
    format!("Column families in {}: \n{{{}}}\n", db.display(), names.join(", "))
}

/// `ldb --column_family=cf scan --hex` on a copy of `db` (ldb opens read-write), with
/// `extra` arguments.
fn ldb_scan_cf(ldb: &Path, db: &Path, cf: &str, extra: &[&str]) -> Kv {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    parse_scan(&run(Command::new(ldb)
        .arg(format!("--db={}", copy.path().display()))
        .arg(format!("--column_family={cf}"))
        .args(extra)
        .args(["scan", "--hex"])))
}

/// RocksDB lists exactly `names` (ldb's `list_column_families`, `Rdict.list_cf`) and reads
/// `want` in each: `ldb --column_family=NAME scan` (which loads the OPTIONS file), rocksdict's
/// `Rdict(path)` (likewise), and rocksdict with default options and `column_families=`
/// naming every family but `skip_explicit`.
fn assert_rocksdb_reads(
    ldb: &Path,
    python: &Path,
    path: &Path,
    names: &[&str],
    want: &Families,
    skip_explicit: &[&str],
) {
    assert_eq!(ldb_list(ldb, path), ldb_list_text(path, names));
    for name in names {
        assert_same(&ldb_scan_cf(ldb, path, name, &[]), &want[*name], &format!("ldb {name}"));
    }
    let (listed, got) = rocksdict_dump(python, path, "auto", &[]);
    assert_eq!(listed, names, "Rdict.list_cf");
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    for (name, m) in want {
        assert_same(&got[name], m, &format!("rocksdict {name}"));
    }
    let (_, got) = rocksdict_dump(python, path, "explicit", skip_explicit);
    for name in names.iter().filter(|n| !skip_explicit.contains(n)) {
        assert_same(&got[*name], &want[*name], &format!("rocksdict column_families= {name}"));
    }
}

fn shale_dump_cf(db: &DB, name: &str) -> Kv {
    let cf = db.cf_handle(name).unwrap_or_else(|| panic!("no family {name}"));
    db.iterator_cf(&cf, shale::IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn block_based(checksum: ChecksumType, compression: DBCompressionType, format_version: i32) -> Options {
    let mut o = Options::default();
    let mut bbo = o.get_block_based_options();
    bbo.set_checksum_type(checksum);
    bbo.set_format_version(format_version);
    o.set_block_based_table_factory(&bbo);
    o.set_compression_type(compression);
    o.set_write_buffer_size(64 << 10);
    o
}

/// Plain tables with 16-byte keys hashed by an 8-byte prefix.
fn plain_table() -> Options {
    let mut o = Options::default();
    o.set_prefix_extractor(new_fixed_prefix_transform(8));
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        user_key_len: 16,
        encoding_type: KeyEncodingType::Prefix,
        ..Default::default()
    });
    o
}

/// The families Shale writes in (a), in creation order, with their options.
fn shale_families() -> Vec<(&'static str, Options)> {
    vec![
        (
            "default",
            block_based(ChecksumType::CRC32c, DBCompressionType::Snappy, 5),
        ),
        ("xxh3_lz4", block_based(ChecksumType::XXH3, DBCompressionType::Lz4, 5)),
        (
            "xx64_zstd",
            block_based(ChecksumType::XxHash64, DBCompressionType::Zstd, 4),
        ),
        (
            "crc_none",
            block_based(ChecksumType::CRC32c, DBCompressionType::None, 3),
        ),
        ("plain", plain_table()),
    ]
}

/// A key of family `cf` (16 bytes, as the plain family needs).
fn key(cf: usize, i: u32) -> Vec<u8> {
    format!("{cf:02}{:06}{i:08}", i % 97).into_bytes()
}

/// Write (a)'s database; returns the live content of each family.
fn write_shale_families(path: &Path) -> Families {
    let fams = shale_families();
    let mut o = fams[0].1.clone();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let descs: Vec<ColumnFamilyDescriptor> = fams
        .iter()
        .map(|(n, fo)| ColumnFamilyDescriptor::new(*n, fo.clone()))
        .collect();
    let db = DB::open_cf_descriptors(&o, path, descs).unwrap();
    let mut want = Families::new();
    // a family that is written, flushed and dropped: RocksDB must neither list nor read it
    db.create_cf("dropped", &block_based(ChecksumType::XXH3, DBCompressionType::Zstd, 5))
        .unwrap();
    let dropped = db.cf_handle("dropped").unwrap();
    for i in 0..500u32 {
        db.put_cf(&dropped, key(9, i), b"dropped").unwrap();
    }
    db.flush_cf(&dropped).unwrap();
    drop(dropped);
    for (c, (name, _)) in fams.iter().enumerate() {
        let cf = db.cf_handle(name).unwrap();
        let m = want.entry(name.to_string()).or_default();
        for i in 0..1500u32 {
            let v = format!("{name}-{i}-{}", "xyz".repeat((i % 11) as usize)).into_bytes();
            db.put_cf(&cf, key(c, i), &v).unwrap();
            m.insert(key(c, i), v);
        }
        db.flush_cf(&cf).unwrap();
        for i in (0..1500u32).step_by(4) {
            let v = format!("second-{name}-{i}").into_bytes();
            db.put_cf(&cf, key(c, i), &v).unwrap();
            m.insert(key(c, i), v);
        }
        for i in (0..1500u32).step_by(9) {
            db.delete_cf(&cf, key(c, i)).unwrap();
            m.remove(&key(c, i));
        }
        db.flush_cf(&cf).unwrap();
    }
    db.drop_cf("dropped").unwrap();
    // only in the WAL from here: single writes and one batch across every family
    let mut batch = WriteBatch::default();
    for (c, (name, _)) in fams.iter().enumerate() {
        let cf = db.cf_handle(name).unwrap();
        let m = want.get_mut(*name).unwrap();
        for i in 2000..2100u32 {
            db.put_cf(&cf, key(c, i), b"wal-only").unwrap();
            m.insert(key(c, i), b"wal-only".to_vec());
        }
        db.delete_cf(&cf, key(c, 1)).unwrap();
        m.remove(&key(c, 1));
        batch.put_cf(&cf, key(c, 3000), format!("batch-{name}"));
        m.insert(key(c, 3000), format!("batch-{name}").into_bytes());
    }
    db.write(batch).unwrap();
    for (name, m) in &want {
        assert_same(&shale_dump_cf(&db, name), m, name);
    }
    drop(db);
    want
}

/// `ldb dump_wal` (Shale's) of every WAL file of `path`, concatenated.
fn wal_text(path: &Path) -> String {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| shale::tools::dump_wal(&p, false, false).unwrap().0)
        .collect()
}

/// Whether a WAL of `path` holds a record with key `k`.
fn in_wal(path: &Path, k: &[u8]) -> bool {
    let h: String = k.iter().map(|b| format!("{b:02X}")).collect();
    wal_text(path).contains(&format!(" : 0x{h}"))
}

/// (a) RocksDB 7.8's ldb and rocksdict (9.x) list and read every family of a database Shale
/// wrote: block-based families with crc32c, xxh3 and xxhash64 checksums and snappy, lz4, zstd
/// and no compression, a plain-table family, a dropped family, and data only in the WAL.
///
/// What works: RocksDB reads every family when it loads the OPTIONS file Shale wrote (ldb's
/// default `--try_load_options`, rocksdict's `Rdict(path)` without options): the plain-table
/// family then gets its factory and prefix extractor. With default options RocksDB reads the
/// block-based families only if it leaves the plain family out (rocksdict's read-only
/// `column_families=` naming a subset); ldb with `--try_load_options=false` cannot open such a
/// DB at all. sst_dump 7.8 reads no plain table (see `plain_compat.rs`).
#[test]
fn rocksdb_reads_shale_column_families() {
    let Some([ldb, sst_dump, python]) = find(["ldb", "sst_dump", ROCKSDICT]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let want = write_shale_families(&path);
    for c in 0..shale_families().len() {
        assert!(in_wal(&path, &key(c, 3000)), "the last batch is in the WAL");
    }
    let names: Vec<&str> = shale_families().iter().map(|(n, _)| *n).collect();

    // ldb 7.8 loads the newest OPTIONS file by default (--try_load_options): every family,
    // the plain one included, opens with the options Shale wrote for it
    assert_rocksdb_reads(&ldb, &python, &path, &names, &want, &["plain"]);
    // without it every family gets the default block-based factory, and the open fails on the
    // plain family's tables whichever family is asked for
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&path, copy.path());
    let o = Command::new(&ldb)
        .arg(format!("--db={}", copy.path().display()))
        .args(["--column_family=xxh3_lz4", "--try_load_options=false", "scan"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Bad table magic number"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // RocksDB verifies every block-based table and reads the family each one names in its
    // properties (sst_dump 7.8 cannot read plain tables at all: "pread ... Bad address", see
    // plain_compat.rs; ldb and rocksdict read the plain family above)
    let mut plain_tables = 0;
    for f in sst_files(&path) {
        let data = std::fs::read(&f).unwrap();
        let magic = u64::from_le_bytes(data[data.len() - 8..].try_into().unwrap());
        if magic == PLAIN_TABLE_MAGIC || magic == LEGACY_PLAIN_TABLE_MAGIC {
            plain_tables += 1;
            continue;
        }
        assert_eq!(magic, BLOCK_BASED_MAGIC, "{}", f.display());
        let out = run(Command::new(&sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--command=verify"));
        assert!(out.contains("is ok"), "sst_dump verify {}: {out}", f.display());
        let out = run(Command::new(&sst_dump)
            .arg(format!("--file={}", f.display()))
            .arg("--show_properties"));
        let fam = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("column family name: "))
            .unwrap_or_else(|| panic!("no family name in {out}"));
        assert!(
            names.contains(&fam) && fam != "plain",
            "{}: family {fam:?}",
            f.display()
        );
    }
    assert!(plain_tables >= 1, "the plain family has tables");
}

/// (b) Families written by RocksDB (rocksdict 9.x: created with their own compressions, one
/// dropped, a batch across families left in the WAL; then ldb 7.8: `create_column_family` and
/// `--column_family` writes left in its WAL) open in Shale through `DB::list_cf` + `open_cf`
/// with the content RocksDB reads; Shale then writes more (every family, a new family, a
/// dropped one, a cross-family batch left in the WAL) and RocksDB reads it all back.
#[test]
fn shale_reads_rocksdb_column_families_and_rocksdb_reads_shale_additions() {
    let Some([ldb, python]) = find(["ldb", ROCKSDICT]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let dbf = format!("--db={}", path.display());
    let ldb_ok = |args: &[&str]| run(Command::new(&ldb).arg(&dbf).args(args));
    // ldb 7.8 first (it cannot load the OPTIONS file 9.x writes), then rocksdict, whose
    // open flushes ldb's WAL and whose own last writes stay in the WAL
    assert_eq!(ldb_ok(&["--create_if_missing", "put", "from-ldb", "1"]), "OK\n");
    assert_eq!(ldb_ok(&["create_column_family", "by_ldb"]), "OK\n");
    assert_eq!(
        ldb_ok(&["--column_family=by_ldb", "batchput", "k1", "v1", "k2", "v2", "k3", "v3"]),
        "OK\n"
    );
    assert_eq!(ldb_ok(&["--column_family=by_ldb", "delete", "k2"]), "OK\n");
    assert_eq!(
        ldb_ok(&["--column_family=by_ldb", "--hex", "put", "0x00FF", "0x0102"]),
        "OK\n"
    );
    run(Command::new(&python).arg(script("rd_cf_write.py")).arg(&path));
    assert!(in_wal(&path, b"wal-batch-049"), "rocksdict's last batch is in the WAL");
    assert!(!in_wal(&path, b"from-ldb"), "rocksdict's open flushed ldb's WAL");

    let (listed, want) = rocksdict_dump(&python, &path, "auto", &[]);
    assert_eq!(listed, ["default", "by_ldb", "lz4", "zstd"]);
    let get = |cf: &str, k: &[u8]| want[cf].get(k).map(|v| v.as_slice());
    assert_eq!(get("by_ldb", b"\x00\xff"), Some(&b"\x01\x02"[..]));
    assert_eq!(get("by_ldb", b"k2"), None);
    assert_eq!(get("by_ldb", b"wal-batch-007"), Some(&b"by_ldb-in-wal"[..]));
    assert_eq!(get("zstd", b"wal-batch-049"), Some(&b"zstd-in-wal"[..]));
    assert_eq!(get("default", b"from-ldb"), Some(&b"1"[..]));

    let mut o = Options::default();
    o.create_if_missing(false);
    let names = DB::list_cf(&o, &path).unwrap();
    assert_eq!(names, listed);
    // read-only first (nothing written to RocksDB's files), then read-write
    {
        let db = DB::open_cf_for_read_only(&o, &path, &names, false).unwrap();
        for (name, m) in &want {
            assert_same(&shale_dump_cf(&db, name), m, &format!("Shale read-only {name}"));
        }
    }
    let mut want = want;
    {
        let db = DB::open_cf(&o, &path, &names).unwrap();
        for (name, m) in &want {
            assert_same(&shale_dump_cf(&db, name), m, &format!("Shale {name}"));
            let cf = db.cf_handle(name).unwrap();
            for (k, v) in m.iter().step_by(37) {
                assert_eq!(db.get_cf(&cf, k).unwrap().as_ref(), Some(v), "{name} get");
            }
            assert_eq!(db.get_cf(&cf, b"absent-key").unwrap(), None);
        }
        assert!(db.cf_handle("gone").is_none());
        // Shale's additions: every family, a new flushed family, a dropped one, a batch across
        // families left in the WAL
        let mut new_opts = Options::default();
        new_opts.set_compression_type(DBCompressionType::Zstd);
        db.create_cf("by_shale", &new_opts).unwrap();
        db.create_cf("shale_dropped", &Options::default()).unwrap();
        let sd = db.cf_handle("shale_dropped").unwrap();
        db.put_cf(&sd, b"x", b"y").unwrap();
        db.flush_cf(&sd).unwrap();
        drop(sd);
        db.drop_cf("shale_dropped").unwrap();
        let mut all: Vec<String> = names.clone();
        all.push("by_shale".into());
        for (i, name) in all.iter().enumerate() {
            let cf = db.cf_handle(name).unwrap();
            let m = want.entry(name.clone()).or_default();
            for j in 0..300u32 {
                let (k, v) = (format!("shale-{j:05}"), format!("{name}-by-shale-{j}"));
                db.put_cf(&cf, &k, &v).unwrap();
                m.insert(k.into_bytes(), v.into_bytes());
            }
            if i % 2 == 0 {
                db.flush_cf(&cf).unwrap();
            }
            if let Some(k) = m.keys().next().cloned() {
                db.delete_cf(&cf, &k).unwrap();
                m.remove(&k);
            }
        }
        let mut batch = WriteBatch::default();
        for name in &all {
            let cf = db.cf_handle(name).unwrap();
            batch.put_cf(&cf, b"zz-shale-batch", name.as_bytes());
            want.get_mut(name)
                .unwrap()
                .insert(b"zz-shale-batch".to_vec(), name.as_bytes().to_vec());
        }
        db.write(batch).unwrap();
    }
    assert!(in_wal(&path, b"zz-shale-batch"), "Shale's last batch is in the WAL");
    let names = ["default", "by_ldb", "lz4", "zstd", "by_shale"];
    assert_rocksdb_reads(&ldb, &python, &path, &names, &want, &[]);
}
