//! `shale stress --use_txn` / `--use_optimistic_txn` (db_stress's flags): the writes of the
//! stress run go through transactions of a `TransactionDB` (row locks) or an
//! `OptimisticTransactionDB` (validation at commit), and the oracle follows exactly what
//! committed.
//!
//! * **Oracle-checked transactions** (`txn_write`): the keys of the transaction are locked in
//!   the tool (as every write of the stress run), read with `get_for_update` (the value must be
//!   the expected one), written (put, delete, merge; put-if-absent / delete-if-present in the
//!   no-overwrite region), read back inside the transaction (its own writes), sometimes partly
//!   undone with a savepoint, then rolled back (1 in 8) or committed. The expected state marks
//!   the changed keys pending only right before `commit` and commits them when it returns `Ok`:
//!   a crash during the commit allows old or new, a rolled-back or failed transaction changes
//!   nothing. After a rollback or a failed commit every key is read again: none of the
//!   transaction's writes may be visible.
//! * **Counters** (`counter_op`): a few keys above the key space (`COUNTERS`, spread over the
//!   families) are incremented by transactions of every thread *without* the tool's locks: the
//!   transaction engine alone must keep increments from being lost. A transaction reads one or
//!   two counters with `get_for_update` (two in random order: deadlocks and lock timeouts
//!   happen with the pessimistic DB, conflicts with the optimistic one; both are retried and
//!   counted), writes value + 1 and commits. A file beside the expected state
//!   (`<expected>.txn`) holds, per counter, the number of acknowledged increments and the number
//!   in flight; every value read must lie between them, and each verification (start, after a
//!   crash, after a fault, end) requires `acked <= value <= acked + in flight`: exactly `acked`
//!   at the end of a run.
//! * Conflicts (`Busy`, `TimedOut`, `TryAgain`) are never failures: the transaction is dropped
//!   (rolled back), its keys stay as they were, and it is counted.
//! * Commits interrupted by a crash must be all or nothing: each committing transaction of two
//!   or more keys is recorded in `<expected>.txn-inflight` (`Inflight`) and the verification
//!   after the restart checks its keys hold all the new values or all the old ones.
//! * `--inject_bug=txn_rollback_applied` (the oracle takes a rolled-back transaction's writes),
//!   `--inject_bug=txn_no_get_for_update` (counters read with a plain `get`, which locks and
//!   tracks nothing: lost updates) and `--inject_bug=txn_split_commit` (a commit that writes one
//!   key on its own first: torn by a crash) show that the checks catch such bugs.

use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use shale::{
    ColumnFamily, OptimisticTransactionDB, OptimisticTransactionOptions, Options, Transaction, TransactionDB,
    TransactionDBOptions, TransactionOptions, WriteOptions, DB,
};

use super::model::{cf_name, merge_operand, new_vid, open_families, phys_key, sd_start, value_of, Rng};
use super::run::Ctx;
use super::txn_files::{
    counter_family, counter_key, counters_path, decode_counter, inflight_path, Change, Counters, Inflight, COUNTERS,
};

// ---------------------------------------------------------------------------------------------
// The database of a run: plain or one of the two transaction DBs.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnMode {
    Off,
    Pessimistic,
    Optimistic,
}

/// The deliberate bugs of the transaction checks (`--inject_bug`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnBug {
    None,
    /// A rolled-back transaction's writes are applied to the oracle.
    RollbackApplied,
    /// Counters are read with `get` instead of `get_for_update`.
    NoGetForUpdate,
    /// A transaction's commit writes one of its keys first, on its own (not atomic).
    SplitCommit,
}

pub enum StressDb {
    Plain(DB),
    Pessimistic(TransactionDB),
    Optimistic(OptimisticTransactionDB),
}

impl Deref for StressDb {
    type Target = DB;
    fn deref(&self) -> &DB {
        match self {
            StressDb::Plain(d) => d,
            StressDb::Pessimistic(t) => t.base_db(),
            StressDb::Optimistic(t) => t.base_db(),
        }
    }
}

/// Open the stress DB as `mode` says (families as `open_families`).
pub fn open_stress_db(mode: TxnMode, opts: &Options, path: &Path, fam: &[Options]) -> shale::error::Result<StressDb> {
    let descs = || {
        fam.iter()
            .enumerate()
            .map(|(i, f)| shale::ColumnFamilyDescriptor::new(cf_name(i as u64 + 1), f.clone()))
            .collect::<Vec<_>>()
    };
    let mut o = opts.clone();
    if !fam.is_empty() {
        o.create_missing_column_families(true);
    }
    match mode {
        TxnMode::Off => open_families(opts, path, fam).map(StressDb::Plain),
        TxnMode::Pessimistic => {
            let t = TransactionDBOptions::default();
            if fam.is_empty() {
                TransactionDB::open(&o, &t, path)
            } else {
                TransactionDB::open_cf_descriptors(&o, &t, path, descs())
            }
            .and_then(|db| {
                let n = resolve_prepared(&db)?;
                if n > 0 {
                    println!("stress: resolved {n} prepared transactions after the open");
                }
                Ok(db)
            })
            .map(StressDb::Pessimistic)
        }
        TxnMode::Optimistic => if fam.is_empty() {
            OptimisticTransactionDB::open(&o, path)
        } else {
            OptimisticTransactionDB::open_cf_descriptors(&o, path, descs())
        }
        .map(StressDb::Optimistic),
    }
}

/// The operations of a transaction the stress run uses, for both engines.
pub trait Txn {
    fn put(&self, cf: &ColumnFamily, k: &[u8], v: &[u8]) -> shale::error::Result<()>;
    fn delete(&self, cf: &ColumnFamily, k: &[u8]) -> shale::error::Result<()>;
    fn merge(&self, cf: &ColumnFamily, k: &[u8], v: &[u8]) -> shale::error::Result<()>;
    fn get(&self, cf: &ColumnFamily, k: &[u8]) -> shale::error::Result<Option<Vec<u8>>>;
    fn get_for_update(&self, cf: &ColumnFamily, k: &[u8], exclusive: bool) -> shale::error::Result<Option<Vec<u8>>>;
    fn set_savepoint(&self);
    fn rollback_to_savepoint(&self) -> shale::error::Result<()>;
    fn commit(&self) -> shale::error::Result<()>;
    fn rollback(&self) -> shale::error::Result<()>;
    /// Two-phase commit's first phase under `name` (a pessimistic transaction only).
    fn prepare_as(&self, name: &[u8]) -> shale::error::Result<()>;
}

impl<D> Txn for Transaction<'_, D> {
    fn put(&self, cf: &ColumnFamily, k: &[u8], v: &[u8]) -> shale::error::Result<()> {
        self.put_cf(cf, k, v)
    }
    fn delete(&self, cf: &ColumnFamily, k: &[u8]) -> shale::error::Result<()> {
        self.delete_cf(cf, k)
    }
    fn merge(&self, cf: &ColumnFamily, k: &[u8], v: &[u8]) -> shale::error::Result<()> {
        self.merge_cf(cf, k, v)
    }
    fn get(&self, cf: &ColumnFamily, k: &[u8]) -> shale::error::Result<Option<Vec<u8>>> {
        self.get_cf(cf, k)
    }
    fn get_for_update(&self, cf: &ColumnFamily, k: &[u8], exclusive: bool) -> shale::error::Result<Option<Vec<u8>>> {
        self.get_for_update_cf(cf, k, exclusive)
    }
    fn set_savepoint(&self) {
        Transaction::set_savepoint(self)
    }
    fn rollback_to_savepoint(&self) -> shale::error::Result<()> {
        Transaction::rollback_to_savepoint(self)
    }
    fn commit(&self) -> shale::error::Result<()> {
        Transaction::commit(self)
    }
    fn prepare_as(&self, name: &[u8]) -> shale::error::Result<()> {
        self.set_name(name)?;
        self.prepare()
    }
    fn rollback(&self) -> shale::error::Result<()> {
        Transaction::rollback(self)
    }
}

impl StressDb {
    /// A new transaction with random options (a snapshot 1 in 4; pessimistic: a short lock
    /// timeout, deadlock detection 1 in 2). None for a plain DB.
    pub fn begin(&self, wo: &WriteOptions, rng: &mut Rng) -> Option<Box<dyn Txn + '_>> {
        match self {
            StressDb::Plain(_) => None,
            StressDb::Pessimistic(t) => {
                let mut o = TransactionOptions::new();
                o.set_snapshot(rng.below(4) == 0);
                o.set_lock_timeout(rng.pick(&[5, 20, 100]));
                o.set_deadlock_detect(rng.below(2) == 0);
                Some(Box::new(t.transaction_opt(wo, &o)))
            }
            StressDb::Optimistic(t) => {
                let mut o = OptimisticTransactionOptions::new();
                o.set_snapshot(rng.below(4) == 0);
                Some(Box::new(t.transaction_opt(wo, &o)))
            }
        }
    }
}

/// Names of prepared transactions: unique in a process (with its id: across runs).
static XID: AtomicU64 = AtomicU64::new(0);

/// A pessimistic DB opened after a kill may hold transactions a killed run prepared (their
/// keys marked pending in the expected state, their locks held): commit or roll back each, by
/// its name's hash, before anything else runs; the verification then finds their keys all new
/// or all old. Returns how many were resolved.
pub fn resolve_prepared(db: &TransactionDB) -> shale::error::Result<usize> {
    let txns = db.prepared_transactions();
    let n = txns.len();
    for t in txns {
        let name = t.get_name().unwrap_or_default();
        if super::model::mix(name.iter().fold(0u64, |h, &b| h.wrapping_mul(31) ^ b as u64)).is_multiple_of(2) {
            t.commit()?;
        } else {
            t.rollback()?;
        }
    }
    Ok(n)
}

/// A write of `commit_ops`: the family, the key, the value (None: delete), whether it is a
/// merge operand.
pub type TxnOp = (Arc<ColumnFamily>, Vec<u8>, Option<Vec<u8>>, bool);

/// The transaction part of the run's context.
pub struct TxnCtx {
    pub mode: TxnMode,
    pub bug: TxnBug,
    pub counters: Option<Counters>,
    pub inflight: Option<Inflight>,
    pub commits: AtomicU64,
    pub rollbacks: AtomicU64,
    pub savepoint_rollbacks: AtomicU64,
    /// Busy (optimistic write conflict, pessimistic deadlock or snapshot conflict).
    pub busy: AtomicU64,
    /// Of the Busy ones: deadlocks the pessimistic DB detected.
    pub deadlocks: AtomicU64,
    pub timed_out: AtomicU64,
    pub try_again: AtomicU64,
    pub increments: AtomicU64,
    pub no_trace_checks: AtomicU64,
    /// Interrupted transactions found all or nothing by a verification.
    pub atomic_checked: AtomicU64,
    /// Transactions prepared (two-phase commit) before their commit.
    pub prepared: AtomicU64,
}

impl TxnCtx {
    pub fn new(mode: TxnMode, bug: TxnBug, expected: &Path, db_existed: bool, threads: u64) -> Result<TxnCtx, String> {
        let (counters, inflight) = match mode {
            TxnMode::Off => {
                // A run without transactions rewrites keys that a record of an interrupted
                // transaction names; it verified them first.
                let p = inflight_path(expected);
                if p.exists() {
                    std::fs::remove_file(&p).map_err(|e| format!("cannot remove {}: {e}", p.display()))?;
                }
                (None, None)
            }
            _ => (
                Some(Counters::open(&counters_path(expected), db_existed)?),
                Some(Inflight::open(&inflight_path(expected), threads)?),
            ),
        };
        Ok(TxnCtx {
            mode,
            bug,
            counters,
            inflight,
            atomic_checked: AtomicU64::new(0),
            prepared: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            rollbacks: AtomicU64::new(0),
            savepoint_rollbacks: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            deadlocks: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            try_again: AtomicU64::new(0),
            increments: AtomicU64::new(0),
            no_trace_checks: AtomicU64::new(0),
        })
    }

    pub fn on(&self) -> bool {
        self.mode != TxnMode::Off
    }

    pub fn conflicts(&self) -> u64 {
        self.busy.load(Ordering::Relaxed)
            + self.timed_out.load(Ordering::Relaxed)
            + self.try_again.load(Ordering::Relaxed)
    }

    /// The progress-line fields.
    pub fn progress(&self) -> String {
        if !self.on() {
            return String::new();
        }
        format!(
            " txn_commits={} txn_rollbacks={} txn_conflicts={} txn_prepared={}",
            self.commits.load(Ordering::Relaxed),
            self.rollbacks.load(Ordering::Relaxed),
            self.conflicts(),
            self.prepared.load(Ordering::Relaxed)
        )
    }

    /// The end-of-run report line.
    pub fn report(&self) -> String {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "stress: txn mode={} commits={} rollbacks={} savepoint_rollbacks={} conflicts={} (busy={} of which \
             deadlocks={}, timed_out={}, try_again={}) counter_increments={} rolled_back_writes_checked={} \
             interrupted_commits_checked_atomic={} prepared={}",
            match self.mode {
                TxnMode::Pessimistic => "pessimistic",
                TxnMode::Optimistic => "optimistic",
                TxnMode::Off => "off",
            },
            l(&self.commits),
            l(&self.rollbacks),
            l(&self.savepoint_rollbacks),
            self.conflicts(),
            l(&self.busy),
            l(&self.deadlocks),
            l(&self.timed_out),
            l(&self.try_again),
            l(&self.increments),
            l(&self.no_trace_checks),
            l(&self.atomic_checked),
            l(&self.prepared)
        )
    }
}

/// A conflict of the transaction engines (counted, never a failure): Busy (write conflict,
/// deadlock, snapshot conflict), TimedOut (lock wait), TryAgain (history too short).
fn conflict(ctx: &Ctx, e: &shale::Error) -> bool {
    let t = &ctx.txn;
    match e {
        shale::Error::Busy(m) => {
            if m.starts_with("Deadlock") {
                t.deadlocks.fetch_add(1, Ordering::Relaxed);
            }
            t.busy.fetch_add(1, Ordering::Relaxed)
        }
        shale::Error::TimedOut(_) => t.timed_out.fetch_add(1, Ordering::Relaxed),
        shale::Error::TryAgain(_) => t.try_again.fetch_add(1, Ordering::Relaxed),
        _ => return false,
    };
    true
}

/// The result of a transaction's read or buffered write: Some(v) to go on, None to drop the
/// transaction (a conflict, or a read error under fault injection), Err to fail the run.
fn step<T>(ctx: &Ctx, what: &str, r: shale::error::Result<T>) -> Result<Option<T>, String> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if conflict(ctx, &e) => Ok(None),
        Err(e) => ctx.read_ok(what, Err(e)),
    }
}

/// A lock wait or a write conflict on keys no other transaction can be writing (the tool's
/// locks serialize the writers of the oracle-checked keys): a leaked lock, a wrong conflict
/// check. Only `TryAgain` (the optimistic DB's memtable history is too short) may happen there.
fn unexpected(what: &str, e: &shale::Error) -> Option<String> {
    matches!(e, shale::Error::Busy(_) | shale::Error::TimedOut(_)).then(|| {
        format!(
            "UNEXPECTED CONFLICT in {what}: {e} (no other transaction writes these keys: the tool's locks serialize \
             their writers)"
        )
    })
}

/// `step` for the oracle-checked keys: Busy and TimedOut are failures there.
fn step_own<T>(ctx: &Ctx, what: &str, r: shale::error::Result<T>) -> Result<Option<T>, String> {
    if let Err(e) = &r {
        if let Some(m) = unexpected(what, e) {
            return Err(m);
        }
    }
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if conflict(ctx, &e) => Ok(None),
        Err(e) => ctx.read_ok(what, Err(e)),
    }
}

// ---------------------------------------------------------------------------------------------
// Oracle-checked transactions.

/// A transaction over `n` random keys (of family `cf`, or of random families with `across`).
pub fn txn_write(ctx: &Ctx, sdb: &StressDb, rng: &mut Rng, cf: u64, n: usize, across: bool) -> Result<(), String> {
    let mk = ctx.max_key;
    let sd = sd_start(mk);
    let mut slots: Vec<u64> = (0..n)
        .map(|_| {
            let c = if across && ctx.fams > 1 {
                rng.below(ctx.fams)
            } else {
                cf
            };
            ctx.slot(c, rng.below(mk))
        })
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let _ls: Vec<_> = slots.iter().map(|&s| ctx.lock_key(s)).collect();
    if slots.iter().any(|&s| ctx.in_doubt(s)) {
        return Ok(());
    }
    let hs = slots
        .iter()
        .map(|&s| ctx.handle(sdb, s / mk))
        .collect::<Result<Vec<_>, _>>()?;
    let wo = ctx.wo(rng);
    let txn = sdb.begin(&wo, rng).ok_or("--use_txn without a transaction DB")?;
    let old: Vec<u32> = slots.iter().map(|&s| ctx.exp.get(s).committed).collect();
    let key = |i: usize, vid: u32| phys_key(slots[i] % mk, vid, mk);
    let in_sd = |i: usize| slots[i] % mk >= sd;
    // Reads for update: the value must be the expected one (the tool's locks keep others off).
    for i in 0..slots.len() {
        if rng.below(2) == 0 || (in_sd(i) && old[i] == 0) {
            continue;
        }
        let r = txn.get_for_update(&hs[i], &key(i, old[i]), rng.below(4) != 0);
        let Some(v) = step_own(ctx, "transaction get_for_update", r)? else {
            return Ok(());
        };
        if !ctx.check("transaction get_for_update", slots[i], old[i], v.as_deref()) {
            return Ok(());
        }
    }
    // Writes; `eff` is what each key holds in the transaction.
    let mut eff = old.clone();
    // Keys the transaction put or deleted (not only merged).
    let mut based = vec![false; slots.len()];
    for i in 0..slots.len() {
        if rng.below(4) == 0 {
            continue;
        }
        match write_one(ctx, &*txn, rng, &hs[i], slots[i], &mut eff[i], in_sd(i))? {
            None => return Ok(()),
            Some(b) => based[i] |= b,
        }
    }
    // The transaction reads its own writes.
    let i = rng.below(slots.len() as u64) as usize;
    if !own_read(ctx, &*txn, &hs[i], slots[i], old[i], eff[i])? {
        return Ok(());
    }
    // Sometimes more writes after a savepoint, undone 2 times in 3.
    if rng.below(3) == 0 {
        txn.set_savepoint();
        let before = (eff.clone(), based.clone());
        for i in 0..slots.len() {
            if in_sd(i) || rng.below(2) == 0 {
                continue;
            }
            match write_one(ctx, &*txn, rng, &hs[i], slots[i], &mut eff[i], false)? {
                None => return Ok(()),
                Some(b) => based[i] |= b,
            }
        }
        if rng.below(3) != 0 {
            if step_own(ctx, "rollback_to_savepoint", txn.rollback_to_savepoint())?.is_none() {
                return Ok(());
            }
            ctx.txn.savepoint_rollbacks.fetch_add(1, Ordering::Relaxed);
            (eff, based) = before;
            let i = rng.below(slots.len() as u64) as usize;
            if !own_read(ctx, &*txn, &hs[i], slots[i], old[i], eff[i])? {
                return Ok(());
            }
        }
    }
    let changed: Vec<usize> = (0..slots.len()).filter(|&i| eff[i] != old[i]).collect();
    if rng.below(8) == 0 {
        txn.rollback()
            .map_err(|e| format!("transaction rollback failed: {e}"))?;
        ctx.txn.rollbacks.fetch_add(1, Ordering::Relaxed);
        no_trace(ctx, sdb, &slots, &hs, &old, &eff)?;
        if ctx.txn.bug == TxnBug::RollbackApplied {
            for &i in &changed {
                ctx.exp.commit(slots[i], eff[i])?;
            }
        }
        return Ok(());
    }
    for &i in &changed {
        ctx.exp.set_pending(slots[i], eff[i])?;
    }
    let entries: Vec<Change> = changed.iter().map(|&i| (slots[i], old[i], eff[i])).collect();
    let rec = match &ctx.txn.inflight {
        Some(inf) => inf.record(&entries)?,
        None => None,
    };
    if ctx.txn.bug == TxnBug::SplitCommit && rec.is_some() {
        split_commit(ctx, sdb, &slots, &hs, (&old, &eff, &based), &changed)?;
    }
    let clear = |rec: Option<u64>| match (&ctx.txn.inflight, rec) {
        (Some(inf), Some(r)) => inf.clear(r),
        _ => Ok(()),
    };
    // With the pessimistic DB, 1 in 4 commits in two phases: prepared first (in the WAL, not
    // visible, locks held), sometimes held prepared for a while, so that kills find prepared
    // transactions in flight; the open after a kill resolves them (`resolve_prepared`).
    let two_phase = ctx.txn.mode == TxnMode::Pessimistic && rng.below(4) == 0;
    let hold = rng.below(3) == 0;
    let committed = (|| {
        if two_phase {
            let name = format!("stress-{}-{}", std::process::id(), XID.fetch_add(1, Ordering::Relaxed));
            txn.prepare_as(name.as_bytes())?;
            ctx.txn.prepared.fetch_add(1, Ordering::Relaxed);
            if hold {
                std::thread::sleep(std::time::Duration::from_millis(rng.below(20)));
            }
        }
        txn.commit()
    })();
    match committed {
        Ok(()) => {
            ctx.txn.commits.fetch_add(1, Ordering::Relaxed);
            for &i in &changed {
                ctx.exp.commit(slots[i], eff[i])?;
            }
            clear(rec)?;
        }
        Err(e) if unexpected("transaction commit", &e).is_some() => {
            return Err(unexpected("transaction commit", &e).unwrap_or_default());
        }
        Err(e) if conflict(ctx, &e) => {
            // Nothing was written.
            for &i in &changed {
                ctx.exp.commit(slots[i], old[i])?;
            }
            clear(rec)?;
            no_trace(ctx, sdb, &slots, &hs, &old, &eff)?;
        }
        Err(e) => {
            // In doubt (fault injection): the record stays for the verification after the
            // reopen, which checks the transaction is all or nothing.
            let ch: Vec<u64> = changed.iter().map(|&i| slots[i]).collect();
            ctx.write_ok("transaction commit", &ch, Err(e))?;
        }
    }
    Ok(())
}

/// `--inject_bug=txn_split_commit`: a commit that is not atomic. One changed key the
/// transaction put or deleted is first written directly to the DB, then, 2 ms later, the
/// transaction commits (writing that key again, to the same value). A crash in between leaves
/// the transaction torn, which the verification after the restart must report.
fn split_commit(
    ctx: &Ctx,
    db: &DB,
    slots: &[u64],
    hs: &[Arc<ColumnFamily>],
    (old, eff, based): (&[u32], &[u32], &[bool]),
    changed: &[usize],
) -> Result<(), String> {
    let mk = ctx.max_key;
    let Some(&i) = changed.iter().find(|&&i| based[i]) else {
        return Ok(());
    };
    let k = slots[i] % mk;
    let r = if eff[i] == 0 {
        db.delete_cf(&hs[i], phys_key(k, old[i], mk))
    } else {
        db.put_cf(&hs[i], phys_key(k, eff[i], mk), value_of(slots[i], eff[i]))
    };
    r.map_err(|e| format!("split commit: {e}"))?;
    std::thread::sleep(std::time::Duration::from_millis(2));
    Ok(())
}

/// One buffered write of slot `s` in the transaction, updating `eff` (its value id there).
/// None when the transaction must be dropped, else whether the write was a put or a delete (not
/// a merge).
fn write_one(
    ctx: &Ctx,
    txn: &dyn Txn,
    rng: &mut Rng,
    h: &ColumnFamily,
    s: u64,
    eff: &mut u32,
    no_overwrite: bool,
) -> Result<Option<bool>, String> {
    let mk = ctx.max_key;
    let k = s % mk;
    let mut based = true;
    let (r, new) = if no_overwrite {
        // Put-if-absent, delete-if-present, of the key holding its value id (written once in a
        // transaction: the tool's SingleDelete contract, with a Delete here).
        if *eff != 0 {
            (txn.delete(h, &phys_key(k, *eff, mk)), 0)
        } else {
            let n = new_vid(rng, s, false);
            (txn.put(h, &phys_key(k, n, mk), &value_of(s, n)), n)
        }
    } else {
        let kb = phys_key(k, 0, mk);
        match rng.below(10) {
            0..=5 => {
                let n = new_vid(rng, s, false);
                (txn.put(h, &kb, &value_of(s, n)), n)
            }
            6 | 7 => (txn.delete(h, &kb), 0),
            _ => {
                based = false;
                let n = new_vid(rng, s, true);
                (txn.merge(h, &kb, &merge_operand(s, *eff, n)), n)
            }
        }
    };
    if step_own(ctx, "transaction write", r)?.is_none() {
        return Ok(None);
    }
    *eff = new;
    Ok(Some(based))
}

/// Read slot `s` inside the transaction: it must hold `eff`. False to drop the transaction.
fn own_read(ctx: &Ctx, txn: &dyn Txn, h: &ColumnFamily, s: u64, old: u32, eff: u32) -> Result<bool, String> {
    let mk = ctx.max_key;
    let k = s % mk;
    if k >= sd_start(mk) && old == 0 && eff == 0 {
        return Ok(true);
    }
    // In the no-overwrite region the DB key holds the value id: read the one written, or the
    // one deleted (then absent).
    let key = phys_key(k, if eff != 0 { eff } else { old }, mk);
    let Some(v) = step_own(ctx, "transaction get", txn.get(h, &key))? else {
        return Ok(false);
    };
    Ok(ctx.check("transaction get (its own writes)", s, eff, v.as_deref()))
}

/// After a rollback or a failed commit (the tool's locks still held): every key holds its old
/// value, none of the transaction's writes is visible.
fn no_trace(
    ctx: &Ctx,
    db: &DB,
    slots: &[u64],
    hs: &[Arc<ColumnFamily>],
    old: &[u32],
    eff: &[u32],
) -> Result<(), String> {
    let mk = ctx.max_key;
    for i in 0..slots.len() {
        let k = slots[i] % mk;
        let what = "get after a transaction rollback";
        if k >= sd_start(mk) {
            if old[i] != 0 {
                if let Some(v) = ctx.read_ok(what, db.get_cf(&hs[i], phys_key(k, old[i], mk)))? {
                    ctx.check(what, slots[i], old[i], v.as_deref());
                }
            }
            if eff[i] != 0 && eff[i] != old[i] {
                if let Some(v) = ctx.read_ok(what, db.get_cf(&hs[i], phys_key(k, eff[i], mk)))? {
                    ctx.check(what, slots[i], 0, v.as_deref());
                }
            }
        } else if let Some(v) = ctx.read_ok(what, db.get_cf(&hs[i], phys_key(k, 0, mk)))? {
            ctx.check(what, slots[i], old[i], v.as_deref());
        }
        ctx.txn.no_trace_checks.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Apply `ops` (family index, key, value: put; None: delete; merge with `merge`) in one
/// transaction and commit it: the batch across families of a transaction run. Returns the
/// engine's result; a conflict is counted and returned as `Ok(false)`.
pub fn commit_ops(
    ctx: &Ctx,
    sdb: &StressDb,
    rng: &mut Rng,
    wo: &WriteOptions,
    ops: &[TxnOp],
) -> shale::error::Result<bool> {
    let Some(txn) = sdb.begin(wo, rng) else {
        return Err(shale::Error::InvalidArgument(
            "--use_txn without a transaction DB".into(),
        ));
    };
    let r = (|| {
        for (h, k, v, merge) in ops {
            match (v, merge) {
                (Some(v), true) => txn.merge(h, k, v)?,
                (Some(v), false) => txn.put(h, k, v)?,
                (None, _) => txn.delete(h, k)?,
            }
        }
        txn.commit()
    })();
    match r {
        Ok(()) => {
            ctx.txn.commits.fetch_add(1, Ordering::Relaxed);
            Ok(true)
        }
        Err(e) if unexpected("transaction across families", &e).is_some() => Err(shale::Error::InvalidArgument(
            unexpected("transaction across families", &e).unwrap_or_default(),
        )),
        Err(e) if conflict(ctx, &e) => Ok(false),
        Err(e) => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// Counters.

/// Increment one or two counters in a transaction (retried up to 3 times on conflicts).
pub fn counter_op(ctx: &Ctx, sdb: &StressDb, rng: &mut Rng) -> Result<(), String> {
    let Some(cs) = &ctx.txn.counters else {
        return Ok(());
    };
    let a = rng.below(COUNTERS);
    let mut ids = vec![a];
    if rng.below(2) == 0 {
        ids.push((a + 1 + rng.below(COUNTERS - 1)) % COUNTERS);
    }
    let hs = ids
        .iter()
        .map(|&i| ctx.handle(sdb, counter_family(i, ctx.fams)))
        .collect::<Result<Vec<_>, _>>()?;
    let wo = ctx.wo(rng);
    for _attempt in 0..3 {
        let txn = sdb.begin(&wo, rng).ok_or("--use_txn without a transaction DB")?;
        let mut vals = Vec::new();
        let mut dropped = false;
        for (j, &i) in ids.iter().enumerate() {
            let (acked0, _) = cs.get(i);
            let r = if ctx.txn.bug == TxnBug::NoGetForUpdate {
                txn.get(&hs[j], &counter_key(i))
            } else {
                txn.get_for_update(&hs[j], &counter_key(i), true)
            };
            let Some(v) = step(ctx, "counter get_for_update", r)? else {
                dropped = true;
                break;
            };
            let v = decode_counter(i, v.as_deref())?;
            let (acked1, flight1) = cs.get(i);
            if v < acked0 || v > acked1 + flight1 {
                return Err(format!(
                    "MISMATCH: LOST UPDATE: counter {i} reads {v} in a transaction, but {acked0} increments were \
                     acknowledged before the read and {} at most may have committed after it",
                    acked1 + flight1
                ));
            }
            vals.push(v);
        }
        if dropped {
            continue;
        }
        // Give the others a chance to read the same counters meanwhile (and, with two
        // counters, to lock them in the other order).
        if rng.below(4) == 0 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        } else {
            std::thread::yield_now();
        }
        for (j, &i) in ids.iter().enumerate() {
            if step(
                ctx,
                "counter put",
                txn.put(&hs[j], &counter_key(i), &(vals[j] + 1).to_le_bytes()),
            )?
            .is_none()
            {
                dropped = true;
                break;
            }
        }
        if dropped {
            continue;
        }
        if rng.below(10) == 0 {
            txn.rollback()
                .map_err(|e| format!("transaction rollback failed: {e}"))?;
            ctx.txn.rollbacks.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        for &i in &ids {
            cs.update(i, |c| c.1 += 1)?;
        }
        match txn.commit() {
            Ok(()) => {
                for &i in &ids {
                    cs.update(i, |c| {
                        c.0 += 1;
                        c.1 -= 1;
                    })?;
                }
                ctx.txn.commits.fetch_add(1, Ordering::Relaxed);
                ctx.txn.increments.fetch_add(ids.len() as u64, Ordering::Relaxed);
                return Ok(());
            }
            Err(e) if conflict(ctx, &e) => {
                for &i in &ids {
                    cs.update(i, |c| c.1 -= 1)?;
                }
            }
            // In doubt (fault injection): the increment stays in flight until the counters
            // are settled after the reopen.
            Err(e) => {
                ctx.write_ok("counter commit", &[], Err(e))?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The transaction mode the flags ask for.
pub fn mode_of(fl: &crate::flags::Flags) -> TxnMode {
    match (fl.bool("use_txn"), fl.bool("use_optimistic_txn")) {
        (true, _) => TxnMode::Pessimistic,
        (_, true) => TxnMode::Optimistic,
        _ => TxnMode::Off,
    }
}
