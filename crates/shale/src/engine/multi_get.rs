//! `DB::multi_get`: the keys of a batch walk the sources together, newest first, so that the
//! keys reaching the same cuckoo file are looked up in one batched call (all of them hashed
//! and their first cuckoo blocks prefetched before any is probed).
//!
//! Every key still sees exactly what a single `get` sees: one sequence number and one
//! SuperVersion for the whole batch, memtables first, then L0 files newest first, then one
//! file per deeper level, with range tombstones and merge operands collected in the key's
//! own [`Chain`]. Only the interleaving of different keys' lookups changes. Files of other
//! formats are looked up key by key through the same [`table_lookup`] as `get`; for a plain
//! file the batch's bloom lines, index buckets and records are prefetched first.

use std::cmp::Ordering;
use std::sync::Arc;

use super::lookup::{mem_lookup, table_lookup, Chain};
use super::range_del::file_tombstones;
use super::read::{get_in, read_seq, Src};
use super::{column_family::ColumnFamilyData, state::DbInner};
use crate::error::Result;
use crate::key::{parse_internal_key, vt};
use crate::lsm::version::FileMeta;
use crate::options::ReadOptions;
use crate::statistics::{Histogram, StopWatch, Ticker};
use crate::table::any::AnyTable;
use crate::table::cuckoo::CuckooTable;
use crate::table::pinnable::{Home, Val, ValueOut};

/// One key of the batch while it is undecided.
struct KeyState<'k> {
    key: &'k [u8],
    /// The key's internal lookup key at the read's sequence number.
    lookup: Vec<u8>,
    chain: Chain,
}

/// Results so far: `None` while a key is undecided.
type Outcomes<V> = Vec<Option<Result<Option<V>>>>;

/// The values of `keys`, copied (`V = Vec<u8>`) or pinned (`V = DBPinnableSlice`).
pub(crate) fn multi_get<V: ValueOut, K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &Arc<DbInner>,
    cf: &ColumnFamilyData,
    ro: &ReadOptions,
    keys: I,
) -> Vec<Result<Option<V>>> {
    // One sequence and one SuperVersion for all keys: a consistent view.
    // (SuperVersion before sequence, as `get`.)
    let sv = cf.super_version();
    let seq = read_seq(db, ro);
    multi_get_at(cf, &sv, ro, seq, keys, false)
}

/// `multi_get_entity`: the encoded wide-column entities of `keys` (a plain value as an entity
/// of one default column), at one sequence number.
pub(crate) fn multi_get_entity<K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &Arc<DbInner>,
    cf: &ColumnFamilyData,
    ro: &ReadOptions,
    keys: I,
) -> Vec<Result<Option<Vec<u8>>>> {
    let sv = cf.super_version();
    let seq = read_seq(db, ro);
    multi_get_at(cf, &sv, ro, seq, keys, true)
}

/// [`multi_get`] at sequence `seq` in SuperVersion `sv` of family `db` (`multi_get_cf` calls
/// it once per family with one sequence for all); `entity`: the encoded entities
/// (`multi_get_entity`) rather than plain values.
pub(crate) fn multi_get_at<V: ValueOut, K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &ColumnFamilyData,
    sv: &super::column_family::SuperVersion,
    ro: &ReadOptions,
    seq: u64,
    keys: I,
    entity: bool,
) -> Vec<Result<Option<V>>> {
    let _watch = StopWatch::start(&db.stats, Histogram::DbMultiget);
    let out: Vec<Result<Option<V>>> = multi_get_in(db, sv, ro, seq, keys, entity);
    if let Some(s) = &db.stats {
        // as RocksDB's MultiGet: one call, its keys, the keys found and their bytes
        let (mut found, mut bytes) = (0u64, 0u64);
        for v in out.iter().flatten().flatten() {
            found += 1;
            bytes += v.out_len() as u64;
        }
        s.tick(Ticker::NumberMultigetCalls, 1);
        s.tick(Ticker::NumberMultigetKeysRead, out.len() as u64);
        s.tick(Ticker::NumberMultigetKeysFound, found);
        s.tick(Ticker::NumberMultigetBytesRead, bytes);
        s.record(Histogram::BytesPerMultiget, bytes);
    }
    if crate::perf_context::counting() {
        let bytes: usize = out.iter().flatten().flatten().map(|v| v.out_len()).sum();
        crate::perf_context::add_unchecked(crate::perf_context::field::MULTIGET_READ_BYTES, bytes as u64);
    }
    out
}

fn multi_get_in<V: ValueOut, K: AsRef<[u8]>, I: IntoIterator<Item = K>>(
    db: &ColumnFamilyData,
    sv: &super::column_family::SuperVersion,
    ro: &ReadOptions,
    seq: u64,
    keys: I,
    entity: bool,
) -> Vec<Result<Option<V>>> {
    let keys: Vec<K> = keys.into_iter().collect();
    if keys.len() <= 1 {
        let mut lookup = Vec::new();
        return keys
            .iter()
            .map(|k| {
                let mut chain = if entity { Chain::for_entity() } else { Chain::new() };
                get_in(db, sv, ro, k.as_ref(), seq, &mut lookup, &mut Src::None, &mut chain)
            })
            .collect();
    }
    let mut states: Vec<KeyState<'_>> = keys
        .iter()
        .map(|k| {
            let key = k.as_ref();
            let mut lookup = Vec::with_capacity(key.len() + 8);
            crate::key::append_internal_key(&mut lookup, key, seq, vt::FOR_SEEK);
            KeyState {
                key,
                lookup,
                chain: if entity { Chain::for_entity() } else { Chain::new() },
            }
        })
        .collect();
    let mut out: Outcomes<V> = (0..keys.len()).map(|_| None).collect();
    let mut pending: Vec<usize> = Vec::with_capacity(keys.len());
    // Memtables, key by key.
    for (i, st) in states.iter_mut().enumerate() {
        let mut decided = None;
        for m in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
            match mem_lookup(db, m, &mut st.chain, st.key, seq, &st.lookup) {
                Ok(None) => {}
                Ok(Some(r)) => {
                    decided = Some(Ok(r));
                    break;
                }
                Err(e) => {
                    decided = Some(Err(e));
                    break;
                }
            }
        }
        match decided {
            Some(r) => out[i] = Some(r),
            None => pending.push(i),
        }
    }
    let v = &sv.version;
    let icmp = &v.icmp;
    // L0: every file whose range holds the key, newest first.
    let mut group: Vec<usize> = Vec::with_capacity(pending.len());
    for f in &v.files[0] {
        if pending.is_empty() {
            break;
        }
        group.clear();
        group.extend(pending.iter().copied().filter(|&i| {
            let key = states[i].key;
            icmp.compare_user(key, f.smallest_user()) != Ordering::Less
                && icmp.compare_user(key, f.largest_user()) != Ordering::Greater
        }));
        lookup_in_file(db, ro, f, &group, seq, &mut states, &mut out);
        pending.retain(|&i| out[i].is_none());
    }
    // Deeper levels: at most one file per key; keys grouped by file.
    let mut by_file: Vec<(usize, usize)> = Vec::with_capacity(pending.len());
    for level in 1..v.num_levels() {
        if pending.is_empty() {
            break;
        }
        let files = &v.files[level];
        if files.is_empty() {
            continue;
        }
        by_file.clear();
        for &i in &pending {
            let fi = v.find_file(level, &states[i].lookup);
            if let Some(f) = files.get(fi) {
                if icmp.compare_user(states[i].key, f.smallest_user()) != Ordering::Less {
                    by_file.push((fi, i));
                }
            }
        }
        // Sorting by (file, key index) keeps each file's keys in request order.
        by_file.sort_unstable();
        for run in by_file.chunk_by(|a, b| a.0 == b.0) {
            group.clear();
            group.extend(run.iter().map(|&(_, i)| i));
            lookup_in_file(db, ro, &files[run[0].0], &group, seq, &mut states, &mut out);
        }
        pending.retain(|&i| out[i].is_none());
    }
    for i in pending {
        let st = &mut states[i];
        out[i] = Some(st.chain.finish(db, st.key, None));
    }
    out.into_iter().map(|r| r.unwrap_or(Ok(None))).collect()
}

/// Look the undecided keys `group` up in file `f`: one batched call when `f` is a cuckoo file
/// and several keys reach it, else key by key as `get` does.
fn lookup_in_file<V: ValueOut>(
    db: &ColumnFamilyData,
    ro: &ReadOptions,
    f: &FileMeta,
    group: &[usize],
    seq: u64,
    states: &mut [KeyState<'_>],
    out: &mut Outcomes<V>,
) {
    if group.len() >= 2 {
        match db.table_cache.get(f) {
            // On an error the keys the batch did not decide are looked up one by one below,
            // so each reports its own error as `get` would.
            Ok(AnyTable::Cuckoo(t)) if cuckoo_batch(db, f, &t, group, seq, states, out).is_ok() => return,
            Ok(AnyTable::Plain(t)) => {
                // Only cache hints: the lookups below find what they would without them.
                for stage in 0..2 {
                    for &i in group {
                        t.prefetch_lookup(states[i].key, stage);
                    }
                }
            }
            _ => {}
        }
    }
    for &i in group {
        if out[i].is_some() {
            continue;
        }
        let st = &mut states[i];
        match table_lookup(db, f, &mut st.chain, st.key, seq, &st.lookup, ro) {
            Ok(None) => {}
            Ok(Some(r)) => out[i] = Some(Ok(r)),
            Err(e) => out[i] = Some(Err(e)),
        }
    }
}

/// The batched lookup of `group` in cuckoo table `t` (file `f`). A cuckoo file holds one
/// entry per key, a put or a delete, so every key found is decided here.
fn cuckoo_batch<V: ValueOut>(
    db: &ColumnFamilyData,
    f: &FileMeta,
    t: &Arc<CuckooTable>,
    group: &[usize],
    seq: u64,
    states: &mut [KeyState<'_>],
    out: &mut Outcomes<V>,
) -> Result<()> {
    // Cuckoo files have no range tombstones, but the rule is the same for every file.
    let tombs = file_tombstones(db, f)?;
    let mut user_keys: Vec<&[u8]> = Vec::with_capacity(group.len());
    for &i in group {
        let st = &mut states[i];
        st.chain.add_tombstones(tombs.as_deref(), &db.icmp, st.key, seq);
        user_keys.push(st.key);
    }
    t.multi_get(&user_keys, seq, |j, ikey, value| {
        let Some(&i) = group.get(j) else {
            return;
        };
        let st = &mut states[i];
        // SAFETY: a cuckoo table hands out values as slices of the buffer it owns (read at
        // open, never changed).
        let value = unsafe { Val::pinned(value, Home::Table(t)) };
        let r = parse_internal_key(ikey).and_then(|pk| st.chain.entry(db, st.key, pk.seq, pk.vtype, value));
        match r {
            Ok(Some(decided)) => out[i] = Some(Ok(decided)),
            // A merge operand (no cuckoo file has one): older sources decide.
            Ok(None) => {}
            Err(e) => out[i] = Some(Err(e)),
        }
    })?;
    Ok(())
}
