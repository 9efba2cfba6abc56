//! Test support shared by falconet's crates (not published).
//!
//! [`Counting`] is a global allocator that counts the allocations made by
//! the threads under test while counting is on. A test binary installs it:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;
//! ```
//!
//! Only threads that called [`set_under_test`] count, because the test
//! harness allocates on its own threads (spawning the next test, printing)
//! at any time; the flag is a const thread-local, safe inside an allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A global allocator that forwards to [`System`] and counts.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static SERIAL: Mutex<()> = Mutex::new(());
/// The sizes of the first counted allocations, for a failing test to show.
static SIZES: [AtomicUsize; RECORDED] = [const { AtomicUsize::new(0) }; RECORDED];
const RECORDED: usize = 8;

thread_local! {
    static UNDER_TEST: Cell<bool> = const { Cell::new(false) };
}

fn count(size: usize) {
    if COUNTING.load(Ordering::Relaxed) && UNDER_TEST.with(Cell::get) {
        let index = ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = SIZES.get(index) {
            slot.store(size, Ordering::Relaxed);
        }
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// A global allocator that forwards to [`System`] and counts every
/// allocation of every thread, always: for a test binary with one test that
/// watches a whole server (its worker threads cannot be marked under test).
/// Read the count with [`all_allocations`].
pub struct CountingAll;

static ALL_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Allocations counted by [`CountingAll`] so far.
pub fn all_allocations() -> usize {
    ALL_ALLOCATIONS.load(Ordering::Relaxed)
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAll {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALL_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The counters are global: tests that count hold this guard so they run
/// one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Marks the calling thread as under test (its allocations count) or not.
pub fn set_under_test(under_test: bool) {
    UNDER_TEST.with(|flag| flag.set(under_test));
}

/// Zeroes the count and starts counting.
pub fn start_counting() {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
}

/// Stops counting; returns the allocations counted since `start_counting`.
pub fn stop_counting() -> usize {
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// The sizes in bytes of the first allocations (up to 8) counted since the
/// last `start_counting`, for a failing test's message.
pub fn counted_sizes() -> Vec<usize> {
    let counted = ALLOCATIONS.load(Ordering::SeqCst).min(RECORDED);
    SIZES[..counted].iter().map(|size| size.load(Ordering::Relaxed)).collect()
}

/// Counts the allocations made by this thread (and any other thread under
/// test) while `f` runs.
pub fn count_allocations(f: impl FnOnce()) -> usize {
    set_under_test(true);
    start_counting();
    f();
    let allocations = stop_counting();
    set_under_test(false);
    allocations
}
