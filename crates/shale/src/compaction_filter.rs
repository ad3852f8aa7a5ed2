//! Compaction filters: user code that keeps, removes or rewrites values as compactions rewrite
//! them (the `rocksdb` crate's `compaction_filter` module). A filter sees only the newest
//! version of a key, only when it is a Put newer than every live snapshot (so no snapshot ever
//! sees a filtered value change), and never during flushes — RocksDB's rules. Filters made per
//! compaction come from a [`CompactionFilterFactory`](crate::compaction_filter_factory::CompactionFilterFactory).

/// What a compaction filter decides for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Keep the value as it is.
    Keep,
    /// Remove the key: the entry becomes a deletion (dropped at the bottom of the tree).
    Remove,
    /// Replace the value with these bytes. As in the `rocksdb` crate, the new value is a
    /// `'static` slice (a literal, or a leaked or otherwise long-lived buffer).
    Change(&'static [u8]),
}

/// A compaction filter object. `filter(level, key, value)` is called with the level of the
/// compaction's inputs.
pub trait CompactionFilter: Send {
    /// Decides what happens to `key` → `value` in a compaction whose inputs are at `level`: keep,
    /// remove or change it. Only a key's newest entry is shown, and only if it is a Put newer than
    /// every live snapshot (deletions and merge operands are not shown). A panic fails the job.
    fn filter(&mut self, level: u32, key: &[u8], value: &[u8]) -> Decision;
    /// Recorded in the OPTIONS file (`compaction_filter=`).
    fn name(&self) -> &str;
}
