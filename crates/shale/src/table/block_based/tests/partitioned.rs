//! Partitioned index (`kTwoLevelIndexSearch`) and partitioned filters: round trips in every
//! place the index and filter can live, properties, and corrupt partition handles.

use super::*;
use crate::table::block_based::partitioned_index::{BlockBasedIndexType, IndexLayout};
use crate::table::cache::BlockCache;

fn partitioned(fv: u32, metadata_block_size: u64, filters: bool) -> TableBuilderOptions {
    TableBuilderOptions {
        format_version: fv,
        block_size: 256,
        index_layout: IndexLayout {
            index_type: BlockBasedIndexType::TwoLevelIndexSearch,
            partition_filters: filters,
            metadata_block_size,
            ..Default::default()
        },
        ..tiny_opts()
    }
}

fn prop(t: &Table, name: &str) -> u64 {
    let v = t.properties().raw.get(name).unwrap_or_else(|| panic!("no {name}"));
    crate::coding::get_varint64(v).unwrap().0
}

fn open_opts(bytes: &[u8], o: TableReaderOptions) -> Arc<Table> {
    Table::open(
        Arc::new(ReadFile(bytes.to_vec())),
        "p.sst".into(),
        bytes.len() as u64,
        o,
    )
    .unwrap()
}

#[test]
fn partitioned_roundtrip_everywhere() {
    // versions > 1: one user key spans data blocks, so keys carry sequence numbers
    for (versions, fv) in [(1, 5), (3, 5), (1, 4), (1, 3), (2, 6)] {
        let es = entries(1500, versions);
        for mbs in [0u64, 64, 4096] {
            let (_, bytes) = build(partitioned(fv, mbs, true), &es, &[]);
            let t = open(bytes.clone()).unwrap();
            assert_eq!(t.properties().index_type, 2);
            let parts = prop(&t, "rocksdb.index.partitions");
            if mbs < 4096 {
                assert!(parts > 10, "fv {fv} mbs {mbs}: {parts} partitions");
            }
            assert!(prop(&t, "rocksdb.top-level.index.size") > 0);
            assert!(t
                .meta_blocks()
                .contains_key("partitionedfilter.rocksdb.BuiltinBloomFilter"));
            assert!(!t.meta_blocks().contains_key("fullfilter.rocksdb.BuiltinBloomFilter"));
            check_table(&t, &es);
            t.verify_checksums().unwrap();
            // no false negatives, few false positives
            for (k, _) in &es {
                assert!(t.key_may_match(user_key(k)));
            }
            let fp = (0..2000)
                .filter(|i| t.key_may_match(format!("nokey{i}").as_bytes()))
                .count();
            assert!(fp < 100, "{fp} false positives");
            // in the block cache, unpinned and pinned, and with a tiny cache
            for (cap, pin, top) in [
                (1 << 20, false, false),
                (1 << 20, true, false),
                (1 << 20, false, true),
                (3000, false, false),
            ] {
                let cache = Arc::new(BlockCache::new(cap));
                let t = open_opts(
                    &bytes,
                    TableReaderOptions {
                        block_cache: Some(cache.clone()),
                        cache_id: 7,
                        cache_index_and_filter_blocks: true,
                        pin_index_and_filter_in_cache: pin,
                        pin_top_level_index_and_filter: top,
                        ..Default::default()
                    },
                );
                check_table(&t, &es);
                assert!(cache.usage() <= cache.capacity().max(cache.reserved()));
                for (k, _) in es.iter().step_by(13) {
                    assert!(t.key_may_match(user_key(k)));
                }
            }
        }
        // partitioned index with a full filter
        let (_, bytes) = build(partitioned(fv, 128, false), &es, &[]);
        let t = open(bytes).unwrap();
        assert!(t.meta_blocks().contains_key("fullfilter.rocksdb.BuiltinBloomFilter"));
        check_table(&t, &es);
    }
}

#[test]
fn partition_filters_without_two_level_index_is_a_full_filter() {
    let es = entries(300, 1);
    let mut o = partitioned(5, 64, true);
    o.index_layout.index_type = BlockBasedIndexType::BinarySearch;
    let (_, bytes) = build(o, &es, &[]);
    let t = open(bytes).unwrap();
    assert_eq!(t.properties().index_type, 0);
    assert!(t.meta_blocks().contains_key("fullfilter.rocksdb.BuiltinBloomFilter"));
    assert!(!t.properties().raw.contains_key("rocksdb.index.partitions"));
    check_table(&t, &es);
}

/// The table opened with its index and filter blocks in a fresh 64 MiB block cache.
fn in_cache(bytes: &[u8]) -> (Arc<BlockCache>, Arc<Table>) {
    let cache = Arc::new(BlockCache::new(64 << 20));
    let t = open_opts(
        bytes,
        TableReaderOptions {
            block_cache: Some(cache.clone()),
            cache_id: 3,
            cache_index_and_filter_blocks: true,
            ..Default::default()
        },
    );
    (cache, t)
}

#[test]
fn lookups_load_only_the_partition_they_need() {
    let es = entries(3000, 1);
    let (_, bytes) = build(partitioned(5, 256, true), &es, &[]);
    let (cache, t) = in_cache(&bytes);
    let parts = prop(&t, "rocksdb.index.partitions") as usize;
    assert!(parts > 20);
    let before = cache.len();
    let (k, _) = &es[1234];
    assert!(t.get(k, true, true).unwrap().is_some());
    // one index partition, one filter partition, one data block
    assert_eq!(cache.len(), before + 3, "{} partitions", parts);
}

#[test]
fn reads_without_fill_cache_leave_index_partitions_out_of_the_cache() {
    // Compaction reads its inputs with fill_cache=false: neither their data blocks nor their
    // index partitions may take the place of hot blocks in the cache.
    let es = entries(3000, 1);
    let (_, bytes) = build(partitioned(5, 256, true), &es, &[]);
    for fill in [false, true] {
        let (cache, t) = in_cache(&bytes);
        let parts = prop(&t, "rocksdb.index.partitions") as usize;
        let before = cache.len();
        let mut it = t.iter(true, fill);
        it.seek_to_first();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next();
        }
        assert_eq!(n, es.len());
        let (k, _) = &es[1234];
        assert!(t.get(k, true, fill).unwrap().is_some());
        if fill {
            assert!(cache.len() > before + parts, "{} entries", cache.len());
        } else {
            // only the filter partition the lookup probed
            assert_eq!(cache.len(), before + 1, "{parts} partitions");
        }
    }
}

#[test]
fn corrupt_partition_handles_are_corruption_not_panics() {
    let es = entries(400, 1);
    let (_, bytes) = build(partitioned(5, 64, true), &es, &[]);
    let t = open(bytes.clone()).unwrap();
    let top = t.index_handle();
    let fh = t.meta_blocks()["partitionedfilter.rocksdb.BuiltinBloomFilter"];
    drop(t);
    let mut corruptions = 0;
    for region in [top, fh] {
        for i in region.offset as usize..(region.offset + region.size) as usize {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= x;
                for in_cache in [false, true] {
                    let cache = Arc::new(BlockCache::new(1 << 20));
                    let o = TableReaderOptions {
                        block_cache: Some(cache),
                        cache_index_and_filter_blocks: in_cache,
                        verify_checksums: false,
                        ..Default::default()
                    };
                    let n = b.len() as u64;
                    let r = Table::open(Arc::new(ReadFile(b.clone())), "bad.sst".into(), n, o).and_then(|t| {
                        for (k, _) in es.iter().step_by(17) {
                            t.get(k, false, true)?;
                        }
                        let mut it = t.iter(false, true);
                        it.seek_to_first();
                        while it.valid() {
                            it.next();
                        }
                        it.status()
                    });
                    if let Err(e) = r {
                        corruptions += 1;
                        let s = e.to_string();
                        // a handle sent elsewhere may land on a "compressed" block (checksums
                        // are off here): NotSupported naming the file is fine too
                        assert!(e.is_corruption() || e.is_not_supported(), "{s}");
                        assert!(s.contains("bad.sst"), "{s}");
                        if let crate::error::Error::Corruption { offset, .. } = &e {
                            assert!(offset.is_some(), "{s}");
                        }
                    }
                }
            }
        }
    }
    assert!(corruptions > 0);
}
