//! CuckooTable's format: its options (RocksDB's `CuckooTableOptions`), limits, property
//! names and footer.

use crate::coding::put_fixed64;
use crate::error::{Error, Result};
use crate::table::format::{BlockHandle, CUCKOO_MAGIC, FOOTER_LEN};

/// Options of RocksDB's `CuckooTableOptions`.
#[derive(Clone, Debug, PartialEq)]
pub struct CuckooTableOptions {
    /// Fraction of the hash table the entries may fill (0 < ratio <= 1; default 0.9). With
    /// `use_module_hash` the table has `floor(entries / ratio)` buckets, otherwise the smallest
    /// power of two at least `entries / ratio`.
    pub hash_table_ratio: f64,
    /// Depth limit of the breadth-first search for a displacement path (default 100).
    pub max_search_depth: u32,
    /// Buckets probed after each hash location (default 5, at least 1).
    pub cuckoo_block_size: u32,
    /// Use the key's first 8 bytes (little-endian) as the first hash; keys must be 8+ bytes.
    pub identity_as_first_hash: bool,
    /// Map hashes to buckets with `% table_size` (true) or a power-of-two mask (false).
    pub use_module_hash: bool,
}

impl Default for CuckooTableOptions {
    fn default() -> Self {
        CuckooTableOptions {
            hash_table_ratio: 0.9,
            max_search_depth: 100,
            cuckoo_block_size: 5,
            identity_as_first_hash: false,
            use_module_hash: true,
        }
    }
}

/// Upper bound on `cuckoo_block_size` (a block is meant to fit a cache line or two).
pub(crate) const MAX_CUCKOO_BLOCK_SIZE: u32 = 1 << 16;
/// Hash functions a builder may add (RocksDB's factory passes 64).
pub(crate) const MAX_NUM_HASH_FUNC: u32 = 64;

impl CuckooTableOptions {
    /// Sets [`hash_table_ratio`](Self::hash_table_ratio); a value outside (0, 1] makes
    /// `DB::open` fail with InvalidArgument naming it.
    pub fn set_hash_ratio(&mut self, ratio: f64) {
        self.hash_table_ratio = ratio;
    }
    /// Sets [`max_search_depth`](Self::max_search_depth); 0 makes `DB::open` fail with
    /// InvalidArgument naming it.
    pub fn set_max_search_depth(&mut self, depth: u32) {
        self.max_search_depth = depth;
    }
    /// Sets [`cuckoo_block_size`](Self::cuckoo_block_size); 0 or more than 65536 makes
    /// `DB::open` fail with InvalidArgument naming it.
    pub fn set_cuckoo_block_size(&mut self, size: u32) {
        self.cuckoo_block_size = size;
    }
    /// Sets [`identity_as_first_hash`](Self::identity_as_first_hash).
    pub fn set_identity_as_first_hash(&mut self, flag: bool) {
        self.identity_as_first_hash = flag;
    }
    /// Sets [`use_module_hash`](Self::use_module_hash).
    pub fn set_use_module_hash(&mut self, flag: bool) {
        self.use_module_hash = flag;
    }

    /// InvalidArgument naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let r = self.hash_table_ratio;
        if !(r.is_finite() && r > 0.0 && r <= 1.0) {
            return Err(Error::invalid(format!("hash_table_ratio must be in (0, 1], got {r}")));
        }
        if self.max_search_depth == 0 {
            return Err(Error::invalid("max_search_depth must be at least 1"));
        }
        if self.cuckoo_block_size == 0 || self.cuckoo_block_size > MAX_CUCKOO_BLOCK_SIZE {
            return Err(Error::invalid(format!(
                "cuckoo_block_size must be in 1..={MAX_CUCKOO_BLOCK_SIZE}, got {}",
                self.cuckoo_block_size
            )));
        }
        Ok(())
    }
}

/// Names of the user-collected properties every cuckoo file carries.
pub(crate) mod prop {
    pub const EMPTY_KEY: &str = "rocksdb.cuckoo.bucket.empty.key";
    pub const NUM_HASH_FUNC: &str = "rocksdb.cuckoo.hash.num";
    pub const HASH_TABLE_SIZE: &str = "rocksdb.cuckoo.hash.size";
    pub const VALUE_LENGTH: &str = "rocksdb.cuckoo.value.length";
    pub const IS_LAST_LEVEL: &str = "rocksdb.cuckoo.file.islastlevel";
    pub const CUCKOO_BLOCK_SIZE: &str = "rocksdb.cuckoo.hash.cuckooblocksize";
    pub const IDENTITY_AS_FIRST_HASH: &str = "rocksdb.cuckoo.hash.identityfirst";
    pub const USE_MODULE_HASH: &str = "rocksdb.cuckoo.hash.usemodule";
    pub const USER_KEY_LENGTH: &str = "rocksdb.cuckoo.hash.userkeylength";
}

/// Footer of a cuckoo file: 53 bytes, checksum byte 0, format_version 1, a null index handle.
pub(crate) fn encode_footer(metaindex: BlockHandle) -> Vec<u8> {
    let mut v = Vec::with_capacity(FOOTER_LEN);
    v.push(0);
    metaindex.encode_to(&mut v);
    BlockHandle::new(0, 0).encode_to(&mut v);
    v.resize(1 + 2 * BlockHandle::MAX_ENCODED_LEN, 0);
    v.extend_from_slice(&1u32.to_le_bytes());
    put_fixed64(&mut v, CUCKOO_MAGIC);
    v
}

/// Decode a cuckoo footer (the last 53 bytes of a file of `file_size` bytes): the metaindex
/// handle, checked to lie before the footer. Errors are Corruption without file name.
pub(crate) fn decode_footer(tail: &[u8], file_size: u64) -> Result<BlockHandle> {
    if tail.len() != FOOTER_LEN {
        return Err(Error::corrupt(format!(
            "file is too short ({file_size} bytes) to be an sst file"
        )));
    }
    let magic = u64::from_le_bytes(tail[FOOTER_LEN - 8..].try_into().unwrap_or_default());
    if magic != CUCKOO_MAGIC {
        return Err(Error::corrupt(format!(
            "bad table magic number {magic:#x} (expected the CuckooTable magic)"
        )));
    }
    let version = u32::from_le_bytes(tail[FOOTER_LEN - 12..FOOTER_LEN - 8].try_into().unwrap_or_default());
    if version != 1 {
        return Err(Error::corrupt(format!(
            "unsupported CuckooTable footer format_version {version}"
        )));
    }
    if tail[0] > 4 {
        return Err(Error::corrupt(format!("bad checksum type {} in footer", tail[0])));
    }
    let handles = &tail[1..1 + 2 * BlockHandle::MAX_ENCODED_LEN];
    let (meta, n) = BlockHandle::decode(handles).ok_or_else(|| Error::corrupt("bad metaindex handle in footer"))?;
    let (index, _) = BlockHandle::decode(&handles[n..]).ok_or_else(|| Error::corrupt("bad index handle in footer"))?;
    if !index.is_null() {
        return Err(Error::corrupt("CuckooTable footer has a non-null index handle"));
    }
    let body = file_size - FOOTER_LEN as u64;
    if meta.offset > body || meta.size > body - meta.offset {
        return Err(Error::corrupt(format!(
            "metaindex handle ({}, {}) points past the end of the data ({body} bytes)",
            meta.offset, meta.size
        )));
    }
    Ok(meta)
}
