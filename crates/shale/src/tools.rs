//! The library side of the `shale ldb` and `shale sst_dump` commands (as RocksDB's
//! `ldb_tool.h` / `sst_file_dumper.cc`): everything returns text, the CLI prints it.

pub mod cuckoo;
mod log_dump;
#[cfg(test)]
mod log_dump_tests;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem, PosixFs};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, user_key, InternalKeyComparator};
use crate::options::Options;
use crate::table::any::{format_of, AnyTable, FormatReadOptions, TableFormat};
use crate::table::block_based::reader::Table;
use crate::table::plain::PlainTableFactoryOptions;
use crate::table::reader_options::TableReaderOptions;

pub use crate::table::plain::tools::{write_plain_table, PlainTableReader, PlainTableWriteOptions, SstEntry};

fn fs() -> Arc<dyn FileSystem> {
    Arc::new(PosixFs)
}

fn hex_upper(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + b.len() * 2);
    s.push_str("0x");
    for x in b {
        let _ = write!(s, "{x:02X}");
    }
    s
}

fn printable(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A wide-column entity as RocksDB's dumps print it (`WideColumnsHelper::DumpWideColumns`):
/// `name:value` separated by spaces; in hex, each non-empty name and value as `0x` hex.
/// `None` if `entity` does not decode.
fn columns_text(entity: &[u8], hex: bool) -> Option<String> {
    let cols = crate::wide_columns::decode(entity).ok()?;
    let part = |b: &[u8]| match (hex, b.is_empty()) {
        (true, true) => String::new(),
        (true, false) => hex_upper(b),
        (false, _) => printable(b),
    };
    Some(
        cols.iter()
            .map(|(n, v)| format!("{}:{}", part(n), part(v)))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// `ldb manifest_dump`: `path` is a MANIFEST file, or a DB directory (its CURRENT manifest).
pub fn manifest_dump(path: &Path, verbose: bool, hex: bool) -> Result<String> {
    let fs = fs();
    let file = if fs.exists(&path.join("CURRENT")) {
        let cur = fs.read_all(&path.join("CURRENT"))?;
        let name = String::from_utf8_lossy(&cur).trim().to_string();
        path.join(name)
    } else {
        path.to_path_buf()
    };
    let data = fs.read_all(&file)?;
    log_dump::dump_manifest_with(&data, &name_of(&file), verbose, hex)
}

/// `ldb dump_wal --walfile=PATH [--header] [--print_value]`: returns (stdout, stderr).
pub fn dump_wal(path: &Path, header: bool, print_value: bool) -> Result<(String, String)> {
    let data = fs().read_all(path)?;
    log_dump::dump_wal_with(&data, &name_of(path), header, print_value)
}

/// `ldb checkconsistency`: every file the MANIFEST names exists with the recorded size and
/// every table's blocks pass their checksums.
pub fn check_consistency(db: &Path, opts: &Options) -> Result<String> {
    let db = crate::api::db::DB::open_for_read_only(opts, db, false)?;
    crate::api::db::verify_all_tables(&db)?;
    Ok("OK\n".to_string())
}

/// Options of `sst_dump`.
#[derive(Debug, Clone, Default)]
pub struct SstDumpOptions {
    /// `scan`, `verify`, `raw`, `check` or `none`.
    pub command: String,
    /// Print the table properties after the entries (`--show_properties`).
    pub show_properties: bool,
    /// Scan only user keys at or after this one (`--from`), compared bytewise.
    pub from: Option<Vec<u8>>,
    /// Stop the scan at this user key, excluded (`--to`).
    pub to: Option<Vec<u8>>,
    /// Stop after this many entries (`--read_num`).
    pub read_num: Option<u64>,
    /// Print keys and values in upper-case hex (`--output_hex`).
    pub output_hex: bool,
    /// Verify block checksums while scanning (`--verify_checksum`).
    pub verify_checksum: bool,
    /// Print blob index values (type 17) in RocksDB's text form, `[blob ref] file:N offset:…
    /// size:… compression: …` (`--decode_blob_index`); without it they are printed raw.
    pub decode_blob_index: bool,
}

fn reader_options() -> TableReaderOptions {
    TableReaderOptions {
        icmp: InternalKeyComparator::default(),
        block_cache: None,
        cache_id: 0,
        use_filter: true,
        verify_checksums: true,
        ..Default::default()
    }
}

/// Open a table file of any format (by its magic number). A plain table built with a prefix
/// extractor is opened with the built-in its `rocksdb.prefix.extractor.name` property names
/// (found by a first, index-less open); one built without is opened in total order.
fn open_sst(path: &Path) -> Result<AnyTable> {
    let fs = fs();
    let file = fs.open_random(path)?;
    let size = file.size();
    let name = name_of(path);
    let fopts = match format_of(&*file, &name, size)? {
        TableFormat::Plain => {
            let scan_only = FormatReadOptions {
                plain: PlainTableFactoryOptions {
                    full_scan_mode: true,
                    ..Default::default()
                },
                prefix_extractor: None,
            };
            let probe = AnyTable::open(file.clone(), name.clone(), size, reader_options(), &scan_only)?;
            match probe.properties().prefix_extractor_name.as_str() {
                "" | "nullptr" => FormatReadOptions {
                    plain: PlainTableFactoryOptions {
                        hash_table_ratio: 0.0,
                        ..Default::default()
                    },
                    prefix_extractor: None,
                },
                n => FormatReadOptions {
                    plain: PlainTableFactoryOptions::default(),
                    prefix_extractor: Some(crate::slice_transform::slice_transform_from_name(n).ok_or_else(|| {
                        Error::NotSupported(format!("{name}: the table's prefix extractor {n} is not a built-in"))
                    })?),
                },
            }
        }
        _ => FormatReadOptions::default(),
    };
    AnyTable::open(file, name, size, reader_options(), &fopts)
}

/// Apply the newest `OPTIONS-<n>` file of the database at `db` to `opts` (through `opts.env`),
/// as RocksDB's `ldb` does: the table factory and its options, the prefix extractor, a built-in
/// comparator or merge operator, `allow_mmap_reads`. Returns false if the DB has none.
pub fn load_options_file(db: &Path, opts: &mut Options) -> Result<bool> {
    let fs = opts.env.clone();
    crate::options::file::apply_latest(&fs, db, opts)
}

/// [`load_options_file`] for family `cf`: the DB options and the `[CFOptions "cf"]` section
/// with its table section. Returns false if the DB has no OPTIONS file.
pub fn load_cf_options_file(db: &Path, cf: &str, opts: &mut Options) -> Result<bool> {
    let fs = opts.env.clone();
    crate::options::file::apply_latest_cf(&fs, db, cf, opts)
}

fn sst_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_dir() {
        let mut v: Vec<PathBuf> = fs()
            .list(path)?
            .into_iter()
            .filter(|n| n.ends_with(".sst") || n.ends_with(".ldb"))
            .map(|n| path.join(n))
            .collect();
        v.sort();
        Ok(v)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

/// `sst_dump --file=PATH --command=...`: returns the text sst_dump prints. A directory dumps
/// every table file in it.
pub fn sst_dump(path: &Path, o: &SstDumpOptions) -> Result<String> {
    let mut out = String::new();
    let fmt = |b: Option<&Vec<u8>>| {
        b.map(|k| if o.output_hex { hex_upper(k) } else { printable(k) })
            .unwrap_or_default()
    };
    for file in sst_files(path)? {
        let _ = writeln!(out, "Process {}", file.display());
        let t = open_sst(&file)?;
        let format = match t.format() {
            TableFormat::BlockBased => "block-based",
            TableFormat::Plain => "plain table",
            TableFormat::Cuckoo => "cuckoo table",
        };
        let _ = writeln!(out, "Sst file format: {format}");
        let _ = writeln!(out, "from [{}] to [{}]", fmt(o.from.as_ref()), fmt(o.to.as_ref()));
        match o.command.as_str() {
            "verify" | "check" => {
                t.verify_checksums()?;
                // also decode every entry
                let mut it = t.iter(true, false);
                it.seek_to_first();
                while it.valid() {
                    parse_internal_key(it.key())?;
                    it.next();
                }
                it.status()?;
                let _ = writeln!(out, "The file is ok");
            }
            "scan" => {
                let mut it = t.iter(o.verify_checksum, false);
                match &o.from {
                    // plain tables in prefix mode seek within a prefix only: they (and cuckoo
                    // tables) are read from the start and skip keys before --from
                    Some(f) if t.format() == TableFormat::BlockBased => {
                        let mut k = f.clone();
                        k.extend_from_slice(&((crate::key::MAX_SEQUENCE << 8) | 0xff).to_le_bytes());
                        it.seek(&k)
                    }
                    _ => it.seek_to_first(),
                }
                let mut n = 0u64;
                while it.valid() {
                    if let Some(from) = &o.from {
                        if user_key(it.key()) < from.as_slice() {
                            it.next();
                            continue;
                        }
                    }
                    if let Some(to) = &o.to {
                        if user_key(it.key()) >= to.as_slice() {
                            break;
                        }
                    }
                    if o.read_num.map(|r| n >= r).unwrap_or(false) {
                        break;
                    }
                    let pk = parse_internal_key(it.key())?;
                    let k = if o.output_hex {
                        hex_upper(pk.user_key)[2..].to_string()
                    } else {
                        printable(pk.user_key)
                    };
                    if pk.vtype == crate::key::vt::WIDE_COLUMN_ENTITY {
                        // As RocksDB's sst_dump: the columns (hex with 0x), or a note for an
                        // entity that does not decode (RocksDB prints it on stderr).
                        let cols = columns_text(it.value(), o.output_hex)
                            .unwrap_or_else(|| "error deserializing wide columns".into());
                        let _ = writeln!(out, "'{k}' seq:{}, type:{} => {cols}", pk.seq, pk.vtype);
                        n += 1;
                        it.next();
                        continue;
                    }
                    if pk.vtype == crate::key::vt::BLOB_INDEX && o.decode_blob_index {
                        let v = crate::blob::index::BlobIndex::decode(it.value())
                            .map_or_else(|e| format!("Error decoding blob index: {e}"), |b| b.debug_string());
                        let _ = writeln!(out, "'{k}' seq:{}, type:{} => {v}", pk.seq, pk.vtype);
                        n += 1;
                        it.next();
                        continue;
                    }
                    // sst_dump prints hex without the 0x prefix
                    let (k, v) = if o.output_hex {
                        (
                            hex_upper(pk.user_key)[2..].to_string(),
                            hex_upper(it.value())[2..].to_string(),
                        )
                    } else {
                        (printable(pk.user_key), printable(it.value()))
                    };
                    let _ = writeln!(out, "'{k}' seq:{}, type:{} => {v}", pk.seq, pk.vtype);
                    n += 1;
                    it.next();
                }
                it.status()?;
            }
            "raw" => {
                let Some(t) = t.as_block() else {
                    return Err(Error::NotSupported(format!(
                        "--command=raw: {} is a {format}; raw dumps are for block-based tables",
                        file.display()
                    )));
                };
                let dump = raw_dump(t)?;
                let mut dump_path = file.clone().into_os_string();
                dump_path.push("_dump.txt");
                let dump_path = PathBuf::from(dump_path);
                std::fs::write(&dump_path, dump).map_err(|e| Error::io(name_of(&dump_path), e))?;
                let _ = writeln!(out, "raw dump written to file {}", dump_path.display());
            }
            "identify" => {
                let _ = writeln!(out, "{} is a valid SST file", file.display());
            }
            "none" | "" => {}
            c => {
                return Err(Error::invalid(format!(
                    "--command: unknown command {c:?} (scan, verify, raw, check, none)"
                )))
            }
        }
        if o.show_properties {
            out.push_str(&properties_text(&t));
        }
    }
    Ok(out)
}

fn properties_text(t: &AnyTable) -> String {
    let p = t.properties();
    let mut s = String::new();
    let _ = writeln!(s, "Table Properties:");
    let _ = writeln!(s, "------------------------------");
    let _ = writeln!(s, "  # data blocks: {}", p.num_data_blocks);
    let _ = writeln!(s, "  # entries: {}", p.num_entries);
    let _ = writeln!(s, "  # deletions: {}", p.num_deletions);
    let _ = writeln!(s, "  # merge operands: {}", p.num_merge_operands);
    let _ = writeln!(s, "  # range deletions: {}", p.num_range_deletions);
    let _ = writeln!(s, "  raw key size: {}", p.raw_key_size);
    let _ = writeln!(
        s,
        "  raw average key size: {}",
        p.raw_key_size as f64 / p.num_entries.max(1) as f64
    );
    let _ = writeln!(s, "  raw value size: {}", p.raw_value_size);
    let _ = writeln!(
        s,
        "  raw average value size: {}",
        p.raw_value_size as f64 / p.num_entries.max(1) as f64
    );
    let _ = writeln!(s, "  data block size: {}", p.data_size);
    let _ = writeln!(
        s,
        "  index block size (user-key? {}, delta-value? {}): {}",
        p.index_key_is_user_key as u8, p.index_value_is_delta_encoded as u8, p.index_size
    );
    let num = |n: &str| {
        p.raw
            .get(n)
            .and_then(|v| crate::coding::get_varint64(v))
            .map(|(v, _)| v)
    };
    if let (Some(parts), Some(top)) = (num("rocksdb.index.partitions"), num("rocksdb.top-level.index.size")) {
        let _ = writeln!(s, "  # index partitions: {parts}");
        let _ = writeln!(s, "  top-level index size: {top}");
    }
    let _ = writeln!(s, "  filter block size: {}", p.filter_size);
    let _ = writeln!(s, "  # entries for filter: {}", p.num_filter_entries);
    let _ = writeln!(
        s,
        "  (estimated) table size: {}",
        p.data_size + p.index_size + p.filter_size
    );
    let _ = writeln!(
        s,
        "  filter policy name: {}",
        if p.filter_policy_name.is_empty() {
            "N/A"
        } else {
            &p.filter_policy_name
        }
    );
    let _ = writeln!(
        s,
        "  prefix extractor name: {}",
        if p.prefix_extractor_name.is_empty() {
            "N/A"
        } else {
            &p.prefix_extractor_name
        }
    );
    let _ = writeln!(s, "  column family ID: {}", p.column_family_id);
    let _ = writeln!(s, "  column family name: {}", p.column_family_name);
    let _ = writeln!(s, "  comparator name: {}", p.comparator_name);
    let _ = writeln!(s, "  merge operator name: {}", p.merge_operator_name);
    let _ = writeln!(s, "  property collectors names: {}", p.property_collectors_names);
    let _ = writeln!(s, "  SST file compression algo: {}", p.compression_name);
    let _ = writeln!(s, "  SST file compression options: {}", p.compression_options);
    let _ = writeln!(s, "  creation time: {}", p.creation_time);
    let _ = writeln!(s, "  time stamp of earliest key: {}", p.oldest_key_time);
    let _ = writeln!(s, "  file creation time: {}", p.file_creation_time);
    let _ = writeln!(s, "  DB identity: {}", p.db_id);
    let _ = writeln!(s, "  DB session identity: {}", p.db_session_id);
    let _ = writeln!(s, "  DB host id: {}", p.db_host_id);
    let _ = writeln!(s, "  original file number: {}", p.orig_file_number);
    match t.as_block() {
        Some(b) => {
            let _ = writeln!(s, "  format version (footer): {}", b.format_version());
            let _ = writeln!(s, "  checksum type (footer): {:?}", b.checksum_type());
        }
        None => {
            // the format's own properties (cuckoo layout, plain key length and encoding, ...)
            let _ = writeln!(s, "  format properties:");
            for (name, v) in &p.raw {
                let own = name.starts_with("rocksdb.cuckoo.")
                    || name.starts_with("rocksdb.plain.")
                    || name == "rocksdb.fixed.key.length"
                    || name == "rocksdb.prefix.extractor.name";
                if own {
                    // fixed-width little-endian integers and flags as numbers (as RocksDB
                    // writes them), names as text, anything else (the empty key) as hex
                    let text = if v.iter().all(|b| b.is_ascii_graphic()) {
                        printable(v)
                    } else if matches!(v.len(), 1 | 4 | 8) && !name.ends_with("empty.key") {
                        let mut b = [0u8; 8];
                        b[..v.len()].copy_from_slice(v);
                        u64::from_le_bytes(b).to_string()
                    } else {
                        hex_upper(v)
                    };
                    let _ = writeln!(s, "    {name}: {text}");
                }
            }
        }
    }
    s
}

fn raw_dump(t: &Arc<Table>) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(s, "Footer Details:");
    let _ = writeln!(s, "--------------------------------------");
    let _ = writeln!(s, "  metaindex handle: {:?}", t.metaindex_handle());
    let _ = writeln!(s, "  index handle: {:?}", t.index_handle());
    let _ = writeln!(s, "  table_magic_number: 9863518390377041911");
    let _ = writeln!(s, "  format version: {}", t.format_version());
    let _ = writeln!(s, "  checksum type: {:?}\n", t.checksum_type());
    let _ = writeln!(s, "Metaindex Details:");
    let _ = writeln!(s, "--------------------------------------");
    for (name, h) in t.meta_blocks() {
        let _ = writeln!(s, "  {name}: {h:?}");
    }
    s.push('\n');
    s.push_str(&properties_text(&AnyTable::Block(t.clone())));
    let _ = writeln!(s, "\nData Block Details:");
    let _ = writeln!(s, "--------------------------------------");
    let mut it = t.iter(true, false);
    it.seek_to_first();
    while it.valid() {
        let pk = parse_internal_key(it.key())?;
        let _ = writeln!(
            s,
            "  HEX    {}: {}  seq:{} type:{}",
            hex_upper(pk.user_key).trim_start_matches("0x"),
            hex_upper(it.value()).trim_start_matches("0x"),
            pk.seq,
            pk.vtype
        );
        let _ = writeln!(s, "  ASCII  {} : {}", printable(pk.user_key), printable(it.value()));
        let _ = writeln!(s, "  ------");
        it.next();
    }
    it.status()?;
    Ok(s)
}

/// The raw hash functions behind the checksum types, for `shale bench --benchmarks=crc32c,
/// xxhash,xxhash64,xxh3` (db_bench's checksum benchmarks): `crc32c` (CRC-32C), `xxhash` (XXH32),
/// `xxhash64` (XXH64), `xxh3` (XXH3-64), all with seed 0. The function is looked up once, so a
/// benchmark loop pays no dispatch on the name per call.
pub fn bench_hasher(kind: &str) -> Option<fn(&[u8]) -> u64> {
    fn crc(d: &[u8]) -> u64 {
        crate::hash::crc32c(d) as u64
    }
    fn xxh32(d: &[u8]) -> u64 {
        xxhash_rust::xxh32::xxh32(d, 0) as u64
    }
    fn xxh64(d: &[u8]) -> u64 {
        xxhash_rust::xxh64::xxh64(d, 0)
    }
    Some(match kind {
        "crc32c" => crc,
        "xxhash" => xxh32,
        "xxhash64" => xxh64,
        "xxh3" => xxhash_rust::xxh3::xxh3_64,
        _ => return None,
    })
}
