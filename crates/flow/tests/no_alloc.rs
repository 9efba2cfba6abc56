//! A counting global allocator proves that the windows allocate nothing in
//! steady state: receive (DATA frames counted, credit released, updates
//! announced, a stream's composition with its connection), send (credit
//! taken, held, settled, given back, WINDOW_UPDATE and SETTINGS changes),
//! refusals, and the async waits once their waker slots exist.
#![cfg(not(falconet_flow_loom))]
#![cfg(not(miri))] // Miri's own allocator bookkeeping is not what we count.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use falconet_flow::{
    Advance, FlowError, InputWindow, MAX_WINDOW, OutputWindow, Release, StreamInput, StreamOutput,
};
use falconet_testkit::{count_allocations, serial};

#[global_allocator]
static GLOBAL: falconet_testkit::Counting = falconet_testkit::Counting;

const ROUNDS: u32 = 10_000;

/// A waker that counts its wakes (cloning it is a reference count).
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn the_receive_side_allocates_nothing() {
    let _serial = serial();
    let window = InputWindow::new(65_535).unwrap();
    let mut updates = 0u64;
    let allocations = count_allocations(|| {
        for round in 0..ROUNDS {
            let n = 1 + round % 16_384;
            assert_eq!(window.try_advance(n), Ok(Advance::Accepted));
            if let Release::Update(credit) = window.release(n).unwrap() {
                updates += u64::from(credit);
            }
            // Refusals: past the window, and more released than received.
            assert!(window.try_advance(MAX_WINDOW).is_err());
            assert!(window.release(1).is_err());
        }
    });
    assert_eq!(allocations, 0, "the receive window allocated");
    assert!(updates > 0, "no update was ever announced");
    // Every byte released: the window is whole again, and what was not
    // announced is pending (the peer's view is the window less it).
    let received: u64 = (0..ROUNDS).map(|round| 1 + u64::from(round % 16_384)).sum();
    let state = window.state();
    assert_eq!(state.window, 65_535);
    assert_eq!(u64::from(state.pending), received - updates);
}

#[test]
fn a_stream_and_its_connection_receive_without_allocating() {
    let _serial = serial();
    let connection = Arc::new(InputWindow::new(1 << 20).unwrap());
    // The streams exist before counting (each is an allocation of its own).
    let streams: Vec<_> =
        (0..8).map(|_| StreamInput::new(connection.clone(), 65_535).unwrap()).collect();
    let mut announced = 0u64;
    let allocations = count_allocations(|| {
        for round in 0..ROUNDS {
            let stream = &streams[round as usize % streams.len()];
            let n = 1 + round % 16_384;
            let (advance, _) = stream.try_advance(n).unwrap();
            assert_eq!(advance, Advance::Accepted);
            let updates = stream.release(n).unwrap();
            announced +=
                u64::from(updates.stream.unwrap_or(0)) + u64::from(updates.connection.unwrap_or(0));
            // The stream's window refuses a frame past it, and the
            // connection counts nothing of it.
            assert!(stream.try_advance(MAX_WINDOW).is_err());
        }
    });
    assert_eq!(allocations, 0, "a stream's receive window allocated");
    assert!(announced > 0);
}

#[test]
fn the_send_side_allocates_nothing() {
    let _serial = serial();
    let connection = Arc::new(OutputWindow::new(65_535).unwrap());
    let stream = StreamOutput::new(connection.clone(), 65_535).unwrap();
    let mut sent = 0u64;
    let allocations = count_allocations(|| {
        for round in 0..ROUNDS {
            let want = 1 + round % 20_000;
            // A grant: part of it sent, the rest given back on drop.
            let mut grant = stream.try_grant(want).unwrap();
            let granted = grant.len();
            assert!(granted > 0 && granted <= want);
            grant.sent(granted / 2).unwrap();
            sent += u64::from(granted / 2);
            drop(grant);
            // The peer's WINDOW_UPDATEs restore what was sent.
            if granted / 2 > 0 {
                stream.stream().increase(granted / 2).unwrap();
                connection.increase(granted / 2).unwrap();
            }
            // Held credit settled by hand, and a refused increase.
            let held = connection.try_hold(10).unwrap();
            connection.give_back(held).unwrap();
            assert_eq!(connection.increase(0), Err(FlowError::ZeroIncrement));
            // SETTINGS_INITIAL_WINDOW_SIZE down and back up.
            stream.stream().apply_initial_window_delta(-1_000).unwrap();
            stream.stream().apply_initial_window_delta(1_000).unwrap();
        }
    });
    assert_eq!(allocations, 0, "the send windows allocated");
    assert!(sent > 0);
    assert_eq!(connection.available(), 65_535);
    assert_eq!(stream.stream().available(), 65_535);
}

#[test]
fn waiting_for_credit_allocates_nothing_once_its_slots_exist() {
    let _serial = serial();
    let connection = Arc::new(OutputWindow::new(0).unwrap());
    let stream = StreamOutput::new(connection.clone(), 65_535).unwrap();
    let counter = Arc::new(Counter(AtomicUsize::new(0)));
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let wait_once = |cx: &mut Context<'_>| {
        // The connection has no credit: both waits park.
        let mut reserve = pin!(connection.reserve(100));
        assert!(reserve.as_mut().poll(cx).is_pending());
        let mut grant = pin!(stream.grant(100));
        assert!(grant.as_mut().poll(cx).is_pending());
        // A WINDOW_UPDATE wakes them; the first takes its credit, the
        // second waits again and gets the next update's.
        connection.increase(100).unwrap();
        assert_eq!(reserve.as_mut().poll(cx), Poll::Ready(Ok(100)));
        assert!(grant.as_mut().poll(cx).is_pending());
        connection.increase(100).unwrap();
        let Poll::Ready(Ok(mut granted)) = grant.as_mut().poll(cx) else { panic!("not granted") };
        assert_eq!(granted.len(), 100);
        granted.sent(100).unwrap();
        drop(granted);
        // The stream's own WINDOW_UPDATE for what it sent.
        stream.stream().increase(100).unwrap();
        // Dropping a waiting future leaves its slots.
        let mut cancelled = pin!(connection.reserve(1));
        assert!(cancelled.as_mut().poll(cx).is_pending());
    };
    // The first round makes the waker slots; later rounds reuse them.
    wait_once(&mut cx);
    let allocations = count_allocations(|| {
        for _ in 0..1_000 {
            wait_once(&mut cx);
        }
    });
    assert_eq!(allocations, 0, "a wait allocated in steady state");
    assert!(counter.0.load(Ordering::Relaxed) >= 2 * 1_000, "the waits were never woken");
}
