//! Transactions (RocksDB's `utilities/transactions`, the `rocksdb` crate's API):
//! [`WriteBatchWithIndex`] (`wbwi`), the two transaction DBs — [`OptimisticTransactionDB`]
//! (commit-time validation, `optimistic`) and [`TransactionDB`] (row locks, `pessimistic` with
//! the lock manager in `locks`) — and the [`Transaction`] they share (`transaction`).
//! Conflict checks (`latest_seq`) look up the newest sequence number of a key in the
//! memtables, including the flushed ones kept as history (`max_write_buffer_size_to_maintain`).
//! See docs/transactions.md.

mod checks;
mod locks;
mod optimistic;
mod pessimistic;
mod prepared;
#[cfg(test)]
mod recovery_tests;
mod transaction;
mod wbwi;

pub use optimistic::{OptimisticTransactionDB, OptimisticTransactionOptions};
pub use pessimistic::{TransactionDB, TransactionDBOptions, TransactionOptions};
pub use transaction::Transaction;
pub use wbwi::{TxnIterator, TxnRawIterator, WriteBatchWithIndex};
