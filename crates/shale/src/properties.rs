//! Names of DB properties (the `rocksdb` crate's `properties` module): constants for RocksDB's
//! `rocksdb.*` property names, functions for the per-level ones, and [`CStrLike`], the argument
//! type of [`DB::property_value`](crate::DB::property_value) and its siblings, which accepts these
//! names as well as plain `&str`, `&String`, `&CStr` and `CString`.

use std::borrow::{Borrow, Cow};
use std::ffi::{CStr, CString, NulError};
use std::fmt;

/// A property name borrowed from a constant or a [`PropertyName`]: a nul-terminated string that
/// dereferences to [`CStr`]. Property names are ASCII.
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PropName {
    name: Cow<'static, CStr>,
}

impl PropName {
    const fn constant(name: &'static CStr) -> PropName {
        PropName {
            name: Cow::Borrowed(name),
        }
    }

    /// The name as a C string.
    pub fn as_c_str(&self) -> &CStr {
        &self.name
    }

    /// The name as text; a name that is not UTF-8 (only possible through a `CString` turned
    /// into a [`PropertyName`], which Shale never makes) reads as the empty string.
    pub fn as_str(&self) -> &str {
        self.name.to_str().unwrap_or("")
    }
}

impl std::ops::Deref for PropName {
    type Target = CStr;
    fn deref(&self) -> &CStr {
        self.as_c_str()
    }
}

impl AsRef<CStr> for PropName {
    fn as_ref(&self) -> &CStr {
        self.as_c_str()
    }
}

impl AsRef<str> for PropName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl ToOwned for PropName {
    type Owned = PropertyName;
    fn to_owned(&self) -> PropertyName {
        PropertyName {
            name: PropName {
                name: Cow::Owned(self.name.clone().into_owned()),
            },
        }
    }
}

impl fmt::Display for PropName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for PropName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<CStr> for PropName {
    fn eq(&self, other: &CStr) -> bool {
        self.as_c_str() == other
    }
}

impl PartialEq<str> for PropName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// An owned property name, made by the per-level functions (e.g. [`num_files_at_level`]) or
/// by `to_owned()` on a [`PropName`]; it dereferences to [`PropName`].
#[derive(PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PropertyName {
    name: PropName,
}

impl PropertyName {
    fn of(text: String) -> PropertyName {
        // Property names are built here from nul-free text; a nul would only make it empty.
        let c = CString::new(text).unwrap_or_default();
        PropertyName {
            name: PropName { name: Cow::Owned(c) },
        }
    }

    /// The name as an owned C string.
    pub fn into_c_string(self) -> CString {
        self.name.name.into_owned()
    }

    /// The name as an owned string.
    pub fn into_string(self) -> String {
        self.name.as_str().to_owned()
    }
}

impl std::ops::Deref for PropertyName {
    type Target = PropName;
    fn deref(&self) -> &PropName {
        &self.name
    }
}

impl Borrow<PropName> for PropertyName {
    fn borrow(&self) -> &PropName {
        &self.name
    }
}

impl AsRef<CStr> for PropertyName {
    fn as_ref(&self) -> &CStr {
        self.name.as_c_str()
    }
}

impl AsRef<str> for PropertyName {
    fn as_ref(&self) -> &str {
        self.name.as_str()
    }
}

impl fmt::Display for PropertyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.name, f)
    }
}

impl fmt::Debug for PropertyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.name, f)
    }
}

impl PartialEq<String> for PropertyName {
    fn eq(&self, other: &String) -> bool {
        self.name.as_str() == other
    }
}

impl PartialEq<CString> for PropertyName {
    fn eq(&self, other: &CString) -> bool {
        self.name.as_c_str() == other.as_c_str()
    }
}

/// A value usable as a C string name (the `rocksdb` crate's `CStrLike`): `&str`, `&String`,
/// `&CStr`, `CString`, `&CString`, [`&PropName`](PropName) and [`PropertyName`] (owned or
/// borrowed). Text holding a nul byte cannot be one; baking it is an error.
pub trait CStrLike {
    /// What the value bakes into: something that dereferences to a [`CStr`].
    type Baked: std::ops::Deref<Target = CStr>;
    /// Why baking can fail.
    type Error: fmt::Debug + fmt::Display;
    /// The value as a C string, allocating if needed; fails on text with a nul byte.
    fn bake(self) -> Result<Self::Baked, Self::Error>;
    /// The value as an owned [`CString`]; fails on text with a nul byte.
    fn into_c_string(self) -> Result<CString, Self::Error>;
}

impl CStrLike for &str {
    type Baked = CString;
    type Error = NulError;
    fn bake(self) -> Result<CString, NulError> {
        CString::new(self)
    }
    fn into_c_string(self) -> Result<CString, NulError> {
        CString::new(self)
    }
}

impl CStrLike for &String {
    type Baked = CString;
    type Error = NulError;
    fn bake(self) -> Result<CString, NulError> {
        CString::new(self.as_str())
    }
    fn into_c_string(self) -> Result<CString, NulError> {
        CString::new(self.as_str())
    }
}

impl CStrLike for &CStr {
    type Baked = Self;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<Self, Self::Error> {
        Ok(self)
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self.to_owned())
    }
}

impl CStrLike for CString {
    type Baked = CString;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<CString, Self::Error> {
        Ok(self)
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self)
    }
}

impl<'a> CStrLike for &'a CString {
    type Baked = &'a CStr;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<&'a CStr, Self::Error> {
        Ok(self.as_c_str())
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self.clone())
    }
}

impl<'a> CStrLike for &'a PropName {
    type Baked = &'a CStr;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<&'a CStr, Self::Error> {
        Ok(self.as_c_str())
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self.as_c_str().to_owned())
    }
}

impl CStrLike for PropertyName {
    type Baked = CString;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<CString, Self::Error> {
        Ok(self.into_c_string())
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self.into_c_string())
    }
}

impl<'a> CStrLike for &'a PropertyName {
    type Baked = &'a CStr;
    type Error = std::convert::Infallible;
    fn bake(self) -> Result<&'a CStr, Self::Error> {
        Ok(self.as_c_str())
    }
    fn into_c_string(self) -> Result<CString, Self::Error> {
        Ok(self.as_c_str().to_owned())
    }
}

/// The name as text, or an InvalidArgument error naming the problem (a nul byte, non-UTF-8).
pub(crate) fn name_text(name: impl CStrLike) -> crate::error::Result<String> {
    let baked = name
        .bake()
        .map_err(|e| crate::error::Error::invalid(format!("property name: {e}")))?;
    baked
        .to_str()
        .map(str::to_owned)
        .map_err(|_| crate::error::Error::invalid("property name is not UTF-8"))
}

fn at_level(stem: &str, level: usize) -> PropertyName {
    PropertyName::of(format!("rocksdb.{stem}{level}"))
}

/// `rocksdb.num-files-at-level<level>`: the number of table files at `level`.
pub fn num_files_at_level(level: usize) -> PropertyName {
    at_level("num-files-at-level", level)
}

/// `rocksdb.compression-ratio-at-level<level>`: the compression ratio of the files at `level`.
pub fn compression_ratio_at_level(level: usize) -> PropertyName {
    at_level("compression-ratio-at-level", level)
}

/// `rocksdb.aggregated-table-properties-at-level<level>`: the table properties of `level`'s files
/// summed.
pub fn aggregated_table_properties_at_level(level: usize) -> PropertyName {
    at_level("aggregated-table-properties-at-level", level)
}

macro_rules! property_names {
    ($($(#[$doc:meta])* $id:ident = $lit:literal;)*) => {
        $($(#[$doc])* pub const $id: &PropName = &PropName::constant($lit);)*
    };
}

property_names! {
    /// `rocksdb.stats`: the text of the DB and column-family statistics.
    STATS = c"rocksdb.stats";
    /// `rocksdb.sstables`: a listing of the table files.
    SSTABLES = c"rocksdb.sstables";
    /// `rocksdb.cfstats`: column-family statistics.
    CFSTATS = c"rocksdb.cfstats";
    /// `rocksdb.cfstats-no-file-histogram`: column-family statistics without the file-read histogram.
    CFSTATS_NO_FILE_HISTOGRAM = c"rocksdb.cfstats-no-file-histogram";
    /// `rocksdb.cf-file-histogram`: the histogram of file reads per level.
    CF_FILE_HISTOGRAM = c"rocksdb.cf-file-histogram";
    /// `rocksdb.dbstats`: DB-wide statistics.
    DBSTATS = c"rocksdb.dbstats";
    /// `rocksdb.levelstats`: files and bytes per level.
    LEVELSTATS = c"rocksdb.levelstats";
    /// `rocksdb.num-immutable-mem-table`: immutable memtables not yet flushed.
    NUM_IMMUTABLE_MEM_TABLE = c"rocksdb.num-immutable-mem-table";
    /// `rocksdb.num-immutable-mem-table-flushed`: immutable memtables already flushed.
    NUM_IMMUTABLE_MEM_TABLE_FLUSHED = c"rocksdb.num-immutable-mem-table-flushed";
    /// `rocksdb.mem-table-flush-pending`: 1 if a flush is pending, else 0.
    MEM_TABLE_FLUSH_PENDING = c"rocksdb.mem-table-flush-pending";
    /// `rocksdb.num-running-flushes`: flushes running now.
    NUM_RUNNING_FLUSHES = c"rocksdb.num-running-flushes";
    /// `rocksdb.compaction-pending`: 1 if a compaction is pending, else 0.
    COMPACTION_PENDING = c"rocksdb.compaction-pending";
    /// `rocksdb.num-running-compactions`: compactions running now.
    NUM_RUNNING_COMPACTIONS = c"rocksdb.num-running-compactions";
    /// `rocksdb.background-errors`: the number of background errors seen.
    BACKGROUND_ERRORS = c"rocksdb.background-errors";
    /// `rocksdb.cur-size-active-mem-table`: bytes in the active memtable.
    CUR_SIZE_ACTIVE_MEM_TABLE = c"rocksdb.cur-size-active-mem-table";
    /// `rocksdb.cur-size-all-mem-tables`: bytes in the active and unflushed immutable memtables.
    CUR_SIZE_ALL_MEM_TABLES = c"rocksdb.cur-size-all-mem-tables";
    /// `rocksdb.size-all-mem-tables`: bytes in all memtables, also flushed ones still pinned.
    SIZE_ALL_MEM_TABLES = c"rocksdb.size-all-mem-tables";
    /// `rocksdb.num-entries-active-mem-table`: entries in the active memtable.
    NUM_ENTRIES_ACTIVE_MEM_TABLE = c"rocksdb.num-entries-active-mem-table";
    /// `rocksdb.num-entries-imm-mem-tables`: entries in the unflushed immutable memtables.
    NUM_ENTRIES_IMM_MEM_TABLES = c"rocksdb.num-entries-imm-mem-tables";
    /// `rocksdb.num-deletes-active-mem-table`: deletions in the active memtable.
    NUM_DELETES_ACTIVE_MEM_TABLE = c"rocksdb.num-deletes-active-mem-table";
    /// `rocksdb.num-deletes-imm-mem-tables`: deletions in the unflushed immutable memtables.
    NUM_DELETES_IMM_MEM_TABLES = c"rocksdb.num-deletes-imm-mem-tables";
    /// `rocksdb.estimate-num-keys`: an estimate of the number of keys.
    ESTIMATE_NUM_KEYS = c"rocksdb.estimate-num-keys";
    /// `rocksdb.estimate-table-readers-mem`: memory held by open table readers, blocks excluded.
    ESTIMATE_TABLE_READERS_MEM = c"rocksdb.estimate-table-readers-mem";
    /// `rocksdb.is-file-deletions-enabled`: 0 while file deletions are disabled.
    IS_FILE_DELETIONS_ENABLED = c"rocksdb.is-file-deletions-enabled";
    /// `rocksdb.num-snapshots`: live snapshots.
    NUM_SNAPSHOTS = c"rocksdb.num-snapshots";
    /// `rocksdb.oldest-snapshot-time`: the Unix time of the oldest live snapshot, 0 if none.
    OLDEST_SNAPSHOT_TIME = c"rocksdb.oldest-snapshot-time";
    /// `rocksdb.num-live-versions`: LSM versions still referenced.
    NUM_LIVE_VERSIONS = c"rocksdb.num-live-versions";
    /// `rocksdb.current-super-version-number`: bumped at each change of the LSM tree.
    CURRENT_SUPER_VERSION_NUMBER = c"rocksdb.current-super-version-number";
    /// `rocksdb.estimate-live-data-size`: an estimate of the bytes of live data.
    ESTIMATE_LIVE_DATA_SIZE = c"rocksdb.estimate-live-data-size";
    /// `rocksdb.min-log-number-to-keep`: the oldest WAL number still needed.
    MIN_LOG_NUMBER_TO_KEEP = c"rocksdb.min-log-number-to-keep";
    /// `rocksdb.min-obsolete-sst-number-to-keep`: the smallest obsolete table number kept.
    MIN_OBSOLETE_SST_NUMBER_TO_KEEP = c"rocksdb.min-obsolete-sst-number-to-keep";
    /// `rocksdb.total-sst-files-size`: bytes of all table files of all versions.
    TOTAL_SST_FILES_SIZE = c"rocksdb.total-sst-files-size";
    /// `rocksdb.live-sst-files-size`: bytes of the table files of the current version.
    LIVE_SST_FILES_SIZE = c"rocksdb.live-sst-files-size";
    /// `rocksdb.base-level`: the level L0 compacts into.
    BASE_LEVEL = c"rocksdb.base-level";
    /// `rocksdb.estimate-pending-compaction-bytes`: bytes compaction must rewrite to settle.
    ESTIMATE_PENDING_COMPACTION_BYTES = c"rocksdb.estimate-pending-compaction-bytes";
    /// `rocksdb.aggregated-table-properties`: the table properties of all files summed.
    AGGREGATED_TABLE_PROPERTIES = c"rocksdb.aggregated-table-properties";
    /// `rocksdb.actual-delayed-write-rate`: the write rate while writes are delayed, else 0.
    ACTUAL_DELAYED_WRITE_RATE = c"rocksdb.actual-delayed-write-rate";
    /// `rocksdb.is-write-stopped`: 1 while writes are stopped.
    IS_WRITE_STOPPED = c"rocksdb.is-write-stopped";
    /// `rocksdb.estimate-oldest-key-time`: the time of the oldest key (FIFO compaction).
    ESTIMATE_OLDEST_KEY_TIME = c"rocksdb.estimate-oldest-key-time";
    /// `rocksdb.block-cache-capacity`: the block cache's capacity in bytes.
    BLOCK_CACHE_CAPACITY = c"rocksdb.block-cache-capacity";
    /// `rocksdb.block-cache-usage`: bytes in the block cache.
    BLOCK_CACHE_USAGE = c"rocksdb.block-cache-usage";
    /// `rocksdb.block-cache-pinned-usage`: bytes of pinned entries in the block cache.
    BLOCK_CACHE_PINNED_USAGE = c"rocksdb.block-cache-pinned-usage";
    /// `rocksdb.options-statistics`: the statistics object's text.
    OPTIONS_STATISTICS = c"rocksdb.options-statistics";
    /// `rocksdb.num-blob-files`: blob files of the current version.
    NUM_BLOB_FILES = c"rocksdb.num-blob-files";
    /// `rocksdb.total-blob-file-size`: bytes of the blob files of the current version (Shale
    /// counts those; RocksDB all versions').
    TOTAL_BLOB_FILE_SIZE = c"rocksdb.total-blob-file-size";
    /// `rocksdb.live-blob-file-size`: bytes of the blob files of the current version.
    LIVE_BLOB_FILE_SIZE = c"rocksdb.live-blob-file-size";
    /// `rocksdb.live-blob-file-garbage-size`: garbage bytes recorded in those blob files.
    LIVE_BLOB_FILE_GARBAGE_SIZE = c"rocksdb.live-blob-file-garbage-size";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_rocksdb_spells_them() {
        let c: &CStr = STATS;
        assert_eq!(c, c"rocksdb.stats");
        assert_eq!(ESTIMATE_NUM_KEYS.as_str(), "rocksdb.estimate-num-keys");
        assert_eq!(num_files_at_level(3).into_string(), "rocksdb.num-files-at-level3");
        let owned: PropertyName = STATS.to_owned();
        assert_eq!(&*owned, STATS);
        assert_eq!(owned.to_string(), "rocksdb.stats");
    }

    #[test]
    fn every_argument_kind_bakes_to_the_same_text() {
        let s = String::from("rocksdb.stats");
        assert_eq!(name_text(STATS).unwrap(), s);
        let owned = STATS.to_owned();
        assert_eq!(name_text(&owned).unwrap(), s);
        assert_eq!(name_text(STATS.to_owned()).unwrap(), s);
        assert_eq!(name_text(&s).unwrap(), s);
        assert_eq!(name_text(s.as_str()).unwrap(), s);
        assert_eq!(name_text(c"rocksdb.stats").unwrap(), s);
        assert_eq!(name_text(CString::new("rocksdb.stats").unwrap()).unwrap(), s);
        assert!(name_text("a\0b").unwrap_err().is_invalid_argument());
    }
}
