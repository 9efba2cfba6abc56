//! The pool's contract, one behaviour per test.
#![cfg(not(falconet_pool_loom))]

use std::collections::HashSet;
use std::sync::mpsc;
use std::thread;

use falconet_pool::{LeaseError, Pool, Stats};

mod common;

fn small(blocks_per_slab: usize, max_slabs: usize, thread_cache: usize) -> Pool {
    common::pool(256, blocks_per_slab, max_slabs, thread_cache)
}

fn check_consistent(stats: &Stats) {
    assert_eq!(stats.leased + stats.free, stats.slabs * stats.blocks_per_slab, "{stats:?}");
    assert!(stats.cached <= stats.free, "{stats:?}");
    assert!(stats.peak_slabs >= stats.slabs, "{stats:?}");
}

#[test]
fn a_fresh_block_is_zeroed_aligned_and_fully_usable() {
    let pool = Pool::new();
    let mut block = pool.try_lease().unwrap();
    assert_eq!(block.len(), 4096);
    assert_eq!(block.as_ptr() as usize % 4096, 0, "the default block is one aligned page");
    assert!(block.iter().all(|&b| b == 0));
    block.fill(0x5A);
    assert!(block.iter().all(|&b| b == 0x5A));
    let small = small(4, 1, 4);
    assert_eq!(small.try_lease().unwrap().as_ptr() as usize % 64, 0);
}

#[test]
fn a_thread_gets_back_the_block_it_returned_last() {
    let pool = Pool::new();
    let first = pool.try_lease().unwrap();
    let address = first.as_ptr();
    drop(first);
    let again = pool.try_lease().unwrap();
    assert_eq!(again.as_ptr(), address, "the thread cache is LIFO");
    let stats = pool.stats();
    assert_eq!((stats.store_leases, stats.cache_leases), (1, 1), "{stats:?}");
}

#[test]
fn leased_blocks_never_overlap() {
    let pool = small(8, 4, 8);
    let blocks: Vec<_> = (0..32).map(|_| pool.try_lease().unwrap()).collect();
    let mut seen = HashSet::new();
    for block in &blocks {
        let start = block.as_ptr() as usize;
        assert!(seen.insert(start));
        for other in &blocks {
            let other_start = other.as_ptr() as usize;
            assert!(
                start == other_start || start + 256 <= other_start || other_start + 256 <= start
            );
        }
    }
    let stats = pool.stats();
    assert_eq!((stats.slabs, stats.leased, stats.free), (4, 32, 0));
}

#[test]
fn the_bound_is_a_typed_error_and_a_return_lifts_it() {
    let pool = small(4, 2, 4);
    let mut blocks: Vec<_> = (0..8).map(|_| pool.try_lease().unwrap()).collect();
    assert_eq!(pool.try_lease().unwrap_err(), LeaseError::Exhausted { max_bytes: 256 * 8 });
    assert!(pool.try_lease().unwrap_err().to_string().contains("exhausted"));
    blocks.pop();
    assert!(pool.try_lease().is_ok());
}

#[test]
fn trim_frees_exactly_the_slabs_with_no_leased_block() {
    let pool = small(4, 8, 4);
    let mut blocks: Vec<_> = (0..32).map(|_| pool.try_lease().unwrap()).collect();
    assert_eq!(pool.stats().slabs, 8);
    // Keep one block of the first slab and one of the last; free the rest.
    let kept = [blocks.remove(0), blocks.pop().unwrap()];
    drop(blocks);
    assert_eq!(pool.trim(), 6);
    let stats = pool.stats();
    assert_eq!((stats.slabs, stats.leased, stats.trimmed_slabs, stats.peak_slabs), (2, 2, 6, 8));
    check_consistent(&stats);
    drop(kept);
    assert_eq!(pool.trim(), 2);
    assert_eq!(pool.stats().slabs, 0);
    // The pool grows again after a trim.
    assert!(pool.try_lease().is_ok());
    assert_eq!(pool.stats().slabs, 1);
}

#[test]
fn trim_cannot_free_a_slab_cached_by_another_thread() {
    let pool = small(4, 4, 4);
    let (to_helper, blocks) = mpsc::channel();
    let (done, finished) = mpsc::channel();
    let (exit, may_exit) = mpsc::channel::<()>();
    let helper = thread::spawn(move || {
        for block in blocks {
            drop::<falconet_pool::Block>(block); // into the helper's cache
        }
        done.send(()).unwrap();
        may_exit.recv().unwrap();
    });
    let block = pool.try_lease().unwrap();
    to_helper.send(block).unwrap();
    drop(to_helper);
    finished.recv().unwrap();
    // The helper's cache holds the block, so its slab stays.
    assert_eq!(pool.trim(), 0);
    let stats = pool.stats();
    assert_eq!((stats.slabs, stats.leased, stats.cached), (1, 0, 1), "{stats:?}");
    exit.send(()).unwrap();
    helper.join().unwrap();
    // The helper's exit flushed its cache: now the slab goes.
    assert_eq!(pool.trim(), 1);
}

/// A quiet thread's cache can hold every free block of a pool at its
/// bound; once it flushes, another thread leases them.
#[test]
fn a_flushed_cache_gives_another_thread_the_blocks() {
    let pool = small(4, 1, 4);
    let (to_helper, blocks) = mpsc::channel();
    let (done, finished) = mpsc::channel();
    let (flush, may_flush) = mpsc::channel::<()>();
    let helper_pool = pool.clone();
    let helper = thread::spawn(move || {
        for block in blocks {
            drop::<falconet_pool::Block>(block); // into the helper's cache
        }
        done.send(()).unwrap();
        may_flush.recv().unwrap();
        let flushed = helper_pool.flush_thread_cache();
        // Nothing left to flush the second time.
        (flushed, helper_pool.flush_thread_cache())
    });
    let leased: Vec<_> = (0..4).map(|_| pool.try_lease().unwrap()).collect();
    for block in leased {
        to_helper.send(block).unwrap();
    }
    drop(to_helper);
    finished.recv().unwrap();
    // All four are free, and all four are the helper's.
    assert!(matches!(pool.try_lease(), Err(LeaseError::Exhausted { .. })));
    let stats = pool.stats();
    assert_eq!((stats.leased, stats.cached), (0, 4), "{stats:?}");
    // This thread's cache holds none of them: flushing it gives nothing.
    assert_eq!(pool.flush_thread_cache(), 0);
    flush.send(()).unwrap();
    assert_eq!(helper.join().unwrap(), (4, 0));
    check_consistent(&pool.stats());
    let again: Vec<_> = (0..4).map(|_| pool.try_lease().unwrap()).collect();
    assert_eq!(again.len(), 4);
}

#[test]
fn maintain_releases_only_what_demand_did_not_use() {
    let pool = small(4, 16, 4);
    let blocks: Vec<_> = (0..64).map(|_| pool.try_lease().unwrap()).collect();
    drop(blocks);
    // 64 leases since the start and 64 free blocks: no surplus yet.
    assert_eq!(pool.maintain(), 0);
    // Idle since: the surplus is 64 blocks, half of it (8 slabs) goes.
    assert_eq!(pool.maintain(), 8);
    assert_eq!(pool.maintain(), 4);
    assert_eq!(pool.maintain(), 2);
    assert_eq!(pool.maintain(), 1);
    assert_eq!(pool.maintain(), 1, "at least one slab once the surplus reaches a slab");
    assert_eq!(pool.maintain(), 0);
    assert_eq!(pool.stats().slabs, 0);
    // A busy pool keeps its blocks.
    let blocks: Vec<_> = (0..16).map(|_| pool.try_lease().unwrap()).collect();
    drop(blocks);
    assert_eq!(pool.maintain(), 0);
}

#[test]
fn blocks_cross_threads_and_come_back() {
    let pool = small(8, 4, 8);
    let (to_parser, blocks) = mpsc::channel::<falconet_pool::Block>();
    let parser = thread::spawn(move || {
        let mut count = 0;
        for block in blocks {
            assert!(block.iter().all(|&b| b == block[0]));
            count += 1;
        }
        count
    });
    let rounds: u32 = if cfg!(miri) { 100 } else { 1000 };
    for i in 0..rounds {
        let mut block = loop {
            match pool.try_lease() {
                Ok(block) => break block,
                // The parser's cache or the channel holds the rest: wait.
                Err(LeaseError::Exhausted { .. }) => thread::yield_now(),
                Err(other) => panic!("{other}"),
            }
        };
        block.fill(i as u8);
        to_parser.send(block).unwrap();
    }
    drop(to_parser);
    assert_eq!(parser.join().unwrap(), rounds);
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    check_consistent(&stats);
    assert_eq!(pool.trim(), stats.slabs, "the parser's exit flushed its cache");
}

#[test]
fn blocks_outlive_the_pool() {
    let pool = small(4, 2, 4);
    let mut blocks: Vec<_> = (0..6).map(|_| pool.try_lease().unwrap()).collect();
    for (i, block) in blocks.iter_mut().enumerate() {
        block.fill(i as u8);
    }
    drop(pool);
    let far = blocks.pop().unwrap();
    thread::spawn(move || assert!(far.iter().all(|&b| b == 5))).join().unwrap();
    for (i, block) in blocks.iter().enumerate() {
        assert!(block.iter().all(|&b| b == i as u8));
    }
}

#[test]
fn clones_share_one_pool() {
    let pool = small(4, 1, 4);
    let other = pool.clone();
    let _a = pool.try_lease().unwrap();
    drop(pool);
    let _rest: Vec<_> = (0..3).map(|_| other.try_lease().unwrap()).collect();
    assert!(matches!(other.try_lease(), Err(LeaseError::Exhausted { .. })));
    assert!(format!("{other:?}").contains("block_size: 256"));
}

#[test]
fn without_a_thread_cache_every_lease_uses_the_store() {
    let pool = small(4, 2, 0);
    for _ in 0..10 {
        drop(pool.try_lease().unwrap());
    }
    let stats = pool.stats();
    assert_eq!((stats.cache_leases, stats.store_leases, stats.cached, stats.free), (0, 10, 0, 4));
    assert_eq!(pool.trim(), 1);
}

#[test]
fn stats_account_for_every_block() {
    let pool = small(8, 4, 8);
    let blocks: Vec<_> = (0..20).map(|_| pool.try_lease().unwrap()).collect();
    let stats = pool.stats();
    check_consistent(&stats);
    assert_eq!((stats.leased, stats.slabs), (20, 3));
    assert_eq!(stats.bytes(), 3 * 8 * 256);
    drop(blocks);
    let stats = pool.stats();
    check_consistent(&stats);
    assert_eq!((stats.leased, stats.cached), (0, 8), "the cache keeps one slab's worth");
    assert_eq!(stats.cache_leases + stats.store_leases, 20);
}

#[test]
fn a_thread_caches_for_one_pool_at_a_time() {
    let a = small(4, 2, 4);
    let b = small(4, 2, 4);
    drop(a.try_lease().unwrap()); // this thread's cache binds to `a`
    assert_eq!(a.stats().cached, 4);
    // `a` still has blocks cached, so `b` is served by its shared store.
    for _ in 0..3 {
        drop(b.try_lease().unwrap());
    }
    let stats = b.stats();
    assert_eq!((stats.cached, stats.cache_leases, stats.store_leases), (0, 0, 3), "{stats:?}");
    // Once the cache is empty, it moves to the pool that needs it.
    let held: Vec<_> = (0..4).map(|_| a.try_lease().unwrap()).collect();
    drop(b.try_lease().unwrap());
    assert_eq!(b.stats().cached, 4);
    // `a`'s blocks now go straight back to `a`'s store.
    drop(held);
    let stats = a.stats();
    assert_eq!((stats.cached, stats.leased, stats.free), (0, 0, 4), "{stats:?}");
    assert_eq!(a.trim(), 1);
}

#[test]
fn raw_pointers_cover_the_block() {
    let pool = common::pool(64, 4, 4, 0);
    let mut block = pool.try_lease().unwrap();
    let ptr = block.as_mut_ptr();
    // SAFETY: the block owns 64 bytes at `ptr`.
    unsafe { ptr.add(63).write(7) };
    assert_eq!(block.as_ptr(), ptr.cast_const());
    assert_eq!(block[63], 7);
}

#[test]
fn stats_run_while_threads_bind_cache_and_exit() {
    // Threads bind their caches to the pool, lease and return, and exit
    // (unbinding at exit) while this thread keeps reading `stats`, which
    // reads every bound cache's counters. Under Miri and ThreadSanitizer
    // this is the check that `stats` never reads a dead thread's memory.
    let pool = small(8, 64, 8);
    let rounds = if cfg!(miri) { 4 } else { 200 };
    let done = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            for round in 0..rounds {
                let workers: Vec<_> = (0..3)
                    .map(|t| {
                        let pool = &pool;
                        s.spawn(move || {
                            let blocks: Vec<_> = (0..(round + t) % 12 + 1)
                                .map(|_| pool.try_lease().unwrap())
                                .collect();
                            drop(blocks);
                        })
                    })
                    .collect();
                for worker in workers {
                    worker.join().unwrap();
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut reads = 0u64;
        while !done.load(std::sync::atomic::Ordering::SeqCst) || reads == 0 {
            // Figures read while blocks move are each recent, not a
            // consistent whole (the `stats` docs); the cache counters of a
            // thread are one of them.
            let stats = pool.stats();
            assert!(stats.cached <= stats.free, "{stats:?}");
            reads += 1;
        }
    });
    // Every thread unbound at exit: nothing cached, nothing leased, and the
    // exited caches' hits are kept.
    let stats = pool.stats();
    check_consistent(&stats);
    assert_eq!((stats.leased, stats.cached), (0, 0), "{stats:?}");
    assert!(stats.cache_leases > 0, "{stats:?}");
}
