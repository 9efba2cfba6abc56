//! Whether the worker still wants a deferred response: a one-shot notice
//! from the worker to the task that computes the answer.
//!
//! ```text
//! WANTED --the worker drops the response's output--> GIVEN_UP
//! ```
//!
//! The worker holds [`Abandon`] beside the output pipe's reader of a
//! response deferred to another thread ([`Response::defer`]), and drops it
//! with that reader: when the response is all sent, when `response_timeout`
//! answered `503` for it, when its connection closed (the client left, a
//! timeout, the server's shutdown). That drop is the one transition. The
//! task that computes the answer awaits [`Wanted::given_up`] (a
//! [`Closed`] future) while it waits for the application (a tower service's future), and drops that
//! work once the answer can go nowhere, as hyper drops a service's future
//! with its connection.
//!
//! The flag and the wakers sit under one lock that both sides take: a
//! registration either sees the flag or is there for the drop to wake. The
//! loom model below (cfg `falconet_server_loom`, run by `scripts/loom.sh`)
//! checks exactly that. Each waiting future ([`Closed`]) keeps a slot of
//! its own, freed when it is dropped, so every waiter is woken (two tasks
//! may await one responder's close) and the slots are as many as the
//! futures alive at once. A proptest model (`model` below) checks random
//! sequences of futures made, polled, dropped and the give-up against a
//! sequential one: every poll's answer, every waker's wakes, the slots.
//!
//! One thing travels the other way, under the same lock: an HTTP/2
//! answer's trailer fields ([`Wanted::set_trailers`]), which the task sets
//! before it ends the output pipe and the worker takes
//! ([`Abandon::take_trailers`]) once it has read the pipe's end, so they
//! follow the last byte of the body (an HTTP/1 answer's go in the pipe,
//! in its last chunk).
//!
//! [`Response::defer`]: crate::Response::defer

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

#[cfg(falconet_server_loom)]
use loom::sync::{Arc, Mutex};
#[cfg(not(falconet_server_loom))]
use std::sync::Arc;

#[cfg(not(falconet_server_loom))]
type Mutex<T> = parking_lot::Mutex<T>;

#[derive(Default)]
struct State {
    given_up: bool,
    /// One slot per waiting [`Closed`] future; `None` once it is freed.
    wakers: Vec<Option<Waker>>,
    /// The answer's trailer fields (field lines), from the task.
    trailers: Option<Vec<u8>>,
}

#[derive(Default)]
struct Notice {
    state: Mutex<State>,
}

impl Notice {
    fn lock(&self) -> impl std::ops::DerefMut<Target = State> + '_ {
        #[cfg(falconet_server_loom)]
        return self.state.lock().unwrap();
        #[cfg(not(falconet_server_loom))]
        return self.state.lock();
    }
}

/// A new notice: the worker's side and the task's.
pub(crate) fn notice() -> (Abandon, Wanted) {
    let notice = Arc::new(Notice::default());
    (Abandon(Arc::clone(&notice)), Wanted(notice))
}

/// The worker's side: dropped, it gives the response up.
pub(crate) struct Abandon(Arc<Notice>);

impl Abandon {
    /// The trailer fields the task set, once (see the module docs).
    pub(crate) fn take_trailers(&self) -> Option<Vec<u8>> {
        self.0.lock().trailers.take()
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let wakers = {
            let mut state = self.0.lock();
            state.given_up = true;
            std::mem::take(&mut state.wakers)
        };
        // Woken outside the lock: a waker may run the task at once.
        for waker in wakers.into_iter().flatten() {
            waker.wake();
        }
    }
}

impl std::fmt::Debug for Abandon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Abandon")
    }
}

/// The task's side.
pub(crate) struct Wanted(Arc<Notice>);

impl Wanted {
    /// A future ready once the worker gave the response up.
    pub(crate) fn given_up(&self) -> Closed<'_> {
        Closed { wanted: self, slot: None }
    }

    /// Ready once the worker gave the response up; otherwise `cx`'s waker
    /// is kept in `slot` (taken on the first call) and woken when it does.
    fn poll_given_up(&self, slot: &mut Option<usize>, cx: &mut Context<'_>) -> Poll<()> {
        // A waker replaced is dropped after the lock (declared before its
        // guard): its drop may run a task's, and so a `Closed`'s, drop,
        // which takes the lock.
        let _replaced: Option<Waker>;
        let mut state = self.0.lock();
        if state.given_up {
            return Poll::Ready(());
        }
        let waker = cx.waker();
        match *slot {
            Some(at) => match &mut state.wakers[at] {
                Some(kept) if kept.will_wake(waker) => {}
                kept => _replaced = kept.replace(waker.clone()),
            },
            None => {
                let free = state.wakers.iter().position(Option::is_none);
                let at = free.unwrap_or(state.wakers.len());
                if at == state.wakers.len() {
                    state.wakers.push(None);
                }
                state.wakers[at] = Some(waker.clone());
                *slot = Some(at);
            }
        }
        Poll::Pending
    }

    /// Frees the slot of a future dropped while it waited.
    fn release(&self, slot: usize) {
        // After the give-up woke them all, the slots are gone. The waker
        // is dropped after the lock (see `poll_given_up`).
        let kept = self.0.lock().wakers.get_mut(slot).and_then(Option::take);
        drop(kept);
    }

    /// Whether the worker gave the response up.
    pub(crate) fn is_given_up(&self) -> bool {
        self.0.lock().given_up
    }

    /// Hands the answer's trailer fields to the worker: call before the
    /// output pipe ends (see the module docs).
    pub(crate) fn set_trailers(&self, trailers: Vec<u8>) {
        self.0.lock().trailers = Some(trailers);
    }
}

/// The future of [`Wanted::given_up`]: each keeps its own waker slot, so
/// every waiter is woken.
pub(crate) struct Closed<'a> {
    wanted: &'a Wanted,
    slot: Option<usize>,
}

impl Future for Closed<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.wanted.poll_given_up(&mut this.slot, cx)
    }
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            self.wanted.release(slot);
        }
    }
}

impl std::fmt::Debug for Wanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wanted").field("given_up", &self.is_given_up()).finish()
    }
}

#[cfg(all(test, not(falconet_server_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn count() -> (std::sync::Arc<Count>, Waker) {
        let count = std::sync::Arc::new(Count(AtomicUsize::new(0)));
        (count.clone(), Waker::from(count))
    }

    fn pending(closed: &mut Closed<'_>, waker: &Waker) -> bool {
        Pin::new(closed).poll(&mut Context::from_waker(waker)).is_pending()
    }

    /// Each future's last waker is woken once: two waiters both are, a
    /// future polled again with another waker wakes that one only.
    #[test]
    fn the_drop_wakes_every_waiter_once() {
        let (abandon, wanted) = notice();
        let ((first, first_waker), (second, second_waker), (moved, moved_waker)) =
            (count(), count(), count());
        let (mut a, mut b) = (wanted.given_up(), wanted.given_up());
        assert!(pending(&mut a, &moved_waker));
        assert!(pending(&mut a, &first_waker));
        assert!(pending(&mut b, &second_waker));
        assert!(!wanted.is_given_up());
        drop(abandon);
        let woken = |c: &Count| c.0.load(Ordering::Relaxed);
        assert_eq!((woken(&first), woken(&second), woken(&moved)), (1, 1, 0));
        assert!(!pending(&mut a, Waker::noop()) && !pending(&mut b, Waker::noop()));
        assert!(!pending(&mut wanted.given_up(), Waker::noop()));
    }

    /// A task whose only owner is its waker (async-book style executors),
    /// holding a waiting `closed()` future.
    struct Task {
        _future: std::sync::Mutex<Option<Closed<'static>>>,
    }

    impl Wake for Task {
        fn wake(self: std::sync::Arc<Self>) {}
    }

    /// Runs `f` on a thread; false if it has not finished in 3 s.
    fn finishes(f: impl FnOnce() + Send + 'static) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            f();
            let _ = tx.send(());
        });
        rx.recv_timeout(std::time::Duration::from_secs(3)).is_ok()
    }

    /// A waker dropped by `release` or by a poll that replaces it may be
    /// a task's last owner, whose future holds another `Closed`: its drop
    /// takes the lock again, so wakers are dropped after the lock (a
    /// review's deadlock, re-entering the lock on one thread).
    #[test]
    fn a_waker_dropped_by_release_or_a_poll_may_take_the_lock() {
        for repoll in [false, true] {
            let (abandon, wanted) = notice();
            let wanted: &'static Wanted = Box::leak(Box::new(wanted));
            let done = finishes(move || {
                let mut inner = wanted.given_up();
                assert!(pending(&mut inner, Waker::noop())); // a `now_or_never`
                let task =
                    std::sync::Arc::new(Task { _future: std::sync::Mutex::new(Some(inner)) });
                let task_waker = Waker::from(task);
                let mut outer = wanted.given_up();
                assert!(pending(&mut outer, &task_waker));
                drop(task_waker); // the slot's waker owns the task now
                if repoll {
                    assert!(pending(&mut outer, Waker::noop())); // polled elsewhere
                } else {
                    drop(outer);
                }
            });
            if !done {
                std::mem::forget(abandon); // its drop would wait for the lock
            }
            assert!(done, "a deadlock (repoll: {repoll})");
        }
    }

    /// A future dropped while it waits frees its slot for the next one,
    /// and is not woken: the slots stay as many as the futures alive.
    #[test]
    fn a_dropped_waiter_frees_its_slot() {
        let (abandon, wanted) = notice();
        let (gone, gone_waker) = count();
        for _ in 0..1000 {
            let mut closed = wanted.given_up();
            assert!(pending(&mut closed, &gone_waker));
        }
        assert_eq!(wanted.0.lock().wakers.len(), 1);
        let (kept, kept_waker) = count();
        let mut closed = wanted.given_up();
        assert!(pending(&mut closed, &kept_waker));
        drop(abandon);
        assert_eq!((gone.0.load(Ordering::Relaxed), kept.0.load(Ordering::Relaxed)), (0, 1));
        drop(closed); // after the drop took the slots: nothing to free
    }
}

/// The notice against a sequential model: random sequences of futures
/// made, polled (each with one of a few wakers), dropped, trailers set and
/// taken, and the worker's drop, checking after each step every poll's
/// answer, every waker's wakes and the slots' count.
#[cfg(all(test, not(falconet_server_loom)))]
mod model {
    use super::*;
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    /// Futures alive at once, at most.
    const FUTURES: usize = 4;
    /// Distinct wakers the polls use.
    const WAKERS: usize = 3;

    #[derive(Clone, Debug)]
    enum Op {
        Make(usize),
        Poll(usize, usize),
        Drop(usize),
        SetTrailers(u8),
        TakeTrailers,
        GiveUp,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..FUTURES).prop_map(Op::Make),
            4 => (0..FUTURES, 0..WAKERS).prop_map(|(i, w)| Op::Poll(i, w)),
            2 => (0..FUTURES).prop_map(Op::Drop),
            1 => any::<u8>().prop_map(Op::SetTrailers),
            1 => Just(Op::TakeTrailers),
            1 => Just(Op::GiveUp),
        ]
    }

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The model: which futures exist, the waker each last registered
    /// (while not given up), the wakes each waker is owed.
    #[derive(Default)]
    struct Model {
        alive: [bool; FUTURES],
        registered: [Option<usize>; FUTURES],
        wakes: [usize; WAKERS],
        given_up: bool,
        trailers: Option<Vec<u8>>,
        /// The most futures registered at once so far: the slots needed.
        peak: usize,
    }

    proptest! {
        #[test]
        fn the_notice_behaves_as_its_model(ops in proptest::collection::vec(op(), 1..60)) {
            let (abandon, wanted) = notice();
            let mut abandon = Some(abandon);
            let counts: Vec<_> =
                (0..WAKERS).map(|_| std::sync::Arc::new(Count(AtomicUsize::new(0)))).collect();
            let wakers: Vec<Waker> = counts.iter().map(|c| Waker::from(c.clone())).collect();
            let mut futures: Vec<Option<Closed<'_>>> = (0..FUTURES).map(|_| None).collect();
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Make(i) => {
                        if !model.alive[i] {
                            futures[i] = Some(wanted.given_up());
                            model.alive[i] = true;
                        }
                    }
                    Op::Poll(i, w) => {
                        if let Some(future) = futures[i].as_mut() {
                            let polled =
                                Pin::new(future).poll(&mut Context::from_waker(&wakers[w]));
                            prop_assert_eq!(polled.is_ready(), model.given_up, "poll {}", i);
                            if !model.given_up {
                                model.registered[i] = Some(w);
                                let now = model.registered.iter().flatten().count();
                                model.peak = model.peak.max(now);
                            }
                        }
                    }
                    Op::Drop(i) => {
                        futures[i] = None;
                        model.alive[i] = false;
                        model.registered[i] = None;
                    }
                    Op::SetTrailers(byte) => {
                        wanted.set_trailers(vec![byte]);
                        model.trailers = Some(vec![byte]);
                    }
                    Op::TakeTrailers => {
                        if let Some(abandon) = &abandon {
                            prop_assert_eq!(abandon.take_trailers(), model.trailers.take());
                        }
                    }
                    Op::GiveUp => {
                        if abandon.take().is_some() {
                            for w in model.registered.iter_mut().filter_map(Option::take) {
                                model.wakes[w] += 1;
                            }
                            model.given_up = true;
                        }
                    }
                }
                let woken: Vec<_> = counts.iter().map(|c| c.0.load(Ordering::Relaxed)).collect();
                prop_assert_eq!(&woken[..], &model.wakes[..]);
                // Each waker is held by `counts`, `wakers` and each slot
                // registered with it: a slot freed (a drop, the give-up)
                // lets its clone go.
                for (w, count) in counts.iter().enumerate() {
                    let held = model.registered.iter().filter(|&&r| r == Some(w)).count();
                    prop_assert_eq!(std::sync::Arc::strong_count(count), 2 + held, "waker {}", w);
                }
                prop_assert_eq!(wanted.is_given_up(), model.given_up);
                let slots = wanted.0.lock().wakers.len();
                prop_assert!(slots <= model.peak, "{} slots for at most {} waiters", slots, model.peak);
            }
        }
    }
}

#[cfg(all(test, falconet_server_loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::{AtomicBool, Ordering};
    use loom::thread;
    use std::task::Wake;

    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    /// Trailers set before the pipe's end (a release store here) are there
    /// for the worker that saw the end (an acquire load).
    #[test]
    fn trailers_before_the_end() {
        loom::model(|| {
            let (abandon, wanted) = notice();
            let ended = std::sync::Arc::new(AtomicBool::new(false));
            let end = ended.clone();
            let task = thread::spawn(move || {
                wanted.set_trailers(b"grpc-status: 0\r\n".to_vec());
                end.store(true, Ordering::Release);
            });
            if ended.load(Ordering::Acquire) {
                assert_eq!(abandon.take_trailers().as_deref(), Some(&b"grpc-status: 0\r\n"[..]));
            }
            task.join().unwrap();
        });
    }

    /// The task polls while the worker drops its side: the poll sees the
    /// flag, or its registration is woken. Never both missed.
    #[test]
    fn a_poll_against_the_drop() {
        loom::model(|| {
            let (abandon, wanted) = notice();
            let worker = thread::spawn(move || drop(abandon));
            let woken = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(woken.clone());
            let mut closed = wanted.given_up();
            let ready = Pin::new(&mut closed).poll(&mut Context::from_waker(&waker)).is_ready();
            worker.join().unwrap();
            assert!(ready || woken.0.load(Ordering::Acquire), "a lost wakeup");
            assert!(wanted.is_given_up());
        });
    }

    /// Two waiters, on two threads, while the worker drops its side: each
    /// sees the flag or is woken (one slot each; the second registration
    /// does not take the first one's place).
    #[test]
    fn two_waiters_against_the_drop() {
        loom::model(|| {
            let (abandon, wanted) = notice();
            let wanted = Arc::new(wanted);
            let worker = thread::spawn(move || drop(abandon));
            let poll = |wanted: &Wanted| {
                let woken = std::sync::Arc::new(Flag(AtomicBool::new(false)));
                let waker = Waker::from(woken.clone());
                // The slot stays taken: the waiter waits on.
                let mut slot = None;
                (wanted.poll_given_up(&mut slot, &mut Context::from_waker(&waker)), woken)
            };
            let other = Arc::clone(&wanted);
            let waiter = thread::spawn(move || poll(&other));
            let (ready, woken) = poll(&wanted);
            let (other_ready, other_woken) = waiter.join().unwrap();
            worker.join().unwrap();
            assert!(ready.is_ready() || woken.0.load(Ordering::Acquire), "a lost wakeup");
            assert!(other_ready.is_ready() || other_woken.0.load(Ordering::Acquire), "lost");
        });
    }

    /// A waiter that leaves (polls, then drops: `release`) and a new one
    /// that may take its slot, on one thread; a second waiter on another;
    /// the worker drops its side. Every waiter still alive is woken or saw
    /// the flag (a review's model).
    #[test]
    fn a_leaver_a_newcomer_and_a_waiter_against_the_drop() {
        loom::model(|| {
            let (abandon, wanted) = notice();
            let wanted = Arc::new(wanted);
            let worker = thread::spawn(move || drop(abandon));
            let other = Arc::clone(&wanted);
            let leaver = thread::spawn(move || {
                let mut gone = other.given_up();
                let _ = Pin::new(&mut gone).poll(&mut Context::from_waker(Waker::noop()));
                drop(gone);
                let woken = std::sync::Arc::new(Flag(AtomicBool::new(false)));
                let waker = Waker::from(woken.clone());
                let mut slot = None;
                let ready = other.poll_given_up(&mut slot, &mut Context::from_waker(&waker));
                (ready.is_ready(), woken)
            });
            let woken = std::sync::Arc::new(Flag(AtomicBool::new(false)));
            let waker = Waker::from(woken.clone());
            let mut slot = None;
            let ready =
                wanted.poll_given_up(&mut slot, &mut Context::from_waker(&waker)).is_ready();
            let (new_ready, new_woken) = leaver.join().unwrap();
            worker.join().unwrap();
            assert!(ready || woken.0.load(Ordering::Acquire), "waiter: a lost wakeup");
            assert!(new_ready || new_woken.0.load(Ordering::Acquire), "newcomer: a lost wakeup");
        });
    }
}
