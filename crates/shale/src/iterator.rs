//! The iterator protocol shared by memtables, blocks, tables and merging iterators.
//!
//! Keys are internal keys. When an error occurs the iterator becomes invalid and `status()`
//! returns it.

use crate::error::Result;

pub(crate) trait InternalIterator: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    /// Position at the first entry with key >= target (internal-key order).
    fn seek(&mut self, target: &[u8]);
    /// Position at the last entry with key <= target.
    fn seek_for_prev(&mut self, target: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    /// Current internal key; only call when `valid()`.
    fn key(&self) -> &[u8];
    /// Current value; only call when `valid()`.
    fn value(&self) -> &[u8];
    fn status(&self) -> Result<()>;
}

/// An iterator over nothing (optionally carrying an error).
pub(crate) struct EmptyIterator(pub Option<crate::error::Error>);

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _t: &[u8]) {}
    fn seek_for_prev(&mut self, _t: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        match &self.0 {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
