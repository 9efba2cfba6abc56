//! A connection without its socket: input pipe, protocol state, output.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Waker;
use std::time::SystemTime;

use falconet_pipe::{Readable, Reader, WriteError, Writer};
use falconet_pool::Pool;

use crate::date::DateCache;
use crate::handler::{Handler, Status};
use crate::http1::{Http1, MAX_HEADERS_LIMIT, Progress};
use crate::link::Notify;
use crate::options::{Options, OptionsError};
use crate::response::AppSlots;

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
    pub(crate) requests: u64,
}

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
            },
            date: DateCache::new(),
            scratch: Vec::new(),
            spill: Vec::new(),
            draining: false,
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
/// let pool = falconet_pool::Pool::new();
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
    /// The output pipe of the deferred response in flight.
    pending: Option<PendingOutput>,
    out: Vec<u8>,
    /// Bytes of `out` already sent.
    sent: usize,
    /// A socket read goes into the tail block while this much of it is
    /// free, into a fresh block otherwise (the pipe's measured default, a
    /// quarter block: fewer, fuller reads than the tail's last scraps).
    read_space: usize,
}

impl<H: Handler> Session<H> {
    /// A session whose input lives in `pool`'s blocks.
    ///
    /// # Errors
    /// [`falconet_pipe::OptionsError`] when the pool's blocks are too small
    /// for a pipe.
    pub fn new(pool: &Pool) -> Result<Self, falconet_pipe::OptionsError> {
        let options =
            falconet_pipe::Options::new().pause_at(INPUT_PAUSE_AT).resume_at(INPUT_RESUME_AT);
        let (writer, reader) = falconet_pipe::pipe(pool, options)?;
        let read_space = (pool.block_size() / 4).max(1);
        Ok(Self {
            writer: Some(writer),
            reader: Arc::new(reader),
            http: Http1::new(),
            app: AppSlots::new(pool.clone()),
            pending: None,
            out: Vec::new(),
            sent: 0,
            read_space,
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

    /// One read from `source`: into pool memory (the pipe's free space at
    /// its tail) and, past it, into `spill`, whose bytes are then copied
    /// into fresh blocks. Returns the bytes read (0: end of stream) and
    /// whether they filled the space offered (if not, the socket is
    /// drained).
    ///
    /// A request fits the tail (no copy); a large body arrives in reads of
    /// up to 256 KiB instead of one per 4 KiB block: one syscall, and one
    /// wake of an application reading it, per 256 KiB.
    pub(crate) fn read_from(
        &mut self,
        source: &mut impl io::Read,
        spill: &mut Vec<u8>,
    ) -> io::Result<(usize, bool)> {
        let writer = self.writer.as_mut().ok_or_else(|| io::Error::from(WriteError::Closed))?;
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
        if self.http.is_closed() || self.output().len() >= cx.limits.max_pending_output {
            return false;
        }
        let waker = match self.app.existing_link() {
            Some(link) if self.http.is_lent() => link.waker(),
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
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        loop {
            if self.http.is_lent()
                && let Some(returned) = self.app.existing_link().and_then(|l| l.take_returned())
            {
                self.http.returned(returned);
            }
            let answered = self.pump(cx);
            let progress =
                self.http.process(&self.reader, &mut self.out, handler, cx, &mut self.app);
            if let Some(output) = self.app.deferred.take() {
                self.pending =
                    Some(PendingOutput { reader: Arc::new(output), readable: None, sent: 0 });
                continue;
            }
            if progress == Progress::Waiting && answered {
                continue;
            }
            return progress;
        }
    }

    /// Copies what the deferred response in flight has written into the
    /// output, as far as `max_pending_output` allows; when it has ended,
    /// settles it. Returns whether it ended. With nothing to copy, the
    /// output pipe wakes the connection when there is.
    fn pump(&mut self, cx: &Context) -> bool {
        let Some(pending) = &mut self.pending else { return false };
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
                Ok(Some(guard)) => guard,
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
                    crate::http1::refuse(&mut self.out, cx, Status::INTERNAL_SERVER_ERROR);
                }
                self.http.close();
            } else {
                let close = self.app.existing_link().is_some_and(|link| link.take_close_after());
                self.http.response_done(!close);
            }
            return true;
        }
    }

    /// Responses not yet sent.
    pub fn output(&self) -> &[u8] {
        &self.out[self.sent..]
    }

    /// Marks the first `n` bytes of [`output`](Self::output) as sent.
    pub fn consume_output(&mut self, n: usize) {
        self.sent = (self.sent + n).min(self.out.len());
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
    }

    /// Whether no request is under way and nothing waits to be sent.
    pub fn is_idle(&self) -> bool {
        self.http.is_between_requests() && self.output().is_empty() && self.pending.is_none()
    }

    /// Whether a request body is arriving.
    pub(crate) fn in_body(&self) -> bool {
        self.http.in_body()
    }

    /// Whether the application has the exchange (a deferred response in
    /// flight or a lent request body).
    pub fn with_application(&self) -> bool {
        self.http.with_application() || self.pending.is_some()
    }

    /// Whether the session is over: it closes once its output is sent.
    pub fn is_closed(&self) -> bool {
        self.http.is_closed()
    }

    /// Ends the session with `status` (a timeout): the response is queued
    /// and nothing more is parsed.
    pub(crate) fn refuse(&mut self, status: crate::Status, cx: &Context) {
        if !self.http.is_closed() {
            // With the application holding the exchange, a response may be
            // half sent: no status can follow it, only the close.
            if !self.with_application() {
                crate::http1::refuse(&mut self.out, cx, status);
            }
            self.http.close();
        }
    }
}

/// The reading end of a deferred response's output pipe.
struct PendingOutput {
    reader: Arc<Reader>,
    /// The wait for the responder's next bytes, kept across polls.
    readable: Option<Readable>,
    /// Bytes of the response moved into the output so far.
    sent: u64,
}

impl<H: Handler> std::fmt::Debug for Session<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("input_open", &self.writer.is_some())
            .field("pending_output", &self.output().len())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}
