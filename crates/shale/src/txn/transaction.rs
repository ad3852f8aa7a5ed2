//! The transaction both DBs hand out. Writes go to a [`WriteBatchWithIndex`]; reads see them
//! on top of the DB. Every key read for update or written is *tracked* with the sequence
//! number from which it must not have changed (the snapshot's, or the DB's last when the key
//! was first tracked). The optimistic DB checks the tracked keys at commit; the pessimistic DB
//! locks each one when it is tracked (and, with a snapshot, checks it then).

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::checks::{check_key, last_seq};
use super::locks::LockRequest;
use super::wbwi::{Index, TxnIterator, TxnRawIterator, WriteBatchWithIndex};
use crate::api::access::{sealed, DBAccess, SnapshotWithThreadMode};
use crate::api::db::DB;
use crate::engine::column_family::AsColumnFamilyRef;
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::families::cfd_of;
use crate::engine::iter::IteratorMode;
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::key::SequenceNumber;
use crate::options::{ReadOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::table::pinnable::{DBPinnableSlice, ValueOut};

/// The engine a transaction belongs to.
pub(crate) enum Kind {
    Optimistic {
        /// Commit-time validation locks these buckets (by key hash, in order), as RocksDB's
        /// `occ_validation_policy = kValidateParallel`.
        buckets: Vec<Mutex<()>>,
    },
    Pessimistic {
        locks: super::locks::LockManager,
        /// Lock timeout in ms for transactions that do not set one (-1: wait forever).
        txn_lock_timeout: i64,
    },
}

/// What a transaction DB shares with its transactions.
pub(crate) struct TxnCore {
    pub db: DB,
    pub kind: Kind,
    next_id: std::sync::atomic::AtomicU64,
    /// Names of the live named transactions (two-phase commit: names are unique).
    pub(super) names: Mutex<std::collections::HashSet<Vec<u8>>>,
    /// Prepared transactions recovered at open, their keys locked, until
    /// `TransactionDB::prepared_transactions` hands them out.
    pub(super) recovered: Mutex<Vec<Recovered>>,
}

impl TxnCore {
    pub(crate) fn new(db: DB, kind: Kind) -> TxnCore {
        TxnCore {
            db,
            kind,
            next_id: std::sync::atomic::AtomicU64::new(1),
            names: Mutex::new(Default::default()),
            recovered: Mutex::new(Vec::new()),
        }
    }
    pub(super) fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
    pub(crate) fn inner(&self) -> &Arc<DbInner> {
        &self.db.inner
    }
}

/// Settings of one transaction (from the optimistic or pessimistic options).
#[derive(Clone)]
pub(crate) struct TxnSettings {
    pub set_snapshot: bool,
    /// Lock timeout in ms (-1: the DB's).
    pub lock_timeout: i64,
    /// Expiration in ms (<= 0: none).
    pub expiration: i64,
    pub deadlock_detect: bool,
    pub deadlock_detect_depth: i64,
    /// 0: unlimited.
    pub max_write_batch_size: usize,
    /// False: `commit` requires `prepare` first (RocksDB's `TransactionOptions::skip_prepare`).
    pub skip_prepare: bool,
}

impl Default for TxnSettings {
    fn default() -> Self {
        TxnSettings {
            set_snapshot: false,
            lock_timeout: -1,
            expiration: -1,
            deadlock_detect: false,
            deadlock_detect_depth: 50,
            max_write_batch_size: 0,
            skip_prepare: true,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    Started,
    /// Two-phase commit: the prepared section is in the WAL; only commit or rollback remain.
    Prepared,
    Committed,
    RolledBack,
}

#[derive(Clone, Copy)]
pub(super) struct Tracked {
    /// The key must not have been written after this sequence.
    pub(super) seq: SequenceNumber,
    pub(super) exclusive: bool,
}

pub(super) type TrackKey = (u32, Vec<u8>);

pub(super) struct SavePoint {
    len: usize,
    count: u32,
    index: Index,
    tracked: HashMap<TrackKey, Tracked>,
    snapshot: Option<Snapshot>,
}

pub(super) struct TxnState {
    pub(super) wbwi: WriteBatchWithIndex,
    pub(super) tracked: HashMap<TrackKey, Tracked>,
    snapshot: Option<Snapshot>,
    pub(super) savepoints: Vec<SavePoint>,
    pub(super) state: State,
    /// The options were invalid: every call fails with this.
    pub(super) bad: Option<Error>,
    /// Two-phase commit: the name (`set_name`), and the WAL holding the prepared section.
    pub(super) name: Option<Vec<u8>>,
    pub(super) prep_log: u64,
}

/// A transaction of an [`OptimisticTransactionDB`](crate::OptimisticTransactionDB) or a
/// [`TransactionDB`](crate::TransactionDB) (`D`), as the `rocksdb` crate's `Transaction`.
/// Its methods take `&self`; it is `Send + Sync`. Dropping it without commit rolls it back.
pub struct Transaction<'db, D> {
    pub(super) core: &'db TxnCore,
    pub(super) id: u64,
    pub(super) wo: WriteOptions,
    settings: TxnSettings,
    pub(super) st: Mutex<TxnState>,
    _db: PhantomData<&'db D>,
}

impl<D> std::fmt::Debug for Transaction<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transaction({})", self.id)
    }
}

impl<'db, D> Transaction<'db, D> {
    pub(crate) fn begin(core: &'db TxnCore, wo: &WriteOptions, settings: TxnSettings) -> Transaction<'db, D> {
        let id = core.new_id();
        let bad = if settings.lock_timeout < -1 {
            Some(Error::invalid(format!(
                "lock_timeout must be -1 (the DB's) or at least 0 ms, got {}",
                settings.lock_timeout
            )))
        } else {
            None
        };
        if let Kind::Pessimistic { locks, .. } = &core.kind {
            let expires = (settings.expiration > 0)
                .then(|| std::time::Instant::now() + Duration::from_millis(settings.expiration as u64));
            locks.begin(id, expires);
        }
        let snapshot = settings.set_snapshot.then(|| core.db.snapshot());
        Transaction {
            core,
            id,
            wo: wo.clone(),
            settings,
            st: Mutex::new(TxnState {
                wbwi: WriteBatchWithIndex::default(),
                tracked: HashMap::new(),
                snapshot,
                savepoints: Vec::new(),
                state: State::Started,
                bad,
                name: None,
                prep_log: 0,
            }),
            _db: PhantomData,
        }
    }

    /// The transaction's id (unique in its DB).
    pub fn get_id(&self) -> u64 {
        self.id
    }

    /// A prepared transaction recovered from the WAL (`prepared.rs`): its keys are locked
    /// already under `id`.
    pub(super) fn adopt(
        core: &'db TxnCore,
        id: u64,
        wbwi: WriteBatchWithIndex,
        tracked: HashMap<TrackKey, Tracked>,
        name: Vec<u8>,
        prep_log: u64,
    ) -> Self {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        Transaction {
            core,
            id,
            wo,
            settings: TxnSettings::default(),
            st: Mutex::new(TxnState {
                wbwi,
                tracked,
                snapshot: None,
                savepoints: Vec::new(),
                state: State::Prepared,
                bad: None,
                name: Some(name),
                prep_log,
            }),
            _db: PhantomData,
        }
    }

    pub(super) fn db(&self) -> &Arc<DbInner> {
        self.core.inner()
    }

    /// Fails unless the transaction can still be used.
    fn usable(&self, st: &TxnState) -> Result<()> {
        if let Some(e) = &st.bad {
            return Err(e.clone());
        }
        match st.state {
            State::Started => {}
            State::Prepared => {
                return Err(Error::invalid(
                    "the transaction is prepared: only commit or rollback may follow",
                ))
            }
            State::Committed => return Err(Error::invalid("the transaction was already committed")),
            State::RolledBack => return Err(Error::invalid("the transaction was already rolled back")),
        }
        if let Kind::Pessimistic { locks, .. } = &self.core.kind {
            if locks.expired(self.id) {
                return Err(Error::Expired("the transaction passed its expiration time".into()));
            }
        }
        Ok(())
    }

    /// A snapshot that reads through this transaction (the `rocksdb` crate's
    /// `Transaction::snapshot`): at the transaction's snapshot (taken by `set_snapshot`, or at
    /// the start with `TransactionOptions::set_snapshot`), or, if it has none, at the latest
    /// state; either way with the transaction's own writes on top. For
    /// `ReadOptions::set_snapshot`, use its [`as_snapshot`](SnapshotWithThreadMode::as_snapshot).
    pub fn snapshot(&self) -> SnapshotWithThreadMode<'_, Self> {
        SnapshotWithThreadMode::new(self)
    }

    /// Take a snapshot now: keys tracked from now on must not change after it
    /// (RocksDB's `SetSnapshot`).
    pub fn set_snapshot(&self) -> Result<()> {
        let mut st = self.st.lock();
        self.usable(&st)?;
        st.snapshot = Some(self.core.db.snapshot());
        Ok(())
    }

    /// Track `key` (lock it, for the pessimistic DB) for a write (`exclusive`) or a read for
    /// update.
    fn track(&self, st: &mut TxnState, cfd: &Arc<ColumnFamilyData>, key: &[u8], exclusive: bool) -> Result<()> {
        if cfd.is_dropped() {
            return Err(Error::invalid(format!("column family {} was dropped", cfd.name)));
        }
        let tk: TrackKey = (cfd.id, key.to_vec());
        let prev = st.tracked.get(&tk).copied();
        if prev.is_some_and(|p| p.exclusive || !exclusive) {
            return Ok(());
        }
        let seq = match (&st.snapshot, prev) {
            (_, Some(p)) => p.seq,
            (Some(s), None) => s.sequence_number(),
            (None, None) => last_seq(self.db()),
        };
        if let Kind::Pessimistic {
            locks,
            txn_lock_timeout,
        } = &self.core.kind
        {
            let ms = match self.settings.lock_timeout {
                -1 => *txn_lock_timeout,
                t => t,
            };
            let req = LockRequest {
                txn: self.id,
                exclusive,
                timeout: (ms >= 0).then(|| Duration::from_millis(ms as u64)),
                deadlock_depth: self
                    .settings
                    .deadlock_detect
                    .then(|| usize::try_from(self.settings.deadlock_detect_depth).unwrap_or(0).max(1)),
            };
            locks.lock(cfd.id, key, &req)?;
            // With a snapshot, the key must not have changed since it (RocksDB's
            // `ValidateSnapshot`); checked once the lock keeps others from writing it. The
            // check reads through the user comparator: if it fails or panics, the key is not
            // tracked, so the lock is released here (nothing else would release it).
            if prev.is_none() {
                if let Some(s) = &st.snapshot {
                    let seq = s.sequence_number();
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        check_key(self.db(), cfd, key, seq, true)
                    })) {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            locks.unlock(self.id, [&tk]);
                            return Err(e);
                        }
                        Err(p) => {
                            locks.unlock(self.id, [&tk]);
                            std::panic::resume_unwind(p);
                        }
                    }
                }
            }
        }
        st.tracked.insert(tk, Tracked { seq, exclusive });
        Ok(())
    }

    fn write_op(
        &self,
        cf: &Arc<ColumnFamilyData>,
        key: &[u8],
        op: impl FnOnce(&mut WriteBatchWithIndex),
    ) -> Result<()> {
        // No `_with_ts` calls here: a family with user-defined timestamps refuses the write.
        crate::engine::checks::check_ts_use(cf, false)?;
        let mut st = self.st.lock();
        self.usable(&st)?;
        if self.settings.max_write_batch_size > 0 && st.wbwi.size_in_bytes() >= self.settings.max_write_batch_size {
            return Err(Error::invalid(format!(
                "the transaction's write batch reached max_write_batch_size ({} bytes)",
                self.settings.max_write_batch_size
            )));
        }
        self.track(&mut st, cf, key, true)?;
        op(&mut st.wbwi);
        Ok(())
    }

    /// Writes `key` → `value` in the default family, visible to this transaction's reads and to
    /// others once committed. The key is tracked first: a pessimistic transaction locks it
    /// (TimedOut after the lock timeout, Busy on a deadlock or, with a snapshot, if the key changed
    /// since it, TryAgain if the memtable history cannot tell); an optimistic one checks it at commit.
    ///
    /// Errors, shared by every write call: InvalidArgument once the transaction is prepared,
    /// committed or rolled back, or its batch reached `max_write_batch_size`; Expired past the
    /// expiration; the options' InvalidArgument if they were invalid.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let cf = self.db().default_cf.clone();
        self.put_in(&cf, key.as_ref(), value.as_ref())
    }
    /// [`put`](Self::put) in column family `cf`.
    pub fn put_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_in(cfd_of(cf), key.as_ref(), value.as_ref())
    }
    fn put_in(&self, cf: &Arc<ColumnFamilyData>, k: &[u8], v: &[u8]) -> Result<()> {
        self.write_op(cf, k, |b| b.put_id(cf.id, k, v))
    }
    /// Writes `key` → a wide-column entity in the default family (tracked and locked as
    /// [`put`](Self::put); same errors, and InvalidArgument if two columns share a name). Reads
    /// through the transaction see the default column's value (`get_entity` through a
    /// transaction is not offered yet); once committed, `DB::get_entity` sees every column.
    pub fn put_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: impl AsRef<[u8]>, columns: &[(N, V)]) -> Result<()> {
        let cf = self.db().default_cf.clone();
        self.put_entity_in(&cf, key.as_ref(), columns)
    }
    /// [`put_entity`](Self::put_entity) in column family `cf`.
    pub fn put_entity_cf<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        self.put_entity_in(cfd_of(cf), key.as_ref(), columns)
    }
    fn put_entity_in<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        cf: &Arc<ColumnFamilyData>,
        k: &[u8],
        columns: &[(N, V)],
    ) -> Result<()> {
        let e = super::wbwi::encode_columns(columns)?;
        self.write_op(cf, k, |b| b.put_entity_id(cf.id, k, &e))
    }
    /// Deletes `key` in the default family (tracked and locked as [`put`](Self::put); same errors).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let cf = self.db().default_cf.clone();
        self.delete_in(&cf, key.as_ref())
    }
    /// [`delete`](Self::delete) in column family `cf`.
    pub fn delete_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_in(cfd_of(cf), key.as_ref())
    }
    fn delete_in(&self, cf: &Arc<ColumnFamilyData>, k: &[u8]) -> Result<()> {
        self.write_op(cf, k, |b| b.delete_id(cf.id, k))
    }
    /// Adds a merge operand for `key` (tracked and locked as [`put`](Self::put)); InvalidArgument
    /// without a merge operator, NotSupported with cuckoo tables; other errors as `put`.
    pub fn merge(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let cf = self.db().default_cf.clone();
        self.merge_in(&cf, key.as_ref(), value.as_ref())
    }
    /// [`merge`](Self::merge) in column family `cf`.
    pub fn merge_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.merge_in(cfd_of(cf), key.as_ref(), value.as_ref())
    }
    fn merge_in(&self, cf: &Arc<ColumnFamilyData>, k: &[u8], v: &[u8]) -> Result<()> {
        crate::engine::checks::validate_merge(cf)?;
        self.write_op(cf, k, |b| b.merge_id(cf.id, k, v))
    }

    /// The value of `key`: the transaction's own writes on top of the DB (at `ReadOptions`'
    /// snapshot if it has one; the transaction's snapshot is not used unless passed there, as
    /// in RocksDB).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, &ReadOptions::default())
    }
    /// [`get`](Self::get) with read options `ro`; `Ok(None)` if the key is absent or deleted.
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let cf = self.db().default_cf.clone();
        self.get_in(&cf, key.as_ref(), ro)
    }
    /// [`get`](Self::get) in column family `cf`.
    pub fn get_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_in(cfd_of(cf), key.as_ref(), &ReadOptions::default())
    }
    /// [`get_cf`](Self::get_cf) with read options `ro`.
    pub fn get_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.get_in(cfd_of(cf), key.as_ref(), ro)
    }
    fn get_in(&self, cf: &Arc<ColumnFamilyData>, key: &[u8], ro: &ReadOptions) -> Result<Option<Vec<u8>>> {
        let st = self.st.lock();
        self.usable(&st)?;
        st.wbwi.value_with_db(self.db(), cf, key, ro)
    }
    /// The columns of `key` (RocksDB's `Transaction::GetEntity`): the transaction's own writes
    /// on top of the DB, as [`get`](Self::get) reads; a plain value is one default column,
    /// merges apply to the default column and keep the others. Corruption if a stored entity
    /// does not decode.
    pub fn get_entity(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        let cf = self.db().default_cf.clone();
        self.get_entity_in(&cf, key.as_ref(), &ReadOptions::default())
    }
    /// [`get_entity`](Self::get_entity) in column family `cf` with read options `ro`.
    pub fn get_entity_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        self.get_entity_in(cfd_of(cf), key.as_ref(), ro)
    }
    fn get_entity_in(
        &self,
        cf: &Arc<ColumnFamilyData>,
        key: &[u8],
        ro: &ReadOptions,
    ) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        let st = self.st.lock();
        self.usable(&st)?;
        let e = st.wbwi.entity_with_db((self.db(), cf), key, ro)?;
        e.map(|e| crate::wide_columns::to_columns(&e)).transpose()
    }
    /// [`get`](Self::get) returning the value as a [`DBPinnableSlice`] (a copy: values read
    /// through a transaction may come from its own batch).
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        self.get_pinned_opt(key, &ReadOptions::default())
    }
    /// [`get_pinned`](Self::get_pinned) with read options `ro`.
    pub fn get_pinned_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> Result<Option<DBPinnableSlice>> {
        Ok(self.get_opt(key, ro)?.map(DBPinnableSlice::from_vec))
    }
    /// [`get_pinned`](Self::get_pinned) in column family `cf`.
    pub fn get_pinned_cf(&self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        self.get_pinned_cf_opt(cf, key, &ReadOptions::default())
    }
    /// [`get_pinned_cf`](Self::get_pinned_cf) with read options `ro`.
    pub fn get_pinned_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice>> {
        Ok(self.get_cf_opt(cf, key, ro)?.map(DBPinnableSlice::from_vec))
    }
    /// Several keys, each as [`get`](Self::get).
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        keys.into_iter().map(|k| self.get(k)).collect()
    }
    /// [`multi_get`](Self::multi_get) with read options `ro`.
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        ro: &ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        keys.into_iter().map(|k| self.get_opt(k, ro)).collect()
    }
    /// Reads each (family, key) pair as [`get_cf`](Self::get_cf) does (the transaction's own
    /// writes first, then the DB; no locks): one result per pair, in order.
    pub fn multi_get_cf<'a, C, K, I>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        self.multi_get_cf_opt(keys, &ReadOptions::default())
    }
    /// [`multi_get_cf`](Self::multi_get_cf) with read options `ro`.
    pub fn multi_get_cf_opt<'a, C, K, I>(&self, keys: I, ro: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        keys.into_iter().map(|(cf, k)| self.get_cf_opt(cf, k, ro)).collect()
    }

    /// Read `key` and track it: the pessimistic DB locks it (`exclusive` or shared); the
    /// optimistic DB fails the commit if another write changes it first.
    pub fn get_for_update(&self, key: impl AsRef<[u8]>, exclusive: bool) -> Result<Option<Vec<u8>>> {
        self.get_for_update_opt(key, exclusive, &ReadOptions::default())
    }
    /// [`get_for_update`](Self::get_for_update) with read options `ro`.
    pub fn get_for_update_opt(
        &self,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let cf = self.db().default_cf.clone();
        self.get_for_update_in(&cf, key.as_ref(), exclusive, ro)
    }
    /// [`get_for_update`](Self::get_for_update) in column family `cf`.
    pub fn get_for_update_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_in(cfd_of(cf), key.as_ref(), exclusive, &ReadOptions::default())
    }
    /// [`get_for_update_cf`](Self::get_for_update_cf) with read options `ro`.
    pub fn get_for_update_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        exclusive: bool,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.get_for_update_in(cfd_of(cf), key.as_ref(), exclusive, ro)
    }
    fn get_for_update_in(
        &self,
        cf: &Arc<ColumnFamilyData>,
        key: &[u8],
        exclusive: bool,
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let mut st = self.st.lock();
        self.usable(&st)?;
        self.track(&mut st, cf, key, exclusive)?;
        st.wbwi.value_with_db(self.db(), cf, key, ro)
    }
    /// [`get_for_update`](Self::get_for_update) of several keys, in order (each result as its
    /// key's; a lock that cannot be taken fails that key only).
    pub fn multi_get_for_update<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        exclusive: bool,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        keys.into_iter().map(|k| self.get_for_update(k, exclusive)).collect()
    }
    /// [`multi_get_for_update`](Self::multi_get_for_update) over (family, key) pairs.
    pub fn multi_get_for_update_cf<'a, C, K, I>(&self, keys: I, exclusive: bool) -> Vec<Result<Option<Vec<u8>>>>
    where
        C: AsColumnFamilyRef + 'a,
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'a C, K)>,
    {
        keys.into_iter()
            .map(|(cf, k)| self.get_for_update_cf(cf, k, exclusive))
            .collect()
    }

    /// A cursor over the DB merged with the transaction's writes (default family).
    pub fn raw_iterator(&self) -> TxnRawIterator {
        self.raw_iterator_opt(ReadOptions::default())
    }
    /// [`raw_iterator`](Self::raw_iterator) with read options `ro`. The iterator holds a copy of the
    /// writes made so far: later writes of the transaction are not seen by it.
    pub fn raw_iterator_opt(&self, ro: ReadOptions) -> TxnRawIterator {
        let base = self.core.db.raw_iterator_opt(ro).into();
        TxnRawIterator::new(base, self.st.lock().wbwi.delta(0))
    }
    /// [`raw_iterator`](Self::raw_iterator) over column family `cf`.
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> TxnRawIterator {
        self.raw_iterator_cf_opt(cf, ReadOptions::default())
    }
    /// [`raw_iterator_cf`](Self::raw_iterator_cf) with read options `ro`.
    pub fn raw_iterator_cf_opt(&self, cf: &impl AsColumnFamilyRef, ro: ReadOptions) -> TxnRawIterator {
        let base = self.core.db.raw_iterator_cf_opt(cf, ro).into();
        TxnRawIterator::new(base, self.st.lock().wbwi.delta(cfd_of(cf).id))
    }
    /// A Rust iterator over the DB merged with the transaction's writes, starting at `mode`.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> TxnIterator {
        TxnIterator::new(self.raw_iterator(), mode)
    }
    /// [`iterator`](Self::iterator) with read options `ro`.
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, ro: ReadOptions) -> TxnIterator {
        TxnIterator::new(self.raw_iterator_opt(ro), mode)
    }
    /// [`iterator`](Self::iterator) over column family `cf`.
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode<'_>) -> TxnIterator {
        TxnIterator::new(self.raw_iterator_cf(cf), mode)
    }
    /// [`iterator_cf`](Self::iterator_cf) with read options `ro`.
    pub fn iterator_cf_opt(&self, cf: &impl AsColumnFamilyRef, ro: ReadOptions, mode: IteratorMode<'_>) -> TxnIterator {
        TxnIterator::new(self.raw_iterator_cf_opt(cf, ro), mode)
    }

    /// Records written so far.
    pub fn get_writebatch(&self) -> WriteBatchWithIndex {
        self.st.lock().wbwi.clone()
    }

    /// Mark a point [`rollback_to_savepoint`](Self::rollback_to_savepoint) returns to.
    pub fn set_savepoint(&self) {
        let mut st = self.st.lock();
        if self.usable(&st).is_err() {
            return;
        }
        let (len, count, index) = st.wbwi.mark();
        let sp = SavePoint {
            len,
            count,
            index,
            tracked: st.tracked.clone(),
            snapshot: st.snapshot.clone(),
        };
        st.savepoints.push(sp);
    }
    /// Undo every write since the last savepoint (and forget the savepoint); keys first
    /// tracked since then are untracked (and unlocked). NotFound if there is none.
    pub fn rollback_to_savepoint(&self) -> Result<()> {
        let mut st = self.st.lock();
        self.usable(&st)?;
        let Some(sp) = st.savepoints.pop() else {
            return Err(Error::NotFound("no savepoint to roll back to".into()));
        };
        st.wbwi.restore(sp.len, sp.count, sp.index)?;
        let newer: Vec<TrackKey> = st
            .tracked
            .keys()
            .filter(|k| !sp.tracked.contains_key(*k))
            .cloned()
            .collect();
        if let Kind::Pessimistic { locks, .. } = &self.core.kind {
            locks.unlock(self.id, newer.iter());
        }
        st.tracked = sp.tracked;
        st.snapshot = sp.snapshot;
        Ok(())
    }

    /// Apply the transaction's writes atomically. The optimistic DB first checks that no key
    /// it tracked changed (Busy if one did; TryAgain if the memtables cannot tell); the
    /// pessimistic DB holds the locks already (Expired if it ran past its expiration).
    pub fn commit(&self) -> Result<()> {
        let mut st = self.st.lock();
        if st.state == State::Prepared {
            return self.commit_prepared(&mut st);
        }
        self.usable(&st)?;
        if !self.settings.skip_prepare {
            // RocksDB's TxnNotPrepared: nothing changes, `prepare` may follow.
            return Err(Error::invalid(
                "commit: the transaction was not prepared (its options set skip_prepare to false)",
            ));
        }
        let r = match &self.core.kind {
            Kind::Optimistic { buckets } => self.commit_optimistic(&st, buckets),
            Kind::Pessimistic { locks, .. } => match locks.start_commit(self.id) {
                Ok(()) => self.write_batch(&st),
                Err(e) => Err(e),
            },
        };
        // As RocksDB: a failed optimistic commit leaves the transaction unusable (retry with a
        // new one); a failed pessimistic write too (its locks are released).
        st.state = if r.is_ok() { State::Committed } else { State::RolledBack };
        self.release(&mut st);
        r
    }

    fn write_batch(&self, st: &TxnState) -> Result<()> {
        if st.wbwi.is_empty() {
            return Ok(());
        }
        self.core.db.write_opt(st.wbwi.batch().clone(), &self.wo)
    }

    fn commit_optimistic(&self, st: &TxnState, buckets: &[Mutex<()>]) -> Result<()> {
        let n = buckets.len() as u64;
        let mut idx: Vec<usize> = st
            .tracked
            .keys()
            .map(|k| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                k.hash(&mut h);
                (h.finish() % n) as usize
            })
            .collect();
        idx.sort_unstable();
        idx.dedup();
        let _guards: Vec<_> = idx.iter().map(|i| buckets[*i].lock()).collect();
        let cfs: HashMap<u32, Arc<ColumnFamilyData>> = self
            .db()
            .cfs
            .read()
            .by_id
            .iter()
            .map(|(id, c)| (*id, c.clone()))
            .collect();
        for ((cf, key), t) in &st.tracked {
            let Some(cfd) = cfs.get(cf) else {
                return Err(Error::invalid(format!("column family {cf} was dropped")));
            };
            check_key(self.db(), cfd, key, t.seq, false)?;
        }
        self.write_batch(st)
    }

    pub(super) fn release(&self, st: &mut TxnState) {
        if let Some(n) = &st.name {
            self.core.names.lock().remove(n);
        }
        if let Kind::Pessimistic { locks, .. } = &self.core.kind {
            locks.unlock(self.id, st.tracked.keys());
            locks.end(self.id);
        }
        st.tracked.clear();
        st.savepoints.clear();
        st.wbwi.clear();
        st.snapshot = None;
    }

    /// Lock every key `batch` writes, write it as it is, and release the locks (the
    /// pessimistic DB's `write`, RocksDB's `TransactionDB::Write`). Range deletions cannot be
    /// locked key by key: NotSupported, as in RocksDB.
    pub(crate) fn write_locked(&self, batch: crate::write_batch::WriteBatch) -> Result<()> {
        use crate::write_batch::BatchRecord as R;
        let mut st = self.st.lock();
        self.usable(&st)?;
        let cfs = self.db().cfs.read().by_id.clone();
        let mut r = Ok(());
        for rec in batch.records() {
            let (cf, key) = match rec {
                Err(e) => {
                    r = Err(e);
                    break;
                }
                Ok(
                    R::Put { cf, key, .. }
                    | R::Delete { cf, key }
                    | R::SingleDelete { cf, key }
                    | R::Merge { cf, key, .. }
                    | R::WideColumnEntity { cf, key, .. },
                ) => (cf, key),
                Ok(R::DeleteRange { .. }) => {
                    r = Err(Error::NotSupported(
                        "a range deletion in a write to a TransactionDB".into(),
                    ));
                    break;
                }
                Ok(_) => continue,
            };
            let Some(cfd) = cfs.get(&cf) else {
                r = Err(Error::invalid(format!("column family {cf} does not exist")));
                break;
            };
            if let Err(e) = self.track(&mut st, cfd, key, true) {
                r = Err(e);
                break;
            }
        }
        if r.is_ok() {
            r = self.core.db.write_opt(batch, &self.wo);
        }
        st.state = if r.is_ok() { State::Committed } else { State::RolledBack };
        self.release(&mut st);
        r
    }

    /// Drop every write, lock, tracked key and savepoint (RocksDB's `Rollback`). As in
    /// RocksDB, a transaction rolled back before `prepare` stays usable: it keeps its name and
    /// snapshot, and what it writes next is committed by a later `commit`. A prepared
    /// transaction is rolled back for good (a rollback marker is logged), and so is an expired
    /// one; InvalidArgument after `commit`.
    pub fn rollback(&self) -> Result<()> {
        let mut st = self.st.lock();
        if st.state == State::Prepared {
            return self.rollback_prepared(&mut st);
        }
        match self.usable(&st) {
            Ok(()) => {
                if let Kind::Pessimistic { locks, .. } = &self.core.kind {
                    locks.unlock(self.id, st.tracked.keys());
                }
                st.tracked.clear();
                st.savepoints.clear();
                st.wbwi.clear();
                return Ok(());
            }
            Err(Error::Expired(_)) => {}
            Err(e) => return Err(e),
        }
        st.state = State::RolledBack;
        self.release(&mut st);
        Ok(())
    }
}

impl<D> sealed::Access for Transaction<'_, D> {
    fn access_snapshot(&self) -> Option<Snapshot> {
        self.st.lock().snapshot.clone()
    }
}

impl<D> DBAccess for Transaction<'_, D> {
    fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<Vec<u8>>> {
        Transaction::get_opt(self, key, readopts)
    }
    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        Transaction::get_cf_opt(self, cf, key, readopts)
    }
    fn get_pinned_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<DBPinnableSlice>> {
        Transaction::get_pinned_opt(self, key, readopts)
    }
    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice>> {
        Transaction::get_pinned_cf_opt(self, cf, key, readopts)
    }
    fn multi_get_opt<K, I>(&self, keys: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>,
    {
        Transaction::multi_get_opt(self, keys, readopts)
    }
    fn multi_get_cf_opt<'b, K, I, W>(&self, keys_cf: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        Transaction::multi_get_cf_opt(self, keys_cf, readopts)
    }
}

impl<D> Drop for Transaction<'_, D> {
    fn drop(&mut self) {
        let mut st = self.st.lock();
        if st.state == State::Started {
            st.state = State::RolledBack;
            self.release(&mut st);
        } else if st.state == State::Prepared {
            // As RocksDB: the locks and the name are released, the prepared section stays in
            // the WAL (and its WAL is kept): the next open recovers it as prepared.
            self.release(&mut st);
        } else if let Kind::Pessimistic { locks, .. } = &self.core.kind {
            locks.end(self.id);
        }
    }
}

/// A prepared transaction recovered at open, its keys locked under `id`.
pub(crate) struct Recovered {
    pub(super) id: u64,
    pub(super) name: Vec<u8>,
    pub(super) wbwi: WriteBatchWithIndex,
    pub(super) tracked: HashMap<TrackKey, Tracked>,
    pub(super) log: u64,
}
