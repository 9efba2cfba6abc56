//! How application threads reach a connection's worker.
//!
//! A connection whose handler answers later ([`Responder`](crate::Responder))
//! or reads its request body on another thread
//! ([`RequestBody`](crate::RequestBody)) gets a [`Link`], made the first
//! time it needs one and kept for the connection's life. The link is the
//! connection's `Waker`: waking it puts the connection's id on its worker's
//! [`Notify`] queue and wakes the worker's poll (a `mio::Waker`), which
//! then drives the connection as if its socket were ready. Application
//! threads wake it when:
//!
//! - a deferred response's output pipe gets bytes or ends (the worker
//!   polls it with this waker: [`falconet_pipe::Readable`]);
//! - a lent request body frees room in the input pipe (the worker paused
//!   its socket reads, polling the pipe's flush with this waker);
//! - a lent request body is handed back ([`Link::hand_back`]);
//! - a response body the worker polls (the tower path) is ready to be
//!   polled again (the connection's own input, read by that body, wakes
//!   it too);
//! - an HTTP/2 request body read on an application thread released
//!   receive credit that asks for WINDOW_UPDATEs ([`Link::push_updates`]);
//! - a lent HTTP/1 body whose request expects `100-continue` is read for
//!   the first time ([`Link::want_continue`]).
//!
//! Where an owed `100 (Continue)` stands is one atomic word, with its own
//! protocol and loom models: [`crate::expect`].
//!
//! Nothing else crosses: bytes travel in the pipes, whose own protocol
//! (`falconet-pipe`'s state word) orders them; the link carries only ids
//! and five small facts (a returned body's framing, "close after this
//! response" both ways, window increments to announce, each behind a lock
//! held for a few instructions or in an atomic flag; and where an owed
//! `100 (Continue)` stands, in one atomic word).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Wake, Waker};

use falconet_pool::Pool;
use parking_lot::Mutex;

use crate::expect::ContinueWord;
use crate::http1::Framing;

/// One worker's queue of connections that application threads woke.
#[derive(Debug, Default)]
pub(crate) struct Notify {
    woken: Mutex<Vec<u64>>,
    /// Wakes the worker's poll; `None` for a session driven by hand.
    poll: Option<mio::Waker>,
}

impl Notify {
    /// A queue that wakes `poll` (a worker's), or nothing (`None`).
    pub(crate) fn new(poll: Option<mio::Waker>) -> Self {
        Self { woken: Mutex::new(Vec::new()), poll }
    }

    /// Queues `id` and wakes the worker if the queue was empty (a worker
    /// that drains a non-empty queue sees every id in it).
    pub(crate) fn push(&self, id: u64) {
        let first = {
            let mut woken = self.woken.lock();
            woken.push(id);
            woken.len() == 1
        };
        if first && let Some(poll) = &self.poll {
            // A failed wake leaves the id queued: the worker's next poll
            // (at most a timer tick away) drains it.
            if let Err(error) = poll.wake() {
                tracing::warn!(%error, "cannot wake a worker");
            }
        }
    }

    /// Wakes the worker's poll without queuing anything (shutdown).
    pub(crate) fn wake_poll(&self) -> std::io::Result<()> {
        self.poll.as_ref().map_or(Ok(()), mio::Waker::wake)
    }

    /// Moves the queued ids into `into` (emptied first), each once.
    pub(crate) fn take(&self, into: &mut Vec<u64>) {
        into.clear();
        std::mem::swap(&mut *self.woken.lock(), into);
        into.sort_unstable();
        into.dedup();
    }
}

/// What a lent request body reports when it is handed back.
#[derive(Debug)]
pub(crate) struct Returned {
    /// The framing where the application stopped: done, or the rest to
    /// drain; `None` after a malformed or cut-short body (the connection
    /// closes).
    pub(crate) framing: Option<Framing>,
    /// Body bytes received so far (against `max_body`).
    pub(crate) received: u64,
    /// Why a failed body failed, when the client is to blame: 400 for a
    /// malformed chunked body, 413 past `max_body`. The answer the
    /// connection gives if the application's response fails before its
    /// head (instead of 500). `None` for a body cut short.
    pub(crate) status: Option<crate::Status>,
}

/// A connection's link to the application threads.
#[derive(Debug)]
pub(crate) struct Link {
    id: u64,
    notify: Arc<Notify>,
    /// The deferred response in flight asked to close the connection.
    close_after: AtomicBool,
    /// The worker asks the deferred response in flight to close the
    /// connection (the server is shutting down and nothing waits behind
    /// it), so that its head says `Connection: close`.
    close_asked: AtomicBool,
    /// The lent body, handed back.
    returned: Mutex<Option<Returned>>,
    /// WINDOW_UPDATEs that HTTP/2 request bodies read on application
    /// threads asked for: (stream, increments), for the worker to send.
    updates: Mutex<Vec<(u32, falconet_flow::Updates)>>,
    /// `Expect: 100-continue` on the lent body.
    pub(crate) expect: ContinueWord,
    /// The server's pool, whose blocks application threads return.
    pool: Pool,
}

impl Link {
    pub(crate) fn new(id: u64, notify: Arc<Notify>, pool: Pool) -> Arc<Self> {
        Arc::new(Self {
            id,
            notify,
            close_after: AtomicBool::new(false),
            close_asked: AtomicBool::new(false),
            returned: Mutex::new(None),
            updates: Mutex::new(Vec::new()),
            expect: ContinueWord::new(),
            pool,
        })
    }

    /// Called when an application thread is done with a body (its end
    /// read, or the body dropped) or a response: the pool blocks it
    /// returned meanwhile (a body's consumed input, on whatever thread read
    /// it) sit in that thread's cache,
    /// where no worker can lease them, for as long as the thread stays
    /// away from the pool, up to a slab's worth a thread. A server whose
    /// `max_pool_bytes` is small had all its free blocks in an idle tokio
    /// thread's cache after one upload, and reset every connection after.
    /// A worker keeps its own: it leases them again at once.
    pub(crate) fn give_back_blocks(&self) {
        if !crate::worker::on_worker() {
            self.pool.flush_thread_cache();
        }
    }

    /// The connection's waker.
    pub(crate) fn waker(self: &Arc<Self>) -> Waker {
        Waker::from(Arc::clone(self))
    }

    /// The deferred response in flight will close the connection.
    pub(crate) fn set_close_after(&self) {
        // Relaxed: the responder closes its output pipe after this store,
        // and the pipe's Release/Acquire orders it before the worker sees
        // the response end.
        self.close_after.store(true, Ordering::Relaxed);
    }

    /// Asks the deferred response in flight (and any after it) to close
    /// the connection: the server is shutting down.
    pub(crate) fn ask_close(&self) {
        // Relaxed: a hint read before the head is written; a responder
        // that misses it writes a keep-alive head and the worker closes
        // the connection after it all the same.
        self.close_asked.store(true, Ordering::Relaxed);
    }

    /// Whether the worker asked the response to close the connection.
    pub(crate) fn close_asked(&self) -> bool {
        self.close_asked.load(Ordering::Relaxed)
    }

    /// Whether the response that just ended asked to close (and forgets it).
    pub(crate) fn take_close_after(&self) -> bool {
        self.close_after.swap(false, Ordering::Relaxed)
    }

    /// A lent body comes back to the parser; wakes the worker.
    pub(crate) fn hand_back(self: &Arc<Self>, returned: Returned) {
        *self.returned.lock() = Some(returned);
        self.wake_by_ref();
    }

    /// An HTTP/2 body's read released credit that asks for WINDOW_UPDATEs:
    /// queued for the worker, which is woken to send them.
    pub(crate) fn push_updates(self: &Arc<Self>, stream: u32, updates: falconet_flow::Updates) {
        if updates.stream.is_none() && updates.connection.is_none() {
            return;
        }
        self.updates.lock().push((stream, updates));
        self.wake_by_ref();
    }

    /// Moves the queued updates into `into` (emptied first).
    pub(crate) fn take_updates(&self, into: &mut Vec<(u32, falconet_flow::Updates)>) {
        into.clear();
        std::mem::swap(&mut *self.updates.lock(), into);
    }

    /// The lent body is being read: if its client waits for the 100, asks
    /// the worker for it (once; later reads cost one load).
    pub(crate) fn want_continue(self: &Arc<Self>) {
        if self.expect.want() {
            self.wake_by_ref();
        }
    }

    /// The lent body, if it came back.
    pub(crate) fn take_returned(&self) -> Option<Returned> {
        self.returned.lock().take()
    }
}

impl Wake for Link {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.notify.push(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn woken_ids_are_drained_once_each() {
        let notify = Arc::new(Notify::new(None));
        let (a, b) =
            (Link::new(7, notify.clone(), Pool::new()), Link::new(3, notify.clone(), Pool::new()));
        a.waker().wake_by_ref();
        b.waker().wake();
        a.waker().wake();
        let mut ids = vec![99];
        notify.take(&mut ids);
        assert_eq!(ids, [3, 7]);
        notify.take(&mut ids);
        assert!(ids.is_empty());
        a.set_close_after();
        assert!(a.take_close_after());
        assert!(!a.take_close_after());
        assert!(!a.close_asked());
        a.ask_close();
        assert!(a.close_asked() && !b.close_asked());
    }
}
