//! How a table is opened for reading: the options every format's reader takes.

use std::sync::Arc;

use crate::key::InternalKeyComparator;
use crate::table::block_based::prefix_filter::FilterContents;
use crate::table::cache::BlockCache;

/// Options for opening a table of any format (the block-based `Table::open`, the plain and
/// cuckoo readers).
#[derive(Clone)]
pub(crate) struct TableReaderOptions {
    pub icmp: InternalKeyComparator,
    pub block_cache: Option<Arc<BlockCache>>,
    /// Unique per open table within the cache (e.g. the file number).
    pub cache_id: u64,
    /// Consult the full filter in `get` / `key_may_match`.
    pub use_filter: bool,
    /// Verify checksums of the blocks read at open (metaindex, properties, index, filter).
    pub verify_checksums: bool,
    /// Keep the index and filter blocks in the block cache instead of the table.
    pub cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: pin them in the cache while the table is open
    /// (RocksDB's `pin_l0_filter_and_index_blocks_in_cache`, decided by the caller per level).
    pub pin_index_and_filter_in_cache: bool,
    /// Insert index and filter blocks (and partitions) at high priority (RocksDB's
    /// `cache_index_and_filter_blocks_with_high_priority`, default true).
    pub cache_index_and_filter_blocks_with_high_priority: bool,
    /// With `cache_index_and_filter_blocks`: keep the top level of a partitioned index or
    /// filter pinned while the table is open (RocksDB's `pin_top_level_index_and_filter`).
    pub pin_top_level_index_and_filter: bool,
    /// The file's largest sequence number as the MANIFEST records it (None: unknown, e.g.
    /// sst_dump). An external file (`rocksdb.external_sst_file.version` >= 2) whose
    /// `global_seqno` property is 0 is read with this sequence number, as RocksDB does.
    pub largest_seqno: Option<u64>,
    /// The DB's statistics (block cache and filter tickers, read times).
    pub stats: crate::statistics::Stats,
    /// The reader's prefix extractor and whole-key switch: with the file's properties they
    /// decide what its filter is asked (`table::block_based::prefix_filter::FilterUse`).
    pub filter_contents: FilterContents,
}

impl Default for TableReaderOptions {
    fn default() -> Self {
        TableReaderOptions {
            icmp: InternalKeyComparator::default(),
            block_cache: None,
            cache_id: 0,
            use_filter: true,
            verify_checksums: true,
            cache_index_and_filter_blocks: false,
            pin_index_and_filter_in_cache: false,
            cache_index_and_filter_blocks_with_high_priority: true,
            pin_top_level_index_and_filter: true,
            largest_seqno: None,
            stats: None,
            filter_contents: FilterContents {
                prefix_extractor: None,
                whole_key_filtering: true,
            },
        }
    }
}
