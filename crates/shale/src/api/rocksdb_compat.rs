//! Calls of the `rocksdb` crate that Shale offers under the crate's names: `flush_wal`,
//! `key_may_exist`, reads through a snapshot, and the `DBWithThreadMode` aliases.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

use super::db::DB;
use crate::engine::iter;
use crate::engine::iter::DBIterator;
use crate::engine::iter::IteratorMode;
use crate::engine::read;
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::key::{append_internal_key, vt};
use crate::memtable::MemGet;
use crate::options::ReadOptions;
use crate::snapshot::Snapshot;
use crate::table::pinnable::DBPinnableSlice;

/// The thread modes of the `rocksdb` crate's `DBWithThreadMode<T>`. A Shale [`DB`] is always
/// safe to share between threads, so both modes name the same type.
pub trait ThreadMode {
    /// The database type of this mode ([`DB`] for both).
    type Db;
}

/// The `rocksdb` crate's multi-threaded mode (column families created through `&self`).
#[derive(Debug, Clone, Copy)]
pub struct MultiThreaded;

/// The `rocksdb` crate's single-threaded mode (its default `DB`).
#[derive(Debug, Clone, Copy)]
pub struct SingleThreaded;

impl ThreadMode for MultiThreaded {
    type Db = DB;
}
impl ThreadMode for SingleThreaded {
    type Db = DB;
}

/// The `rocksdb` crate's `DBWithThreadMode<T>`: [`DB`] for either mode, so
/// `DBWithThreadMode::<MultiThreaded>::open(&opts, path)` works as with the crate.
pub type DBWithThreadMode<T> = <T as ThreadMode>::Db;

impl DB {
    /// Write the WAL's buffered bytes to the file, and with `sync` make them durable
    /// (RocksDB's `FlushWAL`). A read-only DB has no WAL: nothing to do.
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        let mut wal = self.inner.wal.lock();
        let Some(w) = wal.writer.as_mut() else {
            return Ok(());
        };
        w.flush()?;
        if sync {
            w.sync()?;
            wal.unsynced = false;
        }
        Ok(())
    }

    /// False only if `key` certainly does not exist; true if it may (RocksDB's `KeyMayExist`):
    /// consults the memtables and the bloom filters of the files whose range holds the key,
    /// without reading data blocks.
    pub fn key_may_exist(&self, key: impl AsRef<[u8]>) -> bool {
        self.key_may_exist_opt(key, &ReadOptions::default())
    }

    /// [`key_may_exist`](Self::key_may_exist) at the snapshot of `ro`.
    pub fn key_may_exist_opt(&self, key: impl AsRef<[u8]>, ro: &ReadOptions) -> bool {
        key_may_exist(&self.inner, &self.inner.default_cf, ro, key.as_ref())
    }

    /// [`key_may_exist`](Self::key_may_exist) in column family `cf`.
    pub fn key_may_exist_cf(
        &self,
        cf: &impl crate::engine::column_family::AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
    ) -> bool {
        key_may_exist(
            &self.inner,
            &cf.column_family().cfd,
            &ReadOptions::default(),
            key.as_ref(),
        )
    }

    /// [`key_may_exist`](Self::key_may_exist) in column family `cf` at the snapshot of `ro`.
    pub fn key_may_exist_cf_opt(
        &self,
        cf: &impl crate::engine::column_family::AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> bool {
        key_may_exist(&self.inner, &cf.column_family().cfd, ro, key.as_ref())
    }

    /// [`key_may_exist_cf_opt`](Self::key_may_exist_cf_opt), with the value when finding it
    /// cost no I/O (RocksDB's `KeyMayExist` with `value_found`): a value the memtables hold
    /// is returned; otherwise `None` (the key may still exist in a table file).
    pub fn key_may_exist_cf_opt_value(
        &self,
        cf: &impl crate::engine::column_family::AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        ro: &ReadOptions,
    ) -> (bool, Option<CSlice>) {
        let (may, value) = key_may_exist_value(&self.inner, &cf.column_family().cfd, ro, key.as_ref());
        (may, value.map(CSlice))
    }

    /// The size and file count of the default family's table files (the `rocksdb` crate's
    /// `get_column_family_metadata`).
    pub fn get_column_family_metadata(&self) -> ColumnFamilyMetaData {
        family_metadata(&self.inner.default_cf)
    }

    /// [`get_column_family_metadata`](Self::get_column_family_metadata) of family `cf`.
    pub fn get_column_family_metadata_cf(
        &self,
        cf: &impl crate::engine::column_family::AsColumnFamilyRef,
    ) -> ColumnFamilyMetaData {
        family_metadata(&cf.column_family().cfd)
    }
}

/// A family's size and table file count (the `rocksdb` crate's `ColumnFamilyMetaData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnFamilyMetaData {
    /// The bytes of the family's live table files, all levels.
    pub size: u64,
    /// The family's name.
    pub name: String,
    /// How many live table files the family has.
    pub file_count: usize,
}

fn family_metadata(cf: &crate::engine::column_family::ColumnFamilyData) -> ColumnFamilyMetaData {
    let sv = cf.super_version();
    let (mut size, mut file_count) = (0u64, 0usize);
    for (_, f) in sv.version.all_files() {
        size += f.meta.file_size;
        file_count += 1;
    }
    ColumnFamilyMetaData {
        size,
        name: cf.name.clone(),
        file_count,
    }
}

/// A value returned by [`DB::key_may_exist_cf_opt_value`] (the `rocksdb` crate's `CSlice`):
/// its bytes through `Deref` and `AsRef<[u8]>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CSlice(Vec<u8>);

impl std::ops::Deref for CSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for CSlice {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn key_may_exist(
    db: &Arc<DbInner>,
    cf: &crate::engine::column_family::ColumnFamilyData,
    ro: &ReadOptions,
    key: &[u8],
) -> bool {
    key_may_exist_value(db, cf, ro, key).0
}

/// Whether `key` may exist, and its value when a memtable holds it.
fn key_may_exist_value(
    db: &Arc<DbInner>,
    cf: &crate::engine::column_family::ColumnFamilyData,
    ro: &ReadOptions,
    key: &[u8],
) -> (bool, Option<Vec<u8>>) {
    // With user-defined timestamps the stored keys end with one the caller does not give:
    // answer "may exist" rather than risk a false "no".
    if cf.icmp.timestamp_size() > 0 {
        return (true, None);
    }
    let sv = cf.super_version();
    let seq = read::read_seq(db, ro);
    let mut lookup = Vec::with_capacity(key.len() + 8);
    append_internal_key(&mut lookup, key, seq, vt::FOR_SEEK);
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        match m.get(&lookup) {
            Some(MemGet::Deleted) => return (false, None),
            Some(MemGet::Value(v)) => return (true, Some(v)),
            Some(_) => return (true, None),
            None => {}
        }
    }
    let v = &sv.version;
    let icmp = &v.icmp;
    let in_range = |f: &crate::lsm::version::FileMeta| {
        icmp.compare_user(key, f.smallest_user()) != Ordering::Less
            && icmp.compare_user(key, f.largest_user()) != Ordering::Greater
    };
    let table_may_hold = |f: &crate::lsm::version::FileMeta| match cf.table_cache.get(f) {
        Ok(t) => t.as_block().is_none_or(|b| b.key_may_match(key)),
        Err(_) => true,
    };
    for f in &v.files[0] {
        if in_range(f) && table_may_hold(f) {
            return (true, None);
        }
    }
    for level in 1..v.num_levels() {
        let files = &v.files[level];
        if files.is_empty() {
            continue;
        }
        if let Some(f) = files.get(v.find_file(level, &lookup)) {
            if in_range(f) && table_may_hold(f) {
                return (true, None);
            }
        }
    }
    (false, None)
}

impl Snapshot {
    /// The database this snapshot was taken of, or an error if it has been closed.
    fn db(&self) -> Result<Arc<DbInner>> {
        match self.owner().and_then(|o| o.downcast::<DbInner>().ok()) {
            Some(db) if !db.shutting_down.load(AtOrd::Acquire) => Ok(db),
            _ => Err(Error::invalid("snapshot: its database has been closed")),
        }
    }
    fn read_options(&self, mut ro: ReadOptions) -> ReadOptions {
        ro.snapshot = Some(self.clone());
        ro
    }

    /// The value of `key` as of this snapshot.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(key, ReadOptions::default())
    }
    /// [`get`](Self::get) with read options (their snapshot is replaced by this one).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, ro: ReadOptions) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        crate::engine::timestamps::get(&db, &db.default_cf, &self.read_options(ro), key.as_ref())
    }
    /// The value of `key` as of this snapshot, pinned where it was found.
    pub fn get_pinned(&self, key: impl AsRef<[u8]>) -> Result<Option<DBPinnableSlice>> {
        let db = self.db()?;
        crate::engine::timestamps::get(
            &db,
            &db.default_cf,
            &self.read_options(ReadOptions::default()),
            key.as_ref(),
        )
    }
    /// Several keys as of this snapshot.
    pub fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(&self, keys: I) -> Vec<Result<Option<Vec<u8>>>> {
        match self.db() {
            Ok(db) => crate::engine::timestamps::multi_get(
                &db,
                &db.default_cf,
                &self.read_options(ReadOptions::default()),
                keys,
            ),
            Err(e) => keys.into_iter().map(|_| Err(e.clone())).collect(),
        }
    }
    /// An iterator over the database as of this snapshot.
    pub fn iterator(&self, mode: IteratorMode<'_>) -> DBIterator {
        self.iterator_opt(mode, ReadOptions::default())
    }
    /// [`iterator`](Self::iterator) with read options (bounds, checksums; their snapshot is
    /// replaced by this one).
    pub fn iterator_opt(&self, mode: IteratorMode<'_>, ro: ReadOptions) -> DBIterator {
        match self.db() {
            Ok(db) => DBIterator::new(iter::new_raw_iterator(&db, &db.default_cf, self.read_options(ro)), mode),
            Err(e) => DBIterator::failed(e),
        }
    }
}
