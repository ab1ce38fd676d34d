//! Keeping resident memory to what is in use.
//!
//! - The binary allocates with mimalloc (`main.rs`), which keeps the pages of freed blocks for
//!   reuse, and purges them only as the thread that freed them goes on allocating. After one-time
//!   work (building the browse index's orders at start: 16 bytes per listing per order for a
//!   moment, 28 MiB at a million listings) those pages would stay resident for good, so startup
//!   hands them back before it announces that it listens ([`release_freed`]).
//! - SQLite is C and allocates with the C library's malloc, which on glibc gives each thread that
//!   calls it an arena of its own (up to eight per core) and keeps in each what was freed there:
//!   search buffers, statements, page caches of every reader thread. [`one_c_arena`] asks for one
//!   arena. On 2 cores at a million listings, RSS after the bench's load went from 118 to 106 MiB
//!   (110 with two arenas) with the same throughput: SQLite's allocations are few per request
//!   (its lookaside serves the small ones per connection).

/// Returns the pages of freed memory to the system: this thread's, and (forced) those the
/// allocator keeps aside, abandoned by threads that have exited included. Without mimalloc as
/// the global allocator (a library user, unit tests) it only tidies mimalloc's own empty heap.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time.
    unsafe { mi_collect(true) }
}

/// One malloc arena for the C library (see the module's note), unless the operator chose a
/// number (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`). Called before
/// any thread starts.
pub fn one_c_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none()
        && !std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.arena_max"))
    {
        /// glibc's `M_ARENA_MAX` (malloc.h).
        const M_ARENA_MAX: i32 = -8;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: `mallopt` takes plain integers; glibc documents it as safe to call at any time.
        unsafe {
            mallopt(M_ARENA_MAX, 1);
        }
    }
}

// Declared here rather than taken from the crate, which declares it only with its `extended`
// feature (and one more dependency); the crate still links the library that defines it.
use libmimalloc_sys as _;
unsafe extern "C" {
    fn mi_collect(force: bool);
}
