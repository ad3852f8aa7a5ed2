//! How memtable entries are laid out and ordered: decoding an entry's internal key and value,
//! and the comparator the skiplist and the vector sort entries with.

use std::cmp::Ordering;

use super::skiplist::KeyComparator;
use crate::coding::get_varint32;
use crate::key::{bytewise_compare, uint64_compare, InternalKeyComparator, UserCmpKind};

/// Decode the internal key of an encoded entry.
#[inline(always)]
pub(crate) fn entry_ikey(entry: &[u8]) -> &[u8] {
    let (klen, n) = get_varint32(entry).unwrap_or((0, 0));
    &entry[n..n + klen as usize]
}

/// Split an encoded entry into (internal key, value).
#[inline(always)]
pub(crate) fn split_entry(entry: &[u8]) -> (&[u8], &[u8]) {
    let (klen, n) = get_varint32(entry).unwrap_or((0, 0));
    let kend = n + klen as usize;
    let rest = &entry[kend..];
    let (vlen, m) = get_varint32(rest).unwrap_or((0, 0));
    (&entry[n..kend], &rest[m..m + vlen as usize])
}

/// Orders memtable entries by their internal keys (user key ascending, trailer descending).
pub(crate) struct MemKeyCmp {
    icmp: InternalKeyComparator,
    /// Two flags rather than a `UserCmpKind` match: the bytewise test stays a single flag
    /// check, as before the uint64 path existed (the skiplist's hot loop is sensitive to it).
    bytewise: bool,
    uint64: bool,
}

impl MemKeyCmp {
    pub(crate) fn new(icmp: InternalKeyComparator) -> MemKeyCmp {
        let kind = icmp.kind();
        MemKeyCmp {
            icmp,
            bytewise: kind == UserCmpKind::Bytewise,
            uint64: kind == UserCmpKind::Uint64,
        }
    }
}

impl KeyComparator for MemKeyCmp {
    #[inline(always)]
    fn key<'a>(&self, entry: &'a [u8]) -> &'a [u8] {
        entry_ikey(entry)
    }
    #[inline(always)]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.bytewise && a.len() >= 8 && b.len() >= 8 {
            compare_split(a, b, bytewise_compare)
        } else {
            self.compare_other(a, b)
        }
    }
    #[inline(always)]
    fn bytewise_prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        if self.bytewise && key.len() >= 8 {
            Some(&key[..key.len() - 8])
        } else {
            None
        }
    }
}

impl MemKeyCmp {
    /// Every order but the bytewise one, out of line so that the bytewise comparison inlined
    /// into the skiplist's search loops stays as small as it was.
    #[inline(never)]
    pub(crate) fn compare_other(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.uint64 && a.len() >= 8 && b.len() >= 8 {
            compare_split(a, b, uint64_compare)
        } else {
            self.icmp.compare(a, b)
        }
    }
}

/// Internal-key order with an inlined user-key order: user keys by `user`, then trailers
/// descending. Both keys must be at least 8 bytes.
#[inline(always)]
fn compare_split(a: &[u8], b: &[u8], user: impl Fn(&[u8], &[u8]) -> Ordering) -> Ordering {
    let (ua, ta) = a.split_at(a.len() - 8);
    let (ub, tb) = b.split_at(b.len() - 8);
    match user(ua, ub) {
        Ordering::Equal => {
            let ta = u64::from_le_bytes(ta.try_into().unwrap_or_default());
            let tb = u64::from_le_bytes(tb.try_into().unwrap_or_default());
            tb.cmp(&ta)
        }
        o => o,
    }
}
