//! PlainTable compatibility with real RocksDB, both ways: files written by Debian's RocksDB 7.8
//! `db_bench --use_plain_table`, by `rocksdict` (RocksDB 9.x, with variable-length keys, prefix
//! encoding and `store_index_in_file`) and by RocksDB 11.8.1 (committed fixture) read by Shale
//! with identical content and rebuilt byte for byte; a file written by Shale read by RocksDB's
//! `ldb`. (`sst_dump` 7.8 cannot read any plain table — it fails with "pread ... Bad address" on
//! RocksDB's own — so `ldb` with the database's OPTIONS file is the RocksDB reader used.)
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! (set by `.ci/run`) a missing tool fails the test instead.

use crate::rocksdb_tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rocksdb_tools::*;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::slice_transform::PrefixExtractor;
use shale::tools::{write_plain_table, PlainTableReader, PlainTableWriteOptions, SstEntry};
use shale::{KeyEncodingType, PlainTableFactoryOptions};

/// The live key/values of a set of tables (newest version of each key; deletions hide it).
fn merged(files: &[Vec<SstEntry>]) -> Kv {
    let mut newest: BTreeMap<Vec<u8>, &SstEntry> = BTreeMap::new();
    for f in files {
        for e in f {
            let keep = newest.get(&e.user_key).is_none_or(|o| o.seq < e.seq);
            if keep {
                newest.insert(e.user_key.clone(), e);
            }
        }
    }
    newest
        .into_iter()
        .filter(|(_, e)| e.value_type == 1)
        .map(|(k, e)| (k, e.value.clone()))
        .collect()
}

fn prop_str(p: &BTreeMap<String, Vec<u8>>, name: &str) -> String {
    String::from_utf8(p.get(name).cloned().unwrap_or_default()).unwrap()
}

fn prop_num(p: &BTreeMap<String, Vec<u8>>, name: &str) -> u64 {
    let v = p.get(name).unwrap_or_else(|| panic!("no {name}"));
    let (mut x, mut shift) = (0u64, 0);
    for b in v {
        x |= ((b & 0x7f) as u64) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    x
}

/// Write options reproducing the identity properties of an existing table.
fn same_identity(
    p: &BTreeMap<String, Vec<u8>>,
    plain: PlainTableFactoryOptions,
    prefix: Arc<dyn PrefixExtractor>,
) -> PlainTableWriteOptions {
    PlainTableWriteOptions {
        plain,
        prefix_extractor: Some(prefix),
        column_family_name: prop_str(p, "rocksdb.column.family.name"),
        db_id: prop_str(p, "rocksdb.creating.db.identity"),
        db_session_id: prop_str(p, "rocksdb.creating.session.identity"),
        db_host_id: Some(prop_str(p, "rocksdb.creating.host.identity")),
        file_number: prop_num(p, "rocksdb.original.file.number"),
        creation_time: prop_num(p, "rocksdb.creation.time"),
    }
}

/// Every entry can be found with a point lookup; an absent key is not found.
fn check_gets(r: &PlainTableReader, entries: &[SstEntry]) {
    let mut seen = std::collections::HashSet::new();
    for e in entries {
        if seen.insert(e.user_key.clone()) {
            // the first entry of a user key in a table is its newest
            assert_eq!(r.get(&e.user_key).unwrap().as_ref(), Some(e));
        }
    }
    let mut absent = entries[0].user_key.clone();
    absent.push(0xFF);
    if !seen.contains(&absent) {
        assert_eq!(r.get(&absent).unwrap(), None);
    }
}

fn db_bench_plain(db_bench: &Path, dir: &Path, benchmarks: &str, extra: &[&str]) {
    run(Command::new(db_bench)
        .arg(format!("--db={}", dir.display()))
        .arg(format!("--benchmarks={benchmarks}"))
        .args([
            "--use_plain_table=1",
            "--prefix_size=8",
            "--key_size=16",
            "--value_size=20",
            "--mmap_read=1",
            "--allow_concurrent_memtable_write=false",
            "--compression_type=none",
            "--seed=7",
        ])
        .args(extra));
}

/// Two db_bench plain-table databases under `root`: `compacted` (fillseq then a compaction of
/// `compacted_num` keys: one bottom table, every key with sequence 0, the 0xFF trailer mark) and
/// `flushed` (fillrandom, overwrite, deleterandom of `flushed_num` keys, flushes only: several L0
/// tables with sequence numbers, overwrites and deletions).
fn db_bench_plain_dbs(db_bench: &Path, root: &Path, compacted_num: u32, flushed_num: u32) -> (PathBuf, PathBuf) {
    let compacted = root.join("compacted");
    db_bench_plain(
        db_bench,
        &compacted,
        "fillseq,compact",
        &[&format!("--num={compacted_num}"), "--memtablerep=prefix_hash"],
    );
    let flushed = root.join("flushed");
    db_bench_plain(
        db_bench,
        &flushed,
        "fillrandom,overwrite,deleterandom,flush",
        &[
            &format!("--num={flushed_num}"),
            "--write_buffer_size=65536",
            "--disable_auto_compactions=1",
        ],
    );
    (compacted, flushed)
}

#[test]
fn rocksdb_7_plain_tables_read_identically_and_rebuild_byte_for_byte() {
    let Some([db_bench, ldb]) = find(["db_bench", "ldb"]) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (compacted, flushed) = db_bench_plain_dbs(&db_bench, root.path(), 3000, 2000);
    let prefix = new_fixed_prefix_transform(8);
    let plain = PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    };
    for db in [&compacted, &flushed] {
        let ssts = sst_files(db);
        assert!(!ssts.is_empty(), "{db:?}");
        let mut all = Vec::new();
        for f in &ssts {
            let bytes = std::fs::read(f).unwrap();
            let mut scans = Vec::new();
            for mmap in [true, false] {
                let r = PlainTableReader::open(f, &plain, Some(prefix.clone()), mmap).unwrap();
                assert_eq!(r.is_mmapped(), mmap);
                let entries = r.scan().unwrap();
                assert_eq!(entries.len() as u64, prop_num(&r.properties(), "rocksdb.num.entries"));
                check_gets(&r, &entries);
                scans.push(entries);
            }
            assert_eq!(scans[0], scans[1]);
            let entries = scans.pop().unwrap();
            // Rebuilt with the same identity properties, Shale's file is RocksDB's, byte for byte.
            let r = PlainTableReader::open(f, &plain, Some(prefix.clone()), true).unwrap();
            let out = root.path().join("rebuilt.sst");
            let wo = same_identity(&r.properties(), plain.clone(), prefix.clone());
            write_plain_table(&out, &wo, &entries).unwrap();
            assert!(std::fs::read(&out).unwrap() == bytes, "{f:?} differs when rebuilt");
            all.push(entries);
        }
        if db == &flushed {
            assert!(all.iter().flatten().any(|e| e.seq > 0 && e.value_type == 1));
            assert!(all.iter().flatten().any(|e| e.value_type == 0));
        } else {
            assert!(all.iter().flatten().all(|e| e.seq == 0));
        }
        let expect = ldb_scan(&ldb, db);
        assert!(!expect.is_empty());
        assert_same(&merged(&all), &expect, &format!("{db:?}"));
    }
}

#[test]
fn rocksdb_ldb_reads_plain_tables_written_by_shale() {
    let Some([db_bench, ldb]) = find(["db_bench", "ldb"]) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (compacted, flushed) = db_bench_plain_dbs(&db_bench, root.path(), 1000, 1000);
    let prefix = new_fixed_prefix_transform(8);
    let plain = PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    };
    for db in [&compacted, &flushed] {
        // Replace every table by one Shale writes: same keys, sequence numbers and types (the
        // MANIFEST knows key ranges and sizes), new values of the same lengths.
        let mut all = Vec::new();
        for f in sst_files(db) {
            let r = PlainTableReader::open(&f, &plain, Some(prefix.clone()), false).unwrap();
            let wo = same_identity(&r.properties(), plain.clone(), prefix.clone());
            let mut entries = r.scan().unwrap();
            drop(r);
            for (i, e) in entries.iter_mut().enumerate() {
                let n = e.value.len();
                e.value = format!("shale-{i}-").into_bytes().into_iter().cycle().take(n).collect();
            }
            let old_size = std::fs::metadata(&f).unwrap().len();
            assert_eq!(write_plain_table(&f, &wo, &entries).unwrap(), old_size);
            all.push(entries);
        }
        let expect = merged(&all);
        assert!(expect.values().any(|v| v.starts_with(b"shale-")));
        assert_same(&ldb_scan(&ldb, db), &expect, &format!("{db:?}"));
    }
}

fn rd_plain(python: &Path, dir: &Path, encoding: &str, store: bool, klen: u32, locality: u32) -> Kv {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_plain.py");
    let out = run(Command::new(python)
        .arg(script)
        .arg(dir)
        .arg(encoding)
        .arg(if store { "1" } else { "0" })
        .arg(klen.to_string())
        .arg(locality.to_string()));
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (unhex(k), unhex(v)))
        .collect()
}

#[test]
fn rocksdict_plain_tables_with_prefix_encoding_and_stored_index_read_identically() {
    let Some(python) = python_with_rocksdict() else { return };
    let prefix = new_fixed_prefix_transform(3);
    // (encoding, store_index_in_file, user_key_len, bloom_locality)
    for (encoding, store, klen, locality) in [
        ("prefix", true, 0u32, 0u32),
        ("plain", false, 0, 0),
        ("plain", true, 12, 0),
        ("prefix", false, 12, 0),
        ("plain", true, 0, 1),
    ] {
        let ctx = format!("{encoding} store={store} klen={klen} bloom_locality={locality}");
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("db");
        let expect = rd_plain(&python, &db, encoding, store, klen, locality);
        let plain = PlainTableFactoryOptions {
            user_key_len: klen,
            index_sparseness: 4,
            encoding_type: if encoding == "prefix" {
                KeyEncodingType::Prefix
            } else {
                KeyEncodingType::Plain
            },
            store_index_in_file: store,
            ..Default::default()
        };
        let mut all = Vec::new();
        let ssts = sst_files(&db);
        assert_eq!(ssts.len(), 2, "{ctx}");
        for f in &ssts {
            let r = PlainTableReader::open(f, &plain, Some(prefix.clone()), true).unwrap();
            let p = r.properties();
            assert_eq!(prop_str(&p, "rocksdb.prefix.extractor.name"), "rocksdb.FixedPrefix.3");
            let entries = r.scan().unwrap();
            // every get goes through the bloom (the stored one with store_index_in_file)
            check_gets(&r, &entries);
            // total-order seeks land on each key
            for e in entries.iter().step_by(17) {
                assert_eq!(r.seek(&e.user_key, 1).unwrap()[0].user_key, e.user_key, "{ctx}");
            }
            // a reader that rebuilds the index itself (other sparseness) agrees
            let other = PlainTableFactoryOptions {
                index_sparseness: 7,
                store_index_in_file: false,
                ..plain.clone()
            };
            let r2 = PlainTableReader::open(f, &other, Some(prefix.clone()), false).unwrap();
            assert_eq!(r2.scan().unwrap(), entries, "{ctx}");
            check_gets(&r2, &entries);

            // Rebuild: records, bloom and index bytes equal RocksDB's; so do all the properties
            // Shale writes (RocksDB 9 adds a few newer ones).
            let out = root.path().join("rebuilt.sst");
            write_plain_table(&out, &same_identity(&p, plain.clone(), prefix.clone()), &entries).unwrap();
            let theirs = std::fs::read(f).unwrap();
            let ours = std::fs::read(&out).unwrap();
            let ours_p = PlainTableReader::open(&out, &plain, Some(prefix.clone()), false)
                .unwrap()
                .properties();
            let data = prop_num(&p, "rocksdb.data.size") as usize;
            let bloom = prop_num(&p, "rocksdb.filter.size") as usize;
            let index = prop_num(&p, "rocksdb.index.size") as usize;
            assert!(ours[..data] == theirs[..data], "{ctx}: {f:?} records differ");
            if store {
                assert!(bloom > 0 && index > 0, "{ctx}");
            }
            if locality == 0 {
                let end = data + bloom + index;
                assert!(ours[data..end] == theirs[data..end], "{ctx}: {f:?} bloom/index differ");
            } else {
                // Shale writes only the default bloom layout; the cache-line one (read by every
                // get above) has another size, so compare the index block alone.
                assert!(prop_num(&p, "rocksdb.plain.table.bloom.numblocks") > 0, "{ctx}");
                let our_bloom = prop_num(&ours_p, "rocksdb.filter.size") as usize;
                let theirs_ix = &theirs[data + bloom..data + bloom + index];
                let ours_ix = &ours[data + our_bloom..data + our_bloom + index];
                assert!(ours_ix == theirs_ix, "{ctx}: {f:?} index differs");
            }
            let bloom_layout = ["rocksdb.filter.size", "rocksdb.plain.table.bloom.numblocks"];
            for (k, v) in &ours_p {
                let bloom_only = locality > 0 && bloom_layout.contains(&k.as_str());
                if !k.starts_with("plain_table_") && !bloom_only {
                    assert_eq!(p.get(k), Some(v), "{ctx}: property {k}");
                }
            }
            all.push(entries);
        }
        assert_same(&merged(&all), &expect, &ctx);
    }
}

/// A table written by RocksDB 11.8.1's `db_bench` (see `tests/fixtures/README.md`), checked against
/// the dump an independent decoder made when it was committed.
#[test]
fn rocksdb_11_plain_table_fixture_reads_identically() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plain_rocksdb11");
    let sst = dir.join("000010.sst");
    let expect: Vec<SstEntry> = std::fs::read_to_string(dir.join("expected.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            SstEntry {
                user_key: unhex(f[0]),
                seq: f[1].parse().unwrap(),
                value_type: f[2].parse().unwrap(),
                value: unhex(f[3]),
            }
        })
        .collect();
    assert_eq!(expect.len(), 300);
    let prefix = new_fixed_prefix_transform(8);
    let plain = PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    };
    for mmap in [true, false] {
        let r = PlainTableReader::open(&sst, &plain, Some(prefix.clone()), mmap).unwrap();
        assert_eq!(r.scan().unwrap(), expect);
        check_gets(&r, &expect);
        let p = r.properties();
        // the record area is exactly what Shale writes for these entries
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("rebuilt.sst");
        write_plain_table(&out, &same_identity(&p, plain.clone(), prefix.clone()), &expect).unwrap();
        let n = prop_num(&p, "rocksdb.data.size") as usize;
        assert!(std::fs::read(&out).unwrap()[..n] == std::fs::read(&sst).unwrap()[..n]);
    }
    // the wrong extractor is refused with a clear error
    let e = PlainTableReader::open(&sst, &plain, Some(new_fixed_prefix_transform(4)), false)
        .err()
        .unwrap();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("rocksdb.FixedPrefix.8"),
        "{e}"
    );
}
