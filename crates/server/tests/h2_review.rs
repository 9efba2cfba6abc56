//! The HTTP/2 server's edges, from an adversarial review: hand-built
//! frames over real TCP (timeouts, zero windows, early answers, shutdown,
//! smuggling through fields, stream ids, floods, the upgrade). Each test's
//! docs say what the RFC or a careful user expects; each failed before the
//! fix it guards.

mod common;

use std::io::Read;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::h2raw::{Credit, Event, Frame, Raw, block, literal, req};
use common::serve;
use falconet_server::h2::connection::Config;
use falconet_server::h2::frame::{self, ErrorCode, FrameHeader, PREFACE, kind};
use falconet_server::{Handler, Options, Request, Response, Status};

// ---------------------------------------------------------------- client

impl Raw {
    /// Frames until one matches `pred` (returned), EOF or timeout (None).
    fn until(&mut self, timeout: Duration, mut pred: impl FnMut(&Frame) -> bool) -> Option<Frame> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Event::Frame(f) => {
                    if f.kind == kind::HEADERS {
                        // Keep the HPACK state in step.
                        let _ = self.decoder.decode(&f.payload, |_| {});
                    }
                    if pred(&f) {
                        return Some(f);
                    }
                }
                Event::Eof | Event::Timeout => return None,
            }
        }
    }

    /// The connection's fate within `timeout`: GOAWAY code, or EOF, or
    /// still open.
    fn fate(&mut self, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Event::Frame(f) if f.kind == kind::GOAWAY => {
                    return format!("GOAWAY({})", f.code());
                }
                Event::Frame(_) => {}
                Event::Eof => return "EOF".into(),
                Event::Timeout => return "open".into(),
            }
        }
    }

    /// A response's status and body on `stream` (stream reset: status 0,
    /// body the code as text).
    fn response(&mut self, stream: u32) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut status = 0;
        let mut fields = Vec::new();
        let mut body = Vec::new();
        loop {
            match self.next(Duration::from_secs(5)) {
                Event::Frame(f) if f.stream == stream && f.kind == kind::HEADERS => {
                    self.decoder
                        .decode(&f.payload, |field| {
                            let n = String::from_utf8_lossy(field.name).into_owned();
                            let v = String::from_utf8_lossy(field.value).into_owned();
                            if n == ":status" {
                                status = v.parse().unwrap();
                            } else {
                                fields.push((n, v));
                            }
                        })
                        .unwrap();
                    if f.end_stream() {
                        return (status, fields, body);
                    }
                }
                Event::Frame(f) if f.kind == kind::HEADERS => {
                    let _ = self.decoder.decode(&f.payload, |_| {});
                }
                Event::Frame(f) if f.stream == stream && f.kind == kind::DATA => {
                    body.extend_from_slice(&f.payload);
                    if f.end_stream() {
                        return (status, fields, body);
                    }
                }
                Event::Frame(f) if f.stream == stream && f.kind == kind::RST_STREAM => {
                    return (0, fields, format!("RST({})", f.code()).into_bytes());
                }
                Event::Frame(f) if f.kind == kind::GOAWAY && f.code() != 0 => {
                    return (0, fields, format!("GOAWAY({})", f.code()).into_bytes());
                }
                Event::Frame(_) => {}
                other => panic!("no response on stream {stream}: {other:?}"),
            }
        }
    }
}

// --------------------------------------------------------------- handler

/// `/` echoes authority, the host fields and every field name; `/big?n=N`
/// writes N bytes in the respond call; `/lend` lends the body and answers
/// at once without reading it; `/slow` answers 300 ms later (deferred);
/// anything else answers its target.
#[derive(Clone, Copy)]
struct Probe;

enum State {
    Show(String),
    Status(u16),
    Big(usize),
    Lend,
    Read,
    Slow,
}

impl Handler for Probe {
    type State = State;

    fn head(&self, request: &Request<'_>) -> State {
        match request.path() {
            "/big" => State::Big(
                request.target().split_once("n=").and_then(|(_, n)| n.parse().ok()).unwrap_or(0),
            ),
            "/lend" => {
                request.stream_body();
                State::Lend
            }
            "/slow" => State::Slow,
            "/read" => {
                request.stream_body();
                State::Read
            }
            "/status" => State::Status(
                request.target().split_once("c=").and_then(|(_, n)| n.parse().ok()).unwrap_or(200),
            ),
            "/cookie" => State::Show(format!(
                "cookie={:?}",
                request.header("cookie").map(|v| String::from_utf8_lossy(v).into_owned())
            )),
            _ => {
                let mut text = format!("authority={:?}", request.authority());
                for (name, value) in request.headers() {
                    text.push_str(&format!(" {name}={:?}", String::from_utf8_lossy(value)));
                }
                State::Show(text)
            }
        }
    }

    fn body(&self, _: &mut State, _: &[u8]) {}

    fn respond(&self, state: State, response: &mut Response<'_>) {
        match state {
            State::Show(text) => response.body(text.as_bytes()).unwrap(),
            State::Status(code) => {
                response.status(Status::new(code).unwrap()).unwrap();
                let _ = response.body(b"abc");
            }
            State::Big(n) => {
                let piece = vec![b'x'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let take = left.min(piece.len());
                    response.write(&piece[..take]).unwrap();
                    left -= take;
                }
            }
            State::Lend => {
                // The application answers without the body (a 401 before an
                // upload, say): it drops the body unread.
                response.status(Status::new(401).unwrap()).unwrap();
                response.body(b"no").unwrap();
            }
            State::Read => {
                let body = response.take_body();
                let responder = response.defer().unwrap();
                std::thread::spawn(move || {
                    let mut n = 0usize;
                    let mut error = String::new();
                    if let Some(mut body) = body {
                        let mut buf = vec![0u8; 7000];
                        loop {
                            match body.read(&mut buf) {
                                Ok(0) => break,
                                Ok(k) => n += k,
                                Err(e) => {
                                    error = e.to_string();
                                    break;
                                }
                            }
                        }
                    }
                    let _ = responder.body(format!("read={n}{error}").as_bytes());
                });
            }
            State::Slow => {
                let responder = response.defer().unwrap();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(300));
                    responder.body(b"slow done").unwrap();
                });
            }
        }
    }
}

fn short_timeouts() -> Options {
    Options::new()
        .workers(1)
        .io_timeout(Duration::from_millis(500))
        .keep_alive_timeout(Duration::from_millis(500))
        .header_timeout(Duration::from_millis(500))
}

// ------------------------------------------------------ hangs and timeouts

/// A slow but steady reader: window 16 KiB, a WINDOW_UPDATE every 100 ms,
/// so bytes move ten times a second, far inside io_timeout (5 s). The
/// connection is aborted with GOAWAY(NO_ERROR) once header_timeout (1 s)
/// has passed since it first became busy: `Conn::head_started` is set
/// when the session stops being idle and, on an HTTP/2 connection with a
/// stream open, never cleared, and `check` applies header_timeout whenever
/// the output is empty and no stream waits for the application, which is
/// every moment a response waits for the client's credit. With the
/// defaults: any download through flow control that outlives 30 s dies.
#[test]
fn steady_slow_download_is_not_cut_off() {
    let options = Options::new()
        .workers(1)
        .io_timeout(Duration::from_secs(5))
        .keep_alive_timeout(Duration::from_secs(5))
        .header_timeout(Duration::from_secs(1));
    let server = serve(options, Probe);
    let window = 16384u32;
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, window)]);
    raw.headers(1, &req("GET", "/big?n=100000000"), true);
    let started = Instant::now();
    let mut received = 0usize;
    while started.elapsed() < Duration::from_secs(3) {
        match raw.next(Duration::from_millis(100)) {
            Event::Frame(f) if f.kind == kind::GOAWAY => panic!(
                "GOAWAY({}) after {:?}, {received} bytes received at a steady pace",
                f.code(),
                started.elapsed()
            ),
            Event::Frame(f) if f.kind == kind::DATA => received += f.payload.len(),
            Event::Frame(_) => {}
            Event::Eof => panic!("closed after {:?}", started.elapsed()),
            Event::Timeout => {
                // Give back what arrived, to both windows.
                let mut out = Vec::new();
                frame::encode_window_update(&mut out, 0, window).unwrap();
                frame::encode_window_update(&mut out, 1, window).unwrap();
                raw.send(&out);
            }
        }
    }
    assert!(received > 100_000, "{received}");
}

/// A response that ends before the request does (here 413 for a
/// content-length over max_body) leaves the stream half-closed (local);
/// the client then sends nothing. The connection still closes (through
/// header_timeout, see above).
#[test]
fn half_open_stream_after_the_response_is_timed_out() {
    let server = serve(short_timeouts().max_body(10), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/x")]);
    literal(&mut head, b"content-length", b"1000");
    raw.headers(1, &head, false);
    let (status, _, _) = raw.response(1);
    assert_eq!(status, 413);
    let fate = raw.fate(Duration::from_secs(3));
    assert_ne!(fate, "open", "an idle half-open stream keeps the connection forever");
}

/// A lent body the application drops unread (it answered 401 before the
/// upload ended): the stream's window is never refilled and the stream
/// never reset, so the client's upload (content-length 2 MiB, window 1 MiB)
/// can never finish and the stream stays open for good. RFC 9113 8.1: the
/// server sends RST_STREAM(NO_ERROR) after a complete response it sent
/// early (or keeps reading and discarding).
#[test]
fn early_response_with_a_dropped_body_does_not_strand_the_upload() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/lend")]);
    literal(&mut head, b"content-length", b"2097152");
    raw.headers(1, &head, false);
    let piece = vec![b'u'; 16384];
    // The server's stream window: 1 MiB.
    for _ in 0..64 {
        raw.data(1, &piece, false);
    }
    let (status, _, _) = raw.response(1);
    assert_eq!(status, 401);
    // Now the client needs credit for stream 1, or a reset that ends it.
    let got = raw.until(Duration::from_secs(2), |f| {
        f.stream == 1 && (f.kind == kind::RST_STREAM || f.kind == kind::WINDOW_UPDATE)
    });
    assert!(got.is_some(), "stream 1 neither reset nor given credit: the upload hangs forever");
}

/// Graceful shutdown of an idle HTTP/2 connection: RFC 9113 6.8 says a
/// server SHOULD send GOAWAY before it closes, so a request the client
/// sends at that moment is known not processed. The server closes idle
/// h2 connections with no GOAWAY at all.
#[test]
fn shutdown_sends_goaway_to_idle_connections() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("GET", "/a"), true);
    let (status, _, _) = raw.response(1);
    assert_eq!(status, 200);
    server.handle().shutdown();
    let fate = raw.fate(Duration::from_secs(3));
    assert!(fate.starts_with("GOAWAY"), "closed with {fate}, no GOAWAY");
    drop(server);
}

/// Graceful shutdown with a stream in flight: GOAWAY(NO_ERROR), the stream
/// finishes, then the connection closes.
#[test]
fn shutdown_drains_a_stream_in_flight() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("GET", "/slow"), true);
    std::thread::sleep(Duration::from_millis(50));
    server.handle().shutdown();
    let (status, _, body) = raw.response(1);
    assert_eq!((status, &body[..]), (200, &b"slow done"[..]));
}

// ------------------------------------------------------------ memory

fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A client with window 0 opens 100 streams for 2 MB responses and reads
/// nothing: HTTP/1 stops parsing pipelined requests at
/// max_pending_output, HTTP/2 answers all 100 and stages every byte
/// (200 MB for one connection of 1 KiB of requests).
#[test]
fn zero_window_streams_do_not_stage_unbounded_responses() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 0)]);
    let before = rss_kib();
    for i in 0..100u32 {
        raw.headers(2 * i + 1, &req("GET", "/big?n=2000000"), true);
    }
    let mut heads = 0;
    while raw.until(Duration::from_secs(3), |f| f.kind == kind::HEADERS).is_some() {
        heads += 1;
        if heads == 100 {
            break;
        }
    }
    let grown = rss_kib().saturating_sub(before) / 1024;
    assert!(grown < 64, "{heads} heads, the server grew by {grown} MiB for one zero-window client");
}

// ------------------------------------------------------------ smuggling

fn show(addr: SocketAddr, fields: &[(&str, &str)]) -> (u16, String) {
    let mut raw = Raw::handshake(addr, &[]);
    raw.headers(1, &block(fields), true);
    let (status, _, body) = raw.response(1);
    (status, String::from_utf8_lossy(&body).into_owned())
}

const BASE: [(&str, &str); 3] = [(":method", "GET"), (":scheme", "http"), (":path", "/")];

/// RFC 9113 8.2.1: a field name MUST NOT contain a colon (except the
/// pseudo-fields' first octet); such a request is malformed. The server
/// hands `x:y` to the application, which a proxy writes to HTTP/1 as
/// `x:y: v` (field `x`).
#[test]
fn field_name_with_a_colon_is_malformed() {
    let server = serve(Options::new().workers(1), Probe);
    let mut fields = BASE.to_vec();
    fields.push(("x:y", "v"));
    let (status, body) = show(server.addr, &fields);
    assert_eq!(status, 0, "accepted ({status}): {body}");
}

/// The HTTP/1 side answers 400 for two Host fields; over HTTP/2 both reach
/// the application and `authority()` is the first (RFC 9110 7.2: a
/// request with more than one Host is invalid).
#[test]
fn two_host_fields_are_rejected() {
    let server = serve(Options::new().workers(1), Probe);
    let mut fields = BASE.to_vec();
    fields.extend([("host", "good.example"), ("host", "evil.example")]);
    let (status, body) = show(server.addr, &fields);
    assert!(status == 0 || status == 400, "accepted ({status}): {body}");
}

/// RFC 9113 8.3.1: a server SHOULD treat a request whose Host differs
/// from its :authority as malformed. The application sees
/// authority=a.example and host=b.example.
#[test]
fn host_differing_from_authority_is_rejected() {
    let server = serve(Options::new().workers(1), Probe);
    let fields = [BASE[0], BASE[1], BASE[2], (":authority", "a.example"), ("host", "b.example")];
    let (status, body) = show(server.addr, &fields);
    assert!(status == 0 || status == 400, "accepted ({status}): {body}");
}

/// The HTTP/1 side validates Host (`target::is_valid_host`): `a b/c@d`
/// gets 400. Over HTTP/2 the same text as :authority reaches
/// `Request::authority()` unchecked.
#[test]
fn invalid_authority_is_rejected_as_http1_rejects_it() {
    let server = serve(Options::new().workers(1), Probe);
    common::refused(server.addr, b"GET / HTTP/1.1\r\nHost: a b/c@d\r\n\r\n", 400);
    let fields = [BASE[0], BASE[1], BASE[2], (":authority", "a b/c@d")];
    let (status, body) = show(server.addr, &fields);
    assert!(status == 0 || status == 400, "accepted ({status}): {body}");
}

// --------------------------------------------------------- conformance

/// "Empty frames in a row" (module docs; CVE-2019-9518): a counter that
/// only a header block resets. A long upload that sends an empty DATA
/// frame now and then among real ones (legal: some clients flush that
/// way) is cut off with ENHANCE_YOUR_CALM after 100 of them in total.
#[test]
fn empty_data_frames_among_real_ones_are_not_a_flood() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/x")]);
    raw.headers(1, &head, false);
    for _ in 0..150 {
        raw.data(1, b"a", false);
        raw.data(1, b"", false);
    }
    raw.data(1, b"", true);
    let (status, _, body) = raw.response(1);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// RFC 9113 5.1.1 (h2spec 5.1.1 #2): a stream id lower than one already
/// opened is a connection error PROTOCOL_ERROR; the server says
/// STREAM_CLOSED.
#[test]
fn lower_stream_id_is_protocol_error() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(5, &req("GET", "/"), true);
    raw.headers(3, &req("GET", "/"), true);
    let fate = raw.fate(Duration::from_secs(2));
    assert_eq!(fate, format!("GOAWAY({})", ErrorCode::PROTOCOL_ERROR.value()));
}

/// Rapid reset: HEADERS+RST_STREAM pairs end in GOAWAY(ENHANCE_YOUR_CALM).
#[test]
fn rapid_reset_is_cut_off() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut out = Vec::new();
    for i in 0..3000u32 {
        let id = 2 * i + 1;
        let b = req("GET", "/slow");
        FrameHeader { length: b.len() as u32, kind: kind::HEADERS, flags: 5, stream: id }
            .encode(&mut out)
            .unwrap();
        out.extend_from_slice(&b);
        frame::encode_rst_stream(&mut out, id, ErrorCode::CANCEL);
    }
    let _ = raw.try_send(&out);
    let fate = raw.fate(Duration::from_secs(3));
    assert_eq!(fate, format!("GOAWAY({})", ErrorCode::ENHANCE_YOUR_CALM.value()));
}

/// The server's timer refills the reset budget
/// (`Config::reset_refill_per_second`): five resets, a pause of a few
/// ticks, five more keep the connection at 1,000 a second; with no refill
/// the sixth ends it.
#[test]
fn the_timer_refills_the_reset_budget() {
    let fates = [1_000, 0].map(|refill| {
        let config =
            Config { reset_budget: 5, reset_refill_per_second: refill, ..Config::default() };
        let server = serve(Options::new().workers(1).http2(config), Probe);
        let mut raw = Raw::handshake(server.addr, &[]);
        let mut id = 1;
        for burst in 0..2 {
            if burst == 1 {
                // The timer ticks at most 500 ms apart.
                std::thread::sleep(Duration::from_millis(1_200));
            }
            let mut out = Vec::new();
            for _ in 0..5 {
                let b = req("GET", "/slow");
                FrameHeader { length: b.len() as u32, kind: kind::HEADERS, flags: 5, stream: id }
                    .encode(&mut out)
                    .unwrap();
                out.extend_from_slice(&b);
                frame::encode_rst_stream(&mut out, id, ErrorCode::CANCEL);
                id += 2;
            }
            raw.send(&out);
        }
        raw.fate(Duration::from_millis(500))
    });
    assert_eq!(
        fates,
        ["open".to_string(), format!("GOAWAY({})", ErrorCode::ENHANCE_YOUR_CALM.value())]
    );
}

/// h2c upgrade with the preface pipelined right behind the request (a
/// client that does not wait for the 101): stream 1 is answered.
#[test]
fn upgrade_with_the_preface_pipelined() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::connect(server.addr);
    let mut out = b"GET /up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n".to_vec();
    out.extend_from_slice(PREFACE);
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    // The 101 head, then frames.
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        raw.tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(raw.tcp.read(&mut byte).unwrap(), 1, "{}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 101"), "{}", String::from_utf8_lossy(&head));
    let (status, _, body) = raw.response(1);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

// ------------------------------------------------------ HTTP semantics

/// RFC 9113 8.2.3: cookie crumbs MUST be joined with "; " before they
/// reach a generic HTTP server application. Clients (browsers, nghttp2)
/// split Cookie for compression; `Request::header("cookie")` then sees
/// only the first crumb.
#[test]
fn cookie_crumbs_are_joined() {
    let server = serve(Options::new().workers(1), Probe);
    let fields = [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/cookie"),
        ("cookie", "a=1"),
        ("cookie", "b=2"),
    ];
    let (status, body) = show(server.addr, &fields);
    assert_eq!((status, &body[..]), (200, "cookie=Some(\"a=1; b=2\")"));
}

/// RFC 9110 10.1.1: a server that receives `Expect: 100-continue` with a
/// body to follow MUST send 100 or a final status at once. The HTTP/1.1
/// side does; over HTTP/2 the client waits (curl: 1 s per request; a
/// client without a fallback, forever).
#[test]
fn expect_continue_gets_100() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/x")]);
    literal(&mut head, b"content-length", b"5");
    literal(&mut head, b"expect", b"100-continue");
    raw.headers(1, &head, false);
    let got = raw.until(Duration::from_secs(2), |f| f.kind == kind::HEADERS && f.stream == 1);
    assert!(got.is_some(), "no 100 (nor a final status): the client waits");
}

/// HEAD: the head only, END_STREAM on HEADERS or an empty DATA.
#[test]
fn head_response_has_no_body() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = block(&[(":method", "HEAD"), (":scheme", "http"), (":path", "/big?n=100000")]);
    raw.headers(1, &head, true);
    let (status, _, body) = raw.response(1);
    assert_eq!((status, body.len()), (200, 0));
}

/// 204 and 304 carry no content even when the application writes some.
#[test]
fn no_content_statuses_have_no_body() {
    let server = serve(Options::new().workers(1), Probe);
    for code in [204, 304] {
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.headers(1, &req("GET", &format!("/status?c={code}")), true);
        let (status, fields, body) = raw.response(1);
        assert_eq!((status, &body[..]), (code, &b""[..]), "{fields:?}");
        assert!(!fields.iter().any(|(n, _)| n == "content-length" && code == 204), "{fields:?}");
    }
}

const UPGRADE: &str =
    "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n";

/// An upgrade request with a body is served as HTTP/1.1 (module docs),
/// and the connection goes on as HTTP/1.1.
#[test]
fn upgrade_with_a_body_stays_http1() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::connect(server.addr);
    raw.send(
        format!("POST /a HTTP/1.1\r\nHost: h\r\n{UPGRADE}Content-Length: 3\r\n\r\nabc").as_bytes(),
    );
    let head = raw.read_http1_head();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

/// Invalid HTTP2-Settings: served as HTTP/1.1.
#[test]
fn upgrade_with_invalid_settings_stays_http1() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::connect(server.addr);
    let bad = UPGRADE.replace("AAMAAABk", "AAUAAAAA"); // MAX_FRAME_SIZE 0
    raw.send(format!("GET /a HTTP/1.1\r\nHost: h\r\n{bad}\r\n").as_bytes());
    let head = raw.read_http1_head();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

/// A deferred HTTP/1.1 response in flight, then a pipelined upgrade
/// request: the first response must come (whole, in order) before the
/// 101.
#[test]
fn upgrade_behind_a_deferred_response() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::connect(server.addr);
    let mut out = b"GET /slow HTTP/1.1\r\nHost: h\r\n\r\n".to_vec();
    out.extend_from_slice(format!("GET /up HTTP/1.1\r\nHost: h\r\n{UPGRADE}\r\n").as_bytes());
    raw.send(&out);
    let first = raw.read_http1_head();
    assert!(first.starts_with("HTTP/1.1 200"), "first: {first:?}");
    let mut rest = vec![0u8; 9];
    raw.tcp.read_exact(&mut rest).unwrap();
    assert_eq!(&rest, b"slow done", "{first}");
    let second = raw.read_http1_head();
    assert!(second.starts_with("HTTP/1.1 101"), "second: {second:?}");
    out = PREFACE.to_vec();
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    let (status, _, body) = raw.response(1);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

// ------------------------------------------------------------- shutdown

/// A client that opens a POST stream, sends part of the body and closes
/// its socket (a client abort). HTTP/1 drops the partial request and
/// closes; HTTP/2 keeps the stream's exchange (it waits for a body that
/// can no longer come: `process` only closes once `exchanges` is empty),
/// so the connection lives until io_timeout and a graceful shutdown waits
/// for shutdown_timeout (10 s here) instead of finishing at once.
#[test]
fn client_gone_mid_body_does_not_hold_the_connection() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/x")]);
    raw.headers(1, &head, false);
    raw.data(1, b"part", false);
    std::thread::sleep(Duration::from_millis(100));
    drop(raw);
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    server.stop();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "the shutdown waited {took:?} for a dead connection");
}

/// Graceful shutdown with a stream waiting for its request body: the
/// client should learn of the shutdown (GOAWAY) when it starts, not at the
/// connection's next event (`Session::process` is where `shutdown` is
/// called; the drain's sweep only closes idle connections).
#[test]
fn shutdown_announces_goaway_to_busy_connections() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = block(&[(":method", "POST"), (":scheme", "http"), (":path", "/x")]);
    raw.headers(1, &head, false);
    std::thread::sleep(Duration::from_millis(100));
    server.handle().shutdown();
    let goaway = raw.until(Duration::from_secs(2), |f| f.kind == kind::GOAWAY);
    raw.data(1, b"end", true);
    let (status, _, _) = raw.response(1);
    assert_eq!(status, 200, "the stream in flight is still served");
    assert!(goaway.is_some(), "no GOAWAY within 2 s of the shutdown");
}

// ------------------------------------------------------------ credit

fn post(path: &str, length: Option<usize>) -> Vec<u8> {
    let mut head = block(&[(":method", "POST"), (":scheme", "http"), (":path", path)]);
    if let Some(n) = length {
        literal(&mut head, b"content-length", n.to_string().as_bytes());
    }
    head
}

/// One long connection through every way a body can end: consumed,
/// padded, read on an application thread, reset by the client mid-body,
/// reset by the server with DATA still in flight. The receive windows must
/// come back whole: a last 3 MiB upload goes through.
#[test]
fn receive_credit_survives_every_way_a_body_ends() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    // Consumed by the worker.
    raw.headers(1, &post("/x", None), false);
    credit.upload(&mut raw, 1, 3 << 20, 0, true);
    assert_eq!(credit.wait_done(&mut raw, 1), 200);
    // Padded.
    raw.headers(3, &post("/x", None), false);
    credit.upload(&mut raw, 3, 2 << 20, 200, true);
    assert_eq!(credit.wait_done(&mut raw, 3), 200);
    // Read on an application thread.
    raw.headers(5, &post("/read", None), false);
    credit.upload(&mut raw, 5, 3 << 20, 0, true);
    assert_eq!(credit.wait_done(&mut raw, 5), 200);
    // Reset by the client mid-body.
    raw.headers(7, &post("/read", None), false);
    credit.upload(&mut raw, 7, 700_000, 0, false);
    frame_rst(&mut raw, 7);
    raw.headers(9, &post("/x", None), false);
    credit.upload(&mut raw, 9, 700_000, 0, false);
    frame_rst(&mut raw, 9);
    // Reset by the server (content-length 10), DATA still in flight.
    raw.headers(11, &post("/x", Some(10)), false);
    credit.upload(&mut raw, 11, 600_000, 0, false);
    // The lent body dropped unread: the client gives up on it.
    raw.headers(13, &post("/lend", None), false);
    credit.upload(&mut raw, 13, 900_000, 0, false);
    frame_rst(&mut raw, 13);
    // A last upload goes through.
    raw.headers(15, &post("/read", None), false);
    credit.upload(&mut raw, 15, 3 << 20, 0, true);
    assert_eq!(credit.wait_done(&mut raw, 15), 200);
}

fn frame_rst(raw: &mut Raw, stream: u32) {
    let mut out = Vec::new();
    frame::encode_rst_stream(&mut out, stream, ErrorCode::CANCEL);
    raw.send(&out);
}

/// HTTP/1 answers CONNECT with 501 (no tunnels: `target.rs`), before the
/// handler. Over HTTP/2 a CONNECT (8.5) reaches the handler as a request
/// for target "/" (`h2/serve/dispatch.rs`: `head.path().unwrap_or("/")`), and its 200
/// tells the client a tunnel is open (8.5), the body then reading as bytes
/// from `internal:22`.
#[test]
fn connect_is_refused_as_over_http1() {
    let server = serve(Options::new().workers(1), Probe);
    common::refused(server.addr, b"CONNECT internal:22 HTTP/1.1\r\nHost: internal:22\r\n\r\n", 501);
    let fields = [(":method", "CONNECT"), (":authority", "internal:22")];
    let (status, body) = show(server.addr, &fields);
    assert!(status == 0 || status == 501 || status == 405, "CONNECT answered {status}: {body}");
}

/// Request trailers end the body (8.1); trailers without END_STREAM are
/// malformed.
#[test]
fn request_trailers() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &post("/x", None), false);
    raw.data(1, b"abc", false);
    raw.headers(1, &block(&[("x-sum", "1")]), true);
    let (status, _, _) = raw.response(1);
    assert_eq!(status, 200);
    raw.headers(3, &post("/x", None), false);
    raw.data(3, b"abc", false);
    raw.headers(3, &block(&[("x-sum", "1")]), false);
    let (status, _, body) = raw.response(3);
    assert_eq!((status, String::from_utf8_lossy(&body).into_owned()), (0, "RST(1)".into()));
}

// ------------------------------------------ a black-box probe's findings

/// Waits for a frame of `kind` (skipping others) until the connection ends
/// or `timeout` passes with nothing new.
fn await_frame(raw: &mut Raw, kind: u8, timeout: Duration) -> Option<Frame> {
    while let Some(frame) = raw.next_frame(timeout) {
        if frame.kind == kind {
            return Some(frame);
        }
    }
    None
}

/// An upgrade request (`UPGRADE`'s fields) for `/up`.
fn upgrade_request() -> Vec<u8> {
    format!("GET /up HTTP/1.1\r\nHost: h\r\n{UPGRADE}\r\n").into_bytes()
}

/// RFC 9113 3.2: frames the client sends right behind the upgrade request,
/// in the same segment, are read at once (they were left "examined" by
/// the HTTP/1 side, and sat unread until more input came).
#[test]
fn frames_in_the_upgrade_requests_segment_are_answered_without_more_input() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::connect(server.addr);
    let mut out = upgrade_request();
    out.extend_from_slice(PREFACE);
    frame::encode_settings(&mut out, &[]).unwrap();
    frame::encode_ping(&mut out, *b"pingpong", false);
    raw.send(&out);
    raw.read_switch();
    let ack = await_frame(&mut raw, kind::PING, Duration::from_secs(5)).expect("no PING ack");
    assert_eq!((ack.flags, &ack.payload[..]), (1, &b"pingpong"[..]));
}

/// Bytes in the upgrade request's segment that cannot begin the preface
/// are refused at once: the upgrade is declined (they would be a bad
/// preface, RFC 9113 3.4, and the upgrading request never answered), the
/// request is answered over HTTP/1.1, and the bytes behind it, read as
/// HTTP/1, get `400` and the close, without waiting for more input.
#[test]
fn a_bad_preface_in_the_upgrade_requests_segment_is_refused_at_once() {
    use std::io::{Read, Write};

    let server = serve(Options::new().workers(1), Probe);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = upgrade_request();
    out.extend_from_slice(b"GARBAGE GARBAGE GARBAGE GARBAGE\r\n\r\n");
    tcp.write_all(&out).unwrap();
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).expect("closed at once");
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert!(reply.contains("HTTP/1.1 400 Bad Request\r\n"), "{reply}");
    assert!(!reply.contains("101 Switching"), "{reply}");
}

/// RFC 9113 5.1 (closed): HEADERS on a stream the client reset is
/// STREAM_CLOSED, not an unused id's PROTOCOL_ERROR.
#[test]
fn headers_on_a_stream_the_client_reset_is_stream_closed() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    let fields = req("GET", "/slow");
    raw.headers(1, &fields, false);
    let mut out = Vec::new();
    frame::encode_rst_stream(&mut out, 1, ErrorCode::CANCEL);
    raw.send(&out);
    raw.headers(1, &fields, true);
    let goaway = await_frame(&mut raw, kind::GOAWAY, Duration::from_secs(5)).expect("no GOAWAY");
    assert_eq!(goaway.code(), u32::from(ErrorCode::STREAM_CLOSED));
}

/// RFC 9113 5.1 (idle) and 6.4: a WINDOW_UPDATE of 0 on an idle stream is
/// the idle stream's connection error, not a RST_STREAM (which must not
/// be sent for an idle stream).
#[test]
fn a_zero_window_update_on_an_idle_stream_is_a_connection_error() {
    let server = serve(Options::new().workers(1), Probe);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.window_update(1, 0);
    let mut seen = Vec::new();
    while let Some(frame) = raw.next_frame(Duration::from_secs(5)) {
        seen.push(frame.kind);
        if frame.kind == kind::GOAWAY {
            assert_eq!(frame.code(), u32::from(ErrorCode::PROTOCOL_ERROR));
            assert!(!seen.contains(&kind::RST_STREAM), "{seen:?}");
            return;
        }
    }
    panic!("no GOAWAY: {seen:?}");
}

/// A TCP proxy to `to` that delays what the server sends by `delay`: a
/// client that far away learns of a reset a round trip late.
fn delaying_proxy(to: SocketAddr, delay: Duration) -> SocketAddr {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let server = std::net::TcpStream::connect(to).unwrap();
            let (mut upstream_in, mut upstream_out) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let mut buf = vec![0; 65536];
                while let Ok(n @ 1..) = upstream_in.read(&mut buf) {
                    if upstream_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
            let (tx, rx) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
            let mut downstream_in = server;
            std::thread::spawn(move || {
                let mut buf = vec![0; 65536];
                while let Ok(n @ 1..) = downstream_in.read(&mut buf) {
                    let _ = tx.send((Instant::now() + delay, buf[..n].to_vec()));
                }
            });
            let mut downstream_out = client;
            std::thread::spawn(move || {
                for (at, bytes) in rx {
                    std::thread::sleep(at.saturating_duration_since(Instant::now()));
                    if downstream_out.write_all(&bytes).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// A well-behaved client (the `h2` crate) 50 ms away streaming an upload
/// in 100-byte DATA frames that the server refuses at its HEADERS (413:
/// content-length past max_body, then RST_STREAM): the frames in flight
/// when it sees the reset are dropped, and the connection serves the next
/// request (an adversarial review's case: counting dropped frames under
/// 256 bytes against the ignored-frame allowance ended it with
/// GOAWAY(ENHANCE_YOUR_CALM) after 256 of them).
#[test]
fn an_upload_in_small_frames_refused_a_round_trip_away_keeps_the_connection() {
    let server = serve(Options::new().workers(1).max_body(10_000), common::Echo);
    let proxy = delaying_proxy(server.addr, Duration::from_millis(50));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let send = common::h2_client(proxy).await;
        let mut send = send.ready().await.unwrap();
        let request = http::Request::builder()
            .method("POST")
            .uri("http://localhost/echo")
            .header("content-length", "100000000")
            .body(())
            .unwrap();
        let (response, mut body) = send.send_request(request, false).unwrap();
        let mut sent = 0;
        'send: for _ in 0..500 {
            for _ in 0..40 {
                if body.send_data(bytes::Bytes::from_static(&[b'a'; 100]), false).is_err() {
                    break 'send;
                }
                sent += 1;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let response = response.await.unwrap();
        assert_eq!(response.status(), 413);
        assert!(sent > 300, "{sent} frames sent: more than the allowance was in flight");
        drop(body);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut send = send.ready().await.expect("the connection lives");
        let request = http::Request::builder().uri("http://localhost/x").body(()).unwrap();
        let (response, _) = send.send_request(request, true).expect("a second request");
        let response = response.await.expect("the second request is answered");
        assert_eq!(response.status(), 200);
    });
}
