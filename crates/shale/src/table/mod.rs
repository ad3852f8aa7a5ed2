//! Table files (SSTs) in RocksDB's three formats: `block_based/`, `plain/` and `cuckoo/`, and
//! what they share: the dispatch over the formats (`any`), blocks (the properties and
//! metaindex blocks of every format), handles, magic numbers and the public checksum and
//! compression types (`format`), the properties (`properties`), reader options and what a
//! builder reports (`info`), the block cache and pinned values.

pub(crate) mod any;
pub(crate) mod block;
pub(crate) mod block_based;
pub(crate) mod block_dir;
pub(crate) mod cache;
pub(crate) mod cuckoo;
pub(crate) mod format;
pub(crate) mod hints;
pub(crate) mod info;
pub(crate) mod pinnable;
pub(crate) mod plain;
pub(crate) mod properties;
pub(crate) mod reader_options;
#[cfg(test)]
pub(crate) mod vec_file;
