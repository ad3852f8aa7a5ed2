//! `shale serve` clusters on loopback: a leader killed with SIGKILL in a stream of writes, a
//! restarted node catching up, a node restarted from an empty directory catching up by
//! snapshot, and bad input. Nodes are child processes; every wait is bounded.

mod raft;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use raft::{http, json, post, wait_for, Cluster};

/// Fast elections and small snapshots with nothing kept in the log after them, so that a node
/// that falls behind needs a snapshot.
const FLAGS: &[&str] = &[
    "--heartbeat_ms=100",
    "--election_min_ms=1000",
    "--election_max_ms=2000",
    "--snapshot_logs=20",
    "--keep_logs=0",
];

/// Every acknowledged write reads back, with its value, from the local replica of every node in
/// `nodes` (after they caught up) and through the linearizable path of each.
fn check_all(c: &Cluster, nodes: &[usize], acked: &BTreeMap<String, String>) {
    for &i in nodes {
        for (k, v) in acked {
            wait_for(&format!("node {} to apply {k}", i + 1), 60, || {
                (c.read(i, "/read-local", k).as_deref() == Some(v)).then_some(())
            });
        }
        let (k, v) = acked.iter().next_back().unwrap();
        assert_eq!(c.read(i, "/read", k).as_deref(), Some(v.as_str()), "node {}", i + 1);
    }
}

#[test]
fn leader_killed_during_writes_loses_no_acknowledged_write() {
    let mut c = Cluster::start(3, FLAGS);
    c.form();
    let first = c.leader(&[0, 1, 2]);
    let mut acked = BTreeMap::new();
    let mut killed = None;
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut i = 0u64;
    while acked.len() < 200 && Instant::now() < deadline {
        i += 1;
        let (k, v) = (format!("key{i:05}"), format!("value{i}"));
        // Any live node: a follower forwards to the leader.
        let live: Vec<usize> = (0..3).filter(|&n| Some(n) != killed).collect();
        let node = live[i as usize % live.len()];
        if let Ok((200, body)) = c.write(node, &k, &v) {
            assert_eq!(json(&body)["value"], v.as_str());
            acked.insert(k, v);
        }
        if acked.len() == 60 && killed.is_none() {
            c.kill9(first);
            killed = Some(first);
        }
    }
    assert!(acked.len() >= 200, "only {} writes acknowledged in 90 s", acked.len());
    let others: Vec<usize> = (0..3).filter(|&n| n != first).collect();
    let second = c.leader(&others);
    assert_ne!(second, first);
    let term = c.metrics(second).unwrap()["current_term"].as_u64().unwrap();
    assert!(term > 1, "a new election happened (term {term})");
    check_all(&c, &others, &acked);
    // The killed node comes back and catches up (its log was purged on the leader by the
    // snapshots every 20 entries, so by snapshot or by log, whichever the leader picks).
    c.spawn(first);
    check_all(&c, &[0, 1, 2], &acked);
}

#[test]
fn follower_restarted_from_an_empty_directory_catches_up_by_snapshot() {
    let mut c = Cluster::start(3, FLAGS);
    c.form();
    let leader = c.leader(&[0, 1, 2]);
    let follower = (leader + 1) % 3;
    let mut acked = BTreeMap::new();
    for i in 0..100 {
        let (k, v) = (format!("k{i:03}"), format!("v{i}"));
        let (s, b) = c.write(leader, &k, &v).unwrap();
        assert_eq!(s, 200, "{b}");
        acked.insert(k, v);
    }
    // The leader's log no longer starts at the beginning: an empty replica can only be built
    // from a snapshot.
    wait_for("the leader to purge its log", 30, || {
        let m = c.metrics(leader)?;
        (m["purged"]["index"].as_u64()? >= 50).then_some(())
    });
    c.kill9(follower);
    std::fs::remove_dir_all(&c.nodes[follower].dir).unwrap();
    c.spawn(follower);
    check_all(&c, &[follower], &acked);
    let m = c.metrics(follower).unwrap();
    assert!(m["snapshot"]["index"].as_u64().unwrap() >= 50, "{m}");
    // A follower asked not to forward says who the leader is (the leader of now: elections
    // may have happened on a loaded machine).
    let leader = c.leader(&[0, 1, 2]);
    let follower = (leader + 1) % 3;
    let (s, b) = http(
        c.addr(follower),
        "/write",
        Some(br#"{"Set":{"key":"x","value":"y"}}"#),
        &[("x-shale-forwarded", "1")],
    )
    .unwrap();
    assert_eq!(s, 503, "{b}\n{}", c.logs());
    assert_eq!(
        json(&b)["leader_addr"],
        c.addr(leader),
        "{b} {}",
        c.metrics(follower).unwrap()
    );
}

#[test]
fn bad_input_gets_clear_errors_and_changes_nothing() {
    let tmp = tempfile::TempDir::new().unwrap();
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, "s3cret\n").unwrap();
    let flag = format!("--auth_token_file={}", token_file.display());
    let c = Cluster::start(1, &[flag.as_str()]);
    let a = c.addr(0);
    let auth = [("authorization", "Bearer s3cret")];
    // No token, a wrong one: 401, and nothing happens.
    assert_eq!(post(a, "/init", "").unwrap().0, 401);
    assert_eq!(
        http(a, "/init", Some(b""), &[("authorization", "Bearer s3creT")])
            .unwrap()
            .0,
        401
    );
    assert_eq!(http(a, "/metrics", None, &[]).unwrap().0, 401);
    let (s, b) = http(a, "/init", Some(b""), &auth).unwrap();
    assert_eq!(s, 200, "{b}");
    let cluster = json(&b)["cluster_id"].as_str().unwrap().to_string();
    wait_for("leader", 30, || {
        let (_, b) = http(a, "/metrics", None, &auth).ok()?;
        (json(&b)["state"] == "Leader").then_some(())
    });
    let w = br#"{"Set":{"key":"k","value":"v"}}"#;
    assert_eq!(http(a, "/write", Some(w), &[]).unwrap().0, 401);
    let read = |k: &str| http(a, "/read", Some(format!(r#"{{"key":"{k}"}}"#).as_bytes()), &auth).unwrap();
    assert_eq!(
        json(&read("k").1)["value"],
        serde_json::Value::Null,
        "the refused write changed nothing"
    );
    // Malformed JSON, wrong shape, unknown route, too large a body.
    for body in [&b"{\"Set\":{\"key\":"[..], b"[1,2", b"{\"Put\":{}}", b"\xff\xfe"] {
        let (s, b) = http(a, "/write", Some(body), &auth).unwrap();
        assert_eq!(s, 400, "{b}");
        assert!(b.contains("malformed JSON"), "{b}");
    }
    assert_eq!(http(a, "/nope", Some(b"{}"), &auth).unwrap().0, 404);
    // Too large a body: refused from its declared length, before it is read.
    let (s, b) = raft::http_head_only(a, "/write", 2 << 20, &auth).unwrap();
    assert_eq!(s, 413, "{b}");
    // A node id that is not a member (nor a learner).
    let (s, b) = http(a, "/change-membership", Some(b"[1,7]"), &auth).unwrap();
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("7 not found"), "{b}");
    // Init twice.
    assert_eq!(http(a, "/init", Some(b""), &auth).unwrap().0, 409);
    // A Raft RPC from another cluster.
    let vote = br#"{"vote":{"leader_id":{"term":9,"node_id":2},"committed":false},"last_log_id":null}"#;
    let other = [auth[0], ("x-shale-cluster", "0000000000000bad"), ("x-shale-node", "1")];
    let (s, b) = http(a, "/raft/vote", Some(vote), &other).unwrap();
    assert_eq!(s, 409, "{b}");
    assert!(b.contains("cluster mismatch"), "{b}");
    // A corrupt snapshot: refused before openraft sees it.
    let head = br#"{"vote":{"leader_id":{"term":1,"node_id":1},"committed":true},"meta":{"last_log_id":null,"last_membership":{"log_id":null,"membership":{"configs":[],"nodes":{}}},"snapshot_id":"x"}}"#;
    let mut body = (head.len() as u32).to_le_bytes().to_vec();
    body.extend_from_slice(head);
    body.extend_from_slice(b"SHRSNAP1\x10\0\0\0garbage garbage garbage");
    let mine = [auth[0], ("x-shale-cluster", cluster.as_str()), ("x-shale-node", "1")];
    let (s, b) = http(a, "/raft/snapshot", Some(&body), &mine).unwrap();
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("Corruption"), "{b}");
    // And the node goes on serving.
    let (s, b) = http(a, "/write", Some(w), &auth).unwrap();
    assert_eq!(s, 200, "{b}");
    assert_eq!(json(&read("k").1)["value"], "v");
}

#[test]
fn a_node_of_another_cluster_is_refused() {
    let c = Cluster::start(2, &[]);
    // Two separate one-node clusters.
    for i in 0..2 {
        let (s, b) = post(c.addr(i), "/init", "").unwrap();
        assert_eq!(s, 200, "{b}");
        c.leader(&[i]);
        assert_eq!(c.write(i, "who", &format!("cluster{i}")).unwrap().0, 200);
    }
    // Node 1 tries to take node 2 (whose directory belongs to the other cluster) as learner: the
    // RPCs are refused, so it never catches up (the call gives up or times out).
    let body = format!(r#"{{"id":2,"addr":"{}"}}"#, c.addr(1));
    let _ = raft::http(c.addr(0), "/add-learner", Some(body.as_bytes()), &[]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(c.read(1, "/read-local", "who").as_deref(), Some("cluster1"));
    let m = c.metrics(1).unwrap();
    assert_eq!(m["current_leader"], 2, "node 2 still leads its own cluster: {m}");
}

#[test]
fn client_bodies_must_have_the_documented_shape() {
    let c = Cluster::start(1, &[]);
    assert_eq!(post(c.addr(0), "/init", "").unwrap().0, 200);
    c.leader(&[0]);
    for (path, body, what) in [
        ("/read", r#"["a"]"#, "documented shape"),
        ("/read", "7", "documented shape"),
        ("/read", r#"{"key":"a","x":1}"#, "unknown field"),
        ("/read-local", r#"["a"]"#, "documented shape"),
        ("/write", r#"{"Set":{"key":"k","value":"v","x":1}}"#, "unknown field"),
        ("/write", r#"{"Set":["k","v"]}"#, "documented shape"),
        ("/write", r#"["k"]"#, "documented shape"),
        ("/remove-learner", r#"{"id":2,"x":1}"#, "unknown field"),
    ] {
        let (s, b) = post(c.addr(0), path, body).unwrap();
        assert_eq!(s, 400, "{path} {body}: {b}");
        assert!(json(&b)["error"].as_str().unwrap().contains(what), "{path} {body}: {b}");
    }
    assert_eq!(c.read(0, "/read", "k"), None, "nothing was written");
    // Not HTTP: hyper's own 400 (with an empty body, as docs/raft.md says).
    let mut s = std::net::TcpStream::connect(c.addr(0)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    std::io::Write::write_all(&mut s, b"GARBAGE GARBAGE\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut out);
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
}

#[test]
fn serve_help_and_bad_flags() {
    let bin = env!("CARGO_BIN_EXE_shale");
    let o = std::process::Command::new(bin)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for w in [
        "/init",
        "/add-learner",
        "/change-membership",
        "--auth_token_file",
        "127.0.0.1",
    ] {
        assert!(help.contains(w), "help lacks {w}");
    }
    for (args, msg) in [
        (vec!["serve", "--db=/tmp/x"], "--id is required"),
        (vec!["serve", "--id=0", "--db=/tmp/x"], "positive"),
        (vec!["serve", "--id=1"], "--db is required"),
        (
            vec!["serve", "--id=1", "--db=/tmp/x", "--bogus=1"],
            "unknown flag --bogus",
        ),
        (
            vec!["serve", "--id=1", "--db=/tmp/x", "--auth_token_file=/nonexistent/t"],
            "--auth_token_file",
        ),
    ] {
        let o = std::process::Command::new(bin).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(msg), "{args:?}");
    }
    // Flags refused before the directory is created (and an address in use too).
    let tmp = tempfile::TempDir::new().unwrap();
    let db = tmp.path().join("db");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = format!("--addr={}", busy.local_addr().unwrap());
    for (flags, msg) in [
        (vec!["--election_min_ms=3000", "--election_max_ms=1000"], "raft options"),
        (vec!["--addr=nonsense"], "--addr"),
        (vec!["--addr=127.0.0.1:99999"], "--addr"),
        (vec![busy.as_str()], "listening on"),
    ] {
        let o = std::process::Command::new(bin)
            .args(["serve", "--id=1", &format!("--db={}", db.display())])
            .args(&flags)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{flags:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(msg), "{flags:?}");
        assert!(!db.exists(), "{flags:?}: the directory was created");
    }
}

#[test]
fn serve_bench_runs_a_bounded_load() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_shale"))
        .args([
            "serve-bench",
            "--nodes=1",
            "--connections=2",
            "--seconds=1",
            "--value_size=100",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let line = out
        .lines()
        .find(|l| l.starts_with("nodes=1 connections=2 "))
        .expect("a result line");
    let field = |k: &str| -> u64 {
        let v = line.split(' ').find_map(|f| f.strip_prefix(k)).unwrap();
        v.parse::<f64>().unwrap() as u64
    };
    assert!(field("writes=") > 0, "{line}");
    assert_eq!(field("errors="), 0, "{line}");
    assert!(field("p99_us=") >= field("p50_us="), "{line}");
}

#[test]
fn a_write_is_answered_503_only_when_it_was_not_applied() {
    let mut c = Cluster::start(3, FLAGS);
    c.form();
    let leader = c.leader(&[0, 1, 2]);
    let (f1, f2) = ((leader + 1) % 3, (leader + 2) % 3);
    // A leader without quorum: the write is proposed but cannot commit; answered within a
    // bound (504, may be applied) ...
    c.kill9(f1);
    c.kill9(f2);
    let (s, b) = c.write(leader, "q", "1").unwrap();
    assert_eq!(s, 504, "{b}");
    assert_eq!(json(&b)["may_be_applied"], true, "{b}");
    // A linearizable read needs a quorum's acknowledgement too: refused (503), not left waiting
    // (the client's own read timeout is 15 s).
    let (s, b) = post(c.addr(leader), "/read", r#"{"key":"q"}"#).unwrap();
    assert_eq!(s, 503, "{b}");
    // The node's own replica still answers.
    let (s, _) = post(c.addr(leader), "/read-local", r#"{"key":"q"}"#).unwrap();
    assert_eq!(s, 200);
    // ... and it is applied once a quorum is back: "may be applied" was the truth.
    c.spawn(f1);
    wait_for("the proposed write to be applied", 60, || {
        (c.read(leader, "/read-local", "q").as_deref() == Some("1")).then_some(())
    });
    // A follower that cannot hand a write to any leader: 503, and it was not applied.
    c.kill9(leader);
    let (s, b) = c.write(f1, "f", "1").unwrap();
    assert_eq!(s, 503, "{b}");
    assert_ne!(json(&b)["may_be_applied"], true, "{b}");
    c.spawn(leader);
    c.spawn(f2);
    let now = c.leader(&[0, 1, 2]);
    wait_for("a linearizable read", 60, || {
        let (s, b) = post(c.addr(now), "/read", r#"{"key":"f"}"#).ok()?;
        (s == 200).then(|| json(&b)["value"].clone())
    })
    .is_null()
    .then_some(())
    .expect("the write answered 503 was not applied");
}
