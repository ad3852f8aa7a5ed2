//! Two-phase commit of `TransactionDB`: `set_name`, `prepare`, `commit` /
//! `rollback` of prepared transactions, recovery of the prepared ones after a crash
//! (`prepared_transactions`), the WALs kept for them, RocksDB's WAL format of the markers and
//! compatibility both ways with RocksDB 7.8's `ldb` and `db_bench` (see `compat.rs` for how a
//! missing tool is reported).
#![allow(clippy::field_reassign_with_default)]

use crate::common;
use crate::rocksdb_tools;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{
    ErrorKind, OptimisticTransactionDB, Options, Transaction, TransactionDB, TransactionDBOptions, TransactionOptions,
    WriteOptions, DB,
};

use rocksdb_tools::{run, Kv};

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

fn mem_opts(fs: &MemFs) -> Options {
    let mut o = opts();
    o.set_env(Arc::new(fs.clone()));
    o.set_disable_auto_compactions(true);
    o
}

fn open(o: &Options, path: &Path) -> TransactionDB {
    TransactionDB::open(o, &TransactionDBOptions::default(), path).unwrap()
}

fn synced() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    wo
}

/// A named transaction with synced writes.
fn named<'a>(db: &'a TransactionDB, name: &str) -> Transaction<'a, TransactionDB> {
    let t = db.transaction_opt(&synced(), &TransactionOptions::default());
    t.set_name(name.as_bytes()).unwrap();
    t
}

fn no_wait(db: &TransactionDB) -> Transaction<'_, TransactionDB> {
    let mut o = TransactionOptions::new();
    o.set_lock_timeout(0);
    db.transaction_opt(&synced(), &o)
}

fn get(db: &TransactionDB, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

/// The `.log` files of `d`, by number.
fn wals(fs: &dyn FileSystem, d: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = fs
        .list(d)
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".log")?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// A process or machine crash: no clean close (the handle is leaked, its background work
/// idle), then unsynced bytes are lost.
fn crash(db: TransactionDB, fs: &MemFs) {
    // The power fails: background work stops first (a flush running at that moment ends, as a
    // real machine's last moments may), because a forgotten DB whose threads kept running
    // after `power_loss` would go on writing into the "rebooted" file system (a MANIFEST edit
    // naming a table whose bytes the power loss already dropped). Forgetting the DB keeps its
    // prepared transactions unresolved, as after a real crash.
    db.base_db().cancel_all_background_work(true);
    std::mem::forget(db);
    fs.power_loss();
}

// ---------------------------------------------------------------- semantics

#[test]
fn prepare_writes_only_the_wal_and_commit_applies_at_its_sequence() {
    let d = tempfile::tempdir().unwrap();
    let db = open(&opts(), d.path());
    db.put(b"base", b"0").unwrap();
    assert_eq!(db.latest_sequence_number(), 1);
    let t = named(&db, "xa-1");
    assert_eq!(t.get_name().as_deref(), Some(&b"xa-1"[..]));
    t.put(b"a", b"1").unwrap();
    t.put(b"b", b"2").unwrap();
    t.delete(b"base").unwrap();
    t.prepare().unwrap();
    // Nothing visible, no sequence number used, the locks still held.
    assert_eq!(db.latest_sequence_number(), 1, "a prepare uses no sequence number");
    assert_eq!(get(&db, "a"), None);
    assert_eq!(get(&db, "base").as_deref(), Some("0"));
    let u = no_wait(&db);
    assert_eq!(u.put(b"a", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(
        u.get_for_update(b"base", false).unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    // Only commit or rollback may follow.
    assert_eq!(t.put(b"c", b"3").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.prepare().unwrap_err().kind(), ErrorKind::InvalidArgument);
    // A plain write goes on meanwhile and takes sequence 2.
    db.put(b"other", b"o").unwrap();
    t.commit().unwrap();
    assert_eq!(
        db.latest_sequence_number(),
        5,
        "the commit uses one sequence number per record"
    );
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
    assert_eq!(get(&db, "b").as_deref(), Some("2"));
    assert_eq!(get(&db, "base"), None);
    u.put(b"a", b"x").unwrap();
    u.rollback().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.rollback().unwrap_err().kind(), ErrorKind::InvalidArgument);
    // The name is free again once the transaction is committed.
    named(&db, "xa-1").rollback().unwrap();
    drop((t, u));
    drop(db);

    // RocksDB's records: the prepared batch at the next sequence (2, count 3), then the plain
    // put at 2, then the commit marker (count 0) at 3.
    let wal = common::newest(&shale::fs::PosixFs, d.path(), "", ".log");
    let (out, err) = shale::tools::dump_wal(&wal, false, false).unwrap();
    assert!(err.is_empty(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let prep = lines.iter().position(|l| l.contains("BEGIN_PREPARE")).unwrap();
    let name = "0x78612D31";
    assert!(lines[prep].starts_with("2,3,"), "{}", lines[prep]);
    assert!(
        lines[prep].ends_with(&format!(
            "BEGIN_PREPARE(false) PUT(0) : 0x61 PUT(0) : 0x62 DELETE(0) : 0x62617365 END_PREPARE({name}) "
        )),
        "{}",
        lines[prep]
    );
    assert!(lines[prep + 1].starts_with("2,1,") && lines[prep + 1].contains("PUT(0) : 0x6F74686572"));
    assert!(lines[prep + 2].starts_with("3,0,"), "{}", lines[prep + 2]);
    assert!(
        lines[prep + 2].ends_with(&format!("COMMIT({name}) ")),
        "{}",
        lines[prep + 2]
    );

    // Reopened: the commit replays from the prepared section at the same sequence numbers.
    let db = open(&opts(), d.path());
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(db.latest_sequence_number(), 5);
    assert_eq!(get(&db, "a").as_deref(), Some("1"));
    assert_eq!(get(&db, "base"), None);
    assert_eq!(get(&db, "other").as_deref(), Some("o"));
}

#[test]
fn rollback_of_a_prepared_transaction_discards_it_and_releases_its_locks() {
    let d = tempfile::tempdir().unwrap();
    let db = open(&opts(), d.path());
    let t = named(&db, "r");
    t.put(b"k", b"v").unwrap();
    t.prepare().unwrap();
    t.rollback().unwrap();
    assert_eq!(get(&db, "k"), None);
    assert_eq!(db.latest_sequence_number(), 0);
    let u = no_wait(&db);
    u.put(b"k", b"mine").unwrap();
    u.commit().unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(t.rollback().unwrap_err().kind(), ErrorKind::InvalidArgument);
    drop((t, u));
    drop(db);
    let wal = common::newest(&shale::fs::PosixFs, d.path(), "", ".log");
    let (out, _) = shale::tools::dump_wal(&wal, false, false).unwrap();
    assert!(out.contains("ROLLBACK(0x72) "), "{out}");
    let db = open(&opts(), d.path());
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(get(&db, "k").as_deref(), Some("mine"));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let db = open(&opts(), d.path());
    let inv = |r: shale::error::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::InvalidArgument);
    // No name.
    let t = db.transaction();
    t.put(b"a", b"1").unwrap();
    let e = t.prepare().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("not been named"), "{e}");
    // Bad names.
    inv(t.set_name(b""));
    inv(t.set_name(&[b'x'; 513]));
    t.set_name(&[b'x'; 512]).unwrap();
    inv(t.set_name(b"again"));
    // Unique among live transactions; the same name is free after the end of its holder.
    let u = db.transaction();
    inv(u.set_name(&[b'x'; 512]));
    t.rollback().unwrap();
    // a rollback before prepare keeps the transaction usable, and its name with it
    inv(u.set_name(&[b'x'; 512]));
    drop(t);
    u.set_name(&[b'x'; 512]).unwrap();
    inv(u.commit().and_then(|_| u.set_name(b"late")));
    // Dropped unprepared: the name is released too.
    let v = db.transaction();
    v.set_name(b"dropped").unwrap();
    drop(v);
    named(&db, "dropped").rollback().unwrap();
    // After prepare: no naming, no writes, no savepoints; a second prepare fails.
    let w = named(&db, "w");
    w.put(b"w", b"1").unwrap();
    w.set_savepoint();
    w.prepare().unwrap();
    inv(w.set_name(b"other"));
    inv(w.put(b"w2", b"2"));
    inv(w.rollback_to_savepoint());
    inv(w.prepare());
    w.commit().unwrap();
    inv(w.commit());
    inv(w.prepare());
    // An empty prepared transaction commits (markers only).
    let e = named(&db, "empty");
    e.prepare().unwrap();
    e.commit().unwrap();
    assert_eq!(get(&db, "w").as_deref(), Some("1"));
    // Optimistic transactions have no two-phase commit.
    let od = tempfile::tempdir().unwrap();
    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), od.path()).unwrap();
    let ot = odb.transaction();
    inv(ot.set_name(b"o"));
    inv(ot.prepare());
    ot.commit().unwrap();
}

/// `get_updates_since` reads a WAL with two-phase-commit records: the batches as written (a
/// prepared section and the plain write after it share a sequence number, a commit marker
/// starts the numbers its section's records take), with no false "out of order".
#[test]
fn get_updates_since_reads_two_phase_records() {
    let d = tempfile::tempdir().unwrap();
    let db = open(&opts(), d.path());
    db.put(b"a", b"1").unwrap(); // 1
    let x = named(&db, "x");
    x.put(b"b", b"2").unwrap();
    x.put(b"c", b"3").unwrap();
    x.prepare().unwrap(); // section at 2, uses none
    db.put(b"d", b"4").unwrap(); // 2
    x.commit().unwrap(); // marker at 3, records 3 and 4
    let y = named(&db, "y");
    y.put(b"e", b"5").unwrap();
    y.prepare().unwrap(); // 5
    y.rollback().unwrap(); // 5
    db.put(b"f", b"6").unwrap(); // 5
    assert_eq!(db.latest_sequence_number(), 5);
    let seqs = |since: u64| -> Vec<(u64, usize)> {
        db.base_db()
            .get_updates_since(since)
            .unwrap()
            .map(|r| {
                let (s, b) = r.unwrap();
                (s, b.len())
            })
            .collect()
    };
    assert_eq!(seqs(1), vec![(1, 1), (2, 2), (2, 1), (3, 0), (5, 1), (5, 0), (5, 1)]);
    assert_eq!(seqs(4), vec![(3, 0), (5, 1), (5, 0), (5, 1)]);
    assert_eq!(seqs(5), vec![(5, 1), (5, 0), (5, 1)]);
}

// ---------------------------------------------------------------- crash recovery

#[test]
fn crash_with_prepared_transactions_in_flight() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    db.put_opt(b"plain", b"p", &synced()).unwrap();
    let committed = named(&db, "committed");
    committed.put(b"c1", b"1").unwrap();
    committed.put(b"c2", b"2").unwrap();
    committed.prepare().unwrap();
    let pending = named(&db, "pending");
    pending.put(b"p1", b"1").unwrap();
    pending.delete(b"plain").unwrap();
    pending.put(b"p2", b"2").unwrap();
    pending.prepare().unwrap();
    let rolled = named(&db, "rolled");
    rolled.put(b"r1", b"1").unwrap();
    rolled.prepare().unwrap();
    committed.commit().unwrap();
    rolled.rollback().unwrap();
    let open_txn = named(&db, "never-prepared");
    open_txn.put(b"n1", b"1").unwrap();
    // A prepared transaction whose WAL write was not synced is lost with the power.
    let unsynced = db.transaction();
    unsynced.set_name(b"unsynced").unwrap();
    unsynced.put(b"u1", b"1").unwrap();
    unsynced.prepare().unwrap();
    let seq = db.latest_sequence_number();
    assert_eq!(seq, 3);
    std::mem::forget((committed, pending, rolled, open_txn, unsynced));
    crash(db, &fs);

    let db = open(&o, dir);
    assert_eq!(db.latest_sequence_number(), seq);
    assert_eq!(get(&db, "c1").as_deref(), Some("1"));
    assert_eq!(get(&db, "c2").as_deref(), Some("2"));
    assert_eq!(get(&db, "plain").as_deref(), Some("p"));
    for k in ["p1", "p2", "r1", "n1", "u1"] {
        assert_eq!(get(&db, k), None, "{k}");
    }
    // The pending transaction is recovered, its keys locked, its name taken.
    let u = no_wait(&db);
    assert_eq!(u.put(b"p1", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(u.put(b"plain", b"x").unwrap_err().kind(), ErrorKind::TimedOut);
    u.rollback().unwrap();
    drop(u);
    assert_eq!(
        db.transaction().set_name(b"pending").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let mut prepared = db.prepared_transactions();
    assert_eq!(prepared.len(), 1);
    assert!(db.prepared_transactions().is_empty(), "handed out once");
    let p = prepared.pop().unwrap();
    assert_eq!(p.get_name().as_deref(), Some(&b"pending"[..]));
    let wb = p.get_writebatch();
    assert_eq!(wb.len(), 3);
    assert_eq!(p.put(b"p3", b"3").unwrap_err().kind(), ErrorKind::InvalidArgument);
    p.commit().unwrap();
    assert_eq!(db.latest_sequence_number(), seq + 3);
    assert_eq!(get(&db, "p1").as_deref(), Some("1"));
    assert_eq!(get(&db, "p2").as_deref(), Some("2"));
    assert_eq!(get(&db, "plain"), None);
    let u = no_wait(&db);
    u.put(b"p1", b"mine").unwrap();
    u.commit().unwrap();
    drop((u, p, prepared));
    crash(db, &fs);

    let db = open(&o, dir);
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(get(&db, "p1").as_deref(), Some("mine"));
    assert_eq!(get(&db, "p2").as_deref(), Some("2"));
    assert_eq!(get(&db, "plain"), None);
    assert_eq!(db.latest_sequence_number(), seq + 4);
}

#[test]
fn recovered_transaction_rolled_back_or_dropped() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    for name in ["a", "b"] {
        let t = named(&db, name);
        t.put(name, b"v").unwrap();
        t.prepare().unwrap();
        std::mem::forget(t);
    }
    crash(db, &fs);
    let db = open(&o, dir);
    let mut ts = db.prepared_transactions();
    ts.sort_by_key(|t| t.get_name());
    assert_eq!(ts.len(), 2);
    ts[0].rollback().unwrap();
    // Dropped while prepared: its locks and name are released, it stays in the WAL.
    ts.clear();
    let u = no_wait(&db);
    u.put(b"b", b"mine").unwrap();
    u.rollback().unwrap();
    drop((u, ts));
    drop(db);
    let db = open(&o, dir);
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    assert_eq!(ts[0].get_name().as_deref(), Some(&b"b"[..]));
    ts[0].commit().unwrap();
    assert_eq!(get(&db, "a"), None);
    assert_eq!(get(&db, "b").as_deref(), Some("v"));
}

/// A prepared transaction dropped unresolved releases its locks; a second one prepared on the
/// same key makes the next open fail with a clear error (as RocksDB's), not a panic.
#[test]
fn two_recovered_transactions_on_one_key_fail_the_open_clearly() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    for name in ["first", "second"] {
        let t = named(&db, name);
        t.put(b"same", name).unwrap();
        t.prepare().unwrap();
        drop(t); // unresolved: stays in the WAL, its lock is released
    }
    crash(db, &fs);
    let e = <TransactionDB>::open(&o, &TransactionDBOptions::default(), dir).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains("locked by another"), "{e}");
}

#[test]
fn plain_db_refuses_a_wal_with_prepared_sections_unless_allow_2pc() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    db.put_opt(b"x", b"1", &synced()).unwrap();
    let t = named(&db, "t");
    t.put(b"k", b"v").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    crash(db, &fs);
    let e = DB::open(&o, dir).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.to_string().contains("TransactionDB"), "{e}");
    let e = DB::open_for_read_only(&o, dir, false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    let mut o2 = o.clone();
    o2.set_allow_2pc(true);
    {
        let db = DB::open(&o2, dir).unwrap();
        assert_eq!(db.get(b"x").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(db.get(b"k").unwrap(), None);
    }
    // The plain DB kept the prepared section's WAL: the TransactionDB still finds it.
    let db = open(&o, dir);
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    ts[0].commit().unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("v"));
}

/// A transaction's writes in order (None: a delete).
type Writes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Rounds of random work — plain writes, transactions prepared then committed, rolled back or
/// left pending, flushes, batches that roll the WAL — each ended by a power loss; every reopen
/// must show exactly the committed data, the last sequence number of the writes applied, and
/// the pending transactions by name (which the next round commits, rolls back or leaves).
#[test]
fn random_crashes_with_prepared_transactions_match_a_model() {
    use std::collections::{BTreeMap, BTreeSet};
    // recovered ones committed, rolled back, dropped; new ones left prepared at the crash
    let mut seen = [0u32; 4];
    for seed in 1..=3u64 {
        let fs = MemFs::new();
        let dir = common::dir();
        let mut o = mem_opts(&fs);
        o.set_write_buffer_size(16 << 10);
        let mut rng = common::Rng::new(seed);
        let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        // name -> the transaction's writes (None: a delete), in order
        let mut pending: BTreeMap<String, Writes> = BTreeMap::new();
        let mut seq = 0u64;
        let mut serial = 0u64;
        let apply = |committed: &mut BTreeMap<Vec<u8>, Vec<u8>>, w: &Writes| {
            for (k, v) in w {
                match v {
                    Some(v) => committed.insert(k.clone(), v.clone()),
                    None => committed.remove(k),
                };
            }
        };
        for round in 0..6 {
            let db = open(&o, dir);
            let ctx = format!("seed {seed} round {round}");
            assert_eq!(shale_scan(&db), committed, "{ctx}");
            assert_eq!(db.latest_sequence_number(), seq, "{ctx}");
            let ts = db.prepared_transactions();
            let names: BTreeSet<String> = ts
                .iter()
                .map(|t| String::from_utf8(t.get_name().unwrap()).unwrap())
                .collect();
            assert_eq!(names, pending.keys().cloned().collect::<BTreeSet<_>>(), "{ctx}");
            for t in ts {
                let name = String::from_utf8(t.get_name().unwrap()).unwrap();
                assert_eq!(t.get_writebatch().len(), pending[&name].len(), "{ctx}");
                let what = rng.below(3);
                seen[what as usize] += 1;
                match what {
                    0 => {
                        t.commit().unwrap();
                        let w = pending.remove(&name).unwrap();
                        seq += w.len() as u64;
                        apply(&mut committed, &w);
                    }
                    1 => {
                        t.rollback().unwrap();
                        pending.remove(&name);
                    }
                    _ => {} // dropped: stays prepared in the WAL
                }
            }
            for _ in 0..30 {
                // Keys of pending transactions stay untouched (they hold or will hold the locks).
                let locked: BTreeSet<Vec<u8>> = pending.values().flatten().map(|(k, _)| k.clone()).collect();
                let free_key = |rng: &mut common::Rng| loop {
                    let k = format!("k{:02}", rng.below(40)).into_bytes();
                    if !locked.contains(&k) {
                        break k;
                    }
                };
                serial += 1;
                match rng.below(8) {
                    0 | 1 => {
                        let k = free_key(&mut rng);
                        let v = format!("plain-{serial}").into_bytes();
                        db.put_opt(&k, &v, &synced()).unwrap();
                        committed.insert(k, v);
                        seq += 1;
                    }
                    2..=5 => {
                        let name = format!("txn-{seed}-{serial}");
                        let t = named(&db, &name);
                        let mut w = Vec::new();
                        for j in 0..1 + rng.below(3) {
                            let k = free_key(&mut rng);
                            if rng.below(4) == 0 {
                                t.delete(&k).unwrap();
                                w.push((k, None));
                            } else {
                                let v = format!("{name}-{j}").into_bytes();
                                t.put(&k, &v).unwrap();
                                w.push((k, Some(v)));
                            }
                        }
                        t.prepare().unwrap();
                        match rng.below(3) {
                            0 => {
                                t.commit().unwrap();
                                seq += w.len() as u64;
                                apply(&mut committed, &w);
                            }
                            1 => t.rollback().unwrap(),
                            _ => {
                                seen[3] += 1;
                                std::mem::forget(t); // prepared when the power goes
                                pending.insert(name, w);
                            }
                        }
                    }
                    6 => db.flush().unwrap(),
                    _ => {
                        let mut b = shale::WriteBatch::new();
                        for i in 0..150 {
                            let k = format!("f{serial}-{i:03}").into_bytes();
                            let v = vec![b'f'; 64];
                            b.put(&k, &v);
                            committed.insert(k, v);
                        }
                        db.write_opt(b, &synced()).unwrap();
                        seq += 150;
                    }
                }
            }
            crash(db, &fs);
        }
    }
    assert!(seen.iter().all(|&n| n >= 3), "too few cases exercised: {seen:?}");
}

/// Threads move counters with transactions that are mostly prepared before their commit (some
/// rolled back after prepare, some committed without): every sum is exact, live and after a
/// reopen, with each write mode (2PC writes lead groups of their own between grouped writes).
#[test]
fn concurrent_two_phase_counters_are_exact() {
    for pipelined in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let mut o = opts();
        o.set_enable_pipelined_write(pipelined);
        o.set_write_buffer_size(64 << 10);
        let db = open(&o, d.path());
        let commits = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|sc| {
            for th in 0..4u64 {
                let (db, commits) = (&db, &commits);
                sc.spawn(move || {
                    let mut rng = common::Rng::new(th + 1);
                    let mut o = TransactionOptions::new();
                    o.set_deadlock_detect(true);
                    o.set_lock_timeout(5000);
                    for i in 0..150 {
                        let t = db.transaction_opt(&WriteOptions::default(), &o);
                        let r = (|| -> shale::error::Result<bool> {
                            for _ in 0..2 {
                                let k = format!("c{}", rng.below(6));
                                let n: u64 = t
                                    .get_for_update(&k, true)?
                                    .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
                                t.put(&k, (n + 1).to_string())?;
                            }
                            // Unrelated plain writes to group with.
                            db.put(format!("noise-{th}-{i}"), b"x")?;
                            match rng.below(8) {
                                0 => {
                                    t.commit()?;
                                    return Ok(true);
                                }
                                1 => {
                                    t.set_name(format!("rb-{th}-{i}").as_bytes())?;
                                    t.prepare()?;
                                    t.rollback()?;
                                    return Ok(false);
                                }
                                _ => {}
                            }
                            t.set_name(format!("t-{th}-{i}").as_bytes())?;
                            t.prepare()?;
                            t.commit()?;
                            Ok(true)
                        })();
                        match r {
                            Ok(true) => {
                                commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            }
                            Ok(false) => {}
                            Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TimedOut) => {
                                t.rollback().unwrap();
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                });
            }
        });
        let total = |db: &TransactionDB| -> u64 {
            (0..6)
                .map(|c| get(db, &format!("c{c}")).map_or(0, |v| v.parse::<u64>().unwrap()))
                .sum()
        };
        let want = 2 * commits.load(std::sync::atomic::Ordering::Relaxed);
        assert!(want > 300, "{want}");
        assert_eq!(total(&db), want, "pipelined {pipelined}");
        let seq = db.latest_sequence_number();
        drop(db);
        let db = open(&o, d.path());
        assert!(db.prepared_transactions().is_empty());
        assert_eq!(total(&db), want, "pipelined {pipelined}, reopened");
        assert_eq!(db.latest_sequence_number(), seq);
    }
}

// ---------------------------------------------------------------- WAL retention

#[test]
fn wal_with_a_prepared_section_survives_flushes_until_resolved() {
    let fs = MemFs::new();
    let dir = common::dir();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(32 << 10);
    let db = open(&o, dir);
    let t = named(&db, "long");
    t.put(b"held", b"prepared-value").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    let prep_wal = *wals(&fs, dir).last().unwrap();
    for round in 0..5 {
        for i in 0..500 {
            db.put(format!("k{round}-{i:04}"), vec![b'v'; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    let live = wals(&fs, dir);
    assert!(
        live.contains(&prep_wal),
        "the WAL of the prepared section was deleted: {live:?}"
    );
    assert!(*live.last().unwrap() > prep_wal + 3, "WALs did not roll: {live:?}");
    crash(db, &fs);

    let db = open(&o, dir);
    assert!(wals(&fs, dir).contains(&prep_wal));
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    assert_eq!(get(&db, "k4-0499").map(|v| v.len()), Some(100));
    ts[0].commit().unwrap();
    assert_eq!(get(&db, "held").as_deref(), Some("prepared-value"));
    // Committed and flushed: nothing needs the old WAL any more.
    db.flush().unwrap();
    assert!(!wals(&fs, dir).contains(&prep_wal), "{:?}", wals(&fs, dir));
    drop(ts);
    crash(db, &fs);
    let db = open(&o, dir);
    assert_eq!(get(&db, "held").as_deref(), Some("prepared-value"));
    assert!(db.prepared_transactions().is_empty());
}

/// A commit's data in a memtable that is not flushed keeps the prepared section's WAL alive,
/// even once every family's log number is past it (recovery replays the commit from it).
#[test]
fn committed_data_not_flushed_keeps_the_prepared_wal() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = TransactionDB::open_cf(&o, &TransactionDBOptions::default(), dir, ["a"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    let t = named(&db, "t");
    t.put_cf(&a, b"ka", b"va").unwrap();
    t.prepare().unwrap();
    let prep_wal = *wals(&fs, dir).last().unwrap();
    db.put_cf(&a, b"other", b"o").unwrap();
    db.base_db().flush_cf(&a).unwrap();
    db.put(b"d", b"1").unwrap();
    db.flush().unwrap();
    assert!(
        wals(&fs, dir).contains(&prep_wal),
        "unresolved prepared section's WAL deleted"
    );
    // The commit's data goes to family a's memtable; then only the default family flushes.
    t.commit().unwrap();
    db.put_opt(b"d2", b"2", &synced()).unwrap();
    db.flush().unwrap();
    assert!(
        wals(&fs, dir).contains(&prep_wal),
        "WAL of a committed but unflushed prepared section deleted: {:?}",
        wals(&fs, dir)
    );
    drop(t);
    drop(a);
    crash(db, &fs);
    let db = TransactionDB::open_cf(&o, &TransactionDBOptions::default(), dir, ["a"]).unwrap();
    let a = db.cf_handle("a").unwrap();
    assert_eq!(db.get_cf(&a, b"ka").unwrap().as_deref(), Some(&b"va"[..]));
    assert_eq!(db.get_cf(&a, b"other").unwrap().as_deref(), Some(&b"o"[..]));
    assert_eq!(get(&db, "d2").as_deref(), Some("2"));
    assert!(db.prepared_transactions().is_empty());
}

/// A crash left a torn record at the end of the WAL that also holds a prepared section; the
/// next open recovers (the torn write was never acknowledged) and keeps that WAL for the
/// section. Opens after that read it again below the families' log numbers: its torn tail is
/// not a corruption then either.
#[test]
fn torn_tail_in_a_kept_prepared_wal() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    let t = named(&db, "t");
    t.put(b"k", b"v").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    db.put(b"torn", vec![b'x'; 300]).unwrap();
    let w = *wals(&fs, dir).last().unwrap();
    std::mem::forget(db);
    fs.process_crash();
    let path = dir.join(format!("{w:06}.log"));
    let len = fs.file_size(&path).unwrap() as usize;
    assert!(fs.truncate(&path, len - 100));
    let db = open(&o, dir);
    assert_eq!(get(&db, "torn"), None);
    db.put_opt(b"after", b"1", &synced()).unwrap();
    assert!(wals(&fs, dir).contains(&w));
    drop(db);
    let db = open(&o, dir);
    assert_eq!(get(&db, "after").as_deref(), Some("1"));
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    ts[0].commit().unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some("v"));
}

// ---------------------------------------------------------------- RocksDB, both ways

/// `ldb scan` of a copy of `db` (RocksDB opens it read-write), as key -> value.
fn ldb_scan(ldb: &Path, db: &Path) -> Kv {
    let copy = tempfile::tempdir().unwrap();
    rocksdb_tools::copy_dir(db, copy.path());
    let out = run(Command::new(ldb)
        .arg(format!("--db={}", copy.path().display()))
        .args(["scan", "--hex"]));
    out.lines()
        .filter_map(|l| l.split_once(" : "))
        .map(|(k, v)| (rocksdb_tools::unhex(k), rocksdb_tools::unhex(v)))
        .collect()
}

/// `ldb idump` of a copy of `db`: every entry with its sequence number and type.
fn ldb_idump(ldb: &Path, db: &Path) -> String {
    let copy = tempfile::tempdir().unwrap();
    rocksdb_tools::copy_dir(db, copy.path());
    run(Command::new(ldb)
        .arg(format!("--db={}", copy.path().display()))
        .arg("idump"))
}

fn shale_scan(db: &TransactionDB) -> Kv {
    db.iterator(shale::IteratorMode::Start)
        .map(|r| {
            let (k, v) = r.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

#[test]
fn rocksdb_ldb_reads_shale_two_phase_wal() {
    let Some(ldb) = rocksdb_tools::tool("ldb") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let db = open(&opts(), d.path());
    db.put(b"plain", b"p").unwrap();
    let c = named(&db, "commit-me");
    c.put(b"c1", b"1").unwrap();
    c.delete(b"plain").unwrap();
    c.prepare().unwrap();
    let r = named(&db, "roll-me");
    r.put(b"r1", b"1").unwrap();
    r.prepare().unwrap();
    let p = named(&db, "keep-me");
    p.put(b"p1", b"1").unwrap();
    p.prepare().unwrap();
    c.commit().unwrap();
    r.rollback().unwrap();
    std::mem::forget(p);
    let wal = common::newest(&shale::fs::PosixFs, d.path(), "", ".log");
    let out = run(Command::new(&ldb)
        .arg("dump_wal")
        .arg(format!("--walfile={}", wal.display())));
    let (ours, _) = shale::tools::dump_wal(&wal, false, false).unwrap();
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("Sequence"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&out), body(&ours), "ldb and Shale read the WAL differently");
    let hx = |s: &str| format!("0x{}", rocksdb_tools::hex(s.as_bytes()).to_uppercase());
    for want in [
        "2,2,".to_string(),
        format!(
            "BEGIN_PREPARE(false) PUT(0) : 0x6331 DELETE(0) : 0x706C61696E END_PREPARE({}) ",
            hx("commit-me")
        ),
        "2,0,".to_string(),
        format!("COMMIT({}) ", hx("commit-me")),
        format!("ROLLBACK({}) ", hx("roll-me")),
        format!("END_PREPARE({}) ", hx("keep-me")),
    ] {
        assert!(out.contains(&want), "ldb dump_wal lacks {want:?}:\n{out}");
    }
    // RocksDB opens the DB (Shale wrote allow_2pc=true in its OPTIONS file, which ldb loads):
    // the committed data, not the rolled back nor the pending transaction.
    drop((c, r));
    drop(db);
    let got = ldb_scan(&ldb, d.path());
    let mut want: Kv = [(b"c1".to_vec(), b"1".to_vec())].into_iter().collect();
    assert_eq!(got, want);
    // RocksDB's recovery gives the committed records the sequence numbers Shale gave them.
    let idump = ldb_idump(&ldb, d.path());
    for line in [
        "'c1' seq:2, type:1 => 1",
        "'plain' seq:3, type:0 =>",
        "'plain' seq:1, type:1 => p",
    ] {
        assert!(idump.contains(line), "ldb idump lacks {line:?}:\n{idump}");
    }
    assert!(idump.contains("Internal keys in range: 3"), "{idump}");
    // Shale reopens, flushes what it recovered to a table and starts a new WAL, keeping the old
    // one for the pending transaction; its commit marker goes to the new WAL. RocksDB reads
    // the section from the old WAL (min_log_number_to_keep) and applies the commit.
    let db = open(&opts(), d.path());
    let ts = db.prepared_transactions();
    assert_eq!(ts.len(), 1);
    assert_eq!(db.latest_sequence_number(), 3);
    ts[0].commit().unwrap();
    assert_eq!(db.latest_sequence_number(), 4);
    drop(ts);
    drop(db);
    assert!(ldb_idump(&ldb, d.path()).contains("'p1' seq:4, type:1 => 1"));
    assert!(
        wals(&shale::fs::PosixFs, d.path()).len() >= 2,
        "{:?}",
        wals(&shale::fs::PosixFs, d.path())
    );
    want.insert(b"p1".to_vec(), b"1".to_vec());
    assert_eq!(ldb_scan(&ldb, d.path()), want);
}

#[test]
fn shale_recovers_rocksdb_db_bench_two_phase_wal() {
    let Some(db_bench) = rocksdb_tools::tool("db_bench") else {
        return;
    };
    let Some(ldb) = rocksdb_tools::tool("ldb") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    // db_bench's randomtransaction with --transaction_db names and prepares every transaction
    // (RocksDB's RandomTransactionInserter); the DB is closed without a flush, so its WAL
    // holds every prepared section and commit marker.
    run(Command::new(&db_bench)
        .arg(format!("--db={}", d.path().display()))
        .args([
            "--benchmarks=randomtransaction",
            "--transaction_db=1",
            "--num=300",
            "--threads=1",
            "--transaction_sets=3",
            "--compression_type=none",
            "--disable_auto_compactions=1",
            "--write_buffer_size=67108864",
        ]));
    let wal = common::newest(&shale::fs::PosixFs, d.path(), "", ".log");
    let (dump, _) = shale::tools::dump_wal(&wal, false, false).unwrap();
    assert!(
        dump.contains("BEGIN_PREPARE(false)") && dump.contains("COMMIT("),
        "{dump}"
    );
    let want = ldb_scan(&ldb, d.path());
    assert!(want.len() > 50, "{} keys", want.len());
    // RocksDB's last sequence number after its recovery: the newest entry's.
    let rocks_last = ldb_idump(&ldb, d.path())
        .lines()
        .filter_map(|l| l.split_once(" seq:")?.1.split_once(',')?.0.parse::<u64>().ok())
        .max()
        .unwrap();
    let db = open(&opts(), d.path());
    assert!(db.prepared_transactions().is_empty());
    assert_eq!(shale_scan(&db), want);
    assert_eq!(
        db.latest_sequence_number(),
        rocks_last,
        "Shale and RocksDB recover different sequences"
    );
    // The sets' sums agree (db_bench's own check): the values of each set's keys (four digits
    // of set number, then the key's number) add up to the same total.
    let mut sums = std::collections::BTreeMap::<Vec<u8>, u64>::new();
    for (k, v) in want
        .iter()
        .filter(|(k, _)| k.len() > 4 && k.iter().all(u8::is_ascii_digit))
    {
        let n: u64 = String::from_utf8_lossy(v).parse().unwrap_or(0);
        *sums.entry(k[..4].to_vec()).or_default() += n;
    }
    let totals: std::collections::BTreeSet<u64> = sums.values().copied().collect();
    assert_eq!(totals.len(), 1, "set sums differ: {sums:?}");
    // And the reverse: Shale's own 2PC commits on top, read back by RocksDB.
    let t = named(&db, "shale-after-rocksdb");
    t.put(b"zz-shale", b"1").unwrap();
    t.prepare().unwrap();
    t.commit().unwrap();
    drop(t);
    let mut after = want.clone();
    after.insert(b"zz-shale".to_vec(), b"1".to_vec());
    drop(db);
    assert_eq!(ldb_scan(&ldb, d.path()), after);
}

#[test]
fn without_skip_prepare_commit_needs_prepare() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    let mut to = TransactionOptions::new();
    to.set_skip_prepare(false);
    let t = db.transaction_opt(&WriteOptions::default(), &to);
    t.put(b"k", b"v").unwrap();
    assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert!(db.get(b"k").unwrap().is_none());
    // the transaction is as it was: named and prepared, it commits
    t.set_name(b"needs-prepare").unwrap();
    t.prepare().unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // by default a transaction commits without prepare
    let t = db.transaction();
    t.put(b"k2", b"v").unwrap();
    t.commit().unwrap();
}

/// Found while adding entities to transactions: a prepared transaction recovered by a
/// TransactionDB and committed there, then the DB closed and opened as a plain DB. The commit's
/// data lived only in the prepared section of a WAL below the families' log numbers (kept for
/// it); the plain open skipped that WAL and opened without the committed key. It must refuse,
/// as a WAL with prepared sections is refused, rather than lose an acknowledged commit.
#[test]
fn a_plain_open_does_not_lose_a_recovered_commit_kept_in_a_prepared_wal() {
    let fs = MemFs::new();
    let dir = common::dir();
    let o = mem_opts(&fs);
    let db = open(&o, dir);
    let t = named(&db, "t");
    t.put(b"pp", b"plain").unwrap();
    t.prepare().unwrap();
    std::mem::forget(t);
    crash(db, &fs);
    {
        let db = open(&o, dir);
        let ts = db.prepared_transactions();
        assert_eq!(ts.len(), 1);
        ts[0].commit().unwrap();
        assert_eq!(get(&db, "pp").as_deref(), Some("plain"));
    }
    match DB::open(&o, dir) {
        Ok(db) => assert_eq!(
            db.get(b"pp").unwrap().as_deref(),
            Some(&b"plain"[..]),
            "the commit was lost"
        ),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
            assert!(e.to_string().contains("TransactionDB"), "{e}");
        }
    }
    // Whatever the plain open did, the TransactionDB still has the commit.
    let db = open(&o, dir);
    assert_eq!(get(&db, "pp").as_deref(), Some("plain"));
}
