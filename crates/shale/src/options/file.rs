//! The `OPTIONS-NNNNNN` file: a text dump of the options a database was opened with, in the
//! INI-like syntax of RocksDB's options parser (`[Version]`, `[DBOptions]`, `[CFOptions
//! "default"]`, `[TableOptions/<Factory> "default"]`, body lines `  key=value`).
//!
//! The database never reads it back at open (`shale ldb` loads it as RocksDB's tools do, see
//! [`apply_latest`]). It exists for RocksDB's tools: `ldb` (and `rocksdict`'s
//! `Options.load_latest`) load the newest one to learn the table factory, without which they
//! cannot open a database of PlainTable or CuckooTable files. Only options RocksDB 7.8 knows are
//! written, with RocksDB's spelling of their values; everything else keeps RocksDB's default.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::compaction::DBCompactionStyle;
use super::compaction::{FifoCompactOptions, UniversalCompactOptions, UniversalCompactionStopStyle};
use crate::error::{Error, Result};
use crate::fs::FileSystem;
use crate::log::DBRecoveryMode;
use crate::lsm::filename::{parse_file_name, FileType};
use crate::options::{CompactionPri, Options, TableFactory};
use crate::table::format::{ChecksumType, DBCompressionType};
use crate::table::plain::KeyEncodingType;

/// OPTIONS files kept in the directory (RocksDB keeps the newest two).
const KEEP: usize = 2;

pub(crate) fn options_file_name(dir: &Path, n: u64) -> std::path::PathBuf {
    dir.join(format!("OPTIONS-{n:06}"))
}

fn options_temp_name(dir: &Path, n: u64) -> std::path::PathBuf {
    dir.join(format!("OPTIONS-{n:06}.dbtmp"))
}

/// RocksDB's OPTIONS-file name of a compression type (one table, shared with the blob options).
fn compression_name(c: DBCompressionType) -> &'static str {
    super::blob::compression_option_name(c)
}

fn checksum_name(c: ChecksumType) -> &'static str {
    match c {
        ChecksumType::NoChecksum => "kNoChecksum",
        ChecksumType::CRC32c => "kCRC32c",
        ChecksumType::XxHash => "kxxHash",
        ChecksumType::XxHash64 => "kxxHash64",
        ChecksumType::XXH3 => "kXXH3",
    }
}

fn recovery_name(m: DBRecoveryMode) -> &'static str {
    match m {
        DBRecoveryMode::TolerateCorruptedTailRecords => "kTolerateCorruptedTailRecords",
        DBRecoveryMode::AbsoluteConsistency => "kAbsoluteConsistency",
        DBRecoveryMode::PointInTime => "kPointInTimeRecovery",
        DBRecoveryMode::SkipAnyCorruptedRecord => "kSkipAnyCorruptedRecords",
    }
}

/// RocksDB's names of the compaction styles in an OPTIONS file.
const STYLES: [(DBCompactionStyle, &str); 3] = [
    (DBCompactionStyle::Level, "kCompactionStyleLevel"),
    (DBCompactionStyle::Universal, "kCompactionStyleUniversal"),
    (DBCompactionStyle::Fifo, "kCompactionStyleFIFO"),
];

/// `compaction_style`, `ttl` and both styles' option structs, with the keys RocksDB 7.8 writes
/// (RocksDB writes both structs whatever the style).
fn write_style(s: &mut String, opts: &Options) {
    let style = STYLES
        .iter()
        .find(|(st, _)| *st == opts.compaction_style)
        .map_or("", |x| x.1);
    let u = &opts.compaction_options_universal;
    let f = &opts.compaction_options_fifo;
    let _ = writeln!(s, "  compaction_style={style}");
    let _ = writeln!(s, "  ttl={}", opts.ttl);
    let _ = writeln!(s, "  periodic_compaction_seconds={}", opts.periodic_compaction_seconds);
    let _ = writeln!(
        s,
        "  compaction_options_universal={{allow_trivial_move={};stop_style={};compression_size_percent={};\
         max_size_amplification_percent={};max_merge_width={};min_merge_width={};size_ratio={};}}",
        u.allow_trivial_move,
        u.stop_style.rocksdb_name(),
        u.compression_size_percent,
        u.max_size_amplification_percent,
        u.max_merge_width,
        u.min_merge_width,
        u.size_ratio
    );
    let _ = writeln!(
        s,
        "  compaction_options_fifo={{allow_compaction={};max_table_files_size={};}}",
        f.allow_compaction, f.max_table_files_size
    );
}

/// The `key=value` pairs of an option struct `{k=v;k={...};}` (nested braces kept whole);
/// None if the braces do not balance.
fn struct_fields(v: &str) -> Option<Vec<(&str, &str)>> {
    let body = v.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in body.char_indices().chain(std::iter::once((body.len(), ';'))) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            ';' if depth == 0 => {
                let item = body[start..i].trim();
                if !item.is_empty() {
                    let (k, v) = item.split_once('=')?;
                    out.push((k.trim(), v.trim()));
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    (depth == 0).then_some(out)
}

/// Apply `compaction_options_universal={...}` (unknown keys, such as newer RocksDB's
/// `max_read_amp`, are ignored); None on a bad value.
fn apply_universal(v: &str, u: &mut UniversalCompactOptions) -> Option<()> {
    for (k, x) in struct_fields(v)? {
        match k {
            "size_ratio" => u.size_ratio = x.parse().ok()?,
            "min_merge_width" => u.min_merge_width = x.parse().ok()?,
            "max_merge_width" => u.max_merge_width = x.parse().ok()?,
            "max_size_amplification_percent" => u.max_size_amplification_percent = x.parse().ok()?,
            "compression_size_percent" => u.compression_size_percent = x.parse().ok()?,
            "stop_style" => u.stop_style = UniversalCompactionStopStyle::from_rocksdb_name(x)?,
            "allow_trivial_move" => u.allow_trivial_move = x.parse().ok()?,
            _ => {}
        }
    }
    Some(())
}

/// Apply `compaction_options_fifo={...}` (unknown keys ignored); None on a bad value.
fn apply_fifo(v: &str, f: &mut FifoCompactOptions) -> Option<()> {
    for (k, x) in struct_fields(v)? {
        match k {
            "max_table_files_size" => f.max_table_files_size = x.parse().ok()?,
            "allow_compaction" => f.allow_compaction = x.parse().ok()?,
            _ => {}
        }
    }
    Some(())
}

/// One `  key=value` line. Writing into a String cannot fail; the results are ignored
/// through this helper.
fn line(s: &mut String, k: &str, v: &dyn std::fmt::Display) {
    let _ = writeln!(s, "  {k}={v}");
}

/// The text of the OPTIONS file for `opts`.
pub(crate) fn render(opts: &Options) -> String {
    let mut s = String::new();
    s.push_str("# This is a RocksDB option file, written by Shale.\n");
    s.push_str("#\n# Syntax: RocksDB's examples/rocksdb_option_file_example.ini\n#\n\n");

    s.push_str("[Version]\n");
    line(&mut s, "rocksdb_version", &"7.8.3");
    line(&mut s, "options_file_version", &"1.1");
    s.push('\n');

    s.push_str("[DBOptions]\n");
    line(&mut s, "create_if_missing", &opts.create_if_missing);
    line(&mut s, "error_if_exists", &opts.error_if_exists);
    line(&mut s, "paranoid_checks", &opts.paranoid_checks);
    line(&mut s, "max_open_files", &opts.max_open_files);
    line(&mut s, "max_background_jobs", &opts.max_background_jobs);
    line(
        &mut s,
        "allow_concurrent_memtable_write",
        &opts.allow_concurrent_memtable_write,
    );
    line(&mut s, "enable_pipelined_write", &opts.enable_pipelined_write);
    line(&mut s, "unordered_write", &opts.unordered_write);
    line(&mut s, "allow_2pc", &opts.allow_2pc);
    line(&mut s, "max_subcompactions", &opts.max_subcompactions);
    line(&mut s, "delayed_write_rate", &opts.delayed_write_rate);
    line(&mut s, "db_write_buffer_size", &opts.db_write_buffer_size);
    line(&mut s, "allow_mmap_reads", &opts.allow_mmap_reads);
    line(&mut s, "allow_mmap_writes", &opts.allow_mmap_writes);
    line(&mut s, "wal_recovery_mode", &recovery_name(opts.wal_recovery_mode));
    line(&mut s, "atomic_flush", &opts.atomic_flush);
    line(&mut s, "max_total_wal_size", &opts.max_total_wal_size);
    line(&mut s, "WAL_ttl_seconds", &opts.wal_ttl_seconds);
    line(&mut s, "WAL_size_limit_MB", &opts.wal_size_limit_mb);
    let level = [
        "DEBUG_LEVEL",
        "INFO_LEVEL",
        "WARN_LEVEL",
        "ERROR_LEVEL",
        "FATAL_LEVEL",
        "HEADER_LEVEL",
    ];
    line(&mut s, "info_log_level", &level[opts.info_log.level as usize]);
    line(&mut s, "max_log_file_size", &opts.info_log.max_log_file_size);
    line(&mut s, "keep_log_file_num", &opts.info_log.keep_log_file_num);
    line(&mut s, "stats_dump_period_sec", &opts.info_log.stats_dump_period_sec);
    for (k, v) in opts.knobs.lines(opts.info_log.db_log_dir.as_deref()) {
        line(&mut s, k, &v);
    }
    s.push('\n');
    render_cf(&mut s, DEFAULT_CF, opts);
    s
}

const DEFAULT_CF: &str = crate::lsm::version::DEFAULT_COLUMN_FAMILY_NAME;

/// An OPTIONS file for a DB with families: the DB options, then each family's sections.
pub(crate) fn render_families(cfs: &[(String, Options)]) -> String {
    let Some((_, db)) = cfs.first() else {
        return String::new();
    };
    let mut s = render(db);
    for (name, o) in &cfs[1..] {
        s.push('\n');
        render_cf(&mut s, name, o);
    }
    s
}

/// The `[CFOptions "name"]` and table sections of one family.
fn render_cf(s: &mut String, name: &str, opts: &Options) {
    let quoted = name.replace('"', "");
    render_cf_options(s, &quoted, opts);
    s.push('\n');
    render_table_options(s, &quoted, opts);
}

/// The `[CFOptions "name"]` section (`quoted`: the name without quotes).
fn render_cf_options(s: &mut String, quoted: &str, opts: &Options) {
    let _ = writeln!(s, "[CFOptions \"{quoted}\"]");
    line(s, "comparator", &opts.comparator.name());
    let merge = opts.merge_operator.as_ref().map_or("nullptr", |m| m.name());
    line(s, "merge_operator", &merge);
    // As RocksDB: the filter's or the factory's name (a user object; not read back).
    let (filter, factory) = match &opts.compaction_filter {
        Some(f) if f.is_factory() => ("nullptr".to_string(), f.name()),
        Some(f) => (f.name(), "nullptr".to_string()),
        None => ("nullptr".to_string(), "nullptr".to_string()),
    };
    line(s, "compaction_filter", &filter);
    line(s, "compaction_filter_factory", &factory);
    let prefix = opts.prefix_extractor.as_ref().map_or("nullptr", |p| p.name());
    line(s, "prefix_extractor", &prefix);
    line(
        s,
        "memtable_prefix_bloom_size_ratio",
        &opts.memtable_prefix_bloom_size_ratio,
    );
    line(s, "memtable_whole_key_filtering", &opts.memtable_whole_key_filtering);
    let factory = match &opts.table_factory {
        TableFactory::BlockBased => "BlockBasedTable",
        TableFactory::Plain(_) => "PlainTable",
        TableFactory::Cuckoo(_) => "CuckooTable",
    };
    line(s, "table_factory", &factory);
    line(s, "write_buffer_size", &opts.write_buffer_size);
    line(s, "max_write_buffer_number", &opts.max_write_buffer_number);
    line(
        s,
        "min_write_buffer_number_to_merge",
        &opts.min_write_buffer_number_to_merge,
    );
    render_cf_compaction_options(s, opts);
}

/// The `[CFOptions]` lines of the levels, L0 triggers, file and level sizes, compaction style
/// and compression.
fn render_cf_compaction_options(s: &mut String, opts: &Options) {
    line(s, "num_levels", &opts.num_levels);
    line(
        s,
        "level0_file_num_compaction_trigger",
        &opts.level0_file_num_compaction_trigger,
    );
    // FIFO never stalls on L0 files: RocksDB writes these triggers sanitized to INT_MAX.
    let fifo = opts.compaction_style == DBCompactionStyle::Fifo;
    let l0_stall = |v: usize| if fifo { i32::MAX as usize } else { v };
    line(
        s,
        "level0_slowdown_writes_trigger",
        &l0_stall(opts.level0_slowdown_writes_trigger),
    );
    line(
        s,
        "level0_stop_writes_trigger",
        &l0_stall(opts.level0_stop_writes_trigger),
    );
    line(s, "target_file_size_base", &opts.target_file_size_base);
    line(s, "target_file_size_multiplier", &opts.target_file_size_multiplier);
    // As RocksDB, the sanitized value (0 becomes 25 x target_file_size_base).
    line(s, "max_compaction_bytes", &opts.effective_max_compaction_bytes());
    line(s, "max_bytes_for_level_base", &opts.max_bytes_for_level_base);
    line(
        s,
        "max_bytes_for_level_multiplier",
        &format_args!("{:.6}", opts.max_bytes_for_level_multiplier),
    );
    line(
        s,
        "level_compaction_dynamic_level_bytes",
        &opts.level_compaction_dynamic_level_bytes,
    );
    line(s, "disable_auto_compactions", &opts.disable_auto_compactions);
    line(
        s,
        "soft_pending_compaction_bytes_limit",
        &opts.soft_pending_compaction_bytes_limit,
    );
    line(
        s,
        "hard_pending_compaction_bytes_limit",
        &opts.hard_pending_compaction_bytes_limit,
    );
    let pri = match opts.compaction_pri {
        CompactionPri::MinOverlappingRatio => "kMinOverlappingRatio",
        CompactionPri::RoundRobin => "kRoundRobin",
    };
    line(s, "compaction_pri", &pri);
    write_style(s, opts);
    line(s, "compression", &compression_name(opts.compression));
    if let Some(c) = opts.bottommost_compression {
        line(s, "bottommost_compression", &compression_name(c));
    }
    opts.blob.render(s);
}

/// The `[TableOptions/<factory> "name"]` section of the family's table factory.
fn render_table_options(s: &mut String, quoted: &str, opts: &Options) {
    match &opts.table_factory {
        TableFactory::BlockBased => {
            let _ = writeln!(s, "[TableOptions/BlockBasedTable \"{quoted}\"]");
            line(s, "block_size", &opts.block_size);
            line(s, "block_restart_interval", &opts.block_restart_interval);
            line(s, "checksum", &checksum_name(opts.checksum_type));
            line(s, "format_version", &opts.format_version);
            line(s, "cache_index_and_filter_blocks", &opts.cache_index_and_filter_blocks);
            line(
                s,
                "pin_l0_filter_and_index_blocks_in_cache",
                &opts.pin_l0_filter_and_index_blocks_in_cache,
            );
            let l = &opts.index_layout;
            line(
                s,
                "cache_index_and_filter_blocks_with_high_priority",
                &l.cache_index_and_filter_blocks_with_high_priority,
            );
            line(s, "pin_top_level_index_and_filter", &l.pin_top_level_index_and_filter);
            line(s, "index_type", &l.index_type.rocksdb_name());
            line(s, "partition_filters", &l.partitioned_filters());
            line(s, "metadata_block_size", &l.metadata_block_size);
            line(s, "no_block_cache", &(opts.block_cache_capacity == 0));
            line(s, "whole_key_filtering", &opts.whole_key_filtering);
            if opts.bloom_bits_per_key > 0.0 {
                line(
                    s,
                    "filter_policy",
                    &format_args!("bloomfilter:{}:false", opts.bloom_bits_per_key),
                );
            } else {
                line(s, "filter_policy", &"nullptr");
            }
        }
        TableFactory::Plain(p) => {
            let _ = writeln!(s, "[TableOptions/PlainTable \"{quoted}\"]");
            line(s, "user_key_len", &p.user_key_len);
            line(s, "bloom_bits_per_key", &p.bloom_bits_per_key);
            line(s, "hash_table_ratio", &format_args!("{:.6}", p.hash_table_ratio));
            line(s, "index_sparseness", &p.index_sparseness);
            line(s, "huge_page_tlb_size", &p.huge_page_tlb_size);
            let enc = match p.encoding_type {
                KeyEncodingType::Plain => "kPlain",
                KeyEncodingType::Prefix => "kPrefix",
            };
            line(s, "encoding_type", &enc);
            line(s, "full_scan_mode", &p.full_scan_mode);
            line(s, "store_index_in_file", &p.store_index_in_file);
        }
        TableFactory::Cuckoo(c) => {
            let _ = writeln!(s, "[TableOptions/CuckooTable \"{quoted}\"]");
            line(s, "hash_table_ratio", &format_args!("{:.6}", c.hash_table_ratio));
            line(s, "max_search_depth", &c.max_search_depth);
            line(s, "cuckoo_block_size", &c.cuckoo_block_size);
            line(s, "identity_as_first_hash", &c.identity_as_first_hash);
            line(s, "use_module_hash", &c.use_module_hash);
        }
    }
}

/// Write `OPTIONS-<number>` (through `OPTIONS-<number>.dbtmp`, synced, then renamed) and remove
/// all but the newest two OPTIONS files and any leftover temp files.
pub(crate) fn write_options_file(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    number: u64,
    cfs: &[(String, Options)],
) -> Result<()> {
    let tmp = options_temp_name(dir, number);
    let mut f = fs.new_writable(&tmp)?;
    f.append(render_families(cfs).as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &options_file_name(dir, number))?;
    fs.sync_dir(dir)?;

    let mut done: Vec<u64> = Vec::new();
    for name in fs.list(dir)? {
        if let Some(FileType::Options(n)) = parse_file_name(&name) {
            if name.ends_with(".dbtmp") {
                let _ = fs.remove_file(&dir.join(&name));
            } else {
                done.push(n);
            }
        }
    }
    done.sort_unstable_by(|a, b| b.cmp(a));
    for n in done.into_iter().skip(KEEP) {
        let _ = fs.remove_file(&options_file_name(dir, n));
    }
    Ok(())
}

/// Largest OPTIONS file read (RocksDB's are a few KiB).
const MAX_OPTIONS_FILE: u64 = 1 << 20;

/// The newest `OPTIONS-<n>` of `dir` (temp files excluded), if any.
fn newest_options_file(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<Option<std::path::PathBuf>> {
    let newest = fs
        .list(dir)?
        .into_iter()
        .filter(|n| !n.ends_with(".dbtmp"))
        .filter_map(|n| match parse_file_name(&n) {
            Some(FileType::Options(num)) => Some(num),
            _ => None,
        })
        .max();
    Ok(newest.map(|n| options_file_name(dir, n)))
}

/// Apply the newest OPTIONS file of `dir` to `opts`, as RocksDB's `ldb` loads it: the table
/// factory and its options, the prefix extractor, a built-in comparator or merge operator,
/// `allow_mmap_reads`, `allow_mmap_writes`, `allow_2pc`, `max_compaction_bytes`, the compaction style with its options and `ttl`.
/// Returns false if there is no OPTIONS file.
pub(crate) fn apply_latest(fs: &Arc<dyn FileSystem>, dir: &Path, opts: &mut Options) -> Result<bool> {
    apply_latest_cf(fs, dir, DEFAULT_CF, opts)
}

/// [`apply_latest`] for the sections of family `cf`.
pub(crate) fn apply_latest_cf(fs: &Arc<dyn FileSystem>, dir: &Path, cf: &str, opts: &mut Options) -> Result<bool> {
    let Some((name, text)) = read_newest(fs, dir)? else {
        return Ok(false);
    };
    apply_cf(&text, &name, cf, opts)?;
    Ok(true)
}

/// The name and bytes of the newest OPTIONS file of `dir` (None: there is none); Corruption
/// for one too large to be an OPTIONS file.
fn read_newest(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<Option<(String, Vec<u8>)>> {
    let Some(path) = newest_options_file(fs, dir)? else {
        return Ok(None);
    };
    let name = crate::fs::name_of(&path);
    let size = fs.file_size(&path)?;
    if size > MAX_OPTIONS_FILE {
        return Err(Error::corruption(
            name,
            Some(0),
            format!("OPTIONS file of {size} bytes (more than {MAX_OPTIONS_FILE})"),
        ));
    }
    Ok(Some((name, fs.read_all(&path)?)))
}

/// The newest OPTIONS file of `dir` read whole (RocksDB's `LoadLatestOptions`): the DB's
/// options (with the `default` family's) and each family named in it, in the file's order,
/// with its options. NotFound if `dir` has no OPTIONS file; Corruption (file, offset) for a
/// line or value that does not parse.
pub(crate) fn load_latest(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<(Options, Vec<(String, Options)>)> {
    let Some((name, text)) = read_newest(fs, dir)? else {
        return Err(Error::NotFound(format!("{}: no OPTIONS file", dir.display())));
    };
    let mut families: Vec<String> = Vec::new();
    for line in String::from_utf8_lossy(&text).lines() {
        let cf = line
            .trim()
            .strip_prefix("[CFOptions \"")
            .and_then(|r| r.strip_suffix("\"]"));
        if let Some(cf) = cf {
            if !families.iter().any(|f| f == cf) {
                families.push(cf.to_string());
            }
        }
    }
    let mut db = Options::default();
    apply_cf(&text, &name, DEFAULT_CF, &mut db)?;
    let mut out = Vec::with_capacity(families.len());
    for cf in families {
        let mut o = Options::default();
        apply_cf(&text, &name, &cf, &mut o)?;
        out.push((cf, o));
    }
    Ok((db, out))
}

/// Which section of an OPTIONS file a line is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    Other,
    Db,
    Cf,
    Plain,
    Cuckoo,
    Block,
}

/// `{id=X;...}` (the object syntax of newer RocksDB versions) gives `X`; a plain value is itself.
fn object_id(v: &str) -> &str {
    match v.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(body) => body
            .split(';')
            .find_map(|kv| kv.trim().strip_prefix("id="))
            .unwrap_or(""),
        None => v,
    }
}

/// Apply the text of an OPTIONS file (see [`apply_latest`]); a line that is neither a comment,
/// a section header nor `key=value`, or a value that does not parse, is Corruption at its offset.
#[cfg(test)]
pub(crate) fn apply(text: &[u8], file: &str, opts: &mut Options) -> Result<()> {
    apply_cf(text, file, DEFAULT_CF, opts)
}

/// [`apply`] for the sections of family `cf` (and the DB options).
pub(crate) fn apply_cf(text: &[u8], file: &str, cf: &str, opts: &mut Options) -> Result<()> {
    let kv = option_lines(text, file, cf)?;
    let bad = |k: &str, v: &str, at: u64| Error::corruption(file, Some(at), format!("bad value {v:?} for {k}"));
    let mut plain = crate::table::plain::PlainTableFactoryOptions::default();
    let mut cuckoo = crate::table::cuckoo::CuckooTableOptions::default();
    let mut factory = None;
    for (sec, k, v, at) in &kv {
        let (k, v, at) = (k.as_str(), v.as_str(), *at);
        let ok = match sec {
            Section::Db => apply_db_option(k, v, opts),
            Section::Cf if k == "table_factory" => {
                factory = Some((object_id(v).to_string(), at));
                Some(())
            }
            Section::Cf => match opts.blob.apply(k, v) {
                Some(r) => {
                    r.map_err(|e| e.in_file(file, Some(at)))?;
                    Some(())
                }
                None => apply_cf_option(k, v, file, opts)?,
            },
            Section::Block => apply_block_based_option(k, v, opts),
            Section::Plain => apply_plain_option(k, v, &mut plain),
            Section::Cuckoo => apply_cuckoo_option(k, v, &mut cuckoo),
            Section::Other => Some(()),
        };
        if ok.is_none() {
            return Err(bad(k, v, at));
        }
    }
    if let Some((f, at)) = factory {
        opts.table_factory = match f.as_str() {
            "BlockBasedTable" => TableFactory::BlockBased,
            "PlainTable" => TableFactory::Plain(plain),
            "CuckooTable" => TableFactory::Cuckoo(cuckoo),
            _ => return Err(bad("table_factory", &f, at)),
        };
    }
    Ok(())
}

/// The `key=value` lines of the sections that concern family `cf` (its `[CFOptions]` and
/// table sections, and `[DBOptions]`): (section, key, value, offset of the line). A line that
/// is not UTF-8, a bad section header or a line that is not `key=value` is Corruption.
fn option_lines(text: &[u8], file: &str, cf: &str) -> Result<Vec<(Section, String, String, u64)>> {
    let block_sec = format!("TableOptions/BlockBasedTable \"{cf}\"");
    let (cf_sec, plain_sec, cuckoo_sec) = (
        format!("CFOptions \"{cf}\""),
        format!("TableOptions/PlainTable \"{cf}\""),
        format!("TableOptions/CuckooTable \"{cf}\""),
    );
    let mut section = Section::Other;
    let mut kv: Vec<(Section, String, String, u64)> = Vec::new();
    let mut off = 0u64;
    for raw in text.split(|&b| b == b'\n') {
        let line_off = off;
        off += raw.len() as u64 + 1;
        let line = std::str::from_utf8(raw)
            .map_err(|_| Error::corruption(file, Some(line_off), "OPTIONS line is not UTF-8"))?
            .trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(h) = line.strip_prefix('[') {
            let h = h
                .strip_suffix(']')
                .ok_or_else(|| Error::corruption(file, Some(line_off), format!("bad section header {line:?}")))?;
            section = match h {
                "DBOptions" => Section::Db,
                h if h == cf_sec => Section::Cf,
                h if h == plain_sec => Section::Plain,
                h if h == cuckoo_sec => Section::Cuckoo,
                h if h == block_sec => Section::Block,
                _ => Section::Other,
            };
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| {
            Error::corruption(file, Some(line_off), format!("OPTIONS line {line:?} is not key=value"))
        })?;
        if section != Section::Other {
            kv.push((section, k.trim().to_string(), v.trim().to_string(), line_off));
        }
    }
    Ok(kv)
}

/// A number; None if the value does not parse.
fn num<T: std::str::FromStr>(v: &str) -> Option<T> {
    v.parse().ok()
}

/// `true`/`1` or `false`/`0`.
fn boolean(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A `[DBOptions]` key Shale reads back (others are ignored); None on a bad value.
fn apply_db_option(k: &str, v: &str, opts: &mut Options) -> Option<()> {
    match k {
        "allow_mmap_reads" => boolean(v).map(|b| opts.allow_mmap_reads = b),
        "allow_mmap_writes" => boolean(v).map(|b| opts.allow_mmap_writes = b),
        "allow_2pc" => boolean(v).map(|b| opts.allow_2pc = b),
        "atomic_flush" => boolean(v).map(|b| opts.atomic_flush = b),
        "max_total_wal_size" => num(v).map(|x| opts.max_total_wal_size = x),
        "WAL_ttl_seconds" => num(v).map(|x| opts.wal_ttl_seconds = x),
        "WAL_size_limit_MB" => num(v).map(|x| opts.wal_size_limit_mb = x),
        _ => Some(()),
    }
}

/// A `[CFOptions]` key Shale reads back (but `table_factory`; others are ignored); None on a
/// bad value, NotSupported for a prefix extractor that is not built in.
fn apply_cf_option(k: &str, v: &str, file: &str, opts: &mut Options) -> Result<Option<()>> {
    Ok(match k {
        "max_compaction_bytes" => num(v).map(|x| opts.max_compaction_bytes = x),
        "compaction_style" => STYLES
            .iter()
            .find(|(_, n)| *n == v)
            .map(|(st, _)| opts.compaction_style = *st),
        "compaction_options_universal" => apply_universal(v, &mut opts.compaction_options_universal),
        "compaction_options_fifo" => apply_fifo(v, &mut opts.compaction_options_fifo),
        "ttl" => num(v).map(|x| opts.ttl = x),
        "periodic_compaction_seconds" => num(v).map(|x| opts.periodic_compaction_seconds = x),
        "prefix_extractor" => {
            apply_prefix_extractor(v, file, opts)?;
            Some(())
        }
        "comparator" => {
            let c: Option<Arc<dyn crate::key::Comparator>> = match v {
                "leveldb.BytewiseComparator" => Some(Arc::new(crate::key::BytewiseComparator)),
                "rocksdb.ReverseBytewiseComparator" => Some(Arc::new(crate::key::ReverseBytewiseComparator)),
                "rocksdb.Uint64Comparator" => Some(Arc::new(crate::key::Uint64Comparator)),
                n => crate::user_timestamp::builtin_by_name(n),
            };
            if let Some(c) = c {
                opts.comparator = c;
            }
            Some(())
        }
        "merge_operator" => {
            if let Some(m) = crate::merge_operator::merge_operator_by_name(object_id(v)) {
                opts.merge_operator = Some(m);
            }
            Some(())
        }
        "memtable_prefix_bloom_size_ratio" => num(v).map(|x| opts.memtable_prefix_bloom_size_ratio = x),
        "memtable_whole_key_filtering" => boolean(v).map(|b| opts.memtable_whole_key_filtering = b),
        _ => Some(()),
    })
}

/// `prefix_extractor`: `nullptr`, or a built-in by name (`rocksdb.FixedPrefix.8`, or newer
/// RocksDB's `{id=rocksdb.FixedPrefix;length=8}`).
fn apply_prefix_extractor(v: &str, file: &str, opts: &mut Options) -> Result<()> {
    match object_id(v) {
        "nullptr" | "" => {
            opts.prefix_extractor = None;
            Ok(())
        }
        name => {
            // newer RocksDB: {id=rocksdb.FixedPrefix;length=8}
            let len = v.split(';').find_map(|kv| {
                let kv = kv.trim().trim_start_matches('{').trim_end_matches('}');
                kv.strip_prefix("length=").or_else(|| kv.strip_prefix("cap_len="))
            });
            let full = match len {
                Some(l) if !name.ends_with(&format!(".{l}")) => format!("{name}.{l}"),
                _ => name.to_string(),
            };
            match crate::slice_transform::slice_transform_from_name(&full) {
                Some(t) => {
                    opts.prefix_extractor = Some(t);
                    Ok(())
                }
                None => Err(Error::NotSupported(format!(
                    "{file}: prefix_extractor {v} is not a built-in Shale knows"
                ))),
            }
        }
    }
}

/// A `[TableOptions/BlockBasedTable]` key Shale reads back; None on a bad value.
fn apply_block_based_option(k: &str, v: &str, opts: &mut Options) -> Option<()> {
    match k {
        "whole_key_filtering" => boolean(v).map(|b| opts.whole_key_filtering = b),
        _ => Some(()),
    }
}

/// A `[TableOptions/PlainTable]` key; None on a bad value.
fn apply_plain_option(k: &str, v: &str, plain: &mut crate::table::plain::PlainTableFactoryOptions) -> Option<()> {
    match k {
        "user_key_len" => num(v).map(|x| plain.user_key_len = x),
        "bloom_bits_per_key" => num(v).map(|x| plain.bloom_bits_per_key = x),
        "hash_table_ratio" => num(v).map(|x| plain.hash_table_ratio = x),
        "index_sparseness" => num(v).map(|x| plain.index_sparseness = x),
        "huge_page_tlb_size" => num(v).map(|x| plain.huge_page_tlb_size = x),
        "encoding_type" => match v {
            "kPlain" => Some(KeyEncodingType::Plain),
            "kPrefix" => Some(KeyEncodingType::Prefix),
            _ => None,
        }
        .map(|e| plain.encoding_type = e),
        "full_scan_mode" => boolean(v).map(|b| plain.full_scan_mode = b),
        "store_index_in_file" => boolean(v).map(|b| plain.store_index_in_file = b),
        _ => Some(()),
    }
}

/// A `[TableOptions/CuckooTable]` key; None on a bad value.
fn apply_cuckoo_option(k: &str, v: &str, cuckoo: &mut crate::table::cuckoo::CuckooTableOptions) -> Option<()> {
    match k {
        "hash_table_ratio" => num(v).map(|x| cuckoo.hash_table_ratio = x),
        "max_search_depth" => num(v).map(|x| cuckoo.max_search_depth = x),
        "cuckoo_block_size" => num(v).map(|x| cuckoo.cuckoo_block_size = x),
        "identity_as_first_hash" => boolean(v).map(|b| cuckoo.identity_as_first_hash = b),
        "use_module_hash" => boolean(v).map(|b| cuckoo.use_module_hash = b),
        _ => Some(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    fn body(text: &str, section: &str) -> Vec<String> {
        let mut lines = text.lines().skip_while(|l| *l != section);
        assert!(lines.next().is_some(), "no {section} in\n{text}");
        lines
            .take_while(|l| !l.starts_with('['))
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
            .collect()
    }

    #[test]
    fn sections_name_the_factory_and_its_options() {
        let mut o = Options::default();
        o.set_prefix_extractor(crate::slice_transform::new_fixed_prefix_transform(8));
        o.set_plain_table_factory(&crate::table::plain::PlainTableFactoryOptions {
            user_key_len: 16,
            ..Default::default()
        });
        let t = render(&o);
        let cf = body(&t, "[CFOptions \"default\"]");
        assert!(cf.contains(&"table_factory=PlainTable".to_string()), "{t}");
        assert!(
            cf.contains(&"prefix_extractor=rocksdb.FixedPrefix.8".to_string()),
            "{t}"
        );
        assert!(cf.contains(&"comparator=leveldb.BytewiseComparator".to_string()), "{t}");
        assert!(cf.contains(&"merge_operator=nullptr".to_string()), "{t}");
        let tab = body(&t, "[TableOptions/PlainTable \"default\"]");
        assert!(tab.contains(&"user_key_len=16".to_string()), "{t}");
        assert!(tab.contains(&"encoding_type=kPlain".to_string()), "{t}");
        assert_eq!(body(&t, "[Version]")[0], "rocksdb_version=7.8.3");
        // every body line is `key=value`
        for l in t.lines().filter(|l| l.starts_with("  ")) {
            let (k, v) = l.trim().split_once('=').unwrap();
            assert!(!k.is_empty() && !v.is_empty(), "{l}");
        }

        o.set_cuckoo_table_factory(&crate::table::cuckoo::CuckooTableOptions {
            identity_as_first_hash: true,
            ..Default::default()
        });
        let t = render(&o);
        assert!(body(&t, "[CFOptions \"default\"]").contains(&"table_factory=CuckooTable".to_string()));
        let tab = body(&t, "[TableOptions/CuckooTable \"default\"]");
        assert!(tab.contains(&"identity_as_first_hash=true".to_string()), "{t}");
        assert!(tab.contains(&"hash_table_ratio=0.900000".to_string()), "{t}");
    }

    #[test]
    fn keeps_the_newest_two_and_removes_temp_files() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let o = Options::default();
        // a temp file left by a crash
        drop(fs.new_writable(&options_temp_name(dir, 3)).unwrap());
        for n in [5, 9, 12] {
            write_options_file(&fs, dir, n, &[("default".to_string(), o.clone())]).unwrap();
        }
        let mut names = fs.list(dir).unwrap();
        names.sort();
        assert_eq!(names, vec!["OPTIONS-000009".to_string(), "OPTIONS-000012".to_string()]);
    }
    #[test]
    fn compaction_styles_and_their_options_round_trip_and_parse_rocksdbs_lines() {
        let mut o = Options {
            compaction_style: DBCompactionStyle::Universal,
            ..Options::default()
        };
        o.compaction_options_universal.size_ratio = 7;
        o.compaction_options_universal.min_merge_width = 3;
        o.compaction_options_universal.max_merge_width = 9;
        o.compaction_options_universal.max_size_amplification_percent = 150;
        o.compaction_options_universal.compression_size_percent = 40;
        o.compaction_options_universal.stop_style = UniversalCompactionStopStyle::Similar;
        o.compaction_options_universal.allow_trivial_move = true;
        o.compaction_options_fifo.max_table_files_size = 12345;
        o.compaction_options_fifo.allow_compaction = true;
        o.ttl = 99;
        o.periodic_compaction_seconds = 77;
        let text = render(&o);
        let cf = body(&text, "[CFOptions \"default\"]");
        assert!(
            cf.contains(&"compaction_style=kCompactionStyleUniversal".to_string()),
            "{text}"
        );
        let mut back = Options::default();
        apply(text.as_bytes(), "OPTIONS-000009", &mut back).unwrap();
        assert_eq!(back.compaction_style, DBCompactionStyle::Universal);
        assert_eq!(back.compaction_options_universal, o.compaction_options_universal);
        assert_eq!(back.compaction_options_fifo, o.compaction_options_fifo);
        assert_eq!(back.ttl, 99);
        assert!(cf.contains(&"periodic_compaction_seconds=77".to_string()), "{text}");
        assert_eq!(back.periodic_compaction_seconds, 77);
        // FIFO writes the L0 stall triggers sanitized, as RocksDB.
        o.compaction_style = DBCompactionStyle::Fifo;
        let cf = body(&render(&o), "[CFOptions \"default\"]");
        assert!(cf.contains(&"compaction_style=kCompactionStyleFIFO".to_string()));
        assert!(cf.contains(&"level0_stop_writes_trigger=2147483647".to_string()));
        // The lines a newer RocksDB (rocksdict) writes, with keys Shale does not know.
        let text = "[CFOptions \"default\"]\n  ttl=2592000\n  periodic_compaction_seconds=86400\n  compaction_options_universal={allow_trivial_move=false;\
                    incremental=false;stop_style=kCompactionStopStyleTotalSize;compression_size_percent=-1;\
                    max_read_amp=-1;max_size_amplification_percent=200;max_merge_width=4294967295;min_merge_width=2;\
                    size_ratio=1;}\n  compaction_options_fifo={allow_compaction=false;age_for_warm=0;\
                    file_temperature_age_thresholds={{temperature=kWarm;age=10}};max_table_files_size=1073741824;}\n  \
                    compaction_style=kCompactionStyleFIFO\n";
        let mut back = Options::default();
        apply(text.as_bytes(), "f", &mut back).unwrap();
        assert_eq!(back.compaction_style, DBCompactionStyle::Fifo);
        assert_eq!(back.compaction_options_universal, UniversalCompactOptions::default());
        assert_eq!(back.compaction_options_fifo, FifoCompactOptions::default());
        assert_eq!(back.ttl, 2_592_000);
        assert_eq!(back.periodic_compaction_seconds, 86_400);
        // Bad values are Corruption naming the option.
        for bad in [
            "compaction_style=kCompactionStyleNone",
            "compaction_options_universal={size_ratio=x;}",
            "compaction_options_fifo={max_table_files_size=1",
            "compaction_options_universal={stop_style=kSomething;}",
        ] {
            let text = format!("[CFOptions \"default\"]\n  {bad}\n");
            let e = apply(text.as_bytes(), "f", &mut Options::default()).unwrap_err();
            let key = bad.split('=').next().unwrap();
            assert!(e.to_string().contains(key), "{bad}: {e}");
        }
    }
    #[test]
    fn prefix_bloom_options_round_trip() {
        let mut o = Options::default();
        o.set_prefix_extractor(crate::slice_transform::new_capped_prefix_transform(5));
        o.whole_key_filtering = false;
        o.set_memtable_prefix_bloom_ratio(0.125);
        o.set_memtable_whole_key_filtering(true);
        let t = render(&o);
        assert!(
            body(&t, "[TableOptions/BlockBasedTable \"default\"]").contains(&"whole_key_filtering=false".to_string())
        );
        let cf = body(&t, "[CFOptions \"default\"]");
        assert!(
            cf.contains(&"memtable_prefix_bloom_size_ratio=0.125".to_string()),
            "{cf:?}"
        );
        let mut back = Options::default();
        apply(t.as_bytes(), "OPTIONS-000011", &mut back).unwrap();
        assert!(!back.whole_key_filtering && back.memtable_whole_key_filtering);
        assert_eq!(back.memtable_prefix_bloom_size_ratio, 0.125);
        assert_eq!(back.prefix_extractor.as_ref().unwrap().name(), "rocksdb.CappedPrefix.5");
        for bad in [
            "memtable_prefix_bloom_size_ratio=lots",
            "memtable_whole_key_filtering=maybe",
        ] {
            let text = format!("[CFOptions \"default\"]\n  {bad}\n");
            let e = apply(text.as_bytes(), "f", &mut Options::default()).unwrap_err();
            assert!(e.to_string().contains(bad.split('=').next().unwrap()), "{e}");
        }
        let text = "[TableOptions/BlockBasedTable \"default\"]\n  whole_key_filtering=2\n";
        let e = apply(text.as_bytes(), "f", &mut Options::default()).unwrap_err();
        assert!(e.to_string().contains("whole_key_filtering"), "{e}");
    }
    #[test]
    fn loads_what_it_writes_and_rocksdb_spellings() {
        let mut o = Options::default();
        o.set_prefix_extractor(crate::slice_transform::new_fixed_prefix_transform(8));
        o.set_plain_table_factory(&crate::table::plain::PlainTableFactoryOptions {
            user_key_len: 16,
            hash_table_ratio: 0.5,
            encoding_type: KeyEncodingType::Prefix,
            ..Default::default()
        });
        o.allow_mmap_reads = true;
        o.allow_2pc = true;
        o.max_compaction_bytes = 123_456_789;
        let mut back = Options::default();
        apply(render(&o).as_bytes(), "OPTIONS-000009", &mut back).unwrap();
        assert!(back.allow_mmap_reads);
        assert!(back.allow_2pc);
        assert_eq!(back.max_compaction_bytes, 123_456_789);
        // the default (0) is written as RocksDB writes it, sanitized: 25 x target_file_size_base
        let d = Options {
            target_file_size_base: 1 << 20,
            ..Options::default()
        };
        assert!(body(&render(&d), "[CFOptions \"default\"]").contains(&"max_compaction_bytes=26214400".to_string()));
        let mut back_d = Options::default();
        apply(render(&d).as_bytes(), "OPTIONS-000010", &mut back_d).unwrap();
        assert_eq!(back_d.max_compaction_bytes, 25 << 20);
        assert_eq!(back.prefix_extractor.as_ref().unwrap().name(), "rocksdb.FixedPrefix.8");
        match &back.table_factory {
            TableFactory::Plain(p) => {
                assert_eq!(p.user_key_len, 16);
                assert_eq!(p.hash_table_ratio, 0.5);
                assert_eq!(p.encoding_type, KeyEncodingType::Prefix);
            }
            f => panic!("{f:?}"),
        }
        // the object syntax of newer RocksDB versions, a merge operator, a cuckoo section
        let text = "[CFOptions \"default\"]\n  prefix_extractor={id=rocksdb.CappedPrefix;cap_len=4}\n  \
                    merge_operator={id=StringAppendOperator;delimiter=,}\n  table_factory=CuckooTable\n\
                    [TableOptions/CuckooTable \"default\"]\n  identity_as_first_hash=true\n  cuckoo_block_size=3\n";
        let mut back = Options::default();
        apply(text.as_bytes(), "f", &mut back).unwrap();
        assert_eq!(back.prefix_extractor.as_ref().unwrap().name(), "rocksdb.CappedPrefix.4");
        assert_eq!(back.merge_operator.as_ref().unwrap().name(), "StringAppendOperator");
        match &back.table_factory {
            TableFactory::Cuckoo(c) => {
                assert!(c.identity_as_first_hash);
                assert_eq!(c.cuckoo_block_size, 3);
            }
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn malformed_options_files_are_corruption_at_the_line() {
        let cases: [(&str, u64); 5] = [
            ("[DBOptions]\n  allow_mmap_reads=maybe\n", 12),
            ("[CFOptions \"default\"]\n  max_compaction_bytes=-1\n", 22),
            ("[Version]\nno equals sign\n", 10),
            ("[CFOptions \"default\"\n", 0),
            ("[CFOptions \"default\"]\n  table_factory=Mystery\n", 22),
        ];
        for (text, at) in cases {
            let e = apply(text.as_bytes(), "OPTIONS-000005", &mut Options::default()).unwrap_err();
            match &e {
                crate::error::Error::Corruption { file, offset, .. } => {
                    assert_eq!((file.as_str(), *offset), ("OPTIONS-000005", Some(at)), "{text:?}: {e}")
                }
                _ => panic!("{text:?}: {e}"),
            }
        }
        let e = apply(
            b"[CFOptions \"default\"]\n prefix_extractor=my.own\n",
            "f",
            &mut Options::default(),
        )
        .unwrap_err();
        assert!(e.is_not_supported() && e.to_string().contains("my.own"), "{e}");
        // a number too large for its field
        let e = apply(
            b"[TableOptions/PlainTable \"default\"]\n user_key_len=99999999999\n",
            "f",
            &mut Options::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("user_key_len"), "{e}");
    }

    #[test]
    fn apply_latest_takes_the_newest_file() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        let mut o = Options::default();
        assert!(!apply_latest(&fs, dir, &mut o).unwrap());
        o.set_cuckoo_table_factory(&Default::default());
        write_options_file(&fs, dir, 4, &[("default".to_string(), o.clone())]).unwrap();
        o.set_plain_table_factory(&Default::default());
        write_options_file(&fs, dir, 10, &[("default".to_string(), o.clone())]).unwrap();
        let mut back = Options::default();
        assert!(apply_latest(&fs, dir, &mut back).unwrap());
        assert!(matches!(back.table_factory, TableFactory::Plain(_)));
    }
}
