//! HTTP/2 (h2c, prior knowledge) over real TCP, with the `h2` crate, an
//! independent implementation of RFC 9113, as the client; and curl.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::serve;
use falconet_server::hello::Hello;
use falconet_server::{Handler, Options, Request, Response, Status};
use http::{Method, StatusCode};

/// `/count` answers the body's length; `/big?n=N` sends N bytes, streamed
/// in 64 KiB writes; `/sized?n=N` sends N bytes with a length; `/mixed?n=N`
/// streams [`pattern`] in pieces that alternate copied writes and shared
/// `Bytes`; `/shared?n=N` sends it as one shared sized body.
struct Bodies;

enum Route {
    Count(u64),
    Big(usize),
    Sized(usize),
    Mixed(usize),
    Shared(usize),
    Other,
}

/// `n` bytes that show any piece out of place.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

fn query_n(request: &Request<'_>) -> usize {
    request.target().split_once("n=").and_then(|(_, n)| n.parse().ok()).unwrap_or(0)
}

impl Handler for Bodies {
    type State = Route;

    fn head(&self, request: &Request<'_>) -> Route {
        match request.path() {
            "/count" => Route::Count(0),
            "/big" => Route::Big(query_n(request)),
            "/sized" => Route::Sized(query_n(request)),
            "/mixed" => Route::Mixed(query_n(request)),
            "/shared" => Route::Shared(query_n(request)),
            _ => Route::Other,
        }
    }

    fn body(&self, state: &mut Route, chunk: &[u8]) {
        if let Route::Count(n) = state {
            *n += chunk.len() as u64;
        }
    }

    fn respond(&self, state: Route, response: &mut Response<'_>) {
        let _ = match state {
            Route::Count(n) => response.body(n.to_string().as_bytes()),
            Route::Big(n) => {
                let piece = vec![b'x'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let take = left.min(piece.len());
                    let _ = response.write(&piece[..take]);
                    left -= take;
                }
                Ok(())
            }
            Route::Sized(n) => response.body(&vec![b'y'; n]),
            Route::Mixed(n) => {
                let all = Bytes::from(pattern(n));
                let (mut at, mut size, mut shared) = (0, 1, false);
                while at < n {
                    let end = (at + size).min(n);
                    let _ = if shared {
                        response.write_bytes(all.slice(at..end))
                    } else {
                        response.write(&all[at..end])
                    };
                    (at, size, shared) = (end, size * 3 + 1, !shared);
                }
                Ok(())
            }
            Route::Shared(n) => response.body_bytes(Bytes::from(pattern(n))),
            Route::Other => response.status(Status::NOT_FOUND).map(drop),
        };
    }
}

/// The binary's `Demo` handler served with `options`, its tasks on the
/// returned runtime (keep it for the server's life).
#[cfg(feature = "tokio")]
fn demo(
    options: Options,
) -> (tokio::runtime::Runtime, common::TestServer<falconet_server::hello::Demo>) {
    let app = tokio::runtime::Runtime::new().unwrap();
    let demo = falconet_server::hello::Demo::new(app.handle().clone());
    (app, serve(options, demo))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

async fn request(
    send: &h2::client::SendRequest<Bytes>,
    method: Method,
    path: &str,
    body: &[u8],
) -> Answer {
    let mut send = send.clone().ready().await.unwrap();
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"))
        .body(())
        .unwrap();
    let (response, mut stream) = send.send_request(request, body.is_empty()).unwrap();
    // Sent in pieces as the server's windows allow, while the response is
    // read (an echo answers before the body ends: a client that read only
    // afterwards would deadlock on the windows, as with any server).
    let mut rest = Bytes::copy_from_slice(body);
    let sender = tokio::spawn(async move {
        while !rest.is_empty() {
            stream.reserve_capacity(rest.len().min(1 << 20));
            let granted = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await;
            let granted = granted.expect("the stream stays open").expect("capacity");
            let piece = rest.split_to(granted.min(rest.len()));
            stream.send_data(piece, rest.is_empty()).unwrap();
        }
    });
    let response = response.await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let mut incoming = response.into_body();
    let mut body = Vec::new();
    while let Some(piece) = incoming.data().await {
        let piece = piece.unwrap();
        incoming.flow_control().release_capacity(piece.len()).unwrap();
        body.extend_from_slice(&piece);
    }
    sender.await.unwrap();
    Answer { status, headers, body }
}

/// Sends a POST of `len` bytes as the windows allow; returns the status
/// and whether the client got to send it all (false: the stream was reset).
#[cfg(feature = "tower")]
async fn upload(
    send: &h2::client::SendRequest<Bytes>,
    path: &str,
    len: usize,
) -> (StatusCode, impl Future<Output = bool>) {
    let mut ready = send.clone().ready().await.unwrap();
    let request = http::Request::post(format!("http://localhost{path}")).body(()).unwrap();
    let (response, mut stream) = ready.send_request(request, false).unwrap();
    let sender = tokio::spawn(async move {
        let mut rest = Bytes::from(pattern(len));
        while !rest.is_empty() {
            stream.reserve_capacity(rest.len().min(1 << 20));
            let Some(Ok(granted)) = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await
            else {
                return false; // reset
            };
            let piece = rest.split_to(granted.min(rest.len()));
            if stream.send_data(piece, rest.is_empty()).is_err() {
                return false;
            }
        }
        true
    });
    let status = response.await.unwrap().status();
    let sent_all = async move {
        tokio::time::timeout(Duration::from_secs(30), sender).await.expect("ends").unwrap()
    };
    (status, sent_all)
}

#[test]
fn plaintext_json_head_and_errors() {
    let server = serve(Options::new().workers(1), Hello);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let plain = request(&send, Method::GET, "/plaintext", b"").await;
        assert_eq!(plain.status, StatusCode::OK);
        assert_eq!(plain.body, b"Hello, World!");
        assert_eq!(plain.headers["content-type"], "text/plain");
        assert_eq!(plain.headers["content-length"], "13");
        assert_eq!(plain.headers["server"], "falconet");
        assert!(plain.headers.contains_key("date"));
        let json = request(&send, Method::GET, "/json", b"").await;
        assert_eq!(json.body, br#"{"message":"Hello, World!"}"#);
        let head = request(&send, Method::HEAD, "/plaintext", b"").await;
        assert_eq!((head.status, head.body.len()), (StatusCode::OK, 0));
        assert_eq!(head.headers["content-length"], "13");
        let missing = request(&send, Method::GET, "/nowhere", b"").await;
        assert_eq!(
            (missing.status, missing.body.as_slice()),
            (StatusCode::NOT_FOUND, &b"Not Found\n"[..])
        );
        let wrong = request(&send, Method::POST, "/plaintext", b"").await;
        assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(wrong.headers["allow"], "GET, HEAD");
    });
}

/// Many streams at once on one connection, all answered, each its own.
#[test]
fn concurrent_streams() {
    let server = serve(Options::new().workers(1), Bodies);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let mut tasks = Vec::new();
        for i in 0..90usize {
            let send = send.clone();
            tasks.push(tokio::spawn(async move {
                let answer = request(&send, Method::GET, &format!("/sized?n={i}"), b"").await;
                assert_eq!(answer.status, StatusCode::OK);
                assert_eq!(answer.body, vec![b'y'; i]);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}

/// Request bodies of every size reach the handler whole: past the
/// stream and connection windows (1 MiB), the server's WINDOW_UPDATEs let
/// the client go on.
#[test]
fn request_bodies_through_the_windows() {
    let server = serve(Options::new().workers(1).max_body(64 << 20), Bodies);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        for size in [1usize, 16_384, 65_536, 100_000, 3 << 20] {
            let body = vec![7u8; size];
            let answer = request(&send, Method::POST, "/count", &body).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.body, size.to_string().as_bytes(), "{size}");
        }
    });
}

/// A response larger than the client's windows: the server sends what the
/// windows allow and the rest after each WINDOW_UPDATE.
#[test]
fn responses_through_small_client_windows() {
    let server = serve(Options::new().workers(1), Bodies);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 16_384).await;
        for path in ["/big?n=4000000", "/sized?n=1000000", "/big?n=0"] {
            let answer = request(&send, Method::GET, path, b"").await;
            assert_eq!(answer.status, StatusCode::OK);
            let n: usize = path.split_once("n=").unwrap().1.parse().unwrap();
            assert_eq!(answer.body.len(), n, "{path}");
        }
    });
}

/// Body pieces in `Bytes` go out in place over HTTP/2, between copied
/// ones, through windows smaller than a piece, on concurrent streams; not
/// at all for HEAD; and copied over HTTP/1.1. Every byte in order.
#[test]
fn shared_body_pieces() {
    let server = serve(Options::new().workers(1), Bodies);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 16_384).await;
        let mut streams = Vec::new();
        for n in [0usize, 1, 5, 16_384, 16_385, 300_000, 1_000_003] {
            for route in ["mixed", "shared"] {
                let send = send.clone();
                streams.push(tokio::spawn(async move {
                    let path = format!("/{route}?n={n}");
                    let answer = request(&send, Method::GET, &path, b"").await;
                    assert_eq!(answer.status, StatusCode::OK, "{path}");
                    assert!(answer.body == pattern(n), "{path}: {} bytes", answer.body.len());
                    let head = request(&send, Method::HEAD, &path, b"").await;
                    assert!(head.body.is_empty(), "{path}: HEAD");
                    if route == "shared" {
                        assert_eq!(head.headers["content-length"], n.to_string().as_str());
                    }
                }));
            }
        }
        for stream in streams {
            stream.await.unwrap();
        }
    });
    let mut client = common::Client::connect(server.addr);
    for path in ["/mixed?n=300000", "/shared?n=300000"] {
        let reply = client.get(path);
        assert_eq!(reply.status, 200);
        assert!(reply.body == pattern(300_000), "{path} over HTTP/1.1");
    }
}

/// A body over `max_body` is refused with 413 (its content-length) before
/// the handler sees it.
#[test]
fn body_over_max_body() {
    let server = serve(Options::new().workers(1).max_body(1000), Bodies);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let mut send = send.ready().await.unwrap();
        let request = http::Request::builder()
            .method(Method::POST)
            .uri("http://localhost/count")
            .header("content-length", "5000")
            .body(())
            .unwrap();
        let (response, _stream) = send.send_request(request, false).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    });
}

/// HTTP/1.1 and HTTP/2 on the same port, the protocol chosen by the first
/// bytes.
#[test]
fn both_protocols_on_one_port() {
    let server = serve(Options::new().workers(1), Hello);
    let reply = common::Client::connect(server.addr).get("/plaintext");
    assert_eq!((reply.status, reply.text()), (200, "Hello, World!".to_string()));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        assert_eq!(request(&send, Method::GET, "/plaintext", b"").await.status, StatusCode::OK);
    });
    // The preface's first bytes, then something else: HTTP/1 answers it.
    common::refused(server.addr, b"PRI * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

/// Deferred responses (`/delay`) on many streams of one connection, all
/// in flight at once: the worker is not blocked.
#[cfg(feature = "tokio")]
#[test]
fn deferred_responses_multiplexed() {
    let (_app, server) = demo(Options::new().workers(1));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let started = std::time::Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let send = send.clone();
            tasks.push(tokio::spawn(async move {
                let answer = request(&send, Method::GET, "/delay?ms=300", b"").await;
                assert_eq!(answer.status, StatusCode::OK);
                assert_eq!(answer.body, b"delayed 300 ms");
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        // 50 x 300 ms one after another would take 15 s.
        assert!(started.elapsed() < Duration::from_secs(10));
    });
}

/// curl, prior knowledge (skipped where curl is not installed).
#[test]
fn curl_prior_knowledge() {
    let server = serve(Options::new().workers(1), Hello);
    let url = format!("http://{}/plaintext", server.addr);
    let Ok(output) = std::process::Command::new("curl")
        .args(["-s", "--http2-prior-knowledge", "-w", "\n%{http_version}", &url])
        .output()
    else {
        common::skip_without("curl");
        return;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text, "Hello, World!\n2", "{}", String::from_utf8_lossy(&output.stderr));
}

/// Request bodies read on the application's thread (Demo's `/echo`: a
/// lent body, a deferred response): byte-exact both ways, at sizes past
/// the 1 MiB windows, so the reads' releases on the application thread
/// must come back as WINDOW_UPDATEs for the client to go on.
#[cfg(feature = "tokio")]
#[test]
fn echo_through_an_application_thread() {
    let (_app, server) = demo(Options::new().workers(1).max_body(64 << 20));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        for size in [1usize, 100_000, 5 << 20] {
            let body: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let answer = request(&send, Method::POST, "/echo", &body).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert!(answer.body == body, "{size} bytes echoed as {}", answer.body.len());
        }
        // Several echoes at once on the connection.
        let mut tasks = Vec::new();
        for i in 0..8usize {
            let send = send.clone();
            tasks.push(tokio::spawn(async move {
                let body = vec![i as u8; 300_000 + i];
                let answer = request(&send, Method::POST, "/echo", &body).await;
                assert!(answer.body == body, "stream {i}");
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}

/// Sixteen echoes at once through the default 65,535-byte connection
/// window: most streams wait for connection credit with their response's
/// bytes held in their pipes (the worker does not read those while it has
/// no room for them), and each WINDOW_UPDATE moves some on. Every echo
/// completes, byte-exact.
#[cfg(feature = "tokio")]
#[test]
fn echoes_held_back_by_the_connection_window() {
    let (_app, server) = demo(Options::new().workers(1));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let mut tasks = Vec::new();
        for i in 0..16usize {
            let send = send.clone();
            tasks.push(tokio::spawn(async move {
                let body: Vec<u8> = (0..200_000 + i * 1_000).map(|k| (k * 13 + i) as u8).collect();
                let answer = request(&send, Method::POST, "/echo", &body).await;
                assert_eq!(answer.status, StatusCode::OK);
                assert!(answer.body == body, "stream {i}: {} bytes", answer.body.len());
            }));
        }
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap();
        }
    });
}

/// A client that resets a stream mid-body: the application's read fails
/// (it does not hang), and the connection serves the next stream.
#[cfg(feature = "tokio")]
#[test]
fn reset_mid_body() {
    let (_app, server) = demo(Options::new().workers(1));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        for _ in 0..20 {
            let mut ready = send.clone().ready().await.unwrap();
            let request = http::Request::builder()
                .method(Method::POST)
                .uri("http://localhost/echo")
                .body(())
                .unwrap();
            let (_response, mut stream) = ready.send_request(request, false).unwrap();
            stream.send_data(Bytes::from_static(&[1; 1000]), false).unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
            stream.send_reset(h2::Reason::CANCEL);
        }
        let answer = request(&send, Method::POST, "/echo", b"after").await;
        assert_eq!(answer.body, b"after");
    });
}

/// An axum Router on falconet over HTTP/2: the tower path (polled response
/// bodies, lent request bodies) serves streams unchanged.
#[cfg(feature = "tower")]
#[test]
fn axum_over_h2() {
    use axum::Router;
    use axum::body::Body as AxumBody;
    use axum::routing::{get, post};

    let app = tokio::runtime::Runtime::new().unwrap();
    let router = Router::new().route("/plaintext", get(|| async { "Hello, World!" })).route(
        "/echo",
        post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
    );
    let handler = falconet_server::tower::TowerHandler::new(router, app.handle().clone());
    let server = serve(Options::new().workers(1).max_body(64 << 20), handler);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let plain = request(&send, Method::GET, "/plaintext", b"").await;
        assert_eq!((plain.status, &plain.body[..]), (StatusCode::OK, &b"Hello, World!"[..]));
        for size in [0usize, 10, 3 << 20] {
            let body: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
            let answer = request(&send, Method::POST, "/echo", &body).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert!(answer.body == body, "{size} bytes echoed as {}", answer.body.len());
        }
    });
}

/// An axum handler that answers `202` at once and reads the body in a task
/// it spawns: the response's END_STREAM does not reset the stream (RFC
/// 9113 8.1 lets a server ask the client to stop only when the response
/// does not depend on the rest), so the task reads the whole body; a task
/// that drops the body half read then gets the stream reset with NO_ERROR,
/// and the connection serves on.
#[cfg(feature = "tower")]
#[test]
fn a_body_read_by_a_task_after_the_response_arrives_whole() {
    use axum::Router;
    use axum::body::Body as AxumBody;
    use axum::routing::{get, post};
    use http_body_util::BodyExt;

    let app = tokio::runtime::Runtime::new().unwrap();
    let (read, reports) = std::sync::mpsc::channel::<(usize, bool)>();
    let router = Router::new().route("/plaintext", get(|| async { "Hello, World!" })).route(
        "/upload",
        post(move |uri: http::Uri, body: AxumBody| {
            let report = read.clone();
            let keep = uri.query() != Some("drop");
            async move {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let (mut body, mut got, mut hash) = (body, 0, common::FNV_START);
                    while let Some(Ok(frame)) = body.frame().await {
                        if let Some(data) = frame.data_ref() {
                            (got, hash) = (got + data.len(), common::fnv(hash, data));
                        }
                        if !keep {
                            break; // dropped half read
                        }
                    }
                    let _ =
                        report.send((got, hash == common::fnv(common::FNV_START, &pattern(got))));
                });
                StatusCode::ACCEPTED
            }
        }),
    );
    let handler = falconet_server::tower::TowerHandler::new(router, app.handle().clone());
    let server = serve(Options::new().workers(1), handler);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 1 << 20).await;
        let body = pattern(1 << 20);
        let answer = request(&send, Method::POST, "/upload", &body).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED);
        let report = reports.recv_timeout(Duration::from_secs(30)).expect("the task read");
        assert_eq!(report, (body.len(), true));

        // Dropped half read, or failed past max_body (8 MiB): the client
        // is told to stop (RST_STREAM NO_ERROR), nothing hangs.
        for (path, len) in [("/upload", 16 << 20), ("/upload?drop", 8 << 20)] {
            let (status, sent_all) = upload(&send, path, len).await;
            assert_eq!(status, StatusCode::ACCEPTED);
            // Awaited, not blocked on: the client's tasks share this thread.
            let report = async {
                loop {
                    match reports.try_recv() {
                        Ok(report) => break report,
                        Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    }
                }
            };
            let timeout = tokio::time::timeout(Duration::from_secs(30), report).await;
            let (got, intact) = timeout.expect(path);
            assert!(intact && got > 0 && got <= 8 << 20, "{path}: {got}");
            assert!(!sent_all.await, "{path}: the client was not stopped");
        }
        let plain = self::request(&send, Method::GET, "/plaintext", b"").await;
        assert_eq!(plain.body, b"Hello, World!");
    });
}

/// curl's `--http2` on a plain URL: the HTTP/1.1 `Upgrade: h2c` path
/// (RFC 7540 3.2). A GET switches; a POST with a body stays HTTP/1.1.
#[test]
fn curl_upgrade() {
    let server = serve(Options::new().workers(1), common::Echo);
    let base = format!("http://{}", server.addr);
    let run = |args: &[&str]| {
        std::process::Command::new("curl")
            .args(["-s", "--http2", "-w", "\n%{http_version}"])
            .args(args)
            .output()
    };
    let Ok(output) = run(&[&format!("{base}/abc")]) else {
        common::skip_without("curl");
        return;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.ends_with("\n2"), "{text}");
    let output = run(&["--data-binary", "hello", &format!("{base}/abc")]).unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.ends_with("\n1.1"), "{text}");
}

/// curl 7.x's `--http2` keeps only 32 KiB of what follows the `101` in the
/// read that brought it, and failed the transfer ("connection buffer size
/// is too small", exit 16, nothing downloaded) when the upgrade's response
/// went on past it before its preface (a newcomer's run of the README's
/// `curl --http2 .../bytes?n=1048576`). The first flight is capped; the
/// rest follows the preface.
#[test]
fn curl_upgrade_with_a_big_response() {
    let server = serve(Options::new().workers(1), Bodies);
    let dir = std::env::temp_dir().join(format!("falconet-curl-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (path, n) in [("big", 1 << 20), ("sized", 40_000), ("sized", 16_384), ("big", 70_000)] {
        let file = dir.join(format!("{path}-{n}"));
        let Ok(output) = std::process::Command::new("curl")
            .args(["-s", "--http2", "-w", "%{http_version} %{exitcode}", "-o"])
            .arg(&file)
            .arg(format!("http://{}/{path}?n={n}", server.addr))
            .output()
        else {
            common::skip_without("curl");
            return;
        };
        let text = String::from_utf8_lossy(&output.stdout);
        assert_eq!(text, "2 0", "/{path}?n={n}");
        let body = std::fs::read(&file).unwrap();
        assert_eq!(body.len(), n, "/{path}?n={n}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same without curl (a machine may not have it): what the server
/// sends after the `101` before the client's preface stays under the 32
/// KiB curl keeps, DATA included; the preface brings the rest.
#[test]
fn an_upgrade_sends_a_first_flight_then_waits_for_the_preface() {
    use common::h2raw::{Event, Raw};
    use falconet_server::h2::frame::{self, PREFACE, kind};

    let server = serve(Options::new().workers(1), Bodies);
    let mut raw = Raw::connect(server.addr);
    // HTTP2-Settings: INITIAL_WINDOW_SIZE 2^31-1, so that the stream's
    // credit is not what holds the response back.
    raw.send(
        b"GET /big?n=1048576 HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAR_____\r\n\r\n",
    );
    raw.read_switch();
    let (mut early, mut data) = (0, 0);
    while let Some(f) = raw.next_frame(Duration::from_millis(500)) {
        early += frame::HEADER_LEN + f.payload.len();
        if f.kind == kind::DATA && f.stream == 1 {
            data += f.payload.len();
        }
    }
    assert!(data > 0, "a first flight of the response");
    assert!(early < 32 * 1024, "{early} bytes after the 101 before the preface");
    let mut out = PREFACE.to_vec();
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    raw.window_update(0, (1 << 31) - 1 - 65_535);
    loop {
        match raw.next(Duration::from_secs(5)) {
            Event::Frame(f) if f.kind == kind::DATA && f.stream == 1 => {
                data += f.payload.len();
                if f.end_stream() {
                    break;
                }
            }
            Event::Frame(_) => {}
            other => panic!("{other:?} after {data} bytes"),
        }
    }
    assert_eq!(data, 1 << 20);
}

/// The upgrade by hand: `101`, then our SETTINGS, then the response to the
/// upgrading request on stream 1, before the client's preface; then the
/// client's own streams.
#[test]
fn upgrade_by_hand() {
    use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, kind};
    use std::io::{Read, Write};

    let server = serve(Options::new().workers(1), Hello);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(
        b"GET /plaintext HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n",
    )
    .unwrap();
    let mut seen = Vec::new();
    let switching =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    // Frames until stream 1's DATA with END_STREAM.
    let mut frames = Vec::new();
    let mut buf = [0u8; 4096];
    'read: loop {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0, "closed early; got {seen:?}");
        seen.extend_from_slice(&buf[..n]);
        if seen.len() < switching.len() {
            continue;
        }
        assert_eq!(&seen[..switching.len()], switching);
        frames.clear();
        let mut rest = &seen[switching.len()..];
        while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
            let header = FrameHeader::parse(header);
            let Some(payload) = rest.get(HEADER_LEN..HEADER_LEN + header.length as usize) else {
                break;
            };
            frames.push((header, payload.to_vec()));
            if header.kind == kind::DATA && header.stream == 1 && header.has(0x1) {
                break 'read;
            }
            rest = &rest[HEADER_LEN + header.length as usize..];
        }
    }
    assert_eq!(frames[0].0.kind, kind::SETTINGS, "our preface comes first");
    let data = frames.iter().find(|(h, _)| h.kind == kind::DATA).unwrap();
    assert_eq!(data.1, b"Hello, World!");
    // The client's preface and SETTINGS, then a PING: the connection is
    // HTTP/2 now.
    let mut bytes = PREFACE.to_vec();
    bytes.extend(
        FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes().unwrap(),
    );
    bytes.extend(
        FrameHeader { length: 8, kind: kind::PING, flags: 0, stream: 0 }.to_bytes().unwrap(),
    );
    bytes.extend([9; 8]);
    tcp.write_all(&bytes).unwrap();
    let mut reply = Vec::new();
    while !reply.windows(8).any(|w| w == [9; 8]) {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0);
        reply.extend_from_slice(&buf[..n]);
    }
}

/// An upgrade request with HTTP/1 requests pipelined behind it in the same
/// segment: a `101` would make them a bad preface (GOAWAY, and the
/// upgrading request never answered), so the upgrade is declined and both
/// are answered over HTTP/1.1 (RFC 9110 7.8: a server may ignore Upgrade).
#[test]
fn an_upgrade_with_requests_pipelined_behind_it_stays_http1() {
    use std::io::{Read, Write};

    let server = serve(Options::new().workers(1), Hello);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    tcp.write_all(
        b"GET /plaintext HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n\
          GET /json HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    assert_eq!(reply.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{reply}");
    assert!(reply.contains("Hello, World!") && reply.contains("\"message\""), "{reply}");
}

/// The server stopping says goodbye to an idle HTTP/2 connection with a
/// GOAWAY(NO_ERROR) naming the last stream, then closes it.
#[test]
fn shutdown_sends_goaway_to_idle_connections() {
    use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, flag, kind};
    use falconet_server::h2::hpack::{Encoder, Field};
    use std::io::{Read, Write};

    let server = serve(Options::new().workers(1), Hello);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(
        FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes().unwrap(),
    );
    let mut block = Vec::new();
    Encoder::new().encode(
        [
            Field::new(b":method", b"GET"),
            Field::new(b":scheme", b"http"),
            Field::new(b":path", b"/plaintext"),
        ],
        &mut block,
    );
    let flags = flag::END_HEADERS | flag::END_STREAM;
    bytes.extend(
        FrameHeader { length: block.len() as u32, kind: kind::HEADERS, flags, stream: 1 }
            .to_bytes()
            .unwrap(),
    );
    bytes.extend(&block);
    tcp.write_all(&bytes).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(13).any(|w| w == b"Hello, World!") {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    let before = seen.len();
    server.handle().shutdown();
    loop {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let mut rest = &seen[before..];
    let mut goaway = None;
    // The frames after the response: find the GOAWAY and its last stream.
    while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        let payload = &rest[HEADER_LEN..HEADER_LEN + header.length as usize];
        if header.kind == kind::GOAWAY {
            goaway = Some((
                u32::from_be_bytes(payload[..4].try_into().unwrap()),
                payload[4..8].to_vec(),
            ));
        }
        rest = &rest[HEADER_LEN + header.length as usize..];
    }
    assert_eq!(goaway, Some((1, vec![0, 0, 0, 0])), "GOAWAY(last stream 1, NO_ERROR)");
}

/// Demo's `/bytes?n=N`: N bytes over HTTP/2 (through small client
/// windows) and HTTP/1.1, 400 for an `n` out of range.
#[cfg(feature = "tokio")]
#[test]
fn demo_bytes() {
    let (_app, server) = demo(Options::new().workers(1));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 16_384).await;
        for n in [0usize, 1, 16_384, 1 << 20] {
            let answer = request(&send, Method::GET, &format!("/bytes?n={n}"), b"").await;
            assert_eq!(answer.status, StatusCode::OK);
            assert!(answer.body.len() == n && answer.body.iter().all(|&b| b == b'x'), "{n}");
        }
        for bad in ["/bytes", "/bytes?n=", "/bytes?n=67108865", "/bytes?n=-1", "/bytes?x=1"] {
            let answer = request(&send, Method::GET, bad, b"").await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    });
    let reply = common::Client::connect(server.addr).get("/bytes?n=100000");
    assert_eq!((reply.status, reply.body.len()), (200, 100_000));
}

/// Demo's `POST /upload`: the body's length, counted on the worker, over
/// HTTP/2 through small windows and over HTTP/1.1; `405` with `Allow:
/// POST` for another method on `/upload` and `/echo`.
#[cfg(feature = "tokio")]
#[test]
fn demo_upload() {
    let (_app, server) = demo(Options::new().workers(1));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 16_384).await;
        for n in [0usize, 1, 16_384, 65_536, 1 << 20] {
            let answer = request(&send, Method::POST, "/upload", &pattern(n)).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.body, n.to_string().as_bytes(), "{n}");
        }
        for path in ["/upload", "/echo"] {
            let answer = request(&send, Method::GET, path, b"").await;
            assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
            assert_eq!(answer.headers["allow"], "POST", "{path}");
        }
    });
    let mut client = common::Client::connect(server.addr);
    let body = pattern(300_000);
    client.send(
        format!("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len())
            .as_bytes(),
    );
    client.send(&body);
    let reply = client.reply().unwrap();
    assert_eq!((reply.status, reply.text()), (200, "300000".to_string()));
}

/// Hand-built client frames for the raw tests below.
fn raw_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    use falconet_server::h2::frame::FrameHeader;
    let mut out = FrameHeader { length: payload.len() as u32, kind, flags, stream }
        .to_bytes()
        .unwrap()
        .to_vec();
    out.extend_from_slice(payload);
    out
}

fn raw_get(encoder: &mut falconet_server::h2::hpack::Encoder, stream: u32, path: &str) -> Vec<u8> {
    use falconet_server::h2::frame::{flag, kind};
    use falconet_server::h2::hpack::Field;
    let mut block = Vec::new();
    encoder.encode(
        [
            Field::new(b":method", b"GET"),
            Field::new(b":scheme", b"http"),
            Field::new(b":path", path.as_bytes()),
        ],
        &mut block,
    );
    raw_frame(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, stream, &block)
}

/// A reader that grants no credit (SETTINGS_INITIAL_WINDOW_SIZE 0) and
/// never updates it: the server holds its response (bounded) and closes
/// the connection once no byte moved for `io_timeout`.
#[test]
fn zero_window_reader_is_timed_out() {
    use falconet_server::h2::frame::{PREFACE, kind, setting};
    use std::io::{Read, Write};

    let options = Options::new().workers(1).io_timeout(Duration::from_secs(1));
    let server = serve(options, Bodies);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut bytes = PREFACE.to_vec();
    let mut zero_window = setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    zero_window.extend(0u32.to_be_bytes());
    bytes.extend(raw_frame(kind::SETTINGS, 0, 0, &zero_window));
    bytes.extend(raw_get(&mut falconet_server::h2::hpack::Encoder::new(), 1, "/big?n=4000000"));
    tcp.write_all(&bytes).unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 4096];
    let mut received = 0;
    loop {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => received += n,
        }
    }
    // The connection ended on its own (no test timeout), with no body
    // byte sent past the zero window (the head and control frames only).
    assert!(started.elapsed() < Duration::from_secs(15), "closed after {:?}", started.elapsed());
    assert!(received < 1024, "{received} bytes sent into a zero window");
}

/// A client that grants one byte of credit and then ends its side of the
/// connection can never send the WINDOW_UPDATE the rest of its response
/// waits for: the server closes at once, not after `io_timeout`. Both
/// kinds of response: one staged whole by the handler (`/big`), one
/// deferred through its pipe (`/echo`).
#[cfg(feature = "tokio")]
#[test]
fn a_client_gone_while_its_response_waits_for_credit() {
    use falconet_server::h2::frame::{PREFACE, kind, setting};
    use std::io::{Read, Write};

    /// `body`: POST it (in DATA frames under the default window), else GET.
    fn closes_soon(addr: std::net::SocketAddr, path: &str, body: usize) {
        use falconet_server::h2::frame::flag;
        use falconet_server::h2::hpack::{Encoder, Field};
        let mut tcp = std::net::TcpStream::connect(addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut bytes = PREFACE.to_vec();
        let mut one = setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
        one.extend(1u32.to_be_bytes());
        bytes.extend(raw_frame(kind::SETTINGS, 0, 0, &one));
        if body == 0 {
            bytes.extend(raw_get(&mut Encoder::new(), 1, path));
        } else {
            let mut block = Vec::new();
            Encoder::new().encode(
                [
                    Field::new(b":method", b"POST"),
                    Field::new(b":scheme", b"http"),
                    Field::new(b":path", path.as_bytes()),
                ],
                &mut block,
            );
            bytes.extend(raw_frame(kind::HEADERS, flag::END_HEADERS, 1, &block));
            let data = pattern(body);
            let mut pieces = data.chunks(16_384).peekable();
            while let Some(piece) = pieces.next() {
                let end = if pieces.peek().is_none() { flag::END_STREAM } else { 0 };
                bytes.extend(raw_frame(kind::DATA, end, 1, piece));
            }
        }
        tcp.write_all(&bytes).unwrap();
        // The head and the first body byte, then the client's side ends.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(10).any(|w| w[..4] == [0, 0, 1, kind::DATA]) {
            let n = tcp.read(&mut buf).unwrap();
            assert!(n > 0, "{path}: closed before the first DATA frame");
            got.extend_from_slice(&buf[..n]);
        }
        tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let started = std::time::Instant::now();
        loop {
            match tcp.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(5), "{path}: closed after {waited:?}");
    }

    let options = Options::new().workers(1).io_timeout(Duration::from_secs(20));
    let server = serve(options.clone(), Bodies);
    closes_soon(server.addr, "/big?n=100000", 0);
    let (_app, demo) = demo(options);
    // Past the head's room: most of the echo stays in its pipe.
    closes_soon(demo.addr, "/echo", 60_000);
}

/// The same as a response the worker polls (a tower body streaming the
/// request's back): its head and first byte go out, the rest waits for
/// credit the client, gone, can no longer give. The server closes at
/// once, not after `io_timeout`.
#[cfg(feature = "tower")]
#[test]
fn a_client_gone_while_a_polled_response_waits_for_credit() {
    use axum::Router;
    use axum::body::Body as AxumBody;
    use axum::routing::post;
    use falconet_server::h2::frame::{PREFACE, flag, kind, setting};
    use falconet_server::h2::hpack::{Encoder, Field};
    use std::io::{Read, Write};

    let app = tokio::runtime::Runtime::new().unwrap();
    let router = Router::new().route(
        "/echo",
        post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
    );
    let handler = falconet_server::tower::TowerHandler::new(router, app.handle().clone());
    let server = serve(Options::new().workers(1).io_timeout(Duration::from_secs(20)), handler);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut bytes = PREFACE.to_vec();
    let mut one = setting::INITIAL_WINDOW_SIZE.to_be_bytes().to_vec();
    one.extend(1u32.to_be_bytes());
    bytes.extend(raw_frame(kind::SETTINGS, 0, 0, &one));
    let mut block = Vec::new();
    Encoder::new().encode(
        [
            Field::new(b":method", b"POST"),
            Field::new(b":scheme", b"http"),
            Field::new(b":path", b"/echo"),
        ],
        &mut block,
    );
    bytes.extend(raw_frame(kind::HEADERS, flag::END_HEADERS, 1, &block));
    bytes.extend(raw_frame(kind::DATA, 0, 1, b"a"));
    tcp.write_all(&bytes).unwrap();
    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
    while !got.windows(10).any(|w| w[..4] == [0, 0, 1, kind::DATA]) {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0, "closed before the first DATA frame");
        got.extend_from_slice(&buf[..n]);
    }
    tcp.write_all(&raw_frame(kind::DATA, flag::END_STREAM, 1, b"bcdef")).unwrap();
    tcp.shutdown(std::net::Shutdown::Write).unwrap();
    let started = std::time::Instant::now();
    while let Ok(n) = tcp.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
}

/// Stream ids up to 2^31-1 (RFC 9113 5.1.1): the last one works, and a
/// client that has used it cannot open another (a lower id is a
/// PROTOCOL_ERROR; the client needs a new connection).
#[test]
fn the_last_stream_id() {
    use falconet_server::h2::frame::{FrameHeader, HEADER_LEN, PREFACE, kind};
    use std::io::{Read, Write};

    let server = serve(Options::new().workers(1), Hello);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut encoder = falconet_server::h2::hpack::Encoder::new();
    let mut bytes = PREFACE.to_vec();
    bytes.extend(raw_frame(kind::SETTINGS, 0, 0, &[]));
    let last = (1u32 << 31) - 1;
    bytes.extend(raw_get(&mut encoder, last, "/plaintext"));
    tcp.write_all(&bytes).unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !seen.windows(13).any(|w| w == b"Hello, World!") {
        let n = tcp.read(&mut buf).unwrap();
        assert!(n > 0);
        seen.extend_from_slice(&buf[..n]);
    }
    tcp.write_all(&raw_get(&mut encoder, 3, "/plaintext")).unwrap();
    loop {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let mut rest = &seen[..];
    let mut goaway_code = None;
    while let Some(header) = rest.first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        let payload = &rest[HEADER_LEN..HEADER_LEN + header.length as usize];
        if header.kind == kind::GOAWAY {
            goaway_code = Some(u32::from_be_bytes(payload[4..8].try_into().unwrap()));
        }
        rest = &rest[HEADER_LEN + header.length as usize..];
    }
    assert_eq!(goaway_code, Some(0x1), "PROTOCOL_ERROR");
}

/// A request whose fields pass the header-list limit is answered `431`
/// (RFC 9113 10.5.1), and the connection serves the next one.
#[test]
fn oversized_header_list_gets_431() {
    let server = serve(Options::new().workers(1).max_head(8192), Hello);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let mut ready = send.clone().ready().await.unwrap();
        let big = "x".repeat(5000);
        let oversized = http::Request::builder()
            .uri("http://localhost/plaintext")
            .header("x-a", &big)
            .header("x-b", &big)
            .body(())
            .unwrap();
        let (response, _) = ready.send_request(oversized, true).unwrap();
        assert_eq!(response.await.unwrap().status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        let after = request(&send, Method::GET, "/plaintext", b"").await;
        assert_eq!(after.status, StatusCode::OK);
    });
}

/// Panics wherever `path` says: in `head`, `body` or `respond`.
struct Panicky;

impl Handler for Panicky {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        assert!(request.path() != "/head", "a handler bug in head");
        request.path().to_string()
    }

    fn body(&self, path: &mut String, _: &[u8]) {
        assert!(path != "/body", "a handler bug in body");
    }

    fn respond(&self, path: String, response: &mut Response<'_>) {
        let _ = response.write(b"partial");
        assert!(path != "/respond", "a handler bug in respond");
        let _ = response.write(b" and whole");
    }
}

/// A handler that panics costs its stream a 500; the connection's other
/// streams, before and after, are served.
#[test]
fn a_panicking_handler_costs_one_stream() {
    let server = serve(Options::new().workers(1), Panicky);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        for path in ["/head", "/body", "/respond"] {
            let answer = request(&send, Method::POST, path, b"some body").await;
            assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
            assert!(answer.body.is_empty(), "{path}: {:?}", answer.body);
            let fine = request(&send, Method::POST, "/fine", b"x").await;
            assert_eq!((fine.status, &fine.body[..]), (StatusCode::OK, &b"partial and whole"[..]));
        }
    });
}

/// A slowloris over HTTP/2: a HEADERS frame trickled a byte at a time,
/// never finished. The header timeout ends the connection, as it ends a
/// slow HTTP/1 head.
#[test]
fn a_trickled_headers_frame_meets_the_header_timeout() {
    use falconet_server::h2::frame::{PREFACE, kind};
    use std::io::{Read, Write};

    let options = Options::new()
        .workers(1)
        .header_timeout(Duration::from_millis(500))
        .keep_alive_timeout(Duration::from_secs(60));
    let server = serve(options, Hello);
    let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
    let mut start = PREFACE.to_vec();
    start.extend(raw_frame(kind::SETTINGS, 0, 0, &[]));
    tcp.write_all(&start).unwrap();
    let headers = raw_get(&mut falconet_server::h2::hpack::Encoder::new(), 1, "/plaintext");
    let started = std::time::Instant::now();
    // A byte every 100 ms (well inside the 60 s keep-alive), never the last.
    let mut closed = false;
    for &byte in &headers[..headers.len() - 1] {
        if tcp.write_all(&[byte]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if started.elapsed() > Duration::from_secs(10) {
            break;
        }
    }
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; 4096];
    while !closed {
        match tcp.read(&mut buf) {
            Ok(0) | Err(_) => closed = true,
            Ok(_) => {}
        }
    }
    assert!(started.elapsed() < Duration::from_secs(12), "held for {:?}", started.elapsed());
}

/// The same slowloris one frame at a time: a HEADERS frame without
/// END_HEADERS, then CONTINUATIONs of one byte each, every frame whole,
/// the block never finished (and, second, a block left open in silence).
/// No stream is open until the block ends, so the connection looked idle
/// and kept it for the keep-alive timeout (60 s) instead of the header
/// timeout.
#[test]
fn an_unfinished_header_block_meets_the_header_timeout() {
    use falconet_server::h2::frame::{PREFACE, flag, kind};
    use falconet_server::h2::hpack::Field;
    use std::io::{Read, Write};

    let options = Options::new()
        .workers(1)
        .header_timeout(Duration::from_millis(500))
        .keep_alive_timeout(Duration::from_secs(60));
    let server = serve(options, Hello);
    for trickle in [true, false] {
        let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
        let mut block = Vec::new();
        falconet_server::h2::hpack::Encoder::new().encode(
            [
                Field::new(b":method", b"GET"),
                Field::new(b":scheme", b"http"),
                Field::new(b":path", b"/plaintext"),
            ],
            &mut block,
        );
        let mut start = PREFACE.to_vec();
        start.extend(raw_frame(kind::SETTINGS, 0, 0, &[]));
        start.extend(raw_frame(kind::HEADERS, flag::END_STREAM, 1, &block[..1]));
        tcp.write_all(&start).unwrap();
        let started = std::time::Instant::now();
        // Reads until the server closes: when, and its GOAWAY's code.
        let mut reading = tcp.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            reading.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut input = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reading.read(&mut buf) {
                input.extend_from_slice(&buf[..n]);
            }
            let held = started.elapsed();
            let mut code = None;
            let mut rest = &input[..];
            while rest.len() >= 9 {
                let length = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
                if rest[3] == kind::GOAWAY && rest.len() >= 9 + 8 {
                    code = Some(u32::from_be_bytes(rest[13..17].try_into().unwrap()));
                }
                rest = &rest[(9 + length).min(rest.len())..];
            }
            (held, code)
        });
        if trickle {
            // A whole frame every 100 ms, never the one with END_HEADERS
            // (fewer than the CONTINUATION flood's limit allows by then).
            for byte in &block[1..block.len() - 1] {
                if reader.is_finished()
                    || tcp.write_all(&raw_frame(kind::CONTINUATION, 0, 1, &[*byte])).is_err()
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let (held, code) = reader.join().unwrap();
        assert!(held < Duration::from_millis(1500), "trickle {trickle}: held for {held:?}");
        assert_eq!(code, Some(0), "trickle {trickle}: GOAWAY(NO_ERROR), not a flood's");
    }
}

/// Takes every request body and keeps it unread.
struct Hoard(std::sync::Mutex<Vec<falconet_server::RequestBody>>);

impl Handler for Hoard {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        if request.path() == "/hoard" {
            request.stream_body();
        }
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        match response.take_body() {
            Some(body) => {
                self.0.lock().unwrap().push(body);
                let _ = response.status(Status::new(202).unwrap());
            }
            None => {
                let _ = response.body(b"ok");
            }
        }
    }
}

/// The pool runs dry halfway through request bodies that nobody reads
/// (the smallest pool, 2 MiB, and 48 bodies of 100,000 bytes hoarded by
/// the application, each on its own connection, within the first window
/// the client may use; about 20 fit): the streams whose bodies no longer fit are reset or
/// their connection closes, a hoarded body's read fails instead of waiting
/// forever, and once the memory is back the server answers again. Nothing
/// hangs.
#[test]
fn pool_running_dry_mid_body() {
    use std::io::Read;
    const BODIES: usize = 48;
    const BODY: usize = 100_000;

    let hoard = std::sync::Arc::new(Hoard(std::sync::Mutex::new(Vec::new())));
    let options = Options::new().workers(1).max_pool_bytes(falconet_server::MIN_POOL_BYTES);
    let server = serve(options, ArcHandler(hoard.clone()));
    runtime().block_on(async {
        let mut connections = Vec::new();
        for _ in 0..BODIES {
            let send = common::h2_client_window(server.addr, 1 << 20).await;
            connections.push(send.clone());
            let Ok(ready) = send.ready().await else { break };
            let mut ready = ready;
            let upload = http::Request::builder()
                .method(Method::POST)
                .uri("http://localhost/hoard")
                .body(())
                .unwrap();
            let Ok((response, mut stream)) = ready.send_request(upload, false) else { break };
            stream.reserve_capacity(BODY);
            let _ = stream.send_data(Bytes::from(vec![7u8; BODY]), true);
            let outcome = tokio::time::timeout(Duration::from_secs(10), response).await;
            let _ = outcome.expect("an answer or a reset, not a hang");
            // The answer comes with the head: let the body arrive too.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(connections);
    });
    // Every hoarded body either holds all its bytes or fails: none waits,
    // and the pool ran dry for some.
    let bodies = std::mem::take(&mut *hoard.0.lock().unwrap());
    let mut reads = Vec::new();
    for body in &bodies {
        let mut buf = [0u8; 4096];
        let mut reader = body;
        let mut total = 0;
        reads.push(loop {
            match reader.read(&mut buf) {
                Ok(0) => break Ok(total),
                Ok(n) => total += n,
                Err(error) => break Err(error.kind()),
            }
        });
    }
    assert!(reads.iter().any(Result::is_err), "the pool never ran dry: {reads:?}");
    assert!(reads.iter().all(|read| read.is_err() || *read == Ok(BODY)), "{reads:?}");
    drop(bodies);
    let reply = common::Client::connect(server.addr).get("/ok");
    assert_eq!(reply.status, 200);
}

/// A handler shared with the test through an `Arc`.
struct ArcHandler<H>(std::sync::Arc<H>);

impl<H: Handler> Handler for ArcHandler<H> {
    type State = H::State;

    fn head(&self, request: &Request<'_>) -> H::State {
        self.0.head(request)
    }

    fn body(&self, state: &mut H::State, chunk: &[u8]) {
        self.0.body(state, chunk);
    }

    fn respond(&self, state: H::State, response: &mut Response<'_>) {
        self.0.respond(state, response);
    }
}

/// Answers how many fields its request had, and the last one's value.
struct FieldCount;

impl Handler for FieldCount {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        let last = request.headers().last().map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        format!("{} {}", request.headers().count(), last.unwrap_or_default())
    }

    fn respond(&self, text: String, response: &mut Response<'_>) {
        let _ = response.body(text.as_bytes());
    }
}

/// Every field reaches the handler, in order, on both sides of the
/// 32-field mark where the server sets its field views up differently,
/// up to `max_headers`.
#[test]
fn field_counts_around_the_small_array() {
    let server = serve(Options::new().workers(1).max_headers(100), FieldCount);
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        for count in [0usize, 1, 32, 33, 99] {
            let mut ready = send.clone().ready().await.unwrap();
            let mut builder = http::Request::builder().uri("http://localhost/");
            for i in 0..count {
                builder = builder.header(format!("x-f{i}"), i.to_string());
            }
            let (response, _) = ready.send_request(builder.body(()).unwrap(), true).unwrap();
            let mut body = response.await.unwrap().into_body();
            let mut text = Vec::new();
            while let Some(piece) = body.data().await {
                text.extend_from_slice(&piece.unwrap());
            }
            let last = if count == 0 { String::new() } else { (count - 1).to_string() };
            assert_eq!(String::from_utf8(text).unwrap(), format!("{count} {last}"));
        }
        // One past `max_headers`: 431, as HTTP/1 answers too many fields.
        let mut ready = send.clone().ready().await.unwrap();
        let mut builder = http::Request::builder().uri("http://localhost/");
        for i in 0..101 {
            builder = builder.header(format!("x-f{i}"), "v");
        }
        let (response, _) = ready.send_request(builder.body(()).unwrap(), true).unwrap();
        assert_eq!(response.await.unwrap().status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    });
}

/// A lent body past `max_body` (no content-length to refuse it early) is
/// the client's error: the echo's read fails, and its response, failing
/// before its head, is a 413 (it was a 500).
#[cfg(feature = "tokio")]
#[test]
fn a_lent_body_past_max_body_gets_413() {
    let (_app, server) = demo(Options::new().workers(1).max_body(10));
    runtime().block_on(async {
        let send = common::h2_client_window(server.addr, 65_535).await;
        let answer = request(&send, Method::POST, "/echo", b"hello world").await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
        // The connection goes on.
        let answer = request(&send, Method::POST, "/echo", b"hello").await;
        assert_eq!((answer.status, &answer.body[..]), (StatusCode::OK, &b"hello"[..]));
    });
}
