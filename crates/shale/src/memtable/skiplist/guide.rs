//! Guides: sorted samples of a *live* skiplist's tall nodes, so that a search starts a few levels
//! above the bottom instead of at the top.
//!
//! A search that misses a big memtable descends ~10 levels and loads ~30 nodes; the ~20 below the
//! top few levels are cache misses. A guide is a [`Directory`](super::Directory) over the nodes that reach
//! [`GUIDE_LEVEL`] (one in 4^GUIDE_LEVEL), taken while inserts go on. A search asks the newest
//! guide for the last sampled node before its key, `s`, and descends from `s` at `GUIDE_LEVEL`:
//! the directory costs about three cache misses where the upper levels cost about ten.
//!
//! Why it is exact with concurrent inserts: `s` is a node of the list whose key is less than the
//! target and whose height exceeds `GUIDE_LEVEL` (heights never change, nodes are never removed),
//! so the usual descent from `s` at that level finds the same answer as one from the head.
//! Nodes inserted after the guide was taken are simply walked over on the way, as they would be
//! from the head; a guide is taken again each time the list's arena has grown by half, which
//! bounds that extra walking.
//!
//! Guides are immutable once published. A replaced guide is freed once no search can still be
//! reading it (searches count themselves in per-thread-spread stripes around their use of a guide;
//! see `Guides::reclaim`), so about one guide is alive: 16 bytes per node reaching level 1 plus a
//! bucket table, ~3 % of the arena for db_bench-shaped entries. They are *not* counted in the memtable's approximate memory usage, the
//! figure compared with `write_buffer_size`, so that a memtable switches at the same number of
//! entries as RocksDB's (see `write_buffer_holds_as_many_entries_as_rocksdb`); `reserved_memory`
//! includes them. Only for bytewise-ordered user keys, like the sealed directory.

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AO};

use super::{KeyComparator, Node, Sealed, SkipList};

/// Level whose nodes a guide samples.
pub(super) const GUIDE_LEVEL: usize = 1;
/// A descent from a guide's node walks at most this many nodes at [`GUIDE_LEVEL`] before it
/// gives up and restarts from the head. Nodes inserted since the guide was taken lie in its
/// gaps; spread at random they add about half a node per gap (guides are retaken at every
/// half-growth), but inserts that crowd one gap (a hot key range, ascending keys inside the
/// range) would otherwise make every search there walk all of them.
pub(super) const GUIDE_WALK_MAX: usize = 8;
/// Arena bytes before the first guide is taken.
const FIRST_GUIDE_AT: usize = 1 << 20;
/// Fewest samples worth a guide.
const MIN_GUIDE_NODES: usize = 256;
/// Walked segments are cut at nodes reaching this level (see [`SkipList::walk_level`]).
const GUIDE_ANCHOR_LEVEL: usize = GUIDE_LEVEL + 2;
/// Reader counters per list (threads spread over them, so that readers on different cores
/// rarely write the same cache line).
const STRIPES: usize = 8;

/// One reader counter on its own cache line.
#[repr(align(64))]
struct Stripe(AtomicUsize);

/// A list's guides; see the module documentation.
pub(super) struct Guides {
    /// The newest guide (null before the first); owned (from `Box::into_raw`).
    current: AtomicPtr<Sealed>,
    /// Guides replaced by a newer one that a search may still be reading, with their heap
    /// bytes; owned. Freed once every stripe is seen at zero after they were replaced.
    retired: parking_lot::Mutex<Vec<(*mut Sealed, usize)>>,
    /// Searches in progress that may hold a guide, per stripe (boxed: 512 bytes).
    users: Box<[Stripe; STRIPES]>,
    /// Arena bytes at which the next guide is due; `usize::MAX` while one is being taken, or
    /// never again (an order that is not bytewise, a sealed list).
    next_at: AtomicUsize,
    /// Heap bytes of the guides alive (current and retired).
    memory: AtomicUsize,
    /// Guides taken so far.
    taken: AtomicUsize,
}

impl Guides {
    pub(super) fn new() -> Guides {
        Guides {
            current: AtomicPtr::new(ptr::null_mut()),
            retired: parking_lot::Mutex::new(Vec::new()),
            users: Box::new(std::array::from_fn(|_| Stripe(AtomicUsize::new(0)))),
            next_at: AtomicUsize::new(FIRST_GUIDE_AT),
            memory: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
        }
    }

    /// Free the retired guides if no search can hold one. Caller holds the `retired` lock.
    fn reclaim(&self, retired: &mut Vec<(*mut Sealed, usize)>) {
        // A search increments its stripe before it loads `current` and decrements it after its
        // last use of the guide. Every retired guide was swapped out of `current` before these
        // loads (sequentially consistent, like the searches' increment and load): a search that
        // still holds one incremented its stripe before the swap and has not decremented it yet,
        // and one that increments later loads a newer guide. A zero read from a stripe
        // synchronizes with the decrements (release), so their reads of the guide happen before
        // the free.
        if retired.is_empty() || self.users.iter().any(|s| s.0.load(AO::SeqCst) != 0) {
            return;
        }
        for (g, bytes) in retired.drain(..) {
            // SAFETY: owned (from `Box::into_raw`), out of `current`, and no search holds it
            // (above).
            drop(unsafe { Box::from_raw(g) });
            self.memory.fetch_sub(bytes, AO::Relaxed);
        }
    }
}

impl Drop for Guides {
    fn drop(&mut self) {
        let cur = *self.current.get_mut();
        if !cur.is_null() {
            // SAFETY: owned, and no search runs on a list being dropped.
            drop(unsafe { Box::from_raw(cur) });
        }
        for (g, _) in self.retired.get_mut().drain(..) {
            // SAFETY: as above.
            drop(unsafe { Box::from_raw(g) });
        }
    }
}

thread_local! {
    /// This thread's stripe.
    static STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, AO::Relaxed) % STRIPES
    };
}

impl<C: KeyComparator> SkipList<C> {
    /// Heap bytes of the guides alive.
    pub(crate) fn guide_memory(&self) -> usize {
        self.guides.memory.load(AO::Relaxed)
    }

    /// Number of guides taken so far.
    #[cfg(test)]
    pub(super) fn guides_taken(&self) -> usize {
        self.guides.taken.load(AO::Relaxed)
    }

    /// Number of replaced guides not freed yet.
    #[cfg(test)]
    pub(super) fn guides_retired(&self) -> usize {
        self.guides.retired.lock().len()
    }

    /// Where a search for `key` may start at [`GUIDE_LEVEL`]: a node (or head) before `key`, and
    /// a node known to be after it (or null). None without a guide.
    #[inline]
    pub(super) fn guide_start(&self, key: &[u8]) -> Option<(*mut Node, *mut Node)> {
        if self.guides.current.load(AO::Relaxed).is_null() {
            return None;
        }
        let ukey = self.cmp.bytewise_prefix(key)?;
        let stripe = &self.guides.users[STRIPE.try_with(|s| *s).unwrap_or(0)].0;
        stripe.fetch_add(1, AO::SeqCst);
        let g = self.guides.current.load(AO::SeqCst);
        // SAFETY: a guide is freed only when no stripe counts a search that may hold it (see
        // `Guides::reclaim`); ours counts this one until the decrement below.
        let found = unsafe { g.as_ref() }.map(|g| {
            let (i, above) = g.dir.lower_bound_above(ukey, |i| {
                g.node(i)
                    .is_some_and(|n| self.cmp_node(n, key) == std::cmp::Ordering::Less)
            });
            // Before the first sampled node or after the last, nothing bounds the walk (keys
            // inserted in ascending or descending order all land there): from the head.
            let start = g.node(i.checked_sub(1)?)?;
            let bigger = match g.node(i) {
                Some(n) if above => n,
                Some(_) => ptr::null_mut(),
                None => return None,
            };
            Some((start, bigger))
        });
        stripe.fetch_sub(1, AO::Release);
        found.flatten()
    }

    /// For an insert of a node no taller than `GUIDE_LEVEL + 1`: its neighbours at
    /// [`GUIDE_LEVEL`], found from the newest guide (the levels above do not matter to such a
    /// node). None: no guide for this key, or the walk from it reached [`GUIDE_WALK_MAX`] (then
    /// the caller descends from the head); `Some(None)`: an equal key exists.
    #[inline]
    pub(super) fn guided_splice(&self, key: &[u8]) -> Option<Option<(*mut Node, *mut Node)>> {
        let (before, after) = self.guide_start(key)?;
        self.find_splice_within(key, before, after, GUIDE_LEVEL, GUIDE_WALK_MAX)
    }

    /// After an insert: take a new guide if the arena has grown enough since the last one.
    #[inline]
    pub(super) fn maybe_take_guide(&self) {
        let due = self.guides.next_at.load(AO::Relaxed);
        let used = self.arena.allocated_bytes();
        if used < due {
            return;
        }
        // One taker at a time; the others go on.
        if self
            .guides
            .next_at
            .compare_exchange(due, usize::MAX, AO::Relaxed, AO::Relaxed)
            .is_err()
        {
            return;
        }
        let next = match self.take_guide() {
            Some(g) => {
                let bytes = g.memory();
                self.guides.memory.fetch_add(bytes, AO::Relaxed);
                let mut retired = self.guides.retired.lock();
                let old = self.guides.current.swap(Box::into_raw(Box::new(g)), AO::SeqCst);
                self.guides.taken.fetch_add(1, AO::Relaxed);
                if !old.is_null() {
                    // SAFETY: owned until retired below; only read.
                    let old_bytes = unsafe { &*old }.memory();
                    retired.push((old, old_bytes));
                }
                self.guides.reclaim(&mut retired);
                used + used / 2
            }
            None if !self.orders_bytewise() => usize::MAX,
            None => used + used / 2,
        };
        if !self.sealed.load(AO::Acquire) {
            self.guides.next_at.store(next, AO::Relaxed);
        }
    }

    /// Whether the entries' order is bytewise on a user-key prefix (judged by the first entry).
    fn orders_bytewise(&self) -> bool {
        let first = self.next(self.head, 0);
        // SAFETY: a published node of this list.
        !first.is_null()
            && self
                .cmp
                .bytewise_prefix(self.cmp.key(unsafe { Node::entry(first) }))
                .is_some()
    }

    /// Stop taking guides (the list is sealed).
    pub(super) fn stop_guides(&self) {
        self.guides.next_at.store(usize::MAX, AO::Relaxed);
    }

    /// A guide over the nodes now reaching [`GUIDE_LEVEL`].
    fn take_guide(&self) -> Option<Sealed> {
        if self.max_height.load(AO::Relaxed) <= GUIDE_LEVEL {
            return None;
        }
        let nodes = self.walk_level(GUIDE_LEVEL, GUIDE_ANCHOR_LEVEL);
        if nodes.len() < MIN_GUIDE_NODES {
            return None;
        }
        let dir = self.directory_over(&nodes)?;
        Some(Sealed { dir })
    }
}
