//! Iterator bounds given as one value: Rust's half-open ranges and [`PrefixRange`], for
//! [`ReadOptions::set_iterate_range`](crate::ReadOptions::set_iterate_range).

use std::ops::{Range, RangeFrom, RangeFull, RangeTo};

/// A key range that [`ReadOptions::set_iterate_range`](crate::ReadOptions::set_iterate_range)
/// turns into an iterator's bounds.
///
/// Implemented for `..`, `lower..`, `..upper`, `lower..upper` (any key type convertible into
/// `Vec<u8>`) and for [`PrefixRange`]. Inclusive ranges are not implemented because an
/// iterator's upper bound is always exclusive.
pub trait IterateBounds {
    /// The inclusive lower bound and the exclusive upper bound, `None` where the range is open
    /// on that side (`..upper` gives `(None, Some(upper))`).
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>);
}

impl IterateBounds for RangeFull {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, None)
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for Range<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (Some(self.start.into()), Some(self.end.into()))
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for RangeFrom<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (Some(self.start.into()), None)
    }
}

impl<K: Into<Vec<u8>>> IterateBounds for RangeTo<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        (None, Some(self.end.into()))
    }
}

/// Every key that starts with the wrapped prefix, under bytewise key order.
///
/// As bounds: the prefix itself below, and above the smallest key greater than every key with
/// the prefix (`PrefixRange("ab")` is `"ab".."ac"`). The empty prefix is the full range; a
/// prefix made only of `0xff` bytes has no upper bound (nothing sorts after all its keys).
/// With a comparator other than bytewise order the bounds still come out this way, so they
/// may not mean "keys with this prefix" there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixRange<K>(pub K);

impl<K: Into<Vec<u8>>> IterateBounds for PrefixRange<K> {
    fn into_bounds(self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let lower: Vec<u8> = self.0.into();
        if lower.is_empty() {
            return (None, None);
        }
        let upper = successor_of_prefix(&lower);
        (Some(lower), upper)
    }
}

/// The smallest byte string greater than every string starting with `prefix`: drop the
/// trailing `0xff` bytes and add one to the last byte left. `None` when nothing is left.
fn successor_of_prefix(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != u8::MAX)?;
    let mut next = prefix[..=keep].to_vec();
    next[keep] += 1;
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(r: impl IterateBounds) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        r.into_bounds()
    }

    #[test]
    fn std_ranges_map_to_their_ends() {
        assert_eq!(bounds(..), (None, None));
        assert_eq!(bounds(&b"k"[..]..), (Some(b"k".to_vec()), None));
        assert_eq!(bounds(..&b"q"[..]), (None, Some(b"q".to_vec())));
        assert_eq!(
            bounds(b"a".to_vec()..b"b".to_vec()),
            (Some(b"a".to_vec()), Some(b"b".to_vec()))
        );
        // Reversed ends are passed through unchanged (the iterator then yields nothing).
        assert_eq!(bounds("z".."a"), (Some(b"z".to_vec()), Some(b"a".to_vec())));
    }

    #[test]
    fn prefix_range_upper_bound_is_the_next_prefix() {
        assert_eq!(bounds(PrefixRange(&b""[..])), (None, None));
        assert_eq!(
            bounds(PrefixRange(&b"ab"[..])),
            (Some(b"ab".to_vec()), Some(b"ac".to_vec()))
        );
        assert_eq!(
            bounds(PrefixRange(&b"a\xff\xff"[..])),
            (Some(b"a\xff\xff".to_vec()), Some(b"b".to_vec()))
        );
        assert_eq!(
            bounds(PrefixRange(&b"\x01\xfe"[..])),
            (Some(b"\x01\xfe".to_vec()), Some(b"\x01\xff".to_vec()))
        );
        assert_eq!(bounds(PrefixRange(&b"\xff"[..])), (Some(b"\xff".to_vec()), None));
        assert_eq!(bounds(PrefixRange(vec![0xffu8; 4])), (Some(vec![0xff; 4]), None));
    }
}
