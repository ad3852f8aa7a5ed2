//! The FIFO compaction picker (RocksDB's `FIFOCompactionPicker`): a pure function of a version,
//! the files being compacted and the current time.
//!
//! In order: a TTL pick (the oldest L0 files whose data is older than `ttl`, if deleting them
//! brings L0 under `max_table_files_size`), a size pick (the oldest files until the total is under
//! `max_table_files_size`; a DB switched from another style drains its last non-empty level
//! first, smallest keys first), and with `allow_compaction` an intra-L0 merge of small newest
//! files. TTL and size picks only delete files (no rewrite) and wait for any running compaction.

use std::collections::HashSet;
use std::sync::Arc;

use super::picker::{intra_l0_run_len, Pick, PickKind};
use crate::lsm::version::{FileMeta, Version};

/// What the FIFO picker needs from the options.
#[derive(Debug, Clone)]
pub(crate) struct FifoConfig {
    pub max_table_files_size: u64,
    pub allow_compaction: bool,
    /// Seconds; 0 = no TTL.
    pub ttl: u64,
    /// `level0_file_num_compaction_trigger`: the fewest files an intra-L0 merge takes.
    pub l0_trigger: usize,
    /// An intra-L0 merge rewrites less than this per file removed (write buffer size + 10 %), so
    /// files already merged are not merged again and again (and still expire by TTL).
    pub max_bytes_per_removed_file: u64,
    pub max_compaction_bytes: u64,
}

impl FifoConfig {
    pub(crate) fn from_options(opts: &crate::options::Options) -> FifoConfig {
        FifoConfig {
            max_table_files_size: opts.compaction_options_fifo.max_table_files_size,
            allow_compaction: opts.compaction_options_fifo.allow_compaction,
            ttl: opts.ttl,
            l0_trigger: opts.level0_file_num_compaction_trigger,
            max_bytes_per_removed_file: (opts.write_buffer_size as u64).saturating_mul(11) / 10,
            max_compaction_bytes: opts.effective_max_compaction_bytes(),
        }
    }
}

/// The time (seconds since the epoch) of a file's newest data as RocksDB estimates it: the
/// table's newest-key time, else its `rocksdb.creation.time` (`FileMeta::newest_data_time`;
/// 0 = unknown). FIFO's TTL needs `max_open_files = -1`, so the tables are held open and the
/// picker reads their properties without I/O.
fn newest_data_time(f: &FileMeta) -> u64 {
    f.newest_data_time()
}

fn deletion(level: usize, files: Vec<Arc<FileMeta>>, reason: &'static str) -> Pick {
    Pick {
        kind: PickKind::Deletion,
        reason: Some(reason),
        ..Pick::leveled(level, level, files, Vec::new(), 1)
    }
}

/// The next FIFO compaction, or None. `now` is the current time in seconds since the epoch.
pub(crate) fn pick_fifo(v: &Version, cfg: &FifoConfig, busy: &HashSet<u64>, now: u64) -> Option<Pick> {
    if cfg.ttl > 0 {
        if let Some(p) = pick_ttl(v, cfg, busy, now) {
            return Some(p);
        }
    }
    if let Some(p) = pick_size(v, cfg, busy) {
        return Some(p);
    }
    pick_intra_l0(v, cfg, busy)
}

/// The oldest L0 files whose newest data is older than `ttl` (stopping at the first younger
/// file or one of unknown age), if deleting them leaves L0 within the size limit (otherwise the
/// size pick deletes at least as much).
fn pick_ttl(v: &Version, cfg: &FifoConfig, busy: &HashSet<u64>, now: u64) -> Option<Pick> {
    if !busy.is_empty() || now <= cfg.ttl {
        return None;
    }
    let l0 = v.files.first()?;
    let mut remaining: u64 = l0.iter().map(|f| f.meta.file_size).sum();
    let cutoff = now - cfg.ttl;
    let mut expired = Vec::new();
    for f in l0.iter().rev() {
        let t = newest_data_time(f);
        if t == 0 || t >= cutoff {
            break;
        }
        remaining -= f.meta.file_size;
        expired.push(f.clone());
    }
    if expired.is_empty() || remaining > cfg.max_table_files_size {
        return None;
    }
    Some(deletion(0, expired, "FIFOTtl"))
}

/// Once the table files (all levels) exceed `max_table_files_size`, delete the oldest until they
/// fit. Files outside L0 (a DB that used another style) go first, from the last non-empty level,
/// smallest keys first (their age is unknown).
fn pick_size(v: &Version, cfg: &FifoConfig, busy: &HashSet<u64>) -> Option<Pick> {
    let mut total = 0u64;
    let mut last_level = 0;
    for l in 0..v.num_levels() {
        let b = v.level_bytes(l);
        total += b;
        if b > 0 {
            last_level = l;
        }
    }
    if total <= cfg.max_table_files_size || !busy.is_empty() {
        return None;
    }
    let files = &v.files[last_level];
    let mut picked = Vec::new();
    // L0 is newest first: its oldest files are at the end. A level's files are in key order.
    let order: Box<dyn Iterator<Item = &Arc<FileMeta>>> = if last_level == 0 {
        Box::new(files.iter().rev())
    } else {
        Box::new(files.iter())
    };
    for f in order {
        total = total.saturating_sub(f.meta.file_size);
        picked.push(f.clone());
        if total <= cfg.max_table_files_size {
            break;
        }
    }
    (!picked.is_empty()).then(|| deletion(last_level, picked, "FIFOMaxSize"))
}

/// `allow_compaction`: merge the newest L0 files into one (RocksDB's cost-based intra-L0 pick):
/// at least `level0_file_num_compaction_trigger` files, none busy, at most
/// `max_compaction_bytes`, while the bytes rewritten per file removed do not grow and stay
/// below the write buffer size + 10 %.
fn pick_intra_l0(v: &Version, cfg: &FifoConfig, busy: &HashSet<u64>) -> Option<Pick> {
    if !cfg.allow_compaction {
        return None;
    }
    let l0 = v.files.first()?;
    let sizes: Vec<(u64, bool)> = l0
        .iter()
        .map(|f| (f.meta.file_size, busy.contains(&f.number())))
        .collect();
    let n = intra_l0_run_len(&sizes, cfg.l0_trigger, cfg.max_compaction_bytes)?;
    let total: u64 = sizes[..n].iter().map(|s| s.0).sum();
    if total / (n as u64 - 1) >= cfg.max_bytes_per_removed_file {
        return None;
    }
    Some(Pick {
        reason: Some("FIFOReduceNumFiles"),
        ..Pick::leveled(0, 0, l0[..n].to_vec(), Vec::new(), 1)
    })
}

#[cfg(test)]
mod tests;
