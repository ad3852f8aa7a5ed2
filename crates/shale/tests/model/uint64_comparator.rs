//! `rocksdb.Uint64Comparator` through the whole engine: a randomized model (keys ordered as
//! little-endian numbers, not as bytes) across flushes, compactions and reopens with both
//! memtable representations; writes of keys of another length rejected; and a DB reopened with
//! the other comparator refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::comparator::BytewiseComparator;
use shale::comparator::Comparator;
use shale::comparator::Uint64Comparator;
use shale::fs::testing::MemFs;
use shale::merge_operator::merge_operator_by_name;
use shale::{MemtableFactory, Options, WriteBatch, DB};

use crate::model_common;
use model_common::{scan_both_ways, small_opts, Rng};

type Model = BTreeMap<u64, Vec<u8>>;

fn k(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn opts(fs: &MemFs, rep: MemtableFactory) -> Options {
    let mut o = small_opts(fs);
    o.set_custom_comparator(Arc::new(Uint64Comparator));
    o.set_memtable_factory(rep);
    o.set_custom_merge_operator(merge_operator_by_name("stringappend").unwrap());
    o
}

/// One of 400 scattered numbers: their numeric order and the bytewise order of their
/// little-endian bytes disagree.
fn rand_key(rng: &mut Rng) -> u64 {
    rng.below(400).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn random_write(db: &DB, m: &mut Model, rng: &mut Rng) {
    match rng.below(10) {
        0..=3 => {
            let key = rand_key(rng);
            let v = format!("v{}", rng.below(100_000)).into_bytes();
            db.put(k(key), &v).unwrap();
            m.insert(key, v);
        }
        4 => {
            let key = rand_key(rng);
            db.delete(k(key)).unwrap();
            m.remove(&key);
        }
        5 | 6 => {
            let key = rand_key(rng);
            let v = format!("m{}", rng.below(100));
            db.merge(k(key), &v).unwrap();
            let nv = match m.get(&key) {
                Some(e) => [e.as_slice(), b",", v.as_bytes()].concat(),
                None => v.into_bytes(),
            };
            m.insert(key, nv);
        }
        7 => {
            let (a, b) = (rand_key(rng), rand_key(rng));
            let (a, b) = (a.min(b), a.max(b));
            db.delete_range(k(a), k(b)).unwrap();
            let gone: Vec<u64> = m.range(a..b).map(|(x, _)| *x).collect();
            for x in gone {
                m.remove(&x);
            }
        }
        _ => {
            let mut wb = WriteBatch::new();
            for _ in 0..rng.below(6) + 1 {
                let key = rand_key(rng);
                if rng.below(3) == 0 {
                    wb.delete(k(key));
                    m.remove(&key);
                } else {
                    let v = format!("b{}", rng.below(1000)).into_bytes();
                    wb.put(k(key), &v);
                    m.insert(key, v);
                }
            }
            db.write(wb).unwrap();
        }
    }
}

fn check(db: &DB, m: &Model, rng: &mut Rng) {
    for _ in 0..40 {
        let key = rand_key(rng);
        assert_eq!(db.get(k(key)).unwrap(), m.get(&key).cloned(), "get {key:#x}");
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(x, v)| (k(*x).to_vec(), v.clone())).collect();
    let mut it = db.raw_iterator();
    let (fwd, rev) = scan_both_ways(&mut it);
    assert_eq!(fwd, want, "forward scan in numeric order");
    assert_eq!(rev, want, "reverse scan");
    for _ in 0..10 {
        let t = rand_key(rng);
        it.seek(k(t));
        match m.range(t..).next() {
            Some((x, _)) => assert_eq!(it.key().unwrap(), k(*x)),
            None => assert!(!it.valid()),
        }
        it.seek_for_prev(k(t));
        match m.range(..=t).next_back() {
            Some((x, _)) => assert_eq!(it.key().unwrap(), k(*x)),
            None => assert!(!it.valid()),
        }
    }
}

fn run(rep: MemtableFactory, seed: u64) {
    let fs = MemFs::new();
    let path = Path::new("/db");
    let o = opts(&fs, rep);
    let mut db = DB::open(&o, path).unwrap();
    let mut m = Model::new();
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    for step in 0..2500 {
        random_write(&db, &mut m, &mut rng);
        match rng.below(100) {
            0 | 1 => db.flush().unwrap(),
            2 => db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap(),
            3 => {
                drop(db);
                db = DB::open(&o, path).unwrap();
            }
            _ => {}
        }
        if step % 250 == 0 {
            check(&db, &m, &mut rng);
        }
    }
    db.wait_for_compact(&Default::default()).unwrap();
    check(&db, &m, &mut rng);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check(&db, &m, &mut rng);
    drop(db);
    let db = DB::open(&o, path).unwrap();
    check(&db, &m, &mut rng);
}

#[test]
fn model_uint64_comparator_skiplist() {
    run(MemtableFactory::SkipList, 1);
}

#[test]
fn model_uint64_comparator_vector() {
    run(MemtableFactory::Vector, 2);
}

#[test]
fn keys_of_other_lengths_are_rejected_at_the_write() {
    let fs = MemFs::new();
    let o = opts(&fs, MemtableFactory::SkipList);
    let db = DB::open(&o, "/db").unwrap();
    let bad_keys: [&[u8]; 4] = [b"", b"1234567", b"123456789", b"a much longer key"];
    for bad in bad_keys {
        let errs = [
            db.put(bad, b"v").unwrap_err(),
            db.delete(bad).unwrap_err(),
            db.single_delete(bad).unwrap_err(),
            db.merge(bad, b"v").unwrap_err(),
            db.delete_range(bad, k(5)).unwrap_err(),
            db.delete_range(k(5), bad).unwrap_err(),
        ];
        for e in errs {
            assert!(e.is_invalid_argument(), "{e}");
            assert!(e.to_string().contains("8-byte keys"), "{e}");
        }
        // a batch with one bad key is refused whole
        let mut wb = WriteBatch::new();
        wb.put(k(1), b"good");
        wb.put(bad, b"bad");
        assert!(db.write(wb).unwrap_err().is_invalid_argument());
        assert_eq!(db.get(k(1)).unwrap(), None, "nothing of the refused batch was applied");
    }
    assert_eq!(
        db.latest_sequence_number(),
        0,
        "no refused write used a sequence number"
    );
    // reads of odd-length keys find nothing and do not fail
    db.put(k(3), b"x").unwrap();
    assert_eq!(db.get(b"abc").unwrap(), None);
    let mut it = db.raw_iterator();
    it.seek(b"abc");
    it.status().unwrap();
    // the bytewise comparator keeps accepting every length
    assert!(BytewiseComparator.validate_key(b"").is_ok());
}

#[test]
fn reopening_with_the_other_comparator_is_refused() {
    let fs = MemFs::new();
    let o = opts(&fs, MemtableFactory::SkipList);
    let db = DB::open(&o, "/u64").unwrap();
    db.put(k(1), b"one").unwrap();
    db.flush().unwrap();
    drop(db);
    let mut bytewise = small_opts(&fs);
    bytewise.set_custom_comparator(Arc::new(BytewiseComparator));
    let e = DB::open(&bytewise, "/u64").expect_err("bytewise open of a uint64 DB");
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("rocksdb.Uint64Comparator"), "{e}");

    let db = DB::open(&bytewise, "/bw").unwrap();
    db.put(b"12345678", b"v").unwrap();
    drop(db);
    let e = DB::open(&o, "/bw").expect_err("uint64 open of a bytewise DB");
    assert!(e.is_invalid_argument(), "{e}");
    assert!(e.to_string().contains("leveldb.BytewiseComparator"), "{e}");
    // the right comparator still opens both
    assert_eq!(
        DB::open(&o, "/u64").unwrap().get(k(1)).unwrap().as_deref(),
        Some(&b"one"[..])
    );
}
