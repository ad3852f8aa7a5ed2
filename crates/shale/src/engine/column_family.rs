//! Column families: several key spaces in one DB, each with its own memtables, version (files
//! per level) and options, sharing the WAL, the MANIFEST, the sequence numbers and the
//! background threads (RocksDB's `ColumnFamilyData` / `ColumnFamilySet`).
//!
//! What never changes while a family lives (id, name, options, comparator, table cache) is in
//! [`ColumnFamilyData`]; what changes (memtables, version, statistics) is in the DB state under
//! the DB mutex, keyed by the family id. Handles ([`ColumnFamily`]) hold the data by `Arc`, so a
//! handle stays usable after `drop_cf`: reads see the family as it was, writes are refused.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::table_cache::TableCache;
use crate::key::InternalKeyComparator;
use crate::lsm::version::Version;
use crate::memtable::MemTable;
use crate::options::Options;

pub use crate::lsm::version::DEFAULT_COLUMN_FAMILY_NAME;

/// What stays fixed while a column family lives.
pub(crate) struct ColumnFamilyData {
    pub id: u32,
    pub name: String,
    /// The family's options; the DB-wide ones (WAL, background jobs, environment, caches) are
    /// the DB's (see [`Options::with_db_options_of`]).
    /// `set_options` replaces the mutable ones (read lock-free through `LiveOptions`).
    pub opts: crate::options::live::LiveOptions,
    pub icmp: InternalKeyComparator,
    /// What readers pin: memtables and version, switched atomically.
    pub sv: RwLock<Arc<SuperVersion>>,
    pub table_cache: TableCache,
    /// The family's open blob files (values its tables' blob indexes point to).
    pub blob_cache: Arc<crate::blob::reader::BlobFileCache>,
    /// Set by `drop_cf`: writes to the family fail; its files go when the last handle does.
    pub dropped: AtomicBool,
    /// The DB's statistics (None: off).
    pub stats: crate::statistics::Stats,
    /// The block cache the family's block-based tables read through, holding its entry-stats
    /// collector (`rocksdb.block-cache-entry-stats`); None for other table formats or without
    /// a cache.
    pub cache_stats: Option<crate::table::cache::CollectorHold>,
    /// The family's `full_history_ts_low` (user-defined timestamps; empty: unset): reads
    /// below it are refused and compaction may collapse versions older than it. Mirrors the
    /// MANIFEST's value (set under the DB mutex after it is logged).
    pub full_history_ts_low: parking_lot::Mutex<Vec<u8>>,
}

impl ColumnFamilyData {
    /// A family's data: `opts` already merged with the DB-wide options; its table cache reads
    /// through `db_cache` unless the family names a block cache of its own.
    pub(crate) fn new(
        id: u32,
        name: &str,
        opts: Options,
        dir: &std::path::Path,
        db_cache: Option<Arc<crate::table::cache::BlockCache>>,
        mem: Arc<MemTable>,
        version: Arc<crate::lsm::version::Version>,
    ) -> ColumnFamilyData {
        let icmp = InternalKeyComparator::new(opts.comparator.clone());
        let cache = match &opts.block_cache {
            Some(c) => Some(c.0.clone()),
            None => db_cache,
        };
        // As RocksDB's `InternalStats`: a family of block-based tables with a block cache
        // takes the cache's entry-stats collector when it is created.
        let cache_stats = match opts.table_factory {
            crate::options::TableFactory::BlockBased => cache.as_ref().map(crate::table::cache::CollectorHold::new),
            _ => None,
        };
        let table_cache = TableCache::new(dir.to_path_buf(), opts.env.clone(), icmp.clone(), cache, &opts);
        ColumnFamilyData {
            id,
            name: name.to_string(),
            icmp,
            sv: RwLock::new(Arc::new(SuperVersion {
                mem,
                imm: Vec::new(),
                version,
            })),
            table_cache,
            blob_cache: Arc::new(crate::blob::reader::BlobFileCache::new(opts.env.clone(), dir)),
            dropped: AtomicBool::new(false),
            stats: opts.statistics.clone(),
            cache_stats,
            full_history_ts_low: parking_lot::Mutex::new(Vec::new()),
            opts: crate::options::live::LiveOptions::new(opts),
        }
    }

    pub(crate) fn super_version(&self) -> Arc<SuperVersion> {
        self.sv.read().clone()
    }
    pub(crate) fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }
}

/// The mutable part of a family, guarded by the DB mutex.
pub(crate) struct CfMem {
    pub cfd: Arc<ColumnFamilyData>,
    pub mem: Arc<MemTable>,
    /// Immutable memtables, oldest first.
    pub imm: VecDeque<ImmMem>,
    /// Flushed memtables kept for transactions' conflict checks (RocksDB's memtable history,
    /// `max_write_buffer_size_to_maintain`), newest last.
    pub history: VecDeque<Arc<MemTable>>,
    pub stats: super::job_stats::CompactionStats,
}

/// A handle on a column family, as the `rocksdb` crate's `ColumnFamily` / `BoundColumnFamily`:
/// get it from [`DB::cf_handle`](crate::DB::cf_handle) or
/// [`DB::create_cf`](crate::DB::create_cf). It stays valid after the family is dropped (reads
/// still see its data; writes fail) and the family's files are deleted when the last handle
/// goes.
#[derive(Clone)]
pub struct ColumnFamily {
    pub(crate) cfd: Arc<ColumnFamilyData>,
    /// Declared after `cfd`, so dropped after it: sees whether that was the family's last
    /// reference.
    _last_out: LastOut,
}

/// What a handle runs when the family's data goes with it: deletes the table files no version
/// needs any more (RocksDB purges obsolete files when a dropped family's last handle is
/// destroyed). Made by the API, which knows the DB; holds it weakly.
pub(crate) type PurgeHook = Arc<dyn Fn() + Send + Sync>;

#[derive(Clone)]
struct LastOut {
    cfd: std::sync::Weak<ColumnFamilyData>,
    purge: PurgeHook,
}

impl Drop for LastOut {
    fn drop(&mut self) {
        // A live family is held by the DB, so its data outlives every handle; the data is gone
        // here only when the family was dropped and this was its last reference.
        if self.cfd.strong_count() == 0 {
            (self.purge)();
        }
    }
}

impl ColumnFamily {
    /// A handle on `cfd`; `purge` runs if the family's data goes with the handle.
    pub(crate) fn new(cfd: Arc<ColumnFamilyData>, purge: PurgeHook) -> ColumnFamily {
        let last_out = LastOut {
            cfd: Arc::downgrade(&cfd),
            purge,
        };
        ColumnFamily {
            cfd,
            _last_out: last_out,
        }
    }
    /// The family's name.
    pub fn name(&self) -> &str {
        &self.cfd.name
    }
    /// The family's id (0 for `default`), as RocksDB numbers families.
    pub fn id(&self) -> u32 {
        self.cfd.id
    }
}

impl std::fmt::Debug for ColumnFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColumnFamily({:?}, id {})", self.cfd.name, self.cfd.id)
    }
}

/// Something that names a column family: [`ColumnFamily`] and references or `Arc`s of it (the
/// `rocksdb` crate's `AsColumnFamilyRef`).
pub trait AsColumnFamilyRef {
    /// The column family this names.
    fn column_family(&self) -> &ColumnFamily;
}
impl AsColumnFamilyRef for ColumnFamily {
    fn column_family(&self) -> &ColumnFamily {
        self
    }
}
impl<T: AsColumnFamilyRef + ?Sized> AsColumnFamilyRef for &T {
    fn column_family(&self) -> &ColumnFamily {
        (**self).column_family()
    }
}
impl<T: AsColumnFamilyRef + ?Sized> AsColumnFamilyRef for Arc<T> {
    fn column_family(&self) -> &ColumnFamily {
        (**self).column_family()
    }
}

/// A family's name and options, for opening a DB with families (`DB::open_cf_descriptors`).
#[derive(Clone)]
pub struct ColumnFamilyDescriptor {
    pub(crate) name: String,
    pub(crate) options: Options,
}

impl ColumnFamilyDescriptor {
    /// A descriptor for the family `name` with options `options`.
    pub fn new(name: impl Into<String>, options: Options) -> ColumnFamilyDescriptor {
        ColumnFamilyDescriptor {
            name: name.into(),
            options,
        }
    }
    /// The family's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Debug for ColumnFamilyDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ColumnFamilyDescriptor({:?})", self.name)
    }
}

/// The live families by id and name (read on every `cf_handle`; written by create and drop).
#[derive(Default)]
pub(crate) struct CfSet {
    pub by_id: BTreeMap<u32, Arc<ColumnFamilyData>>,
}

impl CfSet {
    pub(crate) fn by_name(&self, name: &str) -> Option<&Arc<ColumnFamilyData>> {
        self.by_id.values().find(|c| c.name == name)
    }
    pub(crate) fn names(&self) -> Vec<String> {
        self.by_id.values().map(|c| c.name.clone()).collect()
    }
}

/// Check a new family's name: not empty.
pub(crate) fn validate_name(name: &str) -> crate::error::Result<()> {
    if name.is_empty() {
        return Err(crate::error::Error::invalid("column family name: must not be empty"));
    }
    Ok(())
}

/// The history bytes a family keeps (0: none).
fn history_limit(o: &Options) -> usize {
    match o.max_write_buffer_size_to_maintain {
        n if n < 0 => o.max_write_buffer_number.saturating_mul(o.write_buffer_size),
        n => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

impl CfMem {
    /// A memtable was flushed: keep it as history if the family keeps any, then trim the history
    /// to its budget (oldest first). Called by flush under the DB mutex.
    pub(crate) fn keep_history(&mut self, mem: Arc<MemTable>) {
        let limit = history_limit(&self.cfd.opts);
        if limit == 0 {
            self.history.clear();
            return;
        }
        self.history.push_back(mem);
        let mut total: usize = self.history.iter().map(|h| h.approximate_memory_usage()).sum();
        while total > limit {
            if let Some(old) = self.history.pop_front() {
                total = total.saturating_sub(old.approximate_memory_usage());
            }
        }
    }
}

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
    /// A flush was asked for without waiting (`FlushOptions::set_wait(false)`): flush it
    /// without waiting for `min_write_buffer_number_to_merge` memtables.
    pub flush_requested: bool,
}

/// The mutable memtable of every live family, by id (what a write group inserts into).
pub(crate) type MemSet = Vec<(u32, Arc<MemTable>)>;
