//! Changing options while the DB runs (RocksDB's `SetOptions` / `SetDBOptions`): the mutable
//! options by RocksDB's names and string values, applied to later flushes, compactions and
//! stall computations, and persisted to a new OPTIONS file.

use std::sync::Arc;

use super::db::DB;
use crate::engine::column_family::{AsColumnFamilyRef, ColumnFamilyData};
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::options::Options;

/// Options RocksDB (and Shale) fix at open: named in the error as immutable rather than unknown.
const IMMUTABLE: &[&str] = &[
    "comparator",
    "merge_operator",
    "compaction_filter",
    "compaction_filter_factory",
    "table_factory",
    "num_levels",
    "compaction_style",
    "level_compaction_dynamic_level_bytes",
    "min_write_buffer_number_to_merge",
    "create_if_missing",
    "create_missing_column_families",
    "error_if_exists",
    "paranoid_checks",
    "max_open_files",
    "allow_mmap_reads",
    "allow_mmap_writes",
    "wal_recovery_mode",
    "atomic_flush",
    "allow_concurrent_memtable_write",
    "manual_wal_flush",
    "enable_pipelined_write",
    "unordered_write",
    "db_write_buffer_size",
    "info_log_level",
    "max_log_file_size",
    "keep_log_file_num",
];

/// A size as RocksDB parses one: digits with an optional k/m/g/t suffix (powers of 1024).
fn parse_u64(name: &str, v: &str) -> Result<u64> {
    let bad = || {
        Error::invalid(format!(
            "set_options: bad value {v:?} for {name} (a non-negative integer)"
        ))
    };
    let t = v.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_lowercase() {
                'k' => 10,
                'm' => 20,
                'g' => 30,
                't' => 40,
                _ => return Err(bad()),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// A prefix extractor as RocksDB's option strings name one: `nullptr` (none), a recorded name
/// (`rocksdb.FixedPrefix.8`, `rocksdb.CappedPrefix.4`, `rocksdb.Noop`) or the short forms
/// `fixed:8`, `capped:4`.
fn parse_prefix_extractor(name: &str, v: &str) -> Result<Option<Arc<dyn crate::slice_transform::PrefixExtractor>>> {
    let v = v.trim();
    if v == "nullptr" || v.is_empty() {
        return Ok(None);
    }
    let full = if let Some(n) = v.strip_prefix("fixed:") {
        format!("rocksdb.FixedPrefix.{n}")
    } else if let Some(n) = v.strip_prefix("capped:") {
        format!("rocksdb.CappedPrefix.{n}")
    } else {
        v.to_string()
    };
    crate::slice_transform::slice_transform_from_name(&full)
        .map(Some)
        .ok_or_else(|| {
            Error::invalid(format!(
                "set_options: {name}={v:?} is not a built-in prefix extractor (fixed:N, capped:N, \
                 rocksdb.FixedPrefix.N, rocksdb.CappedPrefix.N, rocksdb.Noop or nullptr)"
            ))
        })
}

fn parse_i32(name: &str, v: &str) -> Result<i32> {
    i32::try_from(parse_u64(name, v)?)
        .map_err(|_| Error::invalid(format!("set_options: value {v:?} for {name} is too large")))
}

fn parse_bool(name: &str, v: &str) -> Result<bool> {
    match v.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::invalid(format!(
            "set_options: bad value {v:?} for {name} (true or false)"
        ))),
    }
}

fn refuse(name: &str, db_level: bool) -> Error {
    if IMMUTABLE.contains(&name) {
        Error::invalid(format!(
            "set_options: option {name} cannot be changed while the DB is open"
        ))
    } else if db_level {
        Error::invalid(format!("set_db_options: unknown or non-DB option {name}"))
    } else {
        Error::invalid(format!("set_options: unknown or non-column-family option {name}"))
    }
}

/// Apply one mutable column-family option to `o`.
fn apply_cf(o: &mut Options, name: &str, v: &str) -> Result<()> {
    if let Some(r) = o.blob.apply(name, v) {
        return r.map_err(|e| Error::invalid(format!("set_options: {e}")));
    }
    match name {
        "write_buffer_size" => o.set_write_buffer_size(parse_u64(name, v)? as usize),
        "max_write_buffer_number" => o.set_max_write_buffer_number(parse_i32(name, v)?),
        "level0_file_num_compaction_trigger" => o.set_level_zero_file_num_compaction_trigger(parse_i32(name, v)?),
        "level0_slowdown_writes_trigger" => o.set_level_zero_slowdown_writes_trigger(parse_i32(name, v)?),
        "level0_stop_writes_trigger" => o.set_level_zero_stop_writes_trigger(parse_i32(name, v)?),
        "max_bytes_for_level_base" => o.set_max_bytes_for_level_base(parse_u64(name, v)?),
        "max_bytes_for_level_multiplier" => {
            let m: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|m: &f64| m.is_finite() && *m > 0.0)
                .ok_or_else(|| {
                    Error::invalid(format!("set_options: bad value {v:?} for {name} (a positive number)"))
                })?;
            o.set_max_bytes_for_level_multiplier(m)
        }
        "target_file_size_base" => o.set_target_file_size_base(parse_u64(name, v)?),
        "target_file_size_multiplier" => o.set_target_file_size_multiplier(parse_i32(name, v)?),
        "disable_auto_compactions" => o.set_disable_auto_compactions(parse_bool(name, v)?),
        "max_compaction_bytes" => o.set_max_compaction_bytes(parse_u64(name, v)?),
        "soft_pending_compaction_bytes_limit" => o.soft_pending_compaction_bytes_limit = parse_u64(name, v)?,
        "hard_pending_compaction_bytes_limit" => o.hard_pending_compaction_bytes_limit = parse_u64(name, v)?,
        "ttl" => o.set_ttl(parse_u64(name, v)?),
        "periodic_compaction_seconds" => o.set_periodic_compaction_seconds(parse_u64(name, v)?),
        "prefix_extractor" => {
            if !matches!(o.table_factory, crate::options::TableFactory::BlockBased) {
                // PlainTable's hash index is built by the extractor the files were opened with.
                return Err(Error::invalid(format!(
                    "set_options: prefix_extractor can change only with block-based tables, not {:?}",
                    o.table_factory
                )));
            }
            o.prefix_extractor = parse_prefix_extractor(name, v)?;
        }
        _ => return Err(refuse(name, false)),
    }
    Ok(())
}

/// Apply one mutable DB option to `o`.
fn apply_db(o: &mut Options, name: &str, v: &str) -> Result<()> {
    match name {
        "max_background_jobs" => o.set_max_background_jobs(parse_i32(name, v)?),
        "delayed_write_rate" => o.set_delayed_write_rate(parse_u64(name, v)?),
        "stats_dump_period_sec" => {
            let p = u32::try_from(parse_u64(name, v)?)
                .map_err(|_| Error::invalid(format!("set_db_options: value {v:?} for {name} is too large")))?;
            o.set_stats_dump_period_sec(p)
        }
        _ => return Err(refuse(name, true)),
    }
    Ok(())
}

fn check(o: &Options, what: &str) -> Result<()> {
    o.validate().map_err(|e| Error::invalid(format!("{what}: {e}")))
}

/// Install new options on families (all or none), recompute stalls, wake the background
/// threads, and write a new OPTIONS file.
fn install(db: &Arc<DbInner>, changes: Vec<(Arc<ColumnFamilyData>, Options)>, db_opts: Option<Options>) -> Result<()> {
    {
        let st = db.state.lock();
        // A single family dropped meanwhile is an error; in `set_db_options`, dropped families
        // are skipped (their data is going away), so the change stays all or none.
        if let [(cf, _)] = changes.as_slice() {
            if cf.is_dropped() {
                return Err(Error::invalid(format!(
                    "set_options: column family {} was dropped",
                    cf.name
                )));
            }
        }
        for (cf, o) in changes {
            if cf.is_dropped() {
                continue;
            }
            // Tables opened from now on are read with the new extractor (new files are
            // written with it); open ones check the extractor's name on each prefix probe.
            cf.table_cache.set_prefix_extractor(o.prefix_extractor.clone());
            cf.opts.store(o);
        }
        if let Some(o) = db_opts {
            db.opts.store(o);
        }
        // Stall conditions depend on the triggers and limits just changed.
        db.install_super_version(&st, 0);
        db.work_cv.notify_all();
        db.bg_cv.notify_all();
    }
    crate::engine::families::rewrite_options_file(db)
}

fn set_cf_options(db: &Arc<DbInner>, cfd: Arc<ColumnFamilyData>, opts: &[(&str, &str)]) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("set_options on a database opened read-only".into()));
    }
    let mut o: Options = (*cfd.opts).clone();
    for (k, v) in opts {
        apply_cf(&mut o, k.trim(), v)?;
    }
    check(&o, "set_options")?;
    install(db, vec![(cfd, o)], None)
}

impl DB {
    /// Change mutable options of the default family, by RocksDB's names and string values
    /// (e.g. `[("write_buffer_size", "1048576"), ("disable_auto_compactions", "true")]`).
    /// All apply or none; an unknown or immutable option, or a bad value, is InvalidArgument
    /// naming it.
    pub fn set_options(&self, opts: &[(&str, &str)]) -> Result<()> {
        set_cf_options(&self.inner, self.inner.default_cf.clone(), opts)
    }

    /// [`set_options`](DB::set_options) for family `cf`.
    pub fn set_options_cf(&self, cf: &impl AsColumnFamilyRef, opts: &[(&str, &str)]) -> Result<()> {
        set_cf_options(&self.inner, crate::engine::families::cfd_of(cf).clone(), opts)
    }

    /// Change mutable DB-wide options (`max_background_jobs`, `delayed_write_rate`,
    /// `stats_dump_period_sec`) by RocksDB's names and string values. `max_background_jobs`
    /// bounds the compactions run at once; the threads started at open stay.
    pub fn set_db_options(&self, opts: &[(&str, &str)]) -> Result<()> {
        if self.inner.read_only {
            return Err(Error::NotSupported(
                "set_db_options on a database opened read-only".into(),
            ));
        }
        let mut d: Options = (*self.inner.opts).clone();
        for (k, v) in opts {
            apply_db(&mut d, k.trim(), v)?;
        }
        check(&d, "set_db_options")?;
        let families: Vec<Arc<ColumnFamilyData>> = self.inner.cfs.read().by_id.values().cloned().collect();
        let mut changes = Vec::new();
        for cf in families {
            let mut o: Options = (*cf.opts).clone();
            for (k, v) in opts {
                apply_db(&mut o, k.trim(), v)?;
            }
            changes.push((cf, o));
        }
        let jobs = d.max_background_jobs;
        install(&self.inner, changes, Some(d))?;
        // A stats period set where there was none starts the dump thread.
        crate::engine::properties::start_stats_dump(&self.inner);
        // More jobs than threads: start the missing ones (fewer: the extra threads idle).
        crate::engine::background::spawn_up_to(&self.inner, jobs)
    }

    /// Stop starting flushes and compactions and wait for the running ones (RocksDB's
    /// `PauseBackgroundWork`; calls nest). Meanwhile `flush`, `compact_range` and
    /// `wait_for_compact` are Incomplete, and writes stall once the memtables are full.
    pub fn pause_background_work(&self) -> Result<()> {
        crate::engine::background::pause(&self.inner)
    }

    /// Undo one [`pause_background_work`](DB::pause_background_work).
    pub fn continue_background_work(&self) -> Result<()> {
        crate::engine::background::resume_work(&self.inner)
    }

    /// Stop all background work for good, as before closing (RocksDB's
    /// `CancelAllBackgroundWork`): no flush or compaction starts any more; with `wait`, returns
    /// once the running ones ended. The DB should be dropped next.
    pub fn cancel_all_background_work(&self, wait: bool) {
        crate::engine::background::cancel_all(&self.inner, wait)
    }
}
