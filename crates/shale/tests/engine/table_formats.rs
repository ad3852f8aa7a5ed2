//! PlainTable and CuckooTable inside the engine, through the public API: `Options::table_factory`
//! picks the format of every file flushes and compactions write, the table cache opens each file
//! by its magic number (so one DB can mix formats), and the operations a format cannot hold are
//! refused with NotSupported. Every test checks the DB against a model (a BTreeMap) after puts,
//! overwrites, deletes, flushes, reopens and compactions.
#![allow(clippy::field_reassign_with_default)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{CuckooTableOptions, IteratorMode, Options, PlainTableFactoryOptions, ReadOptions, DB};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const DIR: &str = "/db";
const PLAIN_MAGIC: u64 = 0x8242229663bf9564;
const LEGACY_PLAIN_MAGIC: u64 = 0x4f3418eb7a8f13b8;
const BLOCK_MAGIC: u64 = 0x88e241b785f4cff7;
const CUCKOO_MAGIC: u64 = 0x926789d0c5f17873;

fn dir() -> &'static Path {
    Path::new(DIR)
}

/// Small buffers over `fs` so that flushes and compactions happen often.
fn base(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(8 << 10);
    o.set_target_file_size_base(16 << 10);
    o.set_max_bytes_for_level_base(64 << 10);
    o.set_level_zero_file_num_compaction_trigger(2);
    o
}

/// Plain tables with 16-byte keys hashed by their 8-byte prefix.
fn plain_fixed(fs: &MemFs) -> Options {
    let mut o = base(fs);
    o.set_prefix_extractor(new_fixed_prefix_transform(8));
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    });
    o
}

/// Plain tables with variable-length keys and no extractor: total order (binary search).
fn plain_total(fs: &MemFs) -> Options {
    let mut o = base(fs);
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        hash_table_ratio: 0.0,
        ..Default::default()
    });
    o
}

fn cuckoo(fs: &MemFs) -> Options {
    let mut o = base(fs);
    o.set_cuckoo_table_factory(&CuckooTableOptions::default());
    o
}

/// 16-byte keys whose first 8 bytes (the prefix) repeat across 37 groups.
fn fixed_key(i: u32) -> Vec<u8> {
    format!("{:08}{:08}", i % 37, i).into_bytes()
}

/// Keys of 2 to 12 bytes.
fn var_key(i: u32) -> Vec<u8> {
    let mut k = format!("k{i}").into_bytes();
    k.extend(std::iter::repeat_n(b'x', (i % 5) as usize));
    k
}

/// 24-byte values (cuckoo tables need one length).
fn value(round: u32, i: u32) -> Vec<u8> {
    format!("v{round:03}-{i:019}").into_bytes()
}

fn scan(db: &DB) -> Model {
    db.iterator(IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn assert_model(db: &DB, m: &Model, ctx: &str) {
    let got = scan(db);
    if &got != m {
        let diff = got
            .iter()
            .zip(m.iter())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("got {a:x?} want {b:x?}"));
        panic!(
            "{ctx}: {} keys vs {} in the model; first difference {diff:?}",
            got.len(),
            m.len()
        );
    }
    for (k, v) in m.iter().step_by(3) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{ctx}: get {k:x?}");
    }
    let keys: Vec<&Vec<u8>> = m.keys().step_by(2).collect();
    for (k, r) in keys.iter().zip(db.multi_get(keys.iter())) {
        assert_eq!(r.unwrap().as_ref(), m.get(*k), "{ctx}: multi_get {k:x?}");
    }
}

/// The formats of the live table files, by magic number.
fn table_formats(fs: &MemFs) -> Vec<&'static str> {
    let mut v = Vec::new();
    for n in fs.list(dir()).unwrap() {
        if !n.ends_with(".sst") {
            continue;
        }
        let b = fs.read_all(&dir().join(&n)).unwrap();
        let magic = u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap());
        v.push(match magic {
            PLAIN_MAGIC | LEGACY_PLAIN_MAGIC => "plain",
            BLOCK_MAGIC => "block",
            CUCKOO_MAGIC => "cuckoo",
            m => panic!("{n}: magic {m:#x}"),
        });
    }
    v
}

fn level_files(db: &DB, level: usize) -> u64 {
    db.property_int_value(&format!("rocksdb.num-files-at-level{level}"))
        .unwrap()
        .unwrap()
}

/// Puts, overwrites and deletes over several flushes; reopen; manual compaction; more writes
/// that trigger automatic compactions; snapshots; bounded forward iteration and seeks.
fn exercise(fs: &MemFs, o: &Options, key: fn(u32) -> Vec<u8>, format: &str) {
    let mut m = Model::new();
    let db = DB::open(o, dir()).unwrap();
    for round in 0..3 {
        for i in 0..600 {
            db.put(key(i), value(round, i)).unwrap();
            m.insert(key(i), value(round, i));
        }
        for i in (round..600).step_by(11) {
            db.delete(key(i)).unwrap();
            m.remove(&key(i));
        }
        db.flush().unwrap();
        assert_model(&db, &m, &format!("{format}: round {round}"));
    }
    drop(db);
    let db = DB::open(o, dir()).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_model(&db, &m, &format!("{format}: reopened"));
    assert!(
        table_formats(fs).iter().all(|f| *f == format),
        "{:?}",
        table_formats(fs)
    );

    // A snapshot sees the data as it was, across a flush and a compaction... unless the
    // format keeps one version per key (cuckoo), where it is read before the flush only.
    let snap = db.snapshot();
    let at_snap = m.clone();
    // Few enough writes (~3 KiB) that the 8 KiB memtable does not fill: a flush in this window
    // would let an automatic compaction merge post-snapshot data into a cuckoo table, which
    // cannot hold two versions of a key (a background NotSupported error).
    for i in (0..600).step_by(16) {
        db.put(key(i), value(9, i)).unwrap();
        m.insert(key(i), value(9, i));
    }
    db.delete(key(1)).unwrap();
    m.remove(&key(1));
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let check_snap = |db: &DB, ctx: &str| {
        let got: Model = db
            .iterator_opt(IteratorMode::Start, ro.clone())
            .map(|r| r.map(|(k, v)| (k.to_vec(), v.to_vec())).unwrap())
            .collect();
        assert!(got == at_snap, "{format}: snapshot {ctx}");
        assert_eq!(db.get_opt(key(1), &ro).unwrap(), at_snap.get(&key(1)).cloned());
        assert_eq!(db.get_opt(key(4), &ro).unwrap(), at_snap.get(&key(4)).cloned());
    };
    check_snap(&db, "before flush");
    if format != "cuckoo" {
        db.flush().unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        check_snap(&db, "after flush and compaction");
    }
    // (the snapshot lives as long as any ReadOptions holding it)
    drop(ro);
    drop(snap);
    assert_eq!(db.property_int_value("rocksdb.num-snapshots").unwrap(), Some(0));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_model(&db, &m, &format!("{format}: compacted"));
    assert_eq!(level_files(&db, 0), 0, "{format}: compact_range empties L0");

    // Automatic compactions: enough flushes to pass the L0 trigger several times.
    for round in 10..16 {
        for i in (round..3000).step_by(3) {
            db.put(key(i), value(round, i)).unwrap();
            m.insert(key(i), value(round, i));
        }
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(
        level_files(&db, 0) < 2,
        "{format}: automatic compactions ran (L0 has {})",
        level_files(&db, 0)
    );
    assert_model(&db, &m, &format!("{format}: after automatic compactions"));
    assert!(table_formats(fs).iter().all(|f| *f == format));

    // Bounded forward iteration and seeks.
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    let (lo, hi) = (keys[keys.len() / 4].clone(), keys[keys.len() / 2].clone());
    let mut ro = ReadOptions::default();
    ro.set_iterate_lower_bound(lo.clone());
    ro.set_iterate_upper_bound(hi.clone());
    let want: Vec<(Vec<u8>, Vec<u8>)> = m
        .range(lo.clone()..hi.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert!(got == want, "{format}: bounded scan: {} vs {}", got.len(), want.len());
    let mut it = db.raw_iterator();
    for probe in [key(5), key(77), key(1234), key(2999), b"\x00".to_vec()] {
        it.seek(&probe);
        let expect = m.range(probe.clone()..).next();
        match expect {
            Some((k, v)) => {
                assert!(it.valid(), "{format}: seek {probe:x?}");
                assert_eq!((it.key().unwrap(), it.value().unwrap()), (&k[..], &v[..]));
            }
            None => assert!(!it.valid()),
        }
        it.status().unwrap();
    }
    it.seek(b"\xff\xff");
    assert!(!it.valid());
    it.status().unwrap();
    drop(it);
    drop(db);
    let db = DB::open_for_read_only(o, dir(), false).unwrap();
    assert_model(&db, &m, &format!("{format}: read-only"));
}

/// Backward iteration over plain tables is NotSupported (as RocksDB's PlainTable iterator).
fn assert_backward_not_supported(db: &DB) {
    let mut it = db.raw_iterator();
    it.seek_to_last();
    assert!(!it.valid());
    let e = it.status().expect_err("seek_to_last over plain tables");
    assert!(e.is_not_supported(), "{e}");
    let mut it = db.raw_iterator();
    it.seek_to_first();
    assert!(it.valid());
    it.prev();
    let e = it.status().expect_err("prev over plain tables");
    assert!(e.is_not_supported(), "{e}");
    let mut it = db.raw_iterator();
    it.seek_for_prev(b"zzzz");
    let e = it.status().expect_err("seek_for_prev over plain tables");
    assert!(e.is_not_supported(), "{e}");
}

#[test]
fn plain_fixed_keys_with_prefix_extractor() {
    let fs = MemFs::new();
    let o = plain_fixed(&fs);
    exercise(&fs, &o, fixed_key, "plain");
    let db = DB::open(&o, dir()).unwrap();
    assert_backward_not_supported(&db);
}

#[test]
fn plain_variable_keys_in_total_order() {
    let fs = MemFs::new();
    let o = plain_total(&fs);
    exercise(&fs, &o, var_key, "plain");
    let db = DB::open(&o, dir()).unwrap();
    assert_backward_not_supported(&db);
}

#[test]
fn cuckoo_fixed_key_and_value_lengths() {
    let fs = MemFs::new();
    let o = cuckoo(&fs);
    exercise(&fs, &o, fixed_key, "cuckoo");
    // cuckoo tables iterate both ways
    let db = DB::open(&o, dir()).unwrap();
    let fwd: Vec<Vec<u8>> = scan(&db).into_keys().collect();
    let back: Vec<Vec<u8>> = db.iterator(IteratorMode::End).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(back.into_iter().rev().collect::<Vec<_>>(), fwd);
}

#[test]
fn plain_table_holds_merge_operands() {
    let fs = MemFs::new();
    let mut o = plain_fixed(&fs);
    o.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(
        shale::merge_operator::StringAppendOperator::new(","),
    )));
    let db = DB::open(&o, dir()).unwrap();
    db.put(fixed_key(1), b"a").unwrap();
    db.flush().unwrap();
    db.merge(fixed_key(1), b"b").unwrap();
    db.merge(fixed_key(2), b"c").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(fixed_key(1)).unwrap().as_deref(), Some(&b"a,b"[..]));
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(fixed_key(1)).unwrap().as_deref(), Some(&b"a,b"[..]));
    assert_eq!(db.get(fixed_key(2)).unwrap().as_deref(), Some(&b"c"[..]));
    assert!(table_formats(&fs).iter().all(|f| *f == "plain"));
}

#[test]
fn refusals_are_not_supported() {
    for (name, mk) in [("plain", plain_fixed as fn(&MemFs) -> Options), ("cuckoo", cuckoo)] {
        let fs = MemFs::new();
        let mut o = mk(&fs);
        o.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(
            shale::merge_operator::StringAppendOperator::new(","),
        )));
        let db = DB::open(&o, dir()).unwrap();
        db.put(fixed_key(1), value(0, 1)).unwrap();
        let e = db.delete_range(fixed_key(0), fixed_key(5)).expect_err(name);
        assert!(e.is_not_supported(), "{name}: {e}");
        let mut batch = shale::WriteBatch::new();
        batch.put(fixed_key(3), value(0, 3));
        batch.delete_range(fixed_key(0), fixed_key(5));
        let e = db.write(batch).expect_err(name);
        assert!(e.is_not_supported(), "{name}: batch with a range deletion: {e}");
        assert_eq!(
            db.get(fixed_key(3)).unwrap(),
            None,
            "{name}: a refused batch writes nothing"
        );
        let merged = db.merge(fixed_key(1), b"x");
        if name == "cuckoo" {
            assert!(merged.expect_err(name).is_not_supported());
        } else {
            merged.unwrap();
        }
        assert!(db.get(fixed_key(1)).unwrap().is_some());
    }
}

/// A cuckoo flush that cannot be built (values of two lengths) fails with a clear error, and no
/// acknowledged write is lost: the WAL still holds it, and a block-based reopen reads it all.
#[test]
fn failed_cuckoo_flush_loses_nothing() {
    let fs = MemFs::new();
    let mut o = cuckoo(&fs);
    o.set_write_buffer_size(1 << 20);
    let db = DB::open(&o, dir()).unwrap();
    let mut m = Model::new();
    for i in 0..100 {
        db.put(fixed_key(i), value(0, i)).unwrap();
        m.insert(fixed_key(i), value(0, i));
    }
    db.flush().unwrap();
    for i in 100..200 {
        let v = if i == 150 { b"short".to_vec() } else { value(1, i) };
        db.put(fixed_key(i), &v).unwrap();
        m.insert(fixed_key(i), v);
    }
    let e = db.flush().expect_err("a cuckoo table with values of two lengths");
    let msg = e.to_string();
    assert!(msg.contains("length"), "the error says why: {msg}");
    // reads still see everything
    assert_model(&db, &m, "after the failed flush");
    drop(db);
    assert!(table_formats(&fs).iter().all(|f| *f == "cuckoo"));
    let mut o = base(&fs);
    o.create_if_missing(false);
    let db = DB::open(&o, dir()).unwrap();
    assert_model(&db, &m, "reopened block-based");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_model(&db, &m, "compacted into block-based");
    drop(db);
    // (a read-write open removes every table file no version references)
    drop(DB::open(&o, dir()).unwrap());
    assert!(table_formats(&fs).iter().all(|f| *f == "block"));
}

/// One DB with files of all three formats: written with one factory, reopened with another,
/// written again. Every key stays readable with any factory, and a compaction rewrites
/// everything into the current factory's format.
#[test]
fn one_db_mixes_all_three_formats() {
    let fs = MemFs::new();
    // every factory gets the extractor the plain files were built with
    let with_prefix = |mut o: Options| {
        o.set_prefix_extractor(new_fixed_prefix_transform(8));
        o.set_disable_auto_compactions(true);
        o
    };
    let factories: [(&str, Options); 3] = [
        ("block", with_prefix(base(&fs))),
        ("plain", with_prefix(plain_fixed(&fs))),
        ("cuckoo", with_prefix(cuckoo(&fs))),
    ];
    let mut m = Model::new();
    for (round, (_, o)) in factories.iter().enumerate() {
        let db = DB::open(o, dir()).unwrap();
        let r = round as u32;
        for i in (r * 200)..(r * 200 + 400) {
            db.put(fixed_key(i), value(r, i)).unwrap();
            m.insert(fixed_key(i), value(r, i));
        }
        db.delete(fixed_key(r * 200 + 7)).unwrap();
        m.remove(&fixed_key(r * 200 + 7));
        db.flush().unwrap();
        drop(db);
    }
    let mut seen = table_formats(&fs);
    seen.sort();
    seen.dedup();
    assert_eq!(seen, vec!["block", "cuckoo", "plain"]);
    for (name, o) in &factories {
        let db = DB::open_for_read_only(o, dir(), false).unwrap();
        assert_model(&db, &m, &format!("mixed, opened with {name}"));
    }
    for (name, o) in &factories {
        let db = DB::open(o, dir()).unwrap();
        // new versions of the smallest and largest keys: the flushed file overlaps every
        // other one, so the compaction takes them all (as in RocksDB, compact_range leaves a
        // bottommost file alone when nothing overlaps it)
        let ends = [m.keys().next().unwrap().clone(), m.keys().last().unwrap().clone()];
        for k in ends {
            db.put(&k, value(7, 5000)).unwrap();
            m.insert(k, value(7, 5000));
        }
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_model(&db, &m, &format!("compacted with {name}"));
        drop(db);
        drop(DB::open(o, dir()).unwrap());
        assert!(
            table_formats(&fs).iter().all(|f| f == name),
            "{name}: {:?}",
            table_formats(&fs)
        );
    }
}

/// On the POSIX file system with `allow_mmap_reads`: plain and cuckoo tables are read through
/// mappings, across reopen and compaction.
#[test]
fn posix_with_mmap_reads() {
    for (name, fixed) in [("plain", true), ("cuckoo", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(16 << 10);
        o.set_allow_mmap_reads(true);
        if fixed {
            o.set_prefix_extractor(new_fixed_prefix_transform(8));
            o.set_plain_table_factory(&PlainTableFactoryOptions {
                user_key_len: 16,
                ..Default::default()
            });
        } else {
            o.set_cuckoo_table_factory(&CuckooTableOptions::default());
        }
        let mut m = Model::new();
        let db = DB::open(&o, tmp.path()).unwrap();
        for round in 0..2 {
            for i in 0..1000 {
                db.put(fixed_key(i), value(round, i)).unwrap();
                m.insert(fixed_key(i), value(round, i));
            }
            db.flush().unwrap();
        }
        assert_model(&db, &m, name);
        drop(db);
        let db = DB::open(&o, tmp.path()).unwrap();
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_model(&db, &m, &format!("{name}: reopened and compacted"));
        assert!(std::fs::read_dir(tmp.path()).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("OPTIONS-")));
    }
}

/// A cuckoo table holds one entry per user key: a flush that must keep an older version for a
/// live snapshot fails (NotSupported, as RocksDB's cuckoo builder), acknowledged writes stay
/// readable, and a reopen (no snapshots) flushes them into cuckoo tables after all.
#[test]
fn cuckoo_flush_under_a_snapshot_fails_cleanly() {
    let fs = MemFs::new();
    let mut o = cuckoo(&fs);
    o.set_write_buffer_size(1 << 20);
    let db = DB::open(&o, dir()).unwrap();
    let mut m = Model::new();
    for i in 0..50 {
        db.put(fixed_key(i), value(0, i)).unwrap();
        m.insert(fixed_key(i), value(0, i));
    }
    let snap = db.snapshot();
    for i in 0..50 {
        db.put(fixed_key(i), value(1, i)).unwrap();
        m.insert(fixed_key(i), value(1, i));
    }
    let e = db.flush().expect_err("two versions of a key in one cuckoo table");
    assert!(e.to_string().contains("one entry per user key"), "{e}");
    assert_model(&db, &m, "after the failed flush");
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt(fixed_key(3), &ro).unwrap(), Some(value(0, 3)));
    drop(ro);
    drop(snap);
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    assert_model(&db, &m, "reopened");
    db.flush().unwrap();
    assert!(!table_formats(&fs).is_empty());
    assert!(table_formats(&fs).iter().all(|f| *f == "cuckoo"));
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    assert_model(&db, &m, "reopened after the flush");
}

/// Every read-write open writes a new OPTIONS file naming the factory, through a temp file: a
/// failed write fails the open and leaves the finished files alone; the next open cleans up
/// and keeps the newest two.
#[test]
fn options_file_per_open_written_through_a_temp_file() {
    let mem = MemFs::new();
    let ffs = shale::fs::testing::FaultFs::new(Arc::new(mem.clone()));
    let mut o = cuckoo(&mem);
    o.set_env(Arc::new(ffs.clone()));
    let options_files = || -> Vec<String> {
        let mut v: Vec<String> = mem
            .list(dir())
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("OPTIONS-"))
            .collect();
        v.sort();
        v
    };
    drop(DB::open(&o, dir()).unwrap());
    drop(DB::open(&o, dir()).unwrap());
    let before = options_files();
    assert_eq!(before.len(), 2, "{before:?}");
    let text = String::from_utf8(mem.read_all(&dir().join(&before[1])).unwrap()).unwrap();
    assert!(text.contains("  table_factory=CuckooTable\n"), "{text}");
    assert!(text.contains("[TableOptions/CuckooTable \"default\"]"), "{text}");

    ffs.inject(shale::fs::testing::FaultKind::SyncEio, Some("OPTIONS"));
    let e = DB::open(&o, dir()).expect_err("the OPTIONS file cannot be synced");
    assert!(e.is_io(), "{e}");
    ffs.clear();
    let after_fail = options_files();
    assert!(after_fail.iter().any(|n| n.ends_with(".dbtmp")), "{after_fail:?}");
    for n in &before {
        assert!(after_fail.contains(n), "{n} kept after the failed write");
    }
    let db = DB::open(&o, dir()).unwrap();
    db.put(fixed_key(1), value(0, 1)).unwrap();
    let now = options_files();
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(now.iter().all(|n| !n.ends_with(".dbtmp")));
    assert!(now[1] > before[1], "{now:?} newer than {before:?}");
}
