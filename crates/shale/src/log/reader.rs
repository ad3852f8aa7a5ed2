//! Log reader over a whole file's bytes, with RocksDB's `WALRecoveryMode` semantics
//! (`db/log_reader.cc`, `ReadRecord` / `ReadPhysicalRecord`).

use super::format::DBRecoveryMode;
use super::format::{crc_unmask, rt, BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE};
use crate::coding::decode_fixed32;
use crate::error::{Error, Result};

/// Outcome of reading one physical record.
enum Phys {
    Record {
        t: u8,
        start: usize,
        len: usize,
    },
    /// Clean end of file.
    Eof,
    /// Fewer than a header's bytes left at end of file (torn header).
    BadHeader {
        off: usize,
    },
    /// The record's length runs past the block (at EOF: a torn record body).
    BadRecordLen {
        off: usize,
        eof: bool,
    },
    BadChecksum {
        off: usize,
    },
    /// A header of zero type and zero length: the end of the data written. No writer writes
    /// type 0 (RocksDB reserves it for preallocated space); zeros written ahead of a log's
    /// records read this way, and so does a flush whose copy a crash interrupted, as the header
    /// of a flush's first record is stored last, in one store (`fs/posix.rs`). `torn`: a byte
    /// after `off` is not zero (a partly stored flush, or pages of a power-cut file that reached
    /// the disk out of order), so the log ends in a torn tail, never replayed past.
    ZeroType {
        off: usize,
        torn: bool,
    },
    /// A recyclable record whose log number is not this file's (left over from a recycled file).
    OldRecord {
        off: usize,
    },
}

/// Where the record returned by `next_record` lives.
enum Loc {
    Data(usize, usize),
    Scratch,
}

/// Reads logical records from a complete log file held in memory.
///
/// Recovery-mode semantics (mirroring RocksDB):
/// * a header of zero type and length (zeros written ahead of the records): the end of the log
///   when only zeros follow, in every mode.
/// * torn tail (truncated header / record body at EOF, or EOF inside a fragmented record, or a
///   recyclable record from an older incarnation of a recycled file in the middle of a fragmented
///   record, or a zero header with non-zero bytes after it — a flush a crash interrupted, whose
///   first header is stored last): `AbsoluteConsistency` →
///   `Err(Corruption)`; every other mode → end of log (`Ok(None)`, nothing after it is
///   replayed), and [`Reader::torn_tail`] says where.
/// * corruption in the middle (CRC mismatch, bad length, unknown type, fragment sequence errors):
///   `PointInTime` → `Ok(None)` (replay stops) and [`Reader::corruption`] returns the
///   offset and reason; `AbsoluteConsistency` and `TolerateCorruptedTailRecords` →
///   `Err(Corruption { file, offset })`; `SkipAnyCorruptedRecord` → the bad block / record is
///   skipped and reading goes on ([`Reader::corruption`] then reports the first one skipped).
/// * a WAL compression record (type 9) → `Err(NotSupported)` in every mode.
///
/// For MANIFEST files use `TolerateCorruptedTailRecords` (what RocksDB uses).
pub(crate) struct Reader {
    data: Vec<u8>,
    file: String,
    log_number: u32,
    mode: DBRecoveryMode,
    /// Start of the unread part of the current block buffer.
    pos: usize,
    /// End of the current block buffer.
    buf_end: usize,
    /// The current buffer is the file's last (partial) block.
    eof: bool,
    scratch: Vec<u8>,
    last_record_offset: u64,
    corruption: Option<(u64, String)>,
    torn_tail: Option<(u64, String)>,
    skipped: usize,
    recycled: bool,
    done: bool,
    /// The file offset of `data[0]` (a reader resumed in the middle of a file, see
    /// [`Reader::resume`]); every offset the reader reports is a file offset.
    base: u64,
}

/// What `report` decided.
enum Verdict {
    Stop,
    Continue,
}

impl Reader {
    /// `log_number` is the file's number (only its low 32 bits are compared with recyclable
    /// records' log numbers).
    /// The name of the file read (for errors).
    pub(crate) fn file_name(&self) -> &str {
        &self.file
    }

    pub(crate) fn new(data: Vec<u8>, file_name: impl Into<String>, log_number: u64, mode: DBRecoveryMode) -> Reader {
        Reader {
            data,
            file: file_name.into(),
            log_number: log_number as u32,
            mode,
            pos: 0,
            buf_end: 0,
            eof: false,
            scratch: Vec::new(),
            last_record_offset: 0,
            corruption: None,
            torn_tail: None,
            skipped: 0,
            recycled: false,
            done: false,
            base: 0,
        }
    }

    /// A reader of the part of a file that starts at `offset`, an offset where a record starts
    /// (the end of a record read before, as [`Reader::end_offset`] gave it): `data` holds the
    /// file's bytes from the start of `offset`'s block (`offset - offset % BLOCK_SIZE`) on. A
    /// tailing reader (a secondary instance) reads only what a file gained since its last read.
    pub(crate) fn resume(
        data: Vec<u8>,
        file_name: impl Into<String>,
        log_number: u64,
        mode: DBRecoveryMode,
        offset: u64,
    ) -> Reader {
        let skip = (offset % BLOCK_SIZE as u64) as usize;
        let mut r = Reader::new(data, file_name, log_number, mode);
        r.base = offset - skip as u64;
        if skip > 0 {
            // The block `offset` is in is the current buffer, read up to `skip`.
            r.buf_end = BLOCK_SIZE.min(r.data.len());
            r.eof = r.data.len() < BLOCK_SIZE;
            r.pos = skip.min(r.buf_end);
        }
        r
    }

    /// The file offset just past the last record returned (where the next one starts): a
    /// tailing reader resumes there.
    pub(crate) fn end_offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The next logical record, `Ok(None)` at the end of valid data (see the type docs).
    pub(crate) fn read_record(&mut self) -> Result<Option<&[u8]>> {
        match self.next_record()? {
            None => Ok(None),
            Some(Loc::Data(s, e)) => Ok(Some(&self.data[s..e])),
            Some(Loc::Scratch) => Ok(Some(&self.scratch)),
        }
    }

    /// File offset of the first physical record of the last record returned (as RocksDB's
    /// `LastRecordOffset`, which is what `ldb dump_wal` prints as "Physical Offset").
    pub(crate) fn last_record_offset(&self) -> u64 {
        self.base + self.last_record_offset
    }

    /// Mid-log corruption: in `PointInTime` the offset and reason where replay stopped;
    /// in `SkipAnyCorruptedRecord` the first corruption skipped.
    pub(crate) fn corruption(&self) -> Option<(u64, String)> {
        self.corruption.clone().map(|(o, m)| (self.base + o, m))
    }

    /// Where the log ended in a torn (truncated) record, if it did.
    pub(crate) fn torn_tail(&self) -> Option<(u64, String)> {
        self.torn_tail.clone().map(|(o, m)| (self.base + o, m))
    }

    /// Number of corruptions skipped (`SkipAnyCorruptedRecord`).
    pub(crate) fn skipped_corruptions(&self) -> usize {
        self.skipped
    }

    fn corruption_error(&self, off: usize, msg: &str) -> Error {
        Error::corruption(self.file.clone(), Some(self.base + off as u64), msg)
    }

    /// A mid-log corruption.
    fn report(&mut self, off: usize, msg: &str) -> Result<Verdict> {
        match self.mode {
            DBRecoveryMode::SkipAnyCorruptedRecord => {
                self.skipped += 1;
                if self.corruption.is_none() {
                    self.corruption = Some((off as u64, msg.to_string()));
                }
                Ok(Verdict::Continue)
            }
            DBRecoveryMode::PointInTime => {
                self.corruption = Some((off as u64, msg.to_string()));
                self.done = true;
                Ok(Verdict::Stop)
            }
            DBRecoveryMode::AbsoluteConsistency | DBRecoveryMode::TolerateCorruptedTailRecords => {
                self.done = true;
                Err(self.corruption_error(off, msg))
            }
        }
    }

    /// A torn tail: ends the log (an error only in `AbsoluteConsistency`).
    fn torn(&mut self, off: usize, msg: &str) -> Result<Option<Loc>> {
        self.done = true;
        self.scratch.clear();
        self.torn_tail = Some((off as u64, msg.to_string()));
        if self.mode == DBRecoveryMode::AbsoluteConsistency {
            return Err(self.corruption_error(off, msg));
        }
        Ok(None)
    }

    fn next_record(&mut self) -> Result<Option<Loc>> {
        if self.done {
            return Ok(None);
        }
        self.scratch.clear();
        let mut in_frag = false;
        let mut prospective = 0usize;
        macro_rules! report {
            ($off:expr, $msg:expr) => {
                if let Verdict::Stop = self.report($off, $msg)? {
                    self.scratch.clear();
                    return Ok(None);
                }
            };
        }
        loop {
            let phys_off = self.pos;
            match self.read_physical() {
                Phys::Record { t, start, len } => match t {
                    rt::FULL | rt::RECYCLABLE_FULL => {
                        if in_frag && !self.scratch.is_empty() {
                            report!(prospective, "partial record without end(1)");
                        }
                        self.scratch.clear();
                        self.last_record_offset = phys_off as u64;
                        return Ok(Some(Loc::Data(start, start + len)));
                    }
                    rt::FIRST | rt::RECYCLABLE_FIRST => {
                        if in_frag && !self.scratch.is_empty() {
                            report!(prospective, "partial record without end(2)");
                        }
                        prospective = phys_off;
                        self.scratch.clear();
                        self.scratch.extend_from_slice(&self.data[start..start + len]);
                        in_frag = true;
                    }
                    rt::MIDDLE | rt::RECYCLABLE_MIDDLE => {
                        if !in_frag {
                            report!(phys_off, "missing start of fragmented record(1)");
                        } else {
                            self.scratch.extend_from_slice(&self.data[start..start + len]);
                        }
                    }
                    rt::LAST | rt::RECYCLABLE_LAST => {
                        if !in_frag {
                            report!(phys_off, "missing start of fragmented record(2)");
                        } else {
                            self.scratch.extend_from_slice(&self.data[start..start + len]);
                            self.last_record_offset = prospective as u64;
                            return Ok(Some(Loc::Scratch));
                        }
                    }
                    rt::SET_COMPRESSION_TYPE => {
                        self.done = true;
                        return Err(Error::NotSupported(format!(
                            "WAL compression (SetCompressionType record at offset {phys_off} of {})",
                            self.file
                        )));
                    }
                    rt::UDT_SIZE | rt::RECYCLABLE_UDT_SIZE => {
                        // User-defined timestamp sizes: nothing for us to do (a CF with timestamps
                        // is rejected by its comparator name). Inside a fragment it is corruption.
                        if in_frag {
                            report!(phys_off, "user-defined timestamp size record interspersed");
                            in_frag = false;
                            self.scratch.clear();
                        }
                    }
                    t if t & rt::SAFE_IGNORE_MASK != 0 => {
                        // PredecessorWALInfo (130/131) and future ignorable types.
                    }
                    t => {
                        report!(phys_off, &format!("unknown record type {t}"));
                        in_frag = false;
                        self.scratch.clear();
                    }
                },
                Phys::Eof => {
                    if in_frag {
                        return self.torn(prospective, "error reading trailing data");
                    }
                    self.done = true;
                    return Ok(None);
                }
                Phys::BadHeader { off } => {
                    return self.torn(off, "truncated header");
                }
                Phys::OldRecord { off } => {
                    if self.mode != DBRecoveryMode::SkipAnyCorruptedRecord {
                        if in_frag {
                            return self.torn(prospective, "error reading trailing data");
                        }
                        // A record from a previous incarnation of a recycled file: end of data.
                        self.done = true;
                        return Ok(None);
                    }
                    if in_frag {
                        report!(off, "error in middle of record");
                        in_frag = false;
                        self.scratch.clear();
                    }
                }
                Phys::ZeroType { off, torn } => {
                    // The end of what was written: a record cut short here, or bytes stored
                    // after this point, make it a torn tail (never replayed past).
                    if in_frag {
                        // Zeros where a fragment's header belongs: not what a crash leaves (the
                        // flush's first header is stored last), so corruption, as in RocksDB;
                        // nothing after it is read in any mode.
                        report!(off, "error in middle of record");
                        self.scratch.clear();
                        self.done = true;
                        return Ok(None);
                    }
                    if torn {
                        return self.torn(off, "zero record type in front of partly written bytes (a torn write)");
                    }
                    self.done = true;
                    return Ok(None);
                }
                Phys::BadRecordLen { off, eof: true } => {
                    return self.torn(off, "truncated record body");
                }
                bad @ (Phys::BadRecordLen { .. } | Phys::BadChecksum { .. }) => {
                    let (off, msg) = match bad {
                        Phys::BadRecordLen { off, .. } => (off, "bad record length"),
                        Phys::BadChecksum { off } => (off, "checksum mismatch"),
                        _ => unreachable!(),
                    };
                    if self.recycled && self.mode == DBRecoveryMode::TolerateCorruptedTailRecords {
                        // A recycled file: garbage after the valid records is expected.
                        self.done = true;
                        self.scratch.clear();
                        return Ok(None);
                    }
                    report!(off, msg);
                    if in_frag {
                        report!(prospective, "error in middle of record");
                        in_frag = false;
                        self.scratch.clear();
                    }
                }
            }
        }
    }

    /// Load the next block into the buffer; false if there is none (EOF).
    fn read_more(&mut self) -> bool {
        if self.eof {
            return false;
        }
        self.pos = self.buf_end;
        self.buf_end = (self.pos + BLOCK_SIZE).min(self.data.len());
        if self.buf_end - self.pos < BLOCK_SIZE {
            self.eof = true;
        }
        true
    }

    fn read_physical(&mut self) -> Phys {
        loop {
            let avail = self.buf_end - self.pos;
            if avail < HEADER_SIZE {
                if self.read_more() {
                    continue;
                }
                if avail > 0 {
                    let off = self.pos;
                    self.pos = self.buf_end;
                    return Phys::BadHeader { off };
                }
                return Phys::Eof;
            }
            let off = self.pos;
            let h = &self.data[off..self.buf_end];
            let length = u16::from_le_bytes([h[4], h[5]]) as usize;
            let t = h[6];
            if t == rt::ZERO && length == 0 {
                self.pos = self.data.len();
                self.buf_end = self.data.len();
                self.eof = true;
                let torn = self.data[off..].iter().any(|&b| b != 0);
                return Phys::ZeroType { off, torn };
            }
            let mut header_size = HEADER_SIZE;
            if rt::is_recyclable(t) {
                if off == 0 && self.base == 0 {
                    self.recycled = true;
                }
                header_size = RECYCLABLE_HEADER_SIZE;
                if avail < RECYCLABLE_HEADER_SIZE {
                    if self.read_more() {
                        continue;
                    }
                    self.pos = self.buf_end;
                    return Phys::BadHeader { off };
                }
                let ln = decode_fixed32(&h[7..]).unwrap_or(0);
                if ln != self.log_number {
                    // Skip it (only matters in SkipAny mode, the others stop here).
                    self.pos = if header_size + length <= avail {
                        off + header_size + length
                    } else {
                        self.buf_end
                    };
                    return Phys::OldRecord { off };
                }
            }
            if header_size + length > avail {
                self.pos = self.buf_end;
                return Phys::BadRecordLen { off, eof: self.eof };
            }
            let expected = crc_unmask(decode_fixed32(h).unwrap_or(0));
            let actual = crate::hash::crc32c(&h[6..header_size + length]);
            if actual != expected {
                // The length may itself be corrupt: drop the rest of the block.
                self.pos = self.buf_end;
                return Phys::BadChecksum { off };
            }
            self.pos = off + header_size + length;
            return Phys::Record {
                t,
                start: off + header_size,
                len: length,
            };
        }
    }
}
