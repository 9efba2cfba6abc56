//! The registry mixes in interleaved rounds: every table runs each cell
//! (mix x threads) once per round, in rotating order, so machine noise
//! lands on all of them alike. Prints the median completed operations per
//! second and the ratio of falconet-registry to each.
//!
//! `cargo run --release -p falconet-benches --bin registry_mix [rounds] [ops per thread] [mix]`
//!
//! `mix` is `shared` (read-heavy, any thread looks up any connection),
//! `own`, `churn` or `all` (the default).

use falconet_benches::registry::{
    CHURN, Mix, PinnedRegistry, READ_HEAVY, READ_HEAVY_OWNED, Table, populated, run_mix,
};
use falconet_registry::Registry;

type StdMutex = std::sync::Mutex<std::collections::HashMap<u64, u64>>;
type StdRwLock = std::sync::RwLock<std::collections::HashMap<u64, u64>>;
type PlMutex = parking_lot::Mutex<std::collections::HashMap<u64, u64>>;
type PlRwLock = parking_lot::RwLock<std::collections::HashMap<u64, u64>>;

/// Runs one cell on a fresh, populated table; completed ops per second.
fn cell<T: Table>(mix: Mix, threads: usize, ops: u64) -> f64 {
    let (table, keys) = populated::<T>();
    let (completed, elapsed) = run_mix(&table, &keys, mix, threads, ops);
    assert_eq!(completed, ops * threads as u64, "{}: an operation failed", T::NAME);
    completed as f64 / elapsed.as_secs_f64()
}

type Cell = fn(Mix, usize, u64) -> f64;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |at: usize, default: u64| {
        args.get(at).map_or(default, |a| a.parse::<u64>().expect("a number"))
    };
    let rounds = number(0, 7) as usize;
    let ops = number(1, 1_000_000);
    let mixes: Vec<Mix> = match args.get(2).map_or("all", String::as_str) {
        "shared" => vec![READ_HEAVY],
        "own" => vec![READ_HEAVY_OWNED],
        "churn" => vec![CHURN],
        "all" => vec![READ_HEAVY, READ_HEAVY_OWNED, CHURN],
        other => panic!("unknown mix {other:?}: shared, own, churn or all"),
    };
    let tables: [(&str, Cell); 9] = [
        (<Registry<u64>>::NAME, cell::<Registry<u64>>),
        (PinnedRegistry::NAME, cell::<PinnedRegistry>),
        (StdMutex::NAME, cell::<StdMutex>),
        (StdRwLock::NAME, cell::<StdRwLock>),
        (PlMutex::NAME, cell::<PlMutex>),
        (PlRwLock::NAME, cell::<PlRwLock>),
        (<dashmap::DashMap<u64, u64>>::NAME, cell::<dashmap::DashMap<u64, u64>>),
        (<papaya::HashMap<u64, u64>>::NAME, cell::<papaya::HashMap<u64, u64>>),
        (<sharded_slab::Slab<u64>>::NAME, cell::<sharded_slab::Slab<u64>>),
    ];
    println!(
        "{rounds} interleaved rounds, {ops} operations per thread per run; median Mops/s (completed operations); (x, y) = falconet-registry counted / this, pinned / this\n"
    );
    for mix in mixes {
        println!("{}\n", mix.name);
        println!("| table | 1 thread | 2 threads | 4 threads |");
        println!("|---|---|---|---|");
        let mut medians = vec![[0.0; 3]; tables.len()];
        for (column, threads) in [1, 2, 4].into_iter().enumerate() {
            let mut runs = vec![Vec::new(); tables.len()];
            for round in 0..rounds {
                for step in 0..tables.len() {
                    let index = (round + step) % tables.len();
                    runs[index].push(tables[index].1(mix, threads, ops));
                }
            }
            for (index, mut samples) in runs.into_iter().enumerate() {
                samples.sort_by(f64::total_cmp);
                medians[index][column] = samples[samples.len() / 2];
            }
        }
        for (index, (name, _)) in tables.iter().enumerate() {
            let cells: Vec<String> = (0..3)
                .map(|c| {
                    let mops = medians[index][c] / 1e6;
                    let counted = medians[0][c] / medians[index][c];
                    let pinned = medians[1][c] / medians[index][c];
                    match index {
                        0 => format!("{mops:.1}"),
                        1 => format!("{mops:.1} ({counted:.1}x)"),
                        _ => format!("{mops:.1} ({counted:.1}x, {pinned:.1}x)"),
                    }
                })
                .collect();
            println!("| {name} | {} |", cells.join(" | "));
        }
        println!();
    }
}
