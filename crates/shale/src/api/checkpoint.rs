//! Checkpoints (RocksDB's `Checkpoint::CreateCheckpoint`), the file-deletion switch and the
//! live-file listings backups and replication build on (`get_live_files`, `live_files`,
//! `get_sorted_wal_files`). The format of a checkpoint is in `docs/checkpoint-backup.md`.
//!
//! A capture ([`capture`]) holds file deletions off, optionally flushes, then under the DB mutex
//! takes the whole persistent state (every family, its log number and files: the records of a
//! new MANIFEST) and, under the WAL lock, the length of the current WAL after pushing its buffer
//! to the OS, so the copy ends at a record boundary. Writes go on meanwhile; files named by the
//! capture are not deleted until it is dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::db::DB;
use crate::engine::manual;
use crate::engine::state::DbInner;
use crate::engine::wal_files;
use crate::error::{Error, Result};
use crate::fs::{copy_file, name_of, FileSystem};
use crate::lsm::filename::{table_name, wal_name, FileType};
use crate::lsm::version::Version;
use crate::lsm::version_edit::VersionEdit;
use crate::options::file::options_file_name;

/// Holds file deletions off while it lives (`disable_file_deletions` until dropped); when the
/// count returns to 0 the files that became obsolete meanwhile are deleted.
pub(crate) struct DeletionHold {
    db: Arc<DbInner>,
}

impl DeletionHold {
    pub(crate) fn new(db: &Arc<DbInner>) -> DeletionHold {
        db.state.lock().file_deletions_disabled += 1;
        DeletionHold { db: db.clone() }
    }
}

impl Drop for DeletionHold {
    fn drop(&mut self) {
        enable_deletions(&self.db);
    }
}

/// Take one count off the deletion switch; at 0, delete what became obsolete meanwhile.
fn enable_deletions(db: &DbInner) {
    let mut st = db.state.lock();
    st.file_deletions_disabled = st.file_deletions_disabled.saturating_sub(1);
    if st.file_deletions_disabled == 0 && !db.read_only {
        crate::engine::purge::purge_obsolete(db, &mut st);
        let min_log = wal_files::min_log_needed(db, &st);
        wal_files::delete_obsolete_wals(db, &st, min_log);
    }
}

/// A WAL to copy: its number, and for the one being written the length to copy.
pub(crate) struct CapturedWal {
    pub number: u64,
    pub len: Option<u64>,
}

/// A consistent set of files making up the DB at one point in time.
pub(crate) struct Capture {
    pub db_path: PathBuf,
    pub fs: Arc<dyn FileSystem>,
    /// The records of a MANIFEST holding the captured state, and the number to name it.
    pub records: Vec<VersionEdit>,
    pub manifest_number: u64,
    /// Table files (number, size).
    pub tables: Vec<(u64, u64)>,
    /// Blob files (numbers).
    pub blobs: Vec<u64>,
    pub wals: Vec<CapturedWal>,
    /// The OPTIONS file's number and contents (every captured family).
    pub options_number: u64,
    pub options: String,
    /// The sequence number published when the state was taken.
    pub sequence: u64,
    /// The captured versions: their files stay referenced.
    _versions: Vec<Arc<Version>>,
    _hold: DeletionHold,
}

/// When to flush the memtables before capturing.
pub(crate) enum FlushFirst {
    Always,
    Never,
    /// Flush if the live WALs hold at least this many bytes (RocksDB's `log_size_for_flush`).
    IfWalsReach(u64),
}

/// Capture the DB's files (see the module comment).
pub(crate) fn capture(db: &Arc<DbInner>, flush_first: FlushFirst) -> Result<Capture> {
    if db.read_only {
        return Err(Error::NotSupported(
            "checkpoint or backup of a database opened read-only".into(),
        ));
    }
    let hold = DeletionHold::new(db);
    let flush_now = match flush_first {
        FlushFirst::Always => true,
        FlushFirst::Never => false,
        FlushFirst::IfWalsReach(limit) => {
            let wal = db.wal.lock();
            let current = wal.writer.as_ref().map_or(0, |w| w.file_size());
            wal.alive.iter().map(|(_, b)| *b).sum::<u64>() + current >= limit
        }
    };
    if flush_now {
        let all: Vec<u32> = db.cfs.read().by_id.keys().copied().collect();
        manual::flush_and_wait(db, all)?;
    }
    let st = db.state.lock();
    DbInner::check_bg_error(&st)?;
    let records = st.versions.snapshot_records(&db.db_id);
    let manifest_number = st.versions.manifest_number;
    let options_number = st.versions.next_file_number;
    let mut tables = Vec::new();
    let mut blobs = Vec::new();
    let mut versions = Vec::new();
    let mut names = Vec::new();
    for c in st.versions.cfs.values() {
        versions.push(c.current.clone());
        names.push(c.name.clone());
        tables.extend(c.current.all_files().map(|(_, f)| (f.meta.number, f.meta.file_size)));
        blobs.extend(c.current.blob_files.keys().copied());
    }
    let min_log = wal_files::min_log_needed(db, &st);
    let (current_wal, current_len) = {
        let mut wal = db.wal.lock();
        let number = wal.number;
        let len = match wal.writer.as_mut() {
            Some(w) => {
                w.flush()?;
                w.file_size()
            }
            None => 0,
        };
        (number, len)
    };
    let sequence = db.last_seq.load(std::sync::atomic::Ordering::Acquire);
    drop(st);

    let mut wals = Vec::new();
    for n in db.fs.list(&db.path)? {
        if let Some(FileType::Wal(num)) = crate::lsm::filename::parse_file_name(&n) {
            if num >= min_log && num <= current_wal {
                let len = (num == current_wal).then_some(current_len);
                wals.push(CapturedWal { number: num, len });
            }
        }
    }
    wals.sort_by_key(|w| w.number);
    // The families as captured, each with its options (a family created since has none here;
    // one dropped since keeps the DB's options for its section).
    let live = crate::engine::families::family_options(db);
    let fam: Vec<(String, crate::options::Options)> = names
        .into_iter()
        .map(|n| {
            let o = live
                .iter()
                .find(|(name, _)| *name == n)
                .map_or_else(|| db.opts.clone(), |(_, o)| o.clone());
            (n, o)
        })
        .collect();
    Ok(Capture {
        db_path: db.path.clone(),
        fs: db.fs.clone(),
        records,
        manifest_number,
        tables,
        blobs,
        wals,
        options_number,
        options: crate::options::file::render_families(&fam),
        sequence,
        _versions: versions,
        _hold: hold,
    })
}

impl Capture {
    /// Write the MANIFEST, CURRENT and OPTIONS files of the capture into `dir` (synced).
    pub(crate) fn write_metadata(&self, fs: &Arc<dyn FileSystem>, dir: &Path) -> Result<()> {
        crate::lsm::version::write_manifest_file(fs, dir, self.manifest_number, &self.records)?;
        let mut f = fs.new_writable(&options_file_name(dir, self.options_number))?;
        f.append(self.options.as_bytes())?;
        f.sync()?;
        drop(f);
        crate::lsm::version::install_current(fs, dir, self.manifest_number)
    }
    /// The source path of table `n`.
    pub(crate) fn table_path(&self, n: u64) -> PathBuf {
        table_name(&self.db_path, n)
    }
    /// The source path of blob file `n`.
    pub(crate) fn blob_path(&self, n: u64) -> PathBuf {
        crate::lsm::filename::blob_name(&self.db_path, n)
    }
    pub(crate) fn wal_path(&self, n: u64) -> PathBuf {
        wal_name(&self.db_path, n)
    }
}

/// Remove `dir` and the files in it (not recursive: a checkpoint has no subdirectories).
pub(crate) fn remove_dir_files(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    for n in fs.list(dir)? {
        fs.remove_file(&dir.join(n))?;
    }
    fs.remove_dir(dir)
}

/// Makes checkpoints of one open DB, as the `rocksdb` crate's `Checkpoint`.
pub struct Checkpoint<'a> {
    db: &'a DB,
}

impl<'a> Checkpoint<'a> {
    /// A checkpoint maker for `db` (read-only DBs are refused when a checkpoint is made).
    pub fn new(db: &'a DB) -> Result<Checkpoint<'a>> {
        Ok(Checkpoint { db })
    }

    /// Make a checkpoint in `path` (which must not exist), flushing the memtables first.
    pub fn create_checkpoint(&self, path: impl AsRef<Path>) -> Result<()> {
        self.create_checkpoint_with_log_size(path, 0)
    }

    /// As RocksDB's `CreateCheckpoint(dir, log_size_for_flush)`: 0 flushes every memtable
    /// first; otherwise the memtables are flushed only when the live WALs hold at least
    /// `log_size_for_flush` bytes, and else the WALs are copied (the checkpoint recovers their
    /// data when opened). Table files are hard-linked (copied where links fail); the MANIFEST,
    /// CURRENT and OPTIONS are written for the checkpoint. The files are gathered in
    /// `<path>.tmp` and renamed to `path` at the end, so a crash leaves no half checkpoint under
    /// `path`.
    pub fn create_checkpoint_with_log_size(&self, path: impl AsRef<Path>, log_size_for_flush: u64) -> Result<()> {
        let db = &self.db.inner;
        let dir = path.as_ref();
        let fs = &db.fs;
        if dir.as_os_str().is_empty() {
            return Err(Error::invalid("checkpoint directory: empty path"));
        }
        if fs.exists(dir) {
            return Err(Error::invalid(format!(
                "checkpoint directory {} already exists",
                name_of(dir)
            )));
        }
        let mut tmp = dir.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        if fs.exists(&tmp) {
            remove_dir_files(&**fs, &tmp)?; // left by a crash
        }
        let policy = if log_size_for_flush == 0 {
            FlushFirst::Always
        } else {
            FlushFirst::IfWalsReach(log_size_for_flush)
        };
        let cap = capture(db, policy)?;
        fs.create_dir_all(&tmp)?;
        let r = (|| -> Result<()> {
            for &(n, _) in &cap.tables {
                fs.link(&cap.table_path(n), &table_name(&tmp, n))?;
            }
            for &n in &cap.blobs {
                fs.link(&cap.blob_path(n), &crate::lsm::filename::blob_name(&tmp, n))?;
            }
            for w in &cap.wals {
                copy_file(&**fs, &cap.wal_path(w.number), &wal_name(&tmp, w.number), w.len)?;
            }
            cap.write_metadata(fs, &tmp)?;
            fs.sync_dir(&tmp)?;
            fs.rename(&tmp, dir)?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs.sync_dir(parent)?;
            }
            Ok(())
        })();
        if r.is_err() && fs.exists(&tmp) {
            let _ = remove_dir_files(&**fs, &tmp);
        }
        r
    }
}

/// A live table file, as the `rocksdb` crate's `LiveFile`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    /// The family's name.
    pub column_family_name: String,
    /// The file name (`/000012.sst`, with RocksDB's leading slash).
    pub name: String,
    /// Bytes.
    pub size: usize,
    /// The LSM level the file is in (0 for L0).
    pub level: i32,
    /// Smallest and largest user keys.
    pub start_key: Option<Vec<u8>>,
    /// The largest user key (always `Some` in Shale's listings).
    pub end_key: Option<Vec<u8>>,
    /// The smallest sequence number of the file's entries.
    pub smallest_seqno: u64,
    /// The largest sequence number of the file's entries.
    pub largest_seqno: u64,
    /// The entries in the file, as its table properties count them (`rocksdb.num.entries`).
    pub num_entries: u64,
    /// The deletions among them, as its table properties count them (`rocksdb.deleted.keys`).
    pub num_deletions: u64,
}

/// A live WAL file (RocksDB's `LogFile`, from `GetSortedWalFiles`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalFile {
    /// The WAL's number (`000012.log` is 12).
    pub number: u64,
    /// The file name, `/000012.log`.
    pub name: String,
    /// Bytes of its records now (the live WAL's file may also hold zeros written ahead of
    /// them, which are not counted).
    pub size: u64,
    /// The sequence number of its first write batch (None: empty, or not readable).
    pub start_sequence: Option<u64>,
}

/// The sequence number of the first batch of WAL `path`: its first record must be a whole or
/// first fragment, whose payload starts with the batch's sequence number.
fn wal_start_sequence(fs: &dyn FileSystem, path: &Path) -> Option<u64> {
    use crate::log::{rt, HEADER_SIZE, RECYCLABLE_HEADER_SIZE};
    let f = fs.open_random(path).ok()?;
    let head = f.read_at(0, (RECYCLABLE_HEADER_SIZE + 8).min(f.size() as usize)).ok()?;
    let at = match *head.get(6)? {
        rt::FULL | rt::FIRST => HEADER_SIZE,
        rt::RECYCLABLE_FULL | rt::RECYCLABLE_FIRST => RECYCLABLE_HEADER_SIZE,
        _ => return None,
    };
    let b: [u8; 8] = head.get(at..at + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

impl DB {
    /// Stop deleting obsolete files (RocksDB's `DisableFileDeletions`): calls count, and files
    /// are deleted again only after as many [`enable_file_deletions`](Self::enable_file_deletions).
    pub fn disable_file_deletions(&self) -> Result<()> {
        self.inner.state.lock().file_deletions_disabled += 1;
        Ok(())
    }

    /// Undo one [`disable_file_deletions`](Self::disable_file_deletions); at the last one the
    /// files that became obsolete meanwhile are deleted. Without a matching disable it does
    /// nothing.
    pub fn enable_file_deletions(&self) -> Result<()> {
        enable_deletions(&self.inner);
        Ok(())
    }

    /// Every live table file of every family with its metadata. The entry counts come from
    /// the files' table properties: a file not open yet is opened (an I/O error or a corrupt
    /// file is the error returned).
    pub fn live_files(&self) -> Result<Vec<LiveFile>> {
        let files: Vec<_> = {
            let st = self.inner.state.lock();
            st.versions
                .cfs
                .iter()
                .flat_map(|(&id, c)| {
                    let v = c.current.clone();
                    let name = c.name.clone();
                    v.all_files()
                        .map(|(level, f)| (id, name.clone(), level, f.clone()))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let mut out = Vec::with_capacity(files.len());
        for (id, cf_name, level, f) in files {
            let cfd = self.inner.cfs.read().by_id.get(&id).cloned();
            let (num_entries, num_deletions) = match cfd {
                Some(cfd) => {
                    let t = cfd.table_cache.get(&f)?;
                    let p = t.properties();
                    (p.num_entries, p.num_deletions)
                }
                None => (0, 0), // the family was dropped meanwhile
            };
            out.push(LiveFile {
                column_family_name: cf_name,
                name: format!("/{:06}.sst", f.meta.number),
                size: f.meta.file_size as usize,
                level: level as i32,
                start_key: Some(f.smallest_user().to_vec()),
                end_key: Some(f.largest_user().to_vec()),
                smallest_seqno: f.meta.smallest_seqno,
                largest_seqno: f.meta.largest_seqno,
                num_entries,
                num_deletions,
            });
        }
        Ok(out)
    }

    /// The database's identity: the UUID in its `IDENTITY` file (or its MANIFEST), as
    /// RocksDB's `GetDbIdentity`; a checkpoint or backup of the database has the same one.
    /// Never fails (the `Result` is the `rocksdb` crate's signature).
    pub fn get_db_identity(&self) -> Result<Vec<u8>> {
        Ok(self.inner.db_id.as_bytes().to_vec())
    }

    /// As RocksDB's `GetLiveFiles`: the names of the files that make up the DB (tables,
    /// `/CURRENT`, the MANIFEST, the OPTIONS file), relative to its directory with a leading
    /// slash, and the MANIFEST's size. With `flush_memtable` every family is flushed first.
    /// WALs are listed by [`get_sorted_wal_files`](Self::get_sorted_wal_files).
    pub fn get_live_files(&self, flush_memtable: bool) -> Result<(Vec<String>, u64)> {
        let db = &self.inner;
        if flush_memtable && !db.read_only {
            let all: Vec<u32> = db.cfs.read().by_id.keys().copied().collect();
            manual::flush_and_wait(db, all)?;
        }
        let st = db.state.lock();
        let mut names: Vec<String> = st
            .versions
            .all_files()
            .map(|(_, _, f)| format!("/{:06}.sst", f.meta.number))
            .collect();
        // As RocksDB's `GetLiveFiles`: the live blob files too.
        for c in st.versions.cfs.values() {
            names.extend(c.current.blob_files.keys().map(|n| format!("/{n:06}.blob")));
        }
        names.push("/CURRENT".into());
        let manifest = crate::lsm::filename::manifest_name(&db.path, st.versions.manifest_number);
        names.push(format!("/MANIFEST-{:06}", st.versions.manifest_number));
        drop(st);
        let options = db
            .fs
            .list(&db.path)?
            .into_iter()
            .filter(|n| !n.ends_with(".dbtmp"))
            .filter_map(|n| match crate::lsm::filename::parse_file_name(&n) {
                Some(FileType::Options(k)) => Some(k),
                _ => None,
            });
        if let Some(k) = options.max() {
            names.push(format!("/OPTIONS-{k:06}"));
        }
        let size = db.fs.file_size(&manifest).unwrap_or(0);
        Ok((names, size))
    }

    /// The WAL files on disk that recovery would read, oldest first, with their sizes and the
    /// sequence number of their first batch (RocksDB's `GetSortedWalFiles`).
    pub fn get_sorted_wal_files(&self) -> Result<Vec<WalFile>> {
        let db = &self.inner;
        let min_log = {
            let st = db.state.lock();
            if db.read_only {
                st.versions.min_log_number(&|_| None)
            } else {
                wal_files::min_log_needed(db, &st)
            }
        };
        let live = {
            let wal = db.wal.lock();
            wal.writer.as_ref().map(|w| (wal.number, w.published_len()))
        };
        let mut out = Vec::new();
        for n in db.fs.list(&db.path)? {
            if let Some(FileType::Wal(num)) = crate::lsm::filename::parse_file_name(&n) {
                if num < min_log {
                    continue;
                }
                let path = wal_name(&db.path, num);
                // The live WAL's file may hold zeros written ahead of its records: its size is
                // the writer's.
                let size = match live {
                    Some((n, len)) if n == num => len,
                    _ => match db.fs.file_size(&path) {
                        Ok(s) => s,
                        Err(_) => continue, // deleted meanwhile
                    },
                };
                out.push(WalFile {
                    number: num,
                    name: format!("/{num:06}.log"),
                    size,
                    start_sequence: wal_start_sequence(&*db.fs, &path),
                });
            }
        }
        out.sort_by_key(|w| w.number);
        Ok(out)
    }
}
