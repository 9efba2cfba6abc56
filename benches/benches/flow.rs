//! Criterion: the cost of each flow-control operation, the CAS windows
//! against both lock twins, in the same run: uncontended, and one receive
//! window hammered by 1, 2 and 4 threads. Each iteration is one completed
//! pair (a frame counted and released; a reservation granted and credited
//! back), so the window never runs dry.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use falconet_flow::{
    InputFlow, InputWindow, OutputFlow, OutputWindow, ParkingLotInputWindow,
    ParkingLotOutputWindow, StdInputWindow, StdOutputWindow,
};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

fn input<W: InputFlow>(c: &mut Criterion, name: &str) {
    let window = W::with_threshold(65_535, 32_767).unwrap();
    let mut group = c.benchmark_group("flow uncontended");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new(name, "advance+release"), |b| {
        b.iter(|| {
            black_box(window.try_advance(black_box(1024)).unwrap());
            black_box(window.release(black_box(1024)).unwrap());
        });
    });
    group.finish();
}

fn output<W: OutputFlow>(c: &mut Criterion, name: &str) {
    let window = W::with_initial(65_535).unwrap();
    let mut group = c.benchmark_group("flow uncontended");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new(name, "reserve+increase"), |b| {
        b.iter(|| {
            let granted = window.try_reserve(black_box(1024)).unwrap();
            window.increase(black_box(granted)).unwrap();
        });
    });
    group.finish();
}

/// `threads` threads share one window; each counts and releases 1 KiB
/// frames until it has completed its share of the pairs. A refused frame
/// (the others hold the window) is retried, not counted.
fn contended<W: InputFlow + 'static>(c: &mut Criterion, name: &str) {
    let mut group = c.benchmark_group("flow contended");
    group.throughput(Throughput::Elements(1));
    for threads in [1u64, 2, 4] {
        group.bench_function(BenchmarkId::new(name, format!("{threads} threads")), |b| {
            b.iter_custom(|iters| {
                let window = Arc::new(W::with_threshold(65_535, 32_767).unwrap());
                let start = Arc::new(Barrier::new(threads as usize + 1));
                let workers: Vec<_> = (0..threads)
                    .map(|_| {
                        let (window, start) = (window.clone(), start.clone());
                        let pairs = iters.div_ceil(threads);
                        thread::spawn(move || {
                            start.wait();
                            let began = Instant::now();
                            let mut done = 0;
                            while done < pairs {
                                if window.try_advance(1024).is_ok() {
                                    window.release(1024).unwrap();
                                    done += 1;
                                }
                            }
                            began.elapsed()
                        })
                    })
                    .collect();
                start.wait();
                // The slowest thread's time covers every pair.
                workers.into_iter().map(|w| w.join().unwrap()).max().unwrap_or(Duration::ZERO)
            });
        });
    }
    group.finish();
}

fn all(c: &mut Criterion) {
    contended::<InputWindow>(c, "falconet");
    contended::<ParkingLotInputWindow>(c, "parking_lot-mutex");
    contended::<StdInputWindow>(c, "std-mutex");
    input::<InputWindow>(c, "falconet");
    input::<ParkingLotInputWindow>(c, "parking_lot-mutex");
    input::<StdInputWindow>(c, "std-mutex");
    output::<OutputWindow>(c, "falconet");
    output::<ParkingLotOutputWindow>(c, "parking_lot-mutex");
    output::<StdOutputWindow>(c, "std-mutex");
}

criterion_group!(benches, all);
criterion_main!(benches);
