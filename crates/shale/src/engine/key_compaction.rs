//! What flush and compaction keep of one user key's entries — RocksDB's compaction iterator for
//! one key, and the only place the background jobs interpret value types: per snapshot stripe,
//! merges folded, single deletes cancelled, entries under a range tombstone dropped, the
//! compaction filter applied, drops counted by reason, the sequence number each kept entry is
//! written with; and the range tombstones written into the output. `table_output.rs` only
//! groups the input by user key and writes what this file returns.

use crate::compaction_filter::{CompactionFilter, Decision};
use crate::error::{Error, Result};
use crate::key::{user_key, vt, InternalKeyComparator, SequenceNumber};
use crate::merge_operator::{full_merge_newest_first, MergeOperator};
use crate::range_del::FragmentedRangeTombstoneList;
use crate::statistics::{Statistics, Ticker};
use std::cmp::Ordering;

/// A point entry of one user key during compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KEntry {
    pub seq: SequenceNumber,
    pub vtype: u8,
    pub value: Vec<u8>,
}

/// What compaction knows about one user key.
pub(crate) struct KeyCtx<'a> {
    /// Live snapshots, ascending.
    pub snapshots: &'a [SequenceNumber],
    pub merge_op: Option<&'a dyn MergeOperator>,
    /// Nothing older for this key exists outside the compaction's inputs.
    pub bottom: bool,
    /// Seqnos (descending) of the tombstones covering this key.
    pub tomb_seqs: &'a [SequenceNumber],
}

#[inline]
pub(crate) fn stripe(snapshots: &[SequenceNumber], seq: SequenceNumber) -> usize {
    snapshots.partition_point(|&s| s < seq)
}

impl KeyCtx<'_> {
    /// Deleted by a tombstone that every reader seeing the entry also sees.
    pub(crate) fn covered(&self, seq: SequenceNumber) -> bool {
        // smallest tombstone seqno above `seq`
        match self.tomb_seqs.iter().rev().find(|&&t| t > seq) {
            Some(&t) => stripe(self.snapshots, t) == stripe(self.snapshots, seq),
            None => false,
        }
    }
}

impl KEntry {
    /// A point deletion: Delete, SingleDelete or a deletion with a timestamp.
    pub(crate) fn is_deletion(&self) -> bool {
        matches!(
            self.vtype,
            vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP
        )
    }
}

/// What a flush or compaction writes of one user key, newest first (RocksDB's compaction
/// iterator for one key): `compact_key`'s result, then the compaction filter (with the level of
/// the inputs) over what survives. A lone Put under no tombstone is kept as it is without the
/// full rules. With `drop_stats` (compactions), the dropped entries are counted by reason.
pub(crate) fn keep_of_key(
    key: &[u8],
    entries: Vec<KEntry>,
    ctx: &KeyCtx<'_>,
    filter: Option<&mut (Box<dyn CompactionFilter>, u32)>,
    drop_stats: Option<&Statistics>,
) -> Result<Vec<KEntry>> {
    let newest = entries.first().map(|e| (e.seq, e.vtype));
    let mut keep = if entries.len() == 1 && ctx.tomb_seqs.is_empty() && entries[0].vtype == vt::VALUE {
        entries
    } else {
        let drops = drop_stats.is_some().then(|| KeyDrops::classify(&entries, ctx));
        let keep = compact_key(key, entries, ctx)?;
        if let (Some(s), Some(d)) = (drop_stats, drops) {
            d.record(s, keep.len());
        }
        keep
    };
    if let Some((f, level)) = filter {
        let before = keep.len();
        apply_filter(f.as_mut(), *level, key, newest, &mut keep, ctx.snapshots, ctx.bottom)?;
        if let Some(s) = drop_stats {
            s.tick(Ticker::CompactionKeyDropUser, before.saturating_sub(keep.len()) as u64);
        }
    }
    Ok(keep)
}

/// The sequence number a kept entry is written with. At the bottom, the newest visible value
/// of the oldest stripe gets sequence 0, as RocksDB does (better compression, and the key can
/// never be shadowed) — unless a range tombstone covers the key: kept in this output because it
/// overlaps a deeper file elsewhere, it would then hide the newer value
/// (`stress_regressions::zeroed_key_under_kept_range_tombstone`).
#[inline]
pub(crate) fn output_seq(e: &KEntry, ctx: &KeyCtx<'_>) -> SequenceNumber {
    if ctx.bottom
        && ctx.tomb_seqs.is_empty()
        && matches!(e.vtype, vt::VALUE | vt::WIDE_COLUMN_ENTITY | vt::BLOB_INDEX)
        && stripe(ctx.snapshots, e.seq) == 0
    {
        0
    } else {
        e.seq
    }
}

/// Compact the entries of one user key (newest first) into what must be kept (newest first).
/// Rules: in each snapshot stripe only the newest entry is visible; a covered entry is dropped;
/// merge operands are fully merged when their base (Put, deletion, tombstone, or nothing at the
/// bottom) is in the same stripe, partially merged otherwise; a SingleDelete meeting a Put
/// directly below it in the same stripe removes both, and one without its Put stays even under
/// a newer entry of its stripe (the Put it deletes may be in an older file); at the bottom,
/// deletions of the oldest stripe are dropped.
pub(crate) fn compact_key(key: &[u8], entries: Vec<KEntry>, ctx: &KeyCtx<'_>) -> Result<Vec<KEntry>> {
    let n = entries.len();
    let mut out = Vec::with_capacity(n.min(4));
    let mut hidden: Option<usize> = None;
    let mut i = 0;
    while i < n {
        let e = &entries[i];
        let s = stripe(ctx.snapshots, e.seq);
        // A SingleDelete below a newer entry of its stripe is not merely hidden: it still
        // deletes the Put below it (Put, SingleDelete, Put, SingleDelete is within the
        // contract). Dropped as hidden, the older Put would come back once the newer Put met
        // its own SingleDelete. RocksDB's compaction iterator likewise handles a SingleDelete
        // before its hidden-entry rule.
        if ctx.covered(e.seq) || (hidden == Some(s) && e.vtype != vt::SINGLE_DELETION) {
            i += 1;
            continue;
        }
        match e.vtype {
            vt::DELETION | vt::DELETION_WITH_TIMESTAMP => {
                if !(ctx.bottom && s == 0) {
                    out.push(e.clone());
                }
                hidden = Some(s);
                i += 1;
            }
            vt::SINGLE_DELETION => {
                let next_put = entries.get(i + 1).filter(|x| {
                    matches!(x.vtype, vt::VALUE | vt::WIDE_COLUMN_ENTITY | vt::BLOB_INDEX)
                        && stripe(ctx.snapshots, x.seq) == s
                        && !ctx.covered(x.seq)
                });
                if next_put.is_some() {
                    // Both vanish; nothing is written that would hide older entries, so those
                    // are still judged on their own.
                    i += 2;
                } else {
                    if !(ctx.bottom && s == 0) {
                        out.push(e.clone());
                    }
                    hidden = Some(s);
                    i += 1;
                }
            }
            vt::MERGE => {
                let mut j = i + 1;
                let mut base: Option<Option<&[u8]>> = None;
                // The base is a wide-column entity: the operands merge into its default column.
                let mut base_entity = false;
                while j < n && stripe(ctx.snapshots, entries[j].seq) == s {
                    let x = &entries[j];
                    if ctx.covered(x.seq) {
                        base = Some(None);
                        break;
                    }
                    match x.vtype {
                        vt::MERGE => j += 1,
                        vt::VALUE => {
                            base = Some(Some(&x.value));
                            break;
                        }
                        vt::WIDE_COLUMN_ENTITY => {
                            base = Some(Some(&x.value));
                            base_entity = true;
                            break;
                        }
                        vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => {
                            base = Some(None);
                            break;
                        }
                        _ => break,
                    }
                }
                if base.is_none() && j == n && ctx.bottom {
                    base = Some(None);
                }
                let ops: Vec<Vec<u8>> = entries[i..j].iter().map(|x| x.value.clone()).collect();
                match (ctx.merge_op, base) {
                    (Some(op), Some(Some(entity))) if base_entity => {
                        let dflt = crate::wide_columns::default_range(entity)?;
                        let v = full_merge_newest_first(op, key, dflt.map(|r| &entity[r]), &ops)?;
                        out.push(KEntry {
                            seq: e.seq,
                            vtype: vt::WIDE_COLUMN_ENTITY,
                            value: crate::wide_columns::with_default(entity, &v)?,
                        });
                        hidden = Some(s);
                    }
                    (Some(op), Some(b)) => {
                        let v = full_merge_newest_first(op, key, b, &ops)?;
                        out.push(KEntry {
                            seq: e.seq,
                            vtype: vt::VALUE,
                            value: v,
                        });
                        hidden = Some(s);
                    }
                    (Some(op), None) if ops.len() > 1 => {
                        let oldest_first: Vec<&[u8]> = ops.iter().rev().map(|v| v.as_slice()).collect();
                        match op.partial_merge(key, &oldest_first) {
                            Some(v) => out.push(KEntry {
                                seq: e.seq,
                                vtype: vt::MERGE,
                                value: v,
                            }),
                            None => out.extend(entries[i..j].iter().cloned()),
                        }
                    }
                    _ => out.extend(entries[i..j].iter().cloned()),
                }
                i = j;
            }
            _ => {
                out.push(e.clone());
                hidden = Some(s);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// The tombstones compaction writes: for each fragment, the newest seqno of each snapshot
/// stripe; the oldest stripe's is dropped where `bottom(start, end)` says nothing older exists.
pub(crate) fn output_tombstones(
    list: &FragmentedRangeTombstoneList,
    snapshots: &[SequenceNumber],
    bottom: impl Fn(&[u8], &[u8]) -> bool,
) -> FragmentedRangeTombstoneList {
    let mut out = FragmentedRangeTombstoneList::default();
    for f in &list.fragments {
        let mut seqs = Vec::new();
        let mut last_stripe = None;
        for &s in &f.seqs {
            let st = stripe(snapshots, s);
            if last_stripe == Some(st) {
                continue;
            }
            last_stripe = Some(st);
            seqs.push(s);
        }
        if let Some(&last) = seqs.last() {
            if stripe(snapshots, last) == 0 && bottom(&f.start, &f.end) {
                seqs.pop();
            }
        }
        if !seqs.is_empty() {
            out.fragments.push(crate::range_del::Fragment {
                start: f.start.clone(),
                end: f.end.clone(),
                seqs,
            });
        }
    }
    out
}

/// Add the tombstones of `list` clipped to `[lower, upper)` to a table builder.
pub(crate) fn add_clipped(
    b: &mut crate::table::any::AnyTableBuilder,
    icmp: &InternalKeyComparator,
    list: &FragmentedRangeTombstoneList,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Result<()> {
    for f in &list.fragments {
        let start: &[u8] = match lower {
            Some(l) if icmp.compare_user(&f.start, l) == Ordering::Less => l,
            _ => &f.start,
        };
        let end: &[u8] = match upper {
            Some(u) if icmp.compare_user(u, &f.end) == Ordering::Less => u,
            _ => &f.end,
        };
        if icmp.compare_user(start, end) != Ordering::Less {
            continue;
        }
        for &s in &f.seqs {
            let k = crate::key::make_internal_key(start, s, vt::RANGE_DELETION);
            b.add_range_tombstone(&k, end)?;
        }
    }
    Ok(())
}

#[allow(dead_code)]
pub(crate) fn user_key_of(ikey: &[u8]) -> &[u8] {
    user_key(ikey)
}

/// Run a user callback, turning a panic into an error.
pub(crate) fn catch_user<T>(context: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| Error::from_panic(context, p))
}

/// Apply a compaction filter to the compacted entries of `key` (newest first), as RocksDB's
/// compaction iterator: the filter sees the key's newest input entry only if it is a Put that
/// survived (not covered by a range tombstone) and is newer than every live snapshot, so no
/// snapshot can observe the decision. `Remove` turns it into a deletion, dropped when nothing
/// older is kept and nothing older exists below (`bottom`); `Change` replaces the value.
fn apply_filter(
    filter: &mut dyn CompactionFilter,
    level: u32,
    key: &[u8],
    newest: Option<(SequenceNumber, u8)>,
    keep: &mut Vec<KEntry>,
    snapshots: &[SequenceNumber],
    bottom: bool,
) -> Result<()> {
    let only = keep.len() == 1;
    let Some(first) = keep.first_mut() else {
        return Ok(());
    };
    if newest != Some((first.seq, vt::VALUE))
        || first.vtype != vt::VALUE
        || stripe(snapshots, first.seq) != snapshots.len()
    {
        return Ok(());
    }
    match catch_user("compaction filter", || filter.filter(level, key, &first.value))? {
        Decision::Keep => {}
        Decision::Change(v) => first.value = v.to_vec(),
        Decision::Remove => {
            if bottom && only {
                keep.clear();
            } else {
                first.vtype = vt::DELETION;
                first.value.clear();
            }
        }
    }
    Ok(())
}

/// How the entries of one key a compaction merges are dropped (RocksDB's
/// `rocksdb.compaction.key.drop.*`): covered by a range tombstone; a deletion at the bottom with
/// nothing older beneath (obsolete); the rest (hidden by a newer entry of the same snapshot
/// stripe, or merged operands) as "newer entry".
struct KeyDrops {
    total: usize,
    range_del: usize,
    obsolete: usize,
}

impl KeyDrops {
    fn classify(entries: &[KEntry], ctx: &KeyCtx<'_>) -> KeyDrops {
        let mut d = KeyDrops {
            total: entries.len(),
            range_del: 0,
            obsolete: 0,
        };
        for e in entries {
            if ctx.covered(e.seq) {
                d.range_del += 1;
            } else if ctx.bottom && e.is_deletion() && stripe(ctx.snapshots, e.seq) == 0 {
                d.obsolete += 1;
            }
        }
        d
    }

    fn record(&self, s: &Statistics, kept: usize) {
        let dropped = self.total.saturating_sub(kept);
        let range_del = self.range_del.min(dropped);
        let obsolete = self.obsolete.min(dropped - range_del);
        let newer = dropped - range_del - obsolete;
        for (t, n) in [
            (Ticker::CompactionKeyDropRangeDel, range_del),
            (Ticker::CompactionKeyDropObsolete, obsolete),
            (Ticker::CompactionKeyDropNewerEntry, newer),
        ] {
            if n > 0 {
                s.tick(t, n as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge_operator::merge_operator_by_name;
    use crate::range_del::RangeTombstone;

    fn e(seq: u64, t: u8, v: &str) -> KEntry {
        KEntry {
            seq,
            vtype: t,
            value: v.as_bytes().to_vec(),
        }
    }

    fn run(entries: Vec<KEntry>, snaps: &[u64], bottom: bool, tombs: &[u64]) -> Vec<KEntry> {
        let op = merge_operator_by_name("stringappend").unwrap();
        let ctx = KeyCtx {
            snapshots: snaps,
            merge_op: Some(op.as_ref()),
            bottom,
            tomb_seqs: tombs,
        };
        compact_key(b"k", entries, &ctx).unwrap()
    }

    #[test]
    fn single_delete_cancels_put_in_same_stripe() {
        assert_eq!(
            run(
                vec![e(5, vt::SINGLE_DELETION, ""), e(3, vt::VALUE, "a")],
                &[],
                false,
                &[]
            ),
            vec![]
        );
        // a snapshot between them keeps both
        let got = run(
            vec![e(5, vt::SINGLE_DELETION, ""), e(3, vt::VALUE, "a")],
            &[4],
            false,
            &[],
        );
        assert_eq!(got, vec![e(5, vt::SINGLE_DELETION, ""), e(3, vt::VALUE, "a")]);
        // SD over a Delete: kept (not at the bottom)
        let got = run(
            vec![e(5, vt::SINGLE_DELETION, ""), e(3, vt::DELETION, "")],
            &[],
            false,
            &[],
        );
        assert_eq!(got, vec![e(5, vt::SINGLE_DELETION, "")]);
        // after cancelling, an older deletion is still written
        let got = run(
            vec![
                e(5, vt::SINGLE_DELETION, ""),
                e(4, vt::VALUE, "b"),
                e(3, vt::DELETION, ""),
            ],
            &[],
            false,
            &[],
        );
        assert_eq!(got, vec![e(3, vt::DELETION, "")]);
        // SD alone at the bottom: dropped
        assert_eq!(run(vec![e(5, vt::SINGLE_DELETION, "")], &[], true, &[]), vec![]);
    }

    #[test]
    fn single_delete_under_a_newer_put_still_deletes_the_older_put() {
        let (sd, put) = (vt::SINGLE_DELETION, vt::VALUE);
        // Put(1) elsewhere, SD(2), re-Put(3): the SD stays below the newer Put (not at the
        // bottom: the Put it deletes may be in an older file) ...
        let got = run(vec![e(3, put, "b"), e(2, sd, "")], &[], false, &[]);
        assert_eq!(got, vec![e(3, put, "b"), e(2, sd, "")]);
        // ... so that once SD(4) cancels Put(3), SD(2) is still there for Put(1).
        let got = run(vec![e(4, sd, ""), e(3, put, "b"), e(2, sd, "")], &[], false, &[]);
        assert_eq!(got, vec![e(2, sd, "")]);
        // With its Put in the same compaction, the SD below the newer Put cancels it.
        let got = run(vec![e(3, put, "b"), e(2, sd, ""), e(1, put, "a")], &[], false, &[]);
        assert_eq!(got, vec![e(3, put, "b")]);
        // At the bottom nothing older exists: only the newest Put stays.
        let got = run(vec![e(3, put, "b"), e(2, sd, "")], &[], true, &[]);
        assert_eq!(got, vec![e(3, put, "b")]);
        // Other hidden entries are still dropped.
        let got = run(
            vec![e(3, put, "b"), e(2, sd, ""), e(1, vt::DELETION, "")],
            &[],
            false,
            &[],
        );
        assert_eq!(got, vec![e(3, put, "b"), e(2, sd, "")]);
    }

    #[test]
    fn merges_full_partial_and_snapshots() {
        let m = vt::MERGE;
        // base in stripe: full merge
        let got = run(vec![e(9, m, "c"), e(8, m, "b"), e(7, vt::VALUE, "a")], &[], false, &[]);
        assert_eq!(got, vec![e(9, vt::VALUE, "a,b,c")]);
        // no base, not bottom: partial merge
        let got = run(vec![e(9, m, "c"), e(8, m, "b")], &[], false, &[]);
        assert_eq!(got, vec![e(9, m, "b,c")]);
        // no base, bottom: full merge with nothing
        let got = run(vec![e(9, m, "c"), e(8, m, "b")], &[], true, &[]);
        assert_eq!(got, vec![e(9, vt::VALUE, "b,c")]);
        // a snapshot at 8 splits the operands
        let got = run(vec![e(9, m, "c"), e(8, m, "b"), e(7, vt::VALUE, "a")], &[8], false, &[]);
        assert_eq!(got, vec![e(9, m, "c"), e(8, vt::VALUE, "a,b")]);
        // deletion as base
        let got = run(
            vec![e(9, m, "c"), e(8, vt::DELETION, ""), e(7, vt::VALUE, "a")],
            &[],
            false,
            &[],
        );
        assert_eq!(got, vec![e(9, vt::VALUE, "c")]);
    }

    #[test]
    fn covered_entries_dropped_per_stripe() {
        // tombstone at 6 covers the put at 3
        assert_eq!(run(vec![e(3, vt::VALUE, "a")], &[], false, &[6]), vec![]);
        // a snapshot at 4 needs the put
        assert_eq!(
            run(vec![e(3, vt::VALUE, "a")], &[4], false, &[6]),
            vec![e(3, vt::VALUE, "a")]
        );
        // operand above the tombstone merges with nothing
        let got = run(vec![e(9, vt::MERGE, "x"), e(3, vt::VALUE, "a")], &[], false, &[6]);
        assert_eq!(got, vec![e(9, vt::VALUE, "x")]);
    }

    #[test]
    fn output_tombstones_keep_one_per_stripe() {
        let icmp = InternalKeyComparator::default();
        let l = FragmentedRangeTombstoneList::new(
            &icmp,
            vec![
                RangeTombstone {
                    start: b"a".to_vec(),
                    end: b"c".to_vec(),
                    seq: 3,
                },
                RangeTombstone {
                    start: b"a".to_vec(),
                    end: b"c".to_vec(),
                    seq: 5,
                },
                RangeTombstone {
                    start: b"a".to_vec(),
                    end: b"c".to_vec(),
                    seq: 9,
                },
            ],
        );
        let o = output_tombstones(&l, &[], |_, _| false);
        assert_eq!(o.fragments[0].seqs, vec![9]);
        let o = output_tombstones(&l, &[4], |_, _| false);
        assert_eq!(o.fragments[0].seqs, vec![9, 3]);
        let o = output_tombstones(&l, &[4], |_, _| true);
        assert_eq!(o.fragments[0].seqs, vec![9]);
        let o = output_tombstones(&l, &[], |_, _| true);
        assert!(o.fragments.is_empty());
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    struct Fixed(Decision);
    impl CompactionFilter for Fixed {
        fn filter(&mut self, _: u32, _: &[u8], _: &[u8]) -> Decision {
            self.0.clone()
        }
        fn name(&self) -> &str {
            "fixed"
        }
    }

    fn put(seq: u64, v: &str) -> KEntry {
        KEntry {
            seq,
            vtype: vt::VALUE,
            value: v.as_bytes().to_vec(),
        }
    }

    fn run(d: Decision, keep: Vec<KEntry>, snaps: &[u64], bottom: bool) -> Vec<KEntry> {
        let newest = keep.first().map(|e| (e.seq, e.vtype));
        let mut keep = keep;
        apply_filter(&mut Fixed(d), 1, b"k", newest, &mut keep, snaps, bottom).unwrap();
        keep
    }

    #[test]
    fn remove_writes_a_deletion_unless_nothing_older_can_exist() {
        let del = KEntry {
            seq: 9,
            vtype: vt::DELETION,
            value: Vec::new(),
        };
        // Not at the bottom: older versions may lie below, so a deletion is written.
        assert_eq!(run(Decision::Remove, vec![put(9, "a")], &[], false), vec![del.clone()]);
        // At the bottom with nothing older: dropped.
        assert_eq!(run(Decision::Remove, vec![put(9, "a")], &[], true), vec![]);
        // At the bottom above a version a snapshot sees: a deletion over it.
        assert_eq!(
            run(Decision::Remove, vec![put(9, "a"), put(3, "old")], &[5], true),
            vec![del, put(3, "old")]
        );
        // The newest version is visible to a snapshot: not filtered.
        assert_eq!(run(Decision::Remove, vec![put(9, "a")], &[9], false), vec![put(9, "a")]);
        assert_eq!(
            run(Decision::Change(b"z"), vec![put(9, "a")], &[4], false),
            vec![put(9, "z")]
        );
    }
}
