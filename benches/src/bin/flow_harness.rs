//! One network thread advancing DATA frames, K application threads
//! releasing (K = 1, 3, 7: 7 oversubscribes a 2-core machine), for the CAS
//! window and both lock twins, in interleaved rounds. Prints completed
//! bytes per second (median of the rounds) and per-operation latency
//! percentiles (over every call of every round).
//!
//! `cargo run --release -p falconet-benches --bin flow_harness [rounds] [ms per run]`
//!
//! The percentiles also go to `target/plot-data/flow.json` for the plots
//! (`--bin plots`).

use std::time::Duration;

use falconet_benches::flow::{Run, hammer, percentile, run};
use falconet_flow::{InputWindow, ParkingLotInputWindow, StdInputWindow};

type Runner = fn(usize, Duration) -> Run;

/// One implementation's results over all rounds.
#[derive(Default)]
struct Totals {
    mbs: Vec<f64>,
    advance: Vec<u32>,
    release: Vec<u32>,
    full: u64,
    attempts: u64,
}

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
        "| K | implementation | MB/s | window full | advance p50 / p99 / p99.9 / p99.99 / max | release p50 / p99 / p99.9 / p99.99 / max |"
    );
    println!("|---|---|---|---|---|---|");
    let mut plot = serde_json::Map::new();
    for apps in [1, 3, 7] {
        let mut results: Vec<Totals> = impls.iter().map(|_| Totals::default()).collect();
        for _ in 0..rounds {
            for (i, (_, runner)) in impls.iter().enumerate() {
                let mut r = runner(apps, duration);
                let totals = &mut results[i];
                totals.mbs.push(r.bytes_per_second / 1e6);
                totals.advance.append(&mut r.advance_ns);
                totals.release.append(&mut r.release_ns);
                totals.full += r.full;
                totals.attempts += r.attempts;
            }
        }
        let mut plot_k = serde_json::Map::new();
        for ((name, _), totals) in impls.iter().zip(results) {
            let Totals { mut mbs, mut advance, mut release, full, attempts } = totals;
            let points = |v: &mut Vec<u32>| -> Vec<u32> {
                [0.5, 0.99, 0.999, 0.9999, 1.0].iter().map(|&q| percentile(v, q)).collect()
            };
            plot_k.insert(
                name.to_string(),
                serde_json::json!({ "advance": points(&mut advance), "release": points(&mut release) }),
            );
            mbs.sort_by(f64::total_cmp);
            let median = mbs[mbs.len() / 2];
            let p = |v: &mut Vec<u32>| {
                format!(
                    "{} / {} / {} / {} / {}",
                    percentile(v, 0.5),
                    percentile(v, 0.99),
                    percentile(v, 0.999),
                    percentile(v, 0.9999),
                    percentile(v, 1.0)
                )
            };
            let full = 100.0 * full as f64 / attempts.max(1) as f64;
            println!(
                "| {apps} | {name} | {median:.0} | {full:.0}% | {} | {} |",
                p(&mut advance),
                p(&mut release)
            );
        }
        plot.insert(apps.to_string(), serde_json::Value::Object(plot_k));
    }

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plot-data");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("flow.json"), serde_json::Value::Object(plot).to_string());
    }

    println!(
        "\nPure contention: T threads each count and release 1 M frames on one window; ns per pair (median of the rounds)\n"
    );
    println!("| T threads | falconet CAS | parking_lot::Mutex | std::sync::Mutex |");
    println!("|---|---|---|---|");
    let hammers: [fn(usize, u64) -> f64; 3] =
        [hammer::<InputWindow>, hammer::<ParkingLotInputWindow>, hammer::<StdInputWindow>];
    for threads in [1, 2, 4, 8] {
        let mut cells = Vec::new();
        for run in hammers {
            let mut samples: Vec<f64> = (0..rounds).map(|_| run(threads, 1_000_000)).collect();
            samples.sort_by(f64::total_cmp);
            cells.push(format!("{:.1}", samples[samples.len() / 2]));
        }
        println!("| {threads} | {} |", cells.join(" | "));
    }
}
