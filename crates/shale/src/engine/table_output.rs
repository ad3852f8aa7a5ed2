//! Writing table files: the output of a flush, a recovery flush or a compaction (dropping the
//! entries no reader can see, cutting outputs at grandparent boundaries).

use crate::statistics::{Histogram, StopWatch, Ticker};
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::key_compaction::{add_clipped, compact_key, output_tombstones, stripe, KEntry, KeyCtx};
use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::compaction::output_cut::GrandparentCut;
use crate::compaction_filter::CompactionFilter;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, vt, SequenceNumber};
use crate::lsm::filename::table_name;
use crate::lsm::version_edit::FileMetaData;
use crate::options::TableFactory;
use crate::range_del::FragmentedRangeTombstoneList;
use crate::table::any::AnyTableBuilder;
use crate::table::block_based::builder::{TableBuilder, TableBuilderOptions};
use crate::table::cuckoo::{CuckooTableBuilder, CuckooTableBuilderOptions};
use crate::table::format::DBCompressionType;
use crate::table::plain::{PlainTableBuilder, PlainTableBuilderOptions};

/// How output tables are written.
pub(crate) struct OutputParams {
    /// The family the tables belong to (comparator, table format, compression, properties).
    pub cf: Arc<ColumnFamilyData>,
    /// Nothing older than the inputs can exist below the output for any key in
    /// `deeper_ranges`' complement: deletions may be dropped where no deeper file overlaps.
    pub bottommost: bool,
    pub target_file_size: u64,
    pub epoch: u64,
    /// Live snapshots, ascending.
    pub snapshots: Vec<SequenceNumber>,
    /// User-key ranges of files in levels below the output level.
    pub deeper_ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// Range tombstones of the inputs, fragmented.
    pub tombstones: FragmentedRangeTombstoneList,
    /// Block compression of the output files.
    pub compression: DBCompressionType,
    /// Files of the level below the output level (user-key range and size), in key order: an
    /// output file is cut once it overlaps more than `max_grandparent_overlap` bytes of them.
    pub grandparents: Vec<(Vec<u8>, Vec<u8>, u64)>,
    pub max_grandparent_overlap: u64,
    /// The compaction filter to run (None for flushes and families without one).
    pub filter: Option<FilterSpec>,
    /// A compaction (not a flush): the entries it drops are counted in the statistics'
    /// `rocksdb.compaction.key.drop.*`, as RocksDB's compaction job counts them.
    pub count_drops: bool,
    /// The outputs' oldest ancestor time (seconds; 0 = now): a compaction passes its inputs'
    /// oldest, written as the MANIFEST's `oldest_ancester_time` and the table's
    /// `rocksdb.creation.time`, as RocksDB does.
    pub ancestor_time: u64,
}

/// A compaction's filter: each `build_tables` (each subcompaction) creates its own instance.
#[derive(Clone)]
pub(crate) struct FilterSpec {
    pub source: Arc<dyn crate::options::filter_source::FilterSource>,
    pub context: crate::compaction_filter_factory::CompactionFilterContext,
    /// The level of the compaction's inputs (passed to the filter).
    pub level: u32,
}

impl OutputParams {
    /// Parameters of a flush or a recovery flush: one L0 file, no grandparents.
    pub(crate) fn for_l0(
        cf: &Arc<ColumnFamilyData>,
        epoch: u64,
        snapshots: Vec<SequenceNumber>,
        tombstones: FragmentedRangeTombstoneList,
    ) -> OutputParams {
        OutputParams {
            cf: cf.clone(),
            bottommost: false,
            target_file_size: u64::MAX,
            epoch,
            snapshots,
            deeper_ranges: Vec::new(),
            tombstones,
            compression: cf.opts.compression_for_level(0, 1, false),
            grandparents: Vec::new(),
            max_grandparent_overlap: u64::MAX,
            filter: None,
            count_drops: false,
            ancestor_time: 0,
        }
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(crate) fn table_options(
    db: &DbInner,
    cf: &ColumnFamilyData,
    file_number: u64,
    compression: DBCompressionType,
    creation_time: u64,
) -> TableBuilderOptions {
    TableBuilderOptions {
        icmp: cf.icmp.clone(),
        block_size: cf.opts.block_size,
        block_restart_interval: cf.opts.block_restart_interval,
        format_version: cf.opts.format_version,
        checksum: cf.opts.checksum_type,
        compression,
        bloom_bits_per_key: cf.opts.bloom_bits_per_key,
        filter_contents: cf.opts.filter_contents(),
        column_family_name: cf.name.clone(),
        column_family_id: Some(cf.id),
        db_id: db.db_id.clone(),
        db_session_id: db.session_id.clone(),
        file_number,
        creation_time,
        merge_operator_name: cf.opts.merge_operator.as_ref().map(|m| m.name().to_string()),
        external: false,
        index_layout: cf.opts.index_layout.clone(),
    }
}

struct OpenOutput {
    builder: AnyTableBuilder,
    number: u64,
    /// `rocksdb.creation.time` of the table (its oldest ancestor time).
    creation_time: u64,
    collector: Option<crate::options::compaction::DeletionCollector>,
}

/// A builder for a new table file in the format `Options::table_factory` names.
pub(crate) fn new_table_builder(
    db: &DbInner,
    cf: &ColumnFamilyData,
    number: u64,
    compression: DBCompressionType,
    file: Box<dyn crate::fs::WritableFile>,
    creation_time: u64,
) -> AnyTableBuilder {
    match &cf.opts.table_factory {
        TableFactory::BlockBased => AnyTableBuilder::Block(TableBuilder::new(
            table_options(db, cf, number, compression, creation_time),
            file,
        )),
        TableFactory::Plain(p) => AnyTableBuilder::Plain(PlainTableBuilder::new(
            PlainTableBuilderOptions {
                icmp: cf.icmp.clone(),
                plain: p.clone(),
                prefix_extractor: cf.opts.prefix_extractor.clone(),
                column_family_name: cf.name.clone(),
                column_family_id: Some(cf.id),
                db_id: db.db_id.clone(),
                db_session_id: db.session_id.clone(),
                file_number: number,
                creation_time,
                ..Default::default()
            },
            file,
        )),
        TableFactory::Cuckoo(c) => AnyTableBuilder::Cuckoo(CuckooTableBuilder::new(
            CuckooTableBuilderOptions {
                icmp: cf.icmp.clone(),
                column_family_name: cf.name.clone(),
                column_family_id: Some(cf.id),
                table: c.clone(),
                db_id: db.db_id.clone(),
                db_session_id: db.session_id.clone(),
                file_number: number,
                creation_time,
            },
            file,
        )),
    }
}

/// Write the entries of `input` (in internal-key order) and the range tombstones of
/// `p.tombstones` to new table files, dropping entries no reader can see (per-key rules in
/// `key_compaction::compact_key`). Returns the metadata of the files written (synced).
pub(crate) fn build_tables(
    db: &Arc<DbInner>,
    input: &mut dyn InternalIterator,
    p: &OutputParams,
) -> Result<Vec<FileMetaData>> {
    let mut outputs: Vec<FileMetaData> = Vec::new();
    let mut cur: Option<OpenOutput> = None;
    let mut written: Vec<u64> = Vec::new();
    let ucmp = p.cf.icmp.clone();
    let in_deeper = |lo_k: &[u8], hi_k: &[u8]| {
        p.deeper_ranges.iter().any(|(lo, hi)| {
            ucmp.compare_user(lo_k, hi) != Ordering::Greater && ucmp.compare_user(lo, hi_k) != Ordering::Greater
        })
    };
    let tombs = tombstones_to_write(p);
    let merge_op = p.cf.opts.merge_operator.as_deref();
    let mut filter = new_compaction_filter(p)?;
    let drop_stats = db.stats.as_deref().filter(|_| p.count_drops);
    let r = (|| -> Result<()> {
        let mut cur_key: Vec<u8> = Vec::new();
        let mut entries: Vec<KEntry> = Vec::new();
        // Lower user-key bound of the current output (tombstones are clipped to it).
        let mut lower: Option<Vec<u8>> = None;
        let mut zeroed = Vec::new();
        let mut gp = GrandparentCut::new(&p.grandparents, p.max_grandparent_overlap, p.target_file_size);
        let mut emit = |key: &[u8],
                        entries: Vec<KEntry>,
                        cur: &mut Option<OpenOutput>,
                        lower: &mut Option<Vec<u8>>|
         -> Result<()> {
            let bottom = p.bottommost && !in_deeper(key, key);
            let tomb_seqs: &[SequenceNumber] = match p.tombstones.fragment_for(&ucmp, key) {
                Some(f) => &f.seqs,
                None => &[],
            };
            let ctx = KeyCtx {
                snapshots: &p.snapshots,
                merge_op,
                bottom,
                tomb_seqs,
            };
            let newest = entries.first().map(|e| (e.seq, e.vtype));
            let mut keep = if entries.len() == 1 && tomb_seqs.is_empty() && entries[0].vtype == vt::VALUE {
                entries
            } else {
                let drops = drop_stats.is_some().then(|| KeyDrops::classify(&entries, &ctx));
                let keep = compact_key(key, entries, &ctx)?;
                if let (Some(s), Some(d)) = (drop_stats, drops) {
                    d.record(s, keep.len());
                }
                keep
            };
            if let Some((f, level)) = filter.as_mut() {
                let before = keep.len();
                apply_filter(f.as_mut(), *level, key, newest, &mut keep, &p.snapshots, bottom)?;
                if let Some(s) = drop_stats {
                    s.tick(Ticker::CompactionKeyDropUser, before.saturating_sub(keep.len()) as u64);
                }
            }
            if keep.is_empty() {
                return Ok(());
            }
            // Cut the output (only between user keys) where `GrandparentCut` says.
            let cur_size = cur.as_ref().map(|o| o.builder.file_size_estimate());
            let cut = gp.should_cut(&ucmp, key, cur_size);
            if let Some(o) = cur.as_mut() {
                if cut {
                    add_clipped(&mut o.builder, &ucmp, &tombs, lower.as_deref(), Some(key))?;
                    let o = cur.take().ok_or_else(|| Error::corrupt("no output"))?;
                    outputs.push(finish_output(o, p, &db.stats)?);
                    *lower = Some(key.to_vec());
                }
            }
            if cur.is_none() {
                *cur = Some(open_output(db, p, &mut written)?);
            }
            let o = cur.as_mut().ok_or_else(|| Error::corrupt("no output"))?;
            for e in &keep {
                // At the bottom, the newest visible value of the oldest stripe gets sequence 0,
                // as RocksDB does (better compression, and the key can never be shadowed) —
                // unless a range tombstone covers the key: kept in this output because it
                // overlaps a deeper file elsewhere, it would then hide the newer value
                // (`stress_regressions::zeroed_key_under_kept_range_tombstone`).
                let seq = if bottom && tomb_seqs.is_empty() && e.vtype == vt::VALUE && stripe(&p.snapshots, e.seq) == 0
                {
                    0
                } else {
                    e.seq
                };
                zeroed.clear();
                crate::key::append_internal_key(&mut zeroed, key, seq, e.vtype);
                o.builder.add(&zeroed, &e.value)?;
                if let Some(c) = o.collector.as_mut() {
                    c.add(e.vtype == vt::DELETION || e.vtype == vt::SINGLE_DELETION);
                }
            }
            Ok(())
        };
        input.seek_to_first();
        while input.valid() {
            if db.shutting_down.load(AtOrd::Acquire) {
                return Err(Error::Busy("shutdown in progress".into()));
            }
            let pk = parse_internal_key(input.key())?;
            if !entries.is_empty() && ucmp.compare_user(pk.user_key, &cur_key) != Ordering::Equal {
                emit(&cur_key, std::mem::take(&mut entries), &mut cur, &mut lower)?;
            }
            if entries.is_empty() {
                cur_key.clear();
                cur_key.extend_from_slice(pk.user_key);
            }
            entries.push(KEntry {
                seq: pk.seq,
                vtype: pk.vtype,
                value: input.value().to_vec(),
            });
            input.next();
        }
        input.status()?;
        if !entries.is_empty() {
            emit(&cur_key, std::mem::take(&mut entries), &mut cur, &mut lower)?;
        }
        finish_last_output(db, p, &mut cur, lower.as_deref(), &tombs, &mut written, &mut outputs)
    })();
    if let Err(e) = r {
        // Remove partial outputs; they are in no version.
        drop(cur);
        for n in written {
            let _ = db.fs.remove_file(&table_name(&db.path, n));
        }
        return Err(e);
    }
    Ok(outputs)
}

/// The range tombstones the outputs hold (`output_tombstones`): nothing older exists under a
/// tombstone when the output is bottommost and no deeper file overlaps it.
fn tombstones_to_write(p: &OutputParams) -> FragmentedRangeTombstoneList {
    let ucmp = &p.cf.icmp;
    output_tombstones(&p.tombstones, &p.snapshots, |s, e| {
        p.bottommost
            && !p.deeper_ranges.iter().any(|(lo, hi)| {
                ucmp.compare_user(s, hi) != Ordering::Greater && ucmp.compare_user(lo, e) == Ordering::Less
            })
    })
}

/// This build's instance of the compaction's filter (None without one), with the inputs' level.
fn new_compaction_filter(p: &OutputParams) -> Result<Option<(Box<dyn CompactionFilter>, u32)>> {
    match &p.filter {
        Some(f) => Ok(Some((
            catch_user("compaction filter factory", || f.source.create(f.context))?,
            f.level,
        ))),
        None => Ok(None),
    }
}

/// After the last key: the last output `cur` gets the range tombstones `tombs` from its lower
/// bound `lower` on (an output is opened for them when no key was written) and is finished;
/// then the directory is synced if any file was written.
fn finish_last_output(
    db: &Arc<DbInner>,
    p: &OutputParams,
    cur: &mut Option<OpenOutput>,
    lower: Option<&[u8]>,
    tombs: &FragmentedRangeTombstoneList,
    written: &mut Vec<u64>,
    outputs: &mut Vec<FileMetaData>,
) -> Result<()> {
    if cur.is_none() && !tombs.is_empty() {
        *cur = Some(open_output(db, p, written)?);
    }
    if let Some(mut o) = cur.take() {
        add_clipped(&mut o.builder, &p.cf.icmp, tombs, lower, None)?;
        outputs.push(finish_output(o, p, &db.stats)?);
    }
    if !outputs.is_empty() {
        // The new files' directory entries must be durable before a MANIFEST names them.
        db.fs.sync_dir(&db.path)?;
    }
    Ok(())
}

/// Run a user callback, turning a panic into an error.
fn catch_user<T>(context: &str, f: impl FnOnce() -> T) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| Error::from_panic(context, p))
}

/// Apply a compaction filter to the compacted entries of `key` (newest first), as RocksDB's
/// compaction iterator: the filter sees the key's newest input entry only if it is a Put that
/// survived (not covered by a range tombstone) and is newer than every live snapshot, so no
/// snapshot can observe the decision. `Remove` turns it into a deletion, dropped when nothing
/// older is kept and nothing older exists below (`bottom`); `Change` replaces the value.
fn apply_filter(
    filter: &mut dyn crate::compaction_filter::CompactionFilter,
    level: u32,
    key: &[u8],
    newest: Option<(SequenceNumber, u8)>,
    keep: &mut Vec<KEntry>,
    snapshots: &[SequenceNumber],
    bottom: bool,
) -> Result<()> {
    use crate::compaction_filter::Decision;
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

fn open_output(db: &Arc<DbInner>, p: &OutputParams, written: &mut Vec<u64>) -> Result<OpenOutput> {
    let number = db.state.lock().versions.new_file_number();
    written.push(number);
    let file = db.fs.new_writable(&table_name(&db.path, number))?;
    let creation_time = if p.ancestor_time == 0 {
        now_secs()
    } else {
        p.ancestor_time
    };
    let builder = new_table_builder(db, &p.cf, number, p.compression, file, creation_time);
    let collector =
        p.cf.opts
            .compact_on_deletion
            .as_ref()
            .map(crate::options::compaction::DeletionCollector::new);
    Ok(OpenOutput {
        builder,
        number,
        creation_time,
        collector,
    })
}

fn finish_output(o: OpenOutput, p: &OutputParams, stats: &crate::statistics::Stats) -> Result<FileMetaData> {
    let epoch = p.epoch;
    let marked = o.collector.as_ref().is_some_and(|c| c.finish());
    let (info, mut file) = o.builder.finish()?;
    {
        // RocksDB: a flush's table sync in `table.sync.micros`, a compaction output's in
        // `compaction.outfile.sync.micros`
        let hist = if p.count_drops {
            Histogram::CompactionOutfileSyncMicros
        } else {
            Histogram::TableSyncMicros
        };
        let _watch = StopWatch::start(stats, hist);
        file.sync()?;
    }
    drop(file);
    let now = now_secs();
    Ok(FileMetaData {
        number: o.number,
        file_size: info.file_size,
        smallest: info.smallest,
        largest: info.largest,
        smallest_seqno: info.smallest_seqno,
        largest_seqno: info.largest_seqno,
        oldest_ancester_time: o.creation_time,
        file_creation_time: now,
        epoch_number: epoch,
        marked_for_compaction: marked,
        ..Default::default()
    })
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
            } else if ctx.bottom
                && matches!(
                    e.vtype,
                    vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP
                )
                && stripe(ctx.snapshots, e.seq) == 0
            {
                d.obsolete += 1;
            }
        }
        d
    }

    fn record(&self, s: &crate::statistics::Statistics, kept: usize) {
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
    use crate::compaction_filter::{CompactionFilter, Decision};

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
