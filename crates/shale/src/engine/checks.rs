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
}

impl Validate<'_> {
    #[inline(always)]
    fn key(&self, k: &[u8]) -> Result<()> {
        if self.keys {
            self.cf.icmp.user_comparator().validate_key(k)
        } else {
            Ok(())
        }
    }
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
        self.keys = self.cf.icmp.kind() != UserCmpKind::Bytewise;
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
    let keys = cf.icmp.kind() != UserCmpKind::Bytewise;
    b.handle(&mut Validate { db, cf, keys })
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
