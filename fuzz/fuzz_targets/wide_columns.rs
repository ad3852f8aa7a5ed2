//! A wide-column entity in RocksDB's serialization (the value of a `0x16` entry).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::wide_columns_decode(data);
});
