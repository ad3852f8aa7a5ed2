//! DB-wide settings of RocksDB's that the `rocksdb` crate sets and Shale takes under the same
//! names (their setters: `knob_setters.rs`): some change what Shale does (`use_fsync`, `write_dbid_to_manifest`, `db_log_dir`),
//! the others are tuning hints of RocksDB's own machinery that Shale records (the OPTIONS file
//! and the LOG show them, as RocksDB's do) and whose results it already gives.
//!
//! | setting | in Shale |
//! |---|---|
//! | `use_fsync` | every file the DB writes is made durable with `fsync` instead of `fdatasync` |
//! | `write_dbid_to_manifest` (default true) | a new MANIFEST starts with the DB id record |
//! | `db_log_dir` | the LOG files go there, named after the DB's path |
//! | `track_and_verify_wals_in_manifest` | true: opening fails with NotSupported (Shale does not record WALs in the MANIFEST) |
//! | `experimental_mempurge_threshold` | recorded: Shale always flushes a full memtable (mempurge is RocksDB's experimental in-memory garbage collection instead of some flushes; the data read back is the same) |
//! | `avoid_unnecessary_blocking_io` | recorded: Shale deletes obsolete files from background jobs and at close, never from a reader's thread |
//! | `wal_bytes_per_sync` | recorded: RocksDB's background range syncs of the WAL change no guarantee (a write is durable when synced) |
//! | `writable_file_max_buffer_size` | recorded: Shale's files buffer appends their own way |
//! | `use_adaptive_mutex`, `enable_write_thread_adaptive_yield` | recorded: spin-before-sleep hints for RocksDB's mutexes; Shale's locks spin on their own |
//! | `dump_malloc_stats`, `stats_persist_period_sec` | recorded: Shale keeps no statistics history and prints no allocator statistics |

use std::path::Path;

/// The settings above (their defaults are RocksDB's).
#[derive(Debug, Clone)]
pub(crate) struct DbKnobs {
    pub use_fsync: bool,
    pub write_dbid_to_manifest: bool,
    pub track_and_verify_wals_in_manifest: bool,
    pub experimental_mempurge_threshold: f64,
    pub avoid_unnecessary_blocking_io: bool,
    pub wal_bytes_per_sync: u64,
    pub writable_file_max_buffer_size: u64,
    pub use_adaptive_mutex: bool,
    pub enable_write_thread_adaptive_yield: bool,
    pub dump_malloc_stats: bool,
    pub stats_persist_period_sec: u32,
}

impl Default for DbKnobs {
    fn default() -> Self {
        DbKnobs {
            use_fsync: false,
            write_dbid_to_manifest: true,
            track_and_verify_wals_in_manifest: false,
            experimental_mempurge_threshold: 0.0,
            avoid_unnecessary_blocking_io: false,
            wal_bytes_per_sync: 0,
            writable_file_max_buffer_size: 1024 * 1024,
            use_adaptive_mutex: false,
            enable_write_thread_adaptive_yield: true,
            dump_malloc_stats: false,
            stats_persist_period_sec: 600,
        }
    }
}

impl DbKnobs {
    /// The lines of these settings in the LOG only: `experimental_mempurge_threshold` is a DB
    /// option in RocksDB 7 and a family option from RocksDB 8 on, so an OPTIONS file naming it
    /// in either section would be refused by one of them.
    pub(crate) fn log_only_lines(&self) -> Vec<(&'static str, String)> {
        vec![(
            "experimental_mempurge_threshold",
            format!("{:.6}", self.experimental_mempurge_threshold),
        )]
    }

    /// The `[DBOptions]` lines of these settings, RocksDB's names (`db_log_dir` when set).
    pub(crate) fn lines(&self, db_log_dir: Option<&Path>) -> Vec<(&'static str, String)> {
        [
            ("use_fsync", self.use_fsync.to_string()),
            ("write_dbid_to_manifest", self.write_dbid_to_manifest.to_string()),
            (
                "track_and_verify_wals_in_manifest",
                self.track_and_verify_wals_in_manifest.to_string(),
            ),
            (
                "avoid_unnecessary_blocking_io",
                self.avoid_unnecessary_blocking_io.to_string(),
            ),
            ("wal_bytes_per_sync", self.wal_bytes_per_sync.to_string()),
            (
                "writable_file_max_buffer_size",
                self.writable_file_max_buffer_size.to_string(),
            ),
            ("use_adaptive_mutex", self.use_adaptive_mutex.to_string()),
            (
                "enable_write_thread_adaptive_yield",
                self.enable_write_thread_adaptive_yield.to_string(),
            ),
            ("dump_malloc_stats", self.dump_malloc_stats.to_string()),
            ("stats_persist_period_sec", self.stats_persist_period_sec.to_string()),
        ]
        .into_iter()
        .chain(db_log_dir.map(|d| ("db_log_dir", d.display().to_string())))
        .collect()
    }
}
