//! The database: public handle and shared state. The work is split by concern:
//! `open` (open, recovery, destroy), `write` (group commit, memtable switch, stalls), `read`
//! (get, multi_get), `iter` (merging and user iterators), `flush`, `compaction` (picker and job),
//! `background` (worker threads), `version` (versions and the MANIFEST), `props` (properties).

pub(crate) mod background;
pub(crate) mod build;
pub(crate) mod cf_api;
pub use cf_api::Range;
pub(crate) mod checkpoint;
pub(crate) mod column_family;
pub(crate) mod compaction;
pub(crate) mod compat_api;
pub(crate) mod error_handler;
pub(crate) mod events;
pub(crate) mod flush;
pub(crate) mod ingest;
pub(crate) mod iter;
pub(crate) mod live_options;
pub(crate) mod multi_get;
pub(crate) mod open;
pub(crate) mod options_file;
#[cfg(test)]
pub(crate) mod picker_db_tests;
pub(crate) mod set_options;
pub(crate) use options_file::apply_latest as apply_options_file;
pub(crate) use options_file::apply_latest_cf as apply_options_file_cf;
pub(crate) mod props;
pub(crate) mod range_del;
pub(crate) mod read;
pub(crate) mod sst_file_writer;
pub(crate) mod stall;
pub(crate) mod subcompaction;
pub(crate) mod table_cache;
pub(crate) mod two_pc;
pub(crate) mod wal_iter;
pub use wal_iter::DBWALIterator;
pub(crate) mod write;
pub(crate) mod write_thread;
pub(crate) mod write_two_pc;
#[cfg(feature = "fuzzing")]
pub(crate) use write::MemInserter;

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

pub use checkpoint::{Checkpoint, LiveFile, WalFile};
pub use column_family::{AsColumnFamilyRef, ColumnFamily, ColumnFamilyDescriptor, DEFAULT_COLUMN_FAMILY_NAME};
pub(crate) use column_family::{CfMem, ColumnFamilyData};
pub use compat_api::{DBWithThreadMode, MultiThreaded, SingleThreaded, ThreadMode};
pub use ingest::IngestExternalFileOptions;
pub use iter::{DBIterator, DBRawIterator, Direction, IteratorMode};
pub use sst_file_writer::SstFileWriter;

use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::key::{InternalKeyComparator, SequenceNumber};
use crate::log;
use crate::lsm::version::{Version, VersionSet};
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
pub use crate::snapshot::Snapshot;
use crate::table::cache::BlockCache;
use crate::table::pinnable::DBPinnableSlice;
use crate::write_batch::WriteBatch;
use write_thread::Writer;

/// What readers pin: the memtables and the version, switched atomically.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imm: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// An immutable memtable waiting for flush.
pub(crate) struct ImmMem {
    pub mem: Arc<MemTable>,
    /// The WAL that started after this memtable became immutable: once this memtable is
    /// flushed, WALs numbered below it are obsolete.
    pub next_log: u64,
}

/// Mutable state guarded by the DB mutex.
pub(crate) struct DbState {
    /// Each live column family's memtables and statistics, by id.
    pub cfs: BTreeMap<u32, CfMem>,
    /// Each family's mutable memtable (what the next write group inserts into), rebuilt when
    /// one is switched or a family is created or dropped.
    pub memset: Arc<write::MemSet>,
    pub versions: VersionSet,
    pub bg_error: Option<Error>,
    /// A soft background error (ENOSPC in a compaction): writes go on, compactions are retried
    /// after a delay, and the first one that succeeds clears it (RocksDB's kSoftError).
    pub soft_error: Option<Error>,
    /// While a soft error is set: no compaction starts before this time; and the next delay.
    pub compaction_retry_at: Option<std::time::Instant>,
    pub compaction_retry_delay: std::time::Duration,
    pub flush_running: bool,
    /// Callers waiting for every immutable memtable to be flushed (`flush()`, shutdown): while
    /// non-zero a flush does not wait for `min_write_buffer_number_to_merge` memtables.
    pub flush_requests: usize,
    /// `resume()` after a background error: the next forced switch starts a new WAL even when
    /// the memtable is empty (the current WAL may end in a torn record; nothing may follow it).
    pub wal_switch_pending: bool,
    /// A write group panicked: the memtable may hold part of a batch whose sequence numbers
    /// were never published. Such a DB cannot `resume()`; reopening replays the WAL.
    pub write_panicked: bool,
    pub compactions_running: usize,
    pub being_compacted: HashSet<u64>,
    /// Output level and key range of each running compaction, by id.
    /// Compaction id, family and output level and key range of each running compaction.
    pub running_compactions: Vec<(u64, u32, compaction::RunningRange)>,
    pub next_compaction_id: u64,
    pub manual_compactions: usize,
    /// `pause_background_work` calls not yet matched by `continue_background_work`: while
    /// positive, background threads start no flush or compaction.
    pub bg_paused: usize,
    /// Ingests between choosing their files' levels and installing them: no compaction starts
    /// meanwhile (as RocksDB's `num_running_ingest_file_`), since the picker cannot see files
    /// that are not installed yet and could write an overlapping output into their level.
    pub ingests_running: usize,
    /// Where the next automatic compaction pick starts (families take turns).
    pub next_compaction_cf: u32,
    /// While non-zero no table or WAL file is deleted (`disable_file_deletions`, checkpoints
    /// and backups copying files); obsolete files wait until it is back to 0.
    pub file_deletions_disabled: usize,
}

impl DbState {
    pub(crate) fn rebuild_memset(&mut self) {
        self.memset = Arc::new(self.cfs.iter().map(|(id, m)| (*id, m.mem.clone())).collect());
    }
    /// The default family's memtables.
    #[cfg(test)]
    pub(crate) fn default_cf(&self) -> &CfMem {
        &self.cfs[&0]
    }
    /// A live family's memtables (an error once it was dropped).
    pub(crate) fn cf(&self, id: u32) -> Result<&CfMem> {
        self.cfs
            .get(&id)
            .ok_or_else(|| Error::invalid(format!("column family {id} was dropped")))
    }
    pub(crate) fn cf_mut(&mut self, id: u32) -> Result<&mut CfMem> {
        self.cfs
            .get_mut(&id)
            .ok_or_else(|| Error::invalid(format!("column family {id} was dropped")))
    }
}

pub(crate) struct WalState {
    pub writer: Option<log::Writer>,
    pub number: u64,
    /// Older WALs still on disk (number, bytes), oldest first (for `max_total_wal_size`).
    pub alive: VecDeque<(u64, u64)>,
    /// Bytes appended but not yet synced.
    pub unsynced: bool,
}

pub(crate) struct DbInner {
    pub path: PathBuf,
    /// The DB-wide options (and the default family's as opened); `set_db_options` replaces the
    /// mutable ones.
    pub opts: live_options::LiveOptions,
    /// The default column family (id 0).
    pub default_cf: Arc<ColumnFamilyData>,
    /// Every live column family.
    pub cfs: RwLock<column_family::CfSet>,
    pub fs: Arc<dyn FileSystem>,
    pub read_only: bool,
    pub lock: Mutex<Option<Box<dyn FileLock>>>,
    pub state: Mutex<DbState>,
    /// Signalled whenever background work finishes or fails.
    pub bg_cv: Condvar,
    /// Background threads wait here for work.
    pub work_cv: Condvar,
    /// Signalled when a MANIFEST write ends (the next one may start).
    pub manifest_cv: Condvar,
    /// Last sequence number visible to readers.
    pub last_seq: AtomicU64,
    pub writers: Mutex<VecDeque<Arc<Writer>>>,
    /// The memtable representation takes concurrent inserts (the skiplist does; the vector
    /// does not), so a group's followers may insert their own batches in parallel.
    pub concurrent_inserts: AtomicBool,
    pub wal: Mutex<WalState>,
    pub block_cache: Option<Arc<BlockCache>>,
    /// Where memtables charge their memory (the DB total and the write buffer manager).
    pub mem_account: Arc<crate::write_buffer_manager::MemAccount>,
    pub snapshots: Arc<Mutex<BTreeMap<SequenceNumber, usize>>>,
    pub shutting_down: AtomicBool,
    /// A write skipped the WAL (RocksDB's `has_unpersisted_data_`): the memtables are flushed
    /// when the DB is closed, so a clean close loses nothing.
    pub unpersisted_data: AtomicBool,
    pub db_id: String,
    pub session_id: String,
    pub bg_threads: Mutex<Vec<JoinHandle<()>>>,
    pub write_stats: props::WriteStats,
    /// Write groups between their WAL write and their publication.
    pub pipeline: write_thread::Pipeline,
    /// Write-stall condition and delayed-write token bucket.
    pub stall: stall::StallController,
    /// The LOG file.
    pub info_log: Arc<crate::info_log::InfoLog>,
    /// When each archived WAL was archived (seconds since the epoch), for `WAL_ttl_seconds`.
    pub archived: Mutex<std::collections::HashMap<u64, u64>>,
    /// Two-phase commit: the WALs holding prepared sections not yet committed or rolled back
    /// (and how many each holds), and the prepared transactions recovered at open
    /// (`txn/two_pc.rs`).
    pub two_pc: two_pc::TwoPcState,
    /// Statistics (`Options::enable_statistics`; None: off).
    pub stats: crate::statistics::Stats,
}

impl DbInner {
    /// A live family by id.
    pub(crate) fn cf_by_id(&self, id: u32) -> Option<Arc<ColumnFamilyData>> {
        self.cfs.read().by_id.get(&id).cloned()
    }

    /// Write `edit` to the MANIFEST (synced) and install the version it makes, as RocksDB's
    /// `LogAndApply`: the append and fsync run without the DB mutex (readers, writers and
    /// memtable switches go on meanwhile), one MANIFEST write at a time; a caller that finds one
    /// in progress waits for it. Called with the DB mutex held; returns with it held.
    pub(crate) fn log_and_apply(
        &self,
        st: &mut parking_lot::MutexGuard<'_, DbState>,
        edit: &mut crate::lsm::version_edit::VersionEdit,
    ) -> Result<()> {
        self.log_and_apply_cf(st, edit, None)
    }

    /// [`log_and_apply`](Self::log_and_apply) for several edits written as one atomic group.
    pub(crate) fn log_and_apply_group(
        &self,
        st: &mut parking_lot::MutexGuard<'_, DbState>,
        edits: &mut [crate::lsm::version_edit::VersionEdit],
    ) -> Result<()> {
        self.apply_edits(st, edits, None)
    }

    /// [`log_and_apply`](Self::log_and_apply), for an edit that may add a family (`new_cf`: its
    /// comparator and number of levels).
    pub(crate) fn log_and_apply_cf(
        &self,
        st: &mut parking_lot::MutexGuard<'_, DbState>,
        edit: &mut crate::lsm::version_edit::VersionEdit,
        new_cf: Option<(InternalKeyComparator, usize)>,
    ) -> Result<()> {
        self.apply_edits(st, std::slice::from_mut(edit), new_cf)
    }

    fn apply_edits(
        &self,
        st: &mut parking_lot::MutexGuard<'_, DbState>,
        edits: &mut [crate::lsm::version_edit::VersionEdit],
        new_cf: Option<(InternalKeyComparator, usize)>,
    ) -> Result<()> {
        while st.versions.manifest_busy {
            self.manifest_cv.wait(st);
        }
        let last = self.last_seq.load(Ordering::Acquire);
        let mut pending = st
            .versions
            .prepare_edits(edits, last, self.opts.paranoid_checks, new_cf)?;
        let r = parking_lot::MutexGuard::unlocked(st, || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pending.write()))
                .unwrap_or_else(|p| Err(Error::from_panic("MANIFEST write", p)))
        });
        let r = st.versions.finish_edit(pending, r);
        self.manifest_cv.notify_all();
        r
    }

    /// Publish a new SuperVersion of family `cf` from the state (call with the DB mutex held),
    /// and recompute the write-stall condition over every family (the worst one wins).
    pub(crate) fn install_super_version(&self, st: &DbState, cf: u32) {
        if let (Some(m), Ok(v)) = (st.cfs.get(&cf), st.versions.cf(cf)) {
            let sv = SuperVersion {
                mem: m.mem.clone(),
                imm: m.imm.iter().rev().map(|i| i.mem.clone()).collect(),
                version: v.current.clone(),
            };
            *m.cfd.sv.write() = Arc::new(sv);
        }
        let inputs: Vec<(&Options, &Arc<Version>, usize)> = st
            .cfs
            .iter()
            .filter_map(|(id, m)| Some((&*m.cfd.opts, &st.versions.cf(*id).ok()?.current, m.imm.len())))
            .collect();
        self.stall.recalc_all(&inputs);
    }

    /// A new, empty memtable for family `cfd`, charged to the DB's memory account.
    pub(crate) fn new_memtable(&self, cfd: &ColumnFamilyData) -> Arc<MemTable> {
        let m = MemTable::with_factory(cfd.icmp.clone(), cfd.opts.arena_block_size(), cfd.opts.memtable_factory)
            .with_filters(cfd.opts.memtable_bloom(), cfd.opts.memtable_point_filter())
            .with_account(&self.mem_account);
        m.set_created_seq(self.last_seq.load(Ordering::Acquire));
        Arc::new(m)
    }

    /// The write buffer manager, if memtables have a budget.
    #[inline]
    pub(crate) fn write_buffer_manager(&self) -> Option<&Arc<crate::write_buffer_manager::WriteBufferManager>> {
        self.mem_account.wbm.as_ref()
    }

    pub(crate) fn snapshot_list(&self) -> Vec<SequenceNumber> {
        self.snapshots.lock().keys().copied().collect()
    }

    pub(crate) fn check_bg_error(st: &DbState) -> Result<()> {
        match &st.bg_error {
            Some(e) => Err(Error::Background(Arc::new(e.clone()))),
            None => Ok(()),
        }
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

    /// Delete every file of the database at `path` (fails with Busy if it is open).
    pub fn destroy(opts: &Options, path: impl AsRef<Path>) -> Result<()> {
        open::destroy(opts, path.as_ref())
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        cf_api::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.put(key.as_ref(), value)
        })
    }
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        cf_api::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.delete(key.as_ref())
        })
    }
    /// Delete `key`, cancelling exactly one earlier Put (RocksDB's `SingleDelete`: use it only
    /// for keys written once since their last deletion).
    pub fn single_delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.single_delete_opt(key, &WriteOptions::default())
    }
    pub fn single_delete_opt(&self, key: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        cf_api::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.single_delete(key.as_ref())
        })
    }
    /// Add a merge operand for `key` (needs `Options::merge_operator`).
    pub fn merge(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, value, &WriteOptions::default())
    }
    pub fn merge_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        range_del::validate_merge(&self.inner.default_cf)?;
        cf_api::write_one(&self.inner, &self.inner.default_cf, key.as_ref(), wo, |b| {
            b.merge(key.as_ref(), value)
        })
    }
    /// Delete every key in `[begin, end)`. `begin > end` is InvalidArgument; `begin == end`
    /// does nothing.
    pub fn delete_range(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(begin, end, &WriteOptions::default())
    }
    pub fn delete_range_opt(&self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        let (b, e) = (begin.as_ref(), end.as_ref());
        range_del::validate_range(&self.inner.default_cf, b, e)?;
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
    pub fn write_opt(&self, batch: WriteBatch, wo: &WriteOptions) -> Result<()> {
        write::validate_batch(&self.inner, &batch)?;
        write::write(&self.inner, wo, batch, true)
    }

    /// The value of `key`, or `None` if it does not exist.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        read::get(
            &self.inner,
            &self.inner.default_cf,
            &ReadOptions::default(),
            key.as_ref(),
        )
    }
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        read::get(&self.inner, &self.inner.default_cf, ro, key.as_ref())
    }
    /// The value of `key` without copying it: the returned slice points into the memtable,
    /// cached block or table file it was found in and keeps that alive (see
    /// [`DBPinnableSlice`](crate::DBPinnableSlice)). Same result as [`get`](Self::get).
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        read::get(
            &self.inner,
            &self.inner.default_cf,
            &ReadOptions::default(),
            key.as_ref(),
        )
    }
    pub fn get_pinned_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<DBPinnableSlice>> {
        read::get(&self.inner, &self.inner.default_cf, ro, key.as_ref())
    }
    /// Look up several keys at one consistent point in time.
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        multi_get::multi_get(&self.inner, &self.inner.default_cf, ro, keys)
    }
    /// [`multi_get`](Self::multi_get) with each value pinned where it was found, as
    /// [`get_pinned`](Self::get_pinned) does (the `rocksdb` crate's `batched_multi_get_cf`).
    pub fn multi_get_pinned<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
    ) -> Vec<Result<Option<DBPinnableSlice>>> {
        self.multi_get_pinned_opt(keys, &ReadOptions::default())
    }
    pub fn multi_get_pinned_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<DBPinnableSlice>>> {
        multi_get::multi_get(&self.inner, &self.inner.default_cf, ro, keys)
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
    pub fn raw_iterator(&self) -> DBRawIterator {
        self.raw_iterator_opt(ReadOptions::default())
    }
    pub fn raw_iterator_opt(&self, ro: ReadOptions) -> DBRawIterator {
        iter::new_raw_iterator(&self.inner, &self.inner.default_cf, ro)
    }
    /// A Rust iterator over `(key, value)` pairs starting at `mode`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DBIterator {
        self.iterator_opt(mode, ReadOptions::default())
    }
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, ro: ReadOptions) -> DBIterator {
        DBIterator::new(self.raw_iterator_opt(ro), mode)
    }

    /// Flush the default family's memtable to an L0 table and wait for it.
    pub fn flush(&self) -> Result<()> {
        flush::flush_and_wait(&self.inner, vec![0])
    }

    /// Compact every file overlapping `[begin, end]` down to the bottom level, and wait.
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        compaction::compact_range(&self.inner, &self.inner.default_cf, begin, end)
    }

    /// Wait until no flush or compaction is pending or running.
    pub fn wait_for_compact(&self) -> Result<()> {
        background::wait_for_compact(&self.inner)
    }

    /// The value of a property such as `rocksdb.stats` or `rocksdb.num-files-at-level0`.
    pub fn property_value(&self, name: &str) -> Result<Option<String>> {
        props::property_value(&self.inner, &self.inner.default_cf, name)
    }
    /// A numeric property.
    pub fn property_int_value(&self, name: &str) -> Result<Option<u64>> {
        Ok(self.property_value(name)?.and_then(|s| s.trim().parse().ok()))
    }

    /// The write batches from the one holding sequence number `since` on, with their first
    /// sequence numbers, read from the WAL files (RocksDB's `GetUpdatesSince`, the `rocksdb`
    /// crate's `get_updates_since`): for replication. Obsolete WALs are kept for it only with
    /// `set_wal_ttl_seconds` / `set_wal_size_limit_mb`; a sequence number whose WAL is gone is
    /// NotFound.
    pub fn get_updates_since(&self, since: u64) -> Result<DBWALIterator> {
        crate::statistics::tick(&self.inner.stats, crate::statistics::Ticker::GetUpdatesSinceCalls, 1);
        wal_iter::updates_since(&self.inner, since)
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
            let _ = flush::flush_and_wait(&self.inner, all);
        }
        background::shutdown(&self.inner);
    }
}

/// True when family `cf`'s immutable memtables should be flushed now:
/// `min_write_buffer_number_to_merge` of them wait (capped at `max_write_buffer_number - 1`, as
/// RocksDB sanitizes it), or a caller waits for a flush, or the write buffer manager wants memory
/// back.
pub(crate) fn flush_due(db: &DbInner, st: &DbState, cf: u32) -> bool {
    let Some(m) = st.cfs.get(&cf) else {
        return false;
    };
    if m.imm.is_empty() {
        return false;
    }
    let o = &m.cfd.opts;
    let min_merge = o
        .min_write_buffer_number_to_merge
        .clamp(1, o.max_write_buffer_number.saturating_sub(1).max(1));
    m.imm.len() >= min_merge
        || st.flush_requests > 0
        || db.shutting_down.load(std::sync::atomic::Ordering::Acquire)
        || db.write_buffer_manager().is_some_and(|w| w.should_flush())
}

/// The first family with immutable memtables due for a flush.
pub(crate) fn flush_due_any(db: &DbInner, st: &DbState) -> Option<u32> {
    st.cfs.keys().copied().find(|&id| flush_due(db, st, id))
}

/// Delete table files that a synced MANIFEST edit removed and no version references any more
/// (after background jobs and manual compactions).
pub(crate) fn purge_obsolete(db: &DbInner, st: &mut parking_lot::MutexGuard<'_, DbState>) {
    if st.file_deletions_disabled > 0 {
        return; // the reaper keeps them until deletions are enabled again
    }
    for n in st.versions.reaper.take() {
        for c in db.cfs.read().by_id.values() {
            c.table_cache.evict(n);
        }
        events::table_file_deleted(db, n);
        let _ = db.fs.remove_file(&crate::lsm::filename::table_name(&db.path, n));
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
