//! A file system wrapper that calls a hook before every operation that changes durable state —
//! the durability boundaries of the engine, seen from the file system: WAL / table / MANIFEST
//! appends, flushes and syncs, file creation (CURRENT's temp file included), renames (CURRENT
//! installation), removals (obsolete files) and directory syncs. The hook may fail the operation
//! (simulated power cut: every later operation fails too) or end the process (kill point).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use shale::fs::FileSystem;
use shale::fs::ForwardingFs;
use shale::fs::WritableFile;

/// The kind of file a path names, as RocksDB's kill points group them.
pub fn file_kind(p: &Path) -> &'static str {
    let n = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if n.ends_with(".log") {
        "wal"
    } else if n.ends_with(".sst") {
        "sst"
    } else if n.starts_with("MANIFEST") {
        "manifest"
    } else if n.starts_with("CURRENT") || n.ends_with(".dbtmp") {
        "current"
    } else if n.starts_with("OPTIONS") {
        "options"
    } else {
        "other"
    }
}

pub type Hook = Arc<dyn Fn(&str, &Path) -> shale::error::Result<()> + Send + Sync>;

pub struct HookFs {
    pub inner: Arc<dyn FileSystem>,
    pub hook: Hook,
}

struct HookFile {
    inner: Box<dyn WritableFile>,
    path: std::path::PathBuf,
    hook: Hook,
}

impl WritableFile for HookFile {
    fn append(&mut self, data: &[u8]) -> shale::error::Result<()> {
        (self.hook)("append", &self.path)?;
        self.inner.append(data)
    }
    fn flush(&mut self) -> shale::error::Result<()> {
        (self.hook)("flush", &self.path)?;
        self.inner.flush()
    }
    fn sync(&mut self) -> shale::error::Result<()> {
        (self.hook)("sync", &self.path)?;
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn keep_zeros_ahead(&mut self) {
        self.inner.keep_zeros_ahead()
    }
    fn map_appends(&mut self) {
        self.inner.map_appends()
    }
}

impl ForwardingFs for HookFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn create_dir_all(&self, p: &Path) -> shale::error::Result<()> {
        (self.hook)("mkdir", p)?;
        self.inner.create_dir_all(p)
    }
    fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
        (self.hook)("create", p)?;
        let inner = self.inner.new_writable(p)?;
        Ok(Box::new(HookFile {
            inner,
            path: p.to_path_buf(),
            hook: self.hook.clone(),
        }))
    }
    fn rename(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        (self.hook)("rename", b)?;
        self.inner.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> shale::error::Result<()> {
        (self.hook)("remove", p)?;
        self.inner.remove_file(p)
    }
    fn remove_dir(&self, p: &Path) -> shale::error::Result<()> {
        (self.hook)("rmdir", p)?;
        self.inner.remove_dir(p)
    }
    fn sync_dir(&self, d: &Path) -> shale::error::Result<()> {
        (self.hook)("syncdir", d)?;
        self.inner.sync_dir(d)
    }
    fn sync_file(&self, p: &Path) -> shale::error::Result<()> {
        (self.hook)("sync", p)?;
        self.inner.sync_file(p)
    }
    fn link(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        (self.hook)("link", b)?;
        self.inner.link(a, b)
    }
}

/// Power cut after a budget of operations: the operation that exhausts it and every later one
/// fail with EIO, so nothing more reaches the file system; `point()` names where it happened.
#[derive(Default)]
pub struct Cutter {
    budget: AtomicI64,
    cut: AtomicBool,
    point: Mutex<Option<String>>,
}

impl Cutter {
    pub fn arm(&self, ops: i64) {
        *self.point.lock().unwrap() = None;
        self.cut.store(false, Ordering::Release);
        self.budget.store(ops, Ordering::Release);
    }
    pub fn is_cut(&self) -> bool {
        self.cut.load(Ordering::Acquire)
    }
    pub fn point(&self) -> Option<String> {
        self.point.lock().unwrap().clone()
    }
    pub fn hook(self: &Arc<Self>) -> Hook {
        let me = self.clone();
        Arc::new(move |op: &str, p: &Path| {
            if me.cut.load(Ordering::Acquire) || me.budget.fetch_sub(1, Ordering::AcqRel) <= 1 {
                if !me.cut.swap(true, Ordering::AcqRel) {
                    *me.point.lock().unwrap() = Some(format!("{}.{op}", file_kind(p)));
                }
                return Err(shale::Error::io(
                    p.display().to_string(),
                    std::io::Error::other("simulated power cut"),
                ));
            }
            Ok(())
        })
    }
}

/// Exit code of a process ended at a kill point.
pub const KILL_POINT_EXIT: i32 = 86;

/// Kill point: each hooked operation ends the process at once (`exit`, no destructors: nothing
/// buffered in the process reaches the files) with probability 1/`odds`, after printing
/// `kill point: <kind>.<op>`.
pub fn kill_hook(odds: u64, seed: u64, only: String) -> Hook {
    let state = std::sync::atomic::AtomicU64::new(seed | 1);
    Arc::new(move |op: &str, p: &Path| {
        if !only.is_empty() && (only.split_once('.') != Some((file_kind(p), op))) {
            return Ok(());
        }
        // xorshift, shared by all threads (races only perturb the sequence).
        let mut x = state.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.store(x, Ordering::Relaxed);
        if x.is_multiple_of(odds) {
            println!("kill point: {}.{op} {}", file_kind(p), p.display());
            std::process::exit(KILL_POINT_EXIT);
        }
        Ok(())
    })
}
