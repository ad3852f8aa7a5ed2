//! Footers, block trailers (checksums), block compression and the meta-block names of the
//! block-based table format (`docs/format-details.md`, "Block-based tables").

use crate::coding::{get_varint32, put_fixed32, put_fixed64, put_varint32, Reader};
use crate::error::{Error, Result};
use crate::hash::crc32c_mask;
use crate::table::format::{BlockHandle, ChecksumType, DBCompressionType};
use crate::table::format::{
    BLOCK_BASED_MAGIC, CUCKOO_MAGIC, FOOTER_LEN, LEGACY_BLOCK_BASED_MAGIC, LEGACY_FOOTER_LEN, LEGACY_PLAIN_MAGIC,
    PLAIN_MAGIC,
};

/// compression type byte + fixed32 checksum after every block.
pub(crate) const BLOCK_TRAILER_LEN: usize = 5;
const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];
/// Largest format_version we read.
pub(crate) const MAX_READ_FORMAT_VERSION: u32 = 7;

// ------------------------------------------------------------------------------------------------
// Checksums

/// `ComputeBuiltinChecksumWithLastByte`: the checksum of `data ‖ last_byte` for a checksum type
/// ("Checksums" in `docs/format-details.md`). For XXH3 the last byte is folded in by XOR of
/// `byte * 0x6B9083D9`.
pub(crate) fn block_checksum(ty: ChecksumType, data: &[u8], last_byte: u8) -> u32 {
    match ty {
        ChecksumType::NoChecksum => 0,
        ChecksumType::CRC32c => crc32c_mask(crate::hash::crc32c_extend(crate::hash::crc32c(data), &[last_byte])),
        ChecksumType::XxHash => {
            let mut h = xxhash_rust::xxh32::Xxh32::new(0);
            h.update(data);
            h.update(&[last_byte]);
            h.digest()
        }
        ChecksumType::XxHash64 => {
            let mut h = xxhash_rust::xxh64::Xxh64::new(0);
            h.update(data);
            h.update(&[last_byte]);
            h.digest() as u32
        }
        ChecksumType::XXH3 => (xxhash_rust::xxh3::xxh3_64(data) as u32) ^ (last_byte as u32).wrapping_mul(0x6B90_83D9),
    }
}

/// The format_version >= 6 context modifier: 0 when `base == 0`.
#[inline]
pub(crate) fn checksum_modifier(base: u32, offset: u64) -> u32 {
    if base == 0 {
        0
    } else {
        base ^ (offset as u32).wrapping_add((offset >> 32) as u32)
    }
}

/// The value stored in a block trailer: `C(type, block, comp) + modifier(base, offset)`.
#[inline]
pub(crate) fn trailer_checksum(ty: ChecksumType, block: &[u8], comp: u8, base: u32, offset: u64) -> u32 {
    block_checksum(ty, block, comp).wrapping_add(checksum_modifier(base, offset))
}

// ------------------------------------------------------------------------------------------------
// Footer

/// A decoded footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Footer {
    pub checksum: ChecksumType,
    pub format_version: u32,
    pub metaindex: BlockHandle,
    /// For format_version >= 6 this is null in the footer; the reader fills it from the
    /// metaindex entry `rocksdb.index`.
    pub index: BlockHandle,
    /// Non-zero only for format_version >= 6.
    pub base_context_checksum: u32,
}

impl Footer {
    /// Decode the footer from the last bytes of a file (`tail` = the last min(53, size) bytes,
    /// `file_size` = whole size). Errors do not carry the file name; callers add it.
    pub(crate) fn decode(tail: &[u8], file_size: u64) -> Result<Footer> {
        if tail.len() < 8 {
            return Err(Error::corrupt("file is too short to be an sst file"));
        }
        let magic = u64::from_le_bytes(tail[tail.len() - 8..].try_into().unwrap());
        match magic {
            LEGACY_BLOCK_BASED_MAGIC => {
                if tail.len() < LEGACY_FOOTER_LEN {
                    return Err(Error::corrupt("file is too short to be an sst file"));
                }
                let f = &tail[tail.len() - LEGACY_FOOTER_LEN..];
                let mut r = Reader::new(f);
                let metaindex =
                    BlockHandle::decode_from(&mut r).ok_or_else(|| Error::corrupt("bad metaindex handle in footer"))?;
                let index =
                    BlockHandle::decode_from(&mut r).ok_or_else(|| Error::corrupt("bad index handle in footer"))?;
                if r.pos() > 40 {
                    return Err(Error::corrupt("bad block handles in footer"));
                }
                Ok(Footer {
                    checksum: ChecksumType::CRC32c,
                    format_version: 0,
                    metaindex,
                    index,
                    base_context_checksum: 0,
                })
            }
            BLOCK_BASED_MAGIC => {
                if tail.len() < FOOTER_LEN {
                    return Err(Error::corrupt("file is too short to be an sst file"));
                }
                let f = &tail[tail.len() - FOOTER_LEN..];
                let fv = u32::from_le_bytes(f[41..45].try_into().unwrap());
                if fv > MAX_READ_FORMAT_VERSION {
                    return Err(Error::corrupt(format!("Corrupt or unsupported format_version: {fv}")));
                }
                let checksum = ChecksumType::from_u8(f[0])
                    .ok_or_else(|| Error::corrupt(format!("unknown checksum type {} in footer", f[0])))?;
                if fv >= 6 {
                    if f[1..5] != EXTENDED_MAGIC {
                        return Err(Error::corrupt("Bad extended magic in footer"));
                    }
                    let stored = u32::from_le_bytes(f[5..9].try_into().unwrap());
                    let base = u32::from_le_bytes(f[9..13].try_into().unwrap());
                    let msize = u32::from_le_bytes(f[13..17].try_into().unwrap()) as u64;
                    if base == 0 {
                        return Err(Error::corrupt("Invalid base context checksum in footer"));
                    }
                    let footer_off = file_size.saturating_sub(FOOTER_LEN as u64);
                    let mut z = [0u8; FOOTER_LEN];
                    z.copy_from_slice(f);
                    z[5..9].fill(0);
                    let calc = block_checksum(checksum, &z[..FOOTER_LEN - 1], z[FOOTER_LEN - 1])
                        .wrapping_add(checksum_modifier(base, footer_off));
                    if calc != stored {
                        return Err(Error::corruption(
                            "",
                            Some(footer_off),
                            format!("footer checksum mismatch (stored {stored:#010x}, computed {calc:#010x})"),
                        ));
                    }
                    // Only after the checksum: a flipped reserved byte is corruption, not a feature.
                    if f[33..41].iter().any(|&b| b != 0) {
                        return Err(Error::NotSupported(
                            "sst footer uses a future feature (non-zero reserved bytes)".into(),
                        ));
                    }
                    let end = footer_off
                        .checked_sub(BLOCK_TRAILER_LEN as u64 + msize)
                        .ok_or_else(|| Error::corrupt("metaindex size in footer exceeds the file"))?;
                    Ok(Footer {
                        checksum,
                        format_version: fv,
                        metaindex: BlockHandle::new(end, msize),
                        index: BlockHandle::default(),
                        base_context_checksum: base,
                    })
                } else {
                    let mut r = Reader::new(&f[1..]);
                    let metaindex = BlockHandle::decode_from(&mut r)
                        .ok_or_else(|| Error::corrupt("bad metaindex handle in footer"))?;
                    let index =
                        BlockHandle::decode_from(&mut r).ok_or_else(|| Error::corrupt("bad index handle in footer"))?;
                    if r.pos() > 40 {
                        return Err(Error::corrupt("bad block handles in footer"));
                    }
                    Ok(Footer {
                        checksum,
                        format_version: fv,
                        metaindex,
                        index,
                        base_context_checksum: 0,
                    })
                }
            }
            PLAIN_MAGIC | LEGACY_PLAIN_MAGIC => {
                Err(Error::NotSupported("PlainTable sst files are not supported".into()))
            }
            CUCKOO_MAGIC => Err(Error::NotSupported("CuckooTable sst files are not supported".into())),
            _ => Err(Error::corrupt("not an SST file (bad magic number)")),
        }
    }

    /// Encode a footer for writing. `footer_offset` is where it will be written (fv >= 6 only).
    /// For fv >= 6 the metaindex block must end right where the footer starts.
    pub(crate) fn encode(&self, footer_offset: u64) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        if self.format_version >= 6 {
            v.push(self.checksum as u8);
            v.extend_from_slice(&EXTENDED_MAGIC);
            put_fixed32(&mut v, 0);
            put_fixed32(&mut v, self.base_context_checksum);
            put_fixed32(&mut v, self.metaindex.size as u32);
            v.resize(41, 0);
            put_fixed32(&mut v, self.format_version);
            put_fixed64(&mut v, BLOCK_BASED_MAGIC);
            let ck = block_checksum(self.checksum, &v[..FOOTER_LEN - 1], v[FOOTER_LEN - 1])
                .wrapping_add(checksum_modifier(self.base_context_checksum, footer_offset));
            v[5..9].copy_from_slice(&ck.to_le_bytes());
        } else if self.format_version == 0 {
            self.metaindex.encode_to(&mut v);
            self.index.encode_to(&mut v);
            v.resize(40, 0);
            put_fixed64(&mut v, LEGACY_BLOCK_BASED_MAGIC);
        } else {
            v.push(self.checksum as u8);
            self.metaindex.encode_to(&mut v);
            self.index.encode_to(&mut v);
            v.resize(41, 0);
            put_fixed32(&mut v, self.format_version);
            put_fixed64(&mut v, BLOCK_BASED_MAGIC);
        }
        v
    }
}

// ------------------------------------------------------------------------------------------------
// Compression

/// Human-readable name of a compression type byte.
pub(crate) fn compression_name(t: u8) -> String {
    match t {
        0 => "NoCompression".into(),
        1 => "Snappy".into(),
        2 => "Zlib".into(),
        3 => "BZip2".into(),
        4 => "LZ4".into(),
        5 => "LZ4HC".into(),
        6 => "Xpress".into(),
        7 => "ZSTD".into(),
        0x40 => "ZSTDNotFinal".into(),
        _ => format!("unknown compression type {t:#04x}"),
    }
}

/// Upper bound for a decompressed block: far larger than any real block, small enough that a
/// garbage size field cannot make us allocate unbounded memory.
const MAX_DECOMPRESSED: usize = 256 << 20;

fn bad_size(t: u8) -> Error {
    Error::corrupt(format!("{} block: bad uncompressed size", compression_name(t)))
}

/// Decompress the stored bytes of a block whose trailer type byte is `t`.
/// `format_version` selects the size-prefix convention (LZ4 before format_version 2). Never panics.
pub(crate) fn decompress_block(t: u8, data: &[u8], format_version: u32) -> Result<Vec<u8>> {
    match t {
        0 => Ok(data.to_vec()),
        1 => {
            let n = snap::raw::decompress_len(data).map_err(|e| Error::corrupt(format!("Snappy block: {e}")))?;
            if n > MAX_DECOMPRESSED || n > data.len().saturating_mul(64).saturating_add(64) {
                return Err(bad_size(t));
            }
            let mut out = vec![0u8; n];
            let got = snap::raw::Decoder::new()
                .decompress(data, &mut out)
                .map_err(|e| Error::corrupt(format!("Snappy block: {e}")))?;
            if got != n {
                return Err(bad_size(t));
            }
            Ok(out)
        }
        4 | 5 => {
            let (size, body) = if format_version >= 2 {
                let (n, used) = get_varint32(data).ok_or_else(|| bad_size(t))?;
                (n as usize, &data[used..])
            } else {
                if data.len() < 8 {
                    return Err(bad_size(t));
                }
                (u32::from_le_bytes(data[..4].try_into().unwrap()) as usize, &data[8..])
            };
            if size > MAX_DECOMPRESSED || size > body.len().saturating_mul(256).saturating_add(64) {
                return Err(bad_size(t));
            }
            let mut out = vec![0u8; size];
            let got = lz4_flex::block::decompress_into(body, &mut out)
                .map_err(|e| Error::corrupt(format!("LZ4 block: {e}")))?;
            if got != size {
                return Err(Error::corrupt(format!(
                    "LZ4 block: decompressed {got} bytes, expected {size}"
                )));
            }
            Ok(out)
        }
        7 | 0x40 => {
            let (n, used) = get_varint32(data).ok_or_else(|| bad_size(t))?;
            let size = n as usize;
            if size > MAX_DECOMPRESSED {
                return Err(bad_size(t));
            }
            let out =
                zstd::bulk::decompress(&data[used..], size).map_err(|e| Error::corrupt(format!("ZSTD block: {e}")))?;
            if out.len() != size {
                return Err(Error::corrupt(format!(
                    "ZSTD block: decompressed {} bytes, expected {size}",
                    out.len()
                )));
            }
            Ok(out)
        }
        2 | 3 => {
            // format_version >= 2: a varint32 uncompressed size, then the stream; before,
            // the stream alone (its size known only once it is inflated).
            let (size, body) = if format_version >= 2 {
                let (n, used) = get_varint32(data).ok_or_else(|| bad_size(t))?;
                (Some(n as usize), &data[used..])
            } else {
                (None, data)
            };
            if size.is_some_and(|n| n > MAX_DECOMPRESSED) {
                return Err(bad_size(t));
            }
            let limit = size.unwrap_or(MAX_DECOMPRESSED) as u64 + 1;
            let mut out = Vec::with_capacity(size.unwrap_or(body.len() * 4).min(MAX_DECOMPRESSED));
            let name = compression_name(t);
            let read = if t == 2 {
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(flate2::read::DeflateDecoder::new(body), limit),
                    &mut out,
                )
            } else {
                std::io::Read::read_to_end(
                    &mut std::io::Read::take(bzip2::read::BzDecoder::new(body), limit),
                    &mut out,
                )
            };
            read.map_err(|e| Error::corrupt(format!("{name} block: {e}")))?;
            match size {
                Some(n) if out.len() != n => Err(Error::corrupt(format!(
                    "{name} block: decompressed {} bytes, expected {n}",
                    out.len()
                ))),
                None if out.len() > MAX_DECOMPRESSED => Err(bad_size(t)),
                _ => Ok(out),
            }
        }
        6 => Err(Error::NotSupported(format!(
            "block compression type {} ({t}) is not supported (Windows only)",
            compression_name(t)
        ))),
        _ => Err(Error::corrupt(format!("block has {}", compression_name(t)))),
    }
}

/// Append to `out` `raw` as a raw deflate stream (no zlib header) with a 16 KiB window:
/// RocksDB inflates with window bits -14, which refuses a back-reference further than that.
/// False if the stream would not be smaller than `raw` (not worth keeping) or on error.
fn deflate_raw14(raw: &[u8], out: &mut Vec<u8>) -> bool {
    let mut c = flate2::Compress::new_with_window_bits(flate2::Compression::default(), false, 14);
    let start = out.len();
    out.reserve(raw.len() + 64);
    loop {
        let consumed = c.total_in() as usize;
        match c.compress_vec(&raw[consumed..], out, flate2::FlushCompress::Finish) {
            Ok(flate2::Status::StreamEnd) => return true,
            Ok(_) if out.len() - start < raw.len() => out.reserve(4096),
            _ => return false,
        }
    }
}

/// Compress `raw` with `ty` for format_version >= 2. Returns `None` when the result does not
/// save at least 12.5% (RocksDB's `GoodCompressionRatio`), in which case the block is stored
/// uncompressed (type 0).
pub(crate) fn compress_block(ty: DBCompressionType, raw: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    match ty {
        DBCompressionType::None => return false,
        DBCompressionType::Snappy => {
            out.resize(snap::raw::max_compress_len(raw.len()), 0);
            match snap::raw::Encoder::new().compress(raw, out) {
                Ok(n) => out.truncate(n),
                Err(_) => return false,
            }
        }
        DBCompressionType::Zlib | DBCompressionType::Bz2 => {
            if raw.len() > u32::MAX as usize {
                return false;
            }
            put_varint32(out, raw.len() as u32);
            let done = if ty == DBCompressionType::Zlib {
                deflate_raw14(raw, out)
            } else {
                // RocksDB compresses with bzip2's smallest block size (100 KB): blocks are small.
                let mut e = bzip2::write::BzEncoder::new(std::mem::take(out), bzip2::Compression::new(1));
                std::io::Write::write_all(&mut e, raw)
                    .and_then(|_| e.finish())
                    .map(|v| *out = v)
                    .is_ok()
            };
            if !done {
                return false;
            }
        }
        DBCompressionType::Lz4 | DBCompressionType::Lz4hc => {
            if raw.len() > u32::MAX as usize {
                return false;
            }
            put_varint32(out, raw.len() as u32);
            let start = out.len();
            out.resize(start + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
            match lz4_flex::block::compress_into(raw, &mut out[start..]) {
                Ok(n) => out.truncate(start + n),
                Err(_) => return false,
            }
        }
        DBCompressionType::Zstd => {
            if raw.len() > u32::MAX as usize {
                return false;
            }
            put_varint32(out, raw.len() as u32);
            match zstd::bulk::compress(raw, 3) {
                Ok(c) => out.extend_from_slice(&c),
                Err(_) => return false,
            }
        }
    }
    // keep only if compressed < raw - raw/8
    out.len() < raw.len() - raw.len() / 8
}

// The names of the meta blocks in the metaindex, and of the properties an `SstFileWriter`
// file carries.

/// Metaindex name of the full filter RocksDB writes for its built-in Bloom/Ribbon policies.
pub(crate) const FULL_FILTER_NAME: &str = "fullfilter.rocksdb.BuiltinBloomFilter";
/// Metaindex name of the same filter partitioned (`partition_filters`).
pub(crate) const PARTITIONED_FILTER_NAME: &str = "partitionedfilter.rocksdb.BuiltinBloomFilter";
pub(crate) const RANGE_DEL_NAME: &str = "rocksdb.range_del";
pub(crate) const INDEX_NAME: &str = "rocksdb.index";
/// `rocksdb.external_sst_file.version`: present in files written by an `SstFileWriter`.
pub(crate) const EXTERNAL_SST_VERSION: &str = "rocksdb.external_sst_file.version";
/// `rocksdb.external_sst_file.global_seqno` (fixed64; 0 when the MANIFEST holds the number).
pub(crate) const EXTERNAL_SST_GLOBAL_SEQNO: &str = "rocksdb.external_sst_file.global_seqno";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn block_checksum_vectors() {
        use ChecksumType::*;
        let empty = [0u8, 0, 0, 0, 1, 0, 0, 0];
        let c = |t, d: &[u8], b| block_checksum(t, d, b);
        assert_eq!(c(NoChecksum, &empty, 0), 0);
        assert_eq!(c(CRC32c, &empty, 0), 0xB0A1F2C0);
        assert_eq!(c(XxHash, &empty, 0), 0xB6CECF16);
        assert_eq!(c(XxHash64, &empty, 0), 0x62DB2042);
        assert_eq!(c(XXH3, &empty, 0), 0x9CF4CA5B);
        assert_eq!(c(CRC32c, &empty, 1), 0xAA9BCE17);
        assert_eq!(c(XxHash, &empty, 1), 0xA4D46D8B);
        assert_eq!(c(XxHash64, &empty, 1), 0xF50D6BA9);
        assert_eq!(c(XXH3, &empty, 1), 0xF7644982);
        let d = b"123456789";
        assert_eq!(c(CRC32c, d, 0), 0xDD227149);
        assert_eq!(c(XxHash, d, 0), 0x08FAF2DA);
        assert_eq!(c(XxHash64, d, 0), 0x1B63A378);
        assert_eq!(c(XXH3, d, 0), 0x67A17DFF);
        assert_eq!(c(CRC32c, d, 1), 0xDF1B4D7E);
        assert_eq!(c(XxHash, d, 1), 0xD63B6D01);
        assert_eq!(c(XxHash64, d, 1), 0x83801F6E);
        assert_eq!(c(XXH3, d, 1), 0x0C31FE26);
    }

    #[test]
    fn modifier_vectors() {
        assert_eq!(checksum_modifier(0x03CB6EA9, 0), 0x03CB6EA9);
        assert_eq!(checksum_modifier(0x03CB6EA9, 52), 0x03CB6E9D);
        assert_eq!(checksum_modifier(0x12345678, 1 << 32), 0x12345679);
        assert_eq!(checksum_modifier(0x12345678, (1 << 32) + 5), 0x1234567E);
        assert_eq!(checksum_modifier(1, 3 * (1u64 << 32) + 0xFFFF_FFFF), 3);
        assert_eq!(checksum_modifier(0, 12345), 0);
        // TV1 (fv6 XXH3) block trailers
        assert_eq!(0x391A4F4Eu32.wrapping_add(checksum_modifier(0x03CB6EA9, 0)), 0x3CE5BDF7);
        assert_eq!(
            0x3B0922B1u32.wrapping_add(checksum_modifier(0x03CB6EA9, 52)),
            0x3ED4914E
        );
        assert_eq!(
            0x022B9879u32.wrapping_add(checksum_modifier(0x03CB6EA9, 972)),
            0x05F705DE
        );
        // TV2: CRC32c data block of the tiny RocksDB 7.8.3 table (a=1, b=2, c=3) with context
        let data = tiny_data_block();
        assert_eq!(block_checksum(ChecksumType::CRC32c, &data, 0), 0x77441EAF);
        assert_eq!(
            trailer_checksum(ChecksumType::CRC32c, &data, 0, 0x27EF0ED9, 0),
            0x9F332D88
        );
        assert_eq!(block_checksum(ChecksumType::XXH3, &data, 0), 0x391A4F4E);
        let idx = [0u8, 1, 0x63, 0, 0x2f, 0, 0, 0, 0, 1, 0, 0, 0];
        assert_eq!(block_checksum(ChecksumType::XXH3, &idx, 0), 0x3B0922B1);
        assert_eq!(
            trailer_checksum(ChecksumType::CRC32c, &idx, 0, 0x27EF0ED9, 52),
            0xAF2AAB95
        );
    }

    pub(crate) fn tiny_data_block() -> Vec<u8> {
        let mut v = Vec::new();
        for (i, k) in [b'a', b'b', b'c'].iter().enumerate() {
            v.extend_from_slice(&[0, 9, 1, *k, 1, i as u8 + 1, 0, 0, 0, 0, 0, 0, b'1' + i as u8]);
        }
        v.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        v
    }

    fn footer_bytes(hex: &str) -> Vec<u8> {
        let s: String = hex.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn footer_v6_vectors() {
        // TV1: fv6 XXH3, file 1084 bytes
        let mut f = footer_bytes("04 3e007a00 24421ad4 a96ecb03 36000000");
        f.resize(41, 0);
        f.extend_from_slice(&[6, 0, 0, 0, 0xf7, 0xcf, 0xf4, 0x85, 0xb7, 0x41, 0xe2, 0x88]);
        let ft = Footer::decode(&f, 1084).unwrap();
        assert_eq!(ft.format_version, 6);
        assert_eq!(ft.checksum, ChecksumType::XXH3);
        assert_eq!(ft.base_context_checksum, 0x03CB6EA9);
        assert_eq!(ft.metaindex, BlockHandle::new(972, 54));
        assert_eq!(ft.encode(1031), f);
        // TV2: CRC32c
        let mut f = footer_bytes("01 3e007a00 16bf65ca d90eef27 36000000");
        f.resize(41, 0);
        f.extend_from_slice(&[6, 0, 0, 0, 0xf7, 0xcf, 0xf4, 0x85, 0xb7, 0x41, 0xe2, 0x88]);
        let ft = Footer::decode(&f, 1091).unwrap();
        assert_eq!(ft.encode(1038), f);
        // flipping any byte of a checksummed v6 footer is detected
        for i in 0..FOOTER_LEN {
            let mut g = f.clone();
            g[i] ^= 0x01;
            assert!(Footer::decode(&g, 1091).is_err(), "byte {i}");
        }
        // TV3: no checksum stores the modifier
        let mut f = footer_bytes("00 3e007a00 04d9b73f 0addb73f 36000000");
        f.resize(41, 0);
        f.extend_from_slice(&[6, 0, 0, 0, 0xf7, 0xcf, 0xf4, 0x85, 0xb7, 0x41, 0xe2, 0x88]);
        let ft = Footer::decode(&f, 1091).unwrap();
        assert_eq!(ft.checksum, ChecksumType::NoChecksum);
        assert_eq!(ft.encode(1038), f);
    }

    #[test]
    fn footer_v5_and_legacy() {
        // footer of the tiny RocksDB 7.8.3 table (a=1, b=2, c=3)
        let mut f = vec![1, 0x87, 0x08, 0x4f, 0x7e, 0x0d];
        f.resize(41, 0);
        f.extend_from_slice(&[5, 0, 0, 0, 0xf7, 0xcf, 0xf4, 0x85, 0xb7, 0x41, 0xe2, 0x88]);
        let ft = Footer::decode(&f, 1168).unwrap();
        assert_eq!(ft.metaindex, BlockHandle::new(1031, 79));
        assert_eq!(ft.index, BlockHandle::new(126, 13));
        assert_eq!(ft.encode(0), f);
        let legacy = Footer {
            format_version: 0,
            ..ft.clone()
        };
        let e = legacy.encode(0);
        assert_eq!(e.len(), LEGACY_FOOTER_LEN);
        let d = Footer::decode(&e, 1000).unwrap();
        assert_eq!((d.format_version, d.metaindex, d.index), (0, ft.metaindex, ft.index));
        // bad magic, bad version, bad checksum type
        let mut g = f.clone();
        g[52] ^= 1;
        assert!(Footer::decode(&g, 1168).unwrap_err().to_string().contains("bad magic"));
        let mut g = f.clone();
        g[41] = 8;
        assert!(Footer::decode(&g, 1168).is_err());
        let mut g = f.clone();
        g[0] = 9;
        assert!(Footer::decode(&g, 1168)
            .unwrap_err()
            .to_string()
            .contains("checksum type"));
        assert!(Footer::decode(&f[..7], 7).is_err());
    }

    #[test]
    fn compression_roundtrip_and_garbage() {
        let raw: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8 + b'a').collect();
        for ty in [
            DBCompressionType::Snappy,
            DBCompressionType::Zlib,
            DBCompressionType::Bz2,
            DBCompressionType::Lz4,
            DBCompressionType::Lz4hc,
            DBCompressionType::Zstd,
        ] {
            let mut out = Vec::new();
            assert!(compress_block(ty, &raw, &mut out), "{ty:?}");
            let t = ty as u8;
            assert_eq!(decompress_block(t, &out, 5).unwrap(), raw);
            // truncations and flips never panic
            for cut in 0..out.len().min(64) {
                let _ = decompress_block(t, &out[..cut], 5);
            }
            for i in 0..out.len().min(64) {
                let mut g = out.clone();
                g[i] ^= 0x5a;
                if let Ok(v) = decompress_block(t, &g, 5) {
                    let _ = v;
                }
            }
        }
        // incompressible data is rejected by the 12.5% rule
        let noise: Vec<u8> = (0..4096u64)
            .map(|i| (crate::hash::murmur64a(&i.to_le_bytes(), 1) >> 7) as u8)
            .collect();
        let mut out = Vec::new();
        assert!(!compress_block(DBCompressionType::Snappy, &noise, &mut out));
        // fv 0/1 LZ4: 8-byte size prefix
        let c = lz4_flex::block::compress(&raw);
        let mut v = (raw.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(&c);
        assert_eq!(decompress_block(4, &v, 1).unwrap(), raw);
        // Zlib and BZip2 garbage is Corruption naming the codec; Xpress is not supported.
        let e = decompress_block(2, &v, 2).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("Zlib"), "{e}");
        let e = decompress_block(3, &v, 2).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("BZip2"), "{e}");
        assert!(decompress_block(6, &v, 2).unwrap_err().is_not_supported());
        // format_version 0/1: Zlib and BZip2 streams without a size prefix.
        for (t, ty) in [(2u8, DBCompressionType::Zlib), (3, DBCompressionType::Bz2)] {
            let mut out = Vec::new();
            assert!(compress_block(ty, &raw, &mut out));
            let (_, used) = get_varint32(&out).unwrap();
            assert_eq!(decompress_block(t, &out[used..], 1).unwrap(), raw);
            // A size prefix that disagrees with the stream is Corruption.
            let mut lying = Vec::new();
            put_varint32(&mut lying, raw.len() as u32 + 1);
            lying.extend_from_slice(&out[used..]);
            assert!(decompress_block(t, &lying, 2).unwrap_err().is_corruption());
        }
        assert!(decompress_block(0x99, &v, 2).unwrap_err().is_corruption());
        assert!(decompress_block(7, &[0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2], 2).is_err());
    }
}
