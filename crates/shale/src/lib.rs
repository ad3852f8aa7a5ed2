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
mod backup;
mod coding;
mod compaction;
pub mod compaction_filter;
mod engine;
mod error;
mod error_kind;
mod fs;
mod hash;
mod info_log;
mod iterator;
mod key;
mod log;
mod lsm;
mod memtable;
pub mod merge;
mod options;
mod perf_context;
mod range_del;
mod slice_transform;
mod snapshot;
mod statistics;
mod table;
mod txn;
mod write_batch;
mod write_buffer_manager;

pub mod tools;

/// Internal decoders for the fuzz targets (`fuzz/`); not a stable API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use api::{
    Checkpoint, DBWithThreadMode, IngestExternalFileOptions, LiveFile, MultiThreaded, Range, SingleThreaded,
    ThreadMode, WalFile, DB,
};
pub use backup::{BackupEngine, BackupEngineInfo, BackupEngineOptions, Env, RestoreOptions};
pub use compaction_filter::{
    CompactionDecision, CompactionFilter, CompactionFilterContext, CompactionFilterFactory, Decision,
};
pub use engine::{
    AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor, DBIterator, DBRawIterator, DBWALIterator, Direction,
    IteratorMode, SstFileWriter, DEFAULT_COLUMN_FAMILY_NAME,
};
pub use error::{Error, Result};
pub use error_kind::ErrorKind;
#[doc(hidden)]
pub use fs::kill_inside_wal_appends;
pub use fs::{
    FaultFs, FaultKind, FileLock, FileSystem, ForwardingFs, IoActivity, MemFs, PosixFs, RandomAccessFile, WritableFile,
};
pub use info_log::LogLevel;
pub use key::{BytewiseComparator, Comparator, ReverseBytewiseComparator, Uint64Comparator};
pub use log::WalRecoveryMode;
pub use memtable::MemtableFactory;
pub use merge::{AssociativeMergeOperator, MergeOperator, StringAppendOperator, UInt64AddOperator};
pub use options::block_based::BlockBasedOptions;
pub use options::compaction::{
    DBCompactionStyle, FifoCompactOptions, UniversalCompactOptions, UniversalCompactionStopStyle,
};
pub use options::setters::{CompareFn, DBCompressionType, MergeOperands, MergeOperandsIter};
pub use options::{CompactionPri, Options, ReadOptions, TableFactory, WriteOptions};
pub use perf_context::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
pub use slice_transform::{
    new_capped_prefix_transform, new_fixed_prefix_transform, new_noop_transform, slice_transform_from_name,
    CappedPrefixTransform, FixedPrefixTransform, NoopTransform, SliceTransform,
};
pub use snapshot::Snapshot;
pub use statistics::{Histogram, HistogramData, NameParseError, StatsLevel, Ticker};
pub use table::block_based::partitioned_index::BlockBasedIndexType;
pub use table::cache::Cache;
pub use table::cuckoo::CuckooTableOptions;
pub use table::format::{ChecksumType, CompressionType};
pub use table::pinnable::DBPinnableSlice;
pub use table::plain::{KeyEncodingType, PlainTableFactoryOptions, PlainTableOptions};
pub use txn::{
    OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, TransactionDB, TransactionDBOptions,
    TransactionOptions, TxnIterator, TxnRawIterator, WriteBatchWithIndex,
};
pub use write_batch::WriteBatch;
pub use write_buffer_manager::WriteBufferManager;
