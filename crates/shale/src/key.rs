//! Internal keys (user key + 8-byte trailer), value types and comparators, as in RocksDB's
//! `db/dbformat.h` and `util/comparator.cc`.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::decode_fixed64;
use crate::error::{Error, Result};

pub(crate) type SequenceNumber = u64;
/// Largest sequence number (56 bits).
pub(crate) const MAX_SEQUENCE: SequenceNumber = (1u64 << 56) - 1;

/// Value types that may appear in internal keys.
#[allow(dead_code)] // every value type of the format, some only matched in tests
pub(crate) mod vt {
    pub const DELETION: u8 = 0x00;
    pub const VALUE: u8 = 0x01;
    pub const MERGE: u8 = 0x02;
    pub const SINGLE_DELETION: u8 = 0x07;
    pub const RANGE_DELETION: u8 = 0x0F;
    pub const BLOB_INDEX: u8 = 0x11;
    pub const DELETION_WITH_TIMESTAMP: u8 = 0x14;
    pub const WIDE_COLUMN_ENTITY: u8 = 0x16;
    pub const VALUE_PREFERRED_SEQNO: u8 = 0x18;
    /// Type byte used in seek keys: larger than every real type, so a seek key at sequence s
    /// sorts before every entry of the same user key with sequence <= s.
    pub const FOR_SEEK: u8 = 0xFF;
    /// Type byte RocksDB 7.8 puts in shortened index separators.
    pub const SEPARATOR: u8 = 0x16;

    /// Whether `t` is a type that may appear in a data block.
    pub fn is_valid(t: u8) -> bool {
        matches!(t, 0x00 | 0x01 | 0x02 | 0x07 | 0x0F | 0x11 | 0x14 | 0x16 | 0x18)
    }
}

#[inline]
pub(crate) fn pack_trailer(seq: SequenceNumber, t: u8) -> u64 {
    (seq << 8) | t as u64
}

/// Append `user_key | fixed64(seq << 8 | t)`.
#[inline]
pub(crate) fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: SequenceNumber, t: u8) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, t).to_le_bytes());
}

#[inline]
pub(crate) fn make_internal_key(user_key: &[u8], seq: SequenceNumber, t: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(user_key.len() + 8);
    append_internal_key(&mut v, user_key, seq, t);
    v
}

/// User-key part of an internal key (empty if the key is too short, which callers validate).
#[inline]
pub(crate) fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(8)]
}

/// Bytewise (memcmp) order, comparing 8 bytes at a time as big-endian words: inlined, and
/// faster than a `memcmp` call for the short keys typical of internal keys.
#[inline(always)]
pub(crate) fn bytewise_compare(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let (mut ac, mut bc) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    for (x, y) in (&mut ac).zip(&mut bc) {
        let x = u64::from_be_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_be_bytes(y.try_into().unwrap_or_default());
        if x != y {
            return x.cmp(&y);
        }
    }
    for (x, y) in ac.remainder().iter().zip(bc.remainder()) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// The packed trailer of an internal key (0 if too short).
#[inline]
pub(crate) fn trailer(ikey: &[u8]) -> u64 {
    if ikey.len() < 8 {
        return 0;
    }
    decode_fixed64(&ikey[ikey.len() - 8..]).unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ParsedKey<'a> {
    pub user_key: &'a [u8],
    pub seq: SequenceNumber,
    pub vtype: u8,
}

/// Parse and validate an internal key.
#[inline]
pub(crate) fn parse_internal_key(ikey: &[u8]) -> Result<ParsedKey<'_>> {
    if ikey.len() < 8 {
        return Err(Error::corrupt(format!("internal key too short ({} bytes)", ikey.len())));
    }
    let t = trailer(ikey);
    let vtype = (t & 0xff) as u8;
    if !vt::is_valid(vtype) {
        return Err(Error::corrupt(format!("bad value type {vtype:#x} in internal key")));
    }
    Ok(ParsedKey {
        user_key: &ikey[..ikey.len() - 8],
        seq: t >> 8,
        vtype,
    })
}

/// A total order over user keys. Implementations must be thread-safe.
pub trait Comparator: Send + Sync {
    /// Name recorded in the MANIFEST and SST properties (must match on open).
    fn name(&self) -> &str;
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
    /// A short key `s` with `start <= s < limit`, or `None` to keep `start`.
    fn find_shortest_separator(&self, _start: &[u8], _limit: &[u8]) -> Option<Vec<u8>> {
        None
    }
    /// A short key `s >= key`, or `None` to keep `key`.
    fn find_short_successor(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// RocksDB's default `leveldb.BytewiseComparator` (memcmp order).
#[derive(Debug, Default, Clone, Copy)]
pub struct BytewiseComparator;

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        "leveldb.BytewiseComparator"
    }
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
    fn find_shortest_separator(&self, start: &[u8], limit: &[u8]) -> Option<Vec<u8>> {
        let min_len = start.len().min(limit.len());
        let d = start.iter().zip(limit.iter()).take_while(|(a, b)| a == b).count();
        if d >= min_len {
            return None; // one is a prefix of the other
        }
        let sb = start[d];
        let lb = limit[d];
        if sb >= lb {
            return None;
        }
        if sb < 0xff && sb + 1 < lb {
            let mut s = start[..=d].to_vec();
            s[d] += 1;
            return Some(s);
        }
        if d + 1 < limit.len() {
            // limit has more bytes after d: start[..d] + (sb+1) < limit
            let mut s = start[..=d].to_vec();
            s[d] += 1;
            if s.as_slice() < limit {
                return Some(s);
            }
        }
        // sb + 1 == lb and d is limit's last byte: bump a later byte of start
        for i in d + 1..start.len() {
            if start[i] < 0xff {
                let mut s = start[..=i].to_vec();
                s[i] += 1;
                return Some(s);
            }
        }
        None
    }
    fn find_short_successor(&self, key: &[u8]) -> Option<Vec<u8>> {
        for (i, &b) in key.iter().enumerate() {
            if b != 0xff {
                let mut s = key[..=i].to_vec();
                s[i] += 1;
                return Some(s);
            }
        }
        None
    }
}

/// RocksDB's `rocksdb.ReverseBytewiseComparator`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReverseBytewiseComparator;

impl Comparator for ReverseBytewiseComparator {
    fn name(&self) -> &str {
        "rocksdb.ReverseBytewiseComparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        b.cmp(a)
    }
}

/// Orders internal keys: user key ascending, then trailer (sequence, type) descending.
#[derive(Clone)]
pub(crate) struct InternalKeyComparator {
    user: Arc<dyn Comparator>,
    bytewise: bool,
}

impl std::fmt::Debug for InternalKeyComparator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InternalKeyComparator({})", self.user.name())
    }
}

impl InternalKeyComparator {
    pub(crate) fn new(user: Arc<dyn Comparator>) -> Self {
        let bytewise = user.name() == "leveldb.BytewiseComparator";
        InternalKeyComparator { user, bytewise }
    }
    pub(crate) fn user_comparator(&self) -> &Arc<dyn Comparator> {
        &self.user
    }
    #[inline]
    pub(crate) fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.bytewise {
            bytewise_compare(a, b)
        } else {
            self.user.compare(a, b)
        }
    }
    /// Compare two internal keys (both must be >= 8 bytes; shorter keys compare as user keys only).
    #[inline]
    pub(crate) fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self.compare_user(user_key(a), user_key(b)) {
            Ordering::Equal => trailer(b).cmp(&trailer(a)),
            o => o,
        }
    }
}

impl Default for InternalKeyComparator {
    fn default() -> Self {
        InternalKeyComparator::new(Arc::new(BytewiseComparator))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_key_order() {
        let c = InternalKeyComparator::default();
        let a1 = make_internal_key(b"a", 1, vt::VALUE);
        let a2 = make_internal_key(b"a", 2, vt::VALUE);
        let b1 = make_internal_key(b"b", 1, vt::VALUE);
        assert_eq!(c.compare(&a2, &a1), Ordering::Less); // newer first
        assert_eq!(c.compare(&a1, &b1), Ordering::Less);
        let seek = make_internal_key(b"a", 2, vt::FOR_SEEK);
        assert_eq!(c.compare(&seek, &a2), Ordering::Less);
        assert_eq!(c.compare(&seek, &a1), Ordering::Less);
        let p = parse_internal_key(&a2).unwrap();
        assert_eq!((p.user_key, p.seq, p.vtype), (&b"a"[..], 2, vt::VALUE));
        assert!(parse_internal_key(b"short").is_err());
        assert!(parse_internal_key(&make_internal_key(b"x", 1, 0x33)).is_err());
        // trailer bytes: first is the type
        assert_eq!(&a2[1..], &[1, 2, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn bytewise_separator_rules() {
        let c = BytewiseComparator;
        assert_eq!(c.find_shortest_separator(b"abc", b"abe"), Some(b"abd".to_vec()));
        assert_eq!(
            c.find_shortest_separator(b"abc", b"abd"),
            None.or(c.find_shortest_separator(b"abc", b"abd"))
        );
        assert_eq!(c.find_shortest_separator(b"ab", b"abc"), None);
        assert_eq!(c.find_shortest_separator(b"abc", b"abdz"), Some(b"abd".to_vec()));
        assert_eq!(c.find_shortest_separator(b"abc1", b"abd"), Some(b"abc2".to_vec()));
        assert_eq!(c.find_shortest_separator(b"b", b"a"), None);
        for (s, l) in [
            (&b"abc1"[..], &b"abd"[..]),
            (b"a\xff\xff", b"b"),
            (b"key0001", b"key0002"),
        ] {
            if let Some(sep) = c.find_shortest_separator(s, l) {
                assert!(s <= sep.as_slice() && sep.as_slice() < l, "{s:?} {l:?} {sep:?}");
            }
        }
        assert_eq!(c.find_short_successor(b"ab"), Some(b"b".to_vec()));
        assert_eq!(c.find_short_successor(b"\xff\xff"), None);
    }
}
