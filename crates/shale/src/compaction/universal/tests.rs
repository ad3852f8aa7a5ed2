//! Golden tests of the universal picker: hand-built versions, no I/O. The sequences are the
//! examples of RocksDB's wiki page "Universal Compaction" (flushes of size 1, a merge writes
//! the sum of its inputs).

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::compaction::picker::golden_tests::{test_file, test_version};
use crate::lsm::version::{FileMeta, Version};

fn file(n: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
    test_file(n, lo, hi, size, 0)
}

fn version(levels: Vec<Vec<Arc<FileMeta>>>, num_levels: usize) -> Version {
    test_version(levels, num_levels)
}

fn cfg(trigger: usize, f: impl FnOnce(&mut UniversalCompactOptions)) -> UniversalConfig {
    let mut opts = UniversalCompactOptions::default();
    f(&mut opts);
    UniversalConfig {
        l0_trigger: trigger,
        l0_stop: 36,
        opts,
        periodic_secs: 0,
        now: 0,
    }
}

/// L0 files of the given sizes (newest first), in a single-level DB.
fn l0(sizes: &[u64]) -> Version {
    let n = sizes.len() as u64;
    let files = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| file(100 + n - i as u64, "a", "z", s))
        .collect();
    version(vec![files], 1)
}

fn sizes(v: &Version) -> Vec<u64> {
    v.files[0].iter().map(|f| f.meta.file_size).collect()
}

/// Apply a pick to an L0-only version: its inputs become one file of their total size, in
/// their place.
fn apply(v: &Version, p: &Pick) -> Version {
    assert_eq!((p.level, p.output_level), (0, 0), "single-level picks stay in L0");
    let picked: HashSet<u64> = p.inputs.iter().map(|f| f.number()).collect();
    let mut out = Vec::new();
    let mut merged: Option<u64> = None;
    for f in &v.files[0] {
        if picked.contains(&f.number()) {
            *merged.get_or_insert(0) += f.meta.file_size;
            continue;
        }
        if let Some(m) = merged.take() {
            out.push(m);
        }
        out.push(f.meta.file_size);
    }
    if let Some(m) = merged {
        out.push(m);
    }
    l0(&out)
}

/// Flush `steps` files of size 1, running `pick` to completion after each; returns the run
/// sizes after each flush and after each compaction, as the wiki prints them.
fn simulate(steps: usize, pick: impl Fn(&Version) -> Option<Pick>) -> Vec<String> {
    let mut v = l0(&[]);
    let mut lines = Vec::new();
    for _ in 0..steps {
        let mut s = vec![1];
        s.extend(sizes(&v));
        v = l0(&s);
        let mut line = fmt(&sizes(&v));
        while let Some(p) = pick(&v) {
            v = apply(&v, &p);
            line = format!("{line}  =>  {}", fmt(&sizes(&v)));
        }
        lines.push(line);
    }
    lines
}

fn fmt(s: &[u64]) -> String {
    s.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")
}

#[test]
fn size_amplification_example() {
    // The wiki's example: max_size_amplification_percent = 25, trigger 1, only size-amp
    // compactions (a min_merge_width no pick can reach). RocksDB compacts when the newer runs
    // hold at least the percentage (`newer * 100 >= pct * last`), so at the page's boundary case
    // "1 4" (exactly 25 %) RocksDB's code compacts while the page does not; 26 % gives the
    // page's sequence.
    let c = cfg(1, |o| {
        o.max_size_amplification_percent = 26;
        o.min_merge_width = u32::MAX;
        o.max_merge_width = u32::MAX;
    });
    let got = simulate(19, |v| pick_universal(v, &c, &HashSet::new(), &[]));
    let want = [
        "1",
        "1 1  =>  2",
        "1 2  =>  3",
        "1 3  =>  4",
        "1 4",
        "1 1 4  =>  6",
        "1 6",
        "1 1 6  =>  8",
        "1 8",
        "1 1 8",
        "1 1 1 8  =>  11",
        "1 11",
        "1 1 11",
        "1 1 1 11  =>  14",
        "1 14",
        "1 1 14",
        "1 1 1 14",
        "1 1 1 1 14  =>  18",
        "1 18",
    ];
    assert_eq!(got, want);
    // At exactly the percentage, RocksDB's rule compacts.
    let c25 = cfg(1, |o| {
        o.max_size_amplification_percent = 25;
        o.min_merge_width = u32::MAX;
    });
    assert!(pick_universal(&l0(&[1, 4]), &c25, &HashSet::new(), &[]).is_some());
    assert!(pick_universal(&l0(&[1, 5]), &c25, &HashSet::new(), &[]).is_none());
}

#[test]
fn size_ratio_example() {
    // The wiki's example: size_ratio = 0, only size-ratio compactions.
    let c = cfg(1, |o| o.size_ratio = 0);
    let got = simulate(17, |v| {
        let runs = sorted_runs(v, &HashSet::new());
        let (s, e) = ratio_range(&runs, &c.opts, 0.0, u32::MAX)?;
        let mut p = Pick::leveled(0, 0, Vec::new(), Vec::new(), 1);
        for r in &runs[s..=e] {
            p.inputs.extend(r.files.iter().cloned());
        }
        Some(p)
    });
    let want = [
        "1",
        "1 1  =>  2",
        "1 2",
        "1 1 2  =>  4",
        "1 4",
        "1 1 4  =>  2 4",
        "1 2 4",
        "1 1 2 4  =>  8",
        "1 8",
        "1 1 8  =>  2 8",
        "1 2 8",
        "1 1 2 8  =>  4 8",
        "1 4 8",
        "1 1 4 8  =>  2 4 8",
        "1 2 4 8",
        "1 1 2 4 8  =>  16",
        "1 16",
    ];
    assert_eq!(got, want);
}

#[test]
fn nothing_below_the_trigger() {
    let c = cfg(4, |_| {});
    assert!(pick_universal(&l0(&[1, 1, 1]), &c, &HashSet::new(), &[]).is_none());
    // Four equal runs: the size ratio merges them all (size amp would too, but it needs the
    // newer runs to reach 200 % of the last: 30 >= 20, so it is the size-amp pick; no file is
    // left out, which would keep less than 90 % of the newer bytes).
    let p = pick_universal(&l0(&[10, 10, 10, 10]), &c, &HashSet::new(), &[]).unwrap();
    assert_eq!(p.inputs.len(), 4);
    assert_eq!(p.output_level, 0);
    assert!(p.score >= 1.0);
}

#[test]
fn merge_width_limits_the_size_ratio_pick() {
    let runs = sorted_runs(&l0(&[1, 1, 1, 1, 1, 100]), &HashSet::new());
    let o = cfg(1, |o| {
        o.max_merge_width = 3;
    })
    .opts;
    assert_eq!(ratio_range(&runs, &o, 1.0, u32::MAX), Some((0, 2)));
    let o = cfg(1, |o| o.min_merge_width = 6).opts;
    assert_eq!(ratio_range(&runs, &o, 1.0, u32::MAX), None);
}

#[test]
fn similar_stop_style_stops_at_a_much_smaller_run() {
    // Total: 10, 10 (sum 20), then 15 <= 20 joins. Similar: 15 is not within 1 % of 10.
    let runs = sorted_runs(&l0(&[10, 10, 15, 1000]), &HashSet::new());
    let total = cfg(1, |_| {}).opts;
    assert_eq!(ratio_range(&runs, &total, 1.0, u32::MAX), Some((0, 2)));
    let similar = cfg(1, |o| o.stop_style = UniversalCompactionStopStyle::Similar).opts;
    assert_eq!(ratio_range(&runs, &similar, 1.0, u32::MAX), Some((0, 1)));
    // Similar also stops at a run much smaller than the last one taken.
    let runs = sorted_runs(&l0(&[10, 10, 1, 1000]), &HashSet::new());
    assert_eq!(ratio_range(&runs, &similar, 1.0, u32::MAX), Some((0, 1)));
}

#[test]
fn run_count_merges_the_newest_runs_regardless_of_size() {
    // Sizes that defeat the size ratio (each run larger than everything newer) and a size amp
    // below the limit: 5 runs with a trigger of 3 merge the 3 newest (5 - 3 + 1).
    let c = cfg(3, |o| o.max_size_amplification_percent = 1000);
    let v = l0(&[1, 3, 9, 27, 81]);
    let p = pick_universal(&v, &c, &HashSet::new(), &[]).unwrap();
    assert_eq!(
        p.inputs.iter().map(|f| f.meta.file_size).collect::<Vec<_>>(),
        vec![1, 3, 9]
    );
    assert_eq!(p.output_level, 0);
}

#[test]
fn busy_runs_are_skipped_and_stop_a_merge() {
    let c = cfg(2, |o| o.max_size_amplification_percent = 1000);
    let v = l0(&[1, 1, 1, 1, 50]);
    // The third newest is busy: the merge starts at the newest and stops before it.
    let busy: HashSet<u64> = [v.files[0][2].number()].into_iter().collect();
    let p = pick_universal(&v, &c, &busy, &[]).unwrap();
    assert_eq!(p.inputs.len(), 2);
    assert_eq!(p.inputs[0].number(), v.files[0][0].number());
    // A busy oldest run blocks the size-amp pick.
    let c = cfg(2, |o| {
        o.max_size_amplification_percent = 1;
        o.min_merge_width = u32::MAX;
    });
    let busy: HashSet<u64> = [v.files[0][4].number()].into_iter().collect();
    assert!(pick_universal(&v, &c, &busy, &[]).is_none());
}

#[test]
fn outputs_go_to_the_last_level_or_above_the_next_older_run() {
    // L0 files 10, 10 and runs at L3 (size 20) and L6 (size 1000), 7 levels.
    let v = version(
        vec![
            vec![file(20, "a", "m", 10), file(19, "b", "n", 10)],
            vec![],
            vec![],
            vec![file(5, "a", "z", 20)],
            vec![],
            vec![],
            vec![file(1, "a", "k", 600), file(2, "l", "z", 400)],
        ],
        7,
    );
    // Size ratio: 10, 10 (20), 20 joins (40); 1000 does not: output just above L6 = L5, the
    // L3 run among the inputs of another level.
    let c = cfg(2, |_| {});
    let p = pick_universal(&v, &c, &HashSet::new(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 5));
    assert_eq!(p.inputs.len(), 2);
    assert_eq!(
        p.other_inputs.iter().map(|(l, f)| (*l, f.number())).collect::<Vec<_>>(),
        vec![(3, 5)]
    );
    assert!(p.next_inputs.is_empty());
    // Size amp (40 newer bytes >= 1 % of 1000): everything into the last level, whose files
    // are the output-level inputs (leaving the newest L0 file out would keep 30 < 90 % of 40).
    let c = cfg(2, |o| o.max_size_amplification_percent = 1);
    let p = pick_universal(&v, &c, &HashSet::new(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 6));
    assert_eq!(p.next_inputs.len(), 2);
    assert_eq!(p.all_inputs().count(), 5);
    // A running compaction writing into L5 over an overlapping range blocks the first pick.
    let c = cfg(2, |_| {});
    let running = [RunningRange {
        output_level: 5,
        smallest: b"c".to_vec(),
        largest: b"d".to_vec(),
    }];
    assert!(pick_universal(&v, &c, &HashSet::new(), &running).is_none());
}

#[test]
fn trivial_move_only_for_disjoint_inputs_when_allowed() {
    let v = version(
        vec![
            vec![file(20, "a", "c", 1), file(19, "d", "f", 1)],
            vec![],
            vec![file(3, "x", "z", 1000)],
        ],
        3,
    );
    let allow = cfg(2, |o| o.allow_trivial_move = true);
    let p = pick_universal(&v, &allow, &HashSet::new(), &[]).unwrap();
    assert_eq!(p.output_level, 1);
    assert!(p.is_trivial_move());
    let deny = cfg(2, |_| {});
    assert!(!pick_universal(&v, &deny, &HashSet::new(), &[])
        .unwrap()
        .is_trivial_move());
    let v = version(
        vec![
            vec![file(20, "a", "e", 1), file(19, "d", "f", 1)],
            vec![],
            vec![file(3, "x", "z", 1000)],
        ],
        3,
    );
    assert!(!pick_universal(&v, &allow, &HashSet::new(), &[])
        .unwrap()
        .is_trivial_move());
}

#[test]
fn compression_size_percent_leaves_new_outputs_uncompressed() {
    // 1, 1 merge; the older run holds 100 of 102 bytes: at 50 % the output is not compressed.
    let v = l0(&[1, 1, 100]);
    let c = cfg(2, |o| {
        o.compression_size_percent = 50;
        o.max_size_amplification_percent = 1000;
    });
    let p = pick_universal(&v, &c, &HashSet::new(), &[]).unwrap();
    assert_eq!(p.inputs.len(), 2);
    assert_eq!(
        p.kind,
        PickKind::Universal {
            trivial_move: false,
            compress: false
        }
    );
    let c = cfg(2, |o| o.max_size_amplification_percent = 1000);
    let p = pick_universal(&v, &c, &HashSet::new(), &[]).unwrap();
    assert_eq!(
        p.kind,
        PickKind::Universal {
            trivial_move: false,
            compress: true
        }
    );
}

#[test]
fn manual_compaction_merges_every_run_into_the_last_level() {
    let v = version(
        vec![vec![file(20, "a", "c", 1)], vec![], vec![file(3, "x", "z", 10)]],
        4,
    );
    let p = pick_universal_manual(&v, &HashSet::new()).unwrap();
    assert_eq!((p.level, p.output_level), (0, 3));
    assert_eq!(p.all_inputs().count(), 2);
    let busy: HashSet<u64> = [3].into_iter().collect();
    assert!(pick_universal_manual(&v, &busy).is_none());
}

/// RocksDB's `MightExcludeNewL0sToReduceWriteStop`: a size-amplification merge leaves out the
/// newest L0 files while the runs kept hold 90 % of the newer bytes and still call for the merge.
#[test]
fn size_amp_leaves_out_the_newest_small_l0_files() {
    let none = HashSet::new();
    let c = cfg(4, |_| {});
    let range = |sizes: &[u64], stop: usize| size_amp_range(&sorted_runs(&l0(sizes), &none), &c.opts, stop);
    // Newer runs 1 + 1 + 1 + 30 + 30 = 63 over an oldest run of 30: the 1s stay out (60 is
    // still 200 % of 30 and 95 % of 63); a 30 may not go (30 < 200 % of 30).
    let p = pick_universal(&l0(&[1, 1, 1, 30, 30, 30]), &c, &none, &[]).unwrap();
    assert_eq!(p.reason, Some("UniversalSizeAmplification"));
    assert_eq!(
        p.inputs.iter().map(|f| f.meta.file_size).collect::<Vec<_>>(),
        [30, 30, 30]
    );
    // The 90 % rule: 68 newer bytes; without the first 4 they are 64, without both 4s 60 < 61.
    assert_eq!(range(&[4, 4, 30, 30, 20], 36), Some((1, 4)));
    // With no room before level0_stop_writes_trigger (5 runs picked, stop at 5), at least
    // min_merge_width (2) files must go at once or none: 65 - 3 - 4 = 58 < 60, so none.
    assert_eq!(range(&[3, 4, 28, 30, 30], 36), Some((1, 4)));
    assert_eq!(range(&[3, 4, 28, 30, 30], 5), Some((0, 4)));
    // At least one L0 file stays in: with one L0 file and a level, nothing is left out.
    let v = version(
        vec![
            vec![file(9, "a", "z", 1)],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![file(5, "a", "z", 69)],
            vec![file(3, "a", "z", 30)],
        ],
        7,
    );
    assert_eq!(size_amp_range(&sorted_runs(&v, &none), &c.opts, 36), Some((0, 2)));
}

/// The numbers of the L0 files of `v` at positions `idx` (newest first).
fn l0_busy(v: &Version, idx: &[usize]) -> HashSet<u64> {
    idx.iter().map(|&i| v.files[0][i].number()).collect()
}

#[test]
fn busy_runs_do_not_count_toward_the_trigger_of_a_size_ratio_pick() {
    // Trigger 4; the two oldest runs are in a running compaction. The newest free runs would
    // make a size-ratio pick, but only 3 runs are free: score 3/4, nothing starts.
    let c = cfg(4, |o| o.max_size_amplification_percent = 1000);
    let v = l0(&[1, 1, 1, 1, 1]);
    let busy = l0_busy(&v, &[3, 4]);
    assert_eq!(universal_score(&v, &busy, 4), 0.75);
    assert!(pick_universal(&v, &c, &busy, &[]).is_none());
    // Six runs, two of them busy: 4 free runs reach the trigger, the 4 newest are merged, and
    // the pick reports the free runs' score (not 6/4).
    let v = l0(&[1, 1, 1, 1, 1, 1]);
    let busy = l0_busy(&v, &[4, 5]);
    let p = pick_universal(&v, &c, &busy, &[]).unwrap();
    assert_eq!(p.reason, Some("UniversalSizeRatio"));
    let want: Vec<u64> = v.files[0][..4].iter().map(|f| f.number()).collect();
    assert_eq!(p.inputs.iter().map(|f| f.number()).collect::<Vec<_>>(), want);
    assert_eq!(p.score, 1.0);
}

#[test]
fn busy_runs_do_not_count_toward_the_trigger_of_a_size_amp_pick() {
    // Trigger 4; the two newest runs are being merged. The three older free runs call for a
    // size-amp merge (10 newer bytes >= 200 % of 5), but 3 free runs do not start one.
    let c = cfg(4, |o| o.min_merge_width = u32::MAX);
    let v = l0(&[1, 1, 5, 5, 5]);
    let busy = l0_busy(&v, &[0, 1]);
    assert!(pick_universal(&v, &c, &busy, &[]).is_none());
    // With a fourth free run the size-amp merge of the free runs starts.
    let v = l0(&[1, 1, 5, 5, 5, 5]);
    let busy = l0_busy(&v, &[0, 1]);
    let p = pick_universal(&v, &c, &busy, &[]).unwrap();
    assert_eq!(p.reason, Some("UniversalSizeAmplification"));
    let want: Vec<u64> = v.files[0][2..].iter().map(|f| f.number()).collect();
    assert_eq!(p.inputs.iter().map(|f| f.number()).collect::<Vec<_>>(), want);
}

#[test]
fn the_score_counts_free_l0_files_and_levels_whose_first_file_is_free() {
    // L0: 3 files (one busy); L2 free; L4's first file busy (a level counts by its first file,
    // as RocksDB's score does); L6 with only its second file busy still counts.
    let v = version(
        vec![
            vec![file(30, "a", "b", 1), file(29, "a", "b", 1), file(28, "a", "b", 1)],
            vec![],
            vec![file(20, "a", "z", 5)],
            vec![],
            vec![file(10, "a", "m", 5), file(11, "n", "z", 5)],
            vec![],
            vec![file(1, "a", "m", 50), file(2, "n", "z", 50)],
        ],
        7,
    );
    let busy: HashSet<u64> = [29, 10, 2].into_iter().collect();
    assert_eq!(universal_score(&v, &busy, 4), 1.0); // 28, 30, L2, L6
    assert_eq!(universal_score(&v, &HashSet::new(), 4), 1.5);
    assert_eq!(universal_score(&v, &busy, 0), 4.0);
}
