//! The routes of `shale serve`: authentication, body limits, the client endpoints (forwarded to
//! the leader when this node is not it) and the Raft RPCs.

// `Result<_, Resp>`: the error is the finished HTTP answer, built once per failed request.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use openraft::error::{CheckIsLeaderError, ClientWriteError, ForwardToLeader, RaftError};
use openraft::storage::RaftStateMachine;
use openraft::{BasicNode, Snapshot};
use serde::{Deserialize, Serialize};

use super::client::{AUTH_HEADER, CLUSTER_HEADER, FORWARDED_HEADER, NODE_HEADER};
use super::network::SNAPSHOT_CHUNK;
use super::{decode_snapshot_request, membership, Shared};
use crate::snapshot::check_snapshot;
use crate::types::{NodeId, Request as KvRequest};

pub(super) type Resp = Response<Full<Bytes>>;

/// Client requests are small; an append carries a batch of entries.
const MAX_CLIENT_BODY: usize = 1 << 20;
const MAX_APPEND_BODY: usize = 64 << 20;
const FORWARD_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the leader waits for a write to commit and apply before it answers 504: within
/// `FORWARD_TIMEOUT`, so that a forwarding node gets the leader's answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(8);

pub(super) fn reply(status: StatusCode, body: Vec<u8>) -> Resp {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("valid response")
}

pub(super) fn json<T: Serialize>(status: StatusCode, v: &T) -> Resp {
    reply(status, serde_json::to_vec(v).expect("serializable"))
}

/// A JSON error, and its line in the log (inside the request's span: path and peer).
pub(super) fn error(status: StatusCode, msg: impl std::fmt::Display) -> Resp {
    let msg = msg.to_string();
    if status.is_server_error() {
        tracing::warn!(status = status.as_u16(), reason = %msg, "request failed");
    } else {
        tracing::info!(status = status.as_u16(), reason = %msg, "request refused");
    }
    json(status, &serde_json::json!({ "error": msg }))
}

/// Equal bytes, in a time that depends only on the length of `expected`.
fn constant_time_eq(expected: &[u8], given: &[u8]) -> bool {
    let mut diff = expected.len() ^ given.len();
    for (i, e) in expected.iter().enumerate() {
        diff |= usize::from(e ^ given.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

fn authorized(shared: &Shared, req: &Request<Incoming>) -> bool {
    let Some(token) = &shared.token else { return true };
    let given = req
        .headers()
        .get(AUTH_HEADER)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .unwrap_or(b"");
    constant_time_eq(token.as_bytes(), given)
}

/// The largest body of a snapshot chunk: the chunk, its head, bounded by `--max_snapshot_bytes`.
fn snapshot_body_limit(max_snapshot_bytes: usize) -> usize {
    (SNAPSHOT_CHUNK as usize).min(max_snapshot_bytes) + (1 << 20)
}

/// The largest body any route accepts.
pub(crate) fn largest_body(max_snapshot_bytes: usize) -> usize {
    MAX_APPEND_BODY
        .max(MAX_CLIENT_BODY)
        .max(snapshot_body_limit(max_snapshot_bytes))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    Metrics,
    Init,
    AddLearner,
    RemoveLearner,
    ChangeMembership,
    Write,
    Read,
    ReadLocal,
    Append,
    Vote,
    Snapshot,
}

fn route(method: &Method, path: &str) -> Option<Route> {
    Some(match (method, path) {
        (&Method::GET, "/metrics") => Route::Metrics,
        (&Method::POST, "/init") => Route::Init,
        (&Method::POST, "/add-learner") => Route::AddLearner,
        (&Method::POST, "/remove-learner") => Route::RemoveLearner,
        (&Method::POST, "/change-membership") => Route::ChangeMembership,
        (&Method::POST, "/write") => Route::Write,
        (&Method::POST, "/read") => Route::Read,
        (&Method::POST, "/read-local") => Route::ReadLocal,
        (&Method::POST, "/raft/append") => Route::Append,
        (&Method::POST, "/raft/vote") => Route::Vote,
        (&Method::POST, "/raft/snapshot") => Route::Snapshot,
        _ => return None,
    })
}

impl Route {
    fn is_raft(self) -> bool {
        matches!(self, Route::Append | Route::Vote | Route::Snapshot)
    }

    /// The largest body the route accepts.
    fn body_limit(self, shared: &Shared) -> usize {
        match self {
            Route::Snapshot => snapshot_body_limit(shared.max_snapshot_bytes),
            Route::Append => MAX_APPEND_BODY,
            Route::Metrics | Route::Init => 4096,
            _ => MAX_CLIENT_BODY,
        }
    }
}

/// An answer after which the connection is closed: its request body, if any, is never read.
fn refuse(status: StatusCode, msg: impl std::fmt::Display) -> Resp {
    let mut r = error(status, msg);
    r.headers_mut().insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    r
}

/// Everything that can be decided from the head of a request, decided before its body is read:
/// the token, the route, a reserved (peers') connection, the cluster of a Raft RPC, the
/// declared length. A refusal here reads nothing and changes nothing.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
    reserved: bool,
    peer: std::net::SocketAddr,
) -> Result<Resp, Infallible> {
    use tracing::Instrument;
    let span = tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), %peer);
    Ok(match handle_checked(&shared, req, reserved).instrument(span).await {
        Ok(r) | Err(r) => r,
    })
}

async fn handle_checked(shared: &Shared, req: Request<Incoming>, reserved: bool) -> Result<Resp, Resp> {
    if !authorized(shared, &req) {
        return Err(refuse(StatusCode::UNAUTHORIZED, "missing or wrong token"));
    }
    let Some(route) = route(req.method(), req.uri().path()) else {
        return Err(refuse(
            StatusCode::NOT_FOUND,
            format!("no route {} {}", req.method(), req.uri().path()),
        ));
    };
    let cluster = req
        .headers()
        .get(CLUSTER_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    // A peer's RPCs, and the leader's probe of a node it is adding (`GET /metrics`).
    if reserved && !((route.is_raft() || route == Route::Metrics) && cluster.is_some()) {
        return Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "connection limit reached: the remaining connections are kept for Raft peers",
        ));
    }
    // For a Raft RPC: the cluster to record once the request proved well formed.
    let adopt = if route.is_raft() {
        let adopt = check_cluster(shared, cluster.as_deref())?;
        check_node(shared, req.headers().get(NODE_HEADER))?;
        adopt
    } else {
        None
    };
    let forwarded = req.headers().contains_key(FORWARDED_HEADER);
    let force = req.uri().query() == Some("force=true");
    let limit = route.body_limit(shared);
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("body over {limit} bytes"),
        ));
    }
    // Room in the memory bodies may take (none: refused at once, the sender retries), then the
    // body itself within the body timeout.
    let room = declared.map_or(limit, |n| n as usize);
    let _room = shared
        .body_memory
        .clone()
        .try_acquire_many_owned(super::body_permits(room))
        .map_err(|_| refuse(StatusCode::SERVICE_UNAVAILABLE, "too many request bodies in memory"))?;
    let body = match tokio::time::timeout(shared.body_timeout, Limited::new(req.into_body(), limit).collect()).await {
        Err(_) => {
            return Err(refuse(
                StatusCode::REQUEST_TIMEOUT,
                format!("body not received within {:?}", shared.body_timeout),
            ))
        }
        Ok(Err(e)) if e.is::<LengthLimitError>() => {
            return Err(refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body over {limit} bytes"),
            ))
        }
        Ok(Err(e)) => return Err(refuse(StatusCode::BAD_REQUEST, format!("reading the body: {e}"))),
        Ok(Ok(b)) => b.to_bytes(),
    };
    Ok(match route {
        Route::Metrics => json(StatusCode::OK, &*shared.raft().metrics().borrow()),
        Route::Init => init(shared).await,
        Route::AddLearner => membership::add_learner(shared, &body, forwarded).await,
        Route::RemoveLearner => membership::remove_learner(shared, &body, forwarded).await,
        Route::ChangeMembership => membership::change_membership(shared, &body, force, forwarded).await,
        Route::Write => write(shared, &body, forwarded).await,
        Route::Read => read(shared, &body, forwarded).await,
        Route::ReadLocal => read_local(shared, &body).await,
        Route::Append | Route::Vote | Route::Snapshot => raft_rpc(shared, route, &body, adopt.as_deref()).await,
    })
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Resp> {
    serde_json::from_slice(body).map_err(|e| error(StatusCode::BAD_REQUEST, format!("malformed JSON body: {e}")))
}

/// A client's body: a JSON object of the documented shape (serde would also take a struct from
/// an array, `["a"]` for `{"key": "a"}`: refused), unknown fields refused by the types.
pub(super) fn parse_object<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Resp> {
    let v: serde_json::Value = parse(body)?;
    if !v.is_object()
        || v.as_object()
            .is_some_and(|o| o.values().any(serde_json::Value::is_array))
    {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "malformed JSON body: not an object of the documented shape",
        ));
    }
    serde_json::from_value(v).map_err(|e| error(StatusCode::BAD_REQUEST, format!("malformed JSON body: {e}")))
}

/// A Raft RPC must name its cluster (`x-shale-cluster`, as every node sends it): a node of
/// another cluster is refused (409). A node without a cluster id yet is given the one to record
/// once the request proved well formed (`adopt`), so a malformed request records nothing.
fn check_cluster(shared: &Shared, theirs: Option<&str>) -> Result<Option<String>, Resp> {
    let Some(theirs) = theirs else {
        return Err(refuse(
            StatusCode::CONFLICT,
            "cluster mismatch: the request names no cluster",
        ));
    };
    if theirs.is_empty() || theirs.len() > 64 || !theirs.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "x-shale-cluster must be 1 to 64 letters and digits",
        ));
    }
    match shared.cluster_id() {
        Some(mine) if mine == theirs => Ok(None),
        Some(mine) => Err(refuse(
            StatusCode::CONFLICT,
            format!("cluster mismatch: this node belongs to cluster {mine}, the request comes from cluster {theirs}"),
        )),
        None => Ok(Some(theirs.to_string())),
    }
}

/// A Raft RPC names the node it is for (`x-shale-node`): another node's (an address given to
/// two ids, a directory moved) is refused, 409.
fn check_node(shared: &Shared, named: Option<&hyper::header::HeaderValue>) -> Result<(), Resp> {
    let named = named.ok_or_else(|| refuse(StatusCode::CONFLICT, "node mismatch: the request names no node"))?;
    match named.to_str().ok().and_then(|v| v.parse::<NodeId>().ok()) {
        Some(id) if id == shared.id => Ok(()),
        Some(id) => Err(refuse(
            StatusCode::CONFLICT,
            format!(
                "node mismatch: this is node {}, the request is for node {id}",
                shared.id
            ),
        )),
        None => Err(refuse(StatusCode::BAD_REQUEST, "x-shale-node must be a node id")),
    }
}

/// Record the cluster of a well-formed Raft RPC on a node that has none yet.
fn adopt(shared: &Shared, cluster: Option<&str>) -> Result<(), Resp> {
    match cluster {
        Some(c) => shared.adopt_cluster(c).map_err(|m| error(StatusCode::CONFLICT, m)),
        None => Ok(()),
    }
}

async fn raft_rpc(shared: &Shared, route: Route, body: &[u8], cluster: Option<&str>) -> Resp {
    let raft = shared.raft();
    let r = match route {
        Route::Append => match parse(body).and_then(|r| adopt(shared, cluster).map(|()| r)) {
            Ok(r) => Ok(json(StatusCode::OK, &raft.append_entries(r).await)),
            Err(e) => Err(e),
        },
        Route::Vote => match parse(body).and_then(|r| adopt(shared, cluster).map(|()| r)) {
            Ok(r) => Ok(json(StatusCode::OK, &raft.vote(r).await)),
            Err(e) => Err(e),
        },
        _ => receive_snapshot_chunk(shared, body, cluster).await,
    };
    r.unwrap_or_else(|e| e)
}

/// One chunk of a snapshot: appended to the file it is received into; the last one has the
/// whole file checked (checksums, meta, cluster) *before* openraft sees it — a damaged snapshot
/// is answered 400 and never installed (openraft would take a failed install as fatal), and
/// the leader sends it again later.
async fn receive_snapshot_chunk(shared: &Shared, body: &[u8], cluster: Option<&str>) -> Result<Resp, Resp> {
    let (head, bytes) = decode_snapshot_request(body).map_err(|m| error(StatusCode::BAD_REQUEST, m))?;
    adopt(shared, cluster)?;
    let mut incoming = shared.incoming.lock().await;
    let id = head.meta.snapshot_id.clone();
    if head.offset == 0 {
        let mut sm = shared.sm.clone();
        let data = sm
            .begin_receiving_snapshot()
            .await
            .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e))?;
        *incoming = Some((id.clone(), 0, *data));
    }
    let (mut data, next) = match incoming.take() {
        Some((i, next, data)) if i == id && next == head.offset => (data, next),
        _ => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                format!("snapshot {id}: chunk at {} is not the next one expected", head.offset),
            ))
        }
    };
    let end = next + bytes.len() as u64;
    if end > shared.max_snapshot_bytes as u64 {
        return Err(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("snapshot over {} bytes", shared.max_snapshot_bytes),
        ));
    }
    let chunk = bytes.to_vec();
    let (data, checked) = tokio::task::spawn_blocking(move || {
        let r = data.append(&chunk);
        let checked = match r {
            Err(e) => Some(Err(e)),
            Ok(()) if head.done => Some(data.reader().and_then(|src| check_snapshot(&src))),
            Ok(()) => None,
        };
        (data, checked)
    })
    .await
    .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e))?;
    let header = match checked {
        None => {
            *incoming = Some((id, end, data));
            return Ok(json(StatusCode::OK, &serde_json::json!({ "received": end })));
        }
        Some(Err(e)) => return Err(error(StatusCode::BAD_REQUEST, format!("snapshot refused: {e}"))),
        Some(Ok((h, _))) => h,
    };
    drop(incoming);
    if header.meta != head.meta {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "snapshot refused: its header's meta is not the request's",
        ));
    }
    if let (Some(mine), Some(theirs)) = (shared.cluster_id(), header.cluster_id) {
        if mine != theirs {
            return Err(error(
                StatusCode::CONFLICT,
                format!("snapshot of cluster {theirs}, not {mine}"),
            ));
        }
    }
    let snapshot_id = head.meta.snapshot_id.clone();
    let snap = Snapshot {
        meta: head.meta,
        snapshot: Box::new(data),
    };
    let r = shared.raft().install_full_snapshot(head.vote, snap).await;
    match &r {
        Ok(_) => tracing::info!(
            snapshot_id,
            bytes = end,
            "snapshot received and handed to openraft to install"
        ),
        Err(e) => tracing::warn!(snapshot_id, error = %e, "snapshot install failed"),
    }
    Ok(json(StatusCode::OK, &r))
}

fn new_cluster_id(node: NodeId) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    h.write_u64(node);
    format!("{:016x}", h.finish())
}

async fn init(shared: &Shared) -> Resp {
    if shared.cluster_id().is_none() {
        if let Err(m) = shared.adopt_cluster(&new_cluster_id(shared.id)) {
            return error(StatusCode::INTERNAL_SERVER_ERROR, m);
        }
    }
    let members: BTreeMap<NodeId, BasicNode> = [(shared.id, BasicNode::new(&shared.addr))].into();
    match shared.raft().initialize(members).await {
        Ok(()) => json(
            StatusCode::OK,
            &serde_json::json!({ "initialized": shared.id, "cluster_id": shared.cluster_id() }),
        ),
        Err(RaftError::APIError(e)) => error(StatusCode::CONFLICT, format!("init refused: {e}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// Send the request on to the leader (once: a forwarded request is never forwarded again).
pub(super) async fn forward(
    shared: &Shared,
    f: &ForwardToLeader<NodeId, BasicNode>,
    path: &str,
    body: &[u8],
    forwarded: bool,
) -> Resp {
    let leader = serde_json::json!({
        "error": "this node is not the leader",
        "leader_id": f.leader_id,
        "leader_addr": f.leader_node.as_ref().map(|n| n.addr.clone()),
    });
    let Some(node) = f.leader_node.as_ref().filter(|_| !forwarded) else {
        tracing::info!(status = 503, leader = ?f.leader_id, "request refused: not the leader, not forwarded");
        return json(StatusCode::SERVICE_UNAVAILABLE, &leader);
    };
    let mut c = shared.take_client(&node.addr);
    let r = c
        .post(path, body.to_vec(), &[(FORWARDED_HEADER, "1")], FORWARD_TIMEOUT)
        .await;
    let sent = c.last_request_sent();
    shared.return_client(c);
    match r {
        Ok((status, bytes)) => reply(status, bytes.to_vec()),
        // Never handed to the leader: certainly not applied.
        Err(e) if !sent => {
            tracing::info!(status = 503, reason = %e, "request refused: the leader is unreachable");
            json(StatusCode::SERVICE_UNAVAILABLE, &leader)
        }
        // Sent, then no answer: the leader may have applied it.
        Err(e) => outcome_unknown(format!("forwarded to the leader ({}), no answer: {e}", node.addr)),
    }
}

/// 504: the request was proposed (or sent to the leader) but no outcome came in time; it may
/// be applied or not (a 503 always means it was not).
pub(super) fn outcome_unknown(msg: impl std::fmt::Display) -> Resp {
    tracing::warn!(reason = %msg, "no outcome in time (may be applied)");
    json(
        StatusCode::GATEWAY_TIMEOUT,
        &serde_json::json!({ "error": msg.to_string(), "may_be_applied": true }),
    )
}

pub(super) fn client_write_error<E: std::fmt::Display>(e: &RaftError<NodeId, E>) -> Resp {
    match e {
        RaftError::APIError(e) => error(StatusCode::BAD_REQUEST, e),
        RaftError::Fatal(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn write(shared: &Shared, body: &[u8], forwarded: bool) -> Resp {
    let req: KvRequest = match parse_object(body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let r = match tokio::time::timeout(WRITE_TIMEOUT, shared.raft().client_write(req)).await {
        Ok(r) => r,
        Err(_) => {
            return outcome_unknown(format!(
                "not committed within {WRITE_TIMEOUT:?} (no quorum?); the entry stays proposed"
            ))
        }
    };
    match r {
        Ok(r) => json(
            StatusCode::OK,
            &serde_json::json!({ "log_id": r.log_id, "value": r.data.value }),
        ),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
            forward(shared, &f, "/write", body, forwarded).await
        }
        Err(e) => client_write_error(&e),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyBody {
    key: String,
}

async fn read(shared: &Shared, body: &[u8], forwarded: bool) -> Resp {
    let k: KeyBody = match parse_object(body) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match shared.raft().ensure_linearizable().await {
        Ok(_) => read_value(shared, &k.key).await,
        Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
            forward(shared, &f, "/read", body, forwarded).await
        }
        Err(RaftError::APIError(e)) => error(StatusCode::SERVICE_UNAVAILABLE, e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// The local value of `key`, read on a blocking thread (a read may wait on the disk).
async fn read_value(shared: &Shared, key: &str) -> Resp {
    let (sm, key) = (shared.sm.clone(), key.to_string());
    match tokio::task::spawn_blocking(move || sm.get(&key)).await {
        Ok(Ok(v)) => json(StatusCode::OK, &serde_json::json!({ "value": v })),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// This node's applied value: what its own replica holds, not linearizable.
async fn read_local(shared: &Shared, body: &[u8]) -> Resp {
    match parse_object::<KeyBody>(body) {
        Ok(k) => read_value(shared, &k.key).await,
        Err(e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn token_compare() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert!(!constant_time_eq(b"secret", b"secre"));
        assert!(!constant_time_eq(b"secret", b""));
    }
}
