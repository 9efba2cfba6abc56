//! A connection without its socket: input pipe, protocol state, output.

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
}

impl<H: Handler> Session<H> {
    /// The connection speaks HTTP/2 (its first bytes were the preface).
    fn h2(&self) -> Option<&Http2<H::State>> {
        self.h2.as_deref()
    }

    /// Looks at the first bytes once: the HTTP/2 connection preface (RFC
    /// 9113 3.4, prior knowledge) switches the session to HTTP/2; anything
    /// else is HTTP/1. Returns false while the bytes so far could still be
    /// the preface.
    fn detect(&mut self, cx: &Context) -> bool {
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

    /// Moves what the response in flight has for the output into it, as
    /// far as `max_pending_output` allows: copied from a deferred
    /// response's pipe, or written by polling a [`Polled`] response. When
    /// it has ended, settles it. Returns whether it ended. With nothing to
    /// move, the pipe or the polled body wakes the connection when there is.
    fn pump(&mut self, cx: &Context) -> bool {
        match &self.pending {
            None => false,
            Some(Pending::Pipe(_)) => self.pump_pipe(cx),
            Some(Pending::Polled(..)) => self.pump_polled(cx),
        }
    }

    /// [`pump`](Self::pump) for a deferred response's output pipe.
    fn pump_pipe(&mut self, cx: &Context) -> bool {
        let Some(Pending::Pipe(pending)) = &mut self.pending else { return false };
        loop {
            let room = cx.limits.max_pending_output.saturating_sub(self.out.len() - self.sent);
            if room == 0 {
                return false;
            }
            // A wait in progress owns the pipe's read: finish it first.
            if let Some(readable) = &mut pending.readable {
                let waker = self.app.link().waker();
                let mut poll_cx = std::task::Context::from_waker(&waker);
                if Pin::new(readable).poll(&mut poll_cx).is_pending() {
                    return false;
                }
                pending.readable = None;
            }
            let guard = match pending.reader.try_read() {
                Ok(Some(guard)) => {
                    if let Some(link) = self.app.existing_link() {
                        // A head the responder ended is ours to send now
                        // (the client, waiting for a 100, heard nothing
                        // until this: see `crate::expect`).
                        link.expect.head_taken();
                    }
                    guard
                }
                Ok(None) => {
                    // Nothing yet: wait, with the connection's waker.
                    pending.readable = Some(Readable::new(&pending.reader));
                    continue;
                }
                // The connection is the output pipe's only reader.
                Err(_) => return false,
            };
            let mut taken = 0;
            for chunk in guard.chunks() {
                let n = chunk.len().min(room - taken);
                self.out.extend_from_slice(&chunk[..n]);
                taken += n;
                if taken == room {
                    break;
                }
            }
            let all = taken == guard.len();
            let (completed, failed) = (guard.is_completed(), guard.error().is_some());
            let _ = guard.advance_to(taken, taken);
            pending.sent += taken as u64;
            if !(all && completed) {
                continue;
            }
            // The response ended: finished, or its responder dropped.
            let sent = pending.sent;
            self.pending = None;
            if failed {
                if sent == 0 {
                    // The body's failure, if that is what failed the
                    // response, came back before the response did.
                    self.take_returned();
                    crate::http1::refuse(&mut self.out, cx, self.http.failure_status());
                }
                self.http.close();
            } else {
                let close = self.app.existing_link().is_some_and(|link| link.take_close_after());
                self.http.response_done(!close);
            }
            return true;
        }
    }

    /// [`pump`](Self::pump) for a response the worker polls. A body frame
    /// it returns is staged, not copied: the connection sends it after the
    /// output, and polls again once it is sent.
    fn pump_polled(&mut self, cx: &Context) -> bool {
        let waker = self.app.link().waker();
        let mut poll_cx = std::task::Context::from_waker(&waker);
        let Some(Pending::Polled(polled, encoder)) = &mut self.pending else { return false };
        let step = loop {
            if self.staged.is_some() || self.out.len() - self.sent >= cx.limits.max_pending_output {
                return false;
            }
            let mut response =
                Response::new(&mut self.out, cx.date.fields(), *encoder, &mut self.app);
            let polled = polled.poll_write(&mut poll_cx, &mut response);
            *encoder = response.encoder();
            let (data, last) = match polled {
                Poll::Pending => return false,
                Poll::Ready(Step::Wrote) => continue,
                Poll::Ready(Step::Frame(data)) => (data, false),
                Poll::Ready(Step::Last(data)) => (data, true),
                Poll::Ready(step) => break step,
            };
            if encoder.head_open() {
                settle_continue(&self.app, &mut self.out, encoder);
            }
            if encoder.start_stream(&mut self.out, cx.date.fields()).is_err() {
                break Step::Failed;
            }
            if !data.is_empty() && encoder.sends_body() {
                encoder.chunk_prefix(&mut self.out, data.len());
                // The body's end goes out with its last piece (one write,
                // where sending it on the next poll took two); the response
                // is settled on that poll, once the piece is sent, so
                // nothing behind it can overtake it.
                let after = encoder.after_piece(last);
                self.staged = Some(Staged { data, after });
            }
        };
        let mut encoder = *encoder;
        self.pending = None;
        if matches!(step, Step::Failed) {
            if !encoder.is_untouched() {
                // Part of the response went out: only a close can follow.
                self.http.close();
                return true;
            }
            // Nothing written. The client's error that failed the
            // request's body (handed back when the read failed, so before
            // this failure) is the answer, and the connection closes: the
            // parser cannot resume after a malformed body.
            self.take_returned();
            if let Some(status) = self.http.client_failure() {
                crate::http1::refuse(&mut self.out, cx, status);
                self.http.close();
                return true;
            }
            // Else 500, as a synchronous answer would.
            let _ = encoder.status(crate::Status::INTERNAL_SERVER_ERROR);
        }
        if encoder.head_open() {
            settle_continue(&self.app, &mut self.out, &mut encoder);
        }
        let keep_alive = match &step {
            Step::Trailers(trailers) => {
                encoder.finish_with_trailers(&mut self.out, cx.date.fields(), trailers)
            }
            _ => encoder.finish(&mut self.out, cx.date.fields()),
        };
        self.http.response_done(keep_alive);
        true
    }

    /// Responses not yet sent: the first piece of them (the output buffer,
    /// then a staged body frame, then its framing's end). Empty when
    /// nothing waits.
    pub fn output(&self) -> &[u8] {
        if let Some(h2) = self.h2() {
            return h2.output();
        }
        let out = &self.out[self.sent..];
        match &self.staged {
            Some(staged) if out.is_empty() => {
                if staged.data.is_empty() {
                    staged.after
                } else {
                    &staged.data
                }
            }
            _ => out,
        }
    }

    /// The bytes of every piece of the output.
    pub(crate) fn output_len(&self) -> usize {
        if let Some(h2) = self.h2() {
            return h2.output_len();
        }
        let staged = self.staged.as_ref().map_or(0, |s| s.data.len() + s.after.len());
        self.out.len() - self.sent + staged
    }

    /// Every piece of the output, in order, for one vectored write (as
    /// many as `slices` holds); returns how many of `slices` it filled.
    pub(crate) fn output_slices<'a>(
        &'a self,
        slices: &mut [io::IoSlice<'a>; OUTPUT_SLICES],
    ) -> usize {
        if let Some(h2) = self.h2() {
            return h2.output_slices(slices);
        }
        let mut count = 0;
        let staged = self.staged.as_ref().map_or([&[][..], &[][..]], |s| [&s.data[..], s.after]);
        for piece in [&self.out[self.sent..]].into_iter().chain(staged) {
            if !piece.is_empty() {
                slices[count] = io::IoSlice::new(piece);
                count += 1;
            }
        }
        count
    }

    /// Marks the first `n` bytes of the output as sent (across its pieces).
    pub fn consume_output(&mut self, mut n: usize) {
        self.taken += n as u64;
        if let Some(h2) = &mut self.h2 {
            return h2.consume_output(n);
        }
        let from_out = n.min(self.out.len() - self.sent);
        self.sent += from_out;
        n -= from_out;
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        if let Some(staged) = &mut self.staged {
            let from_data = n.min(staged.data.len());
            bytes::Buf::advance(&mut staged.data, from_data);
            n -= from_data;
            let from_after = n.min(staged.after.len());
            staged.after = &staged.after[from_after..];
            if staged.data.is_empty() && staged.after.is_empty() {
                self.staged = None;
            }
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

    /// The server is stopping: HTTP/2 starts its graceful shutdown (the
    /// first GOAWAY and a PING), whatever its streams are doing. Returns
    /// whether there is something to send.
    pub(crate) fn start_drain(&mut self) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.shutdown();
                !h2.output().is_empty()
            }
            None => {
                // HTTP/1: a deferred response is the last on this
                // connection unless requests already received wait behind
                // it (they are still answered): its head then says so
                // with `Connection: close`, as an answer written now would.
                // (Without the writer, the client sent its FIN: what it
                // sent before may still wait unread, so nothing is asked.)
                if matches!(self.pending, Some(Pending::Pipe(_)))
                    && self.writer.as_ref().is_some_and(|writer| writer.unexamined() == 0)
                    && let Some(link) = self.app.existing_link()
                {
                    link.ask_close();
                }
                false
            }
        }
    }

    /// The server's shutdown has run for [`FINAL_GOAWAY_AFTER_MS`]:
    /// HTTP/2 sends its final GOAWAY if the client has not answered the
    /// shutdown's PING. Returns whether it queued one.
    pub(crate) fn finish_drain(&mut self) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.finish_shutdown())
    }

    /// How many responses wait on the client to take their bytes (the
    /// socket's send buffer is full, or HTTP/2 flow control holds them
    /// back): what [`Options::min_response_rate`](crate::Options::min_response_rate)
    /// multiplies its rate by. HTTP/1 has at most one.
    pub(crate) fn waiting_on_client(&self) -> usize {
        if let Some(h2) = self.h2() {
            return h2.waiting_on_client();
        }
        usize::from(self.output_len() > 0)
    }

    /// HTTP/2: the client's progress on the input side, as the frames
    /// that carried part of a request so far and the bytes of one still
    /// arriving (see `Http2::request_progress`); `None` for HTTP/1.1,
    /// where every byte read is.
    pub(crate) fn request_progress(&self) -> Option<(u64, usize)> {
        self.h2().map(Http2::request_progress)
    }

    /// Bytes of responses the client has taken so far: what the socket
    /// took, less (HTTP/2) the acknowledgements and resets its own frames
    /// made us queue, which it gets without reading any response (PINGs
    /// must not pay for a held one), and the headers of DATA frames its
    /// credit cut short (a client granting credit a byte at a time must
    /// not pay with our framing). Those are counted before the socket
    /// takes them, so this
    /// can dip; the caller keeps a high-water mark.
    pub(crate) fn taken(&self) -> u64 {
        self.taken.saturating_sub(self.h2().map_or(0, |h2| h2.unbilled_bytes()))
    }

    /// The client takes its responses too slowly: HTTP/2 queues
    /// GOAWAY(ENHANCE_YOUR_CALM). Returns whether there is something to
    /// send.
    pub(crate) fn too_slow(&mut self) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.too_slow();
                !h2.output().is_empty()
            }
            None => false,
        }
    }

    /// An idle connection is about to close (keep-alive timeout, or the
    /// server stopping): HTTP/2 queues a GOAWAY naming the last stream.
    /// Returns whether there is something to send.
    pub(crate) fn say_goodbye(&mut self) -> bool {
        match &mut self.h2 {
            Some(h2) => {
                h2.goodbye();
                !h2.output().is_empty()
            }
            None => false,
        }
    }

    /// Whether the client owes bytes: a request (head or body) that has
    /// not all arrived (and not waiting for a `100 (Continue)` we owe), or
    /// (HTTP/2) credit that responses wait for. A body
    /// lent to the application is the client's to send only while the
    /// application has looked at every byte that came (bytes it has not
    /// read mean it is behind, and the body may well be whole). The I/O
    /// timeout applies while the client owes; the response timeout while
    /// only the application keeps the exchange going.
    pub(crate) fn client_owes(&self) -> bool {
        if let Some(h2) = self.h2() {
            return h2.client_owes();
        }
        if self.app.existing_link().is_some_and(|link| link.expect.pending()) {
            // The client waits for our `100 (Continue)` (the application
            // has not read its body yet): it owes nothing.
            return false;
        }
        if self.http.is_lent() {
            return self.lent_body_owed();
        }
        self.http.in_body()
    }

    /// Whether the client owes the rest of the body lent to the
    /// application: a `Content-Length` body not all come, unless the
    /// application is so far behind that socket reads wait for it (the
    /// input pipe pauses at [`INPUT_PAUSE_AT`] unexamined, and the
    /// application's reads resume it only below [`INPUT_RESUME_AT`]: in
    /// between, whether reads are paused depends on which way it last
    /// crossed, so only below the lower mark is the client sure to be
    /// read); a chunked body once the application has looked at all that
    /// came.
    fn lent_body_owed(&self) -> bool {
        let Some(writer) = &self.writer else { return false };
        match self.lent_end {
            Some(end) => writer.written() < end && writer.unexamined() < INPUT_RESUME_AT,
            None => writer.unexamined() == 0,
        }
    }

    /// The request bodies in progress, for
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate):
    /// `None` when none is, else how many the client owes that the server
    /// would read now (what the rate is multiplied by; 0 pauses the
    /// meter). None is owed while output waits at `max_pending_output`
    /// (reads stop: the client cannot send, and the response rate judges
    /// it), nor a body the application is behind on; over HTTP/2, nor a
    /// stream without receive credit. HTTP/1 owes at most one.
    pub(crate) fn bodies_owed(&self, cx: &Context) -> Option<usize> {
        let owed = match self.h2() {
            Some(h2) => h2.bodies_owed()?,
            None if self.http.in_body() => usize::from(self.client_owes()),
            None => return None,
        };
        Some(if self.output_len() >= cx.limits.max_pending_output { 0 } else { owed })
    }

    /// Body bytes received so far, the pay of
    /// [`Options::min_request_body_rate`](crate::Options::min_request_body_rate):
    /// over HTTP/2 the DATA frames' data, over HTTP/1.1 every byte read
    /// (all of which the input pipe takes; while a body is owed, the
    /// socket carries nothing else the rate would be asked about). After
    /// the client's end it reads 0, which the meter's high-water mark
    /// takes as nothing paid.
    pub(crate) fn body_received(&self) -> u64 {
        match self.h2() {
            Some(h2) => h2.body_bytes(),
            None => self.writer.as_ref().map_or(0, Writer::written),
        }
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
        self.pending = None;
        // Last, as it drops the request's state, whose drop may panic too:
        // the answers above are queued whatever it does.
        let http = &mut self.http;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| http.close()));
        true
    }

    /// The client sends its request bodies too slowly: HTTP/1 answers
    /// `408` as a stalled body gets (closing, once a response started);
    /// HTTP/2 queues GOAWAY(ENHANCE_YOUR_CALM). The session is over.
    pub(crate) fn too_slow_sending(&mut self, cx: &Context) {
        match &mut self.h2 {
            Some(h2) => h2.too_slow(),
            None => self.refuse(crate::Status::REQUEST_TIMEOUT, cx),
        }
    }

    /// Whether any byte of the HTTP/1 response to the request under way
    /// has gone to the output: then no status can follow it, only the
    /// close.
    fn response_started(&self) -> bool {
        match &self.pending {
            Some(Pending::Pipe(pending)) => pending.sent > 0,
            Some(Pending::Polled(..)) => true,
            // Answered in full while the body still arrives (drained or
            // lent): a status now would be a second response.
            None => self.http.answered(),
        }
    }

    /// Whether a request answered in full waits behind its lent body with
    /// the next request already arriving (bytes past the body's end): a
    /// status now answers that next request, which cannot be parsed while
    /// the application holds the body. Not after a response that closes
    /// the connection: no next request is ever answered then.
    fn next_request_waiting(&self) -> bool {
        let past_end = match (&self.writer, self.lent_end) {
            (Some(writer), Some(end)) => writer.written() > end,
            _ => false,
        };
        self.pending.is_none() && self.http.is_lent() && !self.http.is_closing() && past_end
    }

    /// Ends the session with `status` (a timeout): the response is queued
    /// and nothing more is parsed. A response the application had started
    /// is cut off by the close instead; one it had not started is
    /// forgotten (its responder's writes fail). A request answered in full
    /// gets no second response; a next one waiting behind its lent body
    /// gets `status`.
    pub(crate) fn refuse(&mut self, status: crate::Status, cx: &Context) {
        if let Some(h2) = &mut self.h2 {
            // No status can answer a whole HTTP/2 connection: GOAWAY.
            return h2.abort();
        }
        if !self.http.is_closed() {
            if !self.response_started() || self.next_request_waiting() {
                crate::http1::refuse(&mut self.out, cx, status);
            }
            // Its responder's writes fail from now on.
            self.pending = None;
            self.http.close();
        }
    }

    /// The application kept the exchanges waiting past the response
    /// timeout, the client owing nothing: HTTP/1 answers `503` (or closes,
    /// if its response had started) as [`refuse`](Self::refuse) does;
    /// HTTP/2 answers each stream the application holds the same way and
    /// keeps the connection (its other streams are not at fault).
    pub(crate) fn expire_application(&mut self, cx: &Context) {
        match &mut self.h2 {
            Some(h2) => h2.expire_application(cx),
            None => self.refuse(crate::Status::SERVICE_UNAVAILABLE, cx),
        }
    }

    /// The client is late on request bytes (`io_timeout`): whether, over
    /// HTTP/2 with streams it does not hold up open too, the streams it
    /// owes bodies on are left to their own clocks (`h2/clock.rs`), which
    /// end each at its time, and the connection goes on. `false` (HTTP/1,
    /// or nothing else open): the caller refuses the connection.
    pub(crate) fn defers_to_streams(&self) -> bool {
        self.h2().is_some_and(|h2| h2.defers_to_streams())
    }

    /// The minimum request-body rate failed: over HTTP/2 with streams the
    /// client does not hold up open too, only the streams it owes bodies
    /// on end (`408`, or a reset) and the connection goes on: `true`.
    /// `false` (HTTP/1, or nothing else open): the caller refuses the
    /// connection ([`too_slow_sending`](Self::too_slow_sending)).
    pub(crate) fn expire_slow_bodies(&mut self, cx: &Context) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.expire_slow_bodies(cx))
    }

    /// HTTP/2: the worker's clock at each turn and each timer tick, `now`
    /// in ms, for the limits that earn back over time (the reset budget).
    /// HTTP/1 reads none.
    pub(crate) fn advance_clock(&mut self, now: u64) {
        if let Some(h2) = &mut self.h2 {
            h2.advance_clock(now);
        }
    }

    /// HTTP/2: each stream's own clock, at a tick that found the
    /// connection on time (`h2/clock.rs`): a stream its client kept
    /// waiting `io` ms, or its application `response` ms, ends alone.
    /// Returns whether one did (its frames wait to be written). HTTP/1
    /// has one exchange at a time: the connection's clock is its own.
    pub(crate) fn expire_streams(
        &mut self,
        now: u64,
        io: u64,
        response: Option<u64>,
        cx: &Context,
    ) -> bool {
        self.h2.as_mut().is_some_and(|h2| h2.expire_streams(now, io, response, cx))
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

/// A polled response's head is about to end outside a `Response`: settles
/// `Expect: 100-continue` (see [`crate::response::settle_continue`]).
fn settle_continue(app: &AppSlots, out: &mut Vec<u8>, encoder: &mut Encoder) {
    if let Some(link) = app.existing_link() {
        let head_at = encoder.is_untouched().then_some(out.len());
        crate::response::settle_continue(link.expect.settle_here(), encoder, out, head_at);
    }
}
