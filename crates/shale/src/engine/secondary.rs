//! Secondary instances (RocksDB's `DB::OpenAsSecondary` and `TryCatchUpWithPrimary`): a
//! read-only view of a database another process (the primary) keeps writing, brought up to
//! date on demand.
//!
//! Opening is a read-only open of the primary's directory that takes no lock and keeps its LOG
//! in the secondary's own directory, followed by a first catch-up. A catch-up tails the
//! primary's MANIFEST (`lsm/version/manifest_tail.rs`: only the edits written since the last
//! catch-up, following CURRENT to a new MANIFEST), opens only the tables new to the version,
//! reads what each live WAL gained since (`secondary_wal.rs`) and replays it into the
//! families' per-WAL memtables, dropping those whose data the primary flushed; only then are
//! the new version and memtables published to readers: a read sees either the state before
//! the catch-up or the one after, never a mix. Readers that started before keep what they hold
//! (tables the primary deleted since stay open through them). A table deleted by the primary
//! between reading its MANIFEST and opening the table makes the catch-up read on, a bounded
//! number of times.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::column_family::ColumnFamilyData;
use super::column_family::ColumnFamilyDescriptor;
use super::open::ManifestState;
use super::open::{check_tables, is_missing_file, is_not_found, manifest_state, open_read_only, wals_to_replay};
use super::secondary_tails::{Tails, WalTail};
use super::state::DbInner;
use crate::error::{Error, Result};
use crate::key::InternalKeyComparator;
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
    // The tables the open opened are reused by the catch-ups.
    if let Some(sec) = &db.secondary {
        sec.tails.lock().manifest.published(&db.state.lock().versions);
    }
    // The open replayed no WAL: the first catch-up does, its WAL copies checked against the
    // MANIFEST, before anyone reads.
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
    let mut tails = sec.tails.lock();
    let mut last_err = None;
    let started = std::time::Instant::now();
    let mut attempts = 0;
    while attempts < CATCH_UP_ATTEMPTS && (attempts == 0 || started.elapsed() < CATCH_UP_PATIENCE) {
        let attempt = attempts;
        attempts += 1;
        let before = manifest_state(&db.fs, &db.path);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| catch_up_once(db, &mut tails, &before)))
            .unwrap_or_else(|p| {
                // Nothing of a half-done replay is kept: the next catch-up reads the WALs again.
                tails.wal = WalTail::default();
                Err(Error::from_panic("try_catch_up_with_primary", p))
            });
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
/// being in the newer MANIFEST): nothing is published then, and the caller tries again (the
/// MANIFEST tail keeps what it read; the WAL tail is untouched).
fn catch_up_once(db: &Arc<DbInner>, tails: &mut Tails, before: &ManifestState) -> Result<bool> {
    let started = std::time::Instant::now();
    let families: Vec<Arc<ColumnFamilyData>> = db.cfs.read().by_id.values().cloned().collect();
    let lookup = |name: &str| {
        families
            .iter()
            .find(|c| c.name == name)
            .map(|c| (InternalKeyComparator::new(c.opts.comparator.clone()), c.opts.num_levels))
    };
    let read = tails
        .manifest
        .read(&db.path, &db.fs, &lookup, db.opts.paranoid_checks)?;
    let mut vs = read.vs;
    for c in &families {
        if !vs.cfs.contains_key(&c.id) {
            return Err(Error::NotSupported(format!(
                "try_catch_up_with_primary: column family {} was dropped by the primary",
                c.name
            )));
        }
    }
    // With two-phase commit a prepared section may span WALs: those are read again from their
    // starts into new memtables each time (as before the tail existed).
    if db.opts.allow_2pc {
        tails.wal = WalTail::default();
    }
    // List the WALs the version needs and read what they gained at once: the primary deletes a
    // WAL only after a MANIFEST record says its data is in a table, so if the MANIFEST is still
    // the one read above once the bytes are in memory, no WAL the version needs was missed.
    // The window is the MANIFEST read, the listing and the copies; the replay (the slow part)
    // and the table checks come after it.
    let wals = wals_to_replay(&db.fs, &db.path, &mut vs, &db.opts, true, false)?;
    let new_bytes = tails.wal.read_new(db, &wals)?;
    if manifest_state(&db.fs, &db.path) != *before {
        return Ok(false);
    }
    // Tables new to the version: a table the primary deleted since (after a later MANIFEST
    // record) is found here, and the caller reads on; they are opened before anything is
    // published, so no reader meets a missing one.
    let old: Vec<(Arc<ColumnFamilyData>, HashSet<u64>)> = {
        let st = db.state.lock();
        families
            .iter()
            .map(|c| {
                let nums = st
                    .versions
                    .cf(c.id)
                    .map(|v| v.current.all_files().map(|(_, f)| f.number()).collect())
                    .unwrap_or_default();
                (c.clone(), nums)
            })
            .collect()
    };
    let mut opened = 0;
    for (c, nums) in &old {
        let Ok(cv) = vs.cf(c.id) else { continue };
        let new: Vec<_> = cv
            .current
            .all_files()
            .map(|(_, f)| f)
            .filter(|f| !nums.contains(&f.number()))
            .collect();
        check_tables(&db.fs, &db.path, new.iter().copied())?;
        if db.opts.max_open_files < 0 {
            for f in new {
                c.table_cache.get(f)?;
                opened += 1;
            }
        }
    }
    // The WAL replay: nothing it inserts is visible before the publication below (sequence
    // numbers above the published one). An error leaves memtables half-filled: they are
    // forgotten, and the next catch-up replays the WALs from their starts.
    tails.wal.retire(&vs, &wals);
    let published_seq = db.last_seq.load(Ordering::Acquire);
    let replayed = match tails.wal.replay(db, &families, &vs, new_bytes, published_seq) {
        Ok(r) => r,
        Err(e) => {
            tails.wal = WalTail::default();
            return Err(e);
        }
    };
    let mut st = db.state.lock();
    for c in &families {
        let (mem, imm) = tails.wal.publish(c.id, || db.new_memtable(c));
        if let Some(m) = st.cfs.get_mut(&c.id) {
            m.mem = mem;
            m.imm = imm;
            m.history.clear();
        }
    }
    st.versions = vs;
    st.rebuild_memset();
    // Sequence numbers only grow: the MANIFEST's last sequence covers what the primary flushed
    // and no longer has in a WAL.
    let new_last = st.versions.last_sequence.max(replayed.last_seq.unwrap_or(0));
    db.last_seq.fetch_max(new_last, Ordering::AcqRel);
    let ids: Vec<u32> = st.cfs.keys().copied().collect();
    for id in ids {
        db.install_super_version(&st, id);
    }
    tails.manifest.published(&st.versions);
    let position = tails.manifest.position().unwrap_or_default();
    db.info_log.info(&format!(
        "Caught up with the primary in {} us: MANIFEST-{:06} {} edits ({} bytes{}{}), up to offset {}; \
         {} tables opened; {} WAL records ({} bytes) replayed, {} WALs live, {} memtables; last sequence {}",
        started.elapsed().as_micros(),
        position.0,
        read.records,
        read.bytes,
        if read.switched { ", read from its start" } else { "" },
        read.torn
            .as_ref()
            .map(|(o, _)| format!(", a record not whole yet at {o}"))
            .unwrap_or_default(),
        position.1,
        opened,
        replayed.records,
        replayed.bytes,
        wals.len(),
        tails.wal.memtables(),
        db.last_seq.load(Ordering::Acquire)
    ));
    // Tables no longer in the version leave the table cache (readers holding them keep them).
    for (c, nums) in old {
        if let Ok(v) = st.versions.cf(c.id) {
            let live: HashSet<u64> = v.current.all_files().map(|(_, f)| f.number()).collect();
            for n in nums.into_iter().filter(|n| !live.contains(n)) {
                c.table_cache.evict(n);
            }
        }
    }
    Ok(true)
}
