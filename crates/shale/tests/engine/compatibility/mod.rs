//! Shale against real RocksDB: databases, tables and WALs written by RocksDB's tools (`ldb`,
//! `sst_dump`, `db_bench` of RocksDB 7.8) or rocksdict (RocksDB 9.x), and files Shale writes read
//! back by them; the databases in `tests/fixtures/` written by RocksDB 11.8.1. Helpers in
//! `rocksdb_tools`. A missing tool is a loud skip; with `SHALE_REQUIRE_ROCKSDB=1` (set by
//! `.ci/run`) it fails the test.

mod blob_compat;
mod cf_compat;
mod compat;
mod cuckoo_compat;
mod entities_compat;
mod fixtures;
mod formats_compat;
mod ingest_compat;
mod partitioned_compat;
mod plain_compat;
mod prefix_compat;
mod styles_compat;
mod timestamps_compat;
