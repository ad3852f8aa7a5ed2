//! The point-lookup chain: the entries of one key collected from the newest source down to a
//! base value (merge operands, range tombstones, single deletes), then resolved.

use super::column_family::ColumnFamilyData;
use crate::engine::checks::merge_op;
use crate::engine::range_del::file_tombstones;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{parse_internal_key, vt, InternalKeyComparator, SequenceNumber};
use crate::lsm::version::FileMeta;
use crate::memtable::MemTable;
use crate::merge_operator::full_merge_newest_first;
use crate::range_del::FragmentedRangeTombstoneList;
use crate::table::pinnable::{Home, Val, ValueOut};
use std::cmp::Ordering;
use std::sync::Arc;

/// State of a point lookup walking from the newest source to the oldest.
pub(crate) struct Chain {
    /// Merge operands seen so far, newest first.
    pub operands: Vec<Vec<u8>>,
    /// Largest covering range-tombstone seqno seen so far (0: none). Entries below it are
    /// deleted.
    pub max_tomb: SequenceNumber,
    /// The lookup returns the encoded wide-column entity (`get_entity`: a plain value becomes
    /// an entity of one default column) rather than the plain value (`get`: an entity gives
    /// its default column's value).
    pub want_entity: bool,
}

impl Chain {
    pub(crate) fn new() -> Chain {
        Chain {
            operands: Vec::new(),
            max_tomb: 0,
            want_entity: false,
        }
    }

    /// A chain for `get_entity`.
    pub(crate) fn for_entity() -> Chain {
        Chain {
            want_entity: true,
            ..Chain::new()
        }
    }

    /// The full merge of the collected operands over `base`.
    fn merge(&self, db: &ColumnFamilyData, key: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>> {
        let op = merge_op(db)?;
        let t = crate::perf_context::PerfTimer::start();
        let r = full_merge_newest_first(op, key, base, &self.operands);
        t.stop(crate::perf_context::field::MERGE_OPERATOR_TIME_NANOS);
        if r.is_err() {
            crate::statistics::tick(&db.stats, crate::statistics::Ticker::NumberMergeFailures, 1);
        }
        r
    }

    /// End the lookup at a wide-column entity (`entity`, its encoding). Without merge operands
    /// the result is the entity itself or its default column's value (empty without one).
    /// With operands, as RocksDB, the operator merges them into the default column's value
    /// (no existing value if the entity has no default column) and the other columns stay.
    pub(crate) fn finish_entity<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        key: &[u8],
        entity: Val<'_>,
    ) -> Result<Option<V>> {
        let dflt = crate::wide_columns::default_range(entity.bytes()).map_err(|e| entity_error(e, key))?;
        if self.operands.is_empty() {
            return Ok(Some(match (self.want_entity, dflt) {
                (true, _) => entity.out(),
                (false, Some(r)) => entity.sub(r).out(),
                (false, None) => V::from_vec(Vec::new()),
            }));
        }
        let base = dflt.map(|r| &entity.bytes()[r]);
        let merged = self.merge(db, key, base)?;
        Ok(Some(V::from_vec(if self.want_entity {
            crate::wide_columns::with_default(entity.bytes(), &merged)?
        } else {
            merged
        })))
    }

    pub(crate) fn add_tombstones(
        &mut self,
        l: Option<&FragmentedRangeTombstoneList>,
        icmp: &InternalKeyComparator,
        key: &[u8],
        seq: SequenceNumber,
    ) {
        if let Some(l) = l {
            self.max_tomb = self.max_tomb.max(l.max_covering_seq(icmp, key, seq));
        }
    }

    /// End the lookup with `base` (None: no value / deleted). The value is `base` itself
    /// (copied or pinned, as `V` asks) unless merge operands were collected.
    #[inline]
    pub(crate) fn finish<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        key: &[u8],
        base: Option<Val<'_>>,
    ) -> Result<Option<V>> {
        if self.operands.is_empty() {
            return Ok(match (base, self.want_entity) {
                (None, _) => None,
                (Some(b), false) => Some(b.out()),
                (Some(b), true) => Some(V::from_vec(crate::wide_columns::single_default(b.bytes()))),
            });
        }
        let merged = self.merge(db, key, base.as_ref().map(|b| b.bytes()))?;
        Ok(Some(V::from_vec(if self.want_entity {
            crate::wide_columns::single_default(&merged)
        } else {
            merged
        })))
    }

    /// One entry found for `key` (newest visible in its source). `Some` when it decides.
    #[inline]
    pub(crate) fn entry<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        key: &[u8],
        seq: SequenceNumber,
        t: u8,
        value: Val<'_>,
    ) -> Result<Option<Option<V>>> {
        if seq < self.max_tomb {
            return self.finish(db, key, None).map(Some);
        }
        match t {
            vt::VALUE => self.finish(db, key, Some(value)).map(Some),
            vt::BLOB_INDEX => {
                // The value is in a blob file: read (and check) it where the lookup ends.
                let blob = db.blob_cache.resolve(key, value.bytes(), true)?;
                self.finish(db, key, Some(Val::unpinned(&blob))).map(Some)
            }
            vt::WIDE_COLUMN_ENTITY => self.finish_entity(db, key, value).map(Some),
            vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => self.finish(db, key, None).map(Some),
            vt::MERGE => {
                self.operands.push(value.to_vec());
                Ok(None)
            }
            t => Err(Error::NotSupported(format!("value type {t:#x} is not supported"))),
        }
    }

    /// Walk the entries of `key` from the iterator's position (all visible to the read).
    pub(crate) fn scan<V: ValueOut>(
        &mut self,
        db: &ColumnFamilyData,
        it: &mut dyn InternalIterator,
        key: &[u8],
    ) -> Result<Option<Option<V>>> {
        while it.valid() {
            let pk = parse_internal_key(it.key())?;
            if db.icmp.compare_user(pk.user_key, key) != Ordering::Equal {
                break;
            }
            if let Some(r) = self.entry(db, key, pk.seq, pk.vtype, Val::unpinned(it.value()))? {
                return Ok(Some(r));
            }
            it.next();
        }
        it.status()?;
        Ok(None)
    }
}

/// An entity that does not decode: the error names the key (the file, when it came from one,
/// is added by the table lookup).
fn entity_error(e: Error, key: &[u8]) -> Error {
    let hex: String = key.iter().take(64).map(|b| format!("{b:02x}")).collect();
    match e {
        Error::Corruption { file, offset, msg } => Error::Corruption {
            file,
            offset,
            msg: format!("{msg} (key 0x{hex})"),
        },
        e => e,
    }
}

/// Lookup in a memtable: the fast path when nothing can be covered, the entry walk otherwise.
#[inline]
pub(crate) fn mem_lookup<V: ValueOut>(
    db: &ColumnFamilyData,
    m: &Arc<MemTable>,
    chain: &mut Chain,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &[u8],
) -> Result<Option<Option<V>>> {
    if !m.range_dels.is_empty() {
        chain.max_tomb = chain.max_tomb.max(m.range_dels.max_covering_seq(&db.icmp, key, seq));
    }
    // Entries older than the newest covering tombstone (of this memtable or a newer source)
    // are deleted: the lookup stops at the first of them.
    use crate::memtable::MemGet;
    match m.get_ref(lookup, chain.max_tomb) {
        None => Ok(None),
        // SAFETY: `get_ref` borrows the value from the memtable's arena, which `m` owns and
        // never moves or rewrites.
        Some(MemGet::Value(v)) => chain
            .finish(db, key, Some(unsafe { Val::pinned(v, Home::Mem(m)) }))
            .map(Some),
        // SAFETY: as above.
        Some(MemGet::Entity(v)) => chain
            .finish_entity(db, key, unsafe { Val::pinned(v, Home::Mem(m)) })
            .map(Some),
        Some(MemGet::MergeOverEntity { operands, entity }) => {
            chain.operands.extend(operands);
            chain.finish_entity(db, key, Val::unpinned(&entity)).map(Some)
        }
        Some(MemGet::Deleted) => chain.finish(db, key, None).map(Some),
        Some(MemGet::Merge { operands, base }) => {
            chain.operands.extend(operands);
            match base {
                None => Ok(None),
                Some(b) => chain.finish(db, key, b.as_deref().map(Val::unpinned)).map(Some),
            }
        }
    }
}

/// Lookup in a table file.
pub(crate) fn table_lookup<V: ValueOut>(
    db: &ColumnFamilyData,
    f: &FileMeta,
    chain: &mut Chain,
    key: &[u8],
    seq: SequenceNumber,
    lookup: &[u8],
    ro: &crate::options::ReadOptions,
) -> Result<Option<Option<V>>> {
    let (verify, fill) = (ro.verify_checksums, ro.fill_cache);
    chain.add_tombstones(file_tombstones(db, f)?.as_deref(), &db.icmp, key, seq);
    let t = db.table_cache.get(f)?;
    // The common case decides inside the block, copying (or pinning) only the value it returns.
    let found = t.get_with(lookup, verify, fill, |ikey, value| -> Result<Lookup<V>> {
        let pk = parse_internal_key(ikey)?;
        if pk.vtype != vt::MERGE || pk.seq < chain.max_tomb {
            let r = chain.entry(db, key, pk.seq, pk.vtype, value);
            return Ok(Ok(r.map_err(|e| e.in_file(&format!("{:06}.sst", f.meta.number), None))?));
        }
        Ok(Err(ikey.to_vec()))
    })?;
    match found {
        None => Ok(None),
        Some(r) => match r? {
            Ok(decided) => Ok(decided),
            Err(ikey) => {
                // A merge operand: walk the rest of the key's entries in this table.
                let mut it = t.iter(verify, fill);
                it.seek(&ikey);
                chain.scan(db, &mut it, key)
            }
        },
    }
}

/// A table lookup's outcome: decided (`Ok`: the value, a deletion, or continue), or a merge
/// operand found at this internal key (`Err`) whose older entries must be walked.
type Lookup<V> = std::result::Result<Option<Option<V>>, Vec<u8>>;
