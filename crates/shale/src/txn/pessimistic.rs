//! `TransactionDB`: transactions that lock each key they write or read for update (RocksDB's
//! pessimistic `TransactionDB` with its point lock manager, `locks.rs`). Writes made through the
//! DB outside a transaction lock their keys too.

use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

use super::checks::txn_options;
use super::locks::LockManager;
use super::transaction::{Kind, Transaction, TxnCore, TxnSettings};

/// A `TransactionDB` opens its DB with `allow_2pc`, as RocksDB's `TransactionDB::Open` does.
fn two_pc_options(opts: &Options) -> Options {
    let mut o = txn_options(opts);
    o.allow_2pc = true;
    o
}
use crate::api::access::{DBRawIteratorWithThreadMode, SnapshotWithThreadMode};
use crate::api::db::DB;
use crate::api::{MultiThreaded, SingleThreaded, ThreadMode};
use crate::engine::column_family::AsColumnFamilyRef;
use crate::engine::column_family::ColumnFamily;
use crate::engine::column_family::ColumnFamilyDescriptor;
use crate::engine::iter::DBIterator;
use crate::engine::iter::IteratorMode;
use crate::error::{Error, Result};
use crate::options::{FlushOptions, Options, ReadOptions, WriteOptions};

/// Options of a [`TransactionDB`] (the `rocksdb` crate's `TransactionDBOptions`).
#[derive(Clone, Debug)]
pub struct TransactionDBOptions {
    txn_lock_timeout: i64,
    default_lock_timeout: i64,
    num_stripes: usize,
}

impl Default for TransactionDBOptions {
    fn default() -> Self {
        TransactionDBOptions {
            txn_lock_timeout: 1000,
            default_lock_timeout: 1000,
            num_stripes: 16,
        }
    }
}

impl TransactionDBOptions {
    /// Default options: lock timeouts of 1000 ms, 16 lock stripes.
    pub fn new() -> Self {
        Self::default()
    }
    /// Lock timeout in ms of transactions that set none (default 1000; -1: wait forever; other
    /// negative values are refused at open).
    pub fn set_txn_lock_timeout(&mut self, ms: i64) {
        self.txn_lock_timeout = ms;
    }
    /// Lock timeout in ms of writes made outside a transaction (default 1000).
    pub fn set_default_lock_timeout(&mut self, ms: i64) {
        self.default_lock_timeout = ms;
    }
    /// Stripes of the lock table (default 16).
    pub fn set_num_stripes(&mut self, n: usize) {
        self.num_stripes = n;
    }
    fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("transaction_lock_timeout", self.txn_lock_timeout),
            ("default_lock_timeout", self.default_lock_timeout),
        ] {
            if v < -1 {
                return Err(Error::invalid(format!(
                    "{name} must be -1 (no timeout) or at least 0 ms, got {v}"
                )));
            }
        }
        if self.num_stripes == 0 {
            return Err(Error::invalid("num_stripes must be at least 1"));
        }
        Ok(())
    }
}

/// Options of one pessimistic transaction (the `rocksdb` crate's `TransactionOptions`).
#[derive(Clone, Default)]
pub struct TransactionOptions(TxnSettings);

impl std::fmt::Debug for TransactionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.0;
        write!(
            f,
            "TransactionOptions(snapshot {}, lock_timeout {}, expiration {}, deadlock_detect {})",
            s.set_snapshot, s.lock_timeout, s.expiration, s.deadlock_detect
        )
    }
}

impl TransactionOptions {
    /// Default options: no snapshot, the DB's lock timeout, no expiration, no deadlock detection.
    pub fn new() -> Self {
        Self::default()
    }
    /// Take a snapshot at the start: a key locked later must not have changed since.
    pub fn set_snapshot(&mut self, snapshot: bool) {
        self.0.set_snapshot = snapshot;
    }
    /// Lock timeout in ms (-1, the default: the DB's `txn_lock_timeout`; 0: do not wait).
    /// Other negative values make every call of the transaction fail with InvalidArgument.
    pub fn set_lock_timeout(&mut self, ms: i64) {
        self.0.lock_timeout = ms;
    }
    /// After this many ms (if > 0) the transaction's locks may be taken by others and its
    /// commit fails with Expired.
    pub fn set_expiration(&mut self, ms: i64) {
        self.0.expiration = ms;
    }
    /// Refuse to wait for a lock when waiting would close a cycle (Busy, "Deadlock").
    pub fn set_deadlock_detect(&mut self, detect: bool) {
        self.0.deadlock_detect = detect;
    }
    /// How many wait-for edges deadlock detection follows (default 50).
    pub fn set_deadlock_detect_depth(&mut self, depth: i64) {
        self.0.deadlock_detect_depth = depth;
    }
    /// Largest write batch in bytes (0: unlimited).
    pub fn set_max_write_batch_size(&mut self, size: usize) {
        self.0.max_write_batch_size = size;
    }
    /// Whether `commit` may be called without `prepare` (default true). With false, a
    /// `commit` before `prepare` fails with InvalidArgument and leaves the transaction as it
    /// was (RocksDB's `skip_prepare` and `TxnNotPrepared`).
    pub fn set_skip_prepare(&mut self, skip_prepare: bool) {
        self.0.skip_prepare = skip_prepare;
    }
}

/// A DB whose transactions lock rows (RocksDB's pessimistic `TransactionDB`).
///
/// `T` is the `rocksdb` crate's thread mode: Shale's DB is shared between threads in either
/// mode, so it changes nothing but which calls exist — as in the crate, the property calls
/// ([`property_value`](TransactionDB::property_value)) are those of
/// `TransactionDB<MultiThreaded>` (on the default mode, use [`base_db`](Self::base_db)).
/// Where nothing else fixes the mode, write the type out (`let db: TransactionDB = ...`).
pub struct TransactionDB<T: ThreadMode = SingleThreaded> {
    core: TxnCore,
    default_lock_timeout: i64,
    _mode: PhantomData<fn() -> T>,
}

impl<T: ThreadMode> std::fmt::Debug for TransactionDB<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TransactionDB({})", self.core.db.path().display())
    }
}

impl<T: ThreadMode> TransactionDB<T> {
    fn wrap(db: DB, t: &TransactionDBOptions) -> Result<Self> {
        let tdb = Self {
            core: TxnCore::new(
                db,
                Kind::Pessimistic {
                    locks: LockManager::new(t.num_stripes),
                    txn_lock_timeout: t.txn_lock_timeout,
                },
            ),
            default_lock_timeout: t.default_lock_timeout,
            _mode: PhantomData,
        };
        super::prepared::adopt_recovered(&tdb.core)?;
        Ok(tdb)
    }
    /// Open (as RocksDB's `TransactionDB::Open`, with `allow_2pc` set): the prepared
    /// transactions found in the WAL are recovered, their keys locked, for
    /// [`prepared_transactions`](Self::prepared_transactions).
    pub fn open(opts: &Options, txn_db_opts: &TransactionDBOptions, path: impl AsRef<Path>) -> Result<Self> {
        txn_db_opts.validate()?;
        DB::open(&two_pc_options(opts), path).and_then(|db| Self::wrap(db, txn_db_opts))
    }
    /// Opens the DB at `path` with default options and `create_if_missing` set (creating it if absent).
    pub fn open_default(path: impl AsRef<Path>) -> Result<Self> {
        let mut o = Options::default();
        o.create_if_missing(true);
        Self::open(&o, &TransactionDBOptions::default(), path)
    }
    /// [`open`](Self::open) with the column families `names` (each with `opts`); every existing column
    /// family must be named, as for [`DB::open_cf`]. InvalidArgument if `txn_db_opts` has a negative
    /// timeout other than -1 or zero stripes.
    pub fn open_cf<N: AsRef<str>, I: IntoIterator<Item = N>>(
        opts: &Options,
        txn_db_opts: &TransactionDBOptions,
        path: impl AsRef<Path>,
        names: I,
    ) -> Result<Self> {
        txn_db_opts.validate()?;
        DB::open_cf(&two_pc_options(opts), path, names).and_then(|db| Self::wrap(db, txn_db_opts))
    }
    /// [`open`](Self::open) with one descriptor per column family; each family's options get the same
    /// transaction adjustments as `opts`. InvalidArgument as for [`open_cf`](Self::open_cf).
    pub fn open_cf_descriptors<I: IntoIterator<Item = ColumnFamilyDescriptor>>(
        opts: &Options,
        txn_db_opts: &TransactionDBOptions,
        path: impl AsRef<Path>,
        cfs: I,
    ) -> Result<Self> {
        txn_db_opts.validate()?;
        let cfs: Vec<ColumnFamilyDescriptor> = cfs
            .into_iter()
            .map(|mut d| {
                d.options = txn_options(&d.options);
                d
            })
            .collect();
        DB::open_cf_descriptors(&two_pc_options(opts), path, cfs).and_then(|db| Self::wrap(db, txn_db_opts))
    }

    /// The prepared transactions recovered from the WAL at open (two-phase commit), their keys
    /// locked: commit or roll back each. Each is handed out once (a second call returns the
    /// ones not handed out yet, so none); one dropped without either stays prepared in the WAL
    /// and is recovered again at the next open, as in RocksDB.
    pub fn prepared_transactions(&self) -> Vec<Transaction<'_, Self>> {
        super::prepared::take_recovered(&self.core)
    }

    /// Begins a transaction with default write and transaction options. The transaction borrows the
    /// DB; its locks are released at commit, rollback or drop (see [`Transaction`]).
    pub fn transaction(&self) -> Transaction<'_, Self> {
        self.transaction_opt(&WriteOptions::default(), &TransactionOptions::default())
    }
    /// Begins a transaction writing with `wo` and configured by `o`; an invalid `o` (a negative lock
    /// timeout other than -1) is reported as InvalidArgument by each call on the transaction.
    pub fn transaction_opt(&self, wo: &WriteOptions, o: &TransactionOptions) -> Transaction<'_, Self> {
        Transaction::begin(&self.core, wo, o.0.clone())
    }

    /// A one-write transaction: lock the key (waiting at most `default_lock_timeout`), write.
    fn locked_write(&self, wo: &WriteOptions, f: impl FnOnce(&Transaction<'_, Self>) -> Result<()>) -> Result<()> {
        let mut o = TransactionOptions::default();
        o.set_lock_timeout(self.default_lock_timeout);
        let t = self.transaction_opt(wo, &o);
        f(&t)?;
        t.commit()
    }
    /// Writes `key` → `value`, locking `key` first (waiting at most `default_lock_timeout`; TimedOut
    /// if it is held longer by a transaction). Same as a one-put transaction committed at once.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }
    /// [`put`](Self::put) with write options `wo`.
    pub fn put_opt(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, wo: &WriteOptions) -> Result<()> {
        self.locked_write(wo, |t| t.put(key, value))
    }
    /// [`put`](Self::put) into column family `cf` (default write options).
    pub fn put_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.locked_write(&WriteOptions::default(), |t| t.put_cf(cf, key, value))
    }
    /// Deletes `key` under its lock, as [`put`](Self::put) writes (TimedOut if the lock stays held).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.locked_write(&WriteOptions::default(), |t| t.delete(key))
    }
    /// [`delete`](Self::delete) in column family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.locked_write(&WriteOptions::default(), |t| t.delete_cf(cf, key))
    }
    /// Merges `value` into `key` under its lock, as [`put`](Self::put) writes; the column family
    /// needs a merge operator.
    pub fn merge(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.locked_write(&WriteOptions::default(), |t| t.merge(key, value))
    }
    /// [`merge`](Self::merge) in column family `cf`.
    pub fn merge_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.locked_write(&WriteOptions::default(), |t| t.merge_cf(cf, key, value))
    }

    /// Write a batch atomically, locking each of its keys first (waiting at most
    /// `default_lock_timeout`).
    pub fn write<const TXN: bool>(&self, batch: crate::write_batch::WriteBatchWithTransaction<TXN>) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }
    /// [`write`](Self::write) with write options `wo`.
    pub fn write_opt<const TXN: bool>(
        &self,
        batch: crate::write_batch::WriteBatchWithTransaction<TXN>,
        wo: &WriteOptions,
    ) -> Result<()> {
        let mut o = TransactionOptions::default();
        o.set_lock_timeout(self.default_lock_timeout);
        self.transaction_opt(wo, &o).write_locked(batch.into_plain())
    }

    /// Reads take no locks.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.core.db.get(key)
    }
    /// [`get`](Self::get) with read options `ro`: see [`DB::get_opt`].
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        self.core.db.get_opt(key, ro)
    }
    /// [`get`](Self::get) in column family `cf`: `Ok(None)` if the key is absent.
    pub fn get_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.core.db.get_cf(cf, key)
    }
    /// [`get_cf`](Self::get_cf) with read options `ro`.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.core.db.get_cf_opt(cf, key, ro)
    }
    /// Reads each key without locks; one result per key, in order (see [`DB::multi_get`]).
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        self.core.db.multi_get(keys)
    }
    /// [`multi_get`](Self::multi_get) with read options `ro`.
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.core.db.multi_get_opt(keys, ro)
    }
    /// Reads each (family, key) pair without locks; one result per pair, in order (see
    /// [`DB::multi_get_cf`]).
    pub fn multi_get_cf<'a, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        self.core.db.multi_get_cf(keys)
    }
    /// [`multi_get_cf`](Self::multi_get_cf) with read options `ro`.
    pub fn multi_get_cf_opt<'a, C, K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        self.core.db.multi_get_cf_opt(keys, ro)
    }
    /// A snapshot of the current state, tied to this DB (the `rocksdb` crate's
    /// `TransactionDB::snapshot`); it pins the sequence number until dropped. For
    /// `ReadOptions::set_snapshot`, use its [`as_snapshot`](SnapshotWithThreadMode::as_snapshot).
    pub fn snapshot(&self) -> SnapshotWithThreadMode<'_, Self> {
        SnapshotWithThreadMode::new(self)
    }
    /// An iterator over the default column family, without locks (see [`DB::iterator`]).
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DBIterator {
        self.core.db.iterator(mode)
    }
    /// [`iterator`](Self::iterator) with read options `ro`.
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, ro: ReadOptions) -> DBIterator {
        self.core.db.iterator_opt(mode, ro)
    }
    /// [`iterator`](Self::iterator) over column family `cf`.
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode<'_>) -> DBIterator {
        self.core.db.iterator_cf(cf, mode)
    }
    /// A raw iterator over the default column family, without locks (see [`DB::raw_iterator`]).
    pub fn raw_iterator(&self) -> DBRawIteratorWithThreadMode<'_, Self> {
        DBRawIteratorWithThreadMode::new(self.core.db.raw_iterator().into())
    }
    /// [`raw_iterator`](Self::raw_iterator) over column family `cf`.
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> DBRawIteratorWithThreadMode<'_, Self> {
        DBRawIteratorWithThreadMode::new(self.core.db.raw_iterator_cf(cf).into())
    }
    /// The handle of the column family `name`, or `None` if the DB has none of that name.
    pub fn cf_handle(&self, name: &str) -> Option<Arc<ColumnFamily>> {
        self.core.db.cf_handle(name)
    }
    /// Flushes the default column family's memtable to an SST file and waits (see [`DB::flush`]).
    pub fn flush(&self) -> Result<()> {
        self.core.db.flush()
    }
    /// [`flush`](Self::flush) with `opts` (see [`DB::flush_opt`]).
    pub fn flush_opt(&self, opts: &FlushOptions) -> Result<()> {
        self.core.db.flush_opt(opts)
    }
    /// Flushes column family `cf`'s memtable and waits (see [`DB::flush_cf`]).
    pub fn flush_cf(&self, cf: &impl AsColumnFamilyRef) -> Result<()> {
        self.core.db.flush_cf(cf)
    }
    /// [`flush_cf`](Self::flush_cf) with `opts` (see [`DB::flush_cf_opt`]).
    pub fn flush_cf_opt(&self, cf: &impl AsColumnFamilyRef, opts: &FlushOptions) -> Result<()> {
        self.core.db.flush_cf_opt(cf, opts)
    }
    /// Flushes several column families' memtables (see [`DB::flush_cfs_opt`]).
    pub fn flush_cfs_opt(&self, cfs: &[&impl AsColumnFamilyRef], opts: &FlushOptions) -> Result<()> {
        self.core.db.flush_cfs_opt(cfs, opts)
    }
    /// Writes the WAL's buffered records to its file, and syncs the file too if `sync` (see
    /// [`DB::flush_wal`]).
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        self.core.db.flush_wal(sync)
    }
    /// The sequence number of the last write made visible.
    pub fn latest_sequence_number(&self) -> u64 {
        self.core.db.latest_sequence_number()
    }
    /// The directory the DB lives in.
    pub fn path(&self) -> &Path {
        self.core.db.path()
    }
    /// The underlying DB, for reads and administration (its writes take no locks: use the
    /// transaction DB's).
    pub fn base_db(&self) -> &DB {
        &self.core.db
    }
}

impl TransactionDB<SingleThreaded> {
    /// Creates the column family `name` with `opts` (adjusted for transactions); errors as
    /// [`DB::create_cf`]. Takes `&mut self` in this mode, as in the `rocksdb` crate (so an
    /// unannotated `TransactionDB::open(..)` whose `create_cf` is called through `&self` is
    /// the multi-threaded mode, as there).
    pub fn create_cf(&mut self, name: impl AsRef<str>, opts: &Options) -> Result<()> {
        self.core.db.create_cf(name, &txn_options(opts))
    }
    /// Drops the column family `name`; errors as [`DB::drop_cf`].
    pub fn drop_cf(&mut self, name: impl AsRef<str>) -> Result<()> {
        self.core.db.drop_cf(name)
    }
}

impl TransactionDB<MultiThreaded> {
    /// Creates the column family `name` with `opts` (adjusted for transactions); errors as
    /// [`DB::create_cf`].
    pub fn create_cf(&self, name: impl AsRef<str>, opts: &Options) -> Result<()> {
        self.core.db.create_cf(name, &txn_options(opts))
    }
    /// Drops the column family `name`; errors as [`DB::drop_cf`].
    pub fn drop_cf(&self, name: impl AsRef<str>) -> Result<()> {
        self.core.db.drop_cf(name)
    }
    /// The value of DB property `name` of the default column family, `Ok(None)` if it is
    /// unknown (see [`DB::property_value`]).
    pub fn property_value(&self, name: impl crate::properties::CStrLike) -> Result<Option<String>> {
        self.core.db.property_value(name)
    }
    /// A numeric DB property of the default column family: `Ok(None)` if it is unknown or not
    /// a number (see [`DB::property_int_value`]).
    pub fn property_int_value(&self, name: impl crate::properties::CStrLike) -> Result<Option<u64>> {
        self.core.db.property_int_value(name)
    }
}

crate::api::access::db_access_through!([T: ThreadMode] TransactionDB<T>, |d| d.base_db());
