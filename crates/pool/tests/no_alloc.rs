//! A counting global allocator proves that leasing and returning in steady
//! state performs no heap allocation, on one thread and across two, and that
//! everything a pool allocated is freed once the pool and its blocks are gone.
#![cfg(not(falconet_pool_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::thread;

use falconet_pool::{Block, Pool};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests share the global counters, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn count_allocations(f: impl FnOnce()) -> usize {
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    ALLOCATIONS.load(Ordering::SeqCst)
}

#[test]
fn steady_state_on_one_thread_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let pool = Pool::new();
    // Warm up: the thread's cache entry and enough slabs for the peak below.
    drop(
        (0..100)
            .map(|_| pool.try_lease().unwrap())
            .collect::<Vec<_>>(),
    );
    let slabs = pool.stats().slabs;
    let mut held: Vec<Block> = Vec::with_capacity(100);
    let allocations = count_allocations(|| {
        for round in 0..10_000 {
            // Hold up to 100 blocks, more than the cache, to force refills
            // from and flushes to the shared store.
            let depth = round % 100;
            while held.len() < depth {
                held.push(pool.try_lease().unwrap());
            }
            held.truncate(depth / 2);
            drop(pool.try_lease().unwrap());
        }
    });
    assert_eq!(allocations, 0);
    assert_eq!(
        pool.stats().slabs,
        slabs,
        "no slab was added: this was steady state"
    );
}

#[test]
fn steady_state_across_threads_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let pool = Pool::new();
    // Enough slabs for everything in flight: the channel, both caches.
    drop(
        (0..256)
            .map(|_| pool.try_lease().unwrap())
            .collect::<Vec<_>>(),
    );
    let (to_parser, inbox) = mpsc::sync_channel::<Option<Block>>(64);
    let (ack, acks) = mpsc::sync_channel::<()>(1);
    let parser = thread::spawn(move || {
        while let Ok(message) = inbox.recv() {
            match message {
                Some(block) => drop(block),
                None => ack.send(()).unwrap(),
            }
        }
    });
    let send_round = |n: usize| {
        for _ in 0..n {
            to_parser.send(Some(pool.try_lease().unwrap())).unwrap();
        }
        to_parser.send(None).unwrap();
        acks.recv().unwrap();
    };
    send_round(1000); // warm up: the parser's cache entry exists now
    let slabs = pool.stats().slabs;
    let allocations = count_allocations(|| send_round(20_000));
    assert_eq!(allocations, 0);
    assert_eq!(pool.stats().slabs, slabs);
    drop(to_parser);
    parser.join().unwrap();
}

#[test]
fn a_dropped_pool_frees_everything_it_allocated() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    // This thread's list of cache entries keeps its capacity once grown:
    // one small allocation per thread, made before the baseline.
    drop(Pool::new().try_lease().unwrap());
    let before = LIVE_BYTES.load(Ordering::SeqCst);
    let pool = Pool::builder().max_bytes(64 << 20).build().unwrap();
    let mut near: Vec<_> = (0..500).map(|_| pool.try_lease().unwrap()).collect();
    let far = near.split_off(250);
    near.truncate(100); // 150 back to the pool while it is alive
    // The rest die after the pool is gone, here and on another thread.
    drop(pool);
    drop(near);
    thread::spawn(move || drop(far)).join().unwrap();
    assert_eq!(
        LIVE_BYTES.load(Ordering::SeqCst),
        before,
        "the pool leaked memory"
    );
}
