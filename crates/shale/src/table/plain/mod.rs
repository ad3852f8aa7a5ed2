//! PlainTable SST files in RocksDB's format (`docs/formats.md`): one
//! run of records (no blocks, checksums or compression), then optional bloom and index blocks,
//! the properties block, the metaindex block and the 48-byte legacy footer.
//!
//! Meant for files read through `mmap` (tmpfs, RAM): the reader keeps the whole file in memory
//! (the mapping, or a copy), builds a hash index over key prefixes at open (or maps the one
//! stored in the file) and answers point lookups from it.
//!
//! Entry points: [`PlainTableBuilder`] (write), [`PlainTable`] (read, with
//! [`PlainTableIterator`]); options in [`PlainTableFactoryOptions`].

pub(crate) mod bloom;
pub(crate) mod builder;
pub(crate) mod coding;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod props;
pub(crate) mod reader;
pub mod tools;

#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use builder::{PlainTableBuilder, PlainTableBuilderOptions};
pub use format::{KeyEncodingType, PlainTableFactoryOptions};
#[allow(unused_imports)]
pub(crate) use format::{
    BLOOM_BLOCK_NAME, INDEX_BLOCK_NAME, MAX_FILE_SIZE, MIN_HASH_TABLE_RATIO, PROP_BLOOM_VERSION, PROP_ENCODING_TYPE,
    PROP_NUM_BLOOM_BLOCKS,
};
#[allow(unused_imports)]
pub(crate) use reader::{PlainTable, PlainTableIterator};
