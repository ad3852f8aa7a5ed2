//! Two-phase commit (RocksDB's WRITE_COMMITTED policy): what the DB keeps about prepared
//! sections — which WALs hold one still unresolved, the transactions recovered from the WAL at
//! open — and the WAL replay of the markers. See docs/transactions.md, "Two-phase commit".
//!
//! Invariant: a WAL holding a prepared section is kept while the transaction is unresolved
//! (`prep_logs`), and after its commit while a memtable holds the committed data
//! (`MemTable::min_prep_log`): recovery replays a commit marker from the prepared section.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::write_batch::WriteBatch;

/// A prepared section found in the WAL with no commit or rollback marker after it.
#[derive(Clone, Debug)]
pub(crate) struct RecoveredTxn {
    /// The WAL holding the prepared section.
    pub log: u64,
    /// The section's records (no markers).
    pub batch: WriteBatch,
}

/// The DB's two-phase-commit state.
#[derive(Default)]
pub(crate) struct TwoPcState {
    /// WAL number -> prepared sections in it whose transaction is not resolved yet (RocksDB's
    /// `LogsWithPrepTracker`).
    prep_logs: Mutex<BTreeMap<u64, usize>>,
    /// Transactions recovered at open, by name, until the `TransactionDB` takes them.
    pub(crate) recovered: Mutex<BTreeMap<Vec<u8>, RecoveredTxn>>,
}

impl TwoPcState {
    /// WAL `log` now holds one more unresolved prepared section.
    pub(crate) fn mark_prep_log(&self, log: u64) {
        *self.prep_logs.lock().entry(log).or_insert(0) += 1;
    }
    /// A prepared section of WAL `log` was committed or rolled back.
    pub(crate) fn unmark_prep_log(&self, log: u64) {
        let mut m = self.prep_logs.lock();
        if let Some(n) = m.get_mut(&log) {
            *n -= 1;
            if *n == 0 {
                m.remove(&log);
            }
        }
    }
    /// The oldest WAL holding an unresolved prepared section.
    pub(crate) fn oldest_prep_log(&self) -> Option<u64> {
        self.prep_logs.lock().keys().next().copied()
    }
}
