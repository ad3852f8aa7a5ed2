//! Golden tests of the FIFO picker: hand-built versions, no I/O.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::compaction::picker::golden_tests::{test_file, test_version};
use crate::lsm::version::{FileMeta, Version};

fn file(n: u64, lo: &str, hi: &str, size: u64, created: u64) -> Arc<FileMeta> {
    test_file(n, lo, hi, size, created)
}

fn version(levels: Vec<Vec<Arc<FileMeta>>>) -> Version {
    test_version(levels, 7)
}

fn cfg(max: u64) -> FifoConfig {
    FifoConfig {
        max_table_files_size: max,
        allow_compaction: false,
        ttl: 0,
        l0_trigger: 4,
        max_bytes_per_removed_file: 110,
        max_compaction_bytes: 1 << 40,
    }
}

fn nums(fs: &[Arc<FileMeta>]) -> Vec<u64> {
    fs.iter().map(|f| f.number()).collect()
}

/// L0 files 10 (newest) .. 6 (oldest), 30 bytes each, created at 1000 + number.
fn five_files() -> Version {
    version(vec![(6..=10).rev().map(|n| file(n, "a", "z", 30, 1000 + n)).collect()])
}

#[test]
fn under_the_size_limit_nothing_happens() {
    assert!(pick_fifo(&five_files(), &cfg(150), &HashSet::new(), 5000).is_none());
}

#[test]
fn over_the_size_limit_the_oldest_files_are_deleted() {
    // 150 bytes, limit 100: the two oldest go (150 - 60 = 90 <= 100).
    let p = pick_fifo(&five_files(), &cfg(100), &HashSet::new(), 5000).unwrap();
    assert_eq!(p.kind, PickKind::Deletion);
    assert_eq!((p.level, p.output_level), (0, 0));
    assert_eq!(nums(&p.inputs), vec![6, 7]);
    assert!(!p.is_trivial_move() && !p.is_intra_l0());
    // While any compaction runs, nothing is deleted.
    let busy: HashSet<u64> = [10].into_iter().collect();
    assert!(pick_fifo(&five_files(), &cfg(100), &busy, 5000).is_none());
}

#[test]
fn a_db_from_another_style_drains_its_last_level_first_smallest_keys_first() {
    let v = version(vec![
        vec![file(20, "a", "z", 10, 1)],
        vec![],
        vec![
            file(3, "a", "c", 40, 1),
            file(4, "d", "f", 40, 1),
            file(5, "g", "z", 40, 1),
        ],
    ]);
    // 130 bytes, limit 60: L2's files from the left until 130 - 80 = 50 <= 60.
    let p = pick_fifo(&v, &cfg(60), &HashSet::new(), 5000).unwrap();
    assert_eq!((p.level, p.kind), (2, PickKind::Deletion));
    assert_eq!(nums(&p.inputs), vec![3, 4]);
    // Within the limit: files outside L0 stay.
    assert!(pick_fifo(&v, &cfg(130), &HashSet::new(), 5000).is_none());
}

#[test]
fn ttl_deletes_files_older_than_ttl_from_the_oldest() {
    let mut c = cfg(1000);
    c.ttl = 100;
    // now 1108: cutoff 1008; files created at 1006 and 1007 are older.
    let p = pick_fifo(&five_files(), &c, &HashSet::new(), 1108).unwrap();
    assert_eq!(p.kind, PickKind::Deletion);
    assert_eq!(nums(&p.inputs), vec![6, 7]);
    // Nothing expired yet.
    assert!(pick_fifo(&five_files(), &c, &HashSet::new(), 1106).is_none());
    // A file of unknown age (0) stops the scan.
    let v = version(vec![vec![
        file(9, "a", "z", 30, 1009),
        file(8, "a", "z", 30, 0),
        file(7, "a", "z", 30, 1),
    ]]);
    let p = pick_fifo(&v, &c, &HashSet::new(), 5000).unwrap();
    assert_eq!(nums(&p.inputs), vec![7]);
    // When deleting the expired files would still leave L0 over the limit, the size pick runs
    // instead (it deletes at least as much).
    let mut c = cfg(60);
    c.ttl = 100;
    let p = pick_fifo(&five_files(), &c, &HashSet::new(), 1107).unwrap();
    assert_eq!(nums(&p.inputs), vec![6, 7, 8]);
}

#[test]
fn allow_compaction_merges_small_newest_files() {
    let mut c = cfg(10_000);
    c.allow_compaction = true;
    // Five 30-byte files, trigger 4: all five merge (30 per removed file < 110).
    let p = pick_fifo(&five_files(), &c, &HashSet::new(), 5000).unwrap();
    assert_eq!(p.kind, PickKind::Leveled);
    assert!(p.is_intra_l0());
    assert_eq!(nums(&p.inputs), vec![10, 9, 8, 7, 6]);
    // Fewer files than the trigger: nothing.
    let v = version(vec![(8..=10).rev().map(|n| file(n, "a", "z", 30, 1)).collect()]);
    assert!(pick_fifo(&v, &c, &HashSet::new(), 5000).is_none());
    // Files already as large as a write buffer are not merged again.
    let v = version(vec![(6..=10).rev().map(|n| file(n, "a", "z", 200, 1)).collect()]);
    assert!(pick_fifo(&v, &c, &HashSet::new(), 5000).is_none());
    // A busy newest file blocks it; without allow_compaction nothing is merged.
    let busy: HashSet<u64> = [10].into_iter().collect();
    assert!(pick_fifo(&five_files(), &c, &busy, 5000).is_none());
    assert!(pick_fifo(&five_files(), &cfg(10_000), &HashSet::new(), 5000).is_none());
}
