//! Databases written by RocksDB 11.8.1 (format_version 5, 6 and 7; none, ZSTD, LZ4; keys in
//! tables and in WALs) open in Shale with identical content. See `tests/fixtures/README.md`.

use crate::rocksdb_tools;

use std::path::Path;

use rocksdb_tools::{shale_dump, sst_files};
use shale::{Options, DB};

fn fixture(name: &str) -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let dst = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.path().join(e.file_name())).unwrap();
    }
    dst
}

#[test]
fn rocksdb_11_fixtures_have_the_formats_they_claim() {
    for (name, fv, comp) in [
        ("fv7_lz4", 7, "LZ4"),
        ("fv6_zstd", 6, "ZSTD"),
        ("fv5_none", 5, "NoCompression"),
    ] {
        let dir = fixture(name);
        let ssts = sst_files(dir.path());
        assert!(!ssts.is_empty(), "{name}");
        for f in ssts {
            let o = shale::tools::SstDumpOptions {
                command: "verify".into(),
                show_properties: true,
                ..Default::default()
            };
            let out = shale::tools::sst_dump(&f, &o).unwrap();
            assert!(out.contains("The file is ok"), "{name}: {out}");
            assert!(out.contains(&format!("format version (footer): {fv}")), "{name}: {out}");
            if fv == 7 {
                assert!(
                    out.contains("SST file compression algo: BuiltinV2;04;"),
                    "{name}: {out}"
                );
            } else {
                assert!(
                    out.contains(&format!("SST file compression algo: {comp}")),
                    "{name}: {out}"
                );
            }
        }
    }
}

#[test]
fn shale_reads_rocksdb_11_databases_of_every_format() {
    let mut contents = Vec::new();
    for name in ["fv7_lz4", "fv6_zstd", "fv5_none"] {
        let dir = fixture(name);
        let db = DB::open_for_read_only(&Options::default(), dir.path(), false).unwrap();
        let m = shale_dump(&db);
        // point lookups through the tables' Bloom filters
        for (k, v) in m.iter().step_by(5) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{name}");
        }
        let mut absent = m.keys().next().unwrap().clone();
        absent.push(b'!');
        assert_eq!(db.get(&absent).unwrap(), None);
        drop(db);
        // read-write: WAL replayed and flushed, then compacted into Shale's own tables
        let db = DB::open(&Options::default(), dir.path()).unwrap();
        assert_eq!(shale_dump(&db), m, "{name} read-write");
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        assert_eq!(shale_dump(&db), m, "{name} after compaction");
        drop(db);
        let db = DB::open(&Options::default(), dir.path()).unwrap();
        assert_eq!(shale_dump(&db), m, "{name} after reopen");
        contents.push((name, m));
    }
    // same seed, same workload: identical content whatever the format
    assert!(contents[0].1.len() > 1500, "{}", contents[0].1.len());
    for (name, m) in &contents[1..] {
        assert_eq!(m, &contents[0].1, "{name} differs from {}", contents[0].0);
    }
}
