//! `WriteBatch::iterate` / `iterate_cf` (the callbacks RocksDB's C API hands a batch's
//! records to), `WriteBatch::from_data` on good and bad bytes, and the transaction form of
//! the batch type.

use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::{Options, WriteBatch, WriteBatchIterator, WriteBatchIteratorCf, WriteBatchWithTransaction, DB};

/// What the callbacks saw, one line per call.
#[derive(Default)]
struct Log(Vec<String>);

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl WriteBatchIterator for Log {
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.0.push(format!("put {}={}", s(key), s(value)));
    }
    fn delete(&mut self, key: &[u8]) {
        self.0.push(format!("del {}", s(key)));
    }
}

impl WriteBatchIteratorCf for Log {
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        self.0.push(format!("put {cf_id} {}={}", s(key), s(value)));
    }
    fn delete_cf(&mut self, cf_id: u32, key: &[u8]) {
        self.0.push(format!("del {cf_id} {}", s(key)));
    }
    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]) {
        self.0.push(format!("merge {cf_id} {}+{}", s(key), s(value)));
    }
}

fn plain(b: &WriteBatch) -> Vec<String> {
    let mut log = Log::default();
    b.iterate(&mut log);
    log.0
}

fn with_cf(b: &WriteBatch) -> Vec<String> {
    let mut log = Log::default();
    b.iterate_cf(&mut log);
    log.0
}

/// A DB with family "x" (id 1) on a memory file system.
fn db_with_family() -> DB {
    let fs = MemFs::new();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs));
    DB::open_cf(&o, "/db", ["x"]).unwrap()
}

#[test]
fn iterate_reports_default_family_puts_and_deletes_and_skips_the_rest_it_knows() {
    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    b.merge(b"m", b"op");
    b.delete(b"b");
    b.single_delete(b"c");
    b.put_log_data(b"blob");
    b.put(b"d", b"4");
    assert_eq!(plain(&b), ["put a=1", "del b", "put d=4"]);
}

#[test]
fn iterate_stops_at_a_record_it_has_no_callback_for() {
    let db = db_with_family();
    let x = db.cf_handle("x").unwrap();

    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    b.put_cf(&x, b"k", b"v");
    b.put(b"after", b"2");
    assert_eq!(plain(&b), ["put a=1"], "a record of another family ends the walk");

    let mut b = WriteBatch::default();
    b.delete(b"a");
    b.delete_range(b"a", b"z");
    b.put(b"after", b"2");
    assert_eq!(plain(&b), ["del a"], "a range deletion ends the walk");
}

#[test]
fn iterate_cf_reports_puts_deletes_and_merges_with_family_ids() {
    let db = db_with_family();
    let x = db.cf_handle("x").unwrap();
    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    b.put_cf(&x, b"k", b"v");
    b.merge(b"m", b"op");
    b.merge_cf(&x, b"n", b"op2");
    b.delete_cf(&x, b"k");
    b.delete(b"a");
    b.put_log_data(b"blob");
    b.single_delete(b"skipped");
    b.put(b"last", b"9");
    assert_eq!(
        with_cf(&b),
        [
            "put 0 a=1",
            "put 1 k=v",
            "merge 0 m+op",
            "merge 1 n+op2",
            "del 1 k",
            "del 0 a",
            "put 0 last=9"
        ]
    );
    // The same batch written and read back from its bytes reads the same.
    assert_eq!(with_cf(&WriteBatch::from_data(b.data())), with_cf(&b));
}

#[test]
fn iterate_cf_stops_at_range_deletions_and_single_deletes_of_other_families() {
    let db = db_with_family();
    let x = db.cf_handle("x").unwrap();

    let mut b = WriteBatch::default();
    b.put_cf(&x, b"k", b"v");
    b.delete_range_cf(&x, b"a", b"z");
    b.put(b"after", b"2");
    assert_eq!(with_cf(&b), ["put 1 k=v"]);

    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    b.single_delete_cf(&x, b"k");
    b.put(b"after", b"2");
    assert_eq!(with_cf(&b), ["put 0 a=1"]);
}

#[test]
fn iterate_accepts_trait_objects() {
    let mut b = WriteBatch::default();
    b.put(b"a", b"1");
    let mut log = Log::default();
    let cb: &mut dyn WriteBatchIterator = &mut log;
    b.iterate(cb);
    let cb: &mut dyn WriteBatchIteratorCf = &mut log;
    b.iterate_cf(cb);
    assert_eq!(log.0, ["put a=1", "put 0 a=1"]);
}

#[test]
fn from_data_of_bad_bytes_never_panics_and_the_db_refuses_the_batch() {
    let db = db_with_family();
    let mut good = WriteBatch::default();
    good.put(b"a", b"1");
    good.put(b"b", b"2");
    let bytes = good.data().to_vec();

    // Too short for the header: an empty batch that `write` refuses.
    for n in 0..12 {
        let b = WriteBatch::from_data(&bytes[..n]);
        assert_eq!(b.len(), 0);
        assert!(plain(&b).is_empty());
        assert!(db.write(b).unwrap_err().is_corruption(), "{n} bytes");
    }
    // Cut inside the second record: the first is still reported, the write refused.
    let cut = WriteBatch::from_data(&bytes[..bytes.len() - 1]);
    assert_eq!(plain(&cut), ["put a=1"]);
    assert!(db.write(cut).unwrap_err().is_corruption());
    // A count that does not match the records.
    let mut wrong = bytes.clone();
    wrong[8] = 5;
    let wrong = WriteBatch::from_data(&wrong);
    assert_eq!(plain(&wrong), ["put a=1", "put b=2"]);
    assert!(db.write(wrong).unwrap_err().is_corruption());
    // An unknown tag.
    let mut unknown = bytes.clone();
    unknown[12] = 0x7f;
    assert!(plain(&WriteBatch::from_data(&unknown)).is_empty());
    // Nothing of the refused batches reached the DB; a well-formed copy is written.
    assert_eq!(db.get(b"a").unwrap(), None);
    let copy = WriteBatch::from_data(&bytes);
    assert_eq!(copy, good);
    db.write(copy).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));

    // Pseudo-random bytes after a valid header: no panic anywhere.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..400 {
        let mut data = vec![0u8; 12];
        for _ in 0..len % 40 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data.push(x as u8 % 0x1c);
        }
        let b = WriteBatch::from_data(&data);
        let _ = plain(&b);
        let _ = with_cf(&b);
        let _ = (b.len(), b.is_empty(), b.data().len());
        let _ = db.write(b);
    }
}

#[test]
fn clear_forgets_that_the_bytes_were_bad() {
    let db = db_with_family();
    let mut b = WriteBatch::from_data(b"short");
    b.clear();
    b.put(b"k", b"v");
    db.write(b).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn capacity_and_transaction_forms_encode_like_the_plain_batch() {
    let mut plain_batch = WriteBatch::default();
    let mut sized = WriteBatch::with_capacity_bytes(3);
    let mut txn = WriteBatchWithTransaction::<true>::with_capacity_bytes(1 << 16);
    for b in [&mut plain_batch, &mut sized] {
        b.put(b"k", b"v");
        b.delete(b"d");
    }
    txn.put(b"k", b"v");
    txn.delete(b"d");
    assert_eq!(sized.data(), plain_batch.data());
    assert_eq!(txn.data(), plain_batch.data());
    assert_eq!(txn.len(), 2);
    let mut log = Log::default();
    txn.iterate(&mut log);
    assert_eq!(log.0, ["put k=v", "del d"]);
}

#[test]
fn transaction_dbs_take_both_forms_of_the_batch() {
    let mut o = Options::default();
    o.create_if_missing(true);
    let d = tempfile::tempdir().unwrap();
    let db: shale::TransactionDB =
        shale::TransactionDB::open(&o, &shale::TransactionDBOptions::new(), d.path().join("p")).unwrap();
    let mut txn_batch = WriteBatchWithTransaction::<true>::default();
    txn_batch.put(b"t", b"1");
    db.write(txn_batch).unwrap();
    let mut plain_batch = WriteBatch::default();
    plain_batch.put(b"p", b"2");
    db.write(plain_batch).unwrap();
    assert_eq!(db.get(b"t").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"p").unwrap().as_deref(), Some(&b"2"[..]));
    // A malformed batch is refused whichever type carries it.
    assert!(db.write(WriteBatchWithTransaction::<true>::from_data(b"x")).is_err());

    let odb: shale::OptimisticTransactionDB = shale::OptimisticTransactionDB::open(&o, d.path().join("o")).unwrap();
    let mut txn_batch = WriteBatchWithTransaction::<true>::default();
    txn_batch.put(b"t", b"3");
    odb.write(txn_batch).unwrap();
    assert!(odb.write(WriteBatchWithTransaction::<true>::from_data(b"x")).is_err());
    assert_eq!(odb.get(b"t").unwrap().as_deref(), Some(&b"3"[..]));
}
