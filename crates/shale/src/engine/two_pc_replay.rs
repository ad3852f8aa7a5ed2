//! The WAL replay of two-phase-commit records at open: prepared sections set aside as
//! recovered transactions, commit markers inserting them, rollback markers dropping them.

use std::sync::Arc;

use super::mem_insert::MemInserter;
use super::state::DbInner;
use super::two_pc::RecoveredTxn;
use crate::error::{Error, Result};
use crate::memtable::MemTable;
use crate::write_batch::{BatchHandler, WriteBatch};

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
    fn put_entity(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
        match &mut self.rebuilding {
            Some(b) => {
                b.put_entity_raw_cf_id(self.cf, k, v);
                Ok(())
            }
            None => self.ins.put_entity(k, v),
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
        t.batch.handle(&mut self.ins)?;
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
