//! Mapped arena blocks, recycled between memtables and prepared ahead of need.
//!
//! A memtable's big arena blocks are anonymous mappings (see `arena.rs`). Fresh anonymous memory
//! is zeroed by the kernel on first touch, one page fault per (huge) page: filling a 64 MiB
//! memtable spent ~9 % of a single writer's time in `clear_page` inside those faults. Two things
//! take that off the write path:
//!
//! * **Recycling.** A dropped memtable's blocks go to an idle list instead of back to the kernel
//!   (up to [`IDLE_CAP`] bytes); the next arena asking for a block of the same length takes one
//!   (most recently returned first: its pages are still mapped and warm). A recycled block holds
//!   the old memtable's bytes: arena memory is uninitialized by contract, and every user (the
//!   skiplist, the vector memtable) writes each byte it later reads.
//! * **A spare prepared in the background.** When an arena takes a block and no idle block of
//!   that length is left, a background thread (`shale-arena`, started on first use) maps one and
//!   faults all its pages in (`MADV_POPULATE_WRITE`, or touching a byte per page), so the next
//!   block the arena needs is ready without faults.
//!
//! Idle blocks are returned to the kernel after [`IDLE_SECS`] unused, so a process that stops
//! writing does not keep a memtable's worth of memory. The pool does not change any memtable's
//! accounting: an arena counts the blocks it holds, never the idle ones.

use std::ptr::NonNull;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Most bytes the idle list keeps (beyond it, returned blocks are unmapped at once).
pub(crate) const IDLE_CAP: usize = 256 << 20;
/// Idle blocks older than this are unmapped.
pub(crate) const IDLE_SECS: u64 = 10;

/// Size of a transparent huge page (x86_64 and most arm64 kernels): mapped blocks at least
/// this big are aligned to it and advised `MADV_HUGEPAGE`.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// An idle mapping: start address, length, when it became idle.
#[derive(Debug, Clone, Copy)]
struct Idle {
    addr: usize,
    len: usize,
    since: Instant,
}

/// The idle list and the background thread's work (a plain value, so tests can drive one
/// without the process-wide instance).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    idle: Vec<Idle>,
    idle_bytes: usize,
    /// Lengths a spare block is wanted of, oldest request first (each length once: requests
    /// from arenas of different block sizes are all kept, none replaces another).
    spare: Vec<usize>,
}

impl Pool {
    /// Records that a spare block of `len` bytes is wanted, unless one is idle or already
    /// wanted; true if the request is new (the background thread then has work).
    pub(crate) fn want_spare(&mut self, len: usize) -> bool {
        if self.has(len) || self.spare.contains(&len) {
            return false;
        }
        self.spare.push(len);
        true
    }
    /// An idle block of exactly `len` bytes (the newest), if any.
    pub(crate) fn take(&mut self, len: usize) -> Option<NonNull<u8>> {
        let i = self.idle.iter().rposition(|b| b.len == len)?;
        let b = self.idle.remove(i);
        self.idle_bytes -= b.len;
        NonNull::new(b.addr as *mut u8)
    }

    /// Keep the block `addr..addr + len` idle, if the cap allows; false: the caller unmaps it.
    pub(crate) fn give(&mut self, addr: NonNull<u8>, len: usize, now: Instant) -> bool {
        if self.idle_bytes + len > IDLE_CAP {
            return false;
        }
        self.idle.push(Idle {
            addr: addr.as_ptr() as usize,
            len,
            since: now,
        });
        self.idle_bytes += len;
        true
    }

    /// Whether an idle block of `len` bytes exists.
    pub(crate) fn has(&self, len: usize) -> bool {
        self.idle.iter().any(|b| b.len == len)
    }

    /// Remove and return the blocks idle since before `now - IDLE_SECS` (to unmap).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<(NonNull<u8>, usize)> {
        let limit = Duration::from_secs(IDLE_SECS);
        let mut out = Vec::new();
        self.idle.retain(|b| {
            if now.saturating_duration_since(b.since) >= limit {
                out.extend(NonNull::new(b.addr as *mut u8).map(|p| (p, b.len)));
                false
            } else {
                true
            }
        });
        self.idle_bytes -= out.iter().map(|&(_, l)| l).sum::<usize>();
        out
    }

    /// Bytes kept idle.
    pub(crate) fn idle_bytes(&self) -> usize {
        self.idle_bytes
    }
}

/// The process-wide pool and the condition its background thread waits on.
struct Shared {
    pool: Mutex<Pool>,
    wake: Condvar,
}

fn shared() -> &'static Shared {
    static SHARED: OnceLock<&'static Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let s: &'static Shared = Box::leak(Box::new(Shared {
            pool: Mutex::new(Pool::default()),
            wake: Condvar::new(),
        }));
        // Without the thread there are no spares and no expiry; blocks are still recycled
        // (up to the cap).
        let _ = std::thread::Builder::new()
            .name("shale-arena".into())
            .spawn(move || background(s));
        s
    })
}

/// The background thread: prepares wanted spares, unmaps expired idle blocks.
fn background(s: &'static Shared) {
    let mut pool = s.pool.lock();
    loop {
        if !pool.spare.is_empty() {
            let len = pool.spare.remove(0);
            if !pool.has(len) {
                drop(pool);
                let block = map(len).inspect(|&p| populate(p, len));
                pool = s.pool.lock();
                if let Some(p) = block {
                    if !pool.give(p, len, Instant::now()) {
                        unmap(p, len);
                    }
                }
            }
            continue;
        }
        let expired = pool.expire(Instant::now());
        if !expired.is_empty() {
            drop(pool);
            for (p, len) in expired {
                unmap(p, len);
            }
            pool = s.pool.lock();
            continue;
        }
        if pool.idle.is_empty() {
            s.wake.wait(&mut pool);
        } else {
            s.wake.wait_for(&mut pool, Duration::from_secs(1));
        }
    }
}

/// A mapped block of `len` bytes (a multiple of the page size): an idle one or a fresh
/// mapping. With `want_spare`, the background thread then prepares another of the same length
/// if none is idle. None if the kernel refuses a mapping.
pub(crate) fn acquire(len: usize, want_spare: bool) -> Option<NonNull<u8>> {
    if !cfg!(unix) {
        return None;
    }
    let s = shared();
    let mut pool = s.pool.lock();
    let got = pool.take(len);
    if want_spare && pool.want_spare(len) {
        s.wake.notify_one();
    }
    drop(pool);
    got.or_else(|| map(len))
}

/// Give back a block from [`acquire`]: kept idle if the cap allows, else unmapped.
pub(crate) fn release(p: NonNull<u8>, len: usize) {
    let s = shared();
    let kept = {
        let mut pool = s.pool.lock();
        let kept = pool.give(p, len, Instant::now());
        if kept && pool.idle.len() == 1 {
            s.wake.notify_one(); // start the expiry clock
        }
        kept
    };
    if !kept {
        unmap(p, len);
    }
}

/// Map `len` bytes (a multiple of the page size) of zeroed anonymous memory. Returns the start
/// of the mapping (which covers exactly `len` bytes).
#[cfg(unix)]
fn map(len: usize) -> Option<NonNull<u8>> {
    use std::ptr;
    let huge = len >= HUGE_PAGE && cfg!(target_os = "linux");
    // A huge page needs a 2 MiB-aligned range: map one huge page more and trim both ends.
    let want = if huge { len + HUGE_PAGE } else { len };
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
    // existing memory; the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            want,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    if !huge {
        return NonNull::new(p as *mut u8);
    }
    let start = p as usize;
    let head = start.next_multiple_of(HUGE_PAGE) - start;
    let tail = want - head - len;
    // SAFETY: `head` and `tail` bytes at the two ends of the mapping just made are page-aligned
    // ranges (the mapping and `len` are page multiples) that nothing points into; the advice
    // only changes how the kernel backs the `len` bytes kept.
    unsafe {
        if head > 0 {
            libc::munmap(p, head);
        }
        if tail > 0 {
            libc::munmap((p as *mut u8).add(head + len) as *mut libc::c_void, tail);
        }
        #[cfg(target_os = "linux")]
        libc::madvise((p as *mut u8).add(head) as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
    // SAFETY: `head < HUGE_PAGE <= want`: inside the mapping.
    NonNull::new(unsafe { (p as *mut u8).add(head) })
}

#[cfg(not(unix))]
fn map(_len: usize) -> Option<NonNull<u8>> {
    None
}

/// Fault in every page of the fresh mapping `p..p + len` (nobody else knows of it yet).
#[cfg(unix)]
fn populate(p: NonNull<u8>, len: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the range is a private anonymous mapping we own; populating it only faults
        // its pages in (zeroed), as writes would.
        if unsafe { libc::madvise(p.as_ptr() as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) } == 0 {
            return;
        }
    }
    // Older kernels: a write per page faults it in.
    for off in (0..len).step_by(4096) {
        // SAFETY: `off < len`: inside the mapping, which nothing else uses yet.
        unsafe { std::ptr::write_volatile(p.as_ptr().add(off), 0) };
    }
}

#[cfg(not(unix))]
fn populate(_p: NonNull<u8>, _len: usize) {}

#[cfg(unix)]
fn unmap(p: NonNull<u8>, len: usize) {
    // SAFETY: `p..p + len` is a whole mapping made by `map`, no longer used by anyone.
    unsafe { libc::munmap(p.as_ptr() as *mut libc::c_void, len) };
}

#[cfg(not(unix))]
fn unmap(_p: NonNull<u8>, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: usize) -> NonNull<u8> {
        NonNull::new(a as *mut u8).unwrap()
    }

    #[test]
    fn blocks_come_back_by_length_newest_first() {
        let mut p = Pool::default();
        let t = Instant::now();
        assert!(p.give(addr(0x1000), 4096, t));
        assert!(p.give(addr(0x9000), 8192, t));
        assert!(p.give(addr(0x3000), 4096, t));
        assert_eq!(p.idle_bytes(), 16384);
        assert_eq!(p.take(4096), Some(addr(0x3000)));
        assert_eq!(p.take(4096), Some(addr(0x1000)));
        assert_eq!(p.take(4096), None);
        assert!(p.has(8192));
        assert_eq!(p.take(8192), Some(addr(0x9000)));
        assert_eq!(p.idle_bytes(), 0);
    }

    #[test]
    fn the_idle_list_never_exceeds_its_cap() {
        let mut p = Pool::default();
        let t = Instant::now();
        let len = 64 << 20;
        let mut kept = 0;
        for i in 1..=8 {
            if p.give(addr(i * len), len, t) {
                kept += 1;
            }
        }
        assert_eq!(kept, IDLE_CAP / len);
        assert_eq!(p.idle_bytes(), IDLE_CAP);
        assert!(p.take(len).is_some());
        assert!(p.give(addr(100 * len), len, t), "room again after a take");
    }

    #[test]
    fn idle_blocks_expire() {
        let mut p = Pool::default();
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_secs(IDLE_SECS / 2);
        assert!(p.give(addr(0x1000), 4096, t0));
        assert!(p.give(addr(0x2000), 4096, t1));
        assert!(p.expire(t0 + Duration::from_secs(1)).is_empty());
        let gone = p.expire(t0 + Duration::from_secs(IDLE_SECS));
        assert_eq!(gone, vec![(addr(0x1000), 4096)]);
        assert_eq!(p.idle_bytes(), 4096);
        assert_eq!(p.take(4096), Some(addr(0x2000)));
    }

    /// Spare requests for different lengths are all kept (one arena's request never drops
    /// another's, which left `released_blocks_are_reused_and_usable` waiting when tests ran
    /// in parallel); a length already wanted or idle is not asked for twice.
    #[test]
    fn spare_requests_of_different_lengths_are_all_kept() {
        let mut p = Pool::default();
        assert!(p.want_spare(8192));
        assert!(p.want_spare(16384));
        assert!(!p.want_spare(8192));
        assert_eq!(p.spare, vec![8192, 16384]);
        assert!(p.give(addr(0x3000), 4096, Instant::now()));
        assert!(!p.want_spare(4096), "an idle block of that length is there");
    }

    /// Through the process-wide pool: a released block (dirty) is handed out again and is fully
    /// usable; a spare request leaves a block ready (faulted in) for the next acquire.
    #[test]
    #[cfg(unix)]
    fn released_blocks_are_reused_and_usable() {
        // A length no other test uses, so parallel tests cannot take our blocks.
        let len = 3 * HUGE_PAGE + 5 * 4096;
        let a = acquire(len, false).expect("map");
        // SAFETY: `len` bytes of a mapping that is ours.
        unsafe { std::ptr::write_bytes(a.as_ptr(), 0xAB, len) };
        release(a, len);
        let b = acquire(len, true).expect("reuse");
        assert_eq!(a, b, "the idle block is handed out again");
        // SAFETY: as above; the old bytes are still there (no zeroing), and writable.
        unsafe {
            assert_eq!(*b.as_ptr().add(len - 1), 0xAB);
            std::ptr::write_bytes(b.as_ptr(), 1, len);
        }
        // The spare asked for above appears in the idle list.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !shared().pool.lock().has(len) {
            assert!(Instant::now() < deadline, "no spare prepared");
            std::thread::sleep(Duration::from_millis(5));
        }
        let c = acquire(len, false).expect("spare");
        assert_ne!(c, b);
        // SAFETY: a fresh zeroed mapping of `len` bytes, ours.
        unsafe {
            assert_eq!(*c.as_ptr().add(len / 2), 0);
            std::ptr::write_bytes(c.as_ptr(), 2, len);
        }
        release(b, len);
        release(c, len);
    }
}
