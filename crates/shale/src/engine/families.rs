//! Column families in the engine: creating and dropping them (MANIFEST edit, OPTIONS file),
//! their options, and writes and handles addressed to one family.

use super::column_family::{validate_name, AsColumnFamilyRef};
use super::{
    column_family::CfMem, column_family::ColumnFamilyData, column_family::DEFAULT_COLUMN_FAMILY_NAME, state::DbInner,
    write,
};
use crate::engine::checks;
use crate::error::{Error, Result};
use crate::key::InternalKeyComparator;
use crate::lsm::version_edit::VersionEdit;
use crate::options::{Options, WriteOptions};
use crate::write_batch::WriteBatch;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Every live family's name and options, the default family first (for the OPTIONS file).
pub(crate) fn family_options(db: &DbInner) -> Vec<(String, Options)> {
    db.cfs
        .read()
        .by_id
        .values()
        .map(|c| (c.name.clone(), c.opts.clone()))
        .collect()
}

/// Rewrite the OPTIONS file after the set of families changed.
pub(crate) fn rewrite_options_file(db: &DbInner) -> Result<()> {
    let num = db.state.lock().versions.new_file_number();
    crate::options::file::write_options_file(&db.fs, &db.path, num, &family_options(db))
}

/// Create family `name` with `opts` (not yet merged with the DB-wide options): one MANIFEST
/// edit (id, name, comparator, the current WAL as its log number), then its memtable and
/// version. Runs as the write leader, alone.
pub(crate) fn create_family(
    db: &Arc<DbInner>,
    name: &str,
    opts: Options,
    options_file: bool,
) -> Result<Arc<ColumnFamilyData>> {
    if db.read_only {
        return Err(Error::NotSupported("create_cf on a database opened read-only".into()));
    }
    validate_name(name)?;
    opts.validate()
        .map_err(|e| Error::invalid(format!("column family {name:?}: {e}")))?;
    let opts = opts.with_db_options_of(&db.opts);
    let d = db.clone();
    let name_owned = name.to_string();
    let created: Arc<parking_lot::Mutex<Option<Arc<ColumnFamilyData>>>> = Default::default();
    let out = created.clone();
    write::exclusive(
        db,
        Box::new(move || {
            let db = d;
            if db.cfs.read().by_name(&name_owned).is_some() {
                return Err(Error::invalid(format!("column family {name_owned:?} already exists")));
            }
            let icmp = InternalKeyComparator::new(opts.comparator.clone());
            let mut st = db.state.lock();
            DbInner::check_bg_error(&st)?;
            let id = st.versions.max_column_family + 1;
            let log = db.wal.lock().number;
            let mut edit = VersionEdit {
                column_family: id,
                column_family_add: Some(name_owned.clone()),
                comparator: Some(opts.comparator.name().to_string()),
                log_number: Some(log),
                ..Default::default()
            };
            db.log_and_apply_cf(&mut st, &mut edit, Some((icmp.clone(), opts.num_levels)))?;
            let version = st.versions.cf(id)?.current.clone();
            let mem = Arc::new(
                crate::memtable::MemTable::with_factory(icmp, opts.arena_block_size(), opts.memtable_factory)
                    .with_filters(opts.memtable_bloom(), opts.memtable_point_filter())
                    .with_account(&db.mem_account),
            );
            if opts.memtable_factory != crate::memtable::MemtableFactory::SkipList {
                db.concurrent_inserts.store(false, Ordering::Relaxed);
            }
            let cfd = Arc::new(ColumnFamilyData::new(
                id,
                &name_owned,
                opts,
                &db.path,
                db.block_cache.clone(),
                mem.clone(),
                version,
            ));
            st.cfs.insert(
                id,
                CfMem {
                    cfd: cfd.clone(),
                    mem,
                    imm: VecDeque::new(),
                    history: VecDeque::new(),
                    stats: super::job_stats::CompactionStats::new(),
                },
            );
            st.rebuild_memset();
            db.cfs.write().by_id.insert(id, cfd.clone());
            db.install_super_version(&st, id);
            *out.lock() = Some(cfd);
            Ok(())
        }),
    )?;
    let cfd = created
        .lock()
        .take()
        .ok_or_else(|| Error::invalid("internal: column family not created"))?;
    super::events::family_changed(db, "created", &cfd);
    if options_file {
        rewrite_options_file(db)?;
    }
    Ok(cfd)
}

/// Drop family `name`: one MANIFEST edit; its memtables are discarded, its files deleted once
/// no handle, iterator or snapshot read holds them. Runs as the write leader, alone.
pub(crate) fn drop_family(db: &Arc<DbInner>, name: &str) -> Result<()> {
    if db.read_only {
        return Err(Error::NotSupported("drop_cf on a database opened read-only".into()));
    }
    if name == DEFAULT_COLUMN_FAMILY_NAME {
        return Err(Error::invalid("drop_cf: the default column family cannot be dropped"));
    }
    let cfd = db
        .cfs
        .read()
        .by_name(name)
        .cloned()
        .ok_or_else(|| Error::invalid(format!("drop_cf: column family {name:?} does not exist")))?;
    let d = db.clone();
    let c = cfd.clone();
    write::exclusive(
        db,
        Box::new(move || {
            let db = d;
            let mut st = db.state.lock();
            DbInner::check_bg_error(&st)?;
            if c.is_dropped() {
                return Err(Error::invalid(format!(
                    "drop_cf: column family {:?} was already dropped",
                    c.name
                )));
            }
            // Flushes and compactions of the family that finish from now on discard their work.
            c.dropped.store(true, Ordering::Release);
            let mut edit = VersionEdit {
                column_family: c.id,
                column_family_drop: true,
                ..Default::default()
            };
            if let Err(e) = db.log_and_apply(&mut st, &mut edit) {
                c.dropped.store(false, Ordering::Release);
                return Err(e);
            }
            st.cfs.remove(&c.id);
            st.rebuild_memset();
            db.cfs.write().by_id.remove(&c.id);
            db.install_super_version(&st, 0);
            super::purge::purge_obsolete(&db, &mut st);
            Ok(())
        }),
    )?;
    super::events::family_changed(db, "dropped", &cfd);
    rewrite_options_file(db)
}

/// One record for family `c`, written alone (`put`, `delete`, `merge`, ... and their `_cf`
/// forms): the family must be live and the key valid for its comparator.
pub(crate) fn write_one(
    db: &Arc<DbInner>,
    c: &ColumnFamilyData,
    key: &[u8],
    wo: &WriteOptions,
    add: impl FnOnce(&mut WriteBatch),
) -> Result<()> {
    checks::check_writable(c)?;
    checks::check_key(c, key)?;
    let mut b = WriteBatch::new();
    add(&mut b);
    write::write(db, wo, b, false)
}

pub(crate) fn cfd_of(cf: &impl AsColumnFamilyRef) -> &Arc<ColumnFamilyData> {
    &cf.column_family().cfd
}
