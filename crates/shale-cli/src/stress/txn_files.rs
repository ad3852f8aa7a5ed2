//! The files of `--use_txn` beside the expected state: the counters' oracle (`<expected>.txn`:
//! per counter the increments acknowledged and in flight) and the transactions being committed
//! (`<expected>.txn-inflight`), with their checks at verification. See `txn`.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use shale::DB;

use super::run::Ctx;

// ---------------------------------------------------------------------------------------------
// Counters and statistics.

/// Counters incremented by transactions of every thread.
pub const COUNTERS: u64 = 4;
const CMAGIC: &[u8; 8] = b"SHXTXNC1";

/// The DB key of counter `i`: above every key of the key space (`[0xff; 8]` then `C`, `i`).
pub fn counter_key(i: u64) -> Vec<u8> {
    let mut k = vec![0xff; 8];
    k.extend_from_slice(&[b'C', i as u8]);
    k
}

/// The family of counter `i`.
pub fn counter_family(i: u64, fams: u64) -> u64 {
    i % fams
}

/// The counters' oracle: per counter the increments acknowledged and those in flight, in memory
/// and in a file (one pwrite of 16 bytes per change, under the counter's mutex).
pub struct Counters {
    file: File,
    c: Vec<Mutex<(u64, u64)>>,
}

impl Counters {
    pub fn open(path: &Path, db_existed: bool) -> Result<Counters, String> {
        let existed = path.exists();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let len = 8 + 16 * COUNTERS;
        let mut c = Vec::new();
        let mut data = vec![0u8; len as usize];
        if existed {
            file.read_exact_at(&mut data, 0)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if &data[..8] != CMAGIC {
                return Err(format!("{} is not a transaction-counter file", path.display()));
            }
        } else {
            data[..8].copy_from_slice(CMAGIC);
            file.write_all_at(&data, 0).map_err(|e| e.to_string())?;
            file.sync_all().map_err(|e| e.to_string())?;
        }
        for i in 0..COUNTERS as usize {
            let at = 8 + 16 * i;
            let a = u64::from_le_bytes(data[at..at + 8].try_into().unwrap_or_default());
            let f = u64::from_le_bytes(data[at + 8..at + 16].try_into().unwrap_or_default());
            if !db_existed && (a, f) != (0, 0) {
                return Err(format!(
                    "the counters in {} are not empty but the database is missing (use --destroy_db_initially)",
                    path.display()
                ));
            }
            c.push(Mutex::new((a, f)));
        }
        Ok(Counters { file, c })
    }

    pub fn get(&self, i: u64) -> (u64, u64) {
        *self.c[i as usize].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Change counter `i`'s (acked, in flight) with `f` and persist it.
    pub fn update(&self, i: u64, f: impl FnOnce(&mut (u64, u64))) -> Result<(), String> {
        let mut g = self.c[i as usize].lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&g.0.to_le_bytes());
        b[8..].copy_from_slice(&g.1.to_le_bytes());
        self.file
            .write_all_at(&b, 8 + 16 * i)
            .map_err(|e| format!("transaction-counter file write: {e}"))
    }
}

pub fn counters_path(expected: &Path) -> PathBuf {
    PathBuf::from(format!("{}.txn", expected.display()))
}

pub fn inflight_path(expected: &Path) -> PathBuf {
    PathBuf::from(format!("{}.txn-inflight", expected.display()))
}

/// The transactions being committed (`<expected>.txn-inflight`), so that the verification after
/// a crash can check each is all or nothing: one record per committing transaction, written
/// (one pwrite) after its keys are marked pending and before `commit`, cleared once the oracle
/// took the outcome. A record: the entry count (u64), then up to `MAX_REC` entries (slot u64,
/// old value id u32, new value id u32).
pub struct Inflight {
    file: File,
    /// Free record indexes (one per thread suffices; an index whose commit failed under fault
    /// injection stays taken until the next verification).
    free: Mutex<Vec<u64>>,
    records: u64,
}

const MAX_REC: usize = 16;

/// A changed key of a committing transaction: its slot, old and new value ids.
pub type Change = (u64, u32, u32);

const REC: u64 = 8 + 16 * MAX_REC as u64;

impl Inflight {
    pub fn open(path: &Path, records: u64) -> Result<Inflight, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        Ok(Inflight {
            file,
            free: Mutex::new((0..records).collect()),
            records,
        })
    }

    /// Record a committing transaction; its record index (None when none is free or the
    /// transaction is too small or too large: it is then not checked for atomicity).
    pub fn record(&self, entries: &[Change]) -> Result<Option<u64>, String> {
        if entries.len() < 2 || entries.len() > MAX_REC {
            return Ok(None);
        }
        let Some(r) = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
            return Ok(None);
        };
        let mut b = Vec::with_capacity(REC as usize);
        b.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        for &(s, o, n) in entries {
            b.extend_from_slice(&s.to_le_bytes());
            b.extend_from_slice(&o.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
        }
        self.file
            .write_all_at(&b, r * REC)
            .map_err(|e| format!("in-flight transaction file write: {e}"))?;
        Ok(Some(r))
    }

    /// The outcome of record `r` is in the oracle: clear it and free the index.
    pub fn clear(&self, r: u64) -> Result<(), String> {
        self.file
            .write_all_at(&0u64.to_le_bytes(), r * REC)
            .map_err(|e| format!("in-flight transaction file write: {e}"))?;
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(r);
        Ok(())
    }

    /// Every record in the file (a previous run may have had more threads).
    pub fn read_all(&self) -> Result<Vec<Vec<Change>>, String> {
        let len = self.file.metadata().map_err(|e| e.to_string())?.len();
        let mut data = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut data, 0)
            .map_err(|e| format!("cannot read the in-flight transaction file: {e}"))?;
        let mut out = Vec::new();
        for rec in data.chunks_exact(REC as usize) {
            let n = u64::from_le_bytes(rec[..8].try_into().unwrap_or_default()) as usize;
            if n == 0 {
                continue;
            }
            if n > MAX_REC {
                return Err("the in-flight transaction file is damaged".into());
            }
            out.push(
                rec[8..8 + 16 * n]
                    .chunks_exact(16)
                    .map(|e| {
                        (
                            u64::from_le_bytes(e[..8].try_into().unwrap_or_default()),
                            u32::from_le_bytes(e[8..12].try_into().unwrap_or_default()),
                            u32::from_le_bytes(e[12..16].try_into().unwrap_or_default()),
                        )
                    })
                    .collect(),
            );
        }
        Ok(out)
    }

    /// After a check: an empty file with every index free (no transaction is running).
    pub fn reset(&self) -> Result<(), String> {
        self.file.set_len(0).map_err(|e| e.to_string())?;
        self.file.set_len(self.records * REC).map_err(|e| e.to_string())?;
        *self.free.lock().unwrap_or_else(|p| p.into_inner()) = (0..self.records).collect();
        Ok(())
    }
}

/// After the verification settled every key (`settled`: the value id each slot holds), check
/// that each transaction that was committing when the process stopped (or whose commit failed
/// under fault injection) is all or nothing, then forget them.
pub fn check_inflight(ctx: &Ctx, settled: &[u32], lossy: bool) -> Result<(), String> {
    let Some(inf) = &ctx.txn.inflight else {
        return Ok(());
    };
    if !lossy {
        for rec in inf.read_all()? {
            let new = rec.iter().all(|&(s, _, n)| settled.get(s as usize) == Some(&n));
            let old = rec.iter().all(|&(s, o, _)| settled.get(s as usize) == Some(&o));
            if !new && !old {
                let list: Vec<String> = rec
                    .iter()
                    .map(|&(s, o, n)| {
                        format!(
                            "key {}{} old {o} new {n} holds {}",
                            s % ctx.max_key,
                            ctx.fam_desc(s),
                            settled.get(s as usize).copied().unwrap_or(0)
                        )
                    })
                    .collect();
                let msg = format!(
                    "MISMATCH in verification: a transaction was torn by the crash (some keys hold its new values, \
                     some their old ones): {}",
                    list.join("; ")
                );
                ctx.fail(msg.clone());
                return Err(msg);
            }
            ctx.txn.atomic_checked.fetch_add(1, Ordering::Relaxed);
        }
    }
    inf.reset()
}

pub fn decode_counter(i: u64, v: Option<&[u8]>) -> Result<u64, String> {
    match v {
        None => Ok(0),
        Some(b) => <[u8; 8]>::try_from(b)
            .map(u64::from_le_bytes)
            .map_err(|_| format!("MISMATCH: counter {i} holds a malformed value of {} bytes", b.len())),
    }
}

/// Check every counter against its oracle (`acked <= value <= acked + in flight`) and settle
/// it to the value found. Returns the sum of the counters.
pub fn verify_counters(ctx: &Ctx, db: &DB) -> Result<Option<u64>, String> {
    let Some(cs) = &ctx.txn.counters else {
        return Ok(None);
    };
    let mut sum = 0;
    for i in 0..COUNTERS {
        let h = ctx.handle(db, counter_family(i, ctx.fams))?;
        let v = db
            .get_cf(&h, counter_key(i))
            .map_err(|e| format!("get counter {i} during verification: {e}"))?;
        let v = decode_counter(i, v.as_deref())?;
        let (acked, flight) = cs.get(i);
        if v < acked || v > acked + flight {
            let msg = format!(
                "MISMATCH in verification: {}counter {i} holds {v}, expected {acked} acknowledged increments{}",
                if v < acked { "LOST UPDATE: " } else { "" },
                if flight > 0 {
                    format!(" (+ up to {flight} in flight)")
                } else {
                    String::new()
                }
            );
            ctx.fail(msg.clone());
            return Err(msg);
        }
        cs.update(i, |c| *c = (v, 0))?;
        sum += v;
    }
    Ok(Some(sum))
}
