//! Background threads: flushes first, then compactions. A failure or a panic in a job becomes
//! the DB's background error (writes stop; `resume()` or reopen clears it).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::compaction::{pick_auto, run_compaction};
use super::error_handler::{compaction_succeeded, record_compaction_error, record_error, FIRST_RETRY_DELAY};
use super::flush::{run_flush, run_flush_group};
use super::{purge::purge_obsolete, state::flush_due_any, state::DbInner, state::DbState};
use crate::env::{EnvPools, Pool};
use crate::error::{Error, Result};
use crate::options::types::WaitForCompactOptions;

pub(crate) fn start(db: &Arc<DbInner>) -> Result<()> {
    spawn_up_to(db, db.opts.max_background_jobs)
}

/// Start background threads until `n` run (ids continue from the threads running).
pub(crate) fn spawn_up_to(db: &Arc<DbInner>, n: usize) -> Result<()> {
    if db.shutting_down.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut threads = db.bg_threads.lock();
    let running = threads
        .iter()
        .filter(|h| h.thread().name().is_some_and(|n| n.starts_with("shale-bg-")))
        .count();
    for i in running..n {
        let d = db.clone();
        let h = std::thread::Builder::new()
            .name(format!("shale-bg-{i}"))
            .spawn(move || bg_loop(&d, i))
            .map_err(|e| Error::io("spawn background thread", e))?;
        threads.push(h);
    }
    Ok(())
}

/// After a flush or compaction, hand the allocator's free memory back to the OS. A job frees
/// tens of MiB of transient buffers (filter hashes, index entries, I/O buffers, the blocks it
/// read); glibc keeps freed memory in its per-thread arenas, where other threads cannot reuse
/// it, and trims only the top of a heap. Without this, a process at its memory budget holds
/// ~25 % more resident memory than it uses (RSS measured, docs/performance.md).
/// `malloc_trim` releases the free pages of every arena (a few ms; the DB mutex is not held).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only returns free pages to the OS; it takes the allocator's own
    // locks and touches no memory in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What a background thread may run once an `Env` pool's priority is lowered (see `env.rs`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Both,
    FlushOnly,
    CompactOnly,
}

fn role_of(pools: Option<&EnvPools>, id: usize, jobs: usize) -> Role {
    match pools {
        Some(p) if p.any_lowered() && jobs >= 2 => {
            if id == 0 {
                Role::FlushOnly
            } else {
                Role::CompactOnly
            }
        }
        _ => Role::Both,
    }
}

/// Lower the calling thread as its role's pool asks, once (a thread cannot take it back).
fn lower_for(pools: &EnvPools, role: Role, done: &mut (bool, bool)) {
    let (cpu, io) = match role {
        Role::FlushOnly => (pools.lowered_cpu(Pool::High), pools.lowered_io(Pool::High)),
        Role::CompactOnly => (pools.lowered_cpu(Pool::Low), pools.lowered_io(Pool::Low)),
        Role::Both => (
            pools.lowered_cpu(Pool::Low) && pools.lowered_cpu(Pool::High),
            pools.lowered_io(Pool::Low) && pools.lowered_io(Pool::High),
        ),
    };
    let (cpu, io) = (cpu && !done.0, io && !done.1);
    if cpu || io {
        crate::env::lower_this_thread(cpu, io);
        done.0 |= cpu;
        done.1 |= io;
    }
}

fn bg_loop(db: &Arc<DbInner>, id: usize) {
    let mut st = db.state.lock();
    let mut lowered = (false, false);
    loop {
        if db.shutting_down.load(Ordering::Acquire) {
            break;
        }
        // Read each round: `set_db_options` may change it (threads above it stay idle).
        let jobs = db.opts.max_background_jobs.max(1);
        let max_compactions = jobs.saturating_sub(1).max(1);
        // An `Env`'s pools, shared with other databases: raised to this one's own limits (as
        // RocksDB's open raises them), then each job takes a place in its pool.
        let pools = db.opts.env_pools.as_deref();
        if let Some(p) = pools {
            p.raise_to(Pool::Low, max_compactions);
            p.raise_to(Pool::High, 1);
        }
        let role = role_of(pools, id, jobs);
        if let Some(p) = pools {
            lower_for(p, role, &mut lowered);
        }
        if st.bg_error.is_none() && st.bg_paused == 0 && id < jobs {
            let flush = flush_due_any(db, &st)
                .filter(|_| !st.flush_running && role != Role::CompactOnly)
                .and_then(|cf| match pools {
                    Some(p) => p.try_acquire(Pool::High).map(|slot| (cf, Some(slot))),
                    None => Some((cf, None)),
                });
            if let Some((cf, _slot)) = flush {
                st.flush_running = true;
                let r = catch_unwind(AssertUnwindSafe(|| {
                    if db.opts.atomic_flush {
                        // Every family with immutable memtables, installed together.
                        let all: Vec<u32> = st
                            .cfs
                            .iter()
                            .filter(|(_, m)| !m.imm.is_empty())
                            .map(|(id, _)| *id)
                            .collect();
                        run_flush_group(db, &mut st, &all)
                    } else {
                        run_flush(db, &mut st, cf)
                    }
                }));
                st.flush_running = false;
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => record_error(db, &mut st, e),
                    Err(p) => record_error(db, &mut st, Error::from_panic("flush", p)),
                }
                purge_obsolete(db, &mut st);
                db.bg_cv.notify_all();
                db.work_cv.notify_all();
                parking_lot::MutexGuard::unlocked(&mut st, release_free_memory);
                continue;
            }
            // With two or more jobs, one thread stays free for flushes.
            let retry_wait = st
                .compaction_retry_at
                .map(|t| t.saturating_duration_since(Instant::now()));
            let may_compact = retry_wait.map(|w| w.is_zero()).unwrap_or(true)
                && st.manual_compactions == 0
                && st.ingests_running == 0
                && st.compactions_running < max_compactions
                && role != Role::FlushOnly
                && pools.is_none_or(|p| p.has_room(Pool::Low))
                && (id > 0 || jobs == 1 || flush_due_any(db, &st).is_none());
            if may_compact {
                if let Some((cf, pick)) = pick_auto_or_record(db, &mut st) {
                    // Room was checked above; another database may have taken it since (then
                    // the pick is dropped and made again when the pool has room).
                    let Some(_slot) = pools.map_or(Some(None), |p| p.try_acquire(Pool::Low).map(Some)) else {
                        db.work_cv.wait_for(&mut st, Duration::from_millis(10));
                        continue;
                    };
                    st.next_compaction_cf = cf.id + 1;
                    let r = catch_unwind(AssertUnwindSafe(|| run_compaction(db, &mut st, &cf, pick, true, false)));
                    match r {
                        Ok(Ok(())) => compaction_succeeded(&mut st),
                        Ok(Err(e)) => record_compaction_error(db, &mut st, e),
                        Err(p) => record_error(db, &mut st, Error::from_panic("compaction", p)),
                    }
                    purge_obsolete(db, &mut st);
                    db.bg_cv.notify_all();
                    db.work_cv.notify_all();
                    parking_lot::MutexGuard::unlocked(&mut st, release_free_memory);
                    continue;
                }
            }
        }
        let wait = st
            .compaction_retry_at
            .map(|t| {
                t.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1))
            })
            .unwrap_or(Duration::from_millis(500))
            .min(Duration::from_millis(500));
        db.work_cv.wait_for(&mut st, wait);
    }
}

/// [`pick_auto`], with a panic (the picker orders files with the user comparator) recorded as
/// the background error, as a panic in the compaction itself is. Uncaught, it would end the
/// background thread that picked, and with it every later flush and compaction.
fn pick_auto_or_record(
    db: &Arc<DbInner>,
    st: &mut DbState,
) -> Option<(Arc<super::column_family::ColumnFamilyData>, super::compaction::Pick)> {
    match catch_unwind(AssertUnwindSafe(|| pick_auto(st))) {
        Ok(p) => p,
        Err(p) => {
            record_error(db, st, Error::from_panic("compaction picking", p));
            db.bg_cv.notify_all();
            None
        }
    }
}

/// Wait until no flush or compaction is pending or running.
pub(crate) fn wait_for_compact(db: &Arc<DbInner>, opts: &WaitForCompactOptions) -> Result<()> {
    if db.read_only {
        return Ok(());
    }
    let deadline = (opts.timeout_micros > 0).then(|| Instant::now() + Duration::from_micros(opts.timeout_micros));
    let mut flushed = !opts.flush;
    let mut st = db.state.lock();
    loop {
        DbInner::check_bg_error(&st)?;
        // As RocksDB's WaitForCompact, a (soft) background error ends the wait.
        if let Some(e) = &st.soft_error {
            return Err(Error::Background(Arc::new(e.clone())));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Error::TimedOut(format!(
                "wait_for_compact: background work not done after {} us",
                opts.timeout_micros
            )));
        }
        if st.bg_paused > 0 {
            if opts.abort_on_pause {
                return Err(Error::Incomplete("wait_for_compact: background work is paused".into()));
            }
            db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
            continue;
        }
        if !flushed {
            drop(st);
            let all: Vec<u32> = db.cfs.read().by_id.keys().copied().collect();
            super::manual::flush_and_wait(db, all)?;
            flushed = true;
            st = db.state.lock();
            continue;
        }
        let pending_compaction = pick_auto_or_record(db, &mut st).is_some();
        DbInner::check_bg_error(&st)?;
        if flush_due_any(db, &st).is_none() && !st.flush_running && st.compactions_running == 0 && !pending_compaction {
            purge_obsolete(db, &mut st);
            return Ok(());
        }
        db.work_cv.notify_all();
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    }
}

/// Clear the background error. As RocksDB does, the memtable is switched to a fresh WAL (so
/// nothing is appended after a possibly torn record) and flushed before `resume` returns, so the
/// WAL that saw the failure is no longer needed for recovery.
pub(crate) fn resume(db: &Arc<DbInner>) -> Result<()> {
    {
        let mut st = db.state.lock();
        st.soft_error = None;
        st.compaction_retry_at = None;
        st.compaction_retry_delay = FIRST_RETRY_DELAY;
        let Some(e) = st.bg_error.clone() else {
            return Ok(());
        };
        if st.write_panicked {
            // The memtable may hold part of the panicked batch under unpublished sequence
            // numbers: only a reopen (which replays the WAL) gives a consistent state.
            return Err(Error::Background(Arc::new(e)));
        }
        super::error_handler::clear_after_resume(&mut st);
        // Whatever failed, leave the current WAL: a failed append may have left a torn record
        // in it, and a record written after that would be lost to recovery (point-in-time
        // replay stops at the tear; skipping corrupted records drops the rest of its block).
        st.wal_switch_pending = true;
    }
    db.work_cv.notify_all();
    let all: Vec<u32> = db.cfs.read().by_id.keys().copied().collect();
    super::manual::flush_and_wait(db, all)
}

pub(crate) fn shutdown(db: &Arc<DbInner>) {
    db.shutting_down.store(true, Ordering::Release);
    {
        let _st = db.state.lock();
        db.work_cv.notify_all();
        db.bg_cv.notify_all();
    }
    let threads: Vec<_> = std::mem::take(&mut *db.bg_threads.lock());
    for t in threads {
        let _ = t.join();
    }
    {
        let mut st = db.state.lock();
        purge_obsolete(db, &mut st);
    }
    let mut wal = db.wal.lock();
    if let Some(w) = wal.writer.as_mut() {
        let _ = w.flush();
    }
    wal.writer = None;
    drop(wal);
    *db.lock.lock() = None;
}

/// Stop starting background jobs and wait for the running ones (RocksDB's
/// `PauseBackgroundWork`); calls nest.
pub(crate) fn pause(db: &Arc<DbInner>) -> Result<()> {
    let mut st = db.state.lock();
    st.bg_paused += 1;
    while st.flush_running || st.compactions_running > 0 {
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    }
    Ok(())
}

/// Undo one `pause` (RocksDB's `ContinueBackgroundWork`).
pub(crate) fn resume_work(db: &Arc<DbInner>) -> Result<()> {
    let mut st = db.state.lock();
    if st.bg_paused == 0 {
        return Err(Error::invalid(
            "continue_background_work: background work is not paused",
        ));
    }
    st.bg_paused -= 1;
    db.work_cv.notify_all();
    db.bg_cv.notify_all();
    Ok(())
}

/// RocksDB's `CancelAllBackgroundWork`: no job starts any more (the DB shuts down: later flushes
/// and compactions fail); with `wait`, returns once the running ones ended.
pub(crate) fn cancel_all(db: &Arc<DbInner>, wait: bool) {
    db.shutting_down.store(true, Ordering::Release);
    {
        let _st = db.state.lock();
        db.work_cv.notify_all();
        db.bg_cv.notify_all();
    }
    if wait {
        let threads: Vec<_> = std::mem::take(&mut *db.bg_threads.lock());
        for t in threads {
            let _ = t.join();
        }
    }
}
