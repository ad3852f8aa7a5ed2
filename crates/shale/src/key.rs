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

/// The `u64` timestamp order: little-endian numbers (8 bytes each; other lengths, which
/// validated writes never produce, order by length then as numbers).
#[inline(always)]
pub(crate) fn u64_ts_compare(a: &[u8], b: &[u8]) -> Ordering {
    match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        (Ok(x), Ok(y)) => u64::from_le_bytes(x).cmp(&u64::from_le_bytes(y)),
        _ => a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev())),
    }
}

/// Split `k` into (key without timestamp, timestamp); a key shorter than a timestamp is all key.
#[inline(always)]
pub(crate) fn split_ts(k: &[u8], ts_sz: usize) -> (&[u8], &[u8]) {
    if k.len() < ts_sz {
        return (k, &[]);
    }
    k.split_at(k.len() - ts_sz)
}

/// `leveldb.BytewiseComparator.u64ts`'s order (`user_timestamp.rs`) as a plain function (the internal key comparator's
/// inline path).
#[inline(always)]
pub(crate) fn bytewise_u64ts_compare(a: &[u8], b: &[u8]) -> Ordering {
    let (ka, ta) = split_ts(a, 8);
    let (kb, tb) = split_ts(b, 8);
    match bytewise_compare(ka, kb) {
        Ordering::Equal => u64_ts_compare(tb, ta),
        o => o,
    }
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
    /// Orders `a` against `b`; must be a total order, consistent across calls and runs.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
    /// A short key `s` with `start <= s < limit`, or `None` to keep `start`.
    fn find_shortest_separator(&self, _start: &[u8], _limit: &[u8]) -> Option<Vec<u8>> {
        None
    }
    /// A short key `s >= key`, or `None` to keep `key`.
    fn find_short_successor(&self, _key: &[u8]) -> Option<Vec<u8>> {
        None
    }
    /// Check that `key` is a key this comparator can order. Writes (put, delete, merge,
    /// delete_range bounds, write batches) call it before anything reaches the WAL and fail
    /// with its error. The default accepts every key.
    fn validate_key(&self, _key: &[u8]) -> Result<()> {
        Ok(())
    }
    /// Size in bytes of the user-defined timestamp every key of this order ends with (RocksDB's
    /// `timestamp_size`); 0 (the default): keys carry no timestamp. A comparator with timestamps
    /// orders keys by the key without its timestamp first, then newer timestamps first.
    fn timestamp_size(&self) -> usize {
        0
    }
    /// Orders two timestamps (`timestamp_size` bytes each), older first. The default compares
    /// them as little-endian unsigned integers of any width (RocksDB's u64 encoding).
    fn compare_timestamp(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev()))
    }
    /// Orders `a` against `b` ignoring their timestamps; `a_has_ts` / `b_has_ts` say whether each
    /// still ends with one (a bound or lookup key may not). Without timestamps this is `compare`;
    /// the default with timestamps compares the keys without them bytewise.
    fn compare_without_timestamp(&self, a: &[u8], a_has_ts: bool, b: &[u8], b_has_ts: bool) -> Ordering {
        let n = self.timestamp_size();
        if n == 0 {
            return self.compare(a, b);
        }
        let strip = |k: &'_ [u8], has: bool| -> usize {
            if has {
                k.len().saturating_sub(n)
            } else {
                k.len()
            }
        };
        let (la, lb) = (strip(a, a_has_ts), strip(b, b_has_ts));
        a[..la].cmp(&b[..lb])
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

/// RocksDB's `rocksdb.Uint64Comparator`: every key is 8 bytes holding a little-endian `u64`,
/// and keys compare as those numbers. Writes of keys of any other length fail with
/// `InvalidArgument` ([`Comparator::validate_key`]).
///
/// As in RocksDB, separators and successors keep the key as it is (no shortening), so index
/// blocks hold whole 8-byte keys. Keys of another length can still reach `compare` through
/// reads (a `get` or `seek` with a 3-byte key): they get a consistent total order (shorter keys
/// first, equal lengths compared as little-endian numbers), so such a read finds nothing
/// instead of misbehaving.
#[derive(Debug, Default, Clone, Copy)]
pub struct Uint64Comparator;

impl Uint64Comparator {
    /// The name RocksDB records in the MANIFEST and table properties.
    pub const NAME: &'static str = "rocksdb.Uint64Comparator";
}

/// [`Uint64Comparator`]'s order as a plain function (used by the memtable's fast path).
#[inline(always)]
pub(crate) fn uint64_compare(a: &[u8], b: &[u8]) -> Ordering {
    match (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
        (Ok(x), Ok(y)) => u64::from_le_bytes(x).cmp(&u64::from_le_bytes(y)),
        _ => a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev())),
    }
}

impl Comparator for Uint64Comparator {
    fn name(&self) -> &str {
        Self::NAME
    }
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        uint64_compare(a, b)
    }
    fn validate_key(&self, key: &[u8]) -> Result<()> {
        if key.len() != 8 {
            return Err(Error::invalid(format!(
                "comparator: {} needs 8-byte keys, got a key of {} bytes",
                Self::NAME,
                key.len()
            )));
        }
        Ok(())
    }
}

/// Orders internal keys: user key ascending, then trailer (sequence, type) descending.
#[derive(Clone)]
pub(crate) struct InternalKeyComparator {
    user: Arc<dyn Comparator>,
    kind: UserCmpKind,
}

/// Built-in user orders compared inline (no virtual call); anything else goes through the trait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UserCmpKind {
    Bytewise,
    Uint64,
    /// `leveldb.BytewiseComparator.u64ts`: bytewise key, then an 8-byte timestamp newest first.
    BytewiseU64Ts,
    Other,
}

impl UserCmpKind {
    pub(crate) fn of(user: &dyn Comparator) -> UserCmpKind {
        match user.name() {
            "leveldb.BytewiseComparator" => UserCmpKind::Bytewise,
            Uint64Comparator::NAME => UserCmpKind::Uint64,
            "leveldb.BytewiseComparator.u64ts" => UserCmpKind::BytewiseU64Ts,
            _ => UserCmpKind::Other,
        }
    }
}

impl std::fmt::Debug for InternalKeyComparator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InternalKeyComparator({})", self.user.name())
    }
}

impl InternalKeyComparator {
    pub(crate) fn new(user: Arc<dyn Comparator>) -> Self {
        let kind = UserCmpKind::of(user.as_ref());
        InternalKeyComparator { user, kind }
    }
    pub(crate) fn kind(&self) -> UserCmpKind {
        self.kind
    }
    pub(crate) fn user_comparator(&self) -> &Arc<dyn Comparator> {
        &self.user
    }
    #[inline]
    pub(crate) fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        crate::perf_context::count_user_cmp();
        match self.kind {
            UserCmpKind::Bytewise => bytewise_compare(a, b),
            UserCmpKind::Uint64 => uint64_compare(a, b),
            UserCmpKind::BytewiseU64Ts => bytewise_u64ts_compare(a, b),
            UserCmpKind::Other => self.user.compare(a, b),
        }
    }
    /// Size of the user-defined timestamp ending every user key (0: none).
    #[inline]
    pub(crate) fn timestamp_size(&self) -> usize {
        if self.kind == UserCmpKind::BytewiseU64Ts {
            return 8;
        }
        if self.kind != UserCmpKind::Other {
            return 0;
        }
        self.user.timestamp_size()
    }
    /// Orders two user keys ignoring their timestamps (`*_has_ts`: the key still ends with one).
    #[inline]
    pub(crate) fn compare_without_ts(&self, a: &[u8], a_has_ts: bool, b: &[u8], b_has_ts: bool) -> Ordering {
        match self.kind {
            UserCmpKind::BytewiseU64Ts => {
                let la = if a_has_ts { a.len().saturating_sub(8) } else { a.len() };
                let lb = if b_has_ts { b.len().saturating_sub(8) } else { b.len() };
                bytewise_compare(&a[..la], &b[..lb])
            }
            UserCmpKind::Other => self.user.compare_without_timestamp(a, a_has_ts, b, b_has_ts),
            _ => self.compare_user(a, b),
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

    #[test]
    fn uint64_order_is_numeric_little_endian() {
        let c = Uint64Comparator;
        assert_eq!(c.name(), "rocksdb.Uint64Comparator");
        let k = |v: u64| v.to_le_bytes();
        // 256 = [0,1,0..] and 1 = [1,0,..]: bytewise says 256 < 1, numerically 1 < 256
        assert_eq!(c.compare(&k(1), &k(256)), Ordering::Less);
        assert_eq!(BytewiseComparator.compare(&k(1), &k(256)), Ordering::Greater);
        assert_eq!(c.compare(&k(u64::MAX), &k(0)), Ordering::Greater);
        assert_eq!(c.compare(&k(7), &k(7)), Ordering::Equal);
        let mut vals: Vec<u64> = (0..200u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64))
            .collect();
        let mut keys: Vec<[u8; 8]> = vals.iter().map(|&v| k(v)).collect();
        keys.sort_by(|a, b| c.compare(a, b));
        vals.sort();
        assert_eq!(keys, vals.iter().map(|&v| k(v)).collect::<Vec<_>>());
        // as RocksDB: no shortening, so index separators are whole keys
        assert_eq!(c.find_shortest_separator(&k(1), &k(1 << 40)), None);
        assert_eq!(c.find_short_successor(&k(5)), None);
        // internal keys: user key numerically, then newer first
        let ic = InternalKeyComparator::new(Arc::new(Uint64Comparator));
        let a = make_internal_key(&k(2), 9, vt::VALUE);
        let b = make_internal_key(&k(256), 1, vt::VALUE);
        let a_old = make_internal_key(&k(2), 3, vt::VALUE);
        assert_eq!(ic.compare(&a, &b), Ordering::Less);
        assert_eq!(ic.compare(&a, &a_old), Ordering::Less);
    }

    #[test]
    fn uint64_rejects_other_lengths_and_orders_them_totally() {
        let c = Uint64Comparator;
        assert!(c.validate_key(&[0; 8]).is_ok());
        for n in [0usize, 1, 7, 9, 16] {
            let e = c.validate_key(&vec![1; n]).unwrap_err();
            assert!(e.is_invalid_argument() && e.to_string().contains("comparator"), "{e}");
        }
        assert!(BytewiseComparator.validate_key(b"any length").is_ok());
        // odd lengths still compare consistently (antisymmetric, transitive on a sample)
        let keys: Vec<Vec<u8>> = vec![
            vec![],
            vec![1],
            vec![0, 1],
            vec![1, 0],
            vec![5; 8],
            vec![0; 8],
            vec![9; 9],
        ];
        for a in &keys {
            assert_eq!(c.compare(a, a), Ordering::Equal);
            for b in &keys {
                assert_eq!(c.compare(a, b), c.compare(b, a).reverse());
                for d in &keys {
                    if c.compare(a, b) == Ordering::Less && c.compare(b, d) == Ordering::Less {
                        assert_eq!(c.compare(a, d), Ordering::Less);
                    }
                }
            }
        }
    }
}
