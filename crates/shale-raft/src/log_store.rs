//! openraft's `RaftLogStorage` on Shale: the log in family `log` (big-endian index keys), the
//! vote, committed id and last purged id in family `meta`; every change is a synced write.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, RaftLogId, RaftLogReader, StorageError, StorageIOError, Vote};
use shale::WriteBatch;

use crate::store::{
    blocking, decode_json, encode_json, read_err, sync_opts, write_err, Inner, StorageResult, K_COMMITTED,
    K_LAST_PURGED, K_VOTE,
};
use crate::types::{NodeId, TypeConfig};

/// The log and the vote of a node. Cheap to clone (one shared database).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Inner>,
}

/// A key past every 8-byte index key: the end of "everything from here on".
const END_OF_LOG: [u8; 9] = [0xff; 9];

impl LogStore {
    pub(crate) fn new(inner: Arc<Inner>) -> LogStore {
        LogStore { inner }
    }

    fn last_entry_id(&self) -> shale::error::Result<Option<LogId<NodeId>>> {
        let mut it = self.inner.db.raw_iterator_cf(&self.inner.log);
        it.seek_to_last();
        it.status()?;
        match it.value() {
            Some(v) => Ok(Some(*decode_json::<Entry<TypeConfig>>("log", v)?.get_log_id())),
            None => Ok(None),
        }
    }

    fn read_range(&self, start: u64, end: Option<u64>) -> shale::error::Result<Vec<Entry<TypeConfig>>> {
        let mut out = Vec::new();
        let mut it = self.inner.db.raw_iterator_cf(&self.inner.log);
        it.seek(start.to_be_bytes());
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let idx = index_of(k)?;
            if end.is_some_and(|e| idx >= e) {
                break;
            }
            let ent: Entry<TypeConfig> = decode_json(&format!("log/{idx}"), v)?;
            if ent.log_id.index != idx {
                return Err(shale::Error::corruption(
                    format!("log/{idx}"),
                    None,
                    format!("entry under key {idx} has index {}", ent.log_id.index),
                ));
            }
            out.push(ent);
            it.next();
        }
        it.status()?;
        Ok(out)
    }
}

fn index_of(k: &[u8]) -> shale::error::Result<u64> {
    let b: [u8; 8] = k
        .try_into()
        .map_err(|_| shale::Error::corruption("log", None, format!("log key of {} bytes (not 8)", k.len())))?;
    Ok(u64::from_be_bytes(b))
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StorageResult<Vec<Entry<TypeConfig>>> {
        let start = match range.start_bound() {
            Bound::Included(x) => *x,
            Bound::Excluded(x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(x) => x.checked_add(1),
            Bound::Excluded(x) => Some(*x),
            Bound::Unbounded => None,
        };
        let me = self.clone();
        blocking(move || me.read_range(start, end))
            .await
            .map_err(|e| StorageIOError::read_logs(&e).into())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> StorageResult<LogState<TypeConfig>> {
        let me = self.clone();
        let last_purged: Option<LogId<NodeId>> = blocking(move || me.inner.get_meta(K_LAST_PURGED))
            .await
            .map_err(|e| read_err(&e))?;
        let me = self.clone();
        let last = blocking(move || me.last_entry_id())
            .await
            .map_err(|e| StorageIOError::read_logs(&e))?;
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last.or(last_purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StorageResult<()> {
        let (i, v) = (self.inner.clone(), encode_json(vote));
        blocking(move || i.db.put_cf_opt(&i.meta, K_VOTE, v, &sync_opts()))
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> StorageResult<Option<Vote<NodeId>>> {
        let i = self.inner.clone();
        blocking(move || i.get_meta(K_VOTE))
            .await
            .map_err(|e| StorageIOError::read_vote(&e).into())
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StorageResult<()> {
        let (i, v) = (self.inner.clone(), encode_json(&committed));
        blocking(move || i.db.put_cf_opt(&i.meta, K_COMMITTED, v, &sync_opts()))
            .await
            .map_err(|e| write_err(&e))
    }

    async fn read_committed(&mut self) -> StorageResult<Option<LogId<NodeId>>> {
        let i = self.inner.clone();
        let c: Option<Option<LogId<NodeId>>> = blocking(move || i.get_meta(K_COMMITTED))
            .await
            .map_err(|e| read_err(&e))?;
        Ok(c.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StorageResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let i = self.inner.clone();
        let mut batch = WriteBatch::new();
        for ent in entries {
            batch.put_cf(&i.log, ent.log_id.index.to_be_bytes(), encode_json(&ent));
        }
        // A synced write: when it returns, the entries are in the WAL on disk. Only then is
        // openraft told they are flushed.
        match blocking(move || i.db.write_opt(batch, &sync_opts())).await {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(StorageIOError::write_logs(&e).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let i = self.inner.clone();
        let mut batch = WriteBatch::new();
        batch.delete_range_cf(&i.log, log_id.index.to_be_bytes(), END_OF_LOG);
        blocking(move || i.db.write_opt(batch, &sync_opts()))
            .await
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StorageResult<()> {
        let i = self.inner.clone();
        // The purged id and the range delete in one batch: after a crash both or neither.
        let mut batch = WriteBatch::new();
        batch.put_cf(&i.meta, K_LAST_PURGED, encode_json(&log_id));
        match log_id.index.checked_add(1) {
            Some(end) => batch.delete_range_cf(&i.log, 0u64.to_be_bytes(), end.to_be_bytes()),
            None => batch.delete_range_cf(&i.log, 0u64.to_be_bytes(), END_OF_LOG),
        }
        blocking(move || i.db.write_opt(batch, &sync_opts()))
            .await
            .map_err(|e| -> StorageError<NodeId> { StorageIOError::write_logs(&e).into() })
    }
}
