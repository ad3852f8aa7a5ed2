//! The universal compaction picker (RocksDB's `UniversalCompactionBuilder`): a pure function of
//! a version, the files being compacted and the running compactions' output ranges.
//!
//! The data is a list of sorted runs, newest first: each L0 file, then each non-empty level
//! below. A compaction merges adjacent runs (so runs never overlap in time) and writes one run,
//! placed at the deepest level it can take: the last level when the oldest run is an input,
//! otherwise the level just above the next older run (L0 when that run is an L0 file). Nothing
//! happens until there are `level0_file_num_compaction_trigger` runs; then, in order:
//! 1. space amplification: when the runs newer than the oldest hold at least
//!    `max_size_amplification_percent` % of its bytes, merge them all into it;
//! 2. size ratio: from the newest free run, take older runs while the next is no larger than
//!    what was taken (the last run taken with `Similar`) plus `size_ratio` %, within
//!    `min_merge_width`..=`max_merge_width` runs;
//! 3. run count: with more free runs than the trigger, merge enough of the newest (ignoring
//!    sizes) to get back to it, at most `max_merge_width`.
//!
//! A run with a busy file is never taken; a merge stops before one.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::picker::{Pick, PickKind, RunningRange};
use super::version::{FileMeta, Version};
use crate::compaction_options::{UniversalCompactOptions, UniversalCompactionStopStyle};

/// What the universal picker needs from the options.
#[derive(Debug, Clone)]
pub(crate) struct UniversalConfig {
    pub l0_trigger: usize,
    pub opts: UniversalCompactOptions,
}

impl UniversalConfig {
    pub(crate) fn from_options(opts: &crate::options::Options) -> UniversalConfig {
        UniversalConfig {
            l0_trigger: opts.level0_file_num_compaction_trigger,
            opts: opts.compaction_options_universal.clone(),
        }
    }
}

/// One sorted run: an L0 file or a whole level.
#[derive(Clone)]
pub(crate) struct SortedRun {
    pub level: usize,
    pub files: Vec<Arc<FileMeta>>,
    pub size: u64,
    pub busy: bool,
}

/// The sorted runs of `v`, newest first.
pub(crate) fn sorted_runs(v: &Version, busy: &HashSet<u64>) -> Vec<SortedRun> {
    let mut runs = Vec::new();
    for (level, files) in v.files.iter().enumerate() {
        if level == 0 {
            for f in files {
                runs.push(SortedRun {
                    level: 0,
                    files: vec![f.clone()],
                    size: f.meta.file_size,
                    busy: busy.contains(&f.number()),
                });
            }
        } else if !files.is_empty() {
            runs.push(SortedRun {
                level,
                files: files.clone(),
                size: files.iter().map(|f| f.meta.file_size).sum(),
                busy: files.iter().any(|f| busy.contains(&f.number())),
            });
        }
    }
    runs
}

/// The next universal compaction, or None.
pub(crate) fn pick_universal(
    v: &Version,
    cfg: &UniversalConfig,
    busy: &HashSet<u64>,
    running: &[RunningRange],
) -> Option<Pick> {
    let runs = sorted_runs(v, busy);
    if runs.is_empty() || runs.len() < cfg.l0_trigger {
        return None;
    }
    let score = runs.len() as f64 / cfg.l0_trigger.max(1) as f64;
    let range = if let Some(r) = size_amp_range(&runs, &cfg.opts) {
        Some((r, true))
    } else if let Some(r) = ratio_range(&runs, &cfg.opts, cfg.opts.size_ratio as f64, u32::MAX) {
        Some((r, compress_output(&runs, r.1, &cfg.opts)))
    } else {
        let free = runs.iter().filter(|r| !r.busy).count();
        if free > cfg.l0_trigger {
            let width = (free - cfg.l0_trigger + 1).min(u32::MAX as usize) as u32;
            ratio_range(&runs, &cfg.opts, f64::INFINITY, width).map(|r| (r, compress_output(&runs, r.1, &cfg.opts)))
        } else {
            None
        }
    };
    let ((start, end), compress) = range?;
    let mut p = build_pick(v, &runs, start, end, compress, cfg)?;
    let (lo, hi) = p.key_range(&v.icmp)?;
    if p.output_level != 0
        && running.iter().any(|r| {
            r.output_level == p.output_level
                && v.icmp.compare_user(&lo, &r.largest) != Ordering::Greater
                && v.icmp.compare_user(&r.smallest, &hi) != Ordering::Greater
        })
    {
        return None;
    }
    p.score = score;
    Some(p)
}

/// Space amplification: runs `[start, last]` when the free runs just newer than the oldest
/// (stopping at a busy one) hold at least `max_size_amplification_percent` % of its bytes.
pub(crate) fn size_amp_range(runs: &[SortedRun], o: &UniversalCompactOptions) -> Option<(usize, usize)> {
    let end = runs.len().checked_sub(1)?;
    if runs[end].busy {
        return None;
    }
    let mut start = end;
    let mut newer = 0u64;
    while start > 0 && !runs[start - 1].busy {
        newer += runs[start - 1].size;
        start -= 1;
    }
    if start == end {
        return None;
    }
    let base = runs[end].size as u128;
    if (newer as u128) * 100 < o.max_size_amplification_percent as u128 * base {
        return None;
    }
    Some((start, end))
}

/// Size ratio (and, with `ratio` infinite, run count): the first free run from which at least
/// `min_merge_width` (and 2) runs can be taken, up to `max_width` and `max_merge_width`; a run is
/// taken while it is no larger than the bytes taken so far (`Total`) or the last run taken
/// (`Similar`, which also stops at a run much smaller than the last) plus `ratio` %.
pub(crate) fn ratio_range(
    runs: &[SortedRun],
    o: &UniversalCompactOptions,
    ratio: f64,
    max_width: u32,
) -> Option<(usize, usize)> {
    let max_files = o.max_merge_width.min(max_width) as usize;
    let min_files = o.min_merge_width.max(2) as usize;
    let grow = |x: u64| x as f64 * (100.0 + ratio) / 100.0;
    for start in 0..runs.len() {
        if runs[start].busy {
            continue;
        }
        let mut count = 1;
        let mut candidate = runs[start].size;
        for next in &runs[start + 1..] {
            if count >= max_files || next.busy || grow(candidate) < next.size as f64 {
                break;
            }
            match o.stop_style {
                UniversalCompactionStopStyle::Similar => {
                    if grow(next.size) < candidate as f64 {
                        break;
                    }
                    candidate = next.size;
                }
                UniversalCompactionStopStyle::Total => candidate += next.size,
            }
            count += 1;
        }
        if count >= min_files {
            return Some((start, start + count - 1));
        }
    }
    None
}

/// `compression_size_percent`: the output is left uncompressed once the runs older than it hold
/// at least that share of all bytes (-1: always compressed).
fn compress_output(runs: &[SortedRun], end: usize, o: &UniversalCompactOptions) -> bool {
    if o.compression_size_percent < 0 {
        return true;
    }
    let total: u64 = runs.iter().map(|r| r.size).sum();
    let mut older = 0u64;
    for r in runs[end + 1..].iter().rev() {
        older += r.size;
        if older as u128 * 100 >= total as u128 * o.compression_size_percent as u128 {
            return false;
        }
    }
    true
}

/// The pick merging runs `start..=end`: written to the last level when `end` is the oldest run,
/// else to the level above the next older run (L0 if that run is an L0 file).
fn build_pick(
    v: &Version,
    runs: &[SortedRun],
    start: usize,
    end: usize,
    compress: bool,
    cfg: &UniversalConfig,
) -> Option<Pick> {
    let output_level = match runs.get(end + 1) {
        None => v.num_levels() - 1,
        Some(r) if r.level == 0 => 0,
        Some(r) => r.level - 1,
    };
    let level = runs[start].level;
    let mut p = Pick::leveled(level, output_level, Vec::new(), Vec::new(), 1);
    for r in &runs[start..=end] {
        for f in &r.files {
            if r.level == level {
                p.inputs.push(f.clone());
            } else if r.level == output_level {
                p.next_inputs.push(f.clone());
            } else {
                p.other_inputs.push((r.level, f.clone()));
            }
        }
    }
    let all: Vec<Arc<FileMeta>> = p.all_inputs().cloned().collect();
    let trivial_move = cfg.opts.allow_trivial_move && non_overlapping(v, &all);
    p.kind = PickKind::Universal { trivial_move, compress };
    Some(p)
}

/// True when no two of `files` share a user key (RocksDB's `IsInputFilesNonOverlapping`).
fn non_overlapping(v: &Version, files: &[Arc<FileMeta>]) -> bool {
    let mut sorted: Vec<&Arc<FileMeta>> = files.iter().collect();
    sorted.sort_by(|a, b| v.icmp.compare_user(a.smallest_user(), b.smallest_user()));
    sorted
        .windows(2)
        .all(|w| v.icmp.compare_user(w[0].largest_user(), w[1].smallest_user()) == Ordering::Less)
}

/// A manual compaction (`compact_range`): every run merged into the last level, as RocksDB's
/// universal `CompactRange` does; None while any file is busy or there is nothing to merge.
pub(crate) fn pick_universal_manual(v: &Version, busy: &HashSet<u64>) -> Option<Pick> {
    let runs = sorted_runs(v, busy);
    if runs.is_empty() || runs.iter().any(|r| r.busy) {
        return None;
    }
    let cfg = UniversalConfig {
        l0_trigger: 1,
        opts: UniversalCompactOptions::default(),
    };
    let mut p = build_pick(v, &runs, 0, runs.len() - 1, true, &cfg)?;
    p.kind = PickKind::Universal {
        trivial_move: false,
        compress: true,
    };
    Some(p)
}

#[cfg(test)]
#[path = "picker_universal_tests.rs"]
mod tests;
