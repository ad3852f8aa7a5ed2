//! `CompactOptions` (`compact_range_opt`, `compact_range_cf_opt`): what a manual compaction does
//! with the bottommost level's files, and moving the files to another level afterwards.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shale::compaction_filter::Decision;
use shale::{BottommostLevelCompaction, CompactOptions, ErrorKind, Options, DB};

const NONE: Option<&[u8]> = None;

fn files(db: &DB) -> Vec<(i32, String)> {
    let mut f: Vec<(i32, String)> = db
        .live_files()
        .unwrap()
        .into_iter()
        .map(|f| (f.level, f.name))
        .collect();
    f.sort();
    f
}

fn put_range(db: &DB, prefix: &str, n: usize) {
    for i in 0..n {
        db.put(format!("{prefix}{i:04}"), b"value").unwrap();
    }
    db.flush().unwrap();
}

/// Options that create the DB and its families.
fn family_opts() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

fn bottommost(b: BottommostLevelCompaction) -> CompactOptions {
    let mut co = CompactOptions::default();
    co.set_bottommost_level_compaction(b);
    co
}

/// Without a compaction filter the bottommost files stay unless Force or ForceOptimized says
/// to rewrite them.
#[test]
fn force_rewrites_the_bottommost_files_the_default_and_skip_do_not() {
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, d.path()).unwrap();
    put_range(&db, "a", 100);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    let bottom = files(&db);
    assert!(bottom.iter().all(|(l, _)| *l == 6), "{bottom:?}");
    for b in [
        BottommostLevelCompaction::IfHaveCompactionFilter,
        BottommostLevelCompaction::Skip,
    ] {
        db.compact_range_opt(NONE, NONE, &bottommost(b)).unwrap();
        assert_eq!(files(&db), bottom, "{b:?} rewrote the bottommost level");
    }
    db.compact_range_opt(NONE, NONE, &bottommost(BottommostLevelCompaction::Force))
        .unwrap();
    let after = files(&db);
    assert!(after.iter().all(|(l, _)| *l == 6), "{after:?}");
    assert!(
        after.iter().all(|f| !bottom.contains(f)),
        "Force kept {bottom:?}: {after:?}"
    );
    assert_eq!(db.get(b"a0042").unwrap().as_deref(), Some(&b"value"[..]));
}

/// With a filter counting the keys it sees: an L0 file compacted into the bottommost level is
/// filtered again by Force (and by the default, which rewrites when there is a filter), not by
/// ForceOptimized; Skip leaves the old bottommost file alone.
#[test]
fn force_optimized_skips_the_files_the_compaction_just_wrote() {
    let seen_with = |b: BottommostLevelCompaction| {
        let d = tempfile::tempdir().unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compaction_filter("count", move |_, _, _| {
            s.fetch_add(1, Ordering::Relaxed);
            Decision::Keep
        });
        let db = DB::open(&o, d.path()).unwrap();
        put_range(&db, "a", 30);
        db.compact_range_opt(NONE, NONE, &bottommost(BottommostLevelCompaction::Skip))
            .unwrap();
        put_range(&db, "b", 20);
        seen.store(0, Ordering::Relaxed);
        db.compact_range_opt(NONE, NONE, &bottommost(b)).unwrap();
        assert_eq!(db.get(b"a0007").unwrap().as_deref(), Some(&b"value"[..]));
        assert_eq!(db.get(b"b0007").unwrap().as_deref(), Some(&b"value"[..]));
        seen.load(Ordering::Relaxed)
    };
    // 20 new keys from L0; 30 in the old bottommost file; the new file again: 20.
    assert_eq!(seen_with(BottommostLevelCompaction::Skip), 20);
    assert_eq!(seen_with(BottommostLevelCompaction::ForceOptimized), 50);
    assert_eq!(seen_with(BottommostLevelCompaction::Force), 70);
    assert_eq!(seen_with(BottommostLevelCompaction::IfHaveCompactionFilter), 70);
}

#[test]
fn change_level_moves_the_files_to_the_target_level() {
    let d = tempfile::tempdir().unwrap();
    let o = family_opts();
    let db = DB::open_cf(&o, d.path(), ["t"]).unwrap();
    let t = db.cf_handle("t").unwrap();
    for i in 0..50 {
        db.put_cf(&t, format!("k{i:03}"), b"v").unwrap();
    }
    let mut co = CompactOptions::default();
    co.set_exclusive_manual_compaction(true);
    co.set_change_level(true);
    co.set_target_level(2);
    db.compact_range_cf_opt(&t, Some(b"k000"), NONE, &co).unwrap();
    let levels = |name: &str| -> Vec<i32> {
        db.live_files()
            .unwrap()
            .into_iter()
            .filter(|f| f.column_family_name == name)
            .map(|f| f.level)
            .collect()
    };
    assert!(
        !levels("t").is_empty() && levels("t").iter().all(|&l| l == 2),
        "{:?}",
        levels("t")
    );
    assert_eq!(db.get_cf(&t, b"k042").unwrap().as_deref(), Some(&b"v"[..]));

    // Target -1: the highest empty level that holds them (L1: its target size is ample).
    co.set_target_level(-1);
    db.compact_range_cf_opt(&t, NONE, NONE, &co).unwrap();
    assert!(levels("t").iter().all(|&l| l == 1), "{:?}", levels("t"));

    // Down again, across empty levels.
    co.set_target_level(5);
    db.compact_range_cf_opt(&t, NONE, NONE, &co).unwrap();
    assert!(levels("t").iter().all(|&l| l == 5), "{:?}", levels("t"));

    // A target past the last level: InvalidArgument, before anything is done.
    db.put_cf(&t, b"k999", b"v").unwrap();
    db.flush_cf(&t).unwrap();
    let before = levels("t");
    let mut far = CompactOptions::default();
    far.set_change_level(true);
    far.set_target_level(7);
    let e = db.compact_range_cf_opt(&t, NONE, NONE, &far).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(levels("t"), before, "a refused compaction changed nothing");
    co.set_target_level(1);
    db.compact_range_cf_opt(&t, NONE, NONE, &co).unwrap();
    assert!(levels("t").iter().all(|&l| l == 1), "{:?}", levels("t"));
    drop(t);
    drop(db);
    // The move is in the MANIFEST.
    let db = DB::open_cf(&o, d.path(), ["t"]).unwrap();
    let t = db.cf_handle("t").unwrap();
    assert_eq!(db.get_cf(&t, b"k999").unwrap().as_deref(), Some(&b"v"[..]));
    assert!(db
        .live_files()
        .unwrap()
        .iter()
        .filter(|f| f.column_family_name == "t")
        .all(|f| f.level == 1));
}

/// FIFO keeps every file in L0, which no move leaves: NotSupported, after the compaction.
#[test]
fn change_level_out_of_l0_is_not_supported() {
    let d = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_compaction_style(shale::DBCompactionStyle::Fifo);
    let db = DB::open(&o, d.path()).unwrap();
    put_range(&db, "a", 10);
    let mut co = CompactOptions::default();
    co.set_change_level(true);
    co.set_target_level(1);
    let e = db.compact_range_opt(NONE, NONE, &co).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(files(&db).iter().all(|(l, _)| *l == 0));
    // Without a target (-1) the files stay where they are: nothing to move, no error.
    co.set_target_level(-1);
    db.compact_range_opt(NONE, NONE, &co).unwrap();
    assert_eq!(db.get(b"a0003").unwrap().as_deref(), Some(&b"value"[..]));
}

/// The bounds take anything with bytes, as the `rocksdb` crate's: byte-string literals, `&str`,
/// `String`, `Vec<u8>`; `None` alone needs its type.
#[test]
fn compact_range_bounds_are_any_bytes() {
    let d = tempfile::tempdir().unwrap();
    let o = family_opts();
    let db = DB::open_cf(&o, d.path(), ["t"]).unwrap();
    let t = db.cf_handle("t").unwrap();
    put_range(&db, "a", 10);
    db.compact_range(Some(b"a0003"), None::<&str>).unwrap();
    assert!(files(&db).iter().all(|(l, _)| *l == 6), "{:?}", files(&db));
    put_range(&db, "b", 10);
    db.compact_range(Some("b"), Some(String::from("c"))).unwrap();
    assert!(files(&db).iter().all(|(l, _)| *l == 6), "{:?}", files(&db));
    db.put_cf(&t, b"k", b"v").unwrap();
    db.flush_cf(&t).unwrap();
    db.compact_range_cf(&t, Some(vec![b'k']), None::<Vec<u8>>).unwrap();
    db.compact_range_cf_opt(&t, None::<&[u8]>, Some([b'z']), &CompactOptions::default())
        .unwrap();
    assert!(db.live_files().unwrap().iter().all(|f| f.level == 6));
    assert_eq!(db.get_cf(&t, b"k").unwrap().as_deref(), Some(&b"v"[..]));
}
