//! Statistics (`Options::enable_statistics`) and the per-thread `PerfContext`: tickers move as
//! the operations dictate, `get_statistics()` is RocksDB's `ToString` text, and the perf context
//! counts one operation.

use shale::perf::set_perf_stats;
use shale::statistics::Histogram;
use shale::statistics::StatsLevel;
use shale::statistics::Ticker;
use shale::{BlockBasedOptions, Options, PerfContext, PerfMetric, PerfStatsLevel, WriteBatch, DB};

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.enable_statistics();
    o
}

fn t(o: &Options, t: Ticker) -> u64 {
    o.get_ticker_count(t)
}

#[test]
fn statistics_are_off_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(o.get_statistics(), None);
    assert_eq!(o.get_ticker_count(Ticker::NumberKeysWritten), 0);
    assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 0);
}

#[test]
fn puts_count_keys_bytes_and_write_latency() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    let n = 100u64;
    let mut payload = 0u64;
    for i in 0..n {
        let (k, v) = (format!("key{i:04}"), format!("value{i}"));
        payload += (k.len() + v.len()) as u64;
        db.put(&k, &v).unwrap();
    }
    let mut b = WriteBatch::new();
    b.put(b"x", b"1");
    b.put(b"y", b"2");
    db.write(b).unwrap();
    assert_eq!(t(&o, Ticker::NumberKeysWritten), n + 2);
    // each batch carries its 12-byte header and a few bytes of record framing
    let written = t(&o, Ticker::BytesWritten);
    assert!(written >= payload + 12 * n, "{written} < {payload}");
    assert_eq!(t(&o, Ticker::WriteDoneBySelf) + t(&o, Ticker::WriteDoneByOther), n + 1);
    assert_eq!(t(&o, Ticker::WriteWithWal), n + 1);
    assert_eq!(t(&o, Ticker::WalFileBytes), written);
    assert_eq!(t(&o, Ticker::WalFileSynced), 0);
    let w = o.get_histogram_data(Histogram::DbWrite);
    assert_eq!(w.count(), n + 1);
    assert!(w.max() >= w.median() && w.p99() >= w.median());
    assert_eq!(o.get_histogram_data(Histogram::BytesPerWrite).count(), n + 1);
    assert_eq!(o.get_histogram_data(Histogram::BytesPerWrite).sum(), written);
    let mut wo = shale::WriteOptions::default();
    wo.set_sync(true);
    db.put_opt(b"synced", b"1", &wo).unwrap();
    assert_eq!(t(&o, Ticker::WalFileSynced), 1);
    assert_eq!(o.get_histogram_data(Histogram::WalFileSyncMicros).count(), 1);
    // Shale never updates in place
    assert_eq!(t(&o, Ticker::NumberKeysUpdated), 0);
}

#[test]
fn gets_count_memtable_then_block_cache_miss_then_hit() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"apple", b"red").unwrap();
    assert_eq!(db.get(b"apple").unwrap().as_deref(), Some(&b"red"[..]));
    assert_eq!(t(&o, Ticker::MemtableHit), 1);
    assert_eq!(t(&o, Ticker::MemtableMiss), 0);
    assert_eq!(t(&o, Ticker::NumberKeysRead), 1);
    assert_eq!(t(&o, Ticker::BytesRead), 3);
    assert_eq!(db.get(b"absent").unwrap(), None);
    assert_eq!(t(&o, Ticker::MemtableMiss), 1);
    assert_eq!(t(&o, Ticker::NumberKeysRead), 2);
    assert_eq!(t(&o, Ticker::BytesRead), 3);

    db.flush().unwrap();
    let (miss, hit, add) = (
        t(&o, Ticker::BlockCacheDataMiss),
        t(&o, Ticker::BlockCacheDataHit),
        t(&o, Ticker::BlockCacheAdd),
    );
    assert_eq!(db.get(b"apple").unwrap().as_deref(), Some(&b"red"[..]));
    assert_eq!(t(&o, Ticker::BlockCacheDataMiss), miss + 1);
    assert_eq!(t(&o, Ticker::BlockCacheMiss), t(&o, Ticker::BlockCacheDataMiss));
    assert_eq!(t(&o, Ticker::BlockCacheDataHit), hit);
    assert_eq!(t(&o, Ticker::BlockCacheAdd), add + 1);
    assert_eq!(t(&o, Ticker::BlockCacheDataAdd), t(&o, Ticker::BlockCacheAdd));
    assert!(t(&o, Ticker::BlockCacheBytesWrite) > 0);
    assert_eq!(t(&o, Ticker::GetHitL0), 1);
    assert_eq!(t(&o, Ticker::MemtableMiss), 2);
    assert_eq!(db.get(b"apple").unwrap().as_deref(), Some(&b"red"[..]));
    assert_eq!(t(&o, Ticker::BlockCacheDataHit), hit + 1);
    assert_eq!(t(&o, Ticker::BlockCacheHit), t(&o, Ticker::BlockCacheDataHit));
    assert_eq!(t(&o, Ticker::BlockCacheDataMiss), miss + 1);
    assert!(t(&o, Ticker::BlockCacheBytesRead) > 0);
    assert_eq!(t(&o, Ticker::GetHitL0), 2);
    assert_eq!(t(&o, Ticker::BloomFilterFullTruePositive), 2);
    assert_eq!(t(&o, Ticker::BytesRead), 9);
    assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 4);
    assert_eq!(o.get_histogram_data(Histogram::BytesPerRead).count(), 3);
    assert!(t(&o, Ticker::NoFileOpens) >= 1);
    assert!(t(&o, Ticker::FlushWriteBytes) > 0);
    assert_eq!(o.get_histogram_data(Histogram::FlushTime).count(), 1);
}

#[test]
fn index_and_filter_blocks_in_the_cache_are_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    let mut bb = BlockBasedOptions::default();
    bb.set_cache_index_and_filter_blocks(true);
    bb.set_bloom_filter(10.0, false);
    o.set_block_based_table_factory(&bb);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    let (ih, fh) = (t(&o, Ticker::BlockCacheIndexHit), t(&o, Ticker::BlockCacheFilterHit));
    db.get(b"k").unwrap();
    assert_eq!(t(&o, Ticker::BlockCacheIndexHit), ih + 1);
    assert_eq!(t(&o, Ticker::BlockCacheFilterHit), fh + 1);
    assert!(t(&o, Ticker::BlockCacheIndexAdd) >= 1);
    assert!(t(&o, Ticker::BlockCacheFilterAdd) >= 1);
    assert!(t(&o, Ticker::BlockCacheIndexBytesInsert) > 0);
    assert_eq!(
        t(&o, Ticker::BlockCacheHit),
        t(&o, Ticker::BlockCacheIndexHit) + t(&o, Ticker::BlockCacheFilterHit) + t(&o, Ticker::BlockCacheDataHit)
    );
}

#[test]
fn bloom_filter_is_useful_on_absent_keys() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    for i in 0..1000 {
        db.put(format!("key{:05}", 2 * i), b"v").unwrap();
    }
    db.flush().unwrap();
    // absent keys inside the file's key range (a key outside it never reaches the filter)
    for i in 0..999 {
        assert_eq!(db.get(format!("key{:05}", 2 * i + 1)).unwrap(), None);
    }
    let useful = t(&o, Ticker::BloomFilterUseful);
    let positive = t(&o, Ticker::BloomFilterFullPositive);
    assert_eq!(useful + positive, 999);
    assert!(useful >= 950, "bloom filter useful only {useful} times in 999");
    assert_eq!(t(&o, Ticker::BloomFilterFullTruePositive), 0);
    assert_eq!(db.get(b"key00008").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(t(&o, Ticker::BloomFilterFullPositive), positive + 1);
    assert_eq!(t(&o, Ticker::BloomFilterFullTruePositive), 1);
}

#[test]
fn iterators_and_multi_get_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    for k in ["a", "b", "c", "d"] {
        db.put(k, "12345").unwrap();
    }
    {
        let mut it = db.raw_iterator();
        it.seek(b"b");
        while it.valid() {
            it.next();
        }
        it.seek_to_last();
        it.prev();
        it.seek(b"z");
    }
    assert_eq!(t(&o, Ticker::NumberDbSeek), 3);
    assert_eq!(t(&o, Ticker::NumberDbSeekFound), 2);
    assert_eq!(t(&o, Ticker::NumberDbNext), 3);
    assert_eq!(t(&o, Ticker::NumberDbNextFound), 2);
    assert_eq!(t(&o, Ticker::NumberDbPrev), 1);
    assert_eq!(t(&o, Ticker::NumberDbPrevFound), 1);
    // b, c, d, then d and c: 5 entries of 1 + 5 bytes
    assert_eq!(t(&o, Ticker::IterBytesRead), 30);
    assert_eq!(o.get_histogram_data(Histogram::DbSeek).count(), 2);
    assert_eq!(t(&o, Ticker::NoIteratorCreated), 1);
    assert_eq!(t(&o, Ticker::NoIteratorDeleted), 1);

    let got = db.multi_get([&b"a"[..], b"x", b"c"]);
    assert_eq!(got.len(), 3);
    assert_eq!(t(&o, Ticker::NumberMultigetCalls), 1);
    assert_eq!(t(&o, Ticker::NumberMultigetKeysRead), 3);
    assert_eq!(t(&o, Ticker::NumberMultigetKeysFound), 2);
    assert_eq!(t(&o, Ticker::NumberMultigetBytesRead), 10);
    assert_eq!(o.get_histogram_data(Histogram::DbMultiget).count(), 1);
}

#[test]
fn compaction_counts_bytes_and_dropped_keys() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    for round in 0..2 {
        for i in 0..100 {
            db.put(format!("k{i:03}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    for i in 0..10 {
        db.delete(format!("k{i:03}")).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(t(&o, Ticker::CompactReadBytes), 0);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(t(&o, Ticker::CompactReadBytes) > 0);
    assert!(t(&o, Ticker::CompactWriteBytes) > 0);
    // 100 older versions hidden by newer ones, 10 of them by the deletions (the deletions
    // themselves, at the bottom, obsolete)
    assert_eq!(t(&o, Ticker::CompactionKeyDropNewerEntry), 110);
    assert_eq!(t(&o, Ticker::CompactionKeyDropObsolete), 10);
    assert_eq!(t(&o, Ticker::CompactionKeyDropRangeDel), 0);
    assert_eq!(t(&o, Ticker::CompactionKeyDropUser), 0);
    assert!(o.get_histogram_data(Histogram::CompactionTime).count() >= 1);
    assert!(o.get_histogram_data(Histogram::NumFilesInSingleCompaction).sum() >= 3);
    assert_eq!(o.get_histogram_data(Histogram::TableSyncMicros).count(), 3);
    assert!(o.get_histogram_data(Histogram::CompactionOutfileSyncMicros).count() >= 1);
    assert_eq!(o.get_histogram_data(Histogram::FlushTime).count(), 3);
}

#[test]
fn one_statistics_object_for_every_family_and_every_db_given_the_options() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let o = opts();
    let db1 = DB::open(&o, d1.path()).unwrap();
    let db2 = DB::open(&o.clone(), d2.path()).unwrap();
    db1.put(b"a", b"1").unwrap();
    db2.put(b"b", b"2").unwrap();
    db1.create_cf("fam", &Options::default()).unwrap();
    let fam = db1.cf_handle("fam").unwrap();
    db1.put_cf(&fam, b"c", b"3").unwrap();
    assert_eq!(db1.get_cf(&fam, b"c").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(t(&o, Ticker::NumberKeysWritten), 3);
    assert_eq!(t(&o, Ticker::MemtableHit), 1);
}

#[test]
fn stats_level_decides_what_is_collected() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    o.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
    db.put(b"a", b"1").unwrap();
    db.get(b"a").unwrap();
    assert_eq!(t(&o, Ticker::NumberKeysWritten), 1);
    assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 0);
    assert_eq!(o.get_histogram_data(Histogram::BytesPerRead).count(), 0);
    o.set_statistics_level(StatsLevel::ExceptTimers);
    db.get(b"a").unwrap();
    assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 0);
    assert_eq!(o.get_histogram_data(Histogram::BytesPerRead).count(), 1);
    o.set_statistics_level(StatsLevel::ExceptDetailedTimers);
    db.get(b"a").unwrap();
    assert_eq!(o.get_histogram_data(Histogram::DbGet).count(), 1);
    o.set_statistics_level(StatsLevel::DisableAll);
    db.put(b"b", b"2").unwrap();
    assert_eq!(t(&o, Ticker::NumberKeysWritten), 1);
    o.reset_statistics();
    assert_eq!(t(&o, Ticker::NumberKeysRead), 0);
}

/// Parse `get_statistics()`: every ticker line and every histogram line, in RocksDB's order.
#[test]
fn get_statistics_is_rocksdbs_to_string() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts();
    let db = DB::open(&o, dir.path()).unwrap();
    for i in 0..10 {
        db.put(format!("k{i}"), b"value").unwrap();
        db.get(format!("k{i}")).unwrap();
    }
    let s = o.get_statistics().unwrap();
    let lines: Vec<&str> = s.lines().collect();
    let tickers = Ticker::iter().count();
    let hists = Histogram::iter().count();
    assert!(tickers >= 263 && hists >= 62, "{tickers} {hists}");
    assert_eq!(lines.len(), tickers + hists);
    assert_eq!(lines[0], "rocksdb.block.cache.miss COUNT : 0");
    for (line, tk) in lines.iter().zip(Ticker::iter()) {
        let (name, n) = line.split_once(" COUNT : ").unwrap();
        assert_eq!(name, tk.name());
        assert_eq!(n.parse::<u64>().unwrap(), o.get_ticker_count(*tk), "{line}");
    }
    assert!(s.contains("\nrocksdb.number.keys.written COUNT : 10\n"));
    assert!(s.contains("\nrocksdb.memtable.hit COUNT : 10\n"));
    assert!(s.contains("\nrocksdb.block.cache.hit COUNT : 0\n"));
    for (line, h) in lines[tickers..].iter().zip(Histogram::iter()) {
        let f: Vec<&str> = line.split(' ').collect();
        assert_eq!(f.len(), 19, "{line}");
        assert_eq!(f[0], h.name());
        let labels: Vec<&str> = f[1..].chunks(3).map(|c| c[0]).collect();
        assert_eq!(labels, ["P50", "P95", "P99", "P100", "COUNT", "SUM"], "{line}");
        for c in f[1..].chunks(3) {
            assert_eq!(c[1], ":");
        }
        for c in f[1..13].chunks(3) {
            let (int, frac) = c[2].split_once('.').unwrap();
            assert!(int.parse::<u64>().is_ok() && frac.len() == 6, "{line}");
        }
        let d = o.get_histogram_data(*h);
        assert_eq!(f[15].parse::<u64>().unwrap(), d.count(), "{line}");
        assert_eq!(f[18].parse::<u64>().unwrap(), d.sum(), "{line}");
    }
    let get = lines.iter().find(|l| l.starts_with("rocksdb.db.get.micros ")).unwrap();
    assert!(get.contains(" COUNT : 10 SUM : "), "{get}");
    let bpr = lines.iter().find(|l| l.starts_with("rocksdb.bytes.per.read ")).unwrap();
    assert_eq!(
        *bpr,
        "rocksdb.bytes.per.read P50 : 5.000000 P95 : 5.000000 P99 : 5.000000 P100 : 5.000000 COUNT : 10 SUM : 50"
    );
}

#[test]
fn perf_context_counts_one_get_on_its_own_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = std::sync::Arc::new(DB::open(&o, dir.path()).unwrap());
    // values of 100 bytes: key0001 and key0100 are in different data blocks
    let value = [b'v'; 100];
    for i in 0..200 {
        db.put(format!("key{i:04}"), value).unwrap();
    }
    db.flush().unwrap();
    db.get(b"key0001").unwrap(); // opens the table (its index and filter reads)
    db.put(b"in-memtable", b"1").unwrap();
    let db2 = db.clone();
    std::thread::spawn(move || {
        let db = db2;
        let mut ctx = PerfContext::default();
        // counts nothing until the level says so
        db.get(b"in-memtable").unwrap();
        assert_eq!(ctx.report(true), "");
        set_perf_stats(PerfStatsLevel::EnableTime);
        ctx.reset();
        assert_eq!(db.get(b"key0100").unwrap().as_deref(), Some(&value[..]));
        assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 1, "{}", ctx.report(true));
        assert!(ctx.metric(PerfMetric::BlockReadByte) > 0);
        assert!(ctx.metric(PerfMetric::BlockReadTime) > 0);
        assert_eq!(ctx.metric(PerfMetric::BlockCacheHitCount), 0);
        assert!(ctx.metric(PerfMetric::UserKeyComparisonCount) > 0);
        assert_eq!(ctx.metric(PerfMetric::GetFromMemtableCount), 1);
        assert!(ctx.metric(PerfMetric::GetFromOutputFilesTime) > 0);
        assert_eq!(ctx.metric(PerfMetric::BloomSstHitCount), 1);
        assert_eq!(ctx.metric(PerfMetric::GetReadBytes), 100);
        ctx.reset();
        db.get(b"key0100").unwrap();
        assert_eq!(ctx.metric(PerfMetric::BlockCacheHitCount), 1);
        assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 0);
        assert_eq!(db.get(b"key0100x").unwrap(), None);
        assert_eq!(ctx.metric(PerfMetric::BloomSstMissCount), 1);
        let full = ctx.report(false);
        assert!(full.starts_with("user_key_comparison_count = "), "{full}");
        assert!(
            full.contains(", block_cache_hit_count = 1, block_read_count = 0, "),
            "{full}"
        );
        assert!(!full.ends_with(", "));
        let short = ctx.report(true);
        assert!(!short.contains("= 0"), "{short}");
        assert!(short.contains("block_cache_hit_count = 1"), "{short}");

        ctx.reset();
        db.put(b"new", b"1").unwrap();
        assert!(ctx.metric(PerfMetric::WriteWalTime) > 0);
        assert!(ctx.metric(PerfMetric::WriteMemtableTime) > 0);
        db.delete(b"key0000").unwrap();
        ctx.reset();
        let mut it = db.raw_iterator();
        it.seek_to_first();
        assert_eq!(it.key(), Some(&b"in-memtable"[..]));
        it.next();
        assert_eq!(it.key(), Some(&b"key0001"[..]));
        assert_eq!(ctx.metric(PerfMetric::SeekChildSeekCount), 2);
        assert_eq!(ctx.metric(PerfMetric::SeekOnMemtableCount), 1);
        assert_eq!(ctx.metric(PerfMetric::InternalDeleteSkippedCount), 1);
        assert_eq!(ctx.metric(PerfMetric::InternalKeySkippedCount), 1);
        set_perf_stats(PerfStatsLevel::Disable);
        ctx.reset();
        db.get(b"key0100").unwrap();
        assert_eq!(ctx.report(true), "");
    })
    .join()
    .unwrap();
}

#[test]
fn blocks_that_do_not_fit_the_cache_are_add_failures() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts();
    let mut bb = BlockBasedOptions::default();
    bb.set_block_cache(&shale::Cache::new_lru_cache(1));
    o.set_block_based_table_factory(&bb);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    for _ in 0..2 {
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
    assert_eq!(t(&o, Ticker::BlockCacheAddFailures), 2);
    assert_eq!(t(&o, Ticker::BlockCacheAdd), 0);
    assert_eq!(t(&o, Ticker::BlockCacheDataMiss), 2);
    assert_eq!(t(&o, Ticker::BlockCacheHit), 0);
}
