//! A VersionEdit (one MANIFEST record): decode, re-encode, decode.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = shale::fuzzing::version_edit_decode(data);
});
