//! Reading CuckooTable files: the whole file is held in one buffer (RocksDB requires mmap for
//! this format); lookups hash the user key and compare the buckets of its cuckoo blocks.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::key::{trailer, user_key, vt, InternalKeyComparator};
use crate::table::block::{Block, BlockIter, EntryFormat, KeyOrder};
use crate::table::format::PROPERTIES_NAME;
use crate::table::format::{BlockHandle, FOOTER_LEN};
use crate::table::properties::TableProperties;
use crate::table::reader_options::TableReaderOptions;

use super::format::{decode_footer, prop, MAX_CUCKOO_BLOCK_SIZE, MAX_NUM_HASH_FUNC};
use super::hash::CuckooHasher;

/// Trailer of the keys of a last-level file (sequence 0, type Value).
const LAST_LEVEL_TRAILER: u64 = vt::VALUE as u64;
/// Keys hashed and prefetched together by `multi_get`.
const MULTI_GET_BATCH: usize = 128;
const CACHE_LINE: usize = 64;

/// An open cuckoo file.
pub(crate) struct CuckooTable {
    file_name: String,
    file_size: u64,
    data: Vec<u8>,
    icmp: InternalKeyComparator,
    props: TableProperties,
    hasher: CuckooHasher,
    num_hash_func: u32,
    block_size: usize,
    key_len: usize,
    user_key_len: usize,
    value_len: usize,
    bucket_len: usize,
    /// `table_size + cuckoo_block_size - 1`; 0 for a table without entries.
    num_buckets: usize,
    /// Stored key of empty buckets (`key_len` bytes).
    unused_key: Vec<u8>,
    /// The unused key's first 8 bytes when user keys have 8 bytes (the fast path).
    unused8: Option<u64>,
    last_level: bool,
}

impl std::fmt::Debug for CuckooTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CuckooTable({}, {} bytes, {} buckets)",
            self.file_name, self.file_size, self.num_buckets
        )
    }
}

fn prop_bytes<'a>(raw: &'a BTreeMap<String, Vec<u8>>, name: &str, len: usize) -> Result<&'a [u8]> {
    match raw.get(name) {
        None => Err(Error::corrupt(format!("cuckoo property {name} not found"))),
        Some(v) if v.len() < len => Err(Error::corrupt(format!(
            "cuckoo property {name} has {} bytes, expected {len}",
            v.len()
        ))),
        Some(v) => Ok(&v[..len]),
    }
}

fn prop_u32(raw: &BTreeMap<String, Vec<u8>>, name: &str) -> Result<u32> {
    Ok(u32::from_le_bytes(
        prop_bytes(raw, name, 4)?.try_into().unwrap_or_default(),
    ))
}

fn prop_bool(raw: &BTreeMap<String, Vec<u8>>, name: &str) -> Result<bool> {
    match prop_bytes(raw, name, 1)?[0] {
        0 => Ok(false),
        1 => Ok(true),
        x => Err(Error::corrupt(format!("cuckoo property {name} is {x}, not a bool"))),
    }
}

/// Parse a meta block (metaindex or properties) into name → value.
fn parse_meta_block(bytes: &[u8]) -> Result<BTreeMap<String, Vec<u8>>> {
    // Cuckoo files were never written with block features a reader may lack: any oddity is
    // damage.
    let block = Block::new(bytes.to_vec()).map_err(|e| match e {
        Error::Corruption { .. } => e,
        other => Error::corrupt(format!("bad meta block: {other}")),
    })?;
    let mut it = BlockIter::new(Arc::new(block), KeyOrder::Bytewise, EntryFormat::Data);
    let mut out = BTreeMap::new();
    it.seek_to_first();
    while it.valid() {
        out.insert(String::from_utf8_lossy(it.key()).into_owned(), it.value().to_vec());
        it.next();
    }
    it.status()?;
    Ok(out)
}

impl CuckooTable {
    /// Read and check the whole file: footer, metaindex, properties (all nine cuckoo properties
    /// must be present and consistent with the file's size). Corruption names the file.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
        opts: &TableReaderOptions,
    ) -> Result<CuckooTable> {
        if file_size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &file_name,
                Some(0),
                format!("file is too short ({file_size} bytes) to be an sst file"),
            ));
        }
        if file_size > file.size() {
            return Err(Error::corruption(
                &file_name,
                None,
                format!("expected {file_size} bytes, the file has {}", file.size()),
            ));
        }
        let len = usize::try_from(file_size)
            .map_err(|_| Error::NotSupported(format!("{file_name}: file too large to hold in memory")))?;
        let mut data = Vec::with_capacity(len);
        crate::table::hints::advise_huge_pages(&data);
        match file.mmap_bytes() {
            // A mapped file is copied without zeroing the buffer first.
            Some(b) if b.len() == len => data.extend_from_slice(b),
            _ => {
                data.resize(len, 0);
                file.read_exact_at(0, &mut data)
                    .map_err(|e| e.in_file(&file_name, Some(0)))?;
            }
        }
        Self::from_bytes(data, file_name, opts.icmp.clone())
    }

    /// Open a table from the file's bytes.
    pub(crate) fn from_bytes(data: Vec<u8>, file_name: String, icmp: InternalKeyComparator) -> Result<CuckooTable> {
        let file_size = data.len() as u64;
        let name = file_name.as_str();
        let fail = |off: u64| move |e: Error| e.in_file(name, Some(off));
        if data.len() < FOOTER_LEN {
            return Err(Error::corruption(
                &file_name,
                Some(0),
                format!("file is too short ({file_size} bytes) to be an sst file"),
            ));
        }
        let foff = data.len() - FOOTER_LEN;
        let mh = decode_footer(&data[foff..], file_size).map_err(fail(foff as u64))?;
        let meta =
            parse_meta_block(&data[mh.offset as usize..(mh.offset + mh.size) as usize]).map_err(fail(mh.offset))?;
        let ph = match meta.get(PROPERTIES_NAME) {
            None => {
                return Err(Error::corruption(
                    &file_name,
                    Some(mh.offset),
                    "metaindex has no rocksdb.properties entry",
                ))
            }
            Some(v) => BlockHandle::decode(v)
                .map(|(h, _)| h)
                .ok_or_else(|| Error::corruption(&file_name, Some(mh.offset), "bad properties block handle"))?,
        };
        if ph.offset > mh.offset || ph.size > mh.offset - ph.offset {
            return Err(Error::corruption(
                &file_name,
                Some(mh.offset),
                format!("properties handle ({}, {}) overlaps the metaindex", ph.offset, ph.size),
            ));
        }
        let raw =
            parse_meta_block(&data[ph.offset as usize..(ph.offset + ph.size) as usize]).map_err(fail(ph.offset))?;
        let props = TableProperties::parse(raw).map_err(fail(ph.offset))?;
        let mut t = Self::from_properties(props, ph.offset).map_err(fail(ph.offset))?;
        t.data = data;
        t.file_name = file_name;
        t.file_size = file_size;
        t.icmp = icmp;
        Ok(t)
    }

    /// Decode and validate the cuckoo geometry; `data_end` is where the buckets must end by.
    pub(super) fn from_properties(props: TableProperties, data_end: u64) -> Result<CuckooTable> {
        let raw = &props.raw;
        let num_hash_func = prop_u32(raw, prop::NUM_HASH_FUNC)?;
        let unused_key = raw
            .get(prop::EMPTY_KEY)
            .ok_or_else(|| Error::corrupt(format!("cuckoo property {} not found", prop::EMPTY_KEY)))?
            .clone();
        let user_key_len = prop_u32(raw, prop::USER_KEY_LENGTH)? as usize;
        let value_len = prop_u32(raw, prop::VALUE_LENGTH)? as usize;
        let table_size = u64::from_le_bytes(
            prop_bytes(raw, prop::HASH_TABLE_SIZE, 8)?
                .try_into()
                .unwrap_or_default(),
        );
        let last_level = prop_bool(raw, prop::IS_LAST_LEVEL)?;
        let identity = prop_bool(raw, prop::IDENTITY_AS_FIRST_HASH)?;
        let use_module = prop_bool(raw, prop::USE_MODULE_HASH)?;
        let block_size = prop_u32(raw, prop::CUCKOO_BLOCK_SIZE)?;
        let key_len = props.fixed_key_len;
        let bad = |m: String| Err(Error::corrupt(m));
        if props.num_entries == 0 && data_end == 0 {
            // Nothing to look up: the table has no buckets.
            return Ok(CuckooTable::empty(props, key_len as usize, value_len, last_level));
        }
        if user_key_len == 0 || key_len != user_key_len as u64 + if last_level { 0 } else { 8 } {
            return bad(format!(
                "cuckoo key length {key_len} does not match user key length {user_key_len} (last level: {last_level})"
            ));
        }
        let key_len = key_len as usize;
        if unused_key.len() != key_len {
            return bad(format!(
                "cuckoo empty-bucket key has {} bytes, expected {key_len}",
                unused_key.len()
            ));
        }
        if identity && user_key_len < 8 {
            return bad(format!("identity hash with {user_key_len}-byte keys"));
        }
        if num_hash_func == 0 || num_hash_func > MAX_NUM_HASH_FUNC {
            return bad(format!("bad number of cuckoo hash functions {num_hash_func}"));
        }
        if block_size == 0 || block_size > MAX_CUCKOO_BLOCK_SIZE {
            return bad(format!("bad cuckoo block size {block_size}"));
        }
        if table_size == 0 || (!use_module && !table_size.is_power_of_two()) {
            return bad(format!("bad cuckoo hash table size {table_size}"));
        }
        let bucket_len = key_len + value_len;
        let num_buckets = table_size.saturating_add(block_size as u64 - 1);
        if num_buckets >= u32::MAX as u64 || num_buckets.checked_mul(bucket_len as u64) != Some(data_end) {
            return bad(format!(
                "{num_buckets} cuckoo buckets of {bucket_len} bytes do not end where the properties start ({data_end})"
            ));
        }
        if props.num_entries == 0 || props.num_entries > num_buckets {
            return bad(format!(
                "{} entries do not fit in {num_buckets} buckets",
                props.num_entries
            ));
        }
        Ok(CuckooTable {
            file_name: String::new(),
            file_size: 0,
            data: Vec::new(),
            icmp: InternalKeyComparator::default(),
            props,
            hasher: CuckooHasher {
                table_size,
                use_module_hash: use_module,
                identity_as_first_hash: identity,
            },
            num_hash_func,
            block_size: block_size as usize,
            key_len,
            user_key_len,
            value_len,
            bucket_len,
            num_buckets: num_buckets as usize,
            unused8: (user_key_len == 8).then(|| u64::from_ne_bytes(unused_key[..8].try_into().unwrap_or_default())),
            unused_key,
            last_level,
        })
    }

    fn empty(props: TableProperties, key_len: usize, value_len: usize, last_level: bool) -> CuckooTable {
        CuckooTable {
            file_name: String::new(),
            file_size: 0,
            data: Vec::new(),
            icmp: InternalKeyComparator::default(),
            props,
            hasher: CuckooHasher {
                table_size: 1,
                use_module_hash: true,
                identity_as_first_hash: false,
            },
            num_hash_func: 0,
            block_size: 0,
            key_len,
            user_key_len: 0,
            value_len,
            bucket_len: key_len + value_len,
            num_buckets: 0,
            unused_key: Vec::new(),
            unused8: None,
            last_level,
        }
    }

    fn corruption(&self, off: usize, msg: String) -> Error {
        Error::corruption(&self.file_name, Some(off as u64), msg)
    }

    /// Byte offset of the bucket holding `uk`, starting with the first function's bucket `b0`.
    /// Stops at the first empty bucket of a probed block, as RocksDB does.
    #[inline(always)]
    fn probe(&self, uk: &[u8], b0: u64) -> Option<usize> {
        if let (Ok(k8), Some(u8k)) = (<[u8; 8]>::try_from(uk), self.unused8) {
            return self.probe8(uk, u64::from_ne_bytes(k8), u8k, b0);
        }
        let ukl = self.user_key_len;
        let unused = &self.unused_key[..ukl];
        if ukl > 8 {
            return self.probe_wide(uk, unused, b0);
        }
        for cnt in 0..self.num_hash_func {
            let b = if cnt == 0 { b0 } else { self.hasher.bucket(uk, cnt) };
            let mut off = b as usize * self.bucket_len;
            for _ in 0..self.block_size {
                let k = &self.data[off..off + ukl];
                if k == unused {
                    return None;
                }
                if k == uk {
                    return Some(off);
                }
                off += self.bucket_len;
            }
        }
        None
    }

    /// [`probe`](Self::probe) for user keys longer than 8 bytes: each bucket's first 8 bytes
    /// are compared as one word with the key's and the unused key's, and only a bucket whose
    /// word matches is compared in full (no `memcmp` call per bucket).
    #[inline(always)]
    fn probe_wide(&self, uk: &[u8], unused: &[u8], b0: u64) -> Option<usize> {
        let head = |s: &[u8]| u64::from_ne_bytes(s[..8].try_into().unwrap_or_default());
        let (key_head, unused_head) = (head(uk), head(unused));
        let ukl = uk.len();
        for cnt in 0..self.num_hash_func {
            let b = if cnt == 0 { b0 } else { self.hasher.bucket(uk, cnt) };
            let start = b as usize * self.bucket_len;
            let block = &self.data[start..start + self.block_size * self.bucket_len];
            for (i, bucket) in block.chunks_exact(self.bucket_len).enumerate() {
                let h = head(bucket);
                if h == unused_head && &bucket[..ukl] == unused {
                    return None;
                }
                if h == key_head && &bucket[..ukl] == uk {
                    return Some(start + i * self.bucket_len);
                }
            }
        }
        None
    }

    /// [`probe`](Self::probe) for 8-byte user keys: one word comparison per bucket.
    #[inline(always)]
    fn probe8(&self, uk: &[u8], key: u64, unused: u64, b0: u64) -> Option<usize> {
        for cnt in 0..self.num_hash_func {
            let b = if cnt == 0 { b0 } else { self.hasher.bucket(uk, cnt) };
            let start = b as usize * self.bucket_len;
            let block = &self.data[start..start + self.block_size * self.bucket_len];
            for (i, bucket) in block.chunks_exact(self.bucket_len).enumerate() {
                let k = u64::from_ne_bytes(bucket[..8].try_into().unwrap_or_default());
                if k == unused {
                    return None;
                }
                if k == key {
                    return Some(start + i * self.bucket_len);
                }
            }
        }
        None
    }

    /// Hand the entry in the bucket at `off` to `found` if visible at `max_trailer`.
    #[inline(always)]
    fn deliver<R>(&self, off: usize, max_trailer: u64, found: impl FnOnce(&[u8], &[u8]) -> R) -> Result<Option<R>> {
        let value = &self.data[off + self.key_len..off + self.bucket_len];
        if self.last_level {
            if LAST_LEVEL_TRAILER > max_trailer {
                return Ok(None);
            }
            let mut buf = [0u8; 72];
            let mut heap = Vec::new();
            let ikey: &mut [u8] = if self.key_len + 8 <= buf.len() {
                &mut buf[..self.key_len + 8]
            } else {
                heap.resize(self.key_len + 8, 0);
                &mut heap
            };
            ikey[..self.key_len].copy_from_slice(&self.data[off..off + self.key_len]);
            ikey[self.key_len..].copy_from_slice(&LAST_LEVEL_TRAILER.to_le_bytes());
            return Ok(Some(found(ikey, value)));
        }
        let ikey = &self.data[off..off + self.key_len];
        let tr = trailer(ikey);
        let t = (tr & 0xff) as u8;
        if t != vt::VALUE && t != vt::DELETION {
            return Err(self.corruption(off, format!("bad value type {t:#x} in cuckoo bucket")));
        }
        if tr > max_trailer {
            return Ok(None);
        }
        Ok(Some(found(ikey, value)))
    }

    /// Same contract as `Table::get_with`: the entry for `lookup_ikey`'s user key if its
    /// internal key is >= `lookup_ikey` (i.e. visible at the lookup's sequence number), handed to
    /// `found` as (internal key, value). Keys of another length are simply absent. The value
    /// is always a slice of this table's own buffer (pinned reads point into it).
    pub(crate) fn get_with<R>(
        &self,
        lookup_ikey: &[u8],
        _verify: bool,
        _fill_cache: bool,
        found: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        let uk = user_key(lookup_ikey);
        if self.num_buckets == 0 || uk.len() != self.user_key_len || lookup_ikey.len() < 8 {
            return Ok(None);
        }
        let b0 = self.hasher.bucket(uk, 0);
        match self.probe(uk, b0) {
            Some(off) => self.deliver(off, trailer(lookup_ikey), found),
            None => Ok(None),
        }
    }

    /// The entry (internal key, value) for `lookup_ikey`, as [`get_with`](Self::get_with).
    pub(crate) fn get(&self, lookup_ikey: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.get_with(lookup_ikey, false, false, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Prefetch the cache lines of the cuckoo block starting at bucket `b`.
    #[inline(always)]
    fn prefetch(&self, b: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let start = b as usize * self.bucket_len;
            let end = start + self.block_size * self.bucket_len;
            let first = self.data.as_ptr().wrapping_add(start);
            let stop = self.data.as_ptr().wrapping_add(end) as usize;
            let mut line = first.wrapping_sub(first as usize & (CACHE_LINE - 1));
            while (line as usize) < stop {
                // SAFETY: a prefetch is only a hint to the cache; it never faults and has no
                // effect visible to the program, whatever the address.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(line as *const i8) };
                line = line.wrapping_add(CACHE_LINE);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = b;
    }

    /// Batched point lookups of user keys at snapshot `seq`: hashes the keys of each group of
    /// up to 128 and prefetches their first cuckoo blocks before probing any, then calls
    /// `found(i, internal_key, value)` for every key `user_keys[i]` present and visible.
    /// Returns how many were found.
    pub(crate) fn multi_get(
        &self,
        user_keys: &[&[u8]],
        seq: u64,
        mut found: impl FnMut(usize, &[u8], &[u8]),
    ) -> Result<usize> {
        if self.num_buckets == 0 {
            return Ok(0);
        }
        let max_trailer = (seq.min(crate::key::MAX_SEQUENCE) << 8) | vt::FOR_SEEK as u64;
        let mut hashes = [0u64; MULTI_GET_BATCH];
        let mut n = 0;
        for (base, chunk) in user_keys.chunks(MULTI_GET_BATCH).enumerate() {
            for (h, uk) in hashes.iter_mut().zip(chunk) {
                if uk.len() == self.user_key_len {
                    *h = self.hasher.bucket(uk, 0);
                    self.prefetch(*h);
                }
            }
            for (j, (uk, &h)) in chunk.iter().zip(hashes.iter()).enumerate() {
                if uk.len() != self.user_key_len {
                    continue;
                }
                if let Some(off) = self.probe(uk, h) {
                    let i = base * MULTI_GET_BATCH + j;
                    if self.deliver(off, max_trailer, |k, v| found(i, k, v))?.is_some() {
                        n += 1;
                    }
                }
            }
        }
        Ok(n)
    }

    /// A sorted iterator; the sort happens on its first positioning.
    pub(crate) fn iter(self: &Arc<Self>) -> CuckooTableIterator {
        CuckooTableIterator {
            table: self.clone(),
            sorted: Vec::new(),
            initialized: false,
            pos: 0,
            key: Vec::new(),
            err: None,
        }
    }

    /// Check every bucket: occupied ones hold a Put or Delete that a lookup of its key finds
    /// exactly there, empty ones hold exactly the unused key, and the count matches the
    /// properties. O(buckets); catches most damage to the bucket area, which has no checksum.
    pub(crate) fn verify(&self) -> Result<()> {
        let ukl = self.user_key_len;
        let mut count = 0u64;
        for b in 0..self.num_buckets {
            let off = b * self.bucket_len;
            let key = &self.data[off..off + self.key_len];
            let uk = &key[..ukl];
            if key == self.unused_key.as_slice() {
                continue;
            }
            if uk == &self.unused_key[..ukl] {
                return Err(self.corruption(off, "damaged empty bucket".into()));
            }
            if !self.last_level {
                let t = key[self.key_len - 8];
                if t != vt::VALUE && t != vt::DELETION {
                    return Err(self.corruption(off, format!("bad value type {t:#x} in cuckoo bucket")));
                }
            }
            if self.probe(uk, self.hasher.bucket(uk, 0)) != Some(off) {
                return Err(self.corruption(off, format!("cuckoo bucket {b} is not where its key hashes")));
            }
            count += 1;
        }
        if count != self.props.num_entries {
            return Err(self.corruption(
                0,
                format!(
                    "{count} occupied cuckoo buckets, properties say {}",
                    self.props.num_entries
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Bytes held: the whole file plus the decoded properties.
    pub(crate) fn approximate_memory_usage(&self) -> usize {
        self.data.capacity()
            + self
                .props
                .raw
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
            + std::mem::size_of::<CuckooTable>()
    }

    pub(crate) fn file_name(&self) -> &str {
        &self.file_name
    }

    #[cfg(test)]
    pub(crate) fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Number of hash functions the file uses.
    pub(crate) fn num_hash_func(&self) -> u32 {
        self.num_hash_func
    }

    /// Buckets of the hash table proper (without the trailing `cuckoo_block_size - 1`).
    pub(crate) fn hash_table_size(&self) -> u64 {
        if self.num_buckets == 0 {
            0
        } else {
            self.hasher.table_size
        }
    }

    /// Whether keys are stored without sequence numbers.
    pub(crate) fn is_last_level(&self) -> bool {
        self.last_level
    }

    #[cfg(test)]
    pub(crate) fn data_for_tests(&self) -> &[u8] {
        &self.data
    }

    fn bucket_user_key(&self, b: u32) -> &[u8] {
        let off = b as usize * self.bucket_len;
        &self.data[off..off + self.user_key_len]
    }

    fn bucket_trailer(&self, b: u32) -> u64 {
        if self.last_level {
            LAST_LEVEL_TRAILER
        } else {
            let off = b as usize * self.bucket_len;
            trailer(&self.data[off..off + self.key_len])
        }
    }

    /// Internal-key order of bucket `b`'s entry against `target`.
    fn cmp_bucket(&self, b: u32, target: &[u8]) -> Ordering {
        match self.icmp.compare_user(self.bucket_user_key(b), user_key(target)) {
            Ordering::Equal => trailer(target).cmp(&self.bucket_trailer(b)),
            o => o,
        }
    }
}

/// Iterator over a cuckoo table in internal-key order.
pub(crate) struct CuckooTableIterator {
    table: Arc<CuckooTable>,
    sorted: Vec<u32>,
    initialized: bool,
    /// Index into `sorted`; `sorted.len()` when not valid.
    pos: usize,
    key: Vec<u8>,
    err: Option<Error>,
}

impl CuckooTableIterator {
    fn init(&mut self) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        let t = &*self.table;
        let mut ids = Vec::with_capacity((t.props.num_entries as usize).min(t.num_buckets));
        for b in 0..t.num_buckets {
            let off = b * t.bucket_len;
            let key = &t.data[off..off + t.key_len];
            if key == t.unused_key.as_slice() {
                continue;
            }
            if !t.last_level {
                let ty = key[t.key_len - 8];
                if ty != vt::VALUE && ty != vt::DELETION {
                    self.err = Some(t.corruption(off, format!("bad value type {ty:#x} in cuckoo bucket")));
                    return;
                }
            }
            ids.push(b as u32);
        }
        if ids.len() as u64 != t.props.num_entries {
            self.err = Some(t.corruption(
                0,
                format!(
                    "{} occupied cuckoo buckets, properties say {}",
                    ids.len(),
                    t.props.num_entries
                ),
            ));
            return;
        }
        ids.sort_unstable_by(|&a, &b| t.icmp.compare_user(t.bucket_user_key(a), t.bucket_user_key(b)));
        if ids
            .windows(2)
            .any(|w| t.icmp.compare_user(t.bucket_user_key(w[0]), t.bucket_user_key(w[1])) == Ordering::Equal)
        {
            self.err = Some(t.corruption(0, "a user key is stored twice in the cuckoo table".into()));
            return;
        }
        self.sorted = ids;
        self.pos = self.sorted.len();
    }

    fn settle(&mut self) {
        self.key.clear();
        if let Some(&b) = self.sorted.get(self.pos) {
            let t = &*self.table;
            let off = b as usize * t.bucket_len;
            self.key.extend_from_slice(&t.data[off..off + t.key_len]);
            if t.last_level {
                self.key.extend_from_slice(&LAST_LEVEL_TRAILER.to_le_bytes());
            }
        }
    }

    fn ready(&mut self) -> bool {
        self.init();
        if self.err.is_some() {
            self.pos = self.sorted.len();
            return false;
        }
        true
    }
}

impl InternalIterator for CuckooTableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.pos < self.sorted.len()
    }
    fn seek_to_first(&mut self) {
        if self.ready() {
            self.pos = 0;
            self.settle();
        }
    }
    fn seek_to_last(&mut self) {
        if self.ready() {
            self.pos = if self.sorted.is_empty() {
                0
            } else {
                self.sorted.len() - 1
            };
            self.settle();
        }
    }
    fn seek(&mut self, target: &[u8]) {
        if self.ready() {
            let t = &*self.table;
            self.pos = self
                .sorted
                .partition_point(|&b| t.cmp_bucket(b, target) == Ordering::Less);
            self.settle();
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        if self.ready() {
            let t = &*self.table;
            let n = self
                .sorted
                .partition_point(|&b| t.cmp_bucket(b, target) != Ordering::Greater);
            self.pos = if n == 0 { self.sorted.len() } else { n - 1 };
            self.settle();
        }
    }
    fn next(&mut self) {
        if self.valid() {
            self.pos += 1;
            self.settle();
        }
    }
    fn prev(&mut self) {
        if self.valid() {
            self.pos = if self.pos == 0 { self.sorted.len() } else { self.pos - 1 };
            self.settle();
        }
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        match self.sorted.get(self.pos) {
            Some(&b) => {
                let t = &*self.table;
                let off = b as usize * t.bucket_len + t.key_len;
                &t.data[off..off + t.value_len]
            }
            None => &[],
        }
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
