//! PlainTable's bloom filter (RocksDB's `PlainTableBloomV1`): 6 probes over a bit array, fed
//! 32-bit hashes (`hash32(prefix or user key, 397)`).
//!
//! Two layouts, as RocksDB: without locality (the default, `bloom_locality = 0`) the bits are
//! one array of `roundup8(n · bits_per_key)` bits and probe i tests bit `(h + i·delta) mod
//! total_bits` with `delta = rotr32(h, 17)`; with locality (a file whose
//! `rocksdb.plain.table.bloom.numblocks` property is non-zero) every probe stays inside one
//! 64-byte cache line chosen by `rotr32(h, 11) mod num_lines`, and `h` is rotated right by 9
//! bits before each step.

/// Probes per key (RocksDB passes 6 to the plain-table bloom).
pub(crate) const NUM_PROBES: u32 = 6;
const CACHE_LINE_BYTES: usize = 64;
const CACHE_LINE_BITS: u32 = 512;

#[derive(Debug, Clone)]
pub(crate) struct PlainBloom {
    bits: Vec<u8>,
    total_bits: u32,
    /// 0: no locality; otherwise the number of cache lines.
    num_lines: u32,
}

impl PlainBloom {
    /// An empty no-locality filter of `roundup8(total_bits)` bits; None when that is 0.
    pub(crate) fn with_bits(total_bits: u64) -> Option<PlainBloom> {
        let total = total_bits.min(u32::MAX as u64 - 7);
        let total = total.div_ceil(8) * 8;
        if total == 0 {
            return None;
        }
        Some(PlainBloom {
            bits: vec![0; (total / 8) as usize],
            total_bits: total as u32,
            num_lines: 0,
        })
    }

    /// An empty filter with locality: `ceil(total_bits / 512)` cache lines, every probe of a key
    /// inside one of them; None when `total_bits` is 0. For filters built in memory (its
    /// layout is the one a file with `numblocks` = that line count would hold).
    pub(crate) fn with_bits_local(total_bits: u64) -> Option<PlainBloom> {
        let lines = total_bits.min(u32::MAX as u64 - 511).div_ceil(CACHE_LINE_BITS as u64);
        if lines == 0 {
            return None;
        }
        Some(PlainBloom {
            bits: vec![0; lines as usize * CACHE_LINE_BYTES],
            total_bits: (lines * CACHE_LINE_BITS as u64) as u32,
            num_lines: lines as u32,
        })
    }

    /// A filter stored in a file: `num_lines` = the numblocks property (0: no locality).
    /// None if the bytes cannot hold what the property claims.
    pub(crate) fn from_raw(bits: Vec<u8>, num_lines: u32) -> Option<PlainBloom> {
        let total_bits = u32::try_from(bits.len().checked_mul(8)?).ok()?;
        if total_bits == 0 {
            return None;
        }
        if num_lines > 0 && (num_lines as usize).checked_mul(CACHE_LINE_BYTES)? > bits.len() {
            return None;
        }
        Some(PlainBloom {
            bits,
            total_bits,
            num_lines,
        })
    }

    pub(crate) fn add_hash(&mut self, mut h: u32) {
        let delta = h.rotate_right(17);
        if self.num_lines == 0 {
            for _ in 0..NUM_PROBES {
                let pos = h % self.total_bits;
                self.bits[(pos / 8) as usize] |= 1 << (pos % 8);
                h = h.wrapping_add(delta);
            }
        } else {
            let base = (h.rotate_right(11) % self.num_lines) as usize * CACHE_LINE_BYTES;
            for _ in 0..NUM_PROBES {
                let pos = h & (CACHE_LINE_BITS - 1);
                self.bits[base + (pos / 8) as usize] |= 1 << (pos % 8);
                h = h.rotate_right(9).wrapping_add(delta);
            }
        }
    }

    /// Prefetch the cache line a filter with locality probes for `h` (nothing without
    /// locality: its probes are scattered).
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u32) {
        if self.num_lines > 0 {
            crate::table::hints::prefetch_at(
                &self.bits,
                (h.rotate_right(11) % self.num_lines) as usize * CACHE_LINE_BYTES,
            );
        }
    }

    pub(crate) fn may_contain_hash(&self, mut h: u32) -> bool {
        let delta = h.rotate_right(17);
        if self.num_lines == 0 {
            for _ in 0..NUM_PROBES {
                let pos = h % self.total_bits;
                if self.bits[(pos / 8) as usize] & (1 << (pos % 8)) == 0 {
                    return false;
                }
                h = h.wrapping_add(delta);
            }
        } else {
            let base = (h.rotate_right(11) % self.num_lines) as usize * CACHE_LINE_BYTES;
            for _ in 0..NUM_PROBES {
                let pos = h & (CACHE_LINE_BITS - 1);
                if self.bits[base + (pos / 8) as usize] & (1 << (pos % 8)) == 0 {
                    return false;
                }
                h = h.rotate_right(9).wrapping_add(delta);
            }
        }
        true
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bits
    }

    pub(crate) fn memory(&self) -> usize {
        self.bits.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::hash32;

    #[test]
    fn local_filter_sets_one_cache_line_per_key_and_finds_every_key() {
        assert!(PlainBloom::with_bits_local(0).is_none());
        let mut b = PlainBloom::with_bits_local(10_000).unwrap();
        assert_eq!(b.bytes().len(), 20 * 64); // ceil(10000 / 512) lines
        let hashes: Vec<u32> = (0..1000u32).map(|i| hash32(&i.to_le_bytes(), 397)).collect();
        for &h in &hashes {
            let before = b.bytes().to_vec();
            b.add_hash(h);
            let lines: std::collections::BTreeSet<usize> = before
                .iter()
                .zip(b.bytes())
                .enumerate()
                .filter(|(_, (x, y))| x != y)
                .map(|(i, _)| i / 64)
                .collect();
            assert!(lines.len() <= 1, "one key's probes span lines {lines:?}");
        }
        assert!(hashes.iter().all(|&h| b.may_contain_hash(h)));
        let fp = (1000..11000u32)
            .filter(|i| b.may_contain_hash(hash32(&i.to_le_bytes(), 397)))
            .count();
        assert!(fp < 500, "{fp} false positives in 10000 at 10 bits per key");
    }

    #[test]
    fn no_locality_bits_follow_the_probe_formula() {
        let mut b = PlainBloom::with_bits(10).unwrap();
        assert_eq!(b.bytes().len(), 2); // rounded up to 16 bits
        let h = hash32(b"k", 397);
        b.add_hash(h);
        let delta = h.rotate_right(17);
        let mut expect = [0u8; 2];
        let mut x = h;
        for _ in 0..6 {
            let p = x % 16;
            expect[(p / 8) as usize] |= 1 << (p % 8);
            x = x.wrapping_add(delta);
        }
        assert_eq!(b.bytes(), &expect);
        assert!(b.may_contain_hash(h));
    }

    #[test]
    fn absent_hashes_are_mostly_rejected() {
        for lines in [0u32, 3] {
            let mut b = if lines == 0 {
                PlainBloom::with_bits(1000 * 10).unwrap()
            } else {
                PlainBloom::from_raw(vec![0; 3 * 64], 3).unwrap()
            };
            let n = if lines == 0 { 1000 } else { 100 };
            for i in 0..n {
                b.add_hash(hash32(format!("key{i}").as_bytes(), 397));
            }
            for i in 0..n {
                assert!(b.may_contain_hash(hash32(format!("key{i}").as_bytes(), 397)));
            }
            let fp = (0..10_000)
                .filter(|i| b.may_contain_hash(hash32(format!("absent{i}").as_bytes(), 397)))
                .count();
            assert!(fp < 500, "false positives {fp} (lines {lines})");
        }
    }

    #[test]
    fn raw_filters_must_hold_their_lines() {
        assert!(PlainBloom::from_raw(vec![0; 64], 2).is_none());
        assert!(PlainBloom::from_raw(Vec::new(), 0).is_none());
        assert!(PlainBloom::from_raw(vec![0; 128], 2).is_some());
    }
}
