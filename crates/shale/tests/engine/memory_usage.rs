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
    assert_eq!(empty.approximate_cache_total(), 0, "nothing read yet");

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
    assert_eq!(empty.approximate_cache_total(), 0);
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
