//! The environment a backup engine writes through (the `rocksdb` crate's `Env`): here, the file
//! system to use.

use std::sync::Arc;

use crate::error::Result;
use crate::fs::{FileSystem, PosixFs};

/// The file system a backup engine writes through (the `rocksdb` crate's `Env`).
#[derive(Clone)]
pub struct Env {
    pub(crate) fs: Arc<dyn FileSystem>,
}

impl Env {
    /// The default environment: the POSIX file system.
    pub fn new() -> Result<Env> {
        Ok(Env { fs: Arc::new(PosixFs) })
    }
    /// An environment writing through `fs` (tests: an in-memory or failing file system).
    pub fn with_file_system(fs: Arc<dyn FileSystem>) -> Env {
        Env { fs }
    }
}
