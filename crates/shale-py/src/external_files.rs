//! External table files: `SstFileWriter` writes them, `IngestExternalFileOptions` says how
//! `Rdict.ingest_external_file` ingests them.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::encoding::{encode, encode_with};
use crate::errors::to_py;
use crate::locks::lock;
use crate::options::Options;

/// Writes external table files to ingest later with `Rdict.ingest_external_file` (rocksdict's
/// `SstFileWriter`): keys strictly increasing (in their encoded form), each with sequence
/// number 0. `options` must have the `raw_mode` of the Rdict that will ingest the files.
#[pyclass(module = "shale", frozen)]
pub(crate) struct SstFileWriter {
    /// No Python code runs while it is held (so waiting for it with the GIL held cannot
    /// deadlock: its holder never needs the GIL).
    inner: Mutex<shale::SstFileWriter<'static>>,
    raw: bool,
    /// `set_dumps`: what encodes values of other types than rocksdict's own (None: pickle).
    dumps: Mutex<Option<PyObject>>,
}

#[pymethods]
impl SstFileWriter {
    #[new]
    #[pyo3(signature = (options = None))]
    fn new(options: Option<PyRef<'_, Options>>) -> PyResult<Self> {
        let (o, raw) = match options {
            Some(o) => (o.inner.clone(), o.raw_mode),
            // rocksdict's default: non-raw, in rocksdict's key order.
            None => (Options::new_mode(false).inner, false),
        };
        Ok(SstFileWriter {
            inner: Mutex::new(shale::SstFileWriter::with_options(o)),
            raw,
            dumps: Mutex::new(None),
        })
    }
    /// Replace `pickle.dumps` for the values of other types than bytes, str, int, float and
    /// bool (as `Rdict.set_dumps`; use the same function as the Rdict that reads the file).
    fn set_dumps(&self, dumps: PyObject) {
        let old = lock(&self.dumps).replace(dumps);
        drop(old); // may run Python code: not under the lock
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
        let dumps = lock(&self.dumps).as_ref().map(|f| f.clone_ref(key.py()));
        let v = encode_with(value, self.raw, dumps.as_ref().map(|f| f.bind(key.py())))?;
        let k = encode(key, self.raw)?;
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
pub(crate) struct IngestExternalFileOptions {
    pub(crate) inner: shale::IngestExternalFileOptions,
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
