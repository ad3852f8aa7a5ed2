//! Prefix filters shared with real RocksDB, both ways. rocksdict (RocksDB 9.x) writes databases
//! with a fixed-prefix extractor (whole keys and prefixes in the filter, or prefixes only through
//! an OPTIONS file Shale wrote) and Shale reads them with prefix seeks and lookups, its filters
//! ruling absent prefixes out; Shale writes such databases and rocksdict's prefix seeks and
//! lookups, Debian's `ldb` and `sst_dump` (RocksDB 7.8) read them. The filter of the same keys
//! has the same number of entries whoever builds it.
//!
//! A missing tool is a loud skip; with `SHALE_REQUIRE_ROCKSDB=1` (set by `.ci/run`) it fails.

use crate::rocksdb_tools;

use std::path::Path;
use std::process::Command;

use rocksdb_tools::*;
use shale::perf::set_perf_stats;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{Options, PerfContext, PerfMetric, PerfStatsLevel, ReadOptions, DB};

const N: usize = 3000;

/// Keys `p<even 3 digits>-<5 digits>`: 97 prefixes of 4 bytes (`p000`, `p002`, ... `p192`); the
/// odd prefixes are absent.
fn model() -> Kv {
    (0..N)
        .map(|i| {
            (
                format!("p{:03}-{i:05}", i % 97 * 2).into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect()
}

const RD_WRITE: &str = r#"
import sys
from rocksdict import Options, Rdict, SliceTransform, BlockBasedOptions
path, mode = sys.argv[1], sys.argv[2]
if mode == "load":
    opts, _ = Options.load_latest(path)
    opts.set_raw_mode(True) if hasattr(opts, "set_raw_mode") else None
else:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(4))
    b = BlockBasedOptions()
    b.set_bloom_filter(10, False)
    opts.set_block_based_table_factory(b)
    opts.set_memtable_prefix_bloom_ratio(0.1)
db = Rdict(path, options=opts)
for i in range(3000):
    db[b"p%03d-%05d" % (i % 97 * 2, i)] = b"v%d" % i
db.flush()
db.close()
"#;

const RD_READ: &str = r#"
import sys
from rocksdict import AccessType, Options, Rdict, ReadOptions, SliceTransform
opts = Options(raw_mode=True)
opts.set_prefix_extractor(SliceTransform.create_fixed_prefix(4))
db = Rdict(sys.argv[1], options=opts, access_type=AccessType.read_only())
ro = ReadOptions()
ro.set_prefix_same_as_start(True)
for p in range(0, 200):
    it = db.iter(ro)
    prefix = b"p%03d" % p
    it.seek(prefix)
    n = 0
    while it.valid():
        assert it.key().startswith(prefix), it.key()
        n += 1
        it.next()
    print("P", prefix.decode(), n)
for k in sys.argv[2:]:
    v = db.get(bytes.fromhex(k))
    print("G", k, "MISSING" if v is None else v.hex())
db.close()
"#;

/// Per prefix, how many keys the model has in it.
fn prefix_counts(m: &Kv) -> Vec<(String, usize)> {
    (0..200)
        .map(|p| {
            let prefix = format!("p{p:03}");
            let n = m.keys().filter(|k| k.starts_with(prefix.as_bytes())).count();
            (prefix, n)
        })
        .collect()
}

fn shale_opts(whole_key: bool) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_prefix_extractor(new_fixed_prefix_transform(4));
    let mut b = o.get_block_based_options();
    b.set_whole_key_filtering(whole_key);
    o.set_block_based_table_factory(&b);
    o
}

/// Shale's view of `dir` (opened with a 4-byte extractor): prefix seeks, gets of present and
/// absent keys; returns how often a filter ruled a table out.
fn shale_reads(dir: &Path, whole_key: bool, m: &Kv) -> u64 {
    let dir = dir.to_path_buf();
    let m = m.clone();
    std::thread::spawn(move || {
        set_perf_stats(PerfStatsLevel::EnableCount);
        let mut ctx = PerfContext::default();
        let db = DB::open(&shale_opts(whole_key), &dir).unwrap();
        assert_same(&shale_dump(&db), &m, "shale scan");
        ctx.reset();
        for (prefix, n) in prefix_counts(&m) {
            let keys: Vec<Vec<u8>> = db
                .prefix_iterator(prefix.as_bytes())
                .map(|r| r.unwrap().0.to_vec())
                .collect();
            let want: Vec<Vec<u8>> = m.keys().filter(|k| k.starts_with(prefix.as_bytes())).cloned().collect();
            assert_eq!(keys.len(), n, "prefix {prefix}");
            assert_eq!(keys, want, "prefix {prefix}");
        }
        for (k, v) in m.iter().step_by(7) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
            let mut absent = k.clone();
            absent.push(b'x');
            assert_eq!(db.get(&absent).unwrap(), None);
            absent[2] += 1; // an odd (absent) prefix
            assert_eq!(db.get(&absent).unwrap(), None);
        }
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        let mut it = db.raw_iterator_opt(ro);
        it.seek(b"p001");
        assert_eq!(it.key(), Some(&b"p002-00001"[..]));
        ctx.metric(PerfMetric::BloomSstMissCount)
    })
    .join()
    .unwrap()
}

/// `# entries for filter` of the only table file of `dir`, as Shale's sst_dump prints it.
fn filter_entries(dir: &Path) -> (String, String) {
    let ssts = sst_files(dir);
    assert_eq!(ssts.len(), 1, "{ssts:?}");
    let o = shale::tools::SstDumpOptions {
        command: "check".into(),
        show_properties: true,
        ..Default::default()
    };
    let out = shale::tools::sst_dump(&ssts[0], &o).unwrap();
    let line = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in\n{out}"))
            .to_string()
    };
    (line("# entries for filter"), line("prefix extractor name"))
}

#[test]
fn rocksdict_writes_prefix_filters_shale_seeks_with_them() {
    let Some([python]) = find([ROCKSDICT]) else {
        return;
    };
    let m = model();
    // whole keys and prefixes (RocksDB's defaults)
    let d = tempfile::tempdir().unwrap();
    run(Command::new(&python).args(["-c", RD_WRITE]).arg(d.path()).arg("fixed"));
    let (entries, name) = filter_entries(d.path());
    assert!(name.ends_with("rocksdb.FixedPrefix.4"), "{name}");
    assert!(entries.ends_with(&format!(" {}", N + 97)), "{entries}");
    assert!(
        shale_reads(d.path(), true, &m) > 0,
        "RocksDB's prefix filter never ruled a prefix out"
    );

    // prefixes only: Shale writes the OPTIONS file (whole_key_filtering=false), rocksdict loads it
    let d = tempfile::tempdir().unwrap();
    drop(DB::open(&shale_opts(false), d.path()).unwrap());
    run(Command::new(&python).args(["-c", RD_WRITE]).arg(d.path()).arg("load"));
    let (entries, _) = filter_entries(d.path());
    assert!(entries.ends_with(" 97"), "prefix-only filter: {entries}");
    // gets probe the prefixes: absent prefixes are ruled out, present keys found
    assert!(shale_reads(d.path(), true, &m) > 0);
}

#[test]
fn shale_writes_prefix_filters_rocksdb_seeks_with_them() {
    let Some([python, ldb, sst_dump]) = find([ROCKSDICT, "ldb", "sst_dump"]) else {
        return;
    };
    let m = model();
    for whole_key in [true, false] {
        let d = tempfile::tempdir().unwrap();
        {
            let mut o = shale_opts(whole_key);
            o.set_memtable_prefix_bloom_ratio(0.1);
            let db = DB::open(&o, d.path()).unwrap();
            for (k, v) in &m {
                db.put(k, v).unwrap();
            }
            db.flush().unwrap();
        }
        let (entries, name) = filter_entries(d.path());
        assert!(name.ends_with("rocksdb.FixedPrefix.4"), "{name}");
        // RocksDB 9's count for the same keys (see the other test): keys + prefixes, or prefixes
        let want = if whole_key { N + 97 } else { 97 };
        assert!(
            entries.ends_with(&format!(" {want}")),
            "whole_key {whole_key}: {entries}"
        );

        // rocksdict: prefix seeks over Shale's filters, gets
        let mut keys: Vec<String> = m.keys().step_by(5).map(|k| hex(k)).collect();
        keys.push(hex(b"p001-00001"));
        let out = run(Command::new(&python).args(["-c", RD_READ]).arg(d.path()).args(&keys));
        let counts = prefix_counts(&m);
        let mut seen = 0;
        for l in out.lines() {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                ["P", p, n] => {
                    let want = counts.iter().find(|(q, _)| q == p).unwrap().1;
                    assert_eq!(n.parse::<usize>().unwrap(), want, "rocksdict prefix seek {p}");
                    seen += 1;
                }
                ["G", k, v] => {
                    let key = unhex(k);
                    match m.get(&key) {
                        Some(val) => assert_eq!(unhex(v), *val, "rocksdict get {k}"),
                        None => assert_eq!(*v, "MISSING"),
                    }
                }
                _ => {}
            }
        }
        assert_eq!(seen, 200);

        // RocksDB 7.8's tools: the property as RocksDB writes it, and the whole content
        let props = run(Command::new(&sst_dump)
            .arg(format!("--file={}", d.path().display()))
            .arg("--show_properties"));
        assert!(
            props.contains("prefix extractor name: rocksdb.FixedPrefix.4"),
            "{props}"
        );
        assert_same(&ldb_scan(&ldb, d.path()), &m, "ldb scan");
    }
}
