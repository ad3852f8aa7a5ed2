//! `shale stress`: a db_stress-style randomized stress test with an expected-state oracle.
//!
//! N threads run a random mix of writes (put, delete, single_delete, delete_range, merge with
//! `uint64add`, write batches) and reads (get, multi_get, bounded iterator scans in both
//! directions, snapshot reads), plus flush, compact_range and reopen, over the keys
//! `0..max_key`. Every read is checked against the expected state.
//!
//! ## The expected state (oracle)
//! A file (`--expected_values_path`, default `<db>.expected`) with one 8-byte entry per key:
//! the committed value id (0 = absent) and, while a write is in flight, a pending flag and the
//! new value id. A write marks its keys pending (pwrite) *before* the DB write and commits them
//! after it is acknowledged, so a process killed at any moment leaves a file from which the next
//! run knows, for every key, the one value it must hold, or the two it may hold (old or new).
//! Values are derived from (key, value id), so any value read can be checked and decoded.
//!
//! On start, when the expected state exists, every key is verified (get + a full scan); pending
//! keys are settled to what the DB holds. Runs with `disable_wal` mark the state "lossy" first:
//! after a crash of such a run unflushed writes may be gone, so the verifier then only requires
//! each value to be a well-formed value of its key.
//!
//! Key classes: the top eighth of the key space is the "no-overwrite" region where the only
//! writes are put-if-absent and single_delete-if-present (RocksDB's contract for SingleDelete);
//! delete_range and merge never touch it.
//!
//! See `crate::crash` for `--crash_test` (SIGKILL loop) and `--power_loss` (simulated power loss).

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use shale::{
    ChecksumType, CompressionType, FileLock, FileSystem, Options, RandomAccessFile, ReadOptions, WalRecoveryMode,
    WritableFile, WriteBatch, WriteOptions, DB,
};

use crate::faultinj::{FaultCounts, FaultRates, FaultSwitch, RandomFaultFs};
use crate::flags::{help_text, FlagDef, Flags, Kind};

const fn f(name: &'static str, kind: Kind, default: &'static str, help: &'static str) -> FlagDef {
    FlagDef {
        name,
        kind,
        default,
        help,
    }
}

pub const FLAGS: &[FlagDef] = &[
    f("db", Kind::Str, "", "database directory (required)"),
    f("expected_values_path", Kind::Str, "", "expected-state file (default: <db>.expected)"),
    f("threads", Kind::Int32, "4", "worker threads"),
    f("ops_per_thread", Kind::Uint64, "20000", "operations per thread (when --duration is 0)"),
    f("max_key", Kind::Uint64, "10000", "keys are 0..max_key"),
    f("seed", Kind::Uint64, "2341234", "seed of the operation mix and of the randomized options"),
    f("duration", Kind::Uint64, "0", "seconds to run (0: run --ops_per_thread operations)"),
    f("reopen", Kind::Uint64, "2", "times the database is closed and reopened during the run"),
    f("destroy_db_initially", Kind::Bool, "false", "destroy the database and the expected state first"),
    f("verify_only", Kind::Bool, "false", "only verify the database against the expected state"),
    f("verify", Kind::Bool, "true", "verify an existing expected state before running"),
    f("sync", Kind::Int32, "-1", "WAL sync: 0 never, 1 every write, 2 one write in 16, -1 random per seed"),
    f("disable_wal", Kind::Int32, "-1", "0/1, or -1 random per seed (1 run in 6)"),
    f("dynamic_levels", Kind::Int32, "-1", "level_compaction_dynamic_level_bytes: 0/1, -1 random per seed (the crash test: per DB), -2 (crash test) random per run"),
    f("crash_test", Kind::Bool, "false", "crash test: run this tool as a child and SIGKILL it repeatedly"),
    f("kill_interval", Kind::Double, "2", "crash test: mean seconds between SIGKILLs"),
    f("power_loss", Kind::Bool, "false", "simulated power-loss test on an in-memory file system"),
    f("kill_odds", Kind::Uint64, "0", "kill point: end the process at 1 in N file-system operations that change durable state (0: off)"),
    f("kill_point", Kind::Str, "", "with --kill_odds: only this point, <file>.<op> (e.g. wal.sync, sst.append, manifest.sync, current.rename, other.syncdir)"),
    f("inject_bug", Kind::Str, "", "test the tester: wal_no_sync | wal_no_flush (a broken durability step)"),
    f("table_format", Kind::Int32, "-1", "table format of new files: 0 block-based, 1 plain (no delete_range, forward scans only), -1 random per seed (1 in 6 plain; the crash test: per DB)"),
    f("read_fault_one_in", Kind::Uint64, "0", "inject EIO into 1 in N reads / opens for reading (0: off)"),
    f("write_fault_one_in", Kind::Uint64, "0", "inject EIO, ENOSPC or a short write into 1 in N appends, flushes, syncs, creates, renames, removals, directory syncs (0: off)"),
    f("bitflip_read_one_in", Kind::Uint64, "0", "flip one bit in 1 in N table-file reads (0: off; off when the checksum type is none)"),
    f("wal_recovery_mode", Kind::Int32, "-1", "WAL recovery mode: 0 tolerate corrupted tail records, 1 absolute consistency, 2 point in time, 3 skip any corrupted records, -1 random per seed among 0, 2, 3 (reopens after a clean close use 1)"),
];

const USAGE: &str = "usage: shale stress --db=DIR [flags]
       shale stress --crash_test --db=DIR --duration=S --kill_interval=S [flags]
       shale stress --power_loss --duration=S [--seed=N]

";

/// Parse flags, accepting `--kill-interval` for `--kill_interval`.
pub fn parse(args: &[String]) -> Result<Flags, String> {
    let args: Vec<String> = args
        .iter()
        .map(|a| match a.strip_prefix("--") {
            Some(body) if !body.is_empty() => {
                let (n, v) = match body.split_once('=') {
                    Some((n, v)) => (n.replace('-', "_"), format!("={v}")),
                    None => (body.replace('-', "_"), String::new()),
                };
                format!("--{n}{v}")
            }
            _ => a.clone(),
        })
        .collect();
    let fl = Flags::parse(FLAGS, &args).map_err(|e| e.to_string())?;
    let threads = fl.i64("threads");
    if !(1..=1024).contains(&threads) {
        return Err(format!("ERROR: --threads must be in 1..=1024, got {threads}"));
    }
    let mk = fl.u64("max_key");
    if !(1..=(1 << 26)).contains(&mk) {
        return Err(format!("ERROR: --max_key must be in 1..=67108864, got {mk}"));
    }
    if !(-1..=2).contains(&fl.i64("sync")) {
        return Err(format!("ERROR: --sync must be -1, 0, 1 or 2, got {}", fl.i64("sync")));
    }
    if !(-2..=1).contains(&fl.i64("dynamic_levels")) {
        return Err(format!(
            "ERROR: --dynamic_levels must be -2, -1, 0 or 1, got {}",
            fl.i64("dynamic_levels")
        ));
    }
    if !(-1..=1).contains(&fl.i64("disable_wal")) {
        return Err(format!(
            "ERROR: --disable_wal must be -1, 0 or 1, got {}",
            fl.i64("disable_wal")
        ));
    }
    let ki = fl.f64("kill_interval");
    if !(ki > 0.0 && ki <= 3600.0) {
        return Err(format!("ERROR: --kill_interval must be in (0, 3600] seconds, got {ki}"));
    }
    if !matches!(fl.str("inject_bug"), "" | "wal_no_sync" | "wal_no_flush") {
        return Err(format!(
            "ERROR: --inject_bug: unknown bug '{}' (wal_no_sync, wal_no_flush)",
            fl.str("inject_bug")
        ));
    }
    if !(-1..=1).contains(&fl.i64("table_format")) {
        return Err(format!(
            "ERROR: --table_format must be -1, 0 or 1, got {}",
            fl.i64("table_format")
        ));
    }
    if !(-1..=3).contains(&fl.i64("wal_recovery_mode")) {
        return Err(format!(
            "ERROR: --wal_recovery_mode must be -1, 0, 1, 2 or 3, got {}",
            fl.i64("wal_recovery_mode")
        ));
    }
    if fl.bool("crash_test") && fl.bool("power_loss") {
        return Err("ERROR: --crash_test and --power_loss are exclusive".into());
    }
    if !fl.bool("power_loss") && fl.str("db").is_empty() {
        return Err("ERROR: --db is required".into());
    }
    if fl.bool("crash_test") && fl.u64("duration") == 0 {
        return Err("ERROR: --crash_test needs --duration (seconds)".into());
    }
    Ok(fl)
}

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}flags:\n{}", help_text(FLAGS));
        return 0;
    }
    let fl = match parse(args) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("shale stress: {e}");
            return 1;
        }
    };
    if fl.bool("crash_test") {
        return crate::crash::crash_test(&fl);
    }
    if fl.bool("power_loss") {
        return crate::crash::power_loss_test(&fl);
    }
    match run(&fl) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shale stress: FAILED: {e} (seed {})", fl.u64("seed"));
            1
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Random numbers, keys and values.

/// splitmix64.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub const MAX_VID: u32 = (1 << 31) - 1;

pub fn key_bytes(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

#[allow(dead_code)]
pub fn key_of(b: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(b).ok().map(u64::from_be_bytes)
}

/// First key of the no-overwrite region (single_delete keys).
pub fn sd_start(max_key: u64) -> u64 {
    max_key - max_key / 8
}

/// The key written to the DB for logical key `k` holding value id `vid`. In the no-overwrite
/// region the value id is part of the key (`k` big-endian ++ `vid` big-endian), so each DB key is
/// put at most once and single-deleted at most once, RocksDB's strict SingleDelete contract (a
/// re-put after a SingleDelete may let a compaction pair the SingleDelete with the newer Put and
/// resurrect the older one, in RocksDB as in Shale).
pub fn phys_key(k: u64, vid: u32, max_key: u64) -> Vec<u8> {
    let mut v = key_bytes(k).to_vec();
    if k >= sd_start(max_key) {
        v.extend_from_slice(&vid.to_be_bytes());
    }
    v
}

/// Parse a DB key: the logical key and, in the no-overwrite region, the value id in the key.
pub fn parse_phys(b: &[u8], max_key: u64) -> Option<(u64, Option<u32>)> {
    let k = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    if k >= max_key {
        return None;
    }
    match (k >= sd_start(max_key), b.len()) {
        (false, 8) => Some((k, None)),
        (true, 12) => Some((k, Some(u32::from_be_bytes(b[8..12].try_into().ok()?)))),
        _ => None,
    }
}

fn base(k: u64, vid: u32) -> u64 {
    mix(k ^ 0xA5A5_5A5A_0000_0001).wrapping_add(vid as u64)
}

/// Padding after the 8-byte counter: none for a third of the value ids (merge results and
/// merge targets), up to 99 bytes otherwise.
pub fn pad_len(k: u64, vid: u32) -> usize {
    let h = mix(k.wrapping_mul(31) ^ ((vid as u64) << 32) ^ 0x5BD1_E995);
    if h.is_multiple_of(3) {
        0
    } else {
        ((h >> 8) % 100) as usize
    }
}

/// The value of key `k` with value id `vid` (1..=MAX_VID).
pub fn value_of(k: u64, vid: u32) -> Vec<u8> {
    let mut v = base(k, vid).to_le_bytes().to_vec();
    let n = pad_len(k, vid);
    let c = (mix(k ^ vid as u64) & 0xff) as u8;
    v.extend((0..n).map(|i| c.wrapping_add((i / 7) as u8)));
    v
}

/// The value id of a well-formed value of key `k`.
pub fn decode_value(k: u64, v: &[u8]) -> Option<u32> {
    let b = u64::from_le_bytes(v.get(..8)?.try_into().ok()?);
    let vid = b.wrapping_sub(base(k, 0));
    if vid == 0 || vid > MAX_VID as u64 {
        return None;
    }
    (value_of(k, vid as u32) == v).then_some(vid as u32)
}

/// The `uint64add` operand that turns the value (k, old) into (k, new); `new` must have no pad.
pub fn merge_operand(k: u64, old: u32, new: u32) -> [u8; 8] {
    let prev = if old != 0 && pad_len(k, old) == 0 {
        base(k, old)
    } else {
        0
    };
    base(k, new).wrapping_sub(prev).to_le_bytes()
}

pub fn describe(k: u64, v: Option<&[u8]>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match decode_value(k, v) {
            Some(id) => format!("value id {id} ({} bytes)", v.len()),
            None => {
                let hex: String = v.iter().take(24).map(|b| format!("{b:02x}")).collect();
                format!(
                    "garbage {} bytes: {hex}{}",
                    v.len(),
                    if v.len() > 24 { "..." } else { "" }
                )
            }
        },
    }
}

fn vid_desc(vid: u32) -> String {
    if vid == 0 {
        "absent".into()
    } else {
        format!("value id {vid}")
    }
}

/// A random new value id; `no_pad` for a merge result.
fn new_vid(rng: &mut Rng, k: u64, no_pad: bool) -> u32 {
    loop {
        let v = 1 + (rng.next() % MAX_VID as u64) as u32;
        if !no_pad || pad_len(k, v) == 0 {
            return v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The expected state.

const MAGIC: &[u8; 8] = b"SHXSTAT1";
const HDR: u64 = 64;
const PENDING: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub committed: u32,
    /// The value id being written when the process stopped, if any.
    pub pending: Option<u32>,
}

impl Entry {
    fn decode(x: u64) -> Entry {
        Entry {
            committed: x as u32,
            pending: (x & PENDING != 0).then_some(((x >> 32) as u32) & MAX_VID),
        }
    }
    fn encode(self) -> u64 {
        match self.pending {
            Some(n) => PENDING | ((n as u64) << 32) | self.committed as u64,
            None => self.committed as u64,
        }
    }
    fn describe(self) -> String {
        match self.pending {
            Some(n) => format!(
                "{} or {} (write pending at the crash)",
                vid_desc(self.committed),
                vid_desc(n)
            ),
            None => vid_desc(self.committed),
        }
    }
}

/// The file-backed expected state: an in-memory copy plus a pwrite per change.
pub struct Expected {
    file: File,
    mem: Vec<AtomicU64>,
    lossy: AtomicBool,
}

impl Expected {
    /// Open (or create, all keys absent) the expected state for `max_key` keys.
    pub fn open(path: &Path, max_key: u64) -> Result<(Expected, bool), String> {
        let existed = path.exists();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open expected state {}: {e}", path.display()))?;
        let len = HDR + 8 * max_key;
        let mut mem = Vec::with_capacity(max_key as usize);
        let mut lossy = false;
        if existed {
            let mut data = vec![0u8; file.metadata().map_err(|e| e.to_string())?.len() as usize];
            file.read_exact_at(&mut data, 0)
                .map_err(|e| format!("cannot read expected state {}: {e}", path.display()))?;
            if data.len() < HDR as usize || &data[..8] != MAGIC {
                return Err(format!("{} is not an expected-state file", path.display()));
            }
            let mk = u64::from_le_bytes(data[8..16].try_into().unwrap());
            if mk != max_key || data.len() as u64 != len {
                return Err(format!(
                    "expected state {} is for --max_key={mk}, not {max_key} (use --destroy_db_initially)",
                    path.display()
                ));
            }
            lossy = data[16] != 0;
            for c in data[HDR as usize..].chunks_exact(8) {
                mem.push(AtomicU64::new(u64::from_le_bytes(c.try_into().unwrap())));
            }
        } else {
            let mut hdr = vec![0u8; HDR as usize];
            hdr[..8].copy_from_slice(MAGIC);
            hdr[8..16].copy_from_slice(&max_key.to_le_bytes());
            file.set_len(len).map_err(|e| e.to_string())?;
            file.write_all_at(&hdr, 0).map_err(|e| e.to_string())?;
            file.sync_all().map_err(|e| e.to_string())?;
            mem.extend((0..max_key).map(|_| AtomicU64::new(0)));
        }
        Ok((
            Expected {
                file,
                mem,
                lossy: AtomicBool::new(lossy),
            },
            existed,
        ))
    }

    pub fn get(&self, k: u64) -> Entry {
        Entry::decode(self.mem[k as usize].load(Ordering::Acquire))
    }

    fn store(&self, k: u64, e: Entry) -> Result<(), String> {
        let x = e.encode();
        self.mem[k as usize].store(x, Ordering::Release);
        self.file
            .write_all_at(&x.to_le_bytes(), HDR + 8 * k)
            .map_err(|e| format!("expected state write: {e}"))
    }

    /// Before the DB write.
    pub fn set_pending(&self, k: u64, new: u32) -> Result<(), String> {
        let c = self.get(k).committed;
        self.store(
            k,
            Entry {
                committed: c,
                pending: Some(new),
            },
        )
    }

    /// After the DB acknowledged it.
    pub fn commit(&self, k: u64, new: u32) -> Result<(), String> {
        self.store(
            k,
            Entry {
                committed: new,
                pending: None,
            },
        )
    }

    pub fn lossy(&self) -> bool {
        self.lossy.load(Ordering::Acquire)
    }

    pub fn set_lossy(&self, v: bool) -> Result<(), String> {
        self.lossy.store(v, Ordering::Release);
        self.file.write_all_at(&[v as u8], 16).map_err(|e| e.to_string())?;
        self.file.sync_data().map_err(|e| e.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// Randomized options.

#[derive(Clone, Debug)]
pub struct RunCfg {
    /// 0 never, 1 every write, 2 one write in 16.
    pub sync: u8,
    pub disable_wal: bool,
    /// PlainTable files: no delete_range, iterators move forward only.
    pub plain: bool,
    pub desc: String,
}

#[allow(clippy::field_reassign_with_default)] // one randomized field per line reads best here
pub fn random_options(seed: u64, sync_flag: i64, dwal_flag: i64, dyn_flag: i64) -> (Options, RunCfg) {
    let mut r = Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x0123);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(r.pick(&[16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20]));
    o.set_max_write_buffer_number(2 + r.below(3) as i32);
    let mut bbo = o.get_block_based_options();
    bbo.set_block_size(r.pick(&[256, 1024, 4096, 16384]));
    bbo.set_block_restart_interval(r.pick(&[1, 4, 16]));
    o.set_compression_type(r.pick(&[
        CompressionType::None,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ]));
    bbo.set_checksum_type(r.pick(&[
        ChecksumType::NoChecksum,
        ChecksumType::CRC32c,
        ChecksumType::XxHash,
        ChecksumType::XxHash64,
        ChecksumType::XXH3,
    ]));
    bbo.set_format_version(2 + r.below(5) as i32);
    bbo.set_bloom_filter(r.pick(&[0.0, 10.0]), false);
    bbo.set_lru_cache_capacity(r.pick(&[0, 1 << 20, 8 << 20]));
    o.set_block_based_table_factory(&bbo);
    o.set_level_zero_file_num_compaction_trigger(2 + r.below(3) as i32);
    o.set_target_file_size_base(r.pick(&[64 << 10, 256 << 10, 2 << 20]));
    o.set_max_bytes_for_level_base(r.pick(&[256 << 10, 1 << 20, 8 << 20]));
    o.set_max_subcompactions(1 + r.below(2) as u32);
    o.set_level_compaction_dynamic_level_bytes(r.below(4) != 0);
    if dyn_flag >= 0 {
        o.set_level_compaction_dynamic_level_bytes(dyn_flag == 1);
    }
    o.set_custom_merge_operator(shale::merge::merge_operator_by_name("uint64add").expect("uint64add"));
    let sync = match sync_flag {
        -1 => r.pick(&[0u8, 0, 1, 2, 2]),
        s => s as u8,
    };
    let disable_wal = match dwal_flag {
        -1 => r.below(6) == 0,
        d => d == 1,
    };
    let sync = if disable_wal { 0 } else { sync };
    if o.validate().is_err() {
        {
            let mut bbo = o.get_block_based_options();
            bbo.set_checksum_type(ChecksumType::CRC32c);
            o.set_block_based_table_factory(&bbo);
        }
    }
    let desc = format!(
        "write_buffer_size={} max_write_buffer_number={} block_size={} restart_interval={} compression={:?} \
         checksum={:?} format_version={} bloom_bits={} block_cache={} l0_trigger={} target_file_size={} \
         level_base={} subcompactions={} dynamic_levels={} sync={} disable_wal={}",
        o.get_write_buffer_size(),
        o.get_max_write_buffer_number(),
        o.get_block_size(),
        o.get_block_restart_interval(),
        o.get_compression(),
        o.get_checksum_type(),
        o.get_format_version(),
        o.get_bloom_bits_per_key(),
        o.get_block_cache_capacity(),
        o.get_level0_file_num_compaction_trigger(),
        o.get_target_file_size_base(),
        o.get_max_bytes_for_level_base(),
        o.get_max_subcompactions(),
        o.get_level_compaction_dynamic_level_bytes(),
        ["never", "always", "1/16"][sync as usize],
        disable_wal
    );
    (
        o,
        RunCfg {
            sync,
            disable_wal,
            plain: false,
            desc,
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Deliberately broken durability (to show the crash tests catch it).

/// Wraps a file system and breaks one durability step of WAL files (`*.log`).
pub struct BuggyFs {
    pub inner: Arc<dyn FileSystem>,
    /// "wal_no_sync": sync() of a WAL only flushes; "wal_no_flush": WAL bytes stay in a user-space
    /// buffer until sync().
    pub bug: String,
}

struct BuggyFile {
    inner: Box<dyn WritableFile>,
    bug: String,
    buf: Vec<u8>,
    size: u64,
}

impl WritableFile for BuggyFile {
    fn append(&mut self, data: &[u8]) -> shale::Result<()> {
        self.size += data.len() as u64;
        if self.bug == "wal_no_flush" {
            self.buf.extend_from_slice(data);
            Ok(())
        } else {
            self.inner.append(data)
        }
    }
    fn flush(&mut self) -> shale::Result<()> {
        if self.bug == "wal_no_flush" {
            Ok(())
        } else {
            self.inner.flush()
        }
    }
    fn sync(&mut self) -> shale::Result<()> {
        if self.bug == "wal_no_sync" {
            return self.inner.flush();
        }
        if !self.buf.is_empty() {
            self.inner.append(&std::mem::take(&mut self.buf))?;
        }
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.size
    }
}

impl FileSystem for BuggyFs {
    fn create_dir_all(&self, p: &Path) -> shale::Result<()> {
        self.inner.create_dir_all(p)
    }
    fn new_writable(&self, p: &Path) -> shale::Result<Box<dyn WritableFile>> {
        let w = self.inner.new_writable(p)?;
        if p.extension().is_some_and(|e| e == "log") {
            Ok(Box::new(BuggyFile {
                inner: w,
                bug: self.bug.clone(),
                buf: Vec::new(),
                size: 0,
            }))
        } else {
            Ok(w)
        }
    }
    fn open_random(&self, p: &Path) -> shale::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_random(p)
    }
    fn read_all(&self, p: &Path) -> shale::Result<Vec<u8>> {
        self.inner.read_all(p)
    }
    fn rename(&self, a: &Path, b: &Path) -> shale::Result<()> {
        self.inner.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> shale::Result<()> {
        self.inner.remove_file(p)
    }
    fn remove_dir(&self, p: &Path) -> shale::Result<()> {
        self.inner.remove_dir(p)
    }
    fn list(&self, d: &Path) -> shale::Result<Vec<String>> {
        self.inner.list(d)
    }
    fn exists(&self, p: &Path) -> bool {
        self.inner.exists(p)
    }
    fn file_size(&self, p: &Path) -> shale::Result<u64> {
        self.inner.file_size(p)
    }
    fn sync_dir(&self, d: &Path) -> shale::Result<()> {
        self.inner.sync_dir(d)
    }
    fn lock(&self, p: &Path) -> shale::Result<Box<dyn FileLock>> {
        self.inner.lock(p)
    }
}

// ---------------------------------------------------------------------------------------------
// The stress run.

struct Ctx {
    db: RwLock<Option<DB>>,
    path: PathBuf,
    opts: Options,
    cfg: RunCfg,
    exp: Expected,
    locks: Vec<Mutex<()>>,
    max_key: u64,
    seed: u64,
    failed: AtomicBool,
    first_error: Mutex<Option<String>>,
    ops: AtomicU64,
    reads_checked: AtomicU64,
    stop: AtomicBool,
    /// Fault injection (`--*_fault_one_in`): its switch and counters.
    faults: Option<FaultSwitch>,
    fault_counts: Arc<FaultCounts>,
    /// Keys whose last write failed under fault injection: the DB may hold the old or the new
    /// value (their expected entries stay pending) until the reopen that settles them. They are
    /// not written again before that (the oracle keeps one pending value per key).
    doubt: Mutex<HashSet<u64>>,
    /// A write failed under fault injection: the DB may be stopped; reopen and verify.
    needs_reopen: AtomicBool,
    errors_tolerated: AtomicU64,
    fault_reopens: AtomicU64,
    fault_resumes: AtomicU64,
}

impl Ctx {
    fn fail(&self, msg: String) {
        eprintln!("shale stress: {msg} (seed {})", self.seed);
        let mut fe = self.first_error.lock().unwrap();
        if fe.is_none() {
            *fe = Some(msg);
        }
        self.failed.store(true, Ordering::Release);
        self.stop.store(true, Ordering::Release);
    }

    fn mismatch(&self, what: &str, k: u64, expected: String, actual: Option<&[u8]>) {
        self.fail(format!(
            "MISMATCH in {what}: key {k} (0x{}) expected {expected}, actual {}",
            hex(&key_bytes(k)),
            describe(k, actual)
        ));
    }

    fn set_faults(&self, on: bool) {
        if let Some(f) = &self.faults {
            f.set_enabled(on);
        }
    }

    fn in_doubt(&self, k: u64) -> bool {
        self.faults.is_some() && self.doubt.lock().unwrap().contains(&k)
    }

    /// The result of a read: with fault injection an error is expected now and then (EIO, or
    /// Corruption from a flipped bit) and the read is skipped (None); otherwise it fails the run.
    fn read_ok<T>(&self, what: &str, r: shale::Result<T>) -> Result<Option<T>, String> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(e) if self.faults.is_some() && (e.is_io() || e.is_corruption()) => {
                self.errors_tolerated.fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(format!("{what} failed: {e}")),
        }
    }

    /// The result of a write of `keys` (whose expected entries are pending): true when it was
    /// acknowledged. With fault injection a failed write leaves its keys pending and in doubt
    /// and asks for a reopen; otherwise an error fails the run.
    fn write_ok(&self, what: &str, keys: &[u64], r: shale::Result<()>) -> Result<bool, String> {
        match r {
            Ok(()) => Ok(true),
            Err(e) if self.faults.is_some() => {
                if !(e.is_io() || e.is_corruption() || matches!(e, shale::Error::Background(_))) {
                    return Err(format!(
                        "{what} failed with an unexpected error under fault injection: {e}"
                    ));
                }
                self.doubt.lock().unwrap().extend(keys.iter().copied());
                self.errors_tolerated.fetch_add(1, Ordering::Relaxed);
                self.needs_reopen.store(true, Ordering::Release);
                Ok(false)
            }
            Err(e) => Err(format!("{what} failed: {e}")),
        }
    }

    fn lock_key(&self, k: u64) -> MutexGuard<'_, ()> {
        self.locks[k as usize].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Exact check of a read done while holding the key's lock.
    fn check(&self, what: &str, k: u64, vid: u32, actual: Option<&[u8]>) -> bool {
        if self.in_doubt(k) {
            return true;
        }
        self.reads_checked.fetch_add(1, Ordering::Relaxed);
        let ok = match actual {
            None => vid == 0,
            Some(v) => vid != 0 && v == value_of(k, vid).as_slice(),
        };
        if !ok {
            self.mismatch(what, k, vid_desc(vid), actual);
        }
        ok
    }

    fn wo(&self, rng: &mut Rng) -> WriteOptions {
        {
            let mut o = WriteOptions::default();
            o.set_sync(match self.cfg.sync {
                1 => true,
                2 => rng.below(16) == 0,
                _ => false,
            });
            o.disable_wal(self.cfg.disable_wal);
            o
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn expected_path(fl: &Flags) -> PathBuf {
    match fl.str("expected_values_path") {
        "" => PathBuf::from(format!("{}.expected", fl.str("db").trim_end_matches('/'))),
        p => PathBuf::from(p),
    }
}

pub fn run(fl: &Flags) -> Result<(), String> {
    let path = PathBuf::from(fl.str("db"));
    let epath = expected_path(fl);
    let seed = fl.u64("seed");
    let max_key = fl.u64("max_key");
    let (mut opts, mut cfg) = random_options(seed, fl.i64("sync"), fl.i64("disable_wal"), fl.i64("dynamic_levels"));
    opts.set_wal_recovery_mode(wal_mode(fl.i64("wal_recovery_mode"), seed));
    cfg.desc
        .push_str(&format!(" wal_recovery_mode={:?}", opts.get_wal_recovery_mode()));
    cfg.plain = match fl.i64("table_format") {
        -1 => mix(seed ^ 0x71A1).is_multiple_of(6),
        f => f == 1,
    };
    if cfg.plain {
        // Variable-length keys in total order (no prefix extractor).
        opts.set_plain_table_factory(&shale::PlainTableOptions {
            user_key_len: 0,
            hash_table_ratio: 0.0,
            ..Default::default()
        });
        cfg.desc.push_str(" table_format=plain");
    }
    let rates = FaultRates {
        read_one_in: fl.u64("read_fault_one_in"),
        write_one_in: fl.u64("write_fault_one_in"),
        bitflip_one_in: fl.u64("bitflip_read_one_in"),
    };
    // Bit flips go only into reads of files with block checksums (`faultinj`): without them a
    // flipped bit is undetectable, in RocksDB too.
    let fault_counts = Arc::new(FaultCounts::default());
    let mut faults = None;
    if rates.any() {
        let ffs = RandomFaultFs::new(opts.get_env().clone(), rates, mix(seed ^ 0xFA17), fault_counts.clone());
        let sw = ffs.switch();
        sw.set_enabled(false);
        faults = Some(sw);
        opts.set_env(Arc::new(ffs));
        cfg.desc.push_str(&format!(
            " faults: read 1/{} write 1/{} bitflip 1/{}",
            rates.read_one_in, rates.write_one_in, rates.bitflip_one_in
        ));
    }
    if !fl.str("inject_bug").is_empty() {
        opts.set_env(Arc::new(BuggyFs {
            inner: opts.get_env().clone(),
            bug: fl.str("inject_bug").to_string(),
        }));
    }
    if fl.u64("kill_odds") > 0 {
        let hook = crate::hookfs::kill_hook(
            fl.u64("kill_odds"),
            mix(seed ^ 0x4B11),
            fl.str("kill_point").to_string(),
        );
        opts.set_env(Arc::new(crate::hookfs::HookFs {
            inner: opts.get_env().clone(),
            hook,
        }));
    }
    if fl.bool("destroy_db_initially") {
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| format!("cannot destroy {}: {e}", path.display()))?;
        }
        if epath.exists() {
            std::fs::remove_file(&epath).map_err(|e| format!("cannot remove {}: {e}", epath.display()))?;
        }
    }
    let db_existed = path.join("CURRENT").exists();
    let (exp, existed) = Expected::open(&epath, max_key)?;
    if db_existed && !existed {
        return Err(format!(
            "{} exists but its expected state {} does not (use --destroy_db_initially)",
            path.display(),
            epath.display()
        ));
    }
    if !db_existed
        && existed
        && (0..max_key).any(|k| {
            exp.get(k)
                != Entry {
                    committed: 0,
                    pending: None,
                }
        })
    {
        return Err(format!(
            "the expected state {} is not empty but the database {} is missing",
            epath.display(),
            path.display()
        ));
    }
    println!("stress: seed={seed} db={} {}", path.display(), cfg.desc);
    let t0 = Instant::now();
    let db = DB::open(&opts, &path).map_err(|e| format!("open {}: {e}", path.display()))?;
    println!("stress: opened in {:.3}s", t0.elapsed().as_secs_f64());
    let ctx = Arc::new(Ctx {
        db: RwLock::new(Some(db)),
        path,
        opts,
        cfg,
        exp,
        locks: (0..max_key).map(|_| Mutex::new(())).collect(),
        max_key,
        seed,
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
        ops: AtomicU64::new(0),
        reads_checked: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        faults,
        fault_counts,
        doubt: Mutex::new(HashSet::new()),
        needs_reopen: AtomicBool::new(false),
        errors_tolerated: AtomicU64::new(0),
        fault_reopens: AtomicU64::new(0),
        fault_resumes: AtomicU64::new(0),
    });
    if existed && (fl.bool("verify") || fl.bool("verify_only")) {
        let n = verify_all(&ctx)?;
        println!("stress: verified {n} keys");
    }
    if fl.bool("verify_only") {
        return Ok(());
    }
    if ctx.cfg.disable_wal {
        ctx.exp.set_lossy(true)?;
    }
    ctx.set_faults(true);
    let threads = fl.i64("threads") as usize;
    let duration = fl.u64("duration");
    let ops_per_thread = fl.u64("ops_per_thread");
    let reopen = fl.u64("reopen");
    let start = Instant::now();
    let mut hs = Vec::new();
    for tid in 0..threads {
        let ctx = ctx.clone();
        hs.push(std::thread::spawn(move || {
            worker(&ctx, tid, duration, ops_per_thread, reopen, start)
        }));
    }
    // Progress lines for the crash test driver.
    while !hs.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(200));
        println!(
            "stress: progress ops={} reads_checked={} faults={} fault_reopens={}",
            ctx.ops.load(Ordering::Relaxed),
            ctx.reads_checked.load(Ordering::Relaxed),
            ctx.fault_counts.total(),
            ctx.fault_reopens.load(Ordering::Relaxed)
        );
    }
    for h in hs {
        if h.join().is_err() {
            ctx.fail("a worker thread panicked".into());
        }
    }
    ctx.set_faults(false);
    if !ctx.failed.load(Ordering::Acquire) {
        // Close, reopen and verify everything once more.
        if ctx.needs_reopen.load(Ordering::Acquire) {
            recover_after_fault(&ctx)?;
        }
        reopen_db(&ctx)?;
        let n = verify_all(&ctx)?;
        println!("stress: final verification of {n} keys passed");
    }
    if ctx.failed.load(Ordering::Acquire) {
        return Err(ctx.first_error.lock().unwrap().clone().unwrap_or_default());
    }
    if ctx.faults.is_some() {
        println!(
            "stress: faults injected={} ({}) errors_tolerated={} reopens_after_fault={} resumes_after_fault={}",
            ctx.fault_counts.total(),
            ctx.fault_counts.describe(),
            ctx.errors_tolerated.load(Ordering::Relaxed),
            ctx.fault_reopens.load(Ordering::Relaxed),
            ctx.fault_resumes.load(Ordering::Relaxed)
        );
    }
    println!(
        "stress: OK ops={} reads_checked={} elapsed={:.1}s",
        ctx.ops.load(Ordering::Relaxed),
        ctx.reads_checked.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The WAL recovery mode of a run: the flag, or (-1) one chosen by the seed among the modes
/// that must keep every acknowledged write after a crash.
fn wal_mode(flag: i64, seed: u64) -> WalRecoveryMode {
    let m = if flag >= 0 {
        flag as u64
    } else {
        [0, 2, 2, 3][(mix(seed ^ 0x5741) % 4) as usize]
    };
    match m {
        0 => WalRecoveryMode::TolerateCorruptedTailRecords,
        1 => WalRecoveryMode::AbsoluteConsistency,
        3 => WalRecoveryMode::SkipAnyCorruptedRecords,
        _ => WalRecoveryMode::PointInTimeRecovery,
    }
}

/// Close and reopen the database. After a clean close the WAL must be intact, so the reopen
/// uses absolute consistency (any WAL corruption fails it). Faults are off meanwhile.
fn reopen_db(ctx: &Ctx) -> Result<(), String> {
    let mut g = ctx.db.write().unwrap_or_else(|p| p.into_inner());
    if ctx.needs_reopen.load(Ordering::Acquire) {
        // A write failed under fault injection: the close may not be clean.
        drop(g);
        return recover_after_fault(ctx);
    }
    let was = ctx.faults.as_ref().is_some_and(|f| f.enabled());
    ctx.set_faults(false);
    *g = None;
    let mut o = ctx.opts.clone();
    o.set_wal_recovery_mode(WalRecoveryMode::AbsoluteConsistency);
    let r = DB::open(&o, &ctx.path).map_err(|e| format!("reopen after a clean close {}: {e}", ctx.path.display()));
    *g = Some(r?);
    ctx.set_faults(was);
    Ok(())
}

/// After a failed write under fault injection: close the (possibly stopped) database, reopen it
/// with faults off, verify every key (settling the keys in doubt) and go on.
fn recover_after_fault(ctx: &Ctx) -> Result<(), String> {
    let mut g = ctx.db.write().unwrap_or_else(|p| p.into_inner());
    if !ctx.needs_reopen.load(Ordering::Acquire) {
        return Ok(());
    }
    let was = ctx.faults.as_ref().is_some_and(|f| f.enabled());
    ctx.set_faults(false);
    // Every other time, try `resume()` (RocksDB's way back from a background error: it switches
    // to a new WAL and flushes) before falling back to a reopen.
    let n = ctx.fault_reopens.load(Ordering::Relaxed) + ctx.fault_resumes.load(Ordering::Relaxed);
    let resumed = n % 2 == 1 && g.as_ref().is_some_and(|db| db.resume().is_ok());
    if resumed {
        verify_db(ctx, g.as_ref().expect("checked"))?;
        ctx.fault_resumes.fetch_add(1, Ordering::Relaxed);
    } else {
        *g = None;
        let db = DB::open(&ctx.opts, &ctx.path)
            .map_err(|e| format!("reopen after an injected fault {}: {e}", ctx.path.display()))?;
        verify_db(ctx, &db)?;
        *g = Some(db);
        ctx.fault_reopens.fetch_add(1, Ordering::Relaxed);
    }
    if ctx.cfg.disable_wal {
        // Writes without the WAL live only in memtables until a flush: the next fault may
        // lose them again.
        ctx.exp.set_lossy(true)?;
    }
    ctx.doubt.lock().unwrap().clear();
    ctx.needs_reopen.store(false, Ordering::Release);
    ctx.set_faults(was);
    Ok(())
}

/// Verify every key against the expected state (tolerating pending writes and, after a lossy
/// run, lost writes), settle what the DB holds, then check a full forward scan.
fn verify_all(ctx: &Ctx) -> Result<u64, String> {
    let g = ctx.db.read().unwrap();
    verify_db(ctx, g.as_ref().unwrap())
}

fn verify_db(ctx: &Ctx, db: &DB) -> Result<u64, String> {
    let lossy = ctx.exp.lossy();
    let mut bad = 0u64;
    let sd = sd_start(ctx.max_key);
    for k in 0..ctx.max_key {
        let e = ctx.exp.get(k);
        // What the DB holds for k: Some(value id, 0 = absent) or None (not a valid value).
        let (got, actual) = if k < sd {
            let actual = db
                .get(key_bytes(k))
                .map_err(|e| format!("get key {k} during verification: {e}"))?;
            let got = match &actual {
                None => Some(0),
                Some(v) => decode_value(k, v),
            };
            (got, describe(k, actual.as_deref()))
        } else {
            let mut ro = ReadOptions::default();
            ro.set_iterate_lower_bound(key_bytes(k).to_vec());
            ro.set_iterate_upper_bound(key_bytes(k + 1).to_vec());
            let mut it = db.raw_iterator_opt(ro);
            it.seek_to_first();
            let mut found = Vec::new();
            while it.valid() && found.len() < 4 {
                found.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
                it.next();
            }
            it.status()
                .map_err(|e| format!("scan of key {k} during verification: {e}"))?;
            match found.as_slice() {
                [] => (Some(0), "absent".to_string()),
                [(key, v)] => match parse_phys(key, ctx.max_key) {
                    Some((_, Some(s))) if v.as_slice() == value_of(k, s).as_slice() => {
                        (Some(s), format!("value id {s}"))
                    }
                    _ => (None, format!("key 0x{} with {}", hex(key), describe(k, Some(v)))),
                },
                many => (None, format!("{} versions", many.len())),
            }
        };
        let ok = match got {
            Some(g) => g == e.committed || e.pending == Some(g) || lossy,
            None => false,
        };
        if !ok {
            bad += 1;
            if bad <= 20 {
                ctx.fail(format!(
                    "MISMATCH in verification: key {k} (0x{}) expected {}{}, actual {actual}",
                    hex(&key_bytes(k)),
                    e.describe(),
                    if lossy { " (or any value: lossy run)" } else { "" },
                ));
            }
            continue;
        }
        let g = got.unwrap();
        if e.pending.is_some() || g != e.committed {
            ctx.exp.commit(k, g)?;
        }
    }
    if bad > 0 {
        return Err(format!("{bad} of {} keys do not match the expected state", ctx.max_key));
    }
    // A full scan must show exactly the expected keys.
    let mut it = db.raw_iterator();
    it.seek_to_first();
    let mut next_k = 0u64;
    while it.valid() {
        let key = it.key().unwrap();
        let Some((k, suffix)) = parse_phys(key, ctx.max_key) else {
            return Err(format!("scan: unexpected key 0x{}", hex(key)));
        };
        if k < next_k {
            return Err(format!("scan: key {k} out of order"));
        }
        for missing in next_k..k {
            let c = ctx.exp.get(missing).committed;
            if c != 0 {
                ctx.mismatch("verification scan", missing, vid_desc(c), None);
                return Err(format!("scan misses key {missing}"));
            }
        }
        let c = ctx.exp.get(k).committed;
        if c == 0 || suffix.is_some_and(|s| s != c) || it.value().unwrap() != value_of(k, c).as_slice() {
            ctx.mismatch("verification scan", k, vid_desc(c), it.value());
            return Err(format!("scan disagrees at key {k}"));
        }
        next_k = k + 1;
        it.next();
    }
    it.status().map_err(|e| format!("scan: {e}"))?;
    for missing in next_k..ctx.max_key {
        let c = ctx.exp.get(missing).committed;
        if c != 0 {
            ctx.mismatch("verification scan", missing, vid_desc(c), None);
            return Err(format!("scan misses key {missing}"));
        }
    }
    ctx.reads_checked.fetch_add(2 * ctx.max_key, Ordering::Relaxed);
    if lossy {
        ctx.exp.set_lossy(false)?;
    }
    Ok(ctx.max_key)
}

/// Distinct sorted random keys in `lo..hi`.
fn rand_keys(rng: &mut Rng, lo: u64, hi: u64, n: usize) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|_| lo + rng.below(hi - lo)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn worker(ctx: &Ctx, tid: usize, duration: u64, ops_per_thread: u64, reopen: u64, start: Instant) {
    let mut rng = Rng::new(ctx.seed.wrapping_mul(1_000_003).wrapping_add(tid as u64 * 7919 + 1));
    let mut done = 0u64;
    let mut reopens_done = 0u64;
    while !ctx.stop.load(Ordering::Acquire) {
        if duration > 0 {
            if start.elapsed().as_secs() >= duration {
                break;
            }
        } else if done >= ops_per_thread {
            break;
        }
        if tid == 0 && reopens_done < reopen {
            let due = if duration > 0 {
                start.elapsed().as_secs_f64() >= duration as f64 * (reopens_done + 1) as f64 / (reopen + 1) as f64
            } else {
                done >= ops_per_thread * (reopens_done + 1) / (reopen + 1)
            };
            if due {
                reopens_done += 1;
                if let Err(e) = reopen_db(ctx) {
                    ctx.fail(e);
                    break;
                }
                done += 1;
                continue;
            }
        }
        if ctx.needs_reopen.load(Ordering::Acquire) {
            if let Err(e) = recover_after_fault(ctx) {
                ctx.fail(e);
                break;
            }
        }
        if let Err(e) = one_op(ctx, &mut rng) {
            ctx.fail(e);
            break;
        }
        done += 1;
        ctx.ops.fetch_add(1, Ordering::Relaxed);
    }
}

/// One random operation. Returns Err on an engine error; mismatches are reported via `ctx`.
fn one_op(ctx: &Ctx, rng: &mut Rng) -> Result<(), String> {
    let g = ctx.db.read().unwrap_or_else(|p| p.into_inner());
    let db = g.as_ref().ok_or("database is closed")?;
    let mk = ctx.max_key;
    // The no-overwrite region for single_delete.
    let sd_start = sd_start(mk);
    let pk = |k: u64, vid: u32| phys_key(k, vid, mk);
    let p = rng.below(1000);
    match p {
        // get
        0..=199 => {
            let k = rng.below(mk);
            let _l = ctx.lock_key(k);
            let c = ctx.exp.get(k).committed;
            if k >= sd_start && c == 0 {
                // No DB key to get: check the key's whole prefix is empty.
                scan_check(ctx, db, rng, k, k + 1, &[], None)?;
            } else {
                if let Some(v) = ctx.read_ok("get", db.get(pk(k, c)))? {
                    ctx.check("get", k, c, v.as_deref());
                }
            }
        }
        // multi_get
        200..=249 => {
            let n = 1 + rng.below(8) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(k)).collect();
            let kv: Vec<(u64, u32)> = ks
                .iter()
                .map(|&k| (k, ctx.exp.get(k).committed))
                .filter(|&(k, c)| k < sd_start || c != 0)
                .collect();
            let rs = db.multi_get(kv.iter().map(|&(k, c)| pk(k, c)));
            for (&(k, c), r) in kv.iter().zip(rs) {
                let Some(v) = ctx.read_ok("multi_get", r)? else {
                    continue;
                };
                if !ctx.check("multi_get", k, c, v.as_deref()) {
                    break;
                }
            }
        }
        // bounded scan, either direction
        250..=329 => {
            let lo = rng.below(mk);
            let hi = (lo + 1 + rng.below(32)).min(mk);
            let _ls: Vec<_> = (lo..hi).map(|k| ctx.lock_key(k)).collect();
            let want: Vec<(u64, u32)> = (lo..hi)
                .map(|k| (k, ctx.exp.get(k).committed))
                .filter(|(_, v)| *v != 0)
                .collect();
            scan_check(ctx, db, rng, lo, hi, &want, None)?;
        }
        // snapshot: record, let others write, read through the snapshot
        330..=359 => {
            let n = 1 + rng.below(8) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let (snap, want) = {
                let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(k)).collect();
                let want: Vec<u32> = ks.iter().map(|&k| ctx.exp.get(k).committed).collect();
                (db.snapshot(), want)
            };
            std::thread::yield_now();
            let mut ro = ReadOptions::default();
            ro.set_snapshot(&snap);
            for (k, w) in ks.iter().zip(&want) {
                if *k >= sd_start && *w == 0 {
                    continue;
                }
                let Some(v) = ctx.read_ok("snapshot get", db.get_opt(pk(*k, *w), &ro))? else {
                    continue;
                };
                if !ctx.check("snapshot get", *k, *w, v.as_deref()) {
                    break;
                }
            }
            if ks.len() == 1 {
                // A bounded scan of the single key through the snapshot.
                let k = ks[0];
                let want: Vec<(u64, u32)> = if want[0] != 0 { vec![(k, want[0])] } else { vec![] };
                scan_check(ctx, db, rng, k, k + 1, &want, Some(&snap))?;
            }
        }
        // put / single_delete in the no-overwrite region
        360..=609 => {
            let k = rng.below(mk);
            let _l = ctx.lock_key(k);
            if ctx.in_doubt(k) {
                return Ok(());
            }
            let old = ctx.exp.get(k).committed;
            let wo = ctx.wo(rng);
            if k >= sd_start && old != 0 {
                ctx.exp.set_pending(k, 0)?;
                if ctx.write_ok("single_delete", &[k], db.single_delete_opt(pk(k, old), &wo))? {
                    ctx.exp.commit(k, 0)?;
                }
            } else {
                let new = new_vid(rng, k, false);
                ctx.exp.set_pending(k, new)?;
                if ctx.write_ok("put", &[k], db.put_opt(pk(k, new), value_of(k, new), &wo))? {
                    ctx.exp.commit(k, new)?;
                }
            }
        }
        // delete
        610..=669 => {
            let k = rng.below(sd_start.max(1));
            if k >= sd_start {
                return Ok(());
            }
            let _l = ctx.lock_key(k);
            if ctx.in_doubt(k) {
                return Ok(());
            }
            let wo = ctx.wo(rng);
            ctx.exp.set_pending(k, 0)?;
            if ctx.write_ok("delete", &[k], db.delete_opt(key_bytes(k), &wo))? {
                ctx.exp.commit(k, 0)?;
            }
        }
        // delete_range (block-based tables only)
        670..=699 => {
            if sd_start == 0 || ctx.cfg.plain {
                return Ok(());
            }
            let lo = rng.below(sd_start);
            let hi = (lo + 1 + rng.below(16)).min(sd_start);
            let _ls: Vec<_> = (lo..hi).map(|k| ctx.lock_key(k)).collect();
            if (lo..hi).any(|k| ctx.in_doubt(k)) {
                return Ok(());
            }
            let wo = ctx.wo(rng);
            for k in lo..hi {
                ctx.exp.set_pending(k, 0)?;
            }
            let keys: Vec<u64> = (lo..hi).collect();
            let r = db.delete_range_opt(key_bytes(lo), key_bytes(hi), &wo);
            if ctx.write_ok("delete_range", &keys, r)? {
                for k in lo..hi {
                    ctx.exp.commit(k, 0)?;
                }
            }
        }
        // merge (uint64add)
        700..=799 => {
            if sd_start == 0 {
                return Ok(());
            }
            let k = rng.below(sd_start);
            let _l = ctx.lock_key(k);
            if ctx.in_doubt(k) {
                return Ok(());
            }
            let old = ctx.exp.get(k).committed;
            let new = new_vid(rng, k, true);
            let wo = ctx.wo(rng);
            ctx.exp.set_pending(k, new)?;
            if ctx.write_ok(
                "merge",
                &[k],
                db.merge_opt(key_bytes(k), merge_operand(k, old, new), &wo),
            )? {
                ctx.exp.commit(k, new)?;
            }
        }
        // write batch of distinct keys, mixed operations
        800..=989 => {
            let n = 1 + rng.below(10) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(k)).collect();
            if ks.iter().any(|&k| ctx.in_doubt(k)) {
                return Ok(());
            }
            let mut b = WriteBatch::new();
            let mut news = Vec::with_capacity(ks.len());
            for &k in &ks {
                let old = ctx.exp.get(k).committed;
                let new = if k >= sd_start {
                    if old != 0 {
                        b.single_delete(pk(k, old));
                        0
                    } else {
                        let n = new_vid(rng, k, false);
                        b.put(pk(k, n), value_of(k, n));
                        n
                    }
                } else {
                    match rng.below(10) {
                        0..=5 => {
                            let n = new_vid(rng, k, false);
                            b.put(key_bytes(k), value_of(k, n));
                            n
                        }
                        6 | 7 => {
                            b.delete(key_bytes(k));
                            0
                        }
                        _ => {
                            let n = new_vid(rng, k, true);
                            b.merge(key_bytes(k), merge_operand(k, old, n));
                            n
                        }
                    }
                };
                ctx.exp.set_pending(k, new)?;
                news.push(new);
            }
            let wo = ctx.wo(rng);
            if ctx.write_ok("write batch", &ks, db.write_opt(b, &wo))? {
                for (&k, &n) in ks.iter().zip(&news) {
                    ctx.exp.commit(k, n)?;
                }
            }
        }
        // flush
        990..=995 => {
            ctx.write_ok("flush", &[], db.flush())?;
        }
        // compact_range
        _ => {
            let lo = rng.below(mk);
            let hi = (lo + 1 + rng.below(mk / 4 + 1)).min(mk);
            ctx.write_ok(
                "compact_range",
                &[],
                db.compact_range(Some(&key_bytes(lo)), Some(&key_bytes(hi))),
            )?;
        }
    }
    Ok(())
}

/// Scan `lo..hi` with iterator bounds (forward or backward, from the ends or from a seek) and
/// compare with `want`.
fn scan_check(
    ctx: &Ctx,
    db: &DB,
    rng: &mut Rng,
    lo: u64,
    hi: u64,
    want: &[(u64, u32)],
    snap: Option<&shale::Snapshot>,
) -> Result<(), String> {
    let mut ro = ReadOptions::default();
    if let Some(s) = snap {
        ro.set_snapshot(s);
    }
    ro.set_iterate_lower_bound(key_bytes(lo).to_vec());
    ro.set_iterate_upper_bound(key_bytes(hi).to_vec());
    let mut it = db.raw_iterator_opt(ro);
    // Plain tables iterate forward only (as in RocksDB).
    let forward = rng.below(2) == 0 || ctx.cfg.plain;
    let mut got = Vec::new();
    // Position from the bound itself or by a seek to a key within/around the range.
    match (forward, rng.below(3)) {
        (true, 0) => it.seek_to_first(),
        (true, _) => it.seek(key_bytes(lo)),
        (false, 0) => it.seek_to_last(),
        (false, _) => {
            // At or before the greatest DB key of logical key hi - 1.
            let mut t = key_bytes(hi - 1).to_vec();
            t.extend_from_slice(&[0xff; 4]);
            it.seek_for_prev(t)
        }
    }
    while it.valid() {
        got.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        if got.len() > want.len() + 1 {
            break;
        }
        if forward {
            it.next()
        } else {
            it.prev()
        }
    }
    if ctx.read_ok("iterator", it.status())?.is_none() || (lo..hi).any(|k| ctx.in_doubt(k)) {
        return Ok(());
    }
    if !forward {
        got.reverse();
    }
    let what = if forward { "forward scan" } else { "backward scan" };
    let what = if snap.is_some() {
        format!("snapshot {what} [{lo}, {hi})")
    } else {
        format!("{what} [{lo}, {hi})")
    };
    ctx.reads_checked.fetch_add(want.len().max(1) as u64, Ordering::Relaxed);
    for i in 0..want.len().max(got.len()) {
        let g = got.get(i).map(|(key, v)| (parse_phys(key, ctx.max_key), key, v));
        match (want.get(i), g) {
            (_, Some((None, key, v))) => {
                ctx.fail(format!(
                    "MISMATCH in {what}: a foreign key 0x{} (value {} bytes)",
                    hex(key),
                    v.len()
                ));
                return Ok(());
            }
            (Some(&(k, vid)), Some((Some((gk, suf)), _, v))) if gk == k => {
                if suf.is_some_and(|s| s != vid) || v.as_slice() != value_of(k, vid).as_slice() {
                    let actual = match suf {
                        Some(s) if s != vid => format!("a version with value id {s} in its key"),
                        _ => describe(k, Some(v)),
                    };
                    ctx.fail(format!(
                        "MISMATCH in {what}: key {k} expected {}, actual {actual}",
                        vid_desc(vid)
                    ));
                }
                if ctx.failed.load(Ordering::Acquire) {
                    return Ok(());
                }
            }
            (Some(&(k, vid)), other) => {
                // The scan lacks k (or shows another key first).
                match other {
                    Some((Some((g, _)), _, v)) if g < k => ctx.mismatch(&what, g, "absent".into(), Some(v)),
                    _ => ctx.mismatch(&what, k, vid_desc(vid), None),
                }
                return Ok(());
            }
            (None, Some((Some((g, _)), _, v))) => {
                ctx.mismatch(&what, g, "absent".into(), Some(v));
                return Ok(());
            }
            (None, None) => unreachable!(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_roundtrip_and_merge_operands_add_up() {
        let mut r = Rng::new(1);
        for k in [0u64, 1, 77, 1 << 40] {
            let a = new_vid(&mut r, k, false);
            assert_eq!(decode_value(k, &value_of(k, a)), Some(a));
            assert_eq!(decode_value(k + 1, &value_of(k, a)), None);
            let b = new_vid(&mut r, k, true);
            assert_eq!(value_of(k, b).len(), 8);
            let op = merge_operand(k, a, b);
            let existing = value_of(k, a);
            let prev = if existing.len() == 8 {
                u64::from_le_bytes(existing[..8].try_into().unwrap())
            } else {
                0
            };
            let res = prev.wrapping_add(u64::from_le_bytes(op)).to_le_bytes();
            assert_eq!(decode_value(k, &res), Some(b));
        }
    }

    #[test]
    fn entries_encode() {
        for e in [
            Entry {
                committed: 0,
                pending: None,
            },
            Entry {
                committed: MAX_VID,
                pending: Some(0),
            },
            Entry {
                committed: 5,
                pending: Some(MAX_VID),
            },
        ] {
            assert_eq!(Entry::decode(e.encode()), e);
        }
    }
}
