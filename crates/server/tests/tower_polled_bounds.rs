//! Response bodies the worker polls, at the edges of what
//! `http_body::Body` allows (a reviewer's probes): one that is always
//! ready with empty frames held the worker inside one `Session::process`
//! (3,000,001 polls, every other connection waiting), and one whose size
//! hint says 10 bytes but whose ready frames go on was held whole in
//! memory inside `Handler::respond` (64 MiB, written as one response).
#![cfg(feature = "tower")]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use falconet_server::h2::frame::{FrameHeader, PREFACE, kind};
use falconet_server::tower::{Body, TowerHandler};
use falconet_server::{Context, Options, Pool, Progress, Session};
use http_body::{Frame, SizeHint};

/// `frames` ready data frames of `size` bytes each, then the end; its
/// size hint says `exact`.
struct Scripted {
    left: u64,
    size: usize,
    exact: Option<u64>,
    polls: Arc<AtomicU64>,
}

impl http_body::Body for Scripted {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; self.size])))))
    }

    fn size_hint(&self) -> SizeHint {
        self.exact.map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}

#[derive(Clone)]
struct Service {
    frames: u64,
    size: usize,
    exact: Option<u64>,
    polls: Arc<AtomicU64>,
}

impl tower_service::Service<http::Request<Body>> for Service {
    type Response = http::Response<Scripted>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        let (left, size, exact, polls) = (self.frames, self.size, self.exact, self.polls.clone());
        ready(Ok(http::Response::new(Scripted { left, size, exact, polls })))
    }
}

/// One request (HTTP/2 if `h2`) to a session serving [`Service`]:
/// the body's polls during each `process` call, and all the output,
/// until the response ended or the session closed (at most `turns`).
fn serve(
    h2: bool,
    frames: u64,
    size: usize,
    exact: Option<u64>,
    turns: usize,
) -> (Vec<u64>, Vec<u8>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let polls = Arc::new(AtomicU64::new(0));
    let service = Service { frames, size, exact, polls: polls.clone() };
    let handler = TowerHandler::new(service, runtime.handle().clone());
    let pool = Pool::new();
    let mut cx = Context::new(&Options::new()).unwrap();
    let mut session = Session::new(&pool).unwrap();
    if h2 {
        let mut input = PREFACE.to_vec();
        FrameHeader { length: 0, kind: kind::SETTINGS, flags: 0, stream: 0 }
            .encode(&mut input)
            .unwrap();
        // :method GET, :scheme http, :path / (static indices 2, 6, 4).
        let block = [0x82u8, 0x86, 0x84];
        FrameHeader { length: 3, kind: kind::HEADERS, flags: 0x5, stream: 1 }
            .encode(&mut input)
            .unwrap();
        input.extend_from_slice(&block);
        session.receive(&input).unwrap();
    } else {
        session.receive(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
    }
    let (mut per_turn, mut output) = (Vec::new(), Vec::new());
    for _ in 0..turns {
        let before = polls.load(Ordering::Relaxed);
        let progress = session.process(&handler, &mut cx);
        per_turn.push(polls.load(Ordering::Relaxed) - before);
        output.extend_from_slice(session.output());
        let n = session.output().len();
        session.consume_output(n);
        let ended = if h2 { ends_stream_1(&output) } else { output.ends_with(b"0\r\n\r\n") };
        if ended || progress == Progress::Close {
            break;
        }
    }
    (per_turn, output)
}

/// Whether `output` (frames) holds a frame that ends stream 1.
fn ends_stream_1(mut output: &[u8]) -> bool {
    while output.len() >= 9 {
        let header = FrameHeader::parse(output[..9].try_into().unwrap());
        if header.stream == 1 && header.flags & 1 != 0 {
            return true;
        }
        output = &output[(9 + header.length as usize).min(output.len())..];
    }
    false
}

/// Empty frames, always ready: each turn polls a bounded number of them
/// (256 a pump; HTTP/2's turn pumps again while its other steps move),
/// and the response still completes, turn after turn (its connection
/// woken for each), over HTTP/1.1 and HTTP/2.
#[test]
fn an_endless_run_of_empty_frames_yields_each_turn() {
    for (h2, exact) in [(false, None), (false, Some(0)), (true, None), (true, Some(0))] {
        let (per_turn, output) = serve(h2, 100_000, 0, exact, 10_000);
        let most = per_turn.iter().copied().max().unwrap();
        assert!(most <= 4 * 256 + 4, "h2 {h2}, {exact:?}: {most} polls in one turn");
        assert!(per_turn.len() > 100, "h2 {h2}, {exact:?}: {} turns", per_turn.len());
        let done = if h2 { ends_stream_1(&output) } else { output.ends_with(b"0\r\n\r\n") };
        assert!(done, "h2 {h2}, {exact:?}: the response did not end");
    }
}

/// A body that said 10 bytes and goes on is not held whole by `respond`:
/// the worker takes it (holding at most a bounded amount), then cuts it
/// past its size, as a streamed body is cut.
#[test]
fn a_body_past_its_exact_size_is_cut_not_held() {
    for h2 in [false, true] {
        let (per_turn, output) = serve(h2, 64 * 1024, 1024, Some(10), 50);
        let polls: u64 = per_turn.iter().sum();
        assert!(polls < 2_000, "h2 {h2}: {polls} polls of 1 KiB held");
        assert!(output.len() < 2 << 20, "h2 {h2}: {} bytes out", output.len());
    }
}

/// The fast path stays: a short, exact, ready body is one response,
/// written in the first turn.
#[test]
fn a_short_exact_body_is_still_written_at_once() {
    for frames in [1, 10] {
        let (per_turn, output) = serve(false, frames, 100, Some(frames * 100), 1);
        assert_eq!(per_turn, [frames + 1]);
        let text = String::from_utf8_lossy(&output);
        assert!(text.contains(&format!("Content-Length: {}\r\n", frames * 100)), "{text}");
        assert!(output.ends_with(&[b'x'; 100]));
    }
}
