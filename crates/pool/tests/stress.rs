//! Stress with real threads: every holder writes a pattern over its whole
//! block and checks it before returning it; a block that changes under its
//! holder fails the test. `FALCONET_STRESS_ITERS` sets the iterations per
//! thread (default 1 000 000; `scripts/soak.sh` runs more).
#![cfg(not(falconet_pool_loom))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;

use falconet_pool::{Block, LeaseError, Pool};

fn iterations() -> u64 {
    if cfg!(miri) {
        return 20;
    }
    std::env::var("FALCONET_STRESS_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

/// A pattern unique to (thread, iteration), spread over the whole block.
fn stamp(block: &mut Block, thread: u64, iteration: u64) {
    let word = (thread << 56) ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for chunk in block.chunks_exact_mut(8) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
}

fn verify(block: &Block, thread: u64, iteration: u64) {
    let word = ((thread << 56) ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes();
    assert!(block.chunks_exact(8).all(|chunk| chunk == word), "block changed under its holder");
}

/// 4 KiB blocks; 256-byte ones under Miri, which interprets every byte.
fn pool() -> Pool {
    let block_size = if cfg!(miri) { 256 } else { 4096 };
    Pool::builder().block_size(block_size).max_bytes(8 << 20).build().unwrap()
}

fn lease(pool: &Pool) -> Block {
    loop {
        match pool.try_lease() {
            Ok(block) => return block,
            Err(LeaseError::Exhausted { .. }) => thread::yield_now(),
            Err(error) => panic!("{error}"),
        }
    }
}

/// 4 threads x N lease / write / verify / return, each holding a window of
/// up to 40 blocks (more than its cache) so refills and flushes happen, while
/// a fifth thread trims and maintains the pool the whole time.
#[test]
fn four_threads_churn_while_the_pool_is_trimmed() {
    let pool = pool();
    let iterations = iterations();
    let stop = Arc::new(AtomicBool::new(false));
    let trimmer = {
        let (pool, stop) = (pool.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut freed = 0;
            while !stop.load(Ordering::Relaxed) {
                freed += pool.trim() + pool.maintain();
                thread::yield_now();
            }
            freed
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut held: Vec<(Block, u64)> = Vec::with_capacity(40);
                for i in 0..iterations {
                    let mut block = lease(&pool);
                    stamp(&mut block, t, i);
                    held.push((block, i));
                    // Return a pseudo-random number of the oldest and newest.
                    if held.len() == 40 || i % 7 == 0 {
                        let keep = (i % 13) as usize;
                        while held.len() > keep {
                            let (block, at) = held.pop().unwrap();
                            verify(&block, t, at);
                        }
                    }
                }
                for (block, at) in held {
                    verify(&block, t, at);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    trimmer.join().unwrap();
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    assert_eq!(stats.leased + stats.free, stats.slabs * stats.blocks_per_slab);
    assert_eq!(stats.cache_leases + stats.store_leases, 4 * iterations);
}

/// The socket shape: two readers lease and fill blocks, two parsers verify
/// and drop them, so every block is returned on a thread that did not lease it.
#[test]
fn blocks_leased_on_one_thread_and_returned_on_another() {
    let pool = pool();
    let iterations = iterations() / 2;
    let mut threads = Vec::new();
    for t in 0..2u64 {
        let (to_parser, inbox) = mpsc::sync_channel::<(Block, u64)>(64);
        let pool = pool.clone();
        threads.push(thread::spawn(move || {
            for i in 0..iterations {
                let mut block = lease(&pool);
                stamp(&mut block, t, i);
                to_parser.send((block, i)).unwrap();
            }
        }));
        threads.push(thread::spawn(move || {
            for (block, i) in inbox {
                verify(&block, t, i);
            }
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }
    let stats = pool.stats();
    assert_eq!(stats.leased, 0, "{stats:?}");
    assert_eq!(pool.trim(), stats.slabs, "every thread exited, so every slab is free");
}

/// `Stats` keeps its sums while other threads lease, return and flush
/// their caches (the store and the caches are read one after the other:
/// a block moving between them could be counted twice, once showing 16
/// free blocks in an 8-block pool).
#[test]
fn stats_keep_their_sums_under_concurrent_leases() {
    let pool = Pool::builder()
        .block_size(64)
        .blocks_per_slab(8)
        .thread_cache(8)
        .max_bytes(64 * 8 * 4)
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (pool, stop) = (pool.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut i = 0_usize;
                // Relaxed: a stop flag, joined after.
                while !stop.load(Ordering::Relaxed) {
                    let held: Vec<Block> =
                        (0..i % 9).filter_map(|_| pool.try_lease().ok()).collect();
                    drop(held);
                    if i.is_multiple_of(3) {
                        pool.flush_thread_cache();
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let snapshots = if cfg!(miri) { 50 } else { 200_000 };
    let mut broken = None;
    for _ in 0..snapshots {
        let stats = pool.stats();
        if stats.leased + stats.free != stats.slabs * stats.blocks_per_slab
            || stats.cached > stats.free
        {
            broken = Some(stats);
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(broken, None);
}
