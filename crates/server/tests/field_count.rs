//! [`Options::max_headers`] over both protocols: it counts a request's
//! fields as HTTP/1.1 carries them, one per line, so the same request gets
//! the same answer either way. Over HTTP/2 that means the regular fields
//! (the pseudo-fields are the request line), with a cookie's crumbs (RFC
//! 9113 8.2.3: browsers split `cookie` into one field per pair for
//! compression) joined into the one field they make.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::h2raw::{Credit, Event, Raw, block};
use common::{connect, options, serve};
use falconet_server::h2::frame::kind;
use falconet_server::{Handler, MAX_HEADERS_LIMIT, Request, Response};

/// Answers `fields=N cookie=VALUE`: how many fields the application got
/// and the `cookie` among them.
struct Fields;

impl Handler for Fields {
    type State = String;

    fn head(&self, request: &Request<'_>) -> String {
        let cookie = request.header("cookie").map(String::from_utf8_lossy).unwrap_or_default();
        format!("fields={} cookie={cookie}", request.headers().count())
    }

    fn respond(&self, state: String, response: &mut Response<'_>) {
        response.body(state.as_bytes()).unwrap();
    }
}

/// Status and body of an HTTP/1.1 GET carrying `fields` (a `Host` among
/// them): the head, then as many bytes as its `Content-Length` says, or
/// what came before the server closed.
fn over_http1(addr: std::net::SocketAddr, fields: &[(String, String)]) -> (u16, String) {
    let mut stream = connect(addr);
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut request = String::from("GET / HTTP/1.1\r\n");
    for (name, value) in fields {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("Content-Length: "))
                .map(|n| n.parse::<usize>().unwrap());
            if length.is_some_and(|n| body.len() >= n) {
                return (head[9..12].parse().unwrap(), body.to_string());
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => panic!("no whole answer: {text}"),
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
}

/// Status and body of an HTTP/2 GET with `:method`, `:scheme` and `:path`
/// (no `:authority`: a `host` field may stand for it) and `fields`.
fn over_http2(addr: std::net::SocketAddr, fields: &[(String, String)]) -> (u16, String) {
    over_http2_with(addr, &[], fields)
}

/// [`over_http2`] with `pseudo` after the three pseudo-fields.
fn over_http2_with(
    addr: std::net::SocketAddr,
    pseudo: &[(&str, &str)],
    fields: &[(String, String)],
) -> (u16, String) {
    let mut raw = Raw::handshake(addr, &[]);
    let mut all = vec![(":method", "GET"), (":scheme", "http"), (":path", "/")];
    all.extend_from_slice(pseudo);
    all.extend(fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    raw.headers(1, &block(&all), true);
    let mut credit = Credit::new();
    let mut body = Vec::new();
    let ended = credit.until(&mut raw, Duration::from_secs(5), |f| {
        if f.kind == kind::DATA && f.stream == 1 {
            body.extend_from_slice(&f.payload);
        }
        f.stream == 1 && f.end_stream()
    });
    assert!(ended, "stream 1 not answered");
    assert!(!matches!(raw.next(Duration::from_millis(1)), Event::Eof), "the connection goes on");
    let status = credit.done.iter().find(|(s, _)| *s == 1).map(|&(_, status)| status).unwrap();
    (status, String::from_utf8(body).unwrap())
}

fn field(name: &str, value: impl Into<String>) -> (String, String) {
    (name.to_string(), value.into())
}

#[test]
fn cookie_crumbs_count_as_the_one_field_they_join_into() {
    // The default limit, 100 fields; 150 cookie pairs.
    let server = serve(options(), Fields);
    let pairs: Vec<String> = (0..150).map(|i| format!("c{i}=v")).collect();
    let joined = pairs.join("; ");
    let mut crumbs = vec![field("host", "x"), field("x-a", "1")];
    crumbs.extend(pairs.iter().map(|pair| field("cookie", pair.as_str())));
    let expected = format!("fields=3 cookie={joined}");
    assert_eq!(over_http2(server.addr, &crumbs), (200, expected.clone()));
    let line = [field("host", "x"), field("x-a", "1"), field("cookie", joined.as_str())];
    assert_eq!(over_http1(server.addr, &line), (200, expected));
    server.stop();
}

/// `n` fields (at least 1): `host` and `x-1` to `x-(n-1)`.
fn fields(n: usize) -> Vec<(String, String)> {
    let mut all = vec![field("host", "x")];
    all.extend((1..n).map(|i| field(&format!("x-{i}"), "v")));
    all
}

#[test]
fn max_headers_gets_the_same_answer_over_both_protocols_at_its_edges() {
    for limit in [1, 10, 100, MAX_HEADERS_LIMIT] {
        let server = serve(options().max_headers(limit), Fields);
        let (status, body) = over_http1(server.addr, &fields(limit));
        assert_eq!((status, body), (200, format!("fields={limit} cookie=")), "limit {limit}");
        assert_eq!(over_http1(server.addr, &fields(limit + 1)).0, 431, "HTTP/1.1, limit {limit}");
        // Over HTTP/2: every field reaches the application, at the very
        // top of the range too; one more is 431.
        let (status, body) = over_http2(server.addr, &fields(limit));
        assert_eq!((status, body), (200, format!("fields={limit} cookie=")), "limit {limit}");
        assert_eq!(over_http2(server.addr, &fields(limit + 1)).0, 431, "HTTP/2, limit {limit}");
        // `:authority` stands for the Host line HTTP/1.1 must send, and
        // counts as it does: beside it, one field fewer.
        let authority = [(":authority", "x")];
        let others = &fields(limit)[1..];
        let (status, body) = over_http2_with(server.addr, &authority, others);
        assert_eq!((status, body), (200, format!("fields={} cookie=", limit - 1)), "{limit}");
        let one_more = &fields(limit + 1)[1..];
        assert_eq!(over_http2_with(server.addr, &authority, one_more).0, 431, "{limit}");
        server.stop();
    }
}
