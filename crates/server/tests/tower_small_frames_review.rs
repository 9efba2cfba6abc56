//! An adversarial review of 40be356 (small frames of polled responses
//! copied: HTTP/1 under 64 KiB, HTTP/2 under 4 KiB), kept as tests: a
//! scripted tower body (`/s?script=...`: `N` bytes, `NxM` frames, `P`
//! pending, `T` trailers, `E` error, `K` panic) at the edges of
//! `max_pending_output` (1 byte to 1 MiB) and of HTTP/2 windows (0 to
//! 5,000), with frames at both copy thresholds, pipelining, HTTP/1.0,
//! HEAD, broken exact sizes, failures after small frames, a client that
//! never reads and one that reads late. Its one finding, a worker held
//! for 50 ms by bodies of 1-byte frames, is fixed (71b3cf6) and tested in
//! `tower_small_frames.rs`.
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use falconet_server::tower::{Body, TowerHandler};
use falconet_server::{Context as ServerContext, Options, Session};
use http_body::{Frame, SizeHint};

fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(7) % 251) as u8
}

#[derive(Clone, Debug)]
enum Ev {
    Data(usize),
    Pending,
    Trailers,
    Error,
    Panic,
}

fn parse(script: &str) -> Vec<Ev> {
    let mut out = Vec::new();
    for tok in script.split('.').filter(|t| !t.is_empty()) {
        // "NxM": M frames of N bytes
        let (tok, rep) = match tok.split_once('x') {
            Some((a, b)) => (a, b.parse::<usize>().unwrap()),
            None => (tok, 1),
        };
        let ev = match tok {
            "P" => Ev::Pending,
            "T" => Ev::Trailers,
            "E" => Ev::Error,
            "K" => Ev::Panic,
            n => Ev::Data(n.parse().unwrap()),
        };
        for _ in 0..rep {
            out.push(ev.clone());
        }
    }
    out
}

fn parse_compact(script: &str) -> Vec<(Ev, usize)> {
    let mut out = Vec::new();
    for tok in script.split('.').filter(|t| !t.is_empty()) {
        let (tok, rep) = match tok.split_once('x') {
            Some((a, b)) => (a, b.parse::<usize>().unwrap()),
            None => (tok, 1),
        };
        let ev = match tok {
            "P" => Ev::Pending,
            "T" => Ev::Trailers,
            "E" => Ev::Error,
            "K" => Ev::Panic,
            n => Ev::Data(n.parse().unwrap()),
        };
        out.push((ev, rep));
    }
    out
}

fn data_len(evs: &[Ev]) -> u64 {
    evs.iter().map(|e| if let Ev::Data(n) = e { *n as u64 } else { 0 }).sum()
}

struct Script {
    evs: Vec<(Ev, usize)>,
    rep: usize,
    next: usize,
    offset: u64,
    exact: Option<u64>,
    pended: bool,
}

impl http_body::Body for Script {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let Some((ev, count)) = self.evs.get(self.next).cloned() else { return Poll::Ready(None) };
        match ev {
            Ev::Pending if !self.pended => {
                self.pended = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            _ => {}
        }
        self.pended = false;
        self.rep += 1;
        if self.rep == count {
            self.rep = 0;
            self.next += 1;
        }
        match ev {
            Ev::Pending => self.poll_frame(cx),
            Ev::Data(n) => {
                let start = self.offset;
                self.offset += n as u64;
                let data: Vec<u8> = (start..self.offset).map(byte_at).collect();
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(data)))))
            }
            Ev::Trailers => {
                let mut map = http::HeaderMap::new();
                map.insert("x-trail", http::HeaderValue::from_static("yes"));
                Poll::Ready(Some(Ok(Frame::trailers(map))))
            }
            Ev::Error => Poll::Ready(Some(Err(std::io::Error::other("boom")))),
            Ev::Panic => panic!("body panics"),
        }
    }
    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// `/s?script=...&exact=N` (exact=0 means none; use `exact=` with +1 offset: exact-1)
#[derive(Clone)]
struct Service;

impl tower_service::Service<http::Request<Body>> for Service {
    type Response = http::Response<Script>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let target = request.uri().to_string();
        let script = target
            .split_once("script=")
            .map(|(_, s)| s.split('&').next().unwrap().to_string())
            .unwrap_or_default();
        let evs = parse_compact(&script);
        let e = common::query_arg(&target, "exact");
        let exact = (e > 0).then(|| e - 1);
        ready(Ok(http::Response::new(Script {
            evs,
            rep: 0,
            next: 0,
            offset: 0,
            exact,
            pended: false,
        })))
    }
}

fn expected(n: u64) -> Vec<u8> {
    (0..n).map(byte_at).collect()
}

/// Decodes a chunked body at the start of `wire`: (body, trailer text, rest).
fn dechunk(mut rest: &[u8]) -> Option<(Vec<u8>, String, &[u8])> {
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).ok()?, 16).ok()?;
        rest = &rest[line + 2..];
        if size == 0 {
            let end = rest.windows(2).position(|w| w == b"\r\n")?;
            // trailers up to the empty line
            let mut t = String::new();
            let mut r = rest;
            loop {
                let l = r.windows(2).position(|w| w == b"\r\n")?;
                if l == 0 {
                    return Some((body, t, &r[2..]));
                }
                t.push_str(std::str::from_utf8(&r[..l]).ok()?);
                t.push('\n');
                r = &r[l + 2..];
                let _ = end;
            }
        }
        if rest.len() < size + 2 {
            return None;
        }
        body.extend_from_slice(&rest[..size]);
        if &rest[size..size + 2] != b"\r\n" {
            return None;
        }
        rest = &rest[size + 2..];
    }
}

struct Run {
    wire: Vec<u8>,
    max_output_len: usize,
    closed: bool,
}

/// Sans-IO: feeds `request`, then process/consume until the output ends
/// (no progress for 1,000 turns, the last 500 of them 200 us apart: a
/// body gathering its first 64 KiB yields 256 polls a turn with nothing
/// out) or the session says close. `take` is how
/// many bytes of output are consumed per turn (usize::MAX: all).
fn run(max_pending: usize, request: &[u8], take: usize, until: &dyn Fn(&[u8]) -> bool) -> Run {
    let rt = common::runtime();
    let handler = TowerHandler::new(Service, rt.handle().clone());
    let pool = falconet_pool::Pool::new();
    let options = Options::new().max_pending_output(max_pending);
    let mut cx = ServerContext::new(&options).unwrap();
    let mut session = Session::<TowerHandler<Service>>::new(&pool).unwrap();
    session.receive(request).unwrap();
    let mut wire = Vec::new();
    let mut max_output_len = 0;
    let mut idle = 0;
    let mut closed = false;
    while idle < 1000 && !until(&wire) {
        let progress = session.process(&handler, &mut cx);
        max_output_len = max_output_len.max(session.output_len_pub());
        let mut moved = false;
        let mut budget = take;
        while budget > 0 && !session.output().is_empty() {
            let n = session.output().len().min(budget);
            let piece = session.output()[..n].to_vec();
            session.consume_output(n);
            wire.extend_from_slice(&piece);
            budget -= n;
            moved = true;
        }
        if format!("{progress:?}") == "Close" && session.output().is_empty() {
            closed = true;
            break;
        }
        if format!("{progress:?}") == "NeedInput" && session.output().is_empty() {
            // Every request answered, and no more input comes.
            break;
        }
        if moved {
            idle = 0
        } else {
            idle += 1;
            if idle > 500 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
    Run { wire, max_output_len, closed }
}

trait OutLen {
    fn output_len_pub(&self) -> usize;
}
impl<H: falconet_server::Handler> OutLen for Session<H> {
    fn output_len_pub(&self) -> usize {
        // `output()` is the first piece only; sum isn't public: approximate
        // with the first piece (the out buffer).
        self.output().len()
    }
}

fn head_end(wire: &[u8]) -> usize {
    wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4
}

/// One response at the front of `w`: (head, body, trailers, rest); None if incomplete.
fn response(w: &[u8]) -> Option<(String, Vec<u8>, String, &[u8])> {
    let h = w.windows(4).position(|x| x == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&w[..h]).to_ascii_lowercase();
    if let Some(cl) = head.lines().find_map(|l| l.strip_prefix("content-length: ")) {
        let n: usize = cl.trim().parse().unwrap();
        if head.starts_with("head") || w.len() < h + n {
            return None;
        }
        return Some((head, w[h..h + n].to_vec(), String::new(), &w[h + n..]));
    }
    let (b, t, rest) = dechunk(&w[h..])?;
    Some((head, b, t, rest))
}

fn ends_chunked(w: &[u8]) -> bool {
    response(w).is_some()
}

const SCRIPTS: &[&str] = &[
    "1",
    "1.1.1",
    "4095.4096.4095.0.4096",
    "65535.65536.65535.0.1.65536",
    "0.0.1.0.0.2.0",
    "1.P.1.P.P.1.0.P.3",
    "1x3000",
    "1x3000.70000.1x300",
    "4095.T",
    "1.2.3.T",
    "65535.T",
    "1x100000",
];

#[test]
fn rv_http1_scripts_chunked_all_limits() {
    for &max in &[1usize, 2, 7, 100, 4096, 65536, 1 << 20] {
        for script in SCRIPTS {
            let evs = parse(script);
            let n = data_len(&evs);
            let req = format!("GET /s?script={script} HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n");
            let r = run(max, req.as_bytes(), usize::MAX, &ends_chunked);
            let h = head_end(&r.wire);
            let (_head, body, trailers, rest) =
                response(&r.wire).unwrap_or_else(|| panic!("{max} {script}: incomplete"));
            assert!(body == expected(n), "{max} {script}: {} of {n}", body.len());
            assert!(rest.is_empty(), "{max} {script}: extra {:?}", &rest[..rest.len().min(50)]);
            if script.contains('T') {
                assert!(trailers.contains("x-trail"), "{max} {script}: trailers {trailers:?}");
            }
            // out buffer never larger than max + one copied frame + framing + head
            assert!(
                r.max_output_len <= max + 65536 + 64 + h,
                "{max} {script}: out reached {}",
                r.max_output_len
            );
        }
    }
}

/// Pipelined: the second request's response follows the first's whole.
#[test]
fn rv_http1_pipelined_behind_small_frames() {
    for &max in &[1usize, 13, 65536] {
        let req = "GET /s?script=1x5000.P.3x100 HTTP/1.1\r\nHost: x\r\n\r\nGET /s?script=2x7 HTTP/1.1\r\nHost: x\r\n\r\n";
        let two = |w: &[u8]| {
            if !ends_chunked(w) {
                return false;
            }
            let (_, _, _, rest) = response(w).unwrap();
            ends_chunked(rest)
        };
        let r = run(max, req.as_bytes(), usize::MAX, &two);
        let (_, b1, _, rest) = response(&r.wire).expect("first");
        assert!(b1 == expected(5300), "{max}");
        let (_, b2, _, rest2) = response(rest).expect("second");
        assert!(b2 == expected(14), "{max}");
        assert!(rest2.is_empty());
    }
}

/// HTTP/1.0: close-delimited, bytes exact, then close.
#[test]
fn rv_http10_close_delimited() {
    for &max in &[1usize, 100, 65536] {
        for script in ["1x3000", "4095.4096.0.1", "65535.65536.1x10", "1.P.2.P.3"] {
            let n = data_len(&parse(script));
            let req = format!("GET /s?script={script} HTTP/1.0\r\n\r\n");
            let r = run(max, req.as_bytes(), usize::MAX, &|_| false);
            let h = head_end(&r.wire);
            assert!(r.closed, "{max} {script}: not closed");
            assert!(r.wire[h..] == expected(n)[..], "{max} {script}: {} of {n}", r.wire.len() - h);
        }
    }
}

/// HEAD: no body bytes.
#[test]
fn rv_http1_head_small_frames() {
    for &max in &[1usize, 65536] {
        let req = "HEAD /s?script=1x5000.4095.70000 HTTP/1.1\r\nHost: x\r\n\r\nGET /s?script=3 HTTP/1.1\r\nHost: x\r\n\r\n";
        let r = run(max, req.as_bytes(), usize::MAX, &|w| {
            w.windows(4).filter(|x| x == b"\r\n\r\n").count() >= 3
        });
        let h = head_end(&r.wire);
        assert!(
            r.wire[h..].starts_with(b"HTTP/1.1 200"),
            "{max}: {}",
            String::from_utf8_lossy(&r.wire)
        );
    }
}

/// Exact size declared, then more or fewer bytes in small frames: never a
/// complete-looking response of the wrong length; connection closed.
#[test]
fn rv_http1_exact_mismatch() {
    for &max in &[1usize, 100, 65536] {
        for (script, exact) in [
            ("1x100", 50u64),
            ("1x100", 150),
            ("4095.1", 4095),
            ("1x10.P.1x10", 19),
            ("1x10", 11),
            ("3000.3000", 5999),
            ("1x100000", 50000),
            ("1x100000", 150000),
            ("1x100000", 99999),
            ("1x100000", 100001),
            ("1x70000.P.1x30000", 99999),
            ("1x70000.P.1x30000", 100001),
            ("70000.1x100", 70099),
            ("70000.1x100", 70101),
            ("1x1100000", 1099999),
            ("1x1100000", 1100001),
            ("1048576.1x100", 1048675),
            ("1048576.1x100", 1048677),
            ("1048576.1x100.P.1x5", 1048680),
            ("1048576.1x100.P.1x5", 1048682),
        ] {
            if max == 1 && script.starts_with("1x11") {
                continue;
            }
            let n = data_len(&parse(script));
            let req = format!(
                "GET /s?script={script}&exact={} HTTP/1.1\r\nHost: x\r\n\r\nGET /s?script=1 HTTP/1.1\r\nHost: x\r\n\r\n",
                exact + 1
            );
            let r = run(max, req.as_bytes(), usize::MAX, &|_| false);
            let h = head_end(&r.wire);
            let head = String::from_utf8_lossy(&r.wire[..h]).to_ascii_lowercase();
            let body = &r.wire[h..];
            let cl: Option<u64> = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map(|v| v.trim().parse().unwrap());
            eprintln!(
                "{max} {script} {exact}: n {n} cl {cl:?} body {} closed {}",
                body.len(),
                r.closed
            );
            match cl {
                Some(l) if l == n => {
                    assert!(body.starts_with(&expected(n)), "{max} {script} {exact}: wrong bytes");
                }
                Some(l) => {
                    assert!(
                        body.len() as u64 <= l,
                        "{max} {script} {exact}: {} bytes past cl {l}",
                        body.len()
                    );
                    assert!(expected(n).starts_with(body), "{max} {script} {exact}: wrong bytes");
                    assert!(r.closed, "{max} {script} {exact}: not closed");
                    eprintln!("{max} {script} {exact}: cl {l}, cut at {}", body.len());
                }
                None => panic!("{max} {script} {exact}: head {head}"),
            }
        }
    }
}

/// Error or panic after small frames: cut (no last chunk), closed.
#[test]
fn rv_http1_error_after_small_frames() {
    for &max in &[1usize, 100, 65536] {
        for script in ["1x10.E", "1x10.K", "1x3000.P.E", "4095.E", "65535.1.K", "1x100.70000.1.E"] {
            let req = format!(
                "GET /s?script={script} HTTP/1.1\r\nHost: x\r\n\r\nGET /s?script=1 HTTP/1.1\r\nHost: x\r\n\r\n"
            );
            let r = run(max, req.as_bytes(), usize::MAX, &|_| false);
            let h = head_end(&r.wire);
            let head = String::from_utf8_lossy(&r.wire[..h]).to_ascii_lowercase();
            if head.starts_with("http/1.1 500") {
                continue;
            }
            assert!(head.contains("chunked"), "{max} {script}: {head}");
            assert!(
                dechunk(&r.wire[h..]).is_none(),
                "{max} {script}: looks complete: {:?}",
                String::from_utf8_lossy(&r.wire[r.wire.len().saturating_sub(40)..])
            );
            assert!(r.closed, "{max} {script}: not closed");
        }
    }
}

/// A client that never reads: repeated turns with nothing consumed keep
/// the output bounded.
#[test]
fn rv_http1_nonreader_bounded() {
    let rt = common::runtime();
    let handler = TowerHandler::new(Service, rt.handle().clone());
    let pool = falconet_pool::Pool::new();
    for &max in &[1usize, 100, 65536] {
        let options = Options::new().max_pending_output(max);
        let mut cx = ServerContext::new(&options).unwrap();
        let mut session = Session::<TowerHandler<Service>>::new(&pool).unwrap();
        session.receive(b"GET /s?script=1x1000000 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        for _ in 0..200 {
            session.process(&handler, &mut cx);
        }
        let len = session.output().len();
        assert!(len <= max + 65536 + 300, "{max}: {len} bytes buffered");
        // take 1 byte at a time for a while: stays bounded
        for _ in 0..2000 {
            session.consume_output(1);
            session.process(&handler, &mut cx);
            let len = session.output().len();
            assert!(len <= max + 65536 + 300, "{max}: {len} bytes buffered");
        }
    }
}

// ---- real sockets ----

fn server(
    options: Options,
) -> (common::TestServer<TowerHandler<Service>>, tokio::runtime::Runtime) {
    common::serve_tower(options, Service)
}

/// Slow reader over a socket, small max_pending_output: every byte.
#[test]
fn rv_http1_slow_reader_socket() {
    use std::io::{Read, Write};
    for &max in &[1usize, 10, 65536] {
        let (server, _rt) = server(Options::new().workers(1).max_pending_output(max));
        let mut tcp = std::net::TcpStream::connect(server.addr).unwrap();
        tcp.write_all(b"GET /s?script=1x20000.P.3x1000.70000.1x10 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut wire = Vec::new();
        let mut buf = [0u8; 97];
        std::thread::sleep(Duration::from_millis(300));
        loop {
            match tcp.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => wire.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{max}: {e} after {}", wire.len()),
            }
        }
        let h = head_end(&wire);
        let (body, _, rest) = dechunk(&wire[h..]).expect("complete");
        assert!(body == expected(20000 + 3000 + 70000 + 10), "{max}");
        assert!(rest.is_empty());
    }
}

/// HTTP/2 with small windows: DATA never exceeds the windows nor 16384,
/// every byte arrives in order, END_STREAM at the end.
#[test]
fn rv_h2_small_windows() {
    use common::h2raw::{Event, Raw, req};
    use falconet_server::h2::frame::{kind, setting};
    let (server, _rt) = server(Options::new().workers(1));
    for &(window, max) in &[(0u32, 0usize), (1, 1), (7, 3), (100, 4096), (5000, 65536)] {
        let (server2, _rt2);
        let addr = if max == 0 {
            server.addr
        } else {
            let s = common::serve_tower(Options::new().workers(1).max_pending_output(max), Service);
            server2 = s.0;
            _rt2 = s.1;
            server2.addr
        };
        for script in ["1x20000.4095.4096.1x10.0.4097", "4095.T", "1x300.E"] {
            let n = data_len(&parse(script));
            let mut raw = Raw::handshake(addr, &[(setting::INITIAL_WINDOW_SIZE, window)]);
            raw.headers(1, &req("GET", &format!("/s?script={script}")), true);
            let (mut stream_credit, mut conn_credit) = (i64::from(window), 65_535i64);
            if window == 0 {
                // nothing but HEADERS for a while
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(200) {
                    if let Event::Frame(f) = raw.next(Duration::from_millis(50)) {
                        if f.stream == 1 && (f.end_stream() || f.kind == kind::RST_STREAM) {
                            eprintln!("{script}: ended early kind {}", f.kind);
                        }
                        assert!(
                            f.kind != kind::DATA || f.payload.is_empty(),
                            "DATA with window 0: {}",
                            f.payload.len()
                        );
                    }
                }
                raw.window_update(1, 3);
                stream_credit = 3;
            }
            let mut body = Vec::new();
            let mut ended = false;
            if window == 0 && script.contains('E') {
                continue;
            }
            let mut reset = false;
            while !ended {
                match raw.next(Duration::from_secs(10)) {
                    Event::Frame(f) => {
                        if f.kind == kind::RST_STREAM && f.stream == 1 {
                            reset = true;
                            break;
                        }
                        assert!(f.kind != kind::GOAWAY, "{window} {script}: GOAWAY");
                        if f.kind == kind::DATA && f.stream == 1 {
                            let len = f.payload.len() as i64;
                            assert!(len <= 16384, "{window} {script}: DATA of {len}");
                            assert!(
                                len <= stream_credit && len <= conn_credit,
                                "{window} {script}: DATA {len} over credit {stream_credit}/{conn_credit}"
                            );
                            stream_credit -= len;
                            conn_credit -= len;
                            body.extend_from_slice(&f.payload);
                            if len > 0 {
                                let w = if window == 0 { 3 } else { len as u32 };
                                raw.window_update(1, w);
                                raw.window_update(0, len as u32);
                                stream_credit += i64::from(w);
                                conn_credit += len;
                            }
                        }
                        if f.stream == 1 && f.end_stream() {
                            ended = true;
                        }
                    }
                    other => {
                        panic!("{window} {max} {script}: {other:?} after {} of {n}", body.len())
                    }
                }
            }
            if script.contains('E') {
                assert!(
                    reset || body.is_empty(),
                    "{window} {script}: ended without reset after {}",
                    body.len()
                );
                assert!(expected(n).starts_with(&body));
            } else {
                assert!(!reset, "{window} {script}: reset after {}", body.len());
                assert!(body == expected(n), "{window} {max} {script}: {} of {n}", body.len());
            }
        }
    }
}

/// Many HTTP/2 streams each streaming small frames, with the h2 crate.
#[test]
fn rv_h2_many_streams_small_frames() {
    let (server, _rt) = server(Options::new().workers(1));
    let rt = common::runtime();
    let addr = server.addr;
    rt.block_on(async move {
        let send = common::h2_client(addr).await;
        let mut tasks = Vec::new();
        for i in 0..50usize {
            let mut send = send.clone();
            tasks.push(tokio::spawn(async move {
                let script = match i % 4 {
                    0 => "1x20000",
                    1 => "4095.4096.1x100.4097",
                    2 => "1.P.1x5000.T",
                    _ => "0.0.3x3000.65536",
                };
                let n = data_len(&parse(script));
                send = send.ready().await.unwrap();
                let request =
                    http::Request::get(format!("http://t/s?script={script}")).body(()).unwrap();
                let (response, _) = send.send_request(request, true).unwrap();
                let response = response.await.unwrap();
                let mut incoming = response.into_body();
                let mut body = Vec::new();
                while let Some(piece) = incoming.data().await {
                    let piece = piece.unwrap();
                    incoming.flow_control().release_capacity(piece.len()).unwrap();
                    body.extend_from_slice(&piece);
                }
                assert!(body == expected(n), "{i} {script}: {} of {n}", body.len());
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}
