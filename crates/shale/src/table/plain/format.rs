//! PlainTable's format constants (file size limit, property and meta-block names) and its
//! options (`PlainTableFactoryOptions`, RocksDB's `PlainTableOptions`).

use crate::error::{Error, Result};

/// Largest PlainTable file (offsets are 31-bit; RocksDB's `PlainTableIndex::kMaxFileSize`).
pub(crate) const MAX_FILE_SIZE: u64 = (1 << 31) - 1;

/// Smallest non-zero `hash_table_ratio` accepted (100 buckets per prefix).
pub(crate) const MIN_HASH_TABLE_RATIO: f64 = 0.01;

/// Property names PlainTable adds to the standard ones.
pub(crate) const PROP_ENCODING_TYPE: &str = "rocksdb.plain.table.encoding.type";
pub(crate) const PROP_BLOOM_VERSION: &str = "rocksdb.plain.table.bloom.version";
pub(crate) const PROP_NUM_BLOOM_BLOCKS: &str = "rocksdb.plain.table.bloom.numblocks";
/// Metaindex names of the optional blocks (`store_index_in_file`).
pub(crate) const BLOOM_BLOCK_NAME: &str = "kBloomBlock";
pub(crate) const INDEX_BLOCK_NAME: &str = "PlainTableIndexBlock";

/// How keys are stored (RocksDB's `EncodingType`; the value is recorded in each file, so files
/// of both kinds can be read whatever the options say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyEncodingType {
    /// Every key written in full (`kPlain` = 0).
    #[default]
    Plain = 0,
    /// Keys after the first of a prefix share that prefix and store only their suffix
    /// (`kPrefix` = 1; needs a prefix extractor).
    Prefix = 1,
}

/// RocksDB's `PlainTableOptions` (the `rocksdb` crate's name is `PlainTableFactoryOptions`).
#[derive(Debug, Clone, PartialEq)]
pub struct PlainTableFactoryOptions {
    /// Length of every user key, or 0 for variable-length keys (written with a length).
    pub user_key_len: u32,
    /// Bloom bits per prefix (per key without a prefix extractor); 0 disables the bloom.
    pub bloom_bits_per_key: i32,
    /// Prefixes per hash bucket of the index. 0 puts everything in one bucket searched by binary
    /// search; without a prefix extractor RocksDB (and Shale) insist on 0 when opening.
    pub hash_table_ratio: f64,
    /// One index record (and, with `Prefix` encoding, one full key) every this many keys of a
    /// prefix.
    pub index_sparseness: usize,
    /// Accepted for compatibility; Shale allocates the index from the heap.
    pub huge_page_tlb_size: usize,
    /// Key encoding of files written.
    pub encoding_type: KeyEncodingType,
    /// Open without any index: only whole-file iteration (and linear seeks) work; `get` fails.
    pub full_scan_mode: bool,
    /// Write the index and bloom into the file so readers map them instead of rebuilding.
    pub store_index_in_file: bool,
}

impl Default for PlainTableFactoryOptions {
    fn default() -> Self {
        PlainTableFactoryOptions {
            user_key_len: 0,
            bloom_bits_per_key: 10,
            hash_table_ratio: 0.75,
            index_sparseness: 16,
            huge_page_tlb_size: 0,
            encoding_type: KeyEncodingType::Plain,
            full_scan_mode: false,
            store_index_in_file: false,
        }
    }
}

impl PlainTableFactoryOptions {
    /// Reject values RocksDB cannot work with; the error names the field.
    pub fn validate(&self) -> Result<()> {
        if self.bloom_bits_per_key < 0 {
            return Err(Error::invalid(format!(
                "plain_table_options.bloom_bits_per_key must be >= 0, got {}",
                self.bloom_bits_per_key
            )));
        }
        if !self.hash_table_ratio.is_finite() || self.hash_table_ratio < 0.0 {
            return Err(Error::invalid(format!(
                "plain_table_options.hash_table_ratio must be a finite number >= 0, got {}",
                self.hash_table_ratio
            )));
        }
        if self.hash_table_ratio > 0.0 && self.hash_table_ratio < MIN_HASH_TABLE_RATIO {
            return Err(Error::invalid(format!(
                "plain_table_options.hash_table_ratio must be 0 or at least {MIN_HASH_TABLE_RATIO} \
                 (more buckets than that per prefix only waste memory), got {}",
                self.hash_table_ratio
            )));
        }
        if self.user_key_len as u64 > MAX_FILE_SIZE {
            return Err(Error::invalid(format!(
                "plain_table_options.user_key_len {} is larger than a plain table file",
                self.user_key_len
            )));
        }
        Ok(())
    }

    /// Checks that depend on the prefix extractor too (builders need one for `Prefix` encoding).
    pub(crate) fn validate_for_build(&self, has_prefix_extractor: bool) -> Result<()> {
        self.validate()?;
        if self.encoding_type == KeyEncodingType::Prefix && !has_prefix_extractor {
            return Err(Error::invalid(
                "plain_table_options.encoding_type = Prefix needs a prefix_extractor",
            ));
        }
        Ok(())
    }

    /// `index_sparseness` as the encoder and the index use it (0 behaves as 1).
    pub(crate) fn sparseness(&self) -> usize {
        self.index_sparseness.max(1)
    }
}
