//! HTTP/1.x over a pipe: request heads, bodies and responses, in order.
//!
//! A connection is in one of four phases:
//!
//! ```text
//!            head complete, no body: respond
//!          +-------------------------------+
//!          v                               |
//!   +-------------+  head with a body  +---------+
//!   |    Head     | -----------------> |  Body   | -- last byte: respond --> Head
//!   +-------------+                    +---------+
//!     |        |                         ^  (a returned body's rest is drained here,
//!     |        | head with a body,       |   without the handler)
//!     |        | stream_body(): respond  |
//!     |        v at once, body lent      | returned unfinished
//!     |   +---------+ --returned done--> Head
//!     |   |  Lent   |
//!     |   +---------+ --returned broken--> Closed
//!     | bad input, Connection: close, end of stream mid-request
//!     v
//!   +-------------+
//!   |   Closed    |  (the last response is flushed, then the socket closes)
//!   +-------------+
//! ```
//!
//! A response that ends the connection (`Connection: close`, an HTTP/1.0
//! client) while the application still reads the lent body leaves the
//! phase `Lent` (`closing`): the rest of the body is the application's to
//! read, and the connection closes when the body comes back.
//!
//! Orthogonally, a response may be *awaited*: deferred to an application
//! thread ([`Response::defer`](crate::Response::defer)). While one is, no
//! new head is parsed (pipelined requests keep their order; their bytes
//! stay unexamined in the pipe, which bounds how far input runs ahead),
//! though a body being drained still is.
//!
//! Each call to [`Http1::process`] takes everything the pipe holds and
//! answers every complete request in it, appending responses to one
//! output buffer that the connection writes once. It stops early when that
//! buffer passes its bound: the unparsed bytes then stay unexamined in the
//! pipe, which pauses the socket reader at its threshold, so a client that
//! pipelines without reading is pushed back by TCP, not buffered.
//!
//! Heads are parsed in place when they sit in one pool block (nearly
//! always) and from a copy in the worker's scratch buffer when they span
//! blocks. A partial head is re-parsed only when a new line end arrives,
//! so a head sent a byte at a time costs one parse per line, not per byte
//! (and empty lines before it are few: `MAX_LEADING_EMPTY`).

// The parts: head (the request line and fields parsed, a partial head
// judged), fields (the fields that frame, route or ask, checked), body
// (read on the worker or lent to the application).
mod body;
mod fields;
mod head;
#[cfg(test)]
mod tests;

use self::body::body;
use self::fields::Fields;
use std::mem::MaybeUninit;
use std::sync::Arc;

use falconet_pipe::{Chunks, ReadGuard, Reader};

use crate::chunked::{ChunkedDecoder, ChunkedError};
use crate::handler::{BodyLength, Handler, Request, Status, Version};
use crate::link::Returned;
use crate::response::{Answered, AppSlots, BodyOffer, Response};
use crate::session::Context;
use crate::syntax::parse_decimal;
use crate::target::{self, KnownHost, TargetError};
use crate::trailers::Trailers;
use crate::wire::Encoder;

/// Header fields a head may have at most, whatever the options say (the
/// parser's array lives on the stack).
pub const MAX_HEADERS_LIMIT: usize = 256;

/// What the connection should do after [`Session::process`](crate::Session::process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every buffered byte was handled: write the output, read more.
    NeedInput,
    /// The output buffer is full: write it before parsing more.
    OutputFull,
    /// Write the output, then close.
    Close,
    /// The application has the exchange (a deferred response, or a lent
    /// request body): write the output; the connection resumes when the
    /// application wakes it.
    Waiting,
}

/// Where a connection's HTTP/1 exchange stands.
#[derive(Debug)]
pub(crate) struct Http1<S> {
    phase: Phase<S>,
    /// Bytes of the current partial head already parsed without success.
    scanned: usize,
    /// Heads parsed whole on this connection (wrapping), for the timer:
    /// each head gets its own header timeout.
    heads: u64,
    /// A deferred response is in flight.
    awaiting: bool,
    /// The connection closes once the application is done with the
    /// exchange: when the deferred response in flight has ended (the lent
    /// body failed, or the client's input ended behind the response), or,
    /// for a response that ended with `Connection: close` while the
    /// application still reads the body, when the body comes back (its
    /// rest is the application's until then, not the linger's to discard).
    closing: bool,
    /// The client's error that failed the lent body (400, 413), the answer
    /// if the deferred response fails before its head.
    failure: Option<Status>,
    /// The connection's first request may be answered by a response the
    /// close ends (see [`crate::wire::may_end_by_close`]): sent in part
    /// when the connection closes, the close must say it was cut off.
    /// Cleared by any bytes parsed after that exchange (a next head, valid
    /// or refused, or empty lines).
    first_ends_by_close: bool,
    /// The last request asked for h2c (`Upgrade`), for the session.
    upgrade: Option<crate::h2::upgrade::Upgrade>,
    /// The last valid Host value, to check the next one against.
    known_host: KnownHost,
    /// The client's address, for each [`Request`].
    pub(crate) peer: Option<std::net::SocketAddr>,
    /// Set by each lend, for the session: `Some(length, after)` for a
    /// `Content-Length` body (`after`: its bytes already in the pipe),
    /// `None` for a chunked one (whose end only its reader finds).
    pub(crate) lent_length: Option<Option<(u64, u64)>>,
    /// Where the output stood when `respond` was called, until it returns:
    /// after a panic in it, what follows is a partial response.
    answering: Option<usize>,
    /// The trailer section of the body being read for the handler (field
    /// lines), and its fields: their memory is kept between requests up
    /// to `trailers::KEPT_BYTES`, so that the usual trailers cost no
    /// allocation per request once they have been seen.
    trailer_lines: Vec<u8>,
    trailers: Trailers,
}

#[derive(Debug)]
enum Phase<S> {
    Head,
    Body(Exchange<S>),
    /// The body is with the application.
    Lent,
    Closed,
}

/// A request whose body is arriving.
#[derive(Debug)]
struct Exchange<S> {
    /// `None` once answered: the body is drained without the handler.
    state: Option<S>,
    framing: Framing,
    received: u64,
    version: Version,
    head_only: bool,
    keep_alive: bool,
    /// `Expect: 100-continue` on a body the handler reads itself: the 100
    /// waits for the application's first read (see [`crate::link`]).
    expects_continue: bool,
}

/// How a request body is framed, and how much of it is left.
#[derive(Debug)]
pub(crate) enum Framing {
    /// Bytes left of a `Content-Length` body.
    Length(u64),
    Chunked(ChunkedDecoder),
    /// An HTTP/2 stream's body: its own pipe holds the data alone, and
    /// the pipe's end is the body's end.
    Stream,
}

impl Framing {
    /// Whether the body has ended.
    pub(crate) fn is_done(&self) -> bool {
        match self {
            Self::Length(left) => *left == 0,
            Self::Chunked(decoder) => decoder.is_done(),
            // Its pipe's end says so, not the framing.
            Self::Stream => false,
        }
    }
}

/// What a head came to.
enum Head<S> {
    /// Not complete yet.
    Partial,
    /// Parsed (and answered, when it has no body); `usize` bytes used.
    Done(usize),
    /// Parsed with a body to come.
    Body(usize, Exchange<S>),
    /// Parsed with a body the handler reads itself (`stream_body`).
    Stream(usize, Exchange<S>),
    /// Answered with an error; the connection closes.
    Refused,
}

/// One step within one read.
enum Step<S> {
    /// Everything buffered was examined.
    Wait,
    /// Stop: output is full, or a response was deferred (the rest stays
    /// unexamined).
    Pause,
    /// Stop: closing.
    Close,
    /// Stop: lend this body to the handler, once the read is released.
    Lend(Exchange<S>),
}

impl<S> Http1<S> {
    pub(crate) fn new() -> Self {
        Self {
            phase: Phase::Head,
            scanned: 0,
            first_ends_by_close: false,
            heads: 0,
            awaiting: false,
            closing: false,
            failure: None,
            upgrade: None,
            known_host: KnownHost::new(),
            peer: None,
            lent_length: None,
            answering: None,
            trailer_lines: Vec::new(),
            trailers: Trailers::new(),
        }
    }

    /// Heads parsed whole on this connection (wrapping): a change tells
    /// the timer that the head it timed has ended.
    pub(crate) fn heads(&self) -> u64 {
        self.heads
    }

    /// Whether the connection's first request, and nothing after it, has
    /// been parsed, and its response may be one the close ends (HTTP/1.0,
    /// not `HEAD`).
    pub(crate) fn first_ends_by_close(&self) -> bool {
        self.first_ends_by_close
    }

    /// Whether bytes of the next head have come (and not yet its end).
    pub(crate) fn head_begun(&self) -> bool {
        matches!(self.phase, Phase::Head) && self.scanned > 0
    }

    /// Whether no request is under way (between requests, nothing parsed of
    /// the next, no response awaited).
    pub(crate) fn is_between_requests(&self) -> bool {
        matches!(self.phase, Phase::Head) && self.scanned == 0 && !self.awaiting
    }

    /// Whether a request body is arriving (to the handler, the
    /// application, or the drain).
    pub(crate) fn in_body(&self) -> bool {
        matches!(self.phase, Phase::Body(_) | Phase::Lent)
    }

    /// Whether the application has the exchange (a deferred response or a
    /// lent body).
    pub(crate) fn with_application(&self) -> bool {
        self.awaiting || matches!(self.phase, Phase::Lent)
    }

    /// Whether the request under way was answered in full while its body
    /// still arrives (answered at once, its rest drained or lent; or a
    /// deferred answer that finished): no status may follow it.
    pub(crate) fn answered(&self) -> bool {
        !self.awaiting
            && match &self.phase {
                Phase::Body(exchange) => exchange.state.is_none(),
                // A lent body's request was answered by the lend (at once,
                // or deferred and since finished: no longer awaited).
                Phase::Lent => true,
                Phase::Head | Phase::Closed => false,
            }
    }

    /// A handler method panicked while this parser drove it: where the
    /// output stood when the panicking `respond` began (`None`: the panic
    /// was elsewhere, in `head`, `body` or a state's drop).
    pub(crate) fn panic_mark(&mut self) -> Option<usize> {
        self.answering.take()
    }

    /// Whether the request body is lent to the application.
    pub(crate) fn is_lent(&self) -> bool {
        matches!(self.phase, Phase::Lent)
    }

    /// Whether the connection closes once the application is done with
    /// the exchange (see `closing`): nothing after it is parsed.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing
    }

    /// The deferred response ended: `keep_alive` false closes the
    /// connection after it.
    pub(crate) fn response_done(&mut self, keep_alive: bool) {
        self.awaiting = false;
        if self.closing {
            // The body is back (it failed) or was never lent.
            self.phase = Phase::Closed;
        } else if !keep_alive {
            self.close_after_body();
        }
    }

    /// The response is complete and the connection must close: now, or,
    /// while the application still reads the request body, once the body
    /// is back (a lent phase not `closing` is a body still out).
    fn close_after_body(&mut self) {
        if self.is_lent() {
            self.closing = true;
        } else {
            self.phase = Phase::Closed;
        }
    }

    /// What to answer when the deferred response fails before its head:
    /// the client's error that failed its body, or 500.
    pub(crate) fn failure_status(&self) -> Status {
        self.failure.unwrap_or(Status::INTERNAL_SERVER_ERROR)
    }

    /// The client's error that failed the lent body (400, 413), if any.
    pub(crate) fn client_failure(&self) -> Option<Status> {
        self.failure
    }

    /// The lent body came back: resume after it, drain its rest, or close
    /// after a failed one.
    pub(crate) fn returned(&mut self, returned: Returned) {
        if !self.is_lent() {
            return;
        }
        if self.closing && !self.awaiting {
            // Its response ended with `Connection: close`: nothing follows.
            self.phase = Phase::Closed;
            return;
        }
        self.phase = match returned.framing {
            // The response in flight (which may be the answer to this very
            // failure) goes out first; then the connection closes.
            None if self.awaiting => {
                self.failure = returned.status;
                self.closing = true;
                return;
            }
            None => Phase::Closed,
            Some(framing) if framing.is_done() => Phase::Head,
            Some(framing) => Phase::Body(Exchange {
                state: None,
                framing,
                received: returned.received,
                // Unused: the request was answered.
                version: Version::Http11,
                head_only: false,
                keep_alive: true,
                expects_continue: false,
            }),
        };
    }

    /// Whether the exchange is over (the connection closes after its output).
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// Ends the exchange: nothing more is parsed.
    /// The h2c upgrade the last request asked for (once).
    pub(crate) fn take_upgrade(&mut self) -> Option<crate::h2::upgrade::Upgrade> {
        self.upgrade.take()
    }

    pub(crate) fn close(&mut self) {
        self.phase = Phase::Closed;
    }

    /// Handles everything `input` holds; see [`Progress`].
    pub(crate) fn process<H>(
        &mut self,
        input: &Arc<Reader>,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) -> Progress
    where
        H: Handler<State = S>,
    {
        loop {
            if self.is_closed() {
                return Progress::Close;
            }
            if out.len() >= cx.limits.max_pending_output {
                return Progress::OutputFull;
            }
            if self.is_lent() || (self.awaiting && matches!(self.phase, Phase::Head)) {
                return Progress::Waiting;
            }
            let guard = match input.try_read() {
                Ok(Some(guard)) => guard,
                Ok(None) => return Progress::NeedInput,
                // One reader, used by one thread: cannot happen; close.
                Err(_) => return Progress::Close,
            };
            let len = guard.len();
            let completed = guard.is_completed();
            let mut cursor = Cursor::new(&guard);
            let mut pos = 0;
            let step = loop {
                if out.len() >= cx.limits.max_pending_output {
                    break Step::Pause;
                }
                match &mut self.phase {
                    Phase::Closed => break Step::Close,
                    Phase::Head if pos == len && completed && self.awaiting => {
                        // The client's input ended (its FIN came with the
                        // request) behind a deferred response: the response
                        // goes out first, then the connection closes.
                        self.closing = true;
                        break Step::Pause;
                    }
                    Phase::Head if pos == len => {
                        break if completed { Step::Close } else { Step::Wait };
                    }
                    Phase::Head if self.awaiting => break Step::Pause,
                    Phase::Head => {
                        match self.head(&guard, cursor.at(pos), pos, out, handler, cx, app) {
                            Head::Partial if completed => break Step::Close,
                            Head::Partial => break Step::Wait,
                            Head::Done(used) => pos += used,
                            Head::Body(used, exchange) => {
                                pos += used;
                                self.phase = Phase::Body(exchange);
                            }
                            Head::Stream(used, exchange) => {
                                pos += used;
                                break Step::Lend(exchange);
                            }
                            Head::Refused => break Step::Close,
                        }
                    }
                    Phase::Lent => break Step::Pause,
                    Phase::Body(_) if pos == len => {
                        break if completed { Step::Close } else { Step::Wait };
                    }
                    Phase::Body(exchange) => {
                        let piece = cursor.at(pos);
                        let kept = (&mut self.trailer_lines, &mut self.trailers);
                        match body(exchange, piece, handler, cx.limits.max_body, kept) {
                            Ok((used, false)) => pos += used,
                            Ok((used, true)) => {
                                pos += used;
                                let more = pos < len;
                                self.respond(out, handler, cx, app, more);
                            }
                            Err(status) => {
                                // A body drained after its response was given
                                // (or while it is being written) can only
                                // close: a status here would land inside it.
                                if exchange.state.is_some() && !self.awaiting {
                                    refuse(out, cx, status);
                                }
                                break Step::Close;
                            }
                        }
                    }
                }
            };
            let examined = match step {
                Step::Pause | Step::Lend(_) => pos,
                // An h2c upgrade: what follows the request (the client's
                // preface and first frames, often in the same segment) is
                // the HTTP/2 side's to read, unexamined.
                Step::Close if self.upgrade.is_some() => pos,
                Step::Wait | Step::Close => len,
            };
            // Cannot fail: both positions are within the read.
            let _ = guard.advance_to(pos, examined);
            match step {
                Step::Wait => {}
                // Deferred or lent: the loop's first check says so.
                Step::Pause if self.with_application() => {}
                Step::Pause => return Progress::OutputFull,
                Step::Close => {
                    self.phase = Phase::Closed;
                    return Progress::Close;
                }
                Step::Lend(mut exchange) => {
                    // A client that sent body bytes behind the head does
                    // not wait for a 100.
                    exchange.expects_continue &= pos == len;
                    let after = u64::try_from(len - pos).unwrap_or(u64::MAX);
                    self.lent_length = Some(match exchange.framing {
                        Framing::Length(length) => Some((length, after)),
                        _ => None,
                    });
                    self.lend(exchange, input, out, handler, cx, app);
                }
            }
        }
    }

    /// Calls `respond` and settles what it did: answered now (closing if
    /// it asked to) or deferred.
    fn answer<H>(
        &mut self,
        state: S,
        encoder: Encoder,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) where
        H: Handler<State = S>,
    {
        self.answering = Some(out.len());
        let mut response = Response::new(out, cx.date.fields(), encoder, app);
        handler.respond(state, &mut response);
        self.answering = None;
        cx.requests += 1;
        match response.finish() {
            Answered::Now { keep_alive: true } => {}
            // A body taken (no longer offered) is the application's to
            // read on: the connection closes once it is back.
            Answered::Now { keep_alive: false } if app.offer.is_none() => self.close_after_body(),
            Answered::Now { keep_alive: false } => self.phase = Phase::Closed,
            Answered::Later => self.awaiting = true,
        }
    }

    /// The body is complete: answer it (unless it was answered already).
    fn respond<H>(
        &mut self,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
        more: bool,
    ) where
        H: Handler<State = S>,
    {
        let Phase::Body(exchange) = std::mem::replace(&mut self.phase, Phase::Head) else {
            return;
        };
        let Some(state) = exchange.state else { return };
        let keep_alive = keep_open(exchange.keep_alive, more, cx);
        let encoder = Encoder::new(exchange.version, exchange.head_only, keep_alive);
        self.answer(state, encoder, out, handler, cx, app);
    }
}

/// Whether the connection stays open after this response: as the client
/// asked, unless the server is shutting down and nothing else is buffered
/// (requests already received are still answered).
fn keep_open(keep_alive: bool, more: bool, cx: &Context) -> bool {
    keep_alive && (more || !cx.draining)
}

/// Writes an error response that closes the connection.
pub(crate) fn refuse(out: &mut Vec<u8>, cx: &Context, status: Status) {
    let mut encoder = Encoder::new(Version::Http11, false, false);
    // Cannot fail: a fresh response accepts a status and a body.
    let _ = encoder.status(status);
    let _ = encoder.body(out, cx.date.fields(), b"");
}

fn refused<S>(out: &mut Vec<u8>, cx: &Context, status: Status) -> Head<S> {
    refuse(out, cx, status);
    Head::Refused
}

/// Walks a read's blocks forward (positions only grow within a read), so
/// finding the block that holds a position costs nothing per request.
struct Cursor<'g> {
    chunks: Chunks<'g>,
    /// Stream position of `chunk`'s first byte, within the read.
    base: usize,
    chunk: &'g [u8],
}

impl<'g> Cursor<'g> {
    fn new(guard: &'g ReadGuard<'_>) -> Self {
        let mut chunks = guard.chunks();
        let chunk = chunks.next().unwrap_or_default();
        Self { chunks, base: 0, chunk }
    }

    /// The bytes from `pos` to the end of the block that holds it.
    fn at(&mut self, pos: usize) -> &'g [u8] {
        while pos >= self.base + self.chunk.len() {
            let Some(next) = self.chunks.next() else {
                return &[];
            };
            self.base += self.chunk.len();
            self.chunk = next;
        }
        &self.chunk[pos - self.base..]
    }
}
