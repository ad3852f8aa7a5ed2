//! `shale serve`: a replicated key-value service over HTTP+JSON, one openraft node on one Shale
//! store. Endpoints and their bodies are in `docs/raft.md`; `http.rs` routes them.

mod client;
mod http;
mod load;
mod network;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use openraft::{Config, Raft, SnapshotPolicy};
use tokio::net::TcpListener;

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
        }
    }
}

/// What the request handlers and the network share.
pub(crate) struct Shared {
    pub(crate) id: NodeId,
    pub(crate) addr: String,
    pub(crate) token: Option<String>,
    pub(crate) max_snapshot_bytes: usize,
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.threads.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    rt.block_on(run(cfg))
}

async fn run(cfg: ServeConfig) -> Result<(), String> {
    if cfg.id == 0 {
        return Err("--id must be a positive integer".into());
    }
    let (log, sm) = open_store(&cfg.db).map_err(|e| format!("opening the store at {}: {e}", cfg.db.display()))?;
    let cluster = sm.cluster_id().map_err(|e| format!("reading the cluster id: {e}"))?;
    let config = Config {
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
    .map_err(|e| format!("raft options: {e}"))?;
    let shared = Arc::new(Shared {
        id: cfg.id,
        addr: cfg.addr.clone(),
        token: cfg.auth_token.clone(),
        max_snapshot_bytes: cfg.max_snapshot_bytes,
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
    let _ = shared.raft.set(raft);
    let listener = TcpListener::bind(&cfg.addr)
        .await
        .map_err(|e| format!("listening on {}: {e}", cfg.addr))?;
    eprintln!("shale serve: node {} listening on {}", cfg.id, cfg.addr);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and the like: wait, do not spin.
                eprintln!("shale serve: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| http::handle(shared.clone(), req));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}
