//! Every option type. Public here: [`TableFactory`], the table format `Options` name (the
//! `rocksdb` crate's options types themselves are at the crate root). Inside: `Options` with
//! `ReadOptions` and `WriteOptions` (`types.rs`), the `rocksdb` crate's setters (`setters.rs`),
//! the block-based table options (`block_based.rs`), RocksDB's DB-wide tuning settings
//! (`db_knobs.rs`), the universal and FIFO compaction options
//! (`compaction.rs`), RocksDB's OPTIONS file (`file.rs`), and options that change while the DB
//! runs (`live.rs`).

pub(crate) mod blob;
pub(crate) mod blob_setters;
pub(crate) mod block_based;
pub(crate) mod compaction;
pub(crate) mod db_knobs;
pub(crate) mod file;
pub(crate) mod filter_source;
pub(crate) mod iter_range;
pub(crate) mod knob_setters;
pub(crate) mod live;
pub(crate) mod setters;
pub(crate) mod types;

pub use types::TableFactory;
pub(crate) use types::{CompactionPri, FlushOptions, Options, ReadOptions, WriteOptions};
