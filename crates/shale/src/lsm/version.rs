//! Versions (the set of live table files per level) and the VersionSet that persists them in the
//! MANIFEST, as RocksDB's `version_set.cc` / `version_builder.cc` do.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::blob_files::{apply_blob_edit, min_oldest_blob, restate, retain_live, BlobFileMeta, BlobFiles, BlobReaper};
use super::filename::{current_name, manifest_name, temp_name};
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::key::{user_key, InternalKeyComparator};
use crate::log;
use crate::log::DBRecoveryMode;
use crate::lsm::version_edit::{FileMetaData, VersionEdit};
use crate::table::any::AnyTable;

/// The name of the family every DB has (id 0).
pub const DEFAULT_COLUMN_FAMILY_NAME: &str = "default";

/// Collects numbers of table files that became obsolete (removed by a synced MANIFEST edit and
/// no longer referenced by any version).
#[derive(Default)]
pub(crate) struct Reaper {
    pending: Mutex<Vec<u64>>,
}

impl Reaper {
    pub(crate) fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.pending.lock())
    }
}

/// The on-disk life of one table file, shared by every `FileMeta` that names it: a trivial move
/// makes a new `FileMeta` at another level for the same file while older versions (held by
/// iterators and snapshots' super versions) still hold the old one. The file is handed to the
/// reaper only when the last of them is gone, and only if a synced MANIFEST edit removed it.
pub(crate) struct FileLife {
    number: u64,
    /// Set once a synced MANIFEST edit removed the file (and did not re-add it elsewhere).
    obsolete: AtomicBool,
    reaper: Arc<Reaper>,
    /// The opened table, pinned here when the table cache is unbounded: shared by every
    /// `FileMeta` of the file, so a moved file keeps its open reader (and an iterator on an
    /// older version opens nothing twice).
    table: OnceLock<AnyTable>,
    /// The table's fragmented range tombstones (None: it has none), loaded on first use.
    range_dels: OnceLock<Option<Arc<crate::range_del::FragmentedRangeTombstoneList>>>,
}

impl Drop for FileLife {
    fn drop(&mut self) {
        if self.obsolete.load(AtOrd::Acquire) {
            self.reaper.pending.lock().push(self.number);
        }
    }
}

/// A live table file.
pub(crate) struct FileMeta {
    pub meta: FileMetaData,
    /// Whether the file was added at level 0 (its table may pin index and filter in the cache).
    pub level0: bool,
    life: Arc<FileLife>,
}

impl FileMeta {
    #[cfg(test)]
    pub(crate) fn new(meta: FileMetaData, reaper: Arc<Reaper>) -> Arc<FileMeta> {
        FileMeta::new_at(meta, reaper, 0)
    }
    pub(crate) fn new_at(meta: FileMetaData, reaper: Arc<Reaper>, level: usize) -> Arc<FileMeta> {
        let life = Arc::new(FileLife {
            number: meta.number,
            obsolete: AtomicBool::new(false),
            reaper,
            table: OnceLock::new(),
            range_dels: OnceLock::new(),
        });
        FileMeta::with_life(meta, life, level)
    }
    /// A `FileMeta` of the file `life` stands for (a table open through it stays open).
    pub(crate) fn with_life(meta: FileMetaData, life: Arc<FileLife>, level: usize) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            meta,
            level0: level == 0,
            life,
        })
    }
    /// The file's on-disk life, shared by every `FileMeta` of it.
    pub(crate) fn life(&self) -> &Arc<FileLife> {
        &self.life
    }
    /// The opened table, when the table cache is unbounded (shared with moved copies).
    pub(crate) fn table(&self) -> &OnceLock<AnyTable> {
        &self.life.table
    }
    /// The table's fragmented range tombstones, once loaded (shared with moved copies).
    pub(crate) fn range_dels(&self) -> &OnceLock<Option<Arc<crate::range_del::FragmentedRangeTombstoneList>>> {
        &self.life.range_dels
    }
    pub(crate) fn number(&self) -> u64 {
        self.meta.number
    }
    pub(crate) fn smallest_user(&self) -> &[u8] {
        user_key(&self.meta.smallest)
    }
    pub(crate) fn largest_user(&self) -> &[u8] {
        user_key(&self.meta.largest)
    }
    /// The opened table's properties, if the table is held open (`max_open_files = -1`).
    fn open_properties(&self) -> Option<&crate::table::properties::TableProperties> {
        self.table().get().map(|t| t.properties())
    }
    /// RocksDB's `TryGetOldestAncesterTime`: the MANIFEST's `oldest_ancester_time`, else the
    /// table's `rocksdb.creation.time` (0 = unknown).
    pub(crate) fn oldest_ancestor_time(&self) -> u64 {
        if self.meta.oldest_ancester_time != 0 {
            return self.meta.oldest_ancester_time;
        }
        self.open_properties().map_or(0, |p| p.creation_time)
    }
    /// The time periodic compaction ages a file by (RocksDB's
    /// `ComputeFilesMarkedForPeriodicCompaction`): its creation time (the MANIFEST's
    /// `file_creation_time`, else the table's `rocksdb.file.creation.time`), else its oldest
    /// ancestor time; 0 = unknown (RocksDB then asks the file system for the file's mtime;
    /// Shale skips the file).
    pub(crate) fn periodic_time(&self) -> u64 {
        let t = if self.meta.file_creation_time != 0 {
            self.meta.file_creation_time
        } else {
            self.open_properties().map_or(0, |p| p.file_creation_time)
        };
        if t != 0 {
            t
        } else {
            self.oldest_ancestor_time()
        }
    }
    /// FIFO's estimate of the time of the file's newest data (RocksDB's `PickTTLCompaction`):
    /// the table's `rocksdb.newest.key.time`, else its `rocksdb.creation.time`. A table that is
    /// not open (a file written since the DB was opened) falls back to the MANIFEST's
    /// `oldest_ancester_time`, which Shale writes equal to the table's creation time. 0 = unknown.
    pub(crate) fn newest_data_time(&self) -> u64 {
        match self.open_properties() {
            Some(p) => {
                let newest = p
                    .raw
                    .get("rocksdb.newest.key.time")
                    .and_then(|v| crate::coding::get_varint64(v))
                    .map_or(0, |(t, _)| t);
                if newest != 0 {
                    newest
                } else {
                    p.creation_time
                }
            }
            None => self.meta.oldest_ancester_time,
        }
    }
}

/// An immutable view of the table files of every level.
pub(crate) struct Version {
    pub files: Vec<Vec<Arc<FileMeta>>>,
    pub icmp: InternalKeyComparator,
    /// The family's live blob files (their on-disk life is held by every version naming them).
    pub blob_files: BlobFiles,
}

impl Version {
    pub(crate) fn empty(num_levels: usize, icmp: InternalKeyComparator) -> Version {
        Version {
            files: vec![Vec::new(); num_levels],
            icmp,
            blob_files: BlobFiles::new(),
        }
    }
    pub(crate) fn num_levels(&self) -> usize {
        self.files.len()
    }
    pub(crate) fn num_files(&self, level: usize) -> usize {
        self.files.get(level).map(|f| f.len()).unwrap_or(0)
    }
    pub(crate) fn level_bytes(&self, level: usize) -> u64 {
        self.files
            .get(level)
            .map(|f| f.iter().map(|m| m.meta.file_size).sum())
            .unwrap_or(0)
    }
    /// Files of `level` whose user-key range intersects `[lo, hi]` (None = unbounded).
    pub(crate) fn overlapping(&self, level: usize, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Vec<Arc<FileMeta>> {
        let ucmp = &self.icmp;
        self.files[level]
            .iter()
            .filter(|f| {
                let before = hi
                    .map(|h| ucmp.compare_user(f.smallest_user(), h) == Ordering::Greater)
                    .unwrap_or(false);
                let after = lo
                    .map(|l| ucmp.compare_user(f.largest_user(), l) == Ordering::Less)
                    .unwrap_or(false);
                !before && !after
            })
            .cloned()
            .collect()
    }
    /// For L1+: index of the first file whose largest key >= ikey.
    pub(crate) fn find_file(&self, level: usize, ikey: &[u8]) -> usize {
        let files = &self.files[level];
        files.partition_point(|f| self.icmp.compare(&f.meta.largest, ikey) == Ordering::Less)
    }
    pub(crate) fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMeta>)> {
        self.files
            .iter()
            .enumerate()
            .flat_map(|(l, fs)| fs.iter().map(move |f| (l, f)))
    }
    /// RocksDB's `rocksdb.estimate-live-data-size`: the bytes of the files, bottom level first,
    /// leaving out each file whose user-key range lies inside the range of a file already
    /// counted (its data is assumed to overwrite that older data, which compaction will drop).
    pub(crate) fn estimate_live_data_size(&self) -> u64 {
        let mut counted: Vec<&Arc<FileMeta>> = Vec::new();
        let mut size = 0u64;
        for files in self.files.iter().rev() {
            for f in files {
                let inside = counted.iter().any(|c| {
                    self.icmp.compare_user(c.smallest_user(), f.smallest_user()) != Ordering::Greater
                        && self.icmp.compare_user(c.largest_user(), f.largest_user()) != Ordering::Less
                });
                if !inside {
                    size += f.meta.file_size;
                    counted.push(f);
                }
            }
        }
        size
    }
}

/// Order L0 newest first: by epoch number, then largest sequence, then file number.
fn sort_l0(files: &mut [Arc<FileMeta>]) {
    files.sort_by(|a, b| {
        b.meta
            .epoch_number
            .cmp(&a.meta.epoch_number)
            .then(b.meta.largest_seqno.cmp(&a.meta.largest_seqno))
            .then(b.meta.number.cmp(&a.meta.number))
    });
}

/// Build a version from per-level file maps; checks that L1+ files do not overlap.
fn build_version(
    levels: &[BTreeMap<u64, Arc<FileMeta>>],
    icmp: &InternalKeyComparator,
    check: bool,
    blob_files: BlobFiles,
) -> Result<Version> {
    let mut files: Vec<Vec<Arc<FileMeta>>> = levels.iter().map(|m| m.values().cloned().collect()).collect();
    if let Some(l0) = files.first_mut() {
        sort_l0(l0);
    }
    for (level, fs) in files.iter_mut().enumerate().skip(1) {
        fs.sort_by(|a, b| icmp.compare(&a.meta.smallest, &b.meta.smallest));
        if check {
            for w in fs.windows(2) {
                if icmp.compare(&w[0].meta.largest, &w[1].meta.smallest) != Ordering::Less {
                    return Err(Error::corrupt(format!(
                        "files {} and {} overlap in level {level}",
                        w[0].meta.number, w[1].meta.number
                    )));
                }
            }
        }
    }
    Ok(Version {
        files,
        icmp: icmp.clone(),
        blob_files,
    })
}

/// One column family's part of the persistent state.
pub(crate) struct CfVersion {
    pub name: String,
    pub icmp: InternalKeyComparator,
    pub current: Arc<Version>,
    /// WALs numbered below this hold nothing of this family that is not in its tables.
    pub log_number: u64,
    /// Per-level key where the next size compaction of that level starts.
    pub compact_cursor: Vec<Vec<u8>>,
    /// The family's `full_history_ts_low` (user-defined timestamps; empty: never set).
    pub full_history_ts_low: Vec<u8>,
}

impl CfVersion {
    fn new(name: &str, icmp: InternalKeyComparator, num_levels: usize) -> CfVersion {
        CfVersion {
            name: name.to_string(),
            current: Arc::new(Version::empty(num_levels, icmp.clone())),
            icmp,
            log_number: 0,
            compact_cursor: vec![Vec::new(); num_levels],
            full_history_ts_low: Vec::new(),
        }
    }
}

/// What `VersionSet::recover` needs to know of a family it finds in the MANIFEST: its
/// comparator and number of levels, or None when the opener did not name it.
pub(crate) type CfLookup<'a> = &'a dyn Fn(&str) -> Option<(InternalKeyComparator, usize)>;

/// The persistent state: each family's version, the counters and the open MANIFEST.
pub(crate) struct VersionSet {
    pub dir: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    /// The live column families by id (0 = default, always present).
    pub cfs: BTreeMap<u32, CfVersion>,
    /// Families the MANIFEST holds that this open did not name (read-only opens may skip some):
    /// id -> name. Their edits are not applied.
    pub skipped_cfs: BTreeMap<u32, String>,
    pub max_column_family: u32,
    pub next_file_number: u64,
    /// Last sequence persisted in the MANIFEST (the DB tracks the live one).
    pub last_sequence: u64,
    pub prev_log_number: u64,
    pub min_log_number_to_keep: u64,
    pub manifest_number: u64,
    pub next_epoch: u64,
    pub db_id: Option<String>,
    /// RocksDB's `write_dbid_to_manifest` (default true): a new MANIFEST starts with the DB id.
    pub write_db_id: bool,
    pub reaper: Arc<Reaper>,
    /// Blob files dropped by synced edits, once no version holds them.
    pub blob_reaper: Arc<BlobReaper>,
    manifest: Option<log::Writer>,
    /// An append or sync of the MANIFEST failed: it may end in a torn or unsynced record, so
    /// nothing more is appended to it; the next edit starts a new MANIFEST first (as RocksDB).
    manifest_broken: bool,
    /// A MANIFEST write is between `prepare_edit` and `finish_edit` (its writer is out).
    pub manifest_busy: bool,
}

/// Files per level of one family while the MANIFEST is replayed.
pub(crate) type Levels = Vec<BTreeMap<u64, FileMetaData>>;

/// The number of the MANIFEST that CURRENT names.
pub(crate) fn read_current(dir: &Path, fs: &dyn FileSystem) -> Result<u64> {
    let cur_path = current_name(dir);
    let cur = fs.read_all(&cur_path)?;
    let cur_name = name_of(&cur_path);
    if cur.last() != Some(&b'\n') {
        return Err(Error::corruption(
            cur_name,
            Some(cur.len() as u64),
            "CURRENT file does not end with newline",
        ));
    }
    let mname = std::str::from_utf8(&cur[..cur.len() - 1])
        .map_err(|_| Error::corruption(&cur_name, Some(0), "CURRENT file is not valid UTF-8"))?;
    match super::filename::parse_file_name(mname) {
        Some(super::filename::FileType::Manifest(n)) => Ok(n),
        _ => Err(Error::corruption(
            &cur_name,
            Some(0),
            format!("CURRENT names {mname:?}, not a MANIFEST"),
        )),
    }
}

/// A read of the MANIFEST CURRENT names that found no file is corruption (CURRENT names it).
pub(crate) fn manifest_missing(e: Error) -> Error {
    match e {
        Error::Io { file, source } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::corruption(file, None, "MANIFEST named by CURRENT is missing")
        }
        e => e,
    }
}

/// A MANIFEST being replayed: the version set it fills (families, counters), each family's
/// files by level, and which of the required global fields have been seen.
pub(crate) struct ManifestReplay<'a> {
    pub(crate) vs: VersionSet,
    pub(crate) lookup: CfLookup<'a>,
    pub(crate) mfile: String,
    pub(crate) levels: BTreeMap<u32, Levels>,
    /// Each family's blob files as the edits so far leave them.
    pub(crate) blobs: BTreeMap<u32, BlobFiles>,
    pub(crate) have_log: bool,
    pub(crate) have_next: bool,
    pub(crate) have_last: bool,
}

impl ManifestReplay<'_> {
    /// Apply every record of the MANIFEST `data`, an atomic group's edits together once its
    /// last one is read; then check the global fields every MANIFEST holds were seen.
    fn replay_manifest_records(&mut self, data: Vec<u8>) -> Result<()> {
        // As RocksDB (VersionSet::Recover reads with kTolerateCorruptedTailRecords): a record torn by
        // a crash in the middle of an append ends the MANIFEST; a bad record before the end is
        // still an error. Only fully synced edits were acted upon, so the torn one is not needed.
        let mut reader = log::Reader::new(
            data,
            self.mfile.clone(),
            0,
            DBRecoveryMode::TolerateCorruptedTailRecords,
        );
        self.apply_records(&mut reader)?;
        self.check_required_fields()
    }

    /// Apply every whole record `reader` returns, an atomic group's edits together once its
    /// last one is read (a group cut short by the end of the data is not applied). Returns the
    /// file offset just past the last edit applied (where a tailing reader resumes) and the
    /// number of edits applied.
    pub(crate) fn apply_records(&mut self, reader: &mut log::Reader) -> Result<(u64, usize)> {
        let mut applied_to = reader.end_offset();
        let mut applied = 0;
        // The edits of an atomic group (`InAtomicGroup`, written by an atomic flush) are applied
        // together once the last one is read; a group cut short by a crash is ignored.
        let mut group: Vec<(VersionEdit, u64)> = Vec::new();
        while let Some(rec) = reader.read_record()? {
            let edit = VersionEdit::decode(rec);
            let rec_off = reader.last_record_offset();
            let edit = edit.map_err(|e| e.in_file(&self.mfile, Some(rec_off)))?;
            match edit.remaining_entries {
                Some(left) => {
                    group.push((edit, rec_off));
                    if left == 0 {
                        for (e, off) in group.drain(..) {
                            self.apply(e, off)?;
                            applied += 1;
                        }
                        applied_to = reader.end_offset();
                    }
                }
                None if !group.is_empty() => {
                    return Err(Error::corruption(
                        &self.mfile,
                        Some(rec_off),
                        "an atomic group of edits is followed by an edit outside it before its end",
                    ))
                }
                None => {
                    self.apply(edit, rec_off)?;
                    applied += 1;
                    applied_to = reader.end_offset();
                }
            }
        }
        Ok((applied_to, applied))
    }

    /// Every MANIFEST holds the log number, the next file number and the last sequence.
    pub(crate) fn check_required_fields(&self) -> Result<()> {
        if !(self.have_log && self.have_next && self.have_last) {
            return Err(Error::corruption(
                &self.mfile,
                None,
                "no log_file_number, next_file_number or last_sequence entry in MANIFEST",
            ));
        }
        Ok(())
    }

    /// Apply one edit (at `rec_off` in the MANIFEST): a family added or dropped, the global
    /// fields, a family's comparator check, log number and files.
    fn apply(&mut self, edit: VersionEdit, rec_off: u64) -> Result<()> {
        let bad = |why: String| Error::corruption(&self.mfile, Some(rec_off), why);
        let id = edit.column_family;
        if let Some(name) = &edit.column_family_add {
            if id == 0 || self.vs.cfs.contains_key(&id) || self.vs.skipped_cfs.contains_key(&id) {
                return Err(bad(format!(
                    "column family {name:?} added with id {id}, which is in use"
                )));
            }
            match (self.lookup)(name) {
                Some((icmp, n)) => {
                    self.vs.cfs.insert(id, CfVersion::new(name, icmp, n));
                    self.levels.insert(id, vec![BTreeMap::new(); n]);
                }
                None => {
                    self.vs.skipped_cfs.insert(id, name.clone());
                }
            }
            self.vs.max_column_family = self.vs.max_column_family.max(id);
        } else if edit.column_family_drop {
            if id == 0 {
                return Err(bad("the default column family is dropped".into()));
            }
            if self.vs.cfs.remove(&id).is_none() && self.vs.skipped_cfs.remove(&id).is_none() {
                return Err(bad(format!("drop of unknown column family {id}")));
            }
            self.levels.remove(&id);
            self.blobs.remove(&id);
            return Ok(());
        }
        if let Some(n) = edit.max_column_family {
            self.vs.max_column_family = self.vs.max_column_family.max(n);
        }
        // Global fields.
        if edit.log_number.is_some() {
            self.have_log = true;
        }
        if let Some(n) = edit.prev_log_number {
            self.vs.prev_log_number = n;
        }
        if let Some(n) = edit.next_file_number {
            self.vs.next_file_number = n;
            self.have_next = true;
        }
        if let Some(n) = edit.last_sequence {
            self.vs.last_sequence = self.vs.last_sequence.max(n);
            self.have_last = true;
        }
        if let Some(n) = edit.min_log_number_to_keep {
            self.vs.min_log_number_to_keep = self.vs.min_log_number_to_keep.max(n);
        }
        if let Some(i) = &edit.db_id {
            self.vs.db_id = Some(i.clone());
        }
        if self.vs.skipped_cfs.contains_key(&id) {
            return Ok(());
        }
        let Some(cf) = self.vs.cfs.get_mut(&id) else {
            return Err(bad(format!("edit for unknown column family {id}")));
        };
        if let Some(c) = &edit.comparator {
            if c != cf.icmp.user_comparator().name() {
                return Err(Error::invalid(format!(
                    "comparator: column family {:?} was created with comparator {c:?}, but was opened with {:?}",
                    cf.name,
                    cf.icmp.user_comparator().name()
                )));
            }
        }
        if let Some(n) = edit.log_number {
            // A decrease is ignored, as RocksDB does.
            cf.log_number = cf.log_number.max(n);
        }
        if edit.persist_user_defined_timestamps == Some(false) && cf.icmp.timestamp_size() > 0 {
            return Err(Error::NotSupported(format!(
                "column family {:?} was written with persist_user_defined_timestamps = false (timestamps stripped from its tables), which Shale cannot read",
                cf.name
            )));
        }
        if let Some(ts) = &edit.full_history_ts_low {
            // Only increases are written; a decrease read back is ignored.
            let c = cf.icmp.user_comparator();
            if cf.full_history_ts_low.is_empty()
                || c.compare_timestamp(ts, &cf.full_history_ts_low) == std::cmp::Ordering::Greater
            {
                cf.full_history_ts_low = ts.clone();
            }
        }
        let lv = self
            .levels
            .get_mut(&id)
            .ok_or_else(|| bad(format!("column family {id}")))?;
        let num_levels = lv.len();
        for (level, num) in &edit.deleted_files {
            if let Some(l) = lv.get_mut(*level as usize) {
                l.remove(num);
            }
        }
        for (level, f) in &edit.new_files {
            let level = *level as usize;
            if level >= num_levels {
                return Err(bad(format!(
                    "file {} at level {level}, but num_levels is {num_levels}",
                    f.number
                )));
            }
            lv[level].insert(f.number, f.clone());
        }
        let blobs = self.blobs.entry(id).or_default();
        *blobs =
            apply_blob_edit(blobs, &edit, &self.vs.blob_reaper).map_err(|e| e.in_file(&self.mfile, Some(rec_off)))?;
        Ok(())
    }
}

impl VersionSet {
    pub(crate) fn new_empty(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        icmp: InternalKeyComparator,
        num_levels: usize,
    ) -> Self {
        let mut cfs = BTreeMap::new();
        cfs.insert(0, CfVersion::new(DEFAULT_COLUMN_FAMILY_NAME, icmp, num_levels));
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            cfs,
            skipped_cfs: BTreeMap::new(),
            max_column_family: 0,
            next_file_number: 2,
            last_sequence: 0,
            prev_log_number: 0,
            min_log_number_to_keep: 0,
            manifest_number: 0,
            next_epoch: 1,
            db_id: None,
            write_db_id: true,
            reaper: Arc::new(Reaper::default()),
            blob_reaper: Arc::new(BlobReaper::default()),
            manifest: None,
            manifest_broken: false,
            manifest_busy: false,
        }
    }

    /// A live family's state (an error if it was dropped meanwhile).
    pub(crate) fn cf(&self, id: u32) -> Result<&CfVersion> {
        self.cfs
            .get(&id)
            .ok_or_else(|| Error::invalid(format!("column family {id} was dropped")))
    }
    pub(crate) fn cf_mut(&mut self, id: u32) -> Result<&mut CfVersion> {
        self.cfs
            .get_mut(&id)
            .ok_or_else(|| Error::invalid(format!("column family {id} was dropped")))
    }
    /// The current version of the default family.
    #[cfg(test)]
    pub(crate) fn current(&self) -> &Arc<Version> {
        &self.cfs[&0].current
    }

    /// The oldest WAL some family may still need: WALs below it can be deleted. A family with
    /// nothing in its memtables needs none (`empty` says which; their data is all in tables).
    pub(crate) fn min_log_number(&self, empty_at: &dyn Fn(u32) -> Option<u64>) -> u64 {
        let m = self
            .cfs
            .iter()
            .map(|(id, c)| empty_at(*id).unwrap_or(c.log_number).max(c.log_number))
            .min()
            .unwrap_or(0);
        m.max(self.min_log_number_to_keep)
    }

    pub(crate) fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Make sure future file numbers are above `n`.
    pub(crate) fn mark_file_number_used(&mut self, n: u64) {
        if self.next_file_number <= n {
            self.next_file_number = n + 1;
        }
    }

    /// Every live table file of every family.
    pub(crate) fn all_files(&self) -> impl Iterator<Item = (u32, usize, &Arc<FileMeta>)> {
        self.cfs
            .iter()
            .flat_map(|(id, c)| c.current.all_files().map(move |(l, f)| (*id, l, f)))
    }

    /// Replay CURRENT and the MANIFEST it names. `lookup` gives the comparator and levels of
    /// each family the opener named; the others are recorded in `skipped_cfs`.
    pub(crate) fn recover(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        lookup: CfLookup<'_>,
        paranoid: bool,
    ) -> Result<VersionSet> {
        let mnum = read_current(dir, &*fs)?;
        let mpath = manifest_name(dir, mnum);
        let mfile = name_of(&mpath);
        let data = fs.read_all(&mpath).map_err(manifest_missing)?;
        let default = DEFAULT_COLUMN_FAMILY_NAME;
        let (dicmp, dlevels) =
            lookup(default).ok_or_else(|| Error::invalid("the default column family must be opened"))?;
        let mut vs = VersionSet::new_empty(dir, fs.clone(), dicmp, dlevels);
        vs.manifest_number = mnum;
        let mut levels: BTreeMap<u32, Levels> = BTreeMap::new();
        levels.insert(0, vec![BTreeMap::new(); dlevels]);
        let mut replay = ManifestReplay {
            vs,
            lookup,
            mfile,
            levels,
            blobs: BTreeMap::new(),
            have_log: false,
            have_next: false,
            have_last: false,
        };
        replay.replay_manifest_records(data)?;
        let ManifestReplay {
            mut vs,
            levels,
            mfile,
            mut blobs,
            ..
        } = replay;
        vs.install_recovered_levels(levels, &mut blobs, &mfile, paranoid)?;
        Ok(vs)
    }

    /// After a MANIFEST replay: each family's files (`levels`) become its current version, and
    /// the epoch, file number and sequence counters move past everything the files hold.
    fn install_recovered_levels(
        &mut self,
        levels: BTreeMap<u32, Levels>,
        blobs: &mut BTreeMap<u32, BlobFiles>,
        mfile: &str,
        paranoid: bool,
    ) -> Result<()> {
        let reaper = self.reaper.clone();
        self.install_levels(levels, blobs, mfile, paranoid, &mut |f, level| {
            FileMeta::new_at(f, reaper.clone(), level)
        })
    }

    /// [`install_recovered_levels`](Self::install_recovered_levels) with each file's `FileMeta`
    /// made by `make` (a secondary instance reuses the ones of tables it holds open).
    pub(crate) fn install_levels(
        &mut self,
        levels: BTreeMap<u32, Levels>,
        blobs: &mut BTreeMap<u32, BlobFiles>,
        mfile: &str,
        paranoid: bool,
        make: &mut dyn FnMut(FileMetaData, usize) -> Arc<FileMeta>,
    ) -> Result<()> {
        let mut max_num = 0;
        let mut max_seq = 0;
        let mut max_epoch = 0;
        for (id, mut lv) in levels {
            max_epoch = max_epoch.max(infer_epochs(&mut lv));
            let mut blob_files = blobs.remove(&id).unwrap_or_default();
            let min_oldest = min_oldest_blob(lv.iter().flat_map(|l| l.values().map(|f| f.oldest_blob_file_number)));
            // Files no table can reference any more (dropped after the last edit named them,
            // before a crash) are left to the obsolete-file scan of the open.
            retain_live(&mut blob_files, min_oldest);
            if let Some(&n) = blob_files.keys().next_back() {
                max_num = max_num.max(n);
            }
            let metas: Vec<BTreeMap<u64, Arc<FileMeta>>> = lv
                .into_iter()
                .enumerate()
                .map(|(level, l)| {
                    l.into_iter()
                        .map(|(n, f)| {
                            max_num = max_num.max(n);
                            max_seq = max_seq.max(f.largest_seqno);
                            (n, make(f, level))
                        })
                        .collect()
                })
                .collect();
            let cf = self.cf_mut(id)?;
            cf.current =
                Arc::new(build_version(&metas, &cf.icmp, paranoid, blob_files).map_err(|e| e.in_file(mfile, None))?);
        }
        self.next_epoch = max_epoch + 1;
        self.mark_file_number_used(max_num);
        self.mark_file_number_used(self.manifest_number);
        if max_seq > self.last_sequence {
            if paranoid {
                return Err(Error::corruption(
                    mfile,
                    None,
                    format!(
                        "last_sequence {} is below the largest sequence {max_seq} of a live file",
                        self.last_sequence
                    ),
                ));
            }
            self.last_sequence = max_seq;
        }
        Ok(())
    }

    /// Start a new MANIFEST holding the whole current state, then point CURRENT at it
    /// (at open; later MANIFEST switches go through [`VersionSet::prepare_edit`]).
    pub(crate) fn write_new_manifest(&mut self, db_id: &str) -> Result<()> {
        let num = self.new_file_number();
        let records = self.snapshot_records(db_id);
        let w = write_manifest_file(&self.fs, &self.dir, num, &records)?;
        install_current(&self.fs, &self.dir, num)?;
        self.switched_manifest(w, num);
        Ok(())
    }

    /// The records that open a new MANIFEST, as RocksDB's `WriteCurrentStateToManifest`: the
    /// DB id (unless `write_db_id` is off); per family an edit adding it (for all but
    /// `default`) with its comparator, then an edit with its log number and files; last the
    /// counters.
    pub(crate) fn snapshot_records(&self, db_id: &str) -> Vec<VersionEdit> {
        let mut edits = Vec::new();
        if self.write_db_id {
            edits.push(VersionEdit {
                db_id: Some(db_id.to_string()),
                ..Default::default()
            });
        }
        for (&id, cf) in &self.cfs {
            edits.push(VersionEdit {
                column_family: id,
                column_family_add: (id != 0).then(|| cf.name.clone()),
                comparator: Some(cf.icmp.user_comparator().name().to_string()),
                ..Default::default()
            });
            let mut files = VersionEdit {
                column_family: id,
                log_number: Some(cf.log_number),
                full_history_ts_low: (!cf.full_history_ts_low.is_empty()).then(|| cf.full_history_ts_low.clone()),
                ..Default::default()
            };
            for (level, f) in cf.current.all_files() {
                files.new_files.push((level as u32, f.meta.clone()));
            }
            restate(&cf.current.blob_files, &mut files);
            edits.push(files);
        }
        let mut last = VersionEdit {
            prev_log_number: Some(self.prev_log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            max_column_family: Some(self.max_column_family),
            ..Default::default()
        };
        if self.min_log_number_to_keep > 0 {
            last.min_log_number_to_keep = Some(self.min_log_number_to_keep);
        }
        edits.push(last);
        edits
    }

    /// MANIFEST `num` (already on disk, named by CURRENT) is the one edits go to now; the old
    /// one is deleted.
    fn switched_manifest(&mut self, w: log::Writer, num: u64) {
        self.manifest = Some(w);
        self.manifest_broken = false;
        let old = self.manifest_number;
        self.manifest_number = num;
        if old != 0 && old != num {
            let _ = self.fs.remove_file(&manifest_name(&self.dir, old));
        }
    }

    /// Append `edit` to the MANIFEST (synced), then install the resulting version, all at once
    /// (used at open and in tests; a running DB writes the MANIFEST without holding its mutex,
    /// through [`prepare_edit`](Self::prepare_edit) / [`finish_edit`](Self::finish_edit)).
    pub(crate) fn log_and_apply(&mut self, edit: &mut VersionEdit, last_sequence: u64, paranoid: bool) -> Result<()> {
        let mut pending = self.prepare_edit(edit, last_sequence, paranoid, None)?;
        let r = pending.write();
        self.finish_edit(pending, r)
    }

    /// First step of a MANIFEST write, under the DB mutex: check `edit` against the current
    /// version of its family, build the version it makes and the record to append, and take the
    /// MANIFEST writer (so nothing else writes it until [`finish_edit`](Self::finish_edit)). A
    /// broken MANIFEST (an earlier append or sync failed) is replaced: the pending write starts
    /// a new one holding the current state, then appends the edit there.
    /// Files the edit deletes become obsolete once no version references them.
    /// An edit adding a family (`column_family_add`) needs `new_cf`: its comparator and levels.
    pub(crate) fn prepare_edit(
        &mut self,
        edit: &mut VersionEdit,
        last_sequence: u64,
        paranoid: bool,
        new_cf: Option<(InternalKeyComparator, usize)>,
    ) -> Result<PendingEdit> {
        self.prepare_edits(std::slice::from_mut(edit), last_sequence, paranoid, new_cf)
    }

    /// [`prepare_edit`](Self::prepare_edit) for several edits (of different families) written
    /// as one atomic group (RocksDB's `InAtomicGroup`, for `atomic_flush`): recovery applies all
    /// of them or none.
    pub(crate) fn prepare_edits(
        &mut self,
        edits: &mut [VersionEdit],
        last_sequence: u64,
        paranoid: bool,
        new_cf: Option<(InternalKeyComparator, usize)>,
    ) -> Result<PendingEdit> {
        if self.manifest_busy {
            return Err(Error::invalid("internal: a MANIFEST write is already in progress"));
        }
        if self.manifest.is_none() {
            return Err(Error::invalid("database is read-only"));
        }
        let new_manifest = if self.manifest_broken {
            // First (before the edit takes the next file number) a new MANIFEST.
            let db_id = self.db_id.clone().unwrap_or_default();
            let num = self.new_file_number();
            Some((num, self.snapshot_records(&db_id)))
        } else {
            None
        };
        self.last_sequence = self.last_sequence.max(last_sequence);
        let n = edits.len();
        let mut parts = Vec::with_capacity(n);
        let mut records = Vec::with_capacity(n);
        let mut new_cf = new_cf;
        for (i, edit) in edits.iter_mut().enumerate() {
            let id = edit.column_family;
            let change = if let Some(name) = &edit.column_family_add {
                let (icmp, levels) = new_cf
                    .take()
                    .ok_or_else(|| Error::invalid("internal: column family add without options"))?;
                if self.cfs.contains_key(&id) {
                    return Err(Error::invalid(format!("internal: column family id {id} in use")));
                }
                edit.max_column_family = Some(self.max_column_family.max(id));
                CfChange::Add(CfVersion::new(name, icmp, levels))
            } else if edit.column_family_drop {
                self.cf(id)?;
                CfChange::Drop
            } else {
                CfChange::Files
            };
            edit.next_file_number = Some(self.next_file_number);
            edit.last_sequence = Some(self.last_sequence);
            if n > 1 {
                edit.remaining_entries = Some((n - 1 - i) as u32);
            }
            let (version, removed, removed_blobs) = match &change {
                CfChange::Files => {
                    let cf = self.cf(id)?;
                    if let Some(l) = edit.log_number {
                        if l < cf.log_number {
                            edit.log_number = Some(cf.log_number);
                        }
                    }
                    apply_files(cf, edit, &self.reaper, &self.blob_reaper, paranoid)?
                }
                CfChange::Add(cf) => (
                    Version::empty(cf.current.num_levels(), cf.icmp.clone()),
                    Vec::new(),
                    Vec::new(),
                ),
                CfChange::Drop => (Version::empty(0, self.cf(id)?.icmp.clone()), Vec::new(), Vec::new()),
            };
            let mut record = Vec::new();
            edit.encode(&mut record);
            records.push(record);
            parts.push(PendingPart {
                cf: id,
                change,
                version,
                log_number: edit.log_number,
                min_log_number_to_keep: edit.min_log_number_to_keep,
                obsolete: removed,
                obsolete_blobs: removed_blobs,
            });
        }
        self.manifest_busy = true;
        Ok(PendingEdit {
            fs: self.fs.clone(),
            dir: self.dir.clone(),
            writer: if new_manifest.is_some() {
                None
            } else {
                self.manifest.take()
            },
            new_manifest,
            records,
            parts,
        })
    }

    /// Last step of a MANIFEST write, under the DB mutex again: with the write's result `r`,
    /// install the new version, or keep the old one and mark the MANIFEST broken.
    pub(crate) fn finish_edit(&mut self, pending: PendingEdit, r: Result<()>) -> Result<()> {
        self.manifest_busy = false;
        let PendingEdit {
            writer,
            new_manifest,
            parts,
            ..
        } = pending;
        match (new_manifest, writer) {
            // A new MANIFEST was written and CURRENT names it.
            (Some((num, _)), Some(w)) if r.is_ok() => self.switched_manifest(w, num),
            // A plain append: the writer goes back (on failure it stays, marked broken below).
            (None, Some(w)) => self.manifest = Some(w),
            // A failed switch: the old (broken) writer is still in place.
            _ => {}
        }
        if let Err(e) = r {
            // The edit may or may not be durable: the caller must keep every file it names.
            self.manifest_broken = true;
            return Err(e);
        }
        for p in parts {
            self.install_part(p)?;
        }
        Ok(())
    }

    fn install_part(&mut self, p: PendingPart) -> Result<()> {
        let PendingPart {
            cf,
            change,
            version,
            log_number,
            min_log_number_to_keep,
            obsolete,
            obsolete_blobs,
        } = p;
        if let Some(n) = min_log_number_to_keep {
            self.min_log_number_to_keep = n;
        }
        match change {
            CfChange::Add(mut c) => {
                if let Some(n) = log_number {
                    c.log_number = n;
                }
                self.max_column_family = self.max_column_family.max(cf);
                self.cfs.insert(cf, c);
            }
            CfChange::Drop => {
                // The family's files are obsolete, but stay on disk while a handle, iterator or
                // snapshot of the family still holds one of its versions.
                if let Some(c) = self.cfs.remove(&cf) {
                    for (_, f) in c.current.all_files() {
                        f.life.obsolete.store(true, AtOrd::Release);
                    }
                    for b in c.current.blob_files.values() {
                        b.mark_obsolete();
                    }
                }
            }
            CfChange::Files => {
                let c = self.cf_mut(cf)?;
                if let Some(n) = log_number {
                    c.log_number = n;
                }
                for f in obsolete {
                    f.life.obsolete.store(true, AtOrd::Release);
                }
                for b in obsolete_blobs {
                    b.mark_obsolete();
                }
                c.current = Arc::new(version);
            }
        }
        Ok(())
    }
}

/// The names of the live column families in the MANIFEST of the DB at `dir`, by id (`default`
/// first), as RocksDB's `ListColumnFamilies`.
pub(crate) fn list_column_families(fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<Vec<String>> {
    let cur_path = current_name(dir);
    let cur = fs.read_all(&cur_path)?;
    let text = String::from_utf8_lossy(&cur);
    let mname = text.trim_end();
    let mnum = match super::filename::parse_file_name(mname) {
        Some(super::filename::FileType::Manifest(n)) => n,
        _ => {
            return Err(Error::corruption(
                name_of(&cur_path),
                Some(0),
                format!("CURRENT names {mname:?}, not a MANIFEST"),
            ))
        }
    };
    let mpath = manifest_name(dir, mnum);
    let mfile = name_of(&mpath);
    let data = fs.read_all(&mpath)?;
    let mut cfs: BTreeMap<u32, String> = BTreeMap::new();
    cfs.insert(0, DEFAULT_COLUMN_FAMILY_NAME.to_string());
    let mut reader = log::Reader::new(data, mfile.clone(), 0, DBRecoveryMode::TolerateCorruptedTailRecords);
    while let Some(rec) = reader.read_record()? {
        let edit = VersionEdit::decode(rec);
        let off = reader.last_record_offset();
        let edit = edit.map_err(|e| e.in_file(&mfile, Some(off)))?;
        if let Some(name) = edit.column_family_add {
            cfs.insert(edit.column_family, name);
        } else if edit.column_family_drop {
            cfs.remove(&edit.column_family);
        }
    }
    Ok(cfs.into_values().collect())
}

/// Infer epoch numbers if any live file of a family lacks one (as RocksDB does); returns the
/// largest epoch.
fn infer_epochs(levels: &mut Levels) -> u64 {
    let num_levels = levels.len();
    let any_missing = levels.iter().any(|l| l.values().any(|f| f.epoch_number == 0));
    if !any_missing {
        return levels
            .iter()
            .flat_map(|l| l.values().map(|f| f.epoch_number))
            .max()
            .unwrap_or(0);
    }
    let mut epoch = 1u64;
    for level in (1..num_levels).rev() {
        if !levels[level].is_empty() {
            for f in levels[level].values_mut() {
                f.epoch_number = epoch;
            }
            epoch += 1;
        }
    }
    if let Some(l0) = levels.first_mut() {
        let mut l0: Vec<&mut FileMetaData> = l0.values_mut().collect();
        l0.sort_by_key(|f| (f.largest_seqno, f.number));
        for f in l0 {
            f.epoch_number = epoch;
            epoch += 1;
        }
    }
    epoch - 1
}

/// The version `edit` makes from `cf`'s current one, the files it removes (not moved) and the
/// blob files it drops.
fn apply_files(
    cf: &CfVersion,
    edit: &VersionEdit,
    reaper: &Arc<Reaper>,
    blob_reaper: &Arc<BlobReaper>,
    paranoid: bool,
) -> Result<FilesApplied> {
    let num_levels = cf.current.num_levels();
    let mut levels: Vec<BTreeMap<u64, Arc<FileMeta>>> = cf
        .current
        .files
        .iter()
        .map(|l| l.iter().map(|f| (f.number(), f.clone())).collect())
        .collect();
    let mut removed = Vec::new();
    for (level, num) in &edit.deleted_files {
        if let Some(f) = levels.get_mut(*level as usize).and_then(|l| l.remove(num)) {
            removed.push(f);
        }
    }
    for (level, f) in &edit.new_files {
        let level = *level as usize;
        if level >= num_levels {
            return Err(Error::invalid(format!("level {level} out of range")));
        }
        // A file moved from another level (a trivial move) shares the removed entry's life,
        // so it is not deleted while an older version still holds it at the old level.
        // It shares the open table and loaded range tombstones too.
        let meta = match removed.iter().find(|r: &&Arc<FileMeta>| r.number() == f.number) {
            Some(r) => FileMeta::with_life(f.clone(), r.life.clone(), level),
            None => FileMeta::new_at(f.clone(), reaper.clone(), level),
        };
        levels[level].insert(f.number, meta);
    }
    let mut blob_files = apply_blob_edit(&cf.current.blob_files, edit, blob_reaper)?;
    let min_oldest = min_oldest_blob(
        levels
            .iter()
            .flat_map(|l| l.values().map(|f| f.meta.oldest_blob_file_number)),
    );
    let removed_blobs = retain_live(&mut blob_files, min_oldest);
    let version = build_version(&levels, &cf.icmp, paranoid, blob_files)?;
    // Files moved between levels (trivial moves) are re-added: they must not be reaped.
    removed.retain(|f| !edit.new_files.iter().any(|(_, nf)| nf.number == f.number()));
    Ok((version, removed, removed_blobs))
}

/// What [`apply_files`] makes: the new version, the tables it removes, the blob files it drops.
type FilesApplied = (Version, Vec<Arc<FileMeta>>, Vec<Arc<BlobFileMeta>>);

/// What a pending edit does to the set of families.
pub(crate) enum CfChange {
    /// Files added or removed (a flush, compaction or recovery).
    Files,
    Add(CfVersion),
    Drop,
}

/// A MANIFEST write between [`VersionSet::prepare_edit`] and [`VersionSet::finish_edit`]; its
/// [`write`](PendingEdit::write) does the file I/O and needs no lock (the MANIFEST writer is
/// held here, so there is one such write at a time).
pub(crate) struct PendingEdit {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    writer: Option<log::Writer>,
    /// Replace a broken MANIFEST: the new file's number and its opening records.
    new_manifest: Option<(u64, Vec<VersionEdit>)>,
    /// The encoded edits, appended in one write and one sync.
    records: Vec<Vec<u8>>,
    parts: Vec<PendingPart>,
}

/// What one edit of a pending write installs.
struct PendingPart {
    cf: u32,
    change: CfChange,
    version: Version,
    log_number: Option<u64>,
    min_log_number_to_keep: Option<u64>,
    /// Files the edit removes (not moved): obsolete once it is installed.
    obsolete: Vec<Arc<FileMeta>>,
    /// Blob files the edit drops: obsolete once it is installed.
    obsolete_blobs: Vec<Arc<BlobFileMeta>>,
}

impl PendingEdit {
    /// Append the edit and sync (starting a new MANIFEST and switching CURRENT first if the
    /// old one is broken).
    pub(crate) fn write(&mut self) -> Result<()> {
        if let Some((num, records)) = &self.new_manifest {
            let mut w = write_manifest_file(&self.fs, &self.dir, *num, records)?;
            for r in &self.records {
                w.add_record(r)?;
            }
            w.sync()?;
            install_current(&self.fs, &self.dir, *num)?;
            self.writer = Some(w);
            return Ok(());
        }
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::invalid("internal: no MANIFEST writer"))?;
        for r in &self.records {
            w.add_record(r)?;
        }
        w.sync()
    }
}

/// Create MANIFEST `num` holding `records`, synced.
pub(crate) fn write_manifest_file(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    num: u64,
    edits: &[VersionEdit],
) -> Result<log::Writer> {
    let file = fs.new_writable(&manifest_name(dir, num))?;
    let mut w = log::Writer::new(file);
    for e in edits {
        let mut buf = Vec::new();
        e.encode(&mut buf);
        w.add_record(&buf)?;
    }
    w.sync()?;
    Ok(w)
}

/// Atomically point CURRENT at MANIFEST `num`: temp file, sync, rename, directory sync.
pub(crate) fn install_current(fs: &Arc<dyn FileSystem>, dir: &Path, num: u64) -> Result<()> {
    let tmp = temp_name(dir, num);
    let mut f = fs.new_writable(&tmp)?;
    f.append(format!("MANIFEST-{num:06}\n").as_bytes())?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &current_name(dir))?;
    fs.sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use crate::key::{make_internal_key, vt};

    fn file(number: u64, lo: &str, hi: &str) -> FileMetaData {
        FileMetaData {
            number,
            file_size: 100,
            smallest: make_internal_key(lo.as_bytes(), number, vt::VALUE),
            largest: make_internal_key(hi.as_bytes(), number, vt::VALUE),
            smallest_seqno: number,
            largest_seqno: number,
            epoch_number: number,
            ..Default::default()
        }
    }

    fn apply(vs: &mut VersionSet, deleted: &[(u32, u64)], new: &[(u32, FileMetaData)]) {
        let mut edit = VersionEdit {
            deleted_files: deleted.to_vec(),
            new_files: new.to_vec(),
            ..Default::default()
        };
        vs.log_and_apply(&mut edit, 100, true).unwrap();
    }

    /// A trivial move re-adds a file at another level. An older version (an iterator's) still
    /// holding the file at its old level must keep it on disk after a later compaction removed
    /// it from the new level: the file is reaped only once no version at any level holds it.
    #[test]
    fn a_moved_file_is_reaped_only_when_no_version_holds_it_at_any_level() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut vs = VersionSet::new_empty(Path::new("/db"), fs, InternalKeyComparator::default(), 7);
        vs.write_new_manifest("id").unwrap();
        apply(&mut vs, &[], &[(1, file(10, "a", "c"))]);
        let held_at_l1 = vs.current().clone();
        apply(&mut vs, &[(1, 10)], &[(2, file(10, "a", "c"))]);
        let held_at_l2 = vs.current().clone();
        assert!(vs.reaper.take().is_empty(), "a moved file is not obsolete");
        // what one copy loads (open table, range tombstones) the other sees
        held_at_l1.files[1][0].range_dels().set(None).unwrap();
        assert!(held_at_l2.files[2][0].range_dels().get().is_some());
        // A compaction rewrites the moved file into file 11.
        apply(&mut vs, &[(2, 10)], &[(2, file(11, "a", "c"))]);
        drop(held_at_l2);
        assert!(
            vs.reaper.take().is_empty(),
            "file 10 was reaped while a version still holds it at level 1"
        );
        assert_eq!(held_at_l1.files[1][0].number(), 10);
        drop(held_at_l1);
        assert_eq!(vs.reaper.take(), vec![10]);
        // A file removed without a move is reaped as soon as the last version holding it goes.
        apply(&mut vs, &[(2, 11)], &[]);
        assert_eq!(vs.reaper.take(), vec![11]);
    }

    fn lookup_all(_: &str) -> Option<(InternalKeyComparator, usize)> {
        Some((InternalKeyComparator::default(), 7))
    }

    /// Replace the MANIFEST CURRENT names with its first `keep` bytes.
    fn truncate_manifest(fs: &Arc<dyn FileSystem>, vs: &VersionSet, cut: usize) {
        let p = manifest_name(Path::new("/db"), vs.manifest_number);
        let data = fs.read_all(&p).unwrap();
        let mut f = fs.new_writable(&p).unwrap();
        f.append(&data[..data.len() - cut]).unwrap();
        f.sync().unwrap();
    }

    fn two_family_set() -> (Arc<dyn FileSystem>, VersionSet) {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let mut vs = VersionSet::new_empty(Path::new("/db"), fs.clone(), InternalKeyComparator::default(), 7);
        vs.write_new_manifest("id").unwrap();
        let mut add = VersionEdit {
            column_family: 1,
            column_family_add: Some("one".into()),
            log_number: Some(0),
            ..Default::default()
        };
        let mut p = vs
            .prepare_edit(&mut add, 0, true, Some((InternalKeyComparator::default(), 7)))
            .unwrap();
        let r = p.write();
        vs.finish_edit(p, r).unwrap();
        (fs, vs)
    }

    /// An atomic flush's edits are applied together at recovery, or not at all when the group
    /// was cut short by a crash.
    #[test]
    fn an_atomic_group_is_recovered_whole_or_not_at_all() {
        let (fs, mut vs) = two_family_set();
        let mut edits = vec![
            VersionEdit {
                column_family: 0,
                new_files: vec![(0, file(10, "a", "b"))],
                ..Default::default()
            },
            VersionEdit {
                column_family: 1,
                new_files: vec![(0, file(11, "a", "b"))],
                ..Default::default()
            },
        ];
        let mut p = vs.prepare_edits(&mut edits, 100, true, None).unwrap();
        let r = p.write();
        vs.finish_edit(p, r).unwrap();
        assert_eq!(edits[0].remaining_entries, Some(1));
        assert_eq!(edits[1].remaining_entries, Some(0));
        let back = VersionSet::recover(Path::new("/db"), fs.clone(), &lookup_all, true).unwrap();
        assert_eq!(back.cfs[&0].current.num_files(0), 1);
        assert_eq!(back.cfs[&1].current.num_files(0), 1);
        assert_eq!(back.cfs[&1].name, "one");
        // Cut the group's last record: neither family gets its file.
        let mut last = Vec::new();
        edits[1].encode(&mut last);
        truncate_manifest(&fs, &vs, last.len() + 7);
        let back = VersionSet::recover(Path::new("/db"), fs, &lookup_all, true).unwrap();
        assert_eq!(
            back.cfs[&0].current.num_files(0),
            0,
            "half of an atomic group was applied"
        );
        assert_eq!(back.cfs[&1].current.num_files(0), 0);
    }

    /// A file edit for a family the MANIFEST never added is corruption, not data put elsewhere.
    #[test]
    fn an_edit_for_an_unknown_family_is_corruption() {
        let (fs, vs) = two_family_set();
        let p = manifest_name(Path::new("/db"), vs.manifest_number);
        let mut r = log::Reader::new(
            fs.read_all(&p).unwrap(),
            "m",
            0,
            DBRecoveryMode::TolerateCorruptedTailRecords,
        );
        let mut recs: Vec<Vec<u8>> = Vec::new();
        while let Some(x) = r.read_record().unwrap() {
            recs.push(x.to_vec());
        }
        let stray = VersionEdit {
            column_family: 5,
            new_files: vec![(0, file(12, "a", "b"))],
            ..Default::default()
        };
        let mut rec = Vec::new();
        stray.encode(&mut rec);
        recs.push(rec);
        let mut w = log::Writer::new(fs.new_writable(&p).unwrap());
        for x in &recs {
            w.add_record(x).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let e = VersionSet::recover(Path::new("/db"), fs, &lookup_all, true)
            .err()
            .unwrap();
        assert!(
            e.is_corruption() && e.to_string().contains("unknown column family 5"),
            "{e}"
        );
    }
}
