//! [`with_fsync`]: the file system a DB writes through under RocksDB's `use_fsync`: every file
//! it creates is told to sync with `fsync` ([`WritableFile::use_fsync`]).

use std::path::Path;
use std::sync::Arc;

use super::file_system::{FileSystem, WritableFile};
use super::forwarding::ForwardingFs;
use crate::error::Result;

struct FsyncFs(Arc<dyn FileSystem>);

impl ForwardingFs for FsyncFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.0
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut f = self.0.new_writable(path)?;
        f.use_fsync();
        Ok(f)
    }
}

/// `fs`, or with `on`, `fs` with every file it creates syncing with `fsync`.
pub(crate) fn with_fsync(fs: Arc<dyn FileSystem>, on: bool) -> Arc<dyn FileSystem> {
    if on {
        Arc::new(FsyncFs(fs))
    } else {
        fs
    }
}
