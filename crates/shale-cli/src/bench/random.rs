//! RocksDB's random number generators, bit-for-bit, so that `shale bench` writes and reads the
//! same keys and values as `db_bench` for the same flags and seed.
//!
//! * [`Random`] is RocksDB's `Random` (`util/random.h`): Park–Miller "minimal standard" LCG,
//!   `seed = seed * 16807 mod (2^31 - 1)`.
//! * [`Random64`] is RocksDB's `Random64`, i.e. C++ `std::mt19937_64`.

/// RocksDB's `Random` (Park–Miller, multiplier 16807, modulus 2^31-1).
#[derive(Debug, Clone)]
pub struct Random {
    seed: u32,
}

impl Random {
    const M: u32 = 2_147_483_647; // 2^31-1
    const A: u64 = 16807;

    pub fn new(s: u32) -> Random {
        let s = s & Self::M;
        Random {
            seed: if s != 0 { s } else { 1 },
        }
    }

    pub fn next(&mut self) -> u32 {
        let product = self.seed as u64 * Self::A;
        // (product % M) using ((x << 31) % M) == x.
        let mut seed = ((product >> 31) + (product & Self::M as u64)) as u32;
        if seed > Self::M {
            seed -= Self::M;
        }
        self.seed = seed;
        seed
    }

    /// `Next() % n` (RocksDB's `Uniform(int n)`).
    pub fn uniform(&mut self, n: u32) -> u32 {
        self.next() % n
    }

    /// RocksDB's `PercentTrue`: always consumes one value.
    pub fn percent_true(&mut self, percentage: i32) -> bool {
        (self.uniform(100) as i32) < percentage
    }

    /// RocksDB's `RandomBinaryString`: each byte is `Uniform(CHAR_MAX)` = `Next() % 127`.
    pub fn random_binary_string(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.uniform(127) as u8).collect()
    }
}

/// RocksDB's `Random64`: the C++ standard `std::mt19937_64` engine.
#[derive(Clone)]
pub struct Random64 {
    mt: Box<[u64; 312]>,
    idx: usize,
}

impl Random64 {
    const N: usize = 312;
    const M: usize = 156;
    const MATRIX_A: u64 = 0xB502_6F5A_A966_19E9;
    const UPPER: u64 = 0xFFFF_FFFF_8000_0000;
    const LOWER: u64 = 0x7FFF_FFFF;

    pub fn new(seed: u64) -> Random64 {
        let mut mt = Box::new([0u64; 312]);
        mt[0] = seed;
        for i in 1..Self::N {
            mt[i] = 6_364_136_223_846_793_005u64
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 62))
                .wrapping_add(i as u64);
        }
        Random64 { mt, idx: Self::N }
    }

    fn twist(&mut self) {
        let mt = &mut self.mt;
        for i in 0..Self::N {
            let x = (mt[i] & Self::UPPER) | (mt[(i + 1) % Self::N] & Self::LOWER);
            let mut xa = x >> 1;
            if x & 1 != 0 {
                xa ^= Self::MATRIX_A;
            }
            mt[i] = mt[(i + Self::M) % Self::N] ^ xa;
        }
        self.idx = 0;
    }

    /// The next 64-bit output (`generator_()`).
    pub fn next(&mut self) -> u64 {
        if self.idx >= Self::N {
            self.twist();
        }
        let mut y = self.mt[self.idx];
        self.idx += 1;
        y ^= (y >> 29) & 0x5555_5555_5555_5555;
        y ^= (y << 17) & 0x71D6_7FFF_EDA6_0000;
        y ^= (y << 37) & 0xFFF7_EEE0_0000_0000;
        y ^= y >> 43;
        y
    }
}

/// RocksDB's `test::CompressibleString`: `len * ratio` random bytes repeated to fill `len`.
pub fn compressible_string(rnd: &mut Random, compressed_to_fraction: f64, len: usize) -> Vec<u8> {
    let mut raw = (len as f64 * compressed_to_fraction) as i64;
    if raw < 1 {
        raw = 1;
    }
    let raw_data = rnd.random_binary_string(raw as usize);
    let mut dst = Vec::with_capacity(len + raw_data.len());
    while dst.len() < len {
        dst.extend_from_slice(&raw_data);
    }
    dst.truncate(len);
    dst
}

/// db_bench's `RandomGenerator` (fixed value-size distribution): a >= 1 MiB buffer of
/// compressible 100-byte fragments from `Random(301)`, handed out as consecutive slices.
pub struct RandomGenerator {
    data: Vec<u8>,
    pos: usize,
    rnd: Random,
    value_size: usize,
    same_value_percentage: i32,
}

impl RandomGenerator {
    pub fn new(value_size: usize, compression_ratio: f64) -> RandomGenerator {
        let mut rnd = Random::new(301);
        let target = value_size.max(1_048_576);
        let mut data = Vec::with_capacity(target + 100);
        while data.len() < target {
            data.extend_from_slice(&compressible_string(&mut rnd, compression_ratio, 100));
        }
        RandomGenerator {
            data,
            pos: 0,
            rnd,
            value_size,
            same_value_percentage: 0,
        }
    }

    /// The whole backing buffer (for tests).
    #[cfg(test)]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    pub fn generate_len(&mut self, len: usize) -> &[u8] {
        assert!(len <= self.data.len());
        if self.rnd.percent_true(self.same_value_percentage) {
            return &self.data[..len];
        }
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        self.pos += len;
        &self.data[self.pos - len..self.pos]
    }

    pub fn generate(&mut self) -> &[u8] {
        let len = self.value_size;
        self.generate_len(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_matches_park_miller() {
        // Independent formula: seed' = seed * 16807 mod (2^31 - 1).
        let mut r = Random::new(301);
        let mut s: u64 = 301;
        for _ in 0..100_000 {
            s = s * 16807 % 2_147_483_647;
            assert_eq!(r.next() as u64, s);
        }
        let mut r = Random::new(301);
        assert_eq!(r.next(), 5_058_907);
        assert_eq!(r.next(), (5_058_907u64 * 16807 % 2_147_483_647) as u32);
        // Seed 0 is mapped to 1 (RocksDB's GoodSeed).
        assert_eq!(Random::new(0).next(), 16807);
        assert_eq!(Random::new(1 << 31).next(), 16807);
    }

    #[test]
    fn mt19937_64_known_values() {
        // The C++ standard requires the 10000th output of a default-constructed
        // std::mt19937_64 (seed 5489) to be 9981545732273789042.
        let mut r = Random64::new(5489);
        let first = r.next();
        assert_eq!(first, 14_514_284_786_278_117_030);
        let mut last = first;
        for _ in 1..10_000 {
            last = r.next();
        }
        assert_eq!(last, 9_981_545_732_273_789_042);
    }

    #[test]
    fn compressible_string_and_generator() {
        // Derived from the algorithm (not checked against a real db_bench binary): the buffer is
        // 100-byte fragments, each 50 bytes of `Random(301).Next() % 127` repeated twice.
        let g = RandomGenerator::new(100, 0.5);
        let d = g.data();
        assert_eq!(d.len(), 1_048_600);
        let mut r = Random::new(301);
        let first: Vec<u8> = (0..50).map(|_| (r.next() % 127) as u8).collect();
        assert_eq!(&d[..50], &first[..]);
        assert_eq!(&d[50..100], &first[..]);
        let second: Vec<u8> = (0..50).map(|_| (r.next() % 127) as u8).collect();
        assert_eq!(&d[100..150], &second[..]);
        assert_eq!(&d[150..200], &second[..]);
        assert_eq!(first[0], (5_058_907u32 % 127) as u8);

        let mut g = RandomGenerator::new(100, 0.5);
        let a = g.generate().to_vec();
        let b = g.generate().to_vec();
        assert_eq!(&a[..], &d[..100]);
        assert_eq!(&b[..], &d[100..200]);
        // Wraps to the start when the next slice would run off the end.
        let mut g = RandomGenerator::new(100, 0.5);
        for _ in 0..10_486 {
            g.generate();
        }
        assert_eq!(g.generate(), &d[..100]);

        // Ratio 1.0 gives 100 distinct random bytes per fragment; tiny ratios give at least 1.
        let mut r = Random::new(301);
        let s = compressible_string(&mut r, 0.001, 10);
        assert!(s.iter().all(|&c| c == s[0]));
    }
}
