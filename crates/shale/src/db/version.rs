//! Versions (the set of live table files per level) and the VersionSet that persists them in the
//! MANIFEST, as RocksDB's `version_set.cc` / `version_builder.cc` do.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtOrd};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::filename::{current_name, manifest_name, temp_name};
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::key::{user_key, InternalKeyComparator};
use crate::log;
use crate::log::WalRecoveryMode;
use crate::table::any::AnyTable;
use crate::version_edit::{FileMetaData, VersionEdit};

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
    fn with_life(meta: FileMetaData, life: Arc<FileLife>, level: usize) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            meta,
            level0: level == 0,
            life,
        })
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
}

/// An immutable view of the table files of every level.
pub(crate) struct Version {
    pub files: Vec<Vec<Arc<FileMeta>>>,
    pub icmp: InternalKeyComparator,
}

impl Version {
    pub(crate) fn empty(num_levels: usize, icmp: InternalKeyComparator) -> Version {
        Version {
            files: vec![Vec::new(); num_levels],
            icmp,
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
    })
}

/// The persistent state: current version, counters and the open MANIFEST.
pub(crate) struct VersionSet {
    pub dir: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    pub icmp: InternalKeyComparator,
    pub current: Arc<Version>,
    pub next_file_number: u64,
    /// Last sequence persisted in the MANIFEST (the DB tracks the live one).
    pub last_sequence: u64,
    pub log_number: u64,
    pub prev_log_number: u64,
    pub min_log_number_to_keep: u64,
    pub manifest_number: u64,
    pub next_epoch: u64,
    pub db_id: Option<String>,
    pub reaper: Arc<Reaper>,
    manifest: Option<log::Writer>,
    /// An append or sync of the MANIFEST failed: it may end in a torn or unsynced record, so
    /// nothing more is appended to it; the next edit starts a new MANIFEST first (as RocksDB).
    manifest_broken: bool,
    /// A MANIFEST write is between `prepare_edit` and `finish_edit` (its writer is out).
    pub manifest_busy: bool,
    /// Per-level key where the next size compaction of that level starts.
    pub compact_cursor: Vec<Vec<u8>>,
}

impl VersionSet {
    pub(crate) fn new_empty(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        icmp: InternalKeyComparator,
        num_levels: usize,
    ) -> Self {
        VersionSet {
            dir: dir.to_path_buf(),
            fs,
            current: Arc::new(Version::empty(num_levels, icmp.clone())),
            icmp,
            next_file_number: 2,
            last_sequence: 0,
            log_number: 0,
            prev_log_number: 0,
            min_log_number_to_keep: 0,
            manifest_number: 0,
            next_epoch: 1,
            db_id: None,
            reaper: Arc::new(Reaper::default()),
            manifest: None,
            manifest_broken: false,
            manifest_busy: false,
            compact_cursor: vec![Vec::new(); num_levels],
        }
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

    /// Replay CURRENT and the MANIFEST it names.
    pub(crate) fn recover(
        dir: &Path,
        fs: Arc<dyn FileSystem>,
        icmp: InternalKeyComparator,
        num_levels: usize,
        paranoid: bool,
    ) -> Result<VersionSet> {
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
        let mnum = match super::filename::parse_file_name(mname) {
            Some(super::filename::FileType::Manifest(n)) => n,
            _ => {
                return Err(Error::corruption(
                    &cur_name,
                    Some(0),
                    format!("CURRENT names {mname:?}, not a MANIFEST"),
                ))
            }
        };
        let mpath = manifest_name(dir, mnum);
        let mfile = name_of(&mpath);
        let data = fs.read_all(&mpath).map_err(|e| match e {
            Error::Io { file, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::corruption(file, None, "MANIFEST named by CURRENT is missing")
            }
            e => e,
        })?;
        let mut vs = VersionSet::new_empty(dir, fs.clone(), icmp.clone(), num_levels);
        vs.manifest_number = mnum;
        let reaper = vs.reaper.clone();
        let mut levels: Vec<BTreeMap<u64, FileMetaData>> = vec![BTreeMap::new(); num_levels];
        let mut have_log = false;
        let mut have_next = false;
        let mut have_last = false;
        // As RocksDB (VersionSet::Recover reads with kTolerateCorruptedTailRecords): a record torn by
        // a crash in the middle of an append ends the MANIFEST; a bad record before the end is
        // still an error. Only fully synced edits were acted upon, so the torn one is not needed.
        let mut reader = log::Reader::new(data, mfile.clone(), 0, WalRecoveryMode::TolerateCorruptedTailRecords);
        while let Some(rec) = reader.read_record()? {
            let edit = VersionEdit::decode(rec);
            let rec_off = reader.last_record_offset();
            let edit = edit.map_err(|e| e.in_file(&mfile, Some(rec_off)))?;
            if let Some(name) = &edit.column_family_add {
                return Err(Error::NotSupported(format!(
                    "{mfile}: column family {name:?} (only the default column family is supported)"
                )));
            }
            if edit.column_family != 0 {
                return Err(Error::NotSupported(format!(
                    "{mfile}: edit for column family {} (only the default column family is supported)",
                    edit.column_family
                )));
            }
            if let Some(c) = &edit.comparator {
                if c != icmp.user_comparator().name() {
                    return Err(Error::invalid(format!(
                        "comparator: the database was created with comparator {c:?}, but was opened with {:?}",
                        icmp.user_comparator().name()
                    )));
                }
            }
            if let Some(n) = edit.log_number {
                if n >= vs.log_number {
                    vs.log_number = n;
                }
                have_log = true;
            }
            if let Some(n) = edit.prev_log_number {
                vs.prev_log_number = n;
            }
            if let Some(n) = edit.next_file_number {
                vs.next_file_number = n;
                have_next = true;
            }
            if let Some(n) = edit.last_sequence {
                vs.last_sequence = vs.last_sequence.max(n);
                have_last = true;
            }
            if let Some(n) = edit.min_log_number_to_keep {
                vs.min_log_number_to_keep = vs.min_log_number_to_keep.max(n);
            }
            if let Some(id) = &edit.db_id {
                vs.db_id = Some(id.clone());
            }
            for (level, num) in &edit.deleted_files {
                if let Some(l) = levels.get_mut(*level as usize) {
                    l.remove(num);
                }
            }
            for (level, f) in &edit.new_files {
                let level = *level as usize;
                if level >= num_levels {
                    return Err(Error::corruption(
                        &mfile,
                        Some(rec_off),
                        format!("file {} at level {level}, but num_levels is {num_levels}", f.number),
                    ));
                }
                levels[level].insert(f.number, f.clone());
            }
        }
        if !(have_log && have_next && have_last) {
            return Err(Error::corruption(
                &mfile,
                None,
                "no log_file_number, next_file_number or last_sequence entry in MANIFEST",
            ));
        }
        // Infer epoch numbers if any live file lacks one (as RocksDB does).
        let any_missing = levels.iter().any(|l| l.values().any(|f| f.epoch_number == 0));
        let mut max_epoch = 0;
        if any_missing {
            let mut epoch = 1u64;
            for level in (1..num_levels).rev() {
                if !levels[level].is_empty() {
                    for f in levels[level].values_mut() {
                        f.epoch_number = epoch;
                    }
                    epoch += 1;
                }
            }
            let mut l0: Vec<&mut FileMetaData> = levels[0].values_mut().collect();
            l0.sort_by_key(|f| (f.largest_seqno, f.number));
            for f in l0 {
                f.epoch_number = epoch;
                epoch += 1;
            }
            max_epoch = epoch - 1;
        } else {
            for l in &levels {
                for f in l.values() {
                    max_epoch = max_epoch.max(f.epoch_number);
                }
            }
        }
        vs.next_epoch = max_epoch + 1;
        let mut max_num = 0;
        let mut max_seq = 0;
        let metas: Vec<BTreeMap<u64, Arc<FileMeta>>> = levels
            .into_iter()
            .enumerate()
            .map(|(level, l)| {
                l.into_iter()
                    .map(|(n, f)| {
                        max_num = max_num.max(n);
                        max_seq = max_seq.max(f.largest_seqno);
                        (n, FileMeta::new_at(f, reaper.clone(), level))
                    })
                    .collect()
            })
            .collect();
        vs.current = Arc::new(build_version(&metas, &icmp, paranoid).map_err(|e| e.in_file(&mfile, None))?);
        vs.mark_file_number_used(max_num);
        vs.mark_file_number_used(mnum);
        if max_seq > vs.last_sequence {
            if paranoid {
                return Err(Error::corruption(
                    &mfile,
                    None,
                    format!(
                        "last_sequence {} is below the largest sequence {max_seq} of a live file",
                        vs.last_sequence
                    ),
                ));
            }
            vs.last_sequence = max_seq;
        }
        Ok(vs)
    }

    /// Start a new MANIFEST holding the whole current state, then point CURRENT at it
    /// (at open; later MANIFEST switches go through [`VersionSet::prepare_edit`]).
    pub(crate) fn write_new_manifest(&mut self, db_id: &str, comparator: &str) -> Result<()> {
        let num = self.new_file_number();
        let records = self.snapshot_records(db_id, comparator);
        let w = write_manifest_file(&self.fs, &self.dir, num, &records)?;
        install_current(&self.fs, &self.dir, num)?;
        self.switched_manifest(w, num);
        Ok(())
    }

    /// The records that open a new MANIFEST: the DB id, the comparator, and the whole current
    /// state as one edit.
    fn snapshot_records(&self, db_id: &str, comparator: &str) -> Vec<Vec<u8>> {
        let mut snap = VersionEdit {
            log_number: Some(self.log_number),
            prev_log_number: Some(self.prev_log_number),
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            ..Default::default()
        };
        if self.min_log_number_to_keep > 0 {
            snap.min_log_number_to_keep = Some(self.min_log_number_to_keep);
        }
        for (level, f) in self.current.all_files() {
            snap.new_files.push((level as u32, f.meta.clone()));
        }
        let edits = [
            VersionEdit {
                db_id: Some(db_id.to_string()),
                ..Default::default()
            },
            VersionEdit {
                comparator: Some(comparator.to_string()),
                ..Default::default()
            },
            snap,
        ];
        edits
            .iter()
            .map(|e| {
                let mut buf = Vec::new();
                e.encode(&mut buf);
                buf
            })
            .collect()
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
        let mut pending = self.prepare_edit(edit, last_sequence, paranoid)?;
        let r = pending.write();
        self.finish_edit(pending, r)
    }

    /// First step of a MANIFEST write, under the DB mutex: check `edit` against the current
    /// version, build the version it makes and the record to append, and take the MANIFEST
    /// writer (so nothing else writes it until [`finish_edit`](Self::finish_edit)). A broken
    /// MANIFEST (an earlier append or sync failed) is replaced: the pending write starts a new
    /// one holding the current state, then appends the edit there.
    /// Files the edit deletes become obsolete once no version references them.
    pub(crate) fn prepare_edit(
        &mut self,
        edit: &mut VersionEdit,
        last_sequence: u64,
        paranoid: bool,
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
            let cmp = self.icmp.user_comparator().name().to_string();
            let num = self.new_file_number();
            Some((num, self.snapshot_records(&db_id, &cmp)))
        } else {
            None
        };
        if let Some(n) = edit.log_number {
            if n < self.log_number {
                edit.log_number = Some(self.log_number);
            }
        }
        self.last_sequence = self.last_sequence.max(last_sequence);
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        let num_levels = self.current.num_levels();
        let mut levels: Vec<BTreeMap<u64, Arc<FileMeta>>> = self
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
                None => FileMeta::new_at(f.clone(), self.reaper.clone(), level),
            };
            levels[level].insert(f.number, meta);
        }
        let version = build_version(&levels, &self.icmp, paranoid)?;
        let mut record = Vec::new();
        edit.encode(&mut record);
        // Files moved between levels (trivial moves) are re-added: they must not be reaped.
        removed.retain(|f| !edit.new_files.iter().any(|(_, nf)| nf.number == f.number()));
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
            record,
            version,
            log_number: edit.log_number,
            min_log_number_to_keep: edit.min_log_number_to_keep,
            obsolete: removed,
        })
    }

    /// Last step of a MANIFEST write, under the DB mutex again: with the write's result `r`,
    /// install the new version, or keep the old one and mark the MANIFEST broken.
    pub(crate) fn finish_edit(&mut self, pending: PendingEdit, r: Result<()>) -> Result<()> {
        self.manifest_busy = false;
        let PendingEdit {
            writer,
            new_manifest,
            version,
            log_number,
            min_log_number_to_keep,
            obsolete,
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
        if let Some(n) = log_number {
            self.log_number = n;
        }
        if let Some(n) = min_log_number_to_keep {
            self.min_log_number_to_keep = n;
        }
        for f in obsolete {
            f.life.obsolete.store(true, AtOrd::Release);
        }
        self.current = Arc::new(version);
        Ok(())
    }
}

/// A MANIFEST write between [`VersionSet::prepare_edit`] and [`VersionSet::finish_edit`]; its
/// [`write`](PendingEdit::write) does the file I/O and needs no lock (the MANIFEST writer is
/// held here, so there is one such write at a time).
pub(crate) struct PendingEdit {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    writer: Option<log::Writer>,
    /// Replace a broken MANIFEST: the new file's number and its opening records.
    new_manifest: Option<(u64, Vec<Vec<u8>>)>,
    record: Vec<u8>,
    version: Version,
    log_number: Option<u64>,
    min_log_number_to_keep: Option<u64>,
    /// Files the edit removes (not moved): obsolete once it is installed.
    obsolete: Vec<Arc<FileMeta>>,
}

impl PendingEdit {
    /// Append the edit and sync (starting a new MANIFEST and switching CURRENT first if the
    /// old one is broken).
    pub(crate) fn write(&mut self) -> Result<()> {
        if let Some((num, records)) = &self.new_manifest {
            let mut w = write_manifest_file(&self.fs, &self.dir, *num, records)?;
            w.add_record(&self.record)?;
            w.sync()?;
            install_current(&self.fs, &self.dir, *num)?;
            self.writer = Some(w);
            return Ok(());
        }
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::invalid("internal: no MANIFEST writer"))?;
        w.add_record(&self.record)?;
        w.sync()
    }
}

/// Create MANIFEST `num` holding `records`, synced.
fn write_manifest_file(fs: &Arc<dyn FileSystem>, dir: &Path, num: u64, records: &[Vec<u8>]) -> Result<log::Writer> {
    let file = fs.new_writable(&manifest_name(dir, num))?;
    let mut w = log::Writer::new(file);
    for r in records {
        w.add_record(r)?;
    }
    w.sync()?;
    Ok(w)
}

/// Atomically point CURRENT at MANIFEST `num`: temp file, sync, rename, directory sync.
fn install_current(fs: &Arc<dyn FileSystem>, dir: &Path, num: u64) -> Result<()> {
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
        vs.write_new_manifest("id", "leveldb.BytewiseComparator").unwrap();
        apply(&mut vs, &[], &[(1, file(10, "a", "c"))]);
        let held_at_l1 = vs.current.clone();
        apply(&mut vs, &[(1, 10)], &[(2, file(10, "a", "c"))]);
        let held_at_l2 = vs.current.clone();
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
}
