//! rocksdict's key order for non-raw databases: two encoded ints (type byte 3) compare as the
//! signed big-endian two's-complement integers after the type byte; any other pair compares
//! bytewise (so keys group by type byte). The name recorded in the MANIFEST is rocksdict's,
//! "rocksdict", so a non-raw database opens in both.

use std::cmp::Ordering;
use std::sync::Arc;

use shale::comparator::{BytewiseComparator, Comparator};

/// The comparator of rocksdict's non-raw databases. Like the `rocksdb` crate's closure
/// comparators it shortens no index keys (no separator, no successor).
pub(crate) struct RocksdictComparator;

const INT_TYPE: u8 = 3;

impl Comparator for RocksdictComparator {
    fn name(&self) -> &str {
        "rocksdict"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match (a.split_first(), b.split_first()) {
            (Some((&INT_TYPE, x)), Some((&INT_TYPE, y))) => compare_signed_be(x, y),
            _ => a.cmp(b),
        }
    }
}

/// Two's-complement big-endian integers of any length (empty = 0) by value: the shorter is
/// sign-extended to the longer's length, then the bytes compare unsigned once the signs agree.
pub(crate) fn compare_signed_be(x: &[u8], y: &[u8]) -> Ordering {
    let neg = |s: &[u8]| s.first().is_some_and(|b| b & 0x80 != 0);
    let (nx, ny) = (neg(x), neg(y));
    if nx != ny {
        return if nx { Ordering::Less } else { Ordering::Greater };
    }
    let fill = if nx { 0xff } else { 0 };
    let len = x.len().max(y.len());
    let at = |s: &[u8], i: usize| {
        let pad = len - s.len();
        if i < pad {
            fill
        } else {
            s[i - pad]
        }
    };
    (0..len)
        .map(|i| at(x, i).cmp(&at(y, i)))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The comparator of a database in this mode: bytewise in raw mode, rocksdict's otherwise.
pub(crate) fn for_mode(raw: bool) -> Arc<dyn Comparator> {
    if raw {
        Arc::new(BytewiseComparator)
    } else {
        Arc::new(RocksdictComparator)
    }
}
