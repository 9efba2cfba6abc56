//! The keep-alive timeout counts from a connection's last exchange:
//! HTTP/2 control frames that start none (a PING a second, say) do not
//! hold an idle connection open, while requests, however spaced or slow
//! to answer, do. (An outside HTTP/2 probe's finding, 2026-12-05: any
//! byte read reset the idle clock.)
mod common;

use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, answered_within, req};
use common::{Client, serve};
use falconet_server::Options;
use falconet_server::h2::frame::{flag, kind};
use falconet_server::hello::Hello;

const KEEP_ALIVE: Duration = Duration::from_secs(1);

/// Sends one frame on a connection.
type SendFrame = fn(&mut Raw);

fn options() -> Options {
    Options::new().workers(1).keep_alive_timeout(KEEP_ALIVE)
}

/// Sends a frame every 200 ms until the connection ends (`Some(when)`, from
/// the start) or `limit` passes (`None`).
fn closed_while_sending(
    raw: &mut Raw,
    limit: Duration,
    send: impl Fn(&mut Raw),
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < limit {
        send(raw);
        let until = Instant::now() + Duration::from_millis(200);
        loop {
            match raw.next(until.saturating_duration_since(Instant::now())) {
                Event::Eof => return Some(start.elapsed()),
                Event::Timeout => break,
                Event::Frame(_) => {}
            }
        }
    }
    None
}

#[test]
fn control_frames_do_not_keep_an_idle_h2_connection() {
    let server = serve(options(), Hello);
    let frames: [(&str, SendFrame); 4] = [
        ("PING", |raw| raw.frame(kind::PING, 0, 0, &[7; 8])),
        ("SETTINGS", |raw| raw.frame(kind::SETTINGS, 0, 0, &[])),
        ("WINDOW_UPDATE", |raw| raw.window_update(0, 1)),
        ("PRIORITY", |raw| raw.frame(kind::PRIORITY, 0, 99, &[0, 0, 0, 0, 16])),
    ];
    for (name, send) in frames {
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
        let closed = closed_while_sending(&mut raw, Duration::from_secs(5), send);
        let closed = closed.unwrap_or_else(|| panic!("a {name} every 200 ms kept it 5 s"));
        assert!(closed >= KEEP_ALIVE - Duration::from_millis(100), "{name}: closed at {closed:?}");
    }
    // After a request too: idle from its answer on.
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    raw.headers(1, &req("GET", "/plaintext"), true);
    assert!(answered_within(&mut raw, 1, Duration::from_secs(3)));
    let ping: SendFrame = |raw| raw.frame(kind::PING, 0, 0, &[7; 8]);
    assert!(closed_while_sending(&mut raw, Duration::from_secs(5), ping).is_some());
}

/// Requests keep a connection, each restarting the idle clock, over
/// HTTP/2 and HTTP/1.1: one every 400 ms against a 1 s timeout, 2 s in all
/// (600 ms of slack for a client thread late on a loaded machine).
#[test]
fn requests_keep_a_connection_past_the_keep_alive_timeout() {
    let server = serve(options(), Hello);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    let mut client = Client::connect(server.addr);
    for i in 0..5u32 {
        let id = 1 + 2 * i;
        raw.headers(id, &req("GET", "/plaintext"), true);
        assert!(answered_within(&mut raw, id, Duration::from_secs(3)), "h2 request {i}");
        assert_eq!(client.get("/plaintext").status, 200, "HTTP/1.1 request {i}");
        std::thread::sleep(Duration::from_millis(400));
    }
}

/// An answer the application takes longer than the keep-alive timeout to
/// give is an exchange under way all along: the connection is idle from
/// its end, not closed the moment it is sent.
#[cfg(feature = "tokio")]
#[test]
fn a_slow_answer_is_not_idle_time() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let server = serve(options(), falconet_server::hello::Demo::new(runtime.handle().clone()));
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, flag::ACK, 0, &[]);
    raw.headers(1, &req("GET", "/delay?ms=1500"), true);
    assert!(answered_within(&mut raw, 1, Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(300));
    raw.headers(3, &req("GET", "/plaintext"), true);
    assert!(answered_within(&mut raw, 3, Duration::from_secs(3)));
    let mut client = Client::connect(server.addr);
    client.send(b"GET /delay?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(client.reply().unwrap().status, 200);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(client.get("/plaintext").status, 200);
}

/// An h2c upgrade on a connection's first request is an exchange: the
/// connection is idle from its answer, not from the connect (an
/// independent review's finding: the switch from HTTP/1's head count to
/// HTTP/2's block count hid the upgrade's own head). A 2 s timeout (the
/// timer ticks every 500 ms): 1.4 s before the upgrade and 1.4 s after its
/// answer each leave 600 ms of slack, and together pass the 2.5 s by
/// which a clock started at the connect would have closed it.
#[test]
fn an_upgrade_as_the_first_request_is_an_exchange() {
    use falconet_server::h2::frame::PREFACE;

    let server = serve(options().keep_alive_timeout(Duration::from_secs(2)), Hello);
    let mut raw = Raw::connect(server.addr);
    std::thread::sleep(Duration::from_millis(1_400));
    raw.send(
        b"GET /plaintext HTTP/1.1\r\nHost: t\r\nConnection: Upgrade, HTTP2-Settings\r\n\
          Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\n\r\n",
    );
    raw.read_switch();
    let mut preface = PREFACE.to_vec();
    falconet_server::h2::frame::encode_settings(&mut preface, &[]).unwrap();
    raw.send(&preface);
    assert!(answered_within(&mut raw, 1, Duration::from_secs(3)));
    std::thread::sleep(Duration::from_millis(1_400));
    raw.headers(3, &req("GET", "/plaintext"), true);
    assert!(answered_within(&mut raw, 3, Duration::from_secs(3)));
}
