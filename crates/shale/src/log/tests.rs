use std::path::Path;

use super::format::{crc_mask, crc_unmask, BLOCK_SIZE};
use super::*;
use crate::error::Error;
use crate::fs::{FileSystem, MemFs};
use crate::log::DBRecoveryMode;

const MODES: [DBRecoveryMode; 4] = [
    DBRecoveryMode::TolerateCorruptedTailRecords,
    DBRecoveryMode::AbsoluteConsistency,
    DBRecoveryMode::PointInTime,
    DBRecoveryMode::SkipAnyCorruptedRecord,
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
pub(crate) fn build(records: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut off = 0;
    let mut ends = Vec::new();
    for r in records {
        off = encode_records(off, r, &mut out);
        ends.push(out.len());
    }
    (out, ends)
}

pub(crate) fn read_all(data: &[u8], mode: DBRecoveryMode) -> (Vec<Vec<u8>>, Result<(), Error>, Reader) {
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

pub(crate) fn unhex(s: &str) -> Vec<u8> {
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
    let (got, res, rd) = read_all(&d2, DBRecoveryMode::AbsoluteConsistency);
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
    let (got, res, _) = read_all(&d4, DBRecoveryMode::AbsoluteConsistency);
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
        if mode == DBRecoveryMode::AbsoluteConsistency {
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

    let (got, res, rd) = read_all(&bad, DBRecoveryMode::PointInTime);
    res.unwrap();
    assert_eq!(got, recs[..2].to_vec());
    let (off, msg) = rd.corruption().unwrap();
    assert_eq!(off as usize, start2);
    assert!(msg.contains("checksum"), "{msg}");
    assert!(rd.torn_tail().is_none());

    for mode in [
        DBRecoveryMode::AbsoluteConsistency,
        DBRecoveryMode::TolerateCorruptedTailRecords,
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
    let (got, res, rd) = read_all(&bad, DBRecoveryMode::SkipAnyCorruptedRecord);
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
    let (got, res, rd) = read_all(&bad2, DBRecoveryMode::PointInTime);
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
    let (got, res, rd) = read_all(&d, DBRecoveryMode::PointInTime);
    res.unwrap();
    assert_eq!(got, vec![b"one".to_vec()]);
    assert_eq!(rd.corruption().unwrap().0, 10);
    assert!(read_all(&d, DBRecoveryMode::AbsoluteConsistency).1.is_err());
    let (got, res, _) = read_all(&d, DBRecoveryMode::SkipAnyCorruptedRecord);
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
    let (got, _, rd) = read_all(&d, DBRecoveryMode::PointInTime);
    assert!(got.is_empty());
    assert!(rd.corruption().unwrap().1.contains("missing start"));
    let (got, _, _) = read_all(&d, DBRecoveryMode::SkipAnyCorruptedRecord);
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
        if mode != DBRecoveryMode::SkipAnyCorruptedRecord {
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
        DBRecoveryMode::PointInTime,
        DBRecoveryMode::TolerateCorruptedTailRecords,
        DBRecoveryMode::AbsoluteConsistency,
    ] {
        let mut rd = Reader::new(file.clone(), "x", 9, mode);
        assert_eq!(rd.read_record().unwrap().unwrap(), b"new-one");
        assert_eq!(rd.read_record().unwrap().unwrap(), b"new-two");
        // what follows is the tail of an old record: CRC garbage or an old log number
        let r = rd.read_record();
        match mode {
            DBRecoveryMode::TolerateCorruptedTailRecords => assert!(matches!(r, Ok(None))),
            DBRecoveryMode::PointInTime => assert!(matches!(r, Ok(None))),
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
    let (got, _, rd) = read_all(&d2, DBRecoveryMode::PointInTime);
    assert!(got.is_empty());
    assert!(rd.corruption().is_some());
}

/// The inputs of the fuzz tests: random bytes with plausible headers, and damaged valid logs.
pub(crate) fn fuzz_inputs() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(42);
    let recs = mixed_records();
    let (data, _) = build(&recs);
    (0..300)
        .map(|i| {
            if i % 3 == 0 {
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
            }
        })
        .collect()
}

#[test]
fn fuzz_reader_never_panics() {
    let mut rng = Rng::new(43);
    for input in fuzz_inputs() {
        for mode in MODES {
            let mut rd = Reader::new(input.clone(), "f", rng.below(3), mode);
            let mut n = 0;
            while let Ok(Some(_)) = rd.read_record() {
                n += 1;
                assert!(n < 100_000);
            }
        }
    }
}

/// A power cut can lose a page in the middle of a log's unsynced tail while later pages reach
/// the disk (dirty pages are written back in no set order): where a record header reads as
/// zeros, the log ends — a torn tail, nothing after it replayed (never a record past a lost
/// one) — and `AbsoluteConsistency` reports a Corruption at that offset.
#[test]
fn zeros_in_front_of_later_records_end_the_log_there() {
    let recs: Vec<Vec<u8>> = (0..2000).map(|i| payload(40 + i % 30, i as u8)).collect();
    let (data, ends) = build(&recs);
    assert!(data.len() > 3 * BLOCK_SIZE);
    // Lose the 4 KiB from the start of record 300 (a header), records after it intact.
    let at = ends[299];
    let lost = ends.iter().take_while(|&&e| e <= at + 4096).count();
    let mut d = data.clone();
    d[at..at + 4096].fill(0);
    for mode in MODES {
        let (got, res, rd) = read_all(&d, mode);
        assert_eq!(got, recs[..300], "{mode:?}: exactly the records before the lost page");
        if mode == DBRecoveryMode::AbsoluteConsistency {
            let e = res.unwrap_err().to_string();
            assert!(e.contains(&format!("at offset {at}")), "{e}");
        } else {
            res.unwrap();
            assert_eq!(rd.torn_tail().map(|t| t.0), Some(at as u64), "{mode:?}");
        }
    }
    assert!(lost < recs.len());
}

// ---- a crash inside a flush stored first header last (`fs/log_order.rs`)

struct FlushRng(u64);
impl FlushRng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn payload(&mut self) -> Vec<u8> {
        let n = match self.next() % 10 {
            0 => 40_000 + self.next() % 200_000,
            1..=3 => 30_000 + self.next() % 6_000,
            _ => 1 + self.next() % 3_000,
        };
        let b = self.next() as u8 | 1;
        (0..n).map(|i| b.wrapping_add(i as u8)).collect()
    }
}

/// A log of complete flushes, then one flush a crash interrupted (`store` leaves what it
/// leaves of it over zeros written ahead), read in every recovery mode: the tolerant modes
/// return exactly the complete flushes' records, and `AbsoluteConsistency` those or a
/// Corruption naming the file and the offset of the torn flush. Returns how many reads
/// broke that rule (the rule's own checks use it).
fn interrupted_flushes(rounds: u64, store: impl Fn(&mut [u8], u64, &[u8], u64)) -> usize {
    use crate::log::DBRecoveryMode as M;
    let mut rng = FlushRng(0x5EED_1234);
    let mut broken = 0;
    for _ in 0..rounds {
        let (mut file, mut boff, mut want) = (Vec::new(), 0, Vec::new());
        for _ in 0..rng.next() % 4 {
            let p = rng.payload();
            boff = encode_records(boff, &p, &mut file);
            want.push(p);
        }
        let at = file.len();
        let mut flush = Vec::new();
        let mut b = boff;
        for _ in 0..1 + rng.next() % 3 {
            b = encode_records(b, &rng.payload(), &mut flush);
        }
        let mut bytes = file.clone();
        bytes.resize(at + flush.len() + (1 << 16), 0);
        let r = rng.next();
        store(&mut bytes[at..], at as u64, &flush, r);
        let nothing_stored = bytes[at..].iter().all(|&x| x == 0);
        for mode in MODES {
            let (got, res, _) = read_all(&bytes, mode);
            let ok = match (mode, res) {
                (M::AbsoluteConsistency, Err(e)) => {
                    let m = e.to_string();
                    !nothing_stored
                        && got == want
                        && m.contains("000001.log")
                        && m.contains(&format!("at offset {}", at + crate::fs::head_offset(at as u64)))
                }
                (_, Ok(())) => got == want,
                (_, Err(_)) => false,
            };
            broken += !ok as usize;
        }
    }
    broken
}

#[test]
fn a_crash_inside_a_mapped_copy_leaves_the_flushes_before_it_in_every_recovery_mode() {
    let broken = interrupted_flushes(400, |dst, at, flush, r| {
        // SAFETY: dst holds the flush and zeros after it.
        unsafe { crate::fs::copy_interrupted(dst.as_mut_ptr(), at, flush, r) }
    });
    assert_eq!(broken, 0);
    // The same crash with the head stored in no particular order (a plain `memcpy` cut
    // short) breaks the rule: what the head-last order is for.
    let broken = interrupted_flushes(400, |dst, _, flush, mut r| {
        for (i, piece) in flush.chunks(64).enumerate() {
            r = r.rotate_left(7) ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            if r & 1 == 1 {
                dst[i * 64..i * 64 + piece.len()].copy_from_slice(piece);
            }
        }
    });
    assert!(broken > 100, "{broken}");
}

#[test]
fn a_crash_inside_a_head_last_write_leaves_the_flushes_before_it() {
    // A `write` cut short at a page boundary, of everything but the head (the first of the
    // two writes of a flush over zeros), in file order.
    let broken = interrupted_flushes(400, |dst, at, flush, r| {
        let from = crate::fs::head_range(at, flush).map_or(0, |h| h.end);
        let cut = from + (r as usize) % (flush.len() - from + 1);
        let cut = if r % 3 == 0 { flush.len() } else { cut / 4096 * 4096 }.max(from);
        dst[from..cut].copy_from_slice(&flush[from..cut]);
    });
    assert_eq!(broken, 0);
}

/// A tailing reader (a secondary instance reading a live MANIFEST or WAL): the file grows in
/// steps that cut records anywhere; each read resumes at the end of the last whole record it
/// returned, from the bytes of that offset's block on, and reads every record exactly once,
/// whole, in order, reporting file offsets.
#[test]
fn a_resumed_reader_reads_a_growing_file_once_record_by_record() {
    let recs = mixed_records();
    let (data, ends) = build(&recs);
    for step in [1usize, 7, 333, 5000, BLOCK_SIZE - 3, BLOCK_SIZE + 11] {
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut offset = 0u64;
        let mut len = 0usize;
        while len < data.len() {
            len = (len + step).min(data.len());
            let base = offset as usize - offset as usize % BLOCK_SIZE;
            let mut rd = Reader::resume(
                data[base..len].to_vec(),
                "MANIFEST-000001",
                1,
                DBRecoveryMode::TolerateCorruptedTailRecords,
                offset,
            );
            while let Some(r) = rd.read_record().unwrap() {
                got.push(r.to_vec());
                assert_eq!(rd.end_offset() as usize, ends[got.len() - 1], "step {step}");
                offset = rd.end_offset();
            }
            assert!(rd.corruption().is_none(), "step {step} len {len}");
            let complete = ends.iter().filter(|&&e| e <= len).count();
            assert_eq!(got.len(), complete, "step {step} len {len}: every whole record, once");
            if let Some((off, _)) = rd.torn_tail() {
                assert_eq!(off, offset.max(off), "a torn tail is reported at a file offset");
            }
        }
        assert_eq!(got, recs, "step {step}");
    }
}
