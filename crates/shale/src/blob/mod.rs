//! Integrated blob files (key-value separation) in RocksDB's format: large values live in
//! `NNNNNN.blob` files and the table holds a `kTypeBlobIndex` entry pointing at them.
//! See `docs/blob-files.md`.

pub(crate) mod changes;
pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod reader;
pub(crate) mod writer;
