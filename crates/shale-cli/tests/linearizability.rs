//! Linearizability of `shale serve` under leader kills, checked by Porcupine.
//!
//! Three nodes on loopback; four clients on ten keys write (unique values), delete and read
//! (`/read`, the linearizable path) through any node while the leader is SIGKILLed (2–5 s after
//! the previous failover) and restarted once another node leads (the time to that is printed:
//! the failover time). Every operation is recorded with its call and return times; the history goes
//! to `tools/lincheck` (Go, github.com/anishathalye/porcupine), which checks it key by key.
//!
//! What the recorder keeps follows the status table of docs/raft.md: a write answered 200
//! happened; one refused (4xx) or answered 503 did not (left out — if it was applied after all,
//! a read that sees its unique value has no write to explain it, and the check fails); a write
//! answered 504/500 or not answered may have happened (kept with no return time); a read counts
//! only when answered 200.
//!
//! Needs Go (`go` on PATH or /usr/local/go/bin); the module cache fetches Porcupine from the Go
//! module proxy. Ignored in a plain `cargo test`; `.ci/run` runs it with `--ignored`.

mod raft;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use raft::{json, wait_for, Cluster};

const FLAGS: &[&str] = &[
    "--heartbeat_ms=100",
    "--election_min_ms=1000",
    "--election_max_ms=2000",
    "--snapshot_logs=200",
];
const KEYS: u64 = 10;
const CLIENTS: usize = 4;
const RUN: Duration = Duration::from_secs(40);

/// What became of one request.
enum Outcome {
    /// Not handed to the server: connecting failed.
    NotSent,
    /// The status and body.
    Answer(u16, String),
    /// Sent (perhaps in part) but no answer came: it may have been acted on.
    NoAnswer,
}

fn call(addr: &str, path: &str, body: &str) -> Outcome {
    let Ok(sa) = addr.parse() else { return Outcome::NotSent };
    let Ok(mut s) = TcpStream::connect_timeout(&sa, Duration::from_secs(1)) else {
        return Outcome::NotSent;
    };
    // Longer than the server's own bound on a forwarded write (20 s).
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).is_err() {
        return Outcome::NoAnswer;
    }
    let mut out = Vec::new();
    if s.read_to_end(&mut out).is_err() {
        return Outcome::NoAnswer;
    }
    let text = String::from_utf8_lossy(&out);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Outcome::NoAnswer;
    };
    match head.split(' ').nth(1).and_then(|c| c.parse().ok()) {
        Some(status) => Outcome::Answer(status, body.to_string()),
        None => Outcome::NoAnswer,
    }
}

/// One operation of the history, in lincheck's JSON.
fn record(client: usize, op: &str, key: &str, value: Option<&str>, call: u64, ret: Option<u64>) -> serde_json::Value {
    serde_json::json!({"client": client, "op": op, "key": key, "value": value, "call": call, "return": ret})
}

struct Tally {
    history: Vec<serde_json::Value>,
    acked_writes: u64,
    reads: u64,
    unknown: u64,
    left_out: u64,
}

fn client(id: usize, addrs: Vec<String>, start: Instant, stop: Arc<AtomicBool>, tally: Arc<Mutex<Tally>>) {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (id as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let now = || start.elapsed().as_nanos() as u64;
    let mut n = 0u64;
    while !stop.load(Ordering::Acquire) {
        n += 1;
        let key = format!("k{}", next() % KEYS);
        let addr = &addrs[(next() % addrs.len() as u64) as usize];
        let dice = next() % 10;
        let t0 = now();
        if dice < 5 || dice == 9 {
            let (op, value, body) = if dice == 9 {
                ("delete", None, format!(r#"{{"Delete":{{"key":"{key}"}}}}"#))
            } else {
                let v = format!("c{id}-{n}");
                let body = format!(r#"{{"Set":{{"key":"{key}","value":"{v}"}}}}"#);
                ("write", Some(v), body)
            };
            let out = call(addr, "/write", &body);
            let t1 = now();
            let mut t = tally.lock().unwrap();
            match out {
                Outcome::Answer(200, _) => {
                    t.acked_writes += 1;
                    t.history.push(record(id, op, &key, value.as_deref(), t0, Some(t1)));
                }
                Outcome::Answer(500 | 504, _) | Outcome::NoAnswer => {
                    t.unknown += 1;
                    t.history.push(record(id, op, &key, value.as_deref(), t0, None));
                }
                // Refused or not proposed: it did not happen.
                Outcome::Answer(_, _) | Outcome::NotSent => t.left_out += 1,
            }
        } else {
            let out = call(addr, "/read", &format!(r#"{{"key":"{key}"}}"#));
            let t1 = now();
            let mut t = tally.lock().unwrap();
            match out {
                Outcome::Answer(200, body) => {
                    let v = json(&body)["value"].as_str().map(str::to_string);
                    t.reads += 1;
                    t.history.push(record(id, "read", &key, v.as_deref(), t0, Some(t1)));
                }
                _ => t.left_out += 1,
            }
        }
    }
}

fn go() -> PathBuf {
    if Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return PathBuf::from("go");
    }
    let local = PathBuf::from("/usr/local/go/bin/go");
    assert!(
        local.exists(),
        "this test needs Go (`go` on PATH or /usr/local/go/bin/go) to run the Porcupine checker"
    );
    local
}

#[test]
#[ignore = "needs Go and about a minute; .ci/run runs it with --ignored"]
fn leader_kills_keep_the_history_linearizable() {
    let go = go();
    let mut c = Cluster::start(3, FLAGS);
    c.form();
    let addrs: Vec<String> = (0..3).map(|i| c.addr(i).to_string()).collect();
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Mutex::new(Tally {
        history: Vec::new(),
        acked_writes: 0,
        reads: 0,
        unknown: 0,
        left_out: 0,
    }));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let (addrs, stop, tally) = (addrs.clone(), stop.clone(), tally.clone());
            std::thread::spawn(move || client(id, addrs, start, stop, tally))
        })
        .collect();
    let kills = AtomicU64::new(0);
    let mut failovers: Vec<Duration> = Vec::new();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    while start.elapsed() < RUN {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(2000 + seed % 3000));
        let leader = c.leader(&[0, 1, 2]);
        c.kill9(leader);
        let killed_at = Instant::now();
        kills.fetch_add(1, Ordering::Relaxed);
        // Failover: until one of the other two says it leads (polled every 100 ms).
        let others: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
        c.leader(&others);
        failovers.push(killed_at.elapsed());
        std::thread::sleep(Duration::from_millis(500));
        c.spawn(leader);
    }
    stop.store(true, Ordering::Release);
    for t in threads {
        t.join().unwrap();
    }
    // The cluster still serves: a write and a read after the last restart.
    wait_for("a write after the run", 60, || {
        let leader = c.leader(&[0, 1, 2]);
        matches!(c.write(leader, "after", "run"), Ok((200, _))).then_some(())
    });
    let t = tally.lock().unwrap();
    let kills = kills.load(Ordering::Relaxed);
    eprintln!(
        "history: {} operations ({} acknowledged writes, {} reads, {} unknown, {} left out), {kills} leader kills",
        t.history.len(),
        t.acked_writes,
        t.reads,
        t.unknown,
        t.left_out
    );
    failovers.sort();
    if let (Some(lo), Some(hi)) = (failovers.first(), failovers.last()) {
        eprintln!(
            "failover (kill to a new leader): min {:.1} s, median {:.1} s, max {:.1} s",
            lo.as_secs_f64(),
            failovers[failovers.len() / 2].as_secs_f64(),
            hi.as_secs_f64()
        );
    }
    assert!(kills >= 3, "only {kills} leader kills");
    assert!(
        t.acked_writes >= 100 && t.reads >= 100,
        "too little happened to check: {} writes, {} reads\n{}",
        t.acked_writes,
        t.reads,
        c.logs()
    );
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("history.json");
    std::fs::write(&file, serde_json::to_vec(&t.history).unwrap()).unwrap();
    let html = dir.path().join("history.html");
    let tool = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/lincheck");
    let out = Command::new(&go)
        .current_dir(&tool)
        .args(["run", "."])
        .arg(&file)
        .arg(&html)
        .output()
        .expect("run go");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        // Keep the history and its picture for whoever reads the failure.
        let kept = dir.keep();
        panic!(
            "the history is not linearizable (or the check failed): see {}\n{}",
            kept.display(),
            c.logs()
        );
    }
    assert!(stdout.contains(": Ok"), "{stdout}");
}
