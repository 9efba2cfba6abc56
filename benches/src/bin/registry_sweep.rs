//! Lookup latency while an idle sweep runs: 100,000 connections, one thread
//! looking up resident connections (batches of 8, each batch timed), and a
//! second thread either idle or sweeping the whole table over and over,
//! keeping everything (the cost of the visit itself). The tables are the
//! mix benchmark's (`Table`), each sweeping the way its users would:
//! falconet-registry `sweep` (shard by shard, no lock while the closure
//! runs; looked up by counted `get`, and through one pin per batch), dashmap `retain` (one shard's write lock at a time), papaya
//! `retain`, and `RwLock<HashMap>` `write().retain()` (the global barrier
//! Kitura used). sharded-slab cannot iterate a shared slab.
//!
//! `cargo run --release -p falconet-benches --bin registry_sweep [rounds] [ms per phase]`

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use falconet_benches::flow::percentile;
use falconet_benches::registry::{PinnedRegistry, Table, populated_with};
use falconet_registry::Registry;

const ENTRIES: usize = 100_000;
const BATCH: u32 = 8;

/// Batch latencies (ns per lookup) over `phase`, with or without a sweeper;
/// and the sweeps completed.
fn phase<T: Table>(
    table: &T,
    keys: &[T::Key],
    sweeping: bool,
    phase: Duration,
) -> (Vec<u32>, usize) {
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let sweeper = s.spawn(|| {
            let mut sweeps = 0;
            while sweeping && !stop.load(Ordering::Relaxed) {
                assert_eq!(table.sweep(), Some(ENTRIES));
                sweeps += 1;
            }
            sweeps
        });
        let mut latencies = Vec::with_capacity(1 << 22);
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let begin = Instant::now();
        let mut sum = 0;
        while begin.elapsed() < phase {
            let start = Instant::now();
            // One pin per batch for the pinned registry; nothing for the rest.
            let batch = table.batch();
            for _ in 0..BATCH {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                sum += table.get_in(&batch, keys[rng as usize % keys.len()]).unwrap();
            }
            drop(batch);
            latencies
                .push((start.elapsed().as_nanos() / u128::from(BATCH)).min(u128::from(u32::MAX))
                    as u32);
        }
        std::hint::black_box(sum);
        stop.store(true, Ordering::Relaxed);
        (latencies, sweeper.join().unwrap())
    })
}

fn measure<T: Table>(name: &str, rounds: usize, length: Duration) {
    let (table, keys) = populated_with::<T>(ENTRIES);
    let (mut quiet, mut busy, mut sweeps) = (Vec::new(), Vec::new(), 0);
    for _ in 0..rounds {
        quiet.append(&mut phase(&table, &keys, false, length).0);
        let (mut latencies, n) = phase(&table, &keys, true, length);
        busy.append(&mut latencies);
        sweeps += n;
    }
    let (q99, b99) = (percentile(&mut quiet, 0.99), percentile(&mut busy, 0.99));
    println!(
        "| {} | {} / {} / {} | {} / {} / {} | {:.2}x | {:.1} |",
        name,
        percentile(&mut quiet, 0.5),
        q99,
        percentile(&mut quiet, 0.999),
        percentile(&mut busy, 0.5),
        b99,
        percentile(&mut busy, 0.999),
        f64::from(b99) / f64::from(q99.max(1)),
        sweeps as f64 / (rounds as f64 * length.as_secs_f64()),
    );
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let rounds = args.next().unwrap_or(5) as usize;
    let length = Duration::from_millis(args.next().unwrap_or(400));
    println!(
        "{ENTRIES} entries; {rounds} rounds of {} ms per phase; ns per lookup (batches of {BATCH}), over every batch\n",
        length.as_millis()
    );
    println!(
        "| table, sweep | no sweep p50 / p99 / p99.9 | sweeping p50 / p99 / p99.9 | p99 ratio | sweeps/s |"
    );
    println!("|---|---|---|---|---|");
    measure::<Registry<u64>>("falconet-registry sweep", rounds, length);
    measure::<PinnedRegistry>("falconet-registry pinned lookups, sweep", rounds, length);
    measure::<dashmap::DashMap<u64, u64>>("dashmap retain", rounds, length);
    measure::<papaya::HashMap<u64, u64>>("papaya retain", rounds, length);
    measure::<parking_lot::RwLock<HashMap<u64, u64>>>(
        "parking_lot RwLock<HashMap> write().retain()",
        rounds,
        length,
    );
}
