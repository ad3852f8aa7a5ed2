//! `shale bench`'s flag values: typed [`Config`] and the engine [`Options`] they map to, as
//! db_bench's `InitializeOptionsFromFlags` maps them.

use std::io::IsTerminal;
use std::sync::Arc;

use shale::comparator::Uint64Comparator;
use shale::slice_transform::new_fixed_prefix_transform;
use shale::statistics::StatsLevel;
use shale::{
    ChecksumType, CuckooTableOptions, DBCompactionStyle, DBCompressionType, FifoCompactOptions, MemtableFactory,
    Options, PlainTableFactoryOptions, UniversalCompactOptions,
};

use crate::flags::Flags;

/// Typed flag values.
#[derive(Debug, Clone)]
pub struct Config {
    pub benchmarks: String,
    pub num: i64,
    pub reads: i64,
    pub writes: i64,
    pub deletes: i64,
    pub value_size: usize,
    pub key_size: usize,
    pub threads: usize,
    pub batch_size: i64,
    /// multireadrandom reads pinned values (`DB::multi_get_pinned`), as db_bench's batched
    /// MultiGet into PinnableSlices.
    pub multiread_batched: bool,
    pub seek_nexts: i64,
    pub db: String,
    pub use_existing_db: bool,
    /// `--num_column_families`: the DB is opened with `default` and `column_family_name_%06d`
    /// for 1..N, and key `k` is written to and read from family `k % N` (db_bench's `GetCfh`).
    pub num_column_families: usize,
    pub sync: bool,
    pub disable_wal: bool,
    pub compression_ratio: f64,
    pub verify_checksum: bool,
    pub histogram: bool,
    pub statistics: bool,
    /// `--perf_level` (RocksDB's `PerfLevel` numbers).
    pub perf_level: i64,
    pub seed: i64,
    pub duration: u64,
    pub ops_between_duration_checks: i64,
    pub progress: bool,
    pub writes_before_delete_range: i64,
    pub writes_per_range_tombstone: i64,
    pub range_tombstone_width: i64,
    pub max_num_range_tombstones: i64,
    pub expand_range_tombstones: bool,
    pub merge_operator: String,
    pub merge_keys: i64,
    pub readwritepercent: i64,
    pub mergereadpercent: i64,
    /// `--prefix_size` (printed in the header; the extractor is in the options).
    pub prefix_size: i64,
    /// `--keys_per_prefix`: keys start with a `prefix_size`-byte prefix shared by about this
    /// many keys (0 or less: no prefix; see `bench::generate_prefixed_key`).
    pub keys_per_prefix: i64,
    /// `--prefix_same_as_start`, `--total_order_seek`, `--auto_prefix_mode` (read options).
    pub prefix_same_as_start: bool,
    pub total_order_seek: bool,
    pub auto_prefix_mode: bool,
    /// `--transaction_db`, `--optimistic_transaction_db`, `--transaction_sets`,
    /// `--transaction_set_snapshot`, `--transaction_lock_timeout`.
    pub txn: super::txn::TxnFlags,
}

fn fail(msg: impl std::fmt::Display) -> String {
    msg.to_string()
}

/// Build engine options from db_bench flags.
// Field-by-field on purpose: works even if `Options` becomes `#[non_exhaustive]`.
#[allow(clippy::field_reassign_with_default)]
pub fn options_from_flags(fl: &Flags) -> Result<Options, String> {
    let mut o = Options::default();
    if fl.bool("statistics") {
        o.enable_statistics();
        o.set_statistics_level(match fl.i64("stats_level") {
            i64::MIN..=0 => StatsLevel::DisableAll,
            1 => StatsLevel::ExceptHistogramOrTimers,
            2 => StatsLevel::ExceptTimers,
            3 => StatsLevel::ExceptDetailedTimers,
            4 => StatsLevel::ExceptTimeForMutex,
            _ => StatsLevel::All,
        });
    }
    o.set_write_buffer_size(
        usize::try_from(fl.i64("write_buffer_size"))
            .map_err(|_| fail("ERROR: --write_buffer_size must not be negative"))?,
    );
    let nbuf = fl.i64("max_write_buffer_number");
    if nbuf < 0 {
        return Err(fail("ERROR: --max_write_buffer_number must not be negative"));
    }
    o.set_max_write_buffer_number(i32::try_from(nbuf).unwrap_or(i32::MAX));
    let mut bbo = o.get_block_based_options();
    bbo.set_lru_cache_capacity(fl.i64("cache_size").max(0) as usize);
    let bloom = fl.i64("bloom_bits");
    bbo.set_bloom_filter(if bloom < 0 { 0.0 } else { bloom as f64 }, false);
    bbo.set_whole_key_filtering(fl.bool("whole_key_filtering"));
    o.set_memtable_prefix_bloom_ratio(fl.f64("memtable_bloom_size_ratio"));
    o.set_memtable_whole_key_filtering(fl.bool("memtable_whole_key_filtering"));
    o.set_compression_type(
        DBCompressionType::parse(fl.str("compression_type")).map_err(|e| format!("ERROR: --compression_type: {e}"))?,
    );
    bbo.set_checksum_type(
        ChecksumType::parse(fl.str("checksum_type")).map_err(|e| format!("ERROR: --checksum_type: {e}"))?,
    );
    bbo.set_block_size(
        usize::try_from(fl.i64("block_size")).map_err(|_| fail("ERROR: --block_size must not be negative"))?,
    );
    let fv = fl.i64("format_version");
    if fv >= 0 {
        bbo.set_format_version(i32::try_from(fv).unwrap_or(i32::MAX));
    }
    bbo.set_cache_index_and_filter_blocks(fl.bool("cache_index_and_filter_blocks"));
    bbo.set_cache_high_pri_pool_ratio(fl.f64("cache_high_pri_pool_ratio"));
    bbo.set_pin_l0_filter_and_index_blocks_in_cache(fl.bool("pin_l0_filter_and_index_blocks_in_cache"));
    bbo.set_pin_top_level_index_and_filter(fl.bool("pin_top_level_index_and_filter"));
    if fl.bool("partition_index_and_filters") || fl.bool("partition_index") {
        bbo.set_index_type(shale::BlockBasedIndexType::TwoLevelIndexSearch);
        bbo.set_metadata_block_size(
            usize::try_from(fl.i64("metadata_block_size"))
                .map_err(|_| fail("ERROR: --metadata_block_size must not be negative"))?,
        );
        bbo.set_partition_filters(fl.bool("partition_index_and_filters"));
    }
    o.set_block_based_table_factory(&bbo);
    let of = fl.i64("open_files");
    o.set_max_open_files(if of == 0 { -1 } else { of as i32 });
    let nonneg = |n: &str| usize::try_from(fl.i64(n)).map_err(|_| format!("ERROR: --{n} must not be negative"));
    o.set_level_zero_file_num_compaction_trigger((nonneg("level0_file_num_compaction_trigger")?) as i32);
    o.set_level_zero_slowdown_writes_trigger((nonneg("level0_slowdown_writes_trigger")?) as i32);
    o.set_level_zero_stop_writes_trigger((nonneg("level0_stop_writes_trigger")?) as i32);
    o.set_max_bytes_for_level_base(fl.u64("max_bytes_for_level_base"));
    o.set_target_file_size_base(fl.i64("target_file_size_base").max(0) as u64);
    o.set_max_compaction_bytes(fl.u64("max_compaction_bytes"));
    o.set_level_compaction_dynamic_level_bytes(fl.bool("level_compaction_dynamic_level_bytes"));
    o.set_max_bytes_for_level_multiplier(fl.f64("max_bytes_for_level_multiplier"));
    o.set_num_levels((nonneg("num_levels")?) as i32);
    o.set_max_background_jobs((nonneg("max_background_jobs")?) as i32);
    o.set_disable_auto_compactions(fl.bool("disable_auto_compactions"));
    o.set_allow_concurrent_memtable_write(fl.bool("allow_concurrent_memtable_write"));
    o.set_manual_wal_flush(fl.bool("manual_wal_flush"));
    o.set_wal_mapped_appends(fl.bool("wal_mapped_appends"));
    o.set_enable_pipelined_write(fl.bool("enable_pipelined_write"));
    o.set_unordered_write(fl.bool("unordered_write"));
    // db_bench treats a value below 1 as RocksDB's sanitizer does (1).
    o.set_min_write_buffer_number_to_merge((fl.i64("min_write_buffer_number_to_merge").max(1) as usize) as i32);
    let rep = fl.str("memtablerep");
    o.set_memtable_factory(MemtableFactory::parse(rep).map_err(|_| {
        format!("Could not create memtable factory (--memtablerep): Not implemented: Could not load MemTableRepFactory: {rep}")
    })?);
    if fl.bool("use_uint64_comparator") {
        // As db_bench: keys stay GenerateKeyFromInt's big-endian bytes and must be 8 long.
        if fl.i64("key_size") != 8 {
            return Err("Using Uint64 comparator but key size is not 8.".into());
        }
        o.set_custom_comparator(Arc::new(Uint64Comparator));
    }
    let mo = fl.str("merge_operator");
    if !mo.is_empty() {
        o.set_custom_merge_operator(shale::merge_operator::merge_operator_by_name(mo).ok_or_else(|| {
            format!("invalid merge operator[{mo}]: Not implemented: Could not load MergeOperator: {mo}")
        })?);
    }
    table_format_from_flags(fl, &mut o)?;
    compaction_style_from_flags(fl, &mut o)?;
    blob_options_from_flags(fl, &mut o)?;
    o.validate().map_err(|e| format!("ERROR: {e}"))?;
    Ok(o)
}

/// db_bench's integrated blob file flags (`--enable_blob_files`, `--min_blob_size`, …); the
/// ranges are checked by `Options::validate` (InvalidArgument naming the option).
fn blob_options_from_flags(fl: &Flags, o: &mut Options) -> Result<(), String> {
    o.set_enable_blob_files(fl.bool("enable_blob_files"));
    o.set_min_blob_size(fl.u64("min_blob_size"));
    o.set_blob_file_size(fl.u64("blob_file_size"));
    o.set_blob_compression_type(
        DBCompressionType::parse(fl.str("blob_compression_type"))
            .map_err(|e| format!("ERROR: --blob_compression_type: {e}"))?,
    );
    o.set_enable_blob_gc(fl.bool("enable_blob_garbage_collection"));
    o.set_blob_gc_age_cutoff(fl.f64("blob_garbage_collection_age_cutoff"));
    o.set_blob_gc_force_threshold(fl.f64("blob_garbage_collection_force_threshold"));
    o.set_blob_compaction_readahead_size(fl.u64("blob_compaction_readahead_size"));
    let level = fl.i64("blob_file_starting_level");
    o.set_blob_file_starting_level(i32::try_from(level).unwrap_or(i32::MAX));
    Ok(())
}

impl Config {
    /// db_bench's `merge_keys_`: `--merge_keys`, or `--num` when negative.
    pub fn merge_keys(&self) -> i64 {
        if self.merge_keys < 0 {
            self.num
        } else {
            self.merge_keys
        }
    }

    /// db_bench's `readwrites_`: `--num` when both `--reads` and `--writes` are negative, else
    /// the larger of the two flag values.
    pub fn readwrites(&self) -> i64 {
        if self.writes < 0 && self.reads < 0 {
            self.num
        } else {
            self.writes.max(self.reads)
        }
    }

    pub fn from_flags(fl: &Flags) -> Result<Config, String> {
        let pos = |n: &str| -> Result<usize, String> {
            let v = fl.i64(n);
            if v < 0 {
                Err(format!("ERROR: --{n} must not be negative"))
            } else {
                Ok(v as usize)
            }
        };
        let c = Config {
            benchmarks: fl.str("benchmarks").to_string(),
            num: fl.i64("num"),
            reads: fl.i64("reads"),
            writes: fl.i64("writes"),
            deletes: fl.i64("deletes"),
            value_size: pos("value_size")?,
            key_size: pos("key_size")?,
            threads: pos("threads")?.max(1),
            batch_size: fl.i64("batch_size").max(1),
            multiread_batched: fl.bool("multiread_batched"),
            seek_nexts: fl.i64("seek_nexts"),
            db: fl.str("db").to_string(),
            use_existing_db: fl.bool("use_existing_db"),
            num_column_families: fl.i64("num_column_families").max(1) as usize,
            sync: fl.bool("sync"),
            disable_wal: fl.bool("disable_wal"),
            compression_ratio: fl.f64("compression_ratio"),
            verify_checksum: fl.bool("verify_checksum"),
            histogram: fl.bool("histogram"),
            statistics: fl.bool("statistics"),
            perf_level: fl.i64("perf_level"),
            seed: fl.i64("seed"),
            duration: fl.i64("duration").max(0) as u64,
            ops_between_duration_checks: fl.i64("ops_between_duration_checks").max(1),
            progress: fl.bool("progress") || (fl.bool("progress_reports") && std::io::stderr().is_terminal()),
            writes_before_delete_range: fl.i64("writes_before_delete_range"),
            writes_per_range_tombstone: fl.i64("writes_per_range_tombstone"),
            range_tombstone_width: fl.i64("range_tombstone_width"),
            max_num_range_tombstones: fl.i64("max_num_range_tombstones"),
            expand_range_tombstones: fl.bool("expand_range_tombstones"),
            merge_operator: fl.str("merge_operator").to_string(),
            merge_keys: fl.i64("merge_keys"),
            readwritepercent: fl.i64("readwritepercent"),
            mergereadpercent: fl.i64("mergereadpercent"),
            prefix_size: fl.i64("prefix_size"),
            keys_per_prefix: fl.i64("keys_per_prefix"),
            prefix_same_as_start: fl.bool("prefix_same_as_start"),
            total_order_seek: fl.bool("total_order_seek"),
            auto_prefix_mode: fl.bool("auto_prefix_mode"),
            txn: super::txn::TxnFlags {
                transaction_db: fl.bool("transaction_db"),
                optimistic: fl.bool("optimistic_transaction_db"),
                sets: fl.u64("transaction_sets"),
                set_snapshot: fl.bool("transaction_set_snapshot"),
                lock_timeout_ms: fl.u64("transaction_lock_timeout"),
            },
        };
        if c.txn.sets == 0 || c.txn.sets > 9999 {
            return Err(format!("--transaction_sets must be in 1..=9999, got {}", c.txn.sets));
        }
        // db_bench registers gflags' ValidateInt32Percent for --readwritepercent.
        if c.readwritepercent <= 0 || c.readwritepercent >= 100 {
            return Err(format!(
                "Invalid value for --readwritepercent: {v}, 0< pct <100 \n\
                 ERROR: failed validation of new value '{v}' for flag 'readwritepercent'",
                v = c.readwritepercent
            ));
        }
        if c.range_tombstone_width < 0 {
            return Err("ERROR: --range_tombstone_width must not be negative".into());
        }
        if c.max_num_range_tombstones < 0 {
            return Err("ERROR: --max_num_range_tombstones must not be negative".into());
        }
        if c.num < 0 {
            return Err("ERROR: --num must not be negative".into());
        }
        if c.compression_ratio > 1.0 {
            return Err("compression_ratio should be between 0 and 1".into());
        }
        if c.value_size > 1 << 30 {
            return Err("ERROR: --value_size is too large".into());
        }
        Ok(c)
    }
}

/// db_bench's table-format flags: `--prefix_size` (a fixed-prefix extractor), `--mmap_read`,
/// and `--use_plain_table` / `--use_cuckoo_table` (plain first when both are given, as
/// db_bench checks them in that order) with the options db_bench gives those factories.
fn table_format_from_flags(fl: &Flags, o: &mut Options) -> Result<(), String> {
    let prefix_size = fl.i64("prefix_size");
    // db_bench's flag validator, then its check against the key size.
    if !(0..2_000_000_000).contains(&prefix_size) {
        return Err(format!(
            "Invalid value for --prefix_size: {prefix_size}. 0<= PrefixSize <=2000000000\n\
             ERROR: failed validation of new value '{prefix_size}' for flag 'prefix_size'"
        ));
    }
    if prefix_size > fl.i64("key_size") {
        return Err("prefix size is larger than key size".into());
    }
    if prefix_size != 0 {
        o.set_prefix_extractor(new_fixed_prefix_transform(prefix_size as usize));
    }
    o.set_allow_mmap_reads(fl.bool("mmap_read"));
    if fl.bool("use_plain_table") {
        // db_bench warns unless the memtable is a prefix-hash one (Shale has none).
        eprintln!(
            "Warning: plain table is used with {}",
            memtable_factory_class_name(o.get_memtable_factory())
        );
        let bloom = fl.i64("bloom_bits");
        let defaults = PlainTableFactoryOptions::default();
        let user_key_len =
            u32::try_from(fl.i64("key_size")).map_err(|_| "ERROR: --key_size is too large for a plain table")?;
        o.set_plain_table_factory(&PlainTableFactoryOptions {
            user_key_len,
            bloom_bits_per_key: if bloom < 0 {
                defaults.bloom_bits_per_key
            } else {
                bloom as i32
            },
            hash_table_ratio: 0.75,
            ..defaults
        });
    } else if fl.bool("use_cuckoo_table") {
        let ratio = fl.f64("cuckoo_hash_ratio");
        if !(0.0..=1.0).contains(&ratio) {
            return Err("Invalid cuckoo_hash_ratio".into());
        }
        if !fl.bool("mmap_read") {
            return Err("cuckoo table format requires mmap read to operate".into());
        }
        o.set_cuckoo_table_factory(&CuckooTableOptions {
            hash_table_ratio: ratio,
            identity_as_first_hash: fl.bool("identity_as_first_hash"),
            ..CuckooTableOptions::default()
        });
    }
    Ok(())
}

/// The C++ class name RocksDB's memtable factories report (`Name()`).
fn memtable_factory_class_name(m: MemtableFactory) -> &'static str {
    match m {
        MemtableFactory::SkipList => "SkipListFactory",
        MemtableFactory::Vector => "VectorRepFactory",
    }
}

/// db_bench's `--compaction_style` and the universal / FIFO flags, applied as db_bench applies
/// them: a universal flag of 0 keeps RocksDB's default; the FIFO size limit is always set (so
/// `--compaction_style=2` needs `--fifo_compaction_max_table_files_size_mb`: 0 is refused).
fn compaction_style_from_flags(fl: &Flags, o: &mut Options) -> Result<(), String> {
    let style = match fl.i64("compaction_style") {
        0 => DBCompactionStyle::Level,
        1 => DBCompactionStyle::Universal,
        2 => DBCompactionStyle::Fifo,
        s => return Err(format!("ERROR: --compaction_style must be 0, 1 or 2, got {s}")),
    };
    o.set_compaction_style(style);
    let mut u = UniversalCompactOptions::default();
    let int = |n: &str| i32::try_from(fl.i64(n)).map_err(|_| format!("ERROR: --{n} out of range"));
    let set_nonzero = |n: &str, set: &mut dyn FnMut(i32)| -> Result<(), String> {
        let v = int(n)?;
        if v != 0 {
            set(v);
        }
        Ok(())
    };
    set_nonzero("universal_size_ratio", &mut |v| u.set_size_ratio(v))?;
    set_nonzero("universal_min_merge_width", &mut |v| u.set_min_merge_width(v))?;
    set_nonzero("universal_max_merge_width", &mut |v| u.set_max_merge_width(v))?;
    set_nonzero("universal_max_size_amplification_percent", &mut |v| {
        u.set_max_size_amplification_percent(v)
    })?;
    u.set_compression_size_percent(int("universal_compression_size_percent")?);
    u.set_allow_trivial_move(fl.bool("universal_allow_trivial_move"));
    o.set_universal_compaction_options(&u);
    if style == DBCompactionStyle::Fifo {
        let mut f = FifoCompactOptions::default();
        f.set_max_table_files_size(
            fl.u64("fifo_compaction_max_table_files_size_mb")
                .saturating_mul(1 << 20),
        );
        f.set_allow_compaction(fl.bool("fifo_compaction_allow_compaction"));
        o.set_fifo_compaction_options(&f);
    }
    Ok(())
}
