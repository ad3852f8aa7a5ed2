//! The single-threaded power-loss test (`shale stress --power_loss`) and what the
//! multi-threaded one (`power_loss_mt`) shares with it: the episode setup, the write step, the
//! dump of the recovered state and the prefix matching.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale::fs::testing::MemFs;
use shale::fs::FileSystem;
use shale::{ColumnFamily, Options, WriteBatch, WriteOptions, DB};

use super::power_loss_ingest::{matching_prefixes, overlapped_by, pl_ingest, Outcome, PlIngest, Via, SCRATCH};
use super::txn::{mode_of, open_stress_db, StressDb, TxnMode};

use super::hook_fs::{Cutter, HookFs};
use super::model::{
    cf_name, decode_value, family_options, key_bytes, merge_operand, new_vid, num_families, pad_len, parse_phys,
    phys_key, random_options, sd_start, value_of, BuggyFs, Rng, MAX_VID,
};
use crate::flags::Flags;

/// A power-loss episode's file system and options: randomized by the seed, small memtables (so
/// WAL switches and flushes happen often), the injected bug if any, the cutter's hook on every
/// durable operation. Also the sync rate (a write in N is synced; 0: none) and the options of
/// the column families beyond `default` (`--column_families`; -1: picked by the seed).
pub(crate) fn episode_setup(
    fl: &Flags,
    ep_seed: u64,
    cutter: &Arc<Cutter>,
) -> (MemFs, Options, super::model::RunCfg, u64, Vec<Options>) {
    let fs = MemFs::new();
    // A WAL written through a mapping (mapped appends, on for most seeds) loses a random part of
    // its unsynced pages at the power cut, not a suffix: pages of a mapping reach the disk in no
    // particular order.
    fs.set_mapped_pages_out_of_order(Some(super::model::mix(ep_seed ^ 0x9A6E)));
    let (mut opts, mut cfg) = random_options(ep_seed, fl.i64("sync"), 0, fl.i64("dynamic_levels"));
    opts.set_write_buffer_size(opts.get_write_buffer_size().min(64 << 10));
    let env: Arc<dyn shale::fs::FileSystem> = Arc::new(fs.clone());
    let env: Arc<dyn shale::fs::FileSystem> = if fl.str("inject_bug").is_empty() {
        env
    } else {
        Arc::new(BuggyFs {
            inner: env,
            bug: fl.str("inject_bug").to_string(),
        })
    };
    opts.set_env(Arc::new(HookFs {
        inner: env,
        hook: cutter.hook(),
    }));
    let sync_rate = match cfg.sync {
        1 => 1,
        0 => 0,
        _ => 16,
    };
    let fams = num_families(fl.i64("column_families"), ep_seed);
    let fam_opts: Vec<Options> = (1..fams)
        .map(|i| {
            let (mut o, d) = family_options(&opts, ep_seed, i);
            o.set_write_buffer_size(o.get_write_buffer_size().min(64 << 10));
            cfg.desc.push_str(&format!(" {d}"));
            o
        })
        .collect();
    (fs, opts, cfg, sync_rate, fam_opts)
}

/// Flush every family (`db.flush()` with one).
pub(crate) fn flush_all(db: &DB, hs: &[Arc<ColumnFamily>]) -> Result<(), String> {
    let r = if hs.len() > 1 {
        db.flush_cfs(&hs.iter().map(|h| &**h).collect::<Vec<_>>())
    } else {
        db.flush()
    };
    r.map_err(|e| format!("flush: {e}"))
}

/// Handles on the families `0..=fam_opts.len()` of `db`.
pub(crate) fn handles(db: &DB, fams: u64) -> Result<Vec<Arc<ColumnFamily>>, String> {
    (0..fams)
        .map(|i| {
            db.cf_handle(&cf_name(i))
                .ok_or_else(|| format!("column family {} is missing", cf_name(i)))
        })
        .collect()
}

/// A write step of the history: the keys it changed and their new value ids (0: absent).
pub(crate) type Step = Vec<(u64, u32)>;

/// The single-threaded power-loss test (`--threads=1`).
pub fn power_loss(fl: &Flags) -> Result<(), String> {
    let duration = Duration::from_secs(fl.u64("duration").max(1));
    let seed = fl.u64("seed");
    let max_key = fl.u64("max_key").min(2000);
    let start = Instant::now();
    let (mut losses, mut episodes, mut writes, mut keys_checked) = (0u64, 0u64, 0u64, 0u64);
    let mut cut_points: BTreeMap<String, u64> = BTreeMap::new();
    let cutter = Arc::new(Cutter::default());
    let dir = Path::new("/powerloss/db");
    let mode = mode_of(fl);
    let pi = pl_ingests(fl, mode);
    println!(
        "power loss test: duration={}s seed={seed} max_key={max_key}{}{}",
        duration.as_secs(),
        txn_desc(mode),
        ingest_desc(&pi)
    );
    while start.elapsed() < duration {
        let ep_seed = seed.wrapping_add(episodes * 7_777_777);
        episodes += 1;
        let (fs, opts, cfg, sync_rate, fam_opts) = episode_setup(fl, ep_seed, &cutter);
        let fams = fam_opts.len() as u64 + 1;
        let all_opts: Vec<&Options> = std::iter::once(&opts).chain(&fam_opts).collect();
        fs.create_dir_all(Path::new(SCRATCH)).map_err(|e| e.to_string())?;
        let mut rng = Rng::new(ep_seed);
        let mut durable: BTreeMap<u64, u32> = BTreeMap::new();
        let fail = |round: u64, msg: String| {
            format!(
                "episode seed {ep_seed} round {round}: {msg} (options: {}; rerun with --seed={ep_seed} --duration=1)",
                cfg.desc
            )
        };
        for round in 0..5u64 {
            if start.elapsed() >= duration && round > 0 {
                break;
            }
            let steps = 20 + rng.below(400);
            // Where the power goes: during the open (recovery) in 1 round in 8, else at a random
            // file-system operation of the round in 3 of 4, else after the DB is closed.
            let cut_in_open = rng.below(8) == 0;
            cutter.arm(if cut_in_open {
                1 + rng.below(40) as i64
            } else {
                i64::MAX
            });
            let db = match open_stress_db(mode, &opts, dir, &fam_opts) {
                Ok(db) => Some(db),
                Err(_) if cutter.is_cut() => None,
                Err(e) => return Err(fail(round, format!("open: {e}"))),
            };
            if !cut_in_open && rng.below(4) != 0 {
                cutter.arm(1 + rng.below(steps * 3) as i64);
            }
            let mut state = durable.clone();
            let mut history: Vec<Step> = Vec::new();
            let mut vias: Vec<Via> = Vec::new();
            let mut last_synced = 0usize;
            let mut attempt = Step::new();
            let hs = match db.as_ref().map(|db| handles(db, fams)) {
                Some(Err(e)) => return Err(fail(round, e)),
                Some(Ok(hs)) => hs,
                None => Vec::new(),
            };
            for _ in 0..steps {
                let Some(db) = db.as_ref() else { break };
                let sync = sync_rate != 0 && rng.below(sync_rate) == 0;
                let wo = {
                    let mut o = WriteOptions::default();
                    o.set_sync(sync);
                    o.disable_wal(false);
                    o
                };
                let (step, via) = if pi.now(&mut rng) {
                    let r = pl_ingest(
                        &pi,
                        (db, &hs),
                        &all_opts,
                        &mut rng,
                        &state,
                        max_key,
                        (1, 0),
                        (&cutter, &fs),
                    );
                    match r.map_err(|e| fail(round, e))? {
                        Outcome::Done(step) => (step, Via::Ingest),
                        Outcome::InDoubt(step) => (step, Via::IngestInDoubt),
                        Outcome::Cut => break,
                    }
                } else {
                    match pl_write((db, &hs), &mut rng, &state, max_key, &wo, (1, 0), &mut attempt) {
                        Ok(s) => (s, Via::Wal),
                        Err(_) if cutter.is_cut() => {
                            // Not acknowledged, but its record may be in the WAL and survive:
                            // a possible last write of the history, never a synced one.
                            history.push(std::mem::take(&mut attempt));
                            vias.push(Via::Wal);
                            break;
                        }
                        Err(e) => return Err(fail(round, e)),
                    }
                };
                // An acknowledged ingest over a key a write of this round put in the family's
                // memtable makes that write durable, and all before it (`power_loss_ingest`).
                if via == Via::Ingest {
                    let pairs: Vec<(&Step, Via)> = history.iter().zip(vias.iter().copied()).collect();
                    if let Some(j) = overlapped_by(&pairs, &step) {
                        last_synced = last_synced.max(j + 1);
                    }
                }
                for &(k, v) in &step {
                    if v == 0 {
                        state.remove(&k);
                    } else {
                        state.insert(k, v);
                    }
                }
                // An empty step wrote nothing (a rolled-back transaction), so it synced nothing.
                let synced = via == Via::Wal && sync && !step.is_empty();
                history.push(step);
                vias.push(via);
                if via == Via::IngestInDoubt {
                    break;
                }
                writes += u64::from(via == Via::Wal);
                if synced {
                    last_synced = history.len();
                }
                // A flush of every family (their memtables switch, and the WAL is synced) or,
                // with one family, a compaction (which flushes it first) makes every write
                // durable; a compaction of one of several families does not.
                let (r, durable_now) = match rng.below(100) {
                    0 => (flush_all(db, &hs), true),
                    1 if fams == 1 => (
                        db.compact_range(None::<&[u8]>, None::<&[u8]>)
                            .map_err(|e| format!("compact_range: {e}")),
                        true,
                    ),
                    1 => {
                        let h = &hs[rng.below(fams) as usize];
                        let r = db.compact_range_cf(h, None::<&[u8]>, None::<&[u8]>);
                        (r.map_err(|e| format!("compact_range_cf: {e}")), false)
                    }
                    _ => continue,
                };
                match r {
                    Ok(()) if durable_now => last_synced = history.len(),
                    Ok(()) => {}
                    Err(_) if cutter.is_cut() => break,
                    Err(e) => return Err(fail(round, e)),
                }
            }
            // The DB is closed with the power already off (its last writes fail), then the
            // file system loses what was not synced.
            drop(hs);
            drop(db);
            fs.power_loss();
            losses += 1;
            match cutter.point() {
                Some(p) => *cut_points.entry(p).or_default() += 1,
                None => *cut_points.entry("after-close".into()).or_default() += 1,
            }
            cutter.arm(i64::MAX);
            let db = open_stress_db(mode, &opts, dir, &fam_opts)
                .map_err(|e| fail(round, format!("reopen after power loss: {e}")))?;
            let got = dump(&db, max_key, fams).map_err(|e| fail(round, e))?;
            keys_checked += max_key * fams;
            // The longest prefix of the history whose state is what was recovered.
            let pairs: Vec<(&Step, Via)> = history.iter().zip(vias.iter().copied()).collect();
            let best = matching_prefixes(&durable, &pairs, &got, (max_key, 1, 0))
                .last()
                .copied();
            match best {
                None => {
                    return Err(fail(
                        round,
                        format!(
                            "the recovered state ({} keys) is not the state after any prefix of the {} writes with every acknowledged ingest (a hole, a lost ingest or a foreign value)",
                            got.len(),
                            history.len()
                        ),
                    ))
                }
                Some(i) if i < last_synced => {
                    return Err(fail(
                        round,
                        format!("synced writes were lost: recovered the state after write {i}, but write {last_synced} was synced"),
                    ))
                }
                Some(_) => {}
            }
            durable = got;
        }
    }
    println!(
        "power loss test: duration={:.1}s episodes={episodes} power_losses={losses} writes={writes}{} keys_verified={keys_checked} failures=0",
        start.elapsed().as_secs_f64(),
        ingest_count(&pi)
    );
    let list: Vec<String> = cut_points.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!("power loss test: power cut at: {}", list.join(" "));
    if losses == 0 {
        return Err("no power loss was simulated".into());
    }
    Ok(())
}

/// One random write; returns the slots it changed (`family * mk + key`). `part = (n, t)`: only
/// keys `k` with `k % n == t` are written (a thread's share in the multi-threaded test; `(1, 0)`:
/// all). With several families (`hs`) a write goes to one of them, or writes one key in all of
/// them in one batch.
pub(crate) fn pl_write(
    (db, hs): (&StressDb, &[Arc<ColumnFamily>]),
    rng: &mut Rng,
    state: &BTreeMap<u64, u32>,
    mk: u64,
    wo: &WriteOptions,
    part: (u64, u64),
    attempt: &mut Step,
) -> Result<Step, String> {
    attempt.clear();
    if !matches!(db, StressDb::Plain(_)) {
        return pl_txn_write((db, hs), rng, state, mk, wo, part, attempt);
    }
    let sd_start = sd_start(mk);
    let (n, t) = part;
    // Virtual keys v map to real keys v * n + t; `vk` of them in all, `vsd` below sd_start.
    let real = |v: u64| v * n + t;
    let vk = (mk.saturating_sub(t)).div_ceil(n).max(1);
    let vsd = sd_start.saturating_sub(t).div_ceil(n);
    let pk = |k: u64, vid: u32| phys_key(k, vid, mk);
    // The family (no random number is drawn with one family).
    let cf = if hs.len() > 1 { rng.below(hs.len() as u64) } else { 0 };
    let h = &hs[cf as usize];
    let s = |k: u64| cf * mk + k;
    let cur = |k: u64| state.get(&s(k)).copied().unwrap_or(0);
    let new_vid = |rng: &mut Rng, k: u64, no_pad: bool| loop {
        let v = 1 + (rng.next() % MAX_VID as u64) as u32;
        if !no_pad || pad_len(k, v) == 0 {
            break v;
        }
    };
    let e = |what: &str, err: shale::Error| format!("{what}: {err}");
    let step = attempt;
    if hs.len() > 1 && vsd > 0 && rng.below(8) == 0 {
        // One key in every family, the same value id in all (or deleted in all).
        let k = real(rng.below(vsd));
        let n = if rng.below(4) == 0 {
            0
        } else {
            new_vid(rng, s(k), false)
        };
        let mut b = WriteBatch::new();
        for (c, h) in hs.iter().enumerate() {
            let sl = c as u64 * mk + k;
            if n == 0 {
                b.delete_cf(h, key_bytes(k));
            } else {
                b.put_cf(h, key_bytes(k), value_of(sl, n));
            }
            step.push((sl, n));
        }
        db.write_opt(b, wo).map_err(|x| e("batch across families", x))?;
        return Ok(step.clone());
    }
    match rng.below(10) {
        0..=3 => {
            let k = real(rng.below(vk));
            if k >= sd_start && cur(k) != 0 {
                step.push((s(k), 0));
                db.single_delete_cf_opt(h, pk(k, cur(k)), wo)
                    .map_err(|x| e("single_delete", x))?;
            } else {
                let n = new_vid(rng, s(k), false);
                step.push((s(k), n));
                db.put_cf_opt(h, pk(k, n), value_of(s(k), n), wo)
                    .map_err(|x| e("put", x))?;
            }
        }
        4 => {
            let k = real(rng.below(vsd.max(1)).min(vsd.saturating_sub(1)));
            step.push((s(k), 0));
            db.delete_cf_opt(h, key_bytes(k), wo).map_err(|x| e("delete", x))?;
        }
        5 => {
            let lo = real(rng.below(vsd.max(1)));
            // Another thread's keys are never inside the range.
            let hi = if n == 1 {
                (lo + 1 + rng.below(16)).min(sd_start)
            } else {
                (lo + 1).min(sd_start)
            };
            if lo < hi {
                step.extend((lo..hi).map(|k| (s(k), 0)));
                db.delete_range_cf_opt(h, key_bytes(lo), key_bytes(hi), wo)
                    .map_err(|x| e("delete_range", x))?;
            }
        }
        6 | 7 => {
            let k = real(rng.below(vsd.max(1)).min(vsd.saturating_sub(1)));
            let n = new_vid(rng, s(k), true);
            step.push((s(k), n));
            db.merge_cf_opt(h, key_bytes(k), merge_operand(s(k), cur(k), n), wo)
                .map_err(|x| e("merge", x))?;
        }
        _ => {
            let mut ks: Vec<u64> = (0..1 + rng.below(10)).map(|_| real(rng.below(vk))).collect();
            ks.sort_unstable();
            ks.dedup();
            let mut b = WriteBatch::new();
            for k in ks {
                let n = if k >= sd_start {
                    if cur(k) != 0 {
                        b.single_delete_cf(h, pk(k, cur(k)));
                        0
                    } else {
                        let n = new_vid(rng, s(k), false);
                        b.put_cf(h, pk(k, n), value_of(s(k), n));
                        n
                    }
                } else if rng.below(3) == 0 {
                    let n = new_vid(rng, s(k), true);
                    b.merge_cf(h, key_bytes(k), merge_operand(s(k), cur(k), n));
                    n
                } else if rng.below(4) == 0 {
                    b.delete_cf(h, key_bytes(k));
                    0
                } else {
                    let n = new_vid(rng, s(k), false);
                    b.put_cf(h, key_bytes(k), value_of(s(k), n));
                    n
                };
                step.push((s(k), n));
            }
            db.write_opt(b, wo).map_err(|x| e("write batch", x))?;
        }
    }
    Ok(step.clone())
}

/// Every key of every family (`fams` of them) of the DB as value ids, by slot; a key or value
/// that is not well-formed is an error.
pub(crate) fn dump(db: &DB, mk: u64, fams: u64) -> Result<BTreeMap<u64, u32>, String> {
    let mut m = BTreeMap::new();
    for (c, h) in handles(db, fams)?.iter().enumerate() {
        let mut it = db.raw_iterator_cf(h);
        it.seek_to_first();
        while it.valid() {
            let (k, suffix) = parse_phys(it.key().unwrap(), mk).ok_or("a foreign key was recovered")?;
            let sl = c as u64 * mk + k;
            let v = it.value().unwrap();
            let id = decode_value(sl, v).ok_or_else(|| {
                format!(
                    "key {k} of {}: recovered a garbage value {} bytes",
                    cf_name(c as u64),
                    v.len()
                )
            })?;
            if suffix.is_some_and(|s| s != id) {
                return Err(format!("key {k}: the value id in the key is not the value's"));
            }
            if m.insert(sl, id).is_some() {
                return Err(format!("key {k}: two versions were recovered"));
            }
            it.next();
        }
        it.status().map_err(|e| format!("scan after recovery: {e}"))?;
    }
    Ok(m)
}

/// " transactions=..." in the first line of a power-loss test with `--use_txn` or
/// `--use_optimistic_txn` (every write step is then a transaction: `txn::pl_txn_write`).
pub(crate) fn txn_desc(mode: TxnMode) -> &'static str {
    match mode {
        TxnMode::Off => "",
        TxnMode::Pessimistic => " transactions=pessimistic",
        TxnMode::Optimistic => " transactions=optimistic",
    }
}

/// A write step of the power-loss tests as one transaction: 1 to 6 keys of the thread's share
/// (`part`, as `power_loss::pl_write`), in random families, put / delete / merge (in the
/// no-overwrite region put-if-absent, delete-if-present), more writes undone by a savepoint 1
/// time in 3, then committed, or rolled back 1 time in 8. A rolled-back (or conflicting)
/// transaction is an empty step: nothing of it may be recovered (the prefix check would see a
/// foreign value), and it syncs nothing, so the callers do not count it as a synced write.
pub fn pl_txn_write(
    (db, hs): (&StressDb, &[Arc<ColumnFamily>]),
    rng: &mut Rng,
    state: &std::collections::BTreeMap<u64, u32>,
    mk: u64,
    wo: &WriteOptions,
    (n, t): (u64, u64),
    attempt: &mut Step,
) -> Result<Vec<(u64, u32)>, String> {
    let sd = sd_start(mk);
    let vk = mk.saturating_sub(t).div_ceil(n).max(1);
    let txn = db.begin(wo, rng).ok_or("--use_txn without a transaction DB")?;
    let e = |what: &str, err: shale::Error| format!("transaction {what}: {err}");
    let mut slots: Vec<u64> = (0..1 + rng.below(6))
        .map(|_| {
            let c = rng.below(hs.len() as u64);
            c * mk + rng.below(vk) * n + t
        })
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let mut step = Vec::new();
    for &s in &slots {
        let (h, k) = (&hs[(s / mk) as usize], s % mk);
        let cur = state.get(&s).copied().unwrap_or(0);
        let new = if k >= sd {
            if cur != 0 {
                txn.delete(h, &phys_key(k, cur, mk)).map_err(|x| e("delete", x))?;
                0
            } else {
                let v = new_vid(rng, s, false);
                txn.put(h, &phys_key(k, v, mk), &value_of(s, v))
                    .map_err(|x| e("put", x))?;
                v
            }
        } else {
            match rng.below(4) {
                0 => {
                    txn.delete(h, &phys_key(k, 0, mk)).map_err(|x| e("delete", x))?;
                    0
                }
                1 => {
                    let v = new_vid(rng, s, true);
                    txn.merge(h, &phys_key(k, 0, mk), &merge_operand(s, cur, v))
                        .map_err(|x| e("merge", x))?;
                    v
                }
                _ => {
                    let v = new_vid(rng, s, false);
                    txn.put(h, &phys_key(k, 0, mk), &value_of(s, v))
                        .map_err(|x| e("put", x))?;
                    v
                }
            }
        };
        step.push((s, new));
    }
    if rng.below(3) == 0 {
        txn.set_savepoint();
        for &s in slots.iter().filter(|&&s| s % mk < sd) {
            let v = new_vid(rng, s, false);
            txn.put(&hs[(s / mk) as usize], &phys_key(s % mk, 0, mk), &value_of(s, v))
                .map_err(|x| e("put", x))?;
        }
        txn.rollback_to_savepoint().map_err(|x| e("rollback_to_savepoint", x))?;
    }
    if rng.below(8) == 0 {
        txn.rollback().map_err(|x| e("rollback", x))?;
        return Ok(Vec::new());
    }
    // The commit's write may reach the WAL though the commit fails (the power goes at its
    // sync): then the step is in flight.
    attempt.clone_from(&step);
    match txn.commit() {
        Ok(()) => Ok(step),
        // A conflict (the optimistic DB's history may be too short to check a key: TryAgain;
        // the threads' keys are disjoint, so no other conflict happens): nothing was written.
        Err(shale::Error::Busy(_) | shale::Error::TryAgain(_) | shale::Error::TimedOut(_)) => Ok(Vec::new()),
        Err(x) => Err(e("commit", x)),
    }
}

/// The ingest settings of a power-loss test: `--ingest_external_file_one_in` without
/// transactions (an ingest bypasses them), as in the other stress modes.
pub(crate) fn pl_ingests(fl: &Flags, mode: TxnMode) -> PlIngest {
    let one_in = if mode == TxnMode::Off {
        fl.u64("ingest_external_file_one_in")
    } else {
        0
    };
    PlIngest::new(one_in, fl.str("inject_bug") == "ingest_forget")
}

/// " ingest_one_in=N" in the first line of a power-loss test with ingests.
pub(crate) fn ingest_desc(pi: &PlIngest) -> String {
    if pi.one_in == 0 {
        String::new()
    } else {
        format!(" ingest_one_in={}", pi.one_in)
    }
}

/// " ingests=N" in the last line of a power-loss test with ingests.
pub(crate) fn ingest_count(pi: &PlIngest) -> String {
    if pi.one_in == 0 {
        String::new()
    } else {
        format!(" ingests={}", pi.done.load(std::sync::atomic::Ordering::Relaxed))
    }
}
