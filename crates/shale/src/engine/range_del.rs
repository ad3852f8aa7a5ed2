//! Range tombstones in the engine: adding one to a memtable, the tombstone lists of memtables
//! and table files.

use std::cmp::Ordering;
use std::sync::Arc;

use super::column_family::ColumnFamilyData;
use crate::error::Result;
use crate::key::{parse_internal_key, SequenceNumber};
use crate::lsm::version::FileMeta;
use crate::memtable::{AddCounters, MemTable};
use crate::range_del::{FragmentedRangeTombstoneList, RangeTombstone};

/// Insert a range tombstone into a memtable's range-deletion list at `seq`.
pub(crate) fn mem_add_range_tombstone(mem: &MemTable, seq: SequenceNumber, begin: &[u8], end: &[u8]) {
    if mem.icmp().compare_user(begin, end) == Ordering::Less {
        mem.range_dels.add(begin, end, seq);
    }
    let size = (begin.len() + 8 + end.len() + 2) as u64;
    mem.apply_counters(&AddCounters {
        entries: 1,
        deletes: 1,
        data_size: size,
        min_seq: seq,
        max_seq: seq,
    });
}

/// The fragmented tombstones of a table file (loaded once, cached in the `FileMeta`).
pub(crate) fn file_tombstones(
    db: &ColumnFamilyData,
    f: &FileMeta,
) -> Result<Option<Arc<FragmentedRangeTombstoneList>>> {
    if let Some(l) = f.range_dels().get() {
        return Ok(l.clone());
    }
    let t = db.table_cache.get(f)?;
    let list = if !t.may_have_range_tombstones() {
        None
    } else {
        let raw = t.range_tombstones()?;
        let ts: Vec<RangeTombstone> = raw
            .into_iter()
            .map(|(k, end)| {
                let pk = parse_internal_key(&k)?;
                Ok(RangeTombstone {
                    start: pk.user_key.to_vec(),
                    end,
                    seq: pk.seq,
                })
            })
            .collect::<Result<_>>()?;
        let l = FragmentedRangeTombstoneList::new(&db.icmp, ts);
        if l.is_empty() {
            None
        } else {
            Some(Arc::new(l))
        }
    };
    let _ = f.range_dels().set(list.clone());
    Ok(list)
}

/// Every tombstone list a reader at any sequence may need (memtables and files that have any).
pub(crate) fn all_tombstone_lists(
    db: &ColumnFamilyData,
    sv: &super::column_family::SuperVersion,
) -> Result<Vec<Arc<FragmentedRangeTombstoneList>>> {
    let mut out = Vec::new();
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if let Some(l) = m.range_dels.fragmented(&db.icmp) {
            if !l.is_empty() {
                out.push(l);
            }
        }
    }
    for (_, f) in sv.version.all_files() {
        if let Some(l) = file_tombstones(db, f)? {
            out.push(l);
        }
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------
// Compaction
