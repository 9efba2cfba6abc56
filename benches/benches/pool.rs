//! Block pools compared in one run: falconet-pool, its lock-based twin
//! (`Mutex<Vec<Box>>`), the system allocator, crossbeam `ArrayQueue`,
//! lockfree-object-pool and sharded-slab. Throughput counts completed leases
//! (a block handed out, written and returned).
//!
//! `cargo bench -p falconet-benches --bench pool`; `scripts/bench.sh` runs
//! it and prints the comparison table.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use falconet_benches::{
    ArrayQueuePool, Falconet, LockfreeObjectPool, MutexPool, ShardedSlabPool, SystemAllocator,
    churn, handoff_only, lease_here_return_there, lease_return,
};

/// Runs `$run!(name, type)` for every pool under comparison: the one list.
macro_rules! each_pool {
    ($run:ident) => {
        $run!("falconet", Falconet);
        $run!("mutex-vec (twin)", MutexPool);
        $run!("system-malloc", SystemAllocator);
        $run!("crossbeam-arrayqueue", ArrayQueuePool);
        $run!("lockfree-object-pool", LockfreeObjectPool);
        $run!("sharded-slab", ShardedSlabPool);
    };
}

fn single_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool/lease+return, 1 thread");
    group.throughput(Throughput::Elements(1));
    macro_rules! run {
        ($name:literal, $ty:ty) => {
            let pool = <$ty>::default();
            group.bench_function($name, |b| b.iter_custom(|ops| lease_return(&pool, ops)));
        };
    }
    each_pool!(run);
    group.finish();
}

fn cross_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool/lease on A, return on B");
    group.throughput(Throughput::Elements(1));
    group.bench_function("rtrb hand-off alone", |b| b.iter_custom(handoff_only));
    macro_rules! run {
        ($name:literal, $ty:ty) => {
            let pool = <$ty>::default();
            group.bench_function($name, |b| {
                b.iter_custom(|ops| lease_here_return_there(&pool, ops))
            });
        };
    }
    each_pool!(run);
    group.finish();
}

fn churn_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool/churn");
    for threads in [1usize, 2, 4] {
        group.throughput(Throughput::Elements(threads as u64));
        macro_rules! run {
            ($name:literal, $ty:ty) => {
                let pool = <$ty>::default();
                group.bench_with_input(BenchmarkId::new($name, threads), &threads, |b, &t| {
                    b.iter_custom(|ops| churn(&pool, t, ops.max(16)))
                });
            };
        }
        each_pool!(run);
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = single_thread, cross_thread, churn_threads }
criterion_main!(benches);
