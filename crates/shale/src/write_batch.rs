//! `WriteBatch`: an atomic group of updates, encoded exactly as RocksDB encodes it in the WAL
//! (`db/write_batch.cc`):
//!
//! ```text
//! batch  := sequence fixed64 | count fixed32 | record*
//! record := tag u8 | fields
//! ```

use std::fmt;

use crate::coding::{decode_fixed32, decode_fixed64, put_varint32, Reader};
use crate::error::{Error, Result};

/// Size of the batch header (sequence + count).
pub(crate) const HEADER: usize = 12;

/// WriteBatch record tags (`ValueType` values used in the WAL).
pub(crate) mod tag {
    pub const DELETION: u8 = 0x00;
    pub const VALUE: u8 = 0x01;
    pub const MERGE: u8 = 0x02;
    pub const LOG_DATA: u8 = 0x03;
    pub const CF_DELETION: u8 = 0x04;
    pub const CF_VALUE: u8 = 0x05;
    pub const CF_MERGE: u8 = 0x06;
    pub const SINGLE_DELETION: u8 = 0x07;
    pub const CF_SINGLE_DELETION: u8 = 0x08;
    pub const BEGIN_PREPARE_XID: u8 = 0x09;
    pub const END_PREPARE_XID: u8 = 0x0A;
    pub const COMMIT_XID: u8 = 0x0B;
    pub const ROLLBACK_XID: u8 = 0x0C;
    pub const NOOP: u8 = 0x0D;
    pub const CF_RANGE_DELETION: u8 = 0x0E;
    pub const RANGE_DELETION: u8 = 0x0F;
    pub const CF_BLOB_INDEX: u8 = 0x10;
    pub const BLOB_INDEX: u8 = 0x11;
    pub const BEGIN_PERSISTED_PREPARE_XID: u8 = 0x12;
    pub const BEGIN_UNPREPARE_XID: u8 = 0x13;
    pub const COMMIT_XID_AND_TIMESTAMP: u8 = 0x15;
    pub const WIDE_COLUMN_ENTITY: u8 = 0x16;
    pub const CF_WIDE_COLUMN_ENTITY: u8 = 0x17;
    pub const TIMED_PUT: u8 = 0x18;
    pub const CF_TIMED_PUT: u8 = 0x19;
}

/// The batch `DB::write` takes: [`WriteBatchWithTransaction`] for a plain (non-transaction) DB.
pub type WriteBatch = WriteBatchWithTransaction<false>;

/// An atomic group of writes (puts, deletes, merges, range deletions), applied by `DB::write`.
///
/// The in-memory representation is RocksDB's WAL encoding, so [`data`](Self::data) is exactly
/// the payload of the WAL record. `TRANSACTION` only selects the API, as in the `rocksdb`
/// crate: `false` ([`WriteBatch`]) is the batch of a plain DB and adds the range deletions;
/// `true` is the one the crate's transaction DBs take. The encoding is the same.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatchWithTransaction<const TRANSACTION: bool> {
    rep: Vec<u8>,
    /// Set when a key or value too large to store was given (that op was not recorded): the
    /// batch is then refused by `DB::write` with InvalidArgument, before anything is written.
    oversize: Option<&'static str>,
    /// Set by [`from_data`](Self::from_data) when the bytes given are not a well-formed batch:
    /// `DB::write` then refuses the batch with Corruption.
    malformed: Option<&'static str>,
    /// Ordinals (0-based, among counted records) of the records written by a `_with_ts` call:
    /// `DB::write` checks that exactly these go to families with timestamps.
    ts_recs: Vec<u32>,
    /// A `_with_ts` call given a timestamp its family cannot take: `DB::write` refuses the
    /// batch with this InvalidArgument.
    ts_err: Option<String>,
}

impl<const T: bool> Default for WriteBatchWithTransaction<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const T: bool> fmt::Debug for WriteBatchWithTransaction<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("sequence", &self.sequence())
            .field("count", &self.count())
            .field("size_in_bytes", &self.rep.len())
            .finish()
    }
}

/// Why a record with a `klen`-byte key and a `vlen`-byte value cannot be stored, or `None` if it
/// can. RocksDB rejects a key or value longer than `u32::MAX` (its length is a varint32); Shale's
/// memtable entry (varint32 internal-key length, the key, an 8-byte trailer, varint32 value
/// length, the value) must itself stay below 4 GiB, so a record is checked as a whole too.
/// Writes check this before anything reaches the WAL; WAL replay checks it again.
#[inline]
pub(crate) fn oversize_reason(klen: usize, vlen: usize) -> Option<&'static str> {
    const MAX: u64 = u32::MAX as u64;
    let (k, v) = (klen as u64, vlen as u64);
    if k > MAX - 8 {
        return Some("key too large (a key must be shorter than 4 GiB - 8 bytes)");
    }
    if v > MAX {
        return Some("value too large (a value must be shorter than 4 GiB)");
    }
    let varint = |n: u64| {
        if n < 1 << 7 {
            1
        } else if n < 1 << 14 {
            2
        } else if n < 1 << 21 {
            3
        } else if n < 1 << 28 {
            4
        } else {
            5
        }
    };
    if varint(k + 8) + k + 8 + varint(v) + v > MAX {
        return Some("key and value too large together (a record must be shorter than 4 GiB)");
    }
    None
}

/// The operations that take a user-defined timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TsOp {
    Put,
    Merge,
    Delete,
    SingleDelete,
}

impl TsOp {
    pub(crate) fn name(self) -> &'static str {
        match self {
            TsOp::Put => "put_with_ts",
            TsOp::Merge => "merge_with_ts",
            TsOp::Delete => "delete_with_ts",
            TsOp::SingleDelete => "single_delete_with_ts",
        }
    }
}

impl<const T: bool> WriteBatchWithTransaction<T> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::from_rep(vec![0u8; HEADER])
    }

    fn from_rep(rep: Vec<u8>) -> Self {
        WriteBatchWithTransaction {
            rep,
            oversize: None,
            malformed: None,
            ts_recs: Vec::new(),
            ts_err: None,
        }
    }

    /// An empty batch with room for `bytes` bytes of records.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER + bytes);
        rep.resize(HEADER, 0);
        Self::from_rep(rep)
    }

    /// An empty batch with room for `capacity_bytes` bytes in all (the `rocksdb` crate's name;
    /// the capacity is only a hint, the batch grows past it).
    pub fn with_capacity_bytes(capacity_bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(capacity_bytes.max(HEADER));
        rep.resize(HEADER, 0);
        Self::from_rep(rep)
    }

    /// A batch holding a copy of `data`, an encoding as [`data`](Self::data) returns it (or as
    /// RocksDB writes a batch into its WAL). Never fails: bytes that are not a well-formed batch
    /// (shorter than the 12-byte header, a record that does not decode, a count that does not
    /// match the records) give a batch that [`iterate`](Self::iterate) reads as far as it
    /// decodes and that `DB::write` refuses with Corruption. Bytes shorter than the header are
    /// kept as an empty batch.
    pub fn from_data(data: &[u8]) -> Self {
        if data.len() < HEADER {
            let mut b = Self::new();
            b.malformed = Some("malformed WriteBatch (too small)");
            return b;
        }
        let mut b = Self::from_rep(data.to_vec());
        b.malformed = b.encoding_problem();
        b
    }

    /// Why the records do not match the encoding (one does not decode, or the header's count
    /// is not the number of counted records), or `None`.
    fn encoding_problem(&self) -> Option<&'static str> {
        let mut found = 0u32;
        for r in self.records() {
            match r {
                Ok(r) if r.is_counted() => found = found.wrapping_add(1),
                Ok(_) => {}
                Err(_) => return Some("malformed WriteBatch (a record does not decode)"),
            }
        }
        (found != self.count()).then_some("WriteBatch has wrong count")
    }

    /// Calls `callbacks` with the batch's records in order: [`put`](WriteBatchIterator::put)
    /// for each put and [`delete`](WriteBatchIterator::delete) for each delete of the default
    /// column family. As RocksDB's handler does, single deletes and merges of the default
    /// family and log data are skipped, and the walk stops (silently) at the first record the
    /// trait has no callback for: a record of another column family, a range deletion, a
    /// transaction marker, a blob index, a wide-column entity or a timed put; also at a record
    /// that does not decode.
    pub fn iterate<I: WriteBatchIterator + ?Sized>(&self, callbacks: &mut I) {
        for r in self.records() {
            match r {
                Ok(BatchRecord::Put { cf: 0, key, value }) => callbacks.put(key, value),
                Ok(BatchRecord::Delete { cf: 0, key }) => callbacks.delete(key),
                Ok(BatchRecord::SingleDelete { cf: 0, .. } | BatchRecord::Merge { cf: 0, .. })
                | Ok(BatchRecord::LogData(_)) => {}
                _ => return,
            }
        }
    }

    /// Calls `callbacks` with the batch's puts, deletes and merges in order, each with its
    /// column family id (0 for the default family). Log data and single deletes of the
    /// default family are skipped; the walk stops (silently) at the first other record: a
    /// single delete of another family, a range deletion, a transaction marker, a blob index,
    /// a wide-column entity, a timed put, or a record that does not decode (RocksDB's
    /// handler does the same).
    pub fn iterate_cf<I: WriteBatchIteratorCf + ?Sized>(&self, callbacks: &mut I) {
        for r in self.records() {
            match r {
                Ok(BatchRecord::Put { cf, key, value }) => callbacks.put_cf(cf, key, value),
                Ok(BatchRecord::Delete { cf, key }) => callbacks.delete_cf(cf, key),
                Ok(BatchRecord::Merge { cf, key, value }) => callbacks.merge_cf(cf, key, value),
                Ok(BatchRecord::SingleDelete { cf: 0, .. } | BatchRecord::LogData(_)) => {}
                _ => return,
            }
        }
    }

    fn bump_count(&mut self) {
        let c = self.count().wrapping_add(1);
        self.set_count(c);
    }

    fn push_kv(&mut self, t: u8, k: &[u8], v: &[u8]) {
        self.push_kv_cf(t, 0, k, v)
    }

    /// A record for family `cf`: the tag alone for the default family, else the family tag
    /// (`t - 1` for the tags RocksDB pairs that way; range deletion has its own) and the id.
    fn push_kv_cf(&mut self, t: u8, cf: u32, k: &[u8], v: &[u8]) {
        if let Some(why) = oversize_reason(k.len(), v.len()) {
            self.oversize.get_or_insert(why);
            return;
        }
        self.rep.reserve(1 + 15 + k.len() + v.len());
        self.push_tag(t, cf);
        put_varint32(&mut self.rep, k.len() as u32);
        self.rep.extend_from_slice(k);
        put_varint32(&mut self.rep, v.len() as u32);
        self.rep.extend_from_slice(v);
    }

    fn push_k(&mut self, t: u8, k: &[u8]) {
        self.push_k_cf(t, 0, k)
    }

    fn push_tag(&mut self, t: u8, cf: u32) {
        if cf == 0 {
            self.rep.push(t);
            return;
        }
        let cft = match t {
            tag::VALUE => tag::CF_VALUE,
            tag::DELETION => tag::CF_DELETION,
            tag::SINGLE_DELETION => tag::CF_SINGLE_DELETION,
            tag::MERGE => tag::CF_MERGE,
            tag::RANGE_DELETION => tag::CF_RANGE_DELETION,
            tag::WIDE_COLUMN_ENTITY => tag::CF_WIDE_COLUMN_ENTITY,
            other => other,
        };
        self.rep.push(cft);
        put_varint32(&mut self.rep, cf);
    }

    fn push_k_cf(&mut self, t: u8, cf: u32, k: &[u8]) {
        if let Some(why) = oversize_reason(k.len(), 0) {
            self.oversize.get_or_insert(why);
            return;
        }
        self.rep.reserve(1 + 10 + k.len());
        self.push_tag(t, cf);
        put_varint32(&mut self.rep, k.len() as u32);
        self.rep.extend_from_slice(k);
    }

    /// Insert `key` → `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let before = self.rep.len();
        self.push_kv(tag::VALUE, key.as_ref(), value.as_ref());
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    /// Delete `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        let before = self.rep.len();
        self.push_k(tag::DELETION, key.as_ref());
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    /// Delete `key`, which must have been put at most once since its last delete.
    pub fn single_delete(&mut self, key: impl AsRef<[u8]>) {
        let before = self.rep.len();
        self.push_k(tag::SINGLE_DELETION, key.as_ref());
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    /// Merge `value` into `key` with the DB's merge operator.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let before = self.rep.len();
        self.push_kv(tag::MERGE, key.as_ref(), value.as_ref());
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    fn counted_kv(&mut self, t: u8, cf: u32, k: &[u8], v: &[u8]) {
        let before = self.rep.len();
        self.push_kv_cf(t, cf, k, v);
        if self.rep.len() != before {
            self.bump_count();
        }
    }
    fn counted_k(&mut self, t: u8, cf: u32, k: &[u8]) {
        let before = self.rep.len();
        self.push_k_cf(t, cf, k);
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    /// A record written with a user-defined timestamp: `key || ts` under `tag` for family `cf`
    /// whose timestamps are `ts_sz` bytes (0: none, which records the misuse for `DB::write`).
    /// `value` is `None` for the deletions.
    pub(crate) fn with_ts_cf_id(&mut self, t: TsOp, cf: u32, ts_sz: usize, key: &[u8], ts: &[u8], value: &[u8]) {
        if let Err(e) = crate::user_timestamp::check_ts(ts_sz, ts, t.name()) {
            if self.ts_err.is_none() {
                self.ts_err = Some(e.to_string());
            }
            return;
        }
        let k = crate::user_timestamp::key_with_ts(key, ts);
        let ordinal = self.count();
        match t {
            TsOp::Put => self.counted_kv(tag::VALUE, cf, &k, value),
            TsOp::Merge => self.counted_kv(tag::MERGE, cf, &k, value),
            TsOp::Delete => self.counted_k(tag::DELETION, cf, &k),
            TsOp::SingleDelete => self.counted_k(tag::SINGLE_DELETION, cf, &k),
        }
        if self.count() != ordinal {
            self.ts_recs.push(ordinal);
        }
    }

    /// Whether the record with this ordinal was written with a timestamp.
    pub(crate) fn record_has_ts(&self, ordinal: u32) -> bool {
        self.ts_recs.binary_search(&ordinal).is_ok()
    }

    /// Whether any record was written with a timestamp.
    pub(crate) fn has_ts_records(&self) -> bool {
        !self.ts_recs.is_empty()
    }

    /// A record for the family with id `cf` (internal callers that hold only the id).
    pub(crate) fn put_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.counted_kv(tag::VALUE, cf, key, value);
    }
    pub(crate) fn delete_cf_id(&mut self, cf: u32, key: &[u8]) {
        self.counted_k(tag::DELETION, cf, key);
    }
    pub(crate) fn single_delete_cf_id(&mut self, cf: u32, key: &[u8]) {
        self.counted_k(tag::SINGLE_DELETION, cf, key);
    }
    pub(crate) fn merge_cf_id(&mut self, cf: u32, key: &[u8], value: &[u8]) {
        self.counted_kv(tag::MERGE, cf, key, value);
    }

    /// Insert `key` → the wide-column entity `columns` (RocksDB's `PutEntity`): `(name, value)`
    /// pairs in any order, stored sorted by name in RocksDB's entity encoding (tag `0x16`). A
    /// plain `get` of the key returns the value of the column with the empty name (the default
    /// column; an empty value without one), `DB::get_entity` returns every column.
    /// InvalidArgument (and nothing recorded) if two columns share a name; a key or entity too
    /// large to store makes `DB::write` refuse the batch, as for [`put`](Self::put).
    pub fn put_entity<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        key: impl AsRef<[u8]>,
        columns: &[(N, V)],
    ) -> Result<()> {
        self.put_entity_cf_id(0, key.as_ref(), columns)
    }

    pub(crate) fn put_entity_cf_id<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        cf: u32,
        key: &[u8],
        columns: &[(N, V)],
    ) -> Result<()> {
        let cols: Vec<(&[u8], &[u8])> = columns.iter().map(|(n, v)| (n.as_ref(), v.as_ref())).collect();
        let entity = crate::wide_columns::serialize(&cols)?;
        self.counted_kv(tag::WIDE_COLUMN_ENTITY, cf, key, &entity);
        Ok(())
    }

    /// An entity record with its encoding as given (replayed or copied records).
    pub(crate) fn put_entity_raw_cf_id(&mut self, cf: u32, key: &[u8], entity: &[u8]) {
        self.counted_kv(tag::WIDE_COLUMN_ENTITY, cf, key, entity);
    }

    /// Append a blob that is stored in the WAL but not applied to the DB (not counted).
    pub fn put_log_data(&mut self, blob: impl AsRef<[u8]>) {
        self.push_k(tag::LOG_DATA, blob.as_ref());
    }

    /// Remove every record.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER, 0);
        self.oversize = None;
        self.malformed = None;
        self.ts_recs.clear();
        self.ts_err = None;
    }

    /// Number of counted records (everything but `put_log_data`).
    pub fn len(&self) -> usize {
        self.count() as usize
    }

    /// True if there are no counted records.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Size of the encoded batch.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// The encoded batch (RocksDB's WAL record payload).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// InvalidArgument if a key or value too large to store was given to this batch; Corruption
    /// if it was made by [`from_data`](Self::from_data) from bytes that are not a batch.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(why) = self.oversize {
            return Err(Error::invalid(format!("WriteBatch: {why}")));
        }
        if let Some(e) = &self.ts_err {
            return Err(Error::invalid(format!("WriteBatch: {e}")));
        }
        match self.malformed {
            Some(why) => Err(Error::corrupt(why)),
            None => Ok(()),
        }
    }

    pub(crate) fn sequence(&self) -> u64 {
        decode_fixed64(&self.rep).unwrap_or(0)
    }

    pub(crate) fn count(&self) -> u32 {
        decode_fixed32(&self.rep[8..]).unwrap_or(0)
    }

    pub(crate) fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    /// The same batch as the plain-DB type (the encoding does not depend on `T`).
    pub(crate) fn into_plain(self) -> WriteBatch {
        WriteBatchWithTransaction {
            rep: self.rep,
            oversize: self.oversize,
            malformed: self.malformed,
            ts_recs: self.ts_recs,
            ts_err: self.ts_err,
        }
    }

    /// Every record, including the ones `handle` rejects.
    pub(crate) fn records(&self) -> Records<'_> {
        Records {
            r: Reader::new(&self.rep[HEADER..]),
            failed: false,
        }
    }
}

/// The range deletions, which the `rocksdb` crate offers only on the batch of a plain DB.
impl WriteBatch {
    /// Delete every key in `[begin, end)`.
    pub fn delete_range(&mut self, begin: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let before = self.rep.len();
        self.push_kv(tag::RANGE_DELETION, begin.as_ref(), end.as_ref());
        if self.rep.len() != before {
            self.bump_count();
        }
    }

    pub(crate) fn delete_range_cf_id(&mut self, cf: u32, begin: &[u8], end: &[u8]) {
        self.counted_kv(tag::RANGE_DELETION, cf, begin, end);
    }
}

impl WriteBatch {
    // ---- crate-internal -----------------------------------------------------------------------

    /// A batch from its encoding (a WAL record). Checks the header and that every record decodes
    /// and the counted records match the header's count.
    pub(crate) fn decode(data: Vec<u8>) -> Result<WriteBatch> {
        if data.len() < HEADER {
            return Err(Error::corrupt("malformed WriteBatch (too small)"));
        }
        let wb = WriteBatch::from_rep(data);
        let mut found = 0u32;
        for r in wb.records() {
            if r?.is_counted() {
                found = found.wrapping_add(1);
            }
        }
        if found != wb.count() {
            return Err(Error::corrupt("WriteBatch has wrong count"));
        }
        Ok(wb)
    }

    /// A batch from its encoding, checking only the header length (for dumps).
    pub(crate) fn from_data_unchecked(data: Vec<u8>) -> Result<WriteBatch> {
        if data.len() < HEADER {
            return Err(Error::corrupt("malformed WriteBatch (too small)"));
        }
        Ok(WriteBatch::from_rep(data))
    }

    pub(crate) fn set_sequence(&mut self, seq: u64) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    /// Append `other`'s records (group commit); counts add up.
    pub(crate) fn append_batch(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        let base = self.count();
        self.ts_recs.extend(other.ts_recs.iter().map(|&i| base.wrapping_add(i)));
        if self.ts_err.is_none() {
            self.ts_err.clone_from(&other.ts_err);
        }
        let c = self.count().wrapping_add(other.count());
        self.set_count(c);
        self.oversize = self.oversize.or(other.oversize);
        self.malformed = self.malformed.or(other.malformed);
    }

    /// The two-phase-commit form of `data` (RocksDB's `MarkEndPrepare` on a transaction's batch):
    /// the same header and records framed by `BEGIN_PREPARE_XID` (right after the header) and
    /// `END_PREPARE_XID` with the transaction's name. The count stays that of the data records.
    pub(crate) fn prepared(data: &WriteBatch, xid: &[u8]) -> WriteBatch {
        let mut rep = Vec::with_capacity(data.rep.len() + 2 + 5 + xid.len());
        rep.extend_from_slice(&data.rep[..HEADER]);
        rep.push(tag::BEGIN_PREPARE_XID);
        rep.extend_from_slice(&data.rep[HEADER..]);
        rep.push(tag::END_PREPARE_XID);
        put_varint32(&mut rep, xid.len() as u32);
        rep.extend_from_slice(xid);
        WriteBatch::from_rep(rep)
    }

    /// A batch holding one commit (`COMMIT_XID`) or rollback (`ROLLBACK_XID`) marker for the
    /// prepared transaction `xid` (count 0), as RocksDB's `MarkCommit` / `MarkRollback` on an
    /// empty batch.
    pub(crate) fn xid_marker(commit: bool, xid: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.rep.push(if commit { tag::COMMIT_XID } else { tag::ROLLBACK_XID });
        put_varint32(&mut b.rep, xid.len() as u32);
        b.rep.extend_from_slice(xid);
        b
    }

    /// Feed every record to `handler`, telling it first of each change of column family
    /// ([`BatchHandler::set_cf`]; records start in family 0). Errors: NotSupported for blob indexes and timed puts (and for entities if the handler refuses them); Corruption for
    /// undecodable records or a count mismatch.
    pub(crate) fn handle(&self, handler: &mut impl BatchHandler) -> Result<()> {
        let mut found = 0u32;
        let mut cur_cf = 0u32;
        for r in self.records() {
            let r = r?;
            if let Some(cf) = r.column_family() {
                if cf != cur_cf {
                    handler.set_cf(cf)?;
                    cur_cf = cf;
                }
            }
            if r.is_counted() {
                found = found.wrapping_add(1);
            }
            match r {
                BatchRecord::Put { key, value, .. } => handler.put(key, value)?,
                BatchRecord::Delete { key, .. } => handler.delete(key)?,
                BatchRecord::SingleDelete { key, .. } => handler.single_delete(key)?,
                BatchRecord::DeleteRange { begin, end, .. } => handler.delete_range(begin, end)?,
                BatchRecord::Merge { key, value, .. } => handler.merge(key, value)?,
                BatchRecord::LogData(blob) => handler.log_data(blob)?,
                BatchRecord::BlobIndex { .. } => {
                    return Err(Error::NotSupported("WriteBatch: blob index (tag 0x11/0x10)".into()))
                }
                BatchRecord::WideColumnEntity { key, value, .. } => handler.put_entity(key, value)?,
                BatchRecord::TimedPut { .. } => {
                    return Err(Error::NotSupported("WriteBatch: timed put (tag 0x18/0x19)".into()))
                }
                BatchRecord::BeginPrepare { unprepare, persisted } => {
                    handler.mark_begin_prepare(unprepare, persisted)?
                }
                BatchRecord::EndPrepare(xid) => handler.mark_end_prepare(xid)?,
                BatchRecord::Commit(xid) | BatchRecord::CommitWithTimestamp { xid, .. } => handler.mark_commit(xid)?,
                BatchRecord::Rollback(xid) => handler.mark_rollback(xid)?,
                BatchRecord::Noop => {}
            }
        }
        if found != self.count() {
            return Err(Error::corrupt("WriteBatch has wrong count"));
        }
        Ok(())
    }
}

/// Receives the records of a batch from [`WriteBatch::handle`].
pub(crate) trait BatchHandler {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, key: &[u8]) -> Result<()>;
    fn single_delete(&mut self, key: &[u8]) -> Result<()>;
    fn delete_range(&mut self, begin: &[u8], end: &[u8]) -> Result<()>;
    fn merge(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// A wide-column entity (`value` is its encoding, not yet checked). Handlers that cannot
    /// hold one refuse it.
    fn put_entity(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
        Err(Error::NotSupported(
            "WriteBatch: wide-column entity (tag 0x16/0x17)".into(),
        ))
    }
    fn log_data(&mut self, _blob: &[u8]) -> Result<()> {
        Ok(())
    }
    /// Two-phase-commit markers (tags 0x09/0x12/0x13, 0x0A, 0x0B/0x15, 0x0C): only WAL
    /// recovery acts on them; every other handler ignores them. `persisted` for tag 0x12 (a
    /// WRITE_PREPARED section), `unprepare` for 0x13 (WRITE_UNPREPARED).
    fn mark_begin_prepare(&mut self, _unprepare: bool, _persisted: bool) -> Result<()> {
        Ok(())
    }
    fn mark_end_prepare(&mut self, _xid: &[u8]) -> Result<()> {
        Ok(())
    }
    fn mark_commit(&mut self, _xid: &[u8]) -> Result<()> {
        Ok(())
    }
    fn mark_rollback(&mut self, _xid: &[u8]) -> Result<()> {
        Ok(())
    }
    /// The records that follow are for column family `cf` (until the next call). A handler
    /// that knows only the default family refuses the others.
    fn set_cf(&mut self, cf: u32) -> Result<()> {
        Err(Error::NotSupported(format!("column family {cf}")))
    }
}

/// The puts and deletes of the default column family, from [`WriteBatch::iterate`]
/// (RocksDB's `WriteBatch::Handler` as the C API offers it).
pub trait WriteBatchIterator {
    /// A put of `key` → `value` in the default column family.
    fn put(&mut self, key: &[u8], value: &[u8]);
    /// A delete of `key` in the default column family.
    fn delete(&mut self, key: &[u8]);
}

/// The puts, deletes and merges of every column family, with the family's id (0 for the
/// default family), from [`WriteBatch::iterate_cf`].
pub trait WriteBatchIteratorCf {
    /// A put of `key` → `value` in the family with id `cf_id`.
    fn put_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
    /// A delete of `key` in the family with id `cf_id`.
    fn delete_cf(&mut self, cf_id: u32, key: &[u8]);
    /// A merge of operand `value` into `key` in the family with id `cf_id`.
    fn merge_cf(&mut self, cf_id: u32, key: &[u8], value: &[u8]);
}

/// One decoded WriteBatch record. `cf` is the column family id (0 for the non-CF tags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchRecord<'a> {
    Put {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    Delete {
        cf: u32,
        key: &'a [u8],
    },
    SingleDelete {
        cf: u32,
        key: &'a [u8],
    },
    DeleteRange {
        cf: u32,
        begin: &'a [u8],
        end: &'a [u8],
    },
    Merge {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    LogData(&'a [u8]),
    BlobIndex {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    WideColumnEntity {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    /// value = user value ‖ fixed64 write time.
    TimedPut {
        cf: u32,
        key: &'a [u8],
        value: &'a [u8],
    },
    Noop,
    /// `unprepare` for tag 0x13, `persisted` for 0x12 (WRITE_PREPARED); both false for 0x09.
    BeginPrepare {
        unprepare: bool,
        persisted: bool,
    },
    EndPrepare(&'a [u8]),
    Commit(&'a [u8]),
    CommitWithTimestamp {
        ts: &'a [u8],
        xid: &'a [u8],
    },
    Rollback(&'a [u8]),
}

impl BatchRecord<'_> {
    /// Whether the record consumes a sequence number / counts in the header.
    pub(crate) fn is_counted(&self) -> bool {
        matches!(
            self,
            BatchRecord::Put { .. }
                | BatchRecord::Delete { .. }
                | BatchRecord::SingleDelete { .. }
                | BatchRecord::DeleteRange { .. }
                | BatchRecord::Merge { .. }
                | BatchRecord::BlobIndex { .. }
                | BatchRecord::WideColumnEntity { .. }
                | BatchRecord::TimedPut { .. }
        )
    }

    /// The column family of a data record.
    pub(crate) fn column_family(&self) -> Option<u32> {
        match *self {
            BatchRecord::Put { cf, .. }
            | BatchRecord::Delete { cf, .. }
            | BatchRecord::SingleDelete { cf, .. }
            | BatchRecord::DeleteRange { cf, .. }
            | BatchRecord::Merge { cf, .. }
            | BatchRecord::BlobIndex { cf, .. }
            | BatchRecord::WideColumnEntity { cf, .. }
            | BatchRecord::TimedPut { cf, .. } => Some(cf),
            _ => None,
        }
    }
}

/// Iterator over the records of a batch; yields one `Err` on malformed input, then stops.
pub(crate) struct Records<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Records<'a> {
    fn decode(&mut self) -> Option<BatchRecord<'a>> {
        let r = &mut self.r;
        let t = r.u8()?;
        let cf_tag = matches!(
            t,
            tag::CF_DELETION
                | tag::CF_VALUE
                | tag::CF_MERGE
                | tag::CF_SINGLE_DELETION
                | tag::CF_RANGE_DELETION
                | tag::CF_BLOB_INDEX
                | tag::CF_WIDE_COLUMN_ENTITY
                | tag::CF_TIMED_PUT
        );
        let cf = if cf_tag { r.varint32()? } else { 0 };
        Some(match t {
            tag::VALUE | tag::CF_VALUE => BatchRecord::Put {
                cf,
                key: r.lpslice()?,
                value: r.lpslice()?,
            },
            tag::DELETION | tag::CF_DELETION => BatchRecord::Delete { cf, key: r.lpslice()? },
            tag::SINGLE_DELETION | tag::CF_SINGLE_DELETION => BatchRecord::SingleDelete { cf, key: r.lpslice()? },
            tag::RANGE_DELETION | tag::CF_RANGE_DELETION => BatchRecord::DeleteRange {
                cf,
                begin: r.lpslice()?,
                end: r.lpslice()?,
            },
            tag::MERGE | tag::CF_MERGE => BatchRecord::Merge {
                cf,
                key: r.lpslice()?,
                value: r.lpslice()?,
            },
            tag::LOG_DATA => BatchRecord::LogData(r.lpslice()?),
            tag::BLOB_INDEX | tag::CF_BLOB_INDEX => BatchRecord::BlobIndex {
                cf,
                key: r.lpslice()?,
                value: r.lpslice()?,
            },
            tag::WIDE_COLUMN_ENTITY | tag::CF_WIDE_COLUMN_ENTITY => BatchRecord::WideColumnEntity {
                cf,
                key: r.lpslice()?,
                value: r.lpslice()?,
            },
            tag::TIMED_PUT | tag::CF_TIMED_PUT => BatchRecord::TimedPut {
                cf,
                key: r.lpslice()?,
                value: r.lpslice()?,
            },
            tag::NOOP => BatchRecord::Noop,
            tag::BEGIN_PREPARE_XID => BatchRecord::BeginPrepare {
                unprepare: false,
                persisted: false,
            },
            tag::BEGIN_PERSISTED_PREPARE_XID => BatchRecord::BeginPrepare {
                unprepare: false,
                persisted: true,
            },
            tag::BEGIN_UNPREPARE_XID => BatchRecord::BeginPrepare {
                unprepare: true,
                persisted: false,
            },
            tag::END_PREPARE_XID => BatchRecord::EndPrepare(r.lpslice()?),
            tag::COMMIT_XID => BatchRecord::Commit(r.lpslice()?),
            tag::ROLLBACK_XID => BatchRecord::Rollback(r.lpslice()?),
            tag::COMMIT_XID_AND_TIMESTAMP => BatchRecord::CommitWithTimestamp {
                ts: r.lpslice()?,
                xid: r.lpslice()?,
            },
            _ => return None,
        })
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<BatchRecord<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let start = self.r.pos();
        let t = self.r.remaining()[0];
        match self.decode() {
            Some(rec) => Some(Ok(rec)),
            None => {
                self.failed = true;
                let known =
                    t <= tag::BEGIN_UNPREPARE_XID || (tag::COMMIT_XID_AND_TIMESTAMP..=tag::CF_TIMED_PUT).contains(&t);
                let msg = if known {
                    format!(
                        "bad WriteBatch record (tag {t:#04x}) at batch offset {}",
                        start + HEADER
                    )
                } else {
                    format!("unknown WriteBatch tag {t:#04x} at batch offset {}", start + HEADER)
                };
                Some(Err(Error::corrupt(msg)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Vec<String>);
    impl BatchHandler for Collect {
        fn put(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
            self.0.push(format!(
                "put {} {}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ));
            Ok(())
        }
        fn delete(&mut self, k: &[u8]) -> Result<()> {
            self.0.push(format!("del {}", String::from_utf8_lossy(k)));
            Ok(())
        }
        fn single_delete(&mut self, k: &[u8]) -> Result<()> {
            self.0.push(format!("sdel {}", String::from_utf8_lossy(k)));
            Ok(())
        }
        fn delete_range(&mut self, b: &[u8], e: &[u8]) -> Result<()> {
            self.0.push(format!(
                "range {} {}",
                String::from_utf8_lossy(b),
                String::from_utf8_lossy(e)
            ));
            Ok(())
        }
        fn merge(&mut self, k: &[u8], v: &[u8]) -> Result<()> {
            self.0.push(format!(
                "merge {} {}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ));
            Ok(())
        }
        fn log_data(&mut self, b: &[u8]) -> Result<()> {
            self.0.push(format!("log {}", String::from_utf8_lossy(b)));
            Ok(())
        }
    }

    fn example_12_6() -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put("bp", "v");
        b.delete("k17");
        b.delete_range("k18", "k19");
        b.put_log_data("blob!");
        b.set_sequence(25);
        b
    }

    #[test]
    fn encoding_12_6() {
        let b = example_12_6();
        assert_eq!(b.len(), 3, "LogData is not counted");
        assert_eq!(b.count(), 3);
        assert_eq!(b.sequence(), 25);
        let mut want = vec![25, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0];
        want.extend(b"\x01\x02bp\x01v");
        want.extend(b"\x00\x03k17");
        want.extend(b"\x0f\x03k18\x03k19");
        want.extend(b"\x03\x05blob!");
        assert_eq!(b.data(), &want[..]);
        assert_eq!(b.size_in_bytes(), want.len());
        let mut c = Collect::default();
        b.handle(&mut c).unwrap();
        assert_eq!(c.0, vec!["put bp v", "del k17", "range k18 k19", "log blob!"]);
        let d = WriteBatch::decode(want).unwrap();
        assert_eq!(d, b);
        assert!(format!("{b:?}").contains("count: 3"));
    }

    #[test]
    fn ldb_put_k_v_payload() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.set_sequence(1);
        assert_eq!(b.data(), &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, b'k', 1, b'v']);
    }

    #[test]
    fn api_basics() {
        let mut b = WriteBatch::default();
        assert!(b.is_empty());
        assert_eq!(b.size_in_bytes(), 12);
        b.put("a", "1");
        b.merge("a", "2");
        b.single_delete("x");
        b.delete(String::from("y"));
        b.put_log_data(vec![1u8, 2]);
        assert_eq!(b.len(), 4);
        let mut c = Collect::default();
        b.handle(&mut c).unwrap();
        assert_eq!(c.0, vec!["put a 1", "merge a 2", "sdel x", "del y", "log \u{1}\u{2}"]);
        let mut other = WriteBatch::new();
        other.put("z", "9");
        let snapshot = b.clone();
        b.append_batch(&other);
        assert_eq!(b.len(), 5);
        assert_eq!(b.size_in_bytes(), snapshot.size_in_bytes() + other.size_in_bytes() - 12);
        assert!(WriteBatch::decode(b.data().to_vec()).is_ok());
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.data(), &[0u8; 12]);
        assert!(b.validate().is_ok());
    }

    #[test]
    fn wrong_count_and_truncation() {
        let b = example_12_6();
        let mut bad = b.data().to_vec();
        bad[8] = 4;
        let e = WriteBatch::decode(bad.clone()).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("wrong count"), "{e}");
        let raw = WriteBatch::from_data_unchecked(bad).unwrap();
        assert!(raw
            .handle(&mut Collect::default())
            .unwrap_err()
            .to_string()
            .contains("wrong count"));
        let full = b.data();
        let without_logdata = full.len() - 7;
        for n in 0..full.len() {
            let r = WriteBatch::decode(full[..n].to_vec());
            if n == without_logdata {
                assert!(r.is_ok());
            } else {
                assert!(r.unwrap_err().is_corruption(), "n={n}");
            }
        }
    }

    #[test]
    fn column_families_and_unsupported_tags() {
        let hdr = |count: u8| vec![0, 0, 0, 0, 0, 0, 0, 0, count, 0, 0, 0];
        // CF variants with cf 0 are fine.
        let mut d = hdr(5);
        d.extend(b"\x05\x00\x01a\x01b\x04\x00\x01c\x06\x00\x01d\x01e\x08\x00\x01f\x0e\x00\x01g\x01h");
        d.extend(b"\x0d\x09\x0a\x01x\x0b\x01x\x0c\x01x\x12\x13\x15\x01t\x01x");
        let b = WriteBatch::decode(d).unwrap();
        let mut c = Collect::default();
        b.handle(&mut c).unwrap();
        assert_eq!(c.0, vec!["put a b", "del c", "merge d e", "sdel f", "range g h"]);
        // Other CFs are not supported.
        let mut d = hdr(1);
        d.extend(b"\x05\x03\x01a\x01b");
        let e = WriteBatch::decode(d)
            .unwrap()
            .handle(&mut Collect::default())
            .unwrap_err();
        assert!(e.is_not_supported() && e.to_string().contains("column family 3"), "{e}");
        // Blob index, wide columns, timed put: NotSupported.
        for t in [
            &b"\x11\x01a\x01b"[..],
            b"\x10\x00\x01a\x01b",
            b"\x16\x01a\x01b",
            b"\x17\x00\x01a\x01b",
            b"\x18\x01a\x01b",
            b"\x19\x00\x01a\x01b",
        ] {
            let mut d = hdr(1);
            d.extend(t);
            let b = WriteBatch::decode(d).unwrap();
            assert!(b.handle(&mut Collect::default()).unwrap_err().is_not_supported());
        }
        // Unknown tags: Corruption.
        for t in [0x14u8, 0x1a, 0x7f, 0xff] {
            let mut d = hdr(0);
            d.extend([t, 1, b'a']);
            let e = WriteBatch::decode(d).unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains("unknown WriteBatch tag"),
                "{e}"
            );
        }
    }

    #[test]
    fn fuzz_never_panics() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base = example_12_6().data().to_vec();
        for i in 0..20000 {
            let data: Vec<u8> = if i % 2 == 0 {
                let n = (next() % 64) as usize;
                (0..n).map(|_| (next() % 0x1c) as u8).collect()
            } else {
                let mut d = base.clone();
                let p = (next() as usize) % d.len();
                d[p] = next() as u8;
                d
            };
            if let Ok(b) = WriteBatch::decode(data.clone()) {
                let _ = b.handle(&mut Collect::default());
            }
            if let Ok(b) = WriteBatch::from_data_unchecked(data) {
                let _ = b.handle(&mut Collect::default());
                let _ = b.records().count();
            }
        }
    }
}
