//! The application's side: [`Handler`], the [`Request`] it reads and the
//! [`Response`] it writes.

use std::fmt;

use crate::response::Response;
use crate::syntax::TOKEN;
use crate::trailers::Trailers;

/// What the server calls for each request, in three steps:
///
/// 1. [`head`](Self::head) when the request head has arrived: read what you
///    need from the [`Request`] (it borrows the connection's input) and
///    return the request's state;
/// 2. [`body`](Self::body) for each piece of the body as it arrives
///    (de-chunked, in order; never called for a request without a body);
/// 3. [`respond`](Self::respond) once the body is complete: write the
///    [`Response`].
///
/// The steps run on the connection's worker thread, so they must not
/// block. State lives inside the connection: no allocation per request.
///
/// Work that waits (a database, a timer, a slow producer) leaves the
/// worker's thread: in `respond`, [`Response::defer`] hands out a
/// [`Responder`](crate::Responder) that answers later from any thread,
/// while the worker goes on serving its other connections. A body the
/// application wants to read itself (large, or streamed back) is asked for
/// in `head` with [`Request::stream_body`]: `respond` is then called at
/// once, and [`Response::take_body`] hands over a
/// [`RequestBody`](crate::RequestBody) that reads straight out of the
/// connection's input pipe on any thread. Requests pipelined behind a
/// deferred response wait for it; answers go out in order.
///
/// ```
/// use falconet_server::{Handler, Request, Response, Status};
///
/// /// Counts the bytes of each POST body.
/// struct Counter;
///
/// impl Handler for Counter {
///     type State = Option<u64>;
///     fn head(&self, request: &Request<'_>) -> Option<u64> {
///         (request.method() == "POST").then_some(0)
///     }
///     fn body(&self, state: &mut Option<u64>, chunk: &[u8]) {
///         if let Some(count) = state {
///             *count += chunk.len() as u64;
///         }
///     }
///     fn respond(&self, state: Option<u64>, response: &mut Response<'_>) {
///         match state {
///             Some(count) => {
///                 let _ = response.body(format!("{count} bytes\n").as_bytes());
///             }
///             None => {
///                 let _ = response.status(Status::METHOD_NOT_ALLOWED);
///             }
///         }
///     }
/// }
/// ```
///
/// Answering later, from another thread:
///
/// ```
/// use falconet_server::{Handler, Request, Response};
///
/// struct Later;
///
/// impl Handler for Later {
///     type State = ();
///     fn head(&self, _: &Request<'_>) {}
///     fn respond(&self, _: (), response: &mut Response<'_>) {
///         let Ok(responder) = response.defer() else { return };
///         std::thread::spawn(move || {
///             // ... wait for something ...
///             let _ = responder.body(b"done\n");
///         });
///     }
/// }
/// ```
///
/// Every method runs on a worker's thread, inside its event loop and
/// outside any async runtime: `tokio::spawn` there panics ("no reactor
/// running"), and the panic ends the request (`500`, then the HTTP/1.1
/// connection closes). Keep a `tokio::runtime::Handle` in the handler
/// and spawn with it (`handle.spawn(...)`, as `hello::Demo` does), and
/// never block: a blocked method stalls every connection of its worker.
/// The waits that could never end there (a blocking read of the body,
/// `Responder::write_blocking`, either one's async form under a
/// `block_on`, `Running::join`) fail with a `Deadlock` or
/// [`ServerError::OnWorker`](crate::ServerError::OnWorker) error instead.
pub trait Handler: Send + Sync + 'static {
    /// What a request carries from its head to its response.
    type State: Send + 'static;

    /// The request head has arrived.
    fn head(&self, request: &Request<'_>) -> Self::State;

    /// A piece of the request body. The default ignores it.
    fn body(&self, state: &mut Self::State, chunk: &[u8]) {
        let _ = (state, chunk);
    }

    /// The request's trailer fields (a chunked body's trailer section, an
    /// HTTP/2 stream's trailing HEADERS), after the body's last piece and
    /// before [`respond`](Self::respond); not called for a request without
    /// them. They are not part of the head: what they mean is the
    /// handler's to decide (RFC 9110 §6.5.1). The default ignores them. (A
    /// body the application reads itself, [`Request::stream_body`], hands
    /// them over with
    /// [`RequestBody::take_trailers`](crate::RequestBody::take_trailers)
    /// instead.)
    fn trailers(&self, state: &mut Self::State, trailers: &Trailers) {
        let _ = (state, trailers);
    }

    /// The body is complete: write the response. A response left without a
    /// body is sent with an empty one.
    fn respond(&self, state: Self::State, response: &mut Response<'_>);

    /// Whether blocking the calling thread would stall this handler's own
    /// work: the thread is running the current-thread tokio runtime the
    /// handler spawns its tasks on, in that runtime's `block_on` (the body
    /// of `#[tokio::main(flavor = "current_thread")]` or `#[tokio::test]`),
    /// where the tasks run only while it awaits.
    /// `tower::TowerHandler` and `hello::Demo` answer it;
    /// then [`Running::join`](crate::Running::join) and [`Server::run`](crate::Server::run)
    /// refuse, and a drop of [`Running`](crate::Running) does not wait. The
    /// default: `false`; a handler that wraps another forwards its answer.
    fn blocking_here_stalls(&self) -> bool {
        false
    }
}

/// The HTTP version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0: close after each response unless asked to keep alive.
    Http10,
    /// HTTP/1.1: keep alive unless asked to close.
    Http11,
    /// HTTP/2 (h2c): one stream of a multiplexed connection.
    Http2,
}

/// How a request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLength {
    /// No body.
    Empty,
    /// `Content-Length` bytes (over HTTP/2 also `0`, for a stream its
    /// head did not end: trailers may still follow).
    Known(u64),
    /// `Transfer-Encoding: chunked`, or an HTTP/2 body without
    /// `content-length`: its length is known when it ends.
    Chunked,
}

/// A request head, as [`Handler::head`] sees it. It borrows the
/// connection's input buffer.
#[derive(Debug)]
pub struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    /// Validated `uri-host [ ":" port ]`: ASCII, so `authority()` never
    /// fails to read it as text (checked there, not on every request).
    pub(crate) authority: &'a [u8],
    /// See [`scheme`](Self::scheme).
    pub(crate) scheme: &'a str,
    /// The target named its authority: an HTTP/1 absolute-form target, or
    /// an HTTP/2 request with `:authority` (`:scheme` and `:authority` are
    /// its URI's parts). Not for an origin-form target, nor an HTTP/2
    /// request without `:authority`, whose authority is the Host field's.
    /// Read by the tower path's URI.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) absolute: bool,
    pub(crate) version: Version,
    pub(crate) headers: &'a [httparse::Header<'a>],
    pub(crate) body: BodyLength,
    /// [`stream_body`](Self::stream_body) was called.
    pub(crate) stream: std::cell::Cell<bool>,
    /// The client's address.
    pub(crate) peer: Option<std::net::SocketAddr>,
}

impl<'a> Request<'a> {
    /// The method, as sent (`GET`, `POST`, ...).
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The client's address: the TCP peer of the connection the request
    /// came on (a proxy's, behind one). `None` for a
    /// [`Session`](crate::Session) driven without a socket.
    pub fn peer_addr(&self) -> Option<std::net::SocketAddr> {
        self.peer
    }

    /// The request target's path and query: as sent for the usual
    /// origin-form (`/plaintext`, `/a?b=c`); for an absolute-form target
    /// (`http://host/a?b=c`, RFC 9112 §3.2.2) the part after its authority
    /// (`/a?b=c`, `/` when that is empty, `?q` for `http://host?q`, whose
    /// [`path`](Self::path) is `/`); `*` for `OPTIONS *`.
    pub fn target(&self) -> &'a str {
        self.target
    }

    /// The target without its query (`/` for an absolute-form target whose
    /// path is empty, such as `http://host?q`).
    pub fn path(&self) -> &'a str {
        match self.target.bytes().position(|b| b == b'?') {
            Some(0) => "/",
            Some(query) => &self.target[..query],
            None => self.target,
        }
    }

    /// The authority the request is for (`host` or `host:port`): taken
    /// from an absolute-form target (or HTTP/2's `:authority`), otherwise
    /// the Host field's value; empty only when there is neither (an
    /// HTTP/1.0 request without Host, an HTTP/2 request with neither
    /// `:authority` nor `host`, as RFC 9113 §8.3.1 allows). Its syntax is
    /// checked (RFC 9110 §7.2) and it names a host: the server answered
    /// `400` to anything else, an empty Host or a port alone (`Host: :80`)
    /// included.
    pub fn authority(&self) -> &'a str {
        std::str::from_utf8(self.authority).unwrap_or_default()
    }

    /// The scheme the request is for (RFC 9110 §4.2): HTTP/2's `:scheme`
    /// as sent (a TLS-terminating proxy in front sends `https`), `https`
    /// or `http` for an HTTP/1 absolute-form target that names it (in any
    /// case), otherwise `http`, the connection's own (falconet speaks
    /// plain TCP).
    pub fn scheme(&self) -> &'a str {
        self.scheme
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The body's framing.
    pub fn body_length(&self) -> BodyLength {
        self.body
    }

    /// Asks for the body as a [`RequestBody`](crate::RequestBody) to read on
    /// any thread, instead of pieces through [`Handler::body`]. The server
    /// then calls [`Handler::respond`] at once, where
    /// [`Response::take_body`](crate::Response::take_body) hands the body
    /// over (usually together with [`Response::defer`](crate::Response::defer)).
    /// No effect on a request without a body.
    ///
    /// A request with `Expect: 100-continue` gets its `100 (Continue)` when
    /// the body is first read, not before: a response given without
    /// reading it saves the client the upload, and closes the connection
    /// (the client may or may not send the body).
    pub fn stream_body(&self) {
        self.stream.set(true);
    }

    /// Every header field, in order, as (name, value).
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, &'a [u8])> + '_ {
        self.headers.iter().map(|h| (h.name, h.value))
    }

    /// The first field named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
}

/// A response status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(u16);

impl Status {
    /// 100 Continue.
    pub const CONTINUE: Self = Self(100);
    /// 200 OK.
    pub const OK: Self = Self(200);
    /// 204 No Content.
    pub const NO_CONTENT: Self = Self(204);
    /// 400 Bad Request.
    pub const BAD_REQUEST: Self = Self(400);
    /// 404 Not Found.
    pub const NOT_FOUND: Self = Self(404);
    /// 405 Method Not Allowed.
    pub const METHOD_NOT_ALLOWED: Self = Self(405);
    /// 408 Request Timeout.
    pub const REQUEST_TIMEOUT: Self = Self(408);
    /// 413 Content Too Large.
    pub const CONTENT_TOO_LARGE: Self = Self(413);
    /// 414 URI Too Long.
    pub const URI_TOO_LONG: Self = Self(414);
    /// 417 Expectation Failed.
    pub const EXPECTATION_FAILED: Self = Self(417);
    /// 431 Request Header Fields Too Large.
    pub const HEADER_FIELDS_TOO_LARGE: Self = Self(431);
    /// 500 Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: Self = Self(500);
    /// 501 Not Implemented.
    pub const NOT_IMPLEMENTED: Self = Self(501);
    /// 503 Service Unavailable.
    pub const SERVICE_UNAVAILABLE: Self = Self(503);
    /// 505 HTTP Version Not Supported.
    pub const VERSION_NOT_SUPPORTED: Self = Self(505);

    /// A status from its code.
    ///
    /// # Errors
    /// [`ResponseError::InvalidStatus`] outside `100..=999`.
    pub fn new(code: u16) -> Result<Self, ResponseError> {
        if (100..=999).contains(&code) {
            Ok(Self(code))
        } else {
            Err(ResponseError::InvalidStatus(code))
        }
    }

    /// The code.
    pub fn code(self) -> u16 {
        self.0
    }

    /// The reason phrase the server sends: RFC 9110's (and RFC 6585's
    /// 428, 429, 431 and 511, RFC 7725's 451, RFC 8297's 103, RFC 8470's
    /// 425) for the codes they define, empty for others (a status line may
    /// have an empty reason, RFC 9112 §4).
    pub fn reason(self) -> &'static str {
        match self.0 {
            100 => "Continue",
            101 => "Switching Protocols",
            103 => "Early Hints",
            200 => "OK",
            201 => "Created",
            202 => "Accepted",
            203 => "Non-Authoritative Information",
            204 => "No Content",
            205 => "Reset Content",
            206 => "Partial Content",
            300 => "Multiple Choices",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            304 => "Not Modified",
            305 => "Use Proxy",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            402 => "Payment Required",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            406 => "Not Acceptable",
            407 => "Proxy Authentication Required",
            408 => "Request Timeout",
            409 => "Conflict",
            410 => "Gone",
            411 => "Length Required",
            412 => "Precondition Failed",
            413 => "Content Too Large",
            414 => "URI Too Long",
            415 => "Unsupported Media Type",
            416 => "Range Not Satisfiable",
            417 => "Expectation Failed",
            421 => "Misdirected Request",
            422 => "Unprocessable Content",
            425 => "Too Early",
            426 => "Upgrade Required",
            428 => "Precondition Required",
            429 => "Too Many Requests",
            431 => "Request Header Fields Too Large",
            451 => "Unavailable For Legal Reasons",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            505 => "HTTP Version Not Supported",
            511 => "Network Authentication Required",
            _ => "",
        }
    }

    /// Whether a response with this status has no body (1xx, 204, 304).
    pub(crate) fn bodiless(self) -> bool {
        self.0 < 200 || self.0 == 204 || self.0 == 304
    }

    /// Whether a response with this status carries no content: the
    /// bodiless ones, and 205, which has a body by its framing (RFC 9112
    /// §6.3) that must be empty (RFC 9110 §15.3.6).
    pub(crate) fn contentless(self) -> bool {
        self.bodiless() || self.0 == 205
    }
}

/// A response the handler could not write as asked. Nothing invalid
/// reaches the wire: the call that fails writes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    /// A status code outside `100..=999`.
    InvalidStatus(u16),
    /// A 1xx (informational) status as a response's status: a response
    /// ends with a final one (200 to 999), and a client given a 1xx alone
    /// waits for the final answer that never comes (HTTP/1.1 pairs the
    /// next answer with this request). The server sends `100 Continue`
    /// itself where a request expects it.
    InformationalStatus(u16),
    /// A header name that is not an HTTP token.
    InvalidHeaderName,
    /// A header value with a control octet other than HTAB (CR, LF, NUL,
    /// DEL and the rest: RFC 9110 §5.5), which is never sent.
    InvalidHeaderValue,
    /// `Content-Length`, `Transfer-Encoding`, `Connection` or `Date`: the
    /// server writes these itself.
    ReservedHeader,
    /// A status or header after the head was written (the body began).
    HeadSent,
    /// A body after the response was complete.
    Finished,
    /// The connection is gone (the client closed it, or the server did):
    /// nobody will read this response. Stop producing it.
    Closed,
    /// The server's buffer pool had no memory for the response's bytes; the
    /// response is abandoned and its connection closes.
    NoMemory,
    /// [`Response::defer`](crate::Response::defer) on a response that
    /// cannot be deferred (one already deferred, or a connection being
    /// driven without an application link).
    CannotDefer,
    /// A status, field or body written to a [`Response`](crate::Response)
    /// after [`defer`](crate::Response::defer): the answer is its
    /// [`Responder`](crate::Responder)'s to write now. Nothing was written.
    Deferred,
    /// [`Responder::write_blocking`](crate::Responder::write_blocking) (or
    /// [`write`](crate::Responder::write) driven by a `block_on`) on a
    /// server worker's thread (a handler writing its deferred response
    /// inside `respond`) while the client is behind by the responder's
    /// pause threshold (256 KiB; 64 KiB on an HTTP/2 stream): the worker
    /// it would wait for is this thread, so the wait would never end.
    /// Nothing was written and the responder still works: write from
    /// another thread or a task, or send the body whole with
    /// [`Responder::body`](crate::Responder::body).
    Deadlock,
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidStatus(code) => write!(f, "status code {code} is outside 100..=999"),
            Self::InformationalStatus(code) => {
                write!(f, "status {code} is informational (1xx), not a final response status")
            }
            Self::InvalidHeaderName => f.write_str("header name is not an HTTP token"),
            Self::InvalidHeaderValue => {
                f.write_str("header value contains a control octet other than tab")
            }
            Self::ReservedHeader => f.write_str("the server writes this header itself"),
            Self::HeadSent => f.write_str("the response head was already written"),
            Self::Finished => f.write_str("the response is already complete"),
            Self::Closed => f.write_str("the connection is closed"),
            Self::NoMemory => f.write_str("no buffer memory for the response"),
            Self::CannotDefer => f.write_str("this response cannot be deferred"),
            Self::Deferred => {
                f.write_str("the response was deferred: write it through its Responder")
            }
            Self::Deadlock => f.write_str(
                "write_blocking on the server's worker thread would wait for that same thread",
            ),
        }
    }
}

impl std::error::Error for ResponseError {}

/// A header field checked at compile time, for the fields a handler sends
/// with every response:
///
/// ```
/// use falconet_server::Field;
///
/// const TEXT: Field = Field::new("Content-Type: text/plain");
/// assert_eq!(TEXT.as_str(), "Content-Type: text/plain");
/// ```
///
/// A line that is not `token ":" SP value`, has a control octet other
/// than HTAB in its value (CR, LF, NUL, DEL: RFC 9110 §5.5), or names a
/// field the server writes itself (see [`ResponseError::ReservedHeader`])
/// fails to compile when used in a `const`:
///
/// ```compile_fail
/// const BAD: falconet_server::Field = falconet_server::Field::new("Content-Length: 5");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    line: &'static str,
    /// Its name is `Server` (any case), found when it is compiled: the
    /// server's own is then left out, with no look at the line per use.
    server: bool,
    /// Its name is `Upgrade` (any case): HTTP/1 then adds the `upgrade`
    /// connection option that must go with it (RFC 9110 §7.8).
    upgrade: bool,
}

impl Field {
    /// Checks `line` (`Name: value`, without CRLF). Call it in a `const`.
    ///
    /// # Panics
    /// On an invalid or reserved line: at compile time in a `const`.
    pub const fn new(line: &'static str) -> Self {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() && bytes[i] != b':' {
            assert!(TOKEN[bytes[i] as usize], "a header name is an HTTP token");
            i += 1;
        }
        assert!(i > 0 && i + 1 < bytes.len() && bytes[i + 1] == b' ', "a field is `Name: value`");
        let (name, _) = bytes.split_at(i);
        assert!(!crate::wire::is_reserved_bytes(name), "the server writes this field itself");
        let mut j = i + 2;
        while j < bytes.len() {
            assert!(
                crate::syntax::FIELD_VALUE[bytes[j] as usize],
                "a header value has no control octet but HTAB (RFC 9110 5.5)"
            );
            j += 1;
        }
        Self { line, server: crate::wire::is_server(name), upgrade: crate::wire::is_upgrade(name) }
    }

    /// The line, `Name: value`.
    pub const fn as_str(self) -> &'static str {
        self.line
    }

    /// Whether it names the `Server` field.
    pub(crate) const fn names_server(self) -> bool {
        self.server
    }

    /// Whether it names the `Upgrade` field.
    pub(crate) const fn names_upgrade(self) -> bool {
        self.upgrade
    }
}
