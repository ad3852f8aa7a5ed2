//! The multi-threaded power-loss test (`shale stress --power_loss --threads=N`, N > 1).
//!
//! N threads write concurrently (group commit puts their writes in shared WAL records), each to
//! its own share of the keys (`k % N == thread`), on `MemFs`, until the power is cut at a random
//! file-system operation. A global clock orders acknowledgements: a write takes `start` (the
//! clock) before it is issued and `ticket` (a clock tick) when it is acknowledged, so a write
//! acknowledged before another one started has `ticket < start`. After the power loss and
//! recovery, for every thread:
//! * its keys must hold the state after some prefix of its own writes (no holes, no foreign or
//!   torn values);
//! * every synced write it made survives, and so does everything any thread had acknowledged
//!   before a synced write, a flush or a compaction that completed started;
//! * if a write survived, every write acknowledged (by any thread) before it started survived
//!   too: the WAL is a sequence, and what precedes a surviving record survives.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shale::fs::FileSystem;
use shale::{Options, WriteOptions};

use super::hook_fs::Cutter;
use super::model::Rng;
use super::power_loss::{dump, pl_write, Step};
use super::power_loss_ingest::{matching_prefixes, overlapped_by, pl_ingest, Outcome, Via, SCRATCH};
use super::txn::{mode_of, open_stress_db};
use crate::flags::Flags;

struct Rec {
    step: Step,
    via: Via,
    start: u64,
    ticket: u64,
}

#[derive(Default)]
struct ThreadLog {
    recs: Vec<Rec>,
    /// Number of this thread's writes up to and including its last synced one.
    last_synced: usize,
}

pub fn power_loss_mt(fl: &Flags) -> Result<(), String> {
    let duration = Duration::from_secs(fl.u64("duration").max(1));
    let seed = fl.u64("seed");
    let n = fl.i64("threads").max(2) as u64;
    let max_key = fl.u64("max_key").min(2000).max(4 * n);
    let start = Instant::now();
    let (mut losses, mut episodes, mut keys_checked) = (0u64, 0u64, 0u64);
    let writes = AtomicU64::new(0);
    let cutter = Arc::new(Cutter::default());
    let dir = Path::new("/powerloss/db");
    let mode = mode_of(fl);
    let pi = super::power_loss::pl_ingests(fl, mode);
    println!(
        "power loss test: threads={n} duration={}s seed={seed} max_key={max_key}{}{}",
        duration.as_secs(),
        super::power_loss::txn_desc(mode),
        super::power_loss::ingest_desc(&pi)
    );
    while start.elapsed() < duration {
        let ep_seed = seed.wrapping_add(episodes * 7_777_777);
        episodes += 1;
        let (fs, opts, cfg, sync_rate, fam_opts) = super::power_loss::episode_setup(fl, ep_seed, &cutter);
        let fams = fam_opts.len() as u64 + 1;
        let all_opts: Vec<&Options> = std::iter::once(&opts).chain(&fam_opts).collect();
        fs.create_dir_all(std::path::Path::new(SCRATCH))
            .map_err(|e| e.to_string())?;
        let mut rng = Rng::new(ep_seed);
        let mut durable: BTreeMap<u64, u32> = BTreeMap::new();
        let fail = |round: u64, msg: String| {
            format!(
                "episode seed {ep_seed} round {round} ({n} threads): {msg} (options: {}; rerun with --seed={ep_seed} --duration=1 --threads={n})",
                cfg.desc
            )
        };
        for round in 0..4u64 {
            if start.elapsed() >= duration && round > 0 {
                break;
            }
            cutter.arm(i64::MAX);
            let db = open_stress_db(mode, &opts, dir, &fam_opts).map_err(|e| fail(round, format!("open: {e}")))?;
            let hs = super::power_loss::handles(&db, fams).map_err(|e| fail(round, e))?;
            let steps = 20 + rng.below(200);
            cutter.arm(1 + rng.below(steps * n * 3) as i64);
            let clock = AtomicU64::new(1);
            // Start clocks of the synced writes, flushes and compactions that completed.
            let barriers: Mutex<Vec<u64>> = Mutex::new(Vec::new());
            let logs: Vec<Result<ThreadLog, String>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..n)
                    .map(|t| {
                        let (db, hs, clock, barriers, cutter, writes) = (&db, &hs, &clock, &barriers, &cutter, &writes);
                        let (pi, all_opts, fs) = (&pi, &all_opts, &fs);
                        let mut state: BTreeMap<u64, u32> = durable
                            .iter()
                            .filter(|(s, _)| (*s % max_key) % n == t)
                            .map(|(k, v)| (*k, *v))
                            .collect();
                        let mut trng = Rng::new(ep_seed ^ (round << 32) ^ (t + 1).wrapping_mul(0x9E37_79B9));
                        s.spawn(move || -> Result<ThreadLog, String> {
                            let mut log = ThreadLog::default();
                            let mut attempt = Step::new();
                            for _ in 0..steps {
                                let sync = sync_rate != 0 && trng.below(sync_rate) == 0;
                                let wo = {
                                    let mut o = WriteOptions::default();
                                    o.set_sync(sync);
                                    o.disable_wal(false);
                                    o
                                };
                                let st = clock.load(Ordering::SeqCst);
                                let (step, via) = if pi.now(&mut trng) {
                                    let r = pl_ingest(
                                        pi,
                                        (db, hs),
                                        all_opts,
                                        &mut trng,
                                        &state,
                                        max_key,
                                        (n, t),
                                        (cutter, fs),
                                    );
                                    match r? {
                                        Outcome::Done(step) => (step, Via::Ingest),
                                        Outcome::InDoubt(step) => (step, Via::IngestInDoubt),
                                        Outcome::Cut => break,
                                    }
                                } else {
                                    match pl_write((db, hs), &mut trng, &state, max_key, &wo, (n, t), &mut attempt) {
                                        Ok(step) => (step, Via::Wal),
                                        Err(_) if cutter.is_cut() => {
                                            // Not acknowledged, but its record may be in the WAL
                                            // and survive: a possible last write, never a needed
                                            // one (no ticket).
                                            log.recs.push(Rec {
                                                step: std::mem::take(&mut attempt),
                                                via: Via::Wal,
                                                start: st,
                                                ticket: u64::MAX,
                                            });
                                            break;
                                        }
                                        Err(e) => return Err(e),
                                    }
                                };
                                let ticket = clock.fetch_add(1, Ordering::SeqCst);
                                // An acknowledged ingest over a key this thread wrote in the
                                // family's memtable makes that write durable, and everything
                                // acknowledged before that write started (`power_loss_ingest`).
                                if via == Via::Ingest {
                                    let pairs: Vec<(&Step, Via)> = log.recs.iter().map(|r| (&r.step, r.via)).collect();
                                    if let Some(j) = overlapped_by(&pairs, &step) {
                                        log.last_synced = log.last_synced.max(j + 1);
                                        barriers.lock().unwrap().push(log.recs[j].start);
                                    }
                                }
                                // An empty step wrote nothing (a rolled-back transaction); an
                                // ingest is no WAL write.
                                let sync = via == Via::Wal && sync && !step.is_empty();
                                writes.fetch_add(u64::from(via == Via::Wal), Ordering::Relaxed);
                                for &(k, v) in &step {
                                    if v == 0 {
                                        state.remove(&k);
                                    } else {
                                        state.insert(k, v);
                                    }
                                }
                                log.recs.push(Rec {
                                    step,
                                    via,
                                    start: st,
                                    ticket,
                                });
                                if via == Via::IngestInDoubt {
                                    break;
                                }
                                if sync {
                                    log.last_synced = log.recs.len();
                                    barriers.lock().unwrap().push(st);
                                }
                                if trng.below(150) == 0 {
                                    let st = clock.load(Ordering::SeqCst);
                                    match super::power_loss::flush_all(db, hs) {
                                        Ok(()) => {
                                            log.last_synced = log.recs.len();
                                            barriers.lock().unwrap().push(st);
                                        }
                                        Err(_) if cutter.is_cut() => break,
                                        Err(e) => return Err(e),
                                    }
                                }
                            }
                            Ok(log)
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err("a writer thread panicked".into())))
                    .collect()
            });
            let logs: Vec<ThreadLog> = logs.into_iter().collect::<Result<_, _>>().map_err(|e| fail(round, e))?;
            drop(hs);
            drop(db);
            fs.power_loss();
            losses += 1;
            cutter.arm(i64::MAX);
            let db = open_stress_db(mode, &opts, dir, &fam_opts)
                .map_err(|e| fail(round, format!("reopen after power loss: {e}")))?;
            let got = dump(&db, max_key, fams).map_err(|e| fail(round, e))?;
            drop(db);
            keys_checked += max_key * fams;
            // Per thread: which prefixes of its writes the recovered state matches.
            let mut matches = Vec::new();
            for (t, log) in logs.iter().enumerate() {
                let pairs: Vec<(&Step, Via)> = log.recs.iter().map(|r| (&r.step, r.via)).collect();
                let m = matching_prefixes(&durable, &pairs, &got, (max_key, n, t as u64));
                if m.is_empty() {
                    return Err(fail(
                        round,
                        format!(
                            "thread {t}: its keys hold no prefix of its {} writes (a hole or a foreign value)",
                            log.recs.len()
                        ),
                    ));
                }
                matches.push(m);
            }
            // Everything acknowledged before this clock must have survived.
            let mut bound = barriers.lock().unwrap().iter().copied().max().unwrap_or(0);
            for (log, m) in logs.iter().zip(&matches) {
                let shortest = m[0];
                // (The step that ends the shortest match is a WAL write: an ingest changes
                // nothing between two prefixes, so a match ending at one also ends before it.)
                if shortest > 0 && log.recs[shortest - 1].via == Via::Wal {
                    bound = bound.max(log.recs[shortest - 1].start);
                }
            }
            for (t, (log, m)) in logs.iter().zip(&matches).enumerate() {
                let longest = *m.last().unwrap();
                let before_bound = log.recs.iter().take_while(|r| r.ticket < bound).count();
                let need = log.last_synced.max(before_bound);
                if longest < need {
                    return Err(fail(
                        round,
                        format!(
                            "thread {t}: recovered its state after write {longest} of {}, but write {need} must have survived \
                             (synced: {}, acknowledged before a synced or surviving write started: {before_bound})",
                            log.recs.len(),
                            log.last_synced
                        ),
                    ));
                }
            }
            durable = got;
        }
    }
    println!(
        "power loss test: threads={n} duration={:.1}s episodes={episodes} power_losses={losses} writes={}{} keys_verified={keys_checked} failures=0",
        start.elapsed().as_secs_f64(),
        writes.load(Ordering::Relaxed),
        super::power_loss::ingest_count(&pi)
    );
    if losses == 0 {
        return Err("no power loss was simulated".into());
    }
    Ok(())
}
