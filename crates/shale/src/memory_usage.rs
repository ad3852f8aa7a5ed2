//! The approximate memory use of a set of DBs and caches (RocksDB's
//! `MemoryUtil::GetApproximateMemoryUsageByType`, the `rocksdb` crate's
//! `perf::MemoryUsageBuilder`), public under `perf`.
//!
//! Per DB: its memtables (all of them, and those not yet flushed) and its open table readers'
//! memory outside the block cache; per cache: the bytes it holds. A cache shared by several DBs
//! or added twice is counted once; the DBs' own caches are counted only when added.

use std::sync::Arc;

use crate::api::{ThreadMode, DB};
use crate::error::Result;
use crate::table::cache::Cache;
use crate::txn::pessimistic::TransactionDB;

/// Memory use in bytes, as the `rocksdb` crate's `MemoryUsageStats` (see
/// [`get_memory_usage_stats`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUsageStats {
    /// Every live memtable of the DBs: active, immutable, and flushed ones still held by
    /// readers or kept as history.
    pub mem_table_total: u64,
    /// The DBs' memtables not yet flushed (active and immutable).
    pub mem_table_unflushed: u64,
    /// The DBs' open table readers: index, filter and other blocks they hold outside the block
    /// cache.
    pub mem_table_readers_total: u64,
    /// Bytes held by the caches (entries and reservations).
    pub cache_total: u64,
}

/// The memory use measured by [`MemoryUsageBuilder::build`], as it was then (the `rocksdb`
/// crate's `MemoryUsage`).
#[derive(Debug, Clone, Copy)]
pub struct MemoryUsage {
    stats: MemoryUsageStats,
}

impl MemoryUsage {
    /// Bytes of all the memtables ([`MemoryUsageStats::mem_table_total`]).
    pub fn approximate_mem_table_total(&self) -> u64 {
        self.stats.mem_table_total
    }
    /// Bytes of the memtables not yet flushed ([`MemoryUsageStats::mem_table_unflushed`]).
    pub fn approximate_mem_table_unflushed(&self) -> u64 {
        self.stats.mem_table_unflushed
    }
    /// Bytes of the table readers ([`MemoryUsageStats::mem_table_readers_total`]).
    pub fn approximate_mem_table_readers_total(&self) -> u64 {
        self.stats.mem_table_readers_total
    }
    /// Bytes held by the caches ([`MemoryUsageStats::cache_total`]).
    pub fn approximate_cache_total(&self) -> u64 {
        self.stats.cache_total
    }
}

/// Collects DBs and caches, then measures them with [`build`](Self::build) (the `rocksdb`
/// crate's `MemoryUsageBuilder`). It borrows what it is given, so it cannot outlive it.
#[derive(Default)]
pub struct MemoryUsageBuilder<'a> {
    dbs: Vec<&'a DB>,
    caches: Vec<&'a Cache>,
}

impl std::fmt::Debug for MemoryUsageBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MemoryUsageBuilder({} DBs, {} caches)",
            self.dbs.len(),
            self.caches.len()
        )
    }
}

impl<'a> MemoryUsageBuilder<'a> {
    /// An empty builder. Never fails (the `Result` is the crate's signature).
    pub fn new() -> Result<MemoryUsageBuilder<'a>> {
        Ok(MemoryUsageBuilder::default())
    }
    /// Count the memtables and table readers of transaction DB `db`.
    pub fn add_tx_db<T: ThreadMode>(&mut self, db: &'a TransactionDB<T>) {
        self.dbs.push(db.base_db());
    }
    /// Count the memtables and table readers of `db` (an optimistic transaction DB is passed as
    /// its DB, which it dereferences to).
    pub fn add_db(&mut self, db: &'a DB) {
        self.dbs.push(db);
    }
    /// Count the bytes `cache` holds.
    pub fn add_cache(&mut self, cache: &'a Cache) {
        self.caches.push(cache);
    }
    /// Measure now: the sums over the DBs and caches added. Never fails (the `Result` is the
    /// crate's signature).
    pub fn build(&self) -> Result<MemoryUsage> {
        let mut stats = MemoryUsageStats::default();
        for db in &self.dbs {
            let t = db.memory_totals();
            stats.mem_table_total += t.mem_table_total;
            stats.mem_table_unflushed += t.mem_table_unflushed;
            stats.mem_table_readers_total += t.table_readers;
        }
        let mut seen: Vec<&Cache> = Vec::new();
        for &c in &self.caches {
            if !seen.iter().any(|s| Arc::ptr_eq(&s.0, &c.0)) {
                seen.push(c);
                stats.cache_total += c.get_usage() as u64;
            }
        }
        Ok(MemoryUsage { stats })
    }
}

/// The memory use of `dbs` and `caches` now (either may be `None`), as the `rocksdb` crate's
/// `get_memory_usage_stats`. Never fails (the `Result` is the crate's signature).
pub fn get_memory_usage_stats(dbs: Option<&[&DB]>, caches: Option<&[&Cache]>) -> Result<MemoryUsageStats> {
    let mut b = MemoryUsageBuilder::new()?;
    for &db in dbs.unwrap_or_default() {
        b.add_db(db);
    }
    for &c in caches.unwrap_or_default() {
        b.add_cache(c);
    }
    Ok(b.build()?.stats)
}
