//! One memory budget for memtables, as RocksDB's `WriteBufferManager`.
//!
//! Every memtable of every DB sharing a manager charges its arena memory here: while it is the
//! mutable memtable the bytes count as *active*, once it is switched they count only in the
//! total, and they leave the total when the memtable is freed (after its flush, once no reader
//! holds it). A DB asks [`should_flush`](WriteBufferManager::should_flush) on each write and
//! switches its memtable when it says so; with `allow_stall`, writers wait while the total is at
//! or above the budget ([`should_stall`](WriteBufferManager::should_stall)).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// A memtable memory budget that one or several DBs share (pass the same `Arc` in each DB's
/// `Options::write_buffer_manager`).
pub struct WriteBufferManager {
    buffer_size: usize,
    /// `buffer_size * 7 / 8`: a mutable memtable above it is flushed.
    mutable_limit: usize,
    allow_stall: bool,
    memory_used: AtomicUsize,
    memory_active: AtomicUsize,
    /// Stalled writers wait here; signalled when memory is freed.
    stall_lock: Mutex<()>,
    stall_cv: Condvar,
}

impl std::fmt::Debug for WriteBufferManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBufferManager")
            .field("buffer_size", &self.buffer_size)
            .field("allow_stall", &self.allow_stall)
            .field("memory_usage", &self.memory_usage())
            .field("mutable_memtable_memory_usage", &self.mutable_memtable_memory_usage())
            .finish()
    }
}

impl WriteBufferManager {
    /// A manager with a budget of `buffer_size` bytes for all memtables (0: unlimited, only
    /// counting). With `allow_stall`, writes wait while memtables use the whole budget.
    pub fn new(buffer_size: usize, allow_stall: bool) -> Arc<WriteBufferManager> {
        Arc::new(WriteBufferManager {
            buffer_size,
            mutable_limit: buffer_size / 8 * 7,
            allow_stall,
            memory_used: AtomicUsize::new(0),
            memory_active: AtomicUsize::new(0),
            stall_lock: Mutex::new(()),
            stall_cv: Condvar::new(),
        })
    }

    /// Whether a budget is set.
    pub fn enabled(&self) -> bool {
        self.buffer_size > 0
    }
    /// The memory budget in bytes (0: none, only counting).
    pub fn buffer_size(&self) -> usize {
        self.buffer_size
    }
    /// Bytes of all memtables charged here (mutable, immutable, and flushed but still read).
    pub fn memory_usage(&self) -> usize {
        self.memory_used.load(Ordering::Relaxed)
    }
    /// Bytes of the mutable memtables.
    pub fn mutable_memtable_memory_usage(&self) -> usize {
        self.memory_active.load(Ordering::Relaxed)
    }

    /// RocksDB's `ShouldFlush`: the mutable memtables use more than 7/8 of the budget, or all
    /// memtables use the whole budget and the mutable ones at least half of it.
    pub fn should_flush(&self) -> bool {
        if !self.enabled() {
            return false;
        }
        let active = self.mutable_memtable_memory_usage();
        active > self.mutable_limit || (self.memory_usage() >= self.buffer_size && active >= self.buffer_size / 2)
    }

    /// RocksDB's `ShouldStall`: with `allow_stall`, while all memtables use the whole budget.
    pub fn should_stall(&self) -> bool {
        self.allow_stall && self.enabled() && self.memory_usage() >= self.buffer_size
    }

    /// Wait (at most `max`) for memory to be freed.
    pub(crate) fn wait_for_free(&self, max: Duration) {
        let mut g = self.stall_lock.lock();
        if self.should_stall() {
            self.stall_cv.wait_for(&mut g, max);
        }
    }

    /// Change the charge of a memtable by `delta` bytes (positive: grown).
    pub(crate) fn adjust(&self, grow: usize, shrink: usize, active: bool) {
        if grow > 0 {
            self.memory_used.fetch_add(grow, Ordering::Relaxed);
            if active {
                self.memory_active.fetch_add(grow, Ordering::Relaxed);
            }
        }
        if shrink > 0 {
            self.memory_used.fetch_sub(shrink, Ordering::Relaxed);
            if active {
                self.memory_active.fetch_sub(shrink, Ordering::Relaxed);
            }
            self.notify();
        }
    }

    /// A memtable of `bytes` stopped being mutable (RocksDB's `ScheduleFreeMem`).
    pub(crate) fn schedule_free(&self, bytes: usize) {
        self.memory_active.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn notify(&self) {
        let _g = self.stall_lock.lock();
        self.stall_cv.notify_all();
    }
}

/// Where a DB's memtables charge their memory: the DB's own total (for the `size-all-mem-tables`
/// property) and, if any, the write buffer manager.
#[derive(Debug)]
pub(crate) struct MemAccount {
    /// Bytes of every live memtable of the DB.
    pub total: AtomicUsize,
    pub wbm: Option<Arc<WriteBufferManager>>,
}

impl MemAccount {
    pub(crate) fn new(wbm: Option<Arc<WriteBufferManager>>) -> Arc<MemAccount> {
        Arc::new(MemAccount {
            total: AtomicUsize::new(0),
            wbm,
        })
    }
}

/// A memtable's charge against a [`MemAccount`].
#[derive(Debug)]
pub(crate) struct MemCharge {
    account: Arc<MemAccount>,
    charged: AtomicUsize,
    active: std::sync::atomic::AtomicBool,
}

impl MemCharge {
    pub(crate) fn new(account: Arc<MemAccount>) -> MemCharge {
        MemCharge {
            account,
            charged: AtomicUsize::new(0),
            active: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// Bring the charge to `now` bytes.
    pub(crate) fn update(&self, now: usize) {
        let prev = self.charged.swap(now, Ordering::Relaxed);
        if prev == now {
            return;
        }
        let (grow, shrink) = if now > prev { (now - prev, 0) } else { (0, prev - now) };
        if grow > 0 {
            self.account.total.fetch_add(grow, Ordering::Relaxed);
        } else {
            self.account.total.fetch_sub(shrink, Ordering::Relaxed);
        }
        if let Some(w) = &self.account.wbm {
            w.adjust(grow, shrink, self.active.load(Ordering::Relaxed));
        }
    }

    /// The memtable became immutable.
    pub(crate) fn mark_immutable(&self, now: usize) {
        self.update(now);
        if self.active.swap(false, Ordering::Relaxed) {
            if let Some(w) = &self.account.wbm {
                w.schedule_free(self.charged.load(Ordering::Relaxed));
            }
        }
    }
}

impl Drop for MemCharge {
    fn drop(&mut self) {
        self.update(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn should_flush_and_stall_follow_rocksdb() {
        let w = WriteBufferManager::new(8000, true);
        let acc = MemAccount::new(Some(w.clone()));
        let a = MemCharge::new(acc.clone());
        a.update(6000);
        assert!(!w.should_flush());
        a.update(7001);
        assert!(w.should_flush(), "mutable above 7/8");
        a.mark_immutable(7001);
        assert_eq!(w.mutable_memtable_memory_usage(), 0);
        assert!(!w.should_flush());
        let b = MemCharge::new(acc.clone());
        b.update(3000);
        assert!(w.should_stall());
        assert!(!w.should_flush(), "mutable below half");
        b.update(4000);
        assert!(w.should_flush(), "total at budget, mutable at half");
        drop(a);
        assert_eq!(w.memory_usage(), 4000);
        assert!(!w.should_stall());
        assert_eq!(acc.total.load(Ordering::Relaxed), 4000);
        drop(b);
        assert_eq!(w.memory_usage(), 0);
        assert_eq!(w.mutable_memtable_memory_usage(), 0);
        let off = WriteBufferManager::new(0, true);
        assert!(!off.should_flush() && !off.should_stall());
    }
}
