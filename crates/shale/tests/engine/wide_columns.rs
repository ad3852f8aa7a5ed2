//! Wide-column entities (`put_entity` / `get_entity`, RocksDB's `PutEntity` / `GetEntity`):
//! plain reads see the default column, entity reads see every column, through the memtable,
//! flush, compaction and reopen; merges over an entity merge into its default column; deletes
//! hide it; the batch encoding is RocksDB's.

use crate::common::{mem_opts, Rng};
use crate::rocksdb_api::concat_merge;

use shale::fs::testing::MemFs;
use shale::wide_columns::{WideColumn, DEFAULT_WIDE_COLUMN_NAME};
use shale::{Direction, Error, IteratorMode, Options, ReadOptions, WriteBatch, DB};

fn col(n: &str, v: &str) -> WideColumn {
    WideColumn::new(n, v)
}

fn opts(fs: &MemFs) -> Options {
    let mut o = mem_opts(fs);
    o.set_merge_operator_associative("concat", concat_merge);
    o
}

/// Every `(key, value, columns)` the iterator yields, forward then checked against backward.
fn scan(db: &DB) -> Vec<(Vec<u8>, Vec<u8>, Vec<WideColumn>)> {
    let mut it = db.raw_iterator();
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push((
            it.key().unwrap().to_vec(),
            it.value().unwrap().to_vec(),
            it.columns().unwrap(),
        ));
        it.next();
    }
    it.status().unwrap();
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((
            it.key().unwrap().to_vec(),
            it.value().unwrap().to_vec(),
            it.columns().unwrap(),
        ));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert_eq!(fwd, back, "forward and backward iteration differ");
    fwd
}

/// The reads of a small data set: entities with and without a default column, a plain value,
/// a merge over an entity, a deleted entity.
fn check_reads(db: &DB) {
    assert_eq!(db.get("e1").unwrap(), Some(b"dv".to_vec()));
    assert_eq!(
        db.get("e2").unwrap(),
        Some(Vec::new()),
        "no default column: empty value"
    );
    assert_eq!(db.get("p").unwrap(), Some(b"plain".to_vec()));
    assert_eq!(db.get_pinned("e1").unwrap().as_deref(), Some(&b"dv"[..]));
    assert_eq!(
        db.get_entity("e1").unwrap(),
        Some(vec![col("", "dv"), col("a", "1"), col("b", "2")])
    );
    assert_eq!(
        db.get_entity("e2").unwrap(),
        Some(vec![col("c1", "v1"), col("c2", "v2")])
    );
    assert_eq!(db.get_entity("p").unwrap(), Some(vec![col("", "plain")]));
    assert_eq!(db.get_entity("gone").unwrap(), None);
    assert_eq!(db.get("gone").unwrap(), None);
    assert_eq!(db.get_entity("absent").unwrap(), None);
    // Merge over an entity: the default column merged, the others kept.
    assert_eq!(db.get("m").unwrap(), Some(b"base+x+y".to_vec()));
    assert_eq!(
        db.get_entity("m").unwrap(),
        Some(vec![col("", "base+x+y"), col("z", "keep")])
    );
    // Merge over an entity without a default column: no existing value.
    assert_eq!(db.get("mn").unwrap(), Some(b"+q".to_vec()));
    assert_eq!(db.get_entity("mn").unwrap(), Some(vec![col("", "+q"), col("k", "v")]));
    let got = db.multi_get_entity(["e1", "absent", "p", "m"]);
    let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        got,
        vec![
            Some(vec![col("", "dv"), col("a", "1"), col("b", "2")]),
            None,
            Some(vec![col("", "plain")]),
            Some(vec![col("", "base+x+y"), col("z", "keep")]),
        ]
    );
    let vals: Vec<_> = db
        .multi_get(["e1", "e2", "m"])
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        vals,
        vec![Some(b"dv".to_vec()), Some(Vec::new()), Some(b"base+x+y".to_vec())]
    );
    let items = scan(db);
    let keys: Vec<&[u8]> = items.iter().map(|(k, _, _)| k.as_slice()).collect();
    assert_eq!(keys, vec![&b"e1"[..], b"e2", b"m", b"mn", b"p"]);
    assert_eq!(items[0].1, b"dv");
    assert_eq!(items[0].2, vec![col("", "dv"), col("a", "1"), col("b", "2")]);
    assert_eq!(items[1].1, b"");
    assert_eq!(items[1].2, vec![col("c1", "v1"), col("c2", "v2")]);
    assert_eq!(items[2].1, b"base+x+y");
    assert_eq!(items[2].2, vec![col("", "base+x+y"), col("z", "keep")]);
    assert_eq!(items[3].2, vec![col("", "+q"), col("k", "v")]);
    assert_eq!(items[4].2, vec![col("", "plain")]);
    // The Rust iterator yields the default column's value.
    let pairs: Vec<_> = db.iterator(IteratorMode::Start).map(Result::unwrap).collect();
    assert_eq!(&*pairs[0].1, b"dv");
    let pairs: Vec<_> = db
        .iterator(IteratorMode::From(b"m", Direction::Reverse))
        .map(Result::unwrap)
        .collect();
    assert_eq!(&*pairs[0].0, b"m");
    assert_eq!(&*pairs[0].1, b"base+x+y");
}

fn write_data(db: &DB) {
    db.put_entity("e1", &[("b", "2"), ("", "dv"), ("a", "1")]).unwrap();
    db.put_entity("e2", &[("c2", "v2"), ("c1", "v1")]).unwrap();
    db.put("p", "plain").unwrap();
    db.put_entity("gone", &[("", "x"), ("y", "z")]).unwrap();
    db.delete("gone").unwrap();
    db.put_entity("m", &[(&b"z"[..], "keep"), (DEFAULT_WIDE_COLUMN_NAME, "base")])
        .unwrap();
    db.merge("m", "+x").unwrap();
    db.put_entity("mn", &[("k", "v")]).unwrap();
    db.merge("mn", "+q").unwrap();
}

#[test]
fn entities_read_back_from_memtable_tables_compaction_and_reopen() {
    let fs = MemFs::new();
    let o = opts(&fs);
    {
        let db = DB::open(&o, "/db").unwrap();
        write_data(&db);
        db.merge("m", "+y").unwrap();
        check_reads(&db);
    }
    // WAL replay.
    let db = DB::open(&o, "/db").unwrap();
    check_reads(&db);
    db.flush().unwrap();
    check_reads(&db);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check_reads(&db);
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    check_reads(&db);
}

#[test]
fn merge_over_an_entity_in_a_table_and_compaction_keeps_the_other_columns() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let db = DB::open(&o, "/db").unwrap();
    db.put_entity("m", &[("z", "keep"), ("", "base")]).unwrap();
    db.put_entity("mn", &[("k", "v")]).unwrap();
    db.flush().unwrap();
    db.merge("m", "+x").unwrap();
    db.merge("mn", "+q").unwrap();
    db.flush().unwrap();
    db.merge("m", "+y").unwrap();
    assert_eq!(db.get("m").unwrap(), Some(b"base+x+y".to_vec()));
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(
        db.get_entity("m").unwrap(),
        Some(vec![col("", "base+x+y"), col("z", "keep")])
    );
    assert_eq!(db.get_entity("mn").unwrap(), Some(vec![col("", "+q"), col("k", "v")]));
    // After compaction the merges are folded into one entity per key.
    let n = db.property_int_value("rocksdb.estimate-num-keys").unwrap();
    assert_eq!(n, Some(2));
}

#[test]
fn deletes_and_overwrites_hide_entities_through_compaction() {
    let fs = MemFs::new();
    let o = opts(&fs);
    let db = DB::open(&o, "/db").unwrap();
    db.put_entity("a", &[("", "1"), ("x", "2")]).unwrap();
    db.put_entity("b", &[("x", "2")]).unwrap();
    db.put_entity("c", &[("x", "3")]).unwrap();
    db.put_entity("s", &[("x", "4")]).unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    db.delete("a").unwrap();
    db.put("b", "plain-now").unwrap();
    db.put_entity("c", &[("y", "new")]).unwrap();
    db.single_delete("s").unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(db.get_entity("a").unwrap(), None);
    assert_eq!(db.get_entity("b").unwrap(), Some(vec![col("", "plain-now")]));
    assert_eq!(db.get_entity("c").unwrap(), Some(vec![col("y", "new")]));
    assert_eq!(db.get("s").unwrap(), None);
    // The snapshot still sees the old entities.
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    assert_eq!(
        db.get_entity_opt("a", &ro).unwrap(),
        Some(vec![col("", "1"), col("x", "2")])
    );
    assert_eq!(db.get_entity_opt("c", &ro).unwrap(), Some(vec![col("x", "3")]));
    drop(snap);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let keys: Vec<_> = scan(&db).into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
}

#[test]
fn column_families_take_entities() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.create_missing_column_families(true);
    {
        let db = DB::open_cf(&o, "/db", ["default", "cf1"]).unwrap();
        let cf = db.cf_handle("cf1").unwrap();
        db.put_entity_cf(&cf, "k", &[("n", "v"), ("", "d")]).unwrap();
        let mut b = WriteBatch::new();
        b.put_entity_cf(&cf, "k2", &[("n2", "v2")]).unwrap();
        db.write(b).unwrap();
        assert_eq!(db.get_cf(&cf, "k").unwrap(), Some(b"d".to_vec()));
        assert_eq!(db.get("k").unwrap(), None);
    }
    let db = DB::open_cf(&o, "/db", ["default", "cf1"]).unwrap();
    let cf = db.cf_handle("cf1").unwrap();
    assert_eq!(
        db.get_entity_cf(&cf, "k").unwrap(),
        Some(vec![col("", "d"), col("n", "v")])
    );
    db.flush_cf(&cf).unwrap();
    assert_eq!(db.get_entity_cf(&cf, "k2").unwrap(), Some(vec![col("n2", "v2")]));
    let got: Vec<_> = db
        .multi_get_entity_cf(&cf, ["k2", "k"], &ReadOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        got,
        vec![Some(vec![col("n2", "v2")]), Some(vec![col("", "d"), col("n", "v")])]
    );
    let mut it = db.raw_iterator_cf(&cf);
    it.seek(b"k2");
    assert_eq!(it.columns().unwrap(), vec![col("n2", "v2")]);
}

#[test]
fn the_batch_record_is_rocksdbs_and_bad_entities_are_refused() {
    let mut b = WriteBatch::new();
    b.put_entity("k", &[("c2", "v2"), ("c1", "v1")]).unwrap();
    // Header (sequence 0, count 1), tag 0x16, the key, the entity as RocksDB 9.8.4 writes it.
    let mut want = vec![0u8; 8];
    want.extend_from_slice(&1u32.to_le_bytes());
    want.extend_from_slice(b"\x16\x01k\x0e\x01\x02\x02c1\x02\x02c2\x02v1v2");
    assert_eq!(b.data(), &want[..]);
    assert!(matches!(
        b.put_entity("k", &[("x", "1"), ("x", "2")]),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(b.len(), 1, "a refused entity is not recorded");

    let fs = MemFs::new();
    let db = DB::open(&opts(&fs), "/db").unwrap();
    assert!(matches!(
        db.put_entity("k", &[("x", "1"), ("x", "2")]),
        Err(Error::InvalidArgument(_))
    ));
    // A batch from raw bytes whose entity does not decode: refused before the WAL.
    let mut bad = vec![0u8; 8];
    bad.extend_from_slice(&1u32.to_le_bytes());
    bad.extend_from_slice(b"\x16\x01k\x04\x01\x01\x05a");
    let r = db.write(WriteBatch::from_data(&bad));
    assert!(matches!(r, Err(Error::Corruption { .. })), "{r:?}");
    assert_eq!(db.get("k").unwrap(), None);
    db.write(b).unwrap();
    assert_eq!(
        db.get_entity("k").unwrap(),
        Some(vec![col("c1", "v1"), col("c2", "v2")])
    );
}

/// Random puts, entities, merges and deletes against a model of columns, checked through
/// reads, iteration, flushes and compactions.
#[test]
fn random_entity_writes_match_a_model() {
    use std::collections::BTreeMap;
    type Cols = BTreeMap<Vec<u8>, Vec<u8>>;
    let fs = MemFs::new();
    let o = opts(&fs);
    let db = DB::open(&o, "/db").unwrap();
    let mut model: BTreeMap<Vec<u8>, Cols> = BTreeMap::new();
    let mut rng = Rng::new(37);
    let as_cols =
        |c: &Cols| -> Vec<WideColumn> { c.iter().map(|(n, v)| WideColumn::new(n.clone(), v.clone())).collect() };
    for step in 0..3000u32 {
        let k = format!("k{:02}", rng.below(40)).into_bytes();
        match rng.below(10) {
            0..=2 => {
                let v = format!("p{step}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, Cols::from([(Vec::new(), v)]));
            }
            3..=5 => {
                let mut c = Cols::new();
                for _ in 0..rng.below(4) {
                    let name = if rng.below(3) == 0 {
                        Vec::new()
                    } else {
                        format!("c{}", rng.below(5)).into_bytes()
                    };
                    c.insert(name, format!("v{step}").into_bytes());
                }
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = c.clone().into_iter().rev().collect();
                db.put_entity(&k, &pairs).unwrap();
                model.insert(k, c);
            }
            6..=7 => {
                let op = format!("+{step}").into_bytes();
                db.merge(&k, &op).unwrap();
                let c = model.entry(k).or_default();
                c.entry(Vec::new()).or_default().extend_from_slice(&op);
            }
            _ => {
                db.delete(&k).unwrap();
                model.remove(&k);
            }
        }
        if step % 500 == 499 {
            db.flush().unwrap();
        }
        if step % 1500 == 1499 {
            db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        if step % 250 == 0 || step == 2999 {
            let items = scan(&db);
            let want: Vec<(Vec<u8>, Vec<u8>, Vec<WideColumn>)> = model
                .iter()
                .map(|(k, c)| (k.clone(), c.get(&Vec::new()).cloned().unwrap_or_default(), as_cols(c)))
                .collect();
            assert_eq!(items, want, "step {step}");
            for (k, c) in &model {
                assert_eq!(db.get_entity(k).unwrap(), Some(as_cols(c)), "step {step}");
                assert_eq!(
                    db.get(k).unwrap(),
                    Some(c.get(&Vec::new()).cloned().unwrap_or_default())
                );
            }
        }
    }
}

/// The one table file in `dir`.
fn the_table_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert_eq!(v.len(), 1, "{v:?}");
    v.pop().unwrap()
}

/// `sst_dump --command=scan` prints an entity's columns as RocksDB's sst_dump does, the raw
/// dump shows its type 22 (0x16), and the table properties count it as an entry.
#[test]
fn sst_dump_shows_entities_as_rocksdb_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put_entity("e", &[("c1", "v1"), ("", "d")]).unwrap();
    db.put("p", "plain").unwrap();
    db.flush().unwrap();
    drop(db);
    let sst = the_table_file(dir.path());
    let mut so = shale::tools::SstDumpOptions {
        command: "scan".into(),
        show_properties: true,
        ..Default::default()
    };
    let text = shale::tools::sst_dump(&sst, &so).unwrap();
    assert!(text.contains("'e' seq:1, type:22 => :d c1:v1\n"), "{text}");
    assert!(text.contains("'p' seq:2, type:1 => plain\n"), "{text}");
    assert!(text.contains("  # entries: 2\n"), "{text}");
    so.output_hex = true;
    let text = shale::tools::sst_dump(&sst, &so).unwrap();
    assert!(text.contains("'65' seq:1, type:22 => :0x64 0x6331:0x7631\n"), "{text}");
    so.command = "raw".into();
    shale::tools::sst_dump(&sst, &so).unwrap();
    let mut dump = sst.clone().into_os_string();
    dump.push("_dump.txt");
    let raw = std::fs::read_to_string(dump).unwrap();
    assert!(
        raw.contains("  HEX    65: 0102000102633102647631  seq:1 type:22\n"),
        "{raw}"
    );
}

/// A compaction filter (RocksDB's `FilterV2` form) never sees an entity: RocksDB's default
/// `FilterV3` keeps entities without calling it, and so does Shale. Plain values next to it
/// are filtered as usual.
#[test]
fn compaction_filters_keep_entities_without_seeing_them() {
    use std::sync::{Arc, Mutex};
    let fs = MemFs::new();
    let mut o = opts(&fs);
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let s = seen.clone();
    o.set_compaction_filter("remove-all", move |_, k: &[u8], _: &[u8]| {
        s.lock().unwrap().push(k.to_vec());
        shale::CompactionDecision::Remove
    });
    let db = DB::open(&o, "/db").unwrap();
    db.put_entity("e", &[("", "d"), ("c", "v")]).unwrap();
    db.put("p", "plain").unwrap();
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![b"p".to_vec()]);
    assert_eq!(db.get("p").unwrap(), None);
    assert_eq!(db.get_entity("e").unwrap(), Some(vec![col("", "d"), col("c", "v")]));
}

/// An entity whose bytes in a table file are damaged (read without block checksums, so the
/// entity decoder is what sees it) is Corruption naming the file and the key, for `get`,
/// `get_entity` and iteration; no panic.
#[test]
fn a_damaged_entity_in_a_table_is_corruption_with_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compression_type(shale::DBCompressionType::None);
    let db = DB::open(&o, dir.path()).unwrap();
    db.put_entity("key", &[("a", "1"), ("b", "2")]).unwrap();
    db.flush().unwrap();
    drop(db);
    let sst = the_table_file(dir.path());
    let mut bytes = std::fs::read(&sst).unwrap();
    let entity = b"\x01\x02\x01a\x01\x01b\x0112";
    let at = bytes
        .windows(entity.len())
        .position(|w| w == entity)
        .expect("the entity in the file");
    bytes[at + 6] = b'a'; // the second column is now named "a" too: out of order
    std::fs::write(&sst, &bytes).unwrap();
    let db = DB::open(&o, dir.path()).unwrap();
    let mut ro = ReadOptions::default();
    ro.set_verify_checksums(false);
    let name = sst.file_name().unwrap().to_string_lossy().into_owned();
    for r in [
        db.get_opt("key", &ro).map(|_| ()),
        db.get_entity_opt("key", &ro).map(|_| ()),
    ] {
        match r {
            Err(Error::Corruption { file, msg, .. }) => {
                assert_eq!(file, name);
                assert!(msg.contains("wide-column entity") && msg.contains("0x6b6579"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
    }
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    assert!(!it.valid());
    assert!(matches!(it.status(), Err(Error::Corruption { .. })));
}

/// Entities written in transactions and in a `WriteBatchWithIndex`: reads through the
/// transaction or batch see the default column (merges over it too), the entity is locked
/// like a put, and once committed the DB holds every column.
#[test]
fn transactions_and_indexed_batches_write_entities() {
    use shale::txn::WriteBatchWithIndex;
    use shale::{ErrorKind, OptimisticTransactionDB, TransactionDB, TransactionDBOptions};
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_merge_operator_associative("concat", concat_merge);
    let mut tdo = TransactionDBOptions::new();
    tdo.set_txn_lock_timeout(0);
    tdo.set_default_lock_timeout(0);
    {
        let db: TransactionDB = TransactionDB::open(&o, &tdo, d.path()).unwrap();
        let t = db.transaction();
        t.put_entity("e", &[("x", "1"), ("", "d")]).unwrap();
        t.put_entity("n", &[("x", "1")]).unwrap();
        t.merge("e", "+m").unwrap();
        assert_eq!(t.get("e").unwrap(), Some(b"d+m".to_vec()));
        assert_eq!(t.get("n").unwrap(), Some(Vec::new()));
        assert_eq!(t.get_entity("e").unwrap(), Some(vec![col("", "d+m"), col("x", "1")]));
        assert_eq!(t.get_entity("n").unwrap(), Some(vec![col("x", "1")]));
        assert_eq!(t.get_entity("absent").unwrap(), None);
        assert_eq!(
            t.put_entity("bad", &[("x", "1"), ("x", "2")]).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        // The entity's key is locked like a put's.
        let t2 = db.transaction();
        assert_eq!(t2.put("e", "other").unwrap_err().kind(), ErrorKind::TimedOut);
        drop(t2);
        let items: Vec<_> = t
            .iterator(IteratorMode::Start)
            .map(Result::unwrap)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(
            items,
            vec![(b"e".to_vec(), b"d+m".to_vec()), (b"n".to_vec(), Vec::new())]
        );
        let mut it = t.raw_iterator();
        it.seek_to_first();
        assert_eq!(it.columns().unwrap(), vec![col("", "d+m"), col("x", "1")]);
        it.next();
        assert_eq!(it.columns().unwrap(), vec![col("x", "1")]);
        it.next();
        assert_eq!(it.columns(), None);
        t.commit().unwrap();
        assert_eq!(db.get("e").unwrap(), Some(b"d+m".to_vec()));
        // Two-phase commit: a prepared entity survives a reopen as a prepared transaction.
        let p = db.transaction();
        p.set_name(b"p").unwrap();
        p.put_entity("pe", &[("c", "y"), ("", "x")]).unwrap();
        p.put("pp", "plain").unwrap();
        p.prepare().unwrap();
    }
    {
        let mut o2 = o.clone();
        o2.set_merge_operator_associative("concat", concat_merge);
        let db: TransactionDB = TransactionDB::open(&o2, &tdo, d.path()).unwrap();
        let prepared = db.prepared_transactions();
        assert_eq!(prepared.len(), 1);
        assert_eq!(db.get("pe").unwrap(), None);
        prepared[0].commit().unwrap();
        assert_eq!(db.get("pe").unwrap(), Some(b"x".to_vec()));
        drop(prepared);
        drop(db);
        let db: TransactionDB = TransactionDB::open(&o2, &tdo, d.path()).unwrap();
        assert_eq!(
            db.get("pp").unwrap(),
            Some(b"plain".to_vec()),
            "reopened as a TransactionDB"
        );
        assert_eq!(db.get("pe").unwrap(), Some(b"x".to_vec()));
    }
    {
        let db = DB::open(&o, d.path()).unwrap();
        assert_eq!(db.get_entity("e").unwrap(), Some(vec![col("", "d+m"), col("x", "1")]));
        assert_eq!(db.get_entity("n").unwrap(), Some(vec![col("x", "1")]));
        assert_eq!(
            db.get("pp").unwrap(),
            Some(b"plain".to_vec()),
            "plain put of the prepared txn"
        );
        assert_eq!(db.get_entity("pe").unwrap(), Some(vec![col("", "x"), col("c", "y")]));
        let mut b = WriteBatchWithIndex::default();
        b.put_entity("w", &[("", "wd"), ("y", "2")]).unwrap();
        assert_eq!(b.get_from_batch("w", &o).unwrap(), Some(b"wd".to_vec()));
        assert_eq!(
            b.get_from_batch_and_db(&db, "w", &ReadOptions::default()).unwrap(),
            Some(b"wd".to_vec())
        );
        // Over the DB's entity "e": a merge in the batch keeps its other columns.
        b.merge("e", "+b");
        // The batch's iterator over the DB: "e" from the DB under the batch's merge, "n" from
        // the DB alone, "w" from the batch.
        let mut it = b.iterator_with_base(shale::DBRawIterator::from(db.raw_iterator()));
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().unwrap().to_vec(), it.columns().unwrap()));
            it.next();
        }
        it.status().unwrap();
        assert_eq!(got[0], (b"e".to_vec(), vec![col("", "d+m+b"), col("x", "1")]));
        assert_eq!(got[1], (b"n".to_vec(), vec![col("x", "1")]));
        assert!(
            got.contains(&(b"w".to_vec(), vec![col("", "wd"), col("y", "2")])),
            "{got:?}"
        );
        let ro = ReadOptions::default();
        assert_eq!(
            b.get_entity_from_batch_and_db(&db, "e", &ro).unwrap(),
            Some(vec![col("", "d+m+b"), col("x", "1")])
        );
        assert_eq!(
            b.get_entity_from_batch_and_db(&db, "w", &ro).unwrap(),
            Some(vec![col("", "wd"), col("y", "2")])
        );
        db.write_wbwi(&b).unwrap();
        assert_eq!(db.get_entity("w").unwrap(), Some(vec![col("", "wd"), col("y", "2")]));
        assert_eq!(db.get_entity("e").unwrap(), Some(vec![col("", "d+m+b"), col("x", "1")]));
    }
    let db: OptimisticTransactionDB = OptimisticTransactionDB::open(&o, d.path()).unwrap();
    let t = db.transaction();
    t.put_entity("o", &[("c", "v")]).unwrap();
    t.commit().unwrap();
    drop(t);
    drop(db);
    let db = DB::open(&o, d.path()).unwrap();
    assert_eq!(db.get_entity("o").unwrap(), Some(vec![col("c", "v")]));
}

/// `SstFileWriter::put_entity` writes an entity into an external file, and ingesting it
/// makes it readable with every column.
#[test]
fn external_files_carry_entities_into_ingest() {
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let sst = d.path().join("ext.sst");
    let mut w = shale::SstFileWriter::create(&o);
    w.open(&sst).unwrap();
    w.put_entity("a", &[("c", "1"), ("", "d")]).unwrap();
    assert!(matches!(
        w.put_entity("b", &[("x", "1"), ("x", "2")]),
        Err(Error::InvalidArgument(_))
    ));
    w.put("p", "plain").unwrap();
    w.finish().unwrap();
    let db = DB::open(&o, d.path().join("db")).unwrap();
    db.ingest_external_file(vec![&sst]).unwrap();
    assert_eq!(db.get_entity("a").unwrap(), Some(vec![col("", "d"), col("c", "1")]));
    assert_eq!(db.get("a").unwrap(), Some(b"d".to_vec()));
    assert_eq!(db.get_entity("p").unwrap(), Some(vec![col("", "plain")]));
}
