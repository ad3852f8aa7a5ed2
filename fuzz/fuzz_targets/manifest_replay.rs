//! A MANIFEST file: log records, each a VersionEdit.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::manifest_replay(data);
});
