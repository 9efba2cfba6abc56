//! Criterion: the uncontended cost of each flow-control operation, the CAS
//! windows against both lock twins, in the same run. Each iteration is one
//! completed pair (a frame counted and released; a reservation granted and
//! credited back), so the window never runs dry.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use falconet_flow::{
    InputFlow, InputWindow, OutputFlow, OutputWindow, ParkingLotInputWindow,
    ParkingLotOutputWindow, StdInputWindow, StdOutputWindow,
};
use std::hint::black_box;

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

fn all(c: &mut Criterion) {
    input::<InputWindow>(c, "falconet");
    input::<ParkingLotInputWindow>(c, "parking_lot-mutex");
    input::<StdInputWindow>(c, "std-mutex");
    output::<OutputWindow>(c, "falconet");
    output::<ParkingLotOutputWindow>(c, "parking_lot-mutex");
    output::<StdOutputWindow>(c, "std-mutex");
}

criterion_group!(benches, all);
criterion_main!(benches);
