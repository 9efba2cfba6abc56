//! Adversarial review of `Expect: 100-continue` on lent bodies.
#![cfg(feature = "tower")]

mod common;

use std::collections::HashMap;
use std::io::Read;
use std::thread;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body as AxumBody, Bytes, to_bytes};
use axum::extract::{DefaultBodyLimit, Form, Json};
use axum::http::StatusCode;
use axum::routing::{get, post};
use common::{Client, options, serve};
use falconet_server::tower::TowerHandler;
use falconet_server::{Handler, Request, Response};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

fn app() -> Router {
    Router::new()
        .route("/bytes", post(|b: Bytes| async move { format!("bytes {}", b.len()) }))
        .route("/string", post(|s: String| async move { format!("string {s}") }))
        .route(
            "/json",
            post(|Json(v): Json<serde_json_value::Value>| async move { format!("json {}", v.0) }),
        )
        .route(
            "/form",
            post(|Form(f): Form<HashMap<String, String>>| async move {
                format!("form {}", f.get("a").cloned().unwrap_or_default())
            }),
        )
        .route(
            "/limited",
            post(|b: Bytes| async move { format!("limited {}", b.len()) })
                .layer(DefaultBodyLimit::max(2)),
        )
        .route(
            "/stream",
            post(|mut body: AxumBody| async move {
                use http_body_util::BodyExt;
                let mut n = 0;
                while let Some(Ok(frame)) = body.frame().await {
                    n += frame.into_data().map_or(0, |d| d.len());
                }
                format!("stream {n}")
            }),
        )
        .route(
            "/late",
            post(|body: AxumBody| async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let b = to_bytes(body, 1 << 20).await.unwrap();
                format!("late {}", b.len())
            }),
        )
        .route("/get", get(|| async { "got" }))
        .route(
            "/slow-get",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                "slow got"
            }),
        )
        .route(
            "/echo",
            post(|body: AxumBody| async move { AxumBody::from_stream(body.into_data_stream()) }),
        )
        .route(
            // One poll of the body (which asks for the 100), then the read
            // is dropped with the body.
            "/poll-once",
            post(|mut body: AxumBody| async move {
                use http_body_util::BodyExt;
                let mut frame = std::pin::pin!(body.frame());
                let ready = std::future::poll_fn(|cx| {
                    std::task::Poll::Ready(frame.as_mut().poll(cx).is_ready())
                })
                .await;
                format!("polled once, ready {ready}")
            }),
        )
        .route(
            // A read cancelled by a timeout: the first frame's, or the
            // next one's.
            "/give-up",
            post(|mut body: AxumBody| async move {
                use http_body_util::BodyExt;
                let mut got = 0;
                while let Ok(Some(Ok(frame))) =
                    tokio::time::timeout(Duration::from_millis(100), body.frame()).await
                {
                    got += frame.into_data().map_or(0, |d| d.len());
                }
                format!("gave up after {got}")
            }),
        )
        .route(
            "/never",
            post(|_body: AxumBody| async move {
                tokio::time::sleep(Duration::from_secs(3)).await;
                StatusCode::OK
            }),
        )
}

mod serde_json_value {
    #[derive(serde::Deserialize)]
    pub struct Value(pub u32);
}

fn head(method: &str, path: &str, extra: &str, length: usize) -> Vec<u8> {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\n{extra}Content-Length: {length}\r\nExpect: 100-continue\r\n\r\n"
    )
    .into_bytes()
}

fn short(client: &Client, secs: u64) {
    client.stream().set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
}

/// A strict client: waits for the 100 (or a final answer) before sending.
fn strict(
    client: &mut Client,
    method: &str,
    path: &str,
    extra: &str,
    body: &[u8],
) -> (bool, common::Reply) {
    client.send(&head(method, path, extra, body.len()));
    let first = client.reply().unwrap_or_else(|e| panic!("{path}: hang or error waiting: {e}"));
    if first.status == 100 {
        client.send(body);
        let reply = client.reply().unwrap_or_else(|e| panic!("{path}: after 100: {e}"));
        (true, reply)
    } else {
        assert!(first.closes(), "{path}: final without 100 must close: {first:?}");
        (false, first)
    }
}

#[test]
fn axum_extractors_with_a_strict_client() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    let ct_json = "Content-Type: application/json\r\n";
    let ct_form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let cases: &[(&str, &str, &[u8], u16, &str)] = &[
        ("/bytes", "", b"hello", 200, "bytes 5"),
        ("/string", "", b"hello", 200, "string hello"),
        ("/json", ct_json, b"12345", 200, "json 12345"),
        ("/form", ct_form, b"a=xyz", 200, "form xyz"),
        ("/stream", "", b"hello", 200, "stream 5"),
        ("/late", "", b"hello", 200, "late 5"),
        ("/echo", "", b"hello", 200, "hello"),
    ];
    let mut client = Client::connect(server.addr);
    short(&client, 5);
    for &(path, extra, body, status, text) in cases {
        let (continued, reply) = strict(&mut client, "POST", path, extra, body);
        assert!(continued, "{path}: the app reads: 100 expected");
        assert_eq!((reply.status, reply.text().as_str()), (status, text), "{path}");
        assert!(!reply.closes(), "{path}");
    }
    // Refused by the extractor without reading: 415 / 413 with a close.
    for (path, extra, len) in [("/json", "", 5usize), ("/limited", "", 5)] {
        let mut c = Client::connect(server.addr);
        short(&c, 5);
        let (continued, reply) = strict(&mut c, "POST", path, extra, &vec![b'x'; len]);
        eprintln!("{path}: continued={continued} status={}", reply.status);
        if continued {
            assert!(reply.status >= 400);
        }
    }
}

#[test]
fn chunked_and_get_and_http10_with_expect() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    // Chunked.
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    c.send(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.reply().unwrap().status, 100);
    c.send(b"5\r\nhello\r\n0\r\n\r\n");
    let r = c.reply().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    assert!(!r.closes());
    // Keep going on the same connection: a plain GET.
    assert_eq!(c.get("/get").text(), "got");
    // GET with a body and Expect to a route that ignores the body.
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    let (continued, r) = strict(&mut c, "GET", "/get", "", b"hello");
    assert!(!continued);
    assert_eq!(r.status, 200);
    c.expect_closed();
    // HTTP/1.0 with Expect: no 100 ever.
    let mut c = Client::connect(server.addr);
    c.send(b"POST /echo HTTP/1.0\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    let (got, _) =
        common::read_for(&mut c.reader.get_mut().try_clone().unwrap(), Duration::from_millis(300));
    assert!(
        !String::from_utf8_lossy(&got).contains("100 Continue"),
        "HTTP/1.0 gets no 100: {:?}",
        String::from_utf8_lossy(&got)
    );
    c.send(b"hello");
    let mut rest = got;
    rest.extend(c.read_to_end().unwrap());
    let text = String::from_utf8_lossy(&rest);
    assert!(
        text.starts_with("HTTP/1.1 200")
            && text.ends_with("hello")
            && !text.contains("100 Continue"),
        "{text}"
    );
}

#[test]
fn pipelined_get_before_expect() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    let mut req = b"GET /slow-get HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
    req.extend_from_slice(&head("POST", "/echo", "", 5));
    c.send(&req);
    let r = c.reply().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "slow got"));
    let r = c.reply().unwrap();
    assert_eq!(r.status, 100);
    c.send(b"hello");
    let r = c.reply().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));
    // and a request after it
    let mut req = head("POST", "/echo", "", 5);
    req.extend_from_slice(b"hello");
    req.extend_from_slice(b"GET /get HTTP/1.1\r\nHost: t\r\n\r\n");
    c.send(&req);
    assert_eq!(c.reply().unwrap().text(), "hello");
    assert_eq!(c.reply().unwrap().text(), "got");
}

/// The response timeout while the 100 is owed: 503 with a close, and no
/// 100 after it when the application reads later.
#[test]
fn response_timeout_while_owed() {
    let runtime = runtime();
    let opts = options().response_timeout(Some(Duration::from_millis(300)));
    let server = serve(opts, TowerHandler::new(app(), runtime.handle().clone()));
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    c.send(&head("POST", "/never", "", 5));
    let started = Instant::now();
    let r = c.reply().unwrap();
    assert_eq!(r.status, 503, "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    let rest = c.read_to_end().unwrap_or_default();
    assert!(rest.is_empty(), "after 503: {:?}", String::from_utf8_lossy(&rest));
}

/// Graceful shutdown while the 100 is owed: the app still reads and the
/// client still gets its 100 and answer.
#[test]
fn shutdown_while_owed() {
    let runtime = runtime();
    let server = serve(options(), TowerHandler::new(app(), runtime.handle().clone()));
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    c.send(&head("POST", "/late", "", 5));
    thread::sleep(Duration::from_millis(50));
    server.handle().shutdown();
    let r = c.reply().unwrap();
    assert_eq!(r.status, 100);
    c.send(b"hello");
    let r = c.reply().unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "late 5"));
    assert!(r.closes());
    server.join().unwrap();
}

const BIG: usize = 16 << 20;

/// A big answer, then a request whose body is read on a thread after its
/// exchange failed (a panic in `respond`, or a dropped responder).
struct Boom;

impl Handler for Boom {
    type State = u8;

    fn head(&self, request: &Request<'_>) -> u8 {
        match request.path() {
            "/big" => 0,
            "/panic" => {
                request.stream_body();
                1
            }
            _ => {
                request.stream_body();
                2
            }
        }
    }

    fn respond(&self, state: u8, response: &mut Response<'_>) {
        if state == 0 {
            response.body(&vec![b'x'; BIG]).unwrap();
            return;
        }
        let body = response.take_body().unwrap();
        let responder = if state == 2 { Some(response.defer().unwrap()) } else { None };
        thread::spawn(move || {
            drop(responder);
            thread::sleep(Duration::from_millis(300));
            let mut byte = [0u8; 5];
            let _ = body.try_read(&mut byte);
            thread::sleep(Duration::from_secs(3));
        });
        if state == 1 {
            panic!("boom (on purpose)");
        }
    }
}

#[test]
fn no_100_after_a_500_on_a_flushing_connection() {
    let mut failures = Vec::new();
    for path in ["/panic", "/dropped"] {
        let server = serve(options().max_pending_output(4 * BIG), Boom);
        let mut c = Client::connect(server.addr);
        let mut req = b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
        req.extend_from_slice(&head("POST", path, "", 5));
        c.send(&req);
        // Do not read until the thread has read the body.
        thread::sleep(Duration::from_millis(1000));
        let big = c.reply().unwrap();
        assert_eq!((big.status, big.body.len()), (200, BIG));
        let r = c.reply().unwrap();
        assert_eq!(r.status, 500, "{path}");
        assert!(r.closes());
        let mut rest = Vec::new();
        let _ = c.reader.read_to_end(&mut rest);
        if !rest.is_empty() {
            failures.push(format!(
                "{path}: bytes after the final 500 + close: {:?}",
                String::from_utf8_lossy(&rest)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A native handler that reads its body from a tokio task with AsyncRead.
struct TokioReads(tokio::runtime::Handle);

impl Handler for TokioReads {
    type State = ();

    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }

    fn respond(&self, (): (), response: &mut Response<'_>) {
        let mut body = response.take_body().unwrap();
        let responder = response.defer().unwrap();
        self.0.spawn(async move {
            use tokio::io::AsyncReadExt;
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut all = Vec::new();
            let r = AsyncReadExt::read_to_end(&mut body, &mut all).await;
            let _ = responder.body(format!("{r:?} {}", String::from_utf8_lossy(&all)).as_bytes());
        });
    }
}

#[test]
fn a_tokio_task_reading_with_async_read() {
    let runtime = runtime();
    let server = serve(options(), TokioReads(runtime.handle().clone()));
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    for _ in 0..3 {
        let (continued, r) = strict(&mut c, "POST", "/x", "", b"hello");
        assert!(continued);
        assert_eq!(r.text(), "Ok(5) hello");
        assert!(!r.closes());
    }
}

/// A body that is itself a request: if the server ever parsed it as one,
/// the client would get `got`.
const SMUGGLED: &[u8] = b"GET /get HTTP/1.1\r\nHost: t\r\n\r\n";

/// A read cancelled while the 100 is owed, at each of its await points:
/// before any byte (polled once and dropped; a timeout) and in the middle
/// of the body (a timeout on the next read). The client that got the 100
/// sends the body, in two pieces 300 ms apart, after the application has
/// given up on it. The answer is the application's; the rest of the body
/// is drained or the connection closed, and never parsed as a request.
fn cancelled_reads<H: Handler>(handler: H, cases: &[(&str, usize, &str)]) {
    let server = serve(options(), handler);
    let mut failures = Vec::new();
    for &(path, first_piece, answer) in cases {
        let mut c = Client::connect(server.addr);
        short(&c, 5);
        c.send(&head("POST", path, "", SMUGGLED.len()));
        let first = c.reply().unwrap_or_else(|e| panic!("{path}: {e}"));
        if first.status != 100 {
            // Answered before the read asked: no body is owed, so a close.
            assert_eq!((first.text().as_str(), first.closes()), (answer, true), "{path}");
            c.expect_closed();
            continue;
        }
        c.send(&SMUGGLED[..first_piece]);
        thread::sleep(Duration::from_millis(300));
        c.send(&SMUGGLED[first_piece..]);
        let reply = c.reply().unwrap_or_else(|e| panic!("{path}: no answer: {e}"));
        if (reply.status, reply.text().as_str()) != (200, answer) {
            failures.push(format!("{path}: {reply:?}"));
            continue;
        }
        if reply.closes() {
            let rest = c.read_to_end().unwrap_or_default();
            if !rest.is_empty() {
                failures.push(format!("{path}: after the close: {:?}", common::text(&rest)));
            }
            continue;
        }
        // The body was drained as a body: the next answer is the next
        // request's.
        c.send(b"GET /slow-get HTTP/1.1\r\nHost: t\r\n\r\n");
        match c.reply() {
            Ok(next) if next.text() == "slow got" => {}
            other => failures.push(format!("{path}: after the answer: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_read_cancelled_while_the_100_is_owed_over_tower() {
    let runtime = runtime();
    let cases = [
        ("/poll-once", SMUGGLED.len(), "polled once, ready false"),
        ("/give-up", 0, "gave up after 0"),
        ("/give-up", 10, "gave up after 10"),
    ];
    cancelled_reads(TowerHandler::new(app(), runtime.handle().clone()), &cases);
}

/// The same with `AsyncRead` on a native handler's body, read by a task.
struct GivesUp(tokio::runtime::Handle);

impl Handler for GivesUp {
    type State = bool;

    fn head(&self, request: &Request<'_>) -> bool {
        request.stream_body();
        request.path() == "/slow-get"
    }

    fn respond(&self, slow_get: bool, response: &mut Response<'_>) {
        if slow_get {
            response.body(b"slow got").unwrap();
            return;
        }
        let mut body = response.take_body().unwrap();
        let responder = response.defer().unwrap();
        self.0.spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut got = 0;
            let mut buf = [0u8; 64];
            while let Ok(Ok(n @ 1..)) = tokio::time::timeout(
                Duration::from_millis(100),
                AsyncReadExt::read(&mut body, &mut buf),
            )
            .await
            {
                got += n;
            }
            drop(body);
            let _ = responder.body(format!("gave up after {got}").as_bytes());
        });
    }
}

#[test]
fn a_read_cancelled_while_the_100_is_owed_with_async_read() {
    let runtime = runtime();
    let cases = [("/a", 0, "gave up after 0"), ("/b", 10, "gave up after 10")];
    cancelled_reads(GivesUp(runtime.handle().clone()), &cases);
}

/// A body read on a thread after its application answered, and the next
/// request's application, which refuses its body unread: `/drain` answers
/// at once and reads its body to its end on a thread (`read_to_end` makes
/// one more read after the last byte); `/read-late` reads its 5 bytes,
/// answers, and reads once more 300 ms later; `/refuse` refuses unread
/// after `State` ms.
struct ReadsAfterTheEnd;

impl Handler for ReadsAfterTheEnd {
    type State = (String, u64);

    fn head(&self, request: &Request<'_>) -> (String, u64) {
        request.stream_body();
        let ms = request.target().split_once('?').and_then(|(_, q)| q.parse().ok()).unwrap_or(0);
        (request.path().to_owned(), ms)
    }

    fn respond(&self, (path, ms): (String, u64), response: &mut Response<'_>) {
        let mut body = response.take_body().unwrap();
        match path.as_str() {
            "/drain" => {
                response.body(b"drained").unwrap();
                thread::spawn(move || body.read_to_end(&mut Vec::new()));
            }
            "/read-late" => {
                let responder = response.defer().unwrap();
                thread::spawn(move || {
                    let read = body.read_exact(&mut [0u8; 5]);
                    let _ = responder.body(format!("{read:?}").as_bytes());
                    thread::sleep(Duration::from_millis(300));
                    body.read(&mut [0u8; 8])
                });
            }
            _ => {
                let mut responder = response.defer().unwrap();
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(ms));
                    let _ = responder.status(falconet_server::Status::new(401).unwrap());
                    let _ = responder.body(b"no");
                    drop(body);
                });
            }
        }
    }
}

fn plain(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request =
        format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", body.len())
            .into_bytes();
    request.extend_from_slice(body);
    request
}

/// A read of a body after its end asked the connection's word for a 100:
/// by then the word was the next request's, whose application refused its
/// body unread, and its client got a 100 it must not get (the body then
/// uploaded for nothing, or, not sent, a 408 instead of the answer). The
/// read now looks whether the body is over, under the lock its hand-back
/// takes, before it asks.
#[test]
fn a_read_after_the_end_of_a_body_does_not_ask_for_the_next_requests_100() {
    let server = serve(options().io_timeout(Duration::from_millis(200)), ReadsAfterTheEnd);
    // The late read comes while the next request waits for its answer.
    let mut c = Client::connect(server.addr);
    short(&c, 5);
    c.send(&plain("/read-late", b"hello"));
    assert_eq!(c.reply().unwrap().text(), "Ok(())");
    c.send(&head("POST", "/refuse?700", "", 5));
    let reply = c.reply().unwrap();
    assert_eq!((reply.status, reply.closes()), (401, true), "{reply:?}");
    // Answered at once, the body drained on a thread while the next
    // request is already in (a race: each round is a chance).
    let mut spurious = Vec::new();
    for round in 0..30 {
        let mut c = Client::connect(server.addr);
        short(&c, 5);
        let mut both = plain("/drain", b"hello");
        both.extend_from_slice(&head("POST", "/refuse?50", "", 5));
        c.send(&both);
        assert_eq!(c.reply().unwrap().text(), "drained");
        let reply = c.reply().unwrap();
        if reply.status != 401 {
            spurious.push(format!("round {round}: {reply:?}"));
        }
    }
    assert!(spurious.is_empty(), "{spurious:#?}");
}
