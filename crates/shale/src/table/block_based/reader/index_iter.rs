//! The index of a block-based table as the reader sees it: one index block (binary search,
//! hash search read as binary search, binary search with first keys), or RocksDB's partitioned
//! index (`kTwoLevelIndexSearch`): a top-level block whose values are the handles of index
//! partitions, each partition an ordinary index block. A lookup loads the top level and the one
//! partition it needs, through the block cache (`docs/format-details.md`).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::table::block::{Block, BlockIter, EntryFormat, KeyOrder};
use crate::table::format::BlockHandle;

/// What iterating a partitioned index needs of its table: the partitions (through the block
/// cache) and how to read and name them.
pub(crate) trait IndexSource {
    /// The index partition at `h` (entering the block cache on a miss if `fill_cache`).
    fn index_partition(&self, h: BlockHandle, fill_cache: bool) -> Result<Arc<Block>>;
    /// The table file's name, for errors.
    fn file_name(&self) -> &str;
    /// Where the index's top level starts in the file, for errors.
    fn index_offset(&self) -> u64;
    /// The order of index keys.
    fn index_order(&self) -> &KeyOrder;
    /// The layout of index entries.
    fn index_format(&self) -> EntryFormat;
}

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
    /// A partitioned index's iterator over its top level `top`; partitions are read (entering
    /// the block cache on a miss if `fill_cache`) as it moves.
    pub(crate) fn two_level(top: BlockIter, fill_cache: bool) -> IndexIter {
        IndexIter::TwoLevel(Box::new(TwoLevel {
            top,
            part: None,
            err: None,
            fill_cache,
        }))
    }

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
    fn position(&mut self, t: &impl IndexSource, forward: bool, op: impl Fn(&mut BlockIter)) {
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
    fn step(&mut self, t: &impl IndexSource, forward: bool, op: impl Fn(&mut BlockIter)) {
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

    pub(crate) fn seek(&mut self, t: &impl IndexSource, target: &[u8]) {
        self.position(t, true, |it| it.seek(target));
    }

    pub(crate) fn seek_to_first(&mut self, t: &impl IndexSource) {
        self.position(t, true, |it| it.seek_to_first());
    }

    pub(crate) fn seek_to_last(&mut self, t: &impl IndexSource) {
        self.position(t, false, |it| it.seek_to_last());
    }

    pub(crate) fn next(&mut self, t: &impl IndexSource) {
        self.step(t, true, |it| it.next());
    }

    pub(crate) fn prev(&mut self, t: &impl IndexSource) {
        self.step(t, false, |it| it.prev());
    }
}

impl TwoLevel {
    /// Load the partition the top level points at (kept if it is the one loaded). False when
    /// the top level is exhausted or on error.
    fn load(&mut self, t: &impl IndexSource) -> bool {
        if self.err.is_some() {
            return false;
        }
        if !self.top.valid() {
            if let Err(e) = self.top.status() {
                self.err = Some(e.in_file(t.file_name(), Some(t.index_offset())));
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
                let it = BlockIter::new(b, t.index_order().clone(), t.index_format());
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
    fn part_ok(&mut self, t: &impl IndexSource) -> bool {
        if let Some((p, off)) = &self.part {
            if let Err(e) = p.status() {
                self.err = Some(e.in_file(t.file_name(), Some(*off)));
                return false;
            }
        }
        true
    }

    /// While the partition is exhausted, load the next (or previous) one and position at its
    /// first (or last) entry.
    fn skip(&mut self, t: &impl IndexSource, forward: bool) {
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
