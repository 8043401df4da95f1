//! Cache prefetch hints.
//!
//! With thousands of flows, a flow's state leaves the CPU caches between two
//! of its packets, and each ACK would stall on a dozen cache misses. The
//! engine knows one event ahead which flow comes next (the packet behind a
//! delay line's head), so it asks the CPU to start loading that state early.
//! A hint changes no value and no order: results are identical with or
//! without it; only the wall time differs (see docs/performance.md).

/// Start loading every cache line of `*r`.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    prefetch_bytes(r, 0, std::mem::size_of::<T>());
}

/// Start loading the cache lines of bytes `start..start + len` of `*r`.
#[inline(always)]
pub fn prefetch_bytes<T>(r: &T, start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = (r as *const T as *const i8).wrapping_add(start);
        for off in (0..len).step_by(64) {
            // SAFETY: `_mm_prefetch` needs only SSE, which every x86_64 CPU
            // has; it is a hint that never faults and writes nothing.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, start, len);
}
