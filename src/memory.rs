//! Giving memory back. The binary allocates with mimalloc (`main.rs`), which keeps the pages of
//! freed blocks for reuse, and purges them only as the thread that freed them goes on
//! allocating. After one-time work (building the browse index's orders at start: 16 bytes per
//! listing per order for a moment, 30 MiB at a million listings) those pages would stay resident
//! for good, so startup hands them back before it announces that it listens.

/// Returns the pages of freed memory to the system: this thread's, and (forced) those the
/// allocator keeps aside, abandoned by threads that have exited included. Without mimalloc as
/// the global allocator (a library user, unit tests) it only tidies mimalloc's own empty heap.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time.
    unsafe { mi_collect(true) }
}

// Declared here rather than taken from the crate, which declares it only with its `extended`
// feature (and one more dependency); the crate still links the library that defines it.
use libmimalloc_sys as _;
unsafe extern "C" {
    fn mi_collect(force: bool);
}
