//! The Raft type configuration of the replicated key-value service.

use serde::{Deserialize, Serialize};

/// A node's id in the cluster.
pub type NodeId = u64;

/// A client command, replicated through the log and applied to the state machine.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub enum Request {
    /// Set `key` to `value`.
    Set { key: String, value: String },
    /// Remove `key`.
    Delete { key: String },
}

/// What applying one log entry answers: the value the command wrote (`None` for a delete, a
/// blank or a membership entry).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub value: Option<String>,
}

openraft::declare_raft_types!(
    /// openraft's types for Shale's key-value service: `u64` node ids, `BasicNode` (an address),
    /// snapshots as files (`SnapshotData`).
    pub TypeConfig:
        D = Request,
        R = Response,
        SnapshotData = crate::snapshot_data::SnapshotData,
);
