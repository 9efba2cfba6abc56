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
//!   it too).
//!
//! - an HTTP/2 request body read on an application thread released
//!   receive credit that asks for WINDOW_UPDATEs ([`Link::push_updates`]);
//! - a lent HTTP/1 body whose request expects `100-continue` is read for
//!   the first time ([`Link::want_continue`], below).
//!
//! # `Expect: 100-continue` on a lent body
//!
//! As hyper does, the `100 (Continue)` that asks the client for a lent
//! body goes out only once the application reads the body, so that a
//! request refused unread (a 404, a 401) does not cost its client the
//! upload. One word holds where it stands:
//!
//! ```text
//!   NONE  --lend, expected--> OWED    the client waits; the body is unread
//!   OWED  --first read------> WANTED  (the reader wakes the worker)
//!   WANTED --worker, no head of the response yet--> NONE, writes the 100
//!   OWED | WANTED --the response's head ends--> NONE:
//!       WANTED: the 100 goes in front of the head;
//!       OWED: no 100, and the head says `Connection: close` (the client,
//!       told nothing, may or may not send the body: the connection
//!       cannot be read past it)
//! ```
//!
//! The head's end and the worker's write each take the word by one
//! read-modify-write, so exactly one of them answers a `WANTED`. A
//! responder on another thread settles the word before its head goes
//! into its output pipe, and the worker reads that head from the pipe
//! (Acquire, after the responder's Release), so the responder's swap
//! precedes any later one of the worker's: a worker that won the word
//! has not seen a byte of that head, and its 100 goes first.
//!
//! Nothing else crosses: bytes travel in the pipes, whose own protocol
//! (`falconet-pipe`'s state word) orders them; the link carries only ids
//! and five small facts (a returned body's framing, "close after this
//! response" both ways, window increments to announce, each behind a lock
//! held for a few instructions or in an atomic flag; and where an owed
//! `100 (Continue)` stands, in one atomic word).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::task::{Wake, Waker};

use parking_lot::Mutex;

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

/// Nothing owed: no `Expect: 100-continue` on the lent body, or settled.
const CONTINUE_NONE: u8 = 0;
/// The client waits for `100 (Continue)`; the body has not been read.
const CONTINUE_OWED: u8 = 1;
/// The application reads the body: the 100 is to go out now.
const CONTINUE_WANTED: u8 = 2;

/// What the end of a response's head does about `Expect: 100-continue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Continue {
    /// Nothing owed.
    Nothing,
    /// The body was read: the 100 goes in front of the head.
    Send,
    /// The body was never read and the client never told to send it: no
    /// 100, and the connection closes after this response.
    Unsolicited,
}

/// The `100 (Continue)` interim response.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

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
    /// `Expect: 100-continue` on the lent body: `CONTINUE_*` (module docs).
    expect: AtomicU8,
}

impl Link {
    pub(crate) fn new(id: u64, notify: Arc<Notify>) -> Arc<Self> {
        Arc::new(Self {
            id,
            notify,
            close_after: AtomicBool::new(false),
            close_asked: AtomicBool::new(false),
            returned: Mutex::new(None),
            updates: Mutex::new(Vec::new()),
            expect: AtomicU8::new(CONTINUE_NONE),
        })
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

    /// A body is lent: whether its client waits for `100 (Continue)`.
    pub(crate) fn lend_expecting(&self, expects: bool) {
        // Relaxed: the body and any responder reach the application after
        // this, through whatever hands them over (a spawn, a channel).
        let word = if expects { CONTINUE_OWED } else { CONTINUE_NONE };
        self.expect.store(word, Ordering::Relaxed);
    }

    /// The lent body is being read: if its client waits for the 100, asks
    /// the worker for it (once; later reads cost one load).
    pub(crate) fn want_continue(self: &Arc<Self>) {
        if self.advance(CONTINUE_OWED, CONTINUE_WANTED) {
            self.wake_by_ref();
        }
    }

    /// Moves the word from `from` to `to`; whether this call did. One
    /// load first, so that the common case (nothing owed) writes nothing.
    fn advance(&self, from: u8, to: u8) -> bool {
        // Relaxed: the word's own modification order decides who answers
        // (module docs); the wake's queue lock and the output pipe order
        // the rest.
        self.expect.load(Ordering::Relaxed) == from
            && self.expect.compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }

    /// Whether a `100 (Continue)` is owed and not sent: the client waits
    /// for it, so it owes no body bytes meanwhile.
    pub(crate) fn continue_pending(&self) -> bool {
        self.expect.load(Ordering::Relaxed) != CONTINUE_NONE
    }

    /// The worker, with no byte of the response's head written: whether
    /// to write the 100 now (the application asked for the body).
    pub(crate) fn take_wanted_continue(&self) -> bool {
        self.advance(CONTINUE_WANTED, CONTINUE_NONE)
    }

    /// A response's head is ending: what it does about the 100 (see
    /// [`Continue`]). Settles the word.
    pub(crate) fn settle_continue(&self) -> Continue {
        if self.expect.load(Ordering::Relaxed) == CONTINUE_NONE {
            return Continue::Nothing;
        }
        // Relaxed: see the module docs (the output pipe orders a
        // responder's swap before the worker reads its head).
        match self.expect.swap(CONTINUE_NONE, Ordering::Relaxed) {
            CONTINUE_WANTED => Continue::Send,
            CONTINUE_OWED => Continue::Unsolicited,
            _ => Continue::Nothing,
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
        let (a, b) = (Link::new(7, notify.clone()), Link::new(3, notify.clone()));
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
