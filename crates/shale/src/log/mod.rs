//! RocksDB log file format (WAL and MANIFEST): 32 KiB blocks of CRC-protected physical records.
//!
//! Layout (RocksDB `db/log_format.h`): every block is 32768 bytes (the last may be partial); a
//! physical record is `masked crc32c fixed32 | length fixed16 | type u8 [| log_number fixed32]`
//! followed by `length` payload bytes and never straddles a block boundary. A logical record is
//! split into Full or First/Middle*/Last fragments. The CRC covers the type byte, the log number
//! (recyclable types only) and the payload.

mod format;
mod reader;
mod writer;

pub use format::DBRecoveryMode;
pub(crate) use format::{rt, BLOCK_SIZE, HEADER_SIZE, RECYCLABLE_HEADER_SIZE};

#[allow(unused_imports)]
pub(crate) use reader::Reader;
#[cfg(test)]
#[allow(unused_imports)]
pub(crate) use writer::encode_records_recyclable;
#[allow(unused_imports)]
pub(crate) use writer::{encode_records, Writer};

#[cfg(test)]
pub(crate) mod tests;
