//! Compaction styles in rocksdict's shape: `DBCompactionStyle`, `UniversalCompactOptions`
//! (attributes), `UniversalCompactionStopStyle`, `FifoCompactOptions`, and the `Options` methods
//! that take them. Values are checked when the database opens (InvalidArgument naming the
//! option), as in the engine.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::options::Options;

/// Leveled, universal or FIFO compaction (rocksdict's `DBCompactionStyle`).
#[pyclass(module = "shale", eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct DBCompactionStyle {
    s: shale::DBCompactionStyle,
}

#[pymethods]
impl DBCompactionStyle {
    #[staticmethod]
    fn level() -> Self {
        DBCompactionStyle {
            s: shale::DBCompactionStyle::Level,
        }
    }
    #[staticmethod]
    fn universal() -> Self {
        DBCompactionStyle {
            s: shale::DBCompactionStyle::Universal,
        }
    }
    #[staticmethod]
    fn fifo() -> Self {
        DBCompactionStyle {
            s: shale::DBCompactionStyle::Fifo,
        }
    }
    fn __repr__(&self) -> &'static str {
        match self.s {
            shale::DBCompactionStyle::Level => "DBCompactionStyle.level()",
            shale::DBCompactionStyle::Universal => "DBCompactionStyle.universal()",
            shale::DBCompactionStyle::Fifo => "DBCompactionStyle.fifo()",
        }
    }
}

/// When a universal size-ratio pick stops taking runs (rocksdict's
/// `UniversalCompactionStopStyle`).
#[pyclass(module = "shale", eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct UniversalCompactionStopStyle {
    s: shale::UniversalCompactionStopStyle,
}

#[pymethods]
impl UniversalCompactionStopStyle {
    #[staticmethod]
    fn similar() -> Self {
        UniversalCompactionStopStyle {
            s: shale::UniversalCompactionStopStyle::Similar,
        }
    }
    #[staticmethod]
    fn total() -> Self {
        UniversalCompactionStopStyle {
            s: shale::UniversalCompactionStopStyle::Total,
        }
    }
    fn __repr__(&self) -> &'static str {
        match self.s {
            shale::UniversalCompactionStopStyle::Similar => "UniversalCompactionStopStyle.similar()",
            shale::UniversalCompactionStopStyle::Total => "UniversalCompactionStopStyle.total()",
        }
    }
}

/// Universal compaction's options, as attributes with RocksDB's defaults (rocksdict's
/// `UniversalCompactOptions`; `allow_trivial_move` is the `rocksdb` crate's addition).
#[pyclass(module = "shale", get_all, set_all)]
#[derive(Clone)]
pub(crate) struct UniversalCompactOptions {
    size_ratio: i32,
    min_merge_width: i32,
    max_merge_width: i32,
    max_size_amplification_percent: i32,
    compression_size_percent: i32,
    stop_style: UniversalCompactionStopStyle,
    allow_trivial_move: bool,
}

#[pymethods]
impl UniversalCompactOptions {
    #[new]
    fn new() -> Self {
        UniversalCompactOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: i32::MAX,
            max_size_amplification_percent: 200,
            compression_size_percent: -1,
            stop_style: UniversalCompactionStopStyle::total(),
            allow_trivial_move: false,
        }
    }
}

impl UniversalCompactOptions {
    fn to_engine(&self) -> PyResult<shale::UniversalCompactOptions> {
        for (name, v) in [
            ("size_ratio", self.size_ratio),
            ("min_merge_width", self.min_merge_width),
            ("max_merge_width", self.max_merge_width),
            ("max_size_amplification_percent", self.max_size_amplification_percent),
        ] {
            if v < 0 {
                return Err(PyValueError::new_err(format!(
                    "UniversalCompactOptions.{name} must not be negative (got {v})"
                )));
            }
        }
        let mut u = shale::UniversalCompactOptions::default();
        u.set_size_ratio(self.size_ratio);
        u.set_min_merge_width(self.min_merge_width);
        // RocksDB's "unlimited" is UINT_MAX; i32::MAX stands for it here.
        u.set_max_merge_width(self.max_merge_width);
        u.set_max_size_amplification_percent(self.max_size_amplification_percent);
        u.set_compression_size_percent(self.compression_size_percent);
        u.set_stop_style(self.stop_style.s);
        u.set_allow_trivial_move(self.allow_trivial_move);
        Ok(u)
    }
}

/// FIFO compaction's options (rocksdict's `FifoCompactOptions`; `allow_compaction` as in the
/// `rocksdb` crate).
#[pyclass(module = "shale", get_all, set_all)]
#[derive(Clone)]
pub(crate) struct FifoCompactOptions {
    max_table_files_size: u64,
    allow_compaction: bool,
}

#[pymethods]
impl FifoCompactOptions {
    #[new]
    fn new() -> Self {
        FifoCompactOptions {
            max_table_files_size: 1 << 30,
            allow_compaction: false,
        }
    }
}

#[pymethods]
impl Options {
    /// Leveled (the default), universal or FIFO compaction.
    fn set_compaction_style(&mut self, style: PyRef<'_, DBCompactionStyle>) {
        self.inner.set_compaction_style(style.s);
    }
    fn set_universal_compaction_options(&mut self, uco: PyRef<'_, UniversalCompactOptions>) -> PyResult<()> {
        self.inner.set_universal_compaction_options(&uco.to_engine()?);
        Ok(())
    }
    fn set_fifo_compaction_options(&mut self, fco: PyRef<'_, FifoCompactOptions>) {
        let mut f = shale::FifoCompactOptions::default();
        f.set_max_table_files_size(fco.max_table_files_size);
        f.set_allow_compaction(fco.allow_compaction);
        self.inner.set_fifo_compaction_options(&f);
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DBCompactionStyle>()?;
    m.add_class::<UniversalCompactionStopStyle>()?;
    m.add_class::<UniversalCompactOptions>()?;
    m.add_class::<FifoCompactOptions>()?;
    Ok(())
}
