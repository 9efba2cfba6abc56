//! Outside review: RFC 9110 (HTTP semantics) rules that bind an origin
//! server, over HTTP/1.1 and HTTP/2 (prior knowledge), through the native
//! `Handler`, the deferred `Responder` and a tower service.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, block};
use common::{Client, Echo, End, connect, options, read_for, serve, text};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Request, Response, ResponseError, Status};

// ------------------------------------------------------------ h1 helpers

/// Sends `request` on a new connection; reads for up to `wait`.
fn raw_h1(addr: SocketAddr, request: &[u8], wait: Duration) -> (String, End) {
    let mut stream = connect(addr);
    stream.write_all(request).unwrap();
    let (bytes, end) = read_for(&mut stream, wait);
    (text(&bytes), end)
}

fn status_of(reply: &str) -> u16 {
    reply.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// The header section of the first response in `reply` (fields only).
fn head_fields(reply: &str) -> Vec<(String, String)> {
    let head = reply.split("\r\n\r\n").next().unwrap_or("");
    head.lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
fn is_imf_fixdate(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 29
        && b[3] == b','
        && b[4] == b' '
        && v.ends_with(" GMT")
        && b[7] == b' '
        && b[11] == b' '
        && b[16] == b' '
        && b[19] == b':'
        && b[22] == b':'
        && ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(&&v[..3])
}

// ------------------------------------------------------------ h2 helpers

#[derive(Debug, Default)]
struct H2Answer {
    /// Every header block on the stream (1xx, final, trailers).
    blocks: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    body: Vec<u8>,
    data_frames: usize,
    reset: Option<u32>,
    goaway: Option<u32>,
    ended: bool,
}

impl H2Answer {
    fn status(&self) -> u16 {
        self.final_block()
            .and_then(|b| b.iter().find(|(n, _)| n == b":status"))
            .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
            .unwrap_or(0)
    }
    fn final_block(&self) -> Option<&Vec<(Vec<u8>, Vec<u8>)>> {
        self.blocks.iter().find(|b| b.iter().any(|(n, v)| n == b":status" && !v.starts_with(b"1")))
    }
    fn field(&self, name: &str) -> Option<String> {
        self.final_block()?
            .iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }
    fn names(&self) -> Vec<String> {
        self.final_block()
            .map(|b| b.iter().map(|(n, _)| String::from_utf8_lossy(n).into_owned()).collect())
            .unwrap_or_default()
    }
}

/// One request on stream 1 of a fresh connection: `fields` as HEADERS
/// (END_STREAM unless `data` follows), then `data` (END_STREAM).
fn h2_exchange(addr: SocketAddr, fields: &[(&str, &str)], data: Option<&[u8]>) -> H2Answer {
    let mut raw = Raw::handshake(addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &block(fields), data.is_none());
    if let Some(data) = data {
        raw.data(1, data, true);
    }
    h2_collect(&mut raw, 1)
}

fn h2_collect(raw: &mut Raw, id: u32) -> H2Answer {
    let mut answer = H2Answer::default();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let mut fields = Vec::new();
                    raw.decoder
                        .decode(&f.payload, |fl| fields.push((fl.name.to_vec(), fl.value.to_vec())))
                        .expect("the server's HPACK decodes");
                    assert_eq!(f.flags & 0x4, 0x4, "test reads single-frame blocks only");
                    if f.stream == id {
                        answer.blocks.push(fields);
                        if f.end_stream() {
                            answer.ended = true;
                            return answer;
                        }
                    }
                } else if f.kind == kind::DATA && f.stream == id {
                    answer.data_frames += 1;
                    answer.body.extend_from_slice(&f.payload);
                    if f.end_stream() {
                        answer.ended = true;
                        return answer;
                    }
                } else if f.kind == kind::RST_STREAM && f.stream == id {
                    answer.reset = Some(f.code());
                    return answer;
                } else if f.kind == kind::GOAWAY {
                    answer.goaway = Some(f.code());
                    return answer;
                }
            }
            Event::Eof | Event::Timeout => return answer,
        }
    }
}

fn get2(path: &str) -> Vec<(&'static str, String)> {
    vec![
        (":method", "GET".into()),
        (":scheme", "http".into()),
        (":path", path.to_string()),
        (":authority", "localhost".into()),
    ]
}

fn h2_req(addr: SocketAddr, method: &str, path: &str, extra: &[(&str, &str)]) -> H2Answer {
    let mut fields: Vec<(&str, &str)> = vec![
        (":method", method),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
    ];
    fields.extend_from_slice(extra);
    h2_exchange(addr, &fields, None)
}

const PROTOCOL_ERROR: u32 = 1;

// ------------------------------------------------------- native handler

/// Errors the header calls returned, by route, for the tests to read.
static SEEN: Mutex<Vec<(String, Result<(), ResponseError>)>> = Mutex::new(Vec::new());

fn seen(route: &str) -> Vec<Result<(), ResponseError>> {
    SEEN.lock().unwrap().iter().filter(|(r, _)| r == route).map(|(_, e)| *e).collect()
}

/// Routes:
/// `/sized` body "hello"; `/stream` "hel"+"lo" streamed; `/bytes`
/// `body_bytes`; `/deferred` a Responder's body from a thread;
/// `/deferred-stream` a Responder's streamed body from a thread;
/// `/status?N&MODE` status N then "xyz" by body/write/deferred/dwrite;
/// `/inject?K` header-splitting attempts; `/fields` hop-by-hop and
/// uppercase fields; `/method` answers the method.
#[derive(Clone, Copy)]
struct Probe;

impl Handler for Probe {
    type State = (String, String);

    fn head(&self, request: &Request<'_>) -> (String, String) {
        (request.target().to_string(), request.method().to_string())
    }

    fn respond(&self, (target, method): (String, String), response: &mut Response<'_>) {
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        match path {
            "/sized" => response.body(b"hello").unwrap(),
            "/stream" => {
                response.write(b"hel").unwrap();
                response.write(b"lo").unwrap();
            }
            "/bytes" => response.body_bytes(bytes::Bytes::from_static(b"hello")).unwrap(),
            "/deferred" => {
                let responder = response.defer().unwrap();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(5));
                    responder.body(b"hello").unwrap();
                });
            }
            "/deferred-stream" => {
                let mut responder = response.defer().unwrap();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(5));
                    responder.write_blocking(b"hel").unwrap();
                    responder.write_blocking(b"lo").unwrap();
                    responder.finish().unwrap();
                });
            }
            "/status" => {
                let (code, mode) = query.split_once('&').unwrap_or((query, "body"));
                let status = Status::new(code.parse().unwrap()).unwrap();
                match mode {
                    "body" => {
                        response.status(status).unwrap();
                        let r = response.body(b"xyz");
                        SEEN.lock().unwrap().push((format!("status{code}body"), r));
                    }
                    "write" => {
                        response.status(status).unwrap();
                        let r = response.write(b"xyz");
                        SEEN.lock().unwrap().push((format!("status{code}write"), r));
                    }
                    "deferred" | "dwrite" => {
                        let mut responder = response.defer().unwrap();
                        let mode = mode.to_string();
                        let code = code.to_string();
                        std::thread::spawn(move || {
                            responder.status(status).unwrap();
                            let r = if mode == "deferred" {
                                responder.body(b"xyz")
                            } else {
                                responder.write_blocking(b"xyz").and_then(|()| responder.finish())
                            };
                            SEEN.lock().unwrap().push((format!("status{code}{mode}"), r));
                        });
                    }
                    other => panic!("{other}"),
                }
            }
            "/inject" => {
                let attempts: [(&str, &[u8]); 8] = [
                    ("X-A", b"a\r\nX-Injected: 1"),
                    ("X-A", b"a\nX-Injected: 1"),
                    ("X-A", b"a\rX-Injected: 1"),
                    ("X-A", b"a\0b"),
                    ("X-A\r\nX-Injected", b"1"),
                    ("X A", b"1"),
                    ("X-A:", b"1"),
                    ("", b"1"),
                ];
                if query == "deferred" {
                    let mut responder = response.defer().unwrap();
                    std::thread::spawn(move || {
                        for (n, v) in attempts {
                            let r = responder.header(n, v).map(drop);
                            SEEN.lock().unwrap().push(("inject-deferred".into(), r));
                        }
                        responder.body(b"ok").unwrap();
                    });
                } else {
                    for (n, v) in attempts {
                        let r = response.header(n, v).map(drop);
                        SEEN.lock().unwrap().push(("inject".into(), r));
                    }
                    response.body(b"ok").unwrap();
                }
            }
            "/ctl" => {
                // Other CTLs (RFC 9110 5.5: invalid in a field value) and
                // edge whitespace (RFC 9113 8.2.1: MUST NOT over HTTP/2).
                let all: [(&str, &[u8]); 4] = [
                    ("X-Ctl", b"a\x01b"),
                    ("X-Del", b"a\x7fb"),
                    ("X-Trail", b"v "),
                    ("X-Tab", b"v\t"),
                ];
                let mut seen = SEEN.lock().unwrap();
                for (i, (n, v)) in all.into_iter().enumerate() {
                    if query.is_empty() || query == i.to_string() {
                        seen.push(("ctl".into(), response.header(n, v).map(drop)));
                    }
                }
                drop(seen);
                response.body(b"ok").unwrap();
            }
            "/fields" => {
                for (n, v) in [
                    ("X-Upper-Case", "v"),
                    ("Keep-Alive", "timeout=5"),
                    ("Upgrade", "h2c"),
                    ("Proxy-Connection", "keep-alive"),
                    ("TE", "trailers"),
                    ("Trailer", "x-foo"),
                ] {
                    let r = response.header(n, v).map(drop);
                    SEEN.lock().unwrap().push(("fields".into(), r));
                }
                response.body(b"ok").unwrap();
            }
            "/reserved" => {
                let mut seen = SEEN.lock().unwrap();
                for n in ["Content-Length", "transfer-encoding", "CONNECTION", "Date"] {
                    seen.push(("reserved".into(), response.header(n, "1").map(drop)));
                }
                seen.push((
                    "reserved".into(),
                    response.status(Status::new(100).unwrap()).map(drop),
                ));
                seen.push((
                    "reserved".into(),
                    response.status(Status::new(101).unwrap()).map(drop),
                ));
                drop(seen);
                response.body(b"ok").unwrap();
            }
            "/method" => response.body(method.as_bytes()).unwrap(),
            _ => response.status(Status::NOT_FOUND).and_then(|r| r.body(b"nf")).unwrap(),
        }
    }
}

fn probe() -> common::TestServer<Probe> {
    serve(options(), Probe)
}

const BODY_PATHS: [&str; 5] = ["/sized", "/stream", "/bytes", "/deferred", "/deferred-stream"];

/// RFC 9110 9.3.2: HEAD gets the same head as GET and no content; the
/// next pipelined response starts right after the head (HTTP/1.1).
#[test]
fn head_matches_get_without_body_over_h1_native_and_deferred() {
    let server = probe();
    for path in BODY_PATHS {
        let mut client = Client::connect(server.addr);
        client.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        let get = client.reply().unwrap();
        assert_eq!(get.body, b"hello", "{path}");
        client.send(
            format!(
                "HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /sized HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            .as_bytes(),
        );
        let head = client.reply_to(true).unwrap();
        let next = client.reply().unwrap_or_else(|e| panic!("{path}: after HEAD: {e}"));
        assert_eq!(next.status, 200, "{path}: pipelined GET after HEAD");
        assert_eq!(next.body, b"hello", "{path}");
        assert_eq!(head.status, get.status, "{path}");
        let g: Vec<_> = get.headers.iter().filter(|(n, _)| n != "Date").collect();
        let h: Vec<_> = head.headers.iter().filter(|(n, _)| n != "Date").collect();
        assert_eq!(g, h, "{path}: HEAD's head is GET's");
    }
}

/// The same over HTTP/2: HEADERS (with END_STREAM, or empty DATA only).
#[test]
fn head_matches_get_without_body_over_h2_native_and_deferred() {
    let server = probe();
    for path in BODY_PATHS {
        let get = h2_req(server.addr, "GET", path, &[]);
        let head = h2_req(server.addr, "HEAD", path, &[]);
        assert_eq!(get.status(), 200, "{path}");
        assert_eq!(get.body, b"hello", "{path}");
        assert!(head.ended, "{path}: {head:?}");
        assert_eq!(head.status(), 200, "{path}");
        assert!(head.body.is_empty(), "{path}: HEAD carried {:?}", head.body);
        assert_eq!(head.field("content-length"), get.field("content-length"), "{path}");
        let strip = |a: &H2Answer| {
            a.final_block()
                .unwrap()
                .iter()
                .filter(|(n, _)| n != b"date")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&get), strip(&head), "{path}");
    }
}

/// RFC 9110 15.3.5 (204), 15.4.5 (304), 15.3.6 (205: "a server MUST NOT
/// generate content in a 205 response"), RFC 9112 6.1 (no
/// Transfer-Encoding in 204) and 6.2: whatever the application writes,
/// no content goes out; over HTTP/1.1 the next pipelined response starts
/// right after the head.
#[test]
fn bodiless_statuses_send_no_content_over_h1() {
    let server = probe();
    let mut failures = Vec::new();
    for code in [204u16, 205, 304] {
        for mode in ["body", "write", "deferred", "dwrite"] {
            let mut client = Client::connect(server.addr);
            client.send(
                format!(
                    "GET /status?{code}&{mode} HTTP/1.1\r\nHost: x\r\n\r\nGET /sized HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                .as_bytes(),
            );
            let (bytes, _) = read_for(
                &mut client.reader.get_mut().try_clone().unwrap(),
                Duration::from_millis(500),
            );
            let reply = text(&bytes);
            assert_eq!(status_of(&reply), code, "{code} {mode}: {reply:?}");
            let fields = head_fields(&reply);
            let te = field(&fields, "transfer-encoding");
            let cl = field(&fields, "content-length");
            // 205 may be framed (Content-Length: 0 or an empty chunked
            // body); only 204 forbids Transfer-Encoding (9112 6.1).
            if code == 204 && te.is_some() {
                failures.push(format!("{code} {mode}: Transfer-Encoding"));
            }
            if code == 204 && cl.is_some() {
                failures.push(format!("{code} {mode}: Content-Length {cl:?}"));
            }
            if code == 205 && cl.is_some_and(|v| v != "0") {
                failures.push(format!("{code} {mode}: Content-Length {cl:?}"));
            }
            let after = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            if !(after.starts_with("HTTP/1.1 200 OK\r\n") && after.ends_with("\r\n\r\nhello")) {
                failures.push(format!("{code} {mode}: content after the head: {after:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bodiless_statuses_send_no_content_over_h2() {
    let server = probe();
    let mut failures = Vec::new();
    for code in [204u16, 205, 304] {
        for mode in ["body", "write", "deferred", "dwrite"] {
            let a = h2_req(server.addr, "GET", &format!("/status?{code}&{mode}"), &[]);
            assert_eq!(a.status(), code, "{code} {mode}: {a:?}");
            assert!(a.ended, "{code} {mode}");
            if !a.body.is_empty() {
                failures.push(format!("{code} {mode}: content {:?}", text(&a.body)));
            }
            if code != 304 && a.field("content-length").is_some_and(|v| v != "0") {
                failures
                    .push(format!("{code} {mode}: content-length {:?}", a.field("content-length")));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What does the API say when content is written for a bodiless status?
/// (Documentation check: the call succeeds and the bytes are dropped.)
#[test]
fn a_body_for_a_bodiless_status_is_accepted_silently() {
    let server = probe();
    for mode in ["body", "write", "deferred", "dwrite"] {
        let _ = h2_req(server.addr, "GET", &format!("/status?204&{mode}"), &[]);
        std::thread::sleep(Duration::from_millis(50));
        let r = seen(&format!("status204{mode}"));
        assert!(r.iter().all(Result::is_ok), "{mode}: {r:?}");
    }
}

/// RFC 9110 5.5 / RFC 9112 2.2 / RFC 9113 8.2.1: CR, LF, NUL in a value
/// and non-token names are typed errors and nothing of them reaches the
/// wire, through `Response` and `Responder`, over both protocols.
#[test]
fn response_splitting_is_a_typed_error_everywhere() {
    let server = probe();
    let (reply, _) = raw_h1(
        server.addr,
        b"GET /inject HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        !reply.to_ascii_lowercase().contains("injected") && !reply.contains("X-A"),
        "{reply:?}"
    );
    let (reply, _) = raw_h1(
        server.addr,
        b"GET /inject?deferred HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    );
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        !reply.to_ascii_lowercase().contains("injected") && !reply.contains("X-A"),
        "{reply:?}"
    );
    let a = h2_req(server.addr, "GET", "/inject", &[]);
    assert_eq!(a.status(), 200);
    assert!(a.names().iter().all(|n| !n.contains("x-a") && !n.contains("inject")), "{a:?}");
    let a = h2_req(server.addr, "GET", "/inject?deferred", &[]);
    assert_eq!(a.status(), 200);
    assert!(a.names().iter().all(|n| !n.contains("x-a") && !n.contains("inject")), "{a:?}");
    for route in ["inject", "inject-deferred"] {
        let r = seen(route);
        assert!(r.len() >= 8, "{route}: {r:?}");
        for (i, e) in r.iter().enumerate() {
            let want = if i % 8 < 4 {
                ResponseError::InvalidHeaderValue
            } else {
                ResponseError::InvalidHeaderName
            };
            assert_eq!(*e, Err(want), "{route} attempt {i}");
        }
    }
}

/// RFC 9110 2.2 + 5.5 (field-value grammar: no CTL but HTAB; no leading
/// or trailing whitespace), RFC 9113 8.2.1 ("A field value MUST NOT start
/// or end with an ASCII whitespace character"): either the call fails, or
/// what goes on the wire obeys the grammar.
#[test]
fn field_values_with_controls_or_edge_whitespace_never_reach_h2_malformed() {
    let server = probe();
    let a = h2_req(server.addr, "GET", "/ctl", &[]);
    assert_eq!(a.status(), 200, "{a:?}");
    let block = a.final_block().unwrap();
    let mut bad = Vec::new();
    for (n, v) in block {
        let v_ok = !v.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
            && !v.first().is_some_and(|b| *b == b' ' || *b == b'\t')
            && !v.last().is_some_and(|b| *b == b' ' || *b == b'\t');
        if !v_ok {
            bad.push(format!("{} = {:?}", text(n), text(v)));
        }
    }
    assert!(bad.is_empty(), "malformed h2 field values: {bad:?} (calls: {:?})", seen("ctl"));
}

#[test]
fn field_values_with_controls_never_reach_h1() {
    let server = probe();
    let (reply, _) = raw_h1(
        server.addr,
        b"GET /ctl HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    );
    let head = reply.split("\r\n\r\n").next().unwrap();
    assert!(
        !head.bytes().any(|b| (b < 0x20 && !matches!(b, b'\t' | b'\r' | b'\n')) || b == 0x7f),
        "CTL in an HTTP/1.1 head: {head:?} (calls: {:?})",
        seen("ctl")
    );
}

/// RFC 9113 8.2.2 (connection-specific fields never sent over HTTP/2) and
/// 8.2 (names lowercase on the wire), from a native handler.
#[test]
fn h2_native_fields_are_lowercase_and_never_connection_specific() {
    let server = probe();
    let a = h2_req(server.addr, "GET", "/fields", &[]);
    assert_eq!(a.status(), 200, "{a:?}");
    let names = a.names();
    for n in &names {
        assert_eq!(*n, n.to_ascii_lowercase(), "{names:?}");
    }
    assert!(names.contains(&"x-upper-case".to_string()), "{names:?}");
    for bad in ["connection", "keep-alive", "upgrade", "proxy-connection", "transfer-encoding"] {
        assert!(!names.contains(&bad.to_string()), "{bad} over h2: {names:?}");
    }
    // TE is a hop-by-hop request field (9110 10.1.4); 9113 8.2.2 allows it
    // only in requests, as "trailers".
    assert!(!names.contains(&"te".to_string()), "te in an h2 response: {names:?}");
}

/// The reserved fields and 1xx statuses are typed errors (documented).
#[test]
fn reserved_fields_and_informational_statuses_are_typed_errors() {
    let server = probe();
    let mut client = Client::connect(server.addr);
    let reply = client.get("/reserved");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"ok");
    assert_eq!(
        seen("reserved"),
        vec![
            Err(ResponseError::ReservedHeader),
            Err(ResponseError::ReservedHeader),
            Err(ResponseError::ReservedHeader),
            Err(ResponseError::ReservedHeader),
            Err(ResponseError::InformationalStatus(100)),
            Err(ResponseError::InformationalStatus(101)),
        ]
    );
}

/// RFC 9110 6.6.1: an origin server with a clock MUST send Date in every
/// 2xx, 3xx, 4xx response (MAY in 5xx); over HTTP/1.1 refusals included.
#[test]
fn date_on_every_2xx_3xx_4xx_response_over_h1() {
    let server = serve(options().max_request_line(1024).max_head(4096).max_body(16), Echo);
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(2000));
    let big_head = format!("GET / HTTP/1.1\r\nHost: x\r\nX: {}\r\n\r\n", "b".repeat(5000));
    let cases: Vec<(Vec<u8>, &[u16])> = vec![
        (b"GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(), &[200]),
        (b"GET /x HTTP/1.0\r\n\r\n".to_vec(), &[200]),
        (b"GET /x HTTP/1.1\r\n\r\n".to_vec(), &[400]),
        (b"GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec(), &[400]),
        (b"G@T /x HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), &[400]),
        (long_target.into_bytes(), &[414]),
        (big_head.into_bytes(), &[431]),
        (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n".to_vec(), &[413]),
        (b"GET /x HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n".to_vec(), &[417]),
        (b"GET /x HTTP/3.0\r\nHost: x\r\n\r\n".to_vec(), &[505]),
        (b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n".to_vec(), &[501]),
    ];
    for (request, statuses) in cases {
        let (reply, _) = raw_h1(server.addr, &request, Duration::from_secs(2));
        let status = status_of(&reply);
        assert!(statuses.contains(&status), "{:?}: {reply:?}", text(&request));
        let fields = head_fields(&reply);
        if status < 500 {
            let date = field(&fields, "date");
            assert!(date.is_some_and(is_imf_fixdate), "{status} without a valid Date: {reply:?}");
        }
        let dates = fields.iter().filter(|(n, _)| n == "date").count();
        assert!(dates <= 1, "{reply:?}");
    }
}

#[test]
fn date_on_every_2xx_3xx_4xx_response_over_h2() {
    let server = serve(options().max_request_line(1024).max_head(4096), Echo);
    let a = h2_req(server.addr, "GET", "/x", &[]);
    assert_eq!(a.status(), 200);
    assert!(a.field("date").is_some_and(|d| is_imf_fixdate(&d)), "{a:?}");
    // 417
    let a = h2_req(server.addr, "GET", "/x", &[("expect", "teapot")]);
    assert_eq!(a.status(), 417, "{a:?}");
    assert!(a.field("date").is_some_and(|d| is_imf_fixdate(&d)), "{a:?}");
    // 431 (a header list past max_head)
    let big = "b".repeat(5000);
    let a = h2_req(server.addr, "GET", "/x", &[("x-big", &big)]);
    assert_eq!(a.status(), 431, "{a:?}");
    assert!(a.field("date").is_some_and(|d| is_imf_fixdate(&d)), "{a:?}");
}

/// 408s (4xx: Date a MUST): the head's timeout over HTTP/1.1, a stalled
/// body over HTTP/1.1, and one HTTP/2 stream whose body stalls.
#[test]
fn date_on_timeout_answers() {
    let server = serve(
        options().header_timeout(Duration::from_millis(300)).io_timeout(Duration::from_millis(300)),
        Echo,
    );
    let (reply, _) = raw_h1(server.addr, b"GET /x HTTP/1.1\r\nHost", Duration::from_secs(3));
    assert_eq!(status_of(&reply), 408, "{reply:?}");
    assert!(field(&head_fields(&reply), "date").is_some_and(is_imf_fixdate), "{reply:?}");
    let (reply, _) = raw_h1(
        server.addr,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab",
        Duration::from_secs(3),
    );
    assert_eq!(status_of(&reply), 408, "{reply:?}");
    assert!(field(&head_fields(&reply), "date").is_some_and(is_imf_fixdate), "{reply:?}");
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    let fields = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/echo"),
        (":authority", "localhost"),
        ("content-length", "10"),
    ];
    raw.headers(1, &block(&fields), false);
    raw.data(1, b"ab", false);
    let a = h2_collect(&mut raw, 1);
    // The connection's own timer (one stream, the whole connection stalled)
    // ends it with a GOAWAY (documented); a 408 on the stream must carry Date.
    if a.goaway.is_none() {
        assert_eq!(a.status(), 408, "{a:?}");
        assert!(a.field("date").is_some_and(|d| is_imf_fixdate(&d)), "h2 408 without Date: {a:?}");
    }
}

/// Interop: curl (nghttp2) over h2c prior knowledge gets each response a
/// native handler produced with fields the API accepted. Skipped when
/// curl is missing.
fn curl_h2(addr: SocketAddr, path: &str) -> Option<(i32, String)> {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--http2-prior-knowledge", "--max-time", "5", "-o", "-"])
        .arg(format!("http://{addr}{path}"))
        .output();
    let Ok(out) = out else {
        common::skip_without("curl");
        return None;
    };
    Some((out.status.code().unwrap_or(-1), format!("{}{}", text(&out.stdout), text(&out.stderr))))
}

#[test]
fn curl_h2_takes_what_the_native_api_accepted() {
    let server = probe();
    let mut failures = Vec::new();
    for path in ["/sized", "/ctl?0", "/ctl?1", "/ctl?2", "/ctl?3", "/fields"] {
        let Some((code, out)) = curl_h2(server.addr, path) else { return };
        if code != 0 {
            failures.push(format!("{path}: curl exit {code}: {out}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?} (calls: {:?})", seen("ctl"));
}

// -------------------------------------------------------- Host, targets

/// RFC 9112 3.2 / RFC 9110 7.2: Host rules; 3.2.2: an absolute-form
/// target's authority wins over Host.
#[test]
fn host_rules_over_h1() {
    let server = serve(options(), Echo);
    for (req, want) in [
        (&b"GET /x HTTP/1.1\r\n\r\n"[..], 400u16),
        (b"GET /x HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: a:b\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),
        (b"GET /x HTTP/1.1\r\nHost: u@a\r\n\r\n", 400),
        (b"GET /x HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ] {
        let (reply, _) = raw_h1(server.addr, req, Duration::from_secs(2));
        assert_eq!(status_of(&reply), want, "{:?}: {reply:?}", text(req));
    }
    let (reply, _) = raw_h1(
        server.addr,
        b"GET http://target.example:81/authority HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    );
    assert!(reply.ends_with("\r\n\r\ntarget.example:81"), "{reply:?}");
}

/// RFC 9113 8.3.1: `:authority` and `host` must agree (or the request is
/// malformed); `host` alone is the authority.
#[test]
fn authority_and_host_over_h2() {
    let server = serve(options(), Echo);
    let a = h2_exchange(
        server.addr,
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/authority"),
            (":authority", "a.example"),
            ("host", "b.example"),
        ],
        None,
    );
    assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "mismatched host served: {a:?}");
    let a = h2_exchange(
        server.addr,
        &[(":method", "GET"), (":scheme", "http"), (":path", "/authority"), ("host", "h.example")],
        None,
    );
    assert_eq!(a.status(), 200, "{a:?}");
    assert_eq!(a.body, b"h.example");
    let a = h2_exchange(
        server.addr,
        &[
            (":method", "GET"),
            (":scheme", "http"),
            (":path", "/authority"),
            (":authority", "a.example"),
            ("host", "a.example"),
            ("host", "a.example"),
        ],
        None,
    );
    assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "two hosts: {a:?}");
}

/// RFC 9112 3.2: request-target forms; RFC 9110 9.3.6 CONNECT; 9.3.7
/// OPTIONS *.
#[test]
fn request_target_forms_over_h1() {
    let server = serve(options().max_request_line(1024), Echo);
    for (req, want) in [
        (&b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..], &[200u16][..]),
        (b"GET * HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
        (b"HEAD * HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
        (b"GET x.example:80 HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
        (b"CONNECT x.example:443 HTTP/1.1\r\nHost: x.example:443\r\n\r\n", &[501, 405]),
        (b"CONNECT x.example:99999 HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
        (b"CONNECT /x HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
        (b"GET http://x.example/y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &[200]),
        (b"GET ftp://x.example/y HTTP/1.1\r\nHost: x\r\n\r\n", &[400]),
    ] {
        let (reply, _) = raw_h1(server.addr, req, Duration::from_secs(2));
        assert!(want.contains(&status_of(&reply)), "{:?}: {reply:?}", text(req));
    }
    // 414 with a close, and nothing behind it is answered.
    let mut client = Client::connect(server.addr);
    client.send(
        format!(
            "GET /{} HTTP/1.1\r\nHost: x\r\n\r\nGET /y HTTP/1.1\r\nHost: x\r\n\r\n",
            "a".repeat(4000)
        )
        .as_bytes(),
    );
    let reply = client.reply().unwrap();
    assert_eq!(reply.status, 414);
    assert!(reply.closes());
    client.expect_closed();
}

#[test]
fn request_target_forms_over_h2() {
    let server = serve(options(), Echo);
    let a = h2_req(server.addr, "OPTIONS", "*", &[]);
    assert_eq!(a.status(), 200, "OPTIONS * over h2: {a:?}");
    for (method, path) in [("GET", "*"), ("GET", "x"), ("GET", "http://a/b"), ("GET", "")] {
        let a = h2_req(server.addr, method, path, &[]);
        assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "{method} {path:?}: {a:?}");
    }
    let a =
        h2_exchange(server.addr, &[(":method", "CONNECT"), (":authority", "x.example:443")], None);
    assert!(matches!(a.status(), 501 | 405), "CONNECT over h2: {a:?}");
}

/// RFC 9110 7.8: "A sender of Upgrade MUST also send an "Upgrade"
/// connection option in the Connection header field". A native handler
/// may add `Upgrade` (accepted) but never `Connection` (reserved), so the
/// head it produces over HTTP/1.1 breaks the rule.
#[test]
fn native_upgrade_field_over_h1_has_its_connection_option() {
    let server = probe();
    let (reply, _) = raw_h1(
        server.addr,
        b"GET /fields HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    );
    let fields = head_fields(&reply);
    if field(&fields, "upgrade").is_some() {
        let conn = field(&fields, "connection").unwrap_or("");
        assert!(
            conn.to_ascii_lowercase().contains("upgrade"),
            "Upgrade sent without the upgrade connection option: {fields:?} (calls {:?})",
            seen("fields")
        );
    }
}

/// RFC 9113 8.2.2: connection-specific request fields (and TE other than
/// "trailers") make an HTTP/2 request malformed.
#[test]
fn h2_connection_specific_request_fields_are_malformed() {
    let server = serve(options(), Echo);
    for (n, v) in [
        ("connection", "keep-alive"),
        ("keep-alive", "timeout=5"),
        ("proxy-connection", "keep-alive"),
        ("transfer-encoding", "chunked"),
        ("upgrade", "h2c"),
        ("te", "gzip"),
        ("te", "trailers, gzip"),
    ] {
        let a = h2_req(server.addr, "GET", "/x", &[(n, v)]);
        assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "{n}: {v}: {a:?}");
    }
    let a = h2_req(server.addr, "GET", "/x", &[("te", "trailers")]);
    assert_eq!(a.status(), 200, "{a:?}");
}

// --------------------------------------------------------------- methods

/// RFC 9110 9.1: methods are case-sensitive: `head` is not HEAD (its
/// answer carries content), unknown tokens are served or refused with
/// 501/405; a method that is not a token is 400.
#[test]
fn methods_are_case_sensitive_tokens_over_h1() {
    let server = probe();
    let mut client = Client::connect(server.addr);
    client.send(b"head /sized HTTP/1.1\r\nHost: x\r\n\r\nGET /sized HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = client.reply().unwrap();
    assert!(r.status == 200 && r.body == b"hello" || matches!(r.status, 405 | 501), "{r:?}");
    let r2 = client.reply().unwrap();
    assert_eq!(r2.body, b"hello");
    let mut client = Client::connect(server.addr);
    let r = client.get("/method");
    assert_eq!(r.body, b"GET");
    client.send(b"get /method HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = client.reply().unwrap();
    assert!(r.body == b"get" || matches!(r.status, 405 | 501), "{r:?}");
    client.send(b"M-SEARCH.X~ /method HTTP/1.1\r\nHost: x\r\n\r\n");
    let r = client.reply().unwrap();
    assert!(r.body == b"M-SEARCH.X~" || matches!(r.status, 405 | 501), "{r:?}");
    for bad in [
        &b"G(T /x HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"G\x01T /x HTTP/1.1\r\nHost: x\r\n\r\n",
        b"G\xc3\xa9T /x HTTP/1.1\r\nHost: x\r\n\r\n",
        b" GET /x HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let (reply, _) = raw_h1(server.addr, bad, Duration::from_secs(2));
        assert_eq!(status_of(&reply), 400, "{:?}: {reply:?}", text(bad));
    }
}

#[test]
fn methods_are_case_sensitive_tokens_over_h2() {
    let server = probe();
    let a = h2_req(server.addr, "head", "/sized", &[]);
    assert!(a.body == b"hello" || matches!(a.status(), 405 | 501), "{a:?}");
    let a = h2_req(server.addr, "M-SEARCH", "/method", &[]);
    assert!(a.body == b"M-SEARCH" || matches!(a.status(), 405 | 501), "{a:?}");
    for bad in ["G T", "G(T", "", "G\u{1}T"] {
        let a = h2_req(server.addr, bad, "/method", &[]);
        assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "{bad:?}: {a:?}");
    }
}

// ---------------------------------------------------------------- Expect

/// RFC 9110 10.1.1: an expectation other than 100-continue -> 417.
#[test]
fn unknown_expectations_get_417() {
    let server = serve(options(), Echo);
    for value in ["teapot", "100-continue, foo", "100-continuex", "101-continue"] {
        let (reply, _) = raw_h1(
            server.addr,
            format!("GET /x HTTP/1.1\r\nHost: x\r\nExpect: {value}\r\n\r\n").as_bytes(),
            Duration::from_secs(2),
        );
        assert_eq!(status_of(&reply), 417, "{value}: {reply:?}");
        let a = h2_req(server.addr, "GET", "/x", &[("expect", value)]);
        assert_eq!(a.status(), 417, "h2 {value}: {a:?}");
    }
    // Case-insensitive token (9110 10.1.1: "100-continue" is case-insensitive).
    let (reply, _) = raw_h1(
        server.addr,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n",
        Duration::from_millis(500),
    );
    assert!(reply.starts_with("HTTP/1.1 100"), "{reply:?}");
}

// ------------------------------------------------------ Content-Length

/// RFC 9110 8.6: Content-Length = 1*DIGIT; RFC 9112 6.3.
#[test]
fn request_content_length_syntax_over_h1() {
    let server = serve(options(), Echo);
    for (cl, want) in [
        ("+5", &[400u16][..]),
        ("-5", &[400]),
        ("5.0", &[400]),
        ("0x5", &[400]),
        ("5 5", &[400]),
        ("99999999999999999999999", &[400, 413]),
        ("18446744073709551616", &[400, 413]),
    ] {
        let (reply, _) = raw_h1(
            server.addr,
            format!("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {cl}\r\n\r\nhello")
                .as_bytes(),
            Duration::from_secs(2),
        );
        assert!(want.contains(&status_of(&reply)), "{cl}: {reply:?}");
    }
    let (reply, _) = raw_h1(
        server.addr,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 05\r\nConnection: close\r\n\r\nhello",
        Duration::from_secs(2),
    );
    assert!(reply.ends_with(&common::echo_of(b"hello")), "{reply:?}");
}

/// RFC 9113 8.1.1: content-length disagreeing with the DATA is malformed,
/// a stream error of type PROTOCOL_ERROR (never served).
#[test]
fn h2_content_length_must_match_data() {
    let server = serve(options(), Echo);
    let post = |cl: &str| {
        vec![
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/echo"),
            (":authority", "localhost"),
            ("content-length", cl),
        ]
        .into_iter()
        .map(|(a, b)| (a, b.to_string()))
        .collect::<Vec<_>>()
    };
    let refs = |v: &Vec<(&'static str, String)>| -> Vec<(&'static str, String)> { v.clone() };
    let send = |fields: Vec<(&'static str, String)>, data: Option<&[u8]>| {
        let f: Vec<(&str, &str)> = fields.iter().map(|(a, b)| (*a, b.as_str())).collect();
        h2_exchange(server.addr, &f, data)
    };
    let _ = refs;
    let a = send(post("5"), Some(b"hello"));
    assert_eq!(a.status(), 200, "{a:?}");
    assert_eq!(a.body, common::echo_of(b"hello").as_bytes());
    let a = send(post("05"), Some(b"hello"));
    assert_eq!(a.status(), 200, "05: {a:?}");
    for (cl, data) in [
        ("5", &b"hel"[..]),
        ("2", b"hel"),
        ("+3", b"hel"),
        ("3 ", b"hel"),
        ("-3", b"hel"),
        ("99999999999999999999999", b"hel"),
        ("3,3", b"hel"),
    ] {
        let a = send(post(cl), Some(data));
        assert!(
            a.reset == Some(PROTOCOL_ERROR) || matches!(a.status(), 400 | 413),
            "content-length {cl:?} with {} bytes: {a:?}",
            data.len()
        );
        assert_ne!(a.status(), 200, "{cl:?} served");
    }
    // content-length 5 on HEADERS that end the stream.
    let a = send(post("5"), None);
    assert!(a.reset == Some(PROTOCOL_ERROR) || a.status() == 400, "cl 5, no DATA: {a:?}");
    let _ = get2("/");
}

// ---------------------------------------------------------------- tower

#[cfg(feature = "tower")]
mod tower_probes {
    use super::common::tbody::TBody;
    use super::*;
    use bytes::Bytes;
    use falconet_server::tower::{Body as InBody, TowerHandler};
    use http::{HeaderMap, HeaderValue, StatusCode};
    use std::convert::Infallible;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    type Fut = Pin<Box<dyn Future<Output = Result<http::Response<TBody>, Infallible>> + Send>>;

    #[derive(Clone)]
    pub struct Svc;

    fn route(path: &str) -> http::Response<TBody> {
        let mut b = http::Response::builder();
        let body = match path {
            // A body that stays non-empty for HEAD (not axum).
            "/full" => {
                b = b.header("content-length", "5");
                TBody::new(&[b"hello"], true, false)
            }
            "/stream" => TBody::new(&[b"hel", b"lo"], false, true),
            "/hop" => {
                b = b
                    .header("connection", "keep-alive, upgrade, x-hop")
                    .header("keep-alive", "timeout=5")
                    .header("transfer-encoding", "chunked")
                    .header("upgrade", "h2c")
                    .header("proxy-connection", "keep-alive")
                    .header("te", "trailers")
                    .header("x-hop", "1")
                    .header("content-length", "999");
                TBody::new(&[b"hello"], true, false)
            }
            "/hop-stream" => {
                b = b.header("transfer-encoding", "chunked").header("content-length", "3");
                TBody::new(&[b"hel", b"lo"], false, true)
            }
            "/split" => {
                b = b
                    .header(
                        "x-a",
                        HeaderValue::from_maybe_shared(Bytes::from_static(b"ok")).unwrap(),
                    )
                    .header("x-b", unsafe_value(b"a\r\nx-injected: 1"))
                    .header("x-c", unsafe_value(b"a\0b"))
                    .header("x-d", unsafe_value(b"a\nx-injected: 2"));
                TBody::new(&[b"ok"], true, false)
            }
            "/ws" => {
                b = b.header("x-trail", "v ").header("x-lead", HeaderValue::from_static(" v"));
                TBody::new(&[b"ok"], true, false)
            }
            "/trailers" => {
                let mut t = HeaderMap::new();
                t.insert("x-checksum", HeaderValue::from_static("1"));
                let mut body = TBody::new(&[b"hello"], false, false);
                body.trailers = Some(t);
                body
            }
            p if p.starts_with("/status/") => {
                let code: u16 = p[8..].parse().unwrap();
                b = b.status(StatusCode::from_u16(code).unwrap());
                TBody::new(&[b"xyz"], true, false)
            }
            p if p.starts_with("/status-stream/") => {
                let code: u16 = p[15..].parse().unwrap();
                b = b.status(StatusCode::from_u16(code).unwrap());
                TBody::new(&[b"x", b"yz"], false, true)
            }
            _ => {
                b = b.status(404);
                TBody::new(&[b"nf"], true, false)
            }
        };
        b.body(body).unwrap()
    }

    /// A value `http` would refuse, built the way a careless service can.
    fn unsafe_value(bytes: &'static [u8]) -> HeaderValue {
        // SAFETY: the value breaks `HeaderValue`'s rule on purpose (the
        // test's point); nothing reads it but the server under test, as
        // bytes. `http` checks it only in a debug assertion, caught here.
        match std::panic::catch_unwind(|| unsafe {
            HeaderValue::from_maybe_shared_unchecked(Bytes::from_static(bytes))
        }) {
            Ok(v) => v,
            Err(_) => HeaderValue::from_static("debug-assert"),
        }
    }

    impl tower_service::Service<http::Request<InBody>> for Svc {
        type Response = http::Response<TBody>;
        type Error = Infallible;
        type Future = Fut;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, req: http::Request<InBody>) -> Fut {
            let path = req.uri().path().to_string();
            if let Some(rest) = path.strip_prefix("/late") {
                let rest = rest.to_string();
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Ok(route(&rest))
                })
            } else {
                Box::pin(std::future::ready(Ok(route(&path))))
            }
        }
    }

    fn tower_server() -> (common::TestServer<TowerHandler<Svc>>, tokio::runtime::Runtime) {
        common::serve_tower(options(), Svc)
    }

    const PATHS: [&str; 4] = ["/full", "/stream", "/late/full", "/late/stream"];

    /// RFC 9110 9.3.2 through a tower service whose body is NOT emptied
    /// for HEAD: no content on the wire, same head as GET; HTTP/1.1.
    #[test]
    fn tower_head_sends_no_content_over_h1() {
        let (server, _rt) = tower_server();
        for path in PATHS {
            let mut client = Client::connect(server.addr);
            client.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
            let get = client.reply().unwrap();
            assert_eq!(get.body, b"hello", "{path}");
            client.send(
                format!(
                    "HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /full HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                .as_bytes(),
            );
            let head = client.reply_to(true).unwrap();
            assert_eq!(head.status, 200, "{path}");
            let next = client.reply().unwrap_or_else(|e| panic!("{path}: after HEAD: {e}"));
            assert_eq!((next.status, next.body.as_slice()), (200, &b"hello"[..]), "{path}");
            if let (Some(h), Some(g)) =
                (head.header("content-length"), get.header("content-length"))
            {
                assert_eq!(h, g, "{path}");
            }
        }
    }

    #[test]
    fn tower_head_sends_no_content_over_h2() {
        let (server, _rt) = tower_server();
        for path in PATHS {
            let get = h2_req(server.addr, "GET", path, &[]);
            assert_eq!(get.body, b"hello", "{path}");
            let head = h2_req(server.addr, "HEAD", path, &[]);
            assert_eq!(head.status(), 200, "{path}: {head:?}");
            assert!(head.ended, "{path}: {head:?}");
            assert!(head.body.is_empty(), "{path}: HEAD content {:?}", text(&head.body));
            if let (Some(h), Some(g)) = (head.field("content-length"), get.field("content-length"))
            {
                assert_eq!(h, g, "{path}");
            }
        }
    }

    /// RFC 9113 8.2.2: connection-specific fields a service returns never
    /// reach the HTTP/2 wire (nor the fields its Connection names).
    #[test]
    fn tower_connection_specific_fields_never_reach_h2() {
        let (server, _rt) = tower_server();
        for path in ["/hop", "/late/hop", "/hop-stream", "/late/hop-stream"] {
            let a = h2_req(server.addr, "GET", path, &[]);
            assert_eq!(a.status(), 200, "{path}: {a:?}");
            assert_eq!(a.body, b"hello", "{path}");
            let names = a.names();
            for bad in
                ["connection", "keep-alive", "upgrade", "proxy-connection", "transfer-encoding"]
            {
                assert!(!names.contains(&bad.to_string()), "{path}: {bad} over h2: {names:?}");
            }
            assert!(
                a.field("content-length").is_none_or(|v| v == "5"),
                "{path}: wrong content-length {:?}",
                a.field("content-length")
            );
            assert!(!names.contains(&"te".to_string()), "{path}: te in an h2 response: {names:?}");
        }
    }

    /// Listed in the service's Connection field: connection-specific too
    /// (RFC 9110 7.6.1: a field named by Connection is for this hop only;
    /// RFC 9113 8.2.2).
    #[test]
    fn tower_fields_named_by_connection_never_reach_h2() {
        let (server, _rt) = tower_server();
        let a = h2_req(server.addr, "GET", "/hop", &[]);
        assert!(!a.names().contains(&"x-hop".to_string()), "x-hop over h2: {:?}", a.names());
    }

    /// Over HTTP/1.1 the service's framing fields do not break framing:
    /// one framing field, agreeing with the content; the pipelined next
    /// response follows intact.
    #[test]
    fn tower_framing_fields_do_not_break_h1_framing() {
        let (server, _rt) = tower_server();
        for path in ["/hop", "/late/hop", "/hop-stream", "/late/hop-stream"] {
            let mut stream = connect(server.addr);
            stream
                .write_all(
                    format!(
                        "GET {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /full HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                )
                .unwrap();
            let (bytes, _) = read_for(&mut stream, Duration::from_secs(3));
            let reply = text(&bytes);
            let fields = head_fields(&reply);
            let te = fields.iter().filter(|(n, _)| n == "transfer-encoding").count();
            let cl: Vec<_> = fields.iter().filter(|(n, _)| n == "content-length").collect();
            assert!(te + cl.len() == 1, "{path}: framing fields {fields:?}");
            if let Some((_, v)) = cl.first() {
                assert_eq!(v, "5", "{path}");
            }
            assert_eq!(reply.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{path}: {reply:?}");
            assert!(reply.ends_with("\r\n\r\nhello"), "{path}: {reply:?}");
            // Its "connection: keep-alive, upgrade" is not copied: one
            // Connection field at most, ours.
            assert!(
                fields.iter().filter(|(n, _)| n == "connection").count() <= 1,
                "{path}: {fields:?}"
            );
        }
    }

    /// Over HTTP/1.1, a service's Upgrade field in a 200 must not be sent
    /// with `Connection: upgrade` (RFC 9110 7.8: a server that sends
    /// Upgrade in a non-101 response MUST send `upgrade` in Connection).
    #[test]
    fn tower_upgrade_field_over_h1_has_its_connection_option() {
        let (server, _rt) = tower_server();
        let (reply, _) = raw_h1(
            server.addr,
            b"GET /hop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            Duration::from_secs(2),
        );
        let fields = head_fields(&reply);
        if field(&fields, "upgrade").is_some() {
            let conn = field(&fields, "connection").unwrap_or("");
            assert!(
                conn.to_ascii_lowercase().contains("upgrade"),
                "Upgrade sent without the upgrade connection option: {fields:?}"
            );
        }
    }

    /// CR/LF/NUL smuggled past `http`'s checks never reach the wire.
    #[test]
    fn tower_unchecked_values_never_split_a_response() {
        let (server, _rt) = tower_server();
        for path in ["/split", "/late/split"] {
            let (reply, _) = raw_h1(
                server.addr,
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
                Duration::from_secs(2),
            );
            assert!(reply.starts_with("HTTP/1.1 200"), "{path}: {reply:?}");
            assert!(!reply.contains("x-injected"), "{path}: {reply:?}");
            assert!(!reply.contains('\0'), "{path}: {reply:?}");
            assert!(reply.ends_with("\r\n\r\nok"), "{path}: {reply:?}");
            let a = h2_req(server.addr, "GET", path, &[]);
            assert_eq!(a.status(), 200, "{path}: {a:?}");
            for (n, v) in a.final_block().unwrap() {
                assert!(!v.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)), "{path}: {}", text(n));
            }
        }
    }

    /// RFC 9113 8.2.1: no h2 field value with edge whitespace.
    #[test]
    fn tower_edge_whitespace_values_are_not_malformed_over_h2() {
        let (server, _rt) = tower_server();
        let a = h2_req(server.addr, "GET", "/ws", &[]);
        assert_eq!(a.status(), 200, "{a:?}");
        for (n, v) in a.final_block().unwrap() {
            assert!(
                !v.first().is_some_and(|b| *b == b' ' || *b == b'\t')
                    && !v.last().is_some_and(|b| *b == b' ' || *b == b'\t'),
                "h2 field {} = {:?}",
                text(n),
                text(v)
            );
        }
    }

    /// Trailers from a service body: the response ends properly (chunked
    /// terminator over HTTP/1.1, END_STREAM over HTTP/2), with or without
    /// the trailers; `TE: trailers` asked.
    #[test]
    fn tower_trailers_end_the_response_properly() {
        let (server, _rt) = tower_server();
        for path in ["/trailers", "/late/trailers"] {
            let mut client = Client::connect(server.addr);
            client.send(
                format!(
                    "GET {path} HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\nGET /full HTTP/1.1\r\nHost: x\r\n\r\n"
                )
                .as_bytes(),
            );
            let r = client.reply().unwrap();
            assert_eq!(r.body, b"hello", "{path}");
            // Client::reply skips the CRLF after the last chunk only when
            // there are no trailers; read the next response robustly.
            let mut stream = client.reader;
            let mut rest = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(2);
            stream.get_ref().set_read_timeout(Some(Duration::from_millis(300))).unwrap();
            while Instant::now() < deadline && !text(&rest).ends_with("hello") {
                let mut buf = [0u8; 4096];
                match std::io::Read::read(&mut stream, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => rest.extend_from_slice(&buf[..n]),
                }
            }
            let rest = text(&rest);
            let after = rest.trim_start_matches(|c| c != 'H');
            assert!(after.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {rest:?}");
            let a = h2_req(server.addr, "GET", path, &[("te", "trailers")]);
            assert_eq!(a.status(), 200, "{path}: {a:?}");
            assert_eq!(a.body, b"hello", "{path}");
            assert!(a.ended, "{path}: {a:?}");
        }
    }

    /// 204/205/304 from a service with a body: no content (9110 15.3.5,
    /// 15.3.6, 15.4.5).
    #[test]
    fn tower_bodiless_statuses_send_no_content() {
        let (server, _rt) = tower_server();
        let mut failures = Vec::new();
        for code in [204u16, 205, 304] {
            for kind in ["/status/", "/status-stream/", "/late/status/", "/late/status-stream/"] {
                let path = format!("{kind}{code}");
                let mut stream = connect(server.addr);
                stream
                    .write_all(
                        format!(
                            "GET {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /full HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .unwrap();
                let (bytes, _) = read_for(&mut stream, Duration::from_secs(3));
                let reply = text(&bytes);
                assert_eq!(status_of(&reply), code, "{path}: {reply:?}");
                let after = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
                if !after.starts_with("HTTP/1.1 200 OK\r\n") {
                    failures.push(format!("h1 {path}: content after the head: {after:?}"));
                }
                let fields = head_fields(&reply);
                if code != 304
                    && (field(&fields, "content-length").is_some_and(|v| v != "0")
                        || field(&fields, "transfer-encoding").is_some())
                {
                    failures.push(format!("h1 {path}: framing {fields:?}"));
                }
                let a = h2_req(server.addr, "GET", &path, &[]);
                assert_eq!(a.status(), code, "{path}: {a:?}");
                if !a.body.is_empty() {
                    failures.push(format!("h2 {path}: content {:?}", text(&a.body)));
                }
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// A 1xx from a service is no final answer: 500 (documented), over
    /// both protocols, and the connection goes on over HTTP/1.1.
    #[test]
    fn tower_informational_status_is_500() {
        let (server, _rt) = tower_server();
        for path in ["/status/101", "/status/103", "/late/status/100"] {
            let mut client = Client::connect(server.addr);
            client.send(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
            let r = client.reply().unwrap();
            assert_eq!(r.status, 500, "{path}: {r:?}");
            let a = h2_req(server.addr, "GET", path, &[]);
            assert_eq!(a.status(), 500, "{path}: {a:?}");
            assert_eq!(a.blocks.len(), 1, "{path}: no 1xx block: {a:?}");
        }
    }

    #[test]
    fn curl_h2_takes_what_a_service_returned() {
        let (server, _rt) = tower_server();
        let mut failures = Vec::new();
        for path in ["/full", "/ws", "/hop", "/late/ws"] {
            let Some((code, out)) = curl_h2(server.addr, path) else { return };
            if code != 0 {
                failures.push(format!("{path}: curl exit {code}: {out}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Date on service answers (9110 6.6.1), once, ours.
    #[test]
    fn tower_answers_carry_one_date() {
        let (server, _rt) = tower_server();
        for path in ["/full", "/late/stream", "/nothing"] {
            let (reply, _) = raw_h1(
                server.addr,
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
                Duration::from_secs(2),
            );
            let fields = head_fields(&reply);
            let dates: Vec<_> = fields.iter().filter(|(n, _)| n == "date").collect();
            assert_eq!(dates.len(), 1, "{path}: {fields:?}");
            assert!(is_imf_fixdate(&dates[0].1), "{path}");
            let a = h2_req(server.addr, "GET", path, &[]);
            assert!(a.field("date").is_some_and(|d| is_imf_fixdate(&d)), "{path}: {a:?}");
        }
    }
}
