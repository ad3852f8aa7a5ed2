//! A WAL keeps zeros written ahead of its records: under synced writes so that most
//! `fdatasync`s need not persist a new file size, and always when its records reach the OS
//! through a shared mapping of those zeros (mapped appends, the default; docs/architecture.md,
//! "Mapped WAL appends"). A crash leaves that zero tail in the file: Shale's recovery, RocksDB's
//! `ldb dump_wal` and RocksDB's own recovery (ldb, rocksdict) must all take it as the end of the
//! log, and a WAL closed normally must end at its last record.
//!
//! A missing RocksDB tool is a loud skip; with `SHALE_REQUIRE_ROCKSDB=1` it fails the test.

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::{DBRecoveryMode, Options, WriteOptions, DB};

fn wal_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

/// Values end in `x`, so a WAL ending at its last record ends in a non-zero byte.
fn value(i: usize) -> Vec<u8> {
    format!("value-{i:05}-{}x", "v".repeat(i % 37)).into_bytes()
}

/// `n` synced puts into a DB on the real file system, left open; the expected content.
fn write_synced(db: &DB, n: usize) -> Kv {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    let mut kv = Kv::new();
    for i in 0..n {
        let k = format!("key{i:05}").into_bytes();
        db.put_opt(&k, value(i), &wo).unwrap();
        kv.insert(k, value(i));
    }
    kv
}

/// A new DB on the real file system, in a temporary directory.
fn open_new() -> (tempfile::TempDir, Options, DB) {
    open_new_with(|_| {})
}

/// [`open_new`] with options changed by `set`.
fn open_new_with(set: impl FnOnce(&mut Options)) -> (tempfile::TempDir, Options, DB) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    set(&mut o);
    let db = DB::open(&o, dir.path()).unwrap();
    (dir, o, db)
}

#[test]
fn a_crashed_wal_with_a_zero_tail_recovers_in_shale_and_rocksdb() {
    let (dir, o, db) = open_new();
    let expect = write_synced(&db, 300);
    crash_and_check(dir.path(), &o, db, &expect);
}

/// Unsynced writes go through a shared mapping of zeros written ahead of the WAL's records
/// (`set_wal_mapped_appends`, the default): a process crash right after the writes (the file as
/// the kernel holds it) recovers every one of them, in Shale and in RocksDB.
#[test]
fn unsynced_writes_through_the_mapped_wal_survive_a_process_crash() {
    let (dir, o, db) = open_new();
    assert!(o.get_wal_mapped_appends(), "mapped appends are the default");
    let mut kv = Kv::new();
    // Past several 1 MiB stretches of zeros, so the mapping moves along the file.
    for i in 0..40_000 {
        let k = format!("key{i:05}").into_bytes();
        db.put(&k, value(i)).unwrap();
        kv.insert(k, value(i));
    }
    let wal = wal_files(dir.path()).pop().unwrap();
    assert!(std::fs::metadata(&wal).unwrap().len() > 3 << 20);
    crash_and_check(dir.path(), &o, db, &kv);
}

/// With mapped appends off, an unsynced WAL is written by `write` calls and has no zeros.
#[test]
fn a_wal_without_mapped_appends_ends_at_its_records_while_open() {
    let (dir, _, db) = open_new_with(|o| o.set_wal_mapped_appends(false));
    for i in 0..500 {
        db.put(format!("key{i:05}"), value(i)).unwrap();
    }
    let bytes = std::fs::read(wal_files(dir.path()).pop().unwrap()).unwrap();
    assert!(
        !bytes.is_empty() && *bytes.last().unwrap() != 0,
        "no zeros after the records"
    );
    // The same writes with mapped appends leave zeros after them.
    let (dir2, _, db2) = open_new();
    for i in 0..500 {
        db2.put(format!("key{i:05}"), value(i)).unwrap();
    }
    let mapped = std::fs::read(wal_files(dir2.path()).pop().unwrap()).unwrap();
    assert_eq!(mapped[..bytes.len()], bytes[..], "the same records");
    assert!(mapped.len() >= bytes.len() + (64 << 10) && mapped[bytes.len()..].iter().all(|&b| b == 0));
    drop((db, db2));
}

/// Copy `dir` while `db` is open (what a crash leaves) and check that the live WAL has a zero
/// tail, that Shale (in the default and the strictest recovery mode), `ldb dump_wal`, `ldb scan`
/// and rocksdict recover exactly `expect` from the copy, and that the WAL closed normally ends at
/// its last record.
fn crash_and_check(dir: &Path, o: &Options, db: DB, expect: &Kv) {
    let expect = expect.clone();
    // The state a crash (or a power loss after the last sync) leaves: a copy while the DB is open.
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir, crashed.path());
    let wals = wal_files(crashed.path());
    let live = wals.last().expect("a WAL").clone();
    let bytes = std::fs::read(&live).unwrap();
    let data_end = bytes.iter().rposition(|&b| b != 0).unwrap() + 1;
    assert!(
        bytes.len() - data_end >= 64 << 10,
        "the live WAL keeps zeros ahead of its records ({} bytes, data ends at {data_end})",
        bytes.len()
    );

    // Shale recovers every synced write from the crashed copy.
    {
        let shale_copy = tempfile::tempdir().unwrap();
        copy_dir(crashed.path(), shale_copy.path());
        let db2 = DB::open(o, shale_copy.path()).unwrap();
        assert_same(
            &shale_dump(&db2),
            &expect,
            "Shale after recovery from a zero-tailed WAL",
        );
    }
    // The strictest mode too: the zeros end in whole log blocks, so no torn header at the end.
    {
        let strict_copy = tempfile::tempdir().unwrap();
        copy_dir(crashed.path(), strict_copy.path());
        let mut strict = o.clone();
        strict.set_wal_recovery_mode(DBRecoveryMode::AbsoluteConsistency);
        let db2 = DB::open(&strict, strict_copy.path()).unwrap();
        assert_same(&shale_dump(&db2), &expect, "Shale, absolute consistency");
    }

    // Closed normally, the WAL is cut back to its records.
    drop(db);
    if let Some(w) = wal_files(dir).into_iter().find(|w| w.file_name() == live.file_name()) {
        let closed = std::fs::read(&w).unwrap();
        assert_eq!(closed.len(), data_end, "a closed WAL ends at its last record");
        assert_eq!(closed[..], bytes[..data_end]);
    }

    let Some([ldb, python]) = find(["ldb", ROCKSDICT]) else {
        return;
    };
    // RocksDB's log reader: every put of the zero-tailed WAL, in order, and nothing else.
    let out = run(Command::new(&ldb)
        .arg("dump_wal")
        .arg(format!("--walfile={}", live.display()))
        .arg("--print_value"));
    let puts: Vec<(Vec<u8>, Vec<u8>)> = out
        .lines()
        .filter_map(|l| {
            let mut p = l.split(" : ");
            let (_, k, v) = (p.next()?, p.next()?, p.next()?);
            Some((unhex(k), unhex(v.trim())))
        })
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = expect.clone().into_iter().collect();
    assert_eq!(puts, want, "ldb dump_wal of the zero-tailed WAL");
    // RocksDB 7.8 (ldb) and 9.x (rocksdict) recover the crashed DB.
    assert_same(&ldb_scan(&ldb, crashed.path()), &expect, "ldb scan after recovery");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_dump.py");
    let rd_copy = tempfile::tempdir().unwrap();
    copy_dir(crashed.path(), rd_copy.path());
    let got: Kv = run(Command::new(&python).arg(script).arg(rd_copy.path()))
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (unhex(k), unhex(v)))
        .collect();
    assert_same(&got, &expect, "rocksdict after recovery");
}

#[test]
fn writes_after_a_memtable_switch_go_to_a_new_wal_and_the_old_one_is_cut() {
    let (dir, o, db) = open_new();
    let mut expect = write_synced(&db, 50);
    // The flush switches the memtable and the WAL: the old WAL is closed (and deleted).
    db.flush().unwrap();
    expect.extend(write_synced(&db, 20));
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    drop(db);
    let db2 = DB::open(&o, crashed.path()).unwrap();
    assert_same(&shale_dump(&db2), &expect, "Shale after a switch and a crash");
    drop(db2);
    // A reopened DB's WALs (the last one closed) have no zero tail.
    let db3 = DB::open(&o, dir.path()).unwrap();
    assert_same(&shale_dump(&db3), &expect, "Shale after a clean close");
    drop(db3);
    for w in wal_files(dir.path()) {
        let b = std::fs::read(&w).unwrap();
        assert!(b.is_empty() || *b.last().unwrap() != 0, "{} ends in zeros", w.display());
    }
}
