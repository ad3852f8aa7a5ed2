//! The write path: group commit (one WAL write and at most one sync for a whole group of
//! waiting writers), memtable insert, then publication of the new last sequence: the writer
//! queue and the group leader (`write_group.rs` has the group's steps, `switch.rs` the memtable
//! switch, `checks.rs` the argument checks, `mem_insert.rs` the memtable inserts).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::write_thread::{self, ExclusiveOp, InsertTask, Role, Writer};
use super::{state::DbInner, state::DbState};
use crate::engine::mem_insert::insert_batch;
use crate::engine::switch::check_not_cancelled;
use crate::engine::switch::make_room;
use crate::engine::switch::switch_memtable;
use crate::engine::write_group::drain_writes;
use crate::engine::write_group::finish_group;
use crate::engine::write_group::follower_insert;
use crate::engine::write_group::mode;
use crate::engine::write_group::next_free_sequence;
use crate::engine::write_group::stop_after_torn_insert;
use crate::engine::write_group::wal_append;
use crate::engine::write_group::Mode;
use crate::engine::write_group::PARALLEL_MIN_RECORDS;
use crate::engine::write_thread::TwoPcWrite;
use crate::error::{Error, Result};
use crate::options::WriteOptions;
use crate::perf_context::{field as perf, PerfTimer};
use crate::statistics::{Histogram, StopWatch, Ticker};
use crate::write_batch::WriteBatch;

/// The refusal of a write to a DB opened read-only or as a secondary instance.
fn read_only_write() -> Error {
    Error::NotSupported("write to a database opened read-only or as a secondary instance".into())
}

/// Most bytes one group carries (as RocksDB: 1 MiB, or less when the leader is small).
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(crate) fn write(db: &Arc<DbInner>, wo: &WriteOptions, batch: WriteBatch, _user_batch: bool) -> Result<()> {
    if db.read_only {
        return Err(read_only_write());
    }
    if wo.sync && wo.disable_wal {
        return Err(Error::invalid(
            "WriteOptions: sync and disable_wal are mutually exclusive",
        ));
    }
    // A key or value too large to store was dropped from the batch when it was added: refuse
    // the whole batch before any of it reaches the WAL.
    batch.validate()?;
    if wo.no_slowdown {
        super::write_stall::check_no_slowdown(db)?;
    }
    let _watch = StopWatch::start(&db.stats, Histogram::DbWrite);
    if let Some(s) = &db.stats {
        s.record(Histogram::BytesPerWrite, batch.size_in_bytes() as u64);
    }
    let w = Arc::new(Writer::new(Some(batch), wo.sync, wo.disable_wal, false));
    run_writer(db, w)
}

/// Switch the memtables of families `cfs` through the write queue (so no write is in flight).
pub(crate) fn force_switch(db: &Arc<DbInner>, cfs: Vec<u32>) -> Result<()> {
    let d = db.clone();
    exclusive(db, Box::new(move || switch_now(&d, &cfs)))
}

/// Run `op` as the write leader, alone: no write is in flight while it runs (a memtable
/// switch, a family created or dropped).
pub(crate) fn exclusive(db: &Arc<DbInner>, op: ExclusiveOp) -> Result<()> {
    let w = Arc::new(Writer::new(None, false, true, true));
    *w.op.lock() = Some(op);
    run_writer(db, w)
}

pub(super) fn run_writer(db: &Arc<DbInner>, w: Arc<Writer>) -> Result<()> {
    let insert = |w: &Writer, t: InsertTask| follower_insert(db, w, t);
    if let Role::Done(r) = write_thread::join(&db.writers, &w, &insert) {
        return r;
    }
    if w.force_switch {
        // An exclusive operation: no group in flight, none started until it ends.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drain_writes(db)?;
            match w.op.lock().take() {
                Some(op) => op(),
                None => Ok(()),
            }
        }))
        .unwrap_or_else(|p| {
            let e = Error::from_panic("write group", p);
            stop_after_torn_insert(db, e.clone());
            Err(e)
        });
        write_thread::leave_queue(&db.writers, 0);
        return r;
    }
    // We lead: gather a group of compatible writers from the front of the queue (followers
    // only; no allocation when we write alone).
    let mut followers: Vec<Arc<Writer>> = Vec::new();
    {
        let q = db.writers.lock();
        let lead_size = w.batch.lock().as_ref().map(|b| b.size_in_bytes()).unwrap_or(0);
        let max = if lead_size <= 128 << 10 {
            lead_size + (128 << 10)
        } else {
            MAX_GROUP_BYTES
        };
        let mut size = lead_size;
        let alone = w.two_pc.lock().is_some();
        for other in q.iter().skip(1) {
            if alone || other.force_switch || other.disable_wal != w.disable_wal || other.two_pc.lock().is_some() {
                break;
            }
            let s = other.batch.lock().as_ref().map(|b| b.size_in_bytes()).unwrap_or(0);
            if size + s > max {
                break;
            }
            size += s;
            followers.push(other.clone());
        }
    }
    // The leader's work runs user code (comparator, merge operator) and must never leave the
    // queue blocked: a panic becomes an error for the whole group and a background error that
    // stops every later write (the memtable may hold part of the group's batch).
    let mut handed_off = false;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        write_group(db, &w, &followers, &mut handed_off)
    }))
    .unwrap_or_else(|p| {
        let e = Error::from_panic("write group", p);
        stop_after_torn_insert(db, e.clone());
        Err(e)
    });
    if !handed_off {
        // The group never reached its memtable stage (nothing to write, or it failed before
        // its WAL write): its members end here.
        write_thread::leave_queue(&db.writers, followers.len());
        for f in &followers {
            f.complete(r.clone());
        }
    }
    r
}

pub(crate) fn switch_now(db: &Arc<DbInner>, cfs: &[u32]) -> Result<()> {
    let mut st = db.state.lock();
    DbInner::check_bg_error(&st)?;
    let non_empty: Vec<u32> = cfs
        .iter()
        .copied()
        .filter(|id| {
            st.cfs
                .get(id)
                .is_some_and(|m| m.mem.num_entries() > 0 || !m.mem.range_dels.is_empty())
        })
        .collect();
    if non_empty.is_empty() && !st.wal_switch_pending {
        return Ok(());
    }
    // After `resume()` the WAL is switched even with empty memtables, and their (empty) flush
    // records the new WAL as the families' log number: the old WAL, which may end in a torn
    // record, is never replayed again.
    let non_empty = if non_empty.is_empty() { cfs.to_vec() } else { non_empty };
    // wait for room in the immutable lists
    let full = |st: &DbState| {
        non_empty.iter().any(|id| {
            st.cfs
                .get(id)
                .is_some_and(|m| m.imm.len() + 1 >= m.cfd.opts.max_write_buffer_number.max(2))
        })
    };
    while full(&st) {
        DbInner::check_bg_error(&st)?;
        check_not_cancelled(db)?;
        db.bg_cv.wait_for(&mut st, Duration::from_millis(100));
    }
    switch_memtable(db, &mut st, &non_empty)
}

fn write_group(
    db: &Arc<DbInner>,
    leader: &Arc<Writer>,
    followers: &[Arc<Writer>],
    handed_off: &mut bool,
) -> Result<()> {
    if let Some(kind) = leader.two_pc.lock().take() {
        let b = leader.batch.lock().take().unwrap_or_default();
        return super::write_two_pc::two_pc_group(db, leader, b, kind, handed_off);
    }
    let sync = leader.sync || followers.iter().any(|g| g.sync);
    let disable_wal = leader.disable_wal;
    let mode = mode(db);
    let leader_batch = leader.batch.lock().take().unwrap_or_default();
    let mut leader_batch = leader_batch;
    let leader_count = leader_batch.count() as u64;
    // The group's WAL record: the leader's batch followed by each follower's (a writer alone
    // writes its own batch, copying nothing).
    let mut combined = (!followers.is_empty()).then(|| {
        let mut b = leader_batch.clone();
        for g in followers {
            if let Some(fb) = g.batch.lock().as_ref() {
                b.append_batch(fb);
            }
        }
        b
    });
    let (size, count) = {
        let b = combined.as_ref().unwrap_or(&leader_batch);
        (b.size_in_bytes(), b.count() as u64)
    };
    let mems = make_room(db, size as u64)?;
    if count == 0 {
        return Ok(());
    }
    // Earlier groups may still be inserting (pipelined or unordered writes): number after the
    // last sequence handed out, not the last published one.
    let pipe = &db.pipeline;
    let first = next_free_sequence(db);
    let last = first + count - 1;
    pipe.allocated.store(last, Ordering::Relaxed);
    leader_batch.set_sequence(first);
    if let Some(b) = combined.as_mut() {
        b.set_sequence(first);
    }
    let batch = combined.as_ref().unwrap_or(&leader_batch);
    let mut wal_error = None;
    if let Some(s) = db.stats.as_ref().and_then(|s| s.local()) {
        // as RocksDB's WriteImpl, once per group by its leader
        s.tick(Ticker::NumberKeysWritten, count);
        s.tick(Ticker::BytesWritten, size as u64);
        s.tick(Ticker::WriteDoneBySelf, 1);
        if !followers.is_empty() {
            s.tick(Ticker::WriteDoneByOther, followers.len() as u64);
        }
        if !disable_wal {
            s.tick(Ticker::WriteWithWal, 1 + followers.len() as u64);
            s.tick(Ticker::WalFileBytes, batch.data().len() as u64);
        }
    }
    let mut perf_timer = PerfTimer::start();
    if disable_wal {
        db.unpersisted_data.store(true, Ordering::Release);
    } else if let Err(e) = wal_append(db, batch, sync) {
        wal_error = Some(e);
    }
    // Followers still awake insert their own batches; the leader inserts its own and those of
    // parked followers (waking one would cost more than inserting for it). A group whose WAL
    // write failed inserts nothing: it only uses up its sequence numbers, in order (the record
    // may have reached the WAL and be replayed by recovery, so a write after `resume()` must
    // never reuse them).
    let mut own: Vec<(u64, &Writer)> = Vec::new();
    let mut helpers: Vec<(u64, &Writer)> = Vec::new();
    if wal_error.is_none() {
        let mut seq = first + leader_count;
        for g in followers {
            let n = g.batch.lock().as_ref().map(|b| b.count() as u64).unwrap_or(0);
            if mode == Mode::Serial || n < PARALLEL_MIN_RECORDS || g.is_parked() {
                own.push((seq, g));
            } else {
                helpers.push((seq, g));
            }
            seq += n;
        }
    }
    let unordered = mode == Mode::Unordered && wal_error.is_none();
    let early_exit = matches!(mode, Mode::Pipelined | Mode::Unordered);
    let mut group = write_thread::Group::new(
        1 + helpers.len(),
        first,
        last,
        mems,
        leader.clone(),
        followers.to_vec(),
        !unordered,
        sync,
        size as u64,
    );
    group.wal_error = wal_error;
    group.holds_queue = !early_exit;
    let group = Arc::new(group);
    pipe.in_flight.fetch_add(1, Ordering::AcqRel);
    if unordered {
        // Visible at once; the inserts below finish unordered with later groups'.
        db.last_seq.store(last, Ordering::Release);
    }
    *handed_off = true;
    perf_timer.lap(perf::WRITE_WAL_TIME);
    for &(seq, g) in &helpers {
        g.start_insert(InsertTask {
            seq,
            group: group.clone(),
        });
    }
    if early_exit {
        write_thread::leave_queue(&db.writers, followers.len());
    }
    let mine = if group.wal_error.is_some() {
        Ok(())
    } else {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<()> {
            insert_batch(&group.mems, first, &leader_batch)?;
            for &(seq, g) in &own {
                if let Some(b) = g.batch.lock().as_ref() {
                    insert_batch(&group.mems, seq, b)?;
                }
            }
            Ok(())
        }))
        .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)))
    };
    perf_timer.stop(perf::WRITE_MEMTABLE_TIME);
    if group.finished(mine.err()) {
        finish_group(db, &group);
    }
    if !helpers.is_empty() {
        db.write_stats.parallel_groups.fetch_add(1, Ordering::Relaxed);
    }
    leader.wait_done()
}

/// Write a two-phase-commit record; returns the number of the WAL it went into. The WAL is
/// always written (a prepare or commit marker that skipped it would be lost in a crash).
pub(crate) fn write_two_pc(db: &Arc<DbInner>, wal_batch: WriteBatch, kind: TwoPcWrite, sync: bool) -> Result<u64> {
    if db.read_only {
        return Err(read_only_write());
    }
    let w = Arc::new(Writer::new(Some(wal_batch), sync, false, false));
    *w.two_pc.lock() = Some(kind);
    run_writer(db, w.clone())?;
    Ok(w.log_used.load(Ordering::Acquire))
}
