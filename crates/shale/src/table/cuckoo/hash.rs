//! Cuckoo hashing as RocksDB's CuckooTable does it: the bucket functions, and the placement of
//! a file's keys (first free bucket of a cuckoo block, else a breadth-first search for the
//! shortest displacement path, else one more hash function).

use crate::error::{Error, Result};
use crate::hash::murmur64a;

/// Seed step between the MurmurHash64A functions: function `i` uses seed `i * SEED_STEP`
/// (mod 2^32).
pub(crate) const SEED_STEP: u32 = 816_922_183;

/// Marks an empty bucket in a [`Placement`].
pub(crate) const EMPTY: u32 = u32::MAX;

/// Maps a user key and a function number to a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CuckooHasher {
    pub table_size: u64,
    pub use_module_hash: bool,
    pub identity_as_first_hash: bool,
}

impl CuckooHasher {
    /// The 64-bit hash of function `cnt` before it is reduced to the table size.
    #[inline(always)]
    pub(crate) fn raw(&self, user_key: &[u8], cnt: u32) -> u64 {
        if cnt == 0 && self.identity_as_first_hash {
            let mut w = [0u8; 8];
            let n = user_key.len().min(8);
            w[..n].copy_from_slice(&user_key[..n]);
            u64::from_le_bytes(w)
        } else {
            murmur64a(user_key, SEED_STEP.wrapping_mul(cnt))
        }
    }

    /// First bucket of the cuckoo block of function `cnt` (< `table_size`; `table_size` > 0).
    #[inline(always)]
    pub(crate) fn bucket(&self, user_key: &[u8], cnt: u32) -> u64 {
        let v = self.raw(user_key, cnt);
        if self.use_module_hash {
            v % self.table_size
        } else {
            v & (self.table_size - 1)
        }
    }
}

/// Where the builder's keys went: `buckets[b]` is the index of the key stored in bucket `b`
/// (or [`EMPTY`]); `num_hash_func` functions are needed to find them all.
#[derive(Debug)]
pub(crate) struct Placement {
    pub buckets: Vec<u32>,
    pub num_hash_func: u32,
}

/// Limits and shape of a placement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlacementParams {
    pub table_size: u64,
    pub cuckoo_block_size: u32,
    pub max_search_depth: u32,
    pub max_num_hash_func: u32,
}

/// Place keys `0..n` (`user_key(i)` gives key `i`) in `table_size + cuckoo_block_size - 1`
/// buckets, starting with two hash functions; `bucket(key, i)` is function `i` (< table_size). Keys are placed in index order; a key whose
/// blocks are full triggers a BFS over the keys in its first buckets for the shortest path to an
/// empty bucket (at most `max_search_depth` levels), and failing that one more hash function.
pub(crate) fn place<'a, K, H>(n: u32, user_key: K, bucket: H, p: PlacementParams) -> Result<Placement>
where
    K: Fn(u32) -> &'a [u8],
    H: Fn(&[u8], u32) -> u64,
{
    let bs = p.cuckoo_block_size.max(1);
    let total = p
        .table_size
        .checked_add(bs as u64 - 1)
        .filter(|t| *t < u32::MAX as u64 && *t <= usize::MAX as u64)
        .ok_or_else(|| Error::NotSupported("cuckoo hash table too large (2^32 buckets or more)".into()))?
        as usize;
    let mut st = State {
        buckets: vec![EMPTY; total],
        visit: vec![0; total],
        num_hash_func: 2,
        call_id: 0,
        tree: Vec::new(),
        p,
        bs,
        bucket: &bucket,
    };
    let mut candidates: Vec<u64> = Vec::new();
    for idx in 0..n {
        let uk = user_key(idx);
        candidates.clear();
        let mut slot = None;
        'funcs: for cnt in 0..st.num_hash_func {
            let start = bucket(uk, cnt);
            for b in start..start + bs as u64 {
                let occupant = st.buckets[b as usize];
                if occupant == EMPTY {
                    slot = Some(b);
                    break 'funcs;
                }
                if user_key(occupant) == uk {
                    return Err(Error::NotSupported(
                        "cuckoo table: the same user key was added twice".into(),
                    ));
                }
                candidates.push(b);
            }
        }
        while slot.is_none() {
            st.call_id += 1;
            if let Some(b) = st.make_space(&candidates, &user_key) {
                slot = Some(b);
                break;
            }
            if st.num_hash_func >= p.max_num_hash_func {
                return Err(Error::NotSupported(format!(
                    "cuckoo table cannot place {n} keys: too many collisions with {} hash functions, \
                     cuckoo_block_size {bs} and max_search_depth {} (lower hash_table_ratio or raise \
                     the limits)",
                    st.num_hash_func, p.max_search_depth
                )));
            }
            let start = bucket(uk, st.num_hash_func);
            st.num_hash_func += 1;
            for b in start..start + bs as u64 {
                if st.buckets[b as usize] == EMPTY {
                    slot = Some(b);
                    break;
                }
                candidates.push(b);
            }
        }
        if let Some(b) = slot {
            st.buckets[b as usize] = idx;
        }
    }
    Ok(Placement {
        buckets: st.buckets,
        num_hash_func: st.num_hash_func,
    })
}

struct Node {
    bucket: u64,
    depth: u32,
    parent: u32,
}

struct State<'h, H> {
    buckets: Vec<u32>,
    /// Id of the last search that visited each bucket.
    visit: Vec<u32>,
    num_hash_func: u32,
    call_id: u32,
    tree: Vec<Node>,
    p: PlacementParams,
    bs: u32,
    bucket: &'h H,
}

impl<H: Fn(&[u8], u32) -> u64> State<'_, H> {
    /// Breadth-first search from the first `num_hash_func` candidate buckets for an empty
    /// bucket; on success shift the keys along the path and return the freed first-level bucket.
    /// (RocksDB seeds the search with the first `num_hash_func` entries of the candidate list;
    /// doing the same keeps the files identical.)
    fn make_space<'a>(&mut self, candidates: &[u64], user_key: &impl Fn(u32) -> &'a [u8]) -> Option<u64> {
        let id = self.call_id;
        self.tree.clear();
        let roots = (self.num_hash_func as usize).min(candidates.len());
        for &b in &candidates[..roots] {
            self.visit[b as usize] = id;
            self.tree.push(Node {
                bucket: b,
                depth: 0,
                parent: 0,
            });
        }
        let mut found = false;
        let mut pos = 0usize;
        while !found && pos < self.tree.len() {
            let depth = self.tree[pos].depth;
            if depth >= self.p.max_search_depth {
                break;
            }
            let occupant = self.buckets[self.tree[pos].bucket as usize];
            let uk = user_key(occupant);
            'funcs: for cnt in 0..self.num_hash_func {
                let start = (self.bucket)(uk, cnt);
                for b in start..start + self.bs as u64 {
                    let bi = b as usize;
                    if self.visit[bi] == id {
                        continue;
                    }
                    self.visit[bi] = id;
                    self.tree.push(Node {
                        bucket: b,
                        depth: depth + 1,
                        parent: pos as u32,
                    });
                    if self.buckets[bi] == EMPTY {
                        found = true;
                        break 'funcs;
                    }
                }
            }
            pos += 1;
        }
        if !found {
            return None;
        }
        let mut at = self.tree.len() - 1;
        while at >= roots {
            let parent = self.tree[at].parent as usize;
            let moved = self.buckets[self.tree[parent].bucket as usize];
            self.buckets[self.tree[at].bucket as usize] = moved;
            at = parent;
        }
        Some(self.tree[at].bucket)
    }
}
