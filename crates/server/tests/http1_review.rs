//! HTTP/1 edges from an adversarial review (2026-12-02) of the day's
//! fixes: a long method is 501 the same whether the line is whole or still
//! arriving (after an ignored empty line too, and malformed ones 400 both
//! ways); `Connection: close` stops an h2c upgrade from any line; `Expect`
//! lists do not change framing.

mod common;

use std::time::{Duration, Instant};

use common::{Client, Echo, options, refused, serve};
use falconet_server::Options;

fn limits() -> Options {
    options().max_request_line(1024).max_head(4096).header_timeout(Duration::from_secs(3))
}

/// Status of the first reply to `bytes`, and how long it took.
fn status_of(addr: std::net::SocketAddr, bytes: &[u8], bytewise: bool) -> (Option<u16>, Duration) {
    let mut client = Client::connect(addr);
    let start = Instant::now();
    if bytewise {
        client.send_bytewise(bytes);
    } else {
        client.send(bytes);
    }
    let status = client.reply().ok().map(|r| r.status);
    (status, start.elapsed())
}

/// Whole, a 2,000-byte method after an empty line (which httparse skips)
/// is 501; cut before the line's end, too (the empty line's LF is not the
/// request line's end; the server used to wait for the header timeout).
#[test]
fn a_long_method_after_an_empty_line_is_501_while_still_arriving() {
    let server = serve(limits(), Echo);
    let method = "M".repeat(2000);
    refused(server.addr, format!("\r\n{method} / HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(), 501);
    refused(server.addr, method.as_bytes(), 501);
    let (status, took) = status_of(server.addr, format!("\r\n{method}").as_bytes(), false);
    assert_eq!(status, Some(501), "after {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    server.stop();
}

/// The same past max_head: a 5,000-byte method, whole or cut, with an
/// empty line before it or not, is 501 (it was 431 after the empty line).
#[test]
fn a_long_method_after_an_empty_line_past_max_head_is_501_not_431() {
    let server = serve(limits(), Echo);
    let method = "M".repeat(5000);
    let whole = format!("{method} / HTTP/1.1\r\nHost: t\r\n\r\n");
    let (whole_plain, _) = status_of(server.addr, whole.as_bytes(), false);
    let (whole_crlf, _) = status_of(server.addr, format!("\r\n{whole}").as_bytes(), false);
    let (cut_plain, _) = status_of(server.addr, method.as_bytes(), false);
    let (cut_crlf, _) = status_of(server.addr, format!("\r\n{method}").as_bytes(), false);
    assert_eq!((whole_plain, cut_plain), (Some(501), Some(501)));
    assert_eq!((whole_crlf, cut_crlf), (Some(501), Some(501)), "an ignored empty line first");
    server.stop();
}

/// A method of 1,100 bytes with a byte that is no token character ('@')
/// in it: whole, httparse refuses it (400); arriving a byte at a time
/// (pieces without control bytes are not parsed as they come), the too
/// long line is parsed once before its refusal, and is 400 too.
#[test]
fn a_long_malformed_method_whole_or_bytewise() {
    let server = serve(limits(), Echo);
    let method = format!("{}@{}", "M".repeat(500), "M".repeat(600));
    let line = format!("{method} / HTTP/1.1\r\nHost: t\r\n\r\n");
    let (whole, _) = status_of(server.addr, line.as_bytes(), false);
    let (bytewise, _) = status_of(server.addr, &line.as_bytes()[..1100], true);
    assert_eq!(bytewise, whole);
    server.stop();
}

/// The upgrade with `close` on a Connection line of its own, in another
/// case, with a request pipelined behind it: answered over HTTP/1.1, the
/// connection closed, the second request never served.
#[test]
fn h2c_upgrade_with_close_on_its_own_line_serves_one_request() {
    let server = serve(options(), Echo);
    let mut client = Client::connect(server.addr);
    client.send(
        b"GET /first HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\nCONNECTION: CLOSE\r\n\r\nGET /second HTTP/1.1\r\nHost: t\r\n\r\n",
    );
    let all = client.read_to_end().unwrap();
    let text = String::from_utf8_lossy(&all);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert_eq!(text.matches("HTTP/1.1 ").count(), 1, "{text}");
    assert!(!text.contains("/second"), "{text}");
    server.stop();
}

/// Expect elements with odd spacing and case, and an empty list: a body
/// request pipelined with another is framed the same either way.
#[test]
fn expect_lists_do_not_change_framing() {
    let server = serve(options(), Echo);
    for expect in ["100-continue,", " , 100-Continue\t,,", "100-CONTINUE, 100-continue", ","] {
        let mut client = Client::connect(server.addr);
        client.send(
            format!(
                "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: {expect}\r\nContent-Length: 5\r\n\r\nhelloGET /second HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        );
        let all = client.read_to_end().unwrap();
        let text = String::from_utf8_lossy(&all);
        assert!(text.contains("len=5"), "{expect:?}: {text}");
        assert!(text.contains("/second"), "{expect:?}: {text}");
        assert_eq!(text.matches("HTTP/1.1 200").count(), 2, "{expect:?}: {text}");
    }
    for expect in ["100-continue, x", "100-continue;q=1", "\"100-continue\""] {
        refused(
            server.addr,
            format!("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: {expect}\r\nContent-Length: 5\r\n\r\nhello").as_bytes(),
            417,
        );
    }
    server.stop();
}
