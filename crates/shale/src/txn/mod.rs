//! Transactions (RocksDB's `utilities/transactions`, the `rocksdb` crate's API). The two
//! transaction DBs and their options are at the crate root:
//! [`OptimisticTransactionDB`](crate::OptimisticTransactionDB) validates at commit,
//! [`TransactionDB`](crate::TransactionDB) takes row locks (deadlock detection, timeouts, two-phase
//! commit); both hand out a [`Transaction`](crate::Transaction). Public here: Shale's
//! [`WriteBatchWithIndex`] (a batch that can be read back, also over the DB) and the iterators a
//! transaction returns ([`TxnIterator`], [`TxnRawIterator`]).
//!
//! Inside: `wbwi` (the indexed batch), `transaction` (what both DBs share), `optimistic`,
//! `pessimistic` with the lock manager in `locks`, `checkpoint` (a transaction DB's checkpoints), `prepared` (recovered prepared sections) and
//! `checks` (conflict checks against the newest sequence number of a key in the memtables,
//! including flushed ones kept as history, `max_write_buffer_size_to_maintain`). See
//! docs/transactions.md.

pub(crate) mod checkpoint;
mod checks;
mod locks;
pub(crate) mod optimistic;
pub(crate) mod pessimistic;
mod prepared;
#[cfg(test)]
mod recovery_tests;
pub(crate) mod transaction;
mod wbwi;

pub use wbwi::{TxnIterator, TxnRawIterator, WriteBatchWithIndex};
