//! `VersionEdit`: one MANIFEST record, encoded as RocksDB does (`db/version_edit.cc`).
//!
//! An edit is a sequence of `tag varint32 | field`. The encoder writes what RocksDB 7.8 writes
//! (plus tag 8201 after the comparator, as 8.x+ do; it is safe-ignored by 7.8). The decoder
//! accepts every tag of RocksDB 7.8 – 11.x.

use std::fmt::{self, Write as _};

use crate::coding::{put_fixed64, put_lpslice, put_varint32, put_varint64, Reader};
use crate::error::{Error, Result};

/// Bits of a NewFile file number that hold the number (the top two held a path id).
pub(crate) const FILE_NUMBER_MASK: u64 = 0x3FFF_FFFF_FFFF_FFFF;

/// VersionEdit tags.
#[allow(dead_code)] // every tag of the format
pub(crate) mod tag {
    pub const COMPARATOR: u32 = 1;
    pub const LOG_NUMBER: u32 = 2;
    pub const NEXT_FILE_NUMBER: u32 = 3;
    pub const LAST_SEQUENCE: u32 = 4;
    pub const COMPACT_CURSOR: u32 = 5;
    pub const DELETED_FILE: u32 = 6;
    pub const NEW_FILE: u32 = 7;
    pub const PREV_LOG_NUMBER: u32 = 9;
    pub const MIN_LOG_NUMBER_TO_KEEP: u32 = 10;
    pub const NEW_FILE2: u32 = 100;
    pub const NEW_FILE3: u32 = 102;
    pub const NEW_FILE4: u32 = 103;
    pub const COLUMN_FAMILY: u32 = 200;
    pub const COLUMN_FAMILY_ADD: u32 = 201;
    pub const COLUMN_FAMILY_DROP: u32 = 202;
    pub const MAX_COLUMN_FAMILY: u32 = 203;
    pub const IN_ATOMIC_GROUP: u32 = 300;
    pub const BLOB_FILE_ADDITION: u32 = 400;
    pub const BLOB_FILE_GARBAGE: u32 = 401;
    pub const SAFE_IGNORE_MASK: u32 = 1 << 13;
    pub const DB_ID: u32 = 8193;
    pub const BLOB_FILE_ADDITION_DEPRECATED: u32 = 8194;
    pub const BLOB_FILE_GARBAGE_DEPRECATED: u32 = 8195;
    pub const WAL_ADDITION: u32 = 8196;
    pub const WAL_DELETION: u32 = 8197;
    pub const FULL_HISTORY_TS_LOW: u32 = 8198;
    pub const WAL_ADDITION2: u32 = 8199;
    pub const WAL_DELETION2: u32 = 8200;
    pub const PERSIST_USER_DEFINED_TIMESTAMPS: u32 = 8201;
    pub const SUBCOMPACTION_PROGRESS: u32 = 8202;
    pub const LAST_COMPACTED_MANIFEST_FILE_SIZE: u32 = 8203;
}

/// NewFile4 custom field tags.
pub(crate) mod nf4 {
    pub const TERMINATE: u32 = 1;
    pub const NEED_COMPACTION: u32 = 2;
    pub const MIN_LOG_NUMBER_TO_KEEP_HACK: u32 = 3;
    pub const OLDEST_BLOB_FILE_NUMBER: u32 = 4;
    pub const OLDEST_ANCESTER_TIME: u32 = 5;
    pub const FILE_CREATION_TIME: u32 = 6;
    pub const FILE_CHECKSUM: u32 = 7;
    pub const FILE_CHECKSUM_FUNC_NAME: u32 = 8;
    pub const TEMPERATURE: u32 = 9;
    pub const MIN_TIMESTAMP: u32 = 10;
    pub const MAX_TIMESTAMP: u32 = 11;
    pub const UNIQUE_ID: u32 = 12;
    pub const EPOCH_NUMBER: u32 = 13;
    pub const COMPENSATED_RANGE_DELETION_SIZE: u32 = 14;
    pub const TAIL_SIZE: u32 = 15;
    pub const USER_DEFINED_TIMESTAMPS_PERSISTED: u32 = 16;
    pub const FILE_OPEN_METADATA: u32 = 17;
    pub const PATH_ID: u32 = 65;
    /// Custom tags with this bit must be understood by the reader.
    pub const NON_SAFE_IGNORE_MASK: u32 = 1 << 6;
}

/// The name RocksDB writes for "no checksum function".
pub(crate) const UNKNOWN_CHECKSUM_FUNC_NAME: &str = "Unknown";

/// Metadata of one table file, as recorded in NewFile4.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileMetaData {
    pub number: u64,
    /// Index into `db_paths` (always 0 for Shale; other values are rejected when decoding).
    pub path_id: u32,
    pub file_size: u64,
    /// Smallest internal key (user key ‖ fixed64 trailer).
    pub smallest: Vec<u8>,
    /// Largest internal key (for a range tombstone end: end key, max sequence, RangeDeletion).
    pub largest: Vec<u8>,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    pub marked_for_compaction: bool,
    /// 0 = none.
    pub oldest_blob_file_number: u64,
    pub oldest_ancester_time: u64,
    pub file_creation_time: u64,
    /// 0 = unknown (RocksDB then infers epoch numbers on open).
    pub epoch_number: u64,
    pub file_checksum: Vec<u8>,
    pub file_checksum_func_name: String,
    /// 0 = unknown.
    pub temperature: u8,
    /// The internal unique id (two u64s), if recorded.
    pub unique_id: Option<[u64; 2]>,
    pub compensated_range_deletion_size: u64,
    pub tail_size: u64,
}

impl Default for FileMetaData {
    fn default() -> Self {
        FileMetaData {
            number: 0,
            path_id: 0,
            file_size: 0,
            smallest: Vec::new(),
            largest: Vec::new(),
            smallest_seqno: 0,
            largest_seqno: 0,
            marked_for_compaction: false,
            oldest_blob_file_number: 0,
            oldest_ancester_time: 0,
            file_creation_time: 0,
            epoch_number: 0,
            file_checksum: Vec::new(),
            file_checksum_func_name: UNKNOWN_CHECKSUM_FUNC_NAME.to_string(),
            temperature: 0,
            unique_id: None,
            compensated_range_deletion_size: 0,
            tail_size: 0,
        }
    }
}

/// A blob file added by an edit (`blob::writer` makes them; versions track them).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct BlobFileAddition {
    pub blob_file_number: u64,
    pub total_blob_count: u64,
    pub total_blob_bytes: u64,
    pub checksum_method: Vec<u8>,
    pub checksum_value: Vec<u8>,
}

/// Garbage recorded for a blob file (compactions meter it; a file all garbage is dropped).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct BlobFileGarbage {
    pub blob_file_number: u64,
    pub garbage_blob_count: u64,
    pub garbage_blob_bytes: u64,
}

/// A WAL tracked in the MANIFEST (`track_and_verify_wals_in_manifest`; decoded and ignored).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct WalAddition {
    pub log_number: u64,
    pub synced_size: Option<u64>,
}

/// One MANIFEST record.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct VersionEdit {
    pub db_id: Option<String>,
    pub comparator: Option<String>,
    /// Tag 8201; written right after the comparator when set.
    pub persist_user_defined_timestamps: Option<bool>,
    pub log_number: Option<u64>,
    pub prev_log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub max_column_family: Option<u32>,
    pub min_log_number_to_keep: Option<u64>,
    pub last_sequence: Option<u64>,
    pub compact_cursors: Vec<(u32, Vec<u8>)>,
    /// (level, file number)
    pub deleted_files: Vec<(u32, u64)>,
    /// (level, file)
    pub new_files: Vec<(u32, FileMetaData)>,
    pub blob_file_additions: Vec<BlobFileAddition>,
    pub blob_file_garbages: Vec<BlobFileGarbage>,
    pub wal_additions: Vec<WalAddition>,
    /// WALs below this number are no longer tracked.
    pub wal_deletion: Option<u64>,
    /// Column family the edit applies to (0 = default).
    pub column_family: u32,
    pub column_family_add: Option<String>,
    pub column_family_drop: bool,
    /// Some(n): the edit is in an atomic group with n edits remaining after it.
    pub remaining_entries: Option<u32>,
    pub full_history_ts_low: Option<Vec<u8>>,
    /// Tag 8203 (11.3+).
    pub last_compacted_manifest_file_size: Option<u64>,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn put_varint64_field(dst: &mut Vec<u8>, custom_tag: u32, v: u64) {
    put_varint32(dst, custom_tag);
    let mut tmp = Vec::with_capacity(10);
    put_varint64(&mut tmp, v);
    put_lpslice(dst, &tmp);
}

impl VersionEdit {
    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn new() -> VersionEdit {
        VersionEdit::default()
    }

    /// Set the comparator name, and (as RocksDB 8.x+ do) PersistUserDefinedTimestamps = true.
    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn set_comparator(&mut self, name: &str) {
        self.comparator = Some(name.to_string());
        self.persist_user_defined_timestamps = Some(true);
    }

    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn add_file(&mut self, level: u32, f: FileMetaData) {
        self.new_files.push((level, f));
    }

    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn delete_file(&mut self, level: u32, number: u64) {
        self.deleted_files.push((level, number));
    }

    /// True if the edit carries nothing.
    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn is_empty(&self) -> bool {
        *self == VersionEdit::default()
    }

    /// Serialize (RocksDB `VersionEdit::EncodeTo`). Boundary keys shorter than 8 bytes are a bug
    /// of the caller (RocksDB refuses to encode them); they are written as given.
    pub(crate) fn encode(&self, dst: &mut Vec<u8>) {
        if let Some(id) = &self.db_id {
            put_varint32(dst, tag::DB_ID);
            put_lpslice(dst, id.as_bytes());
        }
        if let Some(c) = &self.comparator {
            put_varint32(dst, tag::COMPARATOR);
            put_lpslice(dst, c.as_bytes());
        }
        if let Some(p) = self.persist_user_defined_timestamps {
            put_varint32(dst, tag::PERSIST_USER_DEFINED_TIMESTAMPS);
            put_lpslice(dst, &[p as u8]);
        }
        if let Some(v) = self.log_number {
            put_varint32(dst, tag::LOG_NUMBER);
            put_varint64(dst, v);
        }
        if let Some(v) = self.prev_log_number {
            put_varint32(dst, tag::PREV_LOG_NUMBER);
            put_varint64(dst, v);
        }
        if let Some(v) = self.next_file_number {
            put_varint32(dst, tag::NEXT_FILE_NUMBER);
            put_varint64(dst, v);
        }
        if let Some(v) = self.max_column_family {
            put_varint32(dst, tag::MAX_COLUMN_FAMILY);
            put_varint32(dst, v);
        }
        if let Some(v) = self.min_log_number_to_keep {
            put_varint32(dst, tag::MIN_LOG_NUMBER_TO_KEEP);
            put_varint64(dst, v);
        }
        if let Some(v) = self.last_sequence {
            put_varint32(dst, tag::LAST_SEQUENCE);
            put_varint64(dst, v);
        }
        for (level, key) in &self.compact_cursors {
            put_varint32(dst, tag::COMPACT_CURSOR);
            put_varint32(dst, *level);
            put_lpslice(dst, key);
        }
        for &(level, number) in &self.deleted_files {
            put_varint32(dst, tag::DELETED_FILE);
            put_varint32(dst, level);
            put_varint64(dst, number);
        }
        // As RocksDB: min_log_number_to_keep also goes into the first new file's custom fields.
        let mut min_log_hack = self.min_log_number_to_keep;
        for (level, f) in &self.new_files {
            encode_new_file(dst, *level, f, min_log_hack.take());
        }
        for b in &self.blob_file_additions {
            put_varint32(dst, tag::BLOB_FILE_ADDITION);
            put_varint64(dst, b.blob_file_number);
            put_varint64(dst, b.total_blob_count);
            put_varint64(dst, b.total_blob_bytes);
            put_lpslice(dst, &b.checksum_method);
            put_lpslice(dst, &b.checksum_value);
            put_varint32(dst, BLOB_END_MARKER);
        }
        for g in &self.blob_file_garbages {
            put_varint32(dst, tag::BLOB_FILE_GARBAGE);
            put_varint64(dst, g.blob_file_number);
            put_varint64(dst, g.garbage_blob_count);
            put_varint64(dst, g.garbage_blob_bytes);
            put_varint32(dst, BLOB_END_MARKER);
        }
        for w in &self.wal_additions {
            let mut tmp = Vec::new();
            put_varint64(&mut tmp, w.log_number);
            if let Some(s) = w.synced_size {
                put_varint32(&mut tmp, 2);
                put_varint64(&mut tmp, s);
            }
            put_varint32(&mut tmp, 1);
            put_varint32(dst, tag::WAL_ADDITION2);
            put_lpslice(dst, &tmp);
        }
        if let Some(n) = self.wal_deletion {
            let mut tmp = Vec::new();
            put_varint64(&mut tmp, n);
            put_varint32(dst, tag::WAL_DELETION2);
            put_lpslice(dst, &tmp);
        }
        if self.column_family != 0 {
            put_varint32(dst, tag::COLUMN_FAMILY);
            put_varint32(dst, self.column_family);
        }
        if let Some(name) = &self.column_family_add {
            put_varint32(dst, tag::COLUMN_FAMILY_ADD);
            put_lpslice(dst, name.as_bytes());
        }
        if self.column_family_drop {
            put_varint32(dst, tag::COLUMN_FAMILY_DROP);
        }
        if let Some(n) = self.remaining_entries {
            put_varint32(dst, tag::IN_ATOMIC_GROUP);
            put_varint32(dst, n);
        }
        if let Some(ts) = &self.full_history_ts_low {
            put_varint32(dst, tag::FULL_HISTORY_TS_LOW);
            put_lpslice(dst, ts);
        }
        if let Some(v) = self.last_compacted_manifest_file_size {
            let mut tmp = Vec::new();
            put_varint64(&mut tmp, v);
            put_varint32(dst, tag::LAST_COMPACTED_MANIFEST_FILE_SIZE);
            put_lpslice(dst, &tmp);
        }
    }

    /// Serialize into a new vector.
    #[allow(dead_code)] // builder helpers, exercised by tests
    pub(crate) fn encoded(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }

    /// Parse one MANIFEST record (RocksDB `VersionEdit::DecodeFrom`). Errors are Corruption
    /// ("VersionEdit: …") except a NewFile path id other than 0 (NotSupported).
    pub(crate) fn decode(data: &[u8]) -> Result<VersionEdit> {
        let mut e = VersionEdit::default();
        let mut r = Reader::new(data);
        fn bad(what: &str) -> Error {
            Error::corrupt(format!("VersionEdit: {what}"))
        }
        while !r.is_empty() {
            let Some(t) = r.varint32() else {
                return Err(bad("invalid tag"));
            };
            match t {
                tag::COMPARATOR => e.comparator = Some(lossy(r.lpslice().ok_or_else(|| bad("comparator name"))?)),
                tag::LOG_NUMBER => e.log_number = Some(r.varint64().ok_or_else(|| bad("log number"))?),
                tag::PREV_LOG_NUMBER => {
                    e.prev_log_number = Some(r.varint64().ok_or_else(|| bad("previous log number"))?)
                }
                tag::NEXT_FILE_NUMBER => {
                    e.next_file_number = Some(r.varint64().ok_or_else(|| bad("next file number"))?)
                }
                tag::MAX_COLUMN_FAMILY => {
                    e.max_column_family = Some(r.varint32().ok_or_else(|| bad("max column family"))?)
                }
                tag::MIN_LOG_NUMBER_TO_KEEP => {
                    e.min_log_number_to_keep = Some(r.varint64().ok_or_else(|| bad("min log number to kee"))?)
                }
                tag::LAST_SEQUENCE => e.last_sequence = Some(r.varint64().ok_or_else(|| bad("last sequence number"))?),
                tag::COMPACT_CURSOR => {
                    let level = r.varint32();
                    let key = r.lpslice().filter(|k| k.len() >= 8);
                    match (level, key) {
                        (Some(l), Some(k)) => e.compact_cursors.push((l, k.to_vec())),
                        _ => return Err(bad("compaction cursor")),
                    }
                }
                tag::DELETED_FILE => match (r.varint32(), r.varint64()) {
                    (Some(l), Some(n)) => e.deleted_files.push((l, n)),
                    _ => return Err(bad("deleted file")),
                },
                tag::NEW_FILE | tag::NEW_FILE2 | tag::NEW_FILE3 => {
                    let f = decode_old_new_file(&mut r, t).ok_or_else(|| bad("new-file entry"))?;
                    check_path_id(f.1.path_id)?;
                    e.new_files.push(f);
                }
                tag::NEW_FILE4 => {
                    let f = decode_new_file4(&mut r, &mut e)?;
                    e.new_files.push(f);
                }
                tag::BLOB_FILE_ADDITION | tag::BLOB_FILE_ADDITION_DEPRECATED => {
                    e.blob_file_additions.push(decode_blob_addition(&mut r)?);
                }
                tag::BLOB_FILE_GARBAGE | tag::BLOB_FILE_GARBAGE_DEPRECATED => {
                    e.blob_file_garbages.push(decode_blob_garbage(&mut r)?);
                }
                tag::WAL_ADDITION => e.wal_additions.push(decode_wal_addition(&mut r)?),
                tag::WAL_ADDITION2 => {
                    let s = r.lpslice().ok_or_else(|| bad("wal addition"))?;
                    let mut sub = Reader::new(s);
                    e.wal_additions.push(decode_wal_addition(&mut sub)?);
                }
                tag::WAL_DELETION => {
                    e.wal_deletion = Some(
                        r.varint64()
                            .ok_or_else(|| bad("WalDeletion: Error decoding WAL log number"))?,
                    )
                }
                tag::WAL_DELETION2 => {
                    let s = r.lpslice().ok_or_else(|| bad("wal deletion"))?;
                    let n = Reader::new(s)
                        .varint64()
                        .ok_or_else(|| bad("WalDeletion: Error decoding WAL log number"))?;
                    e.wal_deletion = Some(n);
                }
                tag::COLUMN_FAMILY => e.column_family = r.varint32().ok_or_else(|| bad("set column family id"))?,
                tag::COLUMN_FAMILY_ADD => {
                    e.column_family_add = Some(lossy(r.lpslice().ok_or_else(|| bad("column family add"))?))
                }
                tag::COLUMN_FAMILY_DROP => e.column_family_drop = true,
                tag::IN_ATOMIC_GROUP => {
                    e.remaining_entries = Some(r.varint32().ok_or_else(|| bad("remaining entries"))?)
                }
                tag::FULL_HISTORY_TS_LOW => {
                    let s = r.lpslice().ok_or_else(|| bad("full_history_ts_low"))?;
                    if s.is_empty() {
                        return Err(bad("full_history_ts_low: empty"));
                    }
                    e.full_history_ts_low = Some(s.to_vec());
                }
                tag::DB_ID => e.db_id = Some(lossy(r.lpslice().ok_or_else(|| bad("db id"))?)),
                tag::PERSIST_USER_DEFINED_TIMESTAMPS => {
                    let s = r.lpslice().ok_or_else(|| bad("persist_user_defined_timestamps"))?;
                    if s.len() != 1 {
                        return Err(bad("persist_user_defined_timestamps field wrong size"));
                    }
                    e.persist_user_defined_timestamps = Some(s[0] == 1);
                }
                tag::LAST_COMPACTED_MANIFEST_FILE_SIZE => {
                    let s = r.lpslice().ok_or_else(|| bad("last_compacted_manifest_file_size"))?;
                    e.last_compacted_manifest_file_size = Reader::new(s).varint64();
                }
                t if t & tag::SAFE_IGNORE_MASK != 0 => {
                    // A tag from the future (or 8202) that can be skipped: length-prefixed.
                    r.lpslice().ok_or_else(|| bad("safe_ignore_entry"))?;
                }
                t => return Err(bad(&format!("unknown tag {t}"))),
            }
        }
        Ok(e)
    }

    /// `VersionEdit::DebugString` as printed by `ldb manifest_dump --verbose` (keys as raw text
    /// with non-printable bytes escaped, or hex when `hex`). Ends with "}\n".
    pub(crate) fn debug_string(&self, hex: bool) -> String {
        let mut r = String::from("VersionEdit {");
        if let Some(id) = &self.db_id {
            let _ = write!(r, "\n  DB ID: {id}");
        }
        if let Some(c) = &self.comparator {
            let _ = write!(r, "\n  Comparator: {c}");
        }
        if let Some(p) = self.persist_user_defined_timestamps {
            let _ = write!(r, "\n  PersistUserDefinedTimestamps: {p}");
        }
        if let Some(v) = self.log_number {
            let _ = write!(r, "\n  LogNumber: {v}");
        }
        if let Some(v) = self.prev_log_number {
            let _ = write!(r, "\n  PrevLogNumber: {v}");
        }
        if let Some(v) = self.next_file_number {
            let _ = write!(r, "\n  NextFileNumber: {v}");
        }
        if let Some(v) = self.max_column_family {
            let _ = write!(r, "\n  MaxColumnFamily: {v}");
        }
        if let Some(v) = self.min_log_number_to_keep {
            let _ = write!(r, "\n  MinLogNumberToKeep: {v}");
        }
        if let Some(v) = self.last_sequence {
            let _ = write!(r, "\n  LastSeq: {v}");
        }
        for (level, key) in &self.compact_cursors {
            let _ = write!(r, "\n  CompactCursor: {level} {}", ikey_debug(key, hex));
        }
        for (level, n) in &self.deleted_files {
            let _ = write!(r, "\n  DeleteFile: {level} {n}");
        }
        for (level, f) in &self.new_files {
            let _ = write!(
                r,
                "\n  AddFile: {level} {} {} {} .. {}",
                f.number,
                f.file_size,
                ikey_debug(&f.smallest, hex),
                ikey_debug(&f.largest, hex)
            );
            if f.oldest_blob_file_number != 0 {
                let _ = write!(r, " blob_file:{}", f.oldest_blob_file_number);
            }
            let _ = write!(r, " oldest_ancester_time:{}", f.oldest_ancester_time);
            let _ = write!(r, " file_creation_time:{}", f.file_creation_time);
            if f.epoch_number != 0 {
                let _ = write!(r, " epoch_number:{}", f.epoch_number);
            }
            let _ = write!(r, " file_checksum:{}", to_hex(&f.file_checksum));
            let _ = write!(r, " file_checksum_func_name: {}", f.file_checksum_func_name);
            if f.temperature != 0 {
                let _ = write!(r, " temperature: {}", f.temperature);
            }
            if let Some(id) = f.unique_id {
                let _ = write!(r, " unique_id(internal): {{{},{}}}", id[0], id[1]);
            }
        }
        for b in &self.blob_file_additions {
            let _ = write!(
                r,
                "\n  BlobFileAddition: blob_file_number: {} total_blob_count: {} total_blob_bytes: {} checksum_method: {} checksum_value: {}",
                b.blob_file_number,
                b.total_blob_count,
                b.total_blob_bytes,
                lossy(&b.checksum_method),
                to_hex(&b.checksum_value)
            );
        }
        for g in &self.blob_file_garbages {
            let _ = write!(
                r,
                "\n  BlobFileGarbage: blob_file_number: {} garbage_blob_count: {} garbage_blob_bytes: {}",
                g.blob_file_number, g.garbage_blob_count, g.garbage_blob_bytes
            );
        }
        for w in &self.wal_additions {
            let _ = write!(r, "\n  WalAddition: log_number: {}", w.log_number);
            if let Some(s) = w.synced_size {
                let _ = write!(r, " synced_size_in_bytes: {s}");
            }
        }
        if let Some(n) = self.wal_deletion {
            let _ = write!(r, "\n  WalDeletion: log_number: {n}");
        }
        let _ = write!(r, "\n  ColumnFamily: {}", self.column_family);
        if let Some(name) = &self.column_family_add {
            let _ = write!(r, "\n  ColumnFamilyAdd: {name}");
        }
        if self.column_family_drop {
            r.push_str("\n  ColumnFamilyDrop");
        }
        if let Some(n) = self.remaining_entries {
            let _ = write!(r, "\n  AtomicGroup: {n} entries remains");
        }
        if let Some(ts) = &self.full_history_ts_low {
            let _ = write!(r, "\n FullHistoryTsLow: {}", to_hex(ts));
        }
        r.push_str("\n}\n");
        r
    }
}

impl fmt::Display for VersionEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.debug_string(false))
    }
}

/// Uppercase hex without prefix (RocksDB `Slice::ToString(true)`).
pub(crate) fn to_hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02X}");
    }
    s
}

/// Printable ASCII as is, other bytes as `\xNN` (RocksDB prints raw bytes).
pub(crate) fn escape(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &x in b {
        if (0x20..0x7f).contains(&x) {
            s.push(x as char);
        } else {
            let _ = write!(s, "\\x{x:02x}");
        }
    }
    s
}

/// `InternalKey::DebugString`: `'user_key' seq:N, type:T`, or `(bad)…` if shorter than 8 bytes.
pub(crate) fn ikey_debug(ikey: &[u8], hex: bool) -> String {
    if ikey.len() < 8 {
        return format!("(bad){}", escape(ikey));
    }
    let (uk, tr) = ikey.split_at(ikey.len() - 8);
    let t = u64::from_le_bytes(tr.try_into().unwrap_or([0; 8]));
    let uk = if hex { to_hex(uk) } else { escape(uk) };
    format!("'{uk}' seq:{}, type:{}", t >> 8, t & 0xff)
}

fn check_path_id(path_id: u32) -> Result<()> {
    if path_id != 0 {
        return Err(Error::NotSupported(format!(
            "table file in db_paths[{path_id}] (path id {path_id})"
        )));
    }
    Ok(())
}

/// A boundary key: an lpslice of at least 8 bytes (any type byte is accepted).
fn get_internal_key(r: &mut Reader<'_>) -> Option<Vec<u8>> {
    r.lpslice().filter(|k| k.len() >= 8).map(|k| k.to_vec())
}

/// NewFile (7), NewFile2 (100), NewFile3 (102).
fn decode_old_new_file(r: &mut Reader<'_>, t: u32) -> Option<(u32, FileMetaData)> {
    let level = r.varint32()?;
    let number = r.varint64()? & FILE_NUMBER_MASK;
    let path_id = if t == tag::NEW_FILE3 { r.varint32()? } else { 0 };
    let file_size = r.varint64()?;
    let smallest = get_internal_key(r)?;
    let largest = get_internal_key(r)?;
    let (smallest_seqno, largest_seqno) = if t == tag::NEW_FILE {
        (0, 0)
    } else {
        (r.varint64()?, r.varint64()?)
    };
    Some((
        level,
        FileMetaData {
            number,
            path_id,
            file_size,
            smallest,
            largest,
            smallest_seqno,
            largest_seqno,
            file_checksum_func_name: UNKNOWN_CHECKSUM_FUNC_NAME.to_string(),
            ..FileMetaData::default()
        },
    ))
}

fn decode_new_file4(r: &mut Reader<'_>, e: &mut VersionEdit) -> Result<(u32, FileMetaData)> {
    fn bad(what: &str) -> Error {
        Error::corrupt(format!("VersionEdit: {what}"))
    }
    let head = (|| {
        let level = r.varint32()?;
        let number = r.varint64()? & FILE_NUMBER_MASK;
        let file_size = r.varint64()?;
        let smallest = get_internal_key(r)?;
        let largest = get_internal_key(r)?;
        let smallest_seqno = r.varint64()?;
        let largest_seqno = r.varint64()?;
        Some((
            level,
            number,
            file_size,
            smallest,
            largest,
            smallest_seqno,
            largest_seqno,
        ))
    })();
    let Some((level, number, file_size, smallest, largest, smallest_seqno, largest_seqno)) = head else {
        return Err(bad("new-file4 entry"));
    };
    let mut f = FileMetaData {
        number,
        file_size,
        smallest,
        largest,
        smallest_seqno,
        largest_seqno,
        file_checksum_func_name: String::new(),
        ..FileMetaData::default()
    };
    let mut saw_func_name = false;
    loop {
        let ct = r.varint32().ok_or_else(|| bad("new-file4 custom field"))?;
        if ct == nf4::TERMINATE {
            break;
        }
        let field = r.lpslice().ok_or_else(|| bad("new-file4 custom field"))?;
        let varint = |what: &str| -> Result<u64> {
            let mut fr = Reader::new(field);
            fr.varint64().ok_or_else(|| bad(what))
        };
        match ct {
            nf4::PATH_ID => {
                if field.len() != 1 {
                    return Err(bad("path_id field wrong size"));
                }
                f.path_id = field[0] as u32;
                check_path_id(f.path_id)?;
            }
            nf4::OLDEST_ANCESTER_TIME => f.oldest_ancester_time = varint("invalid oldest ancester time")?,
            nf4::FILE_CREATION_TIME => f.file_creation_time = varint("invalid file creation time")?,
            nf4::FILE_CHECKSUM => f.file_checksum = field.to_vec(),
            nf4::FILE_CHECKSUM_FUNC_NAME => {
                f.file_checksum_func_name = lossy(field);
                saw_func_name = true;
            }
            nf4::NEED_COMPACTION => {
                if field.len() != 1 {
                    return Err(bad("need_compaction field wrong size"));
                }
                f.marked_for_compaction = field[0] == 1;
            }
            nf4::MIN_LOG_NUMBER_TO_KEEP_HACK => {
                let v = Reader::new(field)
                    .fixed64()
                    .ok_or_else(|| bad("deleted log number malformatted"))?;
                e.min_log_number_to_keep = Some(v);
            }
            nf4::OLDEST_BLOB_FILE_NUMBER => f.oldest_blob_file_number = varint("invalid oldest blob file number")?,
            nf4::TEMPERATURE => {
                if field.len() != 1 {
                    return Err(bad("temperature field wrong size"));
                }
                f.temperature = field[0];
            }
            nf4::UNIQUE_ID => {
                let mut fr = Reader::new(field);
                match (field.len(), fr.fixed64(), fr.fixed64()) {
                    (16, Some(a), Some(b)) => f.unique_id = Some([a, b]),
                    _ => return Err(bad("invalid unique id")),
                }
            }
            nf4::EPOCH_NUMBER => f.epoch_number = varint("invalid epoch number")?,
            nf4::COMPENSATED_RANGE_DELETION_SIZE => {
                f.compensated_range_deletion_size = varint("Invalid compensated range deletion size")?
            }
            nf4::TAIL_SIZE => f.tail_size = varint("invalid tail start offset")?,
            nf4::MIN_TIMESTAMP
            | nf4::MAX_TIMESTAMP
            | nf4::USER_DEFINED_TIMESTAMPS_PERSISTED
            | nf4::FILE_OPEN_METADATA => {}
            ct if ct & nf4::NON_SAFE_IGNORE_MASK != 0 => {
                return Err(bad(&format!(
                    "new-file4 custom field with tag {ct} not supported (must understand)"
                )));
            }
            _ => {}
        }
    }
    if !saw_func_name {
        f.file_checksum_func_name = UNKNOWN_CHECKSUM_FUNC_NAME.to_string();
    }
    Ok((level, f))
}

/// Skip the custom fields of a blob record (tag varint32 + lpslice, ended by 1).
/// The tag that ends the custom fields of a blob file addition or garbage record (unlike
/// NewFile4's, which ends with 1).
const BLOB_END_MARKER: u32 = 0;

/// Skip the custom fields (tag varint32 + lpslice each) of a blob file record up to its end
/// marker; a tag in the forward-incompatible range (bit 6) is Corruption.
fn skip_blob_custom_fields(r: &mut Reader<'_>, class: &str) -> Result<()> {
    loop {
        let t = r
            .varint32()
            .ok_or_else(|| Error::corrupt(format!("{class}: Error decoding custom field tag")))?;
        if t == BLOB_END_MARKER {
            return Ok(());
        }
        if t & nf4::NON_SAFE_IGNORE_MASK != 0 {
            return Err(Error::corrupt(format!(
                "{class}: Forward incompatible custom field encountered"
            )));
        }
        r.lpslice()
            .ok_or_else(|| Error::corrupt(format!("{class}: Error decoding custom field value")))?;
    }
}

fn decode_blob_addition(r: &mut Reader<'_>) -> Result<BlobFileAddition> {
    let c = "BlobFileAddition";
    let err = |m: &str| Error::corrupt(format!("{c}: {m}"));
    let blob_file_number = r.varint64().ok_or_else(|| err("Error decoding blob file number"))?;
    let total_blob_count = r.varint64().ok_or_else(|| err("Error decoding total blob count"))?;
    let total_blob_bytes = r.varint64().ok_or_else(|| err("Error decoding total blob bytes"))?;
    let checksum_method = r
        .lpslice()
        .ok_or_else(|| err("Error decoding checksum method"))?
        .to_vec();
    let checksum_value = r
        .lpslice()
        .ok_or_else(|| err("Error decoding checksum value"))?
        .to_vec();
    skip_blob_custom_fields(r, c)?;
    Ok(BlobFileAddition {
        blob_file_number,
        total_blob_count,
        total_blob_bytes,
        checksum_method,
        checksum_value,
    })
}

fn decode_blob_garbage(r: &mut Reader<'_>) -> Result<BlobFileGarbage> {
    let c = "BlobFileGarbage";
    let err = |m: &str| Error::corrupt(format!("{c}: {m}"));
    let blob_file_number = r.varint64().ok_or_else(|| err("Error decoding blob file number"))?;
    let garbage_blob_count = r.varint64().ok_or_else(|| err("Error decoding garbage blob count"))?;
    let garbage_blob_bytes = r.varint64().ok_or_else(|| err("Error decoding garbage blob bytes"))?;
    skip_blob_custom_fields(r, c)?;
    Ok(BlobFileGarbage {
        blob_file_number,
        garbage_blob_count,
        garbage_blob_bytes,
    })
}

fn decode_wal_addition(r: &mut Reader<'_>) -> Result<WalAddition> {
    let err = |m: &str| Error::corrupt(format!("WalAddition: {m}"));
    let log_number = r.varint64().ok_or_else(|| err("Error decoding WAL log number"))?;
    let mut w = WalAddition {
        log_number,
        synced_size: None,
    };
    loop {
        match r.varint32() {
            Some(1) => return Ok(w),
            Some(2) => w.synced_size = Some(r.varint64().ok_or_else(|| err("Error decoding WAL file size"))?),
            Some(t) => return Err(err(&format!("Unknown tag {t}"))),
            None => return Err(err("Error decoding tag")),
        }
    }
}

/// One `NewFile4` record: level, number, size, key range, sequence numbers, then RocksDB's
/// custom fields in the order it writes them, ending with the terminating tag. `min_log_hack`:
/// the value of the `min_log_number_to_keep` custom field, on the first file of an edit only.
fn encode_new_file(dst: &mut Vec<u8>, level: u32, f: &FileMetaData, min_log_hack: Option<u64>) {
    put_varint32(dst, tag::NEW_FILE4);
    put_varint32(dst, level);
    put_varint64(dst, f.number & FILE_NUMBER_MASK);
    put_varint64(dst, f.file_size);
    put_lpslice(dst, &f.smallest);
    put_lpslice(dst, &f.largest);
    put_varint64(dst, f.smallest_seqno);
    put_varint64(dst, f.largest_seqno);
    // Custom fields, in the order RocksDB writes them.
    put_varint64_field(dst, nf4::OLDEST_ANCESTER_TIME, f.oldest_ancester_time);
    put_varint64_field(dst, nf4::FILE_CREATION_TIME, f.file_creation_time);
    if f.epoch_number != 0 {
        put_varint64_field(dst, nf4::EPOCH_NUMBER, f.epoch_number);
    }
    put_varint32(dst, nf4::FILE_CHECKSUM);
    put_lpslice(dst, &f.file_checksum);
    put_varint32(dst, nf4::FILE_CHECKSUM_FUNC_NAME);
    put_lpslice(dst, f.file_checksum_func_name.as_bytes());
    if f.path_id != 0 {
        put_varint32(dst, nf4::PATH_ID);
        put_lpslice(dst, &[f.path_id as u8]);
    }
    if f.temperature != 0 {
        put_varint32(dst, nf4::TEMPERATURE);
        put_lpslice(dst, &[f.temperature]);
    }
    if f.marked_for_compaction {
        put_varint32(dst, nf4::NEED_COMPACTION);
        put_lpslice(dst, &[1]);
    }
    if let Some(v) = min_log_hack {
        put_varint32(dst, nf4::MIN_LOG_NUMBER_TO_KEEP_HACK);
        let mut tmp = Vec::with_capacity(8);
        put_fixed64(&mut tmp, v);
        put_lpslice(dst, &tmp);
    }
    if f.oldest_blob_file_number != 0 {
        put_varint64_field(dst, nf4::OLDEST_BLOB_FILE_NUMBER, f.oldest_blob_file_number);
    }
    if let Some(id) = f.unique_id {
        put_varint32(dst, nf4::UNIQUE_ID);
        let mut tmp = Vec::with_capacity(16);
        put_fixed64(&mut tmp, id[0]);
        put_fixed64(&mut tmp, id[1]);
        put_lpslice(dst, &tmp);
    }
    if f.compensated_range_deletion_size != 0 {
        put_varint64_field(
            dst,
            nf4::COMPENSATED_RANGE_DELETION_SIZE,
            f.compensated_range_deletion_size,
        );
    }
    if f.tail_size != 0 {
        put_varint64_field(dst, nf4::TAIL_SIZE, f.tail_size);
    }
    put_varint32(dst, nf4::TERMINATE);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::make_internal_key;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A NewFile4 record from a MANIFEST RocksDB 9.8.4 wrote (unique id bytes replaced by
    /// 0x11..0x20).
    fn newfile4_984() -> Vec<u8> {
        let mut v = unhex("67 00 09 bc08 09 61 0101000000000000 09 63 0103000000000000 01 03");
        v.extend(unhex("05 05 ecc388d806 06 05 ecc388d806 0d 01 01 07 00 08 07"));
        v.extend(b"Unknown");
        v.extend(unhex("0c 10"));
        v.extend(0x11u8..=0x20);
        v.extend(unhex("0f 02 8808 01"));
        v
    }

    #[test]
    fn newfile4_984_decode_and_reencode() {
        let bytes = newfile4_984();
        let e = VersionEdit::decode(&bytes).unwrap();
        assert_eq!(e.new_files.len(), 1);
        let (level, f) = &e.new_files[0];
        assert_eq!(*level, 0);
        assert_eq!((f.number, f.file_size), (9, 1084));
        assert_eq!(f.smallest, make_internal_key(b"a", 1, 1));
        assert_eq!(f.largest, make_internal_key(b"c", 3, 1));
        assert_eq!((f.smallest_seqno, f.largest_seqno), (1, 3));
        assert_eq!(f.oldest_ancester_time, f.file_creation_time);
        assert_eq!(f.epoch_number, 1);
        assert_eq!(f.file_checksum, b"");
        assert_eq!(f.file_checksum_func_name, "Unknown");
        assert_eq!(f.tail_size, 1032);
        let id0 = u64::from_le_bytes([0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18]);
        assert_eq!(f.unique_id.unwrap()[0], id0);
        // Our encoder writes the same fields in the same order.
        assert_eq!(e.encoded(), bytes);
        let s = e.debug_string(false);
        assert!(
            s.contains(&format!(
                "AddFile: 0 9 1084 'a' seq:1, type:1 .. 'c' seq:3, type:1 oldest_ancester_time:{t} file_creation_time:{t} epoch_number:1 file_checksum: file_checksum_func_name: Unknown unique_id(internal): {{{id0},",
                t = f.oldest_ancester_time
            )),
            "{s}"
        );
        assert!(e
            .debug_string(true)
            .contains("AddFile: 0 9 1084 '61' seq:1, type:1 .. '63' seq:3"));
        // Every truncation fails cleanly.
        for n in 0..bytes.len() {
            assert!(VersionEdit::decode(&bytes[..n]).is_err() || n == 0, "n={n}");
        }
    }

    fn full_edit() -> VersionEdit {
        let f = FileMetaData {
            number: 12,
            file_size: 4096,
            smallest: make_internal_key(b"aa", 5, 1),
            largest: make_internal_key(b"zz", crate::key::MAX_SEQUENCE, 0x0f),
            smallest_seqno: 5,
            largest_seqno: 90,
            oldest_ancester_time: 1_700_000_000,
            file_creation_time: 1_700_000_001,
            epoch_number: 3,
            marked_for_compaction: true,
            temperature: 2,
            unique_id: Some([7, 8]),
            compensated_range_deletion_size: 10,
            tail_size: 300,
            oldest_blob_file_number: 0,
            ..FileMetaData::default()
        };
        let mut e = VersionEdit::new();
        e.db_id = Some("78b40747-2b51-41e3-a8d1-e606d2f6feef".into());
        e.set_comparator("leveldb.BytewiseComparator");
        e.log_number = Some(5);
        e.prev_log_number = Some(0);
        e.next_file_number = Some(14);
        e.max_column_family = Some(0);
        e.min_log_number_to_keep = Some(5);
        e.last_sequence = Some(1000);
        e.compact_cursors.push((1, make_internal_key(b"m", 3, 1)));
        e.delete_file(0, 8);
        e.add_file(1, f.clone());
        e.add_file(
            2,
            FileMetaData {
                number: 13,
                epoch_number: 0,
                unique_id: None,
                ..f
            },
        );
        e.wal_additions.push(WalAddition {
            log_number: 4,
            synced_size: Some(100),
        });
        e.wal_additions.push(WalAddition {
            log_number: 6,
            synced_size: None,
        });
        e.wal_deletion = Some(3);
        e.remaining_entries = Some(2);
        e.last_compacted_manifest_file_size = Some(99);
        e
    }

    #[test]
    fn round_trips() {
        let e = full_edit();
        let d = VersionEdit::decode(&e.encoded()).unwrap();
        assert_eq!(d, e);
        // Column family records.
        let mut c = VersionEdit::new();
        c.column_family = 3;
        c.column_family_add = Some("cf3".into());
        c.blob_file_additions.push(BlobFileAddition {
            blob_file_number: 9,
            total_blob_count: 2,
            total_blob_bytes: 3,
            checksum_method: b"crc".to_vec(),
            checksum_value: vec![1, 2],
        });
        c.blob_file_garbages.push(BlobFileGarbage {
            blob_file_number: 9,
            garbage_blob_count: 1,
            garbage_blob_bytes: 1,
        });
        c.full_history_ts_low = Some(vec![0; 8]);
        assert_eq!(VersionEdit::decode(&c.encoded()).unwrap(), c);
        let mut dr = VersionEdit::new();
        dr.column_family = 3;
        dr.column_family_drop = true;
        assert_eq!(VersionEdit::decode(&dr.encoded()).unwrap(), dr);
        let s = c.debug_string(false);
        assert!(s.contains("ColumnFamily: 3\n  ColumnFamilyAdd: cf3"), "{s}");
        // Minimal 7.8-style edit: default CF is not written.
        let m = VersionEdit {
            log_number: Some(0),
            last_sequence: Some(0),
            ..Default::default()
        };
        assert_eq!(m.encoded(), vec![2, 0, 4, 0]);
        assert_eq!(
            m.to_string(),
            "VersionEdit {\n  LogNumber: 0\n  LastSeq: 0\n  ColumnFamily: 0\n}\n"
        );
    }

    #[test]
    fn min_log_number_hack_written_once() {
        let e = full_edit();
        let bytes = e.encoded();
        let needle = [3u8, 8, 5, 0, 0, 0, 0, 0, 0, 0];
        let count = bytes.windows(needle.len()).filter(|w| *w == needle).count();
        assert_eq!(count, 1);
    }

    fn nf4_with_custom(custom: &[u8]) -> Vec<u8> {
        let mut v = unhex("67 01 05 10 09 61 0101000000000000 09 63 0103000000000000 01 03");
        v.extend_from_slice(custom);
        v.push(1);
        v
    }

    #[test]
    fn newfile4_custom_tags() {
        // Unknown ignorable custom tag (no bit 6) and tags 10/11/16/17: ignored.
        for c in [
            &b"\x1e\x02ab"[..],
            b"\x0a\x01x",
            b"\x0b\x01x",
            b"\x10\x01\x00",
            b"\x11\x03abc",
        ] {
            let e = VersionEdit::decode(&nf4_with_custom(c)).unwrap();
            assert_eq!(e.new_files[0].1.number, 5);
        }
        // Must-understand unknown tag.
        let e = VersionEdit::decode(&nf4_with_custom(b"\x42\x01x")).unwrap_err();
        assert!(e.is_corruption() && e.to_string().contains("must understand"), "{e}");
        // Path id: 0 accepted, anything else NotSupported; wrong size is corruption.
        assert!(VersionEdit::decode(&nf4_with_custom(b"\x41\x01\x00")).is_ok());
        assert!(VersionEdit::decode(&nf4_with_custom(b"\x41\x01\x01"))
            .unwrap_err()
            .is_not_supported());
        assert!(VersionEdit::decode(&nf4_with_custom(b"\x41\x02\x00\x00"))
            .unwrap_err()
            .is_corruption());
        // MinLogNumberToKeepHack sets the edit's field.
        let e = VersionEdit::decode(&nf4_with_custom(b"\x03\x08\x07\x00\x00\x00\x00\x00\x00\x00")).unwrap();
        assert_eq!(e.min_log_number_to_keep, Some(7));
        // NeedCompaction, temperature, bad unique id.
        let e = VersionEdit::decode(&nf4_with_custom(b"\x02\x01\x01\x09\x01\x03")).unwrap();
        assert!(e.new_files[0].1.marked_for_compaction);
        assert_eq!(e.new_files[0].1.temperature, 3);
        assert!(VersionEdit::decode(&nf4_with_custom(b"\x0c\x03abc")).is_err());
        // File number mask.
        let mut v = vec![0x67, 0];
        crate::coding::put_varint64(&mut v, (1u64 << 62) | 77);
        v.extend(unhex("10 09 61 0101000000000000 09 63 0103000000000000 01 03 01"));
        assert_eq!(VersionEdit::decode(&v).unwrap().new_files[0].1.number, 77);
        // Boundary keys: any type byte accepted, but at least 8 bytes.
        let v = unhex("67 01 05 10 09 61 01010000000000ff 09 63 01ff000000000000 01 03 01");
        assert!(VersionEdit::decode(&v).is_ok());
        let v = unhex("67 01 05 10 01 61 09 63 0103000000000000 01 03 01");
        assert!(VersionEdit::decode(&v).is_err());
    }

    #[test]
    fn old_new_file_formats() {
        let keys = unhex("09 61 0101000000000000 09 63 0103000000000000");
        let mut nf = unhex("07 02 0a 20");
        nf.extend(&keys);
        let e = VersionEdit::decode(&nf).unwrap();
        assert_eq!(
            (e.new_files[0].0, e.new_files[0].1.number, e.new_files[0].1.file_size),
            (2, 10, 32)
        );
        let mut nf2 = unhex("64 02 0a 20");
        nf2.extend(&keys);
        nf2.extend([1, 3]);
        let e = VersionEdit::decode(&nf2).unwrap();
        assert_eq!(e.new_files[0].1.largest_seqno, 3);
        let mut nf3 = unhex("66 02 0a 00 20");
        nf3.extend(&keys);
        nf3.extend([1, 3]);
        let e = VersionEdit::decode(&nf3).unwrap();
        assert_eq!(e.new_files[0].1.file_size, 32);
        let mut nf3b = unhex("66 02 0a 01 20");
        nf3b.extend(&keys);
        nf3b.extend([1, 3]);
        assert!(VersionEdit::decode(&nf3b).unwrap_err().is_not_supported());
    }

    #[test]
    fn tags_safe_ignore_unknown_and_misc() {
        // Safe-ignore tags (8202 and a future 8300) are skipped.
        let mut v = unhex("8a40 03 010203 ac40 02 0909 02 07");
        let e = VersionEdit::decode(&v).unwrap();
        assert_eq!(e.log_number, Some(7));
        v.push(0x80); // dangling varint
        assert!(VersionEdit::decode(&v).unwrap_err().to_string().contains("invalid tag"));
        // Safe-ignore with a length past the end.
        assert!(VersionEdit::decode(&unhex("ac40 05 01")).is_err());
        // Unknown tags without bit 13.
        for t in [8u8, 11, 50, 101] {
            let e = VersionEdit::decode(&[t, 0]).unwrap_err();
            assert!(
                e.is_corruption() && e.to_string().contains(&format!("unknown tag {t}")),
                "{e}"
            );
        }
        // Old-style WAL addition/deletion (not length-prefixed), new style, atomic group, max CF.
        let v = unhex("8440 04 02 64 01  8540 03  c801 05  cb01 06  ac02 02");
        let e = VersionEdit::decode(&v).unwrap();
        assert_eq!(
            e.wal_additions,
            vec![WalAddition {
                log_number: 4,
                synced_size: Some(100)
            }]
        );
        assert_eq!(e.wal_deletion, Some(3));
        assert_eq!(e.column_family, 5);
        assert_eq!(e.max_column_family, Some(6));
        assert_eq!(e.remaining_entries, Some(2));
        assert!(
            VersionEdit::decode(&unhex("8440 04 07 01")).is_err(),
            "unknown WalAddition subtag"
        );
        // Blob tags, new and deprecated numbering (neither length-prefixed); their custom
        // fields end with tag 0 (a forward-compatible field 3 is skipped).
        let v = unhex("9003 01 02 03 00 00 03 01 aa 00  9103 01 02 03 00  8240 04 02 03 00 00 00  8340 04 02 03 00");
        let e = VersionEdit::decode(&v).unwrap();
        assert_eq!(e.blob_file_additions.len(), 2);
        assert_eq!(e.blob_file_garbages.len(), 2);
        assert_eq!(e.blob_file_garbages[1].blob_file_number, 4);
        assert!(
            VersionEdit::decode(&unhex("9003 01 02 03 00 00 42 00 00")).is_err(),
            "must-understand blob field"
        );
        // What Shale writes for an addition and its garbage, byte for byte.
        let mut e = VersionEdit::default();
        e.blob_file_additions.push(BlobFileAddition {
            blob_file_number: 9,
            total_blob_count: 2,
            total_blob_bytes: 300,
            ..Default::default()
        });
        e.blob_file_garbages.push(BlobFileGarbage {
            blob_file_number: 9,
            garbage_blob_count: 1,
            garbage_blob_bytes: 150,
        });
        let mut enc = Vec::new();
        e.encode(&mut enc);
        let want = unhex("9003 09 02 ac02 00 00 00  9103 09 01 9601 00");
        assert!(enc.windows(want.len()).any(|w| w == want), "{enc:02x?}");
        // PersistUDT wrong size; empty FullHistoryTsLow.
        assert!(VersionEdit::decode(&unhex("8940 02 0101")).is_err());
        assert!(VersionEdit::decode(&unhex("8640 00")).is_err());
        // DbId record of TV6 shape.
        let mut v = unhex("8140 24");
        v.extend(b"581cc87f-0000-0000-0000-bf181f63891b");
        assert_eq!(
            VersionEdit::decode(&v).unwrap().db_id.as_deref(),
            Some("581cc87f-0000-0000-0000-bf181f63891b")
        );
    }

    #[test]
    fn fuzz_never_panics() {
        let mut x: u64 = 0xdead_beef_1234_5677;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base = full_edit().encoded();
        let nf = newfile4_984();
        for i in 0..30000 {
            let data: Vec<u8> = match i % 3 {
                0 => (0..(next() % 40) as usize).map(|_| next() as u8).collect(),
                1 => {
                    let mut d = base.clone();
                    for _ in 0..1 + next() % 3 {
                        let p = (next() as usize) % d.len();
                        d[p] = next() as u8;
                    }
                    d.truncate((next() as usize) % (d.len() + 1));
                    d
                }
                _ => {
                    let mut d = nf.clone();
                    let p = (next() as usize) % d.len();
                    d[p] = next() as u8;
                    d
                }
            };
            if let Ok(e) = VersionEdit::decode(&data) {
                let _ = e.debug_string(i % 2 == 0);
                let again = VersionEdit::decode(&e.encoded());
                assert!(again.is_ok(), "re-encode of a decoded edit must decode: {data:?}");
            }
        }
    }
}
