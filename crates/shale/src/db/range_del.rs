//! DB-level glue for range deletions, merge operands and single deletes: argument checks, the
//! memtable and per-file tombstone lists, the point-lookup chain (operands collected from the
//! newest source down to a base), and the per-key compaction rules.

use std::cmp::Ordering;
use std::sync::Arc;

use super::column_family::ColumnFamilyData;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, user_key, vt, InternalKeyComparator, SequenceNumber};
use crate::lsm::version::FileMeta;
use crate::memtable::{AddCounters, MemTable};
use crate::merge::{full_merge_newest_first, MergeOperator};
use crate::range_del::{FragmentedRangeTombstoneList, RangeTombstone};
use crate::table::pinnable::{Home, Val, ValueOut};

pub(crate) fn validate_range(db: &ColumnFamilyData, begin: &[u8], end: &[u8]) -> Result<()> {
    super::write::check_key(db, begin)?;
    super::write::check_key(db, end)?;
    if db.icmp.compare_user(begin, end) == Ordering::Greater {
        return Err(Error::invalid("delete_range: begin key comes after end key"));
    }
    // Only block-based tables have a range-deletion block (RocksDB refuses too): refused at the
    // call rather than by the flush that could not write the file.
    if !matches!(db.opts.table_factory, crate::options::TableFactory::BlockBased) {
        return Err(Error::NotSupported(
            "delete_range needs block-based tables (Options::table_factory is plain or cuckoo)".into(),
        ));
    }
    Ok(())
}

pub(crate) fn validate_merge(db: &ColumnFamilyData) -> Result<()> {
    if db.opts.merge_operator.is_none() {
        return Err(Error::invalid(
            "merge: no merge operator is configured (Options::merge_operator)",
        ));
    }
    if matches!(db.opts.table_factory, crate::options::TableFactory::Cuckoo(_)) {
        return Err(Error::NotSupported(
            "merge: cuckoo tables hold only puts and deletes (Options::table_factory)".into(),
        ));
    }
    Ok(())
}

/// The configured operator, or the error a read needing one returns.
pub(crate) fn merge_op(db: &ColumnFamilyData) -> Result<&dyn MergeOperator> {
    db.opts.merge_operator.as_deref().ok_or_else(|| {
        Error::invalid(
            "the database holds merge operands but no merge operator is configured (Options::merge_operator)",
        )
    })
}

/// Insert a range tombstone into a memtable's range-deletion list at `seq`.
pub(crate) fn mem_add_range_tombstone(mem: &MemTable, seq: SequenceNumber, begin: &[u8], end: &[u8]) {
    if mem.icmp().compare_user(begin, end) == Ordering::Less {
        mem.range_dels.add(begin, end, seq);
    }
    let size = (begin.len() + 8 + end.len() + 2) as u64;
    mem.apply_counters(&AddCounters {
        entries: 1,
        deletes: 1,
        data_size: size,
        min_seq: seq,
        max_seq: seq,
    });
}

/// The fragmented tombstones of a table file (loaded once, cached in the `FileMeta`).
pub(crate) fn file_tombstones(
    db: &ColumnFamilyData,
    f: &FileMeta,
) -> Result<Option<Arc<FragmentedRangeTombstoneList>>> {
    if let Some(l) = f.range_dels().get() {
        return Ok(l.clone());
    }
    let t = db.table_cache.get(f)?;
    let list = if !t.may_have_range_tombstones() {
        None
    } else {
        let raw = t.range_tombstones()?;
        let ts: Vec<RangeTombstone> = raw
            .into_iter()
            .map(|(k, end)| {
                let pk = parse_internal_key(&k)?;
                Ok(RangeTombstone {
                    start: pk.user_key.to_vec(),
                    end,
                    seq: pk.seq,
                })
            })
            .collect::<Result<_>>()?;
        let l = FragmentedRangeTombstoneList::new(&db.icmp, ts);
        if l.is_empty() {
            None
        } else {
            Some(Arc::new(l))
        }
    };
    let _ = f.range_dels().set(list.clone());
    Ok(list)
}

/// State of a point lookup walking from the newest source to the oldest.
pub(crate) struct Chain {
    /// Merge operands seen so far, newest first.
    pub operands: Vec<Vec<u8>>,
    /// Largest covering range-tombstone seqno seen so far (0: none). Entries below it are
    /// deleted.
    pub max_tomb: SequenceNumber,
}

impl Chain {
    pub(crate) fn new() -> Chain {
        Chain {
            operands: Vec::new(),
            max_tomb: 0,
        }
    }

    pub(crate) fn add_tombstones(
        &mut self,
        l: Option<&FragmentedRangeTombstoneList>,
        icmp: &InternalKeyComparator,
        key: &[u8],
        seq: SequenceNumber,
    ) {
        if let Some(l) = l {
            self.max_tomb = self.max_tomb.max(l.max_covering_seq(icmp, key, seq));
        }
    }

    /// End the lookup with `base` (None: no value / deleted). The value is `base` itself
    /// (copied or pinned, as `V` asks) unless merge operands were collected.
    #[inline]
    pub(crate) fn finish<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        key: &[u8],
        base: Option<Val<'_>>,
    ) -> Result<Option<V>> {
        if self.operands.is_empty() {
            return Ok(base.map(Val::out));
        }
        let op = merge_op(db)?;
        let t = crate::perf_context::PerfTimer::start();
        let r = full_merge_newest_first(op, key, base.as_ref().map(|b| b.bytes()), &self.operands);
        t.stop(crate::perf_context::field::MERGE_OPERATOR_TIME_NANOS);
        if r.is_err() {
            crate::statistics::tick(&db.stats, crate::statistics::Ticker::NumberMergeFailures, 1);
        }
        r.map(|v| Some(V::from_vec(v)))
    }

    /// One entry found for `key` (newest visible in its source). `Some` when it decides.
    #[inline]
    pub(crate) fn entry<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        key: &[u8],
        seq: SequenceNumber,
        t: u8,
        value: Val<'_>,
    ) -> Result<Option<Option<V>>> {
        if seq < self.max_tomb {
            return self.finish(db, key, None).map(Some);
        }
        match t {
            vt::VALUE => self.finish(db, key, Some(value)).map(Some),
            vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => self.finish(db, key, None).map(Some),
            vt::MERGE => {
                self.operands.push(value.to_vec());
                Ok(None)
            }
            t => Err(Error::NotSupported(format!("value type {t:#x} is not supported"))),
        }
    }

    /// Walk the entries of `key` from the iterator's position (all visible to the read).
    pub(crate) fn scan<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        it: &mut dyn InternalIterator,
        key: &[u8],
    ) -> Result<Option<Option<V>>> {
        while it.valid() {
            let pk = parse_internal_key(it.key())?;
            if db.icmp.compare_user(pk.user_key, key) != Ordering::Equal {
                break;
            }
            if let Some(r) = self.entry(db, key, pk.seq, pk.vtype, Val::unpinned(it.value()))? {
                return Ok(Some(r));
            }
            it.next();
        }
        it.status()?;
        Ok(None)
    }
}

/// Lookup in a memtable: the fast path when nothing can be covered, the entry walk otherwise.
#[inline]
pub(crate) fn mem_lookup<V: ValueOut>(
    db: &ColumnFamilyData,
    m: &Arc<MemTable>,
    chain: &mut Chain,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &[u8],
) -> Result<Option<Option<V>>> {
    if !m.range_dels.is_empty() {
        chain.max_tomb = chain.max_tomb.max(m.range_dels.max_covering_seq(&db.icmp, key, seq));
    }
    // Entries older than the newest covering tombstone (of this memtable or a newer source)
    // are deleted: the lookup stops at the first of them.
    use crate::memtable::MemGet;
    match m.get_ref(lookup, chain.max_tomb) {
        None => Ok(None),
        // SAFETY: `get_ref` borrows the value from the memtable's arena, which `m` owns and
        // never moves or rewrites.
        Some(MemGet::Value(v)) => chain
            .finish(db, key, Some(unsafe { Val::pinned(v, Home::Mem(m)) }))
            .map(Some),
        Some(MemGet::Deleted) => chain.finish(db, key, None).map(Some),
        Some(MemGet::Merge { operands, base }) => {
            chain.operands.extend(operands);
            match base {
                None => Ok(None),
                Some(b) => chain.finish(db, key, b.as_deref().map(Val::unpinned)).map(Some),
            }
        }
    }
}

/// A table lookup's outcome: decided (`Ok`: the value, a deletion, or continue), or a merge
/// operand found at this internal key (`Err`) whose older entries must be walked.
type Lookup<V> = std::result::Result<Option<Option<V>>, Vec<u8>>;

/// Lookup in a table file.
pub(crate) fn table_lookup<V: ValueOut>(
    db: &ColumnFamilyData,
    f: &FileMeta,
    chain: &mut Chain,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &[u8],
    ro: &crate::options::ReadOptions,
) -> Result<Option<Option<V>>> {
    let (verify, fill) = (ro.verify_checksums, ro.fill_cache);
    chain.add_tombstones(file_tombstones(db, f)?.as_deref(), &db.icmp, key, seq);
    let t = db.table_cache.get(f)?;
    // The common case decides inside the block, copying (or pinning) only the value it returns.
    let found = t.get_with(lookup, verify, fill, |ikey, value| -> Result<Lookup<V>> {
        let pk = parse_internal_key(ikey)?;
        if pk.vtype != vt::MERGE || pk.seq < chain.max_tomb {
            return Ok(Ok(chain.entry(db, key, pk.seq, pk.vtype, value)?));
        }
        Ok(Err(ikey.to_vec()))
    })?;
    match found {
        None => Ok(None),
        Some(r) => match r? {
            Ok(decided) => Ok(decided),
            Err(ikey) => {
                // A merge operand: walk the rest of the key's entries in this table.
                let mut it = t.iter(verify, fill);
                it.seek(&ikey);
                chain.scan(db, &mut it, key)
            }
        },
    }
}

/// Every tombstone list a reader at any sequence may need (memtables and files that have any).
pub(crate) fn all_tombstone_lists(
    db: &ColumnFamilyData,
    sv: &super::state::SuperVersion,
) -> Result<Vec<Arc<FragmentedRangeTombstoneList>>> {
    let mut out = Vec::new();
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if let Some(l) = m.range_dels.fragmented(&db.icmp) {
            if !l.is_empty() {
                out.push(l);
            }
        }
    }
    for (_, f) in sv.version.all_files() {
        if let Some(l) = file_tombstones(db, f)? {
            out.push(l);
        }
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------
// Compaction

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
                let next_put = entries
                    .get(i + 1)
                    .filter(|x| x.vtype == vt::VALUE && stripe(ctx.snapshots, x.seq) == s && !ctx.covered(x.seq));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::merge_operator_by_name;

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
