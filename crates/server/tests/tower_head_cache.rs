//! The per-thread `HeadCache` of the tower path (`tower/head.rs`), pushed past
//! its 4 KiB chunk: long targets and values, many and duplicate fields,
//! values a service keeps across requests, HTTP/1.1 and HTTP/2 through one
//! worker, heads `http` refuses, panics, answers with many fields.
#![cfg(feature = "tower")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::routing::get;
use bytes::Bytes;
use common::{Client, serve};
use falconet_server::Options;
use falconet_server::tower::TowerHandler;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// One worker so every request shares one thread's cache; the largest head.
fn one_worker() -> Options {
    Options::new().workers(1).max_head(60 * 1024).max_request_line(60 * 1024).max_headers(256)
}

/// `count` response fields `x-out-N: leak`.
fn out_fields(count: usize) -> HeaderMap {
    let mut map = HeaderMap::new();
    for i in 0..count {
        let name = http::HeaderName::from_bytes(format!("x-out-{i}").as_bytes()).unwrap();
        map.append(name, HeaderValue::from_static("leak"));
    }
    map
}

/// "uri\nname=value\n..." of a request, in order.
fn dump(uri: &Uri, headers: &HeaderMap) -> String {
    let mut out = format!("{uri}\n");
    for (name, value) in headers {
        out.push_str(name.as_str());
        out.push('=');
        out.push_str(&String::from_utf8_lossy(value.as_bytes()));
        out.push('\n');
    }
    out
}

type Kept = Arc<Mutex<Vec<(Uri, HeaderMap, String)>>>;

fn keeping_app(kept: Kept) -> Router {
    Router::new()
        .route(
            "/{*rest}",
            get(move |uri: Uri, headers: HeaderMap| {
                let text = dump(&uri, &headers);
                kept.lock().unwrap().push((uri, headers, text.clone()));
                async move { text }
            }),
        )
        .route(
            "/many-out",
            // 100 response fields: more than the recycled map may hold.
            get(|| async { (out_fields(100), "many") }),
        )
        .route("/some-out", get(|| async { (out_fields(40), "some") }))
}

/// A request with a target of `target_len` bytes and `fields` fields
/// (duplicates among them) whose values are `value_len` long, all
/// depending on `n`.
fn request(n: usize, target_len: usize, fields: usize, value_len: usize) -> (Vec<u8>, String) {
    let fill = |len: usize, salt: usize| -> String {
        (0..len).map(|i| (b'a' + ((i * 7 + n * 13 + salt) % 26) as u8) as char).collect()
    };
    let path = format!("/r{n}/{}", fill(target_len, 1));
    let mut head = format!("GET {path}?q={n} HTTP/1.1\r\nHost: h{n}\r\n");
    let mut expect = format!("{path}?q={n}\nhost=h{n}\n");
    for f in 0..fields {
        // Every third field repeats the name of the one before.
        let name = format!("x-f{}", f - usize::from(f % 3 == 2));
        let value = format!("{n}-{f}-{}", fill(value_len, f));
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    // The expected dump follows HeaderMap's order: by name in first-seen
    // order, duplicates together.
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<Vec<String>> = Vec::new();
    for f in 0..fields {
        let name = format!("x-f{}", f - usize::from(f % 3 == 2));
        let value = format!("{n}-{f}-{}", fill(value_len, f));
        match names.iter().position(|x| *x == name) {
            Some(i) => values[i].push(value),
            None => {
                names.push(name);
                values.push(vec![value]);
            }
        }
    }
    for (name, vs) in names.iter().zip(&values) {
        for v in vs {
            expect.push_str(&format!("{name}={v}\n"));
        }
    }
    head.push_str("\r\n");
    (head.into_bytes(), expect)
}

/// Targets and values up to ~50 KiB (far beyond the 4 KiB chunk), many
/// and duplicate fields, all kept by the service while later requests
/// reuse the cache; answers with 100 and 40 response fields interleaved
/// (the second one's map is recycled into the next request's head).
#[test]
fn long_and_many_fields_kept_across_requests_stay_intact() {
    let kept = Kept::default();
    let runtime = runtime();
    let server =
        serve(one_worker(), TowerHandler::new(keeping_app(kept.clone()), runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    let shapes: &[(usize, usize, usize)] = &[
        (10, 3, 10),
        (5000, 2, 10),
        (10, 2, 5000),
        (40_000, 1, 10),
        (10, 1, 50_000),
        (100, 200, 20),
        (3000, 10, 3000),
        (4090, 1, 4090),
        (0, 250, 0),
    ];
    let mut expected = Vec::new();
    for n in 0..90 {
        let (t, f, v) = shapes[n % shapes.len()];
        let (bytes, expect) = request(n, t, f, v);
        client.send(&bytes);
        let reply = client.reply().unwrap();
        assert_eq!(reply.status, 200, "request {n} ({t}, {f}, {v})");
        assert_eq!(reply.text(), expect, "request {n} ({t}, {f}, {v})");
        expected.push(expect);
        // Responses with many fields between requests.
        let other = if n % 2 == 0 { "/many-out" } else { "/some-out" };
        let reply = client.get(other);
        assert_eq!(reply.status, 200);
    }
    let kept = kept.lock().unwrap();
    let ours: Vec<_> = kept.iter().filter(|(uri, _, _)| uri.path().starts_with("/r")).collect();
    assert_eq!(ours.len(), expected.len());
    for (i, ((uri, headers, _), want)) in ours.iter().zip(&expected).enumerate() {
        assert_eq!(&dump(uri, headers), want, "kept request {i} changed");
    }
    for (uri, headers, text) in kept.iter() {
        assert!(!headers.contains_key("x-out-0"), "a response field leaked into {uri}");
        assert_eq!(&dump(uri, headers), text);
    }
}

/// HTTP/1.1 and HTTP/2 requests through one worker's cache, interleaved,
/// the service keeping everything.
#[test]
fn h1_and_h2_share_the_cache_without_mixing() {
    let kept = Kept::default();
    let runtime = runtime();
    let server =
        serve(one_worker(), TowerHandler::new(keeping_app(kept.clone()), runtime.handle().clone()));
    let addr = server.addr;
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    client_rt.block_on(async move {
        let send = common::h2_client(addr).await;
        let mut h1 = Client::connect(addr);
        for n in 0..40 {
            let value_len = [5, 3000, 9000][n % 3];
            let value: String =
                (0..value_len).map(|i| (b'a' + ((i + n) % 26) as u8) as char).collect();
            let mut send = send.clone().ready().await.unwrap();
            let req = http::Request::builder()
                .uri(format!("http://a{n}.example/h2/{n}?{value}"))
                .header("x-v", &value)
                .header("x-dup", "1")
                .header("x-dup", format!("2-{n}"))
                .body(())
                .unwrap();
            let (response, _) = send.send_request(req, true).unwrap();
            let response =
                tokio::time::timeout(Duration::from_secs(5), response).await.unwrap().unwrap();
            assert_eq!(response.status(), 200, "h2 request {n}");
            let mut body = response.into_body();
            let mut text = Vec::new();
            while let Some(piece) = body.data().await {
                let piece = piece.unwrap();
                body.flow_control().release_capacity(piece.len()).unwrap();
                text.extend_from_slice(&piece);
            }
            let text = String::from_utf8(text).unwrap();
            let want =
                format!("http://a{n}.example/h2/{n}?{value}\nx-v={value}\nx-dup=1\nx-dup=2-{n}\n");
            assert_eq!(text, want, "h2 request {n}");
            // An h1 request in between, on the same worker.
            let (bytes, expect) = request(n, value_len, 3, value_len / 2);
            h1.send(&bytes);
            let reply = h1.reply().unwrap();
            assert_eq!(reply.text(), expect, "h1 request {n}");
            let _ = h1.get(if n % 2 == 0 { "/some-out" } else { "/many-out" });
        }
    });
    for (uri, headers, text) in kept.lock().unwrap().iter() {
        assert_eq!(&dump(uri, headers), text, "kept {uri} changed");
    }
}

/// What each request head that `http` cannot represent gets: 400 (and
/// the connection goes on, or closes), never a panic or a hang.
#[test]
fn heads_http_refuses_are_400() {
    let kept = Kept::default();
    let runtime = runtime();
    let server =
        serve(one_worker(), TowerHandler::new(keeping_app(kept), runtime.handle().clone()));
    let cases: &[&[u8]] = &[
        b"GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a{b}|c\"d<e>`f HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /a HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n",
        b"GET /a HTTP/1.1\r\nHost: x\r\nX: caf\xc3\xa9\r\n\r\n",
        b"GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n",
        b"G\xc3\xa9T /a HTTP/1.1\r\nHost: x\r\n\r\n",
    ];
    let mut report = String::new();
    for case in cases {
        let mut client = Client::connect(server.addr);
        client.send(case);
        let reply = client.reply();
        let got = match &reply {
            Ok(r) => format!("{} {:?}", r.status, r.text().lines().next().unwrap_or("")),
            Err(e) => format!("error {e}"),
        };
        report.push_str(&format!("{:?} -> {got}\n", String::from_utf8_lossy(case)));
        // And the worker still answers.
        let mut fresh = Client::connect(server.addr);
        assert_eq!(fresh.get("/still").status, 200, "after {:?}", String::from_utf8_lossy(case));
    }
    println!("{report}");
}

/// A service that panics on some requests (before and after reading its
/// fields) does not disturb later heads.
#[test]
fn panics_leave_the_cache_sound() {
    let kept = Kept::default();
    let keep = kept.clone();
    let router = keeping_app(kept.clone()).route(
        "/boom",
        get(move |headers: HeaderMap| {
            let first = headers.get("x-f0").cloned();
            keep.lock().unwrap().push(("/boom".parse().unwrap(), headers, String::new()));
            async move {
                if first.is_some() {
                    panic!("on purpose");
                }
                "not reached"
            }
        }),
    );
    let runtime = runtime();
    let server = serve(one_worker(), TowerHandler::new(router, runtime.handle().clone()));
    let mut client = Client::connect(server.addr);
    for n in 0..60 {
        if n % 3 == 0 {
            client.send(b"GET /boom HTTP/1.1\r\nHost: x\r\nX-F0: zzzz\r\n\r\n");
            assert_eq!(client.reply().unwrap().status, 500);
        }
        let (bytes, expect) = request(n, 200 * n, 5, 100 * n);
        client.send(&bytes);
        assert_eq!(client.reply().unwrap().text(), expect);
    }
    let _ = Bytes::new();
}
