//! Block-based tables (SST files) in RocksDB's exact format: building, reading, blocks,
//! filters, footers, checksums and compression. See `docs/rocksdb-format.md` §6 and
//! `docs/rocksdb-format-modern.md` §1–3.
//!
//! Entry points: [`TableBuilder`] (write), [`Table`] (read, with [`TableIterator`]),
//! [`block_checksum`] / [`checksum_modifier`] (trailer checksums).

#![allow(dead_code)] // the engine modules using this API are built in parallel branches

pub(crate) mod any;
pub(crate) mod block;
pub(crate) mod builder;
pub(crate) mod cuckoo;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod plain;
pub(crate) mod reader;

#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use builder::{TableBuilder, TableBuilderOptions, TableInfo};
#[allow(unused_imports)]
pub(crate) use format::{block_checksum, checksum_modifier, BlockHandle, Footer};
#[allow(unused_imports)]
pub(crate) use reader::{Table, TableIterator, TableProperties, TableReaderOptions};
