//! Block-based tables (SST files) in RocksDB's exact format: building, reading, blocks,
//! filters, footers, checksums and compression. See `docs/format-details.md`.
//!
//! Entry points: [`TableBuilder`] (write), [`Table`] (read, with [`TableIterator`]),
//! [`block_checksum`] / [`checksum_modifier`] (trailer checksums).

pub(crate) mod any;
pub(crate) mod block;
pub(crate) mod block_dir;
pub(crate) mod builder;
pub(crate) mod cache;
pub(crate) mod cuckoo;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod hints;
pub(crate) mod partitioned_index;
pub(crate) mod pinnable;
pub(crate) mod plain;
pub(crate) mod prefix_filter;
pub(crate) mod reader;

#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use builder::{TableBuilder, TableBuilderOptions, TableInfo};
#[allow(unused_imports)]
pub(crate) use format::{block_checksum, checksum_modifier, BlockHandle, Footer};
#[allow(unused_imports)]
pub(crate) use reader::{Table, TableIterator, TableProperties, TableReaderOptions};
