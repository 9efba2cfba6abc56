//! The answer to a request: written at once ([`Response`]) or later, from
//! any thread ([`Responder`]).
//!
//! A [`Response`] appends to the connection's output buffer, sent with
//! every other response of the same read. [`Response::defer`] turns it
//! into a [`Responder`], which owns the writing end of a fresh
//! `falconet-pipe` pipe (the *output pipe*) whose reading end the
//! connection keeps:
//!
//! ```text
//!   application thread                          worker (the connection's)
//!   Responder::write / body / finish
//!     -> HTTP/1 bytes into the output pipe  -->  copied into the output buffer
//!        (pool blocks; flush waits while           in order, behind the responses
//!         256 KiB are unsent: back-pressure)       before it; woken by the pipe
//!     -> close: the response is complete         -> the next pipelined request
//!     -> dropped unfinished: the pipe ends        -> 500, or a close if the head
//!        with an error                               already went out
//! ```

use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use falconet_pipe::{Reader, WriteError, Writer};
use falconet_pool::Pool;

use crate::body::RequestBody;
use crate::date::{DateCache, FIELDS_LEN};
use crate::expect::{CONTINUE, Continue};
use crate::handler::{Field, ResponseError, Status};
use crate::http1::Framing;
use crate::link::{Link, Notify};
use crate::pieces::Pieces;
use crate::trailers::Trailers;
use crate::wanted::{Abandon, Wanted};
use crate::wire::Encoder;

/// A deferred response's output pipe pauses its writer (the application)
/// while this much is unsent, and lets it go on below
/// [`OUTPUT_RESUME_AT`]: back-pressure from a slow client, in pieces large
/// enough that a streamed body costs few wakes of the worker.
const OUTPUT_PAUSE_AT: u64 = 256 * 1024;
/// See [`OUTPUT_PAUSE_AT`].
const OUTPUT_RESUME_AT: u64 = 128 * 1024;
/// [`OUTPUT_PAUSE_AT`] for an HTTP/2 stream, which shares its connection
/// with up to `max_concurrent_streams` others and may send no more than
/// its window (65,535 bytes unless the client grants more) before the
/// client answers: a stream's deferred response holds about one window.
const STREAM_OUTPUT_PAUSE_AT: u64 = 64 * 1024;

/// What a connection lends its responses: the pool for output pipes, its
/// link to the application threads, the body a response may take, and the
/// output pipe of a response that was deferred.
#[derive(Debug)]
pub(crate) struct AppSlots {
    pool: Pool,
    /// The connection's id and its worker's queue, once attached.
    id: u64,
    notify: Option<Arc<Notify>>,
    link: Option<Arc<Link>>,
    /// The body the response being written may take.
    pub(crate) offer: Option<BodyOffer>,
    /// The output pipe of the response just deferred.
    pub(crate) deferred: Option<Deferred>,
    /// The response just handed to the worker to poll, with its encoder.
    pub(crate) polled: Option<(Box<dyn Polled>, Encoder)>,
}

/// The worker's end of a deferred response: the output pipe's reader, and
/// the notice that gives the response up when dropped with it.
#[derive(Debug)]
pub(crate) struct Deferred {
    pub(crate) reader: Reader,
    pub(crate) abandon: Abandon,
}

/// A response the worker writes by polling it (the tower path: a
/// response body is polled where its connection lives, as hyper polls it
/// in the connection's task, with no thread between the body's frames and
/// the socket). Each poll writes through a [`Response`] over the
/// connection's output buffer, or hands over a body frame to be sent as it
/// is.
pub(crate) trait Polled: Send + std::fmt::Debug {
    /// Writes what is ready into `response`: `Pending` when nothing is (the
    /// waker in `cx` wakes the connection), otherwise the [`Step`] taken.
    fn poll_write(&mut self, cx: &mut Context<'_>, response: &mut Response<'_>) -> Poll<Step>;
}

/// The most polls in a row of a [`Polled`] response that stage nothing
/// (empty data frames, data held for later) before the worker leaves it
/// and wakes its connection for another turn: a body that is always
/// ready but never yields bytes (an empty frame, forever) would
/// otherwise hold the worker, and every other connection on it, in one
/// turn. tokio's tasks yield after 128 such operations; hyper's body
/// writes, after 16 empty chunks.
#[cfg_attr(not(feature = "tower"), allow(dead_code, reason = "polled by the tower path only"))]
pub(crate) const POLLS_WITHOUT_OUTPUT: u32 = 256;

/// An HTTP/1 body piece of a polled response shorter than this is copied
/// into the output buffer, and the polls go on, instead of going out in
/// place by a `writev` of its own: a body of 1-byte frames took a million
/// writes per MiB, one of 16 KiB frames one write per frame (copied, four
/// share a write at the default `max_pending_output`: 1,981 -> 3,242 MiB
/// per server CPU-second, `docs/benchmarks.md`). From 64 KiB, a piece
/// goes out in place (copied, 3,221 -> 3,074).
pub(crate) const HTTP1_COPY_BELOW: usize = 64 * 1024;

/// An HTTP/2 body piece shorter than this (a polled frame, or
/// [`Response::write_bytes`] and `body_bytes`) is copied into the stream's
/// staging buffer instead of being sent in place: small pieces staged one
/// after another then share DATA frames up to the client's frame size,
/// where each took a DATA frame of its own (9 bytes of header for one of
/// body; the `h2` crate as a client closes the connection once about a
/// hundred frames under 256 bytes wait unread). 1 KiB frames: 1,730 ->
/// 2,001 MiB per server CPU-second copied; 4 KiB: 2,634 in place, 2,452
/// copied.
pub(crate) const HTTP2_COPY_BELOW: usize = 4 * 1024;

/// The most polls of polled responses in one round of a connection's turn
/// (one `Session::process`; over HTTP/2, of all its streams together). A
/// body of tiny frames, each copied ([`HTTP1_COPY_BELOW`],
/// [`HTTP2_COPY_BELOW`]), stages bytes at every poll, so
/// [`POLLS_WITHOUT_OUTPUT`] never stops it: past this many the worker
/// leaves it, as it leaves one of empty frames, and serves its other
/// connections first. (An adversarial review measured a `GET` on a worker
/// beside three bodies of 1-byte frames waiting 50 ms for its turn, when
/// 11,000 polls filled each 64 KiB round; 0.4 ms when each frame took a
/// write of its own.) About 0.1 ms of polls.
#[cfg_attr(not(feature = "tower"), allow(dead_code, reason = "polled by the tower path only"))]
pub(crate) const POLLS_PER_ROUND: u32 = 1024;

/// What one [`Polled::poll_write`] did.
#[derive(Debug)]
#[cfg_attr(not(feature = "tower"), allow(dead_code, reason = "made by the tower path only"))]
pub(crate) enum Step {
    /// Wrote into the response (or nothing): poll again.
    Wrote,
    /// A piece of the streamed body, sent without a copy; polled again
    /// once it is sent.
    Frame(bytes::Bytes),
    /// The body's last piece: as [`Frame`](Self::Frame), and the next
    /// poll answers [`Done`](Self::Done). HTTP/1 sends the body's end
    /// (the last chunk) with it, in the same write.
    Last(bytes::Bytes),
    /// The response is complete (as [`Response::finish`] would end it).
    Done,
    /// The body ended with trailer fields (field lines, `name: value\r\n`
    /// each, checked): the response is complete, with them where its
    /// framing carries them (a chunked HTTP/1.1 body, an HTTP/2 stream).
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    Trailers(Vec<u8>),
    /// It cannot be completed: `500` if nothing was written, else the
    /// connection closes.
    Failed,
}

/// A request body ready to be handed to the application.
#[derive(Debug)]
pub(crate) struct BodyOffer {
    pub(crate) reader: Arc<Reader>,
    pub(crate) framing: Framing,
    pub(crate) received: u64,
    pub(crate) max_body: u64,
    /// An HTTP/2 body's receive window, released as the body is read.
    pub(crate) flow: Option<crate::body::BodyFlow>,
}

impl AppSlots {
    /// The pool that output pipes (and HTTP/2 body pipes) take blocks from.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    pub(crate) fn new(pool: Pool) -> Self {
        Self { pool, id: 0, notify: None, link: None, offer: None, deferred: None, polled: None }
    }

    /// Ties the connection to its id and its worker's queue.
    pub(crate) fn attach(&mut self, id: u64, notify: Arc<Notify>) {
        self.id = id;
        self.notify = Some(notify);
        self.link = None;
    }

    /// The connection's link, made the first time (a session driven by
    /// hand gets a queue of its own that wakes nothing).
    pub(crate) fn link(&mut self) -> &Arc<Link> {
        let (id, notify, pool) = (self.id, &mut self.notify, &self.pool);
        self.link.get_or_insert_with(|| {
            let notify = Arc::clone(notify.get_or_insert_with(|| Arc::new(Notify::new(None))));
            Link::new(id, notify, pool.clone())
        })
    }

    /// The link, if one was made.
    pub(crate) fn existing_link(&self) -> Option<&Arc<Link>> {
        self.link.as_ref()
    }
}

/// The response being written, straight into the connection's output
/// buffer (sent after the handler returns, with every other response of
/// the same read).
///
/// Call, in order: [`status`](Self::status) (default 200), any
/// [`header`](Self::header)s, then either [`body`](Self::body) once (sent
/// with `Content-Length`) or [`write`](Self::write) any number of times
/// (sent chunked to HTTP/1.1 clients, close-delimited to HTTP/1.0 ones,
/// in DATA frames over HTTP/2). A body already in `Bytes` goes through
/// [`body_bytes`](Self::body_bytes) or [`write_bytes`](Self::write_bytes)
/// instead, which HTTP/2 sends without copying it. Or, before any of it,
/// [`defer`](Self::defer) the answer to another thread; every call after
/// that fails with [`ResponseError::Deferred`].
///
/// Body bytes go out only where a response has content: not for a `HEAD`
/// request, nor with status 204, 205 or 304. There `body` and `write`
/// succeed and their bytes are dropped (a `HEAD` answer keeps the length
/// its `GET` would have, and a 205 says `Content-Length: 0` over HTTP/1:
/// it must carry nothing, RFC 9110 §15.3.6).
#[derive(Debug)]
pub struct Response<'a> {
    out: &'a mut Vec<u8>,
    /// `Server` and `Date`, rendered once a second.
    fields: &'a [u8; FIELDS_LEN],
    encoder: Encoder,
    app: &'a mut AppSlots,
    /// Where an HTTP/2 stream keeps body pieces sent in place: each goes
    /// out after `out[..at]`. `None`: they are copied into `out`.
    shared: Option<&'a mut Pieces>,
    /// Where this response's head begins in `out`, if it had not begun
    /// when this `Response` was made (a `100 (Continue)` goes there).
    head_at: Option<usize>,
}

/// How a response ended, for the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answered {
    /// Complete in the output buffer; whether the connection stays open.
    Now { keep_alive: bool },
    /// Deferred: its output pipe is in the slots.
    Later,
}

impl<'a> Response<'a> {
    pub(crate) fn new(
        out: &'a mut Vec<u8>,
        fields: &'a [u8; FIELDS_LEN],
        encoder: Encoder,
        app: &'a mut AppSlots,
    ) -> Self {
        let head_at = encoder.is_untouched().then_some(out.len());
        Self { out, fields, encoder, app, shared: None, head_at }
    }

    /// The head is about to end: settles `Expect: 100-continue` on a lent
    /// body (see [`settle_continue`]).
    #[inline]
    fn settle(&mut self) {
        if self.encoder.head_open()
            && let Some(link) = self.app.existing_link()
        {
            settle_continue(link.expect.settle_here(), &mut self.encoder, self.out, self.head_at);
        }
    }

    /// Keeps the pieces of [`write_bytes`](Self::write_bytes) and
    /// [`body_bytes`](Self::body_bytes) in `shared` instead of copying them.
    pub(crate) fn sharing(mut self, shared: &'a mut Pieces) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Sets the status (200 unless set).
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] after a header or the body.
    pub fn status(&mut self, status: Status) -> Result<&mut Self, ResponseError> {
        self.encoder.status(status)?;
        Ok(self)
    }

    /// Adds a header field. A `Server` field replaces the server's own
    /// (`Server: falconet`, written with the status line otherwise);
    /// `Date`, `Content-Length`, `Transfer-Encoding` and `Connection` are
    /// the server's alone. The value may hold any octet but a control
    /// other than HTAB (RFC 9110 §5.5). An `Upgrade` field gets the
    /// `upgrade` option in the server's `Connection` field over HTTP/1
    /// (RFC 9110 §7.8); over HTTP/2, the fields that are HTTP/1's
    /// connection's own (`Keep-Alive`, `Proxy-Connection`, `TE`,
    /// `Upgrade`) are left out and values lose the whitespace around them
    /// (RFC 9113 §8.2).
    ///
    /// # Errors
    /// [`ResponseError::InvalidHeaderName`], [`ResponseError::InvalidHeaderValue`],
    /// [`ResponseError::ReservedHeader`], or [`ResponseError::HeadSent`]
    /// once the body began.
    pub fn header(
        &mut self,
        name: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<&mut Self, ResponseError> {
        self.encoder.header(self.out, self.fields, name, value.as_ref())?;
        Ok(self)
    }

    /// Adds a header field checked when the program was compiled (see
    /// [`Field`]): no check at run time.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    #[inline]
    pub fn field(&mut self, field: Field) -> Result<&mut Self, ResponseError> {
        self.encoder.field(self.out, self.fields, field)?;
        Ok(self)
    }

    /// Asks to close the connection after this response.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    pub fn close(&mut self) -> Result<&mut Self, ResponseError> {
        self.encoder.close()?;
        Ok(self)
    }

    /// Writes the whole body (with `Content-Length`) and completes the
    /// response.
    ///
    /// # Errors
    /// [`ResponseError::Finished`] after another `body`, or
    /// [`ResponseError::HeadSent`] after [`write`](Self::write).
    pub fn body(&mut self, body: &[u8]) -> Result<(), ResponseError> {
        self.settle();
        self.encoder.body(self.out, self.fields, body)
    }

    /// Writes a piece of a streamed body.
    ///
    /// # Errors
    /// [`ResponseError::Finished`] after [`body`](Self::body).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        self.settle();
        self.encoder.write(self.out, self.fields, bytes)
    }

    /// Declares the length of the body [`write`](Self::write) will stream
    /// (see `Encoder::declare_length`): the tower path, for a body of
    /// exact size. The caller writes exactly that many bytes or fails.
    #[cfg(feature = "tower")]
    pub(crate) fn declare_length(&mut self, length: u64) -> Result<(), ResponseError> {
        self.encoder.declare_length(length)
    }

    /// Completes a `HEAD` response whose `GET` length is not known (see
    /// `Encoder::unsized_head`): the tower path, for an emptied body.
    #[cfg(feature = "tower")]
    pub(crate) fn unsized_head(&mut self) -> Result<(), ResponseError> {
        self.settle();
        self.encoder.unsized_head(self.out, self.fields)
    }

    /// [`body`](Self::body) for a body already in [`Bytes`] (a static
    /// slice, or a shared buffer): an HTTP/2 stream sends it in place, in
    /// DATA frames whose payloads are slices of it, without copying it
    /// (a body under 4 KiB is copied, as [`body`](Self::body) does: it
    /// then shares its frames with the bytes around it). HTTP/1 copies it
    /// into the output buffer, with the other responses of the same read.
    ///
    /// # Errors
    /// As [`body`](Self::body).
    pub fn body_bytes(&mut self, body: Bytes) -> Result<(), ResponseError> {
        self.settle();
        let Some(shared) = self.shared.as_deref_mut().filter(|_| body.len() >= HTTP2_COPY_BELOW)
        else {
            return self.body(&body);
        };
        self.encoder.sized_head(self.out, self.fields, body.len() as u64)?;
        if !body.is_empty() && self.encoder.sends_body() {
            shared.push(self.out.len(), body);
        }
        Ok(())
    }

    /// [`write`](Self::write) for a piece already in [`Bytes`]: an HTTP/2
    /// stream sends it in place, without copying it (the piece is kept
    /// until it is sent). A piece under 4 KiB is copied, as
    /// [`write`](Self::write) does, so that small pieces written one after
    /// another share DATA frames instead of taking one each. HTTP/1 copies
    /// it into the output buffer.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn write_bytes(&mut self, bytes: Bytes) -> Result<(), ResponseError> {
        self.settle();
        let Some(shared) = self.shared.as_deref_mut().filter(|_| bytes.len() >= HTTP2_COPY_BELOW)
        else {
            return self.write(&bytes);
        };
        self.encoder.start_stream(self.out, self.fields)?;
        if !bytes.is_empty() && self.encoder.sends_body() {
            shared.push(self.out.len(), bytes);
        }
        Ok(())
    }

    /// Hands the answer to another thread: the returned [`Responder`]
    /// (which is `Send`) writes the response whenever it is ready, while
    /// the worker serves its other connections. Requests pipelined behind
    /// this one wait for it. Nothing may have been written to this
    /// `Response`; after `defer` it writes nothing more: its calls fail
    /// with [`ResponseError::Deferred`].
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] when something was already written,
    /// [`ResponseError::CannotDefer`] on a second `defer`,
    /// [`ResponseError::NoMemory`] when no output pipe can be made.
    pub fn defer(&mut self) -> Result<Responder, ResponseError> {
        if self.app.deferred.is_some() || self.app.polled.is_some() {
            return Err(ResponseError::CannotDefer);
        }
        if !self.encoder.is_untouched() {
            return Err(ResponseError::HeadSent);
        }
        let (pause, resume) = if self.encoder.is_http2() {
            (STREAM_OUTPUT_PAUSE_AT, STREAM_OUTPUT_PAUSE_AT / 2)
        } else {
            (OUTPUT_PAUSE_AT, OUTPUT_RESUME_AT)
        };
        // As for the input pipe: pool use stays the unsent bytes.
        let options =
            falconet_pipe::Options::new().pause_at(pause).resume_at(resume).keep_blocks(false);
        let (writer, reader) =
            falconet_pipe::pipe(&self.app.pool, options).map_err(|_| ResponseError::NoMemory)?;
        let (abandon, wanted) = crate::wanted::notice();
        self.app.deferred = Some(Deferred { reader, abandon });
        let link = Arc::clone(self.app.link());
        let encoder = self.encoder;
        self.encoder.hand_off();
        Ok(Responder { writer: Some(writer), encoder, fields: None, buf: Vec::new(), link, wanted })
    }

    /// The request body, for a request whose head called
    /// [`Request::stream_body`](crate::Request::stream_body): a
    /// [`RequestBody`] to read on any thread. `None` for other requests,
    /// and after the first call. A body not taken is read and discarded
    /// by the server.
    pub fn take_body(&mut self) -> Option<RequestBody> {
        let offer = self.app.offer.take()?;
        let link = Arc::clone(self.app.link());
        Some(RequestBody::new(offer, link))
    }

    /// Hands the response to the worker, which polls `polled` to write it
    /// whenever the connection is woken (see [`Polled`]). Nothing may have
    /// been written. (Only the tokio demo and the tower path poll.)
    #[cfg(any(feature = "tokio", feature = "tower"))]
    pub(crate) fn poll_later(&mut self, polled: Box<dyn Polled>) -> Result<(), ResponseError> {
        if self.app.deferred.is_some() || self.app.polled.is_some() {
            return Err(ResponseError::CannotDefer);
        }
        if !self.encoder.is_untouched() {
            return Err(ResponseError::HeadSent);
        }
        self.app.polled = Some((polled, self.encoder));
        self.encoder.hand_off();
        Ok(())
    }

    /// The encoder's state, after a [`Polled`] step wrote through it.
    pub(crate) fn encoder(&self) -> Encoder {
        self.encoder
    }

    /// Completes the response.
    pub(crate) fn finish(mut self) -> Answered {
        if self.app.deferred.is_some() || self.app.polled.is_some() {
            return Answered::Later;
        }
        self.settle();
        Answered::Now { keep_alive: self.encoder.finish(self.out, self.fields) }
    }
}

/// A response answered later, from any thread: made by
/// [`Response::defer`].
///
/// Set the status and fields, then send the body whole with
/// [`body`](Self::body) (with `Content-Length`) or in pieces with
/// [`write`](Self::write) (async) or [`write_blocking`](Self::write_blocking)
/// (sent chunked to HTTP/1.1 clients, close-delimited to HTTP/1.0 ones)
/// and [`finish`](Self::finish) (a body for `HEAD`, 204, 205 or 304 is
/// dropped, as [`Response`]'s is). Pieces wait while 256 KiB of the response
/// (64 KiB on an HTTP/2 stream, about one window) are not yet sent (the
/// output pipe's back-pressure), so a slow client slows the producer
/// instead of filling memory: the wait is before each piece, and a piece
/// goes in whole, so stream a large body in pieces of about that size.
///
/// Dropped without finishing (an error, a panic), the connection answers
/// `500` if nothing was sent yet (or `400`, `413` when the request body
/// had failed by the client's fault), then over HTTP/1 closes; once
/// something was sent, the connection closes (an HTTP/2 stream is reset):
/// the client sees a cut response, never a wrong one. [`closed`](Self::closed) tells slow
/// work that the answer can go nowhere (the connection closed, or
/// `response_timeout` answered for it), so it can stop.
///
/// # Errors
/// Every method returns the [`ResponseError`]s of [`Response`]'s, and
/// [`ResponseError::Closed`] once the connection is gone (stop producing),
/// [`ResponseError::NoMemory`] when the server's pool is exhausted.
#[derive(Debug)]
pub struct Responder {
    /// The output pipe; `None` once finished or failed.
    writer: Option<Writer>,
    encoder: Encoder,
    /// `Server` and `Date`, rendered when the head is written.
    fields: Option<[u8; FIELDS_LEN]>,
    /// Head and framing bytes on their way into the pipe.
    buf: Vec<u8>,
    link: Arc<Link>,
    /// Whether the worker still takes this response.
    wanted: Wanted,
}

impl Drop for Responder {
    fn drop(&mut self) {
        // Closes the pipe (the worker ends the response, or answers 500
        // for one never begun); then the blocks its writes claimed for
        // this thread's cache go back to where the worker leases them.
        drop(self.writer.take());
        self.link.give_back_blocks();
    }
}

impl Responder {
    /// Waits until the connection no longer takes this response
    /// ([`is_closed`](Self::is_closed)): it closed (a reset, a timeout, the
    /// server's shutdown), an HTTP/2 client reset the stream, or
    /// [`response_timeout`](crate::Options::response_timeout) answered for
    /// it; writes then fail with [`ResponseError::Closed`]. Over HTTP/1.1
    /// a client's FIN alone is a half-close (it may still read the answer:
    /// `nc`, HTTP/1.0 clients), so a client that closed its socket is
    /// noticed when the answer is written, or at `response_timeout`; over
    /// HTTP/2, which has no half-close, the FIN gives up every response
    /// the application still owes on that connection. Race it against slow
    /// work (a query, a long poll) to drop that work once its answer can
    /// go nowhere, as hyper drops a service's future with its connection
    /// (the tower path does so).
    ///
    /// Cancel-safe: a `closed()` future dropped before it is ready loses
    /// nothing, and a new one sees the close. Every task awaiting it is
    /// woken (the responder is `Sync`: several may await one close).
    ///
    /// ```
    /// # async fn query() -> Vec<u8> { Vec::new() }
    /// # async fn example(mut responder: falconet_server::Responder) {
    /// tokio::select! {
    ///     rows = query() => { let _ = responder.body(&rows); }
    ///     () = responder.closed() => {} // the client left: stop querying
    /// }
    /// # }
    /// ```
    pub fn closed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.wanted.given_up()
    }

    /// `work`, unless the response is given up first
    /// ([`closed`](Self::closed)): then `None`, and the caller drops the
    /// work, as hyper drops a service's future with its connection.
    /// Without this, work that never finished outlived its client, its
    /// connection's slot and the server.
    #[cfg(any(feature = "tokio", feature = "tower"))]
    pub(crate) async fn unless_closed<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        let (mut work, mut closed) = (std::pin::pin!(work), std::pin::pin!(self.closed()));
        std::future::poll_fn(|cx| {
            if closed.as_mut().poll(cx).is_ready() {
                tracing::debug!("the answer can go nowhere: the work for it is dropped");
                return Poll::Ready(None);
            }
            work.as_mut().poll(cx).map(Some)
        })
        .await
    }

    /// Sets the status (200 unless set).
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] after a header or the body.
    pub fn status(&mut self, status: Status) -> Result<&mut Self, ResponseError> {
        self.encoder.status(status)?;
        Ok(self)
    }

    /// Adds a header field.
    ///
    /// # Errors
    /// As [`Response::header`].
    pub fn header(
        &mut self,
        name: &str,
        value: impl AsRef<[u8]>,
    ) -> Result<&mut Self, ResponseError> {
        let fields = self.fields();
        self.encoder.header(&mut self.buf, &fields, name, value.as_ref())?;
        Ok(self)
    }

    /// Adds a header field checked at compile time.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    pub fn field(&mut self, field: Field) -> Result<&mut Self, ResponseError> {
        let fields = self.fields();
        self.encoder.field(&mut self.buf, &fields, field)?;
        Ok(self)
    }

    /// Asks to close the connection after this response.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    pub fn close(&mut self) -> Result<&mut Self, ResponseError> {
        self.encoder.close()?;
        Ok(self)
    }

    /// Sends the whole body (with `Content-Length`) and completes the
    /// response. Does not wait for back-pressure: the bytes are already in
    /// memory.
    ///
    /// # Errors
    /// As [`Response::body`], and [`ResponseError::Closed`],
    /// [`ResponseError::NoMemory`].
    pub fn body(mut self, body: &[u8]) -> Result<(), ResponseError> {
        let fields = self.fields();
        self.settle();
        self.encoder.sized_head(&mut self.buf, &fields, body.len() as u64)?;
        self.put_buf()?;
        if self.encoder.sends_body() {
            self.put(body)?;
        }
        self.complete()
    }

    /// Sends a piece of a streamed body, first waiting while the client is
    /// 256 KiB behind (64 KiB on an HTTP/2 stream). Polled on the server's
    /// worker (a `block_on` inside `respond`), it does not wait: see
    /// [`write_blocking`](Self::write_blocking). The wait comes before
    /// the piece, which then goes in whole (or not at all, if the future
    /// is dropped while it waits): write a large body in pieces of the
    /// pause's size or so, and a slow client holds up the producer with
    /// no more than that buffered; one piece larger than the pool has room
    /// for fails with [`ResponseError::NoMemory`].
    ///
    /// # Errors
    /// [`ResponseError::Finished`] after [`body`](Self::body) or
    /// [`finish`](Self::finish), [`ResponseError::Closed`],
    /// [`ResponseError::NoMemory`], [`ResponseError::Deadlock`].
    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        let writer = self.writer.as_mut().ok_or(ResponseError::Closed)?;
        let flushed = if crate::worker::waits_forever() {
            // Driven on a worker (a `block_on` inside `respond`): see
            // `write_blocking`.
            one_look(writer)?
        } else {
            writer.flush().await
        };
        if let Err(error) = flushed {
            return Err(self.abandon(error));
        }
        self.write_now(bytes)
    }

    /// [`write`](Self::write), waiting on this thread.
    ///
    /// # Not on the server's worker
    /// Inside [`Handler::respond`](crate::Handler::respond) this runs on
    /// the worker's thread, which is the one that sends the bytes waited
    /// for: a wait there would never end (and stall every connection of
    /// that worker). So there it does not wait: while the client is
    /// behind by the pause threshold (256 KiB; 64 KiB on an HTTP/2 stream)
    /// it fails with [`ResponseError::Deadlock`], writing nothing; move the
    /// responder to a thread or a task to stream more.
    ///
    /// # Errors
    /// As [`write`](Self::write), and [`ResponseError::Deadlock`].
    pub fn write_blocking(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        let writer = self.writer.as_mut().ok_or(ResponseError::Closed)?;
        let flushed =
            if crate::worker::on_worker() { one_look(writer)? } else { writer.flush_blocking() };
        if let Err(error) = flushed {
            return Err(self.abandon(error));
        }
        self.write_now(bytes)
    }

    /// Completes the response: an empty body if none was sent, the end of
    /// a streamed one.
    ///
    /// # Errors
    /// [`ResponseError::Closed`], [`ResponseError::NoMemory`].
    pub fn finish(mut self) -> Result<(), ResponseError> {
        let fields = self.fields();
        self.settle();
        self.encoder.finish(&mut self.buf, &fields);
        self.put_buf()?;
        self.complete()
    }

    /// [`finish`](Self::finish) with trailer fields after the body (a
    /// checksum, a status computed while streaming, gRPC's
    /// `grpc-status`): over HTTP/1.1 in the last chunk of a chunked body
    /// (RFC 9112 §7.1.2; a response not yet streaming starts one for
    /// them), over HTTP/2 as a HEADERS frame that ends the stream (RFC
    /// 9113 §8.1). Fields trailers may not carry (RFC 9110 §6.5.1:
    /// `content-length`, `content-type`, `host`, `set-cookie`, connection
    /// fields and the like, hyper's list) are left out. Dropped where the
    /// framing has no place for them: HTTP/1.0, a `HEAD` response, a
    /// status without content (1xx, 204, 205, 304).
    /// A client that did not send `TE: trailers` may discard them (hyper
    /// sends HTTP/1.1 trailers only to one that did: check
    /// [`Request::header`](crate::Request::header) in `head` to do the
    /// same).
    ///
    /// # Errors
    /// As [`finish`](Self::finish).
    pub fn finish_with_trailers(mut self, trailers: &Trailers) -> Result<(), ResponseError> {
        let lines = trailers.response_lines();
        if lines.is_empty() {
            return self.finish();
        }
        if !self.encoder.is_http2()
            && self.encoder.head_open()
            && self.encoder.chunked()
            && self.encoder.sends_body()
        {
            // Only a chunked body carries trailers over HTTP/1.1.
            let fields = self.fields();
            self.settle();
            self.encoder.start_stream(&mut self.buf, &fields)?;
        }
        self.finish_with_lines(lines)
    }

    /// [`finish`](Self::finish) with trailer fields (field lines, checked):
    /// in the last chunk of a chunked HTTP/1.1 body, as a HEADERS frame
    /// ending an HTTP/2 stream (handed to the worker with the output
    /// pipe's end), dropped where the framing cannot carry them
    /// ([`Encoder::finish_with_trailers`]).
    pub(crate) fn finish_with_lines(mut self, trailers: Vec<u8>) -> Result<(), ResponseError> {
        let fields = self.fields();
        self.settle();
        if self.encoder.is_http2() {
            self.encoder.finish(&mut self.buf, &fields);
            if self.encoder.sends_body() {
                self.wanted.set_trailers(trailers);
            }
        } else {
            self.encoder.finish_with_trailers(&mut self.buf, &fields, &trailers);
        }
        self.put_buf()?;
        self.complete()
    }

    /// [`Response::declare_length`], for a deferred response.
    #[cfg(feature = "tower")]
    pub(crate) fn declare_length(&mut self, length: u64) -> Result<(), ResponseError> {
        self.encoder.declare_length(length)
    }

    /// [`Response::unsized_head`], for a deferred `HEAD` response.
    #[cfg(feature = "tower")]
    pub(crate) fn finish_unsized_head(mut self) -> Result<(), ResponseError> {
        let fields = self.fields();
        self.settle();
        self.encoder.unsized_head(&mut self.buf, &fields)?;
        self.put_buf()?;
        self.complete()
    }

    /// Gives the response up: `500` if nothing was sent yet, else the
    /// connection closes. Dropping the responder does the same.
    pub fn fail(self) {}

    /// Whether the connection is gone (nothing written will be read).
    pub fn is_closed(&self) -> bool {
        self.writer.as_ref().is_none_or(Writer::is_reader_closed)
    }

    fn write_now(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        let fields = self.fields();
        self.settle();
        self.encoder.start_stream(&mut self.buf, &fields)?;
        if !bytes.is_empty() && self.encoder.sends_body() {
            self.encoder.chunk_prefix(&mut self.buf, bytes.len());
            self.put_buf()?;
            self.put(bytes)?;
            self.encoder.chunk_suffix(&mut self.buf);
        }
        self.put_buf()
    }

    /// The `Server` and `Date` fields, rendered the first time (when the
    /// head is about to be written). A head not yet ended closes the connection if the
    /// worker asked (the server is shutting down).
    fn fields(&mut self) -> [u8; FIELDS_LEN] {
        if self.link.close_asked() {
            // After the head's end, too late: the worker closes anyway.
            let _ = self.encoder.close();
        }
        *self.fields.get_or_insert_with(|| *DateCache::new().fields())
    }

    /// The head is about to end (and go into the pipe): settles `Expect:
    /// 100-continue` on a lent body. Until then the head is all that
    /// `buf` holds.
    fn settle(&mut self) {
        if self.encoder.head_open() {
            let settled = self.link.expect.settle_elsewhere();
            settle_continue(settled, &mut self.encoder, &mut self.buf, Some(0));
        }
    }

    fn put_buf(&mut self) -> Result<(), ResponseError> {
        let buf = std::mem::take(&mut self.buf);
        let result = self.put(&buf);
        self.buf = buf;
        self.buf.clear();
        result
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let writer = self.writer.as_mut().ok_or(ResponseError::Closed)?;
        match writer.put_slice(bytes) {
            Ok(()) => Ok(()),
            Err(error) => Err(self.abandon(error.error())),
        }
    }

    /// The response is complete: tell the connection whether it stays
    /// open, and end the output pipe.
    fn complete(&mut self) -> Result<(), ResponseError> {
        let writer = self.writer.take().ok_or(ResponseError::Closed)?;
        if !self.encoder.keep_alive() {
            self.link.set_close_after();
        }
        writer.close();
        Ok(())
    }

    /// Abandons the response after a pipe error (the drop of the writer
    /// tells the connection), and says why.
    fn abandon(&mut self, error: WriteError) -> ResponseError {
        self.writer = None;
        match error {
            WriteError::Lease(_) => ResponseError::NoMemory,
            _ => ResponseError::Closed,
        }
    }
}

/// A response's head, encoded by `encoder` into `out` from `head_at`
/// (`None`: it began before it could be known), is about to end, and
/// `Expect: 100-continue` on the connection's lent body was settled
/// (the protocol is in [`crate::expect`]): acts on it. A body the
/// application read gets its `100 (Continue)` in front of the head; one
/// never read, or a 100 that cannot go in front, closes the connection
/// after this response instead (the client, told nothing, may or may not
/// send the body).
pub(crate) fn settle_continue(
    settled: Continue,
    encoder: &mut Encoder,
    out: &mut Vec<u8>,
    head_at: Option<usize>,
) {
    match (settled, head_at) {
        (Continue::Nothing, _) => {}
        (Continue::Send, Some(at)) => {
            out.splice(at..at, CONTINUE.iter().copied());
        }
        (Continue::Send | Continue::Unsolicited, _) => {
            // Cannot fail: the head has not ended.
            let _ = encoder.close();
        }
    }
}

/// The flush of a responder's pipe on a worker's thread, which must not
/// wait for the worker: one look, ready below the pause threshold;
/// [`ResponseError::Deadlock`] where it would wait.
fn one_look(writer: &mut Writer) -> Result<Result<(), WriteError>, ResponseError> {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(writer.flush()).poll(&mut cx) {
        Poll::Ready(flushed) => Ok(flushed),
        Poll::Pending => Err(ResponseError::Deadlock),
    }
}

#[cfg(test)]
mod tests;
