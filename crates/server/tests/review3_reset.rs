//! Third review, of 3c1b4e0 ("h2: the reset budget refills with time"):
//! attacks on the token bucket (burst `Config::reset_budget`, refilled
//! `Config::reset_refill_per_second` a second by the server's timer), the
//! restructured free refusals, the h2c upgrade path, the timer on worker 0
//! for connections of other workers, integer edges and the CLI flag; and a
//! legitimate client that cancels often.

mod common;

use std::collections::HashSet;
use std::io::Read;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, block, req};
use common::serve;
use falconet_server::h2::connection::Config;
use falconet_server::h2::frame::{self, ErrorCode, FrameHeader, kind};
use falconet_server::{Handler, Options, Request, Response};

/// Counts heads and responds; answers `size` bytes (`/big`: 102,400);
/// records each worker thread that ran a head.
#[derive(Clone)]
struct Counting {
    heads: Arc<AtomicUsize>,
    responds: Arc<AtomicUsize>,
    threads: Arc<Mutex<HashSet<ThreadId>>>,
    size: usize,
}

impl Counting {
    fn new(size: usize) -> Self {
        Self { heads: Arc::default(), responds: Arc::default(), threads: Arc::default(), size }
    }
    fn heads(&self) -> usize {
        self.heads.load(Ordering::Relaxed)
    }
}

impl Handler for Counting {
    type State = usize;
    fn head(&self, request: &Request<'_>) -> usize {
        self.heads.fetch_add(1, Ordering::Relaxed);
        self.threads.lock().unwrap().insert(std::thread::current().id());
        if request.path() == "/big" { 102_400 } else { self.size }
    }
    fn respond(&self, size: usize, response: &mut Response<'_>) {
        self.responds.fetch_add(1, Ordering::Relaxed);
        let _ = response.body(&vec![b'x'; size]);
    }
}

const INITIAL_WINDOW_SIZE: u16 = 4;
const CALM: &str = "GOAWAY(11)";

fn headers(out: &mut Vec<u8>, id: u32, block: &[u8], end_stream: bool) {
    let flags = 4 | u8::from(end_stream);
    FrameHeader { length: block.len() as u32, kind: kind::HEADERS, flags, stream: id }
        .encode(out)
        .unwrap();
    out.extend_from_slice(block);
}

fn raw_frame(out: &mut Vec<u8>, kind: u8, flags: u8, id: u32, payload: &[u8]) {
    FrameHeader { length: payload.len() as u32, kind, flags, stream: id }.encode(out).unwrap();
    out.extend_from_slice(payload);
}

fn rst(out: &mut Vec<u8>, id: u32) {
    frame::encode_rst_stream(out, id, ErrorCode::CANCEL);
}

/// Reads frames for `wait`: the GOAWAY code, "EOF", or "open".
fn fate(raw: &mut Raw, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::GOAWAY => return format!("GOAWAY({})", f.code()),
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                }
            }
            Event::Eof => return "EOF".into(),
            Event::Timeout => return "open".into(),
        }
    }
}

/// A client that grants no stream credit (so no answer with a body ever
/// ends) and acknowledges our SETTINGS.
fn zero_window(addr: SocketAddr) -> Raw {
    let mut raw = Raw::handshake(addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw
}

/// `n` HEADERS+RST pairs from stream `*id` on, in one write.
fn rapid(raw: &mut Raw, id: &mut u32, n: u32) -> bool {
    let mut out = Vec::new();
    for _ in 0..n {
        headers(&mut out, *id, &req("GET", "/x"), true);
        rst(&mut out, *id);
        *id += 2;
    }
    raw.try_send(&out).is_ok()
}

fn serve_with(
    config: Config,
    workers: usize,
    size: usize,
) -> (common::TestServer<Counting>, Counting) {
    let handler = Counting::new(size);
    let server = serve(Options::new().workers(workers).http2(config), handler.clone());
    (server, handler)
}

// ---------------------------------------------------------------- the bucket

/// A sustained split rapid reset (HEADERS, the handlers run in their own
/// read, then RST_STREAM) at ~500 resets a second against a burst of 100
/// and a refill of 50 a second: cut off, with handler runs within the
/// burst plus the refill for the time it ran.
#[test]
fn sustained_split_attack_is_bounded_by_burst_plus_rate() {
    let config = Config { reset_budget: 100, reset_refill_per_second: 50, ..Config::default() };
    let (server, handler) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    let start = Instant::now();
    let mut id = 1u32;
    let mut result = "open".to_string();
    while id < 40_000 && start.elapsed() < Duration::from_secs(15) {
        let mut out = Vec::new();
        let first = id;
        for _ in 0..10 {
            headers(&mut out, id, &req("GET", "/x"), true);
            id += 2;
        }
        if raw.try_send(&out).is_err() {
            result = "write failed".into();
            break;
        }
        let want = (id - 1) as usize / 2;
        let until = Instant::now() + Duration::from_millis(20);
        while handler.heads() < want && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(200));
        }
        let mut out = Vec::new();
        for s in (first..id).step_by(2) {
            rst(&mut out, s);
        }
        if raw.try_send(&out).is_err() {
            result = "write failed".into();
            break;
        }
        result = fate(&mut raw, Duration::from_millis(20));
        if result != "open" {
            break;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let runs = handler.heads();
    let bound = 100.0 + 50.0 * elapsed + 20.0;
    eprintln!("sustained: {runs} runs in {elapsed:.2}s, fate {result}, bound {bound:.0}");
    assert!(result == CALM || result == "write failed" || result == "EOF", "{result}");
    assert!((runs as f64) <= bound, "{runs} handler runs > {bound:.0}");
}

/// An attacker pacing itself just under the refill rate (one
/// HEADERS+RST every 50 ms against 33 a second, nghttp2's default) is
/// never cut off: the documented cost of the bucket, measured. The
/// handler runs it gets are the pace, no more (no amplification).
#[test]
fn an_attacker_under_the_rate_is_never_cut_but_gets_only_its_pace() {
    let config = Config { reset_budget: 10, reset_refill_per_second: 33, ..Config::default() };
    let (server, handler) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    let mut id = 1;
    let start = Instant::now();
    // 10 at once (the burst), then 20 a second for 3 s.
    assert!(rapid(&mut raw, &mut id, 10));
    for _ in 0..60 {
        std::thread::sleep(Duration::from_millis(50));
        if !rapid(&mut raw, &mut id, 1) {
            break;
        }
        let f = fate(&mut raw, Duration::from_millis(1));
        if f != "open" {
            eprintln!(
                "paced: cut off with {f} at reset {} after {:?}",
                (id - 1) / 2,
                start.elapsed()
            );
            break;
        }
    }
    let result = fate(&mut raw, Duration::from_millis(300));
    let runs = handler.heads();
    eprintln!("paced: {runs} runs in {:?}, fate {result}", start.elapsed());
    assert_eq!(result, "open");
    assert!(runs <= 70, "{runs}");
}

// ------------------------------------------------------------ free refusals

/// Streams past MAX_CONCURRENT_STREAMS before our SETTINGS are
/// acknowledged (never, here): refused for free only
/// `max_concurrent_streams` times in all, so refusing and resetting in a
/// loop is cut off within the budget; the refused streams run no handler.
#[test]
fn free_refusals_are_spent_once_not_per_round() {
    let config = Config {
        max_concurrent_streams: 4,
        reset_budget: 10,
        reset_refill_per_second: 0,
        ..Config::default()
    };
    let (server, handler) = serve_with(config, 1, 5);
    // No SETTINGS acknowledgement, ever; zero window.
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    let mut id = 1;
    let mut result = "open".to_string();
    let mut refused = 0;
    for _round in 0..200 {
        let mut out = Vec::new();
        let open: Vec<u32> = (0..4).map(|i| id + 2 * i).collect();
        for &s in &open {
            headers(&mut out, s, &req("GET", "/x"), true);
        }
        id += 8;
        // Past the limit: refused.
        for i in 0..4 {
            headers(&mut out, id + 2 * i, &req("GET", "/x"), true);
        }
        id += 8;
        for &s in &open {
            rst(&mut out, s);
        }
        if raw.try_send(&out).is_err() {
            result = "write failed".into();
            break;
        }
        let deadline = Instant::now() + Duration::from_millis(30);
        loop {
            match raw.next(deadline.saturating_duration_since(Instant::now())) {
                Event::Frame(f) if f.kind == kind::GOAWAY => {
                    result = format!("GOAWAY({})", f.code());
                    break;
                }
                Event::Frame(f) if f.kind == kind::RST_STREAM => refused += 1,
                Event::Frame(f) if f.kind == kind::HEADERS => {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                }
                Event::Frame(_) => {}
                Event::Eof => {
                    result = "EOF".into();
                    break;
                }
                Event::Timeout => break,
            }
        }
        if result != "open" {
            break;
        }
    }
    let runs = handler.heads();
    eprintln!("free refusals: {runs} runs, {refused} refused, fate {result}");
    assert_eq!(result, CALM);
    // 10 budget + 4 free; handler runs at most the budget plus a round.
    assert!(runs <= 10 + 4 + 4, "{runs} handler runs");
}

/// Free refusals end with the acknowledgement: a refusal after it spends.
/// Budget 0: the first one then ends the connection, while before it
/// `max_concurrent_streams` refusals passed.
#[test]
fn budget_zero_free_refusals_then_ack() {
    let config = Config {
        max_concurrent_streams: 1,
        reset_budget: 0,
        reset_refill_per_second: 1000,
        ..Config::default()
    };
    let (server, _handler) = serve_with(config, 1, 5);
    let mut raw = Raw::handshake(server.addr, &[(INITIAL_WINDOW_SIZE, 0)]);
    let mut out = Vec::new();
    headers(&mut out, 1, &req("GET", "/x"), true); // open, its answer stuck
    headers(&mut out, 3, &req("GET", "/x"), true); // refused for free
    raw.send(&out);
    assert_eq!(fate(&mut raw, Duration::from_millis(300)), "open");
    // A second one past the limit: no free refusal left.
    let mut out = Vec::new();
    headers(&mut out, 5, &req("GET", "/x"), true);
    raw.send(&out);
    assert_eq!(fate(&mut raw, Duration::from_millis(1_200)), CALM);
}

// ---------------------------------------------------------- MadeYouReset

/// Server-sent stream errors the client provokes (MadeYouReset) on
/// streams whose answers cannot end, each after its handler's head ran:
/// WINDOW_UPDATE 0, a body longer than content-length, DATA after
/// END_STREAM, a stream window past 2^31-1, trailers without END_STREAM,
/// a PRIORITY on itself. Budget 20, no refill: cut off within it.
#[test]
fn made_you_reset_mix_is_cut_off() {
    let config = Config { reset_budget: 20, reset_refill_per_second: 0, ..Config::default() };
    let (server, handler) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    let mut id = 1u32;
    let mut result = "open".to_string();
    let with_length = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/x"),
        (":authority", "localhost"),
        ("content-length", "5"),
    ]);
    for i in 0..300u32 {
        let mut out = Vec::new();
        match i % 6 {
            0 => {
                headers(&mut out, id, &req("POST", "/x"), false);
                raw_frame(&mut out, kind::WINDOW_UPDATE, 0, id, &0u32.to_be_bytes());
            }
            1 => {
                headers(&mut out, id, &with_length, false);
                raw_frame(&mut out, kind::DATA, 1, id, b"0123456789");
            }
            2 => {
                headers(&mut out, id, &req("GET", "/x"), true);
                raw_frame(&mut out, kind::DATA, 0, id, b"late");
            }
            3 => {
                headers(&mut out, id, &req("GET", "/x"), true);
                raw_frame(&mut out, kind::WINDOW_UPDATE, 0, id, &0x7fff_ffffu32.to_be_bytes());
                raw_frame(&mut out, kind::WINDOW_UPDATE, 0, id, &0x7fff_ffffu32.to_be_bytes());
            }
            4 => {
                headers(&mut out, id, &req("POST", "/x"), false);
                headers(&mut out, id, &block(&[("x-trailer", "1")]), false);
            }
            _ => {
                headers(&mut out, id, &req("POST", "/x"), false);
                let mut p = id.to_be_bytes().to_vec();
                p.push(16);
                raw_frame(&mut out, kind::PRIORITY, 0, id, &p);
            }
        }
        id += 2;
        if raw.try_send(&out).is_err() {
            result = "write failed".into();
            break;
        }
        result = fate(&mut raw, Duration::from_millis(5));
        if result != "open" {
            break;
        }
    }
    if result == "open" {
        result = fate(&mut raw, Duration::from_millis(500));
    }
    let runs = handler.heads();
    eprintln!("made-you-reset: {runs} heads for {} streams, fate {result}", (id - 1) / 2);
    assert_eq!(result, CALM);
    assert!(runs <= 20 + 2, "{runs} handler heads");
}

// ------------------------------------------------------------- h2c upgrade

/// HTTP/1.1 `Upgrade: h2c` (HTTP2-Settings: INITIAL_WINDOW_SIZE 0), then
/// the preface, SETTINGS and its acknowledgement.
fn upgraded(addr: SocketAddr) -> Raw {
    let mut raw = Raw::connect(addr);
    raw.send(b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAQAAAAA\r\n\r\n");
    raw.read_switch();
    let mut out = frame::PREFACE.to_vec();
    frame::encode_settings(&mut out, &[(INITIAL_WINDOW_SIZE, 0)]).unwrap();
    raw.send(&out);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw
}

/// Rapid reset over an upgraded connection: cut off within the burst.
#[test]
fn h2c_upgrade_rapid_reset_is_cut_off() {
    let config = Config { reset_budget: 50, reset_refill_per_second: 33, ..Config::default() };
    let (server, handler) = serve_with(config, 1, 5);
    let mut raw = upgraded(server.addr);
    let mut id = 3;
    let mut result = "open".to_string();
    for _ in 0..100 {
        if !rapid(&mut raw, &mut id, 10) {
            result = "write failed".into();
            break;
        }
        result = fate(&mut raw, Duration::from_millis(10));
        if result != "open" {
            break;
        }
    }
    let runs = handler.heads();
    eprintln!("h2c: {runs} heads, fate {result}");
    assert!(result == CALM || result == "write failed", "{result}");
    assert!(runs <= 50 + 10 + 5, "{runs}");
}

/// The timer's clock reaches upgraded connections too: 5 resets, a pause,
/// 5 more pass with a refill; with none the sixth ends the connection.
#[test]
fn h2c_upgrade_connection_is_refilled() {
    let fates = [1_000u32, 0].map(|refill| {
        let config =
            Config { reset_budget: 5, reset_refill_per_second: refill, ..Config::default() };
        let (server, _h) = serve_with(config, 1, 5);
        let mut raw = upgraded(server.addr);
        let mut id = 3;
        assert!(rapid(&mut raw, &mut id, 5));
        std::thread::sleep(Duration::from_millis(1_200));
        assert!(rapid(&mut raw, &mut id, 5));
        fate(&mut raw, Duration::from_millis(500))
    });
    assert_eq!(fates, ["open".to_string(), CALM.to_string()]);
}

// ------------------------------------------------------------ two workers

/// With two workers, the timer runs on worker 0 only: connections of
/// worker 1 must be refilled too. Eight connections, each spends its
/// budget of 5, waits, spends 5 more: none is cut off (refill 1,000 a
/// second); with no refill every one is.
#[test]
fn refill_reaches_connections_on_every_worker() {
    for refill in [1_000u32, 0] {
        let config =
            Config { reset_budget: 5, reset_refill_per_second: refill, ..Config::default() };
        let (server, handler) = serve_with(config, 2, 5);
        let mut raws: Vec<Raw> = (0..8).map(|_| zero_window(server.addr)).collect();
        let mut ids = vec![1u32; raws.len()];
        for (raw, id) in raws.iter_mut().zip(&mut ids) {
            assert!(rapid(raw, id, 5));
        }
        std::thread::sleep(Duration::from_millis(1_200));
        for (raw, id) in raws.iter_mut().zip(&mut ids) {
            assert!(rapid(raw, id, 5));
        }
        let fates: Vec<String> =
            raws.iter_mut().map(|raw| fate(raw, Duration::from_millis(300))).collect();
        let threads = handler.threads.lock().unwrap().len();
        eprintln!("refill {refill}: {threads} worker threads ran heads; fates {fates:?}");
        if threads < 2 {
            // The kernel put every connection on one worker this time: the
            // point (worker 1's connections) was not exercised.
            eprintln!("all connections landed on one worker; inconclusive this run");
        }
        let want = if refill > 0 { "open" } else { CALM };
        assert!(fates.iter().all(|f| f == want), "refill {refill}: {fates:?}");
    }
}

// -------------------------------------------------------- integer edges

/// Budget 0: the first reset ends the connection; u32::MAX at once and
/// u32::MAX a second: 5,000 rapid resets pass, nothing panics, and the
/// connection still answers.
#[test]
fn integer_edges_of_the_bucket() {
    let config = Config { reset_budget: 0, reset_refill_per_second: u32::MAX, ..Config::default() };
    let (server, handler) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    let mut id = 1;
    assert!(rapid(&mut raw, &mut id, 1));
    assert_eq!(fate(&mut raw, Duration::from_secs(2)), CALM);
    assert!(handler.heads() <= 1);

    for (budget, refill) in [(u32::MAX, u32::MAX), (u32::MAX, 0), (1, u32::MAX)] {
        let config =
            Config { reset_budget: budget, reset_refill_per_second: refill, ..Config::default() };
        let (server, handler) = serve_with(config, 1, 5);
        let mut raw = Raw::handshake(server.addr, &[]);
        raw.frame(kind::SETTINGS, 1, 0, &[]);
        let mut id = 1;
        let n = if budget == 1 { 1 } else { 5_000 };
        assert!(rapid(&mut raw, &mut id, n));
        if budget == 1 {
            // Let a tick or two refill it (u32::MAX a second).
            std::thread::sleep(Duration::from_millis(1_200));
            assert!(rapid(&mut raw, &mut id, 1));
            std::thread::sleep(Duration::from_millis(1_200));
            assert!(rapid(&mut raw, &mut id, 1));
        }
        // Still answers.
        let mut out = Vec::new();
        headers(&mut out, id, &req("GET", "/x"), true);
        raw.send(&out);
        let answered = common::h2raw::answered_within(&mut raw, id, Duration::from_secs(5));
        eprintln!(
            "budget {budget} refill {refill}: {} heads, answered {answered}",
            handler.heads()
        );
        assert!(answered, "budget {budget} refill {refill}");
    }
}

/// `--h2-reset-refill-per-second` and `--h2-reset-budget` with values out
/// of u32: usage errors (exit 2, the flag named), never a panic; 0 and
/// 4294967295 start.
#[test]
fn cli_flag_values() {
    for flag in ["--h2-reset-refill-per-second", "--h2-reset-budget"] {
        for bad in ["-1", "abc", "4294967296", "", "1.5", " 33", "0x10", "99999999999999999999999"]
        {
            let output = Command::new(env!("CARGO_BIN_EXE_falconet"))
                .args(["--addr", "127.0.0.1:0", "--workers", "1", &format!("{flag}={bad}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{flag}={bad:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{flag}={bad:?}: {stderr}");
            assert!(stderr.contains(flag), "{flag}={bad:?}: {stderr}");
        }
        for good in ["0", "4294967295"] {
            let mut child = Command::new(env!("CARGO_BIN_EXE_falconet"))
                .args(["--addr", "127.0.0.1:0", "--workers", "1", flag, good])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut first = [0u8; 20];
            let n = child.stdout.as_mut().unwrap().read(&mut first).unwrap();
            assert!(String::from_utf8_lossy(&first[..n]).starts_with("falconet"), "{flag} {good}");
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

// ------------------------------------------------- a legitimate canceller

/// Go's TestIssue20704Race shape with a default-window client (65,535,
/// so each 100 KiB answer is still under way): 1,000 downloads one after
/// another, each cancelled once its HEADERS arrived; then one every 100 ms
/// for `REVIEW3_CANCEL_SECS` (default 5) seconds. Default config: never
/// cut off. The client gives the connection window back as DATA arrives.
#[test]
fn a_client_that_cancels_often_keeps_its_connection() {
    let secs: u64 =
        std::env::var("REVIEW3_CANCEL_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let (server, _handler) = serve_with(Config::default(), 1, 5);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    let mut id = 1u32;
    let start = Instant::now();
    let download = |raw: &mut Raw, id: &mut u32| -> Result<(), String> {
        let mut out = Vec::new();
        headers(&mut out, *id, &req("GET", "/big"), true);
        raw.send(&out);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match raw.next(deadline.saturating_duration_since(Instant::now())) {
                Event::Frame(f) if f.kind == kind::GOAWAY => {
                    return Err(format!(
                        "GOAWAY({}) {:?} at stream {} after {:?}",
                        f.code(),
                        String::from_utf8_lossy(&f.payload[8..]),
                        *id,
                        start.elapsed()
                    ));
                }
                Event::Frame(f) if f.kind == kind::DATA && !f.payload.is_empty() => {
                    raw.window_update(0, f.payload.len() as u32);
                }
                Event::Frame(f) if f.kind == kind::HEADERS => {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                    if f.stream == *id {
                        let mut out = Vec::new();
                        rst(&mut out, *id);
                        raw.send(&out);
                        *id += 2;
                        return Ok(());
                    }
                }
                Event::Frame(_) => {}
                Event::Eof => return Err(format!("EOF at stream {}", *id)),
                Event::Timeout => return Err(format!("no HEADERS on {}", *id)),
            }
        }
    };
    for _ in 0..1_000 {
        download(&mut raw, &mut id).unwrap();
    }
    eprintln!("1,000 cancelled downloads in {:?}", start.elapsed());
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
        download(&mut raw, &mut id).unwrap();
    }
    assert_eq!(fate(&mut raw, Duration::from_millis(300)), "open");
}

/// The same 1,000 cancels pipelined 100 at a time (a browser's abandoned
/// page of downloads), each reset as soon as its HEADERS arrive: not cut
/// off either.
#[test]
fn a_hundred_cancels_at_a_time_are_not_an_attack() {
    let (server, _handler) = serve_with(Config::default(), 1, 5);
    let mut raw = Raw::handshake(server.addr, &[]);
    raw.frame(kind::SETTINGS, 1, 0, &[]);
    raw.window_update(0, 1 << 30);
    let mut id = 1u32;
    let start = Instant::now();
    for batch in 0..10 {
        let mut out = Vec::new();
        for _ in 0..100 {
            headers(&mut out, id, &req("GET", "/big"), true);
            id += 2;
        }
        raw.send(&out);
        let mut seen = HashSet::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.len() < 100 {
            match raw.next(deadline.saturating_duration_since(Instant::now())) {
                Event::Frame(f) if f.kind == kind::GOAWAY => panic!(
                    "GOAWAY({}) {:?} in batch {batch} after {:?}, {} resets sent",
                    f.code(),
                    String::from_utf8_lossy(&f.payload[8..]),
                    start.elapsed(),
                    batch * 100 + seen.len()
                ),
                Event::Frame(f) if f.kind == kind::RST_STREAM => {
                    panic!("RST_STREAM({}) on {}", f.code(), f.stream)
                }
                Event::Frame(f) if f.kind == kind::HEADERS => {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                    seen.insert(f.stream);
                    let mut out = Vec::new();
                    rst(&mut out, f.stream);
                    raw.send(&out);
                }
                Event::Frame(_) => {}
                other => panic!("{other:?} in batch {batch}, {} seen", seen.len()),
            }
        }
    }
    eprintln!("1,000 cancels in {:?}", start.elapsed());
    assert_eq!(fate(&mut raw, Duration::from_millis(500)), "open");
    // And one more every 100 ms for a second.
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(100));
        let mut out = Vec::new();
        headers(&mut out, id, &req("GET", "/big"), true);
        raw.send(&out);
        loop {
            match raw.next(Duration::from_secs(5)) {
                Event::Frame(f) if f.kind == kind::GOAWAY => panic!(
                    "GOAWAY({}) {:?} on stream {id} after {:?}",
                    f.code(),
                    String::from_utf8_lossy(&f.payload[8..]),
                    start.elapsed()
                ),
                Event::Frame(f) if f.kind == kind::HEADERS => {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                    if f.stream == id {
                        let mut out = Vec::new();
                        rst(&mut out, id);
                        raw.send(&out);
                        break;
                    }
                }
                Event::Frame(_) => {}
                other => panic!("{other:?}"),
            }
        }
        id += 2;
    }
    assert_eq!(fate(&mut raw, Duration::from_millis(500)), "open");
}

// ------------------------------------------- the clock the bucket reads

/// The bucket reads the clock only at the timer's sweep (every 500 ms
/// with the default timeouts), and its first reading only starts the
/// clock: time from the connection's start to the first sweep earns
/// nothing. Budget 5, 100 a second: 5 resets at the connection's start,
/// 200 ms (20 resets' worth), 5 more must pass.
#[test]
fn time_before_the_first_sweep_earns_resets() {
    let config = Config { reset_budget: 5, reset_refill_per_second: 100, ..Config::default() };
    let (server, _h) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    let mut id = 1;
    assert!(rapid(&mut raw, &mut id, 5));
    std::thread::sleep(Duration::from_millis(200));
    assert!(rapid(&mut raw, &mut id, 5));
    assert_eq!(fate(&mut raw, Duration::from_millis(200)), "open", "200 ms at 100/s earned < 5");
}

/// Between sweeps: once the clock runs (past the first sweep), 5 resets,
/// 150 ms (15 resets' worth at 100 a second), 5 more must pass.
#[test]
fn time_between_sweeps_earns_resets() {
    let config = Config { reset_budget: 5, reset_refill_per_second: 100, ..Config::default() };
    let (server, _h) = serve_with(config, 1, 5);
    let mut raw = zero_window(server.addr);
    // Past the first sweep (at most 500 ms apart).
    std::thread::sleep(Duration::from_millis(650));
    let mut id = 1;
    assert!(rapid(&mut raw, &mut id, 5));
    std::thread::sleep(Duration::from_millis(150));
    assert!(rapid(&mut raw, &mut id, 5));
    assert_eq!(fate(&mut raw, Duration::from_millis(200)), "open", "150 ms at 100/s earned < 5");
}
