//! The `rocksdb` crate's `BlockBasedOptions`: the settings of the block-based table format
//! (its block cache is a `table::cache::Cache`), handed to [`Options::set_block_based_table_factory`].

use crate::options::{Options, TableFactory};
use crate::table::block_based::partitioned_index::{BlockBasedIndexType, IndexLayout};
use crate::table::cache::Cache;
use crate::table::format::ChecksumType;

/// The block-based table format's options (the `rocksdb` crate's `BlockBasedOptions`): block
/// size, restart interval, block cache, bloom filter, checksum, format version and where index
/// and filter blocks live. [`Options::set_block_based_table_factory`] copies them into the
/// options, so later changes to this value do not reach options already given it.
#[derive(Clone, Debug)]
pub struct BlockBasedOptions {
    pub(crate) block_size: usize,
    pub(crate) block_restart_interval: usize,
    /// A shared cache (None: each database makes its own of `cache_capacity` bytes).
    pub(crate) block_cache: Option<Cache>,
    pub(crate) cache_capacity: usize,
    pub(crate) bloom_bits_per_key: f64,
    pub(crate) whole_key_filtering: bool,
    pub(crate) checksum_type: ChecksumType,
    pub(crate) format_version: u32,
    pub(crate) cache_index_and_filter_blocks: bool,
    pub(crate) pin_l0_filter_and_index_blocks_in_cache: bool,
    pub(crate) index_layout: IndexLayout,
}

impl Default for BlockBasedOptions {
    /// The values [`Options::default`] carries: 4 KiB blocks, restart interval 16, a 32 MiB cache
    /// per database, a 10-bit bloom filter, XXH3 checksums, format_version 5.
    fn default() -> Self {
        BlockBasedOptions::from_options(&Options::default())
    }
}

impl BlockBasedOptions {
    /// The block-based settings `opts` carries now.
    pub(crate) fn from_options(o: &Options) -> BlockBasedOptions {
        BlockBasedOptions {
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            block_cache: o.block_cache.clone(),
            cache_capacity: o.block_cache_capacity,
            bloom_bits_per_key: o.bloom_bits_per_key,
            whole_key_filtering: o.whole_key_filtering,
            checksum_type: o.checksum_type,
            format_version: o.format_version,
            cache_index_and_filter_blocks: o.cache_index_and_filter_blocks,
            pin_l0_filter_and_index_blocks_in_cache: o.pin_l0_filter_and_index_blocks_in_cache,
            index_layout: o.index_layout.clone(),
        }
    }

    /// Target uncompressed size of a data block (default 4096; 0 is rejected at open).
    pub fn set_block_size(&mut self, size: usize) {
        self.block_size = size;
    }
    /// Keys between restart points of a data block (default 16; below 1 is rejected at open).
    pub fn set_block_restart_interval(&mut self, interval: i32) {
        self.block_restart_interval = usize::try_from(interval).unwrap_or(0);
    }
    /// Use `cache` for blocks; databases given the same cache share it.
    pub fn set_block_cache(&mut self, cache: &Cache) {
        self.cache_capacity = cache.get_capacity();
        self.block_cache = Some(cache.clone());
    }
    /// A cache of `capacity` bytes for each database opened with these options, not shared (0:
    /// no cache). A Shale extension; the `rocksdb` crate's way is `set_block_cache`.
    pub fn set_lru_cache_capacity(&mut self, capacity: usize) {
        self.block_cache = None;
        self.cache_capacity = capacity;
    }
    /// No block cache at all.
    pub fn disable_cache(&mut self) {
        self.block_cache = None;
        self.cache_capacity = 0;
    }
    /// A bloom filter of `bits_per_key` bits per key (0 disables filters; negative or NaN is
    /// rejected at open). `block_based` is ignored: as in RocksDB 7 and later, the filter is
    /// always a full filter.
    pub fn set_bloom_filter(&mut self, bits_per_key: f64, block_based: bool) {
        let _ = block_based;
        self.bloom_bits_per_key = bits_per_key;
    }
    /// Put whole keys into the filters and probe them on point lookups (default true); with a
    /// prefix extractor the filters hold prefixes too, or only prefixes when this is off.
    pub fn set_whole_key_filtering(&mut self, v: bool) {
        self.whole_key_filtering = v;
    }
    /// Keep index and filter blocks in the block cache instead of in each open table.
    pub fn set_cache_index_and_filter_blocks(&mut self, v: bool) {
        self.cache_index_and_filter_blocks = v;
    }
    /// With cached index and filter blocks: keep those of L0 files pinned.
    pub fn set_pin_l0_filter_and_index_blocks_in_cache(&mut self, v: bool) {
        self.pin_l0_filter_and_index_blocks_in_cache = v;
    }
    /// Insert index and filter blocks into the block cache at high priority (default true), so
    /// data blocks do not evict them while the high-priority pool holds them.
    pub fn set_cache_index_and_filter_blocks_with_high_priority(&mut self, v: bool) {
        self.index_layout.cache_index_and_filter_blocks_with_high_priority = v;
    }
    /// With cached index and filter blocks: keep the top level of partitioned index and filters
    /// pinned in the cache while a table is open (default true).
    pub fn set_pin_top_level_index_and_filter(&mut self, v: bool) {
        self.index_layout.pin_top_level_index_and_filter = v;
    }
    /// The index new tables are written with (default `BinarySearch`).
    pub fn set_index_type(&mut self, index_type: BlockBasedIndexType) {
        self.index_layout.index_type = index_type;
    }
    /// Partition the filters on the index partitions' scale (needs
    /// `BlockBasedIndexType::TwoLevelIndexSearch`; ignored otherwise, as RocksDB does).
    pub fn set_partition_filters(&mut self, v: bool) {
        self.index_layout.partition_filters = v;
    }
    /// Target size of index and filter partitions in bytes (default 4096; 0 gives every index
    /// partition one entry, as in RocksDB).
    pub fn set_metadata_block_size(&mut self, size: usize) {
        self.index_layout.metadata_block_size = size as u64;
    }
    /// The high-priority share of the database's own cache (the one `set_lru_cache_capacity`
    /// sizes; default 0, as RocksDB's own default cache). Outside 0..=1 is rejected at open. A
    /// Shale extension (db_bench's `--cache_high_pri_pool_ratio`); a shared [`Cache`] takes
    /// its ratio when made.
    pub fn set_cache_high_pri_pool_ratio(&mut self, ratio: f64) {
        self.index_layout.high_pri_pool_ratio = ratio;
    }
    /// The format_version of new tables (2..=6 are written; others are rejected at open).
    pub fn set_format_version(&mut self, version: i32) {
        self.format_version = u32::try_from(version).unwrap_or(0);
    }
    /// The block checksum of new tables.
    pub fn set_checksum_type(&mut self, checksum_type: ChecksumType) {
        self.checksum_type = checksum_type;
    }
}

impl Options {
    /// Write new tables in the block-based format with `factory`'s settings (the default
    /// format). Replaces every block-based setting made before.
    pub fn set_block_based_table_factory(&mut self, factory: &BlockBasedOptions) {
        let f = factory.clone();
        self.table_factory = TableFactory::BlockBased;
        self.block_size = f.block_size;
        self.block_restart_interval = f.block_restart_interval;
        self.block_cache = f.block_cache;
        self.block_cache_capacity = f.cache_capacity;
        self.bloom_bits_per_key = f.bloom_bits_per_key;
        self.whole_key_filtering = f.whole_key_filtering;
        self.checksum_type = f.checksum_type;
        self.format_version = f.format_version;
        self.cache_index_and_filter_blocks = f.cache_index_and_filter_blocks;
        self.pin_l0_filter_and_index_blocks_in_cache = f.pin_l0_filter_and_index_blocks_in_cache;
        self.index_layout = f.index_layout;
    }
    /// The block-based settings these options carry (a copy to change and hand back).
    pub fn get_block_based_options(&self) -> BlockBasedOptions {
        BlockBasedOptions::from_options(self)
    }
}
