//! CuckooTable SST files in RocksDB's format (magic `0x926789d0c5f17873`, `docs/formats.md`):
//! a hash table of fixed-size buckets for point lookups in RAM.
//!
//! * [`CuckooTableBuilder`] collects the entries of one file, places them by cuckoo hashing
//!   (see [`hash`]) and writes buckets, properties, metaindex and footer.
//! * [`CuckooTable`] holds a whole file in memory and answers `get_with` / `multi_get` with one
//!   or two cache misses; its iterator sorts the occupied buckets on first use.

pub(crate) mod builder;
pub(crate) mod format;
pub(crate) mod hash;
pub(crate) mod reader;

#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use builder::{CuckooTableBuilder, CuckooTableBuilderOptions};
pub use format::CuckooTableOptions;
#[allow(unused_imports)]
pub(crate) use format::{decode_footer, encode_footer, prop, MAX_CUCKOO_BLOCK_SIZE, MAX_NUM_HASH_FUNC};
#[allow(unused_imports)]
pub(crate) use reader::{CuckooTable, CuckooTableIterator};
