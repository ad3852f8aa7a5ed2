//! External-file ingestion and checkpoints in the stress run (db_stress's
//! `--ingest_external_file_one_in` and `--checkpoint_one_in`).
//!
//! Ingest: the thread locks a run of up to 16 consecutive keys below the no-overwrite region
//! of the operation's family, writes new values for them (one in five a deletion) into an
//! external file with `SstFileWriter` (the family's options, so the run's file system), marks
//! the keys pending, ingests the file (`move_files` at random) and, once the ingest returns,
//! commits the new values as an acknowledged write: the ingest's MANIFEST edit is synced.
//!
//! Checkpoint: the thread locks a run of up to 16 consecutive keys of one family, notes their
//! expected values, creates the checkpoint while still holding the locks (so no other thread
//! changes them meanwhile: each must be in the checkpoint exactly as the oracle has it), opens
//! it read-only, checks those keys exactly, and removes it. Keys not locked are not checked.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use shale::checkpoint::Checkpoint;
use shale::{ColumnFamilyDescriptor, IngestExternalFileOptions, Options, SstFileWriter, DB};

use super::model::{cf_name, key_bytes, new_vid, phys_key, sd_start, value_of, vid_desc, Rng};
use super::run::Ctx;

/// The ingest/checkpoint settings and counters of a run.
pub(crate) struct IngestCtx {
    pub(crate) ingest_one_in: u64,
    pub(crate) checkpoint_one_in: u64,
    /// `--inject_bug=ingest_forget`: the oracle keeps the old values of an ingested file.
    pub(crate) bug_forget: bool,
    /// The scratch directory beside the DB (`<db>.stress-scratch`).
    pub(crate) scratch: PathBuf,
    seq: AtomicU64,
    pub(crate) ingests: AtomicU64,
    pub(crate) ingested_keys: AtomicU64,
    pub(crate) checkpoints: AtomicU64,
    pub(crate) checkpoint_keys_checked: AtomicU64,
}

impl IngestCtx {
    pub(crate) fn new(ingest_one_in: u64, checkpoint_one_in: u64, bug_forget: bool, db: &Path) -> IngestCtx {
        IngestCtx {
            ingest_one_in,
            checkpoint_one_in,
            bug_forget,
            scratch: PathBuf::from(format!("{}.stress-scratch", db.display())),
            seq: AtomicU64::new(0),
            ingests: AtomicU64::new(0),
            ingested_keys: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            checkpoint_keys_checked: AtomicU64::new(0),
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.ingest_one_in > 0 || self.checkpoint_one_in > 0
    }

    /// Create the scratch directory, emptied of what a killed run left.
    pub(crate) fn prepare(&self) -> Result<(), String> {
        if !self.on() {
            return Ok(());
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
        std::fs::create_dir_all(&self.scratch)
            .map_err(|e| format!("cannot create the scratch directory {}: {e}", self.scratch.display()))
    }

    /// The fields of the progress line (parsed by the crash test).
    pub(crate) fn progress(&self) -> String {
        if !self.on() {
            return String::new();
        }
        format!(
            " ingests={} checkpoints={}",
            self.ingests.load(Ordering::Relaxed),
            self.checkpoints.load(Ordering::Relaxed)
        )
    }

    /// The end-of-run report line.
    pub(crate) fn report(&self) -> String {
        format!(
            "stress: ingests={} ingested_keys={} checkpoints={} checkpoint_keys_checked={}",
            self.ingests.load(Ordering::Relaxed),
            self.ingested_keys.load(Ordering::Relaxed),
            self.checkpoints.load(Ordering::Relaxed),
            self.checkpoint_keys_checked.load(Ordering::Relaxed)
        )
    }

    fn next_name(&self, what: &str) -> PathBuf {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        self.scratch.join(format!("{what}-{n}"))
    }
}

/// The options of family `cf`.
pub(crate) fn fam_opts(ctx: &Ctx, cf: u64) -> &Options {
    if cf == 0 {
        &ctx.opts
    } else {
        &ctx.fam_opts[cf as usize - 1]
    }
}

/// An error of a step outside the DB's write path (writing the external file, creating or
/// reading a checkpoint): tolerated (the step is skipped) when fault injection explains it.
pub(crate) fn tolerated(ctx: &Ctx, what: &str, e: shale::Error) -> Result<(), String> {
    if ctx.faults.is_some() && (e.is_io() || e.is_corruption() || matches!(e, shale::Error::Background(_))) {
        ctx.errors_tolerated.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    Err(format!("{what} failed: {e}"))
}

/// One ingest of a run of consecutive keys of family `cf`.
pub(crate) fn ingest_op(ctx: &Ctx, db: &DB, cf: u64, rng: &mut Rng) -> Result<(), String> {
    let sd = sd_start(ctx.max_key);
    // External files are block-based tables; the no-overwrite region keeps its strict
    // put/single_delete discipline.
    if sd == 0 || ctx.cfg.plain {
        return Ok(());
    }
    let h = ctx.handle(db, cf)?;
    let lo = rng.below(sd);
    let hi = (lo + 1 + rng.below(16)).min(sd);
    let slots: Vec<u64> = (lo..hi).map(|k| ctx.slot(cf, k)).collect();
    let _ls: Vec<_> = slots.iter().map(|&s| ctx.lock_key(s)).collect();
    if slots.iter().any(|&s| ctx.in_doubt(s)) {
        return Ok(());
    }
    let file = ctx.ing.next_name("ingest").with_extension("sst");
    let news: Vec<u32> = slots
        .iter()
        .map(|&s| if rng.below(5) == 0 { 0 } else { new_vid(rng, s, false) })
        .collect();
    let mut w = SstFileWriter::create(fam_opts(ctx, cf));
    let written = (|| -> shale::error::Result<()> {
        w.open(&file)?;
        for (k, (&s, &n)) in (lo..hi).zip(slots.iter().zip(&news)) {
            if n == 0 {
                w.delete(key_bytes(k))?;
            } else {
                w.put(key_bytes(k), value_of(s, n))?;
            }
        }
        w.finish()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&file);
        return tolerated(ctx, "writing an external file", e);
    }
    let olds: Vec<u32> = slots.iter().map(|&s| ctx.exp.get(s).committed).collect();
    for (&s, &n) in slots.iter().zip(&news) {
        ctx.exp.set_pending(s, n)?;
    }
    let mut io = IngestExternalFileOptions::new();
    io.set_move_files(rng.below(2) == 0);
    let r = db.ingest_external_file_cf_opts(&h, &io, vec![&file]);
    let _ = std::fs::remove_file(&file);
    if ctx.write_ok("ingest_external_file", &slots, r)? {
        // The bug: the oracle keeps the old values.
        let record = if ctx.ing.bug_forget { &olds } else { &news };
        for (&s, &n) in slots.iter().zip(record) {
            ctx.exp.commit(s, n)?;
        }
        ctx.ing.ingests.fetch_add(1, Ordering::Relaxed);
        ctx.ing.ingested_keys.fetch_add(slots.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// One checkpoint, checked on a run of keys of family `cf` locked while it was created.
pub(crate) fn checkpoint_op(ctx: &Ctx, db: &DB, cf: u64, rng: &mut Rng) -> Result<(), String> {
    let dir = ctx.ing.next_name("checkpoint");
    let (lo, hi) = key_run(ctx, rng);
    let want = {
        let _ls = lock_run(ctx, cf, lo, hi);
        let want = wanted(ctx, cf, lo, hi);
        let made = Checkpoint::new(db).and_then(|c| c.create_checkpoint(&dir));
        if let Err(e) = made {
            let _ = std::fs::remove_dir_all(&dir);
            return tolerated(ctx, "create_checkpoint", e);
        }
        want
    };
    let r = check_checkpoint(ctx, &dir, cf, &want);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// A run of up to 16 consecutive keys (`lo..hi`).
pub(crate) fn key_run(ctx: &Ctx, rng: &mut Rng) -> (u64, u64) {
    let mk = ctx.max_key;
    let lo = rng.below(mk);
    (lo, (lo + 1 + rng.below(16)).min(mk))
}

/// Lock keys `lo..hi` of family `cf` (in key order, as every thread does).
pub(crate) fn lock_run(ctx: &Ctx, cf: u64, lo: u64, hi: u64) -> Vec<std::sync::MutexGuard<'_, ()>> {
    (lo..hi).map(|k| ctx.lock_key(ctx.slot(cf, k))).collect()
}

/// The committed value id of each key of `lo..hi` (locked by the caller) that a copy of the DB
/// made now must hold: keys in doubt and absent keys of the no-overwrite region (no DB key to
/// look up) are left out.
pub(crate) fn wanted(ctx: &Ctx, cf: u64, lo: u64, hi: u64) -> Vec<(u64, u32)> {
    let sd = sd_start(ctx.max_key);
    (lo..hi)
        .filter(|&k| !ctx.in_doubt(ctx.slot(cf, k)))
        .map(|k| (k, ctx.exp.get(ctx.slot(cf, k)).committed))
        .filter(|&(k, c)| k < sd || c != 0)
        .collect()
}

fn check_checkpoint(ctx: &Ctx, dir: &Path, cf: u64, want: &[(u64, u32)]) -> Result<(), String> {
    let opened = if ctx.fams > 1 {
        let descs = (0..ctx.fams).map(|i| ColumnFamilyDescriptor::new(cf_name(i), fam_opts(ctx, i).clone()));
        DB::open_cf_descriptors_read_only(&ctx.opts, dir, descs, false)
    } else {
        DB::open_for_read_only(&ctx.opts, dir, false)
    };
    let ck = match opened {
        Ok(d) => d,
        Err(e) => return tolerated(ctx, "opening a checkpoint read-only", e),
    };
    let n = check_keys(ctx, &ck, cf, want, "checkpoint get")?;
    ctx.ing.checkpoint_keys_checked.fetch_add(n, Ordering::Relaxed);
    ctx.ing.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Check that `db` (a copy or view of the stressed DB) holds each key of `want` with its value
/// id (a mismatch fails the run); returns how many keys were read (a read error tolerated under
/// fault injection skips the key).
pub(crate) fn check_keys(ctx: &Ctx, db: &DB, cf: u64, want: &[(u64, u32)], what: &str) -> Result<u64, String> {
    let h = ctx.handle(db, cf)?;
    let mut n = 0;
    for &(k, c) in want {
        let s = ctx.slot(cf, k);
        let Some(v) = ctx.read_ok(what, db.get_cf(&h, phys_key(k, c, ctx.max_key)))? else {
            continue;
        };
        n += 1;
        let ok = match v.as_deref() {
            None => c == 0,
            Some(v) => c != 0 && v == value_of(s, c).as_slice(),
        };
        if !ok {
            ctx.mismatch(what, s, vid_desc(c), v.as_deref());
            break;
        }
    }
    Ok(n)
}
