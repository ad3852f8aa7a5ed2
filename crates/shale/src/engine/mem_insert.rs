//! Inserting write batches into memtables (a write group, WAL replay at open).

use crate::engine::column_family::MemSet;
use crate::error::{Error, Result};
use crate::key::vt;
use crate::memtable::{AddCounters, MemTable};
use crate::write_batch::{oversize_reason, BatchHandler, WriteBatch};
use std::sync::Arc;

/// Inserts a batch's records into the memtables of their families with consecutive sequence
/// numbers. A record for a family not in the set (dropped while the write waited: the write is
/// ordered before the drop; or, in recovery, a family that does not need this WAL) only takes
/// its sequence number. The memtable's counters are updated once per run of records of a
/// family (not once per record).
pub(crate) struct MemInserter<'a> {
    mems: &'a [(u32, Arc<MemTable>)],
    mem: Option<&'a MemTable>,
    seq: u64,
    counters: AddCounters,
}

impl<'a> MemInserter<'a> {
    /// The sequence number the next record takes.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }
    pub(crate) fn new(mems: &'a [(u32, Arc<MemTable>)], seq: u64) -> Self {
        MemInserter {
            mems,
            mem: find_mem(mems, 0),
            seq,
            counters: AddCounters::default(),
        }
    }
    #[inline]
    fn add(&mut self, vtype: u8, k: &[u8], v: &[u8]) -> Result<()> {
        // Writes refuse such records before the WAL (`WriteBatch::validate`); a WAL written
        // elsewhere may still carry one, and the memtable cannot hold it.
        if let Some(why) = oversize_reason(k.len(), v.len()) {
            return Err(Error::corrupt(format!("WAL record at sequence {}: {why}", self.seq)));
        }
        if let Some(mem) = self.mem {
            mem.add_deferred(self.seq, vtype, k, v, &mut self.counters);
        }
        self.seq += 1;
        Ok(())
    }
    fn apply_counters(&mut self) {
        if let Some(m) = self.mem {
            m.apply_counters(&self.counters);
        }
        self.counters = AddCounters::default();
    }
}

#[inline]
pub(crate) fn find_mem(mems: &[(u32, Arc<MemTable>)], cf: u32) -> Option<&MemTable> {
    mems.iter().find(|(id, _)| *id == cf).map(|(_, m)| &**m)
}

impl Drop for MemInserter<'_> {
    fn drop(&mut self) {
        self.apply_counters();
    }
}

impl BatchHandler for MemInserter<'_> {
    fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.add(vt::VALUE, k, v)
    }
    fn delete(&mut self, k: &[u8]) -> Result<()> {
        // A family with user-defined timestamps stores deletions as RocksDB's memtable does:
        // with the deletion-with-timestamp type.
        let t = match self.mem {
            Some(m) if m.icmp().timestamp_size() > 0 => vt::DELETION_WITH_TIMESTAMP,
            _ => vt::DELETION,
        };
        self.add(t, k, &[])
    }
    fn single_delete(&mut self, k: &[u8]) -> Result<()> {
        self.add(vt::SINGLE_DELETION, k, &[])
    }
    fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
        if let Some(mem) = self.mem {
            super::range_del::mem_add_range_tombstone(mem, self.seq, b, e);
        }
        self.seq += 1;
        Ok(())
    }
    fn merge(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.add(vt::MERGE, k, v)
    }
    fn put_entity(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.add(vt::WIDE_COLUMN_ENTITY, k, v)
    }
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        self.apply_counters();
        self.mem = find_mem(self.mems, cf);
        Ok(())
    }
}

/// Insert one writer's batch (a follower's part of a parallel insert).
pub(crate) fn insert_batch(mems: &MemSet, seq: u64, b: &WriteBatch) -> Result<()> {
    b.handle(&mut MemInserter::new(mems, seq))
}
