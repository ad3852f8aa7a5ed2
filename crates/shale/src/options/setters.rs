//! `Options`' setters with the `rocksdb` crate's names and argument types, its getters, and the
//! crate's closure forms of comparators and merge operators.
//!
//! Integer arguments the crate takes as `c_int` are `i32` here; a negative value is kept as 0,
//! which opening rejects with InvalidArgument naming the option wherever 0 is invalid.

use std::cmp::Ordering;
use std::sync::Arc;

use super::compaction::DBCompactionStyle;
use super::compaction::{FifoCompactOptions, UniversalCompactOptions};
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::info_log::LogLevel;
use crate::key::Comparator;
use crate::merge_operator::{MergeOperands, MergeOperator};
use crate::options::{CompactionPri, Options, TableFactory};
// Through the crate root: these types may live in other modules, re-exported under these names.
use crate::log::DBRecoveryMode;
use crate::memtable::MemtableFactory;
use crate::slice_transform::PrefixExtractor;
use crate::table::format::{ChecksumType, DBCompressionType};
use crate::write_buffer_manager::WriteBufferManager;

/// A comparison function for [`Options::set_comparator`] (the `rocksdb` crate's `CompareFn`,
/// here also `Send + Sync` because a database is shared between threads).
pub type CompareFn = dyn Fn(&[u8], &[u8]) -> Ordering + Send + Sync;
/// A timestamp comparison for [`Options::set_comparator_with_ts`]: orders two timestamps,
/// older first (the `rocksdb` crate's `CompareTsFn`).
pub type CompareTsFn = dyn Fn(&[u8], &[u8]) -> Ordering + Send + Sync;
/// A comparison ignoring timestamps for [`Options::set_comparator_with_ts`]:
/// `f(a, a_has_ts, b, b_has_ts)` (the `rocksdb` crate's `CompareWithoutTsFn`).
pub type CompareWithoutTsFn = dyn Fn(&[u8], bool, &[u8], bool) -> Ordering + Send + Sync;

fn non_negative(v: i32) -> usize {
    usize::try_from(v).unwrap_or(0)
}

impl Options {
    /// Sets RocksDB's `paranoid_checks` (default true): recovery and MANIFEST updates check the LSM
    /// tree's consistency and fail with Corruption (naming the MANIFEST) when it breaks.
    pub fn set_paranoid_checks(&mut self, enabled: bool) {
        self.paranoid_checks = enabled;
    }
    /// Memtables (mutable and immutable) allowed before writers wait (at least 2).
    pub fn set_max_write_buffer_number(&mut self, nbuf: i32) {
        self.max_write_buffer_number = non_negative(nbuf);
    }
    /// Bytes of flushed memtables kept for transactions' conflict checks (0: none; -1:
    /// `max_write_buffer_number * write_buffer_size`).
    pub fn set_max_write_buffer_size_to_maintain(&mut self, size: i64) {
        self.max_write_buffer_size_to_maintain = size;
    }
    /// Immutable memtables merged into one L0 file per flush (at least 1).
    pub fn set_min_write_buffer_number_to_merge(&mut self, to_merge: i32) {
        self.min_write_buffer_number_to_merge = non_negative(to_merge);
    }
    /// The same as [`set_min_write_buffer_number_to_merge`](Self::set_min_write_buffer_number_to_merge).
    pub fn set_min_write_buffer_number(&mut self, nbuf: i32) {
        self.set_min_write_buffer_number_to_merge(nbuf);
    }
    /// Compression of table blocks on every level (unless `set_compression_per_level`).
    pub fn set_compression_type(&mut self, t: DBCompressionType) {
        self.compression = t;
    }
    /// Compression of files written to the bottommost level.
    pub fn set_bottommost_compression_type(&mut self, t: DBCompressionType) {
        self.bottommost_compression = Some(t);
    }
    /// Compression per level (see the `Options` field notes: with dynamic level bytes entry 1 is
    /// the base level).
    pub fn set_compression_per_level(&mut self, level_types: &[DBCompressionType]) {
        self.compression_per_level = level_types.to_vec();
    }
    /// Table files kept open (-1: unlimited; otherwise at least 10).
    pub fn set_max_open_files(&mut self, nfiles: i32) {
        self.max_open_files = nfiles;
    }
    /// How recovery treats a damaged WAL tail or record (default point-in-time recovery).
    pub fn set_wal_recovery_mode(&mut self, mode: DBRecoveryMode) {
        self.wal_recovery_mode = mode;
    }
    /// Sets `level0_file_num_compaction_trigger` (default 4): L0 files that start a compaction
    /// (negative: 0, refused at open with InvalidArgument).
    pub fn set_level_zero_file_num_compaction_trigger(&mut self, n: i32) {
        self.level0_file_num_compaction_trigger = non_negative(n);
    }
    /// Sets `level0_slowdown_writes_trigger` (default 20): L0 files at which writes are slowed to
    /// `delayed_write_rate`; must not exceed the stop trigger (InvalidArgument at open).
    pub fn set_level_zero_slowdown_writes_trigger(&mut self, n: i32) {
        self.level0_slowdown_writes_trigger = non_negative(n);
    }
    /// Sets `level0_stop_writes_trigger` (default 36): L0 files at which writes wait for compaction.
    pub fn set_level_zero_stop_writes_trigger(&mut self, n: i32) {
        self.level0_stop_writes_trigger = non_negative(n);
    }
    /// Sets `max_bytes_for_level_base` (default 256 MiB): the target size of the first level below
    /// L0 (0 is refused at open).
    pub fn set_max_bytes_for_level_base(&mut self, size: u64) {
        self.max_bytes_for_level_base = size;
    }
    /// Sets `max_bytes_for_level_multiplier` (default 10): each level's target size over the one
    /// above (must be greater than 1).
    pub fn set_max_bytes_for_level_multiplier(&mut self, mul: f64) {
        self.max_bytes_for_level_multiplier = mul;
    }
    /// Sets `target_file_size_base` (default 64 MiB): the size at which compaction cuts output files
    /// on the first level below L0 (0 is refused at open).
    pub fn set_target_file_size_base(&mut self, size: u64) {
        self.target_file_size_base = size;
    }
    /// Sets `target_file_size_multiplier` (default 1): the growth of the file size per level (at
    /// least 1).
    pub fn set_target_file_size_multiplier(&mut self, multiplier: i32) {
        self.target_file_size_multiplier = non_negative(multiplier) as u64;
    }
    /// Sets `max_compaction_bytes` (default 0: 25 × `target_file_size_base`): the most input bytes
    /// one compaction takes.
    pub fn set_max_compaction_bytes(&mut self, nbytes: u64) {
        self.max_compaction_bytes = nbytes;
    }
    /// Sets `level_compaction_dynamic_level_bytes` (default true): level targets are computed from
    /// the last level's size upwards.
    pub fn set_level_compaction_dynamic_level_bytes(&mut self, v: bool) {
        self.level_compaction_dynamic_level_bytes = v;
    }
    /// Which file of a level a size-triggered compaction picks (default min overlapping ratio).
    pub fn set_compaction_pri(&mut self, pri: CompactionPri) {
        self.compaction_pri = pri;
    }
    /// Sets `max_subcompactions` (default 1): parallel key ranges one compaction is split into (0
    /// is refused at open).
    pub fn set_max_subcompactions(&mut self, num: u32) {
        self.max_subcompactions = num as usize;
    }
    /// Sets `soft_pending_compaction_bytes_limit` (default 64 GiB): estimated compaction debt at
    /// which writes are slowed (0: no limit).
    pub fn set_soft_pending_compaction_bytes_limit(&mut self, limit: usize) {
        self.soft_pending_compaction_bytes_limit = limit as u64;
    }
    /// Sets `hard_pending_compaction_bytes_limit` (default 256 GiB): estimated compaction debt at
    /// which writes stop (0: no limit; must not be below the soft limit).
    pub fn set_hard_pending_compaction_bytes_limit(&mut self, limit: usize) {
        self.hard_pending_compaction_bytes_limit = limit as u64;
    }
    /// Sets `delayed_write_rate` in bytes per second (default 16 MiB/s; 0: the default): the rate
    /// writes are held to while slowed.
    pub fn set_delayed_write_rate(&mut self, rate: u64) {
        self.delayed_write_rate = rate;
    }
    /// Levels of the LSM tree (2..=64).
    pub fn set_num_levels(&mut self, n: i32) {
        self.num_levels = non_negative(n);
    }
    /// Stops automatic compactions (default false); manual ones still run, and L0 and pending-bytes
    /// write stalls are then not applied.
    pub fn set_disable_auto_compactions(&mut self, disable: bool) {
        self.disable_auto_compactions = disable;
    }
    /// The least severe messages written to the `LOG` file (RocksDB's `info_log_level`).
    pub fn set_log_level(&mut self, level: LogLevel) {
        self.info_log.level = level;
    }
    /// Roll the `LOG` file over to a new one past this many bytes (0: never).
    pub fn set_max_log_file_size(&mut self, size: usize) {
        self.info_log.max_log_file_size = size;
    }
    /// `LOG` files kept, the current one included (older `LOG.old.*` are removed).
    pub fn set_keep_log_file_num(&mut self, num: usize) {
        self.info_log.keep_log_file_num = num;
    }
    /// Dump `rocksdb.stats` into the `LOG` every `period` seconds (0: never).
    pub fn set_stats_dump_period_sec(&mut self, period: u32) {
        self.info_log.stats_dump_period_sec = period;
    }
    /// Sets RocksDB's `max_background_jobs` (default 2): threads for flushes and compactions
    /// (negative: 0, refused at open with InvalidArgument).
    pub fn set_max_background_jobs(&mut self, jobs: i32) {
        self.max_background_jobs = non_negative(jobs);
    }
    /// Followers of a write group insert their own batches into the memtable concurrently
    /// (default true, as RocksDB). With a memtable that cannot (the vector one) the leader
    /// inserts the whole group whatever this says.
    pub fn set_allow_concurrent_memtable_write(&mut self, allow: bool) {
        self.allow_concurrent_memtable_write = allow;
    }
    /// RocksDB's `enable_pipelined_write`: a write group's WAL write overlaps the memtable
    /// inserts of the group before it (writers still see groups whole and in order). Needs
    /// concurrent memtable inserts; without them (a vector memtable, or
    /// `allow_concurrent_memtable_write` off) groups run one after the other.
    pub fn set_enable_pipelined_write(&mut self, pipelined: bool) {
        self.enable_pipelined_write = pipelined;
    }
    /// RocksDB's `unordered_write`: a group's sequence numbers become visible right after its
    /// WAL write and its memtable inserts finish unordered with later groups'. Higher write
    /// throughput, weaker snapshots: until a write returns, a snapshot or read may see part of
    /// its batch (RocksDB's documented trade-off). Incompatible with `enable_pipelined_write`
    /// and needs `allow_concurrent_memtable_write`.
    pub fn set_unordered_write(&mut self, unordered: bool) {
        self.unordered_write = unordered;
    }
    /// RocksDB's `allow_2pc` (its C API's `rocksdb_options_set_allow_2pc`; the `rocksdb`
    /// crate has no setter): recovery keeps the WAL's prepared sections as recovered
    /// transactions and keeps their WALs, instead of failing with NotSupported.
    /// [`TransactionDB::open`](crate::TransactionDB::open) sets it, as RocksDB's does.
    pub fn set_allow_2pc(&mut self, allow: bool) {
        self.allow_2pc = allow;
    }
    /// Leave WAL records in the WAL buffer until [`DB::flush_wal`](crate::DB::flush_wal) (or a
    /// synced write, a full buffer, a memtable switch or close): fewer system calls, but a
    /// process crash may lose the writes not yet flushed (RocksDB's `manual_wal_flush`).
    pub fn set_manual_wal_flush(&mut self, manual: bool) {
        self.manual_wal_flush = manual;
    }
    /// Hand WAL records to the operating system by copying them into a shared mapping of
    /// zeros written ahead of the log's end (default true), or by one `write` call per write
    /// group (false, as RocksDB). A Shale option; the durability is the same either way: a
    /// written record survives a process crash, a synced one power loss. Only the POSIX file
    /// system maps; where mapping fails the log falls back to `write` calls.
    pub fn set_wal_mapped_appends(&mut self, mapped: bool) {
        self.wal_mapped_appends = mapped;
    }
    /// Leveled (the default), universal or FIFO compaction.
    pub fn set_compaction_style(&mut self, style: DBCompactionStyle) {
        self.compaction_style = style;
    }
    /// Universal compaction's options (the `rocksdb` crate's `set_universal_compaction_options`).
    pub fn set_universal_compaction_options(&mut self, uco: &UniversalCompactOptions) {
        self.compaction_options_universal = uco.clone();
    }
    /// FIFO compaction's options (the `rocksdb` crate's `set_fifo_compaction_options`).
    pub fn set_fifo_compaction_options(&mut self, fco: &FifoCompactOptions) {
        self.compaction_options_fifo = fco.clone();
    }
    /// FIFO: delete table files whose data is older than `secs` seconds; universal: compact files
    /// older than that, as `set_periodic_compaction_seconds` (the stricter of the two applies);
    /// leveled: move files whose data is older than that to the next level. 0: never (RocksDB's
    /// default for block-based tables is 30 days). Block-based tables only, as RocksDB.
    pub fn set_ttl(&mut self, secs: u64) {
        self.ttl = secs;
    }
    /// Compact files older than `secs` seconds (RocksDB's `periodic_compaction_seconds`; 0:
    /// never). Universal merges the oldest sorted runs (the stricter of this and `ttl` applies);
    /// leveled rewrites the file (into the next level with dynamic level sizes, else within its
    /// level); FIFO ignores it, as RocksDB. Block-based tables only, as RocksDB.
    pub fn set_periodic_compaction_seconds(&mut self, secs: u64) {
        self.periodic_compaction_seconds = secs;
    }
    /// RocksDB's `CompactOnDeletionCollector`: a table file written by a flush or compaction is
    /// marked for compaction when any `window_size` consecutive entries hold at least
    /// `num_dels_trigger` deletions, or when deletions are at least `deletion_ratio` of its
    /// entries (a ratio outside (0, 1] disables that test; a `window_size` of 0 the first).
    /// Marked files are compacted (universal and leveled) when nothing else is due. Not written
    /// to the OPTIONS file (RocksDB writes no table-properties collector there).
    pub fn add_compact_on_deletion_collector_factory(
        &mut self,
        window_size: usize,
        num_dels_trigger: usize,
        deletion_ratio: f64,
    ) {
        self.compact_on_deletion = Some(super::compaction::CompactOnDeletion {
            window_size,
            deletion_trigger: num_dels_trigger,
            deletion_ratio,
        });
    }
    /// RocksDB's `IncreaseParallelism`: `total_threads` background jobs (default 16 in RocksDB's
    /// headers; the crate passes it explicitly).
    pub fn increase_parallelism(&mut self, parallelism: i32) {
        self.max_background_jobs = non_negative(parallelism);
    }
    /// RocksDB's `OptimizeLevelStyleCompaction`: memtables of a quarter of the budget, two merged
    /// per flush, up to six; L0 compacts at two files into a base level as large as the budget;
    /// levels 2 and below compressed with LZ4.
    pub fn optimize_level_style_compaction(&mut self, memtable_memory_budget: usize) {
        let budget = memtable_memory_budget;
        self.write_buffer_size = budget / 4;
        self.min_write_buffer_number_to_merge = 2;
        self.max_write_buffer_number = 6;
        self.level0_file_num_compaction_trigger = 2;
        self.target_file_size_base = (budget / 8) as u64;
        self.max_bytes_for_level_base = budget as u64;
        self.compaction_style = DBCompactionStyle::Level;
        self.compression_per_level = (0..self.num_levels)
            .map(|l| {
                if l < 2 {
                    DBCompressionType::None
                } else {
                    DBCompressionType::Lz4
                }
            })
            .collect();
    }
    /// Order keys by `compare_fn`; `name` is recorded in the MANIFEST and must be the same on
    /// every open (the `rocksdb` crate's closure form).
    pub fn set_comparator(&mut self, name: &str, compare_fn: Box<CompareFn>) {
        self.comparator = Arc::new(FnComparator {
            name: name.to_string(),
            f: compare_fn,
        });
    }
    /// Order keys that end with a `timestamp_size`-byte user-defined timestamp (the `rocksdb`
    /// crate's closure form): `compare_fn` orders whole keys (key without timestamp first, then
    /// newer timestamps first), `compare_ts_fn` orders timestamps (older first) and
    /// `compare_without_ts_fn` orders keys ignoring timestamps. `name` is recorded in the
    /// MANIFEST and must be the same on every open. Writes then need the `_with_ts` calls and
    /// reads [`ReadOptions::set_timestamp`](crate::ReadOptions::set_timestamp)
    /// (`docs/user-timestamps.md`).
    pub fn set_comparator_with_ts(
        &mut self,
        name: &str,
        timestamp_size: usize,
        compare_fn: Box<CompareFn>,
        compare_ts_fn: Box<CompareTsFn>,
        compare_without_ts_fn: Box<CompareWithoutTsFn>,
    ) {
        self.comparator = Arc::new(FnTsComparator {
            name: name.to_string(),
            ts_sz: timestamp_size,
            f: compare_fn,
            ts: compare_ts_fn,
            without: compare_without_ts_fn,
        });
    }
    /// RocksDB's `persist_user_defined_timestamps` (default true): whether table files keep the
    /// user-defined timestamps. Shale always keeps them: `false` makes opening fail with
    /// NotSupported (`docs/user-timestamps.md`).
    pub fn set_persist_user_defined_timestamps(&mut self, v: bool) {
        self.persist_user_defined_timestamps = v;
    }
    /// Order keys by a [`Comparator`] object (such as [`Uint64Comparator`](crate::comparator::Uint64Comparator)).
    pub fn set_custom_comparator(&mut self, c: Arc<dyn Comparator>) {
        self.comparator = c;
    }
    /// An associative merge operator in the `rocksdb` crate's form: `full_merge_fn(key,
    /// existing, operands)` also serves as the partial merge (with `existing` None).
    pub fn set_merge_operator_associative<F>(&mut self, name: &str, full_merge_fn: F)
    where
        F: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + Clone + 'static,
    {
        self.merge_operator = Some(Arc::new(FnMergeOperator {
            name: name.to_string(),
            full: full_merge_fn.clone(),
            partial: full_merge_fn,
        }));
    }
    /// A merge operator in the `rocksdb` crate's form: `full_merge_fn(key, existing, operands)`
    /// and `partial_merge_fn(key, None, operands)` (None from it keeps the operands as they are).
    pub fn set_merge_operator<F, PF>(&mut self, name: &str, full_merge_fn: F, partial_merge_fn: PF)
    where
        F: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static,
        PF: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync + 'static,
    {
        self.merge_operator = Some(Arc::new(FnMergeOperator {
            name: name.to_string(),
            full: full_merge_fn,
            partial: partial_merge_fn,
        }));
    }
    /// A merge operator object (such as [`UInt64AddOperator`](crate::merge_operator::UInt64AddOperator) wrapped
    /// in [`Associative`](crate::merge_operator::Associative)).
    pub fn set_custom_merge_operator(&mut self, op: Arc<dyn MergeOperator>) {
        self.merge_operator = Some(op);
    }

    /// A compaction filter in the `rocksdb` crate's form: `filter_fn(level, key, value)` decides
    /// for the newest value of each key a compaction rewrites (never for a value a snapshot can
    /// see, never in a flush). One filter serves every compaction: calls are serialized.
    /// Replaces a filter factory set before.
    pub fn set_compaction_filter<F>(&mut self, name: &str, filter_fn: F)
    where
        F: FnMut(u32, &[u8], &[u8]) -> crate::compaction_filter::Decision + Send + 'static,
    {
        self.compaction_filter = Some(Arc::new(crate::options::filter_source::SharedFilter {
            name: name.to_string(),
            f: Arc::new(parking_lot::Mutex::new(filter_fn)),
        }));
    }
    /// A compaction filter factory: one filter is created per compaction (per subcompaction),
    /// told whether the compaction is manual and whether it reads every file. Replaces a filter
    /// set before.
    pub fn set_compaction_filter_factory<F>(&mut self, factory: F)
    where
        F: crate::compaction_filter_factory::CompactionFilterFactory,
    {
        self.compaction_filter = Some(Arc::new(crate::options::filter_source::FactorySource(
            parking_lot::Mutex::new(factory),
        )));
    }

    /// The checks of settings only the `rocksdb`-style setters can make (called by `validate`).
    pub(crate) fn validate_compat(&self) -> Result<()> {
        if self.knobs.track_and_verify_wals_in_manifest {
            return Err(Error::NotSupported(
                "track_and_verify_wals_in_manifest: Shale does not record WALs in the MANIFEST".into(),
            ));
        }
        // As RocksDB's ValidateOptions.
        if self.unordered_write && !self.allow_concurrent_memtable_write {
            return Err(Error::invalid(
                "unordered_write is incompatible with allow_concurrent_memtable_write = false",
            ));
        }
        if self.unordered_write && self.enable_pipelined_write {
            return Err(Error::invalid(
                "unordered_write is incompatible with enable_pipelined_write",
            ));
        }
        if self.atomic_flush && self.enable_pipelined_write {
            return Err(Error::invalid(
                "atomic_flush is incompatible with enable_pipelined_write",
            ));
        }
        // As RocksDB: the file ages TTL and periodic compactions read are block-based table
        // properties.
        let block_based = matches!(self.table_factory, super::types::TableFactory::BlockBased);
        if self.periodic_compaction_seconds > 0 && !block_based {
            return Err(Error::NotSupported(
                "periodic_compaction_seconds: periodic compaction is only supported with block-based tables".into(),
            ));
        }
        if self.ttl > 0 && !block_based {
            return Err(Error::NotSupported(
                "ttl: TTL is only supported with block-based tables".into(),
            ));
        }
        match self.compaction_style {
            DBCompactionStyle::Level => Ok(()),
            DBCompactionStyle::Universal => self.compaction_options_universal.validate(),
            DBCompactionStyle::Fifo => {
                self.compaction_options_fifo.validate()?;
                // As RocksDB: TTL needs every table open (RocksDB reads its creation time).
                if self.ttl > 0 && self.max_open_files != -1 {
                    return Err(Error::NotSupported(format!(
                        "ttl: FIFO compaction with a ttl is only supported with max_open_files = -1 (got {})",
                        self.max_open_files
                    )));
                }
                Ok(())
            }
        }
    }
}

/// Statistics (RocksDB's `Options::statistics`, the `rocksdb` crate's calls).
impl Options {
    /// Collect statistics (tickers and histograms, RocksDB's names) in every DB opened with these
    /// options or a clone of them: one statistics object, shared by all of them and by every
    /// column family. Calling it again keeps the same object.
    pub fn enable_statistics(&mut self) {
        if self.statistics.is_none() {
            self.statistics = Some(Arc::new(crate::statistics::Statistics::new()));
        }
    }

    /// Every ticker and histogram in RocksDB's `Statistics::ToString` format (None if
    /// statistics are not enabled).
    pub fn get_statistics(&self) -> Option<String> {
        self.statistics.as_ref().map(|s| s.to_string_rocksdb())
    }

    /// What statistics collect (default `ExceptDetailedTimers`); changes a shared statistics
    /// object for every DB using it. No effect before `enable_statistics`.
    pub fn set_statistics_level(&self, level: crate::statistics::StatsLevel) {
        if let Some(s) = &self.statistics {
            s.set_level(level);
        }
    }

    /// A ticker's count (0 if statistics are not enabled).
    pub fn get_ticker_count(&self, ticker: crate::statistics::Ticker) -> u64 {
        self.statistics.as_ref().map_or(0, |s| s.ticker(ticker))
    }

    /// A histogram's summary (empty if statistics are not enabled).
    pub fn get_histogram_data(&self, histogram: crate::statistics::Histogram) -> crate::statistics::HistogramData {
        self.statistics
            .as_ref()
            .map_or_else(Default::default, |s| s.histogram(histogram))
    }

    /// Zero every ticker and histogram (RocksDB's `Statistics::Reset`; Shale's addition).
    pub fn reset_statistics(&self) {
        if let Some(s) = &self.statistics {
            s.reset();
        }
    }
}

/// `get_<field>`: the options' values as stored (counts as `usize`; a Shale extension, the
/// `rocksdb` crate has few getters).
macro_rules! getters {
    ($($name:ident => $field:ident: $t:ty),* $(,)?) => {
        impl Options {
            $(
                #[doc = concat!("The stored value of `", stringify!($field), "`, as set (or defaulted), before any sanitizing at open.")]
                pub fn $name(&self) -> $t {
                    self.$field.clone()
                }
            )*
        }
    };
}

getters! {
    get_create_if_missing => create_if_missing: bool,
    get_error_if_exists => error_if_exists: bool,
    get_paranoid_checks => paranoid_checks: bool,
    get_write_buffer_size => write_buffer_size: usize,
    get_max_write_buffer_number => max_write_buffer_number: usize,
    get_min_write_buffer_number_to_merge => min_write_buffer_number_to_merge: usize,
    get_memtable_factory => memtable_factory: MemtableFactory,
    get_block_size => block_size: usize,
    get_block_restart_interval => block_restart_interval: usize,
    get_block_cache_capacity => block_cache_capacity: usize,
    get_cache_index_and_filter_blocks => cache_index_and_filter_blocks: bool,
    get_pin_l0_filter_and_index_blocks_in_cache => pin_l0_filter_and_index_blocks_in_cache: bool,
    get_db_write_buffer_size => db_write_buffer_size: usize,
    get_write_buffer_manager => write_buffer_manager: Option<Arc<WriteBufferManager>>,
    get_bloom_bits_per_key => bloom_bits_per_key: f64,
    get_checksum_type => checksum_type: ChecksumType,
    get_compression => compression: DBCompressionType,
    get_format_version => format_version: u32,
    get_max_open_files => max_open_files: i32,
    get_comparator => comparator: Arc<dyn Comparator>,
    get_wal_recovery_mode => wal_recovery_mode: DBRecoveryMode,
    get_level0_file_num_compaction_trigger => level0_file_num_compaction_trigger: usize,
    get_level0_slowdown_writes_trigger => level0_slowdown_writes_trigger: usize,
    get_level0_stop_writes_trigger => level0_stop_writes_trigger: usize,
    get_max_bytes_for_level_base => max_bytes_for_level_base: u64,
    get_max_bytes_for_level_multiplier => max_bytes_for_level_multiplier: f64,
    get_target_file_size_base => target_file_size_base: u64,
    get_target_file_size_multiplier => target_file_size_multiplier: u64,
    get_max_compaction_bytes => max_compaction_bytes: u64,
    get_level_compaction_dynamic_level_bytes => level_compaction_dynamic_level_bytes: bool,
    get_compaction_pri => compaction_pri: CompactionPri,
    get_max_subcompactions => max_subcompactions: usize,
    get_soft_pending_compaction_bytes_limit => soft_pending_compaction_bytes_limit: u64,
    get_hard_pending_compaction_bytes_limit => hard_pending_compaction_bytes_limit: u64,
    get_delayed_write_rate => delayed_write_rate: u64,
    get_compression_per_level => compression_per_level: Vec<DBCompressionType>,
    get_bottommost_compression => bottommost_compression: Option<DBCompressionType>,
    get_num_levels => num_levels: usize,
    get_disable_auto_compactions => disable_auto_compactions: bool,
    get_max_background_jobs => max_background_jobs: usize,
    get_env => env: Arc<dyn FileSystem>,
    get_merge_operator => merge_operator: Option<Arc<dyn MergeOperator>>,
    get_prefix_extractor => prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    get_memtable_prefix_bloom_ratio => memtable_prefix_bloom_size_ratio: f64,
    get_memtable_whole_key_filtering => memtable_whole_key_filtering: bool,
    get_allow_mmap_reads => allow_mmap_reads: bool,
    get_allow_mmap_writes => allow_mmap_writes: bool,
    get_wal_mapped_appends => wal_mapped_appends: bool,
    get_table_factory => table_factory: TableFactory,
    get_compaction_style => compaction_style: DBCompactionStyle,
    get_universal_compaction_options => compaction_options_universal: UniversalCompactOptions,
    get_fifo_compaction_options => compaction_options_fifo: FifoCompactOptions,
    get_ttl => ttl: u64,
    get_periodic_compaction_seconds => periodic_compaction_seconds: u64,
}

struct FnComparator {
    name: String,
    f: Box<CompareFn>,
}

struct FnTsComparator {
    name: String,
    ts_sz: usize,
    f: Box<CompareFn>,
    ts: Box<CompareTsFn>,
    without: Box<CompareWithoutTsFn>,
}

impl Comparator for FnTsComparator {
    fn name(&self) -> &str {
        &self.name
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        (self.f)(a, b)
    }
    fn timestamp_size(&self) -> usize {
        self.ts_sz
    }
    fn compare_timestamp(&self, a: &[u8], b: &[u8]) -> Ordering {
        (self.ts)(a, b)
    }
    fn compare_without_timestamp(&self, a: &[u8], a_has_ts: bool, b: &[u8], b_has_ts: bool) -> Ordering {
        (self.without)(a, a_has_ts, b, b_has_ts)
    }
    fn validate_key(&self, key: &[u8]) -> Result<()> {
        if key.len() < self.ts_sz {
            return Err(Error::invalid(format!(
                "comparator: {} needs keys of at least {} bytes (the timestamp), got {}",
                self.name,
                self.ts_sz,
                key.len()
            )));
        }
        Ok(())
    }
}

impl Comparator for FnComparator {
    fn name(&self) -> &str {
        &self.name
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        (self.f)(a, b)
    }
}

struct FnMergeOperator<F, PF> {
    name: String,
    full: F,
    partial: PF,
}

impl<F, PF> MergeOperator for FnMergeOperator<F, PF>
where
    F: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync,
    PF: Fn(&[u8], Option<&[u8]>, &MergeOperands) -> Option<Vec<u8>> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Option<Vec<u8>> {
        (self.full)(key, existing, &MergeOperands { ops: operands })
    }
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        (self.partial)(key, None, &MergeOperands { ops: operands })
    }
}

impl super::types::WriteOptions {
    /// The defaults: no sync, WAL on, wait through write stalls.
    pub fn new() -> Self {
        Self::default()
    }
    /// Fail a write with an Incomplete error (kind [`ErrorKind::Incomplete`](crate::ErrorKind))
    /// instead of waiting while writes are delayed or stopped (RocksDB's `no_slowdown`).
    pub fn set_no_slowdown(&mut self, no_slowdown: bool) {
        self.no_slowdown = no_slowdown;
    }
}

impl super::types::ReadOptions {
    /// RocksDB's `pin_data`: keep the key slices an iterator hands out valid for the iterator's
    /// lifetime. Accepted for compatibility and without effect in Shale: what an iterator hands
    /// out is either owned (`DBIterator` items) or borrowed from the iterator until it moves
    /// (`DBRawIterator::key`), which the borrow checker enforces, so there is nothing to pin.
    pub fn set_pin_data(&mut self, pin_data: bool) {
        let _ = pin_data;
    }
}
