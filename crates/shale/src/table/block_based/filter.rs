//! Full filter blocks (`docs/format-details.md`, "Full filters"): FastLocalBloom
//! (format_version >= 5) and the legacy Bloom (format_version < 5) builders and readers. Ribbon
//! and unknown filters read as "always true"; a block of 5 bytes or less as "always false".

use crate::hash::{hash32, xxph3_64};

const METADATA_LEN: usize = 5;
const LEGACY_BLOOM_SEED: u32 = 0xBC9F_1D34;

/// `millibits_per_key` as RocksDB's BloomFilterPolicy computes it; 0 = no filter.
pub(crate) fn millibits_per_key(bits_per_key: f64) -> u32 {
    if bits_per_key.is_nan() || bits_per_key < 0.5 {
        return 0;
    }
    let b = bits_per_key.clamp(1.0, 100.0);
    (b * 1000.0 + 0.500001) as u32
}

/// FastLocalBloom `ChooseNumProbes(millibits_per_key)`.
pub(crate) fn choose_num_probes(millibits: u32) -> u32 {
    match millibits {
        0..=2080 => 1,
        2081..=3580 => 2,
        3581..=5100 => 3,
        5101..=6640 => 4,
        6641..=8300 => 5,
        8301..=10070 => 6,
        10071..=11720 => 7,
        11721..=14001 => 8,
        14002..=16050 => 9,
        16051..=18300 => 10,
        18301..=22001 => 11,
        22002..=25501 => 12,
        25502..=50000 => (millibits - 1) / 2000 - 1,
        _ => 24,
    }
}

/// Which built-in filter implementation to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterKind {
    FastLocalBloom,
    LegacyBloom,
}

/// Builds a full filter from user keys (consecutive duplicate hashes are collapsed).
pub(crate) struct FilterBuilder {
    kind: FilterKind,
    millibits: u32,
    hashes64: Vec<u64>,
    hashes32: Vec<u32>,
    /// The hash of the last prefix given to [`FilterBuilder::add_key_and_alt`].
    prev_alt64: Option<u64>,
    prev_alt32: Option<u32>,
}

fn dedup_key_and_alt<H: Copy + PartialEq>(hashes: &mut Vec<H>, prev_alt: &mut Option<H>, key: H, alt: H) {
    let prev_key = hashes.last().copied();
    if Some(alt) != *prev_alt && alt != key && Some(alt) != prev_key {
        hashes.push(alt);
    }
    let before = *prev_alt;
    *prev_alt = Some(alt);
    if Some(key) != prev_key && Some(key) != before {
        hashes.push(key);
    }
}

impl FilterBuilder {
    /// `None` if `bits_per_key` disables the filter.
    pub(crate) fn new(kind: FilterKind, bits_per_key: f64) -> Option<FilterBuilder> {
        let millibits = millibits_per_key(bits_per_key);
        if millibits == 0 {
            return None;
        }
        Some(FilterBuilder {
            kind,
            millibits,
            hashes64: Vec::new(),
            hashes32: Vec::new(),
            prev_alt64: None,
            prev_alt32: None,
        })
    }

    #[inline]
    pub(crate) fn add_key(&mut self, user_key: &[u8]) {
        match self.kind {
            FilterKind::FastLocalBloom => {
                let h = xxph3_64(user_key);
                if self.hashes64.last() != Some(&h) {
                    self.hashes64.push(h);
                }
            }
            FilterKind::LegacyBloom => {
                let h = hash32(user_key, LEGACY_BLOOM_SEED);
                if self.hashes32.last() != Some(&h) {
                    self.hashes32.push(h);
                }
            }
        }
    }

    /// Add a whole key and its prefix (`alt`) as RocksDB's `AddKeyAndAlt` does: the prefix first
    /// unless it equals the previous prefix, the key or the previous key; then the key unless
    /// it equals the previous key or the previous prefix (keys arrive sorted, so only neighbours
    /// repeat).
    pub(crate) fn add_key_and_alt(&mut self, key: &[u8], alt: &[u8]) {
        match self.kind {
            FilterKind::FastLocalBloom => {
                let (k, a) = (xxph3_64(key), xxph3_64(alt));
                dedup_key_and_alt(&mut self.hashes64, &mut self.prev_alt64, k, a);
            }
            FilterKind::LegacyBloom => {
                let (k, a) = (hash32(key, LEGACY_BLOOM_SEED), hash32(alt, LEGACY_BLOOM_SEED));
                dedup_key_and_alt(&mut self.hashes32, &mut self.prev_alt32, k, a);
            }
        }
    }

    /// Number of distinct (consecutive) hashes added so far (`rocksdb.num.filter_entries`).
    pub(crate) fn num_entries(&self) -> usize {
        self.hashes64.len() + self.hashes32.len()
    }

    /// The filter block contents, or `None` if nothing was added.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        if self.num_entries() == 0 {
            return None;
        }
        Some(match self.kind {
            FilterKind::FastLocalBloom => self.finish_fast(),
            FilterKind::LegacyBloom => self.finish_legacy(),
        })
    }

    fn finish_fast(&mut self) -> Vec<u8> {
        let n = self.hashes64.len() as u64;
        let mut raw = (n * self.millibits as u64).div_ceil(8000);
        if raw >= 0xffff_ffc0 {
            raw = 0xffff_ffc0;
        }
        let len = ((raw + 63) & !63) as usize;
        let num_probes = choose_num_probes(self.millibits);
        let mut buf = vec![0u8; len + METADATA_LEN];
        let lines = (len >> 6) as u32;
        for &h in &self.hashes64 {
            let h1 = h as u32;
            let mut h2 = (h >> 32) as u32;
            let base = (((h1 as u64 * lines as u64) >> 32) as usize) << 6;
            for _ in 0..num_probes {
                let bit = (h2 >> 23) as usize;
                buf[base + (bit >> 3)] |= 1 << (bit & 7);
                h2 = h2.wrapping_mul(0x9E37_79B9);
            }
        }
        buf[len] = 0xFF;
        buf[len + 1] = 0;
        buf[len + 2] = num_probes as u8;
        self.hashes64.clear();
        self.prev_alt64 = None;
        buf
    }

    fn finish_legacy(&mut self) -> Vec<u8> {
        let bits_per_key = (self.millibits as u64 + 500) / 1000;
        let num_probes = ((bits_per_key as f64 * 0.69) as u32).clamp(1, 30);
        let n = self.hashes32.len() as u64;
        let mut total_bits = (n * bits_per_key).min(0xffff_0000);
        let mut num_lines = total_bits.div_ceil(512);
        if num_lines.is_multiple_of(2) {
            num_lines += 1;
        }
        total_bits = num_lines * 512;
        let len = (total_bits / 8) as usize;
        let mut buf = vec![0u8; len + METADATA_LEN];
        for &h0 in &self.hashes32 {
            let mut h = h0;
            let base = (h % num_lines as u32) as usize * 64;
            let delta = h.rotate_right(17);
            for _ in 0..num_probes {
                let bit = (h & 511) as usize;
                buf[base + (bit >> 3)] |= 1 << (bit & 7);
                h = h.wrapping_add(delta);
            }
        }
        buf[len] = num_probes as u8;
        buf[len + 1..len + 5].copy_from_slice(&(num_lines as u32).to_le_bytes());
        self.hashes32.clear();
        self.prev_alt32 = None;
        buf
    }
}

/// A parsed full filter. Holds its bytes.
pub(crate) enum FilterReader {
    AlwaysTrue,
    AlwaysFalse,
    FastLocalBloom {
        data: Vec<u8>,
        lines: u32,
        num_probes: u32,
    },
    LegacyBloom {
        data: Vec<u8>,
        num_lines: u32,
        num_probes: u32,
        log2_line_bytes: u32,
    },
}

impl std::fmt::Debug for FilterReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterReader::AlwaysTrue => write!(f, "AlwaysTrue"),
            FilterReader::AlwaysFalse => write!(f, "AlwaysFalse"),
            FilterReader::FastLocalBloom { data, num_probes, .. } => {
                write!(f, "FastLocalBloom(len={}, probes={num_probes})", data.len())
            }
            FilterReader::LegacyBloom {
                data,
                num_lines,
                num_probes,
                ..
            } => {
                write!(
                    f,
                    "LegacyBloom(len={}, lines={num_lines}, probes={num_probes})",
                    data.len()
                )
            }
        }
    }
}

impl FilterReader {
    /// Interpret a filter block (dispatch on the metadata trailer, as RocksDB does).
    pub(crate) fn new(mut contents: Vec<u8>) -> FilterReader {
        if contents.len() <= METADATA_LEN {
            return FilterReader::AlwaysFalse;
        }
        let len = contents.len() - METADATA_LEN;
        let raw_probes = contents[len] as i8;
        if raw_probes < 1 {
            if raw_probes == -1 {
                let sub = contents[len + 1];
                let bp = contents[len + 2];
                let log2_block = ((bp >> 5) & 7) as u32 + 6;
                let num_probes = (bp & 31) as u32;
                let rest = u16::from_le_bytes([contents[len + 3], contents[len + 4]]);
                if sub != 0 || !(1..=30).contains(&num_probes) || rest != 0 || log2_block != 6 || len < 64 {
                    return FilterReader::AlwaysTrue;
                }
                contents.truncate(len);
                return FilterReader::FastLocalBloom {
                    data: contents,
                    lines: (len >> 6) as u32,
                    num_probes,
                };
            }
            // 0: always true; -2: Ribbon (not implemented: always true); others reserved.
            return FilterReader::AlwaysTrue;
        }
        let num_probes = raw_probes as u32;
        let num_lines = u32::from_le_bytes(contents[len + 1..len + 5].try_into().unwrap());
        if num_lines == 0 || !len.is_multiple_of(num_lines as usize) {
            return FilterReader::AlwaysTrue;
        }
        let line_bytes = len / num_lines as usize;
        if !line_bytes.is_power_of_two() {
            return FilterReader::AlwaysTrue;
        }
        contents.truncate(len);
        FilterReader::LegacyBloom {
            data: contents,
            num_lines,
            num_probes,
            log2_line_bytes: line_bytes.trailing_zeros(),
        }
    }

    /// Whether the user key may be in the file.
    #[inline]
    pub(crate) fn key_may_match(&self, user_key: &[u8]) -> bool {
        match self {
            FilterReader::AlwaysTrue => true,
            FilterReader::AlwaysFalse => false,
            FilterReader::FastLocalBloom {
                data,
                lines,
                num_probes,
            } => {
                let h = xxph3_64(user_key);
                let h1 = h as u32;
                let mut h2 = (h >> 32) as u32;
                let base = (((h1 as u64 * *lines as u64) >> 32) as usize) << 6;
                let line = &data[base..base + 64];
                for _ in 0..*num_probes {
                    let bit = (h2 >> 23) as usize;
                    if line[bit >> 3] & (1 << (bit & 7)) == 0 {
                        return false;
                    }
                    h2 = h2.wrapping_mul(0x9E37_79B9);
                }
                true
            }
            FilterReader::LegacyBloom {
                data,
                num_lines,
                num_probes,
                log2_line_bytes,
            } => {
                let mut h = hash32(user_key, LEGACY_BLOOM_SEED);
                let base = ((h % *num_lines) as usize) << log2_line_bytes;
                let mask = (1u32 << (log2_line_bytes + 3)) - 1;
                let delta = h.rotate_right(17);
                for _ in 0..*num_probes {
                    let bit = (h & mask) as usize;
                    if data[base + (bit >> 3)] & (1 << (bit & 7)) == 0 {
                        return false;
                    }
                    h = h.wrapping_add(delta);
                }
                true
            }
        }
    }

    pub(crate) fn memory(&self) -> usize {
        match self {
            FilterReader::FastLocalBloom { data, .. } | FilterReader::LegacyBloom { data, .. } => data.capacity(),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(len: usize, set: &[(usize, u8)]) -> Vec<u8> {
        let mut v = vec![0u8; len];
        for &(i, b) in set {
            v[i] = b;
        }
        v
    }

    #[test]
    fn fast_local_bloom_vector() {
        let mut b = FilterBuilder::new(FilterKind::FastLocalBloom, 10.0).unwrap();
        for k in [b"a", b"b", b"c"] {
            b.add_key(k);
        }
        assert_eq!(b.num_entries(), 3);
        let f = b.finish().unwrap();
        let want = expect(
            69,
            &[
                (0, 0x0a),
                (5, 0x01),
                (6, 0x04),
                (13, 0x40),
                (19, 0x41),
                (23, 0x02),
                (26, 0x04),
                (32, 0x20),
                (34, 0x02),
                (36, 0x02),
                (39, 0x20),
                (44, 0x20),
                (45, 0x01),
                (46, 0x01),
                (52, 0x02),
                (58, 0x04),
                (64, 0xff),
                (66, 0x06),
            ],
        );
        assert_eq!(f, want);
        let r = FilterReader::new(f);
        for k in [b"a", b"b", b"c"] {
            assert!(r.key_may_match(k));
        }
    }

    #[test]
    fn legacy_bloom_vector() {
        let mut b = FilterBuilder::new(FilterKind::LegacyBloom, 10.0).unwrap();
        for k in [b"a", b"a", b"b", b"c"] {
            b.add_key(k);
        }
        assert_eq!(b.num_entries(), 3);
        let f = b.finish().unwrap();
        let want = expect(
            69,
            &[
                (1, 0x08),
                (3, 0x40),
                (10, 0x24),
                (11, 0x80),
                (17, 0x10),
                (19, 0x10),
                (24, 0x08),
                (26, 0x40),
                (28, 0x40),
                (41, 0x20),
                (46, 0x82),
                (54, 0x01),
                (56, 0x12),
                (60, 0x80),
                (61, 0x01),
                (64, 0x06),
                (65, 0x01),
            ],
        );
        assert_eq!(f, want);
        let r = FilterReader::new(f);
        for k in [b"a", b"b", b"c"] {
            assert!(r.key_may_match(k));
        }
    }

    #[test]
    fn many_keys_no_false_negatives_and_reasonable_fp() {
        for kind in [FilterKind::FastLocalBloom, FilterKind::LegacyBloom] {
            let mut b = FilterBuilder::new(kind, 10.0).unwrap();
            for i in 0..10000u32 {
                b.add_key(format!("key{i:08}").as_bytes());
            }
            let r = FilterReader::new(b.finish().unwrap());
            for i in 0..10000u32 {
                assert!(r.key_may_match(format!("key{i:08}").as_bytes()));
            }
            let fp = (0..10000u32)
                .filter(|i| r.key_may_match(format!("nokey{i:08}").as_bytes()))
                .count();
            assert!(fp < 300, "{kind:?} fp {fp}");
        }
    }

    #[test]
    fn special_filters() {
        assert!(!FilterReader::new(vec![]).key_may_match(b"x"));
        assert!(!FilterReader::new(vec![0xff, 0, 6, 0, 0]).key_may_match(b"x"));
        let mut ribbon = vec![0u8; 64];
        ribbon.extend_from_slice(&[0xfe, 0, 1, 0, 0]);
        assert!(FilterReader::new(ribbon).key_may_match(b"x"));
        let mut zero = vec![0u8; 64];
        zero.extend_from_slice(&[0, 0, 0, 0, 0]);
        assert!(FilterReader::new(zero).key_may_match(b"x"));
        let mut odd = vec![0u8; 64];
        odd.extend_from_slice(&[0xff, 0, 6, 1, 0]);
        assert!(FilterReader::new(odd).key_may_match(b"x"));
        // legacy with a non-power-of-two line size
        let mut bad = vec![0u8; 60];
        bad.extend_from_slice(&[6, 1, 0, 0, 0]);
        assert!(FilterReader::new(bad).key_may_match(b"x"));
        assert!(FilterBuilder::new(FilterKind::FastLocalBloom, 0.0).is_none());
        assert_eq!(millibits_per_key(10.0), 10000);
        assert_eq!(choose_num_probes(10000), 6);
        assert_eq!(choose_num_probes(30000), 13);
        assert_eq!(choose_num_probes(60000), 24);
        // every random byte string is safe to interpret
        for n in 0..80usize {
            for seed in 0..8u64 {
                let v: Vec<u8> = (0..n as u64)
                    .map(|i| (crate::hash::murmur64a(&[i as u8, seed as u8], 3) >> 9) as u8)
                    .collect();
                let r = FilterReader::new(v);
                let _ = r.key_may_match(b"abc");
            }
        }
    }
}
