//! Prefix filters and prefix seek against a `BTreeMap` model: random keys, random fixed and
//! capped extractors of random length, random `whole_key_filtering` and memtable blooms, across
//! flushes, compactions and reopens with another extractor. No lookup or prefix seek may miss a
//! key because of a filter, and the filters must rule sources out (or the test proves nothing).

use std::collections::BTreeMap;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::perf::set_perf_stats;
use shale::slice_transform::new_capped_prefix_transform;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::slice_transform::PrefixExtractor;
use shale::{Options, PerfContext, PerfMetric, PerfStatsLevel, ReadOptions, DB};

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

fn random_extractor(rng: &mut Rng) -> Arc<dyn PrefixExtractor> {
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
fn model_prefix_range(m: &Model, x: &dyn PrefixExtractor, target: &[u8]) -> Vec<Vec<u8>> {
    let p = x.transform(target);
    m.range(target.to_vec()..)
        .map(|(k, _)| k.clone())
        .take_while(|k| x.transform(k) == p)
        .collect()
}

fn collect(it: &mut shale::DBRawIterator, forward: bool) -> Vec<Vec<u8>> {
    collect_while(it, forward, |_| true)
}

/// The keys from the iterator's position on (or back) while they have prefix `p`.
fn collect_in_prefix(it: &mut shale::DBRawIterator, x: &dyn PrefixExtractor, p: &[u8], forward: bool) -> Vec<Vec<u8>> {
    collect_while(it, forward, |k| x.transform(k) == p)
}

fn collect_while(it: &mut shale::DBRawIterator, forward: bool, keep: impl Fn(&[u8]) -> bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while it.valid() && keep(it.key().unwrap()) {
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

thread_local! {
    /// Sources `seek_for_prev` ruled out by a bloom (memtable or table) on this thread.
    static SEEK_FOR_PREV_MISSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Table files a prefix `seek` ruled out by their filters on this thread.
    static SEEK_SST_MISSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bloom misses (tables and memtables) counted on this thread so far.
fn misses(ctx: &PerfContext) -> u64 {
    ctx.metric(PerfMetric::BloomSstMissCount) + ctx.metric(PerfMetric::BloomMemtableMissCount)
}

fn check(db: &DB, m: &Model, x: &dyn PrefixExtractor, rng: &mut Rng, what: &str) {
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
        let ctx = PerfContext::default();
        let before = ctx.metric(PerfMetric::BloomSstMissCount);
        it.seek(&target);
        SEEK_SST_MISSES.with(|c| c.set(c.get() + ctx.metric(PerfMetric::BloomSstMissCount) - before));
        assert_eq!(collect(&mut it, true), want, "{what}: prefix seek {target:?}");
        // and backwards from the target within its prefix
        let p = x.transform(&target).to_vec();
        let want_back: Vec<Vec<u8>> = m
            .range(..=target.clone())
            .rev()
            .map(|(k, _)| k.clone())
            .take_while(|k| x.transform(k) == p.as_slice())
            .collect();
        let ctx = PerfContext::default();
        let before = misses(&ctx);
        it.seek_for_prev(&target);
        assert_eq!(
            collect(&mut it, false),
            want_back,
            "{what}: prefix seek_for_prev {target:?}"
        );
        SEEK_FOR_PREV_MISSES.with(|c| c.set(c.get() + misses(&ctx) - before));
        // plain prefix mode backwards: what lies inside the prefix, up to the target, is exact
        let mut it = db.raw_iterator();
        it.seek_for_prev(&target);
        let got = collect_in_prefix(&mut it, x, &p, false);
        assert_eq!(got, want_back, "{what}: prefix-mode seek_for_prev {target:?}");
        // plain prefix mode: what lies inside the prefix is exact (beyond it is undefined)
        let mut it = db.raw_iterator();
        it.seek(&target);
        let got = collect_in_prefix(&mut it, x, &p, true);
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
        // auto_prefix_mode backwards, under the bound that ends the target's prefix (the next
        // prefix of the same length): the keys below the prefix count too
        let mut upper = p.clone();
        if let Some(b) = upper.last_mut() {
            *b += 1;
        }
        let mut ro = ReadOptions::default();
        ro.set_auto_prefix_mode(true);
        ro.set_iterate_upper_bound(upper.clone());
        let mut it = db.raw_iterator_opt(ro);
        it.seek_for_prev(&target);
        let want: Vec<Vec<u8>> = m
            .range(..=target.clone())
            .rev()
            .map(|(k, _)| k.clone())
            .filter(|k| *k < upper)
            .collect();
        assert_eq!(
            collect(&mut it, false),
            want,
            "{what}: auto prefix seek_for_prev {target:?} < {upper:?}"
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
        write_round(&db, &mut m, &mut rng, round);
        let what = format!(
            "seed {seed} round {round} extractor {} opts {:?}",
            x.name(),
            o.get_memtable_whole_key_filtering()
        );
        let mut ctx = PerfContext::default();
        check(&db, &m, &*x, &mut rng, &what);
        counted.fetch_add(misses(&ctx), std::sync::atomic::Ordering::Relaxed);
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

/// 1,500 random puts, deletions and range deletions, in the DB and the model, then maybe a
/// flush or a full compaction.
fn write_round(db: &DB, m: &mut Model, rng: &mut Rng, round: usize) {
    for _ in 0..1500 {
        let k = random_key(rng);
        if rng.below(300) == 0 {
            // a range tombstone: it may end a file (its largest key) inside a prefix
            let end = random_key(rng);
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
}

#[test]
fn prefix_filters_never_hide_a_key() {
    // perf counters are per thread: count in a thread of our own
    std::thread::spawn(|| {
        set_perf_stats(PerfStatsLevel::EnableCount);
        for seed in [7, 1234, 99991, 4242, 31337] {
            run(seed);
        }
        assert!(
            SEEK_FOR_PREV_MISSES.with(|c| c.get()) > 0,
            "no seek_for_prev was ever filtered by a bloom"
        );
    })
    .join()
    .unwrap();
}

/// `set_options` changes the extractor while the DB runs: new memtables and files use the new
/// one, files built with another are read without their prefix filters, and no lookup or
/// prefix seek (old extractor's files, new extractor's files, memtables of either) is wrong.
fn run_set_options(seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let fs = MemFs::new();
    let mut m = Model::new();
    let o = options(&fs, &mut rng);
    let mut x = o.get_prefix_extractor().clone().unwrap();
    let db = DB::open(&o, "/setopts").unwrap();
    let first = x.name().to_string();
    let mut ruled_out_after_change = 0;
    for round in 0..8 {
        write_round(&db, &mut m, &mut rng, round);
        let what = format!("seed {seed} round {round} extractor {}", x.name());
        let before = SEEK_SST_MISSES.with(|c| c.get());
        check(&db, &m, &*x, &mut rng, &what);
        if x.name() != first {
            // only files written with the new extractor can have ruled these out
            ruled_out_after_change += SEEK_SST_MISSES.with(|c| c.get()) - before;
        }
        // another extractor, by name or in RocksDB's short form
        let next = random_extractor(&mut rng);
        let value = match (rng.below(2), next.name().rsplit_once('.')) {
            (0, Some((kind, n))) if kind.ends_with("FixedPrefix") => format!("fixed:{n}"),
            (0, Some((kind, n))) if kind.ends_with("CappedPrefix") => format!("capped:{n}"),
            _ => next.name().to_string(),
        };
        db.set_options(&[("prefix_extractor", value.as_str())]).unwrap();
        // (`check`'s prefix_same_as_start iterations end where the new extractor's prefix does)
        x = next;
        check(&db, &m, &*x, &mut rng, &format!("{what} changed to {value}"));
    }
    ruled_out_after_change
}

#[test]
fn set_options_changes_the_prefix_extractor() {
    std::thread::spawn(|| {
        set_perf_stats(PerfStatsLevel::EnableCount);
        let mut ruled_out = 0;
        for seed in [5, 777, 4321] {
            ruled_out += run_set_options(seed);
        }
        // prefix seeks used the filters of files written after a change (new extractor)
        assert!(ruled_out > 0, "no prefix seek was filtered by a table after a change");
    })
    .join()
    .unwrap();
}

#[test]
fn set_options_refuses_a_bad_prefix_extractor() {
    let fs = MemFs::new();
    let mut rng = Rng(3);
    let o = options(&fs, &mut rng);
    let db = DB::open(&o, "/bad").unwrap();
    for bad in ["rocksdb.FixedPrefix.x", "my.own", "fixed:", "capped:-1"] {
        let e = db.set_options(&[("prefix_extractor", bad)]).unwrap_err().to_string();
        assert!(e.contains("prefix_extractor"), "{bad}: {e}");
    }
    // no extractor at all: prefix_same_as_start has no prefix to stay in
    let keys = [b"abc1".to_vec(), b"abd2".to_vec(), b"xyz".to_vec()];
    for k in &keys {
        db.put(k, b"v").unwrap();
    }
    db.flush().unwrap();
    db.set_options(&[("prefix_extractor", "nullptr")]).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_prefix_same_as_start(true);
    let mut it = db.raw_iterator_opt(ro);
    it.seek(b"abc1");
    assert_eq!(collect(&mut it, true), keys.to_vec());
}

/// `seek_for_prev` into the gap between two files of a level whose later file holds none of
/// the target's prefix: that file is ruled out by its filter and the seek must go on to the
/// previous file, which ends inside the prefix.
#[test]
fn seek_for_prev_steps_back_over_a_filtered_file() {
    set_perf_stats(PerfStatsLevel::EnableCount);
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_prefix_extractor(new_fixed_prefix_transform(3));
    let mut bbo = o.get_block_based_options();
    bbo.set_whole_key_filtering(false);
    o.set_block_based_table_factory(&bbo);
    let db = DB::open(&o, "/gap").unwrap();
    // two files of one level: [aaa0 .. abc1] and [abd0 .. abz9]
    for (name, keys) in [
        ("/a.sst", ["aaa0", "abb5", "abc0", "abc1"]),
        ("/b.sst", ["abd0", "abd1", "abe0", "abz9"]),
    ] {
        let mut w = shale::SstFileWriter::create(&o);
        w.open(name).unwrap();
        for k in keys {
            w.put(k, k).unwrap();
        }
        w.finish().unwrap();
        db.ingest_external_file(vec![name]).unwrap();
    }
    let ctx = PerfContext::default();
    let before = ctx.metric(PerfMetric::BloomSstMissCount);
    let mut ro = ReadOptions::default();
    ro.set_prefix_same_as_start(true);
    let mut it = db.raw_iterator_opt(ro);
    it.seek_for_prev(b"abc5");
    assert_eq!(collect(&mut it, false), vec![b"abc1".to_vec(), b"abc0".to_vec()]);
    // the later file was asked and said no (else this proves nothing)
    assert!(ctx.metric(PerfMetric::BloomSstMissCount) > before);
    // a prefix neither file holds: nothing
    it.seek_for_prev(b"abx5");
    assert!(collect(&mut it, false).is_empty());
    it.seek_for_prev(b"abd9");
    assert_eq!(collect(&mut it, false), vec![b"abd1".to_vec(), b"abd0".to_vec()]);
}

/// Regression (found by `shale stress` changing the extractor to an 8-byte one): in
/// `auto_prefix_mode`, an upper bound that is the next prefix after the target's keeps a forward
/// seek in one prefix, but not a `seek_for_prev`, which goes on below the prefix. Such a seek
/// must not skip a file because its filter lacks the target's prefix (RocksDB never filters
/// backward seeks in `auto_prefix_mode`).
#[test]
fn auto_prefix_mode_seek_for_prev_is_not_filtered() {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    o.set_prefix_extractor(new_fixed_prefix_transform(8));
    let db = DB::open(&o, "/auto-back").unwrap();
    let key = |k: u64| k.to_be_bytes().to_vec();
    for k in [10u64, 11, 12] {
        db.put(key(k), b"v").unwrap();
    }
    db.flush().unwrap();
    let mut ro = ReadOptions::default();
    ro.set_auto_prefix_mode(true);
    ro.set_iterate_lower_bound(key(10));
    ro.set_iterate_upper_bound(key(15));
    let mut it = db.raw_iterator_opt(ro);
    let mut target = key(14);
    target.extend_from_slice(&[0xff; 4]);
    it.seek_for_prev(&target);
    assert_eq!(collect(&mut it, false), vec![key(12), key(11), key(10)]);
}

/// An extractor made of functions (`SliceTransform::create`) drives prefix iteration, the
/// memtable bloom and the table prefix filters, and its name is what the OPTIONS file and the
/// tables record; reopening with it reads the same data.
#[test]
fn function_extractor_is_used_and_recorded_by_name() {
    fn first_three(k: &[u8]) -> &[u8] {
        &k[..k.len().min(3)]
    }
    fn three_or_more(k: &[u8]) -> bool {
        k.len() >= 3
    }
    std::thread::spawn(|| {
        set_perf_stats(PerfStatsLevel::EnableCount);
        let fs = MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(std::sync::Arc::new(fs.clone()));
        o.set_prefix_extractor(shale::SliceTransform::create(
            "first three",
            first_three,
            Some(three_or_more),
        ));
        o.set_memtable_prefix_bloom_ratio(0.1);
        let db = DB::open(&o, "/fx").unwrap();
        for k in ["aaa1", "aaa2", "bbb1", "bbb2", "ccc1"] {
            db.put(k, k).unwrap();
        }
        let keys =
            |db: &DB, p: &[u8]| -> Vec<Vec<u8>> { db.prefix_iterator(p).map(|r| r.unwrap().0.to_vec()).collect() };
        assert_eq!(keys(&db, b"aaa"), vec![b"aaa1".to_vec(), b"aaa2".to_vec()]);
        assert_eq!(keys(&db, b"bbb"), vec![b"bbb1".to_vec(), b"bbb2".to_vec()]);
        // A prefix no key has: the memtable bloom rules it out.
        let ctx = PerfContext::default();
        let before = ctx.metric(PerfMetric::BloomMemtableMissCount);
        assert!(keys(&db, b"zzz").is_empty());
        assert!(
            ctx.metric(PerfMetric::BloomMemtableMissCount) > before,
            "memtable bloom not consulted"
        );

        db.flush().unwrap();
        let before = ctx.metric(PerfMetric::BloomSstMissCount);
        assert!(keys(&db, b"zzz").is_empty());
        assert!(
            ctx.metric(PerfMetric::BloomSstMissCount) > before,
            "table prefix filter not consulted"
        );
        assert_eq!(keys(&db, b"ccc"), vec![b"ccc1".to_vec()]);

        let names = fs.list(std::path::Path::new("/fx")).unwrap();
        let options_file = names.iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
        let text = String::from_utf8(fs.read_all(&std::path::Path::new("/fx").join(options_file)).unwrap()).unwrap();
        assert!(text.contains("prefix_extractor=first three"), "{text}");
        let sst = names.iter().find(|n| n.ends_with(".sst")).unwrap();
        let bytes = fs.read_all(&std::path::Path::new("/fx").join(sst)).unwrap();
        assert!(
            bytes.windows(11).any(|w| w == b"first three"),
            "table does not record the name"
        );
        drop(db);

        let db = DB::open(&o, "/fx").unwrap();
        assert_eq!(keys(&db, b"aaa"), vec![b"aaa1".to_vec(), b"aaa2".to_vec()]);
    })
    .join()
    .unwrap();
}

/// The name of a function extractor must be writable into the OPTIONS file: an empty one, or one
/// with a nul byte or a newline, fails the open with InvalidArgument instead of panicking.
#[test]
fn function_extractor_with_unusable_name_is_refused_at_open() {
    fn whole(k: &[u8]) -> &[u8] {
        k
    }
    for name in ["", "bad\0name", "two\nlines"] {
        let fs = MemFs::new();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(std::sync::Arc::new(fs.clone()));
        o.set_prefix_extractor(shale::SliceTransform::create(name, whole, None));
        let e = DB::open(&o, "/bad").unwrap_err();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("prefix_extractor"),
            "{name:?}: {e}"
        );
    }
}

/// An extractor whose "prefix" is not a leading part of the key (here the last bytes) still
/// gives right answers for lookups with the memtable bloom and the table filters.
#[test]
fn suffix_extractor_keeps_lookups_right() {
    fn last_four(k: &[u8]) -> &[u8] {
        &k[k.len().saturating_sub(4)..]
    }
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(std::sync::Arc::new(fs.clone()));
    o.set_prefix_extractor(shale::SliceTransform::create("last four", last_four, None));
    o.set_memtable_prefix_bloom_ratio(0.1);
    let db = DB::open(&o, "/sfx").unwrap();
    db.put("key_sfx1", "a").unwrap();
    db.put("key_sfx2", "b").unwrap();
    assert_eq!(db.get("key_sfx1").unwrap(), Some(b"a".to_vec()));
    db.flush().unwrap();
    assert_eq!(db.get("key_sfx2").unwrap(), Some(b"b".to_vec()));
    assert_eq!(db.get("key_sfx3").unwrap(), None);
}
