//! Many tasks waiting in `OutputWindow::reserve` on one window (every
//! stream's writer on the connection's window): each credit-giving change
//! wakes them all, none is lost, and no byte is granted twice.
#![cfg(not(falconet_flow_loom))]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

use falconet_flow::{Aborted, MAX_WINDOW, OutputWindow};

/// Runs `future` to its end on this thread, parking between polls.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

/// A current-thread tokio runtime (no I/O, no timers).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().build().unwrap()
}

/// Two tasks wait on an empty window; one update gives enough for both:
/// both are woken and both are served. (A single waker slot served only
/// the second: the first slept for good with 90 bytes free.)
#[test]
fn two_tasks_waiting_on_one_window_are_both_woken() {
    runtime().block_on(async {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let window = Arc::clone(&window);
                tokio::spawn(async move { window.reserve(10).await })
            })
            .collect();
        tokio::task::yield_now().await; // both wait
        assert!(tasks.iter().all(|task| !task.is_finished()));
        window.increase(100).unwrap();
        for task in tasks {
            assert_eq!(task.await.unwrap(), Ok(10));
        }
        assert_eq!(window.available(), 80);
    });
}

/// A change that gives credit, by name.
type Transition = (&'static str, fn(&OutputWindow));

/// Every waiter is woken by each kind of credit-giving change: an update,
/// a give-back, a SETTINGS delta that makes the window positive, an abort.
#[test]
fn every_transition_wakes_every_waiter() {
    const WAITERS: usize = 5;
    let transitions: [Transition; 4] = [
        ("increase", |w| w.increase(WAITERS as u32).unwrap()),
        ("give_back", |w| w.give_back(WAITERS as u32).unwrap()),
        ("apply_initial_window_delta", |w| w.apply_initial_window_delta(WAITERS as i32).unwrap()),
        ("abort", OutputWindow::abort),
    ];
    for (name, transition) in transitions {
        runtime().block_on(async {
            // An empty window with WAITERS bytes held, to give back.
            let window = Arc::new(OutputWindow::new(WAITERS as u32).unwrap());
            assert_eq!(window.try_hold(u32::MAX), Ok(WAITERS as u32));
            let tasks: Vec<_> = (0..WAITERS)
                .map(|_| {
                    let window = Arc::clone(&window);
                    tokio::spawn(async move { window.reserve(1).await })
                })
                .collect();
            tokio::task::yield_now().await;
            assert!(tasks.iter().all(|task| !task.is_finished()), "{name}");
            transition(&window);
            for task in tasks {
                let expected = if name == "abort" { Err(Aborted) } else { Ok(1) };
                assert_eq!(task.await.unwrap(), expected, "{name}");
            }
        });
    }
}

/// A waiter dropped while it waits (a timeout in `select!`) takes nothing
/// and keeps no other waiter from being served; the next update serves the
/// ones still waiting, and the window keeps the rest.
#[test]
fn a_dropped_waiter_takes_nothing_and_blocks_no_one() {
    runtime().block_on(async {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let dropped = tokio::spawn({
            let window = Arc::clone(&window);
            async move { window.reserve(10).await }
        });
        let kept = tokio::spawn({
            let window = Arc::clone(&window);
            async move { window.reserve(10).await }
        });
        tokio::task::yield_now().await;
        dropped.abort();
        assert!(dropped.await.unwrap_err().is_cancelled());
        window.increase(15).unwrap();
        assert_eq!(kept.await.unwrap(), Ok(10));
        assert_eq!(window.available(), 5);
    });
}

/// A waker that counts how many of its kind are alive and how often any
/// was woken.
struct Counted(Arc<(AtomicU32, AtomicU32)>);

impl Counted {
    fn waker(counts: &Arc<(AtomicU32, AtomicU32)>) -> Waker {
        counts.0.fetch_add(1, Ordering::Relaxed);
        Waker::from(Arc::new(Counted(Arc::clone(counts))))
    }
}

impl Wake for Counted {
    fn wake(self: Arc<Self>) {
        self.0.1.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Waits given up while the peer sends no credit (a timeout around
/// `reserve`, every time, from a task of its own) leave no waker behind:
/// the window keeps none of them alive and the next update wakes none.
/// They used to pile up, each new wait scanning them all: 100,000 timed-out
/// waits held 45 MiB and took seconds longer each round.
#[test]
fn waits_given_up_leave_no_waker_behind() {
    let window = OutputWindow::new(0).unwrap();
    let counts = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
    let staying_waker = Counted::waker(&counts);
    let mut staying = pin!(window.reserve(1));
    assert!(staying.as_mut().poll(&mut Context::from_waker(&staying_waker)).is_pending());
    for _ in 0..10_000 {
        let waker = Counted::waker(&counts); // another task's
        let mut given_up = pin!(window.reserve(1));
        assert!(given_up.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
    }
    assert_eq!(counts.0.load(Ordering::Relaxed), 1, "only the staying task's waker is alive");
    window.increase(1).unwrap();
    assert_eq!(counts.1.load(Ordering::Relaxed), 1, "only the staying task is woken");
    assert_eq!(staying.as_mut().poll(&mut Context::from_waker(&staying_waker)), Poll::Ready(Ok(1)));
}

/// Two reservations awaited by one task (each its own slot, the same
/// waker) are both served.
#[test]
fn two_reservations_in_one_task() {
    runtime().block_on(async {
        let window = Arc::new(OutputWindow::new(0).unwrap());
        let task = tokio::spawn({
            let window = Arc::clone(&window);
            async move { tokio::join!(window.reserve(3), window.reserve(3)) }
        });
        tokio::task::yield_now().await;
        window.increase(6).unwrap();
        assert_eq!(task.await.unwrap(), (Ok(3), Ok(3)));
    });
}

/// Real threads: four writers each need `NEED` bytes in reservations of at
/// most 7, while the main thread grants credit in small updates. Every
/// writer finishes, and exactly the credit given is taken.
#[test]
fn writers_on_threads_share_one_window() {
    const WRITERS: u32 = 4;
    const NEED: u32 = 20_000;
    let window = Arc::new(OutputWindow::new(0).unwrap());
    let taken = Arc::new(AtomicU32::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (window, taken) = (Arc::clone(&window), Arc::clone(&taken));
            thread::spawn(move || {
                let mut got = 0;
                while got < NEED {
                    let n = block_on(window.reserve((NEED - got).min(7))).unwrap();
                    assert!(n > 0 && n <= 7);
                    got += n;
                    taken.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut given = 0;
    while given < WRITERS * NEED {
        let n = (WRITERS * NEED - given).min(13);
        // Keep the window small so the writers wait often.
        while window.available() > 64 {
            thread::yield_now();
        }
        window.increase(n).unwrap();
        given += n;
    }
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(taken.load(Ordering::Relaxed), WRITERS * NEED);
    assert_eq!(window.available(), 0);
}

/// `reserve` at the ends of its range: 0 on an empty window answers at
/// once with 0 (it must not wait for credit it does not want), `u32::MAX`
/// waits and then takes all there is; on an aborted window both fail at
/// once, and a wait under way fails when the window is aborted.
#[test]
fn reserve_at_the_ends_of_its_range() {
    let window = OutputWindow::new(0).unwrap();
    let noop = &mut Context::from_waker(Waker::noop());
    assert_eq!(pin!(window.reserve(0)).poll(noop), Poll::Ready(Ok(0)));
    let mut all = pin!(window.reserve(u32::MAX));
    assert!(all.as_mut().poll(noop).is_pending());
    window.increase(MAX_WINDOW).unwrap();
    assert_eq!(all.as_mut().poll(noop), Poll::Ready(Ok(MAX_WINDOW)));
    assert_eq!(window.available(), 0);

    let mut waiting = pin!(window.reserve(1));
    assert!(waiting.as_mut().poll(noop).is_pending());
    window.abort();
    assert_eq!(waiting.as_mut().poll(noop), Poll::Ready(Err(Aborted)));
    assert_eq!(pin!(window.reserve(0)).poll(noop), Poll::Ready(Err(Aborted)));
    assert_eq!(pin!(window.reserve(u32::MAX)).poll(noop), Poll::Ready(Err(Aborted)));
}
