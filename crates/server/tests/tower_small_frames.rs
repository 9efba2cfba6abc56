//! Small body frames of a polled response (a tower body streaming items
//! of a few bytes) go out together: HTTP/1 copies each frame under
//! 64 KiB into the output and writes what one turn gathered at once
//! (each took a `writev` of its own: 0.2 MiB/s for 1-byte frames), and
//! HTTP/2 copies each under 4 KiB into the stream's staging buffer, whose
//! DATA frames they share (each took a DATA frame of its own, 9 bytes of
//! header for one of body, and the `h2` crate as a client closed the
//! connection with `too_many_data_frames` once about a hundred waited
//! unread). Larger frames still go out in place; mixed, every byte keeps
//! its place.
#![cfg(feature = "tower")]

mod common;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use common::Client;
use falconet_server::tower::{Body, TowerHandler};
use falconet_server::{Context as ServerContext, Options, Session};
use http_body::{Frame, SizeHint};

/// The frame sizes of `/mixed`, in turn: under, at and over each
/// protocol's copy threshold (HTTP/2 4 KiB, HTTP/1 64 KiB), empty, and
/// one past a DATA frame.
const MIXED: [usize; 11] = [1, 4_095, 3, 4_096, 65_535, 0, 65_536, 5, 70_000, 16_385, 4_097];

/// The body's byte at `offset`: a pattern that shows any byte out of
/// place.
fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(7) % 251) as u8
}

fn expected(sizes: &[usize], frames: usize) -> Vec<u8> {
    let total: usize = (0..frames).map(|i| sizes[i % sizes.len()]).sum();
    (0..total as u64).map(byte_at).collect()
}

thread_local! {
    /// Polls of [`Frames`] bodies on this thread (a sans-IO session's
    /// turns run on the test's thread).
    static POLLS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `frames` frames whose sizes cycle through `sizes`, all ready.
struct Frames {
    sizes: &'static [usize],
    frames: usize,
    next: usize,
    offset: u64,
    exact: Option<u64>,
}

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        POLLS.set(POLLS.get() + 1);
        if self.next == self.frames {
            return Poll::Ready(None);
        }
        let size = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let start = self.offset;
        self.offset += size as u64;
        let data: Vec<u8> = (start..self.offset).map(byte_at).collect();
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(data)))))
    }
    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

/// `/tiny?n=N`: N frames of one byte; `/mixed?n=N`: N frames of the
/// [`MIXED`] sizes; `&exact` gives the body its exact size.
#[derive(Clone)]
struct Service;

impl tower_service::Service<http::Request<Body>> for Service {
    type Response = http::Response<Frames>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let target = request.uri().to_string();
        let frames = common::query_arg(&target, "n") as usize;
        let sizes: &'static [usize] = if request.uri().path() == "/mixed" { &MIXED } else { &[1] };
        let exact = target.contains("exact").then(|| expected(sizes, frames).len() as u64);
        ready(Ok(http::Response::new(Frames { sizes, frames, next: 0, offset: 0, exact })))
    }
}

fn server() -> (common::TestServer<TowerHandler<Service>>, tokio::runtime::Runtime) {
    common::serve_tower(Options::new().workers(1), Service)
}

/// The most polls of polled bodies in one round of a connection's turn
/// (`falconet_server`'s `POLLS_PER_ROUND`).
const POLLS_PER_ROUND: usize = 1024;

/// The sans-IO session, turn by turn (`process`, then every byte of the
/// output taken): a body of 100,000 1-byte frames, all ready, streams
/// (past the 64 KiB a response gathers before its head goes out) in turns
/// of many frames each, one write per turn; it took a turn, and a write,
/// per frame (34,463 after the head). And no turn polls more than 1,024
/// frames (a review measured 11,000 per round, 16 rounds per turn, and a
/// `GET` on the same worker waiting 50 ms behind three such bodies).
#[test]
fn http1_small_frames_share_writes() {
    const N: usize = 100_000;
    let rt = common::runtime();
    let handler = TowerHandler::new(Service, rt.handle().clone());
    let pool = falconet_pool::Pool::new();
    let mut cx = ServerContext::new(&Options::new()).unwrap();
    let mut session = Session::<TowerHandler<Service>>::new(&pool).unwrap();
    session.receive(format!("GET /tiny?n={N} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
    let (mut wire, mut turns_after_head) = (Vec::new(), 0);
    while !wire.ends_with(b"\r\n0\r\n\r\n") {
        let polls = POLLS.get();
        session.process(&handler, &mut cx);
        let polled = POLLS.get() - polls;
        assert!(polled <= POLLS_PER_ROUND as u64, "{polled} polls in one turn");
        let head_out = wire.windows(4).any(|w| w == b"\r\n\r\n");
        if head_out {
            turns_after_head += 1;
        }
        assert!(turns_after_head < 1_000, "{turns_after_head} turns after the head");
        let before = wire.len();
        while !session.output().is_empty() {
            let piece = session.output().to_vec();
            session.consume_output(piece.len());
            wire.extend_from_slice(&piece);
        }
        if head_out {
            // Each 1-byte frame is "1\r\nX\r\n" on the wire.
            let frames = (wire.len() - before) / 6;
            assert!(frames <= POLLS_PER_ROUND, "{frames} frames in one turn");
        }
    }
    let least = (N - 65_537).div_ceil(POLLS_PER_ROUND);
    assert!((least..=2 * least).contains(&turns_after_head), "{turns_after_head} turns");
    let head_end = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&wire[..head_end]).to_ascii_lowercase();
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let (mut rest, mut body) = (&wire[head_end..], Vec::new());
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap(), 16).unwrap();
        rest = &rest[line + 2..];
        if size == 0 {
            assert_eq!(rest, b"\r\n");
            break;
        }
        body.extend_from_slice(&rest[..size]);
        assert_eq!(&rest[size..size + 2], b"\r\n");
        rest = &rest[size + 2..];
    }
    assert!(body == expected(&[1], N), "{} bytes", body.len());
}

/// Small and large frames mixed keep every byte in its place, over
/// HTTP/1.1 (chunked and of exact size) and HTTP/2; `HEAD` gets none.
#[test]
fn mixed_frames_keep_their_order() {
    let (server, _rt) = server();
    for frames in [1, 2, 3, 9, 10, 50] {
        let want = expected(&MIXED, frames);
        for exact in ["", "&exact"] {
            let path = format!("/mixed?n={frames}{exact}");
            let mut client = Client::connect(server.addr);
            let reply = client.get(&path);
            assert_eq!(reply.status, 200, "{path}");
            assert!(
                reply.body == want,
                "{path}: {} bytes, {} wanted",
                reply.body.len(),
                want.len()
            );
            client.send(format!("HEAD {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            let head = client.reply_to(true).unwrap();
            assert_eq!(head.status, 200, "HEAD {path}");
            // The connection goes on after both.
            assert_eq!(client.get("/tiny?n=3").body, b"\x00\x07\x0e", "after {path}");
        }
        let (body, _) = raw_h2_get(server.addr, &format!("/mixed?n={frames}"));
        assert!(body == want, "h2 {frames}: {} bytes, {} wanted", body.len(), want.len());
    }
}

/// Over HTTP/2, 100,000 frames of one byte share DATA frames: a kilobyte
/// or more each on average (one per byte before: 100,000 frames).
#[test]
fn h2_small_frames_share_data_frames() {
    let (server, _rt) = server();
    for exact in ["", "&exact"] {
        let (body, frames) = raw_h2_get(server.addr, &format!("/tiny?n=100000{exact}"));
        assert!(body == expected(&[1], 100_000), "{exact}: {} bytes", body.len());
        assert!(frames * 512 <= 100_000, "{exact}: {frames} DATA frames for 100,000 bytes");
    }
}

/// The sans-IO session over HTTP/2: two streams of 1-byte frames, all
/// ready, with credit for all of them (streamed, and of exact size:
/// gathered, then sent with their length); each round (`process`) polls
/// at most 1,024 frames of both together, and the bodies arrive whole.
#[test]
fn h2_a_round_polls_at_most_its_share_of_tiny_frames() {
    use common::h2raw::{frame_bytes, req};
    use falconet_server::h2::frame::{PREFACE, kind, setting};
    const N: usize = 200_000;
    let rt = common::runtime();
    let handler = TowerHandler::new(Service, rt.handle().clone());
    let pool = falconet_pool::Pool::new();
    let mut cx = ServerContext::new(&Options::new()).unwrap();
    let mut session = Session::<TowerHandler<Service>>::new(&pool).unwrap();
    let mut input = PREFACE.to_vec();
    let mut window = Vec::new();
    window.extend_from_slice(&setting::INITIAL_WINDOW_SIZE.to_be_bytes());
    window.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
    input.extend(frame_bytes(kind::SETTINGS, 0, 0, &window));
    input.extend(frame_bytes(kind::WINDOW_UPDATE, 0, 0, &(0x7fff_ffffu32 - 65_535).to_be_bytes()));
    for (stream, exact) in [(1u32, ""), (3, "&exact")] {
        let path = format!("/tiny?n={N}{exact}");
        input.extend(frame_bytes(kind::HEADERS, 0x5, stream, &req("GET", &path)));
    }
    session.receive(&input).unwrap();
    let (mut wire, mut bodies, mut ended) = (Vec::new(), [Vec::new(), Vec::new()], 0);
    for round in 0..2_000 {
        let polls = POLLS.get();
        session.process(&handler, &mut cx);
        let polled = POLLS.get() - polls;
        // The first round answers both requests, each polling its body
        // up to 256 times before the worker's bounded polls take it.
        let inline = if round == 0 { 2 * 256 } else { 0 };
        assert!(polled <= (POLLS_PER_ROUND + inline) as u64, "round {round}: {polled} polls");
        while !session.output().is_empty() {
            let piece = session.output().to_vec();
            session.consume_output(piece.len());
            wire.extend_from_slice(&piece);
        }
        // Whole frames off the front of what was written.
        while wire.len() >= 9 {
            let length =
                usize::from(wire[0]) << 16 | usize::from(wire[1]) << 8 | usize::from(wire[2]);
            if wire.len() < 9 + length {
                break;
            }
            let (kind_, flags) = (wire[3], wire[4]);
            let stream = u32::from_be_bytes([wire[5], wire[6], wire[7], wire[8]]) & 0x7fff_ffff;
            if kind_ == kind::DATA {
                bodies[(stream / 2) as usize].extend_from_slice(&wire[9..9 + length]);
                ended += usize::from(flags & 0x1 != 0);
            }
            wire.drain(..9 + length);
        }
        if ended == 2 {
            break;
        }
    }
    assert_eq!(ended, 2, "both streams ended");
    for body in bodies {
        assert!(body == expected(&[1], N), "{} bytes", body.len());
    }
}

/// The `h2` crate as a client, reading the body only a while after the
/// response began (its application was busy): a body of 1-byte frames
/// arrives whole. Sent a DATA frame per byte, it closed the connection
/// (`too_many_data_frames`: about a hundred frames under 256 bytes
/// waiting unread).
#[test]
fn the_h2_crate_reading_late_gets_small_frames_whole() {
    let (server, _rt) = server();
    let rt = common::runtime();
    let body = rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let (send, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut send = send.ready().await.unwrap();
        let request = http::Request::get("http://t/tiny?n=200000").body(()).unwrap();
        let (response, _) = send.send_request(request, true).unwrap();
        let response = response.await.map_err(|e| e.to_string())?;
        // Busy elsewhere: what arrives meanwhile waits unread.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut incoming = response.into_body();
        let mut body = Vec::new();
        while let Some(piece) = incoming.data().await {
            let piece = piece.map_err(|e| format!("{e} after {} bytes", body.len()))?;
            incoming.flow_control().release_capacity(piece.len()).unwrap();
            body.extend_from_slice(&piece);
        }
        Ok::<_, String>(body)
    });
    let body = body.unwrap_or_else(|e| panic!("the h2 client: {e}"));
    assert!(body == expected(&[1], 200_000), "{} bytes", body.len());
}

/// A raw HTTP/2 GET with windows of 2^31-1: the body, and its DATA
/// frames.
fn raw_h2_get(addr: std::net::SocketAddr, path: &str) -> (Vec<u8>, usize) {
    use common::h2raw::{Raw, req};
    use falconet_server::h2::frame::{kind, setting};
    let mut raw = Raw::handshake(addr, &[(setting::INITIAL_WINDOW_SIZE, 0x7fff_ffff)]);
    raw.window_update(0, 0x7fff_ffff - 65_535);
    raw.headers(1, &req("GET", path), true);
    let (mut body, mut frames) = (Vec::new(), 0);
    loop {
        let f = raw.next_frame(Duration::from_secs(30)).expect("a frame");
        assert!(f.kind != kind::GOAWAY && f.kind != kind::RST_STREAM, "{path}: {f:?}");
        if f.kind == kind::DATA && f.stream == 1 {
            body.extend_from_slice(&f.payload);
            frames += 1;
        }
        if f.stream == 1 && f.end_stream() {
            return (body, frames);
        }
    }
}
