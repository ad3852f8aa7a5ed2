//! What a DB's memory use is made of, for `perf::MemoryUsageBuilder`: its memtables and the
//! table readers it keeps open, summed over every column family.

use std::sync::atomic::Ordering;

use super::db::DB;

/// One DB's memory in bytes, as RocksDB's `MemoryUtil` reads it from the DB's properties.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryTotals {
    /// Every live memtable: active, immutable and flushed ones still held by readers or kept as
    /// history (`rocksdb.size-all-mem-tables`, summed over the families).
    pub mem_table_total: u64,
    /// Active and immutable memtables not yet flushed (`rocksdb.cur-size-all-mem-tables`).
    pub mem_table_unflushed: u64,
    /// Memory of open table readers outside the block cache (`rocksdb.estimate-table-readers-mem`).
    pub table_readers: u64,
}

impl DB {
    /// The DB's memtable and table-reader memory over all its column families.
    pub(crate) fn memory_totals(&self) -> MemoryTotals {
        let db = &self.inner;
        let families: Vec<_> = db.cfs.read().by_id.values().cloned().collect();
        let mut t = MemoryTotals::default();
        for cf in families {
            let sv = cf.super_version();
            t.mem_table_unflushed += std::iter::once(&sv.mem)
                .chain(sv.imm.iter())
                .map(|m| m.approximate_memory_usage() as u64)
                .sum::<u64>();
            for (_, f) in sv.version.all_files() {
                if let Some(table) = cf.table_cache.peek(f) {
                    t.table_readers += table.approximate_memory_usage() as u64;
                }
            }
        }
        // The account holds every live memtable's charge, flushed ones still pinned included.
        let charged = db.mem_account.total.load(Ordering::Relaxed) as u64;
        t.mem_table_total = charged.max(t.mem_table_unflushed);
        t
    }
}
