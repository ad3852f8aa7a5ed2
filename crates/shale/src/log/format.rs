//! The log format's constants: block and header sizes, record types, the CRC mask, and the
//! WAL recovery modes.

/// WAL recovery modes, as RocksDB names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DBRecoveryMode {
    /// Ignore a torn record at the tail of the last WAL only.
    TolerateCorruptedTailRecords,
    /// Any corruption is an error.
    AbsoluteConsistency,
    /// Stop replay at the first corrupt record (default).
    PointInTime,
    /// Skip corrupt records and go on.
    SkipAnyCorruptedRecord,
}

/// Size of a log block.
pub(crate) const BLOCK_SIZE: usize = 32768;
/// Legacy header: checksum (4) + length (2) + type (1).
pub(crate) const HEADER_SIZE: usize = 7;
/// Recyclable header: legacy header + log number (4).
pub(crate) const RECYCLABLE_HEADER_SIZE: usize = 11;

/// Physical record types.
#[allow(dead_code)] // every record type of the format
pub(crate) mod rt {
    pub const ZERO: u8 = 0;
    pub const FULL: u8 = 1;
    pub const FIRST: u8 = 2;
    pub const MIDDLE: u8 = 3;
    pub const LAST: u8 = 4;
    pub const RECYCLABLE_FULL: u8 = 5;
    pub const RECYCLABLE_FIRST: u8 = 6;
    pub const RECYCLABLE_MIDDLE: u8 = 7;
    pub const RECYCLABLE_LAST: u8 = 8;
    pub const SET_COMPRESSION_TYPE: u8 = 9;
    pub const UDT_SIZE: u8 = 10;
    pub const RECYCLABLE_UDT_SIZE: u8 = 11;
    pub const PREDECESSOR_WAL_INFO: u8 = 130;
    pub const RECYCLABLE_PREDECESSOR_WAL_INFO: u8 = 131;
    /// Unknown record types with this bit set may be skipped by readers.
    pub const SAFE_IGNORE_MASK: u8 = 0x80;

    /// Whether the type uses the 11-byte recyclable header.
    pub fn is_recyclable(t: u8) -> bool {
        matches!(t, 5..=8 | 11 | 131)
    }
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// RocksDB's CRC mask (`crc32c::Mask`): rotate right by 15 and add a constant.
#[inline]
pub(crate) fn crc_mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`crc_mask`].
#[inline]
pub(crate) fn crc_unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}
