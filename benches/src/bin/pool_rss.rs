//! Memory goes back: the resident set size (RSS) before, during and after a
//! load spike, then after `trim()`. Four threads each lease and write 8 MiB
//! of blocks, drop them (into their own caches, which flush to the store),
//! and stay alive while the main thread trims, so up to one slab per thread
//! may stay cached. Exits non-zero if RSS after the trim is more than one
//! slab per thread (plus 1 MiB of slack for the allocator's own state) above
//! where it started.
//!
//! `cargo run --release -p falconet-benches --bin pool_rss`

use std::sync::Barrier;
use std::thread;

use falconet_benches::rss_bytes;
use falconet_pool::Pool;

const THREADS: usize = 4;
const BLOCKS_PER_THREAD: usize = 2048; // 8 MiB of 4 KiB blocks

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() {
    let rss = || rss_bytes().expect("/proc/self/statm is readable");
    let pool = Pool::new();
    drop(pool.try_lease()); // this thread's cache entry exists
    let start = rss();
    let spiked = Barrier::new(THREADS + 1);
    let returned = Barrier::new(THREADS + 1);
    let trimmed = Barrier::new(THREADS + 1);
    let (peak, after_trim, peak_stats) = thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let mut blocks: Vec<_> = (0..BLOCKS_PER_THREAD)
                    .map(|_| pool.try_lease().expect("under the bound"))
                    .collect();
                for block in &mut blocks {
                    block.fill(0xA5); // make every page resident
                }
                spiked.wait();
                drop(blocks);
                returned.wait();
                trimmed.wait(); // stay alive, caches and all, until measured
            });
        }
        spiked.wait();
        let peak = rss();
        let peak_stats = pool.stats();
        returned.wait();
        pool.trim();
        let after_trim = rss();
        trimmed.wait();
        (peak, after_trim, peak_stats)
    });
    pool.trim(); // the threads have exited and flushed their caches
    let after_exit = rss();
    let stats = pool.stats();
    let slab = stats.blocks_per_slab * stats.block_size;
    println!(
        "pool RSS (MiB): start {:.1}, spike {:.1} ({} slabs), after trim {:.1} ({} threads alive), after their exit + trim {:.1} ({} slabs)",
        mib(start),
        mib(peak),
        peak_stats.slabs,
        mib(after_trim),
        THREADS,
        mib(after_exit),
        stats.slabs
    );
    let allowed = start + THREADS * slab + (1 << 20);
    if after_trim > allowed {
        println!("FAIL: {:.1} MiB after trim, more than {:.1} MiB", mib(after_trim), mib(allowed));
        std::process::exit(1);
    }
    println!(
        "ok: after trim RSS is {:+.2} MiB from the start (allowed: one {} KiB slab per thread + 1 MiB)",
        mib(after_trim) - mib(start),
        slab >> 10
    );
}
