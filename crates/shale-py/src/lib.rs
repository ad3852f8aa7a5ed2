//! The `shale` Python module: Shale in rocksdict's style (`Rdict`, `Options`, `WriteBatch`,
//! `Snapshot`, `RdictIter`, ...).
//!
//! Keys and values are `bytes` in raw mode; otherwise any Python object, encoded as rocksdict
//! encodes them (a type byte, then the bytes of a `bytes`, `str`, `int`, `float` or `bool`, or a
//! pickle of anything else; see `encode`). The GIL is released around every call into the engine
//! that may do I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

mod prefix;
mod styles;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

create_exception!(shale, ShaleError, PyException, "Base class of Shale's errors.");
create_exception!(shale, NotFound, ShaleError, "RocksDB's NotFound status.");
create_exception!(shale, Corruption, ShaleError, "RocksDB's Corruption status.");
create_exception!(shale, NotSupported, ShaleError, "RocksDB's NotSupported status.");
create_exception!(shale, InvalidArgument, ShaleError, "RocksDB's InvalidArgument status.");
create_exception!(shale, IOError, ShaleError, "RocksDB's IOError status.");
create_exception!(shale, MergeInProgress, ShaleError, "RocksDB's MergeInProgress status.");
create_exception!(shale, Incomplete, ShaleError, "RocksDB's Incomplete status.");
create_exception!(
    shale,
    ShutdownInProgress,
    ShaleError,
    "RocksDB's ShutdownInProgress status."
);
create_exception!(shale, TimedOut, ShaleError, "RocksDB's TimedOut status.");
create_exception!(shale, Aborted, ShaleError, "RocksDB's Aborted status.");
create_exception!(shale, Busy, ShaleError, "RocksDB's Busy status.");
create_exception!(shale, Expired, ShaleError, "RocksDB's Expired status.");
create_exception!(shale, TryAgain, ShaleError, "RocksDB's TryAgain status.");
create_exception!(
    shale,
    CompactionTooLarge,
    ShaleError,
    "RocksDB's CompactionTooLarge status."
);
create_exception!(
    shale,
    ColumnFamilyDropped,
    ShaleError,
    "RocksDB's ColumnFamilyDropped status."
);
create_exception!(shale, Unknown, ShaleError, "An error of no other class.");
create_exception!(
    shale,
    DbClosedError,
    ShaleError,
    "The Rdict was closed (rocksdict's name)."
);

/// The Python exception for an engine error: one class per RocksDB status.
fn to_py(e: shale::Error) -> PyErr {
    use shale::ErrorKind as K;
    let m = e.to_string();
    match e.kind() {
        K::NotFound => NotFound::new_err(m),
        K::Corruption => Corruption::new_err(m),
        K::NotSupported => NotSupported::new_err(m),
        K::InvalidArgument => InvalidArgument::new_err(m),
        K::IOError => IOError::new_err(m),
        K::MergeInProgress => MergeInProgress::new_err(m),
        K::Incomplete => Incomplete::new_err(m),
        K::ShutdownInProgress => ShutdownInProgress::new_err(m),
        K::TimedOut => TimedOut::new_err(m),
        K::Aborted => Aborted::new_err(m),
        K::Busy => Busy::new_err(m),
        K::Expired => Expired::new_err(m),
        K::TryAgain => TryAgain::new_err(m),
        K::CompactionTooLarge => CompactionTooLarge::new_err(m),
        K::ColumnFamilyDropped => ColumnFamilyDropped::new_err(m),
        K::Unknown => Unknown::new_err(m),
    }
}

/// Lock a mutex that is only held briefly and never across Python code or a GIL release.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lock an iterator's state, which is held while the GIL is released: another thread waiting
/// for it with the GIL held would deadlock, so an iterator in use by another thread is an error.
fn lock_iter<T>(m: &Mutex<T>) -> PyResult<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => {
            Err(PyRuntimeError::new_err("the iterator is in use by another thread"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding of keys and values

// rocksdict's type bytes (checked byte for byte against rocksdict in tests/test_compat.py).
const T_BYTES: u8 = 1;
const T_STR: u8 = 2;
const T_INT: u8 = 3;
const T_FLOAT: u8 = 4;
const T_BOOL: u8 = 5;
const T_PICKLE: u8 = 6;

static PICKLE_DUMPS: GILOnceCell<PyObject> = GILOnceCell::new();
static PICKLE_LOADS: GILOnceCell<PyObject> = GILOnceCell::new();

fn pickle_fn<'py>(py: Python<'py>, cell: &'static GILOnceCell<PyObject>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let f = cell.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import("pickle")?.getattr(name)?.unbind())
    })?;
    Ok(f.bind(py).clone())
}

/// A Python object as the bytes stored: in raw mode it must be `bytes`.
fn encode(obj: &Bound<'_, PyAny>, raw: bool) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        if raw {
            return Ok(b.as_bytes().to_vec());
        }
        return Ok(tagged(T_BYTES, b.as_bytes()));
    }
    if raw {
        return Err(PyTypeError::new_err(format!(
            "raw_mode: keys and values must be bytes, not {}",
            obj.get_type().name()?
        )));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(tagged(T_STR, s.to_cow()?.as_bytes()));
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(vec![T_BOOL, b.is_true() as u8]);
    }
    if let Ok(i) = obj.downcast::<PyInt>() {
        return Ok(tagged(T_INT, &int_bytes(i)?));
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return Ok(tagged(T_FLOAT, &f.value().to_be_bytes()));
    }
    let p = pickle_fn(obj.py(), &PICKLE_DUMPS, "dumps")?.call1((obj,))?;
    Ok(tagged(T_PICKLE, p.downcast::<PyBytes>()?.as_bytes()))
}

fn tagged(t: u8, b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(b.len() + 1);
    v.push(t);
    v.extend_from_slice(b);
    v
}

/// An int as the fewest big-endian two's-complement bytes (at least one), as rocksdict.
fn int_bytes(i: &Bound<'_, PyInt>) -> PyResult<Vec<u8>> {
    if let Ok(v) = i.extract::<i64>() {
        let b = v.to_be_bytes();
        let mut s = 0;
        while s < 7 && ((b[s] == 0 && b[s + 1] & 0x80 == 0) || (b[s] == 0xff && b[s + 1] & 0x80 != 0)) {
            s += 1;
        }
        return Ok(b[s..].to_vec());
    }
    let neg = i.lt(0)?;
    let magnitude = if neg {
        i.call_method0("__invert__")?
    } else {
        i.clone().into_any()
    };
    let bits: usize = magnitude.call_method0("bit_length")?.extract()?;
    let kw = PyDict::new(i.py());
    kw.set_item("signed", true)?;
    let b = i.call_method("to_bytes", ((bits + 8) / 8, "big"), Some(&kw))?;
    Ok(b.downcast::<PyBytes>()?.as_bytes().to_vec())
}

/// Stored bytes as the Python object they encode.
fn decode(py: Python<'_>, b: &[u8], raw: bool) -> PyResult<PyObject> {
    if raw {
        return Ok(PyBytes::new(py, b).into_any().unbind());
    }
    let (t, rest) = match b.split_first() {
        Some((t, rest)) => (*t, rest),
        None => {
            return Err(InvalidArgument::new_err(
                "an empty stored value is not in rocksdict's encoding (raw_mode?)",
            ))
        }
    };
    Ok(match t {
        T_BYTES => PyBytes::new(py, rest).into_any().unbind(),
        T_STR => PyString::new(
            py,
            std::str::from_utf8(rest).map_err(|e| Corruption::new_err(e.to_string()))?,
        )
        .into_any()
        .unbind(),
        T_INT if !rest.is_empty() && rest.len() <= 8 => {
            let fill = if rest[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut a = [fill; 8];
            a[8 - rest.len()..].copy_from_slice(rest);
            i64::from_be_bytes(a).into_pyobject(py)?.into_any().unbind()
        }
        T_INT if !rest.is_empty() => {
            let kw = PyDict::new(py);
            kw.set_item("signed", true)?;
            py.get_type::<PyInt>()
                .call_method("from_bytes", (PyBytes::new(py, rest), "big"), Some(&kw))?
                .unbind()
        }
        T_FLOAT if rest.len() == 8 => {
            let mut a = [0; 8];
            a.copy_from_slice(rest);
            PyFloat::new(py, f64::from_be_bytes(a)).into_any().unbind()
        }
        T_BOOL if rest.len() == 1 => PyBool::new(py, rest[0] != 0).to_owned().into_any().unbind(),
        T_PICKLE => pickle_fn(py, &PICKLE_LOADS, "loads")?
            .call1((PyBytes::new(py, rest),))?
            .unbind(),
        _ => {
            return Err(InvalidArgument::new_err(format!(
                "a stored value is not in rocksdict's encoding (type byte {t}; a raw_mode database?)"
            )))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Options

/// Compression of table blocks (rocksdict's `DBCompressionType`).
#[pyclass(module = "shale", frozen, eq)]
#[derive(Clone, Copy, PartialEq)]
struct DBCompressionType {
    t: shale::DBCompressionType,
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

fn compression_arg(v: &Bound<'_, PyAny>) -> PyResult<shale::DBCompressionType> {
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
        "max_log_file_size" => o.set_max_log_file_size(v.extract()?),
        "keep_log_file_num" => o.set_keep_log_file_num(v.extract()?),
        "stats_dump_period_sec" => o.set_stats_dump_period_sec(v.extract()?),
        "info_log_level" | "log_level" => o.set_log_level(log_level_arg(v)?),
        _ => return Err(PyValueError::new_err(format!("unknown option: {name:?}"))),
    }
    Ok(())
}

/// Database options with RocksDB's names (rocksdict's `Options`). `create_if_missing` is on by
/// default, as in rocksdict.
#[pyclass(module = "shale")]
#[derive(Clone)]
struct Options {
    inner: shale::Options,
    raw_mode: bool,
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
    set_max_log_file_size => "max_log_file_size": usize,
    set_keep_log_file_num => "keep_log_file_num": usize,
    set_stats_dump_period_sec => "stats_dump_period_sec": u32,
    set_log_level => "info_log_level": PyObject,
}

#[pymethods]
impl Options {
    /// `Options(raw_mode=False, **options)`: keyword arguments are RocksDB option names
    /// (`write_buffer_size=...`); an unknown name is a ValueError.
    #[new]
    #[pyo3(signature = (raw_mode = false, **kwargs))]
    fn new(raw_mode: bool, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut inner = shale::Options::default();
        inner.create_if_missing(true);
        let mut o = Options { inner, raw_mode };
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
    #[setter(raw_mode)]
    fn set_raw_mode_attr(&mut self, v: bool) {
        self.raw_mode = v;
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
struct ReadOptions {
    lower: Option<PyObject>,
    upper: Option<PyObject>,
    verify_checksums: bool,
    fill_cache: bool,
    /// `prefix.rs`: prefix seek switches.
    prefix_same_as_start: bool,
    total_order_seek: bool,
}

#[pymethods]
impl ReadOptions {
    #[new]
    #[pyo3(signature = (raw_mode = false))]
    fn new(raw_mode: bool) -> Self {
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
}

impl ReadOptions {
    fn clone_ref(&self, py: Python<'_>) -> Self {
        ReadOptions {
            lower: self.lower.as_ref().map(|k| k.clone_ref(py)),
            upper: self.upper.as_ref().map(|k| k.clone_ref(py)),
            verify_checksums: self.verify_checksums,
            fill_cache: self.fill_cache,
            prefix_same_as_start: self.prefix_same_as_start,
            total_order_seek: self.total_order_seek,
        }
    }
    fn to_shale(&self, py: Python<'_>, raw: bool) -> PyResult<shale::ReadOptions> {
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
struct WriteOptions {
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

impl WriteOptions {
    fn to_shale(&self) -> shale::WriteOptions {
        let mut w = shale::WriteOptions::default();
        w.set_sync(self.sync);
        w.disable_wal(self.disable_wal);
        w.set_no_slowdown(self.no_slowdown);
        w
    }
}

// ---------------------------------------------------------------------------------------------
// WriteBatch

/// A batch of writes applied atomically by `Rdict.write` (rocksdict's `WriteBatch`). Each write
/// goes to the family given as `column_family`, else to the one `set_default_column_family`
/// chose, else to `default`: one batch may touch several families and is still one atomic write.
#[pyclass(module = "shale")]
struct WriteBatch {
    inner: shale::WriteBatch,
    raw: bool,
    default_cf: Option<Arc<shale::ColumnFamily>>,
}

impl WriteBatch {
    /// The family a write goes to (None: `default`).
    fn target(&self, column_family: Option<PyRef<'_, ColumnFamily>>) -> Option<Arc<shale::ColumnFamily>> {
        column_family.map(|c| c.cf.clone()).or_else(|| self.default_cf.clone())
    }
}

#[pymethods]
impl WriteBatch {
    #[new]
    #[pyo3(signature = (raw_mode = false))]
    fn new(raw_mode: bool) -> Self {
        WriteBatch {
            inner: shale::WriteBatch::new(),
            raw: raw_mode,
            default_cf: None,
        }
    }
    /// The family `batch[k] = v`, `del batch[k]` and calls without `column_family` write to
    /// (None: `default`).
    #[pyo3(signature = (column_family))]
    fn set_default_column_family(&mut self, column_family: Option<PyRef<'_, ColumnFamily>>) {
        self.default_cf = column_family.map(|c| c.cf.clone());
    }
    #[pyo3(signature = (key, value, column_family = None))]
    fn put(
        &mut self,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        column_family: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let (k, v) = (encode(key, self.raw)?, encode(value, self.raw)?);
        match self.target(column_family) {
            Some(cf) => self.inner.put_cf(&cf, k, v),
            None => self.inner.put(k, v),
        }
        Ok(())
    }
    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value, None)
    }
    #[pyo3(signature = (key, column_family = None))]
    fn delete(&mut self, key: &Bound<'_, PyAny>, column_family: Option<PyRef<'_, ColumnFamily>>) -> PyResult<()> {
        let k = encode(key, self.raw)?;
        match self.target(column_family) {
            Some(cf) => self.inner.delete_cf(&cf, k),
            None => self.inner.delete(k),
        }
        Ok(())
    }
    fn __delitem__(&mut self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key, None)
    }
    /// Delete the keys in `[begin, end)`.
    #[pyo3(signature = (begin, end, column_family = None))]
    fn delete_range(
        &mut self,
        begin: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        column_family: Option<PyRef<'_, ColumnFamily>>,
    ) -> PyResult<()> {
        let (b, e) = (encode(begin, self.raw)?, encode(end, self.raw)?);
        match self.target(column_family) {
            Some(cf) => self.inner.delete_range_cf(&cf, b, e),
            None => self.inner.delete_range(b, e),
        }
        Ok(())
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }
    fn size_in_bytes(&self) -> usize {
        self.inner.size_in_bytes()
    }
    fn clear(&mut self) {
        self.inner.clear();
    }
}

// ---------------------------------------------------------------------------------------------
// Column families

/// A handle on a column family (rocksdict's `ColumnFamily`), from
/// `Rdict.get_column_family_handle`: names the family a `WriteBatch` write goes to. It stays
/// valid while it lives, even if the family is dropped (writes through it then fail).
#[pyclass(module = "shale", frozen)]
struct ColumnFamily {
    cf: Arc<shale::ColumnFamily>,
}

#[pymethods]
impl ColumnFamily {
    /// The family's name.
    #[getter]
    fn name(&self) -> String {
        self.cf.name().to_string()
    }
    fn __repr__(&self) -> String {
        format!("ColumnFamily({:?})", self.cf.name())
    }
}

/// How `Rdict` opens the database (rocksdict's `AccessType`): read-write (the default) or
/// read-only. A read-only open may name a subset of the families.
#[pyclass(module = "shale", frozen)]
#[derive(Clone, Copy)]
struct AccessType {
    read_only: bool,
    error_if_log_file_exist: bool,
}

#[pymethods]
impl AccessType {
    #[staticmethod]
    fn read_write() -> Self {
        AccessType {
            read_only: false,
            error_if_log_file_exist: false,
        }
    }
    /// Read-only; with `error_if_log_file_exist`, a non-empty write-ahead log is an error (as
    /// RocksDB's `error_if_wal_file_exists`).
    #[staticmethod]
    #[pyo3(signature = (error_if_log_file_exist = true))]
    fn read_only(error_if_log_file_exist: bool) -> Self {
        AccessType {
            read_only: true,
            error_if_log_file_exist,
        }
    }
    fn __repr__(&self) -> String {
        if self.read_only {
            format!("AccessType.read_only({})", self.error_if_log_file_exist)
        } else {
            "AccessType.read_write()".to_string()
        }
    }
}

/// The families `Rdict`'s `column_families` names, with their options (None: not given).
fn named_families(
    raw: bool,
    column_families: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<Vec<shale::ColumnFamilyDescriptor>>> {
    let Some(families) = column_families else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(families.len());
    for (name, o) in families.iter() {
        let name: String = name
            .extract()
            .map_err(|_| PyTypeError::new_err("column_families: the names are str"))?;
        let o = o
            .downcast::<Options>()
            .map_err(|_| PyTypeError::new_err(format!("column_families[{name:?}]: the value is an Options")))?;
        let o = o.borrow();
        check_family_raw_mode(&name, o.raw_mode, raw)?;
        out.push(shale::ColumnFamilyDescriptor::new(name, o.inner.clone()));
    }
    Ok(Some(out))
}

/// Every family the database at `path` has, each with `opts` (rocksdict's choice when
/// `column_families` is None). A database that does not exist yet has only `default`, which
/// the open creates.
fn existing_families(opts: &shale::Options, path: &str) -> Vec<shale::ColumnFamilyDescriptor> {
    shale::DB::list_cf(opts, path)
        .unwrap_or_default()
        .into_iter()
        .map(|n| shale::ColumnFamilyDescriptor::new(n, opts.clone()))
        .collect()
}

/// rocksdict's rule: every family's Options has the main Options' raw_mode.
fn check_family_raw_mode(name: &str, family_raw: bool, raw: bool) -> PyResult<()> {
    if family_raw != raw {
        return Err(PyValueError::new_err(format!(
            "column family {name:?}: its Options must have raw_mode={raw}, as the database's"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// External table files and checkpoints

/// Writes external table files to ingest later with `Rdict.ingest_external_file` (rocksdict's
/// `SstFileWriter`): keys strictly increasing (in their encoded form), each with sequence
/// number 0. `options` must have the `raw_mode` of the Rdict that will ingest the files.
#[pyclass(module = "shale", frozen)]
struct SstFileWriter {
    /// No Python code runs while it is held (so waiting for it with the GIL held cannot
    /// deadlock: its holder never needs the GIL).
    inner: Mutex<shale::SstFileWriter<'static>>,
    raw: bool,
}

#[pymethods]
impl SstFileWriter {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(options: Option<PyRef<'_, Options>>) -> PyResult<Self> {
        let (o, raw) = match options {
            Some(o) => (o.inner.clone(), o.raw_mode),
            None => (shale::Options::default(), false),
        };
        Ok(SstFileWriter {
            inner: Mutex::new(shale::SstFileWriter::with_options(o)),
            raw,
        })
    }
    /// Start a new file at `path` (replacing any file there).
    fn open(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.allow_threads(|| lock(&self.inner).open(path)).map_err(to_py)
    }
    /// Add `key` → `value` (keys strictly increasing). The entry goes into the table being
    /// built in memory (a block is written out now and then): the GIL is kept, as releasing it
    /// would cost more than the call. Raw-mode bytes are added without a copy.
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.raw {
            if let (Ok(k), Ok(v)) = (key.downcast::<PyBytes>(), value.downcast::<PyBytes>()) {
                return lock(&self.inner).put(k.as_bytes(), v.as_bytes()).map_err(to_py);
            }
        }
        let (k, v) = (encode(key, self.raw)?, encode(value, self.raw)?);
        lock(&self.inner).put(k, v).map_err(to_py)
    }
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value)
    }
    /// Add a deletion of `key` (keys strictly increasing).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = encode(key, self.raw)?;
        py.allow_threads(|| lock(&self.inner).delete(k)).map_err(to_py)
    }
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key)
    }
    /// Delete the keys in `[begin, end)` (in any order relative to the point keys).
    fn delete_range(&self, py: Python<'_>, begin: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<()> {
        let (b, e) = (encode(begin, self.raw)?, encode(end, self.raw)?);
        py.allow_threads(|| lock(&self.inner).delete_range(b, e)).map_err(to_py)
    }
    /// Write the rest of the file and sync it (an empty file is InvalidArgument).
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| lock(&self.inner).finish()).map_err(to_py)
    }
    /// The file's size: exact after `finish`, the bytes written so far before.
    fn file_size(&self, py: Python<'_>) -> u64 {
        py.allow_threads(|| lock(&self.inner).file_size())
    }
}

/// How `Rdict.ingest_external_file` ingests (rocksdict's `IngestExternalFileOptions`, with
/// RocksDB's defaults).
#[pyclass(module = "shale")]
#[derive(Default)]
struct IngestExternalFileOptions {
    inner: shale::IngestExternalFileOptions,
}

#[pymethods]
impl IngestExternalFileOptions {
    #[new]
    fn new() -> Self {
        Self::default()
    }
    /// Move the files into the DB (hard links; the originals are removed) instead of copying.
    fn set_move_files(&mut self, v: bool) {
        self.inner.set_move_files(v);
    }
    /// Keep the files invisible to existing snapshots (a new sequence number when needed).
    fn set_snapshot_consistency(&mut self, v: bool) {
        self.inner.set_snapshot_consistency(v);
    }
    /// Allow a global sequence number (else an ingest that needs one fails).
    fn set_allow_global_seqno(&mut self, v: bool) {
        self.inner.set_allow_global_seqno(v);
    }
    /// Flush an overlapping memtable first (else such an ingest fails).
    fn set_allow_blocking_flush(&mut self, v: bool) {
        self.inner.set_allow_blocking_flush(v);
    }
    /// Ingest below every existing version (not supported by Shale: InvalidArgument).
    fn set_ingest_behind(&mut self, v: bool) {
        self.inner.set_ingest_behind(v);
    }
}

/// Checkpoints of an open database (rocksdict's `Checkpoint(db)`): each
/// `create_checkpoint(path)` makes a new directory that opens as the database at that moment.
#[pyclass(module = "shale", frozen)]
struct Checkpoint {
    handle: Arc<Handle>,
}

#[pymethods]
impl Checkpoint {
    #[new]
    fn new(db: PyRef<'_, Rdict>) -> PyResult<Self> {
        db.handle.check_open()?;
        Ok(Checkpoint {
            handle: db.handle.clone(),
        })
    }
    /// A checkpoint in the new directory `path` (an existing path is an error).
    fn create_checkpoint(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let db = self.handle.db()?;
        py.allow_threads(|| shale::Checkpoint::new(&db)?.create_checkpoint(path))
            .map_err(to_py)
    }
}

// ---------------------------------------------------------------------------------------------
// Rdict

/// The open database, shared by the Rdict and its iterators and snapshots; `None` once closed.
struct Handle {
    db: RwLock<Option<Arc<shale::DB>>>,
    closed: AtomicBool,
}

impl Handle {
    fn new(db: shale::DB) -> Handle {
        Handle {
            db: RwLock::new(Some(Arc::new(db))),
            closed: AtomicBool::new(false),
        }
    }
    /// Fails once the Rdict is closed (cheaper than `db()` where the DB itself is not needed).
    fn check_open(&self) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(DbClosedError::new_err("the Rdict is closed"));
        }
        Ok(())
    }
    fn db(&self) -> PyResult<Arc<shale::DB>> {
        self.db
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| DbClosedError::new_err("the Rdict is closed"))
    }
}

/// A dict-like view of a Shale database (rocksdict's `Rdict`): of its `default` family, or of
/// another family for the Rdict `get_column_family` / `create_column_family` return.
#[pyclass(module = "shale", frozen)]
struct Rdict {
    handle: Arc<Handle>,
    /// The family this Rdict reads and writes.
    cf: Arc<shale::ColumnFamily>,
    /// A family's Rdict closes on its own (rocksdict's rule); the database closes with the
    /// Rdict that opened it.
    is_family_view: bool,
    view_closed: AtomicBool,
    path: String,
    raw: bool,
    read_opts: Mutex<ReadOptions>,
    write_opts: Mutex<shale::WriteOptions>,
}

const CONFIG_FILE: &str = "rocksdict-config.json";

/// The raw_mode a rocksdict config file in `path` records, if there is one.
fn config_raw_mode(path: &str) -> Option<bool> {
    let s = std::fs::read_to_string(std::path::Path::new(path).join(CONFIG_FILE)).ok()?;
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("\"raw_mode\":true") {
        Some(true)
    } else if compact.contains("\"raw_mode\":false") {
        Some(false)
    } else {
        None
    }
}

enum Kind {
    Keys,
    Values,
    Items,
}

impl Rdict {
    fn db(&self) -> PyResult<Arc<shale::DB>> {
        if self.view_closed.load(Ordering::Acquire) {
            return Err(DbClosedError::new_err(format!(
                "the Rdict of column family {:?} is closed",
                self.cf.name()
            )));
        }
        self.handle.db()
    }
    /// An Rdict on family `cf` of the same database, with this one's options.
    fn family_view(&self, py: Python<'_>, cf: Arc<shale::ColumnFamily>) -> Rdict {
        Rdict {
            handle: self.handle.clone(),
            cf,
            is_family_view: true,
            view_closed: AtomicBool::new(false),
            path: self.path.clone(),
            raw: self.raw,
            read_opts: Mutex::new(lock(&self.read_opts).clone_ref(py)),
            write_opts: Mutex::new(lock(&self.write_opts).clone()),
        }
    }
    fn handle_of(db: &shale::DB, name: &str) -> PyResult<Arc<shale::ColumnFamily>> {
        db.cf_handle(name)
            .ok_or_else(|| InvalidArgument::new_err(format!("column family {name:?} does not exist")))
    }
    fn ro(&self, py: Python<'_>, read_opt: Option<PyRef<'_, ReadOptions>>) -> PyResult<shale::ReadOptions> {
        match read_opt {
            Some(r) => r.to_shale(py, self.raw),
            // Cloned first: encoding the bounds may run Python code (pickle).
            None => {
                let ro = lock(&self.read_opts).clone_ref(py);
                ro.to_shale(py, self.raw)
            }
        }
    }
    fn wo(&self, write_opt: Option<PyRef<'_, WriteOptions>>) -> shale::WriteOptions {
        match write_opt {
            Some(w) => w.to_shale(),
            None => lock(&self.write_opts).clone(),
        }
    }
    fn get_one(&self, py: Python<'_>, key: &Bound<'_, PyAny>, ro: &shale::ReadOptions) -> PyResult<Option<PyObject>> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let v = py.allow_threads(|| db.get_cf_opt(&self.cf, &k, ro)).map_err(to_py)?;
        v.map(|v| decode(py, &v, self.raw)).transpose()
    }
    fn view(
        &self,
        py: Python<'_>,
        kind: Kind,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictView> {
        let db = self.db()?;
        let ro = self.ro(py, read_opt)?;
        let it = py.allow_threads(|| db.raw_iterator_cf_opt(&self.cf, ro));
        RdictView::new(py, it, self.handle.clone(), self.raw, kind, backwards, from_key)
    }
}

#[pymethods]
impl Rdict {
    /// Open (by default create) the database at `path`. With `options=None`, the raw_mode a
    /// rocksdict config file in the directory records is used (rocksdict does the same).
    /// `column_families` maps family names to their Options; None opens every family the
    /// database has, with `options` (as rocksdict). A read-write open must name every family
    /// (RocksDB's rule; `create_missing_column_families` creates the named ones it lacks).
    #[new]
    #[pyo3(signature = (path, options = None, column_families = None, access_type = None, read_only = false))]
    fn new(
        py: Python<'_>,
        path: String,
        options: Option<PyRef<'_, Options>>,
        column_families: Option<&Bound<'_, PyDict>>,
        access_type: Option<AccessType>,
        read_only: bool,
    ) -> PyResult<Self> {
        let (opts, raw) = match options {
            Some(o) => (o.inner.clone(), o.raw_mode),
            None => {
                let mut o = shale::Options::default();
                o.create_if_missing(true);
                (o, config_raw_mode(&path).unwrap_or(false))
            }
        };
        let access = access_type.unwrap_or(if read_only {
            AccessType::read_only(false)
        } else {
            AccessType::read_write()
        });
        let read_only = read_only || access.read_only;
        let error_if_wal = access.read_only && access.error_if_log_file_exist;
        let named = named_families(raw, column_families)?;
        let p = path.clone();
        let db = py
            .allow_threads(move || {
                let descs = named.unwrap_or_else(|| existing_families(&opts, &p));
                if read_only {
                    shale::DB::open_cf_descriptors_read_only(&opts, &p, descs, error_if_wal)
                } else {
                    shale::DB::open_cf_descriptors(&opts, &p, descs)
                }
            })
            .map_err(to_py)?;
        if !read_only {
            // rocksdict reads this file to open the database with the right comparator.
            let config = format!("{{\"raw_mode\":{raw},\"prefix_extractors\":{{}}}}");
            std::fs::write(std::path::Path::new(&path).join(CONFIG_FILE), config)
                .map_err(|e| IOError::new_err(format!("writing {CONFIG_FILE}: {e}")))?;
        }
        let cf = Rdict::handle_of(&db, "default")?;
        Ok(Rdict {
            handle: Arc::new(Handle::new(db)),
            cf,
            is_family_view: false,
            view_closed: AtomicBool::new(false),
            path,
            raw,
            read_opts: Mutex::new(ReadOptions::new(raw)),
            write_opts: Mutex::new(shale::WriteOptions::default()),
        })
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.close(py)
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if let Ok(keys) = key.downcast::<PyList>() {
            return self.multi_get(py, keys, None);
        }
        let ro = self.ro(py, None)?;
        self.get_one(py, key, &ro)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }
    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, None)
    }
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, None)
    }
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, None)?;
        Ok(py
            .allow_threads(|| db.get_cf_opt(&self.cf, &k, &ro))
            .map_err(to_py)?
            .is_some())
    }
    fn __iter__(&self, py: Python<'_>) -> PyResult<RdictView> {
        self.view(py, Kind::Keys, false, None, None)
    }

    /// The value of `key`, or `default`; a list of keys gives a list of values.
    #[pyo3(signature = (key, default = None, read_opt = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        if let Ok(keys) = key.downcast::<PyList>() {
            return self.multi_get(py, keys, read_opt);
        }
        let ro = self.ro(py, read_opt)?;
        Ok(self
            .get_one(py, key, &ro)?
            .unwrap_or_else(|| default.unwrap_or_else(|| py.None())))
    }

    #[pyo3(signature = (key, value, write_opt = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let (k, v) = (encode(key, self.raw)?, encode(value, self.raw)?);
        let wo = self.wo(write_opt);
        py.allow_threads(|| db.put_cf_opt(&self.cf, &k, &v, &wo)).map_err(to_py)
    }

    #[pyo3(signature = (key, write_opt = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let wo = self.wo(write_opt);
        py.allow_threads(|| db.delete_cf_opt(&self.cf, &k, &wo)).map_err(to_py)
    }

    /// Delete the keys in `[begin, end)`.
    #[pyo3(signature = (begin, end, write_opt = None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        begin: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let (b, e) = (encode(begin, self.raw)?, encode(end, self.raw)?);
        let wo = self.wo(write_opt);
        py.allow_threads(|| db.delete_range_cf_opt(&self.cf, &b, &e, &wo))
            .map_err(to_py)
    }

    /// Apply a WriteBatch atomically.
    #[pyo3(signature = (write_batch, write_opt = None))]
    fn write(
        &self,
        py: Python<'_>,
        write_batch: PyRef<'_, WriteBatch>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        if write_batch.raw != self.raw {
            return Err(PyValueError::new_err(format!(
                "the WriteBatch's raw_mode ({}) differs from the Rdict's ({})",
                write_batch.raw, self.raw
            )));
        }
        let db = self.db()?;
        let batch = write_batch.inner.clone();
        drop(write_batch);
        let wo = self.wo(write_opt);
        py.allow_threads(|| db.write_opt(batch, &wo)).map_err(to_py)
    }

    #[pyo3(signature = (keys, read_opt = None))]
    fn multi_get(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyList>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let db = self.db()?;
        let ks = keys
            .iter()
            .map(|k| encode(&k, self.raw))
            .collect::<PyResult<Vec<_>>>()?;
        let ro = self.ro(py, read_opt)?;
        let vs = py.allow_threads(|| db.multi_get_cf_opt(ks.iter().map(|k| (&self.cf, k)), &ro));
        let out = PyList::empty(py);
        for v in vs {
            match v.map_err(to_py)? {
                Some(v) => out.append(decode(py, &v, self.raw)?)?,
                None => out.append(py.None())?,
            }
        }
        Ok(out.into_any().unbind())
    }

    /// A cursor, not positioned: call `seek_to_first`, `seek`, ... first.
    #[pyo3(signature = (read_opt = None))]
    fn iter(&self, py: Python<'_>, read_opt: Option<PyRef<'_, ReadOptions>>) -> PyResult<RdictIter> {
        let db = self.db()?;
        let ro = self.ro(py, read_opt)?;
        let it = py.allow_threads(|| db.raw_iterator_cf_opt(&self.cf, ro));
        Ok(RdictIter {
            it: Mutex::new(it),
            handle: self.handle.clone(),
            raw: self.raw,
        })
    }

    /// A consistent view of the database as of now, read in this Rdict's column family (as
    /// rocksdict: a family's Rdict gives a snapshot of that family).
    fn snapshot(&self) -> PyResult<Snapshot> {
        let db = self.db()?;
        Ok(Snapshot {
            snap: db.snapshot(),
            cf: self.cf.clone(),
            handle: self.handle.clone(),
            raw: self.raw,
        })
    }

    /// Compact the keys in `[begin, end]` (None: unbounded) down to the last level.
    #[pyo3(signature = (begin, end, compact_opt = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        begin: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        compact_opt: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = compact_opt; // rocksdict's CompactOptions: not supported, the defaults apply
        let db = self.db()?;
        let b = begin.map(|k| encode(k, self.raw)).transpose()?;
        let e = end.map(|k| encode(k, self.raw)).transpose()?;
        py.allow_threads(|| db.compact_range_cf(&self.cf, b.as_deref(), e.as_deref()))
            .map_err(to_py)
    }

    /// Ingest external table files (written by an `SstFileWriter`) into this Rdict's family,
    /// as one atomic change (rocksdict's `ingest_external_file`).
    #[pyo3(signature = (paths, opts = None))]
    fn ingest_external_file(
        &self,
        py: Python<'_>,
        paths: Vec<std::path::PathBuf>,
        opts: Option<PyRef<'_, IngestExternalFileOptions>>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let io = opts.map(|o| o.inner.clone()).unwrap_or_default();
        py.allow_threads(|| db.ingest_external_file_cf_opts(&self.cf, &io, paths))
            .map_err(to_py)
    }

    /// A checkpoint of the whole database in the new directory `path` (as
    /// `Checkpoint(self).create_checkpoint(path)`).
    fn create_checkpoint(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(|| shale::Checkpoint::new(&db)?.create_checkpoint(path))
            .map_err(to_py)
    }

    /// Flush the memtable to a table file (always waits for it).
    #[pyo3(signature = (wait = true))]
    fn flush(&self, py: Python<'_>, wait: bool) -> PyResult<()> {
        let _ = wait;
        let db = self.db()?;
        py.allow_threads(|| db.flush_cf(&self.cf)).map_err(to_py)
    }

    #[pyo3(signature = (sync = true))]
    fn flush_wal(&self, py: Python<'_>, sync: bool) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(|| db.flush_wal(sync)).map_err(to_py)
    }

    /// A property such as `rocksdb.stats`; None if unknown.
    fn property_value(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        let db = self.db()?;
        py.allow_threads(|| db.property_value_cf(&self.cf, name)).map_err(to_py)
    }
    fn property_int_value(&self, py: Python<'_>, name: &str) -> PyResult<Option<u64>> {
        let db = self.db()?;
        py.allow_threads(|| db.property_int_value_cf(&self.cf, name))
            .map_err(to_py)
    }
    fn latest_sequence_number(&self) -> PyResult<u64> {
        Ok(self.db()?.latest_sequence_number())
    }
    fn path(&self) -> String {
        self.path.clone()
    }
    fn set_read_options(&self, py: Python<'_>, read_opt: PyRef<'_, ReadOptions>) {
        let old = std::mem::replace(&mut *lock(&self.read_opts), read_opt.clone_ref(py));
        drop(old); // its bounds' destructors may run Python code: not under the lock
    }
    fn set_write_options(&self, write_opt: PyRef<'_, WriteOptions>) {
        *lock(&self.write_opts) = write_opt.to_shale();
    }

    /// Close the database (flushes what skipped the WAL); later calls raise DbClosedError.
    /// A column family's Rdict closes only itself: the database stays open for the others.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.is_family_view {
            self.view_closed.store(true, Ordering::Release);
            return Ok(());
        }
        self.handle.closed.store(true, Ordering::Release);
        let db = self.handle.db.write().unwrap_or_else(|p| p.into_inner()).take();
        py.allow_threads(move || drop(db));
        Ok(())
    }

    /// The column families of the database at `path`, `default` first.
    #[staticmethod]
    #[pyo3(signature = (path, options = None))]
    fn list_cf(py: Python<'_>, path: String, options: Option<PyRef<'_, Options>>) -> PyResult<Vec<String>> {
        let opts = options.map(|o| o.inner.clone()).unwrap_or_default();
        py.allow_threads(|| shale::DB::list_cf(&opts, &path)).map_err(to_py)
    }

    /// Create column family `name` with `options` (their raw_mode must be the database's) and
    /// return its Rdict. A name that exists is InvalidArgument.
    #[pyo3(signature = (name, options = None))]
    fn create_column_family(&self, py: Python<'_>, name: &str, options: Option<PyRef<'_, Options>>) -> PyResult<Rdict> {
        let opts = match options {
            Some(o) => {
                check_family_raw_mode(name, o.raw_mode, self.raw)?;
                o.inner.clone()
            }
            None => shale::Options::default(),
        };
        let db = self.db()?;
        py.allow_threads(|| db.create_cf(name, &opts)).map_err(to_py)?;
        Ok(self.family_view(py, Rdict::handle_of(&db, name)?))
    }

    /// The Rdict of column family `name` (InvalidArgument if there is none).
    fn get_column_family(&self, py: Python<'_>, name: &str) -> PyResult<Rdict> {
        let db = self.db()?;
        Ok(self.family_view(py, Rdict::handle_of(&db, name)?))
    }

    /// A handle on column family `name`, for the `column_family` argument of `WriteBatch`.
    fn get_column_family_handle(&self, name: &str) -> PyResult<ColumnFamily> {
        let db = self.db()?;
        Ok(ColumnFamily {
            cf: Rdict::handle_of(&db, name)?,
        })
    }

    /// Drop column family `name`: its keys are gone, its files deleted once nothing reads them
    /// (dropping `default` or a name that does not exist is InvalidArgument).
    fn drop_column_family(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(|| db.drop_cf(name)).map_err(to_py)
    }

    /// Delete the database at `path` (Busy if it is open).
    #[staticmethod]
    #[pyo3(signature = (path, options = None))]
    fn destroy(py: Python<'_>, path: String, options: Option<PyRef<'_, Options>>) -> PyResult<()> {
        let opts = options.map(|o| o.inner.clone()).unwrap_or_default();
        py.allow_threads(|| shale::DB::destroy(&opts, &path)).map_err(to_py)?;
        let _ = std::fs::remove_file(std::path::Path::new(&path).join(CONFIG_FILE));
        let _ = std::fs::remove_dir(&path);
        Ok(())
    }
}

/// The iterator `keys()`, `values()` and `items()` return.
#[pyclass(module = "shale", frozen)]
struct RdictView {
    it: Mutex<ViewState>,
    handle: Arc<Handle>,
    raw: bool,
    kind: Kind,
    backwards: bool,
}

/// The cursor and the entries read ahead of Python: each refill reads up to `VIEW_BATCH`
/// entries with the GIL released (the reads may do I/O), and `__next__` hands them out.
struct ViewState {
    it: shale::DBRawIterator,
    /// The bytes of the entries read ahead, back to back, and where each key and value ends.
    data: Vec<u8>,
    ends: Vec<(usize, usize)>,
    /// The next entry of `ends` to hand out.
    pos: usize,
}

const VIEW_BATCH: usize = 64;

impl RdictView {
    fn new(
        py: Python<'_>,
        mut it: shale::DBRawIterator,
        handle: Arc<Handle>,
        raw: bool,
        kind: Kind,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let from = from_key.map(|k| encode(k, raw)).transpose()?;
        py.allow_threads(|| match (&from, backwards) {
            (None, false) => it.seek_to_first(),
            (None, true) => it.seek_to_last(),
            (Some(k), false) => it.seek(k),
            (Some(k), true) => it.seek_for_prev(k),
        });
        Ok(RdictView {
            it: Mutex::new(ViewState {
                it,
                data: Vec::new(),
                ends: Vec::new(),
                pos: 0,
            }),
            handle,
            raw,
            kind,
            backwards,
        })
    }
}

impl RdictView {
    fn entry(&self, py: Python<'_>, k: &[u8], v: &[u8]) -> PyResult<PyObject> {
        Ok(match self.kind {
            Kind::Keys => decode(py, k, self.raw)?,
            Kind::Values => decode(py, v, self.raw)?,
            Kind::Items => PyTuple::new(py, [decode(py, k, self.raw)?, decode(py, v, self.raw)?])?
                .into_any()
                .unbind(),
        })
    }
}

#[pymethods]
impl RdictView {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.handle.check_open()?;
        let mut st = lock_iter(&self.it)?;
        if st.pos == st.ends.len() {
            let (back, kind) = (self.backwards, &self.kind);
            let ViewState { it, data, ends, pos } = &mut *st;
            data.clear();
            ends.clear();
            *pos = 0;
            py.allow_threads(|| {
                while ends.len() < VIEW_BATCH && it.valid() {
                    if !matches!(kind, Kind::Values) {
                        data.extend_from_slice(it.key().unwrap_or_default());
                    }
                    let key_end = data.len();
                    if !matches!(kind, Kind::Keys) {
                        data.extend_from_slice(it.value().unwrap_or_default());
                    }
                    ends.push((key_end, data.len()));
                    if back {
                        it.prev()
                    } else {
                        it.next()
                    }
                }
            });
            if st.ends.is_empty() {
                st.it.status().map_err(to_py)?;
                return Ok(None);
            }
        }
        let start = if st.pos == 0 { 0 } else { st.ends[st.pos - 1].1 };
        let (key_end, end) = st.ends[st.pos];
        st.pos += 1;
        let (k, v) = (&st.data[start..key_end], &st.data[key_end..end]);
        if self.raw {
            // Decoding raw bytes runs no Python code: done under the lock, without copies.
            return Ok(Some(self.entry(py, k, v)?));
        }
        // Unpickling may run Python code (and let other threads in): not under the lock.
        let (k, v) = (k.to_vec(), v.to_vec());
        drop(st);
        Ok(Some(self.entry(py, &k, &v)?))
    }
}

/// A cursor over the database (rocksdict's `RdictIter`).
#[pyclass(module = "shale", frozen)]
struct RdictIter {
    it: Mutex<shale::DBRawIterator>,
    handle: Arc<Handle>,
    raw: bool,
}

impl RdictIter {
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut shale::DBRawIterator) -> R + Send) -> PyResult<R> {
        self.handle.check_open()?;
        let mut it = lock_iter(&self.it)?;
        let it = &mut *it;
        Ok(py.allow_threads(|| f(it)))
    }
}

#[pymethods]
impl RdictIter {
    fn valid(&self) -> PyResult<bool> {
        self.handle.check_open()?;
        Ok(lock_iter(&self.it)?.valid())
    }
    /// Raises the error the iterator met, if any.
    fn status(&self) -> PyResult<()> {
        lock_iter(&self.it)?.status().map_err(to_py)
    }
    fn seek_to_first(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| it.seek_to_first())
    }
    fn seek_to_last(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| it.seek_to_last())
    }
    fn seek(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = encode(key, self.raw)?;
        self.with(py, |it| it.seek(&k))
    }
    fn seek_for_prev(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = encode(key, self.raw)?;
        self.with(py, |it| it.seek_for_prev(&k))
    }
    fn next(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            if it.valid() {
                it.next()
            }
        })
    }
    fn prev(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |it| {
            if it.valid() {
                it.prev()
            }
        })
    }
    /// The key at the cursor (None when not valid).
    fn key(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.handle.check_open()?;
        let k = lock_iter(&self.it)?.key().map(<[u8]>::to_vec);
        k.map(|k| decode(py, &k, self.raw)).transpose()
    }
    fn value(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.handle.check_open()?;
        let v = lock_iter(&self.it)?.value().map(<[u8]>::to_vec);
        v.map(|v| decode(py, &v, self.raw)).transpose()
    }
}

/// A point-in-time view (rocksdict's `Snapshot`): `get`, `[]`, `keys`, `values`, `items`, `iter`.
#[pyclass(module = "shale", frozen)]
struct Snapshot {
    snap: shale::Snapshot,
    /// The family its reads go to: the one of the Rdict it was taken from.
    cf: Arc<shale::ColumnFamily>,
    handle: Arc<Handle>,
    raw: bool,
}

impl Snapshot {
    fn ro(&self, py: Python<'_>, read_opt: Option<PyRef<'_, ReadOptions>>) -> PyResult<shale::ReadOptions> {
        let mut ro = match read_opt {
            Some(r) => r.to_shale(py, self.raw)?,
            None => shale::ReadOptions::default(),
        };
        ro.set_snapshot(&self.snap);
        Ok(ro)
    }
    fn view(
        &self,
        py: Python<'_>,
        kind: Kind,
        backwards: bool,
        from_key: Option<&Bound<'_, PyAny>>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<RdictView> {
        let db = self.handle.db()?;
        let ro = self.ro(py, read_opt)?;
        let it = py.allow_threads(|| db.raw_iterator_cf_opt(&self.cf, ro));
        RdictView::new(py, it, self.handle.clone(), self.raw, kind, backwards, from_key)
    }
}

#[pymethods]
impl Snapshot {
    #[pyo3(signature = (key, default = None, read_opt = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let db = self.handle.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, read_opt)?;
        match py.allow_threads(|| db.get_cf_opt(&self.cf, &k, &ro)).map_err(to_py)? {
            Some(v) => decode(py, &v, self.raw),
            None => Ok(default.unwrap_or_else(|| py.None())),
        }
    }
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        let db = self.handle.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, None)?;
        match py.allow_threads(|| db.get_cf_opt(&self.cf, &k, &ro)).map_err(to_py)? {
            Some(v) => decode(py, &v, self.raw),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let db = self.handle.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, None)?;
        Ok(py
            .allow_threads(|| db.get_cf_opt(&self.cf, &k, &ro))
            .map_err(to_py)?
            .is_some())
    }
    #[pyo3(signature = (read_opt = None))]
    fn iter(&self, py: Python<'_>, read_opt: Option<PyRef<'_, ReadOptions>>) -> PyResult<RdictIter> {
        let db = self.handle.db()?;
        let ro = self.ro(py, read_opt)?;
        let it = py.allow_threads(|| db.raw_iterator_cf_opt(&self.cf, ro));
        Ok(RdictIter {
            it: Mutex::new(it),
            handle: self.handle.clone(),
            raw: self.raw,
        })
    }
}

/// `keys`, `values` and `items` (from `from_key`, or the first / last key, forwards or
/// backwards) of a type with a `view` method.
macro_rules! views {
    ($t:ty) => {
        #[pymethods]
        impl $t {
            #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
            fn keys(
                &self,
                py: Python<'_>,
                backwards: bool,
                from_key: Option<&Bound<'_, PyAny>>,
                read_opt: Option<PyRef<'_, ReadOptions>>,
            ) -> PyResult<RdictView> {
                self.view(py, Kind::Keys, backwards, from_key, read_opt)
            }
            #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
            fn values(
                &self,
                py: Python<'_>,
                backwards: bool,
                from_key: Option<&Bound<'_, PyAny>>,
                read_opt: Option<PyRef<'_, ReadOptions>>,
            ) -> PyResult<RdictView> {
                self.view(py, Kind::Values, backwards, from_key, read_opt)
            }
            #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
            fn items(
                &self,
                py: Python<'_>,
                backwards: bool,
                from_key: Option<&Bound<'_, PyAny>>,
                read_opt: Option<PyRef<'_, ReadOptions>>,
            ) -> PyResult<RdictView> {
                self.view(py, Kind::Items, backwards, from_key, read_opt)
            }
        }
    };
}

views!(Rdict);
views!(Snapshot);

#[pymodule]
#[pyo3(name = "shale")]
fn shale_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Rdict>()?;
    m.add_class::<RdictIter>()?;
    m.add_class::<RdictView>()?;
    m.add_class::<Options>()?;
    m.add_class::<ReadOptions>()?;
    m.add_class::<WriteOptions>()?;
    m.add_class::<WriteBatch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<DBCompressionType>()?;
    m.add_class::<ColumnFamily>()?;
    m.add_class::<AccessType>()?;
    m.add_class::<SstFileWriter>()?;
    m.add_class::<IngestExternalFileOptions>()?;
    m.add_class::<Checkpoint>()?;
    styles::register(m)?;
    prefix::register(m)?;
    macro_rules! add_errors {
        ($($e:ident),*) => { $(m.add(stringify!($e), py.get_type::<$e>())?;)* };
    }
    add_errors!(
        ShaleError,
        NotFound,
        Corruption,
        NotSupported,
        InvalidArgument,
        IOError,
        MergeInProgress,
        Incomplete,
        ShutdownInProgress,
        TimedOut,
        Aborted,
        Busy,
        Expired,
        TryAgain,
        CompactionTooLarge,
        ColumnFamilyDropped,
        Unknown,
        DbClosedError
    );
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
