//! `SstFileWriter`: table files written outside a DB, to be ingested later
//! (`DB::ingest_external_file`), in RocksDB's external-file format: a block-based table whose
//! keys all carry sequence number 0, whose point keys strictly increase, and whose properties
//! add `rocksdb.external_sst_file.version` = 2 and `rocksdb.external_sst_file.global_seqno` = 0
//! (see docs/ingest.md).

use std::marker::PhantomData;
use std::path::Path;

use super::open::new_session_id;
use crate::error::{Error, Result};
use crate::key::{make_internal_key, vt, InternalKeyComparator, UserCmpKind};
use crate::options::Options;
use crate::table::block_based::builder::{TableBuilder, TableBuilderOptions};

/// The column family id RocksDB's writer records when it is not given a family
/// (`TablePropertiesCollectorFactory::Context::kUnknownColumnFamily`).
pub(crate) const UNKNOWN_CF_ID: u32 = 0x7fff_ffff;

/// Writes one external table file at a time (the `rocksdb` crate's `SstFileWriter`).
pub struct SstFileWriter<'a> {
    opts: Options,
    icmp: InternalKeyComparator,
    session_id: String,
    /// RocksDB numbers the files of one writer 1, 2, ... (`rocksdb.original.file.number`).
    next_file_number: u64,
    builder: Option<TableBuilder>,
    path: String,
    last_key: Option<Vec<u8>>,
    /// The internal key being added (reused: no allocation per entry).
    ikey: Vec<u8>,
    entries: u64,
    file_size: u64,
    /// RocksDB's `invalidate_page_cache` (on by default): every `FADVISE_TRIGGER` bytes, and
    /// once synced, the file's pages are handed back to the OS (see `maybe_invalidate`).
    invalidate_page_cache: bool,
    /// The file size at the last invalidation.
    last_invalidated: u64,
    _opts: PhantomData<&'a Options>,
}

impl<'a> SstFileWriter<'a> {
    /// A writer using `opts`' comparator, table options and compression (the bottommost
    /// compression if set, else the last level's, as RocksDB's writer picks it).
    pub fn create(opts: &'a Options) -> Self {
        Self::with_options(opts.clone())
    }

    /// As [`SstFileWriter::create`], owning a copy of the options (for wrappers that cannot
    /// hold a borrow, such as the Python package).
    pub fn with_options(opts: Options) -> Self {
        SstFileWriter {
            icmp: InternalKeyComparator::new(opts.comparator.clone()),
            opts,
            session_id: new_session_id(),
            next_file_number: 1,
            builder: None,
            path: String::new(),
            last_key: None,
            ikey: Vec::new(),
            entries: 0,
            file_size: 0,
            invalidate_page_cache: true,
            last_invalidated: 0,
            _opts: PhantomData,
        }
    }

    /// Start a new file at `path` (replacing any file there).
    pub fn open<P: AsRef<Path>>(&mut self, path: P) -> Result<()> {
        let path = path.as_ref();
        // Written through a writer thread: building blocks overlaps the write system calls.
        let file: Box<dyn crate::fs::WritableFile> = Box::new(crate::fs::BackgroundWritable::new(
            crate::fs::with_fsync(self.opts.env.clone(), self.opts.knobs.use_fsync).new_writable(path)?,
        ));
        let o = &self.opts;
        let compression = o.compression_for_level(o.num_levels.saturating_sub(1).max(1), 1, true);
        let topts = TableBuilderOptions {
            icmp: self.icmp.clone(),
            block_size: o.block_size,
            block_restart_interval: o.block_restart_interval,
            format_version: o.format_version,
            checksum: o.checksum_type,
            compression,
            bloom_bits_per_key: o.bloom_bits_per_key,
            filter_contents: o.filter_contents(),
            column_family_name: String::new(),
            column_family_id: Some(UNKNOWN_CF_ID),
            db_id: "SST Writer".into(),
            db_session_id: self.session_id.clone(),
            file_number: self.next_file_number,
            creation_time: 0,
            merge_operator_name: o.merge_operator.as_ref().map(|m| m.name().to_string()),
            external: true,
            index_layout: o.index_layout.clone(),
        };
        self.next_file_number += 1;
        self.builder = Some(TableBuilder::new(topts, file));
        self.path = path.display().to_string();
        self.last_key = None;
        self.entries = 0;
        self.file_size = 0;
        self.last_invalidated = 0;
        Ok(())
    }

    fn builder(&mut self) -> Result<&mut TableBuilder> {
        self.builder
            .as_mut()
            .ok_or_else(|| Error::invalid("SstFileWriter: file is not opened"))
    }

    fn add(&mut self, key: &[u8], value: &[u8], t: u8) -> Result<()> {
        self.builder()?;
        if self.icmp.kind() != UserCmpKind::Bytewise {
            self.icmp.user_comparator().validate_key(key)?;
        }
        if let Some(last) = &self.last_key {
            if self.icmp.compare_user(key, last) != std::cmp::Ordering::Greater {
                return Err(Error::invalid(format!(
                    "SstFileWriter {}: keys must be added in strict ascending order: key {} after {}",
                    self.path,
                    crate::lsm::version_edit::to_hex(key),
                    crate::lsm::version_edit::to_hex(last)
                )));
            }
        }
        self.ikey.clear();
        crate::key::append_internal_key(&mut self.ikey, key, 0, t);
        let ikey = std::mem::take(&mut self.ikey);
        let r = self.builder().and_then(|b| {
            b.add(&ikey, value)?;
            Ok(b.file_size_estimate())
        });
        self.ikey = ikey;
        self.file_size = r?;
        self.entries += 1;
        self.maybe_invalidate()?;
        match &mut self.last_key {
            Some(l) => {
                l.clear();
                l.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        Ok(())
    }

    /// Add a value for `key` (keys strictly increasing). InvalidArgument if the comparator
    /// has user-defined timestamps (then [`put_with_ts`](Self::put_with_ts)).
    pub fn put<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> Result<()> {
        self.no_ts()?;
        self.add(key.as_ref(), value.as_ref(), vt::VALUE)
    }

    /// Add a value for `key` at user-defined timestamp `ts` (stored as `key || ts`; keys with
    /// their timestamps strictly increasing in the comparator's order, so newer timestamps of
    /// one key first). InvalidArgument if the comparator has no timestamps or `ts` is not
    /// their size.
    pub fn put_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        key: K,
        ts: S,
        value: V,
    ) -> Result<()> {
        let k = self.with_ts(key.as_ref(), ts.as_ref(), "SstFileWriter::put_with_ts")?;
        self.add(&k, value.as_ref(), vt::VALUE)
    }

    /// Add a deletion of `key` at user-defined timestamp `ts` (type deletion-with-timestamp, as
    /// RocksDB's); errors as [`put_with_ts`](Self::put_with_ts).
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(&mut self, key: K, ts: S) -> Result<()> {
        let k = self.with_ts(key.as_ref(), ts.as_ref(), "SstFileWriter::delete_with_ts")?;
        self.add(&k, b"", vt::DELETION_WITH_TIMESTAMP)
    }

    fn with_ts(&self, key: &[u8], ts: &[u8], what: &str) -> Result<Vec<u8>> {
        crate::user_timestamp::check_ts(self.icmp.timestamp_size(), ts, what)?;
        Ok(crate::user_timestamp::key_with_ts(key, ts))
    }

    /// InvalidArgument for a write without a timestamp when the comparator has timestamps.
    fn no_ts(&self) -> Result<()> {
        if self.icmp.timestamp_size() > 0 {
            return Err(Error::invalid(format!(
                "SstFileWriter {}: the comparator has user-defined timestamps; use put_with_ts / delete_with_ts",
                self.path
            )));
        }
        Ok(())
    }

    /// Add a wide-column entity for `key` (keys strictly increasing; RocksDB's
    /// `SstFileWriter::PutEntity`): `(name, value)` pairs in any order, stored sorted by name.
    /// InvalidArgument if two columns share a name.
    pub fn put_entity<K: AsRef<[u8]>, N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: K,
        columns: &[(N, V)],
    ) -> Result<()> {
        let cols: Vec<(&[u8], &[u8])> = columns.iter().map(|(n, v)| (n.as_ref(), v.as_ref())).collect();
        let e = crate::wide_columns::serialize(&cols)?;
        self.add(key.as_ref(), &e, vt::WIDE_COLUMN_ENTITY)
    }

    /// Add a merge operand for `key` (keys strictly increasing).
    pub fn merge<K: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, key: K, value: V) -> Result<()> {
        self.no_ts()?;
        self.add(key.as_ref(), value.as_ref(), vt::MERGE)
    }

    /// Add a deletion of `key` (keys strictly increasing).
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) -> Result<()> {
        self.no_ts()?;
        self.add(key.as_ref(), b"", vt::DELETION)
    }

    /// Delete `[begin_key, end_key)` (in any order relative to the point keys); an empty range
    /// is ignored, a reversed one is InvalidArgument, as in RocksDB.
    pub fn delete_range<K: AsRef<[u8]>, E: AsRef<[u8]>>(&mut self, begin_key: K, end_key: E) -> Result<()> {
        let (b, e) = (begin_key.as_ref(), end_key.as_ref());
        self.builder()?;
        match self.icmp.compare_user(b, e) {
            std::cmp::Ordering::Greater => {
                return Err(Error::invalid(format!(
                    "SstFileWriter {}: delete_range end key {} comes before start key {}",
                    self.path,
                    crate::lsm::version_edit::to_hex(e),
                    crate::lsm::version_edit::to_hex(b)
                )))
            }
            std::cmp::Ordering::Equal => return Ok(()),
            std::cmp::Ordering::Less => {}
        }
        let start = make_internal_key(b, 0, vt::RANGE_DELETION);
        let builder = self.builder()?;
        builder.add_range_tombstone(&start, e)?;
        self.file_size = builder.file_size_estimate();
        self.entries += 1;
        Ok(())
    }

    /// Write the rest of the file and sync it. A file with no entry is InvalidArgument (and
    /// is left behind, as RocksDB leaves it).
    pub fn finish(&mut self) -> Result<()> {
        let b = self
            .builder
            .take()
            .ok_or_else(|| Error::invalid("SstFileWriter: file is not opened"))?;
        if self.entries == 0 {
            b.abandon();
            return Err(Error::invalid("Cannot create sst file with no entries"));
        }
        let (info, mut file) = b.finish()?;
        file.sync()?;
        if self.invalidate_page_cache {
            file.invalidate_cache()?;
        }
        self.file_size = info.file_size;
        Ok(())
    }

    /// Whether the OS page cache is told to drop the file's pages as it is written (RocksDB's
    /// `SstFileWriter` `invalidate_page_cache`, default true): a bulk load writes far more than
    /// it will read back soon, and without the hint the dirty pages pile up (in RocksDB's own
    /// bulk load on ext4 that halved the speed; docs/ingest.md).
    pub fn set_invalidate_page_cache(&mut self, v: bool) {
        self.invalidate_page_cache = v;
    }

    /// Every `FADVISE_TRIGGER` bytes of table written, hint the file system to write the pages
    /// out and drop them (RocksDB's `kFadviseTrigger`, 1 MiB).
    fn maybe_invalidate(&mut self) -> Result<()> {
        const FADVISE_TRIGGER: u64 = 1 << 20;
        if self.invalidate_page_cache && self.file_size >= self.last_invalidated + FADVISE_TRIGGER {
            self.last_invalidated = self.file_size;
            self.builder()?.invalidate_cache()?;
        }
        Ok(())
    }

    /// The size of the file (after `finish`: exact; before: the bytes written so far).
    pub fn file_size(&self) -> u64 {
        self.file_size
    }
}
