//! Random I/O-fault injection for `shale stress`: a file-system wrapper that fails operations at
//! configurable rates, as db_stress's fault-injection file system does.
//!
//! * reads (`--read_fault_one_in`): EIO on opening a file for reading, on a positioned read and on
//!   a whole-file read;
//! * writes (`--write_fault_one_in`): on append, flush, sync, file creation, rename, removal and
//!   directory sync — EIO, ENOSPC, or (on append) a short write: a prefix of the data reaches the
//!   file, then EIO;
//! * bit flips (`--bitflip_read_one_in`): a positioned read of a table file succeeds but one bit
//!   of the returned data is flipped (the file itself is intact) — only in block-based files
//!   whose blocks carry checksums (the footer names the type: a DB may hold files written with
//!   `NoChecksum` by an earlier run, or plain/cuckoo files, where no reader can notice a flip).
//!   Reads overlapping the last 256 bytes of a file (the footer, which old format versions do
//!   not checksum) are left alone, and so are the external files an ingest copies
//!   (`<db>.stress-scratch/`: the copy does not read checksums, so a flip would be copied into
//!   the DB undetected, as it would be by RocksDB).
//!
//! Injection can be switched off (`set_enabled(false)`) while the stress tool reopens and
//! verifies the database after a fault. Every injected fault is counted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use shale::fs::FileSystem;
use shale::fs::ForwardingFs;
use shale::fs::RandomAccessFile;
use shale::fs::WritableFile;

#[derive(Clone, Copy, Debug, Default)]
pub struct FaultRates {
    pub read_one_in: u64,
    pub write_one_in: u64,
    pub bitflip_one_in: u64,
}

impl FaultRates {
    pub fn any(&self) -> bool {
        self.read_one_in > 0 || self.write_one_in > 0 || self.bitflip_one_in > 0
    }
}

/// Counters of injected faults.
#[derive(Default)]
pub struct FaultCounts {
    pub read_eio: AtomicU64,
    pub write_eio: AtomicU64,
    pub enospc: AtomicU64,
    pub short_writes: AtomicU64,
    pub bitflips: AtomicU64,
}

impl FaultCounts {
    pub fn total(&self) -> u64 {
        [
            &self.read_eio,
            &self.write_eio,
            &self.enospc,
            &self.short_writes,
            &self.bitflips,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
    pub fn describe(&self) -> String {
        format!(
            "read_eio={} write_eio={} enospc={} short_writes={} bitflips={}",
            self.read_eio.load(Ordering::Relaxed),
            self.write_eio.load(Ordering::Relaxed),
            self.enospc.load(Ordering::Relaxed),
            self.short_writes.load(Ordering::Relaxed),
            self.bitflips.load(Ordering::Relaxed)
        )
    }
}

struct Ctl {
    rates: FaultRates,
    enabled: AtomicBool,
    seed: u64,
    counter: AtomicU64,
    counts: Arc<FaultCounts>,
}

impl Ctl {
    /// A fresh pseudo-random number per call (lock-free: a counter through a mixer).
    fn draw(&self) -> u64 {
        super::model::mix(self.seed ^ self.counter.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9E37_79B9))
    }
    fn hit(&self, one_in: u64) -> Option<u64> {
        if one_in == 0 || !self.enabled.load(Ordering::Acquire) {
            return None;
        }
        let x = self.draw();
        x.is_multiple_of(one_in).then_some(x / one_in)
    }
    fn read_fault(&self, p: &Path) -> shale::error::Result<()> {
        if self.hit(self.rates.read_one_in).is_some() {
            self.counts.read_eio.fetch_add(1, Ordering::Relaxed);
            return Err(err(p, libc_eio(), "injected read error"));
        }
        Ok(())
    }
    /// A write-path fault: EIO or ENOSPC.
    fn write_fault(&self, p: &Path) -> shale::error::Result<()> {
        if let Some(x) = self.hit(self.rates.write_one_in) {
            if x % 3 == 0 {
                self.counts.enospc.fetch_add(1, Ordering::Relaxed);
                return Err(err(p, 28, "injected ENOSPC"));
            }
            self.counts.write_eio.fetch_add(1, Ordering::Relaxed);
            return Err(err(p, libc_eio(), "injected write error"));
        }
        Ok(())
    }
}

const fn libc_eio() -> i32 {
    5
}

fn err(p: &Path, errno: i32, what: &str) -> shale::Error {
    let e = std::io::Error::from_raw_os_error(errno);
    shale::Error::io(
        format!("{} ({what})", p.display()),
        std::io::Error::new(e.kind(), format!("{what}: {e}")),
    )
}

/// The fault-injecting file system.
pub struct RandomFaultFs {
    inner: Arc<dyn FileSystem>,
    ctl: Arc<Ctl>,
}

impl RandomFaultFs {
    pub fn new(inner: Arc<dyn FileSystem>, rates: FaultRates, seed: u64, counts: Arc<FaultCounts>) -> RandomFaultFs {
        RandomFaultFs {
            inner,
            ctl: Arc::new(Ctl {
                rates,
                enabled: AtomicBool::new(true),
                seed,
                counter: AtomicU64::new(0),
                counts,
            }),
        }
    }
    /// A handle that switches injection on and off.
    pub fn switch(&self) -> FaultSwitch {
        FaultSwitch(self.ctl.clone())
    }
}

#[derive(Clone)]
pub struct FaultSwitch(Arc<Ctl>);

impl FaultSwitch {
    pub fn set_enabled(&self, on: bool) {
        self.0.enabled.store(on, Ordering::Release);
    }
    pub fn enabled(&self) -> bool {
        self.0.enabled.load(Ordering::Acquire)
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    ctl: Arc<Ctl>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> shale::error::Result<()> {
        if let Some(x) = self.ctl.hit(self.ctl.rates.write_one_in) {
            match x % 3 {
                0 if data.len() > 1 => {
                    // A short write: part of the data reaches the file.
                    self.ctl.counts.short_writes.fetch_add(1, Ordering::Relaxed);
                    let keep = 1 + (x / 3) as usize % (data.len() - 1);
                    self.inner.append(&data[..keep])?;
                    return Err(err(&self.path, libc_eio(), "injected short write"));
                }
                1 => {
                    self.ctl.counts.enospc.fetch_add(1, Ordering::Relaxed);
                    return Err(err(&self.path, 28, "injected ENOSPC"));
                }
                _ => {
                    self.ctl.counts.write_eio.fetch_add(1, Ordering::Relaxed);
                    return Err(err(&self.path, libc_eio(), "injected write error"));
                }
            }
        }
        self.inner.append(data)
    }
    fn flush(&mut self) -> shale::error::Result<()> {
        self.ctl.write_fault(&self.path)?;
        self.inner.flush()
    }
    fn sync(&mut self) -> shale::error::Result<()> {
        self.ctl.write_fault(&self.path)?;
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

struct FaultReadable {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    is_table: bool,
    ctl: Arc<Ctl>,
}

impl RandomAccessFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> shale::error::Result<()> {
        self.ctl.read_fault(&self.path)?;
        self.inner.read_exact_at(offset, buf)?;
        if self.is_table && !buf.is_empty() && offset + (buf.len() as u64) + 256 <= self.inner.size() {
            if let Some(x) = self.ctl.hit(self.ctl.rates.bitflip_one_in) {
                self.ctl.counts.bitflips.fetch_add(1, Ordering::Relaxed);
                let i = (x as usize / 8) % buf.len();
                buf[i] ^= 1 << (x % 8);
            }
        }
        Ok(())
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

/// True when `f` is a block-based table whose blocks carry checksums: the legacy footer implies
/// CRC32C; the newer one starts (53 bytes from the end) with the checksum type, 0 for none.
fn has_block_checksums(f: &dyn RandomAccessFile) -> bool {
    const LEGACY_BLOCK_BASED: u64 = 0xdb47_7524_8b80_fb57;
    const BLOCK_BASED: u64 = 0x88e2_41b7_85f4_cff7;
    let size = f.size();
    if size < 53 {
        return false;
    }
    let mut tail = [0u8; 53];
    if f.read_exact_at(size - 53, &mut tail).is_err() {
        return false;
    }
    match u64::from_le_bytes(tail[45..].try_into().expect("8 bytes")) {
        LEGACY_BLOCK_BASED => true,
        BLOCK_BASED => tail[0] != 0,
        _ => false,
    }
}

impl ForwardingFs for RandomFaultFs {
    fn inner(&self) -> &dyn FileSystem {
        &*self.inner
    }
    fn new_writable(&self, p: &Path) -> shale::error::Result<Box<dyn WritableFile>> {
        self.ctl.write_fault(p)?;
        let inner = self.inner.new_writable(p)?;
        Ok(Box::new(FaultWritable {
            inner,
            path: p.to_path_buf(),
            ctl: self.ctl.clone(),
        }))
    }
    fn open_random(&self, p: &Path) -> shale::error::Result<Arc<dyn RandomAccessFile>> {
        self.ctl.read_fault(p)?;
        let inner = self.inner.open_random(p)?;
        // No bit flips in the external files of `<db>.stress-scratch/`: an ingest copies such a
        // file byte for byte without reading its checksums (as RocksDB does), so a flip while
        // copying would put a damaged table in the DB that no reader could tell from a bad input.
        let scratch = p
            .parent()
            .and_then(|d| d.file_name())
            .is_some_and(|d| d.to_string_lossy().ends_with(".stress-scratch"));
        let is_table = p.extension().is_some_and(|e| e == "sst") && !scratch && has_block_checksums(&*inner);
        Ok(Arc::new(FaultReadable {
            inner,
            path: p.to_path_buf(),
            is_table,
            ctl: self.ctl.clone(),
        }))
    }
    fn read_all(&self, p: &Path) -> shale::error::Result<Vec<u8>> {
        self.ctl.read_fault(p)?;
        self.inner.read_all(p)
    }
    fn rename(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        self.ctl.write_fault(b)?;
        self.inner.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> shale::error::Result<()> {
        self.ctl.write_fault(p)?;
        self.inner.remove_file(p)
    }
    fn sync_dir(&self, d: &Path) -> shale::error::Result<()> {
        self.ctl.write_fault(d)?;
        self.inner.sync_dir(d)
    }
    fn sync_file(&self, p: &Path) -> shale::error::Result<()> {
        self.ctl.write_fault(p)?;
        self.inner.sync_file(p)
    }
    fn link(&self, a: &Path, b: &Path) -> shale::error::Result<()> {
        self.ctl.write_fault(b)?;
        self.inner.link(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shale::fs::testing::MemFs;
    use shale::{ChecksumType, Options, DB};

    /// Bit flips must never reach files whose blocks carry no checksum (an earlier run of the
    /// crash test may have written them with `NoChecksum`): the footer decides.
    #[test]
    fn only_files_with_block_checksums_get_bit_flips() {
        for (ck, fv, expect) in [
            (ChecksumType::NoChecksum, 5, false),
            (ChecksumType::CRC32c, 5, true),
            (ChecksumType::XXH3, 6, true),
            (ChecksumType::NoChecksum, 6, false),
            (ChecksumType::XxHash64, 2, true),
        ] {
            let fs = MemFs::new();
            let o = {
                let mut o = Options::default();
                o.create_if_missing(true);
                o.set_env(Arc::new(fs.clone()));
                let mut bbo = o.get_block_based_options();
                bbo.set_checksum_type(ck);
                bbo.set_format_version(fv);
                o.set_block_based_table_factory(&bbo);
                o
            };
            let db = DB::open(&o, "/db").unwrap();
            db.put(b"k", b"v").unwrap();
            db.flush().unwrap();
            drop(db);
            let ssts: Vec<String> = fs
                .list(Path::new("/db"))
                .unwrap()
                .into_iter()
                .filter(|n| n.ends_with(".sst"))
                .collect();
            assert_eq!(ssts.len(), 1);
            let f = fs.open_random(&Path::new("/db").join(&ssts[0])).unwrap();
            assert_eq!(has_block_checksums(&*f), expect, "{ck:?} fv{fv}");
        }
    }
}
