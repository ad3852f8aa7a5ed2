//! The transaction DBs under the `rocksdb` crate's thread modes (`TransactionDB<MultiThreaded>`,
//! the default `SingleThreaded`), their property calls and `flush_wal`, and
//! `checkpoint::TransactionDBCheckpoint`.

use shale::checkpoint::TransactionDBCheckpoint;
use shale::{
    ErrorKind, MultiThreaded, OptimisticTransactionDB, Options, SingleThreaded, TransactionDB, TransactionDBOptions,
    TransactionOptions, WriteOptions,
};

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o
}

fn get(db: &TransactionDB, k: &str) -> Option<Vec<u8>> {
    db.get(k).unwrap()
}

#[test]
fn a_multi_threaded_transaction_db_works_and_has_the_property_calls() {
    let d = tempfile::tempdir().unwrap();
    // Nothing names the mode: the property call, which only the multi-threaded DB has (as in
    // the crate), fixes it.
    let db = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    db.put("a", "1").unwrap();
    let t = db.transaction();
    t.put("b", "2").unwrap();
    t.commit().unwrap();
    assert_eq!(db.property_int_value("rocksdb.estimate-num-keys").unwrap(), Some(2));
    assert_eq!(
        db.property_value("rocksdb.num-immutable-mem-table").unwrap().as_deref(),
        Some("0")
    );
    assert_eq!(db.property_value("rocksdb.no-such-property").unwrap(), None);
    assert_eq!(db.property_int_value("rocksdb.no-such-property").unwrap(), None);
    db.flush_wal(true).unwrap();
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
    let _: &TransactionDB<MultiThreaded> = &db;
}

#[test]
fn both_modes_open_the_same_data() {
    let d = tempfile::tempdir().unwrap();
    {
        let db: TransactionDB<SingleThreaded> =
            TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
        db.put("k", "single").unwrap();
        db.flush_wal(false).unwrap();
        assert_eq!(
            db.base_db().property_int_value("rocksdb.estimate-num-keys").unwrap(),
            Some(1)
        );
    }
    {
        let db: TransactionDB<MultiThreaded> =
            TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
        assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"single"[..]));
        db.put("k", "multi").unwrap();
    }
    let db: TransactionDB = TransactionDB::open_default(d.path()).unwrap();
    assert_eq!(get(&db, "k").as_deref(), Some(&b"multi"[..]));
}

#[test]
fn optimistic_transaction_dbs_open_in_either_mode() {
    let d = tempfile::tempdir().unwrap();
    {
        let db: OptimisticTransactionDB<MultiThreaded> = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
        let t = db.transaction();
        t.put("x", "1").unwrap();
        t.commit().unwrap();
        // A conflicting write between a read-for-update and the commit is caught.
        let t = db.transaction();
        assert_eq!(t.get_for_update("x", true).unwrap().as_deref(), Some(&b"1"[..]));
        db.put("x", "2").unwrap();
        t.put("x", "3").unwrap();
        assert_eq!(t.commit().unwrap_err().kind(), ErrorKind::Busy);
    }
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&opts(), d.path()).unwrap();
    assert_eq!(db.get("x").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_transaction_db_checkpoint_opens_with_its_data() {
    let d = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    db.put("k1", "v1").unwrap();
    let t = db.transaction();
    t.put("k2", "v2").unwrap();
    t.commit().unwrap();
    let cp = TransactionDBCheckpoint::new(&db).unwrap();
    let flushed = out.path().join("flushed");
    cp.create_checkpoint(&flushed).unwrap();
    db.put("k3", "after").unwrap();
    // Without a flush the memtable's data reaches the checkpoint through the copied WAL.
    let from_wal = out.path().join("wal");
    cp.create_checkpoint_with_log_size(&from_wal, u64::MAX).unwrap();
    assert_eq!(
        cp.create_checkpoint(&flushed).unwrap_err().kind(),
        ErrorKind::InvalidArgument,
        "an existing directory is refused"
    );

    let a: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), &flushed).unwrap();
    assert_eq!(get(&a, "k1").as_deref(), Some(&b"v1"[..]));
    assert_eq!(get(&a, "k2").as_deref(), Some(&b"v2"[..]));
    assert_eq!(get(&a, "k3"), None, "written after the checkpoint");
    let b: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), &from_wal).unwrap();
    assert_eq!(get(&b, "k2").as_deref(), Some(&b"v2"[..]));
    assert_eq!(get(&b, "k3").as_deref(), Some(&b"after"[..]));
}

#[test]
fn a_transaction_db_checkpoint_keeps_prepared_transactions() {
    let d = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cp");
    let db: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
    let t = db.transaction_opt(&WriteOptions::default(), &TransactionOptions::default());
    t.set_name(b"xa").unwrap();
    t.put("p", "prepared").unwrap();
    t.prepare().unwrap();
    TransactionDBCheckpoint::new(&db)
        .unwrap()
        .create_checkpoint(&out)
        .unwrap();
    t.rollback().unwrap();

    let cp: TransactionDB = TransactionDB::open(&opts(), &TransactionDBOptions::default(), &out).unwrap();
    assert_eq!(get(&cp, "p"), None, "prepared, not committed");
    let recovered = cp.prepared_transactions();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].get_name().as_deref(), Some(&b"xa"[..]));
    for r in recovered {
        r.commit().unwrap();
    }
    assert_eq!(get(&cp, "p").as_deref(), Some(&b"prepared"[..]));
}

#[test]
fn multi_get_cf_reads_families_from_the_db_and_the_transaction() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.create_missing_column_families(true);
    let db: TransactionDB =
        TransactionDB::open_cf(&o, &TransactionDBOptions::default(), d.path(), ["default", "cf1"]).unwrap();
    let cf0 = db.cf_handle("default").unwrap();
    let cf1 = db.cf_handle("cf1").unwrap();
    db.put_cf(&cf1, "k", "db").unwrap();
    db.put_cf(&cf0, "k0", "zero").unwrap();
    let from_db: Vec<_> = db
        .multi_get_cf([(&cf0, "k"), (&cf1, "k"), (&cf0, "k0")])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(from_db, [None, Some(b"db".to_vec()), Some(b"zero".to_vec())]);

    let t = db.transaction();
    t.put_cf(&cf0, "k", "txn").unwrap();
    t.delete_cf(&cf1, "k").unwrap();
    let seen: Vec<_> = t
        .multi_get_cf([(&cf0, "k"), (&cf1, "k"), (&cf0, "k0")])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        seen,
        [Some(b"txn".to_vec()), None, Some(b"zero".to_vec())],
        "the transaction's writes first"
    );
    let plain: Vec<_> = t
        .multi_get_opt(["k", "k0"], &shale::ReadOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(plain, [Some(b"txn".to_vec()), Some(b"zero".to_vec())]);
    drop(t);
    assert_eq!(
        db.multi_get_cf([(&cf1, "k")])[0].as_ref().unwrap().as_deref(),
        Some(&b"db"[..]),
        "rolled back"
    );
}
