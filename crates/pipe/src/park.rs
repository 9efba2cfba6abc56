//! Blocking waits: run a pipe future on the current thread, parking it
//! between polls.
//!
//! Each thread builds its unpark waker once (a thread-local), so a blocking
//! read or flush that has to wait allocates nothing after the first time.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

#[cfg(not(falconet_pipe_loom))]
mod imp {
    use std::sync::Arc;
    use std::task::{Wake, Waker};
    use std::thread::{self, Thread};

    struct Unparker(Thread);

    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    thread_local! {
        static WAKER: Waker = Waker::from(Arc::new(Unparker(thread::current())));
    }

    pub(super) fn waker() -> Waker {
        // A wait inside a thread-local destructor builds a waker of its own.
        WAKER
            .try_with(Waker::clone)
            .unwrap_or_else(|_| Waker::from(Arc::new(Unparker(thread::current()))))
    }

    pub(super) fn park() {
        thread::park();
    }
}

#[cfg(falconet_pipe_loom)]
mod imp {
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use loom::thread::{self, Thread};

    struct Unparker(Thread);

    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    pub(super) fn waker() -> Waker {
        Waker::from(Arc::new(Unparker(thread::current())))
    }

    pub(super) fn park() {
        thread::park();
    }
}

/// Polls `future` to completion on this thread.
#[inline]
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    // Fast path: most blocking calls do not wait, and a no-op waker costs no
    // reference-count traffic. A pipe future that returns Pending has
    // registered it, so poll again below with the real waker before parking:
    // that poll re-registers and re-checks the state word.
    if let Poll::Ready(output) = future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        return output;
    }
    park_on(future)
}

#[cold]
fn park_on<F: Future>(mut future: core::pin::Pin<&mut F>) -> F::Output {
    let waker: Waker = imp::waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // A spurious unpark just polls again: the future re-checks.
        imp::park();
    }
}
