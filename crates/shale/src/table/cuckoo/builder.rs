//! Writing CuckooTable files exactly as RocksDB's `CuckooTableBuilder` does.
//!
//! Entries are kept in memory until [`CuckooTableBuilder::finish`], which places them (see
//! [`super::hash`]) and writes `buckets | properties | metaindex | footer`. A file whose first
//! key has sequence 0 and that holds only such values stores bare user keys ("last level");
//! otherwise buckets hold full internal keys.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::coding::put_varint64;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{parse_internal_key, vt, InternalKeyComparator};
use crate::table::block::BlockBuilder;
use crate::table::format::BlockHandle;
use crate::table::format::PROPERTIES_NAME;
use crate::table::info::TableInfo;

use super::format::{encode_footer, prop, CuckooTableOptions, MAX_NUM_HASH_FUNC};
use super::hash::{place, CuckooHasher, Placement, PlacementParams, EMPTY};

/// Options of a [`CuckooTableBuilder`] (the table-independent fields mirror
/// `TableBuilderOptions`).
#[derive(Clone, Debug)]
pub(crate) struct CuckooTableBuilderOptions {
    pub icmp: InternalKeyComparator,
    pub table: CuckooTableOptions,
    pub column_family_name: String,
    /// The family's id for the table properties; None: 0 for `default`, else RocksDB's
    /// "unknown" (0x7fffffff, as for an external file).
    pub column_family_id: Option<u32>,
    pub db_id: String,
    pub db_session_id: String,
    pub file_number: u64,
    /// Seconds since the epoch (`rocksdb.creation.time`; RocksDB's cuckoo builder leaves 0).
    pub creation_time: u64,
}

impl Default for CuckooTableBuilderOptions {
    fn default() -> Self {
        CuckooTableBuilderOptions {
            icmp: InternalKeyComparator::default(),
            table: CuckooTableOptions::default(),
            column_family_name: "default".into(),
            column_family_id: None,
            db_id: String::new(),
            db_session_id: String::new(),
            file_number: 0,
            creation_time: 0,
        }
    }
}

/// Builds one cuckoo file. Add entries in increasing internal-key order, one per user key,
/// only Put and Delete, all keys of one length and all values of one length.
pub(crate) struct CuckooTableBuilder {
    opts: CuckooTableBuilderOptions,
    file: Box<dyn WritableFile>,
    err: Option<Error>,
    last_level: bool,
    /// Bytes of a stored key (user key, plus 8 unless last level).
    key_size: usize,
    user_key_len: usize,
    value_size: Option<usize>,
    /// `key | value` of each Put, in the order added.
    kvs: Vec<u8>,
    /// Keys of the deletions, in the order added (they are placed after the Puts).
    deleted: Vec<u8>,
    num_values: u64,
    num_entries: u64,
    smallest_user_key: Vec<u8>,
    largest_user_key: Vec<u8>,
    first_ikey: Vec<u8>,
    last_ikey: Vec<u8>,
    smallest_seqno: u64,
    largest_seqno: u64,
    /// Power-of-two table size tracked while adding (mask hashing only).
    mask_table_size: u64,
}

impl CuckooTableBuilder {
    /// Start a table. Invalid options make every later call fail with InvalidArgument.
    pub(crate) fn new(opts: CuckooTableBuilderOptions, file: Box<dyn WritableFile>) -> CuckooTableBuilder {
        let err = opts.table.validate().err();
        CuckooTableBuilder {
            opts,
            file,
            err,
            last_level: false,
            key_size: 0,
            user_key_len: 0,
            value_size: None,
            kvs: Vec::new(),
            deleted: Vec::new(),
            num_values: 0,
            num_entries: 0,
            smallest_user_key: Vec::new(),
            largest_user_key: Vec::new(),
            first_ikey: Vec::new(),
            last_ikey: Vec::new(),
            smallest_seqno: u64::MAX,
            largest_seqno: 0,
            mask_table_size: 2,
        }
    }

    fn check(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Add a Put (type Value) or Delete. Every other type, a second entry for a user key,
    /// keys out of order and keys or values whose length differs from the first are rejected
    /// (the entry is not added; the builder stays usable).
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.check()?;
        let pk = parse_internal_key(ikey).map_err(|_| {
            Error::invalid(format!(
                "cuckoo table builder: malformed internal key ({} bytes)",
                ikey.len()
            ))
        })?;
        match pk.vtype {
            vt::VALUE | vt::DELETION => {}
            vt::RANGE_DELETION => return self.add_range_tombstone(ikey, value),
            vt::MERGE => return Err(Error::NotSupported("cuckoo tables cannot hold merge operands".into())),
            t => {
                return Err(Error::NotSupported(format!(
                    "cuckoo tables hold only Put and Delete entries, not value type {t:#x}"
                )))
            }
        }
        let uk = pk.user_key;
        if self.num_entries > 0 {
            if self.opts.icmp.compare(ikey, &self.last_ikey) != Ordering::Greater {
                return Err(Error::invalid("cuckoo table builder: keys added out of order"));
            }
            if self
                .opts
                .icmp
                .compare_user(uk, &self.last_ikey[..self.last_ikey.len() - 8])
                == Ordering::Equal
            {
                return Err(Error::NotSupported(
                    "cuckoo tables hold one entry per user key (no snapshots); got a second entry".into(),
                ));
            }
            if uk.len() != self.user_key_len {
                return Err(Error::NotSupported(format!(
                    "cuckoo tables need keys of one length: got a {}-byte user key after {}-byte ones",
                    uk.len(),
                    self.user_key_len
                )));
            }
        } else {
            if uk.is_empty() {
                return Err(Error::NotSupported(
                    "cuckoo tables cannot hold an empty user key".into(),
                ));
            }
            if self.opts.table.identity_as_first_hash && uk.len() < 8 {
                return Err(Error::invalid(format!(
                    "identity_as_first_hash needs user keys of at least 8 bytes, got {}",
                    uk.len()
                )));
            }
        }
        if pk.vtype == vt::VALUE {
            if let Some(n) = self.value_size {
                if n != value.len() {
                    return Err(Error::NotSupported(format!(
                        "cuckoo tables need values of one length: got {} bytes after {n}-byte ones",
                        value.len()
                    )));
                }
            }
        }
        if self.num_entries >= u32::MAX as u64 - 1 {
            return Err(Error::NotSupported(
                "a cuckoo table holds fewer than 2^32-1 keys".into(),
            ));
        }

        if self.num_entries == 0 {
            self.last_level = pk.seq == 0 && pk.vtype == vt::VALUE;
            self.user_key_len = uk.len();
            self.key_size = if self.last_level { uk.len() } else { ikey.len() };
            self.smallest_user_key = uk.to_vec();
            self.largest_user_key = uk.to_vec();
            self.first_ikey = ikey.to_vec();
        } else if self.last_level && (pk.seq != 0 || pk.vtype != vt::VALUE) {
            self.leave_last_level();
        }
        let stored: &[u8] = if self.last_level { uk } else { ikey };
        if pk.vtype == vt::VALUE {
            self.value_size = Some(value.len());
            self.kvs.extend_from_slice(stored);
            self.kvs.extend_from_slice(value);
            self.num_values += 1;
        } else {
            self.deleted.extend_from_slice(stored);
        }
        self.num_entries += 1;
        self.smallest_seqno = self.smallest_seqno.min(pk.seq);
        self.largest_seqno = self.largest_seqno.max(pk.seq);
        // Bytewise bounds for the unused key, tracked as RocksDB does.
        if uk < self.smallest_user_key.as_slice() {
            self.smallest_user_key = uk.to_vec();
        } else if uk > self.largest_user_key.as_slice() {
            self.largest_user_key = uk.to_vec();
        }
        self.last_ikey.clear();
        self.last_ikey.extend_from_slice(ikey);
        if !self.opts.table.use_module_hash
            && (self.mask_table_size as f64) < self.num_entries as f64 / self.opts.table.hash_table_ratio
        {
            self.mask_table_size *= 2;
        }
        Ok(())
    }

    /// A key with a sequence number or a deletion arrived after bare-user-key entries: store
    /// full internal keys (sequence 0, type Value) for the entries kept so far.
    fn leave_last_level(&mut self) {
        let vs = self.value_size.unwrap_or(0);
        let old = self.key_size + vs;
        let mut kvs = Vec::with_capacity(self.kvs.len() + self.num_values as usize * 8);
        let trailer = (vt::VALUE as u64).to_le_bytes();
        for e in self.kvs.chunks_exact(old.max(1)) {
            kvs.extend_from_slice(&e[..self.key_size]);
            kvs.extend_from_slice(&trailer);
            kvs.extend_from_slice(&e[self.key_size..]);
        }
        self.kvs = kvs;
        self.key_size += 8;
        self.last_level = false;
    }

    /// Range deletions cannot be stored in a cuckoo table: always NotSupported.
    pub(crate) fn add_range_tombstone(&mut self, _start_ikey: &[u8], _end_user_key: &[u8]) -> Result<()> {
        self.check()?;
        Err(Error::NotSupported(
            "cuckoo tables cannot hold range deletions (use the block-based table)".into(),
        ))
    }

    #[cfg(test)]
    pub(crate) fn num_entries(&self) -> u64 {
        self.num_entries
    }

    fn bucket_len(&self) -> u64 {
        (self.key_size + self.value_size.unwrap_or(0)) as u64
    }

    /// Expected file size (bucket bytes), as RocksDB's estimate.
    pub(crate) fn file_size_estimate(&self) -> u64 {
        if self.num_entries == 0 {
            return 0;
        }
        let bl = self.bucket_len();
        if self.opts.table.use_module_hash {
            ((bl * self.num_entries) as f64 / self.opts.table.hash_table_ratio) as u64
        } else {
            let mut size = self.mask_table_size;
            if (size as f64) < (self.num_entries + 1) as f64 / self.opts.table.hash_table_ratio {
                size *= 2;
            }
            (bl * size).saturating_sub(1)
        }
    }

    #[cfg(test)]
    /// Give up on the table (the caller deletes the file).
    pub(crate) fn abandon(self) {}

    /// Stored key of entry `idx` (Puts first, then deletions).
    fn stored_key(&self, idx: u32) -> &[u8] {
        let idx = idx as u64;
        if idx < self.num_values {
            let bl = self.key_size + self.value_size.unwrap_or(0);
            let o = idx as usize * bl;
            &self.kvs[o..o + self.key_size]
        } else {
            let o = (idx - self.num_values) as usize * self.key_size;
            &self.deleted[o..o + self.key_size]
        }
    }

    /// The key no entry uses, for empty buckets: the smallest user key with a byte lowered, or
    /// failing that the largest with a byte raised (bytewise order, as RocksDB).
    fn unused_user_key(&self) -> Option<Vec<u8>> {
        let mut k = self.smallest_user_key.clone();
        for pos in (0..k.len()).rev() {
            k[pos] = k[pos].wrapping_sub(1);
            if k.as_slice() < self.smallest_user_key.as_slice() {
                return Some(k);
            }
        }
        let mut k = self.largest_user_key.clone();
        for pos in (0..k.len()).rev() {
            k[pos] = k[pos].wrapping_add(1);
            if k.as_slice() > self.largest_user_key.as_slice() {
                return Some(k);
            }
        }
        None
    }

    /// Place the entries and write the file; flushes, does not sync. On error nothing more is
    /// written (the caller deletes the file).
    pub(crate) fn finish(mut self) -> Result<(TableInfo, Box<dyn WritableFile>)> {
        self.check()?;
        let t = &self.opts.table;
        let table_size = if t.use_module_hash {
            (self.num_entries as f64 / t.hash_table_ratio) as u64
        } else {
            self.mask_table_size
        };
        let (placement, empty_key) = self.place_entries(table_size)?;
        let mut unused_bucket = empty_key.clone();
        unused_bucket.resize(self.key_size + self.value_size.unwrap_or(0), b'a');
        let data_size = self.write_buckets(&placement.buckets, &unused_bucket)?;
        let props = self.properties(data_size, table_size, placement.num_hash_func, &empty_key);
        let file_size = self.write_properties_metaindex_and_footer(&props, data_size)?;
        let info = self.table_info(file_size);
        Ok((info, self.file))
    }

    /// Place the entries in `table_size` buckets by cuckoo hashing (none when the table is
    /// empty), with the key that marks an empty bucket: an unused user key, and a value's
    /// trailer unless the file is last-level.
    fn place_entries(&self, table_size: u64) -> Result<(Placement, Vec<u8>)> {
        let n = self.num_entries;
        if n == 0 {
            let none = Placement {
                buckets: Vec::new(),
                num_hash_func: 2,
            };
            return Ok((none, Vec::new()));
        }
        let t = &self.opts.table;
        let hasher = CuckooHasher {
            table_size,
            use_module_hash: t.use_module_hash,
            identity_as_first_hash: t.identity_as_first_hash,
        };
        let params = PlacementParams {
            table_size,
            cuckoo_block_size: t.cuckoo_block_size,
            max_search_depth: t.max_search_depth,
            max_num_hash_func: MAX_NUM_HASH_FUNC,
        };
        let ukl = self.user_key_len;
        let p = place(
            n as u32,
            |i| &self.stored_key(i)[..ukl],
            |k, c| hasher.bucket(k, c),
            params,
        )?;
        let mut empty_key = self.unused_user_key().ok_or_else(|| {
            Error::NotSupported(
                "cuckoo table: every key of this length is between the smallest and largest key; \
                 no unused key is left to mark empty buckets"
                    .into(),
            )
        })?;
        if !self.last_level {
            empty_key.extend_from_slice(&(vt::VALUE as u64).to_le_bytes());
        }
        Ok((p, empty_key))
    }

    /// Write the buckets in order (`unused_bucket` for an empty one, a deleted entry's value
    /// as `a`s), 1 MiB at a time; returns the bytes written.
    fn write_buckets(&mut self, buckets: &[u32], unused_bucket: &[u8]) -> Result<u64> {
        let vs = self.value_size.unwrap_or(0);
        let bucket_len = self.key_size + vs;
        let deleted_value = vec![b'a'; vs];
        let mut out = Vec::with_capacity((1 << 20).min(buckets.len() * bucket_len + 1));
        let mut offset = 0u64;
        for &b in buckets {
            if b == EMPTY {
                out.extend_from_slice(unused_bucket);
            } else {
                out.extend_from_slice(self.stored_key(b));
                if (b as u64) < self.num_values {
                    let o = b as usize * bucket_len + self.key_size;
                    out.extend_from_slice(&self.kvs[o..o + vs]);
                } else {
                    out.extend_from_slice(&deleted_value);
                }
            }
            if out.len() >= 1 << 20 {
                self.file.append(&out)?;
                offset += out.len() as u64;
                out.clear();
            }
        }
        self.file.append(&out)?;
        offset += out.len() as u64;
        Ok(offset)
    }

    /// The properties RocksDB's `CuckooTableBuilder` writes (name -> encoded value).
    fn properties(
        &self,
        data_size: u64,
        table_size: u64,
        num_hash_func: u32,
        empty_key: &[u8],
    ) -> BTreeMap<&'static str, Vec<u8>> {
        let t = &self.opts.table;
        let n = self.num_entries;
        let vs = self.value_size.unwrap_or(0);
        let mut props: BTreeMap<&'static str, Vec<u8>> = BTreeMap::new();
        let mut u = |name: &'static str, v: u64| {
            let mut b = Vec::new();
            put_varint64(&mut b, v);
            props.insert(name, b);
        };
        u("rocksdb.column.family.id", self.cf_id());
        u("rocksdb.creation.time", self.opts.creation_time);
        u("rocksdb.data.size", data_size);
        u("rocksdb.deleted.keys", n - self.num_values);
        u("rocksdb.filter.size", 0);
        u("rocksdb.fixed.key.length", self.key_size as u64);
        u("rocksdb.format.version", 0);
        u("rocksdb.index.key.is.user.key", 0);
        u("rocksdb.index.size", 0);
        u("rocksdb.index.value.is.delta.encoded", 0);
        u("rocksdb.merge.operands", 0);
        u("rocksdb.num.data.blocks", 1);
        u("rocksdb.num.entries", n);
        u("rocksdb.num.filter_entries", 0);
        u("rocksdb.num.range-deletions", 0);
        u("rocksdb.oldest.key.time", self.opts.creation_time);
        if self.opts.file_number > 0 {
            u("rocksdb.original.file.number", self.opts.file_number);
        }
        u("rocksdb.raw.key.size", n * self.key_size as u64);
        u("rocksdb.raw.value.size", n * vs as u64);
        let mut s = |name: &'static str, v: &[u8]| {
            props.insert(name, v.to_vec());
        };
        s("rocksdb.column.family.name", self.opts.column_family_name.as_bytes());
        if !self.opts.db_id.is_empty() {
            s("rocksdb.creating.db.identity", self.opts.db_id.as_bytes());
        }
        if !self.opts.db_session_id.is_empty() {
            s("rocksdb.creating.session.identity", self.opts.db_session_id.as_bytes());
        }
        s(prop::EMPTY_KEY, empty_key);
        s(prop::NUM_HASH_FUNC, &num_hash_func.to_le_bytes());
        s(prop::HASH_TABLE_SIZE, &table_size.to_le_bytes());
        s(prop::VALUE_LENGTH, &(vs as u64).to_le_bytes());
        s(prop::IS_LAST_LEVEL, &[self.last_level as u8]);
        s(prop::CUCKOO_BLOCK_SIZE, &t.cuckoo_block_size.to_le_bytes());
        s(prop::IDENTITY_AS_FIRST_HASH, &[t.identity_as_first_hash as u8]);
        s(prop::USE_MODULE_HASH, &[t.use_module_hash as u8]);
        s(prop::USER_KEY_LENGTH, &(self.user_key_len as u32).to_le_bytes());
        props
    }

    /// The properties block, the metaindex and the footer, after the buckets (which end at
    /// `offset`); then the file is flushed. Returns the file's size.
    fn write_properties_metaindex_and_footer(
        &mut self,
        props: &BTreeMap<&'static str, Vec<u8>>,
        mut offset: u64,
    ) -> Result<u64> {
        let mut pb = BlockBuilder::new(usize::MAX, false);
        for (k, v) in props {
            pb.add(k.as_bytes(), v);
        }
        let raw = pb.finish();
        let ph = BlockHandle::new(offset, raw.len() as u64);
        self.file.append(&raw)?;
        offset += raw.len() as u64;

        // metaindex + footer
        let mut mb = BlockBuilder::new(1, false);
        mb.add(PROPERTIES_NAME.as_bytes(), &ph.encoded());
        let raw = mb.finish();
        let mh = BlockHandle::new(offset, raw.len() as u64);
        self.file.append(&raw)?;
        offset += raw.len() as u64;
        let footer = encode_footer(mh);
        self.file.append(&footer)?;
        offset += footer.len() as u64;
        self.file.flush()?;
        Ok(offset)
    }

    /// What `finish` reports about the file it wrote (`file_size` bytes).
    fn table_info(&self, file_size: u64) -> TableInfo {
        let n = self.num_entries;
        let vs = self.value_size.unwrap_or(0);
        TableInfo {
            file_size,
            smallest: self.first_ikey.clone(),
            largest: self.last_ikey.clone(),
            smallest_seqno: if n == 0 { 0 } else { self.smallest_seqno },
            largest_seqno: self.largest_seqno,
            num_entries: n,
            num_deletions: n - self.num_values,
            num_range_deletions: 0,
            raw_key_size: n * self.key_size as u64,
            raw_value_size: n * vs as u64,
            num_data_blocks: 1,
        }
    }

    fn cf_id(&self) -> u64 {
        if let Some(id) = self.opts.column_family_id {
            id as u64
        } else if self.opts.column_family_name == "default" {
            0
        } else {
            0x7fff_ffff
        }
    }
}
