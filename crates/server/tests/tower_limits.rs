//! `max_body` through the tower path, as `TowerHandler`'s docs state it: a
//! `Content-Length` over it is `413` before the service runs; a chunked
//! body that grows past it fails in the service's read with the
//! ecosystem's `LengthLimitError`, which axum's buffering extractors
//! answer `413`, as for their own limit (`DefaultBodyLimit`).
#![cfg(feature = "tower")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use common::serve;
use falconet_server::Options;
use falconet_server::tower::TowerHandler;

const MAX_BODY: u64 = 4096;

fn app(calls: Arc<AtomicUsize>) -> Router {
    let counted = calls.clone();
    Router::new()
        .route(
            "/bytes",
            post(move |body: Bytes| {
                counted.fetch_add(1, Ordering::Relaxed);
                async move { format!("{} bytes", body.len()) }
            }),
        )
        .route(
            "/limited",
            post(move |body: Bytes| {
                calls.fetch_add(1, Ordering::Relaxed);
                async move { format!("{} bytes", body.len()) }
            })
            .layer(DefaultBodyLimit::max(MAX_BODY as usize - 1)),
        )
}

/// Sends `request` and reads until the server closes (or 10 s pass).
fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request).unwrap();
    let mut reply = Vec::new();
    let _ = stream.read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

fn chunked(path: &str, total: usize) -> Vec<u8> {
    let mut request =
        format!("POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
            .into_bytes();
    for _ in 0..total / 1000 {
        request.extend_from_slice(format!("{:x}\r\n", 1000).as_bytes());
        request.extend_from_slice(&[b'x'; 1000]);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    request
}

#[test]
fn a_content_length_over_max_body_is_413_before_the_service() {
    let runtime = common::runtime();
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = TowerHandler::new(app(calls.clone()), runtime.handle().clone());
    let server = serve(Options::new().workers(1).max_body(MAX_BODY), handler);
    for path in ["/bytes", "/limited"] {
        let over = MAX_BODY + 1;
        let request = format!("POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {over}\r\n\r\n");
        let reply = exchange(server.addr, request.as_bytes());
        assert!(reply.starts_with("HTTP/1.1 413 "), "{path}: {reply}");
    }
    assert_eq!(calls.load(Ordering::Relaxed), 0, "the service never ran");
    // At the limit it is served.
    let request = format!(
        "POST /bytes HTTP/1.1\r\nHost: t\r\nContent-Length: {MAX_BODY}\r\nConnection: close\r\n\r\n{}",
        "x".repeat(MAX_BODY as usize)
    );
    let reply = exchange(server.addr, request.as_bytes());
    assert!(reply.starts_with("HTTP/1.1 200 ") && reply.ends_with("4096 bytes"), "{reply}");
}

#[test]
fn a_chunked_body_over_max_body_is_413_from_axums_extractor() {
    let runtime = common::runtime();
    let calls = Arc::new(AtomicUsize::new(0));
    let handler = TowerHandler::new(app(calls.clone()), runtime.handle().clone());
    let server = serve(Options::new().workers(1).max_body(MAX_BODY), handler);
    // Over falconet's limit (one 1000-byte chunk crosses both limits at
    // once: falconet's read fails first), and a single chunk far past it.
    for request in [chunked("/bytes", 8000), chunked("/limited", 8000), {
        let mut one =
            b"POST /bytes HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        one.extend_from_slice(b"ffffff\r\nxx");
        one
    }] {
        let reply = exchange(server.addr, &request);
        assert!(reply.starts_with("HTTP/1.1 413 "), "{reply}");
        // The connection closes, so the rest of the body is never read as
        // a request.
        assert_eq!(reply.matches("HTTP/1.1 ").count(), 1, "{reply}");
    }
    // axum's extractor refused each body: the handlers never ran.
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    // Within it: served.
    let mut request = chunked("/bytes", 4000);
    request.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let reply = exchange(server.addr, &request);
    assert!(reply.starts_with("HTTP/1.1 200 ") && reply.contains("4000 bytes"), "{reply}");
    assert!(reply.contains("HTTP/1.1 404 "), "the connection went on: {reply}");
}

/// The error itself, as a service that reads the body by hand sees it:
/// `LengthLimitError` past `max_body`, the `io::Error` otherwise.
#[test]
fn the_body_error_past_max_body_is_a_length_limit_error() {
    use http_body_util::BodyExt;
    let runtime = common::runtime();
    let app = Router::new().route(
        "/any",
        post(|body: axum::body::Body| async move {
            match body.collect().await {
                Ok(_) => "whole".to_string(),
                Err(error) => {
                    let error = error.into_inner();
                    if error.is::<http_body_util::LengthLimitError>() {
                        "limit".to_string()
                    } else if let Some(io) = error.downcast_ref::<std::io::Error>() {
                        format!("io {:?}", io.kind())
                    } else {
                        format!("other {error}")
                    }
                }
            }
        }),
    );
    let server = serve(
        Options::new().workers(1).max_body(MAX_BODY),
        TowerHandler::new(app, runtime.handle().clone()),
    );
    let reply = exchange(server.addr, &chunked("/any", 8000));
    assert!(reply.ends_with("\r\n\r\nlimit"), "{reply}");
    let malformed = b"POST /any HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
    let reply = exchange(server.addr, malformed);
    assert!(reply.ends_with("\r\n\r\nio InvalidData"), "{reply}");
    let mut request = chunked("/any", 4000);
    request.extend_from_slice(b"GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let reply = exchange(server.addr, &request);
    assert!(reply.contains("\r\n\r\nwhole"), "{reply}");
}
