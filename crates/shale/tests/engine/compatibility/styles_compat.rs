//! Universal and FIFO databases shared with real RocksDB, both ways: a DB that rocksdict (RocksDB
//! 9.x) makes with either style loads its style and options from the OPTIONS file in Shale
//! (`tools::load_options_file`, as `ldb` and `Options.load_latest` do), opens, and keeps them;
//! a DB Shale makes with either style is loaded by rocksdict's `Options.load_latest`, which opens
//! it with the same style and options (RocksDB's own OPTIONS file says so), and `ldb` reads it.
//!
//! When a tool is missing the tests say so loudly and return; with `SHALE_REQUIRE_ROCKSDB=1`
//! a missing tool fails the test instead.

use crate::rocksdb_tools;

use std::process::Command;

use rocksdb_tools::*;
use shale::{DBCompactionStyle, FifoCompactOptions, Options, UniversalCompactOptions, DB};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The CFOptions lines of the newest OPTIONS file in `dir`.
fn newest_options(dir: &std::path::Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect();
    names.sort_by_key(|n| n.trim_start_matches("OPTIONS-").parse::<u64>().unwrap_or(0));
    std::fs::read_to_string(dir.join(names.last().expect("an OPTIONS file"))).unwrap()
}

#[test]
fn rocksdb_universal_and_fifo_dbs_open_in_shale_with_their_style() {
    let Some(python) = python_with_rocksdict() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for style in ["universal", "fifo"] {
        let path = tmp.path().join(style);
        let script = r#"
import sys
from rocksdict import Rdict, Options, DBCompactionStyle, UniversalCompactOptions, FifoCompactOptions
style = sys.argv[2]
o = Options(raw_mode=True)
o.create_if_missing(True)
if style == "universal":
    o.set_compaction_style(DBCompactionStyle.universal())
    u = UniversalCompactOptions()
    u.size_ratio = 7
    u.min_merge_width = 3
    u.max_merge_width = 9
    u.max_size_amplification_percent = 150
    o.set_universal_compaction_options(u)
else:
    o.set_compaction_style(DBCompactionStyle.fifo())
    f = FifoCompactOptions()
    f.max_table_files_size = 123456789
    o.set_fifo_compaction_options(f)
db = Rdict(sys.argv[1], o)
for i in range(500):
    db[b"key%05d" % i] = b"v%d" % i
db.flush()
db.close()
"#;
        run(Command::new(&python).args(["-c", script]).arg(&path).arg(style));
        let mut o = Options::default();
        assert!(shale::tools::load_options_file(&path, &mut o).unwrap());
        if style == "universal" {
            assert_eq!(o.get_compaction_style(), DBCompactionStyle::Universal);
            let mut want = UniversalCompactOptions::default();
            want.set_size_ratio(7);
            want.set_min_merge_width(3);
            want.set_max_merge_width(9);
            want.set_max_size_amplification_percent(150);
            assert_eq!(o.get_universal_compaction_options(), want);
        } else {
            assert_eq!(o.get_compaction_style(), DBCompactionStyle::Fifo);
            let mut want = FifoCompactOptions::default();
            want.set_max_table_files_size(123456789);
            assert_eq!(o.get_fifo_compaction_options(), want);
        }
        let db = DB::open(&o, &path).unwrap();
        for i in (0..500).step_by(37) {
            assert_eq!(db.get(key(i)).unwrap(), Some(format!("v{i}").into_bytes()));
        }
        for i in 500..600 {
            db.put(key(i), b"shale").unwrap();
        }
        db.flush().unwrap();
        drop(db);
        // Shale's OPTIONS file keeps the style.
        let text = newest_options(&path);
        let name = if style == "universal" {
            "kCompactionStyleUniversal"
        } else {
            "kCompactionStyleFIFO"
        };
        assert!(text.contains(&format!("compaction_style={name}")), "{text}");
    }
}

#[test]
fn shale_universal_and_fifo_dbs_open_in_rocksdb_with_their_style() {
    let Some([python, ldb]) = find([ROCKSDICT, "ldb"]) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    for style in [DBCompactionStyle::Universal, DBCompactionStyle::Fifo] {
        let path = tmp.path().join(format!("{style:?}"));
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compaction_style(style);
        let mut u = UniversalCompactOptions::default();
        u.set_size_ratio(11);
        u.set_max_merge_width(6);
        o.set_universal_compaction_options(&u);
        let mut f = FifoCompactOptions::default();
        f.set_max_table_files_size(98765432);
        o.set_fifo_compaction_options(&f);
        o.set_level_zero_file_num_compaction_trigger(2);
        if style == DBCompactionStyle::Universal {
            o.set_periodic_compaction_seconds(86401);
        }
        let db = DB::open(&o, &path).unwrap();
        for round in 0..4u32 {
            for i in 0..200 {
                db.put(key(i), format!("r{round}").as_bytes()).unwrap();
            }
            db.flush().unwrap();
        }
        db.wait_for_compact(&Default::default()).unwrap();
        drop(db);
        let scan = ldb_scan(&ldb, &path);
        assert_eq!(scan.len(), 200);
        assert!(scan.values().all(|v| v == b"r3"));
        // rocksdict loads Shale's OPTIONS file and opens the DB read-write: the OPTIONS file
        // RocksDB then writes has the same style and options.
        let script = r#"
import sys
from rocksdict import Rdict, Options
opts, _ = Options.load_latest(sys.argv[1])
opts.set_raw_mode(True) if hasattr(opts, "set_raw_mode") else None
db = Rdict(sys.argv[1], options=opts)
db[b"from-rocksdb"] = b"1"
db.close()
"#;
        run(Command::new(&python).args(["-c", script]).arg(&path));
        let text = newest_options(&path);
        match style {
            DBCompactionStyle::Universal => {
                assert!(text.contains("compaction_style=kCompactionStyleUniversal"), "{text}");
                assert!(text.contains("size_ratio=11;"), "{text}");
                assert!(text.contains("max_merge_width=6;"), "{text}");
                assert!(text.contains("periodic_compaction_seconds=86401"), "{text}");
            }
            _ => {
                assert!(text.contains("compaction_style=kCompactionStyleFIFO"), "{text}");
                assert!(text.contains("max_table_files_size=98765432;"), "{text}");
            }
        }
        let db = DB::open(&o, &path).unwrap();
        assert_eq!(db.get(b"from-rocksdb").unwrap().as_deref(), Some(&b"1"[..]));
    }
}

/// The RocksDB script of `marks_made_by_one_side_are_compacted_by_the_other`: `make` writes a
/// universal DB whose last flush (a dense run of deletions) RocksDB's collector marks, with
/// automatic compactions off; `open` opens a DB (without a collector) and turns automatic
/// compactions on for a while (`set_options`: rocksdict keeps the OPTIONS file's family options).
const MARK_SCRIPT: &str = r#"
import sys, time
from rocksdict import Rdict, Options, DBCompactionStyle
path, mode = sys.argv[1], sys.argv[2]
o = Options(raw_mode=True)
o.create_if_missing(True)
o.set_compaction_style(DBCompactionStyle.universal())
o.set_level_zero_file_num_compaction_trigger(8)
if mode == "make":
    o.add_compact_on_deletion_collector_factory(100, 50, 0.0)
    o.set_disable_auto_compactions(True)
    db = Rdict(path, o)
    for i in range(2000):
        db[b"key%05d" % i] = b"v%d" % i
    db.flush()
    db.compact_range(None, None)
    for i in range(500, 1500):
        del db[b"key%05d" % i]
    db.flush()
    db.close()
else:
    db = Rdict(path, o)
    db.set_options({"disable_auto_compactions": "false"})
    time.sleep(2)
    db.close()
"#;

fn l0_files(db: &DB) -> u64 {
    db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap()
}

#[test]
fn marks_made_by_one_side_are_compacted_by_the_other() {
    let Some(python) = python_with_rocksdict() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // RocksDB's collector marks the file; Shale reads the mark from the MANIFEST and compacts it
    // (without a collector of its own).
    let path = tmp.path().join("from-rocksdb");
    run(Command::new(&python).args(["-c", MARK_SCRIPT]).arg(&path).arg("make"));
    let mut o = Options::default();
    assert!(shale::tools::load_options_file(&path, &mut o).unwrap());
    let db = DB::open(&o, &path).unwrap();
    assert!(l0_files(&db) > 0);
    drop(db);
    o.set_disable_auto_compactions(false);
    let db = DB::open(&o, &path).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0_files(&db), 0);
    assert_eq!(db.get(key(499)).unwrap(), Some(b"v499".to_vec()));
    assert_eq!(db.get(key(500)).unwrap(), None);
    drop(db);

    // Shale's collector marks the file; RocksDB reads the mark and compacts it.
    let path = tmp.path().join("from-shale");
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compaction_style(DBCompactionStyle::Universal);
    o.set_level_zero_file_num_compaction_trigger(8);
    o.add_compact_on_deletion_collector_factory(100, 50, 0.0);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, &path).unwrap();
    for i in 0..2000 {
        db.put(key(i), format!("v{i}").as_bytes()).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in 500..1500 {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    assert!(l0_files(&db) > 0);
    drop(db);
    run(Command::new(&python).args(["-c", MARK_SCRIPT]).arg(&path).arg("open"));
    let db = DB::open(&o, &path).unwrap();
    assert_eq!(l0_files(&db), 0);
    assert_eq!(db.get(key(1500)).unwrap(), Some(b"v1500".to_vec()));
    assert_eq!(db.get(key(1499)).unwrap(), None);
}
