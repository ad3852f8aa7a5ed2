//! Which WALs two-phase commit still needs: the oldest WAL holding a prepared section that is
//! unresolved, or committed into a memtable not yet flushed.

use std::sync::Arc;

use super::state::{DbInner, DbState};
use crate::memtable::MemTable;

/// The oldest WAL that prepared transactions still need: an unresolved section, or the section
/// of a committed transaction whose data is in a memtable not yet flushed (`except` lists
/// memtables about to be installed as flushed). `u64::MAX` when none.
pub(crate) fn min_prep_log(db: &DbInner, st: &DbState, except: &[&Arc<MemTable>]) -> u64 {
    let mems = st
        .cfs
        .values()
        .flat_map(|m| std::iter::once(&m.mem).chain(m.imm.iter().map(|i| &i.mem)))
        .filter(|m| !except.iter().any(|e| Arc::ptr_eq(e, m)))
        .filter_map(|m| m.min_prep_log())
        .min();
    mems.into_iter()
        .chain(db.two_pc.oldest_prep_log())
        .min()
        .unwrap_or(u64::MAX)
}
