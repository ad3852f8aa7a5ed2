//! Deleting the table and blob files that no version needs any more.

use super::events;
use super::state::{DbInner, DbState};

/// Delete table files that a synced MANIFEST edit removed and no version references any more
/// (after background jobs and manual compactions).
pub(crate) fn purge_obsolete(db: &DbInner, st: &mut parking_lot::MutexGuard<'_, DbState>) {
    if st.file_deletions_disabled > 0 {
        return; // the reaper keeps them until deletions are enabled again
    }
    for n in st.versions.reaper.take() {
        for c in db.cfs.read().by_id.values() {
            c.table_cache.evict(n);
        }
        events::table_file_deleted(db, n);
        let _ = db.fs.remove_file(&crate::lsm::filename::table_name(&db.path, n));
    }
    for n in st.versions.blob_reaper.take() {
        for c in db.cfs.read().by_id.values() {
            c.blob_cache.evict(n);
        }
        let _ = db.fs.remove_file(&crate::lsm::filename::blob_name(&db.path, n));
    }
}

/// [`purge_obsolete`] taking the DB mutex itself: for a dropped family's files, once its last
/// handle has gone.
pub(crate) fn purge_now(db: &DbInner) {
    let mut st = db.state.lock();
    purge_obsolete(db, &mut st);
}
