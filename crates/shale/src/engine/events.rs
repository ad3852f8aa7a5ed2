//! What the engine writes to the info log (`crate::info_log`): the options and the recovered
//! state at open, flushes and compactions (text lines and RocksDB's `EVENT_LOG_v1` events with
//! its field names: `flush_started`, `flush_finished`, `compaction_started`,
//! `compaction_finished`, `table_file_creation`, `table_file_deletion`), stalls, background
//! errors and the periodic `rocksdb.stats` dump. Each function is called with one line from the
//! path it describes; none is on the write path.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::{column_family::ColumnFamilyData, state::DbInner, state::DbState};
use crate::compaction::picker::Pick;
use crate::error::Error;
use crate::fs::FileSystem;
use crate::info_log::{EventJson, InfoLog, LogLevel};
use crate::lsm::version::FileMeta;
use crate::lsm::version_edit::FileMetaData;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::table::any::{format_of, TableFormat};
use crate::table::block_based::reader::Table;
use crate::table::properties::TableProperties;

/// Start the LOG of a DB being opened (read-write: the previous LOG is rotated) and write the
/// header and the options, as RocksDB's `DumpDBFileSummary` and `Options::Dump`.
pub(crate) fn open_log(fs: &Arc<dyn FileSystem>, path: &Path, opts: &Options, read_only: bool) -> Arc<InfoLog> {
    if read_only {
        // A read-only open takes no lock: the LOG belongs to the process that owns the DB.
        return Arc::new(InfoLog::disabled());
    }
    let log = InfoLog::open(fs.clone(), path, &opts.info_log);
    if log.enabled(LogLevel::Header) {
        log.log(
            LogLevel::Header,
            &format!("Shale version: {}", env!("CARGO_PKG_VERSION")),
        );
        log.log(LogLevel::Header, &format!("DB path: {}", path.display()));
        let mut text = String::new();
        for line in crate::options::file::render(opts).lines() {
            let line = line.trim();
            if line.starts_with('[') {
                text.push_str(&format!("                     {line}\n"));
            } else if let Some((k, v)) = line.split_once('=') {
                text.push_str(&format!("{:>45}: {}\n", format!("Options.{k}"), v));
            }
        }
        for (k, v) in opts.knobs.log_only_lines() {
            text.push_str(&format!("{:>45}: {}\n", format!("Options.{k}"), v));
        }
        log.log(LogLevel::Header, text.trim_end());
    }
    Arc::new(log)
}

/// The state recovered at open: MANIFEST numbers, replayed WALs, files per level.
pub(crate) fn opened(db: &Arc<DbInner>, wals: &[u64]) {
    let log = &db.info_log;
    if !log.enabled(LogLevel::Info) {
        return;
    }
    let st = db.state.lock();
    let v = &st.versions;
    log.info(&format!(
        "DB ID: {}; DB Session ID: {}; recovered from the MANIFEST: manifest_file_number is {}, \
         next_file_number is {}, last_sequence is {}, log_number is {}; WALs replayed: {:?}",
        db.db_id,
        db.session_id,
        v.manifest_number,
        v.next_file_number,
        db.last_seq.load(Ordering::Acquire),
        v.cfs.values().map(|c| c.log_number).min().unwrap_or(0),
        wals
    ));
    for (id, c) in &v.cfs {
        log.info(&format!("[{}] Level summary: {}", c.name, level_summary(&st, *id)));
    }
    drop(st);
    let (period, dir) = (log.stats_dump_period_sec(), db.path.display().to_string());
    log.info(&format!("DB {dir} opened; stats_dump_period_sec is {period}"));
}

fn lsm_state(st: &DbState, cf: u32) -> Vec<u64> {
    let Ok(c) = st.versions.cf(cf) else {
        return Vec::new();
    };
    let v = &c.current;
    (0..v.num_levels()).map(|l| v.num_files(l) as u64).collect()
}

fn level_summary(st: &DbState, cf: u32) -> String {
    let files: Vec<String> = lsm_state(st, cf).iter().map(|n| n.to_string()).collect();
    format!("files[{}]", files.join(" "))
}

/// A flush job starts: its job id (for the lines and events that follow).
pub(crate) fn flush_started(db: &DbInner, cf: &ColumnFamilyData, mems: &[Arc<MemTable>]) -> u64 {
    let log = &db.info_log;
    let job = log.next_job_id();
    if !log.enabled(LogLevel::Info) {
        return job;
    }
    let entries: u64 = mems.iter().map(|m| m.num_entries()).sum();
    let deletes: u64 = mems.iter().map(|m| m.num_deletes()).sum();
    let memory: u64 = mems.iter().map(|m| m.approximate_memory_usage() as u64).sum();
    log.info(&format!(
        "[{}] [JOB {job}] Flushing memtable with {} memtable(s)",
        cf.name,
        mems.len()
    ));
    log.event(
        EventJson::new()
            .num("job", job)
            .str("event", "flush_started")
            .num("num_memtables", mems.len() as u64)
            .num("num_entries", entries)
            .num("num_deletes", deletes)
            .num("total_data_size", memory)
            .num("memory_usage", memory)
            .str("flush_reason", "Write Buffer Full"),
    );
    job
}

/// A flush job's outputs are installed.
pub(crate) fn flush_finished(
    db: &DbInner,
    st: &DbState,
    cf: &ColumnFamilyData,
    job: u64,
    outputs: &[FileMetaData],
    start: Instant,
) {
    let log = &db.info_log;
    if !log.enabled(LogLevel::Info) {
        return;
    }
    let mut compression = String::from("NoCompression");
    for f in outputs {
        log.info(&format!(
            "[{}] [JOB {job}] Level-0 flush table #{}: {} bytes OK",
            cf.name, f.number, f.file_size
        ));
        compression = table_file_created(db, st, cf, job, f.number);
    }
    log.info(&format!(
        "[{}] [JOB {job}] Flush finished in {} us: {} file(s), {} bytes; {}",
        cf.name,
        start.elapsed().as_micros(),
        outputs.len(),
        outputs.iter().map(|f| f.file_size).sum::<u64>(),
        level_summary(st, cf.id)
    ));
    log.event(
        EventJson::new()
            .num("job", job)
            .str("event", "flush_finished")
            .str("output_compression", &compression)
            .nums("lsm_state", lsm_state(st, cf.id))
            .num(
                "immutable_memtables",
                st.cfs.get(&cf.id).map_or(0, |m| m.imm.len()) as u64,
            ),
    );
}

/// A table's properties for the LOG: from the open table if it is open, else read from the
/// file's properties block alone (block-based tables), so that logging opens no table and puts
/// nothing into the block cache.
fn properties(db: &DbInner, f: &FileMeta) -> Option<TableProperties> {
    if let Some(t) = f.table().get() {
        return Some(t.properties().clone());
    }
    let path = crate::lsm::filename::table_name(&db.path, f.number());
    let name = crate::fs::name_of(&path);
    let file = db.fs.open_random(&path).ok()?;
    match format_of(&*file, &name, f.meta.file_size).ok()? {
        TableFormat::BlockBased => Table::read_properties(file, name, f.meta.file_size).ok(),
        TableFormat::Plain | TableFormat::Cuckoo => None,
    }
}

/// RocksDB's `table_file_creation` event for a table of the current version (returns its
/// compression name).
fn table_file_created(db: &DbInner, st: &DbState, cf: &ColumnFamilyData, job: u64, number: u64) -> String {
    let Some(f) = st
        .versions
        .all_files()
        .map(|(_, _, f)| f)
        .find(|f| f.number() == number)
    else {
        return "NoCompression".into();
    };
    let mut e = EventJson::new()
        .str("cf_name", &cf.name)
        .num("job", job)
        .str("event", "table_file_creation")
        .num("file_number", number)
        .num("file_size", f.meta.file_size)
        .str("file_checksum", "")
        .str("file_checksum_func_name", "Unknown")
        .num("smallest_seqno", f.meta.smallest_seqno)
        .num("largest_seqno", f.meta.largest_seqno);
    let mut compression = "NoCompression".to_string();
    if let Some(p) = properties(db, f) {
        let avg = |total: u64| {
            if p.num_entries == 0 {
                0.0
            } else {
                total as f64 / p.num_entries as f64
            }
        };
        compression = p.compression_name.clone();
        e = e.obj(
            "table_properties",
            EventJson::new()
                .num("data_size", p.data_size)
                .num("index_size", p.index_size)
                .num("index_partitions", 0u64)
                .num("top_level_index_size", 0u64)
                .num("index_key_is_user_key", p.index_key_is_user_key as u64)
                .num("index_value_is_delta_encoded", p.index_value_is_delta_encoded as u64)
                .num("filter_size", p.filter_size)
                .num("raw_key_size", p.raw_key_size)
                .float("raw_average_key_size", avg(p.raw_key_size))
                .num("raw_value_size", p.raw_value_size)
                .float("raw_average_value_size", avg(p.raw_value_size))
                .num("num_data_blocks", p.num_data_blocks)
                .num("num_entries", p.num_entries)
                .num("num_filter_entries", p.num_filter_entries)
                .num("num_deletions", p.num_deletions)
                .num("num_merge_operands", p.num_merge_operands)
                .num("num_range_deletions", p.num_range_deletions)
                .num("format_version", p.format_version)
                .num("fixed_key_len", p.fixed_key_len)
                .str("filter_policy", &p.filter_policy_name)
                .str("column_family_name", &p.column_family_name)
                .num("column_family_id", p.column_family_id)
                .str("comparator", &p.comparator_name)
                .str("merge_operator", &p.merge_operator_name)
                .str("prefix_extractor_name", &p.prefix_extractor_name)
                .str("property_collectors", &p.property_collectors_names)
                .str("compression", &p.compression_name)
                .str("compression_options", &p.compression_options)
                .num("creation_time", p.creation_time)
                .num("oldest_key_time", p.oldest_key_time)
                .num("file_creation_time", p.file_creation_time)
                .str("db_id", &p.db_id)
                .str("db_session_id", &p.db_session_id)
                .num("orig_file_number", p.orig_file_number),
        );
    }
    db.info_log
        .event(e.num("oldest_blob_file_number", f.meta.oldest_blob_file_number));
    compression
}

fn file_list(files: &[Arc<FileMeta>]) -> String {
    let n: Vec<String> = files.iter().map(|f| f.number().to_string()).collect();
    n.join(" ")
}

fn reason(st: &DbState, pick: &Pick) -> &'static str {
    if st.manual_compactions > 0 {
        "ManualCompaction"
    } else if let Some(r) = pick.reason {
        r
    } else if pick.level == 0 {
        "LevelL0FilesNum"
    } else {
        "LevelMaxLevelSize"
    }
}

/// A compaction job starts rewriting its inputs: its job id.
pub(crate) fn compaction_started(db: &DbInner, st: &DbState, cf: &ColumnFamilyData, pick: &Pick) -> u64 {
    let log = &db.info_log;
    let job = log.next_job_id();
    if !log.enabled(LogLevel::Info) {
        return job;
    }
    log.info(&format!(
        "[{}] [JOB {job}] Compacting {}@{} + {}@{} files to L{}, score {:.2}; inputs: [{}] + [{}]",
        cf.name,
        pick.inputs.len(),
        pick.level,
        pick.next_inputs.len(),
        pick.output_level,
        pick.output_level,
        pick.score,
        file_list(&pick.inputs),
        file_list(&pick.next_inputs)
    ));
    let mut e = EventJson::new()
        .num("job", job)
        .str("event", "compaction_started")
        .str("compaction_reason", reason(st, pick));
    // As RocksDB: every level from the start level to the output level, the levels between
    // (a universal merge's middle runs) included.
    for level in pick.level..=pick.output_level.max(pick.level) {
        let files: Vec<u64> = pick
            .inputs_by_level()
            .filter(|(l, _)| *l == level)
            .map(|(_, f)| f.number())
            .collect();
        e = e.nums(&format!("files_L{level}"), files);
    }
    let oldest_snapshot = db.snapshot_list().first().map(|&s| s as i128).unwrap_or(-1);
    log.event(
        e.float("score", pick.score)
            .num(
                "input_data_size",
                pick.all_inputs().map(|f| f.meta.file_size).sum::<u64>(),
            )
            .num("oldest_snapshot_seqno", oldest_snapshot),
    );
    job
}

/// A file moved to the next level without being rewritten.
pub(crate) fn trivial_move(db: &DbInner, st: &DbState, cf: &ColumnFamilyData, pick: &Pick) {
    let log = &db.info_log;
    if log.enabled(LogLevel::Info) {
        let job = log.next_job_id();
        for f in &pick.inputs {
            log.info(&format!(
                "[{}] [JOB {job}] Moved #{} to level-{} {} bytes OK: {}",
                cf.name,
                f.number(),
                pick.output_level,
                f.meta.file_size,
                level_summary(st, cf.id)
            ));
        }
    }
}

/// A compaction job's outputs are installed.
pub(crate) fn compaction_finished(
    db: &DbInner,
    st: &DbState,
    cf: &ColumnFamilyData,
    job: u64,
    pick: &Pick,
    outputs: &[FileMetaData],
    start: Instant,
) {
    let log = &db.info_log;
    if !log.enabled(LogLevel::Info) {
        return;
    }
    let micros = start.elapsed().as_micros() as u64;
    let records = |fs: &mut dyn Iterator<Item = &Arc<FileMeta>>| -> u64 {
        fs.filter_map(|f| cf.table_cache.get(f).ok())
            .map(|t| t.properties().num_entries)
            .sum()
    };
    let in_records = records(&mut pick.all_inputs());
    let mut compression = String::from("NoCompression");
    for f in outputs {
        compression = table_file_created(db, st, cf, job, f.number);
    }
    let current: Vec<Arc<FileMeta>> = match st.versions.cf(cf.id) {
        Ok(c) => c.current.all_files().map(|(_, f)| f.clone()).collect(),
        Err(_) => Vec::new(),
    };
    let out_records = records(
        &mut current
            .iter()
            .filter(|f| outputs.iter().any(|o| o.number == f.number())),
    );
    let in_bytes: u64 = pick.all_inputs().map(|f| f.meta.file_size).sum();
    let out_bytes: u64 = outputs.iter().map(|f| f.file_size).sum();
    log.info(&format!(
        "[{}] [JOB {job}] Compacted {}@{} + {}@{} files to L{} => {} bytes in {} file(s), {} us; \
         records in: {}, dropped: {}; read {} bytes; {}",
        cf.name,
        pick.inputs.len(),
        pick.level,
        pick.next_inputs.len(),
        pick.output_level,
        pick.output_level,
        out_bytes,
        outputs.len(),
        micros,
        in_records,
        in_records.saturating_sub(out_records),
        in_bytes,
        level_summary(st, cf.id)
    ));
    log.event(
        EventJson::new()
            .num("job", job)
            .str("event", "compaction_finished")
            .num("compaction_time_micros", micros)
            .num("compaction_time_cpu_micros", micros)
            .num("output_level", pick.output_level as u64)
            .num("num_output_files", outputs.len() as u64)
            .num("total_output_size", out_bytes)
            .num("num_input_records", in_records)
            .num("num_output_records", out_records)
            .num("num_subcompactions", 1u64)
            .str("output_compression", &compression)
            .num("num_single_delete_mismatches", 0u64)
            .num("num_single_delete_fallthrough", 0u64)
            .nums("lsm_state", lsm_state(st, cf.id)),
    );
}

/// A column family was created or dropped.
pub(crate) fn family_changed(db: &DbInner, what: &str, cf: &ColumnFamilyData) {
    let log = &db.info_log;
    if log.enabled(LogLevel::Info) {
        log.info(&format!("Column family [{}] (ID {}) {what}", cf.name, cf.id));
    }
}

/// An obsolete table file was deleted.
pub(crate) fn table_file_deleted(db: &DbInner, number: u64) {
    let log = &db.info_log;
    if log.enabled(LogLevel::Info) {
        log.event(
            EventJson::new()
                .num("job", 0u64)
                .str("event", "table_file_deletion")
                .num("file_number", number),
        );
    }
}

/// A background error (hard: writes stop until `resume()`; soft: compactions are retried).
pub(crate) fn background_error(db: &DbInner, e: &Error, soft: bool) {
    let kind = if soft { "soft" } else { "hard" };
    db.info_log.error(&format!("[default] Background error ({kind}): {e}"));
}
