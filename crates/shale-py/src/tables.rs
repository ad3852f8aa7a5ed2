//! Table formats and options files in rocksdict's shape: `PlainTableFactoryOptions`,
//! `CuckooTableOptions`, `Options.set_plain_table_factory`, `set_cuckoo_table_factory`,
//! and `Options.load_latest(path)` (the options of an existing
//! database, from its newest OPTIONS file and rocksdict's config file).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::block_based::Cache;
use crate::db_options::Env;
use crate::enums::py_enum;
use crate::errors::to_py;
use crate::options::Options;

py_enum!(
    /// How PlainTable writes keys (rocksdict's `KeyEncodingType`): each in full (`none`), or
    /// after the first of a prefix only the suffix (`prefix`; needs a prefix extractor).
    KeyEncodingType, shale::KeyEncodingType, {
        none => shale::KeyEncodingType::Plain,
        prefix => shale::KeyEncodingType::Prefix,
    }
);

/// PlainTable's options (RocksDB's `PlainTableOptions`), read and written as attributes.
#[pyclass(module = "shale", get_all, set_all)]
#[derive(Clone)]
pub(crate) struct PlainTableFactoryOptions {
    /// Length of every user key (encoded, in a non-raw database), or 0 for any length.
    user_key_length: u32,
    /// Bloom bits per prefix (0: no bloom).
    bloom_bits_per_key: i32,
    /// Prefixes per hash bucket (0: one bucket, binary search; needed without a prefix
    /// extractor).
    hash_table_ratio: f64,
    /// One index record every this many keys of a prefix.
    index_sparseness: usize,
    /// Accepted as RocksDB does; Shale allocates the index from the heap.
    huge_page_tlb_size: usize,
    /// Open without an index: whole-file iteration only.
    full_scan_mode: bool,
    /// Write the index and bloom into the file.
    store_index_in_file: bool,
    /// How keys are written (default `KeyEncodingType.none()`).
    encoding_type: KeyEncodingType,
}

#[pymethods]
impl PlainTableFactoryOptions {
    /// RocksDB's defaults (`user_key_length=0`, `bloom_bits_per_key=10`,
    /// `hash_table_ratio=0.75`, `index_sparseness=16`).
    #[new]
    fn new() -> Self {
        let d = shale::PlainTableFactoryOptions::default();
        PlainTableFactoryOptions {
            user_key_length: d.user_key_len,
            bloom_bits_per_key: d.bloom_bits_per_key,
            hash_table_ratio: d.hash_table_ratio,
            index_sparseness: d.index_sparseness,
            huge_page_tlb_size: d.huge_page_tlb_size,
            full_scan_mode: d.full_scan_mode,
            store_index_in_file: d.store_index_in_file,
            encoding_type: KeyEncodingType { v: d.encoding_type },
        }
    }
}

impl PlainTableFactoryOptions {
    fn to_shale(&self) -> PyResult<shale::PlainTableFactoryOptions> {
        if !(self.hash_table_ratio.is_finite() && self.hash_table_ratio >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "hash_table_ratio must be a number >= 0, not {}",
                self.hash_table_ratio
            )));
        }
        Ok(shale::PlainTableFactoryOptions {
            user_key_len: self.user_key_length,
            bloom_bits_per_key: self.bloom_bits_per_key,
            hash_table_ratio: self.hash_table_ratio,
            index_sparseness: self.index_sparseness,
            huge_page_tlb_size: self.huge_page_tlb_size,
            full_scan_mode: self.full_scan_mode,
            store_index_in_file: self.store_index_in_file,
            encoding_type: self.encoding_type.v,
        })
    }
}

/// CuckooTable's options (RocksDB's `CuckooTableOptions`), through rocksdict's setters.
#[pyclass(module = "shale")]
#[derive(Clone, Default)]
pub(crate) struct CuckooTableOptions {
    inner: shale::CuckooTableOptions,
}

#[pymethods]
impl CuckooTableOptions {
    /// RocksDB's defaults (hash ratio 0.9, search depth 100, block size 5, module hash).
    #[new]
    fn new() -> Self {
        CuckooTableOptions::default()
    }
    /// The fraction of the hash table entries may fill (0 < ratio <= 1).
    fn set_hash_ratio(&mut self, ratio: f64) -> PyResult<()> {
        if !(ratio > 0.0 && ratio <= 1.0) {
            return Err(PyValueError::new_err(format!(
                "hash ratio must be in (0, 1], not {ratio}"
            )));
        }
        self.inner.hash_table_ratio = ratio;
        Ok(())
    }
    fn set_max_search_depth(&mut self, depth: u32) {
        self.inner.max_search_depth = depth;
    }
    fn set_cuckoo_block_size(&mut self, size: u32) -> PyResult<()> {
        if size == 0 {
            return Err(PyValueError::new_err("cuckoo block size must be at least 1"));
        }
        self.inner.cuckoo_block_size = size;
        Ok(())
    }
    /// Use a key's first 8 bytes as its first hash (keys must then be 8 bytes or longer).
    fn set_identity_as_first_hash(&mut self, flag: bool) {
        self.inner.identity_as_first_hash = flag;
    }
    fn set_use_module_hash(&mut self, flag: bool) {
        self.inner.use_module_hash = flag;
    }
}

/// rocksdict's config file in `path`: its raw_mode, if there is one.
pub(crate) fn config_raw_mode(path: &str, env: &Env) -> Option<bool> {
    let file = std::path::Path::new(path).join(crate::rdict::CONFIG_FILE);
    let s = match &env.fs {
        Some(fs) => String::from_utf8(fs.read_all(&file).ok()?).ok()?,
        None => std::fs::read_to_string(file).ok()?,
    };
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("\"raw_mode\":true") {
        Some(true)
    } else if compact.contains("\"raw_mode\":false") {
        Some(false)
    } else {
        None
    }
}

/// The options of the database at `path` as rocksdict loads them: the newest OPTIONS file
/// (table format and its options, prefix extractor, ...; every family's section) and the
/// raw_mode of rocksdict's config file (raw when there is none, as rocksdict). Each family's
/// comparator is the one its section names: rocksdict's for `rocksdict`, RocksDB's built-ins
/// by their names (so a non-raw database Shale wrote in bytewise order before it had
/// rocksdict's comparator still opens). NotFound if the database has no OPTIONS file.
/// From the file system of `env`.
pub(crate) fn load_latest(path: &str, env: &Env) -> PyResult<(Options, Vec<(String, Options)>)> {
    load_latest_in(path, env, None)
}

/// [`load_latest`] with `cache` as the block cache of the block-based families (rocksdict's
/// `Options.load_latest(path, env, cache=...)`).
fn load_latest_in(path: &str, env: &Env, cache: Option<&shale::Cache>) -> PyResult<(Options, Vec<(String, Options)>)> {
    let raw = config_raw_mode(path, env).unwrap_or(true);
    let p = std::path::Path::new(path);
    // rocksdict's comparator unless the file names a built-in (which then replaces it).
    let mut with_env = Options::new_mode(false);
    env.apply(&mut with_env);
    let base = with_env.inner;
    let loaded = |o: shale::Options| {
        let mut o = Options::from_loaded(o, raw);
        o.in_memory = with_env.in_memory;
        if let (Some(c), shale::options::TableFactory::BlockBased) = (cache, o.inner.get_table_factory()) {
            let mut b = o.inner.get_block_based_options();
            b.set_block_cache(c);
            o.inner.set_block_based_table_factory(&b);
        }
        o
    };
    let mut db_opts = base.clone();
    if !shale::tools::load_options_file(p, &mut db_opts).map_err(to_py)? {
        return Err(crate::errors::NotFound::new_err(format!("{path}: no OPTIONS file")));
    }
    let mut families = Vec::new();
    for name in shale::DB::list_cf(&base, path).map_err(to_py)? {
        let mut o = base.clone();
        shale::tools::load_cf_options_file(p, &name, &mut o).map_err(to_py)?;
        families.push((name, loaded(o)));
    }
    Ok((loaded(db_opts), families))
}

#[pymethods]
impl Options {
    /// New tables in PlainTable format (keys and values in the file as they are, a hash index
    /// over the prefixes of the prefix extractor, or one binary-searched bucket without one).
    fn set_plain_table_factory(&mut self, options: PyRef<'_, PlainTableFactoryOptions>) -> PyResult<()> {
        self.inner.set_plain_table_factory(&options.to_shale()?);
        Ok(())
    }
    /// New tables in CuckooTable format (a hash table; keys of one length per file).
    fn set_cuckoo_table_factory(&mut self, options: PyRef<'_, CuckooTableOptions>) {
        self.inner.set_cuckoo_table_factory(&options.inner);
    }
    /// `(options, {family name: options})` of the existing database at `path` (in `env`'s
    /// file system), read from its newest OPTIONS file and rocksdict's config file
    /// (raw_mode); the block-based families get `cache` as their block cache. Shale reads the
    /// options it knows and skips the others whatever `ignore_unknown_options` says.
    #[staticmethod]
    #[pyo3(signature = (path, env = None, ignore_unknown_options = false, cache = None))]
    fn load_latest<'py>(
        py: Python<'py>,
        path: &str,
        env: Option<PyRef<'py, Env>>,
        ignore_unknown_options: bool,
        cache: Option<PyRef<'py, Cache>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = ignore_unknown_options;
        let env = env.map_or_else(Env::new, |e| e.clone());
        let cache = cache.map(|c| c.inner.clone());
        let (opts, families) = py.allow_threads(|| load_latest_in(path, &env, cache.as_ref()))?;
        let cols = PyDict::new(py);
        for (name, o) in families {
            cols.set_item(name, Py::new(py, o)?)?;
        }
        PyTuple::new(py, [Py::new(py, opts)?.into_any(), cols.into_any().unbind()])
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<KeyEncodingType>()?;
    m.add_class::<PlainTableFactoryOptions>()?;
    m.add_class::<CuckooTableOptions>()
}
