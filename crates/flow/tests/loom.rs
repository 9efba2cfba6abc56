//! loom models of the windows' races, each named for its race:
//! `RUSTFLAGS="--cfg falconet_flow_loom" cargo test -p falconet-flow --test loom --release`
//! (`scripts/loom.sh` runs them).
#![cfg(falconet_flow_loom)]

use std::sync::Arc as StdArc;

use falconet_flow::{Aborted, Advance, InputWindow, OutputWindow, Release, StreamInput};
use loom::sync::Arc;
use loom::thread;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// Advance, release and abort race on one receive window: the abort
/// returns exactly the bytes that were counted and not released before it,
/// and every update stays above the threshold.
#[test]
fn advance_vs_release_vs_abort() {
    model(|| {
        let window = Arc::new(InputWindow::with_threshold(100, 4).unwrap());
        window.try_advance(10).unwrap(); // something to release
        let advancer = {
            let window = window.clone();
            thread::spawn(move || match window.try_advance(10).unwrap() {
                Advance::Accepted => 10,
                Advance::Aborted => 0,
            })
        };
        let releaser = {
            let window = window.clone();
            thread::spawn(move || match window.release(5).unwrap() {
                Release::Update(n) => {
                    assert!(n > 4);
                    5
                }
                Release::Pending => 5,
                Release::Aborted => 0,
            })
        };
        let unread = window.abort();
        let advanced = 10 + advancer.join().unwrap();
        let released = releaser.join().unwrap();
        assert_eq!(unread, advanced - released, "abort returned exactly the unread bytes");
        assert_eq!(window.abort(), 0);
    });
}

/// A reservation waits on an empty send window while an update and an
/// abort arrive: it ends with the credit or with `Aborted`, never hangs,
/// and credit is never granted twice.
#[test]
fn reserve_waiting_vs_increase_vs_abort() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let increaser = {
            let window = window.clone();
            thread::spawn(move || window.increase(5).unwrap())
        };
        let aborter = {
            let window = window.clone();
            thread::spawn(move || window.abort())
        };
        let granted = loom::future::block_on(window.reserve(8));
        increaser.join().unwrap();
        aborter.join().unwrap();
        match granted {
            Ok(n) => {
                assert_eq!(n, 5);
                assert_eq!(window.state().window, 0);
            }
            Err(Aborted) => assert!(window.state().aborted),
        }
    });
}

/// A reservation waits and an update alone must wake it (the lost-wakeup
/// race between "window empty, sleep" and "credit arrives").
#[test]
fn reserve_waiting_vs_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let increaser = {
            let window = window.clone();
            thread::spawn(move || {
                window.increase(3).unwrap();
                window.increase(4).unwrap();
            })
        };
        let first = loom::future::block_on(window.reserve(10)).unwrap();
        let second =
            if first < 7 { loom::future::block_on(window.reserve(10)).unwrap() } else { 0 };
        increaser.join().unwrap();
        assert_eq!(first + second, 7);
    });
}

/// A stream's frame races the stream's abort: whichever lands first, the
/// connection gets every byte of the frame back exactly once.
#[test]
fn stream_and_connection_under_abort() {
    model(|| {
        let connection = StdArc::new(InputWindow::with_threshold(1000, 500).unwrap());
        let stream = Arc::new(StreamInput::new(connection.clone(), 100).unwrap());
        let network = {
            let stream = stream.clone();
            thread::spawn(move || stream.try_advance(30).unwrap().0)
        };
        stream.abort().unwrap();
        network.join().unwrap();
        // The stream is aborted: nothing of it may stay charged to the
        // connection, and nothing may be returned twice.
        assert_eq!(connection.available(), 1000);
    });
}

/// A SETTINGS change that leaves the window negative must not drop the
/// waiter: the update after it still wakes the reservation.
#[test]
fn reserve_waiting_vs_shrink_then_increase() {
    model(|| {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let peer = {
            let window = window.clone();
            thread::spawn(move || {
                window.apply_initial_window_delta(-5).unwrap();
                window.increase(10).unwrap();
            })
        };
        let granted = loom::future::block_on(window.reserve(8)).unwrap();
        peer.join().unwrap();
        assert_eq!(granted, 5);
    });
}
