//! The vector memtable representation (RocksDB's `VectorRep`, `memtablerep=vector`).
//!
//! Made for bulk loads: an insert appends a pointer to the entry (encoded in the arena exactly
//! as in the skiplist) to an unsorted vector under a mutex, one push and no comparisons. The
//! entries are sorted when something first needs them in order: the first iterator or point
//! lookup, which for a bulk load is the flush of the now immutable memtable.
//!
//! Reads of a memtable that is still being written are correct but not cheap. RocksDB copies
//! and sorts the whole vector for every iterator (and so for every `Get`). Here the sorted
//! entries are kept (shared with iterators through an `Arc`) and only the entries appended
//! since the last sort are sorted and merged in, so reads without writes in between cost a
//! binary search, while each read that follows a write costs O(n) for the merge. Iterators see
//! the entries present when they were created (the skiplist's see later inserts too; readers
//! filter by sequence number, so nothing depends on that).
//!
//! Duplicates of one (user key, sequence, type) are not detected (RocksDB's `VectorRep` does
//! not either); the write path never produces them.

use std::cmp::Ordering;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering as AO};
use std::sync::Arc;

use parking_lot::Mutex;

use super::arena::Arena;
use super::key_cmp::MemKeyCmp;
use super::skiplist::{EntryWriter, KeyComparator};

/// Bytes before each entry in the arena: its u32 length.
const LEN_PREFIX: usize = 4;

/// A pointer to an entry in the arena of the [`VectorRep`] that made it: a u32 length followed
/// by that many entry bytes, written once before the pointer is published and never changed.
#[derive(Clone, Copy)]
pub(crate) struct EntryRef(NonNull<u8>);

// SAFETY: an EntryRef is a read-only pointer into arena memory that is immutable after
// publication; the arena (Send + Sync) outlives every use (see `VectorRep::entry`).
unsafe impl Send for EntryRef {}
// SAFETY: as above.
unsafe impl Sync for EntryRef {}

/// Sorted entries, shared by the representation and its iterators.
pub(crate) type SortedEntries = Arc<Vec<EntryRef>>;

struct State {
    /// Entries appended since the last sort, in arrival order.
    unsorted: Vec<EntryRef>,
    /// All other entries, in key order.
    sorted: SortedEntries,
}

/// See the module documentation.
pub(crate) struct VectorRep {
    cmp: MemKeyCmp,
    arena: Arena,
    state: Mutex<State>,
    count: AtomicUsize,
}

impl VectorRep {
    pub(crate) fn new(cmp: MemKeyCmp, arena_block_size: usize) -> VectorRep {
        VectorRep {
            cmp,
            arena: Arena::new(arena_block_size),
            state: Mutex::new(State {
                unsorted: Vec::new(),
                sorted: Arc::new(Vec::new()),
            }),
            count: AtomicUsize::new(0),
        }
    }

    pub(crate) fn comparator(&self) -> &MemKeyCmp {
        &self.cmp
    }

    /// The bytes of `e`.
    ///
    /// `e` must come from this representation (every `EntryRef` handed out does); the returned
    /// slice lives as long as `&self`, and so as long as the arena.
    #[inline(always)]
    pub(crate) fn entry(&self, e: EntryRef) -> &[u8] {
        // SAFETY: `e` points at a LEN_PREFIX-byte length and the entry bytes after it, written
        // in `insert_with` before `e` was published (under the state mutex, which orders the
        // writes before any reader that obtained `e` through the mutex); the arena never frees
        // or moves memory before it drops, and it drops with `self`. The prefix is 4-aligned
        // (arena allocations are 8-aligned).
        unsafe {
            let p = e.0.as_ptr();
            let len = *(p as *const u32) as usize;
            std::slice::from_raw_parts(p.add(LEN_PREFIX), len)
        }
    }

    /// Append an entry of `entry_len` bytes written by `fill` (see [`EntryWriter`]). Always
    /// succeeds (returns true).
    #[inline]
    pub(crate) fn insert_with(&self, entry_len: usize, fill: impl FnOnce(&mut EntryWriter<'_>)) -> bool {
        let len32 = u32::try_from(entry_len).expect("memtable entry larger than 4 GiB");
        let p = self.arena.allocate_aligned(LEN_PREFIX + entry_len);
        // SAFETY: the allocation is LEN_PREFIX + entry_len bytes, 8-aligned and exclusively
        // ours until published below; `MaybeUninit` may cover its uninitialized bytes.
        let buf = unsafe {
            std::ptr::write(p.as_ptr() as *mut u32, len32);
            let e = p.as_ptr().add(LEN_PREFIX) as *mut MaybeUninit<u8>;
            std::slice::from_raw_parts_mut(e, entry_len)
        };
        let mut w = EntryWriter::new(buf);
        fill(&mut w);
        w.finish();
        self.state.lock().unsorted.push(EntryRef(p));
        self.count.fetch_add(1, AO::Relaxed);
        true
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count.load(AO::Relaxed) == 0
    }

    /// All entries in key order: sorts what was appended since the last call and merges it
    /// into the kept sorted entries.
    pub(crate) fn sorted(&self) -> SortedEntries {
        let mut st = self.state.lock();
        if st.unsorted.is_empty() {
            return st.sorted.clone();
        }
        // Sorted from a copy: the comparator is the user's and may panic (the panic becomes an
        // error further up), and the entries must stay in the memtable when it does. They
        // leave `unsorted` only once they are in `sorted`.
        let mut tail = st.unsorted.clone();
        let cmp = |a: &EntryRef, b: &EntryRef| self.compare_entries(*a, *b);
        tail.sort_unstable_by(cmp);
        let merged = if st.sorted.is_empty() {
            tail
        } else {
            let old = &st.sorted;
            let mut out = Vec::with_capacity(old.len() + tail.len());
            let (mut i, mut j) = (0, 0);
            while i < old.len() && j < tail.len() {
                if cmp(&tail[j], &old[i]) == Ordering::Less {
                    out.push(tail[j]);
                    j += 1;
                } else {
                    out.push(old[i]);
                    i += 1;
                }
            }
            out.extend_from_slice(&old[i..]);
            out.extend_from_slice(&tail[j..]);
            out
        };
        st.sorted = Arc::new(merged);
        st.unsorted.clear();
        st.sorted.clone()
    }

    #[inline]
    fn compare_entries(&self, a: EntryRef, b: EntryRef) -> Ordering {
        self.cmp
            .compare(self.cmp.key(self.entry(a)), self.cmp.key(self.entry(b)))
    }

    /// Index of the first entry of `sorted` whose key is >= `key`.
    #[inline]
    pub(crate) fn lower_bound(&self, sorted: &[EntryRef], key: &[u8]) -> usize {
        sorted.partition_point(|&e| self.cmp.compare(self.cmp.key(self.entry(e)), key) == Ordering::Less)
    }

    /// Index just past the last entry of `sorted` whose key is <= `key`.
    #[inline]
    pub(crate) fn upper_bound(&self, sorted: &[EntryRef], key: &[u8]) -> usize {
        sorted.partition_point(|&e| self.cmp.compare(self.cmp.key(self.entry(e)), key) != Ordering::Greater)
    }

    /// Bytes reserved from the allocator: arena blocks plus the pointer vectors.
    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.memory_usage() + self.pointer_bytes()
    }

    /// Bytes consumed: arena bytes in use plus the pointer vectors.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes() + self.pointer_bytes()
    }

    fn pointer_bytes(&self) -> usize {
        self.count.load(AO::Relaxed) * std::mem::size_of::<EntryRef>()
    }
}
