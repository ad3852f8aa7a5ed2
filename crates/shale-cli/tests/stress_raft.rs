//! `shale stress --raft`: the Raft store under random operations, crashes and power losses
//! against a model, for a few seeds; and that it catches a broken WAL sync.

use std::process::{Command, Output};

fn shale(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shale"))
        .args(args)
        .output()
        .expect("run shale")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// The number after `name=` in the summary line.
fn count(t: &str, name: &str) -> u64 {
    let at = t
        .find(&format!(" {name}="))
        .unwrap_or_else(|| panic!("no {name} in {t}"));
    t[at + name.len() + 2..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn raft_stress_passes_for_several_seeds() {
    for seed in ["1", "2", "3", "17"] {
        let o = shale(&["stress", "--raft", "--duration=2", &format!("--seed={seed}")]);
        let t = text(&o);
        assert!(o.status.success(), "seed {seed}:\n{t}");
        assert!(t.contains("failures=0"), "{t}");
        for what in ["crashes", "power_losses", "ops", "snapshots_built", "installs"] {
            assert!(count(&t, what) > 0, "seed {seed}: no {what}:\n{t}");
        }
    }
}

#[test]
fn raft_stress_with_power_losses_only() {
    let o = shale(&["stress", "--raft", "--power_loss", "--duration=2", "--seed=9"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(count(&t, "crashes"), 0, "{t}");
    assert!(
        count(&t, "damaged_refused") > 0,
        "damaged snapshots were offered and refused:\n{t}"
    );
}

#[test]
fn raft_stress_catches_a_skipped_wal_sync() {
    // Every change of the log and the vote is a synced write: with syncs that do nothing, a
    // power loss takes acknowledged entries away.
    let o = shale(&[
        "stress",
        "--raft",
        "--power_loss",
        "--duration=5",
        "--seed=9",
        "--inject_bug=wal_no_sync",
    ]);
    let t = text(&o);
    assert!(!o.status.success(), "the skipped WAL sync went unnoticed:\n{t}");
    assert!(t.contains("after recovery"), "{t}");
}

#[test]
fn raft_stress_flags_are_validated() {
    let o = shale(&["stress", "--raft", "--use_txn"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("--raft runs on its own"), "{}", text(&o));
    let o = shale(&["stress", "--raft", "--inject_bug=txn_split_commit"]);
    assert!(!o.status.success());
}
