//! Block-based tables (SST files) in RocksDB's exact format: building, reading, filters,
//! indexes, footers, checksums and compression. See `docs/format-details.md`.
//!
//! Entry points: `builder::TableBuilder` (write), `reader::Table` (read, with
//! `reader::TableIterator`), `format::block_checksum` / `format::checksum_modifier` (trailer
//! checksums).

pub(crate) mod builder;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod partitioned_index;
pub(crate) mod prefix_filter;
pub(crate) mod reader;

#[cfg(test)]
mod tests;
