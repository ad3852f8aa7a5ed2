//! The steps of a write group after its leader formed it: the WAL append, sequence numbers,
//! follower inserts, and finishing (publishing the last sequence, waking the writers).

use super::state::DbInner;
use super::write_thread::{self, InsertTask, Writer};
use crate::engine::mem_insert::insert_batch;
use crate::error::{Error, Result};
use crate::statistics::{Histogram, StopWatch, Ticker};
use crate::write_batch::WriteBatch;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Append one record to the current WAL (flushed to the OS, synced with `sync`); returns the
/// WAL's number. A failure becomes the background error (fail-stop).
pub(crate) fn wal_append(db: &DbInner, batch: &WriteBatch, sync: bool) -> Result<u64> {
    let mut wal = db.wal.lock();
    let number = wal.number;
    let r = (|| -> Result<()> {
        let w = wal.writer.as_mut().ok_or_else(|| Error::invalid("no WAL is open"))?;
        w.add_record(batch.data())?;
        if sync {
            let _watch = StopWatch::start(&db.stats, Histogram::WalFileSyncMicros);
            w.sync()?;
            crate::statistics::tick(&db.stats, Ticker::WalFileSynced, 1);
        } else if !db.opts.manual_wal_flush {
            w.flush()?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => {
            wal.unsynced = !sync;
            Ok(number)
        }
        Err(e) => {
            drop(wal);
            // Fail-stop: no later write may succeed after a WAL failure.
            let mut st = db.state.lock();
            super::error_handler::record_write_error(db, &mut st, e.clone());
            db.bg_cv.notify_all();
            Err(e)
        }
    }
}

/// The first sequence number not yet handed out: after the last one allocated to a group (which
/// may still be inserting) and the last one published.
pub(crate) fn next_free_sequence(db: &DbInner) -> u64 {
    db.pipeline
        .allocated
        .load(Ordering::Relaxed)
        .max(db.last_seq.load(Ordering::Acquire))
        + 1
}

/// How a DB's write groups pass from the WAL to the memtables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// The leader inserts the whole group (the memtable takes no concurrent inserts, or
    /// `allow_concurrent_memtable_write` is off); the next group waits for this one.
    Serial,
    /// Members insert their own batches in parallel; the next group's WAL write waits until
    /// this group is published (RocksDB's default).
    Parallel,
    /// `enable_pipelined_write`: the next group's WAL write overlaps this group's inserts;
    /// groups are still published whole and in order.
    Pipelined,
    /// `unordered_write`: the group's sequence is published right after its WAL write and its
    /// inserts run unordered with later groups' (a snapshot may see part of a group until its
    /// inserts end, as RocksDB documents).
    Unordered,
}

pub(crate) fn mode(db: &DbInner) -> Mode {
    let opts = &db.opts;
    if !(opts.allow_concurrent_memtable_write && db.concurrent_inserts.load(Ordering::Relaxed)) {
        Mode::Serial
    } else if opts.unordered_write {
        Mode::Unordered
    } else if opts.enable_pipelined_write {
        Mode::Pipelined
    } else {
        Mode::Parallel
    }
}

/// The last member of a group to finish its insert publishes the group — after every earlier
/// group, so readers never see part of a group or a gap — and completes every member. A group
/// whose turn has not come (an earlier one still inserts) waits in `Pipeline::unpublished`, and
/// whoever publishes the group before it publishes it too: no thread waits for another's inserts.
pub(crate) fn finish_group(db: &DbInner, g: &Arc<write_thread::Group>) {
    let pipe = &db.pipeline;
    let mut insert_error = g.error.lock().take();
    if g.wal_error.is_none() && insert_error.is_none() {
        // Fragmenting orders the tombstones with the user comparator: a panic here is handled
        // as one in the inserts (unwinding would leave every member of the group waiting).
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for (_, mem) in g.mems.iter() {
                mem.update_charge();
                // Fragment the memtable's range tombstones once, here, so readers never do.
                mem.range_dels.refresh(mem.icmp());
            }
        }));
        if let Err(p) = r {
            insert_error = Some(Error::from_panic("range tombstone fragmenting", p));
        }
    }
    let r = match (&g.wal_error, insert_error) {
        (Some(e), _) => Err(e.clone()),
        (None, Some(e)) => {
            // Part of the group may be in the memtable under unpublished sequence numbers: the
            // group is never published, nor is any after it.
            stop_after_torn_insert(db, e.clone());
            Err(e)
        }
        (None, None) => Ok(()),
    };
    *g.result.lock() = Some(r);
    if !g.ordered {
        // unordered_write: published at the WAL write.
        complete_group(db, g);
        return;
    }
    let mut ready = Vec::new();
    {
        let mut waiting = pipe.unpublished.lock();
        if waiting.is_empty() && !pipe.is_broken() && db.last_seq.load(Ordering::Acquire) + 1 == g.first {
            // Its turn, and no group waits behind it (the common case): publish it alone.
            db.last_seq.store(g.last, Ordering::Release);
            drop(waiting);
            complete_group(db, g);
            return;
        }
        waiting.insert(g.first, g.clone());
        if pipe.is_broken() {
            // No group after the broken one is ever published: all fail.
            let e = pipe.broken_error();
            for (_, h) in std::mem::take(&mut *waiting) {
                let mut hr = h.result.lock();
                if hr.as_ref().is_some_and(|r| r.is_ok()) {
                    *hr = Some(Err(e.clone()));
                }
                drop(hr);
                ready.push(h);
            }
        } else {
            while let Some(h) = waiting.remove(&(db.last_seq.load(Ordering::Acquire) + 1)) {
                // Publish: readers never see part of a group. A group whose WAL write failed
                // only uses up its sequence numbers (a write after `resume()` must never reuse
                // them: the record may be in the WAL).
                db.last_seq.store(h.last, Ordering::Release);
                ready.push(h);
            }
        }
    }
    for h in ready {
        complete_group(db, &h);
    }
}

/// A group is published (or failed): count it out of the pipeline, hand the queue on if it
/// kept it, and complete its members with its result.
pub(crate) fn complete_group(db: &DbInner, g: &write_thread::Group) {
    let pipe = &db.pipeline;
    let r = g.result.lock().clone().unwrap_or(Ok(()));
    if r.is_ok() {
        db.write_stats
            .record(1 + g.followers.len() as u64, g.last - g.first + 1, g.size, g.sync);
    }
    pipe.in_flight.fetch_sub(1, Ordering::AcqRel);
    pipe.wake();
    if g.holds_queue {
        // The group kept the queue until now: hand it on before completing the members (a
        // member that writes again at once then queues behind the next leader).
        write_thread::leave_queue(&db.writers, g.followers.len());
    }
    for m in &g.followers {
        m.complete(r.clone());
    }
    g.leader.complete(r);
}

/// A group's memtable insert panicked or failed after its WAL record was written: the memtable
/// may hold part of it under unpublished sequence numbers. Stop writes for good (no `resume()`;
/// a reopen replays the WAL).
pub(crate) fn stop_after_torn_insert(db: &DbInner, e: Error) {
    db.pipeline.set_broken(e.clone());
    let mut st = db.state.lock();
    st.write_panicked = true;
    super::error_handler::record_write_error(db, &mut st, e);
    db.bg_cv.notify_all();
}

/// A follower's part of its group's memtable stage, on its own thread; the last member to
/// finish publishes the group.
pub(crate) fn follower_insert(db: &DbInner, w: &Writer, task: InsertTask) {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match w.batch.lock().as_ref() {
        Some(b) => insert_batch(&task.group.mems, task.seq, b),
        None => Ok(()),
    }))
    .unwrap_or_else(|p| Err(Error::from_panic("memtable insert", p)));
    if task.group.finished(r.err()) {
        finish_group(db, &task.group);
    }
}

/// A follower inserts its own batch (in parallel with the leader) only if it has at least this
/// many records; smaller ones cost less to insert than to hand off.
pub(crate) const PARALLEL_MIN_RECORDS: u64 = 1;

/// Wait until no write group is between its WAL write and its completion (before a memtable
/// switch or an exclusive operation, which the write leader runs).
pub(crate) fn drain_writes(db: &DbInner) -> Result<()> {
    let p = &db.pipeline;
    if p.in_flight.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    p.wait(|| p.in_flight.load(Ordering::Acquire) == 0)
}
