//! A WAL file replayed as recovery does: log records in each WAL recovery mode, each decoded as
//! a WriteBatch.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mode, wal) = data.split_first().map(|(s, b)| (*s, b)).unwrap_or((0, data));
    let _ = shale::fuzzing::wal_replay(wal, mode);
});
