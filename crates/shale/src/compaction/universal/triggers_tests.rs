//! Golden tests of the time- and deletion-triggered picks, with an injected clock and no I/O:
//! universal periodic and delete-triggered compactions, leveled compaction of marked files,
//! FIFO's TTL age source.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::compaction::fifo::{pick_fifo, FifoConfig};
use crate::compaction::level_targets::PickerConfig;
use crate::compaction::picker::golden_tests::test_version;
use crate::compaction::picker::pick_compaction;
use crate::key::{make_internal_key, vt};
use crate::lsm::version::{FileMeta, Reaper};
use crate::lsm::version_edit::FileMetaData;

/// A file with user keys `lo..=hi`, created at `created` (MANIFEST `file_creation_time`),
/// oldest ancestor time `ancestor`, marked for compaction or not.
fn f(n: u64, lo: &str, hi: &str, size: u64, created: u64, ancestor: u64, marked: bool) -> Arc<FileMeta> {
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
            oldest_ancester_time: ancestor,
            marked_for_compaction: marked,
            ..Default::default()
        },
        Arc::new(Reaper::default()),
    )
}

/// A plain file created (and descended from data) at `t`.
fn at(n: u64, lo: &str, hi: &str, size: u64, t: u64) -> Arc<FileMeta> {
    f(n, lo, hi, size, t, t, false)
}

/// A file marked for compaction by the deletion collector.
fn marked(n: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
    f(n, lo, hi, size, 1000, 1000, true)
}

fn ucfg(trigger: usize, periodic: u64, now: u64) -> UniversalConfig {
    UniversalConfig {
        l0_trigger: trigger,
        l0_stop: 36,
        opts: UniversalCompactOptions::default(),
        periodic_secs: periodic,
        now,
    }
}

fn nums(p: &Pick) -> Vec<u64> {
    let mut v: Vec<u64> = p.all_inputs().map(|f| f.number()).collect();
    v.sort_unstable();
    v
}

fn none() -> HashSet<u64> {
    HashSet::new()
}

#[test]
fn ttl_folds_into_periodic_under_universal() {
    assert_eq!(universal_periodic_secs(0, 0), 0);
    assert_eq!(universal_periodic_secs(0, 50), 50);
    assert_eq!(universal_periodic_secs(80, 0), 80);
    assert_eq!(universal_periodic_secs(80, 50), 50);
    assert_eq!(universal_periodic_secs(30, 50), 30);
    let mut o = crate::options::Options::default();
    o.set_ttl(500);
    o.set_periodic_compaction_seconds(900);
    assert_eq!(UniversalConfig::from_options(&o, 7).periodic_secs, 500);
    assert_eq!(UniversalConfig::from_options(&o, 7).now, 7);
}

#[test]
fn periodic_merges_every_run_into_the_last_level_once_a_file_is_too_old() {
    // Two L0 files and L6, fewer runs than the trigger (4): nothing else would run.
    let v = test_version(
        vec![
            vec![at(12, "a", "c", 10, 5000), at(11, "b", "d", 10, 4000)],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![at(3, "a", "z", 100, 1000)],
        ],
        7,
    );
    // Period 3000: at 3900 the oldest file (1000) is not yet older than 900.
    assert!(pick_universal(&v, &ucfg(4, 3000, 3900), &none(), &[]).is_none());
    // At 4100 it is: every run merges into L6.
    let p = pick_universal(&v, &ucfg(4, 3000, 4100), &none(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 6));
    assert_eq!(nums(&p), vec![3, 11, 12]);
    assert_eq!(p.reason, Some("PeriodicCompaction"));
    assert!(!p.is_trivial_move());
    // Periodic compaction off: nothing.
    assert!(pick_universal(&v, &ucfg(4, 0, 1 << 40), &none(), &[]).is_none());
    // A newer run being compacted: the pick starts below it.
    let busy: HashSet<u64> = [12].into_iter().collect();
    let p = pick_universal(&v, &ucfg(4, 3000, 4100), &busy, &[]).unwrap();
    assert_eq!(nums(&p), vec![3, 11]);
    assert_eq!(p.output_level, 6);
}

#[test]
fn periodic_rewrites_the_oldest_run_alone_only_if_it_is_due() {
    let v = test_version(
        vec![
            vec![at(12, "a", "c", 10, 100), at(11, "b", "d", 10, 9000)],
            vec![],
            vec![at(3, "a", "z", 100, 9000)],
        ],
        3,
    );
    // File 12 is due, but with file 11 busy only L2 can be taken, and it is not due: nothing.
    let busy: HashSet<u64> = [11].into_iter().collect();
    assert!(pick_universal(&v, &ucfg(4, 1000, 9500), &busy, &[]).is_none());
    // The oldest run itself due: rewritten alone, L2 -> L2.
    let v = test_version(
        vec![vec![at(11, "b", "d", 10, 9000)], vec![], vec![at(3, "a", "z", 100, 10)]],
        3,
    );
    let p = pick_universal(&v, &ucfg(4, 1000, 9500), &busy, &[]).unwrap();
    assert_eq!((p.level, p.output_level), (2, 2));
    assert_eq!(nums(&p), vec![3]);
}

#[test]
fn periodic_ages_a_file_by_its_creation_time_then_its_ancestors() {
    // Created recently (a compaction output) from old data: not due, as RocksDB (creation first).
    let v = test_version(vec![vec![f(5, "a", "z", 10, 9000, 10, false)]], 1);
    assert!(pick_universal(&v, &ucfg(4, 1000, 9500), &none(), &[]).is_none());
    // Creation time unknown: the oldest ancestor time decides.
    let v = test_version(vec![vec![f(5, "a", "z", 10, 0, 10, false)]], 1);
    assert!(pick_universal(&v, &ucfg(4, 1000, 9500), &none(), &[]).is_some());
    // Neither known: never due.
    let v = test_version(vec![vec![f(5, "a", "z", 10, 0, 0, false)]], 1);
    assert!(pick_universal(&v, &ucfg(4, 1000, 9500), &none(), &[]).is_none());
}

#[test]
fn periodic_goes_before_the_size_ratio_pick() {
    // Runs 1 1 1 100 (trigger 4): size ratio merges the three small newest runs (into L0,
    // above file 10); space amplification does not apply (3 < 200 % of 100).
    let v = test_version(
        vec![vec![
            at(13, "a", "z", 1, 9000),
            at(12, "a", "z", 1, 9000),
            at(11, "a", "z", 1, 9000),
            at(10, "a", "z", 100, 10),
        ]],
        1,
    );
    let p = pick_universal(&v, &ucfg(4, 0, 9500), &none(), &[]).unwrap();
    assert_eq!(nums(&p), vec![11, 12, 13]);
    assert_eq!(p.reason, Some("UniversalSizeRatio"));
    // File 10 due for periodic compaction: everything, before the size-ratio pick.
    let p = pick_universal(&v, &ucfg(4, 1000, 9500), &none(), &[]).unwrap();
    assert_eq!(nums(&p), vec![10, 11, 12, 13]);
    assert!(!p.is_trivial_move());
}

#[test]
fn delete_triggered_single_level_merges_from_the_marked_file_to_the_oldest() {
    // Three runs, trigger 4: no other pick. File 12 (second newest) is marked.
    let v = test_version(
        vec![vec![
            at(13, "a", "z", 10, 1000),
            marked(12, "a", "z", 10),
            at(11, "a", "z", 10, 1000),
            at(10, "a", "z", 10, 1000),
        ]],
        1,
    );
    let c = ucfg(5, 0, 2000);
    let p = pick_universal(&v, &c, &none(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 0));
    assert_eq!(nums(&p), vec![10, 11, 12]);
    assert_eq!(p.reason, Some("FilesMarkedForCompaction"));
    // A busy run stops the merge before it.
    let busy: HashSet<u64> = [10].into_iter().collect();
    let p = pick_universal(&v, &c, &busy, &[]).unwrap();
    assert_eq!(nums(&p), vec![11, 12]);
    // Only the oldest file marked: nothing (it has nothing older to merge with).
    let v = test_version(vec![vec![at(13, "a", "z", 10, 1000), marked(10, "a", "z", 10)]], 1);
    assert!(pick_universal(&v, &c, &none(), &[]).is_none());
    // Nothing marked: nothing.
    let v = test_version(vec![vec![at(13, "a", "z", 10, 1000), at(10, "a", "z", 10, 1000)]], 1);
    assert!(pick_universal(&v, &c, &none(), &[]).is_none());
}

#[test]
fn delete_triggered_multi_level_compacts_into_the_next_non_empty_level() {
    let l6 = || {
        vec![
            at(3, "a", "f", 100, 10),
            at(4, "g", "m", 100, 10),
            at(5, "n", "z", 100, 10),
        ]
    };
    // A marked L0 file over g..h: with the L0 file overlapping it, into L6 with file 4.
    let v = test_version(
        vec![
            vec![
                at(22, "x", "y", 5, 1000),
                marked(21, "g", "h", 5),
                at(20, "h", "i", 5, 1000),
            ],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            l6(),
        ],
        7,
    );
    let c = ucfg(8, 0, 2000);
    let p = pick_universal(&v, &c, &none(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 6));
    assert_eq!(nums(&p), vec![4, 20, 21]);
    assert_eq!(p.reason, Some("FilesMarkedForCompaction"));
    // An L0 compaction running: no L0 start.
    let busy: HashSet<u64> = [22].into_iter().collect();
    assert!(pick_universal(&v, &c, &busy, &[]).is_none());
    // A running compaction writing into L6 over g..m: waits.
    let running = [RunningRange {
        output_level: 6,
        smallest: b"g".to_vec(),
        largest: b"k".to_vec(),
    }];
    assert!(pick_universal(&v, &c, &none(), &running).is_none());
    // A marked L3 file goes to L6 (the next non-empty level), skipping empty L4 and L5.
    let v = test_version(
        vec![
            vec![],
            vec![],
            vec![],
            vec![marked(30, "b", "c", 5)],
            vec![],
            vec![],
            l6(),
        ],
        7,
    );
    let p = pick_universal(&v, &c, &none(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (3, 6));
    assert_eq!(nums(&p), vec![3, 30]);
    // Marked files in the last non-empty level stay: nothing to compact them into.
    let v = test_version(
        vec![
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![marked(3, "a", "z", 9)],
        ],
        7,
    );
    assert!(pick_universal(&v, &c, &none(), &[]).is_none());
    // Only L0 holds files: a marked L0 file goes to the last level.
    let v = test_version(vec![vec![at(9, "a", "b", 5, 1), marked(8, "c", "d", 5)]], 7);
    let p = pick_universal(&v, &c, &none(), &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 6));
    assert_eq!(nums(&p), vec![8]);
}

#[test]
fn a_marked_file_lets_the_universal_picker_run_below_the_score() {
    // As RocksDB's `NeedsCompaction`: a file marked by the deletion collector lets the picker run
    // with under `trigger` free runs, and its stages then count every run against the trigger:
    // 5 runs, 2 (the oldest) busy, trigger 4: the three newest make a size-ratio pick.
    let files = vec![
        at(105, "a", "z", 1, 1000),
        at(104, "a", "z", 1, 1000),
        marked(103, "a", "z", 1),
        at(102, "a", "z", 1, 1000),
        at(101, "a", "z", 1, 1000),
    ];
    let v = test_version(vec![files.clone()], 1);
    let busy: HashSet<u64> = [102, 101].into_iter().collect();
    let p = pick_universal(&v, &ucfg(4, 0, 0), &busy, &[]).unwrap();
    assert_eq!(p.reason, Some("UniversalSizeRatio"));
    assert_eq!(nums(&p), vec![103, 104, 105]);
    assert_eq!(p.score, 0.75);
    // Without the mark nothing starts.
    let mut plain = files;
    plain[2] = at(103, "a", "z", 1, 1000);
    let v = test_version(vec![plain], 1);
    assert!(pick_universal(&v, &ucfg(4, 0, 0), &busy, &[]).is_none());
}

#[test]
fn delete_triggered_comes_after_the_size_and_count_picks() {
    // Four L0 runs at trigger 4 with file 12 marked: the size-ratio pick (all four, equal sizes)
    // wins over the delete-triggered one (12, 11, 10).
    let v = test_version(
        vec![vec![
            at(13, "a", "z", 10, 1000),
            marked(12, "a", "z", 10),
            at(11, "a", "z", 10, 1000),
            at(10, "a", "z", 10, 1000),
        ]],
        1,
    );
    let p = pick_universal(&v, &ucfg(4, 0, 2000), &none(), &[]).unwrap();
    assert_eq!(nums(&p), vec![10, 11, 12, 13]);
    assert_ne!(p.reason, Some("FilesMarkedForCompaction"));
}

#[test]
fn leveled_compacts_a_marked_file_when_no_score_calls_for_it() {
    let cfg = PickerConfig::fixed(4, 1_000_000, 10.0);
    let files = || {
        vec![
            vec![],
            vec![at(10, "a", "c", 100, 1), marked(11, "d", "f", 100)],
            vec![at(20, "a", "b", 100, 1), at(21, "e", "g", 100, 1)],
            vec![at(30, "a", "z", 100, 1)],
        ]
    };
    let v = test_version(files(), 4);
    let p = pick_compaction(&v, &cfg, &none(), &[], &[]).unwrap();
    assert_eq!((p.level, p.output_level), (1, 2));
    assert_eq!(nums(&p), vec![11, 21]);
    assert_eq!(p.reason, Some("FilesMarkedForCompaction"));
    // The same version without the mark: no level is over its target, nothing.
    let mut plain = files();
    plain[1][1] = at(11, "d", "f", 100, 1);
    assert!(pick_compaction(&test_version(plain, 4), &cfg, &none(), &[], &[]).is_none());
    // A marked file in the last non-empty level is left alone.
    let v = test_version(vec![vec![], vec![], vec![], vec![marked(30, "a", "z", 100)]], 4);
    assert!(pick_compaction(&v, &cfg, &none(), &[], &[]).is_none());
    // A busy marked file is not picked.
    let busy: HashSet<u64> = [11].into_iter().collect();
    assert!(pick_compaction(&test_version(files(), 4), &cfg, &busy, &[], &[]).is_none());
}

#[test]
fn fifo_ttl_ages_files_by_their_data_not_their_creation() {
    let cfg = FifoConfig {
        max_table_files_size: 1 << 30,
        allow_compaction: false,
        ttl: 100,
        l0_trigger: 4,
        max_bytes_per_removed_file: 110,
        max_compaction_bytes: 1 << 40,
    };
    // File 5 was written at 1095 (an intra-L0 output) from data of 1000: at 1150 its data is
    // older than the TTL, so it expires although the file is only 55 seconds old.
    let v = test_version(
        vec![vec![at(6, "a", "z", 10, 1140), f(5, "a", "z", 10, 1095, 1000, false)]],
        1,
    );
    let p = pick_fifo(&v, &cfg, &none(), 1150).unwrap();
    assert_eq!(nums(&p), vec![5]);
    assert_eq!(p.reason, Some("FIFOTtl"));
    // Data time unknown: never expires by TTL.
    let v = test_version(
        vec![vec![at(6, "a", "z", 10, 1140), f(5, "a", "z", 10, 1095, 0, false)]],
        1,
    );
    assert!(pick_fifo(&v, &cfg, &none(), 1150).is_none());
}

fn lcfg(ttl: u64, periodic: u64, now: u64, dynamic: bool) -> PickerConfig {
    PickerConfig {
        ttl,
        periodic_secs: periodic,
        now,
        dynamic,
        ..PickerConfig::fixed(4, 1_000_000, 10.0)
    }
}

#[test]
fn leveled_ttl_moves_files_with_old_data_down_but_not_out_of_the_last_level() {
    let v = test_version(
        vec![
            vec![],
            vec![at(10, "a", "c", 100, 9000), f(11, "d", "f", 100, 9000, 50, false)],
            vec![at(20, "a", "b", 100, 9000), at(21, "e", "g", 100, 100)],
        ],
        3,
    );
    // File 11's data dates from 50: older than 1000 s at 9500. File 21 is older still, but in
    // the last level.
    let p = pick_compaction(&v, &lcfg(1000, 0, 9500, false), &none(), &[], &[]).unwrap();
    assert_eq!((p.level, p.output_level), (1, 2));
    assert_eq!(nums(&p), vec![11, 21]);
    assert_eq!(p.reason, Some("Ttl"));
    // Not yet expired, or TTL off: nothing.
    assert!(pick_compaction(&v, &lcfg(1000, 0, 1000, false), &none(), &[], &[]).is_none());
    assert!(pick_compaction(&v, &lcfg(0, 0, 9500, false), &none(), &[], &[]).is_none());
    // An L0 file with old data goes to the base level; not while an L0 file is compacted.
    let v = test_version(
        vec![
            vec![at(31, "x", "y", 10, 9000), at(30, "a", "b", 10, 50)],
            vec![],
            vec![at(20, "a", "z", 100, 9000)],
        ],
        3,
    );
    let p = pick_compaction(&v, &lcfg(1000, 0, 9500, false), &none(), &[], &[]).unwrap();
    assert_eq!((p.level, p.output_level), (0, 1));
    let busy: HashSet<u64> = [31].into_iter().collect();
    assert!(pick_compaction(&v, &lcfg(1000, 0, 9500, false), &busy, &[], &[]).is_none());
}

#[test]
fn leveled_periodic_rewrites_old_files_in_place_or_moves_them_down() {
    let v = test_version(
        vec![
            vec![],
            vec![at(10, "a", "c", 100, 100)],
            vec![at(20, "a", "b", 100, 9000), at(21, "e", "g", 100, 9000)],
        ],
        3,
    );
    // Static level sizes: rewritten within its level, never a trivial move.
    let p = pick_compaction(&v, &lcfg(0, 1000, 9500, false), &none(), &[], &[]).unwrap();
    assert_eq!((p.level, p.output_level), (1, 1));
    assert_eq!(nums(&p), vec![10]);
    assert!(!p.is_trivial_move());
    assert_eq!(p.reason, Some("PeriodicCompaction"));
    // Dynamic level sizes: into the next level.
    let p = pick_compaction(&v, &lcfg(0, 1000, 9500, true), &none(), &[], &[]).unwrap();
    assert_eq!((p.level, p.output_level), (1, 2));
    assert_eq!(nums(&p), vec![10, 20]);
    // A file of the last level: rewritten in place either way.
    let v = test_version(
        vec![
            vec![],
            vec![],
            vec![at(20, "a", "b", 100, 100), at(21, "e", "g", 100, 9000)],
        ],
        3,
    );
    for dynamic in [false, true] {
        let p = pick_compaction(&v, &lcfg(0, 1000, 9500, dynamic), &none(), &[], &[]).unwrap();
        assert_eq!((p.level, p.output_level), (2, 2));
        assert_eq!(nums(&p), vec![20]);
        assert!(!p.is_trivial_move());
    }
    // Created recently from old data: not due (creation time first).
    let v = test_version(vec![vec![], vec![], vec![f(20, "a", "b", 100, 9000, 10, false)]], 3);
    assert!(pick_compaction(&v, &lcfg(0, 1000, 9500, false), &none(), &[], &[]).is_none());
}
