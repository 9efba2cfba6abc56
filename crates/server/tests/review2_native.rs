//! Review of f558888: the native API still chunks what `write` streams.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::serve;
use falconet_server::{Handler, Options, Request, Response};

struct Streams;

impl Handler for Streams {
    type State = ();
    fn head(&self, _request: &Request<'_>) {}
    fn respond(&self, _state: (), response: &mut Response<'_>) {
        let _ = response.write(b"hello ");
        let _ = response.write(b"world");
    }
}

fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.write_all(bytes).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn native_write_still_chunks() {
    let server = serve(Options::new().workers(1), Streams);
    let text = exchange(server.addr, b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert!(text.contains("Transfer-Encoding: chunked"), "{text}");
    assert!(!text.contains("Content-Length"), "{text}");
    assert!(text.ends_with("6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"), "{text:?}");
    let text = exchange(server.addr, b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert!(!text.contains("Content-Length") && !text.contains("chunked"), "{text}");
    assert!(text.ends_with("\r\n\r\nhello world"), "{text:?}");
}
