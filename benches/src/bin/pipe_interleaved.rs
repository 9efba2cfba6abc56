//! Producer-to-consumer throughput of every pipe transport at every write
//! size, in interleaved rounds (each transport once per round, round after
//! round), reporting medians: on two vCPUs a single two-thread criterion
//! run swings with thread placement, so this is the figure to quote.
//!
//! `cargo run --release -p falconet-benches --bin pipe_interleaved [rounds] [MiB per run]`
//!
//! Environment: `FALCONET_PIPE_ONLY` and `FALCONET_PIPE_SIZES` narrow the
//! run; `FALCONET_PIPE_BLOCK` sets the pooled transports' block size
//! (default 4 KiB); `FALCONET_PIPE_PIN=0` leaves the threads unpinned.

use falconet_benches::pipe::Transport;
use falconet_pool::Pool;

const SIZES: [usize; 5] = [64, 128, 512, 4096, 65536];

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let rounds = args.next().unwrap_or(9) as usize;
    let total = args.next().unwrap_or(64) << 20;
    // FALCONET_PIPE_ONLY=falconet-pipe,... and FALCONET_PIPE_SIZES=64,128
    // narrow the run (for profiling).
    let only = std::env::var("FALCONET_PIPE_ONLY").ok();
    let sizes: Vec<usize> = std::env::var("FALCONET_PIPE_SIZES")
        .map(|v| v.split(',').map(|s| s.parse().expect("a size")).collect())
        .unwrap_or_else(|_| SIZES.to_vec());
    // A pool per transport: the twin frees blocks on this (the consumer's)
    // thread too, and a pool shared between transports carried one
    // transport's cache and store state into the next one's run.
    falconet_benches::pipe::pin_consumer();
    // FALCONET_PIPE_BLOCK=16384 gives the pooled transports larger blocks.
    let block = std::env::var("FALCONET_PIPE_BLOCK").ok().map(|v| v.parse().expect("a size"));
    let pools: Vec<Pool> = Transport::ALL
        .iter()
        .map(|_| match block {
            Some(size) => Pool::builder().block_size(size).build().expect("a valid block size"),
            None => Pool::new(),
        })
        .collect();
    // gigabytes per second, per (size, transport)
    let mut samples = vec![vec![Vec::new(); Transport::ALL.len()]; SIZES.len()];
    for _ in 0..rounds {
        for (s, &size) in sizes.iter().enumerate() {
            for (t, transport) in Transport::ALL.iter().enumerate() {
                if only.as_deref().is_some_and(|only| !only.contains(transport.name())) {
                    samples[s][t].push(f64::NAN);
                    continue;
                }
                let elapsed = transport.transfer(&pools[t], size, total);
                samples[s][t].push(total as f64 / elapsed.as_secs_f64() / 1e9);
            }
        }
    }
    println!(
        "Median GB/s over {rounds} rounds of {} MiB (ns per write in brackets)\n",
        total >> 20
    );
    print!("| write size |");
    for transport in Transport::ALL {
        print!(" {} |", transport.name());
    }
    println!(" vs twin | vs simplex |");
    println!("|---|{}---|---|", "---|".repeat(Transport::ALL.len()));
    for (s, &size) in sizes.iter().enumerate() {
        let medians: Vec<f64> = samples[s].iter().map(|v| median(v.clone())).collect();
        print!("| {size} B |");
        for gbs in &medians {
            print!(" {gbs:.2} ({:.0} ns) |", size as f64 / gbs);
        }
        println!(" {:.1}x | {:.1}x |", medians[0] / medians[1], medians[0] / medians[2]);
    }
}
