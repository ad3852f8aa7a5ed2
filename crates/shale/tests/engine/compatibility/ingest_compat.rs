//! External SST files against real RocksDB, both ways.
//!
//! (a) rocksdict's `SstFileWriter` (RocksDB 9.x) writes files with puts and deletes (its writer
//! has no delete_range), in table format_version 6 (RocksDB 9's default) and 5; Shale ingests them into an empty DB (no sequence number needed) and
//! into a DB whose memtable overlaps them (a global sequence number is assigned), and reads
//! every key, also after a reopen.
//! (b) Shale's `SstFileWriter` writes files with puts, deletes and a delete_range; rocksdict's
//! `Rdict.ingest_external_file` ingests them over overlapping memtable data and reads every
//! key, and RocksDB 7.8's `sst_dump --command=verify` accepts each file.
//!
//! A missing tool is a loud skip, a failure under `SHALE_REQUIRE_ROCKSDB=1` (see
//! `rocksdb_tools`).

use crate::rocksdb_tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rocksdb_tools::*;
use shale::{IngestExternalFileOptions, Options, SstFileWriter, DB};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat/rd_sst.py")
}

/// One entry of an external file: a value, or a deletion (`None`).
type Entries = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:06}").into_bytes()
}

/// `rd_sst.py write DIR`: the files rocksdict wrote, each with what it printed it holds.
fn rocksdict_write(python: &Path, dir: &Path) -> BTreeMap<String, Entries> {
    let out = run(Command::new(python).arg(script()).arg("write").arg(dir));
    let mut files: BTreeMap<String, Entries> = BTreeMap::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let e = match f[1] {
            "put" => (unhex(f[2]), Some(unhex(f[3]))),
            "del" => (unhex(f[2]), None),
            _ => panic!("bad line {l:?}"),
        };
        files.entry(f[0].to_string()).or_default().push(e);
    }
    assert_eq!(files.keys().collect::<Vec<_>>(), ["rd1.sst", "rd2.sst"]);
    assert!(files["rd2.sst"].iter().any(|e| e.1.is_none()), "rd2.sst holds deletes");
    files
}

fn apply(model: &mut Kv, entries: &Entries) {
    for (k, v) in entries {
        match v {
            Some(v) => model.insert(k.clone(), v.clone()),
            None => model.remove(k),
        };
    }
}

fn ingest_opts() -> IngestExternalFileOptions {
    let mut io = IngestExternalFileOptions::default();
    io.set_allow_global_seqno(true);
    io.set_allow_blocking_flush(true);
    io
}

#[test]
fn rocksdict_sst_files_ingest_into_shale() {
    let Some(python) = python_with_rocksdict() else { return };
    let files_dir = tempfile::tempdir().unwrap();
    let files = rocksdict_write(&python, files_dir.path());
    let file = |n: &str| files_dir.path().join(n);

    let mut opts = Options::default();
    opts.create_if_missing(true);

    // Into an empty DB: nothing overlaps, so no sequence number is consumed.
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&opts, dir.path()).unwrap();
    db.ingest_external_file_opts(&ingest_opts(), vec![file("rd1.sst")])
        .unwrap();
    assert_eq!(db.latest_sequence_number(), 0);
    let mut want = Kv::new();
    apply(&mut want, &files["rd1.sst"]);
    assert_same(&shale_dump(&db), &want, "rd1.sst in an empty DB");
    // rd2.sst overlaps rd1.sst's file: it goes above it, its deletes hide rd1's keys.
    db.ingest_external_file_opts(&ingest_opts(), vec![file("rd2.sst")])
        .unwrap();
    apply(&mut want, &files["rd2.sst"]);
    assert_same(&shale_dump(&db), &want, "rd2.sst over rd1.sst");
    drop(db);
    let db = DB::open(&opts, dir.path()).unwrap();
    assert_same(&shale_dump(&db), &want, "after reopen");
    drop(db);

    // Into a DB whose memtable overlaps both files: each gets a global sequence number above
    // the memtable's writes, so the files' entries win.
    let dir = tempfile::tempdir().unwrap();
    let db = DB::open(&opts, dir.path()).unwrap();
    let mut want = Kv::new();
    for i in (0..3000).step_by(3) {
        db.put(key(i), b"in-memtable").unwrap();
        want.insert(key(i), b"in-memtable".to_vec());
    }
    let before = db.latest_sequence_number();
    for name in ["rd1.sst", "rd2.sst"] {
        db.ingest_external_file_opts(&ingest_opts(), vec![file(name)]).unwrap();
        apply(&mut want, &files[name]);
        assert_same(&shale_dump(&db), &want, &format!("{name} over the memtable"));
    }
    assert!(
        db.latest_sequence_number() > before,
        "overlapping ingests take global sequence numbers"
    );
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "get {}", hex(k));
    }
    for (k, _) in files["rd2.sst"].iter().filter(|e| e.1.is_none()) {
        assert_eq!(db.get(k).unwrap(), None, "deleted {}", hex(k));
    }
    drop(db);
    let db = DB::open(&opts, dir.path()).unwrap();
    assert_same(&shale_dump(&db), &want, "global seqno files after reopen");
}

/// Writes one file with Shale's writer.
fn shale_write(path: &Path, entries: &Entries, range_del: Option<(u32, u32)>) {
    let opts = Options::default();
    let mut w = SstFileWriter::create(&opts);
    w.open(path).unwrap();
    if let Some((b, e)) = range_del {
        w.delete_range(key(b), key(e)).unwrap();
    }
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    w.finish().unwrap();
    assert!(w.file_size() > 0);
}

#[test]
fn shale_sst_files_ingest_into_rocksdict_and_pass_sst_dump_verify() {
    let Some([python, sst_dump]) = find([ROCKSDICT, "sst_dump"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s1: Entries = (0..3000)
        .step_by(2)
        .map(|i| (key(i), Some(format!("s1-{i}").repeat(1 + i as usize % 4).into_bytes())))
        .collect();
    let s2: Entries = (1000..2000)
        .step_by(5)
        .map(|i| (key(i), (i % 10 != 0).then(|| format!("s2-{i}").into_bytes())))
        .collect();
    // The range tombstone lies outside s2's point keys (a file's tombstone does not cover the
    // file's own keys, which share its sequence number).
    let range = (100, 200);
    let (p1, p2) = (dir.path().join("s1.sst"), dir.path().join("s2.sst"));
    shale_write(&p1, &s1, None);
    shale_write(&p2, &s2, Some(range));

    for p in [&p1, &p2] {
        let out = run(Command::new(&sst_dump)
            .arg(format!("--file={}", p.display()))
            .arg("--command=verify"));
        assert!(out.contains("The file is ok"), "sst_dump verify {p:?}: {out}");
    }

    // The model of rd_sst.py's ingest: `pre` on every third key below 1500, then s1, then s2.
    let pre = 1500;
    let mut want = Kv::new();
    for i in (0..pre).step_by(3) {
        want.insert(key(i), b"pre".to_vec());
    }
    apply(&mut want, &s1);
    want.retain(|k, _| *k < key(range.0) || *k >= key(range.1));
    apply(&mut want, &s2);
    let out = run(Command::new(&python)
        .arg(script())
        .arg("ingest")
        .arg(dir.path().join("rd"))
        .arg(pre.to_string())
        .arg(&p1)
        .arg(&p2));
    let got: Kv = out
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (unhex(k), unhex(v))
        })
        .collect();
    assert_same(&got, &want, "rocksdict ingested Shale's files");
}
