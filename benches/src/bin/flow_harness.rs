//! One network thread advancing DATA frames, K application threads
//! releasing (K = 1, 3, 7: 7 oversubscribes a 2-core machine), for the CAS
//! window and both lock twins, in interleaved rounds. Prints completed
//! bytes per second (median of the rounds) and per-operation latency
//! percentiles (over every call of every round).
//!
//! `cargo run --release -p falconet-benches --bin flow_harness [rounds] [ms per run]`

use std::time::Duration;

use falconet_benches::flow::{Run, percentile, run};
use falconet_flow::{InputWindow, ParkingLotInputWindow, StdInputWindow};

type Runner = fn(usize, Duration) -> Run;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().expect("a number"));
    let rounds = args.next().unwrap_or(5) as usize;
    let duration = Duration::from_millis(args.next().unwrap_or(300));
    let impls: [(&str, Runner); 3] = [
        ("falconet CAS", run::<InputWindow>),
        ("parking_lot::Mutex", run::<ParkingLotInputWindow>),
        ("std::sync::Mutex", run::<StdInputWindow>),
    ];
    println!(
        "{rounds} rounds of {} ms; MB/s = bytes accepted by try_advance per second (median); latencies in ns over every call\n",
        duration.as_millis()
    );
    println!(
        "| K apps | implementation | MB/s | advance p50 / p99 / p99.9 | release p50 / p99 / p99.9 |"
    );
    println!("|---|---|---|---|---|");
    for apps in [1, 3, 7] {
        let mut results: Vec<(Vec<f64>, Vec<u32>, Vec<u32>)> =
            impls.iter().map(|_| (Vec::new(), Vec::new(), Vec::new())).collect();
        for _ in 0..rounds {
            for (i, (_, runner)) in impls.iter().enumerate() {
                let mut r = runner(apps, duration);
                results[i].0.push(r.bytes_per_second / 1e6);
                results[i].1.append(&mut r.advance_ns);
                results[i].2.append(&mut r.release_ns);
            }
        }
        for ((name, _), (mut mbs, mut advance, mut release)) in impls.iter().zip(results) {
            mbs.sort_by(f64::total_cmp);
            let median = mbs[mbs.len() / 2];
            let p = |v: &mut Vec<u32>| {
                format!(
                    "{} / {} / {}",
                    percentile(v, 0.5),
                    percentile(v, 0.99),
                    percentile(v, 0.999)
                )
            };
            println!(
                "| {apps} | {name} | {median:.0} | {} | {} |",
                p(&mut advance),
                p(&mut release)
            );
        }
    }
}
