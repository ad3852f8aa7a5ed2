//! A search directory for large index blocks (Shale's own; nothing of it is on disk).
//!
//! A point lookup or seek in a table first binary-searches its index block: one entry per data
//! block, ~16k entries for a 64 MiB file. Each probe of that search decodes a key at a random
//! place in the block, so a lookup costs ~14 cache misses per table before it reads any data.
//!
//! The directory keeps, for every restart entry of the block, 8 bytes of its user key as a
//! big-endian `u64` (the *discriminator*): the bytes right after the prefix every key of the block
//! shares, zero-padded. A sparse top array (every 16th discriminator) fits in a few cache lines
//! per table; the search goes top array → one 16-entry bucket → (rarely) full key comparisons
//! among entries whose discriminators tie. That is 2–3 cache misses instead of ~14.
//!
//! Correctness rests on one property of bytewise order: zero-padding or truncating keys to the
//! same 8 bytes never inverts their order (`a < b` implies `disc(a) <= disc(b)`). So an entry
//! whose discriminator is below the target's is below the target, one above is above, and only
//! ties need the real comparison. Built only for the bytewise comparator.

/// One discriminator in the top array per this many entries.
const BUCKET: usize = 16;

/// Blocks with fewer restart entries are searched as they are.
pub(crate) const MIN_ENTRIES: usize = 64;

pub(crate) struct BlockDirectory {
    /// The prefix every key's user key starts with.
    prefix: Box<[u8]>,
    /// Discriminator of each restart entry.
    disc: Box<[u64]>,
    /// `disc[i * BUCKET]`.
    top: Box<[u64]>,
}

/// 8 bytes of `k` from its start as a big-endian word, zero-padded.
#[inline]
fn load(k: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = k.len().min(8);
    b[..n].copy_from_slice(&k[..n]);
    u64::from_be_bytes(b)
}

impl BlockDirectory {
    /// Build from the user keys of the restart entries, in order. `None` if there are too few
    /// or they are not in bytewise order (then the block is searched without a directory).
    pub(crate) fn build<'a>(keys: impl Iterator<Item = &'a [u8]> + Clone) -> Option<BlockDirectory> {
        let mut it = keys.clone();
        let first = it.next()?;
        let last = it.last()?;
        let skip = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let prefix: Box<[u8]> = first[..skip].into();
        let mut disc = Vec::new();
        let mut prev = 0u64;
        for k in keys {
            // Keys are sorted, so every key between first and last starts with the prefix; a
            // key that does not (a corrupt block) means no directory.
            if !k.starts_with(&prefix) {
                return None;
            }
            let d = load(&k[skip..]);
            if d < prev {
                return None;
            }
            prev = d;
            disc.push(d);
        }
        if disc.len() < MIN_ENTRIES {
            return None;
        }
        let top = disc.iter().step_by(BUCKET).copied().collect();
        Some(BlockDirectory {
            prefix,
            disc: disc.into_boxed_slice(),
            top,
        })
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.disc.len()
    }

    /// Heap bytes held.
    pub(crate) fn memory(&self) -> usize {
        self.prefix.len() + 8 * (self.disc.len() + self.top.len()) + std::mem::size_of::<Self>()
    }

    /// For the user key `t`: `(a, b)` such that every entry before `a` is below `t`, every entry
    /// from `b` on is above it, and the entries in `a..b` (their discriminators equal `t`'s)
    /// need a full comparison.
    #[inline]
    pub(crate) fn candidates(&self, t: &[u8]) -> (usize, usize) {
        let n = self.disc.len();
        let skip = self.prefix.len();
        let head = &t[..t.len().min(skip)];
        match head.cmp(&self.prefix[..head.len()]) {
            std::cmp::Ordering::Less => return (0, 0),
            std::cmp::Ordering::Greater => return (n, n),
            // `t` is a proper prefix of the shared prefix: below every key.
            std::cmp::Ordering::Equal if t.len() < skip => return (0, 0),
            std::cmp::Ordering::Equal => {}
        }
        let d = load(&t[skip..]);
        // The first bucket whose first discriminator is >= d; the first entry >= d lies after
        // the previous bucket's first entry and at or before this bucket's first entry.
        let j = self.top.partition_point(|&x| x < d);
        let lo = if j == 0 { 0 } else { (j - 1) * BUCKET + 1 };
        let hi = (j * BUCKET).min(n);
        let a = lo + self.disc[lo..hi].partition_point(|&x| x < d);
        let b = if a < n && self.disc[a] > d {
            a
        } else {
            a + self.disc[a..].partition_point(|&x| x <= d)
        };
        (a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Check `candidates` against a plain scan for every probe.
    fn check(keys: &[Vec<u8>], probes: &[Vec<u8>]) {
        let dir = BlockDirectory::build(keys.iter().map(|k| k.as_slice())).expect("directory");
        for t in probes {
            let (a, b) = dir.candidates(t);
            assert!(a <= b && b <= keys.len(), "{t:?}: ({a}, {b})");
            for (i, k) in keys.iter().enumerate() {
                if i < a {
                    assert!(k.as_slice() < t.as_slice(), "entry {i} {k:?} not below {t:?}");
                } else if i >= b {
                    assert!(k.as_slice() > t.as_slice(), "entry {i} {k:?} not above {t:?}");
                }
            }
        }
    }

    #[test]
    fn candidates_bound_every_probe() {
        // Shared prefix, varying lengths (some keys shorter than prefix + 8), runs of keys equal
        // in their first 8 bytes after the prefix, and probes in between, outside and equal.
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for i in 0..300u32 {
            let mut k = b"user/".to_vec();
            k.extend_from_slice(format!("{:06}", i / 3).as_bytes());
            if i % 3 > 0 {
                k.extend_from_slice(format!("--tail{}", i % 3).as_bytes());
            }
            keys.push(k);
        }
        keys.sort();
        keys.dedup();
        let mut probes: Vec<Vec<u8>> = keys.clone();
        for k in &keys {
            let mut p = k.clone();
            p.push(0);
            probes.push(p);
            let mut q = k.clone();
            q.pop();
            probes.push(q);
        }
        for p in [
            &b""[..],
            b"a",
            b"user",
            b"user/",
            b"user/9",
            b"user0",
            b"v",
            b"user/000050--tail1x",
        ] {
            probes.push(p.to_vec());
        }
        check(&keys, &probes);
    }

    #[test]
    fn random_binary_keys() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut keys: Vec<Vec<u8>> = (0..2000)
            .map(|_| {
                let len = (next() % 12) as usize;
                (0..len).map(|_| (next() % 4) as u8).collect()
            })
            .collect();
        keys.sort();
        keys.dedup();
        let probes: Vec<Vec<u8>> = (0..3000)
            .map(|_| {
                let len = (next() % 13) as usize;
                (0..len).map(|_| (next() % 5) as u8).collect()
            })
            .collect();
        check(&keys, &probes);
    }

    #[test]
    fn small_or_unsorted_blocks_get_none() {
        let few: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i]).collect();
        assert!(BlockDirectory::build(few.iter().map(|k| k.as_slice())).is_none());
        let mut many: Vec<Vec<u8>> = (0..100u8).map(|i| vec![b'k', i]).collect();
        many.swap(10, 20);
        assert!(BlockDirectory::build(many.iter().map(|k| k.as_slice())).is_none());
    }
}
