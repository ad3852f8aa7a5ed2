//! The engine's shared state: what every job reads and changes (`DbInner`, the state under
//! the DB mutex `DbState`, the WAL being written), what readers pin (`SuperVersion`), and
//! the decisions made on it alone (when a flush is due, which table files can go).

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use super::column_family::{CfMem, ColumnFamilyData, SuperVersion};
use super::job_stats;
use super::write_thread::Writer;
use super::{column_family, stall, two_pc, write_thread};
use crate::error::{Error, Result};
use crate::fs::{FileLock, FileSystem};
use crate::key::{InternalKeyComparator, SequenceNumber};
use crate::log;
use crate::lsm::version::{Version, VersionSet};
use crate::memtable::MemTable;
use crate::options::live as live_options;
use crate::options::Options;
use crate::table::cache::BlockCache;

/// Mutable state guarded by the DB mutex.
pub(crate) struct DbState {
    /// Each live column family's memtables and statistics, by id.
    pub cfs: BTreeMap<u32, CfMem>,
    /// Each family's mutable memtable (what the next write group inserts into), rebuilt when
    /// one is switched or a family is created or dropped.
    pub memset: Arc<column_family::MemSet>,
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
    pub running_compactions: Vec<(u64, u32, crate::compaction::picker::RunningRange)>,
    pub next_compaction_id: u64,
    pub manual_compactions: usize,
    /// `pause_background_work` calls not yet matched by `continue_background_work`: while
    /// positive, background threads start no flush or compaction.
    pub bg_paused: usize,
    /// Ingests between choosing their files' levels and installing them: no compaction starts
    /// meanwhile (as RocksDB's `num_running_ingest_file_`), since the picker cannot see files
    /// that are not installed yet and could write an overlapping output into their level.
    pub ingests_running: usize,
    /// `delete_file_in_range` edits being written (their files held in `being_compacted`):
    /// a manual compaction waits for them, as it does for ingests, before it picks inputs.
    pub file_drops_running: usize,
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

/// What a secondary instance keeps beside the read-only state.
pub(crate) struct Secondary {
    /// Where the catch-ups stopped in the primary's MANIFEST and WALs; held by a catch-up, so
    /// two run one after the other.
    pub tails: Mutex<super::secondary_tails::Tails>,
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
    /// Set for a secondary instance (`DB::open_as_secondary`): read-only, caught up on demand.
    pub secondary: Option<Secondary>,
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
    pub write_stats: job_stats::WriteStats,
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
        || m.imm.iter().any(|i| i.flush_requested)
        || db.shutting_down.load(std::sync::atomic::Ordering::Acquire)
        || db.write_buffer_manager().is_some_and(|w| w.should_flush())
}

/// The first family with immutable memtables due for a flush.
pub(crate) fn flush_due_any(db: &DbInner, st: &DbState) -> Option<u32> {
    st.cfs.keys().copied().find(|&id| flush_due(db, st, id))
}
