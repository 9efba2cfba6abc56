//! A tower service's response trailers (a gRPC service's `grpc-status`):
//! sent as a HEADERS frame ending the stream over HTTP/2 (RFC 9113 §8.1),
//! in the last chunk over HTTP/1.1 when the request's `TE` lists
//! `trailers` (RFC 9112 §7.1.2), on each of the three paths an answer
//! takes (written at once, polled by the worker, written by a task); the
//! fields trailers may not carry are left out (RFC 9110 §6.5.1).
#![cfg(feature = "tower")]

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::routing::get;
use bytes::Bytes;
use common::tbody::{Scripted, Step};
use falconet_server::Options;
use http::{HeaderMap, HeaderValue};

fn trailers() -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert("grpc-status", HeaderValue::from_static("0"));
    map.insert("grpc-message", HeaderValue::from_static("all good"));
    // Not for trailers (RFC 9110 §6.5.1, RFC 9113 §8.2.2): left out.
    map.insert("content-length", HeaderValue::from_static("99"));
    map.insert("connection", HeaderValue::from_static("close"));
    map.insert("transfer-encoding", HeaderValue::from_static("chunked"));
    map
}

/// What each route's body plays.
#[derive(Clone, Copy)]
enum Play {
    Data(&'static [u8]),
    Trailers,
    Wait,
}

fn body(plays: &[Play], exact: Option<u64>) -> AxumBody {
    let steps = plays
        .iter()
        .map(|play| match *play {
            Play::Data(data) => Step::Data(Bytes::from_static(data)),
            Play::Trailers => Step::Trailers(trailers()),
            Play::Wait => Step::Wait,
        })
        .collect();
    AxumBody::new(Scripted::new(steps, exact))
}

/// Routes, each `(path, body)`: the answer at once (the worker writes it
/// inline), after the body waits (the worker polls it), after the
/// service's future waits (a task writes it), with trailers only, and of
/// an exact size.
fn app() -> Router {
    use Play::*;
    Router::new()
        .route("/now", get(|| async { body(&[Data(b"hello "), Data(b"world"), Trailers], None) }))
        .route(
            "/polled",
            get(|| async { body(&[Data(b"hello "), Wait, Data(b"world"), Wait, Trailers], None) }),
        )
        .route(
            "/task",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                body(&[Data(b"hello "), Data(b"world"), Wait, Trailers], None)
            }),
        )
        .route(
            "/task-ready",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                body(&[Data(b"hello "), Data(b"world"), Trailers], None)
            }),
        )
        .route("/only", get(|| async { body(&[Trailers], None) }))
        .route(
            "/only-later",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                body(&[Wait, Trailers], None)
            }),
        )
        .route(
            "/exact",
            get(|| async { body(&[Data(b"hello "), Data(b"world"), Trailers], Some(11)) }),
        )
        .route("/plain", get(|| async { "hello world" }))
}

const WITH_BODY: [&str; 5] = ["/now", "/polled", "/task", "/task-ready", "/exact"];
const ONLY: [&str; 2] = ["/only", "/only-later"];

/// Over HTTP/2 every path sends the trailers, after the whole body, and
/// leaves out the fields trailers may not carry; a body without them ends
/// with its last DATA as before.
#[test]
fn http2_sends_trailers_on_every_path() {
    if cfg!(falconet_tsan) {
        return; // tokio's I/O driver under TSan (tokio-rs/tokio#7299)
    }
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let send = common::h2_client(addr).await;
        for path in WITH_BODY.iter().chain(&ONLY).chain(&["/plain"]) {
            let (headers, data, trailers) = fetch(&send, "GET", path).await;
            let expected_body: &[u8] = if ONLY.contains(path) { b"" } else { b"hello world" };
            assert_eq!(data, expected_body, "{path}");
            if *path == "/plain" {
                assert_eq!(trailers, None, "{path}");
                continue;
            }
            let trailers = trailers.unwrap_or_else(|| panic!("{path}: no trailers"));
            assert_eq!(
                trailers.get("grpc-status").map(|v| v.as_bytes()),
                Some(&b"0"[..]),
                "{path}"
            );
            assert_eq!(
                trailers.get("grpc-message").map(|v| v.as_bytes()),
                Some(&b"all good"[..]),
                "{path}"
            );
            for name in ["content-length", "connection", "transfer-encoding"] {
                assert!(trailers.get(name).is_none(), "{path}: {name} in {trailers:?}");
            }
            if *path == "/exact" {
                assert_eq!(headers.get("content-length").map(|v| v.as_bytes()), Some(&b"11"[..]));
            }
        }
        // HEAD: no body, so nothing trails it.
        for path in ["/now", "/task"] {
            let (_, data, trailers) = fetch(&send, "HEAD", path).await;
            assert_eq!((data.len(), trailers), (0, None), "HEAD {path}");
        }
    });
}

/// The frames themselves, read by a client of our own (std sockets, so
/// this half runs under TSan too): DATA without END_STREAM, then one
/// HEADERS with END_STREAM and the trailer fields, on every path.
#[test]
fn http2_frames_end_with_the_trailers() {
    use common::h2raw::{Event, Raw, req};
    use falconet_server::h2::frame::kind;
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let mut raw = Raw::handshake(server.addr, &[]);
    for (i, path) in WITH_BODY.iter().chain(&ONLY).enumerate() {
        let stream = 1 + 2 * i as u32;
        raw.headers(stream, &req("GET", path), true);
        let (mut blocks, mut data) = (Vec::new(), Vec::new());
        loop {
            let f = match raw.next(Duration::from_secs(5)) {
                Event::Frame(f) => f,
                other => panic!("{path}: {other:?}"),
            };
            if f.stream != stream {
                continue;
            }
            let end = f.end_stream();
            match f.kind {
                kind::DATA => {
                    assert!(!end, "{path}: END_STREAM on DATA, before the trailers");
                    data.extend_from_slice(&f.payload);
                }
                kind::HEADERS => {
                    let mut fields = Vec::new();
                    raw.decoder
                        .decode(&f.payload, |field| {
                            fields.push(format!(
                                "{}: {}",
                                String::from_utf8_lossy(field.name),
                                String::from_utf8_lossy(field.value)
                            ));
                        })
                        .unwrap();
                    blocks.push(fields);
                }
                other => panic!("{path}: frame type {other}"),
            }
            if end {
                break;
            }
        }
        let body: &[u8] = if ONLY.contains(path) { b"" } else { b"hello world" };
        assert_eq!(data, body, "{path}");
        assert_eq!(blocks.len(), 2, "{path}: {blocks:?}");
        assert_eq!(blocks[1], ["grpc-status: 0", "grpc-message: all good"], "{path}");
    }
}

/// `method path` over HTTP/2: the head's fields, the body, the trailers.
async fn fetch(
    send: &h2::client::SendRequest<Bytes>,
    method: &str,
    path: &str,
) -> (HeaderMap, Vec<u8>, Option<HeaderMap>) {
    let mut send = send.clone().ready().await.unwrap();
    let request =
        http::Request::builder().method(method).uri(format!("http://t{path}")).body(()).unwrap();
    let (response, _) = send.send_request(request, true).unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        let response = response.await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let headers = response.headers().clone();
        let mut body = response.into_body();
        let mut data = Vec::new();
        while let Some(piece) = body.data().await {
            let piece = piece.unwrap();
            body.flow_control().release_capacity(piece.len()).unwrap();
            data.extend_from_slice(&piece);
        }
        let trailers = body.trailers().await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        (headers, data, trailers)
    })
    .await
    .unwrap_or_else(|_| panic!("{method} {path}: no whole response in 5 s"))
}

/// `request` on a fresh connection, read to its close.
fn raw(addr: std::net::SocketAddr, request: &str) -> String {
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    socket.read_to_end(&mut reply).unwrap();
    String::from_utf8(reply).unwrap()
}

/// Over HTTP/1.1 a client that says `TE: trailers` gets them in the last
/// chunk; one that does not gets the body alone (as from hyper). A sized
/// body (`Content-Length`) cannot carry them, nor HTTP/1.0's.
#[test]
fn http11_sends_trailers_when_asked() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    for path in WITH_BODY.iter().chain(&ONLY) {
        let asked = raw(
            server.addr,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\nTE: trailers\r\nConnection: close, TE\r\n\r\n"
            ),
        );
        let (head, body) = asked.split_once("\r\n\r\n").unwrap();
        let head = head.to_ascii_lowercase();
        if *path == "/exact" {
            // Sized: no room for trailers.
            assert!(head.contains("content-length: 11"), "{path}: {asked}");
            assert_eq!(body, "hello world", "{path}: {asked}");
            continue;
        }
        assert!(head.contains("transfer-encoding: chunked"), "{path}: {asked}");
        if ONLY.contains(path) {
            assert_eq!(body, "0\r\ngrpc-status: 0\r\ngrpc-message: all good\r\n\r\n", "{path}");
        } else {
            // The pieces may come in other chunks; the end is the same.
            let end = "0\r\ngrpc-status: 0\r\ngrpc-message: all good\r\n\r\n";
            assert!(body.ends_with(end), "{path}: {asked}");
            assert_eq!(dechunk(body), "hello world", "{path}: {asked}");
        }
        let not_asked = raw(
            server.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
        );
        assert!(!not_asked.contains("grpc-status"), "{path}: {not_asked}");
        let old = raw(server.addr, &format!("GET {path} HTTP/1.0\r\nTE: trailers\r\n\r\n"));
        assert!(!old.contains("grpc-status"), "{path}: {old}");
    }
}

/// A chunked body's data.
fn dechunk(mut body: &str) -> String {
    let mut data = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            return data;
        }
        data.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

/// Pipelined behind an answer with trailers, the next request is answered
/// whole: the trailers end the first body where the client expects it.
#[test]
fn http11_trailers_then_the_next_request() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    for path in ["/now", "/polled", "/task"] {
        let reply = raw(
            server.addr,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\nTE: trailers\r\n\r\n\
                 GET /plain HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            ),
        );
        let end = "0\r\ngrpc-status: 0\r\ngrpc-message: all good\r\n\r\nHTTP/1.1 200 OK\r\n";
        assert!(reply.contains(end), "{path}: {reply}");
        assert!(reply.ends_with("\r\n\r\nhello world"), "{path}: {reply}");
    }
}
