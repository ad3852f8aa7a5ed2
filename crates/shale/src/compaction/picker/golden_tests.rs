//! Golden picker tests: hand-built versions, no I/O.

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::level_targets::{compute_targets, max_grandparent_overlap, target_file_size, PickerConfig};
use crate::compaction::output_cut::GrandparentCut;
use crate::compaction::picker::*;
use crate::key::{make_internal_key, vt, InternalKeyComparator};
use crate::lsm::version::{FileMeta, Reaper, Version};
use crate::lsm::version_edit::FileMetaData;
use crate::options::CompactionPri;

fn cfg_for_tests() -> PickerConfig {
    PickerConfig::fixed(4, 1000, 10.0)
}

/// A file for the picker tests (also the universal and FIFO ones): user keys `lo..=hi` at
/// sequence `n * 10`, epoch `n`, created at `created` (seconds; 0 = unknown).
pub(crate) fn test_file(n: u64, lo: &str, hi: &str, size: u64, created: u64) -> Arc<FileMeta> {
    FileMeta::new(
        FileMetaData {
            number: n,
            file_size: size,
            smallest: make_internal_key(lo.as_bytes(), n * 10, vt::VALUE),
            largest: make_internal_key(hi.as_bytes(), n * 10, vt::VALUE),
            smallest_seqno: n * 10,
            largest_seqno: n * 10,
            epoch_number: n,
            file_creation_time: created,
            oldest_ancester_time: created,
            ..Default::default()
        },
        Arc::new(Reaper::default()),
    )
}

/// A version of `num_levels` levels holding `levels` (the missing ones empty).
pub(crate) fn test_version(levels: Vec<Vec<Arc<FileMeta>>>, num_levels: usize) -> Version {
    let mut files = levels;
    files.resize(num_levels, Vec::new());
    Version {
        files,
        icmp: InternalKeyComparator::default(),
        blob_files: Default::default(),
    }
}

mod tests {
    use super::*;

    fn file(n: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
        test_file(n, lo, hi, size, 0)
    }

    fn version(levels: Vec<Vec<Arc<FileMeta>>>) -> Version {
        test_version(levels, 7)
    }

    fn cfg() -> PickerConfig {
        cfg_for_tests()
    }

    fn nums(fs: &[Arc<FileMeta>]) -> Vec<u64> {
        fs.iter().map(|f| f.number()).collect()
    }

    #[test]
    fn nothing_to_do_below_triggers() {
        let v = version(vec![vec![file(1, "a", "c", 10)], vec![file(2, "a", "z", 900)]]);
        assert!(pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).is_none());
    }

    #[test]
    fn l0_trigger_picks_all_l0_and_overlapping_l1() {
        let v = version(vec![
            vec![
                file(10, "c", "f", 1),
                file(9, "a", "d", 1),
                file(8, "e", "g", 1),
                file(7, "b", "c", 1),
            ],
            vec![file(1, "a", "b", 10), file(2, "f", "h", 10), file(3, "x", "z", 10)],
        ]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (0, 1));
        assert_eq!(nums(&p.inputs).len(), 4);
        assert_eq!(nums(&p.next_inputs), vec![1, 2]);
        assert!(p.score >= 1.0);
        // a busy L1 file blocks the L0 compaction
        let busy: HashSet<u64> = [2].into_iter().collect();
        assert!(pick_compaction(&v, &cfg(), &busy, &[], &[]).is_none());
    }

    #[test]
    fn min_overlapping_ratio_picks_the_cheapest_file() {
        // L1 over target; file 2 overlaps 100 bytes of L2, files 1 and 3 overlap much more.
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "g", "i", 1000),
            ],
            vec![file(4, "a", "c", 5000), file(5, "e", "e", 100), file(6, "g", "h", 3000)],
        ]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![2]);
        assert_eq!(nums(&p.next_inputs), vec![5]);
        // the cheapest file busy: the next cheapest (3: 3000/1000 < 1: 5000/1000)
        let busy: HashSet<u64> = [2].into_iter().collect();
        let p = pick_compaction(&v, &cfg(), &busy, &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![3]);
        // a file with no overlap at all costs nothing and is taken first (a trivial move)
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "x", "z", 1000),
            ],
            vec![file(4, "a", "f", 5000)],
        ]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![3]);
        assert!(p.is_trivial_move());
    }

    #[test]
    fn size_trigger_picks_highest_score_and_round_robins() {
        // max_compaction_bytes 4000 keeps every pick at one L1 file: growing file 1's pick by
        // file 2 (which overlaps the same L2 file 4) would read 2500 + 2000 bytes.
        let cfg = || PickerConfig {
            pri: CompactionPri::RoundRobin,
            max_compaction_bytes: 4000,
            ..cfg_for_tests()
        };
        // L1 target 1000 bytes: 3000 bytes => score 3; L2 target 10000: 5000 => 0.5
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "g", "i", 1000),
            ],
            vec![file(4, "b", "e", 2500), file(5, "h", "k", 2500)],
        ]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (1, 2));
        assert_eq!(nums(&p.inputs), vec![1]);
        assert_eq!(nums(&p.next_inputs), vec![4]);
        // the cursor moves the next pick to the following file
        let mut cursors = vec![Vec::new(); 7];
        cursors[1] = v.files[1][0].meta.largest.clone();
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &cursors).unwrap();
        assert_eq!(nums(&p.inputs), vec![2]);
        assert_eq!(nums(&p.next_inputs), vec![4]);
        cursors[1] = v.files[1][2].meta.largest.clone();
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &cursors).unwrap();
        assert_eq!(nums(&p.inputs), vec![1], "wraps around");
    }

    #[test]
    fn trivial_move_when_nothing_overlaps_below() {
        let v = version(vec![vec![], vec![file(1, "a", "c", 5000)], vec![file(2, "x", "z", 10)]]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert!(p.is_trivial_move());
        // busy input file: skipped
        let busy: HashSet<u64> = [1].into_iter().collect();
        assert!(pick_compaction(&v, &cfg(), &busy, &[], &[]).is_none());
    }

    #[test]
    fn last_level_is_never_compacted() {
        let mut levels = vec![Vec::new(); 7];
        levels[6] = vec![file(1, "a", "z", 1 << 40)];
        let v = version(levels);
        assert!(pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).is_none());
        assert_eq!(level_scores(&v, &cfg())[6], 0.0);
    }

    fn dyn_cfg() -> PickerConfig {
        PickerConfig {
            dynamic: true,
            target_file_size_base: 100,
            max_compaction_bytes: 2500,
            ..PickerConfig::fixed(4, 1000, 10.0)
        }
    }

    fn at(level: usize, fs: Vec<Arc<FileMeta>>) -> Version {
        let mut levels = vec![Vec::new(); 7];
        levels[level] = fs;
        version(levels)
    }

    #[test]
    fn dynamic_empty_db_compacts_l0_into_the_last_level() {
        let v = version(vec![vec![
            file(4, "a", "b", 10),
            file(3, "c", "d", 10),
            file(2, "e", "f", 10),
            file(1, "g", "h", 10),
        ]]);
        let t = compute_targets(&v, &dyn_cfg());
        assert_eq!(t.base_level, 6);
        assert!(t.max_bytes.iter().all(|&b| b == u64::MAX));
        let p = pick_compaction(&v, &dyn_cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level, p.base_level), (0, 6, 6));
        // static levels: into L1
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level, p.base_level), (0, 1, 1));
    }

    #[test]
    fn dynamic_targets_follow_the_last_level() {
        let m = u64::MAX;
        // L6 = 50000: L5 target 5000, L4 500 -> below base_max, so L4 is the base with 1000
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 50_000)]), &dyn_cfg());
        assert_eq!(t.base_level, 4);
        assert_eq!(t.max_bytes, vec![m, m, m, m, 1000, 5000, 50_000]);
        // L6 = 5_000_000: L5 500000, L4 50000, L3 5000, L2 500 -> base L2, whose target is
        // raised to base_max (1000): no level target below it
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 5_000_000)]), &dyn_cfg());
        assert_eq!(t.base_level, 2);
        assert_eq!(t.max_bytes, vec![m, m, 1000, 5000, 50_000, 500_000, 5_000_000]);
        // Huge: even L1 is above base_max -> L1 gets base_max and the multiplier downwards
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 500_000_000)]), &dyn_cfg());
        assert_eq!(t.base_level, 1);
        assert_eq!(
            t.max_bytes,
            vec![m, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]
        );
        // Small last level: it is the base level itself
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 500)]), &dyn_cfg());
        assert_eq!((t.base_level, t.max_bytes[6]), (6, 1000));
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 50)]), &dyn_cfg());
        assert_eq!((t.base_level, t.max_bytes[6]), (6, 1000));
        // Data in L5 only: its size becomes the last level's target, so L5 (target 5000) is
        // over its target and drains into L6, as in RocksDB
        let t = compute_targets(&at(5, vec![file(1, "a", "z", 50_000)]), &dyn_cfg());
        assert_eq!(t.base_level, 4);
        assert_eq!(&t.max_bytes[4..], &[1000, 5000, 50_000]);
        // static: base * multiplier^(n-1)
        let t = compute_targets(&at(6, vec![file(1, "a", "z", 50)]), &cfg());
        assert_eq!(t.base_level, 1);
        assert_eq!(&t.max_bytes[1..4], &[1000, 10_000, 100_000]);
    }

    #[test]
    fn dynamic_l0_compacts_into_base_level_and_levels_above_stay_untouched() {
        // base level 4 (see above); L0 over trigger: L0 -> L4 with the overlapping L4 files
        let mut levels = vec![Vec::new(); 7];
        levels[0] = vec![
            file(20, "c", "f", 10),
            file(21, "d", "k", 10),
            file(22, "a", "b", 10),
            file(23, "e", "e", 10),
        ];
        levels[4] = vec![
            file(10, "a", "c", 300),
            file(11, "j", "m", 300),
            file(12, "x", "z", 300),
        ];
        levels[6] = vec![file(1, "a", "z", 50_000)];
        let v = version(levels);
        let p = pick_compaction(&v, &dyn_cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level, p.base_level), (0, 4, 4));
        assert_eq!(nums(&p.next_inputs), vec![10, 11]);
        // scores: L0 4 files / trigger 4 = 1.0 (not scaled); L4 900/1000; L5 empty
        let s = level_scores(&v, &dyn_cfg());
        assert_eq!(s[0], 1.0);
        assert!((s[4] - 0.9).abs() < 1e-9);
        assert_eq!(&s[1..4], &[0.0, 0.0, 0.0]);
        assert_eq!(s[6], 0.0);
    }

    #[test]
    fn dynamic_scores_prefer_l0_over_base_level_when_l0_is_bigger() {
        // L4 (base) over target 1000 at 1500; L0 has 2 files of 2000 bytes in total (> base
        // target and > L4): L0's score is 4000/1500*10, L4's 1500/(1000+4000)*10 = 3.
        let mut levels = vec![Vec::new(); 7];
        levels[0] = vec![file(20, "a", "c", 2000), file(21, "b", "d", 2000)];
        levels[4] = vec![file(10, "a", "c", 750), file(11, "x", "z", 750)];
        levels[6] = vec![file(1, "a", "z", 50_000)];
        let v = version(levels);
        let s = level_scores(&v, &dyn_cfg());
        assert!((s[0] - 4000.0 / 1500.0 * 10.0).abs() < 1e-9, "{s:?}");
        assert!((s[4] - 3.0).abs() < 1e-9, "{s:?}");
        let p = pick_compaction(&v, &dyn_cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (0, 4));
        // with L0 busy, the base level goes next, into L5 (empty: a trivial move)
        let busy: HashSet<u64> = [20, 21].into_iter().collect();
        let p = pick_compaction(&v, &dyn_cfg(), &busy, &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (4, 5));
        assert!(p.is_trivial_move());
    }

    #[test]
    fn static_scores_leave_l0_unscaled_so_a_fuller_l1_goes_first() {
        // RocksDB scales an L0 score above 1 by 10 only with dynamic level sizes. Static: L0 with
        // 5 files scores 5/4 = 1.25, L1 at 1500 of 1000 scores 1.5 and is compacted first.
        let l0 = |n: u64| -> Vec<Arc<FileMeta>> { (0..n).map(|i| file(100 + i, "a", "z", 10)).collect() };
        let l1 = vec![file(1, "a", "c", 750), file(2, "x", "z", 750)];
        let v = version(vec![l0(5), l1.clone()]);
        let s = level_scores(&v, &cfg());
        assert!((s[0] - 1.25).abs() < 1e-9, "{s:?}");
        assert!((s[1] - 1.5).abs() < 1e-9, "{s:?}");
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (1, 2));
        // 8 files (score 2) outrank L1's 1.5
        let v = version(vec![l0(8), l1]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (0, 1));
    }

    #[test]
    fn trivial_moves_take_up_to_four_adjacent_files() {
        // L1 over target; L2 holds one file in [k, l]. File 1 overlaps nothing below (ratio 0)
        // and is picked first; the move grows right to 2, 3 and 4 (range [a, j], still nothing
        // below), not to 5 (the range would reach L2's [k, l]).
        let l1 = vec![
            file(1, "a", "c", 1000),
            file(2, "d", "e", 1000),
            file(3, "f", "g", 1000),
            file(4, "h", "j", 1000),
            file(5, "m", "n", 1000),
        ];
        let v = version(vec![vec![], l1.clone(), vec![file(9, "k", "l", 10)]]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1, 2, 3, 4]);
        assert!(p.next_inputs.is_empty() && p.is_trivial_move());
        // at most 4 files, even with nothing below at all
        let mut six = l1.clone();
        six.push(file(6, "o", "p", 1000));
        let v = version(vec![vec![], six, vec![file(9, "x", "z", 10)]]);
        assert_eq!(
            pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[])
                .unwrap()
                .inputs
                .len(),
            4
        );
        // a busy neighbour stops the growth; so does max_compaction_bytes
        let v = version(vec![vec![], l1.clone(), vec![file(9, "k", "l", 10)]]);
        let busy: HashSet<u64> = [3].into_iter().collect();
        let p = pick_compaction(&v, &cfg(), &busy, &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1, 2]);
        let small = PickerConfig {
            max_compaction_bytes: 2500,
            ..cfg()
        };
        let p = pick_compaction(&v, &small, &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1, 2]);
        // a user key shared with the next file is no clean cut: no growth past it
        let shared = vec![
            file(2, "d", "e", 1000),
            file(3, "f", "g", 1000),
            file(4, "g", "j", 1000),
        ];
        let v = version(vec![vec![], shared, vec![file(9, "x", "z", 10)]]);
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![2]);
        // off with compression_per_level (as RocksDB)
        let single = PickerConfig {
            multi_file_moves: false,
            ..cfg()
        };
        let v = version(vec![vec![], l1, vec![file(9, "k", "l", 10)]]);
        let p = pick_compaction(&v, &single, &HashSet::new(), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1]);
    }

    #[test]
    fn running_compaction_output_range_blocks_overlapping_picks_into_the_same_level() {
        // L1 -> L2 for file 1 [a, c] would write [a, c] into L2; a running compaction writing
        // [b, d] into L2 (e.g. one whose inputs are no longer in this version) blocks it, the
        // next file in round-robin order is taken instead.
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "m", "p", 1000),
                file(3, "s", "u", 1000),
            ],
            vec![file(4, "x", "z", 100)],
        ]);
        let running = vec![RunningRange {
            output_level: 2,
            smallest: b"b".to_vec(),
            largest: b"d".to_vec(),
        }];
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &running, &[]).unwrap();
        // (file 2 overlaps nothing in L2, nor does 3 after it: both move at once)
        assert_eq!(nums(&p.inputs), vec![2, 3]);
        // a grown move into a running range falls back to its one file: [m, u] reaches [t, t]
        let running_xy = vec![
            running[0].clone(),
            RunningRange {
                output_level: 2,
                smallest: b"t".to_vec(),
                largest: b"t".to_vec(),
            },
        ];
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &running_xy, &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![2]);
        // a running range in another output level does not matter
        let running = vec![RunningRange {
            output_level: 3,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
        }];
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &running, &[]).unwrap();
        // (nothing of L2 lies in [a, u]: the three files move at once)
        assert_eq!(nums(&p.inputs), vec![1, 2, 3]);
        assert!(p.is_trivial_move());
        // L0 -> L1 is blocked by a running compaction into L1 that overlaps the L0 range
        let v = version(vec![vec![
            file(10, "a", "b", 1),
            file(11, "c", "d", 1),
            file(12, "a", "d", 1),
            file(13, "b", "c", 1),
        ]]);
        let running = vec![RunningRange {
            output_level: 1,
            smallest: b"d".to_vec(),
            largest: b"f".to_vec(),
        }];
        assert!(pick_compaction(&v, &cfg(), &HashSet::new(), &running, &[]).is_none());
    }

    #[test]
    fn grandparent_overlap_cuts_outputs() {
        let icmp = InternalKeyComparator::default();
        let g = |lo: &str, hi: &str, n: u64| (lo.as_bytes().to_vec(), hi.as_bytes().to_vec(), n);
        let files = vec![g("b", "c", 100), g("e", "f", 100), g("h", "i", 100), g("k", "l", 100)];
        let cuts = |c: &mut GrandparentCut<'_>, keys: &[(&'static str, u64)]| -> Vec<&'static str> {
            keys.iter()
                .filter(|(k, size)| c.should_cut(&icmp, k.as_bytes(), Some(*size)))
                .map(|(k, _)| *k)
                .collect()
        };
        // max_compaction_bytes (150): a: nothing passed; d: b-c (100); g: e-f (200 > 150) ->
        // cut, reset; j: h-i (100); m: k-l (200) -> cut. Target huge: no size rule fires.
        let mut c = GrandparentCut::new(&files, 150, 1 << 40);
        let keys = [("a", 1), ("d", 1), ("g", 1), ("j", 1), ("m", 1)];
        assert_eq!(cuts(&mut c, &keys), vec!["g", "m"]);
        // files passed before the first key do not count
        let mut c = GrandparentCut::new(&files, 150, 1 << 40);
        assert_eq!(cuts(&mut c, &[("j", 1), ("k", 1), ("z", 1)]), Vec::<&str>::new());
        // with no grandparents (the bottom) the target size always cuts
        let mut c = GrandparentCut::new(&[], 1 << 40, 1000);
        assert_eq!(cuts(&mut c, &[("a", 0), ("aa", 999), ("ab", 1000)]), vec!["ab"]);
        // with grandparents, as RocksDB, twice the target always cuts, boundary or not ...
        let mut c = GrandparentCut::new(&files, 1 << 40, 1000);
        assert_eq!(cuts(&mut c, &[("a", 0), ("aa", 1999), ("ab", 2000)]), vec!["ab"]);
        // ... and an output past the target ends at the next grandparent boundary
        let mut c = GrandparentCut::new(&files, 1 << 40, 1000);
        assert_eq!(cuts(&mut c, &[("a", 0), ("aa", 1500), ("b", 1600)]), vec!["b"]);
        // no open output: never a cut, but the position advances
        let mut c = GrandparentCut::new(&files, 150, 1 << 40);
        assert!(!c.should_cut(&icmp, b"a", None));
        assert!(!c.should_cut(&icmp, b"g", None));
    }

    #[test]
    fn outputs_skip_whole_grandparent_files_larger_than_an_eighth_of_the_target() {
        let icmp = InternalKeyComparator::default();
        let g = |lo: &str, hi: &str, n: u64| (lo.as_bytes().to_vec(), hi.as_bytes().to_vec(), n);
        let files = vec![g("b", "c", 150), g("e", "f", 150)];
        // Target 800: an eighth is 100. "b" only enters a file (one boundary): no cut. "d"
        // leaves b-c into the gap (two boundaries, but the file was not skipped by this key's
        // jump: it added nothing) -> no cut. "g" jumps over the whole of e-f (150 > 100) -> cut.
        let mut c = GrandparentCut::new(&files, 1 << 40, 800);
        assert!(!c.should_cut(&icmp, b"a", Some(1)));
        assert!(!c.should_cut(&icmp, b"b", Some(1)));
        assert!(!c.should_cut(&icmp, b"d", Some(1)));
        assert!(c.should_cut(&icmp, b"g", Some(1)));
        // Small grandparent files (not over an eighth) are jumped over without a cut.
        let small = vec![g("b", "c", 50), g("e", "f", 50)];
        let mut c = GrandparentCut::new(&small, 1 << 40, 800);
        assert!(!c.should_cut(&icmp, b"a", Some(1)));
        assert!(!c.should_cut(&icmp, b"g", Some(1)));
    }

    #[test]
    fn outputs_end_at_grandparent_boundaries_from_half_the_target_size() {
        let icmp = InternalKeyComparator::default();
        let g = |lo: &str, hi: &str, n: u64| (lo.as_bytes().to_vec(), hi.as_bytes().to_vec(), n);
        let files = vec![g("b", "c", 10), g("e", "f", 10), g("h", "i", 10), g("k", "l", 10)];
        let mut c = GrandparentCut::new(&files, 1 << 40, 1000);
        assert!(!c.should_cut(&icmp, b"a", Some(0)));
        // 2 boundaries crossed: threshold 50 % + 2 x 5 % = 600
        assert!(!c.should_cut(&icmp, b"d", Some(599)));
        // inside no file, no boundary crossed: no cut whatever the size below the target
        assert!(!c.should_cut(&icmp, b"dd", Some(950)));
        // 4 boundaries: 70 % = 700
        assert!(!c.should_cut(&icmp, b"g", Some(699)));
        // 6 boundaries: 80 %
        assert!(c.should_cut(&icmp, b"j", Some(800)));
        // the count starts again with the new output: "m" crosses 2 -> 60 %
        assert!(!c.should_cut(&icmp, b"m", Some(599)));
        // many boundaries cap the threshold at 90 %
        let many: Vec<_> = (0..20u8)
            .map(|i| (vec![b'a' + i, b'0'], vec![b'a' + i, b'1'], 1))
            .collect();
        let mut c = GrandparentCut::new(&many, 1 << 40, 1000);
        assert!(!c.should_cut(&icmp, b"0", Some(0)));
        assert!(c.should_cut(&icmp, b"z", Some(900)));
    }

    #[test]
    fn output_file_sizes_and_pending_bytes() {
        use crate::compaction::level_targets::estimate_pending_compaction_bytes;
        let c = PickerConfig {
            target_file_size_multiplier: 2,
            ..dyn_cfg()
        };
        assert_eq!(target_file_size(&c, 4, 4), 100);
        assert_eq!(target_file_size(&c, 4, 5), 200);
        assert_eq!(target_file_size(&c, 4, 6), 400);
        assert_eq!(target_file_size(&c, 1, 3), 400);
        assert_eq!(max_grandparent_overlap(&c), 2500);
        // nothing over target: nothing pending
        let v = at(6, vec![file(1, "a", "z", 50_000)]);
        let c = dyn_cfg();
        assert_eq!(estimate_pending_compaction_bytes(&v, &c, &compute_targets(&v, &c)), 0);
        // L0 triggered (4 files, 40 bytes) + base L4 (1500, over 1000 by 500; L5 empty, ratio 0)
        let mut levels = vec![Vec::new(); 7];
        levels[0] = (20..24).map(|n| file(n, "a", "b", 10)).collect();
        levels[4] = vec![file(10, "a", "c", 1500)];
        levels[6] = vec![file(1, "a", "z", 50_000)];
        let v = version(levels);
        let t = compute_targets(&v, &c);
        assert_eq!(t.base_level, 4);
        // 40 (L0) + 1500 (base, joins the L0 compaction) + 500 * (0/1500 + 1) (L4 excess);
        // L5: 0 + 500 carried, under its 5000 target
        assert_eq!(estimate_pending_compaction_bytes(&v, &c, &t), 40 + 1500 + 500);
    }

    fn busy(ns: &[u64]) -> HashSet<u64> {
        ns.iter().copied().collect()
    }

    fn with_limit(limit: u64) -> PickerConfig {
        PickerConfig {
            max_compaction_bytes: limit,
            ..cfg()
        }
    }

    #[test]
    fn expansion_adds_start_level_files_within_max_compaction_bytes() {
        // L1 over target; file 1 [a, c] overlaps L2 file 10 [a, h], which files 2 and 3 overlap
        // too: growing the pick to 1, 2, 3 reads no further L2 file.
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "g", "i", 1000),
            ],
            vec![file(10, "a", "h", 3000), file(11, "x", "z", 100)],
        ]);
        let none = HashSet::new();
        let p = pick_compaction(&v, &cfg(), &none, &[], &[]).unwrap();
        assert_eq!((nums(&p.inputs), nums(&p.next_inputs)), (vec![1, 2, 3], vec![10]));
        // 3000 + 3000 is not below 6000: only the files inside [a, h] (1 and 2: 5000 bytes)
        let p = pick_compaction(&v, &with_limit(6000), &none, &[], &[]).unwrap();
        assert_eq!((nums(&p.inputs), nums(&p.next_inputs)), (vec![1, 2], vec![10]));
        // 5000 is not below 5000 either: no growth
        let p = pick_compaction(&v, &with_limit(5000), &none, &[], &[]).unwrap();
        assert_eq!((nums(&p.inputs), nums(&p.next_inputs)), (vec![1], vec![10]));
        // a busy file is never pulled in
        let p = pick_compaction(&v, &cfg(), &busy(&[2]), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1]);
        // growth that would pull in another L2 file is not taken: file 2 [d, f] reaches L2
        // file 11 [f, z]
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "g", "i", 1000),
            ],
            vec![file(10, "a", "d", 3000), file(11, "f", "z", 3000)],
        ]);
        let p = pick_compaction(&v, &cfg(), &none, &[], &[]).unwrap();
        assert_eq!((nums(&p.inputs), nums(&p.next_inputs)), (vec![1], vec![10]));
    }

    #[test]
    fn round_robin_expansion_grows_only_past_the_cursor() {
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "c", 1000),
                file(2, "d", "f", 1000),
                file(3, "g", "i", 1000),
            ],
            vec![file(10, "a", "h", 3000)],
        ]);
        let rr = PickerConfig {
            pri: CompactionPri::RoundRobin,
            ..cfg()
        };
        let mut cursors = vec![Vec::new(); 7];
        cursors[1] = v.files[1][0].meta.largest.clone();
        // file 2 first; its L2 overlap [a, h] also covers file 1, behind the cursor: left out
        let p = pick_compaction(&v, &rr, &HashSet::new(), &[], &cursors).unwrap();
        assert_eq!((nums(&p.inputs), nums(&p.next_inputs)), (vec![2, 3], vec![10]));
        // minimum overlapping ratio picks file 1 and grows in both directions
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &cursors).unwrap();
        assert_eq!(nums(&p.inputs), vec![1, 2, 3]);
    }

    /// L0 files of `size` bytes each, newest first (numbers from `first` up, newest = highest).
    fn l0(first: u64, sizes: &[u64]) -> Vec<Arc<FileMeta>> {
        let n = sizes.len() as u64;
        sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| file(first + n - 1 - i as u64, "b", "m", s))
            .collect()
    }

    #[test]
    fn intra_l0_when_the_base_level_is_busy() {
        // six L0 files (trigger 4 + 2); L1 file 1 overlaps them and is being compacted
        let v = version(vec![l0(20, &[10; 6]), vec![file(1, "a", "z", 500)]]);
        let p = pick_compaction(&v, &cfg(), &busy(&[1]), &[], &[]).unwrap();
        assert!(p.is_intra_l0() && !p.is_trivial_move());
        assert_eq!((p.level, p.output_level), (0, 0));
        assert_eq!(nums(&p.inputs), vec![25, 24, 23, 22, 21, 20]);
        assert!(p.next_inputs.is_empty());
        assert!(p.score >= 1.0);
        // the base level free: L0 -> L1 as usual
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (0, 1));
        // five files: below trigger + 2, no intra-L0 compaction
        let v5 = version(vec![l0(20, &[10; 5]), vec![file(1, "a", "z", 500)]]);
        assert!(pick_compaction(&v5, &cfg(), &busy(&[1]), &[], &[]).is_none());
    }

    #[test]
    fn intra_l0_runs_stop_at_busy_files() {
        // older L0 files busy in an L0 -> L1 compaction that is still running: the newest four
        // (the 1.0 score counts only files not being compacted) form an intra-L0 run
        let v = version(vec![l0(20, &[10; 6]), vec![file(1, "a", "z", 500)]]);
        let p = pick_compaction(&v, &cfg(), &busy(&[21, 20, 1]), &[], &[]).unwrap();
        assert!(p.is_intra_l0());
        assert_eq!(nums(&p.inputs), vec![25, 24, 23, 22]);
        // a busy file third from the top: a run of two, too short
        let v = version(vec![l0(20, &[10; 8]), vec![file(1, "a", "z", 500)]]);
        assert!(pick_compaction(&v, &cfg(), &busy(&[25, 1]), &[], &[]).is_none());
        // the newest file busy: no intra-L0 compaction at all (RocksDB's rule)
        assert!(pick_compaction(&v, &cfg(), &busy(&[27, 1]), &[], &[]).is_none());
        // with fewer than four free files in a row nothing is picked even with a low trigger
        let low = PickerConfig { l0_trigger: 1, ..cfg() };
        let v = version(vec![l0(20, &[10; 4]), vec![file(1, "a", "z", 500)]]);
        assert!(pick_compaction(&v, &low, &busy(&[20, 1]), &[], &[]).is_none());
        let p = pick_compaction(&v, &low, &busy(&[1]), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![23, 22, 21, 20]);
    }

    #[test]
    fn intra_l0_size_limits() {
        // max_compaction_bytes: 35 bytes hold three 10-byte files (too few), 45 hold four
        let v = version(vec![l0(20, &[10; 7]), vec![file(1, "a", "z", 500)]]);
        assert!(pick_compaction(&v, &with_limit(35), &busy(&[1]), &[], &[]).is_none());
        let p = pick_compaction(&v, &with_limit(45), &busy(&[1]), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![26, 25, 24, 23]);
        // bytes per removed file must not grow: 20/1, 30/2, 40/3, then 140/4 > 40/3 stops
        // before the big older file
        let v = version(vec![l0(20, &[10, 10, 10, 10, 100, 10]), vec![file(1, "a", "z", 500)]]);
        let p = pick_compaction(&v, &cfg(), &busy(&[1]), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![25, 24, 23, 22]);
        // the pure rule
        assert_eq!(intra_l0_run_len(&[(10, false); 6], 4, u64::MAX), Some(6));
        assert_eq!(intra_l0_run_len(&[(10, false); 3], 4, u64::MAX), None);
        assert_eq!(
            intra_l0_run_len(&[(50, false), (10, false), (10, false), (10, false)], 4, 80),
            Some(4)
        );
        assert_eq!(
            intra_l0_run_len(&[(50, false), (10, false), (10, false), (10, false)], 4, 79),
            None
        );
        assert_eq!(intra_l0_run_len(&[], 4, u64::MAX), None);
    }

    #[test]
    fn blocked_l0_keeps_the_base_level_from_being_picked() {
        // L0 over its trigger (5 files, score 1.25, too few for intra-L0) is blocked by busy L1
        // file 1; L1 is over its target too (1.1, below L0), but RocksDB does not start a
        // compaction of the base level then (L0 -> base would starve)
        let v = version(vec![
            l0(20, &[10; 5]),
            vec![file(1, "a", "c", 100), file(2, "x", "z", 1100)],
        ]);
        let s = level_scores(&v, &cfg());
        assert!(s[1] >= 1.0 && s[1] < s[0], "{s:?}");
        assert!(pick_compaction(&v, &cfg(), &busy(&[1]), &[], &[]).is_none());
        // L0 not over its trigger: L1 is picked
        let v = version(vec![
            l0(20, &[10; 2]),
            vec![file(1, "a", "c", 100), file(2, "x", "z", 5000)],
        ]);
        let p = pick_compaction(&v, &cfg(), &busy(&[1]), &[], &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![2]);
    }

    #[test]
    fn manual_compactions_are_cut_at_max_compaction_bytes() {
        // L1 files of 100 bytes; L2 files under them of 50 bytes each
        let v = version(vec![
            vec![],
            vec![
                file(1, "a", "b", 100),
                file(2, "c", "d", 100),
                file(3, "e", "f", 100),
                file(4, "g", "h", 100),
                file(5, "i", "j", 100),
            ],
            vec![file(10, "a", "c", 50), file(11, "f", "f", 50), file(12, "x", "z", 50)],
        ]);
        let split = |limit: u64| -> Vec<Vec<u64>> {
            split_manual_inputs(&v, 2, &v.files[1], limit)
                .iter()
                .map(|c| nums(c))
                .collect()
        };
        // chunk 1: 100 + 50 (a-b), 200 + 50 (a-d) >= 250: cut after file 2; chunk 2: 100 + 50
        // (e-f, file 11), 200 + 50 (e-h) >= 250: cut after file 4; file 5 alone
        assert_eq!(split(250), vec![vec![1, 2], vec![3, 4], vec![5]]);
        // a file over the limit on its own is still compacted, one per chunk
        assert_eq!(split(10), vec![vec![1], vec![2], vec![3], vec![4], vec![5]]);
        assert_eq!(split(u64::MAX), vec![vec![1, 2, 3, 4, 5]]);
        // never between two files that share a boundary user key
        let v = version(vec![
            vec![],
            vec![file(1, "a", "c", 100), file(2, "c", "d", 100), file(3, "e", "f", 100)],
        ]);
        let chunks: Vec<Vec<u64>> = split_manual_inputs(&v, 2, &v.files[1], 10)
            .iter()
            .map(|c| nums(c))
            .collect();
        assert_eq!(chunks, vec![vec![1, 2], vec![3]]);
    }
}
