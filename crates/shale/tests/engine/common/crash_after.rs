//! A file system that counts the operations that change it and fails every one after a budget
//! (a crash at that point: what is left is what a killed process leaves).

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use shale::fs::FileSystem;
use shale::fs::ForwardingFs;
use shale::fs::WritableFile;

pub struct CrashAfter {
    pub inner: Arc<dyn FileSystem>,
    /// Operations left; at or below 0 every operation fails.
    pub budget: Arc<AtomicI64>,
}

struct CrashAfterFile {
    inner: Box<dyn WritableFile>,
    budget: Arc<AtomicI64>,
}

fn spend(b: &AtomicI64) -> shale::error::Result<()> {
    if b.fetch_sub(1, Ordering::SeqCst) <= 0 {
        return Err(shale::Error::io("crash", std::io::Error::other("crashed here")));
    }
    Ok(())
}

impl WritableFile for CrashAfterFile {
    fn append(&mut self, d: &[u8]) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.append(d)
    }
    fn flush(&mut self) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.flush()
    }
    fn sync(&mut self) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl ForwardingFs for CrashAfter {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn create_dir_all(&self, p: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.create_dir_all(p)
    }
    fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
        spend(&self.budget)?;
        Ok(Box::new(CrashAfterFile {
            inner: self.inner.new_writable(p)?,
            budget: self.budget.clone(),
        }))
    }
    fn rename(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.remove_file(p)
    }
    fn remove_dir(&self, p: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.remove_dir(p)
    }
    fn sync_dir(&self, d: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.sync_dir(d)
    }
    fn link(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        spend(&self.budget)?;
        self.inner.link(a, b)
    }
}
