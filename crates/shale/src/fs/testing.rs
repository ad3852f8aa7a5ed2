//! File systems for tests: [`MemFs`] (in memory, with power-loss simulation: a cut drops data
//! and directory entries that were not synced) and [`FaultFs`] (wraps another file system and
//! injects EIO, ENOSPC, short and torn writes, bit flips on reads). Shale's own crash and fault
//! tests run through them; an embedding program can use them the same way.

pub use super::fault::{FaultFs, FaultKind, IoActivity};
#[doc(hidden)]
pub use super::log_order::kill_inside_wal_appends;
pub use super::mem::MemFs;
