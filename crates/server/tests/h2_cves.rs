//! An outside suite of HTTP/2 attacks from published CVEs (and RFC 9113
//! section 8 smuggling rules), each case on a fresh connection to a fresh
//! one-worker server, hand-built frames over TCP. Every case checks:
//!
//! 1. the attacking connection gets an answer the RFC (or the server's own
//!    documented limit, `h2::connection::Config` and `Options`) allows:
//!    GOAWAY / RST_STREAM with an allowed code, a refusing status, or close;
//! 2. work or memory stays bounded where that is the point (frames counted,
//!    requests the handler saw counted, pool blocks counted);
//! 3. a well-behaved connection opened before the attack is still served
//!    after it, and so is a new one (`GET /plaintext` answered 200).
//!
//! Where the RFC allows several answers, all are accepted. No timing
//! asserts: timeouts only bound how long we wait for an answer.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use common::h2raw::{Event, Raw, frame_bytes, integer, literal, req, string};
use common::serve;
use falconet_server::h2::connection::Config;
use falconet_server::h2::frame::{self, ErrorCode, flag, kind, setting};
use falconet_server::{Handler, MinDataRate, Options, Request, Responder, Response, Status};

// ------------------------------------------------------------------ handler

/// `/plaintext` 200 "Hello"; `/echo` reads the body, answers `len=N`;
/// `/hold` defers and keeps the responder (answered when the case ends);
/// `/big?n=N` writes N bytes; anything else 404.
#[derive(Clone)]
struct Cve {
    held: Arc<Mutex<Vec<Responder>>>,
    heads: Arc<AtomicUsize>,
}

enum St {
    Plain,
    Echo(u64),
    Hold,
    Big(usize),
    NotFound,
}

impl Handler for Cve {
    type State = St;

    fn head(&self, request: &Request<'_>) -> St {
        self.heads.fetch_add(1, Ordering::Relaxed);
        match request.path() {
            "/plaintext" => St::Plain,
            "/echo" => St::Echo(0),
            "/hold" => St::Hold,
            "/big" => St::Big(common::query_arg(request.target(), "n") as usize),
            _ => St::NotFound,
        }
    }

    fn body(&self, state: &mut St, chunk: &[u8]) {
        if let St::Echo(n) = state {
            *n += chunk.len() as u64;
        }
    }

    fn respond(&self, state: St, response: &mut Response<'_>) {
        match state {
            St::Plain => response.body(b"Hello").unwrap(),
            St::Echo(n) => response.body(format!("len={n}").as_bytes()).unwrap(),
            St::Hold => {
                if let Ok(r) = response.defer() {
                    self.held.lock().unwrap().push(r);
                }
            }
            St::Big(n) => {
                let piece = vec![b'x'; 64 * 1024];
                let mut left = n;
                while left > 0 {
                    let take = left.min(piece.len());
                    if response.write(&piece[..take]).is_err() {
                        break;
                    }
                    left -= take;
                }
            }
            St::NotFound => {
                let _ = response.status(Status::NOT_FOUND);
                let _ = response.body(b"nf");
            }
        }
    }
}

// ------------------------------------------------------------------ helpers

const EYC: u32 = ErrorCode::ENHANCE_YOUR_CALM.value();
const PROTOCOL: u32 = ErrorCode::PROTOCOL_ERROR.value();
const STREAM_CLOSED: u32 = ErrorCode::STREAM_CLOSED.value();
const FLOW: u32 = ErrorCode::FLOW_CONTROL_ERROR.value();
const COMPRESSION: u32 = ErrorCode::COMPRESSION_ERROR.value();

fn headers_frame(stream: u32, block: &[u8], end_stream: bool) -> Vec<u8> {
    frame_bytes(kind::HEADERS, flag::END_HEADERS | u8::from(end_stream), stream, block)
}

fn settings_frame(params: &[(u16, u32)]) -> Vec<u8> {
    let mut payload = Vec::new();
    for (id, v) in params {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&v.to_be_bytes());
    }
    frame_bytes(kind::SETTINGS, 0, 0, &payload)
}

fn wu(stream: u32, n: u32) -> Vec<u8> {
    frame_bytes(kind::WINDOW_UPDATE, 0, stream, &n.to_be_bytes())
}

fn rst(stream: u32, code: ErrorCode) -> Vec<u8> {
    let mut out = Vec::new();
    frame::encode_rst_stream(&mut out, stream, code);
    out
}

/// A literal field with incremental indexing (RFC 7541 6.2.1), new name.
fn indexed_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x40);
    string(out, name);
    string(out, value);
}

/// How a stream (or the connection) ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Response(u16, Vec<u8>),
    Reset(u32),
    GoAway(u32),
    Eof,
    Timeout,
}

impl Outcome {
    fn show(&self) -> String {
        match self {
            Outcome::Response(s, b) => {
                format!("response {s} {:?}", String::from_utf8_lossy(&b[..b.len().min(40)]))
            }
            Outcome::Reset(c) => format!("RST_STREAM({})", ErrorCode::from(*c)),
            Outcome::GoAway(c) => format!("GOAWAY({})", ErrorCode::from(*c)),
            Outcome::Eof => "connection closed without GOAWAY".into(),
            Outcome::Timeout => "nothing within the wait".into(),
        }
    }
}

/// The outcome of `stream` on `raw`: its response (status and body up to
/// END_STREAM), its reset, the connection's GOAWAY or end.
fn outcome(raw: &mut Raw, stream: u32, timeout: Duration) -> Outcome {
    let deadline = Instant::now() + timeout;
    let mut status = None;
    let mut body = Vec::new();
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let mut st = None;
                    let _ = raw.decoder.decode(&f.payload, |field| {
                        if field.name == b":status" {
                            st = String::from_utf8_lossy(field.value).parse::<u16>().ok();
                        }
                    });
                    if f.stream == stream {
                        if let Some(s) = st.filter(|s| *s >= 200) {
                            status = Some(s);
                        }
                        if let Some(status) = status.filter(|_| f.end_stream()) {
                            return Outcome::Response(status, body);
                        }
                    }
                } else if f.stream == stream && f.kind == kind::DATA {
                    body.extend_from_slice(&f.payload);
                    if f.end_stream() {
                        return Outcome::Response(status.unwrap_or(0), body);
                    }
                } else if f.stream == stream && f.kind == kind::RST_STREAM {
                    if let Some(s) = status {
                        // A response then a reset (NO_ERROR after an early
                        // answer): the response is what counts.
                        return Outcome::Response(s, body);
                    }
                    return Outcome::Reset(f.code());
                } else if f.kind == kind::GOAWAY {
                    if let Some(s) = status {
                        return Outcome::Response(s, body);
                    }
                    return Outcome::GoAway(f.code());
                }
            }
            Event::Eof => return Outcome::Eof,
            Event::Timeout => return Outcome::Timeout,
        }
    }
}

/// Reads the connection until GOAWAY, its end, or `timeout`; counts the
/// frames by kind on the way.
struct Fate {
    end: Outcome,
    /// The GOAWAY's debug data (the server names its reason there).
    reason: String,
    rst: usize,
    pings: usize,
    settings_acks: usize,
    heads: usize,
    frames: usize,
}

fn fate(raw: &mut Raw, timeout: Duration) -> Fate {
    let deadline = Instant::now() + timeout;
    let mut f = Fate {
        end: Outcome::Timeout,
        reason: String::new(),
        rst: 0,
        pings: 0,
        settings_acks: 0,
        heads: 0,
        frames: 0,
    };
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(fr) => {
                f.frames += 1;
                match fr.kind {
                    kind::GOAWAY => {
                        let debug = fr.payload.get(8..).unwrap_or_default();
                        f.reason = String::from_utf8_lossy(debug).into_owned();
                        f.end = Outcome::GoAway(fr.code());
                        return f;
                    }
                    kind::RST_STREAM => f.rst += 1,
                    kind::PING => f.pings += 1,
                    kind::SETTINGS => f.settings_acks += 1,
                    kind::HEADERS => {
                        f.heads += 1;
                        let _ = raw.decoder.decode(&fr.payload, |_| {});
                    }
                    _ => {}
                }
            }
            Event::Eof => {
                f.end = Outcome::Eof;
                return f;
            }
            Event::Timeout => return f,
        }
    }
}

/// Sends `bytes` from a thread, giving up after `limit` of a blocked write;
/// returns how many bytes went and whether a write blocked.
fn send_in_thread(
    raw: &Raw,
    bytes: Vec<u8>,
    limit: Duration,
) -> std::thread::JoinHandle<(usize, bool)> {
    let h = flood_in_thread(raw, bytes, Vec::new(), limit, Duration::ZERO);
    std::thread::spawn(move || {
        let (sent, end) = h.join().unwrap();
        (sent, end == SendEnd::Blocked)
    })
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum SendEnd {
    /// All sent (and the repeating tail ran for its whole time).
    Done,
    /// A write blocked for `limit`: the server stopped reading.
    Blocked,
    /// A write failed: the server closed the connection.
    Closed,
}

/// Sends `bytes`, then `tail` again and again for `keep_on`, from a thread.
fn flood_in_thread(
    raw: &Raw,
    bytes: Vec<u8>,
    tail: Vec<u8>,
    limit: Duration,
    keep_on: Duration,
) -> std::thread::JoinHandle<(usize, SendEnd)> {
    let mut tcp = raw.tcp.try_clone().unwrap();
    tcp.set_write_timeout(Some(limit)).unwrap();
    std::thread::spawn(move || {
        let mut sent = 0;
        let mut put = |chunk: &[u8], sent: &mut usize| match tcp.write_all(chunk) {
            Ok(()) => {
                *sent += chunk.len();
                None
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Some(SendEnd::Blocked)
            }
            Err(_) => Some(SendEnd::Closed),
        };
        for chunk in bytes.chunks(64 * 1024) {
            if let Some(end) = put(chunk, &mut sent) {
                return (sent, end);
            }
        }
        let until = Instant::now() + keep_on;
        while !tail.is_empty() && Instant::now() < until {
            if let Some(end) = put(&tail, &mut sent) {
                return (sent, end);
            }
        }
        (sent, SendEnd::Done)
    })
}

/// Whether a status refuses the request (the application never answered
/// it as a success).
fn refusing(status: u16) -> bool {
    (400..600).contains(&status)
}

struct Ctx<'a> {
    addr: SocketAddr,
    server: &'a common::TestServer<Cve>,
    heads: Arc<AtomicUsize>,
    healthy: std::cell::RefCell<(Raw, u32)>,
    probes: std::cell::Cell<usize>,
}

impl Ctx<'_> {
    /// A request on the well-behaved connection opened before the attack:
    /// it must be answered 200.
    fn probe(&self) -> Result<(), String> {
        let mut h = self.healthy.borrow_mut();
        let id = h.1;
        h.1 += 2;
        h.0.headers(id, &req("GET", "/plaintext"), true);
        self.probes.set(self.probes.get() + 1);
        match outcome(&mut h.0, id, Duration::from_secs(5)) {
            Outcome::Response(200, _) => Ok(()),
            other => Err(format!("well-behaved connection's stream {id}: {}", other.show())),
        }
    }

    fn connect(&self) -> Raw {
        Raw::handshake(self.addr, &[])
    }

    /// This process's resident memory (the server runs in it), bytes.
    fn rss(&self) -> usize {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .unwrap_or(0)
            * 1024
    }

    fn pool_bytes(&self) -> usize {
        let p = self.server.handle().stats().pool;
        p.leased * p.block_size
    }
}

type Check = fn(&Ctx) -> Result<String, String>;

struct Case {
    name: &'static str,
    cve: &'static str,
    rfc: &'static str,
    options: fn() -> Options,
    check: Check,
}

fn base() -> Options {
    Options::new()
        .workers(1)
        .shutdown_timeout(Duration::from_millis(200))
        .linger_timeout(Duration::from_millis(100))
}

fn quick_rate() -> Options {
    base().min_response_rate(Some(MinDataRate::new(240, Duration::from_millis(300))))
}

/// The cases run in parallel, each on its own server, but the zero-window
/// case reads the whole test process's RSS: it runs alone.
static ALONE: RwLock<()> = RwLock::new(());

fn run(case: &Case) {
    let _turn = if case.name == "cve_2019_9517_zero_window_buffering" {
        Err(ALONE.write().unwrap_or_else(|poison| poison.into_inner()))
    } else {
        Ok(ALONE.read().unwrap_or_else(|poison| poison.into_inner()))
    };
    let held = Arc::new(Mutex::new(Vec::new()));
    let heads = Arc::new(AtomicUsize::new(0));
    let server = serve((case.options)(), Cve { held: held.clone(), heads: heads.clone() });
    let healthy = Raw::handshake(server.addr, &[]);
    let ctx = Ctx {
        addr: server.addr,
        server: &server,
        heads,
        healthy: std::cell::RefCell::new((healthy, 1)),
        probes: std::cell::Cell::new(0),
    };
    let result = (case.check)(&ctx);
    let after = ctx.probe();
    let fresh = {
        let mut fresh = Raw::handshake(server.addr, &[]);
        fresh.headers(1, &req("GET", "/plaintext"), true);
        match outcome(&mut fresh, 1, Duration::from_secs(5)) {
            Outcome::Response(200, _) => Ok(()),
            other => Err(format!("a new connection after the attack: {}", other.show())),
        }
    };
    held.lock().unwrap().clear();
    drop(ctx);
    let label = format!("[{}] {} (RFC {})", case.name, case.cve, case.rfc);
    match (&result, &after, &fresh) {
        (Ok(note), Ok(()), Ok(())) => eprintln!("HELD {label}: {note}"),
        _ => {
            let msg = format!(
                "FAILED {label}: attack: {:?}; others served: {:?} / {:?}",
                result, after, fresh
            );
            eprintln!("{msg}");
            panic!("{msg}");
        }
    }
}

// ------------------------------------------------- malformed-request helper

/// [`malformed`] with one request whose HEADERS carry exactly `fields`
/// (END_STREAM set) on stream 1.
fn malformed_fields(ctx: &Ctx, fields: &[(&[u8], &[u8])]) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &raw_block(fields), true)])
}

/// Sends `frames` (beginning with a request on stream 1) on a fresh
/// connection; the request must not reach the application as a success:
/// RST_STREAM(PROTOCOL_ERROR), a 4xx/5xx, or GOAWAY(PROTOCOL_ERROR) (a
/// stream error may be treated as a connection error, RFC 9113 5.4).
/// If the connection survives, a valid request on stream 3 must be served
/// (the HPACK state stayed in step, the stream error stayed a stream's).
fn malformed(ctx: &Ctx, frames: &[Vec<u8>]) -> Result<String, String> {
    malformed_with(ctx, frames, &[PROTOCOL])
}

fn malformed_with(ctx: &Ctx, frames: &[Vec<u8>], codes: &[u32]) -> Result<String, String> {
    let before = ctx.heads.load(Ordering::Relaxed);
    let mut raw = ctx.connect();
    raw.send(&frames.concat());
    let got = outcome(&mut raw, 1, Duration::from_secs(3));
    let ok = match &got {
        Outcome::Response(s, _) => refusing(*s),
        Outcome::Reset(c) | Outcome::GoAway(c) => codes.contains(c),
        Outcome::Eof | Outcome::Timeout => false,
    };
    if !ok {
        return Err(format!("malformed request answered with {}", got.show()));
    }
    let dispatched = ctx.heads.load(Ordering::Relaxed) - before;
    if matches!(got, Outcome::Reset(_) | Outcome::GoAway(_)) && dispatched > 0 {
        // Not wrong per se, but noted.
    }
    if !matches!(got, Outcome::GoAway(_)) {
        raw.headers(3, &req("GET", "/plaintext"), true);
        match outcome(&mut raw, 3, Duration::from_secs(3)) {
            Outcome::Response(200, _) => {}
            other => {
                return Err(format!(
                    "{}; then a valid request on the same connection: {}",
                    got.show(),
                    other.show()
                ));
            }
        }
    }
    Ok(format!("{} (handler saw {dispatched})", got.show()))
}

fn req_with(method: &str, path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut b = req(method, path);
    for (n, v) in extra {
        literal(&mut b, n.as_bytes(), v.as_bytes());
    }
    b
}

fn raw_block(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        literal(&mut b, n, v);
    }
    b
}

const BASE_FIELDS: [(&[u8], &[u8]); 4] = [
    (b":method", b"POST"),
    (b":scheme", b"http"),
    (b":path", b"/echo"),
    (b":authority", b"localhost"),
];

fn with_base(extra: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut all = BASE_FIELDS.to_vec();
    all.extend_from_slice(extra);
    raw_block(&all)
}

// ----------------------------------------------------------- flood helper

/// Sends `attack` (after opening whatever it needs) and expects the
/// connection to end with GOAWAY in `codes` (or, if `eof_ok`, a close);
/// returns the fate.
fn expect_goaway(
    raw: &mut Raw,
    attack: Vec<u8>,
    codes: &[u32],
    eof_ok: bool,
    ctx: &Ctx,
) -> Result<Fate, String> {
    let sender = send_in_thread(raw, attack, Duration::from_secs(3));
    ctx.probe()?; // served during the attack
    let f = fate(raw, Duration::from_secs(5));
    let (sent, blocked) = sender.join().unwrap();
    let ok = match &f.end {
        Outcome::GoAway(c) => codes.contains(c),
        Outcome::Eof => eof_ok,
        _ => false,
    };
    if !ok {
        return Err(format!(
            "{} after {} frames (rst {}, heads {}); sender wrote {sent} B, blocked {blocked}",
            f.end.show(),
            f.frames,
            f.rst,
            f.heads
        ));
    }
    Ok(f)
}

fn hold_headers(stream: u32, end_stream: bool) -> Vec<u8> {
    headers_frame(stream, &req("GET", "/hold"), end_stream)
}

// ====================================================================== cases

/// CVE-2019-9511: credit granted a byte at a time to many streams of big
/// responses. Documented: min_response_rate closes with GOAWAY(EYC).
fn data_dribble(ctx: &Ctx) -> Result<String, String> {
    let mut raw = Raw::handshake(ctx.addr, &[(setting::INITIAL_WINDOW_SIZE, 1)]);
    let mut out = vec![frame_bytes(kind::SETTINGS, flag::ACK, 0, &[])];
    for i in 0..50u32 {
        out.push(headers_frame(2 * i + 1, &req("GET", "/big?n=1048576"), true));
    }
    raw.send(&out.concat());
    let deadline = Instant::now() + Duration::from_secs(6);
    let mut data_bytes = 0usize;
    let mut probed = false;
    while Instant::now() < deadline {
        let mut ups = Vec::new();
        for i in 0..50u32 {
            ups.push(wu(2 * i + 1, 1));
        }
        if raw.try_send(&ups.concat()).is_err() {
            break;
        }
        loop {
            match raw.next(Duration::from_millis(20)) {
                Event::Frame(f) if f.kind == kind::GOAWAY => {
                    if f.code() == EYC {
                        return Ok(format!("GOAWAY(EYC) after {data_bytes} B of DATA"));
                    }
                    return Err(format!("GOAWAY({})", ErrorCode::from(f.code())));
                }
                Event::Frame(f) => {
                    if f.kind == kind::HEADERS {
                        let _ = raw.decoder.decode(&f.payload, |_| {});
                    }
                    if f.kind == kind::DATA {
                        data_bytes += f.payload.len();
                    }
                }
                Event::Eof => return Ok(format!("closed (EOF) after {data_bytes} B")),
                Event::Timeout => break,
            }
        }
        if !probed {
            ctx.probe()?;
            probed = true;
        }
    }
    Err(format!("still open after 6 s of dribbling, {data_bytes} B of DATA taken"))
}

/// CVE-2019-9512: PINGs sent without reading the ACKs. Documented: 1,000
/// queued acknowledgements, then GOAWAY(EYC). Also allowed: the server
/// stops reading (bounded by back-pressure).
fn ping_flood(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut one = Vec::new();
    frame::encode_ping(&mut one, *b"pingpong", false);
    let flood: Vec<u8> = one.repeat(1_000_000); // 17 MB
    let sender = send_in_thread(&raw, flood, Duration::from_secs(2));
    let (sent, blocked) = sender.join().unwrap();
    ctx.probe()?;
    let f = fate(&mut raw, Duration::from_secs(5));
    match f.end {
        Outcome::GoAway(EYC) | Outcome::Eof => {
            Ok(format!("{} after {} ACKs; {sent} B sent", f.end.show(), f.pings))
        }
        Outcome::Timeout if blocked && f.pings < 1_000_000 => {
            Ok(format!("server stopped reading: {sent} B sent, {} ACKs", f.pings))
        }
        _ => Err(format!(
            "{} after {} ACKs; {sent} B sent (blocked {blocked})",
            f.end.show(),
            f.pings
        )),
    }
}

/// CVE-2019-9515: empty SETTINGS frames without reading the ACKs.
fn settings_flood(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let flood: Vec<u8> = settings_frame(&[]).repeat(2_000_000); // 18 MB
    let sender = send_in_thread(&raw, flood, Duration::from_secs(2));
    let (sent, blocked) = sender.join().unwrap();
    ctx.probe()?;
    let f = fate(&mut raw, Duration::from_secs(5));
    match f.end {
        Outcome::GoAway(EYC) | Outcome::Eof => {
            Ok(format!("{} after {} SETTINGS ACKs; {sent} B sent", f.end.show(), f.settings_acks))
        }
        Outcome::Timeout if blocked => Ok(format!("server stopped reading after {sent} B")),
        _ => Err(format!("{} after {} ACKs; {sent} B sent", f.end.show(), f.settings_acks)),
    }
}

/// CVE-2019-9513: PRIORITY churn, every frame reshaping a dependency tree
/// over idle streams. RFC 9113 5.3.2 deprecates the scheme; ignoring is
/// allowed, ENHANCE_YOUR_CALM too (10.5). Bounded: the server must answer
/// a PING behind 20,000 of them or end the connection.
fn priority_loop(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..20_000u32 {
        let stream = 2 * (i % 1000) + 1001;
        let dep = 2 * ((i * 7) % 1000) + 1001;
        let dep = if dep == stream { dep + 2 } else { dep };
        let mut p = (dep | 0x8000_0000).to_be_bytes().to_vec();
        p.push(255);
        out.extend(frame_bytes(kind::PRIORITY, 0, stream, &p));
    }
    frame::encode_ping(&mut out, *b"behind!!", false);
    let sender = send_in_thread(&raw, out, Duration::from_secs(3));
    ctx.probe()?;
    let f = fate_until_ping(&mut raw);
    sender.join().unwrap();
    match f {
        Ok(true) => Ok("PING behind them answered (ignored)".into()),
        Ok(false) => Err("neither answered nor closed".into()),
        Err(end) if matches!(end, Outcome::GoAway(EYC) | Outcome::Eof) => Ok(end.show()),
        Err(end) => Err(end.show()),
    }
}

/// Ok(true): our PING ack came; Err(outcome): the connection ended.
fn fate_until_ping(raw: &mut Raw) -> Result<bool, Outcome> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::PING && f.flags & flag::ACK != 0 => return Ok(true),
            Event::Frame(f) if f.kind == kind::GOAWAY => return Err(Outcome::GoAway(f.code())),
            Event::Frame(_) => {}
            Event::Eof => return Err(Outcome::Eof),
            Event::Timeout => return Ok(false),
        }
    }
}

/// RFC 9113 5.3.1/6.3: a stream that depends on itself is a stream error
/// PROTOCOL_ERROR (or the connection's).
fn priority_self_dependency(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&hold_headers(1, true));
    let mut p = 1u32.to_be_bytes().to_vec();
    p.push(16);
    raw.send(&frame_bytes(kind::PRIORITY, 0, 1, &p));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ (Outcome::Reset(PROTOCOL) | Outcome::GoAway(PROTOCOL)) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// The documented reset budget (`Config::reset_budget`, 1,000): the
/// attacks below send several times as many and must be cut off near it.
fn budget() -> u64 {
    u64::from(Config::default().reset_budget)
}

/// CVE-2019-9514: invalid requests that each draw a RST_STREAM. The reset
/// budget then GOAWAY(EYC).
fn reset_flood(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..5000u32 {
        let b = req_with("GET", "/plaintext", &[("Bad-Upper", "x")]);
        out.extend(headers_frame(2 * i + 1, &b, true));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], true, ctx)?;
    let dispatched = ctx.heads.load(Ordering::Relaxed);
    if (f.rst + f.heads) as u64 > 2 * budget() {
        return Err(format!(
            "{} resets / {} answers before the GOAWAY (budget {})",
            f.rst,
            f.heads,
            budget()
        ));
    }
    Ok(format!(
        "{} after {} RST_STREAM, {} answers, handler saw {dispatched}",
        f.end.show(),
        f.rst,
        f.heads
    ))
}

/// CVE-2019-9516: many 0-length header fields (name and value empty,
/// indexed), each a 32-byte table entry. An empty name is malformed
/// (8.2.1); the count and list size are bounded (431, 10.5.1). The block
/// still keeps the table in step for the next request.
fn zero_length_headers(ctx: &Ctx) -> Result<String, String> {
    let mut b = raw_block(&BASE_FIELDS[..]);
    for _ in 0..5000 {
        b.extend_from_slice(&[0x40, 0x00, 0x00]);
    }
    malformed(ctx, &[headers_frame(1, &b, true)])
}

/// The same, with a valid 1-byte name: 3,000 indexed fields `a:` (past
/// max_headers 100 and each +32 against max_head): 431 (or a reset).
fn many_tiny_headers(ctx: &Ctx) -> Result<String, String> {
    let mut b = raw_block(&BASE_FIELDS[..]);
    for _ in 0..3000 {
        indexed_literal(&mut b, b"a", b"");
    }
    malformed_with(ctx, &[headers_frame(1, &b, true)], &[PROTOCOL, EYC])
}

/// CVE-2019-9517: a zero window and many big responses, client not
/// reading: staging must stay bounded and the rate closes it.
fn zero_window_buffering(ctx: &Ctx) -> Result<String, String> {
    let before = ctx.pool_bytes();
    let rss_before = ctx.rss();
    let mut rss_peak = 0;
    let mut raw = Raw::handshake(ctx.addr, &[(setting::INITIAL_WINDOW_SIZE, 0)]);
    let mut out = vec![frame_bytes(kind::SETTINGS, flag::ACK, 0, &[])];
    for i in 0..100u32 {
        out.push(headers_frame(2 * i + 1, &req("GET", "/big?n=4194304"), true)); // 400 MiB asked
    }
    raw.send(&out.concat());
    ctx.probe()?;
    let mut peak = 0;
    let deadline = Instant::now() + Duration::from_secs(6);
    let mut end = Outcome::Timeout;
    while Instant::now() < deadline {
        peak = peak.max(ctx.pool_bytes().saturating_sub(before));
        rss_peak = rss_peak.max(ctx.rss().saturating_sub(rss_before));
        match raw.next(Duration::from_millis(20)) {
            Event::Frame(f) if f.kind == kind::GOAWAY => {
                end = Outcome::GoAway(f.code());
                break;
            }
            Event::Frame(f) if f.kind == kind::HEADERS => {
                let _ = raw.decoder.decode(&f.payload, |_| {});
            }
            Event::Frame(_) | Event::Timeout => {}
            Event::Eof => {
                end = Outcome::Eof;
                break;
            }
        }
    }
    if peak > 64 << 20 || rss_peak > 128 << 20 {
        return Err(format!(
            "pool grew by {} MiB, RSS by {} MiB, for 400 MiB of held answers",
            peak >> 20,
            rss_peak >> 20
        ));
    }
    match end {
        Outcome::GoAway(EYC) | Outcome::Eof => Ok(format!(
            "{}; pool peak +{} KiB, RSS peak +{} MiB (the test process, other tests included)",
            end.show(),
            peak >> 10,
            rss_peak >> 20
        )),
        other => Err(format!("{} ; pool peak +{} KiB", other.show(), peak >> 10)),
    }
}

/// CVE-2019-9518: empty DATA frames on an open stream. Documented:
/// max_empty_frames 100 then GOAWAY(EYC).
fn empty_data_flood(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = headers_frame(1, &req_with("POST", "/echo", &[]), false);
    for _ in 0..20_000 {
        out.extend(frame_bytes(kind::DATA, 0, 1, &[]));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], true, ctx)?;
    Ok(f.end.show())
}

/// CVE-2019-9518 on a stream the server reset: DATA past the declared
/// content-length earns a RST_STREAM, then empty DATA frames with
/// END_STREAM follow forever (an outside review's bypass: they counted
/// as work, and a reset stream's frames were dropped uncounted).
/// Documented: the client's first end is taken, each repeat is a frame
/// on a stream the server reset, ignored (RFC 9113 5.1; not reset again,
/// 5.4.2) from the ignored-frame allowance, then GOAWAY(EYC).
fn empty_data_on_reset_stream(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = headers_frame(1, &req_with("POST", "/echo", &[("content-length", "1")]), false);
    out.extend(frame_bytes(kind::DATA, 0, 1, b"ab"));
    for _ in 0..20_000 {
        out.extend(frame_bytes(kind::DATA, flag::END_STREAM, 1, &[]));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], false, ctx)?;
    // The first end is the client's own; each repeat is ignored, one
    // RST_STREAM in all (the content-length's), until the allowance ends.
    if f.rst != 1 || f.reason != "ignored frame flood" {
        return Err(format!("{} RST_STREAMs, GOAWAY for {:?}", f.rst, f.reason));
    }
    Ok(f.end.show())
}

/// After the server's final GOAWAY (answering the client's), new streams
/// are ignored (RFC 9113 6.8), while one slow upload keeps the connection
/// open: HEADERS and empty DATA on ignored streams forever (an outside
/// review's bypass). Documented: the ignored-frame allowance, spent by
/// each ignored HEADERS, then GOAWAY(EYC).
fn ignored_streams_after_goaway(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.headers(1, &req_with("POST", "/echo", &[]), false);
    raw.frame(kind::GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0]);
    match fate(&mut raw, Duration::from_secs(5)).end {
        Outcome::GoAway(0) => {}
        other => return Err(format!("the answer to our GOAWAY: {}", other.show())),
    }
    let mut out = Vec::new();
    for i in 0..20_000u32 {
        let id = 3 + 2 * i;
        out.extend(headers_frame(id, &req_with("POST", "/echo", &[]), false));
        out.extend(frame_bytes(kind::DATA, flag::END_STREAM, id, &[]));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], false, ctx)?;
    // Not the slow upload's response-rate limit, which ends it too, later.
    if f.reason != "ignored frame flood" {
        return Err(format!("GOAWAY for {:?}", f.reason));
    }
    Ok(f.end.show())
}

/// CVE-2019-9518 / ignored-frame allowance: unknown frame types (ignored
/// per 4.1/5.5) in bulk. Documented: 128 per stream, then GOAWAY(EYC).
fn unknown_frame_flood(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for _ in 0..20_000 {
        out.extend(frame_bytes(0xfa, 0, 0, &[]));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], true, ctx)?;
    Ok(f.end.show())
}

/// CVE-2023-44487: HEADERS + RST_STREAM(CANCEL) pairs for requests the
/// application holds. Documented: the reset budget then GOAWAY(EYC); the
/// work the handler sees is bounded.
fn rapid_reset(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..5000u32 {
        out.extend(hold_headers(2 * i + 1, true));
        out.extend(rst(2 * i + 1, ErrorCode::CANCEL));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], true, ctx)?;
    let heads = ctx.heads.load(Ordering::Relaxed) - ctx.probes.get();
    if heads as u64 > budget() * 5 / 2 {
        return Err(format!("handler started {heads} requests before the cut-off"));
    }
    Ok(format!("{}; handler started {heads} of 5000", f.end.show()))
}

/// CVE-2023-44487 on streams the server answers at once (the RST lands on
/// a closed stream): not an amplification, but ignored frames are bounded.
fn rapid_reset_answered(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..5000u32 {
        out.extend(headers_frame(2 * i + 1, &req("GET", "/plaintext"), true));
        out.extend(rst(2 * i + 1, ErrorCode::CANCEL));
    }
    let sender = send_in_thread(&raw, out, Duration::from_secs(3));
    ctx.probe()?;
    let f = fate(&mut raw, Duration::from_secs(4));
    sender.join().unwrap();
    match f.end {
        Outcome::GoAway(EYC) | Outcome::Eof | Outcome::Timeout => {
            Ok(format!("{} after {} answers, {} resets", f.end.show(), f.heads, f.rst))
        }
        other => Err(other.show()),
    }
}

/// CVE-2025-8671 MadeYouReset: each request the application holds is
/// followed by a frame that makes the server reset the stream. Documented:
/// the same reset budget, then GOAWAY(EYC).
fn made_you_reset(
    ctx: &Ctx,
    trigger: fn(u32) -> Vec<u8>,
    end_stream: bool,
    path: &str,
) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..3000u32 {
        let id = 2 * i + 1;
        out.extend(headers_frame(
            id,
            &req_with(
                if path == "/echo" { "POST" } else { "GET" },
                path,
                &[("content-length", "1")][..usize::from(path == "/echo")],
            ),
            end_stream,
        ));
        out.extend(trigger(id));
    }
    let f = expect_goaway(&mut raw, out, &[EYC], true, ctx)?;
    let heads = ctx.heads.load(Ordering::Relaxed) - ctx.probes.get();
    if f.rst as u64 > 2 * budget() || heads as u64 > 3 * budget() {
        return Err(format!(
            "{} resets sent and {heads} requests started before the cut-off",
            f.rst
        ));
    }
    Ok(format!("{} after {} RST_STREAM; handler started {heads}", f.end.show(), f.rst))
}

fn myr_window_update_zero(ctx: &Ctx) -> Result<String, String> {
    made_you_reset(ctx, |id| wu(id, 0), true, "/hold")
}
fn myr_priority_self(ctx: &Ctx) -> Result<String, String> {
    made_you_reset(
        ctx,
        |id| {
            let mut p = id.to_be_bytes().to_vec();
            p.push(0);
            frame_bytes(kind::PRIORITY, 0, id, &p)
        },
        true,
        "/hold",
    )
}
fn myr_data_half_closed(ctx: &Ctx) -> Result<String, String> {
    made_you_reset(ctx, |id| frame_bytes(kind::DATA, 0, id, b"x"), true, "/hold")
}
fn myr_content_length(ctx: &Ctx) -> Result<String, String> {
    made_you_reset(ctx, |id| frame_bytes(kind::DATA, flag::END_STREAM, id, b"xx"), false, "/echo")
}
fn myr_window_overflow(ctx: &Ctx) -> Result<String, String> {
    made_you_reset(ctx, |id| [wu(id, 0x7fff_ffff), wu(id, 0x7fff_ffff)].concat(), true, "/hold")
}

/// CVE-2024-27316 class: a HEADERS without END_HEADERS then CONTINUATIONs
/// forever. `piece` bytes each. Documented: max_header_list_size compressed
/// bytes per block (1 KiB charge per tiny frame past 8): GOAWAY. Bounded:
/// the sender cannot push all 64 MiB through.
fn continuation_flood(ctx: &Ctx, piece: usize, count: usize) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut first = req("GET", "/plaintext");
    // Open a literal whose value the CONTINUATIONs carry.
    first.push(0);
    string(&mut first, b"x-flood");
    let mut out = frame_bytes(kind::HEADERS, flag::END_STREAM, 1, &first);
    // value length: huge integer so the decoder waits for bytes
    let mut len = Vec::new();
    integer(&mut len, 100 << 20, 7, 0);
    out.extend(frame_bytes(kind::CONTINUATION, 0, 1, &len));
    let payload = vec![b'a'; piece];
    let one = frame_bytes(kind::CONTINUATION, 0, 1, &payload);
    for _ in 0..count {
        out.extend_from_slice(&one);
    }
    let tail = one.repeat((65536 / one.len()).max(1));
    // Keep flooding for 3 s (30 times the linger timeout of 100 ms): the
    // server must have closed the connection by then.
    let sender = flood_in_thread(&raw, out, tail, Duration::from_secs(3), Duration::from_secs(3));
    ctx.probe()?;
    let f = fate(&mut raw, Duration::from_secs(5));
    let (sent, end) = sender.join().unwrap();
    match (&f.end, end) {
        (Outcome::GoAway(_) | Outcome::Eof, SendEnd::Closed) => {
            Ok(format!("{}; the flood's writes failed after {} KiB", f.end.show(), sent >> 10))
        }
        _ => Err(format!(
            "{}; the sender pushed {} MiB over 3 s and its writes ended {:?} (linger 100 ms)",
            f.end.show(),
            sent >> 20,
            end
        )),
    }
}

fn continuation_empty(ctx: &Ctx) -> Result<String, String> {
    continuation_flood(ctx, 0, 1000)
}
fn continuation_tiny(ctx: &Ctx) -> Result<String, String> {
    continuation_flood(ctx, 1, 1000)
}
fn continuation_big(ctx: &Ctx) -> Result<String, String> {
    continuation_flood(ctx, 16_384, 64)
}

/// 2024 CONTINUATION family: a huge but finite field block (200 KiB of
/// real fields in 1 KiB CONTINUATIONs). 431 (RFC 9110 / 9113 10.5.1), a
/// reset, or GOAWAY; never served.
fn huge_header_block(ctx: &Ctx) -> Result<String, String> {
    let mut b = req("GET", "/plaintext");
    for i in 0..2000 {
        literal(&mut b, format!("x-h{i}").as_bytes(), &[b'v'; 100]);
    }
    let mut frames = Vec::new();
    let mut chunks = b.chunks(1024).peekable();
    let first = chunks.next().unwrap();
    frames.push(frame_bytes(kind::HEADERS, flag::END_STREAM, 1, first));
    while let Some(c) = chunks.next() {
        let end = chunks.peek().is_none();
        frames.push(frame_bytes(kind::CONTINUATION, if end { flag::END_HEADERS } else { 0 }, 1, c));
    }
    let mut raw = ctx.connect();
    raw.send(&frames.concat());
    let got = outcome(&mut raw, 1, Duration::from_secs(3));
    match &got {
        Outcome::Response(s, _) if refusing(*s) => Ok(got.show()),
        Outcome::Reset(_) | Outcome::GoAway(_) | Outcome::Eof => Ok(got.show()),
        _ => Err(got.show()),
    }
}

/// RFC 9113 6.10: a frame of another stream inside a block: connection
/// error PROTOCOL_ERROR.
fn continuation_interleaved(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let b = req("GET", "/plaintext");
    let (a, c) = b.split_at(10);
    raw.send(
        &[
            frame_bytes(kind::HEADERS, flag::END_STREAM, 1, a),
            headers_frame(3, &req("GET", "/plaintext"), true),
            frame_bytes(kind::CONTINUATION, flag::END_HEADERS, 1, c),
        ]
        .concat(),
    );
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ Outcome::GoAway(PROTOCOL) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// CVE-2016-6581 class HPACK bomb: a 4 KB dynamic entry then 12,000 one-byte
/// references to it (48 MB decoded). Documented: max_head 32 KiB with +32
/// per field, answered 431 with the block decoded to its end; the next
/// request referencing the entry is served (table in step).
fn hpack_bomb(ctx: &Ctx) -> Result<String, String> {
    let mut b = req("GET", "/plaintext");
    indexed_literal(&mut b, b"x-bomb", &[b'a'; 4000]);
    b.extend(std::iter::repeat_n(0xbe, 12_000)); // index 62
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &b, true));
    let got = outcome(&mut raw, 1, Duration::from_secs(3));
    match &got {
        Outcome::Response(s, _) if refusing(*s) => {}
        Outcome::Reset(_) => {}
        Outcome::GoAway(c) if *c == EYC || *c == COMPRESSION || *c == PROTOCOL => {
            return Ok(got.show());
        }
        _ => return Err(got.show()),
    }
    let mut again = req("GET", "/plaintext");
    again.push(0xbe);
    raw.send(&headers_frame(3, &again, true));
    match outcome(&mut raw, 3, Duration::from_secs(3)) {
        Outcome::Response(200, _) => Ok(format!("{}; the entry still usable after", got.show())),
        o => Err(format!("{}; then a request using the entry: {}", got.show(), o.show())),
    }
}

/// The bomb spread over many requests, each within the limit (8 refs =
/// 32.3 KB): each alone is legal; 200 of them must all be answered with the
/// pool not growing.
fn hpack_bomb_spread(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    let mut first = req("GET", "/plaintext");
    indexed_literal(&mut first, b"x-bomb", &[b'a'; 3000]);
    out.extend(headers_frame(1, &first, true));
    for i in 1..100u32 {
        let mut b = req("GET", "/plaintext");
        b.extend(std::iter::repeat_n(0xbe, 9)); // 9 x 3038 = 27 KB < 32 KiB
        out.extend(headers_frame(2 * i + 1, &b, true));
    }
    raw.send(&out);
    let mut ok = 0;
    let f = fate_count_responses(&mut raw, 100, &mut ok);
    if ok == 100 {
        Ok("100 legal near-limit requests served".into())
    } else {
        Err(format!("{ok} of 100 served; {}", f.show()))
    }
}

fn fate_count_responses(raw: &mut Raw, want: usize, ok: &mut usize) -> Outcome {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match raw.next(deadline.saturating_duration_since(Instant::now())) {
            Event::Frame(f) if f.kind == kind::GOAWAY => return Outcome::GoAway(f.code()),
            Event::Frame(f) if f.kind == kind::RST_STREAM => return Outcome::Reset(f.code()),
            Event::Frame(f) => {
                if f.kind == kind::HEADERS {
                    let _ = raw.decoder.decode(&f.payload, |_| {});
                }
                if f.end_stream() {
                    *ok += 1;
                    if *ok == want {
                        return Outcome::Timeout;
                    }
                }
            }
            Event::Eof => return Outcome::Eof,
            Event::Timeout => return Outcome::Timeout,
        }
    }
}

/// RFC 7541 4.2/6.3: a table size update above SETTINGS_HEADER_TABLE_SIZE
/// (4,096): COMPRESSION_ERROR.
fn table_size_above_limit(ctx: &Ctx) -> Result<String, String> {
    let mut b = Vec::new();
    integer(&mut b, 1 << 20, 5, 0x20);
    b.extend(req("GET", "/plaintext"));
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &b, true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ Outcome::GoAway(COMPRESSION) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// RFC 7541 4.2: a size update after the first field of a block:
/// COMPRESSION_ERROR.
fn table_size_mid_block(ctx: &Ctx) -> Result<String, String> {
    let mut b = req("GET", "/plaintext");
    integer(&mut b, 0, 5, 0x20);
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &b, true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ Outcome::GoAway(COMPRESSION) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// A block of 16,000 table size updates at its start. RFC 7541 allows
/// updates at the start (only the last two matter); either served or
/// COMPRESSION_ERROR, promptly.
fn table_size_update_flood(ctx: &Ctx) -> Result<String, String> {
    let mut b = vec![0x20u8; 16_000];
    b.extend(req("GET", "/plaintext"));
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &b, true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ (Outcome::Response(_, _) | Outcome::GoAway(COMPRESSION) | Outcome::GoAway(EYC)) => {
            Ok(o.show())
        }
        o => Err(o.show()),
    }
}

/// CVE-2020-11080: one SETTINGS frame of 2,730 INITIAL_WINDOW_SIZE entries
/// with 100 streams open. Documented: at most 32 params, else GOAWAY(EYC).
fn settings_many_entries(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let mut out = Vec::new();
    for i in 0..90u32 {
        out.extend(hold_headers(2 * i + 1, true));
    }
    let params: Vec<(u16, u32)> =
        (0..2730u32).map(|i| (setting::INITIAL_WINDOW_SIZE, 65535 + (i % 7))).collect();
    out.extend(settings_frame(&params));
    raw.send(&out);
    let f = fate(&mut raw, Duration::from_secs(3));
    match f.end {
        Outcome::GoAway(EYC) => Ok(f.end.show()),
        other => Err(format!("{} ({} SETTINGS seen)", other.show(), f.settings_acks)),
    }
}

/// The documented limit's edge: 32 entries are acknowledged.
fn settings_32_entries_ok(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let params: Vec<(u16, u32)> =
        (0..32u32).map(|i| (setting::INITIAL_WINDOW_SIZE, 65535 + i)).collect();
    raw.send(&settings_frame(&params));
    let deadline = Instant::now() + Duration::from_secs(3);
    while let Some(f) = raw.next_frame(deadline.saturating_duration_since(Instant::now())) {
        if f.kind == kind::SETTINGS && f.flags & flag::ACK != 0 {
            return Ok("acknowledged".into());
        }
        if f.kind == kind::GOAWAY {
            return Err(format!("GOAWAY({})", ErrorCode::from(f.code())));
        }
    }
    Err("no acknowledgement".into())
}

/// RFC 9113 5.1.1: a client stream id must be odd.
fn even_stream_id(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&headers_frame(2, &req("GET", "/plaintext"), true));
    match outcome(&mut raw, 2, Duration::from_secs(3)) {
        o @ Outcome::GoAway(PROTOCOL) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 5.1 / 5.1.1: reusing a closed stream's id: connection error
/// (STREAM_CLOSED per 5.1 closed, or PROTOCOL_ERROR per 5.1.1).
fn reuse_closed_id(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &req("GET", "/plaintext"), true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        Outcome::Response(200, _) => {}
        o => return Err(format!("first request: {}", o.show())),
    }
    raw.send(&headers_frame(1, &req("GET", "/plaintext"), true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ (Outcome::GoAway(PROTOCOL) | Outcome::GoAway(STREAM_CLOSED)) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// Stream-id exhaustion: the last id 2^31-1 is served; then any new
/// stream (its id necessarily lower) is a PROTOCOL_ERROR.
fn last_stream_id(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    let last = 0x7fff_ffff;
    raw.send(&headers_frame(last, &req("GET", "/plaintext"), true));
    match outcome(&mut raw, last, Duration::from_secs(3)) {
        Outcome::Response(200, _) => {}
        o => return Err(format!("stream 2^31-1: {}", o.show())),
    }
    raw.send(&headers_frame(3, &req("GET", "/plaintext"), true));
    match outcome(&mut raw, 3, Duration::from_secs(3)) {
        o @ (Outcome::GoAway(PROTOCOL) | Outcome::GoAway(STREAM_CLOSED)) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 5.1: DATA on an idle stream: connection PROTOCOL_ERROR.
fn data_on_idle(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&frame_bytes(kind::DATA, flag::END_STREAM, 5, b"x"));
    match outcome(&mut raw, 5, Duration::from_secs(3)) {
        o @ Outcome::GoAway(PROTOCOL) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 6.9.1: the connection window past 2^31-1: GOAWAY
/// FLOW_CONTROL_ERROR.
fn window_overflow_connection(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&wu(0, 0x7fff_ffff));
    let f = fate(&mut raw, Duration::from_secs(3));
    match f.end {
        Outcome::GoAway(FLOW) => Ok(f.end.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 6.9.1: a stream window past 2^31-1: RST_STREAM
/// FLOW_CONTROL_ERROR (or the connection's).
fn window_overflow_stream(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&[hold_headers(1, true), wu(1, 0x7fff_ffff)].concat());
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ (Outcome::Reset(FLOW) | Outcome::GoAway(FLOW)) => Ok(o.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 6.9.2: SETTINGS_INITIAL_WINDOW_SIZE that pushes an open
/// stream's window past 2^31-1: connection FLOW_CONTROL_ERROR.
fn window_overflow_by_settings(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(
        &[
            hold_headers(1, true),
            wu(1, 0x7fff_ffff - 65535),
            settings_frame(&[(setting::INITIAL_WINDOW_SIZE, 65536)]),
        ]
        .concat(),
    );
    let f = fate(&mut raw, Duration::from_secs(3));
    match f.end {
        Outcome::GoAway(FLOW) => Ok(f.end.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 6.5.2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1:
/// FLOW_CONTROL_ERROR.
fn initial_window_too_big(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&settings_frame(&[(setting::INITIAL_WINDOW_SIZE, 0x8000_0000)]));
    let f = fate(&mut raw, Duration::from_secs(3));
    match f.end {
        Outcome::GoAway(FLOW) => Ok(f.end.show()),
        o => Err(o.show()),
    }
}

/// RFC 9113 6.9: WINDOW_UPDATE of 0 on the connection: PROTOCOL_ERROR.
fn window_update_zero_connection(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&wu(0, 0));
    let f = fate(&mut raw, Duration::from_secs(3));
    match f.end {
        Outcome::GoAway(PROTOCOL) => Ok(f.end.show()),
        o => Err(o.show()),
    }
}

// ------------------------------------------------------ smuggling (section 8)

fn cl_more_data(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[(b"content-length", b"5")]), false),
            frame_bytes(kind::DATA, flag::END_STREAM, 1, b"0123456789"),
        ],
    )
}
fn cl_less_data(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[(b"content-length", b"10")]), false),
            frame_bytes(kind::DATA, flag::END_STREAM, 1, b"01234"),
        ],
    )
}
fn cl_split_data(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[(b"content-length", b"4")]), false),
            frame_bytes(kind::DATA, 0, 1, b"012"),
            frame_bytes(kind::DATA, 0, 1, b"345"),
            frame_bytes(kind::DATA, flag::END_STREAM, 1, b""),
        ],
    )
}
fn cl_no_data(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"content-length", b"5")]), true)])
}
fn cl_twice_differing(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(
                1,
                &with_base(&[(b"content-length", b"3"), (b"content-length", b"5")]),
                false,
            ),
            frame_bytes(kind::DATA, flag::END_STREAM, 1, b"abc"),
        ],
    )
}
fn transfer_encoding(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[(b"transfer-encoding", b"chunked")]), false),
            frame_bytes(kind::DATA, flag::END_STREAM, 1, b"0\r\n\r\n"),
        ],
    )
}
fn connection_header(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"connection", b"keep-alive")]), true)])
}
fn keep_alive_header(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"keep-alive", b"timeout=5")]), true)])
}
fn proxy_connection_header(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"proxy-connection", b"keep-alive")]), true)])
}
fn upgrade_header(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"upgrade", b"websocket")]), true)])
}
fn te_not_trailers(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"te", b"gzip")]), true)])
}
fn te_trailers_allowed(ctx: &Ctx) -> Result<String, String> {
    let mut raw = ctx.connect();
    raw.send(&headers_frame(1, &with_base(&[(b"te", b"trailers")]), true));
    match outcome(&mut raw, 1, Duration::from_secs(3)) {
        o @ Outcome::Response(200, _) => Ok(o.show()),
        o => Err(o.show()),
    }
}
fn uppercase_name(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"Content-Length", b"0")]), true)])
}
fn value_cr(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"x-a", b"a\rb")]), true)])
}
fn value_lf(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"x-a", b"a\nx-b: c")]), true)])
}
fn value_nul(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"x-a", b"a\0b")]), true)])
}
fn path_crlf(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/plaintext HTTP/1.1\r\nHost: x\r\n\r\nGET /admin"),
            (b":authority", b"localhost"),
        ],
    )
}
fn name_with_space(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"x a", b"b")]), true)])
}
fn empty_name(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b"", b"b")]), true)])
}
fn pseudo_after_regular(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b"x-a", b"b"),
            (b":path", b"/plaintext"),
            (b":authority", b"localhost"),
        ],
    )
}
fn pseudo_in_trailers(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[]), false),
            frame_bytes(kind::DATA, 0, 1, b"abc"),
            headers_frame(1, &raw_block(&[(b":path", b"/admin")]), true),
        ],
    )
}
fn trailers_without_end_stream(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[]), false),
            frame_bytes(kind::DATA, 0, 1, b"abc"),
            headers_frame(1, &raw_block(&[(b"x-t", b"1")]), false),
        ],
    )
}
fn unknown_pseudo(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &with_base(&[(b":foo", b"bar")]), true)])
}
fn status_pseudo_in_request(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":status", b"200"),
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/plaintext"),
            (b":authority", b"localhost"),
        ],
    )
}
fn duplicate_path(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/plaintext"),
            (b":path", b"/admin"),
            (b":authority", b"localhost"),
        ],
    )
}
fn missing_path(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"localhost")],
    )
}
fn missing_method(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[(b":scheme", b"http"), (b":path", b"/plaintext"), (b":authority", b"localhost")],
    )
}
fn missing_scheme(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[(b":method", b"GET"), (b":path", b"/plaintext"), (b":authority", b"localhost")],
    )
}
fn empty_path(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b""),
            (b":authority", b"localhost"),
        ],
    )
}
fn connect_with_path(ctx: &Ctx) -> Result<String, String> {
    malformed_fields(
        ctx,
        &[
            (b":method", b"CONNECT"),
            (b":scheme", b"http"),
            (b":path", b"/"),
            (b":authority", b"localhost:80"),
        ],
    )
}
fn connect_without_authority(ctx: &Ctx) -> Result<String, String> {
    malformed(ctx, &[headers_frame(1, &raw_block(&[(b":method", b"CONNECT")]), true)])
}
/// A valid CONNECT (8.5): the server has no tunnels, so it must refuse
/// (documented 501), never treat it as a request with a path.
fn connect_valid_refused(ctx: &Ctx) -> Result<String, String> {
    malformed_with(
        ctx,
        &[headers_frame(
            1,
            &raw_block(&[(b":method", b"CONNECT"), (b":authority", b"localhost:80")]),
            false,
        )],
        &[PROTOCOL, ErrorCode::CONNECT_ERROR.value(), ErrorCode::REFUSED_STREAM.value()],
    )
}
fn host_smuggled_via_connection_specific_trailer(ctx: &Ctx) -> Result<String, String> {
    malformed(
        ctx,
        &[
            headers_frame(1, &with_base(&[]), false),
            frame_bytes(kind::DATA, 0, 1, b"abc"),
            headers_frame(1, &raw_block(&[(b"transfer-encoding", b"chunked")]), true),
        ],
    )
}

// ====================================================================== table

macro_rules! cases {
    ($($name:ident, $cve:expr, $rfc:expr, $opts:expr, $check:expr;)*) => {
        $(
            #[test]
            fn $name() {
                run(&Case { name: stringify!($name), cve: $cve, rfc: $rfc, options: $opts, check: $check });
            }
        )*
    };
}

cases! {
    cve_2019_9511_data_dribble, "CVE-2019-9511", "9113 5.2/10.5", quick_rate, data_dribble;
    cve_2019_9512_ping_flood, "CVE-2019-9512", "9113 6.7/10.5", base, ping_flood;
    cve_2019_9513_priority_loop, "CVE-2019-9513", "9113 5.3.2/10.5", base, priority_loop;
    cve_2019_9513_priority_self_dependency, "CVE-2019-9513", "9113 5.3.1", base, priority_self_dependency;
    cve_2019_9514_reset_flood, "CVE-2019-9514", "9113 8.1.1/10.5", base, reset_flood;
    cve_2019_9515_settings_flood, "CVE-2019-9515", "9113 6.5/10.5", base, settings_flood;
    cve_2019_9516_zero_length_headers, "CVE-2019-9516", "9113 8.2.1; 7541 4.1", base, zero_length_headers;
    cve_2019_9516_many_tiny_headers, "CVE-2019-9516", "9113 6.5.2/10.5.1", base, many_tiny_headers;
    cve_2019_9517_zero_window_buffering, "CVE-2019-9517", "9113 5.2/10.5", quick_rate, zero_window_buffering;
    cve_2019_9518_empty_data_flood, "CVE-2019-9518", "9113 10.5", base, empty_data_flood;
    cve_2019_9518_unknown_frame_flood, "CVE-2019-9518", "9113 5.5/10.5", base, unknown_frame_flood;
    cve_2019_9518_empty_data_on_reset_stream, "CVE-2019-9518", "9113 5.1/10.5", base, empty_data_on_reset_stream;
    cve_2019_9518_ignored_streams_after_goaway, "CVE-2019-9518", "9113 6.8/10.5", base, ignored_streams_after_goaway;
    cve_2023_44487_rapid_reset, "CVE-2023-44487", "9113 5.4.2/10.5", base, rapid_reset;
    cve_2023_44487_rapid_reset_answered, "CVE-2023-44487", "9113 5.1/10.5", base, rapid_reset_answered;
    cve_2025_8671_window_update_zero, "CVE-2025-8671", "9113 6.9", base, myr_window_update_zero;
    cve_2025_8671_priority_self, "CVE-2025-8671", "9113 5.3.1", base, myr_priority_self;
    cve_2025_8671_data_half_closed, "CVE-2025-8671", "9113 5.1", base, myr_data_half_closed;
    cve_2025_8671_content_length, "CVE-2025-8671", "9113 8.1.1", base, myr_content_length;
    cve_2025_8671_window_overflow, "CVE-2025-8671", "9113 6.9.1", base, myr_window_overflow;
    cve_2024_27316_continuation_empty, "CVE-2024-27316", "9113 6.10/10.5", base, continuation_empty;
    cve_2024_27316_continuation_tiny, "CVE-2024-27316", "9113 6.10/10.5", base, continuation_tiny;
    cve_2024_27316_continuation_big, "CVE-2024-27316", "9113 6.10/10.5", base, continuation_big;
    cve_2024_27316_huge_header_block, "CVE-2024-27316", "9113 10.5.1", base, huge_header_block;
    continuation_interleaved_frame, "CONTINUATION family", "9113 6.10", base, continuation_interleaved;
    cve_2016_6581_hpack_bomb, "CVE-2016-6581", "7541 4.1; 9113 10.5.1", base, hpack_bomb;
    cve_2016_6581_hpack_bomb_spread, "CVE-2016-6581", "7541 4.1", base, hpack_bomb_spread;
    hpack_table_size_above_limit, "CVE-2016-6581 class", "7541 4.2/6.3", base, table_size_above_limit;
    hpack_table_size_mid_block, "CVE-2016-6581 class", "7541 4.2", base, table_size_mid_block;
    hpack_table_size_update_flood, "CVE-2016-6581 class", "7541 4.2", base, table_size_update_flood;
    cve_2020_11080_settings_many_entries, "CVE-2020-11080", "9113 6.5/10.5", base, settings_many_entries;
    cve_2020_11080_settings_32_entries_ok, "CVE-2020-11080", "9113 6.5", base, settings_32_entries_ok;
    stream_id_even, "stream ids", "9113 5.1.1", base, even_stream_id;
    stream_id_reuse_closed, "stream ids", "9113 5.1/5.1.1", base, reuse_closed_id;
    stream_id_exhaustion, "stream ids", "9113 5.1.1", base, last_stream_id;
    stream_data_on_idle, "stream ids", "9113 5.1", base, data_on_idle;
    window_update_overflow_connection, "WINDOW_UPDATE overflow", "9113 6.9.1", base, window_overflow_connection;
    window_update_overflow_stream, "WINDOW_UPDATE overflow", "9113 6.9.1", base, window_overflow_stream;
    window_update_overflow_by_settings, "WINDOW_UPDATE overflow", "9113 6.9.2", base, window_overflow_by_settings;
    window_initial_size_too_big, "WINDOW_UPDATE overflow", "9113 6.5.2", base, initial_window_too_big;
    window_update_zero_on_connection, "WINDOW_UPDATE", "9113 6.9", base, window_update_zero_connection;
    smuggle_cl_more_data, "h2 smuggling", "9113 8.1.1", base, cl_more_data;
    smuggle_cl_less_data, "h2 smuggling", "9113 8.1.1", base, cl_less_data;
    smuggle_cl_split_data, "h2 smuggling", "9113 8.1.1", base, cl_split_data;
    smuggle_cl_no_data, "h2 smuggling", "9113 8.1.1", base, cl_no_data;
    smuggle_cl_twice_differing, "h2 smuggling", "9113 8.1.1; 9110 8.6", base, cl_twice_differing;
    smuggle_transfer_encoding, "h2 smuggling", "9113 8.2.2", base, transfer_encoding;
    smuggle_connection, "h2 smuggling", "9113 8.2.2", base, connection_header;
    smuggle_keep_alive, "h2 smuggling", "9113 8.2.2", base, keep_alive_header;
    smuggle_proxy_connection, "h2 smuggling", "9113 8.2.2", base, proxy_connection_header;
    smuggle_upgrade, "h2 smuggling", "9113 8.2.2", base, upgrade_header;
    smuggle_te_gzip, "h2 smuggling", "9113 8.2.2", base, te_not_trailers;
    smuggle_te_trailers_allowed, "h2 smuggling", "9113 8.2.2", base, te_trailers_allowed;
    smuggle_uppercase_name, "h2 smuggling", "9113 8.2.1", base, uppercase_name;
    smuggle_value_cr, "h2 smuggling", "9113 8.2.1", base, value_cr;
    smuggle_value_lf, "h2 smuggling", "9113 8.2.1", base, value_lf;
    smuggle_value_nul, "h2 smuggling", "9113 8.2.1", base, value_nul;
    smuggle_path_crlf, "h2 smuggling", "9113 8.2.1", base, path_crlf;
    smuggle_name_with_space, "h2 smuggling", "9113 8.2.1", base, name_with_space;
    smuggle_empty_name, "h2 smuggling", "9113 8.2.1", base, empty_name;
    smuggle_pseudo_after_regular, "h2 smuggling", "9113 8.3", base, pseudo_after_regular;
    smuggle_pseudo_in_trailers, "h2 smuggling", "9113 8.1", base, pseudo_in_trailers;
    smuggle_trailers_without_end_stream, "h2 smuggling", "9113 8.1", base, trailers_without_end_stream;
    smuggle_connection_specific_trailer, "h2 smuggling", "9113 8.2.2", base, host_smuggled_via_connection_specific_trailer;
    smuggle_unknown_pseudo, "h2 smuggling", "9113 8.3", base, unknown_pseudo;
    smuggle_status_in_request, "h2 smuggling", "9113 8.3", base, status_pseudo_in_request;
    smuggle_duplicate_path, "h2 smuggling", "9113 8.3.1", base, duplicate_path;
    smuggle_missing_path, "h2 smuggling", "9113 8.3.1", base, missing_path;
    smuggle_missing_method, "h2 smuggling", "9113 8.3.1", base, missing_method;
    smuggle_missing_scheme, "h2 smuggling", "9113 8.3.1", base, missing_scheme;
    smuggle_empty_path, "h2 smuggling", "9113 8.3.1", base, empty_path;
    smuggle_connect_with_path, "h2 smuggling", "9113 8.5", base, connect_with_path;
    smuggle_connect_without_authority, "h2 smuggling", "9113 8.5", base, connect_without_authority;
    smuggle_connect_valid_refused, "h2 smuggling", "9113 8.5", base, connect_valid_refused;
}
