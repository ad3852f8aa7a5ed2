//! Leveled compaction: the job that merges a picked compaction's input files into new table
//! files (dropping versions no snapshot can see), and manual `compact_range`. The picker is in
//! `picker.rs`.

use crate::statistics::{Histogram, Ticker};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::range_del::file_tombstones;
use super::table_output::{FilterSpec, OutputParams};
use super::{column_family::ColumnFamilyData, state::DbInner, state::DbState};
use crate::compaction_filter_factory::CompactionFilterContext;
use crate::error::{Error, Result};
use crate::lsm::version_edit::VersionEdit;
use crate::range_del::FragmentedRangeTombstoneList;

use super::subcompaction::run_subcompactions;
use crate::compaction::fifo::{pick_fifo, FifoConfig};
pub(crate) use crate::compaction::level_targets::PickerConfig;
use crate::compaction::level_targets::{max_grandparent_overlap, target_file_size};
use crate::compaction::picker::PickKind;
pub(crate) use crate::compaction::picker::{level_scores, pick_compaction, Pick, RunningRange};
use crate::compaction::universal::{pick_universal, UniversalConfig};
use crate::lsm::version::Version;
use crate::options::compaction::DBCompactionStyle;
use crate::table::format::DBCompressionType;

/// Run one picked compaction. Called by a background thread holding the DB mutex; the mutex is
/// released while files are merged.
/// `allow_move`: a single input with no overlap below may be moved without rewriting.
pub(crate) fn run_compaction(
    db: &Arc<DbInner>,
    st: &mut MutexGuard<'_, DbState>,
    cf: &Arc<ColumnFamilyData>,
    pick: Pick,
    allow_move: bool,
    manual: bool,
) -> Result<()> {
    let start = Instant::now();
    // Before any bookkeeping: the range orders keys with the user comparator, which may panic.
    let range = pick.key_range(&cf.icmp).map(|(smallest, largest)| RunningRange {
        output_level: pick.output_level,
        smallest,
        largest,
    });
    for f in pick.all_inputs() {
        st.being_compacted.insert(f.number());
    }
    let id = st.next_compaction_id;
    st.next_compaction_id += 1;
    if let Some(r) = range {
        st.running_compactions.push((id, cf.id, r));
    }
    st.compactions_running += 1;
    // A panic (a user comparator, merge operator, or a bug) must not leave the bookkeeping above
    // behind: manual compactions and shutdown wait for `compactions_running` to reach zero.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_compaction_inner(db, st, cf, &pick, start, allow_move, manual)
    }))
    .unwrap_or_else(|p| Err(Error::from_panic("compaction", p)));
    st.compactions_running -= 1;
    st.running_compactions.retain(|(i, _, _)| *i != id);
    for f in pick.all_inputs() {
        st.being_compacted.remove(&f.number());
    }
    r
}

/// As RocksDB's `Compaction::IsTrivialMove`: a file whose move would put more than
/// `max_compaction_bytes` (with the level below it) in one future compaction is rewritten
/// instead, so its output is cut at that level's file boundaries.
fn move_fits(cf: &ColumnFamilyData, version: &Version, pick: &Pick) -> bool {
    let cap = max_grandparent_overlap(&picker_config(cf));
    pick.output_level + 1 >= version.num_levels()
        || pick.inputs.iter().all(|f| {
            let below: u64 = version
                .overlapping(pick.output_level + 1, Some(f.smallest_user()), Some(f.largest_user()))
                .iter()
                .map(|g| g.meta.file_size)
                .sum();
            f.meta.file_size + below <= cap
        })
}

/// Move the pick's files to the output level with one MANIFEST edit, rewriting nothing.
fn trivial_move(
    db: &Arc<DbInner>,
    st: &mut MutexGuard<'_, DbState>,
    cf: &Arc<ColumnFamilyData>,
    pick: &Pick,
) -> Result<()> {
    let mut edit = VersionEdit {
        column_family: cf.id,
        ..Default::default()
    };
    for (level, f) in pick.inputs_by_level() {
        edit.deleted_files.push((level as u32, f.number()));
        edit.new_files.push((pick.output_level as u32, f.meta.clone()));
    }
    db.log_and_apply(st, &mut edit)?;
    if let Ok(v) = st.versions.cf_mut(cf.id) {
        if let (Some(c), Some(f)) = (v.compact_cursor.get_mut(pick.level), pick.inputs.last()) {
            *c = f.meta.largest.clone();
        }
    }
    db.install_super_version(st, cf.id);
    super::events::trivial_move(db, st, cf, pick);
    if let Ok(m) = st.cf_mut(cf.id) {
        for (_, f) in pick.inputs_by_level() {
            m.stats.record_move(pick.output_level, f.meta.file_size);
        }
    }
    Ok(())
}

/// How a compaction writes its outputs: the range tombstones of its inputs, whether it is
/// bottommost (the key ranges of deeper levels), target size, compression, grandparents for
/// output cuts, snapshots, the compaction filter.
fn output_params(
    db: &Arc<DbInner>,
    cf: &Arc<ColumnFamilyData>,
    version: &Arc<Version>,
    pick: &Pick,
    manual: bool,
) -> Result<OutputParams> {
    let mut deeper_ranges = Vec::new();
    for level in pick.output_level + 1..version.num_levels() {
        for f in &version.files[level] {
            deeper_ranges.push((f.smallest_user().to_vec(), f.largest_user().to_vec()));
        }
    }
    let grandparents = match pick.key_range(&cf.icmp) {
        Some((lo, hi)) if pick.output_level + 1 < version.num_levels() => version
            .overlapping(pick.output_level + 1, Some(&lo), Some(&hi))
            .iter()
            .map(|f| (f.smallest_user().to_vec(), f.largest_user().to_vec(), f.meta.file_size))
            .collect(),
        _ => Vec::new(),
    };
    let cfg = picker_config(cf);
    let epoch = pick.all_inputs().map(|f| f.meta.epoch_number).min().unwrap_or(0);
    let mut raw_tombs = Vec::new();
    for f in pick.all_inputs() {
        if let Some(l) = file_tombstones(cf, f)? {
            raw_tombs.extend(l.tombstones());
        }
    }
    let is_bottom_level = deeper_ranges.is_empty();
    let tombstones = FragmentedRangeTombstoneList::new(&cf.icmp, raw_tombs);
    let mut params = if let PickKind::Universal { compress, .. } = pick.kind {
        universal_params(db, cf, version, pick, epoch, tombstones, deeper_ranges, compress)
    } else if pick.is_intra_l0() {
        // L0 -> L0: older L0 files (and every deeper level) may hold older versions of any key,
        // so nothing is bottommost (deletions and range tombstones stay, no sequence number is
        // zeroed), and the output is one file, as RocksDB never splits L0 outputs. Its epoch is
        // the oldest input's: older L0 files keep sorting below it, newer ones above.
        OutputParams::for_l0(cf, epoch, db.snapshot_list(), tombstones)
    } else {
        OutputParams {
            cf: cf.clone(),
            tombstones,
            bottommost: true,
            target_file_size: target_file_size(&cfg, pick.base_level, pick.output_level),
            epoch,
            snapshots: db.snapshot_list(),
            deeper_ranges,
            compression: cf
                .opts
                .compression_for_level(pick.output_level, pick.base_level, is_bottom_level),
            grandparents,
            max_grandparent_overlap: max_grandparent_overlap(&cfg),
            filter: None,
            count_drops: true,
            ancestor_time: 0,
            blob: Default::default(),
        }
    };
    params.blob = super::table_output::blob_policy(cf, pick.output_level);
    params.blob.relocate_below = blob_gc_cutoff(cf, version);
    params.ancestor_time = oldest_ancestor_time(pick);
    params.count_drops = true;
    params.filter = cf.opts.compaction_filter.as_ref().map(|source| FilterSpec {
        source: source.clone(),
        context: CompactionFilterContext {
            is_full_compaction: pick.all_inputs().count() == version.all_files().count(),
            is_manual_compaction: manual,
        },
        level: pick.level as u32,
    });
    Ok(params)
}

fn run_compaction_inner(
    db: &Arc<DbInner>,
    st: &mut MutexGuard<'_, DbState>,
    cf: &Arc<ColumnFamilyData>,
    pick: &Pick,
    start: Instant,
    allow_move: bool,
    manual: bool,
) -> Result<()> {
    let version = st.versions.cf(cf.id)?.current.clone();
    if pick.kind == PickKind::Deletion {
        return run_deletion(db, st, cf, pick);
    }
    let universal = matches!(pick.kind, PickKind::Universal { .. });
    if allow_move && pick.is_trivial_move() && (universal || move_fits(cf, &version, pick)) {
        return trivial_move(db, st, cf, pick);
    }
    let params = output_params(db, cf, &version, pick, manual)?;
    let in_bytes: u64 = pick
        .inputs
        .iter()
        .chain(pick.other_inputs.iter().map(|(_, f)| f))
        .map(|f| f.meta.file_size)
        .sum();
    let next_bytes: u64 = pick.next_inputs.iter().map(|f| f.meta.file_size).sum();
    // As RocksDB: bytes read from the output level count as Rnp1 (all of them for L0 -> L0).
    let (rn_bytes, rnp1_bytes) = if pick.is_intra_l0() {
        (0, in_bytes + next_bytes)
    } else {
        (in_bytes, next_bytes)
    };
    // One L0 -> L0 output file: no split by key range.
    let max_subs = if pick.is_intra_l0() || pick.output_level == 0 {
        1
    } else {
        cf.opts.max_subcompactions
    };
    let job = super::events::compaction_started(db, st, cf, pick);
    let (outputs, blobs) = parking_lot::MutexGuard::unlocked(st, || -> Result<super::table_output::Built> {
        run_subcompactions(db, pick, &params, max_subs)
    })?;
    let mut edit = VersionEdit {
        column_family: cf.id,
        ..Default::default()
    };
    for (level, f) in pick.inputs_by_level() {
        edit.deleted_files.push((level as u32, f.number()));
    }
    let mut out_bytes = 0;
    for f in &outputs {
        out_bytes += f.file_size;
        edit.new_files.push((pick.output_level as u32, f.clone()));
    }
    blobs.add_to_edit(&mut edit);
    if let Err(e) = db.log_and_apply(st, &mut edit) {
        if cf.is_dropped() {
            // The family was dropped meanwhile: its outputs are not needed.
            for f in &outputs {
                let _ = db.fs.remove_file(&crate::lsm::filename::table_name(&db.path, f.number));
            }
            blobs.remove_files(&*db.fs, &db.path);
            return Ok(());
        }
        // The outputs stay: the edit naming them may have reached the disk before the failure
        // (an unsynced or torn record can still be read back after a crash). If it did not,
        // they are unreferenced and removed at the next open. A failed MANIFEST write is a hard error whatever its cause (even ENOSPC): the
        // MANIFEST may end in a torn record.
        super::error_handler::record_error(db, st, e.clone());
        return Err(e);
    }
    if pick.level > 0 && pick.kind == PickKind::Leveled {
        if let Some(last_in) = pick.inputs.last() {
            if let Ok(v) = st.versions.cf_mut(cf.id) {
                if let Some(c) = v.compact_cursor.get_mut(pick.level) {
                    *c = last_in.meta.largest.clone();
                }
            }
        }
    }
    db.install_super_version(st, cf.id);
    if let Some(s) = &db.stats {
        s.tick(Ticker::CompactReadBytes, rn_bytes + rnp1_bytes);
        s.tick(Ticker::CompactWriteBytes, out_bytes);
        s.record(Histogram::NumFilesInSingleCompaction, pick.all_inputs().count() as u64);
        s.record_time(Histogram::CompactionTime, start.elapsed().as_micros() as u64);
    }
    if let Ok(m) = st.cf_mut(cf.id) {
        m.stats.record_compaction(
            pick.output_level,
            rn_bytes,
            rnp1_bytes,
            out_bytes,
            outputs.len(),
            start.elapsed(),
        );
        if pick.is_intra_l0() {
            m.stats.intra_l0_compactions += 1;
        }
    }
    super::events::compaction_finished(db, st, cf, job, pick, &outputs, start);
    Ok(())
}

pub(crate) fn picker_config(cf: &ColumnFamilyData) -> PickerConfig {
    PickerConfig::from_options(&cf.opts)
}

/// The next automatic compaction of any family (families take turns, starting after the one
/// that compacted last), under each family's compaction style.
pub(crate) fn pick_auto(st: &DbState) -> Option<(Arc<ColumnFamilyData>, Pick)> {
    let ids: Vec<u32> = st
        .cfs
        .range(st.next_compaction_cf..)
        .chain(st.cfs.range(..st.next_compaction_cf))
        .filter(|(_, m)| !m.cfd.opts.disable_auto_compactions)
        .map(|(id, _)| *id)
        .collect();
    ids.into_iter()
        .find_map(|id| pick_for(st, &st.cfs[&id].cfd).map(|p| (st.cfs[&id].cfd.clone(), p)))
}

/// The next automatic compaction of family `cf` (a pure picker per style).
pub(crate) fn pick_for(st: &DbState, cf: &ColumnFamilyData) -> Option<Pick> {
    let c = st.versions.cf(cf.id).ok()?;
    let v = &c.current;
    let running: Vec<RunningRange> = st
        .running_compactions
        .iter()
        .filter(|(_, id, _)| *id == cf.id)
        .map(|(_, _, r)| r.clone())
        .collect();
    match cf.opts.compaction_style {
        DBCompactionStyle::Level => {
            let cfg = PickerConfig {
                now: super::table_output::now_secs(),
                ..picker_config(cf)
            };
            pick_compaction(v, &cfg, &st.being_compacted, &running, &c.compact_cursor)
        }
        DBCompactionStyle::Universal => pick_universal(
            v,
            &UniversalConfig::from_options(&cf.opts, super::table_output::now_secs()),
            &st.being_compacted,
            &running,
        ),
        DBCompactionStyle::Fifo => pick_fifo(
            v,
            &FifoConfig::from_options(&cf.opts),
            &st.being_compacted,
            super::table_output::now_secs(),
        ),
    }
}

/// The oldest ancestor time of a compaction's inputs (RocksDB's
/// `MinInputFileOldestAncesterTime`: the MANIFEST's field, else the table's creation time),
/// 0 when no input knows it.
fn oldest_ancestor_time(pick: &Pick) -> u64 {
    pick.all_inputs()
        .map(|f| f.oldest_ancestor_time())
        .filter(|&t| t > 0)
        .min()
        .unwrap_or(0)
}

/// A FIFO deletion: one MANIFEST edit removing the picked files, nothing rewritten.
fn run_deletion(db: &Arc<DbInner>, st: &mut MutexGuard<'_, DbState>, cf: &ColumnFamilyData, pick: &Pick) -> Result<()> {
    let mut edit = VersionEdit {
        column_family: cf.id,
        ..Default::default()
    };
    for (level, f) in pick.inputs_by_level() {
        edit.deleted_files.push((level as u32, f.number()));
    }
    db.log_and_apply(st, &mut edit)?;
    db.install_super_version(st, cf.id);
    if let Ok(m) = st.cf_mut(cf.id) {
        m.stats.fifo_deleted_files += pick.inputs.len() as u64;
        m.stats.fifo_deleted_bytes += pick.inputs.iter().map(|f| f.meta.file_size).sum::<u64>();
    }
    Ok(())
}

/// Output parameters of a universal compaction: one file at L0 (RocksDB never splits L0
/// outputs), files of `target_file_size_base` x multiplier^(level - 1) below; no grandparent
/// cuts. Bottommost when nothing older than the inputs remains: into L0 only when the inputs
/// include the oldest L0 file and every other level is empty.
#[allow(clippy::too_many_arguments)]
fn universal_params(
    db: &DbInner,
    cf: &Arc<ColumnFamilyData>,
    v: &crate::lsm::version::Version,
    pick: &Pick,
    epoch: u64,
    tombstones: FragmentedRangeTombstoneList,
    deeper_ranges: Vec<(Vec<u8>, Vec<u8>)>,
    compress: bool,
) -> OutputParams {
    let cfg = picker_config(cf);
    let is_bottom_level = deeper_ranges.is_empty();
    let compression = if compress {
        cf.opts.compression_for_level(pick.output_level, 1, is_bottom_level)
    } else {
        DBCompressionType::None
    };
    if pick.output_level == 0 {
        let oldest_in = v.files[0]
            .last()
            .is_some_and(|f| pick.inputs.iter().any(|i| i.number() == f.number()));
        let deeper_empty = (1..v.num_levels()).all(|l| v.num_files(l) == 0);
        let mut p = OutputParams::for_l0(cf, epoch, db.snapshot_list(), tombstones);
        p.bottommost = oldest_in && deeper_empty;
        p.compression = compression;
        return p;
    }
    OutputParams {
        cf: cf.clone(),
        tombstones,
        bottommost: true,
        target_file_size: target_file_size(&cfg, 1, pick.output_level),
        epoch,
        snapshots: db.snapshot_list(),
        deeper_ranges,
        compression,
        grandparents: Vec::new(),
        max_grandparent_overlap: u64::MAX,
        filter: None,
        count_drops: true,
        ancestor_time: 0,
        blob: Default::default(),
    }
}

/// Garbage collection of blob files (`enable_blob_garbage_collection`): blobs in the oldest
/// `blob_garbage_collection_age_cutoff` fraction of the family's blob files are relocated by
/// the compaction; returns the first blob file number not collected (0: none is).
fn blob_gc_cutoff(cf: &ColumnFamilyData, version: &Version) -> u64 {
    let b = &cf.opts.blob;
    if !b.enable_blob_garbage_collection {
        return 0;
    }
    let files: Vec<u64> = version.blob_files.keys().copied().collect();
    let n = (files.len() as f64 * b.blob_garbage_collection_age_cutoff) as usize;
    match n {
        0 => 0,
        n if n >= files.len() => files.last().map_or(0, |l| l + 1),
        n => files[n],
    }
}
