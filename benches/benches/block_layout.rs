//! Does a block need Kestrel's 64 bytes of padding?
//!
//! Kestrel used 4032 of each 4096-byte stride so the prefetcher would not pull
//! the neighbouring block into the wrong core. Two threads each fill their own
//! block of one page-aligned slab, over and over:
//!
//! * `adjacent, 4096 B`: blocks 0 and 1, the whole block (falconet's choice);
//! * `adjacent, 4032 B`: the same blocks, the last 64 bytes left unused (Kestrel);
//! * `distant, 4096 B`: blocks 0 and 16, 64 KiB apart (no neighbour effect possible).
//!
//! Throughput is bytes written per second by both threads together. If
//! `adjacent, 4096 B` matches `distant`, the neighbour costs nothing and the
//! padding buys nothing.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const STRIDE: usize = 4096;
const SLAB: usize = 32 * STRIDE;

/// Two threads each fill `len` bytes of their block `fills` times.
fn fill_pair(slab: usize, blocks: [usize; 2], len: usize, fills: u64) -> Duration {
    let barrier = Barrier::new(3);
    thread::scope(|s| {
        for block in blocks {
            let barrier = &barrier;
            s.spawn(move || {
                let start = (slab + block * STRIDE) as *mut u8;
                barrier.wait();
                for i in 0..fills {
                    // SAFETY: each thread writes only its own block of the
                    // slab, which outlives the scope.
                    unsafe { std::ptr::write_bytes(black_box(start), i as u8, len) };
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let started = Instant::now();
        barrier.wait();
        started.elapsed()
    })
}

fn neighbours(c: &mut Criterion) {
    let layout = Layout::from_size_align(SLAB, 4096).unwrap();
    // SAFETY: non-zero size.
    let slab = unsafe { alloc_zeroed(layout) };
    assert!(!slab.is_null());
    let addr = slab as usize;
    let mut group = c.benchmark_group("pool/neighbour blocks, 2 threads");
    for (name, blocks, len) in [
        ("adjacent, 4096 B (falconet)", [0, 1], STRIDE),
        ("adjacent, 4032 B (Kestrel padding)", [0, 1], STRIDE - 64),
        ("distant, 4096 B", [0, 16], STRIDE),
    ] {
        group.throughput(Throughput::Bytes(2 * len as u64));
        group.bench_function(name, |b| b.iter_custom(|fills| fill_pair(addr, blocks, len, fills)));
    }
    group.finish();
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(slab, layout) };
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = neighbours }
criterion_main!(benches);
