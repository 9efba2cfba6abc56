//! Everything a pool allocates is freed once the pool and its blocks are
//! gone, even when blocks outlive the pool and die on another thread. A
//! counting global allocator tracks live bytes; this binary holds this one
//! test so that no other test allocates meanwhile.
#![cfg(not(falconet_pool_loom))]
#![cfg(not(miri))] // Miri reports leaks itself.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::thread;

use falconet_pool::Pool;

struct Tracking;

/// Live bytes in allocations aligned to 64 or more, made or freed on a
/// thread under test: all of the pool's memory (slabs are page-aligned; its
/// shared state, slot table and cache counters are `CachePadded`), and none
/// of the test harness's (its channels are `CachePadded` too, but it uses
/// them on its own thread).
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static UNDER_TEST: Cell<bool> = const { Cell::new(false) };
}

fn track(layout: Layout, delta: isize) {
    if layout.align() >= 64 && UNDER_TEST.with(Cell::get) {
        LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        track(layout, layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        track(layout, layout.size() as isize);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(layout, -(layout.size() as isize));
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

fn live() -> isize {
    LIVE_BYTES.load(Ordering::SeqCst)
}

#[test]
fn a_dropped_pool_frees_everything_it_allocated() {
    UNDER_TEST.with(|flag| flag.set(true));
    let before = live();
    let pool = Pool::builder().max_bytes(64 << 20).build().unwrap();
    let mut near: Vec<_> = (0..500).map(|_| pool.try_lease().unwrap()).collect();
    let far = near.split_off(250);
    near.truncate(100); // 150 back to the pool while it is alive
    // The rest die after the pool is gone, here and on another thread.
    drop(pool);
    drop(near);
    thread::spawn(move || {
        UNDER_TEST.with(|flag| flag.set(true));
        drop(far);
    })
    .join()
    .unwrap();
    assert_eq!(live(), before, "the pool leaked memory");

    // And the check can fail: a live pool holds its slab and its state.
    let pool = Pool::new();
    let block = pool.try_lease().unwrap();
    assert!(live() >= before + 32 * 4096);
    drop((pool, block));
    assert_eq!(live(), before);
}
