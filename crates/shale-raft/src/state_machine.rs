//! openraft's `RaftStateMachine` on Shale: the key-value data and the applied state in the live
//! `sm-<generation>` family; snapshots built from a Shale snapshot as SST files and installed by
//! ingesting them into a fresh family that becomes live with one synced `meta` write.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageIOError,
    StoredMembership,
};
use shale::fs::RandomAccessFile;
use shale::{ColumnFamily, Error, IngestExternalFileOptions, ReadOptions, SstFileWriter, WriteBatch};

use crate::snapshot::{check_snapshot, copy_out, read_header, write_snapshot};
use crate::snapshot_data::SnapshotData;
use crate::store::{
    blocking, decode_json, encode_json, sync_opts, write_err, Inner, StorageResult, K_CLUSTER_ID, K_NODE_ID,
    K_SM_FAMILY, K_SNAPSHOT_FILE, SM_PREFIX,
};
use crate::types::{NodeId, Request, Response, TypeConfig};

/// In a state-machine family: keys starting with 0x00 are the store's own, 0x01 + key the data.
const K_APPLIED: &[u8] = b"\x00applied";
const K_MEMBERSHIP: &[u8] = b"\x00membership";
const DATA_PREFIX: u8 = 0x01;
/// A snapshot's SST files are cut at about this size.
const SST_TARGET_BYTES: u64 = 64 << 20;

type Applied = (Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>);

fn data_key(key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(DATA_PREFIX);
    k.extend_from_slice(key.as_bytes());
    k
}

/// The key-value state machine of a node. Cheap to clone; clones share the database, so the
/// service keeps one to read while openraft owns another.
#[derive(Clone)]
pub struct StateMachineStore {
    inner: Arc<Inner>,
    /// Held while a snapshot is built or installed: the two never interleave.
    snap_lock: Arc<Mutex<()>>,
}

impl StateMachineStore {
    pub(crate) fn new(inner: Arc<Inner>) -> StateMachineStore {
        StateMachineStore {
            inner,
            snap_lock: Arc::new(Mutex::new(())),
        }
    }

    /// The value of `key` in the local state machine (what this node has applied).
    pub fn get(&self, key: &str) -> shale::error::Result<Option<String>> {
        let cf = self.inner.sm_state().cf.clone();
        match self.inner.db.get_cf(&cf, data_key(key))? {
            Some(v) => String::from_utf8(v)
                .map(Some)
                .map_err(|_| Error::corruption(format!("state machine/{key}"), None, "value is not UTF-8")),
            None => Ok(None),
        }
    }

    /// The cluster this node's data belongs to, if recorded.
    pub fn cluster_id(&self) -> shale::error::Result<Option<String>> {
        self.inner.get_meta(K_CLUSTER_ID)
    }

    /// Record the cluster id (synced). A node keeps the first id it records: setting another is
    /// InvalidArgument naming both.
    pub fn set_cluster_id(&self, id: &str) -> shale::error::Result<()> {
        match self.claim_meta(K_CLUSTER_ID, &id.to_string())? {
            None => Ok(()),
            Some(old) => Err(Error::invalid(format!(
                "cluster id: this data directory belongs to cluster {old}, not {id}"
            ))),
        }
    }

    /// The node id this data directory belongs to, if recorded.
    pub fn node_id(&self) -> shale::error::Result<Option<crate::types::NodeId>> {
        self.inner.get_meta(K_NODE_ID)
    }

    /// Record the node id this directory belongs to (synced) on its first start; at every later
    /// start the id must be the same: another is InvalidArgument naming both.
    pub fn claim_node_id(&self, id: crate::types::NodeId) -> shale::error::Result<()> {
        match self.claim_meta(K_NODE_ID, &id)? {
            None => Ok(()),
            Some(old) => Err(Error::invalid(format!(
                "this data directory belongs to node {old}, not node {id} (start it with --id={old}, or give node {id} a directory of its own)"
            ))),
        }
    }

    /// `meta/key` set to `value` (synced) when it is absent; `Some(recorded)` when it holds
    /// another value, which is kept.
    fn claim_meta<T>(&self, key: &[u8], value: &T) -> shale::error::Result<Option<T>>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
    {
        match self.inner.get_meta::<T>(key)? {
            Some(old) if old == *value => Ok(None),
            Some(old) => Ok(Some(old)),
            None => self
                .inner
                .db
                .put_cf_opt(&self.inner.meta, key, encode_json(value), &sync_opts())
                .map(|()| None),
        }
    }

    /// The SST files (the store's own names) this node's current snapshot file is made of; for
    /// tests and tools.
    pub fn current_snapshot_bytes(&self) -> shale::error::Result<Option<Vec<u8>>> {
        let name = self.inner.sm_state().snapshot_file.clone();
        match name {
            Some(n) => self.inner.fs.read_all(&self.inner.snap_dir.join(n)).map(Some),
            None => Ok(None),
        }
    }

    fn read_applied(&self, cf: &ColumnFamily, ro: &ReadOptions) -> shale::error::Result<Applied> {
        let db = &self.inner.db;
        let last = match db.get_cf_opt(cf, K_APPLIED, ro)? {
            Some(v) => decode_json("state machine/applied", &v)?,
            None => None,
        };
        let mem = match db.get_cf_opt(cf, K_MEMBERSHIP, ro)? {
            Some(v) => decode_json("state machine/membership", &v)?,
            None => StoredMembership::default(),
        };
        Ok((last, mem))
    }

    /// Apply `entries`: the data and the applied state in one write.
    fn apply_entries(&self, entries: Vec<Entry<TypeConfig>>) -> shale::error::Result<Vec<Response>> {
        let st = self.inner.sm_state();
        let (mut last, mut mem) = self.read_applied(&st.cf, &ReadOptions::default())?;
        let mut batch = WriteBatch::new();
        let mut out = Vec::new();
        for ent in entries {
            last = Some(ent.log_id);
            let mut resp = Response::default();
            match ent.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(Request::Set { key, value }) => {
                    batch.put_cf(&st.cf, data_key(&key), value.as_bytes());
                    resp.value = Some(value);
                }
                EntryPayload::Normal(Request::Delete { key }) => batch.delete_cf(&st.cf, data_key(&key)),
                EntryPayload::Membership(m) => mem = StoredMembership::new(Some(ent.log_id), m),
            }
            out.push(resp);
        }
        // The data and the applied state in one batch: after a crash both or neither.
        batch.put_cf(&st.cf, K_APPLIED, encode_json(&last));
        batch.put_cf(&st.cf, K_MEMBERSHIP, encode_json(&mem));
        self.inner.db.write(batch)?;
        Ok(out)
    }

    fn lock_snapshots(&self) -> std::sync::MutexGuard<'_, ()> {
        self.snap_lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn build(&self) -> shale::error::Result<Snapshot<TypeConfig>> {
        let _g = self.lock_snapshots();
        let inner = &self.inner;
        let (cf, snap) = {
            let st = inner.sm_state();
            (st.cf.clone(), inner.db.snapshot())
        };
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snap);
        let (last_log_id, last_membership) = self.read_applied(&cf, &ro)?;
        let seq = inner.next_snapshot_seq()?;
        let ssts = self.write_ssts(&cf, ro, seq)?;
        let snapshot_id = match last_log_id {
            Some(l) => format!("{}-{}-{}-{seq}", l.leader_id.term, l.leader_id.node_id, l.index),
            None => format!("none-{seq}"),
        };
        let meta = SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        // The state this snapshot holds must be durable before the snapshot is recorded: once
        // it is, openraft may purge the log below it.
        inner.db.flush_wal(true)?;
        let name = format!("snap-{seq}.snap");
        let written = write_snapshot(
            &*inner.fs,
            &inner.snap_dir,
            &name,
            self.cluster_id()?,
            meta.clone(),
            &ssts,
        );
        for p in &ssts {
            inner.fs.remove_file(p)?;
        }
        written?;
        inner
            .db
            .put_cf_opt(&inner.meta, K_SNAPSHOT_FILE, name.as_bytes(), &sync_opts())?;
        let path = inner.snap_dir.join(&name);
        let old = inner.sm_state().snapshot_file.replace(name);
        if let Some(o) = old {
            inner.fs.remove_file(&inner.snap_dir.join(o))?;
        }
        Ok(Snapshot {
            meta,
            snapshot: Box::new(SnapshotData::open(inner.fs.clone(), &path)?),
        })
    }

    /// Every key of `cf` as read through `ro`, into SST files of about `SST_TARGET_BYTES` in the
    /// snapshot directory; their paths.
    fn write_ssts(&self, cf: &ColumnFamily, ro: ReadOptions, seq: u64) -> shale::error::Result<Vec<PathBuf>> {
        let inner = &self.inner;
        let mut files = Vec::new();
        let mut it = inner.db.raw_iterator_cf_opt(cf, ro);
        it.seek_to_first();
        let mut writer: Option<SstFileWriter> = None;
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            if writer.is_none() {
                let path = inner.snap_dir.join(format!("build-{seq}-{}.sst", files.len()));
                let mut w = SstFileWriter::create(&inner.opts);
                w.open(&path)?;
                files.push(path);
                writer = Some(w);
            }
            let w = writer.as_mut().expect("just set");
            w.put(k, v)?;
            if w.file_size() >= SST_TARGET_BYTES {
                w.finish()?;
                writer = None;
            }
            it.next();
        }
        it.status()?;
        if let Some(mut w) = writer {
            w.finish()?;
        }
        Ok(files)
    }

    /// Install the snapshot in `data` (a file this store received, or any snapshot file): check
    /// it whole, ingest its SST files into a fresh family, and make that family live.
    fn install(&self, meta: &SnapshotMeta<NodeId, BasicNode>, mut data: SnapshotData) -> shale::error::Result<()> {
        let src = data.reader()?;
        let (header, files) = check_snapshot(&src)?;
        if header.meta != *meta {
            return Err(Error::corruption(
                "snapshot",
                None,
                format!("header meta {:?} is not the meta sent with it {meta:?}", header.meta),
            ));
        }
        if let (Some(mine), Some(theirs)) = (self.cluster_id()?, header.cluster_id.as_ref()) {
            if mine != *theirs {
                return Err(Error::invalid(format!(
                    "snapshot of cluster {theirs} offered to a node of cluster {mine}"
                )));
            }
        }
        let _g = self.lock_snapshots();
        let inner = &self.inner;
        let generation = inner.sm_state().generation + 1;
        let name = format!("{SM_PREFIX}{generation}");
        if inner.db.cf_handle(&name).is_some() {
            inner.db.drop_cf(&name)?;
        }
        inner.db.create_cf(&name, &inner.opts)?;
        let cf = inner
            .db
            .cf_handle(&name)
            .ok_or_else(|| Error::invalid("new family missing"))?;
        let staged = self.stage_into(&cf, generation, meta, &src, &files, &data);
        let snap_name = match staged {
            Ok(n) => n,
            Err(e) => {
                // Nothing names the new family: dropping it (or, after a crash, the next open)
                // leaves the live state machine as it was.
                let _ = inner.db.drop_cf(&name);
                return Err(e);
            }
        };
        // The commit point: one synced write names the new family and its snapshot.
        let mut b = WriteBatch::new();
        b.put_cf(&inner.meta, K_SM_FAMILY, name.as_bytes());
        b.put_cf(&inner.meta, K_SNAPSHOT_FILE, snap_name.as_bytes());
        inner.db.write_opt(b, &sync_opts())?;
        let (old_cf, old_file) = {
            let mut st = inner.sm_state();
            st.generation = generation;
            let old_cf = std::mem::replace(&mut st.cf, cf);
            (old_cf, st.snapshot_file.replace(snap_name))
        };
        inner.db.drop_cf(old_cf.name())?;
        if let Some(o) = old_file {
            inner.fs.remove_file(&inner.snap_dir.join(o))?;
        }
        Ok(())
    }

    /// Ingest the snapshot's files (`files`: offset and length in `src`) into the new family
    /// `cf`, check its applied state against `meta`, and keep the snapshot as this store's
    /// current snapshot file (renamed when it is a file this store received, else copied).
    /// Returns the snapshot file's name.
    fn stage_into(
        &self,
        cf: &ColumnFamily,
        generation: u64,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        src: &Arc<dyn RandomAccessFile>,
        files: &[(u64, u64)],
        data: &SnapshotData,
    ) -> shale::error::Result<String> {
        let inner = &self.inner;
        let mut paths = Vec::with_capacity(files.len());
        for (n, &(off, len)) in files.iter().enumerate() {
            let p = inner.snap_dir.join(format!("incoming-{generation}-{n}.sst"));
            copy_out(&*inner.fs, src, off, len, &p)?;
            paths.push(p);
        }
        if !paths.is_empty() {
            inner.fs.sync_dir(&inner.snap_dir)?;
            let mut io = IngestExternalFileOptions::new();
            io.set_move_files(true);
            io.set_verify_checksums_before_ingest(true);
            let r = inner.db.ingest_external_file_cf_opts(cf, &io, paths.clone());
            for p in &paths {
                if inner.fs.exists(p) {
                    inner.fs.remove_file(p)?;
                }
            }
            r?;
        }
        let (last, mem) = self.read_applied(cf, &ReadOptions::default())?;
        if last != meta.last_log_id || mem != meta.last_membership {
            return Err(Error::corruption(
                "snapshot",
                None,
                format!(
                    "its data says applied {last:?} / {mem:?}, its meta {:?} / {:?}",
                    meta.last_log_id, meta.last_membership
                ),
            ));
        }
        let seq = inner.next_snapshot_seq()?;
        let snap_name = format!("snap-{seq}.snap");
        let to = inner.snap_dir.join(&snap_name);
        if data.path().parent() == Some(inner.snap_dir.as_path()) && is_received(data.path()) {
            inner.fs.rename(data.path(), &to)?;
        } else {
            let tmp = inner.snap_dir.join(format!("{snap_name}.tmp"));
            copy_out(&*inner.fs, src, 0, src.size(), &tmp)?;
            inner.fs.rename(&tmp, &to)?;
        }
        inner.fs.sync_dir(&inner.snap_dir)?;
        Ok(snap_name)
    }

    /// A new file in the snapshot directory to receive a snapshot into; earlier ones that were
    /// never installed (a transfer cut short) are removed first.
    fn begin_receiving(&self) -> shale::error::Result<SnapshotData> {
        let inner = &self.inner;
        for f in inner.fs.list(&inner.snap_dir)? {
            if f.starts_with(RECEIVED_PREFIX) {
                inner.fs.remove_file(&inner.snap_dir.join(f))?;
            }
        }
        let seq = inner.next_snapshot_seq()?;
        let path = inner.snap_dir.join(format!("{RECEIVED_PREFIX}{seq}.snap"));
        SnapshotData::create(inner.fs.clone(), &path)
    }

    /// The current snapshot, its header checked (the files are checked by whoever installs it).
    fn current(&self) -> shale::error::Result<Option<Snapshot<TypeConfig>>> {
        let name = self.inner.sm_state().snapshot_file.clone();
        let Some(name) = name else { return Ok(None) };
        let data = SnapshotData::open(self.inner.fs.clone(), &self.inner.snap_dir.join(name))?;
        let src = self.inner.fs.open_random(data.path())?;
        let (header, _) = read_header(&src)?;
        Ok(Some(Snapshot {
            meta: header.meta,
            snapshot: Box::new(data),
        }))
    }
}

/// Files a snapshot is received into are named `received-<seq>.snap`.
const RECEIVED_PREFIX: &str = "received-";

fn is_received(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(RECEIVED_PREFIX))
}

/// Builds a snapshot of the state machine (openraft's `RaftSnapshotBuilder`).
pub struct ShaleSnapshotBuilder {
    sm: StateMachineStore,
}

impl RaftSnapshotBuilder<TypeConfig> for ShaleSnapshotBuilder {
    async fn build_snapshot(&mut self) -> StorageResult<Snapshot<TypeConfig>> {
        let sm = self.sm.clone();
        blocking(move || sm.build())
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e).into())
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = ShaleSnapshotBuilder;

    async fn applied_state(&mut self) -> StorageResult<Applied> {
        let me = self.clone();
        blocking(move || {
            let cf = me.inner.sm_state().cf.clone();
            me.read_applied(&cf, &ReadOptions::default())
        })
        .await
        .map_err(|e| StorageIOError::read_state_machine(&e).into())
    }

    async fn apply<I>(&mut self, entries: I) -> StorageResult<Vec<Response>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let me = self.clone();
        blocking(move || me.apply_entries(entries))
            .await
            .map_err(|e| write_err(&e))
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        ShaleSnapshotBuilder { sm: self.clone() }
    }

    async fn begin_receiving_snapshot(&mut self) -> StorageResult<Box<SnapshotData>> {
        let me = self.clone();
        blocking(move || me.begin_receiving())
            .await
            .map(Box::new)
            .map_err(|e| StorageIOError::write_snapshot(None, &e).into())
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<SnapshotData>,
    ) -> StorageResult<()> {
        let (me, m) = (self.clone(), meta.clone());
        blocking(move || me.install(&m, *snapshot))
            .await
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e).into())
    }

    async fn get_current_snapshot(&mut self) -> StorageResult<Option<Snapshot<TypeConfig>>> {
        let me = self.clone();
        blocking(move || me.current())
            .await
            .map_err(|e| StorageIOError::read_snapshot(None, &e).into())
    }
}
