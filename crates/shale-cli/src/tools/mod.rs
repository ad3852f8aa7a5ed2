//! RocksDB's command-line tools: `shale ldb` and `shale sst_dump`, with the calls into the
//! library's offline tools they share (`inspect`).

mod inspect;
pub mod ldb;
pub mod sst_dump;
