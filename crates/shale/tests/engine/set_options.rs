//! Live options: `set_options` / `set_options_cf` / `set_db_options` with
//! RocksDB's names and string values, taking effect for later flushes, compactions and stall
//! computation, persisted to a new OPTIONS file; bad input is InvalidArgument naming the option.
#![allow(clippy::field_reassign_with_default)]

use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamilyDescriptor, Options, DB};

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

fn newest_options(fs: &MemFs) -> String {
    let names = fs.list(Path::new("/db")).unwrap();
    let newest = names
        .iter()
        .filter(|n| n.starts_with("OPTIONS-") && !n.ends_with(".dbtmp"))
        .max_by_key(|n| n[8..].parse::<u64>().unwrap_or(0))
        .unwrap();
    String::from_utf8(fs.read_all(&Path::new("/db").join(newest)).unwrap()).unwrap()
}

/// The lines of section `[head]` of an OPTIONS file.
fn section(text: &str, head: &str) -> Vec<String> {
    let head = format!("[{head}]");
    let start = text.find(&head).unwrap_or_else(|| panic!("{head} missing")) + head.len();
    let rest = &text[start..];
    let end = rest.find("\n[").unwrap_or(rest.len());
    rest[..end].lines().map(|l| l.trim().to_string()).collect()
}

fn l0(db: &DB) -> u64 {
    db.property_int_value("rocksdb.num-files-at-level0").unwrap().unwrap()
}

#[test]
fn a_smaller_write_buffer_makes_later_flushes() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 20);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, "/db").unwrap();
    db.set_options(&[("write_buffer_size", "64k")]).unwrap();
    let v = vec![b'x'; 1000];
    for i in 0..1000u32 {
        db.put(format!("k{i:05}"), &v).unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert!(
        l0(&db) >= 4,
        "only {} L0 files after 1 MB with a 64 KiB buffer",
        l0(&db)
    );
    assert!(section(&newest_options(&fs), "CFOptions \"default\"").contains(&"write_buffer_size=65536".to_string()));
}

#[test]
fn enabling_auto_compactions_compacts() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open(&o, "/db").unwrap();
    for i in 0..4 {
        db.put(format!("k{i}"), "v").unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0(&db), 4);
    db.set_options(&[("disable_auto_compactions", "false")]).unwrap();
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(l0(&db), 0);
    assert_eq!(db.get("k3").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn stall_triggers_take_effect_at_once() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    let db = DB::open(&o, "/db").unwrap();
    for i in 0..3 {
        db.put(format!("k{i}"), "v").unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.property_int_value("rocksdb.is-write-stopped").unwrap(), Some(0));
    // (L0 triggers apply only with auto compactions on, as RocksDB; a high compaction
    // trigger keeps the three files in L0.)
    db.set_options(&[
        ("disable_auto_compactions", "false"),
        ("level0_file_num_compaction_trigger", "100"),
        ("level0_slowdown_writes_trigger", "2"),
        ("level0_stop_writes_trigger", "3"),
    ])
    .unwrap();
    assert_eq!(db.property_int_value("rocksdb.is-write-stopped").unwrap(), Some(1));
    db.set_options(&[
        ("level0_slowdown_writes_trigger", "20"),
        ("level0_stop_writes_trigger", "36"),
    ])
    .unwrap();
    assert_eq!(db.property_int_value("rocksdb.is-write-stopped").unwrap(), Some(0));
    db.put("after", "v").unwrap();
}

#[test]
fn per_family_and_db_options_are_persisted() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open_cf_descriptors(&o, "/db", vec![ColumnFamilyDescriptor::new("f", Options::default())]).unwrap();
    let f = db.cf_handle("f").unwrap();
    db.set_options_cf(&f, &[("target_file_size_base", "8388608"), ("ttl", "3600")])
        .unwrap();
    db.set_db_options(&[("delayed_write_rate", "12345"), ("max_background_jobs", "3")])
        .unwrap();
    let text = newest_options(&fs);
    let fsec = section(&text, "CFOptions \"f\"");
    assert!(fsec.contains(&"target_file_size_base=8388608".to_string()), "{text}");
    assert!(fsec.contains(&"ttl=3600".to_string()), "{text}");
    let dsec = section(&text, "CFOptions \"default\"");
    assert!(!dsec.contains(&"target_file_size_base=8388608".to_string()), "{text}");
    let db_sec = section(&text, "DBOptions");
    assert!(db_sec.contains(&"delayed_write_rate=12345".to_string()), "{text}");
    assert!(db_sec.contains(&"max_background_jobs=3".to_string()), "{text}");
}

#[test]
fn bad_options_are_invalid_argument_naming_them_and_change_nothing() {
    let fs = MemFs::new();
    let db = DB::open(&mem_opts(&fs), "/db").unwrap();
    let before = newest_options(&fs);
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("no_such_option", "1")], "no_such_option"),
        (&[("num_levels", "3")], "num_levels"),
        (&[("comparator", "x")], "comparator"),
        (&[("write_buffer_size", "abc")], "write_buffer_size"),
        (&[("write_buffer_size", "-5")], "write_buffer_size"),
        (&[("disable_auto_compactions", "maybe")], "disable_auto_compactions"),
        (
            &[("max_bytes_for_level_multiplier", "0")],
            "max_bytes_for_level_multiplier",
        ),
        (&[("write_buffer_size", "1048576"), ("bogus", "1")], "bogus"),
        (&[("delayed_write_rate", "100")], "delayed_write_rate"),
    ];
    for (opts, name) in cases {
        let e = db.set_options(opts).unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains(name), "{opts:?}: {e}");
    }
    let e = db.set_db_options(&[("write_buffer_size", "1")]).unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("write_buffer_size"),
        "{e}"
    );
    let e = db.set_db_options(&[("max_background_jobs", "many")]).unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("max_background_jobs"),
        "{e}"
    );
    assert_eq!(newest_options(&fs), before, "a refused change was persisted");
}

#[test]
fn paused_background_work_runs_no_compaction_until_continued() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open(&o, "/db").unwrap();
    db.pause_background_work().unwrap();
    // Flushes need the background threads: refused while paused, not hung.
    db.put("a", "1").unwrap();
    let e = db.flush().unwrap_err();
    assert!(e.to_string().contains("paused"), "{e}");
    let e = db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap_err();
    assert!(e.to_string().contains("paused"), "{e}");
    // Waiting while paused: an error at once with abort_on_pause, else until the timeout.
    let mut abort = shale::WaitForCompactOptions::default();
    abort.set_abort_on_pause(true);
    let e = db.wait_for_compact(&abort).unwrap_err();
    assert_eq!(e.kind(), shale::ErrorKind::Incomplete, "{e}");
    let mut patient = shale::WaitForCompactOptions::default();
    patient.set_timeout(100_000);
    let t = std::time::Instant::now();
    let e = db.wait_for_compact(&patient).unwrap_err();
    assert_eq!(e.kind(), shale::ErrorKind::TimedOut, "{e}");
    assert!(t.elapsed() >= std::time::Duration::from_millis(100));
    // Without a timeout the wait outlasts the pause.
    std::thread::scope(|s| {
        let waiter = s.spawn(|| db.wait_for_compact(&Default::default()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiter.is_finished(), "the wait ended while paused");
        db.continue_background_work().unwrap();
        waiter.join().unwrap().unwrap();
    });
    db.flush().unwrap();
    db.put("b", "1").unwrap();
    db.pause_background_work().unwrap();
    db.pause_background_work().unwrap(); // nested
    db.continue_background_work().unwrap();
    assert!(db.flush().is_err(), "still paused once");
    db.continue_background_work().unwrap();
    let e = db.continue_background_work().unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    // `flush` flushes before waiting: "b" reaches a table, and its L0 file meets the trigger.
    let mut flush = shale::WaitForCompactOptions::default();
    flush.set_flush(true);
    db.wait_for_compact(&flush).unwrap();
    // Two L0 files met the trigger once work continued.
    assert_eq!(l0(&db), 0);
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn cancel_all_background_work_stops_flushes_and_the_wal_keeps_writes() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_max_background_jobs(1);
    o.set_level_zero_file_num_compaction_trigger(2);
    let db = DB::open(&o, "/db").unwrap();
    db.set_db_options(&[("max_background_jobs", "4")]).unwrap();
    for i in 0..4 {
        db.put(format!("k{i}"), "v").unwrap();
        db.flush().unwrap();
    }
    db.wait_for_compact(&Default::default()).unwrap();
    assert_eq!(db.get("k2").unwrap(), Some(b"v".to_vec()));
    db.cancel_all_background_work(true);
    db.put("late", "v").unwrap();
    let e = db.flush().unwrap_err();
    assert!(e.to_string().contains("cancel"), "{e}");
    drop(db);
    let db = DB::open(&mem_opts(&fs), "/db").unwrap();
    assert_eq!(db.get("late").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn writes_that_need_a_flush_fail_after_cancel_instead_of_hanging() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 10);
    o.set_max_write_buffer_number(2);
    let db = DB::open(&o, "/db").unwrap();
    db.cancel_all_background_work(true);
    let v = vec![b'x'; 1000];
    let mut failed = None;
    for i in 0..2000u32 {
        if let Err(e) = db.put(format!("k{i:05}"), &v) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("2 MB went into two 64 KiB memtables with no flush");
    assert!(e.to_string().contains("cancelled"), "{e}");
}

#[test]
fn set_options_on_a_dropped_family_is_refused() {
    let fs = MemFs::new();
    let db = DB::open(&mem_opts(&fs), "/db").unwrap();
    db.create_cf("t", &Options::default()).unwrap();
    let t = db.cf_handle("t").unwrap();
    db.drop_cf("t").unwrap();
    let e = db.set_options_cf(&t, &[("write_buffer_size", "1m")]).unwrap_err();
    assert!(e.is_invalid_argument() && e.to_string().contains("dropped"), "{e}");
    db.set_db_options(&[("delayed_write_rate", "1m")]).unwrap();
}
