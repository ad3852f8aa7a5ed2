//! Integrated blob files (key-value separation): values of at least `min_blob_size` bytes go
//! to `NNNNNN.blob` files at flush and compaction; reads (get, multi_get, iterators both ways,
//! merges) resolve them; garbage collection and garbage accounting delete blob files no table
//! needs; a crash never leaves a blob index into a missing or half-written blob file; damaged
//! blob files are Corruption naming the file and offset.

use std::path::Path;
use std::sync::Arc;

use crate::common::crash_after::CrashAfter;
use crate::common::{all_with, assert_corruption_in, dump, mem_opts, Model};
use crate::rocksdb_api::concat_merge;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{DBCompressionType, Error, Options, WriteOptions, DB};

fn blob_opts(fs: &MemFs, min: u64) -> Options {
    let mut o = mem_opts(fs);
    o.set_enable_blob_files(true);
    o.set_min_blob_size(min);
    o.set_disable_auto_compactions(true);
    o.set_merge_operator_associative("concat", concat_merge);
    o
}

fn value(i: u64) -> Vec<u8> {
    // every 3rd value small (stays in the table), the others large
    let len = if i.is_multiple_of(3) { 40 } else { 200 + (i * 37) % 900 };
    (0..len).map(|j| b'a' + ((i + j) % 26) as u8).collect()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn blob_bytes(fs: &MemFs) -> u64 {
    all_with(fs, Path::new("/db"), ".blob")
        .iter()
        .map(|p| fs.file_size(p).unwrap())
        .sum()
}

/// Every way of reading sees `m`: get, get_pinned, multi_get, forward and backward iteration.
#[track_caller]
fn check_reads(db: &DB, m: &Model) {
    assert_eq!(&dump(db), m);
    for (k, v) in m {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "get {}",
            String::from_utf8_lossy(k)
        );
        assert_eq!(db.get_pinned(k).unwrap().as_deref(), Some(&v[..]));
    }
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    for (r, (_, v)) in db.multi_get(&keys).into_iter().zip(m) {
        assert_eq!(r.unwrap().as_ref(), Some(v));
    }
    let mut it = db.raw_iterator();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert_eq!(back, m.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
}

#[test]
fn large_values_live_in_blob_files_through_flush_reopen_and_compaction() {
    let fs = MemFs::new();
    let o = blob_opts(&fs, 100);
    let mut m = Model::new();
    {
        let db = DB::open(&o, "/db").unwrap();
        for i in 0..300 {
            db.put(key(i), value(i)).unwrap();
            m.insert(key(i), value(i));
        }
        db.flush().unwrap();
        let large: u64 = (0..300)
            .map(value)
            .filter(|v| v.len() >= 100)
            .map(|v| v.len() as u64)
            .sum();
        assert!(blob_bytes(&fs) >= large, "blob files hold the large values");
        // the table does not: it is far smaller than the values
        let sst: u64 = all_with(&fs, Path::new("/db"), ".sst")
            .iter()
            .map(|p| fs.file_size(p).unwrap())
            .sum();
        assert!(sst < large / 3, "table {sst} bytes, large values {large}");
        check_reads(&db, &m);
        // a merge over a blob value
        db.merge(key(1), b"+m").unwrap();
        m.get_mut(&key(1)).unwrap().extend_from_slice(b"+m");
        check_reads(&db, &m);
        db.flush().unwrap();
        check_reads(&db, &m);
    }
    let db = DB::open(&o, "/db").unwrap();
    check_reads(&db, &m);
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check_reads(&db, &m);
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    check_reads(&db, &m);
}

#[test]
fn min_blob_size_is_the_smallest_value_that_goes_to_a_blob_file() {
    for (len, blob) in [(99usize, false), (100, true)] {
        let fs = MemFs::new();
        let db = DB::open(&blob_opts(&fs, 100), "/db").unwrap();
        db.put(b"k", vec![7u8; len]).unwrap();
        db.flush().unwrap();
        assert_eq!(
            !all_with(&fs, Path::new("/db"), ".blob").is_empty(),
            blob,
            "{len} bytes"
        );
        assert_eq!(db.get(b"k").unwrap(), Some(vec![7u8; len]));
    }
    // blob files off: nothing goes to them
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 0);
    o.set_enable_blob_files(false);
    let db = DB::open(&o, "/db").unwrap();
    db.put(b"k", vec![7u8; 500]).unwrap();
    db.flush().unwrap();
    assert!(all_with(&fs, Path::new("/db"), ".blob").is_empty());
}

#[test]
fn compressed_blobs_and_rolled_files_read_back() {
    for c in [
        DBCompressionType::Lz4,
        DBCompressionType::Zstd,
        DBCompressionType::Snappy,
    ] {
        let fs = MemFs::new();
        let mut o = blob_opts(&fs, 100);
        o.set_blob_compression_type(c);
        o.set_blob_file_size(4 << 10);
        let db = DB::open(&o, "/db").unwrap();
        let mut m = Model::new();
        for i in 0..200 {
            db.put(key(i), value(i)).unwrap();
            m.insert(key(i), value(i));
        }
        db.flush().unwrap();
        assert!(
            all_with(&fs, Path::new("/db"), ".blob").len() > 5,
            "{c:?}: files roll at blob_file_size"
        );
        check_reads(&db, &m);
    }
}

#[test]
fn overwritten_and_deleted_blobs_are_reclaimed_by_compaction() {
    // garbage accounting alone: everything deleted, the blob files go
    let fs = MemFs::new();
    let o = blob_opts(&fs, 100);
    let db = DB::open(&o, "/db").unwrap();
    for i in 0..100 {
        db.put(key(i), vec![1u8; 1000]).unwrap();
    }
    db.flush().unwrap();
    let before = blob_bytes(&fs);
    assert!(before > 100_000);
    for i in 0..100 {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(blob_bytes(&fs), 0, "{:?}", all_with(&fs, Path::new("/db"), ""));
    drop(db);

    // garbage collection: overwritten values' files go, the live blobs are relocated
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 100);
    o.set_enable_blob_gc(true);
    o.set_blob_gc_age_cutoff(1.0);
    let db = DB::open(&o, "/db").unwrap();
    let mut m = Model::new();
    for round in 0..4u8 {
        for i in 0..100u64 {
            // half the keys are overwritten each round
            if round == 0 || i.is_multiple_of(2) {
                db.put(key(i), vec![round; 1000]).unwrap();
                m.insert(key(i), vec![round; 1000]);
            }
        }
        db.flush().unwrap();
    }
    let before = blob_bytes(&fs);
    let old_files = all_with(&fs, Path::new("/db"), ".blob");
    assert!(old_files.len() >= 4, "{old_files:?}");
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    check_reads(&db, &m);
    let after = blob_bytes(&fs);
    assert!(after <= 100 * (1000 + 50), "live blobs only: {after} (before {before})");
    assert!(after < before / 2, "{after} vs {before}");
    for f in &old_files {
        assert!(!fs.exists(f), "{f:?} was collected");
    }
    drop(db);
    let db = DB::open(&o, "/db").unwrap();
    check_reads(&db, &m);
}

#[test]
fn a_crash_at_any_point_leaves_no_dangling_blob_index_and_loses_no_synced_write() {
    let mut crashes = 0;
    for budget in (0..400).step_by(7) {
        let fs = MemFs::new();
        let o = blob_opts(&fs, 100);
        let mut o2 = o.clone();
        o2.set_env(Arc::new(CrashAfter {
            inner: Arc::new(fs.clone()),
            budget: Arc::new(std::sync::atomic::AtomicI64::new(budget)),
        }));
        let mut synced = Model::new();
        let r = (|| -> Result<(), Error> {
            let db = DB::open(&o2, "/db")?;
            let mut wo = WriteOptions::default();
            wo.set_sync(true);
            for round in 0..3u64 {
                for i in 0..30 {
                    let v = value(i + round * 1000);
                    db.put_opt(key(i), &v, &wo)?;
                    synced.insert(key(i), v);
                }
                db.flush()?;
            }
            db.compact_range(None::<&[u8]>, None::<&[u8]>)?;
            Ok(())
        })();
        if r.is_err() {
            crashes += 1;
        }
        fs.power_loss();
        let db = DB::open(&o, "/db").unwrap_or_else(|e| panic!("budget {budget}: reopen: {e}"));
        // every read succeeds: no index points into a missing or partial blob file
        let got = dump(&db);
        for (k, v) in &synced {
            assert_eq!(got.get(k), Some(v), "budget {budget}: synced write lost");
        }
    }
    assert!(crashes > 20, "the crash points were not reached ({crashes})");
}

/// A DB at /db with one blob file; returns the path of that file.
fn one_blob_file(fs: &MemFs) -> std::path::PathBuf {
    let db = DB::open(&blob_opts(fs, 100), "/db").unwrap();
    for i in 0..10 {
        db.put(key(i), vec![b'x'; 500]).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let b = all_with(fs, Path::new("/db"), ".blob");
    assert_eq!(b.len(), 1);
    b[0].clone()
}

#[test]
fn damaged_blob_files_are_corruption_naming_the_file_and_offset() {
    // a flipped byte in a blob: the record's offset
    let fs = MemFs::new();
    let p = one_blob_file(&fs);
    let name = p.file_name().unwrap().to_str().unwrap().to_string();
    // first record: header 30, record header 32, key 8, value 500
    assert!(fs.corrupt(&p, 30 + 32 + 8 + 100, b"Y"));
    let db = DB::open(&blob_opts(&fs, 100), "/db").unwrap();
    let e = db.get(key(0)).unwrap_err();
    assert_corruption_in(&e, &name);
    assert!(matches!(e, Error::Corruption { offset: Some(30), .. }), "{e:?}");
    assert!(db.get(key(1)).unwrap().is_some(), "other blobs still read");
    let mut it = db.raw_iterator();
    it.seek_to_first();
    assert!(!it.valid());
    assert_corruption_in(&it.status().unwrap_err(), &name);
    drop(it);
    drop(db);

    // truncated: the footer is gone
    let fs = MemFs::new();
    let p = one_blob_file(&fs);
    let len = fs.file_size(&p).unwrap() as usize;
    assert!(fs.truncate(&p, len - 10));
    let db = DB::open(&blob_opts(&fs, 100), "/db").unwrap();
    assert_corruption_in(&db.get(key(3)).unwrap_err(), &name);
    drop(db);

    // deleted
    let fs = MemFs::new();
    let p = one_blob_file(&fs);
    fs.remove_file(&p).unwrap();
    let db = DB::open(&blob_opts(&fs, 100), "/db").unwrap();
    let e = db.get(key(3)).unwrap_err();
    assert_corruption_in(&e, &name);
    assert!(e.to_string().contains("missing"), "{e}");
    let r: Vec<_> = db.multi_get([key(3)]);
    assert_corruption_in(r[0].as_ref().unwrap_err(), &name);
}

#[test]
fn blob_options_are_checked_and_written_under_rocksdbs_names() {
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 100);
    o.set_blob_gc_age_cutoff(1.5);
    let e = DB::open(&o, "/db").unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("blob_garbage_collection_age_cutoff"),
        "{e}"
    );
    let mut o = blob_opts(&fs, 4096);
    o.set_blob_compression_type(DBCompressionType::Zstd);
    o.set_enable_blob_gc(true);
    o.set_blob_gc_force_threshold(0.5);
    o.set_blob_file_starting_level(1);
    o.set_blob_file_size(1 << 20);
    o.set_blob_compaction_readahead_size(8192);
    drop(DB::open(&o, "/db").unwrap());
    let f = crate::common::newest(&fs, Path::new("/db"), "OPTIONS-", "");
    let text = String::from_utf8(fs.read_all(&f).unwrap()).unwrap();
    for line in [
        "enable_blob_files=true",
        "min_blob_size=4096",
        "blob_file_size=1048576",
        "blob_compression_type=kZSTD",
        "enable_blob_garbage_collection=true",
        "blob_garbage_collection_age_cutoff=0.250000",
        "blob_garbage_collection_force_threshold=0.500000",
        "blob_compaction_readahead_size=8192",
        "blob_file_starting_level=1",
    ] {
        assert!(text.contains(&format!("  {line}\n")), "{line} missing:\n{text}");
    }
}

#[test]
fn blob_file_starting_level_keeps_flushes_inline_and_compactions_write_blobs() {
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 100);
    o.set_blob_file_starting_level(1);
    let db = DB::open(&o, "/db").unwrap();
    let mut m = Model::new();
    for i in 0..50 {
        db.put(key(i), value(i)).unwrap();
        m.insert(key(i), value(i));
    }
    db.flush().unwrap();
    assert!(
        all_with(&fs, Path::new("/db"), ".blob").is_empty(),
        "L0 holds the values"
    );
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert!(
        !all_with(&fs, Path::new("/db"), ".blob").is_empty(),
        "L1 output wrote blobs"
    );
    check_reads(&db, &m);
}

#[test]
fn checkpoints_and_backups_carry_the_blob_files() {
    use shale::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("db");
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_enable_blob_files(true);
    o.set_min_blob_size(100);
    let db = DB::open(&o, &src).unwrap();
    let mut m = Model::new();
    for i in 0..200 {
        db.put(key(i), value(i)).unwrap();
        m.insert(key(i), value(i));
    }
    db.flush().unwrap();
    let (live, _) = db.get_live_files(false).unwrap();
    assert!(live.iter().any(|n| n.ends_with(".blob")), "{live:?}");
    let cp = d.path().join("cp");
    shale::checkpoint::Checkpoint::new(&db)
        .unwrap()
        .create_checkpoint(&cp)
        .unwrap();
    let bdir = d.path().join("backups");
    let env = shale::Env::new().unwrap();
    let mut be = BackupEngine::open(&BackupEngineOptions::new(&bdir).unwrap(), &env).unwrap();
    be.create_new_backup(&db).unwrap();
    drop(db);
    // the source is gone: the copies must stand on their own
    std::fs::remove_dir_all(&src).unwrap();
    let db = DB::open(&o, &cp).unwrap();
    check_reads(&db, &m);
    drop(db);
    let restored = d.path().join("restored");
    be.restore_from_latest_backup(&restored, &restored, &RestoreOptions::default())
        .unwrap();
    let db = DB::open(&o, &restored).unwrap();
    check_reads(&db, &m);
}

#[test]
fn set_options_turns_blob_files_on_while_the_db_runs() {
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 100);
    o.set_enable_blob_files(false);
    let db = DB::open(&o, "/db").unwrap();
    db.put(b"a", vec![1u8; 500]).unwrap();
    db.flush().unwrap();
    assert!(all_with(&fs, Path::new("/db"), ".blob").is_empty());
    db.set_options(&[("enable_blob_files", "true"), ("min_blob_size", "200")])
        .unwrap();
    db.put(b"b", vec![2u8; 500]).unwrap();
    db.flush().unwrap();
    assert_eq!(all_with(&fs, Path::new("/db"), ".blob").len(), 1);
    assert_eq!(db.get(b"a").unwrap(), Some(vec![1u8; 500]));
    assert_eq!(db.get(b"b").unwrap(), Some(vec![2u8; 500]));
    let e = db
        .set_options(&[("blob_garbage_collection_age_cutoff", "7")])
        .unwrap_err();
    assert!(
        e.is_invalid_argument() && e.to_string().contains("blob_garbage_collection_age_cutoff"),
        "{e}"
    );
}

#[test]
fn a_secondary_reads_the_primarys_blob_files_and_catches_up() {
    let fs = MemFs::new();
    let o = blob_opts(&fs, 100);
    let db = DB::open(&o, "/db").unwrap();
    let mut m = Model::new();
    for i in 0..50 {
        db.put(key(i), value(i)).unwrap();
        m.insert(key(i), value(i));
    }
    db.flush().unwrap();
    let sec = DB::open_as_secondary(&o, "/db", "/s").unwrap();
    assert_eq!(dump(&sec), m);
    for i in 50..100 {
        db.put(key(i), value(i)).unwrap();
        m.insert(key(i), value(i));
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    sec.try_catch_up_with_primary().unwrap();
    assert_eq!(dump(&sec), m);
    for (k, v) in &m {
        assert_eq!(sec.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn blob_properties_count_files_bytes_and_garbage() {
    let fs = MemFs::new();
    let mut o = blob_opts(&fs, 100);
    o.set_write_buffer_size(1 << 20); // one flush, one blob file
    let db = DB::open(&o, "/db").unwrap();
    let prop = |n: &shale::properties::PropName| db.property_int_value(n).unwrap().unwrap();
    assert_eq!(prop(shale::properties::NUM_BLOB_FILES), 0);
    for i in 0..20 {
        db.put(key(i), vec![3u8; 1000]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(prop(shale::properties::NUM_BLOB_FILES), 1);
    assert_eq!(prop(shale::properties::LIVE_BLOB_FILE_SIZE), blob_bytes(&fs));
    assert_eq!(prop(shale::properties::LIVE_BLOB_FILE_GARBAGE_SIZE), 0);
    for i in 0..5 {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    // five records of 32 + 8 + 1000 bytes are garbage now
    assert_eq!(
        prop(shale::properties::LIVE_BLOB_FILE_GARBAGE_SIZE),
        5 * (32 + 8 + 1000)
    );
    assert_eq!(prop(shale::properties::NUM_BLOB_FILES), 1);
}
