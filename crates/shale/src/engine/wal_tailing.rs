//! WAL tailing for replication: `DB::get_updates_since` (RocksDB's `GetUpdatesSince` /
//! `TransactionLogIterator`) reads the write batches of the WAL files, archived and live, in
//! order with their sequence numbers; and the WAL archive that keeps obsolete WALs for it
//! (`WAL_ttl_seconds`, `WAL_size_limit_MB`).

use std::path::PathBuf;
use std::sync::Arc;

use super::state::DbInner;
use crate::engine::wal_files::archive_dir;
use crate::error::{Error, Result};
use crate::fs::name_of;
use crate::log;
use crate::log::DBRecoveryMode;
use crate::lsm::filename::{parse_file_name, wal_name, FileType};
use crate::write_batch::WriteBatch;

/// The write batches of the WALs from a sequence number on (the `rocksdb` crate's
/// `DBWALIterator`): items `(sequence of the batch's first record, batch)`, in order. It reads
/// the files present when it was made; a torn record at the end of the newest one (a write in
/// progress) ends it.
pub struct DBWALIterator {
    db: Arc<DbInner>,
    /// WAL files still to read, oldest first (path, number).
    files: std::collections::VecDeque<(PathBuf, u64)>,
    current: Option<log::Reader>,
    /// The first sequence wanted.
    since: u64,
    /// The batches returned must follow each other: the next one starts here (0: not known).
    next_seq: u64,
    done: bool,
    /// Two-phase commit: the record count of each prepared section seen, by transaction name
    /// (its commit uses that many sequence numbers).
    sections: std::collections::HashMap<Vec<u8>, u64>,
    /// A commit whose prepared section was not seen: the sequence numbers it used are unknown,
    /// so the next batch's start is not checked.
    unsure: bool,
    /// The last sequence number published when the iterator was made: batches after it are
    /// not returned.
    last: u64,
}

/// The sequence numbers a WAL batch uses (RocksDB's WRITE_COMMITTED accounting): its records
/// outside prepared sections, plus, for each commit marker, the records of its section
/// (`sections`, filled from the prepared sections seen); None when a commit's section was not
/// seen. Also whether the batch holds two-phase-commit records.
fn seqs_used(b: &WriteBatch, sections: &mut std::collections::HashMap<Vec<u8>, u64>) -> Result<(Option<u64>, bool)> {
    use crate::write_batch::BatchRecord as R;
    let (mut n, mut known, mut two_pc) = (0u64, true, false);
    let mut inside: Option<u64> = None;
    for r in b.records() {
        match r? {
            R::BeginPrepare { .. } => {
                two_pc = true;
                inside = Some(0);
            }
            R::EndPrepare(x) => {
                two_pc = true;
                sections.insert(x.to_vec(), inside.take().unwrap_or(0));
            }
            R::Commit(x) | R::CommitWithTimestamp { xid: x, .. } => {
                two_pc = true;
                match sections.remove(x) {
                    Some(c) => n += c,
                    None => known = false,
                }
            }
            R::Rollback(x) => {
                two_pc = true;
                sections.remove(x);
            }
            r if r.is_counted() => match inside.as_mut() {
                Some(c) => *c += 1,
                None => n += 1,
            },
            _ => {}
        }
    }
    Ok((known.then_some(n), two_pc))
}

impl DBWALIterator {
    /// The next batch; an error ends the iteration.
    fn advance(&mut self) -> Result<Option<(u64, WriteBatch)>> {
        loop {
            if self.current.is_none() {
                let Some((path, num)) = self.files.pop_front() else {
                    return Ok(None);
                };
                // The live WAL is read only up to what its writer published: past it, a write
                // group may be half stored (a mapped copy fills its bytes in no set order).
                // Taken before the read, so every byte below it is in the file.
                let published = {
                    let wal = self.db.wal.lock();
                    wal.writer
                        .as_ref()
                        .filter(|_| wal.number == num)
                        .map(|w| w.published_len())
                };
                let mut data = match self.db.fs.read_all(&path) {
                    Ok(d) => d,
                    // Archived and purged, or moved to the archive, between the listing and now.
                    Err(_) => self.db.fs.read_all(&wal_name(&archive_dir(&self.db), num))?,
                };
                if let Some(len) = published {
                    data.truncate(len as usize);
                }
                self.current = Some(log::Reader::new(
                    data,
                    name_of(&path),
                    num,
                    DBRecoveryMode::TolerateCorruptedTailRecords,
                ));
            }
            let reader = self
                .current
                .as_mut()
                .ok_or_else(|| Error::invalid("internal: no reader"))?;
            let Some(rec) = reader.read_record()?.map(|r| r.to_vec()) else {
                self.current = None;
                continue;
            };
            let off = reader.last_record_offset();
            let file = reader_name(reader);
            let b = WriteBatch::decode(rec).map_err(|e| e.in_file(&file, Some(off)))?;
            let seq = b.sequence();
            // Two-phase commit (RocksDB's WRITE_COMMITTED): a prepared section uses no sequence
            // number, its commit marker uses its records'; both are returned as written (as
            // RocksDB's iterator does), a marker batch when its sequence is at or after `since`.
            let (used, two_pc) = seqs_used(&b, &mut self.sections).map_err(|e| e.in_file(&file, Some(off)))?;
            let count = used.unwrap_or(b.count() as u64);
            let wanted = if two_pc && count == 0 {
                seq >= self.since
            } else {
                count > 0 && seq + count > self.since
            };
            if count > 0 && seq > self.last {
                // Written to the WAL but not yet visible (its group is still inserting): the
                // iteration ends before it, as RocksDB's ends at the last sequence number.
                self.files.clear();
                self.current = None;
                return Ok(None);
            }
            if !wanted {
                self.unsure |= used.is_none();
                continue;
            }
            if self.next_seq == 0 && seq > self.since {
                return Err(Error::NotFound(format!(
                    "get_updates_since({}): the oldest WAL kept starts at sequence {seq} (older WALs \
                     were deleted; keep them with WAL_ttl_seconds / WAL_size_limit_MB)",
                    self.since
                )));
            }
            if self.next_seq != 0 && seq != self.next_seq && !self.unsure {
                return Err(Error::corruption(
                    file,
                    Some(off),
                    format!(
                        "WAL batches out of order: sequence {seq} where {} was expected",
                        self.next_seq
                    ),
                ));
            }
            self.next_seq = seq + count;
            self.unsure = used.is_none();
            return Ok(Some((seq, b)));
        }
    }
}

impl std::fmt::Debug for DBWALIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DBWALIterator(since {}, {} files left)",
            self.since,
            self.files.len()
        )
    }
}

fn reader_name(r: &log::Reader) -> String {
    r.file_name().to_string()
}

impl Iterator for DBWALIterator {
    type Item = Result<(u64, WriteBatch)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(x)) => Some(Ok(x)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// `DB::get_updates_since`: the batches from the one holding `since` on.
pub(crate) fn updates_since(db: &Arc<DbInner>, since: u64) -> Result<DBWALIterator> {
    if since > db.last_seq.load(std::sync::atomic::Ordering::Acquire) + 1 {
        return Err(Error::invalid(format!(
            "get_updates_since({since}): beyond the last sequence number {}",
            db.last_seq.load(std::sync::atomic::Ordering::Acquire)
        )));
    }
    // What the WAL writer holds in its buffer goes to the file first.
    if let Some(w) = db.wal.lock().writer.as_mut() {
        w.flush()?;
    }
    // The live directory first, then the archive: a WAL archived between the two listings is
    // then in the second (listed the other way round, it was in neither).
    let mut files: Vec<(PathBuf, u64)> = Vec::new();
    for n in db.fs.list(&db.path)? {
        if let Some(FileType::Wal(num)) = parse_file_name(&n) {
            files.push((wal_name(&db.path, num), num));
        }
    }
    let dir = archive_dir(db);
    if db.fs.exists(&dir) {
        for n in db.fs.list(&dir)? {
            if let Some(FileType::Wal(num)) = parse_file_name(&n) {
                files.push((wal_name(&dir, num), num));
            }
        }
    }
    files.sort_by_key(|f| f.1);
    files.dedup_by_key(|f| f.1);
    let last = db.last_seq.load(std::sync::atomic::Ordering::Acquire);
    Ok(DBWALIterator {
        last,
        db: db.clone(),
        files: files.into(),
        current: None,
        since: since.max(1),
        next_seq: 0,
        done: false,
        sections: Default::default(),
        unsure: false,
    })
}
