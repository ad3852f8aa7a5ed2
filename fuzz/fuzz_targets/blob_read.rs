//! A blob index and a blob file (RocksDB's blob log format): decoded and resolved.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::blob_read(data);
});
