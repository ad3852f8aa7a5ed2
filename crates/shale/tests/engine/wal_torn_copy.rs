//! A process killed in the middle of storing a WAL flush, for real: a child process (this test
//! binary, run again) writes through the default options on the real file system, with a
//! transaction prepared, and ends itself inside the copy of a large record
//! (`kill_inside_wal_appends`: a random part of the flush stored, as a SIGKILL during the copy
//! leaves it). The database must then open in every recovery mode, again and again, with every
//! acknowledged write and the prepared transaction: the torn flush is the log's end (in
//! `AbsoluteConsistency` a Corruption naming the WAL and offset first), never a corruption in
//! the middle that blocks later opens.

use std::path::Path;
use std::process::Command;

use shale::{DBRecoveryMode, ErrorKind, Options, TransactionDB, TransactionDBOptions};

const CHILD: &str = "SHALE_TORN_COPY_CHILD";
const KILLED: i32 = 86;
const KEYS: usize = 60;

fn opts(mode: DBRecoveryMode, mapped: bool) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_wal_recovery_mode(mode);
    o.set_wal_mapped_appends(mapped);
    o
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat(i % 50)).into_bytes()
}

/// The child: acknowledged writes, a prepared transaction, then a large write whose WAL copy
/// is interrupted (the process exits with `KILLED` inside it).
fn child(dir: &Path, mapped: bool, seed: u64) -> ! {
    let db: TransactionDB = TransactionDB::open(
        &opts(DBRecoveryMode::PointInTime, mapped),
        &TransactionDBOptions::default(),
        dir,
    )
    .unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    let t = db.transaction();
    t.set_name(b"xid-1").unwrap();
    t.put(b"prepared-key", b"prepared-value").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    shale::fs::testing::kill_inside_wal_appends(1, seed, KILLED);
    // Not acknowledged: the process ends inside its WAL flush.
    let _ = db.put(b"big", vec![b'b'; 400 << 10]);
    std::process::exit(1)
}

/// Opens in `mode`; in `AbsoluteConsistency` a torn tail may be refused first, as a
/// Corruption naming the WAL and the offset, and the open then tolerates it.
fn open_after(dir: &Path, mode: DBRecoveryMode, mapped: bool) -> TransactionDB {
    match TransactionDB::open(&opts(mode, mapped), &TransactionDBOptions::default(), dir) {
        Ok(db) => db,
        Err(e) if mode == DBRecoveryMode::AbsoluteConsistency => {
            let m = e.to_string();
            assert_eq!(e.kind(), ErrorKind::Corruption, "{m}");
            assert!(m.contains(".log") && m.contains("at offset"), "{m}");
            TransactionDB::open(
                &opts(DBRecoveryMode::TolerateCorruptedTailRecords, mapped),
                &TransactionDBOptions::default(),
                dir,
            )
            .unwrap_or_else(|e| panic!("after the refusal ({m}): {e}"))
        }
        Err(e) => panic!("open in {mode:?} (mapped appends {mapped}): {e}"),
    }
}

#[test]
fn a_kill_inside_a_wal_copy_leaves_a_database_that_opens_in_every_mode_every_time() {
    if let Ok(spec) = std::env::var(CHILD) {
        let mut it = spec.splitn(3, ',');
        let mapped = it.next() == Some("1");
        let seed: u64 = it.next().unwrap().parse().unwrap();
        child(Path::new(it.next().unwrap()), mapped, seed);
    }
    let modes = [
        DBRecoveryMode::TolerateCorruptedTailRecords,
        DBRecoveryMode::AbsoluteConsistency,
        DBRecoveryMode::PointInTime,
        DBRecoveryMode::SkipAnyCorruptedRecord,
    ];
    for (n, mode) in modes.into_iter().enumerate() {
        for mapped in [true, false] {
            for seed in 0..8u64 {
                let dir = tempfile::tempdir().unwrap();
                let status = Command::new(std::env::current_exe().unwrap())
                    .args([
                        "--exact",
                        "wal_torn_copy::a_kill_inside_a_wal_copy_leaves_a_database_that_opens_in_every_mode_every_time",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env(
                        CHILD,
                        format!("{},{},{}", mapped as u8, seed + n as u64, dir.path().display()),
                    )
                    .output()
                    .unwrap();
                assert_eq!(
                    status.status.code(),
                    Some(KILLED),
                    "the child ended inside its WAL copy: {}",
                    String::from_utf8_lossy(&status.stdout)
                );
                let ctx = format!("{mode:?}, mapped appends {mapped}, seed {seed}");
                // Open three times, writing in between (a later WAL with records after the
                // torn one), leaving the prepared transaction prepared.
                for round in 0..3 {
                    let db = open_after(dir.path(), mode, mapped);
                    for i in 0..KEYS {
                        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "{ctx}, open {round}, key {i}");
                    }
                    for r in 0..round {
                        assert_eq!(db.get(format!("after{r}")).unwrap(), Some(b"1".to_vec()), "{ctx}");
                    }
                    // The interrupted write was not acknowledged: absent, or whole.
                    let big = db.get(b"big").unwrap();
                    assert!(big.is_none() || big == Some(vec![b'b'; 400 << 10]), "{ctx}");
                    let prepared = db.prepared_transactions();
                    assert_eq!(prepared.len(), 1, "{ctx}, open {round}");
                    assert_eq!(prepared[0].get_name().as_deref(), Some(&b"xid-1"[..]));
                    std::mem::forget(prepared);
                    assert_eq!(db.get(b"prepared-key").unwrap(), None, "{ctx}");
                    db.put(format!("after{round}"), b"1").unwrap();
                }
            }
        }
    }
}
