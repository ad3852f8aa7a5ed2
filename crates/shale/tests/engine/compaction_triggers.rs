//! Compactions triggered by deletions (the `CompactOnDeletionCollector` marks), by file age
//! (universal periodic compaction) and the amplification figures of `rocksdb.stats`, through a
//! real DB on `MemFs`. The pickers' rules are tested without I/O in
//! `db/picker_triggers_tests.rs`.

use crate::common;

use common::*;
use shale::fs::testing::MemFs;
use shale::{DBCompactionStyle, Options, UniversalCompactOptions, DB};

fn sst_bytes(db: &DB) -> u64 {
    db.property_int_value("rocksdb.total-sst-files-size").unwrap().unwrap()
}

fn universal(fs: &MemFs, trigger: i32) -> Options {
    let mut o = mem_opts(fs);
    o.set_compaction_style(DBCompactionStyle::Universal);
    o.set_level_zero_file_num_compaction_trigger(trigger);
    o.set_universal_compaction_options(&UniversalCompactOptions::default());
    o
}

/// Keys 0..2000 compacted into one run at the bottom, then keys 500..1500 deleted and flushed:
/// returns the table bytes before the deletions.
fn fill_then_delete_a_dense_range(db: &DB) -> u64 {
    for i in 0..2000 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let before = sst_bytes(db);
    for i in 500..1500 {
        db.delete(kv(i).0).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    before
}

fn check_data(db: &DB) {
    let m = dump(db);
    assert_eq!(m.len(), 1000);
    assert_eq!(m.get(&kv(499).0), Some(&kv(499).1));
    assert_eq!(m.get(&kv(500).0), None);
}

#[test]
fn universal_compacts_files_dense_in_deletions_and_drops_the_tombstones() {
    // Without the collector: the tombstone files stay in L0 (fewer runs than the trigger).
    let fs = MemFs::new();
    let db = DB::open(&universal(&fs, 8), dir()).unwrap();
    fill_then_delete_a_dense_range(&db);
    let levels = level_files(&db);
    assert!(levels[0] > 0, "{levels:?}");
    check_data(&db);

    // With it: each flushed file is marked, compacted into the last level, tombstones dropped.
    let fs = MemFs::new();
    let mut o = universal(&fs, 8);
    o.add_compact_on_deletion_collector_factory(100, 50, 0.0);
    let db = DB::open(&o, dir()).unwrap();
    let before = fill_then_delete_a_dense_range(&db);
    let levels = level_files(&db);
    assert_eq!(levels[..6].iter().sum::<u64>(), 0, "{levels:?}");
    assert!(sst_bytes(&db) < before * 3 / 4, "{} -> {}", before, sst_bytes(&db));
    check_data(&db);
    // The LOG names RocksDB's reason.
    let log = String::from_utf8(shale::fs::FileSystem::read_all(&fs, &dir().join("LOG")).unwrap()).unwrap();
    assert!(log.contains("FilesMarkedForCompaction"), "{log}");
}

#[test]
fn the_mark_is_kept_in_the_manifest_across_a_reopen() {
    let fs = MemFs::new();
    let mut o = universal(&fs, 8);
    o.add_compact_on_deletion_collector_factory(100, 50, 0.0);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, dir()).unwrap();
    fill_then_delete_a_dense_range(&db);
    assert!(level_files(&db)[0] > 0);
    drop(db);
    // Reopened without the collector and with compactions on: the marked files still go.
    let db = DB::open(&universal(&fs, 8), dir()).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let levels = level_files(&db);
    assert_eq!(levels[..6].iter().sum::<u64>(), 0, "{levels:?}");
    check_data(&db);
}

#[test]
fn leveled_compacts_files_dense_in_deletions() {
    let opts = |fs: &MemFs, collector: bool| {
        let mut o = mem_opts(fs);
        o.set_level_zero_file_num_compaction_trigger(10);
        if collector {
            o.add_compact_on_deletion_collector_factory(100, 50, 0.0);
        }
        o
    };
    let fs = MemFs::new();
    let db = DB::open(&opts(&fs, false), dir()).unwrap();
    fill_then_delete_a_dense_range(&db);
    assert!(level_files(&db)[0] > 0);

    let fs = MemFs::new();
    let db = DB::open(&opts(&fs, true), dir()).unwrap();
    let before = fill_then_delete_a_dense_range(&db);
    let levels = level_files(&db);
    assert_eq!(levels[0], 0, "{levels:?}");
    assert!(sst_bytes(&db) < before * 3 / 4, "{} -> {}", before, sst_bytes(&db));
    check_data(&db);
}

#[test]
fn universal_periodic_compaction_merges_old_runs() {
    let fs = MemFs::new();
    let mut o = universal(&fs, 8);
    o.set_periodic_compaction_seconds(1);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, dir()).unwrap();
    for round in 0..3u64 {
        for i in 0..100 {
            let (k, v) = kv(i * 3 + round);
            db.put(&k, &v).unwrap();
        }
        db.flush().unwrap();
    }
    assert_eq!(level_files(&db)[0], 3);
    // Older than a second (times have a one-second grain): compacted although there are
    // fewer runs than the trigger.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    let levels = level_files(&db);
    assert_eq!(levels[..6].iter().sum::<u64>(), 0, "{levels:?}");
    assert!(levels[6] > 0, "{levels:?}");
    assert_eq!(dump(&db).len(), 300);
    // The last run alone, once it is old in turn, is rewritten in place (L6 -> L6).
    let before: Vec<String> = db.live_files().unwrap().into_iter().map(|f| f.name).collect();
    std::thread::sleep(std::time::Duration::from_millis(2200));
    db.wait_for_compact(&Default::default()).unwrap();
    let after: Vec<String> = db.live_files().unwrap().into_iter().map(|f| f.name).collect();
    assert!(after.iter().all(|n| !before.contains(n)), "{before:?} -> {after:?}");
    let levels = level_files(&db);
    assert_eq!(levels[..6].iter().sum::<u64>(), 0, "{levels:?}");
    assert_eq!(dump(&db).len(), 300);
}

/// The row of `rocksdb.stats`'s compaction table that starts with `name`, split on spaces.
fn row(stats: &str, name: &str) -> Vec<String> {
    stats
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|w| w.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in {stats}"))
}

fn space_amp(stats: &str) -> f64 {
    let line = stats
        .lines()
        .find(|l| l.starts_with("Space amplification estimate:"))
        .unwrap_or_else(|| panic!("{stats}"));
    line["Space amplification estimate:".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn universal_stats_show_the_run_score_write_and_space_amplification() {
    let fs = MemFs::new();
    let mut o = universal(&fs, 4);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, dir()).unwrap();
    let stats = |db: &DB| db.property_value("rocksdb.stats").unwrap().unwrap();
    for round in 0..3u64 {
        for i in 0..80 {
            db.put(kv(i).0, kv(i + round).1).unwrap();
        }
        db.flush().unwrap();
    }
    // Three runs of one file each, trigger 4: L0's score is 3 / 4.
    let s = stats(&db);
    assert_eq!(row(&s, "L0")[3], "0.75", "{s}");
    // Three equal runs: the two newer hold twice the oldest's bytes.
    let amp = space_amp(&s);
    assert!((1.8..2.2).contains(&amp), "{amp} {s}");
    // After merging everything into one run: no space amplification, and more bytes written
    // (flushes + the compaction) than flushed.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let s = stats(&db);
    assert_eq!(space_amp(&s), 0.0, "{s}");
    let sum = row(&s, "Sum");
    // The header as RocksDB's (a subset): the Sum row has no Score, so its W-Amp is one
    // column earlier.
    let header: Vec<&str> = s
        .lines()
        .find(|l| l.starts_with("Level"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!((header[8], header[10]), ("Wnew(GB)", "W-Amp"), "{s}");
    let wamp: f64 = sum[9].parse().unwrap();
    assert!(wamp > 1.0, "{wamp} {s}");
    // One run left (in L6): the score counts it.
    assert_eq!(row(&s, "L0")[3], "0.25", "{s}");
    assert_eq!(row(&s, "L6")[1], "1", "{s}");
}

#[test]
fn fifo_intra_l0_output_is_one_file_however_large() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_compaction_style(DBCompactionStyle::Fifo);
    let mut f = shale::FifoCompactOptions::default();
    f.set_max_table_files_size(1 << 30);
    f.set_allow_compaction(true);
    o.set_fifo_compaction_options(&f);
    o.set_write_buffer_size(64 << 20);
    o.set_max_compaction_bytes(1 << 30);
    o.set_level_zero_file_num_compaction_trigger(18);
    o.set_disable_auto_compactions(true);
    o.set_compression_type(shale::DBCompressionType::None);
    let db = DB::open(&o, dir()).unwrap();
    // 18 files of about 1.1 MiB: one intra-L0 compaction of about 20 MiB.
    let mut rng = Rng::new(7);
    for file in 0..18u64 {
        for i in 0..1100u64 {
            let v: Vec<u8> = (0..1000).map(|_| rng.below(256) as u8).collect();
            db.put(format!("k{file:02}-{i:05}"), v).unwrap();
        }
        db.flush().unwrap();
    }
    db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    // RocksDB's FIFO pick passes a 16 MiB output limit, but compaction outputs to L0 are never
    // split (`CompactionOutputs::ShouldStopBefore`): one file of all 18 inputs' data. Cut
    // outputs would be merged again by the next intra-L0 pick (write amplification 15+).
    let files = db.live_files().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].size > 18 << 20, "{files:?}");
    assert_eq!(files[0].level, 0, "{files:?}");
    assert_eq!(dump(&db).len(), 18 * 1100);
}

#[test]
fn periodic_compaction_seconds_is_a_mutable_option_written_to_the_options_file() {
    let fs = MemFs::new();
    let db = DB::open(&universal(&fs, 4), dir()).unwrap();
    db.set_options(&[("periodic_compaction_seconds", "3600")]).unwrap();
    let name = files(&fs, dir())
        .into_iter()
        .filter(|n| n.starts_with("OPTIONS-"))
        .max()
        .unwrap();
    let text = String::from_utf8(shale::fs::FileSystem::read_all(&fs, &dir().join(&name)).unwrap()).unwrap();
    assert!(text.contains("periodic_compaction_seconds=3600"), "{text}");
    let e = db.set_options(&[("periodic_compaction_seconds", "soon")]).unwrap_err();
    assert_eq!(e.kind(), shale::ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("periodic_compaction_seconds"), "{e}");
}

#[test]
fn periodic_compaction_and_ttl_need_block_based_tables() {
    let fs = MemFs::new();
    let mut o = universal(&fs, 4);
    o.set_plain_table_factory(&shale::PlainTableFactoryOptions::default());
    o.set_periodic_compaction_seconds(60);
    let Err(e) = DB::open(&o, dir()) else {
        panic!("plain tables with periodic compaction opened");
    };
    assert_eq!(e.kind(), shale::ErrorKind::NotSupported);
    assert!(e.to_string().contains("periodic_compaction_seconds"), "{e}");
    // The same for a TTL.
    o.set_periodic_compaction_seconds(0);
    o.set_ttl(60);
    let Err(e) = DB::open(&o, dir()) else {
        panic!("plain tables with a ttl opened");
    };
    assert_eq!(e.kind(), shale::ErrorKind::NotSupported);
    assert!(e.to_string().contains("ttl"), "{e}");
    // Block-based tables: fine.
    let mut o = universal(&fs, 4);
    o.set_ttl(60);
    o.set_periodic_compaction_seconds(60);
    DB::open(&o, dir()).unwrap();
}

#[test]
fn fifo_ttl_ages_a_flushed_file_by_its_oldest_key() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_compaction_style(DBCompactionStyle::Fifo);
    o.set_max_open_files(-1);
    o.set_ttl(2);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"old", b"1").unwrap();
    // The key waits in the memtable past the TTL: flushed now, its file's data is already too
    // old (as RocksDB, which ages a flushed table by its memtable's oldest key).
    std::thread::sleep(std::time::Duration::from_millis(3200));
    db.put(b"new", b"2").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(level_files(&db)[0], 0);
    assert_eq!(db.get(b"old").unwrap(), None);
    // A file whose keys are fresh stays.
    db.put(b"fresh", b"3").unwrap();
    db.flush().unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(db.get(b"fresh").unwrap(), Some(b"3".to_vec()));
}

#[test]
fn fifo_stats_score_l0_by_size_and_file_count() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_compaction_style(DBCompactionStyle::Fifo);
    let mut f = shale::FifoCompactOptions::default();
    f.set_max_table_files_size(1 << 30);
    o.set_fifo_compaction_options(&f);
    o.set_level_zero_file_num_compaction_trigger(4);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, dir()).unwrap();
    for round in 0..2u64 {
        for i in 0..50 {
            db.put(kv(i).0, kv(i + round).1).unwrap();
        }
        db.flush().unwrap();
    }
    let stats = |db: &DB| db.property_value("rocksdb.stats").unwrap().unwrap();
    // Two small files of a 1 GiB budget: the score is their size share, about 0.
    let s = stats(&db);
    assert_eq!(row(&s, "L0")[3], "0.00", "{s}");
    drop(db);
    // With allow_compaction the file count counts too: 2 files / trigger 4.
    f.set_allow_compaction(true);
    o.set_fifo_compaction_options(&f);
    let db = DB::open(&o, dir()).unwrap();
    let s = stats(&db);
    assert_eq!(row(&s, "L0")[3], "0.50", "{s}");
    drop(db);
    // A budget the files overflow: bytes / budget.
    let bytes = {
        let db = DB::open(&o, dir()).unwrap();
        sst_bytes(&db)
    };
    f.set_max_table_files_size(bytes / 2);
    o.set_fifo_compaction_options(&f);
    let db = DB::open(&o, dir()).unwrap();
    let s = stats(&db);
    assert_eq!(row(&s, "L0")[3], "2.00", "{s}");
}

#[test]
fn leveled_periodic_compaction_rewrites_old_files() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_periodic_compaction_seconds(1);
    let db = DB::open(&o, dir()).unwrap();
    for i in 0..300 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let before: Vec<String> = db.live_files().unwrap().into_iter().map(|f| f.name).collect();
    // Older than a second: each file is rewritten (in the last level, in place).
    std::thread::sleep(std::time::Duration::from_millis(2200));
    db.wait_for_compact(&Default::default()).unwrap();
    let after: Vec<String> = db.live_files().unwrap().into_iter().map(|f| f.name).collect();
    assert!(after.iter().all(|n| !before.contains(n)), "{before:?} -> {after:?}");
    assert_eq!(dump(&db).len(), 300);
    let log = String::from_utf8(shale::fs::FileSystem::read_all(&fs, &dir().join("LOG")).unwrap()).unwrap();
    assert!(log.contains("PeriodicCompaction"), "{log}");
}

#[test]
fn leveled_ttl_moves_old_l0_files_down() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_level_zero_file_num_compaction_trigger(10);
    o.set_ttl(1);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"z", b"0").unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    assert_eq!(level_files(&db)[0], 1);
    // Older than the TTL, the L0 file moves into the base level (as RocksDB, a file of the last
    // non-empty level would stay: hence the file in L6).

    std::thread::sleep(std::time::Duration::from_millis(2200));
    db.wait_for_compact(&Default::default()).unwrap();
    let levels = level_files(&db);
    assert_eq!(levels[0], 0, "{levels:?}");
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}
