//! Properties (`rocksdb.*`) and the statistics behind `rocksdb.stats`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::info_log::LogLevel;
use std::time::Duration;

use super::compaction::{level_scores, picker_config};
use super::job_stats::{IntervalMark, LevelStats};
use super::stall::Condition;
use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::compaction::level_targets::compute_targets;
use crate::engine::job_stats::CompactionStats;
use crate::engine::stall::StallCounters;
use crate::error::Result;
use crate::lsm::version::Version;

/// Bytes as GiB, for the stats text.
fn gb(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn mb(b: u64) -> f64 {
    b as f64 / 1048576.0
}

pub(crate) fn property_value(db: &Arc<DbInner>, cf: &ColumnFamilyData, name: &str) -> Result<Option<String>> {
    let sv = cf.super_version();
    let v = &sv.version;
    if let Some(n) = name.strip_prefix("rocksdb.num-files-at-level") {
        return Ok(n
            .parse::<usize>()
            .ok()
            .filter(|&l| l < v.num_levels())
            .map(|l| v.num_files(l).to_string()));
    }
    let mem_bytes = |m: &crate::memtable::MemTable| m.approximate_memory_usage() as u64;
    let r = match name {
        "rocksdb.estimate-num-keys" => {
            let mut n: i64 = 0;
            for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
                n += m.num_entries() as i64 - 2 * m.num_deletes() as i64;
            }
            for (_, f) in v.all_files() {
                if let Ok(t) = cf.table_cache.get(f) {
                    let p = t.properties();
                    n += p.num_entries as i64 - 2 * p.num_deletions as i64;
                }
            }
            n.max(0).to_string()
        }
        "rocksdb.num-immutable-mem-table" => sv.imm.len().to_string(),
        // LOG writes that failed (the LOG never fails a DB operation; see `info_log`).
        "shale.log-write-errors" => db.info_log.write_errors().to_string(),
        "rocksdb.cur-size-active-mem-table" => mem_bytes(&sv.mem).to_string(),
        // Active and unflushed immutable memtables.
        "rocksdb.cur-size-all-mem-tables" => {
            (mem_bytes(&sv.mem) + sv.imm.iter().map(|m| mem_bytes(m)).sum::<u64>()).to_string()
        }
        // Also flushed memtables still pinned by readers: every live memtable's charge.
        "rocksdb.size-all-mem-tables" => {
            let cur = mem_bytes(&sv.mem) + sv.imm.iter().map(|m| mem_bytes(m)).sum::<u64>();
            let all = db.mem_account.total.load(Ordering::Relaxed) as u64;
            all.max(cur).to_string()
        }
        "rocksdb.num-entries-active-mem-table" => sv.mem.num_entries().to_string(),
        "rocksdb.num-entries-imm-mem-tables" => sv.imm.iter().map(|m| m.num_entries()).sum::<u64>().to_string(),
        "rocksdb.num-deletes-active-mem-table" => sv.mem.num_deletes().to_string(),
        "rocksdb.num-deletes-imm-mem-tables" => sv.imm.iter().map(|m| m.num_deletes()).sum::<u64>().to_string(),
        "rocksdb.estimate-live-data-size" => v.estimate_live_data_size().to_string(),
        "rocksdb.num-blob-files" => v.blob_files.len().to_string(),
        // A blob file's size: its records, header and footer.
        "rocksdb.total-blob-file-size" | "rocksdb.live-blob-file-size" => v
            .blob_files
            .values()
            .map(|b| b.addition.total_blob_bytes + 30 + 32)
            .sum::<u64>()
            .to_string(),
        "rocksdb.live-blob-file-garbage-size" => {
            v.blob_files.values().map(|b| b.garbage_bytes).sum::<u64>().to_string()
        }
        "rocksdb.total-sst-files-size" | "rocksdb.live-sst-files-size" => {
            v.all_files().map(|(_, f)| f.meta.file_size).sum::<u64>().to_string()
        }
        // Both collect now (RocksDB's fast variant may answer from an earlier collection).
        "rocksdb.block-cache-entry-stats" | "rocksdb.fast-block-cache-entry-stats" => match &cf.cache_stats {
            Some(h) => h.0.entry_stats_text(),
            None => return Ok(None),
        },
        "rocksdb.block-cache-usage" => db.block_cache.as_ref().map(|c| c.usage()).unwrap_or(0).to_string(),
        "rocksdb.block-cache-capacity" => db.block_cache.as_ref().map(|c| c.capacity()).unwrap_or(0).to_string(),
        "rocksdb.block-cache-pinned-usage" => db
            .block_cache
            .as_ref()
            .map(|c| c.pinned_usage())
            .unwrap_or(0)
            .to_string(),
        // Memory of open table readers outside the block cache (index and filter blocks they
        // hold, properties); index and filter blocks kept in the cache are not counted.
        "rocksdb.estimate-table-readers-mem" => {
            let mut n = 0u64;
            for (_, f) in v.all_files() {
                if let Some(t) = cf.table_cache.peek(f) {
                    n += t.approximate_memory_usage() as u64;
                }
            }
            n.to_string()
        }
        "rocksdb.num-snapshots" => db.snapshots.lock().values().sum::<usize>().to_string(),
        "rocksdb.background-errors" => {
            let st = db.state.lock();
            (st.bg_error.is_some() as u32 + st.soft_error.is_some() as u32).to_string()
        }
        "rocksdb.is-write-stopped" => ((db.stall.state().0 == Condition::Stopped) as u32).to_string(),
        "rocksdb.actual-delayed-write-rate" => db.stall.actual_delayed_write_rate().to_string(),
        "rocksdb.estimate-pending-compaction-bytes" => db.stall.pending_compaction_bytes().to_string(),
        "rocksdb.base-level" => compute_targets(v, &picker_config(cf)).base_level.to_string(),
        "rocksdb.num-running-compactions" => db.state.lock().compactions_running.to_string(),
        "rocksdb.num-running-flushes" => (db.state.lock().flush_running as u32).to_string(),
        "rocksdb.levelstats" => {
            let mut s = String::from("Level Files Size(MB)\n--------------------\n");
            for l in 0..v.num_levels() {
                let _ = writeln!(s, "{l:>5} {:>5} {:>8.0}", v.num_files(l), mb(v.level_bytes(l)));
            }
            s
        }
        "rocksdb.stats" => stats_text(db, cf),
        _ => return Ok(None),
    };
    Ok(Some(r))
}

fn hms(micros: u64) -> String {
    let secs = micros as f64 / 1e6;
    let h = (secs / 3600.0) as u64;
    let m = ((secs - h as f64 * 3600.0) / 60.0) as u64;
    format!(
        "{:02}:{:02}:{:06.3} H:M:S",
        h,
        m,
        secs - h as f64 * 3600.0 - m as f64 * 60.0
    )
}

/// Space amplification as the universal picker sees it (RocksDB's size-amplification check),
/// for every style: the bytes of the newer sorted runs over those of the oldest (the last
/// non-empty level, or the oldest L0 file when only L0 has files), which holds about the live
/// data once everything is merged into it. 0 for an empty DB or a single run.
fn space_amp(v: &crate::lsm::version::Version) -> f64 {
    let total: u64 = (0..v.num_levels()).map(|l| v.level_bytes(l)).sum();
    let oldest = (1..v.num_levels())
        .rev()
        .map(|l| v.level_bytes(l))
        .find(|&b| b > 0)
        .or_else(|| v.files.first().and_then(|f| f.last()).map(|f| f.meta.file_size))
        .unwrap_or(0);
    if oldest == 0 {
        0.0
    } else {
        total.saturating_sub(oldest) as f64 / oldest as f64
    }
}

/// The Score column: RocksDB's compaction score of each level for the family's style
/// (`ComputeCompactionScore`). Leveled: the level scores; universal: L0 holds the sorted runs not
/// being compacted over `level0_file_num_compaction_trigger` (the other levels 0); FIFO: L0 holds
/// its bytes not being compacted over `max_table_files_size`, with `allow_compaction` at least
/// its files over the trigger, with a `ttl` at least the number of expired files.
fn style_scores(
    v: &crate::lsm::version::Version,
    cf: &ColumnFamilyData,
    busy: &std::collections::HashSet<u64>,
) -> Vec<f64> {
    use crate::options::compaction::DBCompactionStyle;
    let trigger = cf.opts.level0_file_num_compaction_trigger.max(1) as f64;
    let free_l0 = || v.files[0].iter().filter(|f| !busy.contains(&f.number()));
    let mut scores = vec![0.0; v.num_levels()];
    match cf.opts.compaction_style {
        DBCompactionStyle::Level => return level_scores(v, &picker_config(cf)),
        DBCompactionStyle::Universal => {
            scores[0] =
                crate::compaction::universal::universal_score(v, busy, cf.opts.level0_file_num_compaction_trigger);
        }
        DBCompactionStyle::Fifo => {
            let fifo = &cf.opts.compaction_options_fifo;
            let bytes: u64 = free_l0().map(|f| f.meta.file_size).sum();
            let mut score = bytes as f64 / fifo.max_table_files_size.max(1) as f64;
            if fifo.allow_compaction && !v.files[0].is_empty() {
                score = score.max(free_l0().count() as f64 / trigger);
            }
            let now = super::table_output::now_secs();
            if cf.opts.ttl > 0 && now > cf.opts.ttl {
                let expired = free_l0()
                    .filter(|f| {
                        let t = f.newest_data_time();
                        t > 0 && t < now - cf.opts.ttl
                    })
                    .count();
                score = score.max(expired as f64);
            }
            scores[0] = score;
        }
    }
    scores
}

/// The per-level table of `rocksdb.stats` (RocksDB's "Compaction Stats" block): files, size,
/// score, bytes read and written, write amplification and compaction time per level, then the
/// sum.
fn level_table(s: &mut String, cf_name: &str, v: &Version, stats: &CompactionStats, scores: &[f64]) -> LevelStats {
    let _ = writeln!(s, "\n** Compaction Stats [{}] **", cf_name);
    let _ = writeln!(
        s,
        "Level    Files   Size(MB) Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Comp(sec) Comp(cnt)"
    );
    let _ = writeln!(s, "{}", "-".repeat(113));
    // RocksDB's Wnew: bytes written minus those read from the output level (may be negative).
    let wnew = |ls: &LevelStats| (ls.write_bytes as f64 - ls.read_next_bytes as f64) / (1u64 << 30) as f64;
    let mut tot = LevelStats::default();
    let mut tot_files = 0;
    let mut tot_bytes = 0;
    for l in 0..v.num_levels() {
        let ls = stats.levels.get(l).cloned().unwrap_or_default();
        let files = v.num_files(l);
        let bytes = v.level_bytes(l);
        if files == 0 && ls.compactions == 0 && ls.moved_bytes == 0 {
            continue;
        }
        // RocksDB: bytes written over bytes read from the input level (a flush writes what it
        // ingests: 1.0).
        let wamp = if l == 0 {
            if ls.write_bytes > 0 {
                1.0
            } else {
                0.0
            }
        } else if ls.read_bytes == 0 {
            0.0
        } else {
            ls.write_bytes as f64 / ls.read_bytes as f64
        };
        let _ = writeln!(
            s,
            "  L{l:<4} {files:>6} {:>10.2} {:>5.2} {:>8.3} {:>7.3} {:>8.3} {:>9.3} {:>8.3} {:>9.3} {:>5.1} {:>9.3} {:>9}",
            mb(bytes),
            scores.get(l).copied().unwrap_or(0.0),
            gb(ls.read_bytes + ls.read_next_bytes),
            gb(ls.read_bytes),
            gb(ls.read_next_bytes),
            gb(ls.write_bytes),
            wnew(&ls),
            gb(ls.moved_bytes),
            wamp,
            ls.micros as f64 / 1e6,
            ls.compactions
        );
        tot.read_bytes += ls.read_bytes;
        tot.read_next_bytes += ls.read_next_bytes;
        tot.write_bytes += ls.write_bytes;
        tot.moved_bytes += ls.moved_bytes;
        tot.micros += ls.micros;
        tot.compactions += ls.compactions;
        tot_files += files;
        tot_bytes += bytes;
    }
    // RocksDB: total bytes written (flushes and compactions) over bytes flushed.
    let flushed = stats.flush_bytes;
    let wamp = if flushed == 0 {
        0.0
    } else {
        tot.write_bytes as f64 / flushed as f64
    };
    let _ = writeln!(
        s,
        " Sum   {tot_files:>6} {:>10.2} {:>5} {:>8.3} {:>7.3} {:>8.3} {:>9.3} {:>8.3} {:>9.3} {:>5.1} {:>9.3} {:>9}",
        mb(tot_bytes),
        "",
        gb(tot.read_bytes + tot.read_next_bytes),
        gb(tot.read_bytes),
        gb(tot.read_next_bytes),
        gb(tot.write_bytes),
        wnew(&tot),
        gb(tot.moved_bytes),
        wamp,
        tot.micros as f64 / 1e6,
        tot.compactions
    );
    tot
}

/// The "DB Stats" block of `rocksdb.stats`: writes, keys, commit groups, WAL syncs and write
/// stalls, cumulative and over the interval since the last dump.
fn db_stats(
    s: &mut String,
    cur: &IntervalMark,
    prev: &IntervalMark,
    (uptime, interval): (f64, f64),
    sc: &StallCounters,
) {
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let stall_micros = cur.stall_micros;
    let _ = writeln!(s, "\n** DB Stats **");
    let _ = writeln!(s, "Uptime(secs): {uptime:.1} total, {interval:.1} interval");
    let writes_line = |name: &str, w: u64, k: u64, g: u64, b: u64| {
        format!(
            "{name} writes: {w} writes, {k} keys, {g} commit groups, {:.1} writes per commit group, ingest: {:.2} GB",
            w as f64 / g.max(1) as f64,
            gb(b)
        )
    };
    let _ = writeln!(
        s,
        "{}",
        writes_line("Cumulative", cur.writes, cur.keys, cur.groups, cur.user_bytes)
    );
    let _ = writeln!(s, "Cumulative WAL: {} syncs", cur.syncs);
    let _ = writeln!(
        s,
        "Cumulative stall: {}, {:.1} percent; L0 file count limit: delayed {} ({:.3} s), stopped {} ({:.3} s); \
         pending compaction bytes: delayed {} ({:.3} s), stopped {} ({:.3} s); memtable limit: delayed {} ({:.3} s), \
         stopped {} ({:.3} s)",
        hms(stall_micros),
        stall_micros as f64 / 1e4 / uptime,
        ld(&sc.l0_slowdowns),
        ld(&sc.l0_delay_micros) as f64 / 1e6,
        ld(&sc.l0_stops),
        ld(&sc.l0_stop_micros) as f64 / 1e6,
        ld(&sc.pending_slowdowns),
        ld(&sc.pending_delay_micros) as f64 / 1e6,
        ld(&sc.pending_stops),
        ld(&sc.pending_stop_micros) as f64 / 1e6,
        ld(&sc.memtable_slowdowns),
        ld(&sc.memtable_delay_micros) as f64 / 1e6,
        ld(&sc.memtable_stops),
        ld(&sc.memtable_stop_micros) as f64 / 1e6,
    );
    let _ = writeln!(
        s,
        "{}",
        writes_line(
            "Interval",
            cur.writes - prev.writes,
            cur.keys - prev.keys,
            cur.groups - prev.groups,
            cur.user_bytes - prev.user_bytes
        )
    );
    let _ = writeln!(s, "Interval WAL: {} syncs", cur.syncs - prev.syncs);
    let ist = cur.stall_micros - prev.stall_micros;
    let _ = writeln!(
        s,
        "Interval stall: {}, {:.1} percent",
        hms(ist),
        ist as f64 / 1e4 / interval
    );
}

fn stats_text(db: &Arc<DbInner>, cf: &ColumnFamilyData) -> String {
    let sv = cf.super_version();
    let v = &sv.version;
    let mut guard = db.state.lock();
    let scores = style_scores(v, cf, &guard.being_compacted);
    let Some(m) = guard.cfs.get_mut(&cf.id) else {
        return format!("column family {:?} was dropped", cf.name);
    };
    let stats = &mut m.stats;
    let now = std::time::Instant::now();
    let opened = *stats.opened.get_or_insert(now);
    let mut s = String::new();
    let tot = level_table(&mut s, &cf.name, v, stats, &scores);
    // RocksDB counts them in L0's row only (as compactions into L0, their input as Rnp1).
    let _ = writeln!(s, "Intra-L0 (L0->L0) compactions: {}", stats.intra_l0_compactions);
    let _ = writeln!(
        s,
        "Space amplification estimate: {:.2} ((all table bytes - oldest sorted run's) / oldest sorted run's)",
        space_amp(v)
    );
    if cf.opts.compaction_style == crate::options::compaction::DBCompactionStyle::Fifo {
        let _ = writeln!(
            s,
            "FIFO deletions: {} files, {:.2} MB",
            stats.fifo_deleted_files,
            mb(stats.fifo_deleted_bytes)
        );
    }
    let ws = &db.write_stats;
    let sc = &db.stall.counters;
    let ld = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let stall_micros = sc.total_micros();
    let stalls = ld(&sc.l0_slowdowns)
        + ld(&sc.l0_stops)
        + ld(&sc.pending_slowdowns)
        + ld(&sc.pending_stops)
        + ld(&sc.memtable_stops)
        + ld(&sc.memtable_slowdowns);
    let cur = IntervalMark {
        at: now,
        comp_write: tot.write_bytes - stats.flush_bytes.min(tot.write_bytes),
        comp_read: tot.read_bytes + tot.read_next_bytes,
        comp_micros: tot.micros,
        flush_bytes: stats.flush_bytes,
        writes: ld(&ws.writers),
        keys: ld(&ws.keys),
        groups: ld(&ws.groups),
        user_bytes: ld(&ws.bytes),
        syncs: ld(&ws.syncs),
        stall_micros,
        stalls,
    };
    let prev = stats.last_dump.unwrap_or(IntervalMark {
        at: opened,
        comp_write: 0,
        comp_read: 0,
        comp_micros: 0,
        flush_bytes: 0,
        writes: 0,
        keys: 0,
        groups: 0,
        user_bytes: 0,
        syncs: 0,
        stall_micros: 0,
        stalls: 0,
    });
    stats.last_dump = Some(cur);
    let uptime = now.duration_since(opened).as_secs_f64().max(1e-3);
    let interval = now.duration_since(prev.at).as_secs_f64().max(1e-3);
    let _ = writeln!(s, "\nUptime(secs): {uptime:.1} total, {interval:.1} interval");
    let _ = writeln!(
        s,
        "Flush(GB): cumulative {:.3}, interval {:.3}",
        gb(cur.flush_bytes),
        gb(cur.flush_bytes - prev.flush_bytes)
    );
    let comp_line = |name: &str, w: u64, r: u64, micros: u64, secs: f64| {
        format!(
            "{name} compaction: {:.2} GB write, {:.2} MB/s write, {:.2} GB read, {:.2} MB/s read, {:.1} seconds",
            gb(w),
            mb(w) / secs,
            gb(r),
            mb(r) / secs,
            micros as f64 / 1e6
        )
    };
    let _ = writeln!(
        s,
        "{}",
        comp_line("Cumulative", cur.comp_write, cur.comp_read, cur.comp_micros, uptime)
    );
    let _ = writeln!(
        s,
        "{}",
        comp_line(
            "Interval",
            cur.comp_write - prev.comp_write,
            cur.comp_read - prev.comp_read,
            cur.comp_micros - prev.comp_micros,
            interval
        )
    );
    let _ = writeln!(
        s,
        "Estimated pending compaction bytes: {}; actual delayed write rate: {}",
        db.stall.pending_compaction_bytes(),
        db.stall.actual_delayed_write_rate()
    );
    let _ = writeln!(
        s,
        "Stalls(count): {} level0_slowdown, {} level0_numfiles, {} slowdown for pending_compaction_bytes, \
         {} stop for pending_compaction_bytes, {} memtable_compaction, {} memtable_slowdown, interval {} total count",
        ld(&sc.l0_slowdowns),
        ld(&sc.l0_stops),
        ld(&sc.pending_slowdowns),
        ld(&sc.pending_stops),
        ld(&sc.memtable_stops),
        ld(&sc.memtable_slowdowns),
        cur.stalls - prev.stalls
    );
    db_stats(&mut s, &cur, &prev, (uptime, interval), sc);
    let _ = writeln!(
        s,
        "Flushes: {}, flushed bytes: {:.2} MB",
        stats.flushes,
        mb(stats.flush_bytes)
    );
    let _ = writeln!(
        s,
        "Memtables: active {:.2} MB, immutable {}",
        mb(sv.mem.approximate_memory_usage() as u64),
        sv.imm.len()
    );
    if let Some(e) = &guard.bg_error {
        let _ = writeln!(s, "Background error: {e}");
    }
    if let Some(e) = &guard.soft_error {
        let _ = writeln!(s, "Background soft error (compactions retrying): {e}");
    }
    s
}

/// Start the thread that dumps `rocksdb.stats` into the LOG every `stats_dump_period_sec`
/// (joined with the background threads at shutdown).
pub(crate) fn start_stats_dump(db: &Arc<DbInner>) {
    // The period is read each round: `set_db_options` may change it (0 stops the dumps).
    let period_now = |d: &DbInner| d.opts.info_log.stats_dump_period_sec;
    if period_now(db) == 0 || !db.info_log.enabled(LogLevel::Info) {
        return;
    }
    let mut threads = db.bg_threads.lock();
    if db.shutting_down.load(Ordering::Acquire) || threads.iter().any(|h| h.thread().name() == Some("shale-stats")) {
        return;
    }
    let d = Arc::clone(db);
    let h = std::thread::Builder::new().name("shale-stats".into()).spawn(move || {
        let mut last = Instant::now();
        let mut st = d.state.lock();
        // Shutdown sets the flag and notifies `bg_cv` with the DB mutex held: no lost wakeup.
        while !d.shutting_down.load(Ordering::Acquire) {
            let period = period_now(&d);
            if period == 0 {
                d.bg_cv.wait_for(&mut st, Duration::from_secs(1));
                continue;
            }
            let next = last + Duration::from_secs(period as u64);
            d.bg_cv.wait_until(&mut st, next);
            if d.shutting_down.load(Ordering::Acquire) || Instant::now() < next {
                continue;
            }
            last = next;
            parking_lot::MutexGuard::unlocked(&mut st, || {
                let cfs: Vec<_> = d.cfs.read().by_id.values().cloned().collect();
                for cf in cfs {
                    if let Ok(Some(s)) = super::properties::property_value(&d, &cf, "rocksdb.stats") {
                        d.info_log.info(&format!("------- DUMPING STATS -------\n{s}"));
                    }
                }
            });
        }
    });
    if let Ok(h) = h {
        threads.push(h);
    }
}
