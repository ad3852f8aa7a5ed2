//! Writing block-based tables exactly as RocksDB 7.8 does (format_version 6 as RocksDB 8.x+;
//! `docs/format-details.md`).
//!
//! Layout written: data blocks, filter, index, range-del, properties, metaindex, footer.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::coding::{put_fixed32, put_varint64};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{make_internal_key, trailer, user_key, vt, InternalKeyComparator, MAX_SEQUENCE};
use crate::table::block::BlockBuilder;
use crate::table::block_based::filter::{FilterBuilder, FilterKind};
use crate::table::block_based::format::{compress_block, trailer_checksum, Footer, BLOCK_TRAILER_LEN};
use crate::table::block_based::format::{FULL_FILTER_NAME, INDEX_NAME, PARTITIONED_FILTER_NAME, RANGE_DEL_NAME};
use crate::table::block_based::partitioned_index::{
    write_index, write_partitioned_filter, FilterPartitioner, IndexLayout, IndexWritten, PartitionCutter,
};
use crate::table::block_based::prefix_filter::{
    FilterContents, PREFIX_EXTRACTOR_PROP, PREFIX_FILTERING_PROP, WHOLE_KEY_PROP,
};
use crate::table::format::{BlockHandle, ChecksumType, DBCompressionType, PROPERTIES_NAME};
use crate::table::info::TableInfo;

/// Options for [`TableBuilder`].
#[derive(Clone, Debug)]
pub(crate) struct TableBuilderOptions {
    pub icmp: InternalKeyComparator,
    /// Target uncompressed data-block size (RocksDB `block_size`, default 4096).
    pub block_size: usize,
    /// Data-block restart interval (default 16).
    pub block_restart_interval: usize,
    /// Block-based format_version to write, 2..=6 (default 5).
    pub format_version: u32,
    pub checksum: ChecksumType,
    pub compression: DBCompressionType,
    /// Bloom bits per key; 0 = no filter.
    pub bloom_bits_per_key: f64,
    /// What the filter holds: prefixes of the extractor's domain and/or whole keys
    /// (`table::block_based::prefix_filter`).
    pub filter_contents: FilterContents,
    pub column_family_name: String,
    /// The family's id for the table properties; None: 0 for `default`, else RocksDB's
    /// "unknown" (0x7fffffff, as for an external file).
    pub column_family_id: Option<u32>,
    pub db_id: String,
    pub db_session_id: String,
    pub file_number: u64,
    /// Seconds since the epoch (`rocksdb.creation.time` and `rocksdb.oldest.key.time`).
    pub creation_time: u64,
    pub merge_operator_name: Option<String>,
    /// An external file (`SstFileWriter`): adds RocksDB's `rocksdb.external_sst_file.version`
    /// (fixed32 2) and `rocksdb.external_sst_file.global_seqno` (fixed64 0) properties and
    /// leaves `rocksdb.file.creation.time` out, as RocksDB's writer does.
    pub external: bool,
    /// Index type, partitioned filters, partition size.
    pub index_layout: IndexLayout,
}

impl Default for TableBuilderOptions {
    fn default() -> Self {
        TableBuilderOptions {
            icmp: InternalKeyComparator::default(),
            block_size: 4096,
            block_restart_interval: 16,
            format_version: 5,
            checksum: ChecksumType::XXH3,
            compression: DBCompressionType::None,
            bloom_bits_per_key: 10.0,
            filter_contents: FilterContents {
                prefix_extractor: None,
                whole_key_filtering: true,
            },
            column_family_name: "default".into(),
            column_family_id: None,
            db_id: String::new(),
            db_session_id: String::new(),
            file_number: 0,
            creation_time: 0,
            merge_operator_name: None,
            external: false,
            index_layout: IndexLayout::default(),
        }
    }
}

/// Writes one SST file. Call [`TableBuilder::add`] with strictly increasing internal keys, then
/// [`TableBuilder::finish`] (flushes, does not sync; the file is handed back so the caller can
/// sync it) or [`TableBuilder::abandon`].
pub(crate) struct TableBuilder {
    opts: TableBuilderOptions,
    file: Box<dyn WritableFile>,
    offset: u64,
    data_block: BlockBuilder,
    index_entries: Vec<(Vec<u8>, BlockHandle)>,
    pending_handle: Option<BlockHandle>,
    last_key: Vec<u8>,
    filter: Option<FilterBuilder>,
    /// Partitioned index: where partitions end.
    index_cuts: Option<PartitionCutter>,
    /// Partitioned filters: the finished partitions.
    filter_parts: Option<FilterPartitioner>,
    range_dels: Vec<(Vec<u8>, Vec<u8>)>,
    key_plus_seq: bool,
    base_context_checksum: u32,
    compress_buf: Vec<u8>,
    err: Option<Error>,
    // statistics
    num_points: u64,
    num_entries: u64,
    num_deletions: u64,
    num_merges: u64,
    num_range_deletions: u64,
    raw_key_size: u64,
    raw_value_size: u64,
    num_data_blocks: u64,
    smallest_seqno: u64,
    largest_seqno: u64,
    first_key: Vec<u8>,
}

fn random_nonzero_u32(salt: u64) -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(salt);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    h.write_u64(nanos);
    let v = h.finish();
    let x = (v as u32) ^ ((v >> 32) as u32);
    if x == 0 {
        0x5ea1_5ea1
    } else {
        x
    }
}

fn hostname() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    })
    .clone()
}

impl TableBuilder {
    /// Start a table. Invalid options (format_version outside 2..=6, zero block size) make every
    /// later call fail with InvalidArgument.
    pub(crate) fn new(opts: TableBuilderOptions, file: Box<dyn WritableFile>) -> TableBuilder {
        let mut err = None;
        if !(2..=6).contains(&opts.format_version) {
            err = Some(Error::invalid(format!(
                "format_version {} is not supported for writing (2..=6)",
                opts.format_version
            )));
        }
        if opts.block_size == 0 {
            err = Some(Error::invalid("block_size must be positive"));
        }
        let kind = if opts.format_version >= 5 {
            FilterKind::FastLocalBloom
        } else {
            FilterKind::LegacyBloom
        };
        let filter = FilterBuilder::new(kind, opts.bloom_bits_per_key);
        let base = if opts.format_version >= 6 {
            random_nonzero_u32(opts.file_number)
        } else {
            0
        };
        let offset = file.size();
        let layout = &opts.index_layout;
        let index_cuts = layout
            .two_level()
            .then(|| PartitionCutter::new(layout.metadata_block_size));
        let filter_parts = (layout.partitioned_filters() && filter.is_some())
            .then(|| FilterPartitioner::new(layout.metadata_block_size, opts.bloom_bits_per_key));
        TableBuilder {
            index_cuts,
            filter_parts,
            data_block: BlockBuilder::new(opts.block_restart_interval.max(1), false),
            key_plus_seq: opts.format_version <= 2,
            opts,
            file,
            offset,
            index_entries: Vec::new(),
            pending_handle: None,
            last_key: Vec::new(),
            filter,
            range_dels: Vec::new(),
            base_context_checksum: base,
            compress_buf: Vec::new(),
            err,
            num_points: 0,
            num_entries: 0,
            num_deletions: 0,
            num_merges: 0,
            num_range_deletions: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            num_data_blocks: 0,
            smallest_seqno: u64::MAX,
            largest_seqno: 0,
            first_key: Vec::new(),
        }
    }

    fn check(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn count(&mut self, ikey: &[u8], value: &[u8]) {
        let t = trailer(ikey);
        let seq = t >> 8;
        self.smallest_seqno = self.smallest_seqno.min(seq);
        self.largest_seqno = self.largest_seqno.max(seq);
        self.num_entries += 1;
        self.raw_key_size += ikey.len() as u64;
        self.raw_value_size += value.len() as u64;
        match (t & 0xff) as u8 {
            vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => self.num_deletions += 1,
            vt::RANGE_DELETION => {
                self.num_deletions += 1;
                self.num_range_deletions += 1;
            }
            vt::MERGE => self.num_merges += 1,
            _ => {}
        }
    }

    /// Add a point entry. Keys must be strictly increasing under the internal comparator.
    /// An entry of type RangeDeletion is forwarded to [`TableBuilder::add_range_tombstone`].
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.check()?;
        if ikey.len() < 8 {
            return Err(Error::invalid(format!("internal key too short ({} bytes)", ikey.len())));
        }
        if ikey[ikey.len() - 8] == vt::RANGE_DELETION {
            return self.add_range_tombstone(ikey, value);
        }
        if self.num_points > 0 && self.opts.icmp.compare(ikey, &self.last_key) != Ordering::Greater {
            return Err(Error::invalid("table builder: keys added out of order"));
        }
        if self.should_flush(ikey.len(), value.len()) {
            self.flush_data_block()?;
        }
        self.add_index_entry(Some(ikey));
        if let Some(f) = &mut self.filter {
            // With user-defined timestamps the filter holds keys without them, as RocksDB's:
            // a point lookup asks for the key whatever its read timestamp.
            let ts_sz = self.opts.icmp.timestamp_size();
            let strip = |k: &[u8]| -> usize { k.len().saturating_sub(ts_sz) };
            let uk = user_key(ikey);
            let uk = &uk[..strip(uk)];
            let last = user_key(&self.last_key);
            if self.num_points == 0 || &last[..strip(last)] != uk {
                if let Some(p) = &mut self.filter_parts {
                    p.before_key(f, uk);
                }
                self.opts.filter_contents.add(f, uk);
            }
        }
        self.data_block.add(ikey, value);
        if self.num_points == 0 {
            self.first_key = ikey.to_vec();
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.num_points += 1;
        self.count(ikey, value);
        Ok(())
    }

    /// Add a range tombstone `[user_key(start_ikey), end_user_key)` at the start key's sequence
    /// number. Written to the `rocksdb.range_del` block (sorted at finish).
    pub(crate) fn add_range_tombstone(&mut self, start_ikey: &[u8], end_user_key: &[u8]) -> Result<()> {
        self.check()?;
        if start_ikey.len() < 8 {
            return Err(Error::invalid("range tombstone start key too short"));
        }
        let mut k = start_ikey.to_vec();
        let n = k.len();
        k[n - 8] = vt::RANGE_DELETION;
        self.count(&k, end_user_key);
        self.range_dels.push((k, end_user_key.to_vec()));
        Ok(())
    }

    #[cfg(test)]
    /// Entries added so far (points + tombstones).
    pub(crate) fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Hint the file system that the bytes written so far will not be read back soon
    /// ([`WritableFile::invalidate_cache`]).
    pub(crate) fn invalidate_cache(&mut self) -> Result<()> {
        self.file.invalidate_cache()
    }

    /// Bytes written so far plus the pending data block.
    pub(crate) fn file_size_estimate(&self) -> u64 {
        let pending = if self.data_block.is_empty() {
            0
        } else {
            self.data_block.current_size_estimate()
        };
        self.offset + pending as u64
    }

    fn should_flush(&self, key_len: usize, value_len: usize) -> bool {
        if self.data_block.is_empty() {
            return false;
        }
        let bs = self.opts.block_size;
        let curr = self.data_block.current_size_estimate();
        if curr >= bs {
            return true;
        }
        let deviation_limit = (bs * 90).div_ceil(100);
        self.data_block.estimate_size_after_kv(key_len, value_len) > bs && curr > deviation_limit
    }

    fn write_block(&mut self, raw: &[u8], compress: bool) -> Result<BlockHandle> {
        let mut ty = 0u8;
        let mut use_compressed = false;
        if compress && self.opts.compression != DBCompressionType::None {
            let mut buf = std::mem::take(&mut self.compress_buf);
            if compress_block(self.opts.compression, raw, &mut buf) {
                ty = self.opts.compression as u8;
                use_compressed = true;
            }
            self.compress_buf = buf;
        }
        let contents: &[u8] = if use_compressed { &self.compress_buf } else { raw };
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        let ck = trailer_checksum(
            self.opts.checksum,
            contents,
            ty,
            self.base_context_checksum,
            self.offset,
        );
        let mut tr = [0u8; BLOCK_TRAILER_LEN];
        tr[0] = ty;
        tr[1..].copy_from_slice(&ck.to_le_bytes());
        let r = self.file.append(contents).and_then(|_| self.file.append(&tr));
        if let Err(e) = r {
            self.err = Some(e.clone());
            return Err(e);
        }
        self.offset += contents.len() as u64 + BLOCK_TRAILER_LEN as u64;
        Ok(handle)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        let raw = self.data_block.finish();
        let h = self.write_block(&raw, true);
        self.data_block.reset_with(raw);
        let h = h?;
        self.num_data_blocks += 1;
        self.pending_handle = Some(h);
        Ok(())
    }

    /// Index entry for the block just flushed (if any); `next` is the first key of the next
    /// block. The handle stays pending until the separator is known: the user comparator may
    /// panic, and a caller that catches it must still find the block indexed by a later `add`
    /// or `finish`.
    fn add_index_entry(&mut self, next: Option<&[u8]>) {
        if self.pending_handle.is_none() {
            return;
        }
        let sep = match next {
            Some(next) => {
                let ucmp = self.opts.icmp.user_comparator();
                let start = user_key(&self.last_key);
                let limit = user_key(next);
                if !self.key_plus_seq && self.opts.icmp.compare_user(start, limit) == Ordering::Equal {
                    self.key_plus_seq = true;
                }
                match ucmp.find_shortest_separator(start, limit) {
                    Some(s) if s.len() <= start.len() && self.opts.icmp.compare_user(start, &s) == Ordering::Less => {
                        make_internal_key(&s, MAX_SEQUENCE, vt::SEPARATOR)
                    }
                    _ => self.last_key.clone(),
                }
            }
            None => self.last_key.clone(),
        };
        let Some(h) = self.pending_handle.take() else {
            return;
        };
        if let Some(c) = &mut self.index_cuts {
            c.before_entry(self.index_entries.len(), self.last_key.len(), h, next.is_none());
        }
        self.index_entries.push((sep, h));
    }

    /// Give up on the table (the caller deletes the file).
    pub(crate) fn abandon(self) {}

    /// Write filter, index, range-del, properties, metaindex and footer; flush the file (no
    /// sync). Returns the table's summary and the file (for the caller to sync and close).
    pub(crate) fn finish(mut self) -> Result<(TableInfo, Box<dyn WritableFile>)> {
        self.check()?;
        self.flush_data_block()?;
        self.add_index_entry(None);
        let data_size = self.offset;
        let fv = self.opts.format_version;
        let mut meta: BTreeMap<&'static str, BlockHandle> = BTreeMap::new();

        let user_key_index = fv >= 3 && !self.key_plus_seq;
        let delta = fv >= 4;

        let filter = self.write_filter(user_key_index, delta, &mut meta)?;

        // index
        let entries = std::mem::take(&mut self.index_entries);
        let cuts = self.index_cuts.take().map(|c| c.cuts);
        let mut write = |b: &[u8], c: bool| self.write_block(b, c);
        let index = write_index(&entries, cuts.as_deref(), user_key_index, delta, &mut write)?;

        self.write_range_dels(&mut meta)?;
        let props = self.properties(data_size, &index, &filter, user_key_index, delta);
        let ph = self.write_properties(&props)?;
        meta.insert(PROPERTIES_NAME, ph);
        self.write_metaindex_and_footer(meta, index.handle)?;
        let info = self.table_info();
        Ok((info, self.file))
    }

    /// The filter (full, or partitioned with its top level), its metaindex entry in `meta`.
    fn write_filter(
        &mut self,
        user_key_index: bool,
        delta: bool,
        meta: &mut BTreeMap<&'static str, BlockHandle>,
    ) -> Result<FilterWritten> {
        let mut written = FilterWritten::default();
        if let Some(mut f) = self.filter.take() {
            written.present = true;
            if let Some(mut parts) = self.filter_parts.take() {
                parts.finish(&mut f);
                written.num_entries = parts.num_entries;
                if !parts.parts.is_empty() {
                    let mut write = |b: &[u8], c: bool| self.write_block(b, c);
                    let (h, size) = write_partitioned_filter(&parts.parts, user_key_index, delta, &mut write)?;
                    written.size = size;
                    meta.insert(PARTITIONED_FILTER_NAME, h);
                }
            } else {
                written.num_entries = f.num_entries() as u64;
                if let Some(bytes) = f.finish() {
                    let h = self.write_block(&bytes, false)?;
                    written.size = bytes.len() as u64;
                    meta.insert(FULL_FILTER_NAME, h);
                }
            }
        }
        Ok(written)
    }

    /// The range tombstones' block, sorted by start key, its metaindex entry in `meta`.
    fn write_range_dels(&mut self, meta: &mut BTreeMap<&'static str, BlockHandle>) -> Result<()> {
        if !self.range_dels.is_empty() {
            let icmp = self.opts.icmp.clone();
            self.range_dels.sort_by(|a, b| icmp.compare(&a.0, &b.0));
            let mut rb = BlockBuilder::new(1, false);
            for (k, v) in &self.range_dels {
                rb.add(k, v);
            }
            let raw = rb.finish();
            let h = self.write_block(&raw, false)?;
            meta.insert(RANGE_DEL_NAME, h);
        }
        Ok(())
    }

    /// The properties RocksDB writes for this table (name -> encoded value).
    fn properties(
        &self,
        data_size: u64,
        index: &IndexWritten,
        filter: &FilterWritten,
        user_key_index: bool,
        delta: bool,
    ) -> BTreeMap<&'static str, Vec<u8>> {
        let mut props: BTreeMap<&'static str, Vec<u8>> = BTreeMap::new();
        let mut u = |name: &'static str, v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            props.insert(name, b);
        };
        u("rocksdb.data.size", data_size);
        u("rocksdb.index.size", index.index_size);
        if let Some((partitions, top_size)) = index.partitions {
            u("rocksdb.index.partitions", partitions);
            u("rocksdb.top-level.index.size", top_size);
        }
        u("rocksdb.index.key.is.user.key", user_key_index as u64);
        u("rocksdb.index.value.is.delta.encoded", delta as u64);
        u("rocksdb.filter.size", filter.size);
        u("rocksdb.raw.key.size", self.raw_key_size);
        u("rocksdb.raw.value.size", self.raw_value_size);
        u("rocksdb.num.data.blocks", self.num_data_blocks);
        u("rocksdb.num.entries", self.num_entries);
        u("rocksdb.num.filter_entries", filter.num_entries);
        u("rocksdb.deleted.keys", self.num_deletions);
        u("rocksdb.merge.operands", self.num_merges);
        u("rocksdb.num.range-deletions", self.num_range_deletions);
        u("rocksdb.format.version", 0);
        u("rocksdb.fixed.key.length", 0);
        let cf_id = if let Some(id) = self.opts.column_family_id {
            id as u64
        } else if self.opts.column_family_name == "default" {
            0
        } else {
            0x7fff_ffff
        };
        u("rocksdb.column.family.id", cf_id);
        u("rocksdb.creation.time", self.opts.creation_time);
        u("rocksdb.oldest.key.time", self.opts.creation_time);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        if now > 0 && !self.opts.external {
            u("rocksdb.file.creation.time", now);
        }
        u("rocksdb.original.file.number", self.opts.file_number);
        let mut s = |name: &'static str, v: &[u8]| {
            props.insert(name, v.to_vec());
        };
        s("rocksdb.column.family.name", self.opts.column_family_name.as_bytes());
        s("rocksdb.comparator", self.opts.icmp.user_comparator().name().as_bytes());
        s(
            "rocksdb.merge.operator",
            self.opts.merge_operator_name.as_deref().unwrap_or("nullptr").as_bytes(),
        );
        let contents = self.opts.filter_contents.clone();
        s(PREFIX_EXTRACTOR_PROP, contents.extractor_name().as_bytes());
        s("rocksdb.property.collectors", b"[]");
        s("rocksdb.compression", self.opts.compression.rocksdb_name().as_bytes());
        s(
            "rocksdb.compression_options",
            b"window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; enabled=0; max_dict_buffer_bytes=0; use_zstd_dict_trainer=1; ",
        );
        s("rocksdb.creating.db.identity", self.opts.db_id.as_bytes());
        s("rocksdb.creating.session.identity", self.opts.db_session_id.as_bytes());
        s("rocksdb.creating.host.identity", hostname().as_bytes());
        if filter.present {
            s("rocksdb.filter.policy", b"bloomfilter");
        }
        if self.opts.external {
            s(
                crate::table::block_based::format::EXTERNAL_SST_VERSION,
                &2u32.to_le_bytes(),
            );
            s(
                crate::table::block_based::format::EXTERNAL_SST_GLOBAL_SEQNO,
                &0u64.to_le_bytes(),
            );
        }
        let mut it = Vec::new();
        put_fixed32(&mut it, if index.partitions.is_some() { 2 } else { 0 });
        s("rocksdb.block.based.table.index.type", &it);
        let flag = |on: bool| if on { &b"1"[..] } else { &b"0"[..] };
        s(WHOLE_KEY_PROP, flag(contents.whole_key_filtering));
        s(PREFIX_FILTERING_PROP, flag(contents.prefix_extractor.is_some()));
        props
    }

    /// The properties block.
    fn write_properties(&mut self, props: &BTreeMap<&'static str, Vec<u8>>) -> Result<BlockHandle> {
        let mut pb = BlockBuilder::new(usize::MAX, false);
        for (k, v) in props {
            pb.add(k.as_bytes(), v);
        }
        let raw = pb.finish();
        self.write_block(&raw, false)
    }

    /// The metaindex block (with the index's handle from format_version 6) and the footer;
    /// then the file is flushed.
    fn write_metaindex_and_footer(
        &mut self,
        mut meta: BTreeMap<&'static str, BlockHandle>,
        index_handle: BlockHandle,
    ) -> Result<()> {
        if self.opts.format_version >= 6 {
            meta.insert(INDEX_NAME, index_handle);
        }
        let mut mb = BlockBuilder::new(1, false);
        for (k, h) in &meta {
            mb.add(k.as_bytes(), &h.encoded());
        }
        let raw = mb.finish();
        let mh = self.write_block(&raw, false)?;
        let footer = Footer {
            checksum: self.opts.checksum,
            format_version: self.opts.format_version,
            metaindex: mh,
            index: index_handle,
            base_context_checksum: self.base_context_checksum,
        };
        let fb = footer.encode(self.offset);
        self.file.append(&fb)?;
        self.offset += fb.len() as u64;
        self.file.flush()?;
        Ok(())
    }

    /// The smallest and largest internal keys of the table, range tombstones included (a
    /// tombstone's end as `end | (MAX_SEQ, 0x0F)`).
    fn file_bounds(&self) -> (Vec<u8>, Vec<u8>) {
        let icmp = self.opts.icmp.clone();
        let mut smallest = self.first_key.clone();
        let mut largest = self.last_key.clone();
        for (k, end) in &self.range_dels {
            if smallest.is_empty() || icmp.compare(k, &smallest) == Ordering::Less {
                smallest = k.clone();
            }
            let sentinel = make_internal_key(end, MAX_SEQUENCE, vt::RANGE_DELETION);
            if largest.is_empty() || icmp.compare(&sentinel, &largest) == Ordering::Greater {
                largest = sentinel;
            }
        }
        (smallest, largest)
    }

    /// What `finish` reports, once the footer is written.
    fn table_info(&self) -> TableInfo {
        let (smallest, largest) = self.file_bounds();
        TableInfo {
            file_size: self.offset,
            smallest,
            largest,
            smallest_seqno: if self.num_entries == 0 { 0 } else { self.smallest_seqno },
            largest_seqno: self.largest_seqno,
            num_entries: self.num_entries,
            num_deletions: self.num_deletions,
            num_range_deletions: self.num_range_deletions,
            raw_key_size: self.raw_key_size,
            raw_value_size: self.raw_value_size,
            num_data_blocks: self.num_data_blocks,
        }
    }
}

/// What the filter section of a table holds (for its properties).
#[derive(Default)]
struct FilterWritten {
    /// `rocksdb.filter.size`: the bytes of the full filter, or of the partitions and top level.
    size: u64,
    /// `rocksdb.num.filter_entries`.
    num_entries: u64,
    /// The table has a filter policy (`rocksdb.filter.policy`), even when no filter block was
    /// written.
    present: bool,
}
