//! Snapshots: a sequence number pinned for reads (below the options and the DB, which both name it).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use crate::key::SequenceNumber;

/// A consistent point-in-time view for reads. Cheap to clone; released when the last clone drops.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

struct SnapshotInner {
    seq: SequenceNumber,
    list: Weak<Mutex<BTreeMap<SequenceNumber, usize>>>,
    /// The database, for reads through the snapshot (`snapshot.get`, `snapshot.iterator`).
    /// Type-erased: this layer is below the DB, which downcasts it back.
    db: Weak<dyn std::any::Any + Send + Sync>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        if let Some(list) = self.list.upgrade() {
            let mut l = list.lock();
            if let Some(c) = l.get_mut(&self.seq) {
                *c -= 1;
                if *c == 0 {
                    l.remove(&self.seq);
                }
            }
        }
    }
}

impl Snapshot {
    /// A snapshot at `seq`, counted in `list` (the DB's live snapshots) until the last clone drops.
    pub(crate) fn new(
        seq: SequenceNumber,
        list: Weak<Mutex<BTreeMap<SequenceNumber, usize>>>,
        db: Weak<dyn std::any::Any + Send + Sync>,
    ) -> Snapshot {
        Snapshot {
            inner: Arc::new(SnapshotInner { seq, list, db }),
        }
    }

    /// The database this snapshot was taken of, while it is open.
    pub(crate) fn owner(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.inner.db.upgrade()
    }

    /// The sequence number this snapshot reads at.
    pub fn sequence_number(&self) -> u64 {
        self.inner.seq
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({})", self.inner.seq)
    }
}
