//! Index and filter layout options and the writer side of RocksDB's partitioned index
//! (`kTwoLevelIndexSearch`) and partitioned filters (`partition_filters`); the reader side is in
//! `reader/index.rs` and `reader/partitioned_filter.rs`. Formats: `docs/format-details.md`.

use crate::coding::put_varsigned64;
use crate::error::Result;
use crate::key::{make_internal_key, user_key, vt};
use crate::table::block::BlockBuilder;
use crate::table::block_based::filter::{millibits_per_key, FilterBuilder};
use crate::table::block_based::format::BLOCK_TRAILER_LEN;
use crate::table::format::BlockHandle;

/// The index a block-based table is written with (the `rocksdb` crate's `BlockBasedIndexType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockBasedIndexType {
    /// One index block searched by binary search (`kBinarySearch`, the default).
    #[default]
    BinarySearch,
    /// RocksDB's hash index (`kHashSearch`). It needs a prefix extractor; Shale writes it as a
    /// binary-search index (what RocksDB also falls back to), which every reader accepts.
    HashSearch,
    /// A partitioned index (`kTwoLevelIndexSearch`): index partitions of about
    /// `metadata_block_size` bytes under a top-level index.
    TwoLevelIndexSearch,
}

impl BlockBasedIndexType {
    /// RocksDB's name in the OPTIONS file.
    pub(crate) fn rocksdb_name(self) -> &'static str {
        match self {
            BlockBasedIndexType::BinarySearch => "kBinarySearch",
            BlockBasedIndexType::HashSearch => "kHashSearch",
            BlockBasedIndexType::TwoLevelIndexSearch => "kTwoLevelIndexSearch",
        }
    }
}

/// Where index and filter blocks go and how they are laid out (part of the block-based options).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexLayout {
    pub index_type: BlockBasedIndexType,
    /// Partitioned filters (only with a partitioned index, as RocksDB sanitizes it).
    pub partition_filters: bool,
    /// Target size of index and filter partitions (RocksDB's default 4096; 0 puts one entry in
    /// each index partition, as RocksDB does).
    pub metadata_block_size: u64,
    /// Index and filter blocks enter the block cache at high priority (default true).
    pub cache_index_and_filter_blocks_with_high_priority: bool,
    /// With `cache_index_and_filter_blocks`, the top level of partitioned index and filters
    /// stays pinned while the table is open (default true).
    pub pin_top_level_index_and_filter: bool,
    /// High-priority share of the DB's own block cache (the one made from
    /// `set_lru_cache_capacity`); RocksDB's own default cache uses 0.
    pub high_pri_pool_ratio: f64,
}

impl Default for IndexLayout {
    fn default() -> Self {
        IndexLayout {
            index_type: BlockBasedIndexType::BinarySearch,
            partition_filters: false,
            metadata_block_size: 4096,
            cache_index_and_filter_blocks_with_high_priority: true,
            pin_top_level_index_and_filter: true,
            high_pri_pool_ratio: 0.0,
        }
    }
}

/// A ratio for a cache pool, or a message naming `option` when it is outside 0..=1.
pub(crate) fn check_pool_ratio(option: &str, ratio: f64) -> std::result::Result<(), String> {
    if (0.0..=1.0).contains(&ratio) {
        Ok(())
    } else {
        Err(format!("{option} must be in [0, 1], got {ratio}"))
    }
}

impl IndexLayout {
    pub(crate) fn validate(&self) -> std::result::Result<(), String> {
        check_pool_ratio("high_pri_pool_ratio", self.high_pri_pool_ratio)?;
        if self.metadata_block_size > u32::MAX as u64 {
            return Err(format!(
                "metadata_block_size must be below 4 GiB, got {}",
                self.metadata_block_size
            ));
        }
        Ok(())
    }

    /// Whether the index is written partitioned.
    pub(crate) fn two_level(&self) -> bool {
        self.index_type == BlockBasedIndexType::TwoLevelIndexSearch
    }

    /// Whether filters are written partitioned.
    pub(crate) fn partitioned_filters(&self) -> bool {
        self.two_level() && self.partition_filters
    }
}

/// Decides where index partitions end, as RocksDB's flush-by-size policy over a partition
/// (cut before an entry once the partition holds `metadata_block_size` bytes, or would pass it
/// while above 90% of it).
pub(crate) struct PartitionCutter {
    target: usize,
    size: usize,
    entries: usize,
    /// Index (into the table's index entries) of the first entry of every partition but the
    /// first.
    pub cuts: Vec<usize>,
}

impl PartitionCutter {
    pub(crate) fn new(metadata_block_size: u64) -> PartitionCutter {
        PartitionCutter {
            target: metadata_block_size as usize,
            size: 0,
            entries: 0,
            cuts: Vec::new(),
        }
    }

    /// Before index entry number `n` (key `key_len` bytes, handle `h`): cut a partition if
    /// due. `last` is true for the table's last entry (never cut before it, as RocksDB).
    pub(crate) fn before_entry(&mut self, n: usize, key_len: usize, h: BlockHandle, last: bool) {
        // shared + non_shared varints, key, full handle; every entry is a restart point (4)
        let entry = 2 + key_len + h.encoded().len() + 4;
        if !last && self.entries > 0 {
            let deviation_limit = (self.target * 90).div_ceil(100);
            let curr = self.size + 4;
            if curr >= self.target || (curr + entry > self.target && curr > deviation_limit) {
                self.cuts.push(n);
                self.size = 0;
                self.entries = 0;
            }
        }
        self.size += entry;
        self.entries += 1;
    }
}

/// Cuts filter partitions as RocksDB's decoupled partitioned filters do: a partition is closed
/// before the key that would exceed the keys a `metadata_block_size` filter holds; its key is
/// the internal key (last user key, seq 0, kTypeDeletion) — the largest for that user key.
pub(crate) struct FilterPartitioner {
    keys_per_partition: usize,
    keys: usize,
    prev: Vec<u8>,
    /// Filter entries of the finished partitions (`rocksdb.num.filter_entries`).
    pub num_entries: u64,
    /// Finished partitions: (internal key, filter bytes).
    pub parts: Vec<(Vec<u8>, Vec<u8>)>,
}

impl FilterPartitioner {
    pub(crate) fn new(metadata_block_size: u64, bits_per_key: f64) -> FilterPartitioner {
        // RocksDB aims at 90% of the partition size, and FastLocalBloom's ApproximateNumEntries.
        let size = ((metadata_block_size * 90).div_ceil(100)).max(1) as usize;
        let millibits = millibits_per_key(bits_per_key).max(1) as usize;
        let usable = |bytes: usize| bytes.saturating_sub(5) & !63;
        let mut keys = 8000 * usable(size) / millibits;
        let mut larger = (size + 4).max(16);
        while keys == 0 && larger <= 100_000 {
            keys = 8000 * usable(larger) / millibits;
            larger += larger / 4;
        }
        FilterPartitioner {
            keys_per_partition: keys.max(1),
            keys: 0,
            prev: Vec::new(),
            num_entries: 0,
            parts: Vec::new(),
        }
    }

    /// Before a new (distinct) user key is added to `f`: close the partition if it is full.
    pub(crate) fn before_key(&mut self, f: &mut FilterBuilder, uk: &[u8]) {
        if self.keys >= self.keys_per_partition {
            self.cut(f);
        }
        self.keys += 1;
        self.prev.clear();
        self.prev.extend_from_slice(uk);
    }

    fn cut(&mut self, f: &mut FilterBuilder) {
        self.num_entries += f.num_entries() as u64;
        if let Some(bytes) = f.finish() {
            self.parts.push((make_internal_key(&self.prev, 0, vt::DELETION), bytes));
        }
        self.keys = 0;
    }

    /// Close the last partition.
    pub(crate) fn finish(&mut self, f: &mut FilterBuilder) {
        if self.keys > 0 {
            self.cut(f);
        }
    }
}

/// An index block (partition or top level) over `(key, handle)` entries: keys as user keys
/// when `user_key_index`, values delta-encoded when `delta` (restart interval 1).
pub(crate) fn index_block<'a>(
    entries: impl IntoIterator<Item = (&'a [u8], BlockHandle)>,
    user_key_index: bool,
    delta: bool,
) -> Vec<u8> {
    let mut ib = BlockBuilder::new(1, delta);
    let mut prev: Option<BlockHandle> = None;
    let mut full = Vec::with_capacity(BlockHandle::MAX_ENCODED_LEN);
    let mut dv = Vec::with_capacity(10);
    for (sep, h) in entries {
        let key: &[u8] = if user_key_index { user_key(sep) } else { sep };
        full.clear();
        h.encode_to(&mut full);
        dv.clear();
        if let Some(p) = prev {
            put_varsigned64(&mut dv, h.size as i64 - p.size as i64);
        }
        ib.add_with_delta(key, &full, prev.map(|_| dv.as_slice()));
        prev = Some(h);
    }
    ib.finish()
}

/// What writing the index reports for the table properties.
pub(crate) struct IndexWritten {
    pub handle: BlockHandle,
    /// `rocksdb.index.size`: the uncompressed bytes of every index block plus one trailer.
    pub index_size: u64,
    /// `rocksdb.index.partitions` and `rocksdb.top-level.index.size` (partitioned only).
    pub partitions: Option<(u64, u64)>,
}

/// Write the index: one block, or the partitions (cut before the entries `cuts` names) then the
/// top level, whose keys are each partition's last separator. `write(bytes, compress)` appends
/// a block and returns its handle.
pub(crate) fn write_index(
    entries: &[(Vec<u8>, BlockHandle)],
    cuts: Option<&[usize]>,
    user_key_index: bool,
    delta: bool,
    write: &mut dyn FnMut(&[u8], bool) -> Result<BlockHandle>,
) -> Result<IndexWritten> {
    let Some(cuts) = cuts else {
        let raw = index_block(entries.iter().map(|(k, h)| (k.as_slice(), *h)), user_key_index, delta);
        let handle = write(&raw, true)?;
        return Ok(IndexWritten {
            handle,
            index_size: raw.len() as u64 + BLOCK_TRAILER_LEN as u64,
            partitions: None,
        });
    };
    let mut bounds: Vec<usize> = Vec::with_capacity(cuts.len() + 2);
    bounds.push(0);
    bounds.extend_from_slice(cuts);
    bounds.push(entries.len());
    let mut top: Vec<(&[u8], BlockHandle)> = Vec::new();
    let mut index_size = 0u64;
    for w in bounds.windows(2) {
        let part = &entries[w[0]..w[1]];
        let Some((last, _)) = part.last() else { continue };
        let raw = index_block(part.iter().map(|(k, h)| (k.as_slice(), *h)), user_key_index, delta);
        index_size += raw.len() as u64;
        top.push((last.as_slice(), write(&raw, true)?));
    }
    let raw = index_block(top.iter().copied(), user_key_index, delta);
    index_size += raw.len() as u64;
    let handle = write(&raw, true)?;
    Ok(IndexWritten {
        handle,
        index_size: index_size + BLOCK_TRAILER_LEN as u64,
        partitions: Some((top.len() as u64, raw.len() as u64)),
    })
}

/// Write filter partitions (uncompressed) and their top-level index; the top level's handle and
/// `rocksdb.filter.size` (the bytes of every partition and of the top level).
pub(crate) fn write_partitioned_filter(
    parts: &[(Vec<u8>, Vec<u8>)],
    user_key_index: bool,
    delta: bool,
    write: &mut dyn FnMut(&[u8], bool) -> Result<BlockHandle>,
) -> Result<(BlockHandle, u64)> {
    let mut top: Vec<(&[u8], BlockHandle)> = Vec::with_capacity(parts.len());
    let mut size = 0u64;
    for (k, bytes) in parts {
        size += bytes.len() as u64;
        top.push((k.as_slice(), write(bytes, false)?));
    }
    let raw = index_block(top.iter().copied(), user_key_index, delta);
    size += raw.len() as u64;
    Ok((write(&raw, false)?, size))
}
