//! The order in which a log's flush is stored, so that a crash at any instant leaves the log
//! readable: the flush's bytes whole, or a torn tail that every log reader stops at.
//!
//! A WAL is written in RocksDB's log format (32 KiB blocks of records, each behind a 7-byte
//! header `crc32c | length | type`), and a flush always begins at a record boundary (the log
//! writer appends whole records). Where a flush lands on zeros written ahead of the data (a
//! mapped WAL, or a synced one), a crash inside the copy would otherwise leave a half-copied
//! record *in front of* zeros — and a mapped copy does not even fill its bytes in file order —
//! which a reader cannot tell from corruption in the middle of the log. So the first header of
//! the flush (with one byte after it: 8 bytes) is stored last, in one 8-byte store, after every
//! other byte: until that store the header reads as zeros, which every log reader takes as the
//! end of the written data (a torn tail when non-zero bytes follow; `log/reader.rs`). A crash
//! thus leaves the whole flush or none of it visible to recovery.
//!
//! The same module holds the crash tests' hook that ends the process in the middle of such a
//! copy ([`kill_inside_wal_appends`]).

use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// The log block size (RocksDB's `kBlockSize`).
const LOG_BLOCK: u64 = 32 * 1024;
/// A legacy record header: `crc32c fixed32 | length fixed16 | type u8`.
const LOG_HEADER: u64 = 7;
/// Bytes stored last: the first header and the byte after it (one 8-byte store).
pub(super) const HEAD: usize = 8;

/// Where the first record header of a flush written at file offset `at` starts, relative to the
/// flush: a block with less room left than a header is padded with zeros by the log writer and
/// the record starts in the next block.
pub(crate) fn head_offset(at: u64) -> usize {
    let left = LOG_BLOCK - at % LOG_BLOCK;
    if left < LOG_HEADER {
        left as usize
    } else {
        0
    }
}

/// The part of `data` (a flush written at `at`) stored last, as a range, or None when the flush
/// is too short to hold a header and a byte (not a log record: stored in file order).
pub(crate) fn head_range(at: u64, data: &[u8]) -> Option<std::ops::Range<usize>> {
    let h = head_offset(at);
    (data.len() >= h + HEAD).then(|| h..h + HEAD)
}

/// Copy `data` to `dst`: every byte but the head first, then the head in one 8-byte store.
///
/// # Safety
/// `dst` must be valid for writes of `data.len()` bytes and not overlap `data`.
pub(super) unsafe fn copy_head_last(dst: *mut u8, at: u64, data: &[u8]) {
    let Some(head) = head_range(at, data) else {
        // SAFETY: as the caller promises.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        return;
    };
    // SAFETY: both ranges lie inside `data` and `dst` (the caller's promise).
    unsafe {
        std::ptr::copy_nonoverlapping(data.as_ptr(), dst, head.start);
        std::ptr::copy_nonoverlapping(data.as_ptr().add(head.end), dst.add(head.end), data.len() - head.end);
    }
    // The head only after every other byte (a crash stops the thread between two instructions,
    // so program order is what the file holds).
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    let word = u64::from_ne_bytes(data[head.clone()].try_into().expect("8 bytes"));
    // SAFETY: `head` lies inside `dst`; one unaligned 8-byte store (a single instruction).
    unsafe { std::ptr::write_unaligned(dst.add(head.start) as *mut u64, word) };
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
}

/// 0: off. Otherwise one WAL flush in this many ends the process in the middle of its copy.
static KILL_ONE_IN: AtomicU64 = AtomicU64::new(0);
static KILL_RNG: AtomicU64 = AtomicU64::new(1);
static KILL_EXIT: AtomicI32 = AtomicI32::new(0);

/// For crash tests: from now on, one flush in `one_in` of a WAL on the POSIX file system (one
/// that keeps zeros ahead of its data: every mapped WAL, and synced ones) ends the process in
/// the middle of storing its bytes — a random part of the flush copied, as a `SIGKILL` during
/// the copy leaves it — after printing `kill point: wal.append_torn <file>`, with exit status
/// `exit_code`. 0 turns it off. Not for production use.
#[doc(hidden)]
pub fn kill_inside_wal_appends(one_in: u64, seed: u64, exit_code: i32) {
    KILL_RNG.store(seed | 1, Ordering::Relaxed);
    KILL_EXIT.store(exit_code, Ordering::Relaxed);
    KILL_ONE_IN.store(one_in, Ordering::Relaxed);
}

fn next_random() -> u64 {
    let mut x = KILL_RNG.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    KILL_RNG.store(x, Ordering::Relaxed);
    x
}

/// Whether this flush is to be interrupted ([`kill_inside_wal_appends`]); a relaxed load when
/// off.
#[inline]
pub(super) fn interrupt_now() -> Option<u64> {
    let n = KILL_ONE_IN.load(Ordering::Relaxed);
    if n == 0 {
        return None;
    }
    let x = next_random();
    x.is_multiple_of(n).then(next_random)
}

/// What a crash in the middle of a mapped copy of `data` can leave at `dst`: the head not
/// stored, and of the other bytes a random selection of 64-byte pieces (a `memcpy` stores in
/// no promised order), or all of them. `r` picks.
///
/// # Safety
/// As [`copy_head_last`].
pub(crate) unsafe fn copy_interrupted(dst: *mut u8, at: u64, data: &[u8], mut r: u64) {
    let head = head_range(at, data).unwrap_or(0..data.len());
    let all = r.is_multiple_of(4);
    let mut i = 0;
    while i < data.len() {
        let end = (i + 64).min(data.len());
        r = r.rotate_left(7) ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i as u64 + 1);
        if all || r & 1 == 1 {
            for (j, &b) in data.iter().enumerate().take(end).skip(i) {
                if !head.contains(&j) {
                    // SAFETY: j < data.len(), inside `dst` by the caller's promise.
                    unsafe { *dst.add(j) = b };
                }
            }
        }
        i = end;
    }
}

/// End the process now, as a crash would (`kill_inside_wal_appends`).
pub(super) fn die(file: &str) -> ! {
    println!("kill point: wal.append_torn {file}");
    std::process::exit(KILL_EXIT.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_the_first_header_after_a_blocks_padding() {
        assert_eq!(head_offset(0), 0);
        assert_eq!(head_offset(100), 0);
        assert_eq!(head_offset(LOG_BLOCK - 7), 0, "a header still fits");
        assert_eq!(head_offset(LOG_BLOCK - 6), 6, "padding up to the next block");
        assert_eq!(head_offset(2 * LOG_BLOCK - 1), 1);
        assert_eq!(head_range(LOG_BLOCK - 3, &[1; 11]), Some(3..11));
        assert_eq!(head_range(LOG_BLOCK - 3, &[1; 10]), None);
    }

    #[test]
    fn a_head_last_copy_stores_every_byte() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 1) as u8).collect();
        for at in [0, 17, LOG_BLOCK - 6, LOG_BLOCK - 7] {
            let mut out = vec![0u8; data.len()];
            // SAFETY: out holds data.len() bytes.
            unsafe { copy_head_last(out.as_mut_ptr(), at, &data) };
            assert_eq!(out, data, "at {at}");
        }
    }

    #[test]
    fn an_interrupted_copy_never_stores_the_head() {
        let data = vec![0xABu8; 3000];
        for r in 0..64u64 {
            let at = if r % 2 == 0 { 0 } else { LOG_BLOCK - 4 };
            let mut out = vec![0u8; data.len()];
            // SAFETY: out holds data.len() bytes.
            unsafe { copy_interrupted(out.as_mut_ptr(), at, &data, r * 0x1234_5678_9abc) };
            let h = head_range(at, &data).unwrap();
            assert!(out[h].iter().all(|&b| b == 0));
        }
    }
}
