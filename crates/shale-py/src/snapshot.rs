//! `Snapshot`: a point-in-time view of the database.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;

use crate::encoding::{decode, encode};
use crate::errors::to_py;
use crate::handle::Handle;
use crate::iterators::{views, Kind, RdictIter, RdictView};
use crate::options::ReadOptions;

/// A point-in-time view (rocksdict's `Snapshot`): `get`, `[]`, `keys`, `values`, `items`, `iter`.
#[pyclass(module = "shale", frozen)]
pub(crate) struct Snapshot {
    pub(crate) snap: shale::Snapshot,
    /// The family its reads go to: the one of the Rdict it was taken from.
    pub(crate) cf: Arc<shale::ColumnFamily>,
    pub(crate) handle: Arc<Handle>,
    pub(crate) raw: bool,
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
        let it = py.allow_threads(|| shale::DBRawIterator::from(db.raw_iterator_cf_opt(&self.cf, ro)));
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
        let it = py.allow_threads(|| shale::DBRawIterator::from(db.raw_iterator_cf_opt(&self.cf, ro)));
        Ok(RdictIter {
            it: Mutex::new(it),
            handle: self.handle.clone(),
            raw: self.raw,
            loads: None,
        })
    }
}

views!(Snapshot);
