//! From an independent review: a lent request body in the smallest pool.
//! The worker parses HTTP/2 input where the input pipe's blocks hold it;
//! as first written (36fc714) it held every block of a read while the
//! frames were dispatched, so the body's pipe needed blocks while the
//! input's were still out, and a 70 KB upload that fit before was reset.
//! Each block now goes back to the pool before the next is read.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::h2raw::block;
use common::serve;
use falconet_server::h2::frame::{self, FrameHeader, HEADER_LEN, PREFACE, kind};
use falconet_server::{Handler, MIN_POOL_BYTES, Options, Request, Response};

struct Lend;

impl Handler for Lend {
    type State = ();
    fn head(&self, request: &Request<'_>) {
        request.stream_body();
    }
    fn body(&self, _: &mut (), _: &[u8]) {}
    fn respond(&self, (): (), response: &mut Response<'_>) {
        let body = response.take_body();
        let responder = response.defer().unwrap();
        std::thread::spawn(move || {
            // The application is slow to start reading.
            std::thread::sleep(Duration::from_millis(500));
            let mut n = 0usize;
            let mut error = String::new();
            if let Some(mut body) = body {
                let mut buf = vec![0u8; 7000];
                loop {
                    match body.read(&mut buf) {
                        Ok(0) => break,
                        Ok(k) => n += k,
                        Err(e) => {
                            error = e.to_string();
                            break;
                        }
                    }
                }
            }
            let _ = responder.body(format!("read={n}{error}").as_bytes());
        });
    }
}

fn frame_bytes(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    FrameHeader { length: payload.len() as u32, kind, flags, stream }.encode(out).unwrap();
    out.extend_from_slice(payload);
}

/// One upload of `size` bytes (in 16 KiB DATA frames, one write) to a
/// server whose pool is `pool` bytes: the stream's outcome.
fn upload(pool: usize, size: usize) -> String {
    let server = serve(Options::new().workers(1).max_pool_bytes(pool), Lend);
    let mut tcp = TcpStream::connect(server.addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    let mut out = PREFACE.to_vec();
    frame::encode_settings(&mut out, &[]).unwrap();
    let length = size.to_string();
    let block = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/up"),
        (":authority", "x"),
        ("content-length", &length),
    ]);
    frame_bytes(&mut out, kind::HEADERS, 0x4, 1, &block);
    let body = vec![7u8; size];
    let pieces: Vec<&[u8]> = body.chunks(16_384).collect();
    for (i, piece) in pieces.iter().enumerate() {
        frame_bytes(&mut out, kind::DATA, u8::from(i == pieces.len() - 1), 1, piece);
    }
    tcp.write_all(&out).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        while buf.len() >= HEADER_LEN {
            let h = FrameHeader::parse(buf[..HEADER_LEN].try_into().unwrap());
            let end = HEADER_LEN + h.length as usize;
            if buf.len() < end {
                break;
            }
            let payload = buf[HEADER_LEN..end].to_vec();
            buf.drain(..end);
            if h.stream == 1 && h.kind == kind::DATA {
                return String::from_utf8_lossy(&payload).into_owned();
            }
            if h.stream == 1 && h.kind == kind::RST_STREAM {
                return format!(
                    "RST_STREAM({})",
                    u32::from_be_bytes(payload[..4].try_into().unwrap())
                );
            }
            if h.kind == kind::GOAWAY {
                return format!(
                    "GOAWAY({})",
                    u32::from_be_bytes(payload[4..8].try_into().unwrap())
                );
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return "timeout".into();
        }
        tcp.set_read_timeout(Some(left)).unwrap();
        match tcp.read(&mut chunk) {
            Ok(0) => return "EOF".into(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return "timeout".into();
            }
            Err(e) => return format!("error {e}"),
        }
    }
}

/// Uploads lent to a slow reader in the smallest pool (when it was one
/// slab, 128 KiB, these fitted it once but not twice; it is 2 MiB now, and
/// they must all still arrive whole).
#[test]
fn lent_upload_in_a_small_pool() {
    let mut results = Vec::new();
    for size in [40_000usize, 60_000, 70_000, 80_000, 100_000] {
        results.push((size, upload(MIN_POOL_BYTES, size)));
    }
    eprintln!("{results:?}");
    for (size, outcome) in &results {
        assert_eq!(outcome, &format!("read={size}"), "{results:?}");
    }
}
