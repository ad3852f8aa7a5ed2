//! Bad input: damaged CURRENT / MANIFEST / WAL / SST files, mismatched comparators, invalid
//! options and API misuse. Each must give a clear error (right variant, file and offset named
//! where they exist), never a panic, never wrong data, and never lose acknowledged writes.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use common::*;
use shale::comparator::ReverseBytewiseComparator;
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{
    BlockBasedOptions, ChecksumType, DBRecoveryMode, Error, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};

/// A DB whose data is all in table files (several flushes, then a reopen so the MANIFEST is a
/// fresh snapshot) plus the model of what it holds.
fn flushed_db(fs: &MemFs) -> Model {
    let opts = mem_opts(fs);
    let mut m = Model::new();
    {
        let db = DB::open(&opts, dir()).unwrap();
        for round in 0..3u64 {
            for i in 0..60u64 {
                let (k, v) = kv(round * 40 + i);
                db.put(&k, &v).unwrap();
                m.insert(k, v);
            }
            db.flush().unwrap();
        }
        db.wait_for_compact(&Default::default()).unwrap();
    }
    drop(DB::open(&opts, dir()).unwrap());
    m
}

/// Open after damage: either an error satisfying `check_err` (returns false), or exactly `m`
/// (returns true). Never a panic.
fn open_and_check(opts: &Options, m: &Model, what: &str, check_err: impl Fn(&Error)) -> bool {
    let r = catch_unwind(AssertUnwindSafe(|| {
        match DB::open(opts, dir()).and_then(|db| scan(&db, ReadOptions::default())) {
            Ok(got) => {
                assert!(
                    got == *m,
                    "{what}: open succeeded with different data ({} keys vs {})",
                    got.len(),
                    m.len()
                );
                true
            }
            Err(e) => {
                check_err(&e);
                false
            }
        }
    }));
    r.unwrap_or_else(|_| panic!("{what}: panicked"))
}

// ------------------------------------------------------------------------------------------------
// CURRENT

#[test]
fn current_damaged_is_corruption_and_loses_nothing() {
    let base = MemFs::new();
    let m = flushed_db(&base);
    let cur = dir().join("CURRENT");
    let good = base.read_all(&cur).unwrap();
    let mut cases: Vec<(Vec<u8>, &str)> = vec![
        (good[..good.len() - 1].to_vec(), "CURRENT"),       // missing newline
        (b"garbage\n".to_vec(), "CURRENT"),                 // not a MANIFEST name
        (b"\xff\xfe\xfd\n".to_vec(), "CURRENT"),            // not UTF-8
        (b"000005.log\n".to_vec(), "CURRENT"),              // another kind of file
        (b"MANIFEST-\n".to_vec(), "CURRENT"),               // no number
        (b"MANIFEST-999999\n".to_vec(), "MANIFEST-999999"), // names a missing MANIFEST
        (Vec::new(), "CURRENT"),                            // empty
    ];
    for len in 0..good.len() {
        cases.push((good[..len].to_vec(), "CURRENT")); // truncated
    }
    for (content, name) in cases {
        for create in [false, true] {
            let fs = copy_fs(&base, dir());
            write_file(&fs, &cur, &content);
            let mut opts = mem_opts(&fs);
            opts.create_if_missing(create);
            let what = format!("CURRENT = {:?}", String::from_utf8_lossy(&content));
            let e = catch_unwind(AssertUnwindSafe(|| DB::open(&opts, dir())))
                .unwrap_or_else(|_| panic!("{what}: panicked"))
                .expect_err(&what);
            assert_corruption_in(&e, name);
            // read-only open fails the same way
            let e = DB::open_for_read_only(&opts, dir(), false).expect_err(&what);
            assert_corruption_in(&e, name);
            // nothing was destroyed: with CURRENT repaired the data is all there
            write_file(&fs, &cur, &good);
            let db = DB::open(&opts, dir()).unwrap();
            assert!(dump(&db) == m, "{what}: data lost after a failed open");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// MANIFEST

/// Start offsets of the physical records of a small (one-block) log file.
fn log_records(data: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos + 7 <= data.len() {
        let len = u16::from_le_bytes([data[pos + 4], data[pos + 5]]) as usize;
        v.push((pos, 7 + len));
        pos += 7 + len;
    }
    v
}

#[test]
fn manifest_every_truncation_and_byte_flip_is_error_or_exact_data() {
    let base = MemFs::new();
    let m = flushed_db(&base);
    let mpath = newest(&base, dir(), "MANIFEST-", "");
    let good = base.read_all(&mpath).unwrap();
    assert!(good.len() < 32 << 10, "test assumes a one-block MANIFEST");
    let mname = mpath.file_name().unwrap().to_string_lossy().into_owned();
    let check = |e: &Error| {
        assert!(
            matches!(e, Error::Corruption { file, .. } if file.contains(&mname))
                || matches!(e, Error::NotSupported(_) | Error::InvalidArgument(_)),
            "unexpected error {e:?}"
        )
    };
    let mut damaged: Vec<(String, Vec<u8>)> = Vec::new();
    for len in 0..good.len() {
        damaged.push((format!("truncated to {len}"), good[..len].to_vec()));
    }
    for off in 0..good.len() {
        for x in [0xffu8, 0x01] {
            let mut d = good.clone();
            d[off] ^= x;
            damaged.push((format!("byte {off} ^ {x:#x}"), d));
        }
    }
    let mut opened = 0;
    for (what, d) in damaged {
        let fs = copy_fs(&base, dir());
        write_file(&fs, &mpath, &d);
        let opts = mem_opts(&fs);
        if open_and_check(&opts, &m, &what, check) {
            opened += 1;
        } else {
            // a failed open destroys nothing
            write_file(&fs, &mpath, &good);
            let db = DB::open(&opts, dir()).unwrap_or_else(|e| panic!("{what}: repaired DB fails to open: {e}"));
            assert!(dump(&db) == m, "{what}: data lost after a failed open");
        }
    }
    // torn tails (cut inside the last record, which only moves the log number) are tolerated
    assert!(opened > 0, "no damaged MANIFEST opened at all");
}

/// RocksDB reads the MANIFEST in kTolerateCorruptedTailRecords mode: a record torn by a crash in
/// the middle of a MANIFEST append is ignored. Shale read it with AbsoluteConsistency and refused
/// to open.
#[test]
fn regression_manifest_torn_tail_is_tolerated() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let mut m = Model::new();
    let db = DB::open(&opts, dir()).unwrap();
    for i in 0..100 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
        if i % 30 == 29 {
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    drop(db);
    let mpath = newest(&fs, dir(), "MANIFEST-", "");
    let good = fs.read_all(&mpath).unwrap();
    let recs = log_records(&good);
    let (last, last_len) = *recs.last().unwrap();
    assert_eq!(last + last_len, good.len());
    // the last edit (the last flush) repeated, but cut short: a crash in the middle of an append
    for cut in [1, 6, 7, 8, last_len - 1] {
        let fs2 = copy_fs(&fs, dir());
        let mut d = good.clone();
        d.extend_from_slice(&good[last..last + cut]);
        write_file(&fs2, &mpath, &d);
        let opts2 = mem_opts(&fs2);
        let db = DB::open(&opts2, dir()).unwrap_or_else(|e| panic!("torn MANIFEST tail ({cut} bytes): {e}"));
        assert!(dump(&db) == m);
        drop(db);
        // and the database keeps working after that
        let db = DB::open(&opts2, dir()).unwrap();
        assert!(dump(&db) == m);
    }
    // a bad record before the end is still an error
    let fs3 = copy_fs(&fs, dir());
    let mut d = good.clone();
    d[recs[1].0] ^= 0x55;
    write_file(&fs3, &mpath, &d);
    let e = DB::open(&mem_opts(&fs3), dir()).unwrap_err();
    assert_corruption_in(&e, "MANIFEST-");
}

/// A MANIFEST with flush edits at its end: a flip anywhere but in the length field of the last
/// record must be detected (a longer length there reads as a torn tail, which RocksDB tolerates).
#[test]
fn manifest_with_flush_edits_byte_flips_are_detected() {
    let fs = MemFs::new();
    let opts = mem_opts(&fs);
    let mut m = Model::new();
    let db = DB::open(&opts, dir()).unwrap();
    for i in 0..90 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
        if i % 30 == 29 {
            db.flush().unwrap();
        }
    }
    db.wait_for_compact(&Default::default()).unwrap();
    drop(db);
    let mpath = newest(&fs, dir(), "MANIFEST-", "");
    let good = fs.read_all(&mpath).unwrap();
    let (last, _) = *log_records(&good).last().unwrap();
    let mname = mpath.file_name().unwrap().to_string_lossy().into_owned();
    for off in 0..good.len() {
        if off == last + 4 || off == last + 5 {
            continue;
        }
        let fs2 = copy_fs(&fs, dir());
        let mut d = good.clone();
        d[off] ^= 0x01;
        write_file(&fs2, &mpath, &d);
        open_and_check(&mem_opts(&fs2), &m, &format!("flip at {off}"), |e| {
            // A flip in the length of a record can make it run past the end of the file, which
            // reads as a torn tail (RocksDB too); the edits after it are then missing, and the
            // tables they removed are found missing: still an error, never wrong data.
            assert!(
                matches!(e, Error::Corruption { file, .. } if file.contains(&mname) || file.ends_with(".sst"))
                    || matches!(e, Error::NotSupported(_) | Error::InvalidArgument(_)),
                "flip at {off}: {e:?}"
            )
        });
    }
}

#[test]
fn regression_open_checks_tables_named_by_manifest() {
    let base = MemFs::new();
    let m = flushed_db(&base);
    let ssts = all_with(&base, dir(), ".sst");
    assert!(!ssts.is_empty());
    for sst in &ssts {
        let name = sst.file_name().unwrap().to_string_lossy().into_owned();
        let good = base.read_all(sst).unwrap();
        let mut bigger = good.clone();
        bigger.push(0);
        for (what, content) in [
            ("missing", None),
            ("short by one", Some(good[..good.len() - 1].to_vec())),
            ("one longer", Some(bigger)),
        ] {
            let fs = copy_fs(&base, dir());
            match &content {
                None => fs.remove_file(sst).unwrap(),
                Some(c) => write_file(&fs, sst, c),
            }
            let opts = mem_opts(&fs);
            let e = DB::open(&opts, dir()).expect_err(&format!("{name} {what}: open must fail"));
            assert_corruption_in(&e, &name);
            let e = DB::open_for_read_only(&opts, dir(), false).expect_err(&format!("{name} {what}: read-only"));
            assert_corruption_in(&e, &name);
            // the failed open deleted nothing: restore the file and everything is there
            write_file(&fs, sst, &good);
            let db = DB::open(&opts, dir()).unwrap();
            assert!(dump(&db) == m, "{name} {what}: data lost");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// WAL

/// A DB whose writes are all in one WAL (never flushed). Returns the history of states and the
/// WAL size after each write (`ends[i]` = end of write i+1's record).
fn wal_only_db(fs: &MemFs, n: u64, big_at: Option<u64>) -> (Vec<Model>, Vec<u64>) {
    let opts = {
        let mut o = mem_opts(fs);
        o.set_write_buffer_size(64 << 20);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let wal = newest(fs, dir(), "", ".log");
    let mut m = Model::new();
    let mut states = vec![m.clone()];
    let mut ends = Vec::new();
    for i in 0..n {
        let (k, mut v) = kv(i % 17);
        if Some(i) == big_at {
            v = vec![b'B'; 40 << 10];
        }
        if i % 5 == 4 {
            let mut b = WriteBatch::new();
            b.put(&k, &v);
            b.delete(kv(i + 3).0);
            b.put(kv(i + 100).0, b"batch");
            db.write(b).unwrap();
            m.insert(k, v);
            m.remove(&kv(i + 3).0);
            m.insert(kv(i + 100).0, b"batch".to_vec());
        } else if i % 7 == 6 {
            db.delete(&k).unwrap();
            m.remove(&k);
        } else {
            db.put(&k, &v).unwrap();
            m.insert(k, v);
        }
        states.push(m.clone());
        ends.push(fs.file_size(&wal).unwrap());
    }
    drop(db);
    (states, ends)
}

#[test]
fn wal_truncated_at_every_length_recovers_a_prefix() {
    let base = MemFs::new();
    let (states, ends) = wal_only_db(&base, 60, Some(30));
    let wal = newest(&base, dir(), "", ".log");
    let good = base.read_all(&wal).unwrap();
    let mut lens: Vec<usize> = (0..2500.min(good.len())).collect();
    lens.extend((2500..good.len()).step_by(61));
    for b in [32768usize, 65536] {
        lens.extend(b.saturating_sub(12)..(b + 12).min(good.len()));
    }
    lens.extend(good.len().saturating_sub(300)..=good.len());
    lens.sort_unstable();
    lens.dedup();
    for len in lens {
        let fs = copy_fs(&base, dir());
        fs.truncate(&wal, len);
        let opts = mem_opts(&fs);
        let db = catch_unwind(AssertUnwindSafe(|| DB::open(&opts, dir())))
            .unwrap_or_else(|_| panic!("WAL truncated to {len}: panicked"))
            .unwrap_or_else(|e| panic!("WAL truncated to {len}: {e}"));
        let got = dump(&db);
        // exactly the writes whose records end within the first `len` bytes
        let expect = ends.iter().filter(|&&e| e <= len as u64).count();
        assert!(
            got == states[expect],
            "WAL truncated to {len}: expected the first {expect} writes"
        );
        // AbsoluteConsistency refuses a torn tail (unless the cut is on a record boundary)
        drop(db);
    }
}

#[test]
fn wal_flipped_byte_point_in_time_and_absolute_consistency() {
    let base = MemFs::new();
    let (states, ends) = wal_only_db(&base, 40, None);
    let wal = newest(&base, dir(), "", ".log");
    let wname = wal.file_name().unwrap().to_string_lossy().into_owned();
    let good = base.read_all(&wal).unwrap();
    assert_eq!(*ends.last().unwrap(), good.len() as u64);
    for off in 0..good.len() {
        let mut d = good.clone();
        d[off] ^= 0x01;
        // default: point-in-time recovery keeps exactly the writes before the damaged record
        let fs = copy_fs(&base, dir());
        write_file(&fs, &wal, &d);
        let db = catch_unwind(AssertUnwindSafe(|| DB::open(&mem_opts(&fs), dir())))
            .unwrap_or_else(|_| panic!("flip at {off}: panicked"))
            .unwrap_or_else(|e| panic!("flip at {off}: {e}"));
        let expect = ends.iter().filter(|&&e| e <= off as u64).count();
        assert!(
            dump(&db) == states[expect],
            "flip at {off}: expected the first {expect} writes"
        );
        drop(db);
        // AbsoluteConsistency: Corruption naming the WAL and the offset of the damaged record
        let fs = copy_fs(&base, dir());
        write_file(&fs, &wal, &d);
        let opts = {
            let mut o = mem_opts(&fs);
            o.set_wal_recovery_mode(DBRecoveryMode::AbsoluteConsistency);
            o
        };
        match DB::open(&opts, dir()) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert!(file.contains(&wname), "flip at {off}: names {file}");
                let rec_start = if expect == 0 { 0 } else { ends[expect - 1] };
                assert_eq!(offset, Some(rec_start), "flip at {off}");
            }
            other => panic!("flip at {off}: AbsoluteConsistency gave {other:?}"),
        }
        // and nothing was lost by the refused open
        write_file(&fs, &wal, &good);
        let db = DB::open(&opts, dir()).unwrap();
        assert!(
            dump(&db) == *states.last().unwrap(),
            "flip at {off}: data lost after a refused open"
        );
    }
}

/// Two live WALs: returns (fs, older WAL, newer WAL, full model). The older WAL holds writes
/// 0..20, the newer one 20..40 (built by replaying the first WAL on a copy and splicing its
/// successor back, which is what a crash between a memtable switch and its flush leaves).
fn two_wals() -> (MemFs, std::path::PathBuf, std::path::PathBuf, Model) {
    let fs = MemFs::new();
    let opts = {
        let mut o = mem_opts(&fs);
        o.set_write_buffer_size(64 << 20);
        o
    };
    let mut m = Model::new();
    let db = DB::open(&opts, dir()).unwrap();
    for i in 0..20 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    drop(db);
    let old = newest(&fs, dir(), "", ".log");
    let copy = copy_fs(&fs, dir());
    let db = DB::open(
        &{
            let mut o = opts.clone();
            o.set_env(Arc::new(copy.clone()));
            o
        },
        dir(),
    )
    .unwrap();
    for i in 20..40 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    drop(db);
    let new = newest(&copy, dir(), "", ".log");
    assert!(new > old);
    write_file(&fs, &new, &copy.read_all(&new).unwrap());
    // sanity: both WALs replay
    let check = copy_fs(&fs, dir());
    let db = DB::open(&mem_opts(&check), dir()).unwrap();
    assert!(dump(&db) == m, "spliced WALs do not replay");
    (fs, old, new, m)
}

/// A hole in an older WAL followed by a newer WAL with data must be Corruption: replaying the
/// newer WAL would silently drop the acknowledged writes in the hole, and stopping before it
/// would silently drop everything after.
#[test]
fn regression_wal_hole_after_corruption() {
    let (base, old, _new, _m) = two_wals();
    let oname = old.file_name().unwrap().to_string_lossy().into_owned();
    let good = base.read_all(&old).unwrap();
    // a flipped byte in the middle of the older WAL
    let mut damaged = Vec::new();
    for off in [good.len() / 3, good.len() / 2, good.len() - 3] {
        let mut d = good.clone();
        d[off] ^= 0x01;
        damaged.push((format!("flip at {off}"), d));
    }
    // the older WAL cut short (a torn record in a WAL that is not the last)
    for cut in [5, 20, 41] {
        damaged.push((format!("cut {cut} bytes"), good[..good.len() - cut].to_vec()));
    }
    for (what, d) in damaged {
        for mode in [DBRecoveryMode::PointInTime, DBRecoveryMode::AbsoluteConsistency] {
            let fs = copy_fs(&base, dir());
            write_file(&fs, &old, &d);
            let opts = {
                let mut o = mem_opts(&fs);
                o.set_wal_recovery_mode(mode);
                o
            };
            match DB::open(&opts, dir()) {
                Err(e) => assert_corruption_in(&e, &oname),
                Ok(db) => panic!(
                    "{what} ({mode:?}): opened with {} keys despite the hole",
                    dump(&db).len()
                ),
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// SST

fn sst_db(fs: &MemFs, checksum: ChecksumType) -> Model {
    let opts = {
        let mut o = mem_opts(fs);
        let mut bbo = o.get_block_based_options();
        bbo.set_checksum_type(checksum);
        o.set_block_based_table_factory(&bbo);
        o
    };
    let db = DB::open(&opts, dir()).unwrap();
    let mut m = Model::new();
    for i in 0..150 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        m.insert(k, v);
    }
    db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
    drop(db);
    m
}

#[test]
fn sst_flipped_bytes_and_truncation_never_give_wrong_data() {
    let base = MemFs::new();
    let m = sst_db(&base, ChecksumType::CRC32c);
    let ssts = all_with(&base, dir(), ".sst");
    let sst = &ssts[0];
    let name = sst.file_name().unwrap().to_string_lossy().into_owned();
    let good = base.read_all(sst).unwrap();
    let n = good.len();
    let mut offs: Vec<usize> = (0..n).step_by(7).collect();
    offs.extend(n.saturating_sub(400)..n);
    offs.sort_unstable();
    offs.dedup();
    let check_err = |what: &str, e: &Error| {
        assert!(
            matches!(e, Error::Corruption { file, .. } if file.contains(&name))
                || matches!(e, Error::NotSupported(m) if m.contains(&name)),
            "{what}: {e:?}"
        )
    };
    let run = |what: String, d: Vec<u8>| {
        let fs = copy_fs(&base, dir());
        write_file(&fs, sst, &d);
        let opts = mem_opts(&fs);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let db = match DB::open(&opts, dir()) {
                Ok(db) => db,
                Err(e) => return check_err(&what, &e),
            };
            match scan(&db, ReadOptions::default()) {
                Ok(got) => assert!(got == m, "{what}: scan returned wrong data"),
                Err(e) => check_err(&what, &e),
            }
            for (i, (k, v)) in m.iter().enumerate() {
                if i % 3 != 0 {
                    continue;
                }
                match db.get(k) {
                    Ok(got) => assert_eq!(got.as_ref(), Some(v), "{what}: get {k:?}"),
                    Err(e) => check_err(&what, &e),
                }
            }
            let absent = db.get(b"key000999zz");
            match absent {
                Ok(v) => assert_eq!(v, None, "{what}"),
                Err(e) => check_err(&what, &e),
            }
        }));
        if r.is_err() {
            panic!("{what}: panicked");
        }
    };
    for off in offs {
        for x in [0x01u8, 0x80] {
            let mut d = good.clone();
            d[off] ^= x;
            run(format!("flip {x:#x} at {off}"), d);
        }
    }
    for len in (0..n).step_by(13).chain(n - 60..n) {
        run(format!("truncated to {len}"), good[..len].to_vec());
    }
}

/// Offset of the footer (format_version 5: 53 bytes at the end).
const FOOTER: usize = 53;

#[test]
fn sst_footer_unknown_checksum_format_version_and_compression() {
    let base = MemFs::new();
    let m = sst_db(&base, ChecksumType::NoChecksum);
    let sst = &all_with(&base, dir(), ".sst")[0];
    let name = sst.file_name().unwrap().to_string_lossy().into_owned();
    let good = base.read_all(sst).unwrap();
    let n = good.len();
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    // unknown checksum type in the footer
    let mut d = good.clone();
    assert_eq!(d[n - FOOTER], 0, "checksum type byte");
    d[n - FOOTER] = 0x2a;
    cases.push(("checksum type 42", d));
    // format_version 99
    let mut d = good.clone();
    assert_eq!(&d[n - 12..n - 8], &5u32.to_le_bytes());
    d[n - 12..n - 8].copy_from_slice(&99u32.to_le_bytes());
    cases.push(("format_version 99", d));
    // unknown compression type in the trailer of the first data block (no checksum to fix up):
    // find it as the first trailer byte 0 followed by four zero checksum bytes after the
    // restart array; try candidates until the read fails
    let mut d = good.clone();
    let first_data_block_len = {
        // entries start at 0; the block ends with restarts (fixed32 each) + count (fixed32)
        let mut found = None;
        for end in 8..n.min(4096) - 5 {
            let cnt = u32::from_le_bytes(d[end - 4..end].try_into().unwrap()) as usize;
            if cnt == 0 || cnt > 64 || end < 4 + 4 * cnt {
                continue;
            }
            let first_restart = u32::from_le_bytes(d[end - 4 - 4 * cnt..end - 4 * cnt].try_into().unwrap());
            if first_restart == 0 && d[end] == 0 && d[end + 1..end + 5] == [0, 0, 0, 0] {
                found = Some(end);
                break;
            }
        }
        found.expect("first data block trailer")
    };
    d[first_data_block_len] = 0x55;
    cases.push(("compression type 0x55", d));
    for (what, d) in cases {
        let fs = copy_fs(&base, dir());
        write_file(&fs, sst, &d);
        let opts = mem_opts(&fs);
        let r = DB::open(&opts, dir()).and_then(|db| scan(&db, ReadOptions::default()));
        match r {
            Err(Error::Corruption { file, .. }) => assert!(file.contains(&name), "{what}: names {file}"),
            Err(Error::NotSupported(msg)) => assert!(msg.contains(&name), "{what}: {msg}"),
            other => panic!(
                "{what}: expected Corruption/NotSupported naming {name}, got {:?}",
                other.map(|g| g.len())
            ),
        }
        let _ = &m;
    }
}

// ------------------------------------------------------------------------------------------------
// Comparator, options, API misuse

#[test]
fn comparator_mismatch_is_invalid_argument() {
    let fs = MemFs::new();
    flushed_db(&fs);
    let mut opts = mem_opts(&fs);
    opts.set_custom_comparator(Arc::new(ReverseBytewiseComparator));
    for r in [DB::open(&opts, dir()), DB::open_for_read_only(&opts, dir(), false)] {
        match r {
            Err(Error::InvalidArgument(msg)) => {
                assert!(msg.contains("comparator"), "{msg}");
                assert!(msg.contains("leveldb.BytewiseComparator"), "{msg}");
                assert!(msg.contains("rocksdb.ReverseBytewiseComparator"), "{msg}");
            }
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
    // still opens with the right comparator
    assert!(DB::open(&mem_opts(&fs), dir()).is_ok());
}

/// Change the block-based table options of `o` through `BlockBasedOptions`.
fn block_based(o: &mut Options, edit: impl FnOnce(&mut BlockBasedOptions)) {
    let mut b = o.get_block_based_options();
    edit(&mut b);
    o.set_block_based_table_factory(&b);
}

#[test]
fn invalid_options_name_the_option() {
    type Edit = fn(&mut Options);
    let cases: Vec<(&str, Edit)> = vec![
        ("write_buffer_size", |o| o.set_write_buffer_size(100)),
        ("write_buffer_size", |o| o.set_write_buffer_size(0)),
        ("max_write_buffer_number", |o| o.set_max_write_buffer_number(1)),
        ("max_write_buffer_number", |o| o.set_max_write_buffer_number(-1)),
        ("min_write_buffer_number_to_merge", |o| o.set_min_write_buffer_number(0)),
        ("block_size", |o| block_based(o, |b| b.set_block_size(0))),
        ("block_restart_interval", |o| {
            block_based(o, |b| b.set_block_restart_interval(0))
        }),
        ("block_restart_interval", |o| {
            block_based(o, |b| b.set_block_restart_interval(-4))
        }),
        ("bloom_bits_per_key", |o| {
            block_based(o, |b| b.set_bloom_filter(-1.0, false))
        }),
        ("bloom_bits_per_key", |o| {
            block_based(o, |b| b.set_bloom_filter(100.0, false))
        }),
        ("bloom_bits_per_key", |o| {
            block_based(o, |b| b.set_bloom_filter(f64::NAN, true))
        }),
        ("format_version", |o| block_based(o, |b| b.set_format_version(1))),
        ("format_version", |o| block_based(o, |b| b.set_format_version(7))),
        ("format_version", |o| block_based(o, |b| b.set_format_version(-5))),
        ("max_open_files", |o| o.set_max_open_files(5)),
        ("max_open_files", |o| o.set_max_open_files(-2)),
        ("num_levels", |o| o.set_num_levels(1)),
        ("num_levels", |o| o.set_num_levels(65)),
        ("num_levels", |o| o.set_num_levels(-7)),
        ("level0_file_num_compaction_trigger", |o| {
            o.set_level_zero_file_num_compaction_trigger(0)
        }),
        ("level0_file_num_compaction_trigger", |o| {
            o.set_level_zero_file_num_compaction_trigger(-1)
        }),
        ("level0_slowdown_writes_trigger", |o| {
            o.set_level_zero_slowdown_writes_trigger(40);
            o.set_level_zero_stop_writes_trigger(30)
        }),
        ("target_file_size_base", |o| o.set_target_file_size_base(0)),
        ("target_file_size_multiplier", |o| o.set_target_file_size_multiplier(-2)),
        ("max_bytes_for_level_base", |o| o.set_max_bytes_for_level_base(0)),
        ("max_bytes_for_level_multiplier", |o| {
            o.set_max_bytes_for_level_multiplier(1.0)
        }),
        ("max_bytes_for_level_multiplier", |o| {
            o.set_max_bytes_for_level_multiplier(f64::NAN)
        }),
        ("max_background_jobs", |o| o.set_max_background_jobs(0)),
        ("max_background_jobs", |o| o.set_max_background_jobs(-1)),
        ("max_background_jobs", |o| o.increase_parallelism(0)),
        ("max_subcompactions", |o| o.set_max_subcompactions(0)),
    ];
    for (name, edit) in cases {
        let fs = MemFs::new();
        let mut o = mem_opts(&fs);
        o.validate().unwrap();
        edit(&mut o);
        match o.validate() {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains(name), "{name}: {msg}"),
            other => panic!("{name}: validate gave {other:?}"),
        }
        match DB::open(&o, dir()) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains(name), "{name}: {msg}"),
            other => panic!("{name}: open gave {other:?}"),
        }
        // nothing was created
        assert!(
            !fs.exists(&dir().join("CURRENT")),
            "{name}: open with invalid options created files"
        );
    }
}

#[test]
fn open_missing_or_existing_db() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.create_if_missing(false);
    match DB::open(&o, dir()) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("create_if_missing"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        DB::open_for_read_only(&o, dir(), false),
        Err(Error::InvalidArgument(_))
    ));
    // a directory that exists but holds no DB
    fs.create_dir_all(dir()).unwrap();
    assert!(matches!(DB::open(&o, dir()), Err(Error::InvalidArgument(_))));
    o.create_if_missing(true);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"a", b"1").unwrap();
    drop(db);
    o.set_error_if_exists(true);
    match DB::open(&o, dir()) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains("error_if_exists"), "{msg}"),
        other => panic!("{other:?}"),
    }
    o.set_error_if_exists(false);
    let db = DB::open(&o, dir()).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
}

#[test]
fn api_misuse() {
    let fs = MemFs::new();
    let o = mem_opts(&fs);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"a", b"1").unwrap();
    // sync + disable_wal
    let wo = {
        let mut o = WriteOptions::default();
        o.set_sync(true);
        o.disable_wal(true);
        o
    };
    assert!(matches!(db.put_opt(b"b", b"2", &wo), Err(Error::InvalidArgument(m)) if m.contains("disable_wal")));
    // merge without an operator: rejected at the call, nothing applied
    let mut b = WriteBatch::new();
    b.put(b"c", b"3");
    b.merge(b"a", b"x");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(m)) if m.contains("merge")));
    // delete_range with begin > end: InvalidArgument, nothing of the batch applied
    let mut b = WriteBatch::new();
    b.put(b"d", b"4");
    b.delete_range(b"z", b"a");
    assert!(matches!(db.write(b), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete_range(b"z", b"a"), Err(Error::InvalidArgument(_))));
    assert_eq!(db.get(b"c").unwrap(), None);
    assert_eq!(db.get(b"d").unwrap(), None);
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    // the DB is healthy after rejected writes
    db.put(b"e", b"5").unwrap();
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    let got: Vec<_> = dump(&db).into_keys().collect();
    assert_eq!(got, vec![b"a".to_vec(), b"e".to_vec()]);
    drop(db);
    // read-only: every write is NotSupported, reads work
    let ro = DB::open_for_read_only(&o, dir(), false).unwrap();
    assert!(matches!(ro.put(b"x", b"y"), Err(Error::NotSupported(_))));
    assert!(matches!(ro.delete(b"a"), Err(Error::NotSupported(_))));
    let mut b = WriteBatch::new();
    b.put(b"x", b"y");
    assert!(matches!(ro.write(b), Err(Error::NotSupported(_))));
    assert!(matches!(ro.flush(), Err(Error::NotSupported(_))));
    assert!(ro.compact_range(None::<&[u8]>, None::<&[u8]>).is_err());
    assert_eq!(ro.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    // and a read-only open does not block a writer? (it takes no lock, as RocksDB)
    let _ = Path::new("");
}

/// The `rocksdb` crate's calls given what they cannot do: compaction-style options that
/// contradict each other, reads through a snapshot of a closed DB, a merge closure that fails, a
/// cache of no bytes, calls on a read-only DB, a write that must not wait during a stall.
#[test]
fn rocksdb_style_calls_reject_bad_input() {
    use shale::{
        Cache, DBCompactionStyle, ErrorKind, FifoCompactOptions, IteratorMode, MergeOperands, UniversalCompactOptions,
    };
    let mut narrow = UniversalCompactOptions::default();
    narrow.set_min_merge_width(8);
    narrow.set_max_merge_width(4);
    let mut bad_pct = UniversalCompactOptions::default();
    bad_pct.set_compression_size_percent(101);
    let mut empty_fifo = FifoCompactOptions::default();
    empty_fifo.set_max_table_files_size(0);
    type Setup = Box<dyn Fn(&mut Options)>;
    let cases: Vec<(Setup, ErrorKind, &str)> = vec![
        (
            Box::new(move |o: &mut Options| {
                o.set_compaction_style(DBCompactionStyle::Universal);
                o.set_universal_compaction_options(&narrow);
            }),
            ErrorKind::InvalidArgument,
            "max_merge_width",
        ),
        (
            Box::new(move |o: &mut Options| {
                o.set_compaction_style(DBCompactionStyle::Universal);
                o.set_universal_compaction_options(&bad_pct);
            }),
            ErrorKind::InvalidArgument,
            "compression_size_percent",
        ),
        (
            Box::new(move |o: &mut Options| {
                o.set_compaction_style(DBCompactionStyle::Fifo);
                o.set_fifo_compaction_options(&empty_fifo);
            }),
            ErrorKind::InvalidArgument,
            "max_table_files_size",
        ),
        (
            // As RocksDB: FIFO's TTL needs every table open.
            Box::new(|o: &mut Options| {
                o.set_compaction_style(DBCompactionStyle::Fifo);
                o.set_ttl(60);
                o.set_max_open_files(100);
            }),
            ErrorKind::NotSupported,
            "max_open_files",
        ),
    ];
    for (setup, kind, names) in cases {
        let fs = MemFs::new();
        let mut o = mem_opts(&fs);
        setup(&mut o);
        match DB::open(&o, dir()) {
            Err(e) => {
                assert_eq!(e.kind(), kind, "{e}");
                assert!(e.to_string().contains(names), "{e}");
            }
            Ok(_) => panic!("{names}: opened"),
        }
        assert!(!fs.exists(&dir().join("CURRENT")), "{names}: files were created");
    }

    // a snapshot outliving its DB: errors, never stale or freed data
    let fs = MemFs::new();
    let db = DB::open(&mem_opts(&fs), dir()).unwrap();
    db.put(b"k", b"v").unwrap();
    let snap = db.snapshot();
    drop(db);
    assert!(snap.get(b"k").unwrap_err().is_invalid_argument());
    assert!(snap.multi_get([b"k"]).pop().unwrap().unwrap_err().is_invalid_argument());
    let mut it = snap.iterator(IteratorMode::Start);
    assert!(it.next().unwrap().unwrap_err().is_invalid_argument());
    assert!(it.next().is_none());

    // a merge closure that gives up: the read fails with Corruption, the DB stays usable
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_merge_operator_associative("fails", |_: &[u8], _: Option<&[u8]>, _: &MergeOperands| None);
    let db = DB::open(&o, dir()).unwrap();
    db.merge(b"m", b"1").unwrap();
    assert_eq!(db.get(b"m").unwrap_err().kind(), ErrorKind::Corruption);
    db.put(b"p", b"v").unwrap();
    assert_eq!(db.get(b"p").unwrap().as_deref(), Some(&b"v"[..]));
    // key_may_exist on an empty key and on keys never written
    assert!(!db.key_may_exist(b""));
    assert!(!db.key_may_exist(b"never"));
    drop(db);

    // a cache of zero bytes keeps no block but reads work
    let fs = MemFs::new();
    let cache = Cache::new_lru_cache(0);
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(&cache);
    let mut o = mem_opts(&fs);
    o.set_block_based_table_factory(&table);
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    // only what readers hold or reserve is charged: no block stays cached
    assert_eq!(cache.get_usage(), cache.get_pinned_usage());
    drop(db);

    // flush_wal on a read-only DB has nothing to do; writes there stay NotSupported
    let ro = DB::open_for_read_only(&o, dir(), false).unwrap();
    ro.flush_wal(true).unwrap();
    let mut wo = WriteOptions::default();
    wo.set_no_slowdown(true);
    assert_eq!(ro.put_opt(b"x", b"y", &wo).unwrap_err().kind(), ErrorKind::NotSupported);
}

// ---- hardening: panicking comparators, oversized entries, a full disk, read-only opens ------

/// Bytewise order, but panics when it compares the key `boom` while armed (a buggy user
/// comparator). Disarmed, the same name orders the same way, so the DB reopens with it.
struct PanickyComparator(Arc<std::sync::atomic::AtomicBool>);
impl shale::comparator::Comparator for PanickyComparator {
    fn name(&self) -> &str {
        "test.PanickyBytewise"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) && (a == b"boom" || b == b"boom") {
            panic!("comparator asked to order the key boom");
        }
        a.cmp(b)
    }
}

#[test]
fn panic_on_the_write_path_never_hangs_and_loses_no_acknowledged_write() {
    panic_on_the_write_path(|_| {});
}

/// With pipelined writes later groups are in their WAL write or inserts when an earlier
/// group's insert panics: they fail too, none hangs waiting for the broken group.
#[test]
fn panic_in_a_pipelined_group_never_hangs_and_loses_no_acknowledged_write() {
    panic_on_the_write_path(|o| o.set_enable_pipelined_write(true));
}

#[test]
fn panic_in_an_unordered_group_never_hangs_and_loses_no_acknowledged_write() {
    panic_on_the_write_path(|o| o.set_unordered_write(true));
}

fn panic_on_the_write_path(mode: impl Fn(&mut Options)) {
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::Duration;
    let fs = MemFs::new();
    let armed = Arc::new(AtomicBool::new(true));
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(1 << 20);
    mode(&mut o);
    o.set_custom_comparator(Arc::new(PanickyComparator(armed.clone())));
    let db = Arc::new(DB::open(&o, dir()).unwrap());
    db.put(b"a-first", b"v").unwrap();
    let (tx, rx) = mpsc::channel();
    let mut threads = Vec::new();
    for t in 0..8u64 {
        let (db, tx) = (db.clone(), tx.clone());
        threads.push(std::thread::spawn(move || {
            let mut acked = Vec::new();
            let mut err = None;
            for i in 0..100_000u64 {
                let k = if t == 3 && i == 200 {
                    b"boom".to_vec()
                } else {
                    format!("t{t}-{i:06}").into_bytes()
                };
                match db.put(&k, format!("v{i}")) {
                    Ok(()) => acked.push((k, format!("v{i}").into_bytes())),
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            tx.send((acked, err)).unwrap();
        }));
    }
    drop(tx);
    let mut model = Model::new();
    model.insert(b"a-first".to_vec(), b"v".to_vec());
    let mut saw_panic = false;
    for _ in 0..8 {
        let (acked, err) = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("a writer hung after a panic on the write path");
        let e = err.expect("every writer gets an error once the write path panicked");
        saw_panic |= e.is_panic();
        assert!(
            e.is_panic() || matches!(e, Error::Background(_)),
            "unexpected error {e}"
        );
        model.extend(acked);
    }
    assert!(saw_panic, "the panic is reported as a panic");
    for t in threads {
        t.join().unwrap();
    }
    // Later calls fail too, and resume() cannot clear a panic (the memtable may be torn).
    assert!(db.put(b"later", b"x").is_err());
    assert!(db.flush().is_err());
    assert!(db.resume().is_err());
    drop(db);
    // Reopened with the panicking comparator, replaying the WAL panics again: an error.
    let e = DB::open(&o, dir()).expect_err("replaying the key boom must fail");
    assert!(e.is_panic(), "{e}");
    // Fixed comparator: every acknowledged write is there.
    armed.store(false, std::sync::atomic::Ordering::Relaxed);
    let db = DB::open(&o, dir()).unwrap();
    let got = dump(&db);
    for (k, v) in &model {
        assert_eq!(
            got.get(k),
            Some(v),
            "acknowledged key {:?} lost",
            String::from_utf8_lossy(k)
        );
    }
    // Nothing but acknowledged writes and the writes that failed with the panicking group.
    assert!(
        got.len() <= model.len() + 9,
        "{} keys, {} acknowledged",
        got.len(),
        model.len()
    );
}

#[test]
fn oversized_keys_and_values_are_rejected_before_the_wal() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_custom_merge_operator(Arc::new(shale::merge_operator::Associative(
        shale::merge_operator::StringAppendOperator::new(","),
    )));
    let db = DB::open(&o, dir()).unwrap();
    db.put(b"a", b"1").unwrap();
    let wal = newest(&fs, dir(), "", ".log");
    let wal_len = fs.file_size(&wal).unwrap();
    // Zeroed allocations are not touched until written, so these cost no memory.
    let huge = vec![0u8; 1 << 32];
    let big_key = vec![0u8; (u32::MAX - 7) as usize];
    let half = vec![0u8; 1 << 31];
    let is_invalid = |r: Result<(), Error>, what: &str| match r {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("too large"), "{what}: {m}"),
        other => panic!("{what}: {other:?}"),
    };
    is_invalid(db.put(&huge, b"v"), "4 GiB key");
    is_invalid(db.put(b"k", &huge), "4 GiB value");
    is_invalid(db.put(&big_key, b""), "key whose internal key is 4 GiB");
    is_invalid(db.put(&half, &half), "key and value of 2 GiB each");
    is_invalid(db.merge(b"k", &huge), "4 GiB merge operand");
    is_invalid(db.delete(&huge), "4 GiB delete key");
    is_invalid(db.delete_range(b"", &huge), "4 GiB range end");
    // In a batch, the other records are not applied either.
    let mut b = WriteBatch::new();
    b.put(b"b", b"2");
    b.put(b"c", &huge);
    b.put(b"d", b"4");
    is_invalid(db.write(b), "batch with a 4 GiB value");
    assert_eq!(fs.file_size(&wal).unwrap(), wal_len, "nothing reached the WAL");
    db.put(b"e", b"5").unwrap();
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    let got: Vec<_> = dump(&db).into_keys().collect();
    assert_eq!(got, vec![b"a".to_vec(), b"e".to_vec()]);
}

#[test]
fn full_disk_keeps_exactly_the_acknowledged_writes() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_write_buffer_size(64 << 10);
    let mut model = Model::new();
    let db = DB::open(&o, dir()).unwrap();
    for i in 0..50u64 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    // The disk fills up in the middle of the next WAL record.
    fs.set_write_budget(Some(3000));
    let mut failed = None;
    for i in 50..10_000u64 {
        let (k, v) = kv(i);
        match db.put(&k, &v) {
            Ok(()) => {
                model.insert(k, v);
            }
            Err(e) => {
                assert!(e.is_no_space(), "{e}");
                failed = Some(k);
                break;
            }
        }
    }
    let failed = failed.expect("the disk filled up");
    // Space comes back, but the DB stopped: no write may follow the torn record in that WAL.
    fs.set_write_budget(None);
    assert!(db.put(b"after-enospc", b"x").is_err(), "writes stop after a WAL error");
    // resume() starts a new WAL; writes go on and are kept.
    db.resume().unwrap();
    for i in 20_000..20_100u64 {
        let (k, v) = kv(i);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    drop(db);
    let db = DB::open(&o, dir()).unwrap();
    let got = dump(&db);
    assert!(!got.contains_key(&failed), "the write reported as failed was recovered");
    assert!(!got.contains_key(&b"after-enospc"[..]));
    assert_eq!(got, model, "recovered state differs from the acknowledged writes");
}

/// The file system of a read-only opener that, the first time the opener reads a MANIFEST,
/// lets the DB's owner compact (deleting the tables that MANIFEST names) before the opener
/// goes on: the race `ldb scan` lost against a compacting process, made deterministic.
struct CompactWhileReading {
    inner: MemFs,
    owner: Arc<DB>,
    fired: std::sync::atomic::AtomicBool,
}
impl shale::fs::ForwardingFs for CompactWhileReading {
    fn inner(&self) -> &dyn FileSystem {
        &self.inner
    }
    fn read_all(&self, p: &Path) -> shale::error::Result<Vec<u8>> {
        let data = self.inner.read_all(p)?;
        let is_manifest = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("MANIFEST-"));
        if is_manifest && !self.fired.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.owner.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        }
        Ok(data)
    }
}

#[test]
fn read_only_open_during_a_compaction_retries_instead_of_reporting_corruption() {
    let fs = MemFs::new();
    let mut o = mem_opts(&fs);
    o.set_disable_auto_compactions(true);
    let owner = Arc::new(DB::open(&o, dir()).unwrap());
    let mut model = Model::new();
    for round in 0..3u64 {
        for i in 0..40u64 {
            let (k, v) = kv(i * 3 + round);
            owner.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        owner.flush().unwrap();
    }
    let before: Vec<_> = files(&fs, dir()).into_iter().filter(|f| f.ends_with(".sst")).collect();
    let mut ro_opts = o.clone();
    ro_opts.set_env(Arc::new(CompactWhileReading {
        inner: fs.clone(),
        owner: owner.clone(),
        fired: Default::default(),
    }));
    let ro = DB::open_for_read_only(&ro_opts, dir(), false).expect("a healthy DB is not corrupt");
    let after: Vec<_> = files(&fs, dir()).into_iter().filter(|f| f.ends_with(".sst")).collect();
    assert!(
        before.iter().all(|f| !after.contains(f)),
        "the compaction deleted the tables the first MANIFEST read named: {before:?} -> {after:?}"
    );
    assert_eq!(dump(&ro), model);
    drop(ro);
    // A table missing from a MANIFEST that does not change is corruption, named as such.
    let victim = dir().join(&after[0]);
    fs.remove_file(&victim).unwrap();
    drop(owner);
    match DB::open_for_read_only(&o, dir(), false) {
        Err(e) => assert_corruption_in(&e, &after[0]),
        Ok(_) => panic!("a missing table went unnoticed"),
    }
}
