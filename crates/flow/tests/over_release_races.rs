//! Over-releases (a caller's accounting bug) racing frames and legitimate
//! releases on real threads, on a wait-free window and a CAS one: every
//! over-release is refused, no operation waits for good, and the window
//! ends exact. (The loom models in `loom.rs` cover the same races
//! exhaustively on small windows.)
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use falconet_flow::{FlowError, InputState, InputWindow, MAX_WINDOW, Release};

/// The windows each race runs on: wait-free ones (a server's sizes and
/// the largest) and a CAS one.
const INITIALS: [u32; 3] = [65_535, InputWindow::WAIT_FREE_MAX_WINDOW, MAX_WINDOW];

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
                                let too_much = initial.saturating_add(1).min(MAX_WINDOW);
                                if too_much > initial {
                                    assert!(window.release(too_much).is_err(), "over-release");
                                }
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
