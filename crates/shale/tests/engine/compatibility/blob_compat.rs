//! Integrated blob files against real RocksDB, both ways: databases rocksdict (RocksDB 9.x)
//! wrote with blob files (compressed, garbage-collected) read identically by Shale; Shale's
//! blob databases read identically by rocksdict and RocksDB 7.8's `ldb`, and `sst_dump` shows
//! Shale's tables' blob indexes.

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::{DBCompressionType, Options, DB};

fn rocksdict_dump(python: &Path, db: &Path) -> Kv {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_dump.py");
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    let out = run(Command::new(python).arg(script).arg(copy.path()));
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (unhex(k), unhex(v)))
        .collect()
}

fn blob_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "blob"))
        .collect()
}

#[test]
fn shale_reads_rocksdict_blob_databases() {
    let Some(python) = python_with_rocksdict() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_blob_write.py");
    for comp in ["none", "lz4", "zstd", "snappy"] {
        let dir = tempfile::tempdir().unwrap();
        run(Command::new(&python).arg(&script).arg(dir.path()).arg("3000").arg(comp));
        assert!(blob_files(dir.path()).len() > 1, "{comp}: RocksDB wrote blob files");
        let expect = rocksdict_dump(&python, dir.path());
        assert!(expect.len() > 3000, "{comp}: {}", expect.len());
        let db = DB::open_for_read_only(&Options::default(), dir.path(), false).unwrap();
        assert_same(
            &shale_dump(&db),
            &expect,
            &format!("rocksdict blobs {comp} (read-only)"),
        );
        for k in expect.keys().step_by(7) {
            assert_eq!(db.get(k).unwrap().as_ref(), expect.get(k), "{comp}");
        }
        drop(db);
        // read-write: compact with Shale (blobs pass through, garbage is counted), read again
        let mut o = Options::default();
        o.set_enable_blob_files(true);
        o.set_min_blob_size(100);
        let db = DB::open(&o, dir.path()).unwrap();
        assert_same(
            &shale_dump(&db),
            &expect,
            &format!("rocksdict blobs {comp} (read-write)"),
        );
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_same(
            &shale_dump(&db),
            &expect,
            &format!("rocksdict blobs {comp} (compacted by Shale)"),
        );
        drop(db);
        // and RocksDB reads what Shale compacted
        assert_same(
            &rocksdict_dump(&python, dir.path()),
            &expect,
            &format!("rocksdict after Shale's compaction ({comp})"),
        );
    }
}

/// A Shale database with blob files (LZ4 blobs, rolled files, overwrites, a compaction with
/// garbage collection), its expected content.
fn write_shale_blob_db(dir: &Path, compression: DBCompressionType) -> Kv {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(64 << 10);
    o.set_enable_blob_files(true);
    o.set_min_blob_size(64);
    o.set_blob_file_size(32 << 10);
    o.set_blob_compression_type(compression);
    o.set_enable_blob_gc(true);
    o.set_blob_gc_age_cutoff(0.5);
    let db = DB::open(&o, dir).unwrap();
    let mut m = Kv::new();
    for i in 0..2000u32 {
        let k = format!("key{i:06}").into_bytes();
        let v = format!("val{i}-")
            .repeat(if i % 5 == 0 { 2 } else { 10 + (i % 40) as usize })
            .into_bytes();
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.flush().unwrap();
    for i in (0..2000u32).step_by(3) {
        let k = format!("key{i:06}").into_bytes();
        let v = format!("new{i}-").repeat(30).into_bytes();
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    for i in (0..2000u32).step_by(7) {
        let k = format!("key{i:06}").into_bytes();
        db.delete(&k).unwrap();
        m.remove(&k);
    }
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    for i in 2000..2300u32 {
        let k = format!("key{i:06}").into_bytes();
        let v = format!("late{i}-").repeat(25).into_bytes();
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.flush().unwrap();
    assert_same(&shale_dump(&db), &m, "Shale itself");
    drop(db);
    assert!(blob_files(dir).len() > 1);
    m
}

#[test]
fn rocksdb_reads_shale_blob_databases() {
    let Some([ldb, sst_dump, python]) = find(["ldb", "sst_dump", ROCKSDICT]) else {
        return;
    };
    for comp in [DBCompressionType::None, DBCompressionType::Lz4, DBCompressionType::Zstd] {
        let dir = tempfile::tempdir().unwrap();
        let m = write_shale_blob_db(dir.path(), comp);
        assert_same(
            &rocksdict_dump(&python, dir.path()),
            &m,
            &format!("rocksdict ({comp:?})"),
        );
        assert_same(&ldb_scan(&ldb, dir.path()), &m, &format!("ldb scan ({comp:?})"));
        let (k, v) = m.iter().nth(11).unwrap();
        assert!(v.len() >= 64);
        assert_eq!(&ldb_get(&ldb, dir.path(), k), v, "ldb get ({comp:?})");
        // sst_dump shows the blob indexes of Shale's tables in RocksDB's words
        let mut refs = 0;
        let mut sample = String::new();
        for f in sst_files(dir.path()) {
            let out = run(Command::new(&sst_dump)
                .arg(format!("--file={}", f.display()))
                .arg("--command=scan")
                .arg("--decode_blob_index"));
            refs += out.matches("[blob ref]").count();
            sample = out.lines().take(8).collect::<Vec<_>>().join("\n");
            // Shale's sst_dump prints the same entry lines
            let o = shale::tools::SstDumpOptions {
                command: "scan".into(),
                decode_blob_index: true,
                ..Default::default()
            };
            let ours = shale::tools::sst_dump(&f, &o).unwrap();
            let entries =
                |s: &str| -> Vec<String> { s.lines().filter(|l| l.contains(" => ")).map(String::from).collect() };
            assert_eq!(entries(&ours), entries(&out), "{}", f.display());
            let out = run(Command::new(&sst_dump)
                .arg(format!("--file={}", f.display()))
                .arg("--command=check")
                .arg("--verify_checksum"));
            assert!(!out.contains("Corruption"), "{out}");
        }
        assert!(
            refs > 1000,
            "sst_dump shows {refs} blob references ({comp:?}):\n{sample}"
        );
    }
}
