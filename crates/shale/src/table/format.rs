//! What the three table formats share of the on-disk format: the magic numbers that tell them
//! apart, the footer sizes, block handles, the checksum and compression types the options name,
//! and the name of the properties block (`docs/format-details.md`).

use crate::coding::{get_varint64, put_varint64, Reader};
use crate::error::{Error, Result};

pub(crate) const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
pub(crate) const LEGACY_BLOCK_BASED_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
pub(crate) const PLAIN_MAGIC: u64 = 0x8242_2296_63bf_9564;
pub(crate) const LEGACY_PLAIN_MAGIC: u64 = 0x4f34_18eb_7a8f_13b8;
pub(crate) const CUCKOO_MAGIC: u64 = 0x9267_89d0_c5f1_7873;
/// Size of the fv>=1 footer (and the most a reader reads).
pub(crate) const FOOTER_LEN: usize = 53;
pub(crate) const LEGACY_FOOTER_LEN: usize = 48;

/// Block checksum algorithm (RocksDB's `ChecksumType`, same numeric values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumType {
    /// No block checksums are written or checked.
    NoChecksum = 0,
    /// CRC32C, masked as LevelDB masks it.
    CRC32c = 1,
    /// 32-bit xxHash.
    XxHash = 2,
    /// 64-bit xxHash, truncated to 32 bits.
    XxHash64 = 3,
    /// XXH3, truncated to 32 bits (the default).
    XXH3 = 4,
}

impl ChecksumType {
    /// From the byte stored in a footer; `None` for an unknown value.
    pub fn from_u8(v: u8) -> Option<ChecksumType> {
        Some(match v {
            0 => ChecksumType::NoChecksum,
            1 => ChecksumType::CRC32c,
            2 => ChecksumType::XxHash,
            3 => ChecksumType::XxHash64,
            4 => ChecksumType::XXH3,
            _ => return None,
        })
    }
    /// Parse a name as db_bench spells it (`crc32c`, `xxhash`, `xxhash64`, `xxh3`, `none`) or a number.
    pub fn parse(s: &str) -> Result<ChecksumType> {
        let t = match s.to_ascii_lowercase().as_str() {
            "0" | "none" | "nochecksum" | "knochecksum" => ChecksumType::NoChecksum,
            "1" | "crc32c" | "kcrc32c" => ChecksumType::CRC32c,
            "2" | "xxhash" | "kxxhash" => ChecksumType::XxHash,
            "3" | "xxhash64" | "kxxhash64" => ChecksumType::XxHash64,
            "4" | "xxh3" | "kxxh3" => ChecksumType::XXH3,
            _ => return Err(Error::invalid(format!("checksum_type: unknown checksum type {s:?}"))),
        };
        Ok(t)
    }
}

/// Block compression (RocksDB's `CompressionType`, same numeric values; the `rocksdb` crate's `DBCompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DBCompressionType {
    /// Blocks are stored uncompressed (the default).
    None = 0,
    /// Snappy compression.
    Snappy = 1,
    /// Zlib compression (RocksDB's `kZlibCompression`: a raw deflate stream).
    Zlib = 2,
    /// BZip2 compression (RocksDB's `kBZip2Compression`).
    Bz2 = 3,
    /// LZ4 compression (RocksDB's `kLZ4Compression`).
    Lz4 = 4,
    /// LZ4 high compression (RocksDB's `kLZ4HCCompression`): the same LZ4 block format, so
    /// any LZ4 decoder reads it. Shale writes it with its LZ4 encoder (a valid LZ4 block, the
    /// ratio of plain LZ4, not of LZ4's high-compression search).
    Lz4hc = 5,
    /// Zstandard compression.
    Zstd = 7,
}

impl DBCompressionType {
    /// Parse a name as db_bench spells it (`none`, `snappy`, `zlib`, `bzip2`, `lz4`, `lz4hc`,
    /// `zstd`).
    pub fn parse(s: &str) -> Result<DBCompressionType> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "none" | "no" | "nocompression" => DBCompressionType::None,
            "snappy" => DBCompressionType::Snappy,
            "zlib" => DBCompressionType::Zlib,
            "bzip2" | "bz2" => DBCompressionType::Bz2,
            "lz4" => DBCompressionType::Lz4,
            "lz4hc" => DBCompressionType::Lz4hc,
            "zstd" => DBCompressionType::Zstd,
            _ => {
                return Err(Error::invalid(format!(
                    "compression_type: unknown or unsupported compression {s:?}"
                )))
            }
        })
    }
    /// RocksDB's name for the `rocksdb.compression` property.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            DBCompressionType::None => "NoCompression",
            DBCompressionType::Snappy => "Snappy",
            DBCompressionType::Zlib => "Zlib",
            DBCompressionType::Bz2 => "BZip2",
            DBCompressionType::Lz4 => "LZ4",
            DBCompressionType::Lz4hc => "LZ4HC",
            DBCompressionType::Zstd => "ZSTD",
        }
    }
}

/// Location of a block: `offset:varint64 | size:varint64` (size excludes the trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlockHandle {
    pub offset: u64,
    pub size: u64,
}

impl BlockHandle {
    pub(crate) const MAX_ENCODED_LEN: usize = 20;
    pub(crate) fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }
    pub(crate) fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }
    pub(crate) fn encoded(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::MAX_ENCODED_LEN);
        self.encode_to(&mut v);
        v
    }
    /// Decode from the front of `b`; returns the handle and the bytes used.
    pub(crate) fn decode(b: &[u8]) -> Option<(BlockHandle, usize)> {
        let (offset, n1) = get_varint64(b)?;
        let (size, n2) = get_varint64(&b[n1..])?;
        Some((BlockHandle { offset, size }, n1 + n2))
    }
    pub(crate) fn decode_from(r: &mut Reader<'_>) -> Option<BlockHandle> {
        let offset = r.varint64()?;
        let size = r.varint64()?;
        Some(BlockHandle { offset, size })
    }
    pub(crate) fn is_null(&self) -> bool {
        self.offset == 0 && self.size == 0
    }
}

/// Metaindex name of the properties block (every format has one).
pub(crate) const PROPERTIES_NAME: &str = "rocksdb.properties";
