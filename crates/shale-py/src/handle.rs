//! The open database that an `Rdict`, its family views, iterators, snapshots and checkpoints
//! share.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use pyo3::prelude::*;

use crate::errors::DbClosedError;

/// The open database, shared by the Rdict and its iterators and snapshots; `None` once closed.
pub(crate) struct Handle {
    pub(crate) db: RwLock<Option<Arc<shale::DB>>>,
    pub(crate) closed: AtomicBool,
}

impl Handle {
    pub(crate) fn new(db: shale::DB) -> Handle {
        Handle {
            db: RwLock::new(Some(Arc::new(db))),
            closed: AtomicBool::new(false),
        }
    }
    /// Fails once the Rdict is closed (cheaper than `db()` where the DB itself is not needed).
    pub(crate) fn check_open(&self) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(DbClosedError::new_err("the Rdict is closed"));
        }
        Ok(())
    }
    pub(crate) fn db(&self) -> PyResult<Arc<shale::DB>> {
        self.db
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| DbClosedError::new_err("the Rdict is closed"))
    }
}
