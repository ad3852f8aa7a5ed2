//! openraft's network over HTTP: `/raft/append`, `/raft/vote` (JSON) and `/raft/snapshot`
//! (the snapshot file in chunks of `SNAPSHOT_CHUNK` bytes, see `encode_snapshot_request`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    Fatal, InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, SnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, Snapshot, SnapshotMeta, Vote};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::client::{HttpClient, CLUSTER_HEADER, NODE_HEADER};
use super::Shared;
use crate::types::{NodeId, TypeConfig};

/// The bytes of a snapshot one `/raft/snapshot` request carries (the last one: the rest).
pub(crate) const SNAPSHOT_CHUNK: u64 = 8 << 20;

/// The JSON part of a snapshot request: which snapshot, where this chunk goes, whether it is
/// the last (a request without `offset` and `done` carries a whole snapshot).
#[derive(Serialize, Deserialize)]
pub(crate) struct SnapshotRequestHead {
    pub vote: Vote<NodeId>,
    pub meta: SnapshotMeta<NodeId, BasicNode>,
    #[serde(default)]
    pub offset: u64,
    #[serde(default = "yes")]
    pub done: bool,
}

fn yes() -> bool {
    true
}

/// `/raft/snapshot`'s body: u32 little-endian length of the JSON head, the head, the chunk.
pub(crate) fn encode_snapshot_request(head: &SnapshotRequestHead, snapshot: &[u8]) -> Vec<u8> {
    let h = serde_json::to_vec(head).expect("serializable");
    let mut out = Vec::with_capacity(4 + h.len() + snapshot.len());
    out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(snapshot);
    out
}

pub(crate) fn decode_snapshot_request(body: &[u8]) -> Result<(SnapshotRequestHead, &[u8]), String> {
    let n = body.get(..4).ok_or("snapshot request shorter than 4 bytes")?;
    let n = u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize;
    let head = body.get(4..4 + n).ok_or("snapshot request: head past the end")?;
    let head = serde_json::from_slice(head).map_err(|e| format!("snapshot request head: {e}"))?;
    Ok((head, &body[4 + n..]))
}

pub struct Network {
    pub(crate) shared: Arc<Shared>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            client: HttpClient::new(&node.addr, self.shared.token.clone()),
            shared: self.shared.clone(),
            refused_logged: None,
        }
    }
}

pub struct Peer {
    target: NodeId,
    client: HttpClient,
    shared: Arc<Shared>,
    /// The last refused snapshot logged (its id and reason) and when: openraft sends it again
    /// after each backoff, and one line per refusal every 30 s is enough.
    refused_logged: Option<(String, String, std::time::Instant)>,
}

/// What can go wrong on the wire: unreachable (back off) or an answer that is not a Raft
/// answer (an HTTP error such as 401 or 409: retried).
enum WireError {
    Unreachable(String),
    Refused(String),
}

impl Peer {
    async fn call(&mut self, path: &str, body: Vec<u8>, timeout: Duration) -> Result<Vec<u8>, WireError> {
        let cluster = self.shared.cluster_id();
        let target = self.target.to_string();
        let mut headers: Vec<(&str, &str)> = vec![(NODE_HEADER, &target)];
        headers.extend(cluster.as_deref().map(|c| (CLUSTER_HEADER, c)));
        let (status, bytes) = self
            .client
            .post(path, body, &headers, timeout)
            .await
            .map_err(WireError::Unreachable)?;
        if !status.is_success() {
            return Err(WireError::Refused(format!(
                "node {} ({}) answered {status}: {}",
                self.target,
                self.client.addr(),
                String::from_utf8_lossy(&bytes)
            )));
        }
        Ok(bytes.to_vec())
    }

    async fn rpc<Req: Serialize, Resp: DeserializeOwned, E: std::error::Error + DeserializeOwned>(
        &mut self,
        path: &str,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>> {
        let body = serde_json::to_vec(req).expect("serializable");
        let bytes = self.call(path, body, option.hard_ttl()).await.map_err(|e| match e {
            WireError::Unreachable(m) => RPCError::Unreachable(Unreachable::new(&std::io::Error::other(m))),
            WireError::Refused(m) => RPCError::Network(NetworkError::new(&std::io::Error::other(m))),
        })?;
        let r: Result<Resp, RaftError<NodeId, E>> =
            serde_json::from_slice(&bytes).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.rpc("/raft/append", &rpc, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId>>> {
        self.rpc("/raft/vote", &rpc, &option).await
    }

    /// Snapshots go whole through `full_snapshot`; openraft calls this chunked form only when
    /// `full_snapshot` is its default, which it is not here.
    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RPCError<NodeId, BasicNode, RaftError<NodeId, InstallSnapshotError>>>
    {
        Err(RPCError::Network(NetworkError::new(&std::io::Error::other(
            "chunked snapshots are not used: snapshots are sent whole",
        ))))
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote<NodeId>,
        snapshot: Snapshot<TypeConfig>,
        _cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let mut data = snapshot.snapshot;
        let src = data
            .reader()
            .map_err(|e| StreamingError::Network(NetworkError::new(&std::io::Error::other(e.to_string()))))?;
        let total = src.size();
        // A chunk may take longer than a heartbeat-sized budget.
        let timeout = option.hard_ttl().max(Duration::from_secs(60));
        let mut offset = 0u64;
        loop {
            let n = (total - offset).min(SNAPSHOT_CHUNK) as usize;
            let f = src.clone();
            let chunk = tokio::task::spawn_blocking(move || {
                let mut buf = vec![0u8; n];
                f.read_exact_at(offset, &mut buf).map(|()| buf)
            })
            .await
            .map_err(|e| StreamingError::Network(NetworkError::new(&std::io::Error::other(e.to_string()))))?
            .map_err(|e| StreamingError::Network(NetworkError::new(&std::io::Error::other(e.to_string()))))?;
            let done = offset + n as u64 == total;
            let head = SnapshotRequestHead {
                vote,
                meta: snapshot.meta.clone(),
                offset,
                done,
            };
            let body = encode_snapshot_request(&head, &chunk);
            let bytes = match self.call("/raft/snapshot", body, timeout).await {
                Ok(b) => b,
                Err(WireError::Unreachable(m)) => {
                    return Err(StreamingError::Unreachable(Unreachable::new(&std::io::Error::other(m))))
                }
                Err(WireError::Refused(m)) => {
                    // The follower answered but would not take it (over its
                    // --max_snapshot_bytes, a damaged chunk, another cluster): say so here too,
                    // the leader's operator would otherwise see a follower that never catches up.
                    let id = snapshot.meta.snapshot_id.to_string();
                    let repeat = matches!(&self.refused_logged,
                        Some((i, r, at)) if *i == id && *r == m && at.elapsed() < Duration::from_secs(30));
                    if !repeat {
                        tracing::warn!(target_node = self.target, bytes = total, offset, snapshot_id = %id, reason = %m, "snapshot refused by the follower");
                        self.refused_logged = Some((id, m.clone(), std::time::Instant::now()));
                    }
                    return Err(StreamingError::Network(NetworkError::new(&std::io::Error::other(m))));
                }
            };
            if done {
                tracing::info!(target_node = self.target, bytes = total, snapshot_id = %snapshot.meta.snapshot_id, "snapshot sent");
                let r: Result<SnapshotResponse<NodeId>, Fatal<NodeId>> =
                    serde_json::from_slice(&bytes).map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
                return r.map_err(|e| StreamingError::RemoteError(RemoteError::new(self.target, e)));
            }
            offset += n as u64;
        }
    }

    fn backoff(&self) -> openraft::network::Backoff {
        openraft::network::Backoff::new(std::iter::repeat(Duration::from_millis(200)))
    }
}
