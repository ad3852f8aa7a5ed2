//! The database: public handle and shared state. The work is split by concern:
//! `open` (open, recovery, destroy), `write` (group commit, memtable switch, stalls), `read`
//! (get, multi_get), `iter` (merging and user iterators), `flush`, `compaction` (picker and job),
//! `background` (worker threads), `version` (versions and the MANIFEST), `props` (properties).

pub(crate) mod background;
pub(crate) mod build;
pub(crate) mod cf_api;
pub use cf_api::Range;
pub(crate) mod checkpoint;
pub(crate) mod column_family;
pub(crate) mod compaction;
pub(crate) mod compat_api;
pub(crate) mod error_handler;
pub(crate) mod events;
pub(crate) mod families;
pub(crate) mod flush;
pub(crate) mod ingest;
pub(crate) mod iter;
pub(crate) mod job_stats;
pub(crate) mod key_compaction;
pub(crate) mod live_options;
pub(crate) mod lookup;
pub(crate) mod multi_get;
pub(crate) mod open;
pub(crate) mod options_file;
#[cfg(test)]
pub(crate) mod picker_db_tests;
pub(crate) mod set_options;
pub(crate) use options_file::apply_latest as apply_options_file;
pub(crate) use options_file::apply_latest_cf as apply_options_file_cf;
pub(crate) mod prepared_wals;
pub(crate) mod props;
pub(crate) mod purge;
pub(crate) mod range_del;
pub(crate) mod read;
pub(crate) mod sst_file_writer;
pub(crate) mod stall;
pub(crate) mod subcompaction;
pub(crate) mod table_cache;
pub(crate) mod two_pc;
pub(crate) mod two_pc_replay;
pub(crate) mod wal_iter;
pub use wal_iter::DBWALIterator;
pub(crate) mod checks;
pub(crate) mod mem_insert;
pub(crate) mod switch;
pub(crate) mod write;
pub(crate) mod write_group;
pub(crate) mod write_stall;
pub(crate) mod write_thread;
pub(crate) mod write_two_pc;
#[cfg(feature = "fuzzing")]
pub(crate) use mem_insert::MemInserter;
pub(crate) mod handle;
pub(crate) mod state;

pub use crate::snapshot::Snapshot;
pub use checkpoint::{Checkpoint, LiveFile, WalFile};
pub(crate) use column_family::ColumnFamilyData;
pub use column_family::{AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor, DEFAULT_COLUMN_FAMILY_NAME};
pub use compat_api::{DBWithThreadMode, MultiThreaded, SingleThreaded, ThreadMode};
pub(crate) use handle::verify_all_tables;
pub use handle::DB;
pub use ingest::IngestExternalFileOptions;
pub use iter::{DBIterator, DBRawIterator, Direction, IteratorMode};
pub use sst_file_writer::SstFileWriter;
pub(crate) use state::DbInner;
