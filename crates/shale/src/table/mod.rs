//! Block-based tables (SST files) in RocksDB's exact format: building, reading, blocks,
//! filters, footers, checksums and compression. See `docs/format-details.md`.
//!
//! Entry points: [`TableBuilder`] (write), [`Table`] (read, with [`TableIterator`]),
//! [`block_checksum`] / [`checksum_modifier`] (trailer checksums).

#![allow(dead_code)] // the engine modules using this API are built in parallel branches

pub(crate) mod any;
pub(crate) mod block;
pub(crate) mod block_dir;
pub(crate) mod builder;
pub(crate) mod cache;
pub(crate) mod cuckoo;
pub(crate) mod filter;
pub(crate) mod format;
pub(crate) mod partitioned_index;
pub(crate) mod pinnable;
pub(crate) mod plain;
pub(crate) mod prefix_filter;
pub(crate) mod reader;

#[cfg(test)]
mod tests;

#[allow(unused_imports)]
pub(crate) use builder::{TableBuilder, TableBuilderOptions, TableInfo};
#[allow(unused_imports)]
pub(crate) use format::{block_checksum, checksum_modifier, BlockHandle, Footer};
#[allow(unused_imports)]
pub(crate) use reader::{Table, TableIterator, TableProperties, TableReaderOptions};

/// Ask for transparent huge pages under a large, not yet touched buffer: a random lookup in a
/// table held in RAM costs a cache miss, and without huge pages usually a TLB miss (a page
/// walk) on top.
pub(crate) fn advise_huge_pages(buf: &Vec<u8>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buf.as_ptr() as usize;
        let end = start + buf.capacity();
        let first = start.div_ceil(HUGE) * HUGE;
        let last = end / HUGE * HUGE;
        if last > first {
            // SAFETY: the range lies inside `buf`'s allocation; MADV_HUGEPAGE only changes how
            // the kernel backs those pages, never their contents. Failure is harmless.
            unsafe {
                libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Hint the CPU to bring the cache line holding `bytes[at]` in (nothing if `at` is out of
/// range): batched lookups issue these for every key before reading any, so the cache misses
/// of the batch overlap.
#[inline(always)]
pub(crate) fn prefetch_at(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = bytes.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint to the cache; it never faults and has no effect
        // visible to the program. The address is inside `bytes` anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const u8 as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}
