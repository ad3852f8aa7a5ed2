//! The write path's side of write stalls: waiting while writes are delayed or stopped, and
//! the statistics of the wait.

use std::sync::atomic::Ordering as AtOrd;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::stall::Condition;
use super::state::{DbInner, DbState};
use crate::error::Result;

/// Delay a write group of `bytes` while writes are delayed, then wait while they are stopped
/// (RocksDB's `DBImpl::DelayWrite`). Called by the write leader with the DB mutex held.
pub(crate) fn delay_or_stop_write(db: &DbInner, st: &mut MutexGuard<'_, DbState>, bytes: u64) -> Result<()> {
    let (cond, cause) = db.stall.state();
    if cond == Condition::Normal {
        return Ok(());
    }
    if cond == Condition::Delayed {
        let delay = db.stall.get_delay(bytes);
        if !delay.is_zero() {
            let start = Instant::now();
            MutexGuard::unlocked(st, || {
                // Sleep in short steps, and stop early once writes are no longer delayed.
                while start.elapsed() < delay && db.stall.state().0 == Condition::Delayed {
                    std::thread::sleep(SLEEP_STEP.min(delay - start.elapsed().min(delay)));
                }
            });
            let micros = start.elapsed().as_micros() as u64;
            db.stall.counters.record(Condition::Delayed, cause, micros);
            stall_stats(db, micros);
        }
    }
    let (cond, cause) = db.stall.state();
    if cond == Condition::Stopped {
        let start = Instant::now();
        loop {
            DbInner::check_bg_error(st)?;
            if db.stall.state().0 != Condition::Stopped || db.shutting_down.load(AtOrd::Acquire) {
                break;
            }
            db.work_cv.notify_all();
            db.bg_cv.wait_for(st, Duration::from_millis(100));
        }
        let micros = start.elapsed().as_micros() as u64;
        db.stall.counters.record(Condition::Stopped, cause, micros);
        stall_stats(db, micros);
    }
    DbInner::check_bg_error(st)
}

/// A write group waited `micros` in a stall: the statistics' `rocksdb.stall.micros` and
/// `rocksdb.db.write.stall`, and this thread's `write_delay_time`.
pub(crate) fn stall_stats(db: &DbInner, micros: u64) {
    if let Some(s) = &db.stats {
        s.tick(crate::statistics::Ticker::StallMicros, micros);
        s.record_time(crate::statistics::Histogram::WriteStall, micros);
    }
    crate::perf_context::add(
        crate::perf_context::field::WRITE_DELAY_TIME,
        micros.saturating_mul(1000),
    );
}

const SLEEP_STEP: Duration = Duration::from_micros(1001);

/// For a write with `no_slowdown`: an Incomplete error if writes are delayed or stopped now (by
/// the write controller or a write buffer manager that stalls), as RocksDB fails such writes
/// with `Status::Incomplete("Write stall")` instead of waiting.
pub(crate) fn check_no_slowdown(db: &DbInner) -> Result<()> {
    let (cond, cause) = db.stall.state();
    if cond != Condition::Normal {
        return Err(crate::error::Error::Incomplete(format!(
            "Write stall ({cond:?}, {cause:?}) and WriteOptions::no_slowdown is set"
        )));
    }
    if db.write_buffer_manager().is_some_and(|w| w.should_stall()) {
        return Err(crate::error::Error::Incomplete(
            "Write stall (write buffer manager) and WriteOptions::no_slowdown is set".into(),
        ));
    }
    Ok(())
}
