//! One type for a table file of any format: reading dispatches on the footer's magic number
//! (so one DB can hold block-based, plain and cuckoo files side by side, as RocksDB's
//! `AdaptiveTableFactory` reads them), writing follows `Options::table_factory`.

use std::sync::Arc;

use super::block_based::builder::TableBuilder;
use super::block_based::reader::{Table, TableIterator};
use super::cuckoo::builder::CuckooTableBuilder;
use super::cuckoo::reader::{CuckooTable, CuckooTableIterator};
use super::format::{BLOCK_BASED_MAGIC, CUCKOO_MAGIC, LEGACY_BLOCK_BASED_MAGIC, LEGACY_PLAIN_MAGIC, PLAIN_MAGIC};
use super::info::TableInfo;
use super::plain::builder::PlainTableBuilder;
use super::plain::format::PlainTableFactoryOptions;
use super::plain::reader::{PlainTable, PlainTableIterator};
use super::properties::TableProperties;
use super::reader_options::TableReaderOptions;
use crate::error::{Error, Result};
use crate::fs::{RandomAccessFile, WritableFile};
use crate::iterator::InternalIterator;
use crate::slice_transform::PrefixExtractor;
use crate::table::pinnable::{Home, Val};

/// The format of a table file, from its magic number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableFormat {
    BlockBased,
    Plain,
    Cuckoo,
}

/// The format named by the last 8 bytes of a file (its magic number).
pub(crate) fn format_of(file: &dyn RandomAccessFile, file_name: &str, file_size: u64) -> Result<TableFormat> {
    if file_size < 8 {
        return Err(Error::corruption(
            file_name,
            Some(0),
            format!("file is too short ({file_size} bytes) to be a table file"),
        ));
    }
    let mut b = [0u8; 8];
    file.read_exact_at(file_size - 8, &mut b)?;
    match u64::from_le_bytes(b) {
        BLOCK_BASED_MAGIC | LEGACY_BLOCK_BASED_MAGIC => Ok(TableFormat::BlockBased),
        PLAIN_MAGIC | LEGACY_PLAIN_MAGIC => Ok(TableFormat::Plain),
        CUCKOO_MAGIC => Ok(TableFormat::Cuckoo),
        m => Err(Error::corruption(
            file_name,
            Some(file_size - 8),
            format!("bad table magic number {m:#018x}"),
        )),
    }
}

/// What reading plain tables needs besides [`TableReaderOptions`].
#[derive(Clone, Default)]
pub(crate) struct FormatReadOptions {
    pub plain: PlainTableFactoryOptions,
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
}

/// An open table file of any format (cheap to clone).
#[derive(Clone)]
pub(crate) enum AnyTable {
    Block(Arc<Table>),
    Plain(Arc<PlainTable>),
    Cuckoo(Arc<CuckooTable>),
}

impl std::fmt::Debug for AnyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} table {}", self.format(), self.file_name())
    }
}

impl AnyTable {
    /// Open a table file, whatever its format.
    pub(crate) fn open(
        file: Arc<dyn RandomAccessFile>,
        file_name: String,
        file_size: u64,
        opts: TableReaderOptions,
        fopts: &FormatReadOptions,
    ) -> Result<AnyTable> {
        Ok(match format_of(&*file, &file_name, file_size)? {
            TableFormat::BlockBased => AnyTable::Block(Table::open(file, file_name, file_size, opts)?),
            TableFormat::Plain => {
                // A table built without a prefix extractor is read in total order whatever the
                // DB's extractor; one built with an extractor needs the same one.
                AnyTable::Plain(Arc::new(PlainTable::open(
                    file,
                    file_name,
                    file_size,
                    &opts,
                    &fopts.plain,
                    fopts.prefix_extractor.clone(),
                )?))
            }
            TableFormat::Cuckoo => AnyTable::Cuckoo(Arc::new(CuckooTable::open(file, file_name, file_size, &opts)?)),
        })
    }

    pub(crate) fn format(&self) -> TableFormat {
        match self {
            AnyTable::Block(_) => TableFormat::BlockBased,
            AnyTable::Plain(_) => TableFormat::Plain,
            AnyTable::Cuckoo(_) => TableFormat::Cuckoo,
        }
    }

    /// The block-based table, if this is one.
    pub(crate) fn as_block(&self) -> Option<&Arc<Table>> {
        match self {
            AnyTable::Block(t) => Some(t),
            _ => None,
        }
    }

    /// The first entry at or after `lookup_ikey` with the same user key, handed to `found`
    /// (internal key, value with the owner that can pin it).
    #[inline]
    pub(crate) fn get_with<R>(
        &self,
        lookup_ikey: &[u8],
        verify: bool,
        fill_cache: bool,
        found: impl FnOnce(&[u8], Val<'_>) -> R,
    ) -> Result<Option<R>> {
        match self {
            AnyTable::Block(t) => t.get_with(lookup_ikey, verify, fill_cache, found),
            // SAFETY: a plain table hands out values as slices of its file bytes (the file's
            // mapping or the copy it read at open), which it owns and never changes.
            AnyTable::Plain(t) => t.get_with(lookup_ikey, verify, fill_cache, |k, v| {
                found(k, unsafe { Val::pinned(v, Home::Table(t)) })
            }),
            // SAFETY: a cuckoo table hands out values as slices of the buffer it owns (read at
            // open, never changed).
            AnyTable::Cuckoo(t) => t.get_with(lookup_ikey, verify, fill_cache, |k, v| {
                found(k, unsafe { Val::pinned(v, Home::Table(t)) })
            }),
        }
    }

    /// An iterator over the whole table in internal-key order.
    pub(crate) fn iter(&self, verify: bool, fill_cache: bool) -> AnyTableIterator {
        match self {
            AnyTable::Block(t) => AnyTableIterator::Block(t.iter(verify, fill_cache)),
            AnyTable::Plain(t) => AnyTableIterator::Plain(t.iter()),
            AnyTable::Cuckoo(t) => AnyTableIterator::Cuckoo(t.iter()),
        }
    }

    pub(crate) fn properties(&self) -> &TableProperties {
        match self {
            AnyTable::Block(t) => t.properties(),
            AnyTable::Plain(t) => t.properties(),
            AnyTable::Cuckoo(t) => t.properties(),
        }
    }

    /// The table's range tombstones (start internal key, end user key); only block-based
    /// tables have them.
    pub(crate) fn range_tombstones(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        match self {
            AnyTable::Block(t) => t.range_tombstones(),
            _ => Ok(Vec::new()),
        }
    }

    /// True when the table may hold range tombstones.
    pub(crate) fn may_have_range_tombstones(&self) -> bool {
        match self {
            AnyTable::Block(t) => {
                t.properties().num_range_deletions > 0 || t.meta_blocks().contains_key("rocksdb.range_del")
            }
            _ => false,
        }
    }

    /// Check every checksum (block-based) or the table's structure (plain, cuckoo: they have
    /// no checksums; their readers validate the layout at open).
    pub(crate) fn verify_checksums(&self) -> Result<()> {
        match self {
            AnyTable::Block(t) => t.verify_checksums(),
            AnyTable::Plain(_) => Ok(()),
            AnyTable::Cuckoo(t) => t.verify(),
        }
    }

    pub(crate) fn approximate_memory_usage(&self) -> usize {
        match self {
            AnyTable::Block(t) => t.approximate_memory_usage(),
            AnyTable::Plain(t) => t.approximate_memory_usage(),
            AnyTable::Cuckoo(t) => t.approximate_memory_usage(),
        }
    }

    pub(crate) fn file_name(&self) -> &str {
        match self {
            AnyTable::Block(t) => t.file_name(),
            AnyTable::Plain(t) => t.file_name(),
            AnyTable::Cuckoo(t) => t.file_name(),
        }
    }
}

/// An iterator over a table of any format. Not boxed per variant: the block-based one is the
/// hot path and lives inline in the level iterator.
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyTableIterator {
    Block(TableIterator),
    Plain(PlainTableIterator),
    Cuckoo(CuckooTableIterator),
}

macro_rules! each {
    ($self:expr, $it:ident => $e:expr) => {
        match $self {
            AnyTableIterator::Block($it) => $e,
            AnyTableIterator::Plain($it) => $e,
            AnyTableIterator::Cuckoo($it) => $e,
        }
    };
}

impl InternalIterator for AnyTableIterator {
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    fn seek_to_first(&mut self) {
        each!(self, it => it.seek_to_first())
    }
    fn seek_to_last(&mut self) {
        each!(self, it => it.seek_to_last())
    }
    fn seek(&mut self, target: &[u8]) {
        each!(self, it => it.seek(target))
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        each!(self, it => it.seek_for_prev(target))
    }
    fn next(&mut self) {
        each!(self, it => it.next())
    }
    fn prev(&mut self) {
        each!(self, it => it.prev())
    }
    fn key(&self) -> &[u8] {
        each!(self, it => it.key())
    }
    fn value(&self) -> &[u8] {
        each!(self, it => it.value())
    }
    fn status(&self) -> Result<()> {
        each!(self, it => it.status())
    }
}

/// A table builder of any format. One lives per table file being written, so the size of the
/// largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyTableBuilder {
    Block(TableBuilder),
    Plain(PlainTableBuilder),
    Cuckoo(CuckooTableBuilder),
}

impl AnyTableBuilder {
    pub(crate) fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        match self {
            AnyTableBuilder::Block(b) => b.add(ikey, value),
            AnyTableBuilder::Plain(b) => b.add(ikey, value),
            AnyTableBuilder::Cuckoo(b) => b.add(ikey, value),
        }
    }
    pub(crate) fn add_range_tombstone(&mut self, start_ikey: &[u8], end_user_key: &[u8]) -> Result<()> {
        match self {
            AnyTableBuilder::Block(b) => b.add_range_tombstone(start_ikey, end_user_key),
            AnyTableBuilder::Plain(b) => b.add_range_tombstone(start_ikey, end_user_key),
            AnyTableBuilder::Cuckoo(b) => b.add_range_tombstone(start_ikey, end_user_key),
        }
    }
    pub(crate) fn file_size_estimate(&self) -> u64 {
        match self {
            AnyTableBuilder::Block(b) => b.file_size_estimate(),
            AnyTableBuilder::Plain(b) => b.file_size_estimate(),
            AnyTableBuilder::Cuckoo(b) => b.file_size_estimate(),
        }
    }
    pub(crate) fn finish(self) -> Result<(TableInfo, Box<dyn WritableFile>)> {
        match self {
            AnyTableBuilder::Block(b) => b.finish(),
            AnyTableBuilder::Plain(b) => b.finish(),
            AnyTableBuilder::Cuckoo(b) => b.finish(),
        }
    }
}
