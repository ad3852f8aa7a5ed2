//! `Checkpoint`: on-disk copies of an open database.

use std::sync::Arc;

use pyo3::prelude::*;

use crate::errors::to_py;
use crate::handle::Handle;
use crate::rdict::Rdict;

/// Checkpoints of an open database (rocksdict's `Checkpoint(db)`): each
/// `create_checkpoint(path)` makes a new directory that opens as the database at that moment.
#[pyclass(module = "shale", frozen)]
pub(crate) struct Checkpoint {
    handle: Arc<Handle>,
    /// The database's raw_mode, recorded in each checkpoint's rocksdict config file.
    raw: bool,
}

#[pymethods]
impl Checkpoint {
    #[new]
    fn new(db: PyRef<'_, Rdict>) -> PyResult<Self> {
        db.handle.check_open()?;
        Ok(Checkpoint {
            handle: db.handle.clone(),
            raw: db.raw,
        })
    }
    /// A checkpoint in the new directory `path` (an existing path is an error), with
    /// rocksdict's config file, so that it opens without options as the database does.
    fn create_checkpoint(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        let db = self.handle.db()?;
        py.allow_threads(|| shale::checkpoint::Checkpoint::new(&db)?.create_checkpoint(&path))
            .map_err(to_py)?;
        crate::rdict::write_config(&path, self.raw)
    }
}
