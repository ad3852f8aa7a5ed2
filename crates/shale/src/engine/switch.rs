//! Making room for a write: switching full memtables (and the WAL) and waiting while too
//! many wait for flush.

use super::{column_family::ImmMem, state::DbInner, state::DbState};
use crate::engine::column_family::MemSet;
use crate::engine::write_group::drain_writes;
use crate::error::{Error, Result};
use crate::log;
use crate::lsm::filename::wal_name;
use crate::perf_context::{field as perf, PerfTimer};
use crate::statistics::Ticker;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Ensure the memtables have room, switching the full ones (and the WAL) first, then delay or
/// stop the write group as RocksDB's write controller says (see `stall`). Returns the memtables
/// to insert into.
pub(crate) fn make_room(db: &Arc<DbInner>, bytes: u64) -> Result<Arc<MemSet>> {
    let mutex_timer = PerfTimer::start_mutex();
    let stats_timer = db.stats.as_ref().filter(|s| s.mutex_timers()).map(|_| Instant::now());
    let mut st = db.state.lock();
    mutex_timer.stop(perf::DB_MUTEX_LOCK_NANOS);
    if let (Some(s), Some(t0)) = (&db.stats, stats_timer) {
        s.tick(Ticker::DbMutexWaitMicros, t0.elapsed().as_micros() as u64);
    }
    // Read the clock only when a stall begins (not on every write).
    let mut stall_start: Option<Instant> = None;
    let wbm = db.write_buffer_manager();
    loop {
        DbInner::check_bg_error(&st)?;
        // Full: at write_buffer_size, or the write buffer manager wants memory back (RocksDB's
        // `WriteBufferManager::ShouldFlush`: the DB switches its largest mutable memtable).
        let mut full: Vec<u32> = st
            .cfs
            .iter()
            .filter(|(_, m)| m.mem.approximate_memory_usage() >= m.cfd.opts.write_buffer_size)
            .map(|(id, _)| *id)
            .collect();
        if full.is_empty() && wbm.is_some_and(|w| w.should_flush()) {
            if let Some((id, _)) = st
                .cfs
                .iter()
                .filter(|(_, m)| !m.mem.is_empty())
                .max_by_key(|(_, m)| m.mem.approximate_memory_usage())
            {
                full.push(*id);
            }
        }
        if full.is_empty() && st.cfs.len() > 1 {
            full = families_holding_old_wals(db, &st);
        }
        if !full.is_empty() && db.opts.atomic_flush {
            // atomic_flush: every family with data switches (and flushes) together.
            full = st
                .cfs
                .iter()
                .filter(|(_, m)| !m.mem.is_empty() || !m.mem.range_dels.is_empty())
                .map(|(id, _)| *id)
                .collect();
        }
        if !full.is_empty() {
            let blocked = full
                .iter()
                .any(|id| st.cfs[id].imm.len() + 1 >= st.cfs[id].cfd.opts.max_write_buffer_number);
            if blocked {
                // No flush will make room once background work is cancelled.
                check_not_cancelled(db)?;
                stall_start.get_or_insert_with(Instant::now);
                db.work_cv.notify_all();
                db.bg_cv.wait_for(&mut st, Duration::from_millis(100));
                continue;
            }
            switch_memtable(db, &mut st, &full)?;
            continue;
        }
        // All memtables use the whole budget: wait for flushes to free some (allow_stall).
        if let Some(w) = wbm.filter(|w| w.should_stall()) {
            stall_start.get_or_insert_with(Instant::now);
            db.work_cv.notify_all();
            parking_lot::MutexGuard::unlocked(&mut st, || w.wait_for_free(Duration::from_millis(10)));
            continue;
        }
        break;
    }
    if let Some(stall_start) = stall_start {
        let micros = stall_start.elapsed().as_micros() as u64;
        db.stall.counters.record(
            super::stall::Condition::Stopped,
            super::stall::Cause::MemtableLimit,
            micros,
        );
        super::write_stall::stall_stats(db, micros);
    }
    super::write_stall::delay_or_stop_write(db, &mut st, bytes)?;
    Ok(st.memset.clone())
}

/// RocksDB's `max_total_wal_size` rule: once the live WALs hold more than the limit, the
/// families whose unflushed data is in the oldest live WAL (and whose memtable has data) are
/// switched, so their flush lets that WAL go.
pub(crate) fn families_holding_old_wals(db: &DbInner, st: &DbState) -> Vec<u32> {
    let limit = match db.opts.max_total_wal_size {
        0 => st
            .cfs
            .values()
            .map(|m| (m.cfd.opts.write_buffer_size * m.cfd.opts.max_write_buffer_number) as u64)
            .sum::<u64>()
            .saturating_mul(4),
        n => n,
    };
    let (total, oldest) = {
        let wal = db.wal.lock();
        let current = wal.writer.as_ref().map_or(0, |w| w.file_size());
        let total = wal.alive.iter().map(|(_, b)| b).sum::<u64>() + current;
        (total, wal.alive.front().map(|(n, _)| *n))
    };
    let Some(oldest) = oldest.filter(|_| total > limit) else {
        return Vec::new();
    };
    st.cfs
        .iter()
        .filter(|(id, m)| {
            !m.mem.is_empty() && st.versions.cf(**id).is_ok_and(|c| c.log_number <= oldest) && m.imm.is_empty()
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Make the memtables of families `cfs` immutable, start one new WAL and new memtables, and
/// wake the flusher. Called by the write leader with the DB mutex held. The WAL files are created
/// and synced without the mutex: only the write leader switches or writes (the writer queue), so
/// nothing else touches the memtables or the WAL meanwhile, and readers and background jobs go
/// on.
pub(crate) fn switch_memtable(
    db: &Arc<DbInner>,
    st: &mut parking_lot::MutexGuard<'_, DbState>,
    cfs: &[u32],
) -> Result<()> {
    // Groups still inserting into the memtables about to become immutable finish first (with
    // pipelined or unordered writes the leader switching may not be the last to insert).
    drain_writes(db)?;
    let num = st.versions.new_file_number();
    let r = parking_lot::MutexGuard::unlocked(st, || -> Result<()> {
        let file = db.fs.new_writable(&wal_name(&db.path, num))?;
        {
            let mut guard = db.wal.lock();
            let wal = &mut *guard;
            // Sync the old WAL so that a later synced write can never survive a power loss that
            // loses an earlier write (recovered state must be a prefix of the history).
            if let Some(w) = wal.writer.as_mut() {
                if wal.unsynced {
                    w.sync()?;
                }
            }
            if let Some(w) = wal.writer.as_ref() {
                let old = (wal.number, w.file_size());
                wal.alive.push_back(old);
            }
            wal.writer = Some(log::Writer::new_wal(
                file,
                db.opts.wal_mapped_appends || db.opts.allow_mmap_writes,
            ));
            wal.number = num;
            wal.unsynced = false;
        }
        // The new WAL's directory entry must be durable before a synced write relies on it.
        db.fs.sync_dir(&db.path)
    });
    if let Err(e) = r {
        super::error_handler::record_write_error(db, st, e.clone());
        db.bg_cv.notify_all();
        return Err(e);
    }
    st.wal_switch_pending = false;
    for &id in cfs {
        let Some(m) = st.cfs.get_mut(&id) else {
            continue;
        };
        let new_mem = db.new_memtable(&m.cfd);
        let old = std::mem::replace(&mut m.mem, new_mem);
        old.mark_immutable();
        m.imm.push_back(ImmMem {
            mem: old.clone(),
            next_log: num,
            flush_requested: false,
        });
        // An immutable memtable that waits for others before it is flushed
        // (`min_write_buffer_number_to_merge`) serves reads for a while: give it a sorted
        // directory, built off the write path, so lookups skip the skiplist descent.
        if !super::state::flush_due(db, st, id) {
            let _ = std::thread::Builder::new()
                .name("shale-memdir".into())
                .spawn(move || old.build_directory());
        }
    }
    st.rebuild_memset();
    for &id in cfs {
        db.install_super_version(st, id);
    }
    db.work_cv.notify_all();
    Ok(())
}

/// A write waiting for a flush fails once the background threads are gone
/// (`cancel_all_background_work`), rather than wait forever.
pub(crate) fn check_not_cancelled(db: &DbInner) -> Result<()> {
    if db.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::Busy(
            "write: the memtables are full and background work was cancelled".into(),
        ));
    }
    Ok(())
}
