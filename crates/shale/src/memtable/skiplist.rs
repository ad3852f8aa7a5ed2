//! A concurrent, arena-allocated skiplist with entries stored inline, after RocksDB's
//! `InlineSkipList` (our own code).
//!
//! # Node layout
//!
//! A node of height `h` is one arena allocation:
//!
//! ```text
//! [next[h-1]] ... [next[1]] [next[0]] [len: varint32] [entry bytes ...] [padding]
//!                           ^ node pointer
//! ```
//!
//! so `next[i]` lives `i` pointers *before* the node pointer and the entry follows its length.
//! The allocation is rounded up to [`NODE_ROUND`] (16) bytes. A node then takes what RocksDB's
//! `InlineSkipList` node takes in its arena (links and entry, aligned to 16 bytes there): a
//! memtable of `write_buffer_size` holds as many entries as RocksDB's, so both flush at the same
//! points and write tables of the same sizes (compaction, universal above all, depends on it).
//!
//! # Concurrency
//!
//! Readers never lock: links are loaded with `Acquire`. Writers (any number, concurrently) build
//! the node privately, then link it bottom-up with a `compare_exchange` (`AcqRel`) per level; the
//! release publishes the entry bytes. A node is reachable at level `i` only after it is linked at
//! every level below, and nodes are never unlinked or freed before the list drops.
//!
//! # Comparison savings (from RocksDB)
//!
//! * a search for "first >= key" stops as soon as a comparison says *equal*;
//! * when descending a level, a node that was already found to be bigger at the upper level is
//!   not compared again (`last_bigger`);
//! * inserts reuse a [`Splice`] (the `prev`/`next` nodes around the previous insert at every
//!   level). Sequential inserts then cost about one comparison. [`SkipList::insert`] keeps one
//!   splice per thread and list; [`SkipList::insert_with_hint`] uses a caller-owned one.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering as AO};

use super::arena::Arena;
use super::directory::Directory;
use crate::coding::varint_len;

/// Maximum node height.
pub(crate) const MAX_HEIGHT: usize = 12;
/// log2 of the branching factor (4).
const BRANCHING_BITS: u32 = 2;
/// Bytes of `next[0]`: the entry length follows them.
const LINK: usize = std::mem::size_of::<AtomicPtr<Node>>();

/// Node allocations are rounded up to a multiple of this (RocksDB's arena aligns each node to
/// `alignof(max_align_t)`, 16 on the usual 64-bit targets).
pub(crate) const NODE_ROUND: usize = 16;

/// Bytes a node of `height` with an entry of `entry_len` bytes takes in the arena.
#[inline(always)]
pub(crate) fn node_size(height: usize, entry_len: u32) -> usize {
    (LINK * height + varint_len(entry_len as u64) + entry_len as usize).next_multiple_of(NODE_ROUND)
}

/// Orders the entries of a skiplist. `key` extracts the ordered part of an encoded entry
/// (without allocating); searches take such keys directly.
pub(crate) trait KeyComparator: Send + Sync {
    fn key<'a>(&self, entry: &'a [u8]) -> &'a [u8];
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
    /// The part of `key` that orders bytewise before anything else (the user key of an internal
    /// key), if this order is of that kind; lets a sealed list build a [`Directory`].
    fn bytewise_prefix<'a>(&self, _key: &'a [u8]) -> Option<&'a [u8]> {
        None
    }
}

/// Entries of a sealed list below which no directory is built (the descent is short anyway).
const MIN_DIRECTORY_ENTRIES: usize = 1024;

/// A directory over nodes of a list, in order (each entry's item is its node's address).
struct Sealed {
    dir: Directory,
}

impl Sealed {
    /// Node `i` (None past the end).
    #[inline(always)]
    fn node(&self, i: usize) -> Option<*mut Node> {
        self.dir.item(i).map(|a| a as usize as *mut Node)
    }

    /// Heap bytes held.
    fn memory(&self) -> usize {
        self.dir.memory_usage()
    }
}

// SAFETY: the node pointers point into the list's arena, which outlives the `Sealed` (a field of
// the list); they are only read through, like the list's own links.
unsafe impl Send for Sealed {}
// SAFETY: as above; the vectors are never mutated after construction.
unsafe impl Sync for Sealed {}

/// A cache hint: start loading the line at `p` (any address, null included).
#[inline(always)]
fn prefetch(p: *const Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` is only a cache hint: it never faults and has no effect on program
    // semantics, whatever the address. SSE is baseline on x86_64.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Opaque node: only `next[0]` is a Rust field, everything else is reached by pointer offsets.
#[repr(C)]
pub(crate) struct Node {
    next0: AtomicPtr<Node>,
}

impl Node {
    /// The level-`level` link of `n`.
    ///
    /// # Safety
    /// `n` must point to an initialized node of a live list whose height is greater than `level`.
    #[inline(always)]
    unsafe fn link<'a>(n: *mut Node, level: usize) -> &'a AtomicPtr<Node> {
        // SAFETY: per the contract, the link slots n-level..=n are inside n's allocation and were
        // initialized in `alloc_node`; `n` carries the provenance of the whole arena block.
        unsafe { &*(n as *const AtomicPtr<Node>).sub(level) }
    }

    /// The entry bytes of `n`.
    ///
    /// # Safety
    /// `n` must point to an initialized node of a list that outlives `'a`, whose entry has been
    /// written (it was published, or the caller wrote it).
    #[inline(always)]
    unsafe fn entry<'a>(n: *const Node) -> &'a [u8] {
        // SAFETY: the varint32 length follows next[0] and the entry follows it (`alloc_node`
        // wrote a valid varint of at most 5 bytes); both were written before publication and
        // never change afterwards.
        unsafe {
            let mut p = (n as *const u8).add(LINK);
            let b = *p;
            p = p.add(1);
            let len = if b < 0x80 {
                b as usize
            } else {
                let mut len = (b & 0x7f) as usize;
                let mut shift = 7;
                loop {
                    let b = *p;
                    p = p.add(1);
                    len |= ((b & 0x7f) as usize) << shift;
                    if b < 0x80 {
                        break len;
                    }
                    shift += 7;
                }
            };
            std::slice::from_raw_parts(p, len)
        }
    }
}

/// Writes a new entry into its (uninitialized) node memory, front to back. Whatever `fill`
/// leaves unwritten is zeroed, so the entry is always fully initialized.
pub(crate) struct EntryWriter<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    pos: usize,
}

impl<'a> EntryWriter<'a> {
    /// A writer for the (uninitialized) entry bytes `buf`.
    #[inline(always)]
    pub(crate) fn new(buf: &'a mut [MaybeUninit<u8>]) -> EntryWriter<'a> {
        EntryWriter { buf, pos: 0 }
    }

    /// Append bytes. Panics if the entry's length would be exceeded.
    #[inline(always)]
    pub(crate) fn put(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].write_copy_of_slice(b);
        self.pos += b.len();
    }

    /// Append a varint32.
    #[inline(always)]
    pub(crate) fn put_varint32(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.buf[self.pos].write((v as u8) | 0x80);
            self.pos += 1;
            v >>= 7;
        }
        self.buf[self.pos].write(v as u8);
        self.pos += 1;
    }

    /// Zero whatever `fill` left unwritten.
    #[inline(always)]
    pub(crate) fn finish(self) {
        if self.pos < self.buf.len() {
            for b in &mut self.buf[self.pos..] {
                b.write(0);
            }
        }
    }
}

/// Cached insert position: for every level, the nodes just before and after the last insert.
/// Bound to the list it was last used with (by id); using it with another list just resets it.
pub(crate) struct Splice {
    list_id: u64,
    /// Levels `0..height` are valid; `prev[height]`/`next[height]` are head/null sentinels.
    height: usize,
    prev: [*mut Node; MAX_HEIGHT + 1],
    next: [*mut Node; MAX_HEIGHT + 1],
}

impl Splice {
    pub(crate) const fn new() -> Splice {
        Splice {
            list_id: 0,
            height: 0,
            prev: [ptr::null_mut(); MAX_HEIGHT + 1],
            next: [ptr::null_mut(); MAX_HEIGHT + 1],
        }
    }
}

impl Default for Splice {
    fn default() -> Self {
        Splice::new()
    }
}

/// Per-thread splices for [`SkipList::insert`], indexed by list id (direct-mapped).
const TLS_SPLICES: usize = 4;

thread_local! {
    static SPLICES: RefCell<[Splice; TLS_SPLICES]> =
        const { RefCell::new([Splice::new(), Splice::new(), Splice::new(), Splice::new()]) };
    static RNG: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// List ids start at 1 (0 means "no list" in a fresh splice) and are never reused.
static NEXT_LIST_ID: AtomicU64 = AtomicU64::new(1);

/// Random height with P(h > k) = 4^-k, capped at MAX_HEIGHT, from a thread-local xorshift.
#[inline]
fn random_height() -> usize {
    let r = RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            // Seed from a global counter and the thread-local's address, through splitmix64.
            static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
            let mut z = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, AO::Relaxed) ^ (c as *const _ as u64);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x = (z ^ (z >> 31)) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32
    });
    let h = 1 + ((r as u32).trailing_zeros() / BRANCHING_BITS) as usize;
    h.min(MAX_HEIGHT)
}

/// The skiplist. See the module documentation.
pub(crate) struct SkipList<C> {
    head: *mut Node,
    max_height: AtomicUsize,
    id: u64,
    cmp: C,
    arena: Arena,
    /// Set by [`seal`](SkipList::seal): no insert may follow.
    sealed: std::sync::atomic::AtomicBool,
    /// Built by [`build_directory`](SkipList::build_directory) after sealing.
    directory: std::sync::OnceLock<Sealed>,
    /// Samples of the live list for searches (see `skiplist_guide.rs`).
    guides: guide::Guides,
}

// SAFETY: nodes live in the arena (Send + Sync) until the list drops; after publication a node
// is only mutated through its atomic links, and entry bytes are immutable. `head` is such a node.
unsafe impl<C: Send> Send for SkipList<C> {}
// SAFETY: as above; concurrent inserts synchronize through CAS on the links.
unsafe impl<C: Sync> Sync for SkipList<C> {}

impl<C: KeyComparator> SkipList<C> {
    pub(crate) fn new(cmp: C, arena_block_size: usize) -> SkipList<C> {
        let mut list = SkipList {
            head: ptr::null_mut(),
            max_height: AtomicUsize::new(1),
            id: NEXT_LIST_ID.fetch_add(1, AO::Relaxed),
            cmp,
            arena: Arena::new(arena_block_size),
            sealed: std::sync::atomic::AtomicBool::new(false),
            directory: std::sync::OnceLock::new(),
            guides: guide::Guides::new(),
        };
        list.head = list.alloc_node(MAX_HEIGHT, 0);
        list
    }

    pub(crate) fn comparator(&self) -> &C {
        &self.cmp
    }

    /// Bytes reserved by the arena.
    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Bytes consumed from the arena (excludes the unused tail of the current block).
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes()
    }

    /// Declare that no entry will be inserted any more (an insert after this panics).
    pub(crate) fn seal(&self) {
        self.sealed.store(true, AO::Release);
        self.stop_guides();
    }

    /// Build the [`Directory`] of a sealed list (once; later calls do nothing). Searches use it
    /// from then on. Does nothing for an unsealed list, a small one, or an order that is not
    /// bytewise. Returns whether the list has a directory.
    pub(crate) fn build_directory(&self) -> bool {
        if !self.sealed.load(AO::Acquire) {
            return false;
        }
        if self.directory.get().is_some() {
            return true;
        }
        let nodes = self.walk_level(0, 3);
        if nodes.len() < MIN_DIRECTORY_ENTRIES {
            return false;
        }
        let Some(dir) = self.directory_over(&nodes) else {
            return false;
        };
        let _ = self.directory.set(Sealed { dir });
        true
    }

    /// The nodes linked at `level` now, in order (a list with concurrent inserts may gain more
    /// while this walks; those it reaches are included, in order). Walking one level is a chain
    /// of dependent cache misses: it is cut into segments at the nodes that reach
    /// `anchor_level` (1 in 4^(anchor_level - level) of them), and 16 segments are walked in
    /// lockstep so that their misses overlap.
    pub(super) fn walk_level(&self, level: usize, anchor_level: usize) -> Vec<*mut Node> {
        const WALKERS: usize = 16;
        let first = self.next(self.head, level);
        if first.is_null() {
            return Vec::new();
        }
        let mut anchors = vec![first];
        let mut a = self.next(self.head, anchor_level);
        while !a.is_null() {
            if a != first {
                anchors.push(a);
            }
            a = self.next(a, anchor_level);
        }
        let mut nodes: Vec<*mut Node> = Vec::new();
        for base in (0..anchors.len()).step_by(WALKERS) {
            let len = WALKERS.min(anchors.len() - base);
            let mut cur = [ptr::null_mut::<Node>(); WALKERS];
            let mut end = [ptr::null_mut::<Node>(); WALKERS];
            let mut seg: [Vec<*mut Node>; WALKERS] = std::array::from_fn(|_| Vec::new());
            for j in 0..len {
                cur[j] = anchors[base + j];
                end[j] = anchors.get(base + j + 1).copied().unwrap_or(ptr::null_mut());
            }
            loop {
                let mut busy = false;
                for j in 0..len {
                    let n = cur[j];
                    if n == end[j] || n.is_null() {
                        continue;
                    }
                    busy = true;
                    seg[j].push(n);
                    cur[j] = self.next(n, level);
                }
                if !busy {
                    break;
                }
            }
            for sn in seg.iter_mut().take(len) {
                nodes.append(sn);
            }
        }
        nodes
    }

    /// A [`Directory`] over `nodes` (in list order). None if the order is not bytewise or
    /// the directory cannot take them.
    pub(super) fn directory_over(&self, nodes: &[*mut Node]) -> Option<Directory> {
        let keys: Option<Vec<&[u8]>> = nodes
            .iter()
            // SAFETY: published nodes of this list, which outlives this call.
            .map(|&n| self.cmp.bytewise_prefix(self.cmp.key(unsafe { Node::entry(n) })))
            .collect();
        let items: Vec<u64> = nodes.iter().map(|&n| n as usize as u64).collect();
        Directory::build_with(&keys?, &items)
    }

    /// Heap bytes of the directory (0 without one).
    pub(crate) fn directory_memory(&self) -> usize {
        self.directory.get().map_or(0, Sealed::memory)
    }

    /// With a directory: the index of the first entry with key >= `key` (`nodes.len()` if none).
    #[inline]
    fn directory_lower_bound(&self, key: &[u8]) -> Option<(&Sealed, usize)> {
        let s = self.directory.get()?;
        let ukey = self.cmp.bytewise_prefix(key)?;
        let i = s.dir.lower_bound(ukey, |i| {
            s.node(i).is_some_and(|n| self.cmp_node(n, key) == Ordering::Less)
        });
        Some((s, i))
    }

    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: head has MAX_HEIGHT levels.
        unsafe { Node::link(self.head, 0) }.load(AO::Acquire).is_null()
    }

    /// Allocate a node of `height` with room for `entry_len` entry bytes; links are null, the
    /// entry is uninitialized.
    fn alloc_node(&self, height: usize, entry_len: usize) -> *mut Node {
        let len32 = u32::try_from(entry_len).expect("skiplist entry larger than 4 GiB");
        let prefix = LINK * (height - 1);
        let raw = self.arena.allocate_aligned(node_size(height, len32)).as_ptr();
        // SAFETY: the allocation is `node_size` >= `prefix + LINK + varint + entry_len` bytes,
        // aligned for AtomicPtr, and exclusively ours; we initialize every link slot and the
        // length varint.
        unsafe {
            let node = raw.add(prefix) as *mut Node;
            for i in 0..height {
                ptr::write((node as *mut AtomicPtr<Node>).sub(i), AtomicPtr::new(ptr::null_mut()));
            }
            let len_bytes = (node as *mut u8).add(LINK) as *mut MaybeUninit<u8>;
            EntryWriter::new(std::slice::from_raw_parts_mut(len_bytes, varint_len(len32 as u64))).put_varint32(len32);
            node
        }
    }

    /// Start loading `n`'s successor at `level` (RocksDB prefetches one node ahead while the
    /// current one is compared). `n` must be non-null.
    #[inline(always)]
    fn prefetch_after(&self, n: *mut Node, level: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let nn = self.next(n, level);
            // SAFETY: `_mm_prefetch` is only a cache hint: it never faults and has no effect on
            // program semantics, whatever the address (null included). SSE is baseline on x86_64.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(nn as *const i8) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (n, level);
    }

    /// Compare the key of node `n` with `key`.
    #[inline(always)]
    fn cmp_node(&self, n: *mut Node, key: &[u8]) -> Ordering {
        // SAFETY: callers pass published nodes of this list (or the node being inserted).
        let e = unsafe { Node::entry(n) };
        self.cmp.compare(self.cmp.key(e), key)
    }

    #[inline(always)]
    fn next(&self, n: *mut Node, level: usize) -> *mut Node {
        // SAFETY: searches only reach a node at `level` through a link at `level`, so its height
        // exceeds `level`; head has every level.
        unsafe { Node::link(n, level) }.load(AO::Acquire)
    }

    /// Insert an entry (copied). Returns false if an entry with an equal key exists (the
    /// entry is then not inserted). Safe to call from many threads at once; uses a per-thread
    /// splice so sequential keys cost about one comparison each.
    pub(crate) fn insert(&self, entry: &[u8]) -> bool {
        self.insert_with(entry.len(), |w| w.put(entry))
    }

    /// Like [`insert`](Self::insert) but the entry (`entry_len` bytes) is written in place by
    /// `fill` through an [`EntryWriter`], avoiding a copy.
    #[inline]
    pub(crate) fn insert_with(&self, entry_len: usize, fill: impl FnOnce(&mut EntryWriter<'_>)) -> bool {
        let (x, height) = self.prepare(entry_len, fill);
        let r = SPLICES.try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut splices) => {
                let s = &mut splices[(self.id as usize) % TLS_SPLICES];
                self.insert_node(x, height, s, false)
            }
            Err(_) => self.insert_node(x, height, &mut Splice::new(), false),
        });
        r.unwrap_or_else(|_| self.insert_node(x, height, &mut Splice::new(), false))
    }

    /// Insert using the caller's splice as the position hint (and update it). Correct with
    /// concurrent inserters; a stale or foreign splice only costs comparisons.
    pub(crate) fn insert_with_hint(&self, entry: &[u8], splice: &mut Splice) -> bool {
        let (x, height) = self.prepare(entry.len(), |w| w.put(entry));
        self.insert_node(x, height, splice, true)
    }

    /// Insert without a hint: search from the top.
    pub(crate) fn insert_concurrently(&self, entry: &[u8]) -> bool {
        let (x, height) = self.prepare(entry.len(), |w| w.put(entry));
        self.insert_node(x, height, &mut Splice::new(), false)
    }

    #[inline]
    fn prepare(&self, entry_len: usize, fill: impl FnOnce(&mut EntryWriter<'_>)) -> (*mut Node, usize) {
        // A sealed list may have a directory that would not know the new entry.
        assert!(!self.sealed.load(AO::Relaxed), "insert into a sealed skiplist");
        let height = random_height();
        let x = self.alloc_node(height, entry_len);
        // SAFETY: `x` is fresh and unreachable by others; its entry area has `entry_len`
        // (uninitialized) bytes, which `MaybeUninit` may cover.
        let buf = unsafe {
            let p = (x as *mut u8).add(LINK + varint_len(entry_len as u64)) as *mut MaybeUninit<u8>;
            std::slice::from_raw_parts_mut(p, entry_len)
        };
        let mut w = EntryWriter { buf, pos: 0 };
        fill(&mut w);
        w.finish();
        (x, height)
    }

    /// Link `x` (height `height`, entry written) into the list using and updating `splice`.
    /// `allow_partial`: on a splice miss, walk up only the levels that do not bracket the key
    /// (good for caller hints with locality); otherwise recompute the whole splice (good for the
    /// sequential-insert cache, where a miss means no locality).
    fn insert_node(&self, x: *mut Node, height: usize, splice: &mut Splice, allow_partial: bool) -> bool {
        if splice.list_id != self.id {
            splice.list_id = self.id;
            splice.height = 0;
        }
        // Until we finish, the splice counts as invalid (a panicking comparator must not leave
        // a half-updated splice behind).
        let saved_height = splice.height;
        splice.height = 0;
        let (inserted, valid_height) = self.insert_inner(x, height, splice, saved_height, allow_partial);
        splice.height = valid_height;
        self.maybe_take_guide();
        inserted
    }

    /// Returns (inserted, splice height to keep: 0 = invalid).
    #[inline]
    fn insert_inner(
        &self,
        x: *mut Node,
        height: usize,
        splice: &mut Splice,
        splice_height: usize,
        allow_partial: bool,
    ) -> (bool, usize) {
        // SAFETY: `x`'s entry was written in `prepare` and the node lives in our arena.
        let key = self.cmp.key(unsafe { Node::entry(x) });

        let mut max_height = self.max_height.load(AO::Relaxed);
        while height > max_height {
            match self
                .max_height
                .compare_exchange_weak(max_height, height, AO::Relaxed, AO::Relaxed)
            {
                Ok(_) => {
                    max_height = height;
                    break;
                }
                Err(h) => max_height = h,
            }
        }

        // Levels below `recompute` must be searched again.
        let mut recompute = 0;
        if splice_height < max_height {
            splice.prev[max_height] = self.head;
            splice.next[max_height] = ptr::null_mut();
            recompute = max_height;
        } else {
            while recompute < max_height {
                let l = recompute;
                let (p, n) = (splice.prev[l], splice.next[l]);
                if self.next(p, l) != n {
                    // Not tight: others inserted here. Move up without spending comparisons.
                    recompute += 1;
                    continue;
                }
                if p != self.head {
                    match self.cmp_node(p, key) {
                        Ordering::Less => {}
                        Ordering::Equal => return (false, max_height),
                        Ordering::Greater => {
                            // Key is before the splice.
                            if allow_partial {
                                while splice.prev[recompute] == p {
                                    recompute += 1;
                                }
                            } else {
                                recompute = max_height;
                            }
                            continue;
                        }
                    }
                }
                if !n.is_null() {
                    match self.cmp_node(n, key) {
                        Ordering::Greater => {}
                        Ordering::Equal => return (false, max_height),
                        Ordering::Less => {
                            // Key is after the splice.
                            if allow_partial {
                                while splice.next[recompute] == n {
                                    recompute += 1;
                                }
                            } else {
                                recompute = max_height;
                            }
                            continue;
                        }
                    }
                }
                break; // this level brackets the key
            }
        }
        // A node of at most two levels needs its neighbours at levels 1 and 0 only: when the
        // whole splice must be searched again, start from the newest guide instead of the head
        // (the levels above are then stale, so the splice is not kept for the next insert).
        let mut guided = false;
        if recompute == max_height && height <= guide::GUIDE_LEVEL + 1 && max_height > guide::GUIDE_LEVEL + 1 {
            match self.guided_splice(key) {
                Some(Some((p, n))) => {
                    splice.prev[guide::GUIDE_LEVEL] = p;
                    splice.next[guide::GUIDE_LEVEL] = n;
                    recompute = guide::GUIDE_LEVEL;
                    guided = true;
                }
                Some(None) => return (false, 0),
                None => {}
            }
        }
        let keep = |h: usize| if guided { 0 } else { h };
        for i in (0..recompute).rev() {
            match self.find_splice_for_level(key, splice.prev[i + 1], splice.next[i + 1], i) {
                Some((p, n)) => {
                    splice.prev[i] = p;
                    splice.next[i] = n;
                }
                // Levels i+1.. are still a valid splice, but lower ones are not; drop it.
                None => return (false, 0),
            }
        }

        // Link bottom-up. Invariant: prev[i] < key < next[i] for every level.
        let mut splice_valid = true;
        let mut linked = height;
        'levels: for i in 0..height {
            loop {
                // SAFETY: `x` has `height` levels; level i is not yet published.
                unsafe { Node::link(x, i) }.store(splice.next[i], AO::Relaxed);
                // SAFETY: prev[i] is head or a node linked at level i.
                let pl = unsafe { Node::link(splice.prev[i], i) };
                if pl.compare_exchange(splice.next[i], x, AO::AcqRel, AO::Acquire).is_ok() {
                    break;
                }
                // Someone inserted between prev[i] and next[i]: search forward from prev[i].
                match self.find_splice_for_level(key, splice.prev[i], ptr::null_mut(), i) {
                    Some((p, n)) => {
                        splice.prev[i] = p;
                        splice.next[i] = n;
                    }
                    None if i == 0 => return (false, keep(max_height)), // duplicate, x unlinked
                    None => {
                        // Unreachable (equal keys collide at level 0); keep x shorter.
                        debug_assert!(false, "duplicate key found above level 0");
                        linked = i;
                        splice_valid = false;
                        break 'levels;
                    }
                }
                if i > 0 {
                    // Narrowing level i may break the nesting between levels i and i-1.
                    splice_valid = false;
                }
            }
        }
        if splice_valid && !guided {
            for p in &mut splice.prev[..linked] {
                *p = x;
            }
            (true, max_height)
        } else {
            (true, 0)
        }
    }

    /// At `level`, starting from `before` (< key) and knowing `after` (> key, or null for the
    /// end) follows it at some distance, find the adjacent pair (prev < key < next).
    /// Returns None if a node with an equal key exists.
    #[inline]
    fn find_splice_for_level(
        &self,
        key: &[u8],
        before: *mut Node,
        after: *mut Node,
        level: usize,
    ) -> Option<(*mut Node, *mut Node)> {
        // Without a step limit the walk never gives up: the outer None cannot occur.
        self.find_splice_within(key, before, after, level, usize::MAX).flatten()
    }

    /// [`find_splice_for_level`](Self::find_splice_for_level) that gives up (None) rather than
    /// step past more than `max_steps` nodes; `Some(None)`: a node with an equal key exists.
    #[inline]
    fn find_splice_within(
        &self,
        key: &[u8],
        mut before: *mut Node,
        after: *mut Node,
        level: usize,
        mut max_steps: usize,
    ) -> Option<Option<(*mut Node, *mut Node)>> {
        loop {
            let next = self.next(before, level);
            if next == after || next.is_null() {
                return Some(Some((before, next)));
            }
            self.prefetch_after(next, level);
            // The caller goes on one level down from `before` if `next` is too big.
            if level > 0 {
                prefetch(self.next(before, level - 1));
            }
            match self.cmp_node(next, key) {
                Ordering::Less if max_steps == 0 => return None,
                Ordering::Less => {
                    before = next;
                    max_steps -= 1;
                }
                Ordering::Greater => return Some(Some((before, next))),
                Ordering::Equal => return Some(None),
            }
        }
    }

    /// Where a descent for `key` begins: a node before it, the level to start at there, a node
    /// known to be after it (or null), and how many steps the descent may take at that level
    /// before it must restart from the head (see [`guide::GUIDE_WALK_MAX`]) — from the newest
    /// guide, else the head at the top (no limit).
    #[inline(always)]
    fn search_start(&self, key: &[u8]) -> (*mut Node, usize, *mut Node, usize) {
        match self.guide_start(key) {
            Some((start, bigger)) => (start, guide::GUIDE_LEVEL, bigger, guide::GUIDE_WALK_MAX),
            None => self.head_start(),
        }
    }

    /// A descent from the head at the top level.
    #[inline(always)]
    fn head_start(&self) -> (*mut Node, usize, *mut Node, usize) {
        (
            self.head,
            self.max_height.load(AO::Relaxed) - 1,
            ptr::null_mut(),
            usize::MAX,
        )
    }

    /// First node with key >= `key` (null if none), and whether its key is equal.
    #[inline]
    fn find_greater_or_equal(&self, key: &[u8]) -> (*mut Node, bool) {
        if let Some((s, i)) = self.directory_lower_bound(key) {
            return match s.node(i) {
                Some(n) => (n, self.cmp_node(n, key) == Ordering::Equal),
                None => (ptr::null_mut(), false),
            };
        }
        let (mut x, mut level, mut last_bigger, mut steps) = self.search_start(key);
        loop {
            let next = self.next(x, level);
            let ord = if next.is_null() || next == last_bigger {
                Ordering::Greater
            } else {
                self.prefetch_after(next, level);
                // Also start loading the node one level down: it is the next candidate if `next`
                // turns out to be too big (the link is in `x`, already in cache).
                if level > 0 {
                    prefetch(self.next(x, level - 1));
                }
                self.cmp_node(next, key)
            };
            match ord {
                Ordering::Equal => return (next, true),
                Ordering::Less if steps == 0 => (x, level, last_bigger, steps) = self.head_start(),
                Ordering::Less => {
                    x = next;
                    steps -= 1;
                }
                Ordering::Greater => {
                    if level == 0 {
                        return (next, false);
                    }
                    last_bigger = next;
                    level -= 1;
                    steps = usize::MAX;
                }
            }
        }
    }

    /// Last node with key < `key` (or <= if `inclusive`); head if none.
    #[inline]
    fn find_less_than(&self, key: &[u8], inclusive: bool) -> *mut Node {
        if let Some((s, i)) = self.directory_lower_bound(key) {
            if inclusive {
                if let Some(n) = s.node(i) {
                    if self.cmp_node(n, key) == Ordering::Equal {
                        return n;
                    }
                }
            }
            return match i.checked_sub(1).and_then(|p| s.node(p)) {
                Some(n) => n,
                None => self.head,
            };
        }
        let (mut x, mut level, mut last_not_after, mut steps) = self.search_start(key);
        loop {
            let next = self.next(x, level);
            if next != last_not_after && !next.is_null() {
                self.prefetch_after(next, level);
                if level > 0 {
                    prefetch(self.next(x, level - 1));
                }
                match self.cmp_node(next, key) {
                    Ordering::Less if steps == 0 => {
                        (x, level, last_not_after, steps) = self.head_start();
                        continue;
                    }
                    Ordering::Less => {
                        x = next;
                        steps -= 1;
                        continue;
                    }
                    Ordering::Equal if inclusive => return next,
                    _ => {}
                }
            }
            if level == 0 {
                return x;
            }
            last_not_after = next;
            level -= 1;
            steps = usize::MAX;
        }
    }

    /// Last node; head if empty.
    fn find_last(&self) -> *mut Node {
        let mut x = self.head;
        let mut level = self.max_height.load(AO::Relaxed) - 1;
        loop {
            let next = self.next(x, level);
            if !next.is_null() {
                x = next;
            } else if level == 0 {
                return x;
            } else {
                level -= 1;
            }
        }
    }

    /// Whether an entry with a key equal to `key` exists.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.find_greater_or_equal(key).1
    }

    pub(crate) fn iter(&self) -> Iter<&SkipList<C>> {
        Iter::new(self)
    }
}

/// A handle that gives access to one skiplist, used by [`Iter`] (a reference, or an owner such
/// as `Arc<MemTable>`).
///
/// # Safety
/// `list()` must return the same list every time, and that list must stay alive (not move or
/// drop) for as long as the handle exists.
pub(crate) unsafe trait ListRef {
    type Cmp: KeyComparator;
    fn list(&self) -> &SkipList<Self::Cmp>;
}

// SAFETY: a shared reference always points to the same list and keeps it alive and in place.
unsafe impl<C: KeyComparator> ListRef for &SkipList<C> {
    type Cmp = C;
    #[inline]
    fn list(&self) -> &SkipList<C> {
        self
    }
}

// SAFETY: the Arc keeps the list alive at a stable heap address.
unsafe impl<C: KeyComparator> ListRef for std::sync::Arc<SkipList<C>> {
    type Cmp = C;
    #[inline]
    fn list(&self) -> &SkipList<C> {
        self
    }
}

/// A cursor over a skiplist; sees entries inserted concurrently (each `next`/`seek` observes the
/// list at that moment). Starts invalid.
pub(crate) struct Iter<R: ListRef> {
    list: R,
    node: *mut Node,
}

// SAFETY: `node` points into the list kept alive by `list`; sending the iterator is like sending
// the handle plus a read-only position.
unsafe impl<R: ListRef + Send> Send for Iter<R> {}
// SAFETY: all methods through `&self` only read immutable entry bytes.
unsafe impl<R: ListRef + Sync> Sync for Iter<R> {}

impl<R: ListRef> Iter<R> {
    pub(crate) fn new(list: R) -> Iter<R> {
        Iter {
            list,
            node: ptr::null_mut(),
        }
    }

    pub(crate) fn handle(&self) -> &R {
        &self.list
    }

    #[inline]
    pub(crate) fn valid(&self) -> bool {
        !self.node.is_null()
    }

    /// The current entry. Panics if not valid.
    #[inline]
    pub(crate) fn entry(&self) -> &[u8] {
        assert!(self.valid(), "skiplist iterator is not valid");
        // SAFETY: `node` is a published node of `self.list`, which outlives `&self`.
        unsafe { Node::entry(self.node) }
    }
}

impl<'a, C: KeyComparator> Iter<&'a SkipList<C>> {
    /// The current entry, borrowed from the list itself (not from the iterator). Panics if
    /// not valid.
    #[inline]
    pub(crate) fn entry_in_list(&self) -> &'a [u8] {
        assert!(self.valid(), "skiplist iterator is not valid");
        // SAFETY: `node` is a published node of the list, whose entries live (unchanged, in
        // place) as long as the list, which outlives `'a`.
        unsafe { Node::entry(self.node) }
    }
}

impl<R: ListRef> Iter<R> {
    /// The current entry's key (as the comparator extracts it).
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        self.list.list().cmp.key(self.entry())
    }

    #[inline]
    pub(crate) fn next(&mut self) {
        assert!(self.valid(), "skiplist iterator is not valid");
        self.node = self.list.list().next(self.node, 0);
    }

    /// Step back: searches for the last node before the current one.
    pub(crate) fn prev(&mut self) {
        assert!(self.valid(), "skiplist iterator is not valid");
        let list = self.list.list();
        // SAFETY: as in `entry`.
        let key = list.cmp.key(unsafe { Node::entry(self.node) });
        let n = list.find_less_than(key, false);
        self.node = if n == list.head { ptr::null_mut() } else { n };
    }

    /// Position at the first entry with key >= `key`.
    #[inline]
    pub(crate) fn seek(&mut self, key: &[u8]) {
        self.node = self.list.list().find_greater_or_equal(key).0;
    }

    /// Position at the last entry with key <= `key`.
    pub(crate) fn seek_for_prev(&mut self, key: &[u8]) {
        let list = self.list.list();
        let n = list.find_less_than(key, true);
        self.node = if n == list.head { ptr::null_mut() } else { n };
    }

    pub(crate) fn seek_to_first(&mut self) {
        let list = self.list.list();
        self.node = list.next(list.head, 0);
    }

    pub(crate) fn seek_to_last(&mut self) {
        let list = self.list.list();
        let n = list.find_last();
        self.node = if n == list.head { ptr::null_mut() } else { n };
    }
}

mod guide;

#[cfg(test)]
mod tests;
