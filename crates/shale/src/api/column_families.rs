//! The column-family calls of the `rocksdb` crate: opening with families, creating and dropping
//! them, handles, and the `_cf` form of every data call.

use std::path::Path;
use std::sync::Arc;

use super::access::DBRawIteratorWithThreadMode;
use super::db::DB;
use crate::engine::checks;
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::column_family::PurgeHook;
use crate::engine::column_family::{AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor};
use crate::engine::families::cfd_of;
use crate::engine::families::create_family;
use crate::engine::families::drop_family;
use crate::engine::families::write_one;
use crate::engine::iter;
use crate::engine::iter::DBIterator;
use crate::engine::iter::IteratorMode;
use crate::engine::manual;
use crate::engine::multi_get;
use crate::engine::open;
use crate::engine::properties;
use crate::engine::purge;
use crate::engine::read;
use crate::engine::write;
use crate::error::Result;
use crate::options::types::CompactOptions;
use crate::options::{FlushOptions, Options, ReadOptions, WriteOptions};
use crate::table::pinnable::DBPinnableSlice;
use crate::write_batch::WriteBatch;

impl DB {
    /// Open with the families `names` (each with `opts`); `default` is opened with `opts` too.
    /// As RocksDB, a read-write open must name every family the DB has.
    pub fn open_cf<N: AsRef<str>, I: IntoIterator<Item = N>>(
        opts: &Options,
        path: impl AsRef<Path>,
        names: I,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = names
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), opts.clone()))
            .collect();
        DB::open_cf_descriptors(opts, path, descs)
    }

    /// Open with families given by name and options (`default` with `opts` unless named).
    pub fn open_cf_descriptors<I: IntoIterator<Item = ColumnFamilyDescriptor>>(
        opts: &Options,
        path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = cfs.into_iter().collect();
        open::open(opts, path.as_ref(), false, false, &descs).map(|inner| DB { inner })
    }

    /// Open with the families of `cfs`, each with its own options (the `rocksdb` crate's
    /// `open_cf_with_opts`): as [`open_cf_descriptors`](DB::open_cf_descriptors) with one
    /// descriptor per `(name, options)` pair; `default` is opened with `opts` unless named.
    pub fn open_cf_with_opts<N: AsRef<str>, I: IntoIterator<Item = (N, Options)>>(
        opts: &Options,
        path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<DB> {
        let descs = cfs.into_iter().map(|(n, o)| ColumnFamilyDescriptor::new(n.as_ref(), o));
        DB::open_cf_descriptors(opts, path, descs)
    }

    /// [`open_cf_with_opts`](DB::open_cf_with_opts) read-only (a subset of the DB's families is
    /// allowed), as [`open_cf_descriptors_read_only`](DB::open_cf_descriptors_read_only).
    pub fn open_cf_with_opts_for_read_only<N: AsRef<str>, I: IntoIterator<Item = (N, Options)>>(
        opts: &Options,
        path: impl AsRef<Path>,
        cfs: I,
        error_if_wal_file_exists: bool,
    ) -> Result<DB> {
        let descs = cfs.into_iter().map(|(n, o)| ColumnFamilyDescriptor::new(n.as_ref(), o));
        DB::open_cf_descriptors_read_only(opts, path, descs, error_if_wal_file_exists)
    }

    /// Open read-only with the families `names` (a subset of the DB's families is allowed).
    pub fn open_cf_for_read_only<N: AsRef<str>, I: IntoIterator<Item = N>>(
        opts: &Options,
        path: impl AsRef<Path>,
        names: I,
        error_if_wal_file_exists: bool,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = names
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n.as_ref(), opts.clone()))
            .collect();
        DB::open_cf_descriptors_read_only(opts, path, descs, error_if_wal_file_exists)
    }

    /// Open read-only with families given by name and options.
    pub fn open_cf_descriptors_read_only<I: IntoIterator<Item = ColumnFamilyDescriptor>>(
        opts: &Options,
        path: impl AsRef<Path>,
        cfs: I,
        error_if_wal_file_exists: bool,
    ) -> Result<DB> {
        let descs: Vec<ColumnFamilyDescriptor> = cfs.into_iter().collect();
        open::open(opts, path.as_ref(), true, error_if_wal_file_exists, &descs).map(|inner| DB { inner })
    }

    /// The names of the families of the DB at `path` (read from its MANIFEST), `default` first.
    pub fn list_cf(opts: &Options, path: impl AsRef<Path>) -> Result<Vec<String>> {
        crate::lsm::version::list_column_families(&opts.env, path.as_ref())
    }

    /// Create family `name` with options `opts` (its comparator, table format, compression,
    /// memtable and compaction settings; the DB-wide options stay the DB's).
    pub fn create_cf(&self, name: impl AsRef<str>, opts: &Options) -> Result<()> {
        create_family(&self.inner, name.as_ref(), opts.clone(), true).map(|_| ())
    }

    /// Drop family `name`. Handles on it stay valid: reads see its data as it was, writes fail.
    pub fn drop_cf(&self, name: impl AsRef<str>) -> Result<()> {
        drop_family(&self.inner, name.as_ref())
    }

    /// A handle on family `name`, if it exists. After [`drop_cf`](Self::drop_cf) the family's
    /// table files are deleted when its last handle goes (if an iterator still reads the
    /// family then, by the first flush or compaction after the iterator is gone).
    pub fn cf_handle(&self, name: &str) -> Option<Arc<ColumnFamily>> {
        let cfd = self.inner.cfs.read().by_name(name)?.clone();
        let db = Arc::downgrade(&self.inner);
        let purge: PurgeHook = Arc::new(move || {
            if let Some(db) = db.upgrade() {
                purge::purge_now(&db);
            }
        });
        Some(Arc::new(ColumnFamily::new(cfd, purge)))
    }

    /// The names of the live families, by id (`default` first).
    pub fn cf_names(&self) -> Vec<String> {
        self.inner.cfs.read().names()
    }

    /// [`put`](DB::put) into column family `cf`; InvalidArgument if `cf` was dropped, other errors
    /// as [`put`](DB::put).
    pub fn put_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_cf_opt(cf, key, value, &WriteOptions::default())
    }
    /// [`put_cf`](Self::put_cf) with write options `wo`.
    pub fn put_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        let c = cfd_of(cf);
        write_one(&self.inner, c, key.as_ref(), wo, |b| {
            b.put_cf_id(c.id, key.as_ref(), value.as_ref())
        })
    }
    /// [`put_entity`](DB::put_entity) into column family `cf` (record tag `0x17`); errors as
    /// [`put_entity`](DB::put_entity) and [`put_cf`](Self::put_cf).
    pub fn put_entity_cf<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        self.put_entity_cf_opt(cf, key, columns, &WriteOptions::default())
    }
    /// [`put_entity_cf`](Self::put_entity_cf) with write options `wo`.
    pub fn put_entity_cf_opt<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
        wo: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put_entity_cf(cf, key.as_ref(), columns)?;
        self.write_opt(batch, wo)
    }
    /// [`get_entity`](DB::get_entity) in column family `cf`.
    pub fn get_entity_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        self.get_entity_cf_opt(cf, key, &ReadOptions::default())
    }
    /// [`get_entity_cf`](Self::get_entity_cf) with read options `ro`.
    pub fn get_entity_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        super::db::entity_columns(crate::engine::timestamps::get_entity(
            &self.inner,
            cfd_of(cf),
            ro,
            key.as_ref(),
        ))
    }
    /// [`multi_get_entity`](DB::multi_get_entity) of keys of column family `cf`, at one
    /// sequence number.
    pub fn multi_get_entity_cf<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<crate::wide_columns::WideColumn>>>> {
        crate::engine::timestamps::multi_get_entity(&self.inner, cfd_of(cf), ro, keys)
            .into_iter()
            .map(super::db::entity_columns)
            .collect()
    }
    /// [`delete`](DB::delete) in column family `cf`; errors as [`put_cf`](Self::put_cf).
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_cf_opt(cf, key, &WriteOptions::default())
    }
    /// [`delete_cf`](Self::delete_cf) with write options `wo`.
    pub fn delete_cf_opt(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        let c = cfd_of(cf);
        write_one(&self.inner, c, key.as_ref(), wo, |b| b.delete_cf_id(c.id, key.as_ref()))
    }
    /// [`single_delete`](DB::single_delete) in column family `cf`; errors as [`put_cf`](Self::put_cf).
    pub fn single_delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.single_delete_cf_opt(cf, key, &WriteOptions::default())
    }
    /// [`single_delete_cf`](Self::single_delete_cf) with write options `wo`.
    pub fn single_delete_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        let c = cfd_of(cf);
        write_one(&self.inner, c, key.as_ref(), wo, |b| {
            b.single_delete_cf_id(c.id, key.as_ref())
        })
    }
    /// [`merge`](DB::merge) in column family `cf`, which needs a merge operator (InvalidArgument
    /// without one, NotSupported with cuckoo tables); other errors as [`put_cf`](Self::put_cf).
    pub fn merge_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.merge_cf_opt(cf, key, value, &WriteOptions::default())
    }
    /// [`merge_cf`](Self::merge_cf) with write options `wo`.
    pub fn merge_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        let c = cfd_of(cf);
        checks::validate_merge(c)?;
        write_one(&self.inner, c, key.as_ref(), wo, |b| {
            b.merge_cf_id(c.id, key.as_ref(), value.as_ref())
        })
    }
    /// [`delete_range`](DB::delete_range) in column family `cf`: `begin > end` is InvalidArgument,
    /// `begin == end` does nothing, NotSupported unless `cf` uses block-based tables.
    pub fn delete_range_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.delete_range_cf_opt(cf, begin, end, &WriteOptions::default())
    }
    /// [`delete_range_cf`](Self::delete_range_cf) with write options `wo`.
    pub fn delete_range_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        begin: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        wo: &WriteOptions,
    ) -> Result<()> {
        let c = cfd_of(cf);
        checks::check_writable(c)?;
        let (b, e) = (begin.as_ref(), end.as_ref());
        checks::validate_range(c, b, e)?;
        if c.icmp.compare_user(b, e) == std::cmp::Ordering::Equal {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        batch.delete_range_cf_id(c.id, b, e);
        write::write(&self.inner, wo, batch, false)
    }

    /// The value of `key` in column family `cf`, `Ok(None)` if absent; errors as
    /// [`get_opt`](DB::get_opt). A dropped family's handle still reads its data.
    pub fn get_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        crate::engine::timestamps::get(&self.inner, cfd_of(cf), &ReadOptions::default(), key.as_ref())
    }
    /// [`get_cf`](Self::get_cf) with read options `ro`.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        crate::engine::timestamps::get(&self.inner, cfd_of(cf), ro, key.as_ref())
    }
    /// [`get_pinned`](DB::get_pinned) in column family `cf`.
    pub fn get_pinned_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        crate::engine::timestamps::get(&self.inner, cfd_of(cf), &ReadOptions::default(), key.as_ref())
    }
    /// [`get_pinned_cf`](Self::get_pinned_cf) with read options `ro`.
    pub fn get_pinned_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice>> {
        crate::engine::timestamps::get(&self.inner, cfd_of(cf), ro, key.as_ref())
    }

    /// Look up keys of several families at one consistent point in time (one sequence number
    /// for all), results in the order of `keys`.
    pub fn multi_get_cf<'a, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        self.multi_get_cf_opt(keys, &ReadOptions::default())
    }
    /// The values of `keys` in family `cf`, one result per key in order, each pinned where it
    /// was found as [`get_pinned_cf`](Self::get_pinned_cf) does, all read at one point (the
    /// `rocksdb` crate's `batched_multi_get_cf`). `sorted_input` is RocksDB's hint that the keys
    /// are in the family's order already; Shale gives the same results either way.
    pub fn batched_multi_get_cf<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        sorted_input: bool,
    ) -> Vec<Result<Option<DBPinnableSlice>>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        self.batched_multi_get_cf_opt(cf, keys, sorted_input, &ReadOptions::default())
    }
    /// [`batched_multi_get_cf`](Self::batched_multi_get_cf) with read options `ro`.
    pub fn batched_multi_get_cf_opt<'a, K, I>(
        &self,
        cf: &impl AsColumnFamilyRef,
        keys: I,
        _sorted_input: bool,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<DBPinnableSlice>>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        crate::engine::timestamps::multi_get(&self.inner, cfd_of(cf), ro, keys.into_iter().map(|k| k.as_ref()))
    }
    /// [`multi_get_cf`](Self::multi_get_cf) with read options `ro`.
    pub fn multi_get_cf_opt<'a, C, K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        let keys: Vec<(Arc<ColumnFamilyData>, K)> = keys.into_iter().map(|(c, k)| (cfd_of(c).clone(), k)).collect();
        let mut ids: Vec<u32> = keys.iter().map(|(c, _)| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        // Every family's SuperVersion, then one sequence, all under the DB mutex: no memtable
        // switch happens in between, so a batch that wrote to several of these families is
        // seen whole or not at all (RocksDB retries until no SuperVersion changed; the mutex
        // is held only for these loads).
        let (svs, seq) = {
            let _st = self.inner.state.lock();
            let svs: Vec<_> = ids
                .iter()
                .map(|id| {
                    let i = keys.iter().position(|(c, _)| c.id == *id).unwrap_or(0);
                    keys[i].0.super_version()
                })
                .collect();
            (svs, read::read_seq(&self.inner, ro))
        };
        let mut out: Vec<Option<Result<Option<Vec<u8>>>>> = (0..keys.len()).map(|_| None).collect();
        for (id, sv) in ids.into_iter().zip(svs) {
            let idx: Vec<usize> = (0..keys.len()).filter(|&i| keys[i].0.id == id).collect();
            let cfd = &keys[idx[0]].0;
            let group: Vec<&[u8]> = idx.iter().map(|&i| keys[i].1.as_ref()).collect();
            // A family with timestamps reads key by key at the read timestamp.
            let r = if crate::engine::timestamps::needs_ts_path(cfd, ro) {
                crate::engine::timestamps::multi_get(&self.inner, cfd, ro, group)
            } else {
                multi_get::multi_get_at(cfd, &sv, ro, seq, group, false)
            };
            for (i, v) in idx.into_iter().zip(r) {
                out[i] = Some(v);
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
    }

    /// A raw iterator over column family `cf` (see [`raw_iterator`](DB::raw_iterator)).
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> DBRawIteratorWithThreadMode<'_, Self> {
        self.raw_iterator_cf_opt(cf, ReadOptions::default())
    }
    /// [`raw_iterator_cf`](Self::raw_iterator_cf) with read options `ro`.
    pub fn raw_iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        ro: ReadOptions,
    ) -> DBRawIteratorWithThreadMode<'_, Self> {
        DBRawIteratorWithThreadMode::new(iter::new_raw_iterator(&self.inner, cfd_of(cf), ro))
    }
    /// An iterator over column family `cf` starting at `mode` (see [`iterator`](DB::iterator)).
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode<'_>) -> DBIterator {
        self.iterator_cf_opt(cf, ReadOptions::default(), mode)
    }
    /// The `rocksdb` crate's argument order: read options before the mode.
    pub fn iterator_cf_opt(&self, cf: &impl AsColumnFamilyRef, ro: ReadOptions, mode: IteratorMode<'_>) -> DBIterator {
        DBIterator::new(iter::new_raw_iterator(&self.inner, cfd_of(cf), ro), mode)
    }

    /// Flush family `cf`'s memtable and wait.
    pub fn flush_cf(&self, cf: &impl AsColumnFamilyRef) -> Result<()> {
        let c = cfd_of(cf);
        checks::check_writable(c)?;
        manual::flush_and_wait(&self.inner, vec![c.id])
    }
    /// [`flush_cf`](Self::flush_cf) with `opts` (see [`FlushOptions`]).
    pub fn flush_cf_opt(&self, cf: &impl AsColumnFamilyRef, opts: &FlushOptions) -> Result<()> {
        self.flush_cfs_opt(&[cf], opts)
    }
    /// Flush several families' memtables: with `opts`' `wait` (the default), wait for all of
    /// them; InvalidArgument if one was dropped.
    pub fn flush_cfs_opt(&self, cfs: &[&impl AsColumnFamilyRef], opts: &FlushOptions) -> Result<()> {
        let mut ids = Vec::with_capacity(cfs.len());
        for cf in cfs {
            let c = cfd_of(*cf);
            checks::check_writable(c)?;
            ids.push(c.id);
        }
        if opts.wait {
            manual::flush_and_wait(&self.inner, ids)
        } else {
            manual::request_flush(&self.inner, ids)
        }
    }
    /// Flush several families' memtables and wait for all of them.
    pub fn flush_cfs(&self, cfs: &[&ColumnFamily]) -> Result<()> {
        manual::flush_and_wait(&self.inner, cfs.iter().map(|c| c.id()).collect())
    }

    /// Compact family `cf`'s files overlapping `[start, end]` down to its bottom level (bounds
    /// as [`compact_range`](DB::compact_range)).
    pub fn compact_range_cf<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        start: Option<S>,
        end: Option<E>,
    ) -> Result<()> {
        self.compact_range_cf_opt(cf, start, end, &CompactOptions::default())
    }

    /// [`compact_range_cf`](Self::compact_range_cf) with options `opts`, errors as
    /// [`compact_range_opt`](DB::compact_range_opt).
    pub fn compact_range_cf_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        start: Option<S>,
        end: Option<E>,
        opts: &CompactOptions,
    ) -> Result<()> {
        let (start, end) = (start.as_ref().map(|s| s.as_ref()), end.as_ref().map(|e| e.as_ref()));
        manual::compact_range(&self.inner, cfd_of(cf), start, end, opts)
    }

    /// The approximate bytes on disk of the keys in each range `[start, end)` of the default
    /// family (RocksDB's `GetApproximateSizes` over the table files; memtables not counted).
    pub fn get_approximate_sizes(&self, ranges: &[Range<'_>]) -> Vec<u64> {
        approximate_sizes(&self.inner.default_cf, ranges)
    }
    /// [`get_approximate_sizes`](Self::get_approximate_sizes) in family `cf`.
    pub fn get_approximate_sizes_cf(&self, cf: &impl AsColumnFamilyRef, ranges: &[Range<'_>]) -> Vec<u64> {
        approximate_sizes(cfd_of(cf), ranges)
    }

    /// A property of family `cf` (e.g. `rocksdb.stats`, `rocksdb.num-files-at-level0`).
    pub fn property_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl crate::properties::CStrLike,
    ) -> Result<Option<String>> {
        let name = crate::properties::name_text(name)?;
        properties::property_value(&self.inner, cfd_of(cf), &name)
    }
    /// A numeric property of family `cf`: `Ok(None)` if the property is unknown or not a number.
    pub fn property_int_value_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        name: impl crate::properties::CStrLike,
    ) -> Result<Option<u64>> {
        Ok(self.property_value_cf(cf, name)?.and_then(|s| s.trim().parse().ok()))
    }
}

/// The `_cf` records of a [`WriteBatch`] (here, beside the handles they take).
impl<const T: bool> crate::write_batch::WriteBatchWithTransaction<T> {
    /// [`put`](WriteBatch::put) into column family `cf`.
    pub fn put_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_cf_id(cf.column_family().id(), key.as_ref(), value.as_ref());
    }
    /// [`delete`](WriteBatch::delete) in column family `cf`.
    pub fn delete_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) {
        self.delete_cf_id(cf.column_family().id(), key.as_ref());
    }
    /// [`single_delete`](WriteBatch::single_delete) in column family `cf`.
    pub fn single_delete_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) {
        self.single_delete_cf_id(cf.column_family().id(), key.as_ref());
    }
    /// [`merge`](WriteBatch::merge) in column family `cf`.
    pub fn merge_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.merge_cf_id(cf.column_family().id(), key.as_ref(), value.as_ref());
    }
    /// [`put_entity`](WriteBatch::put_entity) into column family `cf` (record tag `0x17`):
    /// InvalidArgument, and nothing recorded, if two columns share a name.
    pub fn put_entity_cf<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        self.put_entity_cf_id(cf.column_family().id(), key.as_ref(), columns)
    }
}

/// The range deletions of a family (on the batch of a plain DB only, as in the `rocksdb` crate).
impl WriteBatch {
    /// [`delete_range`](WriteBatch::delete_range) in column family `cf`.
    pub fn delete_range_cf(&mut self, cf: &impl AsColumnFamilyRef, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.delete_range_cf_id(cf.column_family().id(), begin.as_ref(), end.as_ref());
    }
}

/// A key range `[start, end)` for [`DB::get_approximate_sizes`] (the `rocksdb` crate's `Range`).
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    start: &'a [u8],
    end: &'a [u8],
}

impl<'a> Range<'a> {
    /// The range from `start` (included) to `end` (excluded).
    pub fn new(start: &'a [u8], end: &'a [u8]) -> Range<'a> {
        Range { start, end }
    }
}

/// Per range: whole files inside it count their size; a file it cuts counts the bytes between
/// the range's ends as the table's index places them (half the file for plain and cuckoo tables,
/// which have no block offsets).
fn approximate_sizes(cf: &ColumnFamilyData, ranges: &[Range<'_>]) -> Vec<u64> {
    use std::cmp::Ordering as O;
    let sv = cf.super_version();
    let icmp = &cf.icmp;
    ranges
        .iter()
        .map(|r| {
            if icmp.compare_user(r.start, r.end) != O::Less {
                return 0;
            }
            let mut total = 0u64;
            for (_, f) in sv.version.all_files() {
                let (lo, hi) = (f.smallest_user(), f.largest_user());
                if icmp.compare_user(hi, r.start) == O::Less || icmp.compare_user(lo, r.end) != O::Less {
                    continue;
                }
                let inside = icmp.compare_user(lo, r.start) != O::Less && icmp.compare_user(hi, r.end) == O::Less;
                if inside {
                    total += f.meta.file_size;
                    continue;
                }
                match cf.table_cache.get(f) {
                    Ok(t) => match t.as_block() {
                        Some(b) => {
                            let at = |k: &[u8]| {
                                b.approximate_offset_of(&crate::key::make_internal_key(
                                    k,
                                    crate::key::MAX_SEQUENCE,
                                    crate::key::vt::FOR_SEEK,
                                ))
                            };
                            total += at(r.end).saturating_sub(at(r.start));
                        }
                        None => total += f.meta.file_size / 2,
                    },
                    Err(_) => total += f.meta.file_size / 2,
                }
            }
            total
        })
        .collect()
}
