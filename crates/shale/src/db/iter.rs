//! Iterators: a merging iterator over memtables and tables, a level iterator that opens the
//! files of one sorted level lazily, and the user-facing iterator that applies snapshots,
//! deletions and bounds. Iterators own an `Arc` pin of the data, never a borrow of the DB.

use std::cmp::Ordering;
use std::sync::Arc;

use super::version::FileMeta;
use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{append_internal_key, parse_internal_key, user_key, vt, InternalKeyComparator, MAX_SEQUENCE};
use crate::options::ReadOptions;
use crate::table::any::AnyTableIterator;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dir {
    Forward,
    Reverse,
}

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
        self.err = None;
        for c in &mut self.children {
            c.seek_to_first();
        }
        self.refresh_all();
        self.dir = Dir::Forward;
        self.find_smallest();
    }
    fn seek_to_last(&mut self) {
        self.err = None;
        for c in &mut self.children {
            c.seek_to_last();
        }
        self.refresh_all();
        self.find_largest();
        self.dir = Dir::Reverse;
    }
    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        for c in &mut self.children {
            c.seek(target);
        }
        self.refresh_all();
        self.dir = Dir::Forward;
        self.find_smallest();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = None;
        for c in &mut self.children {
            c.seek_for_prev(target);
        }
        self.refresh_all();
        self.find_largest();
        self.dir = Dir::Reverse;
    }
    fn next(&mut self) {
        let cur = match self.current {
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
        let cur = match self.current {
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

/// Iterates the files of one sorted level (L1+), opening each table only when reached.
pub(crate) struct LevelIterator {
    db: Arc<DbInner>,
    files: Vec<Arc<FileMeta>>,
    idx: usize,
    cur: Option<AnyTableIterator>,
    verify: bool,
    fill: bool,
    err: Option<Error>,
}

impl LevelIterator {
    pub(crate) fn new(db: Arc<DbInner>, files: Vec<Arc<FileMeta>>, verify: bool, fill: bool) -> Self {
        LevelIterator {
            db,
            files,
            idx: 0,
            cur: None,
            verify,
            fill,
            err: None,
        }
    }
    fn open(&mut self, idx: usize) -> bool {
        self.idx = idx;
        self.cur = None;
        let f = match self.files.get(idx) {
            Some(f) => f,
            None => return false,
        };
        match self.db.table_cache.get(f) {
            Ok(t) => {
                self.cur = Some(t.iter(self.verify, self.fill));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }
    fn skip_forward(&mut self) {
        loop {
            match &self.cur {
                Some(c) if c.valid() => return,
                Some(c) => {
                    if let Err(e) = c.status() {
                        self.err = Some(e);
                        self.cur = None;
                        return;
                    }
                }
                None => return,
            }
            if !self.open(self.idx + 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = &mut self.cur {
                c.seek_to_first();
            }
        }
    }
    fn skip_backward(&mut self) {
        loop {
            match &self.cur {
                Some(c) if c.valid() => return,
                Some(c) => {
                    if let Err(e) = c.status() {
                        self.err = Some(e);
                        self.cur = None;
                        return;
                    }
                }
                None => return,
            }
            if self.idx == 0 || !self.open(self.idx - 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = &mut self.cur {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for LevelIterator {
    fn valid(&self) -> bool {
        self.cur.as_ref().map(|c| c.valid()).unwrap_or(false)
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = &mut self.cur {
                c.seek_to_first();
            }
            self.skip_forward();
        }
    }
    fn seek_to_last(&mut self) {
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
            if let Some(c) = &mut self.cur {
                c.seek_to_last();
            }
            self.skip_backward();
        }
    }
    fn seek(&mut self, target: &[u8]) {
        let icmp = &self.db.icmp;
        let i = self
            .files
            .partition_point(|f| icmp.compare(&f.meta.largest, target) == Ordering::Less);
        if self.open(i) {
            if let Some(c) = &mut self.cur {
                c.seek(target);
            }
            self.skip_forward();
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.files.is_empty() {
            self.cur = None;
            return;
        }
        let icmp = &self.db.icmp;
        let mut i = self
            .files
            .partition_point(|f| icmp.compare(&f.meta.largest, target) == Ordering::Less);
        if i >= self.files.len() {
            i = self.files.len() - 1;
        }
        if self.open(i) {
            if let Some(c) = &mut self.cur {
                c.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }
    fn next(&mut self) {
        if let Some(c) = &mut self.cur {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = &mut self.cur {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        match &self.cur {
            Some(c) => c.status(),
            None => Ok(()),
        }
    }
}

/// Build the merged internal iterator over a SuperVersion.
pub(crate) fn internal_iterator(db: &Arc<DbInner>, sv: &SuperVersion, verify: bool, fill: bool) -> MergingIterator {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    children.push(Box::new(sv.mem.iter()));
    for m in &sv.imm {
        children.push(Box::new(m.iter()));
    }
    for f in &sv.version.files[0] {
        match db.table_cache.get(f) {
            Ok(t) => children.push(Box::new(t.iter(verify, fill))),
            Err(e) => children.push(Box::new(crate::iterator::EmptyIterator(Some(e)))),
        }
    }
    for level in 1..sv.version.num_levels() {
        if !sv.version.files[level].is_empty() {
            children.push(Box::new(LevelIterator::new(
                db.clone(),
                sv.version.files[level].clone(),
                verify,
                fill,
            )));
        }
    }
    MergingIterator::new(db.icmp.clone(), children)
}

/// The user-facing cursor (RocksDB's `DBIter`): hides old versions and deletions, honours the
/// snapshot and the bounds.
pub struct DBRawIterator {
    inner: MergingIterator,
    icmp: InternalKeyComparator,
    seq: u64,
    dir: Dir,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    err: Option<Error>,
    scratch: Vec<u8>,
    /// Range tombstones of every source that has any (empty: no check at all).
    tombs: Vec<Arc<crate::range_del::FragmentedRangeTombstoneList>>,
    merge_op: Option<Arc<dyn crate::merge::MergeOperator>>,
    /// Forward and positioned on a merged value: the key and value are in `saved_*` and
    /// `inner` is past the key's entries.
    merged: bool,
    operands: Vec<Vec<u8>>,
    _sv: Arc<SuperVersion>,
    _snapshot: Option<super::Snapshot>,
}

pub(crate) fn new_raw_iterator(db: &Arc<DbInner>, ro: ReadOptions) -> DBRawIterator {
    let seq = super::read::read_seq(db, &ro);
    let sv = db.super_version();
    let inner = internal_iterator(db, &sv, ro.verify_checksums, ro.fill_cache);
    let (tombs, err) = match super::range_del::all_tombstone_lists(db, &sv) {
        Ok(t) => (t, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    DBRawIterator {
        tombs,
        merge_op: db.opts.merge_operator.clone(),
        merged: false,
        operands: Vec::new(),
        inner,
        icmp: db.icmp.clone(),
        seq,
        dir: Dir::Forward,
        valid: false,
        saved_key: Vec::new(),
        saved_value: Vec::new(),
        lower: ro.iterate_lower_bound,
        upper: ro.iterate_upper_bound,
        err,
        scratch: Vec::new(),
        _sv: sv,
        _snapshot: ro.snapshot,
    }
}

impl DBRawIterator {
    pub fn valid(&self) -> bool {
        self.valid
    }
    /// The current key, or `None` when not positioned.
    pub fn key(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        Some(match self.dir {
            Dir::Forward if !self.merged => user_key(self.inner.key()),
            _ => &self.saved_key,
        })
    }
    /// The current value, or `None` when not positioned.
    pub fn value(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        Some(match self.dir {
            Dir::Forward if !self.merged => self.inner.value(),
            _ => &self.saved_value,
        })
    }
    /// The first error met, if any (the iterator is then invalid).
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.inner.status()
    }

    fn above_upper(&self, uk: &[u8]) -> bool {
        self.upper
            .as_deref()
            .map(|u| self.icmp.compare_user(uk, u) != Ordering::Less)
            .unwrap_or(false)
    }
    fn below_lower(&self, uk: &[u8]) -> bool {
        self.lower
            .as_deref()
            .map(|l| self.icmp.compare_user(uk, l) == Ordering::Less)
            .unwrap_or(false)
    }

    fn set_error(&mut self, e: Error) {
        self.err = Some(e);
        self.valid = false;
    }

    /// The type an entry counts as: a deletion when a visible range tombstone covers it.
    #[inline]
    fn effective_type(&self, uk: &[u8], seq: u64, t: u8) -> u8 {
        if !self.tombs.is_empty() && crate::range_del::max_covering(&self.tombs, &self.icmp, uk, self.seq) > seq {
            vt::DELETION
        } else {
            t
        }
    }

    /// Forward: skip to the next visible, live entry (skipping `saved_key` when `skipping`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.merged = false;
        while self.inner.valid() {
            let ikey = self.inner.key();
            let pk = match parse_internal_key(ikey) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.above_upper(pk.user_key) {
                break;
            }
            if pk.seq <= self.seq {
                let skip = skipping && self.icmp.compare_user(pk.user_key, &self.saved_key) != Ordering::Greater;
                match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                    vt::DELETION | vt::SINGLE_DELETION => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(pk.user_key);
                        skipping = true;
                    }
                    vt::VALUE => {
                        if !skip {
                            self.valid = true;
                            self.saved_key.clear();
                            return;
                        }
                    }
                    vt::MERGE => {
                        if !skip {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(pk.user_key);
                            return self.merge_forward();
                        }
                    }
                    t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
                }
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Forward on the newest operand of `saved_key`: collect the operands down to a base and
    /// merge them into `saved_value`.
    fn merge_forward(&mut self) {
        self.operands.clear();
        self.operands.push(self.inner.value().to_vec());
        self.inner.next();
        let mut base: Option<Vec<u8>> = None;
        while self.inner.valid() {
            let pk = match parse_internal_key(self.inner.key()) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.icmp.compare_user(pk.user_key, &self.saved_key) != Ordering::Equal {
                break;
            }
            match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                vt::MERGE => self.operands.push(self.inner.value().to_vec()),
                vt::VALUE => {
                    base = Some(self.inner.value().to_vec());
                    break;
                }
                vt::DELETION | vt::SINGLE_DELETION => break,
                t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
            }
            self.inner.next();
        }
        self.resolve_merge(base.as_deref(), false);
        self.merged = self.valid;
    }

    /// Merge `operands` (newest first when `oldest_first` is false) with `base` into
    /// `saved_value`; sets `valid` (or the error).
    fn resolve_merge(&mut self, base: Option<&[u8]>, oldest_first: bool) {
        let Some(op) = self.merge_op.clone() else {
            return self.set_error(Error::invalid(
                "the database holds merge operands but no merge operator is configured (Options::merge_operator)",
            ));
        };
        let mut ops: Vec<&[u8]> = self.operands.iter().map(|v| v.as_slice()).collect();
        if !oldest_first {
            ops.reverse();
        }
        match op.full_merge(&self.saved_key, base, &ops) {
            Some(v) => {
                self.saved_value = v;
                self.valid = true;
            }
            None => self.set_error(Error::corrupt(format!("merge operator {} failed", op.name()))),
        }
    }

    /// Reverse: find the newest visible entry of the previous user key.
    fn find_prev_user_entry(&mut self) {
        self.merged = false;
        let mut vtype = vt::DELETION;
        let mut has_base = false;
        self.operands.clear();
        while self.inner.valid() {
            let ikey = self.inner.key();
            let pk = match parse_internal_key(ikey) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.below_lower(pk.user_key) {
                break;
            }
            if pk.seq <= self.seq {
                if vtype != vt::DELETION && self.icmp.compare_user(pk.user_key, &self.saved_key) == Ordering::Less {
                    break;
                }
                match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                    vt::DELETION | vt::SINGLE_DELETION => {
                        vtype = vt::DELETION;
                        has_base = false;
                        self.operands.clear();
                        self.saved_key.clear();
                        self.saved_value.clear();
                    }
                    vt::VALUE => {
                        vtype = vt::VALUE;
                        has_base = true;
                        self.operands.clear();
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(pk.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                    }
                    vt::MERGE => {
                        if vtype == vt::DELETION {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(pk.user_key);
                        }
                        self.operands.push(self.inner.value().to_vec());
                        vtype = vt::MERGE;
                    }
                    t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
                }
            }
            self.inner.prev();
        }
        if vtype == vt::DELETION {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.dir = Dir::Forward;
        } else if vtype == vt::MERGE {
            let base = if has_base {
                Some(std::mem::take(&mut self.saved_value))
            } else {
                None
            };
            self.resolve_merge(base.as_deref(), true);
        } else {
            self.valid = true;
        }
    }

    pub fn seek_to_first(&mut self) {
        if let Some(l) = self.lower.clone() {
            return self.seek(l);
        }
        self.dir = Dir::Forward;
        self.saved_value.clear();
        self.inner.seek_to_first();
        self.find_next_user_entry(false);
        self.check_inner();
    }

    pub fn seek_to_last(&mut self) {
        self.dir = Dir::Reverse;
        self.saved_value.clear();
        match self.upper.clone() {
            Some(u) => {
                self.scratch.clear();
                append_internal_key(&mut self.scratch, &u, MAX_SEQUENCE, vt::FOR_SEEK);
                let t = std::mem::take(&mut self.scratch);
                self.inner.seek(&t);
                self.scratch = t;
                if self.inner.valid() {
                    self.inner.prev();
                } else if self.inner.status().is_ok() {
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
        self.check_inner();
    }

    /// Position at the first key >= `key` (and >= the lower bound).
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let mut k = key.as_ref();
        let lower = self.lower.clone();
        if let Some(l) = lower.as_deref() {
            if self.icmp.compare_user(k, l) == Ordering::Less {
                k = l;
            }
        }
        self.dir = Dir::Forward;
        self.saved_value.clear();
        self.scratch.clear();
        append_internal_key(&mut self.scratch, k, self.seq, vt::FOR_SEEK);
        let t = std::mem::take(&mut self.scratch);
        self.inner.seek(&t);
        self.scratch = t;
        self.find_next_user_entry(false);
        self.check_inner();
    }

    /// Position at the last key <= `key` (and below the upper bound).
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        let k = key.as_ref();
        if self.above_upper(k) {
            return self.seek_to_last();
        }
        self.dir = Dir::Reverse;
        self.saved_value.clear();
        self.scratch.clear();
        append_internal_key(&mut self.scratch, k, 0, 0);
        let t = std::mem::take(&mut self.scratch);
        self.inner.seek_for_prev(&t);
        self.scratch = t;
        self.find_prev_user_entry();
        self.check_inner();
    }

    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.dir == Dir::Reverse {
            self.dir = Dir::Forward;
            // inner is just before the entries of saved_key: step into them, then skip them.
            if !self.inner.valid() {
                if let Err(e) = self.inner.status() {
                    self.set_error(e);
                    return;
                }
                self.inner.seek_to_first();
            } else {
                self.inner.next();
            }
            if !self.inner.valid() {
                self.valid = false;
                self.saved_key.clear();
                self.check_inner();
                return;
            }
        } else if !self.merged {
            let uk = user_key(self.inner.key());
            self.saved_key.clear();
            self.saved_key.extend_from_slice(uk);
            self.inner.next();
        }
        self.find_next_user_entry(true);
        self.check_inner();
    }

    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.dir == Dir::Forward {
            // Step back past every entry of the current user key.
            if self.merged {
                // inner is past the key: return to its first entry
                self.scratch.clear();
                append_internal_key(&mut self.scratch, &self.saved_key, MAX_SEQUENCE, vt::FOR_SEEK);
                let t = std::mem::take(&mut self.scratch);
                self.inner.seek(&t);
                self.scratch = t;
                self.merged = false;
            } else {
                self.saved_key.clear();
                self.saved_key.extend_from_slice(user_key(self.inner.key()));
            }
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    self.check_inner();
                    return;
                }
                if self.icmp.compare_user(user_key(self.inner.key()), &self.saved_key) == Ordering::Less {
                    break;
                }
            }
            self.dir = Dir::Reverse;
        }
        self.find_prev_user_entry();
        self.check_inner();
    }

    fn check_inner(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.inner.status() {
                self.set_error(e);
            }
        }
    }
}

/// Where a [`DBIterator`] starts.
#[derive(Debug, Clone, Copy)]
pub enum IteratorMode<'a> {
    Start,
    End,
    From(&'a [u8], Direction),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// A Rust iterator over `(key, value)` pairs, as the `rocksdb` crate's `DBIterator`.
pub struct DBIterator {
    raw: Option<DBRawIterator>,
    direction: Direction,
    done: bool,
    /// Yielded first (an iterator that could not be made, e.g. through a closed DB's snapshot).
    err: Option<Error>,
}

impl DBIterator {
    pub(crate) fn new(mut raw: DBRawIterator, mode: IteratorMode<'_>) -> DBIterator {
        let direction = match mode {
            IteratorMode::Start => {
                raw.seek_to_first();
                Direction::Forward
            }
            IteratorMode::End => {
                raw.seek_to_last();
                Direction::Reverse
            }
            IteratorMode::From(k, Direction::Forward) => {
                raw.seek(k);
                Direction::Forward
            }
            IteratorMode::From(k, Direction::Reverse) => {
                raw.seek_for_prev(k);
                Direction::Reverse
            }
        };
        DBIterator {
            raw: Some(raw),
            direction,
            done: false,
            err: None,
        }
    }

    /// An iterator that yields `e` and ends.
    pub(crate) fn failed(e: Error) -> DBIterator {
        DBIterator {
            raw: None,
            direction: Direction::Forward,
            done: false,
            err: Some(e),
        }
    }
}

impl Iterator for DBIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.err.take() {
            self.done = true;
            return Some(Err(e));
        }
        let raw = self.raw.as_mut()?;
        if !raw.valid() {
            self.done = true;
            return match raw.status() {
                Ok(()) => None,
                Err(e) => Some(Err(e)),
            };
        }
        let item = (
            Box::<[u8]>::from(raw.key().unwrap_or(&[])),
            Box::<[u8]>::from(raw.value().unwrap_or(&[])),
        );
        match self.direction {
            Direction::Forward => raw.next(),
            Direction::Reverse => raw.prev(),
        }
        Some(Ok(item))
    }
}

#[cfg(test)]
mod merging_tests {
    use super::*;
    use crate::key::make_internal_key;

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

    /// A child whose seeks fail (invalid, with an I/O error) while `fail_seeks` > 0.
    struct FlakyIter {
        inner: VecIter,
        fail_seeks: Arc<std::sync::atomic::AtomicUsize>,
        err: Option<Error>,
    }
    impl FlakyIter {
        fn fail(&mut self) -> bool {
            use std::sync::atomic::Ordering::SeqCst;
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
