//! Point lookups: memtable, immutable memtables (newest first), then the version's files.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

use super::range_del::{mem_lookup, table_lookup, Chain};
use super::{ColumnFamilyData, DbInner, SuperVersion};
use crate::error::Result;
use crate::key::{make_internal_key, vt, SequenceNumber};
use crate::options::ReadOptions;
use crate::table::pinnable::ValueOut;

pub(crate) fn read_seq(db: &DbInner, ro: &ReadOptions) -> SequenceNumber {
    match &ro.snapshot {
        Some(s) => s.sequence_number(),
        None => db.last_seq.load(AtOrd::Acquire),
    }
}

/// A point lookup; `V` is `Vec<u8>` (a copy, `DB::get`) or `DBPinnableSlice` (the value pinned
/// where it was found, `DB::get_pinned`).
pub(crate) fn get<V: ValueOut>(
    db: &Arc<DbInner>,
    cf: &ColumnFamilyData,
    ro: &ReadOptions,
    key: &[u8],
) -> Result<Option<V>> {
    // The SuperVersion first, then the sequence (as RocksDB's GetImpl): the SuperVersion pins
    // every version of the data the sequence can see. Taken the other way round, a flush and a
    // compaction in between could drop an older version the sequence needs (no snapshot
    // protects it) in favour of a newer one it cannot see. A write that lands after the
    // SuperVersion in a newer memtable is concurrent with this read, which may miss it.
    let sv = cf.super_version();
    let seq = read_seq(db, ro);
    let mut lookup = Vec::with_capacity(key.len() + 8);
    get_in(cf, &sv, ro, key, seq, &mut lookup)
}

pub(super) fn get_in<V: ValueOut>(
    db: &ColumnFamilyData,
    sv: &SuperVersion,
    ro: &ReadOptions,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &mut Vec<u8>,
) -> Result<Option<V>> {
    lookup.clear();
    crate::key::append_internal_key(lookup, key, seq, vt::FOR_SEEK);
    // Merge operands collected newest first, and the newest covering range tombstone.
    let mut chain = Chain::new();
    if let Some(r) = mem_lookup(db, &sv.mem, &mut chain, key, seq, lookup)? {
        return Ok(r);
    }
    for m in &sv.imm {
        if let Some(r) = mem_lookup(db, m, &mut chain, key, seq, lookup)? {
            return Ok(r);
        }
    }
    let v = &sv.version;
    let icmp = &v.icmp;
    // L0: every file whose range contains the key, newest first.
    for f in &v.files[0] {
        if icmp.compare_user(key, f.smallest_user()) == Ordering::Less
            || icmp.compare_user(key, f.largest_user()) == Ordering::Greater
        {
            continue;
        }
        if let Some(r) = table_lookup(db, f, &mut chain, key, seq, lookup, ro)? {
            return Ok(r);
        }
    }
    for level in 1..v.num_levels() {
        let files = &v.files[level];
        if files.is_empty() {
            continue;
        }
        let i = v.find_file(level, lookup);
        if let Some(f) = files.get(i) {
            if icmp.compare_user(key, f.smallest_user()) != Ordering::Less {
                if let Some(r) = table_lookup(db, f, &mut chain, key, seq, lookup, ro)? {
                    return Ok(r);
                }
            }
        }
    }
    chain.finish(db, key, None)
}

#[allow(dead_code)]
pub(crate) fn lookup_key(key: &[u8], seq: SequenceNumber) -> Vec<u8> {
    make_internal_key(key, seq, vt::FOR_SEEK)
}
