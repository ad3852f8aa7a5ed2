//! The value of a `kTypeBlobIndex` entry: where a blob lives (file number, offset of the value
//! inside the blob file, stored size, compression), or, for the TTL variants of the old stacked
//! BlobDB, an expiration and an inlined value.

use crate::coding::{put_varint64, Reader};
use crate::error::{Error, Result};

const INLINED_TTL: u8 = 0;
const BLOB: u8 = 1;
const BLOB_TTL: u8 = 2;

/// A decoded blob index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BlobIndex {
    /// A reference into a blob file (`expiration` is `Some` for the TTL variant).
    Blob {
        file_number: u64,
        /// Offset of the value (not of the record) in the blob file.
        offset: u64,
        /// Size of the stored (possibly compressed) value.
        size: u64,
        compression: u8,
        expiration: Option<u64>,
    },
    /// A small value kept in the table with an expiration (stacked BlobDB's TTL feature).
    InlinedTtl { expiration: u64, value: Vec<u8> },
}

impl BlobIndex {
    /// The encoding of a plain (no TTL) reference.
    pub(crate) fn encode_blob(file_number: u64, offset: u64, size: u64, compression: u8) -> Vec<u8> {
        BlobIndex::Blob {
            file_number,
            offset,
            size,
            compression,
            expiration: None,
        }
        .encode()
    }

    /// Encode any variant.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(32);
        match self {
            BlobIndex::InlinedTtl { expiration, value } => {
                v.push(INLINED_TTL);
                put_varint64(&mut v, *expiration);
                v.extend_from_slice(value);
            }
            BlobIndex::Blob {
                file_number,
                offset,
                size,
                compression,
                expiration,
            } => {
                match expiration {
                    None => v.push(BLOB),
                    Some(e) => {
                        v.push(BLOB_TTL);
                        put_varint64(&mut v, *e);
                    }
                }
                for x in [file_number, offset, size] {
                    put_varint64(&mut v, *x);
                }
                v.push(*compression);
            }
        }
        v
    }

    /// Decode a blob index value; Corruption (without a file name) if it is malformed.
    pub(crate) fn decode(b: &[u8]) -> Result<BlobIndex> {
        let bad = |what: &str| Error::corrupt(format!("blob index: {what}"));
        let mut r = Reader::new(b);
        let ty = r.u8().ok_or_else(|| bad("empty"))?;
        if ty > BLOB_TTL {
            return Err(bad(&format!("unknown type {ty}")));
        }
        let expiration = if ty == BLOB {
            None
        } else {
            Some(r.varint64().ok_or_else(|| bad("bad expiration"))?)
        };
        if ty == INLINED_TTL {
            return Ok(BlobIndex::InlinedTtl {
                expiration: expiration.unwrap_or(0),
                value: r.remaining().to_vec(),
            });
        }
        let file_number = r.varint64().ok_or_else(|| bad("bad file number"))?;
        let offset = r.varint64().ok_or_else(|| bad("bad offset"))?;
        let size = r.varint64().ok_or_else(|| bad("bad size"))?;
        let rest = r.remaining();
        if rest.len() != 1 {
            return Err(bad("bad compression field"));
        }
        Ok(BlobIndex::Blob {
            file_number,
            offset,
            size,
            compression: rest[0],
            expiration,
        })
    }

    /// The blob file a reference points into (None for an inlined value).
    pub(crate) fn file_number(&self) -> Option<u64> {
        match self {
            BlobIndex::Blob { file_number, .. } => Some(*file_number),
            BlobIndex::InlinedTtl { .. } => None,
        }
    }

    /// RocksDB's text form, as `sst_dump --command=scan` and `ldb` print a blob index.
    pub(crate) fn debug_string(&self) -> String {
        match self {
            BlobIndex::InlinedTtl { expiration, value } => format!(
                "[inlined blob] value:{} exp:{expiration}",
                String::from_utf8_lossy(value)
            ),
            BlobIndex::Blob {
                file_number,
                offset,
                size,
                compression,
                expiration,
            } => {
                let mut s = format!(
                    "[blob ref] file:{file_number} offset:{offset} size:{size} compression: {}",
                    crate::table::block_based::format::compression_name(*compression)
                );
                if let Some(e) = expiration {
                    s.push_str(&format!(" exp:{e}"));
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_round_trip_and_garbage_is_corruption() {
        let b = BlobIndex::encode_blob(12, 300, 4096, 7);
        assert_eq!(b, [1, 12, 0xac, 0x02, 0x80, 0x20, 7]);
        let d = BlobIndex::decode(&b).unwrap();
        assert_eq!(d.file_number(), Some(12));
        assert_eq!(
            d.debug_string(),
            "[blob ref] file:12 offset:300 size:4096 compression: ZSTD"
        );
        let ttl = BlobIndex::Blob {
            file_number: 5,
            offset: 62,
            size: 10,
            compression: 0,
            expiration: Some(99),
        };
        assert_eq!(BlobIndex::decode(&ttl.encode()).unwrap(), ttl);
        let inl = BlobIndex::InlinedTtl {
            expiration: 7,
            value: b"abc".to_vec(),
        };
        assert_eq!(BlobIndex::decode(&inl.encode()).unwrap(), inl);
        for bad in [&b""[..], &[3u8], &[1, 0x80], &[1, 1, 1, 1], &[1, 1, 1, 1, 0, 0]] {
            let e = BlobIndex::decode(bad).unwrap_err();
            assert!(e.is_corruption(), "{bad:?}: {e}");
        }
    }
}
