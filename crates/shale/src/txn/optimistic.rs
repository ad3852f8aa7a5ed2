//! `OptimisticTransactionDB`: transactions that take no locks; each commit checks, under
//! striped validation locks (RocksDB's `kValidateParallel`), that no key the transaction tracked
//! was written after the sequence it was tracked at, then writes the batch.

use std::marker::PhantomData;
use std::ops::Deref;
use std::path::Path;

use parking_lot::Mutex;

use super::checks::txn_options;
use super::transaction::{Kind, Transaction, TxnCore, TxnSettings};
use crate::api::db::DB;
use crate::api::{SingleThreaded, ThreadMode};
use crate::engine::column_family::ColumnFamilyDescriptor;
use crate::error::Result;
use crate::options::{Options, WriteOptions};

/// Options of one optimistic transaction (the `rocksdb` crate's `OptimisticTransactionOptions`).
#[derive(Clone, Debug, Default)]
pub struct OptimisticTransactionOptions {
    set_snapshot: bool,
}

impl OptimisticTransactionOptions {
    /// Default options: no snapshot at the start.
    pub fn new() -> Self {
        Self::default()
    }
    /// Take a snapshot when the transaction starts: every key it tracks must not change after
    /// it (default false: after the key is first read for update or written).
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.set_snapshot = snapshot;
    }
}

/// A DB whose transactions are checked for conflicts at commit (RocksDB's
/// `OptimisticTransactionDB`). It dereferences to the [`DB`] for everything else; writes made
/// directly on the DB are seen by the checks too.
///
/// `T` is the `rocksdb` crate's thread mode; Shale's DB is shared between threads in either,
/// so both behave the same. Where nothing else fixes the mode, write the type out
/// (`let db: OptimisticTransactionDB = ...`).
pub struct OptimisticTransactionDB<T: ThreadMode = SingleThreaded> {
    core: TxnCore,
    _mode: PhantomData<fn() -> T>,
}

impl<T: ThreadMode> std::fmt::Debug for OptimisticTransactionDB<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OptimisticTransactionDB({})", self.core.db.path().display())
    }
}

/// Validation lock buckets (RocksDB's default `occ_lock_buckets`).
const BUCKETS: usize = 1 << 20;

impl<T: ThreadMode> OptimisticTransactionDB<T> {
    fn wrap(db: DB) -> Self {
        // Buckets are cheap (one byte of state each with parking_lot).
        let buckets = (0..BUCKETS).map(|_| Mutex::new(())).collect();
        OptimisticTransactionDB {
            core: TxnCore::new(db, Kind::Optimistic { buckets }),
            _mode: PhantomData,
        }
    }
    /// Open (or create, with `create_if_missing`). As RocksDB, a family that keeps no
    /// memtable history gets `max_write_buffer_size_to_maintain = -1`.
    pub fn open(opts: &Options, path: impl AsRef<Path>) -> Result<Self> {
        DB::open(&txn_options(opts), path).map(Self::wrap)
    }
    /// Opens the DB at `path` with default options and `create_if_missing` set.
    pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
        let mut o = Options::default();
        o.create_if_missing(true);
        Self::open(&o, path)
    }
    /// [`open`](Self::open) with the column families `names`, each with `opts` (every existing family
    /// must be named, as for [`DB::open_cf`]).
    pub fn open_cf<N: AsRef<str>, I: IntoIterator<Item = N>>(
        opts: &Options,
        path: impl AsRef<Path>,
        names: I,
    ) -> Result<Self> {
        DB::open_cf(&txn_options(opts), path, names).map(Self::wrap)
    }
    /// [`open`](Self::open) with one descriptor per column family; each family gets memtable history
    /// as at open.
    pub fn open_cf_descriptors<I: IntoIterator<Item = ColumnFamilyDescriptor>>(
        opts: &Options,
        path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<Self> {
        let cfs: Vec<ColumnFamilyDescriptor> = cfs
            .into_iter()
            .map(|mut d| {
                d.options = txn_options(&d.options);
                d
            })
            .collect();
        DB::open_cf_descriptors(&txn_options(opts), path, cfs).map(Self::wrap)
    }
    /// Create a family (with memtable history, as at open).
    pub fn create_cf(&self, name: impl AsRef<str>, opts: &Options) -> Result<()> {
        self.core.db.create_cf(name, &txn_options(opts))
    }

    /// A new transaction with default options.
    pub fn transaction(&self) -> Transaction<'_, Self> {
        self.transaction_opt(&WriteOptions::default(), &OptimisticTransactionOptions::default())
    }
    /// Begins a transaction writing with `wo`, configured by `otxn_opts`. Its keys are checked for
    /// conflicts at commit (Busy if a tracked key changed, TryAgain if the memtable history is too
    /// short to tell).
    pub fn transaction_opt(
        &self,
        wo: &WriteOptions,
        otxn_opts: &OptimisticTransactionOptions,
    ) -> Transaction<'_, Self> {
        let s = TxnSettings {
            set_snapshot: otxn_opts.set_snapshot,
            ..TxnSettings::default()
        };
        Transaction::begin(&self.core, wo, s)
    }
    /// The underlying DB.
    pub fn base_db(&self) -> &DB {
        &self.core.db
    }
    /// Writes `batch` atomically, outside any transaction (as [`DB::write`]; either form of
    /// the batch type is taken, as the `rocksdb` crate's transaction DBs take theirs).
    pub fn write<const TXN: bool>(&self, batch: crate::write_batch::WriteBatchWithTransaction<TXN>) -> Result<()> {
        self.core.db.write(batch.into_plain())
    }
    /// [`write`](Self::write) with write options `wo`.
    pub fn write_opt<const TXN: bool>(
        &self,
        batch: crate::write_batch::WriteBatchWithTransaction<TXN>,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.core.db.write_opt(batch.into_plain(), wo)
    }
}

impl<T: ThreadMode> Deref for OptimisticTransactionDB<T> {
    type Target = DB;
    fn deref(&self) -> &DB {
        &self.core.db
    }
}

crate::api::access::db_access_through!([T: ThreadMode] OptimisticTransactionDB<T>, |d| &**d);
