//! Prefix extractor changes during a stress run (`--prefix_size` with
//! `--prefix_change_one_in`): now and then a thread switches every family's extractor with
//! `set_options` (to none, or a fixed or capped one of another length). Files and memtables built
//! with the old extractor must then be read without their prefix filters, never wrongly, which
//! every later read checks. A scan's prefix mode depends on the extractor (`scan_check`), so scans
//! hold the read side of the lock a change holds for writing. A reopen goes back to the
//! extractor of the run's options.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

use shale::DB;

use super::model::Rng;
use super::run::Ctx;

pub(crate) struct PrefixCtx {
    /// Bytes of the fixed (or capped, the same for the stress keys of 8+ bytes) extractor the
    /// families use now; 0: none.
    now: RwLock<usize>,
    /// The run's extractor (`--prefix_size`), which a reopen restores.
    initial: usize,
    change_one_in: u64,
    changes: AtomicU64,
}

impl PrefixCtx {
    pub(crate) fn new(initial: usize, change_one_in: u64) -> PrefixCtx {
        PrefixCtx {
            now: RwLock::new(initial),
            initial,
            change_one_in,
            changes: AtomicU64::new(0),
        }
    }

    /// The extractor's length for a scan, held until the scan ends.
    pub(crate) fn current(&self) -> RwLockReadGuard<'_, usize> {
        self.now.read().unwrap_or_else(|p| p.into_inner())
    }

    /// After a reopen (with the DB's write lock held, so no scan runs).
    pub(crate) fn reopened(&self) {
        *self.now.write().unwrap_or_else(|p| p.into_inner()) = self.initial;
    }

    /// Whether this operation changes the extractor (no random number is drawn without one, so
    /// the operations of other runs' seeds are unchanged).
    pub(crate) fn due(&self, rng: &mut Rng) -> bool {
        self.initial > 0 && self.change_one_in > 0 && rng.below(self.change_one_in) == 0
    }

    pub(crate) fn report(&self) -> Option<String> {
        (self.initial > 0 && self.change_one_in > 0).then(|| {
            format!(
                "stress: prefix extractor changes={}",
                self.changes.load(Ordering::Relaxed)
            )
        })
    }
}

/// Switch every family to another extractor (faults off meanwhile: a failed OPTIONS-file write
/// would leave it unknown which extractor a family uses).
pub(crate) fn change_prefix_op(ctx: &Ctx, db: &DB, rng: &mut Rng) -> Result<(), String> {
    let (n, value) = match rng.below(6) {
        0 => (0, "nullptr"),
        1 => (6, "rocksdb.FixedPrefix.6"),
        2 => (7, "fixed:7"),
        3 => (7, "rocksdb.CappedPrefix.7"),
        4 => (8, "capped:8"),
        _ => (5, "fixed:5"),
    };
    let p = &ctx.prefix;
    let mut now = p.now.write().unwrap_or_else(|e| e.into_inner());
    let was = ctx.faults.as_ref().is_some_and(|f| f.enabled());
    ctx.set_faults(false);
    let r = (0..ctx.fams).try_for_each(|cf| {
        let h = ctx.handle(db, cf)?;
        db.set_options_cf(&h, &[("prefix_extractor", value)])
            .map_err(|e| format!("set_options prefix_extractor={value}: {e}"))
    });
    ctx.set_faults(was);
    r?;
    *now = n;
    p.changes.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
