//! Waiting for the workers without blocking: [`Stopped`], the future
//! [`Running::stopped`](crate::Running::stopped) returns.
//!
//! Each worker thread holds an [`Exit`] guard; its drop (the thread's
//! end, a panic's unwinding included) counts the worker out. The last one
//! out wakes the waiting task. The protocol is a counter and one waker
//! slot under a lock:
//!
//! ```text
//!   worker (each, once)               waiting task (each poll)
//!   left = remaining.fetch_sub(1)     lock; slot = its waker; unlock
//!   if left == 1:                     if remaining == 0: Ready
//!     lock; take slot; unlock; wake
//! ```
//!
//! The task stores its waker before it reads the counter, and the last
//! worker takes the waker after it counts out, both under the lock: a task
//! that read a count above zero left its waker where the last worker finds
//! it, so no wake-up is lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::handler::Handler;
use crate::server::{Running, ServerError};

/// Workers not yet stopped, and the task waiting for them.
#[derive(Debug, Default)]
pub(crate) struct Exits {
    remaining: AtomicUsize,
    waiting: Mutex<Option<Waker>>,
}

impl Exits {
    /// A guard for one more worker, to be moved into its thread.
    pub(crate) fn enter(self: &Arc<Self>) -> Exit {
        // Relaxed: the count is published to the task by the workers'
        // AcqRel decrements (and the thread spawn happens before those).
        self.remaining.fetch_add(1, Ordering::Relaxed);
        Exit(Arc::clone(self))
    }

    fn all_out(&self) -> bool {
        // Acquire pairs with the workers' AcqRel decrements: what a worker
        // did before it stopped happens before the task sees it out.
        self.remaining.load(Ordering::Acquire) == 0
    }
}

/// Counts one worker out when its thread ends (see the module docs).
pub(crate) struct Exit(Arc<Exits>);

impl Drop for Exit {
    fn drop(&mut self) {
        if self.0.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let waker = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

/// A future that resolves when every worker has stopped, as
/// [`Running::join`] returns, without blocking the thread that awaits it.
/// Made by [`Running::stopped`]; it borrows the [`Running`], so dropping
/// it (a `select!` that took another branch) leaves the server as it was.
///
/// Its output is [`ServerError::WorkerPanicked`] when a worker panicked.
#[must_use = "a future does nothing unless awaited"]
#[derive(Debug)]
pub struct Stopped<'a, H: Handler> {
    pub(crate) running: &'a mut Running<H>,
}

impl<H: Handler> Future for Stopped<'_, H> {
    type Output = Result<(), ServerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let exits = Arc::clone(&self.running.exits);
        if !exits.all_out() {
            let mut waiting = exits.waiting.lock().unwrap_or_else(|e| e.into_inner());
            *waiting = Some(cx.waker().clone());
            drop(waiting);
            if !exits.all_out() {
                return Poll::Pending;
            }
        }
        // Every worker has left its loop: joining waits only for the
        // threads' last instructions.
        Poll::Ready(self.get_mut().running.join_threads())
    }
}
