//! A whole CuckooTable file: open (footer, metaindex, properties, bucket geometry), verify,
//! scan both ways, single and batched lookups.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::cuckoo_table_read(data);
});
