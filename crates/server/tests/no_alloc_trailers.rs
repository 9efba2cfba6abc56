//! A synchronous handler gets each request's trailers (`Handler::trailers`)
//! with no heap allocation per request in steady state, over HTTP/1.1
//! (chunked bodies) and HTTP/2 (trailing HEADERS): the worker refills one
//! `Trailers` per connection (whose memory it keeps up to 1 KiB of names
//! and values: larger trailers are allocated per request and freed, so an
//! idle connection holds no more). Counted by a global allocator while a
//! real server answers over TCP.

use std::io::Write;
use std::net::TcpStream;

use falconet_server::h2::frame::{FrameHeader, PREFACE, flag, kind};
use falconet_server::h2::hpack::{Encoder, Field};
use falconet_server::{Handler, Options, Request, Response, Server, Trailers};

mod common;

#[global_allocator]
static GLOBAL: falconet_testkit::CountingAll = falconet_testkit::CountingAll;

/// Counts body bytes, and reads the `x-sum` trailer's number: answers
/// `MESSAGE` when it equals the body's length (and panics otherwise).
struct Sums;

const MESSAGE: &[u8] = b"matches";

impl Handler for Sums {
    /// (body bytes, the `x-sum` trailer's value, trailer fields seen)
    type State = (u64, u64, usize);

    fn head(&self, _: &Request<'_>) -> (u64, u64, usize) {
        (0, 0, 0)
    }

    fn body(&self, state: &mut (u64, u64, usize), chunk: &[u8]) {
        state.0 += chunk.len() as u64;
    }

    fn trailers(&self, state: &mut (u64, u64, usize), trailers: &Trailers) {
        state.2 += trailers.len();
        let value = trailers.get("x-sum").unwrap_or_default();
        state.1 = value.iter().fold(0, |n, &d| n * 10 + u64::from(d.wrapping_sub(b'0')));
    }

    fn respond(&self, (len, sum, fields): (u64, u64, usize), response: &mut Response<'_>) {
        // A mismatch panics: the request gets a 500, whose body never
        // carries MESSAGE, and the test's read fails with the closed
        // connection.
        assert!(len == sum && fields == 2, "the trailers did not arrive: {len} {sum} {fields}");
        response.body(MESSAGE).expect("a fresh response");
    }
}

/// Reads until `count` answers have arrived (into a fixed buffer), none
/// of them a 400 (a mismatch between a body and its trailers).
fn answers(stream: &mut TcpStream, count: usize, buf: &mut [u8]) {
    common::read_markers(stream, MESSAGE, count, buf);
}

fn server() -> (std::net::SocketAddr, falconet_server::Running<Sums>) {
    let server = Server::bind("127.0.0.1:0", Options::new().workers(1), Sums).unwrap();
    let addr = server.local_addr();
    (addr, server.start().unwrap())
}

/// Runs `round` to warm up, then counts the allocations of five more.
fn allocations(mut round: impl FnMut()) -> usize {
    for _ in 0..3 {
        round();
    }
    let before = falconet_testkit::all_allocations();
    for _ in 0..5 {
        round();
    }
    falconet_testkit::all_allocations() - before
}

#[test]
fn http1_trailers_allocate_nothing() {
    // The count is the process's: one test at a time.
    let _serial = falconet_testkit::serial();
    let (addr, running) = server();
    let mut tcp = TcpStream::connect(addr).unwrap();
    // A request whose trailers went missing never gets its answer.
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let request: &[u8] = b"POST /sum HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
        5\r\nhello\r\n0\r\nx-sum: 5\r\nX-Other: y\r\n\r\n";
    let eight = request.repeat(8);
    let mut buf = vec![0u8; 1 << 16];
    let counted = allocations(|| {
        for _ in 0..100 {
            tcp.write_all(request).unwrap();
            answers(&mut tcp, 1, &mut buf);
            tcp.write_all(&eight).unwrap();
            answers(&mut tcp, 8, &mut buf);
        }
    });
    assert_eq!(counted, 0, "{counted} allocations over {} requests", 5 * 100 * 9);
    drop(tcp);
    running.handle().shutdown();
    running.join().unwrap();
}

#[test]
fn http2_trailers_allocate_nothing() {
    let _serial = falconet_testkit::serial();
    let (addr, running) = server();
    let mut tcp = TcpStream::connect(addr).unwrap();
    // A request whose trailers went missing never gets its answer.
    tcp.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let mut start = PREFACE.to_vec();
    start.extend_from_slice(
        &FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }.to_bytes().unwrap(),
    );
    tcp.write_all(&start).unwrap();
    // Each block literal the first time, indexed after (the encoder's
    // table then holds every field): blocks 2.. are the same bytes.
    let mut encoder = Encoder::new();
    let head = [
        Field::new(b":method", b"POST"),
        Field::new(b":scheme", b"http"),
        Field::new(b":path", b"/sum"),
        Field::new(b":authority", b"localhost"),
    ];
    let trailers = [Field::new(b"x-sum", b"5"), Field::new(b"x-other", b"y")];
    let (mut first_head, mut first_trailers) = (Vec::new(), Vec::new());
    encoder.encode(head, &mut first_head);
    encoder.encode(trailers, &mut first_trailers);
    let (mut head_block, mut trailer_block) = (Vec::new(), Vec::new());
    encoder.encode(head, &mut head_block);
    encoder.encode(trailers, &mut trailer_block);
    let mut out = Vec::with_capacity(4096);
    let mut next_id = 1u32;
    let mut request = |out: &mut Vec<u8>, head: &[u8], trailers: &[u8]| {
        let id = next_id;
        next_id += 2;
        let frame = |out: &mut Vec<u8>, kind: u8, flags: u8, payload: &[u8]| {
            let length = payload.len() as u32;
            out.extend_from_slice(
                &FrameHeader { length, kind, flags, stream: id }.to_bytes().unwrap(),
            );
            out.extend_from_slice(payload);
        };
        frame(out, kind::HEADERS, flag::END_HEADERS, head);
        frame(out, kind::DATA, 0, b"hello");
        frame(out, kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, trailers);
        // The connection credit the answer will use, given back.
        let update = FrameHeader { length: 4, kind: kind::WINDOW_UPDATE, flags: 0, stream: 0 };
        out.extend_from_slice(&update.to_bytes().unwrap());
        out.extend_from_slice(&(MESSAGE.len() as u32).to_be_bytes());
    };
    let mut buf = vec![0u8; 1 << 16];
    request(&mut out, &first_head, &first_trailers);
    tcp.write_all(&out).unwrap();
    answers(&mut tcp, 1, &mut buf);
    let counted = allocations(|| {
        for _ in 0..100 {
            out.clear();
            for _ in 0..8 {
                request(&mut out, &head_block, &trailer_block);
            }
            tcp.write_all(&out).unwrap();
            answers(&mut tcp, 8, &mut buf);
        }
    });
    assert_eq!(counted, 0, "{counted} allocations over {} requests", 5 * 100 * 8);
    drop(tcp);
    running.handle().shutdown();
    running.join().unwrap();
}
