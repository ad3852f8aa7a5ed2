//! The real file system (std + libc).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::file_system::{lock_held, name_of, FileLock, FileSystem, RandomAccessFile, WritableFile};
use super::log_order;
use crate::error::{Error, Result};

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct PosixFs;

const WRITE_BUFFER: usize = 64 * 1024;

/// With [`WritableFile::keep_zeros_ahead`]: how far past its data a synced log keeps zeros
/// written. A sync that finds less than half of it left writes the next stretch first, so one
/// sync in many persists a new file size and the others write data only.
const ZEROS_AHEAD: u64 = 1 << 20;
/// The zeros end on a multiple of the log block size (32 KiB): a crashed log then ends in whole
/// zero blocks, never in a stub shorter than a record header, which the strictest recovery mode
/// (and RocksDB's reader in it) would take for a torn header.
const ZEROS_ALIGN: u64 = 32 * 1024;
static ZEROS: [u8; WRITE_BUFFER] = [0; WRITE_BUFFER];

/// Where a [`PosixWritable`] puts its bytes: a `File`, or a test double that runs out of space.
trait PositionalSink: Send {
    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()>;
    fn sync_data(&self) -> std::io::Result<()>;
    /// `fsync`: the data and every metadata (`use_fsync`).
    fn sync_all(&self) -> std::io::Result<()> {
        self.sync_data()
    }
    /// Cut the file to `len` bytes (the zeros kept ahead of a log's data, at close).
    fn set_len(&self, _len: u64) -> std::io::Result<()> {
        Ok(())
    }
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file (a hint; errors ignored).
    fn drop_cached(&self) {}
    /// The descriptor to map for appends, if this sink is a real file.
    fn map_fd(&self) -> Option<std::os::unix::io::RawFd> {
        None
    }
}

impl PositionalSink for File {
    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        FileExt::write_all_at(self, data, offset)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        File::sync_data(self)
    }
    fn sync_all(&self) -> std::io::Result<()> {
        File::sync_all(self)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        File::set_len(self, len)
    }
    fn drop_cached(&self) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: the descriptor is owned by `self` and open for the whole call; fadvise only
        // advises the kernel and touches no memory of ours.
        unsafe {
            libc::posix_fadvise(self.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    fn map_fd(&self) -> Option<std::os::unix::io::RawFd> {
        Some(self.as_raw_fd())
    }
}

/// A shared, writable mapping of the file's bytes `off..off + len` (all of them below
/// `zeroed_to`: written zeros or data, never past the file's end).
struct Window {
    base: *mut u8,
    off: u64,
    len: usize,
}

impl Window {
    /// Map `off..off + len` of `fd` (`off` page-aligned), pages faulted in for writing where
    /// the kernel can (`MADV_POPULATE_WRITE`, a hint: later writes fault instead).
    fn map(fd: std::os::unix::io::RawFd, off: u64, len: usize) -> std::io::Result<Window> {
        // SAFETY: a fresh shared mapping of an open descriptor, checked against MAP_FAILED;
        // nothing else refers to the region.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                off as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // SAFETY: advice over the mapping just made.
            let r = unsafe { libc::madvise(p, len, libc::MADV_POPULATE_WRITE) };
            let e = std::io::Error::last_os_error();
            if r != 0 && e.raw_os_error() != Some(libc::EINVAL) {
                // The pages could not be made writable (a copy-on-write file system out of
                // space, out of memory): a store into them would be a SIGBUS, so no mapping.
                // EINVAL is a kernel before 5.14 without the advice: pages fault on first
                // store, over zeros already allocated by `pwrite`.
                // SAFETY: unmapping exactly the region just mapped.
                unsafe { libc::munmap(p, len) };
                return Err(e);
            }
        }
        Ok(Window {
            base: p as *mut u8,
            off,
            len,
        })
    }

    fn covers(&self, from: u64, to: u64) -> bool {
        from >= self.off && to <= self.off + self.len as u64
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region mapped in `map`, once.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// The system's page size (a mapping's file offset must be a multiple of it).
fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf only reads a system constant.
    *PAGE.get_or_init(|| match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        n if n > 0 => n as u64,
        _ => 4096,
    })
}

/// A file written through a user-space buffer.
///
/// Fail-stop: after any failed write or sync the file is dead. Its buffer is dropped and every
/// later call (and the flush at drop) writes nothing, so bytes of a write that was reported as
/// failed (e.g. the rest of a WAL record after a short write on a full disk) can never reach
/// the file later and be recovered as if the write had succeeded.
struct PosixWritable<S: PositionalSink = File> {
    file: S,
    name: String,
    buf: Vec<u8>,
    size: u64,
    /// Bytes handed to the OS so far (the offset of the next `pwrite`).
    written: u64,
    /// A write or sync failed: nothing more is written.
    failed: bool,
    /// `keep_zeros_ahead` was asked for.
    zeros_ahead: bool,
    /// The file was synced before (a file synced once, e.g. a table at its end, gets no zeros).
    synced: bool,
    /// Zeros are written up to this offset (the file's size in the OS when above `written`).
    zeroed_to: u64,
    /// Appends are copied into a shared mapping of zeros written ahead (a WAL on a real file).
    mapped: bool,
    window: Option<Window>,
    /// `use_fsync` was asked for: syncs are `fsync`, not `fdatasync`.
    full_sync: bool,
}

// SAFETY: the window is a mapping owned by this value alone (no other pointer into it escapes),
// so moving the value to another thread moves sole access to it.
unsafe impl<S: PositionalSink> Send for PosixWritable<S> {}

impl<S: PositionalSink> PosixWritable<S> {
    fn new(file: S, name: String) -> Self {
        PosixWritable {
            file,
            name,
            buf: Vec::with_capacity(WRITE_BUFFER),
            size: 0,
            written: 0,
            failed: false,
            zeros_ahead: false,
            synced: false,
            zeroed_to: 0,
            mapped: false,
            window: None,
            full_sync: false,
        }
    }

    /// Write zeros from where they (or the data) end up to `end`.
    fn write_zeros(&mut self, end: u64) -> std::io::Result<()> {
        let mut at = self.zeroed_to.max(self.written);
        while at < end {
            let n = (end - at).min(ZEROS.len() as u64);
            self.file.write_all_at(&ZEROS[..n as usize], at)?;
            at += n;
        }
        self.zeroed_to = self.zeroed_to.max(end);
        Ok(())
    }

    /// Hand `data` to the OS at `written`: copied into the mapping when appends are mapped
    /// (zeros are written ahead first, so the mapping never reaches past the file's end and a
    /// full disk fails here, before any byte is copied), else `pwrite`.
    fn put(&mut self, data: &[u8]) -> std::io::Result<()> {
        let end = self.written + data.len() as u64;
        if self.mapped {
            if end > self.zeroed_to {
                self.write_zeros(zeros_end(end))?;
            }
            if !self.window.as_ref().is_some_and(|w| w.covers(self.written, end)) {
                self.window = None;
                let off = self.written / page_size() * page_size();
                let len = (self.zeroed_to - off) as usize;
                match self.file.map_fd().map(|fd| Window::map(fd, off, len)) {
                    Some(Ok(w)) => self.window = Some(w),
                    // No mappings here (a file system without them): plain writes from now on;
                    // the zeros are cut off at close as usual.
                    _ => self.mapped = false,
                }
            }
            if let Some(w) = &self.window {
                // SAFETY: the window covers written..end (checked above) and is ours alone.
                let dst = unsafe { w.base.add((self.written - w.off) as usize) };
                if let Some(r) = log_order::interrupt_now() {
                    // SAFETY: as below (a crash test's simulated crash inside the copy).
                    unsafe { log_order::copy_interrupted(dst, self.written, data, r) };
                    log_order::die(&self.name);
                }
                // The flush's first header last: a crash leaves all of it or a torn tail.
                // SAFETY: `dst` is valid for data.len() bytes (the window covers them).
                unsafe { log_order::copy_head_last(dst, self.written, data) };
                self.written = end;
                return Ok(());
            }
        }
        if self.zeros_ahead {
            self.log_pwrite(data)?;
        } else {
            self.file.write_all_at(data, self.written)?;
        }
        self.written = end;
        Ok(())
    }

    /// `pwrite` of a log's flush. A crash can cut a `write` short at a page boundary; onto zeros
    /// written ahead, the part written would then stand in front of zeros like a half-copied
    /// record, so a flush over more than one page of such zeros is written head last, as a
    /// mapped copy is (`log_order`).
    fn log_pwrite(&mut self, data: &[u8]) -> std::io::Result<()> {
        let (at, end) = (self.written, self.written + data.len() as u64);
        let head = log_order::head_range(at, data)
            .filter(|_| end <= self.zeroed_to && at / page_size() != (end - 1) / page_size());
        if let Some(r) = log_order::interrupt_now() {
            // A crash test's simulated crash inside the write: a part of it, in file order, up
            // to a page boundary.
            let from = head.as_ref().map_or(0, |h| h.end);
            let start = at + from as u64;
            let n = end - start;
            let cut = if r % 3 == 0 || n == 0 {
                end
            } else {
                ((start + (r >> 8) % n + 1) / page_size() * page_size()).max(start)
            };
            self.file
                .write_all_at(&data[from..(cut - at) as usize], at + from as u64)?;
            log_order::die(&self.name);
        }
        match head {
            Some(h) => {
                self.file.write_all_at(&data[h.end..], at + h.end as u64)?;
                self.file.write_all_at(&data[..h.end], at)
            }
            None => self.file.write_all_at(data, at),
        }
    }

    fn check_alive(&self) -> Result<()> {
        if self.failed {
            return Err(Error::io(
                &self.name,
                std::io::Error::other("an earlier write or sync of this file failed; nothing more is written to it"),
            ));
        }
        Ok(())
    }

    /// Run a write or sync; on failure the file becomes dead (see the type's comment).
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Self) -> std::io::Result<T>) -> Result<T> {
        f(self).map_err(|e| {
            self.failed = true;
            self.buf = Vec::new();
            Error::io(&self.name, e)
        })
    }
}

impl<S: PositionalSink> WritableFile for PosixWritable<S> {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.check_alive()?;
        self.size += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.flush()?;
            if data.len() >= WRITE_BUFFER {
                return self.guarded(|w| w.put(data));
            }
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.check_alive()?;
        if !self.buf.is_empty() {
            // Taken out while `put` borrows the file (a failure leaves an empty buffer, as
            // `guarded` wants); kept for its capacity otherwise.
            let mut buf = std::mem::take(&mut self.buf);
            self.guarded(|w| w.put(&buf))?;
            buf.clear();
            self.buf = buf;
        }
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        if self.mapped && !self.zeros_ahead && self.zeroed_to > self.written {
            // A mapped file that is not a log (a table under `allow_mmap_writes`): its readers
            // find its end by its size, so the zeros past the data are cut off before the sync
            // makes the size durable (later appends write zeros ahead again).
            self.window = None;
            let len = self.written;
            self.guarded(|w| w.file.set_len(len))?;
            self.zeroed_to = len;
        }
        if self.synced && self.mapped {
            // Synced again: a log under synced writes. There each sync's write-back of a page
            // mapped writable costs more than the `pwrite` saves, so the file goes back to
            // `pwrite` for good (docs/architecture.md, "Mapped WAL appends").
            self.mapped = false;
            self.window = None;
        }
        if self.zeros_ahead && self.synced && self.zeroed_to < self.written + ZEROS_AHEAD / 2 {
            // Zeros past the data, made durable by this sync: the next syncs overwrite them in
            // place and find the file's size already on disk.
            let end = zeros_end(self.written);
            self.guarded(|w| w.write_zeros(end))?;
        }
        self.synced = true;
        if self.full_sync {
            self.guarded(|w| w.file.sync_all())
        } else {
            self.guarded(|w| w.file.sync_data())
        }
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn invalidate_cache(&mut self) -> Result<()> {
        self.check_alive()?;
        self.file.drop_cached();
        Ok(())
    }
    fn keep_zeros_ahead(&mut self) {
        self.zeros_ahead = true;
    }
    fn use_fsync(&mut self) {
        self.full_sync = true;
    }
    fn map_appends(&mut self) {
        // Only before the first byte: the zeros then start at offset 0. Not on a copy-on-write
        // file system: a store into a page written back since must allocate anew, which a full
        // disk fails as a SIGBUS where a `pwrite` returns ENOSPC.
        self.mapped =
            self.written == 0 && self.buf.is_empty() && self.file.map_fd().is_some_and(|fd| !copy_on_write(fd));
    }
}

/// Whether the file system of `fd` allocates new blocks for every overwrite (btrfs, ZFS,
/// bcachefs): there a page of a shared mapping can fault at any store after it was written
/// back, and a full disk turns that fault into a SIGBUS, so such files are never mapped.
fn copy_on_write(fd: std::os::unix::io::RawFd) -> bool {
    #[cfg(target_os = "linux")]
    {
        const BTRFS: i64 = 0x9123_683E;
        const ZFS: i64 = 0x2FC1_2FC1;
        const BCACHEFS: i64 = 0xCA45_1A4E;
        // SAFETY: statfs is plain data; fstatfs fills it for an open descriptor.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatfs(fd, &mut st) } != 0 {
            return false; // unknown: the mapping, if it fails, falls back to `pwrite`
        }
        #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
        let t = st.f_type as i64;
        matches!(t, BTRFS | ZFS | BCACHEFS)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = fd;
        false
    }
}

/// Where the zeros kept ahead of a log whose data ends at `written` end.
fn zeros_end(written: u64) -> u64 {
    (written + ZEROS_AHEAD).next_multiple_of(ZEROS_ALIGN)
}

impl<S: PositionalSink> Drop for PosixWritable<S> {
    fn drop(&mut self) {
        if !self.failed {
            let _ = self.flush();
            self.window = None;
            if self.zeroed_to > self.written && !self.failed {
                // A closed log ends at its data.
                let _ = self.file.set_len(self.written);
            }
        }
    }
}

struct PosixRandom {
    file: File,
    name: String,
    size: u64,
}

impl RandomAccessFile for PosixRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                Error::corruption(
                    &self.name,
                    Some(offset),
                    format!("truncated read of {} bytes", buf.len()),
                )
            } else {
                Error::io(&self.name, e)
            }
        })
    }
    fn size(&self) -> u64 {
        self.size
    }
    /// Read into fresh, uninitialized capacity (no zero fill: block reads are hot).
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut v: Vec<u8> = Vec::with_capacity(len);
        let mut done = 0usize;
        while done < len {
            // SAFETY: the destination is the vector's spare capacity (`len - done` bytes
            // starting `done` bytes in), which pread only writes to; the descriptor is open.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    v.as_mut_ptr().add(done) as *mut libc::c_void,
                    len - done,
                    (offset + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::io(&self.name, e));
            }
            if n == 0 {
                return Err(Error::corruption(
                    &self.name,
                    Some(offset),
                    format!("truncated read of {len} bytes"),
                ));
            }
            done += n as usize;
        }
        // SAFETY: pread initialized all `len` bytes above.
        unsafe { v.set_len(len) };
        Ok(v)
    }
}

/// A read-only shared mapping of a whole file (RocksDB's `allow_mmap_reads`).
///
/// Table files are immutable once written; like RocksDB, Shale assumes nobody truncates or
/// rewrites a file while it is mapped.
struct PosixMmap {
    ptr: *const u8,
    len: usize,
    name: String,
}

// SAFETY: the mapping is read-only and owned by this value until drop; sharing immutable bytes
// across threads is sound.
unsafe impl Send for PosixMmap {}
// SAFETY: as above, no interior mutability.
unsafe impl Sync for PosixMmap {}

impl PosixMmap {
    fn open(path: &Path) -> Result<PosixMmap> {
        let file = File::open(path).map_err(|e| Error::io(name_of(path), e))?;
        let size = file.metadata().map_err(|e| Error::io(name_of(path), e))?.len();
        let len = usize::try_from(size)
            .map_err(|_| Error::NotSupported(format!("{}: file too large to map ({size} bytes)", name_of(path))))?;
        if len == 0 {
            // mmap rejects empty mappings; an empty file is an empty slice.
            return Ok(PosixMmap {
                ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
                len: 0,
                name: name_of(path),
            });
        }
        // SAFETY: a fresh read-only shared mapping of an open descriptor; the result is checked
        // against MAP_FAILED before use. The descriptor may be closed after mmap returns.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(name_of(path), std::io::Error::last_os_error()));
        }
        Ok(PosixMmap {
            ptr: p as *const u8,
            len,
            name: name_of(path),
        })
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: ptr/len describe a live read-only mapping (or a dangling pointer with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for PosixMmap {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping exactly the region mapped in `open`, once.
            unsafe {
                libc::munmap(self.ptr as *mut libc::c_void, self.len);
            }
        }
    }
}

impl RandomAccessFile for PosixMmap {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let b = self.bytes();
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= b.len() => {
                buf.copy_from_slice(&b[start..end]);
                Ok(())
            }
            _ => Err(Error::corruption(
                &self.name,
                Some(offset),
                format!("truncated read of {} bytes", buf.len()),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.len as u64
    }
    fn mmap_bytes(&self) -> Option<&[u8]> {
        Some(self.bytes())
    }
}

fn locked_set() -> &'static Mutex<HashSet<PathBuf>> {
    static SET: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

struct PosixLock {
    _file: File,
    path: PathBuf,
}
impl FileLock for PosixLock {}
impl Drop for PosixLock {
    fn drop(&mut self) {
        // closing the file releases the fcntl lock
        if let Ok(mut s) = locked_set().lock() {
            s.remove(&self.path);
        }
    }
}

/// Create (or truncate) `path` for a [`PosixWritable`]: readable too, as appends through a
/// shared mapping need both.
fn create_for_writing(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
}

impl FileSystem for PosixFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        std::fs::create_dir_all(path).map_err(|e| Error::io(name_of(path), e))
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = create_for_writing(path).map_err(|e| Error::io(name_of(path), e))?;
        Ok(Box::new(PosixWritable::new(file, name_of(path))))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io(name_of(path), e))?;
        let size = file.metadata().map_err(|e| Error::io(name_of(path), e))?.len();
        Ok(Arc::new(PosixRandom {
            file,
            name: name_of(path),
            size,
        }))
    }
    fn open_random_mmap(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(PosixMmap::open(path)?))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| Error::io(name_of(path), e))
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io(name_of(from), e))
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io(name_of(path), e))
    }
    fn remove_dir(&self, path: &Path) -> Result<()> {
        std::fs::remove_dir(path).map_err(|e| Error::io(name_of(path), e))
    }
    /// A hard link; a copy when linking fails (another file system, or links not supported).
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        match std::fs::hard_link(from, to) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::io(name_of(to), e)),
            Err(_) => super::file_system::copy_file(self, from, to, None),
        }
    }
    /// `fdatasync` through a read-only descriptor (Linux syncs the file, not the descriptor).
    fn sync_file(&self, path: &Path) -> Result<()> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(name_of(path), e))?;
        f.sync_data().map_err(|e| Error::io(name_of(path), e))
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let rd = std::fs::read_dir(dir).map_err(|e| Error::io(name_of(dir), e))?;
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| Error::io(name_of(dir), e))?;
            out.push(ent.file_name().to_string_lossy().into_owned());
        }
        Ok(out)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path).map_err(|e| Error::io(name_of(path), e))?.len())
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let f = File::open(dir).map_err(|e| Error::io(name_of(dir), e))?;
        f.sync_all().map_err(|e| Error::io(name_of(dir), e))
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let canon = path
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .map(|p| p.join("LOCK"))
            .unwrap_or_else(|| path.to_path_buf());
        {
            let mut set = locked_set()
                .lock()
                .map_err(|_| Error::Busy("lock table poisoned".into()))?;
            if !set.insert(canon.clone()) {
                return Err(lock_held(
                    path,
                    std::io::ErrorKind::WouldBlock,
                    "lock held by this process (the database is open)".into(),
                ));
            }
        }
        let release = |canon: &PathBuf| {
            if let Ok(mut s) = locked_set().lock() {
                s.remove(canon);
            }
        };
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
        {
            Ok(f) => f,
            Err(e) => {
                release(&canon);
                return Err(Error::io(name_of(path), e));
            }
        };
        // SAFETY: flock struct is plain data; fcntl is called on a valid open descriptor.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = 0;
        fl.l_len = 0;
        let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &fl) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            release(&canon);
            return Err(lock_held(
                path,
                e.kind(),
                format!("while locking: {e} (is another process using this database?)"),
            ));
        }
        Ok(Box::new(PosixLock {
            _file: file,
            path: canon,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk with room for `room` more bytes: a write that does not fit writes what fits and
    /// fails with ENOSPC (a short write), as a full file system does.
    #[derive(Clone, Default)]
    struct SmallDisk {
        bytes: Arc<Mutex<Vec<u8>>>,
        room: Arc<Mutex<usize>>,
    }

    impl PositionalSink for SmallDisk {
        fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
            let mut b = self.bytes.lock().unwrap();
            let mut room = self.room.lock().unwrap();
            assert_eq!(offset as usize, b.len(), "writes are appends here");
            let n = data.len().min(*room);
            b.extend_from_slice(&data[..n]);
            *room -= n;
            if n < data.len() {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            Ok(())
        }
        fn sync_data(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_short_write_is_never_completed_later() {
        let disk = SmallDisk::default();
        *disk.room.lock().unwrap() = 100;
        let mut f = PosixWritable::new(disk.clone(), "000007.log".into());
        f.append(&[1u8; 60]).unwrap();
        f.flush().unwrap();
        // The next record does not fit: 40 of its 80 bytes reach the disk, the write fails.
        f.append(&[2u8; 80]).unwrap();
        let e = f.flush().unwrap_err();
        assert!(e.is_no_space(), "{e}");
        // Space comes back (another process deleted files); the dead file must stay as it is.
        *disk.room.lock().unwrap() = 1 << 20;
        assert!(f.append(&[3u8; 10]).is_err(), "append after a failed write");
        assert!(f.flush().is_err(), "flush after a failed write");
        assert!(f.sync().is_err(), "sync after a failed write");
        drop(f);
        let b = disk.bytes.lock().unwrap();
        assert_eq!(b.len(), 100, "only the bytes written before the failure");
        assert!(b[..60].iter().all(|&x| x == 1) && b[60..].iter().all(|&x| x == 2));
    }

    #[test]
    fn a_synced_log_keeps_zeros_ahead_and_ends_at_its_data_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000009.log");
        let len = || std::fs::metadata(&path).unwrap().len();
        let mut f = PosixFs.new_writable(&path).unwrap();
        f.keep_zeros_ahead();
        f.append(&[7u8; 100]).unwrap();
        f.sync().unwrap();
        assert_eq!(len(), 100, "a file synced once gets no zeros");
        f.append(&[8u8; 50]).unwrap();
        f.sync().unwrap();
        assert_eq!(len(), zeros_end(150), "zeros written ahead of the data");
        assert_eq!(len() % ZEROS_ALIGN, 0, "whole log blocks of zeros");
        assert!(len() >= 150 + ZEROS_AHEAD);
        // Later syncs write in place, below the zeros' end, until half of them is used.
        f.append(&[9u8; 1000]).unwrap();
        f.sync().unwrap();
        assert_eq!(len(), zeros_end(150));
        let big = vec![5u8; (ZEROS_AHEAD / 2 + ZEROS_ALIGN) as usize];
        let end = 1150 + big.len() as u64;
        f.append(&big).unwrap();
        f.sync().unwrap();
        assert_eq!(len(), zeros_end(end), "past half of the zeros: the next stretch");
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk[..100].iter().all(|&b| b == 7) && on_disk[100..150].iter().all(|&b| b == 8));
        assert!(on_disk[150..1150].iter().all(|&b| b == 9));
        assert!(on_disk[1150 + big.len()..].iter().all(|&b| b == 0));
        assert_eq!(f.size(), end);
        drop(f);
        assert_eq!(len(), end, "closed: cut back to the data");

        // Without the hint (a table, a MANIFEST) no zeros are ever written.
        let mut g = PosixFs.new_writable(&path).unwrap();
        for _ in 0..3 {
            g.append(&[1u8; 10]).unwrap();
            g.sync().unwrap();
        }
        assert_eq!(len(), 30);
    }

    /// A file in memory written at any offset, with room for `room` more bytes (a write that
    /// would grow it past that writes nothing and fails with ENOSPC), whose descriptor cannot
    /// be mapped.
    #[derive(Clone, Default)]
    struct Unmappable {
        bytes: Arc<Mutex<Vec<u8>>>,
        room: Arc<Mutex<usize>>,
    }

    impl PositionalSink for Unmappable {
        fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
            let mut b = self.bytes.lock().unwrap();
            let mut room = self.room.lock().unwrap();
            let end = offset as usize + data.len();
            let grow = end.saturating_sub(b.len());
            if grow > *room {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            *room -= grow;
            if b.len() < end {
                b.resize(end, 0);
            }
            b[offset as usize..end].copy_from_slice(data);
            Ok(())
        }
        fn sync_data(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn set_len(&self, len: u64) -> std::io::Result<()> {
            self.bytes.lock().unwrap().truncate(len as usize);
            Ok(())
        }
        fn map_fd(&self) -> Option<std::os::unix::io::RawFd> {
            Some(-1)
        }
    }

    /// A new file at `path` written by a `PosixWritable` (whose fields the tests look at).
    fn real_file(path: &Path) -> PosixWritable {
        PosixWritable::new(create_for_writing(path).unwrap(), name_of(path))
    }

    /// Records of 1..300 bytes, each a different byte value (never 0).
    fn records(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| vec![(i % 251 + 1) as u8; i % 300 + 1]).collect()
    }

    #[test]
    fn mapped_appends_are_in_the_file_after_each_flush_and_end_at_the_data_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000011.log");
        let mut f = real_file(&path);
        f.keep_zeros_ahead();
        f.map_appends();
        let mut want = Vec::new();
        let mut windows = HashSet::new();
        // ~5.2 MiB: the mapping moves along the file several times; one append bigger than the
        // user-space buffer; one sync (the mapping stays), later two more (it goes).
        for (i, r) in records(35_000).iter().enumerate() {
            f.append(r).unwrap();
            want.extend_from_slice(r);
            if i == 20_000 {
                let big = vec![0xEEu8; 3 * WRITE_BUFFER];
                f.append(&big).unwrap();
                want.extend_from_slice(&big);
            }
            f.flush().unwrap();
            if i < 30_000 {
                assert!(f.mapped, "record {i}");
                windows.insert(f.window.as_ref().expect("a mapping").off);
            }
            if i == 10_000 {
                f.sync().unwrap();
                assert!(f.mapped, "one sync keeps the mapping");
            }
            if i == 30_000 {
                f.sync().unwrap();
                f.sync().unwrap();
                assert!(!f.mapped && f.window.is_none(), "a log synced again and again writes");
            }
            if i % 7_919 == 0 || i == 30_001 {
                // Another reader of the file (recovery after a process crash) sees every
                // flushed byte, then zeros to a whole log block.
                let on_disk = std::fs::read(&path).unwrap();
                assert_eq!(on_disk[..want.len()], want[..], "after record {i}");
                assert!(on_disk[want.len()..].iter().all(|&b| b == 0));
                assert!(on_disk.len() > want.len(), "zeros after the data");
                assert_eq!(on_disk.len() as u64 % ZEROS_ALIGN, 0);
            }
        }
        assert!(windows.len() >= 3, "the mapping moved along the file: {windows:?}");
        assert_eq!(f.size(), want.len() as u64);
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), want, "closed: the data and nothing else");
    }

    #[test]
    fn mapped_appends_fall_back_to_writes_where_the_file_cannot_be_mapped() {
        let disk = Unmappable::default();
        *disk.room.lock().unwrap() = 64 << 20;
        let mut f = PosixWritable::new(disk.clone(), "000012.log".into());
        f.map_appends();
        assert!(f.mapped);
        let mut want = Vec::new();
        for r in records(2_000) {
            f.append(&r).unwrap();
            f.flush().unwrap();
            want.extend_from_slice(&r);
        }
        assert!(!f.mapped, "no mapping: plain writes");
        {
            let b = disk.bytes.lock().unwrap();
            assert_eq!(b[..want.len()], want[..]);
            assert!(
                b[want.len()..].iter().all(|&x| x == 0),
                "the zeros written before the mapping failed"
            );
        }
        drop(f);
        assert_eq!(*disk.bytes.lock().unwrap(), want);
    }

    #[test]
    fn a_full_disk_fails_a_mapped_append_before_any_byte_of_it_is_copied() {
        let disk = Unmappable::default();
        *disk.room.lock().unwrap() = 1000;
        let mut f = PosixWritable::new(disk.clone(), "000013.log".into());
        f.map_appends();
        f.append(&[7u8; 100]).unwrap();
        let e = f.flush().unwrap_err();
        assert!(e.is_no_space(), "{e}");
        *disk.room.lock().unwrap() = 64 << 20;
        assert!(
            f.append(&[8u8; 10]).is_err() && f.flush().is_err(),
            "dead after the failure"
        );
        drop(f);
        assert!(
            disk.bytes.lock().unwrap().iter().all(|&b| b == 0),
            "no byte of the failed write"
        );
    }

    #[test]
    fn a_mapped_file_that_is_not_a_log_is_exactly_its_data_at_each_sync() {
        // A table under `allow_mmap_writes`: mapped, no zeros kept ahead; a sync must leave the
        // file's size at its data (readers find the footer at the end).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000015.sst");
        let mut f = real_file(&path);
        f.map_appends();
        let mut want = Vec::new();
        for round in 0..3u8 {
            for r in records(300) {
                f.append(&r).unwrap();
                want.extend_from_slice(&r);
            }
            f.flush().unwrap();
            if round == 0 {
                assert!(f.window.is_some(), "the bytes went through the mapping");
                assert!(
                    std::fs::metadata(&path).unwrap().len() > want.len() as u64,
                    "zeros ahead"
                );
            }
            // (synced more than once, the file goes back to `write` calls, as a log does)
            f.sync().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), want, "synced: the data and nothing else");
        }
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn mapped_appends_are_only_taken_up_by_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000014.log");
        let mut f = PosixFs.new_writable(&path).unwrap();
        f.append(b"abc").unwrap();
        f.map_appends();
        f.append(b"def").unwrap();
        f.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef", "written, no zeros");
    }

    #[test]
    fn a_failed_sync_stops_the_file() {
        struct BadSync;
        impl PositionalSink for BadSync {
            fn write_all_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
                Ok(())
            }
            fn sync_data(&self) -> std::io::Result<()> {
                Err(std::io::Error::from_raw_os_error(libc::EIO))
            }
        }
        let mut f = PosixWritable::new(BadSync, "MANIFEST-000001".into());
        f.append(b"abc").unwrap();
        assert!(f.sync().is_err());
        assert!(f.append(b"def").is_err(), "the file is dead after a failed sync");
    }

    /// `use_fsync` makes every sync an `fsync`; without it, `fdatasync`.
    #[test]
    fn use_fsync_syncs_with_fsync() {
        #[derive(Default)]
        struct Counting {
            data: std::sync::atomic::AtomicUsize,
            all: std::sync::atomic::AtomicUsize,
        }
        impl PositionalSink for Arc<Counting> {
            fn write_all_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
                Ok(())
            }
            fn sync_data(&self) -> std::io::Result<()> {
                self.data.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            fn sync_all(&self) -> std::io::Result<()> {
                self.all.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
        }
        for full in [false, true] {
            let c = Arc::new(Counting::default());
            let mut f = PosixWritable::new(c.clone(), "000007.log".into());
            if full {
                f.use_fsync();
            }
            for _ in 0..3 {
                f.append(b"abc").unwrap();
                f.sync().unwrap();
            }
            let (data, all) = (
                c.data.load(std::sync::atomic::Ordering::SeqCst),
                c.all.load(std::sync::atomic::Ordering::SeqCst),
            );
            assert_eq!((data, all), if full { (0, 3) } else { (3, 0) });
        }
    }

    #[test]
    fn mmap_open_maps_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let m = PosixFs.open_random_mmap(&p).unwrap();
        assert_eq!(m.mmap_bytes(), Some(&data[..]));
        assert_eq!(m.size(), 10_000);
        assert_eq!(m.read_at(9_990, 10).unwrap(), &data[9_990..]);
        assert!(m.read_at(9_995, 10).unwrap_err().is_corruption());
        // pread-based files do not claim a mapping
        assert!(PosixFs.open_random(&p).unwrap().mmap_bytes().is_none());
        // empty files map to an empty slice
        let e = dir.path().join("empty");
        std::fs::write(&e, b"").unwrap();
        let m = PosixFs.open_random_mmap(&e).unwrap();
        assert_eq!(m.mmap_bytes(), Some(&[][..]));
        assert!(PosixFs.open_random_mmap(&dir.path().join("missing")).is_err());
    }
}
