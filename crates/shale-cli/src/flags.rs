//! A gflags-compatible command-line parser (the syntax db_bench uses) and the table of
//! `shale bench` flags with db_bench's names and defaults.
//!
//! Accepted forms, as gflags: `--name=value`, `-name=value`, `--name value` (non-boolean flags),
//! `--flag` / `--noflag` for booleans, boolean values `1/0/true/false/t/f/yes/no/y/n`.

use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Int32,
    Int64,
    Uint64,
    Double,
    Str,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Uint64 => "uint64",
            Kind::Double => "double",
            Kind::Str => "string",
        }
    }
}

/// One flag: name, type, default (as text) and help.
#[derive(Debug, Clone, Copy)]
pub struct FlagDef {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub help: &'static str,
}

const fn f(name: &'static str, kind: Kind, default: &'static str, help: &'static str) -> FlagDef {
    FlagDef {
        name,
        kind,
        default,
        help,
    }
}

/// A command-line error; the message names the offending flag, in gflags' words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ERROR: {}", self.0)
    }
}

impl std::error::Error for FlagError {}

/// Parsed flag values (every defined flag has a value: given or default).
#[derive(Debug, Clone)]
pub struct Flags {
    values: HashMap<&'static str, String>,
}

pub fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "y" | "yes" => Some(true),
        "0" | "f" | "false" | "n" | "no" => Some(false),
        _ => None,
    }
}

fn check_value(def: &FlagDef, v: &str) -> Result<(), FlagError> {
    let ok = match def.kind {
        Kind::Bool => parse_bool(v).is_some(),
        Kind::Int32 => v.trim().parse::<i32>().is_ok(),
        Kind::Int64 => v.trim().parse::<i64>().is_ok(),
        Kind::Uint64 => v.trim().parse::<u64>().is_ok(),
        Kind::Double => v.trim().parse::<f64>().is_ok(),
        Kind::Str => true,
    };
    if ok {
        Ok(())
    } else {
        Err(FlagError(format!(
            "illegal value '{}' specified for {} flag '{}'",
            v,
            def.kind.name(),
            def.name
        )))
    }
}

impl Flags {
    /// Parse `args` (without the program/subcommand name) against `defs`.
    pub fn parse(defs: &[FlagDef], args: &[String]) -> Result<Flags, FlagError> {
        let mut values: HashMap<&'static str, String> = defs.iter().map(|d| (d.name, d.default.to_string())).collect();
        let find = |n: &str| defs.iter().find(|d| d.name == n);
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            i += 1;
            if arg == "--" {
                if let Some(extra) = args.get(i) {
                    return Err(FlagError(format!("unexpected argument '{extra}'")));
                }
                break;
            }
            let body = match arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
                Some(b) if !b.is_empty() => b,
                _ => {
                    return Err(FlagError(format!(
                        "unexpected argument '{arg}' (flags are --name=value)"
                    )))
                }
            };
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let (def, value) = match find(name) {
                Some(d) => (d, value),
                None => {
                    // --noflag for a boolean flag.
                    match name.strip_prefix("no").and_then(find) {
                        Some(d) if d.kind == Kind::Bool && value.is_none() => (d, Some("false".to_string())),
                        _ => return Err(FlagError(format!("unknown command line flag '{name}'"))),
                    }
                }
            };
            let value = match (value, def.kind) {
                (Some(v), _) => v,
                (None, Kind::Bool) => "true".to_string(),
                (None, _) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.clone()
                    }
                    None => return Err(FlagError(format!("flag '{}' is missing its argument", def.name))),
                },
            };
            check_value(def, &value)?;
            values.insert(def.name, value);
        }
        Ok(Flags { values })
    }

    fn raw(&self, name: &str) -> &str {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("flag {name} is not defined"))
    }
    pub fn bool(&self, name: &str) -> bool {
        parse_bool(self.raw(name)).expect("checked at parse")
    }
    pub fn i64(&self, name: &str) -> i64 {
        self.raw(name).trim().parse().expect("checked at parse")
    }
    pub fn u64(&self, name: &str) -> u64 {
        self.raw(name).trim().parse().expect("checked at parse")
    }
    pub fn f64(&self, name: &str) -> f64 {
        self.raw(name).trim().parse().expect("checked at parse")
    }
    pub fn str(&self, name: &str) -> &str {
        self.raw(name)
    }
}

/// Render `--help` text for a flag table.
pub fn help_text(defs: &[FlagDef]) -> String {
    let mut s = String::new();
    for d in defs {
        s.push_str(&format!(
            "    --{} ({}) type: {} default: {}\n",
            d.name,
            d.help,
            d.kind.name(),
            d.default
        ));
    }
    s
}

/// Default benchmark list: db_bench's default list restricted to what `shale bench` runs.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,fillsync,fillrandom,overwrite,readrandom,seekrandom,readseq,readreverse,\
compact,flush,waitforcompaction,readseq,readtocache,readreverse,readwhilewriting";

/// The flags `shale bench` accepts (db_bench names; db_bench defaults unless noted).
pub const BENCH_FLAGS: &[FlagDef] = &[
    f("benchmarks", Kind::Str, DEFAULT_BENCHMARKS, "Comma-separated list of operations to run in the specified order"),
    f("num", Kind::Int64, "1000000", "Number of key/values to place in database"),
    f("reads", Kind::Int64, "-1", "Number of read operations to do. If negative, do FLAGS_num reads."),
    f("writes", Kind::Int64, "-1", "Number of write operations to do. If negative, do --num reads."),
    f("deletes", Kind::Int64, "-1", "Number of delete operations to do. If negative, do FLAGS_num deletions."),
    f("value_size", Kind::Int32, "100", "Size of each value in fixed distribution"),
    f("key_size", Kind::Int32, "16", "size of each key"),
    f("threads", Kind::Int32, "1", "Number of concurrent threads to run."),
    f("batch_size", Kind::Int64, "1", "Batch size"),
    f("seek_nexts", Kind::Int32, "0", "How many times to call Next() after Seek() in seekrandom"),
    f("db", Kind::Str, "", "Use the db with the following name (default: a temporary directory removed at exit)"),
    f("use_existing_db", Kind::Bool, "false", "If true, do not destroy the existing database"),
    f("num_column_families", Kind::Int32, "1", "Number of Column Families to use."),
    f("sync", Kind::Bool, "false", "Sync all writes to disk"),
    f("disable_wal", Kind::Bool, "false", "If true, do not write WAL for write."),
    f("write_buffer_size", Kind::Int64, "67108864", "Number of bytes to buffer in memtable before compacting"),
    f("max_write_buffer_number", Kind::Int32, "2", "The number of in-memory memtables"),
    f("cache_size", Kind::Int64, "33554432", "Number of bytes to use as a cache of uncompressed data"),
    f("bloom_bits", Kind::Int32, "-1", "Bloom filter bits per key. Negative means use default (no filter). Zero disables."),
    f("compression_type", Kind::Str, "snappy", "Algorithm to use to compress the database (none|snappy|lz4|zstd)"),
    f("enable_blob_files", Kind::Bool, "false", "Enable storing large values in blob files (key-value separation)"),
    f("min_blob_size", Kind::Uint64, "0", "The size of the smallest value to be stored separately in a blob file"),
    f("blob_file_size", Kind::Uint64, "268435456", "The size limit for blob files"),
    f("blob_compression_type", Kind::Str, "none", "Algorithm to use to compress blobs (none|snappy|lz4|zstd)"),
    f("enable_blob_garbage_collection", Kind::Bool, "false", "Enable blob garbage collection"),
    f("blob_garbage_collection_age_cutoff", Kind::Double, "0.25", "The cutoff in terms of blob file age for garbage collection"),
    f("blob_garbage_collection_force_threshold", Kind::Double, "1.0", "The threshold for the ratio of garbage in the oldest blob files for forcing garbage collection"),
    f("blob_compaction_readahead_size", Kind::Uint64, "0", "Compaction readahead for blob files"),
    f("blob_file_starting_level", Kind::Int32, "0", "The starting level for blob files"),
    f("compression_ratio", Kind::Double, "0.5", "Arrange to generate values that shrink to this fraction of their original size after compression"),
    f("checksum_type", Kind::Str, "4", "ChecksumType as an int (or name: crc32c|xxhash|xxhash64|xxh3)"),
    f("block_size", Kind::Int32, "4096", "Number of bytes in a block."),
    f("format_version", Kind::Int32, "-1", "Format version of SST files (-1: the engine default)"),
    f("open_files", Kind::Int32, "-1", "Maximum number of files to keep open at the same time (use default if == 0)"),
    f("level0_file_num_compaction_trigger", Kind::Int32, "4", "Number of files in level-0 when compactions start."),
    f("level0_slowdown_writes_trigger", Kind::Int32, "20", "Number of files in level-0 that will slow down writes."),
    f("level0_stop_writes_trigger", Kind::Int32, "36", "Number of files in level-0 that will trigger put stop."),
    f("max_bytes_for_level_base", Kind::Uint64, "268435456", "Max bytes for level-1"),
    f("target_file_size_base", Kind::Int64, "67108864", "Target file size at level-1"),
    f("max_compaction_bytes", Kind::Uint64, "0", "Max bytes allowed in one compaction (0: 25 x target_file_size_base)"),
    // db_bench's default is false (the RocksDB library's, and Shale's, is true): the same flags
    // must give both tools the same level layout.
    f("level_compaction_dynamic_level_bytes", Kind::Bool, "false", "Whether level size base is dynamic"),
    f("cache_index_and_filter_blocks", Kind::Bool, "false", "Cache index/filter blocks in block cache."),
    f("cache_high_pri_pool_ratio", Kind::Double, "0", "Ratio of block cache reserve for high pri blocks. If > 0.0, we also enable cache_index_and_filter_blocks_with_high_priority."),
    f("pin_l0_filter_and_index_blocks_in_cache", Kind::Bool, "false", "Pin index/filter blocks of L0 files in block cache."),
    f("pin_top_level_index_and_filter", Kind::Bool, "false", "Pin top-level index of partitioned index/filter blocks in block cache."),
    f("partition_index_and_filters", Kind::Bool, "false", "Partition index and filter blocks."),
    f("partition_index", Kind::Bool, "false", "Partition index blocks"),
    f("metadata_block_size", Kind::Int64, "4096", "Max partition size when partitioning index/filters"),
    f("max_bytes_for_level_multiplier", Kind::Double, "10", "A multiplier to compute max bytes for level-N (N >= 2)"),
    f("num_levels", Kind::Int32, "7", "The total number of levels"),
    f("compaction_style", Kind::Int32, "0", "style of compaction: level-based (0), universal (1), FIFO (2)"),
    f("universal_size_ratio", Kind::Int32, "0", "Percentage flexibility while comparing file size (universal; 0: the default)"),
    f("universal_min_merge_width", Kind::Int32, "0", "The minimum number of files in a single compaction run (universal; 0: the default)"),
    f("universal_max_merge_width", Kind::Int32, "0", "The max number of files to compact in universal style compaction (0: the default)"),
    f("universal_max_size_amplification_percent", Kind::Int32, "0", "The max size amplification for universal style compaction (0: the default)"),
    f("universal_compression_size_percent", Kind::Int32, "-1", "The percentage of the database to compress for universal compaction. -1 means compress everything."),
    f("universal_allow_trivial_move", Kind::Bool, "false", "Allow trivial move in universal compaction."),
    f("fifo_compaction_max_table_files_size_mb", Kind::Uint64, "0", "The limit of total table file sizes to trigger FIFO compaction"),
    f("fifo_compaction_allow_compaction", Kind::Bool, "true", "Allow compaction in FIFO compaction."),
    f("max_background_jobs", Kind::Int32, "2", "The maximum number of concurrent background jobs"),
    f("disable_auto_compactions", Kind::Bool, "false", "Do not auto trigger compactions"),
    f("allow_concurrent_memtable_write", Kind::Bool, "true", "Allow multi-writers to update mem tables in parallel."),
    f("manual_wal_flush", Kind::Bool, "false", "If true, buffer WAL until buffer is full or a manual FlushWAL()."),
    f("wal_mapped_appends", Kind::Bool, "true", "shale bench only: hand WAL records to the OS through a shared mapping (false: one write call per write group, as RocksDB)"),
    f("enable_pipelined_write", Kind::Bool, "true", "Let a write group's WAL write overlap the previous group's memtable inserts"),
    f("unordered_write", Kind::Bool, "false", "Publish each write group right after its WAL write and insert unordered: more throughput, but a read may see part of a batch still being written"),
    f("verify_checksum", Kind::Bool, "true", "Verify checksum for every block read from storage"),
    f("histogram", Kind::Bool, "false", "Print histogram of operation timings"),
    f("statistics", Kind::Bool, "false", "Database statistics (prints STATISTICS: and every ticker and histogram at the end)"),
    f("stats_level", Kind::Int32, "3", "stats level for statistics (0 = kDisableAll .. 5 = kAll; 3 = kExceptDetailedTimers)"),
    f("perf_level", Kind::Int32, "1", "Level of perf collection (1 = disable, 2 = counts, 3 = counts and waits, 4-5 = times except mutexes, 6 = all); above 1 each benchmark's report carries its PERF_CONTEXT"),
    f("seed", Kind::Int64, "0", "Seed base for random number generators. When 0 it is derived from the current time."),
    f("duration", Kind::Int32, "0", "Time in seconds for the random-ops tests to run. When 0 then num & reads determine the test duration"),
    f("ops_between_duration_checks", Kind::Int32, "1000", "Check duration limit every x ops"),
    f("writes_before_delete_range", Kind::Int64, "0", "Number of writes before DeleteRange is called regularly."),
    f("writes_per_range_tombstone", Kind::Int64, "0", "Number of writes between range tombstones"),
    f("range_tombstone_width", Kind::Int64, "100", "Number of keys in tombstone's range"),
    f("max_num_range_tombstones", Kind::Int64, "0", "Maximum number of range tombstones to insert."),
    f("expand_range_tombstones", Kind::Bool, "false", "Expand range tombstone into sequential regular tombstones."),
    f("merge_operator", Kind::Str, "", "The merge operator to use with the database (uint64add|stringappend; empty: none)"),
    f("transaction_db", Kind::Bool, "false", "Open the DB as a pessimistic TransactionDB (writes lock their keys); for randomtransaction"),
    f("optimistic_transaction_db", Kind::Bool, "false", "Open the DB as an OptimisticTransactionDB; for randomtransaction"),
    f("transaction_sets", Kind::Uint64, "2", "randomtransaction: sets of keys; each transaction increments one key of every set (1..=9999)"),
    f("transaction_set_snapshot", Kind::Bool, "false", "randomtransaction: each transaction takes a snapshot when it starts"),
    f("transaction_lock_timeout", Kind::Uint64, "100", "With --transaction_db: how long (ms) a transaction waits for a row lock before failing with TimedOut"),
    f("merge_keys", Kind::Int64, "-1", "Number of distinct keys to use for MergeRandom and ReadRandomMergeRandom. If negative, there will be FLAGS_num keys."),
    f("min_write_buffer_number_to_merge", Kind::Int32, "1", "The minimum number of write buffers that will be merged together before writing to storage"),
    f("readwritepercent", Kind::Int32, "90", "Ratio of reads to reads/writes (expressed as percentage) for the ReadRandomWriteRandom workload (accepted; shale bench has no readrandomwriterandom)"),
    f("mergereadpercent", Kind::Int32, "70", "Ratio of merges to merges&reads (expressed as percentage) for the ReadRandomMergeRandom workload. The default value 70 means 70% out of all read and merge operations are merges."),
    f("memtablerep", Kind::Str, "skip_list", "The memtable representation: skip_list or vector"),
    f("use_uint64_comparator", Kind::Bool, "false", "use Uint64 user comparator (needs --key_size=8)"),
    f("progress_reports", Kind::Bool, "true", "If true, report number of finished operations (on a terminal)."),
    f("use_plain_table", Kind::Bool, "false", "if use plain table instead of block-based table format"),
    f("use_cuckoo_table", Kind::Bool, "false", "if use cuckoo table format"),
    f("cuckoo_hash_ratio", Kind::Double, "0.9", "Hash ratio for Cuckoo SST table."),
    f("identity_as_first_hash", Kind::Bool, "false", "the first hash function of cuckoo table becomes an identity function. This is only valid when key is 8 bytes"),
    f("prefix_size", Kind::Int32, "0", "control the prefix size for HashSkipList and plain table"),
    f("keys_per_prefix", Kind::Int64, "0", "control average number of keys generated per prefix, 0 means no special handling of the prefix, i.e. use the prefix comes with the generated random number."),
    f("whole_key_filtering", Kind::Bool, "true", "Use whole keys (in addition to prefixes) in SST bloom filter."),
    f("memtable_bloom_size_ratio", Kind::Double, "0", "Ratio of memtable size used for bloom filter. 0 means no bloom filter."),
    f("memtable_whole_key_filtering", Kind::Bool, "false", "Try to use whole key bloom filter in memtables."),
    f("prefix_same_as_start", Kind::Bool, "false", "Enforce iterator to return keys with prefix same as seek key."),
    f("total_order_seek", Kind::Bool, "false", "Enable total order seek regardless of index format."),
    f("auto_prefix_mode", Kind::Bool, "false", "Set auto_prefix_mode for seek benchmark"),
    f("mmap_read", Kind::Bool, "false", "Allow reads to occur via mmap-ing files"),
    f("multiread_batched", Kind::Bool, "false", "Use the new MultiGet API (shale bench: DB::multi_get_pinned, values pinned as in db_bench; else DB::multi_get, values copied)"),
    f("progress", Kind::Bool, "false", "Force the progress report on stderr even when it is not a terminal"),
];

/// The `main` of a command with `--name=value` flags: `--help` prints `help`; a flag error is
/// printed with it (exit 1); otherwise `run` gets the parsed options, and its error is printed
/// after `name:` (exit 1).
pub fn command_main<O>(
    name: &str,
    args: &[String],
    help: &str,
    parse: impl FnOnce(&[String]) -> Result<O, String>,
    run: impl FnOnce(O) -> Result<(), String>,
) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{help}");
        return 0;
    }
    let o = match parse(args) {
        Ok(o) => o,
        Err(m) => {
            eprintln!("ERROR: {m}\n\n{help}");
            return 1;
        }
    };
    match run(o) {
        Ok(()) => 0,
        Err(m) => {
            eprintln!("{name}: {m}");
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

    #[test]
    fn good_flags() {
        let fl = Flags::parse(
            BENCH_FLAGS,
            &a(&[
                "--num=500",
                "-value_size=20",
                "--sync",
                "--disable_wal=1",
                "--histogram=true",
                "--threads",
                "4",
                "--nouse_existing_db",
                "--benchmarks=fillseq,readrandom",
            ]),
        )
        .unwrap();
        assert_eq!(fl.i64("num"), 500);
        assert_eq!(fl.i64("value_size"), 20);
        assert!(fl.bool("sync"));
        assert!(fl.bool("disable_wal"));
        assert!(fl.bool("histogram"));
        assert_eq!(fl.i64("threads"), 4);
        assert!(!fl.bool("use_existing_db"));
        assert_eq!(fl.str("benchmarks"), "fillseq,readrandom");
        assert_eq!(fl.i64("reads"), -1);
        assert_eq!(fl.f64("compression_ratio"), 0.5);
        let fl = Flags::parse(BENCH_FLAGS, &a(&["--sync=false", "--sync=0", "--statistics=yes"])).unwrap();
        assert!(!fl.bool("sync"));
        assert!(fl.bool("statistics"));
    }

    #[test]
    fn range_tombstone_and_merge_flags_parse() {
        let fl = Flags::parse(BENCH_FLAGS, &a(&[])).unwrap();
        assert_eq!(fl.i64("writes_per_range_tombstone"), 0);
        assert_eq!(fl.i64("max_num_range_tombstones"), 0);
        assert_eq!(fl.i64("range_tombstone_width"), 100);
        assert!(!fl.bool("expand_range_tombstones"));
        assert_eq!(fl.str("merge_operator"), "");
        assert_eq!(fl.i64("merge_keys"), -1);
        assert_eq!(fl.i64("min_write_buffer_number_to_merge"), 1);
        assert_eq!(fl.i64("readwritepercent"), 90);
        assert_eq!(fl.i64("mergereadpercent"), 70);
        assert_eq!(fl.i64("writes"), -1);
        let fl = Flags::parse(
            BENCH_FLAGS,
            &a(&[
                "--writes_per_range_tombstone=1",
                "--max_num_range_tombstones",
                "1000",
                "--range_tombstone_width=10",
                "--expand_range_tombstones",
                "--merge_operator=uint64add",
                "--merge_keys=5",
                "--min_write_buffer_number_to_merge=100",
                "--mergereadpercent=30",
                "--writes=500000",
            ]),
        )
        .unwrap();
        assert_eq!(fl.i64("writes_per_range_tombstone"), 1);
        assert_eq!(fl.i64("max_num_range_tombstones"), 1000);
        assert_eq!(fl.i64("range_tombstone_width"), 10);
        assert!(fl.bool("expand_range_tombstones"));
        assert_eq!(fl.str("merge_operator"), "uint64add");
        assert_eq!(fl.i64("merge_keys"), 5);
        assert_eq!(fl.i64("min_write_buffer_number_to_merge"), 100);
        assert_eq!(fl.i64("mergereadpercent"), 30);
        assert_eq!(fl.i64("writes"), 500000);
        let e = Flags::parse(BENCH_FLAGS, &a(&["--writes_per_range_tombstone=x"])).unwrap_err();
        assert!(e.to_string().contains("int64 flag 'writes_per_range_tombstone'"));
        let e = Flags::parse(BENCH_FLAGS, &a(&["--noexpand_range_tombstones=1"])).unwrap_err();
        assert!(e.to_string().contains("'noexpand_range_tombstones'"));
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = Flags::parse(BENCH_FLAGS, &a(&["--num=10", "--bogus_flag=3"])).unwrap_err();
        assert_eq!(e.to_string(), "ERROR: unknown command line flag 'bogus_flag'");
        let e = Flags::parse(BENCH_FLAGS, &a(&["--num=abc"])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ERROR: illegal value 'abc' specified for int64 flag 'num'"
        );
        let e = Flags::parse(BENCH_FLAGS, &a(&["--sync=maybe"])).unwrap_err();
        assert!(e.to_string().contains("'sync'"));
        let e = Flags::parse(BENCH_FLAGS, &a(&["--num"])).unwrap_err();
        assert_eq!(e.to_string(), "ERROR: flag 'num' is missing its argument");
        let e = Flags::parse(BENCH_FLAGS, &a(&["--nonum"])).unwrap_err();
        assert!(e.to_string().contains("'nonum'"));
        let e = Flags::parse(BENCH_FLAGS, &a(&["fillseq"])).unwrap_err();
        assert!(e.to_string().contains("'fillseq'"));
        let e = Flags::parse(BENCH_FLAGS, &a(&["--threads=99999999999"])).unwrap_err();
        assert!(e.to_string().contains("int32 flag 'threads'"));
    }
}
