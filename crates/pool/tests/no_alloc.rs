//! A counting global allocator proves that leasing and returning in steady
//! state performs no heap allocation, on one thread and across two.
//! (`no_leak.rs` checks that a dropped pool frees all it allocated.)
#![cfg(not(falconet_pool_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::sync::mpsc;
use std::thread;

use falconet_pool::{Block, Pool};
use falconet_testkit::{count_allocations, serial, set_under_test};

#[global_allocator]
static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

#[test]
fn steady_state_on_one_thread_allocates_nothing() {
    let _serial = serial();
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
    let _serial = serial();
    let pool = Pool::new();
    // Enough slabs for everything in flight: the channel, both caches.
    drop((0..256).map(|_| pool.try_lease().unwrap()).collect::<Vec<_>>());
    let (to_parser, inbox) = mpsc::sync_channel::<Option<Block>>(64);
    let (ack, acks) = mpsc::sync_channel::<()>(1);
    // Only the pool's calls are under test: std's channel, the harness,
    // may allocate its waiter list whenever a side first has to wait, which
    // ThreadSanitizer's timing moved into the measured rounds.
    let parser = thread::spawn(move || {
        while let Ok(message) = inbox.recv() {
            match message {
                Some(block) => {
                    set_under_test(true);
                    drop(block);
                    set_under_test(false);
                }
                None => ack.send(()).unwrap(),
            }
        }
    });
    let send_round = |n: usize| {
        for _ in 0..n {
            let block = pool.try_lease().unwrap();
            set_under_test(false);
            to_parser.send(Some(block)).unwrap();
            set_under_test(true);
        }
        set_under_test(false);
        to_parser.send(None).unwrap();
        acks.recv().unwrap();
        set_under_test(true);
    };
    send_round(1000); // warm up: the parser's cache entry exists now
    let slabs = pool.stats().slabs;
    let allocations = count_allocations(|| send_round(20_000));
    assert_eq!(allocations, 0);
    assert_eq!(pool.stats().slabs, slabs);
    drop(to_parser);
    parser.join().unwrap();
}
