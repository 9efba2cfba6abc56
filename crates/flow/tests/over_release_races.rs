//! Over-releases (a caller's accounting bug) racing frames and legitimate
//! releases on real threads: every over-release is refused, no operation
//! waits for good, and the window ends exact. (The loom models in
//! `loom.rs` cover the same races exhaustively on small windows.) The
//! timed races run for `FALCONET_FLOW_RACE_SECONDS` (default 2) each.
#![cfg(not(falconet_flow_loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use falconet_flow::{Advance, FlowError, InputState, InputWindow, MAX_WINDOW, Release};

/// The windows each race runs on: a stream's default, a connection's and
/// the largest.
const INITIALS: [u32; 3] = [65_535, 1 << 20, MAX_WINDOW];

/// A small xorshift: reproducible choices without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// An outside probe's race: a peer overdraws a full window again and again
/// while the application releases a byte it never consumed. A frame used
/// to be applied blind and undone; an over-release judged in between
/// passed, the undo then took the window above `initial` for good, and the
/// next frame waited forever (3 runs in 3, within milliseconds).
#[test]
fn an_overdrawing_peer_never_lets_an_over_release_through() {
    for initial in INITIALS {
        let window = Arc::new(InputWindow::new(initial).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let peer = {
            let (window, stop, refused) = (window.clone(), stop.clone(), refused.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let error = window.try_advance(initial.saturating_add(1)).unwrap_err();
                    assert!(matches!(error, FlowError::WindowExceeded { .. }), "{error:?}");
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // Race the peer for real: start once it runs, and go on until it
        // has been refused many times (or 200,000 releases after that).
        while refused.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        let mut releases = 0u64;
        while releases < 200_000 || refused.load(Ordering::Relaxed) < 20_000 {
            let error = window.release(1).expect_err("an over-release passed");
            assert_eq!(error, FlowError::OverRelease { released: 1, outstanding: 0 });
            releases += 1;
        }
        stop.store(true, Ordering::Relaxed);
        peer.join().unwrap();
        assert_eq!(
            window.state(),
            InputState { window: initial, pending: 0, aborted: false, updates_disabled: false },
        );
        assert!(window.try_advance(initial).is_ok(), "the whole window is there");
    }
}

/// Four threads each count frames (some too large), give back what they
/// counted in random pieces, and over-release (more than the window):
/// every over-release is refused, every legitimate release accepted, and
/// at the end the window is whole and the credit announced plus pending
/// is exactly what was released.
#[test]
fn frames_releases_and_over_releases_from_four_threads() {
    for initial in INITIALS {
        let window = Arc::new(InputWindow::new(initial).unwrap());
        let released = Arc::new(AtomicU64::new(0));
        let announced = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (window, released, announced) =
                    (window.clone(), released.clone(), announced.clone());
                thread::spawn(move || {
                    let mut rng = Rng(t * 31 + 7);
                    let mut consumed = 0u64;
                    let give_back = |n: u32, consumed: &mut u64| {
                        match window.release(n) {
                            Ok(Release::Update(credit)) => {
                                announced.fetch_add(credit.into(), Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(error) => panic!("a legitimate release refused: {error:?}"),
                        }
                        *consumed -= u64::from(n);
                        released.fetch_add(n.into(), Ordering::Relaxed);
                    };
                    for _ in 0..30_000 {
                        let n = match rng.below(4) {
                            0 => 1 + rng.below(16) as u32,
                            1 => 1 + rng.below(16_384) as u32,
                            2 => 1 + rng.below(2 << 20) as u32,
                            _ => initial.saturating_add(1),
                        };
                        match rng.below(3) {
                            0 => {
                                if window.try_advance(n).is_ok() {
                                    consumed += u64::from(n);
                                }
                            }
                            1 if consumed > 0 => {
                                give_back((1 + rng.below(consumed)) as u32, &mut consumed);
                            }
                            1 => {}
                            _ => {
                                // initial <= 2^31-1: no overflow.
                                assert!(window.release(initial + 1).is_err(), "over-release");
                            }
                        }
                    }
                    while consumed > 0 {
                        give_back(consumed.min(1 << 20) as u32, &mut consumed);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let state = window.state();
        assert_eq!(state.window, initial);
        assert_eq!(
            announced.load(Ordering::Relaxed) + u64::from(state.pending),
            released.load(Ordering::Relaxed)
        );
    }
}

fn seconds() -> u64 {
    std::env::var("FALCONET_FLOW_RACE_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2)
}

/// An erring thread over-releases `initial + 1` again and again (always
/// refused). A peer sends frames, two readers
/// release exactly what the peer got in. Checked:
/// - a frame that fits the window's lower bound (initial minus bytes
///   accepted and not yet confirmed released) is never refused;
/// - a legitimate release is never refused;
/// - at the end the window is whole and announced + pending == released
///   (no credit announced twice or lost).
fn honest_peer_vs_over_releases(initial: u32, erring: bool) -> Result<(), String> {
    let window = Arc::new(InputWindow::new(initial).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let confirmed = Arc::new(AtomicU64::new(0));
    let announced = Arc::new(AtomicU64::new(0));
    let refused_frames = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds());

    let erring = erring.then(|| {
        let (window, stop) = (window.clone(), stop.clone());
        thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let error = window.release(initial + 1).expect_err("an over-release passed");
                assert!(matches!(error, FlowError::OverRelease { .. }), "{error:?}");
                n += 1;
            }
            n
        })
    });
    let mut senders = Vec::new();
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (tx, rx) = mpsc::channel::<u32>();
        senders.push(tx);
        let (window, confirmed, announced) = (window.clone(), confirmed.clone(), announced.clone());
        readers.push(thread::spawn(move || -> Result<(), String> {
            for n in rx {
                match window.release(n) {
                    Ok(Release::Update(k)) => {
                        announced.fetch_add(k.into(), Ordering::Relaxed);
                    }
                    Ok(Release::Pending) => {}
                    other => return Err(format!("legitimate release({n}): {other:?}")),
                }
                confirmed.fetch_add(n.into(), Ordering::Release);
            }
            Ok(())
        }));
    }
    let peer = {
        let (window, confirmed, refused_frames) =
            (window.clone(), confirmed.clone(), refused_frames.clone());
        thread::spawn(move || -> Result<u64, String> {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let mut accepted = 0u64;
            let mut frames = 0u64;
            let mut i = 0usize;
            while Instant::now() < deadline {
                let released = confirmed.load(Ordering::Acquire);
                let lower_bound =
                    (i64::from(initial) - accepted as i64 + released as i64).max(0) as u64;
                let n = (1 + rng.below(u64::from(initial.min(16_384)))) as u32;
                match window.try_advance(n) {
                    Ok(Advance::Accepted) => {
                        accepted += u64::from(n);
                        senders[i % 2].send(n).unwrap();
                        i += 1;
                        frames += 1;
                    }
                    Ok(Advance::Aborted) => return Err("nobody aborts".into()),
                    Err(error) => {
                        if u64::from(n) <= lower_bound {
                            return Err(format!(
                                "a frame of {n} refused with at least {lower_bound} free: {error:?}"
                            ));
                        }
                        refused_frames.fetch_add(1, Ordering::Relaxed);
                        thread::yield_now();
                    }
                }
            }
            drop(senders);
            Ok(frames)
        })
    };
    let frames = peer.join().unwrap();
    let read: Result<Vec<()>, String> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    // Stopped before any error returns: the erring thread ends with the test.
    stop.store(true, Ordering::Relaxed);
    let over = erring.map(|t| t.join().unwrap()).unwrap_or(0);
    read?;
    let frames = frames?;
    let state = window.state();
    let released = confirmed.load(Ordering::Relaxed);
    let announced = announced.load(Ordering::Relaxed);
    eprintln!(
        "initial {initial}: {frames} frames, {} refused, {over} over-releases, released {released}, announced {announced}, {state:?}",
        refused_frames.load(Ordering::Relaxed)
    );
    if state.window != initial {
        return Err(format!("window not whole at the end: {state:?}"));
    }
    if announced + u64::from(state.pending) != released {
        return Err(format!(
            "announced {announced} + pending {} != released {released}",
            state.pending
        ));
    }
    Ok(())
}

#[test]
fn an_honest_peer_beside_over_releases_on_a_small_window() {
    honest_peer_vs_over_releases(100, true).unwrap();
}

#[test]
fn an_honest_peer_beside_over_releases_on_a_server_window() {
    honest_peer_vs_over_releases(65_535, true).unwrap();
}

#[test]
fn an_honest_peer_without_over_releases() {
    honest_peer_vs_over_releases(65_535, false).unwrap();
}

/// Rounds on fresh windows of 100 with 80 outstanding (announcing past
/// `threshold`) for `seconds()`: per round, `erring` runs on one thread
/// while another releases 40 legitimately after a random spin, and `bad`
/// judges the pair of answers and the window after both (a description of
/// what went wrong, or `None`). Every round must be good.
fn rounds<E: Send + std::fmt::Debug + 'static>(
    threshold: u32,
    seed: u64,
    erring: fn(&InputWindow) -> E,
    bad: impl Fn(&E, &Result<Release, FlowError>, &InputWindow) -> Option<String>,
) {
    let (to_erring, erring_rx) = mpsc::channel::<Arc<InputWindow>>();
    let (to_legit, legit_rx) = mpsc::channel::<(Arc<InputWindow>, u32)>();
    let (erring_tx, from_erring) = mpsc::channel();
    let (legit_tx, from_legit) = mpsc::channel();
    let erring = thread::spawn(move || {
        for window in erring_rx {
            erring_tx.send(erring(&window)).unwrap();
        }
    });
    let legit = thread::spawn(move || {
        for (window, delay) in legit_rx {
            for _ in 0..delay {
                std::hint::spin_loop();
            }
            legit_tx.send(window.release(40)).unwrap();
        }
    });
    let mut rng = Rng(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds());
    let (mut count, mut wrong) = (0u64, Vec::new());
    while Instant::now() < deadline {
        let window = Arc::new(InputWindow::with_threshold(100, threshold).unwrap());
        window.try_advance(80).unwrap();
        to_legit.send((window.clone(), rng.below(3000) as u32)).unwrap();
        to_erring.send(window.clone()).unwrap();
        let answer = from_erring.recv().unwrap();
        let released = from_legit.recv().unwrap();
        count += 1;
        wrong.extend(bad(&answer, &released, &window));
    }
    drop((to_erring, to_legit));
    erring.join().unwrap();
    legit.join().unwrap();
    eprintln!("{count} rounds, {} bad", wrong.len());
    assert!(
        wrong.is_empty(),
        "{} of {count} rounds: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}

/// A second review's race on real threads (loom's
/// `a_step_back_after_the_window_settled_*` are its exact schedules): with
/// releases applied blind, 3-8 bad rounds in 5 s. The erring thread over-releases 100 twenty
/// times (always refused: at least 20 over), lets a peer frame of 30 in
/// (it fits only with the legitimate 40), over-releases 200 fifty times,
/// then a frame of 5 comes. Every round: the 40 is accepted, and if the 30
/// was accepted (so the 40 was in before it) the 5 fits (30 are free).
#[test]
fn over_releases_around_a_frame_never_take_its_credit() {
    rounds(
        90,
        12345,
        |window| {
            for _ in 0..20 {
                assert!(window.release(100).is_err());
            }
            let big = window.try_advance(30);
            for _ in 0..50 {
                assert!(window.release(200).is_err());
            }
            (big, window.try_advance(5))
        },
        |(big, small), legit, window| {
            let state = window.state();
            let expected =
                60 - if big.is_ok() { 30 } else { 0 } - if small.is_ok() { 5 } else { 0 };
            let wrong =
                legit.is_err() || (big.is_ok() && small.is_err()) || state.window != expected;
            wrong
                .then(|| format!("legit {legit:?}, frame 30 {big:?}, frame 5 {small:?}, {state:?}"))
        },
    );
}

/// The announcing flavour: the erring thread also makes one legitimate
/// release of 1 between its two bursts of over-releases (each over by more
/// than 40). Released 41 in total: announced + pending must be 41 (a
/// double announcement tells an honest peer of credit the window does not
/// have).
#[test]
fn over_releases_around_a_release_never_announce_credit_twice() {
    let announced = |r: &Result<Release, FlowError>| match r {
        Ok(Release::Update(n)) => *n,
        _ => 0,
    };
    rounds(
        10,
        54321,
        |window| {
            for _ in 0..20 {
                assert!(window.release(90).is_err());
            }
            let one = window.release(1);
            for _ in 0..50 {
                assert!(window.release(200).is_err());
            }
            one
        },
        |one, legit, window| {
            let state = window.state();
            let wrong = one.is_err()
                || legit.is_err()
                || state.window != 61
                || announced(one) + announced(legit) + state.pending != 41;
            wrong.then(|| format!("one {one:?}, legit {legit:?}, {state:?}"))
        },
    );
}
