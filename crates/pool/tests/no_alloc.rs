//! A counting global allocator proves that leasing and returning in steady
//! state performs no heap allocation, on one thread and across two.
//! (`no_leak.rs` checks that a dropped pool frees all it allocated.)
#![cfg(not(falconet_pool_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::thread;

use falconet_pool::{Block, Pool};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Only the threads under test count: the test harness allocates on its
    /// own threads (spawning the next test, printing) at any time.
    static UNDER_TEST: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTING.load(Ordering::Relaxed) && UNDER_TEST.with(Cell::get)
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests share the global counters, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Counts allocations made by this thread (and any other thread that set
/// `UNDER_TEST`) while `f` runs.
fn count_allocations(f: impl FnOnce()) -> usize {
    UNDER_TEST.with(|flag| flag.set(true));
    ALLOCATIONS.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    f();
    COUNTING.store(false, Ordering::SeqCst);
    UNDER_TEST.with(|flag| flag.set(false));
    ALLOCATIONS.load(Ordering::SeqCst)
}

#[test]
fn steady_state_on_one_thread_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let pool = Pool::new();
    // Warm up: the thread's cache entry and enough slabs for the peak below.
    drop((0..100).map(|_| pool.try_lease().unwrap()).collect::<Vec<_>>());
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
    assert_eq!(pool.stats().slabs, slabs, "no slab was added: this was steady state");
}

#[test]
fn steady_state_across_threads_allocates_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|poison| poison.into_inner());
    let pool = Pool::new();
    // Enough slabs for everything in flight: the channel, both caches.
    drop((0..256).map(|_| pool.try_lease().unwrap()).collect::<Vec<_>>());
    let (to_parser, inbox) = mpsc::sync_channel::<Option<Block>>(64);
    let (ack, acks) = mpsc::sync_channel::<()>(1);
    let parser = thread::spawn(move || {
        UNDER_TEST.with(|flag| flag.set(true));
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
