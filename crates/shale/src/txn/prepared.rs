//! Two-phase commit on [`Transaction`] (RocksDB's WRITE_COMMITTED policy): `set_name`,
//! `prepare`, then `commit` or `rollback` of the prepared transaction, and the prepared
//! transactions a `TransactionDB` recovers from the WAL at open.
//!
//! On disk (RocksDB's format, checked against RocksDB 7.8):
//! - prepare: one WAL record, the transaction's batch with `BEGIN_PREPARE_XID` (0x09) right
//!   after the header and `END_PREPARE_XID` (0x0A) + name at the end; the count is the data
//!   records'; the sequence number is the one the next write takes, and none is used up.
//!   Nothing goes to the memtables; the WAL is recorded as holding a prepared section.
//! - commit: one WAL record of count 0 with `COMMIT_XID` (0x0B) + name; the prepared records go
//!   into the memtables with the sequence numbers from the record's on (recovery replays them
//!   the same way), and the memtables keep the prepared section's WAL alive until flushed.
//! - rollback: one WAL record of count 0 with `ROLLBACK_XID` (0x0C) + name.

use std::collections::HashMap;
use std::time::Duration;

use super::locks::LockRequest;
use super::transaction::{Kind, Recovered, State, Tracked, Transaction, TxnCore, TxnState};
use super::wbwi::WriteBatchWithIndex;
use crate::engine::checks::validate_batch;
use crate::engine::write::write_two_pc;
use crate::engine::write_thread::TwoPcWrite;
use crate::error::{Error, Result};
use crate::write_batch::WriteBatch;

/// Longest transaction name (RocksDB's limit).
const MAX_NAME: usize = 512;

/// Turn the prepared sections the WAL replay found into transactions holding their locks
/// (RocksDB's `PessimisticTransactionDB::Initialize`). A key locked by two recovered
/// transactions (impossible unless the WAL was written by something that did not lock) fails
/// the open.
pub(crate) fn adopt_recovered(core: &TxnCore) -> Result<()> {
    let found = std::mem::take(&mut *core.inner().two_pc.recovered.lock());
    let Kind::Pessimistic { locks, .. } = &core.kind else {
        return Ok(());
    };
    let mut out = Vec::new();
    for (name, t) in found {
        let id = core.new_id();
        locks.begin(id, None);
        let wbwi = WriteBatchWithIndex::from_batch(t.batch)?;
        let mut tracked = HashMap::new();
        for rec in wbwi.batch().records() {
            use crate::write_batch::BatchRecord as R;
            let (cf, key) = match rec? {
                R::Put { cf, key, .. }
                | R::Delete { cf, key }
                | R::SingleDelete { cf, key }
                | R::Merge { cf, key, .. }
                | R::WideColumnEntity { cf, key, .. } => (cf, key),
                _ => continue,
            };
            let req = LockRequest {
                txn: id,
                exclusive: true,
                timeout: Some(Duration::ZERO),
                deadlock_depth: None,
            };
            locks.lock(cf, key, &req).map_err(|e| {
                Error::corrupt(format!(
                    "recovered prepared transaction {:?}: key locked by another one ({e})",
                    String::from_utf8_lossy(&name)
                ))
            })?;
            tracked.insert(
                (cf, key.to_vec()),
                Tracked {
                    seq: 0,
                    exclusive: true,
                },
            );
        }
        // Prepared: its locks can no longer be stolen.
        locks.start_commit(id)?;
        core.names.lock().insert(name.clone());
        out.push(Recovered {
            id,
            name,
            wbwi,
            tracked,
            log: t.log,
        });
    }
    core.recovered.lock().extend(out);
    Ok(())
}

/// The recovered prepared transactions not handed out yet, as transactions to commit or roll
/// back (each is handed out once).
pub(crate) fn take_recovered<D>(core: &TxnCore) -> Vec<Transaction<'_, D>> {
    std::mem::take(&mut *core.recovered.lock())
        .into_iter()
        .map(|r| Transaction::adopt(core, r.id, r.wbwi, r.tracked, r.name, r.log))
        .collect()
}

fn show(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

impl<D> Transaction<'_, D> {
    /// Name the transaction (needed by [`prepare`](Self::prepare)): 1 to 512 bytes, unique
    /// among the DB's live named transactions, set once, before prepare. InvalidArgument
    /// otherwise, as RocksDB's `SetName`; optimistic transactions cannot be named.
    pub fn set_name(&self, name: &[u8]) -> Result<()> {
        if let Kind::Optimistic { .. } = self.core.kind {
            return Err(Error::invalid(
                "optimistic transactions cannot be named (two-phase commit needs a TransactionDB)",
            ));
        }
        let mut st = self.st.lock();
        if let Some(e) = &st.bad {
            return Err(e.clone());
        }
        if st.state != State::Started {
            return Err(Error::invalid("the transaction is beyond the state for naming"));
        }
        if let Some(n) = &st.name {
            return Err(Error::invalid(format!(
                "the transaction has already been named {:?}",
                show(n)
            )));
        }
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(Error::invalid(format!(
                "a transaction name must be 1 to {MAX_NAME} bytes long, got {}",
                name.len()
            )));
        }
        if !self.core.names.lock().insert(name.to_vec()) {
            return Err(Error::invalid(format!(
                "transaction name {:?} is used by another live transaction (names must be unique)",
                show(name)
            )));
        }
        st.name = Some(name.to_vec());
        Ok(())
    }

    /// The name given by [`set_name`](Self::set_name) (or recovered from the WAL).
    pub fn get_name(&self) -> Option<Vec<u8>> {
        self.st.lock().name.clone()
    }

    /// Write the transaction's batch to the WAL as a prepared section (nothing reaches the
    /// memtables; the locks stay held). A later [`commit`](Self::commit) applies it, a
    /// [`rollback`](Self::rollback) drops it; after a crash the `TransactionDB` recovers it
    /// ([`prepared_transactions`](crate::TransactionDB::prepared_transactions)). The WAL is
    /// written even with `disable_wal`. InvalidArgument when the transaction has no name or
    /// was prepared, committed or rolled back already; Expired past its expiration.
    pub fn prepare(&self) -> Result<()> {
        let Kind::Pessimistic { locks, .. } = &self.core.kind else {
            return Err(Error::invalid(
                "two-phase commit is not supported for optimistic transactions",
            ));
        };
        let mut st = self.st.lock();
        if let Some(e) = &st.bad {
            return Err(e.clone());
        }
        match st.state {
            State::Started => {}
            State::Prepared => return Err(Error::invalid("the transaction has already been prepared")),
            State::Committed => return Err(Error::invalid("the transaction has already been committed")),
            State::RolledBack => return Err(Error::invalid("the transaction has already been rolled back")),
        }
        let Some(name) = st.name.clone() else {
            return Err(Error::invalid(
                "cannot prepare a transaction that has not been named (set_name)",
            ));
        };
        // Validate first: validate_batch runs the user comparator, and a panic there must not
        // leave the transaction marked as committing (its locks could then never be taken over
        // past its expiration).
        let data = st.wbwi.batch();
        let r = data
            .validate()
            .and_then(|()| validate_batch(self.db(), data))
            .and_then(|()| locks.start_commit(self.id))
            .and_then(|()| {
                write_two_pc(
                    self.db(),
                    WriteBatch::prepared(data, &name),
                    TwoPcWrite::Prepare,
                    self.wo.sync,
                )
            });
        match r {
            Ok(log) => {
                st.state = State::Prepared;
                st.prep_log = log;
                // As RocksDB's MarkEndPrepare: the savepoints are gone.
                st.savepoints.clear();
                Ok(())
            }
            Err(e) => {
                st.state = State::RolledBack;
                self.release(&mut st);
                Err(e)
            }
        }
    }

    /// Commit a prepared transaction: the commit marker goes to the WAL and the prepared
    /// records into the memtables. On failure (a WAL error) the transaction stays prepared.
    pub(super) fn commit_prepared(&self, st: &mut TxnState) -> Result<()> {
        let name = st.name.clone().unwrap_or_default();
        let kind = TwoPcWrite::Commit {
            data: st.wbwi.batch().clone(),
            prep_log: st.prep_log,
        };
        write_two_pc(self.db(), WriteBatch::xid_marker(true, &name), kind, self.wo.sync)?;
        // The memtables written reference the prepared section's WAL from here on.
        self.db().two_pc.unmark_prep_log(st.prep_log);
        st.state = State::Committed;
        self.release(st);
        Ok(())
    }

    /// Roll back a prepared transaction: a rollback marker goes to the WAL. On failure the
    /// transaction stays prepared.
    pub(super) fn rollback_prepared(&self, st: &mut TxnState) -> Result<()> {
        let name = st.name.clone().unwrap_or_default();
        write_two_pc(
            self.db(),
            WriteBatch::xid_marker(false, &name),
            TwoPcWrite::Rollback,
            self.wo.sync,
        )?;
        self.db().two_pc.unmark_prep_log(st.prep_log);
        st.state = State::RolledBack;
        self.release(st);
        Ok(())
    }
}
