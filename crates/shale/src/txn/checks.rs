//! What both transaction engines check and share: the newest write of a key (conflict
//! checks), key validation, keys printed in errors, the options a transaction DB opens with.

use std::sync::atomic::Ordering as AO;
use std::sync::Arc;

use crate::engine::column_family::ColumnFamilyData;
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, vt, SequenceNumber, MAX_SEQUENCE};
use crate::memtable::MemTable;
use crate::options::Options;

/// The newest write of a key, as far as the checked sources know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Latest {
    /// The newest entry for the key has this sequence number.
    Seq(SequenceNumber),
    /// No write of the key after `floor` (the sources hold every write after it).
    NoneAfter(SequenceNumber),
}

/// The sequence number of the newest entry for `key` in `mem`, if any.
fn mem_latest(mem: &Arc<MemTable>, key: &[u8]) -> Option<SequenceNumber> {
    let mut it = mem.iter();
    it.seek(&make_internal_key(key, MAX_SEQUENCE, vt::FOR_SEEK));
    if !it.valid() {
        return None;
    }
    let p = parse_internal_key(it.key()).ok()?;
    (mem.icmp().compare_user(p.user_key, key) == std::cmp::Ordering::Equal).then_some(p.seq)
}

/// The newest write of `key` in family `cfd`'s memtables (mutable, immutable, history). With
/// `full`, a key the memtables do not hold is looked up in the table files too when the
/// memtables do not reach back to `since` (the pessimistic DB's snapshot validation); without
/// it (the optimistic DB, RocksDB's `cache_only`) the answer may be `NoneAfter` a floor above
/// `since`.
pub(crate) fn latest_seq(
    db: &Arc<DbInner>,
    cfd: &Arc<ColumnFamilyData>,
    key: &[u8],
    since: SequenceNumber,
    full: bool,
) -> Result<Latest> {
    let mems: Vec<Arc<MemTable>> = {
        let st = db.state.lock();
        let m = st.cf(cfd.id)?;
        std::iter::once(m.mem.clone())
            .chain(m.imm.iter().rev().map(|i| i.mem.clone()))
            .chain(m.history.iter().rev().cloned())
            .collect()
    };
    for mem in &mems {
        if let Some(s) = mem_latest(mem, key) {
            return Ok(Latest::Seq(s));
        }
    }
    let floor = mems.last().map_or(0, |m| m.created_seq());
    // Every write after `floor` is in the memtables: when that covers `since`, the answer is
    // known without reading the table files.
    if !full || floor <= since {
        return Ok(Latest::NoneAfter(floor));
    }
    // Every source, newest entry first.
    let sv = cfd.super_version();
    let mut it = crate::engine::iter::internal_iterator(cfd, &sv, true, true, None);
    it.seek(&make_internal_key(key, MAX_SEQUENCE, vt::FOR_SEEK));
    if it.valid() {
        let p = parse_internal_key(it.key())?;
        if cfd.icmp.compare_user(p.user_key, key) == std::cmp::Ordering::Equal {
            return Ok(Latest::Seq(p.seq));
        }
    }
    it.status()?;
    Ok(Latest::NoneAfter(0))
}

/// Check that `key` was not written after sequence `since` (RocksDB's `CheckKeyForConflicts`):
/// Busy on a conflict, TryAgain when the memtables do not reach back far enough to tell.
pub(crate) fn check_key(
    db: &Arc<DbInner>,
    cfd: &Arc<ColumnFamilyData>,
    key: &[u8],
    since: u64,
    full: bool,
) -> Result<()> {
    match latest_seq(db, cfd, key, since, full)? {
        Latest::Seq(s) if s > since => Err(Error::Busy(format!(
            "write conflict: key {} of column family {} was written at sequence {s}, after the transaction's {since}",
            printable(key),
            cfd.name
        ))),
        Latest::Seq(_) => Ok(()),
        Latest::NoneAfter(floor) if floor > since => Err(Error::TryAgain(format!(
            "cannot check key {} for conflicts since sequence {since}: the memtables hold only changes after {floor}; \
             a larger max_write_buffer_size_to_maintain keeps more history",
            printable(key)
        ))),
        Latest::NoneAfter(_) => Ok(()),
    }
}

/// A key for messages: text when printable, else hex.
pub(crate) fn printable(key: &[u8]) -> String {
    if key.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("'{}'", String::from_utf8_lossy(key))
    } else {
        let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}

/// The options the transaction DBs open with: memtable history for conflict checks when the
/// caller asked for none (as RocksDB's transaction DBs do).
pub(crate) fn txn_options(opts: &Options) -> Options {
    let mut o = opts.clone();
    if o.max_write_buffer_size_to_maintain == 0 {
        o.max_write_buffer_size_to_maintain = -1;
    }
    o
}

/// The DB's last published sequence number.
pub(crate) fn last_seq(db: &DbInner) -> SequenceNumber {
    db.last_seq.load(AO::Acquire)
}
