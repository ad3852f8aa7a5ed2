//! PlainTable record coding: how keys are laid out (`Plain` or `Prefix` encoding) and how a
//! record is decoded back into an internal key and a value range.
//!
//! Record = key part, then `value_len varint32 | value`. The key part ends either with the
//! 8-byte internal-key trailer or with the single byte 0xFF, which stands for sequence 0 and
//! type Value (a trailer's first byte is the type, never 0xFF).
//!
//! * `Plain`: `[user_key_len varint32, only for variable-length tables] user_key`.
//! * `Prefix`: one or two "size bytes", each `kind << 6 | min(size, 63)` followed by
//!   `varint32(size - 63)` when the low bits are all ones. Kinds: 0 full key (followed by the
//!   user key), 1 "prefix of the previous key" (size = prefix length; a suffix entry follows),
//!   2 suffix (followed by the key bytes after the prefix).

use std::sync::Arc;

use crate::coding::{get_varint32, put_varint32};
use crate::error::{Error, Result};
use crate::key::{pack_trailer, parse_internal_key, vt};
use crate::slice_transform::PrefixExtractor;

use super::format::KeyEncodingType;

/// The byte that replaces the trailer of a (seq 0, Value) key.
pub(crate) const SEQ0_VALUE_MARK: u8 = 0xFF;

const KIND_FULL: u8 = 0;
const KIND_PREFIX: u8 = 1;
const KIND_SUFFIX: u8 = 2;
const INLINE_LIMIT: u32 = 0x3F;

fn put_size(out: &mut Vec<u8>, kind: u8, size: u32) {
    if size < INLINE_LIMIT {
        out.push(kind << 6 | size as u8);
    } else {
        out.push(kind << 6 | INLINE_LIMIT as u8);
        put_varint32(out, size - INLINE_LIMIT);
    }
}

/// Writes the key part of records.
pub(crate) struct KeyEncoder {
    encoding: KeyEncodingType,
    fixed_len: u32,
    sparseness: usize,
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    prev_prefix: Vec<u8>,
    keys_in_prefix: usize,
}

impl KeyEncoder {
    pub(crate) fn new(
        encoding: KeyEncodingType,
        fixed_len: u32,
        sparseness: usize,
        prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    ) -> KeyEncoder {
        KeyEncoder {
            encoding,
            fixed_len,
            sparseness: sparseness.max(1),
            prefix_extractor,
            prev_prefix: Vec::new(),
            keys_in_prefix: 0,
        }
    }

    /// Append the key part for internal key `ikey` (already validated by the caller).
    pub(crate) fn append_key(&mut self, ikey: &[u8], out: &mut Vec<u8>) {
        let uk_len = ikey.len() - 8;
        let user_key = &ikey[..uk_len];
        let mut written = ikey;
        match self.encoding {
            KeyEncodingType::Plain => {
                if self.fixed_len == 0 {
                    put_varint32(out, uk_len as u32);
                }
            }
            KeyEncodingType::Prefix => {
                // Keys share only a leading prefix; an extractor giving anything else (see
                // `PrefixExtractor`) makes each key its own prefix here.
                let prefix = match &self.prefix_extractor {
                    Some(p) => Some(p.transform(user_key))
                        .filter(|x| user_key.starts_with(x))
                        .unwrap_or(user_key),
                    None => user_key,
                };
                if self.keys_in_prefix == 0
                    || prefix != self.prev_prefix.as_slice()
                    || self.keys_in_prefix.is_multiple_of(self.sparseness)
                {
                    self.keys_in_prefix = 1;
                    self.prev_prefix.clear();
                    self.prev_prefix.extend_from_slice(prefix);
                    put_size(out, KIND_FULL, uk_len as u32);
                } else {
                    self.keys_in_prefix += 1;
                    let plen = self.prev_prefix.len();
                    if self.keys_in_prefix == 2 {
                        put_size(out, KIND_PREFIX, plen as u32);
                    }
                    put_size(out, KIND_SUFFIX, (uk_len - plen) as u32);
                    written = &ikey[plen..];
                }
            }
        }
        let t = u64::from_le_bytes(ikey[uk_len..].try_into().expect("8-byte trailer"));
        if t == pack_trailer(0, vt::VALUE) {
            out.extend_from_slice(&written[..written.len() - 8]);
            out.push(SEQ0_VALUE_MARK);
        } else {
            out.extend_from_slice(written);
        }
    }
}

/// Where a decoded record's value is and where the next record starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub value_off: usize,
    pub value_len: usize,
    pub next: usize,
    /// Decodable without the previous record (a full key): a valid place to start reading.
    pub seekable: bool,
}

/// Reads records; keeps the current internal key (prefix-encoded keys borrow their prefix from
/// the previous one).
pub(crate) struct KeyDecoder {
    encoding: KeyEncodingType,
    fixed_len: u32,
    key: Vec<u8>,
    has_key: bool,
    prefix_len: Option<usize>,
}

fn corrupt(off: usize, msg: impl Into<String>) -> Error {
    Error::corruption("", Some(off as u64), msg)
}

impl KeyDecoder {
    pub(crate) fn new(encoding: KeyEncodingType, fixed_len: u32) -> KeyDecoder {
        KeyDecoder {
            encoding,
            fixed_len,
            key: Vec::new(),
            has_key: false,
            prefix_len: None,
        }
    }

    /// The internal key of the last record decoded.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// Forget the previous key (before decoding from an unrelated position).
    pub(crate) fn reset(&mut self) {
        self.has_key = false;
        self.prefix_len = None;
        self.key.clear();
    }

    /// Decode the record at `off` in `data` (the record area: `data.len()` = data size).
    pub(crate) fn decode(&mut self, data: &[u8], off: usize) -> Result<Record> {
        let mut pos = off;
        let mut seekable = true;
        match self.encoding {
            KeyEncodingType::Plain => {
                let size = if self.fixed_len != 0 {
                    self.fixed_len as usize
                } else {
                    let (v, n) = get_varint32(data.get(pos..).unwrap_or(&[]))
                        .ok_or_else(|| corrupt(pos, "bad key length in plain table record"))?;
                    pos += n;
                    v as usize
                };
                self.key.clear();
                pos = self.read_key_rest(data, pos, size)?;
            }
            KeyEncodingType::Prefix => loop {
                let (kind, size, n) = read_size(data, pos)?;
                pos += n;
                match kind {
                    KIND_FULL => {
                        self.key.clear();
                        self.prefix_len = None;
                        pos = self.read_key_rest(data, pos, size)?;
                        break;
                    }
                    KIND_PREFIX => {
                        seekable = false;
                        self.prefix_len = Some(size);
                    }
                    KIND_SUFFIX => {
                        seekable = false;
                        let plen = match self.prefix_len {
                            Some(p) if self.has_key && p <= self.key.len().saturating_sub(8) => p,
                            _ => {
                                return Err(corrupt(
                                    pos - n,
                                    "key suffix without a matching previous key in plain table",
                                ))
                            }
                        };
                        self.key.truncate(plen);
                        pos = self.read_key_rest(data, pos, size)?;
                        break;
                    }
                    k => return Err(corrupt(pos - n, format!("unknown plain table key kind {k}"))),
                }
            },
        }
        value_part(data, pos, seekable)
    }

    /// Append `size` key bytes at `pos` and the trailer (or the seq-0 mark) to the current key.
    fn read_key_rest(&mut self, data: &[u8], pos: usize, size: usize) -> Result<usize> {
        let mark = pos
            .checked_add(size)
            .filter(|&m| m < data.len())
            .ok_or_else(|| corrupt(pos, format!("key of {size} bytes runs past the data")))?;
        self.key.extend_from_slice(&data[pos..mark]);
        self.has_key = true;
        if data[mark] == SEQ0_VALUE_MARK {
            self.key.extend_from_slice(&pack_trailer(0, vt::VALUE).to_le_bytes());
            return Ok(mark + 1);
        }
        let trailer = data
            .get(mark..mark + 8)
            .ok_or_else(|| corrupt(mark, "internal key trailer runs past the data"))?;
        self.key.extend_from_slice(trailer);
        if let Err(e) = parse_internal_key(&self.key) {
            self.has_key = false;
            return Err(e.in_file("", Some(mark as u64)));
        }
        Ok(mark + 8)
    }
}

/// Decode the value part of a record (`value_len varint32 | value`) at `pos`.
#[inline]
fn value_part(data: &[u8], pos: usize, seekable: bool) -> Result<Record> {
    let (vlen, n) = get_varint32(data.get(pos..).unwrap_or(&[]))
        .ok_or_else(|| corrupt(pos, "bad value length in plain table record"))?;
    let value_off = pos + n;
    let end = value_off
        .checked_add(vlen as usize)
        .filter(|&e| e <= data.len())
        .ok_or_else(|| corrupt(pos, format!("value of {vlen} bytes runs past the data")))?;
    Ok(Record {
        value_off,
        value_len: vlen as usize,
        next: end,
        seekable,
    })
}

/// A record of a `Plain`-encoded table read in place: the user key is borrowed from the data
/// (not copied), the trailer decoded (the seq-0 mark expanded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlainView<'a> {
    pub user_key: &'a [u8],
    pub trailer: u64,
    pub rec: Record,
}

/// Read the `Plain`-encoded record at `off` in place, with the checks [`KeyDecoder::decode`]
/// makes (`fixed_len` 0: a varint length precedes each key).
#[inline]
pub(crate) fn view_plain(data: &[u8], off: usize, fixed_len: u32) -> Result<PlainView<'_>> {
    let mut pos = off;
    let size = if fixed_len != 0 {
        fixed_len as usize
    } else {
        let (v, n) = get_varint32(data.get(pos..).unwrap_or(&[]))
            .ok_or_else(|| corrupt(pos, "bad key length in plain table record"))?;
        pos += n;
        v as usize
    };
    let mark = pos
        .checked_add(size)
        .filter(|&m| m < data.len())
        .ok_or_else(|| corrupt(pos, format!("key of {size} bytes runs past the data")))?;
    let user_key = &data[pos..mark];
    let (trailer, after) = if data[mark] == SEQ0_VALUE_MARK {
        (pack_trailer(0, vt::VALUE), mark + 1)
    } else {
        let t = data
            .get(mark..mark + 8)
            .ok_or_else(|| corrupt(mark, "internal key trailer runs past the data"))?;
        let t = u64::from_le_bytes(t.try_into().unwrap_or_default());
        let vtype = (t & 0xff) as u8;
        if !vt::is_valid(vtype) {
            return Err(corrupt(mark, format!("bad value type {vtype:#x} in internal key")));
        }
        (t, mark + 8)
    };
    Ok(PlainView {
        user_key,
        trailer,
        rec: value_part(data, after, true)?,
    })
}

/// Read a `Prefix`-encoding size: (kind, size, bytes used).
fn read_size(data: &[u8], pos: usize) -> Result<(u8, usize, usize)> {
    let b = *data
        .get(pos)
        .ok_or_else(|| corrupt(pos, "unexpected end of data reading a key size"))?;
    let kind = b >> 6;
    let inline = (b & INLINE_LIMIT as u8) as u32;
    if inline < INLINE_LIMIT {
        return Ok((kind, inline as usize, 1));
    }
    let (extra, n) = get_varint32(data.get(pos + 1..).unwrap_or(&[]))
        .ok_or_else(|| corrupt(pos, "bad key size in plain table record"))?;
    let size = INLINE_LIMIT
        .checked_add(extra)
        .ok_or_else(|| corrupt(pos, "key size overflows"))?;
    Ok((kind, size as usize, n + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;
    use crate::slice_transform::FixedPrefixTransform;

    #[test]
    fn size_bytes_inline_and_overflow() {
        let mut v = Vec::new();
        put_size(&mut v, KIND_SUFFIX, 5);
        assert_eq!(v, [0x85]);
        v.clear();
        put_size(&mut v, KIND_FULL, 63);
        assert_eq!(v, [0x3F, 0x00]);
        v.clear();
        put_size(&mut v, KIND_PREFIX, 200);
        assert_eq!(v, [0x7F, 137, 1]);
        assert_eq!(read_size(&v, 0).unwrap(), (KIND_PREFIX, 200, 3));
    }

    #[test]
    fn plain_records_match_the_documented_bytes() {
        // fixed 3-byte keys: seq 0 Value uses the 0xFF mark, others the full trailer
        let mut e = KeyEncoder::new(KeyEncodingType::Plain, 3, 16, None);
        let mut out = Vec::new();
        e.append_key(&make_internal_key(b"abc", 0, vt::VALUE), &mut out);
        assert_eq!(out, b"abc\xff");
        out.clear();
        e.append_key(&make_internal_key(b"abd", 5, vt::DELETION), &mut out);
        assert_eq!(out, b"abd\x00\x05\x00\x00\x00\x00\x00\x00");
        // variable length: a varint length first
        let mut e = KeyEncoder::new(KeyEncodingType::Plain, 0, 16, None);
        out.clear();
        e.append_key(&make_internal_key(b"xy", 0, vt::VALUE), &mut out);
        assert_eq!(out, b"\x02xy\xff");
    }

    #[test]
    fn prefix_encoding_round_trips_with_full_keys_every_sparseness() {
        let pe: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefixTransform::new(2));
        let mut e = KeyEncoder::new(KeyEncodingType::Prefix, 0, 3, Some(pe));
        let keys: Vec<Vec<u8>> = ["aa1", "aa2", "aa3", "aa4", "aa5", "bb", "bb7"]
            .iter()
            .enumerate()
            .map(|(i, k)| make_internal_key(k.as_bytes(), i as u64 % 2, vt::VALUE))
            .collect();
        let mut data = Vec::new();
        for k in &keys {
            e.append_key(k, &mut data);
            put_varint32(&mut data, 1);
            data.push(b'v');
        }
        // first record: full key of 3 bytes, seq 0 value mark
        assert_eq!(&data[..5], b"\x03aa1\xff");
        // second: prefix(2) + suffix(1) + "2" + 8-byte trailer (seq 1)
        assert_eq!(&data[7..9], b"\x42\x81");
        let mut d = KeyDecoder::new(KeyEncodingType::Prefix, 0);
        let mut off = 0;
        let mut seekable = Vec::new();
        for k in &keys {
            let r = d.decode(&data, off).unwrap();
            assert_eq!(d.key(), &k[..]);
            assert_eq!(&data[r.value_off..r.value_off + r.value_len], b"v");
            seekable.push(r.seekable);
            off = r.next;
        }
        assert_eq!(off, data.len());
        // full keys: first of each prefix and every 3rd key of a prefix
        assert_eq!(seekable, [true, false, false, true, false, true, false]);
    }

    #[test]
    fn in_place_view_matches_the_decoder() {
        for fixed in [0u32, 3] {
            let mut e = KeyEncoder::new(KeyEncodingType::Plain, fixed, 16, None);
            let keys = [
                make_internal_key(b"abc", 0, vt::VALUE),
                make_internal_key(b"abd", 7, vt::DELETION),
                make_internal_key(b"abe", 9, vt::MERGE),
            ];
            let mut data = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                e.append_key(k, &mut data);
                put_varint32(&mut data, i as u32);
                data.extend(std::iter::repeat_n(b'v', i));
            }
            let mut d = KeyDecoder::new(KeyEncodingType::Plain, fixed);
            let mut off = 0;
            for k in &keys {
                let r = d.decode(&data, off).unwrap();
                let v = view_plain(&data, off, fixed).unwrap();
                assert_eq!(v.user_key, &k[..3]);
                assert_eq!(v.trailer.to_le_bytes(), k[3..]);
                assert_eq!(
                    (v.rec.value_off, v.rec.value_len, v.rec.next),
                    (r.value_off, r.value_len, r.next)
                );
                off = r.next;
            }
            // Truncated anywhere, or with a bad type byte: Corruption from both, never a panic.
            for cut in 0..data.len() {
                let short = &data[..cut];
                assert_eq!(
                    view_plain(short, 0, fixed).is_err(),
                    KeyDecoder::new(KeyEncodingType::Plain, fixed).decode(short, 0).is_err(),
                    "cut at {cut}"
                );
            }
            let second = d.decode(&data, 0).unwrap().next;
            let type_at = second + if fixed == 0 { 1 } else { 0 } + 3;
            let mut bad = data.clone();
            bad[type_at] = 0x7e;
            assert!(view_plain(&bad, second, fixed).unwrap_err().is_corruption());
            assert!(d.decode(&bad, second).unwrap_err().is_corruption());
        }
    }

    #[test]
    fn suffix_without_previous_key_is_corruption() {
        let data = [0x81u8, b'x', 0xff, 0x00];
        let mut d = KeyDecoder::new(KeyEncodingType::Prefix, 0);
        assert!(d.decode(&data, 0).unwrap_err().is_corruption());
    }
}
