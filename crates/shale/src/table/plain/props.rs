//! The tail of a PlainTable file: footer, metaindex block and properties block (the block format
//! of block-based tables, but with no block trailers), read from and written to byte slices.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::coding::{decode_fixed32, get_varint64, put_fixed64, Reader};
use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::table::block::{Block, BlockBuilder, BlockIter, EntryFormat, KeyOrder};
use crate::table::format::PROPERTIES_NAME;
use crate::table::format::{BlockHandle, FOOTER_LEN, LEGACY_FOOTER_LEN, LEGACY_PLAIN_MAGIC, PLAIN_MAGIC};
use crate::table::properties::TableProperties;

/// What the footer and the meta blocks of a PlainTable say.
pub(crate) struct PlainTail {
    pub meta: BTreeMap<String, BlockHandle>,
    pub props: TableProperties,
    /// Where the footer starts (the end of the metaindex block).
    pub footer_offset: u64,
}

fn corrupt(off: u64, msg: impl Into<String>) -> Error {
    Error::corruption("", Some(off), msg)
}

/// The metaindex handle from the footer of `file` (legacy 48-byte form, as RocksDB writes it,
/// or the 53-byte form with the current plain magic).
pub(crate) fn decode_footer(file: &[u8]) -> Result<(BlockHandle, u64)> {
    let size = file.len() as u64;
    if file.len() < LEGACY_FOOTER_LEN {
        return Err(corrupt(
            0,
            format!("file of {size} bytes is too short to be a plain table"),
        ));
    }
    let magic = u64::from_le_bytes(file[file.len() - 8..].try_into().expect("8 bytes"));
    let (footer_len, handles_at) = match magic {
        LEGACY_PLAIN_MAGIC => (LEGACY_FOOTER_LEN, 0),
        PLAIN_MAGIC => {
            if file.len() < FOOTER_LEN {
                return Err(corrupt(0, "file is too short for a plain table footer"));
            }
            (FOOTER_LEN, 1)
        }
        _ => {
            return Err(corrupt(
                size - 8,
                format!("not a plain table file (magic number {magic:#018x})"),
            ))
        }
    };
    let footer_off = size - footer_len as u64;
    let f = &file[footer_off as usize..];
    if footer_len == FOOTER_LEN {
        let fv = decode_fixed32(&f[41..45]).unwrap_or(0);
        if fv != 0 && fv != 1 {
            return Err(corrupt(
                footer_off,
                format!("unsupported plain table format_version {fv}"),
            ));
        }
    }
    let mut r = Reader::new(&f[handles_at..]);
    let metaindex =
        BlockHandle::decode_from(&mut r).ok_or_else(|| corrupt(footer_off, "bad metaindex handle in footer"))?;
    check_handle(metaindex, footer_off, "metaindex")?;
    Ok((metaindex, footer_off))
}

/// A meta block must lie before the footer (`limit`).
pub(crate) fn check_handle(h: BlockHandle, limit: u64, what: &str) -> Result<()> {
    match h.offset.checked_add(h.size) {
        Some(end) if end <= limit => Ok(()),
        _ => Err(corrupt(
            h.offset,
            format!(
                "{what} block ({}, {}) extends past the end of the tables' blocks ({limit})",
                h.offset, h.size
            ),
        )),
    }
}

fn block_entries(file: &[u8], h: BlockHandle, what: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let bytes = file[h.offset as usize..(h.offset + h.size) as usize].to_vec();
    let block = Block::new(bytes).map_err(|e| e.in_file("", Some(h.offset)))?;
    let mut it = BlockIter::new(Arc::new(block), KeyOrder::Bytewise, EntryFormat::Data);
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()
        .map_err(|e| corrupt(h.offset, format!("bad {what} block: {e}")))?;
    Ok(out)
}

/// Read footer, metaindex and properties of a whole plain table `file`.
pub(crate) fn read_tail(file: &[u8]) -> Result<PlainTail> {
    let (mh, footer_offset) = decode_footer(file)?;
    let mut meta = BTreeMap::new();
    for (k, v) in block_entries(file, mh, "metaindex")? {
        let name = String::from_utf8_lossy(&k).into_owned();
        let (h, _) = BlockHandle::decode(&v)
            .ok_or_else(|| corrupt(mh.offset, format!("bad block handle for meta block {name}")))?;
        check_handle(h, footer_offset, &name)?;
        meta.insert(name, h);
    }
    let ph = *meta
        .get(PROPERTIES_NAME)
        .ok_or_else(|| corrupt(mh.offset, "plain table has no properties block"))?;
    let raw: BTreeMap<String, Vec<u8>> = block_entries(file, ph, "properties")?
        .into_iter()
        .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
        .collect();
    let props = parse_properties(raw).map_err(|e| e.in_file("", Some(ph.offset)))?;
    Ok(PlainTail {
        meta,
        props,
        footer_offset,
    })
}

/// The standard properties PlainTable uses, decoded; every raw property kept.
pub(crate) fn parse_properties(raw: BTreeMap<String, Vec<u8>>) -> Result<TableProperties> {
    let num = |n: &str| -> Result<u64> {
        match raw.get(n) {
            None => Ok(0),
            Some(v) => get_varint64(v)
                .map(|(x, _)| x)
                .ok_or_else(|| Error::corrupt(format!("malformed property {n}"))),
        }
    };
    let st = |n: &str| -> String {
        raw.get(n)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    let mut p = TableProperties {
        data_size: num("rocksdb.data.size")?,
        index_size: num("rocksdb.index.size")?,
        filter_size: num("rocksdb.filter.size")?,
        raw_key_size: num("rocksdb.raw.key.size")?,
        raw_value_size: num("rocksdb.raw.value.size")?,
        num_data_blocks: num("rocksdb.num.data.blocks")?,
        num_entries: num("rocksdb.num.entries")?,
        num_filter_entries: num("rocksdb.num.filter_entries")?,
        num_deletions: num("rocksdb.deleted.keys")?,
        num_merge_operands: num("rocksdb.merge.operands")?,
        num_range_deletions: num("rocksdb.num.range-deletions")?,
        format_version: num("rocksdb.format.version")?,
        fixed_key_len: num("rocksdb.fixed.key.length")?,
        column_family_id: num("rocksdb.column.family.id")?,
        creation_time: num("rocksdb.creation.time")?,
        oldest_key_time: num("rocksdb.oldest.key.time")?,
        file_creation_time: num("rocksdb.file.creation.time")?,
        orig_file_number: num("rocksdb.original.file.number")?,
        ..TableProperties::default()
    };
    p.column_family_name = st("rocksdb.column.family.name");
    p.comparator_name = st("rocksdb.comparator");
    p.merge_operator_name = st("rocksdb.merge.operator");
    p.prefix_extractor_name = st("rocksdb.prefix.extractor.name");
    p.property_collectors_names = st("rocksdb.property.collectors");
    p.compression_name = st("rocksdb.compression");
    p.db_id = st("rocksdb.creating.db.identity");
    p.db_session_id = st("rocksdb.creating.session.identity");
    p.db_host_id = st("rocksdb.creating.host.identity");
    p.raw = raw;
    Ok(p)
}

/// Serialize a properties block (sorted names, one restart).
pub(crate) fn properties_block(props: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut b = BlockBuilder::new(usize::MAX, false);
    for (k, v) in props {
        b.add(k.as_bytes(), v);
    }
    b.finish()
}

/// Serialize a metaindex block.
pub(crate) fn metaindex_block(meta: &BTreeMap<&str, BlockHandle>) -> Vec<u8> {
    let mut b = BlockBuilder::new(1, false);
    for (k, h) in meta {
        b.add(k.as_bytes(), &h.encoded());
    }
    b.finish()
}

/// The 48-byte legacy footer RocksDB writes on every plain table.
pub(crate) fn legacy_footer(metaindex: BlockHandle) -> Vec<u8> {
    let mut v = Vec::with_capacity(LEGACY_FOOTER_LEN);
    metaindex.encode_to(&mut v);
    BlockHandle::new(0, 0).encode_to(&mut v);
    v.resize(40, 0);
    put_fixed64(&mut v, LEGACY_PLAIN_MAGIC);
    v
}
