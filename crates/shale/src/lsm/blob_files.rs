//! The blob files of a version: each family's live blob files with their garbage, the rule that
//! drops them, and their on-disk life (a dropped file is deleted once no version holds it).
//!
//! A blob file leaves the version when all its blobs are garbage, or when its number is below
//! the smallest `oldest_blob_file_number` of the family's tables (no table can point into it:
//! a table's blob indexes point into files numbered at least its oldest one). As RocksDB.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};
use std::sync::Arc;

use parking_lot::Mutex;

use super::version_edit::{BlobFileAddition, VersionEdit};
use crate::error::{Error, Result};

/// Collects the numbers of blob files a synced MANIFEST edit dropped and no version holds.
#[derive(Default)]
pub(crate) struct BlobReaper {
    pending: Mutex<Vec<u64>>,
}

impl BlobReaper {
    pub(crate) fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.pending.lock())
    }
}

/// A live blob file.
pub(crate) struct BlobFileMeta {
    pub addition: BlobFileAddition,
    pub garbage_count: u64,
    pub garbage_bytes: u64,
    life: Arc<BlobLife>,
}

/// The on-disk life of a blob file, shared by every version's `BlobFileMeta` of it.
struct BlobLife {
    number: u64,
    obsolete: AtomicBool,
    reaper: Arc<BlobReaper>,
}

impl Drop for BlobLife {
    fn drop(&mut self) {
        if self.obsolete.load(AtOrd::Acquire) {
            self.reaper.pending.lock().push(self.number);
        }
    }
}

impl BlobFileMeta {
    pub(crate) fn number(&self) -> u64 {
        self.addition.blob_file_number
    }
    /// Every blob of the file is garbage.
    fn all_garbage(&self) -> bool {
        self.garbage_count >= self.addition.total_blob_count
    }
    /// A synced MANIFEST edit dropped the file: delete it once no version holds it.
    pub(crate) fn mark_obsolete(&self) {
        self.life.obsolete.store(true, AtOrd::Release);
    }
}

/// A family's live blob files by number.
pub(crate) type BlobFiles = BTreeMap<u64, Arc<BlobFileMeta>>;

/// `cur` with the additions and garbage of `edit` applied. Garbage for a file not in `cur`, or
/// more garbage than blobs, is Corruption (the caller names the MANIFEST).
pub(crate) fn apply_blob_edit(cur: &BlobFiles, edit: &VersionEdit, reaper: &Arc<BlobReaper>) -> Result<BlobFiles> {
    if edit.blob_file_additions.is_empty() && edit.blob_file_garbages.is_empty() {
        return Ok(cur.clone());
    }
    let mut out = cur.clone();
    for a in &edit.blob_file_additions {
        if out.contains_key(&a.blob_file_number) {
            return Err(Error::corrupt(format!(
                "blob file {} is added twice",
                a.blob_file_number
            )));
        }
        let life = Arc::new(BlobLife {
            number: a.blob_file_number,
            obsolete: AtomicBool::new(false),
            reaper: reaper.clone(),
        });
        out.insert(
            a.blob_file_number,
            Arc::new(BlobFileMeta {
                addition: a.clone(),
                garbage_count: 0,
                garbage_bytes: 0,
                life,
            }),
        );
    }
    for g in &edit.blob_file_garbages {
        let Some(m) = out.get(&g.blob_file_number) else {
            return Err(Error::corrupt(format!(
                "garbage recorded for blob file {}, which is not live",
                g.blob_file_number
            )));
        };
        let count = m.garbage_count.saturating_add(g.garbage_blob_count);
        let bytes = m.garbage_bytes.saturating_add(g.garbage_blob_bytes);
        if count > m.addition.total_blob_count || bytes > m.addition.total_blob_bytes {
            return Err(Error::corrupt(format!(
                "blob file {} has more garbage ({count} blobs, {bytes} bytes) than blobs ({}, {} bytes)",
                g.blob_file_number, m.addition.total_blob_count, m.addition.total_blob_bytes
            )));
        }
        let updated = Arc::new(BlobFileMeta {
            addition: m.addition.clone(),
            garbage_count: count,
            garbage_bytes: bytes,
            life: m.life.clone(),
        });
        out.insert(g.blob_file_number, updated);
    }
    Ok(out)
}

/// The smallest `oldest_blob_file_number` of the tables (None: no table references a blob).
pub(crate) fn min_oldest_blob<'a>(numbers: impl Iterator<Item = u64> + 'a) -> Option<u64> {
    numbers.filter(|&n| n != 0).min()
}

/// Remove the files no table can reference any more (all garbage, or below `min_oldest`);
/// returns them.
pub(crate) fn retain_live(blobs: &mut BlobFiles, min_oldest: Option<u64>) -> Vec<Arc<BlobFileMeta>> {
    let dead: Vec<u64> = blobs
        .values()
        .filter(|m| m.all_garbage() || min_oldest.is_none_or(|o| m.number() < o))
        .map(|m| m.number())
        .collect();
    dead.iter().filter_map(|n| blobs.remove(n)).collect()
}

/// The records that restate `blobs` in a new MANIFEST: their additions and garbage.
pub(crate) fn restate(blobs: &BlobFiles, edit: &mut VersionEdit) {
    for m in blobs.values() {
        edit.blob_file_additions.push(m.addition.clone());
        if m.garbage_count > 0 {
            edit.blob_file_garbages.push(super::version_edit::BlobFileGarbage {
                blob_file_number: m.number(),
                garbage_blob_count: m.garbage_count,
                garbage_blob_bytes: m.garbage_bytes,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsm::version_edit::BlobFileGarbage;

    fn add(n: u64, count: u64) -> BlobFileAddition {
        BlobFileAddition {
            blob_file_number: n,
            total_blob_count: count,
            total_blob_bytes: count * 100,
            ..Default::default()
        }
    }

    #[test]
    fn files_leave_when_all_garbage_or_below_every_tables_oldest_and_are_reaped_after_the_last_version() {
        let reaper = Arc::new(BlobReaper::default());
        let e = VersionEdit {
            blob_file_additions: vec![add(5, 2), add(7, 3), add(9, 1)],
            ..Default::default()
        };
        let mut b = apply_blob_edit(&BlobFiles::new(), &e, &reaper).unwrap();
        assert!(retain_live(&mut b, Some(5)).is_empty());
        // two of file 7's three blobs are garbage: it stays
        let g = |n, c| VersionEdit {
            blob_file_garbages: vec![BlobFileGarbage {
                blob_file_number: n,
                garbage_blob_count: c,
                garbage_blob_bytes: c * 100,
            }],
            ..Default::default()
        };
        let mut b2 = apply_blob_edit(&b, &g(7, 2), &reaper).unwrap();
        assert!(retain_live(&mut b2, Some(5)).is_empty());
        assert_eq!(b2[&7].garbage_count, 2);
        // the third: it goes
        let mut b3 = apply_blob_edit(&b2, &g(7, 1), &reaper).unwrap();
        let dead = retain_live(&mut b3, Some(5));
        assert_eq!(dead.iter().map(|m| m.number()).collect::<Vec<_>>(), vec![7]);
        // tables' oldest moves to 9: file 5 goes
        let dead5 = retain_live(&mut b3, Some(9));
        assert_eq!(dead5.iter().map(|m| m.number()).collect::<Vec<_>>(), vec![5]);
        for d in dead.iter().chain(dead5.iter()) {
            d.mark_obsolete();
        }
        drop((dead, dead5));
        // the older maps still hold 5 and 7
        assert!(reaper.take().is_empty());
        drop((b, b2));
        let mut got = reaper.take();
        got.sort();
        assert_eq!(got, vec![5, 7]);
        // no table references a blob: every file goes
        assert_eq!(retain_live(&mut b3, None).len(), 1);
        // too much garbage, garbage of an unknown file
        assert!(apply_blob_edit(&b3, &g(9, 2), &reaper).is_err_and(|e| e.is_corruption()));
        assert!(apply_blob_edit(&b3, &g(4, 1), &reaper).is_err_and(|e| e.is_corruption()));
    }
}
