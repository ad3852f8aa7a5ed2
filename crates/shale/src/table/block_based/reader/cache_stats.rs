//! The block cache as a table reader uses it: inserting index and filter blocks at their
//! priority (pinned if asked), and the statistics and perf-context counters of every hit, miss
//! and insert, told apart by kind of block.

use super::{Kind, Table};
use crate::perf_context::field as perf;
use crate::statistics::Ticker;
use crate::table::cache::{CacheKey, CacheValue};

impl Table {
    /// Insert an index or filter block into the cache (pinned if asked). False if it did not fit.
    pub(super) fn cache_put(&mut self, key: CacheKey, v: CacheValue, charge: usize, pin: bool, kind: Kind) -> bool {
        let Some(c) = &self.cache else { return false };
        let role = kind.role(&v);
        let ok = c.insert_value(key, v, charge, pin, self.meta_priority, role);
        if ok {
            self.cache_add(kind, charge);
        } else {
            crate::statistics::tick(&self.stats, Ticker::BlockCacheAddFailures, 1);
        }
        if ok && pin {
            self.pinned.push(key);
        }
        ok
    }

    /// Statistics of a block found in the block cache.
    #[inline]
    pub(crate) fn cache_hit(&self, kind: Kind, charge: usize) {
        crate::perf_context::add(
            match kind {
                Kind::Data => perf::BLOCK_CACHE_HIT_COUNT,
                Kind::Index => perf::BLOCK_CACHE_INDEX_HIT_COUNT,
                Kind::Filter => perf::BLOCK_CACHE_FILTER_HIT_COUNT,
            },
            1,
        );
        if let Some(s) = self.stats.as_ref().and_then(|s| s.local()) {
            s.tick(Ticker::BlockCacheHit, 1);
            s.tick(Ticker::BlockCacheBytesRead, charge as u64);
            s.tick(
                match kind {
                    Kind::Data => Ticker::BlockCacheDataHit,
                    Kind::Index => Ticker::BlockCacheIndexHit,
                    Kind::Filter => Ticker::BlockCacheFilterHit,
                },
                1,
            );
        }
    }

    /// Statistics of a block looked up in the block cache and not found.
    #[inline]
    pub(crate) fn cache_miss(&self, kind: Kind) {
        if let Some(s) = self.stats.as_ref().and_then(|s| s.local()) {
            s.tick(Ticker::BlockCacheMiss, 1);
            s.tick(
                match kind {
                    Kind::Data => Ticker::BlockCacheDataMiss,
                    Kind::Index => Ticker::BlockCacheIndexMiss,
                    Kind::Filter => Ticker::BlockCacheFilterMiss,
                },
                1,
            );
        }
    }

    /// Statistics of a block inserted into the block cache.
    #[inline]
    pub(super) fn cache_add(&self, kind: Kind, charge: usize) {
        if let Some(s) = self.stats.as_ref().and_then(|s| s.local()) {
            s.tick(Ticker::BlockCacheAdd, 1);
            s.tick(Ticker::BlockCacheBytesWrite, charge as u64);
            let (add, bytes) = match kind {
                Kind::Data => (Ticker::BlockCacheDataAdd, Ticker::BlockCacheDataBytesInsert),
                Kind::Index => (Ticker::BlockCacheIndexAdd, Ticker::BlockCacheIndexBytesInsert),
                Kind::Filter => (Ticker::BlockCacheFilterAdd, Ticker::BlockCacheFilterBytesInsert),
            };
            s.tick(add, 1);
            s.tick(bytes, charge as u64);
        }
    }

    /// Statistics of an insert into the block cache that was kept or not.
    #[inline]
    pub(crate) fn cache_added(&self, kept: bool, kind: Kind, charge: usize) {
        if kept {
            self.cache_add(kind, charge);
        } else {
            crate::statistics::tick(&self.stats, Ticker::BlockCacheAddFailures, 1);
        }
    }
}
