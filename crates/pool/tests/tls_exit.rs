//! The heap-published cache counters at thread exit. A pool used
//! from thread-local destructors that run after (or register during) the
//! cache's exit guard must not leak the counters' `Arc` or the pool, nor
//! touch freed memory; `stats` racing exiting threads stays exact.
#![cfg(not(falconet_pool_loom))]
#![cfg(not(miri))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use falconet_pool::Pool;

/// Every allocation made on a flagged thread, by address, until freed on
/// any thread: what is left afterwards leaked.
const SLOTS: usize = 4096;
static LIVE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static SIZES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

thread_local! {
    static UNDER_TEST: Cell<bool> = const { Cell::new(false) };
}

struct Tracking;

// SAFETY: forwards to the system allocator unchanged; only records.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() && UNDER_TEST.with(Cell::get) {
            for (slot, size) in LIVE.iter().zip(&SIZES) {
                if slot
                    .compare_exchange(0, ptr as usize, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
                {
                    size.store(layout.size(), Ordering::SeqCst);
                    break;
                }
            }
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        for slot in &LIVE {
            if slot.load(Ordering::Relaxed) == ptr as usize {
                let _ = slot.compare_exchange(ptr as usize, 0, Ordering::SeqCst, Ordering::SeqCst);
                break;
            }
        }
        // SAFETY: same contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

fn leaked() -> Vec<usize> {
    LIVE.iter()
        .zip(&SIZES)
        .filter(|(slot, _)| slot.load(Ordering::SeqCst) != 0)
        .map(|(_, size)| size.load(Ordering::SeqCst))
        .collect()
}

fn pool() -> Pool {
    Pool::builder()
        .block_size(64)
        .blocks_per_slab(8)
        .thread_cache(8)
        .max_bytes(1 << 16)
        .build()
        .unwrap()
}

/// Leases and returns blocks of `pool` (through the thread cache if any).
fn churn(pool: &Pool) {
    let blocks: Vec<_> = (0..6).map(|_| pool.try_lease().unwrap()).collect();
    drop(blocks);
    let _ = pool.try_lease().unwrap();
}

struct UseOnDrop(RefCell<Option<Pool>>);
impl Drop for UseOnDrop {
    fn drop(&mut self) {
        UNDER_TEST.with(|f| f.set(true));
        if let Some(pool) = self.0.borrow_mut().take() {
            churn(&pool);
            let _ = pool.stats();
        }
    }
}

thread_local! {
    static USE_ON_DROP: UseOnDrop = const { UseOnDrop(RefCell::new(None)) };
}

#[test]
fn a_pool_used_from_thread_local_destructors_leaks_nothing() {
    let pool = pool();
    // 1. Our destructor registered first, so it runs after the cache's exit
    //    guard (glibc runs them in reverse order of registration).
    let p = pool.clone();
    thread::spawn(move || {
        UNDER_TEST.with(|f| f.set(true));
        USE_ON_DROP.with(|slot| *slot.0.borrow_mut() = Some(p.clone()));
        churn(&p); // binds the cache and registers its exit guard
        drop(p);
    })
    .join()
    .unwrap();
    // 2. The thread's first use of any pool is inside a destructor.
    let p = pool.clone();
    thread::spawn(move || {
        UNDER_TEST.with(|f| f.set(true));
        USE_ON_DROP.with(|slot| *slot.0.borrow_mut() = Some(p));
    })
    .join()
    .unwrap();
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    assert_eq!(stats.cached, 0, "a dead thread's cache is still bound: {stats:?}");
    drop(pool);
    let leaked = leaked();
    assert!(leaked.is_empty(), "allocations of the test threads never freed, sizes: {leaked:?}");
}

/// Threads exit (and unbind) while another thread calls `stats` in a loop.
#[test]
fn stats_while_threads_exit_stay_exact() {
    let pool = pool();
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let stats = pool.stats();
                assert!(stats.cached <= 8 * 4, "{stats:?}");
            }
        });
        for _ in 0..200 {
            let p = pool.clone();
            thread::spawn(move || churn(&p)).join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let stats = pool.stats();
    assert_eq!((stats.cached, stats.leased), (0, 0), "{stats:?}");
}
