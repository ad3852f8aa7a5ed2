//! Range tombstones: RocksDB's `FragmentedRangeTombstoneList` (tombstones cut into disjoint,
//! sorted fragments, each with its sequence numbers in descending order) and the per-memtable
//! tombstone store whose fragmented list is built once per change on the write path and shared
//! by readers (an `Arc` behind a read lock: no fragmentation on reads).

use std::cmp::Ordering;
use std::sync::atomic::{AtomicBool, Ordering as AO};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::key::{InternalKeyComparator, SequenceNumber};

/// One range tombstone `[start, end)` at `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RangeTombstone {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seq: SequenceNumber,
}

/// A fragment `[start, end)`: `seqs` descending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub seqs: Vec<SequenceNumber>,
}

/// Sorted, disjoint fragments.
#[derive(Debug, Clone, Default)]
pub(crate) struct FragmentedRangeTombstoneList {
    pub fragments: Vec<Fragment>,
    /// The fragments' end keys packed into one buffer (built on the first lookup), so a binary
    /// search touches one small allocation instead of one per probe.
    ends: std::sync::OnceLock<PackedKeys>,
}

#[derive(Debug, Clone, Default)]
struct PackedKeys {
    buf: Vec<u8>,
    /// `offs[i]..offs[i + 1]` is key `i`.
    offs: Vec<u32>,
}

impl PackedKeys {
    fn new<'a>(keys: impl Iterator<Item = &'a [u8]>) -> PackedKeys {
        let mut p = PackedKeys {
            buf: Vec::new(),
            offs: vec![0],
        };
        for k in keys {
            p.buf.extend_from_slice(k);
            p.offs.push(p.buf.len() as u32);
        }
        p
    }
    #[inline]
    fn get(&self, i: usize) -> &[u8] {
        &self.buf[self.offs[i] as usize..self.offs[i + 1] as usize]
    }
}

impl FragmentedRangeTombstoneList {
    /// A list from fragments that are already sorted and disjoint.
    #[cfg(test)]
    pub(crate) fn from_fragments(fragments: Vec<Fragment>) -> Self {
        FragmentedRangeTombstoneList {
            fragments,
            ends: Default::default(),
        }
    }

    /// Fragment `tombstones` (any order; overlapping allowed) as RocksDB does: walk the distinct
    /// start keys keeping the active tombstones; emit a fragment for each segment between
    /// consecutive boundaries carrying the seqnos of every active tombstone (descending).
    pub(crate) fn new(icmp: &InternalKeyComparator, mut tombstones: Vec<RangeTombstone>) -> Self {
        tombstones.retain(|t| icmp.compare_user(&t.start, &t.end) == Ordering::Less);
        tombstones.sort_by(|a, b| icmp.compare_user(&a.start, &b.start).then(b.seq.cmp(&a.seq)));
        let mut fragments: Vec<Fragment> = Vec::new();
        // active: (end, seq), kept sorted by end
        let mut active: Vec<(Vec<u8>, SequenceNumber)> = Vec::new();
        let mut cur: Option<Vec<u8>> = None;
        let emit = |fragments: &mut Vec<Fragment>,
                    active: &mut Vec<(Vec<u8>, SequenceNumber)>,
                    cur: &mut Option<Vec<u8>>,
                    next: Option<&[u8]>| {
            // Emit fragments from `cur` up to `next` (or to the largest active end).
            while let Some(c) = cur.clone() {
                if active.is_empty() {
                    *cur = next.map(|n| n.to_vec());
                    return;
                }
                let smallest_end = active[0].0.clone();
                let (to, reached_next) = match next {
                    Some(n) if icmp.compare_user(n, &smallest_end) != Ordering::Greater => (n.to_vec(), true),
                    _ => (smallest_end, false),
                };
                if icmp.compare_user(&c, &to) == Ordering::Less {
                    let mut seqs: Vec<SequenceNumber> = active.iter().map(|a| a.1).collect();
                    seqs.sort_unstable_by(|a, b| b.cmp(a));
                    seqs.dedup();
                    fragments.push(Fragment {
                        start: c,
                        end: to.clone(),
                        seqs,
                    });
                }
                active.retain(|a| icmp.compare_user(&a.0, &to) == Ordering::Greater);
                *cur = Some(to);
                if reached_next {
                    return;
                }
            }
        };
        for t in tombstones {
            match &cur {
                Some(c) if icmp.compare_user(c, &t.start) == Ordering::Less => {
                    emit(&mut fragments, &mut active, &mut cur, Some(&t.start));
                    cur = Some(t.start.clone());
                }
                None => cur = Some(t.start.clone()),
                _ => {}
            }
            let pos = active.partition_point(|a| icmp.compare_user(&a.0, &t.end) == Ordering::Less);
            active.insert(pos, (t.end, t.seq));
        }
        emit(&mut fragments, &mut active, &mut cur, None);
        FragmentedRangeTombstoneList {
            fragments,
            ends: Default::default(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The fragment containing `key`, by binary search.
    pub(crate) fn fragment_for(&self, icmp: &InternalKeyComparator, key: &[u8]) -> Option<&Fragment> {
        let ends = self
            .ends
            .get_or_init(|| PackedKeys::new(self.fragments.iter().map(|f| f.end.as_slice())));
        // first fragment whose end is > key
        let (mut lo, mut hi) = (0usize, self.fragments.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if icmp.compare_user(ends.get(mid), key) != Ordering::Greater {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let f = self.fragments.get(lo)?;
        if icmp.compare_user(&f.start, key) != Ordering::Greater {
            Some(f)
        } else {
            None
        }
    }

    /// The largest tombstone seqno `<= read_seq` covering `key`, or 0.
    #[inline]
    pub(crate) fn max_covering_seq(
        &self,
        icmp: &InternalKeyComparator,
        key: &[u8],
        read_seq: SequenceNumber,
    ) -> SequenceNumber {
        if self.fragments.is_empty() {
            return 0;
        }
        match self.fragment_for(icmp, key) {
            Some(f) => f.seqs.iter().copied().find(|&s| s <= read_seq).unwrap_or(0),
            None => 0,
        }
    }

    /// Every (fragment, seq) as plain tombstones (to re-fragment a union of lists).
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = RangeTombstone> + '_ {
        self.fragments.iter().flat_map(|f| {
            f.seqs.iter().map(move |&s| RangeTombstone {
                start: f.start.clone(),
                end: f.end.clone(),
                seq: s,
            })
        })
    }
}

/// The largest covering seqno `<= read_seq` over several lists.
pub(crate) fn max_covering(
    lists: &[Arc<FragmentedRangeTombstoneList>],
    icmp: &InternalKeyComparator,
    key: &[u8],
    read_seq: SequenceNumber,
) -> SequenceNumber {
    lists
        .iter()
        .map(|l| l.max_covering_seq(icmp, key, read_seq))
        .max()
        .unwrap_or(0)
}

/// A memtable's range tombstones (RocksDB's `range_del_table_`) with the cached fragmented list.
pub(crate) struct MemRangeDels {
    any: AtomicBool,
    raw: Mutex<Vec<RangeTombstone>>,
    /// Rebuilt after each change on the write path; readers only clone the `Arc`.
    cached: RwLock<Arc<FragmentedRangeTombstoneList>>,
    dirty: AtomicBool,
}

impl Default for MemRangeDels {
    fn default() -> Self {
        MemRangeDels {
            any: AtomicBool::new(false),
            raw: Mutex::new(Vec::new()),
            cached: RwLock::new(Arc::new(FragmentedRangeTombstoneList::default())),
            dirty: AtomicBool::new(false),
        }
    }
}

impl MemRangeDels {
    /// True once a tombstone was added (cheap check for the common case of none).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        !self.any.load(AO::Acquire)
    }

    /// Add a tombstone; the fragmented list is rebuilt by [`refresh`](Self::refresh) (the
    /// writer calls it once per write group).
    pub(crate) fn add(&self, start: &[u8], end: &[u8], seq: SequenceNumber) {
        self.raw.lock().push(RangeTombstone {
            start: start.to_vec(),
            end: end.to_vec(),
            seq,
        });
        self.dirty.store(true, AO::Release);
        self.any.store(true, AO::Release);
    }

    /// Re-fragment if tombstones were added since the last build. On return the cached list
    /// holds every tombstone added before the call (the write group publishes its sequence
    /// right after).
    pub(crate) fn refresh(&self, icmp: &InternalKeyComparator) {
        if !self.dirty.load(AO::Acquire) {
            return;
        }
        let raw = self.raw.lock();
        if !self.dirty.load(AO::Acquire) {
            return;
        }
        let list = FragmentedRangeTombstoneList::new(icmp, raw.clone());
        *self.cached.write() = Arc::new(list);
        // Clean only once the list is published (and under the lock, so no add is missed): a
        // refresh that finds the list clean, above, may return at once.
        self.dirty.store(false, AO::Release);
    }

    /// The newest tombstone seqno `<= read_seq` covering `key` (0: none), read under the
    /// cache's read lock without cloning the list (the point-lookup path).
    #[inline]
    pub(crate) fn max_covering_seq(
        &self,
        icmp: &InternalKeyComparator,
        key: &[u8],
        read_seq: SequenceNumber,
    ) -> SequenceNumber {
        if self.is_empty() {
            return 0;
        }
        if self.dirty.load(AO::Acquire) {
            self.refresh(icmp);
        }
        self.cached.read().max_covering_seq(icmp, key, read_seq)
    }

    /// The fragmented list (None when there are no tombstones). Rebuilds only if a writer has
    /// not refreshed yet (e.g. during recovery).
    #[inline]
    pub(crate) fn fragmented(&self, icmp: &InternalKeyComparator) -> Option<Arc<FragmentedRangeTombstoneList>> {
        if self.is_empty() {
            return None;
        }
        if self.dirty.load(AO::Acquire) {
            self.refresh(icmp);
        }
        Some(self.cached.read().clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, e: &str, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: s.as_bytes().to_vec(),
            end: e.as_bytes().to_vec(),
            seq,
        }
    }

    fn frag(ts: Vec<RangeTombstone>) -> Vec<(String, String, Vec<u64>)> {
        let icmp = InternalKeyComparator::default();
        FragmentedRangeTombstoneList::new(&icmp, ts)
            .fragments
            .into_iter()
            .map(|f| {
                (
                    String::from_utf8(f.start).unwrap(),
                    String::from_utf8(f.end).unwrap(),
                    f.seqs,
                )
            })
            .collect()
    }

    fn g(v: &[(&str, &str, &[u64])]) -> Vec<(String, String, Vec<u64>)> {
        v.iter()
            .map(|(s, e, q)| (s.to_string(), e.to_string(), q.to_vec()))
            .collect()
    }

    #[test]
    fn rocksdb_example() {
        // RocksDB's fragmentation of [k03,k08)@21 and [k05,k12)@22
        let got = frag(vec![t("k05", "k12", 22), t("k03", "k08", 21)]);
        assert_eq!(
            got,
            g(&[("k03", "k05", &[21]), ("k05", "k08", &[22, 21]), ("k08", "k12", &[22])])
        );
    }

    #[test]
    fn overlapping_and_disjoint() {
        let got = frag(vec![t("a", "c", 5), t("b", "d", 3), t("f", "g", 9)]);
        assert_eq!(
            got,
            g(&[
                ("a", "b", &[5]),
                ("b", "c", &[5, 3]),
                ("c", "d", &[3]),
                ("f", "g", &[9])
            ])
        );
    }

    #[test]
    fn nested() {
        let got = frag(vec![t("a", "z", 1), t("c", "e", 7), t("d", "e", 9)]);
        assert_eq!(
            got,
            g(&[
                ("a", "c", &[1]),
                ("c", "d", &[7, 1]),
                ("d", "e", &[9, 7, 1]),
                ("e", "z", &[1])
            ])
        );
    }

    #[test]
    fn equal_start() {
        let got = frag(vec![t("a", "c", 2), t("a", "e", 4), t("a", "c", 6)]);
        assert_eq!(got, g(&[("a", "c", &[6, 4, 2]), ("c", "e", &[4])]));
    }

    #[test]
    fn many_seqnos_same_range_and_empty() {
        let mut ts: Vec<RangeTombstone> = (1..=50).map(|s| t("m", "n", s)).collect();
        ts.push(t("x", "x", 99)); // empty: dropped
        ts.push(t("q", "p", 98)); // inverted: dropped
        let got = frag(ts);
        let seqs: Vec<u64> = (1..=50).rev().collect();
        assert_eq!(got, vec![("m".to_string(), "n".to_string(), seqs)]);
    }

    #[test]
    fn adjacent_and_chain() {
        let got = frag(vec![t("a", "b", 1), t("b", "c", 2), t("b", "d", 3), t("c", "f", 4)]);
        assert_eq!(
            got,
            g(&[
                ("a", "b", &[1]),
                ("b", "c", &[3, 2]),
                ("c", "d", &[4, 3]),
                ("d", "f", &[4])
            ])
        );
    }

    #[test]
    fn lookup_against_brute_force() {
        let icmp = InternalKeyComparator::default();
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let n = rnd(12) as usize;
            let ts: Vec<RangeTombstone> = (0..n)
                .map(|i| {
                    let a = rnd(20);
                    let b = a + rnd(8);
                    RangeTombstone {
                        start: vec![a as u8],
                        end: vec![b as u8],
                        seq: i as u64 + 1,
                    }
                })
                .collect();
            let l = FragmentedRangeTombstoneList::new(&icmp, ts.clone());
            for w in l.fragments.windows(2) {
                assert!(w[0].end <= w[1].start, "disjoint and sorted");
            }
            for k in 0..30u8 {
                for rs in 0..=(n as u64 + 1) {
                    let want = ts
                        .iter()
                        .filter(|t| t.start[0] <= k && k < t.end[0] && t.seq <= rs)
                        .map(|t| t.seq)
                        .max()
                        .unwrap_or(0);
                    assert_eq!(l.max_covering_seq(&icmp, &[k], rs), want);
                }
            }
        }
    }

    #[test]
    fn mem_cache_rebuilt_once_per_change() {
        let icmp = InternalKeyComparator::default();
        let m = MemRangeDels::default();
        assert!(m.fragmented(&icmp).is_none());
        m.add(b"a", b"c", 1);
        m.refresh(&icmp);
        let a = m.fragmented(&icmp).unwrap();
        let b = m.fragmented(&icmp).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "readers share the cached list");
        m.add(b"b", b"d", 2);
        let c = m.fragmented(&icmp).unwrap();
        assert_eq!(c.fragments.len(), 3);
    }

    /// Freezes the rare `shale stress` failure of a key deleted by `delete_range` read back
    /// with its older value ("MISMATCH in get: key 119 expected absent, actual value id ...";
    /// in multi_get and scans too). A reader that found a memtable's tombstone list dirty
    /// (a write group had added a tombstone) cleared `dirty` before publishing the list it was
    /// rebuilding; the group's own `refresh` then found the list clean and returned at once,
    /// the group's sequence was published, and a read at that sequence still got the old list,
    /// without the new tombstone. Once a `refresh` after an add returns, every reader must see
    /// the added tombstone.
    #[test]
    fn refresh_returns_only_once_readers_see_every_added_tombstone() {
        use std::sync::atomic::AtomicBool;
        let icmp = InternalKeyComparator::default();
        let m = Arc::new(MemRangeDels::default());
        // Many tombstones: each rebuild takes a while, so readers are often in the middle of one.
        for i in 0..3000u32 {
            let k = format!("a{i:05}");
            m.add(k.as_bytes(), format!("{k}x").as_bytes(), 1);
        }
        m.refresh(&icmp);
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (m, stop, icmp) = (m.clone(), stop.clone(), icmp.clone());
                std::thread::spawn(move || {
                    while !stop.load(AO::Acquire) {
                        m.max_covering_seq(&icmp, b"m", u64::MAX);
                    }
                })
            })
            .collect();
        let mut stale = 0;
        for seq in 2..300u64 {
            m.add(b"k", b"p", seq);
            // The rest of the write group's inserts: meanwhile a reader finds the list dirty
            // and rebuilds it.
            for _ in 0..100_000 {
                if !m.dirty.load(AO::Acquire) {
                    break;
                }
                std::thread::yield_now();
            }
            m.refresh(&icmp);
            if m.max_covering_seq(&icmp, b"m", u64::MAX) != seq {
                stale += 1;
            }
        }
        stop.store(true, AO::Release);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(
            stale, 0,
            "reads after refresh() missed the newest tombstone {stale} times"
        );
    }
}
