//! The counters behind `rocksdb.stats`: per-level flush and compaction work, and the write
//! path's groups, keys and syncs. Kept by the engine; read by the properties (`props.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Per-level compaction counters.
#[derive(Default, Clone)]
pub(crate) struct LevelStats {
    /// Bytes read from the input level (RocksDB's Rn) and from this, the output level (Rnp1).
    pub read_bytes: u64,
    pub read_next_bytes: u64,
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
    /// L0 -> L0 compactions finished (also counted in L0's row of the per-level table).
    pub intra_l0_compactions: u64,
    /// Files and bytes FIFO compaction deleted (TTL or size limit).
    pub fifo_deleted_files: u64,
    pub fifo_deleted_bytes: u64,
    /// Values at the previous `rocksdb.stats` dump, for the "Interval" lines.
    pub(crate) last_dump: Option<IntervalMark>,
    pub(crate) opened: Option<std::time::Instant>,
}

#[derive(Clone, Copy)]
pub(crate) struct IntervalMark {
    pub(crate) at: std::time::Instant,
    pub(crate) comp_write: u64,
    pub(crate) comp_read: u64,
    pub(crate) comp_micros: u64,
    pub(crate) flush_bytes: u64,
    pub(crate) writes: u64,
    pub(crate) keys: u64,
    pub(crate) groups: u64,
    pub(crate) user_bytes: u64,
    pub(crate) syncs: u64,
    pub(crate) stall_micros: u64,
    pub(crate) stalls: u64,
}

impl CompactionStats {
    pub(crate) fn new() -> CompactionStats {
        CompactionStats {
            opened: Some(std::time::Instant::now()),
            ..CompactionStats::default()
        }
    }
    pub(crate) fn level(&mut self, l: usize) -> &mut LevelStats {
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
    pub(crate) fn record_compaction(&mut self, to: usize, rn: u64, rnp1: u64, wr: u64, files: usize, d: Duration) {
        let s = self.level(to);
        s.read_bytes += rn;
        s.read_next_bytes += rnp1;
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
    /// Groups whose followers inserted their own batches in parallel with the leader.
    pub parallel_groups: AtomicU64,
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
