//! Flush: an immutable memtable becomes an L0 table file.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::table_output::{build_tables, OutputParams};
use super::{column_family::ColumnFamilyData, state::DbInner, state::DbState};
use crate::engine::wal_files::delete_obsolete_wals;
use crate::engine::wal_files::min_log_needed;
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::lsm::version_edit::VersionEdit;

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
    blobs: crate::blob::changes::BlobChanges,
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
        params.ancestor_time = oldest.map_or(0, |t| t.min(super::table_output::now_secs()));
        parts.push(FlushPart {
            cfd,
            mems,
            next_log,
            job,
            params,
            outputs: Vec::new(),
            blobs: Default::default(),
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
            (p.outputs, p.blobs) = build_tables(db, &mut *it, &p.params)?;
        }
        Ok(())
    });
    let remove_outputs = |parts: &[FlushPart]| {
        for p in parts {
            for f in &p.outputs {
                let _ = db.fs.remove_file(&crate::lsm::filename::table_name(&db.path, f.number));
            }
            p.blobs.remove_files(&*db.fs, &db.path);
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
        p.blobs.add_to_edit(&mut edit);
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
