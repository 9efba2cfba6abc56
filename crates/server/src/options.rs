//! Limits, timeouts and threads: everything a server is built with.

use std::fmt;
use std::time::Duration;

use crate::h2::connection::Config as Http2Config;
use crate::h2::frame::{
    DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_LEN, MAX_WINDOW_SIZE,
};
use crate::http1::MAX_HEADERS_LIMIT;

/// The default bound on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100_000;
/// The default limit on the request line (method, target, version), bytes.
pub const DEFAULT_MAX_REQUEST_LINE: usize = 8 * 1024;
/// The default limit on a request head (request line and header fields), bytes.
pub const DEFAULT_MAX_HEAD: usize = 32 * 1024;
/// The default limit on the number of header fields in one request.
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// The default limit on a request body, bytes (after chunked decoding).
pub const DEFAULT_MAX_BODY: u64 = 8 * 1024 * 1024;
/// The default time from a request head's first byte to its end (slowloris).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time a request body, or a client that does not read its
/// responses, may go without progress.
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time the application may keep a request waiting, the
/// client owing nothing, without a byte of its response moving
/// ([`Options::response_timeout`]).
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time an idle keep-alive connection stays open.
pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time a closing connection waits for the client's end of
/// stream after the last response (so that unread input does not reset it).
pub const DEFAULT_LINGER_TIMEOUT: Duration = Duration::from_secs(2);
/// The default deadline of a graceful shutdown.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// The default bound on response bytes waiting for the socket: past it a
/// connection stops parsing (and so stops reading) until the client reads.
pub const DEFAULT_MAX_PENDING_OUTPUT: usize = 64 * 1024;
/// The default bound on the block pool shared by all connections, bytes.
pub const DEFAULT_MAX_POOL_BYTES: usize = 1 << 30;
/// The default least rate at which a client must take the responses that
/// wait on it: Kestrel's `MinResponseDataRate`, 240 bytes a second with a
/// 5-second grace.
pub const DEFAULT_MIN_RESPONSE_RATE: MinDataRate = MinDataRate::new(240, Duration::from_secs(5));
/// The default least rate at which a client must send the request bodies
/// it owes: Kestrel's `MinRequestBodyDataRate`, 240 bytes a second with a
/// 5-second grace.
pub const DEFAULT_MIN_REQUEST_BODY_RATE: MinDataRate =
    MinDataRate::new(240, Duration::from_secs(5));

/// A least data rate: `bytes_per_second`, with a client allowed to fall
/// behind it by `grace` (so it may pause for less than that). See
/// [`Options::min_response_rate`] and [`Options::min_request_body_rate`].
///
/// ```
/// use std::time::Duration;
/// use falconet_server::MinDataRate;
///
/// let rate = MinDataRate::new(1024, Duration::from_secs(10));
/// assert_eq!((rate.bytes_per_second(), rate.grace()), (1024, Duration::from_secs(10)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinDataRate {
    bytes_per_second: u32,
    grace: Duration,
}

impl MinDataRate {
    /// At least `bytes_per_second` (1 or more), up to `grace`
    /// ([`MIN_TIMEOUT`] to [`MAX_TIMEOUT`]) behind; [`Options::validate`]
    /// checks both.
    pub const fn new(bytes_per_second: u32, grace: Duration) -> Self {
        Self { bytes_per_second, grace }
    }

    /// Bytes a second at least.
    pub const fn bytes_per_second(&self) -> u32 {
        self.bytes_per_second
    }

    /// How far behind the rate a client may fall, as time.
    pub const fn grace(&self) -> Duration {
        self.grace
    }
}

/// How connections reach the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Accept {
    /// A listening socket per worker on the same port (`SO_REUSEPORT`): the
    /// kernel hashes each connection to one worker's queue, and no worker
    /// wakes for another's. Measured here 6% faster when every request is a
    /// new connection, but 13% slower on keep-alive connections: the hash
    /// can leave one worker with more of them (`docs/benchmarks.md`).
    ///
    /// `SO_REUSEPORT` lets any socket of the same user that sets it bind
    /// the port too: a second server (or a second copy of the program)
    /// started with `ReusePort` on a port already served this way binds
    /// without an error, and the kernel splits new connections between
    /// the two. With [`Shared`](Self::Shared) that bind fails with
    /// `AddrInUse`.
    ReusePort,
    /// One listening socket, polled by every worker: whichever worker is
    /// free first takes the connection, which spreads long-lived
    /// connections by load. The default.
    Shared,
}

/// Which ways a cleartext connection may become HTTP/2 (h2c; TLS, and
/// so ALPN's `h2`, is not falconet's): see [`Options::h2c`].
///
/// ```
/// use falconet_server::{H2c, Options};
///
/// // Behind a reverse proxy that passes `Upgrade` on (for WebSockets):
/// let options = Options::new().h2c(H2c::PriorKnowledge);
/// assert!(options.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum H2c {
    /// Both ways, the default: the HTTP/2 connection preface as the
    /// connection's first bytes ("prior knowledge", RFC 9113 §3.3, as
    /// `curl --http2-prior-knowledge` and h2load connect), and an HTTP/1.1
    /// request's `Upgrade: h2c` (`curl --http2`; RFC 7540 §3.2, which RFC
    /// 9113 §3.1 deprecates).
    #[default]
    Both,
    /// Prior knowledge only. `Upgrade: h2c` is ignored: the request is
    /// answered over HTTP/1.1, as by a server without the upgrade (hyper
    /// and Kestrel have none). Choose this (or [`Off`](Self::Off)) behind
    /// a reverse proxy that passes `Upgrade` on, as proxies do for
    /// WebSockets: an upgrade made through such a proxy turns the
    /// client's connection into an HTTP/2 tunnel whose later requests the
    /// proxy no longer sees, nor its access rules ("h2c smuggling").
    /// A proxy writes its own requests on its connections to the server,
    /// so prior knowledge cannot come through one.
    PriorKnowledge,
    /// HTTP/1.1 only. The preface is then an HTTP/1 request line like any
    /// other, `PRI * HTTP/2.0`, answered `505 HTTP Version Not Supported`
    /// before the connection closes (hyper's HTTP/1 server closes it
    /// without an answer); `Upgrade: h2c` is ignored.
    Off,
}

/// The server's settings, checked by [`Server::bind`](crate::Server::bind)
/// (see [`validate`](Self::validate)) before it binds anything.
///
/// ```
/// use std::time::Duration;
/// use falconet_server::Options;
///
/// let options = Options::new()
///     .workers(2)
///     .max_connections(10_000)
///     .keep_alive_timeout(Duration::from_secs(5));
/// assert_eq!(options.worker_count(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub(crate) workers: usize,
    pub(crate) accept: Accept,
    pub(crate) max_connections: usize,
    pub(crate) max_request_line: usize,
    pub(crate) max_head: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body: u64,
    pub(crate) header_timeout: Duration,
    pub(crate) io_timeout: Duration,
    pub(crate) response_timeout: Option<Duration>,
    pub(crate) keep_alive_timeout: Duration,
    pub(crate) linger_timeout: Duration,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) max_pending_output: usize,
    pub(crate) max_pool_bytes: usize,
    pub(crate) min_response_rate: Option<MinDataRate>,
    pub(crate) min_request_body_rate: Option<MinDataRate>,
    pub(crate) http2: Http2Config,
    pub(crate) h2c: H2c,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// The defaults: a worker per available CPU (at most [`MAX_WORKERS`]),
    /// [`Accept::Shared`] and the `DEFAULT_*` constants of this module.
    pub fn new() -> Self {
        Self {
            workers: std::thread::available_parallelism().map_or(1, usize::from).min(MAX_WORKERS),
            accept: Accept::Shared,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_request_line: DEFAULT_MAX_REQUEST_LINE,
            max_head: DEFAULT_MAX_HEAD,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: DEFAULT_MAX_BODY,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            response_timeout: Some(DEFAULT_RESPONSE_TIMEOUT),
            keep_alive_timeout: DEFAULT_KEEP_ALIVE_TIMEOUT,
            linger_timeout: DEFAULT_LINGER_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            max_pending_output: DEFAULT_MAX_PENDING_OUTPUT,
            max_pool_bytes: DEFAULT_MAX_POOL_BYTES,
            min_response_rate: Some(DEFAULT_MIN_RESPONSE_RATE),
            min_request_body_rate: Some(DEFAULT_MIN_REQUEST_BODY_RATE),
            http2: Http2Config::default(),
            h2c: H2c::Both,
        }
    }

    /// Event-loop threads, 1 to [`MAX_WORKERS`].
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The worker threads this server runs.
    pub fn worker_count(&self) -> usize {
        self.workers
    }

    /// How connections reach the workers.
    pub fn accept(mut self, accept: Accept) -> Self {
        self.accept = accept;
        self
    }

    /// Open connections at most, 1 to [`MAX_CONNECTIONS`]; past it a new
    /// connection gets `503` and is closed.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Request-line bytes at most, [`MIN_REQUEST_LINE`] to `max_head`;
    /// past it, `414 URI Too Long` (`501` for a method too long for a line
    /// with any target). The line is counted without its CRLF. An HTTP/2
    /// request is held to the HTTP/1.1 line of its `:method` and `:path`
    /// (`METHOD SP path SP HTTP/1.1`), so a URL gets one answer over
    /// either protocol; its stream gets the `414`, the connection goes on.
    pub fn max_request_line(mut self, bytes: usize) -> Self {
        self.max_request_line = bytes;
        self
    }

    /// Request-head bytes at most, up to [`MAX_HEAD`]; past it,
    /// `431 Request Header Fields Too Large`. For HTTP/2 it is the
    /// SETTINGS_MAX_HEADER_LIST_SIZE advertised and enforced (RFC 9113
    /// 6.5.2: each field's name and value plus 32 bytes).
    pub fn max_head(mut self, bytes: usize) -> Self {
        self.max_head = bytes;
        self
    }

    /// Header fields per request at most, 1 to
    /// [`MAX_HEADERS_LIMIT`]; past it, `431`. Counted as HTTP/1.1 carries
    /// them, a field a line; for HTTP/2, the regular fields (the
    /// pseudo-fields stand for the request line) and the Host line that
    /// `:authority` stands for when no `host` field came, a `cookie` split
    /// into crumbs (RFC 9113 8.2.3, as browsers send it) counted as the
    /// one field it is joined into.
    pub fn max_headers(mut self, count: usize) -> Self {
        self.max_headers = count;
        self
    }

    /// Request-body bytes at most; past it, `413 Content Too Large`.
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.max_body = bytes;
        self
    }

    /// Time from a head's first byte to its end; past it, `408` and close
    /// (HTTP/2: GOAWAY, after a `408` on each stream whose body the client
    /// owes; a field block counts from its HEADERS frame to its last
    /// CONTINUATION, whatever else the connection carries). A head
    /// pipelined behind an answer not yet sent is timed from when that
    /// answer went out (the wait before is the I/O or response timeout's).
    /// Every timeout is [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`].
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// Time without progress while a body arrives (then `408`) or while
    /// responses wait for a client that does not read (then close). The
    /// client owes the bytes here; time the application takes to answer
    /// is [`response_timeout`](Self::response_timeout)'s. A body lent to
    /// the application (HTTP/2, or HTTP/1.1 chunked) is owed by the client
    /// only once the application has read what came, and its time counts
    /// from then: an application that reads late does not cut the
    /// client's time short. Progress is a request's bytes read (HTTP/2:
    /// HEADERS, CONTINUATION and DATA frames) or a response's bytes taken;
    /// HTTP/2 PINGs, SETTINGS, WINDOW_UPDATEs that release nothing and
    /// ignored frames are not, nor our acknowledgements of them.
    ///
    /// Over HTTP/2 each stream also has a clock of its own, so a stream
    /// whose body stalls while the connection's other streams move is
    /// answered `408` alone (reset with CANCEL once its response started;
    /// the body's read fails with `TimedOut`) and the connection goes on.
    /// A response waiting for its stream's credit is not timed out alone:
    /// that is the client's flow control (a consumer it paused), judged
    /// with the connection, as is every stream while the connection's
    /// output waits for the socket. When the connection's own timeout ends
    /// it (nothing on it moved), each stream whose body the client owes is
    /// still answered `408` (or reset) before the GOAWAY.
    pub fn io_timeout(mut self, timeout: Duration) -> Self {
        self.io_timeout = timeout;
        self
    }

    /// Time the application may keep a request waiting, once the client
    /// owes nothing, without a byte of its response moving: until it
    /// answers (a deferred [`Responder`](crate::Responder), a tower
    /// service's future), and between the pieces of a streamed body.
    /// [`DEFAULT_RESPONSE_TIMEOUT`]; `None` lets it take as long as it
    /// likes (long polling, server-sent events with long gaps).
    ///
    /// Past it, a response not yet started is answered
    /// `503 Service Unavailable` (as Go's `TimeoutHandler` does) and the
    /// responder's later writes fail; one already started is cut off:
    /// HTTP/1.1 closes the connection, HTTP/2 resets that stream
    /// (INTERNAL_ERROR) and the connection goes on. Over HTTP/1.1 the
    /// connection closes after a `503` too; over HTTP/2 only the streams
    /// the application held are answered. Judged on the workers' timer,
    /// so up to a tick late, from the connection's last progress (as
    /// [`io_timeout`](Self::io_timeout) counts it: PINGs do not hold it
    /// off) and, over HTTP/2, from each stream's own: a stream the
    /// application holds is answered at its time while the connection's
    /// other streams move. An HTTP/1.1 request pipelined behind the late
    /// one holds it off while its bytes arrive (up to the header timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use falconet_server::Options;
    ///
    /// let long_polls = Options::new().response_timeout(Some(Duration::from_secs(120)));
    /// let unbounded = Options::new().response_timeout(None);
    /// assert!(long_polls.validate().is_ok() && unbounded.validate().is_ok());
    /// ```
    pub fn response_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The least rate at which a client must take the responses that wait
    /// on it ([`DEFAULT_MIN_RESPONSE_RATE`]; `None` turns it off).
    ///
    /// A response waits on the client while its bytes are ready but the
    /// client does not take them: the socket's send buffer is full, or
    /// HTTP/2 flow control holds them back (the client grants no credit).
    /// While any does, the client owes `bytes_per_second` for each
    /// response waiting on it (HTTP/1: one; HTTP/2: each stream held back
    /// by its window, at least one), and pays with the bytes the socket
    /// takes (for HTTP/2, frames and all, but not the headers of DATA
    /// frames its credit cut short, which a client granting credit a few
    /// bytes at a time would otherwise pay the rate with, nor the PING and
    /// SETTINGS acknowledgements or resets its own frames asked for). It
    /// may fall behind by a `grace` period's worth (as time: the debt
    /// scales with the number of responses waiting); further behind, the
    /// connection is closed (HTTP/2 with GOAWAY(ENHANCE_YOUR_CALM) first,
    /// after a `408` on each stream whose request body the client owes).
    /// It may bank at most a period's worth ahead, so a fast start buys no
    /// long dribble after it. Judged on the workers' timer, so up to a
    /// tick late (a late tick still counts what was paid meanwhile). A
    /// tick bills at most half a grace, however late: a stalled timer (a
    /// handler blocking worker 0, which runs it; a paused VM) is not the
    /// client's delay.
    ///
    /// HTTP/2 bounds the bytes held back by windows (16 x
    /// [`max_pending_output`](Self::max_pending_output)); past that, later
    /// requests wait for room, so a client that holds that much paused
    /// can pay only by reading it, and is closed past its grace. The kernel
    /// takes a slow reader's bytes a segment at a time; over loopback a
    /// segment is 64 KiB, so there a reader slower than about 64 KiB per
    /// two periods looks slower than it is (over a network, with segments
    /// of a few KiB at such rates, it does not).
    ///
    /// So the slow-read attacks, a client that reads nothing or one that
    /// grants a byte of credit at a time to many streams (the data
    /// dribble, CVE-2019-9511), cannot hold a connection and its staged
    /// responses much past a period. A client that pauses for less than a
    /// period, or reads at the rate, is never cut off; with the rate off,
    /// [`io_timeout`](Self::io_timeout) still closes a client that takes
    /// nothing.
    ///
    /// ```
    /// use std::time::Duration;
    /// use falconet_server::{MinDataRate, Options};
    ///
    /// let options = Options::new()
    ///     .min_response_rate(Some(MinDataRate::new(1024, Duration::from_secs(10))));
    /// assert!(options.validate().is_ok());
    /// assert!(Options::new().min_response_rate(None).validate().is_ok());
    /// ```
    pub fn min_response_rate(mut self, rate: Option<MinDataRate>) -> Self {
        self.min_response_rate = rate;
        self
    }

    /// The least rate at which a client must send the request bodies it
    /// owes ([`DEFAULT_MIN_REQUEST_BODY_RATE`]; `None` turns it off): the
    /// slow-body attacks ("R-U-Dead-Yet", a large `Content-Length` sent a
    /// byte every few seconds, each byte within
    /// [`io_timeout`](Self::io_timeout)) cannot hold a connection much
    /// past a grace period.
    ///
    /// A body is owed while it has not all arrived and the server would
    /// read it: not while the application is behind on a body lent to it
    /// (reading it slowly is the application's time, not the client's),
    /// nor while responses wait at [`max_pending_output`](Self::max_pending_output)
    /// for the client to take them (the server reads nothing then, and
    /// [`min_response_rate`](Self::min_response_rate) judges the client),
    /// nor, over HTTP/2, on a stream whose receive window (or the
    /// connection's) is spent. While any is owed, the client owes
    /// `bytes_per_second` for each (HTTP/1.1: one; HTTP/2: each stream),
    /// paid with body bytes (HTTP/1.1: every byte read, chunk framing and
    /// extensions included, which the chunked decoder bounds; HTTP/2: DATA
    /// frames' data, not their padding, nor other frames). While a body is
    /// under way but not owed, its time is not billed and its debt kept.
    /// It may fall behind by a `grace` period's worth (as time: the debt
    /// scales with the bodies owed) and bank at most a period's worth
    /// ahead. Further behind, HTTP/1.1 answers `408 Request Timeout` (or
    /// closes, once a response started) and HTTP/2 answers `408` on each
    /// stream whose body is owed (resets it, once its response started),
    /// then sends GOAWAY(ENHANCE_YOUR_CALM); the connection closes. Judged on the
    /// workers' timer, so up to a tick late, and a tick bills at most half
    /// a grace, however late (as for the response rate); metering starts
    /// at the first tick that finds a body owed, so a body has at least
    /// its grace. A
    /// grace is a pause the client may take: one of milliseconds (the
    /// shortest is [`MIN_TIMEOUT`]) cuts off any client whose network
    /// stalls longer, however fast it is otherwise.
    ///
    /// With the rate off, a client that sends nothing is still answered
    /// `408` after [`io_timeout`](Self::io_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use falconet_server::{MinDataRate, Options};
    ///
    /// // Uploads over slow links: 64 bytes a second, 20 s to catch up.
    /// let options = Options::new()
    ///     .min_request_body_rate(Some(MinDataRate::new(64, Duration::from_secs(20))));
    /// assert!(options.validate().is_ok());
    /// assert!(Options::new().min_request_body_rate(None).validate().is_ok());
    /// ```
    pub fn min_request_body_rate(mut self, rate: Option<MinDataRate>) -> Self {
        self.min_request_body_rate = rate;
        self
    }

    /// Time an idle connection (no request under way) stays open, counted
    /// from the end of its last exchange: HTTP/2 frames that start none
    /// (PING, SETTINGS, WINDOW_UPDATE, PRIORITY) do not keep it open.
    pub fn keep_alive_timeout(mut self, timeout: Duration) -> Self {
        self.keep_alive_timeout = timeout;
        self
    }

    /// Time a closing connection waits for the client's end of stream.
    pub fn linger_timeout(mut self, timeout: Duration) -> Self {
        self.linger_timeout = timeout;
        self
    }

    /// Deadline of a graceful shutdown: connections still open then are closed.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Response bytes a connection may have waiting for its socket before it
    /// stops parsing (back-pressure toward the client); at least 1.
    pub fn max_pending_output(mut self, bytes: usize) -> Self {
        self.max_pending_output = bytes;
        self
    }

    /// Bound on the block pool that holds every connection's unparsed
    /// input, [`MIN_POOL_BYTES`] to [`MAX_POOL_BYTES`].
    pub fn max_pool_bytes(mut self, bytes: usize) -> Self {
        self.max_pool_bytes = bytes;
        self
    }

    /// HTTP/2's limits, among them those against the known attacks (rapid
    /// reset and MadeYouReset: `reset_budget` and
    /// `reset_refill_per_second`; PING and SETTINGS floods:
    /// `max_queued_control`; empty-frame floods: `max_empty_frames`), each
    /// with its default on [`Config`](crate::h2::connection::Config).
    /// Ranges: `max_concurrent_streams` at least 1; `initial_window_size` 1
    /// to 2^31-1; `connection_window_size` 65,535 to 2^31-1;
    /// `max_frame_size` 16,384 to 16,777,215; `max_queued_control` at
    /// least 1. Two fields follow the HTTP/1 limits instead, so that one
    /// limit holds for both protocols: `max_header_list_size` is
    /// [`max_head`](Self::max_head) and `max_fields` is
    /// [`max_headers`](Self::max_headers) and the four pseudo-fields (a
    /// cookie's crumbs counted once; the regular fields are then held to
    /// `max_headers` itself).
    ///
    /// ```
    /// use falconet_server::Options;
    /// use falconet_server::h2::connection::Config;
    ///
    /// let options = Options::new()
    ///     .http2(Config { max_concurrent_streams: 32, reset_budget: 50, ..Config::default() });
    /// assert!(options.validate().is_ok());
    /// ```
    pub fn http2(mut self, config: Http2Config) -> Self {
        self.http2 = config;
        self
    }

    /// Which ways a connection may become HTTP/2 (default [`H2c::Both`]:
    /// prior knowledge and `Upgrade: h2c`). The [`http2`](Self::http2)
    /// settings apply to the connections that do.
    pub fn h2c(mut self, h2c: H2c) -> Self {
        self.h2c = h2c;
        self
    }

    /// The workers' timer period: a quarter of the shortest timeout, within
    /// [`MIN_TICK`]`..=`[`MAX_TICK`]. So a tick is at most a quarter of any
    /// rate's grace ([`MIN_TIMEOUT`] / 4 is [`MIN_TICK`]).
    pub(crate) fn tick(&self) -> Duration {
        (self.shortest_timeout() / 4).clamp(MIN_TICK, MAX_TICK)
    }

    /// The shortest timeout: the workers' timer ticks at a quarter of it.
    fn shortest_timeout(&self) -> Duration {
        let grace = [self.min_response_rate, self.min_request_body_rate]
            .into_iter()
            .flatten()
            .map(|rate| rate.grace);
        [self.header_timeout, self.io_timeout, self.keep_alive_timeout, self.linger_timeout]
            .into_iter()
            .chain(grace)
            .chain(self.response_timeout)
            .min()
            .unwrap_or(DEFAULT_LINGER_TIMEOUT)
    }

    /// Checks every setting against its range (each builder method names
    /// it). [`Server::bind`](crate::Server::bind) calls this first, so a
    /// server is never bound, let alone started, with a setting it cannot
    /// run with.
    ///
    /// # Errors
    /// The [`OptionsError`] of the first setting out of range, in the
    /// order of the variants.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(OptionsError::Workers(self.workers));
        }
        if !(1..=MAX_CONNECTIONS).contains(&self.max_connections) {
            return Err(OptionsError::MaxConnections(self.max_connections));
        }
        if self.max_request_line < MIN_REQUEST_LINE || self.max_request_line > self.max_head {
            return Err(OptionsError::RequestLine(self.max_request_line));
        }
        if self.max_head > MAX_HEAD {
            return Err(OptionsError::Head(self.max_head));
        }
        if !(1..=MAX_HEADERS_LIMIT).contains(&self.max_headers) {
            return Err(OptionsError::Headers(self.max_headers));
        }
        let timeouts = [
            ("header_timeout", Some(self.header_timeout)),
            ("io_timeout", Some(self.io_timeout)),
            ("keep_alive_timeout", Some(self.keep_alive_timeout)),
            ("linger_timeout", Some(self.linger_timeout)),
            ("shutdown_timeout", Some(self.shutdown_timeout)),
            ("min_response_rate's grace", self.min_response_rate.map(|rate| rate.grace)),
            ("min_request_body_rate's grace", self.min_request_body_rate.map(|rate| rate.grace)),
            ("response_timeout", self.response_timeout),
        ];
        if let Some((option, value)) = timeouts
            .into_iter()
            .filter_map(|(option, value)| Some((option, value?)))
            .find(|(_, t)| !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(t))
        {
            return Err(OptionsError::Timeout { option, value });
        }
        if let Some(rate) = self.min_response_rate.filter(|rate| rate.bytes_per_second == 0) {
            return Err(OptionsError::MinResponseRate(rate));
        }
        if let Some(rate) = self.min_request_body_rate.filter(|rate| rate.bytes_per_second == 0) {
            return Err(OptionsError::MinRequestBodyRate(rate));
        }
        if self.max_pending_output == 0 {
            return Err(OptionsError::PendingOutput(self.max_pending_output));
        }
        if !(MIN_POOL_BYTES..=MAX_POOL_BYTES).contains(&self.max_pool_bytes) {
            return Err(OptionsError::PoolBytes(self.max_pool_bytes));
        }
        let h2 = &self.http2;
        let ranges: [(&'static str, u64, u64, u64); 5] = [
            ("max_concurrent_streams", h2.max_concurrent_streams.into(), 1, u32::MAX.into()),
            ("initial_window_size", h2.initial_window_size.into(), 1, MAX_WINDOW_SIZE.into()),
            (
                "connection_window_size",
                h2.connection_window_size.into(),
                DEFAULT_INITIAL_WINDOW_SIZE.into(),
                MAX_WINDOW_SIZE.into(),
            ),
            (
                "max_frame_size",
                h2.max_frame_size.into(),
                DEFAULT_MAX_FRAME_SIZE.into(),
                MAX_FRAME_LEN.into(),
            ),
            ("max_queued_control", h2.max_queued_control as u64, 1, u64::MAX),
        ];
        if let Some(&(setting, value, min, max)) =
            ranges.iter().find(|(_, value, min, max)| !(min..=max).contains(&value))
        {
            return Err(OptionsError::Http2 { setting, value, min, max });
        }
        Ok(())
    }
}

/// Workers at most.
pub const MAX_WORKERS: usize = 256;
/// The largest `max_connections`: 2^24. The registry (two or more shards of
/// 16,777,184 slots) can hold it whatever the CPU count, and a connection
/// id still fits a poll token.
pub const MAX_CONNECTIONS: usize = 1 << 24;
/// The smallest `max_request_line`: `GET / HTTP/1.1`, with room.
pub const MIN_REQUEST_LINE: usize = 64;
/// The largest `max_head`: a head is parsed out of the input pipe, which
/// pauses socket reads at 256 KiB unexamined; 60 KiB is far past any real
/// head (servers refuse heads past 8 to 64 KiB).
pub const MAX_HEAD: usize = 60 * 1024;
/// The shortest timeout (the timer's resolution is a few milliseconds).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(20);
/// The workers' shortest timer period (a quarter of [`MIN_TIMEOUT`]).
const MIN_TICK: Duration = Duration::from_millis(5);
/// The workers' longest timer period: long timeouts are still judged
/// twice a second.
const MAX_TICK: Duration = Duration::from_millis(500);
/// The longest timeout: a day. Deadlines are `Instant`s, and adding a
/// duration near `Duration::MAX` to one overflows (a worker panicked at
/// shutdown with `shutdown_timeout` at `u64::MAX` seconds).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);
/// Bytes of one slab of the server's pool (its blocks at the pool's
/// default size and count per slab).
const POOL_SLAB_BYTES: usize =
    falconet_pool::DEFAULT_BLOCK_SIZE * falconet_pool::DEFAULT_BLOCKS_PER_SLAB;
/// The smallest `max_pool_bytes`: 2 MiB (16 slabs of the pool), what one
/// request may hold at once with room to spare: its connection's input
/// pauses at 256 KiB unexamined (one read may take up to 256 KiB past
/// that), a deferred response's output at 256 KiB, and each thread that
/// returns blocks keeps up to a slab (128 KiB) of them for itself until it
/// next leases or the server takes them back. Below it (the bound was one
/// slab) a single upload could find the pool exhausted, and its connection
/// was closed unanswered.
pub const MIN_POOL_BYTES: usize = 16 * POOL_SLAB_BYTES;
/// The largest `max_pool_bytes`: as many slabs as the pool can track.
pub const MAX_POOL_BYTES: usize = POOL_SLAB_BYTES.saturating_mul(falconet_pool::MAX_SLABS);

/// A setting [`Options`] cannot run with.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// `workers` outside `1..=`[`MAX_WORKERS`].
    Workers(usize),
    /// `max_connections` outside `1..=`[`MAX_CONNECTIONS`].
    MaxConnections(usize),
    /// `max_request_line` below [`MIN_REQUEST_LINE`] or above `max_head`.
    RequestLine(usize),
    /// `max_head` above [`MAX_HEAD`].
    Head(usize),
    /// `max_headers` outside `1..=`[`MAX_HEADERS_LIMIT`].
    Headers(usize),
    /// A timeout outside [`MIN_TIMEOUT`]`..=`[`MAX_TIMEOUT`] (a
    /// [`MinDataRate`]'s grace included).
    Timeout {
        /// Which: the [`Options`] method's name (`"io_timeout"`, or
        /// `"min_response_rate's grace"` for a rate's grace).
        option: &'static str,
        /// The value refused.
        value: Duration,
    },
    /// A [`MinDataRate`] of 0 bytes a second (`None` turns the rate off).
    MinResponseRate(MinDataRate),
    /// A [`MinDataRate`] of 0 bytes a second for
    /// [`Options::min_request_body_rate`] (`None` turns the rate off).
    MinRequestBodyRate(MinDataRate),
    /// `max_pending_output` is 0.
    PendingOutput(usize),
    /// `max_pool_bytes` outside [`MIN_POOL_BYTES`]`..=`[`MAX_POOL_BYTES`].
    PoolBytes(usize),
    /// An [`Options::http2`] limit outside its range (`min..=max`).
    Http2 {
        /// The [`Config`](crate::h2::connection::Config) field.
        setting: &'static str,
        /// Its value.
        value: u64,
        /// The smallest value it may have.
        min: u64,
        /// The largest.
        max: u64,
    },
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Workers(n) => write!(f, "workers must be 1 to {MAX_WORKERS}, not {n}"),
            Self::MaxConnections(n) => {
                write!(f, "max_connections must be 1 to {MAX_CONNECTIONS}, not {n}")
            }
            Self::RequestLine(n) => {
                write!(f, "max_request_line must be {MIN_REQUEST_LINE} to max_head, not {n}")
            }
            Self::Head(n) => write!(f, "max_head must be at most {MAX_HEAD}, not {n}"),
            Self::Headers(n) => {
                write!(f, "max_headers must be 1 to {MAX_HEADERS_LIMIT}, not {n}")
            }
            Self::Timeout { option, value } => {
                write!(f, "{option} must be {MIN_TIMEOUT:?} to {MAX_TIMEOUT:?}, not {value:?}")
            }
            Self::MinResponseRate(_) => {
                write!(f, "min_response_rate must be at least 1 byte a second (None turns it off)")
            }
            Self::MinRequestBodyRate(_) => write!(
                f,
                "min_request_body_rate must be at least 1 byte a second (None turns it off)"
            ),
            Self::PendingOutput(n) => {
                write!(f, "max_pending_output must be at least 1, not {n}")
            }
            Self::Http2 { setting, value, min, max } => {
                write!(f, "http2 {setting} must be {min} to {max}, not {value}")
            }
            Self::PoolBytes(n) => {
                write!(f, "max_pool_bytes must be {MIN_POOL_BYTES} to {MAX_POOL_BYTES}, not {n}")
            }
        }
    }
}

impl std::error::Error for OptionsError {}
