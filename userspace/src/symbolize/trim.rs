//! Returning freed heap to the kernel after symbolizing.

/// Hands memory the allocator holds free back to the kernel. Symbolizing a big process
/// (rustc and its 150 MiB `librustc_driver`) allocates tens of MiB that forgetting it frees;
/// glibc keeps freed memory in its arenas, so without this an interval run's RSS stays at
/// the highest it ever needed (`profile -a -i 1`: 6 MiB of heap, 46 MiB after one build ran
/// beside it, for the rest of the run).
pub fn release_freed_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim(3) only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}
