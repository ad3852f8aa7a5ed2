//! Ingesting external table files (RocksDB's `IngestExternalFile`) and dropping the files of a
//! key range (`DeleteFilesInRange`). The rules are in docs/ingest.md.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;
use std::time::Duration;

use super::db::DB;
use crate::engine::checks;
use crate::engine::column_family::AsColumnFamilyRef;
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::families::cfd_of;
use crate::engine::sst_file_writer::UNKNOWN_CF_ID;
use crate::engine::state::DbInner;
use crate::engine::state::DbState;
use crate::engine::write;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, vt, MAX_SEQUENCE};
use crate::lsm::filename::{table_name, temp_name};
use crate::lsm::version_edit::{FileMetaData, VersionEdit};
use crate::options::compaction::DBCompactionStyle;
use crate::table::any::AnyTable;
use crate::table::block_based::format::{EXTERNAL_SST_GLOBAL_SEQNO, EXTERNAL_SST_VERSION};
use crate::table::block_based::reader::Table;
use crate::table::reader_options::TableReaderOptions;

/// How files are ingested (the `rocksdb` crate's `IngestExternalFileOptions`).
#[derive(Clone, Debug)]
pub struct IngestExternalFileOptions {
    pub(crate) move_files: bool,
    pub(crate) snapshot_consistency: bool,
    pub(crate) allow_global_seqno: bool,
    pub(crate) allow_blocking_flush: bool,
    pub(crate) ingest_behind: bool,
    pub(crate) verify_checksums_before_ingest: bool,
}

impl Default for IngestExternalFileOptions {
    fn default() -> Self {
        IngestExternalFileOptions {
            move_files: false,
            snapshot_consistency: true,
            allow_global_seqno: true,
            allow_blocking_flush: true,
            ingest_behind: false,
            verify_checksums_before_ingest: false,
        }
    }
}

impl IngestExternalFileOptions {
    /// Default options: copy (not move) the files, keep snapshots consistent, allow a global
    /// sequence number and a blocking flush, no ingest-behind, no checksum verification first.
    pub fn new() -> Self {
        Self::default()
    }
    /// Hard-link the files into the DB (falling back to a copy where links are not supported)
    /// and remove the originals once they are ingested.
    pub fn set_move_files(&mut self, v: bool) {
        self.move_files = v;
    }
    /// Give the files a new sequence number when a snapshot exists, so it does not see them.
    pub fn set_snapshot_consistency(&mut self, v: bool) {
        self.snapshot_consistency = v;
    }
    /// Allow a global sequence number; when one is needed and this is false the ingest fails.
    pub fn set_allow_global_seqno(&mut self, v: bool) {
        self.allow_global_seqno = v;
    }
    /// Flush a memtable that overlaps the files; when false such an ingest fails.
    pub fn set_allow_blocking_flush(&mut self, v: bool) {
        self.allow_blocking_flush = v;
    }
    /// Ingest below every existing version (needs RocksDB's `allow_ingest_behind`, which Shale
    /// does not have: such an ingest is InvalidArgument, as in a RocksDB DB without it).
    pub fn set_ingest_behind(&mut self, v: bool) {
        self.ingest_behind = v;
    }
    /// Read every block of the files before ingesting them (verifying their checksums) and
    /// check every key: sequence number 0, a point type, strictly increasing. Off by default,
    /// as in RocksDB, where only the first and the last key are checked.
    pub fn set_verify_checksums_before_ingest(&mut self, v: bool) {
        self.verify_checksums_before_ingest = v;
    }
}

/// What inspecting one external file found.
struct ExternalFile {
    path: PathBuf,
    size: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// Internal keys as stored (sequence number 0) of the file's bounds.
    smallest_ikey: Vec<u8>,
    largest_ikey: Vec<u8>,
}

fn path_name(p: &Path) -> String {
    p.display().to_string()
}

/// What an external file's properties must say before it is ingested (as RocksDB checks them):
/// written by an `SstFileWriter` (external file version 1 or 2), never ingested before (no
/// global sequence number), with the family's comparator and, if the file names one, for this
/// family. Each failure is InvalidArgument or Corruption naming the file.
fn check_external_properties(t: &Table, cfd: &ColumnFamilyData, name: &str) -> Result<()> {
    let props = t.properties();
    let version = match props.raw.get(EXTERNAL_SST_VERSION) {
        None => return Err(Error::corruption(name, None, "External file version not found")),
        Some(v) if v.len() >= 4 => u32::from_le_bytes(v[..4].try_into().unwrap()),
        Some(_) => return Err(Error::corruption(name, None, "malformed external file version")),
    };
    if version != 1 && version != 2 {
        return Err(Error::invalid(format!(
            "{name}: external file version {version} is not supported"
        )));
    }
    if t.global_seqno().is_some_and(|g| g != 0)
        || props
            .raw
            .get(EXTERNAL_SST_GLOBAL_SEQNO)
            .is_some_and(|v| v.iter().any(|&b| b != 0))
    {
        return Err(Error::invalid(format!(
            "{name}: the file already has a global sequence number (it was ingested before)"
        )));
    }
    let want = cfd.icmp.user_comparator().name();
    if props.comparator_name != want {
        return Err(Error::invalid(format!(
            "{name}: the file was written with comparator {:?}, the column family {:?} uses {want:?}",
            props.comparator_name, cfd.name
        )));
    }
    let cf_id = props.column_family_id as u32;
    if props.raw.contains_key("rocksdb.column.family.id") && cf_id != UNKNOWN_CF_ID && cf_id != cfd.id {
        return Err(Error::invalid(format!(
            "{name}: the file was written for column family id {cf_id}, not {} ({:?})",
            cfd.id, cfd.name
        )));
    }
    Ok(())
}

/// Open and check an external file: an SstFileWriter file of the family's comparator, keys
/// with sequence number 0 in strictly increasing order.
fn inspect(db: &DbInner, cfd: &ColumnFamilyData, path: &Path, full: bool) -> Result<ExternalFile> {
    let name = path_name(path);
    let file = db.fs.open_random(path)?;
    let size = file.size();
    let table = AnyTable::open(
        file,
        name.clone(),
        size,
        TableReaderOptions {
            icmp: cfd.icmp.clone(),
            use_filter: false,
            verify_checksums: true,
            ..Default::default()
        },
        &Default::default(),
    )?;
    let Some(t) = table.as_block() else {
        return Err(Error::invalid(format!(
            "{name}: only block-based table files can be ingested (this is a {:?} table)",
            table.format()
        )));
    };
    check_external_properties(t, cfd, &name)?;
    // A key of an external file: sequence number 0 and a point type.
    let check = |k: &[u8]| -> Result<()> {
        let pk = parse_internal_key(k).map_err(|e| e.in_file(&name, None))?;
        if pk.seq != 0 {
            return Err(Error::corruption(
                &name,
                None,
                "external file has a non-zero sequence number",
            ));
        }
        if !matches!(
            pk.vtype,
            vt::VALUE | vt::MERGE | vt::DELETION | vt::SINGLE_DELETION | vt::WIDE_COLUMN_ENTITY
        ) {
            return Err(Error::corruption(
                &name,
                None,
                format!("external file has a key of type {:#x}", pk.vtype),
            ));
        }
        Ok(())
    };
    let mut it = table.iter(true, false);
    let mut first: Option<Vec<u8>> = None;
    let mut last: Option<Vec<u8>> = None;
    it.seek_to_first();
    if !full {
        // RocksDB's rule: the first and the last key are checked, the blocks between are
        // trusted (their checksums are verified when they are read).
        if it.valid() {
            check(it.key())?;
            first = Some(it.key().to_vec());
            it.seek_to_last();
            if !it.valid() {
                it.status()?;
                return Err(Error::corruption(
                    &name,
                    None,
                    "cannot find the largest key of the file",
                ));
            }
            check(it.key())?;
            if cfd.icmp.compare(it.key(), first.as_deref().unwrap_or_default()) == Ordering::Less {
                return Err(Error::corruption(
                    &name,
                    None,
                    "external file's last key sorts before its first",
                ));
            }
            last = Some(it.key().to_vec());
        }
    }
    // With `verify_checksums_before_ingest`: every block read (and its checksum verified), every
    // key checked, the user keys strictly increasing.
    while full && it.valid() {
        let k = it.key();
        check(k)?;
        if let Some(prev) = &last {
            let uk = crate::key::user_key(k);
            if cfd.icmp.compare_user(uk, crate::key::user_key(prev)) != Ordering::Greater {
                return Err(Error::corruption(
                    &name,
                    None,
                    format!(
                        "external file keys are not sorted: {} after {}",
                        crate::lsm::version_edit::to_hex(uk),
                        crate::lsm::version_edit::to_hex(crate::key::user_key(prev))
                    ),
                ));
            }
        }
        if first.is_none() {
            first = Some(k.to_vec());
        }
        match &mut last {
            Some(l) => {
                l.clear();
                l.extend_from_slice(k);
            }
            None => last = Some(k.to_vec()),
        }
        it.next();
    }
    it.status()?;
    let mut smallest_ikey = first;
    let mut largest_ikey = last;
    for (start, end) in table.range_tombstones()? {
        let pk = parse_internal_key(&start).map_err(|e| e.in_file(&name, None))?;
        if pk.seq != 0 {
            return Err(Error::corruption(
                &name,
                None,
                "range deletion has a non-zero sequence number",
            ));
        }
        if smallest_ikey
            .as_ref()
            .is_none_or(|s| cfd.icmp.compare(&start, s) == Ordering::Less)
        {
            smallest_ikey = Some(start.clone());
        }
        let end_ikey = make_internal_key(&end, MAX_SEQUENCE, vt::RANGE_DELETION);
        if largest_ikey
            .as_ref()
            .is_none_or(|l| cfd.icmp.compare(&end_ikey, l) == Ordering::Greater)
        {
            largest_ikey = Some(end_ikey);
        }
    }
    let (Some(smallest_ikey), Some(largest_ikey)) = (smallest_ikey, largest_ikey) else {
        return Err(Error::corruption(&name, None, "external file has no entries"));
    };
    Ok(ExternalFile {
        path: path.to_path_buf(),
        size,
        smallest: crate::key::user_key(&smallest_ikey).to_vec(),
        largest: crate::key::user_key(&largest_ikey).to_vec(),
        smallest_ikey,
        largest_ikey,
    })
}

/// Copy (or hard-link, with `link`) `src` to `dst`, synced.
fn copy_in(db: &DbInner, src: &Path, dst: &Path, link: bool) -> Result<()> {
    if link {
        // A hard link where the file system has them, else a synced copy. The linked file is
        // synced too, as RocksDB does: its writer may not have synced it, and the MANIFEST
        // will name it. NotSupported: a file system that cannot reopen a file needs no sync.
        db.fs.link(src, dst)?;
        return match db.fs.sync_file(dst) {
            Err(Error::NotSupported(_)) => Ok(()),
            r => r,
        };
    }
    let from = db.fs.open_random(src)?;
    let mut to = db.fs.new_writable(dst)?;
    let size = from.size();
    let mut off = 0u64;
    while off < size {
        let n = (size - off).min(1 << 20) as usize;
        let buf = from.read_at(off, n)?;
        if buf.len() != n {
            return Err(Error::corruption(path_name(src), Some(off), "short read while copying"));
        }
        to.append(&buf)?;
        off += n as u64;
    }
    to.flush()?;
    to.sync()
}

/// Whether the user-key range `[lo, hi]` holds an entry of a memtable of family `cf`. A
/// memtable with range tombstones counts as overlapping (conservative: a flush too many).
fn overlaps_memtables(st: &DbState, cfd: &ColumnFamilyData, lo: &[u8], hi: &[u8]) -> bool {
    let Some(m) = st.cfs.get(&cfd.id) else { return false };
    let mems = std::iter::once(&m.mem).chain(m.imm.iter().map(|i| &i.mem));
    let target = make_internal_key(lo, MAX_SEQUENCE, vt::VALUE_PREFERRED_SEQNO);
    for mem in mems {
        if !mem.range_dels.is_empty() {
            return true;
        }
        if mem.is_empty() {
            continue;
        }
        let mut it = mem.iter();
        it.seek(&target);
        if it.valid() && cfd.icmp.compare_user(crate::key::user_key(it.key()), hi) != Ordering::Greater {
            return true;
        }
    }
    false
}

/// Wait (as the exclusive writer) until family `cf`'s memtables are flushed.
fn flush_now(db: &Arc<DbInner>, cf: u32) -> Result<()> {
    write::switch_now(db, &[cf])?;
    let mut st = db.state.lock();
    st.flush_requests += 1;
    let r = loop {
        if let Err(e) = DbInner::check_bg_error(&st) {
            break Err(e);
        }
        if st.cfs.get(&cf).is_none_or(|m| m.imm.is_empty()) {
            break Ok(());
        }
        db.work_cv.notify_all();
        db.bg_cv.wait_for(&mut st, Duration::from_millis(50));
    };
    st.flush_requests -= 1;
    r
}

/// Level and sequence number of one file (RocksDB's `AssignLevelAndSeqnoForIngestedFile`):
/// from L0 down, stop at the first level whose files (or a running compaction's output) overlap
/// the file — it then needs a sequence number above everything — and take the lowest level
/// above that stop whose files it does not overlap.
fn place(
    st: &DbState,
    cfd: &ColumnFamilyData,
    f: &ExternalFile,
    force_seqno: bool,
    last_seq: u64,
) -> Result<(usize, u64)> {
    let v = &st.versions.cf(cfd.id)?.current;
    if force_seqno && cfd.opts.compaction_style != DBCompactionStyle::Level {
        return Ok((0, last_seq + 1));
    }
    let mut seqno = if force_seqno { last_seq + 1 } else { 0 };
    let mut target = 0;
    let mut overlap_db = false;
    let lo = Some(f.smallest.as_slice());
    let hi = Some(f.largest.as_slice());
    let levels = if cfd.opts.compaction_style == DBCompactionStyle::Level {
        v.num_levels()
    } else {
        1
    };
    for lvl in 0..levels {
        let busy = st.running_compactions.iter().any(|(_, cf, r)| {
            *cf == cfd.id
                && r.output_level == lvl
                // (a running compaction's range is in user keys)
                && cfd.icmp.compare_user(&r.smallest, &f.largest) != Ordering::Greater
                && cfd.icmp.compare_user(&r.largest, &f.smallest) != Ordering::Less
        });
        if busy || !v.overlapping(lvl, lo, hi).is_empty() {
            overlap_db = true;
            break;
        }
        target = lvl;
    }
    if overlap_db && seqno == 0 {
        seqno = last_seq + 1;
    }
    if cfd.opts.compaction_style != DBCompactionStyle::Level {
        // Universal and FIFO: always L0, newest (Shale's simplification).
        return Ok((0, last_seq + 1));
    }
    Ok((target, seqno))
}

pub(crate) fn ingest(
    db: &Arc<DbInner>,
    cfd: &Arc<ColumnFamilyData>,
    paths: &[PathBuf],
    opts: &IngestExternalFileOptions,
) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported(
            "ingest_external_file on a database opened read-only".into(),
        ));
    }
    checks::check_writable(cfd)?;
    if paths.is_empty() {
        return Err(Error::invalid("ingest_external_file: no files given"));
    }
    if opts.ingest_behind {
        return Err(Error::invalid(
            "Can't ingest_behind file in DB with allow_ingest_behind=false (Shale has no allow_ingest_behind)",
        ));
    }
    for (i, p) in paths.iter().enumerate() {
        if paths[..i].contains(p) {
            return Err(Error::invalid(format!(
                "ingest_external_file: {} is given twice",
                path_name(p)
            )));
        }
    }
    let mut files = paths
        .iter()
        .map(|p| inspect(db, cfd, p, opts.verify_checksums_before_ingest))
        .collect::<Result<Vec<_>>>()?;
    files.sort_by(|a, b| cfd.icmp.compare_user(&a.smallest, &b.smallest));
    for w in files.windows(2) {
        if cfd.icmp.compare_user(&w[0].largest, &w[1].smallest) != Ordering::Less {
            return Err(Error::invalid(format!(
                "ingest_external_file: files {} and {} overlap",
                path_name(&w[0].path),
                path_name(&w[1].path)
            )));
        }
    }
    // Copy (or link) each file under a new number: first as a temporary file, renamed to its
    // table name once complete and synced. Until the MANIFEST edit names them these are
    // unreferenced files, which an open removes.
    let numbers: Vec<u64> = {
        let mut st = db.state.lock();
        files.iter().map(|_| st.versions.new_file_number()).collect()
    };
    let mut created: Vec<PathBuf> = Vec::new();
    let cleanup = |created: &[PathBuf]| {
        for p in created {
            let _ = db.fs.remove_file(p);
        }
    };
    for (f, &n) in files.iter().zip(&numbers) {
        let tmp = temp_name(&db.path, n);
        let dst = table_name(&db.path, n);
        created.push(tmp.clone());
        let r = copy_in(db, &f.path, &tmp, opts.move_files).and_then(|()| {
            created.push(dst.clone());
            db.fs.rename(&tmp, &dst)
        });
        if let Err(e) = r {
            cleanup(&created);
            return Err(e);
        }
    }
    if let Err(e) = db.fs.sync_dir(&db.path) {
        cleanup(&created);
        return Err(e);
    }
    let d = db.clone();
    let c = cfd.clone();
    let o = opts.clone();
    let metas: Vec<(u64, u64)> = files.iter().zip(&numbers).map(|(f, &n)| (n, f.size)).collect();
    let placed: Vec<ExternalFile> = files;
    // Set once the MANIFEST write is attempted: after a failed one the edit may still have
    // reached the MANIFEST (an append that went through before a failed sync, say), so the
    // copies must stay (an open removes them if the MANIFEST does not name them).
    let manifest_tried = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tried = manifest_tried.clone();
    let r = write::exclusive(
        db,
        Box::new(move || {
            let db = d;
            let cfd = c;
            checks::check_writable(&cfd)?;
            let overlap = {
                let st = db.state.lock();
                DbInner::check_bg_error(&st)?;
                placed
                    .iter()
                    .any(|f| overlaps_memtables(&st, &cfd, &f.smallest, &f.largest))
            };
            if overlap {
                if !o.allow_blocking_flush {
                    return Err(Error::invalid(
                        "External file requires flush (allow_blocking_flush is false)",
                    ));
                }
                flush_now(&db, cfd.id)?;
            }
            let mut st = db.state.lock();
            DbInner::check_bg_error(&st)?;
            st.ingests_running += 1;
            let r = place_and_install(&db, &mut st, &cfd, &placed, &metas, &o, &tried);
            st.ingests_running -= 1;
            db.work_cv.notify_all();
            r
        }),
    );
    match r {
        Ok(()) => {
            if opts.move_files {
                for p in paths {
                    let _ = db.fs.remove_file(p);
                }
            }
            Ok(())
        }
        Err(e) => {
            if !manifest_tried.load(AtOrd::Acquire) {
                cleanup(&created);
            }
            Err(e)
        }
    }
}

/// Choose each file's level and sequence number and install them with one MANIFEST edit
/// (called with the DB mutex held and `ingests_running` counting this ingest).
fn place_and_install(
    db: &Arc<DbInner>,
    st: &mut parking_lot::MutexGuard<'_, crate::engine::state::DbState>,
    cfd: &Arc<ColumnFamilyData>,
    placed: &[ExternalFile],
    metas: &[(u64, u64)],
    o: &IngestExternalFileOptions,
    manifest_tried: &std::sync::atomic::AtomicBool,
) -> Result<()> {
    let last = db.last_seq.load(AtOrd::Acquire);
    let force = o.snapshot_consistency && !db.snapshots.lock().is_empty();
    let mut edit = VersionEdit {
        column_family: cfd.id,
        ..Default::default()
    };
    let mut consumed = false;
    let now = crate::engine::table_output::now_secs();
    for (f, m) in placed.iter().zip(metas) {
        let (level, seqno) = place(st, cfd, f, force, last)?;
        if seqno != 0 && !o.allow_global_seqno {
            return Err(Error::invalid(format!(
                "{}: Global seqno is required, but disabled (allow_global_seqno is false)",
                path_name(&f.path)
            )));
        }
        consumed |= seqno > last;
        let with_seq = |ikey: &[u8]| {
            let pk = parse_internal_key(ikey).expect("checked at inspection");
            if pk.seq == MAX_SEQUENCE {
                ikey.to_vec()
            } else {
                make_internal_key(pk.user_key, seqno, pk.vtype)
            }
        };
        let epoch = st.versions.next_epoch;
        st.versions.next_epoch += 1;
        edit.add_file(
            level as u32,
            FileMetaData {
                number: m.0,
                file_size: m.1,
                smallest: with_seq(&f.smallest_ikey),
                largest: with_seq(&f.largest_ikey),
                smallest_seqno: seqno,
                largest_seqno: seqno,
                epoch_number: epoch,
                file_creation_time: now,
                oldest_ancester_time: now,
                ..Default::default()
            },
        );
    }
    if consumed {
        // The files' sequence number: published before the edit (nothing holds it yet),
        // so the edit's LastSequence covers it.
        db.last_seq.store(last + 1, AtOrd::Release);
    }
    manifest_tried.store(true, AtOrd::Release);
    log_edit(db, st, &mut edit)?;
    db.install_super_version(st, cfd.id);
    Ok(())
}

/// Write `edit` to the MANIFEST. A failure is a background error that stops writes until
/// `resume()` or a reopen, as RocksDB treats a failed MANIFEST write: the edit may have reached
/// the MANIFEST although the state in memory does not have it, and only a new MANIFEST written
/// from that state (the next MANIFEST write, which `resume()` makes) or a reopen (which reads the
/// MANIFEST) settles whether it happened.
fn log_edit(db: &DbInner, st: &mut parking_lot::MutexGuard<'_, DbState>, edit: &mut VersionEdit) -> Result<()> {
    let r = db.log_and_apply(st, edit);
    if let Err(e) = &r {
        crate::engine::error_handler::record_error(db, st, e.clone());
        db.bg_cv.notify_all();
    }
    r
}

/// RocksDB's `DeleteFilesInRange` (`include_end = true`): drop the L1+ files wholly inside
/// `[begin, end]` (None: unbounded) that no compaction is using, by one MANIFEST edit. L0 is
/// never touched, as in RocksDB; files that share a boundary user key with a neighbour outside
/// the range stay (RocksDB's clean cut).
pub(crate) fn delete_files_in_range(
    db: &Arc<DbInner>,
    cfd: &ColumnFamilyData,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported(
            "delete_file_in_range on a database opened read-only".into(),
        ));
    }
    checks::check_writable(cfd)?;
    let mut st = db.state.lock();
    DbInner::check_bg_error(&st)?;
    let v = st.versions.cf(cfd.id)?.current.clone();
    let ucmp = |a: &[u8], b: &[u8]| cfd.icmp.compare_user(a, b);
    let mut edit = VersionEdit {
        column_family: cfd.id,
        ..Default::default()
    };
    for lvl in 1..v.num_levels() {
        let files = &v.files[lvl];
        let inside = |i: usize| {
            let f = &files[i];
            begin.is_none_or(|b| ucmp(f.smallest_user(), b) != Ordering::Less)
                && end.is_none_or(|e| ucmp(f.largest_user(), e) != Ordering::Greater)
        };
        let mut i = 0;
        while i < files.len() {
            if !inside(i) {
                i += 1;
                continue;
            }
            let mut j = i;
            while j + 1 < files.len() && inside(j + 1) {
                j += 1;
            }
            // [i, j] is a run inside the range; shrink it to a clean cut.
            let (mut a, mut b) = (i, j as isize);
            while a as isize <= b
                && a > 0
                && ucmp(files[a - 1].largest_user(), files[a].smallest_user()) == Ordering::Equal
            {
                a += 1;
            }
            while b >= a as isize
                && (b as usize) + 1 < files.len()
                && ucmp(files[b as usize].largest_user(), files[b as usize + 1].smallest_user()) == Ordering::Equal
            {
                b -= 1;
            }
            for f in files.iter().take((b + 1).max(0) as usize).skip(a) {
                if !st.being_compacted.contains(&f.number()) {
                    edit.delete_file(lvl as u32, f.number());
                }
            }
            i = j + 1;
        }
    }
    if edit.deleted_files.is_empty() {
        return Ok(());
    }
    // The MANIFEST write runs without the DB mutex: held busy meanwhile, the files cannot become
    // a compaction's inputs (whose output would bring their entries back), as RocksDB marks them
    // `being_compacted` around its `LogAndApply`.
    let held: Vec<u64> = edit.deleted_files.iter().map(|&(_, n)| n).collect();
    st.being_compacted.extend(held.iter().copied());
    st.file_drops_running += 1;
    let r = log_edit(db, &mut st, &mut edit);
    st.file_drops_running -= 1;
    for n in &held {
        st.being_compacted.remove(n);
    }
    db.bg_cv.notify_all();
    r?;
    db.install_super_version(&st, cfd.id);
    crate::engine::purge::purge_obsolete(db, &mut st);
    db.work_cv.notify_all();
    Ok(())
}

impl DB {
    /// Ingest external table files (written by an `SstFileWriter`) into the default family.
    pub fn ingest_external_file<P: AsRef<Path>>(&self, paths: Vec<P>) -> Result<()> {
        self.ingest_external_file_opts(&IngestExternalFileOptions::default(), paths)
    }
    /// [`ingest_external_file`](Self::ingest_external_file) with options `opts`. All files are
    /// added or none. NotSupported on a read-only DB; InvalidArgument if no files are given, a
    /// path is given twice, two files overlap, `ingest_behind` is set, or a needed flush or global
    /// sequence number is disallowed by `opts`; Corruption (naming the file) if a file is not a
    /// valid external table.
    pub fn ingest_external_file_opts<P: AsRef<Path>>(
        &self,
        opts: &IngestExternalFileOptions,
        paths: Vec<P>,
    ) -> Result<()> {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        ingest(&self.inner, &self.inner.default_cf, &paths, opts)
    }
    /// Ingest external table files into family `cf`.
    pub fn ingest_external_file_cf<P: AsRef<Path>>(&self, cf: &impl AsColumnFamilyRef, paths: Vec<P>) -> Result<()> {
        self.ingest_external_file_cf_opts(cf, &IngestExternalFileOptions::default(), paths)
    }
    /// [`ingest_external_file_cf`](Self::ingest_external_file_cf) with options `opts`; errors as
    /// [`ingest_external_file_opts`](Self::ingest_external_file_opts), and InvalidArgument if
    /// `cf` was dropped.
    pub fn ingest_external_file_cf_opts<P: AsRef<Path>>(
        &self,
        cf: &impl AsColumnFamilyRef,
        opts: &IngestExternalFileOptions,
        paths: Vec<P>,
    ) -> Result<()> {
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        ingest(&self.inner, cfd_of(cf), &paths, opts)
    }
    /// Drop the table files (L1 and below) whose keys all lie in `[from, to]`, without
    /// rewriting anything (RocksDB's `DeleteFilesInRange`; keys in other files stay).
    pub fn delete_file_in_range<K: AsRef<[u8]>>(&self, from: K, to: K) -> Result<()> {
        delete_files_in_range(
            &self.inner,
            &self.inner.default_cf,
            Some(from.as_ref()),
            Some(to.as_ref()),
        )
    }
    /// [`delete_file_in_range`](Self::delete_file_in_range) in family `cf`.
    pub fn delete_file_in_range_cf<K: AsRef<[u8]>>(&self, cf: &impl AsColumnFamilyRef, from: K, to: K) -> Result<()> {
        delete_files_in_range(&self.inner, cfd_of(cf), Some(from.as_ref()), Some(to.as_ref()))
    }
}
