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

/// Switch the memtable and wait until every immutable memtable is flushed.
pub(crate) fn flush_and_wait(db: &Arc<DbInner>) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("flush on a database opened read-only".into()));
    }
    write::force_switch(db)?;
    let mut st = db.state.lock();
    st.flush_requests += 1;
    let r = loop {
        if let Err(e) = DbInner::check_bg_error(&st) {
            break Err(e);
        }
        if st.imm.is_empty() {
            break Ok(());
        }
        db.work_cv.notify_all();
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    };
    st.flush_requests -= 1;
    r
}

/// Flush the immutable memtables (all those waiting, merged into one output as RocksDB does
/// with `min_write_buffer_number_to_merge`). Called by a background thread holding the DB
/// mutex; the mutex is released while the table is written.
pub(crate) fn run_flush(db: &Arc<DbInner>, st: &mut MutexGuard<'_, DbState>) -> Result<()> {
    let mems: Vec<_> = st.imm.iter().map(|m| m.mem.clone()).collect();
    let next_log = match st.imm.back() {
        Some(m) => m.next_log,
        None => return Ok(()),
    };
    let start = Instant::now();
    let job = super::events::flush_started(db, &mems);
    let epoch = st.versions.next_epoch;
    st.versions.next_epoch += 1;
    let snapshots = db.snapshot_list();
    let tombstones = if mems.len() == 1 {
        mems[0]
            .range_dels
            .fragmented(&db.icmp)
            .map(|l| (*l).clone())
            .unwrap_or_default()
    } else {
        let raw = mems
            .iter()
            .filter_map(|m| m.range_dels.fragmented(&db.icmp))
            .flat_map(|l| l.tombstones().collect::<Vec<_>>())
            .collect();
        crate::range_del::FragmentedRangeTombstoneList::new(&db.icmp, raw)
    };
    let params = OutputParams::for_l0(db, epoch, snapshots, tombstones);
    let outputs = parking_lot::MutexGuard::unlocked(st, || {
        let _io = crate::fs::ActivityGuard::set(crate::fs::IoActivity::Flush);
        let mut it: Box<dyn InternalIterator> = if mems.len() == 1 {
            Box::new(mems[0].iter())
        } else {
            let children: Vec<Box<dyn InternalIterator>> = mems
                .iter()
                .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>)
                .collect();
            Box::new(super::iter::MergingIterator::new(db.icmp.clone(), children))
        };
        build_tables(db, &mut *it, &params)
    })?;
    let mut edit = VersionEdit {
        log_number: Some(next_log),
        ..Default::default()
    };
    let mut bytes = 0;
    for f in &outputs {
        bytes += f.file_size;
        edit.new_files.push((0, f.clone()));
    }
    db.log_and_apply(st, &mut edit)?;
    for _ in 0..mems.len() {
        st.imm.pop_front();
    }
    db.install_super_version(st);
    st.stats.record_flush(bytes, outputs.len(), start.elapsed());
    super::events::flush_finished(db, st, job, &outputs, start);
    // WALs below the new log number hold nothing that is not in a table any more.
    delete_obsolete_wals(db, st.versions.log_number);
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
