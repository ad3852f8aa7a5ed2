//! User-defined timestamps (RocksDB's `timestamp_size` comparators): the built-in comparators
//! with an 8-byte little-endian `u64` timestamp ending every user key, and the key helpers the
//! write and read paths share. The encoding and rules are in `docs/user-timestamps.md`.

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::key::{bytewise_u64ts_compare, split_ts, u64_ts_compare, Comparator};

/// Size of the timestamp of the built-in u64 comparators.
pub(crate) const U64_TS_SIZE: usize = 8;

/// The methods the u64-timestamp comparators share (key check, timestamp size and order).
macro_rules! u64_ts_methods {
    () => {
        fn validate_key(&self, key: &[u8]) -> Result<()> {
            check_has_ts(key, U64_TS_SIZE)
        }
        fn timestamp_size(&self) -> usize {
            U64_TS_SIZE
        }
        fn compare_timestamp(&self, a: &[u8], b: &[u8]) -> Ordering {
            u64_ts_compare(a, b)
        }
    };
}

/// RocksDB's `leveldb.BytewiseComparator.u64ts`: every user key ends with an 8-byte
/// little-endian `u64` timestamp; keys order by the bytes before it, then newer timestamps
/// first. Keys are never shortened in index blocks (the timestamp must stay whole).
#[derive(Debug, Default, Clone, Copy)]
pub struct BytewiseComparatorWithU64Ts;

impl BytewiseComparatorWithU64Ts {
    /// The name RocksDB records in the MANIFEST, OPTIONS file and table properties.
    pub const NAME: &'static str = "leveldb.BytewiseComparator.u64ts";
}

impl Comparator for BytewiseComparatorWithU64Ts {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise_u64ts_compare(a, b)
    }
    u64_ts_methods!();
}

/// RocksDB's `rocksdb.ReverseBytewiseComparator.u64ts`: as
/// [`BytewiseComparatorWithU64Ts`] with the keys (not the timestamps) in reverse bytewise order.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReverseBytewiseComparatorWithU64Ts;

impl ReverseBytewiseComparatorWithU64Ts {
    /// The name RocksDB records in the MANIFEST, OPTIONS file and table properties.
    pub const NAME: &'static str = "rocksdb.ReverseBytewiseComparator.u64ts";
}

impl Comparator for ReverseBytewiseComparatorWithU64Ts {
    fn name(&self) -> &str {
        Self::NAME
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let (ka, ta) = split_ts(a, U64_TS_SIZE);
        let (kb, tb) = split_ts(b, U64_TS_SIZE);
        kb.cmp(ka).then_with(|| u64_ts_compare(tb, ta))
    }
    u64_ts_methods!();
    fn compare_without_timestamp(&self, a: &[u8], a_has_ts: bool, b: &[u8], b_has_ts: bool) -> Ordering {
        let ka = if a_has_ts { split_ts(a, U64_TS_SIZE).0 } else { a };
        let kb = if b_has_ts { split_ts(b, U64_TS_SIZE).0 } else { b };
        kb.cmp(ka)
    }
}

fn check_has_ts(key: &[u8], ts_sz: usize) -> Result<()> {
    if key.len() < ts_sz {
        return Err(Error::invalid(format!(
            "comparator: a key with a {ts_sz}-byte timestamp is at least {ts_sz} bytes, got {}",
            key.len()
        )));
    }
    Ok(())
}

/// The comparator with timestamps RocksDB knows by `name`, if any.
pub(crate) fn builtin_by_name(name: &str) -> Option<std::sync::Arc<dyn Comparator>> {
    match name {
        BytewiseComparatorWithU64Ts::NAME => Some(std::sync::Arc::new(BytewiseComparatorWithU64Ts)),
        ReverseBytewiseComparatorWithU64Ts::NAME => Some(std::sync::Arc::new(ReverseBytewiseComparatorWithU64Ts)),
        _ => None,
    }
}

/// Check a timestamp given to a write or read of a family whose timestamps are `ts_sz` bytes:
/// InvalidArgument (naming `what`) if the family has none or the size differs.
pub(crate) fn check_ts(ts_sz: usize, ts: &[u8], what: &str) -> Result<()> {
    if ts_sz == 0 {
        return Err(Error::invalid(format!(
            "{what}: a timestamp was given but the column family's comparator has no timestamps"
        )));
    }
    if ts.len() != ts_sz {
        return Err(Error::invalid(format!(
            "{what}: timestamp of {} bytes, the column family's comparator needs {ts_sz}",
            ts.len()
        )));
    }
    Ok(())
}

/// `key || ts`.
pub(crate) fn key_with_ts(key: &[u8], ts: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(key.len() + ts.len());
    v.extend_from_slice(key);
    v.extend_from_slice(ts);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::InternalKeyComparator;
    use std::sync::Arc;

    fn k(key: &[u8], ts: u64) -> Vec<u8> {
        key_with_ts(key, &ts.to_le_bytes())
    }

    #[test]
    fn u64ts_orders_key_then_newest_first() {
        let c = BytewiseComparatorWithU64Ts;
        assert_eq!(c.compare(&k(b"a", 1), &k(b"b", 9)), Ordering::Less);
        // newer (larger) timestamp first, numerically: 256 is newer than 1
        assert_eq!(c.compare(&k(b"a", 256), &k(b"a", 1)), Ordering::Less);
        assert_eq!(c.compare(&k(b"a", 1), &k(b"a", 256)), Ordering::Greater);
        assert_eq!(c.compare(&k(b"a", 7), &k(b"a", 7)), Ordering::Equal);
        // a key that is a prefix of another sorts first whatever the timestamps
        assert_eq!(c.compare(&k(b"a", 0), &k(b"a\x00", u64::MAX)), Ordering::Less);
        assert_eq!(c.timestamp_size(), 8);
        assert_eq!(
            c.compare_timestamp(&1u64.to_le_bytes(), &256u64.to_le_bytes()),
            Ordering::Less
        );
        assert_eq!(
            c.compare_without_timestamp(&k(b"a", 5), true, b"a", false),
            Ordering::Equal
        );
        assert!(c.validate_key(b"short").is_err());
        let icmp = InternalKeyComparator::new(Arc::new(c));
        assert_eq!(icmp.timestamp_size(), 8);
        assert_eq!(icmp.compare_user(&k(b"a", 256), &k(b"a", 1)), Ordering::Less);
        assert_eq!(
            icmp.compare_without_ts(&k(b"a", 256), true, &k(b"a", 1), true),
            Ordering::Equal
        );
        assert_eq!(InternalKeyComparator::default().timestamp_size(), 0);
    }

    #[test]
    fn reverse_u64ts_reverses_keys_not_timestamps() {
        let c = ReverseBytewiseComparatorWithU64Ts;
        assert_eq!(c.compare(&k(b"a", 1), &k(b"b", 9)), Ordering::Greater);
        assert_eq!(c.compare(&k(b"a", 9), &k(b"a", 1)), Ordering::Less);
        assert_eq!(
            c.compare_without_timestamp(&k(b"a", 5), true, b"b", false),
            Ordering::Greater
        );
    }

    #[test]
    fn timestamp_checks_name_the_call() {
        assert!(check_ts(8, &[0; 8], "put").is_ok());
        let e = check_ts(8, &[0; 4], "put").unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains("4 bytes"), "{e}");
        let e = check_ts(0, &[0; 8], "put").unwrap_err();
        assert!(
            e.is_invalid_argument() && e.to_string().contains("no timestamps"),
            "{e}"
        );
    }
}
