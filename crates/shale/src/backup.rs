//! Backups in the `rocksdb` crate's shape (`BackupEngine`, `BackupEngineOptions`,
//! `RestoreOptions`, `BackupEngineInfo`), incremental: table files are shared between backups.
//! The directory layout is Shale's own (not RocksDB's); it is described in
//! `docs/checkpoint-backup.md`:
//!
//! - `shared/<number>_<crc32c>_<size>.sst` (and `.blob`): table and blob files, one copy for every backup holding them;
//! - `private/<id>/`: each backup's MANIFEST, CURRENT, OPTIONS and WAL files;
//! - `meta/<id>`: the list of a backup's files with sizes and CRC32C checksums, written last
//!   (through `meta/<id>.tmp`, synced, renamed): a backup without it never happened, and its
//!   files are removed by the next open, create or purge.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::checkpoint::{capture, remove_dir_files, FlushFirst};
use crate::api::db::DB;
use crate::env::Env;
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::hash::{crc32c, crc32c_extend};
use crate::lsm::filename::{lock_name, parse_file_name, FileType};

const META_MAGIC: &str = "shale-backup 1";

/// Where backups go.
#[derive(Clone, Debug)]
pub struct BackupEngineOptions {
    dir: PathBuf,
}

impl BackupEngineOptions {
    /// Backups in `backup_dir` (created when the engine opens).
    pub fn new(backup_dir: impl AsRef<Path>) -> Result<BackupEngineOptions> {
        let dir = backup_dir.as_ref();
        if dir.as_os_str().is_empty() {
            return Err(Error::invalid("backup directory: empty path"));
        }
        Ok(BackupEngineOptions { dir: dir.to_path_buf() })
    }
}

/// Options of a restore.
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    keep_log_files: bool,
}

impl RestoreOptions {
    /// Keep the WAL files already in the WAL directory (and do not overwrite them with the
    /// backup's); by default they are deleted first.
    pub fn set_keep_log_files(&mut self, keep_log_files: bool) {
        self.keep_log_files = keep_log_files;
    }
}

/// One backup, as `get_backup_info` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupEngineInfo {
    /// Seconds since the Unix epoch when the backup was made.
    pub timestamp: i64,
    /// The backup's id: one more than the highest id present when it was made (the first is 1).
    pub backup_id: u32,
    /// Bytes of all its files (shared ones counted in every backup holding them).
    pub size: u64,
    /// How many files the backup holds.
    pub num_files: u32,
}

/// One file of a backup.
#[derive(Debug, Clone)]
struct BackupFile {
    /// Path inside the backup directory (`shared/...` or `private/<id>/...`).
    stored: String,
    /// Its name in the restored DB directory.
    name: String,
    size: u64,
    crc: u32,
}

#[derive(Debug, Clone)]
struct Meta {
    id: u32,
    timestamp: i64,
    sequence: u64,
    files: Vec<BackupFile>,
}

impl Meta {
    fn encode(&self) -> String {
        let mut s = format!(
            "{META_MAGIC}\nid {}\ntimestamp {}\nsequence {}\n",
            self.id, self.timestamp, self.sequence
        );
        for f in &self.files {
            s.push_str(&format!("file {} {} {} {:08x}\n", f.stored, f.name, f.size, f.crc));
        }
        let crc = crc32c(s.as_bytes());
        s.push_str(&format!("end {} {crc:08x}\n", self.files.len()));
        s
    }

    fn decode(text: &[u8], file: &str) -> Result<Meta> {
        let bad = |msg: &str| Error::corruption(file, None, format!("backup meta file: {msg}"));
        let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8"))?;
        let body_end = text.rfind("end ").ok_or_else(|| bad("no end line"))?;
        let (body, end) = text.split_at(body_end);
        let mut end_words = end.split_whitespace().skip(1);
        let count: usize = end_words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("bad end line"))?;
        let crc = end_words
            .next()
            .and_then(|w| u32::from_str_radix(w, 16).ok())
            .ok_or_else(|| bad("bad end line"))?;
        if crc32c(body.as_bytes()) != crc {
            return Err(bad("checksum mismatch"));
        }
        let mut lines = body.lines();
        if lines.next() != Some(META_MAGIC) {
            return Err(bad("not a Shale backup meta file"));
        }
        let mut field = |name: &str| -> Result<String> {
            let l = lines.next().ok_or_else(|| bad("truncated"))?;
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix(' '))
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("expected {name}")))
        };
        let id = field("id")?.parse().map_err(|_| bad("bad id"))?;
        let timestamp = field("timestamp")?.parse().map_err(|_| bad("bad timestamp"))?;
        let sequence = field("sequence")?.parse().map_err(|_| bad("bad sequence"))?;
        let mut files = Vec::new();
        for l in lines {
            let w: Vec<&str> = l.split(' ').collect();
            let [tag, stored, name, size, crc] = w[..] else {
                return Err(bad("bad file line"));
            };
            let size = size.parse().map_err(|_| bad("bad file size"))?;
            let crc = u32::from_str_radix(crc, 16).map_err(|_| bad("bad file checksum"))?;
            let safe = |p: &str| !p.is_empty() && !p.split('/').any(|c| c.is_empty() || c == "." || c == "..");
            if tag != "file" || !safe(stored) || !safe(name) || name.contains('/') {
                return Err(bad("bad file line"));
            }
            files.push(BackupFile {
                stored: stored.to_string(),
                name: name.to_string(),
                size,
                crc,
            });
        }
        if files.len() != count {
            return Err(bad("file count mismatch"));
        }
        Ok(Meta {
            id,
            timestamp,
            sequence,
            files,
        })
    }
}

/// Copy `from` (on `src`) to `to` (on `dst`), the first `len` bytes when given, synced; returns
/// the CRC32C of what was copied.
fn copy_crc(
    src: &dyn FileSystem,
    from: &Path,
    dst: &dyn FileSystem,
    to: &Path,
    len: Option<u64>,
) -> Result<(u64, u32)> {
    let f = src.open_random(from)?;
    let total = len.unwrap_or(f.size()).min(f.size());
    let mut out = dst.new_writable(to)?;
    let (mut off, mut crc) = (0u64, 0u32);
    while off < total {
        let n = (total - off).min(1 << 20) as usize;
        let buf = f.read_at(off, n)?;
        crc = crc32c_extend(crc, &buf);
        out.append(&buf)?;
        off += n as u64;
    }
    out.sync()?;
    Ok((total, crc))
}

/// The size and CRC32C of a whole file.
fn file_crc(fs: &dyn FileSystem, path: &Path) -> Result<(u64, u32)> {
    let f = fs.open_random(path)?;
    let (mut off, mut crc) = (0u64, 0u32);
    while off < f.size() {
        let n = (f.size() - off).min(1 << 20) as usize;
        crc = crc32c_extend(crc, &f.read_at(off, n)?);
        off += n as u64;
    }
    Ok((f.size(), crc))
}

/// Backs up databases into one directory and restores them, as the `rocksdb` crate's
/// `BackupEngine`.
pub struct BackupEngine {
    dir: PathBuf,
    fs: Arc<dyn FileSystem>,
}

impl BackupEngine {
    /// Open (creating it if needed) the backup directory of `opts`; files of a backup that was
    /// never finished (a crash during create) are removed.
    pub fn open(opts: &BackupEngineOptions, env: &Env) -> Result<BackupEngine> {
        let e = BackupEngine {
            dir: opts.dir.clone(),
            fs: env.fs.clone(),
        };
        for d in ["meta", "shared", "private"] {
            e.fs.create_dir_all(&e.dir.join(d))?;
        }
        e.collect_garbage()?;
        Ok(e)
    }

    fn meta_path(&self, id: u32) -> PathBuf {
        self.dir.join("meta").join(id.to_string())
    }
    fn private_dir(&self, id: u32) -> PathBuf {
        self.dir.join("private").join(id.to_string())
    }

    /// Ids of the finished backups, ascending.
    fn ids(&self) -> Result<Vec<u32>> {
        let mut ids: Vec<u32> = self
            .fs
            .list(&self.dir.join("meta"))?
            .iter()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|n| n.parse().ok())
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    fn read_meta(&self, id: u32) -> Result<Meta> {
        let p = self.meta_path(id);
        if !self.fs.exists(&p) {
            return Err(Error::invalid(format!(
                "backup {id} does not exist in {}",
                name_of(&self.dir)
            )));
        }
        let m = Meta::decode(&self.fs.read_all(&p)?, &name_of(&p))?;
        if m.id != id {
            return Err(Error::corruption(
                name_of(&p),
                None,
                "backup meta file names another backup",
            ));
        }
        Ok(m)
    }

    /// Remove what no finished backup uses: temp files, private directories without a meta
    /// file, shared files no meta file names. When a meta file cannot be read, shared files
    /// are kept (it may name them).
    fn collect_garbage(&self) -> Result<()> {
        let meta_dir = self.dir.join("meta");
        for n in self.fs.list(&meta_dir)? {
            if n.ends_with(".tmp") {
                self.fs.remove_file(&meta_dir.join(n))?;
            }
        }
        let ids = self.ids()?;
        let priv_dir = self.dir.join("private");
        for n in self.fs.list(&priv_dir)? {
            let keep = n.parse::<u32>().is_ok_and(|id| ids.contains(&id));
            if !keep {
                remove_dir_files(&*self.fs, &priv_dir.join(n))?;
            }
        }
        let mut used = std::collections::HashSet::new();
        for &id in &ids {
            match self.read_meta(id) {
                Ok(m) => used.extend(m.files.into_iter().map(|f| f.stored)),
                Err(_) => return Ok(()),
            }
        }
        let shared = self.dir.join("shared");
        for n in self.fs.list(&shared)? {
            if !used.contains(&format!("shared/{n}")) {
                self.fs.remove_file(&shared.join(n))?;
            }
        }
        self.fs.sync_dir(&shared)
    }

    /// Back up `db` without flushing it first (its WALs are copied).
    pub fn create_new_backup(&mut self, db: &DB) -> Result<()> {
        self.create_new_backup_flush(db, false)
    }

    /// Back up `db`, flushing its memtables first when `flush_before_backup`. Table files
    /// already in the backup directory (same number, size and checksum) are not copied again.
    pub fn create_new_backup_flush(&mut self, db: &DB, flush_before_backup: bool) -> Result<()> {
        self.collect_garbage()?;
        let id = self.ids()?.last().map_or(1, |l| l + 1);
        let cap = capture(
            &db.inner,
            if flush_before_backup {
                FlushFirst::Always
            } else {
                FlushFirst::Never
            },
        )?;
        let src = &*cap.fs;
        let private = self.private_dir(id);
        self.fs.create_dir_all(&private)?;
        let r = (|| -> Result<Meta> {
            let mut files = Vec::new();
            let shared = self.dir.join("shared");
            let tables = cap.tables.iter().map(|&(n, _)| (n, cap.table_path(n), "sst"));
            let blobs = cap.blobs.iter().map(|&n| (n, cap.blob_path(n), "blob"));
            for (n, from, ext) in tables.chain(blobs) {
                let (size, crc) = file_crc(src, &from)?;
                let stored_name = format!("{n:06}_{crc:08x}_{size}.{ext}");
                let to = shared.join(&stored_name);
                if !self.fs.exists(&to) || self.fs.file_size(&to)? != size {
                    let tmp = shared.join(format!("{stored_name}.tmp"));
                    let (_, copied) = copy_crc(src, &from, &*self.fs, &tmp, None)?;
                    if copied != crc {
                        return Err(Error::corruption(
                            name_of(&from),
                            None,
                            "table file changed while backed up",
                        ));
                    }
                    self.fs.rename(&tmp, &to)?;
                }
                files.push(BackupFile {
                    stored: format!("shared/{stored_name}"),
                    name: format!("{n:06}.{ext}"),
                    size,
                    crc,
                });
            }
            self.fs.sync_dir(&shared)?;
            for w in &cap.wals {
                let name = format!("{:06}.log", w.number);
                let (size, crc) = copy_crc(src, &cap.wal_path(w.number), &*self.fs, &private.join(&name), w.len)?;
                files.push(BackupFile {
                    stored: format!("private/{id}/{name}"),
                    name,
                    size,
                    crc,
                });
            }
            cap.write_metadata(&self.fs, &private)?;
            for n in self.fs.list(&private)? {
                if matches!(
                    parse_file_name(&n),
                    Some(FileType::Manifest(_) | FileType::Current | FileType::Options(_))
                ) {
                    let (size, crc) = file_crc(&*self.fs, &private.join(&n))?;
                    files.push(BackupFile {
                        stored: format!("private/{id}/{n}"),
                        name: n,
                        size,
                        crc,
                    });
                }
            }
            self.fs.sync_dir(&private)?;
            let timestamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let meta = Meta {
                id,
                timestamp,
                sequence: cap.sequence,
                files,
            };
            let meta_dir = self.dir.join("meta");
            let tmp = meta_dir.join(format!("{id}.tmp"));
            let mut f = self.fs.new_writable(&tmp)?;
            f.append(meta.encode().as_bytes())?;
            f.sync()?;
            drop(f);
            self.fs.rename(&tmp, &self.meta_path(id))?;
            self.fs.sync_dir(&meta_dir)?;
            Ok(meta)
        })();
        drop(cap);
        if r.is_err() {
            // Best effort; the next open, create or purge removes whatever is left. The meta
            // file goes first (it may have been renamed before a failed directory sync): the
            // private files of a backup whose meta file exists are never removed.
            let _ = self.fs.remove_file(&self.dir.join("meta").join(format!("{id}.tmp")));
            let meta = self.meta_path(id);
            if !self.fs.exists(&meta) || self.fs.remove_file(&meta).is_ok() {
                let _ = remove_dir_files(&*self.fs, &private);
            }
        }
        r.map(|_| ())
    }

    /// The finished backups, oldest first.
    pub fn get_backup_info(&self) -> Vec<BackupEngineInfo> {
        self.ids()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|id| self.read_meta(id).ok())
            .map(|m| BackupEngineInfo {
                timestamp: m.timestamp,
                backup_id: m.id,
                size: m.files.iter().map(|f| f.size).sum(),
                num_files: m.files.len() as u32,
            })
            .collect()
    }

    /// Check that every file of backup `backup_id` is there with its recorded size and
    /// checksum (Corruption naming the first that is not).
    pub fn verify_backup(&self, backup_id: u32) -> Result<()> {
        let m = self.read_meta(backup_id)?;
        for f in &m.files {
            let p = self.dir.join(&f.stored);
            if !self.fs.exists(&p) {
                return Err(Error::corruption(
                    name_of(&p),
                    None,
                    format!("file of backup {backup_id} is missing"),
                ));
            }
            let (size, crc) = file_crc(&*self.fs, &p)?;
            if size != f.size {
                return Err(Error::corruption(
                    name_of(&p),
                    None,
                    format!("size {size}, backup {backup_id} recorded {}", f.size),
                ));
            }
            if crc != f.crc {
                return Err(Error::corruption(
                    name_of(&p),
                    None,
                    format!("checksum {crc:08x}, backup {backup_id} recorded {:08x}", f.crc),
                ));
            }
        }
        Ok(())
    }

    /// Delete all but the newest `num_backups_to_keep` backups, and the shared files only
    /// they used.
    pub fn purge_old_backups(&mut self, num_backups_to_keep: usize) -> Result<()> {
        let ids = self.ids()?;
        let drop_n = ids.len().saturating_sub(num_backups_to_keep);
        for &id in &ids[..drop_n] {
            // The meta file first: from then on the backup does not exist.
            self.fs.remove_file(&self.meta_path(id))?;
            self.fs.sync_dir(&self.dir.join("meta"))?;
            let p = self.private_dir(id);
            if self.fs.exists(&p) {
                remove_dir_files(&*self.fs, &p)?;
            }
        }
        self.collect_garbage()
    }

    /// Restore the newest backup into `db_dir` (see [`restore_from_backup`](Self::restore_from_backup)).
    pub fn restore_from_latest_backup(
        &mut self,
        db_dir: impl AsRef<Path>,
        wal_dir: impl AsRef<Path>,
        opts: &RestoreOptions,
    ) -> Result<()> {
        let id = *self
            .ids()?
            .last()
            .ok_or_else(|| Error::invalid(format!("no backup in {}", name_of(&self.dir))))?;
        self.restore_from_backup(db_dir, wal_dir, opts, id)
    }

    /// Restore backup `backup_id` into `db_dir` (created if needed; the DB must not be open
    /// there). The DB files already in `db_dir` are deleted first, and the WALs in `wal_dir`
    /// unless `keep_log_files`. Every file's checksum is checked as it is copied; CURRENT is
    /// written last, so an interrupted restore leaves no openable DB. Shale reads WALs from the
    /// DB directory: a backup holding WALs is refused unless `wal_dir` is `db_dir`.
    pub fn restore_from_backup(
        &mut self,
        db_dir: impl AsRef<Path>,
        wal_dir: impl AsRef<Path>,
        opts: &RestoreOptions,
        backup_id: u32,
    ) -> Result<()> {
        let (db_dir, wal_dir) = (db_dir.as_ref(), wal_dir.as_ref());
        let m = self.read_meta(backup_id)?;
        let is_wal = |n: &str| matches!(parse_file_name(n), Some(FileType::Wal(_)));
        if db_dir != wal_dir && m.files.iter().any(|f| is_wal(&f.name)) {
            return Err(Error::invalid(format!(
                "backup {backup_id} holds WAL files and Shale reads them from the DB directory: wal_dir {} must be db_dir {}",
                name_of(wal_dir),
                name_of(db_dir)
            )));
        }
        let fs = &*self.fs;
        fs.create_dir_all(db_dir)?;
        fs.create_dir_all(wal_dir)?;
        let _lock = fs.lock(&lock_name(db_dir))?;
        for n in fs.list(db_dir)? {
            let t = parse_file_name(&n);
            let remove = match t {
                Some(FileType::Lock) | Some(FileType::InfoLog) | None => false,
                Some(FileType::Wal(_)) => !opts.keep_log_files || db_dir != wal_dir,
                Some(_) => true,
            };
            if remove {
                fs.remove_file(&db_dir.join(n))?;
            }
        }
        if !opts.keep_log_files && db_dir != wal_dir {
            for n in fs.list(wal_dir)? {
                if is_wal(&n) {
                    fs.remove_file(&wal_dir.join(n))?;
                }
            }
        }
        fs.sync_dir(db_dir)?;
        let mut current = None;
        for f in &m.files {
            if f.name == "CURRENT" {
                current = Some(f);
                continue;
            }
            let to = if is_wal(&f.name) { wal_dir } else { db_dir }.join(&f.name);
            if is_wal(&f.name) && opts.keep_log_files && fs.exists(&to) {
                continue;
            }
            self.restore_file(f, &to)?;
        }
        let current = current.ok_or_else(|| {
            Error::corruption(name_of(&self.meta_path(backup_id)), None, "backup has no CURRENT file")
        })?;
        let tmp = db_dir.join("CURRENT.restore.dbtmp");
        self.restore_file(current, &tmp)?;
        fs.rename(&tmp, &db_dir.join("CURRENT"))?;
        fs.sync_dir(db_dir)?;
        if wal_dir != db_dir {
            fs.sync_dir(wal_dir)?;
        }
        Ok(())
    }

    fn restore_file(&self, f: &BackupFile, to: &Path) -> Result<()> {
        let from = self.dir.join(&f.stored);
        let (size, crc) = copy_crc(&*self.fs, &from, &*self.fs, to, None)?;
        if size != f.size || crc != f.crc {
            let _ = self.fs.remove_file(to);
            return Err(Error::corruption(
                name_of(&from),
                None,
                "size or checksum differs from what the backup recorded",
            ));
        }
        Ok(())
    }
}
