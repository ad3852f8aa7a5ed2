//! User-defined timestamps (RocksDB's `timestamp_size` comparators, the `_with_ts` calls,
//! `ReadOptions::set_timestamp`, `iter_start_ts`, `full_history_ts_low`): what a read at a
//! timestamp sees through the memtable, flush, compaction and reopen, iterators both ways,
//! history collapsing below `full_history_ts_low`, and the misuse errors RocksDB gives.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::common::{dir, mem_opts};

use shale::comparator::BytewiseComparatorWithU64Ts;
use shale::fs::testing::MemFs;
use shale::{CompactOptions, Options, ReadOptions, WriteBatch, DB};

fn ts(t: u64) -> [u8; 8] {
    t.to_le_bytes()
}

fn ts_opts(fs: &MemFs) -> Options {
    let mut o = mem_opts(fs);
    o.set_custom_comparator(Arc::new(BytewiseComparatorWithU64Ts));
    o
}

fn at(t: u64) -> ReadOptions {
    let mut ro = ReadOptions::default();
    ro.set_timestamp(ts(t));
    ro
}

fn get(db: &DB, key: &[u8], t: u64) -> Option<Vec<u8>> {
    db.get_opt(key, &at(t)).unwrap()
}

/// One iterator entry: key, value, timestamp.
type Entry = (Vec<u8>, Vec<u8>, Vec<u8>);

/// The entries from the iterator's position on, `forward` or backward.
fn walk(it: &mut shale::DBRawIteratorWithThreadMode<'_, DB>, forward: bool) -> Vec<Entry> {
    let mut out = Vec::new();
    while it.valid() {
        let e = (it.key(), it.value(), it.timestamp());
        out.push((e.0.unwrap().to_vec(), e.1.unwrap().to_vec(), e.2.unwrap().to_vec()));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    it.status().unwrap();
    out
}

/// `(key, value, timestamp)` of a forward scan with `ro`, checked against the backward scan.
fn scan(db: &DB, ro: ReadOptions) -> Vec<Entry> {
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let fwd = walk(&mut it, true);
    it.seek_to_last();
    let mut back = walk(&mut it, false);
    back.reverse();
    assert_eq!(fwd, back, "forward and backward scans differ");
    fwd
}

/// a: 10 → "a10", 20 → "a20", deleted at 30; b: 15 → "b15"; c: 25 → "c25".
fn write_history(db: &DB) {
    db.put_with_ts(b"a", ts(10), b"a10").unwrap();
    db.put_with_ts(b"b", ts(15), b"b15").unwrap();
    db.put_with_ts(b"a", ts(20), b"a20").unwrap();
    db.put_with_ts(b"c", ts(25), b"c25").unwrap();
    db.delete_with_ts(b"a", ts(30)).unwrap();
}

/// A key, a read timestamp and the value the read must find.
type Expect<'a> = (&'a [u8], u64, Option<&'a [u8]>);

fn check_history(db: &DB, stage: &str) {
    let want: &[Expect] = &[
        (b"a", 5, None),
        (b"a", 10, Some(b"a10")),
        (b"a", 19, Some(b"a10")),
        (b"a", 20, Some(b"a20")),
        (b"a", 29, Some(b"a20")),
        (b"a", 30, None),
        (b"a", 99, None),
        (b"b", 14, None),
        (b"b", 15, Some(b"b15")),
        (b"c", 24, None),
        (b"c", u64::MAX, Some(b"c25")),
        (b"d", 99, None),
    ];
    for &(k, t, v) in want {
        assert_eq!(
            get(db, k, t).as_deref(),
            v,
            "{stage}: {:?} at {t}",
            String::from_utf8_lossy(k)
        );
        let pinned = db.get_pinned_opt(k, &at(t)).unwrap();
        assert_eq!(pinned.as_deref(), v, "{stage}: pinned {k:?} at {t}");
    }
    let mg = db.multi_get_opt([&b"a"[..], b"b", b"c"], &at(22));
    let mg: Vec<Option<Vec<u8>>> = mg.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        mg,
        vec![Some(b"a20".to_vec()), Some(b"b15".to_vec()), None],
        "{stage}: multi_get"
    );
    let s = |t: u64| scan(db, at(t));
    let kv = |k: &str, v: &str, t: u64| (k.as_bytes().to_vec(), v.as_bytes().to_vec(), ts(t).to_vec());
    assert_eq!(s(12), vec![kv("a", "a10", 10)], "{stage}: scan at 12");
    assert_eq!(
        s(26),
        vec![kv("a", "a20", 20), kv("b", "b15", 15), kv("c", "c25", 25)],
        "{stage}: scan at 26"
    );
    assert_eq!(
        s(30),
        vec![kv("b", "b15", 15), kv("c", "c25", 25)],
        "{stage}: scan at 30"
    );
}

#[test]
fn reads_see_the_newest_version_at_or_below_the_read_timestamp() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    write_history(&db);
    check_history(&db, "memtable");
    db.flush().unwrap();
    check_history(&db, "flushed");
    compact_all(&db, None);
    check_history(&db, "compacted");
    drop(db);
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    check_history(&db, "reopened");
    // Half in a table, half in the memtable: the versions merge across sources.
    db.put_with_ts(b"a", ts(40), b"a40").unwrap();
    db.put_with_ts(b"b", ts(12), b"b12").unwrap();
    assert_eq!(get(&db, b"a", 45).as_deref(), Some(&b"a40"[..]));
    assert_eq!(get(&db, b"a", 35), None);
    assert_eq!(get(&db, b"b", 13).as_deref(), Some(&b"b12"[..]));
    assert_eq!(get(&db, b"b", 99).as_deref(), Some(&b"b15"[..]));
}

#[test]
fn iterators_seek_and_bound_on_keys_without_timestamps() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    for (i, k) in ["k1", "k2", "k3", "k4"].iter().enumerate() {
        for t in [5u64, 10, 15] {
            db.put_with_ts(k, ts(t), format!("{k}@{t}#{i}")).unwrap();
        }
    }
    db.flush().unwrap();
    db.put_with_ts(b"k2", ts(12), b"k2@12").unwrap();
    let mut it = db.raw_iterator_opt(at(12));
    it.seek(b"k2");
    assert_eq!((it.key(), it.value()), (Some(&b"k2"[..]), Some(&b"k2@12"[..])));
    assert_eq!(it.timestamp(), Some(&ts(12)[..]));
    it.next();
    assert_eq!((it.key(), it.value()), (Some(&b"k3"[..]), Some(&b"k3@10#2"[..])));
    assert_eq!(it.timestamp(), Some(&ts(10)[..]));
    it.prev();
    it.prev();
    assert_eq!((it.key(), it.value()), (Some(&b"k1"[..]), Some(&b"k1@10#0"[..])));
    it.seek_for_prev(b"k3");
    assert_eq!((it.key(), it.value()), (Some(&b"k3"[..]), Some(&b"k3@10#2"[..])));
    it.seek_for_prev(b"k2z");
    assert_eq!(it.key(), Some(&b"k2"[..]));
    it.seek(b"k5");
    assert!(!it.valid());
    // Bounds are keys without timestamps: [k2, k4).
    let mut ro = at(7);
    ro.set_iterate_lower_bound(b"k2".to_vec());
    ro.set_iterate_upper_bound(b"k4".to_vec());
    let got: Vec<Vec<u8>> = scan(&db, ro).into_iter().map(|(k, _, _)| k).collect();
    assert_eq!(got, vec![b"k2".to_vec(), b"k3".to_vec()]);
    // Through the `Iterator` form too.
    let values: Vec<Box<[u8]>> = db
        .iterator_opt(shale::IteratorMode::End, at(5))
        .map(|r| r.unwrap().1)
        .collect();
    assert_eq!(values.len(), 4);
    assert_eq!(&*values[0], b"k4@5#3");
}

#[test]
fn iter_start_ts_returns_every_version_in_the_range() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    write_history(&db);
    db.flush().unwrap();
    let mut ro = at(25);
    ro.set_iter_start_ts(ts(12));
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        let k = it.key().unwrap();
        // As RocksDB: the key is the internal key (key, timestamp, sequence and type).
        assert_eq!(&k[k.len() - 16..k.len() - 8], it.timestamp().unwrap());
        got.push((
            k[..k.len() - 16].to_vec(),
            it.timestamp().unwrap().to_vec(),
            it.value().unwrap().to_vec(),
        ));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(
        got,
        vec![
            (b"a".to_vec(), ts(20).to_vec(), b"a20".to_vec()),
            (b"b".to_vec(), ts(15).to_vec(), b"b15".to_vec()),
            (b"c".to_vec(), ts(25).to_vec(), b"c25".to_vec()),
        ]
    );
    // With the deletion in range, it is an entry too (deletion with timestamp, type 0x14, in the
    // key's trailer, as RocksDB's memtable writes it).
    let mut ro = at(35);
    ro.set_iter_start_ts(ts(0));
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        let k = it.key().unwrap().to_vec();
        back.push((
            k[..k.len() - 16].to_vec(),
            it.timestamp().unwrap().to_vec(),
            k[k.len() - 8],
        ));
        it.prev();
    }
    back.reverse();
    let t = |k: &str, x: u64, vt: u8| (k.as_bytes().to_vec(), ts(x).to_vec(), vt);
    assert_eq!(
        back,
        vec![
            t("a", 30, 0x14),
            t("a", 20, 1),
            t("a", 10, 1),
            t("b", 15, 1),
            t("c", 25, 1)
        ]
    );
}

#[test]
fn misuse_gives_invalid_argument() {
    let fs = MemFs::new();
    let mut o = ts_opts(&fs);
    o.create_missing_column_families(true);
    let db = DB::open_cf_with_opts(&o, dir(), [("default", o.clone()), ("plain", mem_opts(&fs))]).unwrap();
    let plain = db.cf_handle("plain").unwrap();
    let dflt = db.cf_handle("default").unwrap();
    let inval = |r: Result<(), shale::Error>, what: &str| {
        let e = r.expect_err(what);
        assert!(e.is_invalid_argument(), "{what}: {e}");
    };
    inval(db.put(b"k", b"v"), "put without timestamp");
    inval(db.delete(b"k"), "delete without timestamp");
    inval(db.put_with_ts(b"k", [1u8; 4], b"v"), "4-byte timestamp");
    inval(
        db.put_cf_with_ts(&plain, b"k", ts(1), b"v"),
        "timestamp for a family without",
    );
    inval(db.delete_range(b"a", b"b"), "delete_range without timestamps");
    let mut b = WriteBatch::default();
    b.put(b"k12345678", b"v");
    inval(db.write(b), "batch put without timestamp");
    let mut b = WriteBatch::default();
    b.put_cf_with_ts(&plain, b"k", ts(1), b"v");
    inval(db.write(b), "batch timestamp for a family without");
    let mut b = WriteBatch::default();
    b.put_cf_with_ts(&dflt, b"k", ts(1), b"v");
    b.put_cf(&plain, b"p", b"v");
    db.write(b).unwrap();
    assert_eq!(get(&db, b"k", 1).as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get_cf(&plain, b"p").unwrap().as_deref(), Some(&b"v"[..]));
    // Reads.
    let e = db.get(b"k").unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("set_timestamp"),
        "{e}"
    );
    let e = db.get_cf_opt(&plain, b"p", &at(1)).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let mut ro = ReadOptions::default();
    ro.set_timestamp([0u8; 3]);
    assert!(db.get_opt(b"k", &ro).unwrap_err().is_invalid_argument());
    let mut it = db.raw_iterator();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().unwrap_err().is_invalid_argument());
    // full_history_ts_low misuse.
    assert!(db
        .increase_full_history_ts_low(&plain, ts(1))
        .unwrap_err()
        .is_invalid_argument());
    assert!(db.get_full_history_ts_low(&plain).unwrap_err().is_invalid_argument());
    assert!(db
        .increase_full_history_ts_low(&dflt, [1u8; 2])
        .unwrap_err()
        .is_invalid_argument());
}

/// Compact everything, the bottommost level included (RocksDB's default skips rewriting it
/// without a compaction filter); `low`: raise `full_history_ts_low` first, through
/// `CompactOptions`.
fn compact_all(db: &DB, low: Option<u64>) {
    let mut co = CompactOptions::default();
    co.set_bottommost_level_compaction(shale::BottommostLevelCompaction::Force);
    if let Some(t) = low {
        co.set_full_history_ts_low(ts(t));
    }
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co).unwrap();
}

/// The entries of every live table file.
fn table_entries(db: &DB) -> u64 {
    db.live_files().unwrap().iter().map(|f| f.num_entries).sum()
}

#[test]
fn full_history_ts_low_persists_and_compaction_collapses_history_below_it() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    let cf = db.cf_handle("default").unwrap();
    for t in 1..=10u64 {
        db.put_with_ts(b"a", ts(t), format!("a{t}")).unwrap();
    }
    db.put_with_ts(b"b", ts(1), b"b1").unwrap();
    db.delete_with_ts(b"b", ts(2)).unwrap();
    db.put_with_ts(b"c", ts(8), b"c8").unwrap();
    db.flush().unwrap();
    compact_all(&db, None);
    assert_eq!(table_entries(&db), 13, "no low mark: every version stays");
    assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), Vec::<u8>::new());
    db.increase_full_history_ts_low(&cf, ts(5)).unwrap();
    assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(5).to_vec());
    let e = db.increase_full_history_ts_low(&cf, ts(4)).unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    // A read below the low mark is refused, at it is fine.
    assert!(db.get_opt(b"a", &at(4)).unwrap_err().is_invalid_argument());
    assert_eq!(get(&db, b"a", 5).as_deref(), Some(&b"a5"[..]));
    compact_all(&db, None);
    // a: 10..=5 stay (a5 is what reads at 5 see), 4..=1 go; b: its deletion at 2 is at the
    // bottom and below the mark, so it and b1 go; c8 stays.
    assert_eq!(table_entries(&db), 7);
    for t in 5..=10u64 {
        assert_eq!(get(&db, b"a", t), Some(format!("a{t}").into_bytes()), "a at {t}");
    }
    assert_eq!(get(&db, b"b", 9), None);
    assert_eq!(get(&db, b"c", 9).as_deref(), Some(&b"c8"[..]));
    drop(db);
    // The low mark is in the MANIFEST.
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    let cf = db.cf_handle("default").unwrap();
    assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(5).to_vec());
    assert!(db.get_opt(b"a", &at(4)).unwrap_err().is_invalid_argument());
    // CompactOptions raises it before compacting.
    compact_all(&db, Some(9));
    assert_eq!(db.get_full_history_ts_low(&cf).unwrap(), ts(9).to_vec());
    assert_eq!(table_entries(&db), 3, "a10, a9 and c8");
    assert_eq!(get(&db, b"a", 9).as_deref(), Some(&b"a9"[..]));
}

#[test]
fn a_snapshot_keeps_versions_below_the_low_mark_it_can_still_see() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    let cf = db.cf_handle("default").unwrap();
    db.put_with_ts(b"a", ts(1), b"a1").unwrap();
    let snap = db.snapshot();
    db.put_with_ts(b"a", ts(2), b"a2").unwrap();
    db.flush().unwrap();
    db.increase_full_history_ts_low(&cf, ts(3)).unwrap();
    compact_all(&db, None);
    // a2 is newer than the snapshot: the snapshot's reads still need a1.
    let mut ro = at(3);
    ro.set_snapshot(&snap);
    assert_eq!(db.get_opt(b"a", &ro).unwrap().as_deref(), Some(&b"a1"[..]));
    assert_eq!(get(&db, b"a", 3).as_deref(), Some(&b"a2"[..]));
    drop((ro, snap)); // the read options hold the snapshot too
    compact_all(&db, None);
    assert_eq!(table_entries(&db), 1);
}

#[test]
fn merges_fold_the_operands_at_or_below_the_read_timestamp() {
    let fs = MemFs::new();
    let mut o = ts_opts(&fs);
    o.set_merge_operator_associative("concat", crate::rocksdb_api::concat_merge);
    let db = DB::open(&o, dir()).unwrap();
    let cf = db.cf_handle("default").unwrap();
    db.put_with_ts(b"m", ts(1), b"x").unwrap();
    db.merge_cf_with_ts(&cf, b"m", ts(2), b"y").unwrap();
    db.flush().unwrap();
    db.merge_cf_with_ts(&cf, b"m", ts(3), b"z").unwrap();
    let v = |t| get(&db, b"m", t).map(|v| String::from_utf8(v).unwrap());
    let (v1, v2, v3) = (v(1).unwrap(), v(2).unwrap(), v(3).unwrap());
    assert_eq!(v1, "x");
    assert!(v2.contains('x') && v2.contains('y') && !v2.contains('z'), "{v2}");
    assert!(v3.contains('z') && v3.len() > v2.len(), "{v3}");
}

/// The `rocksdb` crate's closure form (its tests' `U64Comparator`): same order under another
/// name, and the same rules.
#[test]
fn closure_comparator_with_timestamps_works_like_the_builtin() {
    fn strip(k: &[u8]) -> &[u8] {
        &k[..k.len() - 8]
    }
    fn cmp_ts(a: &[u8], b: &[u8]) -> Ordering {
        u64::from_le_bytes(a.try_into().unwrap()).cmp(&u64::from_le_bytes(b.try_into().unwrap()))
    }
    fn cmp_without(a: &[u8], a_ts: bool, b: &[u8], b_ts: bool) -> Ordering {
        let a = if a_ts { strip(a) } else { a };
        let b = if b_ts { strip(b) } else { b };
        a.cmp(b)
    }
    fn cmp(a: &[u8], b: &[u8]) -> Ordering {
        cmp_without(a, true, b, true).then_with(|| cmp_ts(&a[a.len() - 8..], &b[b.len() - 8..]).reverse())
    }
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_comparator_with_ts(
        "rust-rocksdb.U64Comparator",
        8,
        Box::new(cmp),
        Box::new(cmp_ts),
        Box::new(cmp_without),
    );
    let db = DB::open(&o, dir()).unwrap();
    write_history(&db);
    check_history(&db, "closure memtable");
    db.flush().unwrap();
    check_history(&db, "closure flushed");
    let mut co = CompactOptions::default();
    co.set_full_history_ts_low(ts(20));
    db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &co).unwrap();
    assert_eq!(get(&db, b"a", 25).as_deref(), Some(&b"a20"[..]));
    assert!(db.get_opt(b"a", &at(10)).is_err());
}

#[test]
fn sst_file_writer_with_timestamps_makes_files_that_ingest() {
    let fs = MemFs::new();
    shale::fs::FileSystem::create_dir_all(&fs, std::path::Path::new("/")).unwrap();
    let o = ts_opts(&fs);
    let mut w = shale::SstFileWriter::create(&o);
    w.open("/ext.sst").unwrap();
    let e = w.put(b"a", b"no ts").unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    assert!(w.put_with_ts(b"a", [0u8; 3], b"v").unwrap_err().is_invalid_argument());
    // Newer timestamps of a key first (the comparator's order).
    w.put_with_ts(b"a", ts(9), b"a9").unwrap();
    w.put_with_ts(b"a", ts(4), b"a4").unwrap();
    w.delete_with_ts(b"b", ts(6)).unwrap();
    w.put_with_ts(b"b", ts(3), b"b3").unwrap();
    assert!(w.put_with_ts(b"a", ts(1), b"late").unwrap_err().is_invalid_argument());
    w.finish().unwrap();
    let db = DB::open(&o, dir()).unwrap();
    db.ingest_external_file(vec!["/ext.sst"]).unwrap();
    assert_eq!(get(&db, b"a", 5).as_deref(), Some(&b"a4"[..]));
    assert_eq!(get(&db, b"a", 9).as_deref(), Some(&b"a9"[..]));
    assert_eq!(get(&db, b"b", 5).as_deref(), Some(&b"b3"[..]));
    assert_eq!(get(&db, b"b", 6), None);
    // A writer without timestamps refuses the timestamp calls.
    let plain = mem_opts(&fs);
    let mut w = shale::SstFileWriter::create(&plain);
    w.open("/plain.sst").unwrap();
    assert!(w.put_with_ts(b"a", ts(1), b"v").unwrap_err().is_invalid_argument());
}

#[test]
fn persist_user_defined_timestamps_false_is_not_supported() {
    let fs = MemFs::new();
    let mut o = ts_opts(&fs);
    o.set_persist_user_defined_timestamps(false);
    let Err(e) = DB::open(&o, dir()) else {
        panic!("persist_user_defined_timestamps = false must be refused")
    };
    assert!(matches!(e, shale::Error::NotSupported(_)), "{e}");
    assert!(e.to_string().contains("persist_user_defined_timestamps"), "{e}");
}

#[test]
fn key_may_exist_never_says_no_for_a_key_with_versions() {
    let fs = MemFs::new();
    let db = DB::open(&ts_opts(&fs), dir()).unwrap();
    db.put_with_ts(b"k", ts(3), b"v").unwrap();
    assert!(db.key_may_exist(b"k"), "memtable");
    db.flush().unwrap();
    assert!(db.key_may_exist(b"k"), "table");
}

/// A write of the model: key, timestamp, write order, value (None: a deletion).
type Write = (Vec<u8>, u64, u64, Option<Vec<u8>>);
/// The newest write of a key so far: timestamp, write order, value.
type Newest = (u64, u64, Option<Vec<u8>>);

/// What a read at `t` sees of `versions`: per key, the newest timestamp at or below `t`, the
/// latest write among equal ones.
fn model_at(versions: &[Write], t: u64) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut best: std::collections::BTreeMap<Vec<u8>, Newest> = Default::default();
    for (k, ts, n, v) in versions.iter().filter(|v| v.1 <= t) {
        let e = best.entry(k.clone()).or_insert((*ts, *n, v.clone()));
        if (*ts, *n) > (e.0, e.1) {
            *e = (*ts, *n, v.clone());
        }
    }
    best.into_iter().filter_map(|(k, e)| e.2.map(|v| (k, v))).collect()
}

/// Random puts and deletes at random timestamps over a few keys, with flushes, compactions,
/// reopens and a rising `full_history_ts_low`: every read at an allowed timestamp (gets, scans
/// both ways, seeks) matches the model.
#[test]
fn random_histories_read_as_the_model_says() {
    for seed in 1..=6u64 {
        let mut rng = crate::common::Rng::new(seed);
        let fs = MemFs::new();
        let mut db = DB::open(&ts_opts(&fs), dir()).unwrap();
        let mut versions = Vec::new();
        let mut low = 0u64;
        for n in 0..600u64 {
            let k = format!("k{}", rng.below(12)).into_bytes();
            let t = low + rng.below(40);
            if rng.below(4) == 0 {
                db.delete_with_ts(&k, ts(t)).unwrap();
                versions.push((k, t, n, None));
            } else {
                let v = format!("{n}").into_bytes();
                db.put_with_ts(&k, ts(t), &v).unwrap();
                versions.push((k, t, n, Some(v)));
            }
            match rng.below(60) {
                0 => db.flush().unwrap(),
                1 => compact_all(&db, None),
                2 => {
                    low += rng.below(10);
                    compact_all(&db, Some(low));
                }
                3 => {
                    drop(db);
                    db = DB::open(&ts_opts(&fs), dir()).unwrap();
                }
                _ => {}
            }
            if n % 50 != 49 {
                continue;
            }
            for _ in 0..4 {
                let t = low + rng.below(50);
                let want = model_at(&versions, t);
                let got: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
                    scan(&db, at(t)).into_iter().map(|(k, v, _)| (k, v)).collect();
                assert_eq!(got, want, "seed {seed}, write {n}: scan at {t} (low {low})");
                for i in 0..12 {
                    let k = format!("k{i}").into_bytes();
                    assert_eq!(get(&db, &k, t), want.get(&k).cloned(), "seed {seed}: get {i} at {t}");
                }
                let target = format!("k{}", rng.below(13)).into_bytes();
                let mut it = db.raw_iterator_opt(at(t));
                it.seek(&target);
                assert_eq!(
                    it.key().map(<[u8]>::to_vec),
                    want.range(target.clone()..).next().map(|e| e.0.clone())
                );
                it.seek_for_prev(&target);
                assert_eq!(
                    it.key().map(<[u8]>::to_vec),
                    want.range(..=target).next_back().map(|e| e.0.clone())
                );
            }
        }
    }
}
