//! The engine: the runtime under the public `DB` handle, which it never names. Shared state
//! (`state.rs`), column families (`column_family.rs`, `families.rs`), the write path
//! (`write.rs` and the files it calls), reads (`read.rs`, `lookup.rs`, `multi_get.rs`, `iter/`),
//! background jobs (`flush.rs`, `compaction.rs`, `subcompaction.rs`, `build.rs`,
//! `background.rs`, `error_handler.rs`, `purge.rs`), open and recovery (`open.rs`), two-phase
//! commit's WAL state (`two_pc*.rs`, `prepared_wals.rs`), WAL tailing (`wal_tailing.rs`) and the
//! LOG lines (`events.rs`). See docs/architecture.md.

pub(crate) mod background;
pub(crate) mod blob_output;
pub(crate) mod checks;
pub(crate) mod column_family;
pub(crate) mod compaction;
pub(crate) mod error_handler;
pub(crate) mod events;
pub(crate) mod families;
pub(crate) mod flush;
pub(crate) mod iter;
pub(crate) mod job_stats;
pub(crate) mod key_compaction;
pub(crate) mod lookup;
pub(crate) mod manual;
pub(crate) mod mem_insert;
pub(crate) mod multi_get;
pub(crate) mod open;
pub(crate) mod prepared_wals;
pub(crate) mod properties;
pub(crate) mod purge;
pub(crate) mod range_del;
pub(crate) mod read;
pub(crate) mod secondary;
pub(crate) mod secondary_tails;
pub(crate) mod secondary_wal;
pub(crate) mod sst_file_writer;
pub(crate) mod stall;
pub(crate) mod state;
pub(crate) mod subcompaction;
pub(crate) mod switch;
pub(crate) mod table_cache;
pub(crate) mod table_output;
pub(crate) mod timestamps;
pub(crate) mod ts_compaction;
pub(crate) mod two_pc;
pub(crate) mod two_pc_replay;
pub(crate) mod wal_files;
pub(crate) mod wal_tailing;
pub(crate) mod write;
pub(crate) mod write_group;
pub(crate) mod write_stall;
pub(crate) mod write_thread;
pub(crate) mod write_two_pc;

pub use column_family::{AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor, DEFAULT_COLUMN_FAMILY_NAME};
pub use iter::{DBIterator, DBRawIterator, Direction, IteratorMode};
pub use sst_file_writer::SstFileWriter;
pub use wal_tailing::DBWALIterator;
