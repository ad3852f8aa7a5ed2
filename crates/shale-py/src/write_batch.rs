//! `WriteBatch`: writes to apply atomically with `Rdict.write`.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::column_family::ColumnFamily;
use crate::encoding::{encode, encode_with};

/// A batch of writes applied atomically by `Rdict.write` (rocksdict's `WriteBatch`). Each write
/// goes to the family given as `column_family`, else to the one `set_default_column_family`
/// chose, else to `default`: one batch may touch several families and is still one atomic write.
#[pyclass(module = "shale")]
pub(crate) struct WriteBatch {
    pub(crate) inner: shale::WriteBatch,
    pub(crate) raw: bool,
    default_cf: Option<Arc<shale::ColumnFamily>>,
    /// `set_dumps`: what encodes values of other types than rocksdict's own (None: pickle).
    dumps: Option<PyObject>,
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
            dumps: None,
        }
    }
    /// Replace `pickle.dumps` for the values of other types than bytes, str, int, float and
    /// bool (as `Rdict.set_dumps`; use the same function as the Rdict that writes the batch).
    fn set_dumps(&mut self, dumps: PyObject) {
        self.dumps = Some(dumps);
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
        let dumps = self.dumps.as_ref().map(|f| f.bind(key.py()));
        let (k, v) = (encode(key, self.raw)?, encode_with(value, self.raw, dumps)?);
        match self.target(column_family) {
            Some(cf) => self.inner.put_cf(&cf, k, v),
            None => self.inner.put(k, v),
        }
        Ok(())
    }
    /// Write `key` → a wide-column entity (`names[i]` holds `values[i]`), in the batch's
    /// default family, as `Rdict.put_entity`. Raises if the lists differ in length or a name
    /// repeats.
    fn put_entity(
        &mut self,
        key: &Bound<'_, PyAny>,
        names: Vec<Bound<'_, PyAny>>,
        values: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if names.len() != values.len() {
            return Err(crate::errors::InvalidArgument::new_err(
                "names and values must have the same length",
            ));
        }
        let dumps = self.dumps.as_ref().map(|f| f.bind(key.py()));
        let k = encode(key, self.raw)?;
        let cols = names
            .iter()
            .zip(&values)
            .map(|(n, v)| Ok((encode_with(n, self.raw, dumps)?, encode_with(v, self.raw, dumps)?)))
            .collect::<PyResult<Vec<_>>>()?;
        match self.target(None) {
            Some(cf) => self.inner.put_entity_cf(&cf, k, &cols),
            None => self.inner.put_entity(k, &cols),
        }
        .map_err(crate::errors::to_py)
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
