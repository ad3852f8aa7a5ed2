//! What a table holds of its partitioned filter (the reading is in `partitioned_filter.rs`).

use std::sync::Arc;

use crate::table::block::Block;
use crate::table::block_based::filter::FilterReader;
use crate::table::format::BlockHandle;

/// Metaindex prefix of a partitioned filter (the policy name follows).
pub(crate) const PARTITIONED_FILTER_PREFIX: &str = "partitionedfilter.";

/// A table's partitioned filter.
pub(crate) struct PartitionedFilter {
    /// Handle of the top-level block.
    pub(super) top: BlockHandle,
    /// The top level when the table holds it (else it is looked up in the block cache).
    pub(super) top_block: Option<Arc<Block>>,
    /// The partitions when the table holds them, by offset (else through the block cache).
    pub(super) held: Vec<(u64, Arc<FilterReader>)>,
}

impl PartitionedFilter {
    /// Bytes the table holds for this filter.
    pub(super) fn memory(&self) -> usize {
        self.top_block.as_ref().map_or(0, |b| b.memory()) + self.held.iter().map(|(_, f)| f.memory()).sum::<usize>()
    }
}
