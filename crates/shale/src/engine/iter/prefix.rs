//! Prefix seek (`docs/prefix.md`): with a prefix extractor and without `total_order_seek`, a
//! user `seek(k)` may skip every source (memtable, L0 table, file of a level) whose bloom says it
//! holds no key with `k`'s prefix. Such a source then sits out until the next positioning call,
//! so keys past the end of the prefix may be missing (RocksDB leaves them undefined; Shale's
//! `prefix_same_as_start` and upper bounds end the iteration there). Keys inside the prefix are
//! never missed: a source skipped holds none of them.
//!
//! Only the seeks a user asks for (`seek`, and `seek_for_prev` as RocksDB filters it too) are
//! filtered: the seeks the iterators make internally (a direction change, `seek_to_last` under
//! an upper bound) see every source.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::engine::column_family::ColumnFamilyData;
use crate::error::Result;
use crate::iterator::InternalIterator;
use crate::key::user_key;
use crate::memtable::MemTable;
use crate::options::ReadOptions;
use crate::slice_transform::PrefixExtractor;
use crate::table::any::AnyTable;

/// How the seeks of one iterator may use prefix filters.
pub(crate) struct PrefixSeek {
    extractor: Arc<dyn PrefixExtractor>,
    /// `auto_prefix_mode`: filters only when the upper bound keeps the seek in one prefix.
    auto: bool,
    upper: Option<Vec<u8>>,
    /// The family orders keys bytewise (needed to reason about upper bounds).
    bytewise: bool,
    /// Set by the user iterator while its `seek` or `seek_for_prev` runs: only those seeks are
    /// filtered.
    armed: AtomicBool,
}

impl PrefixSeek {
    /// The prefix mode `ro` asks for in family `cf` (None: total order, no filter is asked).
    pub(crate) fn new(cf: &ColumnFamilyData, ro: &ReadOptions) -> Option<Arc<PrefixSeek>> {
        let extractor = cf.opts.prefix_extractor.clone()?;
        if ro.total_order_seek {
            return None;
        }
        Some(Arc::new(PrefixSeek {
            extractor,
            auto: ro.auto_prefix_mode,
            upper: ro.iterate_upper_bound.clone(),
            bytewise: cf.icmp.user_comparator().name() == "leveldb.BytewiseComparator",
            armed: AtomicBool::new(false),
        }))
    }

    pub(crate) fn extractor(&self) -> &Arc<dyn PrefixExtractor> {
        &self.extractor
    }

    /// Whether `prefix_same_as_start` applies (prefix mode proper, not `auto_prefix_mode`).
    pub(crate) fn same_as_start_applies(&self) -> bool {
        !self.auto
    }

    /// Whether a user `seek_for_prev` may skip sources by their filters: in prefix mode proper
    /// only (in `auto_prefix_mode` the upper bound tells nothing about the keys below the
    /// target's prefix, where a backward seek goes).
    pub(crate) fn filters_backward_seeks(&self) -> bool {
        !self.auto
    }

    /// Filter the seeks made while `on` (the user's seek).
    pub(crate) fn arm(&self, on: bool) {
        self.armed.store(on, Ordering::Relaxed);
    }

    /// The prefix whose filters a seek to internal key `target` may ask (None: ask none).
    #[inline]
    pub(crate) fn filter_prefix<'a>(&self, target: &'a [u8]) -> Option<&'a [u8]> {
        if !self.armed.load(Ordering::Relaxed) {
            return None;
        }
        let uk = user_key(target);
        if !self.extractor.in_domain(uk) {
            return None;
        }
        let prefix = self.extractor.transform(uk);
        if self.auto && !self.upper_keeps_prefix(prefix) {
            return None;
        }
        Some(prefix)
    }

    /// `auto_prefix_mode`: every key in `[seek key, upper bound)` has `prefix` (RocksDB's
    /// `IsFilterCompatible`): the bound has the same prefix, or the bound is as long as the
    /// extractor's full length and is the next key of that length after the prefix.
    fn upper_keeps_prefix(&self, prefix: &[u8]) -> bool {
        let Some(upper) = self.upper.as_deref() else {
            return false;
        };
        if !self.bytewise || !self.extractor.in_domain(upper) {
            return false;
        }
        if self.extractor.transform(upper) == prefix {
            return true;
        }
        full_length(self.extractor.name()) == Some(upper.len()) && is_same_length_successor(prefix, upper)
    }

    /// Memtable blooms are asked in prefix mode proper only (as RocksDB).
    #[inline]
    fn memtable_prefix<'a>(&self, target: &'a [u8]) -> Option<&'a [u8]> {
        if self.auto {
            None
        } else {
            self.filter_prefix(target)
        }
    }
}

/// The prefix length of a built-in extractor whose prefixes all have one length when in domain
/// (RocksDB's `FullLengthEnabled`).
fn full_length(name: &str) -> Option<usize> {
    let n = name
        .strip_prefix("rocksdb.FixedPrefix.")
        .or_else(|| name.strip_prefix("rocksdb.CappedPrefix."))?;
    n.parse().ok()
}

/// `b` has `a`'s length and is the next byte string of that length after `a`.
fn is_same_length_successor(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let Some(i) = a.iter().zip(b).position(|(x, y)| x != y) else {
        return false;
    };
    a[i] != 0xff && b[i] == a[i] + 1 && a[i + 1..].iter().all(|&x| x == 0xff) && b[i + 1..].iter().all(|&x| x == 0)
}

/// What a source's bloom says about a prefix.
pub(crate) enum Source {
    Table(AnyTable),
    Mem(Arc<MemTable>),
}

impl Source {
    #[inline]
    fn excludes(&self, mode: &PrefixSeek, target: &[u8]) -> bool {
        match self {
            Source::Table(t) => mode
                .filter_prefix(target)
                .is_some_and(|p| !table_prefix_may_match(t, p, mode.extractor.name())),
            Source::Mem(m) => match (m.bloom(), mode.memtable_prefix(target)) {
                (Some(b), Some(p)) => {
                    let hit = b.prefix_may_match(mode.extractor.name(), p);
                    let f = if hit {
                        crate::perf_context::field::BLOOM_MEMTABLE_HIT_COUNT
                    } else {
                        crate::perf_context::field::BLOOM_MEMTABLE_MISS_COUNT
                    };
                    crate::perf_context::add(f, 1);
                    !hit
                }
                _ => false,
            },
        }
    }
}

/// Whether table `t` may hold keys with `prefix`, made by the extractor named `extractor` (only
/// block-based tables built with that extractor have filters that can tell).
#[inline]
pub(crate) fn table_prefix_may_match(t: &AnyTable, prefix: &[u8], extractor: &str) -> bool {
    let may = t.as_block().is_none_or(|b| b.prefix_may_match(prefix, extractor));
    if !may {
        crate::perf_context::add(crate::perf_context::field::BLOOM_SST_MISS_COUNT, 1);
    }
    may
}

/// A memtable or L0 table iterator whose user seeks ask the source's bloom first.
pub(crate) struct PrefixGate<I> {
    inner: I,
    source: Source,
    mode: Arc<PrefixSeek>,
    /// The last seek was ruled out by the bloom: invalid until the next positioning call.
    out: bool,
}

impl<I: InternalIterator> PrefixGate<I> {
    pub(crate) fn new(inner: I, source: Source, mode: Arc<PrefixSeek>) -> PrefixGate<I> {
        PrefixGate {
            inner,
            source,
            mode,
            out: false,
        }
    }
}

impl<I: InternalIterator> InternalIterator for PrefixGate<I> {
    fn valid(&self) -> bool {
        !self.out && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.out = false;
        self.inner.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.out = false;
        self.inner.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.out = self.source.excludes(&self.mode, target);
        if !self.out {
            self.inner.seek(target);
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        self.out = self.source.excludes(&self.mode, target);
        if !self.out {
            self.inner.seek_for_prev(target);
        }
    }
    fn next(&mut self) {
        if !self.out {
            self.inner.next();
        }
    }
    fn prev(&mut self) {
        if !self.out {
            self.inner.prev();
        }
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        if self.out {
            Ok(())
        } else {
            self.inner.status()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successors_and_full_lengths() {
        assert!(is_same_length_successor(b"abc", b"abd"));
        assert!(is_same_length_successor(b"ab\xff", b"ac\x00"));
        assert!(!is_same_length_successor(b"ab\xff", b"ac\x01"));
        assert!(!is_same_length_successor(b"abc", b"abe"));
        assert!(!is_same_length_successor(b"abc", b"abcd"));
        assert!(!is_same_length_successor(b"\xff\xff", b"\x00\x00"));
        assert!(!is_same_length_successor(b"abc", b"abc"));
        assert_eq!(full_length("rocksdb.FixedPrefix.8"), Some(8));
        assert_eq!(full_length("rocksdb.CappedPrefix.3"), Some(3));
        assert_eq!(full_length("rocksdb.Noop"), None);
    }
}
