//! The shared block cache: a sharded CLOCK (second-chance) cache of parsed blocks, bounded in
//! bytes. Keys are `(cache_id, block_offset)`; every table gets its own `cache_id`. It holds data
//! blocks, and index and filter blocks when `cache_index_and_filter_blocks` is set.
//!
//! Lookups take a shard's read lock and set an atomic "referenced" bit, so many reader threads
//! do not serialize on hits. Inserts take the shard's write lock and evict unreferenced entries
//! in clock order until the new entry fits. Values are `Arc`s: evicting an entry only drops the
//! cache's reference, so a reader holding a block keeps it valid.
//!
//! Besides entries the cache carries a *reservation*: bytes charged by others (the index and
//! filter blocks tables pin themselves, as RocksDB's cache reservation for table readers). The
//! reservation counts in [`usage`](BlockCache::usage) and shrinks the room left for entries, so
//! the total stays within the capacity as long as the reservation alone fits. Entries inserted
//! *pinned* (L0 index and filter blocks with `pin_l0_filter_and_index_blocks_in_cache`) are never
//! evicted until unpinned.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::table::block::Block;
use crate::table::filter::FilterReader;

/// Cache key: (cache id of the table, block offset in the file).
pub(crate) type CacheKey = (u64, u64);

const NUM_SHARD_BITS: u32 = 4;
const NUM_SHARDS: usize = 1 << NUM_SHARD_BITS;
/// Bookkeeping bytes charged per entry on top of the caller's charge.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// What the cache holds: a parsed block (data or index) or a parsed full filter.
#[derive(Clone)]
pub(crate) enum CacheValue {
    Block(Arc<Block>),
    Filter(Arc<FilterReader>),
}

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
    value: Option<CacheValue>,
    charge: usize,
    pinned: bool,
    referenced: AtomicBool,
}

impl Slot {
    /// Whether someone besides the cache holds the value.
    fn in_use(&self) -> bool {
        match &self.value {
            Some(CacheValue::Block(b)) => Arc::strong_count(b) > 1,
            Some(CacheValue::Filter(f)) => Arc::strong_count(f) > 1,
            None => false,
        }
    }
}

#[derive(Default)]
struct Shard {
    map: HashMap<CacheKey, usize, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    hand: usize,
    usage: usize,
    pinned_usage: usize,
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
            if s.value.is_none() || s.pinned {
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
            if s.pinned {
                s.pinned = false;
                self.pinned_usage -= s.charge;
            }
            self.free.push(i);
        }
    }

    /// Evict until usage is at most `cap` (pinned entries stay).
    fn trim(&mut self, cap: usize) {
        while self.usage > cap {
            if !self.evict_one() {
                return;
            }
        }
    }
}

/// A sharded, byte-bounded cache of blocks.
pub(crate) struct BlockCache {
    shards: Vec<RwLock<Shard>>,
    capacity: usize,
    /// Bytes charged by reservations (counted in usage and pinned usage).
    reserved: AtomicUsize,
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
            reserved: AtomicUsize::new(0),
        }
    }

    /// Room of one shard for entries: the capacity not taken by reservations, split evenly.
    #[inline]
    fn shard_capacity(&self) -> usize {
        self.capacity.saturating_sub(self.reserved.load(Ordering::Relaxed)) / NUM_SHARDS
    }

    #[inline]
    fn lookup(&self, key: CacheKey) -> Option<CacheValue> {
        let shard = self.shards[shard_of(&key)].read();
        let &i = shard.map.get(&key)?;
        let s = &shard.slots[i];
        if !s.referenced.load(Ordering::Relaxed) {
            s.referenced.store(true, Ordering::Relaxed);
        }
        s.value.clone()
    }

    /// A cached block (data or index).
    #[inline]
    pub(crate) fn get(&self, key: CacheKey) -> Option<Arc<Block>> {
        match self.lookup(key)? {
            CacheValue::Block(b) => Some(b),
            CacheValue::Filter(_) => None,
        }
    }

    /// A cached filter.
    #[inline]
    pub(crate) fn get_filter(&self, key: CacheKey) -> Option<Arc<FilterReader>> {
        match self.lookup(key)? {
            CacheValue::Filter(f) => Some(f),
            CacheValue::Block(_) => None,
        }
    }

    /// Insert (or replace) a block. `charge` is the caller's size in bytes; a fixed overhead
    /// is added. Entries that do not fit in a shard are not kept.
    /// Returns whether the entry was kept.
    pub(crate) fn insert(&self, key: CacheKey, value: Arc<Block>, charge: usize) -> bool {
        self.insert_value(key, CacheValue::Block(value), charge, false)
    }

    /// Insert (or replace) any value; a `pinned` entry is never evicted until
    /// [`unpin`](Self::unpin)ned or erased. Returns whether the entry was kept.
    pub(crate) fn insert_value(&self, key: CacheKey, value: CacheValue, charge: usize, pinned: bool) -> bool {
        let charge = charge + ENTRY_OVERHEAD;
        let cap = self.shard_capacity();
        if charge > cap {
            return false;
        }
        let mut shard = self.shards[shard_of(&key)].write();
        shard.remove(&key);
        while shard.usage + charge > cap {
            if !shard.evict_one() {
                return false;
            }
        }
        let slot = Slot {
            key,
            value: Some(value),
            charge,
            pinned,
            referenced: AtomicBool::new(false),
        };
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
        if pinned {
            shard.pinned_usage += charge;
        }
        true
    }

    /// Make a pinned entry evictable again.
    pub(crate) fn unpin(&self, key: CacheKey) {
        let mut shard = self.shards[shard_of(&key)].write();
        if let Some(&i) = shard.map.get(&key) {
            if shard.slots[i].pinned {
                shard.slots[i].pinned = false;
                let c = shard.slots[i].charge;
                shard.pinned_usage -= c;
            }
        }
    }

    /// Drop an entry if present.
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn erase(&self, key: CacheKey) {
        self.shards[shard_of(&key)].write().remove(&key);
    }

    /// Charge `bytes` to the cache without an entry (evicting entries to make room).
    pub(crate) fn reserve(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.reserved.fetch_add(bytes, Ordering::Relaxed);
        let cap = self.shard_capacity();
        for s in &self.shards {
            if s.read().usage > cap {
                s.write().trim(cap);
            }
        }
    }

    /// Give back a reservation made with [`reserve`](Self::reserve).
    pub(crate) fn release(&self, bytes: usize) {
        if bytes > 0 {
            self.reserved.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Bytes currently charged: entries and reservations.
    pub(crate) fn usage(&self) -> usize {
        self.reserved.load(Ordering::Relaxed) + self.shards.iter().map(|s| s.read().usage).sum::<usize>()
    }

    /// Bytes charged that cannot be freed now: reservations, pinned entries and entries a reader
    /// holds (RocksDB's pinned usage).
    pub(crate) fn pinned_usage(&self) -> usize {
        let mut n = self.reserved.load(Ordering::Relaxed);
        for s in &self.shards {
            let s = s.read();
            n += s.pinned_usage;
            n += s
                .map
                .values()
                .map(|&i| &s.slots[i])
                .filter(|e| !e.pinned && e.in_use())
                .map(|e| e.charge)
                .sum::<usize>();
        }
        n
    }

    /// Bytes reserved (not entries).
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Number of entries (for tests and stats).
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().map.len()).sum()
    }

    /// Whether `key` is cached (does not mark it referenced).
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn contains(&self, key: CacheKey) -> bool {
        self.shards[shard_of(&key)].read().map.contains_key(&key)
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

    #[test]
    fn reservation_counts_and_shrinks_room() {
        let c = BlockCache::new(16 * 10_000);
        for i in 0..1000u64 {
            c.insert((1, i), blk(0), 1000);
        }
        let before = c.usage();
        assert!(before <= c.capacity());
        c.reserve(80_000);
        assert_eq!(c.reserved(), 80_000);
        assert!(c.usage() <= c.capacity(), "{} > {}", c.usage(), c.capacity());
        assert!(c.pinned_usage() >= 80_000);
        for i in 0..1000u64 {
            c.insert((2, i), blk(0), 1000);
            assert!(c.usage() <= c.capacity());
        }
        c.release(80_000);
        assert_eq!(c.reserved(), 0);
        assert!(c.usage() <= c.capacity() - 80_000 + 16 * 1064);
    }

    #[test]
    fn pinned_entries_survive_and_held_entries_stay_valid() {
        let c = BlockCache::new(16 * 4096);
        assert!(c.insert_value((9, 0), CacheValue::Block(blk(0)), 1000, true));
        let held = c.get((9, 0)).unwrap();
        assert!(c.pinned_usage() >= 1000);
        c.insert((3, 3), blk(0), 10);
        let held2 = c.get((3, 3)).unwrap();
        for i in 0..10_000u64 {
            c.insert((1, i), blk(0), 1000);
            assert!(c.usage() <= c.capacity());
        }
        assert!(c.contains((9, 0)), "pinned entry evicted");
        // an evicted entry a reader still holds stays valid
        assert!(!c.contains((3, 3)));
        assert_eq!(held2.size(), Block::empty().size());
        c.unpin((9, 0));
        for i in 0..10_000u64 {
            c.insert((4, i), blk(0), 1000);
        }
        assert!(!c.contains((9, 0)), "unpinned entry never evicted");
        assert_eq!(held.size(), Block::empty().size());
        let f = Arc::new(FilterReader::new(Vec::new()));
        assert!(c.insert_value((5, 5), CacheValue::Filter(f), 100, false));
        assert!(c.get_filter((5, 5)).is_some());
        assert!(c.get((5, 5)).is_none());
    }
}
