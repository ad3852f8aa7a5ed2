//! Two-phase commit (RocksDB's WRITE_COMMITTED policy): what the DB keeps about prepared
//! sections — which WALs hold one still unresolved, the transactions recovered from the WAL at
//! open — and the WAL replay of the markers. See docs/transactions.md, "Two-phase commit".
//!
//! Invariant: a WAL holding a prepared section is kept while the transaction is unresolved
//! (`prep_logs`), and after its commit while a memtable holds the committed data
//! (`MemTable::min_prep_log`): recovery replays a commit marker from the prepared section.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::db::write::MemInserter;
use crate::db::{state::DbInner, state::DbState};
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::write_batch::{BatchHandler, WriteBatch};

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

/// Replays one WAL record: data records go into the memtables (through a [`MemInserter`]);
/// a prepared section is set aside as a recovered transaction (its records take no sequence
/// number, as in RocksDB's WRITE_COMMITTED recovery); a commit marker inserts the recovered
/// section at the marker's sequence number; a rollback marker drops it. Without `allow_2pc`
/// (a DB not opened as a `TransactionDB`) a prepared section is NotSupported, as in RocksDB.
pub(crate) struct RecoveryInserter<'a> {
    pub ins: MemInserter<'a>,
    mems: &'a [(u32, Arc<MemTable>)],
    db: &'a DbInner,
    wal: u64,
    cf: u32,
    rebuilding: Option<WriteBatch>,
}

impl<'a> RecoveryInserter<'a> {
    pub(crate) fn new(db: &'a DbInner, mems: &'a [(u32, Arc<MemTable>)], seq: u64, wal: u64) -> Self {
        RecoveryInserter {
            ins: MemInserter::new(mems, seq),
            mems,
            db,
            wal,
            cf: 0,
            rebuilding: None,
        }
    }
    /// A record of a prepared section ends the record unfinished.
    pub(crate) fn check_finished(&self) -> Result<()> {
        if self.rebuilding.is_some() {
            return Err(Error::corrupt(
                "a prepared section (BEGIN_PREPARE_XID) has no END_PREPARE_XID marker",
            ));
        }
        Ok(())
    }
}

impl BatchHandler for RecoveryInserter<'_> {
    fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(b) => {
                b.put_cf_id(self.cf, k, v);
                Ok(())
            }
            None => self.ins.put(k, v),
        }
    }
    fn delete(&mut self, k: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(b) => {
                b.delete_cf_id(self.cf, k);
                Ok(())
            }
            None => self.ins.delete(k),
        }
    }
    fn single_delete(&mut self, k: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(b) => {
                b.single_delete_cf_id(self.cf, k);
                Ok(())
            }
            None => self.ins.single_delete(k),
        }
    }
    fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(t) => {
                t.delete_range_cf_id(self.cf, b, e);
                Ok(())
            }
            None => self.ins.delete_range(b, e),
        }
    }
    fn merge(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(b) => {
                b.merge_cf_id(self.cf, k, v);
                Ok(())
            }
            None => self.ins.merge(k, v),
        }
    }
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        self.cf = cf;
        self.ins.set_cf(cf)
    }
    fn mark_begin_prepare(&mut self, unprepare: bool, persisted: bool) -> Result<()> {
        if !self.db.opts.allow_2pc {
            return Err(Error::NotSupported(
                "the WAL holds prepared transactions (two-phase commit): open the DB with TransactionDB::open".into(),
            ));
        }
        if unprepare || persisted {
            // Their data is in the memtables before the commit: another recovery altogether.
            return Err(Error::NotSupported(format!(
                "the WAL holds a section of RocksDB's {} policy (tag {}); only WRITE_COMMITTED is supported",
                if unprepare {
                    "WRITE_UNPREPARED"
                } else {
                    "WRITE_PREPARED"
                },
                if unprepare { "0x13" } else { "0x12" },
            )));
        }
        if self.rebuilding.is_some() {
            return Err(Error::corrupt("a prepared section starts inside another one"));
        }
        self.rebuilding = Some(WriteBatch::new());
        Ok(())
    }
    fn mark_end_prepare(&mut self, xid: &[u8]) -> Result<()> {
        let Some(batch) = self.rebuilding.take() else {
            return Err(Error::corrupt("END_PREPARE_XID marker without BEGIN_PREPARE_XID"));
        };
        if xid.is_empty() {
            return Err(Error::corrupt("a prepared section with an empty transaction name"));
        }
        // As RocksDB, a later section with the same name replaces an unresolved one.
        self.db
            .two_pc
            .recovered
            .lock()
            .insert(xid.to_vec(), RecoveredTxn { log: self.wal, batch });
        Ok(())
    }
    fn mark_commit(&mut self, xid: &[u8]) -> Result<()> {
        if self.rebuilding.is_some() {
            return Err(Error::corrupt("a commit marker inside a prepared section"));
        }
        // Not found: the section's WAL was deleted because the committed data was flushed.
        let Some(t) = self.db.two_pc.recovered.lock().remove(xid) else {
            return Ok(());
        };
        for rec in t.batch.records() {
            if let Some(cf) = rec?.column_family() {
                if let Some((_, m)) = self.mems.iter().find(|(id, _)| *id == cf) {
                    m.ref_prep_log(t.log);
                }
            }
        }
        // The section's records start in the default family; then back to the marker's.
        self.ins.set_cf(0)?;
        t.batch.iterate(&mut self.ins)?;
        self.ins.set_cf(self.cf)
    }
    fn mark_rollback(&mut self, xid: &[u8]) -> Result<()> {
        if self.rebuilding.is_some() {
            return Err(Error::corrupt("a rollback marker inside a prepared section"));
        }
        self.db.two_pc.recovered.lock().remove(xid);
        Ok(())
    }
}
