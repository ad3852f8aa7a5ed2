//! `perf::MemoryUsageBuilder` and `get_memory_usage_stats`: memtable, table-reader and cache
//! bytes summed over DBs (plain and transaction DBs) and caches, each measured when built.

use shale::perf::{get_memory_usage_stats, MemoryUsageBuilder};
use shale::{BlockBasedOptions, Cache, OptimisticTransactionDB, Options, TransactionDB, TransactionDBOptions, DB};

fn opts_with(cache: &Cache) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    o.set_block_based_table_factory(&b);
    o
}

fn fill(put: impl Fn(&[u8], &[u8]), n: usize) {
    for i in 0..n {
        put(format!("key{i:06}").as_bytes(), &[b'v'; 100]);
    }
}

#[test]
fn memtables_grow_with_writes_and_flush_moves_them_to_tables_and_cache() {
    let d = tempfile::tempdir().unwrap();
    let cache = Cache::new_lru_cache(8 << 20);
    let db = DB::open(&opts_with(&cache), d.path()).unwrap();
    let measure = || {
        let mut b = MemoryUsageBuilder::new().unwrap();
        b.add_db(&db);
        b.add_cache(&cache);
        b.build().unwrap()
    };
    let empty = measure();
    assert_eq!(empty.approximate_mem_table_readers_total(), 0, "no table yet");
    // Nothing read yet: the cache holds only the entry of its stats collector, which the DB's
    // family registered at open (as RocksDB's), charged its overhead.
    let collector_only = empty.approximate_cache_total();
    assert!(collector_only > 0 && collector_only < 1024, "{collector_only}");

    fill(|k, v| db.put(k, v).unwrap(), 2000);
    let written = measure();
    assert!(
        written.approximate_mem_table_unflushed() > empty.approximate_mem_table_unflushed() + 200_000,
        "2000 entries of 100 bytes: {} then {}",
        empty.approximate_mem_table_unflushed(),
        written.approximate_mem_table_unflushed()
    );
    assert!(written.approximate_mem_table_total() >= written.approximate_mem_table_unflushed());
    assert_eq!(
        written.approximate_mem_table_unflushed(),
        db.property_int_value("rocksdb.cur-size-all-mem-tables")
            .unwrap()
            .unwrap()
    );

    db.flush().unwrap();
    for i in (0..2000).step_by(7) {
        assert!(db.get(format!("key{i:06}")).unwrap().is_some());
    }
    let flushed = measure();
    assert!(
        flushed.approximate_mem_table_unflushed() < written.approximate_mem_table_unflushed() / 10,
        "the flush empties the memtable: {} then {}",
        written.approximate_mem_table_unflushed(),
        flushed.approximate_mem_table_unflushed()
    );
    assert!(
        flushed.approximate_cache_total() > 0,
        "reads put data blocks in the cache"
    );
    assert_eq!(flushed.approximate_cache_total(), cache.get_usage() as u64);
    assert!(
        flushed.approximate_mem_table_readers_total() > 0,
        "the open table holds its index"
    );
    // A measurement is a snapshot: the earlier ones did not change.
    assert_eq!(empty.approximate_cache_total(), collector_only);
}

/// `rocksdb.block-cache-entry-stats`: the cache's entries by role. The collector is one
/// entry per cache (pinned while a family uses the cache), however many DBs share it.
#[test]
fn block_cache_entry_stats_count_the_entries_by_role() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let cache = Cache::new_lru_cache(8 << 20);
    let db1 = DB::open(&opts_with(&cache), d1.path()).unwrap();
    let stats = |db: &DB| db.property_value("rocksdb.block-cache-entry-stats").unwrap().unwrap();
    let s = stats(&db1);
    assert!(s.starts_with("Block cache "), "{s}");
    assert!(s.contains(" capacity: 8.00 MB "), "{s}");
    assert!(s.contains("Misc(1,0.00 KB,0%)"), "{s}");
    assert!(!s.contains("DataBlock"), "nothing read yet: {s}");
    let pinned_with_a_db = cache.get_pinned_usage();
    assert!(
        pinned_with_a_db > 0,
        "the collector's entry is held while the DB is open"
    );

    fill(|k, v| db1.put(k, v).unwrap(), 2000);
    db1.flush().unwrap();
    for i in (0..2000).step_by(50) {
        assert!(db1.get(format!("key{i:06}")).unwrap().is_some());
    }
    let db2 = DB::open(&opts_with(&cache), d2.path()).unwrap();
    let s = stats(&db2);
    assert!(s.contains("Misc(1,"), "one collector per cache: {s}");
    let data = s
        .split(" DataBlock(")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no data blocks counted: {s}"));
    assert!(data >= 2, "{s}");
    assert!(s.contains(" collections: 2 "), "each call is a collection: {s}");
    // Another table format reads through no block cache: no stats.
    let d3 = tempfile::tempdir().unwrap();
    let mut plain = Options::default();
    plain.create_if_missing(true);
    plain.set_plain_table_factory(&shale::PlainTableFactoryOptions {
        user_key_len: 0,
        bloom_bits_per_key: 10,
        hash_table_ratio: 0.75,
        index_sparseness: 16,
        huge_page_tlb_size: 0,
        encoding_type: shale::KeyEncodingType::Plain,
        full_scan_mode: false,
        store_index_in_file: false,
    });
    plain.set_allow_mmap_reads(true);
    let db3 = DB::open(&plain, d3.path()).unwrap();
    assert_eq!(db3.property_value("rocksdb.block-cache-entry-stats").unwrap(), None);
    drop((db1, db2, db3));
    assert_eq!(
        cache.get_pinned_usage(),
        0,
        "the collector is released with the last DB"
    );
}

#[test]
fn caches_are_counted_once_and_the_function_sums_the_same() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let cache = Cache::new_lru_cache(8 << 20);
    let db1 = DB::open(&opts_with(&cache), d1.path()).unwrap();
    let db2 = DB::open(&opts_with(&cache), d2.path()).unwrap();
    fill(|k, v| db1.put(k, v).unwrap(), 500);
    fill(|k, v| db2.put(k, v).unwrap(), 1500);
    db1.flush().unwrap();
    assert!(db1.get(b"key000001").unwrap().is_some());
    let usage = cache.get_usage() as u64;
    assert!(usage > 0);

    let both = get_memory_usage_stats(Some(&[&db1, &db2]), Some(&[&cache, &cache.clone()])).unwrap();
    assert_eq!(both.cache_total, usage, "one cache added twice is counted once");
    let one = get_memory_usage_stats(Some(&[&db2]), None).unwrap();
    assert_eq!(one.cache_total, 0, "a DB's cache counts only when added");
    assert!(
        both.mem_table_unflushed > one.mem_table_unflushed,
        "db1 has a fresh memtable too"
    );
    assert!(one.mem_table_unflushed > 150_000);
    assert!(both.mem_table_readers_total > 0 && one.mem_table_readers_total == 0);
    let none = get_memory_usage_stats(None, None).unwrap();
    assert_eq!(
        (
            none.mem_table_total,
            none.mem_table_unflushed,
            none.mem_table_readers_total,
            none.cache_total
        ),
        (0, 0, 0, 0)
    );
}

#[test]
fn transaction_dbs_are_measured_through_their_db() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let cache = Cache::new_lru_cache(1 << 20);
    let tdb: TransactionDB =
        TransactionDB::open(&opts_with(&cache), &TransactionDBOptions::default(), d1.path()).unwrap();
    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts_with(&cache), d2.path()).unwrap();
    let measure = || {
        let mut b = MemoryUsageBuilder::new().unwrap();
        b.add_tx_db(&tdb);
        b.add_db(&odb);
        b.build().unwrap()
    };
    let before = measure();
    fill(|k, v| tdb.put(k, v).unwrap(), 1000);
    let after_tdb = measure();
    fill(|k, v| odb.put(k, v).unwrap(), 1000);
    let after_both = measure();
    assert!(after_tdb.approximate_mem_table_unflushed() > before.approximate_mem_table_unflushed() + 100_000);
    assert!(after_both.approximate_mem_table_unflushed() > after_tdb.approximate_mem_table_unflushed() + 100_000);
    assert_eq!(after_both.approximate_cache_total(), 0, "no cache added");
}
