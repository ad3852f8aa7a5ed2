//! `shale serve`'s membership endpoints refuse what would corrupt the cluster: bad or
//! unreachable addresses, a second id for an address or a second address for an id, ids twice,
//! changes that would leave the new voters without a majority (unless forced); learners can be
//! removed; `/add-learner` answers once the learner caught up.

mod raft;

use std::collections::BTreeSet;
use std::net::TcpListener;

use raft::{json, post, wait_for, Cluster};

fn voters_and_learners(c: &Cluster, i: usize) -> Option<(BTreeSet<u64>, BTreeSet<u64>)> {
    let m = c.metrics(i)?;
    let mem = &m["membership_config"]["membership"];
    let voters: BTreeSet<u64> = mem["configs"]
        .as_array()?
        .iter()
        .flat_map(|c| c.as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_u64())
        .collect();
    let nodes: BTreeSet<u64> = mem["nodes"]
        .as_object()?
        .keys()
        .filter_map(|k| k.parse().ok())
        .collect();
    let learners = nodes.difference(&voters).copied().collect();
    Some((voters, learners))
}

fn expect(r: Result<(u16, String), String>, status: u16, what: &str) {
    let (s, b) = r.unwrap();
    assert_eq!(s, status, "{b}");
    let e = json(&b)["error"].as_str().unwrap_or_default().to_string();
    assert!(e.contains(what), "expected {what:?}: {b}");
}

#[test]
fn membership_changes_are_validated() {
    let mut c = Cluster::start(3, &["--heartbeat_ms=100"]);
    let a = c.addr(0).to_string();
    assert_eq!(post(&a, "/init", "").unwrap().0, 200);
    c.leader(&[0]);
    let learner = |id: u64, addr: &str| format!(r#"{{"id":{id},"addr":"{addr}"}}"#);
    let (s, b) = post(&a, "/add-learner", &learner(2, c.addr(1))).unwrap();
    assert_eq!((s, json(&b)["caught_up"].as_bool()), (200, Some(true)), "{b}");
    // Addresses that are not host:port, or where nothing answers.
    let free = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    for (addr, what) in [
        ("", "no port"),
        ("not an address", "no port"),
        ("127.0.0.1:99999", "port"),
        ("127.0.0.1:0", "port"),
        ("bad host:80", "bad host"),
        (free.as_str(), "probing"),
    ] {
        expect(post(&a, "/add-learner", &learner(3, addr)), 400, what);
    }
    // A second id for a node's address; a second address for an id; an address that answers
    // as another node.
    expect(
        post(&a, "/add-learner", &learner(5, c.addr(1))),
        409,
        "already node 2's",
    );
    expect(post(&a, "/add-learner", &learner(5, &a)), 409, "already node 1's");
    expect(
        post(&a, "/add-learner", &learner(2, c.addr(2))),
        409,
        "already a member",
    );
    expect(
        post(&a, "/add-learner", &learner(4, c.addr(2))),
        409,
        "answers as node 3, not node 4",
    );
    // Unknown fields, ids twice, no voters.
    let extra = format!(r#"{{"id":3,"addr":"{}","x":1}}"#, c.addr(2));
    expect(post(&a, "/add-learner", &extra), 400, "unknown field");
    expect(post(&a, "/change-membership", "[1,1,1]"), 400, "appears more than once");
    expect(post(&a, "/change-membership", "[1,2,2]"), 400, "appears more than once");
    expect(post(&a, "/change-membership", "[]"), 400, "empty");
    // Nothing of that changed the membership.
    let before = (BTreeSet::from([1]), BTreeSet::from([2]));
    assert_eq!(voters_and_learners(&c, 0), Some(before));
    // A learner can be removed (not a voter), and added again.
    expect(post(&a, "/remove-learner", r#"{"id":1}"#), 400, "is a voter");
    expect(post(&a, "/remove-learner", r#"{"id":9}"#), 400, "not a learner");
    let (s, b) = post(&a, "/remove-learner", r#"{"id":2}"#).unwrap();
    assert_eq!(s, 200, "{b}");
    assert_eq!(voters_and_learners(&c, 0), Some((BTreeSet::from([1]), BTreeSet::new())));
    for i in [1, 2] {
        let (s, b) = post(&a, "/add-learner", &learner(i as u64 + 1, c.addr(i))).unwrap();
        assert_eq!(s, 200, "{b}");
    }
    let (s, b) = post(&a, "/change-membership", "[1,2,3]").unwrap();
    assert_eq!(s, 200, "{b}");
    // Node 3 down: a change to voters {1, 3} would leave 1 of 2 answering; refused, nothing
    // changed; a forced one is answered within a bounded time (it cannot commit: 503, may be
    // applied) and completes once node 3 is back.
    c.kill9(2);
    let leader = c.leader(&[0, 1]);
    let l = c.addr(leader).to_string();
    expect(post(&l, "/change-membership", "[1,3]"), 409, "would lose quorum");
    assert_eq!(
        voters_and_learners(&c, leader).unwrap().0,
        BTreeSet::from([1, 2, 3]),
        "the refused change changed nothing"
    );
    // Forced (through a follower: the flag goes with the forwarded request): answered within a
    // bounded time, 504 "may be applied" since it cannot commit without node 3 ...
    let follower = 1 - leader;
    let (s, b) = post(c.addr(follower), "/change-membership?force=true", "[1,3]").unwrap();
    assert_eq!(s, 504, "{b}");
    assert_eq!(json(&b)["may_be_applied"], true, "{b}");
    // ... and completes once node 3 is back.
    c.spawn(2);
    wait_for("voters {1, 3}", 60, || {
        (voters_and_learners(&c, 0)?.0 == BTreeSet::from([1, 3])).then_some(())
    });
}
