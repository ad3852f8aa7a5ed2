//! Shale used as a `rocksdb` crate user would use RocksDB: the same option types, setters and
//! calls, so switching is a change of the `use` line. Run it with
//! `cargo run -p shale --example rocksdb_style [DIR]`. `tests/engine/rocksdb_api.rs`
//! (`the_calls_of_the_example_behave_as_it_shows`) makes the same calls and checks what they show.

use std::path::Path;

use shale::{
    BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, DBWithThreadMode, ErrorKind, IteratorMode,
    MergeOperands, MultiThreaded, Options, ReadOptions, WriteOptions, DB,
};

/// Concatenates operands onto the existing value (the `rocksdb` crate's merge closure form).
fn concat_merge(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(|e| e.to_vec()).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    Some(out)
}

/// Everything the example does, in `dir` (which it fills with two databases).
fn run(dir: &Path) -> Result<(), shale::Error> {
    // One block cache for both databases below.
    let cache = Cache::new_lru_cache(64 << 20);
    let mut table = BlockBasedOptions::default();
    table.set_block_size(16 << 10);
    table.set_bloom_filter(10.0, false);
    table.set_block_cache(&cache);
    table.set_cache_index_and_filter_blocks(true);
    table.set_format_version(5);

    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.increase_parallelism(4);
    opts.optimize_level_style_compaction(64 << 20);
    opts.set_write_buffer_size(4 << 20);
    opts.set_max_write_buffer_number(3);
    opts.set_max_background_jobs(4);
    opts.set_max_open_files(1000);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_compaction_style(DBCompactionStyle::Level);
    opts.set_block_based_table_factory(&table);
    opts.set_merge_operator_associative("concat", concat_merge);

    let db: DBWithThreadMode<MultiThreaded> = DBWithThreadMode::<MultiThreaded>::open(&opts, dir.join("main"))?;
    db.put(b"apple", b"red")?;
    db.merge(b"fruits", b"apple,")?;
    db.merge(b"fruits", b"pear")?;
    assert_eq!(db.get(b"fruits")?.as_deref(), Some(&b"apple,pear"[..]));

    let mut wo = WriteOptions::default();
    wo.set_sync(false);
    wo.disable_wal(false);
    wo.set_no_slowdown(true);
    db.put_opt(b"banana", b"yellow", &wo)?;
    db.flush_wal(true)?;

    // Reads through a snapshot see the data as it was when it was taken.
    let snapshot = db.snapshot();
    db.put(b"apple", b"green")?;
    assert_eq!(snapshot.get(b"apple")?.as_deref(), Some(&b"red"[..]));
    for item in snapshot.iterator(IteratorMode::Start) {
        let (key, value) = item?;
        println!(
            "snapshot: {:?} => {:?}",
            String::from_utf8_lossy(&key),
            String::from_utf8_lossy(&value)
        );
    }

    // Bounded iteration, not filling the cache.
    let mut ro = ReadOptions::default();
    ro.set_iterate_upper_bound(b"b".to_vec());
    ro.fill_cache(false);
    ro.set_verify_checksums(true);
    let keys: Vec<Box<[u8]>> = db
        .iterator_opt(IteratorMode::Start, ro)
        .map(|item| item.map(|(k, _)| k))
        .collect::<Result<_, _>>()?;
    assert_eq!(keys, vec![Box::<[u8]>::from(&b"apple"[..])]);

    db.flush()?;
    assert!(
        !db.key_may_exist(b"cherry"),
        "the bloom filter rules out a key never written"
    );
    assert!(db.key_may_exist(b"apple"));

    // A second database with default options, sharing nothing but the process.
    let other = DB::open_default(dir.join("other"))?;
    other.put(b"k", b"v")?;

    // Errors carry the `rocksdb` crate's kinds.
    let mut missing = Options::default();
    missing.create_if_missing(false);
    let err = DB::open(&missing, dir.join("does-not-exist")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    println!("block cache usage: {} bytes", cache.get_usage());
    Ok(())
}

fn main() -> Result<(), shale::Error> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("shale-rocksdb-style-{}", std::process::id())),
    };
    let result = run(&dir);
    if std::env::args().nth(1).is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
