//! Leveled compaction: the job that merges a picked compaction's input files into new table
//! files (dropping versions no snapshot can see), and manual `compact_range`. The picker is in
//! `picker.rs`.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::MutexGuard;

use super::filename::table_name;
use super::range_del::{add_clipped, compact_key, file_tombstones, output_tombstones, stripe, KEntry, KeyCtx};
use super::{DbInner, DbState};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, vt, InternalKeyComparator, SequenceNumber};
use crate::options::TableFactory;
use crate::range_del::FragmentedRangeTombstoneList;
use crate::table::any::AnyTableBuilder;
use crate::table::cuckoo::{CuckooTableBuilder, CuckooTableBuilderOptions};
use crate::table::format::CompressionType;
use crate::table::plain::{PlainTableBuilder, PlainTableBuilderOptions};
use crate::table::{TableBuilder, TableBuilderOptions};
use crate::version_edit::{FileMetaData, VersionEdit};

pub(crate) use super::level_targets::PickerConfig;
use super::level_targets::{compute_targets, max_grandparent_overlap, target_file_size};
pub(crate) use super::picker::{level_scores, pick_compaction, Pick, RunningRange};
use super::picker::{split_manual_inputs, user_range};
use super::subcompaction::run_subcompactions;

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
            let keep = if entries.len() == 1 && tomb_seqs.is_empty() && entries[0].vtype == vt::VALUE {
                entries
            } else {
                compact_key(key, entries, &ctx)?
            };
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

/// Decides where compaction outputs are cut, as RocksDB's `CompactionOutputs::ShouldStopBefore`
/// does for leveled compaction (with its default `level_compaction_dynamic_file_size`), tracking
/// the output keys against the files of the level below the output level (the grandparents):
/// - at the target file size when there are no grandparents, else at twice it;
/// - at a grandparent boundary, when the file plus the grandparent bytes it overlaps would
///   exceed `max_compaction_bytes` (a later compaction of it would be too big);
/// - at a grandparent boundary, when the key jumped over a whole grandparent file larger than
///   1/8 of the target size (that file then stays out of a later compaction);
/// - at a grandparent boundary once the file reaches 50 % of the target size, plus 5 % per
///   boundary it has crossed (at most 90 %): outputs end where the next level's files end, so a
///   later compaction of one rewrites fewer bytes below.
pub(crate) struct GrandparentCut<'a> {
    /// (smallest user key, largest user key, size) of each grandparent file, in key order.
    files: &'a [(Vec<u8>, Vec<u8>, u64)],
    max: u64,
    target: u64,
    /// The size at which an output is always cut: the target size at the bottom (no
    /// grandparents), else twice it, as RocksDB: between the two, outputs end at the next
    /// grandparent boundary (the pre-cut rule below always cuts there from 90 % of the target).
    max_file: u64,
    /// The grandparent file at or after the last key.
    idx: usize,
    /// The last key lies before `files[idx]` (in the gap between two files), not inside it.
    in_gap: bool,
    seen_key: bool,
    /// Grandparent bytes the current output overlaps.
    overlap: u64,
    /// Grandparent boundaries crossed since the current output began.
    switched: u64,
}

impl<'a> GrandparentCut<'a> {
    /// `max`: `max_compaction_bytes`; `target`: the output files' target size.
    pub(crate) fn new(files: &'a [(Vec<u8>, Vec<u8>, u64)], max: u64, target: u64) -> Self {
        GrandparentCut {
            files,
            max,
            target,
            max_file: if files.is_empty() {
                target
            } else {
                target.saturating_mul(2)
            },
            idx: 0,
            in_gap: true,
            seen_key: false,
            overlap: 0,
            switched: 0,
        }
    }

    /// Move past the grandparent boundaries before `key`; returns how many were crossed.
    fn advance(&mut self, icmp: &InternalKeyComparator, key: &[u8]) -> u64 {
        let mut crossed = 0;
        while self.idx < self.files.len() {
            let f = &self.files[self.idx];
            if self.in_gap {
                if icmp.compare_user(key, &f.0) == Ordering::Less {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.switched += 1;
                    self.overlap += f.2;
                }
                self.in_gap = false;
            } else {
                // Stay on the last file that contains the key.
                let c = icmp.compare_user(key, &f.1);
                let next_starts_after = self
                    .files
                    .get(self.idx + 1)
                    .is_none_or(|n| icmp.compare_user(key, &n.0) == Ordering::Less);
                if c == Ordering::Less || (c == Ordering::Equal && next_starts_after) {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.switched += 1;
                }
                self.in_gap = true;
                self.idx += 1;
            }
        }
        if !self.seen_key {
            self.overlap = self.key_overlap(icmp, key);
        }
        self.seen_key = true;
        crossed
    }

    /// Grandparent bytes the key itself lies in (several files may end at that user key).
    fn key_overlap(&self, icmp: &InternalKeyComparator, key: &[u8]) -> u64 {
        if self.in_gap || self.idx >= self.files.len() {
            return 0;
        }
        let mut n = self.files[self.idx].2;
        let mut i = self.idx;
        while i > 0 && icmp.compare_user(key, &self.files[i - 1].1) == Ordering::Equal {
            i -= 1;
            n += self.files[i].2;
        }
        n
    }

    /// Called with each output user key in order, with the size of the open output (None if
    /// none is open): true if the output should be cut before `key`.
    pub(crate) fn should_cut(&mut self, icmp: &InternalKeyComparator, key: &[u8], cur_size: Option<u64>) -> bool {
        let before = self.overlap;
        let crossed = self.advance(icmp, key);
        let Some(size) = cur_size else {
            return false;
        };
        let cut = if size >= self.max_file {
            true
        } else if crossed == 0 {
            false
        } else {
            let skippable = if self.in_gap { 2 } else { 3 };
            self.overlap.saturating_add(size) > self.max
                || (crossed >= skippable && self.overlap.saturating_sub(before) > self.target / 8)
                || size
                    >= self
                        .target
                        .div_ceil(100)
                        .saturating_mul(50 + (self.switched * 5).min(40))
        };
        if cut {
            self.switched = 0;
            self.overlap = self.key_overlap(icmp, key);
        }
        cut
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
    // As RocksDB's `Compaction::IsTrivialMove`: a file whose move would put more than
    // `max_compaction_bytes` (with the level below it) in one future compaction is rewritten
    // instead, so its output is cut at that level's file boundaries.
    let grandparents_ok = || {
        let cap = max_grandparent_overlap(&picker_config(db));
        pick.output_level + 1 >= version.num_levels()
            || pick.inputs.iter().all(|f| {
                let below: u64 = version
                    .overlapping(pick.output_level + 1, Some(f.smallest_user()), Some(f.largest_user()))
                    .iter()
                    .map(|g| g.meta.file_size)
                    .sum();
                f.meta.file_size + below <= cap
            })
    };
    if allow_move && pick.is_trivial_move() && grandparents_ok() {
        let mut edit = VersionEdit::default();
        for f in &pick.inputs {
            edit.deleted_files.push((pick.level as u32, f.number()));
            edit.new_files.push((pick.output_level as u32, f.meta.clone()));
        }
        let last = db.last_seq.load(AtOrd::Acquire);
        st.versions.log_and_apply(&mut edit, last, db.opts.paranoid_checks)?;
        if let (Some(c), Some(f)) = (st.versions.compact_cursor.get_mut(pick.level), pick.inputs.last()) {
            *c = f.meta.largest.clone();
        }
        db.install_super_version(st);
        for f in &pick.inputs {
            st.stats.record_move(pick.output_level, f.meta.file_size);
        }
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
    let tombstones = FragmentedRangeTombstoneList::new(&db.icmp, raw_tombs);
    let params = if pick.is_intra_l0() {
        // L0 -> L0: older L0 files (and every deeper level) may hold older versions of any key,
        // so nothing is bottommost (deletions and range tombstones stay, no sequence number is
        // zeroed), and the output is one file, as RocksDB never splits L0 outputs. Its epoch is
        // the oldest input's: older L0 files keep sorting below it, newer ones above.
        OutputParams::for_l0(db, epoch, db.snapshot_list(), tombstones)
    } else {
        OutputParams {
            tombstones,
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
        }
    };
    let in_bytes: u64 = pick.inputs.iter().map(|f| f.meta.file_size).sum();
    let next_bytes: u64 = pick.next_inputs.iter().map(|f| f.meta.file_size).sum();
    // As RocksDB: bytes read from the output level count as Rnp1 (all of them for L0 -> L0).
    let (rn_bytes, rnp1_bytes) = if pick.is_intra_l0() {
        (0, in_bytes + next_bytes)
    } else {
        (in_bytes, next_bytes)
    };
    // One L0 -> L0 output file: no split by key range.
    let max_subs = if pick.is_intra_l0() {
        1
    } else {
        db.opts.max_subcompactions
    };
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
    if pick.is_intra_l0() {
        st.stats.intra_l0_compactions += 1;
    }
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
            // L0 in one compaction (its files overlap); an L1+ level in chunks of at most
            // about max_compaction_bytes (input plus overlapped output-level bytes), as RocksDB.
            let chunks = if level == 0 {
                vec![v.files[0].clone()]
            } else {
                split_manual_inputs(
                    &v,
                    output_level,
                    &v.overlapping(level, begin, end),
                    cfg.max_compaction_bytes,
                )
            };
            for inputs in chunks {
                // Earlier chunks changed only the output level: take its files afresh.
                let v = st.versions.current.clone();
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
