//! Shale: a persistent LSM key-value store for flash and RAM that keeps RocksDB's on-disk
//! formats (WAL, MANIFEST, block-based SST), so RocksDB's tools open Shale's databases and Shale
//! opens RocksDB's.
//!
//! ```no_run
//! use shale::{Options, DB};
//! let mut opts = Options::default();
//! opts.create_if_missing(true);
//! let db = DB::open(&opts, "/tmp/shale-example").unwrap();
//! db.put(b"key", b"value").unwrap();
//! assert_eq!(db.get(b"key").unwrap().as_deref(), Some(&b"value"[..]));
//! ```

#![warn(missing_docs)]

mod api;
pub mod backup;
#[allow(dead_code)] // used by the engine from the next commit on
mod blob;
mod coding;
mod compaction;
pub mod compaction_filter;
pub mod compaction_filter_factory;
mod engine;
mod env;
pub mod error;
mod error_kind;
pub mod fs;
mod hash;
mod info_log;
mod iterator;
mod key;
mod log;
mod lsm;
mod memory_usage;
mod memtable;
pub mod merge_operator;
pub mod options;
mod perf_context;
pub mod properties;
mod range_del;
pub mod slice_transform;
mod snapshot;
pub mod statistics;
mod table;
pub mod txn;
mod user_timestamp;
pub mod wide_columns;
mod write_batch;
mod write_buffer_manager;

pub mod tools;

/// Internal decoders for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

/// Checkpoints (the `rocksdb` crate's `checkpoint` module): an openable copy of a live
/// database made of hard links where possible, and the WAL list it is built from.
pub mod checkpoint {
    pub use crate::api::{Checkpoint, WalFile};
    pub use crate::txn::checkpoint::TransactionDBCheckpoint;
}

/// Performance counters (the `rocksdb` crate's `perf` module): the per-thread perf context as
/// RocksDB's `PerfContext` (`set_perf_stats`, `PerfContext::report`) — what one thread's
/// operations did (key comparisons, blocks read, time in the memtable, the WAL, …), counted
/// once a thread raises its level — and the approximate memory use of DBs and caches
/// (`MemoryUsageBuilder`, `get_memory_usage_stats`).
pub mod perf {
    pub use crate::memory_usage::{get_memory_usage_stats, MemoryUsage, MemoryUsageBuilder, MemoryUsageStats};
    pub use crate::perf_context::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
}

/// Types that `DB` calls return which the `rocksdb` crate keeps in modules of its own
/// (`ColumnFamilyMetaData` from `get_column_family_metadata`, `CSlice` from
/// `key_may_exist_cf_opt_value`).
pub mod db {
    pub use crate::api::{CSlice, ColumnFamilyMetaData};
}

/// Key orderings: the comparator trait, RocksDB's built-in comparators under their names, and
/// the closure form [`Options::set_comparator`](crate::Options::set_comparator) takes.
pub mod comparator {
    pub use crate::key::{BytewiseComparator, Comparator, ReverseBytewiseComparator, Uint64Comparator};
    pub use crate::options::setters::{CompareFn, CompareTsFn, CompareWithoutTsFn};
    pub use crate::user_timestamp::{BytewiseComparatorWithU64Ts, ReverseBytewiseComparatorWithU64Ts};
}

pub use api::{
    DBAccess, DBRawIteratorWithThreadMode, DBWithThreadMode, IngestExternalFileOptions, LiveFile, MultiThreaded, Range,
    SingleThreaded, SnapshotWithThreadMode, ThreadMode, DB,
};
pub use compaction_filter::Decision as CompactionDecision;
pub use engine::{
    AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor, DBIterator, DBRawIterator, DBWALIterator, Direction,
    IteratorMode, SstFileWriter, DEFAULT_COLUMN_FAMILY_NAME,
};
pub use env::Env;
pub use error::Error;
pub use error_kind::ErrorKind;
pub use info_log::LogLevel;
pub use log::DBRecoveryMode;
pub use memtable::MemtableFactory;
pub use merge_operator::MergeOperands;
pub use options::block_based::BlockBasedOptions;
pub use options::compaction::{
    DBCompactionStyle, FifoCompactOptions, UniversalCompactOptions, UniversalCompactionStopStyle,
};
pub use options::iter_range::{IterateBounds, PrefixRange};
pub use options::types::{
    BottommostLevelCompaction, CompactOptions, CompactionPri, FlushOptions, Options, ReadOptions,
    WaitForCompactOptions, WriteOptions,
};
pub use perf::{PerfContext, PerfMetric, PerfStatsLevel};
pub use properties::CStrLike;
pub use slice_transform::SliceTransform;
pub use snapshot::Snapshot;
pub use table::block_based::partitioned_index::BlockBasedIndexType;
pub use table::cache::{Cache, LruCacheOptions};
pub use table::cuckoo::CuckooTableOptions;
pub use table::format::{ChecksumType, DBCompressionType};
pub use table::pinnable::DBPinnableSlice;
pub use table::plain::{KeyEncodingType, PlainTableFactoryOptions};
pub use txn::optimistic::{OptimisticTransactionDB, OptimisticTransactionOptions};
pub use txn::pessimistic::{TransactionDB, TransactionDBOptions, TransactionOptions};
pub use txn::transaction::Transaction;
pub use write_batch::{WriteBatch, WriteBatchIterator, WriteBatchIteratorCf, WriteBatchWithTransaction};
pub use write_buffer_manager::WriteBufferManager;
