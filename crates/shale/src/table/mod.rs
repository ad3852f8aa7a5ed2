//! Block-based tables (SST files) in RocksDB's exact format: building, reading, blocks,
//! filters, footers, checksums and compression. See `docs/rocksdb-format.md` §6 and
//! `docs/rocksdb-format-modern.md` §1–3.

pub(crate) mod block;
pub(crate) mod filter;
pub(crate) mod format;

pub(crate) use format::{block_checksum, checksum_modifier, BlockHandle, Footer};
