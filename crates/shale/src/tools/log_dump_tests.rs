//! Tests of the `ldb dump_wal` / `manifest_dump` texts, and of WAL and MANIFEST records framed
//! by the log writer (they need `write_batch` and `version_edit`, which sit above `log`).

use std::path::Path;

use super::log_dump::{dump_manifest, dump_wal, dump_wal_with};
use crate::fs::{FileSystem, MemFs};
use crate::log::tests::{fuzz_inputs, read_all, unhex};
use crate::log::{encode_records, DBRecoveryMode, Writer};
use crate::lsm::version_edit::VersionEdit;
use crate::write_batch::WriteBatch;

const LDB_PUT_K_V_WAL: &str = "e75a4d00 1100 01 0100000000000000 01000000 01016b0176";

#[test]
fn ldb_put_k_v_record_exact() {
    let mut wb = WriteBatch::new();
    wb.put("k", "v");
    wb.set_sequence(1);
    let fs = MemFs::new();
    let p = Path::new("/db/000004.log");
    fs.create_dir_all(Path::new("/db")).unwrap();
    let mut w = Writer::new(fs.new_writable(p).unwrap());
    w.add_record(wb.data()).unwrap();
    w.flush().unwrap();
    assert_eq!(w.file_size(), 24);
    drop(w.into_file());
    let bytes = fs.read_all(p).unwrap();
    assert_eq!(bytes, unhex(LDB_PUT_K_V_WAL));

    let (recs, res, rd) = read_all(&bytes, DBRecoveryMode::AbsoluteConsistency);
    res.unwrap();
    assert_eq!(recs, vec![wb.data().to_vec()]);
    assert_eq!(rd.last_record_offset(), 0);

    let out = dump_wal(&bytes, "/db/000004.log", false).unwrap();
    assert_eq!(
        out,
        "Sequence,Count,ByteSize,Physical Offset,Key(s)\n1,1,17,0,PUT(0) : 0x6B \n"
    );
    let out = dump_wal(&bytes, "/db/000004.log", true).unwrap();
    assert_eq!(
        out,
        "Sequence,Count,ByteSize,Physical Offset,Key(s) : value \n1,1,17,0,PUT(0) : 0x6B : 0x76 \n"
    );
    let (o, e) = dump_wal_with(&bytes, "000004.log", false, false).unwrap();
    assert_eq!(o, "1,1,17,0,PUT(0) : 0x6B \n");
    assert!(e.is_empty());
}

fn manifest_12_1() -> Vec<u8> {
    let mut m = unhex("56f9b8f8 1c00 01 011a");
    m.extend_from_slice(b"leveldb.BytewiseComparator");
    m.extend(unhex("f4030c5a 0400 01 02000400"));
    m.extend(unhex("fc2c26f9 0600 01 090003060400"));
    m
}

#[test]
fn manifest_12_1_decode_reencode_and_dump() {
    let m = manifest_12_1();
    assert_eq!(m.len(), 59);
    let (recs, res, _) = read_all(&m, DBRecoveryMode::TolerateCorruptedTailRecords);
    res.unwrap();
    assert_eq!(recs.len(), 3);
    let edits: Vec<VersionEdit> = recs.iter().map(|r| VersionEdit::decode(r).unwrap()).collect();
    assert_eq!(edits[0].comparator.as_deref(), Some("leveldb.BytewiseComparator"));
    assert_eq!((edits[1].log_number, edits[1].last_sequence), (Some(0), Some(0)));
    assert_eq!(
        (
            edits[2].prev_log_number,
            edits[2].next_file_number,
            edits[2].last_sequence
        ),
        (Some(0), Some(6), Some(0))
    );
    // Re-encode every record and re-frame the file: byte-identical.
    let mut out = Vec::new();
    let mut off = 0;
    for (e, r) in edits.iter().zip(&recs) {
        assert_eq!(&e.encoded(), r);
        off = encode_records(off, &e.encoded(), &mut out);
    }
    assert_eq!(out, m);
    // Our own way of writing the comparator edit adds 8201 (as 8.x+ do).
    let mut e = VersionEdit::new();
    e.set_comparator("leveldb.BytewiseComparator");
    let mut want = vec![1u8, 0x1a];
    want.extend_from_slice(b"leveldb.BytewiseComparator");
    want.extend([0x89, 0x40, 0x01, 0x01]);
    assert_eq!(e.encoded(), want);

    let dump = dump_manifest(&m, "./x/MANIFEST-000005", true).unwrap();
    let mut expect = String::from(
        "VersionEdit {\n  Comparator: leveldb.BytewiseComparator\n  ColumnFamily: 0\n}\n\
         VersionEdit {\n  LogNumber: 0\n  LastSeq: 0\n  ColumnFamily: 0\n}\n\
         VersionEdit {\n  PrevLogNumber: 0\n  NextFileNumber: 6\n  LastSeq: 0\n  ColumnFamily: 0\n}\n\
         --------------- Column family \"default\"  (ID 0) --------------\n\
         log number: 0\ncomparator: leveldb.BytewiseComparator\n",
    );
    for l in 0..64 {
        expect.push_str(&format!("--- level {l} --- version# 1 ---\n"));
    }
    expect.push_str(
        "next_file_number 7 last_sequence 0  prev_log_number 0 max_column_family 0 min_log_number_to_keep 0\n",
    );
    assert_eq!(dump, expect);
    let quiet = dump_manifest(&m, "MANIFEST-000005", false).unwrap();
    assert!(quiet.starts_with("--------------- Column family"));
}

#[test]
fn tv6_manifest_records() {
    // Empty edit record: CRC = mask(crc32c(01)).
    let mut out = Vec::new();
    encode_records(0, &[], &mut out);
    assert_eq!(out, unhex("052b2843 0000 01"));
    assert!(VersionEdit::decode(&[]).unwrap().is_empty());
    // Comparator + PersistUDT record.
    let mut e = VersionEdit::new();
    e.set_comparator("leveldb.BytewiseComparator");
    let mut out = Vec::new();
    encode_records(0, &e.encoded(), &mut out);
    assert_eq!(&out[..7], &unhex("35403f88 2000 01")[..]);
    let d = VersionEdit::decode(&out[7..]).unwrap();
    assert_eq!(d.persist_user_defined_timestamps, Some(true));
    assert_eq!(d, e);
}

#[test]
fn fuzz_dump_never_panics() {
    for input in fuzz_inputs() {
        let _ = dump_wal(&input, "000003.log", true);
        let _ = dump_manifest(&input, "MANIFEST-000001", true);
    }
}

#[test]
fn dump_wal_all_ops() {
    let mut b = WriteBatch::new();
    b.put("bp", "v");
    b.delete("k17");
    b.delete_range("k18", "k19");
    b.put_log_data("blob!");
    b.set_sequence(25);
    let mut b2 = WriteBatch::new();
    b2.single_delete("k15");
    b2.merge("m", "x");
    b2.set_sequence(28);
    let mut data = Vec::new();
    let off = encode_records(0, b.data(), &mut data);
    let second = data.len();
    encode_records(off, b2.data(), &mut data);
    let (out, err) = dump_wal_with(&data, "000009.log", false, true).unwrap();
    assert_eq!(
        out,
        format!(
            "25,3,{},0,PUT(0) : 0x6270 : 0x76 DELETE(0) : 0x6B3137 DELETE_RANGE(0) : 0x6B3138 0x6B3139 \n\
             28,2,{},{second},SINGLE_DELETE(0) : 0x6B3135 MERGE(0) : 0x6D : 0x78 \n",
            b.size_in_bytes(),
            b2.size_in_bytes()
        )
    );
    assert!(err.is_empty());
    // A corrupt record is skipped and reported on "stderr".
    data[10] ^= 1;
    let (out, err) = dump_wal_with(&data, "000009.log", false, false).unwrap();
    assert_eq!(out, "");
    assert!(err.contains("checksum mismatch"), "{err}");
}

#[test]
fn dump_manifest_with_files() {
    use crate::key::make_internal_key;
    use crate::lsm::version_edit::FileMetaData;
    let f = |n: u64, lo: &[u8], hi: &[u8], s: u64, l: u64| FileMetaData {
        number: n,
        file_size: 1000 + n,
        smallest: make_internal_key(lo, s, 1),
        largest: make_internal_key(hi, l, 1),
        smallest_seqno: s,
        largest_seqno: l,
        ..FileMetaData::default()
    };
    let mut e1 = VersionEdit::new();
    e1.set_comparator("leveldb.BytewiseComparator");
    let mut e2 = VersionEdit {
        log_number: Some(5),
        next_file_number: Some(10),
        last_sequence: Some(30),
        ..Default::default()
    };
    e2.add_file(0, f(7, b"a", b"c", 1, 10));
    e2.add_file(0, f(8, b"b", b"d", 11, 20));
    e2.add_file(1, f(9, b"x", b"z", 0, 0));
    let mut e3 = VersionEdit {
        next_file_number: Some(11),
        ..Default::default()
    };
    e3.delete_file(0, 7);
    e3.add_file(1, f(6, b"m", b"n", 0, 0));
    let mut data = Vec::new();
    let mut off = 0;
    for e in [&e1, &e2, &e3] {
        off = encode_records(off, &e.encoded(), &mut data);
    }
    let out = dump_manifest(&data, "MANIFEST-000003", true).unwrap();
    assert!(out.contains("VersionEdit {\n  Comparator: leveldb.BytewiseComparator\n  PersistUserDefinedTimestamps: true\n  ColumnFamily: 0\n}\n"));
    assert!(out.contains("  DeleteFile: 0 7\n  AddFile: 1 6 1006 'm' seq:0, type:1 .. 'n' seq:0, type:1 oldest_ancester_time:0 file_creation_time:0 file_checksum: file_checksum_func_name: Unknown\n"), "{out}");
    assert!(out.contains("log number: 5\n"));
    assert!(out.contains("--- level 0 --- version# 1 ---\n 8:1008[11 .. 20]['b' seq:11, type:1 .. 'd' seq:20, type:1]\n--- level 1 --- version# 1 ---\n 6:1006[0 .. 0]['m' seq:0, type:1 .. 'n' seq:0, type:1]\n 9:1009[0 .. 0]['x' seq:0, type:1 .. 'z' seq:0, type:1]\n--- level 2"), "{out}");
    assert!(out.ends_with(
        "next_file_number 12 last_sequence 30  prev_log_number 0 max_column_family 0 min_log_number_to_keep 0\n"
    ));
    // Missing entries.
    let mut d2 = Vec::new();
    encode_records(0, &e1.encoded(), &mut d2);
    let out = dump_manifest(&d2, "MANIFEST-000003", false).unwrap();
    assert_eq!(
        out,
        "Corruption: no log_file_number, next_file_number, last_sequence entry in MANIFEST\n"
    );
}
