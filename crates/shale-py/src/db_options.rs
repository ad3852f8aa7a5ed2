//! The rest of rocksdict's `Options` setters: those the engine implements that take objects or
//! lists (memtable representation and budget, environment, compression per level, RocksDB's
//! tuning presets; the ones taking a single value, such as `set_atomic_flush` and
//! `set_wal_recovery_mode`, are RocksDB option names in `options.rs`), with `DBRecoveryMode`,
//! `MemtableFactory`, `WriteBufferManager`, `Env` and `DBPath`; and RocksDB settings Shale has no counterpart for, which accept
//! RocksDB's default value only (a no-op in RocksDB too) and raise NotSupported naming the
//! option for any other.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::enums::py_enum;
use crate::errors::NotSupported;
use crate::options::{compression_arg, DBCompressionType, Options};

py_enum!(
    /// How recovery treats damage in the write-ahead log (rocksdict's `DBRecoveryMode`).
    DBRecoveryMode, shale::DBRecoveryMode, {
        /// A torn record at the end of the last log is dropped; anything else is an error.
        tolerate_corrupted_tail_records => shale::DBRecoveryMode::TolerateCorruptedTailRecords,
        /// Any damage is an error (Corruption when opening).
        absolute_consistency => shale::DBRecoveryMode::AbsoluteConsistency,
        /// Replay stops at the first damaged record (the default).
        point_in_time => shale::DBRecoveryMode::PointInTime,
        /// Damaged records are skipped and replay goes on.
        skip_any_corrupted_record => shale::DBRecoveryMode::SkipAnyCorruptedRecord,
    }
);

/// Shale's memtable representations (rocksdict's `MemtableFactory` has only hash-based and
/// vector ones; the skiplist is RocksDB's and Shale's default).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Memtable {
    SkipList,
    Vector,
}

py_enum!(
    /// How a memtable holds its entries (rocksdict's `MemtableFactory`). RocksDB's hash-based
    /// memtables (`hash_skip_list`, `hash_link_list`) raise NotSupported.
    MemtableFactory, Memtable, {
        /// A concurrent skiplist (the default; a Shale addition to rocksdict's names).
        skip_list => Memtable::SkipList,
        /// An unsorted vector, sorted when first read: the cheapest inserts, for bulk loads.
        vector => Memtable::Vector,
    }
);

#[pymethods]
impl MemtableFactory {
    #[staticmethod]
    #[pyo3(signature = (bucket_count, height_bound = 4, branching_factor = 4))]
    fn hash_skip_list(bucket_count: usize, height_bound: i32, branching_factor: i32) -> PyResult<Self> {
        let _ = (bucket_count, height_bound, branching_factor);
        Err(NotSupported::new_err(
            "MemtableFactory.hash_skip_list: Shale has no hash-based memtable (skip_list or vector)",
        ))
    }
    #[staticmethod]
    fn hash_link_list(bucket_count: usize) -> PyResult<Self> {
        let _ = bucket_count;
        Err(NotSupported::new_err(
            "MemtableFactory.hash_link_list: Shale has no hash-based memtable (skip_list or vector)",
        ))
    }
}

/// One memtable memory budget shared by the databases opened with it (rocksdict's
/// `WriteBufferManager`): past it their memtables are flushed, and with `allow_stall` writes
/// wait while it is used up.
#[pyclass(module = "shale", frozen)]
pub(crate) struct WriteBufferManager {
    inner: Arc<shale::WriteBufferManager>,
}

#[pymethods]
impl WriteBufferManager {
    /// A budget of `buffer_size` bytes (0: no budget, only counting).
    #[new]
    #[pyo3(signature = (buffer_size, allow_stall = false))]
    fn new(buffer_size: usize, allow_stall: bool) -> Self {
        WriteBufferManager {
            inner: shale::WriteBufferManager::new(buffer_size, allow_stall),
        }
    }
    /// Bytes of memtables charged to the budget now.
    fn get_usage(&self) -> usize {
        self.inner.memory_usage()
    }
    fn get_buffer_size(&self) -> usize {
        self.inner.buffer_size()
    }
    /// Whether a budget is set (a size above 0).
    fn enabled(&self) -> bool {
        self.inner.enabled()
    }
}

/// Where a database's files live and the background pools it shares (rocksdict's `Env`): the
/// operating system's file system (`Env()`), or memory (`Env.mem_env()`: a file system of its
/// own, shared by the databases opened with this Env, gone with the process); and RocksDB's
/// two background pools, shared by the databases opened with this Env: the compaction pool
/// (`set_background_threads`, `set_low_priority_background_threads`) and the flush pool
/// (`set_high_priority_background_threads`) cap their jobs running at once across them, and
/// `lower_thread_pool_cpu_priority` and the like run a pool's jobs at nice 19 or in the idle
/// I/O class (the engine's `Env` documents each).
#[pyclass(module = "shale", frozen)]
#[derive(Clone)]
pub(crate) struct Env {
    /// Some: the database lives in memory, in this file system.
    pub(crate) fs: Option<Arc<dyn shale::fs::FileSystem>>,
    /// The engine's Env: the same file system, and the pools.
    engine: shale::Env,
}

#[pymethods]
impl Env {
    #[new]
    pub(crate) fn new() -> Self {
        Env {
            fs: None,
            engine: shale::Env::with_file_system(Arc::new(shale::fs::PosixFs)),
        }
    }
    #[staticmethod]
    fn mem_env() -> Self {
        let fs: Arc<dyn shale::fs::FileSystem> = Arc::new(shale::fs::testing::MemFs::new());
        Env {
            fs: Some(fs.clone()),
            engine: shale::Env::with_file_system(fs),
        }
    }
    fn set_background_threads(&self, num_threads: i32) {
        self.engine.clone().set_background_threads(num_threads);
    }
    fn set_low_priority_background_threads(&self, n: i32) {
        self.engine.clone().set_low_priority_background_threads(n);
    }
    fn set_high_priority_background_threads(&self, n: i32) {
        self.engine.clone().set_high_priority_background_threads(n);
    }
    fn set_bottom_priority_background_threads(&self, n: i32) {
        self.engine.clone().set_bottom_priority_background_threads(n);
    }
    fn join_all_threads(&self) {
        self.engine.clone().join_all_threads();
    }
    fn lower_thread_pool_io_priority(&self) {
        self.engine.clone().lower_thread_pool_io_priority();
    }
    fn lower_high_priority_thread_pool_io_priority(&self) {
        self.engine.clone().lower_high_priority_thread_pool_io_priority();
    }
    fn lower_thread_pool_cpu_priority(&self) {
        self.engine.clone().lower_thread_pool_cpu_priority();
    }
    fn lower_high_priority_thread_pool_cpu_priority(&self) {
        self.engine.clone().lower_high_priority_thread_pool_cpu_priority();
    }
}

impl Options {
    /// The file system these options were given (the disk unless in memory), for the config
    /// file of an in-memory database.
    pub(crate) fn env(&self) -> Env {
        let fs = self.in_memory.then(|| self.inner.get_env());
        let engine = shale::Env::with_file_system(fs.clone().unwrap_or_else(|| Arc::new(shale::fs::PosixFs)));
        Env { fs, engine }
    }
}

impl Env {
    /// Options `o` with this file system and these pools.
    pub(crate) fn apply(&self, o: &mut Options) {
        o.inner.set_env(&self.engine);
        o.in_memory = self.fs.is_some();
    }
}

/// A data directory with a size target (rocksdict's `DBPath`), for `Options.set_db_paths`.
#[pyclass(module = "shale", frozen, get_all)]
pub(crate) struct DBPath {
    path: String,
    target_size: u64,
}

#[pymethods]
impl DBPath {
    #[new]
    fn new(path: String, target_size: u64) -> Self {
        DBPath { path, target_size }
    }
}

/// A WAL recovery mode: a `DBRecoveryMode`, RocksDB's name of one (`kPointInTimeRecovery`, as
/// in an OPTIONS file) or its number (0 to 3).
pub(crate) fn recovery_mode_arg(v: &Bound<'_, PyAny>) -> PyResult<shale::DBRecoveryMode> {
    use shale::DBRecoveryMode as M;
    if let Ok(m) = v.downcast::<DBRecoveryMode>() {
        return Ok(m.get().v);
    }
    let modes = [
        (M::TolerateCorruptedTailRecords, "kTolerateCorruptedTailRecords"),
        (M::AbsoluteConsistency, "kAbsoluteConsistency"),
        (M::PointInTime, "kPointInTimeRecovery"),
        (M::SkipAnyCorruptedRecord, "kSkipAnyCorruptedRecords"),
    ];
    let found = if let Ok(n) = v.extract::<usize>() {
        modes.get(n)
    } else {
        let name: String = v.extract()?;
        modes.iter().find(|(_, n)| *n == name)
    };
    found
        .map(|(m, _)| *m)
        .ok_or_else(|| PyValueError::new_err(format!("unknown WAL recovery mode: {v}")))
}

/// A `non-negative i32` the engine's `rocksdb`-style setters take.
fn count(name: &str, v: i64) -> PyResult<i32> {
    i32::try_from(v)
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| PyValueError::new_err(format!("{name} must be in 0..=2**31-1, not {v}")))
}

#[pymethods]
impl Options {
    /// The file system the database lives in (`Env()`: the operating system's, the default;
    /// `Env.mem_env()`: memory).
    fn set_env(&mut self, env: PyRef<'_, Env>) {
        env.apply(self);
    }
    /// Shale keeps every table file in the database directory: only an empty list (RocksDB's
    /// default) is accepted; NotSupported otherwise.
    fn set_db_paths(&mut self, paths: Vec<PyRef<'_, DBPath>>) -> PyResult<()> {
        match paths.first() {
            None => Ok(()),
            Some(p) => Err(NotSupported::new_err(format!(
                "set_db_paths([DBPath({:?}, {}), ...]): Shale keeps every table file in the database directory",
                p.path, p.target_size
            ))),
        }
    }
    /// The compression of each level (entry 0: L0; the last entry also covers the levels
    /// below it).
    fn set_compression_per_level(&mut self, level_types: Vec<Bound<'_, PyAny>>) -> PyResult<()> {
        let types = level_types.iter().map(compression_arg).collect::<PyResult<Vec<_>>>()?;
        self.inner.set_compression_per_level(&types);
        Ok(())
    }
    /// Levels above `lvl` uncompressed, `lvl` and below with the compression type set now
    /// (rocksdict's helper: it writes `compression_per_level`).
    fn set_min_level_to_compress(&mut self, lvl: i64) -> PyResult<()> {
        let lvl = count("min_level_to_compress", lvl)? as usize;
        let c = self.inner.get_compression();
        let types: Vec<shale::DBCompressionType> = (0..self.inner.get_num_levels())
            .map(|l| if l < lvl { shale::DBCompressionType::None } else { c })
            .collect();
        self.inner.set_compression_per_level(&types);
        Ok(())
    }
    fn set_memtable_factory(&mut self, factory: PyRef<'_, MemtableFactory>) {
        self.inner.set_memtable_factory(match factory.v {
            Memtable::SkipList => shale::MemtableFactory::SkipList,
            Memtable::Vector => shale::MemtableFactory::Vector,
        });
    }
    /// Charge the memtables to `write_buffer_manager`'s budget (shared with the other
    /// databases given it; takes precedence over `db_write_buffer_size`).
    fn set_write_buffer_manager(&mut self, write_buffer_manager: PyRef<'_, WriteBufferManager>) {
        self.inner.set_write_buffer_manager(write_buffer_manager.inner.clone());
    }
    /// The same as `set_min_write_buffer_number_to_merge`.
    fn set_min_write_buffer_number(&mut self, nbuf: i64) -> PyResult<()> {
        self.inner
            .set_min_write_buffer_number(count("min_write_buffer_number", nbuf)?);
        Ok(())
    }
    /// Mark a table file for compaction when any `window_size` consecutive entries hold
    /// `num_dels_trigger` deletions, or deletions are `deletion_ratio` of its entries.
    fn add_compact_on_deletion_collector_factory(
        &mut self,
        window_size: usize,
        num_dels_trigger: usize,
        deletion_ratio: f64,
    ) {
        self.inner
            .add_compact_on_deletion_collector_factory(window_size, num_dels_trigger, deletion_ratio);
    }
    /// RocksDB's `OptimizeUniversalStyleCompaction`: universal compaction, memtables of a
    /// quarter of the budget (six, two merged per flush), compression of the oldest 80%.
    #[pyo3(signature = (memtable_memory_budget = 512 * 1024 * 1024))]
    fn optimize_universal_style_compaction(&mut self, memtable_memory_budget: usize) {
        let o = &mut self.inner;
        o.set_write_buffer_size(memtable_memory_budget / 4);
        o.set_min_write_buffer_number_to_merge(2);
        o.set_max_write_buffer_number(6);
        o.set_compaction_style(shale::DBCompactionStyle::Universal);
        let mut u = o.get_universal_compaction_options();
        u.set_compression_size_percent(80);
        o.set_universal_compaction_options(&u);
    }
    /// RocksDB's `OptimizeForPointLookup`: a block cache of `cache_size` MiB, a 10-bit bloom
    /// filter, and a memtable bloom over whole keys. RocksDB also turns on a hash index inside
    /// data blocks, which Shale does not write (lookups binary-search the block instead).
    fn optimize_for_point_lookup(&mut self, cache_size: usize) {
        let mut b = self.inner.get_block_based_options();
        b.set_bloom_filter(10.0, false);
        b.set_block_cache(&shale::Cache::new_lru_cache(cache_size.saturating_mul(1 << 20)));
        self.inner.set_block_based_table_factory(&b);
        self.inner.set_memtable_prefix_bloom_ratio(0.02);
        self.inner.set_memtable_whole_key_filtering(true);
    }
    /// RocksDB's `PrepareForBulkLoad`: no automatic compactions and no write stalls (compact
    /// by hand after the load), two levels, six memtables, large files.
    fn prepare_for_bulk_load(&mut self) {
        let o = &mut self.inner;
        o.set_level_zero_file_num_compaction_trigger(1 << 30);
        o.set_level_zero_slowdown_writes_trigger(1 << 30);
        o.set_level_zero_stop_writes_trigger(1 << 30);
        o.set_soft_pending_compaction_bytes_limit(0);
        o.set_hard_pending_compaction_bytes_limit(0);
        o.set_disable_auto_compactions(true);
        o.set_max_compaction_bytes(1 << 60);
        o.set_num_levels(2);
        o.set_max_write_buffer_number(6);
        o.set_min_write_buffer_number_to_merge(1);
        o.set_max_background_jobs(6);
        o.set_target_file_size_base(256 << 20);
    }
}

/// `set_<name>` methods of `$class` for RocksDB settings Shale has no counterpart for: RocksDB's
/// default value is accepted (setting it changes nothing, in RocksDB either); any other raises
/// NotSupported naming the setting.
macro_rules! default_only {
    (impl $class:ty; $($py:ident ( $($arg:ident : $t:ty),+ ) = $default:expr, $why:literal;)*) => {
        #[pymethods]
        impl $class {
            $(
                #[doc = concat!("Only RocksDB's default is accepted: ", $why, ".")]
                fn $py(&mut self, $($arg: $t),+) -> PyResult<()> {
                    let given = ($($arg,)+);
                    if given == $default {
                        return Ok(());
                    }
                    Err($crate::errors::NotSupported::new_err(format!(
                        "{}{:?}: {} (only RocksDB's default {:?} is accepted)",
                        stringify!($py), given, $why, $default
                    )))
                }
            )*
        }
    };
}

pub(crate) use default_only;

const NO_BLOB: &str = "Shale has no blob files";
const NO_HINT: &str = "Shale has no such setting";

default_only! {
    impl Options;
    set_enable_blob_files(v: bool) = (false,), "Shale has no blob files";
    set_min_blob_size(v: u64) = (0,), "Shale has no blob files";
    set_blob_file_size(v: u64) = (256u64 << 20,), "Shale has no blob files";
    set_enable_blob_gc(v: bool) = (false,), "Shale has no blob files";
    set_blob_gc_age_cutoff(v: f64) = (0.25,), "Shale has no blob files";
    set_blob_gc_force_threshold(v: f64) = (1.0,), "Shale has no blob files";
    set_blob_compaction_readahead_size(v: u64) = (0,), "Shale has no blob files";
    set_use_direct_reads(v: bool) = (false,), "Shale has no direct I/O";
    set_use_direct_io_for_flush_and_compaction(v: bool) = (false,), "Shale has no direct I/O";
    set_use_fsync(v: bool) = (false,), "Shale syncs files with fdatasync";
    set_wal_dir(path: String) = (String::new(),), "Shale keeps the WAL in the database directory";
    set_db_log_dir(path: String) = (String::new(),), "Shale writes its LOG in the database directory";
    set_allow_ingest_behind(v: bool) = (false,), "Shale has no such setting";
    set_inplace_update_support(v: bool) = (false,), "Shale never updates memtable entries in place";
    set_inplace_update_locks(n: u64) = (10000,), "Shale never updates memtable entries in place";
    set_optimize_filters_for_hits(v: bool) = (false,), "Shale has no such setting";
    set_max_successive_merges(n: u64) = (0,), "Shale has no such setting";
    set_recycle_log_file_num(n: u64) = (0,), "Shale has no such setting";
    set_compression_options(w_bits: i32, level: i32, strategy: i32, max_dict_bytes: i32) = (-14, 32767, 0, 0),
        "Shale compresses with each algorithm's default level and no dictionary";
    set_bottommost_compression_options(w_bits: i32, level: i32, strategy: i32, max_dict_bytes: i32, enable: bool) = (-14, 32767, 0, 0, false),
        "Shale compresses with each algorithm's default level and no dictionary";
    set_zstd_max_train_bytes(v: i32) = (0,), "Shale compresses without a dictionary";
    set_bottommost_zstd_max_train_bytes(v: i32, enable: bool) = (0, false), "Shale compresses without a dictionary";
    set_bytes_per_sync(n: u64) = (0,), "Shale has no such setting";
    set_wal_bytes_per_sync(n: u64) = (0,), "Shale has no such setting";
    set_advise_random_on_open(v: bool) = (true,), "Shale has no such setting";
    set_use_adaptive_mutex(v: bool) = (false,), "Shale has no such setting";
    set_is_fd_close_on_exec(v: bool) = (true,), "Shale has no such setting";
    set_enable_write_thread_adaptive_yield(v: bool) = (true,), "Shale has no such setting";
    set_avoid_unnecessary_blocking_io(v: bool) = (false,), "Shale has no such setting";
    set_skip_stats_update_on_db_open(v: bool) = (false,), "Shale has no such setting";
    set_report_bg_io_stats(v: bool) = (false,), "Shale has no such setting";
    set_dump_malloc_stats(v: bool) = (false,), "Shale has no such setting";
    set_table_cache_num_shard_bits(n: i32) = (6,), "Shale has no such setting";
    set_max_file_opening_threads(n: i32) = (16,), "Shale has no such setting";
    set_arena_block_size(n: u64) = (0,), "Shale has no such setting";
    set_memtable_huge_page_size(n: u64) = (0,), "Shale has no such setting";
    set_bloom_locality(n: u32) = (0,), "Shale has no such setting";
    set_max_sequential_skip_in_iterations(n: u64) = (8,), "Shale has no such setting";
    set_log_file_time_to_roll(secs: u64) = (0,), "Shale has no such setting";
    set_stats_persist_period_sec(secs: u32) = (600,), "Shale has no such setting";
    set_delete_obsolete_files_period_micros(micros: u64) = (6u64 * 60 * 60 * 1_000_000,), "Shale has no such setting";
    set_manifest_preallocation_size(n: u64) = (4u64 << 20,), "Shale has no such setting";
    set_writable_file_max_buffer_size(n: u64) = (1u64 << 20,), "Shale has no such setting";
    set_compaction_readahead_size(n: u64) = (2u64 << 20,), "Shale has no such setting";
    set_max_manifest_file_size(n: u64) = (1u64 << 30,), "Shale has no such setting";
}

#[pymethods]
impl Options {
    /// Only rocksdict's default (no blob files, so no blob compression) is accepted.
    fn set_blob_compression_type(&mut self, t: PyRef<'_, DBCompressionType>) -> PyResult<()> {
        if t.t == shale::DBCompressionType::None {
            return Ok(());
        }
        Err(NotSupported::new_err(format!(
            "set_blob_compression_type: {NO_BLOB} (only DBCompressionType.none() is accepted)"
        )))
    }
    /// RocksDB's default multipliers (all 1) only: Shale has no per-level multipliers.
    fn set_max_bytes_for_level_multiplier_additional(&mut self, level_values: Vec<i64>) -> PyResult<()> {
        if level_values.iter().all(|v| *v == 1) {
            return Ok(());
        }
        Err(NotSupported::new_err(format!(
            "set_max_bytes_for_level_multiplier_additional{level_values:?}: {NO_HINT} (only 1 on every level is accepted)"
        )))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DBRecoveryMode>()?;
    m.add_class::<MemtableFactory>()?;
    m.add_class::<WriteBufferManager>()?;
    m.add_class::<Env>()?;
    m.add_class::<DBPath>()
}
