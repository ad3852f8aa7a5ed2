//! `shale ldb`: RocksDB's `ldb` syntax and output (`tools/ldb_cmd.cc`, `tools/ldb_tool.cc`).
//!
//! `--name=value` arguments are options, `--name` arguments are flags, anything else is the
//! command and its parameters. Success prints nothing extra and exits 0; a failure prints
//! `Failed: <message>` on stderr and exits 1.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use shale::wide_columns::WideColumn;
use shale::{ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Options, ReadOptions, WriteBatch, DB};

use super::inspect;
use crate::histogram::Histogram;

/// `dump` separates key and value with " ==> ", `scan` with " : " (as RocksDB 7.8's ldb).
const DUMP_DELIM: &str = " ==> ";
const SCAN_DELIM: &str = " : ";

/// Options and flags every command accepts (ldb's `BuildCmdLineOptions` globals we support).
const GLOBAL: &[&str] = &[
    "db",
    "create_if_missing",
    "hex",
    "key_hex",
    "value_hex",
    "try_load_options",
    "ignore_unknown_options",
    "bloom_bits",
    "block_size",
    "compression_type",
    "write_buffer_size",
    "auto_compaction",
    "column_family",
    "secondary_path",
];

/// Commands that take `--db` and their own options only, not the globals (ldb builds
/// `create_column_family` and `drop_column_family` with `{ARG_DB}` alone; its
/// `list_column_families` takes `--column_family` but no `--hex`).
const DB_ONLY: &[&str] = &["create_column_family", "drop_column_family", "list_column_families"];

const DEFAULT_CF: &str = "default";

#[derive(Debug, Default)]
pub struct Parsed {
    pub cmd: String,
    pub params: Vec<String>,
    pub options: BTreeMap<String, String>,
    pub flags: Vec<String>,
}

/// ldb's `ParseSingleParam` over all arguments.
pub fn parse_args(args: &[String]) -> Parsed {
    let mut p = Parsed::default();
    let mut tokens = Vec::new();
    for a in args {
        if let Some(body) = a.strip_prefix("--") {
            match body.split_once('=') {
                Some((k, v)) => {
                    p.options.insert(k.to_string(), v.to_string());
                }
                None => p.flags.push(body.to_string()),
            }
        } else {
            tokens.push(a.clone());
        }
    }
    let mut it = tokens.into_iter();
    p.cmd = it.next().unwrap_or_default();
    p.params = it.collect();
    p
}

/// ldb's `StringToHex`: `0x` + uppercase hex.
pub fn to_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("0x");
    for c in b {
        s.push_str(&format!("{c:02X}"));
    }
    s
}

/// ldb's `HexToString`: requires a `0x` prefix.
pub fn from_hex(s: &str) -> Result<Vec<u8>, String> {
    let Some(h) = s.strip_prefix("0x") else {
        eprintln!("Invalid hex input {s}.  Must start with 0x");
        return Err("Invalid hex input".into());
    };
    if h.len() % 2 != 0 {
        return Err("Invalid hex input".into());
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).map_err(|_| "Invalid hex input".to_string()))
        .collect()
}

struct Cmd<'a> {
    p: &'a Parsed,
    key_hex: bool,
    value_hex: bool,
}

impl Cmd<'_> {
    fn flag(&self, n: &str) -> bool {
        self.p.flags.iter().any(|f| f == n)
    }
    /// The read options of `get` and `scan`: `--read_timestamp=<u64>` reads a family with
    /// user-defined timestamps at that timestamp (8-byte little-endian, the u64 comparators').
    fn read_options(&self) -> Result<ReadOptions, String> {
        let mut ro = ReadOptions::default();
        if let Some(v) = self.opt("read_timestamp") {
            let t: u64 = v
                .trim()
                .parse()
                .map_err(|_| format!("read_timestamp has an invalid value: {v}"))?;
            ro.set_timestamp(t.to_le_bytes());
        }
        Ok(ro)
    }
    fn opt(&self, n: &str) -> Option<&str> {
        self.p.options.get(n).map(|s| s.as_str())
    }
    fn key(&self, s: &str) -> Result<Vec<u8>, String> {
        if self.key_hex {
            from_hex(s)
        } else {
            Ok(s.as_bytes().to_vec())
        }
    }
    fn value(&self, s: &str) -> Result<Vec<u8>, String> {
        if self.value_hex {
            from_hex(s)
        } else {
            Ok(s.as_bytes().to_vec())
        }
    }
    fn fmt_key(&self, k: &[u8]) -> Vec<u8> {
        if self.key_hex {
            to_hex(k).into_bytes()
        } else {
            k.to_vec()
        }
    }
    fn fmt_value(&self, v: &[u8]) -> Vec<u8> {
        if self.value_hex {
            to_hex(v).into_bytes()
        } else {
            v.to_vec()
        }
    }
    /// Wide columns as RocksDB 8+'s ldb prints them: `name:value` separated by spaces; with
    /// `--value_hex` (or `--hex`) names and values are `0x` hex, an empty one printed as
    /// nothing (so the default column reads `:value`).
    fn fmt_columns(&self, cols: &[WideColumn]) -> Vec<u8> {
        let part = |b: &[u8]| match (self.value_hex, b.is_empty()) {
            (true, true) => Vec::new(),
            (true, false) => to_hex(b).into_bytes(),
            (false, _) => b.to_vec(),
        };
        let mut l = Vec::new();
        for (i, c) in cols.iter().enumerate() {
            if i > 0 {
                l.push(b' ');
            }
            l.extend_from_slice(&part(&c.name));
            l.push(b':');
            l.extend_from_slice(&part(&c.value));
        }
        l
    }
    /// A `scan` / `dump` line: a plain value (or an entity of only the default column, or of
    /// no column) as `key<delim>value`, another entity as `key<delim>` and its columns.
    fn entry_line(&self, k: &[u8], v: &[u8], cols: Option<Vec<WideColumn>>, delim: &str) -> Vec<u8> {
        match cols {
            Some(cols) if !(cols.is_empty() || cols.len() == 1 && cols[0].name.is_empty()) => {
                let mut l = self.fmt_key(k);
                l.extend_from_slice(delim.as_bytes());
                l.extend_from_slice(&self.fmt_columns(&cols));
                l.push(b'\n');
                l
            }
            _ => self.kv_line(k, v, delim),
        }
    }
    fn kv_line(&self, k: &[u8], v: &[u8], delim: &str) -> Vec<u8> {
        let mut l = self.fmt_key(k);
        l.extend_from_slice(delim.as_bytes());
        l.extend_from_slice(&self.fmt_value(v));
        l.push(b'\n');
        l
    }
    fn db_path(&self) -> PathBuf {
        PathBuf::from(self.opt("db").unwrap_or_default())
    }

    /// `--column_family=NAME` (ldb's `column_family_name_`), `default` without it.
    fn cf_name(&self) -> &str {
        self.opt("column_family").unwrap_or(DEFAULT_CF)
    }

    fn options(&self) -> Result<Options, String> {
        self.options_for(DEFAULT_CF)
    }

    /// The options family `cf` is opened with.
    #[allow(clippy::field_reassign_with_default)]
    fn options_for(&self, cf: &str) -> Result<Options, String> {
        let mut o = Options::default();
        // As RocksDB's ldb: the newest OPTIONS file of an existing DB says how each family's
        // tables are read (table factory, prefix extractor); flags given below still win.
        let db = self.db_path();
        if db.is_dir() {
            shale::tools::load_cf_options_file(&db, cf, &mut o).map_err(|e| e.to_string())?;
        }
        o.create_if_missing(self.flag("create_if_missing"));
        if let Some(v) = self.opt("bloom_bits") {
            let b: i64 = v.parse().map_err(|_| "bloom_bits has an invalid value.".to_string())?;
            if b <= 0 {
                return Err("bloom_bits must be > 0.".into());
            }
            {
                let mut bbo = o.get_block_based_options();
                bbo.set_bloom_filter(b as f64, false);
                o.set_block_based_table_factory(&bbo);
            }
        }
        if let Some(v) = self.opt("block_size") {
            let b: i64 = v.parse().map_err(|_| "block_size has an invalid value.".to_string())?;
            if b <= 0 {
                return Err("block_size must be > 0.".into());
            }
            {
                let mut bbo = o.get_block_based_options();
                bbo.set_block_size(b as usize);
                o.set_block_based_table_factory(&bbo);
            }
        }
        if let Some(v) = self.opt("write_buffer_size") {
            let b: i64 = v
                .parse()
                .map_err(|_| "write_buffer_size has an invalid value.".to_string())?;
            if b <= 0 {
                return Err("write_buffer_size must be > 0.".into());
            }
            o.set_write_buffer_size(b as usize);
        }
        if let Some(v) = self.opt("compression_type") {
            o.set_compression_type(DBCompressionType::parse(v).map_err(|_| format!("Unknown compression type: {v}"))?);
        }
        if let Some(v) = self.opt("auto_compaction") {
            o.set_disable_auto_compactions(!string_to_bool(v)?);
        }
        Ok(o)
    }

    /// Open the DB with every family it has (as ldb's `OpenDB` lists them first: a
    /// read-write open must name them all); a DB not created yet has only `default`.
    fn open_all(&self, read_only: bool) -> Result<DB, String> {
        let base = self.options()?;
        let path = self.db_path();
        let names = if path.join("CURRENT").exists() {
            DB::list_cf(&base, &path).map_err(|e| e.to_string())?
        } else {
            vec![DEFAULT_CF.to_string()]
        };
        let mut descs = Vec::with_capacity(names.len());
        for n in names {
            let o = if n == DEFAULT_CF {
                base.clone()
            } else {
                self.options_for(&n)?
            };
            descs.push(ColumnFamilyDescriptor::new(n, o));
        }
        // As ldb's `OpenDB`: with `--secondary_path` every command runs on a secondary
        // instance (caught up with the primary at the open), so writes are NotSupported.
        let r = if let Some(sec) = self.opt("secondary_path") {
            DB::open_cf_descriptors_as_secondary(&base, &path, sec, descs)
        } else if read_only {
            DB::open_cf_descriptors_read_only(&base, &path, descs, false)
        } else {
            DB::open_cf_descriptors(&base, &path, descs)
        };
        r.map_err(|e| e.to_string())
    }

    /// Open the DB and the family `--column_family` names.
    fn open(&self, read_only: bool) -> Result<(DB, Arc<ColumnFamily>), String> {
        let db = self.open_all(read_only)?;
        let name = self.cf_name();
        let cf = db
            .cf_handle(name)
            .ok_or_else(|| format!("Non-existing column family {name}"))?;
        Ok((db, cf))
    }
}

fn string_to_bool(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err("Invalid value for boolean argument".into()),
    }
}

/// `ingest_extern_sst`'s switches, each `--name` or `--name=true|false`, with ldb's defaults.
const INGEST_ARGS: &[&str] = &[
    "move_files",
    "snapshot_consistency",
    "allow_global_seqno",
    "allow_blocking_flush",
    "ingest_behind",
    "write_global_seqno",
];
const INGEST_DEFAULTS: [bool; 6] = [false, true, true, true, false, false];

/// Command-specific options/flags (ldb's per-command `BuildCmdLineOptions` lists).
fn command_options(cmd: &str) -> Option<(&'static [&'static str], bool)> {
    // (valid options, opens a DB)
    Some(match cmd {
        "get" => (&["read_timestamp"], true),
        "put" => (&[], true),
        "get_entity" => (&[], true),
        "put_entity" => (&[], true),
        "batchput" => (&[], true),
        "delete" => (&[], true),
        "deleterange" => (&[], true),
        // ldb 7.8 reads `--db` but does not insist on it (an empty path is an error it prints)
        "list_column_families" => (&["column_family"], false),
        "create_column_family" => (&[], true),
        "drop_column_family" => (&[], true),
        "scan" => (&["from", "to", "max_keys", "no_value", "read_timestamp"], true),
        "dump" => (&["from", "to", "max_keys", "count_only", "stats", "path"], true),
        "manifest_dump" => (&["verbose", "path", "json"], false),
        "dump_wal" => (
            &[
                "walfile",
                "header",
                "print_value",
                "only_print_seqno_gaps",
                "write_committed",
            ],
            false,
        ),
        "checkconsistency" => (&[], true),
        "checkpoint" => (&["checkpoint_dir"], true),
        "write_extern_sst" => (&[], true),
        "ingest_extern_sst" => (INGEST_ARGS, true),
        _ => return None,
    })
}

fn help() -> String {
    let mut s = String::new();
    s.push_str("shale ldb - RocksDB-compatible ldb tool\n\n");
    s.push_str("commands MUST specify --db=<full_path_to_db_directory> when necessary\n\n");
    s.push_str(
        "The following optional parameters control if keys/values are input/output as hex or as plain strings:\n",
    );
    s.push_str("  --key_hex : Keys are input/output as hex\n  --value_hex : Values are input/output as hex\n  --hex : Both keys and values are input/output as hex\n\n");
    s.push_str("The following optional parameters control the database internals:\n");
    s.push_str(
        "  --column_family=<string> : name of the column family to operate on. default: default column family\n",
    );
    s.push_str(
        "  --secondary_path=<path> : open the DB as a secondary instance keeping its files in <path> (read-only)\n",
    );
    s.push_str("  --create_if_missing\n  --bloom_bits=<int,e.g.:14>\n  --block_size=<block_size_in_bytes>\n  --compression_type=<no|snappy|lz4|zstd>\n  --write_buffer_size=<int>\n  --auto_compaction=<true|false>\n\n");
    s.push_str("Data Access Commands:\n");
    s.push_str("  get <key> [--hex] [--key_hex] [--value_hex]\n");
    s.push_str("  put <key> <value> [--create_if_missing] [--hex] [--key_hex] [--value_hex]\n");
    s.push_str("  get_entity <key> [--hex] [--key_hex] [--value_hex]\n");
    s.push_str("  put_entity <key> <column1_name>:<column1_value> [<column2_name>:<column2_value>] [..] [--create_if_missing] [--hex] [--key_hex] [--value_hex]\n");
    s.push_str("  batchput <key> <value> [<key> <value>] [..] [--create_if_missing]\n");
    s.push_str("  delete <key> [--hex] [--key_hex]\n");
    s.push_str("  deleterange <begin key> <end key> [--hex] [--key_hex]\n");
    s.push_str("  scan [--from] [--to] [--max_keys=<N>q] [--no_value] [--hex]\n\n");
    s.push_str("Admin Commands:\n");
    s.push_str("  dump [--from] [--to] [--max_keys=<N>] [--count_only] [--stats] [--hex]\n");
    s.push_str("  manifest_dump [--verbose] [--json] [--path=<path_to_manifest_file>]\n");
    s.push_str("  dump_wal --walfile=<write_ahead_log_file_path> [--header] [--print_value]\n");
    s.push_str("  checkconsistency\n");
    s.push_str("  checkpoint [--checkpoint_dir]\n");
    s.push_str("  write_extern_sst <output_sst_path>\n");
    s.push_str("  ingest_extern_sst <input_sst_path> [--move_files]  [--snapshot_consistency]  [--allow_global_seqno]  [--allow_blocking_flush]  [--ingest_behind]  [--write_global_seqno]\n");
    s.push_str("  list_column_families\n");
    s.push_str("  create_column_family --db=<db_path> <new_column_family_name>\n");
    s.push_str("  drop_column_family --db=<db_path> <column_family_name_to_drop>\n");
    s
}

/// Run one command; `Ok(())` is success, `Err(msg)` prints `Failed: msg`.
fn execute(p: &Parsed, out: &mut dyn Write) -> Result<(), String> {
    let hex = p.flags.iter().any(|f| f == "hex")
        || p.options
            .get("hex")
            .map(|v| string_to_bool(v))
            .transpose()?
            .unwrap_or(false);
    let key_hex = hex
        || p.flags.iter().any(|f| f == "key_hex")
        || p.options
            .get("key_hex")
            .map(|v| string_to_bool(v))
            .transpose()?
            .unwrap_or(false);
    let value_hex = hex
        || p.flags.iter().any(|f| f == "value_hex")
        || p.options
            .get("value_hex")
            .map(|v| string_to_bool(v))
            .transpose()?
            .unwrap_or(false);
    let c = Cmd { p, key_hex, value_hex };
    let w = |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(|e| e.to_string());
    match p.cmd.as_str() {
        "get" => {
            if p.params.len() != 1 {
                return Err("<key> must be specified for the get command".into());
            }
            let key = c.key(&p.params[0])?;
            let (db, cf) = c.open(true)?;
            match db.get_cf_opt(&cf, &key, &c.read_options()?) {
                Ok(Some(v)) => {
                    let mut l = c.fmt_value(&v);
                    l.push(b'\n');
                    w(out, &l)
                }
                // ldb 7.8: "Failed: Get failed: NotFound: " and exit code 1
                Ok(None) => Err("Get failed: NotFound: ".to_string()),
                Err(e) => Err(format!("Get failed: {e}")),
            }
        }
        "put" => {
            if p.params.len() != 2 {
                return Err("<key> and <value> must be specified for the put command".into());
            }
            let key = c.key(&p.params[0])?;
            let value = c.value(&p.params[1])?;
            let (db, cf) = c.open(false)?;
            db.put_cf(&cf, &key, &value).map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "get_entity" => {
            if p.params.len() != 1 {
                return Err("<key> must be specified for the get_entity command".into());
            }
            let key = c.key(&p.params[0])?;
            let (db, cf) = c.open(true)?;
            match db.get_entity_cf_opt(&cf, &key, &ReadOptions::default()) {
                Ok(Some(cols)) => {
                    let mut l = c.fmt_columns(&cols);
                    l.push(b'\n');
                    w(out, &l)
                }
                Ok(None) => Err("GetEntity failed: NotFound: ".to_string()),
                Err(e) => Err(format!("GetEntity failed: {e}")),
            }
        }
        "put_entity" => {
            if p.params.len() < 2 {
                return Err(
                    "<key> and at least one column <column_name>:<column_value> must be specified for the put_entity command"
                        .into(),
                );
            }
            let key = c.key(&p.params[0])?;
            let mut cols = Vec::with_capacity(p.params.len() - 1);
            for col in &p.params[1..] {
                let (n, v) = col
                    .split_once(':')
                    .ok_or_else(|| format!("wide column {col:?} is not <column_name>:<column_value>"))?;
                cols.push((c.value(n)?, c.value(v)?));
            }
            let (db, cf) = c.open(false)?;
            db.put_entity_cf(&cf, &key, &cols).map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "batchput" => {
            if p.params.len() < 2 {
                return Err("At least one <key> <value> pair must be specified batchput.".into());
            }
            if !p.params.len().is_multiple_of(2) {
                return Err("Equal number of <key>s and <value>s must be specified for batchput.".into());
            }
            let mut pairs = Vec::with_capacity(p.params.len() / 2);
            for kv in p.params.chunks(2) {
                pairs.push((c.key(&kv[0])?, c.value(&kv[1])?));
            }
            let (db, cf) = c.open(false)?;
            let mut batch = WriteBatch::default();
            for (k, v) in &pairs {
                batch.put_cf(&cf, k, v);
            }
            db.write(batch).map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "deleterange" => {
            if p.params.len() != 2 {
                return Err("begin and end keys must be specified for the delete command".into());
            }
            let begin = c.key(&p.params[0])?;
            let end = c.key(&p.params[1])?;
            let (db, cf) = c.open(false)?;
            db.delete_range_cf(&cf, &begin, &end).map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "list_column_families" => {
            // ldb 7.8 reports a DB it cannot read on stderr and still exits 0.
            let path = c.opt("db").unwrap_or_default();
            match DB::list_cf(&c.options()?, path) {
                Ok(names) => w(
                    out,
                    format!("Column families in {path}: \n{{{}}}\n", names.join(", ")).as_bytes(),
                ),
                Err(e) => {
                    eprintln!("Error in processing db {path} {e}");
                    Ok(())
                }
            }
        }
        "create_column_family" => {
            if p.params.len() != 1 {
                return Err("new column family name must be specified".into());
            }
            let (db, _) = c.open(false)?;
            db.create_cf(&p.params[0], &c.options()?)
                .map_err(|e| format!("Fail to create new column family: {e}"))?;
            w(out, b"OK\n")
        }
        "drop_column_family" => {
            if p.params.len() != 1 {
                return Err("The name of column family to drop must be specified".into());
            }
            let name = &p.params[0];
            let (db, _) = c.open(false)?;
            if db.cf_handle(name).is_none() {
                return Err(format!("Column family: {name} doesn't exist in db."));
            }
            db.drop_cf(name)
                .map_err(|e| format!("Fail to drop column family: {e}"))?;
            w(out, b"OK\n")
        }
        "delete" => {
            if p.params.len() != 1 {
                return Err("KEY must be specified for the delete command".into());
            }
            let key = c.key(&p.params[0])?;
            let (db, cf) = c.open(false)?;
            db.delete_cf(&cf, &key).map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "scan" | "dump" => {
            let is_dump = p.cmd == "dump";
            if is_dump && c.opt("path").is_some() {
                return Err(format!("dump --path: {}", "not yet available"));
            }
            let from = c.opt("from").map(|s| c.key(s)).transpose()?;
            let to = c.opt("to").map(|s| c.key(s)).transpose()?;
            let max_keys: i64 = match c.opt("max_keys") {
                Some(v) => v
                    .trim()
                    .parse::<i32>()
                    .map_err(|_| "max_keys has an invalid value".to_string())? as i64,
                None => -1,
            };
            let no_value = !is_dump && c.flag("no_value");
            let count_only = is_dump && c.flag("count_only");
            let (db, cf) = c.open(true)?;
            if is_dump && c.flag("stats") {
                if let Ok(Some(s)) = db.property_value_cf(&cf, "rocksdb.stats") {
                    w(out, format!("{s}\n").as_bytes())?;
                }
            }
            let mut it = db.raw_iterator_cf_opt(&cf, c.read_options()?);
            match &from {
                Some(f) => it.seek(f),
                None => it.seek_to_first(),
            }
            let mut count: u64 = 0;
            let mut remaining = max_keys;
            let mut vsize = Histogram::new();
            while it.valid() {
                let (k, v) = (it.key().unwrap_or_default(), it.value().unwrap_or_default());
                if let Some(t) = &to {
                    if k >= t.as_slice() {
                        break;
                    }
                }
                if is_dump {
                    if remaining == 0 {
                        break;
                    }
                    if remaining > 0 {
                        remaining -= 1;
                    }
                    count += 1;
                    if count_only {
                        vsize.add(v.len() as u64);
                    } else {
                        w(out, &c.entry_line(k, v, it.columns(), DUMP_DELIM))?;
                    }
                } else {
                    if no_value {
                        let mut l = c.fmt_key(k);
                        l.push(b'\n');
                        w(out, &l)?;
                    } else {
                        w(out, &c.entry_line(k, v, it.columns(), SCAN_DELIM))?;
                    }
                    count += 1;
                    if max_keys >= 0 && count as i64 >= max_keys {
                        break;
                    }
                }
                it.next();
            }
            if let Err(e) = it.status() {
                return Err(if is_dump {
                    format!("Iterator error: {e}")
                } else {
                    e.to_string()
                });
            }
            if is_dump {
                w(out, format!("Keys in range: {count}\n").as_bytes())?;
                if count_only {
                    w(
                        out,
                        format!("Value size distribution: \n{}\n", vsize.to_rocksdb_string()).as_bytes(),
                    )?;
                }
            }
            Ok(())
        }
        "manifest_dump" => {
            let path = c.opt("path").map(PathBuf::from);
            if let Some(pp) = c.opt("path") {
                if pp.is_empty() {
                    return Err("--path: missing pathname".into());
                }
            }
            let args = inspect::ManifestDumpArgs {
                db: c.opt("db").map(PathBuf::from),
                path,
                verbose: c.flag("verbose"),
                hex: key_hex,
                json: c.flag("json"),
            };
            inspect::manifest_dump(&args, out)
        }
        "dump_wal" => {
            let Some(walfile) = c.opt("walfile") else {
                return Err("Argument walfile needs to be specified.".into());
            };
            let args = inspect::DumpWalArgs {
                walfile: PathBuf::from(walfile),
                print_header: c.flag("header"),
                print_values: c.flag("print_value"),
                only_print_seqno_gaps: c.flag("only_print_seqno_gaps"),
                hex: value_hex,
            };
            inspect::dump_wal(&args, out)
        }
        "checkconsistency" => {
            let o = c.options()?;
            inspect::check_consistency(&o, &c.db_path())?;
            w(out, b"OK\n")
        }
        "checkpoint" => {
            let dir = c.opt("checkpoint_dir").unwrap_or_default();
            if dir.is_empty() {
                return Err("--checkpoint_dir must be specified".into());
            }
            let db = c.open_all(false)?;
            shale::checkpoint::Checkpoint::new(&db)
                .and_then(|ck| ck.create_checkpoint(dir))
                .map_err(|e| e.to_string())?;
            w(out, b"OK\n")
        }
        "write_extern_sst" => {
            let Some(path) = p.params.first().filter(|s| !s.is_empty()) else {
                return Err("output SST file path must be specified".into());
            };
            write_extern_sst(&c, path, &mut std::io::stdin().lock())
        }
        "ingest_extern_sst" => {
            let Some(path) = p.params.first().filter(|s| !s.is_empty()) else {
                return Err("input SST path must be specified".into());
            };
            let mut v = INGEST_DEFAULTS;
            for (name, slot) in INGEST_ARGS.iter().zip(v.iter_mut()) {
                if c.flag(name) {
                    *slot = true;
                } else if let Some(s) = c.opt(name) {
                    *slot = string_to_bool(s)?;
                }
            }
            let mut io = shale::IngestExternalFileOptions::default();
            io.set_move_files(v[0]);
            io.set_snapshot_consistency(v[1]);
            io.set_allow_global_seqno(v[2]);
            io.set_allow_blocking_flush(v[3]);
            io.set_ingest_behind(v[4]);
            // v[5], write_global_seqno: Shale keeps a file's global sequence number in the
            // MANIFEST only (RocksDB's default); the file is never rewritten either way.
            let (db, cf) = c.open(false)?;
            db.ingest_external_file_cf_opts(&cf, &io, vec![path])
                .map_err(|e| format!("failed to ingest external SST: {e}"))?;
            eprintln!("external SST files ingested");
            Ok(())
        }
        _ => Err(format!("unknown command {}", p.cmd)),
    }
}

/// `write_extern_sst`: `key ==> value` lines from `input` (split at the first ` ==> `, hex
/// with `--hex`/`--key_hex`/`--value_hex`; other lines are counted and skipped, as ldb does),
/// keys strictly increasing in the family's order, into one external SST file written with the
/// options of the DB's family `--column_family`.
fn write_extern_sst(c: &Cmd, path: &str, input: &mut dyn std::io::BufRead) -> Result<(), String> {
    let (_db, cf) = c.open(false)?;
    let opts = c.options_for(cf.name())?;
    let mut w = shale::SstFileWriter::create(&opts);
    w.open(path)
        .map_err(|e| format!("failed to open file for writing: {e}"))?;
    let mut bad_lines = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let Some(at) = line.windows(DUMP_DELIM.len()).position(|w| w == DUMP_DELIM.as_bytes()) else {
            bad_lines += 1;
            continue;
        };
        let (k, v) = (&line[..at], &line[at + DUMP_DELIM.len()..]);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let k = if c.key_hex { from_hex(&text(k))? } else { k.to_vec() };
        let v = if c.value_hex { from_hex(&text(v))? } else { v.to_vec() };
        w.put(&k, &v)
            .map_err(|e| format!("failed to write record to file: {e}"))?;
    }
    if bad_lines > 0 {
        eprintln!("Warning: {bad_lines} bad lines ignored.");
    }
    w.finish()
        .map_err(|e| format!("Failed to finish writing to file: {e}"))?;
    eprintln!("external SST file written to {path}");
    Ok(())
}

/// Entry point of `shale ldb`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    main_with(args, &mut std::io::stdout().lock())
}

pub fn main_with(args: &[String], out: &mut dyn Write) -> i32 {
    if args.is_empty() {
        eprint!("{}", help());
        return 1;
    }
    if args.len() == 1 && args[0] == "--version" {
        let _ = writeln!(out, "ldb from Shale {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    if args.len() == 1 && args[0] == "--help" {
        let _ = write!(out, "{}", help());
        return 0;
    }
    let p = parse_args(args);
    if p.cmd.is_empty() {
        eprintln!("Command not specified!");
        eprint!("{}", help());
        return 1;
    }
    let Some((valid, opens_db)) = command_options(&p.cmd) else {
        eprintln!("Unknown command");
        eprint!("{}", help());
        return 1;
    };
    let db_only = DB_ONLY.contains(&p.cmd.as_str());
    let valid_name = |n: &str| (if db_only { n == "db" } else { GLOBAL.contains(&n) }) || valid.contains(&n);
    for k in p.options.keys() {
        if !valid_name(k) {
            eprintln!("Invalid command-line option {k}");
            return 1;
        }
    }
    for f in &p.flags {
        if !valid_name(f) {
            eprintln!("Invalid command-line flag {f}");
            return 1;
        }
    }
    let needs_db = opens_db || (p.cmd == "manifest_dump" && !p.options.contains_key("path"));
    if needs_db && !p.options.contains_key("db") && !p.options.contains_key("path") {
        eprintln!("Either db or path must be specified.");
        return 1;
    }
    let r = execute(&p, out);
    let _ = out.flush();
    match r {
        Ok(()) => 0,
        Err(m) => {
            eprintln!("Failed: {m}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn run(v: &[&str]) -> (i32, String) {
        let mut out = Vec::new();
        let code = main_with(&a(v), &mut out);
        (code, String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn parse_like_ldb() {
        let p = parse_args(&a(&["--db=/x", "--hex", "put", "k", "v", "--max_keys=3", "--from=a=b"]));
        assert_eq!(p.cmd, "put");
        assert_eq!(p.params, vec!["k", "v"]);
        assert_eq!(p.options["db"], "/x");
        assert_eq!(p.options["from"], "a=b");
        assert_eq!(p.flags, vec!["hex"]);
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(to_hex(b"\x01\xab"), "0x01AB");
        assert_eq!(from_hex("0x01ab").unwrap(), b"\x01\xab");
        assert_eq!(from_hex("0x01AB").unwrap(), b"\x01\xab");
        assert!(from_hex("01ab").is_err());
        assert!(from_hex("0x1").is_err());
    }

    #[test]
    fn entities_print_as_rocksdbs_ldb_prints_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().join("db").display());
        assert_eq!(
            run(&[&db, "--create_if_missing", "put_entity", "e", "c2:v2", ":dflt", "c1:v1"]),
            (0, "OK\n".into())
        );
        assert_eq!(run(&[&db, "put_entity", "n", "x:1"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "put", "p", "plain"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "put_entity", "p2", ":only"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "get_entity", "e"]), (0, ":dflt c1:v1 c2:v2\n".into()));
        assert_eq!(run(&[&db, "get_entity", "p"]), (0, ":plain\n".into()));
        assert_eq!(run(&[&db, "get", "e"]), (0, "dflt\n".into()));
        assert_eq!(run(&[&db, "get", "n"]), (0, "\n".into()));
        assert_eq!(run(&[&db, "get_entity", "zz"]).0, 1);
        assert_eq!(run(&[&db, "put_entity", "bad", "nocolon"]).0, 1);
        assert_eq!(run(&[&db, "put_entity", "dup", "a:1", "a:2"]).0, 1);
        assert_eq!(
            run(&[&db, "scan"]),
            (0, "e : :dflt c1:v1 c2:v2\nn : x:1\np : plain\np2 : only\n".into())
        );
        assert_eq!(
            run(&[&db, "dump", "--from=e", "--to=o"]),
            (0, "e ==> :dflt c1:v1 c2:v2\nn ==> x:1\nKeys in range: 2\n".into())
        );
        assert_eq!(
            run(&[&db, "scan", "--hex", "--to=0x6F"]),
            (
                0,
                "0x65 : :0x64666C74 0x6331:0x7631 0x6332:0x7632\n0x6E : 0x78:0x31\n".into()
            )
        );
        assert_eq!(run(&[&db, "get_entity", "--hex", "0x6E"]), (0, "0x78:0x31\n".into()));
    }

    #[test]
    fn read_timestamp_reads_a_family_with_user_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let mut o = Options::default();
            o.create_if_missing(true);
            o.set_custom_comparator(std::sync::Arc::new(shale::comparator::BytewiseComparatorWithU64Ts));
            let d = DB::open(&o, &path).unwrap();
            d.put_with_ts(b"a", 5u64.to_le_bytes(), b"a5").unwrap();
            d.put_with_ts(b"a", 9u64.to_le_bytes(), b"a9").unwrap();
            d.put_with_ts(b"b", 7u64.to_le_bytes(), b"b7").unwrap();
        }
        let db = format!("--db={}", path.display());
        // The comparator comes from the OPTIONS file; reads need the timestamp.
        assert_eq!(run(&[&db, "get", "a", "--read_timestamp=6"]), (0, "a5\n".into()));
        assert_eq!(run(&[&db, "get", "a", "--read_timestamp=9"]), (0, "a9\n".into()));
        assert_eq!(
            run(&[&db, "scan", "--read_timestamp=8"]),
            (0, "a : a5\nb : b7\n".into())
        );
        assert_eq!(run(&[&db, "scan", "--read_timestamp=4"]), (0, "".into()));
        assert_eq!(run(&[&db, "get", "a"]).0, 1, "no read timestamp");
        assert_eq!(run(&[&db, "get", "a", "--read_timestamp=x"]).0, 1);
    }

    #[test]
    fn commands_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("--db={}", dir.path().join("db").display());
        assert_eq!(run(&[&db, "get", "a"]).0, 1);
        assert_eq!(run(&[&db, "--create_if_missing", "put", "a", "b"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "put", "c", "d"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "put", "--hex", "0x6566", "0x00FF"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "get", "a"]), (0, "b\n".into()));
        assert_eq!(run(&[&db, "get", "a", "--value_hex"]), (0, "0x62\n".into()));
        assert_eq!(run(&[&db, "get", "0x61", "--hex"]), (0, "0x62\n".into()));
        assert_eq!(
            run(&[&db, "get", "--key_hex", "0x6566", "--value_hex"]),
            (0, "0x00FF\n".into())
        );
        assert_eq!(run(&[&db, "get", "zz"]).0, 1);
        assert_eq!(
            run(&[&db, "scan", "--value_hex"]),
            (0, "a : 0x62\nc : 0x64\nef : 0x00FF\n".into())
        );
        assert_eq!(run(&[&db, "scan", "--from=b", "--to=e"]), (0, "c : d\n".into()));
        assert_eq!(run(&[&db, "scan", "--max_keys=1", "--no_value"]), (0, "a\n".into()));
        assert_eq!(
            run(&[&db, "dump", "--to=ef"]),
            (0, "a ==> b\nc ==> d\nKeys in range: 2\n".into())
        );
        let (code, o) = run(&[&db, "dump", "--count_only"]);
        assert_eq!(code, 0);
        assert!(
            o.starts_with("Keys in range: 3\nValue size distribution: \nCount: 3 "),
            "{o}"
        );
        assert_eq!(run(&[&db, "delete", "a"]), (0, "OK\n".into()));
        assert_eq!(run(&[&db, "get", "a"]).0, 1);
        // Errors.
        assert_eq!(run(&[&db, "get"]).0, 1);
        assert_eq!(run(&[&db, "get", "a", "--bogus=1"]).0, 1);
        assert_eq!(run(&[&db, "frobnicate"]).0, 1);
        assert_eq!(run(&["get", "a"]).0, 1);
        assert_eq!(run(&[&db, "get", "--hex", "nothex"]).0, 1);
        assert_eq!(run(&[&db, "dump_wal"]).0, 1);
        let (code, text) = run(&[&db, "manifest_dump"]);
        assert_eq!(code, 0);
        assert!(text.contains("comparator: leveldb.BytewiseComparator"), "{text}");
    }
}
