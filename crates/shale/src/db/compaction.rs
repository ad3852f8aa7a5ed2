//! Leveled compaction: a pure picker over a version, the job that merges input files into new
//! table files (dropping versions no snapshot can see), and manual `compact_range`.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::MutexGuard;

use super::filename::table_name;
use super::range_del::{add_clipped, compact_key, file_tombstones, output_tombstones, stripe, KEntry, KeyCtx};
use super::version::{FileMeta, Version};
use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, vt, InternalKeyComparator, SequenceNumber};
use crate::options::CompactionPri;
use crate::options::CompressionType;
use crate::options::TableFactory;
use crate::range_del::FragmentedRangeTombstoneList;
use crate::table::any::AnyTableBuilder;
use crate::table::cuckoo::{CuckooTableBuilder, CuckooTableBuilderOptions};
use crate::table::plain::{PlainTableBuilder, PlainTableBuilderOptions};
use crate::table::{TableBuilder, TableBuilderOptions};
use crate::version_edit::{FileMetaData, VersionEdit};

pub(crate) use super::level_targets::PickerConfig;
use super::level_targets::{compute_scores, compute_targets, max_grandparent_overlap, target_file_size, LevelTargets};
use super::subcompaction::run_subcompactions;

/// A chosen compaction.
#[derive(Clone)]
pub(crate) struct Pick {
    pub level: usize,
    pub output_level: usize,
    pub inputs: Vec<Arc<FileMeta>>,
    pub next_inputs: Vec<Arc<FileMeta>>,
    /// The score of the level when picked (checked by the picker tests).
    #[allow(dead_code)]
    pub score: f64,
    /// The level L0 compacts into when this was picked (sizes output files, compression).
    pub base_level: usize,
}

impl Pick {
    /// A move of one file to the next level without rewriting it.
    pub(crate) fn is_trivial_move(&self) -> bool {
        self.inputs.len() == 1 && self.next_inputs.is_empty()
    }
    pub(crate) fn all_inputs(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.inputs.iter().chain(self.next_inputs.iter())
    }
    /// User-key range of everything this compaction reads (and so may write).
    pub(crate) fn key_range(&self, icmp: &InternalKeyComparator) -> Option<(Vec<u8>, Vec<u8>)> {
        let all: Vec<Arc<FileMeta>> = self.all_inputs().cloned().collect();
        user_range(&all, icmp)
    }
}

/// The output level and key range of a compaction in progress: another compaction into the
/// same level must not write into this range (its outputs would overlap).
#[derive(Clone, Debug)]
pub(crate) struct RunningRange {
    pub output_level: usize,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// Compaction score of each level (RocksDB's `ComputeCompactionScore`; the last level is 0).
pub(crate) fn level_scores(v: &Version, cfg: &PickerConfig) -> Vec<f64> {
    compute_scores(v, cfg, &compute_targets(v, cfg), &HashSet::new())
}

fn user_range(files: &[Arc<FileMeta>], icmp: &InternalKeyComparator) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = None;
    let mut hi: Option<&[u8]> = None;
    for f in files {
        let s = f.smallest_user();
        let l = f.largest_user();
        if lo.map(|x| icmp.compare_user(s, x) == Ordering::Less).unwrap_or(true) {
            lo = Some(s);
        }
        if hi.map(|x| icmp.compare_user(l, x) == Ordering::Greater).unwrap_or(true) {
            hi = Some(l);
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// Pick the next compaction: a pure function of the version, the files already being compacted,
/// the compactions running (their output ranges) and the per-level cursors. Returns `None` when
/// no level needs compaction.
pub(crate) fn pick_compaction(
    v: &Version,
    cfg: &PickerConfig,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    let targets = compute_targets(v, cfg);
    let scores = compute_scores(v, cfg, &targets, busy);
    let mut order: Vec<usize> = (0..scores.len()).filter(|&l| scores[l] >= 1.0).collect();
    order.sort_by(|a, b| scores[*b].partial_cmp(&scores[*a]).unwrap_or(Ordering::Equal));
    for level in order {
        if let Some(p) = pick_at_level(v, &targets, cfg.pri, level, busy, running, cursors) {
            return Some(Pick {
                score: scores[level],
                ..p
            });
        }
    }
    None
}

/// True when writing `[lo, hi]` into `level` could overlap the output of a running compaction.
fn conflicts(running: &[RunningRange], level: usize, lo: &[u8], hi: &[u8], icmp: &InternalKeyComparator) -> bool {
    running.iter().any(|r| {
        r.output_level == level
            && icmp.compare_user(lo, &r.largest) != Ordering::Greater
            && icmp.compare_user(&r.smallest, hi) != Ordering::Greater
    })
}

fn pick_at_level(
    v: &Version,
    targets: &LevelTargets,
    pri: CompactionPri,
    level: usize,
    busy: &HashSet<u64>,
    running: &[RunningRange],
    cursors: &[Vec<u8>],
) -> Option<Pick> {
    let icmp = &v.icmp;
    let output_level = if level == 0 { targets.base_level } else { level + 1 };
    if output_level >= v.num_levels() || output_level <= level {
        return None;
    }
    let base_level = targets.base_level;
    let is_busy = |fs: &[Arc<FileMeta>]| fs.iter().any(|f| busy.contains(&f.number()));
    let range_of = |inputs: &[Arc<FileMeta>], next: &[Arc<FileMeta>]| {
        let all: Vec<Arc<FileMeta>> = inputs.iter().chain(next.iter()).cloned().collect();
        user_range(&all, icmp)
    };
    if level == 0 {
        let inputs: Vec<Arc<FileMeta>> = v.files[0].clone();
        if inputs.is_empty() || is_busy(&inputs) {
            return None;
        }
        let (lo, hi) = user_range(&inputs, icmp)?;
        let next = v.overlapping(output_level, Some(&lo), Some(&hi));
        if is_busy(&next) {
            return None;
        }
        let (lo, hi) = range_of(&inputs, &next)?;
        if conflicts(running, output_level, &lo, &hi, icmp) {
            return None;
        }
        return Some(Pick {
            level,
            output_level,
            inputs,
            next_inputs: next,
            score: 0.0,
            base_level,
        });
    }
    let files = &v.files[level];
    if files.is_empty() {
        return None;
    }
    let order: Vec<usize> = match pri {
        CompactionPri::RoundRobin => {
            // Start after the cursor of this level.
            let cursor = cursors.get(level).map(|c| c.as_slice()).unwrap_or(&[]);
            let start = if cursor.is_empty() {
                0
            } else {
                files.partition_point(|f| icmp.compare(&f.meta.largest, cursor) != Ordering::Greater)
            };
            (0..files.len()).map(|i| (start + i) % files.len()).collect()
        }
        CompactionPri::MinOverlappingRatio => {
            // Bytes the next level would rewrite per byte moved down, scaled as RocksDB does.
            let mut by_ratio: Vec<(u128, usize)> = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let overlap: u64 = v
                        .overlapping(output_level, Some(f.smallest_user()), Some(f.largest_user()))
                        .iter()
                        .map(|o| o.meta.file_size)
                        .sum();
                    (overlap as u128 * 1024 / f.meta.file_size.max(1) as u128, i)
                })
                .collect();
            by_ratio.sort_unstable();
            by_ratio.into_iter().map(|(_, i)| i).collect()
        }
    };
    for i in order {
        let f = &files[i];
        if busy.contains(&f.number()) {
            continue;
        }
        let next = v.overlapping(output_level, Some(f.smallest_user()), Some(f.largest_user()));
        if is_busy(&next) {
            continue;
        }
        let inputs = vec![f.clone()];
        let (lo, hi) = range_of(&inputs, &next)?;
        if conflicts(running, output_level, &lo, &hi, icmp) {
            continue;
        }
        return Some(Pick {
            level,
            output_level,
            inputs,
            next_inputs: next,
            score: 0.0,
            base_level,
        });
    }
    None
}

/// How output tables are written.
pub(crate) struct OutputParams {
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
    pub compression: CompressionType,
    /// Files of the level below the output level (user-key range and size), in key order: an
    /// output file is cut once it overlaps more than `max_grandparent_overlap` bytes of them.
    pub grandparents: Vec<(Vec<u8>, Vec<u8>, u64)>,
    pub max_grandparent_overlap: u64,
}

impl OutputParams {
    /// Parameters of a flush or a recovery flush: one L0 file, no grandparents.
    pub(crate) fn for_l0(
        db: &DbInner,
        epoch: u64,
        snapshots: Vec<SequenceNumber>,
        tombstones: FragmentedRangeTombstoneList,
    ) -> OutputParams {
        OutputParams {
            bottommost: false,
            target_file_size: u64::MAX,
            epoch,
            snapshots,
            deeper_ranges: Vec::new(),
            tombstones,
            compression: db.opts.compression_for_level(0, 1, false),
            grandparents: Vec::new(),
            max_grandparent_overlap: u64::MAX,
        }
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub(crate) fn table_options(db: &DbInner, file_number: u64, compression: CompressionType) -> TableBuilderOptions {
    TableBuilderOptions {
        icmp: db.icmp.clone(),
        block_size: db.opts.block_size,
        block_restart_interval: db.opts.block_restart_interval,
        format_version: db.opts.format_version,
        checksum: db.opts.checksum_type,
        compression,
        bloom_bits_per_key: db.opts.bloom_bits_per_key,
        column_family_name: "default".to_string(),
        db_id: db.db_id.clone(),
        db_session_id: db.session_id.clone(),
        file_number,
        creation_time: now_secs(),
        merge_operator_name: db.opts.merge_operator.as_ref().map(|m| m.name().to_string()),
    }
}

struct OpenOutput {
    builder: AnyTableBuilder,
    number: u64,
}

/// A builder for a new table file in the format `Options::table_factory` names.
pub(crate) fn new_table_builder(
    db: &DbInner,
    number: u64,
    compression: CompressionType,
    file: Box<dyn crate::fs::WritableFile>,
) -> AnyTableBuilder {
    match &db.opts.table_factory {
        TableFactory::BlockBased => {
            AnyTableBuilder::Block(TableBuilder::new(table_options(db, number, compression), file))
        }
        TableFactory::Plain(p) => AnyTableBuilder::Plain(PlainTableBuilder::new(
            PlainTableBuilderOptions {
                icmp: db.icmp.clone(),
                plain: p.clone(),
                prefix_extractor: db.opts.prefix_extractor.clone(),
                db_id: db.db_id.clone(),
                db_session_id: db.session_id.clone(),
                file_number: number,
                ..Default::default()
            },
            file,
        )),
        TableFactory::Cuckoo(c) => AnyTableBuilder::Cuckoo(CuckooTableBuilder::new(
            CuckooTableBuilderOptions {
                icmp: db.icmp.clone(),
                table: c.clone(),
                db_id: db.db_id.clone(),
                db_session_id: db.session_id.clone(),
                file_number: number,
                ..Default::default()
            },
            file,
        )),
    }
}

/// Write the entries of `input` (in internal-key order) and the range tombstones of
/// `p.tombstones` to new table files, dropping entries no reader can see (per-key rules in
/// `range_del::compact_key`). Returns the metadata of the files written (synced).
pub(crate) fn build_tables(
    db: &Arc<DbInner>,
    input: &mut dyn InternalIterator,
    p: &OutputParams,
) -> Result<Vec<FileMetaData>> {
    let mut outputs: Vec<FileMetaData> = Vec::new();
    let mut cur: Option<OpenOutput> = None;
    let mut written: Vec<u64> = Vec::new();
    let ucmp = db.icmp.clone();
    let in_deeper = |lo_k: &[u8], hi_k: &[u8]| {
        p.deeper_ranges.iter().any(|(lo, hi)| {
            ucmp.compare_user(lo_k, hi) != Ordering::Greater && ucmp.compare_user(lo, hi_k) != Ordering::Greater
        })
    };
    let tombs = output_tombstones(&p.tombstones, &p.snapshots, |s, e| {
        p.bottommost
            && !p.deeper_ranges.iter().any(|(lo, hi)| {
                ucmp.compare_user(s, hi) != Ordering::Greater && ucmp.compare_user(lo, e) == Ordering::Less
            })
    });
    let merge_op = db.opts.merge_operator.as_deref();
    let r = (|| -> Result<()> {
        let mut cur_key: Vec<u8> = Vec::new();
        let mut entries: Vec<KEntry> = Vec::new();
        // Lower user-key bound of the current output (tombstones are clipped to it).
        let mut lower: Option<Vec<u8>> = None;
        let mut zeroed = Vec::new();
        let mut gp = GrandparentCut::new(&p.grandparents, p.max_grandparent_overlap);
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
            let keep = if entries.len() == 1 && tomb_seqs.is_empty() && entries[0].vtype == vt::VALUE {
                entries
            } else {
                compact_key(key, entries, &ctx)?
            };
            if keep.is_empty() {
                return Ok(());
            }
            let gp_cut = gp.should_cut(&ucmp, key);
            // Cut the output at the target size or the grandparent overlap, only between user keys.
            if let Some(o) = cur.as_mut() {
                if gp_cut || o.builder.file_size_estimate() >= p.target_file_size {
                    add_clipped(&mut o.builder, &ucmp, &tombs, lower.as_deref(), Some(key))?;
                    let o = cur.take().ok_or_else(|| Error::corrupt("no output"))?;
                    outputs.push(finish_output(o, p.epoch)?);
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
        if cur.is_none() && !tombs.is_empty() {
            cur = Some(open_output(db, p, &mut written)?);
        }
        if let Some(mut o) = cur.take() {
            add_clipped(&mut o.builder, &ucmp, &tombs, lower.as_deref(), None)?;
            outputs.push(finish_output(o, p.epoch)?);
        }
        if !outputs.is_empty() {
            // The new files' directory entries must be durable before a MANIFEST names them.
            db.fs.sync_dir(&db.path)?;
        }
        Ok(())
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

/// Cuts an output file once it overlaps too many bytes of the level below the output level
/// (LevelDB's / RocksDB's `ShouldStopBefore`), so that a later compaction of that file does not
/// have to rewrite too much of the next level.
pub(crate) struct GrandparentCut<'a> {
    /// (smallest user key, largest user key, size) of each grandparent file, in key order.
    files: &'a [(Vec<u8>, Vec<u8>, u64)],
    max: u64,
    idx: usize,
    overlap: u64,
    seen_key: bool,
}

impl<'a> GrandparentCut<'a> {
    pub(crate) fn new(files: &'a [(Vec<u8>, Vec<u8>, u64)], max: u64) -> Self {
        GrandparentCut {
            files,
            max,
            idx: 0,
            overlap: 0,
            seen_key: false,
        }
    }
    /// Called with each output user key in order: true if the output should be cut before it.
    pub(crate) fn should_cut(&mut self, icmp: &InternalKeyComparator, key: &[u8]) -> bool {
        while self.idx < self.files.len() && icmp.compare_user(key, &self.files[self.idx].1) == Ordering::Greater {
            if self.seen_key {
                self.overlap += self.files[self.idx].2;
            }
            self.idx += 1;
        }
        self.seen_key = true;
        if self.overlap > self.max {
            self.overlap = 0;
            return true;
        }
        false
    }
}

fn open_output(db: &Arc<DbInner>, p: &OutputParams, written: &mut Vec<u64>) -> Result<OpenOutput> {
    let number = db.state.lock().versions.new_file_number();
    written.push(number);
    let file = db.fs.new_writable(&table_name(&db.path, number))?;
    let builder = new_table_builder(db, number, p.compression, file);
    Ok(OpenOutput { builder, number })
}

fn finish_output(o: OpenOutput, epoch: u64) -> Result<FileMetaData> {
    let (info, mut file) = o.builder.finish()?;
    file.sync()?;
    drop(file);
    let now = now_secs();
    Ok(FileMetaData {
        number: o.number,
        file_size: info.file_size,
        smallest: info.smallest,
        largest: info.largest,
        smallest_seqno: info.smallest_seqno,
        largest_seqno: info.largest_seqno,
        oldest_ancester_time: now,
        file_creation_time: now,
        epoch_number: epoch,
        ..Default::default()
    })
}

/// Run one picked compaction. Called by a background thread holding the DB mutex; the mutex is
/// released while files are merged.
/// `allow_move`: a single input with no overlap below may be moved without rewriting.
pub(crate) fn run_compaction(
    db: &Arc<DbInner>,
    st: &mut MutexGuard<'_, DbState>,
    pick: Pick,
    allow_move: bool,
) -> Result<()> {
    let start = Instant::now();
    for f in pick.all_inputs() {
        st.being_compacted.insert(f.number());
    }
    let range = pick.key_range(&db.icmp).map(|(smallest, largest)| RunningRange {
        output_level: pick.output_level,
        smallest,
        largest,
    });
    let id = st.next_compaction_id;
    st.next_compaction_id += 1;
    if let Some(r) = range {
        st.running_compactions.push((id, r));
    }
    st.compactions_running += 1;
    let r = run_compaction_inner(db, st, &pick, start, allow_move);
    st.compactions_running -= 1;
    st.running_compactions.retain(|(i, _)| *i != id);
    for f in pick.all_inputs() {
        st.being_compacted.remove(&f.number());
    }
    r
}

fn run_compaction_inner(
    db: &Arc<DbInner>,
    st: &mut MutexGuard<'_, DbState>,
    pick: &Pick,
    start: Instant,
    allow_move: bool,
) -> Result<()> {
    let version = st.versions.current.clone();
    if allow_move && pick.is_trivial_move() {
        let f = &pick.inputs[0];
        let mut edit = VersionEdit::default();
        edit.deleted_files.push((pick.level as u32, f.number()));
        edit.new_files.push((pick.output_level as u32, f.meta.clone()));
        let last = db.last_seq.load(AtOrd::Acquire);
        st.versions.log_and_apply(&mut edit, last, db.opts.paranoid_checks)?;
        if let Some(c) = st.versions.compact_cursor.get_mut(pick.level) {
            *c = f.meta.largest.clone();
        }
        db.install_super_version(st);
        st.stats.record_move(pick.output_level, f.meta.file_size);
        return Ok(());
    }
    let mut deeper_ranges = Vec::new();
    for level in pick.output_level + 1..version.num_levels() {
        for f in &version.files[level] {
            deeper_ranges.push((f.smallest_user().to_vec(), f.largest_user().to_vec()));
        }
    }
    let grandparents = match pick.key_range(&db.icmp) {
        Some((lo, hi)) if pick.output_level + 1 < version.num_levels() => version
            .overlapping(pick.output_level + 1, Some(&lo), Some(&hi))
            .iter()
            .map(|f| (f.smallest_user().to_vec(), f.largest_user().to_vec(), f.meta.file_size))
            .collect(),
        _ => Vec::new(),
    };
    let cfg = picker_config(db);
    let epoch = pick.all_inputs().map(|f| f.meta.epoch_number).min().unwrap_or(0);
    let mut raw_tombs = Vec::new();
    for f in pick.all_inputs() {
        if let Some(l) = file_tombstones(db, f)? {
            raw_tombs.extend(l.tombstones());
        }
    }
    let is_bottom_level = deeper_ranges.is_empty();
    let params = OutputParams {
        tombstones: FragmentedRangeTombstoneList::new(&db.icmp, raw_tombs),
        bottommost: true,
        target_file_size: target_file_size(&cfg, pick.base_level, pick.output_level),
        epoch,
        snapshots: db.snapshot_list(),
        deeper_ranges,
        compression: db
            .opts
            .compression_for_level(pick.output_level, pick.base_level, is_bottom_level),
        grandparents,
        max_grandparent_overlap: max_grandparent_overlap(&cfg),
    };
    let rn_bytes: u64 = pick.inputs.iter().map(|f| f.meta.file_size).sum();
    let rnp1_bytes: u64 = pick.next_inputs.iter().map(|f| f.meta.file_size).sum();
    let max_subs = db.opts.max_subcompactions;
    let outputs = parking_lot::MutexGuard::unlocked(st, || -> Result<Vec<FileMetaData>> {
        run_subcompactions(db, pick, &params, max_subs)
    })?;
    let mut edit = VersionEdit::default();
    for f in &pick.inputs {
        edit.deleted_files.push((pick.level as u32, f.number()));
    }
    for f in &pick.next_inputs {
        edit.deleted_files.push((pick.output_level as u32, f.number()));
    }
    let mut out_bytes = 0;
    for f in &outputs {
        out_bytes += f.file_size;
        edit.new_files.push((pick.output_level as u32, f.clone()));
    }
    let last = db.last_seq.load(AtOrd::Acquire);
    if let Err(e) = st.versions.log_and_apply(&mut edit, last, db.opts.paranoid_checks) {
        // The outputs stay: the edit naming them may have reached the disk before the failure
        // (an unsynced or torn record can still be read back after a crash). If it did not,
        // they are unreferenced and removed at the next open. A failed MANIFEST write is a hard error whatever its cause (even ENOSPC): the
        // MANIFEST may end in a torn record.
        if st.bg_error.is_none() && !db.shutting_down.load(AtOrd::Acquire) {
            st.bg_error = Some(e.clone());
        }
        return Err(e);
    }
    if pick.level > 0 {
        if let Some(last_in) = pick.inputs.last() {
            if let Some(c) = st.versions.compact_cursor.get_mut(pick.level) {
                *c = last_in.meta.largest.clone();
            }
        }
    }
    db.install_super_version(st);
    st.stats.record_compaction(
        pick.output_level,
        rn_bytes,
        rnp1_bytes,
        out_bytes,
        outputs.len(),
        start.elapsed(),
    );
    Ok(())
}

pub(crate) fn picker_config(db: &DbInner) -> PickerConfig {
    PickerConfig::from_options(&db.opts)
}

/// Manual compaction of `[begin, end]` down to the bottom-most non-empty level (with dynamic
/// level bytes: L0 into the base level, then level by level down; the levels above the base level
/// stay empty).
pub(crate) fn compact_range(db: &Arc<DbInner>, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported(
            "compact_range on a database opened read-only".into(),
        ));
    }
    super::flush::flush_and_wait(db)?;
    let mut st = db.state.lock();
    st.manual_compactions += 1;
    let r = (|| -> Result<()> {
        // Wait for running automatic compactions to finish so inputs are stable.
        while st.compactions_running > 0 {
            DbInner::check_bg_error(&st)?;
            db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
        }
        let v = st.versions.current.clone();
        let cfg = picker_config(db);
        let targets = compute_targets(&v, &cfg);
        let mut bottom = 0;
        for l in 0..v.num_levels() {
            if v.num_files(l) > 0 {
                bottom = l;
            }
        }
        let last = if cfg.dynamic && bottom == 0 {
            v.num_levels() - 1
        } else {
            bottom.max(1).min(v.num_levels() - 1)
        };
        let mut level = 0;
        while level < last {
            let output_level = if level == 0 && cfg.dynamic {
                targets.base_level.min(last)
            } else {
                level + 1
            };
            let v = st.versions.current.clone();
            let inputs = if level == 0 {
                v.files[0].clone()
            } else {
                v.overlapping(level, begin, end)
            };
            if !inputs.is_empty() {
                if let Some((lo, hi)) = user_range(&inputs, &v.icmp) {
                    let next = v.overlapping(output_level, Some(&lo), Some(&hi));
                    let pick = Pick {
                        level,
                        output_level,
                        inputs,
                        next_inputs: next,
                        score: 0.0,
                        base_level: targets.base_level,
                    };
                    // A manual compaction rewrites even a lone file, so that garbage is dropped.
                    run_compaction(db, &mut st, pick, false)?;
                }
            }
            level = output_level;
        }
        Ok(())
    })();
    st.manual_compactions -= 1;
    // An I/O failure in a manual compaction is handled like one in an automatic compaction:
    // ENOSPC while writing tables is a soft error, anything else stops writes.
    match &r {
        Err(e) if e.is_io() => {
            super::background::record_compaction_error(db, &mut st, e.clone());
            db.bg_cv.notify_all();
        }
        Ok(()) => super::background::compaction_succeeded(&mut st),
        _ => {}
    }
    db.work_cv.notify_all();
    r
}

#[cfg(test)]
fn cfg_for_tests() -> PickerConfig {
    PickerConfig::fixed(4, 1000, 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::version::Reaper;
    use crate::key::make_internal_key;

    fn file(n: u64, lo: &str, hi: &str, size: u64) -> Arc<FileMeta> {
        FileMeta::new(
            FileMetaData {
                number: n,
                file_size: size,
                smallest: make_internal_key(lo.as_bytes(), n * 10, vt::VALUE),
                largest: make_internal_key(hi.as_bytes(), n * 10, vt::VALUE),
                smallest_seqno: n * 10,
                largest_seqno: n * 10,
                epoch_number: n,
                ..Default::default()
            },
            Arc::new(Reaper::default()),
        )
    }

    fn version(levels: Vec<Vec<Arc<FileMeta>>>) -> Version {
        let mut files = levels;
        files.resize(7, Vec::new());
        Version {
            files,
            icmp: InternalKeyComparator::default(),
        }
    }

    fn cfg() -> PickerConfig {
        super::cfg_for_tests()
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
        let cfg = || PickerConfig {
            pri: CompactionPri::RoundRobin,
            ..super::cfg_for_tests()
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
        assert_eq!(nums(&p.inputs), vec![2]);
        // a running range in another output level does not matter
        let running = vec![RunningRange {
            output_level: 3,
            smallest: b"a".to_vec(),
            largest: b"z".to_vec(),
        }];
        let p = pick_compaction(&v, &cfg(), &HashSet::new(), &running, &[]).unwrap();
        assert_eq!(nums(&p.inputs), vec![1]);
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
        let mut c = GrandparentCut::new(&files, 150);
        let cuts: Vec<&str> = ["a", "d", "g", "j", "m"]
            .into_iter()
            .filter(|k| c.should_cut(&icmp, k.as_bytes()))
            .collect();
        // a: nothing passed; d: b-c passed (100); g: e-f (200 > 150) -> cut, reset;
        // j: h-i (100); m: k-l (200) -> cut
        assert_eq!(cuts, vec!["g", "m"]);
        // files passed before the first key do not count
        let mut c = GrandparentCut::new(&files, 150);
        assert!(!c.should_cut(&icmp, b"j"));
        assert!(!c.should_cut(&icmp, b"k"));
        assert!(!c.should_cut(&icmp, b"z"));
    }

    #[test]
    fn output_file_sizes_and_pending_bytes() {
        use crate::db::level_targets::estimate_pending_compaction_bytes;
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
}
