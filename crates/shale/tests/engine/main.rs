//! Engine behaviour, in one test binary (each former `tests/<name>.rs` is a module here: test
//! names are `<module>::<test>`). The tests that check Shale against real RocksDB (its tools,
//! rocksdict, files it wrote) are the modules of `compatibility/`; they share the helpers here
//! with the engine tests, so they are part of this binary. Run a part with e.g.
//! `cargo test -p shale --test engine compatibility::` or `... --test engine two_phase::`.

mod common;
mod rocksdb_tools;

mod compatibility;

mod api;
mod bad_input;
mod batch_iterate;
mod blob_files;
mod cache_priority;
mod checkpoint;
mod column_families;
mod compact_options;
mod compaction;
mod compaction_filter;
mod compaction_styles;
mod compaction_triggers;
mod concurrency;
mod corruption_sweep;
mod cuckoo_multi_get;
mod db_access;
mod db_knobs;
mod env_pools;
mod faults;
mod info_log;
mod ingest;
mod ingest_durability;
mod iterate_range;
mod iterator_refresh;
mod memory;
mod memory_usage;
mod panic_safety;
mod pinned;
mod prefix_seek;
mod property_names;
mod rocksdb_api;
mod secondary;
mod secondary_tail;
mod set_options;
mod stalls;
mod statistics;
mod stress_regressions;
mod table_formats;
mod transactions;
mod two_phase;
mod txn_modes;
mod user_timestamps;
mod wal_torn_copy;
mod wal_updates;
mod wal_zero_tail;
mod wide_columns;
mod write_modes;
