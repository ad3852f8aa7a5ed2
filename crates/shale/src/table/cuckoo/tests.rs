//! Cuckoo builder → reader round trips, placement (BFS displacement, hash functions), option
//! and input errors, and robustness against damaged files.

use std::cmp::Ordering;
use std::sync::Arc;

use super::hash::{place, CuckooHasher, PlacementParams, EMPTY};
use super::*;
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, trailer, user_key, vt, Comparator, InternalKeyComparator, MAX_SEQUENCE};
use crate::table::vec_file::VecFile;

/// Keys as 8-byte little-endian integers (RocksDB's test Uint64Comparator).
struct Uint64Comparator;

impl Comparator for Uint64Comparator {
    fn name(&self) -> &str {
        "rocksdb.Uint64Comparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let x = u64::from_le_bytes(a.try_into().unwrap());
        let y = u64::from_le_bytes(b.try_into().unwrap());
        x.cmp(&y)
    }
}

fn opts(t: CuckooTableOptions) -> CuckooTableBuilderOptions {
    CuckooTableBuilderOptions {
        table: t,
        ..Default::default()
    }
}

fn build(o: CuckooTableBuilderOptions, entries: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<u8>> {
    let f = VecFile::default();
    let mut b = CuckooTableBuilder::new(o, Box::new(f.clone()));
    for (k, v) in entries {
        b.add(k, v)?;
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let (info, _) = b.finish()?;
    let bytes = f.0.lock().clone();
    assert_eq!(info.file_size, bytes.len() as u64);
    Ok(bytes)
}

fn open(bytes: Vec<u8>, icmp: InternalKeyComparator) -> Result<Arc<CuckooTable>> {
    CuckooTable::from_bytes(bytes, "t.sst".into(), icmp).map(Arc::new)
}

/// `n` entries with 16-byte user keys and 8-byte values; every 7th is a deletion.
fn entries(n: usize, seq: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries_with(n, seq, 16)
}

/// As [`entries`] with user keys of `ukl` (>= 4) bytes.
fn entries_with(n: usize, seq: u64, ukl: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let uk = format!("key{:0w$}", i * 3, w = ukl - 3);
            let t = if i % 7 == 3 { vt::DELETION } else { vt::VALUE };
            let v = if t == vt::DELETION {
                vec![]
            } else {
                format!("v{:07}", i).into_bytes()
            };
            (
                make_internal_key(uk.as_bytes(), seq + i as u64 * (seq > 0) as u64, t),
                v,
            )
        })
        .collect()
}

fn scan(t: &Arc<CuckooTable>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

/// What a reader returns for an added entry (deletions read back with a value of 'a's).
fn expected(e: &[(Vec<u8>, Vec<u8>)], value_len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    e.iter()
        .map(|(k, v)| {
            let v = if k[k.len() - 8] == vt::DELETION {
                vec![b'a'; value_len]
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect()
}

fn lookup(uk: &[u8]) -> Vec<u8> {
    make_internal_key(uk, MAX_SEQUENCE, vt::FOR_SEEK)
}

#[test]
fn full_key_round_trip_finds_every_key_and_no_absent_one() {
    let e = entries(1000, 100);
    let bytes = build(CuckooTableBuilderOptions::default(), &e).unwrap();
    let t = open(bytes, InternalKeyComparator::default()).unwrap();
    t.verify().unwrap();
    assert!(!t.is_last_level());
    assert_eq!(t.hash_table_size(), (1000.0 / 0.9) as u64);
    assert_eq!(t.properties().num_entries, 1000);
    assert_eq!(t.properties().num_deletions, 143);
    assert_eq!(t.properties().fixed_key_len, 24);
    for (k, v) in expected(&e, 8) {
        let got = t.get(&lookup(user_key(&k))).unwrap();
        assert_eq!(got, Some((k.clone(), v)), "{:?}", String::from_utf8_lossy(&k));
    }
    for i in 0..1000 {
        for absent in [format!("key{:013}", i * 3 + 1), format!("kex{:013}", i)] {
            assert_eq!(t.get(&lookup(absent.as_bytes())).unwrap(), None);
        }
    }
    assert_eq!(t.get(&lookup(b"short")).unwrap(), None);
    assert_eq!(scan(&t), expected(&e, 8));
}

#[test]
fn get_honours_the_lookup_sequence_number() {
    let e = vec![(make_internal_key(b"abcdefgh", 10, vt::VALUE), b"v".to_vec())];
    let t = open(
        build(CuckooTableBuilderOptions::default(), &e).unwrap(),
        Default::default(),
    )
    .unwrap();
    let at = |s| t.get(&make_internal_key(b"abcdefgh", s, vt::FOR_SEEK)).unwrap();
    assert_eq!(at(9), None);
    assert_eq!(at(10), Some((e[0].0.clone(), b"v".to_vec())));
    let mut hits = Vec::new();
    assert_eq!(t.multi_get(&[b"abcdefgh"], 9, |i, _, _| hits.push(i)).unwrap(), 0);
    assert_eq!(t.multi_get(&[b"abcdefgh"], 10, |i, _, _| hits.push(i)).unwrap(), 1);
    assert_eq!(hits, vec![0]);
}

#[test]
fn sequence_zero_file_stores_bare_user_keys() {
    let e = entries(500, 0)
        .into_iter()
        .filter(|(k, _)| k[k.len() - 8] == vt::VALUE)
        .collect::<Vec<_>>();
    let bytes = build(CuckooTableBuilderOptions::default(), &e).unwrap();
    let full = build(
        CuckooTableBuilderOptions::default(),
        &e.iter()
            .map(|(k, v)| (make_internal_key(user_key(k), 1, vt::VALUE), v.clone()))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let t = open(bytes, Default::default()).unwrap();
    t.verify().unwrap();
    assert!(t.is_last_level());
    assert_eq!(t.properties().fixed_key_len, 16);
    assert_eq!(t.properties().raw[prop::IS_LAST_LEVEL], vec![1]);
    assert_eq!(t.properties().raw[prop::USER_KEY_LENGTH], 16u32.to_le_bytes());
    // 8 bytes less per bucket than the same keys with sequence numbers
    let buckets = t.hash_table_size() + 4;
    assert_eq!(t.properties().data_size, buckets * 24);
    let tf = open(full, Default::default()).unwrap();
    assert_eq!(tf.properties().data_size, buckets * 32);
    for (k, v) in &e {
        assert_eq!(t.get(&lookup(user_key(k))).unwrap(), Some((k.clone(), v.clone())));
    }
    assert_eq!(scan(&t), e);
}

#[test]
fn later_sequence_numbers_or_deletions_switch_to_full_keys() {
    let mut e = entries(60, 0);
    // first key seq 0, then a deletion (i = 3), then keys with sequence numbers
    for (i, (k, _)) in e.iter_mut().enumerate().skip(10) {
        let t = k[k.len() - 8];
        *k = make_internal_key(&k[..k.len() - 8], i as u64, t);
    }
    let t = open(
        build(CuckooTableBuilderOptions::default(), &e).unwrap(),
        Default::default(),
    )
    .unwrap();
    t.verify().unwrap();
    assert!(!t.is_last_level());
    assert_eq!(scan(&t), expected(&e, 8));
}

#[test]
fn module_hash_and_mask_hash_size_the_table_as_rocksdb() {
    let e = entries(3000, 5);
    for (module, size) in [(true, (3000.0 / 0.9) as u64), (false, 4096)] {
        let o = opts(CuckooTableOptions {
            use_module_hash: module,
            ..Default::default()
        });
        let t = open(build(o, &e).unwrap(), Default::default()).unwrap();
        t.verify().unwrap();
        assert_eq!(t.hash_table_size(), size);
        assert_eq!(t.properties().raw[prop::USE_MODULE_HASH], vec![module as u8]);
        assert_eq!(scan(&t), expected(&e, 8));
    }
    let h = CuckooHasher {
        table_size: 1000,
        use_module_hash: true,
        identity_as_first_hash: false,
    };
    let raw = h.raw(b"some key", 1);
    assert_eq!(raw, crate::hash::murmur64a(b"some key", 816_922_183));
    assert_eq!(h.bucket(b"some key", 1), raw % 1000);
    let m = CuckooHasher {
        table_size: 1024,
        use_module_hash: false,
        ..h
    };
    assert_eq!(m.bucket(b"some key", 1), raw & 1023);
    assert_eq!(h.raw(b"some key", 0), crate::hash::murmur64a(b"some key", 0));
}

#[test]
fn identity_first_hash_uses_the_key_bytes_and_a_uint64_comparator_sorts() {
    let icmp = InternalKeyComparator::new(Arc::new(Uint64Comparator));
    let keys: Vec<u64> = (0..2000u64).map(|i| i * 2).collect();
    let e: Vec<_> = keys
        .iter()
        .map(|k| {
            (
                make_internal_key(&k.to_le_bytes(), 0, vt::VALUE),
                k.to_le_bytes()[..4].to_vec(),
            )
        })
        .collect();
    let o = CuckooTableBuilderOptions {
        icmp: icmp.clone(),
        table: CuckooTableOptions {
            identity_as_first_hash: true,
            use_module_hash: false,
            hash_table_ratio: 0.95,
            ..Default::default()
        },
        ..Default::default()
    };
    let bytes = build(o, &e).unwrap();
    let t = open(bytes, icmp).unwrap();
    t.verify().unwrap();
    assert_eq!(t.hash_table_size(), 4096);
    let h = CuckooHasher {
        table_size: 4096,
        use_module_hash: false,
        identity_as_first_hash: true,
    };
    assert_eq!(h.raw(&0x0102_0304_0506_0708u64.to_le_bytes(), 0), 0x0102_0304_0506_0708);
    // keys are spread evenly by the identity hash: almost all sit in their first block
    let data = t.data_for_tests();
    let mut first_block = 0;
    for k in &keys {
        let b0 = h.bucket(&k.to_le_bytes(), 0) as usize;
        if (b0..b0 + 5).any(|b| data[b * 12..b * 12 + 8] == k.to_le_bytes()) {
            first_block += 1;
        }
    }
    assert_eq!(first_block, keys.len(), "even keys below the table size never collide");
    // numeric order (bytewise order of little-endian keys would differ)
    let got: Vec<u64> = scan(&t)
        .iter()
        .map(|(k, _)| u64::from_le_bytes(k[..8].try_into().unwrap()))
        .collect();
    assert_eq!(got, keys);
    let mut it = t.iter();
    it.seek(&make_internal_key(&301u64.to_le_bytes(), MAX_SEQUENCE, vt::FOR_SEEK));
    assert_eq!(&it.key()[..8], &302u64.to_le_bytes());
    it.prev();
    assert_eq!(&it.key()[..8], &300u64.to_le_bytes());
    it.seek_for_prev(&make_internal_key(&301u64.to_le_bytes(), 0, vt::VALUE));
    assert_eq!(&it.key()[..8], &300u64.to_le_bytes());
    it.seek_to_last();
    assert_eq!(&it.key()[..8], &3998u64.to_le_bytes());
    it.next();
    assert!(!it.valid());
    it.seek_to_first();
    it.prev();
    assert!(!it.valid());
    it.seek(&make_internal_key(&5000u64.to_le_bytes(), MAX_SEQUENCE, vt::FOR_SEEK));
    assert!(!it.valid());
    it.seek_for_prev(&make_internal_key(&0u64.to_le_bytes(), 0, vt::VALUE));
    assert_eq!(&it.key()[..8], &0u64.to_le_bytes());
}

#[test]
fn high_utilization_tables_use_more_hash_functions_and_still_find_everything() {
    let e: Vec<_> = (0..4000u32)
        .map(|i| (make_internal_key(&i.to_be_bytes(), 0, vt::VALUE), vec![7u8; 4]))
        .collect();
    let o = opts(CuckooTableOptions {
        hash_table_ratio: 0.98,
        cuckoo_block_size: 1,
        ..Default::default()
    });
    let t = open(build(o, &e).unwrap(), Default::default()).unwrap();
    t.verify().unwrap();
    assert_eq!(t.hash_table_size(), (4000.0 / 0.98) as u64);
    // 98% with one bucket per block needs more than the initial two functions
    assert!(t.num_hash_func() > 2, "{}", t.num_hash_func());
    let uks: Vec<Vec<u8>> = (0..4100u32).map(|i| i.to_be_bytes().to_vec()).collect();
    let refs: Vec<&[u8]> = uks.iter().map(|k| k.as_slice()).collect();
    let mut found = vec![false; refs.len()];
    let n = t.multi_get(&refs, MAX_SEQUENCE, |i, k, v| {
        assert_eq!(user_key(k), refs[i]);
        assert_eq!(v, &[7u8; 4]);
        found[i] = true;
    });
    assert_eq!(n.unwrap(), 4000);
    assert!(found[..4000].iter().all(|f| *f) && !found[4000..].iter().any(|f| *f));
}

/// Table-driven hash for placement tests: key `[i]` has the bucket list `h[i]`.
fn fixed_hash(h: &'static [&'static [u64]]) -> impl Fn(&[u8], u32) -> u64 {
    move |k: &[u8], c: u32| h[k[0] as usize][c as usize]
}

#[test]
fn bfs_takes_the_shortest_displacement_path() {
    // A@0 (alt 5), C@5 (alt 6), D@6 (alt 7, free), B@2 (alt 9, free); the new key E hashes to
    // 0 and 2. Through A a path needs three moves, through B one: B moves to 9, E takes 2.
    static H: &[&[u64]] = &[&[0, 5], &[5, 6], &[6, 7], &[2, 9], &[0, 2]];
    let keys: Vec<[u8; 1]> = (0..5u8).map(|i| [i]).collect();
    let p = PlacementParams {
        table_size: 16,
        cuckoo_block_size: 1,
        max_search_depth: 100,
        max_num_hash_func: 2,
    };
    let r = place(5, |i| &keys[i as usize][..], fixed_hash(H), p).unwrap();
    let at = |k: u32| r.buckets.iter().position(|&x| x == k).unwrap();
    assert_eq!((at(0), at(1), at(2), at(3), at(4)), (0, 5, 6, 9, 2));
    assert_eq!(r.num_hash_func, 2);
    assert_eq!(r.buckets.iter().filter(|&&x| x != EMPTY).count(), 5);

    // With depth 1 allowed and only the long path left, placement adds a function or fails.
    static H2: &[&[u64]] = &[&[0, 5, 1], &[5, 6, 1], &[6, 7, 1], &[2, 0, 1], &[0, 2, 3]];
    let p1 = PlacementParams {
        max_search_depth: 1,
        ..p
    };
    let e = place(5, |i| &keys[i as usize][..], fixed_hash(H2), p1).unwrap_err();
    assert!(e.is_not_supported(), "{e}");
    assert!(e.to_string().contains("max_search_depth 1"), "{e}");
    let p3 = PlacementParams {
        max_num_hash_func: 3,
        ..p1
    };
    let r = place(5, |i| &keys[i as usize][..], fixed_hash(H2), p3).unwrap();
    assert_eq!(r.num_hash_func, 3);
    assert_eq!(r.buckets[3], 4, "the third function's bucket takes the new key");
    // the long path is taken when the depth allows it
    let r = place(5, |i| &keys[i as usize][..], fixed_hash(H2), p).unwrap();
    assert_eq!(r.num_hash_func, 2);
    let at = |k: u32| r.buckets.iter().position(|&x| x == k).unwrap();
    assert_eq!((at(0), at(1), at(2), at(4)), (5, 6, 7, 0));
}

#[test]
fn cuckoo_blocks_take_the_next_buckets_before_another_function() {
    // Three keys with the same buckets [4, 9]: block size 3 keeps them all at 4..7.
    static H: &[&[u64]] = &[&[4, 9], &[4, 9], &[4, 9]];
    let keys: Vec<[u8; 1]> = (0..3u8).map(|i| [i]).collect();
    let p = PlacementParams {
        table_size: 10,
        cuckoo_block_size: 3,
        max_search_depth: 10,
        max_num_hash_func: 2,
    };
    let r = place(3, |i| &keys[i as usize][..], fixed_hash(H), p).unwrap();
    assert_eq!(r.buckets.len(), 12);
    assert_eq!(&r.buckets[4..7], &[0, 1, 2]);
}

#[test]
fn bad_options_and_inputs_are_clear_errors() {
    for (t, field) in [
        (
            CuckooTableOptions {
                hash_table_ratio: 0.0,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
        (
            CuckooTableOptions {
                hash_table_ratio: 1.5,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
        (
            CuckooTableOptions {
                hash_table_ratio: f64::NAN,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
        (
            CuckooTableOptions {
                max_search_depth: 0,
                ..Default::default()
            },
            "max_search_depth",
        ),
        (
            CuckooTableOptions {
                cuckoo_block_size: 0,
                ..Default::default()
            },
            "cuckoo_block_size",
        ),
    ] {
        let e = t.validate().unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains(field), "{e}");
        let e = build(opts(t), &entries(3, 1)).unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains(field), "{e}");
    }
    CuckooTableOptions::default().validate().unwrap();

    let mut b = CuckooTableBuilder::new(Default::default(), Box::new(VecFile::default()));
    b.add(&make_internal_key(b"key00001", 5, vt::VALUE), b"val1").unwrap();
    let cases: Vec<(Vec<u8>, &[u8], &str)> = vec![
        (make_internal_key(b"key00002", 5, vt::MERGE), b"val2", "merge"),
        (
            make_internal_key(b"key00002", 5, vt::SINGLE_DELETION),
            b"val2",
            "Put and Delete",
        ),
        (
            make_internal_key(b"key00002", 5, vt::RANGE_DELETION),
            b"key00009",
            "range deletion",
        ),
        (
            make_internal_key(b"key0002", 5, vt::VALUE),
            b"val2",
            "keys of one length",
        ),
        (
            make_internal_key(b"key00002", 5, vt::VALUE),
            b"val22",
            "values of one length",
        ),
        (
            make_internal_key(b"key00001", 4, vt::VALUE),
            b"val1",
            "one entry per user key",
        ),
        (make_internal_key(b"key00000", 5, vt::VALUE), b"val0", "out of order"),
        (b"short".to_vec(), b"", "malformed"),
    ];
    for (k, v, msg) in cases {
        let e = b.add(&k, v).unwrap_err();
        assert!(e.to_string().contains(msg), "{msg}: {e}");
        assert!(e.is_not_supported() || e.is_invalid_argument(), "{e}");
    }
    let e = b
        .add_range_tombstone(&make_internal_key(b"a", 1, vt::VALUE), b"b")
        .unwrap_err();
    assert!(e.is_not_supported());
    // a deletion of another length of value is fine; the rejected entries left no trace
    b.add(&make_internal_key(b"key00003", 6, vt::DELETION), b"").unwrap();
    assert_eq!(b.num_entries(), 2);
    assert!(b.file_size_estimate() > 0);
    let f = VecFile::default();
    let mut b2 = CuckooTableBuilder::new(Default::default(), Box::new(f.clone()));
    b2.add(&make_internal_key(b"key00001", 5, vt::VALUE), b"val1").unwrap();
    b2.add(&make_internal_key(b"key00003", 6, vt::DELETION), b"").unwrap();
    b2.finish().unwrap();
    let t = open(f.0.lock().clone(), Default::default()).unwrap();
    assert_eq!(t.get(&lookup(b"key00003")).unwrap().unwrap().0[8], vt::DELETION);
    b.abandon();

    let o = opts(CuckooTableOptions {
        identity_as_first_hash: true,
        ..Default::default()
    });
    let mut b = CuckooTableBuilder::new(o, Box::new(VecFile::default()));
    let e = b.add(&make_internal_key(b"1234567", 1, vt::VALUE), b"v").unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("identity_as_first_hash"),
        "{e}"
    );

    // no unused key left: every 1-byte key from 0x00 to 0xff
    let all: Vec<_> = (0..=255u8)
        .map(|b| (make_internal_key(&[b], 1, vt::VALUE), vec![1]))
        .collect();
    let e = build(Default::default(), &all).unwrap_err();
    assert!(e.is_not_supported() && e.to_string().contains("unused key"), "{e}");
}

#[test]
fn unused_key_follows_rocksdb() {
    let mk = |keys: &[&[u8]]| {
        let e: Vec<_> = keys
            .iter()
            .map(|k| (make_internal_key(k, 0, vt::VALUE), b"v".to_vec()))
            .collect();
        let t = open(build(Default::default(), &e).unwrap(), Default::default()).unwrap();
        t.properties().raw[prop::EMPTY_KEY].clone()
    };
    assert_eq!(mk(&[b"b1", b"b3"]), b"b0");
    // lowering 0x00 wraps; the byte to its left is lowered instead (the wrapped byte stays)
    assert_eq!(mk(&[b"b\x00", b"c\x00"]), b"a\xff");
    // nothing below "\x00\x00": raise the largest key
    assert_eq!(mk(&[b"\x00\x00", b"c\xff"]), b"d\x00");
}

#[test]
fn empty_table_opens_and_holds_nothing() {
    let bytes = build(Default::default(), &[]).unwrap();
    let t = open(bytes, Default::default()).unwrap();
    t.verify().unwrap();
    assert_eq!(t.get(&lookup(b"anything")).unwrap(), None);
    assert_eq!(t.multi_get(&[b"x"], MAX_SEQUENCE, |_, _, _| {}).unwrap(), 0);
    assert!(scan(&t).is_empty());
}

#[test]
fn footer_and_properties_are_laid_out_as_rocksdb() {
    let bytes = build(Default::default(), &entries(200, 1)).unwrap();
    let n = bytes.len();
    let footer = &bytes[n - 53..];
    assert_eq!(footer[0], 0, "checksum type byte");
    assert_eq!(&footer[41..45], &1u32.to_le_bytes(), "format_version 1");
    assert_eq!(&footer[45..], &0x926789d0c5f17873u64.to_le_bytes());
    let t = open(bytes.clone(), Default::default()).unwrap();
    let raw = &t.properties().raw;
    assert_eq!(raw[prop::NUM_HASH_FUNC].len(), 4);
    assert_eq!(raw[prop::HASH_TABLE_SIZE], 222u64.to_le_bytes());
    assert_eq!(raw[prop::VALUE_LENGTH], 8u64.to_le_bytes());
    assert_eq!(raw[prop::CUCKOO_BLOCK_SIZE], 5u32.to_le_bytes());
    assert_eq!(raw[prop::IDENTITY_AS_FIRST_HASH], vec![0]);
    assert_eq!(raw[prop::EMPTY_KEY].len(), 24);
    assert_eq!(t.properties().data_size, 226 * 32);
    assert_eq!(t.properties().num_data_blocks, 1);
    assert!(t.approximate_memory_usage() >= n);
    // empty buckets: the unused key padded with 'a'
    let empty = &raw[prop::EMPTY_KEY];
    let mut bucket = empty.clone();
    bucket.resize(32, b'a');
    let empties = bytes[..226 * 32].chunks(32).filter(|c| *c == bucket.as_slice()).count();
    assert_eq!(empties, 26);
}

/// Content of a table as (internal key, value), or the error that stopped it.
fn content(bytes: Vec<u8>, probes: &[Vec<u8>]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let t = open(bytes, Default::default())?;
    t.verify()?;
    // lookups must not panic whatever the bytes are
    for p in probes {
        let _ = t.get(&lookup(p));
    }
    let refs: Vec<&[u8]> = probes.iter().map(|p| p.as_slice()).collect();
    let _ = t.multi_get(&refs, MAX_SEQUENCE, |_, _, _| {});
    let mut it = t.iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

#[test]
fn every_byte_flip_and_truncation_is_corruption_or_confined() {
    for (seq, ukl) in [(0u64, 16), (9, 16), (0, 8), (9, 8)] {
        let e: Vec<_> = entries_with(24, seq, ukl)
            .into_iter()
            .filter(|(k, _)| seq > 0 || k[k.len() - 8] == vt::VALUE)
            .collect();
        let good = build(Default::default(), &e).unwrap();
        let want = expected(&e, 8);
        let probes: Vec<Vec<u8>> = e.iter().map(|(k, _)| user_key(k).to_vec()).collect();
        assert_eq!(content(good.clone(), &probes).unwrap(), want);
        let t = open(good.clone(), Default::default()).unwrap();
        let data_end = t.properties().data_size as usize;
        let bucket_len = t.properties().fixed_key_len as usize + 8;
        for i in 0..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = good.clone();
                b[i] ^= bit;
                match content(b.clone(), &probes) {
                    Err(err) => {
                        assert!(err.is_corruption(), "byte {i}: {err}");
                        assert!(err.to_string().contains("t.sst"), "byte {i}: {err}");
                    }
                    Ok(got) => {
                        if i < data_end {
                            // no checksums: damage to a bucket that still verifies (its value,
                            // sequence number, or a key byte that leaves it reachable) changes
                            // only the entry of that bucket
                            let diff: Vec<_> = got.iter().filter(|x| !want.contains(x)).collect();
                            assert!(got.len() == want.len() && diff.len() <= 1, "byte {i}: {diff:?}");
                            if let Some((k, v)) = diff.first() {
                                let bucket = &b[i / bucket_len * bucket_len..][..bucket_len];
                                assert_eq!(&k[..ukl], &bucket[..ukl], "byte {i}");
                                assert_eq!(&v[..], &bucket[bucket_len - 8..], "byte {i}");
                            }
                        } else {
                            assert_eq!(got, want, "byte {i}");
                        }
                    }
                }
            }
        }
        for len in 0..good.len() {
            let err = content(good[..len].to_vec(), &probes).unwrap_err();
            assert!(err.is_corruption(), "len {len}: {err}");
            assert!(err.to_string().contains("t.sst"), "{err}");
        }
    }
}

#[test]
fn trailers_of_found_keys_are_the_stored_ones() {
    let e = entries(50, 1000);
    let t = open(build(Default::default(), &e).unwrap(), Default::default()).unwrap();
    for (k, _) in &e {
        let (got, _) = t.get(&lookup(user_key(k))).unwrap().unwrap();
        assert_eq!(trailer(&got), trailer(k));
    }
}

#[test]
fn impossible_geometries_in_properties_are_corruption() {
    let bytes = build(Default::default(), &entries(100, 1)).unwrap();
    let t = open(bytes, Default::default()).unwrap();
    let good = t.properties().clone();
    let data_end = good.data_size;
    CuckooTable::from_properties(good.clone(), data_end).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (prop::HASH_TABLE_SIZE, u64::MAX.to_le_bytes().to_vec()),
        (prop::HASH_TABLE_SIZE, 0u64.to_le_bytes().to_vec()),
        (prop::HASH_TABLE_SIZE, 112u64.to_le_bytes().to_vec()),
        (prop::CUCKOO_BLOCK_SIZE, u32::MAX.to_le_bytes().to_vec()),
        (prop::CUCKOO_BLOCK_SIZE, 0u32.to_le_bytes().to_vec()),
        (prop::VALUE_LENGTH, u32::MAX.to_le_bytes().to_vec()),
        (prop::NUM_HASH_FUNC, 0u32.to_le_bytes().to_vec()),
        (prop::NUM_HASH_FUNC, 1000u32.to_le_bytes().to_vec()),
        (prop::USER_KEY_LENGTH, 0u32.to_le_bytes().to_vec()),
        (prop::USER_KEY_LENGTH, 17u32.to_le_bytes().to_vec()),
        (prop::USER_KEY_LENGTH, vec![16]),
        (prop::IS_LAST_LEVEL, vec![2]),
        (prop::USE_MODULE_HASH, vec![0]),
        (prop::EMPTY_KEY, vec![0; 23]),
    ];
    for (name, v) in cases {
        let mut p = good.clone();
        p.raw.insert(name.to_string(), v.clone());
        let e = CuckooTable::from_properties(p, data_end).unwrap_err();
        assert!(e.is_corruption(), "{name} = {v:?}: {e}");
    }
    for name in [
        prop::EMPTY_KEY,
        prop::NUM_HASH_FUNC,
        prop::USER_KEY_LENGTH,
        prop::IS_LAST_LEVEL,
    ] {
        let mut p = good.clone();
        p.raw.remove(name);
        let e = CuckooTable::from_properties(p, data_end).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains(name), "{name}: {e}");
    }
    let e = CuckooTable::from_properties(good, data_end + 1).unwrap_err();
    assert!(e.is_corruption(), "{e}");
}

#[test]
fn a_table_beyond_the_limits_fails_at_finish_and_writes_nothing() {
    let o = opts(CuckooTableOptions {
        hash_table_ratio: 1.0,
        cuckoo_block_size: 1,
        max_search_depth: 1,
        ..Default::default()
    });
    let f = VecFile::default();
    let mut b = CuckooTableBuilder::new(o, Box::new(f.clone()));
    for (k, v) in entries(2000, 1) {
        b.add(&k, &v).unwrap();
    }
    let Err(e) = b.finish() else {
        panic!("the table was built despite the limits")
    };
    assert!(e.is_not_supported(), "{e}");
    assert!(e.to_string().contains("too many collisions"), "{e}");
    assert!(
        f.0.lock().is_empty(),
        "nothing may be written for a table that cannot be built"
    );
}

struct ReadFile(Vec<u8>);

impl crate::fs::RandomAccessFile for ReadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let s = offset as usize;
        buf.copy_from_slice(&self.0[s..s + buf.len()]);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

#[test]
fn open_reads_the_file_and_refuses_a_size_beyond_it() {
    let bytes = build(Default::default(), &entries(40, 3)).unwrap();
    let n = bytes.len() as u64;
    let file: Arc<dyn crate::fs::RandomAccessFile> = Arc::new(ReadFile(bytes));
    let o = crate::table::reader_options::TableReaderOptions::default();
    let t = CuckooTable::open(file.clone(), "f.sst".into(), n, &o).unwrap();
    assert_eq!((t.file_name(), t.file_size()), ("f.sst", n));
    assert!(t.get(&lookup(b"key0000000000003")).unwrap().is_some());
    // a size from a damaged MANIFEST must not become an allocation
    let e = CuckooTable::open(file.clone(), "f.sst".into(), u64::MAX / 2, &o).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("f.sst"), "{e}");
    let e = CuckooTable::open(file, "f.sst".into(), 20, &o).unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("f.sst"), "{e}");
}
