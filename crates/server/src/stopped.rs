//! Waiting for the workers without blocking: [`Stopped`], the future
//! [`Running::stopped`](crate::Running::stopped) returns.
//!
//! Each worker thread holds an [`Exit`] guard; its drop (the thread's
//! end, a panic's unwinding included) counts the worker out, and the last
//! one out wakes the waiting task. The count and the task's waker sit
//! behind one lock, so the task either sees the count at zero or leaves a
//! waker the last worker then takes: no wake-up is lost, and there is no
//! lock-free protocol here to prove.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::handler::Handler;
use crate::server::{Running, ServerError};

/// Workers not yet stopped, and the task waiting for them.
#[derive(Debug, Default)]
pub(crate) struct Exits(Mutex<ExitsState>);

#[derive(Debug, Default)]
struct ExitsState {
    remaining: usize,
    waiting: Option<Waker>,
}

impl Exits {
    /// A guard for one more worker, to be moved into its thread.
    pub(crate) fn enter(self: &Arc<Self>) -> Exit {
        self.lock().remaining += 1;
        Exit(Arc::clone(self))
    }

    /// Whether every worker is out; if not, `waker` is woken when they are.
    fn all_out_or_wake(&self, waker: &Waker) -> bool {
        let mut state = self.lock();
        if state.remaining == 0 {
            return true;
        }
        state.waiting = Some(waker.clone());
        false
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ExitsState> {
        // A panic cannot leave the state half-updated (one field at a time).
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Counts one worker out when its thread ends (see the module docs).
pub(crate) struct Exit(Arc<Exits>);

impl Drop for Exit {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.0.lock();
            state.remaining -= 1;
            if state.remaining == 0 { state.waiting.take() } else { None }
        };
        // Woken outside the lock: the task's poll takes it.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A future that resolves when every worker has stopped, as
/// [`Running::join`] returns, without blocking the thread that awaits it.
/// Made by [`Running::stopped`]; it borrows the [`Running`], so dropping
/// it (a `select!` that took another branch) leaves the server as it was.
///
/// Its output is [`ServerError::WorkerPanicked`] when a worker panicked,
/// and [`ServerError::OnWorker`] when polled on one of the server's worker
/// threads before they all stopped (a `block_on` in a handler, which
/// would wait for its own worker).
#[must_use = "a future does nothing unless awaited"]
#[derive(Debug)]
pub struct Stopped<'a, H: Handler> {
    pub(crate) running: &'a mut Running<H>,
}

impl<H: Handler> Future for Stopped<'_, H> {
    type Output = Result<(), ServerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if !self.running.exits.all_out_or_wake(cx.waker()) {
            if crate::worker::waits_forever() {
                // Driven on a worker (a `block_on` in a handler): that
                // worker would wait for itself to stop.
                return Poll::Ready(Err(ServerError::OnWorker));
            }
            return Poll::Pending;
        }
        // Every worker has left its loop: joining waits only for the
        // threads' last instructions.
        Poll::Ready(self.get_mut().running.join_threads())
    }
}

/// Whether blocking the calling thread would stall tasks spawned on
/// `runtime`: it is a current-thread runtime and this thread runs it, in its
/// `block_on` (inside the runtime, with no task of its own: the body of
/// `#[tokio::main(flavor = "current_thread")]` or `#[tokio::test]`). A
/// `spawn_blocking` thread of the same runtime is in a task and may block;
/// so, as tokio's API cannot tell them apart, is a task the runtime runs,
/// where blocking does stall it: the docs of [`Running::join`] say so.
#[cfg(feature = "tokio")]
pub(crate) fn blocking_here_stalls(runtime: &tokio::runtime::Handle) -> bool {
    runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
        && tokio::task::try_id().is_none()
        && tokio::runtime::Handle::try_current().is_ok_and(|current| current.id() == runtime.id())
}
