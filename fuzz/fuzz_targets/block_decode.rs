//! A data/index/meta block (decompressed, without trailer) decoded and iterated both ways.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (sel, block) = data.split_first().map(|(s, b)| (*s, b)).unwrap_or((0, data));
    let _ = shale::fuzzing::block_decode(block, sel);
});
