//! Point lookups: memtable, immutable memtables (newest first), then the version's files.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::error::{Error, Result};
use crate::key::{make_internal_key, parse_internal_key, vt, SequenceNumber};
use crate::memtable::MemGet;
use crate::options::ReadOptions;

pub(crate) fn read_seq(db: &DbInner, ro: &ReadOptions) -> SequenceNumber {
    match &ro.snapshot {
        Some(s) => s.sequence_number(),
        None => db.last_seq.load(AtOrd::Acquire),
    }
}

pub(crate) fn get(db: &Arc<DbInner>, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
    let seq = read_seq(db, ro);
    let sv = db.super_version();
    let mut lookup = Vec::with_capacity(key.len() + 8);
    get_in(db, &sv, ro, key, seq, &mut lookup)
}

fn mem_result(r: MemGet) -> Result<Option<Vec<u8>>> {
    match r {
        MemGet::Value(v) => Ok(Some(v)),
        MemGet::Deleted => Ok(None),
        MemGet::Merge { .. } => Err(Error::NotSupported("merge operands need a merge operator".into())),
    }
}

fn get_in(
    db: &DbInner,
    sv: &SuperVersion,
    ro: &ReadOptions,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &mut Vec<u8>,
) -> Result<Option<Vec<u8>>> {
    lookup.clear();
    crate::key::append_internal_key(lookup, key, seq, vt::FOR_SEEK);
    if let Some(r) = sv.mem.get(lookup) {
        return mem_result(r);
    }
    for m in &sv.imm {
        if let Some(r) = m.get(lookup) {
            return mem_result(r);
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
        if let Some(r) = table_get(db, f, lookup, ro)? {
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
                if let Some(r) = table_get(db, f, lookup, ro)? {
                    return Ok(r);
                }
            }
        }
    }
    Ok(None)
}

/// `Some(result)` when the table decides the lookup, `None` to continue to older data.
fn table_get(
    db: &DbInner,
    f: &super::version::FileMeta,
    lookup: &[u8],
    ro: &ReadOptions,
) -> Result<Option<Option<Vec<u8>>>> {
    let t = db.table_cache.get(f)?;
    let r = t.get_with(lookup, ro.verify_checksums, ro.fill_cache, |ikey, value| -> Result<Option<Vec<u8>>> {
        let pk = parse_internal_key(ikey)?;
        match pk.vtype {
            vt::VALUE => Ok(Some(value.to_vec())),
            vt::DELETION | vt::SINGLE_DELETION => Ok(None),
            vt::MERGE => Err(Error::NotSupported("merge operands need a merge operator".into())),
            t => Err(Error::NotSupported(format!("value type {t:#x} is not supported"))),
        }
    })?;
    r.transpose()
}

pub(crate) fn multi_get<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &Arc<DbInner>,
    ro: &ReadOptions,
    keys: I,
) -> Vec<Result<Option<Vec<u8>>>> {
    // One sequence and one SuperVersion for all keys: a consistent view.
    let seq = read_seq(db, ro);
    let sv = db.super_version();
    let mut lookup = Vec::new();
    keys.into_iter().map(|k| get_in(db, &sv, ro, k.as_ref(), seq, &mut lookup)).collect()
}

#[allow(dead_code)]
pub(crate) fn lookup_key(key: &[u8], seq: SequenceNumber) -> Vec<u8> {
    make_internal_key(key, seq, vt::FOR_SEEK)
}
