//! Iterators: a merging iterator over memtables and tables, a level iterator that opens the
//! files of one sorted level lazily, and the user-facing iterator that applies snapshots,
//! deletions and bounds. Iterators own an `Arc` pin of the data, never a borrow of the DB.

mod db_iter;
mod level;
mod merging;
mod prefix;
mod sources;

pub(crate) use db_iter::new_raw_iterator;
pub use db_iter::{DBIterator, DBRawIterator, Direction, IteratorMode};
pub(crate) use merging::MergingIterator;
pub(crate) use sources::internal_iterator;
