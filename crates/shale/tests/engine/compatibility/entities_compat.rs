//! Wide-column entities against real RocksDB (rocksdict, RocksDB 9.x), both ways: entities
//! rocksdict wrote (in a table file and only in the WAL) read by Shale with `get`,
//! `get_entity` and iterator columns exactly as rocksdict reads them; and entities Shale wrote
//! (in tables, and only in the WAL) read by rocksdict exactly as Shale reads them. The data
//! set is `tests/compat/rd_entities.py`'s; [`expected`] builds the same lines here.
//!
//! A missing rocksdict is a loud skip, a failure under `SHALE_REQUIRE_ROCKSDB=1`.

use crate::rocksdb_tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::wide_columns::WideColumn;
use shale::{Options, WriteBatch, DB};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_entities.py")
}

/// Key `i`'s columns in the data set, as written (descending names; RocksDB sorts them).
fn columns(i: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut cols = Vec::new();
    if i.is_multiple_of(3) {
        cols.push((Vec::new(), format!("d{i}").into_bytes()));
    }
    for j in 0..i % 4 {
        let v = if i == 7 && j == 0 {
            vec![b'x'; 3000]
        } else {
            format!("v{i}-{j}").into_bytes()
        };
        cols.push((format!("c{j}").into_bytes(), v));
    }
    cols.reverse();
    cols
}

fn fmt(cols: &[WideColumn]) -> String {
    if cols.is_empty() {
        return "-".into();
    }
    cols.iter()
        .map(|c| format!("{}={}", hex(&c.name), hex(&c.value)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The dump lines of the data set: `key value iter_columns get_entity_columns get_value`.
fn expected() -> String {
    let mut out = String::new();
    for i in (0..60).filter(|&i| i != 13) {
        let key = format!("ent{i:03}").into_bytes();
        let cols: Vec<WideColumn> = if i % 5 == 4 {
            vec![WideColumn::new("", format!("plain{i}"))]
        } else {
            let mut c: Vec<WideColumn> = columns(i).into_iter().map(|(n, v)| WideColumn::new(n, v)).collect();
            c.sort();
            c
        };
        let value = cols
            .first()
            .filter(|c| c.name.is_empty())
            .map(|c| c.value.clone())
            .unwrap_or_default();
        let f = fmt(&cols);
        out += &format!("{} {} {f} {f} {}\n", hex(&key), hex(&value), hex(&value));
    }
    out
}

/// The same lines read by Shale: the iterator's value and columns, `get_entity`, `get`.
fn shale_lines(db: &DB) -> String {
    let mut out = String::new();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    while it.valid() {
        let k = it.key().unwrap();
        let e = db.get_entity(k).unwrap().expect("the key has an entity");
        let v = db.get(k).unwrap().expect("the key has a value");
        out += &format!(
            "{} {} {} {} {}\n",
            hex(k),
            hex(it.value().unwrap()),
            fmt(&it.columns().unwrap()),
            fmt(&e),
            hex(&v)
        );
        it.next();
    }
    it.status().unwrap();
    out
}

/// rocksdict's dump of a copy of `db`.
fn rocksdict_lines(python: &Path, db: &Path) -> String {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(db, copy.path());
    run(Command::new(python).arg(script()).arg("dump").arg(copy.path()))
}

fn wal_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[test]
fn shale_reads_entities_rocksdict_wrote_in_tables_and_in_the_wal() {
    let Some(python) = python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    run(Command::new(&python).arg(script()).arg("write").arg(&path));
    assert!(wal_bytes(&path) > 0, "rocksdict left its last writes in the WAL");
    assert!(!sst_files(&path).is_empty(), "rocksdict flushed the first keys");
    let want = expected();
    assert_eq!(rocksdict_lines(&python, &path), want, "rocksdict's own reads");
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&path, copy.path());
    let db = DB::open(&Options::default(), copy.path()).unwrap();
    assert_eq!(shale_lines(&db), want, "Shale reading RocksDB's entities");
    // Shale's flush and compaction keep them.
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(shale_lines(&db), want, "after Shale's flush and compaction");
    drop(db);
    // And RocksDB reads Shale's compacted tables back.
    assert_eq!(
        rocksdict_lines(&python, copy.path()),
        want,
        "rocksdict after Shale's compaction"
    );
}

/// Writes the data set with Shale: keys 0..39 flushed, the rest only in the WAL.
fn shale_write(path: &Path) {
    let mut o = Options::default();
    o.create_if_missing(true);
    let db = DB::open(&o, path).unwrap();
    for i in 0..60 {
        let k = format!("ent{i:03}");
        let cols = columns(i);
        if i < 40 {
            db.put_entity(&k, &cols).unwrap();
            if i % 5 == 4 {
                db.put(&k, format!("plain{i}")).unwrap();
            }
        } else {
            let mut b = WriteBatch::new();
            b.put_entity(&k, &cols).unwrap();
            if i % 5 == 4 {
                b.put(&k, format!("plain{i}"));
            }
            db.write(b).unwrap();
        }
        if i == 39 {
            db.flush().unwrap();
        }
    }
    db.delete("ent013").unwrap();
}

#[test]
fn rocksdict_reads_entities_shale_wrote_in_tables_and_in_the_wal() {
    let Some(python) = python_with_rocksdict() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    shale_write(&path);
    assert!(wal_bytes(&path) > 0, "Shale left its last writes in the WAL");
    assert!(!sst_files(&path).is_empty());
    let want = expected();
    assert_eq!(
        rocksdict_lines(&python, &path),
        want,
        "rocksdict reading Shale's WAL and tables"
    );
    let db = DB::open(&Options::default(), &path).unwrap();
    assert_eq!(shale_lines(&db), want);
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    assert_eq!(
        rocksdict_lines(&python, &path),
        want,
        "rocksdict reading Shale's compacted tables"
    );
}
