//! The membership endpoints: `/add-learner`, `/remove-learner`, `/change-membership`. Each
//! request is checked on the leader before openraft sees it (docs/raft.md, *Membership*): the
//! address parsed and probed, no second id for an address nor a second address for an id, no
//! id twice, no change that leaves the new voters without a majority that answers (unless
//! forced); and each answers within a bounded time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use hyper::StatusCode;
use openraft::error::{ClientWriteError, ForwardToLeader, RaftError};
use openraft::{BasicNode, ChangeMembers, RaftMetrics};
use serde::Deserialize;

use super::client::CLUSTER_HEADER;
use super::http::{client_write_error, error, forward, json, outcome_unknown, parse, parse_object, Resp};
use super::{HttpClient, Shared};
use crate::types::NodeId;

/// How long a node is given to answer a probe (`GET /metrics`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long `/add-learner` waits for the learner to catch up, and a membership change for its
/// commit: together with a probe, within the 20 s a forwarding node waits for the answer.
const MEMBERSHIP_WAIT: Duration = Duration::from_secs(6);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LearnerBody {
    id: NodeId,
    addr: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdBody {
    id: NodeId,
}

/// `host:port` with a port in 1..=65535 and a host of letters, digits, `.`, `-`, `_` (a name
/// or an IPv4 address) or a bracketed IPv6 address.
pub(super) fn check_addr(addr: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("address {addr:?}: {why} (expected host:port)"));
    let Some((host, port)) = addr.rsplit_once(':') else {
        return bad("no port");
    };
    match port.parse::<u16>() {
        Ok(0) | Err(_) => return bad("the port must be a number from 1 to 65535"),
        Ok(_) => {}
    }
    let ok_host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
    };
    if !ok_host {
        return bad("bad host");
    }
    Ok(())
}

/// The leader as openraft's metrics know it, when it is not this node: where to forward.
fn not_leader(shared: &Shared, m: &RaftMetrics<NodeId, BasicNode>) -> Option<ForwardToLeader<NodeId, BasicNode>> {
    if m.current_leader == Some(shared.id) {
        return None;
    }
    let node = m
        .current_leader
        .and_then(|l| m.membership_config.nodes().find(|(id, _)| **id == l));
    Some(ForwardToLeader {
        leader_id: m.current_leader,
        leader_node: node.map(|(_, n)| n.clone()),
    })
}

/// This node's metrics once it knows a leader (just after `/init`, or during an election,
/// it may not yet), waiting for one up to `MEMBERSHIP_WAIT`.
async fn metrics(shared: &Shared) -> RaftMetrics<NodeId, BasicNode> {
    let raft = shared.raft();
    let _ = raft
        .wait(Some(MEMBERSHIP_WAIT))
        .metrics(|m| m.current_leader.is_some(), "a leader")
        .await;
    raft.metrics().borrow().clone()
}

/// Ask `addr` which node it is: `Ok(id)`, or why it did not say. The probe names this node's
/// cluster, as a peer's request does: a node's reserved connections answer it.
/// A connection refused (a busy node, its connections all taken) is tried again every 200 ms
/// within `PROBE_TIMEOUT`.
async fn probe(shared: &Shared, addr: &str) -> Result<NodeId, String> {
    let mut c = HttpClient::new(addr, shared.token.clone());
    let cluster = shared.cluster_id().unwrap_or_default();
    let end = tokio::time::Instant::now() + PROBE_TIMEOUT;
    let (status, body) = loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match c.get("/metrics", &[(CLUSTER_HEADER, &cluster)], left).await {
            Ok(r) => break r,
            Err(e) if left <= Duration::from_millis(200) => return Err(e),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    if status != StatusCode::OK {
        return Err(format!("{addr} answered {status}"));
    }
    let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("{addr}: not a shale node: {e}"))?;
    v["id"].as_u64().ok_or_else(|| format!("{addr}: not a shale node"))
}

/// A membership change through openraft, answered within `MEMBERSHIP_WAIT`: its log id, or a
/// 504 saying it may still be committed (it goes on: a joint change completes by itself once
/// the new voters answer).
async fn change(shared: &Shared, members: ChangeMembers<NodeId, BasicNode>) -> Result<openraft::LogId<NodeId>, Resp> {
    // On a task of its own: a joint change is two log entries, the second proposed once the
    // first committed; it goes on when the answer no longer waits for it.
    let raft = shared.raft().clone();
    let task = tokio::spawn(async move { raft.change_membership(members, false).await });
    match tokio::time::timeout(MEMBERSHIP_WAIT, task).await {
        Ok(Err(e)) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, e)),
        Ok(Ok(Ok(r))) => Ok(r.log_id),
        Ok(Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))))) => Err(json(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({
                "error": "this node stopped being the leader: nothing was changed, try again",
                "leader_id": f.leader_id,
            }),
        )),
        Ok(Ok(Err(e))) => Err(client_write_error(&e)),
        Err(_) => Err(outcome_unknown(format!(
            "the membership change was not committed within {MEMBERSHIP_WAIT:?} (no quorum?); it stays proposed"
        ))),
    }
}

pub(super) async fn add_learner(shared: &Shared, body: &[u8], forwarded: bool) -> Resp {
    let l: LearnerBody = match parse_object(body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if l.id == 0 {
        return error(StatusCode::BAD_REQUEST, "node id must be positive");
    }
    if let Err(m) = check_addr(&l.addr) {
        return error(StatusCode::BAD_REQUEST, m);
    }
    let m = metrics(shared).await;
    if let Some(f) = not_leader(shared, &m) {
        return forward(shared, &f, "/add-learner", body, forwarded).await;
    }
    for (id, node) in m.membership_config.nodes() {
        if *id == l.id && node.addr != l.addr {
            return error(
                StatusCode::CONFLICT,
                format!("node {id} is already a member at {}: remove it first", node.addr),
            );
        }
        if *id != l.id && node.addr == l.addr {
            return error(
                StatusCode::CONFLICT,
                format!("address {} is already node {id}'s", l.addr),
            );
        }
    }
    match probe(shared, &l.addr).await {
        Ok(id) if id == l.id => {}
        Ok(id) => {
            return error(
                StatusCode::CONFLICT,
                format!("{} answers as node {id}, not node {}", l.addr, l.id),
            )
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("probing {}: {e}", l.addr)),
    }
    let members = ChangeMembers::AddNodes(BTreeMap::from([(l.id, BasicNode::new(&l.addr))]));
    let log_id = match change(shared, members).await {
        Ok(id) => id,
        Err(r) => return r,
    };
    // Caught up: the leader replicated to it up to the membership entry.
    let caught_up = shared
        .raft()
        .wait(Some(MEMBERSHIP_WAIT))
        .metrics(
            |m| {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(&l.id).copied().flatten())
                    .is_some_and(|matched| matched.index >= log_id.index)
            },
            "learner caught up",
        )
        .await
        .is_ok();
    let status = if caught_up {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    json(status, &serde_json::json!({ "log_id": log_id, "caught_up": caught_up }))
}

pub(super) async fn remove_learner(shared: &Shared, body: &[u8], forwarded: bool) -> Resp {
    let r: IdBody = match parse_object(body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let m = metrics(shared).await;
    if let Some(f) = not_leader(shared, &m) {
        return forward(shared, &f, "/remove-learner", body, forwarded).await;
    }
    let config = m.membership_config.membership();
    if config.voter_ids().any(|v| v == r.id) {
        return error(
            StatusCode::BAD_REQUEST,
            format!("node {} is a voter: /change-membership without it first", r.id),
        );
    }
    if !config.learner_ids().any(|v| v == r.id) {
        return error(StatusCode::BAD_REQUEST, format!("node {} is not a learner", r.id));
    }
    match change(shared, ChangeMembers::RemoveNodes(BTreeSet::from([r.id]))).await {
        Ok(log_id) => json(StatusCode::OK, &serde_json::json!({ "log_id": log_id })),
        Err(r) => r,
    }
}

pub(super) async fn change_membership(shared: &Shared, body: &[u8], force: bool, forwarded: bool) -> Resp {
    let ids: Vec<NodeId> = match parse(body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let voters: BTreeSet<NodeId> = ids.iter().copied().collect();
    if voters.is_empty() {
        return error(StatusCode::BAD_REQUEST, "the list of voters is empty");
    }
    if voters.len() != ids.len() {
        let twice = ids.iter().find(|i| ids.iter().filter(|j| j == i).count() > 1);
        return error(
            StatusCode::BAD_REQUEST,
            format!("node {} appears more than once in {ids:?}", twice.copied().unwrap_or(0)),
        );
    }
    let m = metrics(shared).await;
    if let Some(f) = not_leader(shared, &m) {
        let path = if force {
            "/change-membership?force=true"
        } else {
            "/change-membership"
        };
        return forward(shared, &f, path, body, forwarded).await;
    }
    let nodes: BTreeMap<NodeId, BasicNode> = m.membership_config.nodes().map(|(id, n)| (*id, n.clone())).collect();
    if let Some(id) = voters.iter().find(|id| !nodes.contains_key(id)) {
        return error(
            StatusCode::BAD_REQUEST,
            format!("node {id} not found among the members and learners: /add-learner it first"),
        );
    }
    if !force {
        if let Err(r) = check_quorum(shared, &voters, &nodes).await {
            return r;
        }
    }
    match change(shared, ChangeMembers::ReplaceAllVoters(voters)).await {
        Ok(log_id) => json(StatusCode::OK, &serde_json::json!({ "log_id": log_id })),
        Err(r) => r,
    }
}

/// A majority of the new voters must answer a probe as themselves (this node counts as
/// answering), else 409: the cluster would stop taking writes.
async fn check_quorum(
    shared: &Shared,
    voters: &BTreeSet<NodeId>,
    nodes: &BTreeMap<NodeId, BasicNode>,
) -> Result<(), Resp> {
    // One probe after the other: each is bounded (3 s), and lists of voters are short.
    let mut down = Vec::new();
    for id in voters.iter().copied().filter(|id| *id != shared.id) {
        match probe(shared, &nodes[&id].addr).await {
            Ok(answered) if answered == id => {}
            Ok(answered) => down.push(format!("node {id} (its address answers as node {answered})")),
            Err(e) => down.push(format!("node {id} ({e})")),
        }
    }
    let up = voters.len() - down.len();
    if up * 2 > voters.len() {
        return Ok(());
    }
    down.sort();
    Err(error(
        StatusCode::CONFLICT,
        format!(
            "would lose quorum: {up} of the {} new voters answer, a majority is needed; not answering: {}. Add ?force=true to change it anyway",
            voters.len(),
            down.join(", ")
        ),
    ))
}
