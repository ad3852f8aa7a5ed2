//! Reading PlainTable files (written by RocksDB or by [`super::PlainTableBuilder`]).
//!
//! The whole file is held in memory: the mapping when the file was opened with
//! `allow_mmap_reads` (its [`RandomAccessFile::mmap_bytes`]), else a copy read at open. The
//! index comes from the file (`store_index_in_file`) or is built at open by decoding every
//! record, which also checks that keys are in order and that the record count matches the
//! properties (the format has no checksums; this is the only integrity check it allows).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{decode_fixed32, get_varint32};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::key::{trailer, user_key, InternalKeyComparator};
use crate::slice_transform::PrefixExtractor;
use crate::table::properties::TableProperties;
use crate::table::reader_options::TableReaderOptions;

use super::bloom::PlainBloom;
use super::coding::{view_plain, KeyDecoder, Record};
use super::format::{
    KeyEncodingType, PlainTableFactoryOptions, BLOOM_BLOCK_NAME, INDEX_BLOCK_NAME, MAX_FILE_SIZE, PROP_ENCODING_TYPE,
    PROP_NUM_BLOOM_BLOCKS,
};
use super::index::{num_buckets, slice_hash, IndexBuilder, Lookup, PlainIndex};
use super::props::read_tail;

enum FileData {
    /// The file's own mapping (`mmap_bytes` of this file).
    Mapped(Arc<dyn RandomAccessFile>),
    Owned(Vec<u8>),
}

/// An open PlainTable file.
pub(crate) struct PlainTable {
    data: FileData,
    file_name: String,
    file_size: u64,
    /// End of the record area (`rocksdb.data.size`).
    data_end: usize,
    icmp: InternalKeyComparator,
    encoding: KeyEncodingType,
    fixed_len: u32,
    /// None: total-order mode (every key has the empty prefix, one index bucket).
    prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    full_scan: bool,
    pub(super) index: Option<PlainIndex>,
    pub(super) bloom: Option<PlainBloom>,
    /// Offsets of seekable records in key order, for total-order seeks in prefix mode.
    pub(super) seek_points: Vec<u32>,
    props: TableProperties,
}

impl std::fmt::Debug for PlainTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainTable({}, {} bytes)", self.file_name, self.file_size)
    }
}

impl PlainTable {
    /// Open a plain table. `prefix` must be the extractor the file was built with (its name is
    /// in `rocksdb.prefix.extractor.name`) unless `plain.full_scan_mode`.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
        opts: &TableReaderOptions,
        plain: &PlainTableFactoryOptions,
        prefix: Option<Arc<dyn PrefixExtractor>>,
    ) -> Result<PlainTable> {
        plain.validate()?;
        if file_size > MAX_FILE_SIZE {
            return Err(Error::NotSupported(format!(
                "{file_name}: file size {file_size} exceeds the PlainTable limit of {MAX_FILE_SIZE} bytes"
            )));
        }
        let data = match file.mmap_bytes() {
            Some(b) if b.len() as u64 == file_size => FileData::Mapped(file),
            _ => FileData::Owned(
                file.read_at(0, file_size as usize)
                    .map_err(|e| e.in_file(&file_name, Some(0)))?,
            ),
        };
        let mut t = PlainTable {
            data,
            file_name,
            file_size,
            data_end: 0,
            icmp: opts.icmp.clone(),
            encoding: KeyEncodingType::Plain,
            fixed_len: 0,
            prefix_extractor: None,
            full_scan: plain.full_scan_mode,
            index: None,
            bloom: None,
            seek_points: Vec::new(),
            props: TableProperties::default(),
        };
        let tail = read_tail(t.bytes()).map_err(|e| e.in_file(&t.file_name, None))?;
        let props = tail.props;

        let in_file = props.prefix_extractor_name.as_str();
        if !plain.full_scan_mode && !in_file.is_empty() && in_file != "nullptr" {
            match &prefix {
                None => {
                    return Err(Error::invalid(format!(
                        "{}: prefix_extractor is missing; the PlainTable was built with {in_file}",
                        t.file_name
                    )))
                }
                Some(p) if p.name() != in_file => {
                    return Err(Error::invalid(format!(
                        "{}: prefix_extractor {} does not match {in_file}, which the PlainTable was built with",
                        t.file_name,
                        p.name()
                    )))
                }
                Some(_) => {}
            }
        }
        t.prefix_extractor = prefix;
        t.encoding = match props.raw.get(PROP_ENCODING_TYPE) {
            None => KeyEncodingType::Plain,
            Some(v) => match decode_fixed32(v) {
                Some(0) => KeyEncodingType::Plain,
                Some(1) => KeyEncodingType::Prefix,
                _ => return Err(t.corruption(0, format!("bad {PROP_ENCODING_TYPE} property {v:?}"))),
            },
        };
        t.fixed_len = u32::try_from(props.fixed_key_len)
            .map_err(|_| t.corruption(0, format!("bad fixed key length {}", props.fixed_key_len)))?;
        if props.data_size > tail.footer_offset {
            return Err(t.corruption(
                0,
                format!(
                    "data size {} runs past the table's blocks (footer at {})",
                    props.data_size, tail.footer_offset
                ),
            ));
        }
        t.data_end = props.data_size as usize;
        t.props = props;

        if !t.full_scan {
            t.populate_index(plain, &tail.meta)?;
        }
        Ok(t)
    }

    fn corruption(&self, off: u64, msg: String) -> Error {
        Error::corruption(&self.file_name, Some(off), msg)
    }

    /// The whole file.
    fn bytes(&self) -> &[u8] {
        match &self.data {
            FileData::Mapped(f) => f.mmap_bytes().unwrap_or(&[]),
            FileData::Owned(v) => v,
        }
    }

    /// The record area.
    fn records(&self) -> &[u8] {
        &self.bytes()[..self.data_end]
    }

    fn total_order(&self) -> bool {
        self.prefix_extractor.is_none()
    }

    fn prefix_of<'a>(&self, user_key: &'a [u8]) -> &'a [u8] {
        match &self.prefix_extractor {
            Some(p) => p.transform(user_key),
            None => &[],
        }
    }

    fn populate_index(
        &mut self,
        plain: &PlainTableFactoryOptions,
        meta: &std::collections::BTreeMap<String, crate::table::format::BlockHandle>,
    ) -> Result<()> {
        if self.total_order() && plain.hash_table_ratio != 0.0 {
            return Err(Error::NotSupported(format!(
                "{}: PlainTable needs a prefix_extractor for hash lookups; without one set \
                 plain_table_options.hash_table_ratio = 0 (binary search) or full_scan_mode",
                self.file_name
            )));
        }
        // A stored index is only usable by a reader in the same mode it was built for.
        let built_total_order = matches!(self.props.prefix_extractor_name.as_str(), "" | "nullptr");
        let stored = meta
            .get(INDEX_BLOCK_NAME)
            .filter(|_| built_total_order == self.total_order());
        if let Some(h) = stored {
            let bytes = self.bytes()[h.offset as usize..(h.offset + h.size) as usize].to_vec();
            self.index = Some(PlainIndex::new(bytes).map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?);
            if let Some(bh) = meta.get(BLOOM_BLOCK_NAME).filter(|h| h.size > 0) {
                let lines = match self.props.raw.get(PROP_NUM_BLOOM_BLOCKS) {
                    Some(v) => get_varint32(v).map(|x| x.0).unwrap_or(0),
                    None => 0,
                };
                let bits = self.bytes()[bh.offset as usize..(bh.offset + bh.size) as usize].to_vec();
                self.bloom = Some(PlainBloom::from_raw(bits, lines).ok_or_else(|| {
                    self.corruption(bh.offset, format!("bloom block too small for {lines} cache lines"))
                })?);
            }
            if !self.total_order() {
                self.seek_points = self.stored_seek_points()?;
            }
            self.props
                .raw
                .insert("plain_table_hash_table_size".into(), b"0".to_vec());
            self.props
                .raw
                .insert("plain_table_sub_index_size".into(), b"0".to_vec());
            return Ok(());
        }

        // Build the index by decoding every record.
        let mut ib = IndexBuilder::new(plain.index_sparseness);
        let mut key_hashes = Vec::new();
        let mut dec = KeyDecoder::new(self.encoding, self.fixed_len);
        let mut prev: Vec<u8> = Vec::new();
        let mut off = 0usize;
        let mut count = 0u64;
        let bloom_on = plain.bloom_bits_per_key > 0;
        while off < self.data_end {
            let rec = dec
                .decode(self.records(), off)
                .map_err(|e| e.in_file(&self.file_name, None))?;
            let key = dec.key();
            if count == 0 && !rec.seekable {
                return Err(self.corruption(off as u64, "first record of a plain table is not a full key".into()));
            }
            if count > 0 && self.icmp.compare(&prev, key) != Ordering::Less {
                return Err(self.corruption(off as u64, "plain table keys out of order".into()));
            }
            let uk = user_key(key);
            ib.add(self.prefix_of(uk), off as u32, rec.seekable);
            if bloom_on && self.total_order() {
                key_hashes.push(slice_hash(uk));
            }
            prev.clear();
            prev.extend_from_slice(key);
            count += 1;
            off = rec.next;
        }
        if count != self.props.num_entries {
            return Err(self.corruption(
                0,
                format!(
                    "plain table holds {count} records but its properties say {}",
                    self.props.num_entries
                ),
            ));
        }
        if bloom_on {
            // Built here, never written: the cache-local layout (one cache line per lookup, as
            // RocksDB's in-memory DynamicBloom) rather than the file layout's six scattered probes.
            let bits = plain.bloom_bits_per_key as u64;
            if self.total_order() {
                self.bloom = PlainBloom::with_bits_local(key_hashes.len() as u64 * bits);
                if let Some(b) = &mut self.bloom {
                    key_hashes.iter().for_each(|&h| b.add_hash(h));
                }
            } else {
                self.bloom = PlainBloom::with_bits_local(ib.num_prefixes() as u64 * bits);
                if let Some(b) = &mut self.bloom {
                    ib.prefix_hashes().iter().for_each(|&h| b.add_hash(h));
                }
            }
        }
        if !self.total_order() {
            self.seek_points = ib.record_offsets().collect();
        }
        let buckets = num_buckets(self.total_order(), ib.num_prefixes(), plain.hash_table_ratio);
        let index = PlainIndex::new(ib.finish(buckets)).map_err(|e| e.in_file(&self.file_name, None))?;
        self.props.raw.insert(
            "plain_table_hash_table_size".into(),
            (index.num_buckets() as u64 * 4).to_string().into_bytes(),
        );
        self.props.raw.insert(
            "plain_table_sub_index_size".into(),
            index.sub_index_size().to_string().into_bytes(),
        );
        self.index = Some(index);
        Ok(())
    }

    /// Every record offset a stored index holds, in file (= key) order: the starting points of
    /// total-order seeks in prefix mode.
    fn stored_seek_points(&self) -> Result<Vec<u32>> {
        let Some(index) = &self.index else {
            return Ok(Vec::new());
        };
        let mut pts = Vec::new();
        for b in 0..index.num_buckets() {
            match index.lookup(b).map_err(|e| e.in_file(&self.file_name, None))? {
                Lookup::Empty => {}
                Lookup::Direct(off) => pts.push(off),
                Lookup::Sub { pos, count } => pts.extend((0..count).map(|i| index.sub_offset(pos, i))),
            }
        }
        pts.sort_unstable();
        pts.dedup();
        Ok(pts)
    }

    /// Decode the record at `off` (after forgetting the previous key).
    fn key_at(&self, dec: &mut KeyDecoder, off: u32) -> Result<()> {
        if off as usize >= self.data_end {
            return Err(self.corruption(off as u64, "index points past the records".into()));
        }
        dec.reset();
        dec.decode(self.records(), off as usize)
            .map(|_| ())
            .map_err(|e| e.in_file(&self.file_name, None))
    }

    /// The record at `off` after the one `dec` decoded last (any record, for `Plain`
    /// encoding): (user key, trailer, record). `Plain`-encoded keys are read in place, never
    /// copied; `Prefix`-encoded ones are decoded into `dec`.
    #[inline]
    fn next_key<'a>(&'a self, dec: &'a mut KeyDecoder, off: usize) -> Result<(&'a [u8], u64, Record)> {
        let r = match self.encoding {
            KeyEncodingType::Plain => {
                view_plain(self.records(), off, self.fixed_len).map(|v| (v.user_key, v.trailer, v.rec))
            }
            KeyEncodingType::Prefix => match dec.decode(self.records(), off) {
                Ok(rec) => Ok((user_key(dec.key()), trailer(dec.key()), rec)),
                Err(e) => Err(e),
            },
        };
        r.map_err(|e| e.in_file(&self.file_name, None))
    }

    /// The record at index offset `off` (a record decodable on its own): as
    /// [`next_key`](Self::next_key), after forgetting the previous key.
    #[inline]
    fn key_view<'a>(&'a self, dec: &'a mut KeyDecoder, off: u32) -> Result<(&'a [u8], u64, Record)> {
        if off as usize >= self.data_end {
            return Err(self.corruption(off as u64, "index points past the records".into()));
        }
        dec.reset();
        self.next_key(dec, off as usize)
    }

    /// Internal-key order of (user key `uk`, `trailer`) against internal key `target`.
    #[inline]
    fn compare_to(&self, uk: &[u8], trailer: u64, target: &[u8]) -> Ordering {
        match self.icmp.compare_user(uk, user_key(target)) {
            Ordering::Equal => crate::key::trailer(target).cmp(&trailer),
            o => o,
        }
    }

    /// Where to start scanning for `target` with this prefix: (offset, whether the record there
    /// is known to have the prefix). `data_end` when nothing can match. RocksDB's `GetOffset`.
    fn get_offset(&self, dec: &mut KeyDecoder, target: &[u8], prefix: &[u8], hash: u32) -> Result<(usize, bool)> {
        let Some(index) = &self.index else {
            return Ok((0, false));
        };
        let (pos, count) = match index.lookup(hash).map_err(|e| e.in_file(&self.file_name, None))? {
            Lookup::Empty => return Ok((self.data_end, false)),
            Lookup::Direct(off) => return Ok((off as usize, false)),
            Lookup::Sub { pos, count } => (pos, count),
        };
        let (mut low, mut high) = (0u32, count);
        while high - low > 1 {
            let mid = (low + high) / 2;
            let off = index.sub_offset(pos, mid);
            let (uk, tr, _) = self.key_view(dec, off)?;
            match self.compare_to(uk, tr, target) {
                Ordering::Less => low = mid,
                Ordering::Equal => return Ok((off as usize, true)),
                Ordering::Greater => high = mid,
            }
        }
        let low_off = index.sub_offset(pos, low);
        let (uk, _, _) = self.key_view(dec, low_off)?;
        if self.prefix_of(uk) == prefix {
            Ok((low_off as usize, true))
        } else if low + 1 < count {
            Ok((index.sub_offset(pos, low + 1) as usize, false))
        } else {
            Ok((self.data_end, false))
        }
    }

    pub(super) fn bloom_admits(&self, hash: u32) -> bool {
        self.bloom.as_ref().is_none_or(|b| b.may_contain_hash(hash))
    }

    /// Cache hints for a batched lookup of user key `uk`, no effect on results. Stage 0
    /// prefetches the bloom line and the index bucket of its prefix; stage 1 (once stage 0 ran
    /// for the whole batch) reads those and prefetches the record a direct index entry points
    /// at, so the batch's misses overlap instead of following one another.
    pub(crate) fn prefetch_lookup(&self, uk: &[u8], stage: u8) {
        if self.full_scan {
            return;
        }
        let (_, hash, bloom_hash) = self.lookup_hashes(uk);
        if stage == 0 {
            if let Some(b) = &self.bloom {
                b.prefetch(bloom_hash);
            }
            if let Some(i) = &self.index {
                i.prefetch(hash);
            }
            return;
        }
        if !self.bloom_admits(bloom_hash) {
            return;
        }
        if let Some(Ok(Lookup::Direct(off))) = self.index.as_ref().map(|i| i.lookup(hash)) {
            let records = self.records();
            crate::table::hints::prefetch_at(records, off as usize);
            crate::table::hints::prefetch_at(records, off as usize + 64);
        }
    }

    /// The hash the bloom and index use for a lookup of `uk`: (prefix, index hash, bloom hash).
    fn lookup_hashes<'a>(&self, uk: &'a [u8]) -> (&'a [u8], u32, u32) {
        if self.total_order() {
            (&[], 0, slice_hash(uk))
        } else {
            let p = self.prefix_of(uk);
            let h = slice_hash(p);
            (p, h, h)
        }
    }

    /// The first entry with internal key >= `lookup_ikey` if it has the same user key, handed
    /// to `found` (internal key, value). Same contract as the block-based `Table::get_with`;
    /// `verify` and `fill_cache` have nothing to act on here. InvalidArgument in full-scan mode.
    /// The value handed out is always a slice of this table's own file bytes (pinned reads
    /// keep the table alive and point into it).
    pub(crate) fn get_with<R>(
        &self,
        lookup_ikey: &[u8],
        _verify: bool,
        _fill_cache: bool,
        found: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<Option<R>> {
        if self.full_scan {
            return Err(Error::invalid(format!(
                "{}: get is not allowed on a PlainTable opened in full_scan_mode",
                self.file_name
            )));
        }
        if lookup_ikey.len() < 8 {
            return Err(Error::invalid("plain table lookup key is not an internal key"));
        }
        let uk = user_key(lookup_ikey);
        let (prefix, hash, bloom_hash) = self.lookup_hashes(uk);
        // The index bucket does not depend on the bloom's answer: ask for both cache lines
        // before waiting on either.
        if let Some(i) = &self.index {
            i.prefetch(hash);
        }
        if !self.bloom_admits(bloom_hash) {
            return Ok(None);
        }
        let mut dec = KeyDecoder::new(self.encoding, self.fixed_len);
        let (mut off, mut prefix_match) = self.get_offset(&mut dec, lookup_ikey, prefix, hash)?;
        if off > self.data_end {
            return Err(self.corruption(off as u64, "index points past the records".into()));
        }
        dec.reset();
        while off < self.data_end {
            let (key, tr, rec) = self.next_key(&mut dec, off)?;
            off = rec.next;
            if !prefix_match {
                if self.prefix_of(key) != prefix {
                    return Ok(None);
                }
                prefix_match = true;
            }
            if self.compare_to(key, tr, lookup_ikey) != Ordering::Less {
                if self.icmp.compare_user(key, uk) != Ordering::Equal {
                    return Ok(None);
                }
                let v = &self.records()[rec.value_off..rec.value_off + rec.value_len];
                // The internal key, put back together on the stack for the usual key sizes.
                let mut buf = [0u8; 64];
                let mut heap = Vec::new();
                let ikey: &mut [u8] = if key.len() + 8 <= buf.len() {
                    &mut buf[..key.len() + 8]
                } else {
                    heap.resize(key.len() + 8, 0);
                    &mut heap
                };
                ikey[..key.len()].copy_from_slice(key);
                ikey[key.len()..].copy_from_slice(&tr.to_le_bytes());
                return Ok(Some(found(ikey, v)));
            }
        }
        Ok(None)
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// The first entry with internal key >= `lookup_ikey` if it has the same user key.
    pub(crate) fn get(&self, lookup_ikey: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.get_with(lookup_ikey, false, false, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Where a total-order seek for `target` may start: a seekable record at or before the
    /// first key >= target.
    fn seek_start(&self, dec: &mut KeyDecoder, target: &[u8]) -> Result<usize> {
        if self.full_scan {
            return Ok(0);
        }
        if self.total_order() {
            let (off, _) = self.get_offset(dec, target, &[], 0)?;
            return Ok(off.min(self.data_end));
        }
        // Largest seek point whose key is < target.
        let pts = &self.seek_points;
        let (mut lo, mut hi) = (0usize, pts.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            self.key_at(dec, pts[mid])?;
            if self.icmp.compare(dec.key(), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(if lo == 0 { 0 } else { pts[lo - 1] as usize })
    }

    /// A total-order iterator (RocksDB's iterator with `total_order_seek`).
    pub(crate) fn iter(self: &Arc<Self>) -> PlainTableIterator {
        PlainTableIterator::new(self.clone(), false)
    }

    #[cfg(test)]
    /// A prefix-seek iterator (RocksDB's default for a table with a prefix extractor): `seek`
    /// positions within the target's prefix using the hash index and bloom, and is invalid if
    /// the prefix is absent; results past that prefix are unspecified, as in RocksDB.
    pub(crate) fn prefix_iter(self: &Arc<Self>) -> PlainTableIterator {
        let prefix_seek = !self.full_scan && !self.total_order();
        PlainTableIterator::new(self.clone(), prefix_seek)
    }

    pub(crate) fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// Heap bytes held for this table: index, bloom, seek points, and the file copy when it is
    /// not mapped.
    pub(crate) fn approximate_memory_usage(&self) -> usize {
        let owned = match &self.data {
            FileData::Owned(v) => v.capacity(),
            FileData::Mapped(_) => 0,
        };
        self.index.as_ref().map_or(0, |i| i.memory())
            + self.bloom.as_ref().map_or(0, |b| b.memory())
            + self.seek_points.capacity() * 4
            + owned
    }

    /// Whether the table reads from a memory mapping.
    pub(crate) fn is_mmapped(&self) -> bool {
        matches!(self.data, FileData::Mapped(_))
    }

    pub(crate) fn file_name(&self) -> &str {
        &self.file_name
    }

    #[cfg(test)]
    pub(crate) fn encoding_type(&self) -> KeyEncodingType {
        self.encoding
    }
}

/// Iterator over a [`PlainTable`]. Forward only: `prev`, `seek_to_last` and `seek_for_prev`
/// leave it invalid with a NotSupported status, as RocksDB's PlainTable iterator does.
pub(crate) struct PlainTableIterator {
    table: Arc<PlainTable>,
    dec: KeyDecoder,
    prefix_seek: bool,
    valid: bool,
    next_off: usize,
    value: (usize, usize),
    err: Option<Error>,
}

impl PlainTableIterator {
    fn new(table: Arc<PlainTable>, prefix_seek: bool) -> PlainTableIterator {
        let dec = KeyDecoder::new(table.encoding, table.fixed_len);
        PlainTableIterator {
            table,
            dec,
            prefix_seek,
            valid: false,
            next_off: 0,
            value: (0, 0),
            err: None,
        }
    }

    fn fail(&mut self, e: Error) {
        self.valid = false;
        self.err = Some(e);
    }

    /// Decode the record at `next_off` (or become invalid at the end).
    fn step(&mut self) {
        let t = self.table.clone();
        if self.next_off >= t.data_end {
            self.valid = false;
            return;
        }
        match self.dec.decode(t.records(), self.next_off) {
            Ok(rec) => {
                self.value = (rec.value_off, rec.value_len);
                self.next_off = rec.next;
                self.valid = true;
            }
            Err(e) => self.fail(e.in_file(&t.file_name, None)),
        }
    }

    fn scan_to(&mut self, target: &[u8]) {
        let t = self.table.clone();
        while self.valid && t.icmp.compare(self.dec.key(), target) == Ordering::Less {
            self.step();
        }
    }

    fn seek_prefix(&mut self, target: &[u8]) {
        let t = self.table.clone();
        let (prefix, hash, bloom_hash) = t.lookup_hashes(user_key(target));
        if !t.bloom_admits(bloom_hash) {
            return;
        }
        let (off, mut prefix_match) = match t.get_offset(&mut self.dec, target, prefix, hash) {
            Ok(x) => x,
            Err(e) => return self.fail(e),
        };
        self.dec.reset();
        self.next_off = off;
        self.step();
        while self.valid {
            if !prefix_match {
                if t.prefix_of(user_key(self.dec.key())) != prefix {
                    self.valid = false;
                    return;
                }
                prefix_match = true;
            }
            if t.icmp.compare(self.dec.key(), target) != Ordering::Less {
                return;
            }
            self.step();
        }
    }

    fn unsupported(&mut self, what: &str) {
        self.fail(Error::NotSupported(format!(
            "{what} is not supported by PlainTable iterators"
        )));
    }
}

impl InternalIterator for PlainTableIterator {
    fn valid(&self) -> bool {
        self.valid
    }
    fn seek_to_first(&mut self) {
        self.err = None;
        self.dec.reset();
        self.next_off = 0;
        self.step();
    }
    fn seek_to_last(&mut self) {
        self.unsupported("seek_to_last");
    }
    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        self.valid = false;
        if target.len() < 8 {
            return self.fail(Error::invalid("seek target is not an internal key"));
        }
        if self.prefix_seek {
            return self.seek_prefix(target);
        }
        let t = self.table.clone();
        match t.seek_start(&mut self.dec, target) {
            Ok(off) => {
                self.dec.reset();
                self.next_off = off;
                self.step();
                self.scan_to(target);
            }
            Err(e) => self.fail(e),
        }
    }
    fn seek_for_prev(&mut self, _target: &[u8]) {
        self.unsupported("seek_for_prev");
    }
    fn next(&mut self) {
        if self.valid {
            self.step();
        }
    }
    fn prev(&mut self) {
        self.unsupported("prev");
    }
    fn key(&self) -> &[u8] {
        self.dec.key()
    }
    fn value(&self) -> &[u8] {
        &self.table.records()[self.value.0..self.value.0 + self.value.1]
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
