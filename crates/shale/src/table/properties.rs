//! A table's properties block, decoded: the same properties in every format.

use std::collections::BTreeMap;

use crate::coding::get_varint64;
use crate::error::{Error, Result};

/// Decoded table properties (the common ones) plus every raw property.
#[derive(Clone, Debug, Default)]
pub(crate) struct TableProperties {
    pub data_size: u64,
    pub index_size: u64,
    pub filter_size: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    pub num_data_blocks: u64,
    pub num_entries: u64,
    pub num_filter_entries: u64,
    pub num_deletions: u64,
    pub num_merge_operands: u64,
    pub num_range_deletions: u64,
    pub format_version: u64,
    pub fixed_key_len: u64,
    pub column_family_id: u64,
    pub creation_time: u64,
    pub oldest_key_time: u64,
    pub file_creation_time: u64,
    pub orig_file_number: u64,
    pub index_key_is_user_key: bool,
    pub index_value_is_delta_encoded: bool,
    /// `rocksdb.block.based.table.index.type` (0 when absent).
    pub index_type: u32,
    pub column_family_name: String,
    pub comparator_name: String,
    pub merge_operator_name: String,
    pub prefix_extractor_name: String,
    pub property_collectors_names: String,
    pub compression_name: String,
    pub compression_options: String,
    pub filter_policy_name: String,
    pub db_id: String,
    pub db_session_id: String,
    pub db_host_id: String,
    /// Every property as stored (name → raw bytes), for sst_dump.
    pub raw: BTreeMap<String, Vec<u8>>,
}

impl TableProperties {
    pub(crate) fn parse(raw: BTreeMap<String, Vec<u8>>) -> Result<TableProperties> {
        let num = |n: &str| -> u64 { raw.get(n).and_then(|v| get_varint64(v)).map(|(v, _)| v).unwrap_or(0) };
        let st = |n: &str| -> String {
            raw.get(n)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        let flag = |n: &str| -> Result<bool> {
            match raw.get(n) {
                None => Ok(false),
                Some(v) => match get_varint64(v) {
                    Some((x, _)) => Ok(x != 0),
                    None => Err(Error::corrupt(format!("malformed property {n}"))),
                },
            }
        };
        let index_type = match raw.get("rocksdb.block.based.table.index.type") {
            None => 0,
            Some(v) if v.len() >= 4 => u32::from_le_bytes(v[..4].try_into().unwrap()),
            Some(_) => {
                return Err(Error::corrupt(
                    "malformed property rocksdb.block.based.table.index.type",
                ))
            }
        };
        Ok(TableProperties {
            data_size: num("rocksdb.data.size"),
            index_size: num("rocksdb.index.size"),
            filter_size: num("rocksdb.filter.size"),
            raw_key_size: num("rocksdb.raw.key.size"),
            raw_value_size: num("rocksdb.raw.value.size"),
            num_data_blocks: num("rocksdb.num.data.blocks"),
            num_entries: num("rocksdb.num.entries"),
            num_filter_entries: num("rocksdb.num.filter_entries"),
            num_deletions: num("rocksdb.deleted.keys"),
            num_merge_operands: num("rocksdb.merge.operands"),
            num_range_deletions: num("rocksdb.num.range-deletions"),
            format_version: num("rocksdb.format.version"),
            fixed_key_len: num("rocksdb.fixed.key.length"),
            column_family_id: num("rocksdb.column.family.id"),
            creation_time: num("rocksdb.creation.time"),
            oldest_key_time: num("rocksdb.oldest.key.time"),
            file_creation_time: num("rocksdb.file.creation.time"),
            orig_file_number: num("rocksdb.original.file.number"),
            index_key_is_user_key: flag("rocksdb.index.key.is.user.key")?,
            index_value_is_delta_encoded: flag("rocksdb.index.value.is.delta.encoded")?,
            index_type,
            column_family_name: st("rocksdb.column.family.name"),
            comparator_name: st("rocksdb.comparator"),
            merge_operator_name: st("rocksdb.merge.operator"),
            prefix_extractor_name: st("rocksdb.prefix.extractor.name"),
            property_collectors_names: st("rocksdb.property.collectors"),
            compression_name: st("rocksdb.compression"),
            compression_options: st("rocksdb.compression_options"),
            filter_policy_name: st("rocksdb.filter.policy"),
            db_id: st("rocksdb.creating.db.identity"),
            db_session_id: st("rocksdb.creating.session.identity"),
            db_host_id: st("rocksdb.creating.host.identity"),
            raw,
        })
    }
}
