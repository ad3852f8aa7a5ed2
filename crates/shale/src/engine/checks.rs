//! Argument checks of the write path: a family is live and writable, a key suits its
//! comparator, a batch's records are valid before they reach the WAL.

use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::error::{Error, Result};
use crate::key::UserCmpKind;
use crate::merge_operator::MergeOperator;
use crate::write_batch::{BatchHandler, WriteBatch};
use std::cmp::Ordering;
use std::sync::Arc;

/// Checks a batch's records before they reach the WAL: each family exists, each key suits the
/// family's comparator, range deletions are ordered and merges have an operator.
struct Validate<'a> {
    db: &'a DbInner,
    cf: Arc<ColumnFamilyData>,
    keys: bool,
    /// The batch, when some of its records were written with timestamps (their families are
    /// then checked record by record).
    ts: Option<&'a WriteBatch>,
    /// Ordinal of the next counted record.
    ordinal: u32,
}

impl Validate<'_> {
    #[inline(always)]
    fn key(&mut self, k: &[u8]) -> Result<()> {
        let i = self.ordinal;
        self.ordinal = i.wrapping_add(1);
        if !self.keys {
            return Ok(());
        }
        let has_ts = self.ts.is_some_and(|b| b.record_has_ts(i));
        check_ts_use(&self.cf, has_ts)?;
        self.cf.icmp.user_comparator().validate_key(k)
    }
}

/// A write to `cf` with (`has_ts`) or without a timestamp: InvalidArgument unless that matches
/// whether the family's comparator has timestamps (RocksDB refuses both mismatches).
#[inline]
pub(crate) fn check_ts_use(cf: &ColumnFamilyData, has_ts: bool) -> Result<()> {
    let ts_sz = cf.icmp.timestamp_size();
    if (ts_sz > 0) == has_ts {
        return Ok(());
    }
    Err(Error::invalid(if has_ts {
        format!(
            "column family {:?}: a write with a timestamp, but its comparator has no timestamps",
            cf.name
        )
    } else {
        format!(
            "column family {:?}: its comparator has {ts_sz}-byte timestamps, so writes need one (the _with_ts calls)",
            cf.name
        )
    }))
}

impl BatchHandler for Validate<'_> {
    fn put(&mut self, k: &[u8], _v: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn delete(&mut self, k: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn single_delete(&mut self, k: &[u8]) -> Result<()> {
        self.key(k)
    }
    fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
        self.ordinal = self.ordinal.wrapping_add(1);
        super::checks::validate_range(&self.cf, b, e)
    }
    fn merge(&mut self, k: &[u8], _v: &[u8]) -> Result<()> {
        self.key(k)?;
        super::checks::validate_merge(&self.cf)
    }
    fn put_entity(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        self.key(k)?;
        validate_entity(&self.cf, v)
    }
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        self.cf = live_cf(self.db, cf)?;
        self.keys = self.cf.icmp.kind() != UserCmpKind::Bytewise || self.ts.is_some();
        Ok(())
    }
}

/// The live family with id `cf`, or InvalidArgument (never created, or dropped).
pub(crate) fn live_cf(db: &DbInner, cf: u32) -> Result<Arc<ColumnFamilyData>> {
    db.cf_by_id(cf).filter(|c| !c.is_dropped()).ok_or_else(|| {
        Error::invalid(format!(
            "column family id {cf} does not exist (never created, or dropped)"
        ))
    })
}

/// The comparator's check of a key about to be written ([`Comparator::validate_key`]); the
/// bytewise comparator accepts everything, so its writes skip the call.
///
/// [`Comparator::validate_key`]: crate::Comparator::validate_key
#[inline]
pub(crate) fn check_key(cf: &ColumnFamilyData, k: &[u8]) -> Result<()> {
    if cf.icmp.kind() == UserCmpKind::Bytewise {
        return Ok(());
    }
    check_ts_use(cf, false)?;
    cf.icmp.user_comparator().validate_key(k)
}

/// A write to family `cf` is refused once the family is dropped (a handle outlives the drop).
pub(crate) fn check_writable(cf: &ColumnFamilyData) -> Result<()> {
    if cf.is_dropped() {
        return Err(Error::invalid(format!("column family {:?} was dropped", cf.name)));
    }
    Ok(())
}

/// Check that every record of a user batch can be applied (before anything reaches the WAL).
pub(crate) fn validate_batch(db: &DbInner, b: &WriteBatch) -> Result<()> {
    let cf = db.default_cf.clone();
    let ts = b.has_ts_records().then_some(b);
    let keys = cf.icmp.kind() != UserCmpKind::Bytewise || ts.is_some();
    b.handle(&mut Validate {
        db,
        cf,
        keys,
        ts,
        ordinal: 0,
    })
}

pub(crate) fn validate_range(db: &ColumnFamilyData, begin: &[u8], end: &[u8]) -> Result<()> {
    super::checks::check_key(db, begin)?;
    super::checks::check_key(db, end)?;
    if db.icmp.compare_user(begin, end) == Ordering::Greater {
        return Err(Error::invalid("delete_range: begin key comes after end key"));
    }
    // Only block-based tables have a range-deletion block (RocksDB refuses too): refused at the
    // call rather than by the flush that could not write the file.
    if !matches!(db.opts.table_factory, crate::options::TableFactory::BlockBased) {
        return Err(Error::NotSupported(
            "delete_range needs block-based tables (Options::table_factory is plain or cuckoo)".into(),
        ));
    }
    Ok(())
}

/// An entity about to be written: its encoding decodes (a batch made from raw bytes may carry
/// anything) and the family's tables can hold it (cuckoo tables hold only puts and deletes).
pub(crate) fn validate_entity(db: &ColumnFamilyData, entity: &[u8]) -> Result<()> {
    crate::wide_columns::decode(entity)?;
    if matches!(db.opts.table_factory, crate::options::TableFactory::Cuckoo(_)) {
        return Err(Error::NotSupported(
            "put_entity: cuckoo tables hold only puts and deletes (Options::table_factory)".into(),
        ));
    }
    Ok(())
}

pub(crate) fn validate_merge(db: &ColumnFamilyData) -> Result<()> {
    if db.opts.merge_operator.is_none() {
        return Err(Error::invalid(
            "merge: no merge operator is configured (Options::merge_operator)",
        ));
    }
    if matches!(db.opts.table_factory, crate::options::TableFactory::Cuckoo(_)) {
        return Err(Error::NotSupported(
            "merge: cuckoo tables hold only puts and deletes (Options::table_factory)".into(),
        ));
    }
    Ok(())
}

/// The configured operator, or the error a read needing one returns.
pub(crate) fn merge_op(db: &ColumnFamilyData) -> Result<&dyn MergeOperator> {
    db.opts.merge_operator.as_deref().ok_or_else(|| {
        Error::invalid(
            "the database holds merge operands but no merge operator is configured (Options::merge_operator)",
        )
    })
}

/// The timestamps of a read of `cf` (`ReadOptions::set_timestamp`, `set_iter_start_ts`), as
/// RocksDB checks them: InvalidArgument if the family has timestamps and the read gives none,
/// if it has none and the read gives one, if a timestamp is not the comparator's size, or if
/// the read timestamp is older than the family's `full_history_ts_low` (those versions may be
/// gone). `iter_start_ts` is only taken by iterators (`iterator`).
pub(crate) fn check_read_ts(cf: &ColumnFamilyData, ro: &crate::options::ReadOptions, iterator: bool) -> Result<()> {
    let ts_sz = cf.icmp.timestamp_size();
    if ts_sz == 0 && ro.timestamp.is_none() && ro.iter_start_ts.is_none() {
        return Ok(());
    }
    let Some(ts) = &ro.timestamp else {
        if ts_sz == 0 {
            return Err(Error::invalid(
                "ReadOptions: iter_start_ts is set, but the column family's comparator has no timestamps",
            ));
        }
        return Err(Error::invalid(format!(
            "ReadOptions: column family {:?} has user-defined timestamps, so reads need ReadOptions::set_timestamp",
            cf.name
        )));
    };
    crate::user_timestamp::check_ts(ts_sz, ts, "ReadOptions::set_timestamp")?;
    if let Some(s) = &ro.iter_start_ts {
        if !iterator {
            return Err(Error::invalid("ReadOptions: iter_start_ts is for iterators only"));
        }
        crate::user_timestamp::check_ts(ts_sz, s, "ReadOptions::set_iter_start_ts")?;
    }
    let low = cf.full_history_ts_low.lock();
    if !low.is_empty() && cf.icmp.user_comparator().compare_timestamp(ts, &low) == Ordering::Less {
        return Err(Error::invalid(format!(
            "ReadOptions: read timestamp {} is older than column family {:?}'s full_history_ts_low {}",
            hex(ts),
            cf.name,
            hex(&low)
        )));
    }
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
