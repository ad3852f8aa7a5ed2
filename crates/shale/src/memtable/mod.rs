//! The memtable: RocksDB-encoded entries in an arena, ordered by a concurrent skiplist (the
//! default) or collected in a vector sorted on first read ([`vector`], `memtablerep=vector`).
//! The representation is an enum, so the only dispatch is one match per memtable operation
//! (never per key comparison).
//!
//! Each entry is stored in the arena exactly as RocksDB encodes it:
//!
//! ```text
//! varint32(internal_key_len) | internal_key | varint32(value_len) | value
//! ```
//!
//! where `internal_key = user_key | fixed64(seq << 8 | type)`.
//!
//! Range tombstones (`vt::RANGE_DELETION`) will live in a separate skiplist of this memtable
//! (RocksDB's `range_del_table_`); that is a later issue and not built here. `add` does not
//! reject them, but `get` and the iterator treat the point list only.

// Until the DB layer (a later issue) uses the memtable, most of it is unused outside tests.
#![allow(dead_code)]

pub(crate) mod arena;
pub(crate) mod block_pool;
pub(crate) mod directory;
mod key_cmp;
pub(crate) mod prefix_bloom;
pub(crate) mod skiplist;
pub(crate) mod vector;

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AO};
use std::sync::Arc;

use crate::coding::varint_len;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{trailer, user_key, vt, InternalKeyComparator, SequenceNumber};

use self::skiplist::{Iter, ListRef, SkipList};
use self::vector::{SortedEntries, VectorRep};

/// How a memtable holds its entries (RocksDB's `memtable_factory` / db_bench's `--memtablerep`;
/// the `rocksdb` crate's `MemtableFactory`, of which only these two exist here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemtableFactory {
    /// A concurrent skiplist, always sorted (the default; `SkipListFactory`).
    #[default]
    SkipList,
    /// An unsorted vector sorted when first read, normally at flush (`VectorRepFactory`): the
    /// cheapest inserts, for bulk loads. Reads of a memtable still being written are correct
    /// but each one that follows a write re-sorts the new entries and merges them in.
    Vector,
}

impl MemtableFactory {
    /// Parse db_bench's `--memtablerep` values `skip_list` and `vector`.
    pub fn parse(s: &str) -> Result<MemtableFactory> {
        match s {
            "skip_list" | "skiplist" => Ok(MemtableFactory::SkipList),
            "vector" => Ok(MemtableFactory::Vector),
            _ => Err(Error::invalid(format!(
                "memtablerep: unknown memtable representation {s:?} (skip_list or vector)"
            ))),
        }
    }
    /// The factory name RocksDB prints and records in OPTIONS files.
    pub fn rocksdb_name(self) -> &'static str {
        match self {
            MemtableFactory::SkipList => "SkipListFactory",
            MemtableFactory::Vector => "VectorRepFactory",
        }
    }
}

/// Default arena block size for a memtable of `write_buffer_size` bytes:
/// `min(write_buffer_size / 8, 4 MiB)`, at least 4 KiB.
pub(crate) fn default_arena_block_size(write_buffer_size: usize) -> usize {
    (write_buffer_size / 8).clamp(arena::MIN_BLOCK_SIZE, 4 << 20)
}

pub(crate) use key_cmp::MemKeyCmp;
use key_cmp::{entry_ikey, split_entry};

/// Result of a memtable point lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemGet<V = Vec<u8>> {
    /// The newest visible entry is a value (`vt::VALUE`; other value-like types — blob index,
    /// value-preferred-seqno — are returned raw here for now). `V` is a copy, or a slice of the
    /// memtable's arena ([`MemTable::get_ref`]).
    Value(V),
    /// The newest visible entry is a wide-column entity (`vt::WIDE_COLUMN_ENTITY`, its
    /// encoding).
    Entity(V),
    /// The newest visible entries are merge operands (newest first) over a wide-column entity.
    MergeOverEntity { operands: Vec<Vec<u8>>, entity: Vec<u8> },
    /// The newest visible entry is a deletion (`DELETION`, `SINGLE_DELETION`,
    /// `DELETION_WITH_TIMESTAMP`).
    Deleted,
    /// The newest visible entries are merge operands. `operands` are newest-first. `base` is
    /// `None` if the memtable has nothing older for the key (keep looking in older data),
    /// `Some(None)` if a deletion ends the chain, `Some(Some(v))` if value `v` does.
    Merge {
        operands: Vec<Vec<u8>>,
        base: Option<Option<Vec<u8>>>,
    },
}

/// Counter updates of a run of `add_deferred` calls, applied with
/// [`MemTable::apply_counters`] (RocksDB's `MemTablePostProcessInfo`): saves the atomic
/// read-modify-writes per entry when a write batch inserts many entries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AddCounters {
    pub entries: u64,
    pub deletes: u64,
    pub data_size: u64,
    pub min_seq: SequenceNumber,
    pub max_seq: SequenceNumber,
}

impl Default for AddCounters {
    fn default() -> Self {
        AddCounters {
            entries: 0,
            deletes: 0,
            data_size: 0,
            min_seq: u64::MAX,
            max_seq: 0,
        }
    }
}

/// An in-memory sorted buffer of writes. All methods take `&self` and are safe to call from
/// many threads at once (concurrent `add`s and reads).
/// The entry container of a memtable.
enum Rep {
    SkipList(SkipList<MemKeyCmp>),
    Vector(VectorRep),
}

pub(crate) struct MemTable {
    rep: Rep,
    icmp: InternalKeyComparator,
    num_entries: AtomicU64,
    num_deletes: AtomicU64,
    /// Sum of encoded entry sizes.
    data_size: AtomicU64,
    /// Smallest sequence inserted (u64::MAX while empty).
    first_seq: AtomicU64,
    /// Largest sequence inserted (0 while empty).
    largest_seq: AtomicU64,
    /// The DB's last sequence when this memtable was made (RocksDB's `earliest_seqno`): every
    /// later write to its family is in it or in a newer memtable. Transactions use it to know
    /// how far back the memtables hold the history of a key.
    created_seq: AtomicU64,
    /// Seconds since the epoch of the first point entry applied (0 while none): RocksDB's
    /// `ApproximateOldestKeyTime`, the oldest ancestor time of the table a flush writes.
    oldest_key_time: AtomicU64,
    /// Range tombstones (RocksDB's `range_del_table_`), with their cached fragmented list.
    pub(crate) range_dels: crate::range_del::MemRangeDels,
    /// The oldest WAL holding the prepared section of a two-phase transaction whose commit put
    /// data in this memtable (u64::MAX: none; RocksDB's `min_prep_log_referenced_`): that WAL
    /// must outlive the memtable, as recovery replays the commit from its prepared section.
    min_prep_log: AtomicU64,
    /// Where this memtable charges its memory (the DB's total and write buffer manager).
    charge: Option<crate::write_buffer_manager::MemCharge>,
    /// The memtable bloom over prefixes and/or whole keys (`prefix_bloom.rs`), if configured.
    bloom: Option<prefix_bloom::PrefixBloom>,
    /// Shale's whole-key filter for point lookups (`Options::memtable_point_filter`), if any:
    /// like `bloom`, but not counted in the memory compared with the write buffer size.
    point_filter: Option<prefix_bloom::PrefixBloom>,
    /// Point lookups that searched the representation (past the filters).
    #[cfg(test)]
    searches: AtomicU64,
}

impl std::fmt::Debug for MemTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemTable")
            .field("entries", &self.num_entries())
            .field("deletes", &self.num_deletes())
            .field("memory", &self.approximate_memory_usage())
            .field("first_seqno", &self.first_seqno())
            .field("largest_seqno", &self.largest_seqno())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable whose arena uses blocks of `arena_block_size` bytes (see
    /// [`default_arena_block_size`]).
    pub(crate) fn new(icmp: InternalKeyComparator, arena_block_size: usize) -> MemTable {
        MemTable::with_factory(icmp, arena_block_size, MemtableFactory::SkipList)
    }

    /// An empty memtable of the representation `factory` chooses.
    pub(crate) fn with_factory(
        icmp: InternalKeyComparator,
        arena_block_size: usize,
        factory: MemtableFactory,
    ) -> MemTable {
        let cmp = MemKeyCmp::new(icmp.clone());
        let rep = match factory {
            MemtableFactory::SkipList => Rep::SkipList(SkipList::new(cmp, arena_block_size)),
            MemtableFactory::Vector => Rep::Vector(VectorRep::new(cmp, arena_block_size)),
        };
        MemTable {
            rep,
            icmp,
            num_entries: AtomicU64::new(0),
            num_deletes: AtomicU64::new(0),
            data_size: AtomicU64::new(0),
            first_seq: AtomicU64::new(u64::MAX),
            largest_seq: AtomicU64::new(0),
            created_seq: AtomicU64::new(0),
            oldest_key_time: AtomicU64::new(0),
            range_dels: Default::default(),
            min_prep_log: AtomicU64::new(u64::MAX),
            charge: None,
            bloom: None,
            point_filter: None,
            #[cfg(test)]
            searches: AtomicU64::new(0),
        }
    }

    /// Give the memtable its bloom and its point filter (`Options::memtable_bloom` and
    /// `Options::memtable_point_filter`; before any entry is added).
    pub(crate) fn with_filters(
        mut self,
        bloom: Option<prefix_bloom::PrefixBloom>,
        point_filter: Option<prefix_bloom::PrefixBloom>,
    ) -> MemTable {
        self.bloom = bloom;
        self.point_filter = point_filter;
        self
    }

    /// The memtable bloom, if any.
    #[inline]
    pub(crate) fn bloom(&self) -> Option<&prefix_bloom::PrefixBloom> {
        self.bloom.as_ref()
    }

    /// Data committed from a prepared section in WAL `log` went into this memtable.
    pub(crate) fn ref_prep_log(&self, log: u64) {
        self.min_prep_log.fetch_min(log, AO::AcqRel);
    }

    /// The oldest WAL with a prepared section this memtable's data needs, if any.
    pub(crate) fn min_prep_log(&self) -> Option<u64> {
        Some(self.min_prep_log.load(AO::Acquire)).filter(|&l| l != u64::MAX)
    }

    /// Charge this memtable's memory to `account` (see [`update_charge`](Self::update_charge)).
    pub(crate) fn with_account(mut self, account: &Arc<crate::write_buffer_manager::MemAccount>) -> MemTable {
        self.charge = Some(crate::write_buffer_manager::MemCharge::new(account.clone()));
        self.update_charge();
        self
    }

    /// Bring the charged memory up to date (after inserts).
    #[inline]
    pub(crate) fn update_charge(&self) {
        if let Some(c) = &self.charge {
            c.update(self.approximate_memory_usage());
        }
    }

    /// The memtable is no longer the mutable one: no entry may be added any more.
    pub(crate) fn mark_immutable(&self) {
        if let Some(c) = &self.charge {
            c.mark_immutable(self.approximate_memory_usage());
        }
        if let Rep::SkipList(l) = &self.rep {
            l.seal();
        }
    }

    /// Build the sorted directory of an immutable skiplist memtable (bytewise keys only; see
    /// `directory.rs`), after which its lookups and seeks skip the skiplist descent. Safe to call
    /// while readers use the memtable. Returns whether the memtable has a directory.
    pub(crate) fn build_directory(&self) -> bool {
        match &self.rep {
            Rep::SkipList(l) => l.build_directory(),
            Rep::Vector(_) => false,
        }
    }

    pub(crate) fn icmp(&self) -> &InternalKeyComparator {
        &self.icmp
    }

    /// Which representation this memtable uses.
    pub(crate) fn factory(&self) -> MemtableFactory {
        match self.rep {
            Rep::SkipList(_) => MemtableFactory::SkipList,
            Rep::Vector(_) => MemtableFactory::Vector,
        }
    }

    /// Insert `user_key` at `seq` with type `vtype`. Returns false (and inserts nothing) if the
    /// same (user key, seq, type) is already present. Callable concurrently.
    #[inline]
    pub(crate) fn add(&self, seq: SequenceNumber, vtype: u8, user_key: &[u8], value: &[u8]) -> bool {
        let mut c = AddCounters::default();
        let ok = self.add_deferred(seq, vtype, user_key, value, &mut c);
        if ok {
            self.apply_counters(&c);
        }
        ok
    }

    /// [`add`](Self::add) without updating the counters: they accumulate in `counters` until
    /// [`apply_counters`](Self::apply_counters). The entry itself is visible immediately.
    #[inline]
    pub(crate) fn add_deferred(
        &self,
        seq: SequenceNumber,
        vtype: u8,
        user_key: &[u8],
        value: &[u8],
        counters: &mut AddCounters,
    ) -> bool {
        let ikey_len = user_key.len() + 8;
        let klen = u32::try_from(ikey_len).expect("key too large for a memtable entry");
        let vlen = u32::try_from(value.len()).expect("value too large for a memtable entry");
        let entry_len = varint_len(ikey_len as u64) + ikey_len + varint_len(value.len() as u64) + value.len();
        let trailer = ((seq << 8) | vtype as u64).to_le_bytes();
        // before the insert makes the entry visible
        if let Some(b) = &self.bloom {
            b.add_key(user_key);
        }
        if let Some(f) = &self.point_filter {
            f.add_key(user_key);
        }
        let ok = match &self.rep {
            Rep::SkipList(l) => l.insert_with(entry_len, |w| {
                w.put_varint32(klen);
                w.put(user_key);
                w.put(&trailer);
                w.put_varint32(vlen);
                w.put(value);
            }),
            Rep::Vector(v) => v.insert_with(entry_len, |w| {
                w.put_varint32(klen);
                w.put(user_key);
                w.put(&trailer);
                w.put_varint32(vlen);
                w.put(value);
            }),
        };
        if ok {
            counters.entries += 1;
            if matches!(vtype, vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP) {
                counters.deletes += 1;
            }
            counters.data_size += entry_len as u64;
            counters.min_seq = counters.min_seq.min(seq);
            counters.max_seq = counters.max_seq.max(seq);
        }
        ok
    }

    /// Apply counters accumulated by [`add_deferred`](Self::add_deferred).
    #[inline]
    pub(crate) fn apply_counters(&self, c: &AddCounters) {
        if c.entries == 0 {
            return;
        }
        self.num_entries.fetch_add(c.entries, AO::Relaxed);
        if c.deletes != 0 {
            self.num_deletes.fetch_add(c.deletes, AO::Relaxed);
        }
        self.data_size.fetch_add(c.data_size, AO::Relaxed);
        if c.min_seq < self.first_seq.load(AO::Relaxed) {
            self.first_seq.fetch_min(c.min_seq, AO::Relaxed);
        }
        if c.max_seq > self.largest_seq.load(AO::Relaxed) {
            self.largest_seq.fetch_max(c.max_seq, AO::Relaxed);
        }
        if self.oldest_key_time.load(AO::Relaxed) == 0 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let _ = self.oldest_key_time.compare_exchange(0, now, AO::Relaxed, AO::Relaxed);
        }
    }

    /// When the first point entry was applied (seconds since the epoch; 0: none yet).
    pub(crate) fn oldest_key_time(&self) -> u64 {
        self.oldest_key_time.load(AO::Relaxed)
    }

    /// Point lookup. `lookup_ikey` is `user_key | fixed64(snapshot_seq << 8 | vt::FOR_SEEK)`;
    /// only entries with sequence <= `snapshot_seq` are visible. None if the user key has no
    /// visible entry here.
    pub(crate) fn get(&self, lookup_ikey: &[u8]) -> Option<MemGet> {
        self.get_under(lookup_ikey, 0)
    }

    /// [`get`](Self::get) under a range tombstone at sequence `tomb` covering the key (0: none):
    /// entries older than `tomb` are deleted by it, so the first of them ends the lookup as a
    /// deletion would.
    pub(crate) fn get_under(&self, lookup_ikey: &[u8], tomb: u64) -> Option<MemGet> {
        self.get_ref(lookup_ikey, tomb).map(|g| match g {
            MemGet::Value(v) => MemGet::Value(v.to_vec()),
            MemGet::Entity(v) => MemGet::Entity(v.to_vec()),
            MemGet::MergeOverEntity { operands, entity } => MemGet::MergeOverEntity { operands, entity },
            MemGet::Deleted => MemGet::Deleted,
            MemGet::Merge { operands, base } => MemGet::Merge { operands, base },
        })
    }

    /// [`get_under`](Self::get_under) with a found value borrowed from the arena: it lives,
    /// unchanged and in place, as long as the memtable.
    pub(crate) fn get_ref<'a>(&'a self, lookup_ikey: &[u8], tomb: u64) -> Option<MemGet<&'a [u8]>> {
        let icmp = self.icmp();
        let ukey = user_key(lookup_ikey);
        if self.bloom.as_ref().is_some_and(|b| !b.key_may_match(ukey)) {
            crate::perf_context::add(crate::perf_context::field::BLOOM_MEMTABLE_MISS_COUNT, 1);
            return None;
        }
        if self.point_filter.as_ref().is_some_and(|f| !f.key_may_match(ukey)) {
            return None;
        }
        #[cfg(test)]
        self.searches.fetch_add(1, AO::Relaxed);
        let mut operands: Vec<Vec<u8>> = Vec::new();
        match &self.rep {
            Rep::SkipList(l) => {
                let mut it = l.iter();
                it.seek(lookup_ikey);
                while it.valid() {
                    if let Some(r) = get_step(icmp, ukey, it.entry_in_list(), tomb, &mut operands) {
                        return r;
                    }
                    it.next();
                }
            }
            Rep::Vector(v) => {
                let sorted = v.sorted();
                let from = v.lower_bound(&sorted, lookup_ikey);
                for &e in &sorted[from..] {
                    if let Some(r) = get_step(icmp, ukey, v.entry(e), tomb, &mut operands) {
                        return r;
                    }
                }
            }
        }
        if operands.is_empty() {
            None
        } else {
            Some(MemGet::Merge { operands, base: None })
        }
    }

    /// Whether an entry with exactly this internal key exists.
    pub(crate) fn contains(&self, ikey: &[u8]) -> bool {
        match &self.rep {
            Rep::SkipList(l) => l.contains(ikey),
            Rep::Vector(v) => {
                let sorted = v.sorted();
                let i = v.lower_bound(&sorted, ikey);
                sorted
                    .get(i)
                    .is_some_and(|&e| self.icmp.compare(entry_ikey(v.entry(e)), ikey) == Ordering::Equal)
            }
        }
    }

    /// An iterator over all entries (internal keys, values borrowed from the arena). It keeps
    /// the memtable alive. Over a skiplist it sees entries added after it was created; over a
    /// vector it sees those present at its creation (sorting them if needed).
    pub(crate) fn iter(self: &Arc<Self>) -> MemTableIterator {
        let inner = match &self.rep {
            Rep::SkipList(l) => IterInner::Skip(Iter::new(SkipHandle {
                list: l as *const SkipList<MemKeyCmp>,
                mem: Arc::clone(self),
            })),
            Rep::Vector(v) => {
                let sorted = v.sorted();
                IterInner::Vector(VecIter {
                    pos: sorted.len(),
                    sorted,
                    mem: Arc::clone(self),
                })
            }
        };
        MemTableIterator { inner }
    }

    /// Memory consumed, as RocksDB counts it: arena blocks minus the unused tail of the current
    /// block (plus, for a vector, its entry pointers). Compare with `write_buffer_size` to
    /// decide when to switch memtables.
    pub(crate) fn approximate_memory_usage(&self) -> usize {
        let bloom = self.bloom.as_ref().map_or(0, |b| b.memory());
        bloom
            + match &self.rep {
                Rep::SkipList(l) => l.allocated_bytes() + l.directory_memory(),
                Rep::Vector(v) => v.allocated_bytes(),
            }
    }

    /// Bytes reserved from the allocator: whole arena blocks, plus the skiplist's guides and
    /// the point filter.
    pub(crate) fn reserved_memory(&self) -> usize {
        self.point_filter.as_ref().map_or(0, |f| f.memory())
            + match &self.rep {
                Rep::SkipList(l) => l.memory_usage() + l.guide_memory(),
                Rep::Vector(v) => v.memory_usage(),
            }
    }

    pub(crate) fn num_entries(&self) -> u64 {
        self.num_entries.load(AO::Relaxed)
    }

    pub(crate) fn num_deletes(&self) -> u64 {
        self.num_deletes.load(AO::Relaxed)
    }

    /// Sum of the encoded sizes of all entries.
    pub(crate) fn data_size(&self) -> u64 {
        self.data_size.load(AO::Relaxed)
    }

    /// Smallest sequence number inserted; 0 while empty (as RocksDB's `GetFirstSequenceNumber`).
    pub(crate) fn first_seqno(&self) -> SequenceNumber {
        match self.first_seq.load(AO::Relaxed) {
            u64::MAX => 0,
            s => s,
        }
    }

    /// The DB's last sequence when this memtable was made (0 if not known: a memtable made
    /// at open, holding only what came before any transaction).
    pub(crate) fn created_seq(&self) -> SequenceNumber {
        self.created_seq.load(AO::Relaxed)
    }
    pub(crate) fn set_created_seq(&self, seq: SequenceNumber) {
        self.created_seq.store(seq, AO::Relaxed);
    }

    /// Largest sequence number inserted; 0 while empty.
    pub(crate) fn largest_seqno(&self) -> SequenceNumber {
        self.largest_seq.load(AO::Relaxed)
    }

    /// True if no entry has been inserted (checks the list itself, so it is exact even while
    /// `add_deferred` counters are pending).
    pub(crate) fn is_empty(&self) -> bool {
        match &self.rep {
            Rep::SkipList(l) => l.is_empty(),
            Rep::Vector(v) => v.is_empty(),
        }
    }
}

/// One step of a point lookup over the entries from the seek position on: `Some(result)` once
/// the answer is known, `None` to look at the next entry.
#[inline(always)]
fn get_step<'a>(
    icmp: &InternalKeyComparator,
    ukey: &[u8],
    entry: &'a [u8],
    tomb: u64,
    operands: &mut Vec<Vec<u8>>,
) -> Option<Option<MemGet<&'a [u8]>>> {
    let (ikey, value) = split_entry(entry);
    if icmp.compare_user(user_key(ikey), ukey) != Ordering::Equal {
        return Some(if operands.is_empty() {
            None
        } else {
            Some(MemGet::Merge {
                operands: std::mem::take(operands),
                base: None,
            })
        });
    }
    let t = trailer(ikey);
    if (t >> 8) < tomb {
        // Covered by the range tombstone, and so is everything older.
        return Some(Some(if operands.is_empty() {
            MemGet::Deleted
        } else {
            MemGet::Merge {
                operands: std::mem::take(operands),
                base: Some(None),
            }
        }));
    }
    match (t & 0xff) as u8 {
        vt::MERGE => {
            operands.push(value.to_vec());
            None
        }
        vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => Some(Some(if operands.is_empty() {
            MemGet::Deleted
        } else {
            MemGet::Merge {
                operands: std::mem::take(operands),
                base: Some(None),
            }
        })),
        // Range tombstones live in `range_dels`, never in the point entries.
        vt::RANGE_DELETION => None,
        vt::WIDE_COLUMN_ENTITY => Some(Some(if operands.is_empty() {
            MemGet::Entity(value)
        } else {
            MemGet::MergeOverEntity {
                operands: std::mem::take(operands),
                entity: value.to_vec(),
            }
        })),
        _ => Some(Some(if operands.is_empty() {
            MemGet::Value(value)
        } else {
            MemGet::Merge {
                operands: std::mem::take(operands),
                base: Some(Some(value.to_vec())),
            }
        })),
    }
}

/// The skiplist of a memtable, kept alive by the memtable's `Arc`.
struct SkipHandle {
    /// The `Rep::SkipList` list inside `*mem`.
    list: *const SkipList<MemKeyCmp>,
    mem: Arc<MemTable>,
}

// SAFETY: the handle is an `Arc<MemTable>` (Send + Sync) plus a pointer to a field of that
// memtable, used only for shared reads, exactly as a `&SkipList` (Send + Sync) would be.
unsafe impl Send for SkipHandle {}
// SAFETY: as above.
unsafe impl Sync for SkipHandle {}

// SAFETY: `list` points into the memtable that `mem` keeps alive at a stable heap address (the
// Arc's allocation never moves), and it never changes after construction.
unsafe impl ListRef for SkipHandle {
    type Cmp = MemKeyCmp;
    #[inline(always)]
    fn list(&self) -> &SkipList<MemKeyCmp> {
        // SAFETY: see the impl's safety comment.
        unsafe { &*self.list }
    }
}

/// A cursor over the sorted entries of a vector memtable (`pos == len` means invalid).
struct VecIter {
    sorted: SortedEntries,
    pos: usize,
    mem: Arc<MemTable>,
}

impl VecIter {
    #[inline]
    fn rep(&self) -> &VectorRep {
        match &self.mem.rep {
            Rep::Vector(v) => v,
            Rep::SkipList(_) => unreachable!("a VecIter is only made over a vector memtable"),
        }
    }
    #[inline]
    fn entry(&self) -> &[u8] {
        let e = *self.sorted.get(self.pos).expect("memtable iterator is not valid");
        self.rep().entry(e)
    }
}

enum IterInner {
    Skip(Iter<SkipHandle>),
    Vector(VecIter),
}

/// Iterator over a memtable's entries in internal-key order. `key()` and `value()` borrow the
/// arena (no copies). Over a skiplist, `prev` costs a search (as in LevelDB/RocksDB).
pub(crate) struct MemTableIterator {
    inner: IterInner,
}

impl MemTableIterator {
    pub(crate) fn memtable(&self) -> &Arc<MemTable> {
        match &self.inner {
            IterInner::Skip(i) => &i.handle().mem,
            IterInner::Vector(v) => &v.mem,
        }
    }

    #[inline]
    fn entry(&self) -> &[u8] {
        match &self.inner {
            IterInner::Skip(i) => i.entry(),
            IterInner::Vector(v) => v.entry(),
        }
    }
}

impl InternalIterator for MemTableIterator {
    #[inline]
    fn valid(&self) -> bool {
        match &self.inner {
            IterInner::Skip(i) => i.valid(),
            IterInner::Vector(v) => v.pos < v.sorted.len(),
        }
    }
    fn seek_to_first(&mut self) {
        match &mut self.inner {
            IterInner::Skip(i) => i.seek_to_first(),
            IterInner::Vector(v) => v.pos = 0,
        }
    }
    fn seek_to_last(&mut self) {
        match &mut self.inner {
            IterInner::Skip(i) => i.seek_to_last(),
            IterInner::Vector(v) => v.pos = v.sorted.len().saturating_sub(1),
        }
    }
    #[inline]
    fn seek(&mut self, target: &[u8]) {
        match &mut self.inner {
            IterInner::Skip(i) => i.seek(target),
            IterInner::Vector(v) => v.pos = v.rep().lower_bound(&v.sorted, target),
        }
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        match &mut self.inner {
            IterInner::Skip(i) => i.seek_for_prev(target),
            IterInner::Vector(v) => {
                v.pos = match v.rep().upper_bound(&v.sorted, target) {
                    0 => v.sorted.len(),
                    n => n - 1,
                }
            }
        }
    }
    #[inline]
    fn next(&mut self) {
        match &mut self.inner {
            IterInner::Skip(i) => i.next(),
            IterInner::Vector(v) => {
                assert!(v.pos < v.sorted.len(), "memtable iterator is not valid");
                v.pos += 1;
            }
        }
    }
    fn prev(&mut self) {
        match &mut self.inner {
            IterInner::Skip(i) => i.prev(),
            IterInner::Vector(v) => {
                assert!(v.pos < v.sorted.len(), "memtable iterator is not valid");
                v.pos = if v.pos == 0 { v.sorted.len() } else { v.pos - 1 };
            }
        }
    }
    #[inline]
    fn key(&self) -> &[u8] {
        entry_ikey(self.entry())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        split_entry(self.entry()).1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
