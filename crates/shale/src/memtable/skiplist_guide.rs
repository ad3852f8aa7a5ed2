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
//! Guides are immutable once published and are kept until the list drops (a search may still be
//! reading an older one): about three times the newest one's size, under 2 % of the arena for
//! db_bench-shaped entries. They are *not* counted in the memtable's approximate memory usage, the
//! figure compared with `write_buffer_size`, so that a memtable switches at the same number of
//! entries as RocksDB's (see `write_buffer_holds_as_many_entries_as_rocksdb`); `reserved_memory`
//! includes them. Only for bytewise-ordered user keys, like the sealed directory.

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as AO};

use super::{KeyComparator, Node, Sealed, SkipList};

/// Level whose nodes a guide samples.
pub(super) const GUIDE_LEVEL: usize = 2;
/// Arena bytes before the first guide is taken.
const FIRST_GUIDE_AT: usize = 1 << 20;
/// Fewest samples worth a guide.
const MIN_GUIDE_NODES: usize = 256;
/// Walked segments are cut at nodes reaching this level (see [`SkipList::walk_level`]).
const GUIDE_ANCHOR_LEVEL: usize = GUIDE_LEVEL + 2;

/// A list's guides; see the module documentation.
pub(super) struct Guides {
    /// The newest guide (null before the first).
    current: AtomicPtr<Sealed>,
    /// Every guide taken, newest last; owns what `current` points to. Boxed so that a guide
    /// stays in place when the vector grows.
    #[allow(clippy::vec_box)]
    all: parking_lot::Mutex<Vec<Box<Sealed>>>,
    /// Arena bytes at which the next guide is due; `usize::MAX` while one is being taken, or
    /// never again (an order that is not bytewise, a sealed list).
    next_at: AtomicUsize,
    /// Heap bytes of all guides.
    memory: AtomicUsize,
}

impl Guides {
    pub(super) fn new() -> Guides {
        Guides {
            current: AtomicPtr::new(ptr::null_mut()),
            all: parking_lot::Mutex::new(Vec::new()),
            next_at: AtomicUsize::new(FIRST_GUIDE_AT),
            memory: AtomicUsize::new(0),
        }
    }
}

impl<C: KeyComparator> SkipList<C> {
    /// Heap bytes of the guides.
    pub(crate) fn guide_memory(&self) -> usize {
        self.guides.memory.load(AO::Relaxed)
    }

    /// Number of guides taken so far.
    #[cfg(test)]
    pub(super) fn guides_taken(&self) -> usize {
        self.guides.all.lock().len()
    }

    /// Where a search for `key` may start at [`GUIDE_LEVEL`]: a node (or head) before `key`, and
    /// a node known to be after it (or null). None without a guide.
    #[inline]
    pub(super) fn guide_start(&self, key: &[u8]) -> Option<(*mut Node, *mut Node)> {
        let g = self.guides.current.load(AO::Acquire);
        if g.is_null() {
            return None;
        }
        // SAFETY: published guides are never freed or changed before the list drops.
        let g = unsafe { &*g };
        let ukey = self.cmp.bytewise_prefix(key)?;
        let (i, above) = g
            .dir
            .lower_bound_above(ukey, |i| self.cmp_node(g.nodes[i], key) == std::cmp::Ordering::Less);
        let start = if i == 0 { self.head } else { g.nodes[i - 1] };
        let bigger = match g.nodes.get(i) {
            Some(&n) if above => n,
            _ => ptr::null_mut(),
        };
        Some((start, bigger))
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
                let bytes = g.dir.memory_usage() + g.nodes.capacity() * std::mem::size_of::<*mut Node>();
                let mut all = self.guides.all.lock();
                all.push(Box::new(g));
                let newest: &Sealed = all.last().expect("just pushed");
                self.guides
                    .current
                    .store(newest as *const Sealed as *mut Sealed, AO::Release);
                self.guides.memory.fetch_add(bytes, AO::Relaxed);
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
        Some(Sealed { dir, nodes })
    }
}
