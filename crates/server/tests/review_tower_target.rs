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
    assert!(text.starts_with("http://a/caf%C3%A9?q="), "{text}");
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
