//! A whole block-based table file: open (footer, metaindex, properties, index, filter), scan,
//! point lookup.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::table_read(data);
});
