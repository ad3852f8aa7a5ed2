//! What an acknowledged `ingest_external_file` guarantees across a power loss (MemFs drops every
//! unsynced byte and directory entry): the ingested files are durable (the copies or links are
//! synced, the directory is synced, the MANIFEST edit is synced), the files' sequence number
//! stays above writes the power loss dropped, and an ingest that flushed an overlapping memtable
//! made every earlier write durable. docs/ingest.md, "Durability".

use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamilyDescriptor, IngestExternalFileOptions, Options, SstFileWriter, DB};

fn mem_opts(fs: &MemFs) -> Options {
    fs.create_dir_all(Path::new("/ext")).unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

/// An external file at `path` whose bytes are *not* synced (its directory entry is): written
/// by an `SstFileWriter` elsewhere, then copied without a sync, as a writer that never syncs
/// would leave it.
fn unsynced_sst(fs: &MemFs, opts: &Options, path: &str, kvs: &[(&str, &str)]) {
    let tmp = format!("{path}.w");
    let mut w = SstFileWriter::create(opts);
    w.open(&tmp).unwrap();
    for (k, v) in kvs {
        w.put(k, v).unwrap();
    }
    w.finish().unwrap();
    let bytes = fs.read_all(Path::new(&tmp)).unwrap();
    fs.remove_file(Path::new(&tmp)).unwrap();
    let mut f = fs.new_writable(Path::new(path)).unwrap();
    f.append(&bytes).unwrap();
    f.flush().unwrap();
    drop(f);
    fs.sync_dir(Path::new("/ext")).unwrap();
}

/// The machine loses power: background work stops (a forgotten DB must not write into the
/// "rebooted" file system), the DB is not closed, unsynced state is dropped.
fn power_loss(db: DB, fs: &MemFs) {
    db.cancel_all_background_work(true);
    std::mem::forget(db);
    fs.power_loss();
}

fn get(db: &DB, k: &str) -> Option<String> {
    db.get(k).unwrap().map(|v| String::from_utf8(v).unwrap())
}

/// Copied or hard-linked (`move_files`), an ingested file whose writer never synced it is
/// there after a power loss right after the ingest returned. Without the sync of the linked
/// file, the link shares the unsynced bytes and the power loss empties the table the MANIFEST
/// names.
#[test]
fn an_acknowledged_ingest_survives_a_power_loss_even_from_an_unsynced_file() {
    for move_files in [false, true] {
        let fs = MemFs::new();
        let opts = mem_opts(&fs);
        unsynced_sst(&fs, &opts, "/ext/e.sst", &[("a", "1"), ("b", "2")]);
        let db = DB::open(&opts, "/db").unwrap();
        db.put("z", "0").unwrap();
        db.flush().unwrap();
        let mut io = IngestExternalFileOptions::new();
        io.set_move_files(move_files);
        db.ingest_external_file_opts(&io, vec!["/ext/e.sst"]).unwrap();
        power_loss(db, &fs);
        let db = DB::open(&opts, "/db").unwrap_or_else(|e| panic!("move_files={move_files}: reopen: {e}"));
        assert_eq!(get(&db, "a").as_deref(), Some("1"), "move_files={move_files}");
        assert_eq!(get(&db, "b").as_deref(), Some("2"), "move_files={move_files}");
        assert_eq!(get(&db, "z").as_deref(), Some("0"), "move_files={move_files}");
    }
}

/// Unsynced writes before an ingest that did not overlap the memtable may be lost (here they
/// are), while the ingest, which took the sequence number after them, survives. The MANIFEST's
/// last sequence number covers the ingest, so the first write after the reopen is numbered
/// above the ingested file and is what a read returns — also after a flush and a compaction.
#[test]
fn an_ingest_sequence_number_stays_above_writes_the_power_loss_dropped() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    unsynced_sst(&fs, &opts, "/ext/e.sst", &[("x", "ingested")]);
    let db = DB::open(&opts, "/db").unwrap();
    db.put("x", "old").unwrap();
    db.flush().unwrap(); // "x" is in a table: the ingested file overlaps it and needs a number
    for i in 0..5 {
        db.put(format!("a{i}"), "lost").unwrap(); // unsynced, in the memtable only
    }
    db.ingest_external_file(vec!["/ext/e.sst"]).unwrap();
    assert_eq!(get(&db, "x").as_deref(), Some("ingested"));
    power_loss(db, &fs);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(
        get(&db, "a0"),
        None,
        "an unsynced write before the ingest survived the power loss"
    );
    assert_eq!(get(&db, "x").as_deref(), Some("ingested"));
    db.put("x", "after").unwrap();
    assert_eq!(
        get(&db, "x").as_deref(),
        Some("after"),
        "a write after the reopen is hidden by the ingested file: its sequence number is not above the file's"
    );
    db.flush().unwrap();
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    assert_eq!(get(&db, "x").as_deref(), Some("after"));
    drop(db);
    let db = DB::open(&opts, "/db").unwrap();
    assert_eq!(get(&db, "x").as_deref(), Some("after"));
}

/// An ingest whose range holds a key of the family's memtable flushes it first; the memtable
/// switch syncs the WAL, so every write acknowledged before the ingest survives a power loss —
/// in every family, the WAL being shared. The stress test's power-loss oracle relies on this.
#[test]
fn an_ingest_over_the_memtable_makes_the_earlier_writes_durable() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    unsynced_sst(&fs, &opts, "/ext/e.sst", &[("b", "ingested"), ("d", "ingested")]);
    let descs = vec![
        ColumnFamilyDescriptor::new("default", opts.clone()),
        ColumnFamilyDescriptor::new("other", opts.clone()),
    ];
    let db = DB::open_cf_descriptors(&opts, "/db", descs.clone()).unwrap();
    let other = db.cf_handle("other").unwrap();
    db.put_cf(&other, "o", "kept").unwrap();
    db.put("a", "kept").unwrap();
    db.put("c", "written").unwrap(); // inside the file's range [b, d]: the memtable overlaps
    db.ingest_external_file(vec!["/ext/e.sst"]).unwrap();
    drop(other);
    power_loss(db, &fs);
    let db = DB::open_cf_descriptors(&opts, "/db", descs).unwrap();
    let other = db.cf_handle("other").unwrap();
    assert_eq!(get(&db, "a").as_deref(), Some("kept"));
    assert_eq!(get(&db, "b").as_deref(), Some("ingested"));
    assert_eq!(get(&db, "c").as_deref(), Some("written"));
    assert_eq!(get(&db, "d").as_deref(), Some("ingested"));
    assert_eq!(
        db.get_cf(&other, "o").unwrap().as_deref(),
        Some(&b"kept"[..]),
        "a write of another family before the flushing ingest was lost"
    );
}
