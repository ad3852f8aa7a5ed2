//! Reading RocksDB's partitioned full filters (`partition_filters`): the metaindex entry
//! `partitionedfilter.<policy>` points at a top-level block keyed like the index (the last key
//! of each filter partition, with or without sequence number as `rocksdb.index.key.is.user.key`
//! says; values are block handles, delta-encoded as the index is). Each partition is a full
//! filter over the keys of its range. A lookup seeks the top level and asks the one partition
//! it lands on (the last one when the key is past every partition key).

use std::sync::Arc;

use super::filter_partitions::{PartitionedFilter, PARTITIONED_FILTER_PREFIX};
use super::{Kind, Table};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, pack_trailer, vt, MAX_SEQUENCE};
use crate::table::block::{Block, BlockIter};
use crate::table::block_based::filter::FilterReader;
use crate::table::format::BlockHandle;

impl Table {
    /// Whether the partitioned filter admits `user_key` (true when a block cannot be read: the
    /// filter is then not consulted, as for a full filter).
    pub(super) fn partitioned_key_may_match(&self, pf: &PartitionedFilter, user_key: &[u8]) -> bool {
        let Some(h) = self.filter_partition_handle(pf, user_key) else {
            return true;
        };
        if !pf.held.is_empty() {
            if let Ok(i) = pf.held.binary_search_by_key(&h.offset, |(o, _)| *o) {
                return pf.held[i].1.key_may_match(user_key);
            }
        }
        self.cached_filter(h).is_none_or(|f| f.key_may_match(user_key))
    }

    /// The handle of the filter partition that covers `user_key`.
    fn filter_partition_handle(&self, pf: &PartitionedFilter, user_key: &[u8]) -> Option<BlockHandle> {
        let top = match &pf.top_block {
            Some(b) => b.clone(),
            None => self.meta_block(pf.top, Kind::Filter).ok()?,
        };
        let mut it = BlockIter::new(top, self.index_order.clone(), self.index_format);
        with_seek_key(user_key, |k| it.seek(k));
        if !it.valid() {
            it.status().ok()?;
            it.seek_to_last();
        }
        it.valid().then(|| it.handle())
    }

    /// The filter partitions' handles, in order (a malformed top level is Corruption at its
    /// offset).
    pub(super) fn filter_partitions(&self, top: &Arc<Block>, top_off: u64) -> crate::error::Result<Vec<BlockHandle>> {
        let mut it = BlockIter::new(top.clone(), self.index_order.clone(), self.index_format);
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let h = it.handle();
            self.check_handle(h)?;
            out.push(h);
            it.next();
        }
        it.status().map_err(|e| e.in_file(&self.file_name, Some(top_off)))?;
        Ok(out)
    }

    /// Read the top level (and, if `hold`, every partition) of a partitioned filter at open.
    pub(super) fn open_partitioned_filter(
        &self,
        top: BlockHandle,
        verify: bool,
        hold: bool,
    ) -> crate::error::Result<PartitionedFilter> {
        let top_block = Arc::new(self.read_parsed_block(top, verify)?);
        let handles = self.filter_partitions(&top_block, top.offset)?;
        let mut held = Vec::new();
        if hold {
            for h in handles {
                if held.last().is_some_and(|(o, _)| *o >= h.offset) {
                    return Err(self.corruption(h.offset, "filter partitions out of file order".into()));
                }
                held.push((h.offset, Arc::new(FilterReader::new(self.read_block(h, verify)?))));
            }
        }
        Ok(PartitionedFilter {
            top,
            top_block: Some(top_block),
            held,
        })
    }

    /// Read and verify every filter partition (sst_dump's verify).
    pub(super) fn verify_filter_partitions(&self) -> crate::error::Result<()> {
        for (name, h) in &self.meta {
            if name.starts_with(PARTITIONED_FILTER_PREFIX) {
                let top = Arc::new(self.read_parsed_block(*h, true)?);
                for p in self.filter_partitions(&top, h.offset)? {
                    self.read_block(p, true)?;
                }
            }
        }
        Ok(())
    }
}

/// Run `f` with the internal key that seeks `user_key`'s newest entry, built on the stack when
/// it is short (every filter probe of a point lookup makes one).
#[inline]
fn with_seek_key<R>(user_key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    const STACK: usize = 128;
    let n = user_key.len() + 8;
    if n > STACK {
        return f(&make_internal_key(user_key, MAX_SEQUENCE, vt::FOR_SEEK));
    }
    let mut buf = [0u8; STACK];
    buf[..user_key.len()].copy_from_slice(user_key);
    buf[user_key.len()..n].copy_from_slice(&pack_trailer(MAX_SEQUENCE, vt::FOR_SEEK).to_le_bytes());
    f(&buf[..n])
}
