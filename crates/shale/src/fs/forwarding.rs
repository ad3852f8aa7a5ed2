//! [`ForwardingFs`]: a file-system wrapper that passes every operation it does not override to
//! the file system it wraps. Fault injection, kill points and test file systems implement it and
//! write only the operations they change.

use std::path::Path;
use std::sync::Arc;

use super::file_system::{FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::Result;

/// A wrapper around another file system. Every method forwards to [`inner`](Self::inner) unless
/// overridden; a type implementing `ForwardingFs` is a [`FileSystem`] (a blanket impl calls these
/// methods), so it implements only this trait.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use shale::fs::testing::MemFs;
/// use shale::fs::{FileSystem, ForwardingFs};
///
/// /// Refuses to remove files, passes everything else through.
/// struct NoRemove(Arc<dyn FileSystem>);
/// impl ForwardingFs for NoRemove {
///     fn inner(&self) -> &dyn FileSystem {
///         &*self.0
///     }
///     fn remove_file(&self, _path: &Path) -> shale::error::Result<()> {
///         Err(shale::Error::NotSupported("remove_file".into()))
///     }
/// }
/// let fs: Arc<dyn FileSystem> = Arc::new(NoRemove(Arc::new(MemFs::new())));
/// fs.create_dir_all(Path::new("/d")).unwrap();
/// assert!(fs.exists(Path::new("/d")));
/// ```
pub trait ForwardingFs: Send + Sync {
    /// The wrapped file system.
    fn inner(&self) -> &dyn FileSystem;

    /// Forwards to the wrapped [`FileSystem::create_dir_all`].
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.inner().create_dir_all(path)
    }
    /// Forwards to the wrapped [`FileSystem::new_writable`].
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner().new_writable(path)
    }
    /// Forwards to the wrapped [`FileSystem::open_random`].
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner().open_random(path)
    }
    /// Not forwarded: falls back to this wrapper's [`open_random`](Self::open_random) (as
    /// [`FileSystem::open_random_mmap`] does), so what a wrapper does to reads applies to
    /// mapped reads too.
    fn open_random_mmap(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// Forwards to the wrapped [`FileSystem::read_all`].
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        self.inner().read_all(path)
    }
    /// Forwards to the wrapped [`FileSystem::rename`].
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner().rename(from, to)
    }
    /// Forwards to the wrapped [`FileSystem::remove_file`].
    fn remove_file(&self, path: &Path) -> Result<()> {
        self.inner().remove_file(path)
    }
    /// Forwards to the wrapped [`FileSystem::remove_dir`].
    fn remove_dir(&self, path: &Path) -> Result<()> {
        self.inner().remove_dir(path)
    }
    /// Forwards to the wrapped [`FileSystem::list`].
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner().list(dir)
    }
    /// Forwards to the wrapped [`FileSystem::exists`].
    fn exists(&self, path: &Path) -> bool {
        self.inner().exists(path)
    }
    /// Forwards to the wrapped [`FileSystem::file_size`].
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner().file_size(path)
    }
    /// Forwards to the wrapped [`FileSystem::sync_dir`].
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner().sync_dir(dir)
    }
    /// Forwards to the wrapped [`FileSystem::lock`].
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner().lock(path)
    }
    /// Forwards to the wrapped [`FileSystem::link`].
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner().link(from, to)
    }
    /// Forwards to the wrapped [`FileSystem::sync_file`].
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.inner().sync_file(path)
    }
}

impl<T: ForwardingFs> FileSystem for T {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        ForwardingFs::create_dir_all(self, path)
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        ForwardingFs::new_writable(self, path)
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        ForwardingFs::open_random(self, path)
    }
    fn open_random_mmap(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        ForwardingFs::open_random_mmap(self, path)
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        ForwardingFs::read_all(self, path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        ForwardingFs::rename(self, from, to)
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        ForwardingFs::remove_file(self, path)
    }
    fn remove_dir(&self, path: &Path) -> Result<()> {
        ForwardingFs::remove_dir(self, path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        ForwardingFs::list(self, dir)
    }
    fn exists(&self, path: &Path) -> bool {
        ForwardingFs::exists(self, path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        ForwardingFs::file_size(self, path)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        ForwardingFs::sync_dir(self, dir)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        ForwardingFs::lock(self, path)
    }
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        ForwardingFs::link(self, from, to)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        ForwardingFs::sync_file(self, path)
    }
}
