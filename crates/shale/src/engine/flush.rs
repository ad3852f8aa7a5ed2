//! Flush: an immutable memtable becomes an L0 table file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::build::{build_tables, OutputParams};
use super::{column_family::ColumnFamilyData, state::DbInner, state::DbState, write};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::lsm::version_edit::VersionEdit;

/// Switch the memtables of families `cfs` and wait until every immutable memtable of them is
/// flushed.
pub(crate) fn flush_and_wait(db: &Arc<DbInner>, cfs: Vec<u32>) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("flush on a database opened read-only".into()));
    }
    // atomic_flush: a flush of one family is a flush of all.
    let cfs = if db.opts.atomic_flush {
        db.cfs.read().by_id.keys().copied().collect()
    } else {
        cfs
    };
    write::force_switch(db, cfs.clone())?;
    let mut st = db.state.lock();
    st.flush_requests += 1;
    let r = loop {
        if let Err(e) = DbInner::check_bg_error(&st) {
            break Err(e);
        }
        if cfs.iter().all(|id| st.cfs.get(id).is_none_or(|m| m.imm.is_empty())) {
            break Ok(());
        }
        if st.bg_paused > 0 {
            break Err(Error::Incomplete("flush: background work is paused".into()));
        }
        // Background threads end at shutdown (and after `cancel_all_background_work`).
        if db.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
            break Err(Error::Busy("flush: background work was cancelled".into()));
        }
        db.work_cv.notify_all();
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    };
    st.flush_requests -= 1;
    r
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

/// Flush family `cf`'s immutable memtables (all those waiting, merged into one output as
/// RocksDB does with `min_write_buffer_number_to_merge`). Called by a background thread holding
/// the DB mutex; the mutex is released while the table is written.
pub(crate) fn run_flush(db: &Arc<DbInner>, st: &mut MutexGuard<'_, DbState>, cf: u32) -> Result<()> {
    run_flush_group(db, st, &[cf])
}

/// One family's part of a flush.
struct FlushPart {
    cfd: Arc<ColumnFamilyData>,
    mems: Vec<Arc<crate::memtable::MemTable>>,
    next_log: u64,
    job: u64,
    params: OutputParams,
    outputs: Vec<crate::lsm::version_edit::FileMetaData>,
}

/// Flush the immutable memtables of families `cfs`; with more than one (`atomic_flush`) their
/// tables are installed by one atomic group of MANIFEST edits, so a crash keeps all or none.
pub(crate) fn run_flush_group(db: &Arc<DbInner>, st: &mut MutexGuard<'_, DbState>, cfs: &[u32]) -> Result<()> {
    let start = Instant::now();
    let mut parts: Vec<FlushPart> = Vec::new();
    for &cf in cfs {
        let Some(m) = st.cfs.get(&cf) else {
            continue;
        };
        let Some(next_log) = m.imm.back().map(|i| i.next_log) else {
            continue;
        };
        let cfd = m.cfd.clone();
        let mems: Vec<_> = m.imm.iter().map(|m| m.mem.clone()).collect();
        let job = super::events::flush_started(db, &cfd, &mems);
        let epoch = st.versions.next_epoch;
        st.versions.next_epoch += 1;
        let icmp = &cfd.icmp;
        let tombstones = if mems.len() == 1 {
            mems[0]
                .range_dels
                .fragmented(icmp)
                .map(|l| (*l).clone())
                .unwrap_or_default()
        } else {
            let raw = mems
                .iter()
                .filter_map(|m| m.range_dels.fragmented(icmp))
                .flat_map(|l| l.tombstones().collect::<Vec<_>>())
                .collect();
            crate::range_del::FragmentedRangeTombstoneList::new(icmp, raw)
        };
        let mut params = OutputParams::for_l0(&cfd, epoch, db.snapshot_list(), tombstones);
        // As RocksDB: the table's creation (oldest ancestor) time is its oldest key's.
        let oldest = mems.iter().map(|m| m.oldest_key_time()).filter(|&t| t > 0).min();
        params.ancestor_time = oldest.map_or(0, |t| t.min(super::build::now_secs()));
        parts.push(FlushPart {
            cfd,
            mems,
            next_log,
            job,
            params,
            outputs: Vec::new(),
        });
    }
    if parts.is_empty() {
        return Ok(());
    }
    let built = parking_lot::MutexGuard::unlocked(st, || -> Result<()> {
        let _io = crate::fs::ActivityGuard::set(crate::fs::IoActivity::Flush);
        for p in parts.iter_mut() {
            let mems = &p.mems;
            let mut it: Box<dyn InternalIterator> = if mems.len() == 1 {
                Box::new(mems[0].iter())
            } else {
                let children: Vec<Box<dyn InternalIterator>> = mems
                    .iter()
                    .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>)
                    .collect();
                Box::new(super::iter::MergingIterator::new(p.cfd.icmp.clone(), children))
            };
            p.outputs = build_tables(db, &mut *it, &p.params)?;
        }
        Ok(())
    });
    let remove_outputs = |parts: &[FlushPart]| {
        for f in parts.iter().flat_map(|p| p.outputs.iter()) {
            let _ = db.fs.remove_file(&crate::lsm::filename::table_name(&db.path, f.number));
        }
    };
    if let Err(e) = built {
        remove_outputs(&parts);
        return Err(e);
    }
    // A family dropped while its memtables were written: nothing of it to install.
    let (dropped, parts): (Vec<FlushPart>, Vec<FlushPart>) = parts.into_iter().partition(|p| p.cfd.is_dropped());
    remove_outputs(&dropped);
    if parts.is_empty() {
        return Ok(());
    }
    let mut edits: Vec<VersionEdit> = Vec::new();
    for p in &parts {
        let mut edit = VersionEdit {
            column_family: p.cfd.id,
            log_number: Some(p.next_log),
            ..Default::default()
        };
        for f in &p.outputs {
            edit.new_files.push((0, f.clone()));
        }
        edits.push(edit);
    }
    if st.versions.cfs.len() > 1 || db.opts.allow_2pc {
        // As RocksDB with several families: the oldest WAL any family needs once this flush is
        // installed, so recovery skips older WALs even for a family that never flushed.
        let current = db.wal.lock().number;
        let after = st.versions.min_log_number(&|id| {
            if let Some(p) = parts.iter().find(|p| p.cfd.id == id) {
                return Some(p.next_log);
            }
            st.cfs
                .get(&id)
                .filter(|m| m.imm.is_empty() && m.mem.is_empty() && m.mem.range_dels.is_empty())
                .map(|_| current)
        });
        // Two-phase commit (RocksDB's `PrecomputeMinLogNumberToKeep2PC`): not above a WAL with
        // an unresolved prepared section, or one that a memtable left unflushed still needs.
        let flushed: Vec<&Arc<crate::memtable::MemTable>> = parts.iter().flat_map(|p| p.mems.iter()).collect();
        let after = after.min(super::prepared_wals::min_prep_log(db, st, &flushed));
        let floor = st.versions.min_log_number_to_keep;
        if let Some(last) = edits.last_mut() {
            last.min_log_number_to_keep = Some(after.max(floor));
        }
    }
    if let Err(e) = db.log_and_apply_group(st, &mut edits) {
        if parts.iter().all(|p| p.cfd.is_dropped()) {
            remove_outputs(&parts);
            return Ok(());
        }
        return Err(e);
    }
    for p in &parts {
        let bytes: u64 = p.outputs.iter().map(|f| f.file_size).sum();
        if let Ok(m) = st.cf_mut(p.cfd.id) {
            for _ in 0..p.mems.len() {
                if let Some(i) = m.imm.pop_front() {
                    m.keep_history(i.mem);
                }
            }
            m.stats.record_flush(bytes, p.outputs.len(), start.elapsed());
            if let Some(s) = &db.stats {
                s.tick(crate::statistics::Ticker::FlushWriteBytes, bytes);
                s.record_time(
                    crate::statistics::Histogram::FlushTime,
                    start.elapsed().as_micros() as u64,
                );
            }
        }
        db.install_super_version(st, p.cfd.id);
        super::events::flush_finished(db, st, &p.cfd, p.job, &p.outputs, start);
    }
    // WALs below the oldest one a family needs hold nothing that is not in a table any more.
    let min_log = min_log_needed(db, st);
    delete_obsolete_wals(db, st, min_log);
    Ok(())
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
                    super::wal_iter::retire_wal(db, num);
                }
            }
        }
    }
    super::wal_iter::purge_archive(db);
}
