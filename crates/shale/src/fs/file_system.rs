//! The traits every file system implements, and helpers over them.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};

/// A file opened for appending.
pub trait WritableFile: Send {
    /// Append bytes (may be buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Push buffered bytes to the operating system (survives a process crash).
    fn flush(&mut self) -> Result<()>;
    /// Flush and make the data durable (`fdatasync`; survives power loss).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn size(&self) -> u64;
    /// A hint: the bytes handed to the operating system so far will not be read back soon, so
    /// it may start writing them out and drop them from its page cache (RocksDB's
    /// `InvalidateCache`, `posix_fadvise(POSIX_FADV_DONTNEED)`). Changes no data; file systems
    /// without a page cache ignore it.
    fn invalidate_cache(&mut self) -> Result<()> {
        Ok(())
    }
    /// A hint for a log that is synced again and again (a WAL under synced writes): the file
    /// may keep zeros written ahead of its end, so that most syncs find the file's size already
    /// durable and write only data (`fdatasync` then skips the file system's journal). Readers
    /// of such a log take a zero header as the end of the data (RocksDB's log reader does
    /// too); the zeros are cut off when the file is closed. Changes no byte below `size()`;
    /// file systems without a use for it ignore it.
    fn keep_zeros_ahead(&mut self) {}
    /// A hint for a log written in many small appends (a WAL): the file may hand its bytes to
    /// the operating system by copying them into a shared mapping of zeros written ahead of its
    /// end instead of one `write` call per flush. What a flush guarantees does not change (the
    /// bytes are in the kernel's page cache and survive a process crash; `sync` makes them
    /// durable); readers take the zeros as the end, and they are cut off when the file is
    /// closed. File systems without mappings ignore it.
    fn map_appends(&mut self) {}
    /// Make [`sync`](Self::sync) use `fsync` (the data and every metadata of the file) instead
    /// of `fdatasync` (the data and the metadata needed to read it back): RocksDB's
    /// `use_fsync`. File systems with one kind of sync ignore it.
    fn use_fsync(&mut self) {}
}

/// A file read at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Read exactly `buf.len()` bytes at `offset`; a short read is an error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// File size at open time.
    fn size(&self) -> u64;
    /// The whole file as one slice when it is memory-mapped (or otherwise held in memory), for
    /// readers that decode in place (PlainTable). None: read with `read_exact_at`. The bytes
    /// must stay in place and unchanged for as long as the file object lives: pinned reads
    /// (`DB::get_pinned`) point into them while holding the file.
    fn mmap_bytes(&self) -> Option<&[u8]> {
        None
    }
    /// Read `len` bytes at `offset` into a new vector.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0u8; len];
        self.read_exact_at(offset, &mut v)?;
        Ok(v)
    }
}

/// A held lock on a file; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

impl std::fmt::Debug for dyn FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FileLock")
    }
}

/// The operations Shale needs from a file system.
pub trait FileSystem: Send + Sync {
    /// Create `path` and any missing parents; succeeds if it already exists.
    fn create_dir_all(&self, path: &Path) -> Result<()>;
    /// Create (or truncate) a file for writing.
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Open an existing file for reads at any offset (an error if it does not exist).
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Open a file for reading through a memory mapping (RocksDB's `allow_mmap_reads`): the
    /// result's [`RandomAccessFile::mmap_bytes`] returns the contents. File systems without
    /// mappings fall back to [`open_random`](Self::open_random).
    fn open_random_mmap(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_random(path)
    }
    /// Read a whole file.
    fn read_all(&self, path: &Path) -> Result<Vec<u8>>;
    /// Atomically replace `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Remove a file (an error if it does not exist).
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Remove an empty directory.
    fn remove_dir(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries of a directory.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// True if `path` names a file or directory.
    fn exists(&self, path: &Path) -> bool;
    /// The size of a file in bytes (an error if it does not exist).
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Make creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Take an exclusive lock on `path` (creating it); fails with an I/O error on `path` if it is
    /// held already (as RocksDB's `LockFile`: IOError, the message naming the `LOCK` file).
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Make `to` (which must not exist) name the contents of `from`: a hard link where the file
    /// system has them (checkpoints share table files this way). The default copies the file,
    /// synced; a file system that links but cannot here (another device) copies too.
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        copy_file(self, from, to, None)
    }
    /// Make the contents of an existing file durable (open it and `fsync`; RocksDB's
    /// `ReopenWritableFile` + `Sync`), as an ingest does with the files it hard-links: their
    /// writer may not have synced them. The default is NotSupported, which callers take to mean
    /// that nothing is needed (as RocksDB does): a file system that keeps the default
    /// [`link`](Self::link) gets synced copies anyway.
    fn sync_file(&self, path: &Path) -> Result<()> {
        Err(crate::error::Error::NotSupported(format!(
            "sync_file {}: not supported by this file system",
            name_of(path)
        )))
    }
}

/// Copy `from` to `to` (created or truncated), the first `len` bytes only when given, in 1 MiB
/// pieces, synced.
pub(crate) fn copy_file<F: FileSystem + ?Sized>(fs: &F, from: &Path, to: &Path, len: Option<u64>) -> Result<()> {
    let src = fs.open_random(from)?;
    let total = len.unwrap_or(src.size());
    if total > src.size() {
        return Err(crate::error::Error::invalid(format!(
            "{}: {} bytes asked for, the file holds {}",
            name_of(from),
            total,
            src.size()
        )));
    }
    let mut dst = fs.new_writable(to)?;
    let mut off = 0u64;
    while off < total {
        let n = (total - off).min(1 << 20) as usize;
        dst.append(&src.read_at(off, n)?)?;
        off += n as u64;
    }
    dst.sync()
}

pub(crate) fn name_of(p: &Path) -> String {
    p.display().to_string()
}

/// The error for lock file `path` already held (`why`: by whom): an I/O error on `path`, as
/// RocksDB's `LockFile` fails with `IO error: ...: <path>/LOCK: ...`.
pub(crate) fn lock_held(path: &Path, kind: std::io::ErrorKind, why: String) -> Error {
    Error::io(name_of(path), std::io::Error::new(kind, why))
}
