//! Shared workloads for the falconet benchmarks.
//!
//! Every pool under test implements [`BlockPool`], so the falconet pool, its
//! lock-based twin and the published peers run the same code in the same
//! process. Workloads count completed leases (blocks handed out, written and
//! returned), not loop iterations.

pub mod flow;
pub mod frames;
pub mod locked_pipe;
pub mod pipe;
pub mod registry;

use std::mem::MaybeUninit;
use std::sync::{Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Bytes per block in every pool benchmark.
pub const BLOCK: usize = 4096;

/// A pool of 4 KiB blocks, as the benchmarks drive it. Every implementation
/// marks its methods `#[inline]`, so each pool's code is inlined into the
/// workload loop the same way and the comparison measures the pools, not the
/// call boundary between this crate and the bench.
pub trait BlockPool: Sync {
    /// A leased block; `Send` so it can be returned on another thread.
    type Lease: Send;
    /// Leases a block and writes its first byte (so the block is touched).
    fn lease(&self) -> Self::Lease;
    /// Returns a block.
    fn give_back(&self, lease: Self::Lease);
}

/// falconet-pool with its defaults (4 KiB blocks, 32 per slab).
pub struct Falconet(pub falconet_pool::Pool);

impl Default for Falconet {
    fn default() -> Self {
        Self(falconet_pool::Pool::new())
    }
}

impl BlockPool for Falconet {
    type Lease = falconet_pool::Block;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let mut block = self.0.try_lease().expect("the benchmark stays under the bound");
        block[0] = 1;
        block
    }
    #[inline]
    fn give_back(&self, lease: Self::Lease) {
        drop(lease);
    }
}

type RawBlock = Box<MaybeUninit<[u8; BLOCK]>>;

fn touch(block: &mut RawBlock) {
    // SAFETY: writing one byte through a raw pointer into the allocation.
    unsafe { block.as_mut_ptr().cast::<u8>().write(1) };
}

/// No pool: a fresh `Box<[u8; 4096]>` (uninitialised) from the global
/// allocator (glibc malloc) per lease.
#[derive(Default)]
pub struct SystemAllocator;

impl BlockPool for SystemAllocator {
    type Lease = RawBlock;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let mut block = Box::new_uninit();
        touch(&mut block);
        block
    }
    #[inline]
    fn give_back(&self, lease: Self::Lease) {
        drop(lease);
    }
}

/// The lock-based twin: boxed blocks in a `Vec` behind a `std::sync::Mutex`.
#[derive(Default)]
pub struct MutexPool(Mutex<Vec<RawBlock>>);

impl BlockPool for MutexPool {
    type Lease = RawBlock;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let block = self.0.lock().unwrap().pop();
        let mut block = block.unwrap_or_else(Box::new_uninit);
        touch(&mut block);
        block
    }
    #[inline]
    fn give_back(&self, lease: Self::Lease) {
        self.0.lock().unwrap().push(lease);
    }
}

/// Boxed blocks in a crossbeam `ArrayQueue` (bounded MPMC, stamped slots).
pub struct ArrayQueuePool(crossbeam_queue::ArrayQueue<RawBlock>);

impl Default for ArrayQueuePool {
    fn default() -> Self {
        Self(crossbeam_queue::ArrayQueue::new(1 << 16))
    }
}

impl BlockPool for ArrayQueuePool {
    type Lease = RawBlock;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let mut block = self.0.pop().unwrap_or_else(Box::new_uninit);
        touch(&mut block);
        block
    }
    #[inline]
    fn give_back(&self, lease: Self::Lease) {
        let _ = self.0.push(lease);
    }
}

/// lockfree-object-pool's `LinearObjectPool` of 4 KiB `Vec<u8>` payloads
/// (an inline `[u8; 4096]` payload costs it a 256 KiB stack probe per pull).
/// The pool is leaked so that its borrowing leases are `'static` and need
/// no `Arc` clone per pull.
pub struct LockfreeObjectPool(&'static lockfree_object_pool::LinearObjectPool<Vec<u8>>);

impl Default for LockfreeObjectPool {
    fn default() -> Self {
        let pool = lockfree_object_pool::LinearObjectPool::new(|| vec![0; BLOCK], |_| {});
        Self(Box::leak(Box::new(pool)))
    }
}

impl BlockPool for LockfreeObjectPool {
    type Lease = lockfree_object_pool::LinearReusable<'static, Vec<u8>>;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let mut block = self.0.pull();
        block[0] = 1;
        block
    }
    #[inline]
    fn give_back(&self, lease: Self::Lease) {
        drop(lease);
    }
}

/// sharded-slab's `Pool` of `Vec<u8>` (cleared, not freed, on return).
#[derive(Default)]
pub struct ShardedSlabPool(sharded_slab::Pool<Vec<u8>>);

impl BlockPool for ShardedSlabPool {
    type Lease = usize;
    #[inline]
    fn lease(&self) -> Self::Lease {
        let mut entry = self.0.create().expect("sharded-slab is under its capacity");
        if entry.capacity() < BLOCK {
            entry.reserve_exact(BLOCK);
        }
        entry.push(1);
        entry.key()
    }
    #[inline]
    fn give_back(&self, key: Self::Lease) {
        self.0.clear(key);
    }
}

/// One thread leases `ops` blocks and returns each at once.
pub fn lease_return<P: BlockPool>(pool: &P, ops: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..ops {
        let block = pool.lease();
        pool.give_back(std::hint::black_box(block));
    }
    start.elapsed()
}

/// Thread A leases `ops` blocks and sends them through an rtrb ring to
/// thread B, which returns them; [`handoff_only`] is the ring's own cost.
pub fn lease_here_return_there<P: BlockPool>(pool: &P, ops: u64) -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<P::Lease>::new(256);
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(|| {
            let mut received = 0;
            while received < ops {
                match rx.pop() {
                    Ok(block) => {
                        pool.give_back(block);
                        received += 1;
                    }
                    Err(_) => std::hint::spin_loop(),
                }
            }
        });
        for _ in 0..ops {
            let mut block = pool.lease();
            loop {
                match tx.push(block) {
                    Ok(()) => break,
                    Err(rtrb::PushError::Full(back)) => {
                        block = back;
                        std::hint::spin_loop();
                    }
                }
            }
        }
    });
    start.elapsed()
}

/// The hand-off alone: the ring of [`lease_here_return_there`] carrying numbers.
pub fn handoff_only(ops: u64) -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<u64>::new(256);
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(|| {
            let mut received = 0;
            while received < ops {
                if let Ok(value) = rx.pop() {
                    std::hint::black_box(value);
                    received += 1;
                }
            }
        });
        for i in 0..ops {
            while tx.push(i).is_err() {
                std::hint::spin_loop();
            }
        }
    });
    start.elapsed()
}

/// `threads` threads each lease a batch of 16 blocks and return them, until
/// each has completed `ops_per_thread` leases. Returns the wall time from a
/// common start to the last thread's finish.
pub fn churn<P: BlockPool>(pool: &P, threads: usize, ops_per_thread: u64) -> Duration {
    const BATCH: usize = 16;
    let barrier = Barrier::new(threads + 1);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut held = Vec::with_capacity(BATCH);
                barrier.wait();
                let mut done = 0;
                while done < ops_per_thread {
                    for _ in 0..BATCH {
                        held.push(pool.lease());
                    }
                    for block in held.drain(..) {
                        pool.give_back(block);
                    }
                    done += BATCH as u64;
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

/// The resident set size of this process, in bytes (Linux `/proc`).
pub fn rss_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
