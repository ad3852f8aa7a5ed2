//! Every option type: `Options` with `ReadOptions` and `WriteOptions` (`types.rs`), the
//! `rocksdb` crate's setters (`setters.rs`), the block-based table options (`block_based.rs`),
//! the universal and FIFO compaction options (`compaction.rs`), RocksDB's OPTIONS file
//! (`file.rs`), and options that change while the DB runs (`live.rs`).

pub(crate) mod block_based;
pub(crate) mod compaction;
pub(crate) mod file;
pub(crate) mod live;
pub(crate) mod setters;
pub(crate) mod types;

pub use types::{CompactionPri, Options, ReadOptions, TableFactory, WriteOptions};
