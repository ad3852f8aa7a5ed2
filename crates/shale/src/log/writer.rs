//! Log writer: frames logical records into 32 KiB blocks (legacy 7-byte headers).

use super::format::{crc_mask, rt, BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE};
use crate::error::Result;
use crate::fs::WritableFile;

/// Frame `payload` as one logical record starting at `block_offset` (the write position modulo
/// the block size) and append the physical bytes to `out`. Returns the new block offset.
/// Uses legacy (non-recyclable) headers, as RocksDB does by default.
pub(crate) fn encode_records(block_offset: usize, payload: &[u8], out: &mut Vec<u8>) -> usize {
    encode_impl(block_offset, payload, None, out)
}

/// Like [`encode_records`] but with recyclable headers (types 5–8) carrying the low 32 bits of
/// `log_number`. RocksDB writes these only with `recycle_log_file_num > 0`.
#[cfg(test)]
pub(crate) fn encode_records_recyclable(
    block_offset: usize,
    payload: &[u8],
    log_number: u64,
    out: &mut Vec<u8>,
) -> usize {
    encode_impl(block_offset, payload, Some(log_number as u32), out)
}

fn encode_impl(mut block_offset: usize, payload: &[u8], log_number: Option<u32>, out: &mut Vec<u8>) -> usize {
    block_offset %= BLOCK_SIZE;
    let header_size = if log_number.is_some() {
        RECYCLABLE_HEADER_SIZE
    } else {
        HEADER_SIZE
    };
    // Upper bound of the framed size, to reserve once.
    let frags = payload.len() / (BLOCK_SIZE - header_size) + 2;
    out.reserve(payload.len() + frags * (header_size + HEADER_SIZE));

    let mut left = payload;
    let mut begin = true;
    loop {
        let leftover = BLOCK_SIZE - block_offset;
        if leftover < header_size {
            // Too small for a header: zero-fill the block tail and switch to a new block.
            out.resize(out.len() + leftover, 0);
            block_offset = 0;
        }
        let avail = BLOCK_SIZE - block_offset - header_size;
        let n = left.len().min(avail);
        let end = n == left.len();
        let t = match (begin, end) {
            (true, true) => rt::FULL,
            (true, false) => rt::FIRST,
            (false, true) => rt::LAST,
            (false, false) => rt::MIDDLE,
        };
        let t = if log_number.is_some() {
            t + (rt::RECYCLABLE_FULL - rt::FULL)
        } else {
            t
        };
        emit(t, &left[..n], log_number, out);
        block_offset += header_size + n;
        left = &left[n..];
        begin = false;
        if end {
            break;
        }
    }
    block_offset
}

fn emit(t: u8, data: &[u8], log_number: Option<u32>, out: &mut Vec<u8>) {
    let mut crc = crate::hash::crc32c(&[t]);
    let ln_bytes = log_number.map(|n| n.to_le_bytes());
    if let Some(b) = &ln_bytes {
        crc = crate::hash::crc32c_extend(crc, b);
    }
    crc = crate::hash::crc32c_extend(crc, data);
    out.extend_from_slice(&crc_mask(crc).to_le_bytes());
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.push(t);
    if let Some(b) = &ln_bytes {
        out.extend_from_slice(b);
    }
    out.extend_from_slice(data);
}

/// Appends logical records to a log file (WAL or MANIFEST).
pub(crate) struct Writer {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    buf: Vec<u8>,
    /// The file's length as of the last successful `flush` or `sync`: whole records, all in the
    /// OS. A reader of the live log reads no further (bytes past it may be half stored).
    published: u64,
}

impl Writer {
    /// A writer for a new (empty) file.
    pub(crate) fn new(file: Box<dyn WritableFile>) -> Writer {
        let off = file.size();
        Writer::with_offset(file, off)
    }

    /// A writer for a new WAL: the file may keep zeros written ahead of the records
    /// ([`WritableFile::keep_zeros_ahead`]), which every log reader takes as the end, and with
    /// `mapped` hand its records to the OS through a mapping of them
    /// ([`WritableFile::map_appends`]).
    pub(crate) fn new_wal(mut file: Box<dyn WritableFile>, mapped: bool) -> Writer {
        file.keep_zeros_ahead();
        if mapped {
            file.map_appends();
        }
        Writer::new(file)
    }

    /// A writer resuming a file whose current size is `file_size`.
    pub(crate) fn with_offset(file: Box<dyn WritableFile>, file_size: u64) -> Writer {
        Writer {
            file,
            block_offset: (file_size % BLOCK_SIZE as u64) as usize,
            buf: Vec::new(),
            published: file_size,
        }
    }

    /// Frame and append one logical record (one `append` call).
    pub(crate) fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.buf.clear();
        let new_off = encode_records(self.block_offset, payload, &mut self.buf);
        self.file.append(&self.buf)?;
        self.block_offset = new_off;
        if self.buf.capacity() > 4 * BLOCK_SIZE {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// Append bytes already framed by [`encode_records`] starting at [`Writer::block_offset`];
    /// `new_block_offset` is the value `encode_records` returned.
    #[allow(dead_code)] // group-commit and tooling helpers, exercised by tests
    pub(crate) fn add_framed(&mut self, framed: &[u8], new_block_offset: usize) -> Result<()> {
        self.file.append(framed)?;
        self.block_offset = new_block_offset;
        Ok(())
    }

    /// Current offset inside the current block (input to [`encode_records`]).
    #[allow(dead_code)] // group-commit and tooling helpers, exercised by tests
    pub(crate) fn block_offset(&self) -> usize {
        self.block_offset
    }

    pub(crate) fn flush(&mut self) -> Result<()> {
        self.file.flush()?;
        self.published = self.file.size();
        Ok(())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync()?;
        self.published = self.file.size();
        Ok(())
    }

    /// How far a reader of the live file may read: the length as of the last successful
    /// `flush` or `sync` (whole records, all of them handed to the OS). Appends since, even if
    /// the file's buffer pushed some of their bytes out, are not published.
    pub(crate) fn published_len(&self) -> u64 {
        self.published
    }

    #[allow(dead_code)] // group-commit and tooling helpers, exercised by tests
    pub(crate) fn file_size(&self) -> u64 {
        self.file.size()
    }

    #[allow(dead_code)] // group-commit and tooling helpers, exercised by tests
    pub(crate) fn into_file(self) -> Box<dyn WritableFile> {
        self.file
    }
}
