//! `shale stress --raft`: the Raft store of `shale-raft` (the storage of `shale serve`) driven
//! through openraft's storage traits by random operations — appends, `truncate`, `purge`, votes,
//! committed ids, state-machine applies, snapshot builds and installs (a quarter of them damaged:
//! they must be refused and change nothing) — against a model, on an in-memory file system.
//!
//! Each round ends with the store going down at a random file-system operation (or after its
//! last operation): a process crash (what was written stays) or a power loss (what was not
//! synced is gone). The store is reopened and must hold exactly the acknowledged log, vote,
//! committed id and current snapshot (each change of these is a synced write), or those plus the
//! one operation in flight; its state machine must be one of the states it went through since
//! the last synced write (applies are not synced, a synced write makes every earlier write
//! durable), with the data of exactly that state. Between crashes, reads are checked too.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{
    CommittedLeaderId, Entry, EntryPayload, LogId, Membership, RaftLogReader, RaftSnapshotBuilder, SnapshotMeta, Vote,
};
use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::Options;
use shale_raft::{decode_snapshot, open_store_with, LogStore, Request, StateMachineStore};
use tokio::io::AsyncWriteExt;

use super::hook_fs::{Cutter, HookFs};
use super::model::{BuggyFs, Rng};
use super::raft_model::{check, entry_text, read_back, snapshot_bytes, Change, Id, Model, SmModel};
use crate::flags::Flags;

const DIR: &str = "/raft-stress/db";

type Store = (LogStore, StateMachineStore);

/// A snapshot from another store: its meta, its bytes, the state machine it holds.
type LeaderSnapshot = (SnapshotMeta<u64, openraft::BasicNode>, Vec<u8>, SmModel);

fn id(term: u64, index: u64) -> Id {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

fn membership_of(rng: &mut Rng) -> Membership<u64, openraft::BasicNode> {
    let nodes: BTreeSet<u64> = (1..=3 + rng.below(3)).collect();
    Membership::new(vec![nodes], None)
}

/// Counts for the summary line.
#[derive(Default)]
struct Stats {
    rounds: u64,
    crashes: u64,
    power_losses: u64,
    ops: u64,
    snapshots_built: u64,
    installs: u64,
    refused: u64,
}

struct Episode<'a> {
    rng: Rng,
    keys: Vec<String>,
    model: Model,
    rt: &'a tokio::runtime::Runtime,
    opts: Options,
    env: Arc<dyn FileSystem>,
    cutter: Arc<Cutter>,
    /// The snapshot operations and round ends so far, for a failure's message.
    trace: Vec<String>,
}

impl Episode<'_> {
    fn open(&self) -> shale::error::Result<Store> {
        open_store_with(DIR, self.opts.clone(), self.env.clone())
    }

    fn key(&mut self) -> String {
        let n = self.rng.below(self.keys.len() as u64) as usize;
        self.keys[n].clone()
    }

    fn term(&self) -> u64 {
        let v = self.model.log.vote.map(|v| v.leader_id().term).unwrap_or(1);
        v.max(self.model.log.last_id().map(|l| l.leader_id.term).unwrap_or(1))
    }

    /// One random operation. `Ok(())`: done (the model is updated); `Err((change, msg))`: it
    /// failed, with what it would have changed had it taken effect.
    // The error carries the change in flight, examined once per round: its size does not matter.
    #[allow(clippy::result_large_err)]
    fn step(&mut self, st: &mut Store, stats: &mut Stats) -> Result<(), (Option<Change>, String)> {
        let (log, sm) = st;
        let rt = self.rt;
        let fail = |c: Change, e: String| (Some(c), e);
        match self.rng.below(100) {
            0..=29 => {
                let n = 1 + self.rng.below(8);
                let term = self.term() + u64::from(self.rng.below(10) == 0);
                let start = self.model.log.last_index() + 1;
                let mut ents = Vec::new();
                for index in start..start + n {
                    let payload = match self.rng.below(20) {
                        0 => EntryPayload::Blank,
                        1 => EntryPayload::Membership(membership_of(&mut self.rng)),
                        2..=5 => EntryPayload::Normal(Request::Delete { key: self.key() }),
                        _ => EntryPayload::Normal(Request::Set {
                            key: self.key(),
                            value: format!("v{}", self.rng.next() % 1_000_000),
                        }),
                    };
                    ents.push(Entry {
                        log_id: id(term, index),
                        payload,
                    });
                }
                let mut next = self.model.log.clone();
                next.entries
                    .extend(ents.iter().map(|e| (e.log_id.index, entry_text(e))));
                rt.block_on(log.blocking_append(ents))
                    .map_err(|e| fail(Change::Log(next.clone()), format!("append: {e}")))?;
                self.model.log = next;
                self.model.synced();
            }
            30..=34 => {
                // Never below what is committed or applied (openraft's rule).
                let lo = self
                    .model
                    .log
                    .committed
                    .map(|c| c.index)
                    .unwrap_or(0)
                    .max(self.model.sm().applied_index());
                let cands: Vec<Id> = self.model.log.entries.range(lo + 1..).map(|(_, e)| e.0).collect();
                if cands.is_empty() {
                    return Ok(());
                }
                let at = cands[self.rng.below(cands.len() as u64) as usize];
                let mut next = self.model.log.clone();
                next.entries.retain(|&i, _| i < at.index);
                rt.block_on(log.truncate(at))
                    .map_err(|e| fail(Change::Log(next.clone()), format!("truncate {at}: {e}")))?;
                self.model.log = next;
                self.model.synced();
            }
            35..=39 => {
                // Only what is applied may be purged.
                let cands: Vec<Id> = self
                    .model
                    .log
                    .entries
                    .range(..=self.model.sm().applied_index())
                    .map(|(_, e)| e.0)
                    .collect();
                if cands.is_empty() {
                    return Ok(());
                }
                let at = cands[self.rng.below(cands.len() as u64) as usize];
                let mut next = self.model.log.clone();
                next.entries = next.entries.split_off(&(at.index + 1));
                next.last_purged = Some(at);
                rt.block_on(log.purge(at))
                    .map_err(|e| fail(Change::Log(next.clone()), format!("purge {at}: {e}")))?;
                self.model.log = next;
                self.model.synced();
            }
            40..=47 => {
                let term = self.term() + self.rng.below(2);
                let node = 1 + self.rng.below(3);
                let v = if self.rng.below(2) == 0 {
                    Vote::new(term, node)
                } else {
                    Vote::new_committed(term, node)
                };
                let mut next = self.model.log.clone();
                next.vote = Some(v);
                rt.block_on(log.save_vote(&v))
                    .map_err(|e| fail(Change::Log(next.clone()), format!("save_vote: {e}")))?;
                self.model.log = next;
                self.model.synced();
            }
            48..=55 => {
                let lo = self.model.log.committed.map(|c| c.index + 1).unwrap_or(0);
                let cands: Vec<Id> = self.model.log.entries.range(lo..).map(|(_, e)| e.0).collect();
                if cands.is_empty() {
                    return Ok(());
                }
                let c = cands[self.rng.below(cands.len() as u64) as usize];
                let mut next = self.model.log.clone();
                next.committed = Some(c);
                rt.block_on(log.save_committed(Some(c)))
                    .map_err(|e| fail(Change::Log(next.clone()), format!("save_committed: {e}")))?;
                self.model.log = next;
                self.model.synced();
            }
            56..=79 => {
                // Apply the next committed entries, as openraft does.
                let from = self.model.sm().applied_index() + 1;
                let to = self.model.log.committed.map(|c| c.index).unwrap_or(0);
                if from > to {
                    return Ok(());
                }
                let to = to.min(from + self.rng.below(10));
                let ents = rt
                    .block_on(log.try_get_log_entries(from..=to))
                    .map_err(|e| (None, format!("reading entries {from}..={to}: {e}")))?;
                if ents.first().map(|e| e.log_id.index) != Some(from) {
                    return Ok(()); // purged below, or a hole after an install: nothing to apply
                }
                let mut next = self.model.sm().clone();
                next.apply(&ents);
                let resp = rt
                    .block_on(sm.apply(ents.clone()))
                    .map_err(|e| fail(Change::Sm(next.clone()), format!("apply: {e}")))?;
                if resp.len() != ents.len() {
                    return Err((
                        None,
                        format!("apply answered {} responses for {} entries", resp.len(), ents.len()),
                    ));
                }
                self.model.push_sm(next);
            }
            80..=83 => {
                let mut b = rt.block_on(sm.get_snapshot_builder());
                let mut snap = rt.block_on(b.build_snapshot()).map_err(|e| {
                    (
                        Some(Change::Build(self.model.sm().applied)),
                        format!("build_snapshot: {e}"),
                    )
                })?;
                if snap.meta.last_log_id != self.model.sm().applied {
                    return Err((
                        None,
                        format!(
                            "snapshot of {:?}, applied {:?}",
                            snap.meta.last_log_id,
                            self.model.sm().applied
                        ),
                    ));
                }
                let bytes = rt.block_on(snapshot_bytes(&mut snap)).map_err(|e| (None, e))?;
                decode_snapshot(&bytes).map_err(|e| (None, format!("a snapshot just built: {e}")))?;
                self.trace.push(format!("build {}", snap.meta.snapshot_id));
                self.model.snapshot = Some(snap.meta);
                self.model.synced();
                stats.snapshots_built += 1;
            }
            84..=87 => {
                let (meta, mut bytes, target) = self.leader_snapshot().map_err(|e| (None, e))?;
                let damaged = self.rng.below(4) == 0;
                if damaged {
                    let at = self.rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 1 << self.rng.below(8);
                }
                let r = rt.block_on(async {
                    let mut data = sm.begin_receiving_snapshot().await.map_err(|e| e.to_string())?;
                    data.write_all(&bytes).await.map_err(|e| e.to_string())?;
                    sm.install_snapshot(&meta, data).await.map_err(|e| e.to_string())
                });
                match (r, damaged) {
                    (Ok(()), false) => {
                        self.model.push_sm(target);
                        self.trace.push(format!("install {}", meta.snapshot_id));
                        self.model.snapshot = Some(meta);
                        self.model.synced();
                        stats.installs += 1;
                    }
                    (Ok(()), true) => return Err((None, "a damaged snapshot was installed".into())),
                    (Err(_), true) if !self.cutter.is_cut() => stats.refused += 1,
                    (Err(e), true) => return Err((None, format!("install of a damaged snapshot: {e}"))),
                    (Err(e), false) => return Err((Some(Change::Install(target, meta)), format!("install: {e}"))),
                }
            }
            _ => {
                let k = self.key();
                let got = sm.get(&k).map_err(|e| (None, format!("get {k}: {e}")))?;
                if got.as_ref() != self.model.sm().data.get(&k) {
                    return Err((
                        None,
                        format!("get {k}: {got:?}, the model has {:?}", self.model.sm().data.get(&k)),
                    ));
                }
            }
        }
        stats.ops += 1;
        Ok(())
    }

    /// A snapshot made by another node's store (a leader ahead of this one): the model's data
    /// changed a little, applied at an index past everything this store has.
    fn leader_snapshot(&mut self) -> Result<LeaderSnapshot, String> {
        let fs = MemFs::new();
        let (_log, mut sm) = open_store_with("/leader", Options::default(), Arc::new(fs))
            .map_err(|e| format!("opening the leader's store: {e}"))?;
        let mut data = self.model.sm().data.clone();
        for _ in 0..self.rng.below(8) {
            let k = self.key();
            if self.rng.below(3) == 0 {
                data.remove(&k);
            } else {
                data.insert(k, format!("L{}", self.rng.next() % 1000));
            }
        }
        let mut index = self.model.sm().applied_index().max(self.model.log.last_index()) + 1 + self.rng.below(20);
        let term = self.term() + 1;
        let mut ents = vec![Entry {
            log_id: id(term, index),
            payload: EntryPayload::Membership(membership_of(&mut self.rng)),
        }];
        for (k, v) in &data {
            index += 1;
            ents.push(Entry {
                log_id: id(term, index),
                payload: EntryPayload::Normal(Request::Set {
                    key: k.clone(),
                    value: v.clone(),
                }),
            });
        }
        let mut target = SmModel::default();
        target.apply(&ents);
        self.rt.block_on(async {
            sm.apply(ents).await.map_err(|e| format!("leader apply: {e}"))?;
            let mut b = sm.get_snapshot_builder().await;
            let mut s = b
                .build_snapshot()
                .await
                .map_err(|e| format!("leader build_snapshot: {e}"))?;
            let bytes = snapshot_bytes(&mut s).await?;
            Ok((s.meta, bytes, target))
        })
    }
}

/// `shale stress --raft`; `--power_loss` makes every round end in a power loss (else 1 in 2).
pub fn raft_stress(fl: &Flags) -> Result<(), String> {
    let duration = Duration::from_secs(fl.u64("duration").max(1));
    let seed = fl.u64("seed");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let start = Instant::now();
    let mut stats = Stats::default();
    let mut episodes = 0u64;
    println!("raft stress test: duration={}s seed={seed}", duration.as_secs());
    while start.elapsed() < duration || episodes == 0 {
        let ep_seed = seed.wrapping_add(episodes * 7_777_777);
        episodes += 1;
        run_episode(fl, ep_seed, &rt, &mut stats, start, duration)
            .map_err(|e| format!("episode seed {ep_seed}: {e} (rerun with --seed={ep_seed} --duration=1)"))?;
    }
    println!(
        "raft stress test: duration={:.1}s episodes={episodes} rounds={} crashes={} power_losses={} ops={} \
         snapshots_built={} installs={} damaged_refused={} failures=0",
        start.elapsed().as_secs_f64(),
        stats.rounds,
        stats.crashes,
        stats.power_losses,
        stats.ops,
        stats.snapshots_built,
        stats.installs,
        stats.refused
    );
    if stats.power_losses == 0 {
        return Err("no power loss was simulated".into());
    }
    Ok(())
}

fn run_episode(
    fl: &Flags,
    ep_seed: u64,
    rt: &tokio::runtime::Runtime,
    stats: &mut Stats,
    start: Instant,
    duration: Duration,
) -> Result<(), String> {
    let fs = MemFs::new();
    let cutter = Arc::new(Cutter::default());
    let base: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let base: Arc<dyn FileSystem> = match fl.str("inject_bug") {
        "" => base,
        b => Arc::new(BuggyFs {
            inner: base,
            bug: b.to_string(),
        }),
    };
    let env: Arc<dyn FileSystem> = Arc::new(HookFs {
        inner: base,
        hook: cutter.hook(),
    });
    let mut rng = Rng::new(ep_seed);
    let mut opts = Options::default();
    // Small memtables: flushes (and the WAL switches they bring) happen within a round.
    opts.set_write_buffer_size(16 << 10 << rng.below(4));
    let keys = (0..fl.u64("max_key").clamp(1, 64)).map(|k| format!("k{k}")).collect();
    let mut ep = Episode {
        rng,
        keys,
        model: Model::new(),
        rt,
        opts,
        env,
        cutter: cutter.clone(),
        trace: Vec::new(),
    };
    for round in 0..6u64 {
        if round > 0 && start.elapsed() >= duration {
            break;
        }
        stats.rounds += 1;
        let power = fl.bool("power_loss") || ep.rng.below(2) == 0;
        let steps = 20 + ep.rng.below(300);
        let cut_in_open = ep.rng.below(8) == 0;
        cutter.arm(if cut_in_open {
            1 + ep.rng.below(40) as i64
        } else {
            i64::MAX
        });
        let mut store = match ep.open() {
            Ok(s) => Some(s),
            Err(_) if cutter.is_cut() => None,
            Err(e) => return Err(format!("round {round}: open: {e}")),
        };
        if !cut_in_open && ep.rng.below(4) != 0 {
            cutter.arm(1 + ep.rng.below(steps * 4) as i64);
        }
        let mut inflight = None;
        if let Some(st) = store.as_mut() {
            for _ in 0..steps {
                match ep.step(st, stats) {
                    Ok(()) => {}
                    Err((c, _)) if cutter.is_cut() => {
                        inflight = c;
                        break;
                    }
                    Err((_, e)) => return Err(format!("round {round}: {e}")),
                }
            }
        }
        drop(store);
        if power {
            fs.power_loss();
            stats.power_losses += 1;
        } else {
            fs.process_crash();
            stats.crashes += 1;
        }
        let point = cutter.point();
        cutter.arm(i64::MAX);
        let (mut log, mut sm) = ep.open().map_err(|e| {
            format!(
                "round {round}: reopen after a {}: {e}",
                if power { "power loss" } else { "crash" }
            )
        })?;
        let got = rt
            .block_on(read_back(&mut log, &mut sm, &ep.keys))
            .map_err(|e| format!("round {round}: {e}"))?;
        check(&ep.model, inflight.as_ref(), &got, power).map_err(|e| {
            format!(
                "round {round}, after a {} (cut at {:?}): {e}\nsnapshot operations: {}",
                if power { "power loss" } else { "crash" },
                point,
                ep.trace.join(", ")
            )
        })?;
        ep.trace.push(format!(
            "round {round} end ({}, cut at {:?}, in flight {:?}, recovered snapshot {:?})",
            if power { "power loss" } else { "crash" },
            point,
            inflight.as_ref().map(|c| match c {
                Change::Log(_) => "log",
                Change::Sm(_) => "apply",
                Change::Build(_) => "build",
                Change::Install(..) => "install",
            }),
            got.snapshot.as_ref().map(|m| m.snapshot_id.clone())
        ));
        ep.model.reset_to(got);
    }
    Ok(())
}
