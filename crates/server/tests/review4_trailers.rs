//! Fourth review, of f962117 (a tower body's trailers are sent): HTTP/2
//! framing under tiny windows, with CONTINUATION, many streams, resets,
//! the h2c upgrade and `Expect: 100-continue`; bodies that break the
//! http_body contract (trailers twice, data after trailers, empty
//! trailers, a lying size); HTTP/1.1 `TE` variants, pipelining, `HEAD`
//! and HTTP/1.0 keep-alive. Two failed before the fixes that came with
//! them: HTTP/1.0 with `TE: trailers` lost its keep-alive, and a second
//! trailers frame erased the first.
#![cfg(feature = "tower")]
mod common;

use std::io::{Read, Write};
use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::routing::get;
use bytes::Bytes;
use common::tbody::{Scripted, Step as S};
use falconet_server::Options;
use http::{HeaderMap, HeaderValue};

fn body(steps: Vec<S>, exact: Option<u64>) -> AxumBody {
    AxumBody::new(Scripted::new(steps, exact))
}

fn t(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
    let mut m = HeaderMap::new();
    for (n, v) in pairs {
        m.append(*n, HeaderValue::from_bytes(v).unwrap());
    }
    m
}

fn grpc() -> HeaderMap {
    t(&[("grpc-status", b"0"), ("grpc-message", b"ok")])
}

fn big(n: usize) -> Bytes {
    Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

fn app() -> Router {
    use S::*;
    Router::new()
        // 200 KB of body then trailers, at once / polled / from a task
        .route("/big-now", get(|| async { body(vec![Data(big(200_000)), Trailers(grpc())], None) }))
        .route(
            "/big-polled",
            get(|| async {
                body(
                    vec![Data(big(100_000)), Wait, Data(big(100_000)), Wait, Trailers(grpc())],
                    None,
                )
            }),
        )
        .route(
            "/big-task",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                body(vec![Data(big(100_000)), Wait, Data(big(100_000)), Trailers(grpc())], None)
            }),
        )
        .route(
            "/huge-trailers",
            get(|| async {
                let v = vec![b'v'; 40_000];
                body(
                    vec![
                        Data(Bytes::from_static(b"x")),
                        Trailers(t(&[("x-big", &v), ("grpc-status", b"0")])),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/huge-trailers-task",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                let v = vec![b'v'; 40_000];
                body(
                    vec![
                        Data(Bytes::from_static(b"x")),
                        Wait,
                        Trailers(t(&[("x-big", &v), ("grpc-status", b"0")])),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/empty-then-trailers",
            get(|| async {
                body(
                    vec![Data(Bytes::from_static(b"abc")), Data(Bytes::new()), Trailers(grpc())],
                    None,
                )
            }),
        )
        .route(
            "/trailers-then-data",
            get(|| async {
                body(
                    vec![
                        Data(Bytes::from_static(b"abc")),
                        Trailers(grpc()),
                        Data(Bytes::from_static(b"def")),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/trailers-then-data-polled",
            get(|| async {
                body(
                    vec![
                        Data(Bytes::from_static(b"abc")),
                        Wait,
                        Trailers(grpc()),
                        Wait,
                        Data(Bytes::from_static(b"def")),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/trailers-twice",
            get(|| async {
                body(
                    vec![
                        Data(Bytes::from_static(b"abc")),
                        Trailers(grpc()),
                        Trailers(t(&[("content-length", b"3")])),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/empty-trailers",
            get(|| async {
                body(vec![Data(Bytes::from_static(b"abc")), Trailers(HeaderMap::new())], None)
            }),
        )
        .route(
            "/obs-text",
            get(|| async {
                body(
                    vec![
                        Data(Bytes::from_static(b"abc")),
                        Trailers(t(&[("x-o", b"caf\xe9 \x80"), ("grpc-status", b"0")])),
                    ],
                    None,
                )
            }),
        )
        .route(
            "/lying-short",
            get(|| async {
                body(vec![Data(Bytes::from_static(b"abc")), Trailers(grpc())], Some(10))
            }),
        )
        .route(
            "/lying-long",
            get(|| async {
                body(vec![Data(Bytes::from_static(b"abcdefghijkl")), Trailers(grpc())], Some(5))
            }),
        )
        .route(
            "/no-content",
            get(|| async {
                http::Response::builder()
                    .status(204)
                    .body(body(vec![Trailers(grpc())], None))
                    .unwrap()
            }),
        )
        .route(
            "/no-content-task",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(2)).await;
                http::Response::builder()
                    .status(204)
                    .body(body(vec![Wait, Trailers(grpc())], None))
                    .unwrap()
            }),
        )
        .route(
            "/grpc",
            axum::routing::post(|| async {
                let mut msg = vec![0u8, 0, 0, 0, 5];
                msg.extend_from_slice(b"hello");
                http::Response::builder()
                    .header("content-type", "application/grpc")
                    .body(body(
                        vec![
                            Data(Bytes::from(msg)),
                            Wait,
                            Trailers(t(&[("grpc-status", b"0"), ("grpc-message", b"fine")])),
                        ],
                        None,
                    ))
                    .unwrap()
            }),
        )
        .route(
            "/ok",
            get(|| async {
                body(vec![Data(Bytes::from_static(b"hello")), Trailers(grpc())], None)
            }),
        )
        .route(
            "/seen-version",
            get(|req: http::Request<axum::body::Body>| async move {
                let v = format!("{:?}", req.version());
                body(vec![Data(Bytes::from(v)), Trailers(grpc())], None)
            }),
        )
}

async fn fetch(
    send: &h2::client::SendRequest<Bytes>,
    method: &str,
    path: &str,
) -> Result<(http::StatusCode, HeaderMap, Vec<u8>, Option<HeaderMap>), String> {
    let mut send = send.clone().ready().await.map_err(|e| e.to_string())?;
    let request =
        http::Request::builder().method(method).uri(format!("http://t{path}")).body(()).unwrap();
    let (response, _) = send.send_request(request, true).map_err(|e| e.to_string())?;
    tokio::time::timeout(Duration::from_secs(60), async {
        let response = response.await.map_err(|e| format!("{path}: {e}"))?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = response.into_body();
        let mut data = Vec::new();
        while let Some(piece) = body.data().await {
            let piece = piece.map_err(|e| format!("{path} data: {e}"))?;
            body.flow_control().release_capacity(piece.len()).unwrap();
            data.extend_from_slice(&piece);
        }
        let trailers = body.trailers().await.map_err(|e| format!("{path} trailers: {e}"))?;
        Ok((status, headers, data, trailers))
    })
    .await
    .map_err(|_| format!("{method} {path}: timeout"))?
}

fn h2_run<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(f)
}

/// Tiny client window (1 byte then released as read): data must all arrive
/// before the trailers.
#[test]
fn review4_h2_tiny_window_trailers_after_all_data() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    h2_run(async move {
        // (A window of 1 works too, but takes 15 s: 200,000 round trips.)
        for window in [100u32, 16_384] {
            let send = common::h2_client_window(addr, window).await;
            for path in ["/big-now", "/big-polled", "/big-task"] {
                let (_, _, data, trailers) = fetch(&send, "GET", path).await.unwrap();
                assert_eq!(data.len(), 200_000, "{path} window {window}");
                let mut expected = big(100_000).to_vec();
                expected.extend_from_slice(&big(100_000));
                if path == "/big-now" {
                    assert_eq!(data, big(200_000).to_vec());
                } else {
                    assert_eq!(data, expected, "{path}");
                }
                let tr = trailers.unwrap_or_else(|| panic!("{path} window {window}: no trailers"));
                assert_eq!(tr.get("grpc-status").unwrap(), "0");
            }
        }
    });
}

/// Many concurrent streams with trailers and a small window.
#[test]
fn review4_h2_many_streams() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    h2_run(async move {
        let send = common::h2_client_window(addr, 1000).await;
        let mut tasks = Vec::new();
        for i in 0..60 {
            let send = send.clone();
            let path = ["/big-now", "/big-polled", "/big-task", "/ok"][i % 4];
            tasks.push(tokio::spawn(async move { (path, fetch(&send, "GET", path).await) }));
        }
        for task in tasks {
            let (path, r) = task.await.unwrap();
            let (_, _, data, trailers) = r.unwrap();
            let want = if path == "/ok" { 5 } else { 200_000 };
            assert_eq!(data.len(), want, "{path}");
            assert!(trailers.is_some(), "{path}");
        }
    });
}

/// 40 KB trailers: HEADERS + CONTINUATION, read by the h2 client.
#[test]
fn review4_h2_huge_trailers() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    h2_run(async move {
        let send = common::h2_client(addr).await;
        for path in ["/huge-trailers", "/huge-trailers-task", "/huge-trailers"] {
            let (_, _, data, trailers) = fetch(&send, "GET", path).await.unwrap();
            assert_eq!(data, b"x");
            let tr = trailers.expect("trailers");
            assert_eq!(tr.get("x-big").unwrap().len(), 40_000);
            assert_eq!(tr.get("grpc-status").unwrap(), "0");
        }
        // and the connection still works after (HPACK state in sync)
        let (_, _, data, _) = fetch(&send, "GET", "/ok").await.unwrap();
        assert_eq!(data, b"hello");
    });
}

/// Bodies that break the http_body contract or stretch it.
const ODD: [&str; 6] = [
    "/empty-then-trailers",
    "/trailers-then-data",
    "/trailers-then-data-polled",
    "/trailers-twice",
    "/empty-trailers",
    "/obs-text",
];

/// Body contract oddities over HTTP/2: empty data frame then trailers,
/// trailers then data, trailers twice (the second filtered to nothing),
/// an empty trailers map, obs-text values, 204.
#[test]
fn review4_h2_oddities() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    h2_run(async move {
        let send = common::h2_client(addr).await;
        let mut report = Vec::new();
        let lying = ["/lying-short", "/lying-long", "/no-content", "/no-content-task"];
        for path in ODD.into_iter().chain(lying) {
            let r = fetch(&send, "GET", path).await;
            report.push(format!(
                "{path}: {:?}",
                r.as_ref().map(|(s, _, d, t)| (s, String::from_utf8_lossy(d).into_owned(), t))
            ));
        }
        // connection still usable
        let (_, _, data, _) = fetch(&send, "GET", "/ok").await.unwrap();
        assert_eq!(data, b"hello");
        for line in &report {
            eprintln!("{line}");
        }
        let get =
            |p: &str| report.iter().find(|l| l.starts_with(&format!("{p}:"))).unwrap().clone();
        assert!(
            get("/empty-then-trailers").contains("grpc-status"),
            "{}",
            get("/empty-then-trailers")
        );
        assert!(get("/obs-text").contains("x-o"), "{}", get("/obs-text"));
        // the first trailers should not be erased by a second, filtered one
        assert!(get("/trailers-twice").contains("grpc-status"), "{}", get("/trailers-twice"));
    });
}

fn raw(addr: std::net::SocketAddr, request: &str) -> String {
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let _ = socket.read_to_end(&mut reply);
    String::from_utf8_lossy(&reply).into_owned()
}

/// HTTP/1.0 keep-alive: TE: trailers must not change the framing
/// (trailers can't be sent over 1.0 anyway); with vs without TE.
#[test]
fn review4_http10_keepalive_with_te() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let two = |te: &str| {
        raw(
            server.addr,
            &format!(
                "GET /ok HTTP/1.0\r\nConnection: keep-alive\r\n{te}\r\n\
                 GET /ok HTTP/1.0\r\n\r\n"
            ),
        )
    };
    let without = two("");
    let with = two("TE: trailers\r\n");
    eprintln!("WITHOUT TE:\n{without}\n---\nWITH TE:\n{with}");
    assert_eq!(without.matches("HTTP/1.").count(), 2, "{without}");
    assert_eq!(
        with.matches("HTTP/1.").count(),
        2,
        "HTTP/1.0 keep-alive lost with TE: trailers: {with}"
    );
}

/// HTTP/1.1 TE variants.
#[test]
fn review4_http11_te_variants() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    for (te, want) in [
        ("TE: trailers\r\n", true),
        ("TE: Trailers\r\n", true),
        ("te: gzip, trailers\r\n", true),
        ("TE: gzip\r\nTE: trailers\r\n", true),
        ("TE: gzip;q=0.5\r\n", false),
        ("TE: trailersx\r\n", false),
        ("", false),
    ] {
        let r = raw(
            server.addr,
            &format!("GET /ok HTTP/1.1\r\nHost: t\r\n{te}Connection: close\r\n\r\n"),
        );
        assert_eq!(r.contains("grpc-status: 0\r\n"), want, "{te:?}: {r}");
        if want {
            assert!(r.ends_with("0\r\ngrpc-status: 0\r\ngrpc-message: ok\r\n\r\n"), "{te:?}: {r}");
        }
    }
}

/// HTTP/1.1 oddities with TE: trailers, pipelined then a plain request.
#[test]
fn review4_http11_oddities_pipelined() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    for path in ODD.into_iter().chain([
        "/big-now",
        "/big-polled",
        "/big-task",
        "/huge-trailers",
        "/huge-trailers-task",
        "/lying-short",
        "/lying-long",
        "/no-content",
        "/no-content-task",
    ]) {
        let r = raw(
            server.addr,
            &format!(
                "GET {path} HTTP/1.1\r\nHost: t\r\nTE: trailers\r\n\r\n\
                 GET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            ),
        );
        let n = r.matches("HTTP/1.1 ").count();
        let shown: String = r.chars().take(300).collect();
        let tail: String =
            r.chars().rev().take(200).collect::<Vec<_>>().into_iter().rev().collect();
        eprintln!("{path}: {} responses; head {shown:?} ... tail {tail:?}", n);
    }
}

/// h2c upgrade (HTTP/1.1 request answered on stream 1 over HTTP/2): does the
/// service see HTTP/1.1, and are trailers sent (HTTP/2 always can)?
#[test]
fn review4_h2c_upgrade_trailers() {
    use common::h2raw::*;
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let mut raw = Raw::connect(server.addr);
    raw.send(b"GET /seen-version HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n");
    raw.read_switch();
    let out = falconet_server_preface();
    raw.send(&out);
    let mut frames = Vec::new();
    loop {
        match raw.next(Duration::from_secs(3)) {
            Event::Frame(f) => {
                let end = f.stream == 1 && f.end_stream();
                frames.push((
                    f.kind,
                    f.flags,
                    f.stream,
                    String::from_utf8_lossy(&f.payload).into_owned(),
                ));
                if end {
                    break;
                }
            }
            other => {
                frames.push((255, 0, 0, format!("{other:?}")));
                break;
            }
        }
    }
    eprintln!("{frames:#?}");
    let headers_on_1 = frames.iter().filter(|f| f.0 == 1 && f.2 == 1).count();
    assert_eq!(headers_on_1, 2, "no trailers HEADERS on an upgraded stream: {frames:?}");
}

fn falconet_server_preface() -> Vec<u8> {
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    out
}

/// Client resets streams mid-body (window exhausted, trailers pending);
/// the connection must stay usable and the worker alive.
#[test]
fn review4_h2_reset_while_trailers_pending() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let addr = server.addr;
    h2_run(async move {
        let send = common::h2_client_window(addr, 1000).await;
        for path in ["/big-now", "/big-polled", "/big-task", "/huge-trailers-task"] {
            let mut s = send.clone().ready().await.unwrap();
            let req = http::Request::builder().uri(format!("http://t{path}")).body(()).unwrap();
            let (resp, _) = s.send_request(req, true).unwrap();
            let resp = resp.await.unwrap();
            let mut body = resp.into_body();
            let _ = body.data().await; // first piece, not released
            drop(body); // RST_STREAM(CANCEL)
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (_, _, data, tr) = fetch(&send, "GET", "/ok").await.unwrap();
        assert_eq!((data.as_slice(), tr.is_some()), (&b"hello"[..], true));
    });
}

/// HEAD over HTTP/1.1 with TE: trailers: sized head, no chunked framing.
#[test]
fn review4_http11_head_with_te() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let r = raw(
        server.addr,
        "HEAD /ok HTTP/1.1\r\nHost: t\r\nTE: trailers\r\n\r\nGET /ok HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    eprintln!("{r}");
    assert_eq!(r.matches("HTTP/1.1 200").count(), 2, "{r}");
    assert!(!r.contains("grpc-status"), "{r}");
}

/// Expect: 100-continue, body never sent, the service answers with
/// trailers at once (HTTP/1.1 with TE, and HTTP/2).
#[test]
fn review4_expect_continue_with_trailers() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let mut socket = std::net::TcpStream::connect(server.addr).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    socket
        .write_all(b"POST /grpc HTTP/1.1\r\nHost: t\r\nTE: trailers\r\nExpect: 100-continue\r\nContent-Length: 7\r\n\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = socket.read(&mut buf) {
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
        if reply.ends_with(b"grpc-message: fine\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    eprintln!("HTTP/1.1: {text:?}");
    assert!(!text.contains("100 Continue"), "{text}");
    assert!(text.ends_with("0\r\ngrpc-status: 0\r\ngrpc-message: fine\r\n\r\n"), "{text}");
    let addr = server.addr;
    h2_run(async move {
        let send = common::h2_client(addr).await;
        let mut s = send.clone().ready().await.unwrap();
        let req = http::Request::builder()
            .method("POST")
            .uri("http://t/grpc")
            .header("expect", "100-continue")
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        let (resp, _stream) = s.send_request(req, false).unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(3), resp).await.unwrap().unwrap();
        let mut body = resp.into_body();
        let mut data = Vec::new();
        while let Some(p) = body.data().await {
            data.extend_from_slice(&p.unwrap());
        }
        let tr =
            tokio::time::timeout(Duration::from_secs(3), body.trailers()).await.unwrap().unwrap();
        eprintln!("HTTP/2: {data:?} {tr:?}");
        assert_eq!(tr.unwrap().get("grpc-status").unwrap(), "0");
    });
}
