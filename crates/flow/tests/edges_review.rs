//! Day-one edge probes of the public API, from an outside review: every
//! argument at and just past the ends of its range, and calls in the
//! order a new user tries them. Each edge gets its typed error or its
//! documented result; none panics, hangs or loses bytes.
#![cfg(not(falconet_flow_loom))]

use core::pin::pin;
use core::task::{Context, Poll, Waker};
use std::future::Future;
use std::sync::Arc;

use falconet_flow::{
    Aborted, Advance, FlowError, InputWindow, MAX_WINDOW, OutputWindow, Release, Scope,
    StreamInput, StreamOutput,
};

fn poll_once<F: Future>(f: core::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn constructors_at_2_pow_31_minus_1_and_2_pow_31() {
    assert!(InputWindow::new(MAX_WINDOW).is_ok());
    assert_eq!(
        InputWindow::new(MAX_WINDOW + 1).unwrap_err(),
        FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 }
    );
    assert_eq!(
        InputWindow::new(u32::MAX).unwrap_err(),
        FlowError::InitialTooLarge { initial: u32::MAX }
    );
    assert!(InputWindow::new(0).is_ok());
    assert!(InputWindow::new(1).is_ok());
    assert!(InputWindow::with_threshold(MAX_WINDOW, MAX_WINDOW - 1).is_ok());
    assert_eq!(
        InputWindow::with_threshold(MAX_WINDOW, MAX_WINDOW).unwrap_err(),
        FlowError::ThresholdTooLarge { threshold: MAX_WINDOW, initial: MAX_WINDOW }
    );
    assert_eq!(
        InputWindow::with_threshold(0, 1).unwrap_err(),
        FlowError::ThresholdTooLarge { threshold: 1, initial: 0 }
    );
    assert!(OutputWindow::new(MAX_WINDOW).is_ok());
    assert_eq!(
        OutputWindow::new(MAX_WINDOW + 1).unwrap_err(),
        FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 }
    );
    let conn = Arc::new(OutputWindow::new(0).unwrap());
    assert_eq!(
        StreamOutput::new(conn, u32::MAX).unwrap_err(),
        FlowError::InitialTooLarge { initial: u32::MAX }
    );
    let conn = Arc::new(InputWindow::new(0).unwrap());
    assert_eq!(
        StreamInput::new(conn, MAX_WINDOW + 1).unwrap_err(),
        FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 }
    );
}

#[test]
fn input_at_the_largest_window() {
    let w = InputWindow::new(MAX_WINDOW).unwrap();
    assert_eq!(
        w.try_advance(u32::MAX),
        Err(FlowError::WindowExceeded { requested: u32::MAX, available: MAX_WINDOW })
    );
    assert_eq!(w.try_advance(MAX_WINDOW), Ok(Advance::Accepted));
    assert_eq!(w.try_advance(1), Err(FlowError::WindowExceeded { requested: 1, available: 0 }));
    assert_eq!(w.try_advance(0), Ok(Advance::Accepted));
    assert_eq!(
        w.release(u32::MAX),
        Err(FlowError::OverRelease { released: u32::MAX, outstanding: MAX_WINDOW })
    );
    assert_eq!(w.release(MAX_WINDOW), Ok(Release::Update(MAX_WINDOW)));
    assert_eq!(w.state().pending, 0);
    assert_eq!(w.release(0), Ok(Release::Pending));
    assert_eq!(w.release(1), Err(FlowError::OverRelease { released: 1, outstanding: 0 }));
    assert_eq!(w.abort(), 0);
    assert_eq!(w.abort(), 0);
}

#[test]
fn a_zero_window_refuses_every_byte_and_releases_nothing() {
    let w = InputWindow::new(0).unwrap();
    assert_eq!(w.try_advance(0), Ok(Advance::Accepted));
    assert_eq!(w.try_advance(1), Err(FlowError::WindowExceeded { requested: 1, available: 0 }));
    assert_eq!(w.release(0), Ok(Release::Pending));
    assert_eq!(w.release(1), Err(FlowError::OverRelease { released: 1, outstanding: 0 }));
    assert_eq!(w.abort(), 0);
    assert_eq!(w.try_advance(0), Ok(Advance::Aborted));
}

#[test]
fn a_one_byte_window_announces_every_byte() {
    let w = InputWindow::new(1).unwrap();
    for _ in 0..3 {
        assert_eq!(w.try_advance(1), Ok(Advance::Accepted));
        assert_eq!(w.release(1), Ok(Release::Update(1)));
    }
}

#[test]
fn disabled_updates_and_abort_order() {
    let w = InputWindow::new(100).unwrap();
    w.try_advance(100).unwrap();
    w.disable_updates();
    w.disable_updates();
    assert_eq!(w.release(100), Ok(Release::Pending));
    assert_eq!(w.state().window, 100);
    w.try_advance(40).unwrap();
    assert_eq!(w.abort(), 40);
    assert_eq!(w.abort(), 0);
    assert_eq!(w.release(1), Ok(Release::Aborted));
    assert_eq!(
        w.try_advance(101),
        Err(FlowError::WindowExceeded { requested: 101, available: 60 })
    );
}

#[test]
fn reset_at_the_edges_leaves_the_window_unchanged_on_error() {
    let mut w = InputWindow::new(100).unwrap();
    w.try_advance(10).unwrap();
    assert_eq!(
        w.reset(MAX_WINDOW + 1),
        Err(FlowError::InitialTooLarge { initial: MAX_WINDOW + 1 })
    );
    assert_eq!(w.available(), 90);
    assert_eq!(w.initial(), 100);
    w.reset(0).unwrap();
    assert_eq!((w.available(), w.initial()), (0, 0));
    w.reset(MAX_WINDOW).unwrap();
    assert_eq!(w.available(), MAX_WINDOW);
}

#[test]
fn output_increments_that_overflow_are_typed_errors() {
    let w = OutputWindow::new(MAX_WINDOW).unwrap();
    assert_eq!(w.increase(0), Err(FlowError::ZeroIncrement));
    assert_eq!(w.increase(1), Err(FlowError::WindowOverflow { would_be: 1 << 31 }));
    assert_eq!(
        w.increase(u32::MAX),
        Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + i64::from(u32::MAX) })
    );
    assert_eq!(
        w.apply_initial_window_delta(i32::MAX),
        Err(FlowError::WindowOverflow { would_be: i64::from(MAX_WINDOW) + i64::from(i32::MAX) })
    );
    assert_eq!(w.available(), MAX_WINDOW as i32);
    // Down to the floor and one past it.
    let w = OutputWindow::new(0).unwrap();
    assert_eq!(w.apply_initial_window_delta(i32::MIN), Ok(()));
    assert_eq!(w.available(), i32::MIN);
    assert_eq!(
        w.apply_initial_window_delta(-1),
        Err(FlowError::WindowUnderflow { would_be: i64::from(i32::MIN) - 1 })
    );
    assert_eq!(w.try_reserve(u32::MAX), Ok(0));
    assert_eq!(w.try_hold(u32::MAX), Ok(0));
    // From the floor, the largest legal climb lands on 2^31-1 exactly.
    assert_eq!(w.increase(MAX_WINDOW), Ok(()));
    assert_eq!(w.available(), -1);
    assert_eq!(w.increase(MAX_WINDOW), Ok(()));
    assert_eq!(w.available(), MAX_WINDOW as i32 - 1);
    assert_eq!(w.increase(2), Err(FlowError::WindowOverflow { would_be: 1 << 31 }));
}

#[test]
fn held_credit_at_its_widest_and_settling_more_than_held() {
    let w = OutputWindow::new(MAX_WINDOW).unwrap();
    assert_eq!(w.try_hold(u32::MAX), Ok(MAX_WINDOW));
    assert_eq!(w.held(), MAX_WINDOW);
    assert_eq!(w.try_hold(1), Ok(0));
    assert_eq!(w.sent(u32::MAX), Err(FlowError::NotHeld { requested: u32::MAX, held: MAX_WINDOW }));
    assert_eq!(
        w.give_back(u32::MAX),
        Err(FlowError::NotHeld { requested: u32::MAX, held: MAX_WINDOW })
    );
    assert_eq!(w.apply_initial_window_delta(i32::MIN), Ok(()));
    assert_eq!(w.give_back(MAX_WINDOW), Ok(()));
    assert_eq!((w.available(), w.held()), (-1, 0));
    // A grant of 0 and a grant after abort.
    let w = OutputWindow::new(10).unwrap();
    let g = w.try_grant(0).unwrap();
    assert!(g.is_empty());
    drop(g);
    let mut g = w.try_grant(u32::MAX).unwrap();
    assert_eq!(g.len(), 10);
    assert_eq!(g.sent(11), Err(FlowError::NotHeld { requested: 11, held: 10 }));
    g.sent(4).unwrap();
    w.abort();
    drop(g);
    assert_eq!((w.available(), w.held()), (6, 0));
    assert_eq!(w.try_grant(1).err(), Some(Aborted));
    assert_eq!(w.try_reserve(0), Err(Aborted));
}

#[test]
fn reserve_of_zero_and_reserve_after_abort_do_not_hang() {
    let w = OutputWindow::new(0).unwrap();
    let mut r = pin!(w.reserve(0));
    assert_eq!(poll_once(r.as_mut()), Poll::Ready(Ok(0)));
    let mut r = pin!(w.reserve(u32::MAX));
    assert_eq!(poll_once(r.as_mut()), Poll::Pending);
    w.increase(MAX_WINDOW).unwrap();
    assert_eq!(poll_once(r.as_mut()), Poll::Ready(Ok(MAX_WINDOW)));
    let mut r = pin!(w.reserve(1));
    assert_eq!(poll_once(r.as_mut()), Poll::Pending);
    w.abort();
    assert_eq!(poll_once(r.as_mut()), Poll::Ready(Err(Aborted)));
    let mut r = pin!(w.reserve(0));
    assert_eq!(poll_once(r.as_mut()), Poll::Ready(Err(Aborted)));
}

#[test]
fn stream_input_at_the_edges() {
    let conn = Arc::new(InputWindow::new(MAX_WINDOW).unwrap());
    let stream = StreamInput::new(conn.clone(), MAX_WINDOW).unwrap();
    let err = stream.try_advance(u32::MAX).unwrap_err();
    assert_eq!(err.scope, Scope::Connection);
    assert_eq!(conn.available(), MAX_WINDOW);
    assert_eq!(stream.try_advance(MAX_WINDOW).unwrap().0, Advance::Accepted);
    let updates = stream.release(MAX_WINDOW).unwrap();
    assert_eq!((updates.stream, updates.connection), (Some(MAX_WINDOW), Some(MAX_WINDOW)));
    assert_eq!(stream.release(1), Err(FlowError::OverRelease { released: 1, outstanding: 0 }));
    assert_eq!(stream.abort(), Ok(None));
    assert_eq!(stream.abort(), Ok(None));
    // A zero stream window on a big connection: the stream refuses, the
    // connection keeps exact accounting.
    let stream = StreamInput::new(conn.clone(), 0).unwrap();
    let err = stream.try_advance(1).unwrap_err();
    assert_eq!(err.scope, Scope::Stream);
    assert_eq!(conn.available(), MAX_WINDOW);
}

#[test]
fn stream_output_at_the_edges() {
    let conn = Arc::new(OutputWindow::new(MAX_WINDOW).unwrap());
    let stream = StreamOutput::new(conn.clone(), MAX_WINDOW).unwrap();
    assert_eq!(stream.try_hold(0), Ok(0));
    assert_eq!(stream.try_hold(u32::MAX), Ok(MAX_WINDOW));
    assert_eq!(
        stream.sent(u32::MAX),
        Err(FlowError::NotHeld { requested: u32::MAX, held: MAX_WINDOW })
    );
    assert_eq!((stream.stream().held(), conn.held()), (MAX_WINDOW, MAX_WINDOW));
    stream.give_back(MAX_WINDOW).unwrap();
    assert_eq!(
        (stream.stream().available(), conn.available()),
        (MAX_WINDOW as i32, MAX_WINDOW as i32)
    );
    let g = stream.try_grant(0).unwrap();
    assert!(g.is_empty());
    drop(g);
    stream.abort();
    assert_eq!(stream.try_hold(1), Err(Aborted));
    assert_eq!(stream.try_reserve(0), Err(Aborted));
}
