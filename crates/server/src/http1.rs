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

/// Bytes of empty lines (CR and LF) after a request that leave the
/// connection idle: two CRLFs.
const MAX_IGNORED_EMPTY: usize = 4;

/// Bytes of empty lines (CR and LF) before a request line that are
/// ignored, eight CRLFs (RFC 9112 §2.2: a server SHOULD ignore at least
/// one); more is `400`. Each new line end parses the head again from its
/// start, empty lines included, so bare LFs trickled up to the head limit
/// cost the square of their number (an outside review: 0.5 CPU-seconds
/// per connection each header timeout).
const MAX_LEADING_EMPTY: usize = 16;

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

    /// Parses the head at `pos` (`first`: the rest of the block holding
    /// it); answers it when it has no body.
    #[allow(clippy::too_many_arguments)]
    fn head<H>(
        &mut self,
        guard: &ReadGuard<'_>,
        first: &[u8],
        pos: usize,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) -> Head<S>
    where
        H: Handler<State = S>,
    {
        let limits = cx.limits;
        let available = guard.len() - pos;
        let bytes: &[u8] = if first.len() == available || first.len() > limits.max_head {
            first
        } else {
            // The head spans blocks: parse a copy (at most one byte past the
            // limit, enough to tell that it is over).
            cx.scratch.clear();
            let want = available.min(limits.max_head + 1);
            let mut start = 0;
            for chunk in guard.chunks() {
                let end = start + chunk.len();
                if end > pos {
                    let from = pos.saturating_sub(start);
                    let take = (want - cx.scratch.len()).min(chunk.len() - from);
                    cx.scratch.extend_from_slice(&chunk[from..from + take]);
                    if cx.scratch.len() == want {
                        break;
                    }
                }
                start = end;
            }
            &cx.scratch
        };
        if bytes.first().is_some_and(|&b| b == b'\r' || b == b'\n') && too_many_empty(bytes) {
            return refused(out, cx, Status::BAD_REQUEST);
        }
        // Nothing new since the last attempt but bytes that neither end a
        // line nor are wrong wherever they stand: the parse would end the
        // same way, still partial. (Parsing again for every piece of a
        // head sent a byte at a time would cost the square of its length.)
        // A CR, a control byte, or any byte after a CR is judged at once:
        // `\r\n\rX` or `HTTP/1.a\r` is refused now, not at the header
        // timeout.
        if self.scanned > 0
            && self.scanned <= bytes.len()
            && bytes[self.scanned - 1] != b'\r'
            && !bytes[self.scanned..].iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
        {
            return self.partial(bytes, out, cx);
        }
        let mut headers =
            [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_LIMIT];
        // Set only for a request of a later HTTP/1 minor version.
        let mut as_http11: [httparse::Header<'_>; MAX_HEADERS_LIMIT];
        let mut parsed = httparse::Request::new(&mut []);
        let mut result =
            parsed.parse_with_uninit_headers(bytes, &mut headers[..limits.max_headers]);
        if result == Err(httparse::Error::Version) {
            match version_verdict(bytes) {
                Some(Verdict::Refuse(status)) => return refused(out, cx, status),
                Some(Verdict::AsHttp11(at)) => {
                    as_http11 = [httparse::EMPTY_HEADER; MAX_HEADERS_LIMIT];
                    result = match parse_as_http11(bytes, at, &mut as_http11[..limits.max_headers])
                    {
                        Ok(httparse::Status::Complete((used, request))) => {
                            parsed = request;
                            Ok(httparse::Status::Complete(used))
                        }
                        Ok(httparse::Status::Partial) => Ok(httparse::Status::Partial),
                        Err(error) => Err(error),
                    };
                }
                // The line has not ended: judge it when it has.
                None => return self.partial(bytes, out, cx),
            }
        }
        let used = match result {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) => return self.partial(bytes, out, cx),
            Err(httparse::Error::TooManyHeaders) => {
                return refused(out, cx, Status::HEADER_FIELDS_TOO_LARGE);
            }
            Err(_) => return refused(out, cx, Status::BAD_REQUEST),
        };
        self.scanned = 0;
        self.heads = self.heads.wrapping_add(1);
        let (Some(method), Some(target), Some(minor)) =
            (parsed.method, parsed.path, parsed.version)
        else {
            return refused(out, cx, Status::BAD_REQUEST);
        };
        let line = method.len() + target.len() + " HTTP/1.1".len() + 1;
        if method.len() + SHORTEST_REST > limits.max_request_line {
            // RFC 9112 3: a method longer than any implemented, 501 (too
            // long for a line with any target: not the target's fault).
            return refused(out, cx, Status::NOT_IMPLEMENTED);
        }
        if line > limits.max_request_line {
            return refused(out, cx, Status::URI_TOO_LONG);
        }
        if used > limits.max_head {
            return refused(out, cx, Status::HEADER_FIELDS_TOO_LARGE);
        }
        let version = if minor == 0 { Version::Http10 } else { Version::Http11 };
        let target = match target::parse(method, target) {
            Ok(target) => target,
            Err(TargetError::Invalid) => return refused(out, cx, Status::BAD_REQUEST),
            Err(TargetError::Connect) => return refused(out, cx, Status::NOT_IMPLEMENTED),
        };
        let fields = match Fields::read(parsed.headers, version, &mut self.known_host) {
            Ok(fields) => fields,
            Err(status) => return refused(out, cx, status),
        };
        // An absolute-form target names the authority; the Host field's
        // value is then ignored (RFC 9112 §3.2.2). Otherwise a Host that
        // names no host (`Host: `, `Host: :80`) makes the target URI an
        // `http` URI without one: 400, as HTTP/2 refuses such an
        // `:authority`. (HTTP/1.0 without Host leaves the authority
        // unknown, not empty: served.)
        if target.authority.is_none() && fields.host.is_some_and(target::names_no_host) {
            return refused(out, cx, Status::BAD_REQUEST);
        }
        let authority = target.authority.map(str::as_bytes).or(fields.host).unwrap_or_default();
        if let BodyLength::Known(length) = fields.body
            && length > limits.max_body
        {
            return refused(out, cx, Status::CONTENT_TOO_LARGE);
        }
        if fields.upgrade_h2c
            && version == Version::Http11
            && fields.body == BodyLength::Empty
            && crate::h2::upgrade::may_follow(&bytes[used..])
            && let Some(upgrade) = crate::h2::upgrade::from_http1(
                method,
                target.path_and_query,
                std::str::from_utf8(authority).unwrap_or_default(),
                parsed.headers,
            )
        {
            if fields.expect_continue {
                // RFC 9110 §7.8: a server MUST send 100 before 101 when
                // both were asked for.
                out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            // The connection becomes HTTP/2; the session takes it over.
            self.upgrade = Some(upgrade);
            self.phase = Phase::Closed;
            return Head::Done(used);
        }
        let head_only = method == "HEAD";
        let request = Request {
            method,
            target: target.path_and_query,
            authority,
            version,
            headers: parsed.headers,
            body: fields.body,
            stream: std::cell::Cell::new(false),
            peer: self.peer,
        };
        let state = handler.head(&request);
        let framing = match fields.body {
            BodyLength::Empty => {
                let keep_alive = keep_open(fields.keep_alive, used < available, cx);
                let encoder = Encoder::new(version, head_only, keep_alive);
                self.answer(state, encoder, out, handler, cx, app);
                return Head::Done(used);
            }
            BodyLength::Known(length) => Framing::Length(length),
            BodyLength::Chunked => Framing::Chunked(ChunkedDecoder::new()),
        };
        let expects_continue = fields.expect_continue && version == Version::Http11;
        let lent = request.stream.get();
        if expects_continue && !lent {
            // The server reads this body for the handler: ask for it now.
            out.extend_from_slice(crate::expect::CONTINUE);
        }
        let exchange = Exchange {
            state: Some(state),
            framing,
            received: 0,
            version,
            head_only,
            keep_alive: fields.keep_alive,
            expects_continue: expects_continue && lent,
        };
        if lent { Head::Stream(used, exchange) } else { Head::Body(used, exchange) }
    }

    /// Answers a request whose body the handler reads itself: offers the
    /// body to `respond` (the read of the head is released, so the
    /// application may read at once), then lends it, or drains it when it
    /// was not taken.
    fn lend<H>(
        &mut self,
        mut exchange: Exchange<S>,
        input: &Arc<Reader>,
        out: &mut Vec<u8>,
        handler: &H,
        cx: &mut Context,
        app: &mut AppSlots,
    ) where
        H: Handler<State = S>,
    {
        let Some(state) = exchange.state.take() else { return };
        if exchange.expects_continue {
            app.link().expect.lend(true);
        } else if let Some(link) = app.existing_link() {
            link.expect.lend(false);
        }
        app.offer = Some(BodyOffer {
            reader: Arc::clone(input),
            framing: std::mem::replace(&mut exchange.framing, Framing::Length(0)),
            received: 0,
            max_body: cx.limits.max_body,
            flow: None,
        });
        let keep_alive = keep_open(exchange.keep_alive, false, cx);
        let encoder = Encoder::new(exchange.version, exchange.head_only, keep_alive);
        self.phase = Phase::Lent;
        let start = out.len();
        self.answer(state, encoder, out, handler, cx, app);
        if exchange.expects_continue
            && self.closing
            && !out[start..].starts_with(crate::expect::CONTINUE)
        {
            // The client waits for a 100 before it sends the body, and
            // got a closing answer without one: no body will come.
            self.phase = Phase::Closed;
        }
        if let Some(offer) = app.offer.take() {
            // Not taken: the server reads the body and discards it.
            exchange.framing = offer.framing;
            if !self.is_closed() {
                self.phase = Phase::Body(exchange);
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

    /// The head is incomplete: wait, or refuse it if it is already too long.
    fn partial(&mut self, bytes: &[u8], out: &mut Vec<u8>, cx: &Context) -> Head<S> {
        let limits = cx.limits;
        // The longest line is `max_request_line` bytes and its CRLF: only
        // past that, with no line end, is it certainly too long (as the
        // whole head is judged, wherever the line was split).
        let longest = limits.max_request_line + 2;
        // httparse skips empty lines before the request line.
        let start = bytes.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(bytes.len());
        let line = &bytes[start..];
        let line_seen = line[..line.len().min(longest)].contains(&b'\n');
        if !line_seen && line.len() >= longest {
            // Malformed so far: what the whole head would get first.
            if let Some(status) = malformed_so_far(bytes, limits.max_headers) {
                return refused(out, cx, status);
            }
            // No space where a line with the shortest target would still
            // fit: the method alone is too long (RFC 9112 3: 501, as
            // judged once whole), else the target (414).
            let method_room = limits.max_request_line.saturating_sub(SHORTEST_REST);
            let method_ended = line[..=method_room].contains(&b' ');
            let status = if method_ended { Status::URI_TOO_LONG } else { Status::NOT_IMPLEMENTED };
            return refused(out, cx, status);
        }
        if bytes.len() > limits.max_head {
            let status = malformed_so_far(bytes, limits.max_headers);
            return refused(out, cx, status.unwrap_or(Status::HEADER_FIELDS_TOO_LARGE));
        }
        if bytes.len() <= MAX_IGNORED_EMPTY && bytes.iter().all(|&b| b == b'\r' || b == b'\n') {
            // An empty line or two after a request (RFC 9112 §2.2: a
            // server SHOULD ignore at least one before a request line)
            // leaves the connection between requests: the keep-alive
            // rule, not the head's timeout and its 408, applies.
            self.scanned = 0;
            return Head::Partial;
        }
        self.scanned = bytes.len().max(1);
        Head::Partial
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

/// A request line's bytes besides its method, at their fewest: ` / HTTP/1.1`
/// (the line's limit counts neither its CRLF nor more). A method longer
/// than the limit less these is too long for any line: `501`, not `414`.
const SHORTEST_REST: usize = " / HTTP/1.1".len();

/// Whether the connection stays open after this response: as the client
/// asked, unless the server is shutting down and nothing else is buffered
/// (requests already received are still answered).
fn keep_open(keep_alive: bool, more: bool, cx: &Context) -> bool {
    keep_alive && (more || !cx.draining)
}

/// Feeds body bytes from `piece` to the handler, and the trailers that end
/// a chunked body (gathered in `kept`). Returns the bytes used and whether
/// the body is complete, or the status that refuses it.
fn body<H: Handler>(
    exchange: &mut Exchange<H::State>,
    piece: &[u8],
    handler: &H,
    max_body: u64,
    kept: (&mut Vec<u8>, &mut Trailers),
) -> Result<(usize, bool), Status> {
    match &mut exchange.framing {
        Framing::Length(left) => {
            let n = usize::try_from(*left).unwrap_or(usize::MAX).min(piece.len());
            if n > 0
                && let Some(state) = &mut exchange.state
            {
                handler.body(state, &piece[..n]);
            }
            *left -= n as u64;
            exchange.received += n as u64;
            Ok((n, *left == 0))
        }
        Framing::Chunked(decoder) => {
            let budget = max_body - exchange.received;
            let (lines, trailers) = kept;
            // Trailers only for a handler still reading (a drained body's
            // are discarded).
            let decoded = match exchange.state {
                Some(_) => decoder.decode_keeping(piece, budget, lines),
                None => decoder.decode(piece, budget),
            };
            let (used, data) = decoded.map_err(|error| match error {
                ChunkedError::Malformed => Status::BAD_REQUEST,
                ChunkedError::TooLarge => Status::CONTENT_TOO_LARGE,
            })?;
            if let Some(data) = data.filter(|d| !d.is_empty()) {
                exchange.received += data.len() as u64;
                if let Some(state) = &mut exchange.state {
                    handler.body(state, data);
                }
            }
            let done = decoder.is_done();
            if done && !lines.is_empty() {
                // The decoder checked every line's grammar.
                if let Some(state) = &mut exchange.state
                    && trailers.refill_from_lines(lines)
                {
                    handler.trailers(state, trailers);
                }
                trailers.clear_and_trim();
                lines.clear();
                if lines.capacity() > crate::trailers::KEPT_BYTES {
                    *lines = Vec::new();
                }
            }
            Ok((used, done))
        }
        // HTTP/2 bodies never reach the HTTP/1 parser.
        Framing::Stream => Ok((0, true)),
    }
}

/// Writes an error response that closes the connection.
pub(crate) fn refuse(out: &mut Vec<u8>, cx: &Context, status: Status) {
    let mut encoder = Encoder::new(Version::Http11, false, false);
    // Cannot fail: a fresh response accepts a status and a body.
    let _ = encoder.status(status);
    let _ = encoder.body(out, cx.date.fields(), b"");
}

/// Whether `bytes` start with more than [`MAX_LEADING_EMPTY`] bytes of
/// empty lines.
#[cold]
fn too_many_empty(bytes: &[u8]) -> bool {
    let empty =
        bytes.iter().take(MAX_LEADING_EMPTY + 1).take_while(|&&b| matches!(b, b'\r' | b'\n'));
    empty.count() > MAX_LEADING_EMPTY
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

/// The refusal a partial head too long to wait for would get once whole
/// for its bytes, which comes before any length's: `400` for bytes
/// httparse refuses, the version's verdict for a bad version slot; `None`
/// when nothing so far is malformed. (A head that arrived in pieces
/// without line ends was not parsed as each came.)
fn malformed_so_far(bytes: &[u8], max_headers: usize) -> Option<Status> {
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_LIMIT];
    let mut parsed = httparse::Request::new(&mut []);
    match parsed.parse_with_uninit_headers(bytes, &mut headers[..max_headers]) {
        Ok(_) | Err(httparse::Error::TooManyHeaders) => None,
        Err(httparse::Error::Version) => match version_verdict(bytes) {
            Some(Verdict::Refuse(status)) => Some(status),
            Some(Verdict::AsHttp11(_)) | None => None,
        },
        Err(_) => Some(Status::BAD_REQUEST),
    }
}

/// What to do with a request line httparse refused at its version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// Answer with this status: `505` for another major version, `400`
    /// for a line that is not `method SP target SP HTTP/...`.
    Refuse(Status),
    /// `HTTP/1.2` to `HTTP/1.9`: a later minor version of HTTP/1, served
    /// as HTTP/1.1 (RFC 9110 §2.5: a recipient SHOULD process it as the
    /// highest minor version it conforms to, and answers in that). The
    /// minor digit is at this index.
    AsHttp11(usize),
}

/// The verdict on a request line httparse refused at its version (see
/// [`Verdict`]): `400` unless the line is `method SP target SP
/// HTTP/DIGIT.DIGIT` (a lowercase name, an extra space, a malformed
/// version); `505` for another major version (`HTTP/2.0`, `HTTP/3.0`). `None` until the line has ended:
/// httparse refuses at the first bad byte, and what follows it may still
/// make a well-formed version malformed (`HTTP/00` of `HTTP/001.1 x`), so
/// only a whole line is judged, and a line split anywhere gets the same
/// answer.
fn version_verdict(bytes: &[u8]) -> Option<Verdict> {
    // httparse skips empty lines before the request line.
    let start = bytes.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(bytes.len());
    let line = &bytes[start..];
    let end = line.iter().position(|&b| b == b'\r' || b == b'\n')?;
    let line = &line[..end];
    let mut words = line.split(|&b| b == b' ');
    Some(match (words.next(), words.next(), words.next(), words.next()) {
        (Some(_), Some(_), Some(b"HTTP/1.2" | b"HTTP/1.3" | b"HTTP/1.4"), None)
        | (Some(_), Some(_), Some(b"HTTP/1.5" | b"HTTP/1.6" | b"HTTP/1.7"), None)
        | (Some(_), Some(_), Some(b"HTTP/1.8" | b"HTTP/1.9"), None) => {
            Verdict::AsHttp11(start + end - 1)
        }
        // A well-formed version (RFC 9112 2.3: `HTTP/` DIGIT `.` DIGIT)
        // of another major one; anything else in the slot is a malformed
        // line (`HTTP/1.`, `HTTP/1.2.3`, `HTTP/01.1`, `HTTP/9`: 400, 3).
        (Some(_), Some(_), Some([b'H', b'T', b'T', b'P', b'/', major, b'.', minor]), None)
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            Verdict::Refuse(Status::VERSION_NOT_SUPPORTED)
        }
        _ => Verdict::Refuse(Status::BAD_REQUEST),
    })
}

/// Parses a head whose version is a later HTTP/1 minor one (the digit at
/// `at`) as HTTP/1.1: a copy with that digit made `1` is parsed, and every
/// piece of the answer points back into `bytes` (the copy differs from it
/// in that one byte only, so each piece is the same bytes at the same
/// offset). Allocates; a client that sends these pays for them.
fn parse_as_http11<'h, 'b>(
    bytes: &'b [u8],
    at: usize,
    headers: &'h mut [httparse::Header<'b>],
) -> Result<httparse::Status<(usize, httparse::Request<'h, 'b>)>, httparse::Error> {
    let mut copy = bytes.to_vec();
    copy[at] = b'1';
    let mut parsed_headers = vec![httparse::EMPTY_HEADER; headers.len()];
    let mut parsed = httparse::Request::new(&mut parsed_headers);
    let used = match parsed.parse(&copy)? {
        httparse::Status::Complete(used) => used,
        httparse::Status::Partial => return Ok(httparse::Status::Partial),
    };
    let base = copy.as_ptr().addr();
    let back = |piece: &[u8]| {
        let from = piece.as_ptr().addr() - base;
        &bytes[from..from + piece.len()]
    };
    // The same bytes as the copy's, which httparse checked.
    let text = |piece: &str| {
        std::str::from_utf8(back(piece.as_bytes())).map_err(|_| httparse::Error::Token)
    };
    let n = parsed.headers.len();
    for (slot, header) in headers.iter_mut().zip(parsed.headers.iter()) {
        *slot = httparse::Header { name: text(header.name)?, value: back(header.value) };
    }
    let request = httparse::Request {
        method: parsed.method.map(text).transpose()?,
        path: parsed.path.map(text).transpose()?,
        version: Some(1),
        headers: &mut headers[..n],
    };
    Ok(httparse::Status::Complete((used, request)))
}

/// What the header fields say about framing and the connection.
struct Fields<'a> {
    body: BodyLength,
    keep_alive: bool,
    /// `Expect: 100-continue`: answered before a body is read, and before
    /// an upgrade's `101` (RFC 9110 §7.8), not for a request with neither.
    expect_continue: bool,
    /// The Host field's value (validated), if there is one.
    host: Option<&'a [u8]>,
    /// An `Upgrade` field names h2c.
    upgrade_h2c: bool,
}

impl<'a> Fields<'a> {
    /// Reads the fields that matter to the server, refusing a request whose
    /// framing is ambiguous (RFC 9112 §6), whose Host is missing, repeated
    /// or invalid (§3.2), or that it cannot serve.
    fn read(
        headers: &[httparse::Header<'a>],
        version: Version,
        known_host: &mut KnownHost,
    ) -> Result<Self, Status> {
        let mut length: Option<u64> = None;
        let mut transfer_encoding = false;
        let mut chunked = false;
        let mut unsupported_coding = false;
        let mut host: Option<&'a [u8]> = None;
        let mut close = false;
        let mut keep_alive_asked = false;
        let mut expect_continue = false;
        let mut upgrade_h2c = false;
        for header in headers {
            let name = header.name;
            // Dispatch on the length first: most fields are none of these.
            let field = match name.len() {
                4 => Field::Host,
                6 => Field::Expect,
                7 => Field::Upgrade,
                10 => Field::Connection,
                14 => Field::ContentLength,
                17 => Field::TransferEncoding,
                _ => continue,
            };
            if !is_named(name.as_bytes(), field.name().as_bytes()) {
                continue;
            }
            let value = header.value;
            match field {
                Field::ContentLength => {
                    let parsed = parse_decimal(value.trim_ascii()).ok_or(Status::BAD_REQUEST)?;
                    if length.is_some_and(|seen| seen != parsed) {
                        return Err(Status::BAD_REQUEST);
                    }
                    length = Some(parsed);
                }
                Field::TransferEncoding => {
                    transfer_encoding = true;
                    for coding in value
                        .split(|&b| b == b',')
                        .map(<[u8]>::trim_ascii)
                        .filter(|c| !c.is_empty())
                    {
                        if chunked {
                            // Chunked must be the last coding, and only once.
                            return Err(Status::BAD_REQUEST);
                        }
                        if coding.eq_ignore_ascii_case(b"chunked") {
                            chunked = true;
                        } else {
                            unsupported_coding = true;
                        }
                    }
                }
                Field::Host => {
                    // More than one Host line, or an invalid value: 400
                    // for any version (RFC 9112 §3.2).
                    if host.is_some() || !known_host.is_valid(value) {
                        return Err(Status::BAD_REQUEST);
                    }
                    // A valid value is ASCII; `Request::authority` reads it
                    // as text if a handler asks.
                    host = Some(value);
                }
                Field::Connection => {
                    for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                        close |= token.eq_ignore_ascii_case(b"close");
                        keep_alive_asked |= token.eq_ignore_ascii_case(b"keep-alive");
                    }
                }
                Field::Upgrade => upgrade_h2c |= crate::h2::upgrade::names_h2c(value),
                Field::Expect => {
                    // A list (RFC 9110 10.1.1), empty elements ignored
                    // (5.6.1.2): `100-continue` is the one expectation.
                    for element in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                        if element.is_empty() {
                            continue;
                        }
                        if !element.eq_ignore_ascii_case(b"100-continue") {
                            return Err(Status::EXPECTATION_FAILED);
                        }
                        expect_continue = true;
                    }
                }
            }
        }
        if transfer_encoding && length.is_some() {
            return Err(Status::BAD_REQUEST);
        }
        // Chunked not final: the body cannot be framed, a MUST 400 (§6.3)
        // ahead of the SHOULD 501 for a coding the server does not know.
        if transfer_encoding && !chunked {
            return Err(Status::BAD_REQUEST);
        }
        // HTTP/1.0 has no transfer codings: such a message's framing is
        // faulty (§6.1).
        if transfer_encoding && version == Version::Http10 {
            return Err(Status::BAD_REQUEST);
        }
        if unsupported_coding {
            return Err(Status::NOT_IMPLEMENTED);
        }
        if version == Version::Http11 && host.is_none() {
            return Err(Status::BAD_REQUEST);
        }
        let body = match (chunked, length) {
            (true, _) => BodyLength::Chunked,
            (false, Some(0) | None) => BodyLength::Empty,
            (false, Some(n)) => BodyLength::Known(n),
        };
        let keep_alive = match version {
            Version::Http11 | Version::Http2 => !close,
            Version::Http10 => keep_alive_asked && !close,
        };
        Ok(Self { body, keep_alive, expect_continue, host, upgrade_h2c })
    }
}

/// Whether the field name `name` is `lower` (lowercase letters and `-`)
/// in any case. Setting bit 5 of a byte lowercases a letter, and in a
/// token no byte other than a letter's two cases lands on a letter or on
/// `-` (only CR, 0x0D, would, and a token has none): a cheaper compare than
/// `eq_ignore_ascii_case`, on every field of every request.
fn is_named(name: &[u8], lower: &[u8]) -> bool {
    name.len() == lower.len() && name.iter().zip(lower).all(|(&a, &b)| a | 0x20 == b)
}

/// The fields the server reads.
#[derive(Clone, Copy)]
enum Field {
    Host,
    Upgrade,
    Expect,
    Connection,
    ContentLength,
    TransferEncoding,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Upgrade => "upgrade",
            Self::Expect => "expect",
            Self::Connection => "connection",
            Self::ContentLength => "content-length",
            Self::TransferEncoding => "transfer-encoding",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Fields::read` over `(name, value)` lines.
    fn fields(version: Version, lines: &[(&'static str, &'static [u8])]) -> Result<(), Status> {
        let headers: Vec<httparse::Header<'static>> =
            lines.iter().map(|&(name, value)| httparse::Header { name, value }).collect();
        Fields::read(&headers, version, &mut KnownHost::new()).map(drop)
    }

    #[test]
    fn field_names_match_in_any_case_and_only_themselves() {
        for field in [
            Field::Host,
            Field::Upgrade,
            Field::Expect,
            Field::Connection,
            Field::ContentLength,
            Field::TransferEncoding,
        ] {
            let lower = field.name().as_bytes();
            assert!(is_named(lower, lower));
            assert!(is_named(&lower.to_ascii_uppercase(), lower));
            // Every token byte in every place: a match only where the
            // byte is the same letter in either case.
            for place in 0..lower.len() {
                for byte in (0..=255u8).filter(|&b| crate::syntax::TOKEN[usize::from(b)]) {
                    let mut name = lower.to_vec();
                    name[place] = byte;
                    assert_eq!(
                        is_named(&name, lower),
                        name.eq_ignore_ascii_case(lower),
                        "{:?}",
                        String::from_utf8_lossy(&name)
                    );
                }
            }
        }
    }

    #[test]
    fn host_is_required_in_1_1_single_and_valid_in_any_version() {
        use Version::{Http10, Http11};
        assert_eq!(fields(Http11, &[("Host", b"a")]), Ok(()));
        assert_eq!(fields(Http11, &[("host", b"")]), Ok(()));
        assert_eq!(fields(Http10, &[]), Ok(()));
        assert_eq!(fields(Http10, &[("Host", b"[::1]:80")]), Ok(()));
        for (version, lines) in [
            (Http11, &[][..]),
            (Http11, &[("Host", &b"a"[..]), ("Host", b"a")]),
            (Http10, &[("Host", b"a"), ("HOST", b"b")]),
            (Http11, &[("Host", b"a b")]),
            (Http10, &[("Host", b"u@a")]),
        ] {
            assert_eq!(fields(version, lines), Err(Status::BAD_REQUEST), "{version:?} {lines:?}");
        }
    }

    #[test]
    fn transfer_encoding_must_end_in_chunked_and_needs_1_1() {
        use Version::{Http10, Http11};
        let host = ("Host", &b"a"[..]);
        let te = |value: &'static [u8]| ("Transfer-Encoding", value);
        assert_eq!(fields(Http11, &[host, te(b"chunked")]), Ok(()));
        assert_eq!(fields(Http11, &[host, te(b"gzip, chunked")]), Err(Status::NOT_IMPLEMENTED));
        for (version, value) in [
            (Http11, &b"gzip"[..]),
            (Http11, b""),
            (Http11, b"chunked, gzip"),
            (Http11, b"chunked, chunked"),
            (Http11, b"chunked;a=b"),
            (Http10, b"chunked"),
            (Http10, b"gzip, chunked"),
        ] {
            assert_eq!(
                fields(version, &[host, te(value)]),
                Err(Status::BAD_REQUEST),
                "{version:?} {:?}",
                String::from_utf8_lossy(value)
            );
        }
    }

    /// `505` only for a well-formed request line with another major
    /// version, HTTP/1.1 for a later HTTP/1 minor one; wherever the line
    /// is cut, no verdict before its end and the same one after it.
    #[test]
    fn a_bad_version_slot_is_400_another_version_505() {
        const REFUSE_505: Verdict = Verdict::Refuse(Status::VERSION_NOT_SUPPORTED);
        const REFUSE_400: Verdict = Verdict::Refuse(Status::BAD_REQUEST);
        for (line, verdict) in [
            (&b"GET / HTTP/2.0\r\n\r\n"[..], REFUSE_505),
            (b"\r\nGET / HTTP/1.2\r\n\r\n", Verdict::AsHttp11(15)),
            (b"GET /x HTTP/1.9\r\nHost: a\r\n\r\n", Verdict::AsHttp11(14)),
            (b"GET / HTTP/1.2 \r\n\r\n", REFUSE_400),
            (b"GET / HTTP/3.0\r\nHost: a\r\n\r\n", REFUSE_505),
            (b"GET / HTTP/9\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/1.\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/1.a\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/1.2.3\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/01.1\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/1\r\n\r\n", REFUSE_400),
            (b"GET / http/1.1\r\n\r\n", REFUSE_400),
            (b"GET /  HTTP/1.1\r\n\r\n", REFUSE_400),
            (b"GET / HTTP/x.1\r\n\r\n", REFUSE_400),
            (b"GET / HTTP-1.1\r\n\r\n", REFUSE_400),
            (b"GET / 1.1\r\n\r\n", REFUSE_400),
            // The proptest's find: the bad byte comes before a space.
            (b"CONNECT a:443 HTTP/001.1:Host: a:443\r\n\r\n", REFUSE_400),
        ] {
            let mut refused = 0;
            for end in 1..=line.len() {
                let mut headers = [httparse::EMPTY_HEADER; 4];
                let result = httparse::Request::new(&mut headers).parse(&line[..end]);
                if result == Err(httparse::Error::Version) {
                    refused += 1;
                    let ended = line[..end]
                        .iter()
                        .skip_while(|&&b| b == b'\r' || b == b'\n')
                        .any(|&b| b == b'\r');
                    let expected = ended.then_some(verdict);
                    assert_eq!(version_verdict(&line[..end]), expected, "{:?}", &line[..end]);
                }
            }
            assert!(refused > 0, "httparse refused {line:?} at its version");
        }
    }
}
