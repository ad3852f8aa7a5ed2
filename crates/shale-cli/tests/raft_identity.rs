//! `shale serve`'s identity: a data directory records its node id and cluster id, checked at
//! every start and on every Raft request; a request that fails validation changes nothing.

mod raft;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use raft::{http, json, post, Cluster};

const VOTE: &[u8] = br#"{"vote":{"leader_id":{"term":9,"node_id":2},"committed":false},"last_log_id":null}"#;

/// Run `shale serve` with `args` until it exits (at most 60 s): its exit code and stderr.
fn run_to_exit(args: &[String]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shale"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("shale serve {args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_data_directory_is_started_only_with_its_own_node_id() {
    let mut c = Cluster::start(1, &[]);
    assert_eq!(post(c.addr(0), "/init", "").unwrap().0, 200);
    c.leader(&[0]);
    assert_eq!(c.write(0, "k", "v").unwrap().0, 200);
    c.kill9(0);
    let dir = c.nodes[0].dir.clone();
    let addr = c.addr(0).to_string();
    let (code, err) = run_to_exit(&[
        "--id=2".into(),
        format!("--db={}", dir.display()),
        format!("--addr={addr}"),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("belongs to node 1, not node 2"), "{err}");
    // Its own id still starts it, with its data.
    c.spawn(0);
    c.leader(&[0]);
    assert_eq!(c.read(0, "/read", "k").as_deref(), Some("v"));
}

#[test]
fn a_raft_request_that_fails_validation_records_nothing() {
    let mut c = Cluster::start(1, &[]);
    let a = c.addr(0).to_string();
    let rpc = |body: &[u8], cluster: &str, node: &str| {
        http(
            &a,
            "/raft/vote",
            Some(body),
            &[("x-shale-cluster", cluster), ("x-shale-node", node)],
        )
        .unwrap()
    };
    // A node not yet part of any cluster: a malformed request naming a cluster is refused and
    // the cluster not recorded; so is a request meant for another node.
    let (s, b) = rpc(b"not json", "abc", "1");
    assert_eq!(s, 400, "{b}");
    assert!(json(&b)["error"].as_str().unwrap().contains("malformed JSON"), "{b}");
    let (s, b) = rpc(VOTE, "abc", "2");
    assert_eq!(s, 409, "{b}");
    assert!(
        b.contains("node mismatch: this is node 1, the request is for node 2"),
        "{b}"
    );
    let (s, b) = rpc(VOTE, "abc", "one");
    assert_eq!(s, 400, "{b}");
    // So a well-formed request of another cluster is still taken, and its cluster recorded,
    // across a restart.
    let (s, b) = rpc(VOTE, "def", "1");
    assert_eq!(s, 200, "{b}");
    c.kill9(0);
    c.spawn(0);
    for body in [VOTE, b"not json"] {
        let (s, b) = rpc(body, "abc", "1");
        assert_eq!(s, 409, "{b}");
        assert!(b.contains("cluster mismatch"), "{b}");
    }
    let (s, b) = rpc(VOTE, "def", "1");
    assert_eq!(s, 200, "{b}");
}

#[test]
fn the_log_has_a_line_per_election_membership_change_and_refused_request() {
    let c = Cluster::start(2, &[]);
    c.form();
    let (s, _) = post(c.addr(0), "/write", "not json").unwrap();
    assert_eq!(s, 400);
    let log = |i: usize| std::fs::read_to_string(c.log(i)).unwrap_or_default();
    raft::wait_for("the log lines", 30, || {
        let l = log(0);
        let found = l
            .lines()
            .any(|x| x.contains("request refused") && x.contains("path=/write") && x.contains("malformed JSON"))
            && l.contains("election: leadership changed")
            && l.lines().filter(|x| x.contains("membership changed")).count() >= 3;
        found.then_some(())
    });
    // The follower logs the leader it follows and the membership it applied.
    raft::wait_for("the follower's lines", 30, || {
        let l = log(1);
        (l.contains("election: leadership changed") && l.contains("membership changed")).then_some(())
    });
    // A bad level is a bad flag.
    let (code, err) = run_to_exit(&["--id=1".into(), "--db=/nonexistent/x".into(), "--log_level=loud".into()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--log_level"), "{err}");
}

/// A follower whose `--max_snapshot_bytes` is below the snapshot it needs never catches up; the
/// follower logs each refusal, and the leader says so too (issue 35: the leader was silent).
#[test]
fn a_snapshot_refused_for_its_size_is_logged_on_both_sides() {
    let mut c = Cluster::start(2, &["--snapshot_logs=20", "--keep_logs=0"]);
    c.form();
    let leader = c.leader(&[0, 1]);
    let follower = 1 - leader;
    for i in 0..100 {
        let (s, b) = c.write(leader, &format!("k{i:03}"), &"v".repeat(100)).unwrap();
        assert_eq!(s, 200, "{b}");
    }
    raft::wait_for("the leader to purge its log", 30, || {
        let m = c.metrics(leader)?;
        (m["purged"]["index"].as_u64()? >= 50).then_some(())
    });
    // The follower comes back empty, taking at most 1000 bytes of snapshot.
    c.kill9(follower);
    std::fs::remove_dir_all(&c.nodes[follower].dir).unwrap();
    c.extra.push("--max_snapshot_bytes=1000".into());
    c.spawn(follower);
    let log = |i: usize| std::fs::read_to_string(c.log(i)).unwrap_or_default();
    raft::wait_for("the leader's line", 60, || {
        log(leader)
            .lines()
            .any(|x| x.contains("snapshot refused by the follower") && x.contains("snapshot over 1000 bytes"))
            .then_some(())
    });
    raft::wait_for("the follower's line", 30, || {
        log(follower)
            .lines()
            .any(|x| x.contains("request refused") && x.contains("snapshot over 1000 bytes"))
            .then_some(())
    });
    // Rate-limited: openraft resends after every backoff, the leader logs it once per 30 s.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let lines = log(leader)
        .lines()
        .filter(|x| x.contains("snapshot refused by the follower"))
        .count();
    assert!(lines <= 2, "{lines} lines in 3 s");
    assert_eq!(
        c.read(follower, "/read-local", "k000"),
        None,
        "the follower caught up after all"
    );
}
