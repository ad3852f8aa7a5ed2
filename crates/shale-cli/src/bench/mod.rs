//! `shale bench`: db_bench's workloads, keys, values, seeding, threading and output.
//!
//! Beside it: its flag values (`config`), db_bench's random generators (`random`) and per-thread
//! statistics (`stats`), the transaction workload (`txn`), the bulk-load workload (`bulkload`),
//! and `shale cuckoo_bench` (`cuckoo`), a separate command.

mod bulkload;
mod config;
pub mod cuckoo;
mod random;
mod stats;
#[cfg(test)]
mod tests;
mod txn;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use shale::perf::set_perf_stats;
use shale::{ColumnFamily, Options, PerfContext, PerfStatsLevel, ReadOptions, WriteBatch, WriteOptions, DB};

pub use config::{options_from_flags, Config};
use random::{Random64, RandomGenerator};
use stats::{now_micros, OpType, Stats, StatsConfig};
use txn::{BenchDb, Tally, TxnFlags};

use crate::flags::{help_text, Flags, BENCH_FLAGS};

/// db_bench's `GenerateKeyFromInt` without a prefix: the big-endian integer (its low
/// `min(key_size, 8)` bytes) followed by `'0'` padding up to `key_size`.
pub fn generate_key_from_int(v: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let n = key_size.min(8);
    for i in 0..n {
        out.push((v >> ((n - i - 1) * 8)) as u8);
    }
    out.resize(key_size, b'0');
}

/// db_bench's `GenerateKeyFromInt` with `--keys_per_prefix` > 0: the prefix number
/// `v % (num_keys / keys_per_prefix)` as the big-endian low `min(prefix_size, 8)` bytes (then
/// `'0'` up to `prefix_size`), then `v` as the big-endian low bytes of what fits (at most 8),
/// then `'0'` up to `key_size`. Consecutive `v` fall into different prefixes; each prefix gets
/// about `keys_per_prefix` of the `num_keys` numbers.
pub fn generate_prefixed_key(
    v: u64,
    num_keys: i64,
    prefix_size: usize,
    keys_per_prefix: i64,
    key_size: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    let num_prefix = (num_keys / keys_per_prefix.max(1)).max(1) as u64;
    let prefix = v % num_prefix;
    let n = prefix_size.min(8);
    for i in 0..n {
        out.push((prefix >> ((n - i - 1) * 8)) as u8);
    }
    out.resize(prefix_size, b'0');
    let n = key_size.saturating_sub(prefix_size).min(8);
    for i in 0..n {
        out.push((v >> ((n - i - 1) * 8)) as u8);
    }
    out.resize(key_size.max(out.len()), b'0');
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    WriteSeq,
    WriteRandom,
    ReadSequential,
    ReadReverse,
    ReadRandom,
    MultiReadRandom,
    SeekRandom,
    DeleteSeq,
    DeleteRandom,
    ReadWhileWriting,
    MergeRandom,
    ReadRandomMergeRandom,
    Compact,
    /// db_bench's RandomTransaction (`txn.rs`).
    RandomTransaction,
    /// `fillseq` through `SstFileWriter` + `ingest_external_file` (`bulkload.rs`).
    FillSeqIngest,
    /// db_bench's checksum benchmarks: `crc32c`, `xxhash`, `xxhash64`, `xxh3`.
    Checksum(&'static str),
}

/// What one benchmark name means.
#[derive(Debug, Clone, Copy)]
enum Action {
    Run { method: Method, fresh_db: bool },
    Flush,
    WaitForCompaction,
    Stats,
}

/// Names `shale bench` knows. Everything else is "unknown benchmark".
pub const KNOWN_BENCHMARKS: &[&str] = &[
    "fillseq",
    "fillbatch",
    "fillrandom",
    "overwrite",
    "fillsync",
    "readseq",
    "readtocache",
    "readreverse",
    "readrandom",
    "multireadrandom",
    "seekrandom",
    "deleteseq",
    "deleterandom",
    "readwhilewriting",
    "mergerandom",
    "readrandommergerandom",
    "randomtransaction",
    "fillseqingest",
    "compact",
    "flush",
    "waitforcompaction",
    "stats",
    "crc32c",
    "xxhash",
    "xxhash64",
    "xxh3",
];

/// db_bench's `ColumnFamilyName(i)`: `default` for 0, else `column_family_name_%06zu`.
pub fn column_family_name(i: usize) -> String {
    if i == 0 {
        "default".to_string()
    } else {
        format!("column_family_name_{i:06}")
    }
}

/// Per-benchmark parameters (db_bench's members sanitized at the top of each benchmark).
struct Ctx {
    db: Arc<BenchDb>,
    txn: TxnFlags,
    /// The families of `--num_column_families` above 1 (by index); empty with one family,
    /// where every call goes to `default` as before.
    cfs: Vec<Arc<ColumnFamily>>,
    num: i64,
    flags_num: i64,
    reads: i64,
    writes: i64,
    deletes: i64,
    value_size: usize,
    key_size: usize,
    /// `--prefix_size` and `--keys_per_prefix` (keys with prefixes when the latter is > 0).
    prefix_size: usize,
    keys_per_prefix: i64,
    auto_prefix_mode: bool,
    entries_per_batch: i64,
    multiread_batched: bool,
    seek_nexts: i64,
    block_size: usize,
    compression_ratio: f64,
    duration: u64,
    granularity: i64,
    write_options: WriteOptions,
    read_options: ReadOptions,
    writes_before_delete_range: i64,
    writes_per_range_tombstone: i64,
    range_tombstone_width: i64,
    max_num_range_tombstones: i64,
    expand_range_tombstones: bool,
    /// db_bench's `merge_keys_` (`--merge_keys`, or `--num` when negative).
    merge_keys: i64,
    /// db_bench's `readwrites_`: `--num` when both `--reads` and `--writes` are negative,
    /// else the larger of the two (raw flag values).
    readwrites: i64,
    mergereadpercent: i64,
    /// The options and path the DB was opened with (the bulk load's `SstFileWriter` uses them).
    opts: Options,
    db_path: PathBuf,
}

impl Ctx {
    /// db_bench's `GetCfh(rand_num)` with every family hot: the family of key number `k`.
    fn cf_of(&self, k: u64) -> Option<&Arc<ColumnFamily>> {
        if self.cfs.len() > 1 {
            Some(&self.cfs[(k % self.cfs.len() as u64) as usize])
        } else {
            None
        }
    }
}

struct Shared {
    total: usize,
    num_done: AtomicUsize,
    fatal: AtomicBool,
    fatal_msg: Mutex<Option<String>>,
    barrier: Barrier,
}

impl Shared {
    fn set_fatal(&self, msg: String) {
        let mut m = self.fatal_msg.lock().unwrap();
        if m.is_none() {
            *m = Some(msg);
        }
        self.fatal.store(true, Ordering::SeqCst);
    }
}

struct ThreadState {
    tid: usize,
    rand: Random64,
    stats: Stats,
}

/// db_bench's `Duration`: stop after `max_ops` ops, or after `max_seconds` when that is set.
struct Duration<'a> {
    max_seconds: u64,
    max_ops: i64,
    ops: i64,
    start_at: u64,
    granularity: i64,
    abort: &'a AtomicBool,
}

impl<'a> Duration<'a> {
    fn new(ctx: &Ctx, shared: &'a Shared, max_seconds: u64, max_ops: i64) -> Duration<'a> {
        Duration {
            max_seconds,
            max_ops,
            ops: 0,
            start_at: now_micros(),
            granularity: ctx.granularity,
            abort: &shared.fatal,
        }
    }
    fn done(&mut self, increment: i64) -> bool {
        let increment = increment.max(1);
        let prev = self.ops;
        self.ops += increment;
        if self.ops / self.granularity != prev / self.granularity {
            if self.abort.load(Ordering::Relaxed) {
                return true;
            }
            if self.max_seconds > 0 && (now_micros() - self.start_at) / 1_000_000 >= self.max_seconds {
                return true;
            }
        }
        if self.max_seconds > 0 {
            false
        } else {
            self.ops > self.max_ops
        }
    }
}

/// db_bench's `KeyGenerator` for the SEQUENTIAL and RANDOM write modes.
struct KeyGen {
    random: bool,
    num: u64,
    next: u64,
}

impl KeyGen {
    fn next(&mut self, rand: &mut Random64) -> u64 {
        if self.random {
            rand.next() % self.num
        } else {
            self.next += 1;
            self.next - 1
        }
    }
}

fn do_write(ctx: &Ctx, sh: &Shared, t: &mut ThreadState, random: bool) {
    let test_duration = if random { ctx.duration } else { 0 };
    let num_ops = if ctx.writes == 0 { ctx.num } else { ctx.writes };
    let mut duration = Duration::new(ctx, sh, test_duration, num_ops);
    // db_bench widens the key space by the number of range tombstones.
    let num_per_key_gen = (ctx.num as u64).wrapping_add(ctx.max_num_range_tombstones as u64);
    let mut key_gen = KeyGen {
        random,
        num: num_per_key_gen,
        next: 0,
    };
    if ctx.num != ctx.flags_num {
        t.stats.add_message(&format!("({} ops)", ctx.num));
    }
    let mut gen = RandomGenerator::new(ctx.value_size, ctx.compression_ratio);
    let mut bytes: u64 = 0;
    let mut key = Vec::with_capacity(ctx.key_size);
    let mut begin_key = Vec::with_capacity(ctx.key_size);
    let mut end_key = Vec::with_capacity(ctx.key_size);
    let mut num_written: i64 = 0;
    let mut num_range_deletions: i64 = 0;
    while num_per_key_gen != 0 && !duration.done(ctx.entries_per_batch) {
        if random {
            // db_bench picks the DB for the batch: rand.Next() % num_dbs.
            t.rand.next();
        }
        // One allocation per batch, sized for its records (db_bench reuses one batch; the
        // engine takes ownership of ours).
        let mut batch =
            WriteBatch::with_capacity(ctx.entries_per_batch as usize * (ctx.key_size + ctx.value_size + 11));
        for _ in 0..ctx.entries_per_batch {
            let k = key_gen.next(&mut t.rand);
            ctx.gen_key(k, ctx.flags_num, &mut key);
            let val = gen.generate();
            // db_bench: the key's number also picks its family, so reads find it again
            let cf = ctx.cf_of(k);
            match cf {
                Some(cf) => batch.put_cf(cf, &key, val),
                None => batch.put(&key, val),
            }
            bytes += (val.len() + ctx.key_size) as u64;
            num_written += 1;
            // db_bench: a range tombstone after every `writes_per_range_tombstone` writes past
            // `writes_before_delete_range`, at most `max_num_range_tombstones` of them.
            let wprt = ctx.writes_per_range_tombstone;
            let past = num_written.wrapping_sub(ctx.writes_before_delete_range);
            if wprt > 0
                && num_written > ctx.writes_before_delete_range
                && past / wprt <= ctx.max_num_range_tombstones
                && past % wprt == 0
            {
                num_range_deletions += 1;
                let begin_num = key_gen.next(&mut t.rand);
                if ctx.expand_range_tombstones {
                    for offset in 0..ctx.range_tombstone_width {
                        ctx.gen_key(begin_num.wrapping_add(offset as u64), ctx.flags_num, &mut begin_key);
                        match cf {
                            Some(cf) => batch.delete_cf(cf, &begin_key),
                            None => batch.delete(&begin_key),
                        }
                    }
                } else {
                    ctx.gen_key(begin_num, ctx.flags_num, &mut begin_key);
                    ctx.gen_key(
                        begin_num.wrapping_add(ctx.range_tombstone_width as u64),
                        ctx.flags_num,
                        &mut end_key,
                    );
                    match cf {
                        Some(cf) => batch.delete_range_cf(cf, &begin_key, &end_key),
                        None => batch.delete_range(&begin_key, &end_key),
                    }
                }
            }
        }
        if let Err(e) = ctx.db.write_opt(batch, &ctx.write_options) {
            sh.set_fatal(format!("put error: {e}"));
            break;
        }
        t.stats.finished_ops(ctx.entries_per_batch as u64, OpType::Write);
    }
    if num_range_deletions > 0 {
        println!("Number of range deletions: {num_range_deletions}");
    }
    t.stats.add_bytes(bytes);
}

/// db_bench's `MergeRandom`: `readwrites` merges of generated values into random keys of
/// `[0, merge_keys)`.
fn merge_random(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut gen = RandomGenerator::new(ctx.value_size, ctx.compression_ratio);
    let mut bytes: u64 = 0;
    let mut key = Vec::with_capacity(ctx.key_size);
    let modulus = ctx.merge_keys.max(1) as u64;
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.readwrites);
    while !duration.done(1) {
        t.rand.next(); // SelectDBWithCfh(thread)
        let k = t.rand.next() % modulus;
        ctx.gen_key(k, modulus as i64, &mut key);
        let val = gen.generate();
        if let Err(e) = ctx.db.merge_opt(&key, val, &ctx.write_options) {
            eprintln!("merge error: {e}");
            sh.set_fatal(format!("MergeRandom merge error: {e}"));
            return;
        }
        bytes += (key.len() + val.len()) as u64;
        t.stats.finished_ops(1, OpType::Merge);
    }
    t.stats.add_bytes(bytes);
    t.stats.add_message(&format!("( updates:{})", ctx.readwrites));
}

/// db_bench's `ReadRandomMergeRandom`: each op merges (with probability `mergereadpercent`%)
/// or gets a random key of `[0, merge_keys)`.
fn read_random_merge_random(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut gen = RandomGenerator::new(ctx.value_size, ctx.compression_ratio);
    let (mut num_hits, mut num_gets, mut num_merges) = (0u64, 0u64, 0u64);
    let mut max_length = 0usize;
    let mut key = Vec::with_capacity(ctx.key_size);
    let modulus = ctx.merge_keys.max(1) as u64;
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.readwrites);
    while !duration.done(1) {
        t.rand.next(); // SelectDB(thread)
        ctx.gen_key(t.rand.next() % modulus, modulus as i64, &mut key);
        let do_merge = ((t.rand.next() % 100) as i64) < ctx.mergereadpercent;
        if do_merge {
            if let Err(e) = ctx.db.merge_opt(&key, gen.generate(), &ctx.write_options) {
                eprintln!("merge error: {e}");
                sh.set_fatal(format!("ReadRandomMergeRandom merge error: {e}"));
                return;
            }
            num_merges += 1;
            t.stats.finished_ops(1, OpType::Merge);
        } else {
            match ctx.db.get_opt(&key, &ctx.read_options) {
                Ok(Some(v)) => {
                    max_length = max_length.max(v.len());
                    num_hits += 1;
                }
                Ok(None) => {}
                // db_bench reports and carries on so that more errors can be found.
                Err(e) => eprintln!("get error: {e}"),
            }
            num_gets += 1;
            t.stats.finished_ops(1, OpType::Read);
        }
    }
    t.stats.add_message(&format!(
        "(reads:{num_gets} merges:{num_merges} total:{} hits:{num_hits} maxlength:{max_length})",
        ctx.readwrites
    ));
}

fn read_sequential(ctx: &Ctx, sh: &Shared, t: &mut ThreadState, reverse: bool) {
    let mut it = ctx.db.raw_iterator_opt(ctx.read_options.clone());
    let mut i: i64 = 0;
    let mut bytes: u64 = 0;
    if reverse {
        it.seek_to_last();
    } else {
        it.seek_to_first();
    }
    while i < ctx.reads && it.valid() {
        bytes += (it.key().map_or(0, |k| k.len()) + it.value().map_or(0, |v| v.len())) as u64;
        t.stats.finished_ops(1, OpType::Read);
        i += 1;
        if reverse {
            it.prev();
        } else {
            it.next();
        }
    }
    if let Err(e) = it.status() {
        sh.set_fatal(format!("Iterator error: {e}"));
    }
    t.stats.add_bytes(bytes);
}

fn read_random(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut read: u64 = 0;
    let mut found: u64 = 0;
    let mut bytes: u64 = 0;
    let mut key = Vec::with_capacity(ctx.key_size);
    let modulus = ctx.flags_num.max(1) as u64;
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.reads);
    while !duration.done(1) {
        t.rand.next(); // db_bench's SelectDBWithCfh(thread)
        let k = t.rand.next() % modulus; // GetRandomKey
        ctx.gen_key(k, modulus as i64, &mut key);
        read += 1;
        // db_bench reads into a PinnableSlice: the value is not copied out of the DB.
        let got = match ctx.cf_of(k) {
            Some(cf) => ctx.db.get_pinned_cf_opt(cf, &key, &ctx.read_options),
            None => ctx.db.get_pinned_opt(&key, &ctx.read_options),
        };
        match got {
            Ok(Some(v)) => {
                found += 1;
                bytes += (key.len() + v.len()) as u64;
            }
            Ok(None) => {}
            Err(e) => {
                sh.set_fatal(format!("Get returned an error: {e}"));
                break;
            }
        }
        t.stats.finished_ops(1, OpType::Read);
    }
    t.stats.add_bytes(bytes);
    t.stats.add_message(&format!("({found} of {read} found)\n"));
}

/// Count the found values of a multi-get and their bytes (keys included); the first error.
fn tally<V: AsRef<[u8]>>(
    keys: &[Vec<u8>],
    results: Vec<shale::error::Result<Option<V>>>,
    found: &mut u64,
    bytes: &mut u64,
) -> shale::error::Result<()> {
    for (k, r) in keys.iter().zip(results) {
        if let Some(v) = r? {
            *found += 1;
            *bytes += (k.len() + v.as_ref().len()) as u64;
        }
    }
    Ok(())
}

/// db_bench's MultiReadRandom: batches of `--batch_size` random keys through `DB::multi_get`.
fn multi_read_random(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let batch = ctx.entries_per_batch.max(1) as usize;
    let mut read: u64 = 0;
    let mut found: u64 = 0;
    let mut bytes: u64 = 0;
    let mut keys: Vec<Vec<u8>> = (0..batch).map(|_| Vec::with_capacity(ctx.key_size)).collect();
    let modulus = ctx.flags_num.max(1) as u64;
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.reads);
    while !duration.done(batch as i64) {
        t.rand.next(); // db_bench's SelectDB(thread)
        for k in keys.iter_mut() {
            ctx.gen_key(t.rand.next() % modulus, modulus as i64, k);
        }
        // db_bench copies the values into strings, or pins them with --multiread_batched.
        let res = if ctx.multiread_batched {
            tally(
                &keys,
                ctx.db.multi_get_pinned_opt(&keys, &ctx.read_options),
                &mut found,
                &mut bytes,
            )
        } else {
            tally(
                &keys,
                ctx.db.multi_get_opt(&keys, &ctx.read_options),
                &mut found,
                &mut bytes,
            )
        };
        read += batch as u64;
        if let Err(e) = res {
            sh.set_fatal(format!("MultiGet returned an error: {e}"));
        }
        if sh.fatal.load(Ordering::Relaxed) {
            break;
        }
        t.stats.finished_ops(batch as u64, OpType::Read);
    }
    t.stats.add_bytes(bytes);
    t.stats.add_message(&format!("({found} of {read} found)\n"));
}

impl Ctx {
    /// db_bench's `GenerateKeyFromInt(v, num_keys)`: with `--keys_per_prefix` a prefixed key.
    #[inline]
    fn gen_key(&self, v: u64, num_keys: i64, out: &mut Vec<u8>) {
        if self.keys_per_prefix > 0 {
            generate_prefixed_key(v, num_keys, self.prefix_size, self.keys_per_prefix, self.key_size, out);
        } else {
            generate_key_from_int(v, self.key_size, out);
        }
    }
}

fn seek_random(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut read: u64 = 0;
    let mut found: u64 = 0;
    let mut bytes: u64 = 0;
    let mut key = Vec::with_capacity(ctx.key_size);
    let modulus = ctx.flags_num.max(1) as u64;
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.reads);
    // db_bench sets `auto_prefix_mode` for this benchmark only
    let mut ro = ctx.read_options.clone();
    ro.set_auto_prefix_mode(ctx.auto_prefix_mode);
    while !duration.done(1) {
        let pos = t.rand.next() % modulus;
        ctx.gen_key(pos, modulus as i64, &mut key);
        let mut it = ctx.db.raw_iterator_opt(ro.clone());
        it.seek(&key);
        read += 1;
        if it.valid() && it.key() == Some(key.as_slice()) {
            found += 1;
        }
        let mut j = 0;
        while j < ctx.seek_nexts && it.valid() {
            bytes += (it.key().map_or(0, |k| k.len()) + it.value().map_or(0, |v| v.len())) as u64;
            it.next();
            j += 1;
        }
        if let Err(e) = it.status() {
            sh.set_fatal(format!("Iterator error: {e}"));
            break;
        }
        t.stats.finished_ops(1, OpType::Seek);
    }
    t.stats.add_bytes(bytes);
    t.stats.add_message(&format!("({found} of {read} found)\n"));
}

fn do_delete(ctx: &Ctx, sh: &Shared, t: &mut ThreadState, seq: bool) {
    let mut duration = Duration::new(ctx, sh, if seq { 0 } else { ctx.duration }, ctx.deletes);
    let mut i: i64 = 0;
    let mut key = Vec::with_capacity(ctx.key_size);
    let modulus = ctx.flags_num.max(1) as u64;
    while !duration.done(ctx.entries_per_batch) {
        t.rand.next(); // SelectDB(thread)
        let mut batch = WriteBatch::new();
        for j in 0..ctx.entries_per_batch {
            let k = if seq { (i + j) as u64 } else { t.rand.next() % modulus };
            ctx.gen_key(k, modulus as i64, &mut key);
            batch.delete(&key);
        }
        let r = ctx.db.write_opt(batch, &ctx.write_options);
        t.stats.finished_ops(ctx.entries_per_batch as u64, OpType::Delete);
        if let Err(e) = r {
            sh.set_fatal(format!("del error: {e}"));
            break;
        }
        i += ctx.entries_per_batch;
    }
}

fn bg_writer(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut gen = RandomGenerator::new(ctx.value_size, ctx.compression_ratio);
    let mut bytes: u64 = 0;
    t.stats.set_exclude_from_merge();
    let mut key = Vec::with_capacity(ctx.key_size);
    let keyspace = ctx.flags_num.max(1) as u64;
    loop {
        t.rand.next(); // SelectDB(thread)
        if sh.num_done.load(Ordering::SeqCst) + 1 >= sh.total || sh.fatal.load(Ordering::Relaxed) {
            break;
        }
        ctx.gen_key(t.rand.next() % keyspace, keyspace as i64, &mut key);
        let val = gen.generate();
        match ctx.db.put_opt(&key, val, &ctx.write_options) {
            Ok(()) => bytes += (key.len() + val.len()) as u64,
            Err(e) => {
                sh.set_fatal(format!("put or merge error: {e}"));
                break;
            }
        }
        t.stats.finished_ops(1, OpType::Write);
    }
    t.stats.add_bytes(bytes);
}

fn run_method(m: Method, ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    match m {
        Method::WriteSeq => do_write(ctx, sh, t, false),
        Method::WriteRandom => do_write(ctx, sh, t, true),
        Method::ReadSequential => read_sequential(ctx, sh, t, false),
        Method::ReadReverse => read_sequential(ctx, sh, t, true),
        Method::ReadRandom => read_random(ctx, sh, t),
        Method::MultiReadRandom => multi_read_random(ctx, sh, t),
        Method::SeekRandom => seek_random(ctx, sh, t),
        Method::DeleteSeq => do_delete(ctx, sh, t, true),
        Method::DeleteRandom => do_delete(ctx, sh, t, false),
        Method::ReadWhileWriting => {
            if t.tid > 0 {
                read_random(ctx, sh, t)
            } else {
                bg_writer(ctx, sh, t)
            }
        }
        Method::MergeRandom => merge_random(ctx, sh, t),
        Method::ReadRandomMergeRandom => read_random_merge_random(ctx, sh, t),
        Method::Checksum(kind) => checksum(ctx, t, kind),
        Method::RandomTransaction => random_transaction(ctx, sh, t),
        Method::FillSeqIngest => fill_seq_ingest(ctx, sh, t),
        Method::Compact => {
            t.rand.next(); // SelectDB(thread)
            if let Err(e) = ctx.db.compact_range(None::<&[u8]>, None::<&[u8]>) {
                sh.set_fatal(format!("compact error: {e}"));
            }
        }
    }
}

/// db_bench's RandomTransaction: `readwrites` transactions (see `txn.rs`).
fn random_transaction(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    let mut duration = Duration::new(ctx, sh, ctx.duration, ctx.readwrites);
    let mut tally = Tally::default();
    while !duration.done(1) {
        match txn::one_transaction(
            &ctx.db,
            &ctx.txn,
            ctx.num.max(1) as u64,
            &ctx.write_options,
            &mut t.rand,
            &mut tally,
        ) {
            Ok(true) => tally.committed += 1,
            Ok(false) => tally.aborted += 1,
            Err(e) => {
                sh.set_fatal(format!("randomtransaction: {e}"));
                return;
            }
        }
        t.stats.finished_ops(1, OpType::Write);
    }
    t.stats.add_bytes(tally.bytes);
    t.stats
        .add_message(&format!("( transactions:{} aborts:{})", tally.committed, tally.aborted));
}

/// `fillseqingest`: the keys of `fillseq` written into external files and ingested (one thread
/// loads; with `--threads` above 1 the others do nothing).
fn fill_seq_ingest(ctx: &Ctx, sh: &Shared, t: &mut ThreadState) {
    if t.tid != 0 {
        return;
    }
    let num = if ctx.writes == 0 { ctx.num } else { ctx.writes }.max(0) as u64;
    let file_bytes = ctx.opts.get_target_file_size_base();
    let stats = &mut t.stats;
    let r = bulkload::load(
        &ctx.db,
        &ctx.opts,
        &ctx.db_path,
        num,
        ctx.key_size,
        ctx.value_size,
        ctx.compression_ratio,
        file_bytes,
        |n, op| stats.finished_ops(n, op),
    );
    match r {
        Ok(b) => {
            t.stats.add_bytes(b.bytes);
            t.stats.add_message(&format!(
                "({} files; write {:.3} s, ingest {:.3} s)",
                b.files, b.write_secs, b.ingest_secs
            ));
        }
        Err(e) => sh.set_fatal(e),
    }
}

/// db_bench's Crc32c / xxHash / xxHash64 / xxh3 benchmarks: hash `--block_size` bytes of 'x'
/// per op until 5000 MiB have been hashed (as db_bench does).
fn checksum(ctx: &Ctx, t: &mut ThreadState, kind: &str) {
    let size = ctx.block_size.max(1);
    let data = vec![b'x'; size];
    let op = if kind == "crc32c" { OpType::Crc } else { OpType::Hash };
    let mut bytes: u64 = 0;
    let mut acc: u64 = 0;
    let hash = shale::tools::bench_hasher(kind).unwrap_or(|_| 0);
    while bytes < 5000 * 1048576 {
        // black_box: the input must be read anew each op (nothing hoisted out of the loop).
        acc = acc.wrapping_add(hash(std::hint::black_box(&data)));
        t.stats.finished_ops(1, op);
        bytes += size as u64;
    }
    // print so the result is not dead code
    eprint!("... {kind}=0x{acc:x}\r");
    t.stats.add_bytes(bytes);
    t.stats.add_message(&format!("({size} per op)"));
}

struct Benchmark {
    cfg: Config,
    opts: Options,
    db_path: PathBuf,
    temp_db: bool,
    db: Option<Arc<BenchDb>>,
    cfs: Vec<Arc<ColumnFamily>>,
    seed_base: i64,
    total_thread_count: i64,
    stats_cfg: StatsConfig,
}

impl Benchmark {
    fn open(&mut self) -> Result<(), String> {
        let mut o = self.opts.clone();
        o.create_if_missing(!self.cfg.use_existing_db);
        let n = self.cfg.num_column_families;
        if n <= 1 {
            let db = BenchDb::open(&o, &self.db_path, &self.cfg.txn).map_err(|e| format!("open error: {e}"))?;
            self.db = Some(Arc::new(db));
            return Ok(());
        }
        if self.cfg.txn.transaction_db || self.cfg.txn.optimistic {
            return Err("--num_column_families with a transaction DB is not supported".into());
        }
        // db_bench's OpenDb with --num_column_families: every family with the same options,
        // the missing ones created
        o.create_missing_column_families(true);
        let names: Vec<String> = (0..n).map(column_family_name).collect();
        let db = DB::open_cf(&o, &self.db_path, &names).map_err(|e| format!("open error: {e}"))?;
        self.cfs = names
            .iter()
            .map(|name| {
                db.cf_handle(name)
                    .ok_or_else(|| format!("open error: no family {name}"))
            })
            .collect::<Result<_, _>>()?;
        self.db = Some(Arc::new(BenchDb::Plain(db)));
        Ok(())
    }

    fn close(&mut self) {
        self.cfs.clear();
        self.db = None;
    }

    fn run_benchmark(&mut self, n: usize, name: &str, method: Method, ctx: &Ctx) -> Result<(), String> {
        let shared = Shared {
            total: n,
            num_done: AtomicUsize::new(0),
            fatal: AtomicBool::new(false),
            fatal_msg: Mutex::new(None),
            barrier: Barrier::new(n),
        };
        let mut states = Vec::with_capacity(n);
        for i in 0..n {
            self.total_thread_count += 1;
            let seed = self.seed_base.wrapping_add(self.total_thread_count) as u64;
            states.push(ThreadState {
                tid: i,
                rand: Random64::new(seed),
                stats: Stats::new(self.stats_cfg),
            });
        }
        let shared_ref = &shared;
        let perf_level_flag = self.cfg.perf_level;
        let finished: Vec<ThreadState> = std::thread::scope(|s| {
            let handles: Vec<_> = states
                .into_iter()
                .map(|mut t| {
                    s.spawn(move || {
                        shared_ref.barrier.wait();
                        // db_bench: the thread's perf level, then its PERF_CONTEXT in the report
                        let perf = perf_level(perf_level_flag);
                        if let Some(l) = perf {
                            set_perf_stats(l);
                            PerfContext::default().reset();
                        }
                        t.stats.start(t.tid as i32);
                        run_method(method, ctx, shared_ref, &mut t);
                        if perf.is_some() {
                            t.stats
                                .add_message(&format!("PERF_CONTEXT:\n{}", PerfContext::default().report(false)));
                            set_perf_stats(PerfStatsLevel::Disable);
                        }
                        t.stats.stop();
                        shared_ref.num_done.fetch_add(1, Ordering::SeqCst);
                        t
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("benchmark thread panicked"))
                .collect()
        });
        let mut merged = Stats::new(self.stats_cfg);
        for t in &finished {
            merged.merge(&t.stats);
        }
        print!("{}", merged.report(name));
        let _ = std::io::stdout().flush();
        if shared.fatal.load(Ordering::SeqCst) {
            let msg = shared.fatal_msg.lock().unwrap().take().unwrap_or_default();
            return Err(format!("Fatal error during \"{name}\": {msg}"));
        }
        Ok(())
    }

    fn action(name: &str) -> Option<Action> {
        let run = |method, fresh_db| Some(Action::Run { method, fresh_db });
        match name {
            "fillseq" | "fillbatch" => run(Method::WriteSeq, true),
            "fillrandom" | "fillsync" => run(Method::WriteRandom, true),
            "overwrite" => run(Method::WriteRandom, false),
            "readseq" | "readtocache" => run(Method::ReadSequential, false),
            "readreverse" => run(Method::ReadReverse, false),
            "readrandom" => run(Method::ReadRandom, false),
            "multireadrandom" => run(Method::MultiReadRandom, false),
            "seekrandom" => run(Method::SeekRandom, false),
            "deleteseq" => run(Method::DeleteSeq, false),
            "deleterandom" => run(Method::DeleteRandom, false),
            "readwhilewriting" => run(Method::ReadWhileWriting, false),
            "mergerandom" => run(Method::MergeRandom, false),
            "readrandommergerandom" => run(Method::ReadRandomMergeRandom, false),
            "compact" => run(Method::Compact, false),
            "randomtransaction" => run(Method::RandomTransaction, false),
            "fillseqingest" => run(Method::FillSeqIngest, true),
            "crc32c" => run(Method::Checksum("crc32c"), false),
            "xxhash" => run(Method::Checksum("xxhash"), false),
            "xxhash64" => run(Method::Checksum("xxhash64"), false),
            "xxh3" => run(Method::Checksum("xxh3"), false),
            "flush" => Some(Action::Flush),
            "waitforcompaction" => Some(Action::WaitForCompaction),
            "stats" => Some(Action::Stats),
            _ => None,
        }
    }

    fn print_stats(&self, key: &str) {
        let s = match self.db.as_ref().map(|d| d.property_value(key)) {
            Some(Ok(Some(s))) => s,
            _ => "(failed)".to_string(),
        };
        println!("\n{s}");
    }

    fn run(&mut self) -> Result<(), String> {
        self.open()?;
        self.print_header();
        let names: Vec<String> = self.cfg.benchmarks.split(',').map(|s| s.to_string()).collect();
        for name in names {
            if name.is_empty() {
                continue;
            }
            let c = &self.cfg;
            let mut num = c.num;
            let mut reads = if c.reads < 0 { c.num } else { c.reads };
            let writes = if c.writes < 0 { c.num } else { c.writes };
            let deletes = if c.deletes < 0 { c.num } else { c.deletes };
            let mut entries_per_batch = c.batch_size;
            let mut write_options = {
                let mut o = WriteOptions::default();
                o.set_sync(c.sync);
                o.disable_wal(c.disable_wal);
                o
            };
            let mut num_threads = c.threads;
            let action = Self::action(&name).ok_or_else(|| format!("unknown benchmark '{name}'"))?;
            match name.as_str() {
                "fillbatch" => entries_per_batch = 1000,
                "fillsync" => {
                    num /= 1000;
                    write_options.set_sync(true);
                }
                "readtocache" => {
                    num_threads = 1;
                    reads = num;
                }
                "readwhilewriting" => num_threads += 1,
                "multireadrandom" => eprintln!("entries_per_batch = {entries_per_batch}"),
                "mergerandom" | "readrandommergerandom" if c.merge_operator.is_empty() => {
                    // db_bench prints this on stdout and exits with status 1.
                    println!("{name:<12} : skipped (--merge_operator is unknown)");
                    return Err(String::new());
                }
                _ => {}
            }
            let (method, fresh_db) = match action {
                Action::Run { method, fresh_db } => (method, fresh_db),
                Action::Flush => {
                    if let Some(db) = &self.db {
                        // db_bench flushes every family
                        let r = if self.cfs.len() > 1 {
                            db.flush_cfs(&self.cfs.iter().map(|c| &**c).collect::<Vec<_>>())
                        } else {
                            db.flush()
                        };
                        r.map_err(|e| format!("Flush failed: {e}"))?;
                    }
                    continue;
                }
                Action::WaitForCompaction => {
                    // db_bench gives background threads 5 s to wake before waiting.
                    std::thread::sleep(std::time::Duration::from_secs(5));
                    if let Some(db) = &self.db {
                        db.wait_for_compact(&Default::default())
                            .map_err(|e| format!("WaitForCompact failed: {e}"))?;
                    }
                    continue;
                }
                Action::Stats => {
                    self.print_stats("rocksdb.stats");
                    continue;
                }
            };
            if fresh_db {
                if self.cfg.use_existing_db {
                    println!("{name:<12} : skipped (--use_existing_db is true)");
                    continue;
                }
                self.close();
                DB::destroy(&self.opts, &self.db_path).map_err(|e| format!("destroy error: {e}"))?;
                self.open()?;
            }
            let Some(db) = self.db.clone() else {
                return Err("no database is open".into());
            };
            println!("DB path: [{}]", self.db_path.display());
            let ctx = Ctx {
                db,
                txn: self.cfg.txn,
                cfs: self.cfs.clone(),
                num,
                flags_num: self.cfg.num,
                reads,
                writes,
                deletes,
                value_size: self.cfg.value_size,
                key_size: self.cfg.key_size,
                prefix_size: self.cfg.prefix_size.max(0) as usize,
                keys_per_prefix: self.cfg.keys_per_prefix,
                auto_prefix_mode: self.cfg.auto_prefix_mode,
                entries_per_batch,
                multiread_batched: self.cfg.multiread_batched,
                seek_nexts: self.cfg.seek_nexts,
                block_size: self.opts.get_block_size(),
                compression_ratio: self.cfg.compression_ratio,
                duration: self.cfg.duration,
                granularity: self.cfg.ops_between_duration_checks,
                write_options,
                read_options: {
                    let mut o = ReadOptions::default();
                    o.set_verify_checksums(self.cfg.verify_checksum);
                    o.fill_cache(true);
                    o.set_prefix_same_as_start(self.cfg.prefix_same_as_start);
                    o.set_total_order_seek(self.cfg.total_order_seek);
                    o
                },
                writes_before_delete_range: self.cfg.writes_before_delete_range,
                writes_per_range_tombstone: self.cfg.writes_per_range_tombstone,
                range_tombstone_width: self.cfg.range_tombstone_width,
                max_num_range_tombstones: self.cfg.max_num_range_tombstones,
                expand_range_tombstones: self.cfg.expand_range_tombstones,
                merge_keys: self.cfg.merge_keys(),
                readwrites: self.cfg.readwrites(),
                mergereadpercent: self.cfg.mergereadpercent,
                opts: self.opts.clone(),
                db_path: self.db_path.clone(),
            };
            self.run_benchmark(num_threads, &name, method, &ctx)?;
            if method == Method::RandomTransaction {
                // db_bench's post-run check: every set sums to the same total
                match txn::verify(&ctx.db, self.cfg.txn.sets) {
                    Ok(total) => println!("RandomTransactionVerify Success (every set sums to {total})."),
                    Err(e) => return Err(format!("RandomTransactionVerify FAILED: {e}")),
                }
            }
        }
        if let Some(s) = self.opts.get_statistics().filter(|_| self.cfg.statistics) {
            // db_bench: `fprintf(stdout, "STATISTICS:\n%s\n", dbstats->ToString())`
            println!("STATISTICS:\n{s}");
        }
        Ok(())
    }

    fn print_header(&self) {
        print_environment();
        let c = &self.cfg;
        let mut out = String::new();
        out.push_str(&format!(
            "Keys:       {} bytes each (+ 0 bytes user-defined timestamp)\n",
            c.key_size
        ));
        out.push_str(&format!(
            "Values:     {} bytes each ({} bytes after compression)\n",
            c.value_size,
            (c.value_size as f64 * c.compression_ratio + 0.5) as i32
        ));
        out.push_str(&format!("Entries:    {}\n", c.num));
        out.push_str(&format!("Prefix:    {} bytes\n", c.prefix_size));
        out.push_str(&format!("Keys per prefix:    {}\n", c.keys_per_prefix.max(0)));
        out.push_str(&format!(
            "RawSize:    {:.1} MB (estimated)\n",
            ((c.key_size + c.value_size) as i64 * c.num) as f64 / 1_048_576.0
        ));
        out.push_str(&format!(
            "FileSize:   {:.1} MB (estimated)\n",
            ((c.key_size as f64 + c.value_size as f64 * c.compression_ratio) * c.num as f64) / 1_048_576.0
        ));
        out.push_str("Write rate: 0 bytes/second\n");
        out.push_str("Read rate: 0 ops/second\n");
        out.push_str(&format!(
            "Compression: {}\n",
            self.opts.get_compression().rocksdb_name()
        ));
        out.push_str("Compression sampling rate: 0\n");
        out.push_str(&format!(
            "Memtablerep: {}\n",
            self.opts.get_memtable_factory().rocksdb_name()
        ));
        out.push_str(&format!("Perf Level: {}\n", c.perf_level));
        if cfg!(debug_assertions) {
            out.push_str("WARNING: Assertions are enabled; benchmarks unnecessarily slow\n");
        }
        out.push_str("------------------------------------------------\n");
        print!("{out}");
        let _ = std::io::stdout().flush();
    }
}

/// `--perf_level` (RocksDB's `PerfLevel` numbering) as the level a thread sets; None: off.
fn perf_level(n: i64) -> Option<PerfStatsLevel> {
    match n {
        i64::MIN..=1 => None,
        2 | 3 => Some(PerfStatsLevel::EnableCount),
        4 => Some(PerfStatsLevel::EnableTimeExceptForMutex),
        5 => Some(PerfStatsLevel::EnableTimeAndCPUTimeExceptForMutex),
        _ => Some(PerfStatsLevel::EnableTime),
    }
}

/// db_bench's `PrintEnvironment` (stderr): version, date, CPU.
fn print_environment() {
    let mut e = String::new();
    e.push_str(&format!("Shale:      version {}\n", env!("CARGO_PKG_VERSION")));
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    e.push_str(&format!("Date:       {}\n", ctime_utc(secs)));
    if let Ok(cpuinfo) = std::fs::read_to_string("/proc/cpuinfo") {
        let mut num_cpus = 0;
        let mut cpu_type = String::new();
        let mut cache_size = String::new();
        for line in cpuinfo.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            match k.trim() {
                "model name" => {
                    num_cpus += 1;
                    cpu_type = v.trim().to_string();
                }
                "cache size" => cache_size = v.trim().to_string(),
                _ => {}
            }
        }
        e.push_str(&format!("CPU:        {num_cpus} * {cpu_type}\n"));
        e.push_str(&format!("CPUCache:   {cache_size}\n"));
    }
    eprint!("{e}");
}

/// `ctime`-style text for a Unix time, in UTC (e.g. `Thu Jan  1 00:00:00 1970`).
pub fn ctime_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        WD[(days.rem_euclid(7)) as usize],
        MO[(m - 1) as usize],
        d,
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        y
    )
}

/// Entry point of `shale bench`; returns the process exit code.
pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-help" || a == "--helpfull") {
        print!(
            "shale bench: db_bench-compatible benchmark\n\n  Flags:\n{}",
            help_text(BENCH_FLAGS)
        );
        return 0;
    }
    let fl = match Flags::parse(BENCH_FLAGS, args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let cfg = match Config::from_flags(&fl) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let opts = match options_from_flags(&fl) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    for name in cfg.benchmarks.split(',') {
        if !name.is_empty() && !KNOWN_BENCHMARKS.contains(&name) {
            eprintln!("unknown benchmark '{name}'");
            return 1;
        }
    }
    let seed_base = if cfg.seed == 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(1);
        println!("Set seed to {now} because --seed was 0");
        now
    } else {
        cfg.seed
    };
    let (db_path, temp_db) = if cfg.db.is_empty() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        (
            std::env::temp_dir().join(format!("shale-bench-{}-{nanos}", std::process::id())),
            true,
        )
    } else {
        (PathBuf::from(&cfg.db), false)
    };
    if !cfg.use_existing_db {
        if let Err(e) = DB::destroy(&opts, &db_path) {
            eprintln!("destroy error: {e}");
            return 1;
        }
    }
    let stats_cfg = StatsConfig {
        histogram: cfg.histogram,
        progress: cfg.progress,
    };
    let mut b = Benchmark {
        cfg,
        opts,
        db_path,
        temp_db,
        db: None,
        cfs: Vec::new(),
        seed_base,
        total_thread_count: 0,
        stats_cfg,
    };
    let r = b.run();
    b.close();
    if b.temp_db && !b.cfg.use_existing_db {
        let _ = std::fs::remove_dir_all(&b.db_path);
    }
    match r {
        Ok(()) => 0,
        Err(e) => {
            // An empty message: the reason is already on stdout (as db_bench does).
            if !e.is_empty() {
                eprintln!("{e}");
            }
            1
        }
    }
}
