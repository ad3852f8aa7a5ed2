//! The index of a block-based table as the reader sees it: one index block (binary search,
//! hash search read as binary search, binary search with first keys), or RocksDB's partitioned
//! index (`kTwoLevelIndexSearch`): a top-level block whose values are the handles of index
//! partitions, each partition an ordinary index block. A lookup loads the top level and the one
//! partition it needs, through the block cache (`docs/format-details.md`).

use std::sync::Arc;

use super::index_iter::{IndexIter, IndexSource};
use super::{Kind, Table};
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::table::block::{Block, BlockIter, EntryFormat, KeyOrder};
use crate::table::cache::CacheValue;
use crate::table::format::BlockHandle;

impl Table {
    /// An iterator over the index (the top level from the block cache if it lives there). With
    /// `fill_cache` false, index blocks read on a miss are not inserted into the cache.
    #[inline]
    pub(crate) fn index_iter(&self, fill_cache: bool) -> Result<IndexIter> {
        let b = match &self.index_block {
            Some(b) => b.clone(),
            None => self.cached_index(fill_cache)?,
        };
        let top = BlockIter::new(b, self.index_order.clone(), self.index_format);
        Ok(if self.two_level {
            IndexIter::two_level(top, fill_cache)
        } else {
            IndexIter::Flat(top)
        })
    }

    /// The index block (the top level of a partitioned index) through the cache, read and
    /// inserted on a miss.
    fn cached_index(&self, fill_cache: bool) -> Result<Arc<Block>> {
        // No search directory here: an index block that lives in the cache may be evicted and
        // read again on any lookup, and rebuilding a directory (decoding every entry) each
        // time costs more than the searches it saves.
        self.meta_block_with(self.footer.index, Kind::Index, fill_cache)
    }

    /// An index block, index partition or filter top level through the cache (counted as `kind`
    /// in the tickers), read and inserted at the priority of index and filter blocks on a miss.
    pub(super) fn meta_block(&self, h: BlockHandle, kind: Kind) -> Result<Arc<Block>> {
        self.meta_block_with(h, kind, true)
    }

    /// [`meta_block`](Self::meta_block), inserting what it reads only when `fill_cache`.
    fn meta_block_with(&self, h: BlockHandle, kind: Kind, fill_cache: bool) -> Result<Arc<Block>> {
        let key = (self.cache_id, h.offset);
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(key) {
                self.cache_hit(kind, b.memory());
                return Ok(b);
            }
            self.cache_miss(kind);
        }
        let b = Arc::new(self.read_parsed_block(h, self.verify_meta)?);
        if let Some(c) = self.cache.as_ref().filter(|_| fill_cache) {
            let v = CacheValue::Block(b.clone());
            let role = kind.role(&v);
            let kept = c.insert_value(key, v, b.memory(), false, self.meta_priority, role);
            self.cache_added(kept, kind, b.memory());
        }
        Ok(b)
    }

    /// An index partition: held by the table when it keeps its partitions, else through the
    /// block cache.
    fn index_partition(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        if !self.held_partitions.is_empty() {
            if let Ok(i) = self.held_partitions.binary_search_by_key(&h.offset, |(o, _)| *o) {
                return Ok(self.held_partitions[i].1.clone());
            }
        }
        self.meta_block_with(h, Kind::Index, fill_cache)
    }

    /// Read every index partition (checksums verified as `verify` says) to keep them in the
    /// table; their bytes. Partitions are listed in file order by the top level.
    pub(super) fn load_partitions(&self, top: &Arc<Block>, verify: bool) -> Result<Vec<(u64, Arc<Block>)>> {
        let mut it = BlockIter::new(top.clone(), self.index_order.clone(), self.index_format);
        let mut out: Vec<(u64, Arc<Block>)> = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let h = it.handle();
            let b = self.read_parsed_block(h, verify)?;
            if out.last().is_some_and(|(o, _)| *o >= h.offset) {
                return Err(self.corruption(h.offset, "index partitions out of file order".into()));
            }
            out.push((h.offset, Arc::new(b)));
            it.next();
        }
        it.status()
            .map_err(|e| e.in_file(&self.file_name, Some(self.footer.index.offset)))?;
        Ok(out)
    }

    /// Read and verify every index partition (sst_dump's verify).
    pub(super) fn verify_partitions(&self) -> Result<()> {
        if self.two_level {
            let top = Arc::new(self.read_parsed_block(self.footer.index, true)?);
            self.load_partitions(&top, true)?;
        }
        Ok(())
    }
}

impl IndexSource for Table {
    fn index_partition(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>> {
        Table::index_partition(self, h, fill_cache)
    }
    fn file_name(&self) -> &str {
        &self.file_name
    }
    fn index_offset(&self) -> u64 {
        self.footer.index.offset
    }
    fn index_order(&self) -> &KeyOrder {
        &self.index_order
    }
    fn index_format(&self) -> EntryFormat {
        self.index_format
    }
}
