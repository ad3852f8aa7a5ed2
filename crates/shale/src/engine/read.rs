//! Point lookups: memtable, immutable memtables (newest first), then the version's files.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtOrd;
use std::sync::Arc;

use super::lookup::{mem_lookup, table_lookup, Chain};
use super::{column_family::ColumnFamilyData, column_family::SuperVersion, state::DbInner};
use crate::error::Result;
use crate::key::{make_internal_key, vt, SequenceNumber};
use crate::options::ReadOptions;
use crate::perf_context::{field as perf, PerfTimer};
use crate::statistics::{Histogram, Statistics, StopWatch, Ticker};
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
    get_chain(db, cf, ro, key, Chain::new())
}

/// `get_entity`: the encoded wide-column entity of `key` (a plain value as an entity of one
/// default column).
pub(crate) fn get_entity(
    db: &Arc<DbInner>,
    cf: &ColumnFamilyData,
    ro: &ReadOptions,
    key: &[u8],
) -> Result<Option<Vec<u8>>> {
    get_chain(db, cf, ro, key, Chain::for_entity())
}

fn get_chain<V: ValueOut>(
    db: &Arc<DbInner>,
    cf: &ColumnFamilyData,
    ro: &ReadOptions,
    key: &[u8],
    mut chain: Chain,
) -> Result<Option<V>> {
    let chain = &mut chain;
    // The SuperVersion first, then the sequence (as RocksDB's GetImpl): the SuperVersion pins
    // every version of the data the sequence can see. Taken the other way round, a flush and a
    // compaction in between could drop an older version the sequence needs (no snapshot
    // protects it) in favour of a newer one it cannot see. A write that lands after the
    // SuperVersion in a newer memtable is concurrent with this read, which may miss it.
    let _watch = StopWatch::start(&cf.stats, Histogram::DbGet);
    let snap_timer = PerfTimer::start();
    let sv = cf.super_version();
    let seq = read_seq(db, ro);
    snap_timer.stop(perf::GET_SNAPSHOT_TIME);
    let mut lookup = Vec::with_capacity(key.len() + 8);
    let mut src = Src::None;
    let r: Result<Option<V>> = get_in(cf, &sv, ro, key, seq, &mut lookup, &mut src, chain);
    if let Some(s) = &cf.stats {
        count_get(s, &r, src);
    }
    if let Ok(Some(v)) = &r {
        crate::perf_context::add(perf::GET_READ_BYTES, v.out_len() as u64);
    }
    r
}

/// Where a point lookup was decided (for the statistics' memtable and level hits).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    None,
    Mem,
    Level(usize),
}

/// The tickers of one `get`, as RocksDB's `GetImpl` counts them.
pub(crate) fn count_get<V: ValueOut>(s: &Statistics, r: &Result<Option<V>>, src: Src) {
    let Some(s) = s.local() else { return };
    s.tick(Ticker::NumberKeysRead, 1);
    s.tick(
        if src == Src::Mem {
            Ticker::MemtableHit
        } else {
            Ticker::MemtableMiss
        },
        1,
    );
    if let Ok(Some(v)) = r {
        let n = v.out_len() as u64;
        s.tick(Ticker::BytesRead, n);
        s.record(Histogram::BytesPerRead, n);
        match src {
            Src::Level(0) => s.tick(Ticker::GetHitL0, 1),
            Src::Level(1) => s.tick(Ticker::GetHitL1, 1),
            Src::Level(_) => s.tick(Ticker::GetHitL2AndUp, 1),
            _ => {}
        }
    }
}

/// A point lookup in SuperVersion `sv` at `seq`, with `chain` new (it says whether the
/// entity is wanted).
#[allow(clippy::too_many_arguments)]
pub(super) fn get_in<V: ValueOut>(
    db: &ColumnFamilyData,
    sv: &SuperVersion,
    ro: &ReadOptions,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &mut Vec<u8>,
    src: &mut Src,
    chain: &mut Chain,
) -> Result<Option<V>> {
    lookup.clear();
    crate::key::append_internal_key(lookup, key, seq, vt::FOR_SEEK);
    // Merge operands collected newest first, and the newest covering range tombstone.
    let counting = crate::perf_context::counting();
    let mut timer = PerfTimer::start();
    if counting {
        crate::perf_context::add_unchecked(perf::GET_FROM_MEMTABLE_COUNT, 1);
    }
    if let Some(r) = mem_lookup(db, &sv.mem, chain, key, seq, lookup)? {
        timer.stop(perf::GET_FROM_MEMTABLE_TIME);
        *src = Src::Mem;
        return Ok(r);
    }
    for m in &sv.imm {
        if counting {
            crate::perf_context::add_unchecked(perf::GET_FROM_MEMTABLE_COUNT, 1);
        }
        if let Some(r) = mem_lookup(db, m, chain, key, seq, lookup)? {
            timer.stop(perf::GET_FROM_MEMTABLE_TIME);
            *src = Src::Mem;
            return Ok(r);
        }
    }
    timer.lap(perf::GET_FROM_MEMTABLE_TIME);
    let r = get_in_files(db, sv, ro, key, seq, lookup, src, chain);
    timer.stop(perf::GET_FROM_OUTPUT_FILES_TIME);
    r
}

/// The table files' part of [`get_in`].
#[allow(clippy::too_many_arguments)]
fn get_in_files<V: ValueOut>(
    db: &ColumnFamilyData,
    sv: &SuperVersion,
    ro: &ReadOptions,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &[u8],
    src: &mut Src,
    chain: &mut Chain,
) -> Result<Option<V>> {
    let v = &sv.version;
    let icmp = &v.icmp;
    // L0: every file whose range contains the key, newest first.
    for f in &v.files[0] {
        if icmp.compare_user(key, f.smallest_user()) == Ordering::Less
            || icmp.compare_user(key, f.largest_user()) == Ordering::Greater
        {
            continue;
        }
        if let Some(r) = table_lookup(db, f, chain, key, seq, lookup, ro)? {
            *src = Src::Level(0);
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
                if let Some(r) = table_lookup(db, f, chain, key, seq, lookup, ro)? {
                    *src = Src::Level(level);
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
