use std::path::Path;

use super::*;
use crate::error::Error;
use crate::fs::{FileSystem, MemFs};
use crate::log::WalRecoveryMode;
use crate::version_edit::VersionEdit;
use crate::write_batch::WriteBatch;

const MODES: [WalRecoveryMode; 4] = [
    WalRecoveryMode::TolerateCorruptedTailRecords,
    WalRecoveryMode::AbsoluteConsistency,
    WalRecoveryMode::PointInTimeRecovery,
    WalRecoveryMode::SkipAnyCorruptedRecords,
];

/// Small deterministic PRNG for tests.
pub(crate) struct Rng(u64);
impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Frame records with `encode_records`; returns the bytes and each logical record's end offset.
fn build(records: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut off = 0;
    let mut ends = Vec::new();
    for r in records {
        off = encode_records(off, r, &mut out);
        ends.push(out.len());
    }
    (out, ends)
}

fn read_all(data: &[u8], mode: WalRecoveryMode) -> (Vec<Vec<u8>>, Result<(), Error>, Reader) {
    let mut rd = Reader::new(data.to_vec(), "000001.log", 1, mode);
    let mut v = Vec::new();
    let res = loop {
        match rd.read_record() {
            Ok(Some(r)) => v.push(r.to_vec()),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (v, res, rd)
}

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn crc_vectors() {
    assert_eq!(crate::hash::crc32c(b"123456789"), 0xE3069283);
    assert_eq!(crc_mask(0xE3069283), 0xC78AB0E5);
    assert_eq!(crc_mask(crate::hash::crc32c(b"")), 0xA282EAD8);
    assert_eq!(crate::hash::crc32c(&[1]), 0xA016D052);
    for v in [0u32, 1, 0xE3069283, u32::MAX, 0xA282EAD8] {
        assert_eq!(crc_unmask(crc_mask(v)), v);
    }
}

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

    let (recs, res, rd) = read_all(&bytes, WalRecoveryMode::AbsoluteConsistency);
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
    let (recs, res, _) = read_all(&m, WalRecoveryMode::TolerateCorruptedTailRecords);
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
fn block_layout_and_spanning() {
    // Sizes around block boundaries, including exactly one block of payload and 100 KiB.
    let sizes = [
        0usize,
        1,
        BLOCK_SIZE - 7,
        BLOCK_SIZE,
        100 * 1024,
        BLOCK_SIZE - 14,
        3,
        0,
        65536,
        7,
        1000,
    ];
    let recs: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| payload(n, i as u8)).collect();
    let (data, ends) = build(&recs);
    for mode in MODES {
        let (got, res, _) = read_all(&data, mode);
        res.unwrap();
        assert_eq!(got, recs, "{mode:?}");
    }
    // A record of BLOCK_SIZE-7 at offset 0 fills the block exactly (one Full record).
    assert_eq!(ends[0], 7);
    assert_eq!(ends[1], 15);
    // Writer output equals encode_records output (one append per record).
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let mut w = Writer::new(fs.new_writable(Path::new("/d/1.log")).unwrap());
    for r in &recs {
        w.add_record(r).unwrap();
    }
    assert_eq!(w.file_size() as usize, data.len());
    drop(w);
    assert_eq!(fs.read_all(Path::new("/d/1.log")).unwrap(), data);

    // Zero-filled trailer shorter than a header: record ending 3 bytes before the block end.
    let first = payload(BLOCK_SIZE - 7 - 3, 9);
    let (d2, _) = build(&[first.clone(), b"next".to_vec()]);
    assert_eq!(&d2[BLOCK_SIZE - 3..BLOCK_SIZE], &[0, 0, 0]);
    assert_eq!(d2[BLOCK_SIZE + 6], rt::FULL);
    assert_eq!(d2.len(), BLOCK_SIZE + 7 + 4);
    let (got, res, rd) = read_all(&d2, WalRecoveryMode::AbsoluteConsistency);
    res.unwrap();
    assert_eq!(got, vec![first, b"next".to_vec()]);
    // RocksDB's LastRecordOffset counts from the start of the skipped trailer.
    assert_eq!(rd.last_record_offset(), (BLOCK_SIZE - 3) as u64);

    // Exactly 7 bytes left: an empty record fits as Full; a non-empty one starts with an empty First.
    let a = payload(BLOCK_SIZE - 14, 1);
    let (d3, _) = build(&[a.clone(), vec![]]);
    assert_eq!(d3.len(), BLOCK_SIZE);
    assert_eq!(d3[BLOCK_SIZE - 1], rt::FULL);
    let (d4, _) = build(&[a.clone(), b"xy".to_vec()]);
    assert_eq!(d4[BLOCK_SIZE - 1], rt::FIRST);
    assert_eq!(d4[BLOCK_SIZE + 6], rt::LAST);
    let (got, res, _) = read_all(&d4, WalRecoveryMode::AbsoluteConsistency);
    res.unwrap();
    assert_eq!(got, vec![a, b"xy".to_vec()]);

    // 100 KiB spans 4 blocks: First, Middle, Middle, Last.
    let (d5, _) = build(&[payload(100 * 1024, 3)]);
    let types: Vec<u8> = (0..4).map(|b| d5[b * BLOCK_SIZE + 6]).collect();
    assert_eq!(types, vec![rt::FIRST, rt::MIDDLE, rt::MIDDLE, rt::LAST]);
}

#[test]
fn writer_resume_with_offset() {
    let recs = vec![payload(40000, 1), payload(10, 2), payload(33000, 3)];
    let (data, _) = build(&recs);
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let p = Path::new("/d/2.log");
    let mut w = Writer::new(fs.new_writable(p).unwrap());
    w.add_record(&recs[0]).unwrap();
    let size = w.file_size();
    let f = w.into_file();
    let mut w = Writer::with_offset(f, size);
    w.add_record(&recs[1]).unwrap();
    let mut framed = Vec::new();
    let off = encode_records(w.block_offset(), &recs[2], &mut framed);
    w.add_framed(&framed, off).unwrap();
    drop(w);
    assert_eq!(fs.read_all(p).unwrap(), data);
}

fn mixed_records() -> Vec<Vec<u8>> {
    vec![
        payload(10, 1),
        payload(40000, 2),
        payload(5, 3),
        vec![],
        payload(BLOCK_SIZE - 7 - 5 - 7, 4),
        payload(70000, 5),
        payload(100, 6),
        payload(1, 7),
    ]
}

fn check_truncation(data: &[u8], ends: &[usize], recs: &[Vec<u8>], n: usize) {
    let t = &data[..n];
    let complete = ends.iter().filter(|&&e| e <= n).count();
    for mode in MODES {
        let (got, res, rd) = read_all(t, mode);
        assert_eq!(got.as_slice(), &recs[..got.len()], "n={n} {mode:?}");
        assert!(rd.corruption().is_none(), "n={n} {mode:?} {:?}", rd.corruption());
        if mode == WalRecoveryMode::AbsoluteConsistency {
            let clean = n == 0 || ends.contains(&n);
            assert_eq!(res.is_ok(), clean, "n={n}");
            if clean {
                assert_eq!(got.len(), complete, "n={n}");
            } else {
                assert!(res.unwrap_err().is_corruption());
            }
        } else {
            res.unwrap();
            assert_eq!(got.len(), complete, "n={n} {mode:?}");
        }
    }
}

#[test]
fn torn_tail_every_length_small() {
    let recs: Vec<Vec<u8>> = (0..40).map(|i| payload(i * 7 % 53, i as u8)).collect();
    let (data, ends) = build(&recs);
    for n in 0..=data.len() {
        check_truncation(&data, &ends, &recs, n);
    }
}

#[test]
fn torn_tail_multi_block() {
    let recs = mixed_records();
    let (data, ends) = build(&recs);
    let mut cuts: Vec<usize> = (0..data.len()).step_by(61).collect();
    let mut marks: Vec<usize> = ends.clone();
    marks.extend((1..=data.len() / BLOCK_SIZE).map(|b| b * BLOCK_SIZE));
    for m in marks {
        for d in 0..24 {
            cuts.push(m.saturating_sub(d).min(data.len()));
            cuts.push((m + d).min(data.len()));
        }
    }
    cuts.push(data.len());
    for n in cuts {
        check_truncation(&data, &ends, &recs, n);
    }
}

#[test]
fn flipped_byte_in_the_middle() {
    let recs = mixed_records();
    let (data, ends) = build(&recs);
    // Flip a payload byte of record 2 (5 bytes, which starts at ends[1] + 7 + ... in block 1).
    let start2 = ends[1];
    let mut bad = data.clone();
    bad[start2 + 8] ^= 0x40;

    let (got, res, rd) = read_all(&bad, WalRecoveryMode::PointInTimeRecovery);
    res.unwrap();
    assert_eq!(got, recs[..2].to_vec());
    let (off, msg) = rd.corruption().unwrap();
    assert_eq!(off as usize, start2);
    assert!(msg.contains("checksum"), "{msg}");
    assert!(rd.torn_tail().is_none());

    for mode in [
        WalRecoveryMode::AbsoluteConsistency,
        WalRecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let (got, res, _) = read_all(&bad, mode);
        assert_eq!(got, recs[..2].to_vec());
        match res.unwrap_err() {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, "000001.log");
                assert_eq!(offset, Some(start2 as u64));
            }
            e => panic!("{e}"),
        }
    }

    // SkipAny drops the rest of that block; records starting in later blocks survive.
    let (got, res, rd) = read_all(&bad, WalRecoveryMode::SkipAnyCorruptedRecords);
    res.unwrap();
    let block = start2 / BLOCK_SIZE;
    let expect: Vec<Vec<u8>> = recs
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            let s = if *i == 0 { 0 } else { ends[i - 1] };
            // a record survives if it starts before the damaged spot or in a later block
            *i < 2 || s / BLOCK_SIZE > block || (s >= (block + 1) * BLOCK_SIZE - 6)
        })
        .map(|(_, r)| r.clone())
        .collect();
    assert_eq!(got, expect);
    assert!(rd.skipped_corruptions() >= 1);
    assert!(got.len() > 2);

    // A damaged length field (runs past the block) in a full block.
    let mut bad2 = data.clone();
    bad2[start2 + 5] = 0x7f;
    let (got, res, rd) = read_all(&bad2, WalRecoveryMode::PointInTimeRecovery);
    res.unwrap();
    assert_eq!(got.len(), 2);
    assert!(rd.corruption().is_some());
}

fn raw_record(t: u8, payload: &[u8], log_number: Option<u32>) -> Vec<u8> {
    let mut crc = crate::hash::crc32c(&[t]);
    if let Some(n) = log_number {
        crc = crate::hash::crc32c_extend(crc, &n.to_le_bytes());
    }
    crc = crate::hash::crc32c_extend(crc, payload);
    let mut v = crc_mask(crc).to_le_bytes().to_vec();
    v.extend((payload.len() as u16).to_le_bytes());
    v.push(t);
    if let Some(n) = log_number {
        v.extend(n.to_le_bytes());
    }
    v.extend_from_slice(payload);
    v
}

#[test]
fn special_record_types() {
    let mut d = raw_record(rt::PREDECESSOR_WAL_INFO, &[0u8; 24], None);
    d.extend(raw_record(rt::FULL, b"one", None));
    d.extend(raw_record(rt::UDT_SIZE, &[0, 0, 0, 0, 8, 0], None));
    d.extend(raw_record(200, b"future", None));
    d.extend(raw_record(rt::RECYCLABLE_PREDECESSOR_WAL_INFO, &[1u8; 24], Some(1)));
    d.extend(raw_record(rt::FULL, b"two", None));
    for mode in MODES {
        let (got, res, rd) = read_all(&d, mode);
        res.unwrap();
        assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
        assert!(rd.corruption().is_none());
    }
    // Unknown type without bit 7: corruption.
    let mut d = raw_record(rt::FULL, b"one", None);
    d.extend(raw_record(12, b"?", None));
    d.extend(raw_record(rt::FULL, b"two", None));
    let (got, res, rd) = read_all(&d, WalRecoveryMode::PointInTimeRecovery);
    res.unwrap();
    assert_eq!(got, vec![b"one".to_vec()]);
    assert_eq!(rd.corruption().unwrap().0, 10);
    assert!(read_all(&d, WalRecoveryMode::AbsoluteConsistency).1.is_err());
    let (got, res, _) = read_all(&d, WalRecoveryMode::SkipAnyCorruptedRecords);
    res.unwrap();
    assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
    // WAL compression: NotSupported.
    let d = raw_record(rt::SET_COMPRESSION_TYPE, &[7, 0, 0, 0], None);
    for mode in MODES {
        assert!(read_all(&d, mode).1.unwrap_err().is_not_supported());
    }
    // Middle without First.
    let mut d = raw_record(rt::MIDDLE, b"x", None);
    d.extend(raw_record(rt::FULL, b"ok", None));
    let (got, _, rd) = read_all(&d, WalRecoveryMode::PointInTimeRecovery);
    assert!(got.is_empty());
    assert!(rd.corruption().unwrap().1.contains("missing start"));
    let (got, _, _) = read_all(&d, WalRecoveryMode::SkipAnyCorruptedRecords);
    assert_eq!(got, vec![b"ok".to_vec()]);
}

#[test]
fn recyclable_records() {
    let recs = vec![payload(100, 1), payload(50000, 2), payload(3, 3)];
    let mut data = Vec::new();
    let mut off = 0;
    for r in &recs {
        off = encode_records_recyclable(off, r, 7, &mut data);
    }
    assert_eq!(data[6], rt::RECYCLABLE_FULL);
    let rd_all = |log: u64, mode| {
        let mut rd = Reader::new(data.clone(), "x", log, mode);
        let mut v = Vec::new();
        while let Ok(Some(r)) = rd.read_record() {
            v.push(r.to_vec());
        }
        v
    };
    for mode in MODES {
        assert_eq!(rd_all(7, mode), recs);
        assert_eq!(rd_all(7 + (1 << 32), mode), recs, "only the low 32 bits count");
        if mode != WalRecoveryMode::SkipAnyCorruptedRecords {
            assert!(rd_all(8, mode).is_empty());
        }
    }
    // A recycled file: new records (log 9) overwrite the start of an old file (log 7).
    let mut newer = Vec::new();
    let off = encode_records_recyclable(0, b"new-one", 9, &mut newer);
    encode_records_recyclable(off, b"new-two", 9, &mut newer);
    let mut file = newer.clone();
    file.extend_from_slice(&data[newer.len()..]);
    for mode in [
        WalRecoveryMode::PointInTimeRecovery,
        WalRecoveryMode::TolerateCorruptedTailRecords,
        WalRecoveryMode::AbsoluteConsistency,
    ] {
        let mut rd = Reader::new(file.clone(), "x", 9, mode);
        assert_eq!(rd.read_record().unwrap().unwrap(), b"new-one");
        assert_eq!(rd.read_record().unwrap().unwrap(), b"new-two");
        // what follows is the tail of an old record: CRC garbage or an old log number
        let r = rd.read_record();
        match mode {
            WalRecoveryMode::TolerateCorruptedTailRecords => assert!(matches!(r, Ok(None))),
            WalRecoveryMode::PointInTimeRecovery => assert!(matches!(r, Ok(None))),
            _ => {}
        }
    }
}

#[test]
fn preallocated_zero_tail() {
    let recs = vec![payload(100, 1), payload(40000, 2)];
    let (mut data, _) = build(&recs);
    data.resize(3 * BLOCK_SIZE, 0);
    for mode in MODES {
        let (got, res, rd) = read_all(&data, mode);
        res.unwrap();
        assert_eq!(got, recs);
        assert!(rd.corruption().is_none() && rd.torn_tail().is_none(), "{mode:?}");
    }
    // Zero padding inside a fragmented record is corruption.
    let (mut d2, _) = build(&[payload(40000, 1)]);
    d2[BLOCK_SIZE..BLOCK_SIZE + 7].fill(0);
    let (got, _, rd) = read_all(&d2, WalRecoveryMode::PointInTimeRecovery);
    assert!(got.is_empty());
    assert!(rd.corruption().is_some());
}

#[test]
fn fuzz_reader_never_panics() {
    let mut rng = Rng::new(42);
    let recs = mixed_records();
    let (data, _) = build(&recs);
    for i in 0..300 {
        let input = if i % 3 == 0 {
            let n = rng.below(3 * BLOCK_SIZE as u64) as usize;
            let mut v = rng.bytes(n);
            // sprinkle plausible headers
            for _ in 0..rng.below(20) {
                if v.len() > 7 {
                    let p = rng.below(v.len() as u64 - 7) as usize;
                    v[p + 6] = (rng.below(12)) as u8;
                    v[p + 5] = 0;
                }
            }
            v
        } else {
            let mut v = data.clone();
            for _ in 0..1 + rng.below(8) {
                let p = rng.below(v.len() as u64) as usize;
                v[p] = rng.next() as u8;
            }
            let cut = rng.below(v.len() as u64 + 1) as usize;
            v.truncate(cut.max(v.len() / 2));
            v
        };
        for mode in MODES {
            let mut rd = Reader::new(input.clone(), "f", rng.below(3), mode);
            let mut n = 0;
            while let Ok(Some(_)) = rd.read_record() {
                n += 1;
                assert!(n < 100_000);
            }
        }
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
    use crate::version_edit::FileMetaData;
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
