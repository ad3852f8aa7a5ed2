//! Public options, mirroring the names of the `rocksdb` crate where they are sound.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{FileSystem, PosixFs};
use crate::key::{BytewiseComparator, Comparator};
use crate::log::DBRecoveryMode;
use crate::memtable::MemtableFactory;
use crate::table::format::{ChecksumType, DBCompressionType};
use crate::write_buffer_manager::WriteBufferManager;

/// The format new table files are written in (RocksDB's `table_factory`). Reading does not
/// depend on it: every file is opened by the format its magic number names, so a DB can hold
/// files of several formats.
#[derive(Clone, Debug, Default)]
pub enum TableFactory {
    /// Block-based tables (the default).
    #[default]
    BlockBased,
    /// PlainTable: for data in RAM (tmpfs), with `allow_mmap_reads`; forward iteration only; no
    /// range deletions.
    Plain(crate::table::plain::PlainTableFactoryOptions),
    /// CuckooTable: hash tables for point lookups on data in RAM; fixed-length keys and values,
    /// one version per key, no range deletions or merges.
    Cuckoo(crate::table::cuckoo::CuckooTableOptions),
}

/// Which file of a level a size-triggered compaction takes (RocksDB's `CompactionPri`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionPri {
    /// The file whose overlap with the next level is smallest relative to its own size (RocksDB's
    /// default, `kMinOverlappingRatio`): least rewriting per byte moved down.
    #[default]
    MinOverlappingRatio,
    /// Files in key order, continuing after the last one compacted (`kRoundRobin`).
    RoundRobin,
}

/// Options for opening a database.
#[derive(Clone)]
pub struct Options {
    pub(crate) create_if_missing: bool,
    pub(crate) error_if_exists: bool,
    pub(crate) paranoid_checks: bool,
    /// Bytes of a memtable before it is switched and flushed (default 64 MiB).
    pub(crate) write_buffer_size: usize,
    /// Memtables (mutable + immutable) allowed before writers wait (default 2).
    pub(crate) max_write_buffer_number: usize,
    /// Immutable memtables merged into one L0 file per flush: a flush starts once this many
    /// wait (default 1; RocksDB's `min_write_buffer_number_to_merge`, capped at
    /// `max_write_buffer_number - 1` as RocksDB sanitizes it). `flush()` and a close flush all.
    pub(crate) min_write_buffer_number_to_merge: usize,
    /// Bytes of flushed memtables kept in memory for transactions' conflict checks (RocksDB's
    /// `max_write_buffer_size_to_maintain`; default 0, -1: `max_write_buffer_number *
    /// write_buffer_size`; the transaction DBs set -1 when it is 0, as RocksDB does).
    pub(crate) max_write_buffer_size_to_maintain: i64,
    /// The memtable representation (default: skiplist).
    pub(crate) memtable_factory: MemtableFactory,
    /// Target uncompressed data-block size (default 4096).
    pub(crate) block_size: usize,
    pub(crate) block_restart_interval: usize,
    /// Capacity of the shared block cache in bytes (default 32 MiB; 0 disables it).
    pub(crate) block_cache_capacity: usize,
    /// A block cache shared with other DBs (`BlockBasedOptions::set_block_cache`); None: a
    /// cache of `block_cache_capacity` bytes of this DB's own.
    pub(crate) block_cache: Option<crate::table::cache::Cache>,
    /// Keep index and filter blocks in the block cache, loaded on demand and evictable like data
    /// blocks (RocksDB's `BlockBasedTableOptions::cache_index_and_filter_blocks`, default false:
    /// each open table holds them, and their bytes are charged to the block cache).
    pub(crate) cache_index_and_filter_blocks: bool,
    /// With `cache_index_and_filter_blocks`: the index and filter blocks of L0 files stay pinned
    /// in the cache while the file is open (RocksDB's `pin_l0_filter_and_index_blocks_in_cache`).
    pub(crate) pin_l0_filter_and_index_blocks_in_cache: bool,
    /// Index and filter layout and cache priorities (`docs/format-details.md`).
    pub(crate) index_layout: crate::table::block_based::partitioned_index::IndexLayout,
    /// One budget in bytes for the memtables of this DB (RocksDB's `db_write_buffer_size`;
    /// 0 = unlimited). Ignored when `write_buffer_manager` is set.
    pub(crate) db_write_buffer_size: usize,
    /// A memtable budget shared with other DBs (RocksDB's `write_buffer_manager`); it may also
    /// stall writers while the budget is used up.
    pub(crate) write_buffer_manager: Option<Arc<WriteBufferManager>>,
    /// Bloom filter bits per key (default 10; 0 disables filters).
    pub(crate) bloom_bits_per_key: f64,
    /// Table filters hold whole keys and point lookups probe them (RocksDB's
    /// `BlockBasedTableOptions::whole_key_filtering`, default true). With a prefix extractor the
    /// filters also hold the prefixes (`docs/prefix.md`).
    pub(crate) whole_key_filtering: bool,
    /// The memtable bloom's size as a share of `write_buffer_size` (RocksDB's
    /// `memtable_prefix_bloom_size_ratio`, default 0: none; clamped to 0..=0.25 as RocksDB does).
    pub(crate) memtable_prefix_bloom_size_ratio: f64,
    /// The memtable bloom also holds whole keys, probed by point lookups (RocksDB's
    /// `memtable_whole_key_filtering`, default false).
    pub(crate) memtable_whole_key_filtering: bool,
    pub(crate) checksum_type: ChecksumType,
    pub(crate) compression: DBCompressionType,
    /// Block-based table format_version written (default 5; 2..=6 accepted).
    pub(crate) format_version: u32,
    /// Table files kept open (-1 = unlimited, as RocksDB).
    pub(crate) max_open_files: i32,
    pub(crate) comparator: Arc<dyn Comparator>,
    /// RocksDB's `persist_user_defined_timestamps` (default true); false is refused at open.
    pub(crate) persist_user_defined_timestamps: bool,
    pub(crate) wal_recovery_mode: DBRecoveryMode,
    pub(crate) level0_file_num_compaction_trigger: usize,
    pub(crate) level0_slowdown_writes_trigger: usize,
    pub(crate) level0_stop_writes_trigger: usize,
    pub(crate) max_bytes_for_level_base: u64,
    pub(crate) max_bytes_for_level_multiplier: f64,
    pub(crate) target_file_size_base: u64,
    /// Output files of level `base_level + n` target `target_file_size_base * multiplier^n`
    /// (RocksDB's `target_file_size_multiplier`, default 1).
    pub(crate) target_file_size_multiplier: u64,
    /// Most input bytes one compaction picks (RocksDB's `max_compaction_bytes`; 0, the default,
    /// means 25 x `target_file_size_base`; every value is valid). It bounds the growth of a
    /// compaction's start-level inputs, the size of an intra-L0 compaction, the chunks a manual
    /// compaction of an L1+ level is cut into, and how many bytes of the level below its output
    /// level one output file may overlap before it is cut.
    pub(crate) max_compaction_bytes: u64,
    /// Size level targets from the last level up, as RocksDB's
    /// `level_compaction_dynamic_level_bytes` (default true): L0 compacts into the base level and
    /// the levels above it stay empty.
    pub(crate) level_compaction_dynamic_level_bytes: bool,
    /// How a level's file is chosen for a size-triggered compaction (default
    /// `MinOverlappingRatio`, as RocksDB).
    pub(crate) compaction_pri: CompactionPri,
    /// Threads one compaction may be split across by key range (default 1: no split).
    pub(crate) max_subcompactions: usize,
    /// Writes are delayed once compactions are behind by this many bytes (default 64 GiB; 0 off).
    pub(crate) soft_pending_compaction_bytes_limit: u64,
    /// Writes stop once compactions are behind by this many bytes (default 256 GiB; 0 off).
    pub(crate) hard_pending_compaction_bytes_limit: u64,
    /// Bytes per second writes are limited to while delayed (default 16 MiB/s; 0 means the
    /// default, as RocksDB sanitizes it).
    pub(crate) delayed_write_rate: u64,
    /// Compression per level (empty: `compression` everywhere). As in RocksDB, with dynamic level
    /// bytes entry 1 applies to the base level, entry 2 to the one below, and so on; the last
    /// entry applies to every deeper level.
    pub(crate) compression_per_level: Vec<DBCompressionType>,
    /// Compression of files written to the bottommost level (None: as the level's).
    pub(crate) bottommost_compression: Option<DBCompressionType>,
    pub(crate) num_levels: usize,
    /// Leveled (default), universal or FIFO (the `rocksdb` crate's `set_compaction_style`).
    pub(crate) compaction_style: super::compaction::DBCompactionStyle,
    /// Universal compaction's options (used with `DBCompactionStyle::Universal`).
    pub(crate) compaction_options_universal: super::compaction::UniversalCompactOptions,
    /// FIFO compaction's options (used with `DBCompactionStyle::Fifo`).
    pub(crate) compaction_options_fifo: super::compaction::FifoCompactOptions,
    /// Seconds after which FIFO deletes a file, universal compacts it again, leveled moves it
    /// down (0: never).
    pub(crate) ttl: u64,
    /// Integrated blob files (key-value separation): `options::blob`.
    pub(crate) blob: super::blob::BlobOptions,
    /// Files older than this (seconds) are compacted again, universal and leveled (RocksDB's
    /// `periodic_compaction_seconds`; 0: never; universal folds `ttl` in).
    pub(crate) periodic_compaction_seconds: u64,
    /// RocksDB's `CompactOnDeletionCollector` (the `rocksdb` crate's
    /// `add_compact_on_deletion_collector_factory`): marks table files dense in deletions.
    pub(crate) compact_on_deletion: Option<super::compaction::CompactOnDeletion>,
    pub(crate) disable_auto_compactions: bool,
    /// Background threads (flushes and compactions, default 2; one is kept for flushes).
    pub(crate) max_background_jobs: usize,
    /// A write group's followers insert their own batches into the memtable in parallel with
    /// the leader (RocksDB's option, default true). Memtables that cannot take concurrent
    /// inserts (the vector memtable) always use one inserter.
    pub(crate) allow_concurrent_memtable_write: bool,
    /// WAL records stay in the WAL writer's buffer until `flush_wal` (or a synced write, a full
    /// buffer, a memtable switch or close) pushes them to the OS: a process crash may lose
    /// writes not yet flushed (RocksDB's option, default false).
    pub(crate) manual_wal_flush: bool,
    /// WAL records reach the OS by a copy into a shared mapping of zeros written ahead of the
    /// log's end, not by one `write` call per write group (a Shale option; default true; on the
    /// POSIX file system only). Same guarantees either way; see docs/architecture.md.
    pub(crate) wal_mapped_appends: bool,
    pub(crate) enable_pipelined_write: bool,
    pub(crate) unordered_write: bool,
    /// RocksDB's `allow_2pc`: WAL recovery keeps prepared sections as recovered transactions
    /// (instead of refusing them) and keeps their WALs. `TransactionDB::open` sets it.
    pub(crate) allow_2pc: bool,
    /// The file system (POSIX by default; tests use `MemFs`).
    pub(crate) env: Arc<dyn FileSystem>,
    /// The background pools of the [`Env`](crate::Env) given to `set_env`, shared with the
    /// other databases opened with it; None: the database's threads answer to no one else.
    pub(crate) env_pools: Option<Arc<crate::env::EnvPools>>,
    /// RocksDB's DB-wide tuning settings taken under their names (`db_knobs.rs`).
    pub(crate) knobs: super::db_knobs::DbKnobs,
    /// The merge operator for [`DB::merge`](crate::DB::merge) operands (None: merges fail).
    pub(crate) merge_operator: Option<Arc<dyn crate::merge_operator::MergeOperator>>,
    /// The compaction filter or filter factory (None: compactions keep every value).
    pub(crate) compaction_filter: Option<Arc<dyn crate::options::filter_source::FilterSource>>,
    /// Prefix extractor for prefix-hashed structures such as the PlainTable index and bloom
    /// (RocksDB's `prefix_extractor`; None: total order only).
    pub(crate) prefix_extractor: Option<Arc<dyn crate::slice_transform::PrefixExtractor>>,
    /// Read table files through `mmap` instead of `pread` (RocksDB's `allow_mmap_reads`,
    /// default false). PlainTable files are read from the mapping when it is on and copied into
    /// memory otherwise.
    pub(crate) allow_mmap_reads: bool,
    /// Hand the bytes of new table files (and of WALs, as `wal_mapped_appends` does) to the
    /// operating system by copying them into a shared mapping of the file instead of `write`
    /// calls (RocksDB's `allow_mmap_writes`, default false). Same guarantees either way.
    pub(crate) allow_mmap_writes: bool,
    /// The format of new table files (default block-based).
    pub(crate) table_factory: TableFactory,
    /// The LOG file: level, roll-over size, files kept, stats dump period.
    pub(crate) info_log: crate::info_log::InfoLogOptions,
    /// Create the column families named at open that the DB does not have yet.
    pub(crate) create_missing_column_families: bool,
    /// Flush all column families together, installed atomically (RocksDB's `atomic_flush`).
    pub(crate) atomic_flush: bool,
    /// With several column families: once the live WALs exceed this many bytes, the families
    /// holding the oldest one are flushed (0 = 4 x the families' total memtable budget).
    pub(crate) max_total_wal_size: u64,
    /// Keep obsolete WALs in `archive/` for `get_updates_since`: this many seconds (0 = no age
    /// limit) and up to this many MiB (0 = no size limit); both 0 = no archive (as RocksDB).
    pub(crate) wal_ttl_seconds: u64,
    pub(crate) wal_size_limit_mb: u64,
    /// Statistics (`enable_statistics`), shared by every family of the DB and every DB opened
    /// with a clone of these options; None: off.
    pub(crate) statistics: crate::statistics::Stats,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: false,
            error_if_exists: false,
            paranoid_checks: true,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            min_write_buffer_number_to_merge: 1,
            max_write_buffer_size_to_maintain: 0,
            memtable_factory: MemtableFactory::SkipList,
            block_size: 4096,
            block_restart_interval: 16,
            block_cache_capacity: 32 << 20,
            block_cache: None,
            cache_index_and_filter_blocks: false,
            pin_l0_filter_and_index_blocks_in_cache: false,
            index_layout: Default::default(),
            db_write_buffer_size: 0,
            write_buffer_manager: None,
            bloom_bits_per_key: 10.0,
            whole_key_filtering: true,
            memtable_prefix_bloom_size_ratio: 0.0,
            memtable_whole_key_filtering: false,
            checksum_type: ChecksumType::XXH3,
            compression: DBCompressionType::None,
            format_version: 5,
            max_open_files: -1,
            comparator: Arc::new(BytewiseComparator),
            persist_user_defined_timestamps: true,
            wal_recovery_mode: DBRecoveryMode::PointInTime,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_compaction_bytes: 0,
            level_compaction_dynamic_level_bytes: true,
            compaction_pri: CompactionPri::default(),
            max_subcompactions: 1,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            delayed_write_rate: 16 << 20,
            compression_per_level: Vec::new(),
            bottommost_compression: None,
            num_levels: 7,
            compaction_style: Default::default(),
            compaction_options_universal: Default::default(),
            compaction_options_fifo: Default::default(),
            ttl: 0,
            blob: super::blob::BlobOptions::default(),
            periodic_compaction_seconds: 0,
            compact_on_deletion: None,
            disable_auto_compactions: false,
            max_background_jobs: 2,
            allow_concurrent_memtable_write: true,
            manual_wal_flush: false,
            wal_mapped_appends: true,
            enable_pipelined_write: false,
            unordered_write: false,
            allow_2pc: false,
            env: Arc::new(PosixFs),
            env_pools: None,
            knobs: Default::default(),
            merge_operator: None,
            compaction_filter: None,
            prefix_extractor: None,
            allow_mmap_reads: false,
            allow_mmap_writes: false,
            table_factory: TableFactory::BlockBased,
            info_log: Default::default(),
            create_missing_column_families: false,
            atomic_flush: false,
            max_total_wal_size: 0,
            wal_ttl_seconds: 0,
            wal_size_limit_mb: 0,
            statistics: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("comparator", &self.comparator.name())
            .finish_non_exhaustive()
    }
}

impl Options {
    /// These options as a column family's in a DB opened with `db`: the family's own settings
    /// (comparator, merge operator, table format, compression, memtable and compaction
    /// settings) from `self`, the DB-wide ones (environment, WAL, background jobs, caches, write
    /// buffer manager, open flags) from `db`.
    pub(crate) fn with_db_options_of(&self, db: &Options) -> Options {
        let mut o = self.clone();
        o.create_if_missing = db.create_if_missing;
        o.error_if_exists = db.error_if_exists;
        o.create_missing_column_families = db.create_missing_column_families;
        o.atomic_flush = db.atomic_flush;
        o.max_total_wal_size = db.max_total_wal_size;
        o.wal_ttl_seconds = db.wal_ttl_seconds;
        o.wal_size_limit_mb = db.wal_size_limit_mb;
        o.paranoid_checks = db.paranoid_checks;
        o.db_write_buffer_size = db.db_write_buffer_size;
        o.write_buffer_manager = db.write_buffer_manager.clone();
        o.max_open_files = db.max_open_files;
        o.wal_recovery_mode = db.wal_recovery_mode;
        o.delayed_write_rate = db.delayed_write_rate;
        o.max_background_jobs = db.max_background_jobs;
        o.max_subcompactions = db.max_subcompactions;
        o.allow_concurrent_memtable_write = db.allow_concurrent_memtable_write;
        o.manual_wal_flush = db.manual_wal_flush;
        o.wal_mapped_appends = db.wal_mapped_appends;
        o.enable_pipelined_write = db.enable_pipelined_write;
        o.unordered_write = db.unordered_write;
        o.allow_2pc = db.allow_2pc;
        o.env = db.env.clone();
        o.env_pools = db.env_pools.clone();
        o.knobs = db.knobs.clone();
        o.allow_mmap_reads = db.allow_mmap_reads;
        o.allow_mmap_writes = db.allow_mmap_writes;
        o.info_log = db.info_log.clone();
        o.statistics = db.statistics.clone();
        if o.block_cache.is_none() {
            o.block_cache = db.block_cache.clone();
            o.block_cache_capacity = db.block_cache_capacity;
        }
        o
    }

    /// Sets `create_if_missing` (default false): open creates the DB if `path` holds none;
    /// otherwise opening a missing DB fails with InvalidArgument naming the path.
    pub fn create_if_missing(&mut self, v: bool) {
        self.create_if_missing = v;
    }
    /// Create the column families named at open (`open_cf`, `open_cf_descriptors`) that the DB
    /// does not have (RocksDB's `create_missing_column_families`, default false).
    pub fn create_missing_column_families(&mut self, v: bool) {
        self.create_missing_column_families = v;
    }
    /// Flush every column family whenever one is flushed, and install their tables with one
    /// atomic MANIFEST group, so a crash never leaves some flushed and others not (RocksDB's
    /// `atomic_flush`, default false; useful without the WAL).
    pub fn set_atomic_flush(&mut self, v: bool) {
        self.atomic_flush = v;
    }
    /// RocksDB's `max_total_wal_size`: with several column families, once the live WAL files
    /// hold more than this many bytes, the families whose data keeps the oldest WAL alive are
    /// flushed, so a rarely written family does not keep every WAL. 0 (the default) means four
    /// times the sum over families of `write_buffer_size * max_write_buffer_number`.
    pub fn set_max_total_wal_size(&mut self, bytes: u64) {
        self.max_total_wal_size = bytes;
    }
    /// RocksDB's `WAL_ttl_seconds`: obsolete WAL files are moved to `archive/` and kept this
    /// long, so `DB::get_updates_since` can read them (with `set_wal_size_limit_mb`; both 0, the
    /// default, delete them at once).
    pub fn set_wal_ttl_seconds(&mut self, secs: u64) {
        self.wal_ttl_seconds = secs;
    }
    /// RocksDB's `WAL_size_limit_MB`: the archive keeps its newest WALs within this many MiB.
    pub fn set_wal_size_limit_mb(&mut self, mb: u64) {
        self.wal_size_limit_mb = mb;
    }
    /// Sets `error_if_exists` (default false): opening an existing DB fails with InvalidArgument.
    pub fn set_error_if_exists(&mut self, v: bool) {
        self.error_if_exists = v;
    }
    /// Sets `write_buffer_size` (default 64 MiB): bytes a memtable takes before it is switched for
    /// flush (at least 4096, else InvalidArgument at open).
    pub fn set_write_buffer_size(&mut self, v: usize) {
        self.write_buffer_size = v;
    }
    /// The memtable implementation (default skiplist).
    pub fn set_memtable_factory(&mut self, f: MemtableFactory) {
        self.memtable_factory = f;
    }
    /// Sets the prefix extractor used by prefix filters, prefix seeks and the memtable bloom
    /// (default none).
    ///
    /// Takes a [`SliceTransform`](crate::SliceTransform) or an `Arc<dyn PrefixExtractor>`
    /// (see [`slice_transform`](crate::slice_transform)).
    pub fn set_prefix_extractor(&mut self, p: impl Into<crate::slice_transform::SliceTransform>) {
        self.prefix_extractor = Some(p.into().into_extractor());
    }
    /// A memtable bloom of `ratio * write_buffer_size` bytes over the prefixes of the
    /// memtable's keys (and whole keys with `set_memtable_whole_key_filtering`), checked before
    /// a lookup or prefix seek searches the memtable (RocksDB's
    /// `memtable_prefix_bloom_size_ratio`; clamped to 0..=0.25).
    pub fn set_memtable_prefix_bloom_ratio(&mut self, ratio: f64) {
        self.memtable_prefix_bloom_size_ratio = ratio;
    }
    /// The memtable bloom holds whole keys too, and point lookups probe them.
    pub fn set_memtable_whole_key_filtering(&mut self, v: bool) {
        self.memtable_whole_key_filtering = v;
    }
    /// A memtable bloom as these options ask for one (None: none).
    pub(crate) fn memtable_bloom(&self) -> Option<crate::memtable::prefix_bloom::PrefixBloom> {
        let r = self.memtable_prefix_bloom_size_ratio;
        let r = if r.is_nan() { 0.0 } else { r.clamp(0.0, 0.25) };
        let bytes = (self.write_buffer_size as f64 * r) as usize;
        crate::memtable::prefix_bloom::PrefixBloom::new(
            bytes,
            self.prefix_extractor.clone(),
            self.memtable_whole_key_filtering,
        )
    }
    /// Shale's own whole-key filter of a memtable (`docs/architecture.md`, "Point filter of a
    /// memtable"), when the memtable bloom the options ask for does not already hold whole keys:
    /// `write_buffer_size / 64` bytes, so that a point lookup of a key the memtable lacks (the
    /// common case) skips the memtable's search. Only for the bytewise comparator, where equal
    /// keys are equal bytes. Not part of the memory compared with `write_buffer_size`.
    pub(crate) fn memtable_point_filter(&self) -> Option<crate::memtable::prefix_bloom::PrefixBloom> {
        let user_bloom_has_keys = self.memtable_whole_key_filtering && self.memtable_prefix_bloom_size_ratio > 0.0;
        if user_bloom_has_keys || crate::key::UserCmpKind::of(&*self.comparator) != crate::key::UserCmpKind::Bytewise {
            return None;
        }
        crate::memtable::prefix_bloom::PrefixBloom::new((self.write_buffer_size / 64).clamp(4096, 16 << 20), None, true)
    }
    /// What the table filters hold (`table::block_based::prefix_filter`).
    pub(crate) fn filter_contents(&self) -> crate::table::block_based::prefix_filter::FilterContents {
        crate::table::block_based::prefix_filter::FilterContents {
            prefix_extractor: self.prefix_extractor.clone(),
            whole_key_filtering: self.whole_key_filtering,
        }
    }
    /// Sets `allow_mmap_reads` (default false): table files are read through a memory mapping.
    pub fn set_allow_mmap_reads(&mut self, v: bool) {
        self.allow_mmap_reads = v;
    }
    /// Sets `allow_mmap_writes` (default false): new table files and WALs are written through a
    /// shared memory mapping (on the POSIX file system; elsewhere, and where mapping fails,
    /// with `write` calls). A table's size is made exact before each sync of it.
    pub fn set_allow_mmap_writes(&mut self, v: bool) {
        self.allow_mmap_writes = v;
    }
    /// Write new tables as PlainTable (the `rocksdb` crate's name).
    pub fn set_plain_table_factory(&mut self, o: &crate::table::plain::PlainTableFactoryOptions) {
        self.table_factory = TableFactory::Plain(o.clone());
    }
    /// Write new tables as CuckooTable (the `rocksdb` crate's name).
    pub fn set_cuckoo_table_factory(&mut self, o: &crate::table::cuckoo::CuckooTableOptions) {
        self.table_factory = TableFactory::Cuckoo(o.clone());
    }
    /// The environment the DB runs in; a DB-wide option. Given an [`Env`](crate::Env) (the
    /// `rocksdb` crate's form, `set_env(&env)`): its file system, and its background pools,
    /// shared with every database opened with the same `Env` (see [`Env`](crate::Env)). Given
    /// a file system alone (`Arc<dyn FileSystem>`): that file system, and pools of the
    /// database's own. Default: [`PosixFs`](crate::fs::PosixFs), pools of its own.
    pub fn set_env(&mut self, env: impl crate::env::IntoEnv) {
        let env = env.into_env();
        self.env_pools = env.shared.then(|| env.pools.clone());
        self.env = env.fs;
    }
    /// Sets `db_write_buffer_size` (default 0: no budget): one memtable budget in bytes for all the
    /// families of this DB; ignored when a write buffer manager is set.
    pub fn set_db_write_buffer_size(&mut self, v: usize) {
        self.db_write_buffer_size = v;
    }
    /// Shares a [`WriteBufferManager`]'s memtable budget with other DBs; it may stall writers while
    /// the budget is used up. Takes precedence over `db_write_buffer_size`.
    pub fn set_write_buffer_manager(&mut self, wbm: Arc<WriteBufferManager>) {
        self.write_buffer_manager = Some(wbm);
    }

    /// The write buffer manager this DB charges its memtables to: the shared one, or one of its
    /// own for `db_write_buffer_size` (None: no budget).
    pub(crate) fn effective_write_buffer_manager(&self) -> Option<Arc<WriteBufferManager>> {
        match &self.write_buffer_manager {
            Some(w) => Some(w.clone()),
            None if self.db_write_buffer_size > 0 => Some(WriteBufferManager::new(self.db_write_buffer_size, false)),
            None => None,
        }
    }

    /// Arena block size of a memtable: an eighth of the write buffer, at most 4 MiB, and at
    /// most an eighth of the memtable budget if there is one.
    pub(crate) fn arena_block_size(&self) -> usize {
        let mut wb = self.write_buffer_size;
        let budget = match &self.write_buffer_manager {
            Some(w) => w.buffer_size(),
            None => self.db_write_buffer_size,
        };
        if budget > 0 {
            wb = wb.min(budget);
        }
        crate::memtable::default_arena_block_size(wb)
    }

    /// Reject invalid values and combinations; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::invalid(m));
        self.validate_compat()?;
        if !self.persist_user_defined_timestamps {
            return Err(Error::NotSupported(
                "persist_user_defined_timestamps = false (timestamps stripped from table files) is not supported; Shale always persists them".into(),
            ));
        }
        match &self.table_factory {
            TableFactory::BlockBased => {}
            TableFactory::Plain(p) => {
                p.validate()?;
                p.validate_for_build(self.prefix_extractor.is_some())?;
            }
            TableFactory::Cuckoo(c) => c.validate()?,
        }
        if let Some(why) = self
            .prefix_extractor
            .as_ref()
            .and_then(|p| crate::slice_transform::bad_name(p.name()))
        {
            return bad(format!("prefix_extractor: the extractor's name {why}"));
        }
        if self.write_buffer_size < 4096 {
            return bad(format!(
                "write_buffer_size must be at least 4096, got {}",
                self.write_buffer_size
            ));
        }
        if self.max_write_buffer_number < 2 {
            return bad(format!(
                "max_write_buffer_number must be at least 2, got {}",
                self.max_write_buffer_number
            ));
        }
        if self.min_write_buffer_number_to_merge == 0 {
            return bad("min_write_buffer_number_to_merge must be at least 1, got 0".to_string());
        }
        if self.block_size == 0 || self.block_size > (1 << 30) {
            return bad(format!("block_size must be in 1..=1GiB, got {}", self.block_size));
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1".into());
        }
        if let Err(m) = self.index_layout.validate() {
            return bad(m);
        }
        if !(self.bloom_bits_per_key >= 0.0 && self.bloom_bits_per_key < 100.0) {
            return bad(format!(
                "bloom_bits_per_key must be in [0, 100), got {}",
                self.bloom_bits_per_key
            ));
        }
        if !(2..=6).contains(&self.format_version) {
            return bad(format!(
                "format_version {} is not supported for writing (2..=6)",
                self.format_version
            ));
        }
        if self.max_open_files != -1 && self.max_open_files < 10 {
            return bad(format!(
                "max_open_files must be -1 or at least 10, got {}",
                self.max_open_files
            ));
        }
        // Universal and FIFO compaction also run with a single level (everything in L0).
        let min_levels = if self.compaction_style == super::compaction::DBCompactionStyle::Level {
            2
        } else {
            1
        };
        if self.num_levels < min_levels || self.num_levels > 64 {
            return bad(format!(
                "num_levels must be in {min_levels}..=64 with {:?} compaction, got {}",
                self.compaction_style, self.num_levels
            ));
        }
        if self.level0_file_num_compaction_trigger == 0 {
            return bad("level0_file_num_compaction_trigger must be at least 1".into());
        }
        if self.level0_slowdown_writes_trigger > self.level0_stop_writes_trigger {
            return bad(format!(
                "level0_slowdown_writes_trigger ({}) must not exceed level0_stop_writes_trigger ({})",
                self.level0_slowdown_writes_trigger, self.level0_stop_writes_trigger
            ));
        }
        if self.target_file_size_base == 0 {
            return bad("target_file_size_base must be positive".into());
        }
        if self.max_bytes_for_level_base == 0 {
            return bad("max_bytes_for_level_base must be positive".into());
        }
        if self.max_bytes_for_level_multiplier.is_nan() || self.max_bytes_for_level_multiplier <= 1.0 {
            return bad("max_bytes_for_level_multiplier must be greater than 1".into());
        }
        if self.max_background_jobs == 0 {
            return bad("max_background_jobs must be at least 1".into());
        }
        if self.target_file_size_multiplier == 0 {
            return bad("target_file_size_multiplier must be at least 1".into());
        }
        if self.max_subcompactions == 0 {
            return bad("max_subcompactions must be at least 1".into());
        }
        if self.hard_pending_compaction_bytes_limit != 0
            && self.soft_pending_compaction_bytes_limit > self.hard_pending_compaction_bytes_limit
        {
            return bad(format!(
                "soft_pending_compaction_bytes_limit ({}) must not exceed hard_pending_compaction_bytes_limit ({})",
                self.soft_pending_compaction_bytes_limit, self.hard_pending_compaction_bytes_limit
            ));
        }
        self.blob.validate()?;
        if self.compression_per_level.len() > self.num_levels {
            return bad(format!(
                "compression_per_level has {} entries, more than num_levels ({})",
                self.compression_per_level.len(),
                self.num_levels
            ));
        }
        Ok(())
    }

    /// `max_compaction_bytes` with 0 replaced by RocksDB's default, 25 x
    /// `target_file_size_base` (as RocksDB's `SanitizeOptions`).
    pub(crate) fn effective_max_compaction_bytes(&self) -> u64 {
        if self.max_compaction_bytes == 0 {
            self.target_file_size_base.saturating_mul(25)
        } else {
            self.max_compaction_bytes
        }
    }

    /// `delayed_write_rate` with 0 replaced by RocksDB's default (16 MiB/s).
    pub(crate) fn effective_delayed_write_rate(&self) -> u64 {
        if self.delayed_write_rate == 0 {
            16 << 20
        } else {
            self.delayed_write_rate
        }
    }

    /// The compression of a file written to `level` when levels start at `base_level` (1 without
    /// dynamic level bytes), as RocksDB's `GetCompressionType`.
    pub(crate) fn compression_for_level(&self, level: usize, base_level: usize, bottommost: bool) -> DBCompressionType {
        if bottommost {
            if let Some(c) = self.bottommost_compression {
                return c;
            }
        }
        if self.compression_per_level.is_empty() {
            return self.compression;
        }
        let idx = if level == 0 {
            0
        } else {
            level.saturating_sub(base_level.max(1)) + 1
        };
        self.compression_per_level[idx.min(self.compression_per_level.len() - 1)]
    }
}

/// Options of a manual flush (the `rocksdb` crate's `FlushOptions`), for
/// [`DB::flush_opt`](crate::DB::flush_opt) and its `_cf` forms.
#[derive(Debug, Clone)]
pub struct FlushOptions {
    pub(crate) wait: bool,
}

impl Default for FlushOptions {
    fn default() -> Self {
        FlushOptions { wait: true }
    }
}

impl FlushOptions {
    /// Default options: wait for the flush.
    pub fn new() -> FlushOptions {
        FlushOptions::default()
    }
    /// Whether the call waits until the memtables are flushed (default true). With false it
    /// returns once they are switched out (later writes go to new memtables) and handed to the
    /// background threads, which flush them whatever `min_write_buffer_number_to_merge` says.
    pub fn set_wait(&mut self, wait: bool) {
        self.wait = wait;
    }
}

/// What a manual compaction does with the files already in the bottommost level of its range
/// (RocksDB's `BottommostLevelCompaction`, the `rocksdb` crate's enum), set with
/// [`CompactOptions::set_bottommost_level_compaction`].
#[derive(Debug, Copy, Clone, PartialEq, Eq, Default)]
pub enum BottommostLevelCompaction {
    /// Leave them as they are: upper levels are compacted into the bottommost level, whose
    /// files are not rewritten.
    Skip,
    /// Rewrite them only if the family has a compaction filter, so the filter sees every key
    /// of the range (the default).
    #[default]
    IfHaveCompactionFilter,
    /// Always rewrite them (dropping what is obsolete), the files this compaction has just
    /// written into that level included.
    Force,
    /// Always rewrite them, but not the files this compaction has just written into that level.
    ForceOptimized,
}

/// Options of a manual compaction (RocksDB's `CompactRangeOptions`, the `rocksdb` crate's
/// `CompactOptions`), for [`DB::compact_range_opt`](crate::DB::compact_range_opt) and
/// [`DB::compact_range_cf_opt`](crate::DB::compact_range_cf_opt). The default is what
/// `compact_range` does.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    pub(crate) exclusive: bool,
    pub(crate) bottommost: BottommostLevelCompaction,
    pub(crate) change_level: bool,
    pub(crate) target_level: i32,
    pub(crate) full_history_ts_low: Option<Vec<u8>>,
}

impl Default for CompactOptions {
    fn default() -> Self {
        CompactOptions {
            exclusive: true,
            bottommost: BottommostLevelCompaction::IfHaveCompactionFilter,
            change_level: false,
            target_level: -1,
            full_history_ts_low: None,
        }
    }
}

impl CompactOptions {
    /// Whether no automatic compaction may run while this one does (RocksDB's
    /// `exclusive_manual_compaction`, default true). Shale's manual compactions are always
    /// exclusive: they wait for running compactions and hold new ones back. `false` is
    /// RocksDB's permission to run alongside them, which Shale does not use; the result is
    /// the same.
    pub fn set_exclusive_manual_compaction(&mut self, v: bool) {
        self.exclusive = v;
    }
    /// What to do with the bottommost level's files in the range (default
    /// [`BottommostLevelCompaction::IfHaveCompactionFilter`]).
    pub fn set_bottommost_level_compaction(&mut self, lvl: BottommostLevelCompaction) {
        self.bottommost = lvl;
    }
    /// After compacting, move the files of the level the compaction ended in to the target
    /// level ([`set_target_level`](Self::set_target_level)), rewriting nothing (RocksDB's
    /// `change_level`, default false). The compaction fails with NotSupported if a level
    /// between the two (or the target itself) holds files, or if the files are in L0 and the
    /// target is below it.
    pub fn set_change_level(&mut self, v: bool) {
        self.change_level = v;
    }
    /// The level [`set_change_level`](Self::set_change_level) moves the files to; negative
    /// (the default, -1): the highest level above theirs that is empty, as are the levels
    /// between, and whose target size holds them. A level past the family's last level is
    /// InvalidArgument.
    pub fn set_target_level(&mut self, lvl: i32) {
        self.target_level = lvl;
    }
    /// Before compacting, raise the family's `full_history_ts_low` to `ts` (user-defined
    /// timestamps; as [`DB::increase_full_history_ts_low`](crate::DB::increase_full_history_ts_low)),
    /// so the compaction may drop versions older than it that a newer version at or below it
    /// hides. The compaction fails with InvalidArgument if `ts` is older than the current value
    /// or the family has no timestamps.
    pub fn set_full_history_ts_low<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.full_history_ts_low = Some(ts.into());
    }
}

/// Options of [`DB::wait_for_compact`](crate::DB::wait_for_compact) (RocksDB's
/// `WaitForCompactOptions`, the `rocksdb` crate's type). The default waits as long as there is
/// background work, through a pause.
#[derive(Debug, Clone, Default)]
pub struct WaitForCompactOptions {
    pub(crate) abort_on_pause: bool,
    pub(crate) flush: bool,
    pub(crate) timeout_micros: u64,
}

impl WaitForCompactOptions {
    /// While background work is paused (`pause_background_work`): true fails the wait at
    /// once (Incomplete), false (the default) waits on until the work is continued (or the
    /// timeout).
    pub fn set_abort_on_pause(&mut self, v: bool) {
        self.abort_on_pause = v;
    }
    /// Flush every column family before waiting (default false).
    pub fn set_flush(&mut self, v: bool) {
        self.flush = v;
    }
    /// Give up after `microseconds` with TimedOut; 0 (the default) waits as long as it takes.
    pub fn set_timeout(&mut self, microseconds: u64) {
        self.timeout_micros = microseconds;
    }
}

/// Options for writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// fdatasync the WAL before acknowledging (survives power loss).
    pub(crate) sync: bool,
    /// Skip the WAL (the write is lost on crash unless flushed).
    pub(crate) disable_wal: bool,
    /// Fail with an Incomplete error instead of waiting while writes are delayed or stopped.
    pub(crate) no_slowdown: bool,
}

impl WriteOptions {
    /// Sets `sync` (default false): the WAL is synced before the write returns, so the write survives
    /// power loss. Together with `disable_wal`, writes fail with InvalidArgument.
    pub fn set_sync(&mut self, v: bool) {
        self.sync = v;
    }
    /// Sets `disable_wal` (default false): the write skips the WAL and is lost on a crash unless
    /// flushed first (Shale flushes such writes when the DB is closed).
    pub fn disable_wal(&mut self, v: bool) {
        self.disable_wal = v;
    }
}

/// Options for reads.
#[derive(Clone)]
pub struct ReadOptions {
    pub(crate) snapshot: Option<crate::snapshot::Snapshot>,
    /// Inclusive lower bound for iterators.
    pub(crate) iterate_lower_bound: Option<Vec<u8>>,
    /// Exclusive upper bound for iterators.
    pub(crate) iterate_upper_bound: Option<Vec<u8>>,
    pub(crate) verify_checksums: bool,
    pub(crate) fill_cache: bool,
    /// With a prefix extractor: the iterator ends where the prefix of the seek key ends
    /// (RocksDB's `prefix_same_as_start`).
    pub(crate) prefix_same_as_start: bool,
    /// Ignore the prefix extractor: seeks see every key in order, no prefix filter is asked
    /// (RocksDB's `total_order_seek`).
    pub(crate) total_order_seek: bool,
    /// Total-order results, with prefix filters asked only when the upper bound keeps a seek
    /// inside one prefix (RocksDB's `auto_prefix_mode`).
    pub(crate) auto_prefix_mode: bool,
    /// User-defined timestamp to read at (families whose comparator has timestamps need one).
    pub(crate) timestamp: Option<Vec<u8>>,
    /// Oldest timestamp an iterator returns versions of (every version in `[iter_start_ts,
    /// timestamp]`); None: only the newest visible one.
    pub(crate) iter_start_ts: Option<Vec<u8>>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            snapshot: None,
            iterate_lower_bound: None,
            iterate_upper_bound: None,
            verify_checksums: true,
            fill_cache: true,
            prefix_same_as_start: false,
            total_order_seek: false,
            auto_prefix_mode: false,
            timestamp: None,
            iter_start_ts: None,
        }
    }
}

impl ReadOptions {
    /// Reads at user-defined timestamp `ts` (RocksDB's `ReadOptions::timestamp`): each key reads
    /// as its newest version whose timestamp is at most `ts` (and whose write is in the
    /// snapshot). Required for a family whose comparator has timestamps, refused (InvalidArgument)
    /// for one without; `ts` must be the comparator's timestamp size and not older than the
    /// family's `full_history_ts_low`. For iterators it is the newest timestamp returned.
    pub fn set_timestamp<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.timestamp = Some(ts.into());
    }
    /// Makes iterators return every version with a timestamp in `[ts, timestamp]`, deletions
    /// included, instead of the newest visible one (RocksDB's `iter_start_ts`): the iterator's
    /// `key()` is then the whole internal key (key, timestamp, 8-byte sequence and type), as
    /// RocksDB's. Needs [`set_timestamp`](Self::set_timestamp).
    pub fn set_iter_start_ts<S: Into<Vec<u8>>>(&mut self, ts: S) {
        self.iter_start_ts = Some(ts.into());
    }
    /// Reads at snapshot `s` (a clone is held, pinning it while these options live); default: the
    /// latest state at the start of each read.
    pub fn set_snapshot(&mut self, s: &crate::snapshot::Snapshot) {
        self.snapshot = Some(s.clone());
    }
    /// Sets the iterators' inclusive lower bound (default none).
    pub fn set_iterate_lower_bound(&mut self, k: impl Into<Vec<u8>>) {
        self.iterate_lower_bound = Some(k.into());
    }
    /// Sets the iterators' exclusive upper bound (default none).
    pub fn set_iterate_upper_bound(&mut self, k: impl Into<Vec<u8>>) {
        self.iterate_upper_bound = Some(k.into());
    }
    /// Sets both iterator bounds from one range, replacing any bounds set before: `lower..upper`,
    /// `lower..`, `..upper`, `..` (which clears both) or a
    /// [`PrefixRange`](crate::PrefixRange) (the keys with a prefix). A side the range leaves
    /// open has no bound. A lower bound above the upper one is accepted; iterators then yield
    /// nothing.
    pub fn set_iterate_range(&mut self, range: impl super::iter_range::IterateBounds) {
        let (lower, upper) = range.into_bounds();
        self.iterate_lower_bound = lower;
        self.iterate_upper_bound = upper;
    }
    /// Sets `verify_checksums` (default true): table blocks read are checked against their
    /// checksums, failing with Corruption on a mismatch.
    pub fn set_verify_checksums(&mut self, v: bool) {
        self.verify_checksums = v;
    }
    /// Sets `fill_cache` (default true): blocks read are added to the block cache.
    pub fn fill_cache(&mut self, v: bool) {
        self.fill_cache = v;
    }
    /// Stop iterating at the end of the seek key's prefix (needs a prefix extractor).
    pub fn set_prefix_same_as_start(&mut self, v: bool) {
        self.prefix_same_as_start = v;
    }
    /// Iterate in total order, ignoring the prefix extractor and prefix filters.
    pub fn set_total_order_seek(&mut self, v: bool) {
        self.total_order_seek = v;
    }
    /// Total order, using prefix filters only where the upper bound allows.
    pub fn set_auto_prefix_mode(&mut self, v: bool) {
        self.auto_prefix_mode = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtables_get_a_point_filter_unless_a_whole_key_bloom_or_another_comparator() {
        let o = Options::default();
        let f = o.memtable_point_filter().expect("default options: a point filter");
        assert_eq!(f.memory(), o.write_buffer_size / 64);
        assert!(o.memtable_bloom().is_none());
        // A memtable bloom over prefixes only: the point filter still holds whole keys.
        let mut o = Options::default();
        o.set_prefix_extractor(crate::slice_transform::new_fixed_prefix_transform(3));
        o.set_memtable_prefix_bloom_ratio(0.02);
        assert!(o.memtable_bloom().is_some() && o.memtable_point_filter().is_some());
        // One over whole keys: it does the job.
        o.set_memtable_whole_key_filtering(true);
        assert!(o.memtable_point_filter().is_none());
        // A comparator under which different bytes may be equal keys: none.
        let mut o = Options::default();
        o.set_comparator("test.CaseInsensitive", Box::new(|a: &[u8], b: &[u8]| a.cmp(b)));
        assert!(o.memtable_point_filter().is_none());
        // Tiny and huge write buffers: bounded.
        let mut o = Options::default();
        o.set_write_buffer_size(1 << 10);
        assert_eq!(o.memtable_point_filter().unwrap().memory(), 4096);
        o.set_write_buffer_size(4 << 30);
        assert_eq!(o.memtable_point_filter().unwrap().memory(), 16 << 20);
    }

    #[test]
    fn compression_per_level_follows_base_level() {
        use DBCompressionType::*;
        let o = Options {
            compression_per_level: vec![None, Snappy, Lz4, Zstd],
            ..Options::default()
        };
        assert_eq!(o.compression_for_level(0, 4, false), None);
        assert_eq!(o.compression_for_level(4, 4, false), Snappy);
        assert_eq!(o.compression_for_level(5, 4, false), Lz4);
        assert_eq!(o.compression_for_level(6, 4, false), Zstd);
        assert_eq!(o.compression_for_level(2, 1, false), Lz4);
        assert_eq!(o.compression_for_level(6, 1, false), Zstd);
        let o = Options {
            bottommost_compression: Some(Zstd),
            compression: Lz4,
            ..Options::default()
        };
        assert_eq!(o.compression_for_level(3, 1, false), Lz4);
        assert_eq!(o.compression_for_level(3, 1, true), Zstd);
    }

    #[test]
    fn invalid_compaction_options_name_the_option() {
        let cases: Vec<(Options, &str)> = vec![
            (
                Options {
                    target_file_size_multiplier: 0,
                    ..Options::default()
                },
                "target_file_size_multiplier",
            ),
            (
                Options {
                    max_subcompactions: 0,
                    ..Options::default()
                },
                "max_subcompactions",
            ),
            (
                Options {
                    soft_pending_compaction_bytes_limit: 10,
                    hard_pending_compaction_bytes_limit: 5,
                    ..Options::default()
                },
                "soft_pending_compaction_bytes_limit",
            ),
            (
                Options {
                    compression_per_level: vec![DBCompressionType::None; 8],
                    ..Options::default()
                },
                "compression_per_level",
            ),
            (
                Options {
                    max_background_jobs: 0,
                    ..Options::default()
                },
                "max_background_jobs",
            ),
        ];
        for (o, name) in cases {
            let e = o.validate().expect_err(name);
            assert!(e.is_invalid_argument() && e.to_string().contains(name), "{name}: {e}");
        }
        let ok = Options {
            soft_pending_compaction_bytes_limit: 10,
            hard_pending_compaction_bytes_limit: 0,
            ..Options::default()
        };
        ok.validate().unwrap();
    }

    #[test]
    fn options_carry_the_prefix_extractor_and_mmap_switch() {
        let mut o = Options::default();
        assert!(!o.allow_mmap_reads && o.prefix_extractor.is_none());
        o.set_allow_mmap_reads(true);
        o.set_prefix_extractor(crate::slice_transform::SliceTransform::create_fixed_prefix(6));
        assert!(o.allow_mmap_reads);
        assert_eq!(o.prefix_extractor.as_ref().unwrap().name(), "rocksdb.FixedPrefix.6");
        let same: crate::table::plain::PlainTableFactoryOptions =
            crate::table::plain::PlainTableFactoryOptions::default();
        assert_eq!(same.index_sparseness, 16);
    }
}
