//! `get_updates_since` (RocksDB's GetUpdatesSince): the write batches of the
//! WALs in order with their sequence numbers, across WAL switches, reopens and the WAL archive.

use std::path::Path;
use std::sync::Arc;

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{Options, WriteBatch, DB};

fn opts(fs: &MemFs) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_env(Arc::new(fs.clone()));
    o
}

/// The batches as (sequence, count, data).
fn updates(db: &DB, since: u64) -> shale::error::Result<Vec<(u64, u32, Vec<u8>)>> {
    db.get_updates_since(since)?
        .map(|r| r.map(|(s, b)| (s, b.len() as u32, b.data().to_vec())))
        .collect()
}

#[test]
fn batches_come_back_in_order_with_their_sequence_numbers() {
    let fs = MemFs::new();
    let db = DB::open_cf(&opts(&fs), "/db", ["x"]).unwrap();
    let x = db.cf_handle("x").unwrap();
    let mut written = Vec::new();
    for i in 0..50u32 {
        let mut b = WriteBatch::new();
        b.put(i.to_be_bytes(), b"v");
        if i % 3 == 0 {
            b.put_cf(&x, i.to_be_bytes(), b"w");
            b.delete(b"gone");
        }
        written.push((b.data()[12..].to_vec(), b.len() as u32));
        db.write(b).unwrap();
        if i == 20 {
            db.flush().unwrap(); // a WAL switch in the middle
        }
    }
    let got = updates(&db, 1).unwrap();
    assert_eq!(got.len(), 50);
    let mut seq = 1;
    for ((s, n, data), (body, count)) in got.iter().zip(&written) {
        assert_eq!(*s, seq, "batches out of order or with a gap");
        assert_eq!(
            (n, &data[12..]),
            (count, &body[..]),
            "batch at {s} differs from what was written"
        );
        seq += *n as u64;
    }
    // From the middle of a batch: that batch first.
    let k = (5..got.len()).find(|&i| got[i].1 >= 2).unwrap();
    let from_mid = updates(&db, got[k].0 + 1).unwrap();
    assert_eq!(from_mid[0].0, got[k].0);
    assert_eq!(from_mid.len(), got.len() - k);
    // Nothing after the last sequence; beyond it is InvalidArgument.
    let last = db.latest_sequence_number();
    assert!(updates(&db, last + 1).unwrap().is_empty());
    assert!(db.get_updates_since(last + 5).unwrap_err().is_invalid_argument());
}

#[test]
fn deleted_wals_are_not_found_and_the_archive_keeps_them() {
    for archive in [false, true] {
        let fs = MemFs::new();
        let mut o = opts(&fs);
        if archive {
            o.set_wal_ttl_seconds(3600);
        }
        {
            let db = DB::open(&o, "/db").unwrap();
            for i in 0..10u32 {
                db.put(i.to_be_bytes(), b"v").unwrap();
            }
            db.flush().unwrap(); // the first WAL is obsolete: deleted, or archived
            for i in 10..20u32 {
                db.put(i.to_be_bytes(), b"v").unwrap();
            }
            let r = updates(&db, 1);
            if archive {
                let got = r.unwrap();
                assert_eq!(got.len(), 20);
                assert!(fs
                    .list(Path::new("/db/archive"))
                    .unwrap()
                    .iter()
                    .any(|n| n.ends_with(".log")));
            } else {
                let e = r.unwrap_err();
                assert_eq!(e.kind(), shale::ErrorKind::NotFound, "{e}");
                // What is still in a live WAL is there.
                assert_eq!(updates(&db, 11).unwrap().len(), 10);
            }
        }
        // Across a reopen (recovery retires the replayed WALs into the archive too).
        let db = DB::open(&o, "/db").unwrap();
        db.put(b"after", b"reopen").unwrap();
        let got = updates(&db, if archive { 1 } else { 21 });
        let got = got.unwrap();
        assert_eq!(got.last().unwrap().0, 21, "archive={archive}");
        if archive {
            assert_eq!(got.len(), 21);
        }
    }
}

#[test]
fn the_archive_is_bounded_by_size() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.set_wal_size_limit_mb(1);
    o.set_write_buffer_size(256 << 10);
    let db = DB::open(&o, "/db").unwrap();
    for i in 0..40_000u32 {
        db.put(i.to_be_bytes(), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    let dir = Path::new("/db/archive");
    let total: u64 = fs
        .list(dir)
        .unwrap()
        .iter()
        .map(|n| fs.file_size(&dir.join(n)).unwrap())
        .sum();
    assert!(total > 0 && total <= 1 << 20, "archive holds {total} bytes");
    // The oldest updates are gone; the newest are still readable.
    assert_eq!(updates(&db, 1).unwrap_err().kind(), shale::ErrorKind::NotFound);
    assert_eq!(updates(&db, 39_990).unwrap().len(), 11);
}

#[test]
fn destroy_removes_the_archive() {
    let fs = MemFs::new();
    let mut o = opts(&fs);
    o.set_wal_ttl_seconds(3600);
    {
        let db = DB::open(&o, "/db").unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
    }
    assert!(fs.exists(Path::new("/db/archive")));
    DB::destroy(&o, "/db").unwrap();
    assert!(!fs.exists(Path::new("/db/archive")));
    assert!(!fs.exists(Path::new("/db/CURRENT")));
}

/// A tailing reader beside a writer of large values on the real file system, where a WAL's
/// records reach the file through a shared mapping (the default) and a copy is stored in no
/// set order: the reader must never see a write group that is still being stored — every
/// batch it gets is whole, in sequence, and no read fails.
#[test]
fn a_tailing_reader_beside_a_writer_reads_only_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.create_if_missing(true);
    o.set_wal_ttl_seconds(3600); // flushed WALs stay readable in the archive
    o.set_write_buffer_size(4 << 20);
    let db = Arc::new(DB::open(&o, dir.path()).unwrap());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            for i in 0..1500u32 {
                // Values up to ~300 KiB: a copy takes long enough for a reader to overlap it.
                let len = 100 + (i as usize * 7919) % (300 << 10);
                db.put(i.to_be_bytes(), vec![(i % 251) as u8; len]).unwrap();
                if i % 400 == 399 {
                    db.flush().unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        })
    };
    let (mut next, mut reads) = (1u64, 0u64);
    loop {
        let finished = done.load(std::sync::atomic::Ordering::Acquire);
        for r in db.get_updates_since(next).unwrap() {
            let (seq, batch) = r.unwrap_or_else(|e| panic!("read {reads} from sequence {next}: {e}"));
            assert_eq!(seq, next, "batches in sequence");
            // Each batch is one put of key i (sequence i + 1) with its whole value.
            let key = ((seq - 1) as u32).to_be_bytes();
            let data = batch.data();
            assert!(data.windows(4).any(|w| w == key), "the batch of sequence {seq}");
            next = seq + batch.len() as u64;
        }
        reads += 1;
        if finished {
            break;
        }
    }
    writer.join().unwrap();
    assert_eq!(next, 1501, "every batch read");
    assert!(reads > 10, "the reader overlapped the writer ({reads} reads)");
}
