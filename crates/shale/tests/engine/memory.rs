//! One memory budget: memtables under a write buffer manager (`db_write_buffer_size` or a shared
//! `WriteBufferManager` that may stall writers), and a block cache that holds or is charged for
//! data, index and filter blocks — with the memory properties that report them.

use crate::common;

use std::sync::Arc;

use common::*;
use shale::fs::testing::MemFs;
use shale::{Options, ReadOptions, WriteBufferManager, DB};

fn prop(db: &DB, name: &str) -> u64 {
    db.property_int_value(name)
        .unwrap()
        .unwrap_or_else(|| panic!("no property {name}"))
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:010}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_007).into_bytes()
}

fn value(i: u64, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// Memtable options with a big `write_buffer_size` so that only the budget switches memtables.
fn budget_opts(fs: &MemFs) -> Options {
    {
        let mut o = mem_opts(fs);
        o.set_write_buffer_size(8 << 20);
        o.set_max_write_buffer_number(8);
        o.set_level_zero_file_num_compaction_trigger(4);
        o.set_target_file_size_base(1 << 20);
        o.set_max_bytes_for_level_base(4 << 20);
        o
    }
}

#[test]
fn memtables_stay_within_the_budget_while_writing_far_more() {
    let fs = MemFs::new();
    let budget = 256 << 10;
    let wbm = WriteBufferManager::new(budget, true);
    let opts = {
        let mut o = budget_opts(&fs);
        o.set_write_buffer_manager(wbm.clone());
        o
    };
    // arena blocks are an eighth of the budget
    let arena_block = budget / 8;
    let db = DB::open(&opts, dir()).unwrap();
    let mut model = Model::new();
    let mut max_seen = 0;
    for i in 0..20_000u64 {
        let (k, v) = (key(i), value(i, 200));
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        let used = wbm.memory_usage();
        max_seen = max_seen.max(used);
        assert!(
            used <= budget + arena_block + 1024,
            "memtables use {used} bytes, budget {budget}"
        );
        if i % 1000 == 0 {
            let all = prop(&db, "rocksdb.size-all-mem-tables") as usize;
            assert!(all <= budget + arena_block + 1024, "size-all-mem-tables {all}");
            assert!(prop(&db, "rocksdb.cur-size-all-mem-tables") as usize <= all);
        }
    }
    // ~4.6 MB written through a 256 KiB budget: many flushes, the budget was used
    assert!(max_seen > budget / 2, "{max_seen}");
    db.flush().unwrap();
    assert_eq!(dump(&db), model);
    drop(db);
    assert_eq!(wbm.memory_usage(), 0, "memtables of a closed DB are uncharged");
    let db = DB::open(&opts, dir()).unwrap();
    assert_eq!(dump(&db), model);
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn db_write_buffer_size_switches_memtables_early() {
    let fs = MemFs::new();
    let budget = 128 << 10;
    let opts = {
        let mut o = budget_opts(&fs);
        o.set_db_write_buffer_size(budget);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut model = Model::new();
    for i in 0..5_000u64 {
        let (k, v) = (key(i), value(i, 100));
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        let active = prop(&db, "rocksdb.cur-size-active-mem-table") as usize;
        // switched once above 7/8 of the budget (plus the entry and arena block that crossed it)
        assert!(active <= budget / 8 * 7 + budget / 8 + 1024, "active memtable {active}");
    }
    db.wait_for_compact(&Default::default()).unwrap();
    let files: u64 = (0..7)
        .map(|l| prop(&db, &format!("rocksdb.num-files-at-level{l}")))
        .sum();
    assert!(files > 0, "no flush although 8 MiB write_buffer_size was never reached");
    assert_eq!(dump(&db), model);
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert_eq!(dump(&db), model);
}

#[test]
fn a_shared_write_buffer_manager_bounds_two_dbs() {
    let fs = MemFs::new();
    let budget = 192 << 10;
    let wbm = WriteBufferManager::new(budget, true);
    let open = |d: &str| {
        let opts = {
            let mut o = budget_opts(&fs);
            o.set_write_buffer_manager(wbm.clone());
            o
        };
        (DB::open(&opts, d).unwrap(), opts)
    };
    let (a, opts_a) = open("/a");
    let (b, _) = open("/b");
    let threads: Vec<_> = [Arc::new(a), Arc::new(b)]
        .into_iter()
        .enumerate()
        .map(|(n, db)| {
            let wbm = wbm.clone();
            std::thread::spawn(move || {
                for i in 0..8_000u64 {
                    db.put(key(i * 2 + n as u64), value(i, 150)).unwrap();
                    let used = wbm.memory_usage();
                    // each DB may be one arena block and one write past the budget
                    assert!(used <= budget + 2 * (budget / 8 + 1024), "{used}");
                }
                db
            })
        })
        .collect();
    let dbs: Vec<Arc<DB>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (n, db) in dbs.iter().enumerate() {
        for i in (0..8_000u64).step_by(101) {
            assert_eq!(db.get(key(i * 2 + n as u64)).unwrap(), Some(value(i, 150)));
        }
    }
    drop(dbs);
    assert_eq!(wbm.memory_usage(), 0);
    let db = DB::open(&opts_a, "/a").unwrap();
    assert_eq!(dump(&db).len(), 8_000);
}

/// Many small tables and a small cache: reads stay correct and the cache within its capacity.
fn many_tables(extra: Options) -> (DB, Model, Options) {
    let opts = {
        let mut o = extra;
        o.set_disable_auto_compactions(true);
        o.set_level_zero_slowdown_writes_trigger(1000);
        o.set_level_zero_stop_writes_trigger(1000);
        o.set_write_buffer_size(16 << 10);
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(512 << 10);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut model = Model::new();
    for i in 0..6_000u64 {
        let (k, v) = (key(i), value(i, 60));
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    assert!(prop(&db, "rocksdb.num-files-at-level0") >= 30, "too few tables");
    (db, model, opts)
}

fn read_all_bounded(db: &DB, model: &Model, rounds: usize) {
    let cap = prop(db, "rocksdb.block-cache-capacity");
    let mut rng = Rng::new(7);
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for i in 0..rounds {
        let k = keys[rng.below(keys.len() as u64) as usize];
        assert_eq!(db.get(k).unwrap().as_ref(), model.get(k));
        assert_eq!(db.get(format!("{}-missing", String::from_utf8_lossy(k))).unwrap(), None);
        if i % 200 == 0 {
            let usage = prop(db, "rocksdb.block-cache-usage");
            assert!(usage <= cap + 8192, "block cache usage {usage} > capacity {cap}");
        }
    }
}

#[test]
fn block_cache_is_charged_for_table_held_index_and_filter_blocks() {
    let fs = MemFs::new();
    let (db, model, opts) = many_tables(mem_opts(&fs));
    // a first read of each table opens it: its index and filter are charged to the cache
    for k in model.keys().step_by(50) {
        db.get(k).unwrap();
    }
    let readers = prop(&db, "rocksdb.estimate-table-readers-mem");
    let usage = prop(&db, "rocksdb.block-cache-usage");
    let pinned = prop(&db, "rocksdb.block-cache-pinned-usage");
    assert!(readers > 0);
    assert!(pinned > 0 && pinned <= usage, "pinned {pinned} usage {usage}");
    // the reservation is the index and filter part of the readers' memory
    assert!(pinned <= readers, "pinned {pinned} readers {readers}");
    read_all_bounded(&db, &model, 6_000);
    assert_eq!(dump(&db), model);
    drop(db);
    let db = DB::open(&opts, dir()).unwrap();
    assert_eq!(dump(&db), model);
}

#[test]
fn index_and_filter_blocks_live_in_the_block_cache() {
    let fs = MemFs::new();
    let (db, model, opts) = many_tables({
        let mut o = mem_opts(&fs);
        let mut bbo = o.get_block_based_options();
        bbo.set_cache_index_and_filter_blocks(true);
        o.set_block_based_table_factory(&bbo);
        o
    });
    for k in model.keys().step_by(50) {
        db.get(k).unwrap();
    }
    let in_cache_readers = prop(&db, "rocksdb.estimate-table-readers-mem");
    read_all_bounded(&db, &model, 6_000);
    // a tiny cache: index and filter blocks are evicted by data blocks and reloaded
    drop(db);
    let small = {
        let mut o = opts.clone();
        let mut bbo = o.get_block_based_options();
        bbo.set_lru_cache_capacity(32 << 10);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&small, dir()).unwrap();
    read_all_bounded(&db, &model, 3_000);
    assert_eq!(dump(&db), model);
    drop(db);

    // the same tables with index and filter held by the readers
    let held = {
        let mut o = opts.clone();
        let mut bbo = o.get_block_based_options();
        bbo.set_cache_index_and_filter_blocks(false);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&held, dir()).unwrap();
    for k in model.keys().step_by(50) {
        db.get(k).unwrap();
    }
    let held_readers = prop(&db, "rocksdb.estimate-table-readers-mem");
    assert!(
        in_cache_readers < held_readers,
        "in cache {in_cache_readers}, held {held_readers}"
    );
    drop(db);

    // pinned L0 index and filter blocks count as pinned usage
    let pin = {
        let mut o = opts;
        let mut bbo = o.get_block_based_options();
        bbo.set_pin_l0_filter_and_index_blocks_in_cache(true);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&pin, dir()).unwrap();
    for k in model.keys().step_by(50) {
        db.get(k).unwrap();
    }
    assert!(prop(&db, "rocksdb.block-cache-pinned-usage") > 0);
    read_all_bounded(&db, &model, 2_000);
    assert_eq!(dump(&db), model);
}

#[test]
fn memtable_properties_follow_switches_flushes_and_pins() {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_write_buffer_size(1 << 20);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let empty = prop(&db, "rocksdb.cur-size-all-mem-tables");
    for i in 0..2_000u64 {
        db.put(key(i), value(i, 100)).unwrap();
    }
    let cur = prop(&db, "rocksdb.cur-size-all-mem-tables");
    assert!(cur > empty + 200_000, "{empty} -> {cur}");
    assert!(prop(&db, "rocksdb.size-all-mem-tables") >= cur);
    // an iterator pins the memtable: after the flush it is no longer "cur" but still "all"
    let mut it = db.raw_iterator_opt(ReadOptions::default());
    it.seek_to_first();
    assert!(it.valid());
    db.flush().unwrap();
    let cur_after = prop(&db, "rocksdb.cur-size-all-mem-tables");
    let all_after = prop(&db, "rocksdb.size-all-mem-tables");
    assert!(cur_after < cur / 10, "{cur_after}");
    assert!(all_after >= cur, "pinned memtable not counted: {all_after} < {cur}");
    drop(it);
    assert!(prop(&db, "rocksdb.size-all-mem-tables") < cur / 10);
    // A read opens the flushed table (wherever a background trivial move may have put it by
    // now); its reader's memory is then counted.
    assert_eq!(db.get(key(7)).unwrap(), Some(value(7, 100)));
    assert!(prop(&db, "rocksdb.estimate-table-readers-mem") > 0);
}
