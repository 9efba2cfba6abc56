//! Criterion: bytes per second from a producer thread to a consumer thread,
//! falconet-pipe against its lock-based twin and the peers, at each write
//! size, in the same run. (`pipe_interleaved` gives the medians to quote.)

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use falconet_benches::pipe::Transport;
use falconet_pool::Pool;

/// Bytes moved per measured transfer.
const TOTAL: u64 = 16 << 20;

fn transfer(c: &mut Criterion) {
    // A pool per transport: a transport's pool state (caches, store) is
    // its own, not what the previous transport left behind.
    falconet_benches::pipe::pin_consumer();
    let pools: Vec<Pool> = Transport::ALL.iter().map(|_| Pool::new()).collect();
    let mut group = c.benchmark_group("pipe transfer");
    group.throughput(Throughput::Bytes(TOTAL));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for size in [64usize, 128, 512, 4096, 65536] {
        for (transport, pool) in Transport::ALL.into_iter().zip(&pools) {
            group.bench_function(BenchmarkId::new(transport.name(), format!("{size}B")), |b| {
                b.iter_custom(|iters| {
                    (0..iters).map(|_| transport.transfer(pool, size, TOTAL)).sum()
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, transfer);
criterion_main!(benches);
