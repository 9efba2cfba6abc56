//! RFC 9112 strictness over real TCP: what a smuggling suite sends (chunk
//! sizes a proxy could read another way, chunk extensions and trailers)
//! gets `400` and a graceful close, and nothing pipelined behind it is
//! answered; valid extensions and trailers are served.

mod common;

use std::net::SocketAddr;

use common::{Client, Echo, FNV_START, Reply, fnv, options, refused, start};

/// A valid request pipelined behind a refused one: it must not be answered
/// (RFC 9112 §9.6: after a response with "close", no further request is
/// processed).
const FOLLOW_UP: &[u8] = b"GET /after HTTP/1.1\r\nHost: t\r\n\r\n";

/// `request` is refused with `status`, and the request pipelined behind it
/// is not answered.
fn refused_alone(addr: SocketAddr, request: &[u8], status: u16) {
    refused(addr, &[request, FOLLOW_UP].concat(), status);
}

/// `request` is answered with 200, and the connection goes on serving.
fn served(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut client = Client::connect(addr);
    client.send(request);
    let reply =
        client.reply().unwrap_or_else(|e| panic!("{e} for {:?}", String::from_utf8_lossy(request)));
    assert_eq!(reply.status, 200, "for {:?}: {}", String::from_utf8_lossy(request), reply.text());
    assert!(!reply.closes(), "for {:?}", String::from_utf8_lossy(request));
    assert_eq!(client.get("/next").text(), "/next", "the connection goes on");
    reply
}

/// A chunked POST to `/echo` with `body` (the chunked body, raw).
fn chunked(body: &[u8]) -> Vec<u8> {
    [&b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"[..], body].concat()
}

fn echo_of(body: &[u8]) -> String {
    format!("len={} fnv={:x}", body.len(), fnv(FNV_START, body))
}

/// RFC 9112 §7.1: `chunk = chunk-size [ chunk-ext ] CRLF ...`. After the
/// hex digits only a chunk extension (`BWS ";" ...`) or CRLF may follow;
/// a proxy in front could read `5 0` as 0x50 or `5\t` as 5.
#[test]
fn chunk_sizes_follow_the_grammar() {
    let (server, addr) = start(options(), Echo);
    for body in [
        &b"5 0\r\nhello\r\n0\r\n\r\n"[..],
        b"5 \r\nhello\r\n0\r\n\r\n",
        b"5\t\r\nhello\r\n0\r\n\r\n",
        b"5x\r\nhello\r\n0\r\n\r\n",
        b"5\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\n0\r\n\r\n",
        b"5\rhello\r\n0\r\n\r\n",
        b"0x5\r\nhello\r\n0\r\n\r\n",
        b"+5\r\nhello\r\n0\r\n\r\n",
        b"-5\r\nhello\r\n0\r\n\r\n",
        b" 5\r\nhello\r\n0\r\n\r\n",
        b"5,5\r\nhello\r\n0\r\n\r\n",
        // 17 hex digits: past a u64 (an overflow would wrap to 5).
        b"10000000000000005\r\nhello\r\n0\r\n\r\n",
        b"5\r\nhello\r\n0 \r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r \n",
    ] {
        refused_alone(addr, &chunked(body), 400);
    }
    server.handle().shutdown();
    server.join().unwrap();
}

/// RFC 9112 §7.1.1: `chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "="
/// BWS chunk-ext-val ] )`, a name a token, a value a token or a
/// quoted-string. Valid ones are ignored; the rest is 400, and so are
/// extensions past their bounds (a known DoS: bytes that never count
/// against the body limit).
#[test]
fn chunk_extensions_are_validated_and_bounded() {
    let (server, addr) = start(options(), Echo);
    for body in [
        &b"5;a\r\nhello\r\n0\r\n\r\n"[..],
        b"5;a=b\r\nhello\r\n0\r\n\r\n",
        b"5 ; a = b ;c\r\nhello\r\n0;last\r\n\r\n",
        b"5;a=\"quoted \\\" string; with = signs\"\r\nhello\r\n0\r\n\r\n",
        b"5\t;\ta\t=\t\"\"\r\nhello\r\n0\r\n\r\n",
    ] {
        let reply = served(addr, &chunked(body));
        assert_eq!(reply.text(), echo_of(b"hello"), "{:?}", String::from_utf8_lossy(body));
    }
    for body in [
        &b"5;\r\nhello\r\n0\r\n\r\n"[..],
        b"5;;a\r\nhello\r\n0\r\n\r\n",
        b"5;a=\r\nhello\r\n0\r\n\r\n",
        b"5;a b\r\nhello\r\n0\r\n\r\n",
        b"5;a=b c\r\nhello\r\n0\r\n\r\n",
        b"5;a \r\nhello\r\n0\r\n\r\n",
        b"5;a=b \r\nhello\r\n0\r\n\r\n",
        b"5;a=\"b\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"b\"c\r\nhello\r\n0\r\n\r\n",
        b"5;a=\"\x01\"\r\nhello\r\n0\r\n\r\n",
        b"5;a@b\r\nhello\r\n0\r\n\r\n",
        b"5;a=b\rc\r\nhello\r\n0\r\n\r\n",
        b"5;a=b\nhello\r\n0\r\n\r\n",
    ] {
        refused_alone(addr, &chunked(body), 400);
    }
    // One size line with 5000 bytes of extensions.
    let long = format!("5;a={}\r\nhello\r\n0\r\n\r\n", "x".repeat(5000));
    refused_alone(addr, &chunked(long.as_bytes()), 400);
    // Many size lines, each within bounds, over 64 KiB in the body.
    let mut many = Vec::new();
    for _ in 0..40 {
        many.extend_from_slice(format!("1;a={}\r\nx\r\n", "y".repeat(2000)).as_bytes());
    }
    many.extend_from_slice(b"0\r\n\r\n");
    refused_alone(addr, &chunked(&many), 400);
    server.handle().shutdown();
    server.join().unwrap();
}

/// RFC 9112 §7.1.2: `trailer-section = *( field-line CRLF )`: trailer
/// lines are header field lines (a token, a colon with no whitespace
/// before it, a value without CTLs, no obs-fold), bounded like a head.
/// They are read and discarded (never merged into the header section).
#[test]
fn trailer_fields_are_validated_and_bounded() {
    let (server, addr) = start(options(), Echo);
    for trailers in [
        &b"X-Sum: 1\r\n"[..],
        b"X-Sum:1\r\nX-Other: a b\tc\r\n",
        b"X-Empty:\r\n",
        b"X-Obs: caf\xc3\xa9\r\n",
    ] {
        let body = [&b"5\r\nhello\r\n0\r\n"[..], trailers, b"\r\n"].concat();
        assert_eq!(served(addr, &chunked(&body)).text(), echo_of(b"hello"));
    }
    for trailers in [
        &b"bad trailer\r\n"[..],
        b"X-Sum : 1\r\n",
        b": no name\r\n",
        b"X-Sum: 1\r\n folded\r\n",
        b" X-Sum: 1\r\n",
        b"X-Sum: a\x00b\r\n",
        b"X-Sum: a\rb\r\n",
        b"X-Sum: a\x7fb\r\n",
        b"X\x01: 1\r\n",
    ] {
        let body = [&b"5\r\nhello\r\n0\r\n"[..], trailers, b"\r\n"].concat();
        refused_alone(addr, &chunked(&body), 400);
    }
    let big = format!("5\r\nhello\r\n0\r\nX-Big: {}\r\n\r\n", "b".repeat(9000));
    refused_alone(addr, &chunked(big.as_bytes()), 400);
    let many: String = (0..200).map(|i| format!("X-{i}: v\r\n")).collect();
    let body = format!("5\r\nhello\r\n0\r\n{many}\r\n");
    refused_alone(addr, &chunked(body.as_bytes()), 400);
    server.handle().shutdown();
    server.join().unwrap();
}
