//! `Rdict`: the database as a dict (rocksdict's `Rdict`), and `AccessType`, how it opens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::column_family::{check_family_raw_mode, existing_families, named_families, ColumnFamily};
use crate::db_options::Env;
use crate::encoding::{decode_with, encode, encode_with};
use crate::errors::{to_py, DbClosedError, IOError, InvalidArgument};
use crate::external_files::IngestExternalFileOptions;
use crate::handle::Handle;
use crate::iterators::{views, Kind, RdictIter, RdictView};
use crate::locks::lock;
use crate::maintenance::{CompactOptions, FlushOptions};
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::write_batch::WriteBatch;

/// How `Rdict` opens the database (rocksdict's `AccessType`): read-write (the default),
/// read-only, or as a secondary instance (read-only, caught up with the primary on demand,
/// its own files in another directory). A read-only or secondary open may name a subset of the
/// families.
#[pyclass(module = "shale", frozen)]
#[derive(Clone)]
pub(crate) struct AccessType {
    read_only: bool,
    error_if_log_file_exist: bool,
    secondary: Option<String>,
}

#[pymethods]
impl AccessType {
    #[staticmethod]
    fn read_write() -> Self {
        AccessType {
            read_only: false,
            error_if_log_file_exist: false,
            secondary: None,
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
            secondary: None,
        }
    }
    /// A secondary instance of the database another process writes: its own files (its LOG)
    /// go to `secondary_path`; `Rdict.try_catch_up_with_primary()` moves its view forward.
    #[staticmethod]
    fn secondary(secondary_path: String) -> Self {
        AccessType {
            read_only: true,
            error_if_log_file_exist: false,
            secondary: Some(secondary_path),
        }
    }
    fn __repr__(&self) -> String {
        if let Some(p) = &self.secondary {
            format!("AccessType.secondary({p:?})")
        } else if self.read_only {
            format!("AccessType.read_only({})", self.error_if_log_file_exist)
        } else {
            "AccessType.read_write()".to_string()
        }
    }
}

/// A dict-like view of a Shale database (rocksdict's `Rdict`): of its `default` family, or of
/// another family for the Rdict `get_column_family` / `create_column_family` return.
#[pyclass(module = "shale", frozen)]
pub(crate) struct Rdict {
    pub(crate) handle: Arc<Handle>,
    /// The family this Rdict reads and writes.
    pub(crate) cf: Arc<shale::ColumnFamily>,
    /// A family's Rdict closes on its own (rocksdict's rule); the database closes with the
    /// Rdict that opened it.
    is_family_view: bool,
    view_closed: AtomicBool,
    path: String,
    pub(crate) raw: bool,
    read_opts: Mutex<ReadOptions>,
    write_opts: Mutex<shale::WriteOptions>,
    /// `set_dumps` / `set_loads`: what encodes and decodes values that are not bytes, str,
    /// int, float or bool (None: `pickle`).
    dumps: Mutex<Option<PyObject>>,
    loads: Mutex<Option<PyObject>>,
}

pub(crate) const CONFIG_FILE: &str = "rocksdict-config.json";

/// rocksdict's config file in `dir`, recording `raw` (rocksdict, and Shale when opened
/// without options, read it to choose the key order and the decoding).
pub(crate) fn write_config(dir: &std::path::Path, raw: bool) -> PyResult<()> {
    std::fs::write(dir.join(CONFIG_FILE), config_text(raw))
        .map_err(|e| IOError::new_err(format!("writing {CONFIG_FILE}: {e}")))
}

fn config_text(raw: bool) -> String {
    format!("{{\"raw_mode\":{raw},\"prefix_extractors\":{{}}}}")
}

/// [`write_config`] into the file system of an in-memory database (`Env.mem_env()`).
fn write_config_in(fs: &dyn shale::fs::FileSystem, dir: &std::path::Path, raw: bool) -> PyResult<()> {
    let mut f = fs.new_writable(&dir.join(CONFIG_FILE)).map_err(to_py)?;
    f.append(config_text(raw).as_bytes()).map_err(to_py)?;
    f.sync().map_err(to_py)
}

impl Rdict {
    pub(crate) fn db(&self) -> PyResult<Arc<shale::DB>> {
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
            dumps: Mutex::new(self.dumps_fn(py)),
            loads: Mutex::new(self.loads_fn(py)),
        }
    }
    fn dumps_fn(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.dumps).as_ref().map(|f| f.clone_ref(py))
    }
    fn loads_fn(&self, py: Python<'_>) -> Option<PyObject> {
        lock(&self.loads).as_ref().map(|f| f.clone_ref(py))
    }
    /// A value as stored (with `set_dumps`' function, if any).
    fn encode_value(&self, py: Python<'_>, v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let dumps = self.dumps_fn(py);
        encode_with(v, self.raw, dumps.as_ref().map(|f| f.bind(py)))
    }
    /// A stored value as an object (with `set_loads`' function, if any).
    fn decode_value(&self, py: Python<'_>, v: &[u8]) -> PyResult<PyObject> {
        let loads = self.loads_fn(py);
        decode_with(py, v, self.raw, loads.as_ref().map(|f| f.bind(py)))
    }
    /// `(name, value)` pairs of `put_entity`'s lists, encoded as stored.
    fn entity_columns(
        &self,
        py: Python<'_>,
        names: &[Bound<'_, PyAny>],
        values: &[Bound<'_, PyAny>],
    ) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
        if names.len() != values.len() {
            return Err(InvalidArgument::new_err("names and values must have the same length"));
        }
        names
            .iter()
            .zip(values)
            .map(|(n, v)| Ok((self.encode_value(py, n)?, self.encode_value(py, v)?)))
            .collect()
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
        v.map(|v| self.decode_value(py, &v)).transpose()
    }
    /// The values of `keys` (a list), `default` for each missing one.
    fn get_batch(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyList>,
        default: Option<PyObject>,
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
                Some(v) => out.append(self.decode_value(py, &v)?)?,
                None => out.append(default.as_ref().map_or_else(|| py.None(), |d| d.clone_ref(py)))?,
            }
        }
        Ok(out.into_any().unbind())
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
        let it = py.allow_threads(|| shale::DBRawIterator::from(db.raw_iterator_cf_opt(&self.cf, ro)));
        Ok(
            RdictView::new(py, it, self.handle.clone(), self.raw, kind, backwards, from_key)?
                .with_loads(self.loads_fn(py)),
        )
    }
}

#[pymethods]
impl Rdict {
    /// Open (by default create) the database at `path`. Without `options`, an existing
    /// database opens with the options it recorded (rocksdict's `Options.load_latest`: raw_mode,
    /// and per family table format, prefix extractor, ...), and a new one is non-raw.
    /// `column_families=None` opens every family the database has: with the options it recorded
    /// for each when `options` is None, else with `options` (in the key order its OPTIONS file
    /// records: bytewise or rocksdict's). Named families must have the raw_mode of `options`; `default` is
    /// added when not named. A read-write open must name every family (RocksDB's rule;
    /// `create_missing_column_families` creates the named ones it lacks).
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
        let p = path.clone();
        // An in-memory database's options are in its Env's file system.
        let env = options.as_ref().map_or_else(Env::new, |o| o.env());
        let loaded = py.allow_threads(move || crate::tables::load_latest(&p, &env).ok());
        let (main, loaded_families) = match (loaded, options) {
            // Every family the database has, with `options` but the key order it was
            // written in (which a database cannot change).
            (Some((_, families)), Some(o)) => {
                let families = families
                    .into_iter()
                    .map(|(name, f)| {
                        let mut x = o.clone();
                        x.inner.set_custom_comparator(f.inner.get_comparator());
                        (name, x)
                    })
                    .collect();
                (o.clone(), Some(families))
            }
            (Some((o, families)), None) => (o, Some(families)),
            (None, Some(o)) => (o.clone(), None),
            (None, None) => (Options::new_mode(false), None),
        };
        let (opts, raw, in_memory) = (main.inner, main.raw_mode, main.in_memory);
        let named = match named_families(raw, column_families)? {
            Some(mut named) => {
                if !named.iter().any(|d| d.name() == "default") {
                    named.push(shale::ColumnFamilyDescriptor::new("default", opts.clone()));
                }
                Some(named)
            }
            None => loaded_families.map(|fs| {
                fs.into_iter()
                    .map(|(name, o)| shale::ColumnFamilyDescriptor::new(name, o.inner))
                    .collect()
            }),
        };
        let access = access_type.unwrap_or(if read_only {
            AccessType::read_only(false)
        } else {
            AccessType::read_write()
        });
        let read_only = read_only || access.read_only;
        let error_if_wal = access.read_only && access.error_if_log_file_exist;
        let p = path.clone();
        let secondary = access.secondary.clone();
        let fs = opts.get_env();
        let db = py
            .allow_threads(move || {
                let descs = named.unwrap_or_else(|| existing_families(&opts, &p));
                if let Some(sec) = secondary {
                    shale::DB::open_cf_descriptors_as_secondary(&opts, &p, sec, descs)
                } else if read_only {
                    shale::DB::open_cf_descriptors_read_only(&opts, &p, descs, error_if_wal)
                } else {
                    shale::DB::open_cf_descriptors(&opts, &p, descs)
                }
            })
            .map_err(to_py)?;
        if !read_only {
            // rocksdict reads this file to open the database with the right comparator.
            let dir = std::path::Path::new(&path);
            if in_memory {
                write_config_in(&*fs, dir, raw)?;
            } else {
                write_config(dir, raw)?;
            }
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
            dumps: Mutex::new(None),
            loads: Mutex::new(None),
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
            return self.get_batch(py, keys, None, None);
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
    fn __iter__(&self, py: Python<'_>) -> PyResult<PyObject> {
        self.view(py, Kind::Keys, false, None, None)?.into_typed(py)
    }

    /// The value of `key`, or `default`; a list of keys gives a list of values (`default`
    /// for each key that is missing).
    #[pyo3(signature = (key, default = None, read_opt = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        if let Ok(keys) = key.downcast::<PyList>() {
            return self.get_batch(py, keys, default, read_opt);
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
        let (k, v) = (encode(key, self.raw)?, self.encode_value(py, value)?);
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

    /// Write `key` → a wide-column entity: column `names[i]` holds `values[i]` (names and
    /// values encoded as values are; in raw mode, bytes). Columns are stored sorted by name;
    /// the column named `b""` (raw) is the default column, whose value a plain read returns
    /// (an empty value without one). Raises if the lists differ in length or a name repeats.
    #[pyo3(signature = (key, names, values, write_opt = None))]
    fn put_entity(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        names: Vec<Bound<'_, PyAny>>,
        values: Vec<Bound<'_, PyAny>>,
        write_opt: Option<PyRef<'_, WriteOptions>>,
    ) -> PyResult<()> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let cols = self.entity_columns(py, &names, &values)?;
        let wo = self.wo(write_opt);
        py.allow_threads(|| db.put_entity_cf_opt(&self.cf, &k, &cols, &wo))
            .map_err(to_py)
    }

    /// The wide columns of `key`: a list of `(name, value)` sorted by name (a plain value is
    /// one column with the empty name), or `default` if the key does not exist.
    #[pyo3(signature = (key, default = None, read_opt = None))]
    fn get_entity(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, read_opt)?;
        let cols = py
            .allow_threads(|| db.get_entity_cf_opt(&self.cf, &k, &ro))
            .map_err(to_py)?;
        match cols {
            None => Ok(default.unwrap_or_else(|| py.None())),
            Some(c) => {
                let loads = self.loads_fn(py);
                crate::iterators::columns_object(py, &c, self.raw, loads.as_ref().map(|f| f.bind(py)))
            }
        }
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

    /// The values of `keys`, None for those that are missing.
    #[pyo3(signature = (keys, read_opt = None))]
    fn multi_get(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyList>,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        self.get_batch(py, keys, None, read_opt)
    }

    /// Replace the function that encodes values of other types than bytes, str, int, float
    /// and bool (default `pickle.dumps`; it must return bytes). Keys are not affected.
    fn set_dumps(&self, dumps: PyObject) {
        let old = lock(&self.dumps).replace(dumps);
        drop(old); // may run Python code: not under the lock
    }
    /// Replace the function that decodes what `set_dumps`' function encoded (default
    /// `pickle.loads`).
    fn set_loads(&self, loads: PyObject) {
        let old = lock(&self.loads).replace(loads);
        drop(old);
    }

    /// Bring a secondary instance (`AccessType.secondary`) up to date with its primary: reads
    /// afterwards see the primary's state as of now, including what is only in its WAL.
    /// Raises for a database not opened as a secondary.
    fn try_catch_up_with_primary(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(move || db.try_catch_up_with_primary()).map_err(to_py)
    }

    /// False if `key` certainly does not exist, True if it may (RocksDB's `KeyMayExist`:
    /// memtables and bloom filters only, no data block read). With `fetch`, a tuple
    /// `(may_exist, value)` whose value is None: Shale does not return values from this call,
    /// so `(True, None)` means "may exist".
    #[pyo3(signature = (key, fetch = false, read_opt = None))]
    fn key_may_exist(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        fetch: bool,
        read_opt: Option<PyRef<'_, ReadOptions>>,
    ) -> PyResult<PyObject> {
        let db = self.db()?;
        let k = encode(key, self.raw)?;
        let ro = self.ro(py, read_opt)?;
        let may = py.allow_threads(|| db.key_may_exist_cf_opt(&self.cf, &k, &ro));
        Ok(if fetch {
            (may, py.None()).into_pyobject(py)?.into_any().unbind()
        } else {
            may.into_pyobject(py)?.to_owned().into_any().unbind()
        })
    }

    /// A cursor, not positioned: call `seek_to_first`, `seek`, ... first.
    #[pyo3(signature = (read_opt = None))]
    fn iter(&self, py: Python<'_>, read_opt: Option<PyRef<'_, ReadOptions>>) -> PyResult<RdictIter> {
        let db = self.db()?;
        let ro = self.ro(py, read_opt)?;
        let it = py.allow_threads(|| shale::DBRawIterator::from(db.raw_iterator_cf_opt(&self.cf, ro)));
        Ok(RdictIter {
            it: Mutex::new(it),
            handle: self.handle.clone(),
            raw: self.raw,
            loads: self.loads_fn(py),
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

    /// Compact the keys in `[begin, end]` (None: unbounded) down to the last level, with
    /// `compact_opt` (a `CompactOptions`; see it for what Shale supports).
    #[pyo3(signature = (begin, end, compact_opt = None))]
    fn compact_range(
        &self,
        py: Python<'_>,
        begin: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        compact_opt: Option<PyRef<'_, CompactOptions>>,
    ) -> PyResult<()> {
        if let Some(c) = &compact_opt {
            c.check()?;
        }
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
        py.allow_threads(|| shale::checkpoint::Checkpoint::new(&db)?.create_checkpoint(&path))
            .map_err(to_py)?;
        write_config(&path, self.raw)
    }

    /// Flush the memtable to a table file. `wait` (a bool or a `FlushOptions`): wait until it
    /// is written (default), or return once the memtable is switched out and handed to the
    /// background threads.
    #[pyo3(signature = (wait = None))]
    fn flush(&self, py: Python<'_>, wait: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let wait = match wait {
            None => true,
            Some(w) => match w.downcast::<FlushOptions>() {
                Ok(f) => f.borrow().wait,
                Err(_) => w.extract()?,
            },
        };
        let db = self.db()?;
        let mut fo = shale::FlushOptions::new();
        fo.set_wait(wait);
        py.allow_threads(|| db.flush_cf_opt(&self.cf, &fo)).map_err(to_py)
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
            None => Options::new_mode(self.raw).inner,
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

    /// Delete the database at `path` (IOError naming its LOCK file if it is open).
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

views!(Rdict);
