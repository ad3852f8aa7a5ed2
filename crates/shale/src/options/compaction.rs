//! The options of the universal and FIFO compaction styles (the `rocksdb` crate's
//! `UniversalCompactOptions`, `UniversalCompactionStopStyle` and `FifoCompactOptions`; RocksDB's
//! `CompactionOptionsUniversal` and `CompactionOptionsFIFO`, with RocksDB's defaults).

use crate::error::{Error, Result};

/// When a size-ratio pick stops taking sorted runs (RocksDB's `CompactionStopStyle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UniversalCompactionStopStyle {
    /// Stop at a run larger than the last run taken (plus `size_ratio` %), or much smaller.
    Similar,
    /// Stop at a run larger than everything taken so far (plus `size_ratio` %). The default.
    #[default]
    Total,
}

impl UniversalCompactionStopStyle {
    /// The name RocksDB's OPTIONS file uses.
    pub(crate) fn rocksdb_name(self) -> &'static str {
        match self {
            UniversalCompactionStopStyle::Similar => "kCompactionStopStyleSimilarSize",
            UniversalCompactionStopStyle::Total => "kCompactionStopStyleTotalSize",
        }
    }
    pub(crate) fn from_rocksdb_name(s: &str) -> Option<UniversalCompactionStopStyle> {
        match s {
            "kCompactionStopStyleSimilarSize" => Some(UniversalCompactionStopStyle::Similar),
            "kCompactionStopStyleTotalSize" => Some(UniversalCompactionStopStyle::Total),
            _ => None,
        }
    }
}

/// Universal compaction's options (the `rocksdb` crate's `UniversalCompactOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniversalCompactOptions {
    /// Percentage of slack when comparing run sizes (default 1).
    pub(crate) size_ratio: u32,
    /// Fewest runs merged by a size-ratio pick (default 2).
    pub(crate) min_merge_width: u32,
    /// Most runs merged by one pick (default `u32::MAX`).
    pub(crate) max_merge_width: u32,
    /// Newer runs may hold at most this % of the oldest run's bytes before everything is
    /// compacted (default 200).
    pub(crate) max_size_amplification_percent: u32,
    /// -1: always compress; otherwise outputs are compressed only while the older runs hold
    /// less than this % of the data (default -1).
    pub(crate) compression_size_percent: i32,
    pub(crate) stop_style: UniversalCompactionStopStyle,
    /// Move inputs that do not overlap instead of rewriting them (default false).
    pub(crate) allow_trivial_move: bool,
}

impl Default for UniversalCompactOptions {
    fn default() -> Self {
        UniversalCompactOptions {
            size_ratio: 1,
            min_merge_width: 2,
            max_merge_width: u32::MAX,
            max_size_amplification_percent: 200,
            compression_size_percent: -1,
            stop_style: UniversalCompactionStopStyle::Total,
            allow_trivial_move: false,
        }
    }
}

fn unsigned(v: i32) -> u32 {
    v.max(0) as u32
}

impl UniversalCompactOptions {
    /// Sets `size_ratio` (default 1): percent of slack when comparing the sizes of adjacent runs
    /// (negative: 0).
    pub fn set_size_ratio(&mut self, ratio: i32) {
        self.size_ratio = unsigned(ratio);
    }
    /// Sets `min_merge_width` (default 2): the fewest runs a size-ratio pick merges (negative: 0).
    pub fn set_min_merge_width(&mut self, num: i32) {
        self.min_merge_width = unsigned(num);
    }
    /// Sets `max_merge_width` (default unlimited): the most runs one pick merges; below
    /// `min_merge_width` it is refused at open with InvalidArgument.
    pub fn set_max_merge_width(&mut self, num: i32) {
        self.max_merge_width = unsigned(num);
    }
    /// Sets `max_size_amplification_percent` (default 200): once newer runs hold more than this
    /// percent of the oldest run's bytes, everything is compacted (negative: 0).
    pub fn set_max_size_amplification_percent(&mut self, v: i32) {
        self.max_size_amplification_percent = unsigned(v);
    }
    /// Sets `compression_size_percent` (default -1: always compress); values outside -1..=100 are
    /// refused at open with InvalidArgument.
    pub fn set_compression_size_percent(&mut self, v: i32) {
        self.compression_size_percent = v;
    }
    /// How runs are counted against `size_ratio` (default total size).
    pub fn set_stop_style(&mut self, style: UniversalCompactionStopStyle) {
        self.stop_style = style;
    }
    /// Sets `allow_trivial_move` (default false): non-overlapping inputs are moved, not rewritten.
    pub fn set_allow_trivial_move(&mut self, v: bool) {
        self.allow_trivial_move = v;
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_merge_width < self.min_merge_width {
            return Err(Error::invalid(format!(
                "compaction_options_universal: max_merge_width ({}) must not be below min_merge_width ({})",
                self.max_merge_width, self.min_merge_width
            )));
        }
        if self.compression_size_percent < -1 || self.compression_size_percent > 100 {
            return Err(Error::invalid(format!(
                "compaction_options_universal: compression_size_percent ({}) must be -1 or 0..=100",
                self.compression_size_percent
            )));
        }
        Ok(())
    }
}

/// FIFO compaction's options (the `rocksdb` crate's `FifoCompactOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoCompactOptions {
    /// Once the table files hold more bytes than this, the oldest are deleted (default 1 GiB).
    pub(crate) max_table_files_size: u64,
    /// Merge small L0 files into one (intra-L0) while under the size limit (default false).
    pub(crate) allow_compaction: bool,
}

impl Default for FifoCompactOptions {
    fn default() -> Self {
        FifoCompactOptions {
            max_table_files_size: 1 << 30,
            allow_compaction: false,
        }
    }
}

impl FifoCompactOptions {
    /// Sets `max_table_files_size` (default 1 GiB): past it the oldest table files are deleted (0
    /// is refused at open with InvalidArgument).
    pub fn set_max_table_files_size(&mut self, nbytes: u64) {
        self.max_table_files_size = nbytes;
    }
    /// Sets `allow_compaction` (default false): small L0 files are merged while under the size limit.
    pub fn set_allow_compaction(&mut self, allow: bool) {
        self.allow_compaction = allow;
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_table_files_size == 0 {
            return Err(Error::invalid(
                "compaction_options_fifo: max_table_files_size must be above 0 (every file would be deleted)",
            ));
        }
        Ok(())
    }
}

/// The settings of RocksDB's `CompactOnDeletionCollector` (`Options::
/// add_compact_on_deletion_collector_factory`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CompactOnDeletion {
    pub window_size: usize,
    pub deletion_trigger: usize,
    pub deletion_ratio: f64,
}

/// Buckets of the sliding window (RocksDB's `kNumBuckets`): the window moves a bucket at a time.
const DELETION_WINDOW_BUCKETS: usize = 128;

/// Counts the deletions among a table's entries as they are added (RocksDB's
/// `CompactOnDeletionCollector`): the file needs compaction once a window of `window_size`
/// consecutive entries (tracked in 128 buckets, so the window is approximate by one bucket)
/// holds `deletion_trigger` deletions, or, when the file is finished, once deletions make up at
/// least `deletion_ratio` of its entries.
#[derive(Debug, Clone)]
pub(crate) struct DeletionCollector {
    bucket_size: usize,
    trigger: usize,
    ratio: Option<f64>,
    buckets: [usize; DELETION_WINDOW_BUCKETS],
    current: usize,
    in_current: usize,
    in_window: usize,
    entries: u64,
    deletions: u64,
    need: bool,
}

impl DeletionCollector {
    pub(crate) fn new(c: &CompactOnDeletion) -> DeletionCollector {
        DeletionCollector {
            bucket_size: c.window_size.div_ceil(DELETION_WINDOW_BUCKETS),
            trigger: c.deletion_trigger,
            ratio: (c.deletion_ratio > 0.0 && c.deletion_ratio <= 1.0).then_some(c.deletion_ratio),
            buckets: [0; DELETION_WINDOW_BUCKETS],
            current: 0,
            in_current: 0,
            in_window: 0,
            entries: 0,
            deletions: 0,
            need: false,
        }
    }

    /// One entry added to the table; `deletion` for a Delete or SingleDelete.
    pub(crate) fn add(&mut self, deletion: bool) {
        if self.need {
            return;
        }
        if self.ratio.is_some() {
            self.entries += 1;
            self.deletions += deletion as u64;
        }
        if self.bucket_size == 0 {
            return;
        }
        if self.in_current == self.bucket_size {
            self.current = (self.current + 1) % DELETION_WINDOW_BUCKETS;
            self.in_window -= self.buckets[self.current];
            self.buckets[self.current] = 0;
            self.in_current = 0;
        }
        self.in_current += 1;
        if deletion {
            self.in_window += 1;
            self.buckets[self.current] += 1;
        }
        if self.in_window >= self.trigger {
            self.need = true;
        }
    }

    /// Whether the finished file should be marked for compaction.
    pub(crate) fn finish(&self) -> bool {
        self.need
            || match self.ratio {
                Some(r) if self.entries > 0 => self.deletions as f64 / self.entries as f64 >= r,
                _ => false,
            }
    }
}

#[cfg(test)]
mod collector_tests {
    use super::*;

    fn collector(window: usize, trigger: usize, ratio: f64) -> DeletionCollector {
        DeletionCollector::new(&CompactOnDeletion {
            window_size: window,
            deletion_trigger: trigger,
            deletion_ratio: ratio,
        })
    }

    #[test]
    fn a_dense_window_of_deletions_marks_the_file() {
        // Window 128 (buckets of one entry): 10 deletions among 128 consecutive entries.
        let mut c = collector(128, 10, 0.0);
        for i in 0..1000 {
            c.add(i % 20 == 0); // 1 in 20: at most 7 per window
        }
        assert!(!c.finish());
        for _ in 0..10 {
            c.add(true);
        }
        assert!(c.finish());
    }

    #[test]
    fn deletions_spread_wider_than_the_window_do_not_mark() {
        let mut c = collector(256, 30, 0.0);
        // 1 in 10 entries is a deletion: about 26 per 256-entry window, under 30.
        for i in 0..100_000 {
            c.add(i % 10 == 0);
        }
        assert!(!c.finish());
        // The same deletions closer together: 1 in 5, about 51 per window.
        let mut c = collector(256, 30, 0.0);
        for i in 0..1000 {
            c.add(i % 5 == 0);
        }
        assert!(c.finish());
    }

    #[test]
    fn the_ratio_marks_at_finish_and_out_of_range_ratios_are_off() {
        let mut c = collector(0, 0, 0.5);
        for i in 0..100 {
            c.add(i % 2 == 0);
        }
        assert!(c.finish());
        let mut c = collector(0, 0, 0.5);
        for i in 0..100 {
            c.add(i % 3 == 0);
        }
        assert!(!c.finish());
        for ratio in [0.0, -1.0, 1.5, f64::NAN] {
            let mut c = collector(0, 0, ratio);
            for _ in 0..100 {
                c.add(true);
            }
            assert!(!c.finish(), "{ratio}");
        }
    }
}

/// Compaction styles (the `rocksdb` crate's `DBCompactionStyle`): leveled (the default),
/// universal (sorted runs merged by size ratio) and FIFO (oldest files deleted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DBCompactionStyle {
    /// Leveled compaction: each level a bounded multiple of the one above.
    #[default]
    Level,
    /// Universal compaction: sorted runs merged by size ratio and size amplification.
    Universal,
    /// FIFO compaction: the oldest files are deleted past a size limit (or TTL).
    Fifo,
}
