//! The `rocksdb` crate's option types and calls: each call changes what it
//! names, observably, and the calls of the example `examples/rocksdb_style.rs` behave as it
//! shows (`the_calls_of_the_example_behave_as_it_shows`).

use crate::common;

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use common::*;
use shale::fs::testing::MemFs;
use shale::{
    BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, DBWithThreadMode, ErrorKind, IteratorMode,
    MergeOperands, MultiThreaded, Options, ReadOptions, SingleThreaded, WriteOptions, DB,
};

/// An item as the `rocksdb` crate's `DBIterator` yields it (after `?`).
type Item = (Box<[u8]>, Box<[u8]>);

fn options_file(dir: &Path) -> String {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("OPTIONS-"))
        .collect();
    names.sort();
    std::fs::read_to_string(dir.join(names.last().expect("an OPTIONS file"))).unwrap()
}

fn has_line(text: &str, line: &str) -> bool {
    text.lines().any(|l| l.trim() == line)
}

/// The example's concatenating merge (the `rocksdb` crate's closure form).
pub(crate) fn concat_merge(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(|e| e.to_vec()).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

/// What `examples/rocksdb_style.rs` does, step by step, with what each step must show: the
/// example is documentation (run by `cargo run --example`, built by `cargo test`), this is its
/// check.
#[test]
fn the_calls_of_the_example_behave_as_it_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = Cache::new_lru_cache(64 << 20);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(16 << 10);
    table.set_bloom_filter(10.0, false);
    table.set_block_cache(&cache);
    table.set_cache_index_and_filter_blocks(true);
    table.set_format_version(5);

    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.increase_parallelism(4);
    opts.optimize_level_style_compaction(64 << 20);
    opts.set_write_buffer_size(4 << 20);
    opts.set_max_write_buffer_number(3);
    opts.set_max_background_jobs(4);
    opts.set_max_open_files(1000);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_compaction_style(DBCompactionStyle::Level);
    opts.set_block_based_table_factory(&table);
    opts.set_merge_operator_associative("concat", concat_merge);

    let db: DBWithThreadMode<MultiThreaded> = DBWithThreadMode::<MultiThreaded>::open(&opts, dir.join("main")).unwrap();
    db.put(b"apple", b"red").unwrap();
    db.merge(b"fruits", b"apple,").unwrap();
    db.merge(b"fruits", b"pear").unwrap();
    assert_eq!(db.get(b"fruits").unwrap().as_deref(), Some(&b"apple,pear"[..]));

    let mut wo = WriteOptions::default();
    wo.set_sync(false);
    wo.disable_wal(false);
    wo.set_no_slowdown(true);
    db.put_opt(b"banana", b"yellow", &wo).unwrap();
    db.flush_wal(true).unwrap();

    // A snapshot reads the data as it was when it was taken, by get and by iterator.
    let snapshot = db.snapshot();
    db.put(b"apple", b"green").unwrap();
    assert_eq!(snapshot.get(b"apple").unwrap().as_deref(), Some(&b"red"[..]));
    assert_eq!(db.get(b"apple").unwrap().as_deref(), Some(&b"green"[..]));
    let seen: Vec<Item> = snapshot
        .iterator(IteratorMode::Start)
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<Item> = [
        (&b"apple"[..], &b"red"[..]),
        (b"banana", b"yellow"),
        (b"fruits", b"apple,pear"),
    ]
    .iter()
    .map(|(k, v)| (Box::from(*k), Box::from(*v)))
    .collect();
    assert_eq!(seen, want);

    // Bounded iteration, not filling the cache.
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound(b"b".to_vec());
    ro.fill_cache(false);
    ro.set_verify_checksums(true);
    let keys: Vec<Box<[u8]>> = db
        .iterator_opt(IteratorMode::Start, ro)
        .map(|item| item.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(keys, vec![Box::<[u8]>::from(&b"apple"[..])]);

    db.flush().unwrap();
    assert!(
        !db.key_may_exist(b"cherry"),
        "the bloom filter rules out a key never written"
    );
    assert!(db.key_may_exist(b"apple"));
    assert_eq!(db.get(b"apple").unwrap().as_deref(), Some(&b"green"[..]));
    assert_eq!(db.get(b"fruits").unwrap().as_deref(), Some(&b"apple,pear"[..]));
    assert!(cache.get_usage() > 0, "the shared block cache holds the table's blocks");

    // A second database with default options, sharing nothing but the process.
    let other = DB::open_default(dir.join("other")).unwrap();
    other.put(b"k", b"v").unwrap();
    assert_eq!(other.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(other.get(b"apple").unwrap(), None);

    // Errors carry the `rocksdb` crate's kinds.
    let mut missing = Options::default();
    missing.create_if_missing(false);
    let err = DB::open(&missing, dir.join("does-not-exist")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn setters_reach_the_options_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut table = BlockBasedOptions::default();
    table.set_block_size(8192);
    table.set_block_restart_interval(4);
    table.set_format_version(4);
    table.set_bloom_filter(7.0, true);
    table.set_cache_index_and_filter_blocks(true);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(1 << 20);
    o.set_max_write_buffer_number(5);
    o.set_max_background_jobs(3);
    o.set_max_open_files(500);
    o.set_compression_type(DBCompressionType::Zstd);
    o.set_num_levels(5);
    o.set_level_zero_stop_writes_trigger(40);
    o.set_target_file_size_base(4 << 20);
    o.set_block_based_table_factory(&table);
    let db = DB::open(&o, tmp.path()).unwrap();
    let text = options_file(tmp.path());
    for line in [
        "write_buffer_size=1048576",
        "max_write_buffer_number=5",
        "max_background_jobs=3",
        "max_open_files=500",
        "compression=kZSTD",
        "num_levels=5",
        "level0_stop_writes_trigger=40",
        "target_file_size_base=4194304",
        "block_size=8192",
        "block_restart_interval=4",
        "format_version=4",
        "cache_index_and_filter_blocks=true",
        "filter_policy=bloomfilter:7:false",
    ] {
        assert!(has_line(&text, line), "{line} missing from\n{text}");
    }
    drop(db);

    // increase_parallelism sets the background jobs as RocksDB's IncreaseParallelism does.
    let tmp = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.increase_parallelism(6);
    assert_eq!(o.get_max_background_jobs(), 6);
    drop(DB::open(&o, tmp.path()).unwrap());
    assert!(has_line(&options_file(tmp.path()), "max_background_jobs=6"));
}

#[test]
fn allow_mmap_writes_writes_tables_that_read_back_after_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_allow_mmap_writes(true);
    o.set_write_buffer_size(256 << 10);
    o.set_target_file_size_base(512 << 10);
    assert!(o.get_allow_mmap_writes());
    let value = |i: u32| format!("value-{i}-").repeat(1 + i as usize % 40);
    let db = DB::open(&o, tmp.path()).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key{i:06}"), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(has_line(&options_file(tmp.path()), "allow_mmap_writes=true"));
    drop(db);
    // Every table file ends at its footer: RocksDB's magic number in its last 8 bytes.
    for e in std::fs::read_dir(tmp.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sst") {
            let b = std::fs::read(&p).unwrap();
            assert_eq!(
                b[b.len() - 8..],
                0x88e2_41b7_85f4_cff7u64.to_le_bytes(),
                "{}",
                p.display()
            );
        }
    }
    let db = DB::open(&Options::default(), tmp.path()).unwrap();
    for i in (0..20_000u32).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(value(i).into_bytes()));
    }
    assert_eq!(db.iterator(IteratorMode::Start).count(), 20_000);
}

#[test]
fn optimize_level_style_compaction_sizes_as_rocksdb() {
    let mut o = Options::default();
    o.optimize_level_style_compaction(512 << 20);
    assert_eq!(o.get_write_buffer_size(), 128 << 20);
    assert_eq!(o.get_min_write_buffer_number_to_merge(), 2);
    assert_eq!(o.get_max_write_buffer_number(), 6);
    assert_eq!(o.get_level0_file_num_compaction_trigger(), 2);
    assert_eq!(o.get_target_file_size_base(), 64 << 20);
    assert_eq!(o.get_max_bytes_for_level_base(), 512 << 20);
    let per_level = o.get_compression_per_level();
    assert_eq!(per_level.len(), o.get_num_levels());
    assert_eq!(
        &per_level[..3],
        &[DBCompressionType::None, DBCompressionType::None, DBCompressionType::Lz4]
    );
    o.validate().unwrap();
}

#[test]
fn write_buffer_size_decides_when_memtables_flush() {
    let count_l0 = |wbs: usize| {
        let fs = MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs.clone()));
        o.set_disable_auto_compactions(true);
        o.set_write_buffer_size(wbs);
        let db = DB::open(&o, dir()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:06}"), [b'v'; 200]).unwrap();
        }
        db.wait_for_compact(&Default::default()).unwrap();
        db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap()
    };
    assert_eq!(count_l0(64 << 20), 0);
    assert!(count_l0(64 << 10) >= 3);
}

fn two_dbs_reading(share: Option<&Cache>) -> (DB, DB) {
    let fs = MemFs::new();
    let open = |name: &str| {
        let mut table = BlockBasedOptions::default();
        if let Some(c) = share {
            table.set_block_cache(c);
        }
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs.clone()));
        o.set_block_based_table_factory(&table);
        let db = DB::open(&o, Path::new(name)).unwrap();
        for i in 0..500u32 {
            db.put(format!("key{i:05}"), [b'x'; 100]).unwrap();
        }
        db.flush().unwrap();
        db
    };
    let (a, b) = (open("/a"), open("/b"));
    for i in 0..500u32 {
        assert!(a.get(format!("key{i:05}")).unwrap().is_some());
    }
    (a, b)
}

#[test]
fn a_shared_block_cache_is_one_cache() {
    let usage = |db: &DB| db.property_int_value("rocksdb.block-cache-usage").unwrap().unwrap();
    let cache = Cache::new_lru_cache(8 << 20);
    let (a, b) = two_dbs_reading(Some(&cache));
    let after_a = cache.get_usage();
    assert!(after_a > 0);
    // b has read nothing, but its cache is a's
    assert_eq!(usage(&a), after_a as u64);
    assert_eq!(usage(&b), after_a as u64);
    assert_eq!(
        b.property_int_value("rocksdb.block-cache-capacity").unwrap(),
        Some(8 << 20)
    );
    for i in 0..500u32 {
        assert_eq!(b.get(format!("key{i:05}")).unwrap().unwrap(), vec![b'x'; 100]);
    }
    // the same file numbers in both DBs: b's blocks are its own entries, not a's
    assert!(cache.get_usage() > after_a, "{} <= {after_a}", cache.get_usage());
    assert_eq!(usage(&a), usage(&b));

    // without sharing, each DB has its own cache
    let (a, b) = two_dbs_reading(None);
    assert!(usage(&a) > 1024);
    // b read nothing: its cache holds only the entry of its stats collector
    assert!(usage(&b) > 0 && usage(&b) < 1024, "{}", usage(&b));
}

#[test]
fn fill_cache_false_leaves_the_cache_alone() {
    let fs = MemFs::new();
    let mut o = small_opts(Arc::new(fs.clone()));
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, dir()).unwrap();
    for i in 0..300u32 {
        db.put(format!("key{i:05}"), [b'y'; 50]).unwrap();
    }
    db.flush().unwrap();
    let usage = || db.property_int_value("rocksdb.block-cache-usage").unwrap().unwrap();
    let mut ro = ReadOptions::default();
    ro.fill_cache(false);
    // the first scan opens the tables (their index and filter blocks are charged to the cache)
    assert_eq!(db.iterator_opt(IteratorMode::Start, ro.clone()).count(), 300);
    let before = usage();
    assert_eq!(db.iterator_opt(IteratorMode::Start, ro).count(), 300);
    assert_eq!(usage(), before);
    assert_eq!(db.iterator(IteratorMode::Start).count(), 300);
    assert!(usage() > before);
}

#[test]
fn iterate_upper_bound_stops_iteration() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(db_dir.path()).unwrap();
    for k in ["a", "b", "c", "d"] {
        db.put(k, k).unwrap();
    }
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound(b"c".to_vec());
    let items: Vec<Item> = db
        .iterator_opt(IteratorMode::Start, ro)
        .collect::<Result<_, _>>()
        .unwrap();
    let keys: Vec<&[u8]> = items.iter().map(|(k, _)| &k[..]).collect();
    assert_eq!(keys, vec![&b"a"[..], b"b"]);
}

#[test]
fn key_may_exist_uses_memtables_and_bloom_filters() {
    let fs = MemFs::new();
    let mut o = small_opts(Arc::new(fs.clone()));
    let mut table = BlockBasedOptions::default();
    table.set_bloom_filter(10.0, false);
    o.set_block_based_table_factory(&table);
    let db = DB::open(&o, dir()).unwrap();
    for i in (0..1000u32).step_by(2) {
        db.put(format!("key{i:05}"), b"v").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(
        db.property_int_value("rocksdb.num-entries-active-mem-table").unwrap(),
        Some(0)
    );
    // every written key may exist; odd keys lie inside the files' ranges, so only the filter
    // rules them out (a few false positives are allowed)
    for i in (0..1000u32).step_by(2) {
        assert!(db.key_may_exist(format!("key{i:05}")));
    }
    let maybe = (1..1000u32)
        .step_by(2)
        .filter(|i| db.key_may_exist(format!("key{i:05}")))
        .count();
    assert!(maybe < 50, "{maybe} of 500 missing keys may exist");
    // the memtable: written and deleted keys
    db.put(b"key00001", b"v").unwrap();
    assert!(db.key_may_exist(b"key00001"));
    db.delete(b"key00002").unwrap();
    assert!(!db.key_may_exist(b"key00002"));

    // without filters a key inside a file's range may always exist
    let fs = MemFs::new();
    let mut o = small_opts(Arc::new(fs.clone()));
    let mut table = BlockBasedOptions::default();
    table.set_bloom_filter(0.0, false);
    o.set_block_based_table_factory(&table);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"c", b"1").unwrap();
    db.flush().unwrap();
    assert!(db.key_may_exist(b"b"));
    assert!(!db.key_may_exist(b"d"), "outside every file's range");
}

#[test]
fn key_may_exist_cf_opt_reads_the_family_at_the_snapshot() {
    let fs = MemFs::new();
    let mut o = small_opts(Arc::new(fs.clone()));
    o.create_missing_column_families(true);
    let db = DB::open_cf(&o, dir(), ["default", "f"]).unwrap();
    let f = db.cf_handle("f").unwrap();
    db.put_cf(&f, b"k", b"v").unwrap();
    let snap = db.snapshot();
    db.delete_cf(&f, b"k").unwrap();
    let mut at_snap = ReadOptions::default();
    at_snap.set_snapshot(&snap);
    assert!(
        db.key_may_exist_cf_opt(&f, b"k", &at_snap),
        "the put, as of the snapshot"
    );
    assert!(
        !db.key_may_exist_cf_opt(&f, b"k", &ReadOptions::default()),
        "the tombstone"
    );
    db.put(b"only-in-default", b"v").unwrap();
    assert!(!db.key_may_exist_cf_opt(&f, b"only-in-default", &ReadOptions::default()));
}

#[test]
fn flush_wal_sync_makes_writes_survive_power_loss() {
    for flush_wal in [false, true] {
        let fs = MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs.clone()));
        let db = DB::open(&o, dir()).unwrap();
        db.put(b"k", b"v").unwrap();
        if flush_wal {
            db.flush_wal(true).unwrap();
        }
        // The power fails: background work stops first (a forgotten DB whose threads kept
        // running would go on writing into the "rebooted" file system), then the DB is
        // forgotten (the process died: no clean close) and unsynced bytes are lost.
        db.cancel_all_background_work(true);
        std::mem::forget(db);
        fs.power_loss();
        let db = DB::open(&o, dir()).unwrap();
        let got = db.get(b"k").unwrap();
        if flush_wal {
            assert_eq!(got.as_deref(), Some(&b"v"[..]));
        } else {
            assert_eq!(got, None, "an unsynced write survived a power loss without flush_wal");
        }
    }
}

#[test]
fn no_slowdown_fails_writes_during_a_stall() {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_level_zero_slowdown_writes_trigger(2);
    o.set_level_zero_stop_writes_trigger(1000);
    o.set_level_zero_file_num_compaction_trigger(1000);
    o.set_max_bytes_for_level_base(1 << 40);
    let db = DB::open(&o, dir()).unwrap();
    let mut wo = WriteOptions::new();
    wo.set_no_slowdown(true);
    db.put_opt(b"before", b"v", &wo).unwrap();
    for r in 0..2u64 {
        db.put(format!("k{r}"), "v").unwrap();
        db.flush().unwrap();
    }
    // writes are delayed now (two L0 files): a no_slowdown write fails at once
    let e = db.put_opt(b"during", b"v", &wo).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Incomplete, "{e}");
    assert_eq!(db.get(b"during").unwrap(), None);
    // an ordinary write waits and succeeds
    db.put(b"during", b"v").unwrap();
    // disable_wal as a setter
    let mut wo = WriteOptions::default();
    wo.disable_wal(true);
    db.put_opt(b"nowal", b"v", &wo).unwrap();
    assert_eq!(db.get(b"nowal").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn reads_through_a_snapshot() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(db_dir.path()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"1").unwrap();
    let snap = db.snapshot();
    db.put(b"a", b"2").unwrap();
    db.delete(b"b").unwrap();
    db.put(b"c", b"2").unwrap();
    db.flush().unwrap();
    assert_eq!(snap.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snap.get_pinned(b"b").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(snap.get(b"c").unwrap(), None);
    let got: Vec<_> = snap
        .multi_get([&b"a"[..], b"c"])
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got, vec![Some(b"1".to_vec()), None]);
    let items: Vec<Item> = snap.iterator(IteratorMode::Start).collect::<Result<_, _>>().unwrap();
    let expect: Vec<Item> = vec![
        (Box::from(&b"a"[..]), Box::from(&b"1"[..])),
        (Box::from(&b"b"[..]), Box::from(&b"1"[..])),
    ];
    assert_eq!(items, expect);
    let reverse: Vec<_> = snap.iterator(IteratorMode::End).map(|r| r.unwrap().0).collect();
    assert_eq!(reverse, vec![Box::from(&b"b"[..]), Box::from(&b"a"[..])]);
    // the current state differs
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_snapshot_of_a_closed_db_reads_nothing() {
    let db_dir = tempfile::tempdir().unwrap();
    let db = DB::open_default(db_dir.path()).unwrap();
    db.put(b"a", b"1").unwrap();
    let snap = db.snapshot();
    drop(db);
    assert_eq!(snap.get(b"a").unwrap_err().kind(), ErrorKind::InvalidArgument);
    let mut it = snap.iterator(IteratorMode::Start);
    assert!(it.next().unwrap().is_err());
    assert!(it.next().is_none());
}

#[test]
fn closure_comparator_orders_keys_and_is_checked_by_name() {
    let db_dir = tempfile::tempdir().unwrap();
    let reverse = |name: &str| {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_comparator(name, Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        o
    };
    {
        let db = DB::open(&reverse("test.reverse"), db_dir.path()).unwrap();
        for k in ["b", "a", "c"] {
            db.put(k, k).unwrap();
        }
        db.flush().unwrap();
        let keys: Vec<_> = db.iterator(IteratorMode::Start).map(|r| r.unwrap().0).collect();
        assert_eq!(
            keys,
            vec![Box::from(&b"c"[..]), Box::from(&b"b"[..]), Box::from(&b"a"[..])]
        );
    }
    let db = DB::open(&reverse("test.reverse"), db_dir.path()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"a"[..]));
    drop(db);
    let e = DB::open(&reverse("test.other"), db_dir.path()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("test.reverse"), "{e}");
    let _: fn(&[u8], &[u8]) -> Ordering = |a, b| a.cmp(b);
}

/// Under a comparator that finds different bytes equal (ASCII case folded), a lookup finds the
/// key written in another case in the memtable: no memtable filter may hash the key's bytes
/// (the memtable's point filter is for the bytewise comparator only). (Table files' bloom
/// filters hash bytes too, as RocksDB's: such a comparator needs `set_bloom_filter(0.0, ..)`.)
#[test]
fn a_comparator_that_equates_different_bytes_finds_them_in_the_memtable() {
    let db_dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_comparator(
        "test.CaseInsensitive",
        Box::new(|a: &[u8], b: &[u8]| a.to_ascii_lowercase().cmp(&b.to_ascii_lowercase())),
    );
    let db = DB::open(&o, db_dir.path()).unwrap();
    for i in 0..200 {
        db.put(format!("KEY{i}"), format!("v{i}")).unwrap();
    }
    for i in 0..200 {
        assert_eq!(
            db.get(format!("key{i}")).unwrap(),
            Some(format!("v{i}").into_bytes()),
            "key{i}"
        );
    }
    assert_eq!(db.get(b"Key7").unwrap().as_deref(), Some(&b"v7"[..]));
}

fn concat(_key: &[u8], existing: Option<&[u8]>, ops: &MergeOperands) -> Option<Vec<u8>> {
    let mut v = existing.map(|e| e.to_vec()).unwrap_or_default();
    assert_eq!(ops.len(), ops.iter().count());
    for op in ops {
        if !v.is_empty() {
            v.push(b'+');
        }
        v.extend_from_slice(op);
    }
    Some(v)
}

#[test]
fn associative_merge_closure_merges_through_flush_and_compaction() {
    let fs = MemFs::new();
    let mut o = small_opts(Arc::new(fs.clone()));
    o.set_merge_operator_associative("test.concat", concat);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"k", b"base").unwrap();
    db.merge(b"k", b"1").unwrap();
    db.flush().unwrap();
    db.merge(b"k", b"2").unwrap();
    db.merge(b"j", b"x").unwrap();
    db.merge(b"j", b"y").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"base+1+2"[..]));
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"base+1+2"[..]));
    assert_eq!(db.get(b"j").unwrap().as_deref(), Some(&b"x+y"[..]));
    drop(db);
    // a merge fn that fails makes the read fail
    let mut o = small_opts(Arc::new(fs.clone()));
    o.set_merge_operator(
        "test.concat",
        |_: &[u8], _: Option<&[u8]>, _: &MergeOperands| None,
        concat,
    );
    let db = DB::open(&o, dir()).unwrap();
    db.merge(b"k", b"3").unwrap();
    assert_eq!(db.get(b"k").unwrap_err().kind(), ErrorKind::Corruption);
}

#[test]
fn thread_mode_aliases_and_open_default() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db: DBWithThreadMode<MultiThreaded> =
        DBWithThreadMode::<MultiThreaded>::open(&o, tmp.path().join("m")).unwrap();
    let db = Arc::new(db);
    let t = {
        let db = db.clone();
        std::thread::spawn(move || db.put(b"from-thread", b"1").unwrap())
    };
    t.join().unwrap();
    assert_eq!(db.get(b"from-thread").unwrap().as_deref(), Some(&b"1"[..]));
    let single: DBWithThreadMode<SingleThreaded> = DB::open_default(tmp.path().join("s")).unwrap();
    single.put(b"k", b"v").unwrap();
    assert!(tmp.path().join("s").join("CURRENT").exists());
}

#[test]
fn error_kinds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(false);
    assert_eq!(
        DB::open(&o, tmp.path().join("none")).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let db = DB::open_default(tmp.path().join("db")).unwrap();
    // A DB open in this process: RocksDB's IOError naming the LOCK file, for open and destroy.
    for e in [
        DB::open_default(tmp.path().join("db")).unwrap_err(),
        DB::destroy(&Options::default(), tmp.path().join("db")).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::IOError);
        let m = e.into_string();
        assert!(m.starts_with("IO error: ") && m.contains("/db/LOCK:"), "{m}");
    }
    drop(db);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compaction_style(DBCompactionStyle::Universal);
    let mut uco = shale::UniversalCompactOptions::default();
    uco.set_min_merge_width(4);
    uco.set_max_merge_width(2);
    o.set_universal_compaction_options(&uco);
    let e = DB::open(&o, tmp.path().join("universal")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("max_merge_width"), "{e}");
    let fs = MemFs::new();
    let o = small_opts(Arc::new(fs.clone()));
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"k", b"v").unwrap();
    let e = db.write_opt(shale::WriteBatch::new(), &{
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        wo.disable_wal(true);
        wo
    });
    assert_eq!(e.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// With `manual_wal_flush`, WAL records stay in the process until `flush_wal` (the file on disk
/// does not grow); without it every write reaches the OS before it returns.
#[test]
fn manual_wal_flush_keeps_records_until_flush_wal() {
    for manual in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = shale::Options::default();
        o.create_if_missing(true);
        o.set_manual_wal_flush(manual);
        let db = shale::DB::open(&o, tmp.path()).unwrap();
        let before = wal_bytes_on_disk(tmp.path());
        db.put(b"k", b"v").unwrap();
        let after_put = wal_bytes_on_disk(tmp.path());
        if manual {
            assert_eq!(after_put, before, "manual_wal_flush: the record reached the file early");
            db.flush_wal(false).unwrap();
            assert!(wal_bytes_on_disk(tmp.path()) > before, "flush_wal wrote nothing");
        } else {
            assert!(after_put > before, "without manual_wal_flush a write reaches the OS");
        }
        drop(db);
        let db = shale::DB::open(&o, tmp.path()).unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}

/// A merge operator that gives up makes the read fail as RocksDB's does: a Corruption whose text
/// carries RocksDB's "Merge operator failed" and the operator's name; the error compares equal
/// to another of the same text and turns into that text with `into_string`.
#[test]
fn failing_merge_reads_as_rocksdb_merge_operator_failed() {
    fn refuse(_key: &[u8], _existing: Option<&[u8]>, _operands: &MergeOperands) -> Option<Vec<u8>> {
        None
    }
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_merge_operator_associative("refusing", refuse);
    let db = DB::open(&o, dir()).unwrap();
    db.put("k", "v").unwrap();
    db.merge("k", "w").unwrap();
    let e = db.get("k").unwrap_err();
    let again = db.get("k").unwrap_err();
    assert_eq!(e, again);
    assert!(e.is_corruption(), "{e}");
    let text = e.into_string();
    assert!(
        text.contains("Merge operator failed") && text.contains("refusing"),
        "{text}"
    );
}

/// Waits (up to 20 s) until `done` holds.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    done()
}

#[test]
fn flush_options_without_wait_hand_the_memtable_to_the_background() {
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    // one immutable memtable is not enough for a flush of its own accord
    o.set_max_write_buffer_number(6);
    o.set_min_write_buffer_number_to_merge(4);
    let db = DB::open_cf(&o, d.path(), ["c"]).unwrap();
    let c = db.cf_handle("c").unwrap();
    let l0 = |cf: &Arc<shale::ColumnFamily>| db.property_int_value_cf(cf, "rocksdb.num-files-at-level0").unwrap();
    let l0_default = || db.property_int_value("rocksdb.num-files-at-level0").unwrap();
    db.put("k", "v").unwrap();
    db.put_cf(&c, "k", "c").unwrap();
    let mut no_wait = shale::FlushOptions::default();
    no_wait.set_wait(false);
    db.flush_opt(&no_wait).unwrap();
    assert!(eventually(|| l0_default() == Some(1)), "the default family is flushed");
    assert_eq!(l0(&c), Some(0), "only the family asked for");
    db.flush_cfs_opt(&[&c], &no_wait).unwrap();
    assert!(eventually(|| l0(&c) == Some(1)));
    assert_eq!(db.get_cf(&c, "k").unwrap().as_deref(), Some(&b"c"[..]));
    // waiting (the default) returns with the file written
    db.put_cf(&c, "k2", "c2").unwrap();
    db.flush_cf_opt(&c, &shale::FlushOptions::new()).unwrap();
    assert_eq!(l0(&c), Some(2));
    // a family dropped: InvalidArgument, waiting or not
    db.drop_cf("c").unwrap();
    assert_eq!(
        db.flush_cf_opt(&c, &no_wait).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

/// `get_column_family_metadata(_cf)`: the size and count of each family's live table files,
/// following flushes and compactions.
#[test]
fn column_family_metadata_counts_each_familys_table_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let db = DB::open_cf(&o, dir.path(), ["other"]).unwrap();
    let empty = db.get_column_family_metadata();
    assert_eq!((empty.size, empty.file_count, empty.name.as_str()), (0, 0, "default"));
    for round in 0..3u32 {
        for i in 0..200u32 {
            db.put(format!("k{round}-{i:04}"), [b'x'; 64]).unwrap();
        }
        db.flush().unwrap();
    }
    let cf = db.cf_handle("other").unwrap();
    db.put_cf(&cf, "a", "b").unwrap();
    db.flush_cf(&cf).unwrap();
    let m = db.get_column_family_metadata();
    let live: Vec<_> = db.live_files().unwrap();
    let default_files: Vec<_> = live.iter().filter(|f| f.column_family_name == "default").collect();
    assert_eq!(m.file_count, 3);
    assert_eq!(m.size, default_files.iter().map(|f| f.size as u64).sum::<u64>());
    let other = db.get_column_family_metadata_cf(&cf);
    assert_eq!((other.file_count, other.name.as_str()), (1, "other"));
    assert!(other.size > 0 && other.size < m.size);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_column_family_metadata().file_count, 1);
}

/// `key_may_exist_cf_opt_value`: a key in the memtable comes with its value; a deleted key
/// does not exist; a key in a table file may exist (no value without reading it).
#[test]
fn key_may_exist_returns_the_value_a_memtable_holds() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, dir.path()).unwrap();
    let cf = db.cf_handle("default").unwrap();
    db.put("flushed", "v1").unwrap();
    db.flush().unwrap();
    db.put("fresh", "v2").unwrap();
    db.put("gone", "v3").unwrap();
    db.delete("gone").unwrap();
    let ro = ReadOptions::default();
    let (may, v) = db.key_may_exist_cf_opt_value(&cf, "fresh", &ro);
    assert!(may);
    assert_eq!(v.as_deref(), Some(&b"v2"[..]));
    assert_eq!(db.key_may_exist_cf_opt_value(&cf, "gone", &ro), (false, None));
    let (may, v) = db.key_may_exist_cf_opt_value(&cf, "flushed", &ro);
    assert!(may && v.is_none());
}

/// `Options::load_latest`: the families of the newest OPTIONS file with their options — a
/// family ordered by the uint64 comparator opens again only with it — and the cache given.
#[test]
fn load_latest_gives_the_families_and_their_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    let mut u64_opts = Options::default();
    u64_opts.set_custom_comparator(Arc::new(shale::comparator::Uint64Comparator));
    let db = DB::open_cf_descriptors(
        &o,
        dir.path(),
        vec![
            shale::ColumnFamilyDescriptor::new("cf0", Options::default()),
            shale::ColumnFamilyDescriptor::new("numbers", u64_opts),
        ],
    )
    .unwrap();
    let numbers = db.cf_handle("numbers").unwrap();
    db.put_cf(&numbers, 7u64.to_le_bytes(), "seven").unwrap();
    drop(numbers);
    drop(db);
    // Without the family's comparator the open is refused...
    let plain = vec![
        shale::ColumnFamilyDescriptor::new("cf0", Options::default()),
        shale::ColumnFamilyDescriptor::new("numbers", Options::default()),
    ];
    assert!(DB::open_cf_descriptors(&Options::default(), dir.path(), plain).is_err());
    // ...and with what load_latest gives, it opens.
    let cache = Cache::new_lru_cache(1 << 20);
    let (db_opts, cfs) = Options::load_latest(dir.path(), shale::Env::new().unwrap(), false, cache).unwrap();
    let names: Vec<&str> = cfs.iter().map(|c| c.name()).collect();
    assert_eq!(names, ["default", "cf0", "numbers"]);
    let db = DB::open_cf_descriptors(&db_opts, dir.path(), cfs).unwrap();
    let numbers = db.cf_handle("numbers").unwrap();
    assert_eq!(db.get_cf(&numbers, 7u64.to_le_bytes()).unwrap().unwrap(), b"seven");
    drop(numbers);
    drop(db);
    let empty = tempfile::tempdir().unwrap();
    let e = Options::load_latest(
        empty.path(),
        shale::Env::new().unwrap(),
        true,
        Cache::new_lru_cache(1024),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}
