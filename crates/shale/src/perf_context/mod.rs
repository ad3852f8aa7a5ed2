//! Per-thread performance counters, public under `perf`, as RocksDB's `PerfContext`
//! (`set_perf_stats`, `PerfContext::report`): what one thread's operations did (key comparisons, blocks read,
//! time in the memtable, the WAL, …). Nothing is counted until a thread raises its level; the
//! engine's check is then a load of a global flag that stays false in programs that never do,
//! and otherwise a thread-local read.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

mod names;
pub(crate) use names::field;
pub use names::PerfMetric;
use names::FIELDS;

const N: usize = FIELDS.len();

/// How much a thread's [`PerfContext`] collects (the `rocksdb` crate's `PerfStatsLevel`).
#[derive(Debug, Copy, Clone, PartialEq, Eq)]
#[repr(i32)]
pub enum PerfStatsLevel {
    /// Unknown setting (counts nothing).
    Uninitialized = 0,
    /// Nothing is counted (the default).
    Disable,
    /// Counts only (comparisons, blocks, bytes, …).
    EnableCount,
    /// Counts and times, except the time spent waiting for mutexes.
    EnableTimeExceptForMutex,
    /// As `EnableTimeExceptForMutex` (Shale measures no CPU time apart).
    EnableTimeAndCPUTimeExceptForMutex,
    /// Counts and every time, mutex waits included.
    EnableTime,
    /// Not a level (counts nothing).
    OutOfBound,
}

// Levels in RocksDB's `PerfLevel` numbering.
const LEVEL_COUNT: u8 = 2;
const LEVEL_TIME: u8 = 4;
const LEVEL_MUTEX: u8 = 6;

/// Set once any thread asks for counts: until then the engine's checks are one load of it.
static ANY: AtomicBool = AtomicBool::new(false);

thread_local! {
    static LEVEL: Cell<u8> = const { Cell::new(1) };
    static CTX: [Cell<u64>; N] = const { [const { Cell::new(0) }; N] };
}

/// Set the perf level of the calling thread (RocksDB's `SetPerfLevel`).
pub fn set_perf_stats(lvl: PerfStatsLevel) {
    let rank = match lvl {
        PerfStatsLevel::EnableCount => LEVEL_COUNT,
        PerfStatsLevel::EnableTimeExceptForMutex => LEVEL_TIME,
        PerfStatsLevel::EnableTimeAndCPUTimeExceptForMutex => LEVEL_TIME + 1,
        PerfStatsLevel::EnableTime => LEVEL_MUTEX,
        PerfStatsLevel::Uninitialized | PerfStatsLevel::Disable | PerfStatsLevel::OutOfBound => 1,
    };
    if rank >= LEVEL_COUNT {
        ANY.store(true, Relaxed);
    }
    LEVEL.with(|l| l.set(rank));
}

#[inline]
fn level() -> u8 {
    if !ANY.load(Relaxed) {
        return 1;
    }
    LEVEL.with(|l| l.get())
}

/// Whether this thread counts.
#[inline]
pub(crate) fn counting() -> bool {
    level() >= LEVEL_COUNT
}

/// Count one user-key comparison (`user_key_comparison_count`): a load of a flag that stays
/// false unless some thread counts, the rest out of line.
#[inline(always)]
pub(crate) fn count_user_cmp() {
    if ANY.load(Relaxed) {
        count_user_cmp_slow();
    }
}

#[cold]
#[inline(never)]
fn count_user_cmp_slow() {
    add(field::USER_KEY_COMPARISON_COUNT, 1);
}

/// Add `n` to counter `f` of this thread, if it counts.
#[inline]
pub(crate) fn add(f: usize, n: u64) {
    if counting() {
        add_unchecked(f, n);
    }
}

/// Add without checking the level (the caller checked [`counting`]).
#[inline]
pub(crate) fn add_unchecked(f: usize, n: u64) {
    CTX.with(|c| {
        if let Some(c) = c.get(f) {
            c.set(c.get().wrapping_add(n));
        }
    });
}

/// A timer for a `*_time` / `*_nanos` counter: started only when this thread's level times.
#[derive(Clone, Copy)]
pub(crate) struct PerfTimer(Option<Instant>);

impl PerfTimer {
    #[inline]
    pub(crate) fn start() -> PerfTimer {
        PerfTimer((level() >= LEVEL_TIME).then(Instant::now))
    }

    /// A timer for mutex waits (level `EnableTime` only).
    #[inline]
    pub(crate) fn start_mutex() -> PerfTimer {
        PerfTimer((level() >= LEVEL_MUTEX).then(Instant::now))
    }

    /// Add the nanoseconds since the start to counter `f` (nothing if not started).
    #[inline]
    pub(crate) fn stop(self, f: usize) {
        if let Some(t) = self.0 {
            add_unchecked(f, t.elapsed().as_nanos() as u64);
        }
    }

    /// Add the nanoseconds since the start to `f` and restart.
    #[inline]
    pub(crate) fn lap(&mut self, f: usize) {
        if let Some(t) = self.0 {
            let now = Instant::now();
            add_unchecked(f, now.duration_since(t).as_nanos() as u64);
            self.0 = Some(now);
        }
    }
}

/// The calling thread's performance counters (RocksDB's `get_perf_context()`; the `rocksdb`
/// crate's `PerfContext`). Every `PerfContext` made on a thread reads the same counters: those of
/// the operations that thread ran since the last [`reset`](Self::reset).
pub struct PerfContext {
    _thread: PhantomData<*const ()>,
}

impl Default for PerfContext {
    fn default() -> Self {
        PerfContext { _thread: PhantomData }
    }
}

impl std::fmt::Debug for PerfContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.report(true))
    }
}

impl PerfContext {
    /// Zero this thread's counters.
    pub fn reset(&mut self) {
        CTX.with(|c| c.iter().for_each(|x| x.set(0)));
    }

    /// RocksDB's `PerfContext::ToString`: `name = value` pairs joined by `, ` in RocksDB's order
    /// (zeros left out if `exclude_zero_counters`).
    pub fn report(&self, exclude_zero_counters: bool) -> String {
        let mut out = String::new();
        CTX.with(|c| {
            for (name, v) in FIELDS.iter().zip(c.iter()) {
                let v = v.get();
                if exclude_zero_counters && v == 0 {
                    continue;
                }
                if !out.is_empty() {
                    out.push_str(", ");
                }
                out.push_str(name);
                out.push_str(" = ");
                out.push_str(&v.to_string());
            }
        });
        out
    }

    /// The value of one counter.
    pub fn metric(&self, id: PerfMetric) -> u64 {
        match id.field() {
            Some(f) => CTX.with(|c| c.get(f).map_or(0, Cell::get)),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_when_enabled_and_reports_in_order() {
        std::thread::spawn(|| {
            let mut ctx = PerfContext::default();
            add(field::BLOCK_READ_COUNT, 1);
            assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 0);
            set_perf_stats(PerfStatsLevel::EnableCount);
            add(field::BLOCK_READ_COUNT, 2);
            add(field::USER_KEY_COMPARISON_COUNT, 3);
            assert_eq!(ctx.metric(PerfMetric::BlockReadCount), 2);
            assert_eq!(ctx.report(true), "user_key_comparison_count = 3, block_read_count = 2");
            assert!(ctx
                .report(false)
                .starts_with("user_key_comparison_count = 3, block_cache_hit_count = 0, "));
            assert!(PerfTimer::start().0.is_none());
            ctx.reset();
            assert_eq!(ctx.report(true), "");
            set_perf_stats(PerfStatsLevel::Disable);
        })
        .join()
        .unwrap();
    }
}
