//! Stand-alone access to PlainTable files for tools and compatibility tests (re-exported from
//! [`crate::tools`]): open one file and read it, or write one from a list of entries.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::fs::{name_of, FileSystem, PosixFs};
use crate::iterator::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key, MAX_SEQUENCE};
use crate::slice_transform::PrefixExtractor;
use crate::table::reader_options::TableReaderOptions;

use super::builder::{PlainTableBuilder, PlainTableBuilderOptions};
use super::format::PlainTableFactoryOptions;
use super::reader::PlainTable;

/// One entry of a table file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SstEntry {
    /// The user key.
    pub user_key: Vec<u8>,
    /// The sequence number.
    pub seq: u64,
    /// RocksDB's value type byte (1 Value, 0 Deletion, 2 Merge, ...).
    pub value_type: u8,
    /// The value (empty for a deletion).
    pub value: Vec<u8>,
}

fn entry(ikey: &[u8], value: &[u8]) -> Result<SstEntry> {
    let p = parse_internal_key(ikey)?;
    Ok(SstEntry {
        user_key: p.user_key.to_vec(),
        seq: p.seq,
        value_type: p.vtype,
        value: value.to_vec(),
    })
}

/// One open PlainTable file (bytewise comparator).
pub struct PlainTableReader {
    table: Arc<PlainTable>,
}

impl PlainTableReader {
    /// Open `path` through a mapping (`allow_mmap_reads`) or by reading it into memory.
    pub fn open(
        path: &Path,
        plain: &PlainTableFactoryOptions,
        prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
        allow_mmap_reads: bool,
    ) -> Result<PlainTableReader> {
        let fs = PosixFs;
        let file = if allow_mmap_reads {
            fs.open_random_mmap(path)?
        } else {
            fs.open_random(path)?
        };
        let size = file.size();
        let table = PlainTable::open(
            file,
            name_of(path),
            size,
            &TableReaderOptions::default(),
            plain,
            prefix_extractor,
        )?;
        Ok(PlainTableReader { table: Arc::new(table) })
    }

    /// Every entry in file order.
    pub fn scan(&self) -> Result<Vec<SstEntry>> {
        let mut it = self.table.iter();
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            out.push(entry(it.key(), it.value())?);
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The newest entry for `user_key` (a point lookup through the index and bloom).
    pub fn get(&self, user_key: &[u8]) -> Result<Option<SstEntry>> {
        let target = make_internal_key(user_key, MAX_SEQUENCE, crate::key::vt::FOR_SEEK);
        match self.table.get_with(&target, false, false, entry)? {
            Some(e) => Ok(Some(e?)),
            None => Ok(None),
        }
    }

    /// Entries from the first one with user key >= `user_key` (a total-order seek), at most
    /// `limit` of them.
    pub fn seek(&self, user_key: &[u8], limit: usize) -> Result<Vec<SstEntry>> {
        let target = make_internal_key(user_key, MAX_SEQUENCE, crate::key::vt::FOR_SEEK);
        let mut it = self.table.iter();
        it.seek(&target);
        let mut out = Vec::new();
        while it.valid() && out.len() < limit {
            out.push(entry(it.key(), it.value())?);
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// Every property as stored (plus the two sizes the reader adds, as RocksDB's does).
    pub fn properties(&self) -> BTreeMap<String, Vec<u8>> {
        self.table.properties().raw.clone()
    }

    /// Whether the file is read through a memory mapping.
    pub fn is_mmapped(&self) -> bool {
        self.table.is_mmapped()
    }
}

/// What [`write_plain_table`] writes besides the entries.
#[derive(Debug, Clone)]
pub struct PlainTableWriteOptions {
    /// The plain table's layout options.
    pub plain: PlainTableFactoryOptions,
    /// The prefix extractor whose name the file records and whose prefixes index it.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// The column family name recorded in the properties.
    pub column_family_name: String,
    /// The DB id recorded in the properties.
    pub db_id: String,
    /// The DB session id recorded in the properties.
    pub db_session_id: String,
    /// None: this machine's host name.
    pub db_host_id: Option<String>,
    /// The file number recorded in the properties.
    pub file_number: u64,
    /// The creation time (seconds since the Unix epoch) recorded in the properties.
    pub creation_time: u64,
}

impl Default for PlainTableWriteOptions {
    fn default() -> Self {
        PlainTableWriteOptions {
            plain: PlainTableFactoryOptions::default(),
            prefix_extractor: None,
            column_family_name: "default".into(),
            db_id: String::new(),
            db_session_id: String::new(),
            db_host_id: None,
            file_number: 0,
            creation_time: 0,
        }
    }
}

/// Write `entries` (in internal-key order) as a PlainTable file at `path`; returns its size.
pub fn write_plain_table(path: &Path, o: &PlainTableWriteOptions, entries: &[SstEntry]) -> Result<u64> {
    let file = PosixFs.new_writable(path)?;
    let mut b = PlainTableBuilder::new(
        PlainTableBuilderOptions {
            plain: o.plain.clone(),
            prefix_extractor: o.prefix_extractor.clone(),
            column_family_name: o.column_family_name.clone(),
            db_id: o.db_id.clone(),
            db_session_id: o.db_session_id.clone(),
            db_host_id: o.db_host_id.clone(),
            file_number: o.file_number,
            creation_time: o.creation_time,
            ..Default::default()
        },
        file,
    );
    for e in entries {
        b.add(&make_internal_key(&e.user_key, e.seq, e.value_type), &e.value)?;
    }
    let (info, mut file) = b.finish()?;
    file.sync()?;
    Ok(info.file_size)
}
