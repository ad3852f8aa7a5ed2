//! The two ways the classes lock their state.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Lock a mutex that is only held briefly and never across Python code or a GIL release.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Lock an iterator's state, which is held while the GIL is released: another thread waiting
/// for it with the GIL held would deadlock, so an iterator in use by another thread is an error.
pub(crate) fn lock_iter<T>(m: &Mutex<T>) -> PyResult<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => {
            Err(PyRuntimeError::new_err("the iterator is in use by another thread"))
        }
    }
}
