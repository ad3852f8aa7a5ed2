//! `DB::multi_get` with cuckoo files: the batched path (one hashed-and-prefetched lookup per
//! cuckoo file for all the keys that reach it) must answer exactly as `DB::get` does key by
//! key and as a model of the writes says, with files at several levels, keys overwritten or
//! deleted at newer levels, absent keys, keys of another length, and snapshots; and, with
//! block-based files on top of the cuckoo ones, merge operands and range deletions. Plain
//! files (whose batch is only prefetched) answer as `get` too.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::merge_operator::StringAppendOperator;
use shale::{CuckooTableOptions, Options, ReadOptions, DB};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const N: u64 = 3000;
const CUCKOO_MAGIC: u64 = 0x926789d0c5f17873;

fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    (i * 1000 + round).to_le_bytes().to_vec()
}

fn options(fs: &Arc<MemFs>, auto_compactions: bool) -> Options {
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(fs.clone());
        o.set_write_buffer_size(16 << 10);
        o.set_level_zero_file_num_compaction_trigger(2);
        o.set_max_bytes_for_level_base(24 << 10);
        o.set_max_bytes_for_level_multiplier(2.0);
        o.set_target_file_size_base(8 << 10);
        o.set_level_compaction_dynamic_level_bytes(false);
        o.set_disable_auto_compactions(!auto_compactions);
        o.set_cuckoo_table_factory(&CuckooTableOptions::default());
        o
    }
}

/// Apply round `round` of writes: overwrite keys `i % every == rem`, delete `i % del == 0`.
fn write_round(db: &DB, m: &mut Model, round: u64, every: u64, rem: u64, del: u64) {
    for i in 0..N {
        if i % every == rem {
            db.put(key(i), value(i, round)).unwrap();
            m.insert(key(i), value(i, round));
        } else if del > 0 && (i + round).is_multiple_of(del) {
            db.delete(key(i)).unwrap();
            m.remove(&key(i));
        }
    }
}

fn files_per_level(db: &DB) -> Vec<u64> {
    (0..7)
        .map(|l| {
            db.property_int_value(&format!("rocksdb.num-files-at-level{l}"))
                .unwrap()
                .unwrap_or(0)
        })
        .collect()
}

/// Keys to ask for: every written key, keys never written, and keys of other lengths.
fn query_keys() -> Vec<Vec<u8>> {
    let mut q: Vec<Vec<u8>> = (0..N + 300).map(key).collect();
    q.push(b"short".to_vec());
    q.push(vec![0u8; 16]);
    q.push(Vec::new());
    // A fixed shuffle (LCG) so batches mix keys of many files and levels.
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..q.len()).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        q.swap(i, (s >> 33) as usize % (i + 1));
    }
    q
}

fn check(db: &DB, ro: &ReadOptions, model: &Model, what: &str) {
    let q = query_keys();
    let singles: Vec<Option<Vec<u8>>> = q.iter().map(|k| db.get_opt(k, ro).unwrap()).collect();
    for (k, got) in q.iter().zip(&singles) {
        assert_eq!(got.as_ref(), model.get(k), "{what}: get of {k:?}");
    }
    for batch in [1usize, 2, 7, 64, 500, q.len()] {
        for (c, chunk) in q.chunks(batch).enumerate() {
            let r = db.multi_get_opt(chunk, ro);
            assert_eq!(r.len(), chunk.len());
            for (j, (k, got)) in chunk.iter().zip(r).enumerate() {
                let got = got.unwrap_or_else(|e| panic!("{what}: multi_get of {k:?} failed: {e}"));
                assert_eq!(
                    got,
                    singles[c * batch + j],
                    "{what}: multi_get (batch {batch}) differs from get for {k:?}"
                );
            }
        }
    }
}

fn sst_magics(fs: &MemFs, dir: &Path) -> Vec<u64> {
    fs.list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| {
            let b = fs.read_all(&dir.join(n)).unwrap();
            u64::from_le_bytes(b[b.len() - 8..].try_into().unwrap())
        })
        .collect()
}

#[test]
fn multi_get_over_cuckoo_levels_matches_get_and_model() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let mut model = Model::new();
    {
        // Older data pushed down the levels by automatic compactions.
        let db = DB::open(&options(&fs, true), dir).unwrap();
        write_round(&db, &mut model, 1, 1, 0, 0);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        write_round(&db, &mut model, 2, 3, 1, 11);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    let db = DB::open(&options(&fs, false), dir).unwrap();
    // Newer data in L0 files and the memtable, shadowing the levels below.
    write_round(&db, &mut model, 3, 7, 2, 13);
    db.flush().unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    write_round(&db, &mut model, 4, 5, 3, 17);
    db.flush().unwrap();
    write_round(&db, &mut model, 5, 50, 4, 0);
    let levels = files_per_level(&db);
    assert!(levels[0] >= 2, "want two L0 files, levels {levels:?}");
    assert!(
        levels[1..].iter().filter(|&&n| n > 0).count() >= 2,
        "want files at two deeper levels, levels {levels:?}"
    );
    let magics = sst_magics(&fs, dir);
    assert!(magics.len() >= 4, "{magics:?}");
    assert!(magics.iter().all(|&m| m == CUCKOO_MAGIC), "every file is a cuckoo file");
    assert!(model.len() < N as usize, "some keys are deleted");

    check(&db, &ReadOptions::default(), &model, "latest");
    let ro = {
        let mut o = ReadOptions::default();
        o.set_snapshot(&snap);
        o
    };
    check(&db, &ro, &at_snap, "snapshot");
    // Everything flushed: the same answers come from the files alone.
    db.flush().unwrap();
    check(&db, &ReadOptions::default(), &model, "flushed");
}

fn merge(db: &DB, m: &mut Model, i: u64, round: u64) {
    let op = format!("m{i}.{round}").into_bytes();
    db.merge(key(i), &op).unwrap();
    let merged = match m.get(&key(i)) {
        Some(old) => [old.as_slice(), b",", op.as_slice()].concat(),
        None => op,
    };
    m.insert(key(i), merged);
}

fn delete_range(db: &DB, m: &mut Model, from: u64, to: u64) {
    db.delete_range(key(from), key(to)).unwrap();
    for i in from..to {
        m.remove(&key(i));
    }
}

#[test]
fn multi_get_applies_merges_and_range_deletions_over_cuckoo_files() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let mut model = Model::new();
    {
        let db = DB::open(&options(&fs, true), dir).unwrap();
        write_round(&db, &mut model, 1, 1, 0, 0);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        write_round(&db, &mut model, 2, 3, 1, 11);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    // Reopened writing block-based files (the only ones with merges and range deletions);
    // the cuckoo files stay below.
    let mut o = options(&fs, false);
    let b = o.get_block_based_options();
    o.set_block_based_table_factory(&b);
    // Mapped reads here (the cuckoo reader copies from the mapping), pread in the other test.
    o.set_allow_mmap_reads(true);
    o.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(StringAppendOperator::new(
        ",",
    ))));
    let db = DB::open(&o, dir).unwrap();
    for i in (0..N).step_by(9) {
        merge(&db, &mut model, i, 3);
    }
    delete_range(&db, &mut model, 100, 400);
    db.flush().unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    for i in 200..220 {
        db.put(key(i), value(i, 4)).unwrap();
        model.insert(key(i), value(i, 4));
    }
    for i in (0..N).step_by(13) {
        merge(&db, &mut model, i, 4);
    }
    db.flush().unwrap();
    delete_range(&db, &mut model, 1000, 1100);
    for i in (0..N).step_by(29) {
        merge(&db, &mut model, i, 5);
    }
    let levels = files_per_level(&db);
    assert!(
        levels[0] >= 2 && levels[1..].iter().any(|&n| n > 0),
        "levels {levels:?}"
    );
    let magics = sst_magics(&fs, dir);
    assert!(magics.contains(&CUCKOO_MAGIC), "cuckoo files remain below");
    assert!(magics.iter().any(|&m| m != CUCKOO_MAGIC), "block-based files on top");
    assert!(
        model.get(&key(18)).is_some_and(|v| v.contains(&b',')),
        "a merge over a cuckoo value"
    );
    assert!(!model.contains_key(&key(150)) && model.contains_key(&key(210)));

    check(&db, &ReadOptions::default(), &model, "latest");
    let ro = {
        let mut o = ReadOptions::default();
        o.set_snapshot(&snap);
        o
    };
    check(&db, &ro, &at_snap, "snapshot");
}

#[test]
fn multi_get_over_plain_files_matches_get_and_model() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let plain = |auto| {
        let mut o = options(&fs, auto);
        o.set_plain_table_factory(&shale::PlainTableFactoryOptions::default());
        // One prefix per key: hash buckets with one prefix (direct) and several (sub-index).
        o.set_prefix_extractor(shale::slice_transform::new_fixed_prefix_transform(8));
        o.set_allow_mmap_reads(true);
        o
    };
    let mut model = Model::new();
    {
        let db = DB::open(&plain(true), dir).unwrap();
        write_round(&db, &mut model, 1, 1, 0, 0);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
        write_round(&db, &mut model, 2, 3, 1, 11);
        db.flush().unwrap();
        db.wait_for_compact(&Default::default()).unwrap();
    }
    let db = DB::open(&plain(false), dir).unwrap();
    write_round(&db, &mut model, 3, 7, 2, 13);
    db.flush().unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    write_round(&db, &mut model, 4, 5, 3, 17);
    let levels = files_per_level(&db);
    assert!(
        levels[0] >= 1 && levels[1..].iter().any(|&n| n > 0),
        "levels {levels:?}"
    );
    check(&db, &ReadOptions::default(), &model, "latest");
    let ro = {
        let mut o = ReadOptions::default();
        o.set_snapshot(&snap);
        o
    };
    check(&db, &ro, &at_snap, "snapshot");
}

/// The `rocksdb` crate's `CuckooTableOptions` setters reach the table factory: the OPTIONS file
/// records each value, tables built with them read back, and a bad value fails the open with
/// InvalidArgument naming the option.
#[test]
fn cuckoo_setters_reach_the_factory_and_are_validated() {
    let fs = Arc::new(MemFs::new());
    let mut t = CuckooTableOptions::default();
    t.set_hash_ratio(0.8);
    t.set_max_search_depth(20);
    t.set_cuckoo_block_size(10);
    t.set_identity_as_first_hash(true);
    t.set_use_module_hash(false);
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_env(fs.clone());
    o.set_cuckoo_table_factory(&t);
    let db = DB::open(&o, "/ck").unwrap();
    for i in 0..50u64 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    for i in 0..50u64 {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)));
    }
    let names = fs.list(Path::new("/ck")).unwrap();
    let newest = names.iter().filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    let text = String::from_utf8(fs.read_all(&Path::new("/ck").join(newest)).unwrap()).unwrap();
    for line in [
        "hash_table_ratio=0.800000",
        "max_search_depth=20",
        "cuckoo_block_size=10",
        "identity_as_first_hash=true",
        "use_module_hash=false",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    drop(db);

    type Setter = fn(&mut CuckooTableOptions);
    let bad: [(&str, Setter); 4] = [
        ("hash_table_ratio", |t| t.set_hash_ratio(1.5)),
        ("hash_table_ratio", |t| t.set_hash_ratio(f64::NAN)),
        ("max_search_depth", |t| t.set_max_search_depth(0)),
        ("cuckoo_block_size", |t| t.set_cuckoo_block_size(0)),
    ];
    for (name, set) in bad {
        let mut t = CuckooTableOptions::default();
        set(&mut t);
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(MemFs::new()));
        o.set_cuckoo_table_factory(&t);
        let e = DB::open(&o, "/bad").unwrap_err();
        assert!(e.is_invalid_argument() && e.to_string().contains(name), "{name}: {e}");
    }
}
