//! A connection without its socket: input pipe, protocol state, output.

// The parts: pump (a deferred answer into the output, in order), output
// (the bytes for the socket), timers (what the worker's timers ask and
// do, and the drain).
mod output;
mod pump;
mod timers;

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::SystemTime;

use falconet_pipe::{Readable, Reader, WriteError, Writer};
use falconet_pool::Pool;

use crate::date::DateCache;
use crate::h2::frame::PREFACE;
use crate::h2::serve::Http2;
use crate::handler::Handler;
use crate::http1::{Http1, MAX_HEADERS_LIMIT, Progress};
use crate::link::Notify;
use crate::options::{Options, OptionsError};
use crate::response::{AppSlots, Polled, Response, Step};
use crate::wire::Encoder;

/// The most pieces one vectored write of a connection's output takes: an
/// HTTP/2 connection's DATA frames are two each (the header in the output
/// buffer, the payload in place).
pub(crate) const OUTPUT_SLICES: usize = 64;

/// Bytes a socket read may take past the pipe's free space.
pub(crate) const SPILL: usize = 256 * 1024;

/// The input pipe's back-pressure: socket reads stop while this much input
/// is unexamined (a request body the application reads slowly, or
/// pipelined requests behind a full output) and resume below
/// [`INPUT_RESUME_AT`]. With [`SPILL`], a connection holds at most about
/// 512 KiB of input. Large, like Kestrel's 1 MiB request buffer and
/// hyper's 400 KiB read buffer: on a 1 MiB echo, 64 KiB here took 3.7x
/// more system calls and wakes per MiB.
pub(crate) const INPUT_PAUSE_AT: u64 = 256 * 1024;
/// See [`INPUT_PAUSE_AT`].
pub(crate) const INPUT_RESUME_AT: u64 = 128 * 1024;

/// The limits a session enforces (copied from [`Options`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_request_line: usize,
    pub(crate) max_head: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body: u64,
    pub(crate) max_pending_output: usize,
    pub(crate) http2: crate::h2::connection::Config,
    /// Which ways a connection may become HTTP/2.
    pub(crate) h2c: crate::H2c,
}

/// A request line's bytes besides its method, at their fewest: ` / HTTP/1.1`
/// (the line's limit counts neither its CRLF nor more). A method longer
/// than the limit less these is too long for any line: `501`, not `414`.
pub(crate) const SHORTEST_REST: usize = " / HTTP/1.1".len();

impl Limits {
    /// What `max_request_line` says of a request with this method and
    /// target: `501` for a method too long for a line with any target
    /// (RFC 9112 3: a method longer than any implemented, not the
    /// target's fault), `414 URI Too Long` for a line too long, `None`
    /// within the limit. The line is counted as HTTP/1.1 sends it,
    /// `METHOD SP target SP HTTP/1.1` without its CRLF; an HTTP/2 request
    /// as the same line of its `:method` and `:path` (as Kestrel bounds
    /// HTTP/2 by its request-line limit), so a URL gets one answer over
    /// either protocol.
    pub(crate) fn request_line(&self, method: &str, target: &str) -> Option<crate::Status> {
        let line = method.len() + " ".len() + target.len() + " HTTP/1.1".len();
        if method.len() + SHORTEST_REST > self.max_request_line {
            Some(crate::Status::NOT_IMPLEMENTED)
        } else if line > self.max_request_line {
            Some(crate::Status::URI_TOO_LONG)
        } else {
            None
        }
    }
}

/// What one event-loop thread shares among its connections: limits, the
/// rendered `Date`, a scratch buffer for heads that span blocks, whether
/// the server is shutting down, and a request counter.
#[derive(Debug)]
pub struct Context {
    pub(crate) limits: Limits,
    pub(crate) date: DateCache,
    pub(crate) scratch: Vec<u8>,
    /// Where a socket read goes past the pipe's free space (see
    /// `Session::read_from`), [`SPILL`] bytes once used.
    pub(crate) spill: Vec<u8>,
    pub(crate) draining: bool,
    /// When the draining began (the worker's clock, milliseconds).
    pub(crate) drain_began: u64,
    pub(crate) requests: u64,
}

/// How long an HTTP/2 graceful shutdown waits for the client to answer its
/// PING before it sends the final GOAWAY anyway: Go's one second. (Checked
/// on the worker's timer, so up to a tick later.)
pub(crate) const FINAL_GOAWAY_AFTER_MS: u64 = 1_000;

impl Context {
    /// A context enforcing `options`' limits.
    ///
    /// # Errors
    /// [`OptionsError`] for settings the server cannot run with.
    pub fn new(options: &Options) -> Result<Self, OptionsError> {
        options.validate()?;
        if options.max_headers > MAX_HEADERS_LIMIT {
            return Err(OptionsError::Headers(options.max_headers));
        }
        Ok(Self {
            limits: Limits {
                max_request_line: options.max_request_line,
                max_head: options.max_head,
                max_headers: options.max_headers,
                max_body: options.max_body,
                max_pending_output: options.max_pending_output,
                http2: options.http2,
                h2c: options.h2c,
            },
            date: DateCache::new(),
            scratch: Vec::new(),
            spill: Vec::new(),
            draining: false,
            drain_began: 0,
            requests: 0,
        })
    }

    /// Requests answered through this context.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Re-renders the `Date` header if the second changed.
    pub(crate) fn tick(&mut self) {
        self.date.update(SystemTime::now());
    }
}

/// One HTTP connection's state without the socket: bytes go in with
/// [`receive`](Self::receive), [`process`](Self::process) answers every
/// complete request, and the responses come out of
/// [`output`](Self::output). The server drives one per connection; tests
/// and the fuzz target drive it directly.
///
/// ```
/// use falconet_server::{Context, Options, Session, hello::Hello};
///
/// let pool = falconet_server::Pool::new();
/// let mut cx = Context::new(&Options::new())?;
/// let mut session = Session::<Hello>::new(&pool)?;
/// session.receive(b"GET /plaintext HTTP/1.1\r\nHost: a\r\n\r\nGET /json HTTP/1.1\r\nHost: a\r\n\r\n")?;
/// session.process(&Hello, &mut cx);
/// let text = String::from_utf8(session.output().to_vec())?;
/// assert!(text.ends_with("\r\n\r\n{\"message\":\"Hello, World!\"}"));
/// assert_eq!(cx.requests(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Session<H: Handler> {
    /// `None` once the input ended.
    writer: Option<Writer>,
    /// Shared with a request body lent to the application.
    reader: Arc<Reader>,
    http: Http1<H::State>,
    /// What responses may hand to the application.
    app: AppSlots,
    /// The response in flight that the application answers.
    pending: Option<Pending>,
    /// The stream position where the body lent last ends (`None`:
    /// chunked), for the timer's question of who owes bytes.
    lent_end: Option<u64>,
    out: Vec<u8>,
    /// Bytes of `out` already sent.
    sent: usize,
    /// Bytes the socket took, in all (what
    /// [`min_response_rate`](crate::Options::min_response_rate) counts).
    taken: u64,
    /// A polled response's body frame, sent after `out` as it is (not
    /// copied into it), then its framing's end.
    staged: Option<Staged>,
    /// The last read spilled past the tail: bulk input, read into fresh
    /// blocks directly.
    bulk: bool,
    /// A socket read goes into the tail block while this much of it is
    /// free, into a fresh block otherwise (the pipe's measured default, a
    /// quarter block: fewer, fuller reads than the tail's last scraps).
    read_space: usize,
    /// The protocol is known (see `detect`).
    detected: bool,
    /// Bytes that may still become the HTTP/2 preface have arrived: a head
    /// under way for the timers (held to the header timeout, not idle).
    maybe_preface: bool,
    /// The HTTP/2 side, for a connection that opened with the preface.
    h2: Option<Box<Http2<H::State>>>,
    /// An HTTP/1 response the close delimits was cut off after part of
    /// it went out (its application failed or panicked, a timeout): see
    /// [`must_reset`](Self::must_reset).
    cut: bool,
}

impl<H: Handler> Session<H> {
    /// The connection speaks HTTP/2 (its first bytes were the preface).
    fn h2(&self) -> Option<&Http2<H::State>> {
        self.h2.as_deref()
    }

    /// Looks at the first bytes once: the HTTP/2 connection preface (RFC
    /// 9113 3.4, prior knowledge) switches the session to HTTP/2; anything
    /// else (or everything, with prior knowledge off) is HTTP/1. Returns
    /// false while the bytes so far could still be the preface.
    fn detect(&mut self, cx: &Context) -> bool {
        if cx.limits.h2c == crate::H2c::Off {
            // HTTP/1 alone: the preface is a request line like any other.
            self.detected = true;
            return true;
        }
        let guard = match self.reader.try_read() {
            Ok(Some(guard)) => guard,
            Ok(None) => return false,
            Err(_) => {
                self.detected = true;
                self.maybe_preface = false;
                return true;
            }
        };
        let mut first = [0u8; PREFACE.len()];
        let mut n = 0;
        for chunk in guard.chunks() {
            let take = chunk.len().min(first.len() - n);
            first[..n + take][n..].copy_from_slice(&chunk[..take]);
            n += take;
            if n == first.len() {
                break;
            }
        }
        let len = guard.len();
        if n < PREFACE.len() && first[..n] == PREFACE[..n] && !guard.is_completed() {
            // Could be the preface: wait for more, as a partial head waits.
            let _ = guard.advance_to(0, len);
            self.maybe_preface = len > 0;
            return false;
        }
        let _ = guard.advance_to(0, 0);
        self.detected = true;
        self.maybe_preface = false;
        if first == *PREFACE {
            let mut h2 = Box::new(Http2::new(cx));
            h2.peer = self.http.peer;
            self.h2 = Some(h2);
        }
        true
    }

    /// A session whose input lives in `pool`'s blocks.
    ///
    /// # Errors
    /// [`falconet_pipe::OptionsError`] when the pool's blocks are too small
    /// for a pipe.
    pub fn new(pool: &Pool) -> Result<Self, falconet_pipe::OptionsError> {
        let options = falconet_pipe::Options::new()
            .pause_at(INPUT_PAUSE_AT)
            .resume_at(INPUT_RESUME_AT)
            // A connection's pool use stays its unread bytes (the bound
            // `tests/app.rs` checks), not its peak.
            .keep_blocks(false);
        let (writer, reader) = falconet_pipe::pipe(pool, options)?;
        let read_space = (pool.block_size() / 4).max(1);
        Ok(Self {
            writer: Some(writer),
            reader: Arc::new(reader),
            http: Http1::new(),
            app: AppSlots::new(pool.clone()),
            pending: None,
            lent_end: None,
            out: Vec::new(),
            sent: 0,
            taken: 0,
            staged: None,
            bulk: false,
            read_space,
            detected: false,
            maybe_preface: false,
            h2: None,
            cut: false,
        })
    }

    /// Bytes from the client, as a socket read would deliver them.
    ///
    /// # Errors
    /// [`WriteError`] when the input already ended or the pool is exhausted
    /// (the prefix that fit was received).
    pub fn receive(&mut self, bytes: &[u8]) -> Result<(), WriteError> {
        Ok(self.writer.as_mut().ok_or(WriteError::Closed)?.put_slice(bytes)?)
    }

    /// One read from `source` into pool memory. Requests fit the tail
    /// block: one read into its free space and, past it, into `spill`,
    /// whose bytes are then copied into fresh blocks (rare: a request
    /// larger than the tail). Once a read has spilled (bulk input: a large
    /// body), reads go straight into the tail and fresh blocks
    /// ([`Writer::read_vectored_from`]) with no copy, until a read fits the
    /// tail again. Either way up to 256 KiB past the tail per read: one
    /// syscall, and one wake of an application reading the body, per
    /// 256 KiB. Returns the bytes read (0: end of stream) and whether they
    /// filled the space offered (if not, the socket is drained).
    pub(crate) fn read_from(
        &mut self,
        source: &mut impl io::Read,
        spill: &mut Vec<u8>,
    ) -> io::Result<(usize, bool)> {
        let writer = self.writer.as_mut().ok_or_else(|| io::Error::from(WriteError::Closed))?;
        if self.bulk {
            let read = writer.read_vectored_from(source, SPILL)?;
            self.bulk = read.read > SPILL / 2;
            return Ok((read.read, read.filled()));
        }
        if spill.len() != SPILL {
            spill.resize(SPILL, 0);
        }
        let buffer = writer.buffer(self.read_space)?;
        let space = buffer.len();
        let n =
            source.read_vectored(&mut [io::IoSliceMut::new(buffer), io::IoSliceMut::new(spill)])?;
        writer.commit(n.min(space))?;
        if n > space {
            writer.put_slice(&spill[..n - space])?;
            self.bulk = true;
        }
        Ok((n, n == space + SPILL))
    }

    /// The client ended its side: requests already received are answered,
    /// a partial one is dropped.
    pub fn end_input(&mut self) {
        if let Some(writer) = self.writer.take() {
            writer.close();
        }
    }

    /// The connection ends without the client's end of stream (a reset,
    /// a timeout, the server closing it): a request body still being read
    /// fails with `kind`, which its reader sees.
    pub(crate) fn fail_input(&mut self, kind: io::ErrorKind) {
        if let Some(h2) = self.h2.as_mut() {
            h2.fail_bodies(kind);
        }
        if let Some(writer) = self.writer.take() {
            writer.close_with(io::Error::from(kind));
        }
    }

    /// The client's address, which each request reports
    /// ([`Request::peer_addr`](crate::Request::peer_addr)).
    pub(crate) fn set_peer(&mut self, peer: std::net::SocketAddr) {
        self.http.peer = Some(peer);
    }

    /// Ties the session to its connection id and its worker's queue, so
    /// application threads can wake it (see `link.rs`).
    pub(crate) fn attach(&mut self, id: u64, notify: Arc<Notify>) {
        self.app.attach(id, notify);
    }

    /// Whether the session takes more input now: not closing, input not
    /// ended, and not paused by back-pressure (unparsed input at the pipe's
    /// threshold, or output at `max_pending_output`). While the request
    /// body is lent to the application, the pause ends when the
    /// application reads: its read wakes the connection.
    pub fn wants_input(&mut self, cx: &Context) -> bool {
        let closed = self.h2().map_or(self.http.is_closed(), |h2| h2.is_closed());
        if closed || self.output_len() >= cx.limits.max_pending_output {
            return false;
        }
        let waker = match self.app.existing_link() {
            Some(link) if self.http.is_lent() || self.h2.is_some() => link.waker(),
            _ => Waker::noop().clone(),
        };
        let Some(writer) = self.writer.as_mut() else {
            return false;
        };
        // The pipe's flush completes at once below its pause threshold.
        let mut poll_cx = std::task::Context::from_waker(&waker);
        pin!(writer.flush()).poll(&mut poll_cx).is_ready()
    }

    /// Answers every complete request buffered, appending the responses to
    /// the output, and moves what deferred responses wrote into it, in
    /// order; see [`Progress`].
    pub fn process(&mut self, handler: &H, cx: &mut Context) -> Progress {
        if !self.detected && !self.detect(cx) {
            return Progress::NeedInput;
        }
        if let Some(h2) = &mut self.h2 {
            if cx.draining {
                // Graceful shutdown: GOAWAY, the open streams finish.
                h2.shutdown();
            }
            return h2.process(&self.reader, handler, cx, &mut self.app);
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        loop {
            self.take_returned();
            if !self.http.is_closed()
                && let Some(link) = self.app.existing_link()
                && link.expect.take_wanted()
            {
                // The application reads a lent body whose client waits
                // for this, and no byte of the response's head is out
                // (its end would have taken the word). Not after a final
                // answer the server wrote itself (a 500 for a panic or a
                // dropped responder, a timeout's refusal): the connection
                // is closing behind it.
                self.out.extend_from_slice(crate::expect::CONTINUE);
            }
            let answered = self.pump(cx);
            let progress =
                self.http.process(&self.reader, &mut self.out, handler, cx, &mut self.app);
            if let Some(length) = self.http.lent_length.take() {
                // Only this thread writes the pipe: what it holds is what
                // the parser just read, so the body's end is known here.
                let written = self.writer.as_ref().map_or(0, Writer::written);
                self.lent_end = length
                    .map(|(length, after)| written.saturating_sub(after).saturating_add(length));
            }
            if let Some(upgrade) = self.http.take_upgrade() {
                return self.switch_to_h2(upgrade, handler, cx);
            }
            if let Some(output) = self.app.deferred.take() {
                let output = PendingOutput {
                    reader: Arc::new(output.reader),
                    readable: None,
                    sent: 0,
                    _abandon: output.abandon,
                };
                self.pending = Some(Pending::Pipe(output));
                continue;
            }
            if let Some((polled, encoder)) = self.app.polled.take() {
                self.pending = Some(Pending::Polled(polled, encoder));
                continue;
            }
            if progress == Progress::Waiting && answered {
                continue;
            }
            if self.staged.is_some() && progress != Progress::Close {
                // The polled response goes on once its frame is sent, whatever
                // the parser waits for (input to drain an ignored body, say):
                // the connection must write and come back, not wait.
                return Progress::OutputFull;
            }
            return progress;
        }
    }

    /// The last request asked for h2c: the connection becomes HTTP/2 (its
    /// unsent HTTP/1 output, then the `101`, go first).
    fn switch_to_h2(
        &mut self,
        upgrade: crate::h2::upgrade::Upgrade,
        handler: &H,
        cx: &mut Context,
    ) -> Progress {
        let mut prefix = self.out.split_off(self.sent);
        prefix.extend_from_slice(crate::h2::upgrade::SWITCHING);
        self.out.clear();
        self.sent = 0;
        let mut h2 = Box::new(Http2::new(cx));
        h2.peer = self.http.peer;
        if !h2.upgrade(&prefix, upgrade, handler, cx, &mut self.app) {
            // Checked before the switch: cannot happen.
            self.http.close();
            return Progress::Close;
        }
        let h2 = self.h2.insert(h2);
        h2.process(&self.reader, handler, cx, &mut self.app)
    }

    /// Takes back the lent body, if it came back: the parser resumes after
    /// it, or, if it failed, the client's error (400, 413) is known.
    fn take_returned(&mut self) {
        if self.http.is_lent()
            && let Some(returned) = self.app.existing_link().and_then(|l| l.take_returned())
        {
            self.http.returned(returned);
        }
    }

    /// Request heads (HTTP/2: field blocks) ended on this connection,
    /// wrapping: when it changes, the head the timer timed is over, and
    /// the next one gets its own header timeout.
    pub(crate) fn heads_ended(&self) -> u64 {
        // After an h2c upgrade, the HTTP/1 heads (the upgrade's own) count
        // too: the request that switched is a head that ended.
        match self.h2() {
            Some(h2) => self.http.heads().wrapping_add(h2.blocks_ended()),
            None => self.http.heads(),
        }
    }

    /// Whether a request head is under way, for the header timeout: before
    /// the protocol is known, its first bytes; HTTP/1, bytes of the next
    /// head while nothing else is (no answer unsent or with the
    /// application: those waits are the I/O and response timeouts', and a
    /// head begun meanwhile is timed from when they end); HTTP/2, see
    /// `Http2::head_under_way`.
    pub(crate) fn head_under_way(&self) -> bool {
        if self.maybe_preface {
            return true;
        }
        if let Some(h2) = self.h2() {
            return h2.head_under_way();
        }
        self.http.head_begun() && !self.with_application() && self.output().is_empty()
    }

    /// Whether no request is under way and nothing waits to be sent.
    pub fn is_idle(&self) -> bool {
        if self.maybe_preface {
            return false;
        }
        if let Some(h2) = self.h2() {
            return h2.is_idle();
        }
        self.http.is_between_requests() && self.output().is_empty() && self.pending.is_none()
    }

    /// Whether a request body is arriving.
    pub(crate) fn in_body(&self) -> bool {
        // An HTTP/2 connection with streams open is "in a body" for the
        // timer: bytes must move within the I/O timeout (a download that
        // waits for the client's credit is not a slow head).
        if let Some(h2) = self.h2() {
            return h2.has_streams();
        }
        self.http.in_body()
    }

    /// Whether the application has the exchange (a deferred response in
    /// flight or a lent request body).
    pub fn with_application(&self) -> bool {
        if let Some(h2) = self.h2() {
            return h2.with_application();
        }
        self.http.with_application() || self.pending.is_some()
    }

    /// Whether the session is over: it closes once its output is sent.
    pub fn is_closed(&self) -> bool {
        if let Some(h2) = self.h2() {
            return h2.is_closed();
        }
        self.http.is_closed()
    }

    /// Whether closing the connection now must be a reset (TCP RST, as a
    /// close with `SO_LINGER` 0 sends) rather than a FIN: the answer to
    /// the connection's first request, an HTTP/1.0 one other than `HEAD`,
    /// was cut off after part of it went out (its application failed or
    /// panicked, a timeout), or is still under way, or has bytes in
    /// [`output`](Self::output) not yet sent (a close by a timeout or
    /// shutdown's deadline while the client did not take them; so too for
    /// a sized one, whose client could tell). Such a response's body,
    /// streamed without a `Content-Length`, ends with the connection (RFC
    /// 9112 section 6.3): after a FIN, the client (or a proxy in front,
    /// which re-frames it as complete) takes what it got for the whole
    /// response, where RFC 9112 section 8 asks that an incomplete message
    /// be recognisable. A chunked or sized response cut off is, so
    /// HTTP/1.1 needs no reset, nor does HTTP/2, which resets the stream
    /// alone. Not after an earlier exchange on the connection (HTTP/1.0
    /// keep-alive): a reset drops what the socket has not delivered yet,
    /// which may be the tail of an earlier, complete response. Ask after
    /// [`process`](Self::process) (a deferred response that has just
    /// finished counts as under way until then) and, for a close once the
    /// output is sent, after sending it.
    pub fn must_reset(&self) -> bool {
        let unsent = self.http.first_ends_by_close() && self.output_len() > 0;
        self.h2.is_none() && (self.cut || unsent || self.cut_by_close())
    }

    /// Whether closing now cuts off the response in flight, one the close
    /// delimits, on the connection's first exchange (see
    /// [`must_reset`](Self::must_reset)).
    ///
    /// The first request's flag says both (a response the close may end,
    /// on the first exchange): no head is parsed while a response is in
    /// flight, so one in flight while the flag is up answers that request.
    fn cut_by_close(&self) -> bool {
        self.pending.is_some() && self.response_started() && self.http.first_ends_by_close()
    }

    /// A handler method panicked while this session drove it (HTTP/1.1;
    /// HTTP/2 contains its handlers' panics per stream). The responses
    /// before the panicking request's are kept, a partial one it wrote is
    /// dropped (none of it has been sent: the socket is written after the
    /// handler returns), and the request gets `500` with `Connection:
    /// close` unless it was answered already or the application's
    /// response to it had started; then the session is over. (Without
    /// this the connection was dropped with the pipelined answers before
    /// the panic unsent.) False (HTTP/2, whose panics here are
    /// falconet's): nothing to send, close.
    pub(crate) fn after_panic(&mut self, cx: &Context) -> bool {
        if self.h2.is_some() {
            return false;
        }
        let mark = self.http.panic_mark();
        // Answered already (refused, or in full while its body arrives):
        // a panic in its state's drop then must not answer it twice.
        let answered = self.http.is_closed() || self.http.answered();
        self.out.truncate(mark.unwrap_or(self.out.len()).max(self.sent));
        // The panicking `respond`'s deferred or polled response, and the
        // body it was offered, never reach the wire.
        self.app.deferred = None;
        self.app.polled = None;
        self.app.offer = None;
        if self.pending.is_none() && (mark.is_some() || !answered) {
            crate::http1::refuse(&mut self.out, cx, crate::Status::INTERNAL_SERVER_ERROR);
        }
        self.cut |= self.cut_by_close();
        self.pending = None;
        // Last, as it drops the request's state, whose drop may panic too:
        // the answers above are queued whatever it does.
        let http = &mut self.http;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| http.close()));
        true
    }
}

/// A polled response's body frame waiting to be sent as it is.
struct Staged {
    data: bytes::Bytes,
    /// The framing after it: the chunk's CRLF, or nothing.
    after: &'static [u8],
}

/// A response the application answers, in flight.
enum Pending {
    /// Deferred: its bytes arrive through its output pipe.
    Pipe(PendingOutput),
    /// Polled by the worker, through this encoder.
    Polled(Box<dyn Polled>, Encoder),
}

/// The reading end of a deferred response's output pipe.
struct PendingOutput {
    reader: Arc<Reader>,
    /// The wait for the responder's next bytes, kept across polls.
    readable: Option<Readable>,
    /// Bytes of the response moved into the output so far.
    sent: u64,
    /// Dropped with the rest: the responder's task stops computing.
    _abandon: crate::wanted::Abandon,
}

impl<H: Handler> std::fmt::Debug for Session<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("input_open", &self.writer.is_some())
            .field("pending_output", &self.output_len())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
