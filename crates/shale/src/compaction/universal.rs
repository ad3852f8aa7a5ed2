//! The universal compaction picker (RocksDB's `UniversalCompactionBuilder`): a pure function of
//! a version, the files being compacted and the running compactions' output ranges.
//!
//! The data is a list of sorted runs, newest first: each L0 file, then each non-empty level
//! below. A compaction merges adjacent runs (so runs never overlap in time) and writes one run,
//! placed at the deepest level it can take: the last level when the oldest run is an input,
//! otherwise the level just above the next older run (L0 when that run is an L0 file).
//!
//! Nothing is picked unless the score ([`universal_score`]: the runs not being compacted over
//! `level0_file_num_compaction_trigger`) reaches 1, or a free file is due for a periodic
//! compaction or marked by the deletion collector (RocksDB's `NeedsCompaction`): runs that
//! running compactions already hold do not call for another one. Then, in order:
//! 0. periodic: a file older than `periodic_compaction_seconds` (or `ttl`) merges the oldest
//!    free runs into the last level;
//!
//! then, only with at least `level0_file_num_compaction_trigger` runs (here busy runs count, as
//! in RocksDB's stages; they differ from the score only when marked or due files let the
//! picker run):
//! 1. space amplification: when the runs newer than the oldest hold at least
//!    `max_size_amplification_percent` % of its bytes, merge them all into it;
//! 2. size ratio: from the newest free run, take older runs while the next is no larger than
//!    what was taken (the last run taken with `Similar`) plus `size_ratio` %, within
//!    `min_merge_width`..=`max_merge_width` runs;
//! 3. run count: with more free runs than the trigger, merge enough of the newest (ignoring
//!    sizes) to get back to it, at most `max_merge_width`;
//!
//! and last 4. delete-triggered: files the deletion collector marked are compacted down.
//!
//! A run with a busy file is never taken; a merge stops before one.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::picker::{clean_cut, marked_files, Pick, PickKind, RunningRange, REASON_MARKED};
use crate::lsm::version::{FileMeta, Version};
use crate::options::compaction::{UniversalCompactOptions, UniversalCompactionStopStyle};

/// What the universal picker needs from the options.
#[derive(Debug, Clone)]
pub(crate) struct UniversalConfig {
    pub l0_trigger: usize,
    /// `level0_stop_writes_trigger` (sorted runs count against it): a size-amplification merge
    /// leaves out some of the newest L0 files when it has room to (see [`exclude_new_l0s`]).
    pub l0_stop: usize,
    pub opts: UniversalCompactOptions,
    /// Files older than this many seconds make a periodic compaction (0: never): RocksDB's
    /// `periodic_compaction_seconds`, with `ttl` folded in (the stricter of the two).
    pub periodic_secs: u64,
    /// The current time, seconds since the epoch (the caller's clock; tests inject it).
    pub now: u64,
}

impl UniversalConfig {
    pub(crate) fn from_options(opts: &crate::options::Options, now: u64) -> UniversalConfig {
        UniversalConfig {
            l0_trigger: opts.level0_file_num_compaction_trigger,
            l0_stop: opts.level0_stop_writes_trigger,
            opts: opts.compaction_options_universal.clone(),
            periodic_secs: universal_periodic_secs(opts.periodic_compaction_seconds, opts.ttl),
            now,
        }
    }
}

/// Under universal compaction `ttl` and `periodic_compaction_seconds` mean the same thing: the
/// stricter non-zero one applies (RocksDB's option sanitizing).
pub(crate) fn universal_periodic_secs(periodic: u64, ttl: u64) -> u64 {
    match (periodic, ttl) {
        (0, t) => t,
        (p, 0) => p,
        (p, t) => p.min(t),
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

/// RocksDB's universal compaction score (`ComputeCompactionScore`, reported as L0's): the sorted
/// runs not being compacted (each free L0 file, each non-empty level whose first file is free)
/// over `level0_file_num_compaction_trigger`. Automatic compaction starts only at 1 or more
/// (or with files due for a periodic or delete-triggered compaction).
pub(crate) fn universal_score(v: &Version, busy: &HashSet<u64>, trigger: usize) -> f64 {
    let l0 = v.files[0].iter().filter(|f| !busy.contains(&f.number())).count();
    let levels = (1..v.num_levels())
        .filter(|&l| v.files[l].first().is_some_and(|f| !busy.contains(&f.number())))
        .count();
    (l0 + levels) as f64 / trigger.max(1) as f64
}

/// The next universal compaction, or None. Only with a score of at least 1 (or files due for a
/// periodic or delete-triggered compaction); then RocksDB's order: periodic, then (with at least
/// `level0_file_num_compaction_trigger` runs) space amplification, size ratio and run count,
/// then delete-triggered. A stage whose pick would write into the range of a running
/// compaction into the same level gives way to the next stage.
pub(crate) fn pick_universal(
    v: &Version,
    cfg: &UniversalConfig,
    busy: &HashSet<u64>,
    running: &[RunningRange],
) -> Option<Pick> {
    let runs = sorted_runs(v, busy);
    let score = universal_score(v, busy, cfg.l0_trigger);
    if runs.is_empty() || (score < 1.0 && !periodic_due(&runs, cfg, busy) && marked_files(v, busy).is_empty()) {
        return None;
    }
    let free_of_conflicts = |p: Pick| -> Option<Pick> {
        let (lo, hi) = p.key_range(&v.icmp)?;
        let conflict = p.output_level != 0
            && running.iter().any(|r| {
                r.output_level == p.output_level
                    && v.icmp.compare_user(&lo, &r.largest) != Ordering::Greater
                    && v.icmp.compare_user(&r.smallest, &hi) != Ordering::Greater
            });
        (!conflict).then_some(p)
    };
    let by_range = |range: Option<((usize, usize), bool)>, reason: &'static str| {
        let ((start, end), compress) = range?;
        let p = build_pick(v, &runs, start, end, compress, cfg)?;
        free_of_conflicts(Pick {
            reason: Some(reason),
            ..p
        })
    };
    let enough = runs.len() >= cfg.l0_trigger;
    let mut p = pick_periodic(v, &runs, cfg, busy)
        .and_then(free_of_conflicts)
        .or_else(|| {
            let r = size_amp_range(&runs, &cfg.opts, cfg.l0_stop).filter(|_| enough);
            by_range(r.map(|r| (r, true)), "UniversalSizeAmplification")
        })
        .or_else(|| {
            let r = ratio_range(&runs, &cfg.opts, cfg.opts.size_ratio as f64, u32::MAX).filter(|_| enough)?;
            by_range(Some((r, compress_output(&runs, r.1, &cfg.opts))), "UniversalSizeRatio")
        })
        .or_else(|| {
            let free = runs.iter().filter(|r| !r.busy).count();
            if !enough || free <= cfg.l0_trigger {
                return None;
            }
            let width = (free - cfg.l0_trigger + 1).min(u32::MAX as usize) as u32;
            let r = ratio_range(&runs, &cfg.opts, f64::INFINITY, width)?;
            by_range(
                Some((r, compress_output(&runs, r.1, &cfg.opts))),
                "UniversalSortedRunNum",
            )
        })
        .or_else(|| pick_delete_triggered(v, &runs, cfg, busy).and_then(free_of_conflicts))?;
    p.score = score;
    Some(p)
}

/// RocksDB's `PickPeriodicCompaction`: once any free file is older than `periodic_secs`
/// (`FileMeta::periodic_time`), merge every run from the oldest back to the newest one not
/// being compacted into the last level. When only the oldest run is free, it is rewritten alone
/// if it holds such a file. Never a trivial move.
fn pick_periodic(v: &Version, runs: &[SortedRun], cfg: &UniversalConfig, busy: &HashSet<u64>) -> Option<Pick> {
    if !periodic_due(runs, cfg, busy) {
        return None;
    }
    let due = |f: &Arc<FileMeta>| is_due(f, cfg, busy);
    let mut start = runs.len();
    while start > 0 && !runs[start - 1].busy {
        start -= 1;
    }
    if start == runs.len() || (start == runs.len() - 1 && !runs[start].files.iter().any(due)) {
        return None;
    }
    let mut p = build_pick(v, runs, start, runs.len() - 1, true, cfg)?;
    p.kind = PickKind::Universal {
        trivial_move: false,
        compress: true,
    };
    p.reason = Some("PeriodicCompaction");
    Some(p)
}

/// True when free file `f` is older than `periodic_secs` (RocksDB's
/// `FilesMarkedForPeriodicCompaction`).
fn is_due(f: &Arc<FileMeta>, cfg: &UniversalConfig, busy: &HashSet<u64>) -> bool {
    let t = f.periodic_time();
    cfg.periodic_secs > 0
        && cfg.now > cfg.periodic_secs
        && !busy.contains(&f.number())
        && t > 0
        && t < cfg.now - cfg.periodic_secs
}

fn periodic_due(runs: &[SortedRun], cfg: &UniversalConfig, busy: &HashSet<u64>) -> bool {
    runs.iter().any(|r| r.files.iter().any(|f| is_due(f, cfg, busy)))
}

/// RocksDB's `PickDeleteTriggeredCompaction`, for files marked by the deletion collector
/// (`marked_files`: not in the last non-empty level, not busy).
/// - One level: from the newest marked L0 file (not the oldest file) through every older free
///   file, merged in L0.
/// - Several levels: the first marked file whose compaction can be built, as a leveled
///   compaction into the next non-empty level (the last level when only L0 has files): its
///   level's files sharing its user keys, for L0 every L0 file overlapping them (and no L0
///   compaction may be running), plus the output level's overlapping files. (RocksDB tries a
///   random marked file first and gives up if it cannot be built.)
fn pick_delete_triggered(v: &Version, runs: &[SortedRun], cfg: &UniversalConfig, busy: &HashSet<u64>) -> Option<Pick> {
    let is_busy = |fs: &[Arc<FileMeta>]| fs.iter().any(|f| busy.contains(&f.number()));
    if v.num_levels() == 1 {
        let start = (0..runs.len().saturating_sub(1))
            .find(|&i| !runs[i].busy && runs[i].files.iter().any(|f| f.meta.marked_for_compaction))?;
        let mut end = start;
        while end + 1 < runs.len() && !runs[end + 1].busy {
            end += 1;
        }
        if end == start {
            return None;
        }
        let p = build_pick(v, runs, start, end, true, cfg)?;
        return Some(Pick {
            reason: Some(REASON_MARKED),
            ..p
        });
    }
    for (level, f) in marked_files(v, busy) {
        if level == 0 && is_busy(&v.files[0]) {
            continue;
        }
        let output_level = match (level + 1..v.num_levels()).find(|&l| v.num_files(l) > 0) {
            Some(l) => l,
            None if level == 0 => v.num_levels() - 1,
            None => continue,
        };
        let mut inputs = clean_cut(v, level, vec![f]);
        if level == 0 {
            inputs = overlapping_l0(v, inputs);
        }
        let Some((lo, hi)) = super::picker::user_range(&inputs, &v.icmp) else {
            continue;
        };
        let next = clean_cut(v, output_level, v.overlapping(output_level, Some(&lo), Some(&hi)));
        if is_busy(&inputs) || is_busy(&next) {
            continue;
        }
        let mut p = Pick::leveled(level, output_level, inputs, next, 1);
        let all: Vec<Arc<FileMeta>> = p.all_inputs().cloned().collect();
        p.kind = PickKind::Universal {
            trivial_move: cfg.opts.allow_trivial_move && non_overlapping(v, &all),
            compress: true,
        };
        p.reason = Some(REASON_MARKED);
        return Some(p);
    }
    None
}

/// L0 files grown to every L0 file overlapping their user-key range, until none is left out
/// (RocksDB's `GetOverlappingL0Files`), newest first.
fn overlapping_l0(v: &Version, mut files: Vec<Arc<FileMeta>>) -> Vec<Arc<FileMeta>> {
    loop {
        let Some((lo, hi)) = super::picker::user_range(&files, &v.icmp) else {
            return files;
        };
        let grown: Vec<Arc<FileMeta>> = v.files[0]
            .iter()
            .filter(|f| {
                v.icmp.compare_user(f.smallest_user(), &hi) != Ordering::Greater
                    && v.icmp.compare_user(&lo, f.largest_user()) != Ordering::Greater
            })
            .cloned()
            .collect();
        if grown.len() <= files.len() {
            return files;
        }
        files = grown;
    }
}

/// Space amplification: runs `[start, last]` when the free runs just newer than the oldest
/// (stopping at a busy one) hold at least `max_size_amplification_percent` % of its bytes,
/// less the newest L0 files [`exclude_new_l0s`] leaves out.
pub(crate) fn size_amp_range(
    runs: &[SortedRun],
    o: &UniversalCompactOptions,
    l0_stop: usize,
) -> Option<(usize, usize)> {
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
    let start = exclude_new_l0s(runs, start, end, newer, o, l0_stop);
    let newer: u64 = runs[start..end].iter().map(|r| r.size).sum();
    let base = runs[end].size as u128;
    if (newer as u128) * 100 < o.max_size_amplification_percent as u128 * base {
        return None;
    }
    Some((start, end))
}

/// RocksDB's `MightExcludeNewL0sToReduceWriteStop`: a size-amplification merge of runs
/// `start..=end` (`newer`: the bytes of all but the oldest) need not lock every new L0 file, or
/// a few more flushes could stop writes while it runs. It leaves out the newest L0 files (at
/// least one L0 file and two runs stay in) while the runs kept still hold 90 % of `newer` and
/// still call for the merge; how many it may leave out is bounded by the merge widths, less the
/// L0 files that could still come before `level0_stop_writes_trigger`. Returns the new start.
fn exclude_new_l0s(
    runs: &[SortedRun],
    start: usize,
    end: usize,
    newer: u64,
    o: &UniversalCompactOptions,
    l0_stop: usize,
) -> usize {
    let l0 = runs[start..end].iter().filter(|r| r.level == 0).count();
    if l0 == 0 {
        return start;
    }
    let most = (l0 - 1).min(end - start - 1);
    let spare = l0_stop - l0_stop.min(end - start + 1);
    let (max_w, min_w) = (o.max_merge_width as usize, o.min_merge_width as usize);
    let upper = (max_w - max_w.min(spare)).min(most);
    let lower = (min_w - min_w.min(spare)).min(most);
    let base = runs[end].size as u128;
    let (mut excluded, mut kept) = (0, newer);
    for n in lower..=upper {
        let left = kept - runs[start + excluded..start + n].iter().map(|r| r.size).sum::<u64>();
        if (left as u128) * 100 < o.max_size_amplification_percent as u128 * base
            || (left as u128) < newer as u128 * 9 / 10
        {
            break;
        }
        (excluded, kept) = (n, left);
    }
    start + excluded
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
        l0_stop: usize::MAX,
        opts: UniversalCompactOptions::default(),
        periodic_secs: 0,
        now: 0,
    };
    let mut p = build_pick(v, &runs, 0, runs.len() - 1, true, &cfg)?;
    p.kind = PickKind::Universal {
        trivial_move: false,
        compress: true,
    };
    Some(p)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod triggers_tests;
