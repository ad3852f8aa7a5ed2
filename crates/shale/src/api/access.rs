//! The `rocksdb` crate's `DBAccess` (the reads every database and transaction type offers, which
//! its snapshots and iterators read through) and the types it ties to a database by a lifetime:
//! `SnapshotWithThreadMode<'a, D>` and `DBRawIteratorWithThreadMode<'a, D>`.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use crate::engine::column_family::AsColumnFamilyRef;
use crate::engine::iter::DBRawIterator;
use crate::error::Result;
use crate::options::ReadOptions;
use crate::snapshot::Snapshot;
use crate::table::pinnable::DBPinnableSlice;

/// What [`DBAccess`] needs of a type beyond its reads; only Shale's types implement it.
pub(crate) mod sealed {
    /// The snapshot a new [`SnapshotWithThreadMode`](super::SnapshotWithThreadMode) of this
    /// type reads at.
    pub trait Access {
        /// A database: a new snapshot of its current state. A transaction: its own snapshot
        /// (taken by `set_snapshot`), or `None` if it has none, and then reads see the latest
        /// state (as RocksDB's null snapshot does).
        fn access_snapshot(&self) -> Option<crate::snapshot::Snapshot>;
    }
}

/// The reads of a database or a transaction that a [`SnapshotWithThreadMode`] and generic
/// code read through (the `rocksdb` crate's `DBAccess`): implemented by [`DB`](crate::DB),
/// [`TransactionDB`](crate::TransactionDB), [`OptimisticTransactionDB`](crate::OptimisticTransactionDB)
/// and [`Transaction`](crate::Transaction) (whose reads see its own writes first). Each method
/// is the type's own method of that name; Shale's types are the only implementors.
pub trait DBAccess: sealed::Access {
    /// The value of `key` in the default column family, read with `readopts`.
    fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<Vec<u8>>>;

    /// The value of `key` in column family `cf`, read with `readopts`.
    fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>>;

    /// [`get_opt`](Self::get_opt) returning the value as a [`DBPinnableSlice`].
    fn get_pinned_opt<K: AsRef<[u8]>>(&self, key: K, readopts: &ReadOptions) -> Result<Option<DBPinnableSlice>>;

    /// [`get_cf_opt`](Self::get_cf_opt) returning the value as a [`DBPinnableSlice`].
    fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: &ReadOptions,
    ) -> Result<Option<DBPinnableSlice>>;

    /// Several keys of the default column family: one result per key, in order.
    fn multi_get_opt<K, I>(&self, keys: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = K>;

    /// Several (column family, key) pairs: one result per pair, in order.
    fn multi_get_cf_opt<'b, K, I, W>(&self, keys_cf: I, readopts: &ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b;
}

/// Implements [`DBAccess`] for a type whose reads are those of the DB `$db(self)` returns.
macro_rules! db_access_through {
    ([$($gen:tt)*] $ty:ty, |$s:ident| $db:expr) => {
        impl<$($gen)*> $crate::api::access::sealed::Access for $ty {
            fn access_snapshot(&self) -> Option<$crate::snapshot::Snapshot> {
                let $s = self;
                Some($db.snapshot())
            }
        }
        impl<$($gen)*> $crate::api::access::DBAccess for $ty {
            fn get_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                readopts: &$crate::options::ReadOptions,
            ) -> $crate::error::Result<Option<Vec<u8>>> {
                let $s = self;
                $db.get_opt(key, readopts)
            }
            fn get_cf_opt<K: AsRef<[u8]>>(
                &self,
                cf: &impl $crate::engine::column_family::AsColumnFamilyRef,
                key: K,
                readopts: &$crate::options::ReadOptions,
            ) -> $crate::error::Result<Option<Vec<u8>>> {
                let $s = self;
                $db.get_cf_opt(cf, key, readopts)
            }
            fn get_pinned_opt<K: AsRef<[u8]>>(
                &self,
                key: K,
                readopts: &$crate::options::ReadOptions,
            ) -> $crate::error::Result<Option<$crate::table::pinnable::DBPinnableSlice>> {
                let $s = self;
                $db.get_pinned_opt(key, readopts)
            }
            fn get_pinned_cf_opt<K: AsRef<[u8]>>(
                &self,
                cf: &impl $crate::engine::column_family::AsColumnFamilyRef,
                key: K,
                readopts: &$crate::options::ReadOptions,
            ) -> $crate::error::Result<Option<$crate::table::pinnable::DBPinnableSlice>> {
                let $s = self;
                $db.get_pinned_cf_opt(cf, key, readopts)
            }
            fn multi_get_opt<K, I>(
                &self,
                keys: I,
                readopts: &$crate::options::ReadOptions,
            ) -> Vec<$crate::error::Result<Option<Vec<u8>>>>
            where
                K: AsRef<[u8]>,
                I: IntoIterator<Item = K>,
            {
                let $s = self;
                $db.multi_get_opt(keys, readopts)
            }
            fn multi_get_cf_opt<'b, K, I, W>(
                &self,
                keys_cf: I,
                readopts: &$crate::options::ReadOptions,
            ) -> Vec<$crate::error::Result<Option<Vec<u8>>>>
            where
                K: AsRef<[u8]>,
                I: IntoIterator<Item = (&'b W, K)>,
                W: $crate::engine::column_family::AsColumnFamilyRef + 'b,
            {
                let $s = self;
                $db.multi_get_cf_opt(keys_cf, readopts)
            }
        }
    };
}
pub(crate) use db_access_through;

/// A snapshot tied to the database or transaction it was taken of (the `rocksdb` crate's
/// `SnapshotWithThreadMode`; it cannot outlive `D`). Its reads go through `D` at the snapshot:
/// a transaction's snapshot also sees the transaction's own writes. Released when dropped.
///
/// Of a [`Transaction`](crate::Transaction) without a snapshot of its own (no
/// `set_snapshot`), it reads the latest state, as RocksDB's null snapshot does.
pub struct SnapshotWithThreadMode<'a, D: DBAccess> {
    db: &'a D,
    snapshot: Option<Snapshot>,
}

impl<'a, D: DBAccess> SnapshotWithThreadMode<'a, D> {
    /// A snapshot of `db`: of a database, its current state; of a transaction, the
    /// transaction's snapshot (see the type's description).
    pub fn new(db: &'a D) -> Self {
        SnapshotWithThreadMode {
            snapshot: db.access_snapshot(),
            db,
        }
    }

    /// The Shale [`Snapshot`] this reads at, for [`ReadOptions::set_snapshot`]; `None` if it
    /// reads the latest state (a transaction without a snapshot).
    pub fn as_snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    fn at(&self, mut readopts: ReadOptions) -> ReadOptions {
        readopts.snapshot = self.snapshot.clone();
        readopts
    }

    /// The value of `key` in the default column family as of this snapshot.
    pub fn get<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, ReadOptions::default())
    }
    /// [`get`](Self::get) in column family `cf`.
    pub fn get_cf<K: AsRef<[u8]>>(&self, cf: &impl AsColumnFamilyRef, key: K) -> Result<Option<Vec<u8>>> {
        self.get_cf_opt(cf, key, ReadOptions::default())
    }
    /// [`get`](Self::get) with `readopts` (their snapshot is replaced by this one).
    pub fn get_opt<K: AsRef<[u8]>>(&self, key: K, readopts: ReadOptions) -> Result<Option<Vec<u8>>> {
        self.db.get_opt(key, &self.at(readopts))
    }
    /// [`get_cf`](Self::get_cf) with `readopts` (their snapshot is replaced by this one).
    pub fn get_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.db.get_cf_opt(cf, key, &self.at(readopts))
    }
    /// [`get`](Self::get) returning a [`DBPinnableSlice`].
    pub fn get_pinned<K: AsRef<[u8]>>(&self, key: K) -> Result<Option<DBPinnableSlice>> {
        self.get_pinned_opt(key, ReadOptions::default())
    }
    /// [`get_cf`](Self::get_cf) returning a [`DBPinnableSlice`].
    pub fn get_pinned_cf<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
    ) -> Result<Option<DBPinnableSlice>> {
        self.get_pinned_cf_opt(cf, key, ReadOptions::default())
    }
    /// [`get_pinned`](Self::get_pinned) with `readopts` (their snapshot is replaced by this one).
    pub fn get_pinned_opt<K: AsRef<[u8]>>(&self, key: K, readopts: ReadOptions) -> Result<Option<DBPinnableSlice>> {
        self.db.get_pinned_opt(key, &self.at(readopts))
    }
    /// [`get_pinned_cf`](Self::get_pinned_cf) with `readopts` (their snapshot is replaced by this one).
    pub fn get_pinned_cf_opt<K: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        readopts: ReadOptions,
    ) -> Result<Option<DBPinnableSlice>> {
        self.db.get_pinned_cf_opt(cf, key, &self.at(readopts))
    }
    /// Several keys of the default column family as of this snapshot, one result per key.
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        self.multi_get_opt(keys, ReadOptions::default())
    }
    /// Several (column family, key) pairs as of this snapshot, one result per pair.
    pub fn multi_get_cf<'b, K, I, W>(&self, keys_cf: I) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        self.multi_get_cf_opt(keys_cf, ReadOptions::default())
    }
    /// [`multi_get`](Self::multi_get) with `readopts` (their snapshot is replaced by this one).
    pub fn multi_get_opt<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
        &self,
        keys: I,
        readopts: ReadOptions,
    ) -> Vec<Result<Option<Vec<u8>>>> {
        self.db.multi_get_opt(keys, &self.at(readopts))
    }
    /// [`multi_get_cf`](Self::multi_get_cf) with `readopts` (their snapshot is replaced by this one).
    pub fn multi_get_cf_opt<'b, K, I, W>(&self, keys_cf: I, readopts: ReadOptions) -> Vec<Result<Option<Vec<u8>>>>
    where
        K: AsRef<[u8]>,
        I: IntoIterator<Item = (&'b W, K)>,
        W: AsColumnFamilyRef + 'b,
    {
        self.db.multi_get_cf_opt(keys_cf, &self.at(readopts))
    }
}

/// A [`DBRawIterator`] tied by a lifetime to the database it reads (the `rocksdb` crate's
/// `DBRawIteratorWithThreadMode`), as [`DB::raw_iterator`](crate::DB::raw_iterator) returns it; every cursor call is the
/// [`DBRawIterator`]'s (through `Deref`). The iterator holds what it reads by itself, so
/// `DBRawIterator::from(it)` detaches it from the lifetime (to store it, say).
pub struct DBRawIteratorWithThreadMode<'a, D: DBAccess> {
    raw: DBRawIterator,
    _db: PhantomData<&'a D>,
}

impl<D: DBAccess> DBRawIteratorWithThreadMode<'_, D> {
    pub(crate) fn new(raw: DBRawIterator) -> Self {
        DBRawIteratorWithThreadMode { raw, _db: PhantomData }
    }
}

impl<D: DBAccess> Deref for DBRawIteratorWithThreadMode<'_, D> {
    type Target = DBRawIterator;
    fn deref(&self) -> &DBRawIterator {
        &self.raw
    }
}

impl<D: DBAccess> DerefMut for DBRawIteratorWithThreadMode<'_, D> {
    fn deref_mut(&mut self) -> &mut DBRawIterator {
        &mut self.raw
    }
}

impl<D: DBAccess> From<DBRawIteratorWithThreadMode<'_, D>> for DBRawIterator {
    fn from(it: DBRawIteratorWithThreadMode<'_, D>) -> DBRawIterator {
        it.raw
    }
}
