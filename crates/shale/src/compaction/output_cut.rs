//! Where compaction outputs end: a pure function of the output keys and the grandparent files.

use std::cmp::Ordering;

use crate::key::InternalKeyComparator;

/// Decides where compaction outputs are cut, as RocksDB's `CompactionOutputs::ShouldStopBefore`
/// does for leveled compaction (with its default `level_compaction_dynamic_file_size`), tracking
/// the output keys against the files of the level below the output level (the grandparents):
/// - at the target file size when there are no grandparents, else at twice it;
/// - at a grandparent boundary, when the file plus the grandparent bytes it overlaps would
///   exceed `max_compaction_bytes` (a later compaction of it would be too big);
/// - at a grandparent boundary, when the key jumped over a whole grandparent file larger than
///   1/8 of the target size (that file then stays out of a later compaction);
/// - at a grandparent boundary once the file reaches 50 % of the target size, plus 5 % per
///   boundary it has crossed (at most 90 %): outputs end where the next level's files end, so a
///   later compaction of one rewrites fewer bytes below.
pub(crate) struct GrandparentCut<'a> {
    /// (smallest user key, largest user key, size) of each grandparent file, in key order.
    files: &'a [(Vec<u8>, Vec<u8>, u64)],
    max: u64,
    target: u64,
    /// The size at which an output is always cut: the target size at the bottom (no
    /// grandparents), else twice it, as RocksDB: between the two, outputs end at the next
    /// grandparent boundary (the pre-cut rule below always cuts there from 90 % of the target).
    max_file: u64,
    /// The grandparent file at or after the last key.
    idx: usize,
    /// The last key lies before `files[idx]` (in the gap between two files), not inside it.
    in_gap: bool,
    seen_key: bool,
    /// Grandparent bytes the current output overlaps.
    overlap: u64,
    /// Grandparent boundaries crossed since the current output began.
    switched: u64,
}

impl<'a> GrandparentCut<'a> {
    /// `max`: `max_compaction_bytes`; `target`: the output files' target size.
    pub(crate) fn new(files: &'a [(Vec<u8>, Vec<u8>, u64)], max: u64, target: u64) -> Self {
        GrandparentCut {
            files,
            max,
            target,
            max_file: if files.is_empty() {
                target
            } else {
                target.saturating_mul(2)
            },
            idx: 0,
            in_gap: true,
            seen_key: false,
            overlap: 0,
            switched: 0,
        }
    }

    /// Move past the grandparent boundaries before `key`; returns how many were crossed.
    fn advance(&mut self, icmp: &InternalKeyComparator, key: &[u8]) -> u64 {
        let mut crossed = 0;
        while self.idx < self.files.len() {
            let f = &self.files[self.idx];
            if self.in_gap {
                if icmp.compare_user(key, &f.0) == Ordering::Less {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.switched += 1;
                    self.overlap += f.2;
                }
                self.in_gap = false;
            } else {
                // Stay on the last file that contains the key.
                let c = icmp.compare_user(key, &f.1);
                let next_starts_after = self
                    .files
                    .get(self.idx + 1)
                    .is_none_or(|n| icmp.compare_user(key, &n.0) == Ordering::Less);
                if c == Ordering::Less || (c == Ordering::Equal && next_starts_after) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.switched += 1;
                }
                self.in_gap = true;
                self.idx += 1;
            }
        }
        if !self.seen_key {
            self.overlap = self.key_overlap(icmp, key);
        }
        self.seen_key = true;
        crossed
    }

    /// Grandparent bytes the key itself lies in (several files may end at that user key).
    fn key_overlap(&self, icmp: &InternalKeyComparator, key: &[u8]) -> u64 {
        if self.in_gap || self.idx >= self.files.len() {
            return 0;
        }
        let mut n = self.files[self.idx].2;
        let mut i = self.idx;
        while i > 0 && icmp.compare_user(key, &self.files[i - 1].1) == Ordering::Equal {
            i -= 1;
            n += self.files[i].2;
        }
        n
    }

    /// Called with each output user key in order, with the size of the open output (None if
    /// none is open): true if the output should be cut before `key`.
    pub(crate) fn should_cut(&mut self, icmp: &InternalKeyComparator, key: &[u8], cur_size: Option<u64>) -> bool {
        let before = self.overlap;
        let crossed = self.advance(icmp, key);
        let Some(size) = cur_size else {
            return false;
        };
        let cut = if size >= self.max_file {
            true
        } else if crossed == 0 {
            false
        } else {
            let skippable = if self.in_gap { 2 } else { 3 };
            self.overlap.saturating_add(size) > self.max
                || (crossed >= skippable && self.overlap.saturating_sub(before) > self.target / 8)
                || size
                    >= self
                        .target
                        .div_ceil(100)
                        .saturating_mul(50 + (self.switched * 5).min(40))
        };
        if cut {
            self.switched = 0;
            self.overlap = self.key_overlap(icmp, key);
        }
        cut
    }
}
