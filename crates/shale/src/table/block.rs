//! Blocks with prefix-compressed entries and restart points (`docs/format-details.md`):
//! the builder, the parsed [`Block`] and a [`BlockIter`] implementing `InternalIterator`.
//!
//! One iterator type serves data blocks (internal keys), index blocks (internal-key or user-key
//! separators, full or delta-encoded handles, optional first keys), meta blocks (bytewise keys)
//! and range-deletion blocks. The key order used for seeks is chosen with [`KeyOrder`].

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{get_varint32, put_varint32, Reader};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{user_key, InternalKeyComparator, UserCmpKind};
use crate::table::block_dir::{self, BlockDirectory};
use crate::table::format::BlockHandle;

const HASH_INDEX_BIT: u32 = 1 << 31;
const RESERVED_BIT: u32 = 1 << 30;
const UNIFORM_BIT: u32 = 1 << 29;
const SEPARATED_KV_BIT: u32 = 1 << 28;
const NUM_RESTARTS_MASK: u32 = (1 << 28) - 1;

/// Recycled block buffers, per thread. A point read that misses the block cache reads a block
/// into a fresh buffer and, as the cache is full, evicts (frees) another: with glibc each 4 KiB
/// allocation and free goes through its bins (~10 % of a cache-missing lookup's time). Blocks
/// give their buffer back here when dropped and the next read on the thread takes it. Only
/// buffers of ordinary block sizes are kept, at most `POOL_MAX` per thread.
pub(crate) mod buffers {
    use std::cell::RefCell;

    const POOL_MAX: usize = 32;
    const MIN_CAP: usize = 1 << 10;
    const MAX_CAP: usize = 64 << 10;

    thread_local! {
        static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    }

    #[cfg(test)]
    /// A buffer of exactly `n` bytes (their contents are unspecified: the caller overwrites
    /// them).
    pub(crate) fn take(n: usize) -> Vec<u8> {
        reuse(n).unwrap_or_else(|| vec![0u8; n])
    }

    /// A pooled buffer of exactly `n` bytes, if the pool has one large enough and at most
    /// twice as large (the smallest such).
    fn reuse(n: usize) -> Option<Vec<u8>> {
        if !(MIN_CAP..=MAX_CAP).contains(&n) {
            return None;
        }
        let mut b = POOL
            .try_with(|p| {
                let mut p = p.try_borrow_mut().ok()?;
                let fits = |c: usize| c >= n && c / 2 <= n;
                let (i, _) = p
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| fits(b.capacity()))
                    .min_by_key(|(_, b)| b.capacity())?;
                Some(p.swap_remove(i))
            })
            .ok()
            .flatten()?;
        // Bytes below the old length are initialized; only growth is zero-filled.
        if b.len() < n {
            b.resize(n, 0);
        } else {
            b.truncate(n);
        }
        Some(b)
    }

    /// `n` bytes of `file` at `offset`: into a pooled buffer when the pool has one large
    /// enough, else through `read_at`, which the POSIX file reads into uninitialized capacity:
    /// zero-filling a fresh buffer before the read cost 13 % of a lookup whose index and filter
    /// blocks keep falling out of a small block cache, and 3 % of a seek that misses 4 KiB data
    /// blocks.
    pub(crate) fn read(file: &dyn crate::fs::RandomAccessFile, offset: u64, n: usize) -> crate::error::Result<Vec<u8>> {
        match reuse(n) {
            Some(mut buf) => {
                file.read_exact_at(offset, &mut buf)?;
                Ok(buf)
            }
            None => file.read_at(offset, n),
        }
    }

    /// Keep `b` for a later `take` on this thread (dropped if it is not block-sized). A full
    /// pool drops its oldest buffer for `b`, so it holds the sizes of the latest blocks: a pool
    /// that refused buffers once full filled up with the smallest ones (blocks vary by a few
    /// bytes around their target size, and takes leave the small ones behind), too small for
    /// most reads.
    pub(crate) fn give(b: Vec<u8>) {
        if (MIN_CAP..=MAX_CAP).contains(&b.capacity()) {
            let _ = POOL.try_with(|p| {
                if let Ok(mut p) = p.try_borrow_mut() {
                    if p.len() >= POOL_MAX {
                        p.remove(0);
                    }
                    p.push(b);
                }
            });
        }
    }
}

/// A parsed block: its (uncompressed) bytes and the location of its restart array.
pub(crate) struct Block {
    data: Vec<u8>,
    restart_offset: usize,
    num_restarts: u32,
    /// Search directory over the restart keys (large index blocks; see `block_dir.rs`).
    dir: Option<BlockDirectory>,
}

impl Drop for Block {
    fn drop(&mut self) {
        buffers::give(std::mem::take(&mut self.data));
    }
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Block(size={}, restarts={})", self.data.len(), self.num_restarts)
    }
}

impl Block {
    /// Parse the block footer and restart array location. Errors are Corruption (no file name)
    /// or NotSupported for separated key/value blocks.
    pub(crate) fn new(data: Vec<u8>) -> Result<Block> {
        let len = data.len();
        if len < 4 {
            return Err(Error::corrupt(format!("bad block contents: {len} bytes is too short")));
        }
        let footer = u32::from_le_bytes(data[len - 4..].try_into().unwrap());
        if footer & SEPARATED_KV_BIT != 0 {
            return Err(Error::NotSupported(
                "block with separated keys and values (RocksDB 11 feature)".into(),
            ));
        }
        if footer & RESERVED_BIT != 0 {
            return Err(Error::corrupt("bad block footer: reserved bit set"));
        }
        let _uniform = footer & UNIFORM_BIT != 0;
        let num_restarts = footer & NUM_RESTARTS_MASK;
        let mut end = len - 4;
        if footer & HASH_INDEX_BIT != 0 {
            if end < 2 {
                return Err(Error::corrupt("bad block: hash index does not fit"));
            }
            let nb = u16::from_le_bytes([data[end - 2], data[end - 1]]) as usize;
            end = (end - 2)
                .checked_sub(nb)
                .ok_or_else(|| Error::corrupt("bad block: hash index does not fit"))?;
        }
        let restart_offset = end
            .checked_sub(num_restarts as usize * 4)
            .ok_or_else(|| Error::corrupt(format!("bad block: {num_restarts} restarts do not fit in {len} bytes")))?;
        if num_restarts == 0 && restart_offset != 0 {
            return Err(Error::corrupt("bad block: entries without restart points"));
        }
        Ok(Block {
            data,
            restart_offset,
            num_restarts,
            dir: None,
        })
    }

    /// The empty block (no entries).
    pub(crate) fn empty() -> Block {
        Block {
            data: vec![0, 0, 0, 0, 1, 0, 0, 0],
            restart_offset: 0,
            num_restarts: 1,
            dir: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }
    /// Heap bytes held.
    pub(crate) fn memory(&self) -> usize {
        self.data.capacity() + std::mem::size_of::<Block>() + self.dir.as_ref().map_or(0, |d| d.memory())
    }

    /// Build the search directory of a large block whose keys are in bytewise user-key order
    /// (an index block of a table with the bytewise comparator). Without one, or if the restart
    /// keys cannot all be decoded, seeks binary-search the restart array as usual.
    pub(crate) fn build_directory(&mut self, order: &KeyOrder, format: EntryFormat) {
        let internal = match order {
            KeyOrder::Internal(c) if c.kind() == UserCmpKind::Bytewise => true,
            KeyOrder::UserKeyIndex(c) if c.kind() == UserCmpKind::Bytewise => false,
            _ => return,
        };
        let n = self.num_restarts;
        if (n as usize) < block_dir::MIN_ENTRIES || (0..n).any(|i| self.restart_key(i, format).is_none()) {
            return;
        }
        let keys = (0..n).map(|i| {
            let k = self.restart_key(i, format).unwrap_or_default();
            if internal {
                user_key(k)
            } else {
                k
            }
        });
        self.dir = BlockDirectory::build(keys);
    }

    #[cfg(test)]
    /// Entries of the search directory (None: no directory).
    pub(crate) fn directory_len(&self) -> Option<usize> {
        self.dir.as_ref().map(|d| d.len())
    }

    /// Key stored at restart point `i` (shared must be 0).
    fn restart_key(&self, i: u32, format: EntryFormat) -> Option<&[u8]> {
        let p = self.restart_point(i);
        let d = self.data.get(..self.restart_offset)?;
        let mut r = Reader::new(d.get(p..)?);
        let shared = r.varint32()?;
        let non_shared = r.varint32()?;
        if shared != 0 {
            return None;
        }
        if !matches!(format, EntryFormat::Index { delta: true, .. }) {
            r.varint32()?;
        }
        r.bytes(non_shared as usize)
    }

    #[inline]
    fn restart_point(&self, i: u32) -> usize {
        let p = self.restart_offset + 4 * i as usize;
        u32::from_le_bytes(self.data[p..p + 4].try_into().unwrap()) as usize
    }
}

/// How the keys of a block are ordered / compared with seek targets.
#[derive(Clone)]
pub(crate) enum KeyOrder {
    /// Entries and targets are internal keys.
    Internal(InternalKeyComparator),
    /// Entries are user keys (index with `index.key.is.user.key = 1`); targets are internal keys
    /// and only their user-key part is compared.
    UserKeyIndex(InternalKeyComparator),
    /// memcmp order (metaindex, properties).
    Bytewise,
}

impl KeyOrder {
    #[inline]
    fn cmp(&self, entry: &[u8], target: &[u8]) -> Ordering {
        match self {
            KeyOrder::Internal(c) => c.compare(entry, target),
            KeyOrder::UserKeyIndex(c) => c.compare_user(entry, user_key(target)),
            KeyOrder::Bytewise => entry.cmp(target),
        }
    }
}

/// Layout of the entries of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryFormat {
    /// `shared | non_shared | value_len | key_delta | value`.
    Data,
    /// Index entries. `delta`: value-delta encoding (no value_len; full handle when shared == 0,
    /// else varsigned size delta). `first_key`: kBinarySearchWithFirstKey (an lpslice follows
    /// the handle; skipped).
    Index { delta: bool, first_key: bool },
}

/// Iterator over one block. Reuses its key buffer; no allocation per entry.
pub(crate) struct BlockIter {
    block: Arc<Block>,
    order: KeyOrder,
    format: EntryFormat,
    valid: bool,
    /// Offset of the current entry.
    current: usize,
    /// Offset right after the current entry.
    next: usize,
    restart_index: u32,
    key: Vec<u8>,
    val_off: usize,
    val_len: usize,
    handle: BlockHandle,
    handle_buf: [u8; BlockHandle::MAX_ENCODED_LEN],
    handle_len: usize,
    err: Option<Error>,
    /// Data blocks of an ingested external file: the sequence number every key is read with
    /// (the stored one, 0, is replaced; the type byte is kept).
    global_seqno: Option<u64>,
    /// The stored trailer of `key` while it holds the patched one (restored before the next
    /// entry is decoded: the next key's shared prefix may reach into it).
    raw_trailer: Option<[u8; 8]>,
}

impl BlockIter {
    pub(crate) fn new(block: Arc<Block>, order: KeyOrder, format: EntryFormat) -> BlockIter {
        BlockIter {
            block,
            order,
            format,
            valid: false,
            current: 0,
            next: 0,
            restart_index: 0,
            key: Vec::with_capacity(32),
            val_off: 0,
            val_len: 0,
            handle: BlockHandle::default(),
            handle_buf: [0; BlockHandle::MAX_ENCODED_LEN],
            handle_len: 0,
            err: None,
            global_seqno: None,
            raw_trailer: None,
        }
    }

    /// Read every key with sequence number `seqno` (an ingested file's global seqno).
    pub(crate) fn set_global_seqno(&mut self, seqno: Option<u64>) {
        self.global_seqno = seqno;
    }

    /// Replace the sequence number of the key just decoded by the global one.
    #[cold]
    fn apply_global_seqno(&mut self, g: u64) {
        let n = self.key.len();
        if n < 8 {
            return;
        }
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&self.key[n - 8..]);
        let packed = (g << 8) | (u64::from_le_bytes(raw) & 0xff);
        self.key[n - 8..].copy_from_slice(&packed.to_le_bytes());
        self.raw_trailer = Some(raw);
    }

    /// Switch to another block, keeping buffers. The iterator is left unpositioned.
    pub(crate) fn reset(&mut self, block: Arc<Block>) {
        self.block = block;
        self.valid = false;
        self.err = None;
        self.key.clear();
        self.raw_trailer = None;
    }

    pub(crate) fn block(&self) -> &Arc<Block> {
        &self.block
    }

    /// The block handle of the current index entry (index formats only).
    #[inline]
    pub(crate) fn handle(&self) -> BlockHandle {
        self.handle
    }

    fn corrupt(&mut self, msg: &str) {
        self.err = Some(Error::corrupt(format!("bad entry in block: {msg}")));
        self.valid = false;
        self.current = self.block.restart_offset;
        self.next = self.current;
    }

    fn seek_to_restart(&mut self, i: u32) -> bool {
        self.key.clear();
        self.raw_trailer = None;
        self.restart_index = i;
        let p = self.block.restart_point(i);
        if p > self.block.restart_offset {
            self.corrupt("restart point out of range");
            return false;
        }
        self.next = p;
        self.valid = false;
        true
    }

    /// Key stored at restart point `i` (shared must be 0), without touching the state.
    #[inline]
    fn restart_key(&self, i: u32) -> Option<&[u8]> {
        self.block.restart_key(i, self.format)
    }

    /// Decode the entry at `self.next`. Returns false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        self.current = self.next;
        let limit = self.block.restart_offset;
        if self.current >= limit {
            self.valid = false;
            self.current = limit;
            return false;
        }
        let d = &self.block.data[..limit];
        let mut p = self.current;
        macro_rules! varint {
            () => {{
                match d.get(p) {
                    Some(&b) if b < 0x80 => {
                        p += 1;
                        b as u32
                    }
                    Some(_) => match get_varint32(&d[p..]) {
                        Some((v, n)) => {
                            p += n;
                            v
                        }
                        None => {
                            self.corrupt("bad varint");
                            return false;
                        }
                    },
                    None => {
                        self.corrupt("truncated entry");
                        return false;
                    }
                }
            }};
        }
        let shared = varint!() as usize;
        let non_shared = varint!() as usize;
        let value_len = match self.format {
            EntryFormat::Data | EntryFormat::Index { delta: false, .. } => varint!() as usize,
            EntryFormat::Index { delta: true, .. } => 0,
        };
        if let Some(raw) = self.raw_trailer.take() {
            let n = self.key.len();
            self.key[n - 8..].copy_from_slice(&raw);
        }
        if shared > self.key.len() {
            self.corrupt("shared prefix longer than previous key");
            return false;
        }
        let kend = match p.checked_add(non_shared) {
            Some(e) if e <= limit => e,
            _ => {
                self.corrupt("key overruns block");
                return false;
            }
        };
        self.key.truncate(shared);
        self.key.extend_from_slice(&d[p..kend]);
        p = kend;
        match self.format {
            EntryFormat::Data => {
                let vend = match p.checked_add(value_len) {
                    Some(e) if e <= limit => e,
                    _ => {
                        self.corrupt("value overruns block");
                        return false;
                    }
                };
                self.val_off = p;
                self.val_len = value_len;
                self.next = vend;
                if let Some(g) = self.global_seqno {
                    self.apply_global_seqno(g);
                }
            }
            EntryFormat::Index {
                delta: false,
                first_key,
            } => {
                let vend = match p.checked_add(value_len) {
                    Some(e) if e <= limit => e,
                    _ => {
                        self.corrupt("value overruns block");
                        return false;
                    }
                };
                let mut r = Reader::new(&d[p..vend]);
                let h = match BlockHandle::decode_from(&mut r) {
                    Some(h) => h,
                    None => {
                        self.corrupt("bad block handle in index entry");
                        return false;
                    }
                };
                if first_key && r.lpslice().is_none() {
                    self.corrupt("bad first key in index entry");
                    return false;
                }
                self.set_handle(h);
                self.val_off = p;
                self.val_len = value_len;
                self.next = vend;
            }
            EntryFormat::Index { delta: true, first_key } => {
                let mut r = Reader::new(&d[p..]);
                let h = if shared == 0 {
                    BlockHandle::decode_from(&mut r)
                } else {
                    r.varsigned64().and_then(|delta| {
                        let prev = self.handle;
                        let size = (prev.size as i64).checked_add(delta)?;
                        if size < 0 {
                            return None;
                        }
                        let offset = prev.offset.checked_add(prev.size)?.checked_add(5)?;
                        Some(BlockHandle::new(offset, size as u64))
                    })
                };
                let h = match h {
                    Some(h) => h,
                    None => {
                        self.corrupt("bad block handle in index entry");
                        return false;
                    }
                };
                if first_key && r.lpslice().is_none() {
                    self.corrupt("bad first key in index entry");
                    return false;
                }
                let end = p + r.pos();
                self.set_handle(h);
                self.next = end;
            }
        }
        // keep restart_index = last restart point <= current
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        self.valid = true;
        true
    }

    #[inline]
    fn set_handle(&mut self, h: BlockHandle) {
        self.handle = h;
        // encode into the fixed buffer without allocating
        let mut n = 0;
        for mut x in [h.offset, h.size] {
            while x >= 0x80 {
                self.handle_buf[n] = (x as u8) | 0x80;
                x >>= 7;
                n += 1;
            }
            self.handle_buf[n] = x as u8;
            n += 1;
        }
        self.handle_len = n;
    }
}

impl InternalIterator for BlockIter {
    #[inline]
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        if self.block.num_restarts == 0 {
            self.valid = false;
            return;
        }
        if self.seek_to_restart(0) {
            self.parse_next();
        }
    }

    fn seek_to_last(&mut self) {
        if self.block.num_restarts == 0 {
            self.valid = false;
            return;
        }
        if !self.seek_to_restart(self.block.num_restarts - 1) {
            return;
        }
        if !self.parse_next() {
            return;
        }
        while self.next < self.block.restart_offset {
            if !self.parse_next() {
                return;
            }
        }
    }

    fn seek(&mut self, target: &[u8]) {
        let n = self.block.num_restarts;
        if n == 0 {
            self.valid = false;
            return;
        }
        let mut left = 0u32;
        let mut right = n - 1;
        if let Some(d) = &self.block.dir {
            // Entries before `a` are below the target, entries from `b` on above it: the last
            // restart below the target is in `a - 1 ..= b - 1` (or is 0 when there is none).
            let (a, b) = d.candidates(user_key(target));
            left = a.saturating_sub(1) as u32;
            right = (b.saturating_sub(1) as u32).max(left);
        }
        while left < right {
            let mid = left + (right - left).div_ceil(2);
            let ord = match self.restart_key(mid) {
                Some(k) => self.order.cmp(k, target),
                None => {
                    self.corrupt("bad restart entry");
                    return;
                }
            };
            if ord == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        if !self.seek_to_restart(left) {
            return;
        }
        loop {
            if !self.parse_next() {
                return;
            }
            if self.order.cmp(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.seek(target);
        if self.err.is_some() {
            return;
        }
        if !self.valid {
            self.seek_to_last();
        }
        while self.valid && self.order.cmp(&self.key, target) == Ordering::Greater {
            self.prev();
        }
    }

    #[inline]
    fn next(&mut self) {
        debug_assert!(self.valid);
        self.parse_next();
    }

    fn prev(&mut self) {
        debug_assert!(self.valid);
        let original = self.current;
        while self.block.restart_point(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.valid = false;
                self.current = self.block.restart_offset;
                self.next = self.current;
                return;
            }
            self.restart_index -= 1;
        }
        if !self.seek_to_restart(self.restart_index) {
            return;
        }
        loop {
            if !self.parse_next() {
                if self.err.is_none() {
                    self.corrupt("restart points out of order");
                }
                return;
            }
            if self.next >= original {
                if self.next > original {
                    self.corrupt("entries overlap");
                }
                return;
            }
        }
    }

    #[inline]
    fn key(&self) -> &[u8] {
        &self.key
    }

    #[inline]
    fn value(&self) -> &[u8] {
        match self.format {
            EntryFormat::Data => &self.block.data[self.val_off..self.val_off + self.val_len],
            EntryFormat::Index { .. } => &self.handle_buf[..self.handle_len],
        }
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

// ------------------------------------------------------------------------------------------------

/// Builds a block. Keys must be added in the block's order.
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    interval: usize,
    last_key: Vec<u8>,
    num_entries: usize,
    value_delta: bool,
}

impl BlockBuilder {
    /// `interval`: restart interval (>= 1). `value_delta`: index value-delta encoding (fv >= 4).
    pub(crate) fn new(interval: usize, value_delta: bool) -> BlockBuilder {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            interval: interval.max(1),
            last_key: Vec::new(),
            num_entries: 0,
            value_delta,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// RocksDB's `CurrentSizeEstimate`.
    #[inline]
    pub(crate) fn current_size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// RocksDB's `EstimateSizeAfterKV`.
    pub(crate) fn estimate_size_after_kv(&self, key_len: usize, value_len: usize) -> usize {
        let restart = self.counter >= self.interval;
        let mut e = self.current_size_estimate() + key_len;
        e += if !self.value_delta || restart {
            value_len
        } else {
            value_len / 2
        };
        if restart {
            e += 4;
        }
        e += 4;
        e += crate::coding::varint_len(key_len as u64);
        if !self.value_delta || restart {
            e += crate::coding::varint_len(value_len as u64);
        }
        e
    }

    /// Add an entry with a plain value.
    #[inline]
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        self.add_impl(key, value, None)
    }

    /// Add an index entry: `full` is the encoded handle (plus optional first key), `delta` the
    /// value used when the entry shares a prefix and value-delta encoding is on.
    pub(crate) fn add_with_delta(&mut self, key: &[u8], full: &[u8], delta: Option<&[u8]>) {
        self.add_impl(key, full, delta)
    }

    fn add_impl(&mut self, key: &[u8], value: &[u8], delta: Option<&[u8]>) {
        let mut shared = 0;
        if self.counter >= self.interval {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        } else {
            shared = self.last_key.iter().zip(key.iter()).take_while(|(a, b)| a == b).count();
        }
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        if self.value_delta {
            self.buf.extend_from_slice(&key[shared..]);
            match delta {
                Some(dv) if shared > 0 => self.buf.extend_from_slice(dv),
                _ => self.buf.extend_from_slice(value),
            }
        } else {
            put_varint32(&mut self.buf, value.len() as u32);
            self.buf.extend_from_slice(&key[shared..]);
            self.buf.extend_from_slice(value);
        }
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Append the restart array and footer; returns the block bytes and leaves the builder
    /// empty (call [`BlockBuilder::reset_with`] to reuse a buffer).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        for &r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        self.buf.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        let out = std::mem::take(&mut self.buf);
        self.reset_with(Vec::new());
        out
    }

    /// Reset to empty, reusing `buf`'s allocation.
    pub(crate) fn reset_with(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.buf = buf;
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_buffer_pool_follows_the_latest_block_sizes() {
        // a full pool of small buffers, then larger blocks: the pool must come to hold the
        // larger buffers and serve reads of their size
        for _ in 0..64 {
            buffers::give(Vec::with_capacity(4000));
        }
        for _ in 0..64 {
            buffers::give(Vec::with_capacity(4200));
        }
        for _ in 0..16 {
            let b = buffers::take(4100);
            assert_eq!(b.len(), 4100);
            assert_eq!(b.capacity(), 4200, "a pooled buffer, not a fresh one");
            buffers::give(b);
        }
        // a buffer far larger than the read is not used for it
        for _ in 0..64 {
            buffers::give(Vec::with_capacity(60_000));
        }
        assert_eq!(buffers::take(4100).capacity(), 4100);
    }
    use crate::coding::put_varsigned64;
    use crate::key::{make_internal_key, vt};

    fn ikey(i: u32) -> Vec<u8> {
        make_internal_key(format!("key{:06}", i).as_bytes(), 1000 - i as u64 % 7, vt::VALUE)
    }

    fn build(n: u32, interval: usize) -> Vec<u8> {
        let mut b = BlockBuilder::new(interval, false);
        for i in 0..n {
            b.add(&ikey(i * 2), format!("v{i}").as_bytes());
        }
        b.finish()
    }

    fn iter(data: Vec<u8>) -> BlockIter {
        BlockIter::new(
            Arc::new(Block::new(data).unwrap()),
            KeyOrder::Internal(InternalKeyComparator::default()),
            EntryFormat::Data,
        )
    }

    #[test]
    fn dropped_blocks_give_their_buffers_to_the_next_read() {
        let b = Block::new(build(200, 16)).unwrap();
        let (ptr, cap) = (b.data.as_ptr(), b.data.capacity());
        assert!(cap >= 1024, "{cap}");
        drop(b);
        let again = buffers::take(cap - 3);
        assert_eq!(again.as_ptr(), ptr, "the buffer was reused");
        assert_eq!(again.len(), cap - 3);
        // too small or too large buffers are not kept
        buffers::give(vec![0; 100]);
        buffers::give(vec![0; 1 << 20]);
        assert_ne!(buffers::take(100).capacity(), 0);
        let big = buffers::take(1 << 20);
        assert_eq!(big.len(), 1 << 20);
    }

    #[test]
    fn tiny_block_matches_spec() {
        let mut b = BlockBuilder::new(16, false);
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            b.add(&make_internal_key(*k, i as u64 + 1, vt::VALUE), &[b'1' + i as u8]);
        }
        let data = b.finish();
        assert_eq!(data, crate::table::block_based::format::tests::tiny_data_block());
        assert_eq!(BlockBuilder::new(16, false).finish(), vec![0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn roundtrip_all_intervals() {
        for interval in [1usize, 2, 3, 16, 100] {
            for n in [0u32, 1, 2, 15, 16, 17, 100] {
                let mut it = iter(build(n, interval));
                it.seek_to_first();
                for i in 0..n {
                    assert!(it.valid());
                    assert_eq!(it.key(), ikey(i * 2).as_slice());
                    assert_eq!(it.value(), format!("v{i}").as_bytes());
                    it.next();
                }
                assert!(!it.valid());
                it.seek_to_last();
                for i in (0..n).rev() {
                    assert!(it.valid(), "interval {interval} n {n} i {i}");
                    assert_eq!(it.key(), ikey(i * 2).as_slice());
                    it.prev();
                }
                assert!(!it.valid());
                it.status().unwrap();
                // seeks for present and absent keys
                for t in 0..2 * n + 1 {
                    it.seek(&ikey(t));
                    let want = t.div_ceil(2);
                    if want < n {
                        assert!(it.valid());
                        assert_eq!(it.key(), ikey(want * 2).as_slice());
                    } else {
                        assert!(!it.valid());
                    }
                    it.seek_for_prev(&ikey(t));
                    let want = t / 2;
                    if n > 0 && want < n {
                        assert!(it.valid(), "sfp {t}");
                        assert_eq!(it.key(), ikey(want.min(n - 1) * 2).as_slice());
                    } else if n > 0 {
                        assert_eq!(it.key(), ikey((n - 1) * 2).as_slice());
                    } else {
                        assert!(!it.valid());
                    }
                }
                it.status().unwrap();
            }
        }
    }

    #[test]
    fn delta_index_roundtrip() {
        for interval in [1usize, 4] {
            let mut b = BlockBuilder::new(interval, true);
            let mut handles = Vec::new();
            let mut off = 0u64;
            let mut prev: Option<BlockHandle> = None;
            for i in 0..50u64 {
                let h = BlockHandle::new(off, 1000 + (i * 37) % 200);
                off += h.size + 5;
                let key = format!("sep{:04}", i);
                let full = h.encoded();
                let mut delta = Vec::new();
                if let Some(p) = prev {
                    put_varsigned64(&mut delta, h.size as i64 - p.size as i64);
                }
                b.add_with_delta(key.as_bytes(), &full, prev.map(|_| delta.as_slice()));
                prev = Some(h);
                handles.push((key, h));
            }
            let data = b.finish();
            let c = InternalKeyComparator::default();
            let mut it = BlockIter::new(
                Arc::new(Block::new(data).unwrap()),
                KeyOrder::UserKeyIndex(c),
                EntryFormat::Index {
                    delta: true,
                    first_key: false,
                },
            );
            it.seek_to_first();
            for (k, h) in &handles {
                assert!(it.valid());
                assert_eq!(it.key(), k.as_bytes());
                assert_eq!(it.handle(), *h);
                assert_eq!(it.value(), h.encoded().as_slice());
                it.next();
            }
            assert!(!it.valid());
            it.seek_to_last();
            for (k, h) in handles.iter().rev() {
                assert_eq!(it.key(), k.as_bytes());
                assert_eq!(it.handle(), *h);
                it.prev();
            }
            for (i, (k, h)) in handles.iter().enumerate() {
                it.seek(&make_internal_key(k.as_bytes(), 5, vt::VALUE));
                assert_eq!(it.handle(), *h, "{i}");
            }
            it.status().unwrap();
        }
    }

    #[test]
    fn hash_index_footer_and_flags() {
        let mut data = build(10, 4);
        // insert fake hash buckets: 3 buckets + fixed16 count before the footer
        let n = data.len();
        let footer = u32::from_le_bytes(data[n - 4..].try_into().unwrap());
        let mut d2 = data[..n - 4].to_vec();
        d2.extend_from_slice(&[255, 1, 254, 3, 0]);
        d2.extend_from_slice(&(footer | HASH_INDEX_BIT).to_le_bytes());
        let mut it = iter(d2);
        it.seek_to_first();
        let mut count = 0;
        while it.valid() {
            count += 1;
            it.next();
        }
        assert_eq!(count, 10);
        it.status().unwrap();
        // separated KV rejected; uniform bit ignored
        let n = data.len();
        let mut d3 = data.clone();
        d3[n - 1] |= 0x10;
        assert!(Block::new(d3).unwrap_err().is_not_supported());
        data[n - 1] |= 0x20;
        let mut it = iter(data);
        it.seek_to_last();
        assert!(it.valid());
    }

    #[test]
    fn garbage_never_panics() {
        let data = build(40, 4);
        for i in 0..data.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut d = data.clone();
                d[i] ^= x;
                let Ok(b) = Block::new(d) else { continue };
                let mut it = BlockIter::new(
                    Arc::new(b),
                    KeyOrder::Internal(InternalKeyComparator::default()),
                    EntryFormat::Data,
                );
                it.seek_to_first();
                let mut n = 0;
                while it.valid() && n < 1000 {
                    let _ = (it.key(), it.value());
                    it.next();
                    n += 1;
                }
                it.seek_to_last();
                n = 0;
                while it.valid() && n < 1000 {
                    it.prev();
                    n += 1;
                }
                it.seek(&ikey(33));
                it.seek_for_prev(&ikey(33));
            }
        }
        for cut in 0..data.len() {
            if let Ok(b) = Block::new(data[..cut].to_vec()) {
                let mut it = BlockIter::new(
                    Arc::new(b),
                    KeyOrder::Bytewise,
                    EntryFormat::Index {
                        delta: true,
                        first_key: true,
                    },
                );
                it.seek_to_first();
                while it.valid() {
                    it.next();
                }
                it.seek_to_last();
                it.seek(b"key");
            }
        }
    }
}
