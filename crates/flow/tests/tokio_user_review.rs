//! A day-one tokio user's programs against falconet-flow (outside review).
#![cfg(not(falconet_flow_loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use falconet_flow::{Aborted, OutputWindow, StreamOutput};
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(30);

fn multi() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Many tasks wait in `reserve` on one connection window on a multi-thread
/// runtime, each wait wrapped in a timeout that keeps firing; a peer task
/// credits the window in small updates. Every credited byte is reserved
/// exactly once (none lost to a cancelled wait, none created), and no
/// waiter is left asleep with credit available.
#[test]
fn cancelled_reservations_on_a_shared_window_conserve_credit() {
    const UPDATES: u64 = 20_000;
    multi().block_on(async {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let taken = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..8u32 {
            let (window, taken, done) =
                (Arc::clone(&window), Arc::clone(&taken), Arc::clone(&done));
            writers.push(tokio::spawn(async move {
                let mut round = 0u32;
                while !done.load(Ordering::Acquire) || window.available() > 0 {
                    round += 1;
                    let tiny = Duration::from_micros(u64::from(10 + (w * 7 + round) % 90));
                    match timeout(tiny, window.reserve(1 + (round % 37))).await {
                        Ok(Ok(n)) => {
                            taken.fetch_add(u64::from(n), Ordering::Relaxed);
                        }
                        Ok(Err(Aborted)) => panic!("not aborted"),
                        Err(_) => {}
                    }
                }
            }));
        }
        let peer = {
            let window = Arc::clone(&window);
            async move {
                let mut credited = 0u64;
                for i in 0..UPDATES {
                    let n = 1 + (i % 13) as u32;
                    window.increase(n).unwrap();
                    credited += u64::from(n);
                    if i % 16 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                credited
            }
        };
        let credited = timeout(LIMIT, peer).await.expect("peer hung");
        done.store(true, Ordering::Release);
        timeout(LIMIT, async {
            for w in writers {
                w.await.unwrap();
            }
        })
        .await
        .expect("a waiter slept through available credit");
        assert_eq!(window.available(), 0);
        assert_eq!(taken.load(Ordering::Relaxed), credited);
        assert_eq!(window.held(), 0);
    });
}

/// `abort()` while tasks on both workers wait: each wakes with `Aborted`.
#[test]
fn abort_wakes_every_waiting_task_on_every_worker() {
    multi().block_on(async {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let waiters: Vec<_> = (0..50)
            .map(|_| {
                let window = Arc::clone(&window);
                tokio::spawn(async move { window.reserve(100).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        window.abort();
        for w in waiters {
            let r = timeout(LIMIT, w).await.expect("a waiter missed the abort").unwrap();
            assert_eq!(r, Err(Aborted));
        }
        assert_eq!(window.reserve(1).await, Err(Aborted));
    });
}

/// A `StreamGrant` held across an `.await` in a spawned task (it is `Send`),
/// with the task aborted before it sends: the grant's drop gives the
/// credit back to both windows, as documented for a cancelled holder.
#[test]
fn a_stream_grant_in_an_aborted_task_gives_its_credit_back() {
    multi().block_on(async {
        let connection = Arc::new(OutputWindow::new(1000).unwrap());
        let stream = Arc::new(StreamOutput::new(Arc::clone(&connection), 600).unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn({
            let stream = Arc::clone(&stream);
            async move {
                let mut grant = stream.try_grant(500).unwrap();
                grant.sent(100).unwrap();
                tx.send(()).unwrap();
                std::future::pending::<()>().await; // the socket write stalls
                drop(grant);
            }
        });
        rx.await.unwrap();
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        assert_eq!((connection.available(), connection.held()), (900, 0));
        assert_eq!((stream.stream().available(), stream.stream().held()), (500, 0));
    });
}

/// A writer waits for credit with `StreamOutput::grant` inside a
/// `timeout`, because the peer may stall: it credits another stream, never
/// the connection. The outside review found that the docs' earlier pattern
/// (the stream's `reserve`, then the connection's) lost credit when such a
/// wait was cancelled: reserved bytes count as sent. `grant` takes nothing
/// while it waits, so the timeout leaves both windows as they were, and a
/// later wait gets the connection's credit when it comes.
#[test]
fn a_stream_wait_cancelled_by_a_timeout_loses_no_credit() {
    multi().block_on(async {
        let connection = Arc::new(OutputWindow::new(0).unwrap());
        let output = StreamOutput::new(Arc::clone(&connection), 10).unwrap();
        let other = StreamOutput::new(Arc::clone(&connection), 0).unwrap();
        let writer = async {
            let mut grant = output.grant(100).await?;
            let n = grant.len();
            grant.sent(n).unwrap();
            Ok::<u32, Aborted>(n)
        };
        let peer = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            // Credit for the other stream's window first (it has none), so
            // the connection's stays where the writer cannot use it.
            other.stream().increase(4).unwrap();
        };
        let (written, ()) = tokio::join!(timeout(Duration::from_millis(50), writer), peer);
        assert!(written.is_err(), "the writer timed out, nothing was sent");
        assert_eq!((output.stream().available(), output.stream().held()), (10, 0));
        assert_eq!((connection.available(), connection.held()), (0, 0));
        // The peer grants the connection 4: a new wait gets exactly them.
        let (granted, ()) = tokio::join!(timeout(LIMIT, output.grant(100)), async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            connection.increase(4).unwrap();
        });
        let grant = granted.expect("woken by the connection's credit").unwrap();
        assert_eq!(grant.len(), 4);
        drop(grant); // not sent: back to both
        assert_eq!((output.stream().available(), connection.available()), (10, 4));
    });
}
