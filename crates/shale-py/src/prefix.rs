//! Prefix extractors in rocksdict's shape: `SliceTransform.create_fixed_prefix(n)`,
//! `create_max_len_prefix(n)`, `create_noop()`, `Options.set_prefix_extractor(...)` and
//! `set_memtable_prefix_bloom_ratio(...)`, and the prefix-seek switches of `ReadOptions`
//! (`set_prefix_same_as_start`, `set_total_order_seek`). The extractor sees the keys as stored:
//! in a non-raw database those are rocksdict's encoded keys, as in rocksdict.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::options::{Options, ReadOptions};

/// A prefix extractor (rocksdict's `SliceTransform`): RocksDB's fixed, capped ("max len") and
/// no-op transforms, recorded in table files by RocksDB's names.
#[pyclass(module = "shale", frozen)]
pub(crate) struct SliceTransform {
    t: Arc<dyn shale::slice_transform::PrefixExtractor>,
}

#[pymethods]
impl SliceTransform {
    /// The first `len` bytes of a key; shorter keys are outside the extractor's domain.
    #[staticmethod]
    fn create_fixed_prefix(len: usize) -> Self {
        SliceTransform {
            t: shale::slice_transform::new_fixed_prefix_transform(len),
        }
    }
    /// At most the first `len` bytes of a key (RocksDB's capped prefix).
    #[staticmethod]
    fn create_max_len_prefix(len: usize) -> Self {
        SliceTransform {
            t: shale::slice_transform::new_capped_prefix_transform(len),
        }
    }
    /// The whole key.
    #[staticmethod]
    fn create_noop() -> Self {
        SliceTransform {
            t: shale::slice_transform::new_noop_transform(),
        }
    }
    /// RocksDB's name for it (`rocksdb.FixedPrefix.8`, `rocksdb.CappedPrefix.4`,
    /// `rocksdb.Noop`), as table files record it.
    #[getter]
    fn name(&self) -> String {
        self.t.name().to_string()
    }
    fn __repr__(&self) -> String {
        format!("SliceTransform({})", self.t.name())
    }
}

#[pymethods]
impl Options {
    /// Group keys by this extractor's prefixes: table and memtable filters hold the prefixes,
    /// and iterators seek in prefix mode unless `ReadOptions.set_total_order_seek(True)`.
    fn set_prefix_extractor(&mut self, prefix_extractor: PyRef<'_, SliceTransform>) {
        self.inner.set_prefix_extractor(prefix_extractor.t.clone());
    }
    /// A memtable bloom of `ratio` × `write_buffer_size` bytes over prefixes (0 = none; at
    /// most 0.25).
    fn set_memtable_prefix_bloom_ratio(&mut self, ratio: f64) -> PyResult<()> {
        if !(ratio.is_finite() && ratio >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "memtable_prefix_bloom_ratio must be a number >= 0, not {ratio}"
            )));
        }
        self.inner.set_memtable_prefix_bloom_ratio(ratio);
        Ok(())
    }
}

#[pymethods]
impl ReadOptions {
    /// Iterate only over keys with the seek key's prefix (needs a prefix extractor).
    fn set_prefix_same_as_start(&mut self, v: bool) {
        self.prefix_same_as_start = v;
    }
    /// Seek in total order even with a prefix extractor (filters are not asked).
    fn set_total_order_seek(&mut self, v: bool) {
        self.total_order_seek = v;
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SliceTransform>()
}
