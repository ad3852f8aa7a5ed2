//! `shale serve`: a replicated key-value service over HTTP+JSON, one openraft node on one Shale
//! store. Endpoints and their bodies are in `docs/raft.md`; `http.rs` routes them.

mod client;
mod http;
mod json_errors;
mod load;
mod membership;
mod network;
mod write_timeout;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::rt::TokioTimer;
use openraft::{Config, Raft, SnapshotPolicy};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

pub use client::HttpClient;
pub use load::{post_blocking, run_write_load, LoadReport};
pub(crate) use network::decode_snapshot_request;

use crate::state_machine::StateMachineStore;
use crate::store::open_store;
use crate::types::{NodeId, TypeConfig};

/// What `shale serve` is told.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// This node's id (positive).
    pub id: NodeId,
    /// host:port to listen on; also the address other nodes are given for this node.
    pub addr: String,
    /// The Shale database directory of this node.
    pub db: PathBuf,
    /// The token every request must carry (`Authorization: Bearer <token>`), if any.
    pub auth_token: Option<String>,
    /// Build a snapshot after this many log entries since the last one.
    pub snapshot_logs: u64,
    /// How many applied entries before a snapshot to keep in the log (for slow followers).
    pub keep_logs: u64,
    /// The largest `/raft/snapshot` request body accepted, in bytes.
    pub max_snapshot_bytes: usize,
    /// Raft timing: heartbeat interval and the range of the election timeout, in ms.
    pub heartbeat_ms: u64,
    pub election_min_ms: u64,
    pub election_max_ms: u64,
    /// Worker threads of the service.
    pub threads: usize,
    /// A connection waiting for a request (just opened, or kept alive after an answer) must
    /// deliver the whole request head within this time, or it is closed: hyper's
    /// `header_read_timeout`, which bounds slow headers and idle keep-alive connections alike.
    pub header_timeout_ms: u64,
    /// A request's body must arrive in full within this time (else 408 and the connection closes).
    pub body_timeout_ms: u64,
    /// Writing an answer must make progress within this time: a client that reads nothing of
    /// it for that long has its connection closed (and its slot freed).
    pub write_timeout_ms: u64,
    /// Connections open at once; beyond it a connection is answered 503 and closed at once.
    pub max_connections: usize,
    /// Of `max_connections`, how many are kept for Raft peers: a connection that takes one of
    /// these serves only authenticated `/raft/*` requests naming a cluster.
    pub peer_connections: usize,
    /// Request bodies held in memory at once, all connections together, in bytes.
    pub max_body_memory: usize,
    /// The log's level on stderr: off, error, warn, info, debug or trace.
    pub log_level: String,
}

impl ServeConfig {
    pub fn new(id: NodeId, addr: &str, db: PathBuf) -> ServeConfig {
        ServeConfig {
            id,
            addr: addr.to_string(),
            db,
            auth_token: None,
            snapshot_logs: 5000,
            keep_logs: 1000,
            max_snapshot_bytes: 1 << 30,
            heartbeat_ms: 200,
            election_min_ms: 1000,
            election_max_ms: 2000,
            threads: 2,
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            write_timeout_ms: 30_000,
            max_connections: 512,
            peer_connections: 16,
            max_body_memory: 256 << 20,
            log_level: "info".into(),
        }
    }
}

/// What the request handlers and the network share.
pub(crate) struct Shared {
    pub(crate) id: NodeId,
    pub(crate) addr: String,
    pub(crate) token: Option<String>,
    pub(crate) max_snapshot_bytes: usize,
    pub(crate) body_timeout: Duration,
    /// Bytes of request bodies that may be in memory at once, in KiB permits
    /// (`body_permits`); a request takes its share before its body is read.
    pub(crate) body_memory: Arc<Semaphore>,
    pub(crate) sm: StateMachineStore,
    cluster: RwLock<Option<String>>,
    raft: OnceLock<Raft<TypeConfig>>,
    /// Connections to other nodes for forwarded client requests, by address.
    forward_pool: Mutex<HashMap<String, Vec<HttpClient>>>,
    /// The snapshot being received in chunks: its id, the offset the next chunk must have,
    /// and the file it goes to.
    pub(crate) incoming: tokio::sync::Mutex<Option<(String, u64, crate::snapshot_data::SnapshotData)>>,
}

impl Shared {
    pub(crate) fn raft(&self) -> &Raft<TypeConfig> {
        self.raft.get().expect("set before serving")
    }

    pub(crate) fn cluster_id(&self) -> Option<String> {
        self.cluster.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Record `id` as this node's cluster (synced), or refuse it if the node has another.
    pub(crate) fn adopt_cluster(&self, id: &str) -> Result<(), String> {
        let mut c = self.cluster.write().unwrap_or_else(|p| p.into_inner());
        match c.as_deref() {
            Some(mine) if mine == id => Ok(()),
            Some(mine) => Err(format!(
                "cluster mismatch: this node's data belongs to cluster {mine}, the request comes from cluster {id}"
            )),
            None => {
                self.sm.set_cluster_id(id).map_err(|e| e.to_string())?;
                *c = Some(id.to_string());
                Ok(())
            }
        }
    }

    pub(crate) fn take_client(&self, addr: &str) -> HttpClient {
        let mut p = self.forward_pool.lock().unwrap_or_else(|p| p.into_inner());
        p.get_mut(addr)
            .and_then(Vec::pop)
            .unwrap_or_else(|| HttpClient::new(addr, self.token.clone()))
    }

    pub(crate) fn return_client(&self, c: HttpClient) {
        let mut p = self.forward_pool.lock().unwrap_or_else(|p| p.into_inner());
        p.entry(c.addr().to_string()).or_default().push(c);
    }
}

/// Run the node until the process is stopped. Errors (a bad option, a store that does not
/// open, an address in use) are returned as messages.
pub fn serve(cfg: ServeConfig) -> Result<(), String> {
    init_log(&cfg.log_level)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(run(cfg))
}

/// The options `run` refuses before anything is opened or created.
pub fn check_config(cfg: &ServeConfig) -> Result<(), String> {
    if cfg.id == 0 {
        return Err("--id must be a positive integer".into());
    }
    if cfg.header_timeout_ms == 0 || cfg.body_timeout_ms == 0 || cfg.write_timeout_ms == 0 {
        return Err("--header_timeout_ms, --body_timeout_ms and --write_timeout_ms must be positive".into());
    }
    if cfg.peer_connections == 0 || cfg.max_connections <= cfg.peer_connections {
        return Err(format!(
            "--max_connections ({}) must be above --peer_connections ({}), which must be positive",
            cfg.max_connections, cfg.peer_connections
        ));
    }
    let largest = http::largest_body(cfg.max_snapshot_bytes);
    if cfg.max_body_memory < largest {
        return Err(format!(
            "--max_body_memory ({}) must hold the largest body accepted ({largest} bytes)",
            cfg.max_body_memory
        ));
    }
    membership::check_addr(&cfg.addr).map_err(|e| format!("--addr: {e}"))?;
    log_filter(&cfg.log_level)?;
    raft_config(cfg).map(|_| ())
}

/// The log filter of `--log_level`: this crate at that level, openraft's own events at warn
/// unless debug or trace is asked for (its info events are many).
fn log_filter(level: &str) -> Result<tracing_subscriber::filter::Targets, String> {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let lvl: LevelFilter = level
        .parse()
        .map_err(|_| format!("--log_level: {level:?} is not one of off, error, warn, info, debug, trace"))?;
    let openraft = if lvl >= LevelFilter::DEBUG {
        lvl
    } else {
        lvl.min(LevelFilter::WARN)
    };
    Ok(Targets::new().with_default(lvl).with_target("openraft", openraft))
}

/// One line per event on stderr (the first `serve` of a process installs it).
fn init_log(level: &str) -> Result<(), String> {
    use tracing_subscriber::prelude::*;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .compact();
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(log_filter(level)?)
        .try_init();
    Ok(())
}

/// A line per election (term, leader or role changed), membership change and snapshot (built
/// or installed), from openraft's metrics.
fn log_changes(raft: &Raft<TypeConfig>) {
    let mut rx = raft.metrics();
    tokio::spawn(async move {
        let (mut term, mut leader, mut state, mut membership, mut snapshot) = (0, None, None, None, None);
        loop {
            {
                let m = rx.borrow_and_update();
                if (m.current_term, m.current_leader, Some(m.state)) != (term, leader, state) {
                    (term, leader, state) = (m.current_term, m.current_leader, Some(m.state));
                    tracing::info!(term, leader = ?leader, role = ?m.state, "election: leadership changed");
                }
                let log_id = m.membership_config.log_id().map(|l| l.index);
                if log_id != membership {
                    membership = log_id;
                    tracing::info!(
                        at = ?log_id,
                        membership = %m.membership_config.membership(),
                        "membership changed"
                    );
                }
                if m.snapshot != snapshot {
                    snapshot = m.snapshot;
                    tracing::info!(last_log_id = ?snapshot.map(|l| l.index), "snapshot: now the current one (built or installed)");
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
}

/// openraft's configuration from the options, validated.
fn raft_config(cfg: &ServeConfig) -> Result<Config, String> {
    Config {
        cluster_name: "shale".into(),
        heartbeat_interval: cfg.heartbeat_ms,
        election_timeout_min: cfg.election_min_ms,
        election_timeout_max: cfg.election_max_ms,
        install_snapshot_timeout: 60_000,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(cfg.snapshot_logs),
        max_in_snapshot_log_to_keep: cfg.keep_logs,
        // Purge as soon as a snapshot allows, in batches of at most 256 entries.
        purge_batch_size: cfg.snapshot_logs.clamp(1, 256),
        ..Default::default()
    }
    .validate()
    .map_err(|e| format!("raft options: {e}"))
}

/// KiB permits of `Shared::body_memory` for a body of `len` bytes.
pub(crate) fn body_permits(len: usize) -> u32 {
    u32::try_from(len.div_ceil(1024)).unwrap_or(u32::MAX)
}

async fn run(cfg: ServeConfig) -> Result<(), String> {
    check_config(&cfg)?;
    let config = raft_config(&cfg)?;
    // Bound before the store is opened: an address in use creates no directory. Connections
    // wait in the backlog until the node serves.
    let listener = TcpListener::bind(&cfg.addr)
        .await
        .map_err(|e| format!("listening on {}: {e}", cfg.addr))?;
    let (log, sm) = open_store(&cfg.db).map_err(|e| format!("opening the store at {}: {e}", cfg.db.display()))?;
    // The directory is this node's: recorded at its first start, checked at every other.
    sm.claim_node_id(cfg.id)
        .map_err(|e| format!("{}: {e}", cfg.db.display()))?;
    let cluster = sm.cluster_id().map_err(|e| format!("reading the cluster id: {e}"))?;
    let shared = Arc::new(Shared {
        id: cfg.id,
        addr: cfg.addr.clone(),
        token: cfg.auth_token.clone(),
        max_snapshot_bytes: cfg.max_snapshot_bytes,
        body_timeout: Duration::from_millis(cfg.body_timeout_ms),
        body_memory: Arc::new(Semaphore::new(body_permits(cfg.max_body_memory) as usize)),
        sm: sm.clone(),
        cluster: RwLock::new(cluster),
        raft: OnceLock::new(),
        forward_pool: Mutex::new(HashMap::new()),
        incoming: tokio::sync::Mutex::new(None),
    });
    let net = network::Network { shared: shared.clone() };
    let raft = Raft::new(cfg.id, Arc::new(config), net, log, sm)
        .await
        .map_err(|e| format!("starting raft: {e}"))?;
    log_changes(&raft);
    let _ = shared.raft.set(raft);
    tracing::info!(node = cfg.id, addr = %cfg.addr, "listening");
    let clients = Arc::new(Semaphore::new(cfg.max_connections - cfg.peer_connections));
    let peers = Arc::new(Semaphore::new(cfg.peer_connections));
    let header_timeout = Duration::from_millis(cfg.header_timeout_ms);
    let write_timeout = Duration::from_millis(cfg.write_timeout_ms);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // A client slot, else one of the peers' reserve (for Raft RPCs only), else refused.
        let (permit, reserved) = match clients.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            Err(_) => match peers.clone().try_acquire_owned() {
                Ok(p) => (p, true),
                Err(_) => {
                    tracing::debug!("connection refused: the connection limit is reached");
                    refuse_connection(&stream);
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        // A peer sends its request as soon as it connected and keeps the connection busy
        // (heartbeats): a reserved connection that idles is not a peer's, and is closed soon.
        let header_timeout = if reserved {
            header_timeout.min(RESERVED_HEADER_TIMEOUT)
        } else {
            header_timeout
        };
        tokio::spawn(async move {
            let svc = service_fn(move |req| http::handle(shared.clone(), req, reserved, peer));
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(
                    TokioIo::new(json_errors::JsonErrors::new(write_timeout::WriteTimeout::new(
                        stream,
                        write_timeout,
                    ))),
                    svc,
                )
                .await;
            drop(permit);
        });
    }
}

/// The header timeout of a connection on the peers' reserve.
const RESERVED_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

/// Past the connection limit: a 503 if the socket takes it at once (never waited for), then
/// closed.
fn refuse_connection(stream: &TcpStream) {
    const BODY: &str = r#"{"error":"connection limit reached"}"#;
    let msg = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = stream.try_write(msg.as_bytes());
}
