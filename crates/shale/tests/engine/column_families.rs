//! Column families: the `rocksdb` crate's API, per-family options, atomic batches
//! across families, one WAL with per-family flushes, the open rules, handles across a drop.
#![allow(clippy::field_reassign_with_default)]

use std::sync::Arc;

use shale::comparator::ReverseBytewiseComparator;
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, DB};

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

fn get_cf(db: &DB, name: &str, k: &[u8]) -> Option<Vec<u8>> {
    let cf = db.cf_handle(name).unwrap();
    db.get_cf(&cf, k).unwrap()
}

fn tables(fs: &MemFs) -> usize {
    fs.list(std::path::Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count()
}

fn wal_count(fs: &MemFs) -> usize {
    fs.list(std::path::Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".log"))
        .count()
}

#[test]
fn families_are_separate_key_spaces_that_survive_reopen() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    {
        let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
        assert_eq!(db.cf_names(), vec!["default", "a", "b"]);
        let a = db.cf_handle("a").unwrap();
        let b = db.cf_handle("b").unwrap();
        db.put(b"k", b"default").unwrap();
        db.put_cf(&a, b"k", b"in a").unwrap();
        db.put_cf(&b, b"k", b"in b").unwrap();
        db.put_cf(&b, b"only-b", b"1").unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"default"[..]));
        assert_eq!(db.get_cf(&a, b"k").unwrap().as_deref(), Some(&b"in a"[..]));
        assert_eq!(db.get_cf(&a, b"only-b").unwrap(), None);
        db.delete_cf(&a, b"k").unwrap();
        assert_eq!(db.get_cf(&a, b"k").unwrap(), None);
        assert_eq!(db.get_cf(&b, b"k").unwrap().as_deref(), Some(&b"in b"[..]));
        // Flush one family only: its data moves to a table, the others stay in the WAL.
        db.flush_cf(&b).unwrap();
        assert_eq!(
            db.property_int_value_cf(&b, "rocksdb.num-files-at-level0").unwrap(),
            Some(1)
        );
        assert_eq!(
            db.property_int_value_cf(&a, "rocksdb.num-files-at-level0").unwrap(),
            Some(0)
        );
        let keys: Vec<Vec<u8>> = db
            .iterator_cf(&b, IteratorMode::Start)
            .map(|r| r.unwrap().0.to_vec())
            .collect();
        assert_eq!(keys, vec![b"k".to_vec(), b"only-b".to_vec()]);
    }
    assert_eq!(DB::list_cf(&o, "/db").unwrap(), vec!["default", "a", "b"]);
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"default"[..]));
    assert_eq!(get_cf(&db, "a", b"k"), None);
    assert_eq!(get_cf(&db, "b", b"k").as_deref(), Some(&b"in b"[..]));
    assert_eq!(get_cf(&db, "b", b"only-b").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_batch_across_families_is_one_wal_record_all_or_nothing() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    {
        let db = DB::open_cf(&o, "/db", ["x"]).unwrap();
        let x = db.cf_handle("x").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"d1", b"v");
        b.put_cf(&x, b"x1", b"v");
        b.delete_cf(&x, b"gone");
        b.merge_cf(&x, b"never", b"m"); // no merge operator: the whole batch is refused
        assert!(db.write(b).is_err());
        assert_eq!(db.get(b"d1").unwrap(), None, "part of a refused batch was applied");
        let mut b = WriteBatch::new();
        b.put(b"d1", b"v");
        b.put_cf(&x, b"x1", b"v");
        b.delete_range_cf(&x, b"a", b"b");
        db.write(b).unwrap();
        let seq = db.latest_sequence_number();
        assert_eq!(seq, 3, "one sequence number per record, in one batch");
    }
    // After a power loss the synced part is all or nothing; here the WAL is synced on close.
    fs.power_loss();
    let db = DB::open_cf(&o, "/db", ["x"]).unwrap();
    let both = (db.get(b"d1").unwrap().is_some(), get_cf(&db, "x", b"x1").is_some());
    assert!(both == (true, true) || both == (false, false), "torn batch: {both:?}");
}

#[test]
fn open_rules_as_rocksdb() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    drop(DB::open_cf(&o, "/db", ["a", "b"]).unwrap());
    // Every family must be named by a read-write open.
    let e = DB::open(&o, "/db").unwrap_err();
    assert!(e.is_invalid_argument() && e.to_string().contains("a, b"), "{e}");
    // A read-only open may name a subset.
    let ro = DB::open_cf_for_read_only(&o, "/db", ["a"], false).unwrap();
    assert!(ro.cf_handle("a").is_some() && ro.cf_handle("b").is_none());
    drop(ro);
    // A family that does not exist needs create_missing_column_families.
    o.create_missing_column_families(false);
    let e = DB::open_cf(&o, "/db", ["a", "b", "c"]).unwrap_err();
    assert!(e.is_invalid_argument() && e.to_string().contains('c'), "{e}");
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    // default cannot be dropped; an existing name cannot be created; unknown cannot be dropped.
    assert!(db.drop_cf("default").unwrap_err().is_invalid_argument());
    assert!(db
        .create_cf("a", &Options::default())
        .unwrap_err()
        .is_invalid_argument());
    assert!(db.drop_cf("zzz").unwrap_err().is_invalid_argument());
    assert!(db.create_cf("", &Options::default()).unwrap_err().is_invalid_argument());
}

#[test]
fn a_handle_outlives_drop_cf_and_the_files_go_with_it() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open(&o, "/db").unwrap();
    db.create_cf("t", &Options::default()).unwrap();
    let t = db.cf_handle("t").unwrap();
    for i in 0..100u32 {
        db.put_cf(&t, i.to_be_bytes(), b"v").unwrap();
    }
    db.flush_cf(&t).unwrap();
    assert_eq!(tables(&fs), 1);
    let it = db.iterator_cf(&t, IteratorMode::Start);
    db.drop_cf("t").unwrap();
    assert!(db.cf_handle("t").is_none());
    // Reads through the handle and the iterator still see the data; writes are refused.
    assert_eq!(db.get_cf(&t, 7u32.to_be_bytes()).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(it.count(), 100);
    assert!(db.put_cf(&t, b"x", b"y").unwrap_err().is_invalid_argument());
    assert_eq!(
        tables(&fs),
        1,
        "a table of a dropped family was deleted while a handle held it"
    );
    drop(t);
    // The last handle takes the family's files with it (RocksDB purges when a dropped family's
    // last handle is destroyed), without waiting for a flush or compaction.
    assert_eq!(tables(&fs), 0, "a dropped family's table outlived its last handle");
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(tables(&fs), 1, "only the default family's new table is left");
    drop(db);
    assert_eq!(DB::list_cf(&o, "/db").unwrap(), vec!["default"]);
    let db = DB::open(&o, "/db").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// An iterator that outlives the last handle of a dropped family keeps its files; they go by
/// the first flush after the iterator.
#[test]
fn an_iterator_keeps_a_dropped_family_files_past_its_last_handle() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open(&o, "/db").unwrap();
    db.create_cf("t", &Options::default()).unwrap();
    let t = db.cf_handle("t").unwrap();
    db.put_cf(&t, b"a", b"1").unwrap();
    db.flush_cf(&t).unwrap();
    let mut it = db.iterator_cf(&t, IteratorMode::Start);
    db.drop_cf("t").unwrap();
    drop(t);
    assert_eq!(tables(&fs), 1, "a table was deleted while an iterator read it");
    assert_eq!(it.next().unwrap().unwrap().1.as_ref(), b"1");
    drop(it);
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(tables(&fs), 1, "only the default family's table is left");
}

#[test]
fn per_family_options_comparator_and_merge_operator() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let mut rev = Options::default();
    rev.set_custom_comparator(Arc::new(ReverseBytewiseComparator));
    let mut counter = Options::default();
    counter.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(
        shale::merge_operator::UInt64AddOperator,
    )));
    let descs = || {
        vec![
            ColumnFamilyDescriptor::new("rev", rev.clone()),
            ColumnFamilyDescriptor::new("counter", counter.clone()),
        ]
    };
    {
        let db = DB::open_cf_descriptors(&o, "/db", descs()).unwrap();
        let r = db.cf_handle("rev").unwrap();
        let c = db.cf_handle("counter").unwrap();
        for k in [b"a", b"b", b"c"] {
            db.put_cf(&r, k, b"").unwrap();
            db.put(k, b"").unwrap();
        }
        let rk: Vec<Vec<u8>> = db
            .iterator_cf(&r, IteratorMode::Start)
            .map(|x| x.unwrap().0.to_vec())
            .collect();
        assert_eq!(rk, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        let dk: Vec<Vec<u8>> = db
            .iterator(IteratorMode::Start)
            .map(|x| x.unwrap().0.to_vec())
            .collect();
        assert_eq!(dk, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        db.merge_cf(&c, b"n", 5u64.to_le_bytes()).unwrap();
        db.merge_cf(&c, b"n", 7u64.to_le_bytes()).unwrap();
        assert!(
            db.merge(b"n", 1u64.to_le_bytes()).is_err(),
            "default has no merge operator"
        );
        db.flush_cf(&r).unwrap();
    }
    // Reopening "rev" with the bytewise comparator is refused (the MANIFEST names the other).
    let e = DB::open_cf(&o, "/db", ["rev", "counter"]).unwrap_err();
    assert!(e.is_invalid_argument() && e.to_string().contains("comparator"), "{e}");
    let db = DB::open_cf_descriptors(&o, "/db", descs()).unwrap();
    let c = db.cf_handle("counter").unwrap();
    assert_eq!(db.get_cf(&c, b"n").unwrap().as_deref(), Some(&12u64.to_le_bytes()[..]));
}

#[test]
fn multi_get_cf_reads_several_families_at_one_point() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    let b = db.cf_handle("b").unwrap();
    db.put_cf(&a, b"k1", b"a1").unwrap();
    db.put_cf(&b, b"k1", b"b1").unwrap();
    db.put_cf(&b, b"k2", b"b2").unwrap();
    db.flush_cf(&a).unwrap();
    let r = db.multi_get_cf([(&a, b"k1"), (&b, b"k1"), (&a, b"k2"), (&b, b"k2")]);
    let r: Vec<Option<Vec<u8>>> = r.into_iter().map(|x| x.unwrap()).collect();
    assert_eq!(
        r,
        vec![Some(b"a1".to_vec()), Some(b"b1".to_vec()), None, Some(b"b2".to_vec())]
    );
    // One family, values pinned; keys of any type and order (`sorted_input` is a hint).
    for sorted in [true, false] {
        let keys: [&[u8]; 4] = [b"k2", b"k0", b"k1", b"k2"];
        let r = db.batched_multi_get_cf(&b, keys, sorted);
        let r: Vec<Option<Vec<u8>>> = r.into_iter().map(|x| x.unwrap().map(|v| v.to_vec())).collect();
        assert_eq!(
            r,
            vec![Some(b"b2".to_vec()), None, Some(b"b1".to_vec()), Some(b"b2".to_vec())]
        );
    }
    let r = db.batched_multi_get_cf(&a, &[b"k1"], true);
    assert_eq!(r[0].as_ref().unwrap().as_deref(), Some(&b"a1"[..]));
}

/// A family that is written rarely must not keep every WAL alive, and one that never gets a
/// write must not either (RocksDB's min-log-number rule).
#[test]
fn wals_are_deleted_once_no_family_needs_them() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 10);
    let db = DB::open_cf(&o, "/db", ["idle", "busy"]).unwrap();
    let busy = db.cf_handle("busy").unwrap();
    let idle = db.cf_handle("idle").unwrap();
    for i in 0..20_000u32 {
        db.put_cf(&busy, i.to_be_bytes(), [b'v'; 40]).unwrap();
    }
    db.flush_cf(&busy).unwrap();
    assert!(wal_count(&fs) <= 2, "WALs pile up: {}", wal_count(&fs));
    // The default family got no write either. Now "idle" holds one key in an old WAL.
    db.put_cf(&idle, b"x", b"1").unwrap();
    for i in 0..20_000u32 {
        db.put_cf(&busy, i.to_be_bytes(), [b'w'; 40]).unwrap();
    }
    db.flush_cf(&busy).unwrap();
    let kept = wal_count(&fs);
    assert!(kept >= 2, "the WAL holding idle's key was deleted");
    db.flush_cf(&idle).unwrap();
    db.flush_cf(&busy).unwrap();
    assert!(
        wal_count(&fs) <= 2,
        "WALs kept after every family flushed: {}",
        wal_count(&fs)
    );
    drop(db);
    fs.power_loss();
    let db = DB::open_cf(&o, "/db", ["idle", "busy"]).unwrap();
    assert_eq!(get_cf(&db, "idle", b"x").as_deref(), Some(&b"1"[..]));
    assert_eq!(
        get_cf(&db, "busy", &7u32.to_be_bytes()).as_deref(),
        Some(&[b'w'; 40][..])
    );
}

/// Records in a WAL for a family that was dropped are skipped at recovery (as RocksDB does),
/// and records of a family that already flushed them are not applied twice.
#[test]
fn recovery_skips_dropped_and_flushed_families() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(
        shale::merge_operator::UInt64AddOperator,
    )));
    {
        let db = DB::open_cf(&o, "/db", ["m", "gone"]).unwrap();
        let m = db.cf_handle("m").unwrap();
        let g = db.cf_handle("gone").unwrap();
        db.merge_cf(&m, b"n", 1u64.to_le_bytes()).unwrap();
        db.put_cf(&g, b"k", b"v").unwrap();
        db.flush_cf(&m).unwrap(); // m's operand is in a table; the WAL still holds it
        db.put(b"d", b"1").unwrap();
        db.drop_cf("gone").unwrap();
    }
    let db = DB::open_cf(&o, "/db", ["m"]).unwrap();
    assert_eq!(
        get_cf(&db, "m", b"n").as_deref(),
        Some(&1u64.to_le_bytes()[..]),
        "operand applied twice"
    );
    assert_eq!(db.get(b"d").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.cf_names(), vec!["default", "m"]);
}

#[test]
fn options_file_has_a_section_per_family() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let mut plain = Options::default();
    plain.set_compression_type(shale::DBCompressionType::None);
    let db = DB::open_cf_descriptors(&o, "/db", vec![ColumnFamilyDescriptor::new("p", plain)]).unwrap();
    db.create_cf("later", &Options::default()).unwrap();
    drop(db);
    let names = fs.list(std::path::Path::new("/db")).unwrap();
    let newest = names.iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    let text = String::from_utf8(fs.read_all(&std::path::Path::new("/db").join(newest)).unwrap()).unwrap();
    for s in [
        "[CFOptions \"default\"]",
        "[CFOptions \"p\"]",
        "[CFOptions \"later\"]",
        "[TableOptions/BlockBasedTable \"later\"]",
    ] {
        assert!(text.contains(s), "{s} missing from\n{text}");
    }
}

/// `atomic_flush`: flushing one family flushes every family with data, in one MANIFEST group.
#[test]
fn atomic_flush_flushes_every_family_together() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_atomic_flush(true);
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    let b = db.cf_handle("b").unwrap();
    let mut wo = shale::WriteOptions::default();
    wo.disable_wal(true);
    db.put_cf_opt(&a, b"k", b"1", &wo).unwrap();
    db.put_cf_opt(&b, b"k", b"2", &wo).unwrap();
    db.flush_cf(&a).unwrap();
    for cf in [&a, &b] {
        assert_eq!(
            db.property_int_value_cf(cf, "rocksdb.num-files-at-level0").unwrap(),
            Some(1)
        );
    }
    assert_eq!(
        db.property_int_value("rocksdb.num-files-at-level0").unwrap(),
        Some(0),
        "empty default flushed"
    );
    drop(db);
    fs.power_loss();
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    assert_eq!(get_cf(&db, "a", b"k").as_deref(), Some(&b"1"[..]));
    assert_eq!(get_cf(&db, "b", b"k").as_deref(), Some(&b"2"[..]));
    // Without atomic_flush only the named family is flushed.
    drop(db);
    o.set_atomic_flush(false);
    let db = DB::open_cf(&o, "/db", ["a", "b"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    let b = db.cf_handle("b").unwrap();
    db.put_cf(&a, b"k2", b"1").unwrap();
    db.put_cf(&b, b"k2", b"2").unwrap();
    db.flush_cf(&a).unwrap();
    assert_eq!(
        db.property_int_value_cf(&a, "rocksdb.num-files-at-level0").unwrap(),
        Some(2)
    );
    assert_eq!(
        db.property_int_value_cf(&b, "rocksdb.num-files-at-level0").unwrap(),
        Some(1)
    );
}

/// Each family writes tables in its own format (block-based, plain, cuckoo) and compression.
#[test]
fn families_with_different_table_formats() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let mut plain = Options::default();
    plain.set_plain_table_factory(&shale::PlainTableFactoryOptions {
        user_key_len: 8,
        hash_table_ratio: 0.0,
        ..Default::default()
    });
    let mut cuckoo = Options::default();
    cuckoo.set_cuckoo_table_factory(&Default::default());
    let mut zstd = Options::default();
    zstd.set_compression_type(shale::DBCompressionType::Zstd);
    let descs = || {
        vec![
            ColumnFamilyDescriptor::new("plain", plain.clone()),
            ColumnFamilyDescriptor::new("cuckoo", cuckoo.clone()),
            ColumnFamilyDescriptor::new("zstd", zstd.clone()),
        ]
    };
    {
        let db = DB::open_cf_descriptors(&o, "/db", descs()).unwrap();
        for name in ["plain", "cuckoo", "zstd", "default"] {
            let cf = db.cf_handle(name).unwrap();
            for i in 0..200u64 {
                db.put_cf(&cf, i.to_be_bytes(), format!("{name}{i:04}")).unwrap();
            }
            db.flush_cf(&cf).unwrap();
        }
    }
    let db = DB::open_cf_descriptors(&o, "/db", descs()).unwrap();
    for name in ["plain", "cuckoo", "zstd", "default"] {
        let cf = db.cf_handle(name).unwrap();
        assert_eq!(
            db.get_cf(&cf, 42u64.to_be_bytes()).unwrap().as_deref(),
            Some(format!("{name}0042").as_bytes()),
            "{name}"
        );
        let s = db.property_value_cf(&cf, "rocksdb.stats").unwrap().unwrap();
        assert!(s.contains(&format!("Compaction Stats [{name}]")), "{s}");
    }
}

/// `max_total_wal_size`: a family written once and then never again would keep every later WAL
/// alive; once the WALs pass the limit it is flushed so they can go (as RocksDB).
#[test]
fn a_rarely_written_family_is_flushed_when_the_wals_grow() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 10);
    o.set_max_total_wal_size(256 << 10);
    let db = DB::open_cf(&o, "/db", ["idle", "busy"]).unwrap();
    let busy = db.cf_handle("busy").unwrap();
    let idle = db.cf_handle("idle").unwrap();
    db.put_cf(&idle, b"x", b"1").unwrap();
    let mut most = 0;
    for i in 0..40_000u32 {
        db.put_cf(&busy, i.to_be_bytes(), [b'v'; 40]).unwrap();
        if i % 1000 == 0 {
            most = most.max(wal_count(&fs));
        }
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(
        db.property_int_value_cf(&idle, "rocksdb.num-files-at-level0").unwrap(),
        Some(1),
        "the idle family was not flushed"
    );
    assert!(most <= 8, "WALs piled up to {most} (limit 256 KiB, 64 KiB memtables)");
    drop(db);
    let db = DB::open_cf(&o, "/db", ["idle", "busy"]).unwrap();
    assert_eq!(get_cf(&db, "idle", b"x").as_deref(), Some(&b"1"[..]));
}

/// An OPTIONS file whose families differ from the MANIFEST's (a stale or hand-edited file):
/// opening the DB does not read it (as RocksDB's `DB::Open`), the MANIFEST decides which
/// families exist; the tools' loader gives a family missing from the file the defaults and
/// never another family's options.
#[test]
fn an_options_file_naming_other_families_does_not_decide_anything() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let mut zstd = Options::default();
    zstd.set_compaction_style(shale::DBCompactionStyle::Universal);
    {
        let db = DB::open_cf_descriptors(&o, "/db", vec![ColumnFamilyDescriptor::new("a", zstd)]).unwrap();
        db.put_cf(&db.cf_handle("a").unwrap(), b"k", b"v").unwrap();
    }
    let dir = std::path::Path::new("/db");
    let newest = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = String::from_utf8(fs.read_all(&dir.join(&newest)).unwrap()).unwrap();
    let edited = text.replace("\"a\"]", "\"ghost\"]");
    assert_ne!(edited, text);
    let mut f = fs.new_writable(&dir.join(&newest)).unwrap();
    f.append(edited.as_bytes()).unwrap();
    f.sync().unwrap();
    drop(f);
    // The loader finds no section for "a": the options stay as given (not universal, as the
    // section now named "ghost" says).
    let mut la = o.clone();
    assert!(shale::tools::load_cf_options_file(dir, "a", &mut la).unwrap());
    let mut lg = o.clone();
    shale::tools::load_cf_options_file(dir, "ghost", &mut lg).unwrap();
    assert_eq!(la.get_compaction_style(), shale::DBCompactionStyle::Level);
    assert_eq!(lg.get_compaction_style(), shale::DBCompactionStyle::Universal);
    // Opening is not affected by the file.
    let db = DB::open_cf(&o, "/db", ["a"]).unwrap();
    assert_eq!(db.cf_names(), vec!["default", "a"]);
    assert_eq!(get_cf(&db, "a", b"k").as_deref(), Some(&b"v"[..]));
}

/// `get_approximate_sizes(_cf)`: table bytes per key range, per family.
#[test]
fn approximate_sizes_follow_the_data_of_each_family() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open_cf(&o, "/db", ["big"]).unwrap();
    let big = db.cf_handle("big").unwrap();
    for i in 0..20_000u32 {
        db.put_cf(&big, i.to_be_bytes(), [b'v'; 100]).unwrap();
    }
    db.put(b"small", b"1").unwrap();
    db.flush_cf(&big).unwrap();
    db.flush().unwrap();
    let all = shale::Range::new(&[0u8; 4], &[0xffu8; 4]);
    let mid = 10_000u32.to_be_bytes();
    let half = shale::Range::new(&[0u8; 4], &mid);
    let none = shale::Range::new(&[0xfe; 4], &[0xff; 4]);
    let s = db.get_approximate_sizes_cf(&big, &[all, half, none]);
    assert!(s[0] > 2_000_000, "{s:?}");
    assert!(
        s[1] > s[0] / 3 && s[1] < s[0] * 2 / 3,
        "half the keys, about half the bytes: {s:?}"
    );
    assert_eq!(s[2], 0);
    let d = db.get_approximate_sizes(&[all]);
    assert!(
        d[0] > 0 && d[0] < 10_000,
        "the default family holds one small table: {d:?}"
    );
}
