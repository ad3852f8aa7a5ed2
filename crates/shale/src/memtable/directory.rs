//! A sorted directory of a sealed (immutable) memtable, for point lookups and seeks in about three
//! cache misses instead of a skiplist descent's twenty-odd.
//!
//! Built once, when a memtable will receive no more inserts, over its entries in order. Only for
//! bytewise-ordered user keys. Each entry gets a *discriminator*: the 8 bytes of its user key that
//! follow the prefix all keys share (`prefix`, the common prefix of the first and last key),
//! big-endian, zero-padded. Discriminators never decrease along the sorted entries. A table of
//! `2^k` buckets maps the top bits of `disc - lo` to the first entry of each bucket, so a lookup
//! reads one bucket pair, binary-searches the few discriminators of its bucket, and compares full
//! keys only among entries with an equal discriminator (normally one user key's versions).
//!
//! Each entry also keeps an item of the caller's (a node address) next to its discriminator, so
//! the search of a bucket and its answer share cache lines.
//!
//! Skewed keys (long shared runs after the prefix) only make buckets fuller: the search stays a
//! binary search, never worse than over the whole array.

/// See the module documentation.
pub(crate) struct Directory {
    /// Bytes every user key starts with.
    prefix: Vec<u8>,
    /// Discriminator of the first and the last entry.
    lo: u64,
    hi: u64,
    /// `bucket(d) = (d - lo) >> shift`.
    shift: u32,
    /// `starts[b]`: the first entry whose bucket is >= b; `starts[num_buckets] == len`.
    starts: Vec<u32>,
    /// Per entry, in entry order: its discriminator and the caller's item (a node address),
    /// side by side so that the search and its answer share cache lines.
    slots: Vec<[u64; 2]>,
}

impl Directory {
    /// A directory over `keys`, the user keys of the entries in order (bytewise non-decreasing).
    /// None if there are none, or more than `u32::MAX`.
    #[cfg(test)]
    pub(crate) fn build(keys: &[&[u8]]) -> Option<Directory> {
        let items: Vec<u64> = (0..keys.len() as u64).collect();
        Directory::build_with(keys, &items)
    }

    /// A directory over `keys` (as [`build`](Self::build)) that keeps `items[i]` with entry `i`.
    pub(crate) fn build_with(keys: &[&[u8]], items: &[u64]) -> Option<Directory> {
        if keys.len() != items.len() {
            return None;
        }
        let mut d = Directory::new(keys.first()?, keys.last()?);
        let slots = keys.iter().zip(items).map(|(k, &it)| [d.disc(k), it]).collect();
        d.finish(slots).then_some(d)
    }

    /// The item kept with entry `i`.
    #[inline(always)]
    pub(crate) fn item(&self, i: usize) -> Option<u64> {
        self.slots.get(i).map(|s| s[1])
    }

    /// An empty directory for entries whose first and last user keys are given; feed
    /// [`disc`](Self::disc) of every entry's user key, in order, to [`finish`](Self::finish).
    fn new(first: &[u8], last: &[u8]) -> Directory {
        let common = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        Directory {
            prefix: first[..common].to_vec(),
            lo: 0,
            hi: 0,
            shift: 0,
            starts: Vec::new(),
            slots: Vec::new(),
        }
    }

    /// Complete the directory from the entries' discriminators and items (in entry order).
    /// False (and unusable) if there are none, too many, or they are out of order.
    fn finish(&mut self, slots: Vec<[u64; 2]>) -> bool {
        if slots.is_empty() || slots.len() >= u32::MAX as usize || slots.windows(2).any(|w| w[0][0] > w[1][0]) {
            return false;
        }
        self.lo = slots[0][0];
        self.hi = slots[slots.len() - 1][0];
        self.slots = slots;
        // About two entries per bucket.
        let bucket_bits = (self.slots.len() / 2).max(1).next_power_of_two().trailing_zeros();
        let range_bits = 64 - (self.hi - self.lo).leading_zeros();
        self.shift = range_bits.saturating_sub(bucket_bits);
        let num_buckets = (((self.hi - self.lo) >> self.shift) + 1) as usize;
        self.starts = Vec::with_capacity(num_buckets + 1);
        let mut i = 0usize;
        for b in 0..num_buckets {
            while i < self.slots.len() && self.bucket(self.slots[i][0]) < b {
                i += 1;
            }
            self.starts.push(i as u32);
        }
        self.starts.push(self.slots.len() as u32);
        true
    }

    /// The discriminator of a user key (see the module documentation).
    #[inline(always)]
    pub(crate) fn disc(&self, key: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        let rest = key.get(self.prefix.len()..).unwrap_or(&[]);
        let n = rest.len().min(8);
        b[..n].copy_from_slice(&rest[..n]);
        u64::from_be_bytes(b)
    }

    #[inline(always)]
    fn bucket(&self, disc: u64) -> usize {
        ((disc - self.lo) >> self.shift) as usize
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage(&self) -> usize {
        self.slots.capacity() * 16 + self.starts.capacity() * 4 + self.prefix.capacity()
    }

    /// The first entry (index) not less than the target, whose user key is `ukey`;
    /// `entry_is_less(i)` compares entry `i` with the full target (user key and trailer). The
    /// result is in `0..=len()`.
    #[inline]
    pub(crate) fn lower_bound(&self, ukey: &[u8], entry_is_less: impl Fn(usize) -> bool) -> usize {
        self.lower_bound_above(ukey, entry_is_less).0
    }

    /// [`lower_bound`](Self::lower_bound), and whether the entry found (if any) is known to have
    /// a user key strictly greater than `ukey` without a full comparison (its discriminator is
    /// greater, or `ukey` is before the shared prefix).
    #[inline]
    pub(crate) fn lower_bound_above(&self, ukey: &[u8], entry_is_less: impl Fn(usize) -> bool) -> (usize, bool) {
        let p = self.prefix.len();
        let head = &ukey[..p.min(ukey.len())];
        match head.cmp(&self.prefix[..]) {
            // Shorter than the prefix and a prefix of it, or smaller: before every entry.
            std::cmp::Ordering::Less => return (0, true),
            std::cmp::Ordering::Greater => return (self.slots.len(), false),
            std::cmp::Ordering::Equal => {}
        }
        let d = self.disc(ukey);
        if d < self.lo {
            return (0, true);
        }
        if d > self.hi {
            return (self.slots.len(), false);
        }
        let b = self.bucket(d);
        let (s, e) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        let run = &self.slots[s..e];
        let i = s + run.partition_point(|x| x[0] < d);
        let j = s + run.partition_point(|x| x[0] <= d);
        // Among the entries whose discriminator equals `d`, the full comparison decides.
        let (mut lo, mut hi) = (i, j);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if entry_is_less(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        // Past the run of equal discriminators every entry's is greater.
        (lo, lo == j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directory's answer equals a plain binary search over the keys, for every probe.
    fn check(keys: &[Vec<u8>], probes: &[Vec<u8>]) {
        let mut sorted = keys.to_vec();
        sorted.sort();
        let refs: Vec<&[u8]> = sorted.iter().map(|k| &k[..]).collect();
        let d = Directory::build(&refs).expect("non-empty");
        assert_eq!(d.len(), sorted.len());
        for p in probes.iter().chain(sorted.iter()) {
            let want = sorted.partition_point(|k| k < p);
            let got = d.lower_bound(p, |i| sorted[i] < *p);
            assert_eq!(got, want, "probe {p:?} over {} keys", sorted.len());
        }
    }

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn uniform_db_bench_style_keys() {
        let mut s = 7u64;
        let keys: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                let mut k = (rng(&mut s) % 1_000_000).to_be_bytes().to_vec();
                k.extend_from_slice(b"00000000");
                k
            })
            .collect();
        let probes: Vec<Vec<u8>> = (0..5000)
            .map(|_| {
                let mut k = (rng(&mut s) % 1_100_000).to_be_bytes().to_vec();
                k.extend_from_slice(b"00000000");
                k
            })
            .collect();
        check(&keys, &probes);
    }

    #[test]
    fn shared_prefix_short_keys_and_probes_outside_the_prefix() {
        let mut keys: Vec<Vec<u8>> = (0..300u32).map(|i| format!("user:{i:05}").into_bytes()).collect();
        keys.push(b"user:".to_vec()); // equal to the shared prefix
        keys.push(b"user:1".to_vec()); // short
        let probes: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"user",
            b"user:",
            b"user:0",
            b"user:00150",
            b"user:00150\x00",
            b"user:2",
            b"user:99999",
            b"user;",
            b"usea",
            b"zzz",
            b"user:\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ]
        .iter()
        .map(|p| p.to_vec())
        .collect();
        check(&keys, &probes);
    }

    #[test]
    fn keys_equal_in_their_discriminator_fall_back_to_full_compares() {
        // Every key differs only after 8 bytes past the shared prefix: one bucket, one
        // discriminator.
        let keys: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("p{}{i:06}", "x".repeat(12)).into_bytes())
            .collect();
        let probes: Vec<Vec<u8>> = (0..1200u32)
            .step_by(7)
            .map(|i| format!("p{}{i:06}", "x".repeat(12)).into_bytes())
            .collect();
        check(&keys, &probes);
    }

    #[test]
    fn one_key_and_duplicates() {
        check(
            &[b"k".to_vec()],
            &[b"".to_vec(), b"j".to_vec(), b"k".to_vec(), b"l".to_vec()],
        );
        let dups: Vec<Vec<u8>> = (0..50)
            .map(|i| if i < 25 { b"a".to_vec() } else { b"b".to_vec() })
            .collect();
        check(
            &dups,
            &[
                b"a".to_vec(),
                b"aa".to_vec(),
                b"b".to_vec(),
                b"c".to_vec(),
                b"".to_vec(),
            ],
        );
        assert!(Directory::build(&[]).is_none());
    }
}
