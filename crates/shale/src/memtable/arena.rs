//! A concurrent bump allocator for memtable nodes, in the spirit of RocksDB's `Arena` /
//! `ConcurrentArena`.
//!
//! Memory comes in fixed-size blocks. Small allocations bump an atomic offset inside the current
//! block (one `fetch_add`, no lock); when the block is exhausted a mutex-protected slow path
//! installs a fresh block. Each thread takes small allocations from a chunk of its own, carved
//! from the current block (RocksDB's per-core shards): threads inserting into one memtable at
//! once neither contend on the block's offset nor write nodes into the same cache lines. Allocations larger than a quarter of the block size get a block of
//! their own, so the current block's tail is not wasted. Nothing is freed before the arena drops.
//!
//! Blocks of 2 MiB or more (a 64 MiB memtable's are 4 MiB) are mapped at a 2 MiB boundary and
//! advised `MADV_HUGEPAGE`: where the kernel allows transparent huge pages (`enabled` = `always`
//! or `madvise`), each block takes a few TLB entries instead of a thousand, and a random skiplist
//! insert, which visits a node per level in a different page, stops paying a page walk on most
//! of its cache misses. Elsewhere the advice does nothing.
//!
//! Every allocation is [`ARENA_ALIGN`]-aligned (enough for the atomic pointers of skiplist nodes).

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Alignment of every allocation (pointer alignment, at least 8).
pub(crate) const ARENA_ALIGN: usize = if std::mem::align_of::<AtomicPtr<u8>>() > 8 {
    std::mem::align_of::<AtomicPtr<u8>>()
} else {
    8
};
/// Smallest block size the arena uses.
pub(crate) const MIN_BLOCK_SIZE: usize = 4 << 10;
/// Largest block size the arena uses.
pub(crate) const MAX_BLOCK_SIZE: usize = 1 << 30;

/// Blocks at least this big are mapped from the OS directly (on unix) rather than taken from
/// the allocator. A memtable's blocks live for one memtable and are freed by the flush thread:
/// through glibc malloc they can land in another thread's arena, or (once a larger buffer
/// raised its dynamic mmap threshold) in a heap that is never trimmed, and the process keeps
/// the memory of dead memtables. Mapped blocks go to `block_pool` when the memtable drops: the
/// next memtable reuses them, and idle ones go back to the OS after a few seconds.
const MAP_MIN: usize = 256 << 10;

/// One heap block. Owned by the arena through a raw pointer (see `Arena::blocks`).
struct Block {
    ptr: NonNull<u8>,
    cap: usize,
    /// Length of the mapping if the block was mapped with `mmap` (else 0: `alloc`).
    mapped: usize,
    /// Bytes handed out (may exceed `cap` after failed fast-path attempts; those are wasted).
    used: AtomicUsize,
}

use super::block_pool;

impl Block {
    /// A block of `cap` bytes, `used` of them handed out. `standard`: the arena's usual block
    /// size (a spare of it is prepared in the background; see `block_pool`).
    fn new(cap: usize, used: usize, standard: bool) -> Block {
        if cap >= MAP_MIN {
            let len = cap.div_ceil(4096) * 4096;
            if let Some(ptr) = block_pool::acquire(len, standard) {
                return Block {
                    ptr,
                    cap,
                    mapped: len,
                    used: AtomicUsize::new(used),
                };
            }
        }
        let layout = Layout::from_size_align(cap, ARENA_ALIGN).expect("arena block layout");
        // SAFETY: `cap > 0` (callers pass at least MIN_BLOCK_SIZE or a non-zero request), so
        // the layout has non-zero size as `alloc` requires.
        let raw = unsafe { alloc(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(layout));
        Block {
            ptr,
            cap,
            mapped: 0,
            used: AtomicUsize::new(used),
        }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        #[cfg(unix)]
        if self.mapped > 0 {
            // The mapping came from `block_pool::acquire`; nothing points into it any more.
            block_pool::release(self.ptr, self.mapped);
            return;
        }
        let layout = Layout::from_size_align(self.cap, ARENA_ALIGN).expect("arena block layout");
        // SAFETY: `ptr` was returned by `alloc` with exactly this layout and is freed only here.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// Most bytes of a thread's chunk (RocksDB's shards take up to 128 KiB; a memtable's threads
/// waste at most one chunk tail each).
const MAX_CHUNK: usize = 16 << 10;

/// Ids of arenas, so a thread's chunk is never used for another arena (ids are never reused).
static NEXT_ARENA_ID: AtomicU64 = AtomicU64::new(1);

/// This thread's chunk: of the arena with id `.0`, free bytes `.1..2` (addresses).
#[derive(Clone, Copy)]
struct Chunk(u64, usize, usize);

thread_local! {
    static CHUNK: Cell<Chunk> = const { Cell::new(Chunk(0, 0, 0)) };
}

/// A concurrent bump allocator. See the module documentation.
pub(crate) struct Arena {
    id: u64,
    /// Size of the chunks threads take (0: none, the blocks are too small); requests up to a
    /// quarter of it come from the thread's chunk.
    chunk: usize,
    /// The block small allocations bump into; null until the first allocation.
    current: AtomicPtr<Block>,
    block_size: usize,
    /// Requests above this size get their own block.
    large_limit: usize,
    /// Bytes of all blocks (reserved from the allocator).
    reserved: AtomicUsize,
    /// Every block ever allocated, from `Box::into_raw`; freed in `Drop`. Raw pointers (not
    /// `Box`es) so that growing the vector never moves or re-borrows a block others point into.
    blocks: Mutex<Vec<*mut Block>>,
}

// SAFETY: the arena hands out disjoint byte ranges (atomic bump offsets), block headers are only
// mutated through atomics or under the `blocks` mutex, and blocks are freed only in `Drop`, which
// has exclusive access. The raw pointers are plain owned heap allocations, so moving the arena to
// another thread or sharing it is fine.
unsafe impl Send for Arena {}
// SAFETY: see `Send` above; all shared-state mutation goes through atomics or the mutex.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena with blocks of `block_size` bytes (clamped to [4 KiB, 1 GiB] and rounded up to
    /// the alignment). No memory is reserved until the first allocation.
    pub(crate) fn new(block_size: usize) -> Arena {
        let block_size = block_size
            .clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
            .next_multiple_of(ARENA_ALIGN);
        let chunk = (block_size / 8).min(MAX_CHUNK) & !(ARENA_ALIGN - 1);
        Arena {
            id: NEXT_ARENA_ID.fetch_add(1, Ordering::Relaxed),
            chunk: if chunk >= 64 * ARENA_ALIGN { chunk } else { 0 },
            current: AtomicPtr::new(ptr::null_mut()),
            block_size,
            large_limit: block_size / 4,
            reserved: AtomicUsize::new(0),
            blocks: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn block_size(&self) -> usize {
        self.block_size
    }

    /// `bytes` bytes aligned to [`ARENA_ALIGN`], valid (and never reused) until the arena drops.
    /// The memory is uninitialized and exclusively the caller's.
    #[inline]
    pub(crate) fn allocate_aligned(&self, bytes: usize) -> NonNull<u8> {
        let size = bytes.max(1).next_multiple_of(ARENA_ALIGN);
        if size <= self.chunk / 4 {
            let c = CHUNK.with(|c| c.get());
            if c.0 == self.id && c.2 - c.1 >= size {
                CHUNK.with(|cell| cell.set(Chunk(c.0, c.1 + size, c.2)));
                // SAFETY: `c.1..c.1 + size` is inside the unused part `c.1..c.2` of a chunk this
                // thread took from this arena (the id matches and ids are never reused, so the
                // arena is alive: we are in its method), aligned since chunk starts and sizes
                // are multiples of ARENA_ALIGN.
                return unsafe { NonNull::new_unchecked(c.1 as *mut u8) };
            }
            let p = self.allocate_shared(self.chunk);
            let at = p.as_ptr() as usize;
            CHUNK.with(|cell| cell.set(Chunk(self.id, at + size, at + self.chunk)));
            return p;
        }
        self.allocate_shared(size)
    }

    /// An allocation of `size` (aligned) bytes from the current block or a new one.
    #[inline]
    fn allocate_shared(&self, size: usize) -> NonNull<u8> {
        if size <= self.large_limit {
            let b = self.current.load(Ordering::Acquire);
            if !b.is_null() {
                // SAFETY: `b` came from `Box::into_raw` and is freed only when the arena drops;
                // the Acquire load pairs with the Release store that published it.
                let blk = unsafe { &*b };
                let off = blk.used.fetch_add(size, Ordering::Relaxed);
                if off + size <= blk.cap {
                    // SAFETY: `off + size <= cap`, so the range is inside the block's allocation;
                    // `fetch_add` gave this range to us alone. Block start and `size` are
                    // multiples of ARENA_ALIGN, hence so is `off`.
                    return unsafe { NonNull::new_unchecked(blk.ptr.as_ptr().add(off)) };
                }
            }
        }
        self.allocate_slow(size)
    }

    #[cold]
    #[inline(never)]
    fn allocate_slow(&self, size: usize) -> NonNull<u8> {
        let mut blocks = self.blocks.lock();
        if size > self.large_limit {
            let blk = Block::new(size, size, false);
            let p = blk.ptr;
            self.reserved.fetch_add(size, Ordering::Relaxed);
            blocks.push(Box::into_raw(Box::new(blk)));
            return p;
        }
        // Another thread may have installed a fresh block while we waited for the lock.
        let b = self.current.load(Ordering::Acquire);
        if !b.is_null() {
            // SAFETY: as in the fast path.
            let blk = unsafe { &*b };
            let off = blk.used.fetch_add(size, Ordering::Relaxed);
            if off + size <= blk.cap {
                // SAFETY: as in the fast path.
                return unsafe { NonNull::new_unchecked(blk.ptr.as_ptr().add(off)) };
            }
        }
        let blk = Block::new(self.block_size, size, true);
        let p = blk.ptr;
        let raw = Box::into_raw(Box::new(blk));
        blocks.push(raw);
        // `reserved` before `current`: a reader that sees the new block also sees its bytes.
        self.reserved.fetch_add(self.block_size, Ordering::Relaxed);
        self.current.store(raw, Ordering::Release);
        p
    }

    /// Bytes reserved from the system allocator (sum of block sizes).
    #[inline]
    pub(crate) fn memory_usage(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// Bytes reserved minus the unused tail of the current block (RocksDB's
    /// `ApproximateMemoryUsage`): what the memtable has actually consumed.
    pub(crate) fn allocated_bytes(&self) -> usize {
        let b = self.current.load(Ordering::Acquire);
        let unused = if b.is_null() {
            0
        } else {
            // SAFETY: as in `allocate_aligned`.
            let blk = unsafe { &*b };
            blk.cap - blk.used.load(Ordering::Relaxed).min(blk.cap)
        };
        self.reserved.load(Ordering::Relaxed).saturating_sub(unused)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &b in self.blocks.get_mut().iter() {
            // SAFETY: every pointer came from `Box::into_raw` and appears once; `&mut self`
            // means no allocation or reader can still be using the arena.
            drop(unsafe { Box::from_raw(b) });
        }
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("block_size", &self.block_size)
            .field("reserved", &self.memory_usage())
            .field("allocated", &self.allocated_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memtable::block_pool::HUGE_PAGE;
    use std::collections::HashSet;

    #[test]
    fn alignment_usage_and_large() {
        let a = Arena::new(4096);
        assert_eq!(a.memory_usage(), 0);
        let mut seen = HashSet::new();
        for i in 1..500usize {
            let p = a.allocate_aligned(i % 37);
            assert_eq!(p.as_ptr() as usize % ARENA_ALIGN, 0);
            assert!(seen.insert(p.as_ptr() as usize));
            // SAFETY: the allocation has at least 1 byte and is ours.
            unsafe { p.as_ptr().write(i as u8) };
        }
        assert!(a.memory_usage() >= 4096 && a.memory_usage().is_multiple_of(4096));
        assert!(a.allocated_bytes() <= a.memory_usage());
        let before = a.memory_usage();
        let big = a.allocate_aligned(3000); // > block/4: own block
        assert_eq!(a.memory_usage(), before + 3000usize.next_multiple_of(ARENA_ALIGN));
        // SAFETY: 3000 bytes are ours.
        unsafe { ptr::write_bytes(big.as_ptr(), 7, 3000) };
    }

    /// Large blocks are mapped from the OS (and unmapped on drop); small ones come from the
    /// allocator. Both hold what is written to them.
    #[test]
    fn large_blocks_are_mapped() {
        let a = Arena::new(1 << 20);
        let mut ps = Vec::new();
        for i in 0..300usize {
            let p = a.allocate_aligned(10_000);
            // SAFETY: 10,000 bytes are ours.
            unsafe { ptr::write_bytes(p.as_ptr(), i as u8, 10_000) };
            ps.push(p);
        }
        let small = a.allocate_aligned(100 << 10); // > block/4: an own block, below MAP_MIN
        let blocks: Vec<(usize, usize)> = a
            .blocks
            .lock()
            .iter()
            // SAFETY: the arena is alive; its blocks are valid.
            .map(|&b| unsafe { ((*b).cap, (*b).mapped) })
            .collect();
        assert!(blocks.len() >= 3);
        for (cap, mapped) in blocks {
            if cfg!(unix) && cap >= MAP_MIN {
                assert!(mapped >= cap, "{cap} {mapped}");
            } else {
                assert_eq!(mapped, 0);
            }
        }
        for (i, p) in ps.iter().enumerate() {
            // SAFETY: still owned by the live arena; written above.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), 10_000) };
            assert!(s.iter().all(|&b| b == i as u8));
        }
        let _ = small;
    }

    /// Blocks of at least a huge page are mapped at a huge-page boundary (so the kernel can back
    /// them with transparent huge pages) and hold what is written to every byte of them.
    #[test]
    fn huge_blocks_are_aligned_and_usable() {
        let a = Arena::new(4 << 20);
        let p = a.allocate_aligned(64);
        let blocks: Vec<(usize, usize, usize)> = a
            .blocks
            .lock()
            .iter()
            // SAFETY: the arena is alive; its blocks are valid.
            .map(|&b| unsafe { ((*b).ptr.as_ptr() as usize, (*b).cap, (*b).mapped) })
            .collect();
        assert_eq!(blocks.len(), 1);
        let (start, cap, mapped) = blocks[0];
        assert_eq!(cap, 4 << 20);
        assert_eq!(p.as_ptr() as usize, start);
        if cfg!(target_os = "linux") {
            assert_eq!(mapped, cap);
            assert_eq!(start % HUGE_PAGE, 0, "huge block not aligned to a huge page");
        }
        // Fill the rest of the block (and more) with allocations and check every one.
        let mut ps = Vec::new();
        for i in 0..1200usize {
            let q = a.allocate_aligned(4000);
            // SAFETY: 4000 bytes are ours.
            unsafe { ptr::write_bytes(q.as_ptr(), i as u8, 4000) };
            ps.push(q);
        }
        for (i, q) in ps.iter().enumerate() {
            // SAFETY: still owned by the live arena; written above.
            let s = unsafe { std::slice::from_raw_parts(q.as_ptr(), 4000) };
            assert!(s.iter().all(|&b| b == i as u8));
        }
    }

    #[test]
    fn concurrent_disjoint() {
        let a = Arena::new(8192);
        let ranges = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let (a, ranges) = (&a, &ranges);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..5000usize {
                        let n = 8 + (i * 7 + t as usize) % 200;
                        let p = a.allocate_aligned(n);
                        // SAFETY: `n` bytes are exclusively ours.
                        unsafe { ptr::write_bytes(p.as_ptr(), t, n) };
                        mine.push((p.as_ptr() as usize, n, t));
                    }
                    ranges.lock().unwrap().extend(mine);
                });
            }
        });
        let mut r = ranges.into_inner().unwrap();
        r.sort();
        for w in r.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlapping allocations");
        }
        for &(p, n, t) in &r {
            // SAFETY: still owned by the live arena; written above.
            let s = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
            assert!(s.iter().all(|&b| b == t), "allocation overwritten");
        }
    }
}
