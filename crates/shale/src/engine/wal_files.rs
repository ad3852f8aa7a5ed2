//! The life of WAL files after they are written: which the families still need, and retiring
//! the obsolete ones (deleted, or moved to the archive for `get_updates_since`), then purging
//! the archive by age and size.

use super::state::DbInner;
use super::state::DbState;
use crate::lsm::filename::{parse_file_name, wal_name, FileType};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The archive directory of obsolete WALs (RocksDB's `archive/`).
pub(crate) fn archive_dir(db: &DbInner) -> PathBuf {
    db.path.join("archive")
}

fn archiving(db: &DbInner) -> bool {
    db.opts.wal_ttl_seconds > 0 || db.opts.wal_size_limit_mb > 0
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A WAL no family needs any more: moved into the archive when one is kept, else deleted.
pub(crate) fn retire_wal(db: &DbInner, num: u64) {
    let from = wal_name(&db.path, num);
    if archiving(db) {
        let dir = archive_dir(db);
        if db.fs.create_dir_all(&dir).is_ok() && db.fs.rename(&from, &wal_name(&dir, num)).is_ok() {
            db.archived.lock().insert(num, now_secs());
            let _ = db.fs.sync_dir(&db.path);
            return;
        }
    }
    let _ = db.fs.remove_file(&from);
}

/// Delete archived WALs older than `WAL_ttl_seconds` (the time they were archived; a WAL found
/// in the archive at open counts as archived then) and the oldest ones beyond
/// `WAL_size_limit_MB`.
pub(crate) fn purge_archive(db: &DbInner) {
    let dir = archive_dir(db);
    if !db.fs.exists(&dir) {
        return;
    }
    let Ok(names) = db.fs.list(&dir) else {
        return;
    };
    let mut wals: Vec<(u64, u64)> = names
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileType::Wal(num)) => Some((num, db.fs.file_size(&wal_name(&dir, num)).unwrap_or(0))),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let now = now_secs();
    let mut archived = db.archived.lock();
    let ttl = db.opts.wal_ttl_seconds;
    let limit = db.opts.wal_size_limit_mb.saturating_mul(1 << 20);
    let mut total: u64 = wals.iter().map(|w| w.1).sum();
    for (num, size) in wals {
        let at = *archived.entry(num).or_insert(now);
        let expired = !archiving(db) || (ttl > 0 && now.saturating_sub(at) >= ttl);
        let too_big = limit > 0 && total > limit;
        if (expired || too_big) && db.fs.remove_file(&wal_name(&dir, num)).is_ok() {
            archived.remove(&num);
            total -= size;
        }
    }
}

/// The oldest WAL any family still needs (see [`VersionSet::min_log_number`]): a family with
/// empty memtables needs none older than the current WAL. Two-phase commit keeps older ones:
/// those holding prepared sections still unresolved or whose committed data is not flushed.
pub(crate) fn min_log_needed(db: &DbInner, st: &DbState) -> u64 {
    let current = db.wal.lock().number;
    let m = st.versions.min_log_number(&|id| {
        st.cfs
            .get(&id)
            .filter(|m| m.imm.is_empty() && m.mem.is_empty() && m.mem.range_dels.is_empty())
            .map(|_| current)
    });
    m.min(super::prepared_wals::min_prep_log(db, st, &[]))
}

/// Forget WALs below `min_log` and delete their files (unless file deletions are disabled:
/// then the files stay until they are enabled again).
pub(crate) fn delete_obsolete_wals(db: &DbInner, st: &DbState, min_log: u64) {
    {
        let mut wal = db.wal.lock();
        while wal.alive.front().is_some_and(|(n, _)| *n < min_log) {
            wal.alive.pop_front();
        }
    }
    if st.file_deletions_disabled > 0 {
        return;
    }
    if let Ok(names) = db.fs.list(&db.path) {
        for n in names {
            if let Some(crate::lsm::filename::FileType::Wal(num)) = crate::lsm::filename::parse_file_name(&n) {
                if num < min_log {
                    super::wal_files::retire_wal(db, num);
                }
            }
        }
    }
    super::wal_files::purge_archive(db);
}
