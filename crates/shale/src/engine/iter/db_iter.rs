//! The user-facing iterators (RocksDB's `DBIter`): snapshots, deletions, merges and bounds over
//! the merged internal iterator.

use std::cmp::Ordering;
use std::sync::{Arc, Weak};

use super::{merging::Dir, merging::MergingIterator, prefix::PrefixSeek, sources::internal_iterator};
use crate::engine::column_family::ColumnFamilyData;
use crate::engine::column_family::SuperVersion;
use crate::engine::state::DbInner;
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::key::{append_internal_key, parse_internal_key, user_key, vt, InternalKeyComparator, MAX_SEQUENCE};
use crate::options::ReadOptions;
use crate::perf_context::field as perf;
use crate::statistics::{Histogram, StopWatch, Ticker};

/// The user-facing cursor (RocksDB's `DBIter`): hides old versions and deletions, honours the
/// snapshot and the bounds.
pub struct DBRawIterator {
    inner: MergingIterator,
    icmp: InternalKeyComparator,
    seq: u64,
    dir: Dir,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    err: Option<Error>,
    scratch: Vec<u8>,
    /// Range tombstones of every source that has any (empty: no check at all).
    tombs: Vec<Arc<crate::range_del::FragmentedRangeTombstoneList>>,
    merge_op: Option<Arc<dyn crate::merge_operator::MergeOperator>>,
    /// Forward and positioned on a merged value: the key and value are in `saved_*` and
    /// `inner` is past the key's entries.
    merged: bool,
    operands: Vec<Vec<u8>>,
    /// Positioned on a wide-column entity (or a merge over one): its encoding, and where its
    /// default column's value lies in it (`None`: no default column, the value is empty).
    entity: Option<(Vec<u8>, Option<std::ops::Range<usize>>)>,
    /// Positioned (forward) on a blob index: the blob's value, read from its blob file.
    blob_value: Option<Vec<u8>>,
    /// The family's open blob files.
    blob_cache: Arc<crate::blob::reader::BlobFileCache>,
    _sv: Arc<SuperVersion>,
    _snapshot: Option<crate::snapshot::Snapshot>,
    stats: crate::statistics::Stats,
    /// The last positioning call (which found-ticker its outcome counts in).
    last_op: Ticker,
    /// Entries skipped since the last report to the perf context: hidden versions, deletions.
    skipped: u64,
    deletes_skipped: u64,
    /// Prefix seek (None: total order).
    prefix: Option<Arc<PrefixSeek>>,
    /// `prefix_same_as_start` in prefix mode.
    same_prefix: bool,
    /// With `same_prefix`: the prefix the last positioning call started in; entries with
    /// another prefix end the iteration.
    cur_prefix: Option<Vec<u8>>,
    /// Where the iterator came from, for [`refresh`](Self::refresh): the DB and family (weak,
    /// so an iterator does not keep a closed DB alive) and the read options without their
    /// snapshot.
    origin: (Weak<DbInner>, Weak<ColumnFamilyData>, ReadOptions),
    /// User-defined timestamps (`docs/user-timestamps.md`): their size (0: the family has none,
    /// and nothing below looks at them), the read timestamp and, with `iter_start_ts`, the
    /// oldest timestamp returned (every version in the range is an entry of its own).
    ts_sz: usize,
    read_ts: Vec<u8>,
    start_ts: Option<Vec<u8>>,
}

pub(crate) fn new_raw_iterator(db: &Arc<DbInner>, cf: &Arc<ColumnFamilyData>, ro: ReadOptions) -> DBRawIterator {
    // SuperVersion before sequence, as `get` (see `read::get`).
    let sv = cf.super_version();
    let seq = crate::engine::read::read_seq(db, &ro);
    let prefix = PrefixSeek::new(cf, &ro);
    let same_prefix = ro.prefix_same_as_start && prefix.as_ref().is_some_and(|p| p.same_as_start_applies());
    let inner = internal_iterator(cf, &sv, ro.verify_checksums, ro.fill_cache, prefix.as_ref());
    let origin_ro = ReadOptions {
        snapshot: None,
        ..ro.clone()
    };
    let (tombs, mut err) = match crate::engine::range_del::all_tombstone_lists(cf, &sv) {
        Ok(t) => (t, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    let ts_sz = cf.icmp.timestamp_size();
    if let Err(e) = crate::engine::checks::check_read_ts(cf, &ro, true) {
        err = Some(e);
    }
    let read_ts = ro.timestamp.clone().unwrap_or_default();
    let start_ts = ro.iter_start_ts.clone().filter(|_| ts_sz > 0);
    DBRawIterator {
        tombs,
        merge_op: cf.opts.merge_operator.clone(),
        merged: false,
        operands: Vec::new(),
        entity: None,
        blob_value: None,
        blob_cache: cf.blob_cache.clone(),
        inner,
        icmp: cf.icmp.clone(),
        seq,
        dir: Dir::Forward,
        valid: false,
        saved_key: Vec::new(),
        saved_value: Vec::new(),
        lower: ro.iterate_lower_bound,
        upper: ro.iterate_upper_bound,
        err,
        scratch: Vec::new(),
        _sv: sv,
        _snapshot: ro.snapshot,
        stats: {
            crate::statistics::tick(&cf.stats, Ticker::NoIteratorCreated, 1);
            cf.stats.clone()
        },
        last_op: Ticker::NumberDbSeek,
        skipped: 0,
        deletes_skipped: 0,
        prefix,
        same_prefix,
        cur_prefix: None,
        origin: (Arc::downgrade(db), Arc::downgrade(cf), origin_ro),
        ts_sz,
        read_ts,
        start_ts,
    }
}

impl Drop for DBRawIterator {
    fn drop(&mut self) {
        crate::statistics::tick(&self.stats, Ticker::NoIteratorDeleted, 1);
    }
}

impl DBRawIterator {
    /// The family's key order, merge operator and bounds (for iterators layered on this one,
    /// such as a transaction's).
    pub(crate) fn layer_info(
        &self,
    ) -> (
        InternalKeyComparator,
        Option<Arc<dyn crate::merge_operator::MergeOperator>>,
    ) {
        (self.icmp.clone(), self.merge_op.clone())
    }
    pub(crate) fn bounds(&self) -> (Option<&[u8]>, Option<&[u8]>) {
        (self.lower.as_deref(), self.upper.as_deref())
    }
    /// True while positioned on an entry; false before the first seek, past either end, and after
    /// an error (then [`status`](Self::status) returns it).
    pub fn valid(&self) -> bool {
        self.valid
    }
    /// The current key, or `None` when not positioned.
    pub fn key(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        if self.ts_sz > 0 {
            return Some(self.ts_key());
        }
        Some(self.full_user_key())
    }
    /// The current entry's user key as stored (with its timestamp, if any).
    #[inline]
    fn full_user_key(&self) -> &[u8] {
        match self.dir {
            Dir::Forward if !self.merged => user_key(self.inner.key()),
            _ => &self.saved_key,
        }
    }
    /// `key()` with timestamps: the key without its timestamp, or with `iter_start_ts` the whole
    /// internal key (as RocksDB's).
    fn ts_key(&self) -> &[u8] {
        if self.start_ts.is_some() {
            return self.inner.key();
        }
        let k = self.full_user_key();
        &k[..k.len().saturating_sub(self.ts_sz)]
    }
    /// The current value, or `None` when not positioned. For a wide-column entity, the value of
    /// its default column (empty if it has none), as RocksDB's `Iterator::value`.
    pub fn value(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        if let Some((e, dflt)) = &self.entity {
            return Some(dflt.clone().map_or(&[][..], |r| &e[r]));
        }
        if let Some(b) = &self.blob_value {
            return Some(b);
        }
        if self.start_ts.is_some() {
            return Some(self.inner.value());
        }
        Some(match self.dir {
            Dir::Forward if !self.merged => self.inner.value(),
            _ => &self.saved_value,
        })
    }
    /// The wide columns of the current entry, sorted by name (RocksDB's `Iterator::columns`),
    /// or `None` when not positioned: an entity's columns, or for a plain value one default
    /// column (empty name) holding it.
    pub fn columns(&self) -> Option<Vec<crate::wide_columns::WideColumn>> {
        if !self.valid {
            return None;
        }
        if let Some((e, _)) = &self.entity {
            // Decoded when the iterator landed here, so it decodes again.
            return crate::wide_columns::to_columns(e).ok();
        }
        let v = self.value()?;
        Some(vec![crate::wide_columns::WideColumn::new(
            crate::wide_columns::DEFAULT_WIDE_COLUMN_NAME,
            v,
        )])
    }
    /// Land on the entity `e` (its encoding): false and the error set if it does not decode.
    fn set_entity(&mut self, e: Vec<u8>) -> bool {
        match crate::wide_columns::default_range(&e) {
            Ok(d) => {
                self.entity = Some((e, d));
                true
            }
            Err(err) => {
                self.set_error(err);
                false
            }
        }
    }
    /// Merge `operands` into the default column of `entity` (RocksDB merges into the default
    /// column and keeps the others): `saved_value` is the merged value, the entity the result.
    fn resolve_merge_entity(&mut self, entity: Vec<u8>, oldest_first: bool) {
        let dflt = match crate::wide_columns::default_range(&entity) {
            Ok(d) => d,
            Err(e) => return self.set_error(e),
        };
        self.resolve_merge(dflt.map(|r| &entity[r]), oldest_first);
        if self.valid {
            match crate::wide_columns::with_default(&entity, &self.saved_value) {
                Ok(e) => {
                    self.set_entity(e);
                }
                Err(e) => self.set_error(e),
            }
        }
    }
    /// The current key and value together, or `None` when not [`valid`](Self::valid).
    pub fn item(&self) -> Option<(&[u8], &[u8])> {
        self.key().zip(self.value())
    }
    /// The user-defined timestamp of the current entry (the version's timestamp), or `None` when
    /// not positioned; empty for a family whose comparator has no timestamps (as RocksDB's).
    pub fn timestamp(&self) -> Option<&[u8]> {
        if !self.valid {
            return None;
        }
        if self.ts_sz == 0 {
            return Some(&[][..]);
        }
        let k = if self.start_ts.is_some() {
            user_key(self.inner.key())
        } else {
            self.full_user_key()
        };
        Some(&k[k.len().saturating_sub(self.ts_sz)..])
    }
    /// The current entry as an encoded wide-column entity (a plain value as an entity of one
    /// default column), for `get_entity` through an iterator.
    pub(crate) fn entity_encoding(&self) -> Option<Vec<u8>> {
        if let Some((e, _)) = &self.entity {
            return Some(e.clone());
        }
        self.value().map(crate::wide_columns::single_default)
    }
    /// Orders two stored user keys, ignoring timestamps when the family has them.
    #[inline]
    fn cmp_keys(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.ts_sz == 0 {
            self.icmp.compare_user(a, b)
        } else {
            self.icmp.compare_without_ts(a, true, b, true)
        }
    }
    /// Orders a user key (`has_ts`: as stored, with its timestamp) against a bound or seek key
    /// (given without a timestamp).
    #[inline]
    fn cmp_bound(&self, k: &[u8], has_ts: bool, bound: &[u8]) -> Ordering {
        if self.ts_sz == 0 {
            self.icmp.compare_user(k, bound)
        } else {
            self.icmp.compare_without_ts(k, has_ts, bound, false)
        }
    }
    /// The version's timestamp is within what the read sees: at most the read timestamp, and
    /// with `iter_start_ts` at least that.
    fn ts_visible(&self, uk: &[u8]) -> bool {
        let ts = &uk[uk.len().saturating_sub(self.ts_sz)..];
        let c = self.icmp.user_comparator();
        if c.compare_timestamp(ts, &self.read_ts) == Ordering::Greater {
            return false;
        }
        match &self.start_ts {
            Some(s) => c.compare_timestamp(ts, s) != Ordering::Less,
            None => true,
        }
    }
    /// The entry is visible to the read: in its snapshot and, with timestamps, its time range.
    #[inline]
    fn visible(&self, uk: &[u8], seq: u64) -> bool {
        seq <= self.seq && (self.ts_sz == 0 || self.ts_visible(uk))
    }
    /// Append the seek key for user key `k` (given without a timestamp): with timestamps, `k`
    /// at the read timestamp (`min_ts`: at the oldest timestamp, for backward seeks).
    fn append_seek_key(&mut self, k: &[u8], seq: u64, t: u8, min_ts: bool) {
        self.scratch.extend_from_slice(k);
        if self.ts_sz > 0 {
            if min_ts {
                self.scratch.resize(self.scratch.len() + self.ts_sz, 0);
            } else {
                self.scratch.extend_from_slice(&self.read_ts);
            }
        }
        self.scratch
            .extend_from_slice(&crate::key::pack_trailer(seq, t).to_le_bytes());
    }
    /// With `iter_start_ts`: land on the first visible version at or after the inner position
    /// (forward) or at or before it (backward). Each version is an entry of its own.
    fn all_versions(&mut self, forward: bool) {
        self.merged = false;
        while self.inner.valid() {
            let pk = match parse_internal_key(self.inner.key()) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if forward && self.above_upper(pk.user_key) || !forward && self.below_lower(pk.user_key) {
                break;
            }
            if self.visible(pk.user_key, pk.seq) {
                self.valid = true;
                return;
            }
            if forward {
                self.inner.next();
            } else {
                self.inner.prev();
            }
        }
        self.valid = false;
    }
    /// Makes the iterator read the DB's latest state (the memtables and files as they are now,
    /// the newest sequence number; a snapshot it was made with is no longer used, though not
    /// released), keeping its other read options. The iterator is unpositioned afterwards:
    /// seek before use. InvalidArgument if the DB has been closed or the column family dropped.
    pub fn refresh(&mut self) -> Result<()> {
        let (db, cf) = match (self.origin.0.upgrade(), self.origin.1.upgrade()) {
            (Some(db), Some(cf)) if !db.shutting_down.load(std::sync::atomic::Ordering::Acquire) => (db, cf),
            _ => return Err(Error::invalid("refresh: the iterator's database has been closed")),
        };
        if cf.is_dropped() {
            return Err(Error::invalid("refresh: the iterator's column family has been dropped"));
        }
        *self = new_raw_iterator(&db, &cf, self.origin.2.clone());
        Ok(())
    }
    /// The first error met, if any (the iterator is then invalid).
    pub fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.inner.status()
    }

    fn above_upper(&self, uk: &[u8]) -> bool {
        self.upper
            .as_deref()
            .map(|u| self.cmp_bound(uk, true, u) != Ordering::Less)
            .unwrap_or(false)
    }
    /// With `prefix_same_as_start`: `uk` is outside the prefix the iteration started in.
    #[inline]
    fn outside_prefix(&self, uk: &[u8]) -> bool {
        match (&self.cur_prefix, &self.prefix) {
            (Some(cur), Some(p)) => {
                let uk = &uk[..uk.len().saturating_sub(self.ts_sz)];
                p.extractor().transform(uk) != cur.as_slice()
            }
            _ => false,
        }
    }

    /// Start a positioning call: the prefix it stays in (`prefix_same_as_start`) is `target`'s,
    /// or, with no target, the prefix of the key it lands on (see `adopt_prefix`).
    fn start_prefix(&mut self, target: Option<&[u8]>) {
        self.cur_prefix = match (self.same_prefix, target, &self.prefix) {
            (true, Some(t), Some(p)) => Some(p.extractor().transform(t).to_vec()),
            _ => None,
        };
    }

    /// Run a user seek on the merged sources with prefix filtering armed (`prefix.rs`).
    /// Disarmed on the way out even when the seek panics (a user comparator or extractor):
    /// left armed, the iterator's internal seeks would skip sources by their filters.
    fn armed(&mut self, seek: impl FnOnce(&mut MergingIterator)) {
        struct Disarm<'a>(Option<&'a PrefixSeek>);
        impl Drop for Disarm<'_> {
            fn drop(&mut self) {
                if let Some(p) = self.0 {
                    p.arm(false);
                }
            }
        }
        let guard = Disarm(self.prefix.as_deref());
        if let Some(p) = guard.0 {
            p.arm(true);
        }
        seek(&mut self.inner);
    }

    /// After `seek_to_first` / `seek_to_last`: stay in the prefix of the key found.
    fn adopt_prefix(&mut self) {
        if self.same_prefix && self.valid {
            if let (Some(p), Some(k)) = (&self.prefix, self.key()) {
                self.cur_prefix = Some(p.extractor().transform(k).to_vec());
            }
        }
    }

    fn below_lower(&self, uk: &[u8]) -> bool {
        self.lower
            .as_deref()
            .map(|l| self.cmp_bound(uk, true, l) == Ordering::Less)
            .unwrap_or(false)
    }

    /// Start a positioning call: invalid until it lands. The user comparator, prefix extractor
    /// and merge operator run below; if one panics and the panic is caught, the iterator is
    /// left invalid rather than pointing at a half-moved `inner`.
    fn unposition(&mut self) {
        self.valid = false;
        self.entity = None;
        self.blob_value = None;
    }

    fn set_error(&mut self, e: Error) {
        self.err = Some(e);
        self.valid = false;
    }

    /// The type an entry counts as: a deletion when a visible range tombstone covers it.
    #[inline]
    fn effective_type(&self, uk: &[u8], seq: u64, t: u8) -> u8 {
        if !self.tombs.is_empty() && crate::range_del::max_covering(&self.tombs, &self.icmp, uk, self.seq) > seq {
            vt::DELETION
        } else {
            t
        }
    }

    /// Forward: skip to the next visible, live entry (skipping `saved_key` when `skipping`).
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        self.merged = false;
        if self.start_ts.is_some() {
            return self.all_versions(true);
        }
        while self.inner.valid() {
            let ikey = self.inner.key();
            let pk = match parse_internal_key(ikey) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.above_upper(pk.user_key) || self.outside_prefix(pk.user_key) {
                break;
            }
            if self.visible(pk.user_key, pk.seq) {
                let skip = skipping && self.cmp_keys(pk.user_key, &self.saved_key) != Ordering::Greater;
                match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                    vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => {
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(pk.user_key);
                        skipping = true;
                        self.deletes_skipped += 1;
                    }
                    vt::VALUE | vt::BLOB_INDEX => {
                        if !skip {
                            if pk.vtype == vt::BLOB_INDEX {
                                match self.blob_cache.resolve(pk.user_key, self.inner.value(), true) {
                                    Ok(v) => self.blob_value = Some(v),
                                    Err(e) => return self.set_error(e),
                                }
                            }
                            self.valid = true;
                            self.saved_key.clear();
                            return;
                        }
                        self.skipped += 1;
                    }
                    vt::WIDE_COLUMN_ENTITY => {
                        if !skip {
                            let e = self.inner.value().to_vec();
                            self.valid = self.set_entity(e);
                            self.saved_key.clear();
                            return;
                        }
                        self.skipped += 1;
                    }
                    vt::MERGE => {
                        if !skip {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(pk.user_key);
                            return self.merge_forward();
                        }
                    }
                    t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
                }
            } else {
                self.skipped += 1;
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Forward on the newest operand of `saved_key`: collect the operands down to a base and
    /// merge them into `saved_value`.
    fn merge_forward(&mut self) {
        self.operands.clear();
        self.operands.push(self.inner.value().to_vec());
        self.inner.next();
        let mut base: Option<Vec<u8>> = None;
        let mut base_entity = false;
        while self.inner.valid() {
            let pk = match parse_internal_key(self.inner.key()) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.cmp_keys(pk.user_key, &self.saved_key) != Ordering::Equal {
                break;
            }
            if !self.visible(pk.user_key, pk.seq) {
                self.inner.next();
                continue;
            }
            match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                vt::MERGE => self.operands.push(self.inner.value().to_vec()),
                vt::BLOB_INDEX => {
                    match self.blob_cache.resolve(pk.user_key, self.inner.value(), true) {
                        Ok(v) => base = Some(v),
                        Err(e) => return self.set_error(e),
                    }
                    break;
                }
                vt::VALUE | vt::WIDE_COLUMN_ENTITY => {
                    base = Some(self.inner.value().to_vec());
                    base_entity = pk.vtype == vt::WIDE_COLUMN_ENTITY;
                    break;
                }
                vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => break,
                t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
            }
            self.inner.next();
        }
        match base {
            Some(e) if base_entity => self.resolve_merge_entity(e, false),
            _ => self.resolve_merge(base.as_deref(), false),
        }
        self.merged = self.valid;
    }

    /// Merge `operands` (newest first when `oldest_first` is false) with `base` into
    /// `saved_value`; sets `valid` (or the error).
    fn resolve_merge(&mut self, base: Option<&[u8]>, oldest_first: bool) {
        let Some(op) = self.merge_op.clone() else {
            return self.set_error(Error::invalid(
                "the database holds merge operands but no merge operator is configured (Options::merge_operator)",
            ));
        };
        let mut ops: Vec<&[u8]> = self.operands.iter().map(|v| v.as_slice()).collect();
        if !oldest_first {
            ops.reverse();
        }
        match op.full_merge(&self.saved_key, base, &ops) {
            Some(v) => {
                self.saved_value = v;
                self.valid = true;
            }
            None => self.set_error(Error::corrupt(format!(
                "Merge operator failed (operator {})",
                op.name()
            ))),
        }
    }

    /// Reverse: find the newest visible entry of the previous user key.
    fn find_prev_user_entry(&mut self) {
        self.merged = false;
        if self.start_ts.is_some() {
            return self.all_versions(false);
        }
        let mut vtype = vt::DELETION;
        let mut has_base = false;
        let mut base_entity = false;
        let mut base_blob = false;
        self.operands.clear();
        while self.inner.valid() {
            let ikey = self.inner.key();
            let pk = match parse_internal_key(ikey) {
                Ok(p) => p,
                Err(e) => return self.set_error(e),
            };
            if self.below_lower(pk.user_key) || self.outside_prefix(pk.user_key) {
                break;
            }
            if self.visible(pk.user_key, pk.seq) {
                if vtype != vt::DELETION && self.cmp_keys(pk.user_key, &self.saved_key) == Ordering::Less {
                    break;
                }
                match self.effective_type(pk.user_key, pk.seq, pk.vtype) {
                    vt::DELETION | vt::SINGLE_DELETION | vt::DELETION_WITH_TIMESTAMP => {
                        vtype = vt::DELETION;
                        has_base = false;
                        base_entity = false;
                        base_blob = false;
                        self.operands.clear();
                        self.saved_key.clear();
                        self.saved_value.clear();
                    }
                    vt::VALUE | vt::WIDE_COLUMN_ENTITY | vt::BLOB_INDEX => {
                        vtype = vt::VALUE;
                        has_base = true;
                        base_entity = pk.vtype == vt::WIDE_COLUMN_ENTITY;
                        base_blob = pk.vtype == vt::BLOB_INDEX;
                        self.operands.clear();
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(pk.user_key);
                        self.saved_value.clear();
                        self.saved_value.extend_from_slice(self.inner.value());
                    }
                    vt::MERGE => {
                        if vtype == vt::DELETION {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(pk.user_key);
                        }
                        self.operands.push(self.inner.value().to_vec());
                        vtype = vt::MERGE;
                    }
                    t => return self.set_error(Error::NotSupported(format!("value type {t:#x} in iteration"))),
                }
            }
            self.inner.prev();
        }
        if base_blob && vtype != vt::DELETION {
            // The value is the blob the index (in `saved_value`) points to.
            match self.blob_cache.resolve(&self.saved_key, &self.saved_value, true) {
                Ok(v) => self.saved_value = v,
                Err(e) => return self.set_error(e),
            }
        }
        if vtype == vt::DELETION {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.dir = Dir::Forward;
        } else if vtype == vt::MERGE {
            let base = if has_base {
                Some(std::mem::take(&mut self.saved_value))
            } else {
                None
            };
            match base {
                Some(e) if base_entity => self.resolve_merge_entity(e, true),
                _ => self.resolve_merge(base.as_deref(), true),
            }
        } else if base_entity {
            let e = self.saved_value.clone();
            self.valid = self.set_entity(e);
        } else {
            self.valid = true;
        }
    }

    /// Positions at the first key (at or after the lower bound, if one is set).
    pub fn seek_to_first(&mut self) {
        self.unposition();
        if self.err.is_some() {
            return;
        }
        if let Some(l) = self.lower.clone() {
            return self.seek(l);
        }
        self.count_op(Ticker::NumberDbSeek);
        self.dir = Dir::Forward;
        self.saved_value.clear();
        self.start_prefix(None);
        self.inner.seek_to_first();
        self.find_next_user_entry(false);
        self.adopt_prefix();
        self.check_inner();
    }

    /// Positions at the last key (before the upper bound, if one is set).
    pub fn seek_to_last(&mut self) {
        self.unposition();
        if self.err.is_some() {
            return;
        }
        self.count_op(Ticker::NumberDbSeek);
        self.dir = Dir::Reverse;
        self.saved_value.clear();
        self.start_prefix(None);
        match self.upper.clone() {
            Some(u) => {
                self.scratch.clear();
                self.append_seek_key(&u, MAX_SEQUENCE, vt::FOR_SEEK, false);
                let t = std::mem::take(&mut self.scratch);
                self.inner.seek(&t);
                self.scratch = t;
                if self.inner.valid() {
                    self.inner.prev();
                } else if self.inner.status().is_ok() {
                    self.inner.seek_to_last();
                }
            }
            None => self.inner.seek_to_last(),
        }
        self.find_prev_user_entry();
        self.adopt_prefix();
        self.check_inner();
    }

    /// Position at the first key >= `key` (and >= the lower bound).
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        self.unposition();
        if self.err.is_some() {
            return;
        }
        let stats = self.stats.clone();
        let _watch = StopWatch::start(&stats, Histogram::DbSeek);
        self.count_op(Ticker::NumberDbSeek);
        let mut k = key.as_ref();
        self.start_prefix(Some(k));
        let lower = self.lower.clone();
        if let Some(l) = lower.as_deref() {
            if self.cmp_bound(k, false, l) == Ordering::Less {
                k = l;
            }
        }
        self.dir = Dir::Forward;
        self.saved_value.clear();
        self.scratch.clear();
        self.append_seek_key(k, self.seq, vt::FOR_SEEK, false);
        let t = std::mem::take(&mut self.scratch);
        // Only this seek (and `seek_for_prev`) may skip sources by their prefix blooms
        // (`prefix.rs`).
        self.armed(|inner| inner.seek(&t));
        self.scratch = t;
        self.find_next_user_entry(false);
        self.check_inner();
    }

    /// Position at the last key <= `key` (and below the upper bound).
    pub fn seek_for_prev(&mut self, key: impl AsRef<[u8]>) {
        self.unposition();
        if self.err.is_some() {
            return;
        }
        let k = key.as_ref();
        if self
            .upper
            .as_deref()
            .is_some_and(|u| self.cmp_bound(k, false, u) != Ordering::Less)
        {
            return self.seek_to_last();
        }
        let stats = self.stats.clone();
        let _watch = StopWatch::start(&stats, Histogram::DbSeek);
        self.count_op(Ticker::NumberDbSeek);
        self.start_prefix(Some(k));
        self.dir = Dir::Reverse;
        self.saved_value.clear();
        self.scratch.clear();
        self.append_seek_key(k, 0, 0, true);
        let t = std::mem::take(&mut self.scratch);
        // Filtered by prefix blooms like `seek` (RocksDB's SeekForPrev in prefix mode), but not
        // in `auto_prefix_mode`: its upper bound keeps a forward seek inside one prefix, while a
        // backward one goes on below it (RocksDB never filters backward seeks there either).
        if self.prefix.as_ref().is_some_and(|p| p.filters_backward_seeks()) {
            self.armed(|inner| inner.seek_for_prev(&t));
        } else {
            self.inner.seek_for_prev(&t);
        }
        self.scratch = t;
        self.find_prev_user_entry();
        self.check_inner();
    }

    /// Moves to the next key; does nothing if not [`valid`](Self::valid).
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        self.unposition();
        self.count_op(Ticker::NumberDbNext);
        if self.start_ts.is_some() {
            self.dir = Dir::Forward;
            self.inner.next();
            self.all_versions(true);
            return self.check_inner();
        }
        if self.dir == Dir::Reverse {
            self.dir = Dir::Forward;
            // inner is just before the entries of saved_key: step into them, then skip them.
            if !self.inner.valid() {
                if let Err(e) = self.inner.status() {
                    self.set_error(e);
                    return;
                }
                self.inner.seek_to_first();
            } else {
                self.inner.next();
            }
            if !self.inner.valid() {
                self.valid = false;
                self.saved_key.clear();
                self.check_inner();
                return;
            }
        } else if !self.merged {
            let uk = user_key(self.inner.key());
            self.saved_key.clear();
            self.saved_key.extend_from_slice(uk);
            self.inner.next();
        }
        self.find_next_user_entry(true);
        self.check_inner();
    }

    /// Moves to the previous key; does nothing if not [`valid`](Self::valid).
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        self.unposition();
        self.count_op(Ticker::NumberDbPrev);
        if self.start_ts.is_some() {
            self.dir = Dir::Reverse;
            self.inner.prev();
            self.all_versions(false);
            return self.check_inner();
        }
        if self.dir == Dir::Forward {
            // Step back past every entry of the current user key.
            if self.merged {
                // inner is past the key: return to its first entry
                self.scratch.clear();
                append_internal_key(&mut self.scratch, &self.saved_key, MAX_SEQUENCE, vt::FOR_SEEK);
                let t = std::mem::take(&mut self.scratch);
                self.inner.seek(&t);
                self.scratch = t;
                self.merged = false;
            } else {
                self.saved_key.clear();
                self.saved_key.extend_from_slice(user_key(self.inner.key()));
            }
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    self.check_inner();
                    return;
                }
                if self.cmp_keys(user_key(self.inner.key()), &self.saved_key) == Ordering::Less {
                    break;
                }
            }
            self.dir = Dir::Reverse;
        }
        self.find_prev_user_entry();
        self.check_inner();
    }

    /// Count a positioning call; its outcome is counted by [`check_inner`](Self::check_inner),
    /// which every positioning call ends with.
    #[inline]
    fn count_op(&mut self, t: Ticker) {
        if let Some(s) = &self.stats {
            s.tick(t, 1);
        }
        self.last_op = t;
    }

    /// After a positioning call: found-counts and bytes (statistics), skipped entries (perf).
    #[inline]
    fn count_result(&mut self) {
        if let Some(s) = self.stats.as_ref().and_then(|s| s.local()) {
            if self.valid {
                let found = match self.last_op {
                    Ticker::NumberDbNext => Ticker::NumberDbNextFound,
                    Ticker::NumberDbPrev => Ticker::NumberDbPrevFound,
                    _ => Ticker::NumberDbSeekFound,
                };
                s.tick(found, 1);
                let n = self.key().map_or(0, <[u8]>::len) + self.value().map_or(0, <[u8]>::len);
                s.tick(Ticker::IterBytesRead, n as u64);
            }
        }
        if crate::perf_context::counting() {
            if self.valid {
                let n = self.key().map_or(0, <[u8]>::len) + self.value().map_or(0, <[u8]>::len);
                crate::perf_context::add_unchecked(perf::ITER_READ_BYTES, n as u64);
            }
            crate::perf_context::add_unchecked(perf::INTERNAL_KEY_SKIPPED_COUNT, self.skipped);
            crate::perf_context::add_unchecked(perf::INTERNAL_DELETE_SKIPPED_COUNT, self.deletes_skipped);
        }
        self.skipped = 0;
        self.deletes_skipped = 0;
    }

    fn check_inner(&mut self) {
        self.count_result();
        if self.err.is_none() {
            if let Err(e) = self.inner.status() {
                self.set_error(e);
            }
        }
    }
}

/// Where a [`DBIterator`] starts.
#[derive(Debug, Clone, Copy)]
pub enum IteratorMode<'a> {
    /// From the first key, forward.
    Start,
    /// From the last key, backward.
    End,
    /// From the first key at or after (forward) or the last key at or before (reverse) the given key.
    From(&'a [u8], Direction),
}

/// The direction a [`DBIterator`] moves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Reverse,
}

/// A Rust iterator over `(key, value)` pairs, as the `rocksdb` crate's `DBIterator`.
pub struct DBIterator {
    raw: Option<DBRawIterator>,
    direction: Direction,
    done: bool,
    /// Yielded first (an iterator that could not be made, e.g. through a closed DB's snapshot).
    err: Option<Error>,
}

impl DBIterator {
    pub(crate) fn new(mut raw: DBRawIterator, mode: IteratorMode<'_>) -> DBIterator {
        let direction = Self::position(&mut raw, mode);
        DBIterator {
            raw: Some(raw),
            direction,
            done: false,
            err: None,
        }
    }

    fn position(raw: &mut DBRawIterator, mode: IteratorMode<'_>) -> Direction {
        match mode {
            IteratorMode::Start => {
                raw.seek_to_first();
                Direction::Forward
            }
            IteratorMode::End => {
                raw.seek_to_last();
                Direction::Reverse
            }
            IteratorMode::From(k, Direction::Forward) => {
                raw.seek(k);
                Direction::Forward
            }
            IteratorMode::From(k, Direction::Reverse) => {
                raw.seek_for_prev(k);
                Direction::Reverse
            }
        }
    }

    /// Starts over from `mode`: seeks again and yields from there, also after the iterator
    /// had ended. An iterator that could not be made keeps yielding nothing after its error.
    pub fn set_mode(&mut self, mode: IteratorMode<'_>) {
        if let Some(raw) = self.raw.as_mut() {
            self.direction = Self::position(raw, mode);
            self.done = false;
        }
    }

    /// [`DBRawIterator::refresh`] (the DB's latest state, without the snapshot), then
    /// [`set_mode`](Self::set_mode)`(mode)`. On an error the iterator is left as it was.
    pub fn refresh(&mut self, mode: IteratorMode<'_>) -> Result<()> {
        match self.raw.as_mut() {
            Some(raw) => raw.refresh()?,
            None => return Err(Error::invalid("refresh: the iterator could not be made")),
        }
        self.set_mode(mode);
        Ok(())
    }

    /// An iterator that yields `e` and ends.
    pub(crate) fn failed(e: Error) -> DBIterator {
        DBIterator {
            raw: None,
            direction: Direction::Forward,
            done: false,
            err: Some(e),
        }
    }
}

impl Iterator for DBIterator {
    type Item = Result<(Box<[u8]>, Box<[u8]>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.err.take() {
            self.done = true;
            return Some(Err(e));
        }
        let raw = self.raw.as_mut()?;
        if !raw.valid() {
            self.done = true;
            return match raw.status() {
                Ok(()) => None,
                Err(e) => Some(Err(e)),
            };
        }
        let item = (
            Box::<[u8]>::from(raw.key().unwrap_or(&[])),
            Box::<[u8]>::from(raw.value().unwrap_or(&[])),
        );
        match self.direction {
            Direction::Forward => raw.next(),
            Direction::Reverse => raw.prev(),
        }
        Some(Ok(item))
    }
}
