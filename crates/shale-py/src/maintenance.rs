//! Maintenance of an open database in rocksdict's shape: `CompactOptions` and
//! `BottommostLevelCompaction` (for `Rdict.compact_range`), `FlushOptions` (for `Rdict.flush`),
//! and `Rdict.live_files`, `set_options` and `cancel_all_background`.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};

use crate::encoding::decode;
use crate::enums::py_enum;
use crate::errors::{to_py, NotSupported};
use crate::rdict::Rdict;

/// What a manual compaction does with the files of the last level.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Bottommost {
    Skip,
    IfHaveCompactionFilter,
    Force,
    ForceOptimized,
}

py_enum!(
    /// Whether `compact_range` also rewrites the last level's files (rocksdict's
    /// `BottommostLevelCompaction`). Shale's manual compaction moves the range down into the
    /// last level and rewrites that level's files only when a compaction filter is set
    /// (RocksDB's default, `if_have_compaction_filter`); the Python module sets no compaction
    /// filter, so `skip` is the same. `force` and `force_optimized` raise NotSupported when used.
    BottommostLevelCompaction, Bottommost, {
        skip => Bottommost::Skip,
        if_have_compaction_filter => Bottommost::IfHaveCompactionFilter,
        force => Bottommost::Force,
        force_optimized => Bottommost::ForceOptimized,
    }
);

/// Options of `Rdict.compact_range` (rocksdict's `CompactOptions`).
#[pyclass(module = "shale")]
#[derive(Clone)]
pub(crate) struct CompactOptions {
    bottommost: Bottommost,
}

#[pymethods]
impl CompactOptions {
    #[new]
    fn new() -> Self {
        CompactOptions {
            bottommost: Bottommost::IfHaveCompactionFilter,
        }
    }
    /// RocksDB's default (true) is what Shale does: a manual compaction waits for the running
    /// compactions before each step. False (let automatic compactions run alongside) is
    /// accepted: the result is the same, only the scheduling differs.
    fn set_exclusive_manual_compaction(&mut self, v: bool) {
        let _ = v;
    }
    fn set_bottommost_level_compaction(&mut self, lvl: PyRef<'_, BottommostLevelCompaction>) {
        self.bottommost = lvl.v;
    }
    /// Moving the result to another level is not supported: True raises NotSupported.
    fn set_change_level(&mut self, v: bool) -> PyResult<()> {
        if v {
            return Err(NotSupported::new_err(
                "CompactOptions.set_change_level(True): Shale's manual compaction cannot move its output to another level",
            ));
        }
        Ok(())
    }
    /// Only read with `change_level`, which Shale does not support (as in RocksDB, a target
    /// level without it has no effect).
    fn set_target_level(&mut self, lvl: i32) {
        let _ = lvl;
    }
}

impl CompactOptions {
    /// Fails for what the engine's manual compaction cannot do.
    pub(crate) fn check(&self) -> PyResult<()> {
        match self.bottommost {
            Bottommost::Force | Bottommost::ForceOptimized => Err(NotSupported::new_err(
                "BottommostLevelCompaction.force: Shale's manual compaction does not rewrite the last level's files without a compaction filter",
            )),
            _ => Ok(()),
        }
    }
}

/// Options of `Rdict.flush` (rocksdict's `FlushOptions`): `wait` (default True) waits until
/// the memtable is written; False returns once it is switched out and handed to the
/// background threads.
#[pyclass(module = "shale", get_all, set_all)]
#[derive(Clone)]
pub(crate) struct FlushOptions {
    pub(crate) wait: bool,
}

#[pymethods]
impl FlushOptions {
    #[new]
    fn new() -> Self {
        FlushOptions { wait: true }
    }
}

/// The engine's mutable DB-wide options (`DB::set_db_options`); every other name goes to the
/// family's `set_options`.
const DB_WIDE: &[&str] = &["max_background_jobs", "delayed_write_rate", "stats_dump_period_sec"];

/// An option value as RocksDB's option strings spell it.
fn option_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.downcast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.to_string());
    }
    Ok(v.str()?.to_cow()?.into_owned())
}

fn borrowed(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[pymethods]
impl Rdict {
    /// Every live table file of the database (all families), as dicts: `name`, `size`,
    /// `level`, `start_key` and `end_key` (decoded as this Rdict's keys), `column_family_name`,
    /// `smallest_seqno`, `largest_seqno`. rocksdict's `num_entries` and `num_deletions` are
    /// not given: the engine's file list does not carry them.
    fn live_files<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let db = self.db()?;
        let files = py.allow_threads(|| db.live_files()).map_err(to_py)?;
        let out = PyList::empty(py);
        for f in files {
            let d = PyDict::new(py);
            d.set_item("name", f.name)?;
            d.set_item("size", f.size)?;
            d.set_item("level", f.level)?;
            let key = |k: Option<Vec<u8>>| k.map(|k| decode(py, &k, self.raw)).transpose();
            d.set_item("start_key", key(f.start_key)?)?;
            d.set_item("end_key", key(f.end_key)?)?;
            d.set_item("column_family_name", f.column_family_name)?;
            d.set_item("smallest_seqno", f.smallest_seqno)?;
            d.set_item("largest_seqno", f.largest_seqno)?;
            d.set_item("num_entries", f.num_entries)?;
            d.set_item("num_deletions", f.num_deletions)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Change mutable options while the database is open, by RocksDB's names: `{"write_buffer_size":
    /// "1048576", "disable_auto_compactions": "true"}` (values may also be ints and bools).
    /// `max_background_jobs`, `delayed_write_rate` and `stats_dump_period_sec` are DB-wide; the
    /// others apply to this Rdict's column family. An unknown or immutable name, or a bad value,
    /// is InvalidArgument naming it; the family's options apply all or none, and the DB-wide
    /// ones after them.
    fn set_options(&self, py: Python<'_>, options: &Bound<'_, PyDict>) -> PyResult<()> {
        let db = self.db()?;
        let (mut family, mut wide) = (Vec::new(), Vec::new());
        for (k, v) in options.iter() {
            let name: String = k.extract()?;
            let text = option_text(&v)?;
            if DB_WIDE.contains(&name.as_str()) {
                wide.push((name, text));
            } else {
                family.push((name, text));
            }
        }
        let (family, wide) = (borrowed(&family), borrowed(&wide));
        py.allow_threads(|| {
            if !family.is_empty() {
                db.set_options_cf(&self.cf, &family)?;
            }
            if !wide.is_empty() {
                db.set_db_options(&wide)?;
            }
            Ok(())
        })
        .map_err(to_py)
    }

    /// Stop all background work for good, as before closing (RocksDB's
    /// `CancelAllBackgroundWork`): no flush or compaction starts any more; with `wait`, returns
    /// once the running ones have ended.
    #[pyo3(signature = (wait = true))]
    fn cancel_all_background(&self, py: Python<'_>, wait: bool) -> PyResult<()> {
        let db = self.db()?;
        py.allow_threads(|| db.cancel_all_background_work(wait));
        Ok(())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BottommostLevelCompaction>()?;
    m.add_class::<CompactOptions>()?;
    m.add_class::<FlushOptions>()
}
