//! The PlainTable hash index (RocksDB's `PlainTableIndex`), built at open from the records or
//! stored in the file as the `PlainTableIndexBlock` meta block. One layout for both:
//!
//! ```text
//! varint32 num_buckets | varint32 num_prefixes | fixed32 bucket[num_buckets] | sub_index
//! ```
//!
//! A bucket is `0x7FFFFFFF` (empty), an offset below 2^31 (the first indexed record of the only
//! prefix hashing there), or `0x80000000 | pos`: at `sub_index[pos]` there is `varint32 count`
//! and `count` fixed32 record offsets in file (= key) order, searched by binary search.
//! Bucket of a prefix = `hash32(prefix, 397) mod num_buckets`. Without a prefix extractor every
//! key has the empty prefix and there is one bucket: a sorted sample of record offsets.

use crate::coding::{decode_fixed32, get_varint32, put_fixed32, put_varint32, varint_len};
use crate::error::{Error, Result};
use crate::hash::hash32;

pub(crate) const EMPTY_BUCKET: u32 = 0x7FFF_FFFF;
pub(crate) const SUB_INDEX_FLAG: u32 = 0x8000_0000;

/// RocksDB's `GetSliceHash`.
#[inline]
pub(crate) fn slice_hash(s: &[u8]) -> u32 {
    hash32(s, 397)
}

/// Collects index records while the records are written or scanned.
pub(crate) struct IndexBuilder {
    /// 0 = index every key.
    sparseness: usize,
    records: Vec<(u32, u32)>,
    num_prefixes: u32,
    prev_prefix: Vec<u8>,
    prev_hash: u32,
    first: bool,
    due: bool,
    keys_in_prefix: usize,
    /// Hash of every distinct prefix, in order (the reader's bloom is filled from these).
    prefix_hashes: Vec<u32>,
}

impl IndexBuilder {
    pub(crate) fn new(sparseness: usize) -> IndexBuilder {
        IndexBuilder {
            sparseness,
            records: Vec::new(),
            num_prefixes: 0,
            prev_prefix: Vec::new(),
            prev_hash: 0,
            first: true,
            due: false,
            keys_in_prefix: 0,
            prefix_hashes: Vec::new(),
        }
    }

    /// Note the record at `offset` whose key has `prefix`. Records are indexed at the first key
    /// of each prefix and then every `sparseness` keys; a due record that cannot be decoded on
    /// its own (`seekable` false: a prefix-encoded suffix) passes the duty to the next one.
    pub(crate) fn add(&mut self, prefix: &[u8], offset: u32, seekable: bool) {
        if self.first || prefix != self.prev_prefix.as_slice() {
            self.num_prefixes += 1;
            self.keys_in_prefix = 0;
            self.prev_prefix.clear();
            self.prev_prefix.extend_from_slice(prefix);
            self.prev_hash = slice_hash(prefix);
            self.prefix_hashes.push(self.prev_hash);
            self.due = true;
        }
        if self.due && seekable {
            self.records.push((self.prev_hash, offset));
            self.due = false;
        }
        self.keys_in_prefix += 1;
        if self.sparseness == 0 || self.keys_in_prefix.is_multiple_of(self.sparseness) {
            self.due = true;
        }
        self.first = false;
    }

    pub(crate) fn num_prefixes(&self) -> u32 {
        self.num_prefixes
    }

    pub(crate) fn prefix_hashes(&self) -> &[u32] {
        &self.prefix_hashes
    }

    /// Offsets of the indexed records in file order (each decodable on its own).
    pub(crate) fn record_offsets(&self) -> impl Iterator<Item = u32> + '_ {
        self.records.iter().map(|r| r.1)
    }

    /// Serialize with `num_buckets` buckets (see [`num_buckets`]).
    pub(crate) fn finish(&self, num_buckets: u32) -> Vec<u8> {
        let n = num_buckets.max(1);
        let mut counts = vec![0u32; n as usize];
        for &(h, _) in &self.records {
            counts[(h % n) as usize] += 1;
        }
        // Stable bucket sort keeps each bucket's records in file order.
        let mut start = vec![0usize; n as usize + 1];
        for i in 0..n as usize {
            start[i + 1] = start[i] + counts[i] as usize;
        }
        let mut sorted = vec![0u32; self.records.len()];
        let mut fill = start.clone();
        for &(h, off) in &self.records {
            let b = (h % n) as usize;
            sorted[fill[b]] = off;
            fill[b] += 1;
        }
        let sub_size: usize = counts
            .iter()
            .filter(|&&c| c > 1)
            .map(|&c| varint_len(c as u64) + 4 * c as usize)
            .sum();
        let mut out = Vec::with_capacity(10 + 4 * n as usize + sub_size);
        // Random lookups: huge pages spare most of them a TLB miss.
        crate::table::hints::advise_huge_pages(&out);
        put_varint32(&mut out, n);
        put_varint32(&mut out, self.num_prefixes);
        let mut sub = Vec::with_capacity(sub_size);
        for b in 0..n as usize {
            match counts[b] {
                0 => put_fixed32(&mut out, EMPTY_BUCKET),
                1 => put_fixed32(&mut out, sorted[start[b]]),
                c => {
                    put_fixed32(&mut out, SUB_INDEX_FLAG | sub.len() as u32);
                    put_varint32(&mut sub, c);
                    for &off in &sorted[start[b]..start[b + 1]] {
                        put_fixed32(&mut sub, off);
                    }
                }
            }
        }
        out.extend_from_slice(&sub);
        out
    }
}

/// Buckets for `num_prefixes` prefixes: 1 in total-order mode or with ratio 0, else
/// `floor(num_prefixes / ratio) + 1`.
pub(crate) fn num_buckets(total_order: bool, num_prefixes: u32, hash_table_ratio: f64) -> u32 {
    if total_order || hash_table_ratio <= 0.0 {
        1
    } else {
        let b = (num_prefixes as f64 * (1.0 / hash_table_ratio)).min(u32::MAX as f64 - 1.0);
        b as u32 + 1
    }
}

/// What a bucket says about a prefix hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// No prefix hashes to this bucket.
    Empty,
    /// The first record of the only prefix in the bucket.
    Direct(u32),
    /// `count` candidate offsets at byte `pos` of the index.
    Sub { pos: usize, count: u32 },
}

/// A serialized index (see the module docs), validated enough to never read out of bounds.
#[derive(Debug, Clone)]
pub(crate) struct PlainIndex {
    bytes: Vec<u8>,
    buckets_at: usize,
    num_buckets: u32,
    #[cfg_attr(not(test), allow(dead_code))] // read by the index tests only
    num_prefixes: u32,
    sub_at: usize,
}

impl PlainIndex {
    pub(crate) fn new(bytes: Vec<u8>) -> Result<PlainIndex> {
        let (num_buckets, a) = get_varint32(&bytes).ok_or_else(|| Error::corrupt("bad plain table index size"))?;
        let (num_prefixes, b) =
            get_varint32(&bytes[a..]).ok_or_else(|| Error::corrupt("bad prefix count in plain table index"))?;
        if num_buckets == 0 {
            return Err(Error::corrupt("plain table index has no buckets"));
        }
        let buckets_at = a + b;
        let sub_at = (num_buckets as usize)
            .checked_mul(4)
            .and_then(|n| n.checked_add(buckets_at))
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| Error::corrupt(format!("plain table index of {num_buckets} buckets is truncated")))?;
        Ok(PlainIndex {
            bytes,
            buckets_at,
            num_buckets,
            num_prefixes,
            sub_at,
        })
    }

    pub(crate) fn num_buckets(&self) -> u32 {
        self.num_buckets
    }

    #[cfg(test)]
    pub(crate) fn num_prefixes(&self) -> u32 {
        self.num_prefixes
    }

    pub(crate) fn sub_index_size(&self) -> usize {
        self.bytes.len() - self.sub_at
    }

    pub(crate) fn memory(&self) -> usize {
        self.bytes.capacity()
    }

    /// Prefetch the bucket [`lookup`](Self::lookup) of `hash` reads.
    #[inline(always)]
    pub(crate) fn prefetch(&self, hash: u32) {
        if self.num_buckets > 0 {
            crate::table::hints::prefetch_at(&self.bytes, self.buckets_at + 4 * (hash % self.num_buckets) as usize);
        }
    }

    pub(crate) fn lookup(&self, hash: u32) -> Result<Lookup> {
        let b = (hash % self.num_buckets) as usize;
        let at = self.buckets_at + 4 * b;
        let v = decode_fixed32(&self.bytes[at..at + 4]).unwrap_or(EMPTY_BUCKET);
        if v & SUB_INDEX_FLAG != 0 {
            let rel = (v & !SUB_INDEX_FLAG) as usize;
            let sub = &self.bytes[self.sub_at..];
            let head = sub
                .get(rel..)
                .ok_or_else(|| Error::corrupt(format!("plain table sub-index position {rel} out of range")))?;
            let (count, n) = get_varint32(&head[..head.len().min(5)])
                .ok_or_else(|| Error::corrupt("bad plain table sub-index count"))?;
            let pos = self.sub_at + rel + n;
            let end = (count as usize).checked_mul(4).and_then(|c| c.checked_add(pos));
            if count == 0 || end.is_none_or(|e| e > self.bytes.len()) {
                return Err(Error::corrupt(format!(
                    "plain table sub-index of {count} entries is truncated"
                )));
            }
            return Ok(Lookup::Sub { pos, count });
        }
        if v >= EMPTY_BUCKET {
            return Ok(Lookup::Empty);
        }
        Ok(Lookup::Direct(v))
    }

    /// Offset `i` of a sub-index returned by [`lookup`](Self::lookup).
    pub(crate) fn sub_offset(&self, pos: usize, i: u32) -> u32 {
        let at = pos + 4 * i as usize;
        decode_fixed32(&self.bytes[at..at + 4]).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_direct_offsets_and_sorted_sub_indexes() {
        let mut b = IndexBuilder::new(2);
        // prefix "a": keys at 0, 10, 20, 30, 40 -> records at 0, 20, 40 (every 2nd key)
        for (i, off) in [0u32, 10, 20, 30, 40].iter().enumerate() {
            b.add(b"a", *off, i != 3);
        }
        b.add(b"b", 50, true);
        assert_eq!(b.num_prefixes(), 2);
        assert_eq!(b.record_offsets().collect::<Vec<_>>(), [0, 20, 40, 50]);
        let idx = PlainIndex::new(b.finish(num_buckets(false, 2, 0.75))).unwrap();
        assert_eq!(idx.num_buckets(), 3);
        assert_eq!(idx.num_prefixes(), 2);
        match idx.lookup(slice_hash(b"a")).unwrap() {
            Lookup::Sub { pos, count } => {
                let v: Vec<u32> = (0..count).map(|i| idx.sub_offset(pos, i)).collect();
                if slice_hash(b"a") % 3 == slice_hash(b"b") % 3 {
                    assert_eq!(v, [0, 20, 40, 50]);
                } else {
                    assert_eq!(v, [0, 20, 40]);
                }
            }
            other => panic!("{other:?}"),
        }
        // one bucket for everything in total-order mode
        let one = PlainIndex::new(b.finish(1)).unwrap();
        assert!(matches!(one.lookup(12345).unwrap(), Lookup::Sub { count: 4, .. }));
    }

    #[test]
    fn a_skipped_due_record_moves_to_the_next_seekable_one() {
        let mut b = IndexBuilder::new(16);
        b.add(b"p", 0, true);
        b.add(b"q", 5, false); // first of a prefix, not decodable alone
        b.add(b"q", 9, true);
        assert_eq!(b.record_offsets().collect::<Vec<_>>(), [0, 9]);
    }

    #[test]
    fn malformed_indexes_are_corruption() {
        assert!(PlainIndex::new(vec![]).is_err());
        assert!(PlainIndex::new(vec![0, 0]).is_err()); // no buckets
        assert!(PlainIndex::new(vec![5, 1, 0, 0]).is_err()); // truncated buckets
                                                             // a sub-index bucket pointing past the end
        let mut v = vec![1, 1];
        put_fixed32(&mut v, SUB_INDEX_FLAG | 7);
        let idx = PlainIndex::new(v.clone()).unwrap();
        assert!(idx.lookup(0).unwrap_err().is_corruption());
        // a sub-index claiming more offsets than present
        let mut w = vec![1, 1];
        put_fixed32(&mut w, SUB_INDEX_FLAG);
        w.extend_from_slice(&[3, 0, 0, 0, 0]);
        assert!(PlainIndex::new(w).unwrap().lookup(0).unwrap_err().is_corruption());
    }
}
