//! The shared block cache: a sharded CLOCK (second-chance) cache of parsed blocks, bounded in
//! bytes. Keys are `(cache_id, block_offset)`; every table gets its own `cache_id`.
//!
//! Lookups take a shard's read lock and set an atomic "referenced" bit, so many reader threads
//! do not serialize on hits. Inserts take the shard's write lock and evict unreferenced entries
//! in clock order until the new entry fits.

#![allow(dead_code)] // the engine modules using this API are built in parallel branches

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::table::block::Block;

/// Cache key: (cache id of the table, block offset in the file).
pub(crate) type CacheKey = (u64, u64);

const NUM_SHARD_BITS: u32 = 4;
const NUM_SHARDS: usize = 1 << NUM_SHARD_BITS;
/// Bookkeeping bytes charged per entry on top of the caller's charge.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

#[inline]
fn shard_of(key: &CacheKey) -> usize {
    let h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (h.wrapping_mul(0x2545_F491_4F6C_DD1D) >> (64 - NUM_SHARD_BITS)) as usize
}

struct Slot {
    key: CacheKey,
    value: Option<Arc<Block>>,
    charge: usize,
    referenced: AtomicBool,
}

#[derive(Default)]
struct Shard {
    map: HashMap<CacheKey, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
    usage: usize,
}

impl Shard {
    fn evict_one(&mut self) -> bool {
        let n = self.slots.len();
        if n == 0 || self.map.is_empty() {
            return false;
        }
        // at most two sweeps: the first clears reference bits
        for _ in 0..2 * n + 1 {
            let i = self.hand;
            self.hand = (self.hand + 1) % n;
            let s = &mut self.slots[i];
            if s.value.is_none() {
                continue;
            }
            if s.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            s.value = None;
            self.usage -= s.charge;
            let key = s.key;
            self.map.remove(&key);
            self.free.push(i);
            return true;
        }
        false
    }

    fn remove(&mut self, key: &CacheKey) {
        if let Some(i) = self.map.remove(key) {
            let s = &mut self.slots[i];
            s.value = None;
            self.usage -= s.charge;
            self.free.push(i);
        }
    }
}

/// A sharded, byte-bounded cache of blocks.
pub(crate) struct BlockCache {
    shards: Vec<RwLock<Shard>>,
    capacity: usize,
    shard_capacity: usize,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockCache(capacity={}, usage={})", self.capacity, self.usage())
    }
}

impl BlockCache {
    /// A cache holding at most about `capacity_bytes` of charged entries (0 = caches nothing).
    pub(crate) fn new(capacity_bytes: usize) -> BlockCache {
        BlockCache {
            shards: (0..NUM_SHARDS).map(|_| RwLock::new(Shard::default())).collect(),
            capacity: capacity_bytes,
            shard_capacity: capacity_bytes.div_ceil(NUM_SHARDS),
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: CacheKey) -> Option<Arc<Block>> {
        let shard = self.shards[shard_of(&key)].read();
        let &i = shard.map.get(&key)?;
        let s = &shard.slots[i];
        if !s.referenced.load(Ordering::Relaxed) {
            s.referenced.store(true, Ordering::Relaxed);
        }
        s.value.clone()
    }

    /// Insert (or replace) an entry. `charge` is the caller's size in bytes; a fixed overhead
    /// is added. Entries larger than a shard's capacity are not kept.
    pub(crate) fn insert(&self, key: CacheKey, value: Arc<Block>, charge: usize) {
        let charge = charge + ENTRY_OVERHEAD;
        if charge > self.shard_capacity {
            return;
        }
        let mut shard = self.shards[shard_of(&key)].write();
        shard.remove(&key);
        while shard.usage + charge > self.shard_capacity {
            if !shard.evict_one() {
                return;
            }
        }
        let slot = Slot { key, value: Some(value), charge, referenced: AtomicBool::new(false) };
        let i = match shard.free.pop() {
            Some(i) => {
                shard.slots[i] = slot;
                i
            }
            None => {
                shard.slots.push(slot);
                shard.slots.len() - 1
            }
        };
        shard.map.insert(key, i);
        shard.usage += charge;
    }

    /// Drop an entry if present.
    pub(crate) fn erase(&self, key: CacheKey) {
        self.shards[shard_of(&key)].write().remove(&key);
    }

    /// Bytes currently charged.
    pub(crate) fn usage(&self) -> usize {
        self.shards.iter().map(|s| s.read().usage).sum()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of entries (for tests and stats).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().map.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(_n: usize) -> Arc<Block> {
        Arc::new(Block::empty())
    }

    #[test]
    fn bounded_and_lru_ish() {
        let c = BlockCache::new(16 * 10_000);
        for i in 0..10_000u64 {
            c.insert((1, i * 4096), blk(0), 1000);
            assert!(c.usage() <= c.capacity());
        }
        assert!(c.usage() <= c.capacity());
        assert!(c.len() > 0 && c.len() < 10_000);
        // a hot key survives churn
        c.insert((7, 0), blk(0), 1000);
        for i in 0..5000u64 {
            assert!(c.get((7, 0)).is_some(), "hot key evicted at {i}");
            c.insert((2, i), blk(0), 1000);
        }
        c.erase((7, 0));
        assert!(c.get((7, 0)).is_none());
        let z = BlockCache::new(0);
        z.insert((1, 1), blk(0), 10);
        assert!(z.get((1, 1)).is_none());
        assert_eq!(z.usage(), 0);
        // replacing a key keeps usage consistent
        let c = BlockCache::new(1 << 20);
        c.insert((1, 1), blk(0), 100);
        c.insert((1, 1), blk(0), 200);
        assert_eq!(c.usage(), 200 + ENTRY_OVERHEAD);
    }

    #[test]
    fn concurrent_readers() {
        let c = Arc::new(BlockCache::new(1 << 20));
        for i in 0..100 {
            c.insert((1, i), blk(0), 100);
        }
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let _ = c.get((1, i % 100));
                        if i % 100 == t {
                            c.insert((2, i), blk(0), 100);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(c.usage() <= c.capacity());
    }
}
