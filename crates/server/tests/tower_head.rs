//! HEAD through the tower path against GET: in step over HTTP/1.1, HTTP/1.0
//! (keep-alive kept) and HTTP/2; bodies staggered, over 1 MiB, 204 and 304.
#![cfg(feature = "tower")]

mod common;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::Read;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::routing::get;
use bytes::Bytes;
use common::{Client, serve};
use falconet_server::Options;
use falconet_server::tower::TowerHandler;
use http_body::{Frame, SizeHint};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// A body of unknown size whose frames are all ready at once (a
/// `Body::from_stream` of ready items, say), or each pending once.
struct Pieces {
    left: VecDeque<&'static [u8]>,
    stagger: bool,
    pending: bool,
}

impl Pieces {
    fn new(pieces: &[&'static [u8]], stagger: bool) -> Self {
        Self { left: pieces.iter().copied().collect(), stagger, pending: false }
    }
}

impl http_body::Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.stagger && !self.pending {
            self.pending = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.pending = false;
        Poll::Ready(self.left.pop_front().map(|p| Ok(Frame::data(Bytes::from_static(p)))))
    }
    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

fn app() -> Router {
    Router::new()
        .route(
            "/ready-pieces",
            get(|| async { AxumBody::new(Pieces::new(&[b"one ", b"two"], false)) }),
        )
        .route(
            "/slow-pieces",
            get(|| async { AxumBody::new(Pieces::new(&[b"one ", b"two"], true)) }),
        )
        .route(
            // Answered later, by a task: the future is pending at first.
            "/later-pieces",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                AxumBody::new(Pieces::new(&[b"one ", b"two"], false))
            }),
        )
        .route("/big", get(|| async { vec![b'x'; 2 << 20] }))
        .route("/small", get(|| async { "hello" }))
        .route(
            "/small-later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                "hello"
            }),
        )
        .route("/empty", get(|| async { "" }))
        .route("/no-content", get(|| async { axum::http::StatusCode::NO_CONTENT }))
        .route(
            "/not-modified",
            get(|| async {
                (axum::http::StatusCode::NOT_MODIFIED, AxumBody::new(Pieces::new(&[], true)))
            }),
        )
}

fn head_then_get(client: &mut Client, path: &str) -> (common::Reply, common::Reply) {
    client.send(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    let head = client.reply_to(true).unwrap();
    let get = client.get(path);
    (head, get)
}

/// RFC 9110 §9.3.2: HEAD SHOULD carry GET's fields, but MAY leave out
/// those known only while generating the content. axum empties a HEAD
/// body of unknown size without a length, so falconet cannot tell whether
/// GET's streams or is empty: HEAD gets neither framing field (as hyper
/// sends it), never a false `Content-Length: 0` or `chunked`, and the
/// connection stays in step. Polled on the worker (the body is pending at
/// first).
#[test]
fn head_of_a_staggered_body_has_no_framing_field_over_http11() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for _ in 0..2 {
        // Twice, to be sure nothing (no 0\r\n\r\n) trailed the HEAD.
        let (head, get) = head_then_get(&mut client, "/slow-pieces");
        assert_eq!((head.status, get.text().as_str()), (200, "one two"));
        assert_eq!(get.header("transfer-encoding"), Some("chunked"));
        assert_eq!(unframed(&head), (None, None), "{head:?}");
    }
}

/// The same when the service answers later (a task writes the answer, not
/// the worker).
#[test]
fn head_answered_later_has_no_framing_field() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for _ in 0..2 {
        let (head, get) = head_then_get(&mut client, "/later-pieces");
        assert_eq!(get.text(), "one two");
        assert_eq!(head.status, 200);
        assert_eq!(unframed(&head), (None, None), "{head:?}");
    }
}

/// axum's `404` fallback is not emptied for HEAD and has no length: GET
/// gets `Content-Length: 0`, so HEAD must not say `chunked` (RFC 9112
/// §6.1: a HEAD response's Transfer-Encoding is what GET would have
/// applied). Answered inline, on the worker.
#[test]
fn head_of_axums_404_is_not_chunked() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for _ in 0..2 {
        let (head, get) = head_then_get(&mut client, "/nowhere");
        assert_eq!((head.status, get.status), (404, 404));
        assert_eq!(get.header("content-length"), Some("0"), "{get:?}");
        assert_eq!(unframed(&head), (None, None), "{head:?}");
    }
    assert_eq!(client.get("/ready-pieces").text(), "one two");
}

/// A reply's framing fields.
fn unframed(reply: &common::Reply) -> (Option<&str>, Option<&str>) {
    (reply.header("content-length"), reply.header("transfer-encoding"))
}

/// > 1 MiB: the service's content-length for HEAD vs GET's framing.
#[test]
fn head_of_a_body_over_one_mib() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    let (head, get) = head_then_get(&mut client, "/big");
    assert_eq!(get.body.len(), 2 << 20);
    assert_eq!(
        (head.header("content-length"), head.header("transfer-encoding")),
        (get.header("content-length"), get.header("transfer-encoding")),
        "HEAD {head:?}\nGET {:?}",
        get.headers
    );
    assert!(client.get("/ready-pieces").text() == "one two");
}

/// 204 and 304 to HEAD: no framing field, the connection stays usable.
#[test]
fn head_204_and_304() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for path in ["/no-content", "/not-modified"] {
        let (head, get) = head_then_get(&mut client, path);
        assert!(head.status == 204 || head.status == 304, "{head:?}");
        assert_eq!(head.header("transfer-encoding"), None, "{path} {head:?}");
        assert_eq!(get.header("transfer-encoding"), None, "{path} {get:?}");
        assert!(!head.closes() && !get.closes());
    }
    assert_eq!(client.get("/ready-pieces").text(), "one two");
}

/// HTTP/1.0 HEAD with keep-alive, of a staggered body: there is no body to
/// delimit, so nothing needs the close (before 6a5d0f7 the connection
/// stayed open).
#[test]
fn http10_head_keep_alive_of_a_body_of_unknown_length() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    client.stream().set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    client.send(b"HEAD /slow-pieces HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n\r\n");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match client.reader.get_mut().read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.windows(4).any(|w| w == b"\r\n\r\n") {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(!text.contains("Connection: close"), "HTTP/1.0 HEAD closed the connection: {text}");
}

/// `method path` over HTTP/2: the response's fields and its whole body.
async fn fetch(
    send: &h2::client::SendRequest<Bytes>,
    method: &str,
    path: &str,
) -> (http::HeaderMap, Vec<u8>) {
    let mut send = send.clone().ready().await.unwrap();
    let req =
        http::Request::builder().method(method).uri(format!("http://t{path}")).body(()).unwrap();
    let (response, _) = send.send_request(req, true).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no response"))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let headers = response.headers().clone();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(piece) = body.data().await {
            let piece = piece.unwrap();
            body.flow_control().release_capacity(piece.len()).unwrap();
            bytes.extend_from_slice(&piece);
        }
    })
    .await;
    assert!(read.is_ok(), "{method} {path}: the stream never ended");
    (headers, bytes)
}

/// HEAD over HTTP/2 (prior knowledge) of a body of unknown length: the
/// stream ends with no DATA bytes and no content-length; the connection
/// serves the next request.
#[test]
fn head_over_h2_of_a_body_of_unknown_length() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let send = common::h2_client(addr).await;
        for (method, path) in [
            ("HEAD", "/slow-pieces"),
            ("HEAD", "/ready-pieces"),
            ("HEAD", "/later-pieces"),
            ("HEAD", "/big"),
            ("HEAD", "/no-content"),
            ("GET", "/slow-pieces"),
        ] {
            let (headers, bytes) = fetch(&send, method, path).await;
            if method == "HEAD" {
                assert!(bytes.is_empty(), "{method} {path}: {} body bytes", bytes.len());
                if path != "/no-content" {
                    assert_ne!(
                        headers.get("content-length").map(|v| v.as_bytes()),
                        Some(&b"0"[..]),
                        "{method} {path}: {headers:?}"
                    );
                }
            } else {
                assert_eq!(bytes, b"one two");
            }
        }
    });
}

/// HEAD of a body of known size, answered at once or after an `.await`,
/// small, empty or past 1 MiB: GET's `Content-Length` and no body, over
/// HTTP/1.1 and HTTP/2 (RFC 9110 §9.3.2, §8.6; RFC 9113 §8.1.1).
#[test]
fn head_of_a_sized_body_has_gets_length() {
    let runtime = runtime();
    let server =
        serve(Options::new().workers(1), TowerHandler::new(app(), runtime.handle().clone()));
    let cases = [("/small", "5"), ("/small-later", "5"), ("/empty", "0"), ("/big", "2097152")];
    let mut client = Client::connect(server.addr);
    for (path, length) in cases {
        let (head, get) = head_then_get(&mut client, path);
        assert_eq!(head.header("content-length"), Some(length), "HEAD {path}: {head:?}");
        assert_eq!(head.header("transfer-encoding"), None, "HEAD {path}: {head:?}");
        assert!(head.body.is_empty(), "HEAD {path}: {head:?}");
        assert_eq!(get.header("content-length"), Some(length), "GET {path}: {get:?}");
    }
    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let send = common::h2_client(addr).await;
        for (path, length) in cases {
            let (headers, bytes) = fetch(&send, "HEAD", path).await;
            assert!(bytes.is_empty(), "HEAD {path}: {} body bytes", bytes.len());
            assert_eq!(
                headers.get("content-length").map(|v| v.as_bytes()),
                Some(length.as_bytes()),
                "HEAD {path}: {headers:?}"
            );
        }
    });
}
