//! Prefix filters and prefix seek against a `BTreeMap` model: random keys, random fixed and
//! capped extractors of random length, random `whole_key_filtering` and memtable blooms, across
//! flushes, compactions and reopens with another extractor. No lookup or prefix seek may miss a
//! key because of a filter, and the filters must rule sources out (or the test proves nothing).

use std::collections::BTreeMap;
use std::sync::Arc;

use shale::{
    new_capped_prefix_transform, new_fixed_prefix_transform, set_perf_stats, MemFs, Options, PerfContext, PerfMetric,
    PerfStatsLevel, ReadOptions, SliceTransform, DB,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Keys of 1..=7 letters from a 4-letter alphabet: many short keys (outside a fixed
/// extractor's domain) and many keys per prefix.
fn random_key(rng: &mut Rng) -> Vec<u8> {
    let len = 1 + rng.below(7) as usize;
    (0..len).map(|_| b"abcd"[rng.below(4) as usize]).collect()
}

fn random_extractor(rng: &mut Rng) -> Arc<dyn SliceTransform> {
    let len = 1 + rng.below(4) as usize;
    if rng.below(2) == 0 {
        new_fixed_prefix_transform(len)
    } else {
        new_capped_prefix_transform(len)
    }
}

fn options(fs: &MemFs, rng: &mut Rng) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_write_buffer_size(16 << 10);
    o.set_target_file_size_base(8 << 10);
    o.set_max_bytes_for_level_base(32 << 10);
    o.set_level_zero_file_num_compaction_trigger(3);
    o.set_prefix_extractor(random_extractor(rng));
    if rng.below(2) == 0 {
        o.set_memtable_prefix_bloom_ratio(0.1);
        o.set_memtable_whole_key_filtering(rng.below(2) == 0);
    }
    let mut bbo = o.get_block_based_options();
    bbo.set_block_size(512);
    bbo.set_whole_key_filtering(rng.below(3) != 0);
    bbo.set_format_version(if rng.below(4) == 0 { 4 } else { 5 });
    if rng.below(3) == 0 {
        // Partitioned index and filters, tiny partitions: a prefix's keys span partitions.
        bbo.set_index_type(shale::BlockBasedIndexType::TwoLevelIndexSearch);
        bbo.set_partition_filters(true);
        bbo.set_metadata_block_size(rng.below(3) as usize * 64);
    }
    o.set_block_based_table_factory(&bbo);
    o
}

/// The model's keys from `target` on that share its prefix (RocksDB's `prefix_same_as_start`:
/// the prefix is `transform(target)`, whether or not the target is in the domain).
fn model_prefix_range(m: &Model, x: &dyn SliceTransform, target: &[u8]) -> Vec<Vec<u8>> {
    let p = x.transform(target);
    m.range(target.to_vec()..)
        .map(|(k, _)| k.clone())
        .take_while(|k| x.transform(k) == p)
        .collect()
}

fn collect(it: &mut shale::DBRawIterator, forward: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while it.valid() {
        out.push(it.key().unwrap().to_vec());
        if forward {
            it.next()
        } else {
            it.prev()
        }
    }
    it.status().unwrap();
    out
}

fn check(db: &DB, m: &Model, x: &dyn SliceTransform, rng: &mut Rng, what: &str) {
    // point lookups: present keys, then random ones (mostly absent)
    for (k, v) in m.iter().step_by(3) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{what}: get {k:?}");
    }
    for _ in 0..200 {
        let k = random_key(rng);
        assert_eq!(db.get(&k).unwrap().as_ref(), m.get(&k), "{what}: get {k:?}");
    }
    for _ in 0..120 {
        let target = random_key(rng);
        let want = model_prefix_range(m, x, &target);
        // prefix_same_as_start: exactly the prefix's keys
        let mut ro = ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        let mut it = db.raw_iterator_opt(ro);
        it.seek(&target);
        assert_eq!(collect(&mut it, true), want, "{what}: prefix seek {target:?}");
        // and backwards from the target within its prefix
        let p = x.transform(&target).to_vec();
        let want_back: Vec<Vec<u8>> = m
            .range(..=target.clone())
            .rev()
            .map(|(k, _)| k.clone())
            .take_while(|k| x.transform(k) == p.as_slice())
            .collect();
        it.seek_for_prev(&target);
        assert_eq!(
            collect(&mut it, false),
            want_back,
            "{what}: prefix seek_for_prev {target:?}"
        );
        // plain prefix mode: what lies inside the prefix is exact (beyond it is undefined)
        let mut it = db.raw_iterator();
        it.seek(&target);
        let mut got = Vec::new();
        while it.valid() && x.transform(it.key().unwrap()) == p.as_slice() {
            got.push(it.key().unwrap().to_vec());
            it.next();
        }
        it.status().unwrap();
        assert_eq!(got, want, "{what}: prefix-mode seek {target:?}");
        // the prefix iterator of the rocksdb crate
        let keys: Vec<Vec<u8>> = db.prefix_iterator(&target).map(|r| r.unwrap().0.to_vec()).collect();
        assert_eq!(keys, want, "{what}: prefix_iterator {target:?}");
        // auto_prefix_mode with an upper bound: total order inside the bounds
        let upper = random_key(rng);
        let mut ro = ReadOptions::default();
        ro.set_auto_prefix_mode(true);
        ro.set_iterate_upper_bound(upper.clone());
        let mut it = db.raw_iterator_opt(ro);
        it.seek(&target);
        let want: Vec<Vec<u8>> = m
            .range(target.clone()..)
            .map(|(k, _)| k.clone())
            .take_while(|k| *k < upper)
            .collect();
        assert_eq!(
            collect(&mut it, true),
            want,
            "{what}: auto prefix seek {target:?} < {upper:?}"
        );
        // total order
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        let mut it = db.raw_iterator_opt(ro);
        it.seek(&target);
        let got = collect(&mut it, true);
        let want: Vec<Vec<u8>> = m.range(target.clone()..).map(|(k, _)| k.clone()).collect();
        assert_eq!(got, want, "{what}: total order seek {target:?}");
    }
}

fn run(seed: u64) {
    let mut rng = Rng(seed);
    let fs = MemFs::new();
    let path = "/prefixdb";
    let mut m = Model::new();
    let mut o = options(&fs, &mut rng);
    let mut x = o.get_prefix_extractor().clone().unwrap();
    let mut db = DB::open(&o, path).unwrap();
    let counted = std::sync::atomic::AtomicU64::new(0);
    for round in 0..6 {
        for _ in 0..1500 {
            let k = random_key(&mut rng);
            if rng.below(300) == 0 {
                // a range tombstone: it may end a file (its largest key) inside a prefix
                let end = random_key(&mut rng);
                if k < end {
                    let cf = db.cf_handle("default").unwrap();
                    db.delete_range_cf(&cf, &k, &end).unwrap();
                    let doomed: Vec<Vec<u8>> = m.range(k.clone()..end.clone()).map(|(k, _)| k.clone()).collect();
                    for d in doomed {
                        m.remove(&d);
                    }
                }
            } else if rng.below(5) == 0 {
                db.delete(&k).unwrap();
                m.remove(&k);
            } else {
                let v = format!("{round}-{}", rng.below(1000)).into_bytes();
                db.put(&k, &v).unwrap();
                m.insert(k, v);
            }
        }
        match rng.below(3) {
            0 => db.flush().unwrap(),
            1 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            _ => {}
        }
        let what = format!(
            "seed {seed} round {round} extractor {} opts {:?}",
            x.name(),
            o.get_memtable_whole_key_filtering()
        );
        let mut ctx = PerfContext::default();
        check(&db, &m, &*x, &mut rng, &what);
        counted.fetch_add(
            ctx.metric(PerfMetric::BloomSstMissCount) + ctx.metric(PerfMetric::BloomMemtableMissCount),
            std::sync::atomic::Ordering::Relaxed,
        );
        ctx.reset();
        if round % 2 == 1 {
            // reopen with another extractor and other filter switches: files built with the old
            // one are read without their prefix filters
            drop(db);
            o = options(&fs, &mut rng);
            x = o.get_prefix_extractor().clone().unwrap();
            db = DB::open(&o, path).unwrap();
            check(&db, &m, &*x, &mut rng, &format!("{what} reopened as {}", x.name()));
        }
    }
    assert!(
        counted.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "seed {seed}: no filter ever ruled a source out"
    );
}

#[test]
fn prefix_filters_never_hide_a_key() {
    // perf counters are per thread: count in a thread of our own
    std::thread::spawn(|| {
        set_perf_stats(PerfStatsLevel::EnableCount);
        for seed in [7, 1234, 99991, 4242, 31337] {
            run(seed);
        }
    })
    .join()
    .unwrap();
}
