//! Blocking waits: run a pipe future on the current thread, parking it
//! between polls.
//!
//! Each thread builds its unpark waker once (a thread-local), so a blocking
//! read or flush that has to wait allocates nothing after the first time. A
//! waiting thread spins briefly before it parks: between two busy threads
//! the wake usually arrives within that window, and neither side makes a
//! system call.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

#[cfg(not(falconet_pipe_loom))]
mod imp {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Wake, Waker};
    use std::thread::{self, Thread};
    use std::time::{Duration, Instant};

    /// How long a waiting thread watches for a wake before it parks. A
    /// wake between two busy threads arrives within microseconds; caught
    /// while spinning, it costs neither the futex wait here nor the futex
    /// wake there (std's `unpark` of a thread that is not parked is one
    /// atomic swap). Measured on the build machine (`pipe_interleaved`):
    /// about 2 us of spinning left 4 KiB transfers at 0.75 GB/s, parking
    /// per write; 8 us made 64 KiB writes park; 30 us gave 15-17 GB/s at
    /// 4 KiB and 64 KiB. A time budget, not a count: `pause` costs 10 to
    /// 140 cycles depending on the CPU.
    /// (Under Miri, whose clock is virtual, one round of checks.)
    const SPIN_FOR: Duration = if cfg!(miri) { Duration::ZERO } else { Duration::from_micros(30) };
    /// Spins between two clock reads.
    const SPINS_PER_CHECK: u32 = 16;
    /// How long a waiting thread spins before it also yields its core
    /// between checks. When the scheduler has put both ends on one CPU
    /// (wake-affine placement after futex wakes does), a pure spin only
    /// delays the thread it waits for, by its whole budget, on every wait;
    /// a yield lets that thread run. With a CPU to itself, a yield returns
    /// at once.
    const YIELD_AFTER: Duration = Duration::from_micros(2);

    pub(super) struct Unparker {
        thread: Thread,
        /// Set by a wake, cleared by the waiting thread.
        woken: AtomicBool,
    }

    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            // Release: what the waker did before waking is visible to the
            // spinning thread that sees the flag.
            self.woken.store(true, Ordering::Release);
            self.thread.unpark();
        }
    }

    fn new_unparker() -> Arc<Unparker> {
        Arc::new(Unparker { thread: thread::current(), woken: AtomicBool::new(false) })
    }

    thread_local! {
        static UNPARKER: Arc<Unparker> = new_unparker();
    }

    /// This thread's waker and its flag (built once per thread; a wait
    /// inside a thread-local destructor builds its own).
    pub(super) fn waker() -> (Waker, Arc<Unparker>) {
        let unparker = UNPARKER.try_with(Arc::clone).unwrap_or_else(|_| new_unparker());
        (Waker::from(unparker.clone()), unparker)
    }

    pub(super) type Parker = Arc<Unparker>;

    /// Waits for a wake: spins briefly, then parks.
    pub(super) fn park(unparker: &Parker) {
        let start = Instant::now();
        loop {
            for _ in 0..SPINS_PER_CHECK {
                // Acquire pairs with the waker's Release; load first so the
                // spin does not write the line the waker is about to write.
                if unparker.woken.load(Ordering::Relaxed)
                    && unparker.woken.swap(false, Ordering::Acquire)
                {
                    return;
                }
                std::hint::spin_loop();
            }
            let spun = start.elapsed();
            if spun >= SPIN_FOR {
                break;
            }
            if spun >= YIELD_AFTER {
                thread::yield_now();
            }
        }
        // A wake after the last check leaves an unpark token: no lost wake.
        thread::park();
        unparker.woken.store(false, Ordering::Relaxed);
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

    pub(super) type Parker = ();

    pub(super) fn waker() -> (Waker, Parker) {
        (Waker::from(Arc::new(Unparker(thread::current()))), ())
    }

    pub(super) fn park(_: &Parker) {
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
    // that poll re-registers and re-checks the pipe's words.
    if let Poll::Ready(output) = future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        return output;
    }
    park_on(future)
}

#[cold]
fn park_on<F: Future>(mut future: core::pin::Pin<&mut F>) -> F::Output {
    let (waker, parker) = imp::waker();
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // A spurious unpark just polls again: the future re-checks.
        imp::park(&parker);
    }
}
