//! A WriteBatch in RocksDB's encoding.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::write_batch_decode(data);
});
