//! The merging iterator: sorted children merged into one sorted stream (both directions).

use crate::perf_context::field as perf;
use std::cmp::Ordering;

use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::key::InternalKeyComparator;

/// Merges sorted children into one sorted stream (both directions), as LevelDB's merger.
/// Forward iteration keeps a binary min-heap of the valid children (ties broken by child
/// index, so the newest source wins as with a linear scan): `next()` costs one sift-down
/// (about log2(children) comparisons, often one) instead of a scan over every child.
/// Reverse iteration scans linearly.
pub(crate) struct MergingIterator {
    icmp: InternalKeyComparator,
    children: Vec<Box<dyn InternalIterator>>,
    /// Each child's current key (None when invalid), refreshed after every move of that child
    /// (as RocksDB's `IteratorWrapper`): comparisons need no virtual calls.
    keys: Vec<Option<KeyRef>>,
    current: Option<usize>,
    dir: Dir,
    /// Forward only: indices of the valid children, a min-heap by (key, index).
    heap: Vec<usize>,
    /// The first error of a child since the last seek: the merged stream is then invalid (as
    /// RocksDB's `MergingIterator`), so a failed read never silently drops a child's keys.
    err: Option<crate::error::Error>,
    /// How many of the first children are memtables (for the perf context's memtable counts).
    mems: usize,
}

/// A child's current key, borrowed from the child. Children are boxed and only moved through
/// `MergingIterator`, which refreshes the reference after each move, and an iterator's
/// `key()` stays valid until the iterator is moved.
#[derive(Clone, Copy)]
struct KeyRef {
    ptr: *const u8,
    len: usize,
}

// SAFETY: a KeyRef points into the child iterator it was taken from, which is Send and moves
// together with the MergingIterator that owns both.
unsafe impl Send for KeyRef {}

impl MergingIterator {
    pub(crate) fn new(icmp: InternalKeyComparator, children: Vec<Box<dyn InternalIterator>>) -> Self {
        let heap = Vec::with_capacity(children.len());
        let keys = vec![None; children.len()];
        MergingIterator {
            icmp,
            children,
            keys,
            current: None,
            dir: Dir::Forward,
            heap,
            err: None,
            mems: 0,
        }
    }

    /// The first `n` children are memtables.
    pub(crate) fn set_memtable_children(&mut self, n: usize) {
        self.mems = n;
    }

    /// Perf context counts of one seek of every child.
    #[inline]
    fn count_seek(&self) {
        if crate::perf_context::counting() {
            crate::perf_context::add_unchecked(perf::SEEK_CHILD_SEEK_COUNT, self.children.len() as u64);
            crate::perf_context::add_unchecked(perf::SEEK_ON_MEMTABLE_COUNT, self.mems as u64);
        }
    }
    /// Re-read child `i`'s validity and key after it moved (and latch its error, if any).
    #[inline]
    fn refresh(&mut self, i: usize) {
        let c = &self.children[i];
        self.keys[i] = if c.valid() {
            let k = c.key();
            Some(KeyRef {
                ptr: k.as_ptr(),
                len: k.len(),
            })
        } else {
            if self.err.is_none() {
                if let Err(e) = c.status() {
                    self.err = Some(e);
                }
            }
            None
        };
    }
    fn refresh_all(&mut self) {
        for i in 0..self.children.len() {
            self.refresh(i);
        }
    }
    /// Start a seek: unpositioned, with no child key held, before any child moves or the user
    /// comparator runs. A panic caught above then leaves an invalid iterator, never one whose
    /// `keys` point into positions the children have left (or tables they have closed).
    fn invalidate(&mut self) {
        self.current = None;
        self.heap.clear();
        self.keys.fill(None);
        self.err = None;
    }
    #[inline]
    fn child_valid(&self, i: usize) -> bool {
        self.keys[i].is_some()
    }
    /// Child `i`'s current key (it must be valid).
    #[inline]
    fn ckey(&self, i: usize) -> &[u8] {
        match self.keys[i] {
            // SAFETY: see `KeyRef`: the child has not moved since `refresh(i)` took this
            // reference, so its key is still alive and unchanged.
            Some(k) => unsafe { std::slice::from_raw_parts(k.ptr, k.len) },
            None => &[],
        }
    }
    /// Whether child `a` orders before child `b` (both valid).
    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        match self.icmp.compare(self.ckey(a), self.ckey(b)) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a < b,
        }
    }
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let mut m = l;
            if r < n && self.less(self.heap[r], self.heap[l]) {
                m = r;
            }
            if self.less(self.heap[m], self.heap[i]) {
                self.heap.swap(i, m);
                i = m;
            } else {
                break;
            }
        }
    }
    /// Rebuild the heap from every valid child and point `current` at the smallest.
    fn find_smallest(&mut self) {
        self.heap.clear();
        for i in 0..self.children.len() {
            if self.child_valid(i) {
                self.heap.push(i);
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
        self.current = self.heap.first().copied();
    }
    fn find_largest(&mut self) {
        self.heap.clear();
        let mut best: Option<usize> = None;
        for i in (0..self.children.len()).rev() {
            if !self.child_valid(i) {
                continue;
            }
            best = match best {
                None => Some(i),
                Some(b) => {
                    if self.icmp.compare(self.ckey(i), self.ckey(b)) == Ordering::Greater {
                        Some(i)
                    } else {
                        Some(b)
                    }
                }
            };
        }
        self.current = best;
    }
}

impl InternalIterator for MergingIterator {
    fn valid(&self) -> bool {
        self.current.is_some() && self.err.is_none()
    }
    fn seek_to_first(&mut self) {
        self.count_seek();
        self.invalidate();
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.refresh_all();
        self.dir = Dir::Forward;
        self.find_smallest();
    }
    fn seek_to_last(&mut self) {
        self.count_seek();
        self.invalidate();
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.refresh_all();
        self.find_largest();
        self.dir = Dir::Reverse;
    }
    fn seek(&mut self, target: &[u8]) {
        self.count_seek();
        self.invalidate();
        for c in &mut self.children {
            c.seek(target);
        }
        self.refresh_all();
        self.dir = Dir::Forward;
        self.find_smallest();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.count_seek();
        self.invalidate();
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.refresh_all();
        self.find_largest();
        self.dir = Dir::Reverse;
    }
    fn next(&mut self) {
        // Unpositioned until this move completes (see `invalidate`).
        let cur = match self.current.take() {
            Some(c) => c,
            None => return,
        };
        if self.dir != Dir::Forward {
            let key = self.ckey(cur).to_vec();
            for i in 0..self.children.len() {
                if i == cur {
                    continue;
                }
                let c = &mut self.children[i];
                c.seek(&key);
                if c.valid() && self.icmp.compare(&key, c.key()) == Ordering::Equal {
                    c.next();
                }
            }
            self.dir = Dir::Forward;
            self.children[cur].next();
            self.refresh_all();
            self.find_smallest();
            return;
        }
        // Forward: `cur` is the heap's top.
        debug_assert_eq!(self.heap.first(), Some(&cur));
        if cur < self.mems {
            crate::perf_context::add(perf::NEXT_ON_MEMTABLE_COUNT, 1);
        }
        self.children[cur].next();
        self.refresh(cur);
        if !self.child_valid(cur) {
            let last = self.heap.pop();
            if !self.heap.is_empty() {
                if let Some(l) = last {
                    self.heap[0] = l;
                }
            }
        }
        self.sift_down(0);
        self.current = self.heap.first().copied();
    }
    fn prev(&mut self) {
        // Unpositioned until this move completes (see `invalidate`).
        let cur = match self.current.take() {
            Some(c) => c,
            None => return,
        };
        if self.dir != Dir::Reverse {
            let key = self.ckey(cur).to_vec();
            for i in 0..self.children.len() {
                if i == cur {
                    continue;
                }
                let c = &mut self.children[i];
                c.seek(&key);
                if c.valid() {
                    c.prev();
                } else if c.status().is_ok() {
                    // Nothing at or after the key: the child's last entry precedes it. (After
                    // a failed seek the child stays invalid and its error is latched.)
                    c.seek_to_last();
                }
                self.refresh(i);
            }
            self.dir = Dir::Reverse;
        }
        if cur < self.mems {
            crate::perf_context::add(perf::PREV_ON_MEMTABLE_COUNT, 1);
        }
        self.children[cur].prev();
        self.refresh(cur);
        self.find_largest();
    }
    fn key(&self) -> &[u8] {
        match self.current {
            Some(c) => self.ckey(c),
            None => &[],
        }
    }
    fn value(&self) -> &[u8] {
        match self.current {
            Some(c) => self.children[c].value(),
            None => &[],
        }
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        for c in &self.children {
            c.status()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::error::Error;
    use crate::key::{make_internal_key, user_key, vt};

    /// A sorted in-memory child.
    struct VecIter {
        icmp: InternalKeyComparator,
        items: Vec<(Vec<u8>, Vec<u8>)>,
        pos: Option<usize>,
    }
    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos.is_some()
        }
        fn seek_to_first(&mut self) {
            self.pos = if self.items.is_empty() { None } else { Some(0) };
        }
        fn seek_to_last(&mut self) {
            self.pos = self.items.len().checked_sub(1);
        }
        fn seek(&mut self, t: &[u8]) {
            self.pos = self
                .items
                .iter()
                .position(|(k, _)| self.icmp.compare(k, t) != Ordering::Less);
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            self.pos = self
                .items
                .iter()
                .rposition(|(k, _)| self.icmp.compare(k, t) != Ordering::Greater);
        }
        fn next(&mut self) {
            self.pos = self
                .pos
                .and_then(|p| if p + 1 < self.items.len() { Some(p + 1) } else { None });
        }
        fn prev(&mut self) {
            self.pos = self.pos.and_then(|p| p.checked_sub(1));
        }
        fn key(&self) -> &[u8] {
            &self.items[self.pos.unwrap()].0
        }
        fn value(&self) -> &[u8] {
            &self.items[self.pos.unwrap()].1
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    /// A child whose seeks fail (invalid, with an I/O error) while `fail_seeks` > 0, or panic
    /// (a user comparator's bug) while `panic_when` is set.
    struct FlakyIter {
        inner: VecIter,
        fail_seeks: Arc<std::sync::atomic::AtomicUsize>,
        err: Option<Error>,
        panic_when: Option<Arc<std::sync::atomic::AtomicBool>>,
    }
    impl FlakyIter {
        fn fail(&mut self) -> bool {
            use std::sync::atomic::Ordering::SeqCst;
            assert!(
                !self.panic_when.as_ref().is_some_and(|p| p.load(SeqCst)),
                "comparator bug"
            );
            if self.fail_seeks.load(SeqCst) > 0 {
                self.fail_seeks.fetch_sub(1, SeqCst);
                self.inner.pos = None;
                self.err = Some(Error::io("flaky.sst", std::io::Error::other("injected")));
                return true;
            }
            self.err = None;
            false
        }
    }
    impl InternalIterator for FlakyIter {
        fn valid(&self) -> bool {
            self.err.is_none() && self.inner.valid()
        }
        fn seek_to_first(&mut self) {
            self.err = None;
            self.inner.seek_to_first()
        }
        fn seek_to_last(&mut self) {
            self.err = None;
            self.inner.seek_to_last()
        }
        fn seek(&mut self, t: &[u8]) {
            if !self.fail() {
                self.inner.seek(t)
            }
        }
        fn seek_for_prev(&mut self, t: &[u8]) {
            if !self.fail() {
                self.inner.seek_for_prev(t)
            }
        }
        fn next(&mut self) {
            self.inner.next()
        }
        fn prev(&mut self) {
            self.inner.prev()
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
        fn status(&self) -> Result<()> {
            self.err.clone().map_or(Ok(()), Err)
        }
    }

    /// A child whose seek fails while the merged iterator turns from forward to backward must
    /// not be repositioned at its last entry (which lies after the current key): the merged
    /// iterator becomes invalid with the child's error, and a new seek clears it.
    #[test]
    fn a_child_error_when_turning_backward_invalidates_the_merged_iterator() {
        let icmp = InternalKeyComparator::default();
        let ik = |k: &str| make_internal_key(k.as_bytes(), 1, crate::key::vt::VALUE);
        let vec_iter = |keys: &[&str]| VecIter {
            icmp: icmp.clone(),
            items: keys.iter().map(|k| (ik(k), k.as_bytes().to_vec())).collect(),
            pos: None,
        };
        let fail_seeks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let flaky = FlakyIter {
            inner: vec_iter(&["b", "d"]),
            fail_seeks: fail_seeks.clone(),
            err: None,
            panic_when: None,
        };
        let mut m = MergingIterator::new(icmp.clone(), vec![Box::new(vec_iter(&["a", "c"])), Box::new(flaky)]);
        m.seek_to_first();
        m.next();
        m.next();
        assert_eq!(user_key(m.key()), b"c");
        fail_seeks.store(1, std::sync::atomic::Ordering::SeqCst);
        m.prev();
        assert!(
            !m.valid(),
            "positioned at {:?} after a failed seek",
            String::from_utf8_lossy(user_key(m.key()))
        );
        assert!(m.status().is_err());
        // A new seek starts over without the error.
        m.seek_for_prev(&ik("c"));
        assert!(m.valid() && m.status().is_ok());
        assert_eq!(user_key(m.key()), b"c");
        m.prev();
        assert_eq!(user_key(m.key()), b"b");
    }

    /// A child whose seeks panic while `armed` (a user comparator with a bug).
    /// A child that panics in a seek, after an earlier child has already moved, leaves the
    /// merged iterator invalid (its held keys belong to positions the children left); a new
    /// seek works once the panics stop.
    #[test]
    fn a_panic_in_a_child_seek_leaves_the_merged_iterator_invalid() {
        let icmp = InternalKeyComparator::default();
        let ik = |k: &str| make_internal_key(k.as_bytes(), 1, vt::VALUE);
        let vec_iter = |keys: &[&str]| VecIter {
            icmp: icmp.clone(),
            items: keys.iter().map(|k| (ik(k), k.as_bytes().to_vec())).collect(),
            pos: None,
        };
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let panicky = FlakyIter {
            inner: vec_iter(&["b", "d", "f"]),
            fail_seeks: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            err: None,
            panic_when: Some(armed.clone()),
        };
        let mut m = MergingIterator::new(
            icmp.clone(),
            vec![Box::new(vec_iter(&["a", "c", "e"])), Box::new(panicky)],
        );
        type Op = fn(&mut MergingIterator, &[u8]);
        // (name, positioning before, the move that panics)
        let cases: [(&str, Op, Op); 4] = [
            (
                "seek",
                |m, t| m.seek(t),
                |m, _| m.seek(&make_internal_key(b"e", 1, vt::VALUE)),
            ),
            (
                "seek_for_prev",
                |m, t| m.seek(t),
                |m, _| m.seek_for_prev(&make_internal_key(b"e", 1, vt::VALUE)),
            ),
            ("prev turning backward", |m, t| m.seek(t), |m, _| m.prev()),
            ("next turning forward", |m, t| m.seek_for_prev(t), |m, _| m.next()),
        ];
        for (name, before, op) in cases {
            before(&mut m, &ik("c"));
            assert_eq!(user_key(m.key()), b"c", "{name}");
            armed.store(true, std::sync::atomic::Ordering::SeqCst);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op(&mut m, &[])));
            assert!(r.is_err(), "{name}: the child panicked");
            armed.store(false, std::sync::atomic::Ordering::SeqCst);
            assert!(!m.valid(), "{name}: still positioned after a panic in a seek");
            assert!(m.key().is_empty() && m.value().is_empty(), "{name}");
            m.next();
            m.prev();
            assert!(!m.valid(), "{name}");
            m.seek(&ik("d"));
            assert_eq!(user_key(m.key()), b"d", "{name}");
            m.next();
            assert_eq!(user_key(m.key()), b"e", "{name}");
        }
    }

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(seed: u64, nchildren: usize) -> (MergingIterator, Entries) {
        let icmp = InternalKeyComparator::default();
        let mut x = seed;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut all = Vec::new();
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        let mut seq = 1u64;
        for c in 0..nchildren {
            let n = (rnd() % 50) as usize;
            let mut items: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                .map(|_| {
                    seq += 1;
                    let k = make_internal_key(format!("k{:03}", rnd() % 100).as_bytes(), seq, vt::VALUE);
                    (k, format!("v{c}").into_bytes())
                })
                .collect();
            items.sort_by(|a, b| icmp.compare(&a.0, &b.0));
            all.extend(items.iter().cloned());
            children.push(Box::new(VecIter {
                icmp: icmp.clone(),
                items,
                pos: None,
            }));
        }
        all.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        (MergingIterator::new(icmp, children), all)
    }

    #[test]
    fn heap_merge_matches_sorted_union() {
        for seed in 1..60u64 {
            let (mut m, all) = build(seed * 7919, (seed % 9) as usize);
            let mut got = Vec::new();
            m.seek_to_first();
            while m.valid() {
                got.push((m.key().to_vec(), m.value().to_vec()));
                m.next();
            }
            assert_eq!(got, all, "seed {seed}");
            // reverse, then direction changes in the middle
            let mut back = Vec::new();
            m.seek_to_last();
            while m.valid() {
                back.push(m.key().to_vec());
                m.prev();
            }
            back.reverse();
            assert_eq!(back, all.iter().map(|e| e.0.clone()).collect::<Vec<_>>(), "seed {seed}");
            if all.len() > 4 {
                let mid = &all[all.len() / 2].0;
                m.seek(mid);
                assert_eq!(m.key(), &mid[..]);
                m.next();
                m.prev();
                assert_eq!(m.key(), &mid[..]);
                m.prev();
                m.next();
                assert_eq!(m.key(), &mid[..]);
                let mut rest = 0;
                while m.valid() {
                    rest += 1;
                    m.next();
                }
                assert_eq!(rest, all.len() - all.len() / 2, "seed {seed}");
            }
        }
    }

    #[test]
    fn equal_keys_prefer_lower_child() {
        let icmp = InternalKeyComparator::default();
        let k = make_internal_key(b"a", 5, vt::VALUE);
        let mk = |v: &str| -> Box<dyn InternalIterator> {
            Box::new(VecIter {
                icmp: icmp.clone(),
                items: vec![(k.clone(), v.as_bytes().to_vec())],
                pos: None,
            })
        };
        let mut m = MergingIterator::new(icmp.clone(), vec![mk("0"), mk("1"), mk("2")]);
        m.seek_to_first();
        let mut vs = Vec::new();
        while m.valid() {
            vs.push(m.value().to_vec());
            m.next();
        }
        assert_eq!(vs, vec![b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);
    }
}

/// The direction an iterator moves in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dir {
    Forward,
    Reverse,
}
