//! Unit tests of `shale bench` (flag parsing and mapping to options).

use super::*;
use shale::{ChecksumType, DBCompressionType, MemtableFactory};

#[test]
fn keys_match_db_bench_bytes() {
    let mut k = Vec::new();
    generate_key_from_int(1, 16, &mut k);
    assert_eq!(
        k,
        [0, 0, 0, 0, 0, 0, 0, 1, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30]
    );
    generate_key_from_int(0x0102_0304_0506_0708, 10, &mut k);
    assert_eq!(k, [1, 2, 3, 4, 5, 6, 7, 8, b'0', b'0']);
    // Shorter than 8 bytes: the low bytes, big-endian.
    generate_key_from_int(0x0102_0304_0506_0708, 4, &mut k);
    assert_eq!(k, [5, 6, 7, 8]);
    generate_key_from_int(999_999, 8, &mut k);
    assert_eq!(k, 999_999u64.to_be_bytes());
}

#[test]
fn prefixed_keys_match_db_bench_bytes() {
    let mut k = Vec::new();
    // 1000 keys, 10 per prefix: 100 prefixes; 12345 is in prefix 45
    generate_prefixed_key(12345, 1000, 8, 10, 16, &mut k);
    assert_eq!(k, [0, 0, 0, 0, 0, 0, 0, 45, 0, 0, 0, 0, 0, 0, 0x30, 0x39]);
    // a prefix longer than 8 bytes is padded with '0', as is the key
    generate_prefixed_key(7, 1000, 10, 10, 20, &mut k);
    let mut want = vec![0, 0, 0, 0, 0, 0, 0, 7, b'0', b'0', 0, 0, 0, 0, 0, 0, 0, 7];
    want.extend_from_slice(b"00");
    assert_eq!(k, want);
    // a short prefix and key keep their low bytes; more keys per prefix than keys: one prefix
    generate_prefixed_key(0x0102_0304, 10, 2, 100, 5, &mut k);
    assert_eq!(k, [0, 0, 2, 3, 4]);
}

#[test]
fn ctime_format() {
    assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
    assert_eq!(ctime_utc(1_700_000_000), "Tue Nov 14 22:13:20 2023");
}

#[test]
fn every_known_benchmark_has_an_action() {
    for n in KNOWN_BENCHMARKS {
        assert!(Benchmark::action(n).is_some(), "{n}");
    }
    assert!(Benchmark::action("nosuch").is_none());
}

fn parse(v: &[&str]) -> Flags {
    let args: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    Flags::parse(BENCH_FLAGS, &args).unwrap()
}

#[test]
fn range_tombstone_and_merge_flags() {
    let c = Config::from_flags(&parse(&[])).unwrap();
    assert_eq!(c.writes_per_range_tombstone, 0);
    assert_eq!(c.max_num_range_tombstones, 0);
    assert_eq!(c.range_tombstone_width, 100);
    assert_eq!(c.writes_before_delete_range, 0);
    assert!(!c.expand_range_tombstones);
    assert_eq!(c.merge_operator, "");
    assert_eq!(c.merge_keys(), 1_000_000);
    assert_eq!(c.readwrites(), 1_000_000);
    assert_eq!((c.readwritepercent, c.mergereadpercent), (90, 70));
    let c = Config::from_flags(&parse(&[
        "--writes_per_range_tombstone=1",
        "--max_num_range_tombstones=1000",
        "--range_tombstone_width=7",
        "--expand_range_tombstones",
        "--merge_operator=stringappend",
        "--merge_keys=50",
        "--num=10",
        "--reads=30",
        "--mergereadpercent=20",
        "--readwritepercent=99",
        "--min_write_buffer_number_to_merge=100",
    ]))
    .unwrap();
    assert_eq!(c.writes_per_range_tombstone, 1);
    assert_eq!(c.max_num_range_tombstones, 1000);
    assert_eq!(c.range_tombstone_width, 7);
    assert!(c.expand_range_tombstones);
    assert_eq!(c.merge_operator, "stringappend");
    assert_eq!(c.merge_keys(), 50);
    // readwrites_: the larger of the raw --reads/--writes (-1 for writes here).
    assert_eq!(c.readwrites(), 30);
    assert_eq!((c.readwritepercent, c.mergereadpercent), (99, 20));
    for bad in ["--readwritepercent=0", "--readwritepercent=100"] {
        let e = Config::from_flags(&parse(&[bad])).unwrap_err();
        assert!(e.contains("flag 'readwritepercent'"), "{e}");
    }
    assert!(Config::from_flags(&parse(&["--range_tombstone_width=-1"])).is_err());
}

#[test]
fn merge_operator_flag_to_options() {
    assert!(options_from_flags(&parse(&[])).unwrap().get_merge_operator().is_none());
    for name in ["uint64add", "UInt64AddOperator", "stringappend"] {
        let o = options_from_flags(&parse(&[&format!("--merge_operator={name}")])).unwrap();
        assert!(o.get_merge_operator().is_some(), "{name}");
    }
    let e = options_from_flags(&parse(&["--merge_operator=bogus"])).unwrap_err();
    assert_eq!(
        e,
        "invalid merge operator[bogus]: Not implemented: Could not load MergeOperator: bogus"
    );
    let o = options_from_flags(&parse(&["--min_write_buffer_number_to_merge=100"])).unwrap();
    assert_eq!(o.get_min_write_buffer_number_to_merge(), 100);
}

#[test]
fn memtablerep_and_uint64_comparator_flags() {
    let o = options_from_flags(&parse(&[])).unwrap();
    assert_eq!(o.get_memtable_factory(), MemtableFactory::SkipList);
    assert_eq!(o.get_comparator().name(), "leveldb.BytewiseComparator");
    let o = options_from_flags(&parse(&[
        "--memtablerep=vector",
        "--allow_concurrent_memtable_write=false",
    ]))
    .unwrap();
    assert_eq!(o.get_memtable_factory(), MemtableFactory::Vector);
    let o = options_from_flags(&parse(&["--memtablerep=skip_list"])).unwrap();
    assert_eq!(o.get_memtable_factory(), MemtableFactory::SkipList);
    let e = options_from_flags(&parse(&["--memtablerep=hash_linkedlist"])).unwrap_err();
    assert!(e.contains("--memtablerep") && e.contains("hash_linkedlist"), "{e}");
    // db_bench refuses the uint64 comparator unless keys are 8 bytes (the default is 16)
    let e = options_from_flags(&parse(&["--use_uint64_comparator"])).unwrap_err();
    assert_eq!(e, "Using Uint64 comparator but key size is not 8.");
    let o = options_from_flags(&parse(&["--use_uint64_comparator", "--key_size=8"])).unwrap();
    assert_eq!(o.get_comparator().name(), "rocksdb.Uint64Comparator");
}

#[test]
fn flag_mapping_to_options() {
    let args: Vec<String> = [
        "--bloom_bits=-1",
        "--cache_size=1048576",
        "--compression_type=zstd",
        "--checksum_type=crc32c",
        "--open_files=0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let fl = Flags::parse(BENCH_FLAGS, &args).unwrap();
    let o = options_from_flags(&fl).unwrap();
    assert_eq!(o.get_bloom_bits_per_key(), 0.0);
    assert_eq!(o.get_block_cache_capacity(), 1 << 20);
    assert_eq!(o.get_compression(), DBCompressionType::Zstd);
    assert_eq!(o.get_checksum_type(), ChecksumType::CRC32c);
    assert_eq!(o.get_max_open_files(), -1);
    assert_eq!(o.get_write_buffer_size(), 64 << 20);
    let fl = Flags::parse(BENCH_FLAGS, &["--compression_type=brotli".to_string()]).unwrap();
    assert!(options_from_flags(&fl).unwrap_err().contains("compression_type"));
}

#[test]
fn table_format_flags_to_options() {
    // Defaults: block-based tables, no prefix extractor, pread.
    let o = options_from_flags(&parse(&[])).unwrap();
    assert!(matches!(
        o.get_table_factory(),
        shale::options::TableFactory::BlockBased
    ));
    assert!(o.get_prefix_extractor().is_none());
    assert!(!o.get_allow_mmap_reads());

    // Plain table: db_bench's user_key_len = key_size, hash ratio 0.75, bloom bits from
    // --bloom_bits or PlainTableFactoryOptions' default when negative.
    let o = options_from_flags(&parse(&[
        "--use_plain_table",
        "--prefix_size=8",
        "--key_size=16",
        "--mmap_read=1",
    ]))
    .unwrap();
    match &o.get_table_factory() {
        shale::options::TableFactory::Plain(p) => {
            assert_eq!(p.user_key_len, 16);
            assert_eq!(p.hash_table_ratio, 0.75);
            assert_eq!(
                p.bloom_bits_per_key,
                shale::PlainTableFactoryOptions::default().bloom_bits_per_key
            );
        }
        other => panic!("expected a plain table factory, got {other:?}"),
    }
    assert!(o.get_allow_mmap_reads());
    let pe = o.get_prefix_extractor().expect("--prefix_size sets an extractor");
    assert_eq!(pe.transform(b"0123456789abcdef"), b"01234567");
    let o = options_from_flags(&parse(&["--use_plain_table", "--prefix_size=4", "--bloom_bits=3"])).unwrap();
    match &o.get_table_factory() {
        shale::options::TableFactory::Plain(p) => assert_eq!(p.bloom_bits_per_key, 3),
        other => panic!("expected a plain table factory, got {other:?}"),
    }

    // Cuckoo table: the ratio and identity hash flags; mmap reads are required (db_bench).
    let o = options_from_flags(&parse(&[
        "--use_cuckoo_table",
        "--mmap_read",
        "--cuckoo_hash_ratio=0.75",
        "--identity_as_first_hash",
    ]))
    .unwrap();
    match &o.get_table_factory() {
        shale::options::TableFactory::Cuckoo(c) => {
            assert_eq!(c.hash_table_ratio, 0.75);
            assert!(c.identity_as_first_hash);
            assert_eq!(
                c.cuckoo_block_size,
                shale::CuckooTableOptions::default().cuckoo_block_size
            );
        }
        other => panic!("expected a cuckoo table factory, got {other:?}"),
    }
    assert!(o.get_allow_mmap_reads());
    let e = options_from_flags(&parse(&["--use_cuckoo_table"])).unwrap_err();
    assert_eq!(e, "cuckoo table format requires mmap read to operate");
    let e = options_from_flags(&parse(&[
        "--use_cuckoo_table",
        "--mmap_read",
        "--cuckoo_hash_ratio=1.5",
    ]))
    .unwrap_err();
    assert_eq!(e, "Invalid cuckoo_hash_ratio");
    // Both given: plain wins, as in db_bench's if/else.
    let o = options_from_flags(&parse(&["--use_plain_table", "--use_cuckoo_table", "--prefix_size=8"])).unwrap();
    assert!(matches!(o.get_table_factory(), shale::options::TableFactory::Plain(_)));
}

#[test]
fn prefix_size_is_checked_like_db_bench() {
    let e = options_from_flags(&parse(&["--prefix_size=-1"])).unwrap_err();
    assert!(e.contains("'prefix_size'"), "{e}");
    let e = options_from_flags(&parse(&["--prefix_size=17", "--key_size=16"])).unwrap_err();
    assert_eq!(e, "prefix size is larger than key size");
    let c = Config::from_flags(&parse(&["--prefix_size=8"])).unwrap();
    assert_eq!(c.prefix_size, 8);
}

#[test]
fn multireadrandom_is_a_read_benchmark_on_the_existing_db() {
    assert!(KNOWN_BENCHMARKS.contains(&"multireadrandom"));
    match Benchmark::action("multireadrandom") {
        Some(Action::Run {
            method: Method::MultiReadRandom,
            fresh_db: false,
        }) => {}
        other => panic!("unexpected action {other:?}"),
    }
    let fl = parse(&["--batch_size=32", "--multiread_batched"]);
    let c = Config::from_flags(&fl).unwrap();
    assert_eq!(c.batch_size, 32);
    assert!(c.multiread_batched);
    assert!(
        !Config::from_flags(&parse(&["--batch_size=32"]))
            .unwrap()
            .multiread_batched
    );
}

#[test]
fn level_layout_flags_default_as_db_bench() {
    // db_bench defaults to static level sizes, unlike the library.
    let o = options_from_flags(&parse(&[])).unwrap();
    assert!(!o.get_level_compaction_dynamic_level_bytes());
    assert_eq!((o.get_num_levels(), o.get_max_bytes_for_level_multiplier()), (7, 10.0));
    assert!(shale::Options::default().get_level_compaction_dynamic_level_bytes());
    let o = options_from_flags(&parse(&[
        "--level_compaction_dynamic_level_bytes=true",
        "--num_levels=5",
        "--max_bytes_for_level_multiplier=8",
    ]))
    .unwrap();
    assert!(o.get_level_compaction_dynamic_level_bytes());
    assert_eq!((o.get_num_levels(), o.get_max_bytes_for_level_multiplier()), (5, 8.0));
    assert!(!options_from_flags(&parse(&[]))
        .unwrap()
        .get_cache_index_and_filter_blocks());
    let o = options_from_flags(&parse(&["--cache_index_and_filter_blocks=1"])).unwrap();
    assert!(o.get_cache_index_and_filter_blocks());
}

#[test]
fn blob_flags_reach_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options_from_flags(&parse(&[
        "--enable_blob_files",
        "--min_blob_size=100",
        "--blob_compression_type=lz4",
        "--blob_file_size=1048576",
        "--enable_blob_garbage_collection=true",
        "--blob_garbage_collection_age_cutoff=0.5",
    ]))
    .unwrap();
    o.create_if_missing(true);
    let db = shale::DB::open(&o, dir.path()).unwrap();
    db.put(b"small", [1u8; 99]).unwrap();
    db.put(b"large", [2u8; 100]).unwrap();
    db.flush().unwrap();
    let blobs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "blob"))
        .collect();
    assert_eq!(blobs.len(), 1, "the 100-byte value went to a blob file");
    assert_eq!(db.get(b"large").unwrap(), Some(vec![2u8; 100]));
    drop(db);
    let opts = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("OPTIONS-"))
        .unwrap();
    let text = std::fs::read_to_string(opts).unwrap();
    for l in [
        "blob_compression_type=kLZ4Compression",
        "blob_file_size=1048576",
        "enable_blob_garbage_collection=true",
        "blob_garbage_collection_age_cutoff=0.500000",
    ] {
        assert!(text.contains(l), "{l}");
    }
    let e = options_from_flags(&parse(&["--blob_garbage_collection_age_cutoff=1.5"])).unwrap_err();
    assert!(e.contains("blob_garbage_collection_age_cutoff"), "{e}");
    let e = options_from_flags(&parse(&["--blob_compression_type=brotli"])).unwrap_err();
    assert!(e.contains("blob_compression_type"), "{e}");
}
