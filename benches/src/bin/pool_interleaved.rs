//! Two-thread workloads measured in interleaved rounds.
//!
//! On a 2-vCPU machine a criterion run of a two-thread ping-pong swings by
//! 3x from one run to the next, as the scheduler places the threads. This
//! runs each pool once per round, round after round, and reports the median
//! per pool, so every pool sees the same conditions over the same minutes.
//!
//! `cargo run --release -p falconet-benches --bin pool_interleaved [rounds] [blocks]`

use std::time::Duration;

use falconet_benches::{
    ArrayQueuePool, Falconet, LockfreeObjectPool, MutexPool, ShardedSlabPool, SystemAllocator,
    handoff_only, lease_here_return_there,
};

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn per_block(elapsed: Duration, blocks: u64) -> f64 {
    elapsed.as_nanos() as f64 / blocks as f64
}

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let rounds = args.next().unwrap_or(9);
    let blocks = args.next().unwrap_or(1_000_000);
    let falconet = Falconet::default();
    let mutex = MutexPool::default();
    let malloc = SystemAllocator;
    let array_queue = ArrayQueuePool::default();
    let lockfree = LockfreeObjectPool::default();
    let sharded = ShardedSlabPool::default();
    let pools: [(&str, &dyn Fn() -> Duration); 7] = [
        ("falconet", &|| lease_here_return_there(&falconet, blocks)),
        ("mutex-vec (twin)", &|| lease_here_return_there(&mutex, blocks)),
        ("system-malloc", &|| lease_here_return_there(&malloc, blocks)),
        ("crossbeam-arrayqueue", &|| lease_here_return_there(&array_queue, blocks)),
        ("lockfree-object-pool", &|| lease_here_return_there(&lockfree, blocks)),
        ("sharded-slab", &|| lease_here_return_there(&sharded, blocks)),
        ("rtrb hand-off alone", &|| handoff_only(blocks)),
    ];
    let mut samples = vec![Vec::new(); pools.len()];
    for _ in 0..rounds {
        for (i, (_, run)) in pools.iter().enumerate() {
            samples[i].push(per_block(run(), blocks));
        }
    }
    let medians: Vec<f64> = samples.into_iter().map(median).collect();
    let ours = medians[0];
    println!(
        "\n### pool/lease on A, return on B (interleaved: {rounds} rounds x {blocks} blocks, medians)\n"
    );
    println!("| | ns per block | vs falconet |");
    println!("|---|---|---|");
    for ((name, _), ns) in pools.iter().zip(&medians) {
        let ratio = if *name == "falconet" {
            String::new()
        } else {
            format!("falconet {:.1}x faster", ns / ours)
        };
        println!("| {name} | {ns:.1} | {ratio} |");
    }
    let twin_net = (medians[1] - medians[6]) / (ours - medians[6]);
    println!(
        "\nNet of the ring's own cost, falconet is {twin_net:.1}x faster than the mutex twin."
    );
}
