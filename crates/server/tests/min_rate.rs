//! `Options::min_response_rate` over real sockets: a client that takes its
//! responses slower than the rate is closed (HTTP/2 with
//! GOAWAY(ENHANCE_YOUR_CALM)), whether it reads nothing, reads a trickle
//! or grants HTTP/2 credit a byte at a time (the data dribble,
//! CVE-2019-9511); one that reads at the rate, or pauses one stream while
//! another flows, is not; and with the rate off the same clients are left
//! to `io_timeout`.

mod common;

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, req};
use common::{Client, TestServer, closed_within, options, serve};
use falconet_server::h2::frame::{self, ErrorCode, kind};
use falconet_server::{Handler, MinDataRate, Options, Request, Response};

/// Answers `/big?n=N` with N bytes (24 MiB without `n`), written at once.
#[derive(Clone, Copy)]
struct Big;

const BIG: usize = 24 << 20;

impl Handler for Big {
    type State = usize;

    fn head(&self, request: &Request<'_>) -> usize {
        request.target().split_once("n=").and_then(|(_, n)| n.parse().ok()).unwrap_or(BIG)
    }

    fn respond(&self, n: usize, response: &mut Response<'_>) {
        let _ = response.body(&vec![b'x'; n]);
    }
}

/// A second: short, so the tests are, yet long enough for loopback's
/// 64 KiB segments at the readers' rates below.
const GRACE: Duration = Duration::from_secs(1);

/// One worker, an I/O timeout far past every test, a short shutdown (the
/// held-back responses would wait for its deadline), and `rate` with
/// [`GRACE`].
fn rated(bytes_per_second: Option<u32>) -> Options {
    options()
        .workers(1)
        .io_timeout(Duration::from_secs(60))
        .shutdown_timeout(Duration::from_millis(200))
        .min_response_rate(bytes_per_second.map(|rate| MinDataRate::new(rate, GRACE)))
}

/// Reads `chunk` bytes every 100 ms on another thread until `stop` is
/// set or the connection ends; the thread returns the bytes read.
fn trickle(client: &Client, chunk: usize, stop: &Arc<AtomicBool>) -> JoinHandle<usize> {
    let mut stream = client.stream().try_clone().unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        let mut buf = vec![0; chunk];
        let mut got = 0;
        while !stop.load(Ordering::Relaxed) {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(_) => {}
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        got
    })
}

// ------------------------------------------------------------------ HTTP/1

/// A client that reads nothing of a 24 MiB answer: closed after a period
/// or two of the rate, not after the 60 s I/O timeout; with the rate off,
/// still open after the same time.
#[test]
fn a_client_that_reads_nothing_is_closed_within_a_period_or_two() {
    let server = serve(rated(Some(240)), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    let waited = closed_within(&server, Duration::from_secs(10));
    let waited = waited.expect("a client that reads nothing was never closed");
    // A tick to see the output waiting, up to two periods (a period's
    // worth banked while the socket filled), a tick late.
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
    drop(client);
    server.stop();

    let server = serve(rated(None), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(closed_within(&server, Duration::from_secs(5)), None, "closed with the rate off");
    drop(client);
    server.stop();
}

/// A reader below the rate (10 KB/s against 64 KiB/s) is closed mid-body;
/// one well above it (200 KB/s against 16 KiB/s) is not, and gets every
/// byte. Both read slower than edge-triggered readiness would announce
/// (a third of the socket's send buffer), so this also shows the timer
/// offering bytes before it judges. (The client's receive buffer holds
/// megabytes, so the server's side tells whether it closed.)
#[test]
fn the_rate_is_what_the_client_takes() {
    let server = serve(rated(Some(64 << 10)), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = trickle(&client, 1024, &stop);
    let closed = closed_within(&server, Duration::from_secs(10));
    stop.store(true, Ordering::Relaxed);
    let got = reader.join().unwrap();
    assert!(closed.is_some(), "a 10 KB/s reader outlived a 64 KiB/s rate ({got} bytes)");
    server.stop();

    let server = serve(rated(Some(16 << 10)), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = trickle(&client, 20 << 10, &stop);
    let closed = closed_within(&server, Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    let got = reader.join().unwrap();
    assert_eq!(closed, None, "a 200 KB/s reader was cut off by a 16 KiB/s rate ({got} bytes)");
    // The rest at full speed: the head and every byte of the body.
    let mut stream = client.stream().try_clone().unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = vec![0; 1 << 20];
    let mut total = got;
    while total <= BIG {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
    assert!(total > BIG, "{total} bytes of the head and a {BIG}-byte body");
    server.stop();
}

// ------------------------------------------------------------------ HTTP/2

/// Opens `streams` streams asking for `n` bytes each, with every stream
/// window 0 (SETTINGS_INITIAL_WINDOW_SIZE): each answer waits on credit.
fn held_back(server: &TestServer<Big>, streams: u32, n: usize) -> Raw {
    let mut raw = Raw::handshake(server.addr, &[(frame::setting::INITIAL_WINDOW_SIZE, 0)]);
    for i in 0..streams {
        raw.headers(1 + 2 * i, &req("GET", &format!("/big?n={n}")), true);
    }
    raw
}

/// For `how_long`, every 100 ms grants `credit` bytes to each of
/// `streams` (ids 1, 3, ...) and reads what comes. Returns the GOAWAY's
/// code, "EOF", or None if the connection stayed open, and the DATA bytes
/// received.
fn dribble(
    raw: &mut Raw,
    streams: &[u32],
    credit: u32,
    how_long: Duration,
) -> (Option<String>, usize) {
    let began = Instant::now();
    let mut next_grant = began;
    let mut received = 0;
    while began.elapsed() < how_long {
        if Instant::now() >= next_grant {
            let mut out = Vec::new();
            for &id in streams {
                frame::encode_window_update(&mut out, id, credit).unwrap();
            }
            if raw.try_send(&out).is_err() {
                return (Some("EOF".into()), received);
            }
            next_grant += Duration::from_millis(100);
        }
        let left = next_grant.saturating_duration_since(Instant::now());
        match raw.next(left.max(Duration::from_millis(1))) {
            Event::Frame(f) if f.kind == kind::GOAWAY => {
                return (Some(format!("GOAWAY({})", f.code())), received);
            }
            Event::Frame(f) if f.kind == kind::DATA => received += f.payload.len(),
            Event::Frame(_) | Event::Timeout => {}
            Event::Eof => return (Some("EOF".into()), received),
        }
    }
    (None, received)
}

/// The data dribble (CVE-2019-9511): 20 streams held back by zero
/// windows, a byte of credit to each every 100 ms. The rate (1,000 B/s)
/// is owed per held-back stream; the client pays 10 B/s a stream (a
/// byte of payload ten times a second; the 9-byte headers of frames its
/// credit cut short do not pay).
/// GOAWAY(ENHANCE_YOUR_CALM) within a period or two; with the rate off
/// the dribble goes on.
#[test]
fn the_data_dribble_is_closed_with_enhance_your_calm() {
    let streams: Vec<u32> = (0..20).map(|i| 1 + 2 * i).collect();
    let server = serve(rated(Some(1000)), Big);
    let mut raw = held_back(&server, 20, 100_000);
    let began = Instant::now();
    let (fate, received) = dribble(&mut raw, &streams, 1, Duration::from_secs(10));
    let waited = began.elapsed();
    let calm = format!("GOAWAY({})", u32::from(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(fate.as_deref(), Some(calm.as_str()), "after {received} bytes");
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
    assert!(received > 0, "the dribble was served until then");
    // Then the close.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !matches!(raw.next(Duration::from_millis(100)), Event::Eof) {
        assert!(Instant::now() < deadline, "open after its GOAWAY");
    }
    server.stop();

    let server = serve(rated(None), Big);
    let mut raw = held_back(&server, 20, 100_000);
    let (fate, received) = dribble(&mut raw, &streams, 1, Duration::from_secs(5));
    assert_eq!(fate, None, "with the rate off");
    assert!(received >= 400, "{received}");
    server.stop();
}

/// The dribble paid with our frame headers (an outside probe, 2026-12-05):
/// 20 streams held back, 20 bytes of credit to each every 100 ms, against
/// the default 240 B/s. The client takes 200 B/s a stream of responses,
/// and 290 with the 9-byte headers of the frames its credit cut short,
/// which paid the rate until they were left out of it:
/// GOAWAY(ENHANCE_YOUR_CALM) now. A client that
/// takes 400 B/s a stream (40 bytes every 100 ms) pays and stays.
#[test]
fn frame_headers_do_not_pay_the_rate() {
    let streams: Vec<u32> = (0..20).map(|i| 1 + 2 * i).collect();
    let server = serve(rated(Some(240)), Big);
    let mut raw = held_back(&server, 20, 100_000);
    let (fate, received) = dribble(&mut raw, &streams, 20, Duration::from_secs(15));
    let calm = format!("GOAWAY({})", u32::from(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(fate.as_deref(), Some(calm.as_str()), "after {received} bytes");
    server.stop();

    let server = serve(rated(Some(240)), Big);
    let mut raw = held_back(&server, 20, 100_000);
    let (fate, received) = dribble(&mut raw, &streams, 40, Duration::from_secs(6));
    assert_eq!(fate, None, "a client paying 400 B/s a stream was cut off after {received} bytes");
    assert!(received >= 20 * 40 * 20, "{received}");
    server.stop();
}

/// A client that grants no credit at all: the same GOAWAY, after a period
/// or two (the I/O timeout is 60 s, and the client's socket is empty).
#[test]
fn a_zero_window_client_is_closed_by_the_rate() {
    let server = serve(rated(Some(240)), Big);
    let mut raw = held_back(&server, 3, 100_000);
    let began = Instant::now();
    let (fate, _) = dribble(&mut raw, &[], 0, Duration::from_secs(10));
    let calm = format!("GOAWAY({})", u32::from(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(fate.as_deref(), Some(calm.as_str()));
    assert!(began.elapsed() < Duration::from_secs(5), "closed after {:?}", began.elapsed());
    server.stop();
}

/// One stream paused (no credit at all) while another downloads steadily
/// through its window: the rate is owed for the paused stream, and the
/// flowing one pays it many times over. Not cut off. (The paused answer
/// is answered first and stays under the held-back bound, 16 x
/// `max_pending_output`: past it, later requests wait for room, and the
/// paused stream alone is left to pay.)
#[test]
fn a_paused_stream_beside_a_flowing_one_is_not_cut_off() {
    let server = serve(rated(Some(240)), Big);
    let mut raw = held_back(&server, 1, 100_000);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        assert!(Instant::now() < deadline, "no HEADERS on stream 1");
        match raw.next(Duration::from_millis(500)) {
            Event::Frame(f) if f.kind == kind::HEADERS && f.stream == 1 => break,
            Event::Eof => panic!("closed"),
            _ => {}
        }
    }
    raw.headers(3, &req("GET", "/big?n=50000000"), true);
    // Stream 1 stays paused; stream 3 gets 16 KiB every 100 ms, and the
    // connection window as much.
    let mut grants = Vec::new();
    let began = Instant::now();
    let mut received = 0;
    while began.elapsed() < Duration::from_secs(3) {
        grants.clear();
        frame::encode_window_update(&mut grants, 0, 16384).unwrap();
        frame::encode_window_update(&mut grants, 3, 16384).unwrap();
        raw.send(&grants);
        let step = Instant::now() + Duration::from_millis(100);
        loop {
            match raw.next(step.saturating_duration_since(Instant::now())) {
                Event::Frame(f) if f.kind == kind::GOAWAY => {
                    panic!("GOAWAY({}) after {:?}, {received} bytes", f.code(), began.elapsed())
                }
                Event::Frame(f) if f.kind == kind::DATA => {
                    assert_eq!(f.stream, 3, "the paused stream got DATA");
                    received += f.payload.len();
                }
                Event::Frame(_) => {}
                Event::Eof => panic!("closed after {:?}", began.elapsed()),
                Event::Timeout => break,
            }
        }
    }
    assert!(received > 200_000, "{received}");
    server.stop();
}

/// The h2c Upgrade path (RFC 7540 3.2): the request that asked for the
/// upgrade becomes stream 1, its answer held back by the zero window its
/// `HTTP2-Settings` asked for. The rate closes it as any other stream.
#[test]
fn an_upgraded_connection_owes_the_rate_too() {
    let server = serve(rated(Some(240)), Big);
    let mut raw = Raw::connect(server.addr);
    // SETTINGS_INITIAL_WINDOW_SIZE (0x4) = 0, base64url: 00 04 00 00 00 00.
    let mut out = b"GET /big?n=100000 HTTP/1.1\r\nHost: h\r\n\
        Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAQAAAAA\r\n\r\n"
        .to_vec();
    out.extend_from_slice(frame::PREFACE);
    frame::encode_settings(&mut out, &[]).unwrap();
    raw.send(&out);
    raw.read_switch();
    let began = Instant::now();
    let (fate, received) = dribble(&mut raw, &[], 0, Duration::from_secs(10));
    let calm = format!("GOAWAY({})", u32::from(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(fate.as_deref(), Some(calm.as_str()));
    assert_eq!(received, 0, "DATA through a zero window");
    assert!(began.elapsed() < Duration::from_secs(5), "closed after {:?}", began.elapsed());
    server.stop();
}

/// A graceful shutdown waits for the responses in flight up to its
/// deadline (20 s here); a client that takes none of its answer does not
/// hold the shutdown that long: the rate closes it, and the workers stop.
#[test]
fn a_graceful_shutdown_is_not_held_by_a_client_that_reads_nothing() {
    let server = serve(rated(Some(240)).shutdown_timeout(Duration::from_secs(20)), Big);
    let mut client = Client::connect(server.addr);
    client.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
    // Until the answer fills the socket and waits on the client.
    std::thread::sleep(Duration::from_millis(300));
    let began = Instant::now();
    server.stop();
    assert!(began.elapsed() < Duration::from_secs(8), "the shutdown took {:?}", began.elapsed());
    drop(client);
}
