//! The `rocksdb` crate's `DBAccess` and the types it ties to a database: generic reads over
//! every DB and transaction type, `SnapshotWithThreadMode` (a transaction's snapshot reads
//! through the transaction), `DBRawIteratorWithThreadMode`; and `DB::open_cf_with_opts`, the
//! transaction DB's `create_cf`/`drop_cf` per thread mode.

use shale::{
    DBAccess, DBRawIteratorWithThreadMode, OptimisticTransactionDB, OptimisticTransactionOptions, Options, ReadOptions,
    SnapshotWithThreadMode, TransactionDB, TransactionDBOptions, TransactionOptions, WriteOptions, DB,
};

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

#[test]
fn open_cf_with_opts_gives_each_family_its_own_options() {
    let d = tempfile::tempdir().unwrap();
    let mut merging = Options::default();
    merging.set_merge_operator_associative("concat", crate::rocksdb_api::concat_merge);
    {
        let db = DB::open_cf_with_opts(
            &opts(),
            d.path(),
            [("m", merging.clone()), ("plain", Options::default())],
        )
        .unwrap();
        let (m, plain) = (db.cf_handle("m").unwrap(), db.cf_handle("plain").unwrap());
        db.put_cf(&m, "k", "a").unwrap();
        db.merge_cf(&m, "k", "b").unwrap();
        assert_eq!(db.get_cf(&m, "k").unwrap().as_deref(), Some(&b"ab"[..]));
        // the other family has no merge operator: its merge cannot be resolved
        db.put_cf(&plain, "k", "a").unwrap();
        let merged = db.merge_cf(&plain, "k", "b").and_then(|()| db.get_cf(&plain, "k"));
        assert!(merged.is_err(), "{merged:?}");
        db.delete_cf(&plain, "k").unwrap();
    }
    let db = DB::open_cf_with_opts_for_read_only(&Options::default(), d.path(), [("m", merging)], false).unwrap();
    let m = db.cf_handle("m").unwrap();
    assert_eq!(db.get_cf(&m, "k").unwrap().as_deref(), Some(&b"ab"[..]));
    assert!(db.cf_handle("plain").is_none());
}

#[test]
fn transaction_db_create_and_drop_cf_follow_the_thread_mode() {
    let d = tempfile::tempdir().unwrap();
    {
        // Unannotated: `create_cf` through `&self` exists only in the multi-threaded mode, which
        // it therefore selects (as with the crate).
        let db = TransactionDB::open(&opts(), &TransactionDBOptions::default(), d.path()).unwrap();
        db.create_cf("a", &Options::default()).unwrap();
        assert!(db.create_cf("a", &Options::default()).is_err());
    }
    assert_eq!(DB::list_cf(&Options::default(), d.path()).unwrap(), ["default", "a"]);
    {
        let mut db: TransactionDB =
            TransactionDB::open_cf(&opts(), &TransactionDBOptions::default(), d.path(), ["a"]).unwrap();
        db.drop_cf("a").unwrap();
        db.create_cf("b", &Options::default()).unwrap();
    }
    assert_eq!(DB::list_cf(&Options::default(), d.path()).unwrap(), ["default", "b"]);
}

/// Reads `k1`, `k2` of the default family and of `cf`'s family through the generic calls.
fn read_through<D: DBAccess>(d: &D, cf: &impl shale::AsColumnFamilyRef) -> Vec<Option<Vec<u8>>> {
    let ro = ReadOptions::default();
    let mut out = vec![
        d.get_opt("k1", &ro).unwrap(),
        d.get_pinned_opt("k2", &ro).unwrap().map(|v| v.to_vec()),
        d.get_cf_opt(cf, "k1", &ro).unwrap(),
        d.get_pinned_cf_opt(cf, "k2", &ro).unwrap().map(|v| v.to_vec()),
    ];
    out.extend(d.multi_get_opt(["k1", "k2"], &ro).into_iter().map(Result::unwrap));
    out.extend(
        d.multi_get_cf_opt([(cf, "k1"), (cf, "k2")], &ro)
            .into_iter()
            .map(Result::unwrap),
    );
    out
}

fn v(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

#[test]
fn db_access_reads_each_type_as_its_own_calls_do() {
    let expect_db = vec![v("1"), None, None, v("c2"), v("1"), None, None, v("c2")];
    let fill = |db: &DB| {
        let c = db.cf_handle("c").unwrap();
        db.put("k1", "1").unwrap();
        db.put_cf(&c, "k2", "c2").unwrap();
    };
    let d = tempfile::tempdir().unwrap();
    {
        let db = DB::open_cf(&opts(), d.path().join("plain"), ["c"]).unwrap();
        fill(&db);
        assert_eq!(read_through(&db, &db.cf_handle("c").unwrap()), expect_db);
    }
    let tdb: TransactionDB =
        TransactionDB::open_cf(&opts(), &TransactionDBOptions::default(), d.path().join("t"), ["c"]).unwrap();
    fill(tdb.base_db());
    let c = tdb.cf_handle("c").unwrap();
    assert_eq!(read_through(&tdb, &c), expect_db);
    // a transaction's reads see its own uncommitted writes first
    let txn = tdb.transaction();
    txn.put("k2", "t2").unwrap();
    txn.delete_cf(&c, "k2").unwrap();
    let in_txn = vec![v("1"), v("t2"), None, None, v("1"), v("t2"), None, None];
    assert_eq!(read_through(&txn, &c), in_txn);
    assert!(txn.get_pinned("k2").unwrap().is_some_and(|p| *p == *b"t2"));
    assert!(tdb.get("k2").unwrap().is_none());
    txn.rollback().unwrap();

    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open_cf(&opts(), d.path().join("o"), ["c"]).unwrap();
    fill(&odb);
    assert_eq!(read_through(&odb, &odb.cf_handle("c").unwrap()), expect_db);
}

#[test]
fn a_transaction_snapshot_reads_through_the_transaction() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open_default(d.path()).unwrap();
    // without a snapshot of its own: the latest state
    let txn = db.transaction();
    let snap = txn.snapshot();
    assert!(snap.as_snapshot().is_none());
    assert!(snap.get("k1").unwrap().is_none());
    db.put("k1", "v1").unwrap();
    assert_eq!(snap.get("k1").unwrap(), v("v1"));
    // with one: the state when it was taken, with the transaction's writes on top
    let mut to = TransactionOptions::default();
    to.set_snapshot(true);
    let txn = db.transaction_opt(&WriteOptions::default(), &to);
    db.put("k2", "v2").unwrap();
    let snap = txn.snapshot();
    assert!(snap.as_snapshot().is_some());
    txn.put("k3", "v3").unwrap();
    assert!(snap.get("k2").unwrap().is_none());
    assert_eq!(snap.get("k3").unwrap(), v("v3"));
    assert_eq!(
        snap.multi_get(["k1", "k2", "k3"])
            .into_iter()
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
        [v("v1"), None, v("v3")]
    );
    assert_eq!(snap.get_pinned("k1").unwrap().map(|p| p.to_vec()), v("v1"));
    assert_eq!(txn.get("k2").unwrap(), v("v2"));
    assert!(db.get("k3").unwrap().is_none());
    // the same through an optimistic transaction
    let od = tempfile::tempdir().unwrap();
    let odb: OptimisticTransactionDB = OptimisticTransactionDB::open_default(od.path()).unwrap();
    let mut oo = OptimisticTransactionOptions::default();
    oo.set_snapshot(true);
    let txn = odb.transaction_opt(&WriteOptions::default(), &oo);
    odb.put("k", "after").unwrap();
    let snap = SnapshotWithThreadMode::new(&txn);
    assert!(snap.get("k").unwrap().is_none());
    txn.put("k", "mine").unwrap();
    assert_eq!(snap.get("k").unwrap(), v("mine"));
}

#[test]
fn a_db_snapshot_with_thread_mode_keeps_its_point_in_time() {
    let d = tempfile::tempdir().unwrap();
    let db = DB::open_cf(&opts(), d.path(), ["c"]).unwrap();
    let c = db.cf_handle("c").unwrap();
    db.put("k", "old").unwrap();
    db.put_cf(&c, "k", "c-old").unwrap();
    let snap = SnapshotWithThreadMode::new(&db);
    db.put("k", "new").unwrap();
    db.put_cf(&c, "k", "c-new").unwrap();
    db.flush().unwrap();
    assert_eq!(snap.get("k").unwrap(), v("old"));
    assert_eq!(snap.get_cf(&c, "k").unwrap(), v("c-old"));
    assert_eq!(snap.get_pinned_cf(&c, "k").unwrap().map(|p| p.to_vec()), v("c-old"));
    assert_eq!(
        snap.multi_get_cf([(&c, "k")])
            .into_iter()
            .map(Result::unwrap)
            .collect::<Vec<_>>(),
        [v("c-old")]
    );
    // its snapshot replaces the one of the read options passed in
    let newer = db.snapshot();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&newer);
    assert_eq!(snap.get_opt("k", ro).unwrap(), v("old"));
    let mut ro = ReadOptions::default();
    ro.set_snapshot(snap.as_snapshot().unwrap());
    assert_eq!(db.get_opt("k", &ro).unwrap(), v("old"));
}

fn item_of<D: DBAccess>(it: &DBRawIteratorWithThreadMode<'_, D>) -> Option<(Vec<u8>, Vec<u8>)> {
    it.item().map(|(k, v)| (k.to_vec(), v.to_vec()))
}

#[test]
fn raw_iterators_are_tied_to_their_db_and_yield_items() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open_default(d.path()).unwrap();
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    let mut it = db.raw_iterator();
    assert_eq!(item_of(&it), None);
    it.seek_to_first();
    assert_eq!(item_of(&it), Some((b"a".to_vec(), b"1".to_vec())));
    it.next();
    assert_eq!(it.item(), Some((&b"b"[..], &b"2"[..])));
    it.next();
    assert_eq!(it.item(), None);
    let base = db.base_db();
    let mut it = base.raw_iterator_cf(&base.cf_handle("default").unwrap());
    it.seek_to_last();
    assert_eq!(item_of(&it), Some((b"b".to_vec(), b"2".to_vec())));
}

#[test]
fn a_transaction_db_snapshot_is_tied_to_the_db_and_keeps_its_point_in_time() {
    let d = tempfile::tempdir().unwrap();
    let db: TransactionDB = TransactionDB::open_default(d.path()).unwrap();
    db.put("k", "old").unwrap();
    let snap = db.snapshot();
    db.put("k", "new").unwrap();
    assert_eq!(snap.get("k").unwrap(), v("old"));
    let mut ro = ReadOptions::default();
    ro.set_snapshot(snap.as_snapshot().unwrap());
    assert_eq!(db.get_opt("k", &ro).unwrap(), v("old"));
    let txn = db.transaction();
    assert_eq!(txn.get_opt("k", &ro).unwrap(), v("old"));
    assert_eq!(db.get("k").unwrap(), v("new"));
}
