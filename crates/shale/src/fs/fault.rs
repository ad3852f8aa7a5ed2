//! A file system wrapper that injects I/O errors, for testing failure handling.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::file_system::{name_of, FileSystem, RandomAccessFile, WritableFile};
use super::forwarding::ForwardingFs;
use crate::error::{Error, Result};

/// Which operations fail while a fault is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// `append`/`flush` on writable files fail with EIO.
    WriteEio,
    /// `append`/`flush` fail with ENOSPC.
    WriteNoSpace,
    /// `sync` fails with EIO.
    SyncEio,
    /// Reads fail with EIO.
    ReadEio,
    /// Creating files fails with EIO.
    CreateEio,
}

/// What the thread doing an I/O is working on (as RocksDB's `Env::IOActivity`), so that tests
/// can fail the I/O of one kind of background job only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoActivity {
    /// Any I/O outside flush and compaction jobs (user reads and writes, open, recovery, ...).
    Other,
    /// A flush job.
    Flush,
    /// A compaction job.
    Compaction,
}

thread_local! {
    static ACTIVITY: std::cell::Cell<IoActivity> = const { std::cell::Cell::new(IoActivity::Other) };
}

/// The activity of the current thread.
fn current_io_activity() -> IoActivity {
    ACTIVITY.with(|a| a.get())
}

/// Marks the current thread's I/O as `a` until dropped.
pub(crate) struct ActivityGuard(IoActivity);

impl ActivityGuard {
    pub(crate) fn set(a: IoActivity) -> ActivityGuard {
        ActivityGuard(ACTIVITY.with(|c| c.replace(a)))
    }
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        ACTIVITY.with(|c| c.set(self.0));
    }
}

type Rule = (FaultKind, Option<String>, Option<IoActivity>);

#[derive(Default)]
struct Ctl {
    active: Mutex<Vec<Rule>>,
    countdown: AtomicU64,
    armed: AtomicBool,
    injected: AtomicU64,
}

/// Wraps a [`FileSystem`] and fails selected operations on request.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn FileSystem>,
    ctl: Arc<Ctl>,
}

impl FaultFs {
    /// Wraps `inner`, injecting no faults until asked.
    pub fn new(inner: Arc<dyn FileSystem>) -> FaultFs {
        FaultFs {
            inner,
            ctl: Arc::new(Ctl::default()),
        }
    }
    /// Start failing `kind` operations on files whose name contains `pattern` (all files if None).
    pub fn inject(&self, kind: FaultKind, pattern: Option<&str>) {
        self.ctl
            .active
            .lock()
            .push((kind, pattern.map(|s| s.to_string()), None));
    }
    /// Like `inject`, for I/O done by threads working on `activity` only (e.g. compactions).
    pub fn inject_for(&self, kind: FaultKind, pattern: Option<&str>, activity: IoActivity) {
        self.ctl
            .active
            .lock()
            .push((kind, pattern.map(|s| s.to_string()), Some(activity)));
    }
    /// Start failing after `n` more successful matching operations.
    pub fn inject_after(&self, kind: FaultKind, pattern: Option<&str>, n: u64) {
        self.ctl.countdown.store(n, Ordering::SeqCst);
        self.ctl.armed.store(true, Ordering::SeqCst);
        self.inject(kind, pattern);
    }
    /// Stop injecting faults.
    pub fn clear(&self) {
        self.ctl.active.lock().clear();
        self.ctl.armed.store(false, Ordering::SeqCst);
    }
    /// Number of faults injected so far.
    pub fn injected(&self) -> u64 {
        self.ctl.injected.load(Ordering::SeqCst)
    }
}

impl Ctl {
    fn check(&self, kind: FaultKind, name: &str) -> Result<()> {
        let hit = self.active.lock().iter().any(|(k, p, a)| {
            *k == kind
                && p.as_deref().map(|p| name.contains(p)).unwrap_or(true)
                && a.map(|a| a == current_io_activity()).unwrap_or(true)
        });
        if !hit {
            return Ok(());
        }
        if self.armed.load(Ordering::SeqCst) {
            let c = self.countdown.load(Ordering::SeqCst);
            if c > 0 {
                self.countdown.store(c - 1, Ordering::SeqCst);
                return Ok(());
            }
        }
        self.injected.fetch_add(1, Ordering::SeqCst);
        let errno = if kind == FaultKind::WriteNoSpace {
            libc::ENOSPC
        } else {
            libc::EIO
        };
        Err(Error::io(name, std::io::Error::from_raw_os_error(errno)))
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    name: String,
    ctl: Arc<Ctl>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.ctl.check(FaultKind::WriteEio, &self.name)?;
        self.ctl.check(FaultKind::WriteNoSpace, &self.name)?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.ctl.check(FaultKind::WriteEio, &self.name)?;
        self.ctl.check(FaultKind::WriteNoSpace, &self.name)?;
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.ctl.check(FaultKind::SyncEio, &self.name)?;
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn invalidate_cache(&mut self) -> Result<()> {
        self.inner.invalidate_cache()
    }
    fn keep_zeros_ahead(&mut self) {
        self.inner.keep_zeros_ahead()
    }
    fn map_appends(&mut self) {
        self.inner.map_appends()
    }
    fn use_fsync(&mut self) {
        self.inner.use_fsync()
    }
}

struct FaultRandom {
    inner: Arc<dyn RandomAccessFile>,
    name: String,
    ctl: Arc<Ctl>,
}

impl RandomAccessFile for FaultRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.ctl.check(FaultKind::ReadEio, &self.name)?;
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl ForwardingFs for FaultFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let name = name_of(path);
        self.ctl.check(FaultKind::CreateEio, &name)?;
        let inner = self.inner.new_writable(path)?;
        Ok(Box::new(FaultWritable {
            inner,
            name,
            ctl: self.ctl.clone(),
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let name = name_of(path);
        let inner = self.inner.open_random(path)?;
        Ok(Arc::new(FaultRandom {
            inner,
            name,
            ctl: self.ctl.clone(),
        }))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.ctl.check(FaultKind::ReadEio, &name_of(path))?;
        self.inner.read_all(path)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.ctl.check(FaultKind::SyncEio, &name_of(path))?;
        self.inner.sync_file(path)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.ctl.check(FaultKind::SyncEio, &name_of(dir))?;
        self.inner.sync_dir(dir)
    }
}
