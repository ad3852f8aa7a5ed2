//! The blob log format: a 30-byte header, records (a 32-byte header, the user key, the value,
//! possibly compressed) and a 32-byte footer written when the file is closed. All integers
//! little-endian fixed width; the CRCs are masked CRC32C.

use crate::coding::{decode_fixed32, decode_fixed64, put_fixed32, put_fixed64};
use crate::error::{Error, Result};
use crate::hash::{crc32c, crc32c_extend, crc32c_mask};
use crate::table::format::DBCompressionType;

/// The magic number at the start of the header and of the footer.
pub(crate) const BLOB_MAGIC: u32 = 0x0024_8f37;
/// The only blob log version.
pub(crate) const BLOB_VERSION: u32 = 1;
/// Size of the file header.
pub(crate) const HEADER_SIZE: u64 = 30;
/// Size of the file footer.
pub(crate) const FOOTER_SIZE: u64 = 32;
/// Size of a record's header (before its key and value).
pub(crate) const RECORD_HEADER_SIZE: u64 = 32;

/// The blob file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlobHeader {
    pub column_family_id: u32,
    /// The compression type byte every blob of the file is stored with.
    pub compression: u8,
    pub has_ttl: bool,
    pub expiration_range: (u64, u64),
}

impl BlobHeader {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HEADER_SIZE as usize);
        put_fixed32(&mut v, BLOB_MAGIC);
        put_fixed32(&mut v, BLOB_VERSION);
        put_fixed32(&mut v, self.column_family_id);
        v.push(u8::from(self.has_ttl));
        v.push(self.compression);
        put_fixed64(&mut v, self.expiration_range.0);
        put_fixed64(&mut v, self.expiration_range.1);
        v
    }

    /// Decode the first 30 bytes of a blob file; Corruption (without the file name) otherwise.
    pub(crate) fn decode(b: &[u8]) -> Result<BlobHeader> {
        if b.len() < HEADER_SIZE as usize {
            return Err(Error::corrupt(format!(
                "blob file header: {} bytes, expected {HEADER_SIZE}",
                b.len()
            )));
        }
        let magic = decode_fixed32(b).unwrap_or(0);
        if magic != BLOB_MAGIC {
            return Err(Error::corrupt(format!("blob file header: bad magic number {magic:#x}")));
        }
        let version = decode_fixed32(&b[4..]).unwrap_or(0);
        if version != BLOB_VERSION {
            return Err(Error::corrupt(format!("blob file header: unknown version {version}")));
        }
        Ok(BlobHeader {
            column_family_id: decode_fixed32(&b[8..]).unwrap_or(0),
            has_ttl: b[12] & 1 == 1,
            compression: b[13],
            expiration_range: (
                decode_fixed64(&b[14..]).unwrap_or(0),
                decode_fixed64(&b[22..]).unwrap_or(0),
            ),
        })
    }
}

/// The blob file footer (present once the file was closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct BlobFooter {
    pub blob_count: u64,
    pub expiration_range: (u64, u64),
}

impl BlobFooter {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_SIZE as usize);
        put_fixed32(&mut v, BLOB_MAGIC);
        put_fixed64(&mut v, self.blob_count);
        put_fixed64(&mut v, self.expiration_range.0);
        put_fixed64(&mut v, self.expiration_range.1);
        let crc = crc32c_mask(crc32c(&v));
        put_fixed32(&mut v, crc);
        v
    }

    /// Decode the last 32 bytes of a blob file.
    pub(crate) fn decode(b: &[u8]) -> Result<BlobFooter> {
        if b.len() != FOOTER_SIZE as usize {
            return Err(Error::corrupt(format!(
                "blob file footer: {} bytes, expected {FOOTER_SIZE}",
                b.len()
            )));
        }
        let magic = decode_fixed32(b).unwrap_or(0);
        if magic != BLOB_MAGIC {
            return Err(Error::corrupt(format!("blob file footer: bad magic number {magic:#x}")));
        }
        let want = crc32c_mask(crc32c(&b[..28]));
        if decode_fixed32(&b[28..]) != Some(want) {
            return Err(Error::corrupt("blob file footer: CRC mismatch"));
        }
        Ok(BlobFooter {
            blob_count: decode_fixed64(&b[4..]).unwrap_or(0),
            expiration_range: (
                decode_fixed64(&b[12..]).unwrap_or(0),
                decode_fixed64(&b[20..]).unwrap_or(0),
            ),
        })
    }
}

/// A record's header: key and value sizes, expiration, and the two CRCs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub key_len: u64,
    pub value_len: u64,
    pub expiration: u64,
    pub blob_crc: u32,
}

/// The 32-byte header of a record holding `key` and the stored (possibly compressed) `value`.
pub(crate) fn encode_record_header(key: &[u8], value: &[u8], expiration: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(RECORD_HEADER_SIZE as usize);
    put_fixed64(&mut v, key.len() as u64);
    put_fixed64(&mut v, value.len() as u64);
    put_fixed64(&mut v, expiration);
    let hcrc = crc32c_mask(crc32c(&v));
    put_fixed32(&mut v, hcrc);
    put_fixed32(&mut v, blob_crc(key, value));
    v
}

/// The masked CRC32C of a record's key followed by its value.
pub(crate) fn blob_crc(key: &[u8], value: &[u8]) -> u32 {
    crc32c_mask(crc32c_extend(crc32c(key), value))
}

/// Decode a record header (its header CRC checked).
pub(crate) fn decode_record_header(b: &[u8]) -> Result<RecordHeader> {
    if b.len() != RECORD_HEADER_SIZE as usize {
        return Err(Error::corrupt("blob record header: truncated"));
    }
    let want = crc32c_mask(crc32c(&b[..24]));
    if decode_fixed32(&b[24..]) != Some(want) {
        return Err(Error::corrupt("blob record header: header CRC mismatch"));
    }
    Ok(RecordHeader {
        key_len: decode_fixed64(b).unwrap_or(0),
        value_len: decode_fixed64(&b[8..]).unwrap_or(0),
        expiration: decode_fixed64(&b[16..]).unwrap_or(0),
        blob_crc: decode_fixed32(&b[28..]).unwrap_or(0),
    })
}

/// Compress a blob as RocksDB's blob files store it (compression format version 2: LZ4 and
/// ZSTD prefixed by the varint32 raw size, Snappy as is). Unlike table blocks the result is
/// kept whatever its size: the blob index records the file's compression type.
pub(crate) fn compress_blob(ty: DBCompressionType, raw: &[u8]) -> Result<Vec<u8>> {
    if ty == DBCompressionType::None {
        return Ok(raw.to_vec());
    }
    let mut out = Vec::new();
    crate::table::block_based::format::compress_block(ty, raw, &mut out);
    // `compress_block` leaves `out` empty (or partial) only when the codec failed.
    if out.is_empty() && !raw.is_empty() {
        return Err(Error::corrupt(format!(
            "could not compress a blob with {}",
            ty.rocksdb_name()
        )));
    }
    Ok(out)
}

/// Uncompress a stored blob whose compression type byte is `t`.
pub(crate) fn uncompress_blob(t: u8, stored: &[u8]) -> Result<Vec<u8>> {
    crate::table::block_based::format::decompress_block(t, stored, 2)
}

/// A compression type byte as a `DBCompressionType`, if Shale has that codec.
pub(crate) fn compression_from_byte(t: u8) -> Option<DBCompressionType> {
    Some(match t {
        0 => DBCompressionType::None,
        1 => DBCompressionType::Snappy,
        4 => DBCompressionType::Lz4,
        7 => DBCompressionType::Zstd,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_footer_record_round_trip() {
        let h = BlobHeader {
            column_family_id: 7,
            compression: 4,
            has_ttl: true,
            expiration_range: (3, 9),
        };
        let e = h.encode();
        assert_eq!(e.len(), HEADER_SIZE as usize);
        assert_eq!(&e[..4], &[0x37, 0x8f, 0x24, 0x00]);
        assert_eq!(BlobHeader::decode(&e).unwrap(), h);
        let mut bad = e.clone();
        bad[0] ^= 1;
        assert!(BlobHeader::decode(&bad).unwrap_err().to_string().contains("magic"));
        assert!(BlobHeader::decode(&e[..10]).is_err());

        let f = BlobFooter {
            blob_count: 12,
            expiration_range: (0, 0),
        };
        let e = f.encode();
        assert_eq!(e.len(), FOOTER_SIZE as usize);
        assert_eq!(BlobFooter::decode(&e).unwrap(), f);
        for i in 0..e.len() {
            let mut bad = e.clone();
            bad[i] ^= 0x10;
            assert!(BlobFooter::decode(&bad).is_err(), "flip at {i}");
        }

        let rh = encode_record_header(b"key", b"value", 0);
        let d = decode_record_header(&rh).unwrap();
        assert_eq!((d.key_len, d.value_len, d.expiration), (3, 5, 0));
        assert_eq!(d.blob_crc, blob_crc(b"key", b"value"));
        let mut bad = rh.clone();
        bad[3] ^= 1;
        assert!(decode_record_header(&bad).unwrap_err().to_string().contains("CRC"));
    }

    #[test]
    fn compression_round_trips_and_keeps_incompressible_blobs() {
        let raw: Vec<u8> = (0..4000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for ty in [
            DBCompressionType::None,
            DBCompressionType::Snappy,
            DBCompressionType::Lz4,
            DBCompressionType::Zstd,
        ] {
            let c = compress_blob(ty, &raw).unwrap();
            assert_eq!(uncompress_blob(ty as u8, &c).unwrap(), raw, "{ty:?}");
        }
        assert!(uncompress_blob(4, b"\xff\xff\xff").is_err());
    }
}
