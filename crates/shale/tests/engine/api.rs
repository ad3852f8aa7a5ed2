//! The public API on a real directory: basic operations, properties, read-only opens, destroy.

use shale::{IteratorMode, Options, ReadOptions, WriteBatch, DB};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send + 'static>() {}

#[test]
fn db_is_send_sync_and_iterators_are_owned() {
    assert_send_sync::<DB>();
    assert_send::<shale::DBRawIterator>();
    assert_send::<shale::DBIterator>();
    assert_send_sync::<shale::Snapshot>();
}

fn opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o
}

#[test]
fn basic_operations_and_properties() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&opts(), dir.path()).unwrap();
    assert_eq!(db.get(b"missing").unwrap(), None);
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    db.put(b"c", b"3").unwrap();
    db.delete(b"b").unwrap();
    let mut batch = WriteBatch::new();
    batch.put(b"d", b"4");
    batch.delete(b"a");
    batch.put(b"e", b"5");
    assert_eq!(batch.len(), 3);
    db.write(batch).unwrap();
    let got = db.multi_get([&b"a"[..], b"b", b"c", b"d", b"e"]);
    let got: Vec<Option<Vec<u8>>> = got.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        got,
        vec![
            None,
            None,
            Some(b"3".to_vec()),
            Some(b"4".to_vec()),
            Some(b"5".to_vec())
        ]
    );
    assert_eq!(
        db.property_value("rocksdb.num-files-at-level0").unwrap().as_deref(),
        Some("0")
    );
    db.flush().unwrap();
    assert_eq!(
        db.property_value("rocksdb.num-files-at-level0").unwrap().as_deref(),
        Some("1")
    );
    // RocksDB's estimate: entries - 2 * deletions (5 entries, 2 of them deletions)
    assert_eq!(db.property_int_value("rocksdb.estimate-num-keys").unwrap(), Some(1));
    let stats = db.property_value("rocksdb.stats").unwrap().unwrap();
    assert!(stats.contains("Compaction Stats") && stats.contains("L0"), "{stats}");
    assert_eq!(db.property_value("rocksdb.no-such-property").unwrap(), None);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(
        db.property_value("rocksdb.num-files-at-level0").unwrap().as_deref(),
        Some("0")
    );
    // with dynamic level bytes (the default, as RocksDB) a full compaction goes to the last level
    assert_eq!(
        db.property_value("rocksdb.num-files-at-level6").unwrap().as_deref(),
        Some("1")
    );
    // the bottommost compaction dropped the deletions
    assert_eq!(db.property_int_value("rocksdb.estimate-num-keys").unwrap(), Some(3));
    // reverse iteration through the Rust iterator
    let keys: Vec<Vec<u8>> = db.iterator(IteratorMode::End).map(|r| r.unwrap().0.to_vec()).collect();
    assert_eq!(keys, vec![b"e".to_vec(), b"d".to_vec(), b"c".to_vec()]);
    let keys: Vec<Vec<u8>> = db
        .iterator(IteratorMode::From(b"cz", shale::Direction::Forward))
        .map(|r| r.unwrap().0.to_vec())
        .collect();
    assert_eq!(keys, vec![b"d".to_vec(), b"e".to_vec()]);
}

#[test]
fn snapshots_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&opts(), dir.path()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), format!("v{i}")).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), b"new").unwrap();
    }
    db.delete(b"k050").unwrap();
    db.flush().unwrap();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt(b"k050", &ro).unwrap(), Some(b"v50".to_vec()));
    assert_eq!(db.get(b"k050").unwrap(), None);
    ro.set_iterate_lower_bound(b"k010".to_vec());
    ro.set_iterate_upper_bound(b"k020".to_vec());
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert!(it.value().unwrap().starts_with(b"v"));
        n += 1;
        it.next();
    }
    assert_eq!(n, 10);
    it.seek_to_last();
    assert_eq!(it.key(), Some(&b"k019"[..]));
    it.seek(b"k000");
    assert_eq!(it.key(), Some(&b"k010"[..]), "seek clamps to the lower bound");
    it.seek_for_prev(b"k999");
    assert_eq!(it.key(), Some(&b"k019"[..]), "seek_for_prev clamps to the upper bound");
    drop(snap);
    assert_eq!(
        db.property_int_value("rocksdb.num-snapshots").unwrap(),
        Some(1),
        "the iterator holds it"
    );
    drop(it);
    assert_eq!(db.property_int_value("rocksdb.num-snapshots").unwrap(), Some(0));
}

#[test]
fn read_only_open_sees_wal_data_and_destroy_removes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = DB::open(&opts(), &path).unwrap();
        db.put(b"x", b"in-wal").unwrap();
    }
    {
        let ro = DB::open_for_read_only(&Options::default(), &path, false).unwrap();
        assert_eq!(ro.get(b"x").unwrap(), Some(b"in-wal".to_vec()));
        assert!(ro.put(b"y", b"1").unwrap_err().is_not_supported());
        // a read-only open leaves no new files
    }
    {
        // the writer can open while no writer holds the lock; a second writer is refused
        let db = DB::open(&opts(), &path).unwrap();
        assert!(DB::open(&opts(), &path).unwrap_err().is_io());
        assert!(DB::destroy(&Options::default(), &path).unwrap_err().is_io());
        drop(db);
    }
    DB::destroy(&Options::default(), &path).unwrap();
    assert!(!path.join("CURRENT").exists());
    let o = Options::default();
    assert!(DB::open(&o, &path).unwrap_err().is_invalid_argument());
}
