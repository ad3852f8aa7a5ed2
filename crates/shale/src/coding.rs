//! Little-endian fixed-width and LEB128 varint coding, as RocksDB uses them.
//! Decoders never panic: they return `None` on short or overlong input.

#[inline]
pub(crate) fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, v as u64)
}
#[inline]
pub(crate) fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}
/// varint32 length prefix followed by the bytes.
#[inline]
pub(crate) fn put_lpslice(dst: &mut Vec<u8>, s: &[u8]) {
    put_varint32(dst, s.len() as u32);
    dst.extend_from_slice(s);
}
/// zigzag + varint64.
pub(crate) fn put_varsigned64(dst: &mut Vec<u8>, v: i64) {
    put_varint64(dst, ((v << 1) ^ (v >> 63)) as u64)
}
pub(crate) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

#[inline]
pub(crate) fn decode_fixed32(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}
#[inline]
pub(crate) fn decode_fixed64(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
}

/// Decode a varint64 of at most 10 bytes; returns (value, bytes used).
#[inline]
pub(crate) fn get_varint64(b: &[u8]) -> Option<(u64, usize)> {
    let mut result: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if i == 9 && byte > 1 {
            return None;
        }
        result |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}
/// Decode a varint32 of at most 5 bytes; returns (value, bytes used).
#[inline]
pub(crate) fn get_varint32(b: &[u8]) -> Option<(u32, usize)> {
    // fast path for one byte
    if let Some(&b0) = b.first() {
        if b0 < 0x80 {
            return Some((b0 as u32, 1));
        }
    }
    let mut result: u32 = 0;
    for (i, &byte) in b.iter().enumerate().take(5) {
        let shift = 7 * i as u32;
        if i == 4 && byte > 0x0f {
            return None;
        }
        result |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// A cursor over a byte slice for decoding; every getter returns `None` on short input.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        let v = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }
    #[cfg(test)]
    pub(crate) fn fixed32(&mut self) -> Option<u32> {
        let v = decode_fixed32(self.remaining())?;
        self.pos += 4;
        Some(v)
    }
    pub(crate) fn fixed64(&mut self) -> Option<u64> {
        let v = decode_fixed64(self.remaining())?;
        self.pos += 8;
        Some(v)
    }
    pub(crate) fn varint32(&mut self) -> Option<u32> {
        let (v, n) = get_varint32(self.remaining())?;
        self.pos += n;
        Some(v)
    }
    pub(crate) fn varint64(&mut self) -> Option<u64> {
        let (v, n) = get_varint64(self.remaining())?;
        self.pos += n;
        Some(v)
    }
    pub(crate) fn varsigned64(&mut self) -> Option<i64> {
        let u = self.varint64()?;
        Some(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn lpslice(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32()? as usize;
        self.bytes(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip_and_limits() {
        let vals = [0u64, 1, 127, 128, 300, 16383, 16384, u32::MAX as u64, u64::MAX];
        for &v in &vals {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(get_varint64(&b), Some((v, b.len())));
            // every truncation fails
            for cut in 0..b.len() {
                assert_eq!(get_varint64(&b[..cut]), None);
            }
        }
        let mut b = Vec::new();
        put_varint32(&mut b, u32::MAX);
        assert_eq!(get_varint32(&b), Some((u32::MAX, 5)));
        // overlong varint32 (value > u32) is rejected
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]), None);
        // 11-byte varint64 is rejected
        assert_eq!(get_varint64(&[0xff; 11]), None);
        assert_eq!(
            get_varint64(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02]),
            None
        );
    }

    #[test]
    fn varsigned_and_reader() {
        for v in [0i64, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            let mut b = Vec::new();
            put_varsigned64(&mut b, v);
            assert_eq!(Reader::new(&b).varsigned64(), Some(v));
        }
        let mut b = Vec::new();
        put_fixed32(&mut b, 0xdeadbeef);
        put_lpslice(&mut b, b"abc");
        put_fixed64(&mut b, 7);
        let mut r = Reader::new(&b);
        assert_eq!(r.fixed32(), Some(0xdeadbeef));
        assert_eq!(r.lpslice(), Some(&b"abc"[..]));
        assert_eq!(r.fixed64(), Some(7));
        assert!(r.is_empty());
        assert_eq!(r.u8(), None);
        assert_eq!(Reader::new(&[5, b'a']).lpslice(), None);
    }
}
