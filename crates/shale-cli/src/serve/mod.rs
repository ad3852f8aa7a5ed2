//! `shale serve`: one node of a replicated key-value service (Raft through openraft, each node's
//! log and data in a Shale database). The service itself is `shale_raft::serve`.
//! `shale serve-bench`, its load generator, is in `bench`.

pub mod bench;

use std::path::PathBuf;

use shale_raft::ServeConfig;

const HELP: &str = "usage: shale serve --id=N --db=DIR [--addr=127.0.0.1:PORT] [flags]

One node of a replicated key-value service: openraft's Raft with the log, the vote and the
data in the Shale database at --db. HTTP+JSON on --addr (127.0.0.1 unless told otherwise):

  POST /init                 make this node a one-node cluster (once, on one node)
  POST /add-learner          {\"id\":2,\"addr\":\"127.0.0.1:21002\"}  the address must answer as node 2;
                             200 once it caught up, 202 {\"caught_up\":false} if not within 6 s
  POST /remove-learner       {\"id\":2}  (a learner, not a voter)
  POST /change-membership    [1,2,3]   the voters; refused (409) if a majority of them does not
                             answer, unless /change-membership?force=true
  GET  /metrics              openraft's metrics of this node (leader, term, last applied, ...)
  POST /write                {\"Set\":{\"key\":\"k\",\"value\":\"v\"}} or {\"Delete\":{\"key\":\"k\"}}
  POST /read                 {\"key\":\"k\"}  linearizable: answered through the leader
  POST /read-local           {\"key\":\"k\"}  this node's own replica, may be behind
  POST /raft/append, /raft/vote, /raft/snapshot   between nodes

A node that is not the leader forwards /write, /read and the membership requests to the
leader (503 with the leader's id and address when it cannot). A write answered 503 was not
applied; 504 {\"may_be_applied\":true} means no outcome in time (no quorum within 8 s): it may
be applied later. Statuses, failover and quorum loss: docs/raft.md.

flags:
  --id=N                  this node's id (positive, unique in the cluster)
  --db=DIR                the node's data directory (created if missing)
  --addr=HOST:PORT        where to listen; other nodes reach this node there (default 127.0.0.1:21001)
  --auth_token_file=F     every request, from clients and peers, must carry
                          `Authorization: Bearer <token>` with the token in F (first line);
                          otherwise 401 and nothing is done. Give every node the same file.
  --snapshot_logs=N       build a snapshot every N log entries (default 5000)
  --keep_logs=N           applied entries kept in the log after a snapshot (default 1000)
  --max_snapshot_bytes=N  largest snapshot accepted from a leader (default 1073741824)
  --heartbeat_ms=N        leader heartbeat interval (default 200)
  --election_min_ms=N     election timeout range (defaults 1000 and 2000)
  --election_max_ms=N
  --threads=N             service worker threads (default 2)
  --log_level=L           off, error, warn, info (default), debug, trace: one line on stderr
                          per election, membership change, snapshot (built, sent, received),
                          refused request (with its reason, path and peer); openraft's own
                          lines from debug on

connections (a refusal below reads no body and changes nothing):
  --header_timeout_ms=N   a connection waiting for a request (new, or kept alive after an
                          answer) must send the whole request head within N ms, else it is
                          closed: bounds slow headers and idle keep-alive connections (default 10000)
  --body_timeout_ms=N     the whole body within N ms of the head, else 408 (default 30000)
  --write_timeout_ms=N    an answer the client reads nothing of for N ms: the connection is
                          closed (default 30000)
  --max_connections=N     connections open at once, peers' reserve included; past it a
                          connection is answered 503 and closed (default 512; keep it well
                          below `ulimit -n`)
  --peer_connections=N    of those, kept for Raft peers: a connection taking one serves only
                          authenticated /raft/* and GET /metrics naming a cluster (default 16)
  --max_body_memory=N     request bodies in memory at once, in bytes (default 268435456);
                          a request that finds no room is answered 503 at once

The service speaks plain HTTP, without TLS: between machines, run it through encrypted tunnels
(WireGuard, SSH) and use --auth_token_file (docs/raft.md). Invalid flags, an address in use or
a directory of another node fail before anything is created or changed.
";

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("--{name}: bad number '{v}'"))
}

fn parse(args: &[String]) -> Result<ServeConfig, String> {
    let mut id = None;
    let mut db = None;
    let mut c = ServeConfig::new(0, "127.0.0.1:21001", PathBuf::new());
    for a in args {
        let a = a.trim_start_matches('-');
        let (name, v) = a.split_once('=').ok_or_else(|| format!("flag --{a} needs a value"))?;
        match name {
            "id" => id = Some(num::<u64>(name, v)?),
            "db" => db = Some(PathBuf::from(v)),
            "addr" => c.addr = v.to_string(),
            "auth_token_file" => {
                let t = std::fs::read_to_string(v).map_err(|e| format!("--auth_token_file: {v}: {e}"))?;
                let t = t.lines().next().unwrap_or("").trim().to_string();
                if t.is_empty() {
                    return Err(format!("--auth_token_file: {v} holds no token"));
                }
                c.auth_token = Some(t);
            }
            "snapshot_logs" => c.snapshot_logs = num(name, v)?,
            "keep_logs" => c.keep_logs = num(name, v)?,
            "max_snapshot_bytes" => c.max_snapshot_bytes = num(name, v)?,
            "heartbeat_ms" => c.heartbeat_ms = num(name, v)?,
            "election_min_ms" => c.election_min_ms = num(name, v)?,
            "election_max_ms" => c.election_max_ms = num(name, v)?,
            "threads" => c.threads = num(name, v)?,
            "header_timeout_ms" => c.header_timeout_ms = num(name, v)?,
            "body_timeout_ms" => c.body_timeout_ms = num(name, v)?,
            "write_timeout_ms" => c.write_timeout_ms = num(name, v)?,
            "max_connections" => c.max_connections = num(name, v)?,
            "peer_connections" => c.peer_connections = num(name, v)?,
            "max_body_memory" => c.max_body_memory = num(name, v)?,
            "log_level" => c.log_level = v.to_string(),
            _ => return Err(format!("unknown flag --{name}")),
        }
    }
    c.id = id.ok_or("--id is required")?;
    c.db = db.ok_or("--db is required")?;
    shale_raft::check_serve_config(&c)?;
    if c.snapshot_logs == 0 {
        return Err("--snapshot_logs must be positive".into());
    }
    Ok(c)
}

pub fn main(args: &[String]) -> i32 {
    crate::flags::command_main("shale serve", args, HELP, parse, shale_raft::serve)
}
