//! The TechEmpower endpoints, `GET /plaintext` and `GET /json` ([`Hello`]),
//! and, with the `tokio` feature, the same plus two endpoints answered off
//! the event loop (`Demo`): `GET /delay?ms=N` and `POST /echo`, and
//! `GET /bytes?n=N` and `POST /upload` for transfer benchmarks.

use std::fmt::{self, Write as _};

use crate::handler::{Field, Handler, Request, Status};
use crate::response::Response;

/// Serves `GET /plaintext` (`Hello, World!`) and `GET /json`
/// (`{"message":"Hello, World!"}`, serialized per request as the
/// benchmark's rules ask); `404` elsewhere (with a short text body, as
/// Go's and nginx's: a client that judges a stream by its DATA, as
/// h2spec's default path `/` does, gets some), `405` for other methods it
/// knows, `501` for a method it does not (RFC 9110 §9.1).
#[derive(Clone, Copy, Debug, Default)]
pub struct Hello;

/// Where a request to [`Hello`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/plaintext`.
    Plaintext,
    /// `/json`.
    Json,
    /// Another path.
    NotFound,
    /// A known path with a method other than GET or HEAD.
    MethodNotAllowed,
    /// A method the server does not know (not one of RFC 9110's nor
    /// PATCH): `501`, whatever the path (RFC 9110 §9.1).
    NotImplemented,
    /// `OPTIONS *`, a question about the server as a whole (RFC 9110
    /// §9.3.7): `204` with the methods it serves in `Allow`.
    ServerOptions,
}

/// Whether `method` is one the server knows: RFC 9110's eight and PATCH
/// (RFC 5789). Another is answered `501`, not `405` (which says the
/// method is known but not allowed here, RFC 9110 §15.5.6).
pub fn is_known_method(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "CONNECT" | "OPTIONS" | "TRACE" | "PATCH"
    )
}

const TEXT_PLAIN: Field = Field::new("Content-Type: text/plain");
const APPLICATION_JSON: Field = Field::new("Content-Type: application/json");
const ALLOW: Field = Field::new("Allow: GET, HEAD");
/// What [`Hello`] serves anywhere: its answer to `OPTIONS *`.
const ALLOW_SERVER: Field = Field::new("Allow: GET, HEAD, OPTIONS");

/// The body of a `404`.
const NOT_FOUND_BODY: &[u8] = b"Not Found\n";

/// The message both endpoints send.
pub const MESSAGE: &str = "Hello, World!";

impl Hello {
    /// The route of a request's path and method (a wrapping handler that
    /// already split the path passes it on).
    fn route(path: &str, method: &str) -> Route {
        let route = match path {
            "/plaintext" => Route::Plaintext,
            "/json" => Route::Json,
            _ => Route::NotFound,
        };
        // GET and HEAD first: the requests the server is measured by.
        if matches!(method, "GET" | "HEAD") {
            return route;
        }
        if !is_known_method(method) {
            return Route::NotImplemented;
        }
        match route {
            Route::NotFound if path == "*" && method == "OPTIONS" => Route::ServerOptions,
            Route::NotFound => Route::NotFound,
            _ => Route::MethodNotAllowed,
        }
    }
}

impl Handler for Hello {
    type State = Route;

    fn head(&self, request: &Request<'_>) -> Route {
        Self::route(request.path(), request.method())
    }

    fn respond(&self, route: Route, response: &mut Response<'_>) {
        // A fresh response accepts these calls: the results are Ok.
        let _ = match route {
            Route::Plaintext => response.field(TEXT_PLAIN).and_then(|r| r.body(MESSAGE.as_bytes())),
            Route::Json => {
                let mut json = StackBuf::new();
                let _ = write!(json, "{{\"message\":{}}}", JsonString(MESSAGE));
                response.field(APPLICATION_JSON).and_then(|r| r.body(json.as_bytes()))
            }
            Route::NotFound => response
                .status(Status::NOT_FOUND)
                .and_then(|r| r.field(TEXT_PLAIN))
                .and_then(|r| r.body(NOT_FOUND_BODY)),
            Route::NotImplemented => response.status(Status::NOT_IMPLEMENTED).map(drop),
            Route::ServerOptions => {
                response.status(Status::NO_CONTENT).and_then(|r| r.field(ALLOW_SERVER)).map(drop)
            }
            Route::MethodNotAllowed => {
                response.status(Status::METHOD_NOT_ALLOWED).and_then(|r| r.field(ALLOW)).map(drop)
            }
        };
    }
}

/// A string written as a JSON string literal.
struct JsonString<'a>(&'a str);

impl fmt::Display for JsonString<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        // Copies runs of plain characters whole; escapes the rest.
        let mut plain = 0;
        for (i, c) in self.0.char_indices() {
            let escape = match c {
                '"' => "\\\"",
                '\\' => "\\\\",
                '\n' => "\\n",
                '\r' => "\\r",
                '\t' => "\\t",
                c if u32::from(c) < 0x20 => "",
                _ => continue,
            };
            f.write_str(&self.0[plain..i])?;
            if escape.is_empty() {
                write!(f, "\\u{:04x}", u32::from(c))?;
            } else {
                f.write_str(escape)?;
            }
            plain = i + c.len_utf8();
        }
        f.write_str(&self.0[plain..])?;
        f.write_char('"')
    }
}

/// [`Hello`]'s endpoints, and two answered on application threads (a
/// tokio runtime) while the worker serves its other connections:
///
/// - `GET /delay?ms=N` answers `delayed N ms` after `N` milliseconds
///   (`0..=10000`; a missing, repeated or other `ms` is `400`, other
///   parameters are ignored), without blocking its worker;
/// - `POST /echo` streams the request body back (sized or chunked, any
///   length up to `max_body`), read straight out of the connection's pipe
///   by a task on the runtime, and written back through a
///   [`Responder`](crate::Responder) as it is read (so a client must read
///   while it sends: one that writes a whole large body first, as
///   python's `requests` does, stalls once the socket buffers on both
///   sides are full, about 10 MB on loopback, until
///   `min_response_rate` closes the connection);
/// - `GET /bytes?n=N` answers `N` bytes of `x` (`0..=67108864`; `n` as
///   `ms` above), written on the worker: a download of a given size,
///   for flow-control and throughput tests;
/// - `POST /upload` reads the request body on the worker, as it arrives
///   (no application thread), and answers its length in decimal: the
///   upload half of those tests.
#[cfg(feature = "tokio")]
#[derive(Clone, Debug)]
pub struct Demo {
    runtime: tokio::runtime::Handle,
}

/// Where a request to [`Demo`] goes.
#[cfg(feature = "tokio")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemoRoute {
    /// One of [`Hello`]'s.
    Hello(Route),
    /// `/delay` with a valid `ms`.
    Delay(u64),
    /// `/delay` with a missing or invalid `ms`.
    BadDelay,
    /// `POST /echo`.
    Echo,
    /// `GET /bytes` with a valid `n` over HTTP/2 (sent in place, as the
    /// stream's window allows), or `HEAD`.
    Bytes(u64),
    /// `GET /bytes` with a valid `n` over HTTP/1: written a piece at a time
    /// as the socket takes it, so a client that does not read holds one
    /// piece of server memory, not the whole answer.
    BytesStreamed(u64),
    /// `/bytes` with a missing or invalid `n`.
    BadBytes,
    /// `POST /upload`: the body bytes so far.
    Upload(u64),
    /// `/echo` or `/upload` with a method other than POST (`405`, `Allow:
    /// POST`).
    PostOnly,
    /// `OPTIONS *`: `204` with the methods the demo serves in `Allow`.
    ServerOptions,
}

/// The largest `/bytes` answer: 64 MiB.
#[cfg(feature = "tokio")]
pub const MAX_BYTES: u64 = 64 << 20;

/// What `/bytes` answers with, a piece at a time.
#[cfg(feature = "tokio")]
static BYTES_PIECE: [u8; 16 * 1024] = [b'x'; 16 * 1024];

/// The longest `/delay`, in milliseconds.
#[cfg(feature = "tokio")]
pub const MAX_DELAY_MS: u64 = 10_000;

#[cfg(feature = "tokio")]
impl Demo {
    /// Answers deferred requests with tasks on `runtime`.
    pub fn new(runtime: tokio::runtime::Handle) -> Self {
        Self { runtime }
    }

    /// The `ms` of `/delay?ms=N`, when it is a number up to
    /// [`MAX_DELAY_MS`] (see [`query_number`]).
    fn delay(target: &str) -> Option<u64> {
        query_number(target, "ms", MAX_DELAY_MS)
    }

    /// The `n` of `/bytes?n=N`, when it is a number up to [`MAX_BYTES`].
    fn bytes(target: &str) -> Option<u64> {
        query_number(target, "n", MAX_BYTES)
    }
}

/// The value of the query parameter `name` in `target` as a number up to
/// `max`: decimal digits, plain or percent-encoded (RFC 3986 §2.3: `%31`
/// is `1`). Other parameters are ignored (a client's cache-buster,
/// `&_=1700000000`); `None` when `name` is missing, given twice
/// (ambiguous), empty, or not such a number.
#[cfg(feature = "tokio")]
fn query_number(target: &str, name: &str, max: u64) -> Option<u64> {
    let query = target.split_once('?')?.1;
    let mut found = None;
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !percent_decoded(key).eq(name.bytes().map(Some)) {
            continue;
        }
        if found.is_some() {
            return None;
        }
        let mut digits = percent_decoded(value).peekable();
        digits.peek()?;
        found = Some(digits.try_fold(0u64, |n, digit| {
            let digit = digit.filter(u8::is_ascii_digit)?;
            n.checked_mul(10)?.checked_add(u64::from(digit - b'0')).filter(|&n| n <= max)
        })?);
    }
    found
}

/// The bytes of a query component with its `%XX` escapes decoded; `None`
/// for a `%` not followed by two hex digits.
#[cfg(feature = "tokio")]
fn percent_decoded(component: &str) -> impl Iterator<Item = Option<u8>> + '_ {
    let mut bytes = component.bytes();
    std::iter::from_fn(move || {
        let byte = bytes.next()?;
        if byte != b'%' {
            return Some(Some(byte));
        }
        let hex = |b: Option<u8>| char::from(b?).to_digit(16);
        Some(hex(bytes.next()).zip(hex(bytes.next())).map(|(high, low)| (high * 16 + low) as u8))
    })
}

#[cfg(feature = "tokio")]
impl Handler for Demo {
    type State = DemoRoute;

    fn blocking_here_stalls(&self) -> bool {
        crate::stopped::blocking_here_stalls(&self.runtime)
    }

    fn head(&self, request: &Request<'_>) -> DemoRoute {
        let (path, method) = (request.path(), request.method());
        if !matches!(path, "/delay" | "/echo" | "/bytes" | "/upload" | "*") {
            // Not one of the demo's own (the paths the match below
            // serves): Hello's, with no more looks.
            return DemoRoute::Hello(Hello::route(path, method));
        }
        if !is_known_method(method) {
            return DemoRoute::Hello(Route::NotImplemented);
        }
        match (path, method) {
            ("/delay", "GET" | "HEAD") => {
                Self::delay(request.target()).map_or(DemoRoute::BadDelay, DemoRoute::Delay)
            }
            ("/delay", _) => DemoRoute::Hello(Route::MethodNotAllowed),
            ("/echo", "POST") => {
                request.stream_body();
                DemoRoute::Echo
            }
            ("/echo", _) => DemoRoute::PostOnly,
            ("/bytes", "GET") if request.version() != crate::Version::Http2 => {
                Self::bytes(request.target()).map_or(DemoRoute::BadBytes, DemoRoute::BytesStreamed)
            }
            ("/bytes", "GET" | "HEAD") => {
                Self::bytes(request.target()).map_or(DemoRoute::BadBytes, DemoRoute::Bytes)
            }
            ("/bytes", _) => DemoRoute::Hello(Route::MethodNotAllowed),
            ("/upload", "POST") => DemoRoute::Upload(0),
            ("/upload", _) => DemoRoute::PostOnly,
            ("*", "OPTIONS") => DemoRoute::ServerOptions,
            _ => DemoRoute::Hello(Hello::route(path, method)),
        }
    }

    fn body(&self, route: &mut DemoRoute, chunk: &[u8]) {
        if let DemoRoute::Upload(n) = route {
            *n += chunk.len() as u64;
        }
    }

    fn respond(&self, route: DemoRoute, response: &mut Response<'_>) {
        match route {
            DemoRoute::Hello(route) => Hello.respond(route, response),
            DemoRoute::BadDelay => {
                let _ = response
                    .status(Status::BAD_REQUEST)
                    .and_then(|r| r.field(TEXT_PLAIN))
                    .and_then(|r| r.body(format!("ms must be 0..={MAX_DELAY_MS}\n").as_bytes()));
            }
            DemoRoute::Delay(ms) => {
                let Ok(responder) = response.defer() else { return };
                self.runtime.spawn(async move {
                    let delay = tokio::time::sleep(std::time::Duration::from_millis(ms));
                    // A client that left frees its task at once.
                    if responder.unless_closed(delay).await.is_some() {
                        let _ = responder.body(format!("delayed {ms} ms").as_bytes());
                    }
                });
            }
            DemoRoute::BadBytes => {
                let _ = response
                    .status(Status::BAD_REQUEST)
                    .and_then(|r| r.field(TEXT_PLAIN))
                    .and_then(|r| r.body(format!("n must be 0..={MAX_BYTES}\n").as_bytes()));
            }
            DemoRoute::Bytes(n) => {
                let _ = response.field(APPLICATION_OCTET_STREAM);
                // Static pieces: HTTP/2 sends them in place, uncopied.
                let piece = bytes::Bytes::from_static(&BYTES_PIECE);
                let mut left = n;
                while left > 0 {
                    let take = left.min(BYTES_PIECE.len() as u64) as usize;
                    if response.write_bytes(piece.slice(..take)).is_err() {
                        return;
                    }
                    left -= take as u64;
                }
            }
            DemoRoute::BytesStreamed(n) => {
                let _ = response.poll_later(Box::new(BytesBody { left: n, head: false }));
            }
            DemoRoute::PostOnly => {
                let _ =
                    response.status(Status::METHOD_NOT_ALLOWED).and_then(|r| r.field(ALLOW_POST));
            }
            DemoRoute::ServerOptions => {
                let _ =
                    response.status(Status::NO_CONTENT).and_then(|r| r.field(ALLOW_DEMO_SERVER));
            }
            DemoRoute::Upload(n) => {
                let mut text = StackBuf::new();
                let _ = write!(text, "{n}");
                let _ = response.field(TEXT_PLAIN).and_then(|r| r.body(text.as_bytes()));
            }
            DemoRoute::Echo => {
                let body = response.take_body();
                let Ok(responder) = response.defer() else { return };
                self.runtime.spawn(echo(body, responder));
            }
        }
    }
}

/// `GET /bytes` over HTTP/1, polled by the worker: each poll hands over one
/// static piece, sent without a copy (the last with the body's end); the
/// next poll comes once it is sent.
#[cfg(feature = "tokio")]
#[derive(Debug)]
struct BytesBody {
    /// Bytes still to hand over.
    left: u64,
    /// The head's fields are written.
    head: bool,
}

#[cfg(feature = "tokio")]
impl crate::response::Polled for BytesBody {
    fn poll_write(
        &mut self,
        _cx: &mut std::task::Context<'_>,
        response: &mut Response<'_>,
    ) -> std::task::Poll<crate::response::Step> {
        use crate::response::Step;
        if !self.head {
            self.head = true;
            if response.field(APPLICATION_OCTET_STREAM).is_err() {
                return std::task::Poll::Ready(Step::Failed);
            }
        }
        if self.left == 0 {
            return std::task::Poll::Ready(Step::Done);
        }
        let take = self.left.min(BYTES_PIECE.len() as u64) as usize;
        self.left -= take as u64;
        let piece = bytes::Bytes::from_static(&BYTES_PIECE[..take]);
        // The last piece carries the body's end (one write, not two).
        std::task::Poll::Ready(if self.left == 0 { Step::Last(piece) } else { Step::Frame(piece) })
    }
}

/// Streams `body` back through `responder`, a piece at a time.
#[cfg(feature = "tokio")]
async fn echo(body: Option<crate::RequestBody>, mut responder: crate::Responder) {
    use tokio::io::AsyncReadExt;

    let Some(mut body) = body else {
        // A POST without a body: an empty echo.
        let _ = responder.body(b"");
        return;
    };
    let _ = responder.field(APPLICATION_OCTET_STREAM);
    // The buffer grows with what arrives, four times over each read that
    // fills it: a stalled body (an HTTP/2 client can open a hundred per
    // connection) holds ECHO_FIRST_PIECE bytes, not ECHO_PIECE, and a
    // bulk one reaches ECHO_PIECE within five reads.
    let mut buf = vec![0; ECHO_FIRST_PIECE];
    loop {
        match body.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if responder.write(&buf[..n]).await.is_err() {
                    return; // the client is gone
                }
                if n == buf.len() && buf.len() < ECHO_PIECE {
                    buf.resize((buf.len() * 4).min(ECHO_PIECE), 0);
                }
            }
            // The body failed (the client left, or it was malformed): the
            // response is cut, and the connection closes.
            Err(_) => return,
        }
    }
    let _ = responder.finish();
}

/// Bytes an echo reads and writes at a time, at most.
#[cfg(feature = "tokio")]
const ECHO_PIECE: usize = 64 * 1024;

/// An echo's first read buffer, before any byte has arrived.
#[cfg(feature = "tokio")]
const ECHO_FIRST_PIECE: usize = 64;

#[cfg(feature = "tokio")]
const ALLOW_POST: Field = Field::new("Allow: POST");
/// What [`Demo`] serves somewhere: its answer to `OPTIONS *`.
#[cfg(feature = "tokio")]
const ALLOW_DEMO_SERVER: Field = Field::new("Allow: GET, HEAD, POST, OPTIONS");

#[cfg(feature = "tokio")]
const APPLICATION_OCTET_STREAM: Field = Field::new("Content-Type: application/octet-stream");

/// A small buffer on the stack that `write!` fills (no allocation).
struct StackBuf {
    bytes: [u8; 64],
    len: usize,
}

impl StackBuf {
    fn new() -> Self {
        Self { bytes: [0; 64], len: 0 }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "tokio")]
    #[test]
    fn query_numbers_ignore_other_parameters_and_decode_escapes() {
        let ms = |target| query_number(target, "ms", MAX_DELAY_MS);
        for (target, expected) in [
            ("/delay?ms=200", Some(200)),
            ("/delay?ms=200&i=1", Some(200)),
            ("/delay?i=1&ms=200&_=1700000000", Some(200)),
            ("/delay?%6Ds=%31%30", Some(10)),
            ("/delay?ms=0", Some(0)),
            ("/delay?ms=10000", Some(10_000)),
            ("/delay?ms=00010", Some(10)),
            ("/delay?ms=10001", None),
            ("/delay?ms=99999999999999999999999", None),
            ("/delay?ms=", None),
            ("/delay?ms", None),
            ("/delay", None),
            ("/delay?", None),
            ("/delay?n=1", None),
            ("/delay?ms=1&ms=2", None),
            ("/delay?ms=-1", None),
            ("/delay?ms=+1", None),
            ("/delay?ms=1x", None),
            ("/delay?ms=%3", None),
            ("/delay?ms=%zz", None),
            ("/delay?ms=%2D1", None),
            ("/delay?mss=1", None),
        ] {
            assert_eq!(ms(target), expected, "{target}");
        }
        assert_eq!(query_number("/bytes?n=67108864", "n", MAX_BYTES), Some(MAX_BYTES));
        assert_eq!(query_number("/bytes?n=67108865", "n", MAX_BYTES), None);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(JsonString("a\"b\\c\n\u{1}é").to_string(), "\"a\\\"b\\\\c\\n\\u0001é\"");
    }

    /// Every path against every method, by the rule in [`Hello`]'s docs:
    /// 501 for a method the server does not know (whatever the path),
    /// `OPTIONS *`, 404 for another path, 405 for a known path with a
    /// method other than GET or HEAD.
    #[test]
    fn routes_by_path_and_method() {
        let methods = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE"];
        let methods = methods.into_iter().chain(["PATCH", "get", "BREW", "", "GETS", "HEADX"]);
        for method in methods {
            for path in ["/plaintext", "/json", "*", "/", "/plaintext/", "/json?x", ""] {
                let expected = if !is_known_method(method) {
                    Route::NotImplemented
                } else if path == "*" && method == "OPTIONS" {
                    Route::ServerOptions
                } else if !matches!(path, "/plaintext" | "/json") {
                    Route::NotFound
                } else if !matches!(method, "GET" | "HEAD") {
                    Route::MethodNotAllowed
                } else if path == "/plaintext" {
                    Route::Plaintext
                } else {
                    Route::Json
                };
                assert_eq!(Hello::route(path, method), expected, "{method} {path}");
            }
        }
    }

    #[test]
    fn the_stack_buffer_refuses_overflow() {
        let mut buf = StackBuf::new();
        assert!(buf.write_str(&"x".repeat(64)).is_ok());
        assert!(buf.write_str("y").is_err());
        assert_eq!(buf.as_bytes().len(), 64);
    }
}
