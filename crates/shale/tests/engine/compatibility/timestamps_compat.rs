//! User-defined timestamps against real RocksDB (the tools of RocksDB 7.8; rocksdict exposes
//! no comparator setting, so it cannot make or read such a database). Both ways:
//! a database `db_bench --user_timestamp_size=8` wrote (comparator
//! `leveldb.BytewiseComparator.u64ts`, versions in a table and in the WAL) reads in Shale, at
//! every timestamp, as `ldb idump` lists its versions; and a database Shale wrote opens in
//! RocksDB, whose `ldb idump` lists exactly Shale's versions (sequence numbers and types
//! included: the deletions replayed from Shale's WAL carry the deletion-with-timestamp type in
//! both), and which Shale reads back after RocksDB recovered it.
//!
//! Not covered: RocksDB's point lookups at a timestamp through Shale's tables (and so the
//! timestamp-less keys of Shale's filters). RocksDB 7.8's `ldb` has no read timestamp (its
//! `get` and `scan` are refused on such a family), `db_bench readrandom --user_timestamp_size`
//! finds nothing even in a database it wrote itself, and rocksdict has no comparator option.
//!
//! A missing tool is a loud skip, a failure under `SHALE_REQUIRE_ROCKSDB=1`.

use crate::rocksdb_tools;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use rocksdb_tools::*;
use shale::comparator::BytewiseComparatorWithU64Ts;
use shale::{BlockBasedOptions, Options, ReadOptions, DB};

/// One version as `ldb idump` lists it: key (without timestamp), timestamp, sequence, type,
/// value.
type Version = (Vec<u8>, u64, u64, u8, Vec<u8>);

/// Fails naming the first version where `got` and `want` differ (the lists are long).
fn assert_versions(got: &[Version], want: &[Version], what: &str) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{what}: {} versions against {}; first difference at {i}: {:?} against {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

/// `ldb idump --hex` of the database at `db` (its OPTIONS file names the comparator).
fn idump(ldb: &Path, db: &Path) -> Vec<Version> {
    let out =
        run(Command::new(ldb)
            .arg(format!("--db={}", db.display()))
            .args(["--try_load_options", "idump", "--hex"]));
    let mut v = Vec::new();
    for line in out.lines().filter(|l| l.starts_with('\'')) {
        // 'KEYHEX' seq:N, type:T => VALUEHEX
        let (k, rest) = line[1..].split_once('\'').unwrap();
        let k = unhex(k);
        let seq: u64 = rest
            .split("seq:")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let t: u8 = rest
            .split("type:")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let value = unhex(rest.split("=> ").nth(1).unwrap_or("").trim());
        let (key, ts) = k.split_at(k.len() - 8);
        v.push((key.to_vec(), u64::from_le_bytes(ts.try_into().unwrap()), seq, t, value));
    }
    v.sort();
    v
}

/// What a read at timestamp `t` sees of `versions`: each key's version with the newest
/// timestamp at or below `t` (the newest write among equal ones), if it is a value.
fn visible_at(versions: &[Version], t: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut best: BTreeMap<Vec<u8>, (u64, u64, u8, Vec<u8>)> = BTreeMap::new();
    for (k, ts, seq, ty, v) in versions.iter().filter(|v| v.1 <= t) {
        let e = best.entry(k.clone()).or_insert((*ts, *seq, *ty, v.clone()));
        if (*ts, *seq) > (e.0, e.1) {
            *e = (*ts, *seq, *ty, v.clone());
        }
    }
    best.into_iter()
        .filter(|(_, e)| e.2 == 1)
        .map(|(k, e)| (k, e.3))
        .collect()
}

fn shale_opts() -> Options {
    let mut o = Options::default();
    o.set_custom_comparator(Arc::new(BytewiseComparatorWithU64Ts));
    o
}

fn at(t: u64) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_timestamp(t.to_le_bytes());
    ro
}

/// Shale's view at `t`: a scan, checked against a `get` of every key.
fn shale_at(db: &DB, t: u64, keys: &[Vec<u8>]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iterator_opt(shale::IteratorMode::Start, at(t))
        .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
        .collect();
    for k in keys {
        assert_eq!(
            db.get_opt(k, &at(t)).unwrap().as_ref(),
            got.get(k),
            "get of {} at {t}",
            hex(k)
        );
    }
    got
}

/// Every version Shale holds (`iter_start_ts` from 0 at the newest timestamp).
fn shale_versions(db: &DB) -> Vec<Version> {
    let mut ro = at(u64::MAX);
    ro.set_iter_start_ts(0u64.to_le_bytes());
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let mut v = Vec::new();
    while it.valid() {
        let ik = it.key().unwrap();
        let (k, trailer) = ik.split_at(ik.len() - 8);
        let trailer = u64::from_le_bytes(trailer.try_into().unwrap());
        let (key, ts) = k.split_at(k.len() - 8);
        let ts = u64::from_le_bytes(ts.try_into().unwrap());
        v.push((
            key.to_vec(),
            ts,
            trailer >> 8,
            (trailer & 0xff) as u8,
            it.value().unwrap().to_vec(),
        ));
        it.next();
    }
    it.status().unwrap();
    v.sort();
    v
}

#[test]
fn a_db_bench_timestamped_database_reads_in_shale_as_rocksdb_lists_it() {
    let Some([db_bench, ldb]) = find(["db_bench", "ldb"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    // Versions in a table (fillrandom, flush) and in the WAL (overwrite).
    run(Command::new(&db_bench).args([
        "--benchmarks=fillrandom,flush,overwrite",
        "--user_timestamp_size=8",
        "--num=300",
        "--value_size=24",
        "--compression_type=none",
        &format!("--db={}", d.display()),
    ]));
    let versions = idump(&ldb, &d);
    assert!(versions.len() > 400, "db_bench wrote {} versions", versions.len());
    assert!(sst_files(&d).len() == 1, "one table and a WAL");
    let db = DB::open(&shale_opts(), &d).unwrap();
    assert_versions(
        &shale_versions(&db),
        &versions,
        "every version, sequence and type as RocksDB lists them",
    );
    let keys: Vec<Vec<u8>> = versions.iter().map(|v| v.0.clone()).collect();
    let mut times: Vec<u64> = versions.iter().map(|v| v.1).collect();
    times.sort();
    for t in [
        0,
        times[0],
        times[times.len() / 3],
        times[times.len() / 2],
        times[times.len() - 2],
        u64::MAX,
    ] {
        assert_eq!(shale_at(&db, t, &keys), visible_at(&versions, t), "reads at {t}");
    }
}

#[test]
fn a_shale_timestamped_database_opens_in_rocksdb_with_the_same_versions() {
    let Some(ldb) = tool("ldb") else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let mut o = shale_opts();
    o.create_if_missing(true);
    let mut bbo = BlockBasedOptions::default();
    bbo.set_bloom_filter(10.0, false);
    o.set_block_based_table_factory(&bbo);
    let db = DB::open(&o, &d).unwrap();
    // Every key at timestamp 0, a newer version of some (in a table), a deletion of others
    // (only in the WAL).
    let key = |i: u64| i.to_be_bytes();
    for i in 0..300u64 {
        db.put_with_ts(key(i), 0u64.to_le_bytes(), format!("v{i}@0")).unwrap();
    }
    for i in (0..300u64).step_by(3) {
        db.put_with_ts(key(i), 7u64.to_le_bytes(), format!("v{i}@7")).unwrap();
    }
    db.flush().unwrap();
    for i in (1..300u64).step_by(5) {
        db.delete_with_ts(key(i), 9u64.to_le_bytes()).unwrap();
    }
    let mine = shale_versions(&db);
    drop(db);
    assert_versions(&idump(&ldb, &d), &mine, "RocksDB lists Shale's versions");
    // RocksDB opened it, recovering Shale's WAL; Shale reads what RocksDB left.
    let db = DB::open(&shale_opts(), &d).unwrap();
    assert_versions(
        &shale_versions(&db),
        &mine,
        "Shale reads the database back after RocksDB opened it",
    );
}
