//! Review of d8173ad/954d164 on the tower path, where the target becomes
//! an `http::Uri` and the authority the `Host` field.
#![cfg(feature = "tower")]

mod common;

use axum::Router;
use axum::extract::Request;
use axum::routing::any;
use common::{Client, options, serve_tower};

async fn show(request: Request) -> String {
    let host = request.headers().get("host").map(|h| h.to_str().unwrap_or("?").to_string());
    format!("{} host={host:?}", request.uri())
}

fn router() -> Router {
    Router::new().fallback(any(show))
}

fn answer(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String) {
    let mut client = Client::connect(addr);
    client.send(request);
    match client.reply() {
        Ok(reply) => (reply.status, reply.text()),
        Err(e) => (0, format!("{e}")),
    }
}

#[test]
fn review_tower_targets_and_hosts() {
    let (server, _rt) = serve_tower(options(), router());
    let addr = server.addr;
    assert_eq!(answer(addr, b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n").0, 400);
    assert_eq!(answer(addr, b"GET /x HTTP/1.1\r\nHost: \r\n\r\n").0, 400);
    assert_eq!(answer(addr, b"GET /x HTTP/1.1\r\nHost: :80\r\n\r\n").0, 400);
    let (status, text) = answer(addr, b"GET /caf%C3%A9?q={a}|b HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("/caf%C3%A9?q="), "{text}");
    let (status, text) = answer(addr, b"GET http://t.example/x HTTP/1.1\r\nHost: \r\n\r\n");
    assert_eq!((status, text.starts_with("http://t.example/x")), (200, true), "{text}");
    let (status, text) = answer(addr, b"GET /x HTTP/1.1\r\nHost: [::1]\r\n\r\n");
    assert_eq!(status, 200, "{text}");
    let (status, text) = answer(addr, b"GET /x HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200, "{text}");
}

/// `` ` `` in a path: the native handler takes it, the `http` crate does
/// not (an outside review's case), so a tower service's request is `400`,
/// a refusal like the parser's: `Connection: close`, and the request
/// pipelined behind it is not answered. In a query, `http` takes it.
#[test]
fn a_target_http_refuses_is_400_and_a_close() {
    let (server, _rt) = serve_tower(options(), router());
    let mut stream = std::net::TcpStream::connect(server.addr).unwrap();
    std::io::Write::write_all(
        &mut stream,
        b"GET /pl`ain HTTP/1.1\r\nHost: a\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .unwrap();
    let (bytes, end) = common::read_for(&mut stream, std::time::Duration::from_secs(5));
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
    assert_eq!(text.matches("HTTP/1.1").count(), 1, "nothing answered after it: {text}");
    assert_eq!(end, common::End::Eof, "{text}");
    let (status, text) = answer(server.addr, b"GET /q?a=`b` HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(status, 200, "{text}");
}

/// The URI's scheme is the request's (an outside review: it was always
/// `http`, so a service behind a TLS-terminating proxy that sends
/// `:scheme https`, or an absolute-form `https://` target, built `http://`
/// redirects and links): HTTP/1's absolute-form scheme, in any case; an
/// origin-form target stays as it came (as hyper gives it), so nothing
/// built from it names a scheme.
#[test]
fn the_uri_keeps_the_requests_scheme_over_http1() {
    let (server, _rt) = serve_tower(options(), router());
    let addr = server.addr;
    for (request, expected) in [
        (
            &b"GET https://t.example/x HTTP/1.1\r\nHost: t.example\r\n\r\n"[..],
            "https://t.example/x",
        ),
        (
            b"GET HTTPS://t.example:8443/x?q HTTP/1.1\r\nHost: t\r\n\r\n",
            "https://t.example:8443/x?q",
        ),
        (b"GET HtTp://t.example/x HTTP/1.1\r\nHost: t\r\n\r\n", "http://t.example/x"),
        (b"GET /x HTTP/1.1\r\nHost: t.example\r\n\r\n", "/x"),
    ] {
        let (status, text) = answer(addr, request);
        assert_eq!(status, 200, "{text}");
        assert!(text.starts_with(&format!("{expected} ")), "{expected}: {text}");
    }
}

/// HTTP/2's `:scheme`, as the client (or a proxy) sent it: `https`, `http`,
/// or any scheme RFC 3986 allows.
#[test]
fn the_uri_keeps_the_requests_scheme_over_http2() {
    if cfg!(falconet_tsan) {
        // The HTTP/2 client's tokio socket: TSan reports tokio's epoll
        // hand-off inside tokio (tokio-rs/tokio#7299).
        return;
    }
    let (server, rt) = serve_tower(options(), router());
    let addr = server.addr;
    rt.block_on(async move {
        let mut client = common::h2_client(addr).await;
        for uri in ["https://t.example/x", "http://t.example/y?q", "coap+tcp://t.example/z"] {
            let request = http::Request::get(uri).body(()).unwrap();
            let (response, _) = client.send_request(request, true).unwrap();
            let response = response.await.unwrap();
            assert_eq!(response.status(), 200, "{uri}");
            let mut body = response.into_body();
            let mut text = Vec::new();
            while let Some(data) = body.data().await {
                text.extend_from_slice(&data.unwrap());
            }
            let text = String::from_utf8(text).unwrap();
            assert!(text.starts_with(&format!("{uri} ")), "{uri}: {text}");
            client = client.ready().await.unwrap();
        }
    });
}

/// The edge of what `http` takes as a scheme: 64 bytes reach the service
/// in its URI; 65 cannot be an `http::Uri`, so that stream alone is
/// answered `400` (as any head `http` refuses) and the connection goes on.
#[test]
fn an_http2_scheme_at_the_edge_of_what_http_takes() {
    use common::h2raw::{Credit, Raw, block};
    let (server, _rt) = serve_tower(options(), router());
    let mut raw = Raw::handshake(server.addr, &[]);
    let mut credit = Credit::new();
    let longest = format!("s{}", "c".repeat(63));
    let too_long = format!("s{}", "c".repeat(64));
    for (stream, scheme, status) in [(1, &longest, 200), (3, &too_long, 400), (5, &longest, 200)] {
        let head = block(&[
            (":method", "GET"),
            (":scheme", scheme),
            (":path", "/x"),
            (":authority", "t.example"),
        ]);
        raw.headers(stream, &head, true);
        assert_eq!(credit.wait_done(&mut raw, stream), status, "{} bytes", scheme.len());
    }
}

/// HTTP/2 without `:authority` (RFC 9113 8.3.1 allows `host` instead):
/// the URI is the path alone and `host` stays as sent, as hyper (the h2
/// crate) builds it; with `:authority`, absolute. (The review of 5b03ae0
/// found an absolute URI made from `host`.)
#[test]
fn an_http2_request_without_authority_has_the_path_alone() {
    use common::h2raw::{Raw, block, frames_until};
    use falconet_server::h2::frame::kind;
    let (server, _rt) = serve_tower(options(), router());
    let mut raw = Raw::handshake(server.addr, &[]);
    let cases = [
        (1, ("host", "h.example"), "/x host=Some(\"h.example\")"),
        (3, (":authority", "a.example"), "http://a.example/x host=None"),
    ];
    for (stream, extra, expected) in cases {
        let fields = [(":method", "GET"), (":scheme", "http"), (":path", "/x"), extra];
        raw.headers(stream, &block(&fields), true);
        let frames = frames_until(&mut raw, std::time::Duration::from_secs(5), |f| {
            f.stream == stream && f.end_stream()
                || [kind::RST_STREAM, kind::GOAWAY].contains(&f.kind)
        });
        let data: Vec<u8> = frames
            .iter()
            .filter(|f| f.kind == kind::DATA && f.stream == stream)
            .flat_map(|f| f.payload.clone())
            .collect();
        assert_eq!(common::text(&data), expected, "{frames:?}");
    }
}
