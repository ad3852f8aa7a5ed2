//! Unit tests of the skiplist (`skiplist.rs`).

use super::*;
use crate::memtable::tests::Rng;
use std::cell::Cell;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// Entries are the keys themselves, bytewise.
struct Bytewise;
impl KeyComparator for Bytewise {
    fn key<'a>(&self, entry: &'a [u8]) -> &'a [u8] {
        entry
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
}

thread_local! {
    static COUNT: Cell<u64> = const { Cell::new(0) };
    /// Addresses of the node keys compared since the last reset (for the last_bigger test).
    static SEEN: std::cell::RefCell<Option<Vec<usize>>> = const { std::cell::RefCell::new(None) };
}

/// Counts comparisons made by this thread (and optionally records node addresses).
struct Counting;
impl KeyComparator for Counting {
    fn key<'a>(&self, entry: &'a [u8]) -> &'a [u8] {
        entry
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        COUNT.with(|c| c.set(c.get() + 1));
        SEEN.with(|s| {
            if let Some(v) = s.borrow_mut().as_mut() {
                v.push(a.as_ptr() as usize);
            }
        });
        a.cmp(b)
    }
}
fn count() -> u64 {
    COUNT.with(|c| c.get())
}

fn k(v: u64) -> [u8; 8] {
    v.to_be_bytes()
}

#[test]
fn empty_list() {
    let l = SkipList::new(Bytewise, 4096);
    assert!(l.is_empty());
    let mut it = l.iter();
    assert!(!it.valid());
    it.seek_to_first();
    assert!(!it.valid());
    it.seek_to_last();
    assert!(!it.valid());
    it.seek(b"a");
    assert!(!it.valid());
    it.seek_for_prev(b"a");
    assert!(!it.valid());
    assert!(!l.contains(b"a"));
}

#[test]
fn model_random() {
    let l = SkipList::new(Bytewise, 4096);
    let mut model = BTreeSet::new();
    let mut rng = Rng(0x1234_5678);
    for _ in 0..3000 {
        let v = rng.next() % 10_000 * 2; // even keys; odd ones are probes between them
        let ins = l.insert(&k(v));
        assert_eq!(ins, model.insert(v), "insert {v}");
    }
    assert!(!l.insert(&k(*model.iter().next().unwrap())), "duplicate rejected");
    // full forward and backward walks
    let mut it = l.iter();
    it.seek_to_first();
    for &v in &model {
        assert_eq!(it.key(), k(v));
        it.next();
    }
    assert!(!it.valid());
    it.seek_to_last();
    for &v in model.iter().rev() {
        assert_eq!(it.key(), k(v));
        it.prev();
    }
    assert!(!it.valid());
    // seeks both ways, plus short walks
    for _ in 0..2000 {
        let t = rng.next() % 20_002;
        assert_eq!(l.contains(&k(t)), model.contains(&t));
        it.seek(&k(t));
        let mut m = model.range(t..);
        for _ in 0..3 {
            match m.next() {
                Some(&v) => {
                    assert_eq!(it.key(), k(v));
                    it.next();
                }
                None => {
                    assert!(!it.valid());
                    break;
                }
            }
        }
        it.seek_for_prev(&k(t));
        let mut m = model.range(..=t).rev();
        for _ in 0..3 {
            match m.next() {
                Some(&v) => {
                    assert_eq!(it.key(), k(v));
                    it.prev();
                }
                None => {
                    assert!(!it.valid());
                    break;
                }
            }
        }
        // prev then next returns to the same place
        it.seek(&k(t));
        if it.valid() {
            let here = it.key().to_vec();
            it.prev();
            if it.valid() {
                it.next();
                assert_eq!(it.key(), &here[..]);
            }
        }
    }
}

#[test]
fn hint_paths_match_model() {
    // sequential, reverse, and interleaved runs through every insert flavour
    let l = SkipList::new(Bytewise, 4096);
    let mut model = BTreeSet::new();
    let mut sp = Splice::new();
    for v in 0..2000u64 {
        assert!(l.insert_with_hint(&k(v * 3), &mut sp));
        model.insert(v * 3);
    }
    for v in (0..2000u64).rev() {
        assert!(l.insert(&k(v * 3 + 1)));
        model.insert(v * 3 + 1);
    }
    let mut rng = Rng(99);
    for _ in 0..2000 {
        let v = rng.next() % 6000;
        let v = v - v % 3 + 2;
        let r = if v.is_multiple_of(2) {
            l.insert_with_hint(&k(v), &mut sp)
        } else {
            l.insert_concurrently(&k(v))
        };
        assert_eq!(r, model.insert(v));
    }
    // a splice used with another list is reset, not misused
    let other = SkipList::new(Bytewise, 4096);
    assert!(other.insert_with_hint(&k(5), &mut sp));
    assert!(l.insert_with_hint(&k(1_000_000), &mut sp));
    model.insert(1_000_000);
    let got: Vec<Vec<u8>> = {
        let mut it = l.iter();
        it.seek_to_first();
        let mut v = Vec::new();
        while it.valid() {
            v.push(it.key().to_vec());
            it.next();
        }
        v
    };
    let want: Vec<Vec<u8>> = model.iter().map(|&v| k(v).to_vec()).collect();
    assert_eq!(got, want);
}

#[test]
fn splice_hint_saves_comparisons() {
    const N: u64 = 5000;
    let seq = SkipList::new(Counting, 1 << 16);
    let c0 = count();
    for v in 0..N {
        assert!(seq.insert(&k(v)));
    }
    let seq_cmps = count() - c0;

    let mut sp = Splice::new();
    let seq2 = SkipList::new(Counting, 1 << 16);
    let c0 = count();
    for v in 0..N {
        assert!(seq2.insert_with_hint(&k(v), &mut sp));
    }
    let hint_cmps = count() - c0;

    let nohint = SkipList::new(Counting, 1 << 16);
    let c0 = count();
    for v in 0..N {
        assert!(nohint.insert_concurrently(&k(v)));
    }
    let nohint_cmps = count() - c0;

    let mut keys: Vec<u64> = (0..N).collect();
    let mut rng = Rng(7);
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.next() as usize % (i + 1));
    }
    let rand = SkipList::new(Counting, 1 << 16);
    let c0 = count();
    for &v in &keys {
        assert!(rand.insert(&k(v)));
    }
    let rand_cmps = count() - c0;
    // Sequential inserts with the splice: about one comparison each.
    assert!(seq_cmps <= 2 * N, "sequential {seq_cmps}");
    assert!(hint_cmps <= 2 * N, "explicit hint {hint_cmps}");
    assert!(seq_cmps * 4 < rand_cmps, "sequential {seq_cmps} vs random {rand_cmps}");
    assert!(
        seq_cmps * 4 < nohint_cmps,
        "sequential {seq_cmps} vs unhinted {nohint_cmps}"
    );
}

#[test]
fn equal_key_early_exit_and_last_bigger() {
    let l = SkipList::new(Counting, 1 << 16);
    for v in 0..3000u64 {
        assert!(l.insert_concurrently(&k(v * 2 + 2)));
    }
    let (mut exact_total, mut before_total) = (0, 0);
    for v in 0..3000u64 {
        let c0 = count();
        assert!(l.contains(&k(v * 2 + 2)));
        let exact = count() - c0;
        let c0 = count();
        let mut it = l.iter();
        it.seek(&k(v * 2 + 1)); // same search path, but never equal
        assert_eq!(it.key(), k(v * 2 + 2));
        let before = count() - c0;
        assert!(exact <= before, "key {v}: exact {exact} > before {before}");
        exact_total += exact;
        before_total += before;
    }
    // Tall nodes are found at their top level: clearly fewer comparisons overall.
    assert!(exact_total < before_total, "{exact_total} vs {before_total}");

    // last_bigger: no node is compared twice within one search.
    for t in [0u64, 1, 777, 2999, 4001, 6003, 9999] {
        for exact in [false, true] {
            SEEN.with(|s| *s.borrow_mut() = Some(Vec::new()));
            let mut it = l.iter();
            if exact {
                it.seek_for_prev(&k(t));
            } else {
                it.seek(&k(t));
            }
            let seen = SEEN.with(|s| s.borrow_mut().take().unwrap());
            let uniq: HashSet<_> = seen.iter().collect();
            assert_eq!(uniq.len(), seen.len(), "a node was compared twice seeking {t}");
        }
    }
}

#[test]
fn heights_are_geometric() {
    let mut hist = [0usize; MAX_HEIGHT + 1];
    for _ in 0..100_000 {
        hist[random_height()] += 1;
    }
    assert_eq!(hist[0], 0);
    assert!((70_000..80_000).contains(&hist[1]), "{hist:?}");
    assert!((15_000..22_000).contains(&hist[2]), "{hist:?}");
}

#[test]
fn concurrent_insert_and_iterate() {
    const WRITERS: u64 = 4;
    const PER: u64 = 20_000;
    let l = Arc::new(SkipList::new(Bytewise, 1 << 16));
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for t in 0..WRITERS {
            let l = &l;
            writers.push(s.spawn(move || {
                let mut rng = Rng(t + 1);
                let mut sp = Splice::new();
                for i in 0..PER {
                    // disjoint: key % WRITERS == t; mix random and sequential runs
                    let v = if i % 2 == 0 { rng.next() >> 8 } else { i << 20 };
                    let v = v - v % WRITERS + t;
                    let e = k(v);
                    match i % 3 {
                        0 => l.insert(&e),
                        1 => l.insert_with_hint(&e, &mut sp),
                        _ => l.insert_concurrently(&e),
                    };
                }
            }));
        }
        for _ in 0..2 {
            let (l, done) = (&l, &done);
            s.spawn(move || {
                let mut rounds = 0;
                while !done.load(AO::Relaxed) || rounds < 2 {
                    let mut it = Iter::new(Arc::clone(l));
                    it.seek_to_first();
                    let mut prev: Option<Vec<u8>> = None;
                    while it.valid() {
                        if let Some(p) = &prev {
                            assert!(p.as_slice() < it.key(), "unsorted iteration");
                        }
                        prev = Some(it.key().to_vec());
                        it.next();
                    }
                    // and a backward probe from a random point
                    it.seek_to_last();
                    for _ in 0..10 {
                        if !it.valid() {
                            break;
                        }
                        let cur = it.key().to_vec();
                        it.prev();
                        if it.valid() {
                            assert!(it.key() < cur.as_slice());
                        }
                    }
                    rounds += 1;
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, AO::Relaxed);
    });
    // everything each writer inserted is present
    let mut all = BTreeSet::new();
    for t in 0..WRITERS {
        let mut rng = Rng(t + 1);
        for i in 0..PER {
            let v = if i % 2 == 0 { rng.next() >> 8 } else { i << 20 };
            all.insert(v - v % WRITERS + t);
        }
    }
    let mut it = l.iter();
    it.seek_to_first();
    for v in &all {
        assert_eq!(it.key(), k(*v));
        it.next();
    }
    assert!(!it.valid());
}

/// Entries are bytewise keys that may have a directory or guides (the whole key orders
/// bytewise); counts comparisons like [`Counting`].
struct Guided;
impl KeyComparator for Guided {
    fn key<'a>(&self, entry: &'a [u8]) -> &'a [u8] {
        Counting.key(entry)
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        Counting.compare(a, b)
    }
    fn bytewise_prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        Some(key)
    }
}

/// 16-byte keys: a number, then 8 bytes of its own (so keys differ past 8 bytes too).
fn k16(v: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&v.to_be_bytes());
    b[8..].copy_from_slice(&(v.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes());
    b
}

/// Seeks both ways from `probe` agree with the model.
fn check_seeks<C: KeyComparator>(l: &SkipList<C>, model: &BTreeSet<[u8; 16]>, probe: &[u8]) {
    let mut it = l.iter();
    it.seek(probe);
    match model
        .range::<[u8], _>((std::ops::Bound::Included(probe), std::ops::Bound::Unbounded))
        .next()
    {
        Some(v) => assert_eq!(it.key(), v, "seek {probe:?}"),
        None => assert!(!it.valid(), "seek {probe:?} past the end"),
    }
    it.seek_for_prev(probe);
    match model
        .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Included(probe)))
        .next_back()
    {
        Some(v) => {
            assert_eq!(it.key(), v, "seek_for_prev {probe:?}");
            // and one step back (a search for the last key before this one)
            it.prev();
            match model
                .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Excluded(&v[..])))
                .next_back()
            {
                Some(p) => assert_eq!(it.key(), p, "prev of {v:?}"),
                None => assert!(!it.valid()),
            }
        }
        None => assert!(!it.valid(), "seek_for_prev {probe:?} before the start"),
    }
    assert_eq!(l.contains(probe), model.contains(probe), "contains {probe:?}");
}

#[test]
fn guides_are_taken_as_a_live_list_grows_and_searches_through_them_match_the_model() {
    let l = SkipList::new(Guided, 1 << 16);
    let plain = SkipList::new(Bytewise, 1 << 16);
    let mut model = BTreeSet::new();
    let mut rng = Rng(0xfeed);
    let mut guides_seen = 0;
    for i in 0..60_000u64 {
        let key = k16(rng.next() % 1_000_000 * 2);
        assert_eq!(l.insert(&key), model.insert(key));
        plain.insert(&key);
        if i % 5000 == 4999 {
            let n = l.guides_taken();
            assert!(n >= guides_seen);
            guides_seen = n;
            // Lookups through the newest guide (and over keys inserted since it was taken).
            for _ in 0..300 {
                let v = rng.next() % 2_000_002;
                check_seeks(&l, &model, &k16(v));
                check_seeks(&l, &model, &k16(v)[..8]); // shorter than the keys
            }
        }
    }
    assert!(guides_seen >= 3, "a list of 60,000 entries took {guides_seen} guides");
    // Without searches in flight, each replaced guide was freed when its successor came.
    assert_eq!(l.guides_retired(), 0);
    assert!(
        l.guide_memory() > 0 && l.guide_memory() < 60_000 * 16,
        "{}",
        l.guide_memory()
    );
    for probe in [&[][..], &[0u8][..], &[0xff; 20][..], &k16(u64::MAX)[..]] {
        check_seeks(&l, &model, probe);
    }
    // The guide is what the searches use: from it, a lookup compares far fewer nodes than a
    // descent from the head of the same list without guides.
    let probes: Vec<[u8; 16]> = (0..2000).map(|_| k16(rng.next() % 2_000_002)).collect();
    let before = count();
    for p in &probes {
        l.contains(p);
    }
    let guided = count() - before;
    let counting = SkipList::new(Counting, 1 << 16);
    for key in &model {
        counting.insert(key);
    }
    let before = count();
    for p in &probes {
        counting.contains(p);
    }
    let from_head = count() - before;
    assert!(
        guided * 10 < from_head * 7,
        "guided {guided} vs from the head {from_head} comparisons"
    );
    // Sealing stops taking guides; the sealed directory takes over.
    l.seal();
    assert!(l.build_directory());
    check_seeks(&l, &model, &k16(12345));
}

/// Inserts of nodes of one or two levels find their neighbours from the newest guide: far
/// fewer comparisons than a descent from the head; duplicates are still refused, and the list
/// stays exact.
#[test]
fn inserts_start_from_the_guide() {
    let guided = SkipList::new(Guided, 1 << 16);
    let plain = SkipList::new(Counting, 1 << 16);
    let mut model = BTreeSet::new();
    let mut rng = Rng(0xabcd);
    for _ in 0..60_000 {
        let key = k16(rng.next() % 10_000_000 * 2);
        assert_eq!(guided.insert(&key), model.insert(key));
        plain.insert(&key);
    }
    assert!(guided.guides_taken() > 0);
    let more: Vec<[u8; 16]> = (0..3000).map(|_| k16(rng.next() % 10_000_000 * 2 + 1)).collect();
    let with_guide = comparisons_in(|| {
        for key in &more {
            assert_eq!(guided.insert(key), model.insert(*key));
        }
    });
    let from_head = comparisons_in(|| {
        for key in &more {
            plain.insert(key);
        }
    });
    assert!(
        with_guide * 10 < from_head * 7,
        "inserts: {with_guide} comparisons with the guide, {from_head} from the head"
    );
    // Duplicates found through the guide are refused.
    for key in more.iter().step_by(10) {
        assert!(!guided.insert(key));
    }
    for _ in 0..500 {
        check_seeks(&guided, &model, &k16(rng.next() % 20_000_002));
    }
    let mut it = guided.iter();
    it.seek_to_first();
    for key in &model {
        assert_eq!(it.key(), key);
        it.next();
    }
    assert!(!it.valid());
}

/// Comparisons this thread makes while `f` runs.
fn comparisons_in(f: impl FnOnce()) -> u64 {
    let before = count();
    f();
    count() - before
}

/// Average comparisons of `contains` over `probes` (each must be present).
fn comparisons_per_search<C: KeyComparator>(l: &SkipList<C>, probes: &[[u8; 16]]) -> u64 {
    let before = count();
    for p in probes {
        assert!(l.contains(p), "{p:?}");
    }
    (count() - before) / probes.len() as u64
}

/// Keys inserted in ascending order after a guide land past its last node, and keys crowding
/// one gap of it land between two of its nodes: searches for them must not walk every such key
/// (they restart from the head instead), yet stay exact.
#[test]
fn searches_past_a_guide_or_in_a_crowded_gap_stay_logarithmic() {
    let l = SkipList::new(Guided, 1 << 16);
    let mut model = BTreeSet::new();
    // Ascending keys until a guide is taken, then a few thousand more (too few to retake it).
    let mut v = 0u64;
    while l.guides_taken() == 0 {
        let key = k16(v * 4);
        l.insert(&key);
        model.insert(key);
        v += 1;
    }
    let taken = l.guides_taken();
    // Insert `keys`, then search the second half of them through the same guide.
    let mut insert_and_count = |keys: &[[u8; 16]]| {
        for key in keys {
            l.insert(key);
            model.insert(*key);
        }
        assert_eq!(l.guides_taken(), taken, "the probes must run against the same guide");
        comparisons_per_search(&l, &keys[keys.len() / 2..])
    };
    let past: Vec<[u8; 16]> = (v..v + 4000).map(|v| k16(v * 4)).collect();
    let n = insert_and_count(&past);
    assert!(n < 60, "{n} comparisons per search past the guide's last node");
    // 4,000 keys crowding one gap of the guide (all between two adjacent old keys).
    let gap = v / 2 * 4 + 1;
    let crowd: Vec<[u8; 16]> = (0..4000u64)
        .map(|j| {
            let mut key = k16(gap);
            key[8..].copy_from_slice(&j.to_be_bytes());
            key
        })
        .collect();
    let n = insert_and_count(&crowd);
    assert!(n < 60, "{n} comparisons per search in a crowded gap");
    for p in crowd.iter().step_by(97).chain(past.iter().step_by(89)) {
        check_seeks(&l, &model, p);
        let mut shorter = *p;
        shorter[15] ^= 1;
        check_seeks(&l, &model, &shorter);
    }
    for probe in [&[][..], &k16(0)[..], &k16(gap)[..8], &[0xff; 20][..]] {
        check_seeks(&l, &model, probe);
    }
}

#[test]
fn guides_taken_during_concurrent_inserts_keep_every_search_exact() {
    const WRITERS: u64 = 3;
    const PER: u64 = 30_000;
    let l = Arc::new(SkipList::new(Guided, 1 << 16));
    // Present from the start: the readers must always find them, through whichever guide.
    let fixed: Vec<[u8; 16]> = (0..2000u64).map(|i| k16(i * 1_000_003 % 10_000_000 * 4 + 1)).collect();
    for key in &fixed {
        l.insert(key);
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for t in 0..WRITERS {
            let l = &l;
            writers.push(s.spawn(move || {
                let mut rng = Rng(t + 7);
                for _ in 0..PER {
                    // multiples of 4 plus 2 + (t % 2): never one of the fixed keys
                    l.insert(&k16((rng.next() % 10_000_000) * 4 + 2 + (t % 2)));
                }
            }));
        }
        for r in 0..2u64 {
            let (l, done, fixed) = (&l, &done, &fixed);
            s.spawn(move || {
                let mut rng = Rng(r + 100);
                while !done.load(AO::Relaxed) {
                    let key = &fixed[(rng.next() % fixed.len() as u64) as usize];
                    assert!(l.contains(key), "a present key was not found");
                    let mut it = l.iter();
                    // A key just after it (absent, a multiple of 4 plus 1 sorts between).
                    let mut probe = *key;
                    probe[15] = probe[15].wrapping_add(1);
                    it.seek_for_prev(&probe);
                    assert!(it.valid() && it.key() >= &key[..] && it.key() < &probe[..]);
                    it.seek(key);
                    assert_eq!(it.key(), key);
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, AO::Relaxed);
    });
    assert!(l.guides_taken() > 0);
    let mut model: BTreeSet<[u8; 16]> = fixed.iter().copied().collect();
    for t in 0..WRITERS {
        let mut rng = Rng(t + 7);
        for _ in 0..PER {
            model.insert(k16((rng.next() % 10_000_000) * 4 + 2 + (t % 2)));
        }
    }
    let mut rng = Rng(5);
    for _ in 0..3000 {
        check_seeks(&l, &model, &k16(rng.next() % 40_000_004));
    }
}
