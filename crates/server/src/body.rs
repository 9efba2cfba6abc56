//! A request body read on the application's thread, straight out of the
//! connection's input pipe.
//!
//! The handover, in order (the parser is the worker's HTTP/1 state machine):
//!
//! ```text
//!   parser: head read; Request::stream_body() was called
//!   parser: consumes the head's bytes and releases its read of the pipe
//!   parser: Response::take_body() hands out a RequestBody; the parser is LENT:
//!           it parses nothing, but the worker keeps reading the socket into
//!           the pipe until the pipe pauses (back-pressure, with the link as
//!           the waker that resumes it)
//!   app:    the first read, if the client waits for `100 (Continue)`,
//!           asks the worker for it (see `crate::link`)
//!   app:    reads (any thread): each read is a read of the pipe, de-framed
//!           (Content-Length or chunked) and bounded by max_body; consumed
//!           blocks go back to the pool from this thread (the pipe does
//!           not keep them for the worker: `Options::keep_blocks(false)`)
//!   app:    the body ends (or the RequestBody drops): it is handed back
//!           through the link with its framing; the worker resumes parsing,
//!           draining an unread rest first (or closing, if it was malformed)
//! ```
//!
//! The reads are the pipe's, so the pipe's one-read-at-a-time rule holds
//! here too: a second thread reading the same body (through `&RequestBody`)
//! while a read is outstanding fails with
//! [`ReadError::ConcurrentRead`](falconet_pipe::ReadError), and neither
//! read consumes a byte. The framing state is touched only by the thread
//! whose pipe read succeeded, under a lock that is therefore never
//! contended.

use std::future::Future as _;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::BufMut;
use falconet_pipe::{ReadGuard, Readable, Reader};
use parking_lot::Mutex;

use crate::chunked::ChunkedError;
use crate::http1::Framing;
use crate::link::{Link, Returned};
use crate::response::BodyOffer;
use crate::trailers::{TrailerSlot, Trailers};

/// The error of a blocking read on a worker's thread that would wait.
const ON_WORKER_READ: &str = "a blocking read of a request body on the server's worker thread \
    would never end (the worker reads the socket): read it on another thread, with AsyncRead, \
    or with try_read";

/// The error of a failed body, saying why (an application that shows it,
/// as axum's extractors do, tells its user what happened).
fn failure(kind: io::ErrorKind) -> io::Error {
    let why = match kind {
        io::ErrorKind::FileTooLarge => "the request body is over the server's max_body",
        io::ErrorKind::InvalidData => "the request body is malformed",
        io::ErrorKind::UnexpectedEof => "the client closed the connection before the body's end",
        io::ErrorKind::ConnectionReset => "the client reset the connection before the body's end",
        io::ErrorKind::TimedOut => "the connection timed out before the body's end",
        io::ErrorKind::ConnectionAborted => {
            "the server closed the connection before the body's end"
        }
        _ => "the request body failed",
    };
    io::Error::new(kind, why)
}

/// An HTTP/2 body's receive window: each read releases what it consumed,
/// on the reading thread, and the WINDOW_UPDATEs that asks for go to the
/// worker through the link. A body dropped unread gives its bytes back to
/// the connection's window (the stream's abort).
#[derive(Debug)]
pub(crate) struct BodyFlow {
    pub(crate) input: Arc<crate::h2::connection::StreamInput>,
    pub(crate) stream: u32,
    /// The stream's trailers, stored by the worker before it ends the
    /// body's pipe.
    pub(crate) trailers: TrailerSlot,
}

/// A request body being read by the application, from any thread.
///
/// Made by [`Response::take_body`](crate::Response::take_body) for a
/// request whose head called
/// [`Request::stream_body`](crate::Request::stream_body). Read it with
/// `std::io::Read` (also through `&RequestBody`, from several threads:
/// see the concurrency rule in the module docs), with tokio's `AsyncRead`
/// (feature `tokio`), or as an `http_body::Body` through `tower::Body`
/// (feature `tower`: `Body::from(request_body)`).
/// Reads return the body de-chunked; `Ok(0)` is its end.
///
/// # Errors
/// Reads fail with `io::ErrorKind::UnexpectedEof` when the client closed
/// before the body ended, `InvalidData` for a malformed chunked body,
/// `FileTooLarge` past `max_body` (a chunked body; a `Content-Length`
/// past it was refused before the handler ran), the client's connection
/// error (`ConnectionReset` for a reset), `TimedOut` when the server's
/// timer closed the connection (`io_timeout`, a minimum rate),
/// `ConnectionAborted` when the server closed it otherwise (the shutdown's
/// deadline), `ConnectionReset` too for an HTTP/2 stream the client
/// reset, or `Other` wrapping
/// [`falconet_pipe::ReadError::ConcurrentRead`] for a read that overlapped
/// another. After an error the body is over; the connection closes after
/// its response.
///
/// A blocking read on a worker's own thread (in a [`Handler`](crate::Handler)
/// method, which must not block) returns what has arrived, and where it
/// would wait fails with `io::ErrorKind::Deadlock` instead: that worker is
/// the thread that would read the rest from the socket. That error ends
/// nothing: the body can still be read on another thread, or with
/// `AsyncRead`.
#[derive(Debug)]
pub struct RequestBody {
    reader: Arc<Reader>,
    state: Mutex<BodyState>,
    link: Arc<Link>,
    /// HTTP/2: the stream's receive window.
    flow: Option<BodyFlow>,
    /// The async read's wait for bytes, kept across polls. Behind a lock
    /// only so that a read through `&self` can end a wait that a dropped
    /// async read left (an async read has `&mut self`, so it never runs
    /// beside one; it reaches the wait with `get_mut`, no lock).
    readable: Mutex<Option<Readable>>,
}

#[derive(Debug)]
struct BodyState {
    /// `None` once handed back.
    framing: Option<Framing>,
    received: u64,
    max_body: u64,
    /// The body failed: reads repeat this.
    failed: Option<io::ErrorKind>,
    /// A chunked body's trailer section as it passes (field lines, each
    /// ended by `\n`), until the body's end.
    kept: Vec<u8>,
    /// The trailer fields that ended the body, until taken.
    trailers: Option<Trailers>,
}

impl RequestBody {
    pub(crate) fn new(offer: BodyOffer, link: Arc<Link>) -> Self {
        let BodyOffer { reader, framing, received, max_body, flow } = offer;
        let state = BodyState {
            framing: Some(framing),
            received,
            max_body,
            failed: None,
            kept: Vec::new(),
            trailers: None,
        };
        Self { reader, state: Mutex::new(state), link, flow, readable: Mutex::new(None) }
    }

    /// Whether this is an HTTP/2 stream's body (its reads release flow
    /// credit), rather than an HTTP/1 connection's.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn is_stream(&self) -> bool {
        self.flow.is_some()
    }

    /// Whether the whole body has been read (the next read returns 0).
    pub fn is_end(&self) -> bool {
        self.state.lock().framing.is_none()
    }

    /// The request's trailer fields (a chunked body's trailer section, an
    /// HTTP/2 stream's trailing HEADERS), once the body has been read to
    /// its end: `Some` once, if the client sent any; `None` before the
    /// end, after a failed read, when there were none, or once taken.
    /// They are not part of the request's head: see [`Trailers`].
    pub fn take_trailers(&self) -> Option<Trailers> {
        self.state.lock().trailers.take()
    }

    /// Reads into `out` what can be read now, without waiting: `Some(n)`
    /// (`Some(0)` at the body's end), or `None` when the read would wait
    /// for the client.
    ///
    /// # Errors
    /// As the type's reads.
    pub fn try_read(&self, out: &mut [u8]) -> io::Result<Option<usize>> {
        if out.is_empty() {
            return Ok(Some(0));
        }
        if let Some(result) = self.finished_else_want() {
            return result.map(Some);
        }
        self.end_dropped_wait();
        let Some(guard) = self.reader.try_read().map_err(io::Error::other)? else {
            return Ok(None);
        };
        // `None` from `take`: only framing was buffered.
        self.take(guard, &mut &mut *out)
    }

    /// Ends the wait of an async read whose future was dropped while it
    /// waited (a timeout around it), which would hold the pipe's read and
    /// fail this read as a concurrent one. Called with `&self` only: no
    /// async read is in progress then (it would hold `&mut self`), so a
    /// wait found here is a dropped one's.
    fn end_dropped_wait(&self) {
        self.readable.lock().take();
    }

    /// Reads into `out`, waiting on this thread for bytes.
    fn read_blocking_into(&self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(result) = self.finished_else_want() {
                return result;
            }
            let guard = if crate::worker::on_worker() {
                // The worker that would read the socket is this thread:
                // a wait here would never end (a handler reading its body
                // in `respond`). Take what has arrived, then refuse.
                match self.reader.try_read().map_err(io::Error::other)? {
                    Some(guard) => guard,
                    None => return Err(io::Error::new(io::ErrorKind::Deadlock, ON_WORKER_READ)),
                }
            } else {
                self.reader.read_blocking().map_err(io::Error::other)?
            };
            if let Some(n) = self.take(guard, &mut &mut *out)? {
                return Ok(n);
            }
        }
    }

    /// The answer of a body that is over: `Some(Ok(0))` at its end, its
    /// error after a failure. `None` while it goes on, and then the read
    /// asks for the `100 (Continue)` if its client waits for one. Under
    /// the state's lock, which the hand-back takes too: once the body is
    /// handed back, the connection's word is the next exchange's, and a
    /// read of this body after its end (`read_to_end` always makes one)
    /// must not ask for that exchange's 100.
    fn finished_else_want(&self) -> Option<io::Result<usize>> {
        let state = self.state.lock();
        match (&state.framing, state.failed) {
            (_, Some(kind)) => Some(Err(failure(kind))),
            (None, None) => Some(Ok(0)),
            (Some(_), None) => {
                self.link.want_continue();
                None
            }
        }
    }

    /// De-frames what `guard` holds into `out`. `Some(n)` when `n > 0`
    /// bytes were produced or the body ended (`Some(0)`); `None` when the
    /// read held only framing and the caller must wait for more.
    fn take(&self, guard: ReadGuard<'_>, out: &mut impl BufMut) -> io::Result<Option<usize>> {
        let mut guarded = self.state.lock();
        let state = &mut *guarded;
        let Some(framing) = state.framing.as_mut() else {
            return Ok(Some(0));
        };
        let mut used = 0;
        let mut produced = 0;
        let mut error = None;
        for chunk in guard.chunks() {
            let mut chunk = chunk;
            while !chunk.is_empty() && out.has_remaining_mut() && !framing.is_done() {
                let room = out.remaining_mut();
                let (n, data) = match framing {
                    Framing::Length(left) => {
                        let n =
                            usize::try_from(*left).unwrap_or(usize::MAX).min(chunk.len()).min(room);
                        *left -= n as u64;
                        (n, &chunk[..n])
                    }
                    Framing::Stream => {
                        let n = chunk.len().min(room);
                        if state.received + n as u64 > state.max_body {
                            error = Some(io::ErrorKind::FileTooLarge);
                            break;
                        }
                        (n, &chunk[..n])
                    }
                    Framing::Chunked(decoder) => {
                        let budget = state.max_body - state.received;
                        // Data is a part of the input: a piece no longer
                        // than the room yields no more data than fits.
                        let piece = &chunk[..chunk.len().min(room.max(1))];
                        match decoder.decode_keeping(piece, budget, &mut state.kept) {
                            Ok((n, data)) => (n, data.unwrap_or_default()),
                            Err(ChunkedError::Malformed) => {
                                error = Some(io::ErrorKind::InvalidData);
                                break;
                            }
                            Err(ChunkedError::TooLarge) => {
                                error = Some(io::ErrorKind::FileTooLarge);
                                break;
                            }
                        }
                    }
                };
                out.put_slice(data);
                produced += data.len();
                state.received += data.len() as u64;
                used += n;
                chunk = &chunk[n..];
            }
            if error.is_some() || !out.has_remaining_mut() || framing.is_done() {
                break;
            }
        }
        let completed = guard.is_completed();
        let writer_error = guard.error().map(io::Error::kind);
        // An HTTP/2 body ends with its pipe: cleanly, or with the stream's
        // reset.
        let stream_end = matches!(framing, Framing::Stream) && completed && used == guard.len();
        if stream_end && error.is_none() {
            error = writer_error;
        }
        let done = framing.is_done() || stream_end;
        let starved = !done && error.is_none() && used == guard.len();
        // All examined when it is all used: wait for new bytes, not these.
        let _ = guard.advance_to(used, used);
        if error.is_none() && starved && completed && produced == 0 {
            // The client's end of stream (or its connection error) before
            // the body's end.
            error = Some(writer_error.unwrap_or(io::ErrorKind::UnexpectedEof));
        }
        self.release(produced);
        if let Some(kind) = error {
            state.failed = Some(kind);
            let received = state.received;
            state.framing = None;
            drop(guarded);
            if let Some(flow) = &self.flow {
                // The stream is over: its unread credit goes back.
                let connection = flow.input.abort().ok().flatten();
                let updates = falconet_flow::Updates { stream: None, connection };
                self.link.push_updates(flow.stream, updates);
            } else {
                // Malformed or cut short: the parser cannot resume after it.
                let status = match kind {
                    io::ErrorKind::InvalidData => Some(crate::Status::BAD_REQUEST),
                    io::ErrorKind::FileTooLarge => Some(crate::Status::CONTENT_TOO_LARGE),
                    _ => None,
                };
                self.link.hand_back(Returned { framing: None, received, status });
            }
            // The body's blocks are consumed: those in this thread's cache
            // go back, whichever thread drops the body later.
            self.link.give_back_blocks();
            return Err(failure(kind));
        }
        if done {
            state.trailers = match (framing, &self.flow) {
                (Framing::Chunked(_), _) if !state.kept.is_empty() => {
                    // The decoder checked every line's grammar.
                    Trailers::from_lines(&std::mem::take(&mut state.kept))
                }
                // The worker stored them before it ended the pipe, whose
                // end this read saw.
                (_, Some(flow)) => flow.trailers.take(),
                _ => None,
            };
            self.hand_back(state);
            self.link.give_back_blocks();
            return Ok(Some(produced));
        }
        Ok((produced > 0).then_some(produced))
    }

    /// HTTP/2: gives `n` consumed bytes back to the stream's and the
    /// connection's windows; the worker sends the WINDOW_UPDATEs.
    fn release(&self, n: usize) {
        let Some(flow) = &self.flow else { return };
        let mut left = n;
        while left > 0 {
            let piece = left.min(falconet_flow::MAX_WINDOW as usize);
            left -= piece;
            // The window counted these bytes when they arrived: the release
            // cannot exceed them (an error would mean the stream was reset,
            // and then nothing is owed).
            if let Ok(updates) = flow.input.release(piece as u32) {
                self.link.push_updates(flow.stream, updates);
            }
        }
    }

    /// Gives the framing back to the parser (once); for HTTP/2, returns the
    /// unread credit to the connection instead.
    fn hand_back(&self, state: &mut BodyState) {
        if let Some(framing) = state.framing.take() {
            if let Some(flow) = &self.flow {
                let connection = flow.input.abort().ok().flatten();
                let updates = falconet_flow::Updates { stream: None, connection };
                self.link.push_updates(flow.stream, updates);
                // Even with no credit to return: a stream kept open for
                // this body after its response is reset now, not at the
                // client's next frame.
                std::task::Wake::wake_by_ref(&self.link);
                return;
            }
            self.link.hand_back(Returned {
                framing: Some(framing),
                received: state.received,
                status: None,
            });
        }
    }

    /// Polls a read into `out`: a slice, or a `BytesMut` limited to a
    /// frame's length (appended to without zeroing) (the async adapters).
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    pub(crate) fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut impl BufMut,
    ) -> Poll<io::Result<usize>> {
        if !out.has_remaining_mut() {
            return Poll::Ready(Ok(0));
        }
        loop {
            if let Some(result) = self.finished_else_want() {
                *self.readable.get_mut() = None;
                return Poll::Ready(result);
            }
            // A wait in progress owns the pipe's read: finish it first.
            if let Some(readable) = self.readable.get_mut() {
                let waited = std::task::ready!(std::pin::Pin::new(readable).poll(cx));
                *self.readable.get_mut() = None;
                waited.map_err(io::Error::other)?;
            }
            match self.reader.try_read() {
                Ok(Some(guard)) => {
                    if let Some(n) = self.take(guard, &mut *out)? {
                        return Poll::Ready(Ok(n));
                    }
                }
                Ok(None) if crate::worker::waits_forever() => {
                    // Driven by a `block_on` inside a handler method: the
                    // worker that would read the socket is the one waiting
                    // (as for the blocking read).
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::Deadlock,
                        ON_WORKER_READ,
                    )));
                }
                Ok(None) => *self.readable.get_mut() = Some(Readable::new(&self.reader)),
                Err(error) => return Poll::Ready(Err(io::Error::other(error))),
            }
        }
    }
}

impl io::Read for RequestBody {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        // An async read cancelled while it waited left its wait here,
        // holding the pipe's read: this read is the body's next one.
        *self.readable.get_mut() = None;
        self.read_blocking_into(out)
    }
}

/// Reads through a shared reference, as `&File` does: several threads may
/// hold one, and the pipe's rule decides between overlapping reads.
impl io::Read for &RequestBody {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.end_dropped_wait();
        self.read_blocking_into(out)
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        // An async read cancelled while it waited (a timeout around it)
        // left its wait here, which holds the pipe's read: it ends before
        // the parser gets the pipe back, whose read would otherwise fail
        // as a concurrent one and close the connection, with the answer
        // still to come.
        *self.readable.get_mut() = None;
        // The parser drains what the application left (or closes after a
        // failure).
        let mut state = self.state.lock();
        self.hand_back(&mut state);
        drop(state);
        // The blocks its reads consumed are in this thread's cache.
        self.link.give_back_blocks();
    }
}

#[cfg(feature = "tokio")]
impl tokio::io::AsyncRead for RequestBody {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let out = buf.initialize_unfilled();
        let n = std::task::ready!(this.poll_read_into(cx, &mut &mut *out))?;
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}
