//! The public `DB` handle: opening, the data calls, and closing (flush of unlogged writes,
//! background shutdown).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::access::DBRawIteratorWithThreadMode;
use crate::engine::background;
use crate::engine::checks;
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::families;
use crate::engine::iter;
use crate::engine::iter::Direction;
use crate::engine::iter::{DBIterator, IteratorMode};
use crate::engine::manual;
use crate::engine::open;
use crate::engine::properties;
use crate::engine::state::DbInner;
use crate::engine::wal_tailing;
use crate::engine::wal_tailing::DBWALIterator;
use crate::engine::write;
use crate::error::Result;
use crate::options::types::{CompactOptions, WaitForCompactOptions};
use crate::options::{FlushOptions, Options, ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::table::pinnable::DBPinnableSlice;
use crate::wide_columns::WideColumn;
use crate::write_batch::WriteBatch;

/// The columns of an encoded entity found by a lookup.
pub(crate) fn entity_columns(r: Result<Option<Vec<u8>>>) -> Result<Option<Vec<WideColumn>>> {
    match r? {
        Some(e) => crate::wide_columns::to_columns(&e).map(Some),
        None => Ok(None),
    }
}

/// A Shale database. `Send + Sync`: share it between threads (e.g. in an `Arc`).
pub struct DB {
    pub(crate) inner: Arc<DbInner>,
}

impl std::fmt::Debug for DB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DB({})", self.inner.path.display())
    }
}

impl DB {
    /// Open (or create, with `create_if_missing`) the database at `path`.
    pub fn open(opts: &Options, path: impl AsRef<Path>) -> Result<DB> {
        open::open(opts, path.as_ref(), false, false, &[]).map(|inner| DB { inner })
    }

    /// Open with default options and `create_if_missing = true`.
    pub fn open_default(path: impl AsRef<Path>) -> Result<DB> {
        let opts = Options {
            create_if_missing: true,
            ..Options::default()
        };
        DB::open(&opts, path)
    }

    /// Open without writing anything: no WAL, no new MANIFEST, no background work.
    pub fn open_for_read_only(opts: &Options, path: impl AsRef<Path>, error_if_wal_file_exists: bool) -> Result<DB> {
        open::open(opts, path.as_ref(), true, error_if_wal_file_exists, &[]).map(|inner| DB { inner })
    }

    /// Delete every file of the database at `path`; fails with an I/O error naming its `LOCK`
    /// file if it is open (as RocksDB's `DestroyDB`).
    pub fn destroy(opts: &Options, path: impl AsRef<Path>) -> Result<()> {
        open::destroy(opts, path.as_ref())
    }

    /// The directory the DB was opened at.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Writes `key` → `value` in the default column family, replacing any earlier value.
    ///
    /// Errors, shared by every write call of `DB`: NotSupported on a DB opened read-only;
    /// InvalidArgument if `WriteOptions` sets both `sync` and `disable_wal`, the column family was
    /// dropped or the comparator rejects the key; Incomplete with `no_slowdown` during a write stall;
    /// the failure itself (e.g. Io) from the write whose WAL append or sync failed, and Background
    /// from every later write once a WAL, flush or compaction failure (other than out-of-space in
    /// a compaction) stopped writes, until [`resume`](Self::resume).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }
    /// [`put`](Self::put) with write options `wo`.
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        families::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.put(key.as_ref(), value)
        })
    }
    /// Deletes `key` from the default column family (a no-op if it is absent); errors as
    /// [`put`](Self::put).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }
    /// [`delete`](Self::delete) with write options `wo`.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        families::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.delete(key.as_ref())
        })
    }
    /// Delete `key`, cancelling exactly one earlier Put (RocksDB's `SingleDelete`: use it only
    /// for keys written once since their last deletion).
    pub fn single_delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.single_delete_opt(key, &WriteOptions::default())
    }
    /// [`single_delete`](Self::single_delete) with write options `wo`.
    pub fn single_delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        families::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.single_delete(key.as_ref())
        })
    }
    /// Add a merge operand for `key` (needs `Options::merge_operator`).
    pub fn merge(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, value, &WriteOptions::default())
    }
    /// [`merge`](Self::merge) with write options `wo`. InvalidArgument without a merge operator,
    /// NotSupported with cuckoo tables; other errors as [`put`](Self::put).
    pub fn merge_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        checks::validate_merge(&self.inner.default_cf)?;
        families::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.merge(key.as_ref(), value)
        })
    }
    /// Writes `key` → the wide-column entity `columns` in the default column family (RocksDB's
    /// `PutEntity`), replacing any earlier value. `columns` are `(name, value)` pairs in any
    /// order; they are stored sorted by name. The column with the empty name
    /// ([`DEFAULT_WIDE_COLUMN_NAME`](crate::wide_columns::DEFAULT_WIDE_COLUMN_NAME)) is the
    /// default column: [`get`](Self::get) and iterators' `value()` return its value (an empty
    /// value if there is none); [`get_entity`](Self::get_entity) returns every column.
    /// InvalidArgument if two columns share a name; NotSupported with cuckoo tables; other
    /// errors as [`put`](Self::put).
    pub fn put_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: impl AsRef<[u8]>, columns: &[(N, V)]) -> Result<()> {
        self.put_entity_opt(key, columns, &WriteOptions::default())
    }
    /// [`put_entity`](Self::put_entity) with write options `wo`.
    pub fn put_entity_opt<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
        wo: &WriteOptions,
    ) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put_entity(key.as_ref(), columns)?;
        self.write_opt(batch, wo)
    }
    /// The columns of `key` in the default column family (RocksDB's `GetEntity`), sorted by
    /// name, or `None` if the key does not exist. A plain value reads as one default column
    /// (empty name); merge operands over an entity are merged into its default column, the
    /// other columns unchanged. Corruption if a stored entity does not decode; other errors
    /// as [`get_opt`](Self::get_opt).
    pub fn get_entity(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<WideColumn>>> {
        self.get_entity_opt(key, &ReadOptions::default())
    }
    /// [`get_entity`](Self::get_entity) with read options `ro`.
    pub fn get_entity_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<WideColumn>>> {
        entity_columns(crate::engine::timestamps::get_entity(
            &self.inner,
            &self.inner.default_cf,
            ro,
            key.as_ref(),
        ))
    }
    /// [`get_entity`](Self::get_entity) of several keys at one consistent point in time (RocksDB's
    /// `MultiGetEntity`): one result per key, in order.
    pub fn multi_get_entity<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<Vec<WideColumn>>>> {
        self.multi_get_entity_opt(keys, &ReadOptions::default())
    }
    /// [`multi_get_entity`](Self::multi_get_entity) with read options `ro`.
    pub fn multi_get_entity_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<WideColumn>>>> {
        crate::engine::timestamps::multi_get_entity(&self.inner, &self.inner.default_cf, ro, keys)
            .into_iter()
            .map(entity_columns)
            .collect()
    }
    /// Delete every key in `[begin, end)`. `begin > end` is InvalidArgument; `begin == end`
    /// does nothing.
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(begin, end, &WriteOptions::default())
    }
    /// [`delete_range`](Self::delete_range) with write options `wo`. NotSupported unless the table
    /// factory is block-based; other errors as [`put`](Self::put).
    pub fn delete_range_opt(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        let (b, e) = (begin.as_ref(), end.as_ref());
        checks::validate_range(&self.inner.default_cf, b, e)?;
        if self.inner.default_cf.icmp.compare_user(b, e) == std::cmp::Ordering::Equal {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        batch.delete_range(b, e);
        write::write(&self.inner, wo, batch, false)
    }
    /// Apply a batch atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }
    /// [`write`](Self::write) with write options `wo`: all of the batch or none of it is applied;
    /// errors as [`put`](Self::put) (a key the comparator rejects fails the whole batch).
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        checks::validate_batch(&self.inner, &batch)?;
        write::write(&self.inner, wo, batch, true)
    }

    /// The value of `key`, or `None` if it does not exist.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        crate::engine::timestamps::get(
            &self.inner,
            &self.inner.default_cf,
            &ReadOptions::default(),
            key.as_ref(),
        )
    }
    /// [`get`](Self::get) with read options `ro` (e.g. reading at a snapshot); `Ok(None)` if the key
    /// is absent or deleted. Corruption (with the file and, when known, the offset) if a table
    /// block fails its checks, Io if reading a file fails.
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        crate::engine::timestamps::get(&self.inner, &self.inner.default_cf, ro, key.as_ref())
    }
    /// The value of `key` without copying it: the returned slice points into the memtable,
    /// cached block or table file it was found in and keeps that alive (see
    /// [`DBPinnableSlice`](crate::DBPinnableSlice)). Same result as [`get`](Self::get).
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        crate::engine::timestamps::get(
            &self.inner,
            &self.inner.default_cf,
            &ReadOptions::default(),
            key.as_ref(),
        )
    }
    /// [`get_pinned`](Self::get_pinned) with read options `ro`.
    pub fn get_pinned_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<DBPinnableSlice>> {
        crate::engine::timestamps::get(&self.inner, &self.inner.default_cf, ro, key.as_ref())
    }
    /// Look up several keys at one consistent point in time.
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }
    /// [`multi_get`](Self::multi_get) with read options `ro`: one result per key, in order.
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        crate::engine::timestamps::multi_get(&self.inner, &self.inner.default_cf, ro, keys)
    }
    /// [`multi_get`](Self::multi_get) with each value pinned where it was found, as
    /// [`get_pinned`](Self::get_pinned) does (the `rocksdb` crate's `batched_multi_get_cf`).
    pub fn multi_get_pinned<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<DBPinnableSlice>>> {
        self.multi_get_pinned_opt(keys, &ReadOptions::default())
    }
    /// [`multi_get_pinned`](Self::multi_get_pinned) with read options `ro`.
    pub fn multi_get_pinned_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<DBPinnableSlice>>> {
        crate::engine::timestamps::multi_get(&self.inner, &self.inner.default_cf, ro, keys)
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        // The sequence is read and registered under the snapshot list's lock: a compaction
        // reading the list (to decide which versions to keep) sees this snapshot, or started
        // before it existed and holds nothing newer than it.
        let mut list = self.inner.snapshots.lock();
        let seq = self.inner.last_seq.load(Ordering::Acquire);
        *list.entry(seq).or_insert(0) += 1;
        drop(list);
        let owner: Arc<dyn std::any::Any + Send + Sync> = self.inner.clone();
        Snapshot::new(seq, Arc::downgrade(&self.inner.snapshots), Arc::downgrade(&owner))
    }

    /// A cursor-style iterator (seek / next / prev), as the `rocksdb` crate's `DBRawIterator`.
    pub fn raw_iterator(&self) -> DBRawIteratorWithThreadMode<'_, Self> {
        self.raw_iterator_opt(ReadOptions::default())
    }
    /// [`raw_iterator`](Self::raw_iterator) with read options `ro` (bounds, snapshot, ...).
    pub fn raw_iterator_opt(&self, ro: ReadOptions) -> DBRawIteratorWithThreadMode<'_, Self> {
        DBRawIteratorWithThreadMode::new(iter::new_raw_iterator(&self.inner, &self.inner.default_cf, ro))
    }
    /// A Rust iterator over `(key, value)` pairs starting at `mode`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DBIterator {
        self.iterator_opt(mode, ReadOptions::default())
    }
    /// [`iterator`](Self::iterator) with read options `ro`.
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, ro: ReadOptions) -> DBIterator {
        DBIterator::new(iter::new_raw_iterator(&self.inner, &self.inner.default_cf, ro), mode)
    }

    /// Flush the default family's memtable to an L0 table and wait for it.
    pub fn flush(&self) -> Result<()> {
        manual::flush_and_wait(&self.inner, vec![0])
    }

    /// [`flush`](Self::flush) with `opts`: with `set_wait(false)`, returns once the memtable is
    /// switched out and handed to the background threads (see [`FlushOptions`]).
    pub fn flush_opt(&self, opts: &FlushOptions) -> Result<()> {
        if opts.wait {
            manual::flush_and_wait(&self.inner, vec![0])
        } else {
            manual::request_flush(&self.inner, vec![0])
        }
    }

    /// Compact every file overlapping `[start, end]` down to the bottom level, and wait. The
    /// bounds are anything with bytes (`&[u8]`, `&str`, `Vec<u8>`, byte arrays); `None` is
    /// open-ended (written `None::<&[u8]>` when neither bound gives the type).
    pub fn compact_range<S: AsRef<[u8]>, E: AsRef<[u8]>>(&self, start: Option<S>, end: Option<E>) -> Result<()> {
        self.compact_range_opt(start, end, &CompactOptions::default())
    }

    /// [`compact_range`](Self::compact_range) with options `opts` (the bottommost level's
    /// files, a move to another level afterwards; see [`CompactOptions`]). InvalidArgument for
    /// a target level past the last level, NotSupported for a move that is not possible (the
    /// compaction itself is done then).
    pub fn compact_range_opt<S: AsRef<[u8]>, E: AsRef<[u8]>>(
        &self,
        start: Option<S>,
        end: Option<E>,
        opts: &CompactOptions,
    ) -> Result<()> {
        let (start, end) = (start.as_ref().map(|s| s.as_ref()), end.as_ref().map(|e| e.as_ref()));
        manual::compact_range(&self.inner, &self.inner.default_cf, start, end, opts)
    }

    /// Wait until no flush or compaction is pending or running (first flushing every family
    /// if `opts` says so). A background error ends the wait with that error; a pause ends it
    /// with Incomplete if `opts` aborts on pause, else the wait goes on; past `opts`'s timeout
    /// it is TimedOut. A read-only DB has nothing to wait for.
    pub fn wait_for_compact(&self, opts: &WaitForCompactOptions) -> Result<()> {
        background::wait_for_compact(&self.inner, opts)
    }

    /// The value of a property such as `rocksdb.stats` or `rocksdb.num-files-at-level0`.
    ///
    /// `name` is anything [`CStrLike`](crate::CStrLike): a constant of
    /// [`properties`](crate::properties), a `&str`, `&String` or `&CStr`. `Ok(None)` if the
    /// property is unknown; a name with a nul byte is InvalidArgument.
    pub fn property_value(&self, name: impl crate::properties::CStrLike) -> Result<Option<String>> {
        let name = crate::properties::name_text(name)?;
        properties::property_value(&self.inner, &self.inner.default_cf, &name)
    }
    /// A numeric property: `Ok(None)` if the property is unknown or not a number.
    pub fn property_int_value(&self, name: impl crate::properties::CStrLike) -> Result<Option<u64>> {
        Ok(self.property_value(name)?.and_then(|s| s.trim().parse().ok()))
    }

    /// The write batches from the one holding sequence number `since` on, with their first
    /// sequence numbers, read from the WAL files (RocksDB's `GetUpdatesSince`, the `rocksdb`
    /// crate's `get_updates_since`): for replication. Obsolete WALs are kept for it only with
    /// `set_wal_ttl_seconds` / `set_wal_size_limit_mb`; a sequence number whose WAL is gone is
    /// NotFound.
    pub fn get_updates_since(&self, since: u64) -> Result<DBWALIterator> {
        crate::statistics::tick(&self.inner.stats, crate::statistics::Ticker::GetUpdatesSinceCalls, 1);
        wal_tailing::updates_since(&self.inner, since)
    }

    /// The sequence number of the last write.
    pub fn latest_sequence_number(&self) -> u64 {
        self.inner.last_seq.load(Ordering::Acquire)
    }

    /// Clear a background error and let writes resume (after the cause was fixed).
    pub fn resume(&self) -> Result<()> {
        background::resume(&self.inner)
    }
}

impl Drop for DB {
    fn drop(&mut self) {
        // As RocksDB (unless avoid_flush_during_shutdown): writes that skipped the WAL live only
        // in the memtables, so flush them before closing.
        if self.inner.unpersisted_data.load(std::sync::atomic::Ordering::Acquire) && !self.inner.read_only {
            let all: Vec<u32> = self.inner.cfs.read().by_id.keys().copied().collect();
            let _ = manual::flush_and_wait(&self.inner, all);
        }
        background::shutdown(&self.inner);
    }
}

/// Verify every block checksum of every live table (for `ldb checkconsistency`).
pub(crate) fn verify_all_tables(db: &DB) -> Result<()> {
    let cfs: Vec<Arc<ColumnFamilyData>> = db.inner.cfs.read().by_id.values().cloned().collect();
    for cf in cfs {
        let sv = cf.super_version();
        for (_, f) in sv.version.all_files() {
            let t = cf.table_cache.get(f)?;
            t.verify_checksums()?;
        }
    }
    Ok(())
}

impl DB {
    /// An iterator over the keys with `prefix`'s prefix, from `prefix` on: a forward iterator
    /// with `prefix_same_as_start` (the `rocksdb` crate's `prefix_iterator`). Needs a prefix
    /// extractor; without one it is a plain forward iterator from `prefix`.
    pub fn prefix_iterator<P: AsRef<[u8]>>(&self, prefix: P) -> DBIterator {
        let mut ro = ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        self.iterator_opt(IteratorMode::From(prefix.as_ref(), Direction::Forward), ro)
    }

    /// An iterator in total key order that ignores the prefix extractor (`total_order_seek`),
    /// so it sees every key even when the family has a prefix extractor.
    pub fn full_iterator(&self, mode: IteratorMode<'_>) -> DBIterator {
        let mut ro = ReadOptions::default();
        ro.set_total_order_seek(true);
        self.iterator_opt(mode, ro)
    }

    /// [`prefix_iterator`](Self::prefix_iterator) in family `cf`.
    pub fn prefix_iterator_cf<P: AsRef<[u8]>>(
        &self,
        cf: &impl crate::engine::column_family::AsColumnFamilyRef,
        prefix: P,
    ) -> DBIterator {
        let mut ro = ReadOptions::default();
        ro.set_prefix_same_as_start(true);
        self.iterator_cf_opt(cf, ro, IteratorMode::From(prefix.as_ref(), Direction::Forward))
    }
}

#[cfg(test)]
mod write_path_tests {
    use std::sync::Arc;

    use crate::api::db::DB;
    use crate::fs::MemFs;
    use crate::options::Options;
    use crate::write_batch::WriteBatch;

    /// Four threads writing batches of 8 records into one DB; returns how many groups inserted
    /// in parallel.
    fn parallel_groups(allow: bool) -> u64 {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_env(Arc::new(MemFs::new()));
        o.set_allow_concurrent_memtable_write(allow);
        let db = Arc::new(DB::open(&o, "/db").unwrap());
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for i in 0..3000u64 {
                        let mut b = WriteBatch::new();
                        for j in 0..8 {
                            b.put(format!("{t}-{i}-{j}"), b"v");
                        }
                        db.write(b).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(db.latest_sequence_number(), 4 * 3000 * 8);
        for t in 0..4u64 {
            for i in (0..3000u64).step_by(97) {
                assert_eq!(db.get(format!("{t}-{i}-7")).unwrap().as_deref(), Some(&b"v"[..]));
            }
        }
        db.inner
            .write_stats
            .parallel_groups
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    #[test]
    fn followers_insert_in_parallel_only_when_allowed() {
        // Groups with followers form under contention; some must have inserted in parallel.
        let mut seen = 0;
        for _ in 0..5 {
            seen += parallel_groups(true);
            if seen > 0 {
                break;
            }
        }
        assert!(seen > 0, "no group inserted in parallel");
        assert_eq!(parallel_groups(false), 0);
    }
}

super::access::db_access_through!([] DB, |db| db);
