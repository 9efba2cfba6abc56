//! Review of 388ce53 ("a reset of an answer all produced spends no reset
//! budget", reverted for what these found): attacks that make the server
//! run handlers without limit while spending no budget and reading
//! nothing. Each ran 5,000-20,000 handlers on one connection with it;
//! the reset budget (`Config::reset_budget`, 1,000) must cut them off.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, req};
use common::serve;
use falconet_server::h2::connection::Config;
use falconet_server::h2::frame::{self, ErrorCode, FrameHeader, kind};
use falconet_server::{Handler, Options, Request, Response};

/// Counts handler runs; answers `size` bytes at once (a synchronous
/// handler, as the binary's /bytes and most native handlers).
struct Counting {
    runs: Arc<AtomicUsize>,
    size: usize,
}

impl Handler for Counting {
    type State = ();
    fn head(&self, _request: &Request<'_>) {}
    fn respond(&self, _state: (), response: &mut Response<'_>) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        let body = vec![b'x'; self.size];
        let _ = response.body(&body);
    }
}

const INITIAL_WINDOW_SIZE: u16 = 4;

fn headers_frames_to(out: &mut Vec<u8>, ids: std::ops::Range<u32>, path: &str) {
    for i in ids {
        let id = 2 * i + 1;
        let b = req("GET", path);
        FrameHeader { length: b.len() as u32, kind: kind::HEADERS, flags: 5, stream: id }
            .encode(out)
            .unwrap();
        out.extend_from_slice(&b);
    }
}

fn rst_frames(out: &mut Vec<u8>, ids: std::ops::Range<u32>) {
    for i in ids {
        frame::encode_rst_stream(out, 2 * i + 1, ErrorCode::CANCEL);
    }
}

/// Drains whatever the server sent (without granting any credit); returns
/// the GOAWAY code or EOF if the connection ended.
fn drain(raw: &mut Raw, wait: Duration) -> Option<String> {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match raw.next(left) {
            Event::Frame(f) if f.kind == kind::GOAWAY => {
                return Some(format!("GOAWAY({})", f.code()));
            }
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                }
                // Keep reading quickly once frames flow.
                if left.is_zero() {
                    return None;
                }
            }
            Event::Eof => return Some("EOF".into()),
            Event::Timeout => return None,
        }
    }
}

/// The attack: the client grants no stream credit (SETTINGS initial
/// window 0), so every answer with a body is all produced but cannot be
/// delivered; it sends a batch of HEADERS, lets the server run the
/// handlers (a separate read), then resets them all with the next batch
/// of HEADERS. Returns (handler runs, streams opened, fate, elapsed).
fn split_rapid_reset(
    size: usize,
    streams: u32,
    batch: u32,
) -> (usize, u32, Option<String>, Duration) {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = serve(Options::new().workers(1), Counting { runs: runs.clone(), size });
    attack(server.addr, &runs, "/x", streams, batch)
}

fn attack(
    addr: std::net::SocketAddr,
    runs: &AtomicUsize,
    path: &str,
    streams: u32,
    batch: u32,
) -> (usize, u32, Option<String>, Duration) {
    let server_addr = addr;
    let mut raw = Raw::handshake(server_addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    let start = Instant::now();
    let mut opened = 0;
    let mut fate = None;
    while opened < streams {
        let mut out = Vec::new();
        headers_frames_to(&mut out, opened..opened + batch, path);
        if raw.try_send(&out).is_err() {
            fate = Some("write failed".into());
            break;
        }
        // Let the server answer them in a read of their own.
        let wait_until = Instant::now() + Duration::from_millis(20);
        while runs.load(Ordering::Relaxed) < (opened + batch) as usize
            && Instant::now() < wait_until
        {
            if let Some(f) = drain(&mut raw, Duration::from_micros(200)) {
                fate = Some(f);
                break;
            }
        }
        if fate.is_some() {
            break;
        }
        let mut out = Vec::new();
        rst_frames(&mut out, opened..opened + batch);
        if raw.try_send(&out).is_err() {
            fate = Some("write failed".into());
            break;
        }
        opened += batch;
        if let Some(f) = drain(&mut raw, Duration::from_micros(50)) {
            fate = Some(f);
            break;
        }
    }
    if fate.is_none() {
        fate = drain(&mut raw, Duration::from_millis(300));
    }
    let elapsed = start.elapsed();
    (runs.load(Ordering::Relaxed), opened, fate, elapsed)
}

/// Handler runs past which an attack was not cut off: twice the budget
/// (the refill adds 33 a second of the attack).
fn cut_off() -> usize {
    2 * Config::default().reset_budget as usize
}

/// HEADERS, then RST_STREAM in a later packet, of a 5-byte synchronous
/// answer that cannot go out for want of stream credit: before 388ce53
/// this spent the budget (GOAWAY ENHANCE_YOUR_CALM after ~1,000); the
/// handler must not run unboundedly for a client that reads nothing.
#[test]
fn split_rapid_reset_of_small_sync_answers_with_zero_window_is_cut_off() {
    let (runs, opened, fate, elapsed) = split_rapid_reset(5, 20_000, 50);
    eprintln!("small: {runs} handler runs, {opened} streams, fate {fate:?}, {elapsed:?}");
    assert_eq!(fate.as_deref(), Some("GOAWAY(11)"), "{runs} handler runs for free");
    assert!(runs < cut_off(), "{runs} handler runs");
}

/// The same with 100,000-byte answers (the shape of /bytes?n=100000):
/// each cycle the handler builds and the server stages 100 KB.
#[test]
fn split_rapid_reset_of_big_sync_answers_is_cut_off() {
    let (runs, opened, fate, elapsed) = split_rapid_reset(100_000, 20_000, 5);
    eprintln!("big: {runs} handler runs, {opened} streams, fate {fate:?}, {elapsed:?}");
    assert_eq!(fate.as_deref(), Some("GOAWAY(11)"), "{runs} handler runs for free");
    assert!(runs < cut_off(), "{runs} handler runs");
}

/// The same against an axum service: a body ready at once (answered on
/// the worker, all produced) and one after an `.await` (a deferred
/// response: its body waits in the pipe for credit).
#[cfg(feature = "tower")]
#[test]
fn split_rapid_reset_against_axum() {
    use axum::Router;
    use axum::routing::get;
    let runs = Arc::new(AtomicUsize::new(0));
    let (now, later) = (runs.clone(), runs.clone());
    let app = Router::new()
        .route(
            "/now",
            get(move || {
                now.fetch_add(1, Ordering::Relaxed);
                async { "hello" }
            }),
        )
        .route(
            "/later",
            get(move || {
                later.fetch_add(1, Ordering::Relaxed);
                async {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    "hello"
                }
            }),
        );
    let (server, _rt) = common::serve_tower(Options::new().workers(1), app);
    let mut results = Vec::new();
    for path in ["/now", "/later"] {
        runs.store(0, Ordering::Relaxed);
        let (runs, opened, fate, elapsed) = attack(server.addr, &runs, path, 5_000, 50);
        eprintln!("axum {path}: {runs} handler runs, {opened} streams, fate {fate:?}, {elapsed:?}");
        results.push((path, runs, fate));
    }
    for (path, runs, fate) in results {
        assert_eq!(fate.as_deref(), Some("GOAWAY(11)"), "{path}: {runs} service calls for free");
        assert!(runs < cut_off(), "{path}: {runs} service calls");
    }
}
