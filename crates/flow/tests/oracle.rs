//! Kestrel's own oracle (its InputFlowControl tests), with real threads, for
//! the CAS windows and both lock-based twins; and a stream send side
//! (`StreamOutput`) under writers, a peer and SETTINGS changes.
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

use falconet_flow::{
    Aborted, Advance, FlowError, InputFlow, InputWindow, OutputFlow, OutputWindow,
    ParkingLotInputWindow, ParkingLotOutputWindow, Release, StdInputWindow, StdOutputWindow,
    StreamOutput,
};

const PER_THREAD: u32 = 5000;

fn threads() -> impl Iterator<Item = u32> {
    1..=4
}

/// N threads x 5000 one-byte advances fill the window exactly; one more
/// fails with FLOW_CONTROL_ERROR.
fn advances_fill_the_window_then_one_more_fails<W: InputFlow + 'static>() {
    for n in threads() {
        let window = Arc::new(W::with_threshold(n * PER_THREAD, n * PER_THREAD / 2).unwrap());
        let workers: Vec<_> = (0..n)
            .map(|_| {
                let window = window.clone();
                thread::spawn(move || {
                    for _ in 0..PER_THREAD {
                        assert_eq!(window.try_advance(1), Ok(Advance::Accepted));
                    }
                })
            })
            .collect();
        workers.into_iter().for_each(|worker| worker.join().unwrap());
        let error = window.try_advance(1).unwrap_err();
        assert_eq!(error, FlowError::WindowExceeded { requested: 1, available: 0 });
        assert_eq!(error.code().value(), 0x3);
    }
}

/// Threads advance and release one byte at a time: every emitted update is
/// above the threshold, and the updates sum to the released bytes minus
/// what is still pending.
fn updates_sum_to_released_minus_pending<W: InputFlow + 'static>() {
    for n in threads() {
        let threshold = 1000;
        let window = Arc::new(W::with_threshold(65_535, threshold).unwrap());
        let workers: Vec<_> = (0..n)
            .map(|_| {
                let window = window.clone();
                thread::spawn(move || {
                    let mut updates = Vec::new();
                    for _ in 0..PER_THREAD {
                        assert_eq!(window.try_advance(1), Ok(Advance::Accepted));
                        match window.release(1).unwrap() {
                            Release::Update(increment) => updates.push(increment),
                            Release::Pending => {}
                            Release::Aborted => unreachable!("nobody aborts"),
                        }
                    }
                    updates
                })
            })
            .collect();
        let updates: Vec<u32> =
            workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect();
        assert!(updates.iter().all(|&increment| increment > threshold), "{updates:?}");
        let released = u64::from(n * PER_THREAD);
        let pending = u64::from(window.state().pending);
        assert_eq!(updates.iter().map(|&u| u64::from(u)).sum::<u64>(), released - pending);
        assert_eq!(window.state().window, 65_535);
    }
}

/// Abort returns the unread bytes once, then 0.
fn a_second_abort_returns_zero<W: InputFlow>() {
    let window = W::with_threshold(100, 50).unwrap();
    window.try_advance(70).unwrap();
    window.release(20).unwrap();
    assert_eq!(window.abort(), 50);
    assert_eq!(window.abort(), 0);
    // Still a FLOW_CONTROL_ERROR to exceed the window after the abort.
    assert!(window.try_advance(51).is_err());
}

/// Once a thread sees "aborted", nothing succeeds for it any more, and the
/// abort's return value accounts for exactly the bytes counted before it.
fn once_abort_is_seen_nothing_succeeds<W: InputFlow + 'static>() {
    for n in threads() {
        let window = Arc::new(W::with_threshold(1 << 20, 1 << 19).unwrap());
        let go = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..n)
            .map(|_| {
                let (window, go) = (window.clone(), go.clone());
                thread::spawn(move || {
                    while !go.load(Ordering::Acquire) {}
                    let (mut consumed, mut released, mut seen_abort) = (0u64, 0u64, false);
                    for i in 0..PER_THREAD {
                        let advance = window.try_advance(2).unwrap();
                        if seen_abort {
                            assert_eq!(advance, Advance::Aborted, "after abort, nothing counts");
                        }
                        match advance {
                            Advance::Accepted => consumed += 2,
                            Advance::Aborted => seen_abort = true,
                        }
                        if i % 2 == 0 && consumed > released {
                            match window.release(1).unwrap() {
                                Release::Aborted => seen_abort = true,
                                _ if seen_abort => panic!("a release succeeded after abort"),
                                _ => released += 1,
                            }
                        }
                    }
                    (consumed, released)
                })
            })
            .collect();
        go.store(true, Ordering::Release);
        thread::yield_now();
        let unread = u64::from(window.abort());
        let (consumed, released) = workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .fold((0, 0), |(c, r), (dc, dr)| (c + dc, r + dr));
        assert_eq!(unread, consumed - released, "abort returned exactly the unread bytes");
        assert_eq!(window.abort(), 0);
    }
}

/// Output: threads reserve one byte at a time while another thread
/// increases the window; every byte granted was credited, none twice.
fn reservations_never_exceed_the_credit<W: OutputFlow + 'static>() {
    for n in threads() {
        let window = Arc::new(W::with_initial(1000).unwrap());
        let increments = 200u32;
        let workers: Vec<_> = (0..n)
            .map(|_| {
                let window = window.clone();
                thread::spawn(move || {
                    let mut granted = 0u64;
                    for _ in 0..PER_THREAD {
                        granted += u64::from(window.try_reserve(1).unwrap());
                    }
                    granted
                })
            })
            .collect();
        for _ in 0..increments {
            window.increase(10).unwrap();
        }
        let granted: u64 = workers.into_iter().map(|worker| worker.join().unwrap()).sum();
        let credit = 1000 + u64::from(increments) * 10;
        assert_eq!(granted + window.state().window as u64, credit);
        assert_eq!(window.increase(0), Err(FlowError::ZeroIncrement));
        assert_eq!(FlowError::ZeroIncrement.code().value(), 0x1);
        window.abort();
        assert_eq!(window.try_reserve(1), Err(Aborted));
    }
}

/// Writers on several streams share one connection window: each takes
/// grants of varied sizes, sends part (settled through the grant) and drops
/// the rest; a peer thread credits back exactly what was sent (WINDOW_UPDATE
/// on the connection and on each stream) and shrinks and regrows the
/// streams' windows (SETTINGS). When every writer has sent its bytes, every
/// window is back at its initial size with nothing held: no credit lost or
/// created, and no writer stuck.
fn stream_writers_share_a_connection<W: OutputFlow + 'static>() {
    const STREAMS: usize = 4;
    const CONNECTION: u32 = 40_000;
    const STREAM: u32 = 16_384;
    const SHRINK: i32 = -5_000;
    let per_stream: u64 = if cfg!(miri) { 3_000 } else { 40_000_000 };
    let connection = Arc::new(W::with_initial(CONNECTION).unwrap());
    let streams: Vec<_> = (0..STREAMS)
        .map(|_| Arc::new(StreamOutput::new(connection.clone(), STREAM).unwrap()))
        .collect();
    // Bytes sent per stream, for the peer to credit back.
    let sent: Arc<Vec<AtomicU64>> = Arc::new((0..STREAMS).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..STREAMS)
        .map(|i| {
            let (stream, sent) = (streams[i].clone(), sent.clone());
            thread::spawn(move || {
                let mut done = 0u64;
                let mut turn = 0u64;
                while done < per_stream {
                    turn += 1;
                    let want = (1 + (turn * 7_919 + i as u64 * 104_729) % 3_000)
                        .min(per_stream - done) as u32;
                    let mut grant = stream.try_grant(want).unwrap();
                    assert!(grant.len() <= want);
                    if grant.is_empty() {
                        thread::yield_now();
                        continue;
                    }
                    // Send three quarters (at least 1 byte); drop the rest.
                    let frame = (grant.len() * 3 / 4).max(1);
                    grant.sent(frame).unwrap();
                    drop(grant);
                    done += u64::from(frame);
                    // Release: the peer's Acquire sees the bytes settled.
                    sent[i].fetch_add(u64::from(frame), Ordering::Release);
                }
            })
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let peer = {
        let (connection, streams, sent, stop) =
            (connection.clone(), streams.clone(), sent.clone(), stop.clone());
        thread::spawn(move || {
            let mut credited = [0u64; STREAMS];
            let mut round = 0u64;
            loop {
                let last = stop.load(Ordering::Acquire);
                round += 1;
                for (i, stream) in streams.iter().enumerate() {
                    let total = sent[i].load(Ordering::Acquire);
                    let new = (total - credited[i]) as u32;
                    if new > 0 {
                        connection.increase(new).unwrap();
                        stream.stream().increase(new).unwrap();
                        credited[i] = total;
                    }
                    if round % 7 == i as u64 {
                        stream.stream().apply_initial_window_delta(SHRINK).unwrap();
                        thread::yield_now();
                        stream.stream().apply_initial_window_delta(-SHRINK).unwrap();
                    }
                }
                if last {
                    return credited;
                }
                thread::yield_now();
            }
        })
    };
    writers.into_iter().for_each(|writer| writer.join().unwrap());
    stop.store(true, Ordering::Release);
    let credited = peer.join().unwrap();
    assert!(credited.iter().all(|&bytes| bytes == per_stream), "{credited:?}");
    let initial = |initial: u32| falconet_flow::OutputState {
        window: initial as i32,
        held: 0,
        aborted: false,
    };
    assert_eq!(connection.state(), initial(CONNECTION));
    for stream in &streams {
        assert_eq!(stream.stream().state(), initial(STREAM));
    }
}

macro_rules! for_each_implementation {
    ($($name:ident => $input:ty, $output:ty;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn advances_fill_the_window_then_one_more_fails() {
                super::advances_fill_the_window_then_one_more_fails::<$input>();
            }

            #[test]
            fn updates_sum_to_released_minus_pending() {
                super::updates_sum_to_released_minus_pending::<$input>();
            }

            #[test]
            fn a_second_abort_returns_zero() {
                super::a_second_abort_returns_zero::<$input>();
            }

            #[test]
            fn once_abort_is_seen_nothing_succeeds() {
                super::once_abort_is_seen_nothing_succeeds::<$input>();
            }

            #[test]
            fn reservations_never_exceed_the_credit() {
                super::reservations_never_exceed_the_credit::<$output>();
            }

            #[test]
            fn stream_writers_share_a_connection() {
                super::stream_writers_share_a_connection::<$output>();
            }
        }
    )*};
}

for_each_implementation! {
    cas => InputWindow, OutputWindow;
    parking_lot => ParkingLotInputWindow, ParkingLotOutputWindow;
    std_mutex => StdInputWindow, StdOutputWindow;
}

/// Polls `future` on this thread, parking between polls.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// An async reservation on an empty window is woken by updates from another
/// thread, takes exactly the credit given, and is woken by an abort.
#[test]
fn async_reserve_is_woken_by_increase_and_by_abort() {
    let window = Arc::new(OutputWindow::new(0).unwrap());
    let updater = {
        let window = window.clone();
        thread::spawn(move || {
            for _ in 0..1000 {
                window.increase(3).unwrap();
                thread::yield_now();
            }
        })
    };
    let mut granted = 0;
    while granted < 3000 {
        granted += block_on(window.reserve(7)).unwrap();
    }
    updater.join().unwrap();
    assert_eq!(granted, 3000);
    let aborter = {
        let window = window.clone();
        thread::spawn(move || {
            thread::sleep(std::time::Duration::from_millis(20));
            window.abort();
        })
    };
    assert_eq!(block_on(window.reserve(1)), Err(Aborted));
    aborter.join().unwrap();
}
