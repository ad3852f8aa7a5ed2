//! The prioritized block cache through a real DB: with cached index and filter blocks at high
//! priority in a high-priority pool, reads that churn the cache with data blocks leave the
//! index and filter miss counters flat; without the priority the same reads keep missing them.
//! Also the same with a partitioned index and filters, and bad pool ratios.

use shale::statistics::Ticker;
use shale::{BlockBasedIndexType, BlockBasedOptions, Cache, Options, DB};

/// A DB of ~40 tables (~2.5 MiB of data blocks) over a 1 MiB cache; returns how many index
/// and filter misses, and data misses, 20,000 random gets made after a warm-up pass.
fn misses(high_priority: bool, ratio: f64, partitioned: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.enable_statistics();
    o.set_write_buffer_size(64 << 10);
    o.set_disable_auto_compactions(true);
    let mut b = BlockBasedOptions::default();
    b.set_cache_index_and_filter_blocks(true);
    b.set_cache_index_and_filter_blocks_with_high_priority(high_priority);
    b.set_block_cache(&Cache::new_lru_cache_with_high_pri_pool_ratio(1 << 20, ratio).unwrap());
    if partitioned {
        b.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
        b.set_partition_filters(true);
        b.set_metadata_block_size(512);
    }
    o.set_block_based_table_factory(&b);
    let db = DB::open(&o, dir.path()).unwrap();
    let n = 20_000u64;
    let key = |i: u64| format!("key{:010}", i.wrapping_mul(0x9E37_79B9) % n);
    for i in 0..n {
        db.put(key(i), vec![b'v'; 120]).unwrap();
    }
    db.flush().unwrap();
    // warm-up: every index and filter block is read once
    for i in 0..n {
        db.get(key(i)).unwrap().unwrap();
    }
    let meta = |o: &Options| {
        o.get_ticker_count(Ticker::BlockCacheIndexMiss) + o.get_ticker_count(Ticker::BlockCacheFilterMiss)
    };
    let (m0, d0) = (meta(&o), o.get_ticker_count(Ticker::BlockCacheDataMiss));
    let mut x = 12345u64;
    for _ in 0..20_000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let i = (x >> 33) % n;
        assert!(db.get(key(i)).unwrap().is_some());
        // absent keys probe the filters too
        assert!(db.get(format!("{}x", key(i))).unwrap().is_none());
    }
    (meta(&o) - m0, o.get_ticker_count(Ticker::BlockCacheDataMiss) - d0)
}

#[test]
fn index_and_filter_blocks_stay_cached_under_data_block_pressure() {
    for partitioned in [false, true] {
        let (meta, data) = misses(true, 0.5, partitioned);
        assert!(
            data > 5_000,
            "partitioned {partitioned}: only {data} data misses: no pressure"
        );
        assert_eq!(meta, 0, "partitioned {partitioned}: index/filter misses under pressure");
        // at low priority the same churn evicts them and each lookup may re-read them
        let (meta_low, _) = misses(false, 0.5, partitioned);
        assert!(
            meta_low > 20,
            "partitioned {partitioned}: {meta_low} misses at low priority"
        );
    }
}

#[test]
fn pool_ratio_outside_zero_to_one_is_invalid_argument() {
    for r in [-0.1, 1.5, f64::NAN] {
        let e = Cache::new_lru_cache_with_high_pri_pool_ratio(1 << 20, r).err().unwrap();
        assert!(e.to_string().contains("high_pri_pool_ratio"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let mut o = Options::default();
        o.create_if_missing(true);
        let mut b = BlockBasedOptions::default();
        b.set_cache_high_pri_pool_ratio(r);
        o.set_block_based_table_factory(&b);
        let e = DB::open(&o, dir.path()).err().unwrap();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("high_pri_pool_ratio"),
            "{e}"
        );
    }
    assert_eq!(Cache::new_lru_cache(1 << 20).get_high_pri_pool_ratio(), 0.5);
    assert_eq!(
        Cache::new_lru_cache_with_high_pri_pool_ratio(1 << 20, 1.0)
            .unwrap()
            .get_high_pri_pool_ratio(),
        1.0
    );
}
