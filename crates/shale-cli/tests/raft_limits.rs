//! `shale serve` against careless and hostile clients: idle and slow connections are closed by
//! their timeouts, a connection limit with a reserve that keeps Raft peers served, bodies
//! refused from their head (cluster, length) before a byte of them is read. Every wait is
//! bounded and generous; nothing measures speed.

mod raft;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use raft::{http, http_head_only, json, post, wait_for, Cluster};

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

/// Whether the server closed `s` within its read timeout (EOF or reset, after whatever it
/// answered); false when the read timed out with the connection still open.
fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn idle_slow_and_kept_alive_connections_are_closed_by_their_timeouts() {
    let c = Cluster::start(1, &["--header_timeout_ms=1500"]);
    let a = c.addr(0).to_string();
    assert_eq!(post(&a, "/init", "").unwrap().0, 200);
    // Connections that never send a byte.
    let mut idle: Vec<TcpStream> = (0..50).map(|_| connect(&a)).collect();
    // Connections that send their head one byte every 300 ms (each byte well within any
    // per-read timeout; the whole head never within the header timeout).
    let mut slow: Vec<TcpStream> = (0..10).map(|_| connect(&a)).collect();
    let writers: Vec<TcpStream> = slow.iter().map(|s| s.try_clone().unwrap()).collect();
    let drip = std::thread::spawn(move || {
        let head = b"POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let end = Instant::now() + Duration::from_secs(40);
        let mut open = writers.into_iter().map(Some).collect::<Vec<_>>();
        for b in head.iter().cycle() {
            if Instant::now() > end || open.iter().all(Option::is_none) {
                break;
            }
            for w in open.iter_mut() {
                if let Some(s) = w {
                    if s.write_all(&[*b]).is_err() {
                        *w = None;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    // A client that made a request on a kept-alive connection, then idles.
    let mut kept = connect(&a);
    kept.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes())
        .unwrap();
    // The node keeps answering others meanwhile.
    wait_for("an answer from the node", 30, || {
        (http(&a, "/metrics", None, &[]).ok()?.0 == 200).then_some(())
    });
    for (i, s) in idle.iter_mut().enumerate() {
        assert!(closed_by_server(s), "idle connection {i} still open after 30 s");
    }
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(closed_by_server(s), "slow-header connection {i} still open after 30 s");
    }
    let mut answer = Vec::new();
    let r = kept.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        r.is_ok(),
        "kept-alive connection not closed after 30 s idle: {r:?} {text}"
    );
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    drip.join().unwrap();
    let (s, b) = c.write(0, "k", "v").unwrap();
    assert_eq!(s, 200, "{b}");
}

#[test]
fn peers_are_served_on_the_reserve_while_clients_hold_every_other_connection() {
    // Long header timeout: the clients' idle connections hold their slots for the whole test.
    let flags = [
        "--header_timeout_ms=120000",
        "--max_connections=12",
        "--peer_connections=4",
    ];
    let c = Cluster::start(2, &flags);
    let (s, b) = post(c.addr(0), "/init", "").unwrap();
    assert_eq!(s, 200, "{b}");
    c.leader(&[0]);
    let b2 = c.addr(1).to_string();
    // 8 connections take node 2's client slots, 4 more its reserve (from which, sending
    // nothing, they are dropped after a second).
    let mut held: Vec<TcpStream> = (0..12).map(|_| connect(&b2)).collect();
    // Give node 2 time to accept them all before anything else connects (a generous wait for
    // an answer: /metrics on a fresh connection is refused once they are all accepted).
    let refused = wait_for("node 2 to refuse a client", 30, || {
        match http(&b2, "/metrics", None, &[]) {
            Ok((200, _)) => None,
            Ok((s, b)) => Some(format!("{s} {b}")),
            Err(e) => Some(e),
        }
    });
    assert!(
        refused.starts_with("503") || refused.contains("reset") || refused.contains("no HTTP answer"),
        "{refused}"
    );
    if refused.starts_with("503") {
        assert!(refused.contains("connection limit reached"), "{refused}");
    }
    // The 4 connections on the reserve are dropped (they sent nothing within its 1 s header
    // timeout); the 8 on client slots stay.
    for (i, s) in held[8..].iter_mut().enumerate() {
        assert!(closed_by_server(s), "reserved connection {i} still open after 30 s");
    }
    // The leader takes node 2 as a learner: its probe and connections get the reserve.
    let body = format!(r#"{{"id":2,"addr":"{b2}"}}"#);
    let (s, b) = post(c.addr(0), "/add-learner", &body).unwrap();
    assert_eq!(s, 200, "{b}");
    assert_eq!(c.write(0, "k", "v").unwrap().0, 200);
    let idx = json(&c.write(0, "k2", "v2").unwrap().1)["log_id"]["index"]
        .as_u64()
        .unwrap();
    wait_for("node 2 to replicate the writes", 60, || {
        let m = c.metrics(0)?;
        (m["replication"]["2"]["index"].as_u64()? >= idx).then_some(())
    });
    // The clients' connections were never closed for the peer: the first 8 are still served
    // (no head sent yet: a request now is answered).
    let mut s = held.remove(0);
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {b2}\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}

#[test]
fn bodies_are_refused_from_their_head_before_they_are_read() {
    let c = Cluster::start(1, &["--body_timeout_ms=1500"]);
    let a = c.addr(0).to_string();
    let (s, b) = post(&a, "/init", "").unwrap();
    assert_eq!(s, 200, "{b}");
    let cluster = json(&b)["cluster_id"].as_str().unwrap().to_string();
    c.leader(&[0]);
    // Each request sends only its head and waits for the answer: an answer at all means the
    // body was never waited for.
    let big = 60 << 20;
    for (path, len, headers, status, what) in [
        ("/raft/append", big, vec![], 409, "names no cluster"),
        (
            "/raft/append",
            big,
            vec![("x-shale-cluster", "0000000000000bad")],
            409,
            "cluster mismatch",
        ),
        (
            "/raft/append",
            65 << 20,
            vec![("x-shale-cluster", cluster.as_str()), ("x-shale-node", "1")],
            413,
            "body over",
        ),
        ("/raft/vote", big, vec![], 409, "names no cluster"),
        (
            "/raft/snapshot",
            big,
            vec![("x-shale-cluster", "x-y")],
            400,
            "letters and digits",
        ),
        ("/write", 2 << 20, vec![], 413, "body over"),
        ("/read", 2 << 20, vec![], 413, "body over"),
        ("/add-learner", 2 << 20, vec![], 413, "body over"),
        ("/nope", big, vec![], 404, "no route"),
    ] {
        let (s, b) = http_head_only(&a, path, len, &headers).unwrap();
        assert_eq!(s, status, "{path}: {b}");
        assert!(json(&b)["error"].as_str().unwrap().contains(what), "{path}: {b}");
    }
    // A body that never completes: 408 once the body timeout passed.
    let mut s = connect(&a);
    s.write_all(format!("POST /write HTTP/1.1\r\nHost: {a}\r\nContent-Length: 100\r\n\r\n{{\"Set\"").as_bytes())
        .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    // The node goes on serving, and nothing was written.
    assert_eq!(c.read(0, "/read", "k"), None);
    let (s, b) = c.write(0, "k", "v").unwrap();
    assert_eq!(s, 200, "{b}");
}

#[test]
fn connection_flags_are_checked_before_anything_is_created() {
    let tmp = tempfile::TempDir::new().unwrap();
    let db = tmp.path().join("db");
    let bin = env!("CARGO_BIN_EXE_shale");
    for (flag, msg) in [
        ("--max_connections=4", "--max_connections"),
        ("--peer_connections=0", "--peer_connections"),
        ("--header_timeout_ms=0", "--header_timeout_ms"),
        ("--max_body_memory=1000", "--max_body_memory"),
    ] {
        let o = std::process::Command::new(bin)
            .args(["serve", "--id=1", &format!("--db={}", db.display()), flag])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{flag}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(msg), "{flag}");
        assert!(!db.exists(), "{flag}: the directory was created");
    }
}

#[test]
fn request_bodies_held_in_memory_are_bounded() {
    // Room for one 60 MiB body at a time (the smallest budget allowed holds a 64 MiB append).
    let budget = format!("--max_body_memory={}", 66 << 20);
    let c = Cluster::start(1, &["--body_timeout_ms=10000", budget.as_str()]);
    let a = c.addr(0).to_string();
    let (s, b) = post(&a, "/init", "").unwrap();
    assert_eq!(s, 200, "{b}");
    let cluster = json(&b)["cluster_id"].as_str().unwrap().to_string();
    // Two appends that declare 60 MiB each and send none of it: one takes the room and waits
    // for its body (408 after 10 s), the other finds no room (503), whichever came first.
    let answers: Vec<(u16, String)> = (0..2)
        .map(|_| {
            let (a, cluster) = (a.clone(), cluster.clone());
            std::thread::spawn(move || {
                let h = [("x-shale-cluster", cluster.as_str()), ("x-shale-node", "1")];
                http_head_only(&a, "/raft/append", 60 << 20, &h).unwrap()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort();
    assert_eq!(statuses, [408, 503], "{answers:?}");
    assert!(
        answers
            .iter()
            .any(|(_, b)| b.contains("too many request bodies in memory")),
        "{answers:?}"
    );
    let (s, b) = c.write(0, "k", "v").unwrap();
    assert_eq!(s, 200, "{b}");
}

/// Resident memory of process `pid` in bytes (Linux: VmRSS in /proc).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Issue 35's attack, with the bodies actually sent: 12 connections each streaming a 63 MiB
/// `/raft/append` body at once, first without a cluster header (refused from the head: nothing
/// is read), then with the node's cluster (read only within `--max_body_memory`, 128 MiB here:
/// two at a time, the others 503). The node's resident memory, sampled every 20 ms, never grows
/// past that budget plus 96 MiB of slack (the issue saw 567 MB before the limits), and the node
/// answers a write afterwards.
#[test]
fn concurrent_huge_bodies_keep_resident_memory_bounded() {
    let budget = format!("--max_body_memory={}", 128 << 20);
    let c = Cluster::start(1, &["--body_timeout_ms=20000", budget.as_str()]);
    let a = c.addr(0).to_string();
    let (s, b) = post(&a, "/init", "").unwrap();
    assert_eq!(s, 200, "{b}");
    let cluster = json(&b)["cluster_id"].as_str().unwrap().to_string();
    c.leader(&[0]);
    let pid = c.pid(0).unwrap();
    let base = rss(pid);
    assert!(base > 0, "no VmRSS for {pid}");
    let len: usize = 63 << 20;
    for with_cluster in [false, true] {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut peak = 0;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    peak = peak.max(rss(pid));
                    std::thread::sleep(Duration::from_millis(20));
                }
                peak
            })
        };
        let senders: Vec<_> = (0..12)
            .map(|_| {
                let (a, cluster) = (a.clone(), cluster.clone());
                std::thread::spawn(move || {
                    let mut s = connect(&a);
                    let mut head = format!("POST /raft/append HTTP/1.1\r\nHost: {a}\r\nContent-Length: {len}\r\n");
                    if with_cluster {
                        head.push_str(&format!("x-shale-cluster: {cluster}\r\nx-shale-node: 1\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = s.write_all(head.as_bytes());
                    let chunk = vec![b'x'; 1 << 20];
                    for _ in 0..len >> 20 {
                        if s.write_all(&chunk).is_err() {
                            break; // answered and closed: the rest is not wanted
                        }
                    }
                    let mut out = String::new();
                    let _ = s.read_to_string(&mut out);
                    out.split(' ').nth(1).and_then(|c| c.parse::<u16>().ok())
                })
            })
            .collect();
        let statuses: Vec<Option<u16>> = senders.into_iter().map(|t| t.join().unwrap()).collect();
        stop.store(true, std::sync::atomic::Ordering::Release);
        let peak = sampler.join().unwrap();
        let grown = peak.saturating_sub(base);
        eprintln!(
            "with_cluster={with_cluster}: resident {} MiB before, peak {} MiB; statuses {statuses:?}",
            base >> 20,
            peak >> 20
        );
        assert!(
            grown < (128 + 96) << 20,
            "with_cluster={with_cluster}: resident memory grew by {} MiB (statuses {statuses:?})",
            grown >> 20
        );
        if !with_cluster {
            assert!(statuses.iter().all(|s| *s == Some(409)), "{statuses:?}");
        } else {
            // Read within the budget and refused as no append (400), or no room (503).
            assert!(
                statuses.iter().all(|s| matches!(s, Some(400) | Some(503) | None)),
                "{statuses:?}"
            );
            assert!(
                statuses.contains(&Some(503)),
                "all 12 bodies were taken at once: {statuses:?}"
            );
        }
    }
    let (s, b) = c.write(0, "k", "v").unwrap();
    assert_eq!(s, 200, "{b}");
}

/// A client that asks for answers and never reads them: with `--write_timeout_ms=1000` the node
/// closes the connection once an answer made no progress for a second, instead of holding the
/// connection (and its slot) for as long as the client likes. 60 pipelined `/read`s of a
/// 900 KB value (54 MB of answers, far more than the sockets buffer) and 3 s without reading:
/// then reading gets only the answers that fit before the cut. Without the timeout every answer
/// arrives once the client reads.
#[test]
fn answers_a_client_never_reads_time_out() {
    let c = Cluster::start(1, &["--write_timeout_ms=1000", "--header_timeout_ms=30000"]);
    let (s, b) = post(c.addr(0), "/init", "").unwrap();
    assert_eq!(s, 200, "{b}");
    c.leader(&[0]);
    let (s, b) = c.write(0, "big", &"v".repeat(900_000)).unwrap();
    assert_eq!(s, 200, "{b}");
    let a = c.addr(0).to_string();
    let mut s = connect(&a);
    let body = r#"{"key":"big"}"#;
    let one = format!(
        "POST /read HTTP/1.1\r\nHost: {a}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let asks = 60;
    s.write_all(one.repeat(asks).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut out = Vec::new();
    let r = s.read_to_end(&mut out);
    let answers = String::from_utf8_lossy(&out).matches("HTTP/1.1 200").count();
    assert!(
        answers < asks,
        "all {answers} answers arrived ({r:?}): the connection was not cut"
    );
    // The node goes on serving.
    let (s, b) = c.write(0, "k", "v").unwrap();
    assert_eq!(s, 200, "{b}");
}

/// Requests hyper cannot parse (answered by hyper itself, before any handler) still get the
/// service's JSON error form, with hyper's status, and the node keeps serving.
#[test]
fn requests_that_cannot_be_parsed_get_a_json_error() {
    let c = Cluster::start(1, &[]);
    let a = c.addr(0).to_string();
    assert_eq!(post(&a, "/init", "").unwrap().0, 200);
    let long_uri = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    let huge_head = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let cases: Vec<(&[u8], u16)> = vec![
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nHost without colon\r\n\r\n", 400),
        (b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n", 400),
        (long_uri.as_bytes(), 414),
        (huge_head.as_bytes(), 431),
    ];
    for (req, want) in cases {
        let mut s = connect(&a);
        // The server may answer and close before it read all of a huge head.
        let _ = s.write_all(req);
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no answer head for {:?}: {text:?}", &req[..req.len().min(40)]));
        assert!(head.starts_with(&format!("HTTP/1.1 {want} ")), "{head}");
        assert!(
            head.to_ascii_lowercase().contains("content-type: application/json"),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
        let msg = v["error"].as_str().unwrap_or_else(|| panic!("no error field: {body}"));
        assert!(msg.contains(&want.to_string()), "{msg}");
    }
    assert_eq!(http(&a, "/metrics", None, &[]).unwrap().0, 200);
}
