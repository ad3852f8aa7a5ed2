//! Builder → reader round trips, a byte-for-byte check against a table RocksDB 7.8.3 wrote, and
//! corruption robustness.

use std::sync::Arc;

use crate::error::Result;
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, user_key, vt, InternalKeyComparator, MAX_SEQUENCE};
use crate::table::block_based::builder::{TableBuilder, TableBuilderOptions};
use crate::table::block_based::format::BLOCK_TRAILER_LEN;
use crate::table::block_based::reader::Table;
use crate::table::cache::BlockCache;
use crate::table::format::{BlockHandle, ChecksumType, DBCompressionType};
use crate::table::info::TableInfo;
use crate::table::reader_options::TableReaderOptions;
use crate::table::vec_file::VecFile;

mod partitioned;

struct ReadFile(Vec<u8>);

impl RandomAccessFile for ReadFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let s = usize::try_from(offset).unwrap_or(usize::MAX);
        match s.checked_add(buf.len()) {
            Some(e) if e <= self.0.len() => {
                buf.copy_from_slice(&self.0[s..e]);
                Ok(())
            }
            _ => Err(crate::error::Error::corrupt("short read")),
        }
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

fn build(
    opts: TableBuilderOptions,
    entries: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[(Vec<u8>, Vec<u8>)],
) -> (TableInfo, Vec<u8>) {
    let f = VecFile::default();
    let mut b = TableBuilder::new(opts, Box::new(f.clone()));
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    for (s, e) in tombstones {
        b.add_range_tombstone(s, e).unwrap();
    }
    let (info, _file) = b.finish().unwrap();
    let bytes = f.0.lock().clone();
    assert_eq!(info.file_size, bytes.len() as u64);
    (info, bytes)
}

fn open(bytes: Vec<u8>) -> Result<Arc<Table>> {
    let n = bytes.len() as u64;
    Table::open(
        Arc::new(ReadFile(bytes)),
        "test.sst".into(),
        n,
        TableReaderOptions::default(),
    )
}

fn tiny_opts() -> TableBuilderOptions {
    TableBuilderOptions {
        checksum: ChecksumType::CRC32c,
        format_version: 5,
        bloom_bits_per_key: 10.0,
        compression: DBCompressionType::None,
        file_number: 9,
        ..Default::default()
    }
}

fn abc() -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        (make_internal_key(b"a", 1, vt::VALUE), b"1".to_vec()),
        (make_internal_key(b"b", 2, vt::VALUE), b"2".to_vec()),
        (make_internal_key(b"c", 3, vt::VALUE), b"3".to_vec()),
    ]
}

#[test]
fn tiny_sst_matches_rocksdb() {
    let (info, f) = build(tiny_opts(), &abc(), &[]);
    // data block + trailer
    let data = crate::table::block_based::format::tests::tiny_data_block();
    assert_eq!(&f[..47], data.as_slice());
    assert_eq!(&f[47..52], &[0x00, 0xaf, 0x1e, 0x44, 0x77]);
    // filter block (69) + trailer
    assert_eq!(&f[52 + 64..52 + 69], &[0xff, 0x00, 0x06, 0x00, 0x00]);
    assert_eq!(f[52], 0x0a);
    assert_eq!(&f[121..126], &[0x00, 0xcb, 0x41, 0x35, 0x5a]);
    // index block (13) + trailer
    assert_eq!(&f[126..139], &[0x00, 0x01, 0x63, 0x00, 0x2f, 0, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(&f[139..144], &[0x00, 0xa8, 0x9c, 0x3b, 0x87]);
    // footer layout: checksum type, metaindex handle, index handle (126, 13), version, magic
    let n = f.len();
    let foot = &f[n - 53..];
    assert_eq!(foot[0], 1);
    let (mh, used) = BlockHandle::decode(&foot[1..]).unwrap();
    let (ih, used2) = BlockHandle::decode(&foot[1 + used..]).unwrap();
    assert_eq!(ih, BlockHandle::new(126, 13));
    assert!(foot[1 + used + used2..41].iter().all(|&b| b == 0));
    assert_eq!(
        &foot[41..],
        &[5, 0, 0, 0, 0xf7, 0xcf, 0xf4, 0x85, 0xb7, 0x41, 0xe2, 0x88]
    );
    assert_eq!(mh.offset + mh.size + 5, n as u64 - 53);
    // metaindex: fullfilter → (52, 69), rocksdb.properties → (144, _)
    let t = open(f.clone()).unwrap();
    let meta = t.meta_blocks();
    assert_eq!(meta["fullfilter.rocksdb.BuiltinBloomFilter"], BlockHandle::new(52, 69));
    assert_eq!(meta["rocksdb.properties"].offset, 144);
    assert_eq!(meta.len(), 2);
    let mb = &f[mh.offset as usize..(mh.offset + mh.size) as usize];
    assert_eq!(&mb[..3], &[0x00, 0x25, 0x02]);
    assert_eq!(&mb[3..40], b"fullfilter.rocksdb.BuiltinBloomFilter");
    assert_eq!(&mb[40..42], &[0x34, 0x45]);
    // properties as in RocksDB's table
    let p = t.properties();
    assert_eq!(p.data_size, 52);
    assert_eq!(p.index_size, 18);
    assert_eq!(p.filter_size, 69);
    assert_eq!(p.num_entries, 3);
    assert_eq!(p.num_filter_entries, 3);
    assert_eq!(p.raw_key_size, 27);
    assert_eq!(p.raw_value_size, 3);
    assert_eq!(p.num_data_blocks, 1);
    assert_eq!(p.orig_file_number, 9);
    assert!(p.index_key_is_user_key && p.index_value_is_delta_encoded);
    assert_eq!(p.filter_policy_name, "bloomfilter");
    assert_eq!(p.compression_name, "NoCompression");
    assert_eq!(p.comparator_name, "leveldb.BytewiseComparator");
    assert_eq!(p.column_family_name, "default");
    assert_eq!(p.raw["rocksdb.block.based.table.index.type"], vec![0, 0, 0, 0]);
    assert_eq!(p.raw["rocksdb.block.based.table.prefix.filtering"], b"0");
    assert_eq!(p.raw["rocksdb.block.based.table.whole.key.filtering"], b"1");
    assert_eq!(p.raw["rocksdb.format.version"], vec![0]);
    for name in [
        "rocksdb.column.family.id",
        "rocksdb.compression_options",
        "rocksdb.creating.db.identity",
        "rocksdb.creating.host.identity",
        "rocksdb.creating.session.identity",
        "rocksdb.creation.time",
        "rocksdb.deleted.keys",
        "rocksdb.file.creation.time",
        "rocksdb.fixed.key.length",
        "rocksdb.merge.operands",
        "rocksdb.merge.operator",
        "rocksdb.num.range-deletions",
        "rocksdb.oldest.key.time",
        "rocksdb.prefix.extractor.name",
        "rocksdb.property.collectors",
    ] {
        assert!(p.raw.contains_key(name), "{name}");
    }
    assert_eq!(p.raw.len(), 34); // exactly the set RocksDB 7.8.3 writes
    assert_eq!(info.num_entries, 3);
    assert_eq!(info.smallest, abc()[0].0);
    assert_eq!(info.largest, abc()[2].0);
    assert_eq!((info.smallest_seqno, info.largest_seqno), (1, 3));
    t.verify_checksums().unwrap();
    assert_eq!(
        t.get(&make_internal_key(b"b", 10, vt::FOR_SEEK), true, true)
            .unwrap()
            .unwrap()
            .1,
        b"2"
    );
}

fn entries(n: usize, versions: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 0..n {
        let uk = format!("key{:08}", i * 3);
        for j in 0..versions {
            let seq = 100_000 - (j as u64) * 10 - (i as u64 % 5);
            let t = match (i + j) % 11 {
                0 => vt::DELETION,
                5 => vt::MERGE,
                _ => vt::VALUE,
            };
            let val = if t == vt::DELETION {
                Vec::new()
            } else {
                format!("value-{i}-{j}-{}", "x".repeat(i % 37)).into_bytes()
            };
            v.push((make_internal_key(uk.as_bytes(), seq, t), val));
        }
    }
    v
}

fn check_table(t: &Arc<Table>, es: &[(Vec<u8>, Vec<u8>)]) {
    // forward
    let mut it = t.iter(true, true);
    it.seek_to_first();
    for (k, v) in es {
        assert!(it.valid());
        assert_eq!(it.key(), k.as_slice());
        assert_eq!(it.value(), v.as_slice());
        it.next();
    }
    assert!(!it.valid());
    it.status().unwrap();
    // backward
    it.seek_to_last();
    for (k, _) in es.iter().rev() {
        assert!(it.valid());
        assert_eq!(it.key(), k.as_slice());
        it.prev();
    }
    assert!(!it.valid());
    it.status().unwrap();
    // seeks and gets on a sample
    let icmp = InternalKeyComparator::default();
    for (i, (k, v)) in es.iter().enumerate().step_by(7) {
        it.seek(k);
        assert_eq!(it.key(), k.as_slice());
        let uk = user_key(k);
        let look = make_internal_key(uk, MAX_SEQUENCE, vt::FOR_SEEK);
        let got = t.get(&look, true, true).unwrap().unwrap();
        // the newest version of the user key
        let first = es.iter().find(|(kk, _)| user_key(kk) == uk).unwrap();
        assert_eq!(&got.0, &first.0);
        assert_eq!(got.1, first.1);
        let got = t.get(k, true, false).unwrap().unwrap();
        assert_eq!((&got.0, &got.1), (k, v));
        // seek_for_prev to an absent key just after k
        let mut after = uk.to_vec();
        after.push(0);
        let t2 = make_internal_key(&after, 5, vt::VALUE);
        it.seek_for_prev(&t2);
        let want = es.iter().rev().find(|(kk, _)| icmp.compare(kk, &t2).is_le()).unwrap();
        assert_eq!(it.key(), want.0.as_slice(), "sfp {i}");
        it.seek(&t2);
        match es.iter().find(|(kk, _)| icmp.compare(kk, &t2).is_ge()) {
            Some(w) => assert_eq!(it.key(), w.0.as_slice()),
            None => assert!(!it.valid()),
        }
        assert!(t
            .get(&make_internal_key(&after, MAX_SEQUENCE, vt::FOR_SEEK), true, true)
            .unwrap()
            .is_none());
    }
    // beyond the ends
    it.seek(b"zzzzzzzzzzzz");
    assert!(!it.valid());
    it.seek_for_prev(&make_internal_key(b"", 0, vt::DELETION));
    assert!(!it.valid());
    it.seek_for_prev(b"zzzzzzzzzzzzz");
    assert_eq!(it.key(), es.last().unwrap().0.as_slice());
    it.status().unwrap();
}

#[test]
fn roundtrip_all_formats_checksums_compressions() {
    let es = entries(700, 2);
    for fv in 2..=6u32 {
        for ck in [
            ChecksumType::NoChecksum,
            ChecksumType::CRC32c,
            ChecksumType::XxHash,
            ChecksumType::XxHash64,
            ChecksumType::XXH3,
        ] {
            for comp in [
                DBCompressionType::None,
                DBCompressionType::Snappy,
                DBCompressionType::Lz4,
                DBCompressionType::Zstd,
            ] {
                // exercise all combinations for fv 5, a diagonal for the rest
                if fv != 5 && !(ck as u32 + comp as u32).is_multiple_of(3) {
                    continue;
                }
                let opts = TableBuilderOptions {
                    format_version: fv,
                    checksum: ck,
                    compression: comp,
                    block_size: 1024,
                    block_restart_interval: 4,
                    ..Default::default()
                };
                let (info, bytes) = build(opts, &es, &[]);
                assert!(info.num_data_blocks > 10);
                let t = open(bytes).unwrap_or_else(|e| panic!("fv {fv} {ck:?} {comp:?}: {e}"));
                assert_eq!(t.format_version(), fv);
                assert_eq!(t.checksum_type(), ck);
                assert_eq!(t.properties().num_entries, es.len() as u64);
                // user-key separators only from fv 3 on (and only if no user key spans blocks)
                assert!(!t.properties().index_key_is_user_key || fv >= 3);
                assert_eq!(t.properties().index_value_is_delta_encoded, fv >= 4);
                t.verify_checksums().unwrap();
                check_table(&t, &es);
            }
        }
    }
}

/// Large index blocks get a search directory (`block_dir.rs`); every get and seek through it,
/// for present and absent keys, agrees with the entries, with user-key and internal-key
/// index separators and with keys sharing a long prefix.
#[test]
fn index_directory_lookups_match_the_entries() {
    let icmp = InternalKeyComparator::default();
    let long_prefix = |es: Vec<(Vec<u8>, Vec<u8>)>| -> Vec<(Vec<u8>, Vec<u8>)> {
        es.into_iter()
            .map(|(k, v)| {
                let mut nk = b"tenant-0042/objects/".to_vec();
                nk.extend_from_slice(&k);
                (nk, v)
            })
            .collect()
    };
    // user keys with several versions in one block (user-key separators), one user key with
    // versions over many blocks (internal-key separators), and a long shared prefix
    let mut hot = Vec::new();
    for u in 0..40u32 {
        for s in (1..=30u64).rev() {
            let uk = format!("hot{:04}", u * 2);
            hot.push((
                make_internal_key(uk.as_bytes(), s, vt::VALUE),
                format!("v{u}-{s}").into_bytes(),
            ));
        }
    }
    let mut kinds = Vec::new();
    for es in [entries(3000, 1), hot, long_prefix(entries(2000, 1))] {
        let opts = TableBuilderOptions {
            block_size: 256,
            ..tiny_opts()
        };
        let (info, bytes) = build(opts, &es, &[]);
        let t = open(bytes).unwrap();
        kinds.push(t.properties().index_key_is_user_key);
        let dir = t.index_directory_len().expect("a directory over the index");
        assert_eq!(dir as u64, info.num_data_blocks);
        check_table(&t, &es);
        // every key, and a probe just before and just after each user key
        let mut it = t.iter(true, true);
        for (k, _) in &es {
            let uk = user_key(k);
            let mut before = uk.to_vec();
            before.pop();
            let mut after = uk.to_vec();
            after.push(0);
            for probe in [
                k.clone(),
                make_internal_key(&before, 7, vt::VALUE),
                make_internal_key(&after, 7, vt::VALUE),
            ] {
                it.seek(&probe);
                match es.iter().find(|(kk, _)| icmp.compare(kk, &probe).is_ge()) {
                    Some(w) => assert_eq!(it.key(), w.0.as_slice()),
                    None => assert!(!it.valid()),
                }
                let got = t.get(&probe, true, false).unwrap();
                let want = es
                    .iter()
                    .find(|(kk, _)| icmp.compare(kk, &probe).is_ge())
                    .filter(|(kk, _)| user_key(kk) == user_key(&probe));
                assert_eq!(got.as_ref().map(|g| &g.0), want.map(|w| &w.0));
            }
        }
    }
    // both kinds of index separators were exercised
    assert_eq!(kinds, vec![true, false, true]);
}

#[test]
fn user_key_spanning_blocks_uses_internal_key_index() {
    // many versions of one user key span several blocks
    let mut es = Vec::new();
    for s in (1..=400u64).rev() {
        es.push((make_internal_key(b"hot", s, vt::VALUE), format!("v{s:05}").into_bytes()));
    }
    for i in 0..50 {
        es.push((
            make_internal_key(format!("z{i:03}").as_bytes(), 1, vt::VALUE),
            vec![b'q'; 30],
        ));
    }
    let opts = TableBuilderOptions {
        block_size: 256,
        ..Default::default()
    };
    let (_, bytes) = build(opts, &es, &[]);
    let t = open(bytes).unwrap();
    assert!(!t.properties().index_key_is_user_key);
    check_table(&t, &es);
    for s in [400u64, 399, 250, 37, 1] {
        let got = t
            .get(&make_internal_key(b"hot", s, vt::FOR_SEEK), true, true)
            .unwrap()
            .unwrap();
        assert_eq!(got.1, format!("v{s:05}").into_bytes());
    }
    assert!(t
        .get(&make_internal_key(b"hot", 0, vt::FOR_SEEK), true, true)
        .unwrap()
        .is_none());
}

#[test]
fn range_tombstones_and_bounds() {
    let es = abc();
    let ts = vec![
        (make_internal_key(b"b", 7, vt::RANGE_DELETION), b"bb".to_vec()),
        (make_internal_key(b"0", 5, vt::RANGE_DELETION), b"zz".to_vec()),
    ];
    let (info, bytes) = build(TableBuilderOptions::default(), &es, &ts);
    assert_eq!(info.num_entries, 5);
    assert_eq!(info.num_deletions, 2);
    assert_eq!(info.num_range_deletions, 2);
    assert_eq!(info.smallest, make_internal_key(b"0", 5, vt::RANGE_DELETION));
    assert_eq!(info.largest, make_internal_key(b"zz", MAX_SEQUENCE, vt::RANGE_DELETION));
    assert_eq!((info.smallest_seqno, info.largest_seqno), (1, 7));
    let t = open(bytes).unwrap();
    let rt = t.range_tombstones().unwrap();
    assert_eq!(rt, vec![ts[1].clone(), ts[0].clone()]);
    assert_eq!(t.properties().num_range_deletions, 2);
    assert_eq!(t.properties().num_deletions, 2);
    t.verify_checksums().unwrap();
    // only tombstones
    let (info, bytes) = build(TableBuilderOptions::default(), &[], &ts);
    assert_eq!(info.num_data_blocks, 0);
    let t = open(bytes).unwrap();
    let mut it = t.iter(true, true);
    it.seek_to_first();
    assert!(!it.valid());
    it.status().unwrap();
    assert_eq!(t.range_tombstones().unwrap().len(), 2);
    assert!(t
        .get(&make_internal_key(b"a", 9, vt::FOR_SEEK), true, true)
        .unwrap()
        .is_none());
}

#[test]
fn builder_rejects_bad_input() {
    let f = VecFile::default();
    let mut b = TableBuilder::new(TableBuilderOptions::default(), Box::new(f.clone()));
    b.add(&make_internal_key(b"b", 1, vt::VALUE), b"").unwrap();
    assert!(b.add(&make_internal_key(b"a", 1, vt::VALUE), b"").is_err());
    assert!(b.add(&make_internal_key(b"b", 1, vt::VALUE), b"").is_err());
    assert!(b.add(b"short", b"").is_err());
    b.abandon();
    let mut b = TableBuilder::new(
        TableBuilderOptions {
            format_version: 7,
            ..Default::default()
        },
        Box::new(f),
    );
    assert!(b
        .add(&make_internal_key(b"b", 1, vt::VALUE), b"")
        .unwrap_err()
        .is_invalid_argument());
}

#[test]
fn filter_and_cache() {
    let es = entries(2000, 1);
    let (_, bytes) = build(TableBuilderOptions::default(), &es, &[]);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let n = bytes.len() as u64;
    let t = Table::open(
        Arc::new(ReadFile(bytes.clone())),
        "f.sst".into(),
        n,
        TableReaderOptions {
            block_cache: Some(cache.clone()),
            cache_id: 42,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(t.has_filter());
    for (k, _) in &es {
        assert!(t.key_may_match(user_key(k)));
    }
    let misses = (0..1000)
        .filter(|i| t.key_may_match(format!("nokey{i}").as_bytes()))
        .count();
    assert!(misses < 40, "{misses}");
    check_table(&t, &es);
    assert!(cache.usage() > 0);
    assert!(t.approximate_memory_usage() > 0);
    // a reader without the filter still finds everything
    let t2 = Table::open(
        Arc::new(ReadFile(bytes)),
        "f.sst".into(),
        n,
        TableReaderOptions {
            use_filter: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!t2.has_filter());
    check_table(&t2, &es);
    // approximate offsets grow
    let a = t.approximate_offset_of(&es[10].0);
    let b = t.approximate_offset_of(&es[1500].0);
    assert!(a < b);
}

#[test]
fn legacy_bloom_for_old_formats() {
    let es = entries(300, 1);
    let (_, bytes) = build(
        TableBuilderOptions {
            format_version: 4,
            ..Default::default()
        },
        &es,
        &[],
    );
    let t = open(bytes).unwrap();
    let fh = t.meta_blocks()["fullfilter.rocksdb.BuiltinBloomFilter"];
    let raw = t.read_block(fh, true).unwrap();
    assert_ne!(raw[raw.len() - 5], 0xff); // legacy metadata: num_probes
    for (k, _) in &es {
        assert!(t.key_may_match(user_key(k)));
    }
}

#[test]
fn fv6_layout() {
    let (_, f) = build(
        TableBuilderOptions {
            format_version: 6,
            checksum: ChecksumType::XXH3,
            ..tiny_opts()
        },
        &abc(),
        &[],
    );
    let n = f.len();
    let foot = &f[n - 53..];
    assert_eq!(&foot[1..5], &[0x3e, 0x00, 0x7a, 0x00]);
    let msize = u32::from_le_bytes(foot[13..17].try_into().unwrap()) as usize;
    let t = open(f.clone()).unwrap();
    assert_eq!(
        t.metaindex_handle(),
        BlockHandle::new((n - 53 - 5 - msize) as u64, msize as u64)
    );
    assert!(t.meta_blocks().contains_key("rocksdb.index"));
    assert_eq!(t.index_handle(), t.meta_blocks()["rocksdb.index"]);
    // data block bytes are the same as fv5; the trailer carries the context
    assert_eq!(
        &f[..47],
        crate::table::block_based::format::tests::tiny_data_block().as_slice()
    );
    t.verify_checksums().unwrap();
    check_table(&t, &abc());
}

/// Flip every byte / truncate at every length: open, iterate and get must not panic, and
/// whatever they return successfully must be correct data.
#[test]
fn corruption_never_panics() {
    for (fv, ck, comp) in [
        (5, ChecksumType::CRC32c, DBCompressionType::None),
        (6, ChecksumType::XXH3, DBCompressionType::Snappy),
        (3, ChecksumType::NoChecksum, DBCompressionType::Lz4),
    ] {
        let es = entries(40, 2);
        let ts = vec![(make_internal_key(b"key", 3, vt::RANGE_DELETION), b"kez".to_vec())];
        let opts = TableBuilderOptions {
            format_version: fv,
            checksum: ck,
            compression: comp,
            block_size: 256,
            ..Default::default()
        };
        let (_, bytes) = build(opts, &es, &ts);
        let probe = |b: Vec<u8>| {
            let Ok(t) = open(b) else { return };
            let _ = t.verify_checksums();
            let _ = t.range_tombstones();
            let mut it = t.iter(ck != ChecksumType::NoChecksum, false);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < 10_000 {
                if ck != ChecksumType::NoChecksum {
                    // verified blocks must hold the right data
                    assert!(
                        es.iter().any(|(k, v)| k == it.key() && v == it.value()),
                        "wrong data returned"
                    );
                }
                it.next();
                n += 1;
            }
            it.seek_to_last();
            n = 0;
            while it.valid() && n < 10_000 {
                it.prev();
                n += 1;
            }
            for (k, _) in es.iter().step_by(9) {
                it.seek(k);
                it.seek_for_prev(k);
                if let Ok(Some((gk, gv))) = t.get(k, true, false) {
                    if ck != ChecksumType::NoChecksum {
                        assert!(es.iter().any(|(k2, v2)| *k2 == gk && *v2 == gv));
                    }
                }
            }
        };
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            probe(b);
        }
        for cut in 0..bytes.len() {
            probe(bytes[..cut].to_vec());
        }
    }
}

#[test]
fn open_errors_name_the_file() {
    let (_, bytes) = build(tiny_opts(), &abc(), &[]);
    let n = bytes.len();
    let mut b = bytes.clone();
    b[n - 1] ^= 1;
    let e = open(b).unwrap_err();
    assert!(e.is_corruption());
    assert!(
        e.to_string().contains("bad magic") && e.to_string().contains("test.sst"),
        "{e}"
    );
    let mut b = bytes.clone();
    b[n - 53] = 9;
    let e = open(b).unwrap_err();
    assert!(
        e.to_string().contains("checksum type") && e.to_string().contains("test.sst"),
        "{e}"
    );
    let mut b = bytes.clone();
    b[n - 12] = 8;
    let e = open(b).unwrap_err();
    assert!(
        e.to_string().contains("format_version") && e.to_string().contains("test.sst"),
        "{e}"
    );
    let e = open(vec![]).unwrap_err();
    assert!(e.is_corruption());
    // a flipped byte in the index block is a checksum mismatch naming the offset
    let mut b = bytes.clone();
    b[130] ^= 0x10;
    let e = open(b).unwrap_err();
    assert!(
        e.to_string().contains("checksum mismatch") && e.to_string().contains("offset 126"),
        "{e}"
    );
    // a flipped data byte is found by verify_checksums and by reads
    let mut b = bytes;
    b[20] ^= 0x10;
    let t = open(b).unwrap();
    assert!(t.verify_checksums().unwrap_err().to_string().contains("offset 0"));
    assert!(t.get(&make_internal_key(b"b", 9, vt::FOR_SEEK), true, true).is_err());
    let mut it = t.iter(true, true);
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().is_err());
}

#[test]
fn index_with_first_key_and_old_style_tables() {
    // Hand-build a table whose index uses kBinarySearchWithFirstKey (type 3), full handles and
    // internal-key separators, and no index properties except the index type.
    use crate::table::block::BlockBuilder;
    use crate::table::block_based::format::{trailer_checksum, Footer};
    let mut file = Vec::new();
    let ck = ChecksumType::XxHash64;
    let write = |file: &mut Vec<u8>, raw: &[u8]| {
        let h = BlockHandle::new(file.len() as u64, raw.len() as u64);
        file.extend_from_slice(raw);
        file.push(0);
        file.extend_from_slice(&trailer_checksum(ck, raw, 0, 0, h.offset).to_le_bytes());
        h
    };
    let es = entries(30, 1);
    let mut index = BlockBuilder::new(1, false);
    for chunk in es.chunks(7) {
        let mut db = BlockBuilder::new(16, false);
        for (k, v) in chunk {
            db.add(k, v);
        }
        let h = write(&mut file, &db.finish());
        let mut val = h.encoded();
        crate::coding::put_lpslice(&mut val, &chunk[0].0);
        index.add(&chunk.last().unwrap().0, &val);
    }
    let ih = write(&mut file, &index.finish());
    let mut pb = BlockBuilder::new(usize::MAX, false);
    pb.add(b"rocksdb.block.based.table.index.type", &[3, 0, 0, 0]);
    let ph = write(&mut file, &pb.finish());
    let mut mb = BlockBuilder::new(1, false);
    mb.add(b"rocksdb.properties", &ph.encoded());
    let mh = write(&mut file, &mb.finish());
    for fv in [0u32, 1, 2] {
        let ck = if fv == 0 { ChecksumType::CRC32c } else { ck };
        if fv == 0 {
            continue; // legacy footer implies CRC32c; covered by the footer tests
        }
        let mut f = file.clone();
        f.extend_from_slice(
            &Footer {
                checksum: ck,
                format_version: fv,
                metaindex: mh,
                index: ih,
                base_context_checksum: 0,
            }
            .encode(0),
        );
        let t = open(f).unwrap();
        assert_eq!(t.properties().index_type, 3);
        t.verify_checksums().unwrap();
        check_table(&t, &es);
    }
    // a flat index claimed to be partitioned: its data blocks, read as index partitions, give
    // Corruption (never a panic)
    let mut file2 = file[..ph.offset as usize].to_vec();
    let mut pb = BlockBuilder::new(usize::MAX, false);
    pb.add(b"rocksdb.block.based.table.index.type", &[2, 0, 0, 0]);
    let ph2 = write(&mut file2, &pb.finish());
    let mut mb = BlockBuilder::new(1, false);
    mb.add(b"rocksdb.properties", &ph2.encoded());
    let mh2 = write(&mut file2, &mb.finish());
    file2.extend_from_slice(
        &Footer {
            checksum: ck,
            format_version: 2,
            metaindex: mh2,
            index: ih,
            base_context_checksum: 0,
        }
        .encode(0),
    );
    let r = open(file2).and_then(|t| {
        let mut it = t.iter(true, true);
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        it.status()
    });
    let e = r.unwrap_err();
    assert!(e.is_corruption() && e.to_string().contains("test.sst"), "{e}");
}

#[test]
fn v7_compression_property() {
    let _ = crate::table::properties::TableProperties::default();
    let ok = |s: &str| crate::table::block_based::reader::tests_check_v7(s.as_bytes());
    assert!(ok("BuiltinV2;04;").is_ok());
    assert!(ok("BuiltinV2;0407;extra").is_ok());
    assert!(ok(";;").is_ok());
    assert!(ok("BuiltinV2;;").is_ok());
    assert!(ok("Custom;04;").unwrap_err().is_not_supported());
    assert!(ok("BuiltinV2;4;").unwrap_err().is_corruption());
    assert!(ok("BuiltinV2;00;").unwrap_err().is_corruption());
    assert!(ok("BuiltinV2").unwrap_err().is_corruption());
    assert!(ok("BuiltinV2;04").unwrap_err().is_corruption());
    assert!(ok(";04;").unwrap_err().is_corruption());
    let _ = BLOCK_TRAILER_LEN;
}

/// Writes sample SSTs to `$SHALE_DUMP_SST` (a directory) for cross-checking with the Python
/// reference decoders (an independent reimplementation in Python); no-op otherwise. Also reads any
/// `py_*.sst` files found there (written by the Python writers) and checks them.
#[test]
fn dump_for_python_crosscheck() {
    let Ok(dir) = std::env::var("SHALE_DUMP_SST") else {
        return;
    };
    let es = entries(3000, 1);
    for fv in 2..=6u32 {
        for ck in [
            ChecksumType::NoChecksum,
            ChecksumType::CRC32c,
            ChecksumType::XxHash,
            ChecksumType::XxHash64,
            ChecksumType::XXH3,
        ] {
            let opts = TableBuilderOptions {
                format_version: fv,
                checksum: ck,
                block_restart_interval: 16,
                ..Default::default()
            };
            let (_, bytes) = build(
                opts,
                &es,
                &[(make_internal_key(b"key", 7, vt::RANGE_DELETION), b"kez".to_vec())],
            );
            std::fs::write(format!("{dir}/rs_fv{fv}_ck{}.sst", ck as u8), bytes).unwrap();
        }
    }
    let (_, bytes) = build(tiny_opts(), &abc(), &[]);
    std::fs::write(format!("{dir}/rs_tiny.sst"), bytes).unwrap();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("py_") && name.ends_with(".sst") {
            let t = open(std::fs::read(&p).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"));
            t.verify_checksums().unwrap();
            let mut it = t.iter(true, true);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                let got = t.get(it.key(), true, true).unwrap().unwrap();
                assert_eq!(got.0, it.key());
                n += 1;
                it.next();
            }
            it.status().unwrap();
            eprintln!(
                "{name}: fv {} ck {:?} {n} entries OK",
                t.format_version(),
                t.checksum_type()
            );
        }
    }
}

#[test]
fn through_memfs() {
    use crate::fs::{FileSystem, MemFs};
    use std::path::Path;
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    let p = Path::new("/db/000007.sst");
    let w = fs.new_writable(p).unwrap();
    let mut b = TableBuilder::new(
        TableBuilderOptions {
            compression: DBCompressionType::Lz4,
            ..Default::default()
        },
        w,
    );
    let es = entries(500, 1);
    for (k, v) in &es {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), 500);
    assert!(b.file_size_estimate() > 0);
    let (info, mut w) = b.finish().unwrap();
    w.sync().unwrap();
    drop(w);
    assert_eq!(fs.file_size(p).unwrap(), info.file_size);
    let r = fs.open_random(p).unwrap();
    let t = Table::open(r, "000007.sst".into(), info.file_size, TableReaderOptions::default()).unwrap();
    check_table(&t, &es);
    assert_eq!(t.properties().compression_name, "LZ4");
}

#[test]
#[ignore]
fn perf_smoke() {
    let es = entries(200_000, 1);
    let (_, bytes) = build(TableBuilderOptions::default(), &es, &[]);
    let cache = Arc::new(BlockCache::new(64 << 20));
    let n = bytes.len() as u64;
    let t = Table::open(
        Arc::new(ReadFile(bytes)),
        "p.sst".into(),
        n,
        TableReaderOptions {
            block_cache: Some(cache),
            ..Default::default()
        },
    )
    .unwrap();
    let start = std::time::Instant::now();
    let mut it = t.iter(true, true);
    it.seek_to_first();
    let mut c = 0;
    while it.valid() {
        c += it.key().len();
        it.next();
    }
    eprintln!("scan: {:?} ({c})", start.elapsed());
    let start = std::time::Instant::now();
    for (k, _) in es.iter().step_by(3) {
        assert!(t.get(k, true, true).unwrap().is_some());
    }
    eprintln!("get x{}: {:?}", es.len() / 3, start.elapsed());
    let start = std::time::Instant::now();
    it.seek_to_last();
    while it.valid() {
        it.prev();
    }
    eprintln!("reverse scan: {:?}", start.elapsed());
}

/// Index and filter charged to the cache as a reservation by default; kept in the cache (evicted
/// and reloaded transparently) with `cache_index_and_filter_blocks`; pinned there if asked.
#[test]
fn index_and_filter_in_block_cache() {
    let es = entries(2000, 1);
    let (_, bytes) = build(TableBuilderOptions::default(), &es, &[]);
    let n = bytes.len() as u64;
    let open_with = |cache: &Arc<BlockCache>, id: u64, in_cache: bool, pin: bool| {
        Table::open(
            Arc::new(ReadFile(bytes.clone())),
            "c.sst".into(),
            n,
            TableReaderOptions {
                block_cache: Some(cache.clone()),
                cache_id: id,
                cache_index_and_filter_blocks: in_cache,
                pin_index_and_filter_in_cache: pin,
                ..Default::default()
            },
        )
        .unwrap()
    };

    // default: held by the table, charged as a reservation, released at close
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open_with(&cache, 1, false, false);
    let charge = t.cache_reservation();
    assert!(charge > 0);
    assert_eq!(cache.usage(), charge);
    assert!(cache.pinned_usage() >= charge);
    let held_mem = t.approximate_memory_usage();
    assert!(held_mem >= charge);
    check_table(&t, &es);
    drop(t);
    assert_eq!(cache.reserved(), 0);

    // in the cache: entries at the index and filter offsets, not in the reader's memory
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open_with(&cache, 2, true, false);
    let index_key = (2, t.index_handle().offset);
    let fh = t.meta_blocks()["fullfilter.rocksdb.BuiltinBloomFilter"];
    let filter_key = (2, fh.offset);
    assert!(cache.contains(index_key) && cache.contains(filter_key));
    assert_eq!(t.cache_reservation(), 0);
    assert!(cache.usage() >= charge);
    assert_eq!(t.approximate_memory_usage() + charge, held_mem);
    // evicted: lookups reload them
    cache.erase(index_key);
    cache.erase(filter_key);
    let _ = t.key_may_match(b"nokey-xyz");
    assert!(cache.contains(filter_key));
    check_table(&t, &es);
    assert!(cache.contains(index_key));
    let misses = (0..1000)
        .filter(|i| t.key_may_match(format!("nokey{i}").as_bytes()))
        .count();
    assert!(misses < 40, "{misses}");
    // a reader holding the index while it is evicted keeps working
    let mut it = t.iter(true, true);
    cache.erase(index_key);
    it.seek_to_first();
    let mut count = 0;
    while it.valid() {
        count += 1;
        it.next();
    }
    assert_eq!(count, es.len());

    // a cache too small for them: evicted by data blocks, reloaded, usage bounded
    let small = Arc::new(BlockCache::new(16 * 2048));
    let t = open_with(&small, 3, true, false);
    for _ in 0..3 {
        check_table(&t, &es);
        assert!(small.usage() <= small.capacity());
    }

    // pinned: survives a flood of data blocks, unpinned when the table closes (no high-priority
    // pool here, or the pool would keep the unpinned index too)
    let cache = Arc::new(BlockCache::with_high_pri_pool_ratio(1 << 20, 0.0));
    let t = open_with(&cache, 4, true, true);
    let index_key = (4, t.index_handle().offset);
    assert!(cache.pinned_usage() > 0);
    for i in 0..10_000u64 {
        cache.insert((99, i), Arc::new(crate::table::block::Block::empty()), 500);
    }
    assert!(cache.contains(index_key));
    check_table(&t, &es);
    drop(t);
    for i in 0..10_000u64 {
        cache.insert((98, i), Arc::new(crate::table::block::Block::empty()), 500);
    }
    assert!(!cache.contains(index_key));
}

/// A bytewise comparator whose separator search panics while armed (a user comparator with a bug).
struct PanickySeparator(Arc<std::sync::atomic::AtomicBool>);

impl crate::key::Comparator for PanickySeparator {
    fn name(&self) -> &str {
        "test.PanickySeparator"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        a.cmp(b)
    }
    fn find_shortest_separator(&self, start: &[u8], limit: &[u8]) -> Option<Vec<u8>> {
        assert!(!self.0.load(std::sync::atomic::Ordering::Relaxed), "separator bug");
        crate::key::Comparator::find_shortest_separator(&crate::key::BytewiseComparator, start, limit)
    }
}

#[test]
fn a_block_stays_indexed_when_the_separator_search_panics() {
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opts = TableBuilderOptions {
        icmp: InternalKeyComparator::new(Arc::new(PanickySeparator(armed.clone()))),
        block_size: 64,
        ..tiny_opts()
    };
    let es = entries(40, 1);
    let f = VecFile::default();
    let mut b = TableBuilder::new(opts, Box::new(f.clone()));
    let mut panicked = 0;
    for (i, (k, v)) in es.iter().enumerate() {
        // every fifth key: the block before it is flushed, then its index entry panics
        armed.store(i % 5 == 4, std::sync::atomic::Ordering::Relaxed);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.add(k, v))) {
            Ok(r) => r.unwrap(),
            Err(_) => {
                panicked += 1;
                armed.store(false, std::sync::atomic::Ordering::Relaxed);
                b.add(k, v).unwrap();
            }
        }
    }
    assert!(panicked >= 4, "{panicked} panics");
    b.finish().unwrap();
    let t = open(f.0.lock().clone()).unwrap();
    check_table(&t, &es);
}
