//! Flush: an immutable memtable becomes an L0 table file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::build::{build_tables, OutputParams};
use super::filename::wal_name;
use super::{write, DbInner, DbState};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::version_edit::VersionEdit;

/// Switch the memtables of families `cfs` and wait until every immutable memtable of them is
/// flushed.
pub(crate) fn flush_and_wait(db: &Arc<DbInner>, cfs: Vec<u32>) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("flush on a database opened read-only".into()));
    }
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
        db.work_cv.notify_all();
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    };
    st.flush_requests -= 1;
    r
}

/// The oldest WAL any family still needs (see [`VersionSet::min_log_number`]): a family with
/// empty memtables needs none older than the current WAL.
pub(crate) fn min_log_needed(db: &DbInner, st: &DbState) -> u64 {
    let current = db.wal.lock().number;
    st.versions.min_log_number(&|id| {
        st.cfs
            .get(&id)
            .filter(|m| m.imm.is_empty() && m.mem.is_empty() && m.mem.range_dels.is_empty())
            .map(|_| current)
    })
}

/// Flush family `cf`'s immutable memtables (all those waiting, merged into one output as
/// RocksDB does with `min_write_buffer_number_to_merge`). Called by a background thread holding
/// the DB mutex; the mutex is released while the table is written.
pub(crate) fn run_flush(db: &Arc<DbInner>, st: &mut MutexGuard<'_, DbState>, cf: u32) -> Result<()> {
    let m = st.cf(cf)?;
    let cfd = m.cfd.clone();
    let mems: Vec<_> = m.imm.iter().map(|m| m.mem.clone()).collect();
    let next_log = match m.imm.back() {
        Some(m) => m.next_log,
        None => return Ok(()),
    };
    let start = Instant::now();
    let job = super::events::flush_started(db, &cfd, &mems);
    let epoch = st.versions.next_epoch;
    st.versions.next_epoch += 1;
    let snapshots = db.snapshot_list();
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
    let params = OutputParams::for_l0(&cfd, epoch, snapshots, tombstones);
    let outputs = parking_lot::MutexGuard::unlocked(st, || {
        let _io = crate::fs::ActivityGuard::set(crate::fs::IoActivity::Flush);
        let mut it: Box<dyn InternalIterator> = if mems.len() == 1 {
            Box::new(mems[0].iter())
        } else {
            let children: Vec<Box<dyn InternalIterator>> = mems
                .iter()
                .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>)
                .collect();
            Box::new(super::iter::MergingIterator::new(icmp.clone(), children))
        };
        build_tables(db, &mut *it, &params)
    })?;
    let mut edit = VersionEdit {
        column_family: cf,
        log_number: Some(next_log),
        ..Default::default()
    };
    if st.versions.cfs.len() > 1 {
        // As RocksDB with several families: the oldest WAL any family needs once this flush is
        // installed, so recovery skips older WALs even for a family that never flushed.
        let current = db.wal.lock().number;
        let after = st.versions.min_log_number(&|id| {
            if id == cf {
                return Some(next_log);
            }
            st.cfs
                .get(&id)
                .filter(|m| m.imm.is_empty() && m.mem.is_empty() && m.mem.range_dels.is_empty())
                .map(|_| current)
        });
        edit.min_log_number_to_keep = Some(after.min(next_log.max(st.versions.min_log_number_to_keep)));
    }
    let mut bytes = 0;
    for f in &outputs {
        bytes += f.file_size;
        edit.new_files.push((0, f.clone()));
    }
    if let Err(e) = db.log_and_apply(st, &mut edit) {
        if cfd.is_dropped() {
            // The family was dropped while its memtable was written: nothing to install.
            for f in &outputs {
                let _ = db.fs.remove_file(&super::filename::table_name(&db.path, f.number));
            }
            return Ok(());
        }
        return Err(e);
    }
    if let Ok(m) = st.cf_mut(cf) {
        for _ in 0..mems.len() {
            m.imm.pop_front();
        }
        m.stats.record_flush(bytes, outputs.len(), start.elapsed());
    }
    db.install_super_version(st, cf);
    super::events::flush_finished(db, st, &cfd, job, &outputs, start);
    // WALs below the oldest one a family needs hold nothing that is not in a table any more.
    let min_log = min_log_needed(db, st);
    delete_obsolete_wals(db, min_log);
    Ok(())
}

pub(crate) fn delete_obsolete_wals(db: &DbInner, min_log: u64) {
    if let Ok(names) = db.fs.list(&db.path) {
        for n in names {
            if let Some(super::filename::FileType::Wal(num)) = super::filename::parse_file_name(&n) {
                if num < min_log {
                    let _ = db.fs.remove_file(&wal_name(&db.path, num));
                }
            }
        }
    }
}
