//! The setters and getters of RocksDB's DB-wide tuning settings (`db_knobs.rs` says what each
//! does in Shale), with the `rocksdb` crate's names and argument types.

use std::path::Path;

use super::Options;

impl Options {
    /// Make every file the DB writes durable with `fsync` (data and all metadata) instead of
    /// `fdatasync` (data and the metadata needed to read it back) — RocksDB's `use_fsync`,
    /// for file systems where `fdatasync` is not enough. Default false.
    pub fn set_use_fsync(&mut self, useit: bool) {
        self.knobs.use_fsync = useit;
    }
    /// Whether [`set_use_fsync`](Self::set_use_fsync) is on.
    pub fn get_use_fsync(&self) -> bool {
        self.knobs.use_fsync
    }
    /// Put the LOG files in `path` instead of the DB's directory, named after the DB's absolute
    /// path (`<path with '/' made '_'>_LOG`), as RocksDB's `db_log_dir`. An empty path: the
    /// DB's directory.
    pub fn set_db_log_dir<P: AsRef<Path>>(&mut self, path: P) {
        let p = path.as_ref();
        self.info_log.db_log_dir = (!p.as_os_str().is_empty()).then(|| p.to_path_buf());
    }
    /// Whether a new MANIFEST starts with the DB id (RocksDB's `write_dbid_to_manifest`,
    /// default true); the DB id is in the `IDENTITY` file either way.
    pub fn set_write_dbid_to_manifest(&mut self, val: bool) {
        self.knobs.write_dbid_to_manifest = val;
    }
    /// See [`set_write_dbid_to_manifest`](Self::set_write_dbid_to_manifest).
    pub fn get_write_dbid_to_manifest(&self) -> bool {
        self.knobs.write_dbid_to_manifest
    }
    /// RocksDB's `track_and_verify_wals_in_manifest` (default false). Shale does not record
    /// WALs in the MANIFEST: opening with true fails with NotSupported naming the option.
    pub fn set_track_and_verify_wals_in_manifest(&mut self, val: bool) {
        self.knobs.track_and_verify_wals_in_manifest = val;
    }
    /// See [`set_track_and_verify_wals_in_manifest`](Self::set_track_and_verify_wals_in_manifest).
    pub fn get_track_and_verify_wals_in_manifest(&self) -> bool {
        self.knobs.track_and_verify_wals_in_manifest
    }
    /// RocksDB's `experimental_mempurge_threshold`, recorded (OPTIONS file, LOG); Shale always
    /// flushes (module description of `options::db_knobs`).
    pub fn set_experimental_mempurge_threshold(&mut self, threshold: f64) {
        self.knobs.experimental_mempurge_threshold = threshold;
    }
    /// RocksDB's `avoid_unnecessary_blocking_io`, recorded: Shale never deletes files from a
    /// reader's thread.
    pub fn set_avoid_unnecessary_blocking_io(&mut self, val: bool) {
        self.knobs.avoid_unnecessary_blocking_io = val;
    }
    /// RocksDB's `wal_bytes_per_sync` (background range syncs of the WAL), recorded; a write is
    /// durable once synced, either way.
    pub fn set_wal_bytes_per_sync(&mut self, nbytes: u64) {
        self.knobs.wal_bytes_per_sync = nbytes;
    }
    /// RocksDB's `writable_file_max_buffer_size`, recorded.
    pub fn set_writable_file_max_buffer_size(&mut self, nbytes: u64) {
        self.knobs.writable_file_max_buffer_size = nbytes;
    }
    /// RocksDB's `use_adaptive_mutex` (spin before sleeping), recorded.
    pub fn set_use_adaptive_mutex(&mut self, enabled: bool) {
        self.knobs.use_adaptive_mutex = enabled;
    }
    /// RocksDB's `enable_write_thread_adaptive_yield`, recorded.
    pub fn set_enable_write_thread_adaptive_yield(&mut self, enabled: bool) {
        self.knobs.enable_write_thread_adaptive_yield = enabled;
    }
    /// RocksDB's `dump_malloc_stats`, recorded.
    pub fn set_dump_malloc_stats(&mut self, enabled: bool) {
        self.knobs.dump_malloc_stats = enabled;
    }
    /// RocksDB's `stats_persist_period_sec`, recorded.
    pub fn set_stats_persist_period_sec(&mut self, period: u32) {
        self.knobs.stats_persist_period_sec = period;
    }
}
