//! Subcompactions: one compaction split by key range across threads (RocksDB's
//! `max_subcompactions`). Boundaries come from the input files' smallest keys, chosen so that
//! each piece gets about the same number of input bytes; each piece merges only its range and
//! writes its own output files; the outputs of all pieces, in key order, go into one VersionEdit.

use std::cmp::Ordering;
use std::sync::Arc;

use super::iter::MergingIterator;
use super::table_output::{build_tables, Built, OutputParams};
use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::compaction::picker::Pick;
use crate::error::Result;
use crate::fs::{ActivityGuard, IoActivity};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, user_key, InternalKeyComparator, MAX_SEQUENCE};
use crate::lsm::filename::table_name;
use crate::range_del::{Fragment, FragmentedRangeTombstoneList};

/// Type byte of seek keys (RocksDB's `kValueTypeForSeek`): sorts before every entry of the
/// same user key and sequence.
const TYPE_FOR_SEEK: u8 = 0x18;

/// A piece's user-key range `[lo, hi)`; None is unbounded.
type KeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Split points (user keys) for at most `max_subs` pieces of a compaction over `files`
/// (smallest user key and size of each input file). Pure; empty when no split is worthwhile.
pub(crate) fn subcompaction_boundaries(
    icmp: &InternalKeyComparator,
    files: &[(Vec<u8>, u64)],
    max_subs: usize,
) -> Vec<Vec<u8>> {
    if max_subs <= 1 || files.len() < 2 {
        return Vec::new();
    }
    let mut sorted: Vec<&(Vec<u8>, u64)> = files.iter().collect();
    sorted.sort_by(|a, b| icmp.compare_user(&a.0, &b.0));
    let total: u64 = sorted.iter().map(|f| f.1).sum::<u64>().max(1);
    let per = total as f64 / max_subs as f64;
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut acc = 0u64;
    for (i, f) in sorted.iter().enumerate() {
        // A boundary at a file's smallest key once the bytes before it fill the next piece.
        if i > 0 && acc as f64 >= per * (out.len() + 1) as f64 && out.len() + 1 < max_subs {
            let dup = out
                .last()
                .map(|l| icmp.compare_user(l, &f.0) == Ordering::Equal)
                .unwrap_or(false);
            let is_first = icmp.compare_user(&sorted[0].0, &f.0) == Ordering::Equal;
            if !dup && !is_first {
                out.push(f.0.clone());
            }
        }
        acc += f.1;
    }
    out
}

/// The fragments of `list` inside `[lo, hi)` (None: unbounded), clipped to it.
pub(crate) fn clip_tombstones(
    icmp: &InternalKeyComparator,
    list: &FragmentedRangeTombstoneList,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> FragmentedRangeTombstoneList {
    let mut out = FragmentedRangeTombstoneList::default();
    for f in &list.fragments {
        let start = match lo {
            Some(l) if icmp.compare_user(&f.start, l) == Ordering::Less => l.to_vec(),
            _ => f.start.clone(),
        };
        let end = match hi {
            Some(h) if icmp.compare_user(h, &f.end) == Ordering::Less => h.to_vec(),
            _ => f.end.clone(),
        };
        if icmp.compare_user(&start, &end) == Ordering::Less {
            out.fragments.push(Fragment {
                start,
                end,
                seqs: f.seqs.clone(),
            });
        }
    }
    out
}

/// Iterates `inner` over user keys in `[lo, hi)` only (forward; all a compaction needs).
pub(crate) struct RangeIter<I: InternalIterator> {
    inner: I,
    icmp: InternalKeyComparator,
    lo: Option<Vec<u8>>,
    hi: Option<Vec<u8>>,
}

impl<I: InternalIterator> RangeIter<I> {
    pub(crate) fn new(inner: I, icmp: InternalKeyComparator, lo: Option<Vec<u8>>, hi: Option<Vec<u8>>) -> Self {
        RangeIter { inner, icmp, lo, hi }
    }
}

impl<I: InternalIterator> InternalIterator for RangeIter<I> {
    fn valid(&self) -> bool {
        self.inner.valid()
            && self
                .hi
                .as_ref()
                .map(|h| self.icmp.compare_user(user_key(self.inner.key()), h) == Ordering::Less)
                .unwrap_or(true)
    }
    fn seek_to_first(&mut self) {
        match &self.lo {
            Some(l) => {
                let k = make_internal_key(l, MAX_SEQUENCE, TYPE_FOR_SEEK);
                self.inner.seek(&k)
            }
            None => self.inner.seek_to_first(),
        }
    }
    fn seek_to_last(&mut self) {
        unimplemented!("RangeIter is forward-only")
    }
    fn seek(&mut self, target: &[u8]) {
        self.inner.seek(target)
    }
    fn seek_for_prev(&mut self, _t: &[u8]) {
        unimplemented!("RangeIter is forward-only")
    }
    fn next(&mut self) {
        self.inner.next()
    }
    fn prev(&mut self) {
        unimplemented!("RangeIter is forward-only")
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

fn merge_inputs(db: &ColumnFamilyData, pick: &Pick) -> Result<MergingIterator> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for f in pick.all_inputs() {
        let t = db.table_cache.get(f)?;
        children.push(Box::new(t.iter(true, false)));
    }
    Ok(MergingIterator::new(db.icmp.clone(), children))
}

/// Merge the inputs of `pick` into new files, split into up to `max_subs` key ranges run on
/// separate threads. Returns the outputs of every piece in key order and their blob file
/// changes together; on failure no output (table or blob file) of any piece is left behind.
pub(crate) fn run_subcompactions(
    db: &Arc<DbInner>,
    pick: &Pick,
    params: &OutputParams,
    max_subs: usize,
) -> Result<Built> {
    let files: Vec<(Vec<u8>, u64)> = pick
        .all_inputs()
        .map(|f| (f.smallest_user().to_vec(), f.meta.file_size))
        .collect();
    let cf = &params.cf;
    let bounds = subcompaction_boundaries(&cf.icmp, &files, max_subs);
    let _io = ActivityGuard::set(IoActivity::Compaction);
    if bounds.is_empty() {
        let mut it = merge_inputs(cf, pick)?;
        return build_tables(db, &mut it, params);
    }
    let mut ranges: Vec<KeyRange> = Vec::new();
    let mut lo = None;
    for b in &bounds {
        ranges.push((lo.take(), Some(b.clone())));
        lo = Some(b.clone());
    }
    ranges.push((lo, None));
    let results: Vec<Result<Built>> = std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|(lo, hi)| {
                let sub = OutputParams {
                    cf: cf.clone(),
                    tombstones: clip_tombstones(&cf.icmp, &params.tombstones, lo.as_deref(), hi.as_deref()),
                    snapshots: params.snapshots.clone(),
                    deeper_ranges: params.deeper_ranges.clone(),
                    grandparents: params.grandparents.clone(),
                    filter: params.filter.clone(),
                    ..*params
                };
                let (lo, hi) = (lo.clone(), hi.clone());
                s.spawn(move || -> Result<Built> {
                    let _io = ActivityGuard::set(IoActivity::Compaction);
                    let it = merge_inputs(cf, pick)?;
                    let mut it = RangeIter::new(it, cf.icmp.clone(), lo, hi);
                    build_tables(db, &mut it, &sub)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|p| Err(crate::error::Error::from_panic("subcompaction", p)))
            })
            .collect()
    });
    let mut outputs = Vec::new();
    let mut blobs = crate::blob::changes::BlobChanges::default();
    let mut err = None;
    for r in results {
        match r {
            Ok((o, b)) => {
                outputs.extend(o);
                blobs.absorb(b);
            }
            Err(e) => {
                err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = err {
        for f in &outputs {
            let _ = db.fs.remove_file(&table_name(&db.path, f.number));
        }
        blobs.remove_files(&*db.fs, &db.path);
        return Err(e);
    }
    Ok((outputs, blobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(k: &str, size: u64) -> (Vec<u8>, u64) {
        (k.as_bytes().to_vec(), size)
    }

    #[test]
    fn boundaries_split_input_bytes_evenly() {
        let icmp = InternalKeyComparator::default();
        let files = vec![f("a", 10), f("c", 10), f("e", 10), f("g", 10)];
        assert!(subcompaction_boundaries(&icmp, &files, 1).is_empty());
        assert_eq!(subcompaction_boundaries(&icmp, &files, 2), vec![b"e".to_vec()]);
        assert_eq!(
            subcompaction_boundaries(&icmp, &files, 4),
            vec![b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]
        );
        // never more pieces than files, never a boundary at the smallest key, no duplicates
        let files = vec![f("a", 10), f("a", 10), f("b", 10)];
        assert_eq!(subcompaction_boundaries(&icmp, &files, 8), vec![b"b".to_vec()]);
        // a big file takes a piece of its own
        let files = vec![f("a", 100), f("b", 1), f("c", 1), f("d", 1)];
        assert_eq!(subcompaction_boundaries(&icmp, &files, 2), vec![b"b".to_vec()]);
    }

    #[test]
    fn tombstones_are_clipped_to_the_piece() {
        let icmp = InternalKeyComparator::default();
        let list = FragmentedRangeTombstoneList::from_fragments(vec![
            Fragment {
                start: b"a".to_vec(),
                end: b"d".to_vec(),
                seqs: vec![5],
            },
            Fragment {
                start: b"x".to_vec(),
                end: b"z".to_vec(),
                seqs: vec![3],
            },
        ]);
        let c = clip_tombstones(&icmp, &list, Some(b"b"), Some(b"y"));
        let got: Vec<(&[u8], &[u8])> = c.fragments.iter().map(|f| (&f.start[..], &f.end[..])).collect();
        assert_eq!(got, vec![(&b"b"[..], &b"d"[..]), (&b"x"[..], &b"y"[..])]);
        assert!(clip_tombstones(&icmp, &list, Some(b"e"), Some(b"w"))
            .fragments
            .is_empty());
    }
}
