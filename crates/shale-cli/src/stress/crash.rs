//! Crash tests for `shale stress`.
//!
//! * `--crash_test`: runs `shale stress` as a child process on the real file system, SIGKILLs it
//!   at random moments (mean `--kill_interval`), restarts it (the restarted child first verifies
//!   the database against the expected state the killed one left), for `--duration` seconds,
//!   then verifies once more. Nothing acknowledged may be lost.
//! * `--power_loss` (in `power_loss.rs`; `power_loss_mt.rs` with several threads): in-process, a
//!   random single-threaded workload on `MemFs`; at a random point the power is cut
//!   (`MemFs::power_loss`: unsynced bytes and directory entries vanish), the DB is reopened and
//!   the recovered state must equal the state after some prefix of the write history (no holes)
//!   that includes every synced write (and everything before a flush).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::model::{expected_path, random_options, Rng};
use crate::flags::Flags;

#[derive(Default, Debug)]
struct ChildStats {
    ops: u64,
    verified: u64,
    opened: bool,
    faults: u64,
    fault_reopens: u64,
    txn_commits: u64,
    txn_rollbacks: u64,
    txn_conflicts: u64,
    txn_interrupted: u64,
    ingests: u64,
    checkpoints: u64,
    catch_ups: u64,
    txn_prepared: u64,
    prepared_resolved: u64,
    torn_refusals: u64,
    recovery_mode: Option<String>,
    mapped: Option<String>,
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
            s.txn_commits = field("txn_commits=").unwrap_or(s.txn_commits);
            s.txn_rollbacks = field("txn_rollbacks=").unwrap_or(s.txn_rollbacks);
            s.txn_conflicts = field("txn_conflicts=").unwrap_or(s.txn_conflicts);
            s.ingests = field("ingests=").unwrap_or(s.ingests);
            s.checkpoints = field("checkpoints=").unwrap_or(s.checkpoints);
            s.catch_ups = field("catch_ups=").unwrap_or(s.catch_ups);
            s.txn_prepared = field("txn_prepared=").unwrap_or(s.txn_prepared);
        } else if let Some(r) = line.strip_prefix("stress: resolved ") {
            s.prepared_resolved += r.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0);
        } else if line.starts_with("stress: absolute consistency refused a torn WAL tail") {
            s.torn_refusals += 1;
        } else if line.starts_with("stress: seed=") {
            let field = |name: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .map(str::to_string)
            };
            s.recovery_mode = field("wal_recovery_mode=");
            s.mapped = field("wal_mapped_appends=");
        } else if let Some(r) = line.strip_prefix("stress: interrupted transactions found all or nothing: ") {
            s.txn_interrupted += r.trim().parse::<u64>().unwrap_or(0);
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
    let (mut ingests, mut checkpoints, mut catch_ups) = (0u64, 0u64, 0u64);
    let txn = fl.bool("use_txn") || fl.bool("use_optimistic_txn");
    let (mut txn_commits, mut txn_rollbacks, mut txn_conflicts, mut txn_interrupted) = (0u64, 0u64, 0u64, 0u64);
    let mut kill_points: BTreeMap<String, u64> = BTreeMap::new();
    let mut modes: BTreeMap<String, u64> = BTreeMap::new();
    let (mut txn_prepared, mut prepared_resolved, mut torn_refusals) = (0u64, 0u64, 0u64);
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
    // The families stay the same for the whole DB.
    let families = match fl.i64("column_families") {
        -1 => super::model::num_families(-1, rng.next()),
        f => f as u64,
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
            format!("--column_families={families}"),
            format!("--read_fault_one_in={}", fl.u64("read_fault_one_in")),
            format!("--write_fault_one_in={}", fl.u64("write_fault_one_in")),
            format!("--bitflip_read_one_in={}", fl.u64("bitflip_read_one_in")),
            format!(
                "--ingest_external_file_one_in={}",
                fl.u64("ingest_external_file_one_in")
            ),
            format!("--checkpoint_one_in={}", fl.u64("checkpoint_one_in")),
            format!("--secondary_catch_up_one_in={}", fl.u64("secondary_catch_up_one_in")),
            format!("--large_value_one_in={}", fl.u64("large_value_one_in")),
            format!("--wal_mapped_appends={}", fl.i64("wal_mapped_appends")),
        ];
        if !fl.str("inject_bug").is_empty() {
            a.push(format!("--inject_bug={}", fl.str("inject_bug")));
        }
        for t in ["use_txn", "use_optimistic_txn"] {
            if fl.bool(t) {
                a.push(format!("--{t}"));
            }
        }
        a
    };
    println!(
        "crash test: db={} duration={}s kill_interval={interval}s seed={seed} column_families={families} binary={}",
        db.display(),
        duration.as_secs(),
        exe.display()
    );
    while start.elapsed() < duration {
        let child_seed = seed.wrapping_add(runs * 1_000_003);
        let (_, cfg) = random_options(child_seed, fl.i64("sync"), fl.i64("disable_wal"), dynamic);
        // Transactions always run with the WAL (`run`).
        wal_disabled_runs += (cfg.disable_wal && !txn) as u64;
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
            ("wal.append_torn", 1500),
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
        let only: Vec<&str> = fl
            .str("crash_kill_points")
            .split(',')
            .filter(|p| !p.is_empty())
            .collect();
        let points: Vec<(&str, u64)> = POINTS
            .iter()
            .copied()
            .filter(|(p, _)| only.is_empty() || only.contains(p))
            .collect();
        if points.is_empty() {
            return Err(format!(
                "--crash_kill_points={}: no such kill point",
                fl.str("crash_kill_points")
            ));
        }
        if runs % 2 == 1 {
            let (point, odds) = points[(runs / 2) as usize % points.len()];
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
            Some(st) if st.code() == Some(super::hook_fs::KILL_POINT_EXIT) => {
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
        txn_commits += s.txn_commits;
        txn_rollbacks += s.txn_rollbacks;
        txn_conflicts += s.txn_conflicts;
        txn_interrupted += s.txn_interrupted;
        ingests += s.ingests;
        checkpoints += s.checkpoints;
        catch_ups += s.catch_ups;
        txn_prepared += s.txn_prepared;
        prepared_resolved += s.prepared_resolved;
        torn_refusals += s.torn_refusals;
        if let Some(m) = s.recovery_mode {
            *modes
                .entry(format!("{m}/mapped={}", s.mapped.unwrap_or_default()))
                .or_default() += 1;
        }
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
    if txn {
        // Children report progress every 200 ms: the counts miss what a child did after its
        // last report.
        let counters = text
            .lines()
            .find(|l| l.starts_with("stress: verified the transaction counters"))
            .unwrap_or("stress: the transaction counters were not verified");
        println!(
            "crash test: transactions commits={txn_commits} rollbacks={txn_rollbacks} conflicts={txn_conflicts} \
             (as last reported by each child); interrupted commits found all or nothing after a kill: \
             {txn_interrupted}; final check: {}",
            counters.trim_start_matches("stress: ")
        );
        if txn_commits == 0 {
            return Err("no transaction committed: the crash test did not test transactions".into());
        }
    }
    if fl.u64("ingest_external_file_one_in") + fl.u64("checkpoint_one_in") > 0 {
        // As last reported by each child (every 200 ms).
        println!("crash test: ingests={ingests} checkpoints={checkpoints} (as last reported by each child)");
    }
    if fl.u64("secondary_catch_up_one_in") > 0 {
        if catch_ups == 0 {
            return Err("no secondary caught up: the crash test did not test secondary instances".into());
        }
        println!("crash test: secondary catch-ups={catch_ups} (as last reported by each child)");
    }
    let list: Vec<String> = modes.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!(
        "crash test: runs by WAL recovery mode: {}; torn WAL tails refused by AbsoluteConsistency (then opened \
         tolerating them and verified): {torn_refusals}",
        list.join(" ")
    );
    if txn_prepared + prepared_resolved > 0 {
        println!(
            "crash test: two-phase commits prepared={txn_prepared} (as last reported by each child); prepared \
             transactions found after a kill and resolved: {prepared_resolved}"
        );
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
