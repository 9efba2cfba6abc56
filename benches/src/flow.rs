//! The flow-control harness (the seed's, made honest): one "network" thread
//! counts DATA frames against a receive window while K "application"
//! threads release what was consumed. Credit only comes back through
//! release, so the window stays bounded and a full window stalls the
//! network thread, as a real connection would. Completed work is bytes
//! accepted by `try_advance` (not loop iterations); every call of both
//! kinds is timed for latency percentiles.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use falconet_flow::{Advance, InputFlow};

/// Bytes per DATA frame.
pub const FRAME: u32 = 1024;
/// The window: HTTP/2's default initial window.
pub const WINDOW: u32 = 65_535;
/// Most bytes one release gives back.
pub const CHUNK: u64 = 4096;

/// One run's results.
#[derive(Debug, Default)]
pub struct Run {
    /// Bytes accepted by `try_advance` per second.
    pub bytes_per_second: f64,
    /// Latency of every `try_advance` call, in nanoseconds.
    pub advance_ns: Vec<u32>,
    /// Latency of every `release` call, in nanoseconds.
    pub release_ns: Vec<u32>,
    /// `try_advance` calls refused because the window was full.
    pub full: u64,
    /// `try_advance` calls.
    pub attempts: u64,
}

fn elapsed_ns(start: Instant) -> u32 {
    start.elapsed().as_nanos().min(u128::from(u32::MAX)) as u32
}

/// Runs the harness for `duration` with `apps` releasing threads.
pub fn run<W: InputFlow + 'static>(apps: usize, duration: Duration) -> Run {
    let window = Arc::new(W::with_threshold(WINDOW, WINDOW / 2).unwrap());
    let unreleased = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let releasers: Vec<_> = (0..apps)
        .map(|_| {
            let (window, unreleased, stop) = (window.clone(), unreleased.clone(), stop.clone());
            thread::spawn(move || {
                let mut latencies = Vec::with_capacity(1 << 20);
                while !stop.load(Ordering::Relaxed) {
                    let claimed = unreleased
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                            (left > 0).then(|| left - left.min(CHUNK))
                        })
                        .map(|left| left.min(CHUNK))
                        .unwrap_or(0);
                    if claimed == 0 {
                        // Nothing consumed yet: give the core away (a real
                        // application would be blocked on its stream).
                        thread::yield_now();
                        continue;
                    }
                    let start = Instant::now();
                    window.release(claimed as u32).unwrap();
                    if latencies.len() < latencies.capacity() {
                        latencies.push(elapsed_ns(start));
                    }
                }
                latencies
            })
        })
        .collect();
    let mut advance_ns = Vec::with_capacity(1 << 21);
    let (mut accepted, mut full, mut attempts) = (0u64, 0u64, 0u64);
    let begin = Instant::now();
    while begin.elapsed() < duration {
        let start = Instant::now();
        let result = window.try_advance(FRAME);
        attempts += 1;
        if advance_ns.len() < advance_ns.capacity() {
            advance_ns.push(elapsed_ns(start));
        }
        match result {
            Ok(Advance::Accepted) => {
                accepted += u64::from(FRAME);
                unreleased.fetch_add(u64::from(FRAME), Ordering::AcqRel);
            }
            Ok(Advance::Aborted) => unreachable!("nobody aborts"),
            // The window is full until the applications release: a real
            // connection stops reading the socket; let them run.
            Err(_) => {
                full += 1;
                thread::yield_now();
            }
        }
    }
    let seconds = begin.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let release_ns = releasers.into_iter().flat_map(|r| r.join().unwrap()).collect();
    Run { bytes_per_second: accepted as f64 / seconds, advance_ns, release_ns, full, attempts }
}

/// The `q`-quantile (0..=1) of `samples`, in nanoseconds.
pub fn percentile(samples: &mut [u32], q: f64) -> u32 {
    if samples.is_empty() {
        return 0;
    }
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

/// Pure contention: `threads` threads each count and release `pairs`
/// one-KiB frames on one window, with no other work; returns nanoseconds
/// per completed pair (wall time over all pairs).
pub fn hammer<W: InputFlow + 'static>(threads: usize, pairs: u64) -> f64 {
    let window = Arc::new(W::with_threshold(WINDOW, WINDOW / 2).unwrap());
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let window = window.clone();
            thread::spawn(move || {
                let mut done = 0;
                while done < pairs {
                    if window.try_advance(FRAME) == Ok(Advance::Accepted) {
                        window.release(FRAME).unwrap();
                        done += 1;
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().unwrap());
    start.elapsed().as_nanos() as f64 / (threads as u64 * pairs) as f64
}
