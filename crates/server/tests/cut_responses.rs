//! A response cut off after part of it went out must not look complete
//! (RFC 9112 section 8). Chunked (HTTP/1.1) or sized, the missing last
//! chunk or bytes say so, and the connection ends with a FIN as before. To
//! an HTTP/1.0 request a streamed body has no length: the close ends it,
//! so a FIN after a cut made the cut response look whole (an outside
//! review put nginx in front, whose default speaks HTTP/1.0 to its
//! upstreams: it re-framed a cut echo as a complete chunked response and
//! curl exited 0). Such a cut now ends with a reset. Each case: the
//! application fails, drops its responder, or is too slow for the
//! response timeout; the client is too slow for the request-body rate;
//! the tower path's body fails; and a response that ends normally still
//! ends with a FIN.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{End, connect, options, read_for, serve, text, timed_app::App};
use falconet_server::{MinDataRate, Options};

/// What the client read until the connection ended, and how it ended.
fn ends(stream: &mut std::net::TcpStream) -> (String, End) {
    let (got, end) = read_for(stream, Duration::from_secs(10));
    (text(&got), end)
}

/// `request` to `/never` on a server with `options`; the test's hands
/// get the responder.
fn held(
    options: Options,
    request: &[u8],
) -> (common::TestServer<App>, std::net::TcpStream, falconet_server::Responder) {
    let (app, kept, _) = App::new();
    let server = serve(options, app);
    let mut client = connect(server.addr);
    client.write_all(request).unwrap();
    let responder = kept.recv_timeout(Duration::from_secs(5)).expect("the responder");
    (server, client, responder)
}

#[test]
fn http10_responder_dropped_mid_body_resets() {
    let (_server, mut client, mut responder) = held(options(), b"GET /never HTTP/1.0\r\n\r\n");
    responder.write_blocking(b"first part").unwrap();
    drop(responder);
    let (got, end) = ends(&mut client);
    assert!(got.starts_with("HTTP/1.1 200 OK\r\n"), "{got}");
    assert!(!got.to_ascii_lowercase().contains("content-length"), "close-delimited: {got}");
    assert!(got.ends_with("first part"), "what went out before the cut arrives: {got}");
    assert_eq!(end, End::Reset, "a FIN would end the body as if whole: {got}");
}

#[test]
fn http11_responder_dropped_mid_body_ends_with_fin_and_no_last_chunk() {
    let (_server, mut client, mut responder) =
        held(options(), b"GET /never HTTP/1.1\r\nHost: t\r\n\r\n");
    responder.write_blocking(b"first part").unwrap();
    drop(responder);
    let (got, end) = ends(&mut client);
    assert!(
        got.contains("transfer-encoding: chunked") || got.contains("Transfer-Encoding: chunked"),
        "{got}"
    );
    assert!(got.ends_with("a\r\nfirst part\r\n"), "no last chunk: {got}");
    assert_eq!(end, End::Eof, "the missing last chunk says it: {got}");
}

#[test]
fn http10_response_that_ends_normally_ends_with_fin() {
    let (_server, mut client, mut responder) = held(options(), b"GET /never HTTP/1.0\r\n\r\n");
    responder.write_blocking(b"all of it").unwrap();
    responder.finish().unwrap();
    let (got, end) = ends(&mut client);
    assert!(got.ends_with("\r\n\r\nall of it"), "{got}");
    assert_eq!(end, End::Eof, "{got}");
}

/// The application keeps its streamed answer waiting past the response
/// timeout: the session cuts it (no 503: the head went out).
#[test]
fn http10_response_cut_by_the_response_timeout_resets() {
    let options = options().response_timeout(Some(Duration::from_millis(300)));
    let (_server, mut client, mut responder) = held(options, b"GET /never HTTP/1.0\r\n\r\n");
    responder.write_blocking(b"first part").unwrap();
    let (got, end) = ends(&mut client);
    assert!(got.ends_with("first part"), "{got}");
    assert!(!got.contains("503"), "no second answer: {got}");
    assert_eq!(end, End::Reset, "{got}");
    // The responder learns it too.
    assert!(responder.write_blocking(b"more").is_err());
}

/// Shutdown's deadline passes with the answer still streaming: the
/// connection is dropped, and says so.
#[test]
fn http10_response_under_way_at_the_shutdown_deadline_resets() {
    let options = options().shutdown_timeout(Duration::from_millis(300));
    let (server, mut client, mut responder) = held(options, b"GET /never HTTP/1.0\r\n\r\n");
    responder.write_blocking(b"first part").unwrap();
    server.handle().shutdown();
    let (got, end) = ends(&mut client);
    assert!(got.ends_with("first part"), "{got}");
    assert_eq!(end, End::Reset, "{got}");
    drop(responder);
}

/// The outside review's case: the answer streams while the client's body
/// falls below the request-body rate (the response started, so no 408).
#[test]
fn http10_response_cut_by_the_request_body_rate_resets() {
    let rate = MinDataRate::new(1000, Duration::from_millis(500));
    let options = options().min_request_body_rate(Some(rate));
    let request = b"POST /unread-never HTTP/1.0\r\nContent-Length: 100000\r\n\r\nsome of the body";
    let (_server, mut client, mut responder) = held(options, request);
    responder.write_blocking(b"first part").unwrap();
    let (got, end) = ends(&mut client);
    assert!(got.ends_with("first part"), "{got}");
    assert!(!got.contains("408"), "no second answer: {got}");
    assert_eq!(end, End::Reset, "{got}");
}

/// The same over HTTP/1.1: the missing last chunk tells, a FIN as before.
#[test]
fn http11_response_cut_by_the_request_body_rate_ends_with_fin() {
    let rate = MinDataRate::new(1000, Duration::from_millis(500));
    let options = options().min_request_body_rate(Some(rate));
    let request = b"POST /unread-never HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\nsome";
    let (_server, mut client, mut responder) = held(options, request);
    responder.write_blocking(b"first part").unwrap();
    let (got, end) = ends(&mut client);
    assert!(got.ends_with("a\r\nfirst part\r\n"), "{got}");
    assert_eq!(end, End::Eof, "{got}");
}

/// An answer too large for the sockets' buffers, to a client that reads
/// nothing until the server has given up on it (`close`: a timeout, or
/// shutdown's deadline): what it then reads, and how it ends.
fn unsent_at_close(
    options: Options,
    target: &str,
    close: impl FnOnce(&common::TestServer<App>),
) -> (String, usize, End) {
    let (app, _kept, _) = App::new();
    let server = serve(options, app);
    let mut client = connect(server.addr);
    write!(client, "GET {target}?n={BIG} HTTP/1.0\r\n\r\n").unwrap();
    // The answer has begun (so the server has the request) before the
    // server is told to close.
    let mut got = vec![0; 4096];
    client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut first = 0;
    while !got[..first].windows(4).any(|w| w == b"\r\n\r\n") && first < got.len() {
        let n = client.read(&mut got[first..]).unwrap();
        assert!(n > 0, "closed before the head: {}", text(&got[..first]));
        first += n;
    }
    got.truncate(first);
    close(&server);
    // Well past the server's close (at 300 ms), reading nothing more.
    std::thread::sleep(Duration::from_millis(1500));
    let (rest, end) = read_for(&mut client, Duration::from_secs(20));
    got.extend_from_slice(&rest);
    let head = got.windows(4).position(|w| w == b"\r\n\r\n").map_or(0, |at| at + 4);
    (text(&got[..head]), got.len() - head, end)
}

/// 32 MiB: more than loopback's socket buffers hold at most (4 MiB to
/// send, 6 MiB to receive by default).
const BIG: usize = 32 << 20;

/// A whole close-delimited answer, still in the server's output when the
/// connection closes, is cut off as surely as one its application broke:
/// a FIN made what arrived look whole (an outside review). Each way the
/// server gives up on a client: it takes nothing for `io_timeout`, takes
/// less than `min_response_rate`, or shutdown's deadline passes. A sized
/// answer (`/big`) ends the same way (its client could tell either way).
#[test]
fn http10_answer_unsent_when_the_server_gives_up_resets() {
    let quiet = options().io_timeout(Duration::from_millis(300)).min_response_rate(None);
    let rate = MinDataRate::new(1 << 20, Duration::from_millis(300));
    let slow = options().io_timeout(Duration::from_secs(60)).min_response_rate(Some(rate));
    let deadline = options().shutdown_timeout(Duration::from_millis(300)).min_response_rate(None);
    for target in ["/wbig", "/big"] {
        for (case, options, shutdown) in [
            ("io_timeout", &quiet, false),
            ("min_response_rate", &slow, false),
            ("shutdown", &deadline, true),
        ] {
            let (head, body, end) = unsent_at_close(options.clone(), target, |server| {
                if shutdown {
                    server.handle().shutdown();
                }
            });
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{target} {case}: {head}");
            let sized = head.to_ascii_lowercase().contains("content-length");
            assert_eq!(sized, target == "/big", "{target} {case}: {head}");
            assert!(body < BIG, "{target} {case}: the server gave up before sending it all");
            assert_eq!(end, End::Reset, "{target} {case}: {body} of {BIG} bytes, then");
        }
    }
}

/// Not after an earlier exchange (HTTP/1.0 keep-alive): a reset would
/// drop what the socket holds of the answers before (documented on
/// `Session::must_reset`), so the close is a FIN as before.
#[test]
fn http10_answer_unsent_after_keep_alive_ends_with_fin() {
    let (app, _kept, _) = App::new();
    let options = options().io_timeout(Duration::from_millis(300)).min_response_rate(None);
    let server = serve(options, app);
    let mut client = connect(server.addr);
    write!(
        client,
        "GET /big?n=10 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /wbig?n={BIG} HTTP/1.0\r\n\r\n"
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (got, end) = read_for(&mut client, Duration::from_secs(20));
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(got.len() < BIG, "{} bytes", got.len());
    assert_eq!(end, End::Eof, "{} bytes", got.len());
}

/// Over HTTP/1.1 the chunked answer's missing last chunk tells: a FIN, as
/// before.
#[test]
fn http11_answer_unsent_when_the_server_gives_up_ends_with_fin() {
    let (app, _kept, _) = App::new();
    let options = options().io_timeout(Duration::from_millis(300)).min_response_rate(None);
    let server = serve(options, app);
    let mut client = connect(server.addr);
    write!(client, "GET /wbig?n={BIG} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let (got, end) = read_for(&mut client, Duration::from_secs(20));
    assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(got.len() < BIG && !got.ends_with(b"0\r\n\r\n"), "{} bytes", got.len());
    assert_eq!(end, End::Eof, "{} bytes", got.len());
}

#[cfg(feature = "tower")]
mod tower_path {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use bytes::Bytes;
    use common::serve_tower;

    /// A body of unknown length that yields a piece, is pending for a
    /// while (so the worker streams it), then fails.
    /// (Or panics, with `.1`.)
    struct Breaking(u8, bool);

    impl http_body::Body for Breaking {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            self.0 += 1;
            std::task::Poll::Ready(Some(match self.0 {
                1 => Ok(http_body::Frame::data(Bytes::from_static(b"first part"))),
                2 => {
                    let waker = cx.waker().clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(50));
                        waker.wake();
                    });
                    return std::task::Poll::Pending;
                }
                _ if self.1 => panic!("the body panics (a test)"),
                _ => Err(std::io::Error::other("broken")),
            }))
        }
    }

    fn breaking() -> axum::Router {
        axum::Router::new()
            .route("/breaks", get(|| async { Body::new(Breaking(0, false)) }))
            .route("/panics", get(|| async { Body::new(Breaking(0, true)) }))
    }

    #[test]
    fn http10_body_failing_mid_way_resets() {
        let (server, _rt) = serve_tower(options(), breaking());
        let mut client = connect(server.addr);
        client.write_all(b"GET /breaks HTTP/1.0\r\n\r\n").unwrap();
        let (got, end) = ends(&mut client);
        assert!(got.ends_with("first part"), "{got}");
        assert_eq!(end, End::Reset, "{got}");
    }

    #[test]
    fn http11_body_failing_mid_way_ends_with_fin_and_no_last_chunk() {
        let (server, _rt) = serve_tower(options(), breaking());
        let mut client = connect(server.addr);
        client.write_all(b"GET /breaks HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let (got, end) = ends(&mut client);
        assert!(got.ends_with("a\r\nfirst part\r\n"), "{got}");
        assert_eq!(end, End::Eof, "{got}");
    }

    #[test]
    fn http10_body_panicking_mid_way_resets() {
        let (server, _rt) = serve_tower(options(), breaking());
        let mut client = connect(server.addr);
        client.write_all(b"GET /panics HTTP/1.0\r\n\r\n").unwrap();
        let (got, end) = ends(&mut client);
        assert!(got.ends_with("first part"), "{got}");
        assert_eq!(end, End::Reset, "{got}");
    }
}
