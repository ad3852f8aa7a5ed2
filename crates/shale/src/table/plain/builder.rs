//! Writing PlainTable files as RocksDB does: records, optional bloom and index blocks
//! (`store_index_in_file`), properties, metaindex, legacy footer.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::coding::{put_fixed32, put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{parse_internal_key, vt, InternalKeyComparator};
use crate::slice_transform::PrefixExtractor;
use crate::table::format::BlockHandle;
use crate::table::format::PROPERTIES_NAME;
use crate::table::info::TableInfo;

use super::bloom::PlainBloom;
use super::coding::KeyEncoder;
use super::format::{
    KeyEncodingType, PlainTableFactoryOptions, BLOOM_BLOCK_NAME, INDEX_BLOCK_NAME, MAX_FILE_SIZE, PROP_BLOOM_VERSION,
    PROP_ENCODING_TYPE, PROP_NUM_BLOOM_BLOCKS,
};
use super::index::{num_buckets, slice_hash, IndexBuilder};
use super::props::{legacy_footer, metaindex_block, properties_block};

/// Options for [`PlainTableBuilder`]: the comparator, the plain-table options, the prefix
/// extractor and the identity fields `TableBuilderOptions` carries for block-based tables.
#[derive(Clone)]
pub(crate) struct PlainTableBuilderOptions {
    pub icmp: InternalKeyComparator,
    pub plain: PlainTableFactoryOptions,
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    pub column_family_name: String,
    /// The family's id for the table properties; None: 0 for `default`, else RocksDB's
    /// "unknown" (0x7fffffff, as for an external file).
    pub column_family_id: Option<u32>,
    pub db_id: String,
    pub db_session_id: String,
    /// `rocksdb.creating.host.identity`; None: this machine's host name.
    pub db_host_id: Option<String>,
    pub file_number: u64,
    /// `rocksdb.creation.time` and `rocksdb.oldest.key.time` (RocksDB's plain builder leaves
    /// both 0).
    pub creation_time: u64,
}

impl Default for PlainTableBuilderOptions {
    fn default() -> Self {
        PlainTableBuilderOptions {
            icmp: InternalKeyComparator::default(),
            plain: PlainTableFactoryOptions::default(),
            prefix_extractor: None,
            column_family_name: "default".into(),
            column_family_id: None,
            db_id: String::new(),
            db_session_id: String::new(),
            db_host_id: None,
            file_number: 0,
            creation_time: 0,
        }
    }
}

/// Writes one PlainTable file. Call [`add`](Self::add) with strictly increasing internal keys,
/// then [`finish`](Self::finish) (flushes, does not sync) or [`abandon`](Self::abandon).
pub(crate) struct PlainTableBuilder {
    opts: PlainTableBuilderOptions,
    file: Box<dyn WritableFile>,
    encoder: KeyEncoder,
    index: Option<IndexBuilder>,
    /// One hash per key (of its prefix, or of the user key in total-order mode) for the bloom
    /// stored in the file.
    key_hashes: Vec<u32>,
    offset: u64,
    record: Vec<u8>,
    err: Option<Error>,
    first_key: Vec<u8>,
    last_key: Vec<u8>,
    num_entries: u64,
    num_deletions: u64,
    num_merges: u64,
    raw_key_size: u64,
    raw_value_size: u64,
    smallest_seqno: u64,
    largest_seqno: u64,
}

impl PlainTableBuilder {
    /// Start a table. Invalid options make every later call fail with InvalidArgument.
    pub(crate) fn new(opts: PlainTableBuilderOptions, file: Box<dyn WritableFile>) -> PlainTableBuilder {
        let err = opts.plain.validate_for_build(opts.prefix_extractor.is_some()).err();
        let encoder = KeyEncoder::new(
            opts.plain.encoding_type,
            opts.plain.user_key_len,
            opts.plain.sparseness(),
            opts.prefix_extractor.clone(),
        );
        let index = opts
            .plain
            .store_index_in_file
            .then(|| IndexBuilder::new(opts.plain.index_sparseness));
        PlainTableBuilder {
            opts,
            file,
            encoder,
            index,
            key_hashes: Vec::new(),
            offset: 0,
            record: Vec::new(),
            err,
            first_key: Vec::new(),
            last_key: Vec::new(),
            num_entries: 0,
            num_deletions: 0,
            num_merges: 0,
            raw_key_size: 0,
            raw_value_size: 0,
            smallest_seqno: u64::MAX,
            largest_seqno: 0,
        }
    }

    fn check(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Append one entry. Range deletions are NotSupported (as in RocksDB); merges, deletions
    /// and every other point type are stored like values.
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.check()?;
        let pk = parse_internal_key(ikey).map_err(|_| Error::invalid("plain table key is not a valid internal key"))?;
        if pk.vtype == vt::RANGE_DELETION {
            return Err(Error::NotSupported(
                "range deletions are not supported by PlainTable".into(),
            ));
        }
        let fixed = self.opts.plain.user_key_len;
        if fixed != 0 && pk.user_key.len() != fixed as usize {
            return Err(Error::invalid(format!(
                "plain_table_options.user_key_len is {fixed} but a key of {} bytes was added",
                pk.user_key.len()
            )));
        }
        if self.num_entries > 0 && self.opts.icmp.compare(ikey, &self.last_key) != Ordering::Greater {
            return Err(Error::invalid("plain table keys must be added in increasing order"));
        }
        let value_len = u32::try_from(value.len())
            .map_err(|_| Error::invalid(format!("value of {} bytes is too large for PlainTable", value.len())))?;
        let (seq, user_key) = (pk.seq, pk.user_key);
        let prefix: &[u8] = match &self.opts.prefix_extractor {
            Some(p) => p.transform(user_key),
            None => &[],
        };
        self.record.clear();
        self.encoder.append_key(ikey, &mut self.record);
        put_varint32(&mut self.record, value_len);
        let rec_offset = self.offset;
        let end = rec_offset + self.record.len() as u64 + value.len() as u64;
        if end > MAX_FILE_SIZE {
            let e = Error::NotSupported(format!(
                "PlainTable files are limited to {MAX_FILE_SIZE} bytes of records"
            ));
            self.err = Some(e.clone());
            return Err(e);
        }
        if let Some(ix) = &mut self.index {
            let h = if self.opts.prefix_extractor.is_some() {
                slice_hash(prefix)
            } else {
                slice_hash(user_key)
            };
            self.key_hashes.push(h);
            ix.add(prefix, rec_offset as u32, true);
        }
        let r = self.file.append(&self.record).and_then(|_| self.file.append(value));
        if let Err(e) = r {
            self.err = Some(e.clone());
            return Err(e);
        }
        self.offset = end;
        if self.num_entries == 0 {
            self.first_key = ikey.to_vec();
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.num_entries += 1;
        self.raw_key_size += ikey.len() as u64;
        self.raw_value_size += value.len() as u64;
        match pk.vtype {
            vt::DELETION | vt::SINGLE_DELETION => self.num_deletions += 1,
            vt::MERGE => self.num_merges += 1,
            _ => {}
        }
        self.smallest_seqno = self.smallest_seqno.min(seq);
        self.largest_seqno = self.largest_seqno.max(seq);
        Ok(())
    }

    /// PlainTable cannot hold range deletions (RocksDB: "Range deletion unsupported").
    pub(crate) fn add_range_tombstone(&mut self, _start_ikey: &[u8], _end_user_key: &[u8]) -> Result<()> {
        Err(Error::NotSupported(
            "range deletions are not supported by PlainTable".into(),
        ))
    }

    #[cfg(test)]
    pub(crate) fn num_entries(&self) -> u64 {
        self.num_entries
    }

    /// Bytes written so far.
    pub(crate) fn file_size_estimate(&self) -> u64 {
        self.offset
    }

    fn write(&mut self, bytes: &[u8]) -> Result<BlockHandle> {
        let h = BlockHandle::new(self.offset, bytes.len() as u64);
        self.file.append(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(h)
    }

    /// Write bloom/index (with `store_index_in_file`), properties, metaindex and footer; flush.
    pub(crate) fn finish(mut self) -> Result<(TableInfo, Box<dyn WritableFile>)> {
        self.check()?;
        let data_size = self.offset;
        let mut meta: BTreeMap<&str, BlockHandle> = BTreeMap::new();
        let mut extra: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut filter_size = 0u64;
        let mut index_size = 0u64;
        if let Some(ix) = self.index.take() {
            extra.insert(PROP_BLOOM_VERSION.into(), b"1".to_vec());
            if self.num_entries > 0 {
                let bits = self.opts.plain.bloom_bits_per_key as u32;
                if bits > 0 {
                    let total = (self.num_entries as u32).wrapping_mul(bits);
                    let mut n = Vec::new();
                    put_varint32(&mut n, 0);
                    extra.insert(PROP_NUM_BLOOM_BLOCKS.into(), n);
                    if let Some(mut bloom) = PlainBloom::with_bits(total as u64) {
                        for &h in &self.key_hashes {
                            bloom.add_hash(h);
                        }
                        let h = self.write(bloom.bytes())?;
                        filter_size = h.size;
                        meta.insert(BLOOM_BLOCK_NAME, h);
                    }
                }
                let buckets = num_buckets(
                    self.opts.prefix_extractor.is_none(),
                    ix.num_prefixes(),
                    self.opts.plain.hash_table_ratio,
                );
                let bytes = ix.finish(buckets);
                let h = self.write(&bytes)?;
                index_size = h.size;
                meta.insert(INDEX_BLOCK_NAME, h);
            }
        }

        let mut props: BTreeMap<String, Vec<u8>> = extra;
        let mut u = |name: &str, v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            props.insert(name.to_string(), b);
        };
        let o = &self.opts;
        let cf_id = if let Some(id) = o.column_family_id {
            id as u64
        } else if o.column_family_name == "default" {
            0
        } else {
            0x7fff_ffff
        };
        u("rocksdb.column.family.id", cf_id);
        u("rocksdb.creation.time", o.creation_time);
        u("rocksdb.data.size", data_size);
        u("rocksdb.deleted.keys", self.num_deletions);
        u("rocksdb.filter.size", filter_size);
        u("rocksdb.fixed.key.length", o.plain.user_key_len as u64);
        u(
            "rocksdb.format.version",
            (o.plain.encoding_type == KeyEncodingType::Prefix) as u64,
        );
        u("rocksdb.index.key.is.user.key", 0);
        u("rocksdb.index.size", index_size);
        u("rocksdb.index.value.is.delta.encoded", 0);
        u("rocksdb.merge.operands", self.num_merges);
        u("rocksdb.num.data.blocks", 1);
        u("rocksdb.num.entries", self.num_entries);
        u("rocksdb.num.filter_entries", 0);
        u("rocksdb.num.range-deletions", 0);
        u("rocksdb.oldest.key.time", o.creation_time);
        u("rocksdb.original.file.number", o.file_number);
        u("rocksdb.raw.key.size", self.raw_key_size);
        u("rocksdb.raw.value.size", self.raw_value_size);
        let mut s = |name: &str, v: &str| {
            if !v.is_empty() {
                props.insert(name.to_string(), v.as_bytes().to_vec());
            }
        };
        s("rocksdb.column.family.name", &o.column_family_name);
        s("rocksdb.creating.db.identity", &o.db_id);
        s("rocksdb.creating.session.identity", &o.db_session_id);
        let host = match &o.db_host_id {
            Some(h) => h.clone(),
            None => hostname(),
        };
        s("rocksdb.creating.host.identity", &host);
        s(
            "rocksdb.prefix.extractor.name",
            o.prefix_extractor.as_ref().map(|p| p.name()).unwrap_or("nullptr"),
        );
        let mut enc = Vec::new();
        put_fixed32(&mut enc, o.plain.encoding_type as u32);
        props.insert(PROP_ENCODING_TYPE.into(), enc);

        let ph = self.write(&properties_block(&props))?;
        meta.insert(PROPERTIES_NAME, ph);
        let mh = self.write(&metaindex_block(&meta))?;
        let footer = legacy_footer(mh);
        self.write(&footer)?;
        self.file.flush()?;

        let info = TableInfo {
            file_size: self.offset,
            smallest: self.first_key.clone(),
            largest: self.last_key.clone(),
            smallest_seqno: if self.num_entries == 0 { 0 } else { self.smallest_seqno },
            largest_seqno: self.largest_seqno,
            num_entries: self.num_entries,
            num_deletions: self.num_deletions,
            num_range_deletions: 0,
            raw_key_size: self.raw_key_size,
            raw_value_size: self.raw_value_size,
            num_data_blocks: 1,
        };
        Ok((info, self.file))
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
