//! `ReadOptions::set_iterate_range`: the std ranges and `PrefixRange` as iterator bounds, in
//! both directions and from a seek key, replacing bounds set before.

use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::{Direction, IterateBounds, IteratorMode, Options, PrefixRange, ReadOptions, DB};

const KEYS: [&[u8]; 9] = [
    b"a",
    b"ab",
    b"ab\xff",
    b"ac",
    b"b",
    b"b\x00",
    b"\xff",
    b"\xff\xff",
    b"\xff\xff\x01",
];

fn db() -> DB {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(Arc::new(MemFs::new()));
    let db = DB::open(&o, "/db").unwrap();
    for k in KEYS {
        db.put(k, b"v").unwrap();
    }
    db
}

/// The keys an iterator over `range` yields in `mode`, in key order; bounds set before the
/// range must not matter.
fn keys(db: &DB, mode: IteratorMode, range: impl IterateBounds) -> Vec<Vec<u8>> {
    let mut ro = ReadOptions::default();
    ro.set_iterate_lower_bound(b"zz".to_vec());
    ro.set_iterate_upper_bound(b"zz".to_vec());
    ro.set_iterate_range(range);
    let mut got: Vec<Vec<u8>> = db.iterator_opt(mode, ro).map(|r| r.unwrap().0.to_vec()).collect();
    got.sort();
    got
}

fn want(ix: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    KEYS[ix].iter().map(|k| k.to_vec()).collect()
}

/// Both whole-range directions give `ix`.
fn check(db: &DB, range: impl IterateBounds + Clone, ix: std::ops::Range<usize>) {
    assert_eq!(
        keys(db, IteratorMode::Start, range.clone()),
        want(ix.clone()),
        "forward"
    );
    assert_eq!(keys(db, IteratorMode::End, range), want(ix), "reverse");
}

#[test]
fn std_ranges_bound_the_iterator() {
    let db = db();
    check(&db, .., 0..9);
    check(&db, &b"ac"[..].., 3..9);
    check(&db, ..&b"b"[..], 0..4);
    check(&db, &b"ab"[..]..&b"b\x00"[..], 1..5);
    check(&db, b"ab".to_vec()..b"ab\xff".to_vec(), 1..2);
}

#[test]
fn prefix_ranges_cover_exactly_the_keys_with_the_prefix() {
    let db = db();
    check(&db, PrefixRange(&b""[..]), 0..9);
    check(&db, PrefixRange(&b"a"[..]), 0..4);
    check(&db, PrefixRange(&b"ab"[..]), 1..3);
    check(&db, PrefixRange(&b"ab\xff"[..]), 2..3);
    check(&db, PrefixRange(&b"b"[..]), 4..6);
    // Prefixes of only 0xff bytes have no upper bound.
    check(&db, PrefixRange(&b"\xff"[..]), 6..9);
    check(&db, PrefixRange(b"\xff\xff".to_vec()), 7..9);
    check(&db, PrefixRange(&b"c"[..]), 6..6);
}

#[test]
fn bounds_apply_after_a_seek() {
    let db = db();
    let from = |k: &'static [u8], d| IteratorMode::From(k, d);
    assert_eq!(
        keys(&db, from(b"ab", Direction::Forward), PrefixRange(&b"a"[..])),
        want(1..4)
    );
    assert_eq!(
        keys(&db, from(b"b", Direction::Forward), PrefixRange(&b"a"[..])),
        want(0..0)
    );
    assert_eq!(
        keys(&db, from(b"ab\xff", Direction::Reverse), PrefixRange(&b"ab"[..])),
        want(1..3)
    );
    assert_eq!(keys(&db, from(b"zz", Direction::Reverse), ..&b"ac"[..]), want(0..3));
    assert_eq!(keys(&db, from(b"0", Direction::Reverse), &b"a"[..]..), want(0..0));
}

#[test]
fn a_full_range_clears_earlier_bounds() {
    let db = db();
    let mut ro = ReadOptions::default();
    ro.set_iterate_range(&b"b"[..]..&b"c"[..]);
    ro.set_iterate_range(..);
    assert_eq!(db.iterator_opt(IteratorMode::Start, ro).count(), KEYS.len());
}

#[test]
fn a_reversed_range_yields_nothing_and_does_not_panic() {
    let db = db();
    check(&db, &b"b"[..]..&b"a"[..], 0..0);
    for (k, d) in [
        (&b"ab"[..], Direction::Forward),
        (b"ab", Direction::Reverse),
        (b"zz", Direction::Reverse),
    ] {
        assert!(keys(&db, IteratorMode::From(k, d), &b"b"[..]..&b"a"[..]).is_empty());
    }
    let mut ro = ReadOptions::default();
    ro.set_iterate_range(&b"b"[..]..&b"a"[..]);
    let mut it = db.raw_iterator_opt(ro);
    it.seek(b"ab");
    assert!(!it.valid());
    it.seek_for_prev(b"ab");
    assert!(!it.valid());
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
}
