//! Memory goes back after a spike of connections: the resident set size
//! (RSS) with 1,000 resident connections, during a spike to 1,000,000
//! (256-byte values, inserted from two threads), after the spike's
//! connections close and a sweep runs, and the registry's own `capacity()`.
//! The 8-byte state word of every slot the spike used stays (a stale id may
//! read it), so the expected floor is 8 B x the peak slots. Exits non-zero
//! if RSS after the sweep is more than that floor plus 2 MiB above the
//! start.
//!
//! `cargo run --release -p falconet-benches --bin registry_rss`

use std::thread;

use falconet_benches::rss_bytes;
use falconet_registry::{Options, Registry};

const RESIDENT: usize = 1000;
const SPIKE: usize = 1_000_000;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() {
    let rss = || rss_bytes().expect("/proc/self/statm is readable");
    let registry: Registry<[u64; 32]> =
        Registry::with_options(Options::new().shards(4).max_connections(2 * SPIKE)).unwrap();
    let resident: Vec<_> =
        (0..RESIDENT as u64).map(|i| registry.insert([i; 32]).unwrap()).collect();
    let start = rss();
    let spike: Vec<_> = thread::scope(|s| {
        let halves: Vec<_> = (0..2)
            .map(|t| {
                let registry = &registry;
                s.spawn(move || {
                    (0..SPIKE / 2)
                        .map(|i| registry.insert([(t * SPIKE + i) as u64; 32]).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let peak = rss();
    let peak_capacity = registry.capacity();
    for id in spike {
        registry.remove(id).unwrap();
    }
    let swept = registry.sweep(|_, value| value[0] < RESIDENT as u64);
    let after = rss();
    assert_eq!(swept, 0);
    assert!(resident.iter().enumerate().all(|(i, id)| registry.get(*id).unwrap()[0] == i as u64));
    let floor = 8 * peak_capacity;
    println!("| phase | RSS MiB | value slots allocated |");
    println!("|---|---|---|");
    println!("| {RESIDENT} resident | {:.1} | - |", mib(start));
    println!("| spike to {} | {:.1} | {peak_capacity} |", RESIDENT + SPIKE, mib(peak));
    println!("| spike closed, after one sweep | {:.1} | {} |", mib(after), registry.capacity());
    println!(
        "\nafter - start = {:+.2} MiB; state words kept (8 B x {peak_capacity} slots) = {:.2} MiB",
        mib(after) - mib(start),
        mib(floor)
    );
    if after > start + floor + (2 << 20) {
        eprintln!("RSS did not come back down");
        std::process::exit(1);
    }
}
