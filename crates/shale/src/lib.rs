//! Shale: a persistent LSM key-value store for flash and RAM that keeps RocksDB's on-disk formats.

mod coding;
mod error;
mod fs;
mod iterator;
mod key;
mod options;

pub(crate) mod cache;
pub(crate) mod hash;
pub(crate) mod log;
pub(crate) mod memtable;
pub(crate) mod table;
pub(crate) mod version_edit;
pub(crate) mod write_batch;

pub mod db;

pub use error::{Error, Result};
pub use fs::{FaultFs, FaultKind, FileSystem, MemFs, PosixFs, RandomAccessFile, WritableFile};
pub use key::{BytewiseComparator, Comparator, ReverseBytewiseComparator};
pub use options::{ChecksumType, CompressionType, Options, ReadOptions, WalRecoveryMode, WriteOptions};
