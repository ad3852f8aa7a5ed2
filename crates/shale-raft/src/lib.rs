//! Shale as the storage of an [openraft](https://crates.io/crates/openraft) node (openraft 0.9
//! with `storage-v2`): the Raft log, the vote and the committed index, and a key-value state
//! machine whose snapshots are SST files made by `SstFileWriter` and installed with
//! `ingest_external_file`. The layout and the durability rules are in `docs/raft.md`.

mod log_store;
mod server;
mod snapshot;
mod snapshot_data;
mod state_machine;
mod store;
mod types;

pub use log_store::LogStore;
pub use server::{
    check_config as check_serve_config, post_blocking, run_write_load, serve, HttpClient, LoadReport, ServeConfig,
};
pub use snapshot::{decode_snapshot, SnapshotFile, SnapshotHeader};
pub use snapshot_data::SnapshotData;
pub use state_machine::{ShaleSnapshotBuilder, StateMachineStore};
pub use store::{open_store, open_store_with};
pub use types::{NodeId, Request, Response, TypeConfig};
