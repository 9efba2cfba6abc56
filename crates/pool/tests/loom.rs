//! loom models of every race in the pool, each named for the race it covers.
//!
//! Run with `scripts/loom.sh` (or by hand):
//! `RUSTFLAGS="--cfg falconet_pool_loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p falconet-pool --test loom --release`.
//! Pools are tiny (1 or 2 blocks per slab) so each model stays small; every
//! access to a block's bytes is checked by loom against the install and the
//! retirement of its slab, so a lease that could receive freed memory fails.
//!
//! loom runs a thread's thread-local destructors *after* `join` returns
//! (std runs them before), so a joined thread's cache entry may still be
//! flushing: the models assert only what holds either way, and check that
//! every pool was freed exactly once after all executions.
#![cfg(falconet_pool_loom)]

use falconet_pool::{LeaseError, Pool, loom_live_pools};
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
    // Each free asserts it is not the second; all frees are done now.
    assert_eq!(loom_live_pools(), 0, "a pool's memory was not freed");
}

mod common;

fn tiny(blocks_per_slab: usize, max_slabs: usize, thread_cache: usize) -> Pool {
    common::pool(64, blocks_per_slab, max_slabs, thread_cache)
}

/// A block leased here is written, sent, read and returned on another thread
/// while this thread leases again from what its cache holds.
#[test]
fn lease_on_one_thread_return_on_another() {
    model(|| {
        let pool = tiny(2, 1, 2);
        let mut sent = pool.try_lease().unwrap();
        sent[0] = 1;
        let sent_at = sent.as_ptr() as usize;
        let reader = thread::spawn(move || {
            assert_eq!(sent[0], 1);
            drop(sent);
        });
        let mut kept = pool.try_lease().unwrap();
        assert_ne!(kept.as_ptr() as usize, sent_at, "leased twice");
        kept[0] = 2;
        reader.join().unwrap();
        assert_eq!(kept[0], 2);
        drop(pool);
        drop(kept);
    });
}

/// Another thread returns blocks (its cache flushes to the shared store)
/// while the owner's cache is empty and it refills from the same slab word.
#[test]
fn remote_returns_while_the_owner_refills() {
    model(|| {
        let pool = tiny(2, 2, 1);
        let first = pool.try_lease().unwrap();
        let second = pool.try_lease().unwrap();
        let returner = thread::spawn(move || {
            drop(first); // into this thread's cache
            drop(second); // cache full: flushes `first` to the store
        });
        let mut third = pool.try_lease().unwrap();
        third[0] = 3;
        returner.join().unwrap();
        assert_eq!(third[0], 3);
        assert!(pool.stats().slabs <= 2);
    });
}

/// A trim retires the only slab while another thread leases from it and
/// writes to the block: the lease must get live memory or a new slab.
#[test]
fn trim_against_lease() {
    model(|| {
        let pool = tiny(1, 1, 0);
        drop(pool.try_lease().unwrap()); // one slab, all free
        let leaser = {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut block = pool.try_lease().unwrap();
                block[63] = 9;
                assert_eq!(block[63], 9);
            })
        };
        pool.trim();
        leaser.join().unwrap();
    });
}

/// As above, but the leaser refills its cache and flushes it when it exits.
#[test]
fn trim_against_lease_through_a_thread_cache() {
    model(|| {
        let pool = tiny(2, 1, 2);
        drop(pool.try_lease().unwrap());
        pool.trim();
        drop(pool.try_lease().unwrap()); // the slab is back, in this cache
        let leaser = {
            let pool = pool.clone();
            thread::spawn(move || match pool.try_lease() {
                Ok(mut block) => block[0] = 1,
                // This thread's cache holds the slab's other block.
                Err(error) => assert_eq!(error, LeaseError::Exhausted { max_bytes: 128 }),
            })
        };
        pool.trim();
        leaser.join().unwrap();
    });
}

/// Two threads find the store empty at once: the table lock's second scan
/// means they add one slab between them when one suffices.
#[test]
fn concurrent_growth_adds_one_slab() {
    model(|| {
        let pool = tiny(2, 2, 1);
        let other = {
            let pool = pool.clone();
            thread::spawn(move || {
                let mut block = pool.try_lease().unwrap();
                block[0] = 1;
                block
            })
        };
        let mut mine = pool.try_lease().unwrap();
        mine[0] = 2;
        let theirs = other.join().unwrap();
        assert_ne!(theirs.as_ptr(), mine.as_ptr(), "leased twice");
        assert_eq!((theirs[0], mine[0]), (1, 2));
        assert_eq!(pool.stats().peak_slabs, 1, "one slab of 2 serves both");
    });
}

/// The last pool handle goes while a block is out on another thread (cache
/// on): the block stays valid, and the pool is freed exactly once, by
/// whichever of the two finishes last.
#[test]
fn pool_dropped_while_a_block_is_out() {
    model(|| {
        let pool = tiny(2, 1, 2);
        let mut block = pool.try_lease().unwrap();
        block[0] = 5;
        let holder = thread::spawn(move || {
            assert_eq!(block[0], 5);
            drop(block);
        });
        drop(pool);
        holder.join().unwrap();
    });
}

/// As above with the thread cache off: the block goes straight to the store.
#[test]
fn pool_dropped_while_a_block_is_out_without_caches() {
    model(|| {
        let pool = tiny(1, 1, 0);
        let block = pool.try_lease().unwrap();
        let holder = thread::spawn(move || drop(block));
        drop(pool);
        holder.join().unwrap();
    });
}

/// Three threads: two return blocks straight into one slab word (no thread
/// caches) while a third trims and leases. Every block is returned exactly
/// once, and the trimmer never frees a slab a lease can still reach.
#[test]
fn two_returners_against_trim_and_lease() {
    model(|| {
        let pool = tiny(2, 1, 0);
        let (mut a, mut b) = (pool.try_lease().unwrap(), pool.try_lease().unwrap());
        a[0] = 1;
        b[0] = 2;
        let returners = [a, b].map(|block| thread::spawn(move || drop(block)));
        let trimmer = {
            let pool = pool.clone();
            thread::spawn(move || {
                pool.trim();
                if let Ok(mut block) = pool.try_lease() {
                    block[1] = 3;
                    assert_eq!(block[1], 3);
                }
            })
        };
        for returner in returners {
            returner.join().unwrap();
        }
        trimmer.join().unwrap();
        let stats = pool.stats();
        assert_eq!((stats.leased, stats.cached), (0, 0), "{stats:?}");
        pool.trim();
        assert_eq!(pool.stats().slabs, 0);
    });
}
