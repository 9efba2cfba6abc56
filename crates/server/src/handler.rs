//! The application's side: [`Handler`], the [`Request`] it reads and the
//! [`Response`] it writes.

use std::fmt;

use crate::date::FIELDS_LEN;
use crate::syntax::TOKEN;

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
/// The steps run on the connection's worker thread, so they should not
/// block. State lives inside the connection: no allocation per request.
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
pub trait Handler: Send + Sync + 'static {
    /// What a request carries from its head to its response.
    type State: Send + 'static;

    /// The request head has arrived.
    fn head(&self, request: &Request<'_>) -> Self::State;

    /// A piece of the request body. The default ignores it.
    fn body(&self, state: &mut Self::State, chunk: &[u8]) {
        let _ = (state, chunk);
    }

    /// The body is complete: write the response. A response left without a
    /// body is sent with an empty one.
    fn respond(&self, state: Self::State, response: &mut Response<'_>);
}

/// The HTTP version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0: close after each response unless asked to keep alive.
    Http10,
    /// HTTP/1.1: keep alive unless asked to close.
    Http11,
}

/// How a request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLength {
    /// No body.
    Empty,
    /// `Content-Length` bytes.
    Known(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A request head, as [`Handler::head`] sees it. It borrows the
/// connection's input buffer.
#[derive(Debug)]
pub struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) target: &'a str,
    pub(crate) authority: &'a str,
    pub(crate) version: Version,
    pub(crate) headers: &'a [httparse::Header<'a>],
    pub(crate) body: BodyLength,
}

impl<'a> Request<'a> {
    /// The method, as sent (`GET`, `POST`, ...).
    pub fn method(&self) -> &'a str {
        self.method
    }

    /// The request target's path and query: as sent for the usual
    /// origin-form (`/plaintext`, `/a?b=c`); for an absolute-form target
    /// (`http://host/a?b=c`, RFC 9112 §3.2.2) the part after its authority
    /// (`/a?b=c`, or `/` when that is empty); `*` for `OPTIONS *`.
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
    /// from an absolute-form target, otherwise the Host field's value;
    /// empty when there is neither (an HTTP/1.0 request without Host) or
    /// Host was sent empty. Its syntax is checked (RFC 9110 §7.2): the
    /// server answered `400` to anything else.
    pub fn authority(&self) -> &'a str {
        self.authority
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The body's framing.
    pub fn body_length(&self) -> BodyLength {
        self.body
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

    /// The reason phrase the server sends (empty for codes it does not name).
    pub fn reason(self) -> &'static str {
        match self.0 {
            100 => "Continue",
            200 => "OK",
            201 => "Created",
            204 => "No Content",
            301 => "Moved Permanently",
            302 => "Found",
            304 => "Not Modified",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            413 => "Content Too Large",
            414 => "URI Too Long",
            417 => "Expectation Failed",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            503 => "Service Unavailable",
            505 => "HTTP Version Not Supported",
            _ => "",
        }
    }

    /// Whether a response with this status has no body (1xx, 204, 304).
    fn bodiless(self) -> bool {
        self.0 < 200 || self.0 == 204 || self.0 == 304
    }
}

/// A response the handler could not write as asked. Nothing invalid
/// reaches the wire: the call that fails writes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    /// A status code outside `100..=999`.
    InvalidStatus(u16),
    /// A header name that is not an HTTP token.
    InvalidHeaderName,
    /// A header value with CR, LF or NUL.
    InvalidHeaderValue,
    /// `Content-Length`, `Transfer-Encoding`, `Connection` or `Date`: the
    /// server writes these itself.
    ReservedHeader,
    /// A status or header after the head was written (the body began).
    HeadSent,
    /// A body after the response was complete.
    Finished,
}

impl fmt::Display for ResponseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidStatus(code) => write!(f, "status code {code} is outside 100..=999"),
            Self::InvalidHeaderName => f.write_str("header name is not an HTTP token"),
            Self::InvalidHeaderValue => f.write_str("header value contains CR, LF or NUL"),
            Self::ReservedHeader => f.write_str("the server writes this header itself"),
            Self::HeadSent => f.write_str("the response head was already written"),
            Self::Finished => f.write_str("the response is already complete"),
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
/// A line that is not `token ":" SP value`, has CR, LF or NUL in its
/// value, or names a field the server writes itself (see
/// [`ResponseError::ReservedHeader`]) fails to compile when used in a
/// `const`:
///
/// ```compile_fail
/// const BAD: falconet_server::Field = falconet_server::Field::new("Content-Length: 5");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    line: &'static str,
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
        assert!(!is_reserved_bytes(name), "the server writes this field itself");
        let mut j = i + 2;
        while j < bytes.len() {
            assert!(!matches!(bytes[j], b'\r' | b'\n' | 0), "a header value has no CR, LF or NUL");
            j += 1;
        }
        Self { line }
    }

    /// The line, `Name: value`.
    pub const fn as_str(self) -> &'static str {
        self.line
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing written yet: the status may change.
    Status,
    /// Status line written, header fields may follow.
    Headers,
    /// A chunked (or, for HTTP/1.0, close-delimited) body is being written.
    Streaming,
    Done,
}

/// The response being written, straight into the connection's output
/// buffer (sent after the handler returns, with every other response of
/// the same read).
///
/// Call, in order: [`status`](Self::status) (default 200), any
/// [`header`](Self::header)s, then either [`body`](Self::body) once (sent
/// with `Content-Length`) or [`write`](Self::write) any number of times
/// (sent chunked to HTTP/1.1 clients, close-delimited to HTTP/1.0 ones).
#[derive(Debug)]
pub struct Response<'a> {
    out: &'a mut Vec<u8>,
    /// `Server` and `Date`, rendered once a second.
    fields: &'a [u8; FIELDS_LEN],
    phase: Phase,
    status: Status,
    version: Version,
    head_only: bool,
    keep_alive: bool,
}

impl<'a> Response<'a> {
    pub(crate) fn new(
        out: &'a mut Vec<u8>,
        fields: &'a [u8; FIELDS_LEN],
        version: Version,
        head_only: bool,
        keep_alive: bool,
    ) -> Self {
        Self {
            out,
            fields,
            phase: Phase::Status,
            status: Status::OK,
            version,
            head_only,
            keep_alive,
        }
    }

    /// Sets the status (200 unless set).
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] after a header or the body.
    pub fn status(&mut self, status: Status) -> Result<&mut Self, ResponseError> {
        if self.phase != Phase::Status {
            return Err(ResponseError::HeadSent);
        }
        self.status = status;
        Ok(self)
    }

    /// Adds a header field.
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
        let value = value.as_ref();
        // Folds without early exits: short names and values check in a
        // few instructions, and the value loop vectorizes.
        if name.is_empty() || !name.bytes().fold(true, |ok, b| ok & TOKEN[usize::from(b)]) {
            return Err(ResponseError::InvalidHeaderName);
        }
        if value.iter().fold(false, |bad, &b| bad | (b == b'\r') | (b == b'\n') | (b == 0)) {
            return Err(ResponseError::InvalidHeaderValue);
        }
        if is_reserved(name) {
            return Err(ResponseError::ReservedHeader);
        }
        self.start_head()?;
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b": ");
        self.out.extend_from_slice(value);
        self.out.extend_from_slice(b"\r\n");
        Ok(self)
    }

    /// Adds a header field checked when the program was compiled (see
    /// [`Field`]): no check at run time.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    pub fn field(&mut self, field: Field) -> Result<&mut Self, ResponseError> {
        self.start_head()?;
        self.out.extend_from_slice(field.line.as_bytes());
        self.out.extend_from_slice(b"\r\n");
        Ok(self)
    }

    /// Asks to close the connection after this response.
    ///
    /// # Errors
    /// [`ResponseError::HeadSent`] once the body began.
    pub fn close(&mut self) -> Result<&mut Self, ResponseError> {
        if matches!(self.phase, Phase::Streaming | Phase::Done) {
            return Err(ResponseError::HeadSent);
        }
        self.keep_alive = false;
        Ok(self)
    }

    /// Writes the whole body (with `Content-Length`) and completes the
    /// response.
    ///
    /// # Errors
    /// [`ResponseError::Finished`] after another `body`, or
    /// [`ResponseError::HeadSent`] after [`write`](Self::write).
    pub fn body(&mut self, body: &[u8]) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Streaming => return Err(ResponseError::HeadSent),
            Phase::Done => return Err(ResponseError::Finished),
            Phase::Status | Phase::Headers => {}
        }
        self.start_head()?;
        let mut tail = Tail::new();
        if !self.status.bodiless() {
            tail.push(b"Content-Length: ");
            tail.decimal(body.len() as u64);
            tail.push(b"\r\n");
        }
        self.end_head(tail);
        if !self.head_only && !self.status.bodiless() {
            self.out.extend_from_slice(body);
        }
        self.phase = Phase::Done;
        Ok(())
    }

    /// Writes a piece of a streamed body. A status without a body (1xx,
    /// 204, 304) streams nothing: its head carries no framing field and the
    /// bytes are dropped.
    ///
    /// # Errors
    /// [`ResponseError::Finished`] after [`body`](Self::body).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Done => return Err(ResponseError::Finished),
            Phase::Status | Phase::Headers => {
                self.start_head()?;
                let mut tail = Tail::new();
                if self.status.bodiless() {
                    // 1xx, 204, 304: no body, so no framing field (RFC 9112
                    // §6.1 forbids Transfer-Encoding in 1xx and 204).
                } else if self.version == Version::Http11 {
                    tail.push(b"Transfer-Encoding: chunked\r\n");
                } else {
                    // HTTP/1.0 has no chunked coding: the end of the body
                    // is the end of the connection.
                    self.keep_alive = false;
                }
                self.end_head(tail);
                self.phase = Phase::Streaming;
            }
            Phase::Streaming => {}
        }
        if bytes.is_empty() || self.head_only || self.status.bodiless() {
            return Ok(());
        }
        if self.version == Version::Http11 {
            write_hex(self.out, bytes.len() as u64);
            self.out.extend_from_slice(b"\r\n");
            self.out.extend_from_slice(bytes);
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.out.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Completes the response; returns whether the connection stays open.
    pub(crate) fn finish(mut self) -> bool {
        match self.phase {
            Phase::Status | Phase::Headers => {
                // Cannot fail: the phase allows a body.
                let _ = self.body(b"");
            }
            Phase::Streaming => {
                if self.version == Version::Http11 && !self.head_only && !self.status.bodiless() {
                    self.out.extend_from_slice(b"0\r\n\r\n");
                }
            }
            Phase::Done => {}
        }
        self.keep_alive
    }

    /// Writes the status line and the server's own fields, once.
    fn start_head(&mut self) -> Result<(), ResponseError> {
        match self.phase {
            Phase::Status => {
                if self.status == Status::OK {
                    self.out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
                } else {
                    self.out.extend_from_slice(b"HTTP/1.1 ");
                    write_decimal(self.out, u64::from(self.status.code()));
                    self.out.push(b' ');
                    self.out.extend_from_slice(self.status.reason().as_bytes());
                    self.out.extend_from_slice(b"\r\n");
                }
                self.out.extend_from_slice(self.fields);
                self.phase = Phase::Headers;
                Ok(())
            }
            Phase::Headers => Ok(()),
            Phase::Streaming => Err(ResponseError::HeadSent),
            Phase::Done => Err(ResponseError::Finished),
        }
    }

    /// Ends the head with `tail` (the framing field), the connection
    /// field and the blank line: one copy into the output.
    fn end_head(&mut self, mut tail: Tail) {
        match (self.keep_alive, self.version) {
            (false, _) => tail.push(b"Connection: close\r\n"),
            (true, Version::Http10) => tail.push(b"Connection: keep-alive\r\n"),
            (true, Version::Http11) => {}
        }
        tail.push(b"\r\n");
        self.out.extend_from_slice(tail.as_bytes());
    }
}

/// The end of a response head, assembled on the stack: the longest is
/// `Content-Length: <20 digits>\r\nConnection: keep-alive\r\n\r\n`.
struct Tail {
    bytes: [u8; 64],
    len: usize,
}

impl Tail {
    fn new() -> Self {
        Self { bytes: [0; 64], len: 0 }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn decimal(&mut self, n: u64) {
        let mut digits = [0u8; 20];
        let start = format_decimal(&mut digits, n);
        self.push(&digits[start..]);
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The fields the server writes itself.
fn is_reserved(name: &str) -> bool {
    is_reserved_bytes(name.as_bytes())
}

const fn is_reserved_bytes(name: &[u8]) -> bool {
    let reserved: &[u8] = match name.len() {
        4 => b"date",
        10 => b"connection",
        14 => b"content-length",
        17 => b"transfer-encoding",
        _ => return false,
    };
    name.eq_ignore_ascii_case(reserved)
}

pub(crate) fn write_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let start = format_decimal(&mut digits, n);
    out.extend_from_slice(&digits[start..]);
}

/// Writes `n` at the end of `digits`; returns where it starts.
fn format_decimal(digits: &mut [u8; 20], mut n: u64) -> usize {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return i;
        }
    }
}

fn write_hex(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[u8; FIELDS_LEN] =
        b"Server: falconet\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n";

    fn respond(
        version: Version,
        head_only: bool,
        f: impl FnOnce(&mut Response<'_>),
    ) -> (String, bool) {
        let mut out = Vec::new();
        let mut response = Response::new(&mut out, FIELDS, version, head_only, true);
        f(&mut response);
        let keep_alive = response.finish();
        (String::from_utf8(out).unwrap(), keep_alive)
    }

    #[test]
    fn sized_body() {
        let (text, keep_alive) = respond(Version::Http11, false, |r| {
            r.header("Content-Type", "text/plain").unwrap().body(b"hi").unwrap();
        });
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nServer: falconet\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\
             Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        );
        assert!(keep_alive);
    }

    #[test]
    fn streamed_body_is_chunked_for_1_1_and_close_delimited_for_1_0() {
        let (text, keep_alive) = respond(Version::Http11, false, |r| {
            r.write(b"hello ").unwrap();
            r.write(b"").unwrap();
            r.write(b"world, twenty bytes.").unwrap();
        });
        assert!(text.ends_with("Transfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n14\r\nworld, twenty bytes.\r\n0\r\n\r\n"));
        assert!(keep_alive);
        let (text, keep_alive) = respond(Version::Http10, false, |r| r.write(b"old").unwrap());
        assert!(text.ends_with("Connection: close\r\n\r\nold"), "{text}");
        assert!(!keep_alive);
    }

    #[test]
    fn head_requests_get_the_length_but_no_body() {
        let (text, _) = respond(Version::Http11, true, |r| r.body(b"12345").unwrap());
        assert!(text.ends_with("Content-Length: 5\r\n\r\n"), "{text}");
    }

    #[test]
    fn an_empty_response_has_length_zero_and_1_0_keep_alive_is_announced() {
        let (text, _) = respond(Version::Http10, false, |_| {});
        assert!(text.ends_with("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n"), "{text}");
        let (text, _) = respond(Version::Http11, false, |r| {
            r.status(Status::NO_CONTENT).unwrap();
        });
        assert!(
            text.starts_with("HTTP/1.1 204 No Content\r\n") && text.ends_with("GMT\r\n\r\n"),
            "{text}"
        );
    }

    /// RFC 9112 §6.1: no Transfer-Encoding in a 1xx or 204 response, and
    /// (§6.3) no body after a 1xx, 204 or 304 head, streamed or not, for
    /// HTTP/1.1 and 1.0 alike (a 1.0 client keeps its connection).
    #[test]
    fn a_bodiless_status_streams_no_framing_and_no_body() {
        for version in [Version::Http11, Version::Http10] {
            for status in [Status::NO_CONTENT, Status::new(304).unwrap(), Status::CONTINUE] {
                let (text, keep_alive) = respond(version, false, |r| {
                    r.status(status).unwrap();
                    r.write(b"ignored").unwrap();
                    r.write(b"too").unwrap();
                });
                assert!(!text.contains("Transfer-Encoding"), "{text}");
                assert!(
                    text.ends_with("GMT\r\n\r\n") || text.ends_with("keep-alive\r\n\r\n"),
                    "{text}"
                );
                assert!(keep_alive, "{version:?} {status:?}");
            }
        }
    }

    #[test]
    fn the_path_of_a_target_with_an_empty_path_is_the_root() {
        let request = |target| Request {
            method: "GET",
            target,
            authority: "a",
            version: Version::Http11,
            headers: &[],
            body: BodyLength::Empty,
        };
        assert_eq!(request("?q=1").path(), "/", "http://a?q=1 in absolute-form");
        assert_eq!(request("/x?q").path(), "/x");
        assert_eq!(request("/x").path(), "/x");
        assert_eq!(request("*").path(), "*");
        assert_eq!(request("/x").authority(), "a");
    }

    /// RFC 9112 §4: the space after the status code is sent even when the
    /// reason phrase is empty.
    #[test]
    fn a_status_without_a_reason_keeps_its_space() {
        let (text, _) = respond(Version::Http11, false, |r| {
            r.status(Status::new(299).unwrap()).unwrap();
        });
        assert!(text.starts_with("HTTP/1.1 299 \r\n"), "{text}");
    }

    #[test]
    fn misuse_is_a_typed_error_and_writes_nothing() {
        respond(Version::Http11, false, |r| {
            assert_eq!(r.header("Bad Name", "x").unwrap_err(), ResponseError::InvalidHeaderName);
            assert_eq!(r.header("X", "a\r\nb").unwrap_err(), ResponseError::InvalidHeaderValue);
            assert_eq!(r.header("content-length", "1").unwrap_err(), ResponseError::ReservedHeader);
            assert_eq!(
                r.header("Transfer-Encoding", "gzip").unwrap_err(),
                ResponseError::ReservedHeader
            );
            assert_eq!(Status::new(42).unwrap_err(), ResponseError::InvalidStatus(42));
            r.header("X", "1").unwrap();
            assert_eq!(r.status(Status::NOT_FOUND).unwrap_err(), ResponseError::HeadSent);
            r.body(b"").unwrap();
            assert_eq!(r.body(b"").unwrap_err(), ResponseError::Finished);
            assert_eq!(r.write(b"x").unwrap_err(), ResponseError::Finished);
        });
    }

    #[test]
    fn compile_time_fields() {
        const TEXT: Field = Field::new("Content-Type: text/plain");
        let (text, _) = respond(Version::Http11, false, |r| {
            r.field(TEXT).unwrap().body(b"x").unwrap();
        });
        assert!(
            text.contains("\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx"),
            "{text}"
        );
        for bad in ["", "No colon", ": empty", "Bad Name: x", "X:no-space", "Date: now", "X: a\rb"]
        {
            let line: &'static str = Box::leak(bad.to_string().into_boxed_str());
            assert!(std::panic::catch_unwind(|| Field::new(line)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn numbers() {
        for n in [0, 9, 10, 12345, u64::MAX] {
            let mut out = Vec::new();
            write_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
            out.clear();
            write_hex(&mut out, n);
            assert_eq!(out, format!("{n:x}").into_bytes());
        }
    }
}
