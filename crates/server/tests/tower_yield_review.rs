//! An adversarial review of the yield (polled tower bodies yield the
//! worker after 256 polls that stage nothing; the inline path hands a
//! body past its exact size, or after 256 empty polls, to the worker),
//! kept as tests. It found two defects, both fixed: an HTTP/2 client that
//! half-closed got RST_STREAM(CANCEL) for a body the worker had left still
//! ready, and an HTTP/1 response timed out before its head was closed
//! without its `503`. Real TCP,
//! HTTP/1.1 and HTTP/2 (the `h2` crate): lost wakeups (a hang), HEAD
//! bodies that stage nothing, tiny frames, several streams, credit held
//! back, graceful shutdown, `Expect: 100-continue`, trailers-only bodies,
//! bodies that break their exact size, and the 256 boundary.
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Client;
use falconet_server::Options;
use falconet_server::tower::{Body, TowerHandler};
use http::HeaderMap;
use http_body::{Frame, SizeHint};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// n empty frames, then "done".
    Empties,
    /// n frames of one byte.
    Tiny,
    /// n frames: empty, 10 bytes, empty, ... (exact size right).
    Alt,
    /// Says 10 bytes, yields 20 ready, ends.
    Over,
    /// Says 10 bytes, yields 20, pending once, ends.
    OverPending,
    /// A trailers frame only.
    TrailersOnly,
    /// n empty frames, then trailers.
    EmptiesTrailers,
    /// n times: pending (woken at once), empty frame; then "done".
    PendEmpties,
    /// n frames of 16 KiB.
    Chunks,
}

struct Gen {
    kind: Kind,
    i: u64,
    n: u64,
    exact: Option<u64>,
    pend: bool,
}

impl http_body::Body for Gen {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let (i, n) = (self.i, self.n);
        self.i += 1;
        let data = |b: &'static [u8]| Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b)))));
        let trailers = || {
            let mut t = HeaderMap::new();
            t.insert("x-t", "1".parse().unwrap());
            Poll::Ready(Some(Ok(Frame::trailers(t))))
        };
        match self.kind {
            Kind::Empties => match i {
                i if i < n => data(b""),
                i if i == n => data(b"done"),
                _ => Poll::Ready(None),
            },
            Kind::Tiny => {
                if i < n {
                    const L: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
                    let k = (i % 26) as usize;
                    data(&L[k..k + 1])
                } else {
                    Poll::Ready(None)
                }
            }
            Kind::Alt => match i {
                i if i < n && i % 2 == 0 => data(b""),
                i if i < n => data(b"0123456789"),
                _ => Poll::Ready(None),
            },
            Kind::Over => match i {
                0 => data(b"01234567890123456789"),
                _ => Poll::Ready(None),
            },
            Kind::OverPending => match i {
                0 => data(b"01234567890123456789"),
                1 => {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                _ => Poll::Ready(None),
            },
            Kind::TrailersOnly => match i {
                0 => trailers(),
                _ => Poll::Ready(None),
            },
            Kind::EmptiesTrailers => match i {
                i if i < n => data(b""),
                i if i == n => trailers(),
                _ => Poll::Ready(None),
            },
            Kind::Chunks => {
                static CHUNK: [u8; 16384] = [b'c'; 16384];
                if i < n { data(&CHUNK) } else { Poll::Ready(None) }
            }
            Kind::PendEmpties => {
                self.i -= 1;
                if self.pend {
                    self.pend = false;
                    self.i += 1;
                    if i < n {
                        return data(b"");
                    }
                    return if i == n { data(b"done") } else { Poll::Ready(None) };
                }
                self.pend = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

#[derive(Clone)]
struct Service;

impl tower_service::Service<http::Request<Body>> for Service {
    type Response = http::Response<Gen>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or("");
        let arg = |name: &str| {
            query
                .split('&')
                .find_map(|kv| kv.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                .and_then(|v| v.parse::<u64>().ok())
        };
        let n = arg("n").unwrap_or(0);
        let (kind, exact) = match path.as_str() {
            "/empties" => (Kind::Empties, arg("exact")),
            "/tiny" => (Kind::Tiny, arg("exact")),
            "/alt" => (Kind::Alt, Some(10 * (n / 2))),
            "/over" => (Kind::Over, Some(10)),
            "/over-pending" => (Kind::OverPending, Some(10)),
            "/trailers-only" => (Kind::TrailersOnly, None),
            "/empties-trailers" => (Kind::EmptiesTrailers, None),
            "/pend-empties" => (Kind::PendEmpties, None),
            "/chunks" => (Kind::Chunks, None),
            _ => (Kind::Tiny, Some(0)),
        };
        ready(Ok(http::Response::new(Gen { kind, i: 0, n, exact, pend: false })))
    }
}

fn server(workers: usize) -> (common::TestServer<TowerHandler<Service>>, tokio::runtime::Runtime) {
    common::serve_tower(Options::new().workers(workers), Service)
}

fn tiny_body(n: u64) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// One HTTP/1.1 exchange on its own connection, with a deadline.
fn get1(addr: SocketAddr, path: &str, head: bool) -> (common::Reply, Duration) {
    let mut client = Client::connect(addr);
    let method = if head { "HEAD" } else { "GET" };
    let start = Instant::now();
    client.send(format!("{method} {path} HTTP/1.1\r\nHost: t\r\nTE: trailers\r\n\r\n").as_bytes());
    let reply = client.reply_to(head).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (reply, start.elapsed())
}

async fn fetch2(
    send: &h2::client::SendRequest<Bytes>,
    method: http::Method,
    path: &str,
    limit: Duration,
) -> Result<(u16, Vec<u8>, Option<HeaderMap>, Option<String>), String> {
    let mut send = send.clone().ready().await.map_err(|e| e.to_string())?;
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, _) = send.send_request(request, true).map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    let got = tokio::time::timeout(limit, async {
        let response = response.await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let length =
            response.headers().get("content-length").map(|v| v.to_str().unwrap().to_string());
        let mut incoming = response.into_body();
        while let Some(piece) = incoming.data().await {
            let piece = piece.map_err(|e| e.to_string())?;
            incoming.flow_control().release_capacity(piece.len()).unwrap();
            body.extend_from_slice(&piece);
        }
        let trailers = incoming.trailers().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((status, trailers, length))
    })
    .await;
    match got {
        Ok(Ok((status, trailers, length))) => Ok((status, body, trailers, length)),
        Ok(Err(e)) => Err(format!("{path}: {e} after {} bytes", body.len())),
        Err(_) => Err(format!("{path}: stalled after {} bytes", body.len())),
    }
}

/// Over HTTP/1.1: long runs of empty frames (and of pending + empty), in
/// a server of one worker, complete: the connection that yields is woken
/// and served again. At and around 256 too.
#[test]
fn http1_empty_runs_complete() {
    let (server, _rt) = server(1);
    for n in [0u64, 1, 255, 256, 257, 511, 512, 513, 100_000] {
        for exact in ["", "&exact=4"] {
            let (reply, took) = get1(server.addr, &format!("/empties?n={n}{exact}"), false);
            assert_eq!((reply.status, &reply.body[..]), (200, &b"done"[..]), "n {n}{exact}");
            assert!(took < Duration::from_secs(10), "n {n}: {took:?}");
        }
    }
    let (reply, _) = get1(server.addr, "/pend-empties?n=20000", false);
    assert_eq!(&reply.body[..], b"done");
}

/// The same over HTTP/2, several streams at once on one connection, with
/// a tiny-frames stream beside them.
#[test]
fn h2_empty_runs_complete_on_several_streams() {
    let (server, _rt) = server(1);
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        for n in [0u64, 255, 256, 257, 513] {
            let got = fetch2(
                &send,
                http::Method::GET,
                &format!("/empties?n={n}"),
                Duration::from_secs(10),
            )
            .await;
            assert_eq!(got.map(|g| g.1), Ok(b"done".to_vec()), "n {n}");
        }
        let mut tasks = Vec::new();
        for k in 0..6u64 {
            let send = send.clone();
            tasks.push(tokio::spawn(async move {
                let path = if k == 5 {
                    "/tiny?n=50000".to_string()
                } else {
                    format!("/empties?n={}", 50_000 + k)
                };
                fetch2(&send, http::Method::GET, &path, Duration::from_secs(20))
                    .await
                    .map(|g| g.1.len())
            }));
        }
        for (k, task) in tasks.into_iter().enumerate() {
            let len = task.await.unwrap().unwrap_or_else(|e| panic!("stream {k}: {e}"));
            assert_eq!(len, if k == 5 { 50_000 } else { 4 }, "stream {k}");
        }
        let got =
            fetch2(&send, http::Method::GET, "/pend-empties?n=20000", Duration::from_secs(10))
                .await;
        assert_eq!(got.map(|g| g.1), Ok(b"done".to_vec()));
    });
}

/// A HEAD whose (unemptied) body is many tiny frames: nothing is staged
/// for any of them; it completes, over both protocols, with no body.
#[test]
fn head_of_a_many_frame_body_completes() {
    let (server, _rt) = server(1);
    for (n, exact) in [(200_000u64, ""), (200_000, "&exact=200000")] {
        let (reply, took) = get1(server.addr, &format!("/tiny?n={n}{exact}"), true);
        assert_eq!(reply.status, 200);
        assert!(took < Duration::from_secs(10));
    }
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        for (n, exact) in [(200_000u64, ""), (200_000, "&exact=200000")] {
            let got = fetch2(
                &send,
                http::Method::HEAD,
                &format!("/tiny?n={n}{exact}"),
                Duration::from_secs(10),
            )
            .await;
            assert_eq!(got.map(|g| (g.0, g.1.len())), Ok((200, 0)));
        }
    });
}

/// Another connection on the same (single) worker is answered while a
/// body of endless empty frames is polled: the point of the yield.
#[test]
fn other_connections_are_served_during_an_empty_run() {
    let (server, _rt) = server(1);
    let addr = server.addr;
    let long = std::thread::spawn(move || get1(addr, "/empties?n=3000000", false));
    std::thread::sleep(Duration::from_millis(50));
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        let (reply, took) = get1(addr, "/tiny?n=3&exact=3", false);
        assert_eq!(&reply.body[..], b"abc");
        worst = worst.max(took);
    }
    let (reply, _) = long.join().unwrap();
    assert_eq!(&reply.body[..], b"done");
    assert!(worst < Duration::from_millis(500), "{worst:?}");
}

/// A legit stream of tiny frames (1 byte each, 64 KiB of them held
/// before it streams: 65,536 polls that stage nothing) arrives whole.
#[test]
fn tiny_frames_arrive_whole() {
    let (server, _rt) = server(1);
    for (n, exact) in [(100_000u64, ""), (1 << 20, "&exact=1048576")] {
        let path = format!("/tiny?n={n}{exact}");
        let (reply, _) = get1(server.addr, &path, false);
        assert_eq!(reply.body, tiny_body(n), "{path}");
    }
    let (_, body, _) = raw_h2_get(server.addr, "/tiny?n=100000");
    assert_eq!(body, tiny_body(100_000));
}

/// A raw HTTP/2 GET with windows of 2^31-1: (time, body, DATA frames).
fn raw_h2_get(addr: SocketAddr, path: &str) -> (Duration, Vec<u8>, usize) {
    use common::h2raw::{Raw, req};
    use falconet_server::h2::frame::{kind, setting};
    let mut raw = Raw::handshake(addr, &[(setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)]);
    raw.window_update(0, 0x7fff_ffff - 65_535);
    let start = Instant::now();
    raw.headers(1, &req("GET", path), true);
    let (mut body, mut frames) = (Vec::new(), 0);
    loop {
        let f = raw.next_frame(Duration::from_secs(60)).expect("a frame");
        if f.kind == kind::DATA && f.stream == 1 {
            body.extend_from_slice(&f.payload);
            frames += 1;
        }
        assert_ne!(f.kind, kind::GOAWAY);
        assert_ne!(f.kind, kind::RST_STREAM);
        if f.stream == 1 && f.end_stream() {
            break;
        }
    }
    (start.elapsed(), body, frames)
}

/// The client half-closes its side after its request (HTTP/1.1: shutdown
/// of the write half; HTTP/2 raw: the same after HEADERS): a response of
/// a long empty run still completes.
#[test]
fn half_closed_client_gets_the_whole_empty_run() {
    let (server, _rt) = server(1);
    for n in [1000u64, 100_000] {
        let mut tcp = TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        tcp.write_all(format!("GET /empties?n={n} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let mut all = Vec::new();
        let _ = tcp.read_to_end(&mut all);
        let text = String::from_utf8_lossy(&all).into_owned();
        assert!(text.contains("done"), "n {n}: {text:?}");
    }
    let mut cut = Vec::new();
    // Not a body that returns `Pending` (`/pend-empties`): one the
    // application still owes when the client's input ends is reset, as a
    // deferred answer is (`drop_unanswerable`: HTTP/2 has no half-close).
    for path in ["/empties?n=255", "/empties?n=300", "/empties?n=100000", "/tiny?n=100000"] {
        use common::h2raw::{Raw, req};
        use falconet_server::h2::frame::kind;
        let mut raw = Raw::handshake(
            server.addr,
            &[(falconet_server::h2::frame::setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)],
        );
        raw.window_update(0, 0x7fff_ffff - 65_535);
        raw.headers(1, &req("GET", path), true);
        raw.tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let (mut body, mut ended, mut seen) = (Vec::new(), false, Vec::new());
        while let Some(f) = raw.next_frame(Duration::from_secs(10)) {
            seen.push((f.kind, f.stream, if f.kind == kind::RST_STREAM { f.code() } else { 0 }));
            if f.kind == kind::DATA && f.stream == 1 {
                body.extend_from_slice(&f.payload);
            }
            if f.stream == 1 && f.end_stream() {
                ended = true;
                break;
            }
        }
        seen.truncate(8);
        if !ended {
            cut.push(format!("{path}: {seen:?}"));
        }
    }
    assert!(cut.is_empty(), "answers cut for a half-closed HTTP/2 client: {cut:?}");
}

/// Empty and non-empty frames alternating, exact size right: the whole
/// body with its length, over both.
#[test]
fn exact_size_in_empty_and_nonempty_frames() {
    let (server, _rt) = server(1);
    for n in [2u64, 300, 514, 5000] {
        let (reply, _) = get1(server.addr, &format!("/alt?n={n}"), false);
        let want: Vec<u8> = b"0123456789".repeat((n / 2) as usize);
        assert_eq!(reply.body, want, "n {n}");
        assert_eq!(reply.header("content-length"), Some(&*(10 * (n / 2)).to_string()), "n {n}");
    }
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        for n in [2u64, 300, 514, 5000] {
            let got =
                fetch2(&send, http::Method::GET, &format!("/alt?n={n}"), Duration::from_secs(5))
                    .await
                    .unwrap();
            assert_eq!(got.1.len() as u64, 10 * (n / 2), "n {n}");
            assert_eq!(got.3, Some((10 * (n / 2)).to_string()), "n {n}: content-length");
        }
    });
}

/// A body that says 10 bytes and yields 20: the response is consistent
/// (its Content-Length is what is sent, or it is cut: never 10 declared
/// and 20 sent), and over HTTP/1 the connection after it is usable or
/// closed, never out of step.
#[test]
fn a_body_over_its_size_is_consistent() {
    let (server, _rt) = server(1);
    for path in ["/over", "/over-pending"] {
        let mut tcp = TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\nGET /tiny?n=3&exact=3 HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tcp.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
        let text = String::from_utf8_lossy(&all).into_owned();
        let first_end = text.find("\r\n\r\n").unwrap() + 4;
        let head = &text[..first_end];
        if let Some(cl) = head.lines().find_map(|l| l.strip_prefix("Content-Length: ")) {
            let cl: usize = cl.trim().parse().unwrap();
            let rest = &text[first_end..];
            // What follows the declared body is the next response or nothing.
            let after = &rest[cl.min(rest.len())..];
            assert!(
                after.is_empty() || after.starts_with("HTTP/1.1 "),
                "{path}: out of step: {text:?}"
            );
        }
    }
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        for path in ["/over", "/over-pending"] {
            let got = fetch2(&send, http::Method::GET, path, Duration::from_secs(5)).await;
            if let Ok((_, body, _, Some(cl))) = &got {
                assert_eq!(cl.parse::<usize>().unwrap(), body.len(), "{path}");
            }
        }
    });
}

/// Trailers-only bodies, and trailers after a long empty run: over HTTP/2
/// the trailers arrive; over HTTP/1 (TE: trailers) the response completes.
#[test]
fn trailers_only_and_after_empties() {
    let (server, _rt) = server(1);
    for path in ["/trailers-only", "/empties-trailers?n=1000", "/empties-trailers?n=256"] {
        let (reply, took) = get1(server.addr, path, false);
        assert_eq!(reply.status, 200, "{path}");
        assert!(reply.body.is_empty(), "{path}");
        assert!(took < Duration::from_secs(5));
    }
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client(server.addr).await;
        for path in ["/trailers-only", "/empties-trailers?n=1000", "/empties-trailers?n=256"] {
            let got = fetch2(&send, http::Method::GET, path, Duration::from_secs(5)).await.unwrap();
            let trailers = got.2.unwrap_or_else(|| panic!("{path}: no trailers"));
            assert_eq!(trailers.get("x-t").unwrap(), "1", "{path}");
        }
    });
}

/// `Expect: 100-continue` on a POST answered with a long empty run (the
/// body never read): the answer completes.
#[test]
fn expect_continue_with_an_empty_run() {
    let (server, _rt) = server(1);
    let mut client = Client::connect(server.addr);
    client.send(b"POST /empties?n=5000 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    let mut reply = client.reply().unwrap();
    if reply.status == 100 {
        client.send(b"hello");
        reply = client.reply().unwrap();
    }
    assert_eq!((reply.status, &reply.body[..]), (200, &b"done"[..]));
}

/// Graceful shutdown while an empty run is polled: the response still
/// completes and the server stops.
#[test]
fn shutdown_during_an_empty_run() {
    for h2 in [false, true] {
        let (server, _rt) = server(1);
        let addr = server.addr;
        let handle = server.handle().clone();
        let waiter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            handle.shutdown();
        });
        let body = if h2 {
            let rt = common::current_thread();
            rt.block_on(async {
                let send = common::h2_client(addr).await;
                fetch2(&send, http::Method::GET, "/empties?n=3000000", Duration::from_secs(20))
                    .await
                    .map(|g| g.1)
            })
        } else {
            Ok(get1(addr, "/empties?n=3000000", false).0.body)
        };
        waiter.join().unwrap();
        assert_eq!(body, Ok(b"done".to_vec()), "h2 {h2}");
        let joined = Instant::now();
        server.join().unwrap();
        assert!(joined.elapsed() < Duration::from_secs(10));
    }
}

/// A client that withholds credit on one stream (window 0 for streams)
/// while another stream's body is a long empty run: the run completes
/// (its DATA is 4 bytes, sent after a WINDOW_UPDATE on that stream only).
#[test]
fn credit_withheld_beside_an_empty_run() {
    let (server, _rt) = server(1);
    let rt = common::current_thread();
    rt.block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let stalled = {
            let send = send.clone();
            tokio::spawn(async move {
                let mut send = send.ready().await.unwrap();
                let request =
                    http::Request::get("http://localhost/chunks?n=1000").body(()).unwrap();
                let (response, _) = send.send_request(request, true).unwrap();
                let response = response.await.unwrap();
                // Never releases capacity: the stream's window closes at 1 MiB.
                let mut body = response.into_body();
                let mut got = 0usize;
                while let Ok(Some(Ok(piece))) =
                    tokio::time::timeout(Duration::from_millis(500), body.data()).await
                {
                    got += piece.len();
                }
                got
            })
        };
        let got =
            fetch2(&send, http::Method::GET, "/empties?n=200000", Duration::from_secs(10)).await;
        assert_eq!(got.map(|g| g.1), Ok(b"done".to_vec()));
        stalled.await.unwrap();
    });
}

/// Pipelined requests behind a long empty run, with and without the
/// client's half-close: both answers, in order.
#[test]
fn pipelined_behind_an_empty_run() {
    let (server, _rt) = server(1);
    for half_close in [false, true] {
        for n in [300u64, 100_000] {
            let mut client = Client::connect(server.addr);
            let req = format!(
                "GET /empties?n={n} HTTP/1.1\r\nHost: t\r\n\r\nGET /tiny?n=3&exact=3 HTTP/1.1\r\nHost: t\r\n\r\nGET /pend-empties?n={n} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            );
            client.send(req.as_bytes());
            if half_close {
                client.stream().shutdown(std::net::Shutdown::Write).unwrap();
            }
            let mut bodies = Vec::new();
            for _ in 0..3 {
                match client.reply() {
                    Ok(reply) => bodies.push(String::from_utf8_lossy(&reply.body).into_owned()),
                    Err(e) => {
                        bodies.push(format!("error: {e}"));
                        break;
                    }
                }
            }
            assert_eq!(bodies, ["done", "abc", "done"], "half_close {half_close} n {n}");
        }
    }
}

/// A body of empty frames that never ends, with a 1 s response timeout:
/// it must be cut (HTTP/1.1: close; HTTP/2: RST_STREAM) within a few
/// seconds, not spin the worker forever.
#[test]
fn an_endless_empty_run_meets_the_response_timeout() {
    let (server, _rt) = common::serve_tower(
        Options::new().workers(1).response_timeout(Some(Duration::from_secs(1))),
        Service,
    );
    let start = Instant::now();
    let mut tcp = TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    tcp.write_all(b"GET /empties?n=1000000000000 HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut all = Vec::new();
    let _ = tcp.read_to_end(&mut all);
    let http1 = start.elapsed();
    let start = Instant::now();
    use common::h2raw::{Raw, req};
    use falconet_server::h2::frame::kind;
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.headers(1, &req("GET", "/empties?n=1000000000000"), true);
    let mut ended = None;
    while let Some(f) = raw.next_frame(Duration::from_secs(15)) {
        if f.kind == kind::HEADERS {
            let _ = raw.decoder.decode(&f.payload, |_| {});
        }
        if f.stream == 1 && (f.kind == kind::RST_STREAM || f.end_stream()) || f.kind == kind::GOAWAY
        {
            ended = Some((f.kind, f.flags));
            break;
        }
    }
    let h2 = start.elapsed();
    assert!(http1 < Duration::from_secs(5), "HTTP/1: {http1:?}");
    // Options::response_timeout: "a response not yet started is answered
    // 503 Service Unavailable" (nothing of this one was written).
    assert!(
        all.starts_with(b"HTTP/1.1 503"),
        "HTTP/1: closed with {:?}",
        String::from_utf8_lossy(&all)
    );
    assert!(ended.is_some() && h2 < Duration::from_secs(5), "h2: {ended:?} {h2:?}");
}
