//! Hints to the kernel and the CPU about table memory: huge pages for large in-memory
//! indexes and buffers, prefetches ahead of lookups.

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
/// Prefetch the cache line holding `bytes[at]` (nothing if `at` is out of range).
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
