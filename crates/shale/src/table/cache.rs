//! The shared block cache: a sharded CLOCK cache of parsed blocks (at most 64 shards of at least
//! 2 MiB each), bounded in bytes. Keys are `(cache_id, block_offset)`; every table gets its own
//! `cache_id`. It holds data blocks, and index and filter blocks when
//! `cache_index_and_filter_blocks` is set.
//!
//! Lookups take a shard's read lock and raise the entry's atomic countdown, so many reader
//! threads do not serialize on hits. A shard's hash map holds each entry's value next to its
//! key, and the clock state (countdowns, flags) is kept in dense per-slot arrays apart from the
//! keys and charges: a hit touches the map bucket and one byte, a clock sweep a few cache lines.
//! Inserts take the shard's write lock and evict unreferenced entries in clock order until the
//! new entry fits; a data block read on a miss is only inserted if its shard's lock is free at
//! that moment (the reader does not queue for it). Values are `Arc`s: evicting an entry only
//! drops the cache's reference, so a reader holding a block keeps it valid; evicted values are
//! dropped after the lock is released.
//!
//! Besides entries the cache carries a *reservation*: bytes charged by others (the index and
//! filter blocks tables pin themselves, as RocksDB's cache reservation for table readers). The
//! reservation counts in [`usage`](BlockCache::usage) and shrinks the room left for entries, so
//! the total stays within the capacity as long as the reservation alone fits. Entries inserted
//! *pinned* (L0 index and filter blocks with `pin_l0_filter_and_index_blocks_in_cache`) are never
//! evicted until unpinned.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::table::block::Block;
use crate::table::block_based::filter::FilterReader;

/// Cache key: (cache id of the table, block offset in the file).
pub(crate) type CacheKey = (u64, u64);

/// At most 64 shards (RocksDB's LRU cache default), each of at least 2 MiB: a small cache has
/// few shards, so the index and filter blocks of big tables (hundreds of KiB each) fit in one
/// shard's share. Readers that miss insert under a shard's write lock, so with more reader
/// threads than cores a cache of few shards makes them queue behind a preempted inserter: a
/// 32 MiB cache had 4 shards, and four readers spent most context switches yielding there.
const MAX_SHARD_BITS: u32 = 6;
/// The most shard bits a caller may ask for (RocksDB's LRU cache refuses 20 and more).
pub(crate) const MAX_EXPLICIT_SHARD_BITS: u32 = 19;
const MIN_SHARD_BYTES: usize = 2 << 20;

fn shard_bits_for(capacity: usize) -> u32 {
    let mut bits = 0;
    while bits < MAX_SHARD_BITS && capacity >> (bits + 1) >= MIN_SHARD_BYTES {
        bits += 1;
    }
    bits
}
/// Bookkeeping bytes charged per entry on top of the caller's charge.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// The priority of a cache entry (RocksDB's `Cache::Priority`, without BOTTOM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Priority {
    Low,
    High,
}

impl Priority {
    /// Countdown an entry starts with when inserted.
    fn initial(self) -> u8 {
        match self {
            Priority::Low => 0,
            Priority::High => 2,
        }
    }
    /// Countdown a hit raises an entry to.
    fn on_hit(self) -> u8 {
        match self {
            Priority::Low => 1,
            Priority::High => 3,
        }
    }
}

/// RocksDB's default `LRUCacheOptions::high_pri_pool_ratio`.
pub(crate) const DEFAULT_HIGH_PRI_POOL_RATIO: f64 = 0.5;

/// What the cache holds: a parsed block (data or index) or a parsed full filter.
#[derive(Clone)]
pub(crate) enum CacheValue {
    Block(Arc<Block>),
    Filter(Arc<FilterReader>),
    /// The entry-stats collector's place in the cache (see [`BlockCache::register_collector`]):
    /// no value, charged only the entry overhead.
    Collector,
}

/// What an entry is for, as RocksDB's `CacheEntryRole` names it (the roles Shale's cache
/// holds), in RocksDB's order: the order of the `rocksdb.block-cache-entry-stats` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    DataBlock,
    FilterBlock,
    FilterMetaBlock,
    IndexBlock,
    Misc,
}

impl Role {
    const ALL: [Role; 5] = [
        Role::DataBlock,
        Role::FilterBlock,
        Role::FilterMetaBlock,
        Role::IndexBlock,
        Role::Misc,
    ];
    /// RocksDB's name of the role in the stats text (`kCacheEntryRoleToCamelString`).
    fn camel(self) -> &'static str {
        match self {
            Role::DataBlock => "DataBlock",
            Role::FilterBlock => "FilterBlock",
            Role::FilterMetaBlock => "FilterMetaBlock",
            Role::IndexBlock => "IndexBlock",
            Role::Misc => "Misc",
        }
    }
}

/// The key of the entry-stats collector's entry: no table's key (table keys are a cache prefix
/// below 2^64 - 2^40 per open and a file offset).
const COLLECTOR_KEY: CacheKey = (u64::MAX, u64::MAX);

/// The entry-stats collector of a cache (RocksDB's `CacheEntryStatsCollector`, one per cache,
/// shared by the families using it): how many families hold it, and its collections so far.
#[derive(Default)]
struct Collector {
    holders: usize,
    collections: u64,
    /// Duration of the last collection and when it ended.
    last: Option<(std::time::Duration, std::time::Instant)>,
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
fn shard_of(key: &CacheKey, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    let h = key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (h.wrapping_mul(0x2545_F491_4F6C_DD1D) >> (64 - bits)) as usize
}

/// What an entry's lookup needs, kept in the hash map itself: a hit reads the bucket it found
/// and nothing else of the shard but one byte of `countdown`.
struct Entry {
    slot: usize,
    value: CacheValue,
}

/// The clock side of an entry: read when the hand passes or the entry goes.
#[derive(Clone, Copy)]
struct Slot {
    key: CacheKey,
    charge: usize,
    role: Role,
}

/// Flags of a slot, one byte each in [`Shard::flags`] (dense, so a sweep reads a few cache
/// lines rather than one per entry).
const LIVE: u8 = 1;
const PINNED: u8 = 2;
const HIGH: u8 = 4;

fn in_use(v: &CacheValue) -> bool {
    match v {
        CacheValue::Block(b) => Arc::strong_count(b) > 1,
        CacheValue::Filter(f) => Arc::strong_count(f) > 1,
        CacheValue::Collector => false,
    }
}

#[derive(Default)]
struct Shard {
    map: HashMap<CacheKey, Entry, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    /// Per slot: `LIVE`, `PINNED`, `HIGH`.
    flags: Vec<u8>,
    /// Per slot: clock sweeps left before eviction (see the module docs); raised by lookups
    /// under the read lock.
    countdown: Vec<AtomicU8>,
    free: Vec<usize>,
    hand: usize,
    usage: usize,
    pinned_usage: usize,
    /// Bytes of high-priority entries.
    high_usage: usize,
}

/// Values taken out of a shard under its lock, dropped by the caller after releasing it (the
/// last reference to a block frees its buffer, which other threads' lookups need not wait
/// for). Holds a few without allocating; beyond that a value is dropped where it is evicted.
#[derive(Default)]
struct Evicted {
    values: [Option<CacheValue>; 4],
    len: usize,
}

impl Evicted {
    fn push(&mut self, v: CacheValue) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = Some(v);
            self.len += 1;
        }
    }
}

impl Shard {
    /// Evict one entry; high-priority entries are left alone while their usage is within
    /// `high_cap`, unless nothing else can go.
    /// The evicted value goes to `dead`, for the caller to drop after releasing the lock.
    fn evict_one(&mut self, high_cap: usize, dead: &mut Evicted) -> bool {
        if self.high_usage <= high_cap && self.high_usage < self.usage && self.sweep(true, dead) {
            return true;
        }
        self.sweep(false, dead)
    }

    /// Move the clock hand until an entry is evicted (skipping high-priority entries if
    /// `low_only`); false when none can be.
    fn sweep(&mut self, low_only: bool, dead: &mut Evicted) -> bool {
        let n = self.slots.len();
        if n == 0 || self.map.is_empty() {
            return false;
        }
        let skip = if low_only { PINNED | HIGH } else { PINNED };
        // at most four sweeps: countdowns go from 3 to 0
        for _ in 0..4 * n + 1 {
            let i = self.hand;
            self.hand = if i + 1 == n { 0 } else { i + 1 };
            let f = self.flags[i];
            if f & LIVE == 0 || f & skip != 0 {
                continue;
            }
            let c = self.countdown[i].load(Ordering::Relaxed);
            if c > 0 {
                self.countdown[i].store(c - 1, Ordering::Relaxed);
                continue;
            }
            let key = self.slots[i].key;
            if let Some(v) = self.remove(&key) {
                dead.push(v);
            }
            return true;
        }
        false
    }

    /// Take an entry out; its value is returned so that the caller can drop it (and the block
    /// it may be the last owner of) outside the shard's lock.
    fn remove(&mut self, key: &CacheKey) -> Option<CacheValue> {
        let e = self.map.remove(key)?;
        let i = e.slot;
        let charge = self.slots[i].charge;
        self.usage -= charge;
        if self.flags[i] & HIGH != 0 {
            self.high_usage -= charge;
        }
        if self.flags[i] & PINNED != 0 {
            self.pinned_usage -= charge;
        }
        self.flags[i] = 0;
        self.free.push(i);
        Some(e.value)
    }

    /// Evict until usage is at most `cap` (pinned entries stay).
    fn trim(&mut self, cap: usize, high_cap: usize, dead: &mut Evicted) {
        while self.usage > cap {
            if !self.evict_one(high_cap, dead) {
                return;
            }
        }
    }
}

/// A shard's lock: the standard library's futex lock, which spins briefly and then sleeps. (A
/// spin-then-`sched_yield` lock hands a waiting reader's turn to any other runnable thread
/// while a preempted holder keeps the shard, so with more threads than cores the readers lose
/// their share of the CPU.) Nothing panics while holding it; a poisoned lock is used as is.
struct ShardLock(RwLock<Shard>);

impl ShardLock {
    #[inline]
    fn read(&self) -> RwLockReadGuard<'_, Shard> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }
    #[inline]
    fn write(&self) -> RwLockWriteGuard<'_, Shard> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
    /// The write lock if nobody holds the lock now.
    #[inline]
    fn try_write(&self) -> Option<RwLockWriteGuard<'_, Shard>> {
        match self.0.try_write() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// A sharded, byte-bounded cache of blocks.
pub(crate) struct BlockCache {
    shards: Vec<ShardLock>,
    capacity: usize,
    /// Bytes charged by reservations (counted in usage and pinned usage).
    reserved: AtomicUsize,
    /// Share of the capacity kept for high-priority entries (0..=1).
    high_pri_pool_ratio: f64,
    /// log2 of the number of shards.
    shard_bits: u32,
    collector: parking_lot::Mutex<Collector>,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockCache(capacity={}, usage={})", self.capacity, self.usage())
    }
}

impl BlockCache {
    /// A cache holding at most about `capacity_bytes` of charged entries (0 = caches nothing),
    /// with RocksDB's default high-priority pool (half the capacity).
    pub(crate) fn new(capacity_bytes: usize) -> BlockCache {
        BlockCache::with_high_pri_pool_ratio(capacity_bytes, DEFAULT_HIGH_PRI_POOL_RATIO)
    }

    /// A cache whose high-priority pool is `ratio` of the capacity (clamped to 0..=1; callers
    /// validate it).
    pub(crate) fn with_high_pri_pool_ratio(capacity_bytes: usize, ratio: f64) -> BlockCache {
        BlockCache::with_shard_bits(capacity_bytes, ratio, shard_bits_for(capacity_bytes))
    }

    /// [`with_high_pri_pool_ratio`](Self::with_high_pri_pool_ratio) with `2^shard_bits`
    /// shards (at most [`MAX_EXPLICIT_SHARD_BITS`]).
    pub(crate) fn with_shard_bits(capacity_bytes: usize, ratio: f64, shard_bits: u32) -> BlockCache {
        let shard_bits = shard_bits.min(MAX_EXPLICIT_SHARD_BITS);
        BlockCache {
            shards: (0..1usize << shard_bits)
                .map(|_| ShardLock(RwLock::new(Shard::default())))
                .collect(),
            shard_bits,
            capacity: capacity_bytes,
            reserved: AtomicUsize::new(0),
            high_pri_pool_ratio: if ratio.is_finite() { ratio.clamp(0.0, 1.0) } else { 0.0 },
            collector: parking_lot::Mutex::new(Collector::default()),
        }
    }

    /// The share of the capacity kept for high-priority entries.
    pub(crate) fn high_pri_pool_ratio(&self) -> f64 {
        self.high_pri_pool_ratio
    }

    /// Room of one shard's high-priority pool.
    #[inline]
    fn shard_high_capacity(&self, shard_cap: usize) -> usize {
        (shard_cap as f64 * self.high_pri_pool_ratio) as usize
    }

    /// Room of one shard for entries: the capacity not taken by reservations, split evenly.
    #[inline]
    fn shard_capacity(&self) -> usize {
        self.capacity.saturating_sub(self.reserved.load(Ordering::Relaxed)) / self.shards.len()
    }

    #[inline]
    fn lookup(&self, key: CacheKey) -> Option<CacheValue> {
        let shard = self.shards[shard_of(&key, self.shard_bits)].read();
        let e = shard.map.get(&key)?;
        let hit = if shard.flags[e.slot] & HIGH != 0 {
            Priority::High.on_hit()
        } else {
            Priority::Low.on_hit()
        };
        let c = &shard.countdown[e.slot];
        if c.load(Ordering::Relaxed) < hit {
            c.store(hit, Ordering::Relaxed);
        }
        Some(e.value.clone())
    }

    /// A cached block (data or index).
    #[inline]
    pub(crate) fn get(&self, key: CacheKey) -> Option<Arc<Block>> {
        match self.lookup(key)? {
            CacheValue::Block(b) => Some(b),
            CacheValue::Filter(_) | CacheValue::Collector => None,
        }
    }

    /// A cached filter.
    #[inline]
    pub(crate) fn get_filter(&self, key: CacheKey) -> Option<Arc<FilterReader>> {
        match self.lookup(key)? {
            CacheValue::Filter(f) => Some(f),
            CacheValue::Block(_) | CacheValue::Collector => None,
        }
    }

    /// Insert (or replace) a data block read on a miss. `charge` is the caller's size in bytes;
    /// a fixed overhead is added. Entries that do not fit in a shard are not kept, and neither
    /// is a block whose shard is locked at that moment: the reader goes on with its block rather
    /// than queue for the lock (a queued inserter would also hold back the shard's lookups).
    /// Returns whether the entry was kept.
    pub(crate) fn insert(&self, key: CacheKey, value: Arc<Block>, charge: usize) -> bool {
        let Some(mut shard) = self.shards[shard_of(&key, self.shard_bits)].try_write() else {
            return false;
        };
        let mut dead = Evicted::default();
        let kept = self.insert_locked(
            &mut shard,
            &mut dead,
            key,
            CacheValue::Block(value),
            charge,
            false,
            Priority::Low,
            Role::DataBlock,
        );
        drop(shard); // before `dead`: evicted blocks are freed outside the lock
        drop(dead);
        kept
    }

    /// Insert (or replace) any value at `priority`, for `role`; a `pinned` entry is never
    /// evicted until [`unpin`](Self::unpin)ned or erased. Returns whether the entry was kept.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_value(
        &self,
        key: CacheKey,
        value: CacheValue,
        charge: usize,
        pinned: bool,
        priority: Priority,
        role: Role,
    ) -> bool {
        let mut dead = Evicted::default();
        let mut shard = self.shards[shard_of(&key, self.shard_bits)].write();
        let kept = self.insert_locked(&mut shard, &mut dead, key, value, charge, pinned, priority, role);
        drop(shard); // before `dead`: evicted blocks are freed outside the lock
        drop(dead);
        kept
    }

    /// The body of an insert, under the shard's write lock.
    #[allow(clippy::too_many_arguments)]
    fn insert_locked(
        &self,
        shard: &mut Shard,
        dead: &mut Evicted,
        key: CacheKey,
        value: CacheValue,
        charge: usize,
        pinned: bool,
        priority: Priority,
        role: Role,
    ) -> bool {
        let charge = charge + ENTRY_OVERHEAD;
        let cap = self.shard_capacity();
        if charge > cap {
            return false;
        }
        let high_cap = self.shard_high_capacity(cap);
        if let Some(v) = shard.remove(&key) {
            dead.push(v);
        }
        while shard.usage + charge > cap {
            if !shard.evict_one(high_cap, dead) {
                return false;
            }
        }
        let flags = LIVE | if pinned { PINNED } else { 0 } | if priority == Priority::High { HIGH } else { 0 };
        let slot = Slot { key, charge, role };
        let i = match shard.free.pop() {
            Some(i) => {
                shard.slots[i] = slot;
                shard.flags[i] = flags;
                shard.countdown[i].store(priority.initial(), Ordering::Relaxed);
                i
            }
            None => {
                shard.slots.push(slot);
                shard.flags.push(flags);
                shard.countdown.push(AtomicU8::new(priority.initial()));
                shard.slots.len() - 1
            }
        };
        shard.map.insert(key, Entry { slot: i, value });
        shard.usage += charge;
        if priority == Priority::High {
            shard.high_usage += charge;
        }
        if pinned {
            shard.pinned_usage += charge;
        }
        true
    }

    /// Make a pinned entry evictable again.
    pub(crate) fn unpin(&self, key: CacheKey) {
        let mut shard = self.shards[shard_of(&key, self.shard_bits)].write();
        if let Some(i) = shard.map.get(&key).map(|e| e.slot) {
            if shard.flags[i] & PINNED != 0 {
                shard.flags[i] &= !PINNED;
                let c = shard.slots[i].charge;
                shard.pinned_usage -= c;
            }
        }
    }

    /// Drop an entry if present.
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn erase(&self, key: CacheKey) {
        let dead = self.shards[shard_of(&key, self.shard_bits)].write().remove(&key);
        drop(dead);
    }

    /// Charge `bytes` to the cache without an entry (evicting entries to make room).
    pub(crate) fn reserve(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        self.reserved.fetch_add(bytes, Ordering::Relaxed);
        let cap = self.shard_capacity();
        let high_cap = self.shard_high_capacity(cap);
        for s in &self.shards {
            if s.read().usage > cap {
                let mut dead = Evicted::default();
                s.write().trim(cap, high_cap, &mut dead);
                drop(dead);
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
                .filter(|e| s.flags[e.slot] & PINNED == 0 && in_use(&e.value))
                .map(|e| s.slots[e.slot].charge)
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

    /// Register a holder of the cache's entry-stats collector (a column family using the
    /// cache, as RocksDB's `InternalStats` takes the collector at a family's creation): the
    /// first holder puts its entry in the cache, pinned while any holder is registered, charged
    /// nothing but the entry overhead. Each call is paired with one
    /// [`release_collector`](Self::release_collector).
    pub(crate) fn register_collector(&self) {
        let mut c = self.collector.lock();
        c.holders += 1;
        if c.holders == 1 {
            // Fails only if a shard cannot fit the overhead alone (a cache of almost no
            // capacity): then there is no entry, as RocksDB's insert may fail.
            self.insert_value(
                COLLECTOR_KEY,
                CacheValue::Collector,
                0,
                true,
                Priority::High,
                Role::Misc,
            );
        }
    }

    /// A holder of the collector goes: after the last one its entry is evictable (it stays
    /// until evicted, as RocksDB's entry does once unreferenced).
    pub(crate) fn release_collector(&self) {
        let mut c = self.collector.lock();
        c.holders = c.holders.saturating_sub(1);
        if c.holders == 0 {
            self.unpin(COLLECTOR_KEY);
        }
    }

    /// RocksDB's `rocksdb.block-cache-entry-stats` text: the cache's capacity, usage and
    /// entries, then per role the entries, their charge and its share of the capacity (roles
    /// without entries left out). Every call scans the cache (each shard under its read lock)
    /// and counts as a collection.
    pub(crate) fn entry_stats_text(&self) -> String {
        let start = std::time::Instant::now();
        let mut count = [0u64; Role::ALL.len()];
        let mut bytes = [0u64; Role::ALL.len()];
        let mut entries = 0usize;
        let mut slots = 0usize;
        for s in &self.shards {
            let s = s.read();
            entries += s.map.len();
            slots += s.slots.len();
            for e in s.map.values() {
                let slot = &s.slots[e.slot];
                let r = slot.role as usize; // `Role::ALL` is in declaration order
                count[r] += 1;
                bytes[r] += slot.charge.saturating_sub(ENTRY_OVERHEAD) as u64;
            }
        }
        let took = start.elapsed();
        let mut c = self.collector.lock();
        let since = c.last.map(|(_, end)| end.elapsed().as_secs()).unwrap_or(0);
        c.collections += 1;
        c.last = Some((took, std::time::Instant::now()));
        let mut out = format!(
            "Block cache ShaleClockCache@{:p} capacity: {} usage: {} table_size: {slots} occupancy: {entries} \
             collections: {} last_copies: 0 last_secs: {} secs_since: {since}\n",
            self as *const BlockCache,
            human_bytes(self.capacity as u64),
            human_bytes(self.usage() as u64),
            c.collections,
            took.as_secs_f64(),
        );
        drop(c);
        out.push_str("Block cache entry stats(count,size,portion):");
        for (i, r) in Role::ALL.iter().enumerate() {
            if count[i] > 0 {
                let share = if self.capacity == 0 {
                    0.0
                } else {
                    100.0 * bytes[i] as f64 / self.capacity as f64
                };
                out.push_str(&format!(
                    " {}({},{},{}%)",
                    r.camel(),
                    count[i],
                    human_bytes(bytes[i]),
                    share
                ));
            }
        }
        out.push('\n');
        out
    }

    /// Number of entries (for tests and stats).
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().map.len()).sum()
    }

    /// Whether `key` is cached (does not mark it referenced).
    #[cfg_attr(not(test), allow(dead_code))] // tests and tools
    pub(crate) fn contains(&self, key: CacheKey) -> bool {
        self.shards[shard_of(&key, self.shard_bits)]
            .read()
            .map
            .contains_key(&key)
    }
}

/// A registration of a cache's entry-stats collector
/// ([`BlockCache::register_collector`]), released when dropped.
pub(crate) struct CollectorHold(pub(crate) Arc<BlockCache>);

impl CollectorHold {
    pub(crate) fn new(cache: &Arc<BlockCache>) -> CollectorHold {
        cache.register_collector();
        CollectorHold(cache.clone())
    }
}

impl Drop for CollectorHold {
    fn drop(&mut self) {
        self.0.release_collector();
    }
}

/// Bytes as RocksDB's `BytesToHumanString` writes them (two decimals, KB to TB).
fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)];
    for (name, size) in UNITS {
        if b >= size {
            return format!("{:.2} {name}", b as f64 / size as f64);
        }
    }
    format!("{:.2} KB", b as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(_n: usize) -> Arc<Block> {
        Arc::new(Block::empty())
    }

    #[test]
    fn lru_cache_options_set_the_capacity_and_the_shards() {
        let mut o = LruCacheOptions::default();
        o.set_capacity(16 << 20);
        o.set_num_shard_bits(2);
        let c = Cache::new_lru_cache_opts(&o);
        assert_eq!((c.get_capacity(), c.get_num_shards()), (16 << 20, 4));
        o.set_num_shard_bits(-1);
        assert_eq!(
            Cache::new_lru_cache_opts(&o).get_num_shards(),
            1 << shard_bits_for(16 << 20)
        );
        o.set_num_shard_bits(30);
        assert_eq!(
            Cache::new_lru_cache_opts(&o).get_num_shards(),
            1 << MAX_EXPLICIT_SHARD_BITS
        );
        let h = Cache::new_hyper_clock_cache(1 << 20, 4096);
        assert_eq!(h.get_capacity(), 1 << 20);
    }

    #[test]
    fn caches_of_rocksdb_sizes_get_many_shards() {
        // Few shards made reader threads queue on a shard's write lock behind a preempted
        // inserter (the readwhilewriting benchmark's 32 MiB cache had 4).
        assert_eq!(shard_bits_for(0), 0);
        assert_eq!(shard_bits_for(4 << 20), 1);
        assert_eq!(shard_bits_for(8 << 20), 2);
        assert_eq!(shard_bits_for(32 << 20), 4);
        assert_eq!(shard_bits_for(1 << 30), 6);
        assert_eq!(BlockCache::new(32 << 20).shards.len(), 16);
    }

    #[test]
    fn an_insert_that_evicts_many_entries_drops_them_all() {
        // One shard (1 MiB): twenty small entries, then one that needs the room of all of them.
        let c = BlockCache::new(1 << 20);
        let mut held = Vec::new();
        for i in 0..20u64 {
            let b = blk(0);
            held.push(Arc::downgrade(&b));
            assert!(c.insert((1, i), b, 40_000));
        }
        assert_eq!(c.len(), 20);
        assert!(c.insert((2, 0), blk(0), (1 << 20) - 40_000));
        assert!(c.usage() <= c.capacity());
        let alive = held.iter().filter(|w| w.upgrade().is_some()).count();
        assert_eq!(
            alive,
            c.len() - 1,
            "every evicted block is freed, more than four in one insert"
        );
        assert!(c.len() <= 2);
        assert!(c.contains((2, 0)));
    }

    #[test]
    fn a_data_block_is_not_kept_while_its_shard_is_locked_and_the_insert_does_not_wait() {
        let c = Arc::new(BlockCache::new(1 << 20));
        let key = (5, 0);
        let guard = c.shards[shard_of(&key, c.shard_bits)].write();
        let (tx, rx) = std::sync::mpsc::channel();
        let c2 = Arc::clone(&c);
        let t = std::thread::spawn(move || {
            let _ = tx.send(c2.insert(key, blk(0), 100));
        });
        // A blocking insert would wait for `guard`, which is only released after this answer.
        let kept = rx.recv_timeout(std::time::Duration::from_secs(30));
        drop(guard);
        t.join().unwrap();
        assert_eq!(kept, Ok(false), "the insert returns at once, without the block");
        assert!(!c.contains(key));
        assert!(c.insert(key, blk(0), 100), "kept once the shard is free");
        assert!(c.get(key).is_some());
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

    /// Index-like entries at high priority survive a churn of once-read data blocks: always
    /// while the high-priority pool holds them, and without a pool while they are hit more often
    /// than the clock hand comes round; at low priority the same churn evicts them.
    #[test]
    fn high_priority_entries_survive_data_churn() {
        let hot: Vec<CacheKey> = (0..32u64).map(|i| (7, i)).collect();
        let run = |c: &BlockCache, prio: Priority, touch_every: u64| -> usize {
            for &k in &hot {
                c.insert_value(k, CacheValue::Block(blk(0)), 1000, false, prio, Role::IndexBlock);
            }
            for i in 0..50_000u64 {
                c.insert((1, i), blk(0), 1000);
                if touch_every > 0 && i % touch_every == 0 {
                    for &k in &hot {
                        let _ = c.get(k);
                    }
                }
                assert!(c.usage() <= c.capacity());
            }
            hot.iter().filter(|&&k| c.contains(k)).count()
        };
        // pool of half the cache: never touched again, still all there
        let c = BlockCache::with_high_pri_pool_ratio(16 * 20_000, 0.5);
        assert_eq!(run(&c, Priority::High, 0), hot.len());
        // the same at low priority: all gone
        let c = BlockCache::with_high_pri_pool_ratio(16 * 20_000, 0.5);
        assert_eq!(run(&c, Priority::Low, 0), 0);
        // no pool: countdowns keep entries hit once per ~2 sweeps of a shard
        let c = BlockCache::with_high_pri_pool_ratio(16 * 20_000, 0.0);
        assert_eq!(run(&c, Priority::High, 400), hot.len());
        // but never-hit high entries age out
        let c = BlockCache::with_high_pri_pool_ratio(16 * 20_000, 0.0);
        assert_eq!(run(&c, Priority::High, 0), 0);
        // high-priority entries beyond the pool compete: usage stays bounded
        let c = BlockCache::with_high_pri_pool_ratio(16 * 10_000, 0.25);
        for i in 0..10_000u64 {
            c.insert_value(
                (3, i),
                CacheValue::Block(blk(0)),
                1000,
                false,
                Priority::High,
                Role::IndexBlock,
            );
            assert!(c.usage() <= c.capacity());
        }
        assert_eq!(c.high_pri_pool_ratio(), 0.25);
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
        assert!(c.insert_value(
            (9, 0),
            CacheValue::Block(blk(0)),
            1000,
            true,
            Priority::Low,
            Role::IndexBlock
        ));
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
        assert!(c.insert_value(
            (5, 5),
            CacheValue::Filter(f),
            100,
            false,
            Priority::Low,
            Role::FilterBlock
        ));
        assert!(c.get_filter((5, 5)).is_some());
        assert!(c.get((5, 5)).is_none());
    }
}

/// A block cache that several databases can share (the `rocksdb` crate's `Cache`). Cheap to
/// clone: clones are the same cache.
#[derive(Clone)]
pub struct Cache(pub(crate) Arc<BlockCache>);

impl Cache {
    /// An LRU cache holding about `capacity` bytes of blocks, half of it a high-priority pool
    /// for index and filter blocks (RocksDB's `NewLRUCache` default `high_pri_pool_ratio` 0.5).
    pub fn new_lru_cache(capacity: usize) -> Cache {
        Cache(Arc::new(BlockCache::new(capacity)))
    }
    /// A cache of `capacity` bytes whose high-priority pool is `high_pri_pool_ratio` of it
    /// (RocksDB's `LRUCacheOptions::high_pri_pool_ratio`). A ratio outside 0..=1 is
    /// InvalidArgument.
    pub fn new_lru_cache_with_high_pri_pool_ratio(
        capacity: usize,
        high_pri_pool_ratio: f64,
    ) -> crate::error::Result<Cache> {
        crate::table::block_based::partitioned_index::check_pool_ratio("high_pri_pool_ratio", high_pri_pool_ratio)
            .map_err(crate::error::Error::InvalidArgument)?;
        Ok(Cache(Arc::new(BlockCache::with_high_pri_pool_ratio(
            capacity,
            high_pri_pool_ratio,
        ))))
    }
    /// The share of the capacity kept for high-priority entries.
    pub fn get_high_pri_pool_ratio(&self) -> f64 {
        self.0.high_pri_pool_ratio()
    }
    /// Bytes the cache holds now (every database using it).
    pub fn get_usage(&self) -> usize {
        self.0.usage()
    }
    /// Bytes of entries that are pinned (in use, or pinned index and filter blocks).
    pub fn get_pinned_usage(&self) -> usize {
        self.0.pinned_usage()
    }
    /// The capacity in bytes.
    pub fn get_capacity(&self) -> usize {
        self.0.capacity()
    }
    /// A cache built from `opts` (RocksDB's `NewLRUCache(LRUCacheOptions)`): its capacity,
    /// shard count and high-priority pool.
    pub fn new_lru_cache_opts(opts: &LruCacheOptions) -> Cache {
        let bits = u32::try_from(opts.num_shard_bits).unwrap_or_else(|_| shard_bits_for(opts.capacity));
        Cache(Arc::new(BlockCache::with_shard_bits(
            opts.capacity,
            DEFAULT_HIGH_PRI_POOL_RATIO,
            bits,
        )))
    }
    /// RocksDB's HyperClockCache of `capacity` bytes. Shale's block cache is a sharded CLOCK
    /// cache with lock-free hits already, so this is that cache; `estimated_entry_charge` (a
    /// sizing hint of HyperClockCache's table) is not needed.
    pub fn new_hyper_clock_cache(capacity: usize, estimated_entry_charge: usize) -> Cache {
        let _ = estimated_entry_charge;
        Cache::new_lru_cache(capacity)
    }
    /// The number of shards the cache's entries are spread over.
    pub fn get_num_shards(&self) -> usize {
        self.0.shards.len()
    }
}

/// The settings of an LRU cache (the `rocksdb` crate's `LruCacheOptions`), for
/// [`Cache::new_lru_cache_opts`].
#[derive(Debug, Clone)]
pub struct LruCacheOptions {
    capacity: usize,
    num_shard_bits: i32,
}

impl Default for LruCacheOptions {
    /// Capacity 0 (RocksDB's default: set it), shard count chosen from the capacity.
    fn default() -> Self {
        LruCacheOptions {
            capacity: 0,
            num_shard_bits: -1,
        }
    }
}

impl LruCacheOptions {
    /// The capacity in bytes.
    pub fn set_capacity(&mut self, cap: usize) {
        self.capacity = cap;
    }
    /// `2^val` shards (at most 2^19); negative: chosen from the capacity (as RocksDB's -1).
    pub fn set_num_shard_bits(&mut self, val: i32) {
        self.num_shard_bits = val;
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}
