//! Review of bde52d4 + f558888 (tower: a body of exact size streams with
//! Content-Length): scripted bodies against the wire.
#![cfg(feature = "tower")]
// Its HTTP/2 client runs on tokio sockets, whose readiness tokio's I/O
// driver hands over through epoll, which TSan cannot see (a report inside
// tokio, tokio-rs/tokio#7299): left out under scripts/tsan.sh's cfg.
#![cfg(not(falconet_tsan))]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::http::{StatusCode, header};
use axum::routing::get;
use bytes::Bytes;
use common::serve;
use falconet_server::Options;
use falconet_server::tower::TowerHandler;
use http_body::{Frame, SizeHint};

#[derive(Clone)]
enum S {
    Data(&'static [u8]),
    Pause(u64),
    Err,
    Trailers,
}

#[derive(Clone, Copy)]
enum Hint {
    /// The exact remaining length (what it will yield).
    Remaining,
    /// `claim` less what was yielded (a lying body).
    Claim(u64),
    /// The same exact value at every poll (a total, not what remains).
    Constant(u64),
    /// One exact value before the first frame, another after.
    Switch(u64, u64),
}

struct Script {
    steps: Vec<S>,
    hint: Hint,
    yielded: u64,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Script {
    fn new(steps: &[S], hint: Hint) -> Self {
        let mut steps = steps.to_vec();
        steps.reverse();
        Self { steps, hint, yielded: 0, sleep: None }
    }
}

impl http_body::Body for Script {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        loop {
            if let Some(sleep) = &mut self.sleep {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            let Some(step) = self.steps.pop() else { return Poll::Ready(None) };
            match step {
                S::Pause(ms) => {
                    self.sleep = Some(Box::pin(tokio::time::sleep(Duration::from_millis(ms))));
                }
                S::Data(d) => {
                    self.yielded += d.len() as u64;
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(d)))));
                }
                S::Err => return Poll::Ready(Some(Err(std::io::Error::other("scripted failure")))),
                S::Trailers => {
                    let mut map = http::HeaderMap::new();
                    map.insert("x-trailer", "t".parse().unwrap());
                    return Poll::Ready(Some(Ok(Frame::trailers(map))));
                }
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self.hint {
            Hint::Remaining => SizeHint::with_exact(
                self.steps
                    .iter()
                    .map(|s| if let S::Data(d) = s { d.len() as u64 } else { 0 })
                    .sum(),
            ),
            Hint::Claim(c) => SizeHint::with_exact(c.saturating_sub(self.yielded)),
            Hint::Constant(c) => SizeHint::with_exact(c),
            Hint::Switch(a, b) => SizeHint::with_exact(if self.yielded == 0 { a } else { b }),
        }
    }
}

const FIFTY: &[u8] = b"01234567890123456789012345678901234567890123456789";
const BIG: usize = 2 << 20;

fn route(router: Router, path: &'static str, later: bool, steps: Vec<S>, hint: Hint) -> Router {
    router.route(
        path,
        get(move || {
            let steps = steps.clone();
            async move {
                if later {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                AxumBody::new(Script::new(&steps, hint))
            }
        }),
    )
}

fn app() -> Router {
    let mut r = Router::new().route("/plain", get(|| async { "plain" }));
    for (prefix, later) in [("now", false), ("later", true)] {
        let p = |s: &str| -> &'static str { Box::leak(format!("/{prefix}-{s}").into_boxed_str()) };
        r = route(r, p("short"), later, vec![S::Data(FIFTY), S::Pause(20)], Hint::Claim(100));
        r = route(
            r,
            p("long"),
            later,
            vec![S::Pause(5), S::Data(FIFTY), S::Pause(5), S::Data(FIFTY)],
            Hint::Claim(60),
        );
        r = route(r, p("err"), later, vec![S::Data(FIFTY), S::Pause(20), S::Err], Hint::Claim(100));
        r = route(
            r,
            p("u64max"),
            later,
            vec![S::Data(b"0123456789"), S::Pause(10), S::Data(b"0123456789")],
            Hint::Constant(u64::MAX),
        );
        r = route(
            r,
            p("u64max-fresh"),
            later,
            vec![S::Pause(10), S::Data(b"0123456789")],
            Hint::Constant(u64::MAX),
        );
        r = route(
            r,
            p("empties"),
            later,
            vec![
                S::Pause(5),
                S::Data(b""),
                S::Data(b"hello"),
                S::Data(b""),
                S::Pause(5),
                S::Data(b"world"),
                S::Trailers,
            ],
            Hint::Remaining,
        );
        r = route(r, p("zero"), later, vec![S::Pause(10)], Hint::Remaining);
        r = route(
            r,
            p("const-total"),
            later,
            vec![S::Data(b"one "), S::Pause(10), S::Data(b"two "), S::Data(b"three")],
            Hint::Constant(13),
        );
        r = route(
            r,
            p("switch-max"),
            later,
            vec![S::Data(b"0123456789"), S::Pause(10), S::Data(b"0123456789")],
            Hint::Switch(20, u64::MAX),
        );
        r = route(r, p("stall"), later, vec![S::Data(FIFTY), S::Pause(10_000)], Hint::Claim(100));
    }
    r.route("/204-big", get(|| async { (StatusCode::NO_CONTENT, vec![b'x'; BIG]) }))
        .route("/304-big", get(|| async { (StatusCode::NOT_MODIFIED, vec![b'x'; BIG]) }))
        .route("/205-big", get(|| async { (StatusCode::RESET_CONTENT, vec![b'x'; BIG]) }))
        .route(
            "/huge",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                vec![b'h'; BIG]
            }),
        )
        .route(
            "/huge-own-length",
            get(|| async { ([(header::CONTENT_LENGTH, "5")], vec![b'h'; BIG]) }),
        )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

fn server(options: Options) -> (tokio::runtime::Runtime, common::TestServer<TowerHandler<Router>>) {
    let rt = runtime();
    let server = serve(options, TowerHandler::new(app(), rt.handle().clone()));
    (rt, server)
}

/// Sends `bytes` and reads everything until the server closes (or 3 s).
fn exchange(addr: std::net::SocketAddr, bytes: &[u8], wait: Duration) -> (Vec<u8>, bool) {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(bytes).unwrap();
    tcp.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (out, true),
            Err(_) => return (out, false),
        }
    }
}

/// Parses HTTP/1 responses back to back by their framing
/// (Content-Length or chunked); returns (status, content-length, body
/// received, complete) for each.
fn parse(mut bytes: &[u8], head_request: &[bool]) -> Vec<(u16, Option<u64>, usize, bool)> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
        let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let field = |name: &str| {
            head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        let cl = field("content-length").and_then(|v| v.parse::<u64>().ok());
        let chunked = field("transfer-encoding").is_some();
        bytes = &bytes[end + 4..];
        let head_only = head_request.get(i).copied().unwrap_or(false);
        i += 1;
        if head_only || status == 204 || status == 304 || status < 200 {
            out.push((status, cl, 0, true));
            continue;
        }
        if chunked {
            // Good enough: find the last chunk.
            match bytes.windows(5).position(|w| w == b"0\r\n\r\n") {
                Some(p) => {
                    out.push((status, cl, p, true));
                    bytes = &bytes[p + 5..];
                }
                None => {
                    out.push((status, cl, bytes.len(), false));
                    break;
                }
            }
        } else if let Some(n) = cl {
            let n = n.min(usize::MAX as u64) as usize;
            if bytes.len() >= n {
                out.push((status, cl, n, true));
                bytes = &bytes[n..];
            } else {
                out.push((status, cl, bytes.len(), false));
                break;
            }
        } else {
            out.push((status, cl, bytes.len(), false));
            break;
        }
    }
    out
}

fn req_get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// A body that ends (or fails, or stalls) short of its declared length,
/// with a request pipelined behind it: the connection must close after
/// the short body; the next response must never follow on it (it would
/// be read as the rest of the body).
#[test]
fn short_or_failing_sized_bodies_close_before_a_pipelined_answer() {
    let (_rt, server) = server(Options::new().workers(1));
    for path in ["/now-short", "/later-short", "/now-err", "/later-err", "/now-long", "/later-long"]
    {
        let request = format!("{}{}", req_get(path), req_get("/plain"));
        let (bytes, closed) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        let responses = parse(&bytes, &[]);
        eprintln!("{path}: {responses:?}");
        assert!(closed, "{path}: not closed: {text}");
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{path}: {text}");
        assert!(!responses[0].3, "{path}: a cut body looks complete: {text}");
    }
}

/// HTTP/1.0 keep-alive: a short body with a declared length closes too.
#[test]
fn http10_keep_alive_short_body_closes() {
    let (_rt, server) = server(Options::new().workers(1));
    for path in ["/now-short", "/later-short", "/now-err", "/later-err"] {
        let request = format!(
            "GET {path} HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /plain HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        );
        let (bytes, closed) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        assert!(closed, "{path}: not closed: {text}");
        assert_eq!(text.matches("HTTP/1.").count(), 1, "{path}: {text}");
    }
}

/// A hint exact 20 before the first frame and u64::MAX after it (a hint
/// that changes between polls): `exact` was u64::MAX + 10 and overflowed
/// on the worker (a panic with overflow checks on). The size is now read
/// before any frame is taken, as hyper reads it: 20, which the body
/// keeps, so the answer is whole, and the server goes on serving.
#[test]
fn hint_switching_to_u64_max() {
    let (_rt, server) = server(Options::new().workers(1));
    let path = "/now-switch-max";
    let request = format!("{}{}", req_get(path), req_get("/plain"));
    let (bytes, _) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
    let text = String::from_utf8_lossy(&bytes);
    let responses = parse(&bytes, &[]);
    assert_eq!(responses.first(), Some(&(200, Some(20), 20, true)), "{path}: {text}");
    assert_eq!(responses.get(1).map(|r| r.0), Some(200), "the next answer: {text}");
    let close = req_get("/plain").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n");
    let (bytes, _) = exchange(server.addr, close.as_bytes(), Duration::from_secs(3));
    assert!(String::from_utf8_lossy(&bytes).ends_with("plain"), "server still serves");
}

/// `size_hint` exact u64::MAX after a frame came ready: `exact` is
/// `rest + held.len()` (overflow in debug builds). The client must get
/// a failed answer (500 or a cut), and the server must go on serving.
#[test]
fn exact_u64_max_hint() {
    let (_rt, server) = server(Options::new().workers(1));
    for path in ["/now-u64max", "/later-u64max", "/now-u64max-fresh", "/later-u64max-fresh"] {
        let request = format!("{}{}", req_get(path), req_get("/plain"));
        let (bytes, closed) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        eprintln!("{path}: closed {closed}: {:?}", &text[..text.len().min(400)]);
        let responses = parse(&bytes, &[]);
        assert!(responses.first().is_some_and(|r| r.0 == 500 || !r.3), "{path}: {text}");
        assert!(closed || responses.len() == 2);
    }
    let (bytes, _) = exchange(
        server.addr,
        req_get("/plain").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n").as_bytes(),
        Duration::from_secs(3),
    );
    assert!(String::from_utf8_lossy(&bytes).ends_with("plain"), "server still serves");
}

/// Empty data frames, trailers, and exact 0 after a pause: framed right,
/// and the connection keeps going (the pipelined answer follows).
#[test]
fn empty_frames_trailers_and_zero_keep_framing() {
    let (_rt, server) = server(Options::new().workers(1));
    for (path, len) in
        [("/now-empties", 10), ("/later-empties", 10), ("/now-zero", 0), ("/later-zero", 0)]
    {
        let request = format!(
            "{}{}",
            req_get(path),
            req_get("/plain").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
        );
        let (bytes, _) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let responses = parse(&bytes, &[]);
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(responses.len(), 2, "{path}: {text}");
        assert_eq!(responses[0], (200, Some(len), len as usize, true), "{path}: {text}");
        assert_eq!(responses[1].0, 200, "{path}: {text}");
        assert!(text.ends_with("plain"), "{path}: {text}");
    }
}

/// 204/304/205 with a 2 MiB exact body (streamed, declared): no body on
/// the wire, no Content-Length for 204 (RFC 9110 §8.6), and the next
/// pipelined answer framed right.
#[test]
fn bodiless_statuses_with_a_big_exact_body() {
    let (_rt, server) = server(Options::new().workers(1));
    for path in ["/204-big", "/304-big", "/205-big"] {
        let request = format!(
            "{}{}",
            req_get(path),
            req_get("/plain").replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
        );
        let (bytes, _) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        let head = text.split("\r\n\r\n").next().unwrap();
        eprintln!("{path}: {head:?}");
        if path == "/204-big" {
            assert!(!head.to_ascii_lowercase().contains("content-length"), "{head}");
        }
        if path == "/205-big" {
            assert!(head.contains("Content-Length: 0"), "{head}");
        }
        assert!(bytes.len() < 4096, "{path}: {} bytes", bytes.len());
        assert!(text.ends_with("plain"), "{path}: {text}");
    }
}

/// A body whose exact hint is the total (not what remains) after its first
/// frame came ready: hyper reads the hint before polling and sends 13 of
/// 13; here the declared length is hint + held.
#[test]
fn constant_total_hint_after_a_ready_frame() {
    let (_rt, server) = server(Options::new().workers(1));
    for path in ["/now-const-total", "/later-const-total"] {
        let request = req_get(path).replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n");
        let (bytes, _) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        eprintln!("{path}: {text:?}");
        let responses = parse(&bytes, &[]);
        assert_eq!(responses.first().map(|r| (r.1, r.3)), Some((Some(13), true)), "{path}: {text}");
    }
}

/// response_timeout while a sized body stalls half-way: the connection
/// closes; no 500 (nor anything) is appended to the cut body.
#[test]
fn response_timeout_during_a_sized_stream() {
    let options = Options::new().workers(1).response_timeout(Some(Duration::from_millis(300)));
    let (_rt, server) = server(options);
    for path in ["/now-stall", "/later-stall"] {
        let request = format!("{}{}", req_get(path), req_get("/plain"));
        let (bytes, closed) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
        let text = String::from_utf8_lossy(&bytes);
        assert!(closed, "{path}: {text}");
        assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{path}: {text}");
        assert!(text.contains("Content-Length: 100"), "{path}: {text}");
        let body = text.split_once("\r\n\r\n").unwrap().1;
        assert_eq!(body.len(), 50, "{path}: {text}");
    }
}

/// HEAD of a 2 MiB exact body after an await: the declared length, no
/// body, the next answer framed right.
#[test]
fn head_past_one_mib() {
    let (_rt, server) = server(Options::new().workers(1));
    let request = "HEAD /huge HTTP/1.1\r\nHost: t\r\n\r\nGET /plain HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let (bytes, _) = exchange(server.addr, request.as_bytes(), Duration::from_secs(3));
    let text = String::from_utf8_lossy(&bytes);
    let responses = parse(&bytes, &[true, false]);
    assert_eq!(responses.len(), 2, "{text}");
    assert_eq!(responses[0].1, Some(BIG as u64), "{text}");
    assert!(text.ends_with("plain"), "{text}");
}

/// HTTP/2: short, long and failing sized bodies never complete; an exact
/// body over a 1 KiB window completes with the length it declared.
#[test]
fn http2_sized_bodies() {
    let (rt, server) = server(Options::new().workers(1));
    rt.block_on(async {
        let send = common::h2_client_window(server.addr, 1024).await;
        for path in
            ["/now-short", "/later-short", "/now-err", "/later-err", "/now-long", "/later-long"]
        {
            let request = http::Request::get(format!("http://t{path}")).body(()).unwrap();
            let (answer, _) =
                send.clone().ready().await.unwrap().send_request(request, true).unwrap();
            let failed = match answer.await {
                Ok(a) if a.status() == 500 => true,
                Ok(a) => {
                    let mut body = a.into_body();
                    let mut failed = false;
                    while let Some(piece) = body.data().await {
                        match piece {
                            Ok(p) => {
                                let _ = body.flow_control().release_capacity(p.len());
                            }
                            Err(_) => {
                                failed = true;
                                break;
                            }
                        }
                    }
                    failed
                }
                Err(_) => true,
            };
            assert!(failed, "{path}: completed over HTTP/2");
        }
        for path in ["/huge", "/now-empties", "/later-empties", "/now-zero"] {
            let request = http::Request::get(format!("http://t{path}")).body(()).unwrap();
            let (answer, _) =
                send.clone().ready().await.unwrap().send_request(request, true).unwrap();
            let answer = answer.await.unwrap();
            let length: Option<u64> =
                answer.headers().get("content-length").and_then(|v| v.to_str().ok()?.parse().ok());
            let mut body = answer.into_body();
            let mut got = 0u64;
            while let Some(piece) = body.data().await {
                let piece = piece.unwrap_or_else(|e| panic!("{path}: {e}"));
                let _ = body.flow_control().release_capacity(piece.len());
                got += piece.len() as u64;
            }
            assert_eq!(length, Some(got), "{path}");
        }
    });
}
