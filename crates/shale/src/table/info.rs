//! What writing a table reports: its size, key range, sequence numbers and counts.

/// What a table builder's `finish` reports about the file it wrote (every format's builder).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TableInfo {
    pub file_size: u64,
    /// Smallest internal key (range tombstone starts included). Empty if the table is empty.
    pub smallest: Vec<u8>,
    /// Largest internal key; a range tombstone contributes `end | (MAX_SEQ, 0x0F)`.
    pub largest: Vec<u8>,
    pub smallest_seqno: u64,
    pub largest_seqno: u64,
    /// Point entries + range tombstones.
    pub num_entries: u64,
    /// Deletions + single deletions + range tombstones.
    pub num_deletions: u64,
    pub num_range_deletions: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    pub num_data_blocks: u64,
}
