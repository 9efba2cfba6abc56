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
//! task that computes the answer asks [`Wanted::poll_given_up`] while it
//! waits for the application (a tower service's future), and drops that
//! work once the answer can go nowhere, as hyper drops a service's future
//! with its connection.
//!
//! The flag and the waker sit under one lock that both sides take: a
//! registration either sees the flag or is there for the drop to wake. The
//! loom model below (cfg `falconet_server_loom`, run by `scripts/loom.sh`)
//! checks exactly that.
//!
//! One thing travels the other way, under the same lock: an HTTP/2
//! answer's trailer fields ([`Wanted::set_trailers`]), which the task sets
//! before it ends the output pipe and the worker takes
//! ([`Abandon::take_trailers`]) once it has read the pipe's end, so they
//! follow the last byte of the body (an HTTP/1 answer's go in the pipe,
//! in its last chunk).
//!
//! [`Response::defer`]: crate::Response::defer

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
    waker: Option<Waker>,
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
        let waker = {
            let mut state = self.0.lock();
            state.given_up = true;
            state.waker.take()
        };
        // Woken outside the lock: a waker may run the task at once.
        if let Some(waker) = waker {
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
    /// Ready once the worker gave the response up; otherwise `cx`'s waker
    /// is woken when it does.
    pub(crate) fn poll_given_up(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.lock();
        if state.given_up {
            return Poll::Ready(());
        }
        match &mut state.waker {
            Some(waker) => waker.clone_from(cx.waker()),
            None => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
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

    #[test]
    fn the_drop_wakes_the_last_registration_once() {
        let (abandon, wanted) = notice();
        let (first, last) = (
            std::sync::Arc::new(Count(AtomicUsize::new(0))),
            std::sync::Arc::new(Count(AtomicUsize::new(0))),
        );
        let waker = Waker::from(first.clone());
        assert!(wanted.poll_given_up(&mut Context::from_waker(&waker)).is_pending());
        let waker = Waker::from(last.clone());
        assert!(wanted.poll_given_up(&mut Context::from_waker(&waker)).is_pending());
        assert!(!wanted.is_given_up());
        drop(abandon);
        assert_eq!((first.0.load(Ordering::Relaxed), last.0.load(Ordering::Relaxed)), (0, 1));
        assert!(wanted.is_given_up());
        assert!(wanted.poll_given_up(&mut Context::from_waker(Waker::noop())).is_ready());
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
            let ready = wanted.poll_given_up(&mut Context::from_waker(&waker)).is_ready();
            worker.join().unwrap();
            assert!(ready || woken.0.load(Ordering::Acquire), "a lost wakeup");
            assert!(wanted.is_given_up());
        });
    }
}
