//! `--secondary_catch_up_one_in` (db_stress's flag): a secondary instance of the stressed DB
//! (`DB::open_as_secondary`, its files in `<db>.stress-secondary`), opened at the first such
//! operation and kept across the primary's reopens. The thread locks a run of up to 16
//! consecutive keys, has the secondary catch up while it holds them, and checks that the
//! secondary holds each key's acknowledged value — they are in the primary's WAL or tables,
//! which is all a secondary reads. Under `disable_wal` acknowledged writes may be only in the
//! primary's memtable, so the catch-up runs and its errors count, but the keys are not checked.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use shale::{ColumnFamilyDescriptor, DB};

use super::ingest::{check_keys, fam_opts, key_run, lock_run, tolerated, wanted};
use super::model::{cf_name, Rng};
use super::run::Ctx;

pub(crate) struct SecondaryCtx {
    pub(crate) one_in: u64,
    dir: PathBuf,
    db: Mutex<Option<DB>>,
    catch_ups: AtomicU64,
    keys_checked: AtomicU64,
}

impl SecondaryCtx {
    pub(crate) fn new(one_in: u64, db: &std::path::Path) -> SecondaryCtx {
        SecondaryCtx {
            one_in,
            dir: PathBuf::from(format!("{}.stress-secondary", db.display())),
            db: Mutex::new(None),
            catch_ups: AtomicU64::new(0),
            keys_checked: AtomicU64::new(0),
        }
    }

    pub(crate) fn on(&self) -> bool {
        self.one_in > 0
    }

    /// The progress-line fields the crash-test driver reads.
    pub(crate) fn progress(&self) -> String {
        if !self.on() {
            return String::new();
        }
        format!(" catch_ups={}", self.catch_ups.load(Ordering::Relaxed))
    }

    pub(crate) fn report(&self) -> String {
        format!(
            "secondary: catch-ups={} keys_checked={}",
            self.catch_ups.load(Ordering::Relaxed),
            self.keys_checked.load(Ordering::Relaxed)
        )
    }
}

fn open(ctx: &Ctx) -> shale::error::Result<DB> {
    let dir = &ctx.sec.dir;
    if ctx.fams > 1 {
        let descs = (0..ctx.fams).map(|i| ColumnFamilyDescriptor::new(cf_name(i), fam_opts(ctx, i).clone()));
        DB::open_cf_descriptors_as_secondary(&ctx.opts, &ctx.path, dir, descs)
    } else {
        DB::open_as_secondary(&ctx.opts, &ctx.path, dir)
    }
}

/// One catch-up of the secondary and the check of a run of keys of family `cf`.
pub(crate) fn catch_up_op(ctx: &Ctx, cf: u64, rng: &mut Rng) -> Result<(), String> {
    let (lo, hi) = key_run(ctx, rng);
    let locks = lock_run(ctx, cf, lo, hi);
    let want = wanted(ctx, cf, lo, hi);
    let mut g = ctx.sec.db.lock().unwrap_or_else(|p| p.into_inner());
    let r = match g.as_ref() {
        Some(db) => db.try_catch_up_with_primary(),
        None => open(ctx).map(|db| {
            *g = Some(db);
        }),
    };
    drop(locks);
    if let Err(e) = r {
        return tolerated(ctx, "secondary catch-up", e);
    }
    ctx.sec.catch_ups.fetch_add(1, Ordering::Relaxed);
    if ctx.cfg.disable_wal {
        return Ok(());
    }
    let db = g.as_ref().ok_or("the secondary is not open")?;
    let n = check_keys(ctx, db, cf, &want, "secondary get")?;
    ctx.sec.keys_checked.fetch_add(n, Ordering::Relaxed);
    Ok(())
}
