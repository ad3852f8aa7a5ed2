//! Iterators: `RdictView` (what `keys()`, `values()` and `items()` return) and `RdictIter`
//! (rocksdict's cursor).

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::encoding::{decode_with, encode};
use crate::errors::to_py;
use crate::handle::Handle;
use crate::locks::lock_iter;

/// What an `RdictView` yields.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Keys,
    Values,
    Items,
    /// Each entry's wide columns, a list of `(name, value)` (rocksdict's `columns()`).
    Columns,
    /// `(key, columns)` pairs (rocksdict's `entities()`).
    Entities,
}

/// Wide columns packed into a view's read-ahead buffer: per column, the name's and the
/// value's length (u32, little-endian) each before its bytes.
fn pack_columns(out: &mut Vec<u8>, cols: &[shale::wide_columns::WideColumn]) {
    for c in cols {
        for part in [&c.name, &c.value] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
}

/// The list of `(name, value)` tuples of columns packed by [`pack_columns`] (names and
/// values decoded as stored values, as rocksdict decodes them).
fn columns_list(py: Python<'_>, mut b: &[u8], raw: bool, loads: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
    let list = PyList::empty(py);
    let part = |b: &mut &[u8]| -> PyResult<PyObject> {
        let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let v = decode_with(py, &b[4..4 + n], raw, loads);
        *b = &b[4 + n..];
        v
    };
    while b.len() >= 4 {
        let name = part(&mut b)?;
        let value = part(&mut b)?;
        list.append(PyTuple::new(py, [name, value])?)?;
    }
    Ok(list.into_any().unbind())
}

/// The columns of an entry as rocksdict returns them.
pub(crate) fn columns_object(
    py: Python<'_>,
    cols: &[shale::wide_columns::WideColumn],
    raw: bool,
    loads: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyObject> {
    let mut b = Vec::new();
    pack_columns(&mut b, cols);
    columns_list(py, &b, raw, loads)
}

/// The iterators `keys()`, `values()` and `items()` return: an `RdictKeys`, `RdictValues` or
/// `RdictItems` (rocksdict's classes), each an `RdictView`.
#[pyclass(module = "shale", frozen, subclass)]
pub(crate) struct RdictView {
    it: Mutex<ViewState>,
    handle: Arc<Handle>,
    raw: bool,
    kind: Kind,
    backwards: bool,
    /// The Rdict's `set_loads` function, if any (else `pickle.loads`).
    loads: Option<PyObject>,
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
    pub(crate) fn new(
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
            loads: None,
        })
    }
    /// Values of other types than rocksdict's own decoded with `loads`.
    pub(crate) fn with_loads(mut self, loads: Option<PyObject>) -> Self {
        self.loads = loads;
        self
    }
}

/// What `keys()` returns: an iterator over keys (rocksdict's `RdictKeys`).
#[pyclass(module = "shale", frozen, extends = RdictView)]
pub(crate) struct RdictKeys;

/// What `values()` returns (rocksdict's `RdictValues`).
#[pyclass(module = "shale", frozen, extends = RdictView)]
pub(crate) struct RdictValues;

/// What `items()` returns: `(key, value)` tuples (rocksdict's `RdictItems`).
#[pyclass(module = "shale", frozen, extends = RdictView)]
pub(crate) struct RdictItems;

/// What `columns()` returns: each entry's wide columns (rocksdict's `RdictColumns`).
#[pyclass(module = "shale", frozen, extends = RdictView)]
pub(crate) struct RdictColumns;

/// What `entities()` returns: `(key, columns)` pairs (rocksdict's `RdictEntities`).
#[pyclass(module = "shale", frozen, extends = RdictView)]
pub(crate) struct RdictEntities;

impl RdictView {
    /// This view as the Python class of its kind.
    pub(crate) fn into_typed(self, py: Python<'_>) -> PyResult<PyObject> {
        let kind = self.kind;
        let init = PyClassInitializer::from(self);
        Ok(match kind {
            Kind::Keys => Py::new(py, init.add_subclass(RdictKeys))?.into_any(),
            Kind::Values => Py::new(py, init.add_subclass(RdictValues))?.into_any(),
            Kind::Items => Py::new(py, init.add_subclass(RdictItems))?.into_any(),
            Kind::Columns => Py::new(py, init.add_subclass(RdictColumns))?.into_any(),
            Kind::Entities => Py::new(py, init.add_subclass(RdictEntities))?.into_any(),
        })
    }
    fn entry(&self, py: Python<'_>, k: &[u8], v: &[u8]) -> PyResult<PyObject> {
        let loads = self.loads.as_ref().map(|f| f.bind(py));
        let key = |k| decode_with(py, k, self.raw, None);
        let value = |v| decode_with(py, v, self.raw, loads);
        Ok(match self.kind {
            Kind::Keys => key(k)?,
            Kind::Values => value(v)?,
            Kind::Items => PyTuple::new(py, [key(k)?, value(v)?])?.into_any().unbind(),
            Kind::Columns => columns_list(py, v, self.raw, loads)?,
            Kind::Entities => PyTuple::new(py, [key(k)?, columns_list(py, v, self.raw, loads)?])?
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
                    if !matches!(kind, Kind::Values | Kind::Columns) {
                        data.extend_from_slice(it.key().unwrap_or_default());
                    }
                    let key_end = data.len();
                    match kind {
                        Kind::Keys => {}
                        Kind::Values | Kind::Items => data.extend_from_slice(it.value().unwrap_or_default()),
                        Kind::Columns | Kind::Entities => pack_columns(data, &it.columns().unwrap_or_default()),
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
pub(crate) struct RdictIter {
    pub(crate) it: Mutex<shale::DBRawIterator>,
    pub(crate) handle: Arc<Handle>,
    pub(crate) raw: bool,
    /// The Rdict's `set_loads` function, if any (else `pickle.loads`).
    pub(crate) loads: Option<PyObject>,
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
        k.map(|k| decode_with(py, &k, self.raw, None)).transpose()
    }
    fn value(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.handle.check_open()?;
        let v = lock_iter(&self.it)?.value().map(<[u8]>::to_vec);
        let loads = self.loads.as_ref().map(|f| f.bind(py));
        v.map(|v| decode_with(py, &v, self.raw, loads)).transpose()
    }
    /// The wide columns at the cursor, a list of `(name, value)` sorted by name (a plain value
    /// is one column with the empty name); None when not valid.
    fn columns(&self, py: Python<'_>) -> PyResult<Option<PyObject>> {
        self.handle.check_open()?;
        let cols = lock_iter(&self.it)?.columns();
        let loads = self.loads.as_ref().map(|f| f.bind(py));
        cols.map(|c| columns_object(py, &c, self.raw, loads)).transpose()
    }
}

/// `keys`, `values`, `items`, `columns` and `entities` (from `from_key`, or the first / last
/// key, forwards or backwards) of a type with a `view` method.
macro_rules! views {
    ($t:ty) => {
        views!(@impl $t;
            keys Keys "The keys.",
            values Values "The values (of an entity: its default column's value).",
            items Items "`(key, value)` pairs.",
            columns Columns "Each entry's wide columns, a list of `(name, value)` (a plain value is one column with the empty name).",
            entities Entities "`(key, columns)` pairs, columns as `columns()` gives them."
        );
    };
    (@impl $t:ty; $($name:ident $kind:ident $doc:literal),*) => {
        #[pymethods]
        impl $t {
            $(
                #[doc = $doc]
                #[pyo3(signature = (backwards = false, from_key = None, read_opt = None))]
                fn $name(
                    &self,
                    py: Python<'_>,
                    backwards: bool,
                    from_key: Option<&Bound<'_, PyAny>>,
                    read_opt: Option<PyRef<'_, ReadOptions>>,
                ) -> PyResult<PyObject> {
                    self.view(py, Kind::$kind, backwards, from_key, read_opt)?.into_typed(py)
                }
            )*
        }
    };
}

pub(crate) use views;
