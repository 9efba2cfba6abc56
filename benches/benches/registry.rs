//! Criterion: falconet-registry against lock-based maps and published
//! peers in the same run.
//!
//! - `registry get`: one lookup of a resident connection, one thread.
//! - `registry read-heavy` / `registry churn`: the Kitura-shaped mixes
//!   (98/1/1 and 50/25/25 lookup/insert/remove, an idle sweep every 5 ms
//!   on one more thread) at 1, 2 and 4 threads; an
//!   element is one completed operation (every lookup finds its entry and
//!   every remove its value in these mixes, so operations == completed).
//! - `registry reclaim`: what a lookup's protection costs: the registry's
//!   counted reference (a CAS and a fetch_sub on the entry's own word)
//!   against its pinned read path (`Registry::pin`, a pin per lookup and a
//!   pin per 64), pinning a bare crossbeam-epoch guard around the same
//!   loads, and the bare loads as the floor; on one thread and on two
//!   threads looking up the same entry.
//! - "falconet-registry pinned" in the mixes pins once per batch of 64
//!   operations and closes with `discard` (`PinnedRegistry`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use falconet_benches::registry::{
    CHURN, Mix, PinnedRegistry, READ_HEAVY, READ_HEAVY_OWNED, Table, populated, run_mix,
};
use falconet_registry::Registry;

fn get<T: Table>(c: &mut Criterion) {
    let (table, keys) = populated::<T>();
    let mut group = c.benchmark_group("registry get");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function(T::NAME, |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            black_box(table.get(black_box(keys[i])).unwrap());
        });
    });
    group.finish();
}

fn mix<T: Table>(c: &mut Criterion, mix: Mix) {
    let (table, keys) = populated::<T>();
    let mut group = c.benchmark_group(format!("registry {}", mix.name));
    group.throughput(Throughput::Elements(1));
    for threads in [1, 2, 4] {
        group.bench_function(BenchmarkId::new(T::NAME, threads), |b| {
            b.iter_custom(|iters| {
                let per_thread = iters.div_ceil(threads as u64);
                let (completed, elapsed) = run_mix(&table, &keys, mix, threads, per_thread);
                assert_eq!(completed, per_thread * threads as u64, "an operation failed");
                elapsed.mul_f64(iters as f64 / completed as f64)
            });
        });
    }
    group.finish();
}

fn reclaim(c: &mut Criterion) {
    let (registry, keys) = populated::<Registry<u64>>();
    let mut group = c.benchmark_group("registry reclaim");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function("counted Ref (falconet), 1 thread", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            black_box(*registry.get(black_box(keys[i])).unwrap());
        });
    });
    group.bench_function("pinned get (falconet), a pin per lookup, 1 thread", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            black_box(*registry.pin().get(black_box(keys[i])).unwrap());
        });
    });
    group.bench_function("pinned get (falconet), a pin per 64 lookups, 1 thread", |b| {
        b.iter_custom(|iters| {
            let t = std::time::Instant::now();
            let mut left = iters;
            while left > 0 {
                let pinned = registry.pin();
                for _ in 0..left.min(64) {
                    i = (i + 7919) % keys.len();
                    black_box(*pinned.get(black_box(keys[i])).unwrap());
                }
                left -= left.min(64);
            }
            t.elapsed()
        });
    });
    group.bench_function("epoch pin + the same loads, 1 thread", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            let guard = crossbeam_epoch::pin();
            black_box(registry.contains(black_box(keys[i])));
            drop(guard);
        });
    });
    group.bench_function("the loads alone (floor), 1 thread", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            black_box(registry.contains(black_box(keys[i])));
        });
    });
    // Two threads on one hot entry: the counted reference moves the entry's
    // line between cores; the epoch pin writes only thread-local state.
    let hot = keys[0];
    let pair = |b: &mut criterion::Bencher, f: &(dyn Fn() + Sync)| {
        b.iter_custom(|iters| {
            let start = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                let other = s.spawn(|| {
                    start.wait();
                    let t = std::time::Instant::now();
                    for _ in 0..iters {
                        f();
                    }
                    t.elapsed()
                });
                start.wait();
                let t = std::time::Instant::now();
                for _ in 0..iters {
                    f();
                }
                t.elapsed().max(other.join().unwrap()) / 2
            })
        });
    };
    group.bench_function("counted Ref (falconet), 2 threads, one entry", |b| {
        pair(b, &|| {
            black_box(*registry.get(black_box(hot)).unwrap());
        });
    });
    group.bench_function("pinned get (falconet), a pin per lookup, 2 threads, one entry", |b| {
        pair(b, &|| {
            black_box(*registry.pin().get(black_box(hot)).unwrap());
        });
    });
    group.bench_function("epoch pin + the same loads, 2 threads, one entry", |b| {
        pair(b, &|| {
            let guard = crossbeam_epoch::pin();
            black_box(registry.contains(black_box(hot)));
            drop(guard);
        });
    });
    group.finish();
}

type StdMutex = std::sync::Mutex<std::collections::HashMap<u64, u64>>;
type StdRwLock = std::sync::RwLock<std::collections::HashMap<u64, u64>>;
type PlMutex = parking_lot::Mutex<std::collections::HashMap<u64, u64>>;
type PlRwLock = parking_lot::RwLock<std::collections::HashMap<u64, u64>>;

macro_rules! for_each_table {
    ($f:ident, $c:expr $(, $arg:expr)?) => {
        $f::<Registry<u64>>($c $(, $arg)?);
        $f::<PinnedRegistry>($c $(, $arg)?);
        $f::<StdMutex>($c $(, $arg)?);
        $f::<StdRwLock>($c $(, $arg)?);
        $f::<PlMutex>($c $(, $arg)?);
        $f::<PlRwLock>($c $(, $arg)?);
        $f::<dashmap::DashMap<u64, u64>>($c $(, $arg)?);
        $f::<papaya::HashMap<u64, u64>>($c $(, $arg)?);
        $f::<sharded_slab::Slab<u64>>($c $(, $arg)?);
    };
}

fn all(c: &mut Criterion) {
    for_each_table!(get, c);
    for_each_table!(mix, c, READ_HEAVY);
    for_each_table!(mix, c, READ_HEAVY_OWNED);
    for_each_table!(mix, c, CHURN);
    reclaim(c);
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! { name = benches; config = config(); targets = all }
criterion_main!(benches);
