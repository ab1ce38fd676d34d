//! Keeping resident memory to what is in use.
//!
//! - The binary allocates with mimalloc (`main.rs`), which keeps the pages of freed blocks for
//!   reuse. After one-time work (building the browse index's orders at start: 16 bytes per
//!   listing per order for a moment, 28 MiB at a million listings) those pages would stay
//!   resident for good, so startup hands them back before it announces that it listens
//!   ([`release_freed`]).
//! - Pages freed under load go back to the system at once ([`configure`]: mimalloc's purge delay
//!   is 0, not its default of a second). With the delay, a page freed in the last second of a
//!   burst stayed resident until the process next freed a page, which an idle server may not do
//!   for hours: at a million listings that left 12 MiB more resident after the bench's load,
//!   for no measurable gain in throughput.
//! - SQLite is C and allocates with the C library's malloc, which on glibc gives each thread that
//!   calls it an arena of its own (up to eight per core) and keeps in each what was freed there:
//!   search buffers, statements, page caches of every reader thread. [`configure`] asks for one
//!   arena. On 2 cores at a million listings, RSS after the bench's load went from 118 to 106 MiB
//!   (110 with two arenas) with the same throughput: SQLite's allocations are few per request
//!   (its lookaside serves the small ones per connection).
//! - Once the readers have had no read to do for a second (or the writer no write), each of them
//!   empties its connection's page cache and calls [`hand_back_idle`]: what the thread freed, and
//!   what the C library holds free, go back to the system. While reads (or writes) keep coming,
//!   even one a second, this does not run; after a burst, SQLite's share of RSS falls back to what
//!   it was at start (12 → 5 MiB at a million listings).

/// Returns the pages of freed memory to the system: this thread's, and (forced) those the
/// allocator keeps aside, abandoned by threads that have exited included. Without mimalloc as
/// the global allocator (a library user, unit tests) it only tidies mimalloc's own empty heap.
pub fn release_freed() {
    // SAFETY: `mi_collect` takes no pointers and may be called from any thread at any time.
    unsafe { mi_collect(true) }
}

/// What a thread that has gone idle after some work hands back: the pages it freed (and the
/// blocks other threads freed in its pages), and the C library's free memory.
pub fn hand_back_idle() {
    // SAFETY: as in `release_freed`.
    unsafe { mi_collect(false) }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: `malloc_trim` takes a plain integer and may be called from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Settings for both allocators (see the module's note), each unless the operator chose it:
/// mimalloc's purge delay (`MIMALLOC_PURGE_DELAY`) and the C library's arenas
/// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`). Called before any
/// thread starts.
pub fn configure() {
    // mimalloc reads its options from the environment in any case, and this one also under its
    // former name.
    let chosen = std::env::vars_os().any(|(name, _)| {
        name.to_str().is_some_and(|name| {
            ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
                .iter()
                .any(|option| name.eq_ignore_ascii_case(option))
        })
    });
    if !chosen {
        /// `mi_option_purge_delay` in mimalloc's `mimalloc.h` (v2 and v3 alike).
        const PURGE_DELAY: i32 = 15;
        // SAFETY: `mi_option_set` takes plain integers. It writes a global that allocating
        // threads read, which is why this runs before any thread starts.
        unsafe { mi_option_set(PURGE_DELAY, 0) }
    }
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

// Declared here rather than taken from the crate, which declares them only with its `extended`
// feature (and one more dependency); the crate still links the library that defines them.
use libmimalloc_sys as _;
unsafe extern "C" {
    fn mi_collect(force: bool);
    fn mi_option_set(option: i32, value: std::ffi::c_long);
}
