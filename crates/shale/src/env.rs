//! The environment a database or backup engine runs in (the `rocksdb` crate's `Env`): the file
//! system, and the background thread pools that databases opened with it share.
//!
//! As in RocksDB, an `Env` has a low-priority pool (compactions) and a high-priority pool
//! (flushes); clones of an `Env` share them, so every database opened with the same `Env` (or a
//! clone of it) shares them too:
//! - a pool's size caps how many of its jobs run at once across all those databases. Opening a
//!   database raises a pool to what the database itself asks for (its compaction limit from
//!   `max_background_jobs`; one flush), as RocksDB's open does, so a pool never holds a single
//!   database below its own limits; setting a size larger raises the cap.
//! - lowering a pool's CPU priority runs its jobs at nice 19, lowering its I/O priority runs
//!   them in Linux's idle I/O class (`ioprio_set`). A thread cannot take its priority back
//!   without privileges, so once a pool is lowered a database's background threads specialize:
//!   with two or more (`max_background_jobs >= 2`), the first runs only flushes and the others
//!   only compactions, and each lowers itself as its pool says; with a single thread, it lowers
//!   itself only for what both pools ask.
//!
//! The bottom-priority pool (`set_bottom_priority_background_threads`) is recorded: Shale
//! runs bottommost compactions in the low-priority pool, as RocksDB does when the bottom pool
//! is empty (its default).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::Result;
use crate::fs::testing::MemFs;
use crate::fs::{FileSystem, PosixFs};

/// The file system and the background thread pools databases share (the `rocksdb` crate's
/// `Env`; see the module description). Cheap to clone; clones share the pools.
#[derive(Clone)]
pub struct Env {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) pools: Arc<EnvPools>,
    /// False for a file system given alone to `set_env`: its pools are not shared.
    pub(crate) shared: bool,
}

/// The pools of an [`Env`]: sizes, jobs running, priorities.
#[derive(Default)]
pub(crate) struct EnvPools {
    low: AtomicUsize,
    high: AtomicUsize,
    bottom: AtomicUsize,
    low_running: AtomicUsize,
    high_running: AtomicUsize,
    low_cpu: AtomicBool,
    low_io: AtomicBool,
    high_cpu: AtomicBool,
    high_io: AtomicBool,
}

/// Which pool a background job runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    /// Compactions.
    Low,
    /// Flushes.
    High,
}

/// A job's place in its pool, given back when dropped.
pub(crate) struct PoolSlot<'a> {
    running: &'a AtomicUsize,
}

impl Drop for PoolSlot<'_> {
    fn drop(&mut self) {
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EnvPools {
    fn size(&self, p: Pool) -> &AtomicUsize {
        match p {
            Pool::Low => &self.low,
            Pool::High => &self.high,
        }
    }
    fn running(&self, p: Pool) -> &AtomicUsize {
        match p {
            Pool::Low => &self.low_running,
            Pool::High => &self.high_running,
        }
    }

    /// Raise pool `p` to at least `n` threads (a database opening with these pools).
    pub(crate) fn raise_to(&self, p: Pool, n: usize) {
        self.size(p).fetch_max(n, Ordering::AcqRel);
    }

    /// The size of pool `p`.
    pub(crate) fn pool_size(&self, p: Pool) -> usize {
        self.size(p).load(Ordering::Acquire)
    }

    /// A place for one more job in pool `p`, or None when the pool is full.
    pub(crate) fn try_acquire(&self, p: Pool) -> Option<PoolSlot<'_>> {
        let cap = self.pool_size(p).max(1);
        let running = self.running(p);
        running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| (r < cap).then_some(r + 1))
            .ok()
            .map(|_| PoolSlot { running })
    }

    /// Whether pool `p` has room for one more job now.
    pub(crate) fn has_room(&self, p: Pool) -> bool {
        self.running(p).load(Ordering::Acquire) < self.pool_size(p).max(1)
    }

    /// Whether either pool's priority is lowered (the threads then specialize).
    pub(crate) fn any_lowered(&self) -> bool {
        self.lowered_cpu(Pool::Low)
            || self.lowered_io(Pool::Low)
            || self.lowered_cpu(Pool::High)
            || self.lowered_io(Pool::High)
    }
    pub(crate) fn lowered_cpu(&self, p: Pool) -> bool {
        match p {
            Pool::Low => self.low_cpu.load(Ordering::Acquire),
            Pool::High => self.high_cpu.load(Ordering::Acquire),
        }
    }
    pub(crate) fn lowered_io(&self, p: Pool) -> bool {
        match p {
            Pool::Low => self.low_io.load(Ordering::Acquire),
            Pool::High => self.high_io.load(Ordering::Acquire),
        }
    }
}

/// Lower the calling thread's CPU priority to nice 19 and/or its I/O priority to the idle class
/// (Linux; elsewhere nothing). Failures are ignored: a priority is a hint to the scheduler.
pub(crate) fn lower_this_thread(cpu: bool, io: bool) {
    #[cfg(target_os = "linux")]
    // SAFETY: both calls only change the scheduling attributes of the calling thread (its id
    // from gettid); they read and write no memory of this process.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        if cpu {
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
        }
        if io {
            // ioprio_set(IOPRIO_WHO_PROCESS, tid, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0))
            const IOPRIO_WHO_PROCESS: libc::c_long = 1;
            const IOPRIO_CLASS_IDLE: libc::c_long = 3;
            const IOPRIO_CLASS_SHIFT: libc::c_long = 13;
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                tid as libc::c_long,
                IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cpu, io);
}

impl Env {
    /// The default environment: the POSIX file system, pools of their default size (one
    /// thread each, raised by the databases opened with it).
    pub fn new() -> Result<Env> {
        Ok(Env::with_file_system(Arc::new(PosixFs)))
    }
    /// An environment whose files live in memory only (the `rocksdb` crate's `mem_env`): a
    /// database opened with it disappears with the last handle on this `Env`.
    pub fn mem_env() -> Result<Env> {
        Ok(Env::with_file_system(Arc::new(MemFs::new())))
    }
    /// An environment writing through `fs` (tests: an in-memory or failing file system).
    pub fn with_file_system(fs: Arc<dyn FileSystem>) -> Env {
        Env {
            fs,
            pools: Arc::new(EnvPools::default()),
            shared: true,
        }
    }
    /// Sets the size of the low-priority pool (compactions), shared by every database opened
    /// with this `Env`; a negative size is 0. Opening a database raises it to the database's
    /// own compaction limit.
    pub fn set_background_threads(&mut self, num_threads: i32) {
        self.pools.low.store(num_threads.max(0) as usize, Ordering::Release);
    }
    /// Sets the size of the high-priority pool (flushes).
    pub fn set_high_priority_background_threads(&mut self, n: i32) {
        self.pools.high.store(n.max(0) as usize, Ordering::Release);
    }
    /// The same as [`set_background_threads`](Self::set_background_threads).
    pub fn set_low_priority_background_threads(&mut self, n: i32) {
        self.set_background_threads(n);
    }
    /// Sets the size of the bottom-priority pool. Recorded only: Shale runs bottommost
    /// compactions in the low-priority pool (RocksDB's behaviour with an empty bottom pool).
    pub fn set_bottom_priority_background_threads(&mut self, n: i32) {
        self.pools.bottom.store(n.max(0) as usize, Ordering::Release);
    }
    /// Waits for threads started through this `Env`. Shale's background threads belong to
    /// their database and end when it closes, so there is nothing to wait for here.
    pub fn join_all_threads(&mut self) {}
    /// Compactions run in the idle I/O class (Linux).
    pub fn lower_thread_pool_io_priority(&mut self) {
        self.pools.low_io.store(true, Ordering::Release);
    }
    /// Flushes run in the idle I/O class (Linux).
    pub fn lower_high_priority_thread_pool_io_priority(&mut self) {
        self.pools.high_io.store(true, Ordering::Release);
    }
    /// Compactions run at nice 19.
    pub fn lower_thread_pool_cpu_priority(&mut self) {
        self.pools.low_cpu.store(true, Ordering::Release);
    }
    /// Flushes run at nice 19.
    pub fn lower_high_priority_thread_pool_cpu_priority(&mut self) {
        self.pools.high_cpu.store(true, Ordering::Release);
    }
}

/// What [`Options::set_env`](crate::Options::set_env) accepts: an [`Env`] (its file system
/// and its shared pools) or a file system alone (pools of the database's own).
pub trait IntoEnv {
    /// The file system and the pools.
    fn into_env(self) -> Env;
}

impl IntoEnv for &Env {
    fn into_env(self) -> Env {
        self.clone()
    }
}

impl IntoEnv for Env {
    fn into_env(self) -> Env {
        self
    }
}

impl IntoEnv for Arc<dyn FileSystem> {
    fn into_env(self) -> Env {
        Env {
            shared: false,
            ..Env::with_file_system(self)
        }
    }
}

impl<T: FileSystem + 'static> IntoEnv for Arc<T> {
    fn into_env(self) -> Env {
        let fs: Arc<dyn FileSystem> = self;
        fs.into_env()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_caps_its_jobs_and_a_database_raises_it() {
        let p = EnvPools::default();
        // Unset: one job at a time.
        let a = p.try_acquire(Pool::Low).unwrap();
        assert!(p.try_acquire(Pool::Low).is_none());
        assert!(!p.has_room(Pool::Low));
        p.raise_to(Pool::Low, 2);
        let b = p.try_acquire(Pool::Low).unwrap();
        assert!(p.try_acquire(Pool::Low).is_none());
        drop(a);
        assert!(p.has_room(Pool::Low));
        drop(b);
        // Raising never lowers; the high pool is separate.
        p.raise_to(Pool::Low, 1);
        assert_eq!(p.pool_size(Pool::Low), 2);
        let _h = p.try_acquire(Pool::High).unwrap();
        assert!(p.try_acquire(Pool::High).is_none());
        assert!(p.has_room(Pool::Low));
    }

    #[test]
    fn clones_share_their_pools() {
        let mut e = Env::mem_env().unwrap();
        let c = e.clone();
        e.set_background_threads(5);
        e.lower_thread_pool_cpu_priority();
        assert_eq!(c.pools.pool_size(Pool::Low), 5);
        assert!(c.pools.lowered_cpu(Pool::Low) && !c.pools.lowered_cpu(Pool::High));
        assert!(c.pools.any_lowered());
    }
}
