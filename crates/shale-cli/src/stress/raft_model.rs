//! The model of `shale stress --raft` (see `raft`): what the Raft store acknowledged, and
//! the states it may come back in after a crash or a power loss.

use std::collections::BTreeMap;
use std::io::SeekFrom;

use openraft::storage::{RaftLogStorage, RaftStateMachine, Snapshot};
use openraft::{BasicNode, Entry, EntryPayload, LogId, RaftLogReader, SnapshotMeta, StoredMembership, Vote};
use shale_raft::{LogStore, Request, StateMachineStore, TypeConfig};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

pub(crate) type Id = LogId<u64>;

/// The log side of a store: every change to it is a synced write, so after a crash or a power
/// loss it is what was acknowledged, or that plus the one operation in flight.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct LogModel {
    /// index -> the entry, as `Debug` text (entries have no `PartialEq`) with its id.
    pub entries: BTreeMap<u64, (Id, String)>,
    pub last_purged: Option<Id>,
    pub vote: Option<Vote<u64>>,
    pub committed: Option<Id>,
}

impl LogModel {
    pub fn last_index(&self) -> u64 {
        self.entries
            .keys()
            .next_back()
            .copied()
            .or(self.last_purged.map(|l| l.index))
            .unwrap_or(0)
    }
    pub fn last_id(&self) -> Option<Id> {
        self.entries.values().next_back().map(|e| e.0).or(self.last_purged)
    }
}

/// The state machine: the applied id, the membership and the data.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct SmModel {
    pub applied: Option<Id>,
    pub membership: StoredMembership<u64, BasicNode>,
    pub data: BTreeMap<String, String>,
}

impl SmModel {
    pub fn applied_index(&self) -> u64 {
        self.applied.map(|l| l.index).unwrap_or(0)
    }

    /// Apply `ents` as the store does.
    pub fn apply(&mut self, ents: &[Entry<TypeConfig>]) {
        for e in ents {
            self.applied = Some(e.log_id);
            match &e.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(Request::Set { key, value }) => {
                    self.data.insert(key.clone(), value.clone());
                }
                EntryPayload::Normal(Request::Delete { key }) => {
                    self.data.remove(key);
                }
                EntryPayload::Membership(m) => self.membership = StoredMembership::new(Some(e.log_id), m.clone()),
            }
        }
    }
}

/// What one operation would change if it took effect.
#[derive(Clone, Debug)]
pub(crate) enum Change {
    Log(LogModel),
    Sm(SmModel),
    /// A snapshot build of the state machine applied up to this id: if it got as far as
    /// recording its file, that snapshot is current.
    Build(Option<Id>),
    /// An install: the state machine and the current snapshot, both or neither.
    Install(SmModel, SnapshotMeta<u64, BasicNode>),
}

/// The acknowledged state and the history of the state machine since the last durable point.
pub(crate) struct Model {
    pub log: LogModel,
    /// The state machine after each acknowledged change; the last is the current one. Applies
    /// are not synced: a power loss may take the store back to any of these from `floor` on.
    pub sm_hist: Vec<SmModel>,
    pub floor: usize,
    pub snapshot: Option<SnapshotMeta<u64, BasicNode>>,
}

impl Model {
    pub fn new() -> Model {
        Model {
            log: LogModel::default(),
            sm_hist: vec![SmModel::default()],
            floor: 0,
            snapshot: None,
        }
    }
    pub fn sm(&self) -> &SmModel {
        self.sm_hist.last().expect("never empty")
    }
    /// A synced write succeeded: every earlier state-machine write is durable.
    pub fn synced(&mut self) {
        self.floor = self.sm_hist.len() - 1;
    }
    pub fn push_sm(&mut self, sm: SmModel) {
        self.sm_hist.push(sm);
    }
    /// After recovery: the recovered state is the acknowledged one from now on.
    pub fn reset_to(&mut self, got: Recovered) {
        self.log = got.log;
        self.sm_hist = vec![got.sm];
        self.floor = 0;
        self.snapshot = got.snapshot;
    }
}

/// What a reopened store holds.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub log: LogModel,
    pub sm: SmModel,
    pub snapshot: Option<SnapshotMeta<u64, BasicNode>>,
}

pub(crate) fn entry_text(e: &Entry<TypeConfig>) -> (Id, String) {
    (e.log_id, format!("{:?}", e.payload))
}

/// Read everything back from a reopened store.
pub(crate) async fn read_back(
    log: &mut LogStore,
    sm: &mut StateMachineStore,
    keys: &[String],
) -> Result<Recovered, String> {
    let st = log.get_log_state().await.map_err(|e| format!("get_log_state: {e}"))?;
    let ents = log
        .try_get_log_entries(0..u64::MAX)
        .await
        .map_err(|e| format!("reading the log: {e}"))?;
    let lm = LogModel {
        entries: ents.iter().map(|e| (e.log_id.index, entry_text(e))).collect(),
        last_purged: st.last_purged_log_id,
        vote: log.read_vote().await.map_err(|e| format!("read_vote: {e}"))?,
        committed: log.read_committed().await.map_err(|e| format!("read_committed: {e}"))?,
    };
    if st.last_log_id != lm.last_id() {
        return Err(format!(
            "get_log_state's last log id {:?} is not the last entry's {:?}",
            st.last_log_id,
            lm.last_id()
        ));
    }
    let (applied, membership) = sm.applied_state().await.map_err(|e| format!("applied_state: {e}"))?;
    let mut data = BTreeMap::new();
    for k in keys {
        if let Some(v) = sm.get(k).map_err(|e| format!("get {k}: {e}"))? {
            data.insert(k.clone(), v);
        }
    }
    let snapshot = match sm.get_current_snapshot().await {
        Ok(s) => s.map(|s| s.meta),
        Err(e) => return Err(format!("get_current_snapshot: {e}")),
    };
    Ok(Recovered {
        log: lm,
        sm: SmModel {
            applied,
            membership,
            data,
        },
        snapshot,
    })
}

/// Check what a reopened store holds against the model and the operation in flight when the
/// store went down (`power`: a power loss, so unsynced state-machine writes may be gone).
pub(crate) fn check(model: &Model, inflight: Option<&Change>, got: &Recovered, power: bool) -> Result<(), String> {
    let log_ok = got.log == model.log || matches!(inflight, Some(Change::Log(l)) if *l == got.log);
    if !log_ok {
        return Err(format!(
            "log/vote/committed after recovery {:?}\nacknowledged {:?}\nin flight {:?}",
            got.log, model.log, inflight
        ));
    }
    let from = if power { model.floor } else { model.sm_hist.len() - 1 };
    let mut sms: Vec<&SmModel> = model.sm_hist[from..].iter().collect();
    let mut snaps = vec![&model.snapshot];
    match inflight {
        Some(Change::Sm(s)) => sms.push(s),
        Some(Change::Build(applied))
            if got.snapshot.as_ref().is_some_and(|m| m.last_log_id == *applied) && got.snapshot != model.snapshot =>
        {
            snaps.push(&got.snapshot)
        }
        Some(Change::Install(s, m)) if got.snapshot.as_ref() == Some(m) => {
            // The install's commit point names both: its state machine must be there.
            if got.sm != *s {
                return Err(format!(
                    "the installed snapshot is current but the state machine is {:?}, not {s:?}",
                    got.sm
                ));
            }
            return Ok(());
        }
        _ => {}
    }
    if !sms.iter().any(|s| **s == got.sm) {
        let applied: Vec<_> = sms.iter().map(|s| s.applied).collect();
        return Err(format!(
            "state machine after recovery (applied {:?}, {} keys) is none of the states allowed (applied {applied:?}){}",
            got.sm.applied,
            got.sm.data.len(),
            if power { " since the last synced write" } else { "" }
        ));
    }
    if !snaps.iter().any(|s| **s == got.snapshot) {
        return Err(format!(
            "current snapshot {:?} is neither the acknowledged {:?} nor the one in flight",
            got.snapshot.as_ref().map(|m| &m.snapshot_id),
            model.snapshot.as_ref().map(|m| &m.snapshot_id)
        ));
    }
    Ok(())
}

/// The bytes of a snapshot handed out by the store.
pub(crate) async fn snapshot_bytes(s: &mut Snapshot<TypeConfig>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    s.snapshot
        .seek(SeekFrom::Start(0))
        .await
        .map_err(|e| format!("seeking a snapshot: {e}"))?;
    s.snapshot
        .read_to_end(&mut out)
        .await
        .map_err(|e| format!("reading a snapshot: {e}"))?;
    Ok(out)
}
