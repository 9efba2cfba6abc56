//! A request's trailers end its `tower::Body` as a trailers frame, after
//! the last data, as hyper delivers them: a chunked HTTP/1.1 body's
//! trailer section, an HTTP/2 stream's trailing HEADERS (also after a
//! declared `content-length` is reached); a body without them ends with
//! its data, and `is_end_stream` holds until the trailers are taken.
#![cfg(feature = "tower")]

mod common;

use std::time::Duration;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::routing::post;
use bytes::Bytes;
use common::h2raw::{Raw, block, frames_until, req_with};
use falconet_server::Options;
use falconet_server::h2::frame::kind;
use http_body_util::BodyExt;

/// `POST /t` answers `"<body> | name=value; ..."` (or `| none`), from the
/// frames it collected.
fn app() -> Router {
    Router::new().route(
        "/t",
        post(|body: AxumBody| async move {
            let collected = match body.collect().await {
                Ok(collected) => collected,
                Err(error) => return format!("failed: {error}"),
            };
            let listed = match collected.trailers() {
                None => "none".to_string(),
                Some(map) => map
                    .iter()
                    .map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v.as_bytes())))
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            let data = collected.to_bytes();
            format!("{} | {listed}", String::from_utf8_lossy(&data))
        }),
    )
}

#[test]
fn http1_chunked_trailers_reach_the_service() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let mut client = common::Client::connect(server.addr);
    let head = b"POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    let cases: [(&[u8], &str); 3] = [
        (
            b"5\r\nhello\r\n0\r\nChecksum: c0ffee\r\nX-Count: 2\r\n\r\n",
            "hello | checksum=c0ffee; x-count=2",
        ),
        (b"5\r\nhello\r\n0\r\n\r\n", "hello | none"),
        (b"0\r\nA: 1\r\nA: 2\r\n\r\n", " | a=1; a=2"),
    ];
    for (body, expected) in cases {
        let mut request = head.to_vec();
        request.extend_from_slice(body);
        client.send(&request);
        assert_eq!(client.reply().unwrap().text(), expected);
    }
    // A sized body: no trailers, as before.
    client.send(b"POST /t HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.reply().unwrap().text(), "hello | none");
}

#[test]
fn http2_trailers_reach_the_service() {
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app());
    let mut raw = Raw::handshake(server.addr, &[]);
    let head = |length: Option<&str>| match length {
        Some(length) => req_with("POST", "/t", &[("content-length", length)]),
        None => req_with("POST", "/t", &[]),
    };
    let trailers = block(&[("grpc-timeout", "1S"), ("x-sum", "7")]);
    raw.headers(1, &head(None), false);
    raw.data(1, b"hello", false);
    raw.headers(1, &trailers, true);
    // The declared length is reached before the trailers come.
    raw.headers(3, &head(Some("5")), false);
    raw.data(3, b"hello", false);
    std::thread::sleep(Duration::from_millis(50));
    raw.headers(3, &trailers, true);
    // Ends with DATA: none.
    raw.headers(5, &head(Some("5")), false);
    raw.data(5, b"hello", true);
    // `content-length: 0` and no DATA, then trailers (the review's case).
    raw.headers(7, &head(Some("0")), false);
    std::thread::sleep(Duration::from_millis(50));
    raw.headers(7, &trailers, true);
    let mut bodies = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let ended = std::cell::Cell::new(0u8);
    let frames = frames_until(&mut raw, Duration::from_secs(10), |f| {
        if f.end_stream() && matches!(f.stream, 1 | 3 | 5 | 7) {
            ended.set(ended.get() | 1 << (f.stream / 2));
        }
        ended.get() == 0b1111
    });
    for f in frames.iter().filter(|f| f.kind == kind::DATA) {
        bodies[(f.stream / 2) as usize].extend_from_slice(&f.payload);
    }
    let texts: Vec<_> = bodies.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    assert_eq!(
        texts,
        [
            "hello | grpc-timeout=1S; x-sum=7",
            "hello | grpc-timeout=1S; x-sum=7",
            "hello | none",
            " | grpc-timeout=1S; x-sum=7"
        ]
    );
}

/// The frames one by one, through the `h2` crate as the client: data,
/// then the trailers, then the end; `is_end_stream` false until then.
#[test]
fn the_body_yields_data_then_trailers_then_ends() {
    if cfg!(falconet_tsan) {
        return; // tokio's I/O driver under TSan (tokio-rs/tokio#7299)
    }
    let (seen_tx, seen_rx) = std::sync::mpsc::channel::<Vec<String>>();
    let seen_tx = std::sync::Arc::new(std::sync::Mutex::new(seen_tx));
    let app = Router::new().route(
        "/t",
        post(move |body: AxumBody| {
            let tx = seen_tx.lock().unwrap().clone();
            async move {
                let mut body = body;
                let mut seen = Vec::new();
                loop {
                    let end = http_body::Body::is_end_stream(&body);
                    match body.frame().await {
                        None => {
                            seen.push(format!("end (is_end_stream {end})"));
                            break;
                        }
                        Some(Ok(frame)) if frame.is_data() => {
                            let data = frame.into_data().unwrap();
                            seen.push(format!("data {:?} (is_end_stream {end})", data));
                        }
                        Some(Ok(frame)) => {
                            let map = frame.into_trailers().unwrap();
                            seen.push(format!("trailers {} (is_end_stream {end})", map.len()));
                        }
                        Some(Err(error)) => {
                            seen.push(format!("error {error}"));
                            break;
                        }
                    }
                }
                let _ = tx.send(seen);
                "ok"
            }
        }),
    );
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app);
    let addr = server.addr;
    common::current_thread().block_on(async move {
        let mut send = common::h2_client(addr).await;
        let request = http::Request::post(format!("http://{addr}/t"))
            .header("content-length", "3")
            .body(())
            .unwrap();
        send = send.ready().await.unwrap();
        let (response, mut stream) = send.send_request(request, false).unwrap();
        stream.send_data(Bytes::from_static(b"abc"), false).unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-sum", http::HeaderValue::from_static("294"));
        stream.send_trailers(trailers).unwrap();
        let response =
            tokio::time::timeout(Duration::from_secs(10), response).await.unwrap().unwrap();
        assert_eq!(response.status(), 200);
    });
    let seen = seen_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        seen,
        [
            "data b\"abc\" (is_end_stream false)",
            "trailers 1 (is_end_stream false)",
            "end (is_end_stream true)"
        ]
    );
}
