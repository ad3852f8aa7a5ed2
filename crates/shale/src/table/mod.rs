//! Block-based tables (SST files) in RocksDB's exact format: building, reading, blocks,
//! filters, footers, checksums and compression. See `docs/rocksdb-format.md` §6 and
//! `docs/rocksdb-format-modern.md` §1–3.
//!
//! Entry points: [`TableBuilder`] (write), [`Table`] (read, with [`TableIterator`]),
//! [`block_checksum`] / [`checksum_modifier`] (trailer checksums).

pub(crate) mod block;
pub(crate) mod builder;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod reader;

#[cfg(test)]
mod tests;

pub(crate) use builder::{TableBuilder, TableBuilderOptions, TableInfo};
pub(crate) use format::{block_checksum, checksum_modifier, BlockHandle, Footer};
pub(crate) use reader::{Table, TableIterator, TableProperties, TableReaderOptions};
