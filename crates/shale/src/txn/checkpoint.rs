//! Checkpoints of a [`TransactionDB`] (the `rocksdb` crate's `TransactionDBCheckpoint`): the
//! checkpoint of its DB, whose WALs keep the prepared transactions not yet committed, so a
//! `TransactionDB` opened on the checkpoint recovers them as it would on the original.

use std::path::Path;

use super::pessimistic::TransactionDB;
use crate::api::{Checkpoint, ThreadMode};
use crate::error::Result;

/// Makes checkpoints of one open [`TransactionDB`], as the `rocksdb` crate's
/// `TransactionDBCheckpoint`; the calls are those of [`Checkpoint`].
pub struct TransactionDBCheckpoint<'db> {
    inner: Checkpoint<'db>,
}

impl<'db> TransactionDBCheckpoint<'db> {
    /// A checkpoint maker for `db`. Never fails today (the `Result` is the crate's signature).
    pub fn new<T: ThreadMode>(db: &'db TransactionDB<T>) -> Result<TransactionDBCheckpoint<'db>> {
        Ok(TransactionDBCheckpoint {
            inner: Checkpoint::new(db.base_db())?,
        })
    }

    /// Make a checkpoint in `path` (which must not exist), flushing the memtables first; see
    /// [`Checkpoint::create_checkpoint`].
    pub fn create_checkpoint(&self, path: impl AsRef<Path>) -> Result<()> {
        self.inner.create_checkpoint(path)
    }

    /// Make a checkpoint in `path`, flushing first only if `log_size_for_flush` is 0 or the live
    /// WALs hold at least that many bytes; see [`Checkpoint::create_checkpoint_with_log_size`].
    pub fn create_checkpoint_with_log_size(&self, path: impl AsRef<Path>, log_size_for_flush: u64) -> Result<()> {
        self.inner.create_checkpoint_with_log_size(path, log_size_for_flush)
    }
}
