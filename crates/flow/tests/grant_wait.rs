//! `StreamOutput::grant`: the cancel-safe wait for credit on a stream and
//! its connection. Each test can fail: a lost wake hangs (behind a
//! timeout), a spin shows in the wake count, lost credit in the windows.
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use falconet_flow::{Aborted, OutputWindow, StreamOutput};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(30);

/// A waker that counts its wakes.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Counter>, Waker) {
    let counter = Arc::new(Counter::default());
    (Arc::clone(&counter), Waker::from(counter))
}

fn output(connection: u32, stream: u32) -> (Arc<OutputWindow>, StreamOutput) {
    let connection = Arc::new(OutputWindow::new(connection).unwrap());
    let output = StreamOutput::new(Arc::clone(&connection), stream).unwrap();
    (connection, output)
}

/// The edges of `max` and of each window: 0 is an empty grant at once,
/// with or without credit; credit on both is taken at once, at most
/// `min(max, stream, connection)`, up to `u32::MAX` asked.
#[test]
fn ready_at_once_when_it_can_be() {
    let (counter, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    for (connection, stream, max, granted) in [
        (0, 0, 0, 0),
        (100, 0, 0, 0),
        (100, 10, 5, 5),
        (3, 10, 5, 3),
        (100, 10, u32::MAX, 10),
        (i32::MAX as u32, i32::MAX as u32, u32::MAX, i32::MAX as u32),
    ] {
        let (_connection, output) = output(connection, stream);
        let mut wait = Box::pin(output.grant(max));
        match wait.as_mut().poll(&mut cx) {
            Poll::Ready(Ok(grant)) => assert_eq!(grant.len(), granted),
            other => panic!("{connection} {stream} {max}: {other:?}"),
        }
    }
    assert_eq!(counter.0.load(Ordering::SeqCst), 0);
}

/// No credit on one window: the wait is pending, and polling it again and
/// again while nothing changes wakes nothing (a grant that failed would
/// give the stream's credit back, a transition that wakes the waiters: a
/// wait that tried would wake itself for ever).
#[test]
fn a_pending_wait_does_not_wake_itself() {
    // `max` below the stream's credit, and at or past it (a grant that
    // failed would then have emptied the stream and given it all back).
    for (connection, stream, max) in [(0, 10, 5), (0, 10, 10), (0, 10, 100), (10, 0, 5), (0, 0, 5)]
    {
        let (_connection, output) = output(connection, stream);
        let (counter, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let mut wait = Box::pin(output.grant(max));
        for _ in 0..100 {
            assert!(wait.as_mut().poll(&mut cx).is_pending());
        }
        let case = format!("{connection} {stream} {max}");
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "{case}: woke itself");
        assert_eq!((output.stream().available(), output.stream().held()), (stream as i32, 0));
    }
}

/// Each way the wait ends while pending: credit on the missing window
/// (woken, granted), an abort of either window, the one with credit too
/// (woken, `Aborted`). One wake each, and nothing taken on an abort.
#[test]
fn every_end_of_a_wait_wakes_it() {
    type Step = fn(&OutputWindow, &StreamOutput);
    type Case = (&'static str, u32, u32, Step, Result<u32, Aborted>);
    let cases: [Case; 6] = [
        ("connection credit", 0, 10, |c, _| c.increase(4).unwrap(), Ok(4)),
        ("stream credit", 10, 0, |_, o| o.stream().increase(4).unwrap(), Ok(4)),
        ("stream reset, waiting for the connection", 0, 10, |_, o| o.abort(), Err(Aborted)),
        ("connection closed, waiting for the stream", 10, 0, |c, _| c.abort(), Err(Aborted)),
        ("connection closed, waiting for it", 0, 10, |c, _| c.abort(), Err(Aborted)),
        ("stream reset, waiting for it", 10, 0, |_, o| o.abort(), Err(Aborted)),
    ];
    for (name, connection, stream, step, expected) in cases {
        let (connection, output) = output(connection, stream);
        let (counter, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let mut wait = Box::pin(output.grant(5));
        assert!(wait.as_mut().poll(&mut cx).is_pending(), "{name}");
        step(&connection, &output);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "{name}: one wake");
        match wait.as_mut().poll(&mut cx) {
            Poll::Ready(result) => assert_eq!(result.map(|g| g.len()), expected, "{name}"),
            Poll::Pending => panic!("{name}: pending after its wake"),
        }
        drop(wait);
        if expected.is_err() {
            assert_eq!((output.stream().held(), connection.held()), (0, 0), "{name}");
        }
    }
}

/// A wait dropped while pending leaves its wakers nowhere: a transition
/// after the drop wakes nobody, and a second wait is served alone.
#[test]
fn a_dropped_wait_leaves_no_waker() {
    let (connection, output) = output(0, 10);
    let (counter, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    for _ in 0..1000 {
        let mut wait = Box::pin(output.grant(5));
        assert!(wait.as_mut().poll(&mut cx).is_pending());
    }
    connection.increase(3).unwrap();
    output.stream().increase(1).unwrap();
    assert_eq!(counter.0.load(Ordering::SeqCst), 0, "a dropped wait was woken");
    let mut wait = Box::pin(output.grant(5));
    match wait.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(grant)) => assert_eq!(grant.len(), 3),
        other => panic!("{other:?}"),
    }
}

/// Several streams' writers on a multi-thread runtime wait on one
/// connection, each wait inside a timeout that keeps firing, while a peer
/// task credits the connection in small updates and each stream generously:
/// every connection byte credited is granted and sent exactly once (none
/// lost to a cancelled wait, none created), and no writer sleeps through
/// credit.
#[test]
fn cancelled_waits_on_a_shared_connection_conserve_credit() {
    const UPDATES: u64 = 20_000;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let connection = Arc::new(OutputWindow::new(0).unwrap());
        let sent = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        let mut streams = Vec::new();
        for w in 0..6u32 {
            let output =
                Arc::new(StreamOutput::new(Arc::clone(&connection), i32::MAX as u32).unwrap());
            streams.push(Arc::clone(&output));
            let (connection, sent, done) =
                (Arc::clone(&connection), Arc::clone(&sent), Arc::clone(&done));
            writers.push(tokio::spawn(async move {
                let mut round = 0u32;
                while !done.load(Ordering::Acquire) || connection.available() > 0 {
                    round += 1;
                    let tiny = Duration::from_micros(u64::from(10 + (w * 7 + round) % 90));
                    match timeout(tiny, output.grant(1 + round % 37)).await {
                        Ok(Ok(mut grant)) => {
                            // Sends part of it; the rest goes back on drop.
                            let n = grant.len().div_ceil(2);
                            grant.sent(n).unwrap();
                            sent.fetch_add(u64::from(n), Ordering::Relaxed);
                        }
                        Ok(Err(Aborted)) => panic!("not aborted"),
                        Err(_) => {}
                    }
                }
            }));
        }
        let mut credited = 0u64;
        for i in 0..UPDATES {
            let n = 1 + (i % 13) as u32;
            connection.increase(n).unwrap();
            credited += u64::from(n);
            if i % 16 == 0 {
                tokio::task::yield_now().await;
            }
        }
        done.store(true, Ordering::Release);
        timeout(LIMIT, async {
            for writer in writers {
                writer.await.unwrap();
            }
        })
        .await
        .expect("a writer slept through available credit");
        assert_eq!((connection.available(), connection.held()), (0, 0));
        assert_eq!(sent.load(Ordering::Relaxed), credited);
        let from_streams: u64 = streams
            .iter()
            .map(|s| u64::from(i32::MAX as u32 - s.stream().available() as u32))
            .sum();
        assert_eq!(from_streams, credited, "each stream's window counts what it sent");
        assert!(streams.iter().all(|s| s.stream().held() == 0));
    });
}
