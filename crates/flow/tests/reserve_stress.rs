//! Real threads race `reserve` futures that are dropped while waiting,
//! re-polled with a different waker, and moved to another thread for a
//! poll, against small updates: a waiter asleep 3 s while the window has
//! credit is a lost wake, and every byte is granted once. (From a review
//! of the waiter slots; it catches keys that ignore their round.)
#![cfg(not(falconet_flow_loom))]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use falconet_flow::OutputWindow;

struct Unpark {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// xorshift
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn cancelled_repolled_and_moved_waits_never_lose_a_wake() {
    const CONSUMERS: usize = 4;
    const EACH: u64 = 20_000;
    let window: &'static OutputWindow = Box::leak(Box::new(OutputWindow::new(0).unwrap()));
    let granted = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for c in 0..CONSUMERS {
        let granted = granted.clone();
        handles.push(thread::spawn(move || {
            let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (c as u64 + 1);
            let me = thread::current();
            // Two distinct wakers for this thread: a re-poll with the other
            // one must replace the stored waker (will_wake is false).
            let wakers: Vec<(Arc<Unpark>, Waker)> = (0..2)
                .map(|_| {
                    let u = Arc::new(Unpark { thread: me.clone(), woken: AtomicBool::new(false) });
                    (u.clone(), Waker::from(u))
                })
                .collect();
            let mut got = 0u64;
            let mut which = 0;
            while got < EACH {
                let mut fut = Box::pin(window.reserve((next(&mut seed) % 7 + 1) as u32));
                loop {
                    which = (which + (next(&mut seed) % 2) as usize) % 2;
                    let (flag, waker) = &wakers[which];
                    flag.woken.store(false, Ordering::SeqCst);
                    match fut.as_mut().poll(&mut Context::from_waker(waker)) {
                        Poll::Ready(r) => {
                            got += u64::from(r.unwrap());
                            break;
                        }
                        Poll::Pending => {}
                    }
                    match next(&mut seed) % 8 {
                        // Give up (a timeout): drop the waiting future.
                        0 => break,
                        // Move it to another thread and poll it there once
                        // with that thread's (noop-free) waker, then back.
                        1 => {
                            let moved = thread::spawn(move || {
                                let t = thread::current();
                                let u =
                                    Arc::new(Unpark { thread: t, woken: AtomicBool::new(false) });
                                let w = Waker::from(u.clone());
                                let r = fut.as_mut().poll(&mut Context::from_waker(&w));
                                (fut, r)
                            });
                            let (back, r) = moved.join().unwrap();
                            fut = back;
                            if let Poll::Ready(r) = r {
                                got += u64::from(r.unwrap());
                                break;
                            }
                            // Its stored waker is the other thread's: poll
                            // again here before sleeping.
                            continue;
                        }
                        _ => {}
                    }
                    let start = Instant::now();
                    while !flag.woken.load(Ordering::SeqCst) {
                        thread::park_timeout(Duration::from_millis(200));
                        if start.elapsed() > Duration::from_secs(3) {
                            let s = window.state();
                            assert!(s.window <= 0, "lost wake: consumer {c} asleep 3 s with {s:?}");
                        }
                    }
                }
            }
            granted.fetch_add(got, Ordering::SeqCst);
            got
        }));
    }
    // The producer: small increases, each from an empty window when the
    // consumers keep up, so every one is a transition.
    let total = CONSUMERS as u64 * EACH;
    let mut given = 0u64;
    let mut seed = 42u64;
    let deadline = Instant::now() + Duration::from_secs(120);
    while handles.iter().any(|h| !h.is_finished()) {
        assert!(Instant::now() < deadline, "stuck: given {given}, state {:?}", window.state());
        let s = window.state();
        if s.window <= 0 && given < total + 1000 {
            let n = (next(&mut seed) % 5 + 1) as u32;
            window.increase(n).unwrap();
            given += u64::from(n);
        } else {
            thread::yield_now();
        }
    }
    let mut sum = 0;
    for h in handles {
        sum += h.join().unwrap();
    }
    assert!(sum >= total);
    assert_eq!(sum + window.state().window.max(0) as u64, given, "no byte granted twice or lost");
}
