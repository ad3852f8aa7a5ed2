//! Opening a database: lock, create or recover the MANIFEST, replay WALs (point-in-time by
//! default), write the recovered data to L0, start a new MANIFEST and WAL, remove obsolete files.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex, RwLock};

use super::column_family::CfSet;
use super::job_stats;
use super::table_output::{build_tables, OutputParams};
use super::two_pc_replay::RecoveryInserter;
use super::{
    background, column_family::CfMem, column_family::ColumnFamilyData, state::DbInner, state::DbState, state::WalState,
};
use super::{column_family::ColumnFamilyDescriptor, column_family::DEFAULT_COLUMN_FAMILY_NAME};
use crate::error::{Error, Result};
use crate::fs::{name_of, FileSystem};
use crate::iterator::InternalIterator;
use crate::key::InternalKeyComparator;
use crate::log;
use crate::log::DBRecoveryMode;
use crate::lsm::filename::{
    current_name, identity_name, lock_name, manifest_name, parse_file_name, table_name, temp_name, wal_name, FileType,
};
use crate::lsm::version::VersionSet;
use crate::lsm::version_edit::VersionEdit;
use crate::memtable::MemTable;
use crate::options::Options;
use crate::table::cache::BlockCache;
use crate::write_batch::WriteBatch;
use crate::write_buffer_manager::MemAccount;

fn random_u128() -> u128 {
    use std::sync::atomic::AtomicU64 as A;
    static COUNTER: A = A::new(0);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let local = 0u8;
    let mut seed = Vec::with_capacity(48);
    seed.extend_from_slice(&t.to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(&(&local as *const u8 as usize).to_le_bytes());
    seed.extend_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    xxhash_rust::xxh3::xxh3_128(&seed)
}

/// A random version-4 UUID string, as RocksDB writes into IDENTITY.
pub(crate) fn new_uuid() -> String {
    let mut b = random_u128().to_le_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A 20-character base-36 session id, as RocksDB's.
pub(crate) fn new_session_id() -> String {
    let mut v = random_u128();
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    (0..20)
        .map(|_| {
            let d = DIGITS[(v % 36) as usize] as char;
            v /= 36;
            d
        })
        .collect()
}

/// Write a brand-new empty database: MANIFEST-000001 and CURRENT.
fn new_db(fs: &Arc<dyn FileSystem>, dir: &Path, comparator: &str) -> Result<()> {
    let edit = VersionEdit {
        comparator: Some(comparator.to_string()),
        log_number: Some(0),
        next_file_number: Some(2),
        last_sequence: Some(0),
        ..Default::default()
    };
    let mut buf = Vec::new();
    edit.encode(&mut buf);
    let mpath = manifest_name(dir, 1);
    let mut w = log::Writer::new(fs.new_writable(&mpath)?);
    w.add_record(&buf)?;
    w.sync()?;
    drop(w);
    let tmp = temp_name(dir, 1);
    let mut f = fs.new_writable(&tmp)?;
    f.append(b"MANIFEST-000001\n")?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, &current_name(dir))?;
    fs.sync_dir(dir)
}

fn read_identity(fs: &Arc<dyn FileSystem>, dir: &Path) -> Option<String> {
    let p = identity_name(dir);
    if !fs.exists(&p) {
        return None;
    }
    let data = fs.read_all(&p).ok()?;
    let s = String::from_utf8_lossy(&data).trim().to_string();
    if s.is_empty() {
        None
    } else {
        Some(s)
    }
}

/// Open the DB at `path` with families `cfs` (the default family, if not among them, is
/// opened with `opts`).
pub(crate) fn open(
    opts: &Options,
    path: &Path,
    read_only: bool,
    error_if_wal: bool,
    cfs: &[ColumnFamilyDescriptor],
) -> Result<Arc<DbInner>> {
    // Recovery runs user code (the comparator and merge operator replay the WAL): a panic there
    // is an error for the caller, and the lock on the directory is released as it unwinds.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if read_only {
            open_read_only(opts, path, error_if_wal, cfs, None)
        } else {
            open_inner(opts, path, false, error_if_wal, cfs, None)
        }
    }))
    .unwrap_or_else(|p| Err(Error::from_panic("open", p)))
}

/// Attempts of a read-only open while another process changes the DB under it.
const READ_ONLY_OPEN_ATTEMPTS: u32 = 10;

/// A read-only open takes no lock, so the process that owns the DB may compact while it reads:
/// between reading the MANIFEST and opening the tables it names, a table can be deleted (the
/// MANIFEST moved on). That is not corruption. When a file is missing and the MANIFEST (or
/// CURRENT) changed meanwhile, read it again, a bounded number of times; a file missing from an
/// unchanged MANIFEST is reported as the corruption it is.
pub(crate) fn open_read_only(
    opts: &Options,
    path: &Path,
    error_if_wal: bool,
    cfs: &[ColumnFamilyDescriptor],
    secondary: Option<&Path>,
) -> Result<Arc<DbInner>> {
    let mut last_err = None;
    for attempt in 0..READ_ONLY_OPEN_ATTEMPTS {
        let before = manifest_state(&opts.env, path);
        match open_inner(opts, path, true, error_if_wal, cfs, secondary) {
            // A table, the MANIFEST, or a WAL listed a moment before, deleted by the process
            // writing the database (it flushed or compacted meanwhile).
            Err(e) if is_missing_file(&e) || is_not_found(&e) => {
                if manifest_state(&opts.env, path) == before {
                    return Err(e);
                }
                last_err = Some(e);
                std::thread::sleep(std::time::Duration::from_millis(1 << attempt.min(6)));
            }
            r => return r,
        }
    }
    Err(Error::Busy(format!(
        "{}: read-only open gave up: the database changed under each of {READ_ONLY_OPEN_ATTEMPTS} \
         attempts (another process is flushing or compacting it); last: {}",
        path.display(),
        last_err.map(|e| e.to_string()).unwrap_or_default()
    )))
}

/// A file read by path does not exist (a WAL deleted between a listing and its read).
pub(crate) fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

/// A file the MANIFEST names (a table, or the MANIFEST CURRENT names) does not exist.
pub(crate) fn is_missing_file(e: &Error) -> bool {
    matches!(e, Error::Corruption { msg, .. } if msg.ends_with(MISSING_TABLE) || msg.ends_with("MANIFEST named by CURRENT is missing"))
}

const MISSING_TABLE: &str = "table file referenced by the MANIFEST is missing";

/// What a reader of the DB's metadata sees: CURRENT's contents and the size of the MANIFEST it
/// names (edits are appended to it). `None` parts when unreadable.
/// CURRENT's contents and the size of the MANIFEST it names.
pub(crate) type ManifestState = (Option<Vec<u8>>, Option<u64>);

pub(crate) fn manifest_state(fs: &Arc<dyn FileSystem>, dir: &Path) -> ManifestState {
    let cur = fs.read_all(&current_name(dir)).ok();
    let size = cur
        .as_deref()
        .and_then(|c| std::str::from_utf8(c).ok())
        .and_then(|c| parse_file_name(c.trim_end()))
        .and_then(|t| match t {
            FileType::Manifest(n) => fs.file_size(&manifest_name(dir, n)).ok(),
            _ => None,
        });
    (cur, size)
}

/// The families to open: the default one first (with `opts` unless named), each with its
/// options merged with the DB-wide ones. Names must be unique.
fn wanted_families(opts: &Options, cfs: &[ColumnFamilyDescriptor]) -> Result<Vec<(String, Options)>> {
    let mut wanted: Vec<(String, Options)> = Vec::new();
    if !cfs.iter().any(|d| d.name == DEFAULT_COLUMN_FAMILY_NAME) {
        wanted.push((DEFAULT_COLUMN_FAMILY_NAME.to_string(), opts.clone()));
    }
    for d in cfs {
        super::column_family::validate_name(&d.name)?;
        if wanted.iter().any(|(n, _)| *n == d.name) {
            return Err(Error::invalid(format!(
                "column family {:?} is named twice in the descriptors",
                d.name
            )));
        }
        d.options
            .validate()
            .map_err(|e| Error::invalid(format!("column family {:?}: {e}", d.name)))?;
        wanted.push((d.name.clone(), d.options.with_db_options_of(opts)));
    }
    wanted.sort_by_key(|(n, _)| n != DEFAULT_COLUMN_FAMILY_NAME);
    Ok(wanted)
}

/// The DB directory's lock, held while the DB is open read-write.
type DirLock = Option<Box<dyn crate::fs::FileLock>>;

/// The directory side of an open: create the directory (with `create_if_missing`), take the
/// lock (read-write opens), open the LOG, and create a new DB (`CURRENT`, first MANIFEST) when
/// there is none; `error_if_exists` and `create_if_missing` are checked here.
fn prepare_dir(
    opts: &Options,
    fs: &Arc<dyn FileSystem>,
    path: &Path,
    read_only: bool,
    cmp_name: &str,
    secondary: Option<&Path>,
) -> Result<(DirLock, Arc<crate::info_log::InfoLog>)> {
    let exists = fs.exists(&current_name(path));
    if !read_only && !fs.exists(path) {
        if !opts.create_if_missing {
            return Err(Error::invalid(format!(
                "{}: does not exist (create_if_missing is false)",
                path.display()
            )));
        }
        fs.create_dir_all(path)?;
    }
    let lock = if read_only {
        None
    } else {
        Some(fs.lock(&lock_name(path))?)
    };
    // A secondary instance keeps its own LOG in its own directory (as RocksDB's).
    let info_log = match secondary {
        Some(dir) => {
            fs.create_dir_all(dir)?;
            super::events::open_log(fs, dir, opts, false)
        }
        None => super::events::open_log(fs, path, opts, read_only),
    };
    if exists && opts.error_if_exists {
        return Err(Error::invalid(format!(
            "{}: exists (error_if_exists is true)",
            path.display()
        )));
    }
    if !exists {
        if read_only || !opts.create_if_missing {
            return Err(Error::invalid(format!(
                "{}: does not exist (create_if_missing is false)",
                path.display()
            )));
        }
        new_db(fs, path, cmp_name)?;
    }
    Ok((lock, info_log))
}

/// The families an open names against those the MANIFEST holds: a read-write open must name
/// every family (a read-only one may name a subset), and a family named but missing is created
/// only with `create_missing_column_families` (never read-only). Returns the families to create.
fn check_families(
    vs: &VersionSet,
    wanted: &[(String, Options)],
    opts: &Options,
    read_only: bool,
) -> Result<Vec<String>> {
    // As RocksDB: a read-write open must name every family; a read-only one may name a subset.
    if !read_only && !vs.skipped_cfs.is_empty() {
        let names: Vec<&str> = vs.skipped_cfs.values().map(|s| s.as_str()).collect();
        return Err(Error::invalid(format!(
            "column families not opened: {} (open_cf must name every column family of the DB)",
            names.join(", ")
        )));
    }
    let missing: Vec<String> = wanted
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| !vs.cfs.values().any(|c| &c.name == n))
        .collect();
    if !missing.is_empty() && (read_only || !opts.create_missing_column_families) {
        return Err(Error::invalid(format!(
            "column family not found: {} (set create_missing_column_families to create it)",
            missing.join(", ")
        )));
    }
    Ok(missing)
}

/// The WALs recovery replays, oldest first. Every numbered file in the directory raises the
/// file counter (as RocksDB does). With two-phase commit (as RocksDB) every WAL from the
/// MANIFEST's min_log_number_to_keep on is read, even below the families' log numbers: it may
/// hold a prepared section whose commit comes later (records of families that hold its data
/// already are skipped in the replay). `error_if_wal_file_exists` is checked here.
pub(crate) fn wals_to_replay(
    fs: &Arc<dyn FileSystem>,
    path: &Path,
    vs: &mut VersionSet,
    opts: &Options,
    read_only: bool,
    error_if_wal: bool,
) -> Result<Vec<u64>> {
    let min_log = if opts.allow_2pc {
        vs.min_log_number_to_keep
    } else if vs.min_log_number_to_keep > 0 {
        // A TransactionDB kept WALs below the families' log numbers for prepared sections;
        // one may hold the data of a transaction committed after a recovery and not flushed
        // yet. Read them too: their prepared sections make this open NotSupported (open it as
        // a TransactionDB), where skipping them would lose that commit.
        vs.min_log_number(&|_| None).min(vs.min_log_number_to_keep)
    } else {
        vs.min_log_number(&|_| None)
    };
    let names = fs.list(path)?;
    let mut wals = Vec::new();
    for n in &names {
        match parse_file_name(n) {
            Some(FileType::Wal(num)) => {
                vs.mark_file_number_used(num);
                if num >= min_log || num == vs.prev_log_number {
                    wals.push(num);
                }
            }
            Some(FileType::Table(num))
            | Some(FileType::Blob(num))
            | Some(FileType::Manifest(num))
            | Some(FileType::Options(num)) => vs.mark_file_number_used(num),
            Some(FileType::Temp(num)) => vs.mark_file_number_used(num),
            _ => {}
        }
    }
    wals.sort_unstable();
    if read_only && error_if_wal {
        for &w in &wals {
            if fs.file_size(&wal_name(path, w)).unwrap_or(0) > 0 {
                return Err(Error::invalid(format!(
                    "{}: write-ahead log file exists (error_if_wal_file_exists)",
                    name_of(&wal_name(path, w))
                )));
            }
        }
    }
    Ok(wals)
}

/// The block cache tables are read through: the shared one the options hold, else a new one
/// of `block_cache_capacity` bytes (none at 0).
fn open_block_cache(opts: &Options) -> Option<Arc<BlockCache>> {
    if let Some(shared) = &opts.block_cache {
        Some(shared.0.clone())
    } else if opts.block_cache_capacity > 0 {
        Some(Arc::new(BlockCache::with_high_pri_pool_ratio(
            opts.block_cache_capacity,
            opts.index_layout.high_pri_pool_ratio,
        )))
    } else {
        None
    }
}

/// Each recovered family the open names: its options (the default family's with the
/// DB-wide ones), first memtable and fixed data.
fn family_data(
    vs: &VersionSet,
    wanted: &[(String, Options)],
    db_opts: &Options,
    path: &Path,
    block_cache: &Option<Arc<BlockCache>>,
    mem_account: &Arc<MemAccount>,
) -> (CfSet, BTreeMap<u32, CfMem>) {
    let mut cf_set = CfSet::default();
    let mut cf_mems = BTreeMap::new();
    for (&id, c) in &vs.cfs {
        let Some((_, o)) = wanted.iter().find(|(n, _)| *n == c.name) else {
            continue;
        };
        let o = if id == 0 { db_opts.clone() } else { o.clone() };
        let mem = Arc::new(
            MemTable::with_factory(c.icmp.clone(), o.arena_block_size(), o.memtable_factory)
                .with_filters(o.memtable_bloom(), o.memtable_point_filter())
                .with_account(mem_account),
        );
        let cfd = Arc::new(ColumnFamilyData::new(
            id,
            &c.name,
            o,
            path,
            block_cache.clone(),
            mem.clone(),
            c.current.clone(),
        ));
        cfd.full_history_ts_low.lock().clone_from(&c.full_history_ts_low);
        cf_set.by_id.insert(id, cfd.clone());
        cf_mems.insert(
            id,
            CfMem {
                cfd,
                mem,
                imm: VecDeque::new(),
                history: VecDeque::new(),
                stats: job_stats::CompactionStats::new(),
            },
        );
    }
    (cf_set, cf_mems)
}

/// After the WAL replay of a read-write open: start a fresh WAL and record its number as
/// every family's log number, one MANIFEST edit per family with the L0 tables its replay wrote
/// (a crash before an edit leaves the MANIFEST naming neither, and the next open replays that
/// family's WALs again). Prepared transactions recovered from the WAL keep their WALs. Returns
/// the number reserved for the OPTIONS file.
fn start_first_wal(
    db: &Arc<DbInner>,
    fs: &Arc<dyn FileSystem>,
    path: &Path,
    opts: &Options,
    mut recovered: BTreeMap<u32, VersionEdit>,
) -> Result<u64> {
    let mut st = db.state.lock();
    let num = st.versions.new_file_number();
    let file = fs.new_writable(&wal_name(path, num))?;
    fs.sync_dir(path)?;
    *db.wal.lock() = WalState {
        writer: Some(log::Writer::new_wal(
            file,
            db.opts.wal_mapped_appends || db.opts.allow_mmap_writes,
        )),
        number: num,
        alive: VecDeque::new(),
        unsynced: false,
    };
    // The OPTIONS file's number is taken before the edits, so the MANIFEST's next file
    // number stays above it.
    let options_num = st.versions.new_file_number();
    let ids: Vec<u32> = st.versions.cfs.keys().copied().collect();
    let multi = ids.len() > 1;
    // Prepared transactions recovered from the WAL keep their WALs (RocksDB records the
    // oldest in min_log_number_to_keep, so its next open reads it again).
    let prep_floor = {
        let rec = db.two_pc.recovered.lock();
        for t in rec.values() {
            db.two_pc.mark_prep_log(t.log);
        }
        rec.values().map(|t| t.log).min()
    };
    for (i, id) in ids.iter().enumerate() {
        let rec = recovered.remove(id).unwrap_or_default();
        let mut edit = VersionEdit {
            column_family: *id,
            log_number: Some(num),
            prev_log_number: Some(0),
            new_files: rec.new_files,
            // The blob files the recovery flush wrote, which its tables reference.
            blob_file_additions: rec.blob_file_additions,
            blob_file_garbages: rec.blob_file_garbages,
            ..Default::default()
        };
        if (multi || opts.allow_2pc) && i + 1 == ids.len() {
            let keep = prep_floor.map_or(num, |p| p.min(num));
            edit.min_log_number_to_keep = Some(keep.max(st.versions.min_log_number_to_keep));
        }
        let last = db.last_seq.load(Ordering::Acquire);
        st.versions.log_and_apply(&mut edit, last, opts.paranoid_checks)?;
        db.install_super_version(&st, *id);
    }
    delete_obsolete_files(db, &st.versions, prep_floor.unwrap_or(u64::MAX))?;
    drop(st);
    Ok(options_num)
}

fn open_inner(
    opts: &Options,
    path: &Path,
    read_only: bool,
    error_if_wal: bool,
    cfs: &[ColumnFamilyDescriptor],
    secondary: Option<&Path>,
) -> Result<Arc<DbInner>> {
    opts.validate()?;
    let wanted = wanted_families(opts, cfs)?;
    let db_opts = wanted[0].1.with_db_options_of(opts);
    let fs = crate::fs::with_fsync(opts.env.clone(), opts.knobs.use_fsync);
    let cmp_name = db_opts.comparator.name().to_string();
    let (lock, info_log) = prepare_dir(opts, &fs, path, read_only, &cmp_name, secondary)?;
    let lookup = |name: &str| {
        wanted
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| (InternalKeyComparator::new(o.comparator.clone()), o.num_levels))
    };
    let mut vs = VersionSet::recover(path, fs.clone(), &lookup, opts.paranoid_checks)?;
    let missing = check_families(&vs, &wanted, opts, read_only)?;
    check_live_tables(&fs, path, &vs)?;
    let db_id = read_identity(&fs, path)
        .or_else(|| vs.db_id.clone())
        .unwrap_or_else(new_uuid);
    let wals = wals_to_replay(&fs, path, &mut vs, opts, read_only, error_if_wal)?;
    if !read_only {
        let mut f = fs.new_writable(&identity_name(path))?;
        f.append(db_id.as_bytes())?;
        f.sync()?;
        drop(f);
        vs.db_id = Some(db_id.clone());
        vs.write_db_id = opts.knobs.write_dbid_to_manifest;
        vs.write_new_manifest(&db_id)?;
    }
    let block_cache = open_block_cache(opts);
    let mem_account = MemAccount::new(opts.effective_write_buffer_manager());
    let (cf_set, cf_mems) = family_data(&vs, &wanted, &db_opts, path, &block_cache, &mem_account);
    let default_cf = cf_set
        .by_id
        .get(&0)
        .cloned()
        .ok_or_else(|| Error::invalid("the default column family is missing"))?;
    let concurrent = cf_set
        .by_id
        .values()
        .all(|c| c.opts.memtable_factory == crate::memtable::MemtableFactory::SkipList);
    let last = vs.last_sequence;
    let mut state = DbState {
        cfs: cf_mems,
        memset: Arc::new(Vec::new()),
        versions: vs,
        bg_error: None,
        soft_error: None,
        compaction_retry_at: None,
        compaction_retry_delay: super::error_handler::FIRST_RETRY_DELAY,
        flush_running: false,
        flush_requests: 0,
        wal_switch_pending: false,
        write_panicked: false,
        compactions_running: 0,
        being_compacted: HashSet::new(),
        running_compactions: Vec::new(),
        next_compaction_id: 0,
        manual_compactions: 0,
        bg_paused: 0,
        next_compaction_cf: 0,
        ingests_running: 0,
        file_drops_running: 0,
        file_deletions_disabled: 0,
    };
    state.rebuild_memset();
    let db = Arc::new(DbInner {
        path: path.to_path_buf(),
        opts: crate::options::live::LiveOptions::new(db_opts),
        default_cf,
        cfs: RwLock::new(cf_set),
        fs: fs.clone(),
        read_only,
        secondary: secondary.map(|_| super::state::Secondary {
            tails: Mutex::new(Default::default()),
        }),
        lock: Mutex::new(lock),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        work_cv: Condvar::new(),
        manifest_cv: Condvar::new(),
        last_seq: AtomicU64::new(last),
        writers: Mutex::new(VecDeque::new()),
        concurrent_inserts: AtomicBool::new(concurrent),
        pipeline: Default::default(),
        wal: Mutex::new(WalState {
            writer: None,
            number: 0,
            alive: VecDeque::new(),
            unsynced: false,
        }),
        block_cache,
        mem_account,
        snapshots: Arc::new(Mutex::new(BTreeMap::new())),
        shutting_down: AtomicBool::new(false),
        unpersisted_data: AtomicBool::new(false),
        db_id,
        session_id: new_session_id(),
        bg_threads: Mutex::new(Vec::new()),
        write_stats: job_stats::WriteStats::default(),
        stall: super::stall::StallController::new(opts),
        info_log: info_log.clone(),
        archived: Mutex::new(std::collections::HashMap::new()),
        two_pc: Default::default(),
        stats: opts.statistics.clone(),
    });
    let _ = db.stall.info_log.set(info_log);
    // The L0 tables recovery writes are recorded in the same MANIFEST edit as the family's new
    // log number (as RocksDB): a crash before that edit leaves the MANIFEST naming neither, and
    // the next open replays the WALs again for that family from scratch (merge operands must
    // not apply twice).
    let mut recovered: BTreeMap<u32, VersionEdit> = BTreeMap::new();
    // A secondary's WALs are replayed by the catch-up its open ends with (into memtables it
    // keeps per WAL, engine/secondary.rs), not here.
    if secondary.is_none() {
        replay_wals(&db, &wals, &mut recovered)?;
    }
    if !read_only {
        let options_num = start_first_wal(&db, &fs, path, opts, recovered)?;
        for name in &missing {
            let o = wanted
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, o)| o.clone())
                .unwrap_or_default();
            super::families::create_family(&db, name, o, false)?;
        }
        crate::options::file::write_options_file(&fs, path, options_num, &super::families::family_options(&db))?;
        background::start(&db)?;
        super::properties::start_stats_dump(&db);
        db.work_cv.notify_all();
    } else {
        let st = db.state.lock();
        let ids: Vec<u32> = st.cfs.keys().copied().collect();
        for id in ids {
            db.install_super_version(&st, id);
        }
    }
    super::events::opened(&db, &wals);
    preload_tables(&db)?;
    Ok(db)
}

/// As RocksDB with `max_open_files = -1`: open every live table while opening the DB instead
/// of on its first read (for plain and cuckoo tables that is the whole file read, the index
/// and bloom built). A table that fails to open is left for the read that needs it to report.
/// A read-only open holds every table open from here on, so tables the owning process deletes
/// later stay readable; a table that fails to open fails the open (and may be retried, above).
pub(crate) fn preload_tables(db: &Arc<DbInner>) -> Result<()> {
    if db.opts.max_open_files >= 0 {
        return Ok(());
    }
    let cfs: Vec<Arc<ColumnFamilyData>> = db.cfs.read().by_id.values().cloned().collect();
    for cf in cfs {
        let sv = cf.super_version();
        for (_, f) in sv.version.all_files() {
            let r = cf.table_cache.get(f);
            if db.read_only {
                r?;
            }
        }
    }
    Ok(())
}

/// Every table file of the recovered version must exist with the size the MANIFEST records
/// (RocksDB checks this when it opens the DB); checked before anything is written.
pub(crate) fn check_live_tables(fs: &Arc<dyn FileSystem>, dir: &Path, vs: &VersionSet) -> Result<()> {
    check_tables(fs, dir, vs.all_files().map(|(_, _, f)| f))
}

/// [`check_live_tables`] for the tables `files` (a secondary's catch-up checks those new to
/// its version).
pub(crate) fn check_tables<'a>(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    files: impl Iterator<Item = &'a Arc<crate::lsm::version::FileMeta>>,
) -> Result<()> {
    for f in files {
        let p = table_name(dir, f.number());
        let size = fs.file_size(&p).map_err(|e| match e {
            Error::Io { file, source } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::corruption(file, None, MISSING_TABLE)
            }
            e => e,
        })?;
        if size != f.meta.file_size {
            return Err(Error::corruption(
                name_of(&p),
                None,
                format!(
                    "table file size is {size} but the MANIFEST records {}",
                    f.meta.file_size
                ),
            ));
        }
    }
    Ok(())
}

/// Flush family `cf`'s recovery memtable to L0 (read-write open only).
fn flush_recovered(db: &Arc<DbInner>, cf: u32, recovered: &mut BTreeMap<u32, VersionEdit>) -> Result<()> {
    let mut st = db.state.lock();
    let m = st.cf(cf)?;
    let (mem, cfd) = (m.mem.clone(), m.cfd.clone());
    if mem.num_entries() == 0 && mem.range_dels.is_empty() {
        return Ok(());
    }
    let epoch = st.versions.next_epoch;
    st.versions.next_epoch += 1;
    drop(st);
    let params = OutputParams::for_l0(
        &cfd,
        epoch,
        Vec::new(),
        mem.range_dels
            .fragmented(&cfd.icmp)
            .map(|l| (*l).clone())
            .unwrap_or_default(),
    );
    let mut it: Box<dyn InternalIterator> = Box::new(mem.iter());
    let (outputs, blobs) = build_tables(db, &mut *it, &params)?;
    let mut st = db.state.lock();
    let edit = recovered.entry(cf).or_default();
    for f in outputs {
        edit.new_files.push((0, f));
    }
    blobs.add_to_edit(edit);
    let fresh = db.new_memtable(&cfd);
    st.cf_mut(cf)?.mem = fresh;
    st.rebuild_memset();
    Ok(())
}

/// Replay the WALs `wals` into the memtables, reading them one at a time (a secondary
/// instance's WALs are replayed by its catch-ups instead, `secondary_wal.rs`).
fn replay_wals(db: &Arc<DbInner>, wals: &[u64], recovered: &mut BTreeMap<u32, VersionEdit>) -> Result<()> {
    let mode = db.opts.wal_recovery_mode;
    let mut stopped_at: Option<(String, u64, String)> = None;
    // With two-phase commit, WALs below every family's log number are read only for their
    // prepared sections: every acknowledged write in them is in the tables, so a torn tail there
    // (a crash while it was the current WAL, kept since for a prepared section) ends that WAL
    // only, not the recovery.
    let min_cf_log = db
        .state
        .lock()
        .versions
        .cfs
        .values()
        .map(|c| c.log_number)
        .min()
        .unwrap_or(0);
    for &num in wals {
        let path = wal_name(&db.path, num);
        let name = name_of(&path);
        let data = db.fs.read_all(&path)?;
        let mut reader = log::Reader::new(data, name.clone(), num, mode);
        while let Some(r) = reader.read_record()? {
            let rec = r.to_vec();
            let off = reader.last_record_offset();
            if let Some((sfile, soff, why)) = &stopped_at {
                return Err(Error::corruption(
                    sfile.clone(),
                    Some(*soff),
                    format!("{why}; a later WAL ({name}) has records after the corruption"),
                ));
            }
            let batch = match WriteBatch::decode(rec) {
                Ok(b) => b,
                Err(e) => {
                    let e = e.in_file(&name, Some(off));
                    match mode {
                        DBRecoveryMode::SkipAnyCorruptedRecord => continue,
                        DBRecoveryMode::PointInTime => {
                            stopped_at = Some((name.clone(), off, e.to_string()));
                            break;
                        }
                        _ => return Err(e),
                    }
                }
            };
            let seq = batch.sequence();
            let next_seq: u64;
            let full: Vec<u32> = {
                let st = db.state.lock();
                // Only families whose tables do not already hold this WAL's data; records of
                // the others (and of dropped families) take their sequence numbers only.
                let mems: super::column_family::MemSet = st
                    .cfs
                    .iter()
                    .filter(|(id, _)| st.versions.cf(**id).is_ok_and(|c| num >= c.log_number))
                    .map(|(id, m)| (*id, m.mem.clone()))
                    .collect();
                // Records of a prepared section take no sequence number (RocksDB's
                // WRITE_COMMITTED): the record's last sequence is where the inserter ended.
                let mut ins = RecoveryInserter::new(db, &mems, seq, num);
                batch
                    .handle(&mut ins)
                    .and_then(|_| ins.check_finished())
                    .map_err(|e| e.in_file(&name, Some(off)))?;
                next_seq = ins.ins.seq();
                drop(ins);
                mems.iter()
                    .filter_map(|(id, mem)| {
                        mem.update_charge();
                        mem.range_dels.refresh(mem.icmp());
                        let limit = st.cfs.get(id).map_or(usize::MAX, |m| m.cfd.opts.write_buffer_size);
                        (mem.approximate_memory_usage() >= limit).then_some(*id)
                    })
                    .collect()
            };
            if next_seq > seq && next_seq - 1 > db.last_seq.load(Ordering::Acquire) {
                db.last_seq.store(next_seq - 1, Ordering::Release);
            }
            if !db.read_only {
                for cf in full {
                    flush_recovered(db, cf, recovered)?;
                }
            }
        }
        if stopped_at.is_none() {
            if let Some((off, why)) = reader.corruption() {
                if mode == DBRecoveryMode::PointInTime {
                    stopped_at = Some((name.clone(), off, why));
                }
            }
        }
        // A torn tail is only a tail if nothing follows: records in a later WAL after a torn
        // record mean acknowledged writes were lost in between (RocksDB's point-in-time mode
        // reports a truncated record as corruption for the same reason).
        if stopped_at.is_none() && mode != DBRecoveryMode::SkipAnyCorruptedRecord && num >= min_cf_log {
            if let Some((off, why)) = reader.torn_tail() {
                stopped_at = Some((name.clone(), off, why));
            }
        }
    }
    if !db.read_only {
        let ids: Vec<u32> = db.state.lock().cfs.keys().copied().collect();
        for cf in ids {
            flush_recovered(db, cf, recovered)?;
        }
    } else {
        let st = db.state.lock();
        for m in st.cfs.values() {
            m.mem.range_dels.refresh(m.mem.icmp());
        }
    }
    Ok(())
}

/// Remove files no live version references: unreferenced tables and blob files, WALs below
/// the log number, old MANIFESTs and temp files.
fn delete_obsolete_files(db: &DbInner, vs: &VersionSet, prep_floor: u64) -> Result<()> {
    let live: HashSet<u64> = vs.all_files().map(|(_, _, f)| f.number()).collect();
    let live_blobs: HashSet<u64> = vs
        .cfs
        .values()
        .flat_map(|c| c.current.blob_files.keys().copied())
        .collect();
    let min_log = vs.min_log_number(&|_| None).min(prep_floor);
    for n in db.fs.list(&db.path)? {
        let remove = match parse_file_name(&n) {
            Some(FileType::Table(num)) => !live.contains(&num),
            Some(FileType::Blob(num)) => !live_blobs.contains(&num),
            Some(FileType::Wal(num)) if num < min_log => {
                // Archived (WAL_ttl_seconds / WAL_size_limit_MB) or deleted.
                super::wal_files::retire_wal(db, num);
                false
            }
            Some(FileType::Manifest(num)) => num != vs.manifest_number,
            Some(FileType::Temp(_)) => true,
            _ => false,
        };
        if remove {
            let _ = db.fs.remove_file(&db.path.join(&n));
        }
    }
    super::wal_files::purge_archive(db);
    Ok(())
}

pub(crate) fn destroy(opts: &Options, path: &Path) -> Result<()> {
    let fs = opts.env.clone();
    if !fs.exists(path) {
        return Ok(());
    }
    let lock = fs.lock(&lock_name(path))?;
    // The WAL archive (`WAL_ttl_seconds` / `WAL_size_limit_MB`) first.
    let archive = path.join("archive");
    if fs.exists(&archive) {
        for n in fs.list(&archive)? {
            if let Some(FileType::Wal(_)) = parse_file_name(&n) {
                fs.remove_file(&archive.join(&n))?;
            }
        }
        let _ = fs.remove_dir(&archive);
    }
    for n in fs.list(path)? {
        match parse_file_name(&n) {
            Some(FileType::Lock) | None => {}
            Some(_) => fs.remove_file(&path.join(&n))?,
        }
    }
    drop(lock);
    let _ = fs.remove_file(&lock_name(path));
    let _ = fs.remove_dir(path);
    Ok(())
}
