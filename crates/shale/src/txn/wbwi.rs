//! `WriteBatchWithIndex`: a write batch that also keeps, per column family and key, what its
//! records do to that key, so reads can see the batch's own writes (RocksDB's
//! `WriteBatchWithIndex`, the `rocksdb` crate's API). Transactions buffer their writes in one.
//!
//! The index keeps, for each key, the effect of the batch on it: a base (nothing, a value, or a
//! deletion) followed by the merge operands written after that base, oldest first. A later put
//! or delete replaces the whole entry, as it hides everything before it. The batch itself keeps
//! every record, so writing it applies exactly what was asked.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::api::db::DB;
use crate::engine::column_family::AsColumnFamilyRef;
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::families::cfd_of;
use crate::engine::iter::DBRawIterator;
use crate::engine::read;
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::key::InternalKeyComparator;
use crate::merge_operator::MergeOperator;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::write_batch::WriteBatch;

/// What the batch does to one key.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyEffect {
    pub base: Base,
    /// Merge operands written after `base`, oldest first.
    pub operands: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, Default)]
pub(crate) enum Base {
    /// No put or delete in the batch: operands apply to what the DB holds.
    #[default]
    Db,
    Put(Vec<u8>),
    /// A wide-column entity (its encoding): reads through the batch see its default column.
    Entity(Vec<u8>),
    Deleted,
}

/// The result of a key's effect on top of a base value from the DB.
pub(crate) fn resolve(
    eff: &KeyEffect,
    key: &[u8],
    db_value: Option<&[u8]>,
    op: Option<&Arc<dyn MergeOperator>>,
) -> Result<Option<Vec<u8>>> {
    let base: Option<&[u8]> = match &eff.base {
        Base::Db => db_value,
        Base::Put(v) => Some(v),
        // The default column's value; with operands and no default column, no existing value.
        Base::Entity(e) => match crate::wide_columns::default_range(e)? {
            Some(r) => Some(&e[r]),
            None if eff.operands.is_empty() => Some(&[]),
            None => None,
        },
        Base::Deleted => None,
    };
    if eff.operands.is_empty() {
        return Ok(base.map(|b| b.to_vec()));
    }
    let Some(op) = op else {
        return Err(Error::invalid(
            "merge operands in the batch but no merge operator is configured",
        ));
    };
    let ops: Vec<&[u8]> = eff.operands.iter().map(|v| v.as_slice()).collect();
    op.full_merge(key, base, &ops)
        .map(Some)
        .ok_or_else(|| Error::corrupt(format!("Merge operator failed (operator {})", op.name())))
}

/// The index: each (family, key) the batch touches and what it does to it.
pub(crate) type Index = BTreeMap<(u32, Vec<u8>), KeyEffect>;

/// `(name, value)` pairs encoded as an entity (sorted; InvalidArgument on a repeated name).
pub(crate) fn encode_columns<N: AsRef<[u8]>, V: AsRef<[u8]>>(columns: &[(N, V)]) -> Result<Vec<u8>> {
    let cols: Vec<(&[u8], &[u8])> = columns.iter().map(|(n, v)| (n.as_ref(), v.as_ref())).collect();
    crate::wide_columns::serialize(&cols)
}

/// A write batch with a searchable index of its own entries.
#[derive(Clone)]
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    index: Index,
    overwrite_key: bool,
}

impl Default for WriteBatchWithIndex {
    fn default() -> Self {
        WriteBatchWithIndex::new(0, true)
    }
}

impl std::fmt::Debug for WriteBatchWithIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WriteBatchWithIndex({} records, {} keys)",
            self.batch.len(),
            self.index.len()
        )
    }
}

impl WriteBatchWithIndex {
    /// An empty batch with room for `reserved_bytes`. `overwrite_key` is kept for the `rocksdb`
    /// crate's signature: reads always see the newest write of a key either way.
    pub fn new(reserved_bytes: usize, overwrite_key: bool) -> WriteBatchWithIndex {
        WriteBatchWithIndex {
            batch: WriteBatch::with_capacity(reserved_bytes),
            index: BTreeMap::new(),
            overwrite_key,
        }
    }
    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.batch.len()
    }
    /// True if the batch holds no records.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }
    /// The batch's size in bytes in RocksDB's WriteBatch format (header included).
    pub fn size_in_bytes(&self) -> usize {
        self.batch.size_in_bytes()
    }
    /// The batch's bytes in RocksDB's WriteBatch format.
    pub fn data(&self) -> &[u8] {
        self.batch.data()
    }
    /// Whether the batch was made with `overwrite_key`.
    pub fn overwrite_key(&self) -> bool {
        self.overwrite_key
    }
    /// Removes every record and index entry, leaving an empty batch.
    pub fn clear(&mut self) {
        self.batch.clear();
        self.index.clear();
    }

    /// Adds a Put of `key` → `value` in the default family; later reads of the batch see `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_id(0, key.as_ref(), value.as_ref())
    }
    /// [`put`](Self::put) in column family `cf`.
    pub fn put_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.put_id(cfd_of(cf).id, key.as_ref(), value.as_ref())
    }
    /// Adds a deletion of `key` in the default family; later reads of the batch see it absent.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.delete_id(0, key.as_ref())
    }
    /// [`delete`](Self::delete) in column family `cf`.
    pub fn delete_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>) {
        self.delete_id(cfd_of(cf).id, key.as_ref())
    }
    /// Adds a merge operand for `key` in the default family, resolved when the key is read.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.merge_id(0, key.as_ref(), value.as_ref())
    }
    /// [`merge`](Self::merge) in column family `cf`.
    pub fn merge_cf(&mut self, cf: &impl AsColumnFamilyRef, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.merge_id(cfd_of(cf).id, key.as_ref(), value.as_ref())
    }

    pub(crate) fn put_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.batch.put_cf_id(cf, key, value);
        let e = self.index.entry((cf, key.to_vec())).or_default();
        e.base = Base::Put(value.to_vec());
        e.operands.clear();
    }
    /// Adds a wide-column entity for `key` in the default family (as
    /// [`WriteBatch::put_entity`]): reads through the batch (`get_from_batch*`, iterators with a
    /// base) see its default column's value, an empty value without one. InvalidArgument, and
    /// nothing recorded, if two columns share a name.
    pub fn put_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        let e = encode_columns(columns)?;
        self.put_entity_id(0, key.as_ref(), &e);
        Ok(())
    }
    /// [`put_entity`](Self::put_entity) in column family `cf`.
    pub fn put_entity_cf<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        let e = encode_columns(columns)?;
        self.put_entity_id(cfd_of(cf).id, key.as_ref(), &e);
        Ok(())
    }
    /// An entity already encoded (`encode_columns`).
    pub(crate) fn put_entity_id(&mut self, cf: u32, key: &[u8], entity: &[u8]) {
        self.batch.put_entity_raw_cf_id(cf, key, entity);
        let e = self.index.entry((cf, key.to_vec())).or_default();
        e.base = Base::Entity(entity.to_vec());
        e.operands.clear();
    }
    pub(crate) fn delete_id(&mut self, cf: u32, key: &[u8]) {
        self.batch.delete_cf_id(cf, key);
        let e = self.index.entry((cf, key.to_vec())).or_default();
        e.base = Base::Deleted;
        e.operands.clear();
    }
    pub(crate) fn merge_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.batch.merge_cf_id(cf, key, value);
        self.index
            .entry((cf, key.to_vec()))
            .or_default()
            .operands
            .push(value.to_vec());
    }

    /// A batch holding exactly `batch`'s records (a prepared transaction recovered from the
    /// WAL), indexed. A range deletion is kept in the batch but not indexed.
    pub(crate) fn from_batch(batch: WriteBatch) -> Result<WriteBatchWithIndex> {
        use crate::write_batch::BatchRecord as R;
        let mut index = Index::new();
        for rec in batch.records() {
            match rec? {
                R::Put { cf, key, value } => {
                    let e = index.entry((cf, key.to_vec())).or_default();
                    e.base = Base::Put(value.to_vec());
                    e.operands.clear();
                }
                R::WideColumnEntity { cf, key, value } => {
                    let e = index.entry((cf, key.to_vec())).or_default();
                    e.base = Base::Entity(value.to_vec());
                    e.operands.clear();
                }
                R::Delete { cf, key } | R::SingleDelete { cf, key } => {
                    let e = index.entry((cf, key.to_vec())).or_default();
                    e.base = Base::Deleted;
                    e.operands.clear();
                }
                R::Merge { cf, key, value } => index
                    .entry((cf, key.to_vec()))
                    .or_default()
                    .operands
                    .push(value.to_vec()),
                _ => {}
            }
        }
        Ok(WriteBatchWithIndex {
            batch,
            index,
            overwrite_key: true,
        })
    }

    /// The batch's effect on `key` of family `cf`, if it has records for it.
    pub(crate) fn effect(&self, cf: u32, key: &[u8]) -> Option<&KeyEffect> {
        self.index.get(&(cf, key.to_vec()))
    }
    pub(crate) fn batch(&self) -> &WriteBatch {
        &self.batch
    }
    /// Drop every record after the first `len` bytes and `count` records, and restore `index`
    /// (a savepoint's).
    pub(crate) fn restore(&mut self, len: usize, count: u32, index: Index) -> Result<()> {
        let data = self.batch.data();
        if len > data.len() {
            return Err(Error::invalid("savepoint beyond the end of the batch"));
        }
        let mut b = WriteBatch::from_data_unchecked(data[..len].to_vec())?;
        b.set_count(count);
        self.batch = b;
        self.index = index;
        Ok(())
    }
    pub(crate) fn mark(&self) -> (usize, u32, Index) {
        (self.batch.data().len(), self.batch.count(), self.index.clone())
    }

    /// The value the batch alone gives `key`: None if it deletes it or has no record for it;
    /// merge operands are resolved with `options`' merge operator when the batch also holds a
    /// base for them, else MergeInProgress (as RocksDB's `GetFromBatch`).
    pub fn get_from_batch(&self, key: impl AsRef<[u8]>, options: &Options) -> Result<Option<Vec<u8>>> {
        self.batch_value(0, key.as_ref(), options.merge_operator.as_ref())
    }
    /// [`get_from_batch`](Self::get_from_batch) in family `cf`; merges use `options`' merge operator,
    /// else the family's.
    pub fn get_from_batch_cf(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        options: &Options,
    ) -> Result<Option<Vec<u8>>> {
        let cfd = cfd_of(cf);
        let op = options.merge_operator.as_ref().or(cfd.opts.merge_operator.as_ref());
        self.batch_value(cfd.id, key.as_ref(), op)
    }
    fn batch_value(&self, cf: u32, key: &[u8], op: Option<&Arc<dyn MergeOperator>>) -> Result<Option<Vec<u8>>> {
        let Some(eff) = self.effect(cf, key) else {
            return Ok(None);
        };
        if matches!(eff.base, Base::Db) && !eff.operands.is_empty() {
            return Err(Error::MergeInProgress(
                "the batch holds merge operands for the key but no base value".into(),
            ));
        }
        resolve(eff, key, None, op)
    }

    /// The value of `key` as the DB would hold it after this batch: the batch's records on top
    /// of what `db` holds (at `readopts`' snapshot), merges resolved with the family's operator.
    pub fn get_from_batch_and_db(
        &self,
        db: &DB,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        let cfd = db.inner.default_cf.clone();
        self.value_with_db(&db.inner, &cfd, key.as_ref(), readopts)
    }
    /// [`get_from_batch_and_db`](Self::get_from_batch_and_db) in family `cf`.
    pub fn get_from_batch_and_db_cf(
        &self,
        db: &DB,
        cf: &impl AsColumnFamilyRef,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        self.value_with_db(&db.inner, cfd_of(cf), key.as_ref(), readopts)
    }
    pub(crate) fn value_with_db(
        &self,
        db: &Arc<DbInner>,
        cfd: &ColumnFamilyData,
        key: &[u8],
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        match self.effect(cfd.id, key) {
            None => read::get(db, cfd, ro, key),
            Some(eff) => {
                let db_value: Option<Vec<u8>> = match eff.base {
                    Base::Db => read::get(db, cfd, ro, key)?,
                    _ => None,
                };
                resolve(eff, key, db_value.as_deref(), cfd.opts.merge_operator.as_ref())
            }
        }
    }

    /// The columns of `key` as the DB would hold them after this batch (RocksDB's
    /// `GetEntityFromBatchAndDB`): the batch's records on top of what `db` holds at `readopts`'
    /// snapshot; a plain value is one default column; merges in the batch apply to the default
    /// column and keep the other columns.
    pub fn get_entity_from_batch_and_db(
        &self,
        db: &DB,
        key: impl AsRef<[u8]>,
        readopts: &ReadOptions,
    ) -> Result<Option<Vec<crate::wide_columns::WideColumn>>> {
        let cfd = db.inner.default_cf.clone();
        let e = self.entity_with_db((&db.inner, &cfd), key.as_ref(), readopts)?;
        e.map(|e| crate::wide_columns::to_columns(&e)).transpose()
    }
    /// The encoded entity of `key` after this batch (see
    /// [`get_entity_from_batch_and_db`](Self::get_entity_from_batch_and_db)).
    /// `(db, cfd)`: the DB and the family read below the batch.
    pub(crate) fn entity_with_db(
        &self,
        (db, cfd): (&Arc<DbInner>, &ColumnFamilyData),
        key: &[u8],
        ro: &ReadOptions,
    ) -> Result<Option<Vec<u8>>> {
        use crate::wide_columns::{default_range, single_default, with_default};
        let Some(eff) = self.effect(cfd.id, key) else {
            return read::get_entity(db, cfd, ro, key);
        };
        let base: Option<Vec<u8>> = match &eff.base {
            Base::Db => read::get_entity(db, cfd, ro, key)?,
            Base::Put(v) => Some(single_default(v)),
            Base::Entity(e) => Some(e.clone()),
            Base::Deleted => None,
        };
        if eff.operands.is_empty() {
            return Ok(base);
        }
        let Some(op) = cfd.opts.merge_operator.as_ref() else {
            return Err(Error::invalid(
                "merge operands in the batch but no merge operator is configured",
            ));
        };
        let dflt = match &base {
            Some(e) => default_range(e)?.map(|r| &e[r]),
            None => None,
        };
        let ops: Vec<&[u8]> = eff.operands.iter().map(|v| v.as_slice()).collect();
        let merged = op
            .full_merge(key, dflt, &ops)
            .ok_or_else(|| Error::corrupt(format!("Merge operator failed (operator {})", op.name())))?;
        match &base {
            Some(e) => with_default(e, &merged).map(Some),
            None => Ok(Some(single_default(&merged))),
        }
    }

    /// An iterator over the default family's entries of this batch merged with `base` (a DB
    /// iterator): the batch's records hide or change the DB's, as if the batch were written.
    /// It keeps `base`'s bounds and works in both directions.
    pub fn iterator_with_base(&self, base: DBRawIterator) -> TxnRawIterator {
        TxnRawIterator::new(base, self.delta(0))
    }
    /// [`iterator_with_base`](Self::iterator_with_base) for family `cf` (`base` must iterate the
    /// same family).
    pub fn iterator_with_base_cf(&self, base: DBRawIterator, cf: &impl AsColumnFamilyRef) -> TxnRawIterator {
        TxnRawIterator::new(base, self.delta(cfd_of(cf).id))
    }

    /// Family `cf`'s entries, unsorted (the iterator sorts them in the family's order).
    pub(crate) fn delta(&self, cf: u32) -> Vec<(Vec<u8>, KeyEffect)> {
        self.index
            .range((cf, Vec::new())..)
            .take_while(|((c, _), _)| *c == cf)
            .map(|((_, k), e)| (k.clone(), e.clone()))
            .collect()
    }
}

impl DB {
    /// Write the records of a [`WriteBatchWithIndex`] atomically.
    pub fn write_wbwi(&self, wbwi: &WriteBatchWithIndex) -> Result<()> {
        self.write_wbwi_opt(wbwi, &WriteOptions::default())
    }
    /// [`write_wbwi`](Self::write_wbwi) with write options `wo`; errors as [`write_opt`](DB::write_opt).
    pub fn write_wbwi_opt(&self, wbwi: &WriteBatchWithIndex, wo: &WriteOptions) -> Result<()> {
        self.write_opt(wbwi.batch.clone(), wo)
    }
}

/// A cursor over a batch's entries merged with a DB iterator (RocksDB's `BaseDeltaIterator`):
/// the iterator of [`WriteBatchWithIndex::iterator_with_base`] and of transactions. Same calls
/// as [`DBRawIterator`].
pub struct TxnRawIterator {
    base: DBRawIterator,
    /// The batch's keys inside the bounds, in the family's order.
    delta: Vec<(Vec<u8>, KeyEffect)>,
    icmp: InternalKeyComparator,
    merge_op: Option<Arc<dyn MergeOperator>>,
    /// Position in `delta` (`delta.len()` or `usize::MAX`: before the first / after the last).
    di: usize,
    forward: bool,
    cur: Option<(Vec<u8>, Vec<u8>)>,
    /// The current entry comes from the batch: its index in `delta`, and whether `base` is at
    /// the same key (the batch's record lies over the DB's entry). `None`: from `base`.
    cur_delta: Option<(usize, bool)>,
    err: Option<Error>,
}

const NONE: usize = usize::MAX;

impl TxnRawIterator {
    pub(crate) fn new(base: DBRawIterator, mut delta: Vec<(Vec<u8>, KeyEffect)>) -> TxnRawIterator {
        let (icmp, merge_op) = base.layer_info();
        let (lower, upper) = base.bounds();
        delta.retain(|(k, _)| {
            lower.is_none_or(|l| icmp.compare_user(k, l) != Ordering::Less)
                && upper.is_none_or(|u| icmp.compare_user(k, u) == Ordering::Less)
        });
        delta.sort_by(|a, b| icmp.compare_user(&a.0, &b.0));
        TxnRawIterator {
            base,
            delta,
            icmp,
            merge_op,
            di: NONE,
            forward: true,
            cur: None,
            cur_delta: None,
            err: None,
        }
    }

    /// True while the iterator is positioned on an entry; false past either end or after an error
    /// (check [`status`](Self::status)).
    pub fn valid(&self) -> bool {
        self.cur.is_some()
    }
    /// The current key, or `None` if not [`valid`](Self::valid).
    pub fn key(&self) -> Option<&[u8]> {
        self.cur.as_ref().map(|c| c.0.as_slice())
    }
    /// The current value (with the batch's merges resolved), or `None` if not valid.
    pub fn value(&self) -> Option<&[u8]> {
        self.cur.as_ref().map(|c| c.1.as_slice())
    }
    /// The wide columns of the current entry, sorted by name, or `None` if not valid: a plain
    /// value is one default column; the batch's merges apply to the default column of the
    /// entity below them and keep its other columns.
    pub fn columns(&self) -> Option<Vec<crate::wide_columns::WideColumn>> {
        use crate::wide_columns::WideColumn;
        self.cur.as_ref()?;
        let Some((di, same)) = self.cur_delta else {
            return self.base.columns();
        };
        let (_, eff) = self.delta.get(di)?;
        let mut cols: Option<Vec<WideColumn>> = match &eff.base {
            Base::Db if same => self.base.columns(),
            Base::Db | Base::Deleted => None,
            Base::Put(v) => Some(vec![WideColumn::new(Vec::new(), v.clone())]),
            // Decoded when the batch took it (serialized from its columns).
            Base::Entity(e) => crate::wide_columns::to_columns(e).ok(),
        };
        if !eff.operands.is_empty() {
            // `value()` is the merge's result (computed by `settle`, which failed otherwise).
            let merged = self.value()?.to_vec();
            let mut c = cols.unwrap_or_default();
            match c.first_mut() {
                Some(d) if d.name.is_empty() => d.value = merged,
                _ => c.insert(0, WideColumn::new(Vec::new(), merged)),
            }
            cols = Some(c);
        }
        cols
    }
    /// The current key and value, or `None` if not valid.
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        self.cur.as_ref().map(|c| (c.0.as_slice(), c.1.as_slice()))
    }
    /// The first error met by the batch layer (e.g. a merge that could not be resolved) or by the
    /// base iterator; `Ok(())` if none.
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.base.status()
    }

    /// First delta index whose key is >= `k` (or > `k` with `strict`).
    fn lower_bound(&self, k: &[u8], strict: bool) -> usize {
        self.delta.partition_point(|(d, _)| match self.icmp.compare_user(d, k) {
            Ordering::Less => true,
            Ordering::Equal => strict,
            Ordering::Greater => false,
        })
    }

    /// Positions at the first entry (within the base iterator's bounds).
    pub fn seek_to_first(&mut self) {
        self.base.seek_to_first();
        self.di = 0;
        self.forward = true;
        self.settle();
    }
    /// Positions at the last entry (within the base iterator's bounds).
    pub fn seek_to_last(&mut self) {
        self.base.seek_to_last();
        self.di = self.delta.len().checked_sub(1).unwrap_or(NONE);
        self.forward = false;
        self.settle();
    }
    /// Positions at the first entry whose key is at or after `key`.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let k = key.as_ref();
        self.base.seek(k);
        self.di = self.lower_bound(k, false);
        self.forward = true;
        self.settle();
    }
    /// Positions at the last entry whose key is at or before `key`.
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        let k = key.as_ref();
        self.base.seek_for_prev(k);
        self.di = self.lower_bound(k, true).checked_sub(1).unwrap_or(NONE);
        self.forward = false;
        self.settle();
    }
    /// Moves to the next entry; does nothing if not valid.
    pub fn next(&mut self) {
        let Some((k, _)) = self.cur.take() else {
            return;
        };
        if !self.forward {
            // Both sides to the first entry >= the current key, then past it.
            self.base.seek(&k);
            self.di = self.lower_bound(&k, false);
            self.forward = true;
        }
        self.step_past(&k);
        self.settle();
    }
    /// Moves to the previous entry; does nothing if not valid.
    pub fn prev(&mut self) {
        let Some((k, _)) = self.cur.take() else {
            return;
        };
        if self.forward {
            self.base.seek_for_prev(&k);
            self.di = self.lower_bound(&k, true).checked_sub(1).unwrap_or(NONE);
            self.forward = false;
        }
        self.step_past(&k);
        self.settle();
    }

    /// Move each side that is at `k` one step in the current direction.
    fn step_past(&mut self, k: &[u8]) {
        if self
            .base
            .key()
            .is_some_and(|b| self.icmp.compare_user(b, k) == Ordering::Equal)
        {
            if self.forward {
                self.base.next();
            } else {
                self.base.prev();
            }
        }
        if self
            .delta
            .get(self.di)
            .is_some_and(|(d, _)| self.icmp.compare_user(d, k) == Ordering::Equal)
        {
            self.step_delta();
        }
    }

    fn step_delta(&mut self) {
        self.di = if self.forward {
            self.di + 1
        } else {
            self.di.checked_sub(1).unwrap_or(NONE)
        };
    }

    /// Position on the next visible entry in the current direction, from where both sides are.
    fn settle(&mut self) {
        self.cur = None;
        self.cur_delta = None;
        if self.err.is_some() {
            return;
        }
        loop {
            let b = self.base.key();
            let d = self.delta.get(self.di);
            let take_delta = match (b, d) {
                (None, None) => return,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(bk), Some((dk, _))) => {
                    let o = self.icmp.compare_user(dk, bk);
                    o == Ordering::Equal || (o == Ordering::Less) == self.forward
                }
            };
            if !take_delta {
                let (Some(k), Some(v)) = (self.base.key(), self.base.value()) else {
                    return;
                };
                self.cur = Some((k.to_vec(), v.to_vec()));
                return;
            }
            let Some((dk, eff)) = self.delta.get(self.di) else {
                return;
            };
            let same = b.is_some_and(|bk| self.icmp.compare_user(dk, bk) == Ordering::Equal);
            let db_value = if same { self.base.value() } else { None };
            match resolve(eff, dk, db_value, self.merge_op.as_ref()) {
                Ok(Some(v)) => {
                    self.cur = Some((dk.clone(), v));
                    self.cur_delta = Some((self.di, same));
                    return;
                }
                Ok(None) => {
                    // Deleted by the batch: skip it on both sides.
                    let k = dk.clone();
                    self.step_past(&k);
                }
                Err(e) => {
                    self.err = Some(e);
                    return;
                }
            }
        }
    }
}

/// A Rust iterator over a [`TxnRawIterator`], as [`DBIterator`](crate::DBIterator) over a
/// [`DBRawIterator`].
pub struct TxnIterator {
    raw: TxnRawIterator,
    forward: bool,
    done: bool,
}

impl TxnIterator {
    pub(crate) fn new(mut raw: TxnRawIterator, mode: crate::engine::iter::IteratorMode<'_>) -> TxnIterator {
        use crate::engine::iter::Direction;
        use crate::engine::iter::IteratorMode;
        let forward = match mode {
            IteratorMode::Start => {
                raw.seek_to_first();
                true
            }
            IteratorMode::End => {
                raw.seek_to_last();
                false
            }
            IteratorMode::From(k, Direction::Forward) => {
                raw.seek(k);
                true
            }
            IteratorMode::From(k, Direction::Reverse) => {
                raw.seek_for_prev(k);
                false
            }
        };
        TxnIterator {
            raw,
            forward,
            done: false,
        }
    }
}

impl Iterator for TxnIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let Some((k, v)) = self.raw.item() else {
            self.done = true;
            return self.raw.status().err().map(Err);
        };
        let item = (Box::<[u8]>::from(k), Box::<[u8]>::from(v));
        if self.forward {
            self.raw.next();
        } else {
            self.raw.prev();
        }
        Some(Ok(item))
    }
}
