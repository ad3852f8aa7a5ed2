//! The stress run (`shale stress` without `--crash_test` / `--power_loss`): worker threads run
//! the random mix of operations and check every read against the expected state.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use shale::{ColumnFamily, DBRecoveryMode, Options, ReadOptions, WriteBatch, WriteOptions, DB};

use super::fault_fs::{FaultCounts, FaultRates, FaultSwitch, RandomFaultFs};
use super::ingest::{checkpoint_op, ingest_op, IngestCtx};
use super::model::{
    cf_name, decode_value, describe, expected_path, family_options, key_bytes, merge_operand, mix, new_vid,
    num_families, phys_key, random_options, sd_start, value_of, vid_desc, BuggyFs, Entry, Expected, Rng, RunCfg,
};
use super::prefix::PrefixCtx;
use super::txn::{commit_ops, counter_op, open_stress_db, txn_write, StressDb, TxnBug, TxnCtx, TxnMode};
use super::txn_files::{counters_path, inflight_path, verify_counters};
use super::verify::{flush_before_close, scan_check, verify_all, verify_db};
use crate::flags::Flags;

// ---------------------------------------------------------------------------------------------
// The stress run.

pub(crate) struct Ctx {
    pub(crate) db: RwLock<Option<StressDb>>,
    pub(crate) path: PathBuf,
    pub(crate) opts: Options,
    /// The options of families 1.. (none with one family).
    pub(crate) fam_opts: Vec<Options>,
    /// The number of column families; the expected state and the locks are by slot
    /// (`family * max_key + key`), and values are derived from the slot.
    pub(crate) fams: u64,
    pub(crate) cfg: RunCfg,
    pub(crate) exp: Expected,
    pub(crate) locks: Vec<Mutex<()>>,
    pub(crate) max_key: u64,
    pub(crate) seed: u64,
    pub(crate) failed: AtomicBool,
    pub(crate) first_error: Mutex<Option<String>>,
    pub(crate) ops: AtomicU64,
    pub(crate) reads_checked: AtomicU64,
    pub(crate) stop: AtomicBool,
    /// Fault injection (`--*_fault_one_in`): its switch and counters.
    pub(crate) faults: Option<FaultSwitch>,
    pub(crate) fault_counts: Arc<FaultCounts>,
    /// Keys whose last write failed under fault injection: the DB may hold the old or the new
    /// value (their expected entries stay pending) until the reopen that settles them. They are
    /// not written again before that (the oracle keeps one pending value per key).
    pub(crate) doubt: Mutex<HashSet<u64>>,
    /// A write failed under fault injection: the DB may be stopped; reopen and verify.
    pub(crate) needs_reopen: AtomicBool,
    pub(crate) errors_tolerated: AtomicU64,
    pub(crate) fault_reopens: AtomicU64,
    pub(crate) fault_resumes: AtomicU64,
    /// `--use_txn` / `--use_optimistic_txn`: the mode, the counters' oracle, the statistics.
    pub(crate) txn: TxnCtx,
    /// `--ingest_external_file_one_in` / `--checkpoint_one_in` (`ingest`).
    pub(crate) ing: IngestCtx,
    /// The prefix extractor now, and its changes (`prefix`).
    pub(crate) prefix: PrefixCtx,
    /// `--secondary_catch_up_one_in` (`secondary`).
    pub(crate) sec: super::secondary::SecondaryCtx,
}

impl Ctx {
    pub(crate) fn fail(&self, msg: String) {
        eprintln!("shale stress: {msg} (seed {})", self.seed);
        let mut fe = self.first_error.lock().unwrap();
        if fe.is_none() {
            *fe = Some(msg);
        }
        self.failed.store(true, Ordering::Release);
        self.stop.store(true, Ordering::Release);
    }

    /// A wrong value at slot `s` (family `s / max_key`, key `s % max_key`).
    pub(crate) fn mismatch(&self, what: &str, s: u64, expected: String, actual: Option<&[u8]>) {
        let k = s % self.max_key;
        self.fail(format!(
            "MISMATCH in {what}: key {k} (0x{}){} expected {expected}, actual {}",
            hex(&key_bytes(k)),
            self.fam_desc(s),
            describe(s, actual)
        ));
    }

    /// " in family NAME" with several families.
    pub(crate) fn fam_desc(&self, s: u64) -> String {
        if self.fams > 1 {
            format!(" in family {}", cf_name(s / self.max_key))
        } else {
            String::new()
        }
    }

    pub(crate) fn slot(&self, cf: u64, k: u64) -> u64 {
        cf * self.max_key + k
    }

    pub(crate) fn handle(&self, db: &DB, cf: u64) -> Result<Arc<ColumnFamily>, String> {
        db.cf_handle(&cf_name(cf))
            .ok_or_else(|| format!("column family {} is missing", cf_name(cf)))
    }

    pub(crate) fn set_faults(&self, on: bool) {
        if let Some(f) = &self.faults {
            f.set_enabled(on);
        }
    }

    pub(crate) fn in_doubt(&self, k: u64) -> bool {
        self.faults.is_some() && self.doubt.lock().unwrap().contains(&k)
    }

    /// The result of a read: with fault injection an error is expected now and then (EIO, or
    /// Corruption from a flipped bit) and the read is skipped (None); otherwise it fails the run.
    pub(crate) fn read_ok<T>(&self, what: &str, r: shale::error::Result<T>) -> Result<Option<T>, String> {
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
    pub(crate) fn write_ok(&self, what: &str, keys: &[u64], r: shale::error::Result<()>) -> Result<bool, String> {
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

    pub(crate) fn lock_key(&self, k: u64) -> MutexGuard<'_, ()> {
        self.locks[k as usize].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Exact check of a read of slot `s` done while holding its lock.
    pub(crate) fn check(&self, what: &str, s: u64, vid: u32, actual: Option<&[u8]>) -> bool {
        if self.in_doubt(s) {
            return true;
        }
        self.reads_checked.fetch_add(1, Ordering::Relaxed);
        let ok = match actual {
            None => vid == 0,
            Some(v) => vid != 0 && v == value_of(s, vid).as_slice(),
        };
        if !ok {
            self.mismatch(what, s, vid_desc(vid), actual);
        }
        ok
    }

    pub(crate) fn wo(&self, rng: &mut Rng) -> WriteOptions {
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

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
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
        opts.set_plain_table_factory(&shale::PlainTableFactoryOptions {
            user_key_len: 0,
            hash_table_ratio: 0.0,
            ..Default::default()
        });
        // As RocksDB, TTL and periodic compactions need block-based tables.
        opts.set_periodic_compaction_seconds(0);
        opts.set_ttl(0);
        cfg.desc.push_str(" table_format=plain");
    }
    let prefix = match fl.i64("prefix_size") {
        -1 => [0, 6, 7][(mix(seed ^ 0x9E3F) % 3) as usize],
        n => n.max(0) as usize,
    };
    if prefix > 0 && !cfg.plain {
        // Prefix filters in the tables (with or without whole keys) and a memtable bloom
        // (`docs/prefix.md`); scans become prefix seeks (`verify::scan_check`).
        let m = mix(seed ^ 0x5EED);
        opts.set_prefix_extractor(shale::slice_transform::new_fixed_prefix_transform(prefix));
        let mut bbo = opts.get_block_based_options();
        bbo.set_whole_key_filtering(!m.is_multiple_of(3));
        opts.set_block_based_table_factory(&bbo);
        opts.set_memtable_prefix_bloom_ratio(if m.is_multiple_of(2) { 0.1 } else { 0.0 });
        opts.set_memtable_whole_key_filtering(m % 4 == 1);
        cfg.prefix = prefix;
        cfg.desc.push_str(&format!(
            " prefix_extractor=rocksdb.FixedPrefix.{prefix} whole_key_filtering={} memtable_prefix_bloom_size_ratio={}",
            !m.is_multiple_of(3),
            opts.get_memtable_prefix_bloom_ratio()
        ));
    }
    let rates = FaultRates {
        read_one_in: fl.u64("read_fault_one_in"),
        write_one_in: fl.u64("write_fault_one_in"),
        bitflip_one_in: fl.u64("bitflip_read_one_in"),
    };
    // Bit flips go only into reads of files with block checksums (`fault_fs`): without them a
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
    if fl.str("inject_bug").starts_with("wal_") {
        opts.set_env(Arc::new(BuggyFs {
            inner: opts.get_env().clone(),
            bug: fl.str("inject_bug").to_string(),
        }));
    }
    if fl.u64("kill_odds") > 0 && fl.str("kill_point") == "wal.append_torn" {
        // A kill in the middle of storing a WAL flush (a mapped copy or a `write`), which the
        // file system hooks cannot reach: inside the POSIX file itself.
        shale::fs::testing::kill_inside_wal_appends(
            fl.u64("kill_odds"),
            mix(seed ^ 0x7042),
            super::hook_fs::KILL_POINT_EXIT,
        );
    } else if fl.u64("kill_odds") > 0 {
        let hook = super::hook_fs::kill_hook(
            fl.u64("kill_odds"),
            mix(seed ^ 0x4B11),
            fl.str("kill_point").to_string(),
        );
        opts.set_env(Arc::new(super::hook_fs::HookFs {
            inner: opts.get_env().clone(),
            hook,
        }));
    }
    if fl.bool("destroy_db_initially") {
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|e| format!("cannot destroy {}: {e}", path.display()))?;
        }
        for p in [epath.clone(), counters_path(&epath), inflight_path(&epath)] {
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
            }
        }
    }
    let fams = num_families(fl.i64("column_families"), seed);
    let fam_opts: Vec<Options> = (1..fams)
        .map(|i| {
            let (o, d) = family_options(&opts, seed, i);
            cfg.desc.push_str(&format!(" {d}"));
            o
        })
        .collect();
    if fams > 1 {
        cfg.desc.push_str(&format!(" column_families={fams}"));
    }
    let db_existed = path.join("CURRENT").exists();
    let (exp, existed) = Expected::open(&epath, max_key, fams)?;
    if db_existed && !existed {
        return Err(format!(
            "{} exists but its expected state {} does not (use --destroy_db_initially)",
            path.display(),
            epath.display()
        ));
    }
    if !db_existed
        && existed
        && (0..max_key * fams).any(|k| {
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
    let mode = super::txn::mode_of(fl);
    if mode != TxnMode::Off && cfg.desc.contains("unordered_write=true") {
        // As db_stress: unordered writes only with write-prepared transactions, which Shale
        // does not have.
        opts.set_unordered_write(false);
        cfg.desc.push_str(" (transactions: unordered_write=false)");
    }
    if mode != TxnMode::Off && cfg.disable_wal {
        // A committed transaction must survive a crash: transactions run with the WAL.
        cfg.disable_wal = false;
        cfg.desc.push_str(" (transactions: disable_wal=false)");
    }
    let bug = match fl.str("inject_bug") {
        "txn_rollback_applied" => TxnBug::RollbackApplied,
        "txn_no_get_for_update" => TxnBug::NoGetForUpdate,
        "txn_split_commit" => TxnBug::SplitCommit,
        _ => TxnBug::None,
    };
    let txn = TxnCtx::new(mode, bug, &epath, db_existed, fl.i64("threads") as u64)?;
    if mode != TxnMode::Off {
        cfg.desc.push_str(&format!(" transactions={mode:?}"));
    }
    println!("stress: seed={seed} db={} {}", path.display(), cfg.desc);
    let ing = IngestCtx::new(
        fl.u64("ingest_external_file_one_in"),
        fl.u64("checkpoint_one_in"),
        fl.str("inject_bug") == "ingest_forget",
        &path,
    );
    ing.prepare()?;
    let t0 = Instant::now();
    let db = open_after_crash(mode, &opts, &path, &fam_opts)?;
    println!("stress: opened in {:.3}s", t0.elapsed().as_secs_f64());
    let prefix = PrefixCtx::new(cfg.prefix, fl.u64("prefix_change_one_in"));
    let sec = super::secondary::SecondaryCtx::new(fl.u64("secondary_catch_up_one_in"), &path);
    let ctx = Arc::new(Ctx {
        db: RwLock::new(Some(db)),
        path,
        opts,
        fam_opts,
        fams,
        cfg,
        exp,
        locks: (0..max_key * fams).map(|_| Mutex::new(())).collect(),
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
        txn,
        ing,
        prefix,
        sec,
    });
    if existed && (fl.bool("verify") || fl.bool("verify_only")) {
        let n = verify_all(&ctx)?;
        println!("stress: verified {n} keys");
        if let Some(sum) = verify_all_counters(&ctx)? {
            println!("stress: verified the transaction counters (sum {sum})");
        }
        let torn_checked = ctx.txn.atomic_checked.load(Ordering::Relaxed);
        if torn_checked > 0 {
            println!("stress: interrupted transactions found all or nothing: {torn_checked}");
        }
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
            "stress: progress ops={} reads_checked={} faults={} fault_reopens={}{}{}{}",
            ctx.ops.load(Ordering::Relaxed),
            ctx.reads_checked.load(Ordering::Relaxed),
            ctx.fault_counts.total(),
            ctx.fault_reopens.load(Ordering::Relaxed),
            ctx.txn.progress(),
            ctx.ing.progress(),
            ctx.sec.progress()
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
        if let Some(sum) = verify_all_counters(&ctx)? {
            println!(
                "stress: final transaction counters: each holds exactly its acknowledged increments (sum {sum}, {} in \
                 this run)",
                ctx.txn.increments.load(Ordering::Relaxed)
            );
        }
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
    if ctx.txn.on() {
        println!("{}", ctx.txn.report());
    }
    if ctx.sec.on() {
        println!("{}", ctx.sec.report());
    }
    if ctx.ing.on() {
        println!("{}", ctx.ing.report());
    }
    if let Some(r) = ctx.prefix.report() {
        println!("{r}");
    }
    println!(
        "stress: OK ops={} reads_checked={} elapsed={:.1}s",
        ctx.ops.load(Ordering::Relaxed),
        ctx.reads_checked.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The WAL recovery mode of a run: the flag, or (-1) one chosen by the seed among all four
/// (each must keep every acknowledged write after a crash; `AbsoluteConsistency` by refusing a
/// torn tail first, `open_after_crash`).
fn wal_mode(flag: i64, seed: u64) -> DBRecoveryMode {
    let m = if flag >= 0 {
        flag as u64
    } else {
        [0, 1, 2, 2, 3][(mix(seed ^ 0x5741) % 5) as usize]
    };
    match m {
        0 => DBRecoveryMode::TolerateCorruptedTailRecords,
        1 => DBRecoveryMode::AbsoluteConsistency,
        3 => DBRecoveryMode::SkipAnyCorruptedRecord,
        _ => DBRecoveryMode::PointInTime,
    }
}

/// Open the database a killed run left. In `AbsoluteConsistency` a WAL that a kill cut inside
/// a write ends in a torn tail, which that mode refuses: the refusal must be a Corruption
/// naming the WAL file and the offset; the database is then opened tolerating the torn tail
/// (RocksDB's advice for the case) and verified like any other, so nothing acknowledged may be
/// missing.
fn open_after_crash(mode: TxnMode, opts: &Options, path: &Path, fam_opts: &[Options]) -> Result<StressDb, String> {
    match open_stress_db(mode, opts, path, fam_opts) {
        Ok(db) => Ok(db),
        Err(e) if opts.get_wal_recovery_mode() == DBRecoveryMode::AbsoluteConsistency => {
            let text = e.to_string();
            let named = text.contains(".log") && text.contains("offset");
            if e.kind() != shale::ErrorKind::Corruption || !named {
                return Err(format!(
                    "open {} in AbsoluteConsistency: {e} (a torn WAL tail must be a Corruption naming the WAL and the offset)",
                    path.display()
                ));
            }
            println!("stress: absolute consistency refused a torn WAL tail: {text}");
            let mut o = opts.clone();
            o.set_wal_recovery_mode(DBRecoveryMode::TolerateCorruptedTailRecords);
            open_stress_db(mode, &o, path, fam_opts)
                .map_err(|e| format!("open {} after the refusal: {e}", path.display()))
        }
        Err(e) => Err(format!("open {}: {e}", path.display())),
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
    if ctx.cfg.disable_wal && ctx.faults.is_some() {
        // Writes without the WAL live only in the memtables. Closing flushes them, but not
        // after a background error from an injected fault that no foreground write has met yet:
        // then the close loses them, and this is a recovery after a fault, not a clean reopen.
        if let Some(db) = g.as_ref() {
            let hs = (0..ctx.fams)
                .map(|cf| ctx.handle(db, cf))
                .collect::<Result<Vec<_>, _>>()?;
            if flush_before_close(db, &hs).is_err() {
                ctx.needs_reopen.store(true, Ordering::Release);
                ctx.set_faults(was);
                drop(g);
                return recover_after_fault(ctx);
            }
        }
    }
    *g = None;
    let mut o = ctx.opts.clone();
    o.set_wal_recovery_mode(DBRecoveryMode::AbsoluteConsistency);
    let r = open_stress_db(ctx.txn.mode, &o, &ctx.path, &ctx.fam_opts)
        .map_err(|e| format!("reopen after a clean close {}: {e}", ctx.path.display()));
    *g = Some(r?);
    ctx.prefix.reopened();
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
        let db = g.as_ref().expect("checked");
        verify_db(ctx, db)?;
        verify_counters(ctx, db)?;
        ctx.fault_resumes.fetch_add(1, Ordering::Relaxed);
    } else {
        *g = None;
        // A short write the fault left at the WAL's end is a torn tail: absolute consistency
        // refuses it as after a crash (`open_after_crash`).
        let db = open_after_crash(ctx.txn.mode, &ctx.opts, &ctx.path, &ctx.fam_opts)
            .map_err(|e| format!("reopen after an injected fault: {e}"))?;
        ctx.prefix.reopened();
        verify_db(ctx, &db)?;
        verify_counters(ctx, &db)?;
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
    // The family of this operation (with one family, no random number is drawn: the operations
    // a seed draws are those of a run without this choice).
    let cf = if ctx.fams > 1 { rng.below(ctx.fams) } else { 0 };
    let h = ctx.handle(db, cf)?;
    let s = |k: u64| ctx.slot(cf, k);
    // Ingests and checkpoints (no random number is drawn when both are off: the operations a
    // seed draws are those of a run without them). Not with transactions: an ingest bypasses
    // them.
    if ctx.ing.on() && !ctx.txn.on() {
        if ctx.ing.ingest_one_in > 0 && rng.below(ctx.ing.ingest_one_in) == 0 {
            return ingest_op(ctx, db, cf, rng);
        }
        if ctx.ing.checkpoint_one_in > 0 && rng.below(ctx.ing.checkpoint_one_in) == 0 {
            return checkpoint_op(ctx, db, cf, rng);
        }
    }
    // A secondary's catch-up (no random number drawn when off, as above).
    if ctx.sec.on() && !ctx.txn.on() && rng.below(ctx.sec.one_in) == 0 {
        return super::secondary::catch_up_op(ctx, cf, rng);
    }
    if ctx.prefix.due(rng) {
        return super::prefix::change_prefix_op(ctx, db, rng);
    }
    let p = rng.below(1000);
    if ctx.fams > 1 && sd_start > 0 {
        match p {
            330..=344 => return cross_family_read(ctx, db, rng),
            800..=849 => return cross_family_batch(ctx, db, rng),
            _ => {}
        }
    }
    if ctx.txn.on() {
        // Every write is a transaction: one key (put, delete, merge), several keys (a batch, of
        // several families with --column_families), or counters (instead of delete_range,
        // which a TransactionDB cannot lock).
        match p {
            360..=669 | 700..=799 => return txn_write(ctx, db, rng, cf, 1, false),
            670..=699 | 970..=989 => return counter_op(ctx, db, rng),
            800..=969 => {
                let n = 1 + rng.below(10) as usize;
                return txn_write(ctx, db, rng, cf, n, true);
            }
            _ => {}
        }
    }
    match p {
        // get
        0..=199 => {
            let k = rng.below(mk);
            let _l = ctx.lock_key(s(k));
            let c = ctx.exp.get(s(k)).committed;
            if k >= sd_start && c == 0 {
                // No DB key to get: check the key's whole prefix is empty.
                scan_check(ctx, (db, &h, cf), rng, k, k + 1, &[], None)?;
            } else {
                if let Some(v) = ctx.read_ok("get", db.get_cf(&h, pk(k, c)))? {
                    ctx.check("get", s(k), c, v.as_deref());
                }
            }
        }
        // multi_get
        200..=249 => {
            let n = 1 + rng.below(8) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(s(k))).collect();
            let kv: Vec<(u64, u32)> = ks
                .iter()
                .map(|&k| (k, ctx.exp.get(s(k)).committed))
                .filter(|&(k, c)| k < sd_start || c != 0)
                .collect();
            let rs = db.multi_get_cf(kv.iter().map(|&(k, c)| (&h, pk(k, c))));
            for (&(k, c), r) in kv.iter().zip(rs) {
                let Some(v) = ctx.read_ok("multi_get", r)? else {
                    continue;
                };
                if !ctx.check("multi_get", s(k), c, v.as_deref()) {
                    break;
                }
            }
        }
        // bounded scan, either direction
        250..=329 => {
            let lo = rng.below(mk);
            let hi = (lo + 1 + rng.below(32)).min(mk);
            let _ls: Vec<_> = (lo..hi).map(|k| ctx.lock_key(s(k))).collect();
            let want: Vec<(u64, u32)> = (lo..hi)
                .map(|k| (k, ctx.exp.get(s(k)).committed))
                .filter(|(_, v)| *v != 0)
                .collect();
            scan_check(ctx, (db, &h, cf), rng, lo, hi, &want, None)?;
        }
        // snapshot: record, let others write, read through the snapshot
        330..=359 => {
            let n = 1 + rng.below(8) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let (snap, want) = {
                let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(s(k))).collect();
                let want: Vec<u32> = ks.iter().map(|&k| ctx.exp.get(s(k)).committed).collect();
                (db.snapshot(), want)
            };
            std::thread::yield_now();
            let mut ro = ReadOptions::default();
            ro.set_snapshot(&snap);
            for (k, w) in ks.iter().zip(&want) {
                if *k >= sd_start && *w == 0 {
                    continue;
                }
                let Some(v) = ctx.read_ok("snapshot get", db.get_cf_opt(&h, pk(*k, *w), &ro))? else {
                    continue;
                };
                if !ctx.check("snapshot get", s(*k), *w, v.as_deref()) {
                    break;
                }
            }
            if ks.len() == 1 {
                // A bounded scan of the single key through the snapshot.
                let k = ks[0];
                let want: Vec<(u64, u32)> = if want[0] != 0 { vec![(k, want[0])] } else { vec![] };
                scan_check(ctx, (db, &h, cf), rng, k, k + 1, &want, Some(&snap))?;
            }
        }
        // put / single_delete in the no-overwrite region
        360..=609 => {
            let k = rng.below(mk);
            let _l = ctx.lock_key(s(k));
            if ctx.in_doubt(s(k)) {
                return Ok(());
            }
            let old = ctx.exp.get(s(k)).committed;
            let wo = ctx.wo(rng);
            if k >= sd_start && old != 0 {
                ctx.exp.set_pending(s(k), 0)?;
                if ctx.write_ok("single_delete", &[s(k)], db.single_delete_cf_opt(&h, pk(k, old), &wo))? {
                    ctx.exp.commit(s(k), 0)?;
                }
            } else {
                let new = new_vid(rng, s(k), false);
                ctx.exp.set_pending(s(k), new)?;
                if ctx.write_ok("put", &[s(k)], db.put_cf_opt(&h, pk(k, new), value_of(s(k), new), &wo))? {
                    ctx.exp.commit(s(k), new)?;
                }
            }
        }
        // delete
        610..=669 => {
            let k = rng.below(sd_start.max(1));
            if k >= sd_start {
                return Ok(());
            }
            let _l = ctx.lock_key(s(k));
            if ctx.in_doubt(s(k)) {
                return Ok(());
            }
            let wo = ctx.wo(rng);
            ctx.exp.set_pending(s(k), 0)?;
            if ctx.write_ok("delete", &[s(k)], db.delete_cf_opt(&h, key_bytes(k), &wo))? {
                ctx.exp.commit(s(k), 0)?;
            }
        }
        // delete_range (block-based tables only)
        670..=699 => {
            if sd_start == 0 || ctx.cfg.plain {
                return Ok(());
            }
            let lo = rng.below(sd_start);
            let hi = (lo + 1 + rng.below(16)).min(sd_start);
            let _ls: Vec<_> = (lo..hi).map(|k| ctx.lock_key(s(k))).collect();
            if (lo..hi).any(|k| ctx.in_doubt(s(k))) {
                return Ok(());
            }
            let wo = ctx.wo(rng);
            for k in lo..hi {
                ctx.exp.set_pending(s(k), 0)?;
            }
            let keys: Vec<u64> = (lo..hi).map(s).collect();
            let r = db.delete_range_cf_opt(&h, key_bytes(lo), key_bytes(hi), &wo);
            if ctx.write_ok("delete_range", &keys, r)? {
                for k in lo..hi {
                    ctx.exp.commit(s(k), 0)?;
                }
            }
        }
        // merge (uint64add)
        700..=799 => {
            if sd_start == 0 {
                return Ok(());
            }
            let k = rng.below(sd_start);
            let _l = ctx.lock_key(s(k));
            if ctx.in_doubt(s(k)) {
                return Ok(());
            }
            let old = ctx.exp.get(s(k)).committed;
            let new = new_vid(rng, s(k), true);
            let wo = ctx.wo(rng);
            ctx.exp.set_pending(s(k), new)?;
            if ctx.write_ok(
                "merge",
                &[s(k)],
                db.merge_cf_opt(&h, key_bytes(k), merge_operand(s(k), old, new), &wo),
            )? {
                ctx.exp.commit(s(k), new)?;
            }
        }
        // write batch of distinct keys, mixed operations
        800..=989 => {
            let n = 1 + rng.below(10) as usize;
            let ks = rand_keys(rng, 0, mk, n);
            let _ls: Vec<_> = ks.iter().map(|&k| ctx.lock_key(s(k))).collect();
            if ks.iter().any(|&k| ctx.in_doubt(s(k))) {
                return Ok(());
            }
            let mut b = WriteBatch::new();
            let mut news = Vec::with_capacity(ks.len());
            for &k in &ks {
                let old = ctx.exp.get(s(k)).committed;
                let new = if k >= sd_start {
                    if old != 0 {
                        b.single_delete_cf(&h, pk(k, old));
                        0
                    } else {
                        let n = new_vid(rng, s(k), false);
                        b.put_cf(&h, pk(k, n), value_of(s(k), n));
                        n
                    }
                } else {
                    match rng.below(10) {
                        0..=5 => {
                            let n = new_vid(rng, s(k), false);
                            b.put_cf(&h, key_bytes(k), value_of(s(k), n));
                            n
                        }
                        6 | 7 => {
                            b.delete_cf(&h, key_bytes(k));
                            0
                        }
                        _ => {
                            let n = new_vid(rng, s(k), true);
                            b.merge_cf(&h, key_bytes(k), merge_operand(s(k), old, n));
                            n
                        }
                    }
                };
                ctx.exp.set_pending(s(k), new)?;
                news.push(new);
            }
            let wo = ctx.wo(rng);
            let slots: Vec<u64> = ks.iter().map(|&k| s(k)).collect();
            if ctx.write_ok("write batch", &slots, db.write_opt(b, &wo))? {
                for (&k, &n) in ks.iter().zip(&news) {
                    ctx.exp.commit(s(k), n)?;
                }
            }
        }
        // flush
        990..=995 => {
            ctx.write_ok("flush", &[], db.flush_cf(&h))?;
        }
        // compact_range
        _ => {
            let lo = rng.below(mk);
            let hi = (lo + 1 + rng.below(mk / 4 + 1)).min(mk);
            ctx.write_ok(
                "compact_range",
                &[],
                db.compact_range_cf(&h, Some(&key_bytes(lo)), Some(&key_bytes(hi))),
            )?;
        }
    }
    Ok(())
}

/// The key of an operation across families: in the first sixteenth of the keys below the
/// no-overwrite region, so that batches across families rewrite them often and reads across
/// families find them agreeing.
fn cross_family_key(ctx: &Ctx, rng: &mut Rng) -> u64 {
    rng.below((sd_start(ctx.max_key) / 16).max(1))
}

/// A batch that writes one key in every family with the same value id (db_stress's batches
/// across families): a put, a delete or (up to 4 families) a merge with each family's operand.
/// Its entries are pending in every family until it is acknowledged.
fn cross_family_batch(ctx: &Ctx, db: &StressDb, rng: &mut Rng) -> Result<(), String> {
    let k = cross_family_key(ctx, rng);
    let slots: Vec<u64> = (0..ctx.fams).map(|c| ctx.slot(c, k)).collect();
    let _ls: Vec<_> = slots.iter().map(|&s| ctx.lock_key(s)).collect();
    if slots.iter().any(|&s| ctx.in_doubt(s)) {
        return Ok(());
    }
    let kind = match rng.below(4) {
        3 if ctx.fams > 4 => 0,
        x => x,
    };
    let new = match kind {
        2 => 0,
        // A merge result has no padding in any family.
        3 => loop {
            let v = new_vid(rng, slots[0], true);
            if slots.iter().all(|&s| super::model::pad_len(s, v) == 0) {
                break v;
            }
        },
        _ => new_vid(rng, slots[0], false),
    };
    let mut b = WriteBatch::new();
    let mut ops = Vec::new();
    for (c, &s) in slots.iter().enumerate() {
        let h = ctx.handle(db, c as u64)?;
        let old = ctx.exp.get(s).committed;
        match kind {
            2 => b.delete_cf(&h, key_bytes(k)),
            3 => b.merge_cf(&h, key_bytes(k), merge_operand(s, old, new)),
            _ => b.put_cf(&h, key_bytes(k), value_of(s, new)),
        }
        if ctx.txn.on() {
            let v = match kind {
                2 => None,
                3 => Some(merge_operand(s, old, new).to_vec()),
                _ => Some(value_of(s, new)),
            };
            ops.push((h, key_bytes(k).to_vec(), v, kind == 3));
        }
        ctx.exp.set_pending(s, new)?;
    }
    let wo = ctx.wo(rng);
    let r = if ctx.txn.on() {
        // The same writes in one transaction across the families.
        let olds: Vec<u32> = slots.iter().map(|&s| ctx.exp.get(s).committed).collect();
        match commit_ops(ctx, db, rng, &wo, &ops) {
            Ok(true) => Ok(()),
            Ok(false) => {
                // A conflict: nothing was written.
                for (&s, &o) in slots.iter().zip(&olds) {
                    ctx.exp.commit(s, o)?;
                }
                return Ok(());
            }
            Err(e) => Err(e),
        }
    } else {
        db.write_opt(b, &wo)
    };
    if ctx.write_ok("batch across families", &slots, r)? {
        for &s in &slots {
            ctx.exp.commit(s, new)?;
        }
    }
    Ok(())
}

/// One key read in every family at one snapshot (`multi_get_cf`, then a `get_cf` of one family
/// through the same snapshot): each family holds what the expected state said when the
/// snapshot was taken, and families the last batch across families wrote agree.
fn cross_family_read(ctx: &Ctx, db: &DB, rng: &mut Rng) -> Result<(), String> {
    let k = cross_family_key(ctx, rng);
    let slots: Vec<u64> = (0..ctx.fams).map(|c| ctx.slot(c, k)).collect();
    let hs = (0..ctx.fams)
        .map(|c| ctx.handle(db, c))
        .collect::<Result<Vec<_>, _>>()?;
    let (snap, want) = {
        let _ls: Vec<_> = slots.iter().map(|&s| ctx.lock_key(s)).collect();
        let want: Vec<u32> = slots.iter().map(|&s| ctx.exp.get(s).committed).collect();
        (db.snapshot(), want)
    };
    // Let other threads write the key meanwhile.
    std::thread::yield_now();
    let mut ro = ReadOptions::default();
    ro.set_snapshot(&snap);
    let what = "multi_get_cf across families at a snapshot";
    let rs = db.multi_get_cf_opt(hs.iter().map(|h| (h, key_bytes(k))), &ro);
    let mut ids = Vec::new();
    for ((&s, &w), r) in slots.iter().zip(&want).zip(rs) {
        let Some(v) = ctx.read_ok(what, r)? else {
            return Ok(());
        };
        if !ctx.check(what, s, w, v.as_deref()) {
            return Ok(());
        }
        ids.push(v.map(|v| decode_value(s, &v)));
    }
    if want.iter().all(|&w| w == want[0]) && !slots.iter().any(|&s| ctx.in_doubt(s)) && ids.iter().any(|i| *i != ids[0])
    {
        ctx.fail(format!(
            "MISMATCH in {what}: key {k}: the families disagree at one snapshot: {ids:?}"
        ));
        return Ok(());
    }
    let c = rng.below(ctx.fams);
    if let Some(v) = ctx.read_ok(
        "get_cf at a snapshot",
        db.get_cf_opt(&hs[c as usize], key_bytes(k), &ro),
    )? {
        ctx.check(
            "get_cf at a snapshot",
            slots[c as usize],
            want[c as usize],
            v.as_deref(),
        );
    }
    Ok(())
}

/// `verify_counters` on the open DB.
fn verify_all_counters(ctx: &Ctx) -> Result<Option<u64>, String> {
    let g = ctx.db.read().unwrap_or_else(|p| p.into_inner());
    verify_counters(ctx, g.as_ref().ok_or("database is closed")?)
}
