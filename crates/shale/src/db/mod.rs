//! placeholder
#[derive(Clone)]
pub struct Snapshot;
