use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use super::skiplist::KeyComparator;
use super::*;
use crate::coding::put_varint32;
use crate::key::bytewise_compare;
use crate::key::{make_internal_key, ReverseBytewiseComparator, Uint64Comparator, MAX_SEQUENCE};

fn mem() -> Arc<MemTable> {
    Arc::new(MemTable::new(InternalKeyComparator::default(), 64 << 10))
}

const REPS: [MemtableFactory; 2] = [MemtableFactory::SkipList, MemtableFactory::Vector];

fn mem_of(f: MemtableFactory) -> Arc<MemTable> {
    let m = Arc::new(MemTable::with_factory(InternalKeyComparator::default(), 64 << 10, f));
    assert_eq!(m.factory(), f);
    m
}

fn lookup(k: &[u8], snap: u64) -> Vec<u8> {
    make_internal_key(k, snap, vt::FOR_SEEK)
}

/// A xorshift generator (also used by the skiplist's tests).
pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn collect(it: &mut MemTableIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    it.seek_to_first();
    while it.valid() {
        v.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    v
}

#[test]
fn entry_encoding_is_rocksdb_format() {
    let m = mem();
    let big = vec![7u8; 300]; // two-byte varint length
    assert!(m.add(5, vt::VALUE, b"key", &big));
    assert!(m.add(6, vt::DELETION, b"k2", b""));
    let mut want1 = Vec::new();
    put_varint32(&mut want1, 11);
    want1.extend_from_slice(&make_internal_key(b"key", 5, vt::VALUE));
    put_varint32(&mut want1, 300);
    want1.extend_from_slice(&big);
    let mut want2 = Vec::new();
    put_varint32(&mut want2, 10);
    want2.extend_from_slice(&make_internal_key(b"k2", 6, vt::DELETION));
    put_varint32(&mut want2, 0);
    let Rep::SkipList(l) = &m.rep else { unreachable!() };
    let mut it = l.iter();
    it.seek_to_first();
    assert_eq!(it.entry(), &want2[..]); // "k2" < "key"
    it.next();
    assert_eq!(it.entry(), &want1[..]);
    it.next();
    assert!(!it.valid());
    assert_eq!(m.data_size(), (want1.len() + want2.len()) as u64);
}

#[test]
fn get_with_snapshots() {
    for f in REPS {
        get_with_snapshots_of(f);
    }
}

fn get_with_snapshots_of(f: MemtableFactory) {
    let m = mem_of(f);
    assert!(m.is_empty());
    assert_eq!(m.get(&lookup(b"a", MAX_SEQUENCE)), None);
    m.add(10, vt::VALUE, b"a", b"a10");
    m.add(20, vt::VALUE, b"a", b"a20");
    m.add(30, vt::DELETION, b"a", b"");
    m.add(40, vt::VALUE, b"a", b"a40");
    m.add(15, vt::VALUE, b"b", b"b15");
    m.add(25, vt::SINGLE_DELETION, b"b", b"");
    m.add(12, vt::VALUE, b"ab", b"ab12"); // a neighbour that must not leak into "a"
    m.add(50, vt::MERGE, b"c", b"m50");
    m.add(45, vt::MERGE, b"c", b"m45");
    m.add(41, vt::VALUE, b"c", b"c41");
    m.add(35, vt::DELETION, b"c", b"");
    m.add(60, vt::MERGE, b"d", b"d60");
    m.add(55, vt::MERGE, b"d", b"d55");
    m.add(70, vt::MERGE, b"e", b"e70");
    m.add(65, vt::DELETION, b"e", b"");

    let g = |k: &[u8], s| m.get(&lookup(k, s));
    let val = |v: &[u8]| Some(MemGet::Value(v.to_vec()));
    assert_eq!(g(b"a", 9), None);
    assert_eq!(g(b"a", 10), val(b"a10"));
    assert_eq!(g(b"a", 19), val(b"a10"));
    assert_eq!(g(b"a", 20), val(b"a20"));
    assert_eq!(g(b"a", 29), val(b"a20"));
    assert_eq!(g(b"a", 30), Some(MemGet::Deleted));
    assert_eq!(g(b"a", 39), Some(MemGet::Deleted));
    assert_eq!(g(b"a", 40), val(b"a40"));
    assert_eq!(g(b"a", MAX_SEQUENCE), val(b"a40"));
    assert_eq!(g(b"b", 14), None);
    assert_eq!(g(b"b", 24), val(b"b15"));
    assert_eq!(g(b"b", 25), Some(MemGet::Deleted));
    assert_eq!(g(b"ab", 11), None);
    assert_eq!(g(b"ab", 12), val(b"ab12"));
    assert_eq!(g(b"", 100), None);
    assert_eq!(g(b"zz", 100), None);
    assert_eq!(g(b"aa", 100), None);
    // merges: operands newest-first, base after them
    let ops = |v: &[&[u8]]| v.iter().map(|o| o.to_vec()).collect::<Vec<_>>();
    assert_eq!(
        g(b"c", 100),
        Some(MemGet::Merge {
            operands: ops(&[b"m50", b"m45"]),
            base: Some(Some(b"c41".to_vec()))
        })
    );
    assert_eq!(
        g(b"c", 49),
        Some(MemGet::Merge {
            operands: ops(&[b"m45"]),
            base: Some(Some(b"c41".to_vec()))
        })
    );
    assert_eq!(g(b"c", 44), val(b"c41"));
    assert_eq!(g(b"c", 40), Some(MemGet::Deleted));
    assert_eq!(g(b"c", 34), None);
    assert_eq!(
        g(b"d", 100),
        Some(MemGet::Merge {
            operands: ops(&[b"d60", b"d55"]),
            base: None
        })
    );
    assert_eq!(
        g(b"d", 55),
        Some(MemGet::Merge {
            operands: ops(&[b"d55"]),
            base: None
        })
    );
    assert_eq!(
        g(b"e", 100),
        Some(MemGet::Merge {
            operands: ops(&[b"e70"]),
            base: Some(None)
        })
    );

    assert!(!m.is_empty());
    assert_eq!(m.num_entries(), 15);
    assert_eq!(m.num_deletes(), 4);
    assert_eq!(m.first_seqno(), 10);
    assert_eq!(m.largest_seqno(), 70);
    assert!(m.contains(&make_internal_key(b"a", 20, vt::VALUE)));
    assert!(!m.contains(&make_internal_key(b"a", 21, vt::VALUE)));
    assert_eq!(m.num_entries(), 15);
    if f == MemtableFactory::SkipList {
        // duplicates are rejected and not counted (the vector, as RocksDB's, does not check)
        assert!(!m.add(20, vt::VALUE, b"a", b"again"));
        assert_eq!(m.num_entries(), 15);
        assert_eq!(g(b"a", 20), val(b"a20"));
    }
    assert!(m.contains(&make_internal_key(b"c", 45, vt::MERGE)));
    assert!(!m.contains(&make_internal_key(b"c", 46, vt::MERGE)));
    assert!(!m.contains(&make_internal_key(b"zz", 1, vt::VALUE)));
}

#[test]
fn counters_and_memory() {
    for f in REPS {
        counters_and_memory_of(f);
    }
}

fn counters_and_memory_of(f: MemtableFactory) {
    let m = mem_of(f);
    assert_eq!((m.first_seqno(), m.largest_seqno(), m.num_entries()), (0, 0, 0));
    let mut c = AddCounters::default();
    for i in 0..1000u64 {
        let t = if i % 10 == 0 { vt::DELETION } else { vt::VALUE };
        assert!(m.add_deferred(1000 - i, t, format!("key{i:05}").as_bytes(), &[1u8; 100], &mut c));
    }
    assert!(!m.is_empty());
    assert_eq!(m.num_entries(), 0, "deferred");
    m.apply_counters(&c);
    assert_eq!(m.num_entries(), 1000);
    assert_eq!(m.num_deletes(), 100);
    assert_eq!(m.first_seqno(), 1);
    assert_eq!(m.largest_seqno(), 1000);
    let used = m.approximate_memory_usage();
    assert!(used >= 1000 * (8 + 100 + 16) && used <= m.reserved_memory(), "{used}");
    assert!(m.reserved_memory() < 1000 * 200 + (64 << 10) * 2);
}

/// Internal keys ordered like the memtable (user key asc, seq desc), for the model.
fn model_key(uk: &[u8], seq: u64, t: u8) -> (Vec<u8>, std::cmp::Reverse<u64>) {
    (uk.to_vec(), std::cmp::Reverse((seq << 8) | t as u64))
}

#[test]
fn iterator_model() {
    for f in REPS {
        iterator_model_of(f);
    }
}

fn iterator_model_of(f: MemtableFactory) {
    let m = mem_of(f);
    let mut model = BTreeMap::new();
    let mut rng = Rng(42);
    let mut seq = 1;
    for _ in 0..4000 {
        let uk = format!("{:06}", rng.next() % 1500).into_bytes();
        let t = if rng.next().is_multiple_of(5) {
            vt::DELETION
        } else {
            vt::VALUE
        };
        let v = format!("v{seq}").into_bytes();
        assert!(m.add(seq, t, &uk, &v));
        model.insert(model_key(&uk, seq, t), v);
        seq += 1;
    }
    let ik = |k: &(Vec<u8>, std::cmp::Reverse<u64>)| {
        let mut v = k.0.clone();
        v.extend_from_slice(&k.1 .0.to_le_bytes());
        v
    };
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (ik(k), v.clone())).collect();
    let mut it = m.iter();
    assert_eq!(collect(&mut it), want);
    // backward
    it.seek_to_last();
    for (k, v) in want.iter().rev() {
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
        it.prev();
    }
    assert!(!it.valid());
    // seeks with snapshots in both directions
    for _ in 0..1500 {
        let uk = format!("{:06}", rng.next() % 1600).into_bytes();
        let snap = rng.next() % (seq + 10);
        let target = lookup(&uk, snap);
        let tkey = model_key(&uk, snap, vt::FOR_SEEK);
        it.seek(&target);
        let mut m_it = model.range(tkey.clone()..);
        for _ in 0..4 {
            match m_it.next() {
                Some((k, v)) => {
                    assert_eq!((it.key(), it.value()), (&ik(k)[..], &v[..]));
                    it.next();
                }
                None => {
                    assert!(!it.valid());
                    break;
                }
            }
        }
        it.seek_for_prev(&target);
        let mut m_it = model.range(..=tkey).rev();
        for _ in 0..4 {
            match m_it.next() {
                Some((k, v)) => {
                    assert_eq!((it.key(), it.value()), (&ik(k)[..], &v[..]));
                    it.prev();
                }
                None => {
                    assert!(!it.valid());
                    break;
                }
            }
        }
        // exact seek_for_prev on an existing key lands on it
        if let Some((k, _)) = model.range(model_key(&uk, snap, vt::FOR_SEEK)..).next() {
            let e = ik(k);
            it.seek_for_prev(&e);
            assert_eq!(it.key(), &e[..]);
        }
    }
    // get agrees with the model: newest entry <= snapshot for the user key
    for _ in 0..1500 {
        let uk = format!("{:06}", rng.next() % 1600).into_bytes();
        let snap = rng.next() % (seq + 10);
        let want = model
            .range(model_key(&uk, snap, vt::FOR_SEEK)..)
            .next()
            .filter(|(k, _)| k.0 == uk)
            .map(|(k, v)| {
                if (k.1 .0 & 0xff) as u8 == vt::DELETION {
                    MemGet::Deleted
                } else {
                    MemGet::Value(v.clone())
                }
            });
        assert_eq!(m.get(&lookup(&uk, snap)), want);
    }
}

#[test]
fn sequential_hint_path() {
    for f in REPS {
        sequential_hint_path_of(f);
    }
}

fn sequential_hint_path_of(f: MemtableFactory) {
    // fillseq shape: increasing keys and sequence numbers; iteration sees them all in order
    let m = mem_of(f);
    for i in 0..20_000u64 {
        assert!(m.add(i + 1, vt::VALUE, &i.to_be_bytes(), b"v"));
    }
    let mut it = m.iter();
    it.seek_to_first();
    for i in 0..20_000u64 {
        assert_eq!(user_key(it.key()), &i.to_be_bytes());
        it.next();
    }
    assert!(!it.valid());
    // same user key, increasing seq: each new entry sorts *before* the previous one
    let m = mem_of(f);
    for s in 1..=5000u64 {
        assert!(m.add(s, vt::VALUE, b"hot", &s.to_le_bytes()));
    }
    assert_eq!(
        m.get(&lookup(b"hot", 4321)),
        Some(MemGet::Value(4321u64.to_le_bytes().to_vec()))
    );
    let mut it = m.iter();
    it.seek_to_first();
    assert_eq!(trailer(it.key()) >> 8, 5000);
    it.seek_to_last();
    assert_eq!(trailer(it.key()) >> 8, 1);
}

#[test]
fn custom_comparator() {
    for f in REPS {
        custom_comparator_of(f);
    }
}

fn custom_comparator_of(f: MemtableFactory) {
    let icmp = InternalKeyComparator::new(Arc::new(ReverseBytewiseComparator));
    let m = Arc::new(MemTable::with_factory(icmp, 4096, f));
    for (i, k) in [&b"a"[..], b"c", b"b"].iter().enumerate() {
        m.add(i as u64 + 1, vt::VALUE, k, k);
    }
    let keys: Vec<Vec<u8>> = collect(&mut m.iter())
        .into_iter()
        .map(|(k, _)| user_key(&k).to_vec())
        .collect();
    assert_eq!(keys, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(m.get(&lookup(b"b", 10)), Some(MemGet::Value(b"b".to_vec())));
}

#[test]
fn concurrent_adds_and_iteration() {
    const WRITERS: u64 = 4;
    const PER: u64 = 15_000;
    let m = mem();
    let done = AtomicBool::new(false);
    let key = |t: u64, r: u64| {
        let v = (r >> 16) - (r >> 16) % WRITERS + t; // disjoint by residue
        format!("{v:020}").into_bytes()
    };
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for t in 0..WRITERS {
            let m = &m;
            writers.push(s.spawn(move || {
                let mut rng = Rng(t * 7 + 3);
                for i in 0..PER {
                    let seq = 1 + t * PER + i; // unique across threads
                    assert!(m.add(seq, vt::VALUE, &key(t, rng.next()), &seq.to_le_bytes()));
                }
            }));
        }
        for _ in 0..2 {
            let (m, done) = (&m, &done);
            s.spawn(move || {
                let icmp = m.icmp().clone();
                let mut rounds = 0;
                while !done.load(AO::Relaxed) || rounds < 2 {
                    let mut it = m.iter();
                    it.seek_to_first();
                    let mut prev: Option<Vec<u8>> = None;
                    let mut n = 0;
                    while it.valid() {
                        if let Some(p) = &prev {
                            assert_eq!(icmp.compare(p, it.key()), Ordering::Less, "unsorted");
                        }
                        assert_eq!(it.value().len(), 8);
                        prev = Some(it.key().to_vec());
                        it.next();
                        n += 1;
                    }
                    assert!(n <= (WRITERS * PER) as usize);
                    rounds += 1;
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, AO::Relaxed);
    });
    assert_eq!(m.num_entries(), WRITERS * PER);
    assert_eq!(m.first_seqno(), 1);
    assert_eq!(m.largest_seqno(), WRITERS * PER);
    for t in 0..WRITERS {
        let mut rng = Rng(t * 7 + 3);
        for i in 0..PER {
            let seq = 1 + t * PER + i;
            let k = key(t, rng.next());
            assert!(m.contains(&make_internal_key(&k, seq, vt::VALUE)), "missing {t}/{i}");
        }
    }
    assert_eq!(collect(&mut m.iter()).len() as u64, WRITERS * PER);
}

/// Micro-benchmark of the write hot path (db_bench fillseq/fillrandom shapes: 1M entries,
/// 16-byte keys, 100-byte values). Run with
/// `cargo test --release -p shale --lib memtable::tests::bench_fill -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_fill() {
    const N: u64 = 1_000_000;
    let value = [b'x'; 100];
    let key16 = |v: u64| {
        let mut k = [b'0'; 16];
        k[..8].copy_from_slice(&v.to_be_bytes());
        k
    };
    let mut rng = Rng(0x2545_F491);
    let rand_keys: Vec<u64> = (0..N).map(|_| rng.next() % N).collect();
    let phases: Vec<(&str, bool)> = match std::env::var("MEMBENCH").as_deref() {
        Ok("seq") => vec![("fillseq", false); 3],
        Ok("random") => vec![("fillrandom", true); 2],
        _ => vec![
            ("fillseq", false),
            ("fillrandom", true),
            ("fillseq", false),
            ("fillrandom", true),
        ],
    };
    for (name, random) in phases {
        let m = Arc::new(MemTable::new(InternalKeyComparator::default(), 4 << 20));
        let t = std::time::Instant::now();
        for i in 0..N {
            let k = if random { rand_keys[i as usize] } else { i };
            m.add(i + 1, vt::VALUE, &key16(k), &value);
        }
        let el = t.elapsed();
        let t2 = std::time::Instant::now();
        let mut found = 0;
        for i in 0..if std::env::var("MEMBENCH_NOGET").is_ok() { 0 } else { N } {
            let k = rand_keys[i as usize];
            if m.get(&lookup(&key16(k), MAX_SEQUENCE)).is_some() {
                found += 1;
            }
        }
        let el2 = t2.elapsed();
        println!(
            "{name:>10}: {:6.1} ns/add, get {:6.1} ns ({found} found), mem {} MiB",
            el.as_nanos() as f64 / N as f64,
            el2.as_nanos() as f64 / N as f64,
            m.approximate_memory_usage() >> 20
        );
    }
}

#[test]
fn bytewise_fast_compare_matches_slices() {
    let mut rng = Rng(5);
    for _ in 0..20_000 {
        let la = (rng.next() % 20) as usize;
        let lb = (rng.next() % 20) as usize;
        let a: Vec<u8> = (0..la).map(|_| (rng.next() % 3) as u8 * 127).collect();
        let mut b: Vec<u8> = (0..lb).map(|_| (rng.next() % 3) as u8 * 127).collect();
        if rng.next().is_multiple_of(2) {
            b = a.clone();
            if !b.is_empty() && rng.next().is_multiple_of(2) {
                let i = (rng.next() as usize) % b.len();
                b[i] = b[i].wrapping_add(1);
            }
        }
        assert_eq!(bytewise_compare(&a, &b), a.cmp(&b), "{a:?} {b:?}");
        let c = MemKeyCmp::new(InternalKeyComparator::default());
        let (ia, ib) = (
            make_internal_key(&a, rng.next() % 4, vt::VALUE),
            make_internal_key(&b, rng.next() % 4, vt::VALUE),
        );
        assert_eq!(c.compare(&ia, &ib), InternalKeyComparator::default().compare(&ia, &ib));
    }
}

#[test]
fn thread_safety_bounds() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<MemTable>();
    send_sync::<skiplist::SkipList<MemKeyCmp>>();
    send_sync::<arena::Arena>();
    fn send<T: Send>() {}
    send::<MemTableIterator>();
}

#[test]
fn uint64_comparator_orders_numerically_in_both_reps() {
    for f in REPS {
        let icmp = InternalKeyComparator::new(Arc::new(Uint64Comparator));
        let m = Arc::new(MemTable::with_factory(icmp, 4096, f));
        let mut rng = Rng(5);
        let mut want = std::collections::BTreeSet::new();
        for s in 1..=2000u64 {
            // spread over all byte positions so little- and big-endian orders differ
            let v = rng.next() >> (rng.next() % 64);
            m.add(s, vt::VALUE, &v.to_le_bytes(), b"x");
            want.insert((v, std::cmp::Reverse(s)));
        }
        let got: Vec<(u64, std::cmp::Reverse<u64>)> = collect(&mut m.iter())
            .into_iter()
            .map(|(k, _)| {
                let u = u64::from_le_bytes(user_key(&k).try_into().unwrap());
                (u, std::cmp::Reverse(trailer(&k) >> 8))
            })
            .collect();
        assert_eq!(got, want.iter().copied().collect::<Vec<_>>(), "{f:?}");
        let (v, _) = *want.iter().nth(777).unwrap();
        assert_eq!(
            m.get(&lookup(&v.to_le_bytes(), MAX_SEQUENCE)),
            Some(MemGet::Value(b"x".to_vec()))
        );
        // a key of another length is simply not there (no panic, no wrong hit)
        assert_eq!(m.get(&lookup(b"abc", MAX_SEQUENCE)), None);
    }
}

#[test]
fn vector_reads_interleaved_with_writes() {
    // A mutable vector memtable: every read must see every earlier write, whatever mix of
    // sorted and not-yet-sorted entries it holds; old iterators keep their view.
    let m = mem_of(MemtableFactory::Vector);
    let mut model: BTreeMap<Vec<u8>, (u64, Vec<u8>)> = BTreeMap::new();
    let mut rng = Rng(77);
    let mut old_iters = Vec::new();
    for seq in 1..=3000u64 {
        let uk = format!("{:05}", rng.next() % 700).into_bytes();
        let v = format!("v{seq}").into_bytes();
        m.add(seq, vt::VALUE, &uk, &v);
        model.insert(uk, (seq, v));
        if rng.next().is_multiple_of(7) {
            let probe = format!("{:05}", rng.next() % 700).into_bytes();
            let want = model.get(&probe).map(|(_, v)| MemGet::Value(v.clone()));
            assert_eq!(m.get(&lookup(&probe, MAX_SEQUENCE)), want, "seq {seq}");
        }
        if seq.is_multiple_of(500) {
            let mut it = m.iter();
            let n = collect(&mut it).len();
            assert_eq!(n as u64, seq);
            old_iters.push((it, seq));
        }
    }
    for (mut it, n) in old_iters {
        assert_eq!(
            collect(&mut it).len() as u64,
            n,
            "an iterator sees the entries of its creation"
        );
    }
    // newest-first per user key, all keys in order
    let mut it = m.iter();
    it.seek_to_first();
    for (uk, (seq, v)) in &model {
        assert_eq!(user_key(it.key()), &uk[..]);
        assert_eq!((trailer(it.key()) >> 8, it.value()), (*seq, &v[..]));
        // skip older versions of this key
        while it.valid() && user_key(it.key()) == &uk[..] {
            it.next();
        }
    }
    assert!(!it.valid());
}

#[test]
fn vector_concurrent_adds_and_reads() {
    const WRITERS: u64 = 3;
    const PER: u64 = 4000;
    let m = mem_of(MemtableFactory::Vector);
    std::thread::scope(|s| {
        for t in 0..WRITERS {
            let m = &m;
            s.spawn(move || {
                for i in 0..PER {
                    let k = format!("{:08}", i * WRITERS + t);
                    m.add(i * WRITERS + t + 1, vt::VALUE, k.as_bytes(), b"v");
                }
            });
        }
        let m = &m;
        s.spawn(move || {
            for _ in 0..20 {
                let mut it = m.iter();
                it.seek_to_first();
                let mut prev: Option<Vec<u8>> = None;
                while it.valid() {
                    if let Some(p) = &prev {
                        assert!(m.icmp().compare(p, it.key()) == Ordering::Less, "unsorted");
                    }
                    prev = Some(it.key().to_vec());
                    it.next();
                }
            }
        });
    });
    let all = collect(&mut m.iter());
    assert_eq!(all.len() as u64, WRITERS * PER);
    for (i, (k, _)) in all.iter().enumerate() {
        assert_eq!(user_key(k), format!("{i:08}").as_bytes());
    }
}

/// `get_under`: a covering range tombstone at `tomb` deletes every entry older than it, and the
/// lookup stops at the first such entry (newer entries and merge operands above it still count).
#[test]
fn get_under_a_range_tombstone() {
    for f in [MemtableFactory::SkipList, MemtableFactory::Vector] {
        let m = mem_of(f);
        m.add(10, vt::VALUE, b"a", b"a10");
        m.add(30, vt::VALUE, b"a", b"a30");
        m.add(50, vt::MERGE, b"c", b"m50");
        m.add(41, vt::VALUE, b"c", b"c41");
        m.add(60, vt::MERGE, b"d", b"d60");
        let g = |k: &[u8], s, tomb| m.get_under(&lookup(k, s), tomb);
        // Older than the newest value: no effect.
        assert_eq!(g(b"a", MAX_SEQUENCE, 20), Some(MemGet::Value(b"a30".to_vec())));
        // Newer than every entry: deleted.
        assert_eq!(g(b"a", MAX_SEQUENCE, 35), Some(MemGet::Deleted));
        // At a snapshot below the newest value, the tombstone hides the older one.
        assert_eq!(g(b"a", 29, 20), Some(MemGet::Deleted));
        assert_eq!(g(b"a", 29, 5), Some(MemGet::Value(b"a10".to_vec())));
        // A merge operand above the tombstone, the base below it: the chain ends deleted.
        assert_eq!(
            g(b"c", MAX_SEQUENCE, 45),
            Some(MemGet::Merge {
                operands: vec![b"m50".to_vec()],
                base: Some(None)
            })
        );
        // Only operands, all above: older sources are still needed.
        assert_eq!(
            g(b"d", MAX_SEQUENCE, 55),
            Some(MemGet::Merge {
                operands: vec![b"d60".to_vec()],
                base: None
            })
        );
        // No entry for the key: nothing (the caller carries the tombstone on).
        assert_eq!(g(b"b", MAX_SEQUENCE, 100), None);
    }
}

/// A sealed memtable's directory answers every lookup, seek and backward step exactly as the
/// skiplist descent does: values, deletions, merge operands, snapshots, absent keys, keys
/// outside the range, and keys that share long prefixes.
#[test]
fn directory_lookups_match_the_skiplist() {
    let with_dir = mem();
    let without = mem();
    let mut rng = Rng(0x5eed_d1c7);
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for i in 0..6000u64 {
        // db_bench-like keys, and a group sharing a 20-byte prefix (equal discriminators).
        let k = if i % 5 == 0 {
            format!("tenant-0000000000000{:06}", rng.next() % 3000).into_bytes()
        } else {
            let mut k = (rng.next() % 50_000).to_be_bytes().to_vec();
            k.extend_from_slice(b"00000000");
            k
        };
        let t = match rng.next() % 10 {
            0 => vt::DELETION,
            1 | 2 => vt::MERGE,
            _ => vt::VALUE,
        };
        let v = format!("v{i}");
        for m in [&with_dir, &without] {
            m.add(i + 1, t, &k, v.as_bytes());
        }
        keys.push(k);
    }
    with_dir.mark_immutable();
    assert!(
        with_dir.build_directory(),
        "a sealed bytewise memtable gets a directory"
    );
    assert!(!without.build_directory(), "an unsealed memtable never gets one");
    assert!(with_dir.approximate_memory_usage() > without.approximate_memory_usage());

    let mut probes = keys.clone();
    for _ in 0..3000 {
        let mut k = (rng.next() % 60_000).to_be_bytes().to_vec();
        k.extend_from_slice(b"00000000");
        probes.push(k);
    }
    probes.extend([
        b"".to_vec(),
        b"\x00".to_vec(),
        b"tenant-".to_vec(),
        b"tenant-1".to_vec(),
        b"\xff\xff".to_vec(),
    ]);
    for (n, p) in probes.iter().enumerate() {
        let snap = if n % 3 == 0 { MAX_SEQUENCE } else { rng.next() % 6500 };
        let tomb = if n % 7 == 0 { rng.next() % 6000 } else { 0 };
        let l = lookup(p, snap);
        assert_eq!(
            with_dir.get_under(&l, tomb),
            without.get_under(&l, tomb),
            "key {p:?} snap {snap}"
        );
        assert_eq!(with_dir.contains(&l), without.contains(&l));
    }

    // Iterators: seek, seek_for_prev and prev land on the same entries.
    let (mut a, mut b) = (with_dir.iter(), without.iter());
    for p in probes.iter().step_by(7) {
        let l = lookup(p, rng.next() % 7000);
        a.seek(&l);
        b.seek(&l);
        assert_eq!(a.valid(), b.valid());
        if a.valid() {
            assert_eq!(a.key(), b.key());
            a.prev();
            b.prev();
            assert_eq!(a.valid(), b.valid());
            if a.valid() {
                assert_eq!(a.key(), b.key());
            }
        }
        a.seek_for_prev(&l);
        b.seek_for_prev(&l);
        assert_eq!(a.valid(), b.valid());
        if a.valid() {
            assert_eq!((a.key(), a.value()), (b.key(), b.value()));
        }
    }
    assert_eq!(collect(&mut with_dir.iter()), collect(&mut without.iter()));
}

#[test]
#[should_panic(expected = "sealed")]
fn an_insert_into_an_immutable_memtable_is_refused() {
    let m = mem();
    m.add(1, vt::VALUE, b"a", b"1");
    m.mark_immutable();
    m.add(2, vt::VALUE, b"b", b"2");
}

#[test]
fn no_directory_for_other_orders_or_small_memtables() {
    let small = mem();
    for i in 0..100u32 {
        small.add(u64::from(i) + 1, vt::VALUE, &i.to_be_bytes(), b"v");
    }
    small.mark_immutable();
    assert!(!small.build_directory());
    let rev = Arc::new(MemTable::new(
        InternalKeyComparator::new(Arc::new(ReverseBytewiseComparator)),
        64 << 10,
    ));
    for i in 0..5000u32 {
        rev.add(u64::from(i) + 1, vt::VALUE, &i.to_be_bytes(), b"v");
    }
    rev.mark_immutable();
    assert!(!rev.build_directory());
    assert_eq!(
        rev.get(&lookup(&7u32.to_be_bytes(), MAX_SEQUENCE)),
        Some(MemGet::Value(b"v".to_vec()))
    );
}

/// A node takes what RocksDB's `InlineSkipList` node takes in its arena (links and entry,
/// rounded to 16 bytes), so a 64 MiB memtable holds as many db_bench-shaped entries (16-byte
/// keys, 100-byte values) as RocksDB's: RocksDB 11.8.1's db_bench flushed at 460.8K of them
/// (145.1 bytes each); a node with a separate u32 length and cache-line padding took 164 bytes
/// and flushed at 408.6K, which moved every flush and compaction of a universal run.
#[test]
fn write_buffer_holds_as_many_entries_as_rocksdb() {
    use super::skiplist::node_size;
    // RocksDB: 8 bytes per link plus the entry, rounded up to 16.
    for h in 1..=12usize {
        assert_eq!(node_size(h, 126), (8 * h + 126).next_multiple_of(16), "height {h}");
    }
    let budget = 64usize << 20;
    let m = Arc::new(MemTable::new(
        InternalKeyComparator::default(),
        default_arena_block_size(budget),
    ));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let value = [b'v'; 100];
    let mut n = 0u64;
    while m.approximate_memory_usage() < budget {
        let k = format!("{:016}", rng.next() % 10_000_000);
        n += 1;
        assert!(m.add(n, vt::VALUE, k.as_bytes(), &value));
    }
    assert!((455_000..=466_000).contains(&n), "{n} entries in a 64 MiB memtable");
}

#[test]
fn point_filter_lets_lookups_of_absent_keys_skip_the_search() {
    let m = MemTable::new(InternalKeyComparator::default(), 64 << 10)
        .with_filters(None, prefix_bloom::PrefixBloom::new(4 << 20, None, true));
    for i in (0..40_000u32).step_by(2) {
        assert!(m.add(i as u64 + 1, vt::VALUE, format!("key{i:08}").as_bytes(), b"v"));
    }
    let s0 = m.searches.load(AO::Relaxed);
    for i in (0..40_000u32).step_by(2) {
        let got = m.get(&lookup(format!("key{i:08}").as_bytes(), MAX_SEQUENCE));
        assert!(matches!(got, Some(MemGet::Value(v)) if v == b"v"), "key{i:08}");
    }
    assert_eq!(m.searches.load(AO::Relaxed) - s0, 20_000);
    // Absent keys, between the present ones and outside their range: answered by the filter
    // (a search only on a false positive).
    let s1 = m.searches.load(AO::Relaxed);
    for i in (1..40_000u32).step_by(2).chain(50_000..60_000) {
        assert!(m.get(&lookup(format!("key{i:08}").as_bytes(), MAX_SEQUENCE)).is_none());
    }
    let searched = m.searches.load(AO::Relaxed) - s1;
    assert!(
        searched < 300,
        "{searched} of 30,000 absent lookups searched the memtable"
    );
    // Its memory is reserved but not compared with the write buffer size.
    assert!(
        m.approximate_memory_usage() < 4 << 20,
        "{}",
        m.approximate_memory_usage()
    );
    assert!(m.reserved_memory() >= (4 << 20) + m.approximate_memory_usage() / 2);
}

/// A bytewise comparator that panics while `PANIC` is set (a user comparator with a bug).
struct PanickyComparator(Arc<AtomicBool>);
impl crate::key::Comparator for PanickyComparator {
    fn name(&self) -> &str {
        "test.Panicky"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        assert!(!self.0.load(std::sync::atomic::Ordering::Relaxed), "comparator bug");
        a.cmp(b)
    }
}

#[test]
fn a_vector_memtable_keeps_its_entries_through_a_comparator_panic() {
    let armed = Arc::new(AtomicBool::new(false));
    let icmp = InternalKeyComparator::new(Arc::new(PanickyComparator(armed.clone())));
    let m = Arc::new(MemTable::with_factory(icmp, 64 << 10, MemtableFactory::Vector));
    for i in 0..100u64 {
        assert!(m.add(i + 1, vt::VALUE, format!("k{i:03}").as_bytes(), b"v"));
    }
    // The first read sorts the unsorted entries with the comparator, which panics.
    armed.store(true, std::sync::atomic::Ordering::Relaxed);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m.get(&lookup(b"k050", MAX_SEQUENCE))));
    assert!(r.is_err(), "the comparator panicked");
    armed.store(false, std::sync::atomic::Ordering::Relaxed);
    // Every entry is still there, for reads and for the flush's iterator.
    assert_eq!(
        m.get(&lookup(b"k050", MAX_SEQUENCE)),
        Some(MemGet::Value(b"v".to_vec()))
    );
    let mut it = m.iter();
    assert_eq!(collect(&mut it).len(), 100);
}
