//! The calls of user-defined timestamps (the `rocksdb` crate's `_with_ts` writes and
//! `full_history_ts_low`), for `DB` and `WriteBatch`. See `docs/user-timestamps.md`.

use super::db::DB;
use crate::engine::column_family::{AsColumnFamilyRef, ColumnFamilyData};
use crate::engine::families::cfd_of;
use crate::engine::timestamps::{full_history_ts_low, increase_full_history_ts_low, write_one_ts};
use crate::error::Result;
use crate::options::WriteOptions;
use crate::write_batch::TsOp;

/// Writes with a user-defined timestamp. Each stores `key` followed by `ts` (the order is the
/// family's comparator's: key, then newer timestamps first). Errors: InvalidArgument if the
/// family's comparator has no timestamps or `ts` is not its timestamp size (and, as for every
/// write, the errors of [`DB::put`]). A family whose comparator has timestamps refuses the
/// calls without one with InvalidArgument.
impl DB {
    /// Put `key` → `value` at timestamp `ts` in the default column family.
    pub fn put_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(&self, key: K, ts: S, value: V) -> Result<()> {
        self.put_with_ts_opt(key, ts, value, &WriteOptions::default())
    }
    /// [`put_with_ts`](Self::put_with_ts) with write options `wo`.
    pub fn put_with_ts_opt<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        key: K,
        ts: S,
        value: V,
        wo: &WriteOptions,
    ) -> Result<()> {
        let c = &self.inner.default_cf;
        self.ts_write(TsOp::Put, c, key.as_ref(), ts.as_ref(), value.as_ref(), wo)
    }
    /// Put `key` → `value` at timestamp `ts` in column family `cf`.
    pub fn put_cf_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) -> Result<()> {
        self.put_cf_with_ts_opt(cf, key, ts, value, &WriteOptions::default())
    }
    /// [`put_cf_with_ts`](Self::put_cf_with_ts) with write options `wo`.
    pub fn put_cf_with_ts_opt<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.ts_write(TsOp::Put, cfd_of(cf), key.as_ref(), ts.as_ref(), value.as_ref(), wo)
    }
    /// Delete `key` at timestamp `ts` in the default column family: reads at `ts` or later
    /// find nothing, reads at older timestamps still find the older versions.
    pub fn delete_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(&self, key: K, ts: S) -> Result<()> {
        self.delete_with_ts_opt(key, ts, &WriteOptions::default())
    }
    /// [`delete_with_ts`](Self::delete_with_ts) with write options `wo`.
    pub fn delete_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(&self, key: K, ts: S, wo: &WriteOptions) -> Result<()> {
        let c = &self.inner.default_cf;
        self.ts_write(TsOp::Delete, c, key.as_ref(), ts.as_ref(), &[], wo)
    }
    /// Delete `key` at timestamp `ts` in column family `cf`.
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) -> Result<()> {
        self.delete_cf_with_ts_opt(cf, key, ts, &WriteOptions::default())
    }
    /// [`delete_cf_with_ts`](Self::delete_cf_with_ts) with write options `wo`.
    pub fn delete_cf_with_ts_opt<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        wo: &WriteOptions,
    ) -> Result<()> {
        self.ts_write(TsOp::Delete, cfd_of(cf), key.as_ref(), ts.as_ref(), &[], wo)
    }
    /// SingleDelete `key` at timestamp `ts` in column family `cf` (cancels the one Put of
    /// `key` at that same timestamp; the `rocksdb` crate has no such call, RocksDB has).
    pub fn single_delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) -> Result<()> {
        self.ts_write(
            TsOp::SingleDelete,
            cfd_of(cf),
            key.as_ref(),
            ts.as_ref(),
            &[],
            &WriteOptions::default(),
        )
    }
    /// A merge operand for `key` at timestamp `ts` in column family `cf` (needs a merge
    /// operator; a read at timestamp t merges the operands at or below t over the newest base
    /// at or below t). The `rocksdb` crate has no such call, RocksDB has.
    pub fn merge_cf_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) -> Result<()> {
        self.ts_write(
            TsOp::Merge,
            cfd_of(cf),
            key.as_ref(),
            ts.as_ref(),
            value.as_ref(),
            &WriteOptions::default(),
        )
    }
    /// Raise column family `cf`'s `full_history_ts_low` to `ts`: reads at older timestamps are
    /// then refused (InvalidArgument) and compaction may drop the versions they alone could
    /// see. Written to the MANIFEST before it takes effect, so it survives a reopen.
    /// InvalidArgument if the family has no timestamps, `ts` is not their size, or `ts` is
    /// older than the current value (equal is a no-op).
    pub fn increase_full_history_ts_low<S: AsRef<[u8]>>(&self, cf: &impl AsColumnFamilyRef, ts: S) -> Result<()> {
        increase_full_history_ts_low(&self.inner, cfd_of(cf), ts.as_ref())
    }
    /// Column family `cf`'s `full_history_ts_low` (empty if never raised); InvalidArgument if
    /// the family has no timestamps.
    pub fn get_full_history_ts_low(&self, cf: &impl AsColumnFamilyRef) -> Result<Vec<u8>> {
        full_history_ts_low(cfd_of(cf))
    }
    #[allow(clippy::too_many_arguments)]
    fn ts_write(
        &self,
        op: TsOp,
        c: &ColumnFamilyData,
        key: &[u8],
        ts: &[u8],
        value: &[u8],
        wo: &WriteOptions,
    ) -> Result<()> {
        write_one_ts(&self.inner, c, op, key, ts, value, wo)
    }
}

/// Batch records with a user-defined timestamp (`key` followed by `ts`). A timestamp the
/// family cannot take (it has none, or `ts` is not their size) makes `DB::write` refuse the
/// batch with InvalidArgument; so does a record without one for a family with timestamps.
impl<const T: bool> crate::write_batch::WriteBatchWithTransaction<T> {
    /// Put `key` → `value` at timestamp `ts` in column family `cf`.
    pub fn put_cf_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) {
        self.ts_record(TsOp::Put, cf, key.as_ref(), ts.as_ref(), value.as_ref());
    }
    /// Delete `key` at timestamp `ts` in column family `cf`.
    pub fn delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(&mut self, cf: &impl AsColumnFamilyRef, key: K, ts: S) {
        self.ts_record(TsOp::Delete, cf, key.as_ref(), ts.as_ref(), &[]);
    }
    /// SingleDelete `key` at timestamp `ts` in column family `cf`.
    pub fn single_delete_cf_with_ts<K: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
    ) {
        self.ts_record(TsOp::SingleDelete, cf, key.as_ref(), ts.as_ref(), &[]);
    }
    /// A merge operand for `key` at timestamp `ts` in column family `cf`.
    pub fn merge_cf_with_ts<K: AsRef<[u8]>, V: AsRef<[u8]>, S: AsRef<[u8]>>(
        &mut self,
        cf: &impl AsColumnFamilyRef,
        key: K,
        ts: S,
        value: V,
    ) {
        self.ts_record(TsOp::Merge, cf, key.as_ref(), ts.as_ref(), value.as_ref());
    }
    fn ts_record(&mut self, op: TsOp, cf: &impl AsColumnFamilyRef, key: &[u8], ts: &[u8], value: &[u8]) {
        let c = cfd_of(cf);
        self.with_ts_cf_id(op, c.id, c.icmp.timestamp_size(), key, ts, value);
    }
}
