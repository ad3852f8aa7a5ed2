//! The block-based table format in rocksdict's shape: `BlockBasedOptions`, its enums
//! (`ChecksumType`, `BlockBasedIndexType`, `DataBlockIndexType`), the shared block `Cache`, and
//! `Options.set_block_based_table_factory`. Each maps onto the engine's `BlockBasedOptions`;
//! what the engine does not write (a hash index inside data blocks, another index restart
//! interval than 1) raises NotSupported naming it.

use pyo3::prelude::*;

use crate::enums::py_enum;
use crate::errors::NotSupported;
use crate::options::Options;

py_enum!(
    /// The checksum of table blocks (rocksdict's `ChecksumType`).
    ChecksumType, shale::ChecksumType, {
        no_checksum => shale::ChecksumType::NoChecksum,
        crc32c => shale::ChecksumType::CRC32c,
        xxhash => shale::ChecksumType::XxHash,
        xxhash64 => shale::ChecksumType::XxHash64,
        xxh3 => shale::ChecksumType::XXH3,
    }
);

py_enum!(
    /// The index of a table file (rocksdict's `BlockBasedIndexType`). `hash_search` is written
    /// as a binary-search index, as RocksDB does without a prefix extractor.
    BlockBasedIndexType, shale::BlockBasedIndexType, {
        binary_search => shale::BlockBasedIndexType::BinarySearch,
        hash_search => shale::BlockBasedIndexType::HashSearch,
        two_level_index_search => shale::BlockBasedIndexType::TwoLevelIndexSearch,
    }
);

/// The lookup structure inside a data block.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum DataBlockIndex {
    BinarySearch,
    BinaryAndHash,
}

py_enum!(
    /// How a data block is searched (rocksdict's `DataBlockIndexType`): Shale writes
    /// binary-search blocks only.
    DataBlockIndexType, DataBlockIndex, {
        binary_search => DataBlockIndex::BinarySearch,
        binary_and_hash => DataBlockIndex::BinaryAndHash,
    }
);

/// A block cache that databases opened with the same one share (rocksdict's `Cache`; an LRU
/// cache with a high-priority pool for index and filter blocks).
#[pyclass(module = "shale", frozen)]
#[derive(Clone)]
pub(crate) struct Cache {
    pub(crate) inner: shale::Cache,
}

#[pymethods]
impl Cache {
    #[new]
    fn new(capacity: usize) -> Self {
        Cache {
            inner: shale::Cache::new_lru_cache(capacity),
        }
    }
    /// RocksDB's HyperClockCache has no counterpart in Shale: this is the LRU cache of the same
    /// capacity (the same contract, another eviction algorithm); `estimated_entry_charge` is
    /// not used.
    #[staticmethod]
    fn new_hyper_clock_cache(capacity: usize, estimated_entry_charge: usize) -> Self {
        let _ = estimated_entry_charge;
        Cache::new(capacity)
    }
    /// Bytes the cache holds now (for every database using it).
    fn get_usage(&self) -> usize {
        self.inner.get_usage()
    }
    /// Bytes of entries in use or pinned.
    fn get_pinned_usage(&self) -> usize {
        self.inner.get_pinned_usage()
    }
    /// The capacity in bytes (a Shale addition).
    fn get_capacity(&self) -> usize {
        self.inner.get_capacity()
    }
}

/// The block-based table format's options (rocksdict's `BlockBasedOptions`), handed to
/// `Options.set_block_based_table_factory`.
#[pyclass(module = "shale")]
#[derive(Clone)]
pub(crate) struct BlockBasedOptions {
    inner: shale::BlockBasedOptions,
}

#[pymethods]
impl BlockBasedOptions {
    /// The defaults of `Options()`: 4 KiB blocks, restart interval 16, a 10-bit bloom filter,
    /// XXH3 checksums, format_version 5, a 32 MiB block cache per database.
    #[new]
    fn new() -> Self {
        BlockBasedOptions {
            inner: shale::BlockBasedOptions::default(),
        }
    }
    /// No block cache.
    fn disable_cache(&mut self) {
        self.inner.disable_cache();
    }
    fn set_block_cache(&mut self, cache: PyRef<'_, Cache>) {
        self.inner.set_block_cache(&cache.inner);
    }
    fn set_block_restart_interval(&mut self, interval: i32) {
        self.inner.set_block_restart_interval(interval);
    }
    fn set_block_size(&mut self, size: usize) {
        self.inner.set_block_size(size);
    }
    /// A bloom filter of `bits_per_key` bits per key (0: none). `block_based` is ignored: the
    /// filter is a full filter, as in RocksDB 7 and later.
    #[pyo3(signature = (bits_per_key, block_based = false))]
    fn set_bloom_filter(&mut self, bits_per_key: f64, block_based: bool) {
        self.inner.set_bloom_filter(bits_per_key, block_based);
    }
    fn set_cache_index_and_filter_blocks(&mut self, v: bool) {
        self.inner.set_cache_index_and_filter_blocks(v);
    }
    fn set_pin_l0_filter_and_index_blocks_in_cache(&mut self, v: bool) {
        self.inner.set_pin_l0_filter_and_index_blocks_in_cache(v);
    }
    fn set_pin_top_level_index_and_filter(&mut self, v: bool) {
        self.inner.set_pin_top_level_index_and_filter(v);
    }
    fn set_index_type(&mut self, index_type: PyRef<'_, BlockBasedIndexType>) {
        self.inner.set_index_type(index_type.v);
    }
    fn set_partition_filters(&mut self, v: bool) {
        self.inner.set_partition_filters(v);
    }
    fn set_metadata_block_size(&mut self, size: usize) {
        self.inner.set_metadata_block_size(size);
    }
    fn set_format_version(&mut self, version: i32) {
        self.inner.set_format_version(version);
    }
    fn set_checksum_type(&mut self, checksum_type: PyRef<'_, ChecksumType>) {
        self.inner.set_checksum_type(checksum_type.v);
    }
    /// Only `DataBlockIndexType.binary_search()`: Shale does not write data blocks with a hash
    /// index (NotSupported).
    fn set_data_block_index_type(&mut self, index_type: PyRef<'_, DataBlockIndexType>) -> PyResult<()> {
        match index_type.v {
            DataBlockIndex::BinarySearch => Ok(()),
            DataBlockIndex::BinaryAndHash => Err(NotSupported::new_err(
                "DataBlockIndexType.binary_and_hash: Shale writes data blocks without a hash index",
            )),
        }
    }
    /// The hash index's load factor in data blocks: only used by
    /// `DataBlockIndexType.binary_and_hash`, which Shale does not write, so it has no effect
    /// (as in RocksDB with binary-search blocks). Must be in (0, 1].
    fn set_data_block_hash_ratio(&mut self, ratio: f64) -> PyResult<()> {
        if ratio > 0.0 && ratio <= 1.0 {
            Ok(())
        } else {
            Err(pyo3::exceptions::PyValueError::new_err(format!(
                "data_block_hash_ratio must be in (0, 1], not {ratio}"
            )))
        }
    }
    /// Only 1 (RocksDB's default): Shale writes every index entry as a restart point.
    fn set_index_block_restart_interval(&mut self, interval: i32) -> PyResult<()> {
        if interval == 1 {
            Ok(())
        } else {
            Err(NotSupported::new_err(format!(
                "index_block_restart_interval={interval}: Shale writes index blocks with a restart interval of 1"
            )))
        }
    }
}

#[pymethods]
impl Options {
    /// New tables in the block-based format with `factory`'s settings (replacing every
    /// block-based setting made before).
    fn set_block_based_table_factory(&mut self, factory: PyRef<'_, BlockBasedOptions>) {
        self.inner.set_block_based_table_factory(&factory.inner);
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChecksumType>()?;
    m.add_class::<BlockBasedIndexType>()?;
    m.add_class::<DataBlockIndexType>()?;
    m.add_class::<Cache>()?;
    m.add_class::<BlockBasedOptions>()
}
