//! The Shale database under a Raft node: its families, the keys of the `meta` family, opening
//! (with the clean-up of an interrupted snapshot install) and the file helpers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::{StorageError, StorageIOError};
use shale::fs::FileSystem;
use shale::fs::PosixFs;
use shale::{ColumnFamily, Error, Options, WriteOptions, DB};

use crate::log_store::LogStore;
use crate::state_machine::StateMachineStore;
use crate::types::NodeId;

/// The family of the log: key = big-endian u64 index, value = the entry in JSON.
pub(crate) const LOG_CF: &str = "log";
/// The family of the node's own small records (vote, committed, purged, pointers).
pub(crate) const META_CF: &str = "meta";
/// State-machine families are `sm-<generation>`; `meta`'s `sm_family` names the live one.
pub(crate) const SM_PREFIX: &str = "sm-";

pub(crate) const K_VOTE: &[u8] = b"vote";
pub(crate) const K_COMMITTED: &[u8] = b"committed";
pub(crate) const K_LAST_PURGED: &[u8] = b"last_purged";
pub(crate) const K_SM_FAMILY: &[u8] = b"sm_family";
pub(crate) const K_SNAPSHOT_FILE: &[u8] = b"snapshot_file";
pub(crate) const K_SNAPSHOT_SEQ: &[u8] = b"snapshot_seq";
pub(crate) const K_CLUSTER_ID: &[u8] = b"cluster_id";
pub(crate) const K_NODE_ID: &[u8] = b"node_id";

/// The directory (inside the DB directory) holding snapshot files.
pub(crate) const SNAPSHOT_DIR: &str = "raft-snapshot";

pub(crate) type StorageResult<T> = Result<T, StorageError<NodeId>>;

pub(crate) fn read_err(e: &Error) -> StorageError<NodeId> {
    StorageIOError::read(e).into()
}
pub(crate) fn write_err(e: &Error) -> StorageError<NodeId> {
    StorageIOError::write(e).into()
}

/// A JSON value stored by this crate that does not parse: Corruption naming the key.
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> shale::error::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::corruption(what, None, format!("undecodable record: {e}")))
}

pub(crate) fn encode_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    // Serializing the crate's own plain data types cannot fail (no maps with non-string keys).
    serde_json::to_vec(v).expect("serializable")
}

/// Run `f` (blocking Shale work: synced writes, reads, snapshot builds and installs) on tokio's
/// blocking threads, so the async worker threads that run openraft and the HTTP service never
/// wait on a disk. A panic in `f` is resumed here.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> shale::error::Result<T> + Send + 'static,
) -> shale::error::Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(Error::io("raft store", std::io::Error::other(e.to_string()))),
    }
}

pub(crate) fn sync_opts() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    wo
}

/// The live state-machine family and the current snapshot file.
pub(crate) struct SmState {
    pub(crate) generation: u64,
    pub(crate) cf: Arc<ColumnFamily>,
    pub(crate) snapshot_file: Option<String>,
}

/// What the log store and the state machine share.
pub(crate) struct Inner {
    pub(crate) db: DB,
    pub(crate) opts: Options,
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) snap_dir: PathBuf,
    pub(crate) log: Arc<ColumnFamily>,
    pub(crate) meta: Arc<ColumnFamily>,
    pub(crate) sm: Mutex<SmState>,
}

impl Inner {
    fn open(dir: &Path, mut opts: Options, fs: Arc<dyn FileSystem>) -> shale::error::Result<Inner> {
        fs.create_dir_all(dir)?;
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_env(fs.clone());
        let mut names = if fs.exists(&dir.join("CURRENT")) {
            DB::list_cf(&opts, dir)?
        } else {
            Vec::new()
        };
        for n in [shale::DEFAULT_COLUMN_FAMILY_NAME, LOG_CF, META_CF] {
            if !names.iter().any(|x| x == n) {
                names.push(n.to_string());
            }
        }
        let db = DB::open_cf(&opts, dir, &names)?;
        let log = db
            .cf_handle(LOG_CF)
            .ok_or_else(|| Error::invalid("family log missing"))?;
        let meta = db
            .cf_handle(META_CF)
            .ok_or_else(|| Error::invalid("family meta missing"))?;
        let sm_name = match db.get_cf(&meta, K_SM_FAMILY)? {
            Some(v) => String::from_utf8(v).map_err(|_| Error::corruption("meta/sm_family", None, "not UTF-8"))?,
            None => format!("{SM_PREFIX}0"),
        };
        let generation = parse_generation(&sm_name)
            .ok_or_else(|| Error::corruption("meta/sm_family", None, format!("bad family name {sm_name:?}")))?;
        if db.cf_handle(&sm_name).is_none() {
            if generation != 0 {
                return Err(Error::corruption(
                    "meta/sm_family",
                    None,
                    format!("names family {sm_name} which does not exist"),
                ));
            }
            db.create_cf(&sm_name, &opts)?;
        }
        // A family of an install that did not reach its meta record: never live, drop it.
        for n in &names {
            if n.starts_with(SM_PREFIX) && *n != sm_name {
                db.drop_cf(n)?;
            }
        }
        let cf = db
            .cf_handle(&sm_name)
            .ok_or_else(|| Error::invalid("state-machine family missing"))?;
        let snapshot_file = match db.get_cf(&meta, K_SNAPSHOT_FILE)? {
            Some(v) => {
                Some(String::from_utf8(v).map_err(|_| Error::corruption("meta/snapshot_file", None, "not UTF-8"))?)
            }
            None => None,
        };
        let snap_dir = dir.join(SNAPSHOT_DIR);
        fs.create_dir_all(&snap_dir)?;
        // Files not named by meta are left-overs of a build or install cut short.
        for f in fs.list(&snap_dir)? {
            if Some(&f) != snapshot_file.as_ref() {
                fs.remove_file(&snap_dir.join(&f))?;
            }
        }
        if let Some(f) = &snapshot_file {
            if !fs.exists(&snap_dir.join(f)) {
                return Err(Error::corruption(
                    f.as_str(),
                    None,
                    "snapshot file named by meta is missing",
                ));
            }
        }
        Ok(Inner {
            db,
            opts,
            fs,
            snap_dir,
            log,
            meta,
            sm: Mutex::new(SmState {
                generation,
                cf,
                snapshot_file,
            }),
        })
    }

    pub(crate) fn sm_state(&self) -> MutexGuard<'_, SmState> {
        // A panic while holding the lock leaves the state as it was on disk: keep going.
        self.sm.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> shale::error::Result<Option<T>> {
        match self.db.get_cf(&self.meta, key)? {
            Some(v) => decode_json(&format!("meta/{}", String::from_utf8_lossy(key)), &v).map(Some),
            None => Ok(None),
        }
    }

    pub(crate) fn next_snapshot_seq(&self) -> shale::error::Result<u64> {
        let n: u64 = self.get_meta(K_SNAPSHOT_SEQ)?.unwrap_or(0) + 1;
        self.db
            .put_cf_opt(&self.meta, K_SNAPSHOT_SEQ, encode_json(&n), &sync_opts())?;
        Ok(n)
    }
}

fn parse_generation(name: &str) -> Option<u64> {
    name.strip_prefix(SM_PREFIX)?.parse().ok()
}

/// Open (creating it if missing) the Raft store in directory `dir`: one Shale database with the
/// families `log`, `meta` and the live `sm-<generation>`. Returns the log store and the state
/// machine, which share the database.
pub fn open_store(dir: impl AsRef<Path>) -> shale::error::Result<(LogStore, StateMachineStore)> {
    open_store_with(dir, Options::default(), Arc::new(PosixFs))
}

/// [`open_store`] with the database options `opts` on the file system `fs` (which replaces the
/// options' own); `create_if_missing` and `create_missing_column_families` are turned on.
pub fn open_store_with(
    dir: impl AsRef<Path>,
    opts: Options,
    fs: Arc<dyn FileSystem>,
) -> shale::error::Result<(LogStore, StateMachineStore)> {
    let inner = Arc::new(Inner::open(dir.as_ref(), opts, fs)?);
    Ok((LogStore::new(inner.clone()), StateMachineStore::new(inner)))
}
