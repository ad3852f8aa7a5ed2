//! Secondary instances (RocksDB's `DB::OpenAsSecondary` and `TryCatchUpWithPrimary`): a
//! read-only view of a database another process (the primary) keeps writing, brought up to
//! date on demand.
//!
//! Opening is a read-only open of the primary's directory that takes no lock and keeps its LOG
//! in the secondary's own directory. A catch-up reads the primary's MANIFEST again (from
//! CURRENT, so a MANIFEST switch is followed), opens every table the new version names, replays
//! the live WALs into fresh memtables, and only then publishes the new version and memtables to
//! readers: a read sees either the state before the catch-up or the one after, never a mix.
//! Readers that started before keep what they hold (tables the primary deleted since stay open
//! through them). A table deleted by the primary between reading its MANIFEST and opening the
//! table makes the catch-up read the MANIFEST again, a bounded number of times, as the
//! read-only open does.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::column_family::ColumnFamilyData;
use super::column_family::ColumnFamilyDescriptor;
use super::open::ManifestState;
use super::open::{
    check_live_tables, is_missing_file, is_not_found, manifest_state, open_read_only, replay_wals, wals_to_replay,
};
use super::state::DbInner;
use crate::error::{Error, Result};
use crate::key::InternalKeyComparator;
use crate::lsm::version::VersionSet;
use crate::options::Options;

/// Attempts that met a MANIFEST moving on under them before a catch-up gives up, and the time
/// it may spend trying (a primary that writes MANIFEST records faster than a secondary can read
/// its MANIFEST and list its WALs would keep it trying forever).
const CATCH_UP_ATTEMPTS: u32 = 100;
const CATCH_UP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Open the database at `primary` as a secondary instance whose own files (its LOG) live in
/// `secondary` (created if missing), with the families `cfs` (none: the default family).
pub(crate) fn open(
    opts: &Options,
    primary: &Path,
    secondary: &Path,
    cfs: &[ColumnFamilyDescriptor],
) -> Result<Arc<DbInner>> {
    let db = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        open_read_only(opts, primary, false, cfs, Some(secondary))
    }))
    .unwrap_or_else(|p| Err(Error::from_panic("open_as_secondary", p)))?;
    // The open read the MANIFEST, then listed and read the WALs while the primary went on: a
    // WAL it needed may have been deleted before the listing (its data then in a table the
    // MANIFEST it read does not name). A catch-up, whose WAL copies are checked against the
    // MANIFEST, replaces that state before anyone reads it.
    catch_up(&db)?;
    Ok(db)
}

/// Bring the secondary `db` up to date with its primary (see the module comment).
/// NotSupported on a DB that is not a secondary instance.
pub(crate) fn catch_up(db: &Arc<DbInner>) -> Result<()> {
    let Some(sec) = &db.secondary else {
        return Err(Error::NotSupported(
            "try_catch_up_with_primary: the DB was not opened as a secondary instance".into(),
        ));
    };
    let _one_at_a_time = sec.catch_up.lock();
    let mut last_err = None;
    let started = std::time::Instant::now();
    let mut attempts = 0;
    while attempts < CATCH_UP_ATTEMPTS && (attempts == 0 || started.elapsed() < CATCH_UP_PATIENCE) {
        let attempt = attempts;
        attempts += 1;
        let before = manifest_state(&db.fs, &db.path);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| catch_up_once(db, &before)))
            .unwrap_or_else(|p| Err(Error::from_panic("try_catch_up_with_primary", p)));
        match r {
            Ok(true) => {
                if attempts > 1 {
                    db.info_log.info(&format!(
                        "The catch-up took {attempts} attempts: the primary's MANIFEST moved on under the others"
                    ));
                }
                return Ok(());
            }
            Ok(false) => last_err = Some(Error::Busy("the MANIFEST changed during the catch-up".into())),
            // A table or WAL the primary deleted after the MANIFEST moved on.
            Err(e) if (is_missing_file(&e) || is_not_found(&e)) && manifest_state(&db.fs, &db.path) != before => {
                last_err = Some(e)
            }
            Err(e) => return Err(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(1 << attempt.min(4)));
    }
    Err(Error::Busy(format!(
        "{}: catch-up gave up: the primary's MANIFEST changed under each of {attempts} attempts \
         in {:.1}s; last: {}",
        db.path.display(),
        started.elapsed().as_secs_f64(),
        last_err.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// One attempt; `Ok(false)` when the primary's MANIFEST changed before the WALs were read (a
/// WAL the version needed may have been deleted after a flush, the tables holding its data
/// being in the newer MANIFEST): nothing is changed then, and the caller tries again.
fn catch_up_once(db: &Arc<DbInner>, before: &ManifestState) -> Result<bool> {
    let families: Vec<Arc<ColumnFamilyData>> = db.cfs.read().by_id.values().cloned().collect();
    let lookup = |name: &str| {
        families
            .iter()
            .find(|c| c.name == name)
            .map(|c| (InternalKeyComparator::new(c.opts.comparator.clone()), c.opts.num_levels))
    };
    let mut vs = VersionSet::recover(&db.path, db.fs.clone(), &lookup, db.opts.paranoid_checks)?;
    for c in &families {
        if !vs.cfs.contains_key(&c.id) {
            return Err(Error::NotSupported(format!(
                "try_catch_up_with_primary: column family {} was dropped by the primary",
                c.name
            )));
        }
    }
    // List the WALs the version needs and read them at once: the primary deletes a WAL only
    // after a MANIFEST record says its data is in a table, so if the MANIFEST is still the one
    // read above once the WALs are in memory, no WAL the version needs was missed. The window
    // is the MANIFEST read, the listing and the copies; the replay (the slow part) and the
    // table checks come after it.
    let wals = wals_to_replay(&db.fs, &db.path, &mut vs, &db.opts, true, false)?;
    let mut wal_bytes = Vec::with_capacity(wals.len());
    for &n in &wals {
        wal_bytes.push(db.fs.read_all(&crate::lsm::filename::wal_name(&db.path, n))?);
    }
    if manifest_state(&db.fs, &db.path) != *before {
        return Ok(false);
    }
    // A table the primary deleted since (after a later MANIFEST record) is found here, and the
    // caller reads the MANIFEST again; open the tables before anything is published, so no
    // reader meets it.
    check_live_tables(&db.fs, &db.path, &vs)?;
    if db.opts.max_open_files < 0 {
        for c in &families {
            if let Ok(cv) = vs.cf(c.id) {
                for (_, f) in cv.current.all_files() {
                    c.table_cache.get(f)?;
                }
            }
        }
    }
    let new_last = vs.last_sequence;
    let old_files: Vec<(Arc<ColumnFamilyData>, Vec<u64>)> = {
        let mut st = db.state.lock();
        let old = families
            .iter()
            .map(|c| {
                let nums = st
                    .versions
                    .cf(c.id)
                    .map(|v| v.current.all_files().map(|(_, f)| f.number()).collect())
                    .unwrap_or_default();
                (c.clone(), nums)
            })
            .collect();
        // Fresh memtables for the replay; readers keep the published SuperVersions meanwhile.
        let ids: Vec<u32> = st.cfs.keys().copied().collect();
        for id in ids {
            let cfd = st.cfs[&id].cfd.clone();
            let mem = db.new_memtable(&cfd);
            if let Some(m) = st.cfs.get_mut(&id) {
                m.mem = mem;
                m.imm.clear();
            }
        }
        st.versions = vs;
        st.rebuild_memset();
        old
    };
    replay_wals(db, &wals, wal_bytes, &mut BTreeMap::new())?;
    let st = db.state.lock();
    // Sequence numbers only grow: the replay raised it to the WALs' last record; the MANIFEST's
    // last sequence covers what the primary flushed and no longer has in a WAL.
    db.last_seq.fetch_max(new_last, Ordering::AcqRel);
    let ids: Vec<u32> = st.cfs.keys().copied().collect();
    for id in ids {
        db.install_super_version(&st, id);
    }
    db.info_log.info(&format!(
        "Caught up with the primary: {} WALs replayed, last sequence {}",
        wals.len(),
        db.last_seq.load(Ordering::Acquire)
    ));
    // Tables no longer in the version leave the table cache (readers holding them keep them).
    for (c, nums) in old_files {
        if let Ok(v) = st.versions.cf(c.id) {
            let live: std::collections::HashSet<u64> = v.current.all_files().map(|(_, f)| f.number()).collect();
            for n in nums.into_iter().filter(|n| !live.contains(n)) {
                c.table_cache.evict(n);
            }
        }
    }
    Ok(true)
}
