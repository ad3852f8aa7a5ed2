//! The public face: `DBAccess` and the snapshot and raw-iterator types it ties to a DB
//! (`access.rs`), and every `impl DB` block — opening and the data calls (`db.rs`), column
//! families (`column_families.rs`), the `rocksdb` crate's compatibility calls and thread-mode
//! aliases (`rocksdb_compat.rs`), checkpoints and live-file listings (`checkpoint.rs`), ingest
//! (`ingest.rs`), `Options::load_latest` (`load_options.rs`), live option changes (`set_options.rs`), user-defined timestamps' calls (`timestamps.rs`), the memory a DB uses (`memory.rs`). Each calls into `engine`.

pub(crate) mod access;
pub(crate) mod checkpoint;
pub(crate) mod column_families;
pub(crate) mod db;
#[cfg(test)]
mod file_drop_race_tests;
pub(crate) mod ingest;
pub(crate) mod load_options;
pub(crate) mod memory;
#[cfg(test)]
mod picker_tests;
pub(crate) mod rocksdb_compat;
pub(crate) mod secondary;
pub(crate) mod set_options;
pub(crate) mod timestamps;

pub use access::{DBAccess, DBRawIteratorWithThreadMode, SnapshotWithThreadMode};
pub use checkpoint::{Checkpoint, LiveFile, WalFile};
pub use column_families::Range;
pub use db::DB;
pub use ingest::IngestExternalFileOptions;
pub use rocksdb_compat::{CSlice, ColumnFamilyMetaData, DBWithThreadMode, MultiThreaded, SingleThreaded, ThreadMode};
