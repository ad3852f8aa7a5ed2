//! What a secondary instance remembers between catch-ups: where it stopped in the primary's
//! MANIFEST (`lsm/manifest_tail.rs`) and in each WAL, and the memtables the WALs filled
//! (`secondary_wal.rs` replays them, `secondary.rs` runs the catch-up).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::lsm::manifest_tail::ManifestTail;
use crate::memtable::MemTable;

/// The tails of one secondary instance; a catch-up holds them locked.
#[derive(Default)]
pub(crate) struct Tails {
    pub(crate) manifest: ManifestTail,
    pub(crate) wal: WalTail,
}

/// A memtable of one family holding records of one WAL.
pub(crate) struct TailMem {
    pub(crate) wal: u64,
    pub(crate) mem: Arc<MemTable>,
    /// Readers may hold it (a catch-up published it).
    pub(crate) published: bool,
}

/// What a secondary has replayed of the primary's WALs (see `secondary_wal.rs`, which
/// replays them).
#[derive(Default)]
pub(crate) struct WalTail {
    /// Each WAL read: the offset where its next unread record starts.
    pub(crate) offsets: BTreeMap<u64, u64>,
    /// Each family's memtables, oldest first.
    pub(crate) mems: BTreeMap<u32, Vec<TailMem>>,
}
