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
    pub fn set_size_ratio(&mut self, ratio: i32) {
        self.size_ratio = unsigned(ratio);
    }
    pub fn set_min_merge_width(&mut self, num: i32) {
        self.min_merge_width = unsigned(num);
    }
    pub fn set_max_merge_width(&mut self, num: i32) {
        self.max_merge_width = unsigned(num);
    }
    pub fn set_max_size_amplification_percent(&mut self, v: i32) {
        self.max_size_amplification_percent = unsigned(v);
    }
    pub fn set_compression_size_percent(&mut self, v: i32) {
        self.compression_size_percent = v;
    }
    pub fn set_stop_style(&mut self, style: UniversalCompactionStopStyle) {
        self.stop_style = style;
    }
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
    pub fn set_max_table_files_size(&mut self, nbytes: u64) {
        self.max_table_files_size = nbytes;
    }
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
