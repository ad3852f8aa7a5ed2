//! Checkpoints, backups and the file-deletion switch:
//! a checkpoint taken while another thread writes is one point in time (every write
//! acknowledged before it started is there, a cross-family batch is all or nothing), holds
//! every family and the data only in the WAL, refuses an existing directory, and a crash in the
//! middle leaves the source DB intact; backups share table files, verify checksums, purge,
//! restore, and survive a crash in the middle of a create; RocksDB's `ldb` and rocksdict open a
//! Shale checkpoint with families.

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use rocksdb_tools::*;
use shale::backup::BackupEngine;
use shale::backup::BackupEngineOptions;
use shale::backup::RestoreOptions;
use shale::checkpoint::Checkpoint;
use shale::fs::FileSystem;
use shale::fs::PosixFs;
use shale::{Env, Options, WriteBatch, DB};

use crate::common;
use common::crash_after::CrashAfter;

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

fn open_all(path: &Path) -> DB {
    let names = DB::list_cf(&opts(), path).unwrap();
    DB::open_cf(&opts(), path, names).unwrap()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn ssts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

/// Three families (one dropped before the checkpoint), data flushed and in the memtables: the
/// checkpoint lists the live families and holds every key; its tables are hard links.
#[test]
fn checkpoint_holds_every_family_and_key() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let db = DB::open_cf(&opts(), &src, ["default", "a", "gone"]).unwrap();
    let (a, gone) = (db.cf_handle("a").unwrap(), db.cf_handle("gone").unwrap());
    for i in 0..200 {
        db.put(key(i), b"d").unwrap();
        db.put_cf(&a, key(i), b"a").unwrap();
        db.put_cf(&gone, key(i), b"g").unwrap();
    }
    db.flush().unwrap();
    db.put(b"late", b"x").unwrap();
    drop(gone);
    db.drop_cf("gone").unwrap();
    let ck = d.path().join("ck");
    Checkpoint::new(&db).unwrap().create_checkpoint(&ck).unwrap();
    drop(a);
    drop(db);
    assert_eq!(DB::list_cf(&opts(), &ck).unwrap(), vec!["default", "a"]);
    let c = open_all(&ck);
    let a = c.cf_handle("a").unwrap();
    for i in 0..200 {
        assert_eq!(c.get(key(i)).unwrap().as_deref(), Some(&b"d"[..]));
        assert_eq!(c.get_cf(&a, key(i)).unwrap().as_deref(), Some(&b"a"[..]));
    }
    assert_eq!(c.get(b"late").unwrap().as_deref(), Some(&b"x"[..]));
    // log_size_for_flush = 0 flushed everything: the tables hold all of it.
    assert!(!ssts(&ck).is_empty());
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let f = ssts(&src)[0].clone();
        if ck.join(&f).exists() {
            assert!(
                std::fs::metadata(ck.join(&f)).unwrap().nlink() >= 2,
                "{f} is a hard link"
            );
        }
    }
}

/// With `log_size_for_flush` above the WAL size nothing is flushed: the data only in the WAL
/// reaches the checkpoint through the copied WAL.
#[test]
fn checkpoint_copies_wal_only_data() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let db = DB::open_cf(&opts(), &src, ["default", "a"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    for i in 0..100 {
        db.put(key(i), b"d").unwrap();
        db.put_cf(&a, key(i), b"a").unwrap();
    }
    let ck = d.path().join("ck");
    Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint_with_log_size(&ck, u64::MAX)
        .unwrap();
    assert!(db.live_files().unwrap().is_empty(), "nothing was flushed");
    assert!(ssts(&ck).is_empty());
    let wals = db.get_sorted_wal_files().unwrap();
    assert!(!wals.is_empty() && wals.last().unwrap().size > 0);
    assert_eq!(wals[0].start_sequence, Some(1));
    // The live WAL's size is its records' (the checkpoint copied exactly those), not its
    // file's, which keeps zeros written ahead of them (mapped appends).
    let live = wals.last().unwrap();
    let name = format!("{:06}.log", live.number);
    assert!(std::fs::metadata(src.join(&name)).unwrap().len() > live.size);
    assert_eq!(std::fs::metadata(ck.join(&name)).unwrap().len(), live.size);
    drop(a);
    drop(db);
    let c = open_all(&ck);
    let a = c.cf_handle("a").unwrap();
    for i in 0..100 {
        assert_eq!(c.get(key(i)).unwrap().as_deref(), Some(&b"d"[..]));
        assert_eq!(c.get_cf(&a, key(i)).unwrap().as_deref(), Some(&b"a"[..]));
    }
}

#[test]
fn checkpoint_into_existing_directory_is_invalid_argument() {
    let d = tempfile::tempdir().unwrap();
    let db = DB::open(&opts(), d.path().join("db")).unwrap();
    db.put(b"k", b"v").unwrap();
    let ck = d.path().join("ck");
    std::fs::create_dir(&ck).unwrap();
    let e = Checkpoint::new(&db).unwrap().create_checkpoint(&ck).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains(&ck.display().to_string()), "{e}");
}

/// A writer thread writes batches that put key i into two families; checkpoints (one flushing,
/// one copying the WALs) taken meanwhile hold every batch acknowledged before they started, and
/// each batch whole or not at all.
#[test]
fn checkpoint_during_writes_is_a_point_in_time() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.set_write_buffer_size(64 << 10); // memtable switches and flushes happen meanwhile
    let db = Arc::new(DB::open_cf(&o, d.path().join("db"), ["default", "a", "b"]).unwrap());
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let (a, b) = (db.cf_handle("a").unwrap(), db.cf_handle("b").unwrap());
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) {
                let mut batch = WriteBatch::new();
                batch.put_cf(&a, key(i), vec![b'a'; 100]);
                batch.put_cf(&b, key(i), vec![b'b'; 100]);
                db.write(batch).unwrap();
                i += 1;
                acked.store(i, Ordering::Release);
            }
        })
    };
    let mut checks = Vec::new();
    for (n, log_size) in [(0u32, 0u64), (1, u64::MAX), (2, 0), (3, u64::MAX)] {
        while acked.load(Ordering::Acquire) < 300 * (n as u64 + 1) {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        let ck = d.path().join(format!("ck{n}"));
        Checkpoint::new(&db)
            .unwrap()
            .create_checkpoint_with_log_size(&ck, log_size)
            .unwrap();
        checks.push((ck, before));
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    for (ck, before) in checks {
        let c = open_all(&ck);
        let (a, b) = (c.cf_handle("a").unwrap(), c.cf_handle("b").unwrap());
        let mut present = 0;
        for i in 0..acked.load(Ordering::Acquire) {
            let (va, vb) = (c.get_cf(&a, key(i)).unwrap(), c.get_cf(&b, key(i)).unwrap());
            assert_eq!(va.is_some(), vb.is_some(), "{}: batch {i} is torn", ck.display());
            if va.is_some() {
                assert_eq!(i, present, "{}: batch {i} present after a missing one", ck.display());
                present += 1;
            }
        }
        assert!(
            present >= before,
            "{}: {present} batches, {before} acknowledged before",
            ck.display()
        );
    }
}

fn crash_fs(budget: &Arc<AtomicI64>) -> Arc<dyn FileSystem> {
    Arc::new(CrashAfter {
        inner: Arc::new(PosixFs),
        budget: budget.clone(),
    })
}

/// Write 300 keys into two families, with tables and WAL data.
fn fill(db: &DB) {
    let a = db.cf_handle("a").unwrap();
    for i in 0..300 {
        db.put(key(i), b"d").unwrap();
        db.put_cf(&a, key(i), b"a").unwrap();
        if i % 100 == 99 {
            db.flush().unwrap();
            db.flush_cf(&a).unwrap();
        }
    }
    db.put(b"wal-only", b"w").unwrap();
}

fn assert_filled(db: &DB, extra: bool) {
    let a = db.cf_handle("a").unwrap();
    for i in 0..300 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&b"d"[..]));
        assert_eq!(db.get_cf(&a, key(i)).unwrap().as_deref(), Some(&b"a"[..]));
    }
    assert_eq!(db.get(b"wal-only").unwrap().is_some(), extra);
}

/// A checkpoint whose file operations start failing after N of them (every N up to where it
/// succeeds) leaves no checkpoint directory and the source DB whole: it reads and writes, and
/// reopens with everything; a later checkpoint to the same directory succeeds.
#[test]
fn crash_during_checkpoint_leaves_source_intact() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let budget = Arc::new(AtomicI64::new(i64::MAX));
    let mut o = opts();
    o.set_env(crash_fs(&budget));
    let db = DB::open_cf(&o, &src, ["default", "a"]).unwrap();
    fill(&db);
    let ck = d.path().join("ck");
    let mut n = 0;
    loop {
        budget.store(n, Ordering::SeqCst);
        let r = Checkpoint::new(&db)
            .unwrap()
            .create_checkpoint_with_log_size(&ck, u64::MAX);
        budget.store(i64::MAX, Ordering::SeqCst);
        if r.is_ok() {
            break;
        }
        if ck.exists() {
            // Failed after the rename (the parent directory's sync): the checkpoint is whole.
            break;
        }
        assert_filled(&db, true);
        n += 1;
        assert!(n < 200, "the checkpoint never succeeded");
    }
    assert!(n > 3, "the crash points were exercised");
    db.put(b"after", b"1").unwrap();
    drop(db);
    let db = open_all(&src);
    assert_filled(&db, true);
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"1"[..]));
    let c = open_all(&ck);
    assert_filled(&c, true);
}

/// `disable_file_deletions` counts: compacted-away tables stay until as many enables.
#[test]
fn file_deletions_are_held_until_enabled_as_often_as_disabled() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let db = DB::open(&opts(), &src).unwrap();
    for round in 0..3 {
        for i in 0..50 {
            db.put(key(i), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    let before = ssts(&src);
    assert_eq!(before.len(), 3);
    let live: Vec<String> = db.live_files().unwrap().iter().map(|f| f.name.clone()).collect();
    assert_eq!(live.len(), 3);
    let f = &db.live_files().unwrap()[0];
    assert_eq!((f.column_family_name.as_str(), f.level), ("default", 0));
    assert_eq!(f.start_key.as_deref(), Some(&key(0)[..]));
    assert_eq!(f.end_key.as_deref(), Some(&key(49)[..]));
    assert_eq!((f.num_entries, f.num_deletions), (50, 0));
    db.disable_file_deletions().unwrap();
    db.disable_file_deletions().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.live_files().unwrap().len(), 1);
    for f in &before {
        assert!(src.join(f).exists(), "{f} deleted while deletions are disabled");
    }
    db.enable_file_deletions().unwrap();
    for f in &before {
        assert!(src.join(f).exists(), "{f} deleted after one of two enables");
    }
    db.enable_file_deletions().unwrap();
    assert_eq!(ssts(&src).len(), 1, "obsolete tables deleted once enabled");
    let (names, manifest_size) = db.get_live_files(false).unwrap();
    assert!(
        names.contains(&"/CURRENT".to_string()) && manifest_size > 0,
        "{names:?}"
    );
}

fn shared_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir.join("shared"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Two backups share their common tables; verify finds a changed byte; purge keeps only what
/// the kept backups use; a restore into an empty directory opens with all the data.
#[test]
fn backups_are_incremental_verified_purged_and_restored() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let bdir = d.path().join("backups");
    let mut o = opts();
    o.set_disable_auto_compactions(true); // the live tables stay what the backups captured
    let db = DB::open_cf(&o, &src, ["default", "a"]).unwrap();
    fill(&db);
    let env = Env::new().unwrap();
    let mut be = BackupEngine::open(&BackupEngineOptions::new(&bdir).unwrap(), &env).unwrap();
    be.create_new_backup_flush(&db, true).unwrap();
    let first = shared_files(&bdir);
    assert_eq!(first.len(), db.live_files().unwrap().len());
    // One more table: the second backup adds exactly it.
    for i in 300..350 {
        db.put(key(i), b"new").unwrap();
    }
    db.flush().unwrap();
    be.create_new_backup(&db).unwrap();
    let second = shared_files(&bdir);
    assert_eq!(second.len(), first.len() + 1, "{first:?} -> {second:?}");
    assert!(first.iter().all(|f| second.contains(f)));
    let info = be.get_backup_info();
    assert_eq!(info.iter().map(|i| i.backup_id).collect::<Vec<_>>(), vec![1, 2]);
    assert!(info[1].num_files > 0 && info[1].size > info[0].size);
    be.verify_backup(1).unwrap();
    be.verify_backup(2).unwrap();
    // Compact: the third backup holds one table; purging to one drops every older table.
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let a = db.cf_handle("a").unwrap();
    db.compact_range_cf(&a, None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(a);
    be.create_new_backup(&db).unwrap();
    be.purge_old_backups(1).unwrap();
    assert_eq!(
        be.get_backup_info().iter().map(|i| i.backup_id).collect::<Vec<_>>(),
        vec![3]
    );
    assert_eq!(shared_files(&bdir).len(), db.live_files().unwrap().len());
    assert!(!bdir.join("private/1").exists() && !bdir.join("private/2").exists());
    drop(db);
    let restored = d.path().join("restored");
    be.restore_from_latest_backup(&restored, &restored, &RestoreOptions::default())
        .unwrap();
    let r = open_all(&restored);
    assert_filled(&r, true);
    assert_eq!(r.get(key(320)).unwrap().as_deref(), Some(&b"new"[..]));
    drop(r);
    // Corrupt one byte of a shared table: verify names it; a restore refuses it.
    let victim = bdir.join("shared").join(&shared_files(&bdir)[0]);
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[10] ^= 0x40;
    std::fs::write(&victim, bytes).unwrap();
    let e = be.verify_backup(3).unwrap_err();
    assert!(
        e.is_corruption() && e.to_string().contains(&shared_files(&bdir)[0]),
        "{e}"
    );
    let e = be
        .restore_from_backup(d.path().join("r2"), d.path().join("r2"), &RestoreOptions::default(), 3)
        .unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(be.verify_backup(9).unwrap_err().is_invalid_argument());
}

/// A backup whose writes fail after N file operations (every N until one succeeds) leaves the
/// earlier backup valid and restorable, and nothing of itself once the engine is reopened.
#[test]
fn crash_mid_backup_leaves_earlier_backups_valid() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let bdir = d.path().join("backups");
    let db = DB::open_cf(&opts(), &src, ["default", "a"]).unwrap();
    fill(&db);
    let bopts = BackupEngineOptions::new(&bdir).unwrap();
    BackupEngine::open(&bopts, &Env::new().unwrap())
        .unwrap()
        .create_new_backup_flush(&db, true)
        .unwrap();
    let after_first = shared_files(&bdir);
    for i in 300..350 {
        db.put(key(i), b"new").unwrap();
    }
    db.flush().unwrap();
    let budget = Arc::new(AtomicI64::new(i64::MAX));
    let env = Env::with_file_system(crash_fs(&budget));
    let mut n = 0;
    loop {
        let mut be = BackupEngine::open(&bopts, &env).unwrap();
        budget.store(n, Ordering::SeqCst);
        let r = be.create_new_backup(&db);
        budget.store(i64::MAX, Ordering::SeqCst);
        if r.is_ok() {
            break;
        }
        let be = BackupEngine::open(&bopts, &Env::new().unwrap()).unwrap();
        if be.get_backup_info().len() == 2 {
            // Failed after its meta file was renamed (the directory sync): it is complete.
            be.verify_backup(2).unwrap();
            break;
        }
        assert_eq!(be.get_backup_info().len(), 1, "budget {n}");
        be.verify_backup(1).unwrap();
        assert_eq!(shared_files(&bdir), after_first, "budget {n}: leftovers cleaned");
        let privs: Vec<_> = std::fs::read_dir(bdir.join("private")).unwrap().collect();
        assert_eq!(privs.len(), 1, "budget {n}");
        n += 1;
        assert!(n < 500, "the backup never succeeded");
    }
    assert!(n > 5);
    let mut be = BackupEngine::open(&bopts, &Env::new().unwrap()).unwrap();
    assert_eq!(be.get_backup_info().len(), 2);
    be.verify_backup(2).unwrap();
    drop(db);
    let restored = d.path().join("restored");
    be.restore_from_backup(&restored, &restored, &RestoreOptions::default(), 1)
        .unwrap();
    let r = open_all(&restored);
    assert_filled(&r, true);
    assert_eq!(r.get(key(320)).unwrap(), None, "backup 1 predates key 320");
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat").join(name)
}

/// RocksDB 7.8's `ldb` and rocksdict open a Shale checkpoint with families, data in tables and
/// data only in the copied WAL, and read every key.
#[test]
fn rocksdb_opens_a_shale_checkpoint() {
    let Some([ldb, python]) = find(["ldb", ROCKSDICT]) else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let db = DB::open_cf(&opts(), d.path().join("db"), ["default", "a"]).unwrap();
    fill(&db);
    let ck = d.path().join("ck");
    Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint_with_log_size(&ck, u64::MAX)
        .unwrap();
    drop(db);
    let mut want_default = Kv::new();
    let mut want_a = Kv::new();
    for i in 0..300 {
        want_default.insert(key(i), b"d".to_vec());
        want_a.insert(key(i), b"a".to_vec());
    }
    want_default.insert(b"wal-only".to_vec(), b"w".to_vec());
    let listed = run(Command::new(&ldb)
        .arg(format!("--db={}", ck.display()))
        .arg("list_column_families"));
    assert_eq!(
        listed,
        format!("Column families in {}: \n{{default, a}}\n", ck.display())
    );
    for (cf, want) in [("default", &want_default), ("a", &want_a)] {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(&ck, copy.path());
        let got = parse_scan(&run(Command::new(&ldb)
            .arg(format!("--db={}", copy.path().display()))
            .arg(format!("--column_family={cf}"))
            .args(["scan", "--hex"])));
        assert_same(&got, want, &format!("ldb {cf}"));
    }
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&ck, copy.path());
    let out = run(Command::new(&python)
        .arg(script("rd_cf_dump.py"))
        .arg(copy.path())
        .arg("auto"));
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("families default,a"));
    let (mut got_default, mut got_a) = (Kv::new(), Kv::new());
    for l in lines {
        let f: Vec<&str> = l.split(' ').collect();
        let m = if f[0] == "a" { &mut got_a } else { &mut got_default };
        m.insert(unhex(f[1]), unhex(f[2]));
    }
    assert_same(&got_default, &want_default, "rocksdict default");
    assert_same(&got_a, &want_a, "rocksdict a");
}

/// `live_files` counts a file's entries and deletions (from its table properties);
/// `get_db_identity` is the IDENTITY file's UUID, and a checkpoint keeps it.
#[test]
fn live_files_count_entries_and_the_identity_survives_a_checkpoint() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let db = DB::open(&opts(), &src).unwrap();
    for i in 0..30 {
        db.put(key(i), b"v").unwrap();
    }
    for i in 0..10 {
        db.delete(key(100 + i)).unwrap();
    }
    db.flush().unwrap();
    let f = &db.live_files().unwrap()[0];
    assert_eq!((f.num_entries, f.num_deletions), (40, 10));

    let id = db.get_db_identity().unwrap();
    assert_eq!(id.len(), 36, "a UUID: {:?}", String::from_utf8_lossy(&id));
    assert_eq!(std::fs::read(src.join("IDENTITY")).unwrap().trim_ascii_end(), &id[..]);
    let cp = d.path().join("cp");
    Checkpoint::new(&db).unwrap().create_checkpoint(&cp).unwrap();
    let copy = DB::open(&opts(), &cp).unwrap();
    assert_eq!(copy.get_db_identity().unwrap(), id);
    let other = DB::open(&opts(), d.path().join("other")).unwrap();
    assert_ne!(other.get_db_identity().unwrap(), id);
}
