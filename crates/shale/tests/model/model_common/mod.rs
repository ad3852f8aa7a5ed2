//! Helpers shared by the randomized model tests (`model.rs`, `model_cf.rs`, `model_ext.rs`,
//! `uint64_comparator.rs`): a deterministic RNG, the `BTreeMap` model, small-memtable options and
//! the full check of a DB against the model.

use std::collections::BTreeMap;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::{DBRawIterator, Options, ReadOptions, DB};

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// (key, value) pairs in iteration order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

pub fn small_opts(fs: &MemFs) -> Options {
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(fs.clone()));
        o.set_write_buffer_size(8 << 10);
        o.set_target_file_size_base(16 << 10);
        o.set_max_bytes_for_level_base(64 << 10);
        o.set_level_zero_file_num_compaction_trigger(2);
        let mut bbo = o.get_block_based_options();
        bbo.set_block_size(256);
        o.set_block_based_table_factory(&bbo);
        o
    }
}

pub fn range_scan(m: &Model, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| lo.map(|l| k.as_slice() >= l).unwrap_or(true) && hi.map(|h| k.as_slice() < h).unwrap_or(true))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A whole forward scan (`seek_to_first`/`next`, then the iterator's status checked) and a whole
/// reverse scan (`seek_to_last`/`prev`, put back in ascending order) of a raw iterator.
pub fn scan_both_ways(it: &mut DBRawIterator) -> (Entries, Entries) {
    it.seek_to_first();
    let mut fwd = Vec::new();
    while it.valid() {
        fwd.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next();
    }
    it.status().unwrap();
    it.seek_to_last();
    let mut rev = Vec::new();
    while it.valid() {
        rev.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.prev();
    }
    rev.reverse();
    (fwd, rev)
}

pub fn check_full(db: &DB, m: &Model, rng: &mut Rng, ro: &ReadOptions) {
    // point reads
    for _ in 0..50 {
        let k = key(rng.below(400));
        assert_eq!(
            db.get_opt(&k, ro).unwrap(),
            m.get(&k).cloned(),
            "get {:?}",
            String::from_utf8_lossy(&k)
        );
    }
    // multi_get
    let keys: Vec<Vec<u8>> = (0..20).map(|_| key(rng.below(400))).collect();
    let got = db.multi_get_opt(&keys, ro);
    for (k, g) in keys.iter().zip(got) {
        assert_eq!(g.unwrap(), m.get(k).cloned());
    }
    // iterators with random bounds, both directions
    let mut ro2 = ro.clone();
    let lo = if rng.below(2) == 0 {
        Some(key(rng.below(400)))
    } else {
        None
    };
    let hi = if rng.below(2) == 0 {
        Some(key(rng.below(400)))
    } else {
        None
    };
    if let Some(b) = lo.clone() {
        ro2.set_iterate_lower_bound(b);
    }
    if let Some(b) = hi.clone() {
        ro2.set_iterate_upper_bound(b);
    }
    let expect = range_scan(m, lo.as_deref(), hi.as_deref());
    let mut it = db.raw_iterator_opt(ro2.clone());
    let (fwd, rev) = scan_both_ways(&mut it);
    assert_eq!(fwd, expect, "forward scan lo={lo:?} hi={hi:?}");
    assert_eq!(rev, expect, "reverse scan");
    // seek / seek_for_prev then mixed next/prev
    for _ in 0..5 {
        let t = key(rng.below(400));
        it.seek(&t);
        let exp = expect.iter().position(|(k, _)| k >= &t);
        match exp {
            Some(i) => {
                assert_eq!(it.key().unwrap(), expect[i].0.as_slice());
                random_steps(&mut it, &expect, i, 6, rng);
            }
            None => assert!(!it.valid()),
        }
        it.seek_for_prev(&t);
        let exp = expect.iter().rposition(|(k, _)| k <= &t);
        match exp {
            Some(i) => assert_eq!(it.key().unwrap(), expect[i].0.as_slice(), "seek_for_prev"),
            None => assert!(!it.valid()),
        }
    }
}

/// From the iterator at `expect[start]`, `n` random `next`/`prev` steps, each checked against
/// `expect` (the entries in iteration order); stepping off either end must invalidate it.
pub fn random_steps(it: &mut DBRawIterator, expect: &[(Vec<u8>, Vec<u8>)], start: usize, n: usize, rng: &mut Rng) {
    let mut pos = start as i64;
    for _ in 0..n {
        if rng.below(2) == 0 {
            it.next();
            pos += 1;
        } else {
            it.prev();
            pos -= 1;
        }
        if pos < 0 || pos >= expect.len() as i64 {
            assert!(!it.valid(), "a step off the end left the iterator valid");
            break;
        }
        assert_eq!(it.key().unwrap(), expect[pos as usize].0.as_slice(), "step");
        assert_eq!(it.value().unwrap(), expect[pos as usize].1.as_slice(), "step value");
    }
}

/// Compaction style of a model run: "level" (the default options), "universal" (7 levels,
/// defaults but a trigger of 2 runs, files with 4 deletions in 32 entries marked for
/// compaction), "universal1" (a single level, size ratio 0, `Similar` stop style, trivial moves,
/// size amp 25 %, files of 30 % deletions marked) or "fifo" (intra-L0 merges on, a size limit
/// no run reaches: the model expects every write to stay).
pub fn set_style(o: &mut shale::Options, style: &str) {
    use shale::{DBCompactionStyle, FifoCompactOptions, UniversalCompactOptions, UniversalCompactionStopStyle};
    match style {
        "level" => {}
        "universal" => {
            o.set_compaction_style(DBCompactionStyle::Universal);
            o.add_compact_on_deletion_collector_factory(32, 4, 0.0);
        }
        "universal1" => {
            o.set_compaction_style(DBCompactionStyle::Universal);
            o.set_num_levels(1);
            let mut u = UniversalCompactOptions::default();
            u.set_size_ratio(0);
            u.set_stop_style(UniversalCompactionStopStyle::Similar);
            u.set_allow_trivial_move(true);
            u.set_max_size_amplification_percent(25);
            o.set_universal_compaction_options(&u);
            o.add_compact_on_deletion_collector_factory(0, 0, 0.3);
        }
        "fifo" => {
            o.set_compaction_style(DBCompactionStyle::Fifo);
            let mut f = FifoCompactOptions::default();
            f.set_max_table_files_size(1 << 40);
            f.set_allow_compaction(true);
            o.set_fifo_compaction_options(&f);
        }
        // leveled, with a partitioned index and filters of tiny partitions (`metadata_block_size`
        // after the colon) kept in a small block cache at high priority
        s if s.starts_with("partitioned:") => {
            let mut b = o.get_block_based_options();
            b.set_index_type(shale::BlockBasedIndexType::TwoLevelIndexSearch);
            b.set_partition_filters(true);
            b.set_metadata_block_size(s[12..].parse().unwrap());
            b.set_cache_index_and_filter_blocks(true);
            b.set_block_cache(&shale::Cache::new_lru_cache(64 << 10));
            o.set_block_based_table_factory(&b);
        }
        s => panic!("unknown style {s}"),
    }
}
