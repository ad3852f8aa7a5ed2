//! Options in rocksdict's shape: `Options` (RocksDB's option names), `DBCompressionType`,
//! `ReadOptions` and `WriteOptions`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::encoding::encode;

/// Compression of table blocks (rocksdict's `DBCompressionType`).
#[pyclass(module = "shale", frozen, eq)]
#[derive(Clone, Copy, PartialEq)]
pub(crate) struct DBCompressionType {
    pub(crate) t: shale::DBCompressionType,
}

#[pymethods]
impl DBCompressionType {
    #[staticmethod]
    fn none() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::None,
        }
    }
    #[staticmethod]
    fn snappy() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Snappy,
        }
    }
    #[staticmethod]
    fn zlib() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Zlib,
        }
    }
    #[staticmethod]
    fn bz2() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Bz2,
        }
    }
    #[staticmethod]
    fn lz4hc() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Lz4hc,
        }
    }
    #[staticmethod]
    fn lz4() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Lz4,
        }
    }
    #[staticmethod]
    fn zstd() -> Self {
        DBCompressionType {
            t: shale::DBCompressionType::Zstd,
        }
    }
    fn __repr__(&self) -> String {
        format!("DBCompressionType({:?})", self.t)
    }
}

pub(crate) fn compression_arg(v: &Bound<'_, PyAny>) -> PyResult<shale::DBCompressionType> {
    if let Ok(c) = v.downcast::<DBCompressionType>() {
        return Ok(c.get().t);
    }
    if let Ok(s) = v.downcast::<PyString>() {
        return shale::DBCompressionType::parse(&s.to_cow()?).map_err(|e| PyValueError::new_err(e.to_string()));
    }
    Err(PyTypeError::new_err(
        "a compression type is a DBCompressionType or a name such as \"lz4\"",
    ))
}

fn i32_arg(v: &Bound<'_, PyAny>) -> PyResult<i32> {
    v.extract()
}

/// A log level by RocksDB's name (`"info"`, `"INFO_LEVEL"`, ...) or number (0 = debug).
fn log_level_arg(v: &Bound<'_, PyAny>) -> PyResult<shale::LogLevel> {
    use shale::LogLevel as L;
    let levels = [L::Debug, L::Info, L::Warn, L::Error, L::Fatal, L::Header];
    if let Ok(n) = v.extract::<usize>() {
        return levels
            .get(n)
            .copied()
            .ok_or_else(|| PyValueError::new_err(format!("no log level {n}")));
    }
    let s: String = v.extract()?;
    let name = s.to_ascii_lowercase();
    let name = name.strip_suffix("_level").unwrap_or(&name);
    ["debug", "info", "warn", "error", "fatal", "header"]
        .iter()
        .position(|l| *l == name)
        .map(|i| levels[i])
        .ok_or_else(|| PyValueError::new_err(format!("unknown log level: {s:?}")))
}

/// Set the option RocksDB calls `name` (its OPTIONS-file and `rocksdb` crate name, without
/// `set_`). An unknown name is a ValueError.
fn set_named_option(o: &mut shale::Options, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    match name {
        "create_if_missing" => o.create_if_missing(v.extract()?),
        "error_if_exists" => o.set_error_if_exists(v.extract()?),
        "create_missing_column_families" => o.create_missing_column_families(v.extract()?),
        "paranoid_checks" => o.set_paranoid_checks(v.extract()?),
        "write_buffer_size" => o.set_write_buffer_size(v.extract()?),
        "db_write_buffer_size" => o.set_db_write_buffer_size(v.extract()?),
        "max_write_buffer_number" => o.set_max_write_buffer_number(i32_arg(v)?),
        "min_write_buffer_number_to_merge" => o.set_min_write_buffer_number_to_merge(i32_arg(v)?),
        "max_background_jobs" => o.set_max_background_jobs(i32_arg(v)?),
        "max_open_files" => o.set_max_open_files(i32_arg(v)?),
        "compression" | "compression_type" => o.set_compression_type(compression_arg(v)?),
        "bottommost_compression" | "bottommost_compression_type" => {
            o.set_bottommost_compression_type(compression_arg(v)?)
        }
        "level0_file_num_compaction_trigger" | "level_zero_file_num_compaction_trigger" => {
            o.set_level_zero_file_num_compaction_trigger(i32_arg(v)?)
        }
        "level0_slowdown_writes_trigger" | "level_zero_slowdown_writes_trigger" => {
            o.set_level_zero_slowdown_writes_trigger(i32_arg(v)?)
        }
        "level0_stop_writes_trigger" | "level_zero_stop_writes_trigger" => {
            o.set_level_zero_stop_writes_trigger(i32_arg(v)?)
        }
        "max_bytes_for_level_base" => o.set_max_bytes_for_level_base(v.extract()?),
        "max_bytes_for_level_multiplier" => o.set_max_bytes_for_level_multiplier(v.extract()?),
        "target_file_size_base" => o.set_target_file_size_base(v.extract()?),
        "target_file_size_multiplier" => o.set_target_file_size_multiplier(i32_arg(v)?),
        "max_compaction_bytes" => o.set_max_compaction_bytes(v.extract()?),
        "level_compaction_dynamic_level_bytes" => o.set_level_compaction_dynamic_level_bytes(v.extract()?),
        "max_subcompactions" => o.set_max_subcompactions(v.extract()?),
        "soft_pending_compaction_bytes_limit" => o.set_soft_pending_compaction_bytes_limit(v.extract()?),
        "hard_pending_compaction_bytes_limit" => o.set_hard_pending_compaction_bytes_limit(v.extract()?),
        "delayed_write_rate" => o.set_delayed_write_rate(v.extract()?),
        "num_levels" => o.set_num_levels(i32_arg(v)?),
        "disable_auto_compactions" => o.set_disable_auto_compactions(v.extract()?),
        "allow_mmap_reads" => o.set_allow_mmap_reads(v.extract()?),
        "allow_mmap_writes" => o.set_allow_mmap_writes(v.extract()?),
        "max_log_file_size" => o.set_max_log_file_size(v.extract()?),
        "keep_log_file_num" => o.set_keep_log_file_num(v.extract()?),
        "stats_dump_period_sec" => o.set_stats_dump_period_sec(v.extract()?),
        "info_log_level" | "log_level" => o.set_log_level(log_level_arg(v)?),
        "wal_recovery_mode" => o.set_wal_recovery_mode(crate::db_options::recovery_mode_arg(v)?),
        "atomic_flush" => o.set_atomic_flush(v.extract()?),
        "unordered_write" => o.set_unordered_write(v.extract()?),
        "enable_pipelined_write" => o.set_enable_pipelined_write(v.extract()?),
        "allow_concurrent_memtable_write" => o.set_allow_concurrent_memtable_write(v.extract()?),
        "max_total_wal_size" => o.set_max_total_wal_size(v.extract()?),
        "WAL_ttl_seconds" | "wal_ttl_seconds" => o.set_wal_ttl_seconds(v.extract()?),
        "WAL_size_limit_MB" | "wal_size_limit_mb" => o.set_wal_size_limit_mb(v.extract()?),
        "memtable_prefix_bloom_size_ratio" => o.set_memtable_prefix_bloom_ratio(v.extract()?),
        "memtable_whole_key_filtering" => o.set_memtable_whole_key_filtering(v.extract()?),
        "max_write_buffer_size_to_maintain" => o.set_max_write_buffer_size_to_maintain(v.extract()?),
        _ => return Err(PyValueError::new_err(format!("unknown option: {name:?}"))),
    }
    Ok(())
}

/// Database options with RocksDB's names (rocksdict's `Options`). `create_if_missing` is on by
/// default, as in rocksdict.
#[pyclass(module = "shale")]
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) inner: shale::Options,
    pub(crate) raw_mode: bool,
    /// Set by `set_env(Env.mem_env())`: the database lives in memory, and rocksdict's config
    /// file is written there, through the engine's file system, not to the disk.
    pub(crate) in_memory: bool,
}

impl Options {
    /// Options with RocksDB's defaults, `create_if_missing` on, and the key order of the
    /// mode: bytewise in raw mode, rocksdict's comparator otherwise (as rocksdict).
    pub(crate) fn new_mode(raw_mode: bool) -> Options {
        let mut inner = shale::Options::default();
        inner.create_if_missing(true);
        inner.set_custom_comparator(crate::comparator::for_mode(raw_mode));
        Options {
            inner,
            raw_mode,
            in_memory: false,
        }
    }
    /// Options read from a database's OPTIONS file (with the comparator it recorded).
    pub(crate) fn from_loaded(mut inner: shale::Options, raw_mode: bool) -> Options {
        inner.create_if_missing(true);
        Options {
            inner,
            raw_mode,
            in_memory: false,
        }
    }
}

macro_rules! setters {
    ($($py:ident => $name:literal : $t:ty),* $(,)?) => {
        #[pymethods]
        impl Options {
            $(
                fn $py(&mut self, v: &Bound<'_, PyAny>) -> PyResult<()> {
                    let _: $t = v.extract()?;
                    set_named_option(&mut self.inner, $name, v)
                }
            )*
        }
    };
}

setters! {
    set_error_if_exists => "error_if_exists": bool,
    set_paranoid_checks => "paranoid_checks": bool,
    set_write_buffer_size => "write_buffer_size": usize,
    set_db_write_buffer_size => "db_write_buffer_size": usize,
    set_max_write_buffer_number => "max_write_buffer_number": i32,
    set_min_write_buffer_number_to_merge => "min_write_buffer_number_to_merge": i32,
    set_max_background_jobs => "max_background_jobs": i32,
    set_max_open_files => "max_open_files": i32,
    set_level_zero_file_num_compaction_trigger => "level0_file_num_compaction_trigger": i32,
    set_level_zero_slowdown_writes_trigger => "level0_slowdown_writes_trigger": i32,
    set_level_zero_stop_writes_trigger => "level0_stop_writes_trigger": i32,
    set_max_bytes_for_level_base => "max_bytes_for_level_base": u64,
    set_max_bytes_for_level_multiplier => "max_bytes_for_level_multiplier": f64,
    set_target_file_size_base => "target_file_size_base": u64,
    set_target_file_size_multiplier => "target_file_size_multiplier": i32,
    set_max_compaction_bytes => "max_compaction_bytes": u64,
    set_level_compaction_dynamic_level_bytes => "level_compaction_dynamic_level_bytes": bool,
    set_max_subcompactions => "max_subcompactions": u32,
    set_soft_pending_compaction_bytes_limit => "soft_pending_compaction_bytes_limit": usize,
    set_hard_pending_compaction_bytes_limit => "hard_pending_compaction_bytes_limit": usize,
    set_delayed_write_rate => "delayed_write_rate": u64,
    set_num_levels => "num_levels": i32,
    set_disable_auto_compactions => "disable_auto_compactions": bool,
    set_allow_mmap_reads => "allow_mmap_reads": bool,
    set_allow_mmap_writes => "allow_mmap_writes": bool,
    set_max_log_file_size => "max_log_file_size": usize,
    set_keep_log_file_num => "keep_log_file_num": usize,
    set_stats_dump_period_sec => "stats_dump_period_sec": u32,
    set_log_level => "info_log_level": PyObject,
    set_atomic_flush => "atomic_flush": bool,
    set_unordered_write => "unordered_write": bool,
    set_enable_pipelined_write => "enable_pipelined_write": bool,
    set_allow_concurrent_memtable_write => "allow_concurrent_memtable_write": bool,
    set_max_total_wal_size => "max_total_wal_size": u64,
    set_wal_ttl_seconds => "WAL_ttl_seconds": u64,
    set_wal_size_limit_mb => "WAL_size_limit_MB": u64,
    set_memtable_whole_key_filtering => "memtable_whole_key_filtering": bool,
    set_max_write_buffer_size_to_maintain => "max_write_buffer_size_to_maintain": i64,
    set_wal_recovery_mode => "wal_recovery_mode": PyObject,
}

#[pymethods]
impl Options {
    /// `Options(raw_mode=False, **options)`: keyword arguments are RocksDB option names
    /// (`write_buffer_size=...`); an unknown name is a ValueError.
    #[new]
    #[pyo3(signature = (raw_mode = false, **kwargs))]
    fn new(raw_mode: bool, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut o = Options::new_mode(raw_mode);
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                o.set_option(k.extract::<String>()?.as_str(), &v)?;
            }
        }
        Ok(o)
    }
    /// Set one option by RocksDB's name (ValueError if unknown).
    fn set_option(&mut self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        set_named_option(&mut self.inner, name, value)
    }
    #[getter]
    fn raw_mode(&self) -> bool {
        self.raw_mode
    }
    /// Also switches the key order: rocksdict's comparator unless raw.
    #[setter(raw_mode)]
    fn set_raw_mode_attr(&mut self, v: bool) {
        self.raw_mode = v;
        self.inner.set_custom_comparator(crate::comparator::for_mode(v));
    }
    fn create_if_missing(&mut self, v: bool) {
        self.inner.create_if_missing(v);
    }
    /// Create the families `Rdict`'s `column_families` names that the database lacks.
    fn create_missing_column_families(&mut self, v: bool) {
        self.inner.create_missing_column_families(v);
    }
    fn set_compression_type(&mut self, t: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set_compression_type(compression_arg(t)?);
        Ok(())
    }
    fn set_bottommost_compression_type(&mut self, t: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set_bottommost_compression_type(compression_arg(t)?);
        Ok(())
    }
    fn increase_parallelism(&mut self, parallelism: i32) {
        self.inner.increase_parallelism(parallelism);
    }
    /// Collect RocksDB's statistics (tickers and histograms) in every database opened with
    /// these options (rocksdict's `enable_statistics`).
    fn enable_statistics(&mut self) {
        self.inner.enable_statistics();
    }
    /// RocksDB's statistics text (`rocksdb.block.cache.miss COUNT : 0` …), or None when
    /// statistics are not enabled (rocksdict's `get_statistics`).
    fn get_statistics(&self) -> Option<String> {
        self.inner.get_statistics()
    }
    #[pyo3(signature = (memtable_memory_budget = 512 * 1024 * 1024))]
    fn optimize_level_style_compaction(&mut self, memtable_memory_budget: usize) {
        self.inner.optimize_level_style_compaction(memtable_memory_budget);
    }
}

/// Read options (rocksdict's `ReadOptions`). Bounds are encoded as the Rdict's keys.
#[pyclass(module = "shale")]
pub(crate) struct ReadOptions {
    lower: Option<PyObject>,
    upper: Option<PyObject>,
    verify_checksums: bool,
    fill_cache: bool,
    /// `prefix.rs`: prefix seek switches.
    pub(crate) prefix_same_as_start: bool,
    pub(crate) total_order_seek: bool,
}

#[pymethods]
impl ReadOptions {
    #[new]
    #[pyo3(signature = (raw_mode = false))]
    pub(crate) fn new(raw_mode: bool) -> Self {
        let _ = raw_mode; // rocksdict's argument; the bounds are encoded as the Rdict's keys
        ReadOptions {
            lower: None,
            upper: None,
            verify_checksums: true,
            fill_cache: true,
            prefix_same_as_start: false,
            total_order_seek: false,
        }
    }
    fn set_iterate_lower_bound(&mut self, key: PyObject) {
        self.lower = Some(key);
    }
    fn set_iterate_upper_bound(&mut self, key: PyObject) {
        self.upper = Some(key);
    }
    fn set_verify_checksums(&mut self, v: bool) {
        self.verify_checksums = v;
    }
    fn fill_cache(&mut self, v: bool) {
        self.fill_cache = v;
    }
    /// Accepted, without effect: what Shale's iterators hand out is always a copy, so there is
    /// nothing to pin (the engine's `ReadOptions::set_pin_data` is the same no-op).
    fn set_pin_data(&mut self, v: bool) {
        let _ = v;
    }
}

crate::db_options::default_only! {
    impl ReadOptions;
    set_readahead_size(n: u64) = (0,), "Shale has no such setting";
    set_async_io(v: bool) = (false,), "Shale has no asynchronous reads";
    set_tailing(v: bool) = (false,), "Shale has no tailing iterators";
    set_max_skippable_internal_keys(n: u64) = (0,), "Shale's iterators do not stop after skipped entries";
    set_background_purge_on_iterator_cleanup(v: bool) = (false,), "Shale has no such setting";
}

impl ReadOptions {
    pub(crate) fn clone_ref(&self, py: Python<'_>) -> Self {
        ReadOptions {
            lower: self.lower.as_ref().map(|k| k.clone_ref(py)),
            upper: self.upper.as_ref().map(|k| k.clone_ref(py)),
            verify_checksums: self.verify_checksums,
            fill_cache: self.fill_cache,
            prefix_same_as_start: self.prefix_same_as_start,
            total_order_seek: self.total_order_seek,
        }
    }
    pub(crate) fn to_shale(&self, py: Python<'_>, raw: bool) -> PyResult<shale::ReadOptions> {
        let mut ro = shale::ReadOptions::default();
        if let Some(k) = &self.lower {
            ro.set_iterate_lower_bound(encode(k.bind(py), raw)?);
        }
        if let Some(k) = &self.upper {
            ro.set_iterate_upper_bound(encode(k.bind(py), raw)?);
        }
        ro.set_verify_checksums(self.verify_checksums);
        ro.fill_cache(self.fill_cache);
        ro.set_prefix_same_as_start(self.prefix_same_as_start);
        ro.set_total_order_seek(self.total_order_seek);
        Ok(ro)
    }
}

/// Write options (rocksdict's `WriteOptions`: attributes `sync`, `disable_wal`, `no_slowdown`).
#[pyclass(module = "shale", get_all, set_all)]
#[derive(Clone, Default)]
pub(crate) struct WriteOptions {
    sync: bool,
    disable_wal: bool,
    no_slowdown: bool,
}

#[pymethods]
impl WriteOptions {
    #[new]
    fn new() -> Self {
        WriteOptions::default()
    }
}

/// rocksdict's other `WriteOptions` attributes, for settings Shale does not have: they read
/// False, and only False may be assigned (NotSupported otherwise).
macro_rules! false_only_attributes {
    ($($name:ident / $set:ident: $why:literal),* $(,)?) => {
        #[pymethods]
        impl WriteOptions {
            $(
                #[getter]
                fn $name(&self) -> bool {
                    false
                }
                #[setter]
                fn $set(&mut self, v: bool) -> PyResult<()> {
                    if !v {
                        return Ok(());
                    }
                    Err(crate::errors::NotSupported::new_err(format!(
                        "WriteOptions.{} = True: {}", stringify!($name), $why
                    )))
                }
            )*
        }
    };
}

false_only_attributes! {
    low_pri / set_low_pri: "Shale has no low-priority writes",
    ignore_missing_column_families / set_ignore_missing_column_families:
        "Shale has no such setting",
    memtable_insert_hint_per_batch / set_memtable_insert_hint_per_batch: "Shale has no such setting",
}

impl WriteOptions {
    pub(crate) fn to_shale(&self) -> shale::WriteOptions {
        let mut w = shale::WriteOptions::default();
        w.set_sync(self.sync);
        w.disable_wal(self.disable_wal);
        w.set_no_slowdown(self.no_slowdown);
        w
    }
}
