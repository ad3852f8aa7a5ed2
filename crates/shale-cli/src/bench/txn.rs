//! `shale bench`'s transaction side: the DB kinds db_bench opens (`--transaction_db`,
//! `--optimistic_transaction_db`) and the `randomtransaction` workload with its end-of-run
//! check (db_bench's RandomTransaction / RandomTransactionInserter and its verification).
//!
//! Each transaction adds one random increment to one random key of each of the
//! `--transaction_sets` sets (keys `SSSS<number>`, decimal values), so every committed
//! transaction adds the same amount to every set: at the end all sets must have the same sum.

use std::ops::Deref;
use std::path::Path;

use shale::error::Result;
use shale::{
    ErrorKind, OptimisticTransactionDB, Options, ReadOptions, TransactionDB, TransactionDBOptions, TransactionOptions,
    WriteBatch, WriteOptions, DB,
};

use super::random::Random64;

/// The DB a benchmark runs against.
pub enum BenchDb {
    Plain(DB),
    Pessimistic(TransactionDB),
    Optimistic(OptimisticTransactionDB),
}

/// db_bench's transaction flags.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxnFlags {
    pub transaction_db: bool,
    pub optimistic: bool,
    pub sets: u64,
    pub set_snapshot: bool,
    pub lock_timeout_ms: u64,
}

impl BenchDb {
    pub fn open(o: &Options, path: &Path, t: &TxnFlags) -> Result<BenchDb> {
        if t.optimistic {
            OptimisticTransactionDB::open(o, path).map(BenchDb::Optimistic)
        } else if t.transaction_db {
            let mut tdo = TransactionDBOptions::new();
            tdo.set_txn_lock_timeout(t.lock_timeout_ms.min(i64::MAX as u64) as i64);
            TransactionDB::open(o, &tdo, path).map(BenchDb::Pessimistic)
        } else {
            DB::open(o, path).map(BenchDb::Plain)
        }
    }
    /// Writes go through the transaction DB (a pessimistic one locks the batch's keys).
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        match self {
            BenchDb::Pessimistic(d) => d.write_opt(batch, wo),
            _ => self.deref().write_opt(batch, wo),
        }
    }
    pub fn put_opt(&self, key: &[u8], value: &[u8], wo: &WriteOptions) -> Result<()> {
        match self {
            BenchDb::Pessimistic(d) => d.put_opt(key, value, wo),
            _ => self.deref().put_opt(key, value, wo),
        }
    }
}

impl Deref for BenchDb {
    type Target = DB;
    fn deref(&self) -> &DB {
        match self {
            BenchDb::Plain(d) => d,
            BenchDb::Pessimistic(d) => d.base_db(),
            BenchDb::Optimistic(d) => d.base_db(),
        }
    }
}

fn set_key(set: u64, k: u64) -> Vec<u8> {
    format!("{:04}{}", set + 1, k).into_bytes()
}

fn parse(v: Option<Vec<u8>>) -> std::result::Result<u64, String> {
    match v {
        None => Ok(0),
        Some(v) => match std::str::from_utf8(&v).ok().and_then(|s| s.parse::<u64>().ok()) {
            Some(n) if n != 0 && n != u64::MAX => Ok(n),
            _ => Err(format!("unexpected value {:?}", String::from_utf8_lossy(&v))),
        },
    }
}

/// One thread's tally.
#[derive(Default)]
pub struct Tally {
    pub committed: u64,
    pub aborted: u64,
    pub bytes: u64,
}

/// Whether an error is one a transaction may meet under contention (counted as an abort).
fn contention(e: &shale::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain | ErrorKind::Expired
    )
}

/// Fisher-Yates with the thread's generator.
fn shuffled(n: u64, rand: &mut Random64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    for i in (1..v.len()).rev() {
        let j = (rand.next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// One random transaction (or, on a plain DB, one batch): Ok(true) committed or deliberately
/// rolled back (a success for db_bench), Ok(false)
/// aborted by contention, Err on anything unexpected.
pub fn one_transaction(
    db: &BenchDb,
    t: &TxnFlags,
    num_keys: u64,
    wo: &WriteOptions,
    rand: &mut Random64,
    tally: &mut Tally,
) -> std::result::Result<bool, String> {
    let incr = rand.next() % 100 + 1;
    let sets = shuffled(t.sets, rand);
    macro_rules! txn_body {
        ($txn:expr, $ro:expr, $optimistic:expr) => {{
            let txn = $txn;
            let ro: &ReadOptions = $ro;
            for set in sets {
                let key = set_key(set, rand.next() % num_keys.max(1));
                let for_update = rand.next().is_multiple_of(2);
                let got = if for_update {
                    txn.get_for_update_opt(&key, true, ro)
                } else {
                    txn.get_opt(&key, ro)
                };
                let v = match got {
                    Ok(v) => parse(v)?,
                    Err(e) if !$optimistic && contention(&e) => {
                        let _ = txn.rollback();
                        return Ok(false);
                    }
                    Err(e) => return Err(format!("get: {e}")),
                };
                let sum = (v + incr).to_string();
                match txn.put(&key, &sum) {
                    Ok(()) => {}
                    Err(e) if !for_update && contention(&e) => {
                        let _ = txn.rollback();
                        return Ok(false);
                    }
                    Err(e) => return Err(format!("put: {e}")),
                }
                tally.bytes += (key.len() + sum.len()) as u64;
            }
            // As db_bench: a pessimistic transaction is prepared first 9 times in 10 (two-phase
            // commit: the WAL gets its prepared section, then the commit marker).
            if !$optimistic && !rand.next().is_multiple_of(10) {
                txn.prepare().map_err(|e| format!("prepare: {e}"))?;
            }
            // 1 in 20 is rolled back on purpose; db_bench counts such a rollback (its status is
            // OK) among the transactions, not the aborts
            if rand.next().is_multiple_of(20) {
                txn.rollback().map_err(|e| format!("rollback: {e}"))?;
                return Ok(true);
            }
            match txn.commit() {
                Ok(()) => Ok(true),
                Err(e) if contention(&e) => Ok(false),
                Err(e) => Err(format!("commit: {e}")),
            }
        }};
    }
    match db {
        BenchDb::Optimistic(d) => {
            let mut oo = shale::OptimisticTransactionOptions::new();
            oo.set_snapshot(t.set_snapshot);
            txn_body!(d.transaction_opt(wo, &oo), &ReadOptions::default(), true)
        }
        BenchDb::Pessimistic(d) => {
            let mut to = TransactionOptions::new();
            to.set_snapshot(t.set_snapshot);
            to.set_lock_timeout(t.lock_timeout_ms.min(i64::MAX as u64) as i64);
            let txn = d.transaction_opt(wo, &to);
            // Named as db_bench names them (unique among live transactions), for `prepare`.
            static NAMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NAMES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            txn.set_name(format!("txn{}-{n}", std::process::id()).as_bytes())
                .map_err(|e| format!("set_name: {e}"))?;
            // read at a snapshot: always when the transaction has none yet, else half the time
            let mut ro = ReadOptions::default();
            if !t.set_snapshot || rand.next().is_multiple_of(2) {
                txn.set_snapshot().map_err(|e| format!("set_snapshot: {e}"))?;
                if let Some(s) = txn.snapshot().as_snapshot() {
                    ro.set_snapshot(s);
                }
            }
            txn_body!(txn, &ro, false)
        }
        BenchDb::Plain(d) => {
            let mut batch = WriteBatch::new();
            for set in sets {
                let key = set_key(set, rand.next() % num_keys.max(1));
                let v = parse(d.get(&key).map_err(|e| format!("get: {e}"))?)?;
                let sum = (v + incr).to_string();
                tally.bytes += (key.len() + sum.len()) as u64;
                batch.put(&key, sum);
            }
            d.write_opt(batch, wo).map_err(|e| format!("write: {e}"))?;
            Ok(true)
        }
    }
}

/// The end-of-run check: every set's values add up to the same total. Returns that total.
pub fn verify(db: &DB, sets: u64) -> std::result::Result<u64, String> {
    let mut first: Option<(u64, u64)> = None;
    for set in 0..sets {
        let prefix = format!("{:04}", set + 1).into_bytes();
        let mut it = db.raw_iterator();
        it.seek(&prefix);
        let mut total: u64 = 0;
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if !k.starts_with(&prefix) {
                break;
            }
            total = total.wrapping_add(parse(Some(v.to_vec()))?);
            it.next();
        }
        it.status().map_err(|e| format!("iterator: {e}"))?;
        match first {
            None => first = Some((set, total)),
            Some((s0, t0)) if t0 != total => {
                return Err(format!(
                    "inconsistent totals: set {} has {t0}, set {} has {total}",
                    s0 + 1,
                    set + 1
                ))
            }
            Some(_) => {}
        }
    }
    Ok(first.map_or(0, |f| f.1))
}
