//! User-defined timestamps in the engine (`docs/user-timestamps.md`): writes with a timestamp,
//! point lookups of families with timestamps (through an iterator at the read timestamp, so
//! the fast lookup path of families without them is untouched), and `full_history_ts_low`.

use std::cmp::Ordering;
use std::sync::Arc;

use super::column_family::ColumnFamilyData;
use super::state::DbInner;
use super::{checks, iter, multi_get, read, write};
use crate::error::{Error, Result};
use crate::lsm::version_edit::VersionEdit;
use crate::options::{ReadOptions, WriteOptions};
use crate::table::pinnable::ValueOut;
use crate::write_batch::{TsOp, WriteBatch};

/// True if a read of `cf` with `ro` needs the timestamp path (the family has timestamps, or
/// the read gives one, which the checks then refuse).
#[inline]
fn ts_read(cf: &ColumnFamilyData, ro: &ReadOptions) -> bool {
    ro.timestamp.is_some() || ro.iter_start_ts.is_some() || cf.icmp.timestamp_size() > 0
}

/// One record with a timestamp for family `c` (`put_with_ts`, `delete_cf_with_ts`, ...).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_one_ts(
    db: &Arc<DbInner>,
    c: &ColumnFamilyData,
    op: TsOp,
    key: &[u8],
    ts: &[u8],
    value: &[u8],
    wo: &WriteOptions,
) -> Result<()> {
    checks::check_writable(c)?;
    let ts_sz = c.icmp.timestamp_size();
    crate::user_timestamp::check_ts(ts_sz, ts, op.name())?;
    if op == TsOp::Merge {
        checks::validate_merge(c)?;
    }
    c.icmp
        .user_comparator()
        .validate_key(&crate::user_timestamp::key_with_ts(key, ts))?;
    let mut b = WriteBatch::new();
    b.with_ts_cf_id(op, c.id, ts_sz, key, ts, value);
    write::write(db, wo, b, false)
}

/// The read options of a point lookup through an iterator: no bounds, total order, the
/// newest version only.
fn lookup_options(ro: &ReadOptions) -> ReadOptions {
    let mut o = ro.clone();
    o.iterate_lower_bound = None;
    o.iterate_upper_bound = None;
    o.prefix_same_as_start = false;
    o.total_order_seek = true;
    o.auto_prefix_mode = false;
    o.iter_start_ts = None;
    o
}

/// The iterator positioned on `key` at the read's timestamp, or None if the key has no visible
/// version.
fn position(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    ro: &ReadOptions,
    key: &[u8],
) -> Result<Option<iter::DBRawIterator>> {
    checks::check_read_ts(cf, ro, false)?;
    let mut it = iter::new_raw_iterator(db, cf, lookup_options(ro));
    it.seek(key);
    it.status()?;
    let found = it
        .key()
        .is_some_and(|k| cf.icmp.compare_without_ts(k, false, key, false) == Ordering::Equal);
    Ok(found.then_some(it))
}

/// `get` / `get_pinned` of `key` in `cf` (timestamps dispatched here, the rest to `read::get`).
#[inline]
pub(crate) fn get<V: ValueOut>(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    ro: &ReadOptions,
    key: &[u8],
) -> Result<Option<V>> {
    if !ts_read(cf, ro) {
        return read::get(db, cf, ro, key);
    }
    Ok(position(db, cf, ro, key)?.and_then(|it| it.value().map(|v| V::from_vec(v.to_vec()))))
}

/// `get_entity` of `key` in `cf`.
pub(crate) fn get_entity(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    ro: &ReadOptions,
    key: &[u8],
) -> Result<Option<Vec<u8>>> {
    if !ts_read(cf, ro) {
        return read::get_entity(db, cf, ro, key);
    }
    Ok(position(db, cf, ro, key)?.and_then(|it| it.entity_encoding()))
}

/// `multi_get` of `keys` in `cf` (with timestamps: one lookup per key).
pub(crate) fn multi_get<V: ValueOut, K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    ro: &ReadOptions,
    keys: I,
) -> Vec<Result<Option<V>>> {
    if !ts_read(cf, ro) {
        return multi_get::multi_get(db, cf, ro, keys);
    }
    keys.into_iter().map(|k| get(db, cf, ro, k.as_ref())).collect()
}

/// `multi_get_entity` of `keys` in `cf`.
pub(crate) fn multi_get_entity<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    ro: &ReadOptions,
    keys: I,
) -> Vec<Result<Option<Vec<u8>>>> {
    if !ts_read(cf, ro) {
        return multi_get::multi_get_entity(db, cf, ro, keys);
    }
    keys.into_iter().map(|k| get_entity(db, cf, ro, k.as_ref())).collect()
}

/// Whether a read of `cf` with `ro` goes the timestamp way (for callers batching families).
pub(crate) fn needs_ts_path(cf: &ColumnFamilyData, ro: &ReadOptions) -> bool {
    ts_read(cf, ro)
}

/// Raise `cf`'s `full_history_ts_low` to `ts` (RocksDB's `IncreaseFullHistoryTsLow`), written
/// to the MANIFEST (tag 8198) before it takes effect. InvalidArgument if the family has no
/// timestamps, `ts` is not the comparator's size, or `ts` is older than the current value.
pub(crate) fn increase_full_history_ts_low(db: &Arc<DbInner>, cf: &Arc<ColumnFamilyData>, ts: &[u8]) -> Result<()> {
    checks::check_writable(cf)?;
    crate::user_timestamp::check_ts(cf.icmp.timestamp_size(), ts, "increase_full_history_ts_low")?;
    let mut st = db.state.lock();
    let cur = cf.full_history_ts_low.lock().clone();
    if !cur.is_empty() {
        match cf.icmp.user_comparator().compare_timestamp(ts, &cur) {
            Ordering::Less => {
                return Err(Error::invalid(format!(
                    "increase_full_history_ts_low: cannot decrease column family {:?}'s full_history_ts_low",
                    cf.name
                )))
            }
            Ordering::Equal => return Ok(()),
            Ordering::Greater => {}
        }
    }
    let mut edit = VersionEdit {
        column_family: cf.id,
        full_history_ts_low: Some(ts.to_vec()),
        ..Default::default()
    };
    db.log_and_apply(&mut st, &mut edit)?;
    if let Some(v) = st.versions.cfs.get_mut(&cf.id) {
        v.full_history_ts_low = ts.to_vec();
    }
    *cf.full_history_ts_low.lock() = ts.to_vec();
    Ok(())
}

/// `cf`'s `full_history_ts_low` (empty if never set); InvalidArgument if the family has no
/// timestamps.
pub(crate) fn full_history_ts_low(cf: &ColumnFamilyData) -> Result<Vec<u8>> {
    if cf.icmp.timestamp_size() == 0 {
        return Err(Error::invalid(format!(
            "get_full_history_ts_low: column family {:?}'s comparator has no timestamps",
            cf.name
        )));
    }
    Ok(cf.full_history_ts_low.lock().clone())
}

/// A manual compaction's part of timestamps (`compact_range` of family `cf`): raise
/// `full_history_ts_low` first if `co` says so, and, for a family with timestamps, the range's
/// keys (given without one) as stored keys: from the newest version of `begin` to the oldest of
/// `end`. None for a family without timestamps.
#[allow(clippy::type_complexity)]
pub(crate) fn manual_range(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    co: &crate::options::types::CompactOptions,
) -> Result<Option<(Option<Vec<u8>>, Option<Vec<u8>>)>> {
    if let Some(ts) = &co.full_history_ts_low {
        increase_full_history_ts_low(db, cf, ts)?;
    }
    let ts_sz = cf.icmp.timestamp_size();
    if ts_sz == 0 {
        return Ok(None);
    }
    let with = |k: &[u8], b: u8| [k, &vec![b; ts_sz][..]].concat();
    Ok(Some((begin.map(|k| with(k, 0xff)), end.map(|k| with(k, 0)))))
}
