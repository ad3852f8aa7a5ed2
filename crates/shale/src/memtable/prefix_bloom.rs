//! The memtable bloom (RocksDB's `memtable_prefix_bloom_size_ratio` and
//! `memtable_whole_key_filtering`): a fixed-size bloom over the prefixes (and optionally the
//! whole user keys) of every entry added to one memtable, asked before a point lookup or a prefix
//! seek searches the memtable. See `docs/prefix.md`.
//!
//! Writers add concurrently: bits are only ever set, with relaxed atomic ORs, and a writer sets
//! an entry's bits before inserting the entry, so any reader that can see the entry (it reads
//! the published sequence number with acquire ordering after the insert's release) also sees
//! its bits. Each key sets 6 bits in one 64-byte block (one cache line per probe).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::hash::xxph3_64;
use crate::slice_transform::PrefixExtractor;

const PROBES: u32 = 6;
const WORDS_PER_BLOCK: usize = 8;

pub(crate) struct PrefixBloom {
    words: Box<[AtomicU64]>,
    blocks: u64,
    extractor: Option<Arc<dyn PrefixExtractor>>,
    whole_key: bool,
}

impl std::fmt::Debug for PrefixBloom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrefixBloom({} bytes, whole_key={})", self.memory(), self.whole_key)
    }
}

impl PrefixBloom {
    /// A bloom of about `bytes` bytes (rounded up to 64), or None when it would hold nothing:
    /// no bytes, or neither an extractor nor whole keys (as RocksDB).
    pub(crate) fn new(
        bytes: usize,
        extractor: Option<Arc<dyn PrefixExtractor>>,
        whole_key: bool,
    ) -> Option<PrefixBloom> {
        if bytes == 0 || (extractor.is_none() && !whole_key) {
            return None;
        }
        let blocks = bytes.div_ceil(WORDS_PER_BLOCK * 8).max(1);
        let words = (0..blocks * WORDS_PER_BLOCK).map(|_| AtomicU64::new(0)).collect();
        Some(PrefixBloom {
            words,
            blocks: blocks as u64,
            extractor,
            whole_key,
        })
    }

    /// Bytes held.
    pub(crate) fn memory(&self) -> usize {
        self.words.len() * 8
    }

    /// Record the entry of `user_key` (before the entry becomes visible). Callable concurrently.
    #[inline]
    pub(crate) fn add_key(&self, user_key: &[u8]) {
        if let Some(p) = &self.extractor {
            if p.in_domain(user_key) {
                self.add(p.transform(user_key));
            }
        }
        if self.whole_key {
            self.add(user_key);
        }
    }

    /// Whether a point lookup of `user_key` may find an entry: by whole key when the bloom holds
    /// whole keys, else by prefix when the key is in the extractor's domain, else true.
    #[inline]
    pub(crate) fn key_may_match(&self, user_key: &[u8]) -> bool {
        if self.whole_key {
            return self.may_contain(user_key);
        }
        match &self.extractor {
            Some(p) if p.in_domain(user_key) => self.may_contain(p.transform(user_key)),
            _ => true,
        }
    }

    /// Whether keys with prefix `prefix` (made by the extractor named `extractor`) may be here.
    #[inline]
    pub(crate) fn prefix_may_match(&self, extractor: &str, prefix: &[u8]) -> bool {
        match &self.extractor {
            Some(p) if p.name() == extractor => self.may_contain(prefix),
            _ => true,
        }
    }

    #[inline]
    fn positions(&self, bytes: &[u8]) -> (usize, u32) {
        let h = xxph3_64(bytes);
        let block = (((h as u32 as u64) * self.blocks) >> 32) as usize * WORDS_PER_BLOCK;
        (block, (h >> 32) as u32)
    }

    fn add(&self, bytes: &[u8]) {
        let (block, mut h) = self.positions(bytes);
        for _ in 0..PROBES {
            let bit = (h >> 23) as usize;
            let w = &self.words[block + (bit >> 6)];
            let mask = 1u64 << (bit & 63);
            if w.load(Ordering::Relaxed) & mask == 0 {
                w.fetch_or(mask, Ordering::Relaxed);
            }
            h = h.wrapping_mul(0x9E37_79B9);
        }
    }

    fn may_contain(&self, bytes: &[u8]) -> bool {
        let (block, mut h) = self.positions(bytes);
        for _ in 0..PROBES {
            let bit = (h >> 23) as usize;
            if self.words[block + (bit >> 6)].load(Ordering::Relaxed) & (1u64 << (bit & 63)) == 0 {
                return false;
            }
            h = h.wrapping_mul(0x9E37_79B9);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slice_transform::new_fixed_prefix_transform;

    #[test]
    fn holds_what_it_is_asked_to_and_filters_the_rest() {
        assert!(PrefixBloom::new(0, Some(new_fixed_prefix_transform(4)), true).is_none());
        assert!(PrefixBloom::new(1024, None, false).is_none());
        let b = PrefixBloom::new(8192, Some(new_fixed_prefix_transform(4)), false).unwrap();
        assert_eq!(b.memory(), 8192);
        for i in 0..500u32 {
            b.add_key(format!("p{i:03}-key").as_bytes());
        }
        for i in 0..500u32 {
            assert!(b.key_may_match(format!("p{i:03}-other").as_bytes()));
            assert!(b.prefix_may_match("rocksdb.FixedPrefix.4", format!("p{i:03}").as_bytes()));
        }
        let fp = (0..1000u32)
            .filter(|i| b.prefix_may_match("rocksdb.FixedPrefix.4", format!("q{i:03}").as_bytes()))
            .count();
        assert!(fp < 50, "{fp} false positives");
        // another extractor's prefixes, out-of-domain keys: cannot tell
        assert!(b.prefix_may_match("rocksdb.FixedPrefix.3", b"zzz"));
        assert!(b.key_may_match(b"zz"));
        // whole keys only
        let w = PrefixBloom::new(8192, None, true).unwrap();
        w.add_key(b"abc");
        assert!(w.key_may_match(b"abc"));
        assert!(w.prefix_may_match("rocksdb.FixedPrefix.4", b"nope"));
        let fp = (0..1000u32)
            .filter(|i| w.key_may_match(format!("x{i}").as_bytes()))
            .count();
        assert!(fp < 20, "{fp}");
    }

    #[test]
    fn concurrent_adds_lose_no_key() {
        let b = Arc::new(PrefixBloom::new(4096, Some(new_fixed_prefix_transform(2)), true).unwrap());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let b = b.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u32 {
                        b.add_key(format!("{t}{i:05}").as_bytes());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..4u32 {
            for i in 0..2000u32 {
                assert!(b.key_may_match(format!("{t}{i:05}").as_bytes()));
            }
        }
    }
}
