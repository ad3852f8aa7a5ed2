//! `DBIterator::set_mode` and `refresh`, `DBRawIterator::refresh` and `timestamp`, and
//! `DB::full_iterator`.

use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::{Direction, IteratorMode, Options, DB};

fn open(fs: &MemFs) -> DB {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(fs.clone()));
    DB::open(&o, "/db").unwrap()
}

fn keys(it: impl Iterator<Item = Result<(Box<[u8]>, Box<[u8]>), shale::Error>>) -> Vec<Vec<u8>> {
    it.map(|r| r.unwrap().0.to_vec()).collect()
}

#[test]
fn set_mode_starts_over_after_the_end() {
    let db = open(&MemFs::new());
    for k in [b"a", b"b", b"c"] {
        db.put(k, b"v").unwrap();
    }
    let mut it = db.iterator(IteratorMode::Start);
    assert_eq!(keys(&mut it).len(), 3);
    assert!(it.next().is_none());
    it.set_mode(IteratorMode::From(b"b", Direction::Reverse));
    assert_eq!(keys(&mut it), [b"b".to_vec(), b"a".to_vec()]);
    it.set_mode(IteratorMode::End);
    assert_eq!(keys(&mut it), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
}

#[test]
fn refresh_sees_later_writes_and_drops_the_snapshot() {
    let db = open(&MemFs::new());
    db.put(b"a", b"1").unwrap();
    let snap = db.snapshot();
    let mut it = snap.iterator(IteratorMode::Start);
    db.put(b"b", b"2").unwrap();
    db.delete(b"a").unwrap();
    assert_eq!(keys(&mut it), [b"a".to_vec()]);
    it.refresh(IteratorMode::Start).unwrap();
    assert_eq!(keys(&mut it), [b"b".to_vec()]);
    // Through a flush too: the refreshed iterator reads the new files.
    db.put(b"c", b"3").unwrap();
    db.flush().unwrap();
    it.refresh(IteratorMode::End).unwrap();
    assert_eq!(keys(&mut it), [b"c".to_vec(), b"b".to_vec()]);
    drop(snap);
}

#[test]
fn raw_refresh_unpositions_and_keeps_the_bounds() {
    let db = open(&MemFs::new());
    db.put(b"a", b"1").unwrap();
    let mut ro = shale::ReadOptions::default();
    ro.set_iterate_upper_bound(b"m".to_vec());
    let mut it = db.raw_iterator_opt(ro);
    it.seek_to_first();
    assert_eq!(it.timestamp(), Some(&[][..]));
    db.put(b"b", b"2").unwrap();
    db.put(b"z", b"3").unwrap();
    it.refresh().unwrap();
    assert!(!it.valid());
    assert_eq!(it.timestamp(), None);
    it.seek_to_last();
    assert_eq!(it.key(), Some(&b"b"[..]));
}

#[test]
fn refresh_after_close_is_an_error_not_a_panic() {
    let fs = MemFs::new();
    let db = open(&fs);
    db.put(b"a", b"1").unwrap();
    let snap = db.snapshot();
    let mut it = snap.iterator(IteratorMode::Start);
    drop(snap);
    drop(db);
    assert!(it.refresh(IteratorMode::Start).is_err());
}

#[test]
fn full_iterator_ignores_the_prefix_extractor() {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(MemFs::new()));
    o.set_prefix_extractor(new_fixed_prefix_transform(1));
    let db = DB::open(&o, "/db").unwrap();
    for k in [&b"a1"[..], b"a2", b"b1"] {
        db.put(k, b"v").unwrap();
    }
    assert_eq!(keys(db.full_iterator(IteratorMode::Start)).len(), 3);
    assert_eq!(
        keys(db.full_iterator(IteratorMode::From(b"a2", Direction::Forward))).len(),
        2
    );
}
