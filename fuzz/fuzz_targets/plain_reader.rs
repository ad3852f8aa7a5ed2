//! A whole PlainTable file: open (footer, properties, index and bloom built or loaded), a
//! forward scan, seeks and point lookups.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::plain_table_read(data);
});
