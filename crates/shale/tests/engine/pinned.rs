//! `DB::get_pinned` (and `multi_get_pinned`): the pinned value equals `get` wherever the value lives (mutable and
//! immutable memtables, L0, deeper levels; block-based, plain and cuckoo files; snapshots,
//! deletions, range tombstones, merge operands), values are pinned rather than copied where
//! they have a stable home, and a pinned value stays readable after its memtable is flushed,
//! its file is compacted away and deleted, and the DB is dropped.
#![allow(clippy::field_reassign_with_default)]

use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::fs::PosixFs;
use shale::merge_operator::Associative;
use shale::merge_operator::StringAppendOperator;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{CuckooTableOptions, DBPinnableSlice, Options, PlainTableFactoryOptions, ReadOptions, DB};

const DIR: &str = "/db";

fn prop(db: &DB, name: &str) -> u64 {
    db.property_int_value(name).unwrap().unwrap()
}

/// Nothing is flushed or compacted unless the test asks.
fn base(env: Arc<dyn FileSystem>) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(env);
    o.set_disable_auto_compactions(true);
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}-padding").into_bytes() // 16 bytes, distinct 8-byte prefixes
}

/// 32 bytes (cuckoo tables need values of one length).
fn val(i: u32, gen: u32) -> Vec<u8> {
    format!("value-{i:05}-gen{gen:02}-{:x>14}", i % 7).into_bytes()
}

/// `get_pinned_opt` agrees with `get_opt` for every key in `0..n` (and a few absent keys);
/// returns how many found values were pinned.
fn check_all(db: &DB, ro: &ReadOptions, n: u32) -> usize {
    let mut pinned = 0;
    for i in 0..n + 3 {
        let k = key(i);
        let want = db.get_opt(&k, ro).unwrap();
        let got = db.get_pinned_opt(&k, ro).unwrap();
        assert_eq!(got.as_deref(), want.as_deref(), "key {i}");
        pinned += got.is_some_and(|p| p.is_pinned()) as usize;
    }
    pinned
}

/// `multi_get_pinned_opt` agrees with `multi_get_opt` over the same keys; returns how many
/// found values were pinned.
fn check_multi(db: &DB, ro: &ReadOptions, n: u32) -> usize {
    let keys: Vec<Vec<u8>> = (0..n + 3).map(key).collect();
    let want = db.multi_get_opt(&keys, ro);
    let got = db.multi_get_pinned_opt(&keys, ro);
    assert_eq!(got.len(), want.len());
    let mut pinned = 0;
    for (i, (g, w)) in got.into_iter().zip(want).enumerate() {
        let (g, w) = (g.unwrap(), w.unwrap());
        assert_eq!(g.as_deref(), w.as_deref(), "key {i}");
        pinned += g.is_some_and(|p| p.is_pinned()) as usize;
    }
    pinned
}

fn pinned(db: &DB, k: &[u8]) -> DBPinnableSlice {
    db.get_pinned(k).unwrap().expect("key is present")
}

#[test]
fn pinned_equals_get_in_every_source_of_a_block_based_db() {
    let fs = MemFs::new();
    let mut o = base(Arc::new(fs.clone()));
    o.set_custom_merge_operator(Arc::new(Associative(StringAppendOperator::new(","))));
    o.set_write_buffer_size(64 << 10);
    o.set_max_write_buffer_number(4);
    o.set_min_write_buffer_number_to_merge(3); // switched memtables wait as immutable ones
    let db = DB::open(&o, DIR).unwrap();
    let n = 200;
    // Deepest level: generation 0 of every key, compacted to the bottom.
    for i in 0..n {
        db.put(key(i), val(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(prop(&db, "rocksdb.num-files-at-level0"), 0);
    let old = db.snapshot();
    // L0: overwrites, deletions, merge operands and a range tombstone over older data.
    for i in (0..n).step_by(3) {
        db.put(key(i), val(i, 1)).unwrap();
    }
    for i in (1..n).step_by(7) {
        db.delete(key(i)).unwrap();
    }
    for i in (2..n).step_by(5) {
        db.merge(key(i), b"m1").unwrap();
    }
    db.delete_range(key(100), key(120)).unwrap();
    db.flush().unwrap();
    assert_eq!(prop(&db, "rocksdb.num-files-at-level0"), 1);
    // An immutable memtable, then the mutable one.
    for i in (0..n).step_by(4) {
        db.put(key(i), val(i, 2)).unwrap();
    }
    db.merge(key(7), b"m2").unwrap();
    db.merge(key(9), b"m2").unwrap();
    let mid = db.snapshot();
    db.delete_range(key(150), key(155)).unwrap();
    let ro = ReadOptions::default();
    assert!(check_all(&db, &ro, n) > 0);
    // Switch the memtable without flushing it (one immutable memtable is below the merge
    // threshold of 3).
    db.put(b"zz-switch", vec![b's'; 70 << 10]).unwrap();
    db.put(b"zz-after", b"after").unwrap();
    assert!(prop(&db, "rocksdb.num-immutable-mem-table") >= 1);
    for i in (0..n).step_by(11) {
        db.put(key(i), val(i, 3)).unwrap();
    }
    for ro in [ReadOptions::default(), snap_ro(&old), snap_ro(&mid)] {
        let pinned = check_all(&db, &ro, n);
        assert!(pinned > 0);
        assert_eq!(check_multi(&db, &ro, n), pinned);
    }
    // Values of each source, and what a pinned read of them is.
    assert!(pinned(&db, &key(11)).is_pinned(), "mutable memtable");
    assert!(pinned(&db, &key(4)).is_pinned(), "immutable memtable");
    assert!(pinned(&db, &key(3)).is_pinned(), "L0 file through the block cache");
    assert!(pinned(&db, &key(5)).is_pinned(), "bottom level through the block cache");
    let merged = pinned(&db, &key(2));
    assert_eq!(
        &*merged,
        format!("{},m1", String::from_utf8(val(2, 0)).unwrap()).as_bytes()
    );
    assert!(!merged.is_pinned(), "a merge result has no home but its own buffer");
    assert_eq!(db.get_pinned(key(1)).unwrap(), None, "deleted");
    assert_eq!(db.get_pinned(key(101)).unwrap(), None, "under a range tombstone");
    assert_eq!(
        db.get_pinned(key(152)).unwrap(),
        None,
        "under a memtable range tombstone"
    );
    assert_eq!(&*pinned(&db, b"zz-after"), b"after");
}

fn snap_ro(s: &shale::Snapshot) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_snapshot(s);
    ro
}

#[test]
fn reads_that_bypass_the_block_cache_are_copied() {
    let fs = MemFs::new();
    let db = DB::open(&base(Arc::new(fs.clone())), DIR).unwrap();
    db.put(key(1), val(1, 0)).unwrap();
    db.flush().unwrap();
    let mut ro = ReadOptions::default();
    ro.fill_cache(false);
    let p = db.get_pinned_opt(key(1), &ro).unwrap().unwrap();
    assert_eq!(&*p, &val(1, 0)[..]);
    assert!(!p.is_pinned(), "an uncached block is not kept alive for one value");
    // Once the block is cached, the value points into it.
    let p = pinned(&db, &key(1));
    assert!(p.is_pinned());
    assert_eq!(&*p, &val(1, 0)[..]);

    let mut o = base(Arc::new(MemFs::new()));
    {
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(0);
        o.set_block_based_table_factory(&bbo);
    }
    let db = DB::open(&o, DIR).unwrap();
    db.put(key(1), val(1, 0)).unwrap();
    db.flush().unwrap();
    let p = pinned(&db, &key(1));
    assert!(!p.is_pinned(), "no block cache: copied");
    assert_eq!(&*p, &val(1, 0)[..]);
}

fn plain_opts(env: Arc<dyn FileSystem>, mmap: bool) -> Options {
    let mut o = base(env);
    o.set_allow_mmap_reads(mmap);
    o.set_prefix_extractor(new_fixed_prefix_transform(8));
    o.set_plain_table_factory(&PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    });
    o
}

fn cuckoo_opts(env: Arc<dyn FileSystem>) -> Options {
    let mut o = base(env);
    o.set_cuckoo_table_factory(&CuckooTableOptions::default());
    o
}

/// Files on two levels plus a memtable, checked against `get` and each file value pinned.
fn check_format(o: &Options) {
    let db = DB::open(o, DIR).unwrap();
    let n = 300;
    for i in 0..n {
        db.put(key(i), val(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let snap = db.snapshot();
    for i in (0..n).step_by(2) {
        db.put(key(i), val(i, 1)).unwrap();
    }
    for i in (1..n).step_by(9) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    for i in (0..n).step_by(5) {
        db.put(key(i), val(i, 2)).unwrap();
    }
    let ro = ReadOptions::default();
    let found = check_all(&db, &ro, n);
    let present = (0..n).filter(|i| i % 9 != 1 || i % 5 == 0).count();
    assert_eq!(found, present, "every value (memtable or file) is pinned");
    assert_eq!(check_all(&db, &snap_ro(&snap), n), n as usize);
    // Batched: cuckoo files answer several keys in one call, plain files key by key.
    assert_eq!(check_multi(&db, &ro, n), present);
    assert_eq!(check_multi(&db, &snap_ro(&snap), n), n as usize);
    assert_eq!(db.get_pinned(key(19)).unwrap(), None);
    assert_eq!(&*pinned(&db, &key(10)), &val(10, 2)[..], "put again after its deletion");
    assert_eq!(&*pinned(&db, &key(3)), &val(3, 0)[..], "bottom level");
    assert_eq!(&*pinned(&db, &key(4)), &val(4, 1)[..], "L0");
}

#[test]
fn pinned_equals_get_with_plain_tables_mapped_and_copied() {
    check_format(&plain_opts(Arc::new(MemFs::new()), true));
    check_format(&plain_opts(Arc::new(MemFs::new()), false));
}

#[test]
fn pinned_equals_get_with_cuckoo_tables() {
    check_format(&cuckoo_opts(Arc::new(MemFs::new())));
}

fn sst_files(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|f| f.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

/// A value pinned in a file survives the compaction that deletes the file, and a value pinned
/// in a memtable survives its flush; both survive the DB's drop.
fn survives(o: Options, dir: &Path) {
    let fs = o.get_env().clone();
    let db = DB::open(&o, dir).unwrap();
    for i in 0..100 {
        db.put(key(i), val(i, 0)).unwrap();
    }
    db.flush().unwrap();
    let before = sst_files(&*fs, dir);
    assert_eq!(before.len(), 1);
    let in_file = pinned(&db, &key(42));
    assert!(in_file.is_pinned());
    db.put(key(7), val(7, 9)).unwrap();
    let in_mem = pinned(&db, &key(7));
    assert!(in_mem.is_pinned());
    // Overwrite everything and compact: the first file is obsolete and deleted.
    for i in 0..100 {
        db.put(key(i), val(i, 1)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let after = sst_files(&*fs, dir);
    assert!(
        !after.contains(&before[0]),
        "{} still listed after the compaction: {after:?}",
        before[0]
    );
    assert_eq!(&*in_file, &val(42, 0)[..], "pinned value of a deleted file");
    assert_eq!(&*in_mem, &val(7, 9)[..], "pinned value of a flushed memtable");
    assert_eq!(db.get(key(42)).unwrap().unwrap(), val(42, 1));
    let newer = pinned(&db, &key(42));
    drop(db);
    // Read on another thread after the DB is gone.
    let t = std::thread::spawn(move || {
        assert_eq!(&*in_file, &val(42, 0)[..]);
        assert_eq!(&*in_mem, &val(7, 9)[..]);
        assert_eq!(&*newer, &val(42, 1)[..]);
        drop(in_file);
        drop(in_mem);
        drop(newer);
    });
    t.join().unwrap();
    // Dropping the pins frees nothing on disk that was still listed: the directory holds
    // exactly the compaction's output.
    assert_eq!(sst_files(&*fs, dir), after);
}

#[test]
fn pinned_values_survive_flush_compaction_and_drop_on_memfs() {
    survives(base(Arc::new(MemFs::new())), Path::new(DIR));
    survives(plain_opts(Arc::new(MemFs::new()), true), Path::new(DIR));
    survives(cuckoo_opts(Arc::new(MemFs::new())), Path::new(DIR));
}

#[test]
fn pinned_values_survive_flush_compaction_and_drop_on_posix() {
    let tmp = tempfile::tempdir().unwrap();
    let posix: Arc<dyn FileSystem> = Arc::new(PosixFs);
    // Block-based (values in cached blocks), and plain tables read from a real mapping of a
    // file that is unlinked while the value is held.
    survives(base(posix.clone()), &tmp.path().join("block"));
    survives(plain_opts(posix.clone(), true), &tmp.path().join("plain"));
    survives(cuckoo_opts(posix), &tmp.path().join("cuckoo"));
}
