//! The index of a block-based table as the reader sees it: one index block (binary search,
//! hash search read as binary search, binary search with first keys), or RocksDB's partitioned
//! index (`kTwoLevelIndexSearch`): a top-level block whose values are the handles of index
//! partitions, each partition an ordinary index block. A lookup loads the top level and the one
//! partition it needs, through the block cache (`docs/format-details.md`).

use std::sync::Arc;

use super::{Kind, Table};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::table::block::{Block, BlockIter};
use crate::table::cache::CacheValue;
use crate::table::format::BlockHandle;

/// An iterator over the data-block handles of a table, in key order.
// The flat variant stays unboxed: it is every point lookup's, and a box would cost one more
// allocation per lookup.
#[allow(clippy::large_enum_variant)]
pub(crate) enum IndexIter {
    /// One index block.
    Flat(BlockIter),
    /// A partitioned index.
    TwoLevel(Box<TwoLevel>),
}

/// The two levels of a partitioned index being iterated.
pub(crate) struct TwoLevel {
    top: BlockIter,
    /// The partition the top level points at, and its offset.
    part: Option<(BlockIter, u64)>,
    err: Option<Error>,
    /// Whether partitions read on a miss enter the block cache (false for compaction input, as
    /// RocksDB's `fill_cache=false` reads).
    fill_cache: bool,
}

impl IndexIter {
    #[inline]
    pub(crate) fn valid(&self) -> bool {
        match self {
            IndexIter::Flat(it) => it.valid(),
            IndexIter::TwoLevel(t) => t.err.is_none() && t.part.as_ref().is_some_and(|(p, _)| p.valid()),
        }
    }

    /// The data-block handle of the current entry.
    #[inline]
    pub(crate) fn handle(&self) -> BlockHandle {
        match self {
            IndexIter::Flat(it) => it.handle(),
            IndexIter::TwoLevel(t) => t.part.as_ref().map(|(p, _)| p.handle()).unwrap_or_default(),
        }
    }

    /// The separator key of the current entry.
    pub(crate) fn key(&self) -> &[u8] {
        match self {
            IndexIter::Flat(it) => it.key(),
            IndexIter::TwoLevel(t) => t.part.as_ref().map_or(&[], |(p, _)| p.key()),
        }
    }

    /// The first error met, with the file offset of the block it is in when that is known.
    pub(crate) fn status(&self) -> Result<()> {
        match self {
            IndexIter::Flat(it) => it.status(),
            IndexIter::TwoLevel(t) => {
                if let Some(e) = &t.err {
                    return Err(e.clone());
                }
                t.top.status()
            }
        }
    }

    /// Position with `op` on the top level and then on the partition it lands on; move on
    /// (forward or backward) past an empty partition.
    fn position(&mut self, t: &Table, forward: bool, op: impl Fn(&mut BlockIter)) {
        match self {
            IndexIter::Flat(it) => op(it),
            IndexIter::TwoLevel(tl) => {
                op(&mut tl.top);
                if tl.load(t) {
                    if let Some((p, _)) = &mut tl.part {
                        op(p);
                    }
                    tl.skip(t, forward);
                }
            }
        }
    }

    /// Step with `op` (flat index or current partition), then past an exhausted partition.
    fn step(&mut self, t: &Table, forward: bool, op: impl Fn(&mut BlockIter)) {
        match self {
            IndexIter::Flat(it) => op(it),
            IndexIter::TwoLevel(tl) => {
                if let Some((p, _)) = &mut tl.part {
                    op(p);
                }
                tl.skip(t, forward);
            }
        }
    }

    pub(crate) fn seek(&mut self, t: &Table, target: &[u8]) {
        self.position(t, true, |it| it.seek(target));
    }

    pub(crate) fn seek_to_first(&mut self, t: &Table) {
        self.position(t, true, |it| it.seek_to_first());
    }

    pub(crate) fn seek_to_last(&mut self, t: &Table) {
        self.position(t, false, |it| it.seek_to_last());
    }

    pub(crate) fn next(&mut self, t: &Table) {
        self.step(t, true, |it| it.next());
    }

    pub(crate) fn prev(&mut self, t: &Table) {
        self.step(t, false, |it| it.prev());
    }
}

impl TwoLevel {
    /// Load the partition the top level points at (kept if it is the one loaded). False when
    /// the top level is exhausted or on error.
    fn load(&mut self, t: &Table) -> bool {
        if self.err.is_some() {
            return false;
        }
        if !self.top.valid() {
            if let Err(e) = self.top.status() {
                self.err = Some(e.in_file(&t.file_name, Some(t.footer.index.offset)));
            }
            self.part = None;
            return false;
        }
        let h = self.top.handle();
        if let Some((_, off)) = &self.part {
            if *off == h.offset {
                return true;
            }
        }
        match t.index_partition(h, self.fill_cache) {
            Ok(b) => {
                let it = BlockIter::new(b, t.index_order.clone(), t.index_format);
                self.part = Some((it, h.offset));
                true
            }
            Err(e) => {
                self.err = Some(e);
                self.part = None;
                false
            }
        }
    }

    /// A partition's own status, as an error naming the partition's offset.
    fn part_ok(&mut self, t: &Table) -> bool {
        if let Some((p, off)) = &self.part {
            if let Err(e) = p.status() {
                self.err = Some(e.in_file(&t.file_name, Some(*off)));
                return false;
            }
        }
        true
    }

    /// While the partition is exhausted, load the next (or previous) one and position at its
    /// first (or last) entry.
    fn skip(&mut self, t: &Table, forward: bool) {
        while self.err.is_none() && self.part.as_ref().is_some_and(|(p, _)| !p.valid()) {
            if !self.part_ok(t) {
                return;
            }
            if forward {
                self.top.next();
            } else {
                self.top.prev();
            }
            if !self.load(t) {
                return;
            }
            if let Some((p, _)) = &mut self.part {
                if forward {
                    p.seek_to_first();
                } else {
                    p.seek_to_last();
                }
            }
        }
    }
}

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
            IndexIter::TwoLevel(Box::new(TwoLevel {
                top,
                part: None,
                err: None,
                fill_cache,
            }))
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
            let kept = c.insert_value(key, CacheValue::Block(b.clone()), b.memory(), false, self.meta_priority);
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
