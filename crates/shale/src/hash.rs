//! Hash functions RocksDB uses on disk (see `docs/format-details.md`):
//!
//! * [`xxph3_64`]: RocksDB's `Hash64` — the xxHash 0.7.2 *preview* of XXH3 (seed 0) with RocksDB's
//!   empty-input change. Used by FastLocalBloom filters. It is NOT the final XXH3.
//! * [`hash32`]: RocksDB's `Hash` (murmur1-like, sign-extended tail). Legacy Bloom, data-block
//!   hash index.
//! * [`murmur64a`]: MurmurHash64A (CuckooTable on x86-64).
//! * CRC32C masking as in the log and block trailers.

#![allow(dead_code)] // the engine modules using this API are built in parallel branches

const P32_1: u64 = 0x9E37_79B1;
const P32_2: u64 = 0x85EB_CA77;
const P32_3: u64 = 0xC2B2_AE3D;
const P64_1: u64 = 0x9E37_79B1_85EB_CA87;
const P64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P64_3: u64 = 0x1656_67B1_9E37_79F9;
const P64_4: u64 = 0x85EB_CA77_C2B2_AE63;
const P64_5: u64 = 0x27D4_EB2F_1656_67C5;

/// The standard 192-byte XXH3 default secret.
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d,
    0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0,
    0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0,
    0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b,
    0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac,
    0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51,
    0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34,
    0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49,
    0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8,
    0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b,
    0x40, 0x7e,
];

#[inline(always)]
fn r64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}
#[inline(always)]
fn r32(b: &[u8], i: usize) -> u64 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap()) as u64
}
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}
#[inline(always)]
fn aval(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(P64_3);
    h ^ (h >> 32)
}
#[inline(always)]
fn mix16(d: &[u8], i: usize, s: usize) -> u64 {
    fold(r64(d, i) ^ r64(&SECRET, s), r64(d, i + 8) ^ r64(&SECRET, s + 8))
}

/// RocksDB's `Hash64(data, len, seed = 0)`: XXPH3 (preview XXH3 64-bit).
pub(crate) fn xxph3_64(d: &[u8]) -> u64 {
    let n = d.len();
    let s = &SECRET;
    if n <= 16 {
        if n > 8 {
            let lo = r64(d, 0) ^ r64(s, 0);
            let hi = r64(d, n - 8) ^ r64(s, 8);
            let acc = (n as u64).wrapping_add(lo).wrapping_add(hi).wrapping_add(fold(lo, hi));
            return aval(acc);
        }
        if n >= 4 {
            let x = r32(d, 0) | (r32(d, n - 4) << 32);
            let k = x ^ r64(s, 0);
            let m = (n as u64).wrapping_add((k ^ (k >> 51)).wrapping_mul(P32_1));
            return aval((m ^ (m >> 47)).wrapping_mul(P64_2));
        }
        if n > 0 {
            let c = (d[0] as u64) | ((d[n >> 1] as u64) << 8) | ((d[n - 1] as u64) << 16) | ((n as u64) << 24);
            return aval((c ^ r32(s, 0)).wrapping_mul(P64_1));
        }
        return fold(r64(s, 0), P64_2);
    }
    if n <= 128 {
        let mut acc = (n as u64).wrapping_mul(P64_1);
        if n > 32 {
            if n > 64 {
                if n > 96 {
                    acc = acc.wrapping_add(mix16(d, 48, 96)).wrapping_add(mix16(d, n - 64, 112));
                }
                acc = acc.wrapping_add(mix16(d, 32, 64)).wrapping_add(mix16(d, n - 48, 80));
            }
            acc = acc.wrapping_add(mix16(d, 16, 32)).wrapping_add(mix16(d, n - 32, 48));
        }
        acc = acc.wrapping_add(mix16(d, 0, 0)).wrapping_add(mix16(d, n - 16, 16));
        return aval(acc);
    }
    if n <= 240 {
        let mut acc = (n as u64).wrapping_mul(P64_1);
        for i in 0..8 {
            acc = acc.wrapping_add(mix16(d, 16 * i, 16 * i));
        }
        acc = aval(acc);
        for i in 8..n / 16 {
            acc = acc.wrapping_add(mix16(d, 16 * i, 16 * (i - 8) + 3));
        }
        acc = acc.wrapping_add(mix16(d, n - 16, 119));
        return aval(acc);
    }
    xxph3_long(d)
}

fn xxph3_long(d: &[u8]) -> u64 {
    let n = d.len();
    let s = &SECRET;
    let mut acc: [u64; 8] = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1];
    #[inline(always)]
    fn stripe(acc: &mut [u64; 8], d: &[u8], p: usize, so: usize) {
        for (i, a) in acc.iter_mut().enumerate() {
            let dv = r64(d, p + 8 * i);
            let k = dv ^ r64(&SECRET, so + 8 * i);
            *a = a.wrapping_add(dv).wrapping_add((k & 0xFFFF_FFFF).wrapping_mul(k >> 32));
        }
    }
    #[inline(always)]
    fn scramble(acc: &mut [u64; 8]) {
        for (i, a) in acc.iter_mut().enumerate() {
            let mut x = *a;
            x ^= x >> 47;
            x ^= r64(&SECRET, 128 + 8 * i);
            *a = x.wrapping_mul(P32_1);
        }
    }
    const BLOCK: usize = 1024; // 16 stripes of 64 bytes
    let nb = n / BLOCK;
    for b in 0..nb {
        for j in 0..16 {
            stripe(&mut acc, d, b * BLOCK + 64 * j, 8 * j);
        }
        scramble(&mut acc);
    }
    let rest_stripes = (n - nb * BLOCK) / 64;
    for j in 0..rest_stripes {
        stripe(&mut acc, d, nb * BLOCK + 64 * j, 8 * j);
    }
    if !n.is_multiple_of(64) {
        stripe(&mut acc, d, n - 64, 121);
    }
    let mut r = (n as u64).wrapping_mul(P64_1);
    for i in 0..4 {
        r = r.wrapping_add(fold(
            acc[2 * i] ^ r64(s, 11 + 16 * i),
            acc[2 * i + 1] ^ r64(s, 19 + 16 * i),
        ));
    }
    aval(r)
}

/// RocksDB's `Hash(data, n, seed)` (util/hash.cc), with sign-extended tail bytes.
pub(crate) fn hash32(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0xC6A4_A793;
    let n = data.len();
    let mut h = seed ^ (n as u32).wrapping_mul(M);
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let w = u32::from_le_bytes(c.try_into().unwrap());
        h = h.wrapping_add(w).wrapping_mul(M);
        h ^= h >> 16;
    }
    let t = chunks.remainder();
    let sx = |b: u8| b as i8 as i32 as u32;
    if t.len() == 3 {
        h = h.wrapping_add(sx(t[2]) << 16);
    }
    if t.len() >= 2 {
        h = h.wrapping_add(sx(t[1]) << 8);
    }
    if !t.is_empty() {
        h = h.wrapping_add(sx(t[0])).wrapping_mul(M);
        h ^= h >> 24;
    }
    h
}

/// MurmurHash64A as in RocksDB's util/murmurhash.cc on x86-64.
pub(crate) fn murmur64a(data: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xC6A4_A793_5BD1_E995;
    const R: u32 = 47;
    let mut h = (seed as u64) ^ (data.len() as u64).wrapping_mul(M);
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let t = chunks.remainder();
    if !t.is_empty() {
        for (i, &b) in t.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^ (h >> R)
}

const MASK_DELTA: u32 = 0xA282_EAD8;

/// RocksDB/LevelDB CRC mask: rotate right by 15 and add a constant.
#[inline]
pub(crate) fn crc32c_mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`crc32c_mask`].
#[inline]
pub(crate) fn crc32c_unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// CRC32C (Castagnoli, the iSCSI polynomial) of `data`, as RocksDB's `crc32c::Value`. The
/// `crc-fast` crate picks the fastest routine this CPU has at run time (carry-less-multiply
/// folding fused with the `crc32` instruction, AVX-512 where present).
#[inline]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// The CRC32C of `a ++ data` given `crc == crc32c(a)` (RocksDB's `crc32c::Extend`).
#[inline]
pub(crate) fn crc32c_extend(crc: u32, data: &[u8]) -> u32 {
    // The running state of a reflected CRC-32 with all-ones init and xor-out is the finished
    // value with the xor-out undone.
    let mut d = crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    d.update(data);
    d.finalize() as u32
}

/// `mask(crc32c(data))`.
#[inline]
pub(crate) fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c_mask(crc32c(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    /// Bit-at-a-time CRC32C, the definition the fast routine must agree with.
    fn crc32c_reference(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0x82F6_3B78
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn crc32c_matches_the_definition_at_every_length_and_split() {
        // Lengths around the SIMD routine's block sizes, and odd alignments of the start.
        let data: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in (0..300).chain([511, 512, 513, 1023, 1024, 4095, 4096, 4097, 8191, 16_384, 19_997]) {
            for start in [0usize, 1, 3] {
                let d = &data[start..start + len];
                let want = crc32c_reference(d);
                assert_eq!(crc32c(d), want, "len {len} start {start}");
                for split in [0, 1, len / 3, len / 2, len.saturating_sub(1), len]
                    .into_iter()
                    .filter(|&s| s <= len)
                {
                    let (a, b) = d.split_at(split);
                    assert_eq!(crc32c_extend(crc32c(a), b), want, "len {len} split {split}");
                }
            }
        }
    }

    #[test]
    fn crc_vectors() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_mask(0xE306_9283), 0xC78A_B0E5);
        assert_eq!(masked_crc32c(b"123456789"), 0xC78A_B0E5);
        assert_eq!(masked_crc32c(b""), 0xA282_EAD8);
        assert_eq!(crc32c(&[1]), 0xA016_D052);
        assert_eq!(crc32c_unmask(0xC78A_B0E5), 0xE306_9283);
        for v in [0u32, 1, 0xdeadbeef, u32::MAX] {
            assert_eq!(crc32c_unmask(crc32c_mask(v)), v);
        }
        let rec = [1u8, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0x6b, 1, 0x76];
        assert_eq!(masked_crc32c(&rec), 0x004D_5AE7);
    }

    #[test]
    fn xxph3_vectors() {
        let cases: &[(Vec<u8>, u64, u64)] = &[
            (b"".to_vec(), 0x5342C3010FE1DD04, 0x2D06800538D394C2),
            (b"a".to_vec(), 0x88D868BF607681C7, 0xE6C632B61E964E1F),
            (b"abc".to_vec(), 0xD39EEB71BB5342E8, 0x78AF5F94892F3950),
            (b"hello".to_vec(), 0xA0BBC238C97657B5, 0x9555E8555C62DCFD),
            (b"key00000".to_vec(), 0x8959635447D8B9B9, 0xCB08581724B4BA91),
            (b"0123456789abcdef".to_vec(), 0x402C83C1955D056D, 0x64439946D8FA212D),
            (pat(17), 0x6DFF1AC96EEF2848, 0x9EF341A99DE37328),
            (pat(128), 0x7AA5DB2C8097080B, 0x85C6174C7FF4C46B),
            (pat(129), 0xA06D81743056CEBC, 0xEC7642B431BA3E5A),
            (pat(240), 0xD1253A6DEC8C35FC, 0x375A384D957FE865),
            (pat(241), 0xB78DF6016A18C222, 0x02E8CD95421C6D02),
            (pat(1024), 0xD36464396DF76D32, 0xE5D78BAFA45B2AA5),
        ];
        for (d, pre, fin) in cases {
            assert_eq!(xxph3_64(d), *pre, "xxph3 len {}", d.len());
            assert_eq!(xxhash_rust::xxh3::xxh3_64(d), *fin, "xxh3 len {}", d.len());
        }
    }

    #[test]
    fn xxph3_long_lengths_do_not_panic() {
        // lengths around block/stripe boundaries (values cross-checked below)
        for n in [255, 256, 257, 1000, 1023, 1025, 2048, 2049, 4096, 5000] {
            let _ = xxph3_64(&pat(n));
        }
        assert_eq!(xxph3_64(&pat(2049)), XXPH3_2049);
        assert_eq!(xxph3_64(&pat(300)), XXPH3_300);
    }
    // Computed with an independent Python implementation of xxph3_64(pat(n)).
    const XXPH3_2049: u64 = 0x5d01716d9b5a7161;
    const XXPH3_300: u64 = 0x61420a29efad8ba0;

    #[test]
    fn hash32_vectors() {
        let bloom = 0xBC9F_1D34;
        assert_eq!(hash32(b"", bloom), 0xBC9F1D34);
        assert_eq!(hash32(b"a", bloom), 0x286E9DB0);
        assert_eq!(hash32(b"abc", bloom), 0x855D012F);
        assert_eq!(hash32(b"hello", bloom), 0xF795964E);
        assert_eq!(hash32(b"", 397), 0x0000018D);
        assert_eq!(hash32(b"a", 397), 0x5C8473B1);
        assert_eq!(hash32(b"abc", 397), 0x1D9AA392);
        assert_eq!(hash32(b"hello", 397), 0xBE006C87);
        assert_eq!(hash32(&[0x80, 0xff, 0x7f], bloom), 0x95EBE0E2); // sign-extended tail
    }

    #[test]
    fn murmur_vectors() {
        assert_eq!(murmur64a(b"abc", 0), 0x9CC9C33498A95EFB);
        assert_eq!(murmur64a(b"0000000000000001", 816922183), 0x0DE6C6F283DDD34F);
        assert_eq!(murmur64a(b"0123456789abcdef", 1633844366), 0xEC4865AF7B4D8745);
    }
}
