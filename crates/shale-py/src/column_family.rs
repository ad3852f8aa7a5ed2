//! Column families: the `ColumnFamily` handle, and the families an `Rdict` opens.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::options::Options;

/// A handle on a column family (rocksdict's `ColumnFamily`), from
/// `Rdict.get_column_family_handle`: names the family a `WriteBatch` write goes to. It stays
/// valid while it lives, even if the family is dropped (writes through it then fail).
#[pyclass(module = "shale", frozen)]
pub(crate) struct ColumnFamily {
    pub(crate) cf: Arc<shale::ColumnFamily>,
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

/// The families `Rdict`'s `column_families` names, with their options (None: not given).
pub(crate) fn named_families(
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
pub(crate) fn existing_families(opts: &shale::Options, path: &str) -> Vec<shale::ColumnFamilyDescriptor> {
    shale::DB::list_cf(opts, path)
        .unwrap_or_default()
        .into_iter()
        .map(|n| shale::ColumnFamilyDescriptor::new(n, opts.clone()))
        .collect()
}

/// rocksdict's rule: every family's Options has the main Options' raw_mode.
pub(crate) fn check_family_raw_mode(name: &str, family_raw: bool, raw: bool) -> PyResult<()> {
    if family_raw != raw {
        return Err(PyValueError::new_err(format!(
            "column family {name:?}: its Options must have raw_mode={raw}, as the database's"
        )));
    }
    Ok(())
}
