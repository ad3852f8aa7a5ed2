//! Properties (`rocksdb.*`) and the statistics behind `rocksdb.stats`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::compaction::{level_scores, picker_config};
use super::DbInner;
use crate::error::Result;

/// Per-level compaction counters.
#[derive(Default, Clone)]
pub(crate) struct LevelStats {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub moved_bytes: u64,
    pub compactions: u64,
    pub files_out: u64,
    pub micros: u64,
}

#[derive(Default)]
pub(crate) struct CompactionStats {
    pub levels: Vec<LevelStats>,
    pub flush_bytes: u64,
    pub flushes: u64,
}

impl CompactionStats {
    fn level(&mut self, l: usize) -> &mut LevelStats {
        if self.levels.len() <= l {
            self.levels.resize(l + 1, LevelStats::default());
        }
        &mut self.levels[l]
    }
    pub(crate) fn record_flush(&mut self, bytes: u64, files: usize, d: Duration) {
        self.flush_bytes += bytes;
        self.flushes += 1;
        let s = self.level(0);
        s.write_bytes += bytes;
        s.files_out += files as u64;
        s.micros += d.as_micros() as u64;
        s.compactions += 1;
    }
    pub(crate) fn record_move(&mut self, to: usize, bytes: u64) {
        self.level(to).moved_bytes += bytes;
    }
    pub(crate) fn record_compaction(&mut self, _from: usize, to: usize, rd: u64, wr: u64, files: usize, d: Duration) {
        let s = self.level(to);
        s.read_bytes += rd;
        s.write_bytes += wr;
        s.files_out += files as u64;
        s.compactions += 1;
        s.micros += d.as_micros() as u64;
    }
}

/// Write-path counters.
#[derive(Default)]
pub(crate) struct WriteStats {
    pub groups: AtomicU64,
    pub writers: AtomicU64,
    pub keys: AtomicU64,
    pub bytes: AtomicU64,
    pub syncs: AtomicU64,
    pub slowdowns: AtomicU64,
    pub stops: AtomicU64,
    pub stall_micros: AtomicU64,
}

impl WriteStats {
    pub(crate) fn record(&self, writers: u64, keys: u64, bytes: u64, sync: bool) {
        self.groups.fetch_add(1, Ordering::Relaxed);
        self.writers.fetch_add(writers, Ordering::Relaxed);
        self.keys.fetch_add(keys, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if sync {
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn mb(b: u64) -> f64 {
    b as f64 / 1048576.0
}

pub(crate) fn property_value(db: &Arc<DbInner>, name: &str) -> Result<Option<String>> {
    let sv = db.super_version();
    let v = &sv.version;
    if let Some(n) = name.strip_prefix("rocksdb.num-files-at-level") {
        return Ok(n.parse::<usize>().ok().filter(|&l| l < v.num_levels()).map(|l| v.num_files(l).to_string()));
    }
    let mem_bytes = |m: &crate::memtable::MemTable| m.approximate_memory_usage() as u64;
    let r = match name {
        "rocksdb.estimate-num-keys" => {
            let mut n: i64 = 0;
            for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
                n += m.num_entries() as i64 - 2 * m.num_deletes() as i64;
            }
            for (_, f) in v.all_files() {
                if let Ok(t) = db.table_cache.get(f) {
                    let p = t.properties();
                    n += p.num_entries as i64 - 2 * p.num_deletions as i64;
                }
            }
            n.max(0).to_string()
        }
        "rocksdb.num-immutable-mem-table" => sv.imm.len().to_string(),
        "rocksdb.cur-size-active-mem-table" => mem_bytes(&sv.mem).to_string(),
        "rocksdb.cur-size-all-mem-tables" | "rocksdb.size-all-mem-tables" => {
            (mem_bytes(&sv.mem) + sv.imm.iter().map(|m| mem_bytes(m)).sum::<u64>()).to_string()
        }
        "rocksdb.num-entries-active-mem-table" => sv.mem.num_entries().to_string(),
        "rocksdb.total-sst-files-size" | "rocksdb.live-sst-files-size" => {
            v.all_files().map(|(_, f)| f.meta.file_size).sum::<u64>().to_string()
        }
        "rocksdb.block-cache-usage" => db.block_cache.as_ref().map(|c| c.usage()).unwrap_or(0).to_string(),
        "rocksdb.block-cache-capacity" => db.block_cache.as_ref().map(|c| c.capacity()).unwrap_or(0).to_string(),
        "rocksdb.estimate-table-readers-mem" => {
            let mut n = 0u64;
            for (_, f) in v.all_files() {
                if let Some(t) = f.table.get() {
                    n += t.approximate_memory_usage() as u64;
                }
            }
            n.to_string()
        }
        "rocksdb.num-snapshots" => db.snapshots.lock().values().sum::<usize>().to_string(),
        "rocksdb.background-errors" => {
            let st = db.state.lock();
            (st.bg_error.is_some() as u32).to_string()
        }
        "rocksdb.is-write-stopped" => {
            let l0 = v.num_files(0);
            ((l0 >= db.opts.level0_stop_writes_trigger || sv.imm.len() + 1 >= db.opts.max_write_buffer_number) as u32)
                .to_string()
        }
        "rocksdb.num-running-compactions" => db.state.lock().compactions_running.to_string(),
        "rocksdb.num-running-flushes" => (db.state.lock().flush_running as u32).to_string(),
        "rocksdb.levelstats" => {
            let mut s = String::from("Level Files Size(MB)\n--------------------\n");
            for l in 0..v.num_levels() {
                let _ = writeln!(s, "{l:>5} {:>5} {:>8.0}", v.num_files(l), mb(v.level_bytes(l)));
            }
            s
        }
        "rocksdb.stats" => stats_text(db),
        _ => return Ok(None),
    };
    Ok(Some(r))
}

fn stats_text(db: &Arc<DbInner>) -> String {
    let sv = db.super_version();
    let v = &sv.version;
    let st = db.state.lock();
    let scores = level_scores(v, &picker_config(db));
    let mut s = String::new();
    let _ = writeln!(s, "\n** Compaction Stats [default] **");
    let _ = writeln!(
        s,
        "Level    Files   Size(MB) Score Read(GB)  Write(GB) Moved(GB) W-Amp Comp(sec) Comp(cnt)"
    );
    let _ = writeln!(s, "{}", "-".repeat(88));
    let gb = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut tot = LevelStats::default();
    let mut tot_files = 0;
    let mut tot_bytes = 0;
    for l in 0..v.num_levels() {
        let ls = st.stats.levels.get(l).cloned().unwrap_or_default();
        let files = v.num_files(l);
        let bytes = v.level_bytes(l);
        if files == 0 && ls.compactions == 0 {
            continue;
        }
        let wamp = if l == 0 || ls.read_bytes == 0 { 0.0 } else { ls.write_bytes as f64 / ls.read_bytes as f64 };
        let _ = writeln!(
            s,
            "  L{l:<4} {files:>6} {:>10.2} {:>5.2} {:>8.3} {:>10.3} {:>9.3} {:>5.1} {:>9.3} {:>9}",
            mb(bytes),
            scores.get(l).copied().unwrap_or(0.0),
            gb(ls.read_bytes),
            gb(ls.write_bytes),
            gb(ls.moved_bytes),
            wamp,
            ls.micros as f64 / 1e6,
            ls.compactions
        );
        tot.read_bytes += ls.read_bytes;
        tot.write_bytes += ls.write_bytes;
        tot.moved_bytes += ls.moved_bytes;
        tot.micros += ls.micros;
        tot.compactions += ls.compactions;
        tot_files += files;
        tot_bytes += bytes;
    }
    let user_bytes = db.write_stats.bytes.load(Ordering::Relaxed);
    let wamp = if user_bytes == 0 { 0.0 } else { tot.write_bytes as f64 / user_bytes as f64 };
    let _ = writeln!(
        s,
        " Sum   {tot_files:>6} {:>10.2} {:>5} {:>8.3} {:>10.3} {:>9.3} {:>5.1} {:>9.3} {:>9}",
        mb(tot_bytes),
        "",
        gb(tot.read_bytes),
        gb(tot.write_bytes),
        gb(tot.moved_bytes),
        wamp,
        tot.micros as f64 / 1e6,
        tot.compactions
    );
    let ws = &db.write_stats;
    let _ = writeln!(s, "\n** DB Stats **");
    let _ = writeln!(
        s,
        "Cumulative writes: {} writes, {} keys, {} commit groups, {:.1} writes per commit group, ingest: {:.2} GB",
        ws.writers.load(Ordering::Relaxed),
        ws.keys.load(Ordering::Relaxed),
        ws.groups.load(Ordering::Relaxed),
        ws.writers.load(Ordering::Relaxed) as f64 / ws.groups.load(Ordering::Relaxed).max(1) as f64,
        gb(user_bytes)
    );
    let _ = writeln!(s, "Cumulative WAL: {} syncs", ws.syncs.load(Ordering::Relaxed));
    let _ = writeln!(
        s,
        "Cumulative stall: {:.3} seconds; slowdowns: {}, stops: {}",
        ws.stall_micros.load(Ordering::Relaxed) as f64 / 1e6,
        ws.slowdowns.load(Ordering::Relaxed),
        ws.stops.load(Ordering::Relaxed)
    );
    let _ = writeln!(s, "Flushes: {}, flushed bytes: {:.2} MB", st.stats.flushes, mb(st.stats.flush_bytes));
    let _ = writeln!(
        s,
        "Memtables: active {:.2} MB, immutable {}",
        mb(sv.mem.approximate_memory_usage() as u64),
        sv.imm.len()
    );
    if let Some(e) = &st.bg_error {
        let _ = writeln!(s, "Background error: {e}");
    }
    s
}
