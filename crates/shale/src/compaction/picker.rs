//! The leveled compaction picker: a pure function of a version, the files being compacted, the
//! running compactions' output ranges and the per-level cursors (RocksDB's
//! `LevelCompactionBuilder`). Besides compactions into the next level it picks intra-L0
//! compactions (`PickIntraL0Compaction`) and grows a pick's start-level inputs while that does
//! not pull in more output-level files (`SetupOtherInputs`), both bounded by
//! `max_compaction_bytes`.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use super::level_targets::{compute_scores, compute_targets, LevelTargets, PickerConfig};
use crate::key::InternalKeyComparator;
use crate::lsm::version::{FileMeta, Version};
use crate::options::CompactionPri;

/// A chosen compaction.
#[derive(Clone)]
pub(crate) struct Pick {
    pub level: usize,
    pub output_level: usize,
    pub inputs: Vec<Arc<FileMeta>>,
    pub next_inputs: Vec<Arc<FileMeta>>,
    /// The score of the level when picked (checked by the picker tests).
    #[allow(dead_code)]
    pub score: f64,
    /// The level L0 compacts into when this was picked (sizes output files, compression).
    pub base_level: usize,
    /// Universal compaction: the inputs of the sorted runs between `level` and `output_level`
    /// (their level, the file).
    pub other_inputs: Vec<(usize, Arc<FileMeta>)>,
    pub kind: PickKind,
    /// RocksDB's name of the compaction reason (`CompactionReason`), when the picker sets one;
    /// the LOG's `compaction_reason` (otherwise derived from the levels).
    pub reason: Option<&'static str>,
}

/// What a pick does besides merging its inputs into `output_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum PickKind {
    /// A leveled (or FIFO intra-L0) compaction.
    #[default]
    Leveled,
    /// A universal compaction: `trivial_move` when its inputs overlap nowhere (and
    /// `allow_trivial_move`), `compress` false when `compression_size_percent` says so.
    Universal { trivial_move: bool, compress: bool },
    /// FIFO: the inputs (all of `level`) are deleted, nothing is written.
    Deletion,
}

impl Pick {
    /// A move of files to the next level without rewriting them: one L0 file, or up to 4
    /// adjacent L1+ files, with nothing of the output level in their range.
    pub(crate) fn is_trivial_move(&self) -> bool {
        match self.kind {
            PickKind::Leveled => {}
            PickKind::Universal { trivial_move, .. } => return trivial_move && self.output_level > 0,
            PickKind::Deletion => return false,
        }
        !self.inputs.is_empty()
            && (self.inputs.len() == 1 || self.level > 0)
            && self.next_inputs.is_empty()
            && self.level != self.output_level
    }
    /// An intra-L0 compaction: newest L0 files merged into one L0 file.
    pub(crate) fn is_intra_l0(&self) -> bool {
        self.level == 0 && self.output_level == 0 && self.kind != PickKind::Deletion
    }
    pub(crate) fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs
            .iter()
            .chain(self.other_inputs.iter().map(|(_, f)| f))
            .chain(self.next_inputs.iter())
    }
    /// Every input with the level it is taken from.
    pub(crate) fn inputs_by_level(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.inputs
            .iter()
            .map(|f| (self.level, f))
            .chain(self.other_inputs.iter().map(|(l, f)| (*l, f)))
            .chain(self.next_inputs.iter().map(|f| (self.output_level, f)))
    }
    /// A leveled pick (no inputs between `level` and `output_level`).
    pub(crate) fn leveled(
        level: usize,
        output_level: usize,
        inputs: Vec<Arc<FileMeta>>,
        next_inputs: Vec<Arc<FileMeta>>,
        base_level: usize,
    ) -> Pick {
        Pick {
            level,
            output_level,
            inputs,
            next_inputs,
            score: 0.0,
            base_level,
            other_inputs: Vec::new(),
            kind: PickKind::Leveled,
            reason: None,
        }
    }
    /// User-key range of everything this compaction reads (and so may write).
    pub(crate) fn key_range(&self, icmp: &InternalKeyComparator) -> Option<(Vec<u8>, Vec<u8>)> {
        let all: Vec<Arc<FileMeta>> = self.all_inputs().cloned().collect();
        user_range(&all, icmp)
    }
}

/// The output level and key range of a compaction in progress: another compaction into the
/// same level must not write into this range (its outputs would overlap).
#[derive(Clone, Debug)]
pub(crate) struct RunningRange {
    pub output_level: usize,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// Compaction score of each level (RocksDB's `ComputeCompactionScore`; the last level is 0).
pub(crate) fn level_scores(v: &Version, cfg: &PickerConfig) -> Vec<f64> {
    compute_scores(v, cfg, &compute_targets(v, cfg), &HashSet::new())
}

pub(crate) fn user_range(files: &[Arc<FileMeta>], icmp: &InternalKeyComparator) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let s = f.smallest_user();
        let l = f.largest_user();
        if lo.map(|x| icmp.compare_user(s, x) == Ordering::Less).unwrap_or(true) {
            lo = Some(s);
        }
        if hi.map(|x| icmp.compare_user(l, x) == Ordering::Greater).unwrap_or(true) {
            hi = Some(l);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// RocksDB's `kMinFilesForIntraL0Compaction`: an intra-L0 compaction merges at least this many
/// files.
pub(crate) const MIN_FILES_FOR_INTRA_L0: usize = 4;

/// Pick the next compaction: a pure function of the version, the files already being compacted,
/// the compactions running (their output ranges) and the per-level cursors. Returns `None` when
/// no level needs compaction.
///
/// Levels are tried by descending score (scores of at least 1 only). When L0 needs compaction
/// but L0 -> base level cannot run (an L0 file, or a base-level file it overlaps, is busy), an
/// intra-L0 compaction is tried instead, and the base level is not picked for a compaction of
/// its own in this round (RocksDB: otherwise L0 -> base could starve).
pub(crate) fn pick_compaction(
    v: &Version,
    cfg: &PickerConfig,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    let targets = compute_targets(v, cfg);
    let scores = compute_scores(v, cfg, &targets, busy);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|a, b| scores[*b].partial_cmp(&scores[*a]).unwrap_or(Ordering::Equal));
    let mut skipped_l0_to_base = false;
    for level in order {
        if skipped_l0_to_base && level == targets.base_level {
            continue;
        }
        if let Some(p) = pick_at_level(v, cfg, &targets, level, busy, running, cursors) {
            return Some(Pick {
                score: scores[level],
                ..p
            });
        }
        if level == 0 {
            skipped_l0_to_base = true;
            if let Some(p) = pick_intra_l0(v, cfg, busy, targets.base_level) {
                return Some(Pick { score: scores[0], ..p });
            }
        }
    }
    pick_marked(v, cfg, &targets, busy, running, cursors)
        .or_else(|| pick_aged(v, cfg, &targets, busy, running, cursors))
}

/// RocksDB's `PickIntraL0Compaction`: once L0 holds at least `level0_file_num_compaction_trigger
/// + 2` files and its newest file is not busy, merge the longest run of newest L0 files that
/// `intra_l0_run_len` allows into one L0 file.
fn pick_intra_l0(v: &Version, cfg: &PickerConfig, busy: &HashSet<u64>, base_level: usize) -> Option<Pick> {
    let files = v.files.first()?;
    if files.len() < cfg.l0_trigger.saturating_add(2) || busy.contains(&files.first()?.number()) {
        return None;
    }
    let sizes: Vec<(u64, bool)> = files
        .iter()
        .map(|f| (f.meta.file_size, busy.contains(&f.number())))
        .collect();
    let n = intra_l0_run_len(&sizes, MIN_FILES_FOR_INTRA_L0, cfg.max_compaction_bytes)?;
    Some(Pick::leveled(0, 0, files[..n].to_vec(), Vec::new(), base_level))
}

/// RocksDB's `FindIntraL0Compaction` over L0 files (size, busy) newest first: the number of
/// newest files to merge, or None. Files are added while none is busy, the total stays within
/// `max_bytes`, and the bytes rewritten per file removed (`total / (files - 1)`) do not grow;
/// the run must have at least `min_files` files.
///
/// (RocksDB also skips newest files whose sequence numbers overlap an unflushed memtable; only
/// ingested files can, and Shale has no ingestion, so every L0 file is older than the memtables.)
pub(crate) fn intra_l0_run_len(files: &[(u64, bool)], min_files: usize, max_bytes: u64) -> Option<usize> {
    let &(first, first_busy) = files.first()?;
    if first_busy {
        return None;
    }
    let mut total = first;
    let mut per_removed = u64::MAX;
    let mut limit = 1;
    while limit < files.len() {
        let (size, busy) = files[limit];
        let t = total.saturating_add(size);
        let per = t / limit as u64;
        if busy || per > per_removed || t > max_bytes {
            break;
        }
        total = t;
        per_removed = per;
        limit += 1;
    }
    (limit >= min_files.max(2)).then_some(limit)
}

/// True when writing `[lo, hi]` into `level` could overlap the output of a running compaction.
fn conflicts(running: &[RunningRange], level: usize, lo: &[u8], hi: &[u8], icmp: &InternalKeyComparator) -> bool {
    running.iter().any(|r| {
        r.output_level == level
            && icmp.compare_user(lo, &r.largest) != Ordering::Greater
            && icmp.compare_user(&r.smallest, hi) != Ordering::Greater
    })
}

fn pick_at_level(
    v: &Version,
    cfg: &PickerConfig,
    targets: &LevelTargets,
    level: usize,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    let icmp = &v.icmp;
    let output_level = if level == 0 { targets.base_level } else { level + 1 };
    if output_level >= v.num_levels() || output_level <= level {
        return None;
    }
    let base_level = targets.base_level;
    let is_busy = |fs: &[Arc<FileMeta>]| fs.iter().any(|f| busy.contains(&f.number()));
    let range_of = |inputs: &[Arc<FileMeta>], next: &[Arc<FileMeta>]| {
        let all: Vec<Arc<FileMeta>> = inputs.iter().chain(next.iter()).cloned().collect();
        user_range(&all, icmp)
    };
    if level == 0 {
        let inputs: Vec<Arc<FileMeta>> = v.files[0].clone();
        if inputs.is_empty() || is_busy(&inputs) {
            return None;
        }
        let (lo, hi) = user_range(&inputs, icmp)?;
        let next = v.overlapping(output_level, Some(&lo), Some(&hi));
        if is_busy(&next) {
            return None;
        }
        let (lo, hi) = range_of(&inputs, &next)?;
        if conflicts(running, output_level, &lo, &hi, icmp) {
            return None;
        }
        return Some(Pick::leveled(level, output_level, inputs, next, base_level));
    }
    let files = &v.files[level];
    if files.is_empty() {
        return None;
    }
    let order: Vec<usize> = match cfg.pri {
        CompactionPri::RoundRobin => {
            // Start after the cursor of this level.
            let cursor = cursors.get(level).map(|c| c.as_slice()).unwrap_or(&[]);
            let start = if cursor.is_empty() {
                0
            } else {
                files.partition_point(|f| icmp.compare(&f.meta.largest, cursor) != Ordering::Greater)
            };
            (0..files.len()).map(|i| (start + i) % files.len()).collect()
        }
        CompactionPri::MinOverlappingRatio => {
            // Bytes the next level would rewrite per byte moved down, scaled as RocksDB does.
            let mut by_ratio: Vec<(u128, usize)> = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let overlap: u64 = v
                        .overlapping(output_level, Some(f.smallest_user()), Some(f.largest_user()))
                        .iter()
                        .map(|o| o.meta.file_size)
                        .sum();
                    (overlap as u128 * 1024 / f.meta.file_size.max(1) as u128, i)
                })
                .collect();
            by_ratio.sort_unstable();
            by_ratio.into_iter().map(|(_, i)| i).collect()
        }
    };
    order
        .into_iter()
        .find_map(|i| pick_file(v, cfg, level, output_level, i, busy, running, base_level))
}

/// The compaction of file `i` of L1+ level `level` into `output_level`: the file, the
/// output-level files it overlaps, grown as `SetupOtherInputs` does (or, overlapping nothing,
/// a trivial move of up to 4 files); None if a file is busy or the range conflicts with a
/// running compaction.
#[allow(clippy::too_many_arguments)]
fn pick_file(
    v: &Version,
    cfg: &PickerConfig,
    level: usize,
    output_level: usize,
    i: usize,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    base_level: usize,
) -> Option<Pick> {
    let icmp = &v.icmp;
    let is_busy = |fs: &[Arc<FileMeta>]| fs.iter().any(|f| busy.contains(&f.number()));
    let range_of = |inputs: &[Arc<FileMeta>], next: &[Arc<FileMeta>]| {
        let all: Vec<Arc<FileMeta>> = inputs.iter().chain(next.iter()).cloned().collect();
        user_range(&all, icmp)
    };
    let f = v.files[level].get(i)?;
    if busy.contains(&f.number()) {
        return None;
    }
    let next = v.overlapping(output_level, Some(f.smallest_user()), Some(f.largest_user()));
    if is_busy(&next) {
        return None;
    }
    let mut inputs = vec![f.clone()];
    let mut next = next;
    if next.is_empty() && cfg.multi_file_moves {
        let more = extend_trivial_move(v, cfg, level, output_level, i, busy);
        // A running compaction writing into the grown range leaves the move at one file.
        if let Some((lo, hi)) = user_range(&more, icmp) {
            if !conflicts(running, output_level, &lo, &hi, icmp) {
                inputs = more;
            }
        }
    }
    if !next.is_empty() {
        let right_only = cfg.pri == CompactionPri::RoundRobin;
        if let Some((more, more_next)) = expand_inputs(v, cfg, level, output_level, &inputs, &next, busy, right_only) {
            let (lo, hi) = range_of(&more, &more_next)?;
            if !conflicts(running, output_level, &lo, &hi, icmp) {
                inputs = more;
                next = more_next;
            }
        }
    }
    let (lo, hi) = range_of(&inputs, &next)?;
    if conflicts(running, output_level, &lo, &hi, icmp) {
        return None;
    }
    Some(Pick::leveled(level, output_level, inputs, next, base_level))
}

/// RocksDB's `CompactionReason` name of a compaction of files marked by the deletion collector.
pub(crate) const REASON_MARKED: &str = "FilesMarkedForCompaction";

/// RocksDB's TTL and periodic compactions of leveled compaction (`PickFileToCompact` over
/// `ExpiredTtlFiles`, then over `FilesMarkedForPeriodicCompaction`), tried after marked files:
/// - TTL (`ttl` > 0): a free file above the last level whose oldest ancestor time
///   (`FileMeta::oldest_ancestor_time`) is older than `ttl` moves into the next level (L0 into
///   the base level), as the score pick of that file would; files of the last non-empty level
///   stay.
/// - Periodic (`periodic_compaction_seconds` > 0): a free file of any level older than that
///   (`FileMeta::periodic_time`) is compacted into the next level with dynamic level sizes, or
///   when it is in the last non-empty level (or without dynamic level sizes) rewritten within
///   its level, with the files of its level sharing its user keys.
fn pick_aged(
    v: &Version,
    cfg: &PickerConfig,
    targets: &LevelTargets,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    let last_non_empty = (0..v.num_levels()).rev().find(|&l| v.num_files(l) > 0)?;
    let l0_busy = v.files[0].iter().any(|f| busy.contains(&f.number()));
    let down = |level: usize, f: &Arc<FileMeta>| -> Option<Pick> {
        if level == 0 {
            return pick_at_level(v, cfg, targets, 0, busy, running, cursors);
        }
        let i = v.files[level].iter().position(|g| g.number() == f.number())?;
        (level + 1 < v.num_levels())
            .then(|| pick_file(v, cfg, level, level + 1, i, busy, running, targets.base_level))
            .flatten()
    };
    let free = |level: usize, f: &&Arc<FileMeta>| !(busy.contains(&f.number()) || (level == 0 && l0_busy));
    if cfg.ttl > 0 && cfg.now > cfg.ttl {
        let limit = cfg.now - cfg.ttl;
        for level in 0..last_non_empty.min(v.num_levels() - 1) {
            for f in v.files[level].iter().filter(|f| free(level, f)) {
                let t = f.oldest_ancestor_time();
                if t > 0 && t < limit {
                    if let Some(p) = down(level, f) {
                        return Some(Pick {
                            reason: Some("Ttl"),
                            ..p
                        });
                    }
                }
            }
        }
    }
    if cfg.periodic_secs > 0 && cfg.now > cfg.periodic_secs {
        let limit = cfg.now - cfg.periodic_secs;
        for level in 0..=last_non_empty {
            for f in v.files[level].iter().filter(|f| free(level, f)) {
                let t = f.periodic_time();
                if t == 0 || t >= limit {
                    continue;
                }
                let p = if cfg.dynamic && level < last_non_empty {
                    down(level, f)
                } else {
                    rewrite_in_level(v, level, f, busy, running, targets.base_level)
                };
                if let Some(p) = p {
                    return Some(Pick {
                        reason: Some("PeriodicCompaction"),
                        ..p
                    });
                }
            }
        }
    }
    None
}

/// A compaction of `f` with the files of its level sharing its user keys back into that level
/// (L0: an L0 -> L0 compaction of the L0 files overlapping it); None if any is busy or a running
/// compaction writes into the range.
fn rewrite_in_level(
    v: &Version,
    level: usize,
    f: &Arc<FileMeta>,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    base_level: usize,
) -> Option<Pick> {
    let inputs = clean_cut(v, level, vec![f.clone()]);
    if inputs.iter().any(|g| busy.contains(&g.number())) {
        return None;
    }
    let (lo, hi) = user_range(&inputs, &v.icmp)?;
    if level > 0 && conflicts(running, level, &lo, &hi, &v.icmp) {
        return None;
    }
    Some(Pick::leveled(level, level, inputs, Vec::new(), base_level))
}

/// The files the deletion collector marked for compaction that a compaction may take (RocksDB's
/// `ComputeFilesMarkedForCompaction`): not busy, and above the last non-empty level (a marked
/// file there has nowhere to go), in level order.
pub(crate) fn marked_files(v: &Version, busy: &HashSet<u64>) -> Vec<(usize, Arc<FileMeta>)> {
    let last = (1..v.num_levels())
        .rev()
        .find(|&l| v.num_files(l) > 0)
        .map_or(0, |l| l - 1);
    let mut out = Vec::new();
    for level in 0..=last.min(v.num_levels().saturating_sub(1)) {
        for f in &v.files[level] {
            if f.meta.marked_for_compaction && !busy.contains(&f.number()) {
                out.push((level, f.clone()));
            }
        }
    }
    out
}

/// RocksDB's `PickFilesMarkedForCompaction` for leveled compaction, tried when no level's score
/// calls for one: the first marked file (`marked_files`) whose compaction can be built, into the
/// base level from L0 (the whole L0 pick, as for a score) or into the next level (as a score
/// pick of that file). RocksDB tries a random marked file first; Shale goes in level order.
fn pick_marked(
    v: &Version,
    cfg: &PickerConfig,
    targets: &LevelTargets,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    marked_files(v, busy).into_iter().find_map(|(level, f)| {
        let p = if level == 0 {
            pick_at_level(v, cfg, targets, 0, busy, running, cursors)
        } else {
            let i = v.files[level].iter().position(|g| g.number() == f.number())?;
            (level + 1 < v.num_levels())
                .then(|| pick_file(v, cfg, level, level + 1, i, busy, running, targets.base_level))
                .flatten()
        };
        p.map(|p| Pick {
            reason: Some(REASON_MARKED),
            ..p
        })
    })
}

type Files = Vec<Arc<FileMeta>>;

/// Most files one trivial move takes (RocksDB's `kMaxMultiTrivialMove`).
const MAX_MULTI_TRIVIAL_MOVE: usize = 4;

/// RocksDB's `TryExtendNonL0TrivialMove`: file `start` of an L1+ level overlaps nothing in the
/// output level; grow the move to the files after it while the whole range still overlaps
/// nothing there, no file is busy, the cut stays clean (no user key shared with the next file
/// out), the total stays within `max_compaction_bytes`, and at most 4 files are taken. Moving
/// several files at once drains the level with fewer, cheaper steps.
///
/// RocksDB also grows to the left (except with `kRoundRobin`). Here that never finds a file:
/// files with equal overlap ratios are tried in key order, so a free left neighbour that
/// overlaps nothing below would have been picked first.
fn extend_trivial_move(
    v: &Version,
    cfg: &PickerConfig,
    level: usize,
    output_level: usize,
    start: usize,
    busy: &HashSet<u64>,
) -> Files {
    let icmp = &v.icmp;
    let files = &v.files[level];
    let (lo, mut hi) = (start, start);
    let mut total = files[start].meta.file_size;
    let fits = |lo: usize, hi: usize, total: u64| {
        total <= cfg.max_compaction_bytes
            && v.overlapping(
                output_level,
                Some(files[lo].smallest_user()),
                Some(files[hi].largest_user()),
            )
            .is_empty()
    };
    while hi + 1 < files.len() && hi - lo + 1 < MAX_MULTI_TRIVIAL_MOVE {
        let n = &files[hi + 1];
        let clean = files
            .get(hi + 2)
            .is_none_or(|after| icmp.compare_user(n.largest_user(), after.smallest_user()) != Ordering::Equal);
        if busy.contains(&n.number()) || !clean || !fits(lo, hi + 1, total + n.meta.file_size) {
            break;
        }
        total += n.meta.file_size;
        hi += 1;
    }
    files[lo..=hi].to_vec()
}

/// RocksDB's `CompactRange` limit for a manual compaction out of an L1+ level: `inputs` (files of
/// that level, in key order) are cut into consecutive chunks, each ending at the first file where
/// its start-level bytes plus the bytes of `output_level` its range overlaps reach `max_bytes`
/// (that file included, so every chunk makes progress even when one file is over the limit).
/// A chunk never ends between two files sharing a boundary user key.
pub(crate) fn split_manual_inputs(
    v: &Version,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
    max_bytes: u64,
) -> Vec<Files> {
    let icmp = &v.icmp;
    let mut chunks: Vec<Files> = Vec::new();
    let mut cur: Files = Vec::new();
    let mut in_bytes = 0u64;
    for (i, f) in inputs.iter().enumerate() {
        cur.push(f.clone());
        in_bytes = in_bytes.saturating_add(f.meta.file_size);
        let Some(nextf) = inputs.get(i + 1) else {
            break;
        };
        if icmp.compare_user(f.largest_user(), nextf.smallest_user()) == Ordering::Equal {
            continue;
        }
        let lo = cur[0].smallest_user();
        let out_bytes = total_size(&v.overlapping(output_level, Some(lo), Some(f.largest_user())));
        if in_bytes.saturating_add(out_bytes) >= max_bytes {
            chunks.push(std::mem::take(&mut cur));
            in_bytes = 0;
        }
    }
    if !cur.is_empty() {
        chunks.push(cur);
    }
    chunks
}

/// Total size of `files`.
fn total_size(files: &[Arc<FileMeta>]) -> u64 {
    files.iter().map(|f| f.meta.file_size).sum()
}

/// `files` of `level` grown until no file outside shares a user key with them (RocksDB's
/// `ExpandInputsToCleanCut`: all entries of a user key are compacted together).
pub(crate) fn clean_cut(v: &Version, level: usize, mut files: Vec<Arc<FileMeta>>) -> Vec<Arc<FileMeta>> {
    loop {
        let Some((lo, hi)) = user_range(&files, &v.icmp) else {
            return files;
        };
        let grown = v.overlapping(level, Some(&lo), Some(&hi));
        if grown.len() <= files.len() {
            return files;
        }
        files = grown;
    }
}

/// RocksDB's input expansion in `SetupOtherInputs`: add start-level files inside the key range
/// of the chosen inputs and their output-level overlap, if that pulls in no further
/// output-level file, no busy file, and the output-level bytes plus the grown start-level bytes
/// stay below `max_compaction_bytes`. First the files overlapping that range are tried, then
/// only those entirely inside it. Round-robin priority grows only towards larger keys (the
/// cursor moves past every input). Returns the grown (inputs, output-level inputs), or None.
#[allow(clippy::too_many_arguments)]
fn expand_inputs(
    v: &Version,
    cfg: &PickerConfig,
    level: usize,
    output_level: usize,
    inputs: &[Arc<FileMeta>],
    next: &[Arc<FileMeta>],
    busy: &HashSet<u64>,
    right_only: bool,
) -> Option<(Files, Files)> {
    let icmp = &v.icmp;
    let is_busy = |fs: &[Arc<FileMeta>]| fs.iter().any(|f| busy.contains(&f.number()));
    let limit = cfg.max_compaction_bytes;
    let next_size = total_size(next);
    let (in_lo, _) = user_range(inputs, icmp)?;
    let all: Vec<Arc<FileMeta>> = inputs.iter().chain(next.iter()).cloned().collect();
    let (all_lo, all_hi) = user_range(&all, icmp)?;
    let lo = if right_only { in_lo } else { all_lo };
    let fits = |fs: &[Arc<FileMeta>]| {
        fs.len() > inputs.len() && next_size.saturating_add(total_size(fs)) < limit && !is_busy(fs)
    };
    // Every start-level file touching the range, if the output-level files stay the same.
    let overlapping = clean_cut(v, level, v.overlapping(level, Some(&lo), Some(&all_hi)));
    if fits(&overlapping) {
        let (elo, ehi) = user_range(&overlapping, icmp)?;
        let new_next = clean_cut(v, output_level, v.overlapping(output_level, Some(&elo), Some(&ehi)));
        if new_next.len() == next.len() && !is_busy(&new_next) {
            return Some((overlapping, new_next));
        }
    }
    // Only the start-level files entirely inside the range (these overlap no other
    // output-level file); a file sharing a boundary user key with a neighbour outside is left
    // out, with everything beyond it.
    let inside: Vec<Arc<FileMeta>> = v.files[level]
        .iter()
        .filter(|f| {
            icmp.compare_user(f.smallest_user(), &lo) != Ordering::Less
                && icmp.compare_user(f.largest_user(), &all_hi) != Ordering::Greater
        })
        .cloned()
        .collect();
    if clean_cut(v, level, inside.clone()).len() != inside.len() {
        return None;
    }
    fits(&inside).then(|| (inside, next.to_vec()))
}

#[cfg(test)]
pub(crate) mod golden_tests;
