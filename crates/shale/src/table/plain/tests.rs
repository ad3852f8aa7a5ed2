//! PlainTable round trips, lookups, options and damaged files.

use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::error::{Error, Result};
use crate::fs::{FileSystem, MemFs};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, vt, InternalKeyComparator, MAX_SEQUENCE};
use crate::slice_transform::{FixedPrefixTransform, PrefixExtractor};
use crate::table::reader_options::TableReaderOptions;

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn memfs() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/")).unwrap();
    fs
}

fn fixed4() -> Option<Arc<dyn PrefixExtractor>> {
    Some(Arc::new(FixedPrefixTransform::new(4)))
}

/// Sorted entries: `n` user keys over `n / 7` prefixes, some with two versions, a mix of
/// types (seq-0 values use the 0xFF mark).
fn entries(n: usize, fixed_len: Option<usize>) -> Entries {
    let mut v = Vec::new();
    for i in 0..n {
        let p = i / 7;
        let mut uk = format!("p{:03}k{:04}", p, i * 3).into_bytes();
        match fixed_len {
            Some(l) => uk.resize(l, b'.'),
            None => uk.extend(std::iter::repeat_n(b'x', i % 5)),
        }
        let val = format!("value-{i}-{}", "v".repeat(i % 70)).into_bytes();
        if i % 4 == 0 {
            // two versions: newer first in internal-key order
            v.push((make_internal_key(&uk, 100 + i as u64, vt::VALUE), b"new".to_vec()));
            v.push((make_internal_key(&uk, 10 + i as u64, vt::VALUE), val));
        } else if i % 11 == 0 {
            v.push((make_internal_key(&uk, 7, vt::DELETION), Vec::new()));
        } else if i % 13 == 0 {
            v.push((make_internal_key(&uk, 8, vt::MERGE), b"operand".to_vec()));
        } else {
            v.push((make_internal_key(&uk, 0, vt::VALUE), val));
        }
    }
    v
}

fn build_to(fs: &MemFs, path: &str, o: PlainTableBuilderOptions, e: &Entries) -> Result<TableInfoAlias> {
    let file = fs.new_writable(Path::new(path))?;
    let mut b = PlainTableBuilder::new(o, file);
    for (k, v) in e {
        b.add(k, v)?;
    }
    let (info, _f) = b.finish()?;
    Ok(info)
}

/// [`build_to`] with `plain` and `prefix_extractor`, the other builder options default.
fn build_with(
    fs: &MemFs,
    path: &str,
    plain: &PlainTableFactoryOptions,
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    e: &Entries,
) -> TableInfoAlias {
    let o = PlainTableBuilderOptions {
        plain: plain.clone(),
        prefix_extractor,
        ..Default::default()
    };
    build_to(fs, path, o, e).unwrap()
}

type TableInfoAlias = crate::table::info::TableInfo;

fn open_from(
    fs: &MemFs,
    path: &str,
    plain: &PlainTableFactoryOptions,
    prefix: Option<Arc<dyn PrefixExtractor>>,
    mmap: bool,
) -> Result<Arc<PlainTable>> {
    let f = if mmap {
        fs.open_random_mmap(Path::new(path))?
    } else {
        fs.open_random(Path::new(path))?
    };
    let size = f.size();
    Ok(Arc::new(PlainTable::open(
        f,
        path.to_string(),
        size,
        &TableReaderOptions::default(),
        plain,
        prefix,
    )?))
}

fn scan(t: &Arc<PlainTable>) -> Entries {
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

fn lookup(uk: &[u8], seq: u64) -> Vec<u8> {
    make_internal_key(uk, seq, vt::FOR_SEEK)
}

fn uk_of(k: &[u8]) -> &[u8] {
    &k[..k.len() - 8]
}

/// Scan, every get (newest and at a snapshot), absent keys and seeks agree with `e`.
fn check_table(t: &Arc<PlainTable>, e: &Entries) {
    assert_eq!(scan(t), *e);
    let icmp = InternalKeyComparator::default();
    for (i, (k, v)) in e.iter().enumerate() {
        let uk = uk_of(k);
        let newest = e.iter().find(|(k2, _)| uk_of(k2) == uk).unwrap();
        let got = t.get(&lookup(uk, MAX_SEQUENCE)).unwrap();
        assert_eq!(got.as_ref(), Some(newest), "get newest {i}");
        let seq = parse_internal_key(k).unwrap().seq;
        assert_eq!(
            t.get(&lookup(uk, seq)).unwrap(),
            Some((k.clone(), v.clone())),
            "get at seq {i}"
        );
        // seek lands on this exact entry
        let mut it = t.iter();
        it.seek(&lookup(uk, seq));
        assert!(it.valid(), "seek {i}");
        assert_eq!(it.key(), &k[..]);
        // an absent key just after this user key (same prefix)
        let mut absent = uk.to_vec();
        absent.push(0);
        if !e.iter().any(|(k2, _)| uk_of(k2) == absent.as_slice()) {
            assert_eq!(t.get(&lookup(&absent, MAX_SEQUENCE)).unwrap(), None);
            let target = lookup(&absent, MAX_SEQUENCE);
            let expect = e.iter().find(|(k2, _)| icmp.compare(k2, &target).is_ge());
            let mut it = t.iter();
            it.seek(&target);
            it.status().unwrap();
            assert_eq!(it.valid().then(|| it.key().to_vec()), expect.map(|x| x.0.clone()));
        }
    }
    // absent prefix, before everything, after everything
    for uk in [&b"zzzz-none"[..], b"a", b"p000", b"q"] {
        assert_eq!(t.get(&lookup(uk, MAX_SEQUENCE)).unwrap(), None, "{uk:?}");
    }
    let mut it = t.iter();
    it.seek(&lookup(b"", MAX_SEQUENCE));
    assert_eq!(it.key(), &e[0].0[..]);
    it.seek(&lookup(b"zzzz", MAX_SEQUENCE));
    assert!(!it.valid());
    it.status().unwrap();
}

#[test]
fn round_trips_in_every_mode() {
    let fs = memfs();
    let mut n = 0;
    for fixed in [Some(12usize), None] {
        for encoding in [KeyEncodingType::Plain, KeyEncodingType::Prefix] {
            for with_prefix in [true, false] {
                if encoding == KeyEncodingType::Prefix && !with_prefix {
                    continue;
                }
                for store in [false, true] {
                    for sparse in [16usize, 3, 0] {
                        let e = entries(300, fixed);
                        let plain = PlainTableFactoryOptions {
                            user_key_len: fixed.unwrap_or(0) as u32,
                            encoding_type: encoding,
                            store_index_in_file: store,
                            index_sparseness: sparse,
                            hash_table_ratio: if with_prefix { 0.75 } else { 0.0 },
                            ..Default::default()
                        };
                        let prefix = if with_prefix { fixed4() } else { None };
                        let path = format!("/t{n}.sst");
                        n += 1;
                        let info = build_with(&fs, &path, &plain, prefix.clone(), &e);
                        assert_eq!(info.num_entries, e.len() as u64);
                        assert_eq!(info.smallest, e[0].0);
                        assert_eq!(info.largest, e.last().unwrap().0);
                        assert_eq!(info.file_size, fs.file_size(Path::new(&path)).unwrap());
                        for mmap in [false, true] {
                            let ctx = format!(
                                "{fixed:?} {encoding:?} prefix={with_prefix} store={store} sparse={sparse} mmap={mmap}"
                            );
                            let t = open_from(&fs, &path, &plain, prefix.clone(), mmap).unwrap();
                            assert_eq!(t.is_mmapped(), mmap, "{ctx}");
                            assert_eq!(t.encoding_type(), encoding, "{ctx}");
                            assert!(t.approximate_memory_usage() > 0, "{ctx}");
                            check_table(&t, &e);
                            // a reader with different sparseness/ratio builds its own index
                            if !store {
                                let other = PlainTableFactoryOptions {
                                    index_sparseness: 5,
                                    hash_table_ratio: if with_prefix { 0.3 } else { 0.0 },
                                    bloom_bits_per_key: 0,
                                    ..plain.clone()
                                };
                                let t = open_from(&fs, &path, &other, prefix.clone(), mmap).unwrap();
                                check_table(&t, &e);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn record_layout_matches_rocksdb() {
    // as in a db_bench PlainTable: 16-byte key, seq 1 Value, 20-byte value
    let fs = memfs();
    let uk = b"0123456789abcdef";
    let e = vec![(make_internal_key(uk, 1, vt::VALUE), vec![b'v'; 20])];
    let plain = PlainTableFactoryOptions {
        user_key_len: 16,
        ..Default::default()
    };
    build_to(
        &fs,
        "/a.sst",
        PlainTableBuilderOptions {
            plain,
            prefix_extractor: Some(Arc::new(FixedPrefixTransform::new(8))),
            ..Default::default()
        },
        &e,
    )
    .unwrap();
    let bytes = fs.read_all(Path::new("/a.sst")).unwrap();
    let mut expect = uk.to_vec();
    expect.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 0, 20]);
    expect.extend_from_slice(&[b'v'; 20]);
    assert_eq!(&bytes[..expect.len()], &expect[..]);
    // legacy 48-byte footer with the legacy plain magic and a null index handle
    assert_eq!(&bytes[bytes.len() - 8..], &0x4f34_18eb_7a8f_13b8u64.to_le_bytes());
    let t = open_from(
        &fs,
        "/a.sst",
        &PlainTableFactoryOptions::default(),
        Some(Arc::new(FixedPrefixTransform::new(8))),
        false,
    )
    .unwrap();
    let p = &t.properties().raw;
    assert_eq!(p["rocksdb.plain.table.encoding.type"], [0, 0, 0, 0]);
    assert_eq!(p["rocksdb.fixed.key.length"], [16]);
    assert_eq!(p["rocksdb.format.version"], [0]);
    assert_eq!(p["rocksdb.num.data.blocks"], [1]);
    assert_eq!(p["rocksdb.prefix.extractor.name"], b"rocksdb.FixedPrefix.8");
    assert_eq!(t.properties().data_size, expect.len() as u64);
    assert_eq!(t.properties().num_entries, 1);
    assert!(!p.contains_key("rocksdb.comparator")); // RocksDB's plain builder does not write it
}

#[test]
fn new_format_footer_is_read_too() {
    let fs = memfs();
    let e = entries(40, None);
    let o = PlainTableBuilderOptions {
        plain: PlainTableFactoryOptions {
            hash_table_ratio: 0.0,
            ..Default::default()
        },
        ..Default::default()
    };
    build_to(&fs, "/a.sst", o.clone(), &e).unwrap();
    let mut bytes = fs.read_all(Path::new("/a.sst")).unwrap();
    // rewrite the 48-byte legacy footer as the 53-byte one: checksum byte, handles, version 1
    let legacy = bytes.split_off(bytes.len() - 48);
    let mut footer = vec![0u8];
    footer.extend_from_slice(&legacy[..40]);
    footer.extend_from_slice(&1u32.to_le_bytes());
    footer.extend_from_slice(&0x8242_2296_63bf_9564u64.to_le_bytes());
    bytes.extend_from_slice(&footer);
    let mut w = fs.new_writable(Path::new("/b.sst")).unwrap();
    w.append(&bytes).unwrap();
    let t = open_from(&fs, "/b.sst", &o.plain, None, true).unwrap();
    check_table(&t, &e);
}

#[test]
fn bloom_rejects_absent_prefixes() {
    let fs = memfs();
    let e = entries(700, None);
    let plain = PlainTableFactoryOptions::default();
    for store in [false, true] {
        let plain = PlainTableFactoryOptions {
            store_index_in_file: store,
            ..plain.clone()
        };
        let path = format!("/b{store}.sst");
        build_with(&fs, &path, &plain, fixed4(), &e);
        let t = open_from(&fs, &path, &plain, fixed4(), true).unwrap();
        assert!(t.bloom.is_some());
        let admitted = (0..2000)
            .filter(|i| t.bloom_admits(index::slice_hash(format!("q{i:03}").as_bytes())))
            .count();
        assert!(admitted < 200, "bloom admitted {admitted} of 2000 absent prefixes");
        // present prefixes always pass
        for (k, _) in &e {
            assert!(t.bloom_admits(index::slice_hash(&k[..4])));
        }
        // bloom off: still correct
        let off = PlainTableFactoryOptions {
            bloom_bits_per_key: 0,
            ..plain.clone()
        };
        let t = open_from(&fs, &path, &off, fixed4(), false).unwrap();
        if !store {
            assert!(t.bloom.is_none());
        }
        check_table(&t, &e);
    }
}

#[test]
fn prefix_iterator_stays_in_the_prefix() {
    let fs = memfs();
    let e = entries(200, None);
    let plain = PlainTableFactoryOptions::default();
    build_with(&fs, "/p.sst", &plain, fixed4(), &e);
    let t = open_from(&fs, "/p.sst", &plain, fixed4(), true).unwrap();
    let mut it = t.prefix_iter();
    for (k, _) in &e {
        it.seek(k);
        assert!(it.valid());
        assert_eq!(it.key(), &k[..]);
    }
    it.seek(&lookup(b"q999", MAX_SEQUENCE)); // absent prefix
    assert!(!it.valid());
    it.status().unwrap();
}

#[test]
fn full_scan_mode_iterates_but_refuses_get() {
    let fs = memfs();
    let e = entries(120, Some(10));
    let plain = PlainTableFactoryOptions {
        user_key_len: 10,
        ..Default::default()
    };
    build_with(&fs, "/f.sst", &plain, fixed4(), &e);
    // no prefix extractor needed in full-scan mode
    let fsm = PlainTableFactoryOptions {
        full_scan_mode: true,
        ..plain
    };
    let t = open_from(&fs, "/f.sst", &fsm, None, false).unwrap();
    assert_eq!(scan(&t), e);
    assert!(t
        .get(&lookup(b"p000k0000", MAX_SEQUENCE))
        .unwrap_err()
        .is_invalid_argument());
    let mut it = t.iter();
    it.seek(&e[50].0);
    assert_eq!(it.key(), &e[50].0[..]);
    assert!(t.index.is_none() && t.bloom.is_none());
}

#[test]
fn backward_movement_is_not_supported() {
    let fs = memfs();
    let e = entries(20, None);
    let plain = PlainTableFactoryOptions {
        hash_table_ratio: 0.0,
        ..Default::default()
    };
    build_with(&fs, "/n.sst", &plain, None, &e);
    let t = open_from(&fs, "/n.sst", &plain, None, true).unwrap();
    let mut it = t.iter();
    it.seek_to_first();
    it.prev();
    assert!(!it.valid() && it.status().unwrap_err().is_not_supported());
    it.seek_to_last();
    assert!(!it.valid() && it.status().unwrap_err().is_not_supported());
    it.seek_for_prev(&e[3].0);
    assert!(!it.valid() && it.status().unwrap_err().is_not_supported());
    it.seek_to_first(); // recovers
    assert!(it.valid() && it.status().is_ok());
}

#[test]
fn prefix_extractor_must_match_the_file() {
    let fs = memfs();
    let e = entries(30, None);
    let plain = PlainTableFactoryOptions::default();
    build_with(&fs, "/m.sst", &plain, fixed4(), &e);
    let err = open_from(&fs, "/m.sst", &plain, None, false).unwrap_err();
    assert!(
        err.is_invalid_argument() && err.to_string().contains("rocksdb.FixedPrefix.4"),
        "{err}"
    );
    let other: Option<Arc<dyn PrefixExtractor>> = Some(Arc::new(FixedPrefixTransform::new(3)));
    let err = open_from(&fs, "/m.sst", &plain, other, false).unwrap_err();
    assert!(
        err.is_invalid_argument() && err.to_string().contains("rocksdb.FixedPrefix.3"),
        "{err}"
    );
    // total order without hash_table_ratio = 0 is RocksDB's NotSupported
    build_to(&fs, "/n.sst", PlainTableBuilderOptions::default(), &e).unwrap();
    let err = open_from(&fs, "/n.sst", &plain, None, false).unwrap_err();
    assert!(
        err.is_not_supported() && err.to_string().contains("hash_table_ratio"),
        "{err}"
    );
}

#[test]
fn builder_rejects_what_rocksdb_rejects_and_keeps_merges() {
    let fs = memfs();
    let mk = |o: PlainTableBuilderOptions| PlainTableBuilder::new(o, fs.new_writable(Path::new("/x")).unwrap());
    let mut b = mk(PlainTableBuilderOptions::default());
    assert!(b
        .add_range_tombstone(&make_internal_key(b"a", 1, vt::RANGE_DELETION), b"b")
        .unwrap_err()
        .is_not_supported());
    assert!(b
        .add(&make_internal_key(b"a", 1, vt::RANGE_DELETION), b"b")
        .unwrap_err()
        .is_not_supported());
    b.add(&make_internal_key(b"a", 5, vt::MERGE), b"m1").unwrap();
    b.add(&make_internal_key(b"a", 4, vt::MERGE), b"m2").unwrap();
    b.add(&make_internal_key(b"b", 3, vt::DELETION), b"").unwrap();
    assert!(b
        .add(&make_internal_key(b"a", 9, vt::VALUE), b"x")
        .unwrap_err()
        .is_invalid_argument()); // out of order
    assert!(b.add(b"short", b"x").unwrap_err().is_invalid_argument());
    assert_eq!(b.num_entries(), 3);
    assert!(b.file_size_estimate() > 0);
    let (info, _) = b.finish().unwrap();
    assert_eq!(
        (
            info.num_entries,
            info.num_deletions,
            info.smallest_seqno,
            info.largest_seqno
        ),
        (3, 1, 3, 5)
    );
    let plain = PlainTableFactoryOptions {
        hash_table_ratio: 0.0,
        ..Default::default()
    };
    let t = open_from(&fs, "/x", &plain, None, false).unwrap();
    assert_eq!(t.properties().num_merge_operands, 2);
    assert_eq!(t.properties().num_deletions, 1);
    assert_eq!(t.get(&lookup(b"a", MAX_SEQUENCE)).unwrap().unwrap().1, b"m1");

    let mut b = mk(PlainTableBuilderOptions {
        plain: PlainTableFactoryOptions {
            user_key_len: 3,
            ..Default::default()
        },
        ..Default::default()
    });
    let e = b.add(&make_internal_key(b"abcd", 1, vt::VALUE), b"").unwrap_err();
    assert!(e.is_invalid_argument() && e.to_string().contains("user_key_len"), "{e}");

    let b = mk(PlainTableBuilderOptions {
        plain: PlainTableFactoryOptions {
            encoding_type: KeyEncodingType::Prefix,
            ..Default::default()
        },
        ..Default::default()
    });
    let e = b.finish().err().unwrap();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("encoding_type"),
        "{e}"
    );
}

#[test]
fn bad_options_name_the_field() {
    let cases: [(PlainTableFactoryOptions, &str); 4] = [
        (
            PlainTableFactoryOptions {
                bloom_bits_per_key: -1,
                ..Default::default()
            },
            "bloom_bits_per_key",
        ),
        (
            PlainTableFactoryOptions {
                hash_table_ratio: f64::NAN,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
        (
            PlainTableFactoryOptions {
                hash_table_ratio: -0.5,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
        (
            PlainTableFactoryOptions {
                hash_table_ratio: 0.0001,
                ..Default::default()
            },
            "hash_table_ratio",
        ),
    ];
    for (o, name) in cases {
        let e = o.validate().unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains(name), "{e}");
    }
    assert!(PlainTableFactoryOptions::default().validate().is_ok());
    assert!(PlainTableFactoryOptions {
        hash_table_ratio: 2.0,
        ..Default::default()
    }
    .validate()
    .is_ok());
}

/// Open, scan, get and seek a damaged file: only Corruption / InvalidArgument / NotSupported
/// errors, no panic (the format has no checksums, so some flips change data undetectably).
fn exercise_damaged(
    fs: &MemFs,
    path: &str,
    plain: &PlainTableFactoryOptions,
    prefix: Option<Arc<dyn PrefixExtractor>>,
    probes: &Entries,
) {
    let ok_err = |e: &Error| e.is_corruption() || e.is_invalid_argument() || e.is_not_supported();
    for mmap in [false, true] {
        let t = match open_from(fs, path, plain, prefix.clone(), mmap) {
            Ok(t) => t,
            Err(e) => {
                assert!(ok_err(&e), "{e}");
                continue;
            }
        };
        let mut it = t.iter();
        it.seek_to_first();
        let mut n = 0;
        while it.valid() && n < 10_000 {
            let _ = (it.key().len(), it.value().len());
            it.next();
            n += 1;
        }
        if let Err(e) = it.status() {
            assert!(ok_err(&e), "{e}");
        }
        for (k, _) in probes.iter().step_by(3) {
            if let Err(e) = t.get(k) {
                assert!(ok_err(&e), "{e}");
            }
            let mut it = t.iter();
            it.seek(k);
            if let Err(e) = it.status() {
                assert!(ok_err(&e), "{e}");
            }
            let mut it = t.prefix_iter();
            it.seek(k);
            if let Err(e) = it.status() {
                assert!(ok_err(&e), "{e}");
            }
        }
    }
}

#[test]
fn every_byte_flip_and_truncation_is_an_error_or_data_never_a_panic() {
    let fs = memfs();
    let e = entries(24, None);
    for (i, (encoding, store)) in [
        (KeyEncodingType::Plain, false),
        (KeyEncodingType::Prefix, false),
        (KeyEncodingType::Prefix, true),
    ]
    .into_iter()
    .enumerate()
    {
        let plain = PlainTableFactoryOptions {
            encoding_type: encoding,
            store_index_in_file: store,
            index_sparseness: 2,
            ..Default::default()
        };
        let path = format!("/c{i}.sst");
        build_with(&fs, &path, &plain, fixed4(), &e);
        let good = fs.read_all(Path::new(&path)).unwrap();
        let damaged = format!("/d{i}.sst");
        for pos in 0..good.len() {
            for x in [0x01u8, 0x80, 0xFF] {
                let mut b = good.clone();
                b[pos] ^= x;
                let mut w = fs.new_writable(Path::new(&damaged)).unwrap();
                w.append(&b).unwrap();
                drop(w);
                exercise_damaged(&fs, &damaged, &plain, fixed4(), &e);
            }
        }
        for len in 0..good.len() {
            let mut w = fs.new_writable(Path::new(&damaged)).unwrap();
            w.append(&good[..len]).unwrap();
            drop(w);
            let err = open_from(&fs, &damaged, &plain, fixed4(), len % 2 == 0).unwrap_err();
            assert!(err.is_corruption(), "truncated to {len}: {err}");
            assert!(err.to_string().contains(&damaged), "{err}");
        }
    }
}

#[test]
fn corrupted_records_are_reported_with_file_and_offset() {
    let fs = memfs();
    let e = entries(30, None);
    let plain = PlainTableFactoryOptions {
        hash_table_ratio: 0.0,
        ..Default::default()
    };
    build_with(&fs, "/r.sst", &plain, None, &e);
    // variable-length keys: the first byte is the first key's length; make it huge
    assert!(fs.corrupt(Path::new("/r.sst"), 0, &[0x7f]));
    let err = open_from(&fs, "/r.sst", &plain, None, false).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let s = err.to_string();
    assert!(s.contains("/r.sst"), "{s}");
}

#[test]
fn tables_and_iterators_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<PlainTable>();
    send::<PlainTableIterator>();
}

#[test]
fn stored_index_gives_total_order_seek_points() {
    let fs = memfs();
    let e = entries(200, None);
    let plain = PlainTableFactoryOptions {
        store_index_in_file: true,
        encoding_type: KeyEncodingType::Prefix,
        index_sparseness: 4,
        ..Default::default()
    };
    build_with(&fs, "/s.sst", &plain, fixed4(), &e);
    let stored = open_from(&fs, "/s.sst", &plain, fixed4(), true).unwrap();
    let rebuilt = open_from(
        &fs,
        "/s.sst",
        &PlainTableFactoryOptions {
            store_index_in_file: false,
            ..plain.clone()
        },
        fixed4(),
        false,
    )
    .unwrap();
    // the index read from the file samples the same records the reader would pick itself
    assert!(!stored.seek_points.is_empty());
    assert_eq!(stored.seek_points, rebuilt.seek_points);
    assert_eq!(stored.properties().raw["plain_table_hash_table_size"], b"0");
    let bad = stored.get_with(b"short", false, false, |_, _| ()).unwrap_err();
    assert!(bad.is_invalid_argument());
}
