//! Compaction filter factories (the `rocksdb` crate's `compaction_filter_factory` module): a
//! factory makes one [`CompactionFilter`] per compaction, told whether the compaction is full
//! and whether it was asked for.

use crate::compaction_filter::CompactionFilter;

/// What a factory is told about the compaction a filter is created for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactionFilterContext {
    /// The compaction reads every table file of the family.
    pub is_full_compaction: bool,
    /// The compaction was asked for (`compact_range`), not picked in the background.
    pub is_manual_compaction: bool,
}

/// Creates one filter per compaction (per subcompaction: each filter is used by one thread).
pub trait CompactionFilterFactory: Send + 'static {
    /// The filter this factory creates.
    type Filter: CompactionFilter + 'static;
    /// Creates the filter for one compaction (or subcompaction) described by `context`.
    fn create(&mut self, context: CompactionFilterContext) -> Self::Filter;
    /// Recorded in the OPTIONS file (`compaction_filter_factory=`).
    fn name(&self) -> &str;
}
