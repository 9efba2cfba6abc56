//! One event loop: accept, readiness, the timer, and shutdown.
//!
//! Each worker owns a `mio::Poll` and the connections it accepted; a
//! connection's registry id is its poll token, so an event is one registry
//! lookup. Worker 0 also runs the timer: every tick it sweeps the registry
//! (closing idle connections and answering late ones with `408`) and lets
//! the pool give back memory.
//!
//! Shutdown: when the handle's flag is raised (and the waker fires), every
//! worker drops its listener and its context starts *draining*: each
//! response then closes its connection unless more requests are already
//! buffered behind it, and the sweep closes every idle connection,
//! including ones that never sent a byte. Workers exit once the registry
//! is empty, or at the deadline, when the rest is closed.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use falconet_registry::ConnectionId;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use parking_lot::Mutex;

use crate::conn::{Conn, Connection, Readiness, Verdict};
use crate::handler::Handler;
use crate::link::Notify;
use crate::server::Shared;
use crate::session::{Context, Session};

pub(crate) const LISTENER: Token = Token(0);
pub(crate) const WAKER: Token = Token(1);

/// How often the pool is asked to give memory back.
const MAINTAIN_EVERY: Duration = Duration::from_secs(5);
/// How long accepting pauses after running out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Out of file descriptors, system-wide and for this process (Linux errno).
const ENFILE: i32 = 23;
const EMFILE: i32 = 24;
/// The answer to a connection past `max_connections`.
const REFUSAL: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nServer: falconet\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

pub(crate) struct Worker<H: Handler> {
    pub(crate) index: usize,
    pub(crate) poll: Poll,
    pub(crate) listener: Option<TcpListener>,
    pub(crate) shared: Arc<Shared<H>>,
    pub(crate) cx: Context,
    /// The connections application threads woke (their `Link`s push here).
    pub(crate) notify: Arc<Notify>,
    /// Every worker's (this one's too), to wake them when a drain ends.
    pub(crate) peers: Arc<[Arc<Notify>]>,
    /// Scratch for the woken ids.
    pub(crate) woken: Vec<u64>,
    /// Scratch for the connections the timer drained and must drive.
    pub(crate) drive: Vec<ConnectionId>,
    /// The connections whose turn ended with input still to read
    /// ([`Verdict::Yield`]): driven again after the next poll's events,
    /// which then does not wait.
    pub(crate) again: Vec<ConnectionId>,
    /// Scratch for `again` while it is driven.
    pub(crate) again_now: Vec<ConnectionId>,
}

thread_local! {
    /// Whether this thread is a worker's event loop (set for good by
    /// [`Worker::run`]).
    static ON_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// Whether the worker is polling a future itself (a tower service's or
    /// its body's, [`polling`]): a `Pending` there is a registered wake,
    /// not a wait.
    static POLLING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `poll`, a poll of a future the worker drives itself (a tower
/// service's first poll, a response body's frames), with [`waits_forever`]
/// false inside it; it catches a panic, which the caller turns into an
/// answer.
#[cfg_attr(not(feature = "tower"), allow(dead_code))]
pub(crate) fn polling<T>(poll: impl FnOnce() -> T) -> std::thread::Result<T> {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            POLLING.with(|polling| polling.set(self.0));
        }
    }
    let _restore = Restore(POLLING.with(|polling| polling.replace(true)));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(poll))
}

/// Whether a wait on this thread for a connection's progress would never
/// end: it is a worker's (a `block_on`, or a blocking call, inside a
/// handler method), and not one of the worker's own polls ([`polling`]),
/// whose `Pending` is a wake registered, not a wait.
pub(crate) fn waits_forever() -> bool {
    on_worker() && !POLLING.with(std::cell::Cell::get)
}

/// Whether this thread runs a worker's event loop, where waiting for a
/// connection's input never ends: the loop that would read it is the one
/// waiting ([`RequestBody`](crate::RequestBody)'s blocking reads and
/// [`Responder::write_blocking`](crate::Responder::write_blocking) check it).
pub(crate) fn on_worker() -> bool {
    ON_WORKER.with(std::cell::Cell::get)
}

/// When the event loop must wake with no event: at the next tick, or at
/// the shutdown's deadline if that comes first (waiting for the tick
/// overran the deadline by up to a tick: 200 ms with the default
/// timeouts, 500 ms at most).
fn wake_at(next_tick: Instant, deadline: Option<Instant>) -> Instant {
    deadline.map_or(next_tick, |deadline| deadline.min(next_tick))
}

impl<H: Handler> Worker<H> {
    pub(crate) fn run(mut self) {
        ON_WORKER.with(|on| on.set(true));
        let mut events = Events::with_capacity(1024);
        let tick = self.shared.options.tick();
        let mut next_tick = Instant::now() + tick;
        let mut next_maintain = Instant::now() + MAINTAIN_EVERY;
        let mut accept_paused_until: Option<Instant> = None;
        let mut deadline: Option<Instant> = None;
        loop {
            let timeout = if self.again.is_empty() {
                wake_at(next_tick, deadline).saturating_duration_since(Instant::now())
            } else {
                // Connections wait for another turn: only look for events.
                Duration::ZERO
            };
            if let Err(error) = self.poll.poll(&mut events, Some(timeout))
                && error.kind() != io::ErrorKind::Interrupted
            {
                tracing::error!(%error, worker = self.index, "poll failed; the worker stops");
                return;
            }
            let now = self.shared.now_ms();
            for event in &events {
                match event.token() {
                    LISTENER => {
                        if accept_paused_until.is_none() && !self.accept(now) {
                            accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                        }
                    }
                    WAKER => self.wake_woken(now),
                    token => {
                        let readiness = Readiness {
                            readable: event.is_readable(),
                            writable: event.is_writable(),
                            read_closed: event.is_read_closed() || event.is_error(),
                        };
                        self.ready(token, readiness, now);
                    }
                }
            }
            self.drive_again(now);
            if self.cx.requests > 0 {
                // Relaxed: a counter, read only for display (`Handle::stats`).
                self.shared.requests[self.index].fetch_add(self.cx.requests, Ordering::Relaxed);
                self.cx.requests = 0;
            }
            let instant = Instant::now();
            if instant >= next_tick {
                next_tick = instant + tick;
                self.cx.tick();
                if accept_paused_until.is_some_and(|until| instant >= until) {
                    accept_paused_until = None;
                    if !self.accept(now) {
                        accept_paused_until = Some(instant + ACCEPT_BACKOFF);
                    }
                }
                if self.index == 0 {
                    self.sweep(now);
                    if instant >= next_maintain {
                        next_maintain = instant + MAINTAIN_EVERY;
                        self.shared.pool.maintain();
                    }
                }
            }
            // Acquire pairs with the Release in `Handle::shutdown`.
            if deadline.is_none() && self.shared.shutdown.load(Ordering::Acquire) {
                deadline = Some(instant + self.shared.options.shutdown_timeout);
                self.begin_drain(now);
            }
            if let Some(deadline) = deadline {
                if self.shared.registry.is_empty() {
                    // The connections are counted in the shared registry,
                    // and the last one may have been another worker's
                    // (worker 0's sweep closes the idle ones of all): the
                    // others, asleep until their tick, are told now (a
                    // review measured 200-320 ms of exit time with four
                    // workers' idle keep-alive connections).
                    for peer in self.peers.iter() {
                        let _ = peer.wake_poll();
                    }
                    break;
                }
                if instant >= deadline {
                    if self.index == 0 {
                        let closed = self.shared.registry.sweep(|_, connection| {
                            connection.inner.lock().last_words(now);
                            false
                        });
                        tracing::warn!(
                            closed,
                            "shutdown deadline passed; closed the remaining connections"
                        );
                    }
                    break;
                }
            }
        }
        tracing::debug!(worker = self.index, "worker stopped");
    }

    /// Accepts until the queue is empty. Returns false when out of file
    /// descriptors (accepting pauses for a moment).
    fn accept(&mut self, now: u64) -> bool {
        loop {
            let Some(listener) = &self.listener else {
                return true;
            };
            match listener.accept() {
                Ok((socket, peer)) => self.admit(socket, peer, now),
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if matches!(error.raw_os_error(), Some(ENFILE | EMFILE)) => {
                    // The queue stays; try again soon.
                    tracing::warn!(%error, "accept paused: out of file descriptors");
                    return false;
                }
                Err(error) => {
                    // ECONNABORTED and friends concern one connection only.
                    tracing::debug!(%error, "accept failed");
                }
            }
        }
    }

    /// Registers a new connection, or refuses it with `503` when the
    /// registry is full.
    fn admit(&mut self, socket: TcpStream, peer: std::net::SocketAddr, now: u64) {
        let _ = socket.set_nodelay(true);
        let session = match Session::new(&self.shared.pool) {
            Ok(mut session) => {
                session.set_peer(peer);
                session
            }
            Err(error) => {
                tracing::error!(%error, "cannot build a session");
                return;
            }
        };
        let connection = Connection { inner: Mutex::new(Conn::new(socket, session, now)) };
        let id = match self.shared.registry.insert(connection) {
            Ok(id) => id,
            Err(full) => {
                let mut conn = full.into_inner().inner.into_inner();
                // Best effort: a fresh socket's send buffer takes it.
                let _ = io::Write::write(&mut conn.socket, REFUSAL);
                let _ = conn.socket.shutdown(std::net::Shutdown::Write);
                tracing::debug!("connection refused: max_connections reached");
                return;
            }
        };
        let registered = match (usize::try_from(id.as_u64()), self.shared.registry.get(id)) {
            (Ok(token), Some(entry)) => {
                let mut conn = entry.inner.lock();
                conn.attach(id.as_u64(), Arc::clone(&self.notify));
                self.poll.registry().register(
                    &mut conn.socket,
                    Token(token),
                    Interest::READABLE | Interest::WRITABLE,
                )
            }
            _ => Err(io::Error::other("connection id does not fit a poll token")),
        };
        if let Err(error) = registered {
            tracing::warn!(%error, "cannot register a connection");
            self.shared.registry.discard(id);
        }
    }

    /// Drives the connection behind `token`.
    fn ready(&mut self, token: Token, readiness: Readiness, now: u64) {
        let id = ConnectionId::from_u64(token.0 as u64);
        let Some(entry) = self.shared.registry.get(id) else {
            // Closed by the timer since the event was queued.
            return;
        };
        let verdict = {
            let mut conn = entry.inner.lock();
            let handler = &self.shared.handler;
            let cx = &mut self.cx;
            recovered(&mut conn, cx, now, |conn, cx| conn.ready(readiness, handler, cx, now))
        };
        match verdict {
            // The value (and its socket) drops with the last reference,
            // which may be this one.
            Verdict::Close => {
                self.shared.registry.discard(id);
            }
            Verdict::Yield => self.again.push(id),
            Verdict::Open | Verdict::Drive => {}
        }
    }

    /// Gives the connections that yielded their next turn (after every
    /// event of this poll had its own). One that yields again waits for
    /// the next poll. Each is on the list once (`Conn::queued`), so a
    /// flooding connection that events also drive gets at most one extra
    /// turn per poll.
    fn drive_again(&mut self, now: u64) {
        if self.again.is_empty() {
            return;
        }
        let mut again = std::mem::take(&mut self.again_now);
        std::mem::swap(&mut again, &mut self.again);
        for id in again.drain(..) {
            let Some(entry) = self.shared.registry.get(id) else { continue };
            entry.inner.lock().queued = false;
            drop(entry);
            // The connection remembers that it is readable.
            let readiness = Readiness { readable: false, writable: false, read_closed: false };
            if let Ok(token) = usize::try_from(id.as_u64()) {
                self.ready(Token(token), readiness, now);
            }
        }
        self.again_now = again;
    }

    /// Drives the connections application threads woke: a deferred
    /// response wrote or ended, a lent body was read from or came back.
    fn wake_woken(&mut self, now: u64) {
        let mut woken = std::mem::take(&mut self.woken);
        self.notify.take(&mut woken);
        for &id in &woken {
            // A woken connection drives as if its socket were ready: its
            // remembered readiness decides what it reads and writes.
            let readiness = Readiness { readable: false, writable: false, read_closed: false };
            if let Ok(token) = usize::try_from(id) {
                self.ready(Token(token), readiness, now);
            }
        }
        self.woken = woken;
    }

    /// The timer: closes idle and late connections (worker 0 only).
    fn sweep(&mut self, now: u64) {
        let timeouts = self.shared.timeouts;
        let cx = &mut self.cx;
        let mut drive = std::mem::take(&mut self.drive);
        self.shared.registry.sweep(|id, connection| {
            // The 408 path drops the request's state, handler code: a panic
            // there must not take the timer's worker down with it.
            let verdict = {
                let mut conn = connection.inner.lock();
                recovered(&mut conn, cx, now, |conn, cx| conn.check(now, &timeouts, cx))
            };
            match verdict {
                Verdict::Open => true,
                Verdict::Close => false,
                // A turn the timer began (a close that lingers) and cut
                // short: driven again, as its socket's edge has passed.
                Verdict::Drive | Verdict::Yield => {
                    drive.push(id);
                    true
                }
            }
        });
        // (Any worker's connection: the lock makes that safe, as for the
        // timer's own writes.)
        for id in drive.drain(..) {
            let readiness = Readiness { readable: false, writable: true, read_closed: false };
            if let Ok(token) = usize::try_from(id.as_u64()) {
                self.ready(Token(token), readiness, now);
            }
        }
        self.drive = drive;
    }

    /// Stops accepting and starts closing connections as they go idle.
    fn begin_drain(&mut self, now: u64) {
        if let Some(mut listener) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        self.cx.draining = true;
        self.cx.drain_began = now;
        if self.index == 0 {
            tracing::info!(open = self.shared.registry.len(), "shutting down");
            self.sweep(now);
        }
    }
}

/// Runs one step of a connection (an event, the timer's check) under
/// [`contained`]; after a panic in it (a handler method, or a request
/// state's drop as the timer refused it), the answers queued before it
/// still go out ([`Conn::after_panic`]; a panic there again only closes).
fn recovered<H: Handler>(
    conn: &mut Conn<H>,
    cx: &mut Context,
    now: u64,
    step: impl FnOnce(&mut Conn<H>, &mut Context) -> Verdict,
) -> Verdict {
    contained(|| step(conn, cx))
        .unwrap_or_else(|| contained(|| conn.after_panic(cx, now)).unwrap_or(Verdict::Close))
}

/// Runs one step of a connection (an event, the timer's check); `None`
/// after a panic in it, from the handler's code, which ends that
/// connection only.
fn contained(step: impl FnOnce() -> Verdict) -> Option<Verdict> {
    let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(step));
    if stepped.is_err() {
        tracing::error!("the handler panicked; its connection closes");
    }
    stepped.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop wakes at the shutdown's deadline when it comes before the
    /// next tick, and at the tick otherwise (a review measured exits up
    /// to a tick past `--shutdown-timeout`).
    #[test]
    fn the_deadline_wakes_the_loop_before_the_tick() {
        let now = Instant::now();
        let tick = now + Duration::from_millis(500);
        assert_eq!(wake_at(tick, None), tick);
        let early = now + Duration::from_millis(20);
        assert_eq!(wake_at(tick, Some(early)), early);
        let late = now + Duration::from_secs(3);
        assert_eq!(wake_at(tick, Some(late)), tick);
        assert_eq!(wake_at(tick, Some(now)), now);
    }
}
