//! Review of the RFC 9110 response changes (ad9b5cc): 205, Upgrade's
//! connection option, HTTP/2 field trimming, a tower service's
//! `connection` field. Each test fails if the suspected problem is real.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, block};
use common::{Client, End, connect, options, read_for, serve, text};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, Request, Response, Status};

// ------------------------------------------------------------ helpers

fn raw_h1(addr: SocketAddr, request: &[u8], wait: Duration) -> (String, End) {
    let mut stream = connect(addr);
    stream.write_all(request).unwrap();
    let (bytes, end) = read_for(&mut stream, wait);
    (text(&bytes), end)
}

#[derive(Debug, Default)]
struct H2Answer {
    blocks: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    body: Vec<u8>,
    reset: Option<u32>,
    goaway: Option<u32>,
    ended: bool,
}

impl H2Answer {
    fn final_block(&self) -> Option<&Vec<(Vec<u8>, Vec<u8>)>> {
        self.blocks.iter().find(|b| b.iter().any(|(n, v)| n == b":status" && !v.starts_with(b"1")))
    }
    fn status(&self) -> u16 {
        self.final_block()
            .and_then(|b| b.iter().find(|(n, _)| n == b":status"))
            .and_then(|(_, v)| std::str::from_utf8(v).ok()?.parse().ok())
            .unwrap_or(0)
    }
    fn field(&self, name: &str) -> Option<Vec<u8>> {
        self.final_block()?.iter().find(|(n, _)| n == name.as_bytes()).map(|(_, v)| v.clone())
    }
}

fn h2_req(addr: SocketAddr, method: &str, path: &str) -> H2Answer {
    let fields: Vec<(&str, &str)> = vec![
        (":method", method),
        (":scheme", "http"),
        (":path", path),
        (":authority", "localhost"),
    ];
    let mut raw = Raw::handshake(addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.headers(1, &block(&fields), true);
    let mut answer = H2Answer::default();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) => {
                if f.kind == kind::HEADERS && f.stream == 1 {
                    let mut fields = Vec::new();
                    raw.decoder
                        .decode(&f.payload, |fl| fields.push((fl.name.to_vec(), fl.value.to_vec())))
                        .expect("the server's HPACK decodes");
                    answer.blocks.push(fields);
                    if f.end_stream() {
                        answer.ended = true;
                        return answer;
                    }
                } else if f.kind == kind::DATA && f.stream == 1 {
                    answer.body.extend_from_slice(&f.payload);
                    if f.end_stream() {
                        answer.ended = true;
                        return answer;
                    }
                } else if f.kind == kind::RST_STREAM && f.stream == 1 {
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

/// The `Connection` lines of the first head in `reply`.
fn connection_lines(reply: &str) -> Vec<String> {
    let head = reply.split("\r\n\r\n").next().unwrap_or("");
    head.split("\r\n")
        .filter(|l| l.to_ascii_lowercase().starts_with("connection:"))
        .map(str::to_string)
        .collect()
}

// ------------------------------------------------------ native handler

const BIG: usize = 300 * 1024;

#[derive(Clone, Copy)]
struct R;

impl Handler for R {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        request.target().to_string()
    }

    fn respond(&self, target: String, response: &mut Response<'_>) {
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        match path {
            "/ok" => response.body(b"ok").unwrap(),
            "/205" => {
                let reset = Status::new(205).unwrap();
                match query {
                    "body" => response.status(reset).unwrap().body(b"xyz").unwrap(),
                    "write" => {
                        response.status(reset).unwrap();
                        response.write(b"xyz").unwrap();
                        response.write(b"abc").unwrap();
                    }
                    "bytes" => {
                        response.status(reset).unwrap();
                        response.body_bytes(bytes::Bytes::from_static(b"xyz")).unwrap();
                    }
                    "wbytes" => {
                        response.status(reset).unwrap();
                        response.write_bytes(bytes::Bytes::from_static(b"xyz")).unwrap();
                        response.write_bytes(bytes::Bytes::from_static(b"abc")).unwrap();
                    }
                    "deferred" => {
                        let mut responder = response.defer().unwrap();
                        std::thread::spawn(move || {
                            responder.status(reset).unwrap();
                            responder.body(b"xyz").unwrap();
                        });
                    }
                    "dwrite" => {
                        let mut responder = response.defer().unwrap();
                        std::thread::spawn(move || {
                            responder.status(reset).unwrap();
                            // More than the pipe's pause threshold: nothing
                            // goes out, so nothing must wait either.
                            let piece = vec![b'x'; 64 * 1024];
                            for _ in 0..(BIG / piece.len()) {
                                responder.write_blocking(&piece).unwrap();
                            }
                            responder.finish().unwrap();
                        });
                    }
                    "dempty" => {
                        let mut responder = response.defer().unwrap();
                        std::thread::spawn(move || {
                            responder.status(reset).unwrap();
                            responder.finish().unwrap();
                        });
                    }
                    other => panic!("{other}"),
                }
            }
            "/upgrade" => {
                // query: [close][,stream][,deferred]
                let close = query.contains("close");
                let stream = query.contains("stream");
                if query.contains("deferred") {
                    let mut responder = response.defer().unwrap();
                    std::thread::spawn(move || {
                        responder.header("Upgrade", "websocket").unwrap();
                        if close {
                            responder.close().unwrap();
                        }
                        if stream {
                            responder.write_blocking(b"hel").unwrap();
                            responder.write_blocking(b"lo").unwrap();
                            responder.finish().unwrap();
                        } else {
                            responder.body(b"hello").unwrap();
                        }
                    });
                } else {
                    response.header("Upgrade", "websocket").unwrap();
                    if close {
                        response.close().unwrap();
                    }
                    if stream {
                        response.write(b"hel").unwrap();
                        response.write(b"lo").unwrap();
                    } else {
                        response.body(b"hello").unwrap();
                    }
                }
            }
            "/blank" => {
                response.header("X-Spaces", "   ").unwrap();
                response.header("X-Tab", "\t").unwrap();
                response.header("X-Empty", "").unwrap();
                response.header("X-Inner", " a  b ").unwrap();
                response.header("X-Obs", b"\xe9t\xe9 ").unwrap();
                response.body(b"ok").unwrap();
            }
            _ => response.status(Status::NOT_FOUND).unwrap().body(b"nf").unwrap(),
        }
    }
}

const MODES: [&str; 7] = ["body", "write", "bytes", "wbytes", "deferred", "dwrite", "dempty"];

/// 205 over HTTP/1.1 and 1.0 (keep-alive), GET and HEAD, every way of
/// answering: `Content-Length: 0`, no content, no chunking, and the
/// connection stays in sync (a pipelined request behind it is answered).
#[test]
fn reset_content_over_h1_keeps_framing_in_sync() {
    let server = serve(options(), R);
    for version in ["1.1", "1.0"] {
        for method in ["GET", "HEAD"] {
            for mode in MODES {
                let case = format!("HTTP/{version} {method} {mode}");
                let keep = if version == "1.0" { "Connection: keep-alive\r\n" } else { "" };
                let mut client = Client::connect(server.addr);
                client.send(
                    format!(
                        "{method} /205?{mode} HTTP/{version}\r\nHost: x\r\n{keep}\r\nGET /ok HTTP/{version}\r\nHost: x\r\n{keep}\r\n"
                    )
                    .as_bytes(),
                );
                let first = client.reply_to(true).unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(first.status, 205, "{case}");
                assert_eq!(first.header("content-length"), Some("0"), "{case}: {first:?}");
                assert!(first.header("transfer-encoding").is_none(), "{case}: {first:?}");
                assert!(!first.closes(), "{case}: closes after a 205: {first:?}");
                let next = client.reply().unwrap_or_else(|e| panic!("{case}: next: {e}"));
                assert_eq!((next.status, next.text().as_str()), (200, "ok"), "{case}: {next:?}");
            }
        }
    }
}

/// 205 over HTTP/2, GET and HEAD, every mode: the stream ends, no DATA
/// payload, content-length 0 if any.
#[test]
fn reset_content_over_h2() {
    let server = serve(options(), R);
    for method in ["GET", "HEAD"] {
        for mode in MODES {
            let case = format!("{method} {mode}");
            let a = h2_req(server.addr, method, &format!("/205?{mode}"));
            assert_eq!(a.status(), 205, "{case}: {a:?}");
            assert!(a.ended && a.reset.is_none(), "{case}: {a:?}");
            assert!(a.body.is_empty(), "{case}: content {:?}", text(&a.body));
            if let Some(cl) = a.field("content-length") {
                assert_eq!(cl, b"0", "{case}");
            }
        }
    }
}

/// An Upgrade field over HTTP/1: one Connection field, with `upgrade`
/// and (when closing) `close`; the connection's fate follows it.
#[test]
fn upgrade_option_over_h1() {
    let server = serve(options(), R);
    for version in ["1.1", "1.0"] {
        for q in [
            "",
            "close",
            "stream",
            "close,stream",
            "deferred",
            "close,deferred",
            "stream,deferred",
            "close,stream,deferred",
        ] {
            let keep = if version == "1.0" { "Connection: keep-alive\r\n" } else { "" };
            let case = format!("HTTP/{version} {q}");
            let (reply, end) = raw_h1(
                server.addr,
                format!(
                    "GET /upgrade?{q} HTTP/{version}\r\nHost: x\r\n{keep}\r\nGET /ok HTTP/{version}\r\nHost: x\r\n{keep}\r\n"
                )
                .as_bytes(),
                Duration::from_millis(400),
            );
            let lines = connection_lines(&reply);
            assert_eq!(lines.len(), 1, "{case}: {reply:?}");
            let options: Vec<String> = lines[0]["connection:".len()..]
                .split(',')
                .map(|o| o.trim().to_ascii_lowercase())
                .collect();
            assert!(options.contains(&"upgrade".to_string()), "{case}: {reply:?}");
            let closes = q.contains("close") || (version == "1.0" && q.contains("stream"));
            assert_eq!(options.contains(&"close".to_string()), closes, "{case}: {reply:?}");
            if version == "1.0" && !closes {
                assert!(options.contains(&"keep-alive".to_string()), "{case}: {reply:?}");
            }
            // A closing response is the last; a kept one is followed.
            let second = reply.matches("HTTP/1.1 200").count();
            assert_eq!(second, if closes { 1 } else { 2 }, "{case}: {reply:?} {end:?}");
            if closes {
                assert_eq!(end, End::Eof, "{case}");
            }
        }
    }
}

/// Values of only whitespace, or empty, over HTTP/2: HPACK decodes (an
/// empty value is valid), no edge whitespace; inner whitespace and
/// obs-text kept. And the stream ends normally.
#[test]
fn blank_values_over_h2() {
    let server = serve(options(), R);
    let a = h2_req(server.addr, "GET", "/blank");
    assert_eq!(a.status(), 200, "{a:?}");
    assert!(a.ended && a.reset.is_none() && a.goaway.is_none(), "{a:?}");
    assert_eq!(a.field("x-spaces").as_deref(), Some(&b""[..]), "{a:?}");
    assert_eq!(a.field("x-tab").as_deref(), Some(&b""[..]), "{a:?}");
    assert_eq!(a.field("x-empty").as_deref(), Some(&b""[..]), "{a:?}");
    assert_eq!(a.field("x-inner").as_deref(), Some(&b"a  b"[..]), "{a:?}");
    assert_eq!(a.field("x-obs").as_deref(), Some(&b"\xe9t\xe9"[..]), "{a:?}");
    assert_eq!(a.body, b"ok");
}

/// The same over HTTP/1.1 through the h2 crate's client too (an
/// independent HPACK and field-validation implementation).
#[test]
fn blank_values_over_h2_with_the_h2_crate() {
    let server = serve(options(), R);
    let rt = common::current_thread();
    rt.block_on(async {
        let mut send = common::h2_client(server.addr).await;
        let request = http::Request::get(format!("http://{}/blank", server.addr)).body(()).unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        let response = response.await.expect("h2 accepts the response");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers().get("x-spaces").unwrap(), "");
        assert_eq!(response.headers().get("x-inner").unwrap(), "a  b");
    });
}

// ----------------------------------------------------------------- tower

#[cfg(feature = "tower")]
mod tower_review {
    use super::common::tbody::TBody;
    use super::*;
    use falconet_server::tower::{Body as InBody, TowerHandler};
    use http::{HeaderValue, StatusCode};
    use std::convert::Infallible;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    type Fut = Pin<Box<dyn Future<Output = Result<http::Response<TBody>, Infallible>> + Send>>;

    #[derive(Clone)]
    pub struct Svc;

    fn route(path: &str, query: &str) -> http::Response<TBody> {
        let mut b = http::Response::builder();
        let stream = query.contains("stream");
        let body = if stream {
            TBody::new(&[b"hel", b"lo"], false, true)
        } else {
            TBody::new(&[b"hello"], true, false)
        };
        match path {
            "/ok" => {}
            "/205" => b = b.status(StatusCode::RESET_CONTENT),
            "/upgrade-close" => {
                b = b.header("upgrade", "websocket").header("connection", "close");
            }
            "/upgrade-named-close" => {
                b = b.header("upgrade", "websocket").header("connection", "upgrade, close");
            }
            "/names-cl" => {
                b = b.header("connection", "content-length").header("content-length", "5");
            }
            "/names-date-server" => {
                b = b
                    .header("connection", "date, server")
                    .header("server", "svc")
                    .header("x-keep", "1");
            }
            "/multi" => {
                b = b
                    .header("connection", "x-a")
                    .header("connection", " X-B ,close")
                    .header("x-a", "1")
                    .header("x-b", "2")
                    .header("x-c", "3");
            }
            "/names-connection" => {
                // A `connection` field that names itself and close.
                b = b.header("connection", "connection, close");
            }
            "/names-keepalive" => {
                b = b.header("connection", "keep-alive").header("keep-alive", "timeout=5");
            }
            "/blank" => {
                b = b
                    .header("x-spaces", HeaderValue::from_static("   "))
                    .header("x-empty", HeaderValue::from_static(""));
            }
            _ => b = b.status(404),
        }
        b.body(body).unwrap()
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
            let query = req.uri().query().unwrap_or("").to_string();
            if query.contains("late") {
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    Ok(route(&path, &query))
                })
            } else {
                Box::pin(std::future::ready(Ok(route(&path, &query))))
            }
        }
    }

    fn tower_server() -> (common::TestServer<TowerHandler<Svc>>, tokio::runtime::Runtime) {
        common::serve_tower(options(), Svc)
    }

    const QUERIES: [&str; 4] = ["", "stream", "late", "late,stream"];

    /// A tower 205, whole or streamed, now or late, over HTTP/1.1 and 1.0
    /// (keep-alive), GET and HEAD: `Content-Length: 0`, no content, the
    /// pipelined request behind it answered.
    #[test]
    fn tower_reset_content_over_h1() {
        let (server, _rt) = tower_server();
        for version in ["1.1", "1.0"] {
            for method in ["GET", "HEAD"] {
                for q in QUERIES {
                    let case = format!("HTTP/{version} {method} {q}");
                    let keep = if version == "1.0" { "Connection: keep-alive\r\n" } else { "" };
                    let mut client = Client::connect(server.addr);
                    client.send(
                        format!(
                            "{method} /205?{q} HTTP/{version}\r\nHost: x\r\n{keep}\r\nGET /ok HTTP/{version}\r\nHost: x\r\n{keep}\r\n"
                        )
                        .as_bytes(),
                    );
                    let first = client.reply_to(true).unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(first.status, 205, "{case}");
                    assert!(first.header("transfer-encoding").is_none(), "{case}: {first:?}");
                    if method == "GET" {
                        assert_eq!(first.header("content-length"), Some("0"), "{case}: {first:?}");
                    }
                    assert!(!first.closes(), "{case}: {first:?}");
                    let next = client.reply().unwrap_or_else(|e| panic!("{case}: next: {e}"));
                    assert_eq!((next.status, next.text().as_str()), (200, "hello"), "{case}");
                }
            }
        }
    }

    #[test]
    fn tower_reset_content_over_h2() {
        let (server, _rt) = tower_server();
        for method in ["GET", "HEAD"] {
            for q in QUERIES {
                let case = format!("{method} {q}");
                let a = h2_req(server.addr, method, &format!("/205?{q}"));
                assert_eq!(a.status(), 205, "{case}: {a:?}");
                assert!(a.ended && a.reset.is_none(), "{case}: {a:?}");
                assert!(a.body.is_empty(), "{case}: {a:?}");
            }
        }
    }

    /// Upgrade with `connection: close` (and with `upgrade, close`): one
    /// Connection field with both options; the connection closes.
    #[test]
    fn tower_upgrade_with_close() {
        let (server, _rt) = tower_server();
        for path in ["/upgrade-close", "/upgrade-named-close"] {
            for version in ["1.1", "1.0"] {
                for q in QUERIES {
                    let case = format!("{path} HTTP/{version} {q}");
                    let keep = if version == "1.0" { "Connection: keep-alive\r\n" } else { "" };
                    let (reply, end) = raw_h1(
                        server.addr,
                        format!("GET {path}?{q} HTTP/{version}\r\nHost: x\r\n{keep}\r\n")
                            .as_bytes(),
                        Duration::from_millis(500),
                    );
                    let lines = connection_lines(&reply);
                    assert_eq!(lines.len(), 1, "{case}: {reply:?}");
                    let l = lines[0].to_ascii_lowercase();
                    assert!(l.contains("close") && l.contains("upgrade"), "{case}: {reply:?}");
                    assert!(
                        reply.to_ascii_lowercase().contains("\r\nupgrade: websocket\r\n"),
                        "{case}: {reply:?}"
                    );
                    assert_eq!(end, End::Eof, "{case}: {reply:?}");
                }
            }
        }
    }

    /// `connection: content-length`: the body's framing is falconet's, so
    /// a GET still gets a correct one; the connection stays in sync.
    #[test]
    fn tower_connection_naming_framing_and_own_fields() {
        let (server, _rt) = tower_server();
        for method in ["GET", "HEAD"] {
            for q in QUERIES {
                let case = format!("{method} {q}");
                let mut client = Client::connect(server.addr);
                client.send(
                    format!(
                        "{method} /names-cl?{q} HTTP/1.1\r\nHost: x\r\n\r\n{method} /names-date-server?{q} HTTP/1.1\r\nHost: x\r\n\r\nGET /multi?{q} HTTP/1.1\r\nHost: x\r\n\r\n"
                    )
                    .as_bytes(),
                );
                let head = method == "HEAD";
                let a = client.reply_to(head).unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(a.status, 200, "{case}");
                if !head {
                    assert_eq!(a.text(), "hello", "{case}: {a:?}");
                }
                let b = client.reply_to(head).unwrap_or_else(|e| panic!("{case}: b {e}"));
                assert_eq!(b.status, 200, "{case}");
                // `date` is falconet's own: still sent (the service named
                // its own, which it never copies anyway).
                assert!(b.header("date").is_some(), "{case}: no Date: {b:?}");
                assert_ne!(b.header("server"), Some("svc"), "{case}: {b:?}");
                assert_eq!(b.header("x-keep"), Some("1"), "{case}: {b:?}");
                let c = client.reply().unwrap_or_else(|e| panic!("{case}: c {e}"));
                assert_eq!(c.header("x-a"), None, "{case}: {c:?}");
                assert_eq!(c.header("x-b"), None, "{case}: {c:?}");
                assert_eq!(c.header("x-c"), Some("3"), "{case}: {c:?}");
                assert!(c.closes(), "{case}: multi-value close not honoured: {c:?}");
                client.expect_closed();
            }
        }
    }

    /// `connection: connection, close`: pathological, but the close must
    /// still be honoured (it is the service's word on the connection).
    #[test]
    fn tower_connection_naming_itself_still_closes() {
        let (server, _rt) = tower_server();
        let (reply, end) = raw_h1(
            server.addr,
            b"GET /names-connection HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n",
            Duration::from_millis(500),
        );
        assert_eq!(reply.matches("HTTP/1.1 200").count(), 1, "{reply:?} {end:?}");
        assert_eq!(end, End::Eof, "{reply:?}");
    }

    /// Blank values from a tower service over h2: valid HPACK, empty.
    #[test]
    fn tower_blank_values_over_h2() {
        let (server, _rt) = tower_server();
        let a = h2_req(server.addr, "GET", "/blank");
        assert_eq!(a.status(), 200, "{a:?}");
        assert_eq!(a.field("x-spaces").as_deref(), Some(&b""[..]), "{a:?}");
        assert_eq!(a.field("x-empty").as_deref(), Some(&b""[..]), "{a:?}");
    }
}
