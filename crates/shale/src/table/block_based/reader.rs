//! Reading block-based tables written by RocksDB (format_version 0..=7) or by Shale.
//!
//! The properties are loaded at open and kept in the [`Table`]; data blocks go through the
//! optional shared [`BlockCache`]. Index and filter blocks are, as RocksDB's
//! `cache_index_and_filter_blocks` says, either pinned in the table with their bytes charged to
//! the block cache as a reservation (the default), or kept in the block cache like data blocks
//! (loaded on a miss, evictable; optionally pinned there while the table is open).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, user_key, vt, InternalKeyComparator};
use crate::perf_context::{field as perf, PerfTimer};
use crate::statistics::{Histogram, StopWatch, Ticker};
use crate::table::block::{Block, BlockIter, EntryFormat, KeyOrder};
use crate::table::block_based::filter::FilterReader;
use crate::table::block_based::format::{decompress_block, trailer_checksum, Footer, BLOCK_TRAILER_LEN};
use crate::table::block_based::format::{EXTERNAL_SST_GLOBAL_SEQNO, EXTERNAL_SST_VERSION, INDEX_NAME, RANGE_DEL_NAME};
use crate::table::block_based::prefix_filter::FilterUse;
use crate::table::cache::{BlockCache, CacheKey, CacheValue, Priority, Role};
use crate::table::format::{BlockHandle, ChecksumType, FOOTER_LEN, PROPERTIES_NAME};
use crate::table::pinnable::{Home, Val};
use crate::table::properties::TableProperties;
use crate::table::reader_options::TableReaderOptions;

mod cache_stats;
mod filter_partitions;
mod index;
mod index_iter;
mod partitioned_filter;

use filter_partitions::{PartitionedFilter, PARTITIONED_FILTER_PREFIX};
pub(crate) use index_iter::IndexIter;

/// The global sequence number of a table, as RocksDB's `GetGlobalSequenceNumber` decides it:
/// none unless the file has `rocksdb.external_sst_file.version` >= 2; then the
/// `global_seqno` property, or, when that is 0 or absent, the largest sequence number the
/// MANIFEST records for the file (RocksDB >= 5.16 writes the number only there by default,
/// `write_global_seqno = false`). Both set and different is Corruption, as in RocksDB.
pub(crate) fn global_seqno(
    props: &TableProperties,
    largest_seqno: Option<u64>,
) -> std::result::Result<Option<u64>, String> {
    let fixed = |name: &str, n: usize| -> std::result::Result<Option<u64>, String> {
        match props.raw.get(name) {
            None => Ok(None),
            Some(v) if v.len() >= n => {
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(&v[..n]);
                Ok(Some(u64::from_le_bytes(b)))
            }
            Some(_) => Err(format!("malformed property {name}")),
        }
    };
    let version = fixed(EXTERNAL_SST_VERSION, 4)?;
    let seqno = fixed(EXTERNAL_SST_GLOBAL_SEQNO, 8)?;
    let Some(version) = version else {
        if seqno.is_some() {
            return Err("a non-external sst file has a global seqno property".into());
        }
        return Ok(None);
    };
    if version < 2 {
        if seqno.is_some() || version != 1 {
            return Err(format!(
                "an external sst file of version {version} has a global seqno property"
            ));
        }
        return Ok(None);
    }
    let mut g = seqno.unwrap_or(0);
    if let Some(largest) = largest_seqno {
        if g == 0 {
            g = largest;
        }
        if g != largest {
            return Err(format!(
                "an external sst file's global seqno {g} differs from its largest seqno {largest} in the MANIFEST"
            ));
        }
    }
    if g > crate::key::MAX_SEQUENCE {
        return Err(format!("global seqno {g} is above the largest sequence number"));
    }
    Ok(Some(g))
}

/// Filter policy names RocksDB's built-in policies accept after `fullfilter.`.
const FILTER_NAMES: &[&str] = &[
    "rocksdb.BuiltinBloomFilter",
    "bloomfilter",
    "ribbonfilter",
    "rocksdb.internal.LegacyBloomFilter",
    "rocksdb.internal.FastLocalBloomFilter",
    "rocksdb.internal.Standard128RibbonFilter",
    "rocksdb.internal.DeprecatedBlockBasedBloomFilter",
];

/// Check the format_version >= 7 `rocksdb.compression` property (`docs/format-details.md`).
fn check_v7_compression_property(v: &[u8]) -> Result<()> {
    let s = std::str::from_utf8(v).map_err(|_| Error::corrupt("rocksdb.compression property is not UTF-8"))?;
    let mut parts = s.splitn(3, ';');
    let name = parts.next().unwrap_or("");
    let types = parts
        .next()
        .ok_or_else(|| Error::corrupt(format!("bad rocksdb.compression property {s:?}")))?;
    if parts.next().is_none() {
        return Err(Error::corrupt(format!("bad rocksdb.compression property {s:?}")));
    }
    if types.len() % 2 != 0 || !types.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::corrupt(format!(
            "bad compression types in rocksdb.compression property {s:?}"
        )));
    }
    for i in (0..types.len()).step_by(2) {
        let t = u8::from_str_radix(&types[i..i + 2], 16).unwrap_or(0);
        if t == 0 || t == 0xff {
            return Err(Error::corrupt(format!(
                "bad compression type in rocksdb.compression property {s:?}"
            )));
        }
    }
    match name {
        "BuiltinV2" => Ok(()),
        "" if types.is_empty() => Ok(()),
        "" => Err(Error::corrupt(format!(
            "compression types listed without a compression manager: {s:?}"
        ))),
        other => Err(Error::NotSupported(format!(
            "unsupported custom compression manager {other:?}"
        ))),
    }
}

/// Where a table's filter is.
enum FilterHolder {
    None,
    /// Held by the table (the default).
    Owned(FilterReader),
    /// Held by the table and pinned in the block cache.
    Shared(Arc<FilterReader>),
    /// In the block cache (loaded on a miss).
    Cached(BlockHandle),
    /// Partitioned (`partitionedfilter.*`).
    Partitioned(PartitionedFilter),
}

/// An open SST file.
pub(crate) struct Table {
    file: Arc<dyn RandomAccessFile>,
    file_name: String,
    file_size: u64,
    footer: Footer,
    icmp: InternalKeyComparator,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    use_filter: bool,
    verify_meta: bool,
    /// The index block when the table holds it (None: look it up in the block cache).
    index_block: Option<Arc<Block>>,
    index_order: KeyOrder,
    index_format: EntryFormat,
    /// A partitioned index (`kTwoLevelIndexSearch`): `index_block` is its top level.
    two_level: bool,
    /// Index partitions the table holds (by offset; empty: through the block cache).
    held_partitions: Vec<(u64, Arc<Block>)>,
    /// Cache priority of index and filter blocks.
    meta_priority: Priority,
    filter: FilterHolder,
    /// What the filter may be asked (whole keys, prefixes), from the properties.
    filter_use: FilterUse,
    props: TableProperties,
    meta: BTreeMap<String, BlockHandle>,
    /// Bytes of index and filter the table holds outside the cache (charged to it as a
    /// reservation when there is a cache).
    owned_mem: usize,
    reserved: usize,
    /// Cache entries pinned for this table (unpinned when it closes).
    pinned: Vec<CacheKey>,
    /// An ingested external file: every key (and range tombstone) is read with this sequence
    /// number (RocksDB's global seqno; see [`global_seqno`]).
    global_seqno: Option<u64>,
    stats: crate::statistics::Stats,
}

/// The kinds of block the block cache tickers tell apart.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Data,
    Index,
    Filter,
}

impl Kind {
    /// The cache entry role of value `v` read as this kind: a filter block of a partitioned
    /// filter's top level is its metadata block.
    pub(crate) fn role(self, v: &CacheValue) -> Role {
        match (self, v) {
            (Kind::Data, _) => Role::DataBlock,
            (Kind::Index, _) => Role::IndexBlock,
            (Kind::Filter, CacheValue::Filter(_)) => Role::FilterBlock,
            (Kind::Filter, _) => Role::FilterMetaBlock,
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if let Some(c) = &self.cache {
            c.release(self.reserved);
            for k in &self.pinned {
                c.unpin(*k);
            }
        }
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Table({}, {} bytes, fv {})",
            self.file_name, self.file_size, self.footer.format_version
        )
    }
}

impl Table {
    /// The properties of a block-based table file, read without opening it for reads (footer,
    /// metaindex and properties block only; nothing goes into a block cache).
    pub(crate) fn read_properties(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
    ) -> Result<TableProperties> {
        let opts = TableReaderOptions::default();
        let (mut t, _) = Table::open_meta(file, file_name, file_size, &opts)?;
        Ok(std::mem::take(&mut t.props))
    }

    /// Open a table: footer, metaindex, properties, index, filter.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
        opts: TableReaderOptions,
    ) -> Result<Arc<Table>> {
        let (mut t, mut footer) = Table::open_meta(file, file_name, file_size, &opts)?;
        let verify = opts.verify_checksums;
        let fc = &opts.filter_contents;
        t.filter_use = FilterUse::new(&t.props.raw, fc.prefix_extractor.as_ref(), fc.whole_key_filtering);

        // index
        if footer.format_version >= 6 {
            footer.index = *t
                .meta
                .get(INDEX_NAME)
                .ok_or_else(|| t.corruption(footer.metaindex.offset, "metaindex has no rocksdb.index entry".into()))?;
            t.footer.index = footer.index;
        }
        // 1 (kHashSearch) is a binary index plus prefix meta blocks that only speed up
        // prefix seeks: read as a binary index.
        let first_key = match t.props.index_type {
            0..=2 => false,
            3 => true,
            x => return Err(t.corruption(footer.index.offset, format!("unknown index type {x}"))),
        };
        t.two_level = t.props.index_type == 2;
        t.index_format = EntryFormat::Index {
            delta: t.props.index_value_is_delta_encoded,
            first_key,
        };
        t.index_order = if t.props.index_key_is_user_key {
            KeyOrder::UserKeyIndex(t.icmp.clone())
        } else {
            KeyOrder::Internal(t.icmp.clone())
        };
        // Read (and so validate) the index and filter now; keep them in the table or put them
        // in the cache (RocksDB prefetches them into the cache at open too).
        let in_cache = opts.cache_index_and_filter_blocks && t.cache.is_some();
        let mut index = t.read_parsed_block(footer.index, verify)?;
        if !in_cache && !t.two_level {
            // Held by the table for its lifetime: worth a search directory (see `cached_index`
            // for why a cached index gets none).
            index.build_directory(&t.index_order, t.index_format);
        }
        let index = Arc::new(index);
        let pin = in_cache && opts.pin_index_and_filter_in_cache;
        // The top level of partitioned blocks is pinned also with `pin_top_level_index_and_filter`;
        // partitions are held by the table unless they live in the cache unpinned (RocksDB pins
        // every partition when it does not cache index and filter blocks or pins L0's).
        let pin_top = pin || (in_cache && opts.pin_top_level_index_and_filter && t.two_level);
        let hold_partitions = !in_cache || pin;
        if t.two_level && hold_partitions {
            t.held_partitions = t.load_partitions(&index, verify)?;
            t.owned_mem += t.held_partitions.iter().map(|(_, b)| b.memory()).sum::<usize>();
        }
        let pin = if t.two_level { pin_top } else { pin };
        if in_cache {
            let key = (t.cache_id, footer.index.offset);
            let charge = index.memory();
            if t.cache_put(key, CacheValue::Block(index.clone()), charge, pin, Kind::Index) && !pin {
                // evictable: looked up in the cache from now on
            } else {
                t.owned_mem += if pin && t.pinned.contains(&key) { 0 } else { charge };
                t.index_block = Some(index);
            }
        } else {
            t.owned_mem += index.memory();
            t.index_block = Some(index);
        }

        // filter
        let pfh = t.meta.iter().find_map(|(name, h)| {
            let rest = name.strip_prefix(PARTITIONED_FILTER_PREFIX)?;
            FILTER_NAMES.contains(&rest).then_some(*h)
        });
        if let (true, Some(ph)) = (opts.use_filter, pfh) {
            let mut pf = t.open_partitioned_filter(ph, verify, hold_partitions)?;
            if in_cache {
                let top = pf.top_block.take().expect("read at open");
                let key = (t.cache_id, ph.offset);
                let charge = top.memory();
                if !t.cache_put(key, CacheValue::Block(top.clone()), charge, pin_top, Kind::Filter) || pin_top {
                    t.owned_mem += if pin_top && t.pinned.contains(&key) { 0 } else { charge };
                    pf.top_block = Some(top);
                }
                t.owned_mem += pf.held.iter().map(|(_, f)| f.memory()).sum::<usize>();
            } else {
                t.owned_mem += pf.memory();
            }
            t.filter = FilterHolder::Partitioned(pf);
        } else if opts.use_filter {
            let fh = t.meta.iter().find_map(|(name, h)| {
                let rest = name.strip_prefix("fullfilter.")?;
                FILTER_NAMES.contains(&rest).then_some(*h)
            });
            if let Some(fh) = fh {
                let f = FilterReader::new(t.read_block(fh, verify)?);
                let charge = f.memory();
                if in_cache {
                    let key = (t.cache_id, fh.offset);
                    let f = Arc::new(f);
                    if t.cache_put(key, CacheValue::Filter(f.clone()), charge, pin, Kind::Filter) && !pin {
                        t.filter = FilterHolder::Cached(fh);
                    } else {
                        t.owned_mem += if pin && t.pinned.contains(&key) { 0 } else { charge };
                        t.filter = FilterHolder::Shared(f);
                    }
                } else {
                    // held inline: no extra pointer to chase on every lookup
                    t.owned_mem += charge;
                    t.filter = FilterHolder::Owned(f);
                }
            }
        }
        if let Some(c) = &t.cache {
            // What the table holds itself is charged to the cache (RocksDB's default
            // `cache_index_and_filter_blocks = false` with table-reader memory charged).
            let own = t.owned_mem;
            c.reserve(own);
            t.reserved = own;
        }
        Ok(Arc::new(t))
    }

    /// The first part of `open`: footer, metaindex and properties.
    fn open_meta(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
        opts: &TableReaderOptions,
    ) -> Result<(Table, Footer)> {
        let n = file_size.min(FOOTER_LEN as u64) as usize;
        let foff = file_size - n as u64;
        let tail = file.read_at(foff, n).map_err(|e| e.in_file(&file_name, Some(foff)))?;
        let footer = Footer::decode(&tail, file_size).map_err(|e| e.in_file(&file_name, Some(foff)))?;
        let mut t = Table {
            file,
            file_name,
            file_size,
            footer: footer.clone(),
            icmp: opts.icmp.clone(),
            cache: opts.block_cache.clone(),
            stats: opts.stats.clone(),
            cache_id: opts.cache_id,
            use_filter: opts.use_filter,
            verify_meta: opts.verify_checksums,
            index_block: None,
            two_level: false,
            held_partitions: Vec::new(),
            meta_priority: if opts.cache_index_and_filter_blocks_with_high_priority {
                Priority::High
            } else {
                Priority::Low
            },
            index_order: KeyOrder::Bytewise,
            index_format: EntryFormat::Index {
                delta: false,
                first_key: false,
            },
            filter: FilterHolder::None,
            filter_use: FilterUse::whole_key_only(),
            props: TableProperties::default(),
            meta: BTreeMap::new(),
            owned_mem: 0,
            reserved: 0,
            pinned: Vec::new(),
            global_seqno: None,
        };
        let verify = opts.verify_checksums;

        // metaindex
        let mblock = t.read_parsed_block(footer.metaindex, verify)?;
        let mut it = BlockIter::new(Arc::new(mblock), KeyOrder::Bytewise, EntryFormat::Data);
        it.seek_to_first();
        while it.valid() {
            let name = String::from_utf8_lossy(it.key()).into_owned();
            let (h, _) = BlockHandle::decode(it.value()).ok_or_else(|| {
                t.corruption(
                    footer.metaindex.offset,
                    format!("bad block handle for meta block {name}"),
                )
            })?;
            t.meta.insert(name, h);
            it.next();
        }
        it.status()
            .map_err(|e| e.in_file(&t.file_name, Some(footer.metaindex.offset)))?;

        // properties
        let ph = t
            .meta
            .get(PROPERTIES_NAME)
            .or_else(|| t.meta.get("rocksdb.stats"))
            .copied();
        if let Some(ph) = ph {
            let pblock = t.read_parsed_block(ph, verify)?;
            let mut raw = BTreeMap::new();
            let mut it = BlockIter::new(Arc::new(pblock), KeyOrder::Bytewise, EntryFormat::Data);
            it.seek_to_first();
            while it.valid() {
                raw.insert(String::from_utf8_lossy(it.key()).into_owned(), it.value().to_vec());
                it.next();
            }
            it.status().map_err(|e| e.in_file(&t.file_name, Some(ph.offset)))?;
            t.props = TableProperties::parse(raw).map_err(|e| e.in_file(&t.file_name, Some(ph.offset)))?;
        }
        if footer.format_version >= 7 {
            if let Some(v) = t.props.raw.get("rocksdb.compression") {
                check_v7_compression_property(v).map_err(|e| e.in_file(&t.file_name, ph.map(|h| h.offset)))?;
            }
        }
        t.global_seqno =
            global_seqno(&t.props, opts.largest_seqno).map_err(|m| t.corruption(ph.map_or(0, |h| h.offset), m))?;
        if t.props.raw.contains_key("rocksdb.embedded.blob.stats") {
            return Err(Error::NotSupported(format!(
                "{}: sst file with embedded blobs",
                t.file_name
            )));
        }

        Ok((t, footer))
    }

    /// Statistics of one block read from the file (`n` bytes, started at `t0`).
    #[inline]
    fn block_read(&self, n: usize, timer: PerfTimer, watch: Option<StopWatch<'_>>) {
        if crate::perf_context::counting() {
            crate::perf_context::add_unchecked(perf::BLOCK_READ_COUNT, 1);
            crate::perf_context::add_unchecked(perf::BLOCK_READ_BYTE, n as u64);
            timer.stop(perf::BLOCK_READ_TIME);
        }
        drop(watch);
    }

    fn corruption(&self, off: u64, msg: String) -> Error {
        Error::corruption(&self.file_name, Some(off), msg)
    }

    /// Check that a block handle lies inside the file.
    fn check_handle(&self, h: BlockHandle) -> Result<()> {
        let end = h
            .offset
            .checked_add(h.size)
            .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64));
        match end {
            Some(e) if e <= self.file_size => Ok(()),
            _ => Err(self.corruption(
                h.offset,
                format!(
                    "block handle ({}, {}) extends past the end of the file ({})",
                    h.offset, h.size, self.file_size
                ),
            )),
        }
    }

    /// Read a block's contents (checksum verified if `verify`, decompressed).
    pub(crate) fn read_block(&self, h: BlockHandle, verify: bool) -> Result<Vec<u8>> {
        self.check_handle(h)?;
        let size = h.size as usize;
        let (timer, watch) = (
            PerfTimer::start(),
            StopWatch::start(&self.stats, Histogram::SstReadMicros),
        );
        let buf = crate::table::block::buffers::read(&*self.file, h.offset, size + BLOCK_TRAILER_LEN)
            .map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
        self.block_read(buf.len(), timer, watch);
        self.finish_block(h, verify, buf)
    }

    /// Verify (if asked) and decompress the raw bytes of a block (`h.size` + trailer).
    fn finish_block(&self, h: BlockHandle, verify: bool, mut buf: Vec<u8>) -> Result<Vec<u8>> {
        let size = h.size as usize;
        let ty = buf[size];
        if verify && self.footer.checksum != ChecksumType::NoChecksum {
            let stored = u32::from_le_bytes(buf[size + 1..size + 5].try_into().unwrap());
            let calc = trailer_checksum(
                self.footer.checksum,
                &buf[..size],
                ty,
                self.footer.base_context_checksum,
                h.offset,
            );
            if stored != calc {
                return Err(self.corruption(
                    h.offset,
                    format!(
                        "block checksum mismatch: stored = {stored:#010x}, computed = {calc:#010x}, type = {}",
                        self.footer.checksum as u8
                    ),
                ));
            }
        }
        if ty == 0 {
            buf.truncate(size);
            Ok(buf)
        } else {
            let timed = self
                .stats
                .as_ref()
                .filter(|s| s.detailed_timers())
                .map(|_| std::time::Instant::now());
            let out = decompress_block(ty, &buf[..size], self.footer.format_version)
                .map_err(|e| e.in_file(&self.file_name, Some(h.offset)));
            if let (Some(s), Ok(o)) = (&self.stats, &out) {
                s.tick(Ticker::NumberBlockDecompressed, 1);
                s.tick(Ticker::BytesDecompressedFrom, size as u64);
                s.tick(Ticker::BytesDecompressedTo, o.len() as u64);
                if let Some(t0) = timed {
                    s.record_time(Histogram::DecompressionTimesNanos, t0.elapsed().as_nanos() as u64);
                }
            }
            crate::table::block::buffers::give(buf);
            out
        }
    }

    /// A data block for a forward scan: through the block cache, and on a miss read through
    /// `ra`, which switches to growing readahead once reads are sequential (as RocksDB's
    /// automatic iterator readahead: after 2 sequential reads, 8 KiB doubling to 256 KiB).
    fn data_block_ra(&self, h: BlockHandle, verify: bool, fill_cache: bool, ra: &mut Readahead) -> Result<Arc<Block>> {
        let n = h.size as usize + BLOCK_TRAILER_LEN;
        let sequential = ra.track(h.offset, n);
        if let Some(c) = &self.cache {
            if let Some(b) = c.get((self.cache_id, h.offset)) {
                self.cache_hit(Kind::Data, b.memory());
                return Ok(b);
            }
            self.cache_miss(Kind::Data);
        }
        self.check_handle(h)?;
        let (timer, watch) = (
            PerfTimer::start(),
            StopWatch::start(&self.stats, Histogram::SstReadMicros),
        );
        let raw = if sequential {
            ra.read(&*self.file, self.file_size, h.offset, n)
        } else {
            crate::table::block::buffers::read(&*self.file, h.offset, n)
        }
        .map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
        self.block_read(n, timer, watch);
        let data = self.finish_block(h, verify, raw)?;
        let b = Arc::new(Block::new(data).map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?);
        if fill_cache {
            if let Some(c) = &self.cache {
                let kept = c.insert((self.cache_id, h.offset), b.clone(), b.memory());
                self.cache_added(kept, Kind::Data, b.memory());
            }
        }
        Ok(b)
    }

    fn read_parsed_block(&self, h: BlockHandle, verify: bool) -> Result<Block> {
        let raw = self.read_block(h, verify)?;
        Block::new(raw).map_err(|e| e.in_file(&self.file_name, Some(h.offset)))
    }

    /// A data block, through the block cache, and whether it is (now) in the cache.
    fn data_block_cached(&self, h: BlockHandle, verify: bool, fill_cache: bool) -> Result<(Arc<Block>, bool)> {
        if let Some(c) = &self.cache {
            if let Some(b) = c.get((self.cache_id, h.offset)) {
                self.cache_hit(Kind::Data, b.memory());
                return Ok((b, true));
            }
            self.cache_miss(Kind::Data);
        }
        let b = Arc::new(self.read_parsed_block(h, verify)?);
        if fill_cache {
            if let Some(c) = &self.cache {
                let kept = c.insert((self.cache_id, h.offset), b.clone(), b.memory());
                self.cache_added(kept, Kind::Data, b.memory());
                return Ok((b, true));
            }
        }
        Ok((b, false))
    }

    /// The filter through the cache, read and inserted on a miss (None on a read error: the
    /// filter is then not consulted).
    fn cached_filter(&self, h: BlockHandle) -> Option<Arc<FilterReader>> {
        let key = (self.cache_id, h.offset);
        let c = self.cache.as_ref()?;
        if let Some(f) = c.get_filter(key) {
            self.cache_hit(Kind::Filter, f.memory());
            return Some(f);
        }
        self.cache_miss(Kind::Filter);
        let f = Arc::new(FilterReader::new(self.read_block(h, self.verify_meta).ok()?));
        if c.insert_value(
            key,
            CacheValue::Filter(f.clone()),
            f.memory(),
            false,
            self.meta_priority,
            Role::FilterBlock,
        ) {
            self.cache_add(Kind::Filter, f.memory());
        } else {
            crate::statistics::tick(&self.stats, Ticker::BlockCacheAddFailures, 1);
        }
        Some(f)
    }

    fn data_iter(&self, b: Arc<Block>) -> BlockIter {
        let mut it = BlockIter::new(b, KeyOrder::Internal(self.icmp.clone()), EntryFormat::Data);
        it.set_global_seqno(self.global_seqno);
        it
    }

    /// The sequence number every key of this (ingested external) file is read with, if any.
    pub(crate) fn global_seqno(&self) -> Option<u64> {
        self.global_seqno
    }

    /// Whether the filter (if loaded) admits `user_key`: its whole key or its prefix, as the
    /// file's filter holds them (true when the filter cannot tell).
    pub(crate) fn key_may_match(&self, user_key: &[u8]) -> bool {
        self.filter_use
            .get_probe(user_key)
            .is_none_or(|p| self.filter_may_match(p))
    }

    /// Whether keys with `prefix` (made by the extractor named `extractor`) may be in the file:
    /// false only when the file's filter holds that extractor's prefixes and not this one.
    pub(crate) fn prefix_may_match(&self, prefix: &[u8], extractor: &str) -> bool {
        !self.filter_use.has_prefixes_of(extractor) || self.filter_may_match(prefix)
    }

    /// Whether the filter (if loaded) admits the entry `probe` (a whole key or a prefix).
    fn filter_may_match(&self, user_key: &[u8]) -> bool {
        if !self.use_filter {
            return true;
        }
        match &self.filter {
            FilterHolder::Owned(f) => f.key_may_match(user_key),
            FilterHolder::Shared(f) => f.key_may_match(user_key),
            FilterHolder::Cached(h) => self.cached_filter(*h).is_none_or(|f| f.key_may_match(user_key)),
            FilterHolder::Partitioned(pf) => self.partitioned_key_may_match(pf, user_key),
            FilterHolder::None => true,
        }
    }

    #[cfg(any(test, feature = "fuzzing"))]
    /// The first entry with internal key >= `lookup_ikey` if it has the same user key.
    pub(crate) fn get(&self, lookup_ikey: &[u8], verify: bool, fill_cache: bool) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.get_with(lookup_ikey, verify, fill_cache, |k, v| (k.to_vec(), v.to_vec()))
    }

    /// Like [`get`](Self::get) but hands the found entry (internal key, value) to `found`
    /// while it is still in the block, so callers copy only what they need. The value is
    /// pinnable in its block when that block lives in the block cache; a block read past the
    /// cache is not kept for one value (the value is copied if kept).
    pub(crate) fn get_with<R>(
        &self,
        lookup_ikey: &[u8],
        verify: bool,
        fill_cache: bool,
        found: impl FnOnce(&[u8], Val<'_>) -> R,
    ) -> Result<Option<R>> {
        let uk = user_key(lookup_ikey);
        let probe = self.filter_use.get_probe(uk);
        let filtered = probe.is_some() && self.use_filter && !matches!(self.filter, FilterHolder::None);
        if probe.is_some_and(|p| !self.filter_may_match(p)) {
            // a filter said no
            crate::perf_context::add(perf::BLOOM_SST_MISS_COUNT, 1);
            crate::statistics::tick(&self.stats, Ticker::BloomFilterUseful, 1);
            return Ok(None);
        }
        if filtered {
            crate::perf_context::add(perf::BLOOM_SST_HIT_COUNT, 1);
            crate::statistics::tick(&self.stats, Ticker::BloomFilterFullPositive, 1);
        }
        let mut idx = self.index_iter(fill_cache)?;
        idx.seek(self, lookup_ikey);
        loop {
            if !idx.valid() {
                idx.status()
                    .map_err(|e| e.in_file(&self.file_name, Some(self.footer.index.offset)))?;
                return Ok(None);
            }
            let h = idx.handle();
            let (block, cached) = self.data_block_cached(h, verify, fill_cache)?;
            let mut it = self.data_iter(block);
            it.seek(lookup_ikey);
            if it.valid() {
                if self.icmp.compare_user(user_key(it.key()), uk) == Ordering::Equal {
                    if filtered {
                        crate::statistics::tick(&self.stats, Ticker::BloomFilterFullTruePositive, 1);
                    }
                    let value = if cached {
                        // SAFETY: a data entry's value is a slice of its block's bytes, which
                        // the `Arc<Block>` owns and never changes.
                        unsafe { Val::pinned(it.value(), Home::Block(it.block())) }
                    } else {
                        Val::unpinned(it.value())
                    };
                    return Ok(Some(found(it.key(), value)));
                }
                return Ok(None);
            }
            it.status().map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
            idx.next(self);
        }
    }

    /// A two-level iterator over the whole table.
    pub(crate) fn iter(self: &Arc<Self>, verify: bool, fill_cache: bool) -> TableIterator {
        let (index, open_err) = match self.index_iter(fill_cache) {
            Ok(i) => (i, None),
            Err(e) => (
                IndexIter::Flat(BlockIter::new(
                    Arc::new(Block::empty()),
                    self.index_order.clone(),
                    self.index_format,
                )),
                Some(e),
            ),
        };
        TableIterator {
            index,
            open_err,
            table: self.clone(),
            data: None,
            cur_block: None,
            positioned: false,
            verify,
            fill_cache,
            err: None,
            ra: Readahead::default(),
        }
    }

    pub(crate) fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// All range tombstones: (start internal key, end user key), as stored.
    pub(crate) fn range_tombstones(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let Some(&h) = self.meta.get(RANGE_DEL_NAME) else {
            return Ok(Vec::new());
        };
        let b = self.read_parsed_block(h, true)?;
        let mut it = self.data_iter(Arc::new(b));
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let pk = parse_internal_key(it.key()).map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
            if pk.vtype != vt::RANGE_DELETION {
                return Err(self.corruption(
                    h.offset,
                    format!("range deletion block has an entry of type {:#x}", pk.vtype),
                ));
            }
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
        Ok(out)
    }

    /// Read and verify every block of the file (sst_dump --command=verify), and parse every
    /// data-block entry.
    pub(crate) fn verify_checksums(&self) -> Result<()> {
        self.read_parsed_block(self.footer.metaindex, true)?;
        for h in self.meta.values() {
            self.read_block(*h, true)?;
        }
        self.read_parsed_block(self.footer.index, true)?;
        self.verify_partitions()?;
        self.verify_filter_partitions()?;
        let mut idx = self.index_iter(false)?;
        idx.seek_to_first(self);
        while idx.valid() {
            let h = idx.handle();
            let b = self.read_parsed_block(h, true)?;
            let mut it = self.data_iter(Arc::new(b));
            it.seek_to_first();
            while it.valid() {
                parse_internal_key(it.key()).map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
                it.next();
            }
            it.status().map_err(|e| e.in_file(&self.file_name, Some(h.offset)))?;
            idx.next(self);
        }
        idx.status()
            .map_err(|e| e.in_file(&self.file_name, Some(self.footer.index.offset)))
    }

    /// Approximate file offset where `ikey` would be (for size estimates).
    pub(crate) fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let Ok(mut idx) = self.index_iter(true) else { return 0 };
        idx.seek(self, ikey);
        if idx.valid() {
            idx.handle().offset
        } else if self.props.data_size > 0 {
            self.props.data_size
        } else {
            self.footer.metaindex.offset
        }
    }

    /// Memory held by this reader outside the block cache (index and filter when the table
    /// holds them, properties), as RocksDB's `ApproximateMemoryUsage` of a table reader.
    pub(crate) fn approximate_memory_usage(&self) -> usize {
        self.owned_mem
            + self
                .props
                .raw
                .iter()
                .map(|(k, v)| k.len() + v.len() + 48)
                .sum::<usize>()
            + std::mem::size_of::<Table>()
    }

    pub(crate) fn checksum_type(&self) -> ChecksumType {
        self.footer.checksum
    }
    pub(crate) fn format_version(&self) -> u32 {
        self.footer.format_version
    }
    pub(crate) fn index_handle(&self) -> BlockHandle {
        self.footer.index
    }
    pub(crate) fn metaindex_handle(&self) -> BlockHandle {
        self.footer.metaindex
    }
    /// Metaindex entries (meta block name → handle).
    pub(crate) fn meta_blocks(&self) -> &BTreeMap<String, BlockHandle> {
        &self.meta
    }
    pub(crate) fn file_name(&self) -> &str {
        &self.file_name
    }
    #[cfg(test)]
    pub(crate) fn has_filter(&self) -> bool {
        !matches!(self.filter, FilterHolder::None)
    }
    #[cfg(test)]
    /// Entries of the index block's search directory (None: no directory, or the index lives
    /// in the block cache).
    pub(crate) fn index_directory_len(&self) -> Option<usize> {
        self.index_block.as_ref()?.directory_len()
    }
    #[cfg(test)]
    /// Bytes of index and filter this table charges to the block cache as a reservation.
    pub(crate) fn cache_reservation(&self) -> usize {
        self.reserved
    }
}

/// Two-level iterator over a table: index block → data blocks. Owns an `Arc<Table>`.
pub(crate) struct TableIterator {
    table: Arc<Table>,
    index: IndexIter,
    /// The index could not be loaded: every positioning fails with this.
    open_err: Option<Error>,
    data: Option<BlockIter>,
    cur_block: Option<u64>,
    positioned: bool,
    verify: bool,
    fill_cache: bool,
    err: Option<Error>,
    ra: Readahead,
}

/// Readahead state of one table iterator.
#[derive(Default)]
pub(crate) struct Readahead {
    /// Bytes read ahead, starting at file offset `start`.
    buf: Vec<u8>,
    start: u64,
    /// End of the last block requested, and how many requests in a row started there.
    prev_end: u64,
    sequential: u32,
    /// Next readahead size.
    size: usize,
}

impl Readahead {
    const INITIAL: usize = 8 << 10;
    const MAX: usize = 256 << 10;
    /// Reads in a row before readahead starts.
    const TRIGGER: u32 = 2;

    /// Note a block request (`n` bytes at `off`); true if readahead should serve it.
    fn track(&mut self, off: u64, n: usize) -> bool {
        if off == self.prev_end && self.prev_end != 0 {
            self.sequential = self.sequential.saturating_add(1);
        } else {
            self.sequential = 0;
            self.size = Self::INITIAL;
            self.buf.clear();
        }
        self.prev_end = off + n as u64;
        self.sequential >= Self::TRIGGER
    }

    /// `n` bytes at `off`, from the buffer or after refilling it from `off`.
    fn read(&mut self, file: &dyn RandomAccessFile, file_size: u64, off: u64, n: usize) -> Result<Vec<u8>> {
        let end = off + n as u64;
        if off >= self.start && end <= self.start + self.buf.len() as u64 {
            let i = (off - self.start) as usize;
            return Ok(self.buf[i..i + n].to_vec());
        }
        let want = (self.size.max(n) as u64)
            .min(file_size.saturating_sub(off))
            .max(n as u64) as usize;
        self.buf = file.read_at(off, want)?;
        self.start = off;
        self.size = (self.size * 2).clamp(Self::INITIAL, Self::MAX);
        Ok(self.buf[..n].to_vec())
    }
}

impl TableIterator {
    fn set_err(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
        self.positioned = false;
    }

    /// Load the block the index points at. Returns false on error / no block.
    fn init_data_block(&mut self) -> bool {
        if !self.index.valid() {
            if let Err(e) = self.index.status() {
                let off = self.table.footer.index.offset;
                let e = e.in_file(&self.table.file_name, Some(off));
                self.set_err(e);
            }
            self.positioned = false;
            return false;
        }
        let h = self.index.handle();
        if self.cur_block == Some(h.offset) && self.data.is_some() {
            self.positioned = true;
            return true;
        }
        match self.table.data_block_ra(h, self.verify, self.fill_cache, &mut self.ra) {
            Ok(b) => {
                match &mut self.data {
                    Some(d) => d.reset(b),
                    None => self.data = Some(self.table.data_iter(b)),
                }
                self.cur_block = Some(h.offset);
                self.positioned = true;
                true
            }
            Err(e) => {
                self.cur_block = None;
                self.set_err(e);
                false
            }
        }
    }

    fn data_status(&mut self) -> bool {
        if let Some(d) = &self.data {
            if let Err(e) = d.status() {
                let e = e.in_file(&self.table.file_name, self.cur_block);
                self.cur_block = None;
                self.set_err(e);
                return false;
            }
        }
        true
    }

    fn skip_forward(&mut self) {
        loop {
            if !self.positioned || self.err.is_some() {
                return;
            }
            if self.data.as_ref().is_some_and(|d| d.valid()) {
                return;
            }
            if !self.data_status() {
                return;
            }
            self.index.next(&*self.table);
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        loop {
            if !self.positioned || self.err.is_some() {
                return;
            }
            if self.data.as_ref().is_some_and(|d| d.valid()) {
                return;
            }
            if !self.data_status() {
                return;
            }
            self.index.prev(&*self.table);
            if !self.init_data_block() {
                return;
            }
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIterator {
    #[inline]
    fn valid(&self) -> bool {
        self.positioned && self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.err = self.open_err.clone();
        self.index.seek_to_first(&*self.table);
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
            self.skip_forward();
        }
    }

    fn seek_to_last(&mut self) {
        self.err = self.open_err.clone();
        self.index.seek_to_last(&*self.table);
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
            self.skip_backward();
        }
    }

    fn seek(&mut self, target: &[u8]) {
        self.err = self.open_err.clone();
        self.index.seek(&*self.table, target);
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek(target);
            }
            self.skip_forward();
        }
    }

    fn seek_for_prev(&mut self, target: &[u8]) {
        self.err = self.open_err.clone();
        self.index.seek(&*self.table, target);
        if !self.index.valid() {
            if self.index.status().is_err() {
                self.init_data_block();
                return;
            }
            self.index.seek_to_last(&*self.table);
        }
        if self.init_data_block() {
            if let Some(d) = &mut self.data {
                d.seek_for_prev(target);
            }
            self.skip_backward();
        }
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) fn tests_check_v7(v: &[u8]) -> Result<()> {
    check_v7_compression_property(v)
}

#[cfg(test)]
mod readahead_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering as AO};

    struct CountingFile {
        data: Vec<u8>,
        reads: AtomicUsize,
    }
    impl RandomAccessFile for CountingFile {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            self.reads.fetch_add(1, AO::Relaxed);
            let o = offset as usize;
            buf.copy_from_slice(&self.data[o..o + buf.len()]);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.data.len() as u64
        }
    }

    /// What a TableIterator does per block: track, then read through readahead or directly.
    fn get(ra: &mut Readahead, f: &CountingFile, off: u64, n: usize) -> Vec<u8> {
        if ra.track(off, n) {
            ra.read(f, f.size(), off, n).unwrap()
        } else {
            f.read_at(off, n).unwrap()
        }
    }

    #[test]
    fn sequential_blocks_are_read_ahead_and_exact() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let f = CountingFile {
            data: data.clone(),
            reads: AtomicUsize::new(0),
        };
        let mut ra = Readahead::default();
        let mut off = 0u64;
        let mut blocks = 0;
        while off < data.len() as u64 {
            let n = (4096 + (blocks * 37) % 300).min(data.len() - off as usize);
            assert_eq!(
                get(&mut ra, &f, off, n),
                &data[off as usize..off as usize + n],
                "block at {off}"
            );
            off += n as u64;
            blocks += 1;
        }
        let reads = f.reads.load(AO::Relaxed);
        assert!(reads * 10 < blocks, "{reads} reads for {blocks} blocks");
        assert!(ra.size <= Readahead::MAX);
    }

    #[test]
    fn random_access_resets_and_reads_directly() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 253) as u8).collect();
        let f = CountingFile {
            data: data.clone(),
            reads: AtomicUsize::new(0),
        };
        let mut ra = Readahead::default();
        // sequential start, then a jump backwards and forwards
        for (off, n) in [
            (0u64, 4000usize),
            (4000, 4000),
            (8000, 4000),
            (12000, 4000),
            (500, 100),
            (900_000, 5000),
            (905_000, 5000),
        ] {
            assert_eq!(get(&mut ra, &f, off, n), &data[off as usize..off as usize + n]);
        }
        // the jump dropped the buffer; the tail after the jump is only one sequential read
        assert_eq!(ra.sequential, 1);
        assert!(ra.buf.is_empty());
        // a block at the very end of the file: readahead is clamped to the file size
        let mut ra = Readahead::default();
        let bs = 4096usize;
        let mut off = (data.len() - 5 * bs) as u64;
        ra.track(off - 1, 1);
        for _ in 0..5 {
            assert_eq!(get(&mut ra, &f, off, bs), &data[off as usize..off as usize + bs]);
            off += bs as u64;
        }
    }
}
