//! Writing table files: the output of a flush, a recovery flush or a compaction (dropping the
//! entries no reader can see, cutting outputs at grandparent boundaries).

use crate::statistics::{Histogram, StopWatch};
use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::blob_output::{BlobOutput, BlobPolicy};
use super::key_compaction::{add_clipped, catch_user, keep_of_key, output_seq, output_tombstones, KEntry, KeyCtx};
use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::compaction::output_cut::GrandparentCut;
use crate::compaction_filter::CompactionFilter;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, SequenceNumber};
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
    /// Blob files: whether large values go to them, which old ones are collected.
    pub blob: BlobPolicy,
}

/// The blob policy of outputs written to `level`: blob files as the family's options say
/// (`enable_blob_files` from `blob_file_starting_level` on), no garbage collection.
pub(crate) fn blob_policy(cf: &ColumnFamilyData, level: usize) -> BlobPolicy {
    let b = &cf.opts.blob;
    BlobPolicy {
        write: b
            .writes_blobs_at(level)
            .then_some(crate::blob::writer::BlobWriteConfig {
                min_blob_size: b.min_blob_size,
                blob_file_size: b.blob_file_size,
                compression: b.blob_compression_type,
                column_family_id: cf.id,
            }),
        relocate_below: 0,
    }
}

/// What writing tables made: the table files and the blob file changes.
pub(crate) type Built = (Vec<FileMetaData>, crate::blob::changes::BlobChanges);

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
            blob: blob_policy(cf, 0),
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
    /// The smallest blob file number the table's blob indexes point into (0: none).
    oldest_blob: u64,
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
/// `key_compaction::compact_key`), large values to blob files (`p.blob`). Returns the metadata
/// of the files written and the blob files written and garbage made (every file synced).
pub(crate) fn build_tables(db: &Arc<DbInner>, input: &mut dyn InternalIterator, p: &OutputParams) -> Result<Built> {
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
    // User-defined timestamps: history below `full_history_ts_low` collapses
    // (`ts_compaction.rs`); None for families without them.
    let ts_low = p.cf.full_history_ts_low.lock().clone();
    let mut ts_gc = super::ts_compaction::TsGc::new(&ucmp, ts_low);
    let merge_op = p.cf.opts.merge_operator.as_deref();
    let mut filter = new_compaction_filter(p)?;
    let drop_stats = db.stats.as_deref().filter(|_| p.count_drops);
    let mut blobs = BlobOutput::new(p.blob, &db.fs, &db.path, p.cf.blob_cache.clone());
    let r = (|| -> Result<()> {
        let mut cur_key: Vec<u8> = Vec::new();
        let mut entries: Vec<KEntry> = Vec::new();
        // Lower user-key bound of the current output (tombstones are clipped to it).
        let mut lower: Option<Vec<u8>> = None;
        let mut zeroed = Vec::new();
        let mut gp = GrandparentCut::new(&p.grandparents, p.max_grandparent_overlap, p.target_file_size);
        let mut emit = |key: &[u8],
                        mut entries: Vec<KEntry>,
                        cur: &mut Option<OpenOutput>,
                        lower: &mut Option<Vec<u8>>,
                        blobs: &mut BlobOutput|
         -> Result<()> {
            let mut bottom = p.bottommost && !in_deeper(key, key);
            let mut below_low = false;
            let mut newest_deletion = None;
            if let Some(g) = ts_gc.as_mut() {
                match g.start(&ucmp, key) {
                    None => return Ok(()),
                    Some(b) => below_low = b,
                }
                // Only a version at or below the low mark may lose its deletion (the older
                // versions go with it), and only if no deeper file holds any version of the key.
                bottom =
                    below_low && p.bottommost && !p.deeper_ranges.iter().any(|(lo, hi)| g.overlaps(&ucmp, key, lo, hi));
                newest_deletion = entries.first().filter(|e| e.is_deletion()).map(|e| e.seq);
            }
            blobs.resolve_for_merge(key, &mut entries)?;
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
            let keep = keep_of_key(key, entries, &ctx, filter.as_mut(), drop_stats)?;
            if let Some(g) = ts_gc.as_mut() {
                g.finish(below_low, newest_deletion, &keep, &p.snapshots);
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
                let seq = output_seq(e, &ctx);
                let mut new_number = || db.state.lock().versions.new_file_number();
                let replaced = blobs.output(key, e.vtype, &e.value, &mut new_number)?;
                let (vtype, value) = match &replaced {
                    Some((t, v)) => (*t, v.as_slice()),
                    None => (e.vtype, e.value.as_slice()),
                };
                if vtype == crate::key::vt::BLOB_INDEX {
                    if let Some(f) = blobs.changes.note_output(key, value) {
                        o.oldest_blob = if o.oldest_blob == 0 { f } else { o.oldest_blob.min(f) };
                    }
                }
                zeroed.clear();
                crate::key::append_internal_key(&mut zeroed, key, seq, vtype);
                o.builder.add(&zeroed, value)?;
                if let Some(c) = o.collector.as_mut() {
                    c.add(e.is_deletion());
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
                emit(&cur_key, std::mem::take(&mut entries), &mut cur, &mut lower, &mut blobs)?;
            }
            if entries.is_empty() {
                cur_key.clear();
                cur_key.extend_from_slice(pk.user_key);
            }
            blobs.note_input(pk.user_key, pk.vtype, input.value());
            entries.push(KEntry {
                seq: pk.seq,
                vtype: pk.vtype,
                value: input.value().to_vec(),
            });
            input.next();
        }
        input.status()?;
        if !entries.is_empty() {
            emit(&cur_key, std::mem::take(&mut entries), &mut cur, &mut lower, &mut blobs)?;
        }
        // Blob files are complete and synced before the tables (and the directory, below).
        blobs.finish()?;
        finish_last_output(db, p, &mut cur, lower.as_deref(), &tombs, &mut written, &mut outputs)
    })();
    if let Err(e) = r {
        // Remove partial outputs; they are in no version.
        drop(cur);
        for n in written {
            let _ = db.fs.remove_file(&table_name(&db.path, n));
        }
        blobs.abandon();
        blobs.changes.remove_files(&*db.fs, &db.path);
        return Err(e);
    }
    Ok((outputs, blobs.changes))
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

fn open_output(db: &Arc<DbInner>, p: &OutputParams, written: &mut Vec<u64>) -> Result<OpenOutput> {
    let number = db.state.lock().versions.new_file_number();
    written.push(number);
    let mut file = db.fs.new_writable(&table_name(&db.path, number))?;
    if db.opts.allow_mmap_writes {
        file.map_appends();
    }
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
        oldest_blob: 0,
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
        oldest_blob_file_number: o.oldest_blob,
        ..Default::default()
    })
}
