//! An in-memory file system that can simulate power loss.
//!
//! Each file keeps its bytes and how many of them were synced. Directory entries are tracked in
//! two maps: `live` (what the running process sees) and `durable` (what survives power loss, as of
//! the last `sync_dir` of the entry's directory). [`MemFs::power_loss`] cuts every file back to
//! its synced length and resets the namespace to the durable one.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::file_system::{lock_held, name_of, FileLock, FileSystem, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

#[derive(Default)]
struct FileData {
    data: Vec<u8>,
    synced: usize,
    /// Written through a shared mapping ([`WritableFile::map_appends`]).
    mapped: bool,
}

type Inode = Arc<Mutex<FileData>>;

#[derive(Default)]
struct State {
    live: BTreeMap<PathBuf, Inode>,
    durable: BTreeMap<PathBuf, Inode>,
    dirs: HashSet<PathBuf>,
    locks: HashSet<PathBuf>,
}

/// In-memory file system with power-loss simulation. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct MemFs {
    st: Arc<Mutex<State>>,
    /// Bytes that may still be written (see [`MemFs::set_write_budget`]); `None`: unlimited.
    budget: Arc<Mutex<Option<u64>>>,
    /// With [`MemFs::set_mapped_pages_out_of_order`]: the random state of the page model.
    pages_rng: Arc<Mutex<Option<u64>>>,
}

/// The page size of the mapped-writes model.
const PAGE: usize = 4096;

impl MemFs {
    /// An empty in-memory file system.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    /// Simulate a power cut: unsynced bytes and unsynced directory entries are lost.
    /// Locks are released (the process died). With [`MemFs::set_mapped_pages_out_of_order`],
    /// files written through a mapping keep a random part of their unsynced pages instead.
    pub fn power_loss(&self) {
        let mut st = self.st.lock();
        st.live = st.durable.clone();
        let mut rng = self.pages_rng.lock();
        for inode in st.live.values() {
            let mut f = inode.lock();
            match rng.as_mut() {
                Some(r) if f.mapped => mapped_power_loss(&mut f, r),
                _ => {
                    let s = f.synced;
                    f.data.truncate(s);
                }
            }
        }
        st.locks.clear();
    }

    /// Model what a power cut does to a file written through a shared mapping (a WAL with
    /// mapped appends): its dirty pages reach the disk in no particular order, so after
    /// [`MemFs::power_loss`] each 4 KiB page holding unsynced bytes is, at random, kept or read
    /// back as zeros, and the file keeps zeros past its data (as the zeros written ahead of a
    /// mapped WAL) or is cut at a random page boundary after its synced bytes. Synced bytes
    /// always stay. `None` turns the model off: unsynced bytes are all lost, as for other files.
    /// `seed` makes the losses reproducible.
    pub fn set_mapped_pages_out_of_order(&self, seed: Option<u64>) {
        *self.pages_rng.lock() = seed.map(|s| s | 1);
    }

    /// Simulate a disk that fills up: after `bytes` more bytes are appended (to any files), an
    /// append writes what still fits and fails with ENOSPC (a short write). `None` lifts the
    /// limit (space was freed).
    pub fn set_write_budget(&self, bytes: Option<u64>) {
        *self.budget.lock() = bytes;
    }

    /// Simulate a process crash: everything written reaches the OS, so nothing is lost, but
    /// locks are released.
    pub fn process_crash(&self) {
        self.st.lock().locks.clear();
    }

    /// Overwrite bytes of a file in place (test helper for corruption tests).
    pub fn corrupt(&self, path: &Path, offset: usize, bytes: &[u8]) -> bool {
        let st = self.st.lock();
        if let Some(inode) = st.live.get(path) {
            let mut f = inode.lock();
            if offset + bytes.len() <= f.data.len() {
                f.data[offset..offset + bytes.len()].copy_from_slice(bytes);
                return true;
            }
        }
        false
    }

    /// Truncate a file (test helper).
    pub fn truncate(&self, path: &Path, len: usize) -> bool {
        let st = self.st.lock();
        if let Some(inode) = st.live.get(path) {
            let mut f = inode.lock();
            f.data.truncate(len);
            f.synced = f.synced.min(len);
            return true;
        }
        false
    }

    fn not_found(path: &Path) -> Error {
        Error::io(name_of(path), std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

fn next_random(r: &mut u64) -> u64 {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    *r
}

/// [`MemFs::set_mapped_pages_out_of_order`]'s power cut of one file.
fn mapped_power_loss(f: &mut FileData, r: &mut u64) {
    let (synced, len) = (f.synced, f.data.len());
    if synced >= len {
        return;
    }
    // The length the disk holds: the data and zeros after it, or a page boundary after the
    // synced bytes.
    let new_len = if next_random(r).is_multiple_of(2) {
        len + PAGE * (next_random(r) % 16) as usize
    } else {
        let first = synced.next_multiple_of(PAGE).max(synced);
        let pages = (len.saturating_sub(first)) / PAGE + 1;
        (first + PAGE * (next_random(r) % pages as u64) as usize)
            .min(len)
            .max(synced)
    };
    f.data.resize(new_len, 0);
    let mut page = synced / PAGE * PAGE;
    while page < len.min(new_len) {
        if next_random(r).is_multiple_of(2) {
            let from = page.max(synced);
            let to = (page + PAGE).min(len).min(new_len);
            f.data[from..to].fill(0);
        }
        page += PAGE;
    }
}

struct MemWritable {
    inode: Inode,
    size: u64,
    budget: Arc<Mutex<Option<u64>>>,
    name: String,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut budget = self.budget.lock();
        let n = match budget.as_mut() {
            None => data.len(),
            Some(left) => {
                let n = data.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
                *left -= n as u64;
                n
            }
        };
        drop(budget);
        self.inode.lock().data.extend_from_slice(&data[..n]);
        self.size += n as u64;
        if n < data.len() {
            return Err(Error::io(&self.name, std::io::Error::from_raw_os_error(libc::ENOSPC)));
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        let mut f = self.inode.lock();
        f.synced = f.data.len();
        Ok(())
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn map_appends(&mut self) {
        let mut f = self.inode.lock();
        if f.data.is_empty() {
            f.mapped = true;
        }
    }
}

struct MemRandom {
    inode: Inode,
    name: String,
    size: u64,
}

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let f = self.inode.lock();
        let start = offset as usize;
        let end = start.checked_add(buf.len());
        match end {
            Some(end) if end <= f.data.len() => {
                buf.copy_from_slice(&f.data[start..end]);
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
        self.size
    }
}

/// A frozen copy of a file's bytes, the in-memory stand-in for a mapping (table files are
/// immutable once written).
struct MemMapped {
    data: Vec<u8>,
    name: String,
}

impl RandomAccessFile for MemMapped {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(buf.len()) {
            Some(end) if end <= self.data.len() => {
                buf.copy_from_slice(&self.data[start..end]);
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
        self.data.len() as u64
    }
    fn mmap_bytes(&self) -> Option<&[u8]> {
        Some(&self.data)
    }
}

struct MemLock {
    st: Arc<Mutex<State>>,
    path: PathBuf,
}
impl FileLock for MemLock {}
impl Drop for MemLock {
    fn drop(&mut self) {
        self.st.lock().locks.remove(&self.path);
    }
}

impl FileSystem for MemFs {
    fn create_dir_all(&self, path: &Path) -> Result<()> {
        let mut st = self.st.lock();
        let mut p = path.to_path_buf();
        loop {
            st.dirs.insert(p.clone());
            if !p.pop() {
                break;
            }
        }
        Ok(())
    }
    fn new_writable(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.st.lock();
        let parent = path.parent().map(|p| p.to_path_buf()).unwrap_or_default();
        if !parent.as_os_str().is_empty() && !st.dirs.contains(&parent) {
            return Err(Self::not_found(&parent));
        }
        let inode: Inode = Arc::new(Mutex::new(FileData::default()));
        st.live.insert(path.to_path_buf(), inode.clone());
        Ok(Box::new(MemWritable {
            inode,
            size: 0,
            budget: self.budget.clone(),
            name: name_of(path),
        }))
    }
    fn open_random(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let st = self.st.lock();
        let inode = st.live.get(path).ok_or_else(|| Self::not_found(path))?.clone();
        let size = inode.lock().data.len() as u64;
        Ok(Arc::new(MemRandom {
            inode,
            name: name_of(path),
            size,
        }))
    }
    fn open_random_mmap(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let st = self.st.lock();
        let inode = st.live.get(path).ok_or_else(|| Self::not_found(path))?;
        let data = inode.lock().data.clone();
        Ok(Arc::new(MemMapped {
            data,
            name: name_of(path),
        }))
    }
    fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        let st = self.st.lock();
        let inode = st.live.get(path).ok_or_else(|| Self::not_found(path))?;
        let data = inode.lock().data.clone();
        Ok(data)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.st.lock();
        if st.dirs.contains(from) && !st.live.contains_key(from) {
            // A directory (no subdirectories: what checkpoints rename): its files move with it.
            let names: Vec<PathBuf> = st.live.keys().filter(|p| p.parent() == Some(from)).cloned().collect();
            for p in names {
                if let (Some(inode), Some(name)) = (st.live.remove(&p), p.file_name()) {
                    st.live.insert(to.join(name), inode);
                }
            }
            st.dirs.remove(from);
            st.dirs.insert(to.to_path_buf());
            return Ok(());
        }
        let inode = st.live.remove(from).ok_or_else(|| Self::not_found(from))?;
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> Result<()> {
        let mut st = self.st.lock();
        st.live.remove(path).ok_or_else(|| Self::not_found(path))?;
        Ok(())
    }
    fn remove_dir(&self, path: &Path) -> Result<()> {
        let mut st = self.st.lock();
        st.dirs.remove(path);
        Ok(())
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.st.lock();
        if !st.dirs.contains(dir) {
            return Err(Self::not_found(dir));
        }
        Ok(st
            .live
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }
    fn exists(&self, path: &Path) -> bool {
        let st = self.st.lock();
        st.live.contains_key(path) || st.dirs.contains(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        let st = self.st.lock();
        let inode = st.live.get(path).ok_or_else(|| Self::not_found(path))?;
        let n = inode.lock().data.len() as u64;
        Ok(n)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.st.lock();
        let st = &mut *st;
        st.durable.retain(|p, _| p.parent() != Some(dir));
        for (p, i) in st.live.iter() {
            if p.parent() == Some(dir) {
                st.durable.insert(p.clone(), i.clone());
            }
        }
        Ok(())
    }
    /// A hard link: both names share the bytes (and their synced length).
    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.st.lock();
        let inode = st.live.get(from).ok_or_else(|| Self::not_found(from))?.clone();
        if st.live.contains_key(to) {
            return Err(Error::io(
                name_of(to),
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        let st = self.st.lock();
        let inode = st.live.get(path).ok_or_else(|| Self::not_found(path))?;
        let mut f = inode.lock();
        f.synced = f.data.len();
        Ok(())
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.st.lock();
        if !st.locks.insert(path.to_path_buf()) {
            return Err(lock_held(
                path,
                std::io::ErrorKind::WouldBlock,
                "lock held already (the database is open)".into(),
            ));
        }
        if !st.live.contains_key(path) {
            st.live
                .insert(path.to_path_buf(), Arc::new(Mutex::new(FileData::default())));
        }
        Ok(Box::new(MemLock {
            st: self.st.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hard link shares the bytes and their synced length: only `sync_file` (or a sync
    /// through a writer) makes them durable, under either name; the new name needs a
    /// directory sync.
    #[test]
    fn links_share_unsynced_bytes_until_sync_file() {
        let fs = MemFs::new();
        let d = Path::new("/d");
        fs.create_dir_all(d).unwrap();
        let mut f = fs.new_writable(&d.join("a")).unwrap();
        f.append(b"data").unwrap();
        fs.link(&d.join("a"), &d.join("b")).unwrap();
        assert!(fs.link(&d.join("a"), &d.join("b")).is_err(), "the target exists");
        assert!(fs.link(&d.join("none"), &d.join("c")).is_err(), "no source");
        fs.sync_dir(d).unwrap();
        fs.power_loss();
        assert_eq!(fs.read_all(&d.join("b")).unwrap(), b"");
        let mut f = fs.new_writable(&d.join("a")).unwrap();
        f.append(b"data").unwrap();
        fs.link(&d.join("a"), &d.join("b2")).unwrap();
        fs.sync_file(&d.join("b2")).unwrap();
        fs.sync_dir(d).unwrap();
        fs.power_loss();
        assert_eq!(fs.read_all(&d.join("a")).unwrap(), b"data");
        assert_eq!(fs.read_all(&d.join("b2")).unwrap(), b"data");
    }

    #[test]
    fn power_loss_drops_unsynced_data_and_entries() {
        let fs = MemFs::new();
        let d = Path::new("/db");
        fs.create_dir_all(d).unwrap();
        let mut f = fs.new_writable(&d.join("a")).unwrap();
        f.append(b"hello").unwrap();
        f.sync().unwrap();
        f.append(b" world").unwrap();
        fs.sync_dir(d).unwrap();
        let mut g = fs.new_writable(&d.join("b")).unwrap();
        g.append(b"x").unwrap();
        g.sync().unwrap(); // data synced but the entry is not
        fs.rename(&d.join("a"), &d.join("c")).unwrap(); // unsynced rename
        assert_eq!(fs.read_all(&d.join("c")).unwrap(), b"hello world");
        fs.power_loss();
        assert_eq!(fs.read_all(&d.join("a")).unwrap(), b"hello");
        assert!(!fs.exists(&d.join("b")));
        assert!(!fs.exists(&d.join("c")));
    }

    /// With the mapped-writes model, a mapped file keeps its synced bytes and, of each unsynced
    /// page, all of it or zeros; over many cuts some unsynced pages survive behind lost ones
    /// (out of order). Files not mapped, and the model off, lose every unsynced byte.
    #[test]
    fn mapped_files_keep_a_random_part_of_their_unsynced_pages() {
        let d = Path::new("/d");
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8 + 1).collect();
        let (mut kept_behind_lost, mut lost) = (0, 0);
        for seed in 0..40u64 {
            let fs = MemFs::new();
            fs.create_dir_all(d).unwrap();
            fs.set_mapped_pages_out_of_order(Some(seed));
            let mut w = fs.new_writable(&d.join("m")).unwrap();
            w.map_appends();
            let mut p = fs.new_writable(&d.join("p")).unwrap();
            w.append(&data[..5000]).unwrap();
            w.sync().unwrap();
            p.append(&data[..5000]).unwrap();
            p.sync().unwrap();
            w.append(&data[5000..]).unwrap();
            p.append(&data[5000..]).unwrap();
            fs.sync_dir(d).unwrap();
            fs.power_loss();
            let plain = fs.read_all(&d.join("p")).unwrap();
            assert_eq!(plain, data[..5000], "a file not mapped loses its unsynced bytes");
            let got = fs.read_all(&d.join("m")).unwrap();
            assert!(got.len() >= 5000);
            assert_eq!(got[..5000], data[..5000], "synced bytes stay");
            let mut seen_lost = false;
            for (i, page) in got.chunks(PAGE).enumerate() {
                let from = i * PAGE;
                let want = &data[from.min(data.len())..(from + page.len()).min(data.len())];
                let zeros = page.iter().all(|&b| b == 0);
                if from + page.len() <= 5000 {
                    continue;
                }
                if zeros {
                    seen_lost = true;
                    lost += 1;
                } else {
                    // A kept page holds its data from the synced end on.
                    let start = 5000usize.saturating_sub(from);
                    assert_eq!(page[start..want.len()], want[start..], "seed {seed} page {i}");
                    kept_behind_lost += seen_lost as usize;
                }
            }
        }
        assert!(
            lost > 20 && kept_behind_lost > 5,
            "lost {lost}, kept behind lost {kept_behind_lost}"
        );
        // The model off: a mapped file loses its unsynced bytes like any other.
        let fs = MemFs::new();
        fs.create_dir_all(d).unwrap();
        let mut w = fs.new_writable(&d.join("m")).unwrap();
        w.map_appends();
        w.append(&data).unwrap();
        fs.sync_dir(d).unwrap();
        fs.power_loss();
        assert!(fs.read_all(&d.join("m")).unwrap().is_empty());
    }

    #[test]
    fn lock_is_exclusive() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let l = fs.lock(Path::new("/d/LOCK")).unwrap();
        let e = fs.lock(Path::new("/d/LOCK")).unwrap_err();
        assert!(e.is_io() && e.to_string().contains("/d/LOCK:"), "{e}");
        drop(l);
        assert!(fs.lock(Path::new("/d/LOCK")).is_ok());
    }

    #[test]
    fn mapped_open_exposes_the_bytes_and_plain_open_does_not() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        let mut f = fs.new_writable(Path::new("/d/t")).unwrap();
        f.append(b"0123456789").unwrap();
        let m = fs.open_random_mmap(Path::new("/d/t")).unwrap();
        assert_eq!(m.mmap_bytes(), Some(&b"0123456789"[..]));
        assert_eq!(m.size(), 10);
        assert_eq!(m.read_at(3, 4).unwrap(), b"3456");
        assert!(m.read_at(8, 4).unwrap_err().is_corruption());
        assert!(m.read_at(u64::MAX, 1).unwrap_err().is_corruption());
        let r = fs.open_random(Path::new("/d/t")).unwrap();
        assert!(r.mmap_bytes().is_none());
        assert!(fs.open_random_mmap(Path::new("/d/missing")).is_err());
    }
}
