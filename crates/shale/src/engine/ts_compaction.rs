//! Compaction of families with user-defined timestamps (`docs/user-timestamps.md`): every
//! (key, timestamp) is a user key of its own for the per-key rules of `key_compaction.rs`;
//! this file adds what spans the versions of one key. Below `full_history_ts_low` history
//! collapses: once a version with a timestamp at or below it is visible to every snapshot,
//! no read (whose timestamp is at least the low mark) can see an older version, so those are
//! dropped. A deletion may only be dropped at the bottom when its timestamp is at or below the
//! low mark (the versions it hides go with it); otherwise it stays, or an older version would
//! come back.

use crate::key::{InternalKeyComparator, SequenceNumber};
use std::cmp::Ordering;

use super::key_compaction::{stripe, KEntry};

/// The cross-version state of a compaction's output for a family with timestamps.
pub(crate) struct TsGc {
    ts_sz: usize,
    /// `full_history_ts_low` when the compaction started (empty: unset, nothing collapses).
    low: Vec<u8>,
    /// The key (without timestamp) of the versions seen last.
    cur: Vec<u8>,
    /// A version of `cur` visible to every read has been written: older ones are dropped.
    collapsed: bool,
}

impl TsGc {
    /// The state for a family compared by `icmp`, or None if it has no timestamps.
    pub(crate) fn new(icmp: &InternalKeyComparator, low: Vec<u8>) -> Option<TsGc> {
        let ts_sz = icmp.timestamp_size();
        (ts_sz > 0).then(|| TsGc {
            ts_sz,
            low,
            cur: Vec::new(),
            collapsed: false,
        })
    }

    /// Start the entries of user key `key` (with its timestamp): None if they are all dropped
    /// (an older version under a collapsed one), else whether the version's timestamp is at or
    /// below the low mark.
    pub(crate) fn start(&mut self, icmp: &InternalKeyComparator, key: &[u8]) -> Option<bool> {
        let (k, ts) = key.split_at(key.len().saturating_sub(self.ts_sz));
        if self.cur.is_empty() && !self.collapsed
            || icmp.compare_without_ts(k, false, &self.cur, false) != Ordering::Equal
        {
            self.cur.clear();
            self.cur.extend_from_slice(k);
            self.collapsed = false;
        }
        if self.collapsed {
            return None;
        }
        Some(!self.low.is_empty() && icmp.user_comparator().compare_timestamp(ts, &self.low) != Ordering::Greater)
    }

    /// After the version's entries were compacted to `keep` (newest first): the history below
    /// collapses if the version is at or below the low mark and its newest entry, a full value
    /// or a deletion (`newest_deletion`: the input's newest entry was one, and it is gone),
    /// is visible to every snapshot.
    pub(crate) fn finish(
        &mut self,
        below_low: bool,
        newest_deletion: Option<SequenceNumber>,
        keep: &[KEntry],
        snapshots: &[SequenceNumber],
    ) {
        if !below_low {
            return;
        }
        self.collapsed = match keep.first() {
            Some(e) => e.vtype != crate::key::vt::MERGE && stripe(snapshots, e.seq) == 0,
            None => newest_deletion.is_some_and(|s| stripe(snapshots, s) == 0),
        };
    }

    /// Whether a deeper file's range `[lo, hi]` (user keys with timestamps) may hold a version
    /// of `key`.
    pub(crate) fn overlaps(&self, icmp: &InternalKeyComparator, key: &[u8], lo: &[u8], hi: &[u8]) -> bool {
        icmp.compare_without_ts(lo, true, key, true) != Ordering::Greater
            && icmp.compare_without_ts(key, true, hi, true) != Ordering::Greater
    }
}
