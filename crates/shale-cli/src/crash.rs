//! Crash tests for `shale stress`.
//!
//! * `--crash_test`: runs `shale stress` as a child process on the real file system, SIGKILLs it
//!   at random moments (mean `--kill_interval`), restarts it (the restarted child first verifies
//!   the database against the expected state the killed one left), for `--duration` seconds,
//!   then verifies once more. Nothing acknowledged may be lost.
//! * `--power_loss`: in-process, a random single-threaded workload on `MemFs`; at a random point
//!   the power is cut (`MemFs::power_loss`: unsynced bytes and directory entries vanish), the DB
//!   is reopened and the recovered state must equal the state after some prefix of the write
//!   history (no holes) that includes every synced write (and everything before a flush).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shale::{MemFs, WriteBatch, WriteOptions, DB};

use crate::flags::Flags;
use crate::hookfs::{Cutter, HookFs};
use crate::stress::{
    decode_value, expected_path, key_bytes, merge_operand, pad_len, parse_phys, phys_key, random_options, sd_start,
    value_of, BuggyFs, Rng, MAX_VID,
};

#[derive(Default, Debug)]
struct ChildStats {
    ops: u64,
    verified: u64,
    opened: bool,
    faults: u64,
    fault_reopens: u64,
}

fn parse_log(path: &Path) -> ChildStats {
    let mut s = ChildStats::default();
    let Ok(f) = std::fs::File::open(path) else { return s };
    for line in BufReader::new(f).lines().map_while(Result::ok) {
        if let Some(r) = line.strip_prefix("stress: progress ops=") {
            s.ops = r
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok())
                .unwrap_or(s.ops);
            let field = |name: &str| {
                r.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .and_then(|x| x.parse::<u64>().ok())
            };
            s.faults = field("faults=").unwrap_or(s.faults);
            s.fault_reopens = field("fault_reopens=").unwrap_or(s.fault_reopens);
        } else if let Some(r) = line.strip_prefix("stress: verified ") {
            s.verified += r.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0);
        } else if line.starts_with("stress: opened") {
            s.opened = true;
        }
    }
    s
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The SIGKILL crash test. Returns the exit code.
pub fn crash_test(fl: &Flags) -> i32 {
    match crash_test_inner(fl) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shale stress --crash_test: FAILED: {e}");
            1
        }
    }
}

fn crash_test_inner(fl: &Flags) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the shale binary: {e}"))?;
    let db = PathBuf::from(fl.str("db"));
    let exp = expected_path(fl);
    let log = PathBuf::from(format!("{}.crash-log", db.display()));
    let duration = Duration::from_secs(fl.u64("duration"));
    let interval = fl.f64("kill_interval");
    let seed = fl.u64("seed");
    let mut rng = Rng::new(seed ^ 0xC0FFEE);
    let start = Instant::now();
    let (mut kills, mut clean_exits, mut ops, mut verified, mut runs, mut wal_disabled_runs) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut faults, mut fault_reopens) = (0u64, 0u64);
    let mut kill_points: BTreeMap<String, u64> = BTreeMap::new();
    // level_compaction_dynamic_level_bytes stays the same for the whole DB: changing it on an
    // existing DB is a migration (see docs/reliability.md, open problems), not a crash case.
    let dynamic = match fl.i64("dynamic_levels") {
        -1 => (rng.below(4) != 0) as i64,
        -2 => -1, // each child picks from its seed: the option flips between runs
        d => d,
    };
    // The table format stays the same for the whole DB (a plain DB never gets range tombstones).
    let table_format = match fl.i64("table_format") {
        -1 => (rng.below(6) == 0) as i64,
        f => f,
    };
    let common = |child_seed: u64| -> Vec<String> {
        let mut a = vec![
            "stress".to_string(),
            format!("--db={}", db.display()),
            format!("--expected_values_path={}", exp.display()),
            format!("--threads={}", fl.i64("threads")),
            format!("--max_key={}", fl.u64("max_key")),
            format!("--seed={child_seed}"),
            format!("--sync={}", fl.i64("sync")),
            format!("--disable_wal={}", fl.i64("disable_wal")),
            format!("--dynamic_levels={dynamic}"),
            format!("--table_format={table_format}"),
            format!("--wal_recovery_mode={}", fl.i64("wal_recovery_mode")),
            format!("--read_fault_one_in={}", fl.u64("read_fault_one_in")),
            format!("--write_fault_one_in={}", fl.u64("write_fault_one_in")),
            format!("--bitflip_read_one_in={}", fl.u64("bitflip_read_one_in")),
        ];
        if !fl.str("inject_bug").is_empty() {
            a.push(format!("--inject_bug={}", fl.str("inject_bug")));
        }
        a
    };
    println!(
        "crash test: db={} duration={}s kill_interval={interval}s seed={seed} binary={}",
        db.display(),
        duration.as_secs(),
        exe.display()
    );
    while start.elapsed() < duration {
        let child_seed = seed.wrapping_add(runs * 1_000_003);
        let (_, cfg) = random_options(child_seed, fl.i64("sync"), fl.i64("disable_wal"), dynamic);
        wal_disabled_runs += cfg.disable_wal as u64;
        let mut args = common(child_seed);
        // Each child runs longer than it will live, reopening the DB about once per interval.
        args.push(format!("--duration={}", (interval * 4.0).ceil() as u64 + 2));
        args.push("--reopen=3".into());
        if runs == 0 {
            args.push("--destroy_db_initially".into());
        }
        // Every other run also ends itself at a random kill point (a durability boundary seen
        // at the file system); the timed SIGKILL stays as the fallback.
        // Odd runs cycle through named points (with odds fitting how often each happens); the
        // timed SIGKILL stays the fallback when a point is not reached (e.g. wal.sync when no
        // write syncs).
        const POINTS: &[(&str, u64)] = &[
            ("", 5000),
            ("wal.append", 3000),
            ("wal.flush", 3000),
            ("wal.sync", 20),
            ("wal.create", 2),
            ("sst.append", 200),
            ("sst.sync", 3),
            ("sst.create", 3),
            ("manifest.append", 3),
            ("manifest.sync", 3),
            ("manifest.create", 2),
            ("current.rename", 2),
            ("other.syncdir", 3),
            ("sst.remove", 3),
            ("wal.remove", 2),
        ];
        if runs % 2 == 1 {
            let (point, odds) = POINTS[(runs / 2) as usize % POINTS.len()];
            args.push(format!("--kill_odds={}", odds + rng.below(odds)));
            args.push(format!("--kill_point={point}"));
        }
        let logf = std::fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let logf2 = logf.try_clone().map_err(|e| e.to_string())?;
        let mut child = Command::new(&exe)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(logf))
            .stderr(Stdio::from(logf2))
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        runs += 1;
        // Kill after a random time in [0.1, 1.9] x interval.
        let life = Duration::from_secs_f64(interval * (0.1 + 1.8 * (rng.below(1_000_000) as f64 / 1e6)));
        let born = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(st);
            }
            if born.elapsed() >= life {
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        match status {
            Some(st) if st.success() => clean_exits += 1,
            Some(st) if st.code() == Some(crate::hookfs::KILL_POINT_EXIT) => {
                kills += 1;
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let point = text
                    .lines()
                    .find_map(|l| l.strip_prefix("kill point: "))
                    .and_then(|r| r.split_whitespace().next())
                    .unwrap_or("?")
                    .to_string();
                *kill_points.entry(point).or_default() += 1;
            }
            Some(st) => {
                return Err(format!(
                    "run {runs} (seed {child_seed}) exited with {st} before it was killed; log {}:\n{}",
                    log.display(),
                    tail(&log, 30)
                ))
            }
            None => {
                child.kill().map_err(|e| format!("SIGKILL failed: {e}"))?;
                let _ = child.wait();
                kills += 1;
            }
        }
        let s = parse_log(&log);
        ops += s.ops;
        verified += s.verified;
        faults += s.faults;
        fault_reopens += s.fault_reopens;
    }
    // Final verification of what the last child left.
    let mut args = common(seed.wrapping_add(runs * 1_000_003));
    args.push("--verify_only".into());
    let out = Command::new(&exe)
        .args(&args)
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("final verification failed ({}):\n{text}", out.status));
    }
    verified += text
        .lines()
        .filter_map(|l| l.strip_prefix("stress: verified "))
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .sum::<u64>();
    println!(
        "crash test: duration={:.1}s runs={runs} kills={kills} clean_exits={clean_exits} wal_disabled_runs={wal_disabled_runs} \
         ops={ops} keys_verified={verified} failures=0",
        start.elapsed().as_secs_f64()
    );
    if faults > 0 || fl.u64("read_fault_one_in") + fl.u64("write_fault_one_in") + fl.u64("bitflip_read_one_in") > 0 {
        println!("crash test: injected I/O faults={faults} reopens_after_fault={fault_reopens}");
    }
    if !kill_points.is_empty() {
        let list: Vec<String> = kill_points.iter().map(|(k, n)| format!("{k}={n}")).collect();
        println!("crash test: kill points hit: {}", list.join(" "));
    }
    if kills == 0 {
        return Err(format!(
            "no child was killed in {runs} runs: the crash test did not test crashes"
        ));
    }
    if ops == 0 {
        return Err("the children did no operations before they were killed".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Simulated power loss.

/// A power-loss episode's file system and options: randomized by the seed, small memtables (so
/// WAL switches and flushes happen often), the injected bug if any, the cutter's hook on every
/// durable operation. Also the sync rate (a write in N is synced; 0: none).
pub(crate) fn episode_setup(
    fl: &Flags,
    ep_seed: u64,
    cutter: &Arc<Cutter>,
) -> (MemFs, shale::Options, crate::stress::RunCfg, u64) {
    let fs = MemFs::new();
    let (mut opts, cfg) = random_options(ep_seed, fl.i64("sync"), 0, fl.i64("dynamic_levels"));
    opts.set_write_buffer_size(opts.get_write_buffer_size().min(64 << 10));
    let env: Arc<dyn shale::FileSystem> = Arc::new(fs.clone());
    let env: Arc<dyn shale::FileSystem> = if fl.str("inject_bug").is_empty() {
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
    (fs, opts, cfg, sync_rate)
}

pub fn power_loss_test(fl: &Flags) -> i32 {
    match power_loss_inner(fl) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shale stress --power_loss: FAILED: {e}");
            1
        }
    }
}

/// A write step of the history: the keys it changed and their new value ids (0: absent).
pub(crate) type Step = Vec<(u64, u32)>;

fn power_loss_inner(fl: &Flags) -> Result<(), String> {
    if fl.i64("threads") > 1 {
        return crate::powerloss_mt::power_loss_mt(fl);
    }
    let duration = Duration::from_secs(fl.u64("duration").max(1));
    let seed = fl.u64("seed");
    let max_key = fl.u64("max_key").min(2000);
    let start = Instant::now();
    let (mut losses, mut episodes, mut writes, mut keys_checked) = (0u64, 0u64, 0u64, 0u64);
    let mut cut_points: BTreeMap<String, u64> = BTreeMap::new();
    let cutter = Arc::new(Cutter::default());
    let dir = Path::new("/powerloss/db");
    println!(
        "power loss test: duration={}s seed={seed} max_key={max_key}",
        duration.as_secs()
    );
    while start.elapsed() < duration {
        let ep_seed = seed.wrapping_add(episodes * 7_777_777);
        episodes += 1;
        let (fs, opts, cfg, sync_rate) = episode_setup(fl, ep_seed, &cutter);
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
            let db = match DB::open(&opts, dir) {
                Ok(db) => Some(db),
                Err(_) if cutter.is_cut() => None,
                Err(e) => return Err(fail(round, format!("open: {e}"))),
            };
            if !cut_in_open && rng.below(4) != 0 {
                cutter.arm(1 + rng.below(steps * 3) as i64);
            }
            let mut state = durable.clone();
            let mut history: Vec<Step> = Vec::new();
            let mut last_synced = 0usize;
            for _ in 0..steps {
                let Some(db) = db.as_ref() else { break };
                let sync = sync_rate != 0 && rng.below(sync_rate) == 0;
                let wo = {
                    let mut o = WriteOptions::default();
                    o.set_sync(sync);
                    o.disable_wal(false);
                    o
                };
                let step = match pl_write(db, &mut rng, &state, max_key, &wo, (1, 0)) {
                    Ok(s) => s,
                    Err(_) if cutter.is_cut() => break,
                    Err(e) => return Err(fail(round, e)),
                };
                for &(k, v) in &step {
                    if v == 0 {
                        state.remove(&k);
                    } else {
                        state.insert(k, v);
                    }
                }
                history.push(step);
                writes += 1;
                if sync {
                    last_synced = history.len();
                }
                let r = match rng.below(100) {
                    0 => db.flush().map_err(|e| format!("flush: {e}")),
                    1 => db.compact_range(None, None).map_err(|e| format!("compact_range: {e}")),
                    _ => continue,
                };
                match r {
                    Ok(()) => last_synced = history.len(),
                    Err(_) if cutter.is_cut() => break,
                    Err(e) => return Err(fail(round, e)),
                }
            }
            // The DB is closed with the power already off (its last writes fail), then the
            // file system loses what was not synced.
            drop(db);
            fs.power_loss();
            losses += 1;
            match cutter.point() {
                Some(p) => *cut_points.entry(p).or_default() += 1,
                None => *cut_points.entry("after-close".into()).or_default() += 1,
            }
            cutter.arm(i64::MAX);
            let db = DB::open(&opts, dir).map_err(|e| fail(round, format!("reopen after power loss: {e}")))?;
            let got = dump(&db, max_key).map_err(|e| fail(round, e))?;
            keys_checked += max_key;
            // The longest prefix of the history whose state is what was recovered.
            let best = crate::powerloss_mt::matching_prefixes(&durable, history.iter(), &got, 1, 0)
                .last()
                .copied();
            match best {
                None => {
                    return Err(fail(
                        round,
                        format!(
                            "the recovered state ({} keys) is not the state after any prefix of the {} writes (a hole or a foreign value)",
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
        "power loss test: duration={:.1}s episodes={episodes} power_losses={losses} writes={writes} keys_verified={keys_checked} failures=0",
        start.elapsed().as_secs_f64()
    );
    let list: Vec<String> = cut_points.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!("power loss test: power cut at: {}", list.join(" "));
    if losses == 0 {
        return Err("no power loss was simulated".into());
    }
    Ok(())
}

/// One random write; returns the keys it changed. `part = (n, t)`: only keys `k` with
/// `k % n == t` are written (a thread's share in the multi-threaded test; `(1, 0)`: all).
pub(crate) fn pl_write(
    db: &DB,
    rng: &mut Rng,
    state: &BTreeMap<u64, u32>,
    mk: u64,
    wo: &WriteOptions,
    part: (u64, u64),
) -> Result<Step, String> {
    let sd_start = sd_start(mk);
    let (n, t) = part;
    // Virtual keys v map to real keys v * n + t; `vk` of them in all, `vsd` below sd_start.
    let real = |v: u64| v * n + t;
    let vk = (mk.saturating_sub(t)).div_ceil(n).max(1);
    let vsd = sd_start.saturating_sub(t).div_ceil(n);
    let pk = |k: u64, vid: u32| phys_key(k, vid, mk);
    let cur = |k: u64| state.get(&k).copied().unwrap_or(0);
    let new_vid = |rng: &mut Rng, k: u64, no_pad: bool| loop {
        let v = 1 + (rng.next() % MAX_VID as u64) as u32;
        if !no_pad || pad_len(k, v) == 0 {
            break v;
        }
    };
    let e = |what: &str, err: shale::Error| format!("{what}: {err}");
    let mut step = Vec::new();
    match rng.below(10) {
        0..=3 => {
            let k = real(rng.below(vk));
            if k >= sd_start && cur(k) != 0 {
                db.single_delete_opt(pk(k, cur(k)), wo)
                    .map_err(|x| e("single_delete", x))?;
                step.push((k, 0));
            } else {
                let n = new_vid(rng, k, false);
                db.put_opt(pk(k, n), value_of(k, n), wo).map_err(|x| e("put", x))?;
                step.push((k, n));
            }
        }
        4 => {
            let k = real(rng.below(vsd.max(1)).min(vsd.saturating_sub(1)));
            db.delete_opt(key_bytes(k), wo).map_err(|x| e("delete", x))?;
            step.push((k, 0));
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
                db.delete_range_opt(key_bytes(lo), key_bytes(hi), wo)
                    .map_err(|x| e("delete_range", x))?;
                step.extend((lo..hi).map(|k| (k, 0)));
            }
        }
        6 | 7 => {
            let k = real(rng.below(vsd.max(1)).min(vsd.saturating_sub(1)));
            let n = new_vid(rng, k, true);
            db.merge_opt(key_bytes(k), merge_operand(k, cur(k), n), wo)
                .map_err(|x| e("merge", x))?;
            step.push((k, n));
        }
        _ => {
            let mut ks: Vec<u64> = (0..1 + rng.below(10)).map(|_| real(rng.below(vk))).collect();
            ks.sort_unstable();
            ks.dedup();
            let mut b = WriteBatch::new();
            for k in ks {
                let n = if k >= sd_start {
                    if cur(k) != 0 {
                        b.single_delete(pk(k, cur(k)));
                        0
                    } else {
                        let n = new_vid(rng, k, false);
                        b.put(pk(k, n), value_of(k, n));
                        n
                    }
                } else if rng.below(3) == 0 {
                    let n = new_vid(rng, k, true);
                    b.merge(key_bytes(k), merge_operand(k, cur(k), n));
                    n
                } else if rng.below(4) == 0 {
                    b.delete(key_bytes(k));
                    0
                } else {
                    let n = new_vid(rng, k, false);
                    b.put(key_bytes(k), value_of(k, n));
                    n
                };
                step.push((k, n));
            }
            db.write_opt(b, wo).map_err(|x| e("write batch", x))?;
        }
    }
    Ok(step)
}

/// Every key of the DB as value ids; a key or value that is not well-formed is an error.
pub(crate) fn dump(db: &DB, mk: u64) -> Result<BTreeMap<u64, u32>, String> {
    let mut m = BTreeMap::new();
    let mut it = db.raw_iterator();
    it.seek_to_first();
    while it.valid() {
        let (k, suffix) = parse_phys(it.key().unwrap(), mk).ok_or("a foreign key was recovered")?;
        let v = it.value().unwrap();
        let id = decode_value(k, v).ok_or_else(|| format!("key {k}: recovered a garbage value {} bytes", v.len()))?;
        if suffix.is_some_and(|s| s != id) {
            return Err(format!("key {k}: the value id in the key is not the value's"));
        }
        if m.insert(k, id).is_some() {
            return Err(format!("key {k}: two versions were recovered"));
        }
        it.next();
    }
    it.status().map_err(|e| format!("scan after recovery: {e}"))?;
    Ok(m)
}
